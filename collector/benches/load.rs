//! Load benchmark (not a timed test): N concurrent senders × M events each into one collector
//! (in-process, a fresh SQLite database in a temp dir, `synchronous = FULL`), each sender
//! sending PackedForward batches and waiting for each ack, as the agent does.
//!
//!   cargo bench -p zpulse-collector --bench load
//!   ZPULSE_BENCH_SENDERS=64 ZPULSE_BENCH_EVENTS=5000 ZPULSE_BENCH_BATCH=100 \
//!   ZPULSE_BENCH_GZIP=1 cargo bench -p zpulse-collector --bench load
//!   ZPULSE_BENCH_EXPIRED=400000 cargo bench -p zpulse-collector --bench load
//!   ZPULSE_BENCH_OVER_CAP=800000 cargo bench -p zpulse-collector --bench load
//!
//! `ZPULSE_BENCH_EXPIRED=N`: the database holds N events that expired while the collector
//! was stopped (received two days ago, `retention.max_age` one day), so the writer's first
//! retention pass deletes them in steps while the load runs; the bench prints how many were
//! left when the last ack came.
//! `ZPULSE_BENCH_OVER_CAP=N`: the database holds N events received an hour ago (none
//! expired) and `retention.max_bytes` is half the pages they fill, as after an operator
//! lowered the cap and restarted: the first pass deletes the oldest events by size in steps
//! while the load runs; the bench prints how many of the N were left when the last ack came.
//! Prints events/s (stored and acked), the ack latency percentiles per batch, the WAL's
//! largest size and its restarts, and the load average at the start and the end (the figures
//! mean little on a machine that is busy with something else). 50,000 events a sender by
//! default: 800,000 in some four seconds, a sustained load whose WAL must be copied and
//! started again a dozen times (`max_wal_bytes`), not a burst that fits in it.

#[path = "../tests/common/mod.rs"]
mod common;

use common::env_usize as env;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use zpulse_collector::store::Store;
use zpulse_forward::{ChunkId, Compression, Entries, ServerMessage};
use zpulse_proto::event::{Event, EventTime, Severity, State};

fn main() {
    // `cargo test --benches` passes --bench-less args; run only under `cargo bench`.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let senders = env("ZPULSE_BENCH_SENDERS", 16);
    let events = env("ZPULSE_BENCH_EVENTS", 50_000);
    let batch = env("ZPULSE_BENCH_BATCH", 100).max(1);
    let gzip = env("ZPULSE_BENCH_GZIP", 0) == 1;
    let expired = env("ZPULSE_BENCH_EXPIRED", 0);
    let over_cap = env("ZPULSE_BENCH_OVER_CAP", 0);
    // The senders are other hosts in production: their messages are encoded before the
    // collector starts, so that the two cores this bench shares with the collector spend on
    // the collector what the senders' encoding took (18% of the run's instructions when each
    // batch was built in the timed loop), and the figure is the collector's; and so that a
    // first retention pass (`ZPULSE_BENCH_EXPIRED`) runs beside the load, not before it.
    let encoders: Vec<_> = (0..senders)
        .map(|n| std::thread::spawn(move || encoded_batches(n, events, batch, gzip)))
        .collect();
    let encoded: Vec<_> = encoders.into_iter().map(|h| h.join().unwrap()).collect();
    // Every sender connects before any has proven itself with a first message, and unproven
    // connections hold at most half the slots: room for all of them, twice over.
    let running = common::start(|c| {
        c.max_connections = 2 * senders + 8;
        if expired > 0 {
            c.retention.max_age = Some(Duration::from_secs(common::DAY as u64));
            common::store_expired(&c.db, expired, 1, i64::from(common::now_t().seconds));
        }
        if over_cap > 0 {
            let now = i64::from(common::now_t().seconds);
            common::store_received(&c.db, over_cap, 1, now - 3600);
            let used = Store::open(&c.db).unwrap().used_bytes().unwrap();
            c.retention.max_bytes = Some(used / 2);
        }
    });
    let (server, db) = (running.server, running.db);
    let addr = server.addr;
    let start = Arc::new(Barrier::new(senders + 1));
    let handles: Vec<_> = encoded
        .into_iter()
        .map(|messages| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let mut c = common::Client::connect(addr);
                c.s.set_nodelay(true).unwrap();
                let mut latencies = Vec::with_capacity(messages.len());
                start.wait();
                for (chunk, msg) in &messages {
                    let started = Instant::now();
                    c.send(msg).unwrap();
                    assert_eq!(c.recv(), Some(ServerMessage::Ack(chunk.clone())));
                    latencies.push(started.elapsed());
                }
                latencies
            })
        })
        .collect();
    start.wait();
    let load_before = common::load_average();
    let t0 = Instant::now();
    // The WAL's largest size while the load runs: checkpoints must keep up with the writer,
    // or the WAL grows for as long as the load lasts.
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let wal_watch = {
        let (running, wal) = (Arc::clone(&running), common::wal_path(&db));
        std::thread::spawn(move || {
            let mut largest = 0u64;
            while running.load(std::sync::atomic::Ordering::Relaxed) {
                largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
                std::thread::sleep(Duration::from_millis(20));
            }
            largest
        })
    };
    let mut lat: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let elapsed = t0.elapsed();
    let old_at_end = events_up_to(&db, expired + over_cap);
    running.store(false, std::sync::atomic::Ordering::Relaxed);
    let wal_largest = wal_watch.join().unwrap();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1];
    let stats = server.stats.snapshot();
    server.stop();
    let total = senders * events;
    let stored = Store::open_read_only(&db).unwrap().counts().unwrap().0 as usize;
    // No pass runs at stop: what is stored now beyond the acked events is the old ones the
    // first pass had not reached. The events stored before the load have the lowest ids, so
    // retention by size takes every one of them before an acked one.
    let old = events_up_to(&db, expired + over_cap);
    assert!(
        stored == total + old || (old == 0 && stored <= total && over_cap > 0),
        "every acked event stored once, the old ones deleted first ({stored} stored, \
         {total} acked, {old} of {} old left)",
        expired + over_cap
    );
    let retention = match (expired, over_cap) {
        (0, 0) => String::new(),
        (n, 0) => format!(
            "; the first retention pass beside the load: {old_at_end} of {n} expired events \
             left at the last ack ({old} at stop)"
        ),
        (_, n) => format!(
            "; the first retention pass beside the load, by size: {old_at_end} of {n} events \
             left at the last ack ({old} at stop, {} acked ones deleted)",
            total.saturating_sub(stored - old)
        ),
    };
    println!(
        "load: {senders} senders × {events} events, batches of {batch}{}: {total} events in \
         {:.2} s = {:.0} events/s; ack latency per batch p50 {:.1} ms, p99 {:.1} ms, \
         max {:.1} ms; {} batches; db {:.1} MiB, WAL at most {:.1} MiB ({} restarts, {} \
         kept from it by a reader){retention}; {} CPUs, load average {} at the start, {} \
         at the end",
        if gzip { " (gzip)" } else { "" },
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        lat.last().unwrap().as_secs_f64() * 1e3,
        stats["batches"],
        std::fs::metadata(&db).map_or(0, |m| m.len()) as f64 / (1 << 20) as f64,
        wal_largest as f64 / (1 << 20) as f64,
        stats["wal_restarts"],
        stats["wal_restarts_failed"],
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before,
        common::load_average()
    );
}

/// Sender `n`'s `events` as PackedForward messages of `batch` events, each with its chunk id:
/// one finding in ten (an update of a saturated mirror), the rest disk metrics.
fn encoded_batches(n: usize, events: usize, batch: usize, gzip: bool) -> Vec<(String, Vec<u8>)> {
    let host = format!("host{n:03}");
    let mut messages = Vec::with_capacity(events / batch + 1);
    let mut sent = 0;
    let mut seq = 0u64;
    while sent < events {
        let mut entries = Entries::new();
        for i in 0..batch.min(events - sent) {
            let k = (sent + i) as u32;
            let mut e = if k.is_multiple_of(10) {
                Event::finding(
                    "hdd-saturation",
                    State::Updated,
                    Severity::Warning,
                    format!("tank/mirror-{}", k % 7),
                    "The HDD mirror was saturated in 16% of the last 90 samples",
                )
                .with("saturated_share_pct", 16.0)
            } else {
                Event::metrics("disk", format!("sd{}", k % 12), "disk figures")
                    .with("busy_pct", f64::from(k % 100))
                    .with("read_iops", k)
                    .with("write_bytes_s", 8_500_000u64)
            };
            e.host = host.clone();
            entries.push_event(
                EventTime {
                    seconds: 1_900_000_000 + k,
                    nanos: 0,
                },
                &e,
            );
        }
        seq += 1;
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&(n as u64).to_le_bytes());
        id[8..].copy_from_slice(&seq.to_le_bytes());
        let chunk = ChunkId(id).to_base64();
        let msg = entries.packed_forward(
            "zpulse.metrics",
            Some(&chunk),
            if gzip {
                Compression::Gzip
            } else {
                Compression::None
            },
        );
        sent += entries.len();
        messages.push((chunk, msg));
    }
    messages
}

/// How many events of the database at `db` have an id up to `last`: those stored before the
/// load.
fn events_up_to(db: &std::path::Path, last: usize) -> usize {
    common::read_only(db)
        .query_row(
            "SELECT count(*) FROM events WHERE id <= ?1",
            [last as i64],
            |r| r.get::<_, i64>(0),
        )
        .unwrap() as usize
}
