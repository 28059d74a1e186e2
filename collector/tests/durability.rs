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
use zpulse_collector::store::{Batch, Filter, Outcome, Part, Row, Store};
use zpulse_forward::{ChunkId, Compression, Entries, ServerMessage};
use zpulse_proto::event::{EventTime, Severity, State};

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

/// A batch for host `parted` of `n` events: a finding raised first, metrics with their
/// `seq` (1..n-1) between, and a heartbeat last.
fn parted_batch(n: usize, chunk: &str) -> Batch {
    let rows = (0..n)
        .map(|i| {
            let e = if i == 0 {
                finding(
                    "parted",
                    "pool-health",
                    "tank",
                    State::Raised,
                    Severity::Critical,
                )
            } else if i == n - 1 {
                heartbeat("parted", "1.0")
            } else {
                metrics("parted", "disk", "sda", "busy_pct", 50.0).with("seq", i as u64)
            };
            Row::from_event(
                "zpulse.metrics",
                (1_900_000_000 + i as i64) * 1_000_000_000,
                &e,
                "127.0.0.1",
            )
        })
        .collect();
    Batch {
        chunk: Some(chunk.into()),
        peer: "127.0.0.1".into(),
        rows,
        ..Batch::default()
    }
}

/// One copy of a batch being stored in parts, as the writer keeps it.
struct InParts<'b> {
    batch: &'b Batch,
    earlier: Vec<(i64, i64)>,
}

impl InParts<'_> {
    /// Stores `rows` of it in a transaction of their own.
    fn store(&mut self, s: &mut Store, rows: std::ops::Range<usize>) -> Part {
        let tx = s.transaction().unwrap();
        let part = Store::apply_part(&tx, self.batch, rows, &self.earlier, now_s()).unwrap();
        tx.commit().unwrap();
        if let Part::Pending(ids) = &part {
            self.earlier.extend(ids);
        }
        part
    }
}

/// Every event a query shows.
fn shown(db: &std::path::Path) -> Vec<Row> {
    Store::open_read_only(db)
        .unwrap()
        .events(&Filter {
            limit: 100_000,
            ..Filter::default()
        })
        .unwrap()
}

/// Every stored event: the `seq` of each metric event, how many of each kind.
fn stored(db: &std::path::Path) -> (BTreeMap<u64, u32>, BTreeMap<String, u32>) {
    let (mut seqs, mut kinds) = (BTreeMap::new(), BTreeMap::new());
    for r in shown(db) {
        let v: serde_json::Value = serde_json::from_str(&r.data).unwrap();
        if let Some(seq) = v["seq"].as_u64() {
            *seqs.entry(seq).or_default() += 1;
        }
        *kinds.entry(r.kind).or_default() += 1;
    }
    (seqs, kinds)
}

/// A heavy batch is stored in parts, one transaction each, so that light batches' commits
/// come between them. Until its last part commits it is not stored: its rows are in the file
/// but no query shows them, its finding and host are not there, its chunk id is not
/// recorded (a resend is stored, not taken for a duplicate); a store dropped between its
/// parts (as a crash leaves it) loses those rows when the writer opens it next.
#[test]
fn a_batch_stored_in_parts_is_stored_only_once_its_last_part_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("events.db");
    let batch = parted_batch(10, &chunk(7));
    let metric_seqs = || (1..9u64).map(|s| (s, 1)).collect::<BTreeMap<_, _>>();
    {
        let mut s = Store::open(&db).unwrap();
        let mut copy = InParts {
            batch: &batch,
            earlier: Vec::new(),
        };
        assert!(matches!(copy.store(&mut s, 0..4), Part::Pending(_)));
        let r = Store::open_read_only(&db).unwrap();
        // Four rows in the file and no chunk id; nothing a query shows.
        assert_eq!(r.counts().unwrap(), (4, 0));
        assert_eq!(stored(&db), (BTreeMap::new(), BTreeMap::new()));
        assert!(r.hosts().unwrap().is_empty());
        assert!(r.open_findings(None).unwrap().is_empty());
        // Dropped here, between two parts.
    }
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.discard_unfinished().unwrap(), 4);
    assert_eq!(s.counts().unwrap(), (0, 0));
    // Resent, in three parts: stored when the third commits, every row once.
    let mut copy = InParts {
        batch: &batch,
        earlier: Vec::new(),
    };
    assert!(matches!(copy.store(&mut s, 0..4), Part::Pending(_)));
    assert!(matches!(copy.store(&mut s, 4..8), Part::Pending(_)));
    assert_eq!(stored(&db).0, BTreeMap::new());
    assert_eq!(copy.store(&mut s, 8..10), Part::Done(Outcome::Stored(10)));
    let (seqs, kinds) = stored(&db);
    assert_eq!(seqs, metric_seqs());
    assert_eq!(
        kinds,
        BTreeMap::from([
            ("finding".to_string(), 1),
            ("metrics".to_string(), 8),
            ("agent".to_string(), 1)
        ])
    );
    let r = Store::open_read_only(&db).unwrap();
    assert_eq!(
        r.host("parted").unwrap().unwrap().version.as_deref(),
        Some("1.0")
    );
    assert_eq!(r.open_findings(Some("parted")).unwrap().len(), 1);
    assert_eq!(r.counts().unwrap(), (10, 1));
    assert_eq!(s.discard_unfinished().unwrap(), 0);
    // Resent once more: a duplicate at its first part, nothing written.
    let mut again = InParts {
        batch: &batch,
        earlier: Vec::new(),
    };
    assert_eq!(again.store(&mut s, 0..4), Part::Done(Outcome::Duplicate));
    assert_eq!(s.counts().unwrap(), (10, 1));
    // Two copies under way at once (an agent resent before the ack came): the one that
    // finishes second finds the chunk id stored, and its parts are deleted.
    let other = parted_batch(10, &chunk(8));
    let (mut first, mut second) = (
        InParts {
            batch: &other,
            earlier: Vec::new(),
        },
        InParts {
            batch: &other,
            earlier: Vec::new(),
        },
    );
    assert!(matches!(first.store(&mut s, 0..5), Part::Pending(_)));
    assert!(matches!(second.store(&mut s, 0..5), Part::Pending(_)));
    assert_eq!(s.counts().unwrap(), (20, 1));
    assert_eq!(first.store(&mut s, 5..10), Part::Done(Outcome::Stored(10)));
    assert_eq!(second.store(&mut s, 5..10), Part::Done(Outcome::Duplicate));
    assert_eq!(s.counts().unwrap(), (20, 2));
    let (seqs, _) = stored(&db);
    assert_eq!(seqs, (1..9u64).map(|s| (s, 2)).collect());
    assert_eq!(s.discard_unfinished().unwrap(), 0);
}

/// 3,000 log records of 6 KB in one gzip message (18 MB inflated): stored in parts of
/// about 1 MiB. `kill -9` the collector (the real binary) once some parts are in the file
/// and the batch is not stored yet: it was not acked, and when the collector starts again
/// those rows are deleted; the resent batch is then stored, every record once.
#[test]
fn kill_9_between_the_parts_of_a_heavy_batch_leaves_none_of_it_stored() {
    const RECORDS: usize = 3_000;
    let mut entries = Entries::new();
    for i in 0..RECORDS {
        let text = format!("record {i:05} {}", "x".repeat(6_000));
        // {"message": text}: fixmap 1, fixstr "message", str16.
        let mut record = vec![0x81, 0xa7];
        record.extend_from_slice(b"message");
        record.push(0xda);
        record.extend_from_slice(&(text.len() as u16).to_be_bytes());
        record.extend_from_slice(text.as_bytes());
        entries.push(t(1), &record);
    }
    let id = chunk(9);
    let message = entries.packed_forward("app.log", Some(&id), Compression::Gzip);
    let records = |db: &std::path::Path| -> BTreeMap<String, u32> {
        let mut seen = BTreeMap::new();
        for r in shown(db) {
            *seen.entry(r.summary[..12].to_string()).or_default() += 1;
        }
        seen
    };
    // The kill must come between two parts; a batch that beat it to its last part is
    // tried again on a fresh database (at most five times).
    for attempt in 1..=5 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("events.db");
        let addr = free_addr();
        let collector = spawn(addr, &db);
        let mut c = Client::connect(addr);
        c.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        c.send(&message).unwrap();
        let started = std::time::Instant::now();
        let between_parts = loop {
            let r = Store::open_read_only(&db).unwrap();
            let (in_file, shown) = (r.counts().unwrap().0, records(&db).len());
            if shown > 0 {
                break false;
            }
            if in_file > 0 {
                break true;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "nothing stored"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        collector.kill();
        let in_file = Store::open_read_only(&db).unwrap().counts().unwrap().0;
        let shown = records(&db).len();
        if !between_parts || shown > 0 {
            eprintln!("attempt {attempt}: the batch was stored before the kill; again");
            continue;
        }
        // Killed between parts: rows in the file, none stored, no ack.
        assert!(in_file > 0 && in_file < RECORDS as i64, "{in_file}");
        assert_eq!(c.recv(), None);
        let _collector = spawn(addr, &db);
        assert_eq!(
            Store::open_read_only(&db).unwrap().counts().unwrap(),
            (0, 0)
        );
        // Resent as the agent does: stored, every record once, and acked.
        let mut c = Client::connect(addr);
        c.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        c.send(&message).unwrap();
        assert_eq!(c.ack(), Some(id));
        let seen = records(&db);
        assert_eq!(seen.len(), RECORDS);
        assert!(seen.values().all(|n| *n == 1));
        assert_eq!(seen.keys().next().map(String::as_str), Some("record 00000"));
        eprintln!(
            "killed between parts (attempt {attempt}): {in_file} of {RECORDS} rows in the \
             file, none stored; deleted at the restart; resent, stored once"
        );
        return;
    }
    panic!("the batch was stored before every kill: no kill came between its parts");
}

/// Whether the write-ahead log next to `db` ends in a transaction that did not commit: its
/// last frame of the current generation (the salts of the WAL header) is no commit frame
/// (a commit frame gives the database's size in pages, others 0). SQLite's file format,
/// "WAL File Format": a 32-byte header (page size at 8, salts at 16 and 20), then frames of
/// a 24-byte header (commit size at 4, salts at 8 and 12) and a page. A transaction writes its
/// pages there before its commit only when they outgrow the page cache.
fn wal_ends_uncommitted(db: &std::path::Path) -> bool {
    let Ok(wal) = std::fs::read(wal_path(db)) else {
        return false;
    };
    let be = |b: &[u8], at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
    if wal.len() < 32 {
        return false;
    }
    let page = be(&wal, 8) as usize;
    let salts = &wal[16..24];
    let mut last_commit = None;
    let mut at = 32;
    while at + 24 + page <= wal.len() && &wal[at + 8..at + 16] == salts {
        last_commit = Some(be(&wal, at + 4) != 0);
        at += 24 + page;
    }
    last_commit == Some(false)
}

/// `kill -9` the collector (the real binary) again and again while its first retention pass
/// deletes 200,000 expired events in steps, each kill 0-10 ms after a step is seen committed:
/// wherever it lands, the database passes SQLite's integrity check, every expired event left
/// still lies in a range of old ids (how the next pass finds it), and the starts that follow
/// delete every one of them. Each step is one transaction, so a kill in the middle of one
/// loses the step, not the ranges (without it, and with the ranges moved before the events
/// are deleted, the first kill fails the test: tried). The kills that landed there are
/// counted (the WAL ends in frames of a transaction that did not commit): a pass without one
/// is made again on a fresh database, five times at most.
#[test]
fn kill_9_during_a_retention_pass_leaves_every_expired_event_findable() {
    for round in 1..=5 {
        let (kills, mid_step) = kill_during_a_pass();
        eprintln!("round {round}: {kills} kills during the pass, {mid_step} inside a step");
        if mid_step > 0 {
            return;
        }
    }
    panic!("no kill of five passes landed inside a step's transaction");
}

/// One pass killed until done: (kills, kills inside a step).
fn kill_during_a_pass() -> (u64, u64) {
    const EXPIRED: usize = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("events.db");
    let now = now_s();
    // Eight seconds of receive time: eight ranges of 25,000 ids, so steps (20,000) end
    // inside ranges.
    store_expired(&db, EXPIRED, 8, now);
    let config = dir.path().join("zpulse-collector.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"{}\"\ndb = {:?}\n[retention]\nmax_age = \"1d\"\n",
            free_addr(),
            db.display().to_string()
        ),
    )
    .unwrap();
    let serve = || Collector::serve(&["--config".as_ref(), config.as_os_str()]);
    let cutoff = now - DAY;
    let (mut kills, mut mid_step) = (0, 0);
    let mut left = EXPIRED as i64;
    while left > 0 {
        let collector = serve();
        // A step committed (fewer left), then a kill 0-10 ms later: in the next step or
        // between two.
        let before = left;
        wait_until("a step", || expired_left(&db, cutoff).0 < before);
        std::thread::sleep(Duration::from_millis(kills * 3 % 11));
        collector.kill();
        kills += 1;
        mid_step += u64::from(wal_ends_uncommitted(&db));
        let check: String = read_only(&db)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "kill {kills}");
        let outside;
        (left, outside) = expired_left(&db, cutoff);
        assert_eq!(
            outside, 0,
            "kill {kills}: expired events outside every old range"
        );
    }
    (kills, mid_step)
}
