//! `zpulse-collector ack` and `unack`, the real binary against Debian's real Alertmanager on
//! loopback: an ack is a silence of that finding (its matchers, expiry, who and why, as
//! Alertmanager lists it), the alert stays listed, suppressed, never resolved; the webhook
//! hears `acknowledged`, never `cleared`; `open`, `/api/open` and the page say who, when, why
//! and until when; unack expires the silence; an unknown host, check or subject exits 1.

mod common;

use common::alertmanager::{Alertmanager, get_json};
use common::*;
use serde_json::Value as Json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use zpulse_proto::event::{Severity, State};

/// Accepts webhook posts, answers 200, hands on each body.
fn receiver(listener: TcpListener, tx: mpsc::Sender<Json>) {
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = tx.send(serde_json::from_slice(&body).unwrap());
        }
    });
}

fn collector(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
        .args(args)
        .env_remove("SUDO_USER")
        .output()
        .unwrap()
}

/// Asserts that a command succeeded.
fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn the_alert(am: SocketAddr) -> Option<Json> {
    get_json(am, "/api/v2/alerts").into_iter().find(|a| {
        a["labels"]["host"] == "nas1"
            && a["labels"]["check"] == "pool-health.state"
            && a["labels"]["subject"] == "tank"
    })
}

/// The real collector on `dir`'s database with `[alerting]` as given, and the degraded
/// pool finding of nas1 (the one [`the_alert`] looks for) sent to it: the collector and its
/// config file.
fn serve_with_a_finding(dir: &std::path::Path, alerting: &str) -> (Collector, std::path::PathBuf) {
    let config = dir.join("zpulse-collector.toml");
    std::fs::write(
        &config,
        format!("db = \"events.db\"\n[alerting]\n{alerting}"),
    )
    .unwrap();
    let listen = free_addr().to_string();
    let serving = Collector::serve(&[
        "--listen".as_ref(),
        listen.as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    let raised = finding(
        "nas1",
        "pool-health.state",
        "tank",
        State::Raised,
        Severity::Critical,
    )
    .with("health", "DEGRADED");
    Client::connect(listen.parse().unwrap()).send_acked("zpulse.finding", &raised, 1);
    (serving, config)
}

/// `ack` of nas1's degraded-pool finding by alice, "replacing sdc", with `more` options.
fn alice_acks(config: &str, more: &[&str]) -> Output {
    let ack = [
        "ack",
        "nas1",
        "pool-health.state",
        "tank",
        "--reason",
        "replacing sdc",
        "--by",
        "alice",
        "--config",
        config,
    ];
    collector(&[&ack[..], more].concat())
}

/// A silence's matchers as (name, value), sorted; each must be an exact match.
fn matchers(silence: &Json) -> Vec<(String, String)> {
    let mut m: Vec<(String, String)> = silence["matchers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(
                (&m["isRegex"], &m["isEqual"]),
                (&false.into(), &true.into())
            );
            (
                m["name"].as_str().unwrap().to_owned(),
                m["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    m.sort();
    m
}

/// The matchers of nas1's degraded-pool finding, from what was sent.
fn the_findings_matchers() -> Vec<(String, String)> {
    [
        ("check", "pool-health.state"),
        ("host", "nas1"),
        ("subject", "tank"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .to_vec()
}

#[test]
fn an_ack_is_a_silence_never_a_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let alertmanager = Alertmanager::plain(free_addr());
    let am = alertmanager.addr;
    let hook = TcpListener::bind("127.0.0.1:0").unwrap();
    let hook_url = format!("http://{}/hook", hook.local_addr().unwrap());
    let (tx, posts) = mpsc::channel();
    receiver(hook, tx);
    let db = dir.path().join("events.db");
    let (_serving, config) = serve_with_a_finding(
        dir.path(),
        &format!(
            "alertmanager = [\"http://{am}\"]\nresend_every = \"60s\"\n\
             [[alerting.webhook]]\nurl = \"{hook_url}\"\n\
             secret = \"a webhook secret of some length\"\n"
        ),
    );
    wait_until("the alert is active", || {
        the_alert(am).is_some_and(|a| a["status"]["state"] == "active")
    });
    let first = posts.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first["event"], "raised");

    let cfg = config.to_str().unwrap();
    // Unknown host, check, subject: exit 1, naming which; nothing silenced.
    for (args, says) in [
        (["nohost", "pool-health.state", "tank"], "no host nohost"),
        (
            ["nas1", "pool-health.nocheck", "tank"],
            "no finding of check",
        ),
        (["nas1", "pool-health.state", "nopool"], "about nopool"),
    ] {
        let out = collector(&[&["ack"][..], &args, &["--reason", "x", "--config", cfg]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(get_json(am, "/api/v2/silences").is_empty());

    let acked_at = now_s();
    let out = alice_acks(cfg, &["--until", "2h"]);
    succeeded(&out);
    // The silence, as Alertmanager lists it.
    let silences = get_json(am, "/api/v2/silences");
    assert_eq!(silences.len(), 1, "{silences:#?}");
    let s = &silences[0];
    assert_eq!(s["status"]["state"], "active");
    assert_eq!(s["createdBy"], "alice");
    assert_eq!(s["comment"], "replacing sdc");
    assert_eq!(matchers(s), the_findings_matchers());
    let ends = s["endsAt"].as_str().unwrap();
    let expected = [acked_at + 7200, acked_at + 7201]
        .map(|t| zpulse_collector::query::utc(t)[..16].to_owned());
    assert!(
        expected.iter().any(|e| ends.starts_with(e.as_str())),
        "{ends} vs {expected:?}"
    );
    let id = s["id"].as_str().unwrap().to_owned();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));

    // The alert stays, suppressed by that silence, for longer than a change takes to reach
    // Alertmanager (never resolved).
    wait_until("the alert is suppressed", || {
        the_alert(am).is_some_and(|a| a["status"]["state"] == "suppressed")
    });
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        let a = the_alert(am).expect("the acked alert is still listed");
        assert_eq!(a["status"]["silencedBy"][0], id.as_str());
        std::thread::sleep(Duration::from_millis(200));
    }
    // The webhook: acknowledged, with who and why; nothing else.
    let ack = posts.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        (&ack["event"], &ack["by"], &ack["reason"]),
        (
            &"acknowledged".into(),
            &"alice".into(),
            &"replacing sdc".into()
        )
    );
    assert!(posts.try_recv().is_err());

    // `open` (table and JSON), and the page, say who, when, why and until when.
    let db_arg = db.to_str().unwrap();
    let out = collector(&["open", "--db", db_arg, "--format", "json"]);
    let open: Json = serde_json::from_slice(&out.stdout).unwrap();
    let a = &open[0]["ack"];
    assert_eq!(
        (&a["by"], &a["reason"]),
        (&"alice".into(), &"replacing sdc".into())
    );
    assert_eq!(
        a["until"].as_i64().unwrap() - a["at"].as_i64().unwrap(),
        7200
    );
    let out = collector(&["open", "--db", db_arg]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("acknowledged by alice") && table.contains("replacing sdc"),
        "{table}"
    );
    let page = zpulse_collector::http::Page {
        db: db.clone(),
        ..Default::default()
    };
    for target in ["/host/nas1", "/api/open"] {
        let (code, _, body) = zpulse_collector::http::route(target, &page, &Default::default());
        assert_eq!(code, 200);
        assert!(
            body.contains("alice") && body.contains("replacing sdc"),
            "{target}: {body}"
        );
    }

    // Unack: the silence expires, the alert fires again, the webhook hears it.
    let out = collector(&[
        "unack",
        "nas1",
        "pool-health.state",
        "tank",
        "--by",
        "bob",
        "--config",
        cfg,
    ]);
    succeeded(&out);
    let silences = get_json(am, "/api/v2/silences");
    assert_eq!(silences[0]["status"]["state"], "expired");
    wait_until("the alert is active again", || {
        the_alert(am).is_some_and(|a| a["status"]["state"] == "active")
    });
    let unack = posts.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        (&unack["event"], &unack["by"]),
        (&"unacknowledged".into(), &"bob".into())
    );
    let out = collector(&[
        "unack",
        "nas1",
        "pool-health.state",
        "tank",
        "--config",
        cfg,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a second unack: nothing to remove"
    );
}

/// An ack made while one of two Alertmanagers is down: `ack` says so (exit 1, naming it)
/// and the one that is up has its silence at once; the other gets the same silence from
/// the running collector once it answers again, and mutes the alert there too.
#[test]
fn an_ack_made_while_an_alertmanager_is_down_reaches_it_when_it_answers() {
    let dir = tempfile::tempdir().unwrap();
    let up = Alertmanager::plain(free_addr());
    let down = free_addr();
    let (_serving, config) = serve_with_a_finding(
        dir.path(),
        &format!(
            "alertmanager = [\"http://{}\", \"http://{down}\"]\nresend_every = \"2s\"\n",
            up.addr
        ),
    );
    wait_until("the alert is active", || the_alert(up.addr).is_some());
    let cfg = config.to_str().unwrap();
    let out = alice_acks(cfg, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("no silence at http://{down}")),
        "{err}"
    );
    assert_eq!(get_json(up.addr, "/api/v2/silences").len(), 1);

    let back = Alertmanager::plain(down);
    let silence = {
        let t0 = Instant::now();
        loop {
            let s = get_json(back.addr, "/api/v2/silences");
            if let Some(s) = s.into_iter().next() {
                break s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no silence at the Alertmanager back up"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    assert_eq!(silence["status"]["state"], "active");
    assert_eq!(
        (&silence["createdBy"], &silence["comment"]),
        (&"alice".into(), &"replacing sdc".into())
    );
    assert_eq!(matchers(&silence), the_findings_matchers());
    wait_until("the alert is suppressed there", || {
        the_alert(back.addr).is_some_and(|a| a["status"]["state"] == "suppressed")
    });
    // Made once: later rounds do not add more.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(get_json(back.addr, "/api/v2/silences").len(), 1);
}
