//! Sample arithmetic against the formulas of sysstat's `iostat -x` and FreeBSD's libdevstat
//! (docs/zfs-sources.md, "`/proc/diskstats`" and "`devstat`"), on hand-made counters.

use super::*;
use crate::snapshot::*;
use proptest::prelude::*;

fn disk(name: &str, c: Diskstats) -> Disk {
    Disk {
        name: name.into(),
        counters: DiskCounters::Diskstats(c),
        ..Disk::default()
    }
}

fn snap(at: f64, disks: Vec<Disk>) -> Snapshot {
    Snapshot {
        taken_at: at,
        disks,
        ..Snapshot::default()
    }
}

#[allow(clippy::too_many_arguments)] // one argument per diskstats column the formulas use
fn ds(
    reads: u64,
    rsec: u64,
    rms: u64,
    writes: u64,
    wsec: u64,
    wms: u64,
    io: u64,
    wt: u64,
) -> Diskstats {
    Diskstats {
        major: 8,
        reads,
        sectors_read: rsec,
        read_ms: rms,
        writes,
        sectors_written: wsec,
        write_ms: wms,
        io_ms: io,
        weighted_ms: wt,
        ..Diskstats::default()
    }
}

#[test]
fn iostat_x_columns() {
    // 2 s apart: 300 reads of 2400 sectors taking 900 ms, 100 writes of 800 sectors taking
    // 100 ms, busy 1500 ms, weighted 3000 ms.
    let a = snap(
        10.0,
        vec![disk(
            "sda",
            ds(1000, 8000, 5000, 50, 400, 70, 10_000, 20_000),
        )],
    );
    let b = snap(
        12.0,
        vec![disk(
            "sda",
            ds(1300, 10400, 5900, 150, 1200, 170, 11_500, 23_000),
        )],
    );
    let s = Sample::between(&a, &b).unwrap();
    let r = s.disk("sda").unwrap();
    assert_eq!(s.interval, 2.0);
    assert_eq!(r.r_s, 150.0);
    assert_eq!(r.w_s, 50.0);
    assert_eq!(r.rkb_s, 600.0); // 2400 sectors / 2 / 2 s
    assert_eq!(r.wkb_s, 200.0);
    assert_eq!(r.r_await, Some(3.0)); // 900 ms / 300
    assert_eq!(r.w_await, Some(1.0));
    assert_eq!(r.await_ms, Some(2.5)); // 1000 ms / 400
    assert_eq!(r.aqu_sz, 1.5); // 3000 ms / 2000 ms
    assert_eq!(r.util, 75.0); // 1500 ms / 2000 ms
    assert_eq!(r.rareq_sz, Some(4.0)); // 1200 kB / 300
    assert_eq!(r.d_s, None, "14-field lines have no discards");
}

#[test]
fn idle_disk_has_no_await() {
    let c = ds(1, 2, 3, 4, 5, 6, 7, 8);
    let s = Sample::between(
        &snap(0.0, vec![disk("sdb", c.clone())]),
        &snap(1.0, vec![disk("sdb", c)]),
    )
    .unwrap();
    let r = s.disk("sdb").unwrap();
    assert_eq!((r.r_s, r.util), (0.0, 0.0));
    assert_eq!(r.r_await, None);
}

#[test]
fn wrapped_32_bit_time_fields_are_modular() {
    // io_ms wraps from 2^32 - 500 to 500: 1000 ms busy in 2 s = 50 %.
    let a = ds(10, 0, 4_294_967_000, 0, 0, 0, 4_294_966_796, 0);
    let b = ds(20, 0, 704, 0, 0, 0, 500, 0);
    let s = Sample::between(
        &snap(0.0, vec![disk("sdc", a)]),
        &snap(2.0, vec![disk("sdc", b)]),
    )
    .unwrap();
    let r = s.disk("sdc").unwrap();
    assert_eq!(r.util, 50.0);
    assert_eq!(r.r_await, Some(100.0)); // (2^32 - 4_294_967_000 + 704) ms / 10 reads
}

#[test]
fn reattached_device_is_a_reset_not_a_negative_rate() {
    let a = ds(5000, 100, 10, 10, 10, 10, 10, 10);
    let b = ds(3, 6, 1, 0, 0, 0, 1, 1);
    let s = Sample::between(
        &snap(0.0, vec![disk("sdd", a)]),
        &snap(1.0, vec![disk("sdd", b)]),
    )
    .unwrap();
    assert!(s.disk("sdd").is_none());
    assert_eq!(s.resets, vec!["disk sdd".to_string()]);
}

#[test]
fn devstat_columns_follow_libdevstat() {
    let dev = |ops_r: u64, bytes_r: u64, dur_r: f64, busy: f64| Disk {
        name: "ada0".into(),
        counters: DiskCounters::Devstat(Devstat {
            operations: [0, ops_r, 0, 0],
            bytes: [0, bytes_r, 0, 0],
            duration: [0.0, dur_r, 0.0, 0.0],
            busy_time: busy,
            ..Devstat::default()
        }),
        ..Disk::default()
    };
    let a = snap(0.0, vec![dev(100, 409_600, 1.0, 5.0)]);
    let b = snap(4.0, vec![dev(500, 2_048_000, 3.0, 7.0)]);
    let s = Sample::between(&a, &b).unwrap();
    let r = s.disk("ada0").unwrap();
    assert_eq!(r.r_s, 100.0);
    assert_eq!(r.rkb_s, 400.0); // 1_638_400 B / 1024 / 4 s
    assert_eq!(r.r_await, Some(5.0)); // 2 s / 400 ops
    assert_eq!(r.util, 50.0); // 2 s busy / 4 s
    assert_eq!(r.aqu_sz, 0.5);
}

fn arc(crtime: u64, rows: &[(&str, u64)]) -> ArcStats {
    let mut k = Kstat {
        header: Some(KstatHeader {
            kid: 1,
            kstat_type: 1,
            flags: 1,
            ndata: rows.len() as u64,
            data_size: 0,
            crtime,
            snaptime: 0,
        }),
        ..Kstat::default()
    };
    for (n, v) in rows {
        k.insert(*n, KstatValue::Unsigned(*v));
    }
    ArcStats(k)
}

#[test]
fn arc_ratios_and_sizes_are_not_deltas() {
    let mut a = snap(0.0, vec![]);
    let mut b = snap(10.0, vec![]);
    a.arc = Some(arc(
        7,
        &[
            ("hits", 1000),
            ("misses", 100),
            ("size", 5000),
            ("l2_hits", 1),
            ("l2_misses", 99),
        ],
    ));
    b.arc = Some(arc(
        7,
        &[
            ("hits", 1970),
            ("misses", 130),
            ("size", 4000),
            ("l2_hits", 4),
            ("l2_misses", 106),
        ],
    ));
    let r = Sample::between(&a, &b).unwrap().arc.unwrap();
    assert_eq!(r.delta("hits"), Some(970));
    assert_eq!(r.delta("size"), None, "a size shrinking is not a reset");
    assert_eq!(r.hit_ratio, Some(0.97));
    assert_eq!(r.reads_per_s, 100.0);
    assert_eq!(r.l2_hit_ratio, Some(0.3));
    assert_eq!(r.l2_share_of_reads, Some(0.003));
}

#[test]
fn module_reload_resets_arc() {
    let mut a = snap(0.0, vec![]);
    let mut b = snap(10.0, vec![]);
    a.arc = Some(arc(7, &[("hits", 10)]));
    b.arc = Some(arc(9, &[("hits", 20)]));
    let s = Sample::between(&a, &b).unwrap();
    assert!(s.arc.is_none());
    assert_eq!(s.resets, vec!["arcstats".to_string()]);
}

/// A pool with one dataset whose `objset-*` kstat has the given rows.
fn pool_with_dataset(rows: &[(&str, u64)]) -> Pool {
    let mut counters = Kstat::default();
    for (n, v) in rows {
        counters.insert(*n, KstatValue::Unsigned(*v));
    }
    Pool {
        name: "tank".into(),
        datasets: vec![DatasetKstats {
            objset: "0x36".into(),
            name: Some("tank/db".into()),
            counters,
        }],
        ..Pool::default()
    }
}

#[test]
fn dataset_zil_counters_get_deltas_and_reset_with_their_dataset() {
    let ops = [
        ("reads", 100),
        ("writes", 200),
        ("nread", 1000),
        ("nwritten", 2000),
    ];
    let rows = |commits: u64, writes: u64| {
        let mut r = ops.to_vec();
        r[1].1 = writes;
        r.push(("zil_commit_count", commits));
        r.push(("zil_itx_metaslab_slog_bytes", commits * 4096));
        r
    };
    let mut a = snap(0.0, vec![]);
    let mut b = snap(10.0, vec![]);
    a.pools = vec![pool_with_dataset(&rows(50, 200))];
    b.pools = vec![pool_with_dataset(&rows(80, 260))];
    let s = Sample::between(&a, &b).unwrap();
    let d = &s.pools[0].datasets[0];
    assert_eq!(d.writes_per_s, 6.0);
    assert_eq!(d.zil_delta("zil_commit_count"), Some(30));
    assert_eq!(d.zil_delta("zil_itx_metaslab_slog_bytes"), Some(30 * 4096));
    assert_eq!(d.zil_delta("reads"), None);
    // Re-created between the readings: its ZIL counters went back with the rest, so the
    // dataset has no rates at all this interval and is named as reset.
    b.pools = vec![pool_with_dataset(&rows(3, 260))];
    let s = Sample::between(&a, &b).unwrap();
    assert!(s.pools[0].datasets.is_empty());
    assert_eq!(s.resets, vec!["dataset tank/db".to_string()]);
    // A kernel before 2.2: no zil_ rows, no ZIL deltas, the rates as before.
    a.pools = vec![pool_with_dataset(&ops)];
    b.pools = vec![pool_with_dataset(&ops)];
    let s = Sample::between(&a, &b).unwrap();
    assert!(s.pools[0].datasets[0].zil.is_empty());
}

#[test]
fn out_of_order_snapshots_are_refused() {
    let err = Sample::between(&snap(5.0, vec![]), &snap(5.0, vec![])).unwrap_err();
    assert!(err.to_string().contains("not later"));
}

fn any_diskstats() -> impl Strategy<Value = Diskstats> {
    (any::<[u64; 11]>(), proptest::option::of(any::<[u64; 6]>())).prop_map(|(v, ext)| Diskstats {
        major: 8,
        minor: 0,
        reads: v[0],
        reads_merged: v[1],
        sectors_read: v[2],
        read_ms: v[3],
        writes: v[4],
        writes_merged: v[5],
        sectors_written: v[6],
        write_ms: v[7],
        in_flight: 0,
        io_ms: v[8],
        weighted_ms: v[9],
        discards: ext.map(|e| e[0]),
        discards_merged: ext.map(|e| e[1]),
        sectors_discarded: ext.map(|e| e[2]),
        discard_ms: ext.map(|e| e[3]),
        flushes: ext.map(|e| e[4]),
        flush_ms: ext.map(|e| e[5]),
    })
}

proptest! {
    #[test]
    fn rates_are_never_negative_or_nan(a in any_diskstats(), b in any_diskstats(), itv in 0.001f64..1e6) {
        let s = Sample::between(&snap(0.0, vec![disk("x", a)]), &snap(itv, vec![disk("x", b)])).unwrap();
        for r in &s.disks {
            for v in [r.r_s, r.w_s, r.rkb_s, r.wkb_s, r.aqu_sz, r.util] {
                prop_assert!(v >= 0.0 && v.is_finite());
            }
            prop_assert!(r.util <= 100.0);
            for v in [r.r_await, r.w_await, r.d_await, r.f_await, r.await_ms, r.d_s, r.f_s].into_iter().flatten() {
                prop_assert!(v >= 0.0 && v.is_finite());
            }
        }
    }
}

/// A leaf with each of the vdev parts: named stats, the raw array, a histogram.
fn leaf_with_every_vdev_part() -> crate::snapshot::Vdev {
    use crate::snapshot::{LatencyHistograms, Vdev, VdevStats};
    Vdev {
        name: "sda".into(),
        vdev_type: "disk".into(),
        stats: Some(VdevStats {
            alloc: 7,
            raw: vec![1, 2, 3],
            ..VdevStats::default()
        }),
        histograms: Some(LatencyHistograms {
            total_r: vec![1; 37],
            ..LatencyHistograms::default()
        }),
        redundancy: Some(crate::snapshot::Redundancy::None),
        ..Vdev::default()
    }
}

#[test]
fn leaving_out_the_vdev_parts_keeps_the_tree_and_its_named_stats() {
    use crate::abi::{PART_DATASETS, PART_TXGS, PART_VDEV_HISTOGRAMS, PART_VDEV_RAW_STATS};
    use crate::snapshot::{Pool, PoolConfig, Txg, Vdev};
    let leaf = leaf_with_every_vdev_part();
    let mut s = Sample::default();
    s.snapshot.pools = vec![Pool {
        name: "tank".into(),
        txgs: vec![Txg::default()],
        config: Some(PoolConfig {
            root: Vdev {
                name: "tank".into(),
                vdev_type: "root".into(),
                children: vec![leaf],
                ..Vdev::default()
            },
            ..PoolConfig::default()
        }),
        ..Pool::default()
    }];
    let out = s.without(PART_TXGS | PART_VDEV_HISTOGRAMS | PART_VDEV_RAW_STATS | PART_DATASETS);
    let pool = &out.snapshot.pools[0];
    assert!(pool.txgs.is_empty());
    let got = &pool.config.as_ref().unwrap().root.children[0];
    assert_eq!(got.histograms, None);
    let stats = got.stats.as_ref().unwrap();
    assert_eq!((stats.alloc, stats.raw.len()), (7, 0));
    // Nothing left out: the same sample.
    assert_eq!(s.without(0), s);
}

#[test]
fn virtual_devices_are_flagged_in_the_sample() {
    let names = [
        "sda", "sda1", "loop0", "fd0", "sr0", "zd16", "nvme0n1", "md0", "mdraid",
    ];
    let disks = |at: u64| {
        names
            .iter()
            .map(|n| {
                disk(
                    n,
                    Diskstats {
                        reads: at,
                        ..Diskstats::default()
                    },
                )
            })
            .collect()
    };
    let s = Sample::between(&snap(0.0, disks(1)), &snap(10.0, disks(2))).unwrap();
    let flagged: Vec<&str> = s
        .disks
        .iter()
        .filter(|d| d.virtual_device)
        .map(|d| d.name.as_str())
        .collect();
    // Loop devices, floppies, optical drives, zvols; Linux's md0 is software RAID.
    assert_eq!(flagged, ["loop0", "fd0", "sr0", "zd16"]);
}

/// A sample with every optional field present and every list filled, the shapes the part
/// encoder writes by hand.
fn every_field() -> Sample {
    use crate::snapshot::{DatasetKstats, NetInterface, PoolConfig, SourceIssue, Txg, Vdev};
    let leaf = leaf_with_every_vdev_part();
    let mut prev = snap(100.0, vec![disk("sda", Diskstats::default())]);
    let mut cur = snap(
        110.0,
        vec![disk(
            "sda",
            Diskstats {
                reads: 10,
                io_ms: 50,
                ..Diskstats::default()
            },
        )],
    );
    for (s, hits) in [(&mut prev, 1), (&mut cur, 9)] {
        s.arc = Some(arc(1, &[("hits", hits), ("misses", 1)]));
        let mut zil = crate::snapshot::ZilStats::default();
        zil.0.insert("zil_commit_count", KstatValue::Unsigned(hits));
        s.zil = Some(zil);
        let mut pool = pool_with_dataset(&[("zil_commit_count", hits)]);
        pool.txgs = vec![Txg::default()];
        pool.config = Some(PoolConfig {
            root: Vdev {
                name: "tank".into(),
                vdev_type: "root".into(),
                children: vec![leaf.clone()],
                ..Vdev::default()
            },
            ..PoolConfig::default()
        });
        s.pools = vec![pool];
        s.cpu = Some(CpuTimes {
            user: hits,
            ..CpuTimes::default()
        });
        s.memory = Some(Memory::default());
        s.net = vec![NetInterface {
            name: "eth0".into(),
            ..NetInterface::default()
        }];
        s.monotonic = Some(s.taken_at);
        s.boot_time = Some(s.taken_at - 3600.0);
        s.tunables.0.insert("zfs_arc_max".into(), "0".into());
        s.issues = vec![SourceIssue {
            source: "proc/net/dev".into(),
            message: "x".into(),
        }];
        let _ = DatasetKstats::default();
    }
    let mut s = Sample::between(&prev, &cur).unwrap();
    s.resets.push("disk sdz".into());
    for (name, present) in [
        ("arc", s.arc.is_some()),
        ("zil", s.zil.is_some()),
        ("cpu", s.cpu.is_some()),
        ("pools", !s.pools.is_empty()),
        ("disks", !s.disks.is_empty()),
        ("net", !s.net.is_empty()),
        ("datasets", !s.snapshot.pools[0].datasets.is_empty()),
    ] {
        assert!(present, "the test sample lacks {name}");
    }
    s
}

#[test]
fn the_part_encoder_writes_what_serde_writes_for_every_set_of_parts() {
    use crate::abi::PARTS_KNOWN;
    for s in [every_field(), Sample::default()] {
        // One encoder for all the variants, asked in an order that is neither rising nor
        // falling, so that a piece cached for one set and wrongly reused for another shows.
        let mut encoder = PartEncoder::new(&s);
        for i in 0..=PARTS_KNOWN {
            let unread = (i * 389) & PARTS_KNOWN;
            let want = rmp_serde::to_vec_named(&s.without(unread)).unwrap();
            assert_eq!(encoder.encode(unread), want, "unread parts {unread:#x}");
        }
        // Unknown bits are ignored.
        assert_eq!(
            encoder.encode(!PARTS_KNOWN),
            rmp_serde::to_vec_named(&s).unwrap()
        );
    }
}

#[test]
fn the_1_3_parts_leave_out_the_arc_the_vdev_trees_and_the_pool_rates() {
    use crate::abi::{PART_ARC, PART_POOL_CONFIGS, PART_POOL_RATES};
    let s = every_field();
    let out = s.without(PART_ARC);
    assert_eq!(
        (out.arc.is_none(), out.snapshot.arc.is_none()),
        (true, true)
    );
    assert_eq!(out.snapshot.zil, s.snapshot.zil);
    let out = s.without(PART_POOL_CONFIGS);
    let pool = &out.snapshot.pools[0];
    assert_eq!(pool.config, None);
    // The pool itself stays: name, state, its txgs and datasets, and the rates.
    assert_eq!(pool.name, s.snapshot.pools[0].name);
    assert_eq!(pool.datasets, s.snapshot.pools[0].datasets);
    assert_eq!(out.pools, s.pools);
    let out = s.without(PART_POOL_RATES);
    assert!(out.pools.is_empty());
    assert_eq!(out.snapshot.pools, s.snapshot.pools);
}
