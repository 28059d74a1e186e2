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

impl Snapshot {
    pub fn disk(&self, name: &str) -> Option<&Disk> {
        self.disks.iter().find(|d| d.name == name)
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
