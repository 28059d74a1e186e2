//! Helpers shared by the collector's integration tests.
#![allow(dead_code)]

pub mod alertmanager;

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use zpulse_collector::config::Config;
use zpulse_collector::server::Server;
use zpulse_collector::store::{Batch, Row, Store};
use zpulse_forward::{ChunkId, FrameDecoder, Limits, Ping, ServerMessage, handshake::salt_text};
use zpulse_proto::event::{Event, EventTime, Severity, State};

pub struct Running {
    pub server: Server,
    pub db: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Running {
    /// The web page and API on a free loopback port, reading this collector's database.
    pub fn web_page(&self) -> SocketAddr {
        zpulse_collector::http::start(
            "127.0.0.1:0",
            zpulse_collector::http::Page {
                db: self.db.clone(),
                ..Default::default()
            },
            self.server.stats.clone(),
        )
        .unwrap()
    }
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
    .with("interval_s", 60.0)
    .with("cpu_pct", 1.5);
    e.kind = zpulse_proto::event::Kind::Agent;
    e.host = host.into();
    e
}

/// A number from the environment (benchmark sizes), else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The collector's clock, s since the epoch.
pub fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The checks of [`fill_fleet`]'s open findings.
pub const FLEET_CHECKS: [&str; 6] = [
    "special-fill",
    "slog-usage",
    "arc-sizing",
    "hdd-saturation",
    "l2arc-value",
    "pool-health",
];

/// A fleet's history written straight into a database, as the writer stores it, in the
/// order a fleet sends it (time, then host): `hosts` hosts (`nas000`…) with `rows` events
/// together, one a minute per host back from `now` (every tenth a heartbeat, the rest `arc`
/// metrics with a `hit_pct`), and three hosts in ten (`h % 10 < 3`) with one open finding
/// raised an hour ago, critical on even hosts and warning on odd ones, of check
/// `FLEET_CHECKS[h % 6]`. The page benchmark and the page tests share it.
pub fn fill_fleet(db: &Path, hosts: usize, rows: usize, now: i64) {
    let mut store = Store::open(db).unwrap();
    let minutes = rows / hosts.max(1);
    let name = |h: usize| format!("nas{h:03}");
    // A transaction per 50 minutes of the fleet: the fill is not what is measured.
    for first in (0..minutes).step_by(50) {
        let batches: Vec<Batch> = (first..(first + 50).min(minutes))
            .flat_map(|i| {
                let at = (now - (minutes - i) as i64 * 60) * 1_000_000_000;
                (0..hosts).map(move |h| {
                    let mut e = if i % 10 == 0 {
                        heartbeat(&name(h), "0.1.0")
                    } else {
                        Event::metrics("arc", "arc", "arc").with("hit_pct", (i % 100) as f64)
                    };
                    e.host = name(h);
                    Batch {
                        rows: vec![Row::from_event("zpulse.metrics", at, &e, "192.0.2.1")],
                        peer: "192.0.2.1".into(),
                        ..Batch::default()
                    }
                })
            })
            .collect();
        store.store(&batches, now).unwrap();
    }
    let findings: Vec<Batch> = (0..hosts)
        .filter(|h| h % 10 < 3)
        .map(|h| {
            let sev = if h % 2 == 0 {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let check = FLEET_CHECKS[h % FLEET_CHECKS.len()];
            Batch {
                rows: vec![Row::from_event(
                    "zpulse.finding",
                    (now - 3600) * 1_000_000_000,
                    &finding(&name(h), check, "tank", State::Raised, sev),
                    "192.0.2.1",
                )],
                peer: "192.0.2.1".into(),
                ..Batch::default()
            }
        })
        .collect();
    store.store(&findings, now).unwrap();
}

/// The load average over 1, 5 and 15 minutes (proc(5)), printed beside a bench's figures.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// A port on loopback nobody listens on (bound, then let go).
pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The real binary, a child of the test (so its memory and its restarts are its own); killed
/// when dropped. Its log lines after "listening" are kept in `.1`.
pub struct Collector(pub Child, pub std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Collector {
    /// `zpulse-collector serve ARGS…`, returned once it says it listens (its log is drained
    /// in a thread).
    pub fn serve(args: &[&std::ffi::OsStr]) -> Collector {
        Collector::serve_logged(args).0
    }

    /// [`Collector::serve`], and its log lines after "forward listening", as they come (they
    /// are kept in `.1` too).
    pub fn serve_logged(
        args: &[&std::ffi::OsStr],
    ) -> (Collector, std::sync::mpsc::Receiver<String>) {
        // ZPULSE_COLLECTOR_BIN: another build of the binary (a release build, to measure
        // what the attack tests measure as it runs in production).
        let bin = std::env::var_os("ZPULSE_COLLECTOR_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_zpulse-collector").into());
        let mut child = Command::new(bin)
            .arg("serve")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut log = Vec::new();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("forward listening") => break,
                Some(Ok(l)) => log.push(l),
                _ => {
                    let status = child.wait().unwrap();
                    panic!("the collector exited ({status}) before listening: {log:?}");
                }
            }
        }
        let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let keep = kept.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                keep.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        (Collector(child, kept), rx)
    }

    /// `kill -9`, and waits for it.
    pub fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

pub const DAY: i64 = 86_400;

/// `n` metrics events of host `stopped` received two days before `now` (s), over `seconds`
/// seconds of receive time (an id range each), stored into the database at `db` (made here):
/// what a collector finds after a long stop, for its first retention pass.
pub fn store_expired(db: &Path, n: usize, seconds: usize, now: i64) {
    store_received(db, n, seconds, now - 2 * DAY);
}

/// `n` metrics events of host `stopped` received over `seconds` seconds from `first` (s), an
/// id range each, stored into the database at `db` (made here) in transactions of at most
/// 10,000.
pub fn store_received(db: &Path, n: usize, seconds: usize, first: i64) {
    let e = metrics("stopped", "disk", "sda", "busy_pct", 12.0);
    let mut store = Store::open(db).unwrap();
    for k in 0..seconds {
        let received = first + k as i64;
        let row = Row::from_event("zpulse.metrics", received * 1_000_000_000, &e, "old");
        let in_second = n / seconds + usize::from(k < n % seconds);
        for done in (0..in_second).step_by(10_000) {
            let batch = Batch {
                rows: vec![row.clone(); (in_second - done).min(10_000)],
                ..Batch::default()
            };
            store.store(&[batch], received).unwrap();
        }
    }
}

/// How many events of the database at `db` were received before `cutoff` (s), and how many of
/// those lie in no range of ids received before it: retention by age finds an expired event
/// only through those ranges, so a pass stopped anywhere (a stop, a kill) must leave the second
/// figure at 0.
pub fn expired_left(db: &Path, cutoff: i64) -> (i64, i64) {
    let conn = read_only(db);
    let count = |sql: &str| -> i64 { conn.query_row(sql, [cutoff], |r| r.get(0)).unwrap() };
    (
        count("SELECT count(*) FROM events WHERE received < ?1"),
        count(
            "SELECT count(*) FROM events e WHERE e.received < ?1 AND NOT EXISTS
               (SELECT 1 FROM received_ranges g WHERE g.received < ?1
                  AND e.id BETWEEN g.first_id AND g.last_id)",
        ),
    )
}

/// A read-only SQLite connection to the database at `db`, beside the collector's own.
pub fn read_only(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// SQLite's write-ahead log of the database at `db`.
pub fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    name.into()
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

/// A TCP connection to `to` from loopback address `from` (any in 127.0.0.0/8): the attacks
/// of many peers, each address a peer of its own to the collector's per-peer limits.
pub fn connect_from(from: std::net::Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use rustix::net::{AddressFamily, SocketType, bind, connect, socket};
    assert!(
        from.is_loopback(),
        "attack tests use loopback addresses only"
    );
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None)?;
    bind(&fd, &SocketAddr::from((from, 0)))?;
    connect(&fd, &to)?;
    let s = TcpStream::from(fd);
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    Ok(s)
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

    /// One event as a Message with chunk id `chunk(n)`, now; asserts its ack.
    pub fn send_acked(&mut self, tag: &str, e: &Event, n: u8) {
        self.send_record_acked(tag, now_t(), &e.to_msgpack(), n);
    }

    /// One record (MessagePack) as a Message stamped `time` with chunk id `chunk(n)`;
    /// asserts its ack.
    pub fn send_record_acked(&mut self, tag: &str, time: EventTime, record: &[u8], n: u8) {
        self.send(&zpulse_forward::encode::message(
            tag,
            time,
            record,
            Some(&chunk(n)),
        ))
        .unwrap();
        assert_eq!(self.ack(), Some(chunk(n)));
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
