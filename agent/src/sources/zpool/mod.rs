//! Pools from `/dev/zfs`: the POOL_STATS config nvlist turned into the class-aware vdev tree
//! of [`zpulse_proto::snapshot::PoolConfig`], and each leaf joined to its disk.
//!
//! * [`config`] — pure: decoded nvlist → `PoolConfig` (classes, redundancy, names as
//!   `zpool status` prints them, `vdev_stats`, latency histograms, scan state).
//! * [`join`] — pure: a leaf's device path → the kernel disk name in the disk stats.
//! * [`read`] — live (ioctls) or from a capture's `zfs-ioctl/` files, into each pool's
//!   last reply (`read::KeptReplies`) when a reader keeps them.

pub mod config;
pub mod join;
pub mod read;
