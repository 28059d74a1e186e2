//! Storage: one SQLite database in WAL mode.
//!
//! * `events` — every event received, once: time (ns since the epoch), tag, kind, host,
//!   check, severity (0 info, 1 warning, 2 critical; NULL for foreign records), state,
//!   subject, summary, advice, `data` as JSON. Host and check are ids in `names` (a row and
//!   its host and check index entries hold an integer, not the text again; a database of an
//!   earlier release, with the text in every row, is converted when the writer opens it).
//!   Indexed by time, host and check (each with
//!   time), and its findings by time and host. Every index costs each stored event an insert
//!   (the writer's work), so each is one a query's plan uses: severity filters are answered
//!   by filtering rows in time order (see [`Store::events`]).
//!   The finding events (`kind = 'finding'`, with their `state`) are the raised / updated /
//!   cleared history of every finding.
//! * `chunks` — the chunk id of every batch stored, scoped to its sender ([`Batch::dedup_key`]:
//!   the client's authenticated name and the hosts the batch writes for, with the chunk id):
//!   a batch whose key is already here was stored before (its ack was lost and the agent
//!   resent it) and is acked without storing it again. Another client's batch with an equal
//!   chunk id is a different key, so it is stored: an ack always means stored. Kept for
//!   `dedup_window` (at least), so resends after long outages are caught.
//! * `findings` — the current state of each finding, per (host, check, subject): open or
//!   cleared, since when, the latest summary. `open = 1` rows are the open set.
//! * `pending_parts` — the `events` rows (id ranges) of batches stored in parts
//!   ([`Store::apply_part`]) whose last part has not committed yet: not stored as far as
//!   anyone may tell (no ack, no chunk id, hidden from [`Store::events`] and from the
//!   alerter), deleted if the batch fails and, after a crash, when the writer starts
//!   ([`Store::discard_unfinished`]). Empty but while a heavy batch is being stored.
//! * `acks` — findings acknowledged by `zpulse-collector ack`, until a time or for good: who,
//!   why, and the Alertmanager silences made for it (`[[url, id], …]`). `ack_log` — every ack
//!   and unack in order, which the webhooks pass on.
//! * `chart_points` — the charts of `/host/NAME`, kept current as events are stored: per
//!   host, per [`CHART_BUCKET_S`] of event time, the latest value of each `_pct` figure
//!   ([`Row::points`]). Clustered by host (WITHOUT ROWID), so a host's day is a few
//!   contiguous pages however the fleet's events interleave in `events`; at most
//!   [`CHART_BUCKETS`] points a series a day. Deleted after two days by retention.
//! * `names` — the name of every host and check an event named, by id (never deleted: one
//!   row per host and per check).
//! * `received_ranges` — per second of receive time, the first and last id of the events
//!   received in it: what retention by age finds the old events by, kept by an upsert per
//!   batch (an index on `events.received` cost every event an insert). A range may hold
//!   younger events too (ids taken again after the newest rows were deleted, a clock set
//!   back), so retention deletes within it only the events old enough.
//! * `hosts` — last seen (receive time), the heartbeat's interval, last event time (the
//!   sender's clock), the latest heartbeat (its time and receive time), the clock skew the
//!   heartbeats last showed ([`crate::clock`]), agent version (from the heartbeat's
//!   `data.version`), the peer address (for the command line only: the page and `/api/*` do
//!   not show it), and the summary of its open findings (how many, the worst severity),
//!   kept current as findings are stored, so that listing 500 hosts reads 500 rows.
//!
//! Every query a request makes is bounded by an index or by the hosts table's size;
//! [`Store::events`] with filters no index orders (`severity`, most `kind`s) is cut off
//! (when [`Filter::bounded`], as for every web request) after [`SCAN_BUDGET`] steps, with an
//! error that says to narrow it. The command line may scan.
//!
//! Time: `ts` is the sender's clock, kept and shown; `received` (s) is the collector's.
//! Retention, "last seen" and the order of deletion by size use `received` only, so a
//! sender's wrong clock (an event dated 1970 or 2096) neither loses nor pins data.
//!
//! Writes go through [`Store::apply`] inside a transaction the caller commits (the server's
//! writer thread groups many batches per transaction, and acks them once the commit is
//! synced to disk: [`Store::sync_commits_apart`]). A
//! heavy batch goes through [`Store::apply_part`] in several transactions instead, so that
//! light batches' transactions come between its parts: only its last part records its chunk
//! id and what it changes besides its rows (findings, hosts, charts, series), and only then
//! is it acked.

use rusqlite::{CachedStatement, Connection, OpenFlags, OptionalExtension, Transaction, params};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;
use zpulse_forward::Entry;
use zpulse_proto::event::{Event, EventTime, Severity, Value};

/// The check of the agent's heartbeat: tracked in `hosts`, not as a finding.
pub const HEARTBEAT_CHECK: &str = "agent.heartbeat";

/// The events table: `host_id` and `check_id` name their host and check in `names` (an
/// integer in the row and in the host and check indexes instead of the text again in each:
/// a smaller row, and index entries compared as integers).
const EVENTS_TABLE: &str = "
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    received INTEGER NOT NULL,
    tag TEXT NOT NULL,
    kind TEXT NOT NULL,
    host_id INTEGER NOT NULL,
    check_id INTEGER NOT NULL,
    severity INTEGER,
    state TEXT,
    subject TEXT NOT NULL,
    summary TEXT NOT NULL,
    advice TEXT,
    data TEXT NOT NULL
);
";

/// The indexes of `events` (made once the table has its current columns).
const EVENTS_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
CREATE INDEX IF NOT EXISTS events_host_ts ON events(host_id, ts);
CREATE INDEX IF NOT EXISTS events_check_ts ON events(check_id, ts);
-- No query's plan used it (severity filters read rows in time order), and each event paid
-- an insert into it.
DROP INDEX IF EXISTS events_severity_ts;
CREATE INDEX IF NOT EXISTS events_finding_host_ts ON events(host_id, ts) WHERE kind = 'finding';
CREATE INDEX IF NOT EXISTS events_finding_ts ON events(ts) WHERE kind = 'finding';
CREATE INDEX IF NOT EXISTS events_zevent_host_ts ON events(host_id, ts) WHERE kind = 'zevent';
";

/// The events table of the releases before `names` (host and check as text in each row):
/// what [`Store::open`] converts, and what a read-only store of such a database reads.
const EVENTS_WITH_TEXT_NAMES: &str = "SELECT count(*) FROM pragma_table_info('events')
                                      WHERE name = 'check_name'";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS names (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS received_ranges (
    received INTEGER PRIMARY KEY,
    first_id INTEGER NOT NULL,
    last_id INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk TEXT PRIMARY KEY,
    received INTEGER NOT NULL,
    events INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunks_received ON chunks(received);
CREATE TABLE IF NOT EXISTS findings (
    host TEXT NOT NULL,
    check_name TEXT NOT NULL,
    subject TEXT NOT NULL,
    open INTEGER NOT NULL,
    severity INTEGER NOT NULL,
    state TEXT NOT NULL,
    raised_ts INTEGER NOT NULL,
    updated_ts INTEGER NOT NULL,
    cleared_ts INTEGER,
    summary TEXT NOT NULL,
    advice TEXT,
    data TEXT NOT NULL,
    received INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, check_name, subject)
) WITHOUT ROWID;
DROP INDEX IF EXISTS findings_open;
CREATE INDEX IF NOT EXISTS findings_open_host ON findings(open, host, severity);
CREATE TABLE IF NOT EXISTS hosts (
    host TEXT PRIMARY KEY,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    last_event_ts INTEGER NOT NULL,
    version TEXT,
    heartbeat_ts INTEGER,
    peer TEXT NOT NULL,
    clock_skew INTEGER NOT NULL DEFAULT 0,
    heartbeat_interval REAL,
    heartbeat_received INTEGER,
    open_findings INTEGER NOT NULL DEFAULT 0,
    worst_open INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chart_points (
    host TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    series TEXT NOT NULL,
    ts INTEGER NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (host, bucket, series)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS acks (
    host TEXT NOT NULL,
    check_name TEXT NOT NULL,
    subject TEXT NOT NULL,
    until INTEGER,
    created INTEGER NOT NULL,
    by TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL DEFAULT '',
    silences TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (host, check_name, subject)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending_parts (
    first_id INTEGER PRIMARY KEY,
    last_id INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ack_log (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    action TEXT NOT NULL,
    host TEXT NOT NULL,
    check_name TEXT NOT NULL,
    subject TEXT NOT NULL,
    by TEXT NOT NULL,
    reason TEXT NOT NULL,
    until INTEGER
);
";

/// Columns added after the first release: (table, column, declaration), added to older
/// databases at open.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("findings", "received", "INTEGER NOT NULL DEFAULT 0"),
    ("hosts", "clock_skew", "INTEGER NOT NULL DEFAULT 0"),
    ("hosts", "heartbeat_interval", "REAL"),
    ("hosts", "heartbeat_received", "INTEGER"),
    ("hosts", "open_findings", "INTEGER NOT NULL DEFAULT 0"),
    ("hosts", "worst_open", "INTEGER"),
    ("acks", "by", "TEXT NOT NULL DEFAULT ''"),
    ("acks", "reason", "TEXT NOT NULL DEFAULT ''"),
    ("acks", "silences", "TEXT NOT NULL DEFAULT '[]'"),
];

/// SQLite virtual-machine steps [`Store::events`] may take for one answer beyond
/// [`STEPS_PER_ROW`] per row it may return: some 10,000 rows examined and skipped (tens of
/// milliseconds). Past it, the query is refused with [`TOO_BROAD`] rather than scanning a
/// million rows for a filter that matches little.
pub const SCAN_BUDGET: i64 = 100_000;
/// Steps allowed per row a query may return (`limit`): reading one row's twelve columns.
pub const STEPS_PER_ROW: i64 = 20;
/// The start of the error of a query cut off by [`SCAN_BUDGET`].
pub const TOO_BROAD: &str = "too broad: ";

/// A host's open-findings summary, from its findings (the one definition of it).
const HOST_SUMMARY: &str = "UPDATE hosts SET
    open_findings = (SELECT count(*) FROM findings f WHERE f.open = 1 AND f.host = hosts.host),
    worst_open = (SELECT max(severity) FROM findings f WHERE f.open = 1 AND f.host = hosts.host)";

/// Merges a second's ids into the range already kept for it (see `received_ranges`).
const MERGE_RANGE: &str = "ON CONFLICT(received) DO UPDATE SET
    first_id = min(first_id, excluded.first_id), last_id = max(last_id, excluded.last_id)";

/// One event row: what the server writes, and what `query` reads back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Event time, ns since the epoch: the sender's clock.
    pub ts: i64,
    /// Receive time, s since the epoch: the collector's clock (0 before it is stored).
    pub received: i64,
    pub tag: String,
    /// `finding`, `metrics`, `agent`, `zevent`, or `foreign` for a record that is not a
    /// zpulse event.
    pub kind: String,
    pub host: String,
    pub check: String,
    pub severity: Option<i64>,
    pub state: Option<String>,
    pub subject: String,
    pub summary: String,
    pub advice: Option<String>,
    /// JSON object.
    pub data: String,
    /// The chart figures of the event: (series name, value) of each finite `_pct` field of
    /// `data`, the series named `check key`, or `check subject key` when the subject is not
    /// the host itself. Empty for foreign records and read-back rows.
    #[serde(skip)]
    pub points: Vec<(String, f64)>,
}

/// The width of a chart point, s: a day in [`CHART_BUCKETS`] points.
pub const CHART_BUCKET_S: i64 = 216;
/// Chart points a series has in a day.
pub const CHART_BUCKETS: i64 = 86400 / CHART_BUCKET_S;

impl Row {
    /// A received entry. A record that is not a valid zpulse event is kept as `foreign`
    /// (any Forward client may send to a collector), its fields as `data`, and `Err` carries
    /// why it is not a zpulse event. `peer_host` names the host when the record does not.
    pub fn from_entry(tag: &str, entry: &Entry, peer_host: &str) -> (Row, Result<(), String>) {
        Row::from_record(tag, entry.time, &entry.record, peer_host)
    }

    /// [`Row::from_entry`] of an entry's time and record. A record in the agent's form is
    /// read straight into its row ([`crate::record`]); any other, the general way.
    pub fn from_record(
        tag: &str,
        time: EventTime,
        record: &[u8],
        peer_host: &str,
    ) -> (Row, Result<(), String>) {
        let ts = i64::from(time.seconds) * 1_000_000_000 + i64::from(time.nanos);
        if let Some(row) = crate::record::row(tag, ts, record, peer_host) {
            return (row, Ok(()));
        }
        match Event::from_msgpack(record) {
            Ok(e) => (Row::from_owned_event(tag, ts, e, peer_host), Ok(())),
            Err(why) => (Row::foreign(tag, ts, record, peer_host), Err(why)),
        }
    }

    pub fn from_event(tag: &str, ts: i64, e: &Event, peer_host: &str) -> Row {
        Row::from_owned_event(tag, ts, e.clone(), peer_host)
    }

    /// [`Row::from_event`] taking the event's strings instead of copying them (what the
    /// connections do with each event they decode).
    pub fn from_owned_event(tag: &str, ts: i64, e: Event, peer_host: &str) -> Row {
        let points = chart_points(&e, peer_host);
        let data = serde_json::to_string(&e.data).unwrap_or_else(|_| "{}".into());
        Row {
            ts,
            received: 0,
            tag: tag.to_owned(),
            kind: e.kind.as_str().to_owned(),
            host: if e.host.is_empty() {
                peer_host.to_owned()
            } else {
                e.host
            },
            check: e.check,
            severity: Some(severity_rank(e.severity)),
            state: e.state.map(|s| s.as_str().to_owned()),
            subject: e.subject,
            summary: e.summary,
            advice: e.advice,
            data,
            points,
        }
    }

    fn foreign(tag: &str, ts: i64, record: &[u8], peer_host: &str) -> Row {
        let map: BTreeMap<String, Value> = rmp_serde::from_slice(record).unwrap_or_else(|e| {
            BTreeMap::from([(
                "_undecodable".to_owned(),
                Value::Str(format!("{e}").chars().take(200).collect()),
            )])
        });
        let text = |k: &str| match map.get(k) {
            Some(Value::Str(s)) if !s.is_empty() => Some(s.chars().take(256).collect::<String>()),
            _ => None,
        };
        Row {
            ts,
            received: 0,
            tag: tag.to_owned(),
            kind: "foreign".into(),
            host: text("host")
                .or_else(|| text("hostname"))
                .unwrap_or_else(|| peer_host.to_owned()),
            check: String::new(),
            severity: None,
            state: None,
            subject: String::new(),
            summary: text("message").or_else(|| text("msg")).unwrap_or_default(),
            advice: None,
            data: serde_json::to_string(&map).unwrap_or_else(|_| "{}".into()),
            points: Vec::new(),
        }
    }
}

/// What [`Row::points`] holds for an event.
fn chart_points(e: &Event, peer_host: &str) -> Vec<(String, f64)> {
    let host = if e.host.is_empty() {
        peer_host
    } else {
        &e.host
    };
    e.data
        .iter()
        .filter(|(k, _)| k.ends_with(CHART_PCT_SUFFIX))
        .filter_map(|(k, v)| {
            let x = v.as_f64().filter(|x| x.is_finite())?;
            Some((chart_point_name(&e.check, &e.subject, host, k), x))
        })
        .collect()
}

/// The figures of `data` that are charted end so.
pub(crate) const CHART_PCT_SUFFIX: &str = "_pct";

/// The series name of a chart point: `check key`, or `check subject key` when the subject is
/// not the host itself (`host`: the event's, or its peer's when it names none).
pub(crate) fn chart_point_name(check: &str, subject: &str, host: &str, key: &str) -> String {
    // Pushed, not formatted: one per figure of every event received.
    let with_subject = !(subject.is_empty() || subject == host);
    let mut name = String::with_capacity(check.len() + subject.len() + key.len() + 2);
    name.push_str(check);
    if with_subject {
        name.push(' ');
        name.push_str(subject);
    }
    name.push(' ');
    name.push_str(key);
    name
}

/// Per host in a batch: latest event time, latest heartbeat (time, agent version, interval),
/// whether one of its findings changed.
type HostSeen = (i64, Option<(i64, Option<String>, Option<f64>)>, bool);

/// A batch of events from one client message.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The chunk id the client asked an ack for: with `sender` and the hosts of the rows,
    /// the dedup key ([`Batch::dedup_key`]).
    pub chunk: Option<String>,
    /// Who sent it: the connection's authenticated name, `None` when unauthenticated.
    pub sender: Option<String>,
    /// The client's address.
    pub peer: String,
    pub rows: Vec<Row>,
    /// The figures of metric records (`zpulse.series`), stored as time series.
    pub readings: Vec<crate::timeseries::Reading>,
}

impl Batch {
    /// The key a resend of this batch is recognised by: the chunk id within its sender's
    /// scope, that is the sender's authenticated name and the hosts the batch writes for
    /// (sorted, each once). Chunk ids are chosen by the clients, so two clients may send
    /// equal ones, by chance or on purpose; one client's id must never make another's batch
    /// be acked unstored. Encoded as a JSON array, so no name can be mistaken for a
    /// separator. `None`: no chunk id, no dedup.
    pub fn dedup_key(&self) -> Option<String> {
        let chunk = self.chunk.as_deref()?;
        let mut hosts: Vec<&str> = self
            .rows
            .iter()
            .map(|r| r.host.as_str())
            .chain(self.readings.iter().map(|r| r.host.as_str()))
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        Some(serde_json::json!([self.sender, hosts, chunk]).to_string())
    }
}

/// What became of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Stored, with this many events.
    Stored(usize),
    /// A batch with this chunk id was stored before: nothing stored.
    Duplicate,
}

/// What one part of a batch stored in parts ([`Store::apply_part`]) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Its rows are in `events` under these ids (runs of consecutive ids), pending: the
    /// batch is not stored until its last part commits.
    Pending(Vec<(i64, i64)>),
    /// The batch is done: its last part committed with this, or it was a duplicate.
    Done(Outcome),
}

pub fn severity_rank(s: Severity) -> i64 {
    match s {
        Severity::Info => 0,
        Severity::Warning => 1,
        Severity::Critical => 2,
    }
}

pub fn severity_name(rank: Option<i64>) -> &'static str {
    match rank {
        Some(0) => "info",
        Some(1) => "warning",
        Some(2) => "critical",
        _ => "-",
    }
}

pub fn parse_severity(s: &str) -> Result<i64, String> {
    match s {
        "info" => Ok(0),
        "warning" => Ok(1),
        "critical" => Ok(2),
        other => Err(format!(
            "severity {other:?}: give info, warning or critical"
        )),
    }
}

/// How long and how much to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Events older than this are deleted; `None`: kept by age forever.
    pub max_age: Option<Duration>,
    /// The database's pages in use are kept below this, oldest events first; `None`: no cap.
    pub max_bytes: Option<u64>,
    /// How long chunk ids are remembered for dedup (whatever `max_age` says).
    pub dedup_window: Duration,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            max_age: Some(Duration::from_secs(30 * 86400)),
            max_bytes: None,
            dedup_window: Duration::from_secs(7 * 86400),
        }
    }
}

/// What a retention pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Events.
    pub by_age: u64,
    pub by_size: u64,
    /// Chunk ids remembered for dedup.
    pub chunks: u64,
    /// The time series' rows (a host's figure a day), which go by age too.
    pub series: u64,
}

impl Pruned {
    /// Adds what another step deleted.
    pub fn add(&mut self, other: Pruned) {
        self.by_age += other.by_age;
        self.by_size += other.by_size;
        self.chunks += other.chunks;
        self.series += other.series;
    }
}

/// Events one retention step deletes at most ([`Store::retain_step`]).
pub const RETENTION_STEP_ROWS: i64 = 20_000;

pub struct Store {
    conn: Connection,
    /// Whether the database has `pending_parts` (one written by an older version and opened
    /// read-only may not): else no row is pending.
    has_pending_parts: bool,
    /// Whether its events name their host and check as text (a database of a release before
    /// `names`, opened read-only: [`Store::open`] converts them).
    text_names: bool,
}

fn now_epoch_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn sql(e: rusqlite::Error) -> String {
    format!("SQLite: {e}")
}

/// How long the writer's connection waits for a lock another connection holds.
const WRITER_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl Store {
    /// Opens (creating if needed) the database for writing.
    pub fn open(path: &Path) -> Result<Store, String> {
        let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        conn.busy_timeout(WRITER_BUSY_TIMEOUT).map_err(sql)?;
        // Every statement the writer runs for a batch stays prepared: a batch with findings
        // and metric records runs fifteen (events, names, ranges, chunks, findings, hosts,
        // charts, time series), eighteen with a new name or in parts; rusqlite keeps 16 by
        // default, and past it its least-recently-used cache would prepare each one again at
        // every batch, in turn.
        conn.set_prepared_statement_cache_capacity(64);
        // auto_vacuum and page_size only take effect on a database without tables: new ones.
        // 4 KiB pages (SQLite's default): a commit dirties about as many pages whatever their
        // size (the events table and its indexes grow at the end and at one point per host
        // and check), so 16 KiB pages wrote twice the WAL a commit. In bursts that fit the
        // WAL they were a little faster (8 pairs, 203,500 events/s mean with 4 KiB against
        // 210,900), but under a sustained load, where the WAL must be copied and started
        // again (`max_wal_bytes`), six pairs of the load bench at 16 × 50,000 events by turns
        // gave 4 KiB 199,700 events/s mean against 195,500, with 12 WAL restarts a run
        // against 24: half the bytes written to the disk for the same events. A database
        // made with 16 KiB pages keeps them.
        conn.execute_batch(
            "PRAGMA page_size = 4096;
             PRAGMA auto_vacuum = INCREMENTAL;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             PRAGMA journal_size_limit = 67108864;
             PRAGMA foreign_keys = OFF;",
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!(
                "{}: SQLite refused WAL mode (journal_mode is {mode})",
                path.display()
            ));
        }
        conn.execute_batch(crate::timeseries::SCHEMA)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        conn.execute_batch(EVENTS_TABLE)
            .and_then(|()| conn.execute_batch(SCHEMA))
            .map_err(|e| format!("{}: creating the schema: {e}", path.display()))?;
        for (table, column, decl) in ADDED_COLUMNS {
            let present: bool = conn
                .query_row(
                    &format!("SELECT count(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
                    [column],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(sql)?
                > 0;
            if !present {
                conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))
                    .map_err(|e| format!("{}: adding {table}.{column}: {e}", path.display()))?;
            }
        }
        // A database with `events_received` was written by a version that kept no
        // `received_ranges` (the first releases, or one of them again after this one): the
        // ranges of its events from that index, then the index goes.
        let has_received_index = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index'
                   AND name = 'events_received'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(sql)?
            > 0;
        if has_received_index {
            conn.execute_batch(&format!(
                "BEGIN;
                 INSERT INTO received_ranges(received, first_id, last_id)
                   SELECT received, min(id), max(id) FROM events WHERE true GROUP BY received
                   {MERGE_RANGE};
                 DROP INDEX events_received;
                 COMMIT;"
            ))
            .map_err(|e| format!("{}: ranges of received events: {e}", path.display()))?;
        }
        // A database of a release before `names`: its events rewritten with ids for their
        // hosts and checks (ids, times and everything else as they were), in one transaction.
        let text_names = conn
            .query_row(EVENTS_WITH_TEXT_NAMES, [], |r| r.get::<_, i64>(0))
            .map_err(sql)?
            > 0;
        if text_names {
            conn.execute_batch(&format!(
                "BEGIN;
                 INSERT OR IGNORE INTO names(name) SELECT DISTINCT host FROM events;
                 INSERT OR IGNORE INTO names(name) SELECT DISTINCT check_name FROM events;
                 ALTER TABLE events RENAME TO events_with_text_names;
                 {EVENTS_TABLE}
                 INSERT INTO events(id, ts, received, tag, kind, host_id, check_id, severity,
                                    state, subject, summary, advice, data)
                   SELECT e.id, e.ts, e.received, e.tag, e.kind, h.id, c.id, e.severity,
                          e.state, e.subject, e.summary, e.advice, e.data
                   FROM events_with_text_names e
                   JOIN names h ON h.name = e.host
                   JOIN names c ON c.name = e.check_name
                   ORDER BY e.id;
                 DROP TABLE events_with_text_names;
                 COMMIT;"
            ))
            .map_err(|e| {
                let _ = conn.execute_batch("ROLLBACK");
                format!(
                    "{}: giving the events ids for their hosts and checks: {e}",
                    path.display()
                )
            })?;
        }
        conn.execute_batch(EVENTS_INDEXES)
            .map_err(|e| format!("{}: indexing the events: {e}", path.display()))?;
        // The summaries from the findings themselves: right for a database of an older
        // version too (one row per host, by index).
        conn.execute_batch(HOST_SUMMARY)
            .map_err(|e| format!("{}: host summaries: {e}", path.display()))?;
        Ok(Store {
            conn,
            has_pending_parts: true,
            text_names: false,
        })
    }

    /// Opens an existing database for reading (queries, the web page).
    pub fn open_read_only(path: &Path) -> Result<Store, String> {
        if !path.exists() {
            return Err(format!(
                "{}: no database there (start `zpulse-collector serve --db {}` first)",
                path.display(),
                path.display()
            ));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sql)?;
        // Each web request opens its own connection, whose page cache starts empty: reading
        // the file through a memory map shares the kernel's cache instead of copying every
        // page in with a read(2).
        conn.execute_batch("PRAGMA mmap_size = 268435456;")
            .map_err(sql)?;
        let has_pending_parts = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'pending_parts'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(sql)?
            > 0;
        let text_names = conn
            .query_row(EVENTS_WITH_TEXT_NAMES, [], |r| r.get::<_, i64>(0))
            .map_err(sql)?
            > 0;
        Ok(Store {
            conn,
            has_pending_parts,
            text_names,
        })
    }

    pub fn transaction(&mut self) -> Result<Transaction<'_>, String> {
        self.conn.transaction().map_err(sql)
    }

    /// Stores one batch inside `tx` (the caller commits), unless its chunk id was stored
    /// before. `now` is the receive time in seconds.
    pub fn apply(tx: &Transaction, batch: &Batch, now: i64) -> Result<Outcome, String> {
        Store::finish(tx, batch, 0, &[], now)
    }

    /// Stores rows `rows` of `batch` inside `tx` (the caller commits): one part of a batch
    /// stored across several transactions, in order. `earlier`: the ids its earlier parts
    /// stored (their [`Part::Pending`], once committed). A part before the last stores its
    /// rows and marks them pending (`pending_parts`); nothing else (no chunk id: a resend
    /// is not yet a duplicate). The last part (`rows.end` the batch's length) stores its rows
    /// and everything the batch changes besides them, records the chunk id, and unmarks the
    /// earlier parts, all in its one transaction: until it commits, the batch is not stored.
    /// A batch whose chunk id is found stored (at its first part, or at its last: a resend
    /// that was stored meanwhile) is [`Outcome::Duplicate`], its earlier parts deleted.
    pub fn apply_part(
        tx: &Transaction,
        batch: &Batch,
        rows: std::ops::Range<usize>,
        earlier: &[(i64, i64)],
        now: i64,
    ) -> Result<Part, String> {
        if rows.end >= batch.rows.len() {
            return Store::finish(tx, batch, rows.start, earlier, now).map(Part::Done);
        }
        if rows.start == 0
            && let Some(key) = batch.dedup_key()
            && tx
                .prepare_cached("SELECT 1 FROM chunks WHERE chunk = ?1")
                .and_then(|mut s| s.exists([key]))
                .map_err(sql)?
        {
            return Ok(Part::Done(Outcome::Duplicate));
        }
        let ids = insert_rows(tx, &batch.rows[rows], now)?;
        let mut mark = tx
            .prepare_cached("INSERT INTO pending_parts(first_id, last_id) VALUES (?1, ?2)")
            .map_err(sql)?;
        for (first, last) in &ids {
            mark.execute([first, last]).map_err(sql)?;
        }
        Ok(Part::Pending(ids))
    }

    /// Deletes the rows of a batch stored in parts that will not be finished (a later part
    /// failed): pending, so never acked. Its own transaction.
    pub fn discard(&mut self, parts: &[(i64, i64)]) -> Result<u64, String> {
        let tx = self.conn.transaction().map_err(sql)?;
        let n = delete_parts(&tx, parts)?;
        tx.commit().map_err(sql)?;
        Ok(n)
    }

    /// Deletes the rows of every batch whose last part never committed (the collector
    /// stopped or crashed between its parts, or deleting them failed): their senders had no
    /// ack and resend them. Only for the one writer, before it stores anything (a part under
    /// way is pending too); the number of rows deleted.
    pub fn discard_unfinished(&mut self) -> Result<u64, String> {
        let parts: Vec<(i64, i64)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT first_id, last_id FROM pending_parts")
                .map_err(sql)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(sql)?
                .collect::<Result<_, _>>()
                .map_err(sql)?
        };
        if parts.is_empty() {
            return Ok(0);
        }
        self.discard(&parts)
    }

    /// The rest of `batch` from row `from` on, and all it changes besides its rows; `earlier`
    /// its parts already stored (see [`Store::apply_part`]).
    fn finish(
        tx: &Transaction,
        batch: &Batch,
        from: usize,
        earlier: &[(i64, i64)],
        now: i64,
    ) -> Result<Outcome, String> {
        if let Some(key) = batch.dedup_key() {
            let fresh = tx
                .prepare_cached(
                    "INSERT INTO chunks(chunk, received, events) VALUES (?1, ?2, ?3)
                     ON CONFLICT(chunk) DO NOTHING",
                )
                .and_then(|mut s| s.execute(params![key, now, batch.rows.len() as i64]))
                .map_err(sql)?;
            if fresh == 0 {
                delete_parts(tx, earlier)?;
                return Ok(Outcome::Duplicate);
            }
        }
        insert_rows(tx, &batch.rows[from.min(batch.rows.len())..], now)?;
        let mut unmark = tx
            .prepare_cached("DELETE FROM pending_parts WHERE first_id = ?1")
            .map_err(sql)?;
        for (first, _) in earlier {
            unmark.execute([first]).map_err(sql)?;
        }
        // Per host: latest event time, latest heartbeat (time, version). A batch's rows come
        // host after host (most batches are one host's): a row of the host before it finds
        // its place without hashing the name.
        let mut hosts: Vec<(&str, HostSeen)> = Vec::new();
        let mut host_at: HashMap<&str, usize> = HashMap::new();
        let mut last_host: Option<usize> = None;
        // The batch's chart figures, for its latest value per chart point: a batch holds
        // seconds to minutes of a host's figures, so most of its rows fall into a point
        // another row of it also has. Sorted below rather than hashed: a hundred short keys
        // sort in a fraction of what hashing each with SipHash cost.
        let mut points: Vec<((&str, i64, &str), i64, f64)> = Vec::new();
        // Prepared at the batch's first finding.
        let mut finding: Option<CachedStatement> = None;
        for r in &batch.rows {
            if r.kind != "foreign" {
                let bucket = r.ts.div_euclid(1_000_000_000).div_euclid(CHART_BUCKET_S);
                for (name, value) in &r.points {
                    points.push(((r.host.as_str(), bucket, name.as_str()), r.ts, *value));
                }
            }
            let i = match last_host {
                Some(i) if hosts[i].0 == r.host => i,
                _ => *host_at.entry(r.host.as_str()).or_insert_with(|| {
                    hosts.push((r.host.as_str(), (r.ts, None, false)));
                    hosts.len() - 1
                }),
            };
            last_host = Some(i);
            let h = &mut hosts[i].1;
            h.0 = h.0.max(r.ts);
            if r.kind == "agent" && r.check == HEARTBEAT_CHECK {
                if h.1.as_ref().is_none_or(|(t, _, _)| r.ts >= *t) {
                    let (version, interval) = heartbeat_fields(&r.data);
                    h.1 = Some((r.ts, version, interval));
                }
            } else if (r.kind == "finding" || r.kind == "agent") && r.state.is_some() {
                if finding.is_none() {
                    finding = Some(tx.prepare_cached(TRACK_FINDING).map_err(sql)?);
                }
                if let Some(upsert) = finding.as_mut() {
                    track_finding(upsert, r, now)?;
                }
                h.2 = true;
            }
        }
        let mut point = tx
            .prepare_cached(
                "INSERT INTO chart_points(host, bucket, series, ts, value)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(host, bucket, series) DO UPDATE SET
                   ts = excluded.ts, value = excluded.value
                 WHERE excluded.ts >= chart_points.ts",
            )
            .map_err(sql)?;
        // Stable: a point's figures stay in the order of their rows, and of those of equal
        // time the later row's value is kept.
        points.sort_by(|a, b| a.0.cmp(&b.0));
        for group in points.chunk_by(|a, b| a.0 == b.0) {
            let (ts, value) =
                group
                    .iter()
                    .fold((group[0].1, group[0].2), |latest, &(_, ts, value)| {
                        if ts >= latest.0 { (ts, value) } else { latest }
                    });
            let (host, bucket, name) = group[0].0;
            point
                .execute(params![host, bucket, name, ts, value])
                .map_err(sql)?;
        }
        let mut previous = tx
            .prepare_cached(
                "SELECT heartbeat_ts, heartbeat_received, heartbeat_interval FROM hosts
                 WHERE host = ?1",
            )
            .map_err(sql)?;
        // ?5 the batch's newest heartbeat, ?7 the skew it shows (NULL: none shown).
        let mut host = tx
            .prepare_cached(
                "INSERT INTO hosts(host, first_seen, last_seen, last_event_ts, version,
                                   heartbeat_ts, heartbeat_received, peer, clock_skew,
                                   heartbeat_interval)
                 VALUES (?1, ?2, ?2, ?3, ?4, ?5, CASE WHEN ?5 IS NOT NULL THEN ?2 END, ?6,
                         coalesce(?7, 0), ?8)
                 ON CONFLICT(host) DO UPDATE SET
                   clock_skew = coalesce(?7, hosts.clock_skew),
                   heartbeat_interval = coalesce(excluded.heartbeat_interval,
                                                 hosts.heartbeat_interval),
                   last_seen = max(hosts.last_seen, excluded.last_seen),
                   last_event_ts = max(hosts.last_event_ts, excluded.last_event_ts),
                   version = CASE WHEN excluded.heartbeat_ts IS NOT NULL
                                   AND (hosts.heartbeat_ts IS NULL
                                        OR excluded.heartbeat_ts >= hosts.heartbeat_ts)
                                  THEN excluded.version ELSE hosts.version END,
                   heartbeat_received = CASE WHEN excluded.heartbeat_ts IS NOT NULL
                                        AND (hosts.heartbeat_ts IS NULL
                                             OR excluded.heartbeat_ts >= hosts.heartbeat_ts)
                                       THEN excluded.heartbeat_received
                                       ELSE hosts.heartbeat_received END,
                   heartbeat_ts = CASE WHEN excluded.heartbeat_ts IS NOT NULL
                                        AND (hosts.heartbeat_ts IS NULL
                                             OR excluded.heartbeat_ts >= hosts.heartbeat_ts)
                                       THEN excluded.heartbeat_ts ELSE hosts.heartbeat_ts END,
                   peer = excluded.peer",
            )
            .map_err(sql)?;
        let mut summary = tx
            .prepare_cached(&format!("{HOST_SUMMARY} WHERE host = ?1"))
            .map_err(sql)?;
        for (name, (last_ts, hb, findings_changed)) in hosts {
            let (hb_ts, version, interval) = match hb {
                Some((t, v, i)) => (Some(t), v, i),
                None => (None, None, None),
            };
            let skew = match hb_ts {
                Some(ts_ns) => {
                    let before: Option<(Option<i64>, Option<i64>, Option<f64>)> = previous
                        .query_row([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                        .optional()
                        .map_err(sql)?;
                    let (seen, stored_interval) = match before {
                        Some((Some(ts_ns), Some(received), i)) => {
                            (Some(crate::clock::Seen { ts_ns, received }), i)
                        }
                        Some((_, _, i)) => (None, i),
                        None => (None, None),
                    };
                    crate::clock::evidence(
                        seen,
                        crate::clock::Seen {
                            ts_ns,
                            received: now,
                        },
                        interval.or(stored_interval).unwrap_or(60.0),
                    )
                }
                None => None,
            };
            host.execute(params![
                name, now, last_ts, version, hb_ts, batch.peer, skew, interval
            ])
            .map_err(sql)?;
            if findings_changed {
                summary.execute([name]).map_err(sql)?;
            }
        }
        for r in &batch.readings {
            crate::timeseries::apply(tx, r, now)?;
        }
        Ok(Outcome::Stored(batch.rows.len() + batch.readings.len()))
    }

    /// Stores batches in one transaction; for tests and tools (the server groups its own).
    pub fn store(&mut self, batches: &[Batch], now: i64) -> Result<Vec<Outcome>, String> {
        let tx = self.transaction()?;
        let out = batches
            .iter()
            .map(|b| Store::apply(&tx, b, now))
            .collect::<Result<Vec<_>, _>>()?;
        tx.commit().map_err(sql)?;
        Ok(out)
    }

    /// Deletes by age, then by size (oldest events first), to the end: [`Store::retain_step`]
    /// until it has nothing more to do. `now` in seconds.
    pub fn retain(&mut self, r: &Retention, now: i64) -> Result<Pruned, String> {
        let mut total = Pruned::default();
        loop {
            let (p, more) = self.retain_step(r, now)?;
            total.add(p);
            if !more {
                return Ok(total);
            }
        }
    }

    /// One step of retention: deletes at most [`RETENTION_STEP_ROWS`] events (by age first,
    /// then by size), and says whether more is to be deleted. The writer runs one step
    /// between two transactions, so that a pass over a large database holds commits for one
    /// step's time at a time (20,000 events: 0.05-0.06 s) rather than for the whole pass (the
    /// oldest tenth of 1.6 million events in one statement took 0.45 s, a time that grows with
    /// the database).
    pub fn retain_step(&mut self, r: &Retention, now: i64) -> Result<(Pruned, bool), String> {
        // One transaction: a step's statements (the events, their ranges, the names, the
        // pages freed) commit once, each page they change written to the WAL once instead of
        // once a statement, and a step that fails half-way leaves nothing half done.
        // rusqlite's transaction rolls back when dropped unfinished (an error, a failed
        // commit), so none is left open for the writer's next one. Immediate: the write lock
        // from the start, as another process (`zpulse-collector ack`) may write too.
        let tx = Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let done = self.retention_statements(r, now)?;
        tx.commit().map_err(sql)?;
        Ok(done)
    }

    /// [`Store::retain_step`]'s statements, inside its transaction.
    fn retention_statements(&self, r: &Retention, now: i64) -> Result<(Pruned, bool), String> {
        let mut p = Pruned::default();
        if let Some(age) = r.max_age {
            let cutoff = now - age.as_secs() as i64;
            // The ids received before the cutoff lie within these; so may younger ones.
            let (first, last): (Option<i64>, Option<i64>) = self
                .conn
                .query_row(
                    "SELECT min(first_id), max(last_id) FROM received_ranges WHERE received < ?1",
                    [cutoff],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(sql)?;
            if let (Some(first), Some(last)) = (first, last) {
                let end = last.min(first.saturating_add(RETENTION_STEP_ROWS - 1));
                p.by_age = self
                    .conn
                    .execute(
                        "DELETE FROM events WHERE id BETWEEN ?1 AND ?2 AND received < ?3",
                        [first, end, cutoff],
                    )
                    .map_err(sql)? as u64;
                if end < last {
                    // The old seconds' ranges now start past what this step deleted (each
                    // holds the ids of one second of receive time, all of them old): the next
                    // step starts there, and a stop between steps leaves every old event
                    // still in a range.
                    self.conn
                        .execute(
                            "DELETE FROM received_ranges WHERE received < ?1 AND last_id <= ?2",
                            [cutoff, end],
                        )
                        .map_err(sql)?;
                    self.conn
                        .execute(
                            "UPDATE received_ranges SET first_id = ?2 + 1
                             WHERE received < ?1 AND first_id <= ?2",
                            [cutoff, end],
                        )
                        .map_err(sql)?;
                    self.forget_unused(&p)?;
                    return Ok((p, true));
                }
            }
            self.conn
                .execute("DELETE FROM received_ranges WHERE received < ?1", [cutoff])
                .map_err(sql)?;
            self.conn
                .execute(
                    "DELETE FROM findings WHERE open = 0 AND received < ?1",
                    [cutoff],
                )
                .map_err(sql)?;
            // Counted apart: they are no events, and `by_age` is said as events (the log
            // line, `/api/stats` `retention_deleted`).
            p.series = crate::timeseries::retain(&self.conn, cutoff)?;
        }
        // Charts look back a day; a second day covers a clock a day ahead of ours.
        self.conn
            .execute(
                "DELETE FROM chart_points WHERE bucket < ?1",
                [(now - 2 * 86400).div_euclid(CHART_BUCKET_S)],
            )
            .map_err(sql)?;
        let keep_chunks = r
            .dedup_window
            .max(r.max_age.unwrap_or(Duration::ZERO))
            .as_secs() as i64;
        p.chunks = self
            .conn
            .execute(
                "DELETE FROM chunks WHERE received < ?1",
                [now - keep_chunks],
            )
            .map_err(sql)? as u64;
        let mut more = false;
        let used = match r.max_bytes {
            Some(_) => self.used_bytes()?,
            None => 0,
        };
        if let Some(max) = r.max_bytes
            && used > max
        {
            // The events, reckoned by the span of their ids: `count(*)` reads a whole index,
            // a time that grows with the database (17-35 ms at 4 million events, cached,
            // Python's `sqlite3`), in every step; the span is two lookups (0.1 ms). Ids are
            // dense but for what retention by age took out of order (events received late
            // by a clock set back) and unfinished batches discarded: never fewer than the
            // events, so a step deletes no less than it would by the count.
            let count: i64 = self
                .conn
                .query_row(
                    "SELECT coalesce((SELECT max(id) FROM events) - (SELECT min(id) FROM events)
                                     + 1, 0)",
                    [],
                    |r| r.get(0),
                )
                .map_err(sql)?;
            if count > 0 {
                // The events over the cap, reckoned at the average event's share of the pages,
                // and a tenth of all the events more (so that the next commits do not pass it
                // again at once), a step's worth at most; steps go on while the pages in use are over
                // the cap. Not a tenth of the events at most, as when a pass deleted in one
                // go: a step comes between two transactions of up to 5,000 events, and a
                // small database's tenth would not keep up with them.
                let over = (count as u128 * u128::from(used - max)).div_ceil(u128::from(used));
                let over = i64::try_from(over).unwrap_or(count);
                let n = over
                    .saturating_add(count / 10)
                    .clamp(1, RETENTION_STEP_ROWS);
                p.by_size = self
                    .conn
                    .execute(
                        "DELETE FROM events WHERE id IN
                           (SELECT id FROM events ORDER BY id LIMIT ?1)",
                        [n],
                    )
                    .map_err(sql)? as u64;
                more = count > n && self.used_bytes()? > max;
            }
            // The ranges of the seconds whose events are all gone now: those before the
            // oldest event's second that end before it (with a clock set back, a few more
            // stay until their age comes).
            self.conn
                .execute(
                    "DELETE FROM received_ranges
                     WHERE received <= coalesce((SELECT received FROM events ORDER BY id
                                                 LIMIT 1), 9223372036854775807)
                       AND last_id < coalesce((SELECT min(id) FROM events),
                                              9223372036854775807)",
                    [],
                )
                .map_err(sql)?;
        }
        self.forget_unused(&p)?;
        Ok((p, more))
    }

    /// After a step that deleted something: the names no event uses, and the pages freed.
    fn forget_unused(&self, p: &Pruned) -> Result<(), String> {
        if p.by_age + p.by_size > 0 {
            // The names no event uses any more go with their last events, as the text in each
            // row once did: else a sender of ever-new host or check names (or a fleet of
            // short-lived hosts) grows `names` without bound. Each is one look in the
            // host and check indexes.
            self.conn
                .execute(
                    "DELETE FROM names
                     WHERE NOT EXISTS (SELECT 1 FROM events WHERE host_id = names.id)
                       AND NOT EXISTS (SELECT 1 FROM events WHERE check_id = names.id)",
                    [],
                )
                .map_err(sql)?;
        }
        // No checkpoint of its own: copying the WAL is the checkpointer's job beside the
        // server's writer (or SQLite's automatic one on a connection without it). One here
        // ran in the writer between two transactions, adding to a step what a commit then
        // waited for: a 400,000-event pass beside the load bench (`ZPULSE_BENCH_EXPIRED`) had
        // ack p99 44.6–59.8 ms with it, 41.2–43.2 without (five runs each, by turns).
        if p.by_age + p.by_size + p.chunks + p.series > 0 {
            self.conn
                .execute_batch("PRAGMA incremental_vacuum;")
                .map_err(sql)?;
        }
        Ok(())
    }

    /// A host's time series from `since` to `until` (s): [`crate::timeseries::points`].
    pub fn series_points(
        &self,
        host: &str,
        since: i64,
        until: i64,
    ) -> Result<BTreeMap<String, Vec<(i64, f64)>>, String> {
        crate::timeseries::points(&self.conn, host, since, until)
    }

    /// The time (s) of a host's latest metric record: [`crate::timeseries::latest`].
    pub fn series_latest(&self, host: &str) -> Result<Option<i64>, String> {
        crate::timeseries::latest(&self.conn, host)
    }

    /// Bytes of database pages in use (free pages excluded).
    pub fn used_bytes(&self) -> Result<u64, String> {
        let q = |p: &str| -> Result<i64, String> {
            self.conn
                .query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))
                .map_err(sql)
        };
        let pages = q("page_count")? - q("freelist_count")?;
        Ok((pages.max(0) as u64) * q("page_size")? as u64)
    }

    /// Events matching `f`, newest first (or oldest first). Refused with [`TOO_BROAD`] when
    /// `f.bounded` and answering takes more than [`SCAN_BUDGET`] steps beyond `limit` rows:
    /// filters an index orders by
    /// time (`host`, `check`, `since`, `kind = finding`, `host` with `kind = zevent`: the
    /// host page's kernel events) keep the work near `limit`; the
    /// others (`severity`, other kinds) filter rows as the index yields them, which for a
    /// rare match means many rows. Rows of a batch still being stored in parts are not
    /// among them.
    pub fn events(&self, f: &Filter) -> Result<Vec<Row>, String> {
        // Host and check: ids in `names` (text in a database of an older release).
        let (host_col, check_col) = if self.text_names {
            ("host", "check_name")
        } else {
            ("host_id", "check_id")
        };
        let mut sql_text = format!(
            "SELECT ts, tag, kind, {host_col}, {check_col}, severity, state, subject, summary,
                    advice, data, received FROM events WHERE 1=1"
        );
        if self.has_pending_parts {
            // Rows of a batch whose last part has not committed are not stored yet. The
            // first test is made once per query (it names no column of `events`), so a
            // row costs a step or two more while no batch is being stored in parts.
            sql_text.push_str(
                " AND (NOT EXISTS (SELECT 1 FROM pending_parts)
                       OR NOT EXISTS (SELECT 1 FROM pending_parts p
                                      WHERE p.first_id <= events.id AND events.id <= p.last_id))",
            );
        }
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        // A host or check no event names: no event matches.
        let mut unnamed = false;
        for (name, col) in [(&f.host, host_col), (&f.check, check_col)] {
            let Some(name) = name else { continue };
            sql_text.push_str(&format!(" AND {col} = ?"));
            if self.text_names {
                args.push(name.clone().into());
            } else {
                match self.name_id(name)? {
                    Some(id) => args.push(id.into()),
                    None => unnamed = true,
                }
            }
        }
        if let Some(s) = f.min_severity {
            sql_text.push_str(" AND severity >= ?");
            args.push(s.into());
        }
        if let Some(k) = &f.kinds {
            // Written into the statement (checked against KINDS, so no injection), not bound:
            // SQLite uses the partial index on findings only for a literal `kind = 'finding'`.
            if let Some(bad) = k.iter().find(|k| !KINDS.contains(&k.as_str())) {
                return Err(format!("kind {bad:?}: give {}", KINDS.join(", ")));
            }
            let quoted: Vec<String> = k.iter().map(|k| format!("'{k}'")).collect();
            sql_text.push_str(&match quoted.as_slice() {
                [one] => format!(" AND kind = {one}"),
                many => format!(" AND kind IN ({})", many.join(",")),
            });
        }
        if let Some(t) = f.since_ts {
            sql_text.push_str(" AND ts >= ?");
            args.push(t.into());
        }
        sql_text.push_str(if f.oldest_first {
            " ORDER BY ts ASC, id ASC LIMIT ?"
        } else {
            " ORDER BY ts DESC, id DESC LIMIT ?"
        });
        args.push((f.limit as i64).into());
        if unnamed {
            return Ok(Vec::new());
        }
        if !f.bounded {
            let rows = self.query_events(&sql_text, args).map_err(sql)?;
            return self.named(rows);
        }
        // SQLite calls this every PROGRESS_OPS virtual-machine steps.
        const PROGRESS_OPS: i32 = 1000;
        let budget = SCAN_BUDGET.saturating_add((f.limit as i64).saturating_mul(STEPS_PER_ROW));
        let mut calls = 0i64;
        self.conn
            .progress_handler(
                PROGRESS_OPS,
                Some(move || {
                    calls += 1;
                    calls * i64::from(PROGRESS_OPS) > budget
                }),
            )
            .map_err(sql)?;
        let result = self.query_events(&sql_text, args);
        let _ = self.conn.progress_handler(0, None::<fn() -> bool>);
        let rows = result.map_err(|e| match e {
            rusqlite::Error::SqliteFailure(c, _)
                if c.code == rusqlite::ErrorCode::OperationInterrupted =>
            {
                format!(
                    "{TOO_BROAD}the matching events are too rare among the newest ones to \
                     find them quickly (more than {budget} SQLite steps): narrow the query \
                     with host, check, since or kind=finding"
                )
            }
            e => sql(e),
        })?;
        // Outside the budget: one lookup per host and check named, whatever the scan took.
        self.named(rows)
    }

    /// The id of a host's or a check's name, if an event ever named it.
    fn name_id(&self, name: &str) -> Result<Option<i64>, String> {
        self.conn
            .prepare_cached("SELECT id FROM names WHERE name = ?1")
            .and_then(|mut s| s.query_row([name], |r| r.get(0)).optional())
            .map_err(sql)
    }

    /// Rows read by [`Store::query_events`] with the names of their hosts and checks.
    fn named(&self, rows: Vec<(Row, NameRef, NameRef)>) -> Result<Vec<Row>, String> {
        let mut ids: Vec<i64> = rows
            .iter()
            .flat_map(|(_, h, c)| [h, c])
            .filter_map(|n| match n {
                NameRef::Id(id) => Some(*id),
                NameRef::Text(_) => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        // A few names are looked up by id; more (rows of many hosts) are read in one pass
        // over `names`, a row per host and check (a lookup each cost more than that).
        let mut names: HashMap<i64, String> = HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            // Text in the rows (a database of an older release, which may have no `names`).
        } else if ids.len() <= NAMES_LOOKED_UP {
            let mut lookup = self
                .conn
                .prepare_cached("SELECT name FROM names WHERE id = ?1")
                .map_err(sql)?;
            for id in ids {
                let name: Option<String> = lookup
                    .query_row([id], |r| r.get(0))
                    .optional()
                    .map_err(sql)?;
                names.extend(name.map(|n| (id, n)));
            }
        } else {
            let mut all = self
                .conn
                .prepare_cached("SELECT id, name FROM names")
                .map_err(sql)?;
            let read = all
                .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                .map_err(sql)?;
            for pair in read {
                let (id, name) = pair.map_err(sql)?;
                if ids.binary_search(&id).is_ok() {
                    names.insert(id, name);
                }
            }
        }
        let name = |n: NameRef| match n {
            NameRef::Text(t) => t,
            NameRef::Id(id) => names.get(&id).cloned().unwrap_or_default(),
        };
        Ok(rows
            .into_iter()
            .map(|(mut row, host, check)| {
                row.host = name(host);
                row.check = name(check);
                row
            })
            .collect())
    }

    /// Rows of `events`, their host and check as read (ids, or text in a database of an
    /// older release): [`Store::named`] gives the rows their names.
    fn query_events(
        &self,
        sql_text: &str,
        args: Vec<rusqlite::types::Value>,
    ) -> rusqlite::Result<Vec<(Row, NameRef, NameRef)>> {
        let mut stmt = self.conn.prepare(sql_text)?;
        let name = |r: &rusqlite::Row, i: usize| -> rusqlite::Result<NameRef> {
            Ok(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Integer(id) => NameRef::Id(id),
                _ => NameRef::Text(r.get(i)?),
            })
        };
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
            let row = Row {
                ts: r.get(0)?,
                tag: r.get(1)?,
                kind: r.get(2)?,
                host: String::new(),
                check: String::new(),
                severity: r.get(5)?,
                state: r.get(6)?,
                subject: r.get(7)?,
                summary: r.get(8)?,
                advice: r.get(9)?,
                data: r.get(10)?,
                received: r.get(11)?,
                points: Vec::new(),
            };
            Ok((row, name(r, 3)?, name(r, 4)?))
        })?;
        rows.collect()
    }

    /// Every host, by name.
    pub fn hosts(&self) -> Result<Vec<HostRow>, String> {
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {HOST_COLUMNS} FROM hosts ORDER BY host"))
            .map_err(sql)?;
        let rows = stmt.query_map([], host_row).map_err(sql)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql)
    }

    /// A host's chart points since `since` (s, event time): (series, time s, value), by time.
    pub fn chart_points(&self, host: &str, since: i64) -> Result<Vec<(String, f64, f64)>, String> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT series, ts, value FROM chart_points WHERE host = ?1 AND bucket >= ?2
                 ORDER BY bucket, series",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(params![host, since.div_euclid(CHART_BUCKET_S)], |r| {
                Ok((r.get(0)?, r.get::<_, i64>(1)? as f64 / 1e9, r.get(2)?))
            })
            .map_err(sql)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql)
    }

    /// One host, by name.
    pub fn host(&self, name: &str) -> Result<Option<HostRow>, String> {
        self.conn
            .query_row(
                &format!("SELECT {HOST_COLUMNS} FROM hosts WHERE host = ?1"),
                [name],
                host_row,
            )
            .optional()
            .map_err(sql)
    }

    /// Open findings, worst first (then the longest-standing first); one host or all.
    pub fn open_findings(&self, host: Option<&str>) -> Result<Vec<FindingRow>, String> {
        self.findings(host, true)
    }

    /// Findings, open or cleared, worst first.
    pub fn findings(&self, host: Option<&str>, open_only: bool) -> Result<Vec<FindingRow>, String> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT f.host, f.check_name, f.subject, f.open, f.severity, f.state, f.raised_ts,
                        f.updated_ts, f.cleared_ts, f.summary, f.advice, f.data, f.received,
                        a.host IS NOT NULL, a.by, a.reason, a.created, a.until
                 FROM findings f LEFT JOIN acks a
                   ON a.host = f.host AND a.check_name = f.check_name AND a.subject = f.subject
                      AND (a.until IS NULL OR a.until > ?3)
                 WHERE (?1 IS NULL OR f.host = ?1) AND (?2 = 0 OR f.open = 1)
                 ORDER BY f.open DESC, f.severity DESC, f.raised_ts ASC, f.host, f.check_name,
                          f.subject",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(params![host, i64::from(open_only), now_epoch_s()], |r| {
                Ok(FindingRow {
                    host: r.get(0)?,
                    check: r.get(1)?,
                    subject: r.get(2)?,
                    open: r.get::<_, i64>(3)? != 0,
                    severity: r.get(4)?,
                    state: r.get(5)?,
                    raised_ts: r.get(6)?,
                    updated_ts: r.get(7)?,
                    cleared_ts: r.get(8)?,
                    summary: r.get(9)?,
                    advice: r.get(10)?,
                    data: r.get(11)?,
                    received: r.get(12)?,
                    ack: if r.get::<_, bool>(13)? {
                        Some(Ack {
                            by: r.get(14)?,
                            reason: r.get(15)?,
                            at: r.get(16)?,
                            until: r.get(17)?,
                        })
                    } else {
                        None
                    },
                })
            })
            .map_err(sql)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql)
    }

    /// Acknowledges one finding (on the page, and in alerting as a silence), until `until`
    /// (s) or for good; logged in `ack_log`. Works on a database a running collector writes
    /// to (WAL).
    /// `silences`: those already made for it (`[[url, id], …]`), stored with it in one
    /// transaction, so that the alerter never sees the ack without them.
    pub fn ack(
        &mut self,
        key: (&str, &str, &str),
        ack: &Ack,
        silences: &str,
    ) -> Result<(), String> {
        let (host, check, subject) = key;
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute(
            "INSERT INTO acks(host, check_name, subject, until, created, by, reason, silences)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT(host, check_name, subject) DO UPDATE SET
               until = excluded.until, created = excluded.created, by = excluded.by,
               reason = excluded.reason, silences = excluded.silences",
            params![
                host, check, subject, ack.until, ack.at, ack.by, ack.reason, silences
            ],
        )
        .map_err(sql)?;
        log_ack(&tx, "acknowledged", key, ack)?;
        tx.commit().map_err(sql)
    }

    /// Removes an ack; the silences it had (`[[url, id], …]`), `None` when there was none.
    pub fn unack(
        &mut self,
        key: (&str, &str, &str),
        by: &str,
        now: i64,
    ) -> Result<Option<String>, String> {
        let (host, check, subject) = key;
        let tx = self.conn.transaction().map_err(sql)?;
        let silences: Option<String> = tx
            .query_row(
                "DELETE FROM acks WHERE host = ?1 AND check_name = ?2 AND subject = ?3
                 RETURNING silences",
                params![host, check, subject],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        if silences.is_some() {
            let ack = Ack {
                by: by.to_owned(),
                reason: String::new(),
                at: now,
                until: None,
            };
            log_ack(&tx, "unacknowledged", key, &ack)?;
        }
        tx.commit().map_err(sql)?;
        Ok(silences)
    }

    /// Acks in force (for good, or until a time after `now`) without a silence recorded at
    /// Alertmanager `url`.
    pub fn acks_without_silence(&self, url: &str, now: i64) -> Result<Vec<AckedFinding>, String> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT host, check_name, subject, by, reason, created, until, silences FROM acks
                 WHERE until IS NULL OR until > ?1",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map([now], |r| {
                Ok((
                    (r.get(0)?, r.get(1)?, r.get(2)?),
                    Ack {
                        by: r.get(3)?,
                        reason: r.get(4)?,
                        at: r.get(5)?,
                        until: r.get(6)?,
                    },
                    r.get::<_, String>(7)?,
                ))
            })
            .map_err(sql)?;
        let mut out = Vec::new();
        for row in rows {
            let (key, ack, silences) = row.map_err(sql)?;
            let made: Vec<(String, String)> = serde_json::from_str(&silences).unwrap_or_default();
            if !made.iter().any(|(u, _)| u == url) {
                out.push((key, ack));
            }
        }
        Ok(out)
    }

    /// Records one more silence of an ack (`url`, `id`); false when the ack is gone (an
    /// unack came in between).
    pub fn add_ack_silence(
        &mut self,
        (host, check, subject): (&str, &str, &str),
        url: &str,
        id: &str,
    ) -> Result<bool, String> {
        let tx = self.conn.transaction().map_err(sql)?;
        let silences: Option<String> = tx
            .query_row(
                "SELECT silences FROM acks WHERE host = ?1 AND check_name = ?2 AND subject = ?3",
                params![host, check, subject],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        let Some(silences) = silences else {
            return Ok(false);
        };
        let mut made: Vec<(String, String)> = serde_json::from_str(&silences).unwrap_or_default();
        made.push((url.to_owned(), id.to_owned()));
        let made = serde_json::to_string(&made).map_err(|e| e.to_string())?;
        tx.execute(
            "UPDATE acks SET silences = ?4 WHERE host = ?1 AND check_name = ?2 AND subject = ?3",
            params![host, check, subject, made],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(true)
    }

    /// One finding by its key, open or cleared.
    pub fn finding(&self, key: (&str, &str, &str)) -> Result<Option<FindingRow>, String> {
        Ok(self
            .findings(Some(key.0), false)?
            .into_iter()
            .find(|f| f.check == key.1 && f.subject == key.2))
    }

    /// Whether the database has changed since the last call on this connection (another
    /// connection committed): `PRAGMA data_version`, cheap enough to poll.
    pub fn data_version(&self) -> Result<i64, String> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(sql)
    }

    /// Hosts whose last batch was received more than `intervals` heartbeat intervals ago
    /// (60 s when a host never said its interval), by name: (host, last seen).
    pub fn silent_hosts(&self, now: i64, intervals: f64) -> Result<Vec<(String, i64)>, String> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT host, last_seen FROM hosts
                 WHERE last_seen < ?1 - ?2 * coalesce(heartbeat_interval, 60.0)
                 ORDER BY host",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(params![now, intervals], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql)
    }

    /// Number of rows in `events` and `chunks` (pending rows of a batch being stored in
    /// parts included).
    pub fn counts(&self) -> Result<(i64, i64), String> {
        let n = |t: &str| -> Result<i64, String> {
            self.conn
                .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .map_err(sql)
        };
        Ok((n("events")?, n("chunks")?))
    }

    /// Commits on this connection no longer wait for the disk (`synchronous = NORMAL`: SQLite
    /// keeps the database whole across a crash, but its last commits may be lost); the
    /// [`WalSync`] returned makes them durable. What a commit stored must not be told stored
    /// (acked) before a [`WalSync::sync`] that began after the commit returned: so one sync
    /// serves all the commits made while the one before it ran, and the writer goes on with
    /// its next transaction meanwhile, instead of waiting for the disk in each commit.
    pub fn sync_commits_apart(&self, path: &Path) -> Result<WalSync, String> {
        // SQLite's name for the WAL: beside the database file once symbolic links are
        // resolved, as SQLite resolves them. The file stays the same while this connection
        // is open (SQLite deletes it when the last connection closes); checkpoints rewrite
        // and truncate it in place.
        let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut name = real.into_os_string();
        name.push("-wal");
        let wal = std::fs::File::open(&name)
            .map_err(|e| format!("{}: {e}", Path::new(&name).display()))?;
        self.conn
            .execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(sql)?;
        Ok(WalSync { wal })
    }

    /// Leaves checkpoints to a [`Checkpointer`]: a commit no longer copies the WAL into the
    /// database itself (SQLite's automatic checkpoint runs inside the commit that passes 1000
    /// pages, so every batch of that transaction waited for a second copy and sync of it).
    pub fn leave_checkpoints_to(&self, path: &Path) -> Result<Checkpointer, String> {
        let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(sql)?;
        conn.execute_batch("PRAGMA synchronous = FULL;")
            .map_err(sql)?;
        self.conn
            .execute_batch("PRAGMA wal_autocheckpoint = 0;")
            .map_err(sql)?;
        Ok(Checkpointer { conn })
    }

    /// The size SQLite cuts the WAL file back to when this connection starts it again.
    pub fn limit_wal(&self, bytes: u64) -> Result<(), String> {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        self.conn
            .query_row(&format!("PRAGMA journal_size_limit = {bytes}"), [], |_| {
                Ok(())
            })
            .map_err(sql)
    }

    /// Checkpoints the whole WAL into the database and waits until no reader uses it, so
    /// that the next transaction writes the WAL from its start again: what bounds the WAL
    /// under a load that never pauses. A PASSIVE checkpoint beside the writer never catches
    /// up with it (the writer appends while it copies), and SQLite restarts the WAL only when
    /// a transaction begins with every frame copied; without a pause the WAL grew for as long
    /// as the load lasted (the load bench: 5.3 GiB of WAL beside a 472 MiB database after
    /// 31 s). Blocks this connection's writes meanwhile, and waits for readers at most
    /// `wait`; `Ok(false)` when one still used the WAL then (the WAL goes on growing, to be
    /// restarted at the next try).
    pub fn restart_wal(&self, wait: Duration) -> Result<bool, String> {
        self.conn.busy_timeout(wait).map_err(sql)?;
        let busy = self
            .conn
            .query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0));
        self.conn.busy_timeout(WRITER_BUSY_TIMEOUT).map_err(sql)?;
        Ok(busy.map_err(sql)? == 0)
    }

    /// Checkpoints the WAL into the database (at shutdown).
    pub fn checkpoint(&self) -> Result<(), String> {
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(sql)
    }
}

/// The WAL of a writer whose commits do not sync it ([`Store::sync_commits_apart`]).
pub struct WalSync {
    wal: std::fs::File,
}

impl WalSync {
    /// Makes every commit that returned before this call durable: they are all in the WAL
    /// (in order), and its data is written to disk.
    pub fn sync(&self) -> std::io::Result<()> {
        self.wal.sync_data()
    }

    /// The same WAL through a descriptor of its own (one for the syncer, one for the writer).
    pub fn try_clone(&self) -> std::io::Result<WalSync> {
        Ok(WalSync {
            wal: self.wal.try_clone()?,
        })
    }

    /// The WAL file's size: the most it has held since it was last truncated (SQLite writes
    /// a restarted WAL from its start again and cuts the file to `journal_size_limit`).
    pub fn file_bytes(&self) -> std::io::Result<u64> {
        Ok(self.wal.metadata()?.len())
    }
}

/// A connection of its own that copies the WAL into the database beside the writer
/// (a PASSIVE checkpoint takes no write lock), so commits do not wait for it.
pub struct Checkpointer {
    conn: Connection,
}

impl Checkpointer {
    /// Copies what is committed into the database as far as readers allow; the frames of the
    /// WAL this makes free are reused once the writer's next transaction starts.
    pub fn passive(&self) -> Result<(), String> {
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(PASSIVE);")
            .map_err(sql)
    }
}

/// The columns [`host_row`] reads, in its order.
const HOST_COLUMNS: &str = "host, first_seen, last_seen, last_event_ts, version, peer, \
                            open_findings, worst_open, clock_skew";

fn host_row(r: &rusqlite::Row) -> rusqlite::Result<HostRow> {
    Ok(HostRow {
        host: r.get(0)?,
        first_seen: r.get(1)?,
        last_seen: r.get(2)?,
        last_event_ts: r.get(3)?,
        version: r.get(4)?,
        peer: r.get(5)?,
        open_findings: r.get(6)?,
        worst_open: r.get(7)?,
        clock_skew: r.get(8)?,
    })
}

/// Distinct hosts and checks [`Store::events`] looks up one by one; past this it reads
/// `names` whole.
const NAMES_LOOKED_UP: usize = 16;

/// An event's host or check as its row holds it: an id in `names`, or the text itself (a
/// database of an older release).
enum NameRef {
    Id(i64),
    Text(String),
}

/// The kinds of event rows: what `Filter::kinds` may name.
pub const KINDS: [&str; 5] = ["finding", "metrics", "agent", "zevent", "foreign"];

/// The agent version and the interval (s) a heartbeat's `data` names.
fn heartbeat_fields(data: &str) -> (Option<String>, Option<f64>) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(data) else {
        return (None, None);
    };
    let version = v
        .get("version")
        .and_then(|x| x.as_str())
        .map(|x| x.chars().take(64).collect());
    let interval = v
        .get("interval_s")
        .and_then(serde_json::Value::as_f64)
        .filter(|i| i.is_finite() && *i > 0.0);
    (version, interval)
}

/// Rows one `INSERT` of [`insert_rows`] stores: a statement's own work (opening a cursor on
/// the table and each of its six indexes, binding, finishing) is paid once for them.
const ROWS_PER_INSERT: usize = 16;

/// The columns of an `events` row as [`insert_rows`] binds them.
const EVENT_COLUMNS: usize = 12;

/// `INSERT OR FAIL INTO events … VALUES (…), …` of [`ROWS_PER_INSERT`] rows. `OR FAIL`, not
/// the default `ABORT`: a statement that may abort after writing a row (a later row's
/// constraint) makes SQLite keep a statement journal to undo it, and that journal went to a
/// temporary file, five times the writes of the WAL itself (`pwrite`s in the load bench:
/// 330,000 against 67,000). Nothing here is undone by the statement: a failed statement
/// fails the batch, and its whole transaction is rolled back.
static INSERT_MANY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let row = format!("({})", ["?"; EVENT_COLUMNS].join(", "));
    format!(
        "INSERT OR FAIL INTO events(ts, received, tag, kind, host_id, check_id, severity, state,
                            subject, summary, advice, data)
         VALUES {}",
        vec![row; ROWS_PER_INSERT].join(", ")
    )
});

/// Inserts `rows` into `events`, received at `now`, and their ids into `received_ranges`:
/// the ids they took, as runs of consecutive ids (one run, unless SQLite had to pick ids at
/// random past the largest).
fn insert_rows<'a>(tx: &Transaction, rows: &'a [Row], now: i64) -> Result<Vec<(i64, i64)>, String> {
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO events(ts, received, tag, kind, host_id, check_id, severity, state,
                                subject, summary, advice, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )
        .map_err(sql)?;
    // A batch names a host or two and a few checks: each looked up once.
    let mut ids: Vec<(&'a str, i64)> = Vec::new();
    let mut name_id = |name: &'a str| -> Result<i64, String> {
        if let Some((_, id)) = ids.iter().find(|(n, _)| *n == name) {
            return Ok(*id);
        }
        let id = name_id(tx, name)?;
        ids.push((name, id));
        Ok(id)
    };
    // SQLite gives a new row the largest id plus one while that fits (else it picks one at
    // random): so when the batch's ids fit after the largest, they are the next ones in
    // order, and rows can go several to a statement without asking each its id.
    let largest: i64 = tx
        .prepare_cached("SELECT coalesce(max(id), 0) FROM events")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(sql)?;
    let sequential = largest < i64::MAX - rows.len() as i64;
    let mut runs: Vec<(i64, i64)> = Vec::new();
    // Taken from the statement cache once, at the first full run: each fetch hashes its
    // text (some 800 bytes), and again when it goes back.
    let mut many: Option<CachedStatement> = None;
    let mut at = 0;
    while at < rows.len() {
        if sequential && rows.len() - at >= ROWS_PER_INSERT {
            let chunk = &rows[at..at + ROWS_PER_INSERT];
            let mut names = [(0i64, 0i64); ROWS_PER_INSERT];
            for (n, r) in names.iter_mut().zip(chunk) {
                *n = (name_id(&r.host)?, name_id(&r.check)?);
            }
            let mut values: Vec<&dyn rusqlite::ToSql> =
                Vec::with_capacity(EVENT_COLUMNS * ROWS_PER_INSERT);
            for (r, (host, check)) in chunk.iter().zip(&names) {
                values.extend_from_slice(&[
                    &r.ts as &dyn rusqlite::ToSql,
                    &now,
                    &r.tag,
                    &r.kind,
                    host,
                    check,
                    &r.severity,
                    &r.state,
                    &r.subject,
                    &r.summary,
                    &r.advice,
                    &r.data,
                ]);
            }
            if many.is_none() {
                many = Some(tx.prepare_cached(&INSERT_MANY).map_err(sql)?);
            }
            if let Some(many) = many.as_mut() {
                many.execute(rusqlite::params_from_iter(values))
                    .map_err(sql)?;
            }
            let expected = largest + (at + ROWS_PER_INSERT) as i64;
            let last = tx.last_insert_rowid();
            if last != expected {
                // Not what SQLite documents; refused rather than recorded wrong (the batch is
                // not acked, and its sender resends it).
                return Err(format!(
                    "events took ids up to {last}, not {expected} as expected"
                ));
            }
            match runs.last_mut() {
                Some((_, l)) if *l + ROWS_PER_INSERT as i64 == last => *l = last,
                _ => runs.push((last - ROWS_PER_INSERT as i64 + 1, last)),
            }
            at += ROWS_PER_INSERT;
            continue;
        }
        let r = &rows[at];
        let (host, check) = (name_id(&r.host)?, name_id(&r.check)?);
        let id = insert
            .insert(params![
                r.ts, now, r.tag, r.kind, host, check, r.severity, r.state, r.subject, r.summary,
                r.advice, r.data
            ])
            .map_err(sql)?;
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == id => *last = id,
            _ => runs.push((id, id)),
        }
        at += 1;
    }
    let first = runs.iter().map(|(first, _)| *first).min();
    let last = runs.iter().map(|(_, last)| *last).max();
    if let (Some(first), Some(last)) = (first, last) {
        tx.prepare_cached(&format!(
            "INSERT INTO received_ranges(received, first_id, last_id) VALUES (?1, ?2, ?3)
             {MERGE_RANGE}"
        ))
        .and_then(|mut s| s.execute([now, first, last]))
        .map_err(sql)?;
    }
    Ok(runs)
}

/// The id of a host's or a check's name in `names`, added if new.
fn name_id(tx: &Transaction, name: &str) -> Result<i64, String> {
    let found = tx
        .prepare_cached("SELECT id FROM names WHERE name = ?1")
        .and_then(|mut s| s.query_row([name], |r| r.get(0)).optional())
        .map_err(sql)?;
    match found {
        Some(id) => Ok(id),
        None => tx
            .prepare_cached("INSERT INTO names(name) VALUES (?1)")
            .and_then(|mut s| s.insert([name]))
            .map_err(sql),
    }
}

/// Deletes pending parts' rows and their marks; the number of rows deleted.
fn delete_parts(conn: &Connection, parts: &[(i64, i64)]) -> Result<u64, String> {
    let mut rows = conn
        .prepare_cached("DELETE FROM events WHERE id BETWEEN ?1 AND ?2")
        .map_err(sql)?;
    let mut mark = conn
        .prepare_cached("DELETE FROM pending_parts WHERE first_id = ?1")
        .map_err(sql)?;
    let mut n = 0;
    for (first, last) in parts {
        n += rows.execute([first, last]).map_err(sql)? as u64;
        mark.execute([first]).map_err(sql)?;
    }
    Ok(n)
}

/// Updates the current state of one finding from an event, with `upsert` the prepared
/// [`TRACK_FINDING`] (taken from the statement cache once a batch: each fetch hashes the
/// statement's text, and again when it goes back). An event older than the state already
/// stored (a late resend) changes nothing here; it is still in the history.
fn track_finding(upsert: &mut CachedStatement, r: &Row, now: i64) -> Result<(), String> {
    let open = i64::from(r.state.as_deref() != Some("cleared"));
    upsert
        .execute(params![
            r.host,
            r.check,
            r.subject,
            open,
            r.severity.unwrap_or(0),
            r.state,
            r.ts,
            r.summary,
            r.advice,
            r.data,
            now
        ])
        .map_err(sql)?;
    Ok(())
}

/// [`track_finding`]'s statement.
const TRACK_FINDING: &str = "
    INSERT INTO findings(host, check_name, subject, open, severity, state, raised_ts,
                         updated_ts, cleared_ts, summary, advice, data, received)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, CASE WHEN ?4 = 0 THEN ?7 END, ?8, ?9, ?10, ?11)
    ON CONFLICT(host, check_name, subject) DO UPDATE SET
      raised_ts = CASE WHEN excluded.open = 1 AND findings.open = 0
                       THEN excluded.raised_ts ELSE findings.raised_ts END,
      open = excluded.open,
      severity = excluded.severity,
      state = excluded.state,
      updated_ts = excluded.updated_ts,
      cleared_ts = excluded.cleared_ts,
      summary = excluded.summary,
      advice = excluded.advice,
      data = excluded.data,
      received = excluded.received
    WHERE excluded.updated_ts >= findings.updated_ts";

/// What `query` selects.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub host: Option<String>,
    pub check: Option<String>,
    /// At this severity or worse.
    pub min_severity: Option<i64>,
    pub kinds: Option<Vec<String>>,
    /// ns since the epoch.
    pub since_ts: Option<i64>,
    pub limit: usize,
    pub oldest_first: bool,
    /// Refused past [`SCAN_BUDGET`] (the web page and `/api/*`); else it may scan the table.
    pub bounded: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostRow {
    pub host: String,
    pub first_seen: i64,
    pub last_seen: i64,
    pub last_event_ts: i64,
    pub version: Option<String>,
    pub peer: String,
    pub open_findings: i64,
    pub worst_open: Option<i64>,
    /// The sender's clock minus the collector's, s, at its latest batch.
    pub clock_skew: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingRow {
    pub host: String,
    pub check: String,
    pub subject: String,
    pub open: bool,
    pub severity: i64,
    pub state: String,
    pub raised_ts: i64,
    pub updated_ts: i64,
    pub cleared_ts: Option<i64>,
    pub summary: String,
    pub advice: Option<String>,
    pub data: String,
    /// When the latest event of this finding was received, s.
    pub received: i64,
    /// Acknowledged (`zpulse-collector ack`), and the ack is not past its `until`.
    pub ack: Option<Ack>,
}

/// A finding's key (host, check, subject) and its ack.
pub type AckedFinding = ((String, String, String), Ack);

/// An acknowledgement: who, why, when (s) and until when (s; `None` for good).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ack {
    pub by: String,
    pub reason: String,
    pub at: i64,
    pub until: Option<i64>,
}

fn log_ack(
    tx: &Transaction,
    action: &str,
    (host, check, subject): (&str, &str, &str),
    ack: &Ack,
) -> Result<(), String> {
    tx.execute(
        "INSERT INTO ack_log(at, action, host, check_name, subject, by, reason, until)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            ack.at, action, host, check, subject, ack.by, ack.reason, ack.until
        ],
    )
    .map_err(sql)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows go several to a statement, yet each has the id and the values it was given,
    /// in order, and the batch's ids are one run in `received_ranges`; past the largest id
    /// SQLite can give, rows go one at a time and each still lands once.
    #[test]
    fn rows_inserted_several_at_once_keep_their_order_ids_and_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("db")).unwrap();
        let rows = |n: usize, host: &str| -> Vec<Row> {
            (0..n)
                .map(|i| {
                    let mut e = Event::metrics("disk", format!("sd{i}"), format!("row {i}"))
                        .with("n", i as u64);
                    e.host = host.into();
                    Row::from_event("zpulse.metrics", 1_000 + i as i64, &e, "p")
                })
                .collect()
        };
        // 37 rows: two full statements and five alone, after one row stored before.
        let first = Batch {
            rows: rows(1, "nas0"),
            ..Batch::default()
        };
        let batch = Batch {
            rows: rows(37, "nas1"),
            ..Batch::default()
        };
        store.store(&[first, batch], 500).unwrap();
        let got: Vec<(i64, i64, String, String)> = store
            .conn
            .prepare(
                "SELECT e.id, e.ts, e.summary, e.data FROM events e JOIN names n
                 ON n.id = e.host_id WHERE n.name = 'nas1' ORDER BY e.id",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got.len(), 37);
        for (i, (id, ts, summary, data)) in got.iter().enumerate() {
            assert_eq!(*id, 2 + i as i64);
            assert_eq!(*ts, 1_000 + i as i64);
            assert_eq!(summary, &format!("row {i}"));
            assert_eq!(data, &format!("{{\"n\":{i}}}"));
        }
        let ranges: Vec<(i64, i64, i64)> = store
            .conn
            .prepare("SELECT received, first_id, last_id FROM received_ranges")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ranges, [(500, 1, 38)]);
        // The largest id taken: new ones are picked at random, one row at a time.
        store
            .conn
            .execute(
                "UPDATE events SET id = 9223372036854775807 WHERE id = 38",
                [],
            )
            .unwrap();
        let tx = store.transaction().unwrap();
        let runs = insert_rows(&tx, &rows(20, "nas2"), 600).unwrap();
        tx.commit().unwrap();
        let ids: i64 = runs.iter().map(|(a, b)| b - a + 1).sum();
        assert_eq!(ids, 20);
        assert_eq!(store.counts().unwrap().0, 58);
    }

    /// A batch keeps its latest figure per chart point: the one of the newest event time,
    /// of the later row among equal times, whatever order the rows came in; one point per
    /// bucket and series.
    #[test]
    fn a_batch_charts_the_latest_figure_of_each_point() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("db")).unwrap();
        let s = 1_900_000_000i64 / CHART_BUCKET_S * CHART_BUCKET_S;
        let row = |t: i64, subject: &str, v: f64| {
            let mut e = Event::metrics("disk", subject, "d").with("busy_pct", v);
            e.host = "nas1".into();
            Row::from_event("zpulse.metrics", t * 1_000_000_000, &e, "p")
        };
        let batch = Batch {
            rows: vec![
                row(s + 10, "sda", 1.0),
                row(s + 30, "sdb", 2.0),
                row(s + 20, "sda", 3.0),
                row(s + 30, "sdb", 4.0),
                row(s + CHART_BUCKET_S, "sda", 5.0),
            ],
            ..Batch::default()
        };
        store.store(&[batch], s + 300).unwrap();
        let mut got = store.chart_points("nas1", 0).unwrap();
        got.sort_by(|a, b| (&a.0, a.1).partial_cmp(&(&b.0, b.1)).unwrap());
        let at = |t: i64| t as f64;
        assert_eq!(
            got,
            [
                ("disk sda busy_pct".to_owned(), at(s + 20), 3.0),
                ("disk sda busy_pct".to_owned(), at(s + CHART_BUCKET_S), 5.0),
                ("disk sdb busy_pct".to_owned(), at(s + 30), 4.0),
            ]
        );
    }

    /// An event's chart figures: each finite `_pct` field, named `check key` when the
    /// subject is the host (or none), `check subject key` otherwise; the row taken from
    /// the event as it is and from a copy of it alike.
    #[test]
    fn chart_points_are_the_finite_pct_fields_named_by_check_and_subject() {
        let mut e = Event::metrics("disk", "sdb", "disk figures")
            .with("busy_pct", 42.5)
            .with("read_iops", 7u64)
            .with("wait_pct", f64::NAN);
        e.host = "nas1".into();
        let owned = Row::from_owned_event("t", 5, e.clone(), "peer");
        assert_eq!(owned.points, [("disk sdb busy_pct".to_owned(), 42.5)]);
        assert_eq!(owned, Row::from_event("t", 5, &e, "peer"));
        assert_eq!(
            (
                owned.host.as_str(),
                owned.check.as_str(),
                owned.subject.as_str()
            ),
            ("nas1", "disk", "sdb")
        );
        // About the host itself, and a host named by the peer when the event names none.
        let mut e = Event::metrics("arc", "", "arc figures").with("hit_pct", 97.0);
        e.host = String::new();
        let row = Row::from_owned_event("t", 5, e, "nas2");
        assert_eq!(row.host, "nas2");
        assert_eq!(row.points, [("arc hit_pct".to_owned(), 97.0)]);
        let mut e = Event::metrics("arc", "nas3", "arc figures").with("hit_pct", 90.0);
        e.host = "nas3".into();
        assert_eq!(
            Row::from_owned_event("t", 5, e, "peer").points,
            [("arc hit_pct".to_owned(), 90.0)]
        );
    }
}
