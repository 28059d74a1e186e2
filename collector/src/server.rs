//! The Forward receiver: an acceptor thread, one thread per connection (at most
//! `max_connections`), and one writer thread that owns the SQLite connection.
//!
//! A connection thread cuts the stream into messages with proto's [`FrameDecoder`] (bounded
//! by [`Limits`]), turns each event batch into rows, and hands them to the writer through a
//! bounded queue, then waits. The writer takes every batch waiting (up to a cap), stores them
//! in **one** transaction, commits, and only then answers each connection, which sends the
//! ack. So an ack always means "committed"; a crash before the commit loses only unacked
//! batches, which the agents resend (same chunk id, dropped if it had been stored).
//!
//! Limits: connections over the cap are closed at once (counted); a message must arrive
//! whole within `read_timeout` of its first byte; a connection idle for `idle_timeout` is
//! closed; frames, nesting and gzip inflation are bounded; writes time out too. Handshake
//! failures are logged with the peer and counted.

use crate::config::Config;
use crate::store::{Batch, Outcome, Row, Store};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zpulse_proto::forward::{ClientMessage, FrameDecoder, Helo, Limits, Pong, encode};

/// Batches the writer stores in one transaction, at most.
const GROUP_MAX_BATCHES: usize = 512;
/// Events per transaction, at most (beyond one batch).
const GROUP_MAX_EVENTS: usize = 200_000;
/// Batches waiting for the writer, at most: the rest wait in their connection (TCP pushes
/// back on the agents).
const QUEUE: usize = 256;
/// How often retention runs.
const RETENTION_EVERY: Duration = Duration::from_secs(60);

/// Counters, for the log, `/api/stats` and the tests.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections_total: AtomicU64,
    pub connections_active: AtomicU64,
    pub connections_refused: AtomicU64,
    pub auth_failures: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub timeouts: AtomicU64,
    pub tls_failures: AtomicU64,
    pub batches: AtomicU64,
    pub events: AtomicU64,
    pub duplicates: AtomicU64,
    pub foreign_records: AtomicU64,
    pub store_errors: AtomicU64,
    /// Connections closed because all connections' unfinished messages together passed
    /// `max_buffered_bytes`.
    pub over_budget: AtomicU64,
    /// Bytes of unfinished messages held right now, all connections together.
    pub buffered_bytes: AtomicU64,
}

impl Stats {
    pub fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BTreeMap::from([
            ("connections_total", g(&self.connections_total)),
            ("over_budget", g(&self.over_budget)),
            ("buffered_bytes", g(&self.buffered_bytes)),
            ("connections_active", g(&self.connections_active)),
            ("connections_refused", g(&self.connections_refused)),
            ("auth_failures", g(&self.auth_failures)),
            ("protocol_errors", g(&self.protocol_errors)),
            ("timeouts", g(&self.timeouts)),
            ("tls_failures", g(&self.tls_failures)),
            ("batches", g(&self.batches)),
            ("events", g(&self.events)),
            ("duplicates", g(&self.duplicates)),
            ("foreign_records", g(&self.foreign_records)),
            ("store_errors", g(&self.store_errors)),
        ])
    }
}

pub fn log(msg: impl AsRef<str>) {
    eprintln!("zpulse-collector: {}", msg.as_ref());
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

enum Job {
    Batch(Batch, Sender<Result<Outcome, String>>),
    Stop,
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    jobs: Sender<Job>,
    acceptor: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
}

struct Ctx {
    config: Config,
    limits: Limits,
    stats: Arc<Stats>,
    jobs: Sender<Job>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl Server {
    /// Opens the database (running retention once), binds, and starts the threads.
    pub fn start(config: Config) -> Result<Server, String> {
        Server::start_counting(config, Arc::new(Stats::default()))
    }

    /// [`Server::start`] adding to existing counters (a reload keeps `/api/stats` going).
    pub fn start_counting(config: Config, stats: Arc<Stats>) -> Result<Server, String> {
        config.check()?;
        let mut store = Store::open(&config.db)?;
        match store.retain(&config.retention, now_s()) {
            Ok(p) if p.by_age + p.by_size > 0 => log(format!(
                "retention: deleted {} events by age, {} by size",
                p.by_age, p.by_size
            )),
            Ok(_) => {}
            Err(e) => log(format!("retention: {e}")),
        }
        let tls = match &config.tls {
            Some(t) => Some(crate::tls::server_config(t)?),
            None => None,
        };
        let listener = TcpListener::bind(&config.listen)
            .map_err(|e| format!("listen {}: {e}", config.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let (jobs, rx) = bounded(QUEUE);
        let writer = std::thread::Builder::new()
            .name("writer".into())
            .spawn({
                let stats = stats.clone();
                let retention = config.retention;
                move || writer(store, &rx, &stats, &retention)
            })
            .map_err(|e| e.to_string())?;
        let ctx = Arc::new(Ctx {
            limits: Limits {
                max_frame_bytes: config.max_frame_bytes,
                max_depth: Limits::default().max_depth,
                max_inflated_bytes: config.max_inflated_bytes,
            },
            config,
            stats: stats.clone(),
            jobs: jobs.clone(),
            tls,
        });
        let acceptor = std::thread::Builder::new()
            .name("acceptor".into())
            .spawn({
                let stop = stop.clone();
                move || accept(&listener, &ctx, &stop)
            })
            .map_err(|e| e.to_string())?;
        Ok(Server {
            addr,
            stats,
            stop,
            jobs,
            acceptor: Some(acceptor),
            writer: Some(writer),
        })
    }

    /// Stops accepting, stores every batch already queued, checkpoints and closes the
    /// database. Connections still open are dropped without acks for what they had not
    /// handed over (their clients resend).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let _ = self.jobs.send(Job::Stop);
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.shutdown();
        }
    }
}

fn accept(listener: &TcpListener, ctx: &Arc<Ctx>, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                log(format!("accept: {e}"));
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let peer = match stream.peer_addr() {
            Ok(p) => p,
            Err(_) => continue,
        };
        let stats = &ctx.stats;
        let active = stats.connections_active.fetch_add(1, Ordering::SeqCst);
        if active as usize >= ctx.config.max_connections {
            stats.connections_active.fetch_sub(1, Ordering::SeqCst);
            let n = stats.connections_refused.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                log(format!(
                    "{peer}: refused: {} connections open (max_connections); {n} refused so far",
                    ctx.config.max_connections
                ));
            }
            drop(stream);
            continue;
        }
        stats.connections_total.fetch_add(1, Ordering::Relaxed);
        let ctx2 = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("conn {peer}"))
            .stack_size(256 << 10)
            .spawn(move || {
                if let Err(e) = connection(stream, peer, &ctx2) {
                    log(format!("{peer}: {e}"));
                }
                ctx2.stats.connections_active.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            stats.connections_active.fetch_sub(1, Ordering::SeqCst);
            log(format!("{peer}: cannot start a thread: {e}"));
        }
    }
}

/// Why a connection ended, when it was not the peer closing it.
type ConnResult = Result<(), String>;

fn connection(tcp: TcpStream, peer: SocketAddr, ctx: &Ctx) -> ConnResult {
    let _ = tcp.set_nodelay(true);
    tcp.set_write_timeout(Some(ctx.config.read_timeout))
        .map_err(|e| e.to_string())?;
    let control = tcp.try_clone().map_err(|e| e.to_string())?;
    match &ctx.tls {
        None => {
            let mut s = tcp;
            session(&mut s, &control, peer, ctx)
        }
        Some(cfg) => {
            let conn = rustls::ServerConnection::new(cfg.clone()).map_err(|e| e.to_string())?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            // Complete the TLS handshake within the read timeout.
            control
                .set_read_timeout(Some(ctx.config.read_timeout))
                .map_err(|e| e.to_string())?;
            while s.conn.is_handshaking() {
                if let Err(e) = s.conn.complete_io(&mut s.sock) {
                    ctx.stats.tls_failures.fetch_add(1, Ordering::Relaxed);
                    return Err(format!("TLS handshake: {e}"));
                }
            }
            let r = session(&mut s, &control, peer, ctx);
            s.conn.send_close_notify();
            let _ = s.conn.complete_io(&mut s.sock);
            r
        }
    }
}

/// This connection's share of [`Stats::buffered_bytes`]: what its decoder holds of messages
/// not yet complete. Every connection is bounded by the frame limit; this bounds them all
/// together. Released when the connection ends.
struct Held<'a> {
    stats: &'a Stats,
    bytes: u64,
}

impl Held<'_> {
    /// Accounts `now` bytes for this connection; `false` when that takes all connections over
    /// `max` (the caller closes the connection).
    fn set(&mut self, now: u64, max: u64) -> bool {
        if now >= self.bytes {
            let more = now - self.bytes;
            let total = self.stats.buffered_bytes.fetch_add(more, Ordering::Relaxed) + more;
            self.bytes = now;
            total <= max
        } else {
            self.stats
                .buffered_bytes
                .fetch_sub(self.bytes - now, Ordering::Relaxed);
            self.bytes = now;
            true
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.stats
            .buffered_bytes
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Reads until a complete client message, honouring the read and idle timeouts. `Ok(None)`:
/// the peer closed the connection between messages.
fn next_message<S: Read>(
    s: &mut S,
    control: &TcpStream,
    dec: &mut FrameDecoder,
    buf: &mut [u8],
    ctx: &Ctx,
) -> Result<Option<ClientMessage>, String> {
    let mut idle_since = Instant::now();
    let mut first_byte: Option<Instant> = None;
    let mut held = Held {
        stats: &ctx.stats,
        bytes: 0,
    };
    loop {
        let max = ctx.config.max_buffered_bytes as u64;
        if !held.set(dec.buffered() as u64, max) {
            ctx.stats.over_budget.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "closing: unfinished messages of all connections exceed max_buffered_bytes ({max})"
            ));
        }
        match dec.next_client() {
            Ok(Some(m)) => return Ok(Some(m)),
            Ok(None) => {}
            Err(e) => {
                ctx.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                return Err(format!("protocol error, closing: {e}"));
            }
        }
        if dec.buffered() > 0 && first_byte.is_none() {
            first_byte = Some(Instant::now());
        }
        let deadline = match first_byte {
            Some(t) => t + ctx.config.read_timeout,
            None => idle_since + ctx.config.idle_timeout,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            if first_byte.is_none() {
                // Idle peers are normal (an agent between batches): close quietly.
                return Ok(None);
            }
            ctx.stats.timeouts.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "read timeout: a message was not complete after {:?}",
                ctx.config.read_timeout
            ));
        }
        control
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(|e| e.to_string())?;
        match s.read(buf) {
            Ok(0) => {
                return if dec.buffered() > 0 {
                    ctx.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                    Err(format!(
                        "closed in the middle of a message ({} bytes received)",
                        dec.buffered()
                    ))
                } else {
                    Ok(None)
                };
            }
            Ok(n) => {
                dec.feed(&buf[..n]);
                idle_since = Instant::now();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

fn session<S: Read + Write>(
    s: &mut S,
    control: &TcpStream,
    peer: SocketAddr,
    ctx: &Ctx,
) -> ConnResult {
    let mut dec = FrameDecoder::new(ctx.limits);
    let mut buf = vec![0u8; 64 << 10];
    let peer_host = peer.ip().to_string();
    if ctx.config.requires_auth() {
        match handshake(s, control, &mut dec, &mut buf, peer, ctx)? {
            true => {}
            false => return Ok(()),
        }
    }
    loop {
        let msg = match next_message(s, control, &mut dec, &mut buf, ctx)? {
            Some(m) => m,
            None => return Ok(()),
        };
        let batch = match msg {
            ClientMessage::KeepAlive => continue,
            ClientMessage::Ping(_) => {
                ctx.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                return Err("PING outside a handshake, closing".into());
            }
            ClientMessage::Events(b) => b,
        };
        let mut rows = Vec::with_capacity(batch.entries.len());
        let mut foreign = 0u64;
        let mut first_error = None;
        for e in &batch.entries {
            let (row, valid) = Row::from_entry(&batch.tag, e, &peer_host);
            if let Err(why) = valid {
                foreign += 1;
                first_error.get_or_insert(why);
            }
            rows.push(row);
        }
        if foreign > 0 {
            let before = ctx
                .stats
                .foreign_records
                .fetch_add(foreign, Ordering::Relaxed);
            if batch.tag.starts_with("zpulse.") && (before + foreign).is_power_of_two() {
                log(format!(
                    "{peer}: {foreign} record(s) under {} are not valid zpulse events, stored as \
                     foreign: {}",
                    batch.tag,
                    first_error.unwrap_or_default()
                ));
            }
        }
        let n = rows.len();
        let (tx, rx) = bounded(1);
        let job = Batch {
            chunk: batch.options.chunk.clone(),
            peer: peer.to_string(),
            rows,
        };
        ctx.jobs
            .send(Job::Batch(job, tx))
            .map_err(|_| "the collector is stopping".to_string())?;
        let outcome = rx
            .recv()
            .map_err(|_| "the collector is stopping".to_string())?
            .map_err(|e| format!("not stored, no ack ({e})"))?;
        ctx.stats.batches.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Outcome::Stored(_) => {
                ctx.stats.events.fetch_add(n as u64, Ordering::Relaxed);
            }
            Outcome::Duplicate => {
                ctx.stats.duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(chunk) = &batch.options.chunk {
            s.write_all(&encode::ack(chunk))
                .and_then(|_| s.flush())
                .map_err(|e| format!("sending the ack: {e}"))?;
        }
    }
}

/// HELO → PING → PONG. `Ok(false)`: refused (already logged and counted).
fn handshake<S: Read + Write>(
    s: &mut S,
    control: &TcpStream,
    dec: &mut FrameDecoder,
    buf: &mut [u8],
    peer: SocketAddr,
    ctx: &Ctx,
) -> Result<bool, String> {
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|e| format!("random nonce: {e}"))?;
    let mut auth = Vec::new();
    if !ctx.config.users.is_empty() {
        let mut salt = [0u8; 16];
        getrandom::fill(&mut salt).map_err(|e| format!("random salt: {e}"))?;
        auth = salt.to_vec();
    }
    let helo = Helo {
        nonce: nonce.to_vec(),
        auth,
        keepalive: true,
    };
    s.write_all(&helo.encode())
        .and_then(|_| s.flush())
        .map_err(|e| format!("sending HELO: {e}"))?;
    let fail = |why: String| {
        let n = ctx.stats.auth_failures.fetch_add(1, Ordering::Relaxed) + 1;
        log(format!(
            "{peer}: authentication failed: {why} ({n} failure(s) so far)"
        ));
    };
    let ping = match next_message(s, control, dec, buf, ctx) {
        Ok(Some(ClientMessage::Ping(p))) => p,
        Ok(Some(_)) => {
            fail("sent events before the handshake (the server requires a shared key)".into());
            return Ok(false);
        }
        Ok(None) => {
            fail("closed the connection without answering HELO".into());
            return Ok(false);
        }
        Err(e) => {
            fail(format!("no valid PING: {e}"));
            return Ok(false);
        }
    };
    let key = ctx
        .config
        .clients
        .get(&ping.hostname)
        .or(ctx.config.shared_key.as_ref());
    let pong = match key {
        Some(key) => ping.check(&helo, &ctx.config.self_hostname, key, &|u: &str| {
            ctx.config.users.get(u).cloned()
        }),
        None => Pong {
            ok: false,
            reason: "unknown client hostname".into(),
            hostname: ctx.config.self_hostname.clone(),
            shared_key_digest: String::new(),
        },
    };
    let _ = s.write_all(&pong.encode()).and_then(|_| s.flush());
    if !pong.ok {
        fail(format!(
            "client {:?}: {}",
            ping.hostname.chars().take(64).collect::<String>(),
            pong.reason
        ));
        return Ok(false);
    }
    Ok(true)
}

fn writer(
    mut store: Store,
    rx: &Receiver<Job>,
    stats: &Stats,
    retention: &crate::store::Retention,
) {
    let mut next_retention = Instant::now() + RETENTION_EVERY;
    let mut stopping = false;
    loop {
        let wait = next_retention.saturating_duration_since(Instant::now());
        let first = if stopping {
            match rx.try_recv() {
                Ok(j) => j,
                Err(_) => break,
            }
        } else {
            match rx.recv_timeout(wait) {
                Ok(j) => j,
                Err(RecvTimeoutError::Timeout) => {
                    next_retention = Instant::now() + RETENTION_EVERY;
                    match store.retain(retention, now_s()) {
                        Ok(p) if p.by_age + p.by_size > 0 => log(format!(
                            "retention: deleted {} events by age, {} by size",
                            p.by_age, p.by_size
                        )),
                        Ok(_) => {}
                        Err(e) => log(format!("retention: {e}")),
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        };
        let mut group = Vec::new();
        let mut events = 0;
        let mut next = Some(first);
        while let Some(j) = next.take() {
            match j {
                Job::Batch(b, reply) => {
                    events += b.rows.len();
                    group.push((b, reply));
                }
                Job::Stop => stopping = true,
            }
            if group.len() < GROUP_MAX_BATCHES && events < GROUP_MAX_EVENTS {
                next = rx.try_recv().ok();
            }
        }
        if group.is_empty() {
            continue;
        }
        let now = now_s();
        let result = (|| {
            let tx = store.transaction()?;
            let mut outcomes = Vec::with_capacity(group.len());
            for (b, _) in &group {
                outcomes.push(Store::apply(&tx, b, now)?);
            }
            tx.commit().map_err(|e| format!("commit: {e}"))?;
            Ok::<_, String>(outcomes)
        })();
        match result {
            Ok(outcomes) => {
                for ((_, reply), o) in group.into_iter().zip(outcomes) {
                    let _ = reply.send(Ok(o));
                }
            }
            Err(e) => {
                stats.store_errors.fetch_add(1, Ordering::Relaxed);
                log(format!("storing {} batch(es) failed: {e}", group.len()));
                for (_, reply) in group {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
    if let Err(e) = store.checkpoint() {
        log(format!("checkpoint at shutdown: {e}"));
    }
}
