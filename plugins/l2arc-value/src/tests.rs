//! Unit tests on synthetic samples: every threshold edge.

use super::*;
use zpulse_proto::sample::{ArcRates, DiskRates};
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{State, Value};
use zpulse_proto::snapshot::{ArcStats, KstatValue, Pool, PoolConfig, Vdev, VdevStats};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One interval of ARC activity, per 10 s sample.
#[derive(Clone, Copy)]
struct Arc {
    hits: u64,
    misses: u64,
    l2_hits: u64,
    l2_write: u64,
    ghost_hits: u64,
    hdr: u64,
    ghost_size: u64,
    asize: u64,
}

/// The seed's server: ARC 98.5%, the L2ARC +1.3% of reads, its headers in ARC RAM.
const SEED: Arc = Arc {
    hits: 9850,
    misses: 150,
    l2_hits: 130,
    l2_write: 10 * MIB,
    ghost_hits: 0,
    hdr: 200 * MIB,
    ghost_size: 0,
    asize: 100 * GIB,
};

fn cache(name: &str) -> Vdev {
    Vdev {
        name: name.into(),
        vdev_type: "disk".into(),
        class: Some(VdevClass::Cache),
        disk: Some(name.into()),
        stats: Some(VdevStats {
            space: 200 * GIB,
            ..VdevStats::default()
        }),
        ..Vdev::default()
    }
}

fn sample(end: f64, a: Arc, caches: &[&str]) -> Sample {
    let mut s = Sample {
        start: end - 10.0,
        end,
        interval: 10.0,
        arc: Some(ArcRates {
            deltas: [
                ("hits", a.hits),
                ("misses", a.misses),
                ("l2_hits", a.l2_hits),
                ("l2_misses", a.misses - a.l2_hits),
                ("l2_read_bytes", a.l2_hits * 16384),
                ("l2_write_bytes", a.l2_write),
                ("mru_ghost_hits", a.ghost_hits),
                ("mfu_ghost_hits", 0),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            ..ArcRates::default()
        }),
        ..Sample::default()
    };
    let mut arc = ArcStats::default();
    for (k, v) in [
        ("size", 24 * GIB),
        ("l2_hdr_size", a.hdr),
        ("mru_ghost_size", a.ghost_size),
        ("mfu_ghost_size", 0),
        ("l2_asize", a.asize),
        ("l2_rebuild_success", 1),
    ] {
        arc.0.insert(k, KstatValue::Unsigned(v));
    }
    s.snapshot.arc = Some(arc);
    s.snapshot
        .tunables
        .0
        .insert("l2arc_rebuild_enabled".into(), "1".into());
    let mut children = vec![Vdev {
        name: "mirror-0".into(),
        vdev_type: "mirror".into(),
        class: Some(VdevClass::Normal),
        ..Vdev::default()
    }];
    children.extend(caches.iter().map(|c| cache(c)));
    s.snapshot.pools = vec![Pool {
        name: "zroot".into(),
        config: Some(PoolConfig {
            root: Vdev {
                name: "zroot".into(),
                vdev_type: "root".into(),
                children,
                ..Vdev::default()
            },
            ..PoolConfig::default()
        }),
        ..Pool::default()
    }];
    for c in caches {
        s.disks.push(DiskRates {
            name: c.to_string(),
            util: 5.0,
            ..DiskRates::default()
        });
    }
    s
}

fn run_with(config: Config, a: Arc, n: usize) -> Vec<Event> {
    let mut c = L2arcValue::new(config).unwrap();
    (0..n)
        .flat_map(|i| c.observe(&sample(i as f64 * 10.0, a, &["ada3p1"])))
        .collect()
}

fn run(a: Arc) -> Vec<Event> {
    run_with(Config::default(), a, 3)
}

fn verdict(events: &[Event]) -> Option<(String, Severity)> {
    events
        .last()
        .map(|e| (e.data["verdict"].as_str().unwrap().to_string(), e.severity))
}

fn num(e: &Event, key: &str) -> f64 {
    e.data
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {:?}", e.data))
}

#[test]
fn the_seed_server_is_negative() {
    let events = run(SEED);
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(
        (e.check.as_str(), e.subject.as_str(), e.state, e.severity),
        (
            "l2arc-value",
            "zroot/cache/ada3p1",
            Some(State::Raised),
            Severity::Warning
        )
    );
    assert_eq!(e.data["verdict"], Value::Str("negative".into()));
    assert_eq!(num(e, "arc_hit_pct"), 98.5);
    assert_eq!(num(e, "l2_share_of_reads_pct"), 1.3);
    assert_eq!(num(e, "max_share_of_reads_pct"), 1.5);
    assert_eq!(num(e, "arc_reads"), 30_000.0);
    assert_eq!(num(e, "l2_hdr_bytes"), (200 * MIB) as f64);
    assert!(
        e.summary.starts_with(
            "zroot/cache/ada3p1 served 390 of 30000 ARC reads over the last 30 s (1.3% of all \
             reads on top of the ARC's own 98.5% hit rate, L2ARC hit ratio 87%"
        ),
        "{}",
        e.summary
    );
    assert!(
        e.summary
            .contains("its headers take 200 MiB of ARC RAM (0.81% of the ARC)")
    );
    assert!(
        e.summary.ends_with(
            "its headers take 200 MiB of ARC RAM (0.81% of the ARC) and feeding it wrote 1.0 MiB/s \
             to it (5% busy): negative"
        ),
        "{}",
        e.summary
    );
    assert!(
        e.advice
            .as_deref()
            .unwrap()
            .contains("the ARC misses only 1.5% of reads")
    );
    zpulse_tests::pages::assert_page_shows("docs/checks/l2arc-value.md", &events);
}

/// A workload that misses 20% in the ARC, the L2ARC serving `share_per_10k` of 10 000 reads.
fn missing(l2_hits: u64) -> Arc {
    Arc {
        hits: 8000,
        misses: 2000,
        l2_hits,
        ..SEED
    }
}

#[test]
fn worth_it_from_5_percent_of_reads_negative_under_2() {
    assert_eq!(
        verdict(&run(missing(500))),
        Some(("worth it".into(), Severity::Info))
    );
    assert_eq!(
        verdict(&run(missing(499))),
        Some(("marginal".into(), Severity::Info))
    );
    assert_eq!(
        verdict(&run(missing(200))),
        Some(("marginal".into(), Severity::Info))
    );
    assert_eq!(
        verdict(&run(missing(199))),
        Some(("negative".into(), Severity::Warning))
    );
    let e = &run(missing(199))[0];
    assert!(
        e.advice
            .as_deref()
            .unwrap()
            .contains("too few reads for what it costs")
    );
    // The ARC's own misses bound any L2ARC: 2% misses is not under 2%.
    let tight = |misses: u64| Arc {
        hits: 10_000 - misses,
        misses,
        l2_hits: misses,
        ..SEED
    };
    assert_eq!(verdict(&run(tight(200))).unwrap().0, "marginal");
    assert_eq!(verdict(&run(tight(199))).unwrap().0, "negative");
}

#[test]
fn while_it_fills_a_low_share_is_marginal_not_negative() {
    let mut c = L2arcValue::new(Config::default()).unwrap();
    let mut events = Vec::new();
    // l2_asize grows 10 → 30 GiB of a 200 GiB device over the window.
    for (i, asize) in [10, 20, 30].iter().enumerate() {
        let a = Arc {
            asize: asize * GIB,
            ..missing(100)
        };
        events.extend(c.observe(&sample(i as f64 * 10.0, a, &["ada3p1"])));
    }
    assert_eq!(verdict(&events), Some(("marginal".into(), Severity::Info)));
    assert_eq!(events[0].data["filling"], Value::Bool(true));
    assert!(events[0].summary.contains("still filling"));
    // Growth of exactly 10% is not filling.
    let mut c = L2arcValue::new(Config::default()).unwrap();
    let events: Vec<Event> = [100, 105, 110]
        .iter()
        .enumerate()
        .flat_map(|(i, asize)| {
            let a = Arc {
                asize: asize * GIB,
                ..missing(100)
            };
            c.observe(&sample(i as f64 * 10.0, a, &["ada3p1"]))
        })
        .collect();
    assert_eq!(verdict(&events).unwrap().0, "negative");
}

#[test]
fn an_l2arc_that_costs_nothing_is_only_marginal() {
    let free = Arc {
        l2_write: 0,
        hdr: 0,
        ..missing(0)
    };
    assert_eq!(verdict(&run(free)).unwrap().0, "marginal");
    // Writes alone are a cost: the storm lab's L2ARC (no headers yet, fed, never hit).
    let fed = Arc {
        hdr: 0,
        ..missing(0)
    };
    assert_eq!(verdict(&run(fed)).unwrap().0, "negative");
}

#[test]
fn header_ram_that_would_serve_more_as_arc_makes_it_negative() {
    // 600 of 10 000 reads from the L2ARC (worth it by share), but the ARC's ghost lists
    // were hit 2000 times per interval; the headers are half the ghost lists' size, so as
    // ARC they would have served ~1000.
    let a = Arc {
        ghost_hits: 2000,
        ghost_size: 400 * MIB,
        hdr: 200 * MIB,
        ..missing(600)
    };
    let events = run(a);
    assert_eq!(verdict(&events).unwrap().0, "negative");
    assert_eq!(num(&events[0], "ram_as_arc_hits"), 3000.0);
    assert!(
        events[0]
            .summary
            .contains("ghost lists were hit 200.0 times/s")
    );
    assert!(
        events[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("would serve more reads as ARC")
    );
    // 1200 from the L2ARC: more than the RAM would → worth it.
    let a = Arc {
        ghost_hits: 2000,
        ghost_size: 400 * MIB,
        hdr: 200 * MIB,
        ..missing(1200)
    };
    assert_eq!(verdict(&run(a)).unwrap().0, "worth it");
}

#[test]
fn too_little_data_says_nothing() {
    assert!(run_with(Config::default(), SEED, 2).is_empty());
    // 3 × 3333 = 9999 reads < 10 000.
    let few = Arc {
        hits: 3300,
        misses: 33,
        l2_hits: 10,
        ..SEED
    };
    assert!(run(few).is_empty());
    let enough = Arc { hits: 3301, ..few };
    assert_eq!(run(enough).len(), 1);
}

#[test]
fn iohits_count_as_reads() {
    let mut c = L2arcValue::new(Config::default()).unwrap();
    let events: Vec<Event> = (0..3)
        .flat_map(|i| {
            let mut s = sample(i as f64 * 10.0, SEED, &["ada3p1"]);
            s.arc
                .as_mut()
                .unwrap()
                .deltas
                .insert("iohits".into(), 10_000);
            c.observe(&s)
        })
        .collect();
    assert_eq!(num(&events[0], "arc_reads"), 60_000.0);
    assert_eq!(num(&events[0], "l2_share_of_reads_pct"), 0.65);
}

#[test]
fn persistence_is_reported() {
    let e = &run(missing(600))[0];
    assert_eq!(e.data["rebuild_enabled"], Value::Bool(true));
    assert_eq!(num(e, "rebuild_success"), 1.0);
    assert!(!e.summary.contains("persistent"));
    let mut c = L2arcValue::new(Config::default()).unwrap();
    let events: Vec<Event> = (0..3)
        .flat_map(|i| {
            let mut s = sample(i as f64 * 10.0, missing(600), &["ada3p1"]);
            s.snapshot.tunables.0.remove("l2arc_rebuild_enabled");
            c.observe(&s)
        })
        .collect();
    assert!(
        events[0]
            .summary
            .contains("it is not persistent: empty after every reboot"),
        "{}",
        events[0].summary
    );
}

#[test]
fn several_cache_devices_share_one_subject() {
    let mut c = L2arcValue::new(Config::default()).unwrap();
    let events: Vec<Event> = (0..3)
        .flat_map(|i| c.observe(&sample(i as f64 * 10.0, SEED, &["sdf", "sdg"])))
        .collect();
    assert_eq!(events[0].subject, "l2arc");
    assert_eq!(
        events[0].data["devices"],
        Value::List(vec![
            Value::Str("zroot/cache/sdf".into()),
            Value::Str("zroot/cache/sdg".into())
        ])
    );
}

#[test]
fn a_removed_cache_device_clears_after_the_hold() {
    let mut c = L2arcValue::new(Config::default()).unwrap();
    for i in 0..3 {
        c.observe(&sample(i as f64 * 10.0, SEED, &["ada3p1"]));
    }
    assert!(c.observe(&sample(40.0, SEED, &[])).is_empty(), "min_hold");
    let cleared = c.observe(&sample(1000.0, SEED, &[]));
    assert_eq!(cleared.len(), 1);
    assert_eq!(cleared[0].state, Some(State::Cleared));
}

#[test]
fn the_plugin_runs_through_the_abi_and_refuses_bad_config() {
    let host = TestHost::new();
    let samples: Vec<Sample> = (0..3)
        .map(|i| sample(i as f64 * 10.0, SEED, &["ada3p1"]))
        .collect();
    let events = host.run::<L2arcValue>(&[], &samples).unwrap();
    assert!(host.rejected().is_empty());
    assert_eq!(events.len(), 1);
    let cfg = |pairs: &[(&str, Value)]| {
        sdk::config::encode(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
    };
    let err = host
        .run::<L2arcValue>(&cfg(&[("worth_pct", Value::UInt(1))]), &[])
        .unwrap_err();
    assert!(err.contains("unknown field `worth_pct`"), "{err}");
    let err = host
        .run::<L2arcValue>(
            &cfg(&[
                ("worth_share_pct", Value::UInt(1)),
                ("marginal_share_pct", Value::UInt(2)),
            ]),
            &[],
        )
        .unwrap_err();
    assert!(
        err.contains("marginal_share_pct: must be at most worth_share_pct (1), not 2"),
        "{err}"
    );
}
