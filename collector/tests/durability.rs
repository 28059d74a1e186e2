//! Durability: `kill -9` the collector (the real binary, a child of this test) while a client
//! streams acked batches, restart it on the same database, several times. The client behaves
//! as the agent does: it resends a batch (same chunk id) until it is acked. In the end every
//! event is stored exactly once: nothing acked is lost, and resent batches are deduplicated.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use zpulse_collector::store::{Filter, Store};
use zpulse_forward::{ChunkId, Compression, Entries, ServerMessage};
use zpulse_proto::event::EventTime;

const BATCHES: u64 = 400;
const PER_BATCH: u64 = 25;

fn spawn(addr: SocketAddr, db: &std::path::Path) -> Collector {
    let listen = addr.to_string();
    Collector::serve(&[
        "--listen".as_ref(),
        listen.as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
    ])
}

fn batch(n: u64) -> (String, Vec<u8>) {
    let mut id = [0xd0u8; 16];
    id[..8].copy_from_slice(&n.to_be_bytes());
    let chunk = ChunkId(id).to_base64();
    let mut entries = Entries::new();
    for i in 0..PER_BATCH {
        let seq = n * PER_BATCH + i;
        let e = metrics("durable", "disk", "sda", "busy_pct", (seq % 100) as f64).with("seq", seq);
        entries.push_event(
            EventTime {
                seconds: 1_900_000_000 + seq as u32,
                nanos: 0,
            },
            &e,
        );
    }
    let gzip = if n.is_multiple_of(2) {
        Compression::Gzip
    } else {
        Compression::None
    };
    let msg = entries.packed_forward("zpulse.metrics", Some(&chunk), gzip);
    (chunk, msg)
}

#[test]
fn kill_9_during_a_stream_of_acked_batches_loses_nothing_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("events.db");
    let addr = free_addr();
    let mut child = spawn(addr, &db);
    let acked = Arc::new(AtomicU64::new(0));
    let resends = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sender = std::thread::spawn({
        let (acked, resends, done) = (acked.clone(), resends.clone(), done.clone());
        move || {
            let mut n = 0;
            while n < BATCHES {
                let Ok(s) = std::net::TcpStream::connect(addr) else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut c = Client::from_stream(s);
                let mut first = true;
                while n < BATCHES {
                    let (chunk, msg) = batch(n);
                    if first {
                        resends.fetch_add(1, Ordering::Relaxed);
                        first = false;
                    }
                    if c.send(&msg).is_err() {
                        break;
                    }
                    match c.recv() {
                        Some(ServerMessage::Ack(a)) if a == chunk => {
                            n += 1;
                            acked.store(n, Ordering::SeqCst);
                        }
                        _ => break,
                    }
                }
            }
            done.store(true, Ordering::SeqCst);
        }
    });
    // Kill it three times while batches are flowing.
    for round in 1..=3u64 {
        wait_until("acks flowing", || {
            acked.load(Ordering::SeqCst) >= round * BATCHES / 5
        });
        child.kill(); // SIGKILL
        let at_kill = acked.load(Ordering::SeqCst);
        // Everything acked so far is in the database, before any restart.
        let stored = Store::open_read_only(&db).unwrap().counts().unwrap().0 as u64;
        assert!(
            stored >= at_kill * PER_BATCH,
            "round {round}: {stored} events stored, {at_kill} batches acked"
        );
        child = spawn(addr, &db);
    }
    sender.join().unwrap();
    assert!(done.load(Ordering::SeqCst));
    child.kill();
    let rows = Store::open_read_only(&db)
        .unwrap()
        .events(&Filter {
            limit: usize::MAX >> 1,
            ..Filter::default()
        })
        .unwrap();
    let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
    for r in &rows {
        let v: serde_json::Value = serde_json::from_str(&r.data).unwrap();
        *seen.entry(v["seq"].as_u64().unwrap()).or_default() += 1;
    }
    let dups: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(dups.is_empty(), "duplicates: {dups:?}");
    assert_eq!(seen.len() as u64, BATCHES * PER_BATCH, "every event stored");
    assert_eq!(rows.len() as u64, BATCHES * PER_BATCH);
    eprintln!(
        "durability: {} batches, {} connections (3 kills), {} events stored exactly once",
        BATCHES,
        resends.load(Ordering::Relaxed),
        rows.len()
    );
}
