//! Helpers shared by the collector's integration tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;
use zpulse_collector::config::Config;
use zpulse_collector::server::Server;
use zpulse_forward::{ChunkId, FrameDecoder, Limits, Ping, ServerMessage, handshake::salt_text};
use zpulse_proto::event::{Event, EventTime, Severity, State};

pub struct Running {
    pub server: Server,
    pub db: PathBuf,
    pub dir: tempfile::TempDir,
}

pub fn start(tweak: impl FnOnce(&mut Config)) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("events.db");
    let mut c = Config {
        listen: "127.0.0.1:0".into(),
        db: db.clone(),
        ..Config::default()
    };
    tweak(&mut c);
    let server = Server::start(c).unwrap();
    Running { server, db, dir }
}

pub fn finding(host: &str, check: &str, subject: &str, state: State, sev: Severity) -> Event {
    let mut e = Event::finding(check, state, sev, subject, format!("{check} on {subject}"));
    e.host = host.into();
    e
}

pub fn metrics(host: &str, check: &str, subject: &str, key: &str, v: f64) -> Event {
    let mut e = Event::metrics(check, subject, format!("{key} {v}")).with(key, v);
    e.host = host.into();
    e
}

pub fn heartbeat(host: &str, version: &str) -> Event {
    let mut e = Event::finding(
        "agent.heartbeat",
        State::Updated,
        Severity::Info,
        host,
        "hb",
    )
    .with("version", version)
    .with("cpu_pct", 1.5);
    e.kind = zpulse_proto::event::Kind::Agent;
    e.host = host.into();
    e
}

pub fn t(s: u32) -> EventTime {
    EventTime {
        seconds: s,
        nanos: 0,
    }
}

pub fn now_t() -> EventTime {
    EventTime::from_system_time(std::time::SystemTime::now())
}

pub fn chunk(n: u8) -> String {
    ChunkId([n; 16]).to_base64()
}

pub fn random_chunk() -> String {
    let mut b = [0u8; 16];
    getrandom_fill(&mut b);
    ChunkId(b).to_base64()
}

fn getrandom_fill(b: &mut [u8; 16]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let pid = u64::from(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    b[..8].copy_from_slice(&(n ^ nanos).to_le_bytes());
    b[8..].copy_from_slice(&pid.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
}

/// A raw Forward client.
pub struct Client {
    pub s: TcpStream,
    dec: FrameDecoder,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client {
            s,
            dec: FrameDecoder::new(Limits::for_replies()),
        }
    }

    pub fn from_stream(s: TcpStream) -> Client {
        Client {
            s,
            dec: FrameDecoder::new(Limits::for_replies()),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.s.write_all(bytes)
    }

    /// The next server message; `None` when the server closed the connection.
    pub fn recv(&mut self) -> Option<ServerMessage> {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(m) = self.dec.next_server().unwrap() {
                return Some(m);
            }
            match self.s.read(&mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.dec.feed(&buf[..n]),
            }
        }
    }

    pub fn ack(&mut self) -> Option<String> {
        match self.recv()? {
            ServerMessage::Ack(a) => Some(a),
            other => panic!("expected an ack, got {other:?}"),
        }
    }

    /// HELO → PING → PONG; `Err` with the refusal.
    pub fn handshake(&mut self, hostname: &str, key: &str) -> Result<(), String> {
        let helo = match self.recv() {
            Some(ServerMessage::Helo(h)) => h,
            other => panic!("expected HELO, got {other:?}"),
        };
        let ping = Ping::answer(&helo, hostname, &salt_text([7; 16]), key, None);
        self.send(&ping.encode()).unwrap();
        match self.recv() {
            Some(ServerMessage::Pong(p)) => p.verify(&ping, &helo, key),
            other => Err(format!("no PONG: {other:?}")),
        }
    }
}

/// Closed by the server: reads return EOF (or reset) within the timeout.
pub fn closed(c: &mut Client) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match c.s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                );
            }
        }
    }
}

pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
