//! The Forward sink: events as Fluent Forward PackedForward batches to a collector (zpulse's
//! own, Fluentd, Fluent Bit, Vector…), over TCP or TLS, with an optional shared-key
//! handshake, acks, and a bounded disk spool.
//!
//! How a batch travels:
//!
//! 1. [`Sink::deliver`] cuts the events into batches (consecutive events with the same tag,
//!    at most `batch_max_events` and `batch_max_bytes`), gives each a random chunk id,
//!    encodes it once as it will go on the wire, appends it to the disk spool and syncs.
//!    From then on the batch survives a collector outage and an agent restart. Nothing else
//!    is done on the caller's thread, so a slow collector never slows the sampler.
//! 2. The sink's sender thread takes the oldest batch, sends it and waits for the ack with
//!    that chunk id. Acked: the batch leaves the spool. No ack within `ack_timeout`, or any
//!    error: the connection is closed and the same bytes (same chunk id) are sent again on a
//!    new one, after an exponential backoff with jitter (0.5 s doubling to 30 s).
//! 3. When the spool is full, the oldest batches are dropped and counted
//!    ([`SinkStats::dropped`]), so the heartbeat reports them.
//!
//! **At-least-once.** Batches go in order, one at a time, and each leaves the spool only
//! when its ack arrives. The edge: a batch the server received and acked, whose ack was lost
//! (connection cut, agent stopped while waiting), is sent again with the same chunk id. A
//! receiver that must not see duplicates drops a batch whose chunk id it has already stored
//! (zpulse's collector does). Nothing acked is ever sent again, except when the spool's cursor
//! file could not be written (disk full), after a restart.
//!
//! **Metrics** (`metrics = true`): each reading becomes one `zpulse.series` record
//! ([`zpulse_forward::series`], built by the Prometheus exposition's code), spooled and acked
//! like events. They must never push findings and heartbeats out: a metric record is only
//! spooled while the spool stays under half of `spool_max_bytes` ([`METRICS_SHARE`]), so in an
//! outage metrics stop first and events keep at least half the spool; skipped readings are
//! counted and logged once per streak. The record names the host the events name (the
//! agent's `hostname`), learnt from the first events; the few readings before them wait.
//!
//! Shutdown: [`Sink::flush`] waits until the spool is empty or the deadline passes (what is
//! left stays in the spool for next time); dropping the sink stops its thread within about a
//! second.

mod config;
mod conn;
mod spool;

#[cfg(test)]
mod tests;

pub use config::{ForwardConfig, TlsConfig, split_address};

use super::backoff::Backoff;
use super::prometheus::exposition;
use super::{Reading, Sink, SinkError, SinkStats, Stamped};
use crate::base::log::{Level, log};
use conn::{Connection, Failure, Target};
use rustls::pki_types::ServerName;
use spool::Spool;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zpulse_forward::{ChunkId, Compression, Entries, series};
use zpulse_proto::EventTime;

/// The share of the spool metric records may fill: above it, readings are skipped, so the
/// rest always holds findings and heartbeats.
pub const METRICS_SHARE: f64 = 0.5;
/// Readings kept until the first events say the host's name.
const READINGS_BEFORE_HOST: usize = 4;

const BACKOFF_MIN: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How long dropping the sink waits for its thread (stuck at most in one TCP connect).
const STOP_WAIT: Duration = Duration::from_secs(1);

/// A Forward sink. See the [module documentation](self).
pub struct ForwardSink {
    name: String,
    gzip: bool,
    batch_max_events: usize,
    batch_max_bytes: usize,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    metrics: Option<Metrics>,
}

/// The metric side of a sink with `metrics = true`.
struct Metrics {
    /// Spool bytes above which a metric record is skipped.
    spool_limit: u64,
    /// The host events name; `None` until the first events.
    host: Option<String>,
    waiting: Vec<Reading>,
    /// Readings skipped, in all and in the current streak.
    skipped: u64,
    streak: u64,
    /// Encodes each reading's record, keeping what readings share.
    records: exposition::RecordRenderer,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled on every change: new batches, acks, kicks, stop, the thread's exit.
    changed: Condvar,
    stop: AtomicBool,
}

struct State {
    spool: Spool,
    delivered: u64,
    dropped: u64,
    /// Skip the current backoff and try now (set by `flush`).
    kick: bool,
    last_error: Option<String>,
    connected: bool,
    exited: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves counters that are still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A Forward sink whose config is checked (address, TLS files, spool settings) but which has
/// touched nothing yet: no spool directory, no thread, no connection. `check-config` and a
/// reload stop here; [`Prepared::start`] does the rest.
pub struct Prepared {
    config: ForwardConfig,
    target: Target,
}

impl Prepared {
    /// The name the sink will have.
    pub fn name(&self) -> String {
        format!("forward {}", self.config.address)
    }

    /// Opens the spool (replaying what a previous run left there) and starts the sender
    /// thread. The spool directory must not be in use by another sink: a reload closes the
    /// old sink first (see `daemon`).
    pub fn start(self) -> Result<ForwardSink, String> {
        let Prepared { config, target } = self;
        let dir = config.spool_dir();
        let (spool, _recovered) = Spool::open(&dir, config.spool_max_bytes)
            .map_err(|e| format!("spool_dir: {}: {e}", dir.display()))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                spool,
                delivered: 0,
                dropped: 0,
                kick: false,
                last_error: None,
                connected: false,
                exited: false,
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let name = format!("forward {}", config.address);
        let thread = std::thread::Builder::new()
            .name(format!("zpulse-{name}"))
            .spawn({
                let shared = shared.clone();
                let name = name.clone();
                move || sender(&shared, &target, &name)
            })
            .map_err(|e| format!("cannot start the sender thread: {e}"))?;
        Ok(ForwardSink {
            name,
            gzip: config.gzip,
            batch_max_events: config.batch_max_events,
            batch_max_bytes: config.batch_max_bytes,
            shared,
            thread: Some(thread),
            metrics: config.metrics.then(|| Metrics {
                spool_limit: (config.spool_max_bytes as f64 * METRICS_SHARE) as u64,
                host: None,
                waiting: Vec::new(),
                skipped: 0,
                streak: 0,
                records: exposition::RecordRenderer::default(),
            }),
        })
    }
}

impl ForwardSink {
    /// Checks the config without side effects. Errors name the config key.
    pub fn prepare(config: ForwardConfig) -> Result<Prepared, String> {
        config.check()?;
        let (host, port) = split_address(&config.address)?;
        let tls = match &config.tls {
            None => None,
            Some(tls) => {
                let name = tls.server_name.clone().unwrap_or_else(|| host.clone());
                let server_name = ServerName::try_from(name.clone())
                    .map_err(|e| format!("tls.server_name {name:?}: {e}"))?;
                Some((tls.client_config()?, server_name))
            }
        };
        let hostname = match &config.self_hostname {
            Some(h) => h.clone(),
            None => system_hostname(),
        };
        let target = Target {
            host,
            port,
            tls,
            shared_key: config.shared_key.clone(),
            hostname,
            connect_timeout: config.connect_timeout,
            ack_timeout: config.ack_timeout,
        };
        Ok(Prepared { config, target })
    }

    /// [`prepare`](Self::prepare) and [`Prepared::start`] in one.
    pub fn new(config: ForwardConfig) -> Result<ForwardSink, String> {
        ForwardSink::prepare(config)?.start()
    }

    /// The last transport error (`None` once a batch went through after it).
    pub fn last_error(&self) -> Option<String> {
        self.shared.lock().last_error.clone()
    }

    /// Whether the sink holds an established connection.
    pub fn connected(&self) -> bool {
        self.shared.lock().connected
    }

    /// Readings skipped so far because the spool was over its metric share.
    pub fn metrics_skipped(&self) -> u64 {
        self.metrics.as_ref().map_or(0, |m| m.skipped)
    }

    fn compression(&self) -> Compression {
        if self.gzip {
            Compression::Gzip
        } else {
            Compression::None
        }
    }

    /// Spools one reading's metric record, unless the spool is over the metric share.
    fn spool_reading(&mut self, reading: &Reading, host: &str) -> Result<(), SinkError> {
        let snapshot = reading.snapshot();
        let Some(m) = self.metrics.as_mut() else {
            return Ok(());
        };
        let record = m.records.record(snapshot, host);
        let mut entries = Entries::new();
        entries.push(EventTime::from_unix(snapshot.taken_at), &record);
        let chunk = ChunkId(random16());
        let message =
            entries.packed_forward(series::TAG, Some(&chunk.to_base64()), self.compression());
        let mut st = self.shared.lock();
        let Some(m) = self.metrics.as_mut() else {
            return Ok(());
        };
        let size = message.len() as u64 + spool::RECORD_OVERHEAD;
        if st.spool.disk_bytes() + size > m.spool_limit {
            m.skipped += 1;
            m.streak += 1;
            // Said once per streak (the first), not every reading of an outage.
            return if m.streak == 1 {
                Err(SinkError {
                    sink: self.name.clone(),
                    message: format!(
                        "spool over {:.0}% of spool_max_bytes: metrics are skipped until it drains \
                         (findings and heartbeats keep the rest)",
                        METRICS_SHARE * 100.0
                    ),
                })
            } else {
                Ok(())
            };
        }
        if m.streak > 0 {
            log(
                Level::Info,
                &self.name,
                &format!("spooling metrics again; {} readings skipped", m.streak),
            );
            m.streak = 0;
        }
        let result = st
            .spool
            .append(chunk, 1, &message)
            .and_then(|a| {
                st.dropped += a.dropped_events;
                st.spool.sync()
            })
            .map_err(|e| SinkError {
                sink: self.name.clone(),
                message: format!("spool {}: metrics: {e}", st.spool.dir().display()),
            });
        drop(st);
        self.shared.changed.notify_all();
        result
    }

    /// Cuts events into wire messages: runs of one tag, bounded in count and bytes.
    fn encode(&self, events: &[Stamped]) -> Vec<(ChunkId, u32, Vec<u8>)> {
        let compression = self.compression();
        let mut out = Vec::new();
        let mut tag = String::new();
        let mut entries = Entries::new();
        let mut seal = |tag: &str, entries: &mut Entries| {
            if !entries.is_empty() {
                let chunk = ChunkId(random16());
                let message = entries.packed_forward(tag, Some(&chunk.to_base64()), compression);
                out.push((chunk, entries.len() as u32, message));
                *entries = Entries::new();
            }
        };
        for s in events {
            let record = s.event.to_msgpack();
            let this_tag = s.event.tag();
            // An entry adds its array header and time (11 bytes) to the record.
            let full = entries.len() >= self.batch_max_events
                || entries.as_bytes().len() + record.len() + 11 > self.batch_max_bytes;
            if this_tag != tag || full {
                seal(&tag, &mut entries);
                tag = this_tag;
            }
            entries.push(s.time, &record);
        }
        seal(&tag, &mut entries);
        out
    }
}

impl Sink for ForwardSink {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn deliver(&mut self, batch: &[Stamped]) -> Result<(), SinkError> {
        // Nothing to do: the sender thread retries on its own, and an idle sync is wasted I/O.
        if batch.is_empty() {
            return Ok(());
        }
        let mut first_error = None;
        if let Some(m) = self.metrics.as_mut()
            && m.host.is_none()
        {
            m.host = Some(batch[0].event.host.clone());
            let host = batch[0].event.host.clone();
            for reading in std::mem::take(&mut m.waiting) {
                if let Err(e) = self.spool_reading(&reading, &host) {
                    first_error.get_or_insert(e);
                }
            }
        }
        let result = self.deliver_events(batch);
        match first_error {
            Some(e) if result.is_ok() => Err(e),
            _ => result,
        }
    }

    fn wants_readings(&self) -> bool {
        self.metrics.is_some()
    }

    fn observe(&mut self, reading: &Reading) -> Result<(), SinkError> {
        let Some(m) = self.metrics.as_mut() else {
            return Ok(());
        };
        match m.host.clone() {
            Some(host) => self.spool_reading(reading, &host),
            None => {
                if m.waiting.len() < READINGS_BEFORE_HOST {
                    m.waiting.push(reading.clone());
                }
                Ok(())
            }
        }
    }

    fn flush(&mut self, deadline: Instant) -> Result<(), SinkError> {
        self.flush_spool(deadline)
    }

    fn stats(&self) -> SinkStats {
        self.spool_stats()
    }
}

impl ForwardSink {
    fn deliver_events(&mut self, batch: &[Stamped]) -> Result<(), SinkError> {
        let messages = self.encode(batch);
        let mut st = self.shared.lock();
        let mut lost = 0u64;
        let mut error = None;
        for (chunk, events, message) in &messages {
            match st.spool.append(*chunk, *events, message) {
                Ok(a) => st.dropped += a.dropped_events,
                Err(e) => {
                    lost += u64::from(*events);
                    error = Some(format!("spool {}: {e}", st.spool.dir().display()));
                }
            }
        }
        if let Err(e) = st.spool.sync() {
            error.get_or_insert(format!("spool {}: sync: {e}", st.spool.dir().display()));
        }
        st.dropped += lost;
        drop(st);
        self.shared.changed.notify_all();
        match error {
            None => Ok(()),
            Some(message) => Err(SinkError {
                sink: self.name.clone(),
                message: if lost > 0 {
                    format!("{message} ({lost} events dropped)")
                } else {
                    message
                },
            }),
        }
    }

    fn flush_spool(&mut self, deadline: Instant) -> Result<(), SinkError> {
        let mut st = self.shared.lock();
        st.kick = true;
        self.shared.changed.notify_all();
        loop {
            if st.spool.is_empty() {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline || st.exited {
                return Err(SinkError {
                    sink: self.name.clone(),
                    message: format!(
                        "{} events still in the spool (kept for the next run){}",
                        st.spool.events(),
                        st.last_error
                            .as_deref()
                            .map(|e| format!("; last error: {e}"))
                            .unwrap_or_default()
                    ),
                });
            }
            st = self
                .shared
                .changed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn spool_stats(&self) -> SinkStats {
        let st = self.shared.lock();
        SinkStats {
            delivered: st.delivered,
            dropped: st.dropped,
            pending: st.spool.events(),
            spool_bytes: st.spool.disk_bytes(),
        }
    }
}

impl Drop for ForwardSink {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        let deadline = Instant::now() + STOP_WAIT;
        let mut st = self.shared.lock();
        while !st.exited && Instant::now() < deadline {
            st = self
                .shared
                .changed
                .wait_timeout(st, deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let exited = st.exited;
        drop(st);
        if let Some(t) = self.thread.take()
            && exited
        {
            let _ = t.join();
        }
        // Otherwise the thread is inside one bounded connect; it leaves the spool alone once
        // it sees the stop flag, and ends by itself.
    }
}

/// The sender thread: oldest batch first, one at a time, until the sink is dropped.
fn sender(shared: &Shared, target: &Target, name: &str) {
    let mut conn: Option<Connection> = None;
    let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX).jittered();
    loop {
        // Wait for a batch and for the backoff to pass.
        let batch = {
            let mut st = shared.lock();
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    st.exited = true;
                    st.connected = false;
                    drop(st);
                    shared.changed.notify_all();
                    return;
                }
                if std::mem::take(&mut st.kick) {
                    backoff.skip_wait();
                }
                let wait = match (st.spool.head(), backoff.remaining(Instant::now())) {
                    (None, _) => Some(Duration::from_secs(60)),
                    (Some(_), left) => left,
                };
                if let Some(wait) = wait {
                    st = shared
                        .changed
                        .wait_timeout(st, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    continue;
                }
                match st.spool.read_head() {
                    Some(Ok(batch)) => break batch,
                    Some(Err(e)) => {
                        // Unreadable: sending it is impossible, keeping it blocks the rest.
                        let n = st.spool.drop_head();
                        st.dropped += u64::from(n);
                        st.last_error = Some(format!("{e}; {n} events dropped"));
                        log(Level::Error, name, &format!("{e}; {n} events dropped"));
                    }
                    None => {}
                }
            }
        };

        let outcome = match conn.as_mut() {
            Some(c) => Ok(c),
            None => match Connection::open(target, &shared.stop) {
                Ok(c) => {
                    shared.lock().connected = true;
                    Ok(conn.insert(c))
                }
                Err(f) => Err((f, true)),
            },
        }
        .and_then(|c| {
            let fresh = c.fresh;
            c.send(
                &batch.message,
                &batch.chunk.to_base64(),
                target.ack_timeout,
                &shared.stop,
            )
            .map(|()| c.keepalive)
            .map_err(|f| (f, fresh))
        });

        let mut st = shared.lock();
        if shared.stop.load(Ordering::SeqCst) {
            // A new sink may own the spool directory by now: touch nothing. A batch acked
            // just now is sent again by it (the at-least-once edge).
            continue;
        }
        match outcome {
            Ok(keepalive) => {
                if let Some(n) = st.spool.ack(batch.id) {
                    st.delivered += u64::from(n);
                }
                if st.last_error.take().is_some() {
                    log(Level::Info, name, "delivering again");
                }
                backoff.reset();
                if !keepalive {
                    conn = None;
                    st.connected = false;
                }
            }
            Err((Failure::Stopped, _)) => {}
            Err((Failure::Error(e), fresh)) => {
                conn = None;
                st.connected = false;
                if !fresh {
                    // The connection sat idle and the server may simply have closed it:
                    // try a new one at once before backing off.
                    backoff.skip_wait();
                } else {
                    let delay = backoff.failed(Instant::now());
                    if st.last_error.as_deref() != Some(e.as_str()) {
                        let spooled = st.spool.events();
                        let secs = delay.as_secs_f64();
                        log(
                            Level::Warn,
                            name,
                            &format!("{e}; {spooled} events spooled, retrying in {secs:.1}s"),
                        );
                    }
                }
                st.last_error = Some(e);
            }
        }
        drop(st);
        shared.changed.notify_all();
    }
}

/// 16 random bytes (chunk ids, salts, jitter). Should the OS generator ever fail, the time
/// and a counter still give ids that differ, which is all a chunk id needs.
fn random16() -> [u8; 16] {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        b[..8].copy_from_slice(&nanos.to_le_bytes());
        b[8..].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    }
    b
}

/// The hostname the handshake names when `self_hostname` is not set.
fn system_hostname() -> String {
    crate::base::host::hostname().unwrap_or_else(|| "zpulse".into())
}
