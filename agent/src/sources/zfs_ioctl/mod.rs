//! Per-pool statistics from `/dev/zfs`: the `ZFS_IOC_POOL_CONFIGS` and `ZFS_IOC_POOL_STATS`
//! ioctls, the same calls `zpool status`/`zpool iostat` make through libzfs, issued directly,
//! and `ZFS_IOC_OBJSET_STATS` of each pool's root dataset (its `creation`: the pool's age).
//!
//! * [`layout`] — where the fields of `zfs_cmd_t` and FreeBSD's `zfs_iocparm_t` sit, per OS
//!   (pure, tested on Linux for both systems).
//! * [`protocol`] — the calling sequence: the ENOMEM grow-and-retry protocol (capped), the
//!   EEXIST "namespace unchanged" answer, the pool's real error in `zc_cookie`. Written against
//!   the [`Ioctl`] trait, so it is tested without a kernel.
//! * [`events`] — the kernel's event queue (`ZFS_IOC_EVENTS_NEXT`/`SEEK`) read with a
//!   cursor of this reader's own.
//! * [`objects`] — the dataset and file an error report's objset and object ids name
//!   (`ZFS_IOC_DSOBJ_TO_DSNAME`, `ZFS_IOC_OBJ_TO_PATH`), as `zpool status -v` names them.
//! * [`device`] — the one module with `unsafe`: opening `/dev/zfs` and the `ioctl(2)` call.
//!
//! Replies are packed NATIVE nvlists; [`super::nvlist`] decodes them.

pub mod device;
pub mod events;
#[cfg(test)]
pub mod fake;
pub mod layout;
pub mod objects;
pub mod protocol;

pub use layout::Platform;
pub use protocol::{
    Ioctl, IoctlError, PoolConfigs, PoolStats, STATS_START, objset_stats, pool_configs, pool_stats,
    pool_stats_into, stats_buffer_after,
};
