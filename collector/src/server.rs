//! The Forward receiver: an acceptor thread, one thread per connection (at most
//! `max_connections`), and one writer thread that owns the SQLite connection.
//!
//! A connection thread cuts the stream into messages with proto's [`FrameDecoder`] (bounded
//! by [`Limits`]), turns each event batch into rows, and hands them to the writer through a
//! bounded queue, then waits. The writer takes every batch waiting (up to a cap in events and
//! bytes, the lightest first), stores them in **one** transaction and commits; a syncer
//! thread then syncs the WAL to disk, and only then answers each connection, which sends the
//! ack, while the writer goes on with the next transaction (one sync serves every commit made
//! while the one before it ran; a checkpointer thread copies the WAL into the database beside
//! them). A heavy batch is stored in parts, one per transaction, between light ones, and
//! answered when its last part is committed and synced. So an ack always means "committed and
//! on disk"; a crash before that loses only unacked batches (a heavy batch's earlier parts
//! are deleted when the collector starts again), which the agents resend (same chunk id,
//! dropped if it had been stored). Readers (the page, the alerter) may see a commit a few
//! milliseconds before it is on disk.
//!
//! Limits (each counted in [`Stats`]): connections over the cap, or over the cap for one
//! peer address, are closed at once; a message must arrive whole within `read_timeout` of
//! its first byte, a new connection must send something valid within
//! `first_message_timeout` whatever trickles in (until then it is unproven, and unproven
//! connections hold at most half the slots: [`Unproven`]), and one that completes nothing
//! but keep-alives for `idle_timeout` is closed; frames, nesting, gzip inflation and entries
//! per message are bounded by proto's [`Limits`]; decoding gzip or large messages runs for
//! at most [`DECODERS`] connections at once (small ones never wait); `max_inflight_bytes` is
//! the memory budget of all decoding: a heavy message holds room for the most its decoding
//! can make before a byte is inflated, then for its rows until the ack (and once it is empty
//! again, freed memory goes back to the system); each connection decodes at
//! most `max_entries_per_second` on average (past it, it is read more slowly); records over
//! `max_record_bytes` and tags over `max_tag_bytes` are refused; writes time out too.
//!
//! Identity: each connection knows who it is ([`Identity`]: a per-client key, a client
//! certificate, the fleet key, or nobody on loopback) and which hosts it may write records
//! for; other records are refused and counted, never stored. Handshake failures are logged
//! with the peer and counted.
//!
//! Reload ([`Server::reload`]) builds the whole new listener (TLS files read, address bound
//! or the running socket reused) before it swaps; on any error the running one stays.

use crate::config::Config;
use crate::store::{Batch, Outcome, Part, Row, Store};
use crate::timeseries::Reading;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use std::collections::{BTreeMap, HashMap};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zpulse_forward::series::{self, SeriesRecord};
use zpulse_forward::{
    ClientMessage, ClientMessageRef, EventBatch, EventBatchRef, FrameDecoder, Helo, Limits, Pong,
    decode, encode,
};

/// Batches the writer stores in one transaction, at most.
const GROUP_MAX_BATCHES: usize = 512;
/// Events per transaction, at most (beyond its first batch or part): the default
/// `max_entries`, so a transaction takes well under a second; a light batch waits for the
/// transaction under way and its own.
const GROUP_MAX_EVENTS: usize = 5_000;
/// Bytes of rows per transaction, at most (beyond its first batch or part): what the writer
/// writes and syncs before any batch of the transaction is acked. 5,000 events of a few
/// hundred bytes (an agent's) are about 2 MiB.
const GROUP_MAX_BYTES: u64 = 4 << 20;
/// A batch larger than this, in estimated bytes or in events, is stored in parts of at most
/// this size, one transaction each ([`Store::apply_part`]), acked when its last part
/// commits: 5,000 large foreign records can be 30 MiB, whose one commit took a busy disk
/// 0.4–0.7 s, and a light batch arriving meanwhile waited for all of it. Parts let light
/// batches' transactions come between, so a transaction holds at most 4 MiB and one part.
const PART_MAX_BYTES: u64 = 1 << 20;
const PART_MAX_EVENTS: usize = 1_000;
/// Bytes of rows committed after which the checkpointer is asked to copy the WAL into the
/// database: about SQLite's own automatic checkpoint (1000 pages of 4 KiB), so light
/// commits do not each cost a checkpoint's sync beside them.
const CHECKPOINT_AFTER_BYTES: u64 = 4 << 20;
/// How long a restart waits for a reader still on the WAL (a page's query) before the
/// writer goes on without it (and tries again once the WAL has grown by its limit again).
const WAL_RESTART_WAIT: Duration = Duration::from_millis(500);
/// Transactions a batch may be passed over for smaller ones before it goes first.
const MAX_PASSED_OVER: u32 = 2;
/// Batches waiting for the writer, at most: the rest wait in their connection (TCP pushes
/// back on the agents).
const QUEUE: usize = 256;
/// Store failures are logged at most once this often (a full disk fails every batch).
const STORE_ERRORS_LOGGED_EVERY: Duration = Duration::from_secs(60);
/// How often retention runs.
const RETENTION_EVERY: Duration = Duration::from_secs(60);
/// Connections decoding a gzip or a large message at once, at most: the transient memory of
/// inflating (inflated blob, entries, rows) is bounded by this many messages at their limits,
/// and heavy decoding takes at most one core: on a two-core machine the other is left to the
/// writer (the one place batches are stored, so what bounds every ack) and to light
/// messages.
pub const DECODERS: u64 = 1;
/// A plain message this large is decoded under a [`DECODERS`] slot, as gzip ones are (an
/// agent's batch of 1000 events is some 300 KB; a heartbeat, a few hundred bytes).
pub const HEAVY_FRAME_BYTES: usize = 32 << 10;
/// What one stored row costs in memory beyond its text (the `Row`'s strings and vectors).
const ROW_OVERHEAD: u64 = 256;
/// How long an unproven connection may keep its slot against newcomers, at least (or
/// `first_message_timeout`, when shorter): an agent's first message or handshake comes
/// within a round trip or two.
const UNPROVEN_GRACE: Duration = Duration::from_secs(1);
/// What one decoded entry costs in memory beyond its record's bytes (the `Entry`, the
/// allocation's own header).
const ENTRY_OVERHEAD: u64 = 64;

/// Counters, for the log, `/api/stats` and the tests.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections_total: AtomicU64,
    pub connections_active: AtomicU64,
    pub connections_refused: AtomicU64,
    /// Refused because their peer address had `max_connections_per_peer` open.
    pub connections_refused_peer: AtomicU64,
    /// Unproven connections closed to make room for a newcomer (see `Unproven`).
    pub connections_evicted: AtomicU64,
    pub auth_failures: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub timeouts: AtomicU64,
    pub tls_failures: AtomicU64,
    pub batches: AtomicU64,
    pub events: AtomicU64,
    pub duplicates: AtomicU64,
    pub foreign_records: AtomicU64,
    /// Records for a host the connection's identity may not write: refused, not stored.
    pub records_refused_host: AtomicU64,
    /// Records over `max_record_bytes`: refused, not stored.
    pub records_oversized: AtomicU64,
    /// Times a connection was read more slowly for passing `max_entries_per_second`.
    pub throttled: AtomicU64,
    pub store_errors: AtomicU64,
    /// Connections closed because all connections' unfinished messages together passed
    /// `max_buffered_bytes`.
    pub over_budget: AtomicU64,
    /// Bytes of unfinished messages held right now, all connections together.
    pub buffered_bytes: AtomicU64,
    /// Connections closed because decoded rows waiting for the writer stayed over
    /// `max_inflight_bytes` for `read_timeout`.
    pub over_inflight: AtomicU64,
    /// Times the writer restarted the WAL for its size (`max_wal_bytes`), and of those
    /// the times a reader kept it from it.
    pub wal_restarts: AtomicU64,
    pub wal_restarts_failed: AtomicU64,
    /// Events retention deleted (by age and by size), and whether a pass is under way (1:
    /// steps remain, as after a start on a database whose events expired meanwhile).
    pub retention_deleted: AtomicU64,
    pub retention_running: AtomicU64,
}

impl Stats {
    pub fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BTreeMap::from([
            ("connections_total", g(&self.connections_total)),
            ("over_budget", g(&self.over_budget)),
            ("buffered_bytes", g(&self.buffered_bytes)),
            ("over_inflight", g(&self.over_inflight)),
            ("wal_restarts", g(&self.wal_restarts)),
            ("wal_restarts_failed", g(&self.wal_restarts_failed)),
            ("retention_deleted", g(&self.retention_deleted)),
            ("retention_running", g(&self.retention_running)),
            ("connections_active", g(&self.connections_active)),
            ("connections_refused", g(&self.connections_refused)),
            (
                "connections_refused_peer",
                g(&self.connections_refused_peer),
            ),
            ("connections_evicted", g(&self.connections_evicted)),
            ("auth_failures", g(&self.auth_failures)),
            ("protocol_errors", g(&self.protocol_errors)),
            ("timeouts", g(&self.timeouts)),
            ("tls_failures", g(&self.tls_failures)),
            ("batches", g(&self.batches)),
            ("events", g(&self.events)),
            ("duplicates", g(&self.duplicates)),
            ("foreign_records", g(&self.foreign_records)),
            ("records_refused_host", g(&self.records_refused_host)),
            ("records_oversized", g(&self.records_oversized)),
            ("throttled", g(&self.throttled)),
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

/// A shared allowance of `max` units (decode slots, bytes): [`Gate::acquire`] waits for
/// room. A request larger than the whole allowance is admitted when nothing else holds any,
/// so it waits, but never forever.
#[derive(Debug)]
pub struct Gate {
    used: Mutex<u64>,
    freed: Condvar,
    max: u64,
}

/// Units held from a [`Gate`], given back on drop.
pub struct Permit<'a> {
    gate: &'a Gate,
    units: u64,
}

impl Gate {
    pub fn new(max: u64) -> Gate {
        Gate {
            used: Mutex::new(0),
            freed: Condvar::new(),
            max,
        }
    }

    /// `None` when there was no room before `deadline`.
    pub fn acquire(&self, units: u64, deadline: Instant) -> Option<Permit<'_>> {
        let used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        let mut used = self.wait_for_room(used, 0, units, deadline)?;
        *used += units;
        Some(Permit { gate: self, units })
    }

    /// Waits until `more` units fit beside those `used`, `held` of which are the caller's
    /// own (admitted whatever their size when the caller's are all the gate holds); `None`
    /// at `deadline`.
    fn wait_for_room<'g>(
        &'g self,
        mut used: std::sync::MutexGuard<'g, u64>,
        held: u64,
        more: u64,
        deadline: Instant,
    ) -> Option<std::sync::MutexGuard<'g, u64>> {
        while *used > held && *used + more > self.max {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            used = self
                .freed
                .wait_timeout(used, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        Some(used)
    }

    /// Units taken at once, whatever is held: for what is small and bounded by other limits
    /// (a light message's rows), which must never queue behind heavy ones for room.
    pub fn take_now(&self, units: u64) -> Permit<'_> {
        *self.used.lock().unwrap_or_else(|p| p.into_inner()) += units;
        Permit { gate: self, units }
    }

    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Permit<'_> {
    /// Holds `units` instead: fewer at once (the rest given back), more once there is room
    /// for the difference before `deadline` (as [`Gate::acquire`]: admitted when this permit
    /// is all the gate holds). `false`, holding what it held, when there was no room.
    pub fn resize(&mut self, units: u64, deadline: Instant) -> bool {
        let gate = self.gate;
        let mut used = gate.used.lock().unwrap_or_else(|p| p.into_inner());
        if units <= self.units {
            *used -= self.units - units;
            self.units = units;
            gate.freed.notify_all();
            return true;
        }
        let more = units - self.units;
        let Some(mut used) = gate.wait_for_room(used, self.units, more, deadline) else {
            return false;
        };
        *used += more;
        self.units = units;
        true
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut used = self.gate.used.lock().unwrap_or_else(|p| p.into_inner());
        *used -= self.units;
        self.gate.freed.notify_all();
    }
}

/// At most one log line per `every` for a kind of failure: [`LogEvery::due`] says when one
/// may go out, and how many failures went unsaid since the last. Pure: the caller passes
/// the clock.
#[derive(Debug)]
pub struct LogEvery {
    every: Duration,
    last: Option<Instant>,
    unsaid: u64,
}

impl LogEvery {
    pub fn new(every: Duration) -> LogEvery {
        LogEvery {
            every,
            last: None,
            unsaid: 0,
        }
    }

    /// A failure at `now`: `Some(failures not logged since the last line)` when this one
    /// is to be logged, else `None` (counted).
    pub fn due(&mut self, now: Instant) -> Option<u64> {
        if self
            .last
            .is_some_and(|at| now.saturating_duration_since(at) < self.every)
        {
            self.unsaid += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.unsaid))
    }
}

/// A token bucket of decoded entries for one connection: `per_second` on average, bursts
/// up to `burst`. Pure: the caller passes the clock.
#[derive(Debug, Clone)]
pub struct EntryRate {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl EntryRate {
    pub fn new(per_second: u32, burst: usize, now: Instant) -> EntryRate {
        let burst = (burst as f64).max(f64::from(per_second));
        EntryRate {
            per_second: f64::from(per_second),
            burst,
            tokens: burst,
            at: now,
        }
    }

    /// Takes `n` entries decoded at `now`; how long to wait before reading more.
    pub fn take(&mut self, n: usize, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst) - n as f64;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.per_second)
        }
    }
}

/// Who a connection proved to be, and which hosts it may write records for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    /// The authenticated name (the client key's name, the certificate's first name, the
    /// PING hostname under the fleet key); `None`: not authenticated.
    pub name: Option<String>,
    /// Each entry restricts the writable hosts to its list; all must allow a host. Empty:
    /// any host (the fleet key, or no authentication).
    pub restrictions: Vec<Vec<String>>,
}

impl Identity {
    pub fn may_write(&self, host: &str) -> bool {
        self.restrictions
            .iter()
            .all(|allowed| allowed.iter().any(|h| h == host))
    }

    /// A verified client certificate's names → the hosts it may write (`[tls.clients]`,
    /// else the names themselves).
    pub fn from_certificate(names: &[String], config: &crate::config::Tls) -> Identity {
        let mapped: Vec<String> = names
            .iter()
            .filter_map(|n| config.clients.get(n))
            .flatten()
            .cloned()
            .collect();
        Identity {
            name: names.first().cloned(),
            restrictions: vec![if mapped.is_empty() {
                names.to_vec()
            } else {
                mapped
            }],
        }
    }
}

/// Open connections per peer address (the Forward listener's, the web page's).
#[derive(Debug, Default)]
pub(crate) struct Peers(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place in [`Peers`], given back on drop.
pub(crate) struct PeerSlot {
    peers: Arc<Peers>,
    ip: IpAddr,
}

impl PeerSlot {
    /// A place for a connection from `ip`; `None` when `max` from it are open.
    pub(crate) fn enter(peers: &Arc<Peers>, ip: IpAddr, max: usize) -> Option<PeerSlot> {
        let mut m = peers.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            peers: peers.clone(),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut m = self.peers.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

/// Connections that have sent nothing valid yet (no complete Forward message, or no
/// handshake passed when clients authenticate), by peer address, oldest first, each with a
/// handle that closes it. They may hold at most half of `max_connections`: the rest is kept
/// for connections that proved themselves, so that trickling peers, however many addresses
/// they come from, never take every slot. When the unproven share or all slots are taken, a
/// newcomer takes the place of an unproven connection: the oldest of the address holding
/// the most of them if that is more than one more than the newcomer's address holds, else
/// the oldest of all. So a newcomer always gets in while any connection is unproven, and an
/// agent's connection, which proves itself within a round trip, is given up only after as
/// many newer unproven ones as half the slots came in before its first message did.
pub(crate) struct Unproven<H = TcpStream> {
    /// (id, when it came in, its handle), oldest first.
    by_peer: HashMap<IpAddr, std::collections::VecDeque<(u64, Instant, H)>>,
    total: usize,
    next_id: u64,
}

impl<H> Default for Unproven<H> {
    fn default() -> Self {
        Unproven {
            by_peer: HashMap::new(),
            total: 0,
            next_id: 0,
        }
    }
}

/// What a new connection may do.
#[derive(Debug)]
pub(crate) enum Admission<T> {
    Take,
    /// Take it after closing this unproven connection.
    TakeInPlaceOf(T),
    Refuse,
}

impl<H> Unproven<H> {
    /// Whether a connection from `ip` may be taken at `now` while `active` are open (`max`
    /// at most). The oldest of all is given up only once it has had `grace` to prove itself
    /// (an agent needs a round trip), so that newcomers arriving faster than agents can
    /// answer take one another's places, not the agents'.
    pub(crate) fn admit(
        &mut self,
        ip: IpAddr,
        active: usize,
        max: usize,
        now: Instant,
        grace: Duration,
    ) -> Admission<H> {
        let share = (max / 2).max(1);
        if active < max && self.total < share {
            return Admission::Take;
        }
        let theirs = self.by_peer.get(&ip).map_or(0, |q| q.len());
        let ripe = |q: &std::collections::VecDeque<(u64, Instant, H)>| {
            q.front()
                .filter(|(_, since, _)| now.saturating_duration_since(*since) >= grace)
                .map(|(id, _, _)| *id)
        };
        // An address holding two more than the newcomer's gives way whatever the age: an
        // agent's own address never holds more than its one.
        let most = self
            .by_peer
            .iter()
            .max_by_key(|(_, q)| q.len())
            .filter(|(_, q)| q.len() > theirs + 1)
            .map(|(peer, _)| *peer);
        // Ids grow: each address's first is its oldest.
        let oldest = || {
            self.by_peer
                .iter()
                .filter_map(|(peer, q)| Some((ripe(q)?, *peer)))
                .min()
                .map(|(_, peer)| peer)
        };
        let Some(victim_peer) = most.or_else(oldest) else {
            return Admission::Refuse;
        };
        let victim = self
            .by_peer
            .get_mut(&victim_peer)
            .and_then(|q| q.pop_front());
        if self.by_peer.get(&victim_peer).is_some_and(|q| q.is_empty()) {
            self.by_peer.remove(&victim_peer);
        }
        match victim {
            Some((_, _, handle)) => {
                self.total -= 1;
                Admission::TakeInPlaceOf(handle)
            }
            None => Admission::Refuse,
        }
    }

    /// Files a new connection from `ip`, with a handle to close it; its id.
    pub(crate) fn enter(&mut self, ip: IpAddr, now: Instant, handle: H) -> u64 {
        self.next_id += 1;
        self.by_peer
            .entry(ip)
            .or_default()
            .push_back((self.next_id, now, handle));
        self.total += 1;
        self.next_id
    }

    /// Takes connection `id` out (proved, ended, or already given up: then nothing).
    pub(crate) fn leave(&mut self, ip: IpAddr, id: u64) {
        let Some(q) = self.by_peer.get_mut(&ip) else {
            return;
        };
        if let Some(at) = q.iter().position(|(i, _, _)| *i == id) {
            q.remove(at);
            self.total -= 1;
        }
        if q.is_empty() {
            self.by_peer.remove(&ip);
        }
    }
}

/// One connection's place among the [`Unproven`] until it proves itself or ends.
struct UnprovenSlot {
    shared: Arc<Shared>,
    ip: IpAddr,
    id: u64,
}

impl UnprovenSlot {
    /// It sent something valid: it holds a slot like any other from now on.
    fn prove(&self) {
        self.shared
            .unproven
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .leave(self.ip, self.id);
    }
}

impl Drop for UnprovenSlot {
    fn drop(&mut self) {
        self.prove();
    }
}

enum Job {
    /// A batch, its rows' estimated memory (see `row_heap_bytes`), and where to answer.
    Batch(Batch, u64, Sender<Result<Outcome, String>>),
    Stop,
}

/// What connections share across reloads: counters, the writer's queue, the per-peer
/// counts, the decode slots and the in-flight budget.
struct Shared {
    stats: Arc<Stats>,
    jobs: Sender<Job>,
    peers: Arc<Peers>,
    unproven: Mutex<Unproven>,
    decoders: Gate,
    decoder: DecodeThread,
    inflight: Arc<Gate>,
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    config: Config,
    listener: Arc<TcpListener>,
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
}

struct Ctx {
    config: Config,
    limits: Limits,
    shared: Arc<Shared>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl Ctx {
    fn stats(&self) -> &Stats {
        &self.shared.stats
    }
}

/// Everything a configuration needs before it can take over: read and bound, not started.
struct Prepared {
    listener: Arc<TcpListener>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

fn prepare(
    config: &Config,
    running: Option<(&Config, &Arc<TcpListener>)>,
) -> Result<Prepared, String> {
    config.check()?;
    let tls = match &config.tls {
        Some(t) => Some(crate::tls::server_config(t)?),
        None => None,
    };
    let listener = match running {
        Some((old, l)) if old.listen == config.listen => l.clone(),
        _ => Arc::new(
            TcpListener::bind(&config.listen)
                .map_err(|e| format!("listen {}: {e}", config.listen))?,
        ),
    };
    Ok(Prepared { listener, tls })
}

fn limits(config: &Config) -> Limits {
    Limits {
        max_frame_bytes: config.max_frame_bytes,
        max_depth: Limits::default().max_depth,
        max_inflated_bytes: config.max_inflated_bytes,
        max_entries: config.max_entries,
    }
}

impl Server {
    /// Opens the database, binds, and starts the threads. Retention's first pass is the
    /// writer's, in steps between transactions from the start: run to its end before
    /// listening, a pass after a long stop or a lowered cap (millions of events to delete)
    /// kept every sender waiting for it.
    pub fn start(config: Config) -> Result<Server, String> {
        let stats = Arc::new(Stats::default());
        let prepared = prepare(&config, None)?;
        let mut store = Store::open(&config.db)?;
        // This is the one writer: rows still pending are of batches it was storing in parts
        // when it stopped (a crash, a kill), never acked; their senders resend them.
        match store.discard_unfinished() {
            Ok(0) => {}
            Ok(n) => log(format!(
                "deleted {n} events of batches left unfinished between their parts when the \
                 collector stopped (never acked: their senders resend them)"
            )),
            Err(e) => return Err(format!("deleting unfinished batches: {e}")),
        }
        let (jobs, rx) = bounded(QUEUE);
        let checkpointing = Arc::new(Mutex::new(()));
        let checkpoints = start_checkpointer(
            store.leave_checkpoints_to(&config.db)?,
            Arc::clone(&checkpointing),
        )?;
        let wal = store.sync_commits_apart(&config.db)?;
        store.limit_wal(config.max_wal_bytes)?;
        let wal_size = wal.try_clone().map_err(|e| format!("the WAL: {e}"))?;
        let (syncs, syncer) = start_syncer(move || wal.sync(), stats.clone())?;
        let writer = std::thread::Builder::new()
            .name("writer".into())
            .spawn({
                let stats = stats.clone();
                let retention = config.retention;
                let max_wal_bytes = config.max_wal_bytes;
                move || {
                    let mut wal = Wal {
                        size: wal_size,
                        limit: max_wal_bytes,
                        next_try: max_wal_bytes,
                        checkpoints,
                        checkpointing,
                    };
                    writer(
                        store,
                        &rx,
                        &stats,
                        &retention,
                        RETENTION_EVERY,
                        &mut wal,
                        &syncs,
                    );
                    // The syncer answers what is left, then ends.
                    drop(syncs);
                    let _ = syncer.join();
                }
            })
            .map_err(|e| e.to_string())?;
        let inflight = Arc::new(Gate::new(config.max_inflight_bytes as u64));
        let shared = Arc::new(Shared {
            stats: stats.clone(),
            jobs,
            peers: Arc::default(),
            unproven: Mutex::new(Unproven::default()),
            decoders: Gate::new(DECODERS),
            decoder: DecodeThread::start(inflight.clone())?,
            inflight,
        });
        let mut server = Server {
            addr: prepared.listener.local_addr().map_err(|e| e.to_string())?,
            stats,
            config: config.clone(),
            listener: prepared.listener.clone(),
            stop: Arc::new(AtomicBool::new(false)),
            shared,
            acceptor: None,
            writer: Some(writer),
        };
        server.run_acceptor(config, prepared)?;
        Ok(server)
    }

    fn run_acceptor(&mut self, config: Config, prepared: Prepared) -> Result<(), String> {
        let stop = Arc::new(AtomicBool::new(false));
        let ctx = Arc::new(Ctx {
            limits: limits(&config),
            config: config.clone(),
            shared: self.shared.clone(),
            tls: prepared.tls,
        });
        let listener = prepared.listener.clone();
        let acceptor = std::thread::Builder::new()
            .name("acceptor".into())
            .spawn({
                let stop = stop.clone();
                move || accept(&listener, &ctx, &stop)
            })
            .map_err(|e| e.to_string())?;
        self.addr = prepared.listener.local_addr().map_err(|e| e.to_string())?;
        self.listener = prepared.listener;
        self.config = config;
        self.stop = stop;
        self.acceptor = Some(acceptor);
        Ok(())
    }

    /// Takes a new configuration: TLS files read and the listener bound (or the running
    /// socket kept, when the address is the same) first; any error leaves the running
    /// configuration in place. Connections already open keep the rules they started with.
    /// The database path cannot change.
    pub fn reload(&mut self, next: Config) -> Result<(), String> {
        if next.db != self.config.db {
            return Err("the database path cannot change on reload: restart".into());
        }
        let prepared = prepare(&next, Some((&self.config, &self.listener)))?;
        self.stop_acceptor();
        self.run_acceptor(next, prepared)
    }

    fn stop_acceptor(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }

    /// Stops accepting, stores every batch already queued, checkpoints and closes the
    /// database. Connections still open are dropped without acks for what they had not
    /// handed over (their clients resend).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop_acceptor();
        let _ = self.shared.jobs.send(Job::Stop);
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
        let stats = ctx.stats();
        let admission = ctx
            .shared
            .unproven
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit(
                peer.ip(),
                stats.connections_active.load(Ordering::SeqCst) as usize,
                ctx.config.max_connections,
                Instant::now(),
                UNPROVEN_GRACE.min(ctx.config.first_message_timeout),
            );
        if let Admission::TakeInPlaceOf(victim) = &admission {
            // Its thread sees the connection end and gives its slot back.
            let _ = victim.shutdown(std::net::Shutdown::Both);
            let n = stats.connections_evicted.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                log(format!(
                    "{peer}: taken in place of an unproven connection from {} (nothing valid \
                     sent yet, and that address holds the most such); {n} so far",
                    victim
                        .peer_addr()
                        .map_or_else(|_| "?".into(), |a| a.ip().to_string())
                ));
            }
        }
        let active = stats.connections_active.fetch_add(1, Ordering::SeqCst);
        // One given up for it leaves as it is admitted: over the cap by it, for a moment.
        let cap = match admission {
            Admission::Take => ctx.config.max_connections,
            Admission::TakeInPlaceOf(_) => ctx.config.max_connections + 1,
            Admission::Refuse => 0,
        };
        if active as usize >= cap {
            stats.connections_active.fetch_sub(1, Ordering::SeqCst);
            let n = stats.connections_refused.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                log(format!(
                    "{peer}: refused: {} connections open (max_connections), or half of them \
                     unproven, none from an address holding more; {n} refused so far",
                    ctx.config.max_connections
                ));
            }
            drop(stream);
            continue;
        }
        let Some(slot) = PeerSlot::enter(
            &ctx.shared.peers,
            peer.ip(),
            ctx.config.max_connections_per_peer,
        ) else {
            stats.connections_active.fetch_sub(1, Ordering::SeqCst);
            let n = stats
                .connections_refused_peer
                .fetch_add(1, Ordering::Relaxed)
                + 1;
            if n.is_power_of_two() {
                log(format!(
                    "{peer}: refused: {} connections open from {} (max_connections_per_peer); \
                     {n} refused so far",
                    ctx.config.max_connections_per_peer,
                    peer.ip()
                ));
            }
            drop(stream);
            continue;
        };
        stats.connections_total.fetch_add(1, Ordering::Relaxed);
        let Ok(handle) = stream.try_clone() else {
            stats.connections_active.fetch_sub(1, Ordering::SeqCst);
            continue;
        };
        let unproven = UnprovenSlot {
            shared: ctx.shared.clone(),
            ip: peer.ip(),
            id: ctx
                .shared
                .unproven
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .enter(peer.ip(), Instant::now(), handle),
        };
        let ctx2 = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("conn {peer}"))
            .stack_size(256 << 10)
            .spawn(move || {
                let _slot = slot;
                if let Err(e) = connection(stream, peer, &ctx2, &unproven) {
                    log(format!("{peer}: {e}"));
                }
                ctx2.stats()
                    .connections_active
                    .fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            stats.connections_active.fetch_sub(1, Ordering::SeqCst);
            log(format!("{peer}: cannot start a thread: {e}"));
        }
    }
}

/// Why a connection ended, when it was not the peer closing it.
type ConnResult = Result<(), String>;

fn connection(tcp: TcpStream, peer: SocketAddr, ctx: &Ctx, unproven: &UnprovenSlot) -> ConnResult {
    let _ = tcp.set_nodelay(true);
    tcp.set_write_timeout(Some(ctx.config.read_timeout))
        .map_err(|e| e.to_string())?;
    let control = tcp.try_clone().map_err(|e| e.to_string())?;
    match &ctx.tls {
        None => {
            let mut s = tcp;
            session(&mut s, &control, peer, None, ctx, unproven)
        }
        Some(cfg) => {
            let conn = rustls::ServerConnection::new(cfg.clone()).map_err(|e| e.to_string())?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            // Complete the TLS handshake within first_message_timeout (a read's timeout:
            // one trickling it is the first given up for a newcomer; see `Unproven`).
            control
                .set_read_timeout(Some(ctx.config.first_message_timeout))
                .map_err(|e| e.to_string())?;
            while s.conn.is_handshaking() {
                if let Err(e) = s.conn.complete_io(&mut s.sock) {
                    ctx.stats().tls_failures.fetch_add(1, Ordering::Relaxed);
                    return Err(format!("TLS handshake: {e}"));
                }
            }
            // rustls verified the chain against tls.client_ca; the names decide the hosts.
            let cert = match (s.conn.peer_certificates(), &ctx.config.tls) {
                (Some([leaf, ..]), Some(t)) => Some(Identity::from_certificate(
                    &crate::tls::certificate_names(leaf),
                    t,
                )),
                _ => None,
            };
            let r = session(&mut s, &control, peer, cert, ctx, unproven);
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

/// What a heavy message holds while it is decoded: a decode slot, and room in the
/// in-flight budget for the most its decoding can make. Both `None` for a light message.
#[derive(Default)]
struct Decoding<'a> {
    slot: Option<Permit<'a>>,
    memory: Option<Permit<'a>>,
}

/// The thread heavy messages are decoded on, and their rows made: all their memory is
/// allocated by one thread, so the allocator reuses what the last one freed. Decoded on
/// each connection's own thread, every thread's arena kept what it had once held: 48 heavy
/// gzip messages took a release build to a 357 MB peak with at most 128 MiB of
/// them in flight; on this one thread, 167 MB (the allocator keeps about as much for the
/// next burst). At most [`DECODERS`] connections use it at once.
///
/// What the allocator keeps is given back once a burst is over: when the in-flight budget
/// is empty again (every heavy message decoded, stored and acked), the thread asks the
/// allocator to return its free pages ([`return_freed_memory`]).
struct DecodeThread {
    jobs: Sender<Box<dyn FnOnce() + Send>>,
}

/// How often the decoder thread looks, after a heavy message, whether the in-flight budget
/// is empty so that freed memory can go back to the system.
const TRIM_POLL: Duration = Duration::from_millis(200);

impl DecodeThread {
    fn start(inflight: Arc<Gate>) -> Result<DecodeThread, String> {
        let (jobs, rx) = bounded::<Box<dyn FnOnce() + Send>>(DECODERS as usize);
        std::thread::Builder::new()
            .name("decoder".into())
            .spawn(move || {
                let mut since_trim = false;
                loop {
                    let job = if since_trim {
                        match rx.recv_timeout(TRIM_POLL) {
                            Ok(job) => job,
                            Err(RecvTimeoutError::Timeout) => {
                                // Messages whose rows wait for the writer still hold the
                                // budget: a burst is over only when nothing does.
                                if inflight.used() == 0 {
                                    return_freed_memory();
                                    since_trim = false;
                                }
                                continue;
                            }
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    } else {
                        match rx.recv() {
                            Ok(job) => job,
                            Err(_) => return,
                        }
                    };
                    job();
                    since_trim = true;
                }
            })
            .map_err(|e| format!("cannot start the decoder thread: {e}"))?;
        Ok(DecodeThread { jobs })
    }

    /// `work` on the decoder thread, waited for. `None`: the thread is gone (stopping).
    fn run<R: Send + 'static>(&self, work: impl FnOnce() -> R + Send + 'static) -> Option<R> {
        let (tx, rx) = bounded(1);
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(work());
            }))
            .ok()?;
        rx.recv().ok()
    }
}

/// Gives the allocator's free memory back to the system. glibc keeps what a thread freed in
/// that thread's arena for its next allocations and returns only the top of a heap: after a
/// burst of heavy messages (48 gzip messages of 29 MB each) about the whole in-flight budget
/// stayed resident. `malloc_trim` returns the free pages of every arena.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn return_freed_memory() {
    // SAFETY: malloc_trim(3) takes a size and touches only the allocator's own free lists
    // (under its locks); it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators (FreeBSD's jemalloc, musl's) return freed pages themselves.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_freed_memory() {}

/// The reading side of one connection.
struct Reader<'a, S> {
    s: &'a mut S,
    control: &'a TcpStream,
    dec: FrameDecoder,
    buf: Vec<u8>,
    ctx: &'a Ctx,
    /// When the last message other than a keep-alive completed (or the connection opened).
    last_message: Instant,
    /// Messages other than keep-alives completed so far.
    messages: u64,
    /// When the connection opened: it must send something valid within
    /// `first_message_timeout` of it.
    opened: Instant,
    unproven: &'a UnprovenSlot,
}

impl<'a, S: Read + Write> Reader<'a, S> {
    /// Reads until a complete client message and decodes it. A heavy one is decoded holding
    /// a decode slot and, from the in-flight budget, room for the most its decoding can
    /// make ([`Decoding`], given back or resized by the caller once it has made what it
    /// needs of the message). `Ok(None)`: the peer closed the connection between messages,
    /// or stayed idle.
    fn next(&mut self) -> Result<Option<(Next, Decoding<'a>)>, String> {
        let ctx = self.ctx;
        let mut first_byte: Option<Instant> = None;
        let mut held = Held {
            stats: ctx.stats(),
            bytes: 0,
        };
        loop {
            let max = ctx.config.max_buffered_bytes as u64;
            if !held.set(self.dec.buffered() as u64, max) {
                ctx.stats().over_budget.fetch_add(1, Ordering::Relaxed);
                return Err(format!(
                    "closing: unfinished messages of all connections exceed max_buffered_bytes \
                     ({max})"
                ));
            }
            let frame = self.dec.next_frame().map_err(|e| {
                ctx.stats().protocol_errors.fetch_add(1, Ordering::Relaxed);
                format!("protocol error, closing: {e}")
            })?;
            if let Some(frame) = frame {
                if frame == [0xc0] {
                    return Ok(Some((
                        Next::Decoded(ClientMessage::KeepAlive),
                        Decoding::default(),
                    )));
                }
                // A whole message (one that does not decode closes the connection at once):
                // proof enough where clients need not authenticate.
                if !ctx.config.requires_auth() {
                    self.unproven.prove();
                }
                // gzip can make decoding cost far more than the bytes received (which
                // max_buffered_bytes bounds already), and a large frame costs its size:
                // those take a decode slot, so heavy messages are decoded at most DECODERS
                // at a time and leave the CPU to the writer and to light messages, which
                // never wait for a slot.
                let compressed = decode::is_compressed(frame, &ctx.limits);
                let decoding = if frame.len() >= HEAVY_FRAME_BYTES || compressed {
                    let deadline = Instant::now() + ctx.config.read_timeout;
                    let Some(slot) = ctx.shared.decoders.acquire(1, deadline) else {
                        ctx.stats().timeouts.fetch_add(1, Ordering::Relaxed);
                        return Err("no decoder free within read_timeout, closing".into());
                    };
                    // What decoding it can make at most, held from the in-flight budget
                    // before a byte is inflated: its entries (at most the inflation limit,
                    // or the frame's own bytes), then its rows, made as the entries go.
                    let most = if compressed {
                        ctx.config.max_inflated_bytes
                    } else {
                        frame.len()
                    } as u64
                        + ENTRY_OVERHEAD * ctx.config.max_entries as u64;
                    let Some(memory) = ctx.shared.inflight.acquire(most, deadline) else {
                        ctx.stats().over_inflight.fetch_add(1, Ordering::Relaxed);
                        return Err(format!(
                            "closing: no room within read_timeout to decode a message of {} \
                             bytes{}: messages being decoded or waiting to be stored hold \
                             max_inflight_bytes ({})",
                            frame.len(),
                            if compressed { " (gzip)" } else { "" },
                            ctx.config.max_inflight_bytes
                        ));
                    };
                    Decoding {
                        slot: Some(slot),
                        memory: Some(memory),
                    }
                } else {
                    Decoding::default()
                };
                let next = if decoding.slot.is_some() {
                    let (frame, limits) = (frame.to_vec(), self.ctx.limits);
                    let decoded = ctx
                        .shared
                        .decoder
                        .run(move || decode::client_message(&frame, &limits))
                        .ok_or("the collector is stopping")?;
                    Next::Decoded(decoded.map_err(|e| protocol_error(ctx, e))?)
                } else {
                    // Decoded by the caller, its records borrowed from this copy (one per
                    // message, not one per entry).
                    Next::Light(frame.to_vec())
                };
                self.last_message = Instant::now();
                self.messages += 1;
                return Ok(Some((next, decoding)));
            }
            if self.dec.buffered() > 0 && first_byte.is_none() {
                first_byte = Some(Instant::now());
            }
            // A message under way must complete within read_timeout of its first byte; a new
            // connection must complete its first message within first_message_timeout of
            // opening, whatever trickles in; then idle_timeout between messages. Keep-alives
            // reset none of these.
            let first_due = self.opened + ctx.config.first_message_timeout;
            let deadline = match first_byte {
                Some(t) if self.messages == 0 => (t + ctx.config.read_timeout).min(first_due),
                Some(t) => t + ctx.config.read_timeout,
                None if self.messages == 0 => first_due,
                None => self.last_message + ctx.config.idle_timeout,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                if first_byte.is_none() && self.messages > 0 {
                    // Idle peers are normal (an agent between batches): close quietly.
                    return Ok(None);
                }
                ctx.stats().timeouts.fetch_add(1, Ordering::Relaxed);
                return Err(if self.messages == 0 {
                    format!(
                        "closing: nothing valid within first_message_timeout ({:?}) of \
                         connecting",
                        ctx.config.first_message_timeout
                    )
                } else {
                    format!(
                        "read timeout: no complete message within {:?}",
                        ctx.config.read_timeout
                    )
                });
            }
            self.control
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(|e| e.to_string())?;
            // A TLS peer that closes without close_notify (most clients, on exit or an idle
            // timeout of their own), or resets, has closed the connection as much as one
            // that sent it: between messages no error to log for every connection, in the
            // middle of one the same as any close there.
            let read = match self.s.read(&mut self.buf) {
                Err(e) if peer_closed(&e) => Ok(0),
                other => other,
            };
            match read {
                Ok(0) => {
                    return if self.dec.buffered() > 0 {
                        ctx.stats().protocol_errors.fetch_add(1, Ordering::Relaxed);
                        Err(format!(
                            "closed in the middle of a message ({} bytes received)",
                            self.dec.buffered()
                        ))
                    } else {
                        Ok(None)
                    };
                }
                Ok(n) => self.dec.feed(&self.buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }
}

/// A complete message from [`Reader::next`].
enum Next {
    /// A heavy message, decoded where heavy ones are (or a keep-alive).
    Decoded(ClientMessage),
    /// A light message's bytes, for the caller to decode ([`decode_light`]).
    Light(Vec<u8>),
}

impl Next {
    /// The message owned (the handshake's).
    fn into_message(self, ctx: &Ctx) -> Result<ClientMessage, String> {
        match self {
            Next::Decoded(m) => Ok(m),
            Next::Light(bytes) => decode_light(ctx, &bytes).map(ClientMessageRef::into_owned),
        }
    }
}

/// A light message, its records borrowed from `bytes`.
fn decode_light<'b>(ctx: &Ctx, bytes: &'b [u8]) -> Result<ClientMessageRef<'b>, String> {
    decode::client_message_ref(bytes, &ctx.limits).map_err(|e| protocol_error(ctx, e))
}

/// Counts a message that does not decode; what the connection closes with.
fn protocol_error(ctx: &Ctx, e: zpulse_forward::FrameError) -> String {
    ctx.stats().protocol_errors.fetch_add(1, Ordering::Relaxed);
    format!("protocol error, closing: {e}")
}

/// An entry of a batch, its record owned (a heavy message's) or borrowed (a light one's).
trait Received {
    fn time(&self) -> zpulse_proto::event::EventTime;
    fn record(&self) -> &[u8];
}

impl Received for zpulse_forward::Entry {
    fn time(&self) -> zpulse_proto::event::EventTime {
        self.time
    }
    fn record(&self) -> &[u8] {
        &self.record
    }
}

impl Received for zpulse_forward::EntryRef<'_> {
    fn time(&self) -> zpulse_proto::event::EventTime {
        self.time
    }
    fn record(&self) -> &[u8] {
        &self.record
    }
}

/// Whether a read error only says the peer closed the connection: rustls reports a TCP
/// close without TLS close_notify as `UnexpectedEof`, and a reset is the same news.
fn peer_closed(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
    )
}

/// The rows of a batch this identity may write, and what was refused.
struct Admitted {
    rows: Vec<Row>,
    /// Metric records (`zpulse.series`), as the figures the collector keeps.
    readings: Vec<Reading>,
    /// Estimated memory of `rows`.
    bytes: u64,
    foreign: u64,
    first_foreign_error: Option<String>,
    refused_host: Vec<String>,
    oversized: u64,
}

/// What a row holds in memory: its strings as allocated, each allocation's header, and the
/// rest of the `Row`.
fn row_heap_bytes(row: &Row) -> u64 {
    let strings = [
        &row.tag,
        &row.kind,
        &row.host,
        &row.check,
        &row.subject,
        &row.summary,
        &row.data,
    ];
    let optional = [row.state.as_ref(), row.advice.as_ref()];
    let text: usize = strings.iter().map(|s| s.capacity()).sum::<usize>()
        + optional
            .iter()
            .flatten()
            .map(|s| s.capacity())
            .sum::<usize>()
        + row
            .points
            .iter()
            .map(|(name, _)| name.capacity() + 32)
            .sum::<usize>();
    ROW_OVERHEAD + text as u64 + 16 * (strings.len() + optional.len()) as u64
}

/// Turns a batch's entries into rows: records over `max_record_bytes` and records for hosts
/// `identity` may not write are refused. The host a record names is used only when the
/// identity allows it; records that name none (foreign ones, under authentication, always)
/// get the authenticated name, else the peer's address. Each entry is dropped once its row
/// is made, so a heavy batch holds about the larger of its entries and its rows, not both.
fn admit<E: Received>(
    tag: &str,
    entries: Vec<E>,
    identity: &Identity,
    peer_host: &str,
    max_record_bytes: usize,
) -> Admitted {
    let fallback = identity.name.as_deref().unwrap_or(peer_host);
    let mut a = Admitted {
        rows: Vec::with_capacity(entries.len()),
        readings: Vec::new(),
        bytes: 0,
        foreign: 0,
        first_foreign_error: None,
        refused_host: Vec::new(),
        oversized: 0,
    };
    for e in entries {
        // A metric record is larger than an event (thousands of series) and has its own
        // bound; one that does not decode is kept as a foreign record, like any other.
        let mut series_error = None;
        let (time, record) = (e.time(), e.record());
        let decoded = (tag == series::TAG && record.len() <= series::MAX_RECORD_BYTES)
            .then(|| SeriesRecord::decode(record))
            .and_then(|d| d.map_err(|why| series_error = Some(why)).ok());
        if let Some(record) = decoded {
            if !identity.may_write(&record.host) {
                if a.refused_host.len() < 4 && !a.refused_host.contains(&record.host) {
                    a.refused_host.push(record.host.chars().take(64).collect());
                }
                continue;
            }
            let ts = i64::from(time.seconds) * 1_000_000_000 + i64::from(time.nanos);
            let r = Reading::from_record(&record, &record.host, ts);
            a.bytes += ROW_OVERHEAD + 64 * (r.gauges.len() + r.counters.len()) as u64;
            a.readings.push(r);
            continue;
        }
        if record.len() > max_record_bytes {
            a.oversized += 1;
            continue;
        }
        let (mut row, valid) = Row::from_record(tag, time, record, fallback);
        if let Err(why) = valid {
            a.foreign += 1;
            a.first_foreign_error
                .get_or_insert(series_error.unwrap_or(why));
            if identity.name.is_some() {
                row.host = fallback.to_owned();
            }
        }
        if !identity.may_write(&row.host) {
            if a.refused_host.len() < 4 && !a.refused_host.contains(&row.host) {
                a.refused_host.push(row.host.chars().take(64).collect());
            }
            continue;
        }
        // Held until the ack: at its length (serde_json grows it by doubling, so it would
        // take up to twice that), and counted as allocated.
        row.data.shrink_to_fit();
        a.bytes += row_heap_bytes(&row);
        a.rows.push(row);
    }
    a
}

fn session<S: Read + Write>(
    s: &mut S,
    control: &TcpStream,
    peer: SocketAddr,
    cert: Option<Identity>,
    ctx: &Ctx,
    unproven: &UnprovenSlot,
) -> ConnResult {
    let mut r = Reader {
        s,
        control,
        dec: FrameDecoder::new(ctx.limits),
        buf: vec![0u8; 64 << 10],
        ctx,
        last_message: Instant::now(),
        messages: 0,
        opened: Instant::now(),
        unproven,
    };
    let peer_host = peer.ip().to_string();
    let mut identity = cert.unwrap_or_default();
    if ctx.config.requires_auth() {
        match handshake(&mut r, peer)? {
            Some(key_identity) => {
                unproven.prove();
                identity.name = identity.name.or(key_identity.name);
                identity.restrictions.extend(key_identity.restrictions);
            }
            None => return Ok(()),
        }
    }
    let mut rate = EntryRate::new(
        ctx.config.max_entries_per_second,
        ctx.config.max_entries,
        Instant::now(),
    );
    let stats = ctx.stats();
    loop {
        let (next, decoding) = match r.next()? {
            Some(m) => m,
            None => return Ok(()),
        };
        // A light message's bytes, which its batch borrows.
        let light: Vec<u8>;
        let batch = match next {
            Next::Decoded(ClientMessage::Events(b)) => Incoming::Owned(b),
            Next::Decoded(ClientMessage::KeepAlive) => continue,
            Next::Decoded(ClientMessage::Ping(_)) => return ping_outside_handshake(stats),
            Next::Light(bytes) => {
                light = bytes;
                match decode_light(ctx, &light)? {
                    ClientMessageRef::Events(b) => Incoming::Borrowed(b),
                    ClientMessageRef::KeepAlive => continue,
                    ClientMessageRef::Ping(_) => return ping_outside_handshake(stats),
                }
            }
        };
        let tag_len = match &batch {
            Incoming::Owned(b) => b.tag.len(),
            Incoming::Borrowed(b) => b.tag.len(),
        };
        if tag_len > ctx.config.max_tag_bytes {
            stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
            return Err(format!(
                "a tag of {tag_len} bytes (max_tag_bytes {}), closing",
                ctx.config.max_tag_bytes
            ));
        }
        let max_record_bytes = ctx.config.max_record_bytes;
        let (tag, chunk, entries, a) = match batch {
            Incoming::Owned(batch) => {
                let entries = batch.entries.len();
                let (chunk, tag) = (batch.options.chunk, batch.tag);
                let a = if decoding.slot.is_some() {
                    // A heavy batch's rows are made where its entries were (see
                    // `DecodeThread`).
                    let (tag, identity, peer_host) =
                        (tag.clone(), identity.clone(), peer_host.clone());
                    let entries = batch.entries;
                    ctx.shared
                        .decoder
                        .run(move || admit(&tag, entries, &identity, &peer_host, max_record_bytes))
                        .ok_or("the collector is stopping")?
                } else {
                    admit(&tag, batch.entries, &identity, &peer_host, max_record_bytes)
                };
                (tag, chunk, entries, a)
            }
            Incoming::Borrowed(batch) => {
                let entries = batch.entries.len();
                let a = admit(
                    &batch.tag,
                    batch.entries,
                    &identity,
                    &peer_host,
                    max_record_bytes,
                );
                (batch.tag, batch.options.chunk, entries, a)
            }
        };
        if a.foreign > 0 {
            let before = stats
                .foreign_records
                .fetch_add(a.foreign, Ordering::Relaxed);
            if tag.starts_with("zpulse.") && (before + a.foreign).is_power_of_two() {
                log(format!(
                    "{peer}: {} record(s) under {tag} are not valid zpulse records, stored as \
                     foreign: {}",
                    a.foreign,
                    a.first_foreign_error.clone().unwrap_or_default()
                ));
            }
        }
        let refused = (entries - a.rows.len() - a.readings.len()) as u64 - a.oversized;
        if refused > 0 {
            let before = stats
                .records_refused_host
                .fetch_add(refused, Ordering::Relaxed);
            if (before + refused).is_power_of_two() || before == 0 {
                log(format!(
                    "{peer} ({}): {refused} record(s) for host(s) it may not write refused: {}",
                    identity.name.as_deref().unwrap_or("unauthenticated"),
                    a.refused_host.join(", ")
                ));
            }
        }
        if a.oversized > 0 {
            let before = stats
                .records_oversized
                .fetch_add(a.oversized, Ordering::Relaxed);
            if (before + a.oversized).is_power_of_two() || before == 0 {
                log(format!(
                    "{peer}: {} record(s) over max_record_bytes ({}) refused",
                    a.oversized, ctx.config.max_record_bytes
                ));
            }
        }
        // The rows, held from the in-flight budget until the ack: a heavy message's room for
        // decoding becomes its rows' (fewer bytes given back at once, more waited for); a
        // light message's few are taken at once (at most its frame's worth, on each of
        // max_connections), so that it never queues behind heavy ones.
        let Decoding { slot, memory } = decoding;
        let room = match memory {
            Some(mut room) => {
                if !room.resize(a.bytes, Instant::now() + ctx.config.read_timeout) {
                    stats.over_inflight.fetch_add(1, Ordering::Relaxed);
                    return Err(format!(
                        "closing: decoded rows waiting to be stored stayed over \
                         max_inflight_bytes ({}) for read_timeout",
                        ctx.config.max_inflight_bytes
                    ));
                }
                room
            }
            None => ctx.shared.inflight.take_now(a.bytes),
        };
        drop(slot);
        let n = a.rows.len() + a.readings.len();
        let bytes = a.bytes;
        let (tx, rx) = bounded(1);
        let job = Batch {
            chunk: chunk.clone(),
            sender: identity.name.clone(),
            peer: peer.to_string(),
            rows: a.rows,
            readings: a.readings,
        };
        ctx.shared
            .jobs
            .send(Job::Batch(job, bytes, tx))
            .map_err(|_| "the collector is stopping".to_string())?;
        let outcome = match rx
            .recv()
            .map_err(|_| "the collector is stopping".to_string())?
        {
            Ok(outcome) => outcome,
            // Not stored, so no ack: the connection ends and its agent resends. The writer
            // said why, at most once a STORE_ERRORS_LOGGED_EVERY for all connections (a full
            // disk refuses every batch: a line each would flood the log).
            Err(_) => return Ok(()),
        };
        drop(room);
        stats.batches.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Outcome::Stored(_) => {
                stats.events.fetch_add(n as u64, Ordering::Relaxed);
            }
            Outcome::Duplicate => {
                stats.duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(chunk) = &chunk {
            r.s.write_all(&encode::ack(chunk))
                .and_then(|_| r.s.flush())
                .map_err(|e| format!("sending the ack: {e}"))?;
        }
        let wait = rate.take(entries, Instant::now());
        if !wait.is_zero() {
            stats.throttled.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(wait);
        }
    }
}

/// A batch as decoded: a heavy message's (owned), a light one's (borrowing its bytes).
enum Incoming<'b> {
    Owned(EventBatch),
    Borrowed(EventBatchRef<'b>),
}

fn ping_outside_handshake(stats: &Stats) -> ConnResult {
    stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
    Err("PING outside a handshake, closing".into())
}

/// HELO → PING → PONG. `Ok(None)`: refused (already logged and counted); else who the key
/// says the client is and which hosts it may write.
fn handshake<S: Read + Write>(
    r: &mut Reader<'_, S>,
    peer: SocketAddr,
) -> Result<Option<Identity>, String> {
    let ctx = r.ctx;
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
    r.s.write_all(&helo.encode())
        .and_then(|_| r.s.flush())
        .map_err(|e| format!("sending HELO: {e}"))?;
    let fail = |why: String| {
        let n = ctx.stats().auth_failures.fetch_add(1, Ordering::Relaxed) + 1;
        log(format!(
            "{peer}: authentication failed: {why} ({n} failure(s) so far)"
        ));
    };
    let ping = loop {
        let next = r
            .next()
            .and_then(|n| n.map(|(m, _)| m.into_message(ctx)).transpose());
        match next {
            Ok(Some(ClientMessage::Ping(p))) => break p,
            Ok(Some(ClientMessage::KeepAlive)) => continue,
            Ok(Some(_)) => {
                fail("sent events before the handshake (the server requires a shared key)".into());
                return Ok(None);
            }
            Ok(None) => {
                fail("closed the connection without answering HELO".into());
                return Ok(None);
            }
            Err(e) => {
                fail(format!("no valid PING: {e}"));
                return Ok(None);
            }
        }
    };
    let (key, identity) = match ctx.config.clients.get(&ping.hostname) {
        Some(c) => (
            Some(&c.key),
            Identity {
                name: Some(ping.hostname.clone()),
                restrictions: vec![c.hosts.clone()],
            },
        ),
        None => (
            ctx.config.shared_key.as_ref(),
            Identity {
                name: Some(ping.hostname.clone()),
                restrictions: Vec::new(),
            },
        ),
    };
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
    let _ = r.s.write_all(&pong.encode()).and_then(|_| r.s.flush());
    if !pong.ok {
        fail(format!(
            "client {:?}: {}",
            ping.hostname.chars().take(64).collect::<String>(),
            pong.reason
        ));
        return Ok(None);
    }
    Ok(Some(identity))
}

/// A batch waiting for the writer, its rows' size, how many transactions went without it,
/// and what of it is stored when it is stored in parts.
pub struct Waiting<R> {
    pub batch: Batch,
    /// Estimated bytes of its rows (what storing it writes, about).
    pub bytes: u64,
    pub reply: R,
    pub passed_over: u32,
    /// Rows stored by its earlier parts (committed, pending until its last part commits).
    pub stored: usize,
    /// The ids of those rows ([`crate::store::Part::Pending`]).
    pub pending: Vec<(i64, i64)>,
}

impl<R> Waiting<R> {
    pub fn new(batch: Batch, bytes: u64, reply: R) -> Waiting<R> {
        Waiting {
            batch,
            bytes,
            reply,
            passed_over: 0,
            stored: 0,
            pending: Vec::new(),
        }
    }

    /// The rows its next transaction stores: all that are left for a batch within
    /// [`PART_MAX_BYTES`] and [`PART_MAX_EVENTS`], else the next part of that size (rows
    /// taken at the batch's average size). Its metric readings go with the last part.
    pub fn part(&self) -> std::ops::Range<usize> {
        let rows = self.batch.rows.len();
        let events = rows + self.batch.readings.len();
        if events <= PART_MAX_EVENTS && self.bytes <= PART_MAX_BYTES {
            return self.stored.min(rows)..rows;
        }
        let per_row = (self.bytes / events.max(1) as u64).max(1);
        let most = (PART_MAX_BYTES / per_row).clamp(1, PART_MAX_EVENTS as u64) as usize;
        let start = self.stored.min(rows);
        start..(start + most).min(rows)
    }

    /// Events the next transaction stores of it (see [`Waiting::part`]).
    fn events(&self) -> usize {
        let part = self.part();
        let last = part.end == self.batch.rows.len();
        part.len() + if last { self.batch.readings.len() } else { 0 }
    }

    /// Estimated bytes the next transaction stores of it: its share of the batch's.
    fn part_bytes(&self) -> u64 {
        let all = (self.batch.rows.len() + self.batch.readings.len()).max(1) as u64;
        let part = self.events() as u64;
        if part == all {
            self.bytes
        } else {
            self.bytes / all * part
        }
    }
}

/// The batches of the next transaction, each for its next part ([`Waiting::part`]: the
/// whole batch, but for one larger than a part): the smallest parts in bytes first (a
/// sender's heartbeat before a part of another's 30 MiB of logs, whoever sent first), up to
/// [`GROUP_MAX_EVENTS`], [`GROUP_MAX_BYTES`] and [`GROUP_MAX_BATCHES`], then **one** batch
/// passed over [`MAX_PASSED_OVER`] times or more (the oldest such), whatever its size; when
/// nothing fits, the smallest alone. So a light client's batch never waits behind a heavy
/// one for room: a heavy batch owed its turn rides along instead of going first and filling
/// the transaction. A transaction holds at most `GROUP_MAX_EVENTS` and `GROUP_MAX_BYTES`
/// plus one part (itself at most [`PART_MAX_BYTES`] and [`PART_MAX_EVENTS`]), so a light
/// batch waits for at most the transaction under way and its own. After a heavy transaction
/// (`after_heavy`: more than half of either bound), the owed batch waits one more: under a
/// stream of heavy batches a light one then waits for at most one heavy transaction, not
/// for the one under way and a heavy one riding along with it. No batch starves: once
/// passed over twice it is in the next transaction that does not follow a heavy one, but
/// those owed before it. The rest stay in `waiting`, each marked as passed over; a batch
/// with parts left goes back to `waiting` after its transaction (the writer's doing).
pub fn pick<R>(waiting: &mut Vec<Waiting<R>>, after_heavy: bool) -> Vec<Waiting<R>> {
    // Stable: among equal sizes, the order of arrival.
    waiting.sort_by_cached_key(|w| (w.part_bytes(), w.events()));
    let (mut events, mut bytes) = (0, 0);
    let mut taken = vec![false; waiting.len()];
    // The smallest, a prefix of the sorted list: `i` batches taken so far.
    for (i, w) in waiting.iter().enumerate() {
        let (n, b) = (w.events(), w.part_bytes());
        if i == GROUP_MAX_BATCHES
            || (i > 0 && (events + n > GROUP_MAX_EVENTS || bytes + b > GROUP_MAX_BYTES))
        {
            break;
        }
        events += n;
        bytes += b;
        taken[i] = true;
    }
    let owed = waiting
        .iter()
        .enumerate()
        .filter(|_| !after_heavy)
        .filter(|(i, w)| !taken[*i] && w.passed_over >= MAX_PASSED_OVER)
        .max_by_key(|(_, w)| w.passed_over)
        .map(|(i, _)| i);
    if let Some(i) = owed {
        taken[i] = true;
    }
    let mut group = Vec::new();
    let mut rest = Vec::new();
    for (w, take) in waiting.drain(..).zip(taken) {
        if take {
            group.push(w);
        } else {
            rest.push(w);
        }
    }
    for w in rest.iter_mut() {
        w.passed_over += 1;
    }
    *waiting = rest;
    group
}

/// What one commit finished: each batch with its outcome, for the syncer to answer once the
/// commit is durable (and to free: dropping a batch's rows is no work for the writer).
type Committed = Vec<(Waiting<Sender<Result<Outcome, String>>>, Outcome)>;

/// The syncer's thread: syncs the WAL (`sync`) after the commits the writer hands it, one
/// sync for all those that came while the last one ran, then answers their batches: an ack
/// means stored and on disk, as when each commit synced, while the writer goes on with the
/// next transaction. A failed sync answers them with its error, and every batch after them
/// too, until the collector restarts: the kernel may have dropped what it could not write,
/// and a later sync would not tell (their agents keep them and resend them to the restarted
/// collector, which stores what it lost). Returns the writer's side; the thread ends once
/// the writer hangs up and every batch is answered.
fn start_syncer(
    sync: impl Fn() -> std::io::Result<()> + Send + 'static,
    stats: Arc<Stats>,
) -> Result<(Sender<Committed>, JoinHandle<()>), String> {
    let (tx, rx) = bounded::<Committed>(QUEUE);
    let handle = std::thread::Builder::new()
        .name("syncer".into())
        .spawn(move || {
            let mut failed: Option<String> = None;
            let mut said = LogEvery::new(STORE_ERRORS_LOGGED_EVERY);
            while let Ok(first) = rx.recv() {
                let mut round = vec![first];
                round.extend(rx.try_iter());
                if failed.is_none()
                    && let Err(e) = sync()
                {
                    failed = Some(format!(
                        "syncing the database's WAL failed, so nothing is acked until the \
                         collector restarts: {e}"
                    ));
                }
                if let Some(e) = &failed {
                    stats.store_errors.fetch_add(1, Ordering::Relaxed);
                    if said.due(Instant::now()).is_some() {
                        log(e);
                    }
                }
                for (w, outcome) in round.into_iter().flatten() {
                    let _ = w.reply.send(match &failed {
                        None => Ok(outcome),
                        Some(e) => Err(e.clone()),
                    });
                }
            }
        })
        .map_err(|e| format!("cannot start the syncer thread: {e}"))?;
    Ok((tx, handle))
}

/// The writer's hold on the WAL's size.
struct Wal {
    size: crate::store::WalSync,
    /// `max_wal_bytes`: past it, the writer restarts the WAL ([`Store::restart_wal`]) before
    /// its next transaction. Looked at after each commit (an `fstat`), so the WAL passes it
    /// by one transaction's pages at most.
    limit: u64,
    /// The size past which the next restart is tried: `limit`, or after one that a reader
    /// kept from restarting the WAL, that size and `limit` more. A reader that keeps its
    /// transaction open (an `sqlite3` shell left in one) then costs the writer one wait a
    /// `limit` of WAL, not one each commit.
    next_try: u64,
    /// To the checkpointer's thread: a checkpoint is due.
    checkpoints: Sender<()>,
    /// Held by the checkpointer's thread while it checkpoints, and by the writer while it
    /// restarts the WAL: a restart waits for the checkpoint under way (which holds locks a
    /// restart needs, for as long as copying tens of MiB takes) instead of giving up on it
    /// as on a reader, and no checkpoint starts during one.
    checkpointing: Arc<Mutex<()>>,
}

impl Wal {
    /// Restarts the WAL once it is over its limit.
    fn bound(&mut self, store: &Store, stats: &Stats, said: &mut LogEvery) {
        let Ok(bytes) = self.size.file_bytes() else {
            return;
        };
        if bytes <= self.next_try {
            return;
        }
        stats.wal_restarts.fetch_add(1, Ordering::Relaxed);
        let restarted = {
            let _alone = self.checkpointing.lock().unwrap_or_else(|e| e.into_inner());
            store.restart_wal(WAL_RESTART_WAIT)
        };
        let problem = match restarted {
            Ok(true) => {
                self.next_try = self.limit;
                return;
            }
            Ok(false) => format!(
                "the WAL ({} MiB) could not be restarted: a reader used it for more than \
                 {} ms; trying again once the WAL has grown by its limit again",
                bytes >> 20,
                WAL_RESTART_WAIT.as_millis()
            ),
            Err(e) => format!("restarting the WAL: {e}"),
        };
        stats.wal_restarts_failed.fetch_add(1, Ordering::Relaxed);
        self.next_try = bytes.saturating_add(self.limit);
        if said.due(Instant::now()).is_some() {
            log(problem);
        }
    }
}

/// A step of a retention pass ([`Store::retain_step`]), what it deleted added to `pass`;
/// whether the pass has more to do. `no_parts_pending`: no batch is being stored in parts, so
/// rows still pending are a failed batch's that could not be deleted then, and go now.
fn retention_step(
    store: &mut Store,
    retention: &crate::store::Retention,
    no_parts_pending: bool,
    pass: &mut crate::store::Pruned,
    stats: &Stats,
) -> bool {
    if no_parts_pending {
        match store.discard_unfinished() {
            Ok(0) => {}
            Ok(n) => log(format!(
                "deleted {n} events of batches that failed between their parts (never acked)"
            )),
            Err(e) => log(format!("deleting unfinished batches: {e}")),
        }
    }
    let more = match store.retain_step(retention, now_s()) {
        Ok((p, more)) => {
            stats
                .retention_deleted
                .fetch_add(p.by_age + p.by_size, Ordering::Relaxed);
            pass.add(p);
            more
        }
        Err(e) => {
            log(format!("retention: {e}"));
            false
        }
    };
    stats
        .retention_running
        .store(u64::from(more), Ordering::Relaxed);
    if !more {
        say_pruned(std::mem::take(pass));
    }
    more
}

/// The log line of a retention pass that deleted events.
fn say_pruned(p: crate::store::Pruned) {
    if p.by_age + p.by_size + p.series > 0 {
        log(format!(
            "retention: deleted {} events by age, {} by size, {} time-series rows",
            p.by_age, p.by_size, p.series
        ));
    }
}

/// The checkpointer's thread: a checkpoint after each commit it is told of (those that
/// come while one runs are one more), until the writer hangs up. Returns the writer's side.
fn start_checkpointer(
    c: crate::store::Checkpointer,
    checkpointing: Arc<Mutex<()>>,
) -> Result<Sender<()>, String> {
    let (tx, rx) = bounded::<()>(1);
    std::thread::Builder::new()
        .name("checkpointer".into())
        .spawn(move || {
            let mut said = LogEvery::new(STORE_ERRORS_LOGGED_EVERY);
            for () in rx {
                let done = {
                    let _alone = checkpointing.lock().unwrap_or_else(|e| e.into_inner());
                    c.passive()
                };
                if let Err(e) = done
                    && said.due(Instant::now()).is_some()
                {
                    log(format!("checkpoint: {e}"));
                }
            }
        })
        .map_err(|e| format!("cannot start the checkpointer thread: {e}"))?;
    Ok(tx)
}

fn writer(
    mut store: Store,
    rx: &Receiver<Job>,
    stats: &Stats,
    retention: &crate::store::Retention,
    retention_every: Duration,
    wal: &mut Wal,
    syncs: &Sender<Committed>,
) {
    // The first pass at once: what expired while the collector was stopped goes first.
    let mut next_retention = Instant::now();
    // What the retention pass under way has deleted so far (said when it is done).
    let mut retained = crate::store::Pruned::default();
    let mut stopping = false;
    let mut waiting: Vec<Waiting<Sender<Result<Outcome, String>>>> = Vec::new();
    // Whether the last transaction was heavy (see `pick`).
    let mut after_heavy = false;
    // Bytes of rows committed since the checkpointer was last asked to run.
    let mut uncheckpointed = 0u64;
    let mut store_errors_said = LogEvery::new(STORE_ERRORS_LOGGED_EVERY);
    loop {
        // Between two transactions when due, whether or not batches wait: under a load that
        // never lets the queue empty, waiting for a quiet moment (as the writer once did)
        // never ran it, and the database outgrew `max_bytes` for as long as the load lasted.
        if Instant::now() >= next_retention {
            // Rows pending in the database that no waiting batch owns are a failed batch's.
            let parts_pending = waiting.iter().any(|w| !w.pending.is_empty());
            let more = retention_step(&mut store, retention, !parts_pending, &mut retained, stats);
            // A pass goes on, a step between two transactions, until it is done.
            next_retention = if more {
                Instant::now()
            } else {
                Instant::now() + retention_every
            };
        }
        let wait = next_retention.saturating_duration_since(Instant::now());
        let first = if !waiting.is_empty() {
            rx.try_recv().ok()
        } else if stopping {
            match rx.try_recv() {
                Ok(j) => Some(j),
                Err(_) => break,
            }
        } else {
            match rx.recv_timeout(wait) {
                Ok(j) => Some(j),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        };
        let mut next = first;
        while let Some(j) = next.take() {
            match j {
                Job::Batch(b, bytes, reply) => waiting.push(Waiting::new(b, bytes, reply)),
                Job::Stop => stopping = true,
            }
            if waiting.len() < QUEUE {
                next = rx.try_recv().ok();
            }
        }
        let group = pick(&mut waiting, after_heavy);
        if group.is_empty() {
            continue;
        }
        after_heavy = group.iter().map(Waiting::events).sum::<usize>() > GROUP_MAX_EVENTS / 2
            || group.iter().map(Waiting::part_bytes).sum::<u64>() > GROUP_MAX_BYTES / 2;
        let group_bytes: u64 = group.iter().map(Waiting::part_bytes).sum();
        let now = now_s();
        let result = (|| {
            let tx = store.transaction()?;
            let mut parts = Vec::with_capacity(group.len());
            for w in &group {
                parts.push(Store::apply_part(&tx, &w.batch, w.part(), &w.pending, now)?);
            }
            tx.commit().map_err(|e| format!("commit: {e}"))?;
            Ok::<_, String>(parts)
        })();
        match result {
            Ok(parts) => {
                let mut committed = Vec::new();
                for (mut w, part) in group.into_iter().zip(parts) {
                    match part {
                        Part::Done(o) => committed.push((w, o)),
                        Part::Pending(ids) => {
                            w.stored = w.part().end;
                            w.pending.extend(ids);
                            w.passed_over = 0;
                            waiting.push(w);
                        }
                    }
                }
                if !committed.is_empty()
                    && let Err(unsent) = syncs.send(committed)
                {
                    for (w, _) in unsent.0 {
                        let _ = w.reply.send(Err("the syncer thread stopped".into()));
                    }
                }
                uncheckpointed += group_bytes;
                if uncheckpointed >= CHECKPOINT_AFTER_BYTES {
                    // Full: one is due and not started yet, which will copy this commit too.
                    let _ = wal.checkpoints.try_send(());
                    uncheckpointed = 0;
                }
                wal.bound(&store, stats, &mut store_errors_said);
            }
            Err(e) => {
                stats.store_errors.fetch_add(1, Ordering::Relaxed);
                // The earlier parts of a batch that failed now are deleted (never acked);
                // when that fails too they stay pending, not stored, until the next try.
                let pending: Vec<(i64, i64)> = group
                    .iter()
                    .flat_map(|w| w.pending.iter().copied())
                    .collect();
                let discarded = if pending.is_empty() {
                    Ok(0)
                } else {
                    store.discard(&pending)
                };
                if let Some(unsaid) = store_errors_said.due(Instant::now()) {
                    log(format!(
                        "storing {} batch(es) failed, not acked (their agents resend): {e}{}{}",
                        group.len(),
                        match discarded {
                            Err(d) => format!(
                                "; deleting their parts stored so far failed too, retried \
                                 later: {d}"
                            ),
                            Ok(_) => String::new(),
                        },
                        if unsaid > 0 {
                            format!(
                                " ({unsaid} more failure(s) since the last such line, not \
                                 logged)"
                            )
                        } else {
                            String::new()
                        }
                    ));
                }
                for w in group {
                    let _ = w.reply.send(Err(e.clone()));
                }
            }
        }
    }
    if let Err(e) = store.checkpoint() {
        log(format!("checkpoint at shutdown: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under a load that never lets the writer's queue empty (a feeder keeps it full: each
    /// send waits for room), retention still runs when due and keeps the database near
    /// `max_bytes`; waiting for a quiet moment, it never ran and every row stayed.
    #[test]
    fn retention_runs_while_the_queue_never_empties() {
        use crate::store::{Batch, Retention, Row};
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("events.db");
        let store = Store::open(&db).unwrap();
        let checkpointing = Arc::new(Mutex::new(()));
        let checkpoints = start_checkpointer(
            store.leave_checkpoints_to(&db).unwrap(),
            Arc::clone(&checkpointing),
        )
        .unwrap();
        let wal_sync = store.sync_commits_apart(&db).unwrap();
        let mut wal = Wal {
            size: wal_sync.try_clone().unwrap(),
            limit: 64 << 20,
            next_try: 64 << 20,
            checkpoints,
            checkpointing,
        };
        let stats = Arc::new(Stats::default());
        let (syncs, syncer) = start_syncer(move || wal_sync.sync(), stats.clone()).unwrap();
        let max_bytes = 512 << 10;
        let retention = Retention {
            max_age: None,
            max_bytes: Some(max_bytes),
            dedup_window: Duration::from_secs(60),
        };
        let (jobs, rx) = bounded(QUEUE);
        const BATCHES: usize = 1_500;
        // Made before the writer starts, so that sending them outpaces storing them.
        let batches: Vec<Batch> = (0..BATCHES)
            .map(|b| Batch {
                rows: (0..20)
                    .map(|i| {
                        let e = zpulse_proto::Event::metrics("disk", "sda", "disk figures")
                            .with("pad", "y".repeat(200))
                            .with("n", (b * 20 + i) as u64);
                        Row::from_event("zpulse.metrics", 1_900_000_000_000_000_000, &e, "p")
                    })
                    .collect(),
                ..Batch::default()
            })
            .collect();
        let feeder = std::thread::spawn({
            let db = db.clone();
            move || {
                let mut replies = Vec::with_capacity(BATCHES);
                for batch in batches {
                    let (reply, answer) = bounded(1);
                    jobs.send(Job::Batch(batch, 20 * 400, reply)).unwrap();
                    replies.push(answer);
                }
                for answer in replies {
                    assert!(
                        answer.recv().unwrap().is_ok(),
                        "every batch stored and acked"
                    );
                }
                // Counted before the writer is told to stop (so not by a pass at its end).
                let kept = Store::open_read_only(&db).unwrap().counts().unwrap().0;
                jobs.send(Job::Stop).unwrap();
                kept
            }
        });
        let every = Duration::from_millis(20);
        writer(store, &rx, &stats, &retention, every, &mut wal, &syncs);
        drop(syncs);
        syncer.join().unwrap();
        let kept = feeder.join().unwrap();
        assert!(
            kept < (BATCHES * 20) as i64 / 2,
            "retention kept {kept} of {} events while the queue was full (max {max_bytes} \
             bytes)",
            BATCHES * 20
        );
    }

    #[test]
    fn entry_rate_allows_a_burst_then_the_average() {
        let t0 = Instant::now();
        let mut r = EntryRate::new(1000, 5000, t0);
        // A burst of max_entries passes at once.
        assert_eq!(r.take(5000, t0), Duration::ZERO);
        // The next 500 entries must wait until 500 tokens came back: 0.5 s at 1000/s.
        assert_eq!(r.take(500, t0), Duration::from_millis(500));
        // After waiting that long, the bucket is empty again, not negative.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(r.take(0, t1), Duration::ZERO);
        // A second later, 1000 more are free.
        let t2 = t1 + Duration::from_secs(1);
        assert_eq!(r.take(1000, t2), Duration::ZERO);
        assert_eq!(r.take(1, t2), Duration::from_millis(1));
        // An idle hour refills to the burst, no more.
        let t3 = t2 + Duration::from_secs(3600);
        assert_eq!(r.take(5000, t3), Duration::ZERO);
        assert!(r.take(1, t3) > Duration::ZERO);
    }

    #[test]
    fn store_failures_are_logged_once_a_minute_with_the_count_unsaid() {
        let t0 = Instant::now();
        let mut said = LogEvery::new(Duration::from_secs(60));
        // The first failure is said; a full disk's next 500 within the minute are not.
        assert_eq!(said.due(t0), Some(0));
        for i in 1..=500 {
            assert_eq!(said.due(t0 + Duration::from_millis(100 * i)), None);
        }
        // A minute after the last line: one line, with the 500 it did not say.
        assert_eq!(said.due(t0 + Duration::from_secs(60)), Some(500));
        assert_eq!(said.due(t0 + Duration::from_secs(61)), None);
        assert_eq!(said.due(t0 + Duration::from_secs(200)), Some(1));
    }

    #[test]
    fn gate_waits_for_room_and_gives_up_at_its_deadline() {
        let g = Gate::new(100);
        let a = g.acquire(60, Instant::now()).unwrap();
        assert_eq!(g.used(), 60);
        // No room, deadline already passed: refused at once.
        assert!(g.acquire(50, Instant::now()).is_none());
        // Room after `a` goes: another thread gets it.
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                g.acquire(50, Instant::now() + Duration::from_secs(30))
                    .map(|p| p.units)
            });
            while g.used() != 60 {
                std::thread::yield_now();
            }
            drop(a);
            assert_eq!(waiter.join().unwrap(), Some(50));
        });
        assert_eq!(g.used(), 0);
        // Larger than the whole gate: admitted when the gate is empty.
        let big = g.acquire(500, Instant::now()).unwrap();
        assert_eq!(g.used(), 500);
        drop(big);
    }

    /// A committed batch's answer comes after a sync that began after it was handed over;
    /// batches handed over while a sync runs share the next one. A failed sync answers its
    /// batches and every later one with the error, though later syncs would succeed.
    #[test]
    fn the_syncer_answers_committed_batches_after_a_sync_and_none_after_a_failed_one() {
        // Each sync waits for the test's word, then does what it is told.
        let (go, syncs_told) = bounded::<std::io::Result<()>>(0);
        let syncs_begun = Arc::new(AtomicU64::new(0));
        let (tx, syncer) = start_syncer(
            {
                let begun = syncs_begun.clone();
                move || {
                    begun.fetch_add(1, Ordering::SeqCst);
                    syncs_told.recv().unwrap()
                }
            },
            Arc::new(Stats::default()),
        )
        .unwrap();
        let commit = || {
            let (reply, answer) = bounded(1);
            let w = Waiting::new(Batch::default(), 0, reply);
            (vec![(w, Outcome::Stored(1))], answer)
        };
        let wait_for_syncs = |n| {
            while syncs_begun.load(Ordering::SeqCst) < n {
                std::thread::yield_now();
            }
        };
        let (first, first_answer) = commit();
        tx.send(first).unwrap();
        wait_for_syncs(1);
        // Handed over while the first sync runs: not answered by it.
        let (second, second_answer) = commit();
        let (third, third_answer) = commit();
        tx.send(second).unwrap();
        tx.send(third).unwrap();
        go.send(Ok(())).unwrap();
        assert_eq!(first_answer.recv().unwrap(), Ok(Outcome::Stored(1)));
        wait_for_syncs(2);
        let early = Duration::from_millis(100);
        assert!(second_answer.recv_timeout(early).is_err());
        assert!(third_answer.recv_timeout(early).is_err());
        go.send(Err(std::io::Error::other("disk gone"))).unwrap();
        for answer in [second_answer, third_answer] {
            let e = answer.recv().unwrap().unwrap_err();
            assert!(e.contains("disk gone"), "{e}");
        }
        // No more syncs: an error for every batch from now on.
        let (fourth, fourth_answer) = commit();
        tx.send(fourth).unwrap();
        assert!(fourth_answer.recv().unwrap().is_err());
        assert_eq!(syncs_begun.load(Ordering::SeqCst), 2);
        drop(tx);
        syncer.join().unwrap();
    }

    /// A waiting batch of `rows` events of 100 bytes each (an agent's are a few hundred).
    fn waiting(rows: usize, passed_over: u32) -> Waiting<()> {
        waiting_sized(rows, rows as u64 * 100, passed_over)
    }

    fn waiting_sized(rows: usize, bytes: u64, passed_over: u32) -> Waiting<()> {
        let mut w = Waiting::new(
            Batch {
                rows: vec![
                    Row::from_entry(
                        "t",
                        &zpulse_forward::Entry {
                            time: zpulse_proto::event::EventTime {
                                seconds: 1,
                                nanos: 0
                            },
                            record: vec![0x80],
                        },
                        "h",
                    )
                    .0;
                    rows
                ],
                ..Batch::default()
            },
            bytes,
            (),
        );
        w.passed_over = passed_over;
        w
    }

    #[test]
    fn the_writer_takes_small_batches_first_and_starves_none() {
        let sizes = |v: &[Waiting<()>]| v.iter().map(|w| w.bytes).collect::<Vec<_>>();
        // Batches of one part each: a full part, and lighter ones of which four fill a
        // transaction's bytes.
        let (full, lighter) = (PART_MAX_BYTES, GROUP_MAX_BYTES / 4 - 1000);
        let mut q = vec![waiting_sized(10, full, 0)];
        let lighter_ones = || (0..4).map(|_| waiting_sized(10, lighter, 0));
        // The lighter ones go first and fill the transaction; the full one is passed over...
        q.extend(lighter_ones());
        assert_eq!(sizes(&pick(&mut q, false)), [lighter; 4]);
        q.extend(lighter_ones());
        assert_eq!(sizes(&pick(&mut q, false)), [lighter; 4]);
        assert_eq!(q[0].passed_over, 2);
        // ...twice, then rides along with them (one only: the transaction stays bounded).
        q.extend(lighter_ones());
        assert_eq!(
            sizes(&pick(&mut q, false)),
            [lighter, lighter, lighter, lighter, full]
        );
        assert!(q.is_empty());
        // Batches owed their turn never push a light one out of a transaction.
        let mut q = vec![
            waiting_sized(10, full, 2),
            waiting_sized(10, full, 2),
            waiting(1, 0),
        ];
        q.extend(lighter_ones());
        assert_eq!(
            sizes(&pick(&mut q, false)),
            [100, lighter, lighter, lighter, lighter, full]
        );
        // After a heavy transaction, a light batch goes without the one owed its turn,
        // which goes in the next.
        let mut q = vec![waiting_sized(10, full, 2), waiting(1, 0)];
        q.extend(lighter_ones());
        assert_eq!(
            sizes(&pick(&mut q, true)),
            [100, lighter, lighter, lighter, lighter]
        );
        q.push(waiting(2, 0));
        assert_eq!(sizes(&pick(&mut q, false)), [200, full]);
        // Many light ones share a transaction.
        let mut q: Vec<_> = (0..10).map(|_| waiting(100, 0)).collect();
        assert_eq!(pick(&mut q, false).len(), 10);
        // Over the events bound: split, the smallest first.
        let mut q: Vec<_> = (0..6).map(|_| waiting(1000, 0)).collect();
        q.push(waiting(1, 0));
        let g = pick(&mut q, false);
        assert_eq!(g.iter().map(Waiting::events).sum::<usize>(), 4001);
        assert_eq!(q.len(), 2);
    }

    /// Stores a batch's part as the writer does, in the test: `Some(parts)` when that was its
    /// last part (its part ranges, in order), else it goes back to `q`.
    fn store_part(
        mut w: Waiting<Vec<std::ops::Range<usize>>>,
        q: &mut Vec<Waiting<Vec<std::ops::Range<usize>>>>,
    ) -> Option<Vec<std::ops::Range<usize>>> {
        let part = w.part();
        w.reply.push(part.clone());
        if part.end == w.batch.rows.len() {
            return Some(w.reply);
        }
        w.stored = part.end;
        w.passed_over = 0;
        q.push(w);
        None
    }

    fn with_parts(w: Waiting<()>) -> Waiting<Vec<std::ops::Range<usize>>> {
        Waiting::new(w.batch, w.bytes, Vec::new())
    }

    #[test]
    fn a_heavy_batch_is_stored_in_parts_between_light_ones() {
        let mib = 1u64 << 20;
        // Two batches of 5,000 large log records (29 MiB each: few events, many bytes), then
        // a heartbeat before every transaction, as a light client sends them.
        let mut q = vec![
            with_parts(waiting_sized(5000, 29 * mib, 0)),
            with_parts(waiting_sized(5000, 29 * mib, 0)),
        ];
        let mut done = Vec::new();
        let mut after_heavy = false;
        for round in 0.. {
            assert!(round < 200, "the heavy batches never finished: {done:?}");
            q.push(with_parts(waiting_sized(1, 300, 0)));
            let group = pick(&mut q, after_heavy);
            // The heartbeat is in every transaction: it waits for none of the heavy parts.
            assert!(group.iter().any(|w| w.bytes == 300), "round {round}");
            let bytes: u64 = group.iter().map(Waiting::part_bytes).sum();
            let events: usize = group.iter().map(Waiting::events).sum();
            assert!(bytes <= GROUP_MAX_BYTES + PART_MAX_BYTES, "{bytes}");
            assert!(events <= GROUP_MAX_EVENTS + PART_MAX_EVENTS, "{events}");
            after_heavy = events > GROUP_MAX_EVENTS / 2 || bytes > GROUP_MAX_BYTES / 2;
            for w in group {
                let heavy = w.bytes == 29 * mib;
                if let Some(parts) = store_part(w, &mut q)
                    && heavy
                {
                    done.push(parts);
                }
            }
            if done.len() == 2 {
                break;
            }
        }
        for parts in &done {
            // Parts of at most a part's bytes (rows at the batch's average size), in order,
            // each row once.
            let per_row = 29 * mib / 5000;
            assert!(
                parts
                    .iter()
                    .all(|p| p.len() as u64 * per_row <= PART_MAX_BYTES)
            );
            assert_eq!(parts.first().unwrap().start, 0);
            assert_eq!(parts.last().unwrap().end, 5000);
            assert!(parts.windows(2).all(|w| w[0].end == w[1].start));
        }
        // A batch over the events bound (12,000 agent events of 100 bytes) is split too,
        // behind a light one.
        let mut q = vec![with_parts(waiting(12_000, 0)), with_parts(waiting(3, 0))];
        let g = pick(&mut q, false);
        assert_eq!(
            g.iter().map(|w| w.part()).collect::<Vec<_>>(),
            [0..3, 0..PART_MAX_EVENTS]
        );
    }

    #[test]
    fn unproven_connections_hold_half_the_slots_and_the_biggest_holder_gives_way() {
        let ip = |n: u8| IpAddr::from([127, 0, 0, n]);
        let t0 = Instant::now();
        let grace = Duration::from_secs(1);
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut u: Unproven<&str> = Unproven::default();
        // max 8: the unproven share is 4. Address .2 takes three, .3 one.
        for handle in ["2a", "2b", "2c"] {
            assert!(matches!(
                u.admit(ip(2), u.total, 8, t0, grace),
                Admission::Take
            ));
            u.enter(ip(2), t0, handle);
        }
        assert!(matches!(
            u.admit(ip(3), u.total, 8, t0, grace),
            Admission::Take
        ));
        let three = u.enter(ip(3), at(10), "3a");
        // The share is full: .2 (three) gives its oldest to a newcomer from .4 (none), at
        // once...
        match u.admit(ip(4), 4, 8, at(20), grace) {
            Admission::TakeInPlaceOf(h) => assert_eq!(h, "2a"),
            other => panic!("{other:?}"),
        }
        u.enter(ip(4), at(20), "4a");
        // ...but no address holds two more than .4's one now: the oldest of all gives way
        // once it has had its grace, and a newcomer is refused before.
        assert!(matches!(
            u.admit(ip(4), 4, 8, at(500), grace),
            Admission::Refuse
        ));
        match u.admit(ip(4), 4, 8, at(1010), grace) {
            Admission::TakeInPlaceOf(h) => assert_eq!(h, "2b"),
            other => panic!("{other:?}"),
        }
        u.enter(ip(4), at(1010), "4b");
        // .3's one proves itself: room in the share again, for anyone.
        u.leave(ip(3), three);
        assert!(matches!(
            u.admit(ip(2), 3, 8, at(1010), grace),
            Admission::Take
        ));
        // All slots taken by proven connections, none unproven: refused.
        let mut v: Unproven<&str> = Unproven::default();
        assert!(matches!(v.admit(ip(6), 8, 8, t0, grace), Admission::Refuse));
        v.enter(ip(5), t0, "5a");
        v.enter(ip(5), t0, "5b");
        assert!(matches!(
            v.admit(ip(6), 8, 8, at(1000), grace),
            Admission::TakeInPlaceOf("5a")
        ));
        assert_eq!(v.total, 1);
        // Leaving twice, or after being given up, changes nothing.
        v.leave(ip(5), 1);
        assert_eq!(v.total, 1);
    }

    #[test]
    fn a_permit_resizes_within_its_gate() {
        let g = Gate::new(100);
        let mut p = g.acquire(80, Instant::now()).unwrap();
        // Fewer: given back at once.
        assert!(p.resize(30, Instant::now()));
        assert_eq!(g.used(), 30);
        let other = g.acquire(60, Instant::now()).unwrap();
        // More than there is room for, no time to wait: refused, holding what it held.
        assert!(!p.resize(50, Instant::now()));
        assert_eq!(g.used(), 90);
        drop(other);
        assert!(p.resize(50, Instant::now()));
        assert_eq!(g.used(), 50);
        // Alone in the gate, more than the whole gate: admitted, as acquire does.
        assert!(p.resize(500, Instant::now()));
        // Light rows are taken at once, whatever is held.
        let light = g.take_now(10);
        assert_eq!(g.used(), 510);
        drop((p, light));
        assert_eq!(g.used(), 0);
    }

    #[test]
    fn identities_bound_the_hosts() {
        let any = Identity::default();
        assert!(any.may_write("anything"));
        let key = Identity {
            name: Some("nas1".into()),
            restrictions: vec![vec!["nas1".into(), "nas1-jail".into()]],
        };
        assert!(key.may_write("nas1") && key.may_write("nas1-jail"));
        assert!(!key.may_write("nas2"));
        // A certificate without a mapping may write for its own names (CN, SANs).
        let tls = crate::config::Tls {
            clients: BTreeMap::from([("db.example.net".to_owned(), vec!["db1".to_owned()])]),
            ..Default::default()
        };
        let names = vec!["nas1".to_owned(), "nas1.example.net".to_owned()];
        let own = Identity::from_certificate(&names, &tls);
        assert_eq!(own.name.as_deref(), Some("nas1"));
        assert!(own.may_write("nas1.example.net") && !own.may_write("db1"));
        // A mapped one only for its mapping.
        let mapped = Identity::from_certificate(&["db.example.net".to_owned()], &tls);
        assert!(mapped.may_write("db1") && !mapped.may_write("db.example.net"));
        // Both a certificate and a key: each must allow the host.
        let both = Identity {
            name: own.name.clone(),
            restrictions: [own.restrictions, key.restrictions].concat(),
        };
        assert!(both.may_write("nas1") && !both.may_write("nas1-jail"));
    }
}
