//! The server in-process: every Forward mode, acks after commit, dedup, the handshake, limits,
//! findings and hosts, the web page.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use zpulse_collector::store::{Filter, Store};
use zpulse_forward::{Compression, Entries, ServerMessage, encode};
use zpulse_proto::event::{Severity, State};

fn store(r: &Running) -> Store {
    Store::open_read_only(&r.db).unwrap()
}

fn all(r: &Running) -> Vec<zpulse_collector::store::Row> {
    store(r)
        .events(&Filter {
            limit: 1_000_000,
            oldest_first: true,
            ..Filter::default()
        })
        .unwrap()
}

#[test]
fn every_mode_is_stored_and_acked_after_commit() {
    let r = start(|_| {});
    let mut c = Client::connect(r.server.addr);
    let e = metrics("nas1", "arc", "arc", "hit_pct", 97.0).to_msgpack();

    // Message, with and without chunk.
    c.send(&encode::message(
        "zpulse.metrics",
        t(100),
        &e,
        Some(&chunk(1)),
    ))
    .unwrap();
    assert_eq!(c.ack().as_deref(), Some(chunk(1).as_str()));
    c.send(&encode::message("zpulse.metrics", t(101), &e, None))
        .unwrap();
    // Forward.
    c.send(&encode::forward(
        "zpulse.metrics",
        &[(t(102), &e[..]), (t(103), &e[..])],
        Some(&chunk(2)),
    ))
    .unwrap();
    assert_eq!(c.ack().as_deref(), Some(chunk(2).as_str()));
    // PackedForward and CompressedPackedForward.
    let mut entries = Entries::new();
    for s in 104..110 {
        entries.push(t(s), &e);
    }
    c.send(&entries.packed_forward("zpulse.metrics", Some(&chunk(3)), Compression::None))
        .unwrap();
    assert_eq!(c.ack().as_deref(), Some(chunk(3).as_str()));
    c.send(&entries.packed_forward("zpulse.metrics", Some(&chunk(4)), Compression::Gzip))
        .unwrap();
    assert_eq!(c.ack().as_deref(), Some(chunk(4).as_str()));
    // A keep-alive, then the same gzip batch again: acked, not stored twice.
    c.send(&[0xc0]).unwrap();
    c.send(&entries.packed_forward("zpulse.metrics", Some(&chunk(4)), Compression::Gzip))
        .unwrap();
    assert_eq!(c.ack().as_deref(), Some(chunk(4).as_str()));
    // Acked means committed: visible to another connection now.
    let rows = all(&r);
    assert_eq!(rows.len(), 1 + 1 + 2 + 6 + 6, "{rows:#?}");
    assert!(rows.iter().all(|x| x.host == "nas1" && x.kind == "metrics"));
    assert_eq!(rows[0].ts, 100_000_000_000);
    let stats = r.server.stats.snapshot();
    assert_eq!(stats["duplicates"], 1);
    assert_eq!(stats["events"], 16);
}

#[test]
fn foreign_records_are_kept_with_their_fields() {
    let r = start(|_| {});
    let mut c = Client::connect(r.server.addr);
    // {"message": "hello", "level": 3}
    let mut rec = vec![0x82, 0xa7];
    rec.extend_from_slice(b"message");
    rec.extend_from_slice(&[0xa5]);
    rec.extend_from_slice(b"hello");
    rec.extend_from_slice(&[0xa5]);
    rec.extend_from_slice(b"level");
    rec.push(3);
    c.send(&encode::message("app.log", t(5), &rec, Some(&chunk(9))))
        .unwrap();
    assert!(c.ack().is_some());
    let rows = all(&r);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].kind, "foreign");
    assert_eq!(rows[0].host, "127.0.0.1");
    assert_eq!(rows[0].summary, "hello");
    assert_eq!(rows[0].data, r#"{"level":3,"message":"hello"}"#);
}

#[test]
fn findings_hosts_and_the_open_set() {
    let r = start(|_| {});
    let mut c = Client::connect(r.server.addr);
    let mut send = |host: &str, evs: Vec<(u32, zpulse_proto::event::Event)>| {
        let mut entries = Entries::new();
        for (s, e) in &evs {
            entries.push_event(t(*s), e);
        }
        let ch = random_chunk();
        c.send(&entries.packed_forward("zpulse.finding", Some(&ch), Compression::None))
            .unwrap();
        assert_eq!(c.ack(), Some(ch), "{host}");
    };
    use Severity::*;
    use State::*;
    send(
        "nas1",
        vec![
            (
                10,
                finding("nas1", "hdd-saturation", "tank", Raised, Warning),
            ),
            (11, heartbeat("nas1", "0.1.0")),
            (
                20,
                finding("nas1", "hdd-saturation", "tank", Updated, Critical),
            ),
            (
                12,
                finding("nas1", "special-fill", "tank/special", Raised, Warning),
            ),
            (
                30,
                finding("nas1", "special-fill", "tank/special", Cleared, Info),
            ),
            // A late resend of an older state does not reopen it.
            (
                25,
                finding("nas1", "special-fill", "tank/special", Updated, Warning),
            ),
        ],
    );
    send(
        "nas2",
        vec![
            (15, heartbeat("nas2", "0.0.9")),
            (16, heartbeat("nas2", "0.2.0")),
            (14, heartbeat("nas2", "0.0.1")),
            (17, finding("nas2", "slog-usage", "pool/log", Raised, Info)),
        ],
    );
    let s = store(&r);
    let open = s.open_findings(None).unwrap();
    let keys: Vec<_> = open
        .iter()
        .map(|f| (f.host.as_str(), f.check.as_str(), f.severity))
        .collect();
    assert_eq!(
        keys,
        vec![("nas1", "hdd-saturation", 2), ("nas2", "slog-usage", 0)]
    );
    assert_eq!(open[0].raised_ts, 10_000_000_000);
    assert_eq!(open[0].state, "updated");
    let closed = s.findings(Some("nas1"), false).unwrap();
    let sf = closed.iter().find(|f| f.check == "special-fill").unwrap();
    assert!(!sf.open);
    assert_eq!(sf.cleared_ts, Some(30_000_000_000));
    let hosts = s.hosts().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[0].version.as_deref(), Some("0.1.0"));
    assert_eq!(hosts[0].open_findings, 1);
    assert_eq!(hosts[0].worst_open, Some(2));
    assert_eq!(hosts[1].version.as_deref(), Some("0.2.0"));
    // History: every state change is in events.
    let history = s
        .events(&Filter {
            host: Some("nas1".into()),
            check: Some("special-fill".into()),
            limit: 10,
            oldest_first: true,
            ..Filter::default()
        })
        .unwrap();
    let states: Vec<_> = history.iter().map(|e| e.state.clone().unwrap()).collect();
    assert_eq!(states, ["raised", "updated", "cleared"]);
    // Filters: severity is "this or worse".
    let warn = s
        .events(&Filter {
            min_severity: Some(1),
            limit: 100,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(warn.len(), 4);
}

#[test]
fn shared_key_handshake_and_auth_failures() {
    let r = start(|c| {
        c.shared_key = Some("fleet-key".into());
        c.clients.insert(
            "special".into(),
            zpulse_collector::config::Client {
                key: "its-own-key".into(),
                hosts: vec!["special".into()],
            },
        );
    });
    let e = metrics("nas1", "arc", "arc", "hit_pct", 97.0).to_msgpack();
    // Good key.
    let mut c = Client::connect(r.server.addr);
    c.handshake("nas1", "fleet-key").unwrap();
    c.send(&encode::message(
        "zpulse.metrics",
        t(1),
        &e,
        Some(&chunk(1)),
    ))
    .unwrap();
    assert!(c.ack().is_some());
    // Per-client key.
    let mut c = Client::connect(r.server.addr);
    c.handshake("special", "its-own-key").unwrap();
    let mut c = Client::connect(r.server.addr);
    let err = c.handshake("special", "fleet-key").unwrap_err();
    assert!(err.contains("shared key mismatch"), "{err}");
    assert!(closed(&mut c));
    // Wrong key.
    let mut c = Client::connect(r.server.addr);
    let err = c.handshake("nas2", "guess").unwrap_err();
    assert!(err.contains("shared key mismatch"), "{err}");
    // Events without a handshake.
    let mut c = Client::connect(r.server.addr);
    assert!(matches!(c.recv(), Some(ServerMessage::Helo(_))));
    c.send(&encode::message(
        "zpulse.metrics",
        t(2),
        &e,
        Some(&chunk(2)),
    ))
    .unwrap();
    assert!(c.recv().is_none());
    wait_until("3 auth failures", || {
        r.server.stats.snapshot()["auth_failures"] == 3
    });
    assert_eq!(all(&r).len(), 1);
}

/// A fresh peer sends one event with chunk `n`; the ack it gets (the server still works).
fn serves_a_new_peer(r: &Running, n: u8) -> Option<String> {
    let mut c = Client::connect(r.server.addr);
    let e = metrics("h", "c", "s", "x_pct", 1.0).to_msgpack();
    c.send(&encode::message(
        "zpulse.metrics",
        t(1),
        &e,
        Some(&chunk(n)),
    ))
    .unwrap();
    c.ack()
}

#[test]
fn limits_close_bad_peers_and_the_server_survives() {
    let r = start(|c| {
        c.max_frame_bytes = 64 << 10;
        c.max_connections = 4;
        c.read_timeout = Duration::from_millis(300);
        c.idle_timeout = Duration::from_secs(2);
    });
    // Too large a frame.
    let mut c = Client::connect(r.server.addr);
    let big = metrics("h", "c", "s", "x_pct", 1.0).with("pad", "x".repeat(1000));
    let mut entries = Entries::new();
    for s in 0..100 {
        entries.push_event(t(s), &big);
    }
    let _ = c.send(&entries.packed_forward("zpulse.metrics", Some(&chunk(1)), Compression::None));
    assert!(closed(&mut c));
    // A gzip bomb is refused (limit on inflation: 32 MiB by default). Built before connecting:
    // a new connection must complete its first message within read_timeout.
    let zeros = vec![0u8; 40 << 20];
    let bomb = encode::gzip(&zeros).unwrap();
    assert!(bomb.len() < 60_000, "{}", bomb.len());
    let mut msg = vec![0x93, 0xa1, b't', 0xc5];
    msg.extend_from_slice(&(bomb.len() as u16).to_be_bytes());
    msg.extend_from_slice(&bomb);
    msg.extend_from_slice(&[0x81, 0xaa]);
    msg.extend_from_slice(b"compressed");
    msg.extend_from_slice(&[0xa4]);
    msg.extend_from_slice(b"gzip");
    let mut c = Client::connect(r.server.addr);
    c.send(&msg).unwrap();
    assert!(closed(&mut c));
    // Garbage.
    let mut c = Client::connect(r.server.addr);
    c.send(&[0xc1, 0xff, 0x00]).unwrap();
    assert!(closed(&mut c));
    // Half a message, then silence: the read timeout.
    let mut c = Client::connect(r.server.addr);
    c.send(&[0x93, 0xa1]).unwrap();
    assert!(closed(&mut c));
    let s = r.server.stats.snapshot();
    assert!(s["protocol_errors"] >= 3, "{s:?}");
    assert!(s["timeouts"] >= 1, "{s:?}");
    // The connection cap: 4 idle connections held (each sent a batch: unproven ones hold
    // at most half the slots), the 5th is closed at once. On a server of its own whose
    // timeouts are long, so that the held ones stay open however slowly a loaded machine
    // gets to them.
    let capped = start(|c| {
        c.max_connections = 4;
        c.read_timeout = Duration::from_secs(60);
        c.first_message_timeout = Duration::from_secs(60);
    });
    let held: Vec<_> = (0..4u8)
        .map(|n| {
            let mut c = Client::connect(capped.server.addr);
            c.send_acked(
                "zpulse.metrics",
                &metrics("h", "c", "s", "x_pct", 1.0),
                10 + n,
            );
            c
        })
        .collect();
    wait_until("4 active", || {
        capped.server.stats.snapshot()["connections_active"] == 4
    });
    let mut fifth = Client::connect(capped.server.addr);
    assert!(closed(&mut fifth));
    assert!(capped.server.stats.snapshot()["connections_refused"] >= 1);
    drop(held);
    wait_until("held closed", || {
        capped.server.stats.snapshot()["connections_active"] == 0
    });
    // Both servers still work.
    assert_eq!(serves_a_new_peer(&capped, 2), Some(chunk(2)));
    assert_eq!(serves_a_new_peer(&r, 3), Some(chunk(3)));
}

#[test]
fn idle_connections_are_closed() {
    let r = start(|c| {
        c.read_timeout = Duration::from_millis(300);
        c.first_message_timeout = Duration::from_millis(300);
        c.idle_timeout = Duration::from_millis(600);
    });
    // Nothing at all: closed once first_message_timeout passes without a first message.
    let mut c = Client::connect(r.server.addr);
    assert!(closed(&mut c));
    assert_eq!(r.server.stats.snapshot()["timeouts"], 1);
    // After a batch, only keep-alives: closed after idle_timeout, quietly.
    let mut c = Client::connect(r.server.addr);
    let e = metrics("h", "c", "s", "x_pct", 1.0).to_msgpack();
    c.send(&encode::message(
        "zpulse.metrics",
        t(1),
        &e,
        Some(&chunk(1)),
    ))
    .unwrap();
    assert_eq!(c.ack(), Some(chunk(1)));
    let keepalives = keep_alive_until_closed(&mut c, Duration::from_millis(50));
    // 600 ms of keep-alives every 50 ms, give or take the scheduler.
    assert!(keepalives >= 6, "{keepalives}");
    assert_eq!(r.server.stats.snapshot()["timeouts"], 1);
}

/// Sends a keep-alive every `every` until the server closes the connection; how many went.
fn keep_alive_until_closed(c: &mut Client, every: Duration) -> u32 {
    c.s.set_read_timeout(Some(every)).unwrap();
    let mut sent = 0;
    let mut buf = [0u8; 64];
    loop {
        if c.send(&[0xc0]).is_err() {
            return sent;
        }
        sent += 1;
        match c.s.read(&mut buf) {
            Ok(0) => return sent,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return sent,
        }
        assert!(sent < 10_000, "never closed");
    }
}

/// Connections sending one nil every few seconds held every slot.
/// Keep-alives do not count as messages: a connection that completes none within
/// first_message_timeout is closed whatever keep-alives it sends, and each is counted.
#[test]
fn trickled_keep_alives_do_not_hold_a_slot() {
    // 16 slots: the 8 tricklers fit in the unproven half.
    let r = start(|c| {
        c.first_message_timeout = Duration::from_millis(400);
        c.max_connections = 16;
    });
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let addr = r.server.addr;
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                keep_alive_until_closed(&mut c, Duration::from_millis(100))
            })
        })
        .collect();
    for h in handles {
        let sent = h.join().unwrap();
        assert!(sent >= 3, "{sent}");
    }
    assert_eq!(r.server.stats.snapshot()["timeouts"], 8);
    // Every slot is free again: a real agent is served.
    assert_eq!(serves_a_new_peer(&r, 9), Some(chunk(9)));
}

/// One address holds at most max_connections_per_peer connections; the next is closed at
/// once and counted, and a slot freed is usable again.
#[test]
fn connections_per_peer_address_are_bounded() {
    let r = start(|c| {
        c.max_connections_per_peer = 3;
    });
    let held: Vec<_> = (0..3).map(|_| Client::connect(r.server.addr)).collect();
    wait_until("3 active", || {
        r.server.stats.snapshot()["connections_active"] == 3
    });
    let mut fourth = Client::connect(r.server.addr);
    assert!(closed(&mut fourth));
    assert_eq!(r.server.stats.snapshot()["connections_refused_peer"], 1);
    assert_eq!(r.server.stats.snapshot()["connections_refused"], 0);
    drop(held);
    wait_until("0 active", || {
        r.server.stats.snapshot()["connections_active"] == 0
    });
    assert_eq!(serves_a_new_peer(&r, 1), Some(chunk(1)));
}

fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[test]
fn web_page_shows_hosts_findings_and_charts() {
    let r = start(|_| {});
    let mut c = Client::connect(r.server.addr);
    let now = now_t().seconds;
    let mut entries = Entries::new();
    for i in 0..30u32 {
        let at = t(now - 3000 + i * 100);
        entries.push_event(
            at,
            &metrics("nas<1>", "hdd-saturation", "tank", "busy_pct", f64::from(i)),
        );
        entries.push_event(at, &metrics("nas<1>", "arc", "arc", "arc_hit_pct", 90.0));
    }
    entries.push_event(t(now - 100), &heartbeat("nas<1>", "0.1.0"));
    entries.push_event(
        t(now - 50),
        &finding(
            "nas<1>",
            "special-fill",
            "tank/special",
            State::Raised,
            Severity::Critical,
        ),
    );
    c.send(&entries.packed_forward("zpulse.metrics", Some(&chunk(1)), Compression::Gzip))
        .unwrap();
    assert!(c.ack().is_some());
    let addr = r.web_page();
    let (head, body) = get(addr, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("Content-Security-Policy: default-src 'none'"));
    assert!(body.contains("nas&lt;1&gt;"), "escaped host name");
    assert!(!body.contains("nas<1>"));
    assert!(body.contains("special-fill") && body.contains("critical"));
    assert!(!body.contains("<script") && !body.contains("http://") || !body.contains("src=\"http"));
    let (head, body) = get(addr, "/host/nas%3C1%3E");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("Finding history"));
    assert!(body.contains("<svg class=\"chart\""));
    assert!(body.contains("hdd-saturation tank busy_pct"));
    // Its last value (the 30th event's, i = 29) in the legend, a percentage as sent.
    assert!(
        body.contains("hdd-saturation tank busy_pct — latest 29%"),
        "{body}"
    );
    assert!(body.contains("arc arc_hit_pct — latest 90%"));
    assert!(body.contains("agent.heartbeat cpu_pct"));
    let (head, _) = get(addr, "/host/nobody");
    assert!(head.starts_with("HTTP/1.1 404"));
    // The host list's orders, as docs/collector.md lists them; anything else is a 400 with the
    // reason (`sort=name;drop` was served with the default order).
    for sort in ["name", "seen", "open", "worst"] {
        let (head, _) = get(addr, &format!("/?sort={sort}"));
        assert!(head.starts_with("HTTP/1.1 200"), "{sort}: {head}");
    }
    for sort in ["name;drop", "", "NAME"] {
        let (head, body) = get(addr, &format!("/?sort={sort}"));
        assert!(head.starts_with("HTTP/1.1 400"), "{sort}: {head}");
        assert!(
            body.contains("sort: one of name, seen, open, worst"),
            "{body}"
        );
    }
    let (_, body) = get(addr, "/api/hosts");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v[0]["version"], "0.1.0");
    assert_eq!(v[0]["open_findings"], 1);
    let (_, body) = get(addr, "/api/open");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v[0]["severity"], "critical");
    // Only GET and HEAD; a huge head is refused.
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "POST / HTTP/1.1\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 405"));
    let mut s = TcpStream::connect(addr).unwrap();
    let _ = s.write_all(format!("GET /{} HTTP/1.1\r\n", "a".repeat(20000)).as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 431"), "{out}");
}

#[test]
fn retention_by_age_and_size() {
    use zpulse_collector::store::{Batch, Retention, Row};
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("r.db")).unwrap();
    let now = 2_000_000_000i64;
    // 5000 events received one second apart, over the last 10,000 s (by receive time).
    for i in 0..5000i64 {
        let e = metrics("h", "c", "s", "x_pct", 1.0).with("pad", "y".repeat(200));
        let received = now - 10_000 + i;
        let batch = Batch {
            rows: vec![Row::from_event(
                "zpulse.metrics",
                received * 1_000_000_000,
                &e,
                "p",
            )],
            ..Batch::default()
        };
        s.store(&[batch], received).unwrap();
    }
    let p = s
        .retain(
            &Retention {
                max_age: Some(Duration::from_secs(9_000)),
                max_bytes: None,
                dedup_window: Duration::from_secs(60),
            },
            now,
        )
        .unwrap();
    assert_eq!(p.by_age, 1000);
    assert_eq!(s.counts().unwrap().0, 4000);
    let before = s.used_bytes().unwrap();
    let p = s
        .retain(
            &Retention {
                max_age: None,
                max_bytes: Some(before / 2),
                dedup_window: Duration::from_secs(60),
            },
            now,
        )
        .unwrap();
    assert!(p.by_size > 0);
    assert!(s.used_bytes().unwrap() <= before / 2);
    // The id ranges of the seconds whose events are gone went with them (each event had a
    // second of its own).
    let ranges: i64 = rusqlite::Connection::open(dir.path().join("r.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM received_ranges", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ranges, s.counts().unwrap().0);
    // The newest events are the ones kept.
    let newest = s
        .events(&Filter {
            limit: 1,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(newest[0].ts, (now - 10_000 + 4999) * 1_000_000_000);
}

/// Retention trusted the sender's clock (an event dated 1970 was deleted within a
/// minute, one dated 2096 never). Now it goes by receive time, and the sender's time is kept.
#[test]
fn retention_and_last_seen_go_by_receive_time() {
    use zpulse_collector::store::{Batch, Retention, Row};
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("t.db")).unwrap();
    let now = 1_800_000_000i64;
    let dated = |host: &str, secs: i64| {
        Row::from_event(
            "zpulse.agent",
            secs * 1_000_000_000,
            &heartbeat(host, "1.0"),
            "p",
        )
    };
    // 1970-01-01T00:00:10Z and 2096-01-01T00:00:00Z (4_001_184_000 s).
    let batch = Batch {
        rows: vec![dated("past", 10), dated("future", 4_001_184_000)],
        ..Batch::default()
    };
    s.store(&[batch], now).unwrap();
    let r = Retention {
        max_age: Some(Duration::from_secs(86400)),
        max_bytes: None,
        dedup_window: Duration::from_secs(60),
    };
    // A minute later: both kept.
    assert_eq!(s.retain(&r, now + 60).unwrap().by_age, 0);
    let rows = s
        .events(&Filter {
            limit: 10,
            oldest_first: true,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(
        rows.iter().map(|r| (r.ts, r.received)).collect::<Vec<_>>(),
        [(10_000_000_000, now), (4_001_184_000_000_000_000, now)]
    );
    // Their next heartbeats, a minute later by both clocks: last seen is the receive time;
    // the skew (judged from live heartbeats, `clock`) says how far each clock is off.
    let next = Batch {
        rows: vec![dated("past", 70), dated("future", 4_001_184_060)],
        ..Batch::default()
    };
    s.store(&[next], now + 60).unwrap();
    let hosts = s.hosts().unwrap();
    let by = |h: &str| hosts.iter().find(|x| x.host == h).unwrap().clone();
    assert_eq!(by("past").last_seen, now + 60);
    assert_eq!(by("past").clock_skew, 10 - now);
    assert_eq!(by("future").clock_skew, 4_001_184_000 - now);
    // A day and a second later: both deleted.
    assert_eq!(s.retain(&r, now + 86401).unwrap().by_age, 2);
}

/// A database reached through a symbolic link (a packager's /var/lib/… pointing elsewhere):
/// SQLite keeps the WAL beside the real file, and the syncer syncs that one, so batches are
/// acked.
#[test]
fn a_database_behind_a_symbolic_link_is_served() {
    let data = tempfile::tempdir().unwrap();
    let real = data.path().join("events.db");
    let r = start(|c| {
        let link = c.db.with_file_name("linked.db");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        c.db = link;
    });
    let mut c = Client::connect(r.server.addr);
    c.send_acked(
        "zpulse.metrics",
        &metrics("nas1", "arc", "arc", "hit_pct", 97.0),
        1,
    );
    assert!(data.path().join("events.db-wal").exists());
    let stored = Store::open_read_only(&r.dir.path().join("linked.db"))
        .unwrap()
        .counts()
        .unwrap();
    assert_eq!(stored.0, 1);
}

/// One metrics event of `host` as a batch, stored received at `received`.
fn store_received(s: &mut Store, host: &str, received: i64) {
    use zpulse_collector::store::{Batch, Row};
    let e = metrics(host, "c", "s", "x_pct", 1.0);
    let row = Row::from_event("zpulse.metrics", received * 1_000_000_000, &e, "p");
    let batch = Batch {
        rows: vec![row],
        ..Batch::default()
    };
    s.store(&[batch], received).unwrap();
}

fn hosts_stored(s: &Store) -> Vec<String> {
    let rows = s
        .events(&Filter {
            limit: 100,
            oldest_first: true,
            ..Filter::default()
        })
        .unwrap();
    rows.into_iter().map(|r| r.host).collect()
}

/// The forged-names attack: a sender naming a new host (or check) in every event. Once
/// retention has deleted their events the names go too; those still used stay.
#[test]
fn retention_deletes_the_names_no_event_uses() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    let mut s = Store::open(&db).unwrap();
    let now = 1_800_000_000i64;
    for i in 0..50 {
        store_received(&mut s, &format!("forged-{i}"), now - 2 * 86400);
    }
    store_received(&mut s, "nas1", now);
    let names = || -> Vec<String> {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut q = conn
            .prepare("SELECT name FROM names ORDER BY name")
            .unwrap();
        q.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    // 51 hosts and the one check, `c`, they all name (`metrics(host, "c", …)`).
    assert_eq!(names().len(), 52);
    let r = zpulse_collector::store::Retention {
        max_age: Some(Duration::from_secs(86400)),
        max_bytes: None,
        dedup_window: Duration::from_secs(60),
    };
    assert_eq!(s.retain(&r, now).unwrap().by_age, 50);
    assert_eq!(names(), ["c", "nas1"]);
    assert_eq!(hosts_stored(&s), ["nas1"]);
    // A name deleted comes back as a new one when it is used again.
    store_received(&mut s, "forged-7", now + 1);
    assert_eq!(hosts_stored(&s), ["nas1", "forged-7"]);
}

/// Retention by age finds old events through the id ranges kept per second of receive time
/// (no index on `received`): a range may hold younger events, by a clock set back or by ids
/// taken again after the newest rows were deleted, and those stay.
#[test]
fn retention_by_age_deletes_the_old_events_whatever_their_ids() {
    use zpulse_collector::store::{Batch, Part, Retention, Row};
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("r.db")).unwrap();
    let now = 2_000_000_000i64;
    // A heavy batch's first part, received 100 s ago, then deleted (its last part failed):
    // its ids are taken again by the next rows, received now.
    let rows = (0..3)
        .map(|_| {
            let e = metrics("failed", "c", "s", "x_pct", 1.0);
            Row::from_event("zpulse.metrics", now * 1_000_000_000, &e, "p")
        })
        .collect();
    let heavy = Batch {
        rows,
        ..Batch::default()
    };
    let tx = s.transaction().unwrap();
    let part = Store::apply_part(&tx, &heavy, 0..2, &[], now - 100).unwrap();
    tx.commit().unwrap();
    let Part::Pending(ids) = part else {
        panic!("{part:?}")
    };
    assert_eq!(s.discard(&ids).unwrap(), 2);
    store_received(&mut s, "young", now);
    store_received(&mut s, "old", now - 90);
    // The clock set back by a minute, then right again.
    store_received(&mut s, "young-after-a-step", now - 30);
    store_received(&mut s, "old-after-a-step", now - 95);
    store_received(&mut s, "newest", now);
    let r = Retention {
        max_age: Some(Duration::from_secs(50)),
        max_bytes: None,
        dedup_window: Duration::from_secs(60),
    };
    assert_eq!(s.retain(&r, now).unwrap().by_age, 2);
    // (By event time, which is the receive time here.)
    assert_eq!(hosts_stored(&s), ["young-after-a-step", "young", "newest"]);
    // The ranges of the deleted seconds went with them: nothing more to delete.
    assert_eq!(s.retain(&r, now).unwrap().by_age, 0);
    let r = Retention {
        max_age: Some(Duration::from_secs(10)),
        ..r
    };
    assert_eq!(s.retain(&r, now).unwrap().by_age, 1);
    assert_eq!(hosts_stored(&s), ["young", "newest"]);
}

/// Retention goes in steps of at most `RETENTION_STEP_ROWS` events (the writer runs one
/// between two transactions), by age and then by size, each saying whether more is to come;
/// the steps together delete what one pass at once did: every old event, then the oldest ones
/// until the pages in use fit the cap.
#[test]
fn retention_goes_in_bounded_steps_to_the_same_end() {
    use zpulse_collector::store::{Batch, RETENTION_STEP_ROWS, Retention, Row};
    let step = RETENTION_STEP_ROWS as u64;
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("r.db")).unwrap();
    let now = 2_000_000_000i64;
    // 2.25 steps of events received an hour ago, then 2.5 steps received now.
    let (old, young) = (2 * step + step / 4, 2 * step + step / 2);
    let mut stored = 0u64;
    while stored < old + young {
        let received = if stored < old { now - 3_600 } else { now };
        let rows = (0..1_000)
            .map(|i| {
                let e = metrics("h", "c", "s", "x_pct", 1.0).with("n", stored + i);
                Row::from_event("zpulse.metrics", received * 1_000_000_000, &e, "p")
            })
            .collect();
        let batch = Batch {
            rows,
            ..Batch::default()
        };
        s.store(&[batch], received).unwrap();
        stored += 1_000;
    }
    let by_age = Retention {
        max_age: Some(Duration::from_secs(600)),
        max_bytes: None,
        dedup_window: Duration::from_secs(60),
    };
    let mut steps = Vec::new();
    loop {
        let (p, more) = s.retain_step(&by_age, now).unwrap();
        steps.push((p.by_age, more));
        if !more {
            break;
        }
    }
    assert_eq!(
        steps,
        [(step, true), (step, true), (step / 4, false)],
        "by age"
    );
    assert_eq!(s.counts().unwrap().0 as u64, young);
    // Only the young events are left, the oldest of them first.
    let oldest = s
        .events(&Filter {
            limit: 1,
            oldest_first: true,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(oldest[0].ts, now * 1_000_000_000);

    let cap = s.used_bytes().unwrap() / 4;
    let by_size = Retention {
        max_age: None,
        max_bytes: Some(cap),
        ..by_age
    };
    let mut deleted = Vec::new();
    loop {
        let (p, more) = s.retain_step(&by_size, now).unwrap();
        deleted.push(p.by_size);
        if !more {
            break;
        }
    }
    // Three quarters of the events over the cap: more than a step's worth, so in steps.
    assert!(deleted.len() > 1, "{deleted:?}");
    assert!(
        deleted.iter().all(|d| (1..=step).contains(d)),
        "{deleted:?}"
    );
    assert!(s.used_bytes().unwrap() <= cap);
    let left = young - deleted.iter().sum::<u64>();
    assert_eq!(s.counts().unwrap().0 as u64, left);
    // The newest events are the ones kept.
    let newest = s
        .events(&Filter {
            limit: 1,
            ..Filter::default()
        })
        .unwrap();
    let data: serde_json::Value = serde_json::from_str(&newest[0].data).unwrap();
    assert_eq!(data["n"], serde_json::json!(old + young - 1), "{data}");
    // Nothing more to do: a step now deletes nothing.
    let (p, more) = s.retain_step(&by_size, now).unwrap();
    assert_eq!((p.by_age, p.by_size, more), (0, 0, false));
}

/// A retention step is one transaction: one that fails half-way (here a trigger refuses
/// the deletion of the seconds' id ranges, after the step deleted their events) leaves every
/// event and range as it was, and no transaction open: the next batch is stored and the next
/// step does the whole work. Run as separate statements, the events went and their ranges
/// stayed.
#[test]
fn a_retention_step_that_fails_half_way_changes_nothing() {
    use zpulse_collector::store::Retention;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let mut s = Store::open(&db).unwrap();
    let now = 2_000_000_000i64;
    for i in 0..3 {
        store_received(&mut s, &format!("old-{i}"), now - 7_200 + i);
    }
    store_received(&mut s, "young", now);
    let raw = rusqlite::Connection::open(&db).unwrap();
    let ranges = || -> i64 {
        raw.query_row("SELECT count(*) FROM received_ranges", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(ranges(), 4);
    raw.execute_batch(
        "CREATE TRIGGER refuse BEFORE DELETE ON received_ranges
         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
    )
    .unwrap();
    let r = Retention {
        max_age: Some(Duration::from_secs(3_600)),
        max_bytes: None,
        dedup_window: Duration::from_secs(60),
    };
    let err = s.retain_step(&r, now).unwrap_err();
    assert!(err.contains("refused by the test"), "{err}");
    assert_eq!(hosts_stored(&s), ["old-0", "old-1", "old-2", "young"]);
    assert_eq!(ranges(), 4);
    raw.execute_batch("DROP TRIGGER refuse").unwrap();
    store_received(&mut s, "newest", now);
    let (p, more) = s.retain_step(&r, now).unwrap();
    assert_eq!((p.by_age, more), (3, false));
    assert_eq!(hosts_stored(&s), ["young", "newest"]);
    // Both received in the same second: one range.
    assert_eq!(ranges(), 1);
}

/// A database of an earlier release (an index on `received` and one on severity, no id
/// ranges) opens: the ranges are made from its events, the two indexes go, and retention
/// deletes its old events as before and keeps the rest.
#[test]
fn a_database_of_an_earlier_release_keeps_its_retention() {
    use zpulse_collector::store::Retention;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    let now = 2_000_000_000i64;
    let mut s = Store::open(&db).unwrap();
    store_received(&mut s, "old", now - 100);
    store_received(&mut s, "young", now - 10);
    store_received(&mut s, "old-after-a-step", now - 200);
    drop(s);
    // As the earlier release left it: its indexes, and no ranges for its events.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DROP TABLE received_ranges;
         CREATE INDEX events_severity_ts ON events(severity, ts);
         CREATE INDEX events_received ON events(received);",
    )
    .unwrap();
    drop(conn);
    let mut s = Store::open(&db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let indexes: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master
             WHERE name IN ('events_received', 'events_severity_ts')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 0);
    store_received(&mut s, "newest", now);
    let r = Retention {
        max_age: Some(Duration::from_secs(50)),
        max_bytes: None,
        dedup_window: Duration::from_secs(60),
    };
    assert_eq!(s.retain(&r, now).unwrap().by_age, 2);
    assert_eq!(hosts_stored(&s), ["young", "newest"]);
}

/// A collector started on a database whose events expired while it was stopped: it no longer
/// runs retention to its end before it listens; its writer takes the pass in steps from the
/// start, between the transactions of the batches that come meanwhile. Every expired event
/// goes (50,000: three steps), counted in `/api/stats`; the batch sent at once is acked and
/// kept.
#[test]
fn events_that_expired_while_stopped_go_in_the_writer_s_first_pass() {
    use zpulse_collector::store::Retention;
    const EXPIRED: usize = 50_000;
    let now = i64::from(now_t().seconds);
    let r = start(|c| {
        c.retention = Retention {
            max_age: Some(Duration::from_secs(DAY as u64)),
            ..c.retention
        };
        store_expired(&c.db, EXPIRED, 1, now);
    });
    let mut c = Client::connect(r.server.addr);
    c.send_acked(
        "zpulse.metrics",
        &metrics("nas1", "arc", "arc", "hit_pct", 97.0),
        1,
    );
    // `/api/stats` counts what the pass deleted, and says when it is over.
    wait_until("the pass is over", || {
        let stats = r.server.stats.snapshot();
        stats["retention_deleted"] == EXPIRED as u64 && stats["retention_running"] == 0
    });
    let kept = all(&r);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].host, "nas1");
}

/// The collector stopped in the middle of its first pass (a restart, a SIGTERM): each step is
/// a transaction and the old seconds' id ranges start past what it deleted, so every expired
/// event left is still in an old range, and the next start's pass deletes them all.
#[test]
fn a_pass_stopped_half_way_goes_on_at_the_next_start() {
    use zpulse_collector::config::Config;
    use zpulse_collector::server::Server;
    use zpulse_collector::store::Retention;
    const EXPIRED: usize = 200_000;
    let now = i64::from(now_t().seconds);
    let retention = Retention {
        max_age: Some(Duration::from_secs(DAY as u64)),
        ..Retention::default()
    };
    let r = start(|c| {
        c.retention = retention;
        // Eight seconds of receive time, eight ranges of ids, 25,000 each: a step (20,000)
        // ends inside a range.
        store_expired(&c.db, EXPIRED, 8, now);
    });
    wait_until("the pass's first step", || {
        r.server.stats.snapshot()["retention_deleted"] > 0
    });
    let Running { server, db, dir } = r;
    server.stop();
    let (left, outside) = expired_left(&db, now - DAY);
    assert!(
        left > 0 && left < EXPIRED as i64,
        "stopped half-way: {left} left"
    );
    assert_eq!(outside, 0, "every expired event left is in an old range");
    let again = Server::start(Config {
        listen: "127.0.0.1:0".into(),
        db: db.clone(),
        retention,
        ..Config::default()
    })
    .unwrap();
    wait_until("the next start's pass", || {
        let stats = again.stats.snapshot();
        stats["retention_deleted"] == left as u64 && stats["retention_running"] == 0
    });
    again.stop();
    assert_eq!(Store::open_read_only(&db).unwrap().counts().unwrap().0, 0);
    drop(dir);
}

#[test]
fn unfinished_messages_are_bounded_across_all_connections() {
    // Each peer stays under the frame limit, but two together pass the global budget.
    let r = start(|c| {
        c.max_buffered_bytes = 100_000;
        c.read_timeout = Duration::from_secs(20);
    });
    let partial = |announced: u32, sent: usize| {
        // [tag, bin32(announced bytes) …] cut after `sent` bytes of the blob.
        let mut m = vec![0x93, 0xa1, b't', 0xc6];
        m.extend_from_slice(&announced.to_be_bytes());
        m.extend(std::iter::repeat_n(0u8, sent));
        m
    };
    let mut first = Client::connect(r.server.addr);
    first.send(&partial(70_000, 60_000)).unwrap();
    wait_until("the first peer's bytes are held", || {
        r.server.stats.snapshot()["buffered_bytes"] >= 60_000
    });
    let mut second = Client::connect(r.server.addr);
    second.send(&partial(70_000, 60_000)).unwrap();
    assert!(
        closed(&mut second),
        "the peer that passes the budget is closed"
    );
    assert!(r.server.stats.snapshot()["over_budget"] >= 1);
    // The first peer goes away: its held bytes are released, and the server serves
    // new peers as before.
    drop(first);
    wait_until("released", || {
        r.server.stats.snapshot()["buffered_bytes"] == 0
    });
    assert_eq!(serves_a_new_peer(&r, 9), Some(chunk(9)));
}

/// The events table and its indexes as the releases before `names` made them: host and
/// check as text in every row.
const EVENTS_WITH_TEXT_NAMES: &str = "
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        ts INTEGER NOT NULL,
        received INTEGER NOT NULL,
        tag TEXT NOT NULL,
        kind TEXT NOT NULL,
        host TEXT NOT NULL,
        check_name TEXT NOT NULL,
        severity INTEGER,
        state TEXT,
        subject TEXT NOT NULL,
        summary TEXT NOT NULL,
        advice TEXT,
        data TEXT NOT NULL
    );
    CREATE INDEX events_ts ON events(ts);
    CREATE INDEX events_host_ts ON events(host, ts);
    CREATE INDEX events_check_ts ON events(check_name, ts);
    CREATE INDEX events_finding_host_ts ON events(host, ts) WHERE kind = 'finding';
    CREATE INDEX events_finding_ts ON events(ts) WHERE kind = 'finding';
    CREATE INDEX events_zevent_host_ts ON events(host, ts) WHERE kind = 'zevent';
    CREATE TABLE received_ranges (
        received INTEGER PRIMARY KEY,
        first_id INTEGER NOT NULL,
        last_id INTEGER NOT NULL
    );";

/// A database as an earlier release wrote it: three events with host and check as text, at
/// ids 7, 8 and 12 (ids a retention left), received at `received`.
fn database_with_text_names(db: &std::path::Path, received: i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    conn.execute_batch(EVENTS_WITH_TEXT_NAMES).unwrap();
    conn.execute_batch(&format!(
        "INSERT INTO events VALUES
           (7, 1000000000000000000, {received}, 'zpulse.findings', 'finding', 'nas1',
            'pool-health', 2, 'raised', 'tank', 'tank is DEGRADED', 'replace the disk',
            '{{\"errors\":3}}'),
           (8, 1000000001000000000, {received}, 'zpulse.metrics', 'metrics', 'nas2', 'disk',
            0, NULL, 'sda', 'busy_pct 40', NULL, '{{\"busy_pct\":40.0}}'),
           (12, 1000000002000000000, {received}, 'zpulse.zevents', 'zevent', 'nas1',
            'zevent', 1, NULL, 'tank', 'checksum error', NULL, '{{}}');
         INSERT INTO received_ranges VALUES ({received}, 7, 12);"
    ))
    .unwrap();
}

fn events_of(s: &Store, f: Filter) -> Vec<(i64, String, String, String, String)> {
    s.events(&Filter {
        limit: 100,
        oldest_first: true,
        bounded: true,
        ..f
    })
    .unwrap()
    .into_iter()
    .map(|r| (r.ts / 1_000_000_000, r.host, r.check, r.kind, r.data))
    .collect()
}

/// A database whose events name their host and check as text (the releases before `names`)
/// is converted when the collector opens it: its events are found by host, check and kind
/// as before, with their fields; events stored after it come after them; retention by age
/// still finds them by their ids.
#[test]
fn a_database_with_text_names_is_converted_and_its_events_found() {
    use zpulse_collector::store::{Batch, Retention, Row};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("text-names.db");
    let now = 2_000_000_000i64;
    database_with_text_names(&db, now - 100);
    let mut s = Store::open(&db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let text_columns: i64 = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('events')
             WHERE name IN ('host', 'check_name')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(text_columns, 0, "the rows hold ids now");
    let nas1 = Filter {
        host: Some("nas1".into()),
        ..Filter::default()
    };
    let finding = (
        1_000_000_000,
        "nas1".to_owned(),
        "pool-health".to_owned(),
        "finding".to_owned(),
        "{\"errors\":3}".to_owned(),
    );
    let zevent = (
        1_000_000_002,
        "nas1".to_owned(),
        "zevent".to_owned(),
        "zevent".to_owned(),
        "{}".to_owned(),
    );
    let disk = (
        1_000_000_001,
        "nas2".to_owned(),
        "disk".to_owned(),
        "metrics".to_owned(),
        "{\"busy_pct\":40.0}".to_owned(),
    );
    assert_eq!(
        events_of(&s, nas1.clone()),
        [finding.clone(), zevent.clone()]
    );
    assert_eq!(
        events_of(
            &s,
            Filter {
                check: Some("disk".into()),
                ..Filter::default()
            }
        ),
        [disk]
    );
    assert_eq!(
        events_of(
            &s,
            Filter {
                kinds: Some(vec!["zevent".into()]),
                ..nas1.clone()
            }
        ),
        [zevent]
    );
    assert_eq!(
        events_of(
            &s,
            Filter {
                host: Some("nas3".into()),
                ..Filter::default()
            }
        ),
        []
    );
    let old = s
        .events(&Filter {
            limit: 1,
            ..nas1.clone()
        })
        .unwrap();
    assert_eq!(
        (old[0].severity, old[0].subject.as_str(), old[0].received),
        (Some(1), "tank", now - 100)
    );
    // Stored after the conversion: the same host and a new check, at a later time.
    let e = metrics("nas1", "arc", "arc", "hit_pct", 99.0);
    let row = Row::from_event("zpulse.metrics", 1_000_000_003 * 1_000_000_000, &e, "p");
    let batch = Batch {
        rows: vec![row],
        ..Batch::default()
    };
    s.store(&[batch], now).unwrap();
    let hosts: Vec<(i64, String, String)> = events_of(&s, nas1)
        .into_iter()
        .map(|(ts, host, check, _, _)| (ts, host, check))
        .collect();
    assert_eq!(
        hosts,
        [
            (1_000_000_000, "nas1".to_owned(), "pool-health".to_owned()),
            (1_000_000_002, "nas1".to_owned(), "zevent".to_owned()),
            (1_000_000_003, "nas1".to_owned(), "arc".to_owned()),
        ]
    );
    let new_id: i64 = conn
        .query_row("SELECT max(id) FROM events", [], |r| r.get(0))
        .unwrap();
    assert!(new_id > 12, "ids go on after the old ones: {new_id}");
    // Retention by age deletes the three old events (received 100 s ago), by their ids.
    let r = Retention {
        max_age: Some(Duration::from_secs(50)),
        max_bytes: None,
        dedup_window: Duration::from_secs(60),
    };
    assert_eq!(s.retain(&r, now).unwrap().by_age, 3);
    assert_eq!(hosts_stored(&s), ["nas1"]);
}

/// A database with text names opened read-only (a query before the collector ran on it):
/// read as it is.
#[test]
fn a_database_with_text_names_is_read_as_it_is_when_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("text-names.db");
    database_with_text_names(&db, 1_000_000_000);
    let s = Store::open_read_only(&db).unwrap();
    let nas2: Vec<(i64, String, String)> = events_of(
        &s,
        Filter {
            host: Some("nas2".into()),
            ..Filter::default()
        },
    )
    .into_iter()
    .map(|(ts, host, check, _, _)| (ts, host, check))
    .collect();
    assert_eq!(
        nas2,
        [(1_000_000_001, "nas2".to_owned(), "disk".to_owned())]
    );
    assert_eq!(
        events_of(
            &s,
            Filter {
                check: Some("pool-health".into()),
                ..Filter::default()
            }
        )
        .len(),
        1
    );
}

/// Rows of many hosts and checks (more than are looked up one by one) get their own names.
#[test]
fn events_of_many_hosts_and_checks_have_their_names() {
    use zpulse_collector::store::{Batch, Row};
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("many.db")).unwrap();
    let sent: Vec<(i64, String, String)> = (0..40)
        .map(|i| {
            (
                1_000_000_000 + i,
                format!("nas{i}"),
                format!("check{}", i % 25),
            )
        })
        .collect();
    let batches: Vec<Batch> = sent
        .iter()
        .map(|(ts, host, check)| Batch {
            rows: vec![Row::from_event(
                "zpulse.metrics",
                ts * 1_000_000_000,
                &metrics(host, check, "s", "x_pct", 1.0),
                "p",
            )],
            ..Batch::default()
        })
        .collect();
    s.store(&batches, 2_000_000_000).unwrap();
    let read: Vec<(i64, String, String)> = events_of(&s, Filter::default())
        .into_iter()
        .map(|(ts, host, check, _, _)| (ts, host, check))
        .collect();
    assert_eq!(read, sent);
    let one: Vec<(i64, String, String)> = events_of(
        &s,
        Filter {
            check: Some("check3".into()),
            ..Filter::default()
        },
    )
    .into_iter()
    .map(|(ts, host, check, _, _)| (ts, host, check))
    .collect();
    assert_eq!(one, [sent[3].clone(), sent[28].clone()]);
}
