use super::*;
use zpulse_proto::snapshot::{
    DatasetKstats, Disk, Diskstats, Kstat, Memory, Pool, PoolConfig, VdevClass,
};

fn lines(text: &str, family: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            !l.starts_with('#')
                && (l.starts_with(&format!("{family}{{")) || l.starts_with(&format!("{family} ")))
        })
        .map(str::to_string)
        .collect()
}

fn pool_with_histogram(total_w: Vec<u64>) -> Pool {
    let leaf = Vdev {
        name: "sda".into(),
        vdev_type: "disk".into(),
        class: Some(VdevClass::Normal),
        stats: Some(VdevStats::default()),
        histograms: Some(LatencyHistograms {
            total_w,
            ..LatencyHistograms::default()
        }),
        ..Vdev::default()
    };
    let top = Vdev {
        name: "mirror-0".into(),
        vdev_type: "mirror".into(),
        class: Some(VdevClass::Normal),
        children: vec![leaf],
        ..Vdev::default()
    };
    Pool {
        name: "tank".into(),
        config: Some(PoolConfig {
            health: "ONLINE".into(),
            root: Vdev {
                name: "tank".into(),
                vdev_type: "root".into(),
                children: vec![top],
                ..Vdev::default()
            },
            ..PoolConfig::default()
        }),
        ..Pool::default()
    }
}

#[test]
fn label_values_are_escaped_as_the_format_says() {
    // Text format 0.0.4: in label values, `\` → `\\`, `"` → `\"`, line feed → `\n`.
    let mut counters = Kstat::default();
    counters.insert("writes", KstatValue::Unsigned(7));
    let mut pool = pool_with_histogram(vec![]);
    pool.datasets = vec![DatasetKstats {
        objset: "0x36".into(),
        name: Some("tank/a \"b\"\\c\nd".into()),
        counters,
    }];
    let snap = Snapshot {
        pools: vec![pool],
        ..Snapshot::default()
    };
    let e = render(&snap, &[], None);
    assert_eq!(
        lines(e.text_str(), "zpulse_dataset_writes_total"),
        [r#"zpulse_dataset_writes_total{pool="tank",dataset="tank/a \"b\"\\c\nd"} 7"#]
    );
    // HELP: `\` → `\\` and line feed → `\n`; a double quote stays.
    assert_eq!(
        Header::new("zpulse_x", Type::Gauge, "a\\b \"c\"\nd").text,
        b"# HELP zpulse_x a\\\\b \"c\"\\nd\n# TYPE zpulse_x gauge\n"
    );
}

#[test]
fn absent_fields_are_absent_series_not_zeros() {
    let snap = Snapshot {
        disks: vec![Disk {
            name: "sda".into(),
            // A 4.17 kernel: no discard or flush fields.
            counters: DiskCounters::Diskstats(Diskstats {
                reads: 5,
                ..Diskstats::default()
            }),
            ..Disk::default()
        }],
        memory: Some(Memory {
            total: 8 << 30,
            free: 1 << 30,
            ..Memory::default()
        }),
        pools: vec![Pool {
            name: "old".into(),
            // A pool without /dev/zfs statistics: no space figures, no vdevs.
            ..Pool::default()
        }],
        ..Snapshot::default()
    };
    let e = render(&snap, &[], None);
    assert_eq!(
        lines(e.text_str(), "zpulse_disk_reads_completed_total"),
        [r#"zpulse_disk_reads_completed_total{disk="sda"} 5"#]
    );
    for absent in [
        "zpulse_disk_discards_completed_total",
        "zpulse_disk_flush_requests_total",
        "zpulse_host_memory_available_bytes",
        "zpulse_disk_rotational",
        "zpulse_pool_size_bytes",
        "zpulse_pool_state",
        "zpulse_arc_size_bytes",
        "zpulse_finding",
        "zpulse_agent_resident_memory_bytes",
    ] {
        assert!(
            !e.text_str().contains(absent),
            "{absent} must be absent: {}",
            e.text_str()
        );
    }
    assert_eq!(
        lines(e.text_str(), "zpulse_host_memory_total_bytes"),
        [format!("zpulse_host_memory_total_bytes {}", 8u64 << 30)]
    );
}

#[test]
fn kernel_power_of_two_buckets_become_a_prometheus_histogram() {
    // vdev_stat_ex histograms: bucket i counts I/Os of [2^i, 2^(i+1)) ns. A 4-bucket one with
    // 3 I/Os in bucket 1 ([2, 4) ns), 5 in bucket 2 ([4, 8) ns) and 1 in the last, which also
    // holds everything longer.
    let snap = Snapshot {
        pools: vec![pool_with_histogram(vec![0, 3, 5, 1])],
        ..Snapshot::default()
    };
    let e = render_at(Detail::Full, &snap, &[], None);
    let l = r#"pool="tank",class="normal",vdev="mirror-0",leaf="sda",op="write""#;
    assert_eq!(
        lines(e.text_str(), "zpulse_vdev_total_wait_seconds_bucket"),
        [
            format!("zpulse_vdev_total_wait_seconds_bucket{{{l},le=\"0.000000002\"}} 0"),
            format!("zpulse_vdev_total_wait_seconds_bucket{{{l},le=\"0.000000004\"}} 3"),
            format!("zpulse_vdev_total_wait_seconds_bucket{{{l},le=\"0.000000008\"}} 8"),
            format!("zpulse_vdev_total_wait_seconds_bucket{{{l},le=\"+Inf\"}} 9"),
        ]
    );
    // zpool iostat -l's midpoints 2^i + 2^i/2: 3·3 + 5·6 + 1·12 = 51 ns.
    assert_eq!(
        lines(e.text_str(), "zpulse_vdev_total_wait_seconds_sum"),
        [format!(
            "zpulse_vdev_total_wait_seconds_sum{{{l}}} 0.000000051"
        )]
    );
    assert_eq!(
        lines(e.text_str(), "zpulse_vdev_total_wait_seconds_count"),
        [format!("zpulse_vdev_total_wait_seconds_count{{{l}}} 9")]
    );
    // An empty histogram array (older module) is no histogram at all.
    assert!(lines(e.text_str(), "zpulse_vdev_disk_wait_seconds_bucket").is_empty());
    assert!(
        !e.text_str()
            .contains("# TYPE zpulse_vdev_disk_wait_seconds")
    );
}

#[test]
fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
    let mut zil = Kstat::default();
    zil.insert("zil_commit_count", KstatValue::Unsigned(42));
    let snap = Snapshot {
        zil: Some(zpulse_proto::snapshot::ZilStats(zil)),
        ..Snapshot::default()
    };
    let e = render(
        &snap,
        &[OpenFinding {
            check: "slog-usage".into(),
            subject: "tank/log/sde".into(),
            severity: "warning".into(),
        }],
        None,
    );
    assert!(
        e.text_str()
            .contains("# TYPE zpulse_zil_commit_total counter\nzpulse_zil_commit_total 42\n")
    );
    assert!(
        e.openmetrics()
            .contains("# TYPE zpulse_zil_commit counter\nzpulse_zil_commit_total 42\n")
    );
    assert!(e.openmetrics().ends_with("\n# EOF\n"));
    assert!(!e.text_str().contains("# EOF"));
    assert!(e.text_str().contains(
        r#"zpulse_finding{check="slog-usage",subject="tank/log/sde",severity="warning"} 1"#
    ));
}

#[test]
fn arc_rows_are_typed_by_what_they_count() {
    assert!(matches!(arc_row("size").kind, Type::Gauge));
    assert_eq!(arc_row("size").name, "zpulse_arc_size_bytes");
    assert_eq!(arc_row("c_max").name, "zpulse_arc_c_max_bytes");
    assert_eq!(
        arc_row("memory_all_bytes").name,
        "zpulse_arc_memory_all_bytes"
    );
    assert_eq!(
        arc_row("mfu_evictable_data").name,
        "zpulse_arc_mfu_evictable_data_bytes"
    );
    assert_eq!(arc_row("hits").name, "zpulse_arc_hits_total");
    assert!(matches!(arc_row("hits").kind, Type::Counter));
    assert_eq!(
        arc_row("memory_throttle_count").name,
        "zpulse_arc_memory_throttle_total"
    );
    assert_eq!(
        arc_row("l2_read_bytes").name,
        "zpulse_arc_l2_read_bytes_total"
    );
    assert_eq!(arc_row("hash_elements").name, "zpulse_arc_hash_elements");
    assert_eq!(arc_row("l2_log_blk_count").name, "zpulse_arc_l2_log_blks");
}

#[test]
fn integers_are_written_in_decimal() {
    for (v, text) in [
        (0u64, "0"),
        (7, "7"),
        (9, "9"),
        (10, "10"),
        (99, "99"),
        (100, "100"),
        (999_999_999_999, "999999999999"),
        (10_000_000_000_000_000_000, "10000000000000000000"),
        (u64::MAX, "18446744073709551615"),
    ] {
        let mut s = Vec::new();
        Value::Int(v).write(&mut s);
        assert_eq!(s, text.as_bytes());
    }
    let mut s = Vec::new();
    Value::Signed(i64::MIN).write(&mut s);
    assert_eq!(s, b"-9223372036854775808");
}

/// The Forward metric record holds exactly the exposition's series of a lab capture: same
/// names, labels and values (the findings and the agent's health aside, which travel as
/// events).
#[test]
fn the_forward_record_holds_the_exposition_series() {
    use zpulse_forward::series::{Number, SeriesRecord};
    for (capture, detail, at_least) in [
        ("storm/series/000", Detail::Full, 2000),
        ("vdevs/rz-zpulse/000", Detail::Full, 2000),
        ("vdevs/rz-zpulse/000", Detail::Standard, 500),
    ] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/lab")
            .join(capture);
        let snap = crate::capture::load(&dir).unwrap();
        let e = render_at(detail, &snap, &[], None);
        let want: Vec<&str> = e
            .text_str()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect();
        let record = SeriesRecord::decode(&RecordRenderer::new(detail).record(&snap, "h")).unwrap();
        assert_eq!(record.host, "h");
        let got: Vec<String> = record
            .series
            .iter()
            .map(|s| {
                let labels: Vec<(&str, &str)> = s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let mut line = s.name.clone().into_bytes();
                if write_labels(&mut line, &labels, false) {
                    line.push(b'}');
                }
                line.push(b' ');
                match s.value {
                    Number::Unsigned(v) => Value::Int(v),
                    Number::Signed(v) => Value::Signed(v),
                    Number::Float(v) => Value::Float(v),
                }
                .write(&mut line);
                String::from_utf8(line).unwrap()
            })
            .collect();
        assert!(want.len() > at_least, "{capture}: {} series", want.len());
        assert_eq!(got, want, "{capture}");
    }
}

fn lab(capture: &str) -> Snapshot {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/lab")
        .join(capture);
    crate::capture::load(&dir).unwrap()
}

/// What a renderer keeps from one reading to the next never shows in the next: over readings
/// whose disks, vdevs, pools, kstat rows, findings and label values change, each rendering of
/// a kept renderer is byte for byte the fresh rendering of the same reading (and the same for
/// the Forward record), and shows what changed.
#[test]
fn a_kept_renderer_renders_each_reading_as_a_fresh_one() {
    let base = lab("vdevs/rz-zpulse/000");
    let pool = base.pools[0].name.clone();
    fn first_leaf(s: &mut Snapshot) -> &mut Vdev {
        let root = &mut s.pools[0].config.as_mut().unwrap().root;
        root.children
            .iter_mut()
            .find(|top| !top.children.is_empty())
            .map(|top| &mut top.children[0])
            .unwrap()
    }
    let old_leaf = first_leaf(&mut base.clone()).name.clone();
    let finding = |severity: &str| OpenFinding {
        check: "hdd-saturation".into(),
        subject: format!("{pool}/{old_leaf}"),
        severity: severity.into(),
    };
    let agent = AgentHealth {
        samples: Some(3),
        sinks: vec![SinkHealth {
            name: "prometheus 127.0.0.1:9134".into(),
            delivered: Some(5),
            ..SinkHealth::default()
        }],
        ..AgentHealth::default()
    };

    // 1: as captured.
    let mut readings = vec![(base.clone(), vec![])];
    // 2: a disk more (the first one's counters under a new name), a finding raised.
    let mut s = base.clone();
    let mut disk = s.disks[0].clone();
    disk.name = "sdnew".into();
    s.disks.insert(1, disk);
    readings.push((s, vec![finding("warning")]));
    // 3: that disk gone, a leaf renamed (replaced), a top-level vdev degraded, the finding
    // critical.
    let mut s = base.clone();
    first_leaf(&mut s).name = "renamed-leaf".into();
    s.pools[0].config.as_mut().unwrap().root.children[0].state = Some("DEGRADED".into());
    readings.push((s, vec![finding("critical")]));
    // 4: the pool exported, the finding cleared.
    let mut s = base.clone();
    s.pools.clear();
    for d in &mut s.disks {
        d.roles.clear();
    }
    readings.push((s, vec![]));
    // 5: the pool back with a dataset whose name needs escaping; an ARC row gone, a new one.
    let mut s = base.clone();
    let mut counters = Kstat::default();
    counters.insert("writes", KstatValue::Unsigned(7));
    s.pools[0].datasets.push(DatasetKstats {
        objset: "0x36".into(),
        name: Some(format!("{pool}/a \"b\"\\c\nd")),
        counters,
    });
    let arc = &mut s.arc.as_mut().unwrap().0.fields;
    let gone = arc.keys().nth(3).unwrap().clone();
    arc.remove(&gone);
    arc.insert("zz_new_row".into(), KstatValue::Unsigned(11));
    readings.push((s, vec![]));
    // 6: as captured again.
    readings.push((base.clone(), vec![]));

    let mut renderer = Renderer::default();
    let mut records = RecordRenderer::default();
    for (i, (snap, findings)) in readings.iter().enumerate() {
        let kept = renderer.render(snap, findings, Some(&agent));
        let fresh = render(snap, findings, Some(&agent));
        assert!(
            kept == fresh,
            "reading {}: the kept rendering differs",
            i + 1
        );
        assert_eq!(kept.openmetrics(), fresh.openmetrics());
        assert!(
            records.record(snap, "h") == series_record(snap, "h"),
            "reading {}: the kept record differs",
            i + 1
        );
    }
    // Each change shows in the reading that has it, and not in the one after.
    let text = |i: usize| {
        let (snap, findings) = &readings[i];
        render(snap, findings, Some(&agent)).text_str().to_owned()
    };
    assert!(text(1).contains(r#"disk="sdnew""#));
    assert!(!text(2).contains(r#"disk="sdnew""#));
    assert!(text(1).contains(&format!(r#"leaf="{old_leaf}""#)));
    assert!(text(2).contains(r#"leaf="renamed-leaf""#));
    assert!(!text(2).contains(&format!(r#"leaf="{old_leaf}""#)));
    assert!(text(2).contains(r#"severity="critical""#));
    assert!(!text(3).contains(&format!(r#"pool="{pool}""#)));
    assert!(!text(3).contains("zpulse_finding{"));
    let escaped = format!(r#"dataset="{pool}/a \"b\"\\c\nd""#);
    assert!(text(4).contains(&escaped), "{escaped}");
    assert!(text(4).contains("zpulse_arc_zz_new_row_total 11\n"));
    assert!(!text(4).contains(&format!("{} ", arc_row(&gone).name)));
    assert!(text(5).contains(&format!("{} ", arc_row(&gone).name)));
}

/// OpenMetrics names a counter family without the `_total` of its samples (OpenMetrics 1.0,
/// "Counter") and ends with `# EOF`; everything else is the text format's. The pieces the
/// server sends are that, derived here line by line from the text.
#[test]
fn openmetrics_is_the_text_with_counter_families_named_without_total() {
    for capture in ["storm/series/000", "vdevs/rz-zpulse/000", "basic/001"] {
        let e = render(&lab(capture), &[], None);
        let lines: Vec<&str> = e.text_str().lines().collect();
        let mut want = String::new();
        let mut counters = 0;
        for (i, line) in lines.iter().enumerate() {
            // A family's HELP line is followed by its TYPE line.
            let type_line = if line.starts_with("# HELP ") {
                lines[i + 1]
            } else {
                line
            };
            let is_counter = type_line.starts_with("# TYPE ") && type_line.ends_with(" counter");
            match line.split_once(' ').map(|(_, rest)| rest.split_once(' ')) {
                Some(Some((kw, rest))) if is_counter && (kw == "HELP" || kw == "TYPE") => {
                    let (name, tail) = rest.split_once(' ').unwrap();
                    let name = name.strip_suffix("_total").unwrap_or(name);
                    counters += usize::from(kw == "TYPE");
                    want.push_str(&format!("# {kw} {name} {tail}\n"));
                }
                _ => {
                    want.push_str(line);
                    want.push('\n');
                }
            }
        }
        want.push_str("# EOF\n");
        assert!(counters > 50, "{capture}: {counters} counter families");
        assert_eq!(e.openmetrics(), want, "{capture}");
        assert_eq!(e.openmetrics_len(), want.len());
    }
}

/// `units / 10^k` is written as `{}` writes the f64 of that quotient, on both sides of the
/// bound below which it is written without float formatting.
#[test]
fn decimal_quotients_are_written_as_their_float_would_be() {
    let check = |units: u64, decimals: u8| {
        let mut got = Vec::new();
        Value::decimal(units, decimals).write(&mut got);
        let want = format!("{}", units as f64 / POWERS_OF_TEN[usize::from(decimals)]);
        assert_eq!(
            String::from_utf8(got).unwrap(),
            want,
            "{units} / 10^{decimals}"
        );
    };
    for decimals in [2u8, 3, 9] {
        let bound = DECIMAL_FAST_BELOW[usize::from(decimals)];
        for units in (0..2000).chain(bound - 2000..bound + 2000) {
            check(units, decimals);
        }
        // Spread over the whole range, by a fixed pseudo-random walk.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(x % (2 * bound), decimals);
            check(x >> (x % 64), decimals);
        }
    }
    check(u64::MAX, 9);
}

/// The standard detail sums the kernel's buckets into every second power of two from 2^13 ns
/// to 2^33 ns, shows top-level vdevs' histograms but not leaves', and no empty histogram.
#[test]
fn standard_histograms_sum_kernel_buckets_of_top_level_vdevs_with_io() {
    // 37 kernel buckets (VDEV_L_HISTO_BUCKETS): bucket i counts [2^i, 2^(i+1)) ns, the last
    // one also everything longer.
    let mut total_w = vec![0u64; 37];
    total_w[12] = 1; // [4.1, 8.2) µs: at or below 2^13 ns
    total_w[13] = 2; // [8.2, 16.4) µs: below 2^15 ns
    total_w[20] = 4; // [1.05, 2.10) ms: below 2^21 ns
    total_w[36] = 8; // 68.7 s and longer: +Inf only
    let mut pool = pool_with_histogram(total_w.clone());
    let top = &mut pool.config.as_mut().unwrap().root.children[0];
    top.stats = Some(VdevStats::default());
    top.histograms = Some(LatencyHistograms {
        total_w,
        // No I/O: an empty series, left out.
        disk_w: vec![0; 37],
        ..LatencyHistograms::default()
    });
    let snap = Snapshot {
        pools: vec![pool],
        ..Snapshot::default()
    };
    let e = render(&snap, &[], None);
    let l = r#"pool="tank",class="normal",vdev="mirror-0",op="write""#;
    let bounds = [
        ("0.000008192", 1),
        ("0.000032768", 3),
        ("0.000131072", 3),
        ("0.000524288", 3),
        ("0.002097152", 7),
        ("0.008388608", 7),
        ("0.033554432", 7),
        ("0.134217728", 7),
        ("0.536870912", 7),
        ("2.147483648", 7),
        ("8.589934592", 7),
        ("+Inf", 15),
    ];
    let want: Vec<String> = bounds
        .iter()
        .map(|(le, n)| format!("zpulse_vdev_total_wait_seconds_bucket{{{l},le=\"{le}\"}} {n}"))
        .collect();
    assert_eq!(
        lines(e.text_str(), "zpulse_vdev_total_wait_seconds_bucket"),
        want
    );
    assert_eq!(
        lines(e.text_str(), "zpulse_vdev_total_wait_seconds_count"),
        [format!("zpulse_vdev_total_wait_seconds_count{{{l}}} 15")]
    );
    // The sum is the kernel buckets' midpoints (2^i · 1.5 ns), not the standard bounds'.
    let sum_ns: u128 = [(12, 1u128), (13, 2), (20, 4), (36, 8)]
        .iter()
        .map(|&(i, n)| n * 3 * (1u128 << i) / 2)
        .sum();
    assert_eq!(
        lines(e.text_str(), "zpulse_vdev_total_wait_seconds_sum"),
        [format!(
            "zpulse_vdev_total_wait_seconds_sum{{{l}}} {}",
            sum_ns as f64 / 1e9
        )]
    );
    assert!(!e.text_str().contains("zpulse_vdev_disk_wait_seconds"));
    // The leaf's histogram waits for `leaves`, and comes in the same buckets then.
    assert!(
        lines(e.text_str(), "zpulse_vdev_total_wait_seconds_bucket")
            .iter()
            .all(|line| !line.contains(r#"leaf="sda""#))
    );
    let leaves = render_at(Detail::Leaves, &snap, &[], None);
    let leaf_buckets: Vec<String> =
        lines(leaves.text_str(), "zpulse_vdev_total_wait_seconds_bucket")
            .into_iter()
            .filter(|line| line.contains(r#"leaf="sda""#))
            .collect();
    assert_eq!(leaf_buckets.len(), bounds.len());
    assert!(
        leaf_buckets[11].ends_with(r#"le="+Inf"} 15"#),
        "{leaf_buckets:?}"
    );
}

/// FreeBSD's kern.cp_time counts stathz ticks: with kern.clockrate's stathz the CPU family is
/// in seconds like Linux's (ticks / stathz), without it in ticks under its own name.
#[test]
fn freebsd_cpu_ticks_become_seconds_with_stathz() {
    let mut snap = Snapshot::default();
    snap.host.os = Os::Freebsd;
    snap.cpu = Some(zpulse_proto::snapshot::CpuTimes {
        user: 254,
        idle: 1270,
        irq: Some(0),
        ticks_per_second: Some(127),
        ..Default::default()
    });
    let e = render(&snap, &[], None);
    let cpu = lines(e.text_str(), "zpulse_host_cpu_seconds_total");
    assert!(
        cpu.contains(&r#"zpulse_host_cpu_seconds_total{mode="user"} 2"#.to_string()),
        "{cpu:?}"
    );
    assert!(cpu.contains(&r#"zpulse_host_cpu_seconds_total{mode="idle"} 10"#.to_string()));
    assert!(!e.text_str().contains("zpulse_host_cpu_ticks_total"));
    snap.cpu.as_mut().unwrap().ticks_per_second = None;
    let e = render(&snap, &[], None);
    assert!(
        lines(e.text_str(), "zpulse_host_cpu_ticks_total")
            .contains(&r#"zpulse_host_cpu_ticks_total{mode="user"} 254"#.to_string())
    );
}
