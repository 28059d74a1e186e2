//! Alerting against Debian's real `prometheus-alertmanager` (0.25) on loopback, with the
//! routing tree an on-call team writes (`group_by: [alertname, pool]`): what Alertmanager
//! groups and lists is asserted, with values from the findings sent (hosts, subjects,
//! figures) and from docs/alerting.md's table of names. Also: changes arrive within seconds
//! although the resend round is a minute; an HA pair with one member down; a webhook that
//! never answers delays nothing; TLS with a client certificate and basic auth (Alertmanager's
//! own `--web.config.file`, checked with curl); an ack is a silence, never a resolve. The
//! tests fail (they do not skip) when Alertmanager is not installed: `.ci/run` installs it.

mod common;

use common::alertmanager::{Alertmanager, get_json};
use common::*;
use serde_json::Value as Json;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use zpulse_collector::alert::{Alerting, HOST_SILENT_CHECK};
use zpulse_collector::store::{Batch, Row, Store};
use zpulse_proto::event::{Event, Severity, State};

/// "Within seconds": a change must be listed by Alertmanager this soon (the resend round of
/// these tests is a minute).
const PROMPT: Duration = Duration::from_secs(5);

fn find<'a>(alerts: &'a [Json], host: &str, check: &str, subject: &str) -> Option<&'a Json> {
    alerts.iter().find(|a| {
        a["labels"]["host"] == host
            && a["labels"]["check"] == check
            && a["labels"]["subject"] == subject
    })
}

/// Waits at most `within` for `f`; how long it took.
fn within(within: Duration, what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < within, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    t0.elapsed()
}

fn degraded(host: &str, pool: &str) -> Event {
    finding(
        host,
        "pool-health.state",
        pool,
        State::Raised,
        Severity::Critical,
    )
    .with("health", "DEGRADED")
}

fn checksum_errors(host: &str, subject: &str) -> Event {
    finding(
        host,
        "pool-health.errors",
        subject,
        State::Raised,
        Severity::Warning,
    )
    .with("checksum_errors", 3u64)
    .with("read_errors", 0u64)
}

fn alerting(urls: &[SocketAddr]) -> Alerting {
    Alerting {
        alertmanagers: urls.iter().map(|a| format!("http://{a}")).collect(),
        resend_every: Duration::from_secs(60),
        public_url: Some("https://collector.example".into()),
        runbook_base: "https://docs.example/zpulse/docs".into(),
        ..Alerting::default()
    }
}

#[test]
fn alerts_are_grouped_by_kind_and_pool_and_arrive_within_seconds() {
    let am = Alertmanager::plain(free_addr());
    let config = alerting(&[am.addr]);
    let r = start(|c| c.alerting = config.clone());
    zpulse_collector::alert::spawn(config, r.db.clone()).unwrap();

    let mut c = Client::connect(r.server.addr);
    let sent = Instant::now();
    c.send_acked("zpulse.finding", &degraded("nas1", "tank"), 1);
    c.send_acked("zpulse.finding", &degraded("nas2", "tank"), 2);
    c.send_acked("zpulse.finding", &degraded("nas1", "backup"), 3);
    let subject = "tank/normal/mirror-0/sdc";
    c.send_acked("zpulse.finding", &checksum_errors("nas1", subject), 4);
    let took = within(PROMPT + Duration::from_secs(1), "four alerts", || {
        am.alerts().len() == 4
    });
    eprintln!("four findings listed by Alertmanager {took:?} after the first was sent");
    assert!(sent.elapsed() < PROMPT + Duration::from_secs(1));

    // The groups Alertmanager made with group_by [alertname, pool].
    let groups = get_json(am.addr, "/api/v2/alerts/groups");
    let hosts_of = |alertname: &str, pool: &str| -> Vec<String> {
        let g = groups
            .iter()
            .find(|g| g["labels"]["alertname"] == alertname && g["labels"]["pool"] == pool)
            .unwrap_or_else(|| panic!("no group {alertname} {pool}: {groups:#?}"));
        let mut hosts: Vec<String> = g["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["labels"]["host"].as_str().unwrap().to_owned())
            .collect();
        hosts.sort();
        hosts
    };
    assert_eq!(groups.len(), 3, "{groups:#?}");
    assert_eq!(hosts_of("ZpoolStateDegraded", "tank"), ["nas1", "nas2"]);
    assert_eq!(hosts_of("ZpoolStateDegraded", "backup"), ["nas1"]);
    assert_eq!(hosts_of("ZpoolChecksumErrors", "tank"), ["nas1"]);

    // Labels and annotations of one alert, from what was sent.
    let a = am.alerts();
    let errors = find(&a, "nas1", "pool-health.errors", subject).unwrap();
    assert_eq!(errors["status"]["state"], "active");
    let labels = &errors["labels"];
    assert_eq!(
        (&labels["pool"], &labels["vdev"], &labels["disk"]),
        (&"tank".into(), &"mirror-0".into(), &"sdc".into())
    );
    assert_eq!(labels["severity"], "warning");
    assert_eq!(
        errors["annotations"]["summary"],
        format!("pool-health.errors on {subject}")
    );
    assert!(
        errors["annotations"]["description"]
            .as_str()
            .unwrap()
            .contains("checksum_errors=3"),
        "{errors}"
    );
    assert_eq!(
        errors["annotations"]["runbook_url"],
        "https://docs.example/zpulse/docs/checks/pool-health.md"
    );
    let state = find(&a, "nas2", "pool-health.state", "tank").unwrap();
    assert_eq!(state["labels"]["pool"], "tank");
    assert!(state["labels"].get("disk").is_none(), "{state}");
    // generatorURL: the host's page on the public URL, whose fragment is the id of the
    // finding's row on that page (the page rendered here, as the collector serves it).
    let link = errors["generatorURL"].as_str().unwrap();
    let (page_url, fragment) = link.split_once('#').unwrap();
    assert_eq!(page_url, "https://collector.example/host/nas1");
    let page = zpulse_collector::http::Page {
        db: r.db.clone(),
        ..Default::default()
    };
    let (code, _, html) = zpulse_collector::http::route("/host/nas1", &page, &Default::default());
    assert_eq!(code, 200);
    let row = html
        .lines()
        .find(|l| l.contains(&format!("id=\"{fragment}\"")))
        .unwrap_or_else(|| panic!("no row with id {fragment} on /host/nas1"));
    assert!(row.contains(subject), "{row}");

    // Cleared at the agent: resolved within seconds, not at the next round.
    let cleared = finding(
        "nas2",
        "pool-health.state",
        "tank",
        State::Cleared,
        Severity::Critical,
    );
    c.send_acked("zpulse.finding", &cleared, 5);
    let took = within(PROMPT, "nas2 resolved", || {
        find(&am.alerts(), "nas2", "pool-health.state", "tank").is_none()
    });
    eprintln!("the clear reached Alertmanager in {took:?}");

    // A host last heard of 1000 s ago (heartbeat interval 60 s, 3 intervals allowed) is
    // silent: the collector raises its own finding for it; it reports again: resolved.
    let now = now_s();
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
    within(PROMPT + Duration::from_secs(5), "quiet is silent", || {
        find(&am.alerts(), "quiet", HOST_SILENT_CHECK, "quiet")
            .is_some_and(|a| a["labels"]["alertname"] == "HostSilent")
    });
    c.send_acked("zpulse.finding", &heartbeat("quiet", "1.0"), 6);
    within(PROMPT + Duration::from_secs(5), "quiet resolved", || {
        find(&am.alerts(), "quiet", HOST_SILENT_CHECK, "quiet").is_none()
    });
}

/// An HA pair, one member down: the other gets every alert within seconds, and the one
/// that comes back gets them all without a resend round. A webhook that accepts and never
/// answers delays neither.
#[test]
fn an_ha_pair_with_one_member_down_and_a_webhook_that_never_answers() {
    let up = Alertmanager::plain(free_addr());
    let down_addr = free_addr();
    // Accepts connections and never reads or answers them.
    let silent_hook = TcpListener::bind("127.0.0.1:0").unwrap();
    let hook_addr = silent_hook.local_addr().unwrap();
    let held = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent_hook.incoming().take(4) {
            held.push(s);
        }
        std::thread::sleep(Duration::from_secs(60));
    });
    let config = Alerting {
        webhooks: vec![zpulse_collector::alert::Webhook {
            url: format!("http://{hook_addr}/hook"),
            secret: "a webhook secret of some length".into(),
        }],
        ..alerting(&[down_addr, up.addr])
    };
    let r = start(|c| c.alerting = config.clone());
    zpulse_collector::alert::spawn(config, r.db.clone()).unwrap();
    let mut c = Client::connect(r.server.addr);
    c.send_acked("zpulse.finding", &degraded("nas1", "tank"), 1);
    let took = within(PROMPT, "the alert at the member that is up", || {
        find(&up.alerts(), "nas1", "pool-health.state", "tank").is_some()
    });
    eprintln!("with one member down and the webhook hung: listed in {took:?}");
    // A second change while the webhook still hangs and the other member is still down.
    c.send_acked("zpulse.finding", &degraded("nas2", "tank"), 2);
    within(PROMPT, "the second alert", || {
        find(&up.alerts(), "nas2", "pool-health.state", "tank").is_some()
    });
    // The member that was down comes up: it gets both (the retry is at most 10 s away).
    let back = Alertmanager::plain(down_addr);
    let took = within(
        Duration::from_secs(15),
        "both at the member back up",
        || {
            let a = back.alerts();
            find(&a, "nas1", "pool-health.state", "tank").is_some()
                && find(&a, "nas2", "pool-health.state", "tank").is_some()
        },
    );
    eprintln!("the member back up had both {took:?} after it was ready");
    drop(held);
}

fn openssl(args: &[&str], dir: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl (apt-get install openssl; .ci/run does)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl.
fn certificates(dir: &Path) {
    openssl(
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=zpulse test CA",
        ],
        dir,
    );
    for (name, ext) in [
        ("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
        ("client", "extendedKeyUsage=clientAuth"),
    ] {
        openssl(
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={name}"),
            ],
            dir,
        );
        std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
        openssl(
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                &format!("{name}.pem"),
                "-extfile",
                &format!("{name}.ext"),
            ],
            dir,
        );
    }
}

/// The password of the basic-auth user, and its bcrypt hash (cost 12) as Alertmanager's
/// web config takes it; Alertmanager itself checks the one against the other.
const PASSWORD: &str = "zpulse-test-password";
const PASSWORD_BCRYPT: &str = "$2b$12$jsjHAD/yxpJmNQdarqpqvOYRnhv9kShrOkAx3AQ4nu46Iw5h57sDG";

/// `curl` with the client certificate and the password: what Alertmanager lists, `None`
/// when curl fails (Alertmanager not up yet).
fn try_curl_alerts(dir: &Path, addr: SocketAddr) -> Option<Vec<Json>> {
    let out = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "5",
            "--cacert",
            "ca.pem",
            "--cert",
            "client.pem",
        ])
        .args(["--key", "client.key", "-u", &format!("zpulse:{PASSWORD}")])
        .arg(format!("https://127.0.0.1:{}/api/v2/alerts", addr.port()))
        .current_dir(dir)
        .output()
        .expect("curl (apt-get install curl; .ci/run does)");
    if !out.status.success() {
        eprintln!("curl: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn curl_alerts(dir: &Path, addr: SocketAddr) -> Vec<Json> {
    try_curl_alerts(dir, addr).expect("curl with the client certificate and password")
}

#[test]
fn tls_with_a_client_certificate_and_basic_auth() {
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let web = dir.path().join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: {d}/server.pem\n  key_file: {d}/server.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {d}/ca.pem\n\
             basic_auth_users:\n  zpulse: '{PASSWORD_BCRYPT}'\n",
            d = dir.path().display()
        ),
    )
    .unwrap();
    let addr = free_addr();
    let _am = Alertmanager::start(addr, Some(&web));
    wait_until("alertmanager ready (TLS)", || {
        try_curl_alerts(dir.path(), addr).is_some()
    });
    let tls = zpulse_collector::http_client::TlsFiles {
        ca: Some(dir.path().join("ca.pem")),
        cert: Some(dir.path().join("client.pem")),
        key: Some(dir.path().join("client.key")),
    };
    let auth = |password: &str| {
        Some(zpulse_collector::http_client::Auth::Basic {
            user: "zpulse".into(),
            password: password.into(),
        })
    };
    let https = Alerting {
        alertmanagers: vec![format!("https://127.0.0.1:{}", addr.port())],
        alertmanager_tls: tls.clone(),
        alertmanager_auth: auth(PASSWORD),
        resend_every: Duration::from_secs(60),
        ..Alerting::default()
    };
    // Two more collectors that Alertmanager must refuse: no client certificate; a wrong
    // password.
    let no_cert = Alerting {
        alertmanager_tls: zpulse_collector::http_client::TlsFiles {
            ca: tls.ca.clone(),
            ..Default::default()
        },
        ..https.clone()
    };
    let wrong_password = Alerting {
        alertmanager_auth: auth("not the password"),
        ..https.clone()
    };
    let mut running = Vec::new();
    for (config, host) in [
        (https, "nas1"),
        (no_cert, "nocert"),
        (wrong_password, "nopass"),
    ] {
        let r = start(|c| c.alerting = config.clone());
        zpulse_collector::alert::spawn(config, r.db.clone()).unwrap();
        Client::connect(r.server.addr).send_acked("zpulse.finding", &degraded(host, "tank"), 1);
        running.push(r);
    }
    within(PROMPT, "the alert over TLS", || {
        find(
            &curl_alerts(dir.path(), addr),
            "nas1",
            "pool-health.state",
            "tank",
        )
        .is_some()
    });
    // The refused ones had as long again, and are not there.
    std::thread::sleep(Duration::from_secs(2));
    let listed = curl_alerts(dir.path(), addr);
    assert_eq!(listed.len(), 1, "{listed:#?}");
}

/// Bearer authorization is for proxies in front of Alertmanager (Alertmanager itself takes
/// basic auth only): the header a receiver gets is RFC 6750's `Bearer TOKEN`.
#[test]
fn bearer_authorization_reaches_the_receiver() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let config = Alerting {
        alertmanager_auth: Some(zpulse_collector::http_client::Auth::Bearer(
            "t0ken-of-the-proxy".into(),
        )),
        ..alerting(&[addr])
    };
    let r = start(|c| c.alerting = config.clone());
    zpulse_collector::alert::spawn(config, r.db.clone()).unwrap();
    Client::connect(r.server.addr).send_acked("zpulse.finding", &degraded("nas1", "tank"), 1);
    listener.set_nonblocking(false).unwrap();
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("POST /api/v2/alerts "), "{head}");
    assert!(
        head.lines()
            .any(|l| l.eq_ignore_ascii_case("authorization: Bearer t0ken-of-the-proxy")),
        "{head}"
    );
}

/// "reachable again" is logged when Alertmanager answered, not when a round had
/// nothing to send. Alertmanager is down while a finding is raised and cleared, and for the
/// ten rounds after which the clear is no longer sent; then it comes up.
#[test]
fn reachable_again_is_logged_only_when_it_is() {
    let am_addr = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("zpulse-collector.toml");
    std::fs::write(
        &config,
        format!(
            "db = \"events.db\"\n[alerting]\nalertmanager = \"http://{am_addr}\"\n\
             resend_every = \"1s\"\n"
        ),
    )
    .unwrap();
    let listen = free_addr().to_string();
    let (_collector, log) = Collector::serve_logged(&[
        "--listen".as_ref(),
        listen.as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    let mut c = Client::connect(listen.parse().unwrap());
    c.send_acked("zpulse.finding", &degraded("nas1", "tank"), 1);
    let down = log
        .recv_timeout(Duration::from_secs(10))
        .expect("a log line about Alertmanager");
    assert!(
        down.contains(&format!("alerting: http://{am_addr}")) && down.contains("refused"),
        "{down}"
    );
    let mut cleared = degraded("nas1", "tank");
    cleared.state = Some(State::Cleared);
    c.send_acked("zpulse.finding", &cleared, 2);
    // Resolved alerts are sent for ten rounds of 1 s; then rounds have nothing to send.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(13) {
        if let Ok(line) = log.recv_timeout(Duration::from_millis(200)) {
            assert!(
                !line.contains("reachable again"),
                "logged while still down: {line}"
            );
        }
    }
    let am = Alertmanager::plain(am_addr);
    c.send_acked("zpulse.finding", &degraded("nas1", "backup"), 3);
    let line = log
        .recv_timeout(Duration::from_secs(15))
        .expect("a log line once it is up");
    assert!(line.contains("reachable again"), "{line}");
    assert!(find(&am.alerts(), "nas1", "pool-health.state", "backup").is_some());
}
