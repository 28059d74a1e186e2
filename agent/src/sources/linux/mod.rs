//! Linux: `/proc/spl/kstat/zfs`, `/sys/module/zfs`, `/proc/diskstats`, `/sys/block`, and the
//! host files in `/proc`, all read relative to a [`Root`].

pub mod diskstats;
pub mod host;
pub mod kstat;
pub mod sysblock;
pub mod tunables;
pub mod zfs;

use super::Root;
use zpulse_proto::Snapshot;

/// Fills `snap` with everything a Linux root offers.
pub fn collect(root: &Root, snap: &mut Snapshot) {
    zfs::read(root, snap);
    snap.tunables = tunables::read(root, snap);
    diskstats::read(root, snap);
    host::read(root, snap);
}
