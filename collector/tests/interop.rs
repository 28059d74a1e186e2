//! Interop: our agent's Forward sink and the npm `@fluent-org/logger` FluentClient deliver to
//! the collector, plain, gzip, with a shared key, and over TLS.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use zpulse_agent::sinks::Sink;
use zpulse_agent::sinks::forward::{ForwardConfig, ForwardSink, TlsConfig};
use zpulse_collector::config::Tls;
use zpulse_collector::store::{Filter, Store};
use zpulse_proto::event::{Entry, Severity, State};

fn tls_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/fixtures/syslog-tls")
}

fn server_tls() -> Tls {
    Tls {
        cert: tls_dir().join("server.pem"),
        key: tls_dir().join("server.key"),
        ..Tls::default()
    }
}

fn count(db: &Path, host: &str) -> usize {
    Store::open_read_only(db)
        .unwrap()
        .events(&Filter {
            host: Some(host.into()),
            limit: 1_000_000,
            ..Filter::default()
        })
        .unwrap()
        .len()
}

/// Delivers `n` events (and a heartbeat and a finding) through a real ForwardSink.
fn agent_delivers(r: &Running, host: &str, gzip: bool, key: Option<&str>, tls: bool) {
    let spool = r.dir.path().join(format!("spool-{host}"));
    let mut c = ForwardConfig::new(format!("127.0.0.1:{}", r.server.addr.port()));
    c.spool_dir = Some(spool);
    c.self_hostname = Some(host.into());
    c.gzip = gzip;
    c.shared_key = key.map(str::to_owned);
    c.batch_max_events = 50;
    if tls {
        c.tls = Some(TlsConfig {
            ca: Some(tls_dir().join("ca.pem")),
            server_name: Some("localhost".into()),
            ..TlsConfig::default()
        });
    }
    let mut sink = ForwardSink::new(c).unwrap();
    let mut events: Vec<Entry> = (0..200)
        .map(|i| Entry {
            time: now_t(),
            event: metrics(host, "disk", "sda", "busy_pct", f64::from(i)),
        })
        .collect();
    events.push(Entry {
        time: now_t(),
        event: heartbeat(host, "9.9.9"),
    });
    events.push(Entry {
        time: now_t(),
        event: finding(
            host,
            "hdd-saturation",
            "tank",
            State::Raised,
            Severity::Warning,
        ),
    });
    sink.deliver(&events).unwrap();
    sink.flush(Instant::now() + Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{host}: {e} (last error {:?})", sink.last_error()));
    assert_eq!(count(&r.db, host), 202, "{host}");
    let s = Store::open_read_only(&r.db).unwrap();
    let h = s.hosts().unwrap();
    let h = h.iter().find(|h| h.host == host).unwrap();
    assert_eq!(h.version.as_deref(), Some("9.9.9"));
    assert_eq!(h.open_findings, 1);
}

#[test]
fn agent_forward_sink_plain_gzip_key_tls() {
    let r = start(|_| {});
    agent_delivers(&r, "agent-plain", false, None, false);
    agent_delivers(&r, "agent-gzip", true, None, false);
    let r = start(|c| c.shared_key = Some("k3y".into()));
    agent_delivers(&r, "agent-key", true, Some("k3y"), false);
    let r = start(|c| {
        c.shared_key = Some("k3y".into());
        c.tls = Some(server_tls());
    });
    agent_delivers(&r, "agent-tls-key", false, Some("k3y"), true);
    let r = start(|c| c.tls = Some(server_tls()));
    agent_delivers(&r, "agent-tls", true, None, true);
}

#[test]
fn agent_with_a_wrong_key_delivers_nothing_and_is_counted() {
    let r = start(|c| c.shared_key = Some("right".into()));
    let mut c = ForwardConfig::new(format!("127.0.0.1:{}", r.server.addr.port()));
    c.spool_dir = Some(r.dir.path().join("spool"));
    c.self_hostname = Some("wrong".into());
    c.shared_key = Some("wrong".into());
    let mut sink = ForwardSink::new(c).unwrap();
    sink.deliver(&[Entry {
        time: now_t(),
        event: metrics("wrong", "disk", "sda", "busy_pct", 1.0),
    }])
    .unwrap();
    assert!(sink.flush(Instant::now() + Duration::from_secs(2)).is_err());
    assert!(r.server.stats.snapshot()["auth_failures"] >= 1);
    assert_eq!(count(&r.db, "wrong"), 0);
}

/// Node and the npm package must be there: a missing peer fails the test, it never passes
/// silently (`tests/run` installs both: apt-get install nodejs npm; npm ci --prefix
/// tests/forward).
fn require_node() {
    let module = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/forward/node_modules/@fluent-org/logger");
    let node = Command::new("node").arg("--version").output();
    assert!(
        matches!(&node, Ok(o) if o.status.success()) && module.is_dir(),
        "the interop test needs node and the npm package @fluent-org/logger in \
         tests/forward/node_modules (tests/run installs them: apt-get install nodejs npm; \
         npm ci --prefix tests/forward). node: {node:?}; {} present: {}",
        module.display(),
        module.is_dir()
    );
}

fn node_client(port: u16, mode: &str, host: &str, extra: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/collector/client.js");
    let port = port.to_string();
    let mut args = vec![
        script.to_str().unwrap(),
        "--port",
        &port,
        "--mode",
        mode,
        "--count",
        "25",
        "--host",
        host,
    ];
    args.extend_from_slice(extra);
    let out = Command::new("node").args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "node client {mode} {extra:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"sent":25}"#
    );
}

#[test]
fn fluent_logger_client_every_mode_key_and_tls() {
    require_node();
    let modes = [
        "Message",
        "Forward",
        "PackedForward",
        "CompressedPackedForward",
    ];
    let r = start(|_| {});
    for m in modes {
        let host = format!("node-{m}");
        node_client(r.server.addr.port(), m, &host, &[]);
        assert_eq!(count(&r.db, &host), 25, "{m}");
    }
    let r = start(|c| c.shared_key = Some("n0de".into()));
    for m in modes {
        let host = format!("node-key-{m}");
        node_client(r.server.addr.port(), m, &host, &["--shared-key", "n0de"]);
        assert_eq!(count(&r.db, &host), 25, "{m}");
    }
    let r = start(|c| {
        c.shared_key = Some("n0de".into());
        c.tls = Some(server_tls());
    });
    let ca = tls_dir().join("ca.pem");
    for m in ["Message", "CompressedPackedForward"] {
        let host = format!("node-tls-{m}");
        node_client(
            r.server.addr.port(),
            m,
            &host,
            &["--shared-key", "n0de", "--tls-ca", ca.to_str().unwrap()],
        );
        assert_eq!(count(&r.db, &host), 25, "{m}");
    }
    // Every record was a valid zpulse event.
    assert_eq!(r.server.stats.snapshot()["foreign_records"], 0);
}
