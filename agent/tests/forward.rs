//! The Forward sink against an independent receiver: the `FluentServer` of the npm package
//! `@fluent-org/logger` (`tests/forward/server.js`), which prints every entry it receives.
//!
//! Plain, gzip, shared-key handshake and TLS (with a client certificate): every event must
//! come back equal to what was sent, time included. The outage test stops the receiver in
//! the middle of a run, keeps delivering, restarts the agent's sink while the receiver is
//! down, then brings the receiver back on the same port: every event arrives, in order, and
//! the only repeats are a whole batch whose ack was lost (same chunk id), never an acked one.
//!
//! Needs `node` and `tests/forward/node_modules` (`npm ci --prefix tests/forward`);
//! `.ci/run` installs both. Without them the tests fail and say so.

use serde_json::Value as Json;
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use zpulse_agent::sinks::forward::{ForwardConfig, ForwardSink, TlsConfig};
use zpulse_agent::sinks::{Sink, Stamped};
use zpulse_proto::event::{Event, EventTime, Severity, State, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One entry as the receiver printed it.
#[derive(Debug, Clone)]
struct Received {
    tag: String,
    time: (u32, u32),
    record: Json,
    chunk: Option<String>,
    /// Which batch of this receiver's run it came in.
    message: u64,
}

#[derive(Default)]
struct Log {
    entries: Vec<Received>,
    port: Option<u16>,
    closed: bool,
}

/// A running `server.js`. Dropping it closes its stdin, which stops it.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    log: Arc<(Mutex<Log>, Condvar)>,
    port: u16,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let script = repo().join("tests/forward/server.js");
        let modules = repo().join("tests/forward/node_modules/@fluent-org/logger");
        let node = Command::new("node").arg("--version").output();
        assert!(
            matches!(&node, Ok(o) if o.status.success()) && modules.is_dir(),
            "the Forward tests need node and the npm package @fluent-org/logger in \
             tests/forward/node_modules: .ci/run installs them (apt-get install nodejs npm; \
             npm ci --prefix tests/forward). node: {node:?}; {} present: {}",
            modules.display(),
            modules.is_dir()
        );
        let mut child = Command::new("node")
            .arg(&script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn node");
        let stdout = child.stdout.take().unwrap();
        let log = Arc::new((Mutex::new(Log::default()), Condvar::new()));
        let reader = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Json = serde_json::from_str(&line).expect("a JSON line from server.js");
                let mut log = reader.0.lock().unwrap();
                if let Some(port) = v.get("listening") {
                    log.port = Some(port.as_u64().unwrap() as u16);
                } else {
                    log.entries.push(Received {
                        tag: v["tag"].as_str().unwrap().to_owned(),
                        time: (
                            v["time"][0].as_u64().unwrap() as u32,
                            v["time"][1].as_u64().unwrap() as u32,
                        ),
                        record: v["record"].clone(),
                        chunk: v["chunk"].as_str().map(str::to_owned),
                        message: v["message"].as_u64().unwrap(),
                    });
                }
                reader.1.notify_all();
            }
            reader.0.lock().unwrap().closed = true;
            reader.1.notify_all();
        });
        let port = {
            let (lock, cond) = &*log;
            let (log, _) = cond
                .wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(20), |l| {
                    l.port.is_none() && !l.closed
                })
                .unwrap();
            log.port.expect("server.js did not start listening")
        };
        Server {
            stdin: child.stdin.take(),
            child,
            log,
            port,
        }
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Waits until `n` entries have arrived (or 20 s) and returns all of them.
    fn wait_for(&self, n: usize) -> Vec<Received> {
        let (lock, cond) = &*self.log;
        let (log, _) = cond
            .wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(20), |l| {
                l.entries.len() < n && !l.closed
            })
            .unwrap();
        log.entries.clone()
    }

    fn entries(&self) -> Vec<Received> {
        self.log.0.lock().unwrap().entries.clone()
    }

    /// Stops the receiver as a service stop would, and returns what it printed.
    fn stop(mut self) -> Vec<Received> {
        drop(self.stdin.take());
        let _ = self.child.wait();
        let (lock, cond) = &*self.log;
        let (log, _) = cond
            .wait_timeout_while(lock.lock().unwrap(), Duration::from_secs(10), |l| !l.closed)
            .unwrap();
        log.entries.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Event `i`: findings, metrics and agent events mixed (so batches are cut at tag changes),
/// with every kind of value, non-ASCII text, and a time with nanoseconds.
fn event(i: u64) -> Stamped {
    let event = match i % 7 {
        3 => Event::metrics("arc", "arc", format!("ARC hit ratio {}.5 %", 90 + i % 10))
            .with("hit_pct", 90.5 + (i % 10) as f64)
            .with("n", i),
        5 => Event::agent(
            "agent.sinks",
            State::Updated,
            Severity::Info,
            "forward",
            format!("heartbeat {i}"),
        )
        .with("n", i),
        _ => {
            let mut nested = BTreeMap::new();
            nested.insert("delta".to_string(), Value::Int(-3 - i as i64));
            nested.insert("ok".to_string(), Value::Bool(i.is_multiple_of(2)));
            Event::finding(
                "hdd-saturation",
                State::Raised,
                Severity::Warning,
                format!("tank/mirror-0/sd{i}"),
                format!("sd{i} était occupé 97 % → seek-bound"),
            )
            .with_advice("1. add a special vdev\n2. rebalance")
            .with("n", i)
            .with("util_pct", 97.25)
            .with("disks", vec!["sda", "sdb"])
            .with("nested", Value::Map(nested))
            .with("none", Value::Null)
        }
    };
    Stamped {
        time: EventTime {
            seconds: 1_700_000_000 + i as u32,
            nanos: (i as u32).wrapping_mul(7_654_321) % 1_000_000_000,
        },
        event,
    }
}

fn events(range: std::ops::Range<u64>) -> Vec<Stamped> {
    range.map(event).collect()
}

/// Asserts that `got` is exactly `sent`, in order.
fn assert_same(got: &[Received], sent: &[Stamped]) {
    assert_eq!(got.len(), sent.len(), "number of entries");
    for (i, (g, s)) in got.iter().zip(sent).enumerate() {
        assert_eq!(g.tag, s.event.tag(), "entry {i}: tag");
        assert_eq!(g.time, (s.time.seconds, s.time.nanos), "entry {i}: time");
        let record: Event = serde_json::from_value(g.record.clone())
            .unwrap_or_else(|e| panic!("entry {i}: {e}: {}", g.record));
        assert_eq!(record, s.event, "entry {i}: record");
        assert!(
            g.chunk.as_ref().is_some_and(|c| c.len() == 24),
            "entry {i}: chunk id"
        );
    }
}

fn config(server: &Server, spool: &Path) -> ForwardConfig {
    ForwardConfig {
        spool_dir: Some(spool.to_path_buf()),
        self_hostname: Some("zpulse-test-agent".into()),
        batch_max_events: 8,
        ack_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        ..ForwardConfig::new(server.address())
    }
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(15)
}

/// Sends 60 events in three deliveries and checks what arrived.
fn round_trip(server: &Server, config: ForwardConfig) {
    let mut sink = ForwardSink::new(config).unwrap();
    let sent = events(0..60);
    for part in sent.chunks(20) {
        sink.deliver(part).unwrap();
    }
    sink.flush(soon()).unwrap();
    assert_same(&server.wait_for(60), &sent);
    let stats = sink.stats();
    assert_eq!((stats.delivered, stats.dropped, stats.pending), (60, 0, 0));
    assert_eq!(stats.spool_bytes, 0, "an empty spool keeps no segment");
    // Batches are cut at tag changes and at batch_max_events: more than 60/8 chunks.
    let chunks: HashSet<_> = server.entries().into_iter().map(|e| e.chunk).collect();
    assert!(chunks.len() > 8, "{} chunks", chunks.len());
}

#[test]
fn plain_batches_arrive_equal() {
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    round_trip(&server, config(&server, dir.path()));
}

#[test]
fn gzip_batches_arrive_equal() {
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    round_trip(
        &server,
        ForwardConfig {
            gzip: true,
            ..config(&server, dir.path())
        },
    );
}

#[test]
fn shared_key_handshake() {
    let server = Server::start(&["--shared-key", "s3cret key", "--hostname", "collector1"]);
    let dir = tempfile::tempdir().unwrap();
    round_trip(
        &server,
        ForwardConfig {
            shared_key: Some("s3cret key".into()),
            gzip: true,
            ..config(&server, dir.path())
        },
    );

    // A wrong key: the server refuses, nothing is lost, the error says why.
    let mut sink = ForwardSink::new(ForwardConfig {
        shared_key: Some("wrong".into()),
        ..config(&server, &dir.path().join("wrong"))
    })
    .unwrap();
    sink.deliver(&events(0..3)).unwrap();
    let err = sink
        .flush(Instant::now() + Duration::from_secs(2))
        .unwrap_err();
    assert!(err.message.contains("3 events still in the spool"), "{err}");
    let last = sink.last_error().unwrap();
    assert!(last.contains("shared key mismatch"), "{last}");
    assert_eq!(sink.stats().pending, 3);

    // No key at all: the server's HELO says one is needed.
    let mut sink = ForwardSink::new(config(&server, &dir.path().join("none"))).unwrap();
    sink.deliver(&events(0..1)).unwrap();
    assert!(sink.flush(Instant::now() + Duration::from_secs(2)).is_err());
    let last = sink.last_error().unwrap();
    assert!(last.contains("requires a shared key"), "{last}");
    assert_eq!(server.entries().len(), 60);
}

/// A CA, a server certificate for localhost and 127.0.0.1, and a client certificate.
fn certificates(dir: &Path) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("the TLS test needs openssl: .ci/run installs it");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(key);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=zpulse test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(&ca);
    for (name, usage, san) in [
        (
            "server",
            "serverAuth",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ),
        (
            "client",
            "clientAuth",
            "subjectAltName=DNS:zpulse-test-agent",
        ),
    ] {
        let mut req = vec!["req"];
        req.extend(key);
        let (k, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        let subj = format!("/CN={name}");
        req.extend(["-keyout", &k, "-out", &csr, "-subj", &subj]);
        openssl(&req);
        let ext = format!("{name}.ext");
        std::fs::write(
            dir.join(&ext),
            format!("{san}\nextendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n"),
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            &ext,
        ]);
    }
}

#[test]
fn tls_with_a_client_certificate_and_shared_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    certificates(d);
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let server = Server::start(&[
        "--tls-cert",
        &p("server.pem"),
        "--tls-key",
        &p("server.key"),
        "--tls-client-ca",
        &p("ca.pem"),
        "--shared-key",
        "over tls",
    ]);
    let tls = TlsConfig {
        ca: Some(d.join("ca.pem")),
        cert: Some(d.join("client.pem")),
        key: Some(d.join("client.key")),
        server_name: None,
    };
    // The certificate names 127.0.0.1 (the address's host, the default) and localhost.
    round_trip(
        &server,
        ForwardConfig {
            tls: Some(tls.clone()),
            shared_key: Some("over tls".into()),
            ..config(&server, &d.join("spool-ip"))
        },
    );
    let mut sink = ForwardSink::new(ForwardConfig {
        address: format!("localhost:{}", server.port),
        tls: Some(tls.clone()),
        shared_key: Some("over tls".into()),
        ..config(&server, &d.join("spool-name"))
    })
    .unwrap();
    sink.deliver(&events(60..61)).unwrap();
    sink.flush(soon()).unwrap();
    assert_same(&server.wait_for(61)[60..], &events(60..61));

    // Refused: a server name the certificate does not carry; no client certificate.
    let cases = [
        (
            TlsConfig {
                server_name: Some("collector.example.net".into()),
                ..tls.clone()
            },
            "certificate",
        ),
        (
            TlsConfig {
                cert: None,
                key: None,
                ..tls.clone()
            },
            "",
        ),
    ];
    for (i, (tls, why)) in cases.into_iter().enumerate() {
        let mut sink = ForwardSink::new(ForwardConfig {
            tls: Some(tls),
            shared_key: Some("over tls".into()),
            ..config(&server, &d.join(format!("refused-{i}")))
        })
        .unwrap();
        sink.deliver(&events(0..1)).unwrap();
        assert!(sink.flush(Instant::now() + Duration::from_secs(2)).is_err());
        let last = sink.last_error().unwrap_or_default();
        assert!(last.contains(why), "case {i}: {last}");
        assert_eq!(sink.stats().pending, 1);
    }
    assert_eq!(server.entries().len(), 61);
}

/// The receiver stops mid-run and comes back on the same port; meanwhile the agent's sink
/// is dropped and made again on the same spool (an agent restart).
#[test]
fn outage_and_agent_restart_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let server = Server::start(&[]);
    let port = server.port.to_string();
    let cfg = ForwardConfig {
        batch_max_events: 4,
        ..config(&server, &spool)
    };
    let sent = events(0..160);

    let mut sink = ForwardSink::new(cfg.clone()).unwrap();
    sink.deliver(&sent[..40]).unwrap();
    sink.flush(soon()).unwrap();
    // Keep delivering while the receiver goes away under the sink's feet.
    for part in sent[40..80].chunks(5) {
        sink.deliver(part).unwrap();
        std::thread::sleep(Duration::from_millis(15));
    }
    let first = server.stop();
    for part in sent[80..100].chunks(5) {
        sink.deliver(part).unwrap();
    }
    assert!(sink.stats().pending > 0);
    // Agent restart while the receiver is down.
    drop(sink);
    let mut sink = ForwardSink::new(cfg.clone()).unwrap();
    let recovered = sink.stats();
    assert!(recovered.pending >= 20, "{recovered:?}");
    assert!(recovered.spool_bytes > 0);
    for part in sent[100..130].chunks(5) {
        sink.deliver(part).unwrap();
    }
    assert!(
        sink.flush(Instant::now() + Duration::from_millis(300))
            .is_err()
    );

    let server = Server::start(&["--port", &port]);
    sink.deliver(&sent[130..160]).unwrap();
    sink.flush(soon()).unwrap();
    let stats = sink.stats();
    assert_eq!((stats.pending, stats.dropped, stats.spool_bytes), (0, 0, 0));
    // The receiver prints a batch's entries as it acks it: wait for the printing to end.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (unique, repeated) = loop {
        let second = server.entries();
        let (unique, repeated) = dedup(&[&first, &second]);
        if unique.len() >= sent.len() || Instant::now() > deadline {
            break (unique, repeated);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // In order, once each, after removing repeats of a chunk already received.
    assert_same(&unique, &sent);
    eprintln!("batches received twice (ack lost when the receiver stopped): {repeated:?}");
    // A batch comes twice only if its ack was lost when the receiver stopped: at most the
    // one in flight then. Acked batches never come again, across the restart too.
    assert!(repeated.len() <= 1, "repeated batches: {repeated:?}");
}

/// The entries of each receiver run, batch by batch, without batches whose chunk id came
/// before; and the repeated batches (chunk id, entries).
fn dedup(runs: &[&[Received]]) -> (Vec<Received>, Vec<(Option<String>, usize)>) {
    let mut seen = HashSet::new();
    let mut unique = Vec::new();
    let mut repeated = Vec::new();
    for run in runs {
        let mut i = 0;
        while i < run.len() {
            let message = run[i].message;
            let end = (i..run.len())
                .find(|&j| run[j].message != message)
                .unwrap_or(run.len());
            let chunk = run[i].chunk.clone();
            if seen.insert(chunk.clone()) {
                unique.extend_from_slice(&run[i..end]);
            } else {
                repeated.push((chunk, end - i));
            }
            i = end;
        }
    }
    (unique, repeated)
}
