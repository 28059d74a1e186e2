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
    let e = render(&snap, &[], None);
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
    assert!(!e.text_str().contains("# TYPE zpulse_vdev_disk_wait_seconds"));
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
        (10, "10"),
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
    for capture in ["storm/series/000", "vdevs/rz-zpulse/000"] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/lab")
            .join(capture);
        let snap = crate::capture::load(&dir).unwrap();
        let e = render(&snap, &[], None);
        let want: Vec<&str> = e
            .text_str()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect();
        let record = SeriesRecord::decode(&series_record(&snap, "h")).unwrap();
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
                if write_labels(&mut line, &labels) {
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
        assert!(want.len() > 2000, "{capture}: {} series", want.len());
        assert_eq!(got, want, "{capture}");
    }
}
