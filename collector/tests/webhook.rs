//! Webhooks: a receiver that is down when a finding is raised loses nothing (the delivery
//! waits in the database queue and is retried with backoff); once up, it gets the raised and
//! then the cleared event in order, each signed: the `X-Zpulse-Signature` header is checked
//! with `openssl dgst -sha256 -hmac`, an implementation independent of ours.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use zpulse_collector::alert::{Alerting, Webhook, WebhookQueue};
use zpulse_proto::event::{Severity, State};

const SECRET: &str = "a webhook secret of some length";

/// Accepts requests, answers 200, and hands on (signature header, body).
fn receiver(listener: TcpListener, tx: mpsc::Sender<(String, String)>) {
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let (mut sig, mut len) = (String::new(), 0usize);
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let (k, v) = line.split_once(':').unwrap_or(("", ""));
                if k.eq_ignore_ascii_case("x-zpulse-signature") {
                    sig = v.trim().to_owned();
                }
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = tx.send((sig, String::from_utf8(body).unwrap()));
        }
    });
}

/// A collector in-process whose alerting posts to one webhook at `url`.
fn collector_with_webhook(url: &str, resend_every: Duration) -> Running {
    let alerting = Alerting {
        resend_every,
        webhooks: vec![Webhook {
            url: url.into(),
            secret: SECRET.into(),
        }],
        ..Alerting::default()
    };
    let r = start(|c| c.alerting = alerting.clone());
    zpulse_collector::alert::spawn(alerting, r.db.clone()).unwrap();
    r
}

fn openssl_hmac(body: &str) -> String {
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha256", "-hmac", SECRET])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("openssl (apt-get install openssl; .ci/run does)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    // "SHA2-256(stdin)= 9f86…"
    out.rsplit(' ').next().unwrap().trim().to_owned()
}

#[test]
fn a_receiver_outage_loses_nothing_and_every_delivery_is_signed() {
    // A port with nobody listening: the receiver is down.
    let addr: SocketAddr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}/hook");
    let r = collector_with_webhook(&url, Duration::from_millis(200));
    let mut c = Client::connect(r.server.addr);
    let crit = finding(
        "nas1",
        "special-fill",
        "tank",
        State::Raised,
        Severity::Critical,
    );
    c.send_acked("zpulse.finding", &crit, 1);
    let queue = WebhookQueue::open(&r.db).unwrap();
    wait_until("the raise is queued", || queue.queued(&url).unwrap() == 1);
    // Cleared while the receiver is still down: queued behind it.
    let cleared = finding(
        "nas1",
        "special-fill",
        "tank",
        State::Cleared,
        Severity::Critical,
    );
    c.send_acked("zpulse.finding", &cleared, 2);
    wait_until("the clear is queued", || queue.queued(&url).unwrap() == 2);

    // The receiver comes up: both arrive, in order, signed.
    let (tx, rx) = mpsc::channel();
    receiver(TcpListener::bind(addr).unwrap(), tx);
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(
            rx.recv_timeout(Duration::from_secs(30))
                .expect("a delivery"),
        );
    }
    for (sig, body) in &got {
        assert_eq!(sig, &format!("sha256={}", openssl_hmac(body)), "{body}");
    }
    let events: Vec<serde_json::Value> = got
        .iter()
        .map(|(_, b)| serde_json::from_str(b).unwrap())
        .collect();
    assert_eq!(events[0]["event"], "raised");
    assert_eq!(events[0]["host"], "nas1");
    assert_eq!(events[0]["check"], "special-fill");
    assert_eq!(events[0]["severity"], "critical");
    assert_eq!(events[1]["event"], "cleared");
    assert_eq!(events[1]["subject"], "tank");
    wait_until("the queue is empty", || queue.queued(&url).unwrap() == 0);
}

/// The queue is the database's: `kill -9` the collector (the real binary) with a delivery
/// queued for a receiver that is down, start it again on the same database, and nothing is
/// lost or sent twice: the raise queued before the kill and the clear queued after the
/// restart arrive once each, in order; after another restart only a new change is sent.
#[test]
fn the_webhook_queue_survives_a_collector_restart() {
    let hook = free_addr();
    let url = format!("http://{hook}/hook");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("events.db");
    let config = dir.path().join("zpulse-collector.toml");
    std::fs::write(
        &config,
        format!(
            "[alerting]\nresend_every = \"200ms\"\n\n[[alerting.webhook]]\nurl = \"{url}\"\n\
             secret = \"{SECRET}\"\n"
        ),
    )
    .unwrap();
    let listen = free_addr().to_string();
    let serve = || {
        Collector::serve(&[
            "--listen".as_ref(),
            listen.as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
            "--config".as_ref(),
            config.as_os_str(),
        ])
    };
    let send = |n: u8, state: State, subject: &str| {
        let e = finding("nas1", "special-fill", subject, state, Severity::Critical);
        Client::connect(listen.parse().unwrap()).send_acked("zpulse.finding", &e, n);
    };
    let collector = serve();
    send(1, State::Raised, "tank");
    let queued = || WebhookQueue::open(&db).unwrap().queued(&url).unwrap();
    wait_until("the raise is queued", || queued() == 1);
    collector.kill();
    // Restarted: the raise is still queued, and the clear joins it behind.
    assert_eq!(queued(), 1);
    let collector = serve();
    send(2, State::Cleared, "tank");
    wait_until("the clear is queued", || queued() == 2);
    // The receiver comes up: each arrives once, in order.
    let (tx, rx) = mpsc::channel();
    receiver(TcpListener::bind(hook).unwrap(), tx);
    let next = || {
        let (sig, body) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a delivery");
        assert_eq!(sig, format!("sha256={}", openssl_hmac(&body)), "{body}");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()
    };
    let (first, second) = (next(), next());
    assert_eq!(
        (&first["event"], &first["subject"]),
        (&"raised".into(), &"tank".into())
    );
    assert_eq!(
        (&second["event"], &second["subject"]),
        (&"cleared".into(), &"tank".into())
    );
    wait_until("the queue is empty", || queued() == 0);
    // Once more through a restart: what was delivered is not sent again; a new raise is the
    // next (and only) delivery.
    collector.kill();
    let _collector = serve();
    send(3, State::Raised, "tank/special");
    let third = next();
    assert_eq!(
        (&third["event"], &third["subject"]),
        (&"raised".into(), &"tank/special".into())
    );
    wait_until("the queue is empty", || queued() == 0);
    assert!(rx.try_recv().is_err(), "a delivery was sent twice");
}

/// Forty changes of one finding within a second (raised, updated, cleared, raised
/// again, …), with a resend round of a minute: forty posts, in the order sent, each the
/// change it was (its state and its summary from the event sent).
#[test]
fn forty_changes_in_a_second_are_forty_posts_in_order() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    receiver(listener, tx);
    let round = Duration::from_secs(60);
    let r = collector_with_webhook(&url, round);
    let cycle = [
        State::Raised,
        State::Updated,
        State::Updated,
        State::Cleared,
    ];
    let sent: Vec<(State, String)> = (0..40)
        .map(|i| (cycle[i % 4], format!("change {i}")))
        .collect();
    let mut c = Client::connect(r.server.addr);
    let t0 = std::time::Instant::now();
    for (i, (state, summary)) in sent.iter().enumerate() {
        let mut e = finding("nas1", "special-fill", "tank", *state, Severity::Critical);
        e.summary = summary.clone();
        c.send_acked("zpulse.finding", &e, i as u8 + 1);
    }
    // What the test is about: every change came within one resend round, so a delivery
    // that kept only a round's last state would lose the others.
    assert!(t0.elapsed() < round, "{:?}", t0.elapsed());
    let mut got = Vec::new();
    while got.len() < 40 {
        let (sig, body) = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("only {} posts", got.len()));
        assert_eq!(
            sig,
            zpulse_collector::alert::signature(SECRET, body.as_bytes())
        );
        got.push(serde_json::from_str::<serde_json::Value>(&body).unwrap());
    }
    for (post, (state, summary)) in got.iter().zip(&sent) {
        assert_eq!(post["event"], state.as_str(), "{post}");
        if *state != State::Cleared {
            assert_eq!(post["summary"], summary.as_str(), "{post}");
        }
    }
    std::thread::sleep(Duration::from_millis(1500));
    assert!(rx.try_recv().is_err(), "more than forty posts");
}
