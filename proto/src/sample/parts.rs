//! The sample a plugin receives when it declared parts it does not read (plugin ABI 1.1,
//! [`crate::abi::PluginDescriptor::unread`]).

use super::Sample;
use crate::abi::{
    PART_DATASETS, PART_DISK_RATES, PART_HOST_RATES, PART_SNAPSHOT_DISKS, PART_TXGS,
    PART_VDEV_HISTOGRAMS, PART_VDEV_RAW_STATS,
};
use crate::snapshot::Vdev;

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
                config: p.config.as_ref().map(|c| {
                    let mut c = c.clone();
                    strip_vdev(&mut c.root, unread);
                    c
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

fn strip_vdev(v: &mut Vdev, unread: u64) {
    if unread & PART_VDEV_HISTOGRAMS != 0 {
        v.histograms = None;
    }
    if unread & PART_VDEV_RAW_STATS != 0
        && let Some(stats) = v.stats.as_mut()
    {
        stats.raw = Vec::new();
    }
    for c in &mut v.children {
        strip_vdev(c, unread);
    }
}
