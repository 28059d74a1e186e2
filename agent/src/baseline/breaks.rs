//! What makes an interval unfit for the window's figures, found before its rates are used.
//!
//! A window's figures are sums of counter deltas over the time they cover. An interval
//! breaks that sum when:
//!
//! * **counters restarted** in it (a pool exported and imported or re-created, a device
//!   replaced, a reboot, a module reload): a counter that went back to zero and then counted
//!   past its old value gives a delta that looks valid and is not. The sample names counters
//!   that went backwards (`Sample::resets`); a pool is also known re-opened when its root
//!   vdev's time since open (`vs_timestamp`, module/zfs/vdev.c `vdev_get_stats`) did not
//!   advance with the clock, when its import time (`initial_load_time`) changed, or when its
//!   guid changed. A device that left a pool (replaced, detached, removed) restarts the
//!   counters above it: an interior vdev's operations, bytes and histograms are not counted
//!   in it but summed over its children at each read (`vdev_get_stats_ex_impl`), so they
//!   drop by the departed device's whole history. A reboot is known by the time since boot
//!   (the snapshot's time less its boot time) going back, or, when the new boot has already
//!   run longer than the old one had, by its boot time moving while counters restarted;
//! * **no snapshot came for a while** (a gap: the agent stopped, the machine slept): more
//!   than [`GAP_INTERVALS`] of the window's usual interval. Its delta is true but it is one
//!   long interval among short ones, and its end may follow a restart that left no trace;
//! * **the wall clock stepped** (`date -s`, a VM resumed, NTP's first fix): the time between
//!   two snapshots is then not the time that passed. Checked against a clock that does not
//!   step: the agent's monotonic clock when both snapshots have one, else the time since
//!   boot (a step moves the boot time the kernel reports by as much as the wall clock, so
//!   their difference does not step), else the CPU time the kernel counted (every CPU's
//!   ticks, busy and idle, add up to the elapsed time times the number of CPUs, proc(5)
//!   `/proc/stat`), compared with the window's usual rate of ticks;
//! * **a counter is impossible**: a disk busy for longer than the interval lasted.
//!
//! Such an interval is left out of every figure (the window is split there: each side's
//! figures come from its own intervals) and said in a note.

use serde::{Deserialize, Serialize};
use zpulse_proto::Snapshot;
use zpulse_proto::counter::delta_u32;
use zpulse_proto::snapshot::DiskCounters;

/// A gap: an interval longer than this many of the window's usual (median) interval …
pub const GAP_INTERVALS: f64 = 3.0;
/// … and than this many seconds: a shorter pause is a slow reading (a capture that overran
/// its schedule on a loaded host), not an absence.
pub const GAP_MIN_S: f64 = 120.0;

/// The wall clock and the monotonic clock may disagree by this share of the interval (plus
/// [`CLOCK_SLACK_S`]) before the interval counts as a clock step: snapshots are read over
/// some milliseconds.
const CLOCK_TOLERANCE: f64 = 0.25;
const CLOCK_SLACK_S: f64 = 2.0;
/// CPU ticks are a rougher clock: a guest under load loses ticks (a lab VM under software
/// emulation counted half its wall-clock seconds), so against them only a wall clock that
/// ran more than this many times ahead, and by [`TICKS_SLACK_S`], is a step.
const TICKS_FACTOR: f64 = 10.0;
const TICKS_SLACK_S: f64 = 300.0;
/// Linux prints the boot time in whole seconds, computed at each read: it may differ by a
/// second between two readings of one boot.
const BOOT_SLACK_S: f64 = 2.0;

/// A disk's busy time may exceed the interval by this share before it is impossible: the
/// kernel updates it at the start and end of requests, so it runs slightly ahead.
const BUSY_TOLERANCE: f64 = 0.10;

/// One interval left out of the window, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Break {
    /// `taken_at` of the snapshots around it, Unix seconds.
    pub from: f64,
    pub to: f64,
    /// `restart`, `gap`, `clock-step`, `impossible` or `unpaired`.
    pub kind: String,
    /// What happened, in words.
    pub what: String,
}

impl Break {
    pub fn new(prev: &Snapshot, cur: &Snapshot, kind: &str, what: String) -> Break {
        Break {
            from: prev.taken_at,
            to: cur.taken_at,
            kind: kind.to_owned(),
            what,
        }
    }

    /// The note the report prints for it.
    pub fn note(&self) -> String {
        format!(
            "{} to {}: {}; this interval is left out of every figure (the window is split \
             there, each side's figures come from its own intervals)",
            crate::report::utc(self.from),
            crate::report::utc(self.to),
            self.what
        )
    }
}

/// The window's usual pace, learnt from the intervals kept so far.
#[derive(Debug, Default, Clone)]
pub struct Pace {
    /// Seconds of each kept interval (by the clock the sample used).
    seconds: Vec<f64>,
    /// CPU ticks per wall-clock second in each kept interval that had CPU times.
    ticks_per_s: Vec<f64>,
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

fn ticks(s: &Snapshot) -> Option<u64> {
    s.cpu.map(|c| c.total())
}

fn wall(prev: &Snapshot, cur: &Snapshot) -> f64 {
    cur.taken_at - prev.taken_at
}

impl Pace {
    /// The usual interval: the median of those kept so far.
    pub fn usual(&self) -> Option<f64> {
        median(&self.seconds)
    }

    /// Records a kept interval.
    pub fn keep(&mut self, prev: &Snapshot, cur: &Snapshot, seconds: f64) {
        self.seconds.push(seconds);
        let w = wall(prev, cur);
        if let (Some(a), Some(b)) = (ticks(prev), ticks(cur))
            && w > 0.0
            && b >= a
        {
            self.ticks_per_s.push((b - a) as f64 / w);
        }
    }

    /// Why the interval from `prev` to `cur` cannot be used, if it cannot; `seconds` is the
    /// length the sample gives it, `resets` the counters it found gone backwards
    /// (`Sample::resets`).
    pub fn judge(
        &self,
        prev: &Snapshot,
        cur: &Snapshot,
        seconds: f64,
        resets: &[String],
    ) -> Option<Break> {
        rebooted(prev, cur, resets)
            .or_else(|| self.clock_step(prev, cur))
            .or_else(|| self.gap(prev, cur, seconds))
            .or_else(|| reopened(prev, cur))
            .or_else(|| departed(prev, cur))
            .or_else(|| impossible(prev, cur, seconds))
            .or_else(|| (!resets.is_empty()).then(|| restarted(prev, cur, resets)))
    }

    fn clock_step(&self, prev: &Snapshot, cur: &Snapshot) -> Option<Break> {
        let w = wall(prev, cur);
        let agrees = |e: f64, slack: f64| (w - e).abs() <= slack + CLOCK_TOLERANCE * e.max(0.0);
        let elapsed = match (
            prev.monotonic,
            cur.monotonic,
            since_boot(prev),
            since_boot(cur),
        ) {
            (Some(a), Some(b), _, _) => {
                let e = b - a;
                if agrees(e, CLOCK_SLACK_S) {
                    return None;
                }
                e
            }
            (_, _, Some(a), Some(b)) => {
                let e = b - a;
                if agrees(e, CLOCK_SLACK_S + BOOT_SLACK_S) {
                    return None;
                }
                e
            }
            _ => {
                let rate = median(&self.ticks_per_s)?;
                let (a, b) = (ticks(prev)?, ticks(cur)?);
                let e = (b >= a && rate > 0.0).then(|| (b - a) as f64 / rate)?;
                if w <= TICKS_FACTOR * e + TICKS_SLACK_S {
                    return None;
                }
                e
            }
        };
        let what = if elapsed <= 0.0 {
            format!(
                "the monotonic clock went back (the agent restarted) while the wall clock \
                 moved {}",
                signed_duration(w)
            )
        } else {
            format!(
                "the wall clock moved {} while about {} passed (a clock step)",
                signed_duration(w),
                crate::baseline::page::duration(elapsed)
            )
        };
        Some(Break::new(prev, cur, "clock-step", what))
    }

    fn gap(&self, prev: &Snapshot, cur: &Snapshot, seconds: f64) -> Option<Break> {
        let usual = self.usual()?;
        (seconds > GAP_INTERVALS * usual && seconds > GAP_MIN_S).then(|| {
            Break::new(
                prev,
                cur,
                "gap",
                format!(
                    "no snapshot for {} ({:.0} of the window's usual {} intervals)",
                    crate::baseline::page::duration(seconds),
                    seconds / usual,
                    crate::baseline::page::duration(usual)
                ),
            )
        })
    }
}

/// Seconds since the host booted, by the snapshot's own clock; none for a boot time no
/// kernel gives (not a finite time after the epoch: a damaged or forged history record).
fn since_boot(s: &Snapshot) -> Option<f64> {
    s.boot_time
        .filter(|b| b.is_finite() && *b > 0.0)
        .map(|b| s.taken_at - b)
}

/// A reboot between the snapshots: the time since boot went back, or the boot time moved
/// while counters restarted. (A boot time that moved alone is a step of the wall clock,
/// which moves it as much; the kstats' creation times and the counters that restart with
/// the kernel tell a reboot from it when the new boot has run longer than the old one had.)
fn rebooted(prev: &Snapshot, cur: &Snapshot, resets: &[String]) -> Option<Break> {
    let (before, after) = (since_boot(prev)?, since_boot(cur)?);
    let booted = cur.taken_at - after;
    let moved = (booted - (prev.taken_at - before)).abs() > BOOT_SLACK_S;
    (after < before - BOOT_SLACK_S || (moved && !resets.is_empty())).then(|| {
        Break::new(
            prev,
            cur,
            "restart",
            format!(
                "the host rebooted (booted again at {}): every kernel counter restarted",
                crate::report::utc(booted)
            ),
        )
    })
}

/// A device that left a pool between the snapshots (replaced, detached, removed): the
/// counters of the vdevs above it are sums over their devices and fell by its history.
/// Cache and spare devices are not under the pool's root in the kernel and are not counted.
fn departed(prev: &Snapshot, cur: &Snapshot) -> Option<Break> {
    use std::collections::HashSet;
    use zpulse_proto::snapshot::{Vdev, VdevClass};
    fn counted(root: &Vdev) -> Vec<&Vdev> {
        root.children
            .iter()
            .filter(|top| !matches!(top.class, Some(VdevClass::Cache | VdevClass::Spare)))
            .flat_map(|top| top.leaves())
            .filter(|leaf| leaf.guid.is_some())
            .collect()
    }
    for pool in &cur.pools {
        let (Some(a), Some(b)) = (
            prev.pool(&pool.name).and_then(|p| p.config.as_ref()),
            pool.config.as_ref(),
        ) else {
            continue;
        };
        let (was, is) = (counted(&a.root), counted(&b.root));
        let guids = |leaves: &[&Vdev]| leaves.iter().map(|l| l.guid).collect::<HashSet<_>>();
        let (was_guids, is_guids) = (guids(&was), guids(&is));
        let left: Vec<&Vdev> = was
            .iter()
            .copied()
            .filter(|l| !is_guids.contains(&l.guid))
            .collect();
        if left.is_empty() {
            continue;
        }
        let came: Vec<&Vdev> = is
            .iter()
            .copied()
            .filter(|l| !was_guids.contains(&l.guid))
            .collect();
        // A device that left and one that came at its path: the disk in its bay was swapped.
        fn path(v: &Vdev) -> &str {
            v.path.as_deref().unwrap_or(&v.name)
        }
        let one_at_its_path = |v: &Vdev, among: &[&Vdev]| among.iter().any(|o| path(o) == path(v));
        let mut told: Vec<String> = left
            .iter()
            .filter(|l| one_at_its_path(l, &came))
            .map(|l| format!("{} was replaced by a new device at the same path", l.name))
            .collect();
        let gone: Vec<&str> = left
            .iter()
            .filter(|l| !one_at_its_path(l, &came))
            .map(|l| l.name.as_str())
            .collect();
        let joined: Vec<&str> = came
            .iter()
            .filter(|c| !one_at_its_path(c, &left))
            .map(|c| c.name.as_str())
            .collect();
        match (gone.as_slice(), joined.as_slice()) {
            ([], _) => {}
            ([one], [other]) => told.push(format!("{one} was replaced by {other}")),
            (gone, []) => told.push(format!("{} left", gone.join(", "))),
            (gone, joined) => told.push(format!(
                "{} left ({} joined)",
                gone.join(", "),
                joined.join(", ")
            )),
        }
        let mut what = format!("pool {}: device {}", pool.name, told.join(", "));
        what.push_str(
            "; the counters of the vdevs above it, its class and the pool are sums over their \
             devices and restarted",
        );
        return Some(Break::new(prev, cur, "restart", what));
    }
    None
}

fn signed_duration(s: f64) -> String {
    let d = crate::baseline::page::duration(s.abs());
    if s < 0.0 { format!("back {d}") } else { d }
}

/// A pool whose counters restarted without going backwards: opened again (its root vdev's
/// time since open did not grow with the interval), imported again, or another pool of the
/// same name.
fn reopened(prev: &Snapshot, cur: &Snapshot) -> Option<Break> {
    let w = wall(prev, cur);
    for pool in &cur.pools {
        let Some(before) = prev.pool(&pool.name) else {
            continue;
        };
        let (was, is) = (before.pool_guid(), pool.pool_guid());
        let why = if was.is_some() && is.is_some() && was != is {
            Some("was destroyed and created again (a new guid)")
        } else {
            match (&before.config, &pool.config) {
                (Some(a), Some(b)) if a.loaded_at != b.loaded_at => {
                    Some("was exported and imported again (a new import time)")
                }
                (Some(a), Some(b)) => match (&a.root.stats, &b.root.stats) {
                    // Time since open: it must have grown by about the interval.
                    (Some(x), Some(y))
                        if (y.timestamp < x.timestamp)
                            || (w > 0.0
                                && ((y.timestamp - x.timestamp) as f64 / 1e9) < w * 0.5) =>
                    {
                        Some("was opened again (exported and imported)")
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        if let Some(why) = why {
            return Some(Break::new(
                prev,
                cur,
                "restart",
                format!(
                    "pool {} {why}: its vdev, class, pool and dataset counters restarted",
                    pool.name
                ),
            ));
        }
    }
    None
}

/// A disk busy for longer than the interval lasted (Linux `io_ticks`, FreeBSD devstat busy
/// time): a counter that jumped, which would show a quiet disk 100% busy.
fn impossible(prev: &Snapshot, cur: &Snapshot, seconds: f64) -> Option<Break> {
    let by_name = prev.disks_by_name();
    for disk in &cur.disks {
        let Some(before) = by_name.get(disk.name.as_str()) else {
            continue;
        };
        let busy_s = match (&before.counters, &disk.counters) {
            (DiskCounters::Diskstats(a), DiskCounters::Diskstats(b))
                if (a.major, a.minor) == (b.major, b.minor)
                    && b.reads >= a.reads
                    && b.writes >= a.writes =>
            {
                delta_u32(a.io_ms, b.io_ms) as f64 / 1e3
            }
            (DiskCounters::Devstat(a), DiskCounters::Devstat(b))
                if a.creation_time == b.creation_time =>
            {
                b.busy_time - a.busy_time
            }
            _ => continue,
        };
        if busy_s > seconds * (1.0 + BUSY_TOLERANCE) + 0.1 {
            return Some(Break::new(
                prev,
                cur,
                "impossible",
                format!(
                    "disk {} counted {busy_s:.1} s busy in an interval of {seconds:.1} s \
                     (an impossible counter)",
                    disk.name
                ),
            ));
        }
    }
    None
}

/// The break for an interval whose sample found counters that went backwards.
pub fn restarted(prev: &Snapshot, cur: &Snapshot, resets: &[String]) -> Break {
    const SHOWN: usize = 6;
    let mut what = format!(
        "counters restarted ({}",
        resets[..resets.len().min(SHOWN)].join(", ")
    );
    if resets.len() > SHOWN {
        what.push_str(&format!(" and {} more", resets.len() - SHOWN));
    }
    what.push(')');
    Break::new(prev, cur, "restart", what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zpulse_proto::snapshot::CpuTimes;

    fn at(t: f64, idle: u64) -> Snapshot {
        Snapshot {
            taken_at: t,
            cpu: Some(CpuTimes {
                idle,
                ..CpuTimes::default()
            }),
            ..Snapshot::default()
        }
    }

    /// A snapshot at `t` holding the disks of a `/proc/diskstats` text, parsed as the agent
    /// parses it.
    fn diskstats_at(t: f64, text: &str) -> Snapshot {
        let (lines, errors) = crate::sources::linux::diskstats::parse(text.as_bytes());
        assert!(errors.is_empty(), "{errors:?}");
        Snapshot {
            taken_at: t,
            disks: lines
                .into_iter()
                .map(|l| zpulse_proto::snapshot::Disk {
                    name: l.name,
                    counters: DiskCounters::Diskstats(l.stats),
                    ..Default::default()
                })
                .collect(),
            ..Snapshot::default()
        }
    }

    // Lines as `diskstats_show` (block/genhd.c) prints them: major, minor, name, reads,
    // reads merged, sectors read, ms reading, writes, writes merged, sectors written, ms
    // writing, I/Os in progress, ms doing I/O (`io_ticks`, the busy time), weighted ms.
    const SDA_0: &str = "   8       0 sda 1000 0 8000 4000 500 0 4000 2500 0 6000 6500\n";

    #[test]
    fn a_disk_busy_longer_than_the_interval_is_an_impossible_counter() {
        let pace = Pace::default();
        let a = diskstats_at(100.0, SDA_0);
        // 10 s later sda did 10 reads, and `ms doing I/O` grew by 15,000: 15 s busy in 10 s.
        let b = diskstats_at(
            110.0,
            "   8       0 sda 1010 0 8080 4040 500 0 4000 2500 0 21000 6540\n",
        );
        let br = pace
            .judge(&a, &b, 10.0, &[])
            .expect("an impossible interval");
        assert_eq!(br.kind, "impossible");
        assert_eq!((br.from, br.to), (100.0, 110.0));
        assert_eq!(
            br.what,
            "disk sda counted 15.0 s busy in an interval of 10.0 s (an impossible counter)"
        );
        let note = br.note();
        assert!(
            note.ends_with(
                "this interval is left out of every figure (the window is split there, each \
                 side's figures come from its own intervals)"
            ),
            "{note}"
        );
        // The kernel updates io_ticks at the start and the end of a request, so it runs a
        // little ahead: 11.1 s (10% + 0.1 s over) is still possible, 11.2 s is not.
        let busy = |ms: u64| {
            let line = format!(
                "   8       0 sda 1010 0 8080 4040 500 0 4000 2500 0 {} 6540\n",
                6000 + ms
            );
            pace.judge(&a, &diskstats_at(110.0, &line), 10.0, &[])
                .map(|b| b.kind)
        };
        assert_eq!(busy(11_100), None);
        assert_eq!(busy(11_200).as_deref(), Some("impossible"));
        // The time fields are 32-bit and wrap: from 2^32 - 1,000 ms to 4,000 ms is 5 s.
        let near = "   8       0 sda 1000 0 8000 4000 500 0 4000 2500 0 4294966296 6500\n";
        let wrapped = "   8       0 sda 1010 0 8080 4040 500 0 4000 2500 0 4000 6540\n";
        assert_eq!(
            pace.judge(
                &diskstats_at(100.0, near),
                &diskstats_at(110.0, wrapped),
                10.0,
                &[]
            ),
            None
        );
    }

    #[test]
    fn counters_that_went_back_are_a_restart_not_an_impossible_counter() {
        // The disk swapped or the host rebooted between the readings: a new block_device
        // starts its per-CPU stats at zero (bdev_alloc, block/bdev.c), so every counter is
        // below the one before; by the 32-bit wrap rule `ms doing I/O` alone would read as
        // 2^32 - 3,000 ms busy.
        let a = diskstats_at(100.0, SDA_0);
        let b = diskstats_at(
            110.0,
            "   8       0 sda 20 0 160 80 10 0 80 50 0 3000 130\n",
        );
        assert_eq!(Pace::default().judge(&a, &b, 10.0, &[]), None);
        // The sample names the disk among its resets, and that is the interval's break.
        let sample = zpulse_proto::Sample::between(&a, &b).unwrap();
        assert_eq!(sample.resets, ["disk sda"]);
        assert!(
            sample.disks.iter().all(|d| d.name != "sda"),
            "no rates for sda"
        );
        let br = restarted(&a, &b, &sample.resets);
        assert_eq!(br.kind, "restart");
        assert_eq!(br.what, "counters restarted (disk sda)");
        // Many at once are named up to six, then counted.
        let many: Vec<String> = (0..8).map(|i| format!("disk sd{i}")).collect();
        assert_eq!(
            restarted(&a, &b, &many).what,
            "counters restarted (disk sd0, disk sd1, disk sd2, disk sd3, disk sd4, disk sd5 \
             and 2 more)"
        );
    }

    #[test]
    fn a_freebsd_disk_busy_longer_than_the_interval_is_impossible_unless_reattached() {
        // devstat's busy_time is seconds with I/O outstanding (sys/sys/devicestat.h); a
        // device attached anew has another creation_time and starts over.
        let at = |t: f64, busy: f64, created: f64| Snapshot {
            taken_at: t,
            disks: vec![zpulse_proto::snapshot::Disk {
                name: "ada0".into(),
                counters: DiskCounters::Devstat(zpulse_proto::snapshot::Devstat {
                    busy_time: busy,
                    creation_time: created,
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Snapshot::default()
        };
        let pace = Pace::default();
        let br = pace.judge(&at(0.0, 50.0, 7.0), &at(10.0, 70.0, 7.0), 10.0, &[]);
        assert_eq!(br.map(|b| b.kind).as_deref(), Some("impossible"));
        assert_eq!(
            pace.judge(&at(0.0, 50.0, 7.0), &at(10.0, 59.0, 7.0), 10.0, &[]),
            None
        );
        assert_eq!(
            pace.judge(&at(0.0, 50.0, 7.0), &at(10.0, 70.0, 900.0), 10.0, &[]),
            None
        );
    }

    /// A snapshot at wall time `t` of a host booted at `boot` (both Unix seconds, by the
    /// host's wall clock at the time of the reading).
    fn booted_at(t: f64, boot: f64) -> Snapshot {
        Snapshot {
            taken_at: t,
            boot_time: Some(boot),
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_reboot_is_the_time_since_boot_going_back() {
        let pace = Pace::default();
        let a = booted_at(1_000_000.0, 900_000.0);
        // 60 s later the host had booted 20 s before: a reboot, whatever the interval.
        let b = booted_at(1_000_060.0, 1_000_040.0);
        let br = pace.judge(&a, &b, 60.0, &[]).expect("a reboot");
        assert_eq!(br.kind, "restart");
        assert_eq!(
            br.what,
            "the host rebooted (booted again at 1970-01-12 13:47:20 UTC): every kernel counter \
             restarted"
        );
        // Booted 100 s before one reading, rebooted, read again 150 s into the new boot: the
        // time since boot grew, as it would across a step of the wall clock by the 250 s the
        // boot time moved. The counters that restarted with the kernel tell it a reboot.
        let (a, b) = (
            booted_at(1_000_000.0, 999_900.0),
            booted_at(1_000_300.0, 1_000_150.0),
        );
        let restarted = ["arcstats".to_owned()];
        assert_eq!(
            pace.judge(&a, &b, 300.0, &restarted).map(|b| b.kind),
            Some("restart".to_owned())
        );
        assert_eq!(
            pace.judge(&a, &b, 300.0, &[]).map(|b| b.kind),
            Some("clock-step".to_owned())
        );
        let a = booted_at(1_000_000.0, 900_000.0);
        // Linux prints btime in whole seconds, computed at each read: a second's difference
        // is the same boot.
        assert_eq!(
            pace.judge(&a, &booted_at(1_000_010.0, 900_001.0), 10.0, &[]),
            None
        );
    }

    #[test]
    fn a_boot_time_no_kernel_gives_is_not_taken_for_a_reboot() {
        // A damaged or forged history record: infinite, NaN, zero or negative boot times are
        // no boot; the interval is judged as if they were absent.
        let pace = Pace::default();
        let a = booted_at(1_000_000.0, 900_000.0);
        for bad in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.0, -5.0] {
            assert_eq!(
                pace.judge(&a, &booted_at(1_000_010.0, bad), 10.0, &[]),
                None,
                "{bad}"
            );
        }
    }

    #[test]
    fn a_clock_step_moves_the_boot_time_with_it_and_is_told_by_the_time_since_boot() {
        // `date -s "+21 days"`: the kernel's boot time moves by the step (the wall clock less
        // the time since boot), so the time since boot grows by the 10 s that passed.
        let pace = Pace::default();
        let a = booted_at(1_000_000.0, 900_000.0);
        let step = 21.0 * 86_400.0;
        let b = booted_at(1_000_010.0 + step, 900_000.0 + step);
        let br = pace.judge(&a, &b, 10.0 + step, &[]).expect("a step");
        assert_eq!(br.kind, "clock-step");
        assert!(br.what.contains("while about 10 s passed"), "{}", br.what);
        // Without the step, 12 s by both: nothing to say.
        assert_eq!(
            pace.judge(&a, &booted_at(1_000_012.0, 900_000.0), 12.0, &[]),
            None
        );
    }

    /// A pool `rp` whose mirror holds leaves of these (name, guid).
    fn mirror_of(t: f64, leaves: &[(&str, u64)], cache: &[(&str, u64)]) -> Snapshot {
        use zpulse_proto::snapshot::{Pool, PoolConfig, Vdev, VdevClass};
        let leaf = |(name, guid): &(&str, u64)| Vdev {
            name: (*name).into(),
            vdev_type: "disk".into(),
            guid: Some(*guid),
            path: Some(format!("/dev/{name}1")),
            ..Vdev::default()
        };
        let mut tops = vec![Vdev {
            name: "mirror-0".into(),
            vdev_type: "mirror".into(),
            class: Some(VdevClass::Normal),
            guid: Some(1),
            children: leaves.iter().map(leaf).collect(),
            ..Vdev::default()
        }];
        tops.extend(cache.iter().map(|c| Vdev {
            class: Some(VdevClass::Cache),
            ..leaf(c)
        }));
        Snapshot {
            taken_at: t,
            pools: vec![Pool {
                name: "rp".into(),
                config: Some(PoolConfig {
                    root: Vdev {
                        name: "rp".into(),
                        vdev_type: "root".into(),
                        guid: Some(7),
                        children: tops,
                        ..Vdev::default()
                    },
                    ..PoolConfig::default()
                }),
                ..Pool::default()
            }],
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_device_that_left_its_pool_restarts_the_sums_above_it() {
        let pace = Pace::default();
        let a = mirror_of(0.0, &[("sdc", 10), ("sdd", 11)], &[]);
        // While it resilvers the new device sits beside the old under `replacing-1`: nothing
        // left yet, and a device joining adds only its own (new) traffic.
        let resilvering = mirror_of(5.0, &[("sdc", 10), ("sdd", 11), ("sde", 12)], &[]);
        assert_eq!(pace.judge(&a, &resilvering, 5.0, &[]), None);
        let b = mirror_of(10.0, &[("sdc", 10), ("sde", 12)], &[]);
        let br = pace.judge(&a, &b, 10.0, &[]).expect("sdd left");
        assert_eq!(br.kind, "restart");
        assert_eq!(
            br.what,
            "pool rp: device sdd was replaced by sde; the counters of the vdevs above it, its \
             class and the pool are sums over their devices and restarted"
        );
        assert!(pace.judge(&resilvering, &b, 5.0, &[]).is_some());
        // A new device in the old one's bay: same path, another guid.
        let c = mirror_of(20.0, &[("sdc", 13), ("sde", 12)], &[]);
        assert_eq!(
            pace.judge(&b, &c, 10.0, &[]).map(|b| b.what),
            Some(
                "pool rp: device sdc was replaced by a new device at the same path; the \
                 counters of the vdevs above it, its class and the pool are sums over their \
                 devices and restarted"
                    .to_owned()
            )
        );
        // `zpool detach rp sde`: a device left, none came.
        let d = mirror_of(30.0, &[("sdc", 13)], &[]);
        assert!(
            pace.judge(&c, &d, 10.0, &[])
                .is_some_and(|b| b.what.starts_with("pool rp: device sde left; ")),
        );
        // A cache device is not under the root in the kernel: its leaving restarts nothing.
        let with_cache = mirror_of(30.0, &[("sdc", 13), ("sde", 12)], &[("sdf", 14)]);
        let without = mirror_of(40.0, &[("sdc", 13), ("sde", 12)], &[]);
        assert_eq!(pace.judge(&with_cache, &without, 10.0, &[]), None);
    }

    #[test]
    fn a_gap_and_a_clock_step_are_told_apart_by_the_cpu_ticks() {
        // Two CPUs at USER_HZ 100: 200 ticks per second whatever the load.
        let mut pace = Pace::default();
        let (a, b) = (at(0.0, 0), at(5.0, 1_000));
        assert_eq!(
            pace.judge(&a, &b, 5.0, &[]),
            None,
            "nothing to compare with yet"
        );
        pace.keep(&a, &b, 5.0);
        // 150 s later by both clocks: a gap (30 intervals, over 2 minutes).
        let c = at(155.0, 31_000);
        assert_eq!(pace.judge(&b, &c, 150.0, &[]).unwrap().kind, "gap");
        // 50 s: 10 intervals, but a slow reading rather than an absence.
        assert_eq!(pace.judge(&b, &at(55.0, 11_000), 50.0, &[]), None);
        // Three weeks later by the wall clock, 5 s by the ticks: a step.
        let d = at(5.0 + 21.0 * 86_400.0, 2_000);
        let step = pace.judge(&b, &d, 21.0 * 86_400.0, &[]).unwrap();
        assert_eq!(step.kind, "clock-step");
        assert!(step.what.contains("about 5 s passed"), "{}", step.what);
        // 12 s by both: neither; 40 s by the wall clock and 20 s of ticks (a loaded guest
        // losing ticks): neither.
        assert_eq!(pace.judge(&b, &at(17.0, 3_400), 12.0, &[]), None);
        assert_eq!(pace.judge(&b, &at(45.0, 5_000), 40.0, &[]), None);
    }
}
