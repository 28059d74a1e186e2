//! Alerting against Debian's real `prometheus-alertmanager` on loopback: a critical finding
//! raised through the collector appears as an active alert with its labels, and resolves
//! when the finding clears; an acknowledged finding resolves too; a host that stopped
//! reporting raises `collector.host-silent`. The test fails (it does not skip) when
//! Alertmanager is not installed: `.ci/run` installs it.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use zpulse_collector::alert::{Alerting, HOST_SILENT_CHECK};
use zpulse_collector::store::{Batch, Row, Store};
use zpulse_proto::event::{Severity, State};

const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

struct Alertmanager(Child);

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    let code = reply.split_whitespace().nth(1)?.parse().ok()?;
    let body = reply.split_once("\r\n\r\n")?.1.to_owned();
    Some((code, body))
}

/// The alerts Alertmanager lists now (its default: active, silenced, inhibited ones).
fn alerts(addr: SocketAddr) -> Vec<serde_json::Value> {
    let (code, body) = get(addr, "/api/v2/alerts").expect("GET /api/v2/alerts");
    assert_eq!(code, 200, "{body}");
    // Chunked or not, the JSON array is the body's outermost brackets.
    let start = body.find('[').unwrap();
    let end = body.rfind(']').unwrap();
    serde_json::from_str(&body[start..=end]).unwrap()
}

fn find<'a>(
    alerts: &'a [serde_json::Value],
    host: &str,
    check: &str,
) -> Option<&'a serde_json::Value> {
    alerts
        .iter()
        .find(|a| a["labels"]["host"] == host && a["labels"]["check"] == check)
}

#[test]
fn findings_reach_a_real_alertmanager_and_resolve() {
    assert!(
        std::path::Path::new(ALERTMANAGER).exists(),
        "{ALERTMANAGER} is missing: apt-get install prometheus-alertmanager (.ci/run does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("alertmanager.yml");
    std::fs::write(
        &config,
        "route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n",
    )
    .unwrap();
    let am_addr = free_addr();
    let _am = Alertmanager(
        Command::new(ALERTMANAGER)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={am_addr}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("alertmanager ready", || {
        get(am_addr, "/-/ready").is_some_and(|(c, _)| c == 200)
    });

    let alerting = Alerting {
        alertmanager: Some(format!("http://{am_addr}")),
        resend_every: Duration::from_millis(300),
        ..Alerting::default()
    };
    let r = start(|c| c.alerting = alerting.clone());
    zpulse_collector::alert::spawn(alerting, r.db.clone()).unwrap();

    // Two critical findings and an info one (below min_severity = warning: never sent).
    let mut c = Client::connect(r.server.addr);
    let send = |c: &mut Client, n: u8, e: zpulse_proto::event::Event| {
        c.send_acked("zpulse.finding", &e, n)
    };
    send(
        &mut c,
        1,
        finding(
            "nas1",
            "special-fill",
            "tank",
            State::Raised,
            Severity::Critical,
        ),
    );
    send(
        &mut c,
        2,
        finding(
            "nas2",
            "slog-usage",
            "tank",
            State::Raised,
            Severity::Critical,
        ),
    );
    send(
        &mut c,
        3,
        finding("nas3", "arc-sizing", "arc", State::Raised, Severity::Info),
    );
    wait_until("both alerts active", || {
        let a = alerts(am_addr);
        find(&a, "nas1", "special-fill").is_some() && find(&a, "nas2", "slog-usage").is_some()
    });
    let a = alerts(am_addr);
    let nas1 = find(&a, "nas1", "special-fill").unwrap();
    assert_eq!(nas1["status"]["state"], "active");
    assert_eq!(nas1["labels"]["severity"], "critical");
    assert_eq!(nas1["labels"]["subject"], "tank");
    assert_eq!(nas1["labels"]["alertname"], "zpulse");
    assert_eq!(nas1["annotations"]["summary"], "special-fill on tank");
    assert!(find(&a, "nas3", "arc-sizing").is_none());

    // Cleared at the agent: resolved in Alertmanager (no longer listed).
    send(
        &mut c,
        4,
        finding(
            "nas1",
            "special-fill",
            "tank",
            State::Cleared,
            Severity::Critical,
        ),
    );
    wait_until("nas1 resolved", || {
        find(&alerts(am_addr), "nas1", "special-fill").is_none()
    });
    // Acknowledged: resolved too, though still open at the agent.
    Store::open(&r.db)
        .unwrap()
        .ack("nas2", "slog-usage", "tank", None, 0)
        .unwrap();
    wait_until("nas2 resolved", || {
        find(&alerts(am_addr), "nas2", "slog-usage").is_none()
    });

    // A host last heard of 1000 s ago (heartbeat interval 60 s, 3 intervals allowed) is
    // silent: the collector raises its own finding for it.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    Store::open(&r.db)
        .unwrap()
        .store(
            &[Batch {
                rows: vec![Row::from_event(
                    "zpulse.agent",
                    (now - 1000) * 1_000_000_000,
                    &heartbeat("quiet", "1.0").with("interval_s", 60.0),
                    "p",
                )],
                ..Batch::default()
            }],
            now - 1000,
        )
        .unwrap();
    wait_until("quiet is silent", || {
        find(&alerts(am_addr), "quiet", HOST_SILENT_CHECK).is_some()
    });
    // It reports again: resolved.
    send(&mut c, 5, heartbeat("quiet", "1.0"));
    wait_until("quiet resolved", || {
        find(&alerts(am_addr), "quiet", HOST_SILENT_CHECK).is_none()
    });
}
