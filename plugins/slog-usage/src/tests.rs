//! Unit tests on synthetic samples: every threshold edge.

use super::*;
use zpulse_proto::sample::{DiskRates, PoolRates, VdevRates, ZilRates};
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{State, Value};
use zpulse_proto::snapshot::{DatasetKstats, Disk, KstatValue, Memory, PoolConfig, VdevStats};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn leaf(name: &str) -> Vdev {
    Vdev {
        name: name.into(),
        vdev_type: "disk".into(),
        class: Some(VdevClass::Log),
        path: Some(format!("/dev/{name}1")),
        disk: Some(name.into()),
        ..Vdev::default()
    }
}

fn stats(alloc: u64, space: u64) -> Option<VdevStats> {
    Some(VdevStats {
        alloc,
        space,
        ..VdevStats::default()
    })
}

/// A single-device log vdev.
fn single(name: &str, alloc: u64, space: u64) -> Vdev {
    Vdev {
        redundancy: Some(Redundancy::None),
        stats: stats(alloc, space),
        ..leaf(name)
    }
}

fn mirror(name: &str, leaves: &[&str], alloc: u64, space: u64) -> Vdev {
    Vdev {
        name: name.into(),
        vdev_type: "mirror".into(),
        class: Some(VdevClass::Log),
        redundancy: Some(Redundancy::Mirror {
            width: leaves.len() as u32,
        }),
        stats: stats(alloc, space),
        children: leaves.iter().map(|l| leaf(l)).collect(),
        ..Vdev::default()
    }
}

fn normal() -> Vdev {
    Vdev {
        name: "mirror-0".into(),
        vdev_type: "mirror".into(),
        class: Some(VdevClass::Normal),
        redundancy: Some(Redundancy::Mirror { width: 2 }),
        stats: stats(GIB, 100 * GIB),
        ..Vdev::default()
    }
}

/// What one log leaf did in the interval.
#[derive(Clone, Copy)]
struct Load {
    writes_per_s: f64,
    util: f64,
    w_await: f64,
    wait_ns: u64,
}

const IDLE: Load = Load {
    writes_per_s: 0.0,
    util: 0.0,
    w_await: 0.0,
    wait_ns: 0,
};

fn load(writes_per_s: f64, util: f64) -> Load {
    Load {
        writes_per_s,
        util,
        w_await: 0.5,
        wait_ns: 500_000,
    }
}

/// A sample of pool `tank` whose log is `log`, every log leaf doing `load`; dirty_data_max
/// 1 GiB.
fn sample(end: f64, log: Vdev, l: Load) -> Sample {
    let mut s = Sample {
        start: end - 10.0,
        end,
        interval: 10.0,
        zil: Some(ZilRates {
            deltas: [
                (
                    "zil_commit_count".to_string(),
                    (l.writes_per_s * 10.0) as u64,
                ),
                ("zil_itx_count".to_string(), (l.writes_per_s * 10.0) as u64),
                (
                    "zil_itx_copied_bytes".to_string(),
                    (l.writes_per_s * 40960.0) as u64,
                ),
                (
                    "zil_itx_metaslab_slog_bytes".to_string(),
                    (l.writes_per_s * 40960.0) as u64,
                ),
                ("zil_itx_metaslab_normal_bytes".to_string(), 0),
            ]
            .into(),
            ..ZilRates::default()
        }),
        ..Sample::default()
    };
    let top_subject = format!("tank/log/{}", log.name);
    let mut vdevs = vec![VdevRates {
        subject: top_subject.clone(),
        name: log.name.clone(),
        class: Some(VdevClass::Log),
        seconds: 10.0,
        write_ops_per_s: l.writes_per_s * log.leaves().len() as f64,
        write_bytes_per_s: l.writes_per_s * 4096.0,
        total_wait_w: (l.writes_per_s > 0.0).then_some(l.wait_ns),
        ..VdevRates::default()
    }];
    for lf in log.leaves() {
        if !std::ptr::eq(lf, &log) {
            vdevs.push(VdevRates {
                subject: format!("{top_subject}/{}", lf.name),
                name: lf.name.clone(),
                class: Some(VdevClass::Log),
                leaf: true,
                seconds: 10.0,
                write_ops_per_s: l.writes_per_s,
                total_wait_w: (l.writes_per_s > 0.0).then_some(l.wait_ns),
                ..VdevRates::default()
            });
        }
        let Some(disk) = lf.disk.clone() else {
            continue;
        };
        s.disks.push(DiskRates {
            name: disk.clone(),
            rotational: Some(false),
            w_s: l.writes_per_s,
            w_await: (l.writes_per_s > 0.0).then_some(l.w_await),
            util: l.util,
            ..DiskRates::default()
        });
        s.snapshot.disks.push(Disk {
            name: disk,
            rotational: Some(false),
            ..Disk::default()
        });
    }
    s.pools = vec![PoolRates {
        name: "tank".into(),
        vdevs,
        ..PoolRates::default()
    }];
    s.snapshot.pools = vec![Pool {
        name: "tank".into(),
        config: Some(PoolConfig {
            root: Vdev {
                name: "tank".into(),
                vdev_type: "root".into(),
                children: vec![normal(), log],
                ..Vdev::default()
            },
            ..PoolConfig::default()
        }),
        ..Pool::default()
    }];
    s.snapshot
        .tunables
        .0
        .insert("zfs_dirty_data_max".into(), GIB.to_string());
    s
}

/// A mirrored log of 4 GiB: 2 × 1 GiB dirty data fits, not oversized (≤ 4 × 2 GiB).
fn good_log() -> Vdev {
    mirror("mirror-2", &["sdx", "sdy"], 10 * MIB, 4 * GIB)
}

fn check(config: Config) -> SlogUsage {
    SlogUsage::new(config).unwrap()
}

fn feed(c: &mut SlogUsage, loads: &[Load], log: &Vdev) -> Vec<Event> {
    loads
        .iter()
        .enumerate()
        .flat_map(|(i, l)| c.observe(&sample(i as f64 * 10.0, log.clone(), *l)))
        .collect()
}

fn of<'a>(events: &'a [Event], check: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.check == check).collect()
}

fn num(e: &Event, key: &str) -> f64 {
    e.data
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {:?}", e.data))
}

fn verdict(events: &[Event]) -> Option<(String, Severity)> {
    of(events, "slog-usage")
        .last()
        .map(|e| (e.data["verdict"].as_str().unwrap().to_string(), e.severity))
}

#[test]
fn no_verdict_before_min_samples() {
    let mut c = check(Config::default());
    let events = feed(&mut c, &[load(100.0, 30.0); 2], &good_log());
    assert!(of(&events, "slog-usage").is_empty(), "{events:?}");
    let events = c.observe(&sample(20.0, good_log(), load(100.0, 30.0)));
    assert_eq!(verdict(&events), Some(("useful".into(), Severity::Info)));
}

#[test]
fn idle_below_0_1_writes_per_second() {
    let run = |w: f64| {
        let mut c = check(Config::default());
        verdict(&feed(&mut c, &[load(w, 1.0); 3], &good_log()))
    };
    assert_eq!(run(0.0), Some(("idle".into(), Severity::Info)));
    // Each leaf of the mirror takes `w` writes/s; the log vdev took 2 × w.
    assert_eq!(run(0.049), Some(("idle".into(), Severity::Info)));
    assert_eq!(run(0.05), Some(("useful".into(), Severity::Info)));
    let mut c = check(Config::default());
    let events = feed(&mut c, &[IDLE; 3], &good_log());
    let e = of(&events, "slog-usage")[0];
    assert!(
        e.summary
            .contains("no sync writes use it, so the SLOG brings nothing"),
        "{}",
        e.summary
    );
    assert!(e.advice.as_deref().unwrap().contains("zpool remove tank"));
}

#[test]
fn saturated_at_90_percent_busy_or_10_ms_wait_while_60_percent_busy() {
    let busy = |u: f64| {
        let mut c = check(Config::default());
        verdict(&feed(&mut c, &[load(500.0, u); 3], &good_log()))
    };
    assert_eq!(busy(89.9), Some(("useful".into(), Severity::Info)));
    assert_eq!(busy(90.0), Some(("saturated".into(), Severity::Warning)));
    let wait = |ms: f64, util: f64| {
        let mut c = check(Config::default());
        let l = Load {
            wait_ns: (ms * 1e6) as u64,
            ..load(500.0, util)
        };
        verdict(&feed(&mut c, &[l; 3], &good_log()))
    };
    assert_eq!(wait(9.9, 60.0), Some(("useful".into(), Severity::Info)));
    assert_eq!(
        wait(10.0, 60.0),
        Some(("saturated".into(), Severity::Warning))
    );
    // Slow but mostly idle (the seed's SLOG at 42% busy): not saturated.
    assert_eq!(wait(10.0, 59.9), Some(("useful".into(), Severity::Info)));
    // The mean busy is weighted by time, and a quiet interval lowers it.
    let mut c = check(Config::default());
    let events = feed(
        &mut c,
        &[load(500.0, 100.0), load(500.0, 100.0), load(500.0, 70.0)],
        &good_log(),
    );
    let e = of(&events, "slog-usage")[0];
    assert_eq!(num(e, "busiest_util_pct"), 90.0);
    assert_eq!(num(e, "busiest_util_peak_pct"), 100.0);
    assert!(e.advice.as_deref().unwrap().contains("bottleneck"));
}

/// `sample` with device write latencies as ZFS times them (`disk_wait`): `log_ms` on every
/// log vdev and leaf, `data_ms` on the pool's data vdev `mirror-0`, which took 50 writes/s.
fn timed(end: f64, log: Vdev, l: Load, log_ms: f64, data_ms: f64) -> Sample {
    let mut s = sample(end, log, l);
    let rates = &mut s.pools[0].vdevs;
    for v in rates.iter_mut() {
        v.disk_wait_w = Some((log_ms * 1e6) as u64);
    }
    rates.push(VdevRates {
        subject: "tank/normal/mirror-0".into(),
        name: "mirror-0".into(),
        class: Some(VdevClass::Normal),
        seconds: 10.0,
        write_ops_per_s: 50.0,
        disk_wait_w: Some((data_ms * 1e6) as u64),
        ..VdevRates::default()
    });
    s
}

/// Each sample judged alone (a window of one sample), findings cleared at once: what the
/// verdict does from one sample to the next is the levels' doing only.
fn per_sample() -> SlogUsage {
    check(Config {
        min_samples: 1,
        window_samples: 1,
        min_hold: Duration::ZERO,
        ..Config::default()
    })
}

#[test]
fn a_log_no_faster_than_the_pools_own_vdevs_is_slower_than_the_pool() {
    let run = |log_ms: f64, data_ms: f64| {
        let mut c = check(Config::default());
        let events: Vec<Event> = (0..3)
            .flat_map(|i| {
                let s = timed(
                    i as f64 * 10.0,
                    good_log(),
                    load(100.0, 30.0),
                    log_ms,
                    data_ms,
                );
                c.observe(&s)
            })
            .collect();
        of(&events, "slog-usage").last().map(|e| (*e).clone())
    };
    // The case: an HDD log at 12 ms in front of an SSD pool at 1.5 ms.
    let e = run(12.0, 1.5).unwrap();
    assert_eq!(
        (e.data["verdict"].as_str(), e.severity),
        (Some("slower than the pool"), Severity::Warning)
    );
    assert_eq!(num(&e, "log_device_write_ms"), 12.0);
    assert_eq!(num(&e, "data_device_write_ms"), 1.5);
    assert_eq!(num(&e, "log_to_data_write_ratio"), 8.0);
    let advice = e.advice.as_deref().unwrap();
    assert!(
        advice.starts_with("Remove the log (zpool remove tank mirror-2)")
            && advice.contains("1.50 ms against the log's 12.00 ms"),
        "{advice}"
    );
    assert!(
        e.summary.contains(
            "a write takes 12.00 ms on the log's device (sdy) against 1.50 ms on the pool's \
             own vdevs (mirror-0)"
        ),
        "{}",
        e.summary
    );
    // The raise level is a ratio of 1: as slow as the pool is already too slow.
    let verdict_of = |log_ms, data_ms| run(log_ms, data_ms).map(|e| e.data["verdict"].clone());
    assert_eq!(
        verdict_of(2.0, 2.0),
        Some(Value::Str("slower than the pool".into()))
    );
    assert_eq!(verdict_of(1.9, 2.0), Some(Value::Str("useful".into())));
    // The seed's SSD log at 0.455 ms before HDDs at 46 ms: useful.
    assert_eq!(verdict_of(0.455, 46.0), Some(Value::Str("useful".into())));
    // No data-vdev latency (no writes there): no comparison, no such verdict.
    let mut c = check(Config::default());
    let events: Vec<Event> = (0..3)
        .flat_map(|i| {
            let mut s = timed(i as f64 * 10.0, good_log(), load(100.0, 30.0), 12.0, 1.5);
            s.pools[0].vdevs.last_mut().unwrap().disk_wait_w = None;
            c.observe(&s)
        })
        .collect();
    let e = of(&events, "slog-usage")[0];
    assert_eq!(e.data["verdict"].as_str(), Some("useful"));
    assert!(!e.data.contains_key("log_to_data_write_ratio"));
}

#[test]
fn the_slower_verdict_holds_between_its_clear_and_raise_levels() {
    let mut c = per_sample();
    // Ratios 1.2 (raise), 0.9 (between 0.8 and 1: stays), 0.8 (clear).
    let ratios = [1.2, 0.9, 0.8];
    let verdicts: Vec<Option<(String, Severity)>> = ratios
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let s = timed(i as f64 * 10.0, good_log(), load(100.0, 30.0), r * 2.0, 2.0);
            verdict(&c.observe(&s))
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            Some(("slower than the pool".into(), Severity::Warning)),
            // Still raised as slower: the ratio moved by 25%, under the verdict's 50%
            // material change, so nothing is sent.
            None,
            Some(("useful".into(), Severity::Info)),
        ]
    );
    assert_eq!(
        c.verdict.raised_data("tank/log").unwrap()["verdict"].as_str(),
        Some("useful")
    );
    // Fresh, the same 0.9 is no reason to raise.
    let mut c = per_sample();
    let s = timed(0.0, good_log(), load(100.0, 30.0), 1.8, 2.0);
    assert_eq!(
        verdict(&c.observe(&s)),
        Some(("useful".into(), Severity::Info))
    );
}

#[test]
fn saturation_holds_between_its_clear_and_raise_levels() {
    // Busy 95% (raise at 90), 85% (between 80 and 90: stays saturated), 80% (clear).
    let mut c = per_sample();
    let seen: Vec<Option<(String, Severity)>> = [95.0, 85.0, 80.0]
        .iter()
        .enumerate()
        .map(|(i, u)| verdict(&c.observe(&sample(i as f64 * 10.0, good_log(), load(500.0, *u)))))
        .collect();
    assert_eq!(
        seen,
        [
            Some(("saturated".into(), Severity::Warning)),
            None,
            Some(("useful".into(), Severity::Info)),
        ]
    );
    // The wait criterion: 10 ms while 60% busy raises; 9 ms (between 8 and 10) and 55% busy
    // (between 50 and 60) keep it; 8 ms clears it.
    let step = |c: &mut SlogUsage, i: usize, ms: f64, util: f64| {
        let l = Load {
            wait_ns: (ms * 1e6) as u64,
            ..load(500.0, util)
        };
        verdict(&c.observe(&sample(i as f64 * 10.0, good_log(), l)))
    };
    let mut c = per_sample();
    assert_eq!(
        step(&mut c, 0, 10.0, 60.0),
        Some(("saturated".into(), Severity::Warning))
    );
    assert_eq!(step(&mut c, 1, 9.0, 55.0), None);
    assert_eq!(
        c.verdict.raised_data("tank/log").unwrap()["verdict"].as_str(),
        Some("saturated")
    );
    assert_eq!(
        step(&mut c, 2, 8.0, 55.0),
        Some(("useful".into(), Severity::Info))
    );
    // Fresh, 85% busy is useful.
    let mut c = per_sample();
    assert_eq!(
        verdict(&c.observe(&sample(0.0, good_log(), load(500.0, 85.0)))),
        Some(("useful".into(), Severity::Info))
    );
}

#[test]
fn clear_levels_above_their_raise_levels_are_refused() {
    for bad in [
        Config {
            saturated_busy_clear_pct: 95.0,
            ..Config::default()
        },
        Config {
            slower_clear_ratio: 1.5,
            ..Config::default()
        },
    ] {
        let err = SlogUsage::new(bad).err().unwrap();
        assert!(
            err.contains("_clear_") && err.contains("must be at most"),
            "{err}"
        );
    }
}

#[test]
fn the_verdict_reports_the_sync_write_load_and_the_slog_share() {
    let mut c = check(Config::default());
    let mut samples: Vec<Sample> = (0..3)
        .map(|i| sample(i as f64 * 10.0, good_log(), load(50.0, 20.0)))
        .collect();
    // A quarter of the log-block bytes went to the main pool in one interval.
    samples[2]
        .zil
        .as_mut()
        .unwrap()
        .deltas
        .insert("zil_itx_metaslab_normal_bytes".into(), 3 * 50 * 40960 / 2);
    let events: Vec<Event> = samples.iter().flat_map(|s| c.observe(s)).collect();
    let e = of(&events, "slog-usage")[0];
    assert_eq!(num(e, "zil_commits_per_s"), 50.0);
    assert_eq!(num(e, "log_writes_per_s"), 100.0);
    assert_eq!(num(e, "slog_share_pct"), 66.7);
    assert_eq!(e.data["zil_scope"], Value::Str("host".into()));
    assert!(
        e.summary
            .contains("67% of the log-block bytes going to the SLOG"),
        "{}",
        e.summary
    );
    assert!(e.advice.as_deref().unwrap().contains("logbias=throughput"));
}

#[test]
fn sizing_edges() {
    // dirty_data_max 1 GiB, 2 txgs: holds 2 GiB. Oversized above 4 × 2 GiB.
    let size = |space: u64, alloc: u64, n: usize| -> Option<(String, Severity)> {
        let mut c = check(Config::default());
        let events = feed(
            &mut c,
            &vec![IDLE; n],
            &mirror("mirror-2", &["a", "b"], alloc, space),
        );
        of(&events, "slog-usage.size")
            .last()
            .map(|e| (e.data["sizing"].as_str().unwrap().to_string(), e.severity))
    };
    assert_eq!(size(8 * GIB, 0, 1), None);
    assert_eq!(
        size(8 * GIB + 1, 0, 1),
        Some(("oversized".into(), Severity::Info))
    );
    assert_eq!(size(GIB, 0, 1), None);
    assert_eq!(
        size(GIB - 1, 0, 1),
        Some(("undersized".into(), Severity::Warning))
    );
    // Peak use of 80% needs the window (min_samples).
    let at = (4 * GIB * 80).div_ceil(100);
    assert_eq!(size(GIB * 4, at, 2), None);
    assert_eq!(
        size(GIB * 4, at, 3),
        Some(("undersized".into(), Severity::Warning))
    );
    assert_eq!(size(GIB * 4, at - 1, 3), None);
}

#[test]
fn dirty_data_max_falls_back_to_ten_percent_of_memory_capped_at_4_gib() {
    let mut s = Sample::default();
    assert_eq!(dirty_data_max(&s.snapshot), None);
    s.snapshot.memory = Some(Memory {
        total: 16 * GIB,
        ..Memory::default()
    });
    assert_eq!(dirty_data_max(&s.snapshot).unwrap().0, 16 * GIB / 100 * 10);
    s.snapshot.memory = Some(Memory {
        total: 256 * GIB,
        ..Memory::default()
    });
    assert_eq!(dirty_data_max(&s.snapshot).unwrap().0, 4 * GIB);
    s.snapshot
        .tunables
        .0
        .insert("zfs_dirty_data_max".into(), "12345".into());
    assert_eq!(
        dirty_data_max(&s.snapshot),
        Some((12345, "zfs_dirty_data_max"))
    );
}

#[test]
fn an_unmirrored_log_warns_while_it_carries_sync_writes() {
    let log = single("sde", 0, 4 * GIB);
    let mut c = check(Config::default());
    let events = feed(&mut c, &[IDLE], &log);
    let r = of(&events, "slog-usage.redundancy");
    assert_eq!(
        (r[0].subject.as_str(), r[0].state, r[0].severity),
        ("tank/log/sde", Some(State::Raised), Severity::Info)
    );
    // Sync writes arrive: the window's mean passes 0.1/s → warning.
    let events = c.observe(&sample(10.0, log.clone(), load(0.2, 1.0)));
    let r = of(&events, "slog-usage.redundancy");
    assert_eq!(
        (r[0].state, r[0].severity),
        (Some(State::Updated), Severity::Warning)
    );
    assert!(r[0].summary.contains("the sync writes of the last seconds"));
    assert!(
        r[0].advice
            .as_deref()
            .unwrap()
            .contains("zpool attach tank sde NEWDEV")
    );
    // A mirror: nothing.
    let mut c = check(Config::default());
    let events = feed(&mut c, &[load(100.0, 10.0); 3], &good_log());
    assert!(of(&events, "slog-usage.redundancy").is_empty());
}

#[test]
fn a_log_on_a_loop_device_or_file_has_no_power_loss_guarantee() {
    let loop_log = Vdev {
        path: Some("/dev/loop0".into()),
        disk: Some("loop0".into()),
        ..single("loop0", 0, 2 * GIB)
    };
    let mut c = check(Config::default());
    let events = feed(&mut c, &[IDLE], &loop_log);
    let d = of(&events, "slog-usage.device");
    assert_eq!(
        (d[0].subject.as_str(), d[0].severity),
        ("tank/log/loop0", Severity::Warning)
    );
    assert!(
        d[0].summary
            .starts_with("tank/log/loop0 is a loop device (/dev/loop0), idle now")
    );
    // Busy with sync writes: critical.
    let events = c.observe(&sample(10.0, loop_log, load(50.0, 10.0)));
    let d = of(&events, "slog-usage.device");
    assert_eq!(
        (d[0].state, d[0].severity),
        (Some(State::Updated), Severity::Critical)
    );
    // A file vdev inside a mirror: the leaf is the subject.
    let file = Vdev {
        vdev_type: "file".into(),
        path: Some("/var/tmp/log.img".into()),
        disk: None,
        ..leaf("/var/tmp/log.img")
    };
    let mut m = mirror("mirror-2", &["sdx"], 0, 4 * GIB);
    m.children.push(file);
    let mut c = check(Config::default());
    let events = c.observe(&sample(0.0, m, IDLE));
    let d = of(&events, "slog-usage.device");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].subject, "tank/log/mirror-2//var/tmp/log.img");
    assert!(d[0].summary.contains("a file (/var/tmp/log.img)"));
}

#[test]
fn loop_file_and_memory_disks_are_recognised_and_real_disks_are_not() {
    let with = |path: &str, disk: Option<&str>, t: &str| Vdev {
        path: Some(path.into()),
        disk: disk.map(String::from),
        vdev_type: t.into(),
        ..Vdev::default()
    };
    assert!(not_power_safe(&with("/dev/loop3", Some("loop3"), "disk")).is_some());
    assert!(not_power_safe(&with("/dev/md0", None, "disk")).is_some());
    assert!(not_power_safe(&with("/tmp/f", None, "file")).is_some());
    assert!(not_power_safe(&with("/dev/sde1", Some("sde"), "disk")).is_none());
    assert!(not_power_safe(&with("/dev/mda0", None, "disk")).is_none());
    assert!(not_power_safe(&with("/dev/gpt/slog0", Some("ada2"), "disk")).is_none());
}

#[test]
fn a_log_on_a_spinning_disk_is_noted() {
    let mut s = sample(0.0, good_log(), IDLE);
    for d in &mut s.snapshot.disks {
        d.rotational = Some(true);
    }
    let mut c = check(Config::default());
    let events = c.observe(&s);
    let d = of(&events, "slog-usage.device");
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|e| e.severity == Severity::Info));
    assert_eq!(d[0].subject, "tank/log/mirror-2/sdx");
}

/// Per-dataset ZIL counters (OpenZFS 2.2+) make the figures the pool's own; their deltas are
/// the sample's (`Sample::between` on the absolute counters), not the check's own.
#[test]
fn dataset_zil_counters_make_the_figures_the_pools_own() {
    let mut c = check(Config::default());
    let mut events = Vec::new();
    let datasets = |i: u64| {
        let mut k = zpulse_proto::snapshot::Kstat::default();
        for (n, v) in [("reads", 0), ("writes", 0), ("nread", 0), ("nwritten", 0)] {
            k.insert(n, KstatValue::Unsigned(v));
        }
        // 30 commits/s in this pool, against 100/s host-wide.
        k.insert("zil_commit_count", KstatValue::Unsigned(300 * i));
        k.insert("zil_itx_count", KstatValue::Unsigned(300 * i));
        k.insert(
            "zil_itx_metaslab_slog_bytes",
            KstatValue::Unsigned(1000 * i),
        );
        k.insert("zil_itx_metaslab_normal_bytes", KstatValue::Unsigned(0));
        vec![DatasetKstats {
            objset: "0x36".into(),
            name: Some("tank/db".into()),
            counters: k,
        }]
    };
    let mut prev: Option<Sample> = None;
    for i in 0..4u64 {
        let mut s = sample(i as f64 * 10.0, good_log(), load(100.0, 20.0));
        s.snapshot.taken_at = s.end;
        s.snapshot.pools[0].datasets = datasets(i);
        if let Some(p) = &prev {
            let between = Sample::between(&p.snapshot, &s.snapshot).unwrap();
            s.pools[0].datasets = between.pools[0].datasets.clone();
        }
        events.extend(c.observe(&s));
        prev = Some(s);
    }
    let e = of(&events, "slog-usage").last().copied().unwrap();
    assert_eq!(e.data["zil_scope"], Value::Str("pool".into()));
    assert_eq!(num(e, "zil_commits_per_s"), 30.0);
    assert_eq!(num(e, "slog_share_pct"), 100.0);
}

#[test]
fn the_plugin_runs_through_the_abi_and_refuses_bad_config() {
    let host = TestHost::new();
    let samples: Vec<Sample> = (0..3)
        .map(|i| sample(i as f64 * 10.0, good_log(), load(500.0, 95.0)))
        .collect();
    let events = host.run::<SlogUsage>(&[], &samples).unwrap();
    assert!(host.rejected().is_empty());
    assert_eq!(
        verdict(&events),
        Some(("saturated".into(), Severity::Warning))
    );
    // The vdev latencies reach the check through the ABI: a log at 12 ms before a pool at
    // 1.5 ms is slower than the pool, saturated or not.
    let slow: Vec<Sample> = (0..3)
        .map(|i| timed(i as f64 * 10.0, good_log(), load(500.0, 95.0), 12.0, 1.5))
        .collect();
    let events = host.run::<SlogUsage>(&[], &slow).unwrap();
    assert_eq!(
        verdict(&events),
        Some(("slower than the pool".into(), Severity::Warning))
    );
    let cfg = |k: &str, v: Value| sdk::config::encode(&BTreeMap::from([(k.to_string(), v)]));
    let err = host
        .run::<SlogUsage>(&cfg("saturated_busy", Value::UInt(1)), &[])
        .unwrap_err();
    assert!(err.contains("unknown field `saturated_busy`"), "{err}");
    let err = host
        .run::<SlogUsage>(&cfg("full_pct", Value::UInt(120)), &[])
        .unwrap_err();
    assert!(err.contains("full_pct: must be a percentage"), "{err}");
    let err = host
        .run::<SlogUsage>(&cfg("oversize_factor", Value::Float(0.5)), &[])
        .unwrap_err();
    assert!(err.contains("oversize_factor"), "{err}");
}

#[test]
fn a_pool_without_a_log_and_an_exported_pool() {
    let mut c = check(Config::default());
    let mut s = sample(0.0, good_log(), IDLE);
    s.snapshot.pools[0]
        .config
        .as_mut()
        .unwrap()
        .root
        .children
        .pop();
    assert!(c.observe(&s).is_empty());
    // Raised, then the pool goes: cleared after min_hold.
    let mut c = check(Config::default());
    let raised = c.observe(&sample(0.0, single("sde", 0, GIB / 2), IDLE));
    assert!(!raised.is_empty());
    let mut gone = sample(400.0, good_log(), IDLE);
    gone.snapshot.pools.clear();
    let cleared = c.observe(&gone);
    assert_eq!(cleared.len(), raised.len());
    assert!(cleared.iter().all(|e| e.state == Some(State::Cleared)));
}
