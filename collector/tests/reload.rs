//! SIGHUP: the collector reads its configuration again. A good file takes effect for new
//! connections (here: a shared key now required); a bad file is refused with the error and
//! the running configuration stays; SIGTERM still ends it cleanly.

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use zpulse_forward::ServerMessage;

fn expect(lines: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Ok(l) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if l.contains(needle) {
            return l;
        }
    }
    panic!("no log line containing {needle:?}");
}

fn signal(pid: u32, sig: &str) {
    assert!(
        Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn sighup_applies_a_good_config_and_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = dir.path().join("zpulse-collector.toml");
    let base = format!(
        "listen = \"{addr}\"\ndb = {:?}\n",
        dir.path().join("events.db").display().to_string()
    );
    std::fs::write(&config, &base).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    expect(&lines, "forward listening");

    // No key: a client is served at once (the server speaks only to ack).
    let mut c = Client::connect(addr);
    let entries = {
        let mut e = zpulse_forward::Entries::new();
        e.push_event(now_t(), &heartbeat("nas1", "0.1.0"));
        e.packed_forward(
            "zpulse.agent",
            Some(&chunk(1)),
            zpulse_forward::Compression::None,
        )
    };
    c.send(&entries).unwrap();
    assert_eq!(c.ack(), Some(chunk(1)));
    drop(c);

    // A shared key: new connections must now handshake.
    std::fs::write(&config, format!("{base}shared_key = \"k\"\n")).unwrap();
    signal(child.id(), "HUP");
    expect(&lines, "reloaded");
    let mut c = Client::from_stream(TcpStream::connect(addr).unwrap());
    c.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(
        matches!(c.recv(), Some(ServerMessage::Helo(_))),
        "HELO after the reload"
    );
    drop(c);

    // A broken file is refused, and the key stays in force.
    std::fs::write(&config, format!("{base}bogus_key = 1\n")).unwrap();
    signal(child.id(), "HUP");
    let refused = expect(&lines, "reload refused");
    assert!(
        refused.contains("zpulse-collector.toml:3: unknown field `bogus_key`"),
        "{refused}"
    );
    let mut c = Client::from_stream(TcpStream::connect(addr).unwrap());
    c.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(
        matches!(c.recv(), Some(ServerMessage::Helo(_))),
        "still HELO"
    );
    drop(c);

    // A file that parses but names a missing TLS file: refused before anything is stopped;
    // the running listener (with its key) stays. (The collector exited with status 2 here.)
    std::fs::write(
        &config,
        format!("{base}[tls]\ncert = \"/nonexistent/cert.pem\"\nkey = \"/nonexistent/key.pem\"\n"),
    )
    .unwrap();
    signal(child.id(), "HUP");
    let refused = expect(&lines, "reload refused");
    assert!(
        refused.contains("tls.cert /nonexistent/cert.pem"),
        "{refused}"
    );
    let mut c = Client::from_stream(TcpStream::connect(addr).unwrap());
    c.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(
        matches!(c.recv(), Some(ServerMessage::Helo(_))),
        "still HELO after a missing TLS file"
    );
    drop(c);

    // A busy port: refused, and the old address still serves.
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    std::fs::write(
        &config,
        format!(
            "listen = \"{}\"\ndb = {:?}\n",
            busy.local_addr().unwrap(),
            dir.path().join("events.db").display().to_string()
        ),
    )
    .unwrap();
    signal(child.id(), "HUP");
    let refused = expect(&lines, "reload refused");
    assert!(refused.contains("listen 127.0.0.1:"), "{refused}");
    let mut c = Client::from_stream(TcpStream::connect(addr).unwrap());
    c.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(
        matches!(c.recv(), Some(ServerMessage::Helo(_))),
        "still HELO after a busy port"
    );
    drop(c);

    // A good new address takes over: the old one is closed, the new one serves.
    let next_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    std::fs::write(
        &config,
        format!(
            "listen = \"{next_port}\"\ndb = {:?}\n",
            dir.path().join("events.db").display().to_string()
        ),
    )
    .unwrap();
    signal(child.id(), "HUP");
    expect(&lines, "reloaded");
    let mut c = Client::connect(next_port);
    c.send(&entries).unwrap();
    assert_eq!(
        c.ack(),
        Some(chunk(1)),
        "the resent batch is acked (a duplicate)"
    );
    assert!(
        TcpStream::connect(addr).is_err(),
        "the old address is closed"
    );

    signal(child.id(), "TERM");
    assert!(child.wait().unwrap().success());
}
