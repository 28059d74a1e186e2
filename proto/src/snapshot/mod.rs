//! Absolute values of every source at one moment.
//!
//! Everything here is what the kernel said, unchanged: counters are not turned into rates
//! (that is [`crate::sample`]), and a value the kernel did not report is `None` or missing
//! from its map. The same types describe Linux and FreeBSD; where the two kernels count
//! differently (disks), an enum keeps each kernel's own counters.

mod disk;
mod host;
mod kstat;
mod pool;
mod tagged;
mod tunables;
mod vdev;
mod zfs;

pub use disk::{
    Devstat, Disk, DiskCounters, DiskRole, Diskstats, VIRTUAL_DISK_PREFIXES, is_virtual_disk,
};
pub use host::{CpuTimes, HostIdentity, Memory, NetInterface, Os};
pub use kstat::{Kstat, KstatHeader, KstatValue};
pub use pool::{DatasetKstats, Pool, PoolIo, Txg};
pub use tunables::Tunables;
pub use vdev::{LatencyHistograms, PoolConfig, Redundancy, ScanStats, Vdev, VdevClass, VdevStats};
pub use zfs::{ArcStats, ZilStats};

use serde::{Deserialize, Serialize};

/// One reading of every source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Wall-clock time of the reading, Unix seconds (a capture's `captured_at`).
    pub taken_at: f64,
    /// A monotonic clock reading in seconds, when the snapshot was taken live. Intervals use
    /// it in preference to `taken_at`, which can jump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monotonic: Option<f64>,
    /// When the host booted, Unix seconds (Linux `/proc/stat` `btime`, FreeBSD
    /// `kern.boottime`). Both kernels derive it from the wall clock less the time since boot,
    /// so a step of the wall clock moves it too, and `taken_at - boot_time` (the time since
    /// boot) grows steadily whatever the wall clock does: it goes back only at a reboot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_time: Option<f64>,
    pub host: HostIdentity,
    /// Whether the ZFS kernel module answered at all. When false, `arc`, `zil` and `pools` are
    /// empty and one [`SourceIssue`] says why.
    pub zfs_loaded: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arc: Option<ArcStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zil: Option<ZilStats>,
    #[serde(default)]
    pub pools: Vec<Pool>,
    #[serde(default)]
    pub tunables: Tunables,
    #[serde(default)]
    pub disks: Vec<Disk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuTimes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    #[serde(default)]
    pub net: Vec<NetInterface>,
    /// Sources that could not be read or parsed. A missing source degrades its own figures,
    /// never the whole snapshot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<SourceIssue>,
}

/// A source that failed, and why, in words an administrator can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceIssue {
    /// What was read: a path relative to the root, or a sysctl name.
    pub source: String,
    pub message: String,
}

/// A snapshot's disks by name ([`Snapshot::disks_by_name`]).
pub type DisksByName<'a> = std::collections::HashMap<&'a str, &'a Disk>;

impl Snapshot {
    /// The disk called `name`: a scan of the list, so for one lookup; a caller looking up one
    /// disk per vdev leaf or per disk builds [`Snapshot::disks_by_name`] once instead.
    pub fn disk(&self, name: &str) -> Option<&Disk> {
        self.disks.iter().find(|d| d.name == name)
    }

    /// Every disk by name, built in one pass; the first of a name wins, as [`Snapshot::disk`]
    /// finds it. A check that looked a disk up per vdev leaf with `disk` was quadratic: at
    /// 5,000 disks that scan was 29 % of an interval's CPU.
    pub fn disks_by_name(&self) -> DisksByName<'_> {
        let mut by_name = DisksByName::with_capacity(self.disks.len());
        for d in &self.disks {
            by_name.entry(d.name.as_str()).or_insert(d);
        }
        by_name
    }

    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.name == name)
    }

    /// Records a failed source.
    pub fn note(&mut self, source: impl Into<String>, message: impl Into<String>) {
        self.issues.push(SourceIssue {
            source: source.into(),
            message: message.into(),
        });
    }
}

#[cfg(test)]
mod disk_lookup_tests {
    use super::*;

    #[test]
    fn disks_by_name_finds_what_disk_finds_the_first_of_a_name_included() {
        let disk = |name: &str, size: u64| Disk {
            name: name.into(),
            size: Some(size),
            ..Disk::default()
        };
        let snap = Snapshot {
            // A name twice (a capture can hold that): the first wins in both.
            disks: vec![disk("sda", 1), disk("sdb", 2), disk("sda", 3)],
            ..Snapshot::default()
        };
        let by_name = snap.disks_by_name();
        assert_eq!(by_name.len(), 2);
        for name in ["sda", "sdb", "sdc"] {
            assert_eq!(
                by_name.get(name).map(|d| d.size),
                snap.disk(name).map(|d| d.size),
                "{name}"
            );
        }
        assert_eq!(by_name["sda"].size, Some(1));
    }
}
