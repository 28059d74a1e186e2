//! Identity: a host authenticated with its own key cleared another host's
//! critical finding and planted a fake one; TLS clients without a certificate were accepted.
//! Now each per-client key and each client certificate may write records only for its
//! hosts; other records are refused, counted and never stored; client certificates can be
//! required; foreign records get the authenticated name. Clients are real: raw Forward
//! messages for the key, and our agent's ForwardSink (rustls) for certificates.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zpulse_agent::sinks::Sink;
use zpulse_agent::sinks::forward::{ForwardConfig, ForwardSink, TlsConfig};
use zpulse_collector::config::{Client as ClientKey, Tls};
use zpulse_collector::store::{Filter, Store};
use zpulse_forward::{Compression, Entries, encode};
use zpulse_proto::event::{Entry, Severity, State};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mtls")
}

fn server_tls(require: bool) -> Tls {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/fixtures/syslog-tls");
    Tls {
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
        client_ca: Some(fixtures().join("clients-ca.pem")),
        require_client_cert: require,
        ..Tls::default()
    }
}

fn rows(r: &Running) -> Vec<zpulse_collector::store::Row> {
    Store::open_read_only(&r.db)
        .unwrap()
        .events(&Filter {
            limit: 10_000,
            oldest_first: true,
            ..Filter::default()
        })
        .unwrap()
}

/// The fleet key `fleet` (any host) and nas1's own key `nas1-key` (nas1 only).
fn fleet_key_and_nas1s_own(c: &mut zpulse_collector::config::Config) {
    c.shared_key = Some("fleet".into());
    c.clients.insert(
        "nas1".into(),
        ClientKey {
            key: "nas1-key".into(),
            hosts: vec!["nas1".into()],
        },
    );
}

#[test]
fn a_client_key_writes_only_for_its_hosts() {
    let r = start(fleet_key_and_nas1s_own);
    // nas2 (with the fleet key: any host) raises a critical finding.
    let mut nas2 = Client::connect(r.server.addr);
    nas2.handshake("nas2", "fleet").unwrap();
    let crit = finding(
        "nas2",
        "special-fill",
        "tank",
        State::Raised,
        Severity::Critical,
    );
    nas2.send(&encode::message(
        "zpulse.finding",
        now_t(),
        &crit.to_msgpack(),
        Some(&chunk(1)),
    ))
    .unwrap();
    assert_eq!(nas2.ack(), Some(chunk(1)));
    // nas1, with its own key, tries to clear it and to plant a fake one, in one batch with
    // a record of its own. The batch is acked (it is not resent forever), the foreign-host
    // records refused and counted.
    let mut nas1 = Client::connect(r.server.addr);
    nas1.handshake("nas1", "nas1-key").unwrap();
    let mut batch = Entries::new();
    batch.push_event(
        now_t(),
        &finding(
            "nas2",
            "special-fill",
            "tank",
            State::Cleared,
            Severity::Critical,
        ),
    );
    batch.push_event(
        now_t(),
        &finding("nas3", "fake", "x", State::Raised, Severity::Critical),
    );
    batch.push_event(now_t(), &metrics("nas1", "arc", "arc", "hit_pct", 90.0));
    nas1.send(&batch.packed_forward("zpulse.finding", Some(&chunk(2)), Compression::None))
        .unwrap();
    assert_eq!(nas1.ack(), Some(chunk(2)));
    let stats = r.server.stats.snapshot();
    assert_eq!(stats["records_refused_host"], 2, "{stats:?}");
    let stored = rows(&r);
    assert_eq!(
        stored
            .iter()
            .map(|r| (r.host.as_str(), r.check.as_str()))
            .collect::<Vec<_>>(),
        [("nas2", "special-fill"), ("nas1", "arc")]
    );
    let open = Store::open_read_only(&r.db)
        .unwrap()
        .open_findings(None)
        .unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!((open[0].host.as_str(), open[0].severity), ("nas2", 2));
    // A foreign record (not a zpulse event) naming another host is stored under the
    // authenticated name, not under the host it claims nor the sender's address.
    let record =
        rmp_serde::to_vec_named(&serde_json::json!({"host": "nas2", "message": "hi"})).unwrap();
    nas1.send(&encode::message(
        "app.log",
        now_t(),
        &record,
        Some(&chunk(3)),
    ))
    .unwrap();
    assert_eq!(nas1.ack(), Some(chunk(3)));
    let last = rows(&r).pop().unwrap();
    assert_eq!(
        (last.kind.as_str(), last.host.as_str()),
        ("foreign", "nas1")
    );
    assert!(last.data.contains("\"host\":\"nas2\""), "{}", last.data);
}

/// Sends one heartbeat and one metric for `host` through a real ForwardSink with the client
/// certificate `cert` (or none); `Ok` when acked.
fn agent(r: &Running, name: &str, host: &str, cert: Option<&str>) -> Result<(), String> {
    let mut c = ForwardConfig::new(format!("127.0.0.1:{}", r.server.addr.port()));
    c.spool_dir = Some(r.dir.path().join(format!("spool-{name}")));
    c.self_hostname = Some(name.into());
    c.tls = Some(TlsConfig {
        ca: Some(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/fixtures/syslog-tls/ca.pem"),
        ),
        server_name: Some("localhost".into()),
        cert: cert.map(|c| fixtures().join(format!("{c}.pem"))),
        key: cert.map(|c| fixtures().join(format!("{c}.key"))),
    });
    let mut sink = ForwardSink::new(c).unwrap();
    sink.deliver(&[
        Entry {
            time: now_t(),
            event: heartbeat(host, "1.0"),
        },
        Entry {
            time: now_t(),
            event: metrics(host, "disk", "sda", "busy_pct", 5.0),
        },
    ])
    .unwrap();
    sink.flush(Instant::now() + Duration::from_secs(3))
        .map_err(|e| format!("{e} (last error {:?})", sink.last_error()))
}

#[test]
fn client_certificates_can_be_required_and_bind_hosts() {
    let r = start(|c| c.tls = Some(server_tls(true)));
    // No certificate, or one from a CA the collector does not trust: refused in the TLS
    // handshake, counted, nothing stored.
    assert!(agent(&r, "nocert", "nocert", None).is_err());
    assert!(agent(&r, "rogue", "nas1", Some("rogue")).is_err());
    assert!(r.server.stats.snapshot()["tls_failures"] >= 2);
    assert!(rows(&r).is_empty());
    // nas1's certificate (CN nas1, SAN nas1.example.net) may write for nas1.
    agent(&r, "nas1", "nas1", Some("nas1")).unwrap();
    assert_eq!(rows(&r).len(), 2);
    // ...and not for other: acked, refused, counted.
    agent(&r, "nas1-as-other", "other", Some("nas1")).unwrap();
    assert_eq!(r.server.stats.snapshot()["records_refused_host"], 2);
    assert!(rows(&r).iter().all(|row| row.host == "nas1"));
}

#[test]
fn certificate_names_map_to_hosts_and_optional_certificates_are_any_host() {
    // Optional client certificates: a client without one is unauthenticated (loopback: any
    // host); one with a certificate is bound by it, here through the [tls.clients] map.
    let r = start(|c| {
        let mut t = server_tls(false);
        t.clients
            .insert("other.example.net".into(), vec!["db1".into(), "db2".into()]);
        c.tls = Some(t);
    });
    agent(&r, "anon", "anyhost", None).unwrap();
    agent(&r, "other", "db2", Some("other")).unwrap();
    agent(&r, "other-as-self", "other", Some("other")).unwrap();
    let hosts: Vec<String> = rows(&r).into_iter().map(|r| r.host).collect();
    assert_eq!(hosts, ["anyhost", "anyhost", "db2", "db2"]);
    assert_eq!(r.server.stats.snapshot()["records_refused_host"], 2);
}

/// Chunk-id de-duplication was global, so host A's chunk `X` made host B's batch
/// with chunk `X` be acked and not stored. Chunk ids are scoped to the sender now.
#[test]
fn equal_chunk_ids_from_two_clients_are_both_stored_and_a_replay_once() {
    let r = start(fleet_key_and_nas1s_own);
    let x = chunk(42);
    let send = |c: &mut Client, host: &str, check: &str| {
        c.send(&encode::message(
            "zpulse.metrics",
            now_t(),
            &metrics(host, check, "arc", "hit_pct", 90.0).to_msgpack(),
            Some(&x),
        ))
        .unwrap();
        assert_eq!(c.ack(), Some(x.clone()), "{host}");
    };
    let mut nas1 = Client::connect(r.server.addr);
    nas1.handshake("nas1", "nas1-key").unwrap();
    send(&mut nas1, "nas1", "first");
    // Another client (the fleet key), the same chunk id: stored.
    let mut nas2 = Client::connect(r.server.addr);
    nas2.handshake("nas2", "fleet").unwrap();
    send(&mut nas2, "nas2", "second");
    // The same identity (the fleet key's nas2) writing for another host: stored too.
    send(&mut nas2, "nas3", "third");
    // nas1 replays its batch (its ack was lost), on a new connection: acked, stored once.
    let mut again = Client::connect(r.server.addr);
    again.handshake("nas1", "nas1-key").unwrap();
    send(&mut again, "nas1", "first");
    // And nas2's, on its own connection.
    send(&mut nas2, "nas2", "second");
    let stored: Vec<(String, String)> = rows(&r).into_iter().map(|r| (r.host, r.check)).collect();
    let want = [("nas1", "first"), ("nas2", "second"), ("nas3", "third")]
        .map(|(h, c)| (h.to_owned(), c.to_owned()));
    assert_eq!(stored, want);
    assert_eq!(r.server.stats.snapshot()["duplicates"], 2);
}

#[test]
fn unauthenticated_clients_dedup_per_host() {
    // No authentication (loopback): two agents on one machine send through 127.0.0.1 with
    // equal chunk ids; each host's batch is stored, and each one's replay is not.
    let r = start(|_| {});
    let x = chunk(7);
    let mut c = Client::connect(r.server.addr);
    for host in ["nas1", "nas2", "nas1", "nas2"] {
        c.send(&encode::message(
            "zpulse.metrics",
            now_t(),
            &metrics(host, "arc", "arc", "hit_pct", 90.0).to_msgpack(),
            Some(&x),
        ))
        .unwrap();
        assert_eq!(c.ack(), Some(x.clone()));
    }
    let hosts: Vec<String> = rows(&r).into_iter().map(|r| r.host).collect();
    assert_eq!(hosts, ["nas1", "nas2"]);
    assert_eq!(r.server.stats.snapshot()["duplicates"], 2);
}

/// A TLS client that closes between messages without close_notify (as most do
/// when they exit) logged an error line per connection. The real binary, a raw rustls
/// client: a batch acked, then the TCP connection closed without close_notify; the
/// collector's log has no line for it, and a client cut off in the middle of a message
/// still has one.
#[test]
fn a_tls_client_closing_without_close_notify_is_not_logged_as_an_error() {
    use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
    use std::io::Write;
    let tls = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/fixtures/syslog-tls");
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let conf = dir.path().join("collector.toml");
    std::fs::write(
        &conf,
        format!(
            "listen = \"{addr}\"\ndb = \"{}\"\n[tls]\ncert = \"{}\"\nkey = \"{}\"\n",
            dir.path().join("events.db").display(),
            tls.join("server.pem").display(),
            tls.join("server.key").display()
        ),
    )
    .unwrap();
    let collector = Collector::serve(&["--config".as_ref(), conf.as_os_str()]);
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(tls.join("ca.pem")).unwrap() {
        roots.add(ca.unwrap()).unwrap();
    }
    let config = std::sync::Arc::new(
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );
    let session = |bytes: &[u8]| -> Vec<u8> {
        let conn = rustls::ClientConnection::new(
            config.clone(),
            ServerName::try_from("localhost").unwrap(),
        )
        .unwrap();
        let tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut s = rustls::StreamOwned::new(conn, tcp);
        s.write_all(bytes).unwrap();
        s.flush().unwrap();
        let mut reply = vec![0u8; 256];
        let n = if bytes.ends_with(b"half") {
            0
        } else {
            std::io::Read::read(&mut s, &mut reply).unwrap()
        };
        reply.truncate(n);
        // Dropped: the TCP connection closes, no close_notify sent.
        reply
    };
    let id = chunk(5);
    let message = encode::message(
        "zpulse.metrics",
        now_t(),
        &metrics("tls1", "arc", "arc", "hit_pct", 90.0).to_msgpack(),
        Some(&id),
    );
    assert_eq!(session(&message), encode::ack(&id));
    // Half a message, then the close: this one is worth a line.
    session(&[&message[..message.len() / 2], b"half"].concat());
    let logged = |needle: &str| {
        collector
            .1
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
    };
    wait_until("the cut-off client's line", || {
        logged("closed in the middle of a message") || logged("close_notify")
    });
    let log = collector.1.lock().unwrap().clone();
    assert_eq!(
        log.iter().filter(|l| l.contains("close_notify")).count(),
        0,
        "{log:#?}"
    );
    assert_eq!(
        log.iter()
            .filter(|l| l.contains("closed in the middle of a message"))
            .count(),
        1,
        "{log:#?}"
    );
}
