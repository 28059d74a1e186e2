//! Synthetic samples pinning every threshold edge, the sizing arithmetic, the trend and the
//! hysteresis. Replays of the real lab captures are in `tests/replay.rs`.

use super::*;
use std::collections::BTreeMap;
use zpulse_proto::sample::ArcRates;
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{State, Value};
use zpulse_proto::snapshot::{
    ArcStats, Kstat, KstatValue, Memory, Pool, PoolConfig, Snapshot, Tunables, Vdev,
};

/// The ARC and the host over one 10 s sample; rates per second, sizes in bytes.
#[derive(Clone, Copy)]
struct A {
    size: f64,
    c_max: f64,
    hits: f64,
    misses: f64,
    ghosts: f64,
    ghost_size: Option<f64>,
    meta: f64,
    available: Option<f64>,
    arc_available: Option<i64>,
    total: f64,
    os: Os,
    /// Reads/s the L2ARC served, and the cache device of pool `tank`, if it has one.
    l2_hits: f64,
    cache: Option<&'static str>,
}

/// The seed's server: 16 GiB ARC limit, 15.7 GiB used, 94.7% hits, 64 GiB RAM, 40 GiB free,
/// 85% metadata; ghost hits 4% of reads over 8 GiB of ghost lists.
fn seed() -> A {
    A {
        size: 15.7 * GIB,
        c_max: 16.0 * GIB,
        hits: 947.0,
        misses: 53.0,
        ghosts: 40.0,
        ghost_size: Some(8.0 * GIB),
        meta: 0.85,
        available: Some(40.0 * GIB),
        arc_available: None,
        total: 64.0 * GIB,
        os: Os::Freebsd,
        l2_hits: 0.0,
        cache: None,
    }
}

fn sample(a: &A, end: f64) -> Sample {
    let mut k = Kstat::default();
    let mut put = |name: &str, v: f64| k.insert(name, KstatValue::Unsigned(v as u64));
    put("size", a.size);
    put("c_max", a.c_max);
    put("arc_meta_used", a.size * a.meta);
    put("memory_all_bytes", a.total);
    if let Some(g) = a.ghost_size {
        put("mru_ghost_size", g * 0.75);
        put("mfu_ghost_size", g * 0.25);
    }
    if let Some(m) = a.arc_available {
        k.insert("memory_available_bytes", KstatValue::Signed(m));
    }
    let deltas: BTreeMap<String, u64> = [
        ("hits", a.hits * 10.0),
        ("misses", a.misses * 10.0),
        ("mru_ghost_hits", a.ghosts * 10.0),
        ("mfu_ghost_hits", 0.0),
        ("l2_hits", a.l2_hits * 10.0),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v.round() as u64))
    .collect();
    let mut tunables = Tunables::default();
    tunables.0.insert("zfs_arc_max".into(), "0".into());
    Sample {
        start: end - 10.0,
        end,
        interval: 10.0,
        arc: Some(ArcRates {
            deltas,
            ..ArcRates::default()
        }),
        snapshot: Snapshot {
            arc: Some(ArcStats(k)),
            memory: a.available.map(|av| Memory {
                total: a.total as u64,
                free: av as u64,
                available: Some(av as u64),
                ..Memory::default()
            }),
            host: zpulse_proto::snapshot::HostIdentity {
                os: a.os,
                ..Default::default()
            },
            tunables,
            pools: a.cache.iter().map(|dev| pool_with_cache(dev)).collect(),
            ..Snapshot::default()
        }
        .into(),
        ..Sample::default()
    }
}

/// Pool `tank`: a data disk and the cache device `dev`.
fn pool_with_cache(dev: &str) -> Pool {
    let vdev = |name: &str, class| Vdev {
        name: name.into(),
        vdev_type: "disk".into(),
        class: Some(class),
        disk: Some(name.into()),
        ..Vdev::default()
    };
    Pool {
        name: "tank".into(),
        config: Some(PoolConfig {
            root: Vdev {
                name: "tank".into(),
                vdev_type: "root".into(),
                children: vec![vdev("sda", VdevClass::Normal), vdev(dev, VdevClass::Cache)],
                ..Vdev::default()
            },
            ..PoolConfig::default()
        }),
        ..Pool::default()
    }
}

fn series(states: &[A]) -> Vec<Sample> {
    states
        .iter()
        .enumerate()
        .map(|(i, a)| sample(a, 10.0 * (i + 1) as f64))
        .collect()
}

fn config(pairs: &[(&str, Value)]) -> Vec<u8> {
    let table: BTreeMap<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    sdk::config::encode(&table)
}

fn run(cfg: &[u8], samples: &[Sample]) -> Vec<Event> {
    TestHost::new()
        .run::<ArcSizing>(cfg, samples)
        .expect("the plugin runs")
}

/// The judgement after feeding `n` samples of `a` with the default config.
fn judged(a: A, n: usize) -> Judgement {
    judged_with(Config::default(), &vec![a; n])
}

fn judged_with(config: Config, states: &[A]) -> Judgement {
    let mut check = ArcSizing::with_config(config).unwrap();
    let samples = series(states);
    for s in &samples {
        check.step(s);
    }
    check
        .judge(samples.last().unwrap())
        .expect("enough samples")
}

const W: Verdict = Verdict::Holds(Severity::Warning);
const I: Verdict = Verdict::Holds(Severity::Info);

#[test]
fn the_seeds_arc_should_grow_by_8_gib() {
    let j = judged(seed(), 90);
    assert_eq!(j.verdict, W);
    assert!((j.plan.keep_free - 0.15 * 64.0 * GIB).abs() < 1.0);
    assert!((j.plan.headroom.unwrap() - (40.0 - 9.6) * GIB).abs() < 1.0);
    // Capped by the ghost lists (8 GiB), not by the 30.4 GiB of headroom.
    assert_eq!(j.plan.raise, 8.0 * GIB);
    assert_eq!(j.plan.new_max, 24.0 * GIB);
    assert_eq!(j.plan.converted, 1.0);
    assert!((j.plan.projected_hit_ratio.unwrap() - 0.987).abs() < 1e-9);
    let r = &j.report;
    assert_eq!(
        r.summary,
        "ARC pinned at its 16.0 GiB limit (mean 15.7 GiB, 98%) at a 94.7% hit ratio, steady \
         while 40.0 GiB available: 40.0 ghost hits/s (4.0% of reads) say a bigger ARC would \
         hit more; metadata is 85% of the ARC"
    );
    let advice = r.advice.as_deref().unwrap();
    assert!(
        advice.starts_with(
            "Raise the ARC limit (zfs_arc_max is 0 now: the automatic limit) by 8.0 GiB to \
             24.0 GiB (25769803776 bytes), which still leaves 32.0 GiB of the 40.0 GiB \
             available free: about 40.0 of the 40.0 ghost hits/s (4.0% of reads) would become \
             hits, hit ratio 94.7% → ~98.7%."
        ),
        "{advice}"
    );
    assert!(
        advice.contains("sysctl vfs.zfs.arc.max=25769803776"),
        "{advice}"
    );
    assert_eq!(r.data.get("metadata_share_pct"), Some(&Value::Float(85.0)));
    assert_eq!(
        r.data.get("hit_ratio_trend_pp_per_h"),
        Some(&Value::Float(0.0))
    );
}

/// The seed's finding as the plugin emits it, which the check's page shows.
#[test]
fn the_page_shows_the_seeds_finding() {
    let events = run(&config(&[]), &series(&[seed(); 90]));
    assert_eq!(events.len(), 1, "raised once, then steady: {events:?}");
    assert_eq!(
        (events[0].state, events[0].severity),
        (Some(State::Raised), Severity::Warning)
    );
    zpulse_tests::pages::assert_page_shows("docs/checks/arc-sizing.md", &events);
}

#[test]
fn linux_advice_writes_the_module_parameter() {
    let j = judged(
        A {
            os: Os::Linux,
            ..seed()
        },
        12,
    );
    let advice = j.report.advice.unwrap();
    assert!(
        advice.contains("echo 25769803776 > /sys/module/zfs/parameters/zfs_arc_max"),
        "{advice}"
    );
    assert!(
        advice.contains("options zfs zfs_arc_max=25769803776"),
        "{advice}"
    );
}

#[test]
fn pinned_edges() {
    // A c_max of 100 × 2^30 keeps the percentages exact.
    let at = |pct: f64| {
        let a = A {
            c_max: 100.0 * GIB,
            size: pct * GIB,
            ..seed()
        };
        judged(a, 12).verdict
    };
    assert_eq!(at(96.99), Verdict::Borderline);
    assert_eq!(at(97.0), W);
    assert_eq!(at(97.01), W);
    assert_eq!(at(90.01), Verdict::Borderline);
    assert_eq!(at(90.0), Verdict::Clear);
}

#[test]
fn ghost_share_edges() {
    // 2000 reads/s: 20 ghost hits/s are 1% of them, and well above 5/s.
    let at = |ghosts: f64| {
        let a = A {
            hits: 1900.0,
            misses: 100.0,
            ghosts,
            ..seed()
        };
        judged(a, 12).verdict
    };
    assert_eq!(at(19.9), Verdict::Borderline);
    assert_eq!(at(20.0), W);
    assert_eq!(at(20.1), W);
    assert_eq!(at(10.1), Verdict::Borderline);
    assert_eq!(at(10.0), Verdict::Clear);
}

#[test]
fn ghost_rate_edges() {
    // 100 reads/s: any of these is ≥ 2.5% of reads, so only the rate decides.
    let at = |ghosts: f64| {
        let a = A {
            hits: 90.0,
            misses: 10.0,
            ghosts,
            ..seed()
        };
        judged(a, 12).verdict
    };
    assert_eq!(at(4.9), Verdict::Borderline);
    assert_eq!(at(5.0), W);
    assert_eq!(at(2.6), Verdict::Borderline);
    assert_eq!(at(2.5), Verdict::Clear);
}

#[test]
fn memory_edges_decide_between_advice_and_info() {
    // 4 GiB of RAM: keep max(15% = 614 MiB, 1024 MiB) = 1 GiB free; a raise needs 256 MiB.
    let with = |available: f64| {
        let a = A {
            c_max: 2.0 * GIB,
            size: 2.0 * GIB,
            total: 4.0 * GIB,
            available: Some(available),
            ghost_size: Some(GIB),
            ..seed()
        };
        judged(a, 12)
    };
    let j = with(GIB + 256.0 * MIB);
    assert_eq!(j.verdict, W);
    assert_eq!(j.plan.raise, 256.0 * MIB);
    // A quarter of the 1 GiB the ghost lists stand for: a quarter of the ghost hits.
    assert_eq!(j.plan.converted, 0.25);
    assert!((j.plan.converted_per_s - 10.0).abs() < 1e-9);
    let j = with(GIB + 255.0 * MIB);
    assert_eq!(j.verdict, I);
    assert_eq!(j.plan.raise, 0.0);
    assert!(
        j.report
            .summary
            .contains("only 255 MiB is to spare beyond the 1.0 GiB to keep free")
    );
    assert!(j.report.advice.unwrap().contains("more RAM"));
    // No memory figure at all: info too.
    let j = judged(
        A {
            available: None,
            ..seed()
        },
        12,
    );
    assert_eq!(j.verdict, I);
    assert!(
        j.report.summary.contains("free memory is unknown"),
        "{}",
        j.report.summary
    );
}

/// Every piece of the no-raise advice is checked against the sample: RAM only when memory is
/// known to be short, an L2ARC only where the pools have none, and one that is there said with
/// what it serves.
#[test]
fn the_no_raise_advice_follows_the_sample() {
    // 4 GiB of RAM, 1 GiB to keep free, 1 GiB available: nothing to spare.
    let short = A {
        c_max: 2.0 * GIB,
        size: 2.0 * GIB,
        total: 4.0 * GIB,
        available: Some(GIB),
        ghost_size: Some(GIB),
        ..seed()
    };
    let advice = |a: A| {
        let j = judged(a, 12);
        assert_eq!(j.verdict, I, "{}", j.report.summary);
        (j.report.advice.unwrap(), j.report.data)
    };
    // No cache device anywhere: an L2ARC is worth suggesting.
    let (text, data) = advice(short);
    assert!(text.starts_with("There is no memory to spare"), "{text}");
    assert!(text.ends_with("until then an L2ARC on SSD can serve some of the misses"));
    assert!(!data.contains_key("l2_share_pct"));
    // The pool has one serving 300 of the 1,000 reads/s (947 hits + 53 misses): said, not
    // suggested again.
    let (text, data) = advice(A {
        cache: Some("sdf"),
        l2_hits: 300.0,
        ..short
    });
    assert!(!text.contains("an L2ARC on SSD can serve"), "{text}");
    assert!(
        text.ends_with(
            "The L2ARC already there (tank/cache/sdf) serves 300.0 reads/s, 30.0% of all ARC reads"
        ),
        "{text}"
    );
    assert_eq!(data["l2_share_pct"].as_f64(), Some(30.0));
    // Memory unknown: no claim that there is none.
    let (text, _) = advice(A {
        available: None,
        ..short
    });
    assert!(
        text.starts_with("The host's free memory is unknown") && !text.contains("no memory"),
        "{text}"
    );
    // 255 MiB beyond the 1 GiB to keep free: some memory, less than the 256 MiB step.
    let j = judged(
        A {
            available: Some(GIB + 255.0 * MIB),
            ..short
        },
        12,
    );
    assert!(
        j.report.summary.contains(
            "with 1.2 GiB available only 255 MiB is to spare beyond the 1.0 GiB to keep free, \
             less than the 256 MiB step worth advising"
        ),
        "{}",
        j.report.summary
    );
    // Through the plugin ABI: the cache device reaches the check (it reads the vdev trees).
    let events = run(
        &config(&[]),
        &series(&vec![
            A {
                cache: Some("sdf"),
                l2_hits: 300.0,
                ..short
            };
            12
        ]),
    );
    let e = events.last().expect("a finding");
    assert!(
        e.advice.as_deref().unwrap().contains("(tank/cache/sdf)"),
        "{:?}",
        e.advice
    );
}

#[test]
fn a_small_arc_capped_by_its_admin_with_memory_free_is_told_to_grow() {
    // zfs_arc_max 96 MiB on a host with 2.6 GiB available, 1 GiB to keep free: twice 96 MiB
    // rounds to no 128 MiB step, but the smallest step worth advising (256 MiB) fits.
    let j = judged(
        A {
            c_max: 96.0 * MIB,
            size: 96.0 * MIB,
            total: 3.0 * GIB,
            available: Some(2.6 * GIB),
            ghost_size: Some(200.0 * MIB),
            ..seed()
        },
        12,
    );
    assert_eq!(j.plan.raise, 256.0 * MIB);
    assert_eq!(j.plan.new_max, 352.0 * MIB);
}

#[test]
fn the_raise_is_rounded_and_bounded() {
    let base = A {
        c_max: 2.0 * GIB,
        size: 2.0 * GIB,
        total: 16.0 * GIB,
        available: Some(10.0 * GIB),
        ..seed()
    };
    // Ghost lists of 300 MiB: raise 384 MiB (3 × 128 MiB), which converts every ghost hit.
    let j = judged(
        A {
            ghost_size: Some(300.0 * MIB),
            ..base
        },
        12,
    );
    assert_eq!(j.plan.raise, 384.0 * MIB);
    assert_eq!(j.plan.converted, 1.0);
    // Huge ghost lists: at most max_growth_pct (100%) of c_max.
    let j = judged(
        A {
            ghost_size: Some(50.0 * GIB),
            ..base
        },
        12,
    );
    assert_eq!(j.plan.raise, 2.0 * GIB);
    assert!((j.plan.converted - 2.0 / 50.0).abs() < 1e-12);
    // Tiny ghost lists still get the smallest step worth advising.
    let j = judged(
        A {
            ghost_size: Some(10.0 * MIB),
            ..base
        },
        12,
    );
    assert_eq!(j.plan.raise, 256.0 * MIB);
    // Unknown ghost sizes: the memory cap, and the effect of all ghost hits.
    let j = judged(
        A {
            ghost_size: None,
            ..base
        },
        12,
    );
    assert_eq!(j.plan.raise, 2.0 * GIB);
    assert_eq!(j.plan.converted, 1.0);
    // Steps of 4 GiB and more are whole GiB.
    let big = A {
        c_max: 64.0 * GIB,
        size: 64.0 * GIB,
        total: 256.0 * GIB,
        available: Some(100.0 * GIB),
        ghost_size: Some(9.3 * GIB),
        ..seed()
    };
    assert_eq!(judged(big, 12).plan.raise, 10.0 * GIB);
}

#[test]
fn arcstats_memory_is_the_fallback() {
    let j = judged(
        A {
            available: None,
            arc_available: Some((20.0 * GIB) as i64),
            ..seed()
        },
        12,
    );
    assert_eq!(j.stats.available_min, Some(20.0 * GIB));
    assert_eq!(j.verdict, W);
    // Negative means the ARC should shrink: nothing available.
    let j = judged(
        A {
            available: None,
            arc_available: Some(-1_000_000),
            ..seed()
        },
        12,
    );
    assert_eq!(j.stats.available_min, Some(0.0));
    assert_eq!(j.verdict, I);
}

#[test]
fn the_trend_is_the_least_squares_slope() {
    assert_eq!(
        slope(&[(0.0, 1.0), (1.0, 3.0)]),
        None,
        "two points are no trend"
    );
    assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), Some(2.0));
    assert_eq!(slope(&[(1.0, 1.0), (1.0, 3.0), (1.0, 5.0)]), None);
    let s = slope(&[(0.0, 0.0), (1.0, 2.0), (2.0, 1.0), (3.0, 3.0)]).unwrap();
    assert!((s - 0.8).abs() < 1e-12);
    // Hit ratio falling from 95% by 0.05 points per 10 s sample: −18 pp/h.
    let states: Vec<A> = (0..12)
        .map(|i| {
            let hits = 950.0 - 0.5 * i as f64;
            A {
                hits,
                misses: 1000.0 - hits,
                ..seed()
            }
        })
        .collect();
    let j = judged_with(Config::default(), &states);
    assert!((j.stats.hit_ratio_trend.unwrap() + 18.0).abs() < 1e-6);
    assert!(
        j.report.summary.contains("falling 18.0 pp/h"),
        "{}",
        j.report.summary
    );
    assert_eq!(
        j.report.data.get("hit_ratio_trend_pp_per_h"),
        Some(&Value::Float(-18.0))
    );
}

#[test]
fn too_little_data_is_silence() {
    assert!(run(&[], &series(&[seed(); 11])).is_empty());
    let events = run(&[], &series(&[seed(); 12]));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].state, Some(State::Raised));
    assert_eq!(events[0].severity, Severity::Warning);
    assert_eq!(events[0].subject, "arc");
    // Without ARC statistics (ZFS not loaded) or rates (a reset), there is nothing to say.
    let mut bare = series(&[seed(); 20]);
    for s in &mut bare {
        s.arc = None;
    }
    assert!(run(&[], &bare).is_empty());
    // No reads at all: no ghost hits either, clear.
    let idle = A {
        hits: 0.0,
        misses: 0.0,
        ghosts: 0.0,
        ..seed()
    };
    let j = judged(idle, 12);
    assert_eq!(j.verdict, Verdict::Clear);
    assert_eq!(j.stats.hit_ratio, None);
    assert!(
        j.report.summary.contains("no hit ratio"),
        "{}",
        j.report.summary
    );
}

#[test]
fn hysteresis_raise_hold_clear() {
    let cfg = config(&[
        ("window_samples", Value::UInt(1)),
        ("min_samples", Value::UInt(1)),
        ("min_hold", Value::UInt(0)),
    ]);
    let pinned = |pct: f64| A {
        c_max: 100.0 * GIB,
        size: pct * GIB,
        ..seed()
    };
    // 98% raises, 95% is borderline (stays raised, no event), 90% clears, 95% stays quiet.
    let events = run(
        &cfg,
        &series(&[pinned(98.0), pinned(95.0), pinned(90.0), pinned(95.0)]),
    );
    let states: Vec<_> = events.iter().map(|e| e.state.unwrap()).collect();
    assert_eq!(states, [State::Raised, State::Cleared]);
    assert!(
        events[1]
            .summary
            .starts_with("The ARC is not starved: 90% of its 100.0 GiB limit")
    );
    assert!(events[1].advice.is_none());
    // Running out of memory while raised turns the warning into info.
    let poor = A {
        available: Some(GIB),
        ..pinned(98.0)
    };
    let events = run(&cfg, &series(&[pinned(98.0), poor]));
    let sev: Vec<_> = events
        .iter()
        .map(|e| (e.state.unwrap(), e.severity))
        .collect();
    assert_eq!(
        sev,
        [
            (State::Raised, Severity::Warning),
            (State::Updated, Severity::Info)
        ]
    );
}

#[test]
fn bad_configs_are_refused_with_the_key() {
    let host = TestHost::new();
    let err = host
        .run::<ArcSizing>(
            &config(&[
                ("pinned_pct", Value::UInt(90)),
                ("pinned_clear_pct", Value::UInt(95)),
            ]),
            &[],
        )
        .unwrap_err();
    // The clear level's own key, at its line of the config file.
    assert!(
        err.contains("pinned_clear_pct: must be at most pinned_pct (90), not 95"),
        "{err}"
    );
    let err = host
        .run::<ArcSizing>(&config(&[("pinned", Value::UInt(1))]), &[])
        .unwrap_err();
    assert!(err.contains("unknown field `pinned`"), "{err}");
    let err = host
        .run::<ArcSizing>(&config(&[("keep_free_pct", Value::UInt(100))]), &[])
        .unwrap_err();
    assert!(err.contains("keep_free_pct"), "{err}");
    let err = host
        .run::<ArcSizing>(&config(&[("window", Value::Str("soon".into()))]), &[])
        .unwrap_err();
    assert!(err.contains("window"), "{err}");
}
