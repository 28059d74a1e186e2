//! Synthetic samples pinning every threshold edge, the hysteresis, the diagnosis and the
//! advice. Replays of the real lab captures are in `tests/replay.rs`.

use super::*;
use std::collections::BTreeMap;
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{Severity, State};
use zpulse_proto::snapshot::{
    ArcStats, Disk, DiskRole, Kstat, KstatValue, Pool, PoolConfig, Redundancy, Snapshot, Vdev,
};

/// One disk in one sample: `util` %busy, `iops` reads of `kib` KiB each, 8 ms each.
#[derive(Clone, Copy)]
struct D {
    name: &'static str,
    util: f64,
    iops: f64,
    kib: f64,
}

fn d(name: &'static str, util: f64) -> D {
    // 150 IOPS of 16 KiB: 2.5 MB/s, a seek-bound HDD when busy.
    D {
        name,
        util,
        iops: 150.0,
        kib: 16.0,
    }
}

/// How the pool around the disks looks.
#[derive(Clone)]
struct World {
    /// `(disk, rotational, top-level vdev)`.
    disks: Vec<(&'static str, Option<bool>, &'static str)>,
    special: bool,
    data_redundancy: Redundancy,
    metadata_share: Option<f64>,
}

impl Default for World {
    fn default() -> Self {
        World {
            disks: vec![
                ("sda", Some(true), "mirror-0"),
                ("sdb", Some(true), "mirror-0"),
            ],
            special: false,
            data_redundancy: Redundancy::Mirror { width: 2 },
            metadata_share: Some(0.85),
        }
    }
}

fn snapshot(world: &World) -> Snapshot {
    let disks = world
        .disks
        .iter()
        .map(|&(name, rotational, vdev)| Disk {
            name: name.into(),
            rotational,
            roles: vec![DiskRole {
                pool: "tank".into(),
                class: VdevClass::Normal,
                vdev: vdev.into(),
                leaf: name.into(),
            }],
            ..Disk::default()
        })
        .collect();
    let mut tops: BTreeMap<&str, Vdev> = BTreeMap::new();
    for &(name, _, vdev) in &world.disks {
        let top = tops.entry(vdev).or_insert_with(|| Vdev {
            name: vdev.into(),
            vdev_type: "mirror".into(),
            class: Some(VdevClass::Normal),
            redundancy: Some(world.data_redundancy),
            ..Vdev::default()
        });
        top.children.push(Vdev {
            name: name.into(),
            vdev_type: "disk".into(),
            class: Some(VdevClass::Normal),
            disk: Some(name.into()),
            ..Vdev::default()
        });
    }
    let mut children: Vec<Vdev> = tops.into_values().collect();
    if world.special {
        children.push(Vdev {
            name: "mirror-1".into(),
            vdev_type: "mirror".into(),
            class: Some(VdevClass::Special),
            redundancy: Some(Redundancy::Mirror { width: 2 }),
            ..Vdev::default()
        });
    }
    let arc = world.metadata_share.map(|share| {
        let mut k = Kstat::default();
        k.insert("size", KstatValue::Unsigned(1_000_000));
        k.insert(
            "arc_meta_used",
            KstatValue::Unsigned((share * 1_000_000.0) as u64),
        );
        ArcStats(k)
    });
    Snapshot {
        disks,
        pools: vec![Pool {
            name: "tank".into(),
            config: Some(PoolConfig {
                health: "ONLINE".into(),
                root: Vdev {
                    name: "tank".into(),
                    vdev_type: "root".into(),
                    children,
                    ..Vdev::default()
                },
                ..PoolConfig::default()
            }),
            ..Pool::default()
        }],
        arc,
        ..Snapshot::default()
    }
}

fn sample(world: &World, end: f64, disks: &[D]) -> Sample {
    let snap = snapshot(world);
    Sample {
        start: end - 10.0,
        end,
        interval: 10.0,
        disks: disks
            .iter()
            .map(|x| DiskRates {
                name: x.name.into(),
                rotational: snap.disk(x.name).and_then(|d| d.rotational),
                r_s: x.iops,
                rkb_s: x.iops * x.kib,
                r_await: Some(8.0),
                await_ms: Some(8.0),
                rareq_sz: Some(x.kib),
                aqu_sz: 1.2,
                util: x.util,
                ..DiskRates::default()
            })
            .collect(),
        snapshot: snap.into(),
        ..Sample::default()
    }
}

/// Samples 10 s apart, one per entry of `utils`, with both mirror disks at that %util.
fn series(world: &World, utils: &[f64]) -> Vec<Sample> {
    utils
        .iter()
        .enumerate()
        .map(|(i, &u)| sample(world, 10.0 * (i + 1) as f64, &[d("sda", u), d("sdb", u)]))
        .collect()
}

fn config(pairs: &[(&str, Value)]) -> Vec<u8> {
    let table: BTreeMap<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    sdk::config::encode(&table)
}

/// Each sample judged alone, at once, cleared at once: for state-machine edges.
fn per_sample(extra: &[(&str, Value)]) -> Vec<u8> {
    let mut pairs = vec![
        ("window_samples", Value::UInt(1)),
        ("min_samples", Value::UInt(1)),
        ("min_hold", Value::UInt(0)),
    ];
    pairs.extend(extra.iter().cloned());
    config(&pairs)
}

fn run(cfg: &[u8], samples: &[Sample]) -> Vec<Event> {
    TestHost::new()
        .run::<HddSaturation>(cfg, samples)
        .expect("the plugin runs")
}

fn of<'a>(events: &'a [Event], subject: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.subject == subject).collect()
}

fn states(events: &[&Event]) -> Vec<(State, Severity)> {
    events
        .iter()
        .map(|e| (e.state.unwrap(), e.severity))
        .collect()
}

fn num(e: &Event, key: &str) -> f64 {
    e.data
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {:?}", e.data))
}

fn stats(util_mean: f64, saturated_share: f64, bytes_per_s: f64, request: f64) -> Stats {
    Stats {
        samples: 20,
        seconds: 200.0,
        util_mean,
        util_p95: util_mean,
        util_max: util_mean,
        util_max_member_mean: util_mean,
        saturated_samples: (saturated_share * 20.0) as usize,
        saturated_share,
        iops: bytes_per_s / request,
        read_iops: bytes_per_s / request,
        read_bytes_per_s: bytes_per_s,
        write_bytes_per_s: 0.0,
        avg_request_bytes: Some(request),
        await_mean_ms: Some(8.0),
        await_peak_ms: Some(20.0),
        aqu_sz: 1.0,
        zfs_read_wait_ms: None,
        zfs_write_wait_ms: None,
    }
}

fn check() -> HddSaturation {
    HddSaturation::with_config(Config::default()).unwrap()
}

const W: Verdict = Verdict::Holds(Severity::Warning);
const C: Verdict = Verdict::Holds(Severity::Critical);

#[test]
fn saturated_share_edges() {
    let c = check();
    let v = |share: f64| c.assess(stats(0.0, share, 1e6, 16384.0), 1).verdict;
    // Raise at 10%, clear at 5%, critical at 50% (the mean, 0%, is clear).
    assert_eq!(v(0.0999), Verdict::Borderline);
    assert_eq!(v(0.10), W);
    assert_eq!(v(0.11), W);
    assert_eq!(v(0.0501), Verdict::Borderline);
    assert_eq!(v(0.05), Verdict::Clear);
    assert_eq!(v(0.4999), W);
    assert_eq!(v(0.50), C);
}

#[test]
fn mean_util_edges() {
    let c = check();
    let v = |mean: f64| c.assess(stats(mean, 0.0, 1e6, 16384.0), 1).verdict;
    // Raise at 60%, clear at 45%, critical at 90% (the saturated share, 0, is clear).
    assert_eq!(v(59.99), Verdict::Borderline);
    assert_eq!(v(60.0), W);
    assert_eq!(v(60.01), W);
    assert_eq!(v(45.01), Verdict::Borderline);
    assert_eq!(v(45.0), Verdict::Clear);
    assert_eq!(v(89.99), W);
    assert_eq!(v(90.0), C);
    // Either condition raises; the worse severity wins.
    let both = c.assess(stats(90.0, 0.2, 1e6, 16384.0), 1).verdict;
    assert_eq!(both, C);
}

#[test]
fn a_sample_counts_as_saturated_from_the_saturation_level() {
    let mut w = Window::new(1e9, 0);
    for (i, u) in [94.99, 95.0, 95.01, 10.0].into_iter().enumerate() {
        w.push(Obs {
            end: 10.0 * (i + 1) as f64,
            interval: 10.0,
            util: u,
            ..Obs::default()
        });
    }
    let s = Stats::over(&w, 95.0).unwrap();
    assert_eq!(s.saturated_samples, 2);
    assert_eq!(s.saturated_share, 0.5);
}

#[test]
fn little_data_in_fast_requests_is_not_seeking() {
    let c = check();
    // 5% busy at 100 reads of 16 KiB a second: 0.5 ms of busy time per request (a VM's
    // virtual disk at low throughput), though 1.6 MB/s per busy-second-share is little.
    let fast = c.assess(stats(5.0, 0.0, 100.0 * 16384.0, 16384.0), 1);
    assert!(
        fast.busy_share.unwrap() * 100.0 < 25.0,
        "little data per busy second"
    );
    assert_eq!(fast.load, Load::Mixed, "0.5 ms per request is no seek");
    // The same throughput at 20% busy: 2 ms per request, the least a seek costs.
    let seeking = c.assess(stats(20.0, 0.0, 100.0 * 16384.0, 16384.0), 1);
    assert_eq!(seeking.load, Load::SeekBound);
    // Two disks sharing 200 requests a second at 20% busy each: still 2 ms per request.
    let vdev = c.assess(stats(20.0, 0.0, 200.0 * 16384.0, 16384.0), 2);
    assert_eq!(vdev.load, Load::SeekBound);
}

#[test]
fn seek_bound_edges() {
    let c = check();
    // Busy 100%: one busy second is one second, so the share per busy second is the share.
    // Disks of 100 MB/s, so that a quarter of it in 64 KiB requests (381 a second, 2.6 ms
    // each) takes as long as seeks do.
    let seq = 100e6;
    let slower = HddSaturation::with_config(Config {
        sequential_mb_s: 100.0,
        ..Config::default()
    })
    .unwrap();
    let load = |bytes: f64, request: f64| slower.assess(stats(100.0, 0.5, bytes, request), 1).load;
    assert_eq!(load(0.25 * seq, 65536.0), Load::SeekBound);
    assert_eq!(load(0.2501 * seq, 65536.0), Load::Mixed);
    assert_eq!(
        load(0.10 * seq, 65536.0 + 1.0),
        Load::Mixed,
        "large requests"
    );
    assert_eq!(load(0.4999 * seq, 1e6), Load::Mixed);
    assert_eq!(load(0.50 * seq, 1e6), Load::Streaming);
    // The seed: 60% busy while moving 8.5 MB/s is 9.4% of 150 MB/s per busy second (in
    // 32 KiB requests: 259 a second, 2.3 ms of busy time each, as seeks take).
    let seed = c.assess(stats(60.0, 0.16, 8.5e6, 32768.0), 1);
    assert_eq!(seed.load, Load::SeekBound);
    assert!((seed.busy_share.unwrap() - 8.5 / 0.6 / 150.0).abs() < 1e-9);
    assert!((seed.sequential_share - 8.5 / 150.0).abs() < 1e-9);
    // A vdev of two disks has twice the sequential rate.
    let two = c.assess(stats(60.0, 0.16, 8.5e6, 32768.0), 2);
    assert!((two.sequential_share - 8.5 / 300.0).abs() < 1e-9);
    // Never busy: nothing to diagnose.
    assert_eq!(c.assess(stats(0.0, 0.0, 0.0, 16384.0), 1).busy_share, None);
}

#[test]
fn too_little_data_is_silence() {
    let world = World::default();
    // Default min_samples = 12: eleven saturated samples say nothing, the twelfth raises.
    let events = run(&[], &series(&world, &[100.0; 11]));
    assert!(events.is_empty(), "{events:?}");
    let events = run(&[], &series(&world, &[100.0; 12]));
    assert_eq!(events.len(), 3, "sda, sdb and mirror-0: {events:?}");
    assert!(events.iter().all(|e| e.state == Some(State::Raised)));
    // No samples at all, and samples without spinning disks, are silence too.
    assert!(run(&[], &[]).is_empty());
    let ssd = World {
        disks: vec![("nvme0n1", Some(false), "nvme0n1")],
        ..World::default()
    };
    let samples: Vec<Sample> = (1..=20)
        .map(|i| sample(&ssd, 10.0 * i as f64, &[d("nvme0n1", 100.0)]))
        .collect();
    assert!(run(&[], &samples).is_empty());
}

#[test]
fn hysteresis_raise_hold_clear() {
    let world = World::default();
    let cfg = per_sample(&[("per_disk", Value::Bool(false))]);
    // 70 raises (≥ 60), 58 is borderline (stays raised, no event), 95 is critical, 45 clears,
    // 50 after the clear is borderline again and stays quiet.
    // (58 moves the figures by less than the 25% that makes an update.)
    let events = run(&cfg, &series(&world, &[70.0, 58.0, 70.0, 95.0, 45.0, 50.0]));
    assert_eq!(
        states(&of(&events, "tank/normal/mirror-0")),
        [
            (State::Raised, Severity::Warning),
            (State::Updated, Severity::Critical),
            (State::Cleared, Severity::Critical),
        ]
    );
    // From quiet, borderline values never raise.
    let events = run(&cfg, &series(&world, &[59.0, 50.0, 46.0, 59.9]));
    assert!(events.is_empty(), "{events:?}");
    // min_hold keeps a finding up through an early clear.
    let held = per_sample(&[
        ("per_disk", Value::Bool(false)),
        ("min_hold", Value::Str("25s".into())),
    ]);
    // Raised at 10 s; the clears at 20 s and 30 s come too early; the one at 40 s (30%) clears.
    let events = run(&held, &series(&world, &[70.0, 10.0, 10.0, 30.0]));
    let s = of(&events, "tank/normal/mirror-0");
    assert_eq!(states(&s)[1], (State::Cleared, Severity::Warning));
    assert_eq!(num(s[1], "util_mean_pct"), 30.0);
}

#[test]
fn raise_after_counts_consecutive_windows() {
    let world = World::default();
    let cfg = per_sample(&[
        ("per_disk", Value::Bool(false)),
        ("raise_after", Value::UInt(3)),
    ]);
    assert!(run(&cfg, &series(&world, &[70.0, 70.0, 50.0, 70.0, 70.0])).is_empty());
    assert_eq!(run(&cfg, &series(&world, &[70.0, 70.0, 70.0])).len(), 1);
}

#[test]
fn the_seeds_mirror_is_seek_bound_and_wants_a_mirrored_special_vdev() {
    let world = World::default();
    // 90 samples like the seed: 16% of them (15) saturated, the rest at 53% → mean ≈ 60%.
    let mut utils = vec![53.0; 75];
    utils.extend([100.0; 15]);
    let samples = series(&world, &utils);
    let events = run(&config(&[]), &samples);
    let raised = of(&events, "tank/normal/mirror-0");
    assert_eq!(states(&raised)[0], (State::Raised, Severity::Warning));
    // The mirror's findings as the plugin emits them, which the check's page shows.
    zpulse_tests::pages::assert_page_shows("docs/checks/hdd-saturation.md", raised.iter().copied());
    // The figures over all 90 samples, as the findings see them after the last one.
    let mut check = check();
    for s in &samples {
        check.step(s);
    }
    let judged = check.judge(samples.last().unwrap());
    let find = |subject: &str| {
        let j = judged.iter().find(|j| j.subject == subject).unwrap();
        let mut e = Event::finding(
            "hdd-saturation",
            State::Updated,
            Severity::Warning,
            subject,
            &j.report.summary,
        );
        e.advice = j.report.advice.clone();
        e.data = j.report.data.clone();
        e
    };
    let e = &find("tank/normal/mirror-0");
    assert_eq!(e.severity, Severity::Warning);
    // The window caps at 360 samples / 30 min: all 90 are in it.
    assert!(
        e.summary.starts_with(
            "tank mirror-0 (HDD: sda, sdb) busy 61% mean (p95 100%), ≥95% in 17% of 90 samples"
        ),
        "{}",
        e.summary
    );
    // 2 disks × 150 IOPS × 16 KiB = 4.9 MB/s of their 300 MB/s.
    assert!(
        e.summary.contains("moving 4.9 MB/s in 300 IOPS of 16 KiB"),
        "{}",
        e.summary
    );
    assert!(
        e.summary
            .ends_with("— 1.6% of its disks' sequential 300 MB/s: seek-bound"),
        "{}",
        e.summary
    );
    assert_eq!(e.data.get("seek_bound"), Some(&Value::Bool(true)));
    assert_eq!(num(e, "arc_metadata_share_pct"), 85.0);
    assert_eq!(e.data.get("pool_has_special"), Some(&Value::Bool(false)));
    let advice = e.advice.as_deref().unwrap();
    assert!(advice.contains("85% metadata"), "{advice}");
    assert!(
        advice.contains("every metadata read the ARC misses is a seek"),
        "{advice}"
    );
    assert!(advice.contains("2-way mirror"), "{advice}");
    assert!(
        advice.contains("zpool add tank special mirror SSD1 SSD2)"),
        "{advice}"
    );
    assert!(
        advice.contains("losing the special vdev loses the whole pool"),
        "{advice}"
    );
    // Each disk too, naming what it serves.
    let sda = [&find("sda")];
    assert!(
        sda[0]
            .summary
            .starts_with("sda (tank mirror-0) busy 61% mean"),
        "{}",
        sda[0].summary
    );
    assert!(
        sda[0]
            .summary
            .contains("— 1.6% of its sequential 150 MB/s: seek-bound")
    );
    assert_eq!(
        sda[0].data.get("vdevs"),
        Some(&Value::List(vec![Value::from("tank/normal/mirror-0")]))
    );
}

#[test]
fn advice_follows_the_pool_and_the_arc() {
    let busy = [100.0; 12];
    let advice = |world: World| {
        let events = run(&config(&[]), &series(&world, &busy));
        let e = of(&events, "tank/normal/mirror-0")[0].clone();
        e.advice.unwrap_or_default()
    };
    let with_special = advice(World {
        special: true,
        ..World::default()
    });
    assert!(
        with_special.contains("already has a special vdev"),
        "{with_special}"
    );
    let raidz2 = advice(World {
        data_redundancy: Redundancy::Parity { parity: 2 },
        ..World::default()
    });
    assert!(raidz2.contains("3-way mirror"), "{raidz2}");
    assert!(
        raidz2.contains("special mirror SSD1 SSD2 SSD3)"),
        "{raidz2}"
    );
    let data_heavy = advice(World {
        metadata_share: Some(0.3),
        ..World::default()
    });
    assert!(data_heavy.contains("only 30% metadata"), "{data_heavy}");
    // At the metadata threshold itself (50%) the ARC is not "mostly metadata".
    let half = advice(World {
        metadata_share: Some(0.5),
        ..World::default()
    });
    assert!(half.contains("only 50% metadata"), "{half}");
    let unknown = advice(World {
        metadata_share: None,
        ..World::default()
    });
    assert!(unknown.contains("mirrored special vdev"), "{unknown}");
}

#[test]
fn streaming_disks_are_bandwidth_bound_not_seek_bound() {
    let world = World::default();
    let big = |u: f64| D {
        iops: 140.0,
        kib: 1024.0,
        ..d("sda", u)
    };
    let samples: Vec<Sample> = (1..=12)
        .map(|i| {
            sample(
                &world,
                10.0 * i as f64,
                &[
                    big(100.0),
                    D {
                        name: "sdb",
                        ..big(100.0)
                    },
                ],
            )
        })
        .collect();
    let events = run(&config(&[]), &samples);
    let e = of(&events, "sda")[0];
    assert!(
        e.summary.ends_with(": streaming near its sequential rate"),
        "{}",
        e.summary
    );
    assert!(e.advice.as_deref().unwrap().contains("bandwidth"));
    assert_eq!(e.data.get("seek_bound"), Some(&Value::Bool(false)));
}

#[test]
fn only_spinning_whole_disks_are_watched() {
    let rates = |name: &str, rotational: Option<bool>, whole: Option<&str>| DiskRates {
        name: name.into(),
        rotational,
        whole_disk: whole.map(String::from),
        ..DiskRates::default()
    };
    assert!(watched(&[], &rates("sda", Some(true), None)));
    assert!(!watched(&[], &rates("sda1", Some(true), Some("sda"))));
    assert!(!watched(&[], &rates("sdc", Some(false), None)));
    assert!(
        !watched(&[], &rates("sdd", None, None)),
        "unknown is not an HDD"
    );
    assert!(!watched(&[], &rates("loop0", Some(true), None)));
    assert!(!watched(&[], &rates("zd0", Some(true), None)));
    let only = vec!["sdb".to_string()];
    assert!(!watched(&only, &rates("sda", Some(true), None)));
    assert!(watched(&only, &rates("sdb", Some(true), None)));
}

#[test]
fn a_mixed_vdev_is_not_an_hdd_vdev() {
    let world = World {
        disks: vec![
            ("sda", Some(true), "mirror-0"),
            ("sdc", Some(false), "mirror-0"),
        ],
        ..World::default()
    };
    let samples: Vec<Sample> = (1..=12)
        .map(|i| sample(&world, 10.0 * i as f64, &[d("sda", 100.0), d("sdc", 100.0)]))
        .collect();
    let events = run(&config(&[]), &samples);
    let subjects: Vec<&str> = events.iter().map(|e| e.subject.as_str()).collect();
    assert_eq!(subjects, ["sda"]);
}

#[test]
fn a_disk_that_disappears_clears_once_its_window_is_gone() {
    let world = World::default();
    let cfg = config(&[
        ("window", Value::Str("60s".into())),
        ("min_samples", Value::UInt(3)),
        ("min_hold", Value::UInt(0)),
        ("per_disk", Value::Bool(true)),
    ]);
    let mut samples = series(&world, &[100.0; 4]);
    // sdb vanishes (pulled); sda keeps going.
    for i in 5..=12 {
        samples.push(sample(&world, 10.0 * i as f64, &[d("sda", 100.0)]));
    }
    let events = run(&cfg, &samples);
    let sdb = of(&events, "sdb");
    assert_eq!(
        states(&sdb),
        [
            (State::Raised, Severity::Critical),
            (State::Cleared, Severity::Critical)
        ]
    );
    assert!(
        sdb[1].summary.contains("too few recent samples"),
        "{}",
        sdb[1].summary
    );
    // The vdev lost a disk's figures too, and clears the same way; sda stays raised.
    assert_eq!(of(&events, "tank/normal/mirror-0").len(), 2);
    assert_eq!(of(&events, "sda").len(), 1);
}

#[test]
fn bad_configs_are_refused_with_the_key() {
    let host = TestHost::new();
    let err = host
        .run::<HddSaturation>(
            &config(&[
                ("mean_util_pct", Value::UInt(50)),
                ("mean_util_clear_pct", Value::UInt(60)),
            ]),
            &[],
        )
        .unwrap_err();
    // The clear level's own key, at its line of the config file.
    assert!(
        err.contains("mean_util_clear_pct: must be at most mean_util_pct (50), not 60"),
        "{err}"
    );
    let err = host
        .run::<HddSaturation>(&config(&[("saturation_pc", Value::UInt(1))]), &[])
        .unwrap_err();
    assert!(err.contains("unknown field `saturation_pc`"), "{err}");
    let err = host
        .run::<HddSaturation>(&config(&[("sequential_mb_s", Value::UInt(0))]), &[])
        .unwrap_err();
    assert!(err.contains("sequential_mb_s"), "{err}");
    let err = host
        .run::<HddSaturation>(&config(&[("seek_bound_pct", Value::UInt(60))]), &[])
        .unwrap_err();
    assert!(err.contains("seek_bound_pct"), "{err}");
}
