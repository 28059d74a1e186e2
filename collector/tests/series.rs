//! Metric records (`zpulse.series`) into the server in-process: stored as the figures'
//! time series, resent ones once, hostile ones kept as foreign records (nothing lost, no
//! panic), and a client key writes series only for its own hosts.

mod common;

use common::*;
use zpulse_collector::config::Client as ClientKey;
use zpulse_collector::store::{Filter, Store};
use zpulse_forward::encode;
use zpulse_forward::series::{Number, SeriesType, SeriesWriter, TAG};

fn record(host: &str, size: u64, busy: f64) -> Vec<u8> {
    let mut w = SeriesWriter::new(host, 0);
    w.series(
        "zpulse_arc_size_bytes",
        SeriesType::Gauge,
        &[],
        Number::Unsigned(size),
    );
    w.series(
        "zpulse_disk_io_time_seconds_total",
        SeriesType::Counter,
        &[("disk", "sda")],
        Number::Float(busy),
    );
    w.finish()
}

fn foreign(r: &Running) -> usize {
    Store::open_read_only(&r.db)
        .unwrap()
        .events(&Filter {
            limit: 1000,
            ..Filter::default()
        })
        .unwrap()
        .iter()
        .filter(|e| e.kind == "foreign")
        .count()
}

#[test]
fn records_become_points_and_hostile_ones_are_kept_as_foreign() {
    let r = start(|_| {});
    let mut c = Client::connect(r.server.addr);
    // 1,800,000,000 is a minute boundary (30,000,000 minutes).
    let (m0, m1) = (1_800_000_000u32, 1_800_000_060u32);
    c.send_record_acked(TAG, t(m0), &record("nas1", 1000, 10.0), 1);
    c.send_record_acked(TAG, t(m1 + 30), &record("nas1", 2000, 25.0), 2);
    // A resend (same chunk) is acked and not applied twice.
    c.send_record_acked(TAG, t(m1 + 30), &record("nas1", 2000, 25.0), 2);
    let store = Store::open_read_only(&r.db).unwrap();
    let p = store.series_points("nas1", 0, 4_000_000_000).unwrap();
    assert_eq!(
        p["arc_size"],
        vec![(i64::from(m0), 1000.0), (i64::from(m1), 2000.0)]
    );
    // (25 - 10) s busy over 90 s.
    assert_eq!(
        p["disk_util:sda"],
        vec![(i64::from(m1), f64::from((15.0f64 / 90.0) as f32))]
    );

    // Hostile records, well-formed MessagePack (a record that is not would break the
    // Forward framing itself, which tests/attacks.rs covers; the cut-short and the 2^32-count
    // record are decoded directly in forward/src/series.rs): no host, a version from the
    // future, a type that does not exist, groups that are text. Each is acked and kept as foreign.
    let good = record("nas1", 1, 1.0);
    let mut future = good.clone();
    future[3] = 9;
    let needle = b"gauge";
    let at = good.windows(5).position(|w| w == needle).unwrap();
    let mut bad_type = good.clone();
    bad_type[at..at + 5].copy_from_slice(b"gauzz");
    let mut groups_text = vec![0x83, 0xa1, b'v', 0x01, 0xa4];
    groups_text.extend_from_slice(b"host");
    groups_text.extend_from_slice(&[0xa1, b'h', 0xa6]);
    groups_text.extend_from_slice(b"groups");
    groups_text.extend_from_slice(&[0xa2, b'n', b'o']);
    let hostile = [vec![0x81, 0xa1, b'v', 0x01], future, bad_type, groups_text];
    for (i, bad) in hostile.iter().enumerate() {
        c.send(&encode::message(
            TAG,
            now_t(),
            bad,
            Some(&chunk(10 + i as u8)),
        ))
        .unwrap();
        assert_eq!(c.ack(), Some(chunk(10 + i as u8)), "hostile record {i}");
    }
    assert_eq!(foreign(&r), hostile.len());
    // The connection still works.
    c.send_record_acked(TAG, t(m1 + 40), &record("nas1", 3000, 26.0), 20);
}

#[test]
fn a_client_key_writes_series_only_for_its_hosts() {
    let r = start(|c| {
        c.clients.insert(
            "nas1".into(),
            ClientKey {
                key: "nas1-key".into(),
                hosts: vec!["nas1".into()],
            },
        );
    });
    let mut c = Client::connect(r.server.addr);
    c.handshake("nas1", "nas1-key").unwrap();
    for (i, host) in ["nas1", "nas2"].iter().enumerate() {
        c.send_record_acked(TAG, t(1_800_000_000), &record(host, 7, 1.0), i as u8);
    }
    let store = Store::open_read_only(&r.db).unwrap();
    assert!(
        store
            .series_points("nas1", 0, 4_000_000_000)
            .unwrap()
            .contains_key("arc_size")
    );
    assert!(
        store
            .series_points("nas2", 0, 4_000_000_000)
            .unwrap()
            .is_empty()
    );
}

/// The disk charts show the pools' disks: a lab capture (a VM with a pool on some of its
/// disks and others idle), its metric record as the agent makes it, read as the collector
/// reads it — the disks charted are exactly those the snapshot says serve a pool.
#[test]
fn disk_charts_keep_the_disks_a_pool_uses() {
    let capture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab/basic/000");
    let snap = zpulse_agent::capture::load(&capture).unwrap();
    let record = zpulse_agent::sinks::prometheus::exposition::series_record(&snap, "lab");
    let record = zpulse_forward::series::SeriesRecord::decode(&record).unwrap();
    let reading = zpulse_collector::timeseries::Reading::from_record(&record, "lab", 0);
    let charted: std::collections::BTreeSet<String> = reading
        .counters
        .keys()
        .filter_map(|k| k.strip_prefix("busy:"))
        .map(str::to_owned)
        .collect();
    let in_pools: std::collections::BTreeSet<String> = snap
        .disks
        .iter()
        .filter(|d| !d.roles.is_empty())
        .map(|d| d.name.clone())
        .collect();
    assert!(!in_pools.is_empty());
    assert!(
        snap.disks.len() > in_pools.len(),
        "the capture must have disks outside the pools"
    );
    assert_eq!(charted, in_pools);
}
