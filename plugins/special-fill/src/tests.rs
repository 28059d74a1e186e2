//! Unit tests on synthetic samples: every threshold edge.

use super::*;
use zpulse_proto::sample::{ArcRates, PoolRates, VdevRates};
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{State, Value};
use zpulse_proto::snapshot::{PoolConfig, VdevStats};

const GIB: u64 = 1 << 30;

fn leaf(name: &str, class: VdevClass) -> Vdev {
    Vdev {
        name: name.into(),
        vdev_type: "disk".into(),
        class: Some(class),
        disk: Some(name.into()),
        ..Vdev::default()
    }
}

fn top(name: &str, class: VdevClass, leaves: &[&str], alloc: u64, space: u64) -> Vdev {
    let stats = Some(VdevStats {
        alloc,
        space,
        ..VdevStats::default()
    });
    if leaves.len() == 1 && leaves[0] == name {
        return Vdev {
            redundancy: Some(Redundancy::None),
            stats,
            ..leaf(name, class)
        };
    }
    Vdev {
        name: name.into(),
        vdev_type: "mirror".into(),
        class: Some(class),
        redundancy: Some(Redundancy::Mirror {
            width: leaves.len() as u32,
        }),
        stats,
        children: leaves.iter().map(|l| leaf(l, class)).collect(),
        ..Vdev::default()
    }
}

fn raidz(name: &str, parity: u32, leaves: &[&str]) -> Vdev {
    Vdev {
        vdev_type: "raidz".into(),
        redundancy: Some(Redundancy::Parity { parity }),
        ..top(name, VdevClass::Normal, leaves, 10 * GIB, 100 * GIB)
    }
}

fn pool(name: &str, tops: Vec<Vdev>) -> Pool {
    Pool {
        name: name.into(),
        config: Some(PoolConfig {
            health: "ONLINE".into(),
            root: Vdev {
                name: name.into(),
                vdev_type: "root".into(),
                children: tops,
                ..Vdev::default()
            },
            ..PoolConfig::default()
        }),
        ..Pool::default()
    }
}

/// tank: HDD mirror + a special mirror of 100 GiB with `special_alloc` used.
fn tank(special_alloc: u64) -> Pool {
    pool(
        "tank",
        vec![
            top(
                "mirror-0",
                VdevClass::Normal,
                &["sda", "sdb"],
                500 * GIB,
                1000 * GIB,
            ),
            top(
                "mirror-1",
                VdevClass::Special,
                &["sdc", "sdd"],
                special_alloc,
                100 * GIB,
            ),
        ],
    )
}

fn sample(end: f64, pools: Vec<Pool>) -> Sample {
    let mut s = Sample {
        start: end - 10.0,
        end,
        interval: 10.0,
        ..Sample::default()
    };
    s.snapshot.pools = pools;
    s
}

fn with_reserve(mut s: Sample, pct: u64) -> Sample {
    s.snapshot.tunables.0.insert(
        "zfs_special_class_metadata_reserve_pct".into(),
        pct.to_string(),
    );
    s
}

fn check(config: Config) -> SpecialFill {
    SpecialFill::new(config).unwrap()
}

/// (check, subject, state, severity) of each event.
fn brief(events: &[Event]) -> Vec<(String, String, State, Severity)> {
    events
        .iter()
        .map(|e| {
            (
                e.check.clone(),
                e.subject.clone(),
                e.state.unwrap(),
                e.severity,
            )
        })
        .collect()
}

fn num(e: &Event, key: &str) -> f64 {
    e.data
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {:?}", e.data))
}

/// Used % → the fill verdict, with the default reserve of 25%.
fn verdict_at(pct: f64) -> Verdict {
    let c = check(Config::default());
    let alloc = (pct / 100.0 * (100 * GIB) as f64) as u64;
    let mut c2 = c;
    let fill = c2
        .fill(0.0, &tank(alloc), VdevClass::Special, DEFAULT_RESERVE_PCT)
        .unwrap();
    c2.fill_verdict(&fill)
}

#[test]
fn fill_levels_warn_at_the_reserve_critical_at_90_clear_5_points_below() {
    use Severity::*;
    assert_eq!(verdict_at(75.0), Verdict::Holds(Warning));
    assert_eq!(verdict_at(74.9), Verdict::Borderline);
    assert_eq!(verdict_at(70.1), Verdict::Borderline);
    assert_eq!(verdict_at(70.0), Verdict::Clear);
    assert_eq!(verdict_at(89.9), Verdict::Holds(Warning));
    assert_eq!(verdict_at(90.0), Verdict::Holds(Critical));
    assert_eq!(verdict_at(100.0), Verdict::Holds(Critical));
}

#[test]
fn the_reserve_tunable_moves_the_warning_level() {
    // A 40% reserve: small blocks stop at 60% used.
    let mut c = check(Config::default());
    let events = c.observe(&with_reserve(sample(0.0, vec![tank(60 * GIB)]), 40));
    assert_eq!(
        brief(&events),
        [(
            "special-fill".into(),
            "tank/special".into(),
            State::Raised,
            Severity::Warning
        )]
    );
    let e = &events[0];
    assert_eq!(num(e, "reserve_pct"), 40.0);
    assert_eq!(e.data["below_reserve"], Value::Bool(false));
    assert!(e.summary.contains("60% full"), "{}", e.summary);
    let mut c = check(Config::default());
    assert!(
        c.observe(&with_reserve(sample(0.0, vec![tank(59 * GIB)]), 40))
            .is_empty()
    );
    // An explicit warn_used_pct wins over the reserve.
    let mut c = check(Config {
        warn_used_pct: Some(80.0),
        ..Config::default()
    });
    assert!(c.observe(&sample(0.0, vec![tank(79 * GIB)])).is_empty());
    assert_eq!(c.observe(&sample(10.0, vec![tank(80 * GIB)])).len(), 1);
}

#[test]
fn below_the_reserve_the_summary_says_small_blocks_go_to_the_normal_class() {
    let mut c = check(Config::default());
    let events = c.observe(&sample(0.0, vec![tank(80 * GIB)]));
    let e = &events[0];
    assert_eq!(e.severity, Severity::Warning);
    assert_eq!(e.data["below_reserve"], Value::Bool(true));
    assert!(
        e.summary.starts_with(
            "tank/special (mirror-1: sdc, sdd) is 80% full: 80 GiB of 100 GiB, 20 GiB free"
        ),
        "{}",
        e.summary
    );
    assert!(
        e.summary
            .contains("small blocks now go to the normal class")
    );
    assert!(
        e.advice
            .as_deref()
            .unwrap()
            .contains("zpool add tank special mirror")
    );
    assert_eq!(num(e, "free_bytes"), (20 * GIB) as f64);
}

/// Feeds the special class growing by `per_sample` bytes every 10 s from `start` bytes.
fn grow(c: &mut SpecialFill, start: u64, per_sample: u64, n: usize) -> Vec<Event> {
    let mut all = Vec::new();
    for i in 0..n {
        let alloc = start + per_sample * i as u64;
        all.extend(c.observe(&sample(i as f64 * 10.0, vec![tank(alloc)])));
    }
    all
}

#[test]
fn growth_needs_min_samples_and_projects_the_reserve_before_it() {
    // 1 GiB per 10 s from 10 GiB: the reserve (75 GiB) is 630 s away at the third sample.
    let mut c = check(Config {
        max_extrapolation: 1e9,
        ..Config::default()
    });
    let events = grow(&mut c, 10 * GIB, GIB, 2);
    assert!(events.is_empty(), "two samples: no growth figure yet");
    let events = c.observe(&sample(20.0, vec![tank(12 * GIB)]));
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.severity, Severity::Warning);
    let g = (GIB as f64) / 10.0 * DAY;
    assert!((num(e, "growth_bytes_per_day") - g).abs() / g < 0.01);
    assert!((num(e, "days_to_reserve") - 630.0 / DAY).abs() < 1e-4);
    // Before the reserve the growth is mostly small blocks, which stop there: no end date.
    assert!(!e.data.contains_key("days_to_full"), "{:?}", e.data);
    assert!(
        e.summary
            .contains("the 25% reserve is reached in ~10 minutes"),
        "{}",
        e.summary
    );
}

#[test]
fn past_the_reserve_the_end_is_projected_from_the_samples_since_then() {
    let mut c = check(Config {
        max_extrapolation: 1e9,
        ..Config::default()
    });
    // Fast growth to just past the reserve, then 2 samples past it: no end date yet (the
    // lab's fill scenario: small blocks stopped at the reserve).
    for (i, gib) in [50, 60, 70, 76, 77].iter().enumerate() {
        for e in c.observe(&sample(i as f64 * 10.0, vec![tank(gib * GIB)])) {
            assert_eq!(e.severity, Severity::Warning, "{e:?}");
            assert!(!e.data.contains_key("days_to_full"), "{e:?}");
        }
    }
    assert_eq!(c.fill.raised("tank/special"), Some(Severity::Warning));
    // A third sample past the reserve: 1 GiB / 10 s since 76 GiB → full (100 GiB) in 220 s.
    let events = c.observe(&sample(50.0, vec![tank(78 * GIB)]));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].state, Some(State::Updated));
    assert_eq!(events[0].severity, Severity::Critical);
    // Fitted on 76, 77, 78 GiB only: 1 GiB / 10 s.
    assert!((num(&events[0], "days_to_full") - 220.0 / DAY).abs() < 1e-4);
    assert!(!events[0].data.contains_key("days_to_reserve"));
    assert!(
        events[0].summary.contains("below the 25% reserve")
            && events[0]
                .summary
                .contains("full in ~4 minutes, then metadata spills"),
        "{}",
        events[0].summary
    );
}

#[test]
fn projections_are_not_trusted_beyond_max_extrapolation() {
    // 1 MiB per 10 s at 10 GiB: the reserve is ~7.7 days away, but the window spans 20 s.
    let mut c = check(Config::default());
    let events = grow(&mut c, 10 * GIB, 1 << 20, 3);
    assert!(events.is_empty(), "{events:?}");
    // With trust, the same figures warn (reserve within 30 days).
    let mut c = check(Config {
        max_extrapolation: 1e9,
        ..Config::default()
    });
    let events = grow(&mut c, 10 * GIB, 1 << 20, 3);
    assert_eq!(
        brief(&events),
        [(
            "special-fill".into(),
            "tank/special".into(),
            State::Raised,
            Severity::Warning
        )]
    );
    let d_reserve = num(&events[0], "days_to_reserve");
    let expected =
        (75.0 * GIB as f64 - (10 * GIB + 2 * (1 << 20)) as f64) / (1u64 << 20) as f64 * 10.0 / DAY;
    assert!(
        (d_reserve - expected).abs() / expected < 0.01,
        "{d_reserve} vs {expected}"
    );
    // 20 × the span is the default limit: a projection of 400 s from 20 s is trusted, 401 s
    // is not.
    let at = |eta_s: f64| {
        let mut c = check(Config::default());
        let per_sample = (65.0 * GIB as f64 / eta_s * 10.0).round() as u64;
        grow(&mut c, 10 * GIB - 2 * per_sample, per_sample, 3).len()
    };
    assert_eq!(at(399.0), 1);
    assert_eq!(at(401.0), 0);
}

/// A pool with a dedup mirror of 100 GiB.
fn dedup_pool(alloc: u64) -> Pool {
    pool(
        "dd",
        vec![
            top(
                "mirror-0",
                VdevClass::Normal,
                &["sda", "sdb"],
                500 * GIB,
                1000 * GIB,
            ),
            top(
                "mirror-1",
                VdevClass::Dedup,
                &["sdc", "sdd"],
                alloc,
                100 * GIB,
            ),
        ],
    )
}

#[test]
fn warn_and_critical_days_edges() {
    let cfg = Config {
        max_extrapolation: 1e9,
        ..Config::default()
    };
    // The special class past its reserve (from 80 GiB, 3 samples): critical when the end is
    // at most 7 days away; otherwise the fill level's warning.
    let special = |days_to_full: f64| {
        let mut c = check(cfg.clone());
        let per_sample = (20.0 * GIB as f64 / (days_to_full * DAY) * 10.0).round() as u64;
        let start = 80 * GIB - 2 * per_sample;
        grow(&mut c, start, per_sample, 3)
            .last()
            .map(|e| e.severity)
    };
    assert_eq!(special(6.99), Some(Severity::Critical));
    assert_eq!(special(7.01), Some(Severity::Warning));
    // The reserve (65 GiB away from 10 GiB) at 30 days: warning; at 31: nothing.
    let reserve = |days_to_reserve: f64| {
        let mut c = check(cfg.clone());
        let per_sample = (65.0 * GIB as f64 / (days_to_reserve * DAY) * 10.0).round() as u64;
        let start = 10 * GIB - 2 * per_sample;
        grow(&mut c, start, per_sample, 3)
            .last()
            .map(|e| e.severity)
    };
    assert_eq!(reserve(29.9), Some(Severity::Warning));
    assert_eq!(reserve(31.0), None);
    // The dedup class has no reserve: its end is projected from the whole window.
    let dedup = |days_to_full: f64| {
        let mut c = check(cfg.clone());
        let per_sample = (90.0 * GIB as f64 / (days_to_full * DAY) * 10.0).round() as u64;
        let start = 10 * GIB - 2 * per_sample;
        let mut last = Vec::new();
        for i in 0..3u64 {
            last = c.observe(&sample(
                i as f64 * 10.0,
                vec![dedup_pool(start + per_sample * i)],
            ));
        }
        last.first().map(|e| (e.subject.clone(), e.severity))
    };
    assert_eq!(dedup(6.99), Some(("dd/dedup".into(), Severity::Critical)));
    assert_eq!(dedup(7.01), Some(("dd/dedup".into(), Severity::Warning)));
    assert_eq!(dedup(29.9), Some(("dd/dedup".into(), Severity::Warning)));
    assert_eq!(dedup(30.1), None);
}

#[test]
fn the_dedup_class_says_nothing_about_a_reserve() {
    let mut c = check(Config::default());
    let events = c.observe(&sample(0.0, vec![dedup_pool(80 * GIB)]));
    assert_eq!(events.len(), 1);
    assert!(!events[0].data.contains_key("below_reserve"));
    assert!(
        !events[0].summary.contains("reserve"),
        "{}",
        events[0].summary
    );
    assert!(
        !events[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("special_small_blocks")
    );
}

#[test]
fn a_shrinking_class_projects_nothing() {
    let mut c = check(Config {
        max_extrapolation: 1e9,
        ..Config::default()
    });
    let events: Vec<Event> = (0..4)
        .flat_map(|i| c.observe(&sample(i as f64 * 10.0, vec![tank((50 - i) * GIB)])))
        .collect();
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn a_single_disk_special_beside_a_mirror_is_critical_at_once() {
    let p = pool(
        "deg",
        vec![
            top(
                "mirror-0",
                VdevClass::Normal,
                &["sda", "sdb"],
                GIB,
                100 * GIB,
            ),
            top("sdc", VdevClass::Special, &["sdc"], GIB / 100, 4 * GIB),
        ],
    );
    let mut c = check(Config::default());
    let events = c.observe(&sample(0.0, vec![p.clone()]));
    assert_eq!(
        brief(&events),
        [(
            "special-fill.redundancy".into(),
            "deg/special".into(),
            State::Raised,
            Severity::Critical
        )]
    );
    let e = &events[0];
    assert_eq!(
        e.summary,
        "deg/special (sdc: a single device, survives no failure) is less redundant than the \
         normal class (mirror-0: a 2-way mirror, survives 1 failure): losing it loses the \
         whole pool"
    );
    assert!(
        e.advice
            .as_deref()
            .unwrap()
            .contains("zpool attach deg sdc NEWDEV")
    );
    assert_eq!(num(e, "tolerated_failures"), 0.0);
    assert_eq!(num(e, "normal_tolerated_failures"), 1.0);
    // Stays raised, no repeat.
    assert!(c.observe(&sample(10.0, vec![p])).is_empty());
}

#[test]
fn redundancy_compares_the_weakest_vdevs_of_each_class() {
    let run = |tops: Vec<Vdev>| -> Vec<(String, String, State, Severity)> {
        let mut c = check(Config::default());
        brief(&c.observe(&sample(0.0, vec![pool("p", tops)])))
    };
    let m = |n: &str, c: VdevClass, l: &[&str]| top(n, c, l, GIB, 100 * GIB);
    use VdevClass::*;
    // Mirror beside mirror, 3-way beside 2-way, single beside single: fine.
    assert!(
        run(vec![
            m("mirror-0", Normal, &["a", "b"]),
            m("mirror-1", Special, &["c", "d"])
        ])
        .is_empty()
    );
    assert!(
        run(vec![
            m("mirror-0", Normal, &["a", "b"]),
            m("mirror-1", Special, &["c", "d", "e"])
        ])
        .is_empty()
    );
    assert!(run(vec![m("a", Normal, &["a"]), m("c", Special, &["c"])]).is_empty());
    // A 2-way dedup mirror beside raidz2 (survives 1 < 2): critical.
    let events = run(vec![
        raidz("raidz2-0", 2, &["a", "b", "c", "d"]),
        m("mirror-1", Dedup, &["e", "f"]),
    ]);
    assert_eq!(
        events,
        [(
            "special-fill.redundancy".into(),
            "p/dedup".into(),
            State::Raised,
            Severity::Critical
        )]
    );
    // Two normal mirrors and a single-disk normal vdev: the pool is only as strong as that
    // disk, so a special mirror is not weaker.
    assert!(
        run(vec![
            m("mirror-0", Normal, &["a", "b"]),
            m("x", Normal, &["x"]),
            m("mirror-2", Special, &["c", "d"])
        ])
        .is_empty()
    );
    // Two special vdevs, one single: the single one decides.
    let events = run(vec![
        m("mirror-0", Normal, &["a", "b"]),
        m("mirror-1", Special, &["c", "d"]),
        m("e", Special, &["e"]),
    ]);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].3, Severity::Critical);
}

/// A one-pool sample with the special class's read I/Os and the ARC's metadata misses.
fn reads_sample(end: f64, special_reads: f64, metadata_misses: u64, l2_hits: u64) -> Sample {
    let mut s = sample(end, vec![tank(10 * GIB)]);
    s.arc = Some(ArcRates {
        deltas: [
            ("demand_metadata_misses".to_string(), metadata_misses / 2),
            (
                "prefetch_metadata_misses".to_string(),
                metadata_misses - metadata_misses / 2,
            ),
            ("l2_hits".to_string(), l2_hits),
        ]
        .into(),
        ..ArcRates::default()
    });
    s.pools = vec![PoolRates {
        name: "tank".into(),
        vdevs: vec![VdevRates {
            subject: "tank/special/mirror-1".into(),
            name: "mirror-1".into(),
            class: Some(VdevClass::Special),
            seconds: 10.0,
            read_ops_per_s: special_reads / 10.0,
            ..VdevRates::default()
        }],
        ..PoolRates::default()
    }];
    s
}

#[test]
fn late_added_special_is_noted_when_it_serves_under_half_the_metadata_reads() {
    let late = |special: f64, misses: u64, l2: u64| {
        let mut c = check(Config::default());
        let events: Vec<Event> = (0..3)
            .flat_map(|i| c.observe(&reads_sample(i as f64 * 10.0, special, misses, l2)))
            .collect();
        events
    };
    // 3 × 100 special reads against 3 × 1000 metadata misses: 10%.
    let events = late(100.0, 1000, 0);
    assert_eq!(
        brief(&events),
        [(
            "special-fill.late".into(),
            "tank/special".into(),
            State::Raised,
            Severity::Info
        )]
    );
    assert_eq!(num(&events[0], "share_upper_bound_pct"), 10.0);
    assert_eq!(num(&events[0], "metadata_reads_from_disk"), 3000.0);
    assert_eq!(
        events[0].summary,
        "tank/special served 300 reads while 3000 metadata blocks were read from disk over \
         the last 30 s (3 samples): at most 10% of the metadata comes from the special class, \
         the rest from the normal class"
    );
    assert!(events[0].advice.as_deref().unwrap().contains("zfs send"));
    zpulse_tests::pages::assert_page_shows("docs/checks/special-fill.md", &events);
    // L2ARC hits are taken off the misses: 300 / (3000 − 1500) = 20%.
    assert_eq!(
        num(&late(100.0, 1000, 500)[0], "share_upper_bound_pct"),
        20.0
    );
    // 50% exactly is not under 50%.
    assert!(late(500.0, 1000, 0).is_empty());
    assert_eq!(late(499.0, 1000, 0).len(), 1);
    // Too few metadata reads (3 × 333 = 999 < 1000): nothing.
    assert!(late(0.0, 333, 0).is_empty());
    assert_eq!(late(0.0, 334, 0).len(), 1);
}

#[test]
fn late_added_estimate_needs_a_single_pool_and_min_samples() {
    let mut c = check(Config::default());
    let events: Vec<Event> = (0..2)
        .flat_map(|i| c.observe(&reads_sample(i as f64 * 10.0, 0.0, 100_000, 0)))
        .collect();
    assert!(events.is_empty(), "two samples < min_samples");
    // A second pool with data vdevs: the ARC's misses could be its.
    let mut c = check(Config::default());
    let other = pool(
        "other",
        vec![top("sdz", VdevClass::Normal, &["sdz"], GIB, 10 * GIB)],
    );
    let events: Vec<Event> = (0..3)
        .flat_map(|i| {
            let mut s = reads_sample(i as f64 * 10.0, 0.0, 100_000, 0);
            s.snapshot.pools.push(other.clone());
            c.observe(&s)
        })
        .collect();
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn an_exported_pool_clears_after_the_hold() {
    let mut c = check(Config::default());
    let raised = c.observe(&sample(0.0, vec![tank(95 * GIB)]));
    assert_eq!(raised[0].severity, Severity::Critical);
    assert!(
        c.observe(&sample(10.0, vec![])).is_empty(),
        "min_hold not over"
    );
    let cleared = c.observe(&sample(400.0, vec![]));
    assert_eq!(
        brief(&cleared),
        [(
            "special-fill".into(),
            "tank/special".into(),
            State::Cleared,
            Severity::Critical
        )]
    );
}

#[test]
fn the_pools_key_limits_the_check() {
    let mut c = check(Config {
        pools: vec!["other".into()],
        ..Config::default()
    });
    assert!(c.observe(&sample(0.0, vec![tank(95 * GIB)])).is_empty());
}

#[test]
fn the_plugin_runs_through_the_abi_and_refuses_bad_config() {
    let host = TestHost::new();
    let events = host
        .run::<SpecialFill>(&[], &[sample(0.0, vec![tank(91 * GIB)])])
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].severity, Severity::Critical);
    let cfg = |pairs: &[(&str, Value)]| {
        let table: BTreeMap<String, Value> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        sdk::config::encode(&table)
    };
    let err = host
        .run::<SpecialFill>(&cfg(&[("critcal_used_pct", Value::UInt(1))]), &[])
        .unwrap_err();
    assert!(err.contains("unknown field `critcal_used_pct`"), "{err}");
    let err = host
        .run::<SpecialFill>(
            &cfg(&[
                ("warn_used_pct", Value::UInt(95)),
                ("critical_used_pct", Value::UInt(90)),
            ]),
            &[],
        )
        .unwrap_err();
    assert!(
        err.contains("warn_used_pct: must be at most critical_used_pct (90), not 95"),
        "{err}"
    );
    let err = host
        .run::<SpecialFill>(&cfg(&[("window", Value::Str("1 fortnight".into()))]), &[])
        .unwrap_err();
    assert!(err.contains("window"), "{err}");
}

#[test]
fn bytes_and_rounding_read_well() {
    assert_eq!(bytes(0.0), "0 B");
    assert_eq!(bytes(1536.0), "1.5 KiB");
    assert_eq!(bytes((384u64 << 20) as f64), "384 MiB");
}
