//! Time-series benchmark (not a timed test): a month of one-minute points for 100 hosts
//! (23 figures each: 2 pools, ARC size/c_max/hit ratio, 8 disks' util and await, 2 vdev
//! classes), then the host page's chart query and rendering timed for every host, and the
//! write path (one metric record's figures) timed over a day of one host's records.
//!
//!   cargo bench -p zpulse-collector --bench series
//!   ZPULSE_BENCH_HOSTS=100 ZPULSE_BENCH_DAYS=31 cargo bench -p zpulse-collector --bench series
//!
//! Under `cargo test` it runs 3 hosts × 2 days as a smoke test.

use rusqlite::params;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use zpulse_collector::store::{Batch, Store};
use zpulse_collector::timeseries::Reading;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn figures() -> Vec<String> {
    let mut f: Vec<String> = ["arc_size", "arc_size:c_max", "arc_hit_ratio"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for p in ["tank", "fast"] {
        f.push(format!("pool_fill:{p}"));
        f.push(format!("vdev_latency:{p}/normal"));
    }
    for d in 0..8 {
        f.push(format!("disk_util:sd{}", (b'a' + d) as char));
        f.push(format!("disk_await:sd{}", (b'a' + d) as char));
    }
    f
}

fn stats(mut v: Vec<Duration>) -> String {
    v.sort();
    format!(
        "median {:.2} ms, p95 {:.2} ms, worst {:.2} ms",
        v[v.len() / 2].as_secs_f64() * 1e3,
        v[v.len() * 95 / 100].as_secs_f64() * 1e3,
        v[v.len() - 1].as_secs_f64() * 1e3
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // Under `cargo test` (no `--bench`): a smoke run of the same code, not a measurement.
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let hosts = env("ZPULSE_BENCH_HOSTS", if benchmarking { 100 } else { 3 });
    let days = env("ZPULSE_BENCH_DAYS", if benchmarking { 31 } else { 2 }) as i64;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("series.db");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let today = now.div_euclid(86_400);
    drop(Store::open(&db).unwrap());
    let t0 = Instant::now();
    let mut conn = rusqlite::Connection::open(&db).unwrap();
    let figures = figures();
    let tx = conn.transaction().unwrap();
    for h in 0..hosts {
        let host = format!("nas{h:03}");
        for (i, figure) in figures.iter().enumerate() {
            for day in today - days + 1..=today {
                let data: Vec<u8> = (0..1440)
                    .flat_map(|m| (((m + i + h) % 97) as f32 / 97.0).to_le_bytes())
                    .collect();
                tx.execute(
                    "INSERT INTO series(host, figure, day, updated, data) VALUES (?1,?2,?3,?4,?5)",
                    params![host, figure, day, now, data],
                )
                .unwrap();
            }
        }
        tx.execute(
            "INSERT INTO series_state(host, latest_ts, latest) VALUES (?1, ?2, '{}')",
            params![host, now * 1_000_000_000],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    drop(conn);
    let size = std::fs::metadata(&db).unwrap().len();
    println!(
        "filled {hosts} hosts x {} figures x {days} days of 1-minute points in {:.1} s: {:.0} MB",
        figures.len(),
        t0.elapsed().as_secs_f64(),
        size as f64 / 1e6
    );

    let mut store = Store::open(&db).unwrap();
    let mut query = Vec::new();
    let mut page = Vec::new();
    let mut points = 0;
    for h in 0..hosts {
        let host = format!("nas{h:03}");
        let t = Instant::now();
        let p = store.series_points(&host, now - 86_400, now).unwrap();
        query.push(t.elapsed());
        points += p.values().map(Vec::len).sum::<usize>();
        let t = Instant::now();
        let html = zpulse_collector::charts::section(&store, &host, now)
            .unwrap()
            .unwrap();
        page.push(t.elapsed());
        assert!(html.contains("<svg"));
    }
    println!(
        "host page chart query (24 h, {} points/host): {}",
        points / hosts,
        stats(query)
    );
    println!("chart query + SVG rendering: {}", stats(page));

    // The write path: a day of one host's records, one a minute.
    let mut writes = Vec::new();
    for m in 0..if benchmarking { 1440i64 } else { 10 } {
        let mut counters = BTreeMap::new();
        let mut gauges = BTreeMap::new();
        gauges.insert("arc_size".to_string(), 1e9);
        gauges.insert("pool_fill:tank".to_string(), 0.5);
        counters.insert("arc_hits".to_string(), (m * 1000) as f64);
        counters.insert("arc_misses".to_string(), (m * 10) as f64);
        for d in 0..8 {
            counters.insert(format!("busy:sd{d}"), (m * 30) as f64);
            counters.insert(format!("ops:sd{d}"), (m * 600) as f64);
            counters.insert(format!("time:sd{d}"), (m * 3) as f64);
        }
        let batch = Batch {
            readings: vec![Reading {
                host: "writer".into(),
                ts: (now - 86_400 + m * 60) * 1_000_000_000,
                gauges,
                counters,
            }],
            ..Batch::default()
        };
        let t = Instant::now();
        store.store(&[batch], now).unwrap();
        writes.push(t.elapsed());
    }
    println!(
        "one metric record stored (its own transaction): {}",
        stats(writes)
    );
}
