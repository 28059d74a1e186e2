//! Per-pool kstats (`/proc/spl/kstat/zfs/<pool>/`, `kstat.zfs.<pool>.*`).

use super::{Kstat, PoolConfig};
use serde::{Deserialize, Serialize};

/// One imported pool as its kstats describe it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    pub name: String,
    /// `ONLINE`, `DEGRADED`, `SUSPENDED`, … from the `state` kstat (0.8+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// From the `guid` kstat (2.2+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guid: Option<u64>,
    /// When the pool was created, Unix seconds: its root dataset's `creation` property
    /// (`ZFS_IOC_OBJSET_STATS`, what `zfs get creation POOL` prints). Absent when it could not
    /// be read (the snapshot's note says why), for a faulted pool, and in captures made
    /// before zpulse read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// TRIM, ARC and direct-I/O counters (0.8+); writing to it resets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iostats: Option<Kstat>,
    /// The pool-wide `io` kstat, present only up to OpenZFS 2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<PoolIo>,
    /// Recent transaction groups, oldest first (`zfs_txg_history`, 100 by default since 0.8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub txgs: Vec<Txg>,
    /// The vdev tree with statistics, from `ZFS_IOC_POOL_STATS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PoolConfig>,
    /// Mounted filesystems and zvols, each with its own counters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<DatasetKstats>,
}

impl Pool {
    /// The pool's guid: its `guid` kstat (2.2+), else its root vdev's guid, which is the pool's
    /// own (OpenZFS `module/zfs/vdev.c`, `vdev_alloc`: the root vdev's guid is the pool guid;
    /// `spa_guid()` in `spa_misc.c` answers with it). So a pool destroyed and created again
    /// under its name is told on 2.1, which has no such kstat, too.
    pub fn pool_guid(&self) -> Option<u64> {
        self.guid
            .or_else(|| self.config.as_ref().and_then(|c| c.root.guid))
    }
}

/// KSTAT_TYPE_IO, the pre-2.1 pool `io` file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolIo {
    pub nread: u64,
    pub nwritten: u64,
    pub reads: u64,
    pub writes: u64,
    pub wtime: u64,
    pub wlentime: u64,
    pub wupdate: u64,
    pub rtime: u64,
    pub rlentime: u64,
    pub rupdate: u64,
    pub wcnt: u64,
    pub rcnt: u64,
}

/// One row of `<pool>/txgs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Txg {
    pub txg: u64,
    /// Birth time, monotonic ns.
    pub birth: u64,
    /// B(orn), O(pen), Q(uiescing), W(ait for sync), S(yncing), C(ommitted).
    pub state: String,
    pub ndirty: u64,
    pub nread: u64,
    pub nwritten: u64,
    pub reads: u64,
    pub writes: u64,
    /// ns spent open, quiescing, waiting for sync, syncing.
    pub otime: u64,
    pub qtime: u64,
    pub wtime: u64,
    pub stime: u64,
}

/// `objset-0x<id>`: one dataset's counters (and, 2.2+, its ZIL counters).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetKstats {
    /// The objset id, as in the file name (`0x36`).
    pub objset: String,
    /// `dataset_name`; may contain spaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub counters: Kstat,
}
