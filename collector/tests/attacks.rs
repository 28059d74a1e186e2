//! Attacks on the real binary (a child of this test, so its memory is
//! its own): each is survived with the figures the issue asks for.
//!
//! * Four gzip messages of ~60 KB, each inflating to 2 million tiny entries `[t, {}]`, took
//!   the collector to 4.8 GB and stalled other clients' acks for 15 s. Now each is refused
//!   by its entry count (`max_entries`) before a row is made: peak RSS stays under 200 MB and
//!   another client's acks keep coming within a second.
//! * Four clients sending legal but heavy messages (5,000 foreign records each, as fast as
//!   they are acked) do not hold up a light client's ack by more than a second: heavy
//!   messages are decoded one connection at a time (the writer keeps a core), the writer
//!   stores the smallest waiting batches first and a heavy batch owed its turn rides along
//!   without pushing a light one out, its transactions are bounded (5,000 events plus one
//!   batch), and each connection is held to `max_entries_per_second`. Slowest light ack on
//!   the loaded 2-core machine (debug build): 113–229 ms, was 773 ms.

mod common;

use common::*;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use zpulse_forward::{Compression, Entries, encode};

/// The two tests measure latencies: one at a time, so neither competes with the other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn spawn(dir: &std::path::Path) -> (Collector, SocketAddr) {
    let addr = free_addr();
    let db = dir.join("events.db");
    let listen = addr.to_string();
    let c = Collector::serve(&[
        "--listen".as_ref(),
        listen.as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
    ]);
    (c, addr)
}

/// The peak resident set of a process (`VmHWM`, kB, proc(5)).
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// A light client: one small batch after another, each waiting for its ack, until `stop`;
/// the slowest ack it saw.
fn light_client(
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(u32, Duration)> {
    std::thread::spawn(move || {
        let mut c = Client::connect(addr);
        let e = heartbeat("light", "0.1.0").to_msgpack();
        let (mut n, mut worst) = (0u32, Duration::ZERO);
        while !stop.load(Ordering::SeqCst) {
            let id = random_chunk();
            let t0 = Instant::now();
            c.send(&encode::message("zpulse.agent", now_t(), &e, Some(&id)))
                .unwrap();
            assert_eq!(c.ack(), Some(id));
            worst = worst.max(t0.elapsed());
            n += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
        (n, worst)
    })
}

#[test]
fn a_gzip_bomb_of_tiny_entries_is_refused_in_bounded_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut tiny = Entries::new();
    for _ in 0..2_000_000 {
        tiny.push(t(1), &[0x80]);
    }
    let bomb = tiny.packed_forward("zpulse.metrics", Some(&chunk(1)), Compression::Gzip);
    assert!(bomb.len() < 128 << 10, "{}", bomb.len());
    let (collector, addr) = spawn(dir.path());
    let pid = collector.0.id();
    let before = peak_rss_kb(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let light = light_client(addr, stop.clone());
    let attackers: Vec<_> = (0..4)
        .map(|_| {
            let bomb = bomb.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let _ = c.send(&bomb);
                // Refused: the connection is closed, nothing is acked.
                assert!(c.recv().is_none());
            })
        })
        .collect();
    for a in attackers {
        a.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let (acks, worst) = light.join().unwrap();
    let peak = peak_rss_kb(pid);
    eprintln!(
        "gzip bomb: 4 × {} bytes → 4 × 2,000,000 entries; peak RSS {before} kB → {peak} kB; \
         light client: {acks} acks, slowest {worst:?}",
        bomb.len()
    );
    assert!(peak < 200 * 1024, "peak RSS {peak} kB");
    assert!(worst < Duration::from_secs(1), "slowest ack {worst:?}");
    assert!(acks >= 3, "{acks}");
}

#[test]
fn heavy_senders_do_not_hold_up_another_clients_ack() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (collector, addr) = spawn(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    // 5,000 foreign records per message: the most a message may hold by default.
    let mut heavy = Entries::new();
    for i in 0..5_000u32 {
        let record = [&b"\x81\xa3msg\xce"[..], &i.to_be_bytes()].concat();
        heavy.push(t(1), &record);
    }
    let heavy_senders: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            // Encoded before the clock starts: the test's own work must not compete with the
            // collector for the CPU.
            let messages: Vec<(String, Vec<u8>)> = (0..30)
                .map(|_| {
                    let id = random_chunk();
                    let m = heavy.packed_forward("heavy", Some(&id), Compression::None);
                    (id, m)
                })
                .collect();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut sent = 0u32;
                for (id, m) in messages {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    c.send(&m).unwrap();
                    assert_eq!(c.ack(), Some(id));
                    sent += 1;
                }
                sent
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let light = light_client(addr, stop.clone());
    std::thread::sleep(Duration::from_secs(4));
    stop.store(true, Ordering::SeqCst);
    let (acks, worst) = light.join().unwrap();
    let heavy: u32 = heavy_senders.into_iter().map(|h| h.join().unwrap()).sum();
    eprintln!(
        "heavy senders: {heavy} messages of 5,000 records in ~4 s; light client: {acks} acks, \
         slowest {worst:?}; peak RSS {} kB",
        peak_rss_kb(collector.0.id())
    );
    assert!(heavy >= 4, "{heavy}");
    assert!(worst < Duration::from_secs(1), "slowest ack {worst:?}");
}

/// A field of `/proc/PID/status` in kB (`VmHWM`, `VmRSS`; proc(5)).
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// One legal CompressedPackedForward message as the memory attack sent them: 5,000 foreign
/// records (the default `max_entries`) of 5,852 bytes each, some of each record random hex
/// so that gzip keeps about 1:90 — ~330 KB on the wire, ~29 MB inflated, under the 32 MiB
/// `max_inflated_bytes`. Its chunk id is `chunk(0)`; [`with_chunk`] gives copies with others.
fn heavy_gzip_message() -> (Vec<u8>, usize) {
    let mut entries = Entries::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut inflated = 0;
    for i in 0..5_000u32 {
        let mut text = format!("{i:08} ").repeat(8);
        for _ in 0..5 {
            // xorshift64: 80 hex digits of noise per record, without a random crate.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(&format!("{state:016x}"));
        }
        text.push_str(&"a".repeat(5_700));
        // {"message": text}: fixmap 1, fixstr "message", str16.
        let mut record = vec![0x81, 0xa7];
        record.extend_from_slice(b"message");
        record.push(0xda);
        record.extend_from_slice(&(text.len() as u16).to_be_bytes());
        record.extend_from_slice(text.as_bytes());
        inflated += record.len() + 6;
        entries.push(t(1), &record);
    }
    (
        entries.packed_forward("app.log", Some(&chunk(0)), Compression::Gzip),
        inflated,
    )
}

/// `message` with chunk id `id` (of the same length) in place of `chunk(0)`.
fn with_chunk(message: &[u8], id: &str) -> Vec<u8> {
    let old = chunk(0);
    let at = message
        .windows(old.len())
        .rposition(|w| w == old.as_bytes())
        .expect("the chunk id in the options");
    assert_eq!(id.len(), old.len());
    let mut m = message.to_vec();
    m[at..at + old.len()].copy_from_slice(id.as_bytes());
    m
}

/// 48 concurrent, individually legal gzip messages (~330 KB inflating to ~29 MB
/// each) from 8 loopback addresses took the collector to a 968 MiB peak, 2.4 times its
/// documented bound and just under the unit's MemoryMax=1G, and ~500 MiB stayed resident.
/// Now inflated entries and decoded rows are held against one budget (`max_inflight_bytes`)
/// from the moment a heavy message is decoded until its ack, and are all allocated by one
/// decoder thread: the peak stays within that budget plus a fixed overhead, and a
/// bystander's acks keep coming within 2 s: the writer stores the lightest batches first,
/// each heavy batch in parts of at most 1 MiB, a transaction each, so that light batches'
/// transactions come between them (one 5,000-row, 29 MB commit took 0.4–0.7 s, and a light
/// batch waited for all of it), and the WAL is checkpointed beside the writer, not inside
/// its commits (such a commit took 1.0–1.2 s with the checkpoint in it, debug build at load
/// 15). Once the burst is over the allocator gives the freed memory back (`malloc_trim`):
/// what stays resident is back within a fixed margin of what was before (the debug build at
/// load 15: 10 MB before, 18–21 MB after, was 69–83 MB). Release build, 8 runs at load 5–10:
/// 37–48 of 48 acked in 19–31 s, peak 163–176 MB, 7–8 MB resident before, 21–24 MB after
/// (was 161 MB); the bystander's slowest ack 0.18–0.61 s at load 5–8, 0.85 s at load 10,
/// 168–218 acks. Each heavy batch in one transaction (the same test, 6 runs at load 4–8): the
/// slowest 1.8–3.8 s, 39–45 acks, as it waited for the 29 MB transaction under way.
#[test]
fn a_burst_of_48_heavy_gzip_messages_stays_within_the_memory_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (message, inflated) = heavy_gzip_message();
    assert!(
        (300 << 10..400 << 10).contains(&message.len()),
        "{} bytes",
        message.len()
    );
    assert!((27 << 20..32 << 20).contains(&inflated), "{inflated}");
    let messages: Vec<(String, Vec<u8>)> = (0..48)
        .map(|_| {
            let id = random_chunk();
            let m = with_chunk(&message, &id);
            (id, m)
        })
        .collect();
    let (collector, addr) = spawn(dir.path());
    let pid = collector.0.id();
    let before = status_kb(pid, "VmHWM");
    let resident_before = status_kb(pid, "VmRSS");
    let stop = Arc::new(AtomicBool::new(false));
    let light = light_client(addr, stop.clone());
    let t0 = Instant::now();
    let senders: Vec<_> = messages
        .into_iter()
        .enumerate()
        .map(|(i, (id, m))| {
            std::thread::spawn(move || {
                let from = std::net::Ipv4Addr::new(127, 0, 0, 2 + (i % 8) as u8);
                let mut c = Client::from_stream(connect_from(from, addr).unwrap());
                c.s.set_read_timeout(Some(Duration::from_secs(120)))
                    .unwrap();
                c.send(&m).unwrap();
                // Acked, or refused (closed unacked: its agent resends); never hanging.
                c.recv().map(|reply| {
                    assert_eq!(reply, zpulse_forward::ServerMessage::Ack(id));
                })
            })
        })
        .collect();
    let acked = senders
        .into_iter()
        .map(|s| s.join().unwrap())
        .filter(Option::is_some)
        .count();
    let burst = t0.elapsed();
    stop.store(true, Ordering::SeqCst);
    let (acks, worst) = light.join().unwrap();
    let peak = status_kb(pid, "VmHWM");
    // After the burst: what the collector still holds, once it has returned what it freed
    // (it looks every 200 ms after the last heavy message's ack).
    std::thread::sleep(Duration::from_secs(2));
    let after = status_kb(pid, "VmRSS");
    eprintln!(
        "48 × {} bytes gzip → {inflated} bytes each from 8 addresses: {acked} acked in \
         {burst:?}; peak RSS {before} kB → {peak} kB; resident {resident_before} kB before, \
         {after} kB after; bystander: {acks} acks, slowest {worst:?}",
        message.len()
    );
    // Decoded one at a time, each heavy message waits its turn for at most read_timeout
    // (30 s): those still waiting then are refused, and their agents resend. What was acked
    // is stored, every record of it.
    assert!(acked >= 4, "{acked} acked");
    let stored = zpulse_collector::store::Store::open_read_only(&dir.path().join("events.db"))
        .unwrap()
        .counts()
        .unwrap()
        .0;
    assert_eq!(stored, acked as i64 * 5_000 + i64::from(acks));
    assert!(
        worst < Duration::from_secs(2),
        "slowest bystander ack {worst:?}"
    );
    // The budget (128 MiB by default), the writer's batch and SQLite (its page cache, a
    // transaction of 5,000 rows), and the rest: 64 MiB.
    let budget_kb = 128 * 1024;
    assert!(peak < budget_kb + 64 * 1024, "peak RSS {peak} kB");
    // Memory returns: what stays beyond the resident set before the burst is SQLite's page
    // cache (2 MiB), the database's memory map and the threads' stacks, within 32 MiB.
    assert!(
        after < resident_before + 32 * 1024,
        "{after} kB resident after the burst, {resident_before} kB before"
    );
}

/// 300 connections from 9 addresses, each sending a nil byte every 3 s, re-took all
/// 256 slots after every read timeout, and agents from a tenth address were refused. Now a
/// connection must send something valid within `first_message_timeout` whatever trickles in,
/// unproven connections hold at most half the slots, and a newcomer takes the place of the
/// oldest unproven connection of the address holding the most. Scaled down from 300
/// connections for 256 slots to 108 for 64 (32 per address, a 1 s deadline): 9 trickling
/// addresses attack while agents from five other addresses connect, send a batch and wait
/// for its ack, one fresh connection after another.
#[test]
fn trickling_peers_from_many_addresses_leave_slots_for_real_agents() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let r = start(|c| {
        c.max_connections = 64;
        c.max_connections_per_peer = 32;
        c.first_message_timeout = Duration::from_secs(1);
    });
    let addr = r.server.addr;
    // One trickler alone: closed at its deadline, not kept by its nil bytes.
    let mut lone = Client::from_stream(connect_from([127, 0, 0, 30].into(), addr).unwrap());
    let opened = Instant::now();
    let closed_after = loop {
        if lone.send(&[0xc0]).is_err() || lone_closed(&mut lone) {
            break opened.elapsed();
        }
        assert!(opened.elapsed() < Duration::from_secs(10), "never closed");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        closed_after >= Duration::from_millis(900) && closed_after < Duration::from_secs(3),
        "closed after {closed_after:?}"
    );
    let stop = Arc::new(AtomicBool::new(false));
    // 9 addresses × 12 tricklers, each reconnecting 20 ms after it is closed or refused.
    let tricklers: Vec<_> = (0..108u8)
        .map(|i| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let from = std::net::Ipv4Addr::new(127, 0, 0, 2 + i % 9);
                let mut connections = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                    let Ok(mut s) = connect_from(from, addr) else {
                        continue;
                    };
                    connections += 1;
                    s.set_read_timeout(Some(Duration::from_millis(300)))
                        .unwrap();
                    while !stop.load(Ordering::SeqCst) {
                        use std::io::{Read, Write};
                        if s.write_all(&[0xc0]).is_err() {
                            break;
                        }
                        let mut b = [0u8; 16];
                        match s.read(&mut b) {
                            Ok(0) => break,
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                            Err(_) => break,
                            Ok(_) => {}
                        }
                    }
                }
                connections
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let agents: Vec<_> = (0..5u8)
        .map(|a| {
            std::thread::spawn(move || {
                let from = std::net::Ipv4Addr::new(127, 0, 0, 20 + a);
                let e = heartbeat(&format!("agent{a}"), "1.0").to_msgpack();
                let mut slowest = Duration::ZERO;
                for _ in 0..5 {
                    // As the agent's Forward sink does: a connection refused or closed
                    // before the ack is tried again, after 100 ms here.
                    let t0 = Instant::now();
                    let id = random_chunk();
                    let message = encode::message("zpulse.agent", now_t(), &e, Some(&id));
                    let acked = || {
                        let mut c = Client::from_stream(connect_from(from, addr).ok()?);
                        c.send(&message).ok()?;
                        c.ack()
                    };
                    while acked().as_ref() != Some(&id) {
                        assert!(t0.elapsed() < Duration::from_secs(30), "agent{a}: no ack");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    slowest = slowest.max(t0.elapsed());
                    std::thread::sleep(Duration::from_millis(300));
                }
                slowest
            })
        })
        .collect();
    let slowest = agents.into_iter().map(|a| a.join().unwrap()).max().unwrap();
    stop.store(true, Ordering::SeqCst);
    let attempts: u32 = tricklers.into_iter().map(|t| t.join().unwrap()).sum();
    let stats = r.server.stats.snapshot();
    eprintln!(
        "tricklers: {attempts} connections from 9 addresses; agents: 25 of 25 acked, slowest \
         {slowest:?}; lone trickler closed after {closed_after:?}; {stats:?}"
    );
    // Before: refused for as long as the attack lasted (the tricklers held every slot for
    // read_timeout, 30 s, then took them again).
    assert!(
        slowest < Duration::from_secs(3),
        "slowest agent ack {slowest:?}"
    );
    // The tricklers were at it: refused, given up for newcomers, timed out.
    assert!(stats["connections_evicted"] > 0, "{stats:?}");
    assert!(attempts > 108, "{attempts}");
}

/// Whether the server closed `c` (a read sees EOF or a reset within 300 ms).
fn lone_closed(c: &mut Client) -> bool {
    use std::io::Read;
    c.s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 16];
    match c.s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// Slow clients held every one of the web page's 32 connections: each sent the start of a
/// request head and then a byte now and then, and every real page request was answered 503.
/// Now one address holds at most `MAX_CONNECTIONS_PER_PEER` (8), connections still sending
/// their head hold at most half the slots and give way to newcomers (the oldest of the
/// address holding the most goes first), and the head must arrive whole within 5 s of
/// connecting. Attack: 24 tricklers from one address and 8 from each of three others
/// (together more than the 32 slots), reconnecting as soon as they are closed or refused,
/// while page requests from another address are answered within 1 s each.
#[test]
fn trickling_web_clients_leave_the_page_to_real_requests() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let r = start(|_| {});
    let web = r.web_page();
    let stop = Arc::new(AtomicBool::new(false));
    // (address, tricklers): one that would fill the whole listener, three at their cap.
    let sources = [(40u8, 24usize), (41, 8), (42, 8), (43, 8)];
    let tricklers: Vec<_> = sources
        .iter()
        .flat_map(|&(a, n)| std::iter::repeat_n(a, n))
        .map(|a| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let from = std::net::Ipv4Addr::new(127, 0, 0, a);
                let (mut connections, mut refused) = (0u32, 0u32);
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                    let Ok(mut s) = connect_from(from, web) else {
                        continue;
                    };
                    connections += 1;
                    s.set_read_timeout(Some(Duration::from_millis(200)))
                        .unwrap();
                    if s.write_all(b"GET / HTTP/1.1\r\n").is_err() {
                        continue;
                    }
                    // One byte of a header every 200 ms, until the server answers or closes.
                    while !stop.load(Ordering::SeqCst) {
                        let mut b = [0u8; 64];
                        match s.read(&mut b) {
                            Ok(0) => break,
                            Ok(_) => {
                                refused += 1;
                                break;
                            }
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => break,
                        }
                        if s.write_all(b"X").is_err() {
                            break;
                        }
                    }
                }
                (connections, refused)
            })
        })
        .collect();
    // The tricklers take their places first.
    std::thread::sleep(Duration::from_millis(1500));
    let from = std::net::Ipv4Addr::new(127, 0, 0, 50);
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        use std::io::{Read, Write};
        let t0 = Instant::now();
        let mut s = connect_from(from, web).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /api/stats HTTP/1.1\r\nHost: collector\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        // A refused request may be reset before all of its 503 is read: the error is shown.
        if let Err(e) = s.read_to_string(&mut answer) {
            answer.push_str(&format!(" (then {e})"));
        }
        let took = t0.elapsed();
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains("\"connections_total\""),
            "{answer}"
        );
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    let (connections, refused) = tricklers
        .into_iter()
        .map(|t| t.join().unwrap())
        .fold((0, 0), |(c, r), (c1, r1)| (c + c1, r + r1));
    eprintln!(
        "web tricklers: {connections} connections from 4 addresses, {refused} answered 503; \
         20 of 20 page requests answered 200, slowest {slowest:?}"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "slowest page request {slowest:?}"
    );
    // More tricklers than one address may hold: those over its cap were refused.
    assert!(refused > 0 && connections > 48, "{connections} {refused}");
}
