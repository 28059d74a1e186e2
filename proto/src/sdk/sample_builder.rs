//! [`SampleBuilder`]: samples for a plugin's tests, made the way the agent makes them: two
//! snapshots of kernel counters, paired by [`Sample::between`], so every rate, ratio and
//! delta a check reads follows the same rules as in the field (a counter that goes back is a
//! reset, a figure the kernel does not give is absent).

use crate::Sample;
use crate::snapshot::{
    ArcStats, Disk, DiskCounters, DiskRole, Diskstats, Kstat, KstatValue, Pool, PoolConfig,
    Snapshot, Vdev, VdevClass, VdevStats, ZilStats,
};
use std::collections::BTreeMap;

/// One disk's activity over the interval, as `/proc/diskstats` counts it: requests, 512-byte
/// sectors and milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct DiskLoad {
    pub reads: u64,
    pub writes: u64,
    pub sectors_read: u64,
    pub sectors_written: u64,
    pub read_ms: u64,
    pub write_ms: u64,
    /// Milliseconds the disk was busy (`%util` = this ÷ the interval).
    pub io_ms: u64,
}

impl DiskLoad {
    /// `reads` and `writes` requests of `kib` KiB each, each taking `await_ms`.
    pub fn requests(reads: u64, writes: u64, kib: u64, await_ms: u64) -> DiskLoad {
        DiskLoad {
            reads,
            writes,
            sectors_read: reads * kib * 2,
            sectors_written: writes * kib * 2,
            read_ms: reads * await_ms,
            write_ms: writes * await_ms,
            io_ms: 0,
        }
    }

    /// The same, the disk busy this many milliseconds of the interval.
    pub fn busy_ms(mut self, io_ms: u64) -> DiskLoad {
        self.io_ms = io_ms;
        self
    }
}

/// One vdev's activity over the interval, as `vdev_stat_t` counts it: requests, bytes and
/// errors.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct VdevLoad {
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    pub checksum_errors: u64,
}

impl VdevLoad {
    /// `reads` and `writes` requests of `kib` KiB each.
    pub fn requests(reads: u64, writes: u64, kib: u64) -> VdevLoad {
        VdevLoad {
            reads,
            writes,
            read_bytes: reads * kib * 1024,
            write_bytes: writes * kib * 1024,
            ..VdevLoad::default()
        }
    }

    /// The same, with READ, WRITE and CKSUM errors counted in the interval.
    pub fn errors(mut self, read: u64, write: u64, checksum: u64) -> VdevLoad {
        (self.read_errors, self.write_errors, self.checksum_errors) = (read, write, checksum);
        self
    }

    /// Adds this load to counters `stats` (ops and bytes by ZIO type: 1 read, 2 write).
    fn add_to(&self, stats: &mut VdevStats) {
        stats.ops[1] += self.reads;
        stats.ops[2] += self.writes;
        stats.bytes[1] += self.read_bytes;
        stats.bytes[2] += self.write_bytes;
        stats.read_errors += self.read_errors;
        stats.write_errors += self.write_errors;
        stats.checksum_errors += self.checksum_errors;
    }
}

/// Builds one [`Sample`] from what the kernel would have counted between two snapshots.
///
/// ```
/// use zpulse_proto::sdk::testing::{DiskLoad, SampleBuilder};
/// let sample = SampleBuilder::new(1_000.0, 10.0)
///     .disk("sda", true, DiskLoad::requests(1_500, 0, 4, 8).busy_ms(9_000))
///     .arc_counter("hits", 900)
///     .arc_counter("misses", 100)
///     .arc_value("size", 8 << 30)
///     .build();
/// let sda = &sample.disks[0];
/// assert_eq!(sda.r_s, 150.0);
/// assert_eq!(sda.util, 90.0);
/// ```
#[derive(Debug, Clone)]
pub struct SampleBuilder {
    prev: Snapshot,
    cur: Snapshot,
    /// The last guid given to a vdev: the sample pairs vdevs of the two trees by guid.
    guid: u64,
}

impl SampleBuilder {
    /// A sample that ends at `end` (Unix seconds) and lasts `interval_s` seconds, with
    /// nothing in it yet.
    pub fn new(end: f64, interval_s: f64) -> SampleBuilder {
        let cur = Snapshot {
            taken_at: end,
            zfs_loaded: true,
            ..Snapshot::default()
        };
        let prev = Snapshot {
            taken_at: end - interval_s,
            ..cur.clone()
        };
        SampleBuilder { prev, cur, guid: 0 }
    }

    /// A whole disk (`rotational`: a spinning one) and what it did in the interval.
    pub fn disk(self, name: &str, rotational: bool, load: DiskLoad) -> SampleBuilder {
        self.disk_in(name, rotational, load, None)
    }

    /// A disk that serves a pool, with its role (pool, allocation class, top-level vdev; the
    /// leaf is the disk's name), which is what joins disk figures to a pool's vdevs.
    pub fn pool_disk(
        self,
        name: &str,
        rotational: bool,
        load: DiskLoad,
        role: (&str, VdevClass, &str),
    ) -> SampleBuilder {
        let (pool, class, vdev) = role;
        let role = DiskRole {
            pool: pool.into(),
            class,
            vdev: vdev.into(),
            leaf: name.into(),
        };
        self.disk_in(name, rotational, load, Some(role))
    }

    fn disk_in(
        mut self,
        name: &str,
        rotational: bool,
        load: DiskLoad,
        role: Option<DiskRole>,
    ) -> SampleBuilder {
        // Counters that start from values of their own, as a disk that has been up a while.
        let base = Diskstats {
            reads: 10_000,
            writes: 10_000,
            sectors_read: 1_000_000,
            sectors_written: 1_000_000,
            read_ms: 50_000,
            write_ms: 50_000,
            io_ms: 100_000,
            weighted_ms: 100_000,
            ..Diskstats::default()
        };
        let after = Diskstats {
            reads: base.reads + load.reads,
            writes: base.writes + load.writes,
            sectors_read: base.sectors_read + load.sectors_read,
            sectors_written: base.sectors_written + load.sectors_written,
            read_ms: base.read_ms + load.read_ms,
            write_ms: base.write_ms + load.write_ms,
            io_ms: base.io_ms + load.io_ms,
            weighted_ms: base.weighted_ms + load.read_ms + load.write_ms,
            ..base.clone()
        };
        let disk = |counters| Disk {
            name: name.into(),
            rotational: Some(rotational),
            roles: role.iter().cloned().collect(),
            counters: DiskCounters::Diskstats(counters),
            ..Disk::default()
        };
        self.prev.disks.push(disk(base));
        self.cur.disks.push(disk(after));
        self
    }

    /// An arcstats counter (`hits`, `misses`, `l2_hits`, `l2_misses`, `mru_ghost_hits`, …)
    /// that grew by `delta` in the interval.
    pub fn arc_counter(mut self, row: &str, delta: u64) -> SampleBuilder {
        let prev = self.prev.arc.get_or_insert_with(ArcStats::default);
        let cur = self.cur.arc.get_or_insert_with(ArcStats::default);
        counter(&mut prev.0, &mut cur.0, row, delta);
        self
    }

    /// An arcstats row that is a level, not a count (`size`, `c`, `c_max`, `arc_meta_used`,
    /// `l2_size`, `l2_asize`, `memory_available_bytes`, …), the same in both snapshots.
    pub fn arc_value(mut self, row: &str, value: u64) -> SampleBuilder {
        let prev = self.prev.arc.get_or_insert_with(ArcStats::default);
        let cur = self.cur.arc.get_or_insert_with(ArcStats::default);
        set(&mut prev.0.fields, row, value);
        set(&mut cur.0.fields, row, value);
        self
    }

    /// A counter of the `zil` kstat (`zil_commit_count`, `zil_itx_metaslab_slog_bytes`, …)
    /// that grew by `delta`.
    pub fn zil_counter(mut self, row: &str, delta: u64) -> SampleBuilder {
        let prev = self.prev.zil.get_or_insert_with(ZilStats::default);
        let cur = self.cur.zil.get_or_insert_with(ZilStats::default);
        counter(&mut prev.0, &mut cur.0, row, delta);
        self
    }

    /// A pool in `health` (`ONLINE`, `DEGRADED`, …) with no vdevs yet ([`SampleBuilder::vdev`]
    /// adds them, and the pool, `ONLINE`, when it is not there).
    pub fn pool(mut self, name: &str, health: &str) -> SampleBuilder {
        self.pool_in(name, health);
        self
    }

    fn pool_in(&mut self, name: &str, health: &str) {
        if self.cur.pool(name).is_some() {
            return;
        }
        self.guid += 1;
        let root = Vdev {
            name: name.into(),
            vdev_type: "root".into(),
            guid: Some(self.guid),
            state: Some(health.into()),
            ..Vdev::default()
        };
        let pool = |taken_at: f64| Pool {
            name: name.into(),
            state: Some(health.into()),
            config: Some(PoolConfig {
                health: health.into(),
                root: Vdev {
                    stats: Some(vdev_stats(taken_at)),
                    ..root.clone()
                },
                ..PoolConfig::default()
            }),
            ..Pool::default()
        };
        self.prev.pools.push(pool(self.prev.taken_at));
        self.cur.pools.push(pool(self.cur.taken_at));
    }

    /// A top-level vdev of `pool`'s `class`: `top` (`mirror-0`, `raidz2-1`: its type is the
    /// name's stem) with `leaves` (disk names), each of which did `load` in the interval; with
    /// no leaves, `top` is a single disk that did `load`. The top-level vdev and the pool's
    /// root count the sum of their leaves, as the kernel's do.
    pub fn vdev(
        mut self,
        pool: &str,
        class: VdevClass,
        top: &str,
        leaves: &[&str],
        load: VdevLoad,
    ) -> SampleBuilder {
        self.pool_in(pool, "ONLINE");
        let leaf = |name: &str, guid: u64| Vdev {
            name: name.into(),
            vdev_type: "disk".into(),
            class: Some(class),
            guid: Some(guid),
            path: Some(format!("/dev/{name}")),
            state: Some("ONLINE".into()),
            disk: Some(name.into()),
            ..Vdev::default()
        };
        self.guid += 1;
        let mut tree = if leaves.is_empty() {
            leaf(top, self.guid)
        } else {
            let stem = top.rsplit_once('-').map_or(top, |(stem, _)| stem);
            let mut children = Vec::new();
            for name in leaves {
                self.guid += 1;
                children.push(leaf(name, self.guid));
            }
            Vdev {
                name: top.into(),
                vdev_type: stem.into(),
                class: Some(class),
                guid: Some(self.guid - leaves.len() as u64),
                state: Some("ONLINE".into()),
                children,
                ..Vdev::default()
            }
        };
        let n = leaves.len().max(1) as u64;
        for (snapshot, after) in [(&mut self.prev, false), (&mut self.cur, true)] {
            let taken_at = snapshot.taken_at;
            let with_stats = |v: &mut Vdev, times: u64| {
                let mut stats = vdev_stats(taken_at);
                if after {
                    (0..times).for_each(|_| load.add_to(&mut stats));
                }
                v.stats = Some(stats);
            };
            with_stats(&mut tree, n);
            tree.children.iter_mut().for_each(|c| with_stats(c, 1));
            let config = snapshot
                .pools
                .iter_mut()
                .find(|p| p.name == pool)
                .and_then(|p| p.config.as_mut())
                .expect("pool_in added the pool with its config");
            if after && let Some(stats) = config.root.stats.as_mut() {
                (0..n).for_each(|_| load.add_to(stats));
            }
            config.root.children.push(tree.clone());
        }
        self
    }

    /// The later snapshot, for what the builder does not add itself (a vdev's state,
    /// tunables).
    pub fn snapshot_mut(&mut self) -> &mut Snapshot {
        &mut self.cur
    }

    /// The sample, as the agent would make it from the two snapshots.
    pub fn build(self) -> Sample {
        Sample::between(&self.prev, &self.cur)
            .expect("SampleBuilder's snapshots are of one system, in order")
    }
}

/// A vdev's counters at `taken_at`, from a start of their own (a vdev open a while): its
/// `timestamp` follows the snapshot's time, so `zpool iostat`'s rates divide by the interval.
fn vdev_stats(taken_at: f64) -> VdevStats {
    VdevStats {
        timestamp: (taken_at * 1e9) as u64,
        ops: [0, 10_000, 10_000, 0, 0, 0],
        bytes: [0, 1 << 30, 1 << 30, 0, 0, 0],
        ..VdevStats::default()
    }
}

/// A counter's two readings: from a start of its own, `delta` apart.
fn counter(prev: &mut Kstat, cur: &mut Kstat, row: &str, delta: u64) {
    const START: u64 = 1_000_000;
    set(&mut prev.fields, row, START);
    set(&mut cur.fields, row, START + delta);
}

fn set(fields: &mut BTreeMap<String, KstatValue>, row: &str, value: u64) {
    fields.insert(row.into(), KstatValue::Unsigned(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected figures from sysstat's iostat formulas over the counters given (r/s =
    /// Δreads/Δt, rkB/s = Δsectors/2/Δt, r_await = Δread_ms/Δreads, %util = Δio_ms/Δt/10)
    /// and the ARC's hit ratio = Δhits / (Δhits + Δmisses).
    #[test]
    fn figures_follow_from_the_counters_given() {
        let s = SampleBuilder::new(2_000.0, 10.0)
            .pool_disk(
                "sdb",
                true,
                DiskLoad::requests(200, 100, 64, 12).busy_ms(6_000),
                ("tank", VdevClass::Normal, "mirror-0"),
            )
            .arc_counter("hits", 950)
            .arc_counter("misses", 50)
            .arc_counter("l2_hits", 30)
            .arc_value("c_max", 16 << 30)
            .build();
        assert_eq!((s.start, s.end, s.interval), (1_990.0, 2_000.0, 10.0));
        let d = &s.disks[0];
        assert_eq!((d.r_s, d.w_s), (20.0, 10.0));
        assert_eq!((d.rkb_s, d.wkb_s), (1_280.0, 640.0));
        assert_eq!(d.util, 60.0);
        assert_eq!(d.r_await, Some(12.0));
        assert_eq!(d.rotational, Some(true));
        let role = &s.snapshot.disks[0].roles[0];
        assert_eq!(
            (role.pool.as_str(), role.vdev.as_str()),
            ("tank", "mirror-0")
        );
        let arc = s.arc.as_ref().expect("arc rates");
        assert_eq!(arc.hit_ratio, Some(0.95));
        let snapshot_arc = s.snapshot.arc.as_ref().unwrap();
        assert_eq!(snapshot_arc.c_max(), Some(16 << 30));
    }

    /// `zpool iostat` divides each counter's growth by the vdev's own time delta: 500 reads
    /// of 128 KiB in 10 s on each of two mirror legs is 50 reads/s and 6.4 MiB/s per leg,
    /// twice that for the mirror and the pool; errors are counted per leg.
    #[test]
    fn vdev_figures_follow_from_the_counters_given() {
        let load = VdevLoad::requests(500, 0, 128).errors(0, 0, 3);
        let s = SampleBuilder::new(1_000.0, 10.0)
            .pool("tank", "DEGRADED")
            .vdev(
                "tank",
                VdevClass::Special,
                "mirror-1",
                &["sdc", "sdd"],
                load,
            )
            .vdev(
                "tank",
                VdevClass::Log,
                "sde",
                &[],
                VdevLoad::requests(0, 100, 4),
            )
            .build();
        let pool = &s.pools[0];
        let by = |subject: &str| {
            let found = pool.vdevs.iter().find(|v| v.subject == subject);
            found.unwrap_or_else(|| panic!("{subject} in {:?}", pool.vdevs))
        };
        let leg = by("tank/special/mirror-1/sdc");
        assert_eq!(leg.read_ops_per_s, 50.0);
        assert_eq!(leg.read_bytes_per_s, 50.0 * 128.0 * 1024.0);
        assert_eq!(leg.disk.as_deref(), Some("sdc"));
        assert_eq!(leg.new_errors.checksum, Some(3));
        assert_eq!(by("tank/special/mirror-1").read_ops_per_s, 100.0);
        assert_eq!(by("tank/log/sde").write_ops_per_s, 10.0);
        assert_eq!(by("tank").read_ops_per_s, 100.0);
        assert_eq!(by("tank").write_ops_per_s, 10.0);
        let config = s.snapshot.pools[0].config.as_ref().unwrap();
        assert_eq!(config.health, "DEGRADED");
        assert_eq!(config.root.children[0].vdev_type, "mirror");
    }
}
