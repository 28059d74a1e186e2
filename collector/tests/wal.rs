//! The write-ahead log stays bounded under a load that never pauses (`max_wal_bytes`), and a
//! reader that keeps a transaction open on it neither stalls the acks nor keeps it from being
//! bounded once it lets go.
//!
//! Without the writer's restarts, SQLite's WAL grew for as long as the load lasted: its
//! checkpoints beside the writer never caught up, and SQLite starts a WAL again only when a
//! transaction begins with every frame copied (the load bench: 5.3 GiB of WAL beside a
//! 472 MiB database after 31 s, and the rate fell from 200k to 77k events/s).

mod common;

use common::*;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zpulse_forward::{ChunkId, Compression, Entries, ServerMessage};
use zpulse_proto::event::EventTime;

const MIB: u64 = 1 << 20;
const SENDERS: usize = 4;

/// Watches the WAL's size until dropped; `largest()` is the most it has been.
struct WalWatch {
    largest: Arc<AtomicU64>,
    running: Arc<AtomicBool>,
}

impl WalWatch {
    fn start(db: &Path) -> WalWatch {
        let (largest, running) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(true)));
        let (l, r, wal) = (largest.clone(), running.clone(), wal_path(db));
        std::thread::spawn(move || {
            while r.load(Ordering::Relaxed) {
                let now = std::fs::metadata(&wal).map_or(0, |m| m.len());
                l.fetch_max(now, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        WalWatch { largest, running }
    }

    fn largest(&self) -> u64 {
        self.largest.load(Ordering::Relaxed)
    }
}

impl Drop for WalWatch {
    fn drop(&mut self) {
        self.running.store(false, Ordering::Relaxed);
    }
}

/// `batches` batches of 100 metric events from each of [`SENDERS`] hosts at once, each acked
/// before the next; the slowest ack.
fn load(addr: std::net::SocketAddr, round: u8, batches: u64) -> Duration {
    let senders: Vec<_> = (0..SENDERS)
        .map(|n| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut slowest = Duration::ZERO;
                for b in 0..batches {
                    let mut entries = Entries::new();
                    for i in 0..100u64 {
                        let k = b * 100 + i;
                        let e = metrics(&format!("host{n}"), "disk", "sda", "busy_pct", k as f64);
                        entries.push_event(
                            EventTime {
                                seconds: 1_900_000_000 + k as u32,
                                nanos: 0,
                            },
                            &e,
                        );
                    }
                    let mut id = [round; 16];
                    id[1] = n as u8;
                    id[8..].copy_from_slice(&b.to_le_bytes());
                    let chunk = ChunkId(id).to_base64();
                    let msg =
                        entries.packed_forward("zpulse.metrics", Some(&chunk), Compression::None);
                    let sent = Instant::now();
                    c.send(&msg).unwrap();
                    assert_eq!(c.recv(), Some(ServerMessage::Ack(chunk)));
                    slowest = slowest.max(sent.elapsed());
                }
                slowest
            })
        })
        .collect();
    senders
        .into_iter()
        .map(|s| s.join().unwrap())
        .max()
        .unwrap()
}

/// The same load with the WAL bounded and unbounded: unbounded it grows to many times the
/// bound; bounded it stays within the bound and one transaction's pages.
#[test]
fn the_wal_stays_bounded_under_a_load_that_never_pauses() {
    let unbounded = start(|c| c.max_wal_bytes = u64::MAX);
    let watch = WalWatch::start(&unbounded.db);
    load(unbounded.server.addr, 1, 60);
    let grown = watch.largest();
    assert_eq!(unbounded.server.stats.snapshot()["wal_restarts"], 0);
    drop(watch);
    unbounded.server.stop();

    let bounded = start(|c| c.max_wal_bytes = MIB);
    let watch = WalWatch::start(&bounded.db);
    load(bounded.server.addr, 1, 60);
    let largest = watch.largest();
    let stats = bounded.server.stats.snapshot();
    bounded.server.stop();
    assert!(
        grown > 8 * MIB,
        "the load grows an unbounded WAL well past the bound: {grown} bytes"
    );
    assert!(
        largest <= 3 * MIB,
        "bounded to 1 MiB, the WAL reached {largest} bytes (unbounded: {grown})"
    );
    assert!(stats["wal_restarts"] > 0);
    assert_eq!(stats["wal_restarts_failed"], 0);
    let stored = zpulse_collector::store::Store::open_read_only(&bounded.db)
        .unwrap()
        .counts()
        .unwrap()
        .0;
    assert_eq!(
        stored,
        SENDERS as i64 * 60 * 100,
        "every acked event stored"
    );
}

/// A local reader that opens a transaction on the database and keeps it (an `sqlite3` shell
/// left in one) keeps the WAL from being started again, but costs the writer one wait of at
/// most half a second per `max_wal_bytes` of WAL, not one per commit: acks go on. Once it lets
/// go, the next restart bounds the WAL again.
#[test]
fn a_reader_holding_the_wal_neither_stalls_acks_nor_keeps_it_unbounded_after() {
    let running = start(|c| c.max_wal_bytes = MIB);
    let addr = running.server.addr;
    load(addr, 1, 5);
    let reader = read_only(&running.db);
    reader.execute_batch("BEGIN").unwrap();
    let before: i64 = reader
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(before, SENDERS as i64 * 500);

    let held_watch = WalWatch::start(&running.db);
    let slowest = load(addr, 2, 40);
    let held = running.server.stats.snapshot();
    let grown = held_watch.largest();
    drop(held_watch);
    assert!(held["wal_restarts_failed"] > 0, "{held:?}");
    // Each failed restart waits 500 ms: one a MiB of WAL, not one a commit (40 × 4 batches,
    // grouped into some tens of transactions).
    assert!(
        held["wal_restarts_failed"] <= grown / MIB + 1,
        "a restart was tried too often while the reader held the WAL ({grown} bytes): \
         {held:?}"
    );
    assert!(
        slowest < Duration::from_secs(3),
        "an ack waited {slowest:?} while the reader held the WAL"
    );
    // The reader still sees the database as it was when its transaction began.
    let still: i64 = reader
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(still, before);
    drop(reader);

    let watch = WalWatch::start(&running.db);
    let large = std::fs::metadata(wal_path(&running.db)).unwrap().len();
    load(addr, 3, 40);
    let after = running.server.stats.snapshot();
    assert!(after["wal_restarts"] - after["wal_restarts_failed"] > 0);
    let now = std::fs::metadata(wal_path(&running.db)).unwrap().len();
    assert!(
        now <= 3 * MIB && now < large,
        "the WAL was {large} bytes when the reader let go and is {now} after more load \
         (largest {})",
        watch.largest()
    );
    running.server.stop();
}
