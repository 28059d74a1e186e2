//! The sample a plugin receives when it declared parts it does not read (plugin ABI 1.1,
//! [`crate::abi::PluginDescriptor::unread`]).

use super::Sample;
use crate::abi::{
    PART_DATASETS, PART_DISK_RATES, PART_HOST_RATES, PART_SNAPSHOT_DISKS, PART_TXGS,
    PART_VDEV_HISTOGRAMS, PART_VDEV_RAW_STATS,
};
use crate::snapshot::{Vdev, VdevStats};

impl Sample {
    /// This sample without the `PART_*` parts in `unread`: each is left empty (absent on the
    /// wire), the rest unchanged. Unknown bits are ignored.
    pub fn without(&self, unread: u64) -> Sample {
        let has = |part: u64| unread & part != 0;
        let mut s = Sample {
            start: self.start,
            end: self.end,
            interval: self.interval,
            arc: self.arc.clone(),
            zil: self.zil.clone(),
            pools: self.pools.clone(),
            disks: if has(PART_DISK_RATES) {
                Vec::new()
            } else {
                self.disks.clone()
            },
            cpu: if has(PART_HOST_RATES) { None } else { self.cpu },
            net: if has(PART_HOST_RATES) {
                Vec::new()
            } else {
                self.net.clone()
            },
            resets: self.resets.clone(),
            snapshot: crate::Snapshot {
                taken_at: self.snapshot.taken_at,
                monotonic: self.snapshot.monotonic,
                host: self.snapshot.host.clone(),
                zfs_loaded: self.snapshot.zfs_loaded,
                arc: self.snapshot.arc.clone(),
                zil: self.snapshot.zil.clone(),
                pools: Vec::new(),
                tunables: self.snapshot.tunables.clone(),
                disks: Vec::new(),
                cpu: None,
                memory: self.snapshot.memory,
                net: Vec::new(),
                issues: self.snapshot.issues.clone(),
            },
        };
        let snap = &self.snapshot;
        if !has(PART_SNAPSHOT_DISKS) {
            s.snapshot.disks = snap.disks.clone();
        }
        if !has(PART_HOST_RATES) {
            s.snapshot.net = snap.net.clone();
            s.snapshot.cpu = snap.cpu;
        }
        s.snapshot.pools = snap
            .pools
            .iter()
            .map(|p| crate::snapshot::Pool {
                name: p.name.clone(),
                state: p.state.clone(),
                guid: p.guid,
                iostats: p.iostats.clone(),
                io: p.io,
                txgs: if has(PART_TXGS) {
                    Vec::new()
                } else {
                    p.txgs.clone()
                },
                config: p.config.as_ref().map(|c| crate::snapshot::PoolConfig {
                    error: c.error,
                    health: c.health.clone(),
                    altroot: c.altroot.clone(),
                    scan: c.scan.clone(),
                    error_count: c.error_count,
                    loaded_at: c.loaded_at,
                    root: vdev_without(&c.root, unread),
                }),
                datasets: if has(PART_DATASETS) {
                    Vec::new()
                } else {
                    p.datasets.clone()
                },
            })
            .collect();
        s
    }
}

/// `v` and its children without the parts in `unread`, copied field by field so that what
/// is left out (a leaf's ten latency histograms, the raw `vdev_stats` array) is never
/// copied at all: this runs once per distinct set of parts the plugins leave out, every
/// sample.
fn vdev_without(v: &Vdev, unread: u64) -> Vdev {
    let has = |part: u64| unread & part != 0;
    Vdev {
        name: v.name.clone(),
        vdev_type: v.vdev_type.clone(),
        class: v.class,
        guid: v.guid,
        id: v.id,
        path: v.path.clone(),
        whole_disk: v.whole_disk,
        redundancy: v.redundancy,
        ashift: v.ashift,
        state: v.state.clone(),
        aux: v.aux.clone(),
        stats: v.stats.as_ref().map(|st| {
            if has(PART_VDEV_RAW_STATS) {
                // Every other field is Copy.
                VdevStats {
                    raw: Vec::new(),
                    ..*st
                }
            } else {
                st.clone()
            }
        }),
        histograms: if has(PART_VDEV_HISTOGRAMS) {
            None
        } else {
            v.histograms.clone()
        },
        disk: v.disk.clone(),
        partition: v.partition.clone(),
        children: v.children.iter().map(|c| vdev_without(c, unread)).collect(),
    }
}
