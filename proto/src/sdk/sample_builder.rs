//! [`SampleBuilder`]: samples for a plugin's tests, made the way the agent makes them: two
//! snapshots of kernel counters, paired by [`Sample::between`], so every rate, ratio and
//! delta a check reads follows the same rules as in the field (a counter that goes back is a
//! reset, a figure the kernel does not give is absent).

use crate::Sample;
use crate::snapshot::{
    ArcStats, Disk, DiskCounters, DiskRole, Diskstats, Kstat, KstatValue, Snapshot, VdevClass,
    ZilStats,
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
        SampleBuilder { prev, cur }
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

    /// The later snapshot, for what the builder does not add itself (a pool and its vdev
    /// tree, tunables).
    pub fn snapshot_mut(&mut self) -> &mut Snapshot {
        &mut self.cur
    }

    /// The sample, as the agent would make it from the two snapshots.
    pub fn build(self) -> Sample {
        Sample::between(&self.prev, &self.cur)
            .expect("SampleBuilder's snapshots are of one system, in order")
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
}
