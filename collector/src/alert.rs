//! Alerting: open findings at or above a severity, and hosts gone silent, go to Prometheus
//! Alertmanager through its API v2 (`POST /api/v2/alerts`, the `postableAlerts` body of
//! Alertmanager's OpenAPI spec `api/v2/openapi.yaml`), and every change of them to webhooks.
//! docs/alerting.md is the user's side of it (names, labels, acks, webhook bodies).
//!
//! Alertmanager is level-based: a client re-sends every active alert before its `endsAt`
//! passes, and sends `endsAt` in the past to resolve one. Each Alertmanager URL has a thread
//! of its own (an HA pair gets every alert, and one that is down or slow delays only
//! itself), which every [`POLL`] reads the state from the database when it changed and
//! posts the alerts that differ from what that Alertmanager was last told, and every
//! `resend_every` posts the state whole: open findings with `endsAt` four rounds ahead,
//! findings cleared recently with `endsAt` at their clearing, silent hosts as the
//! collector's own `collector.host-silent` finding. A collector or Alertmanager restart
//! loses nothing: the next round says it all again; alerts of a collector that died expire.
//! An acknowledged finding stays firing: its ack is a silence at the Alertmanagers
//! ([`create_silences`]), which Alertmanager shows as such, so the pager never hears a
//! "resolved" for something nobody fixed.
//!
//! Webhooks are edge-based instead: each webhook URL has a thread that reads every change
//! in the order it was stored (the finding events of the `events` table and the
//! `ack_log`, from a cursor kept per URL) and queues it in the database (`webhook_queue`, at
//! most `webhook_queue_max` per URL, oldest dropped first and logged), then POSTs the queue
//! in order as JSON with `X-Zpulse-Signature: sha256=HEX` (HMAC-SHA256 of the body with the
//! webhook's secret, RFC 2104); a failure is retried with backoff (2^attempts s, at most
//! 5 min), and an entry leaves the queue only on a 2xx. A receiver outage, or a collector
//! restart, loses nothing; forty changes in a second are forty posts.

use crate::http_client::{Auth, Endpoint, TlsFiles, Url};
use crate::query::utc;
use crate::store::{FindingRow, Store, severity_name};
use rusqlite::OptionalExtension;
use serde::Deserialize;
use serde_json::{Map, Value as Json, json};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The check of the collector's own finding for a host that stopped reporting.
pub const HOST_SILENT_CHECK: &str = "collector.host-silent";
/// Cleared findings are sent as resolved for this many rounds after their clearing.
const RESOLVED_ROUNDS: i64 = 10;
/// An active alert's `endsAt`, in rounds ahead (what Prometheus does, too).
const ENDS_AFTER_ROUNDS: i64 = 4;
/// How often the alerting threads look for changes in the database.
pub const POLL: Duration = Duration::from_millis(500);
/// The longest wait between attempts at an Alertmanager that failed.
const RETRY_MAX: Duration = Duration::from_secs(10);
/// A silence for an ack "for good" ends this far ahead (Alertmanager needs an end).
pub const SILENCE_FOR_GOOD_S: i64 = 365 * 86_400;
/// Where the docs are, for `runbook_url` (`alerting.runbook_base` replaces it).
pub const DEFAULT_RUNBOOK_BASE: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs");

/// `[alerting]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Alerting {
    /// `http(s)://HOST:PORT` of each Alertmanager; each gets every alert at `/api/v2/alerts`.
    pub alertmanagers: Vec<String>,
    /// CA, client certificate and key for `https://` Alertmanagers.
    pub alertmanager_tls: TlsFiles,
    pub alertmanager_auth: Option<Auth>,
    /// The collector's page as its users reach it (`https://collector.example`): the base of
    /// each alert's `generatorURL`. `None`: `http://` + the page's `http` address, if any.
    pub public_url: Option<String>,
    /// The docs' base URL: `runbook_url` is `{base}/checks/{plugin}.md`.
    pub runbook_base: String,
    /// Findings at this severity rank or worse are sent (0 info, 1 warning, 2 critical).
    pub min_severity: i64,
    /// The state is sent again this often.
    pub resend_every: Duration,
    /// A host is silent when nothing came from it for this many heartbeat intervals.
    pub silent_intervals: f64,
    pub webhooks: Vec<Webhook>,
    /// Queued webhook deliveries per URL, at most.
    pub webhook_queue_max: u64,
}

/// `[[alerting.webhook]]`: where to POST, and the HMAC key of the signature header.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    pub url: String,
    pub secret: String,
}

impl Eq for Alerting {}

impl Default for Alerting {
    fn default() -> Alerting {
        Alerting {
            alertmanagers: Vec::new(),
            alertmanager_tls: TlsFiles::default(),
            alertmanager_auth: None,
            public_url: None,
            runbook_base: DEFAULT_RUNBOOK_BASE.into(),
            min_severity: 1,
            resend_every: Duration::from_secs(60),
            silent_intervals: 3.0,
            webhooks: Vec::new(),
            webhook_queue_max: 10_000,
        }
    }
}

/// One URL or a list of them.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertingFile {
    alertmanager: Option<OneOrMany>,
    alertmanager_ca: Option<PathBuf>,
    alertmanager_cert: Option<PathBuf>,
    alertmanager_key: Option<PathBuf>,
    alertmanager_user: Option<String>,
    alertmanager_password: Option<String>,
    alertmanager_bearer_token: Option<String>,
    public_url: Option<String>,
    runbook_base: Option<String>,
    min_severity: Option<String>,
    resend_every: Option<String>,
    silent_intervals: Option<f64>,
    #[serde(default)]
    webhook: Vec<Webhook>,
    webhook_queue_max: Option<u64>,
}

impl AlertingFile {
    /// Relative paths are taken from `base`, the config file's directory.
    pub fn resolve(self, base: &Path) -> Result<Alerting, String> {
        let mut a = Alerting {
            alertmanagers: match self.alertmanager {
                None => Vec::new(),
                Some(OneOrMany::One(u)) => vec![u],
                Some(OneOrMany::Many(us)) => us,
            },
            alertmanager_tls: TlsFiles {
                ca: self.alertmanager_ca.map(|p| base.join(p)),
                cert: self.alertmanager_cert.map(|p| base.join(p)),
                key: self.alertmanager_key.map(|p| base.join(p)),
            },
            ..Alerting::default()
        };
        for url in &a.alertmanagers {
            Url::parse(url).map_err(|e| format!("alerting.alertmanager: {e}"))?;
        }
        if a.alertmanager_tls.cert.is_some() != a.alertmanager_tls.key.is_some() {
            return Err("alerting.alertmanager_cert and alertmanager_key: give both".into());
        }
        a.alertmanager_auth = match (
            self.alertmanager_user,
            self.alertmanager_password,
            self.alertmanager_bearer_token,
        ) {
            (None, None, None) => None,
            (Some(user), Some(password), None) => Some(Auth::Basic { user, password }),
            (None, None, Some(token)) => Some(Auth::Bearer(token)),
            _ => {
                return Err(
                    "alerting: give alertmanager_user with alertmanager_password, or \
                            alertmanager_bearer_token, not both"
                        .into(),
                );
            }
        };
        if let Some(u) = self.public_url {
            Url::parse(&u).map_err(|e| format!("alerting.public_url: {e}"))?;
            a.public_url = Some(u.trim_end_matches('/').to_owned());
        }
        if let Some(u) = self.runbook_base {
            a.runbook_base = u.trim_end_matches('/').to_owned();
        }
        if let Some(s) = self.min_severity {
            a.min_severity = crate::store::parse_severity(&s)
                .map_err(|e| format!("alerting.min_severity: {e}"))?;
        }
        if let Some(s) = self.resend_every {
            a.resend_every = crate::config::parse_duration(&s)
                .map_err(|e| format!("alerting.resend_every: {e}"))?;
            if a.resend_every.is_zero() {
                return Err("alerting.resend_every: more than 0s".into());
            }
        }
        for w in &self.webhook {
            Url::parse(&w.url).map_err(|e| format!("alerting.webhook.url: {e}"))?;
            if w.secret.len() < 16 {
                return Err(format!(
                    "alerting.webhook {}: secret: at least 16 characters",
                    w.url
                ));
            }
        }
        a.webhooks = self.webhook;
        a.webhook_queue_max = self.webhook_queue_max.unwrap_or(a.webhook_queue_max).max(1);
        if let Some(n) = self.silent_intervals {
            if !(n.is_finite() && n >= 1.0) {
                return Err("alerting.silent_intervals: at least 1".into());
            }
            a.silent_intervals = n;
        }
        Ok(a)
    }
}

impl Alerting {
    /// The Alertmanagers as endpoints (TLS files read, URLs checked).
    pub fn endpoints(&self) -> Result<Vec<Endpoint>, String> {
        self.alertmanagers
            .iter()
            .map(|u| {
                Endpoint::new(
                    u,
                    &self.alertmanager_tls,
                    self.alertmanager_auth.clone(),
                    "alerting.alertmanager",
                )
            })
            .collect()
    }
}

/// What an alert is about: (host, check, subject).
pub type FindingKey<'a> = (&'a str, &'a str, &'a str);

/// A CamelCase word of a `kebab-case.dotted` name: `raidz-width` → `RaidzWidth`.
fn camel(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut cs = w.chars();
            cs.next()
                .map(|c| c.to_ascii_uppercase().to_string() + &cs.as_str().to_ascii_lowercase())
                .unwrap_or_default()
        })
        .collect()
}

/// The pool states `zpool status` prints that `pool-health.state` raises on.
const POOL_STATES: &[&str] = &[
    "DEGRADED",
    "FAULTED",
    "OFFLINE",
    "REMOVED",
    "UNAVAIL",
    "SUSPENDED",
];

/// The `alertname` of a finding: one stable name per check and kind of finding, the table
/// of docs/alerting.md. `data` is the finding's figures (what tells the kinds apart).
pub fn alert_name(check: &str, data: &Json) -> String {
    let positive = |k: &str| data.get(k).and_then(Json::as_f64).is_some_and(|n| n > 0.0);
    let word = |k: &str| data.get(k).and_then(Json::as_str).unwrap_or("");
    let fixed = match check {
        "pool-health.state" => {
            let health = word("health").to_ascii_uppercase();
            return if POOL_STATES.contains(&health.as_str()) {
                format!("ZpoolState{}", camel(&health))
            } else {
                "ZpoolStateUnhealthy".into()
            };
        }
        "pool-health.errors" if positive("checksum_errors") => "ZpoolChecksumErrors",
        "pool-health.errors" => "ZpoolIoErrors",
        "pool-health.slow-ios" => "ZpoolSlowIos",
        "pool-health.data-errors" => "ZpoolDataErrors",
        "pool-health.resilver-errors" => "ZpoolResilverErrors",
        "pool-health.scan" => "ZpoolScan",
        "pool-health.scrub-age" => "ZpoolScrubOverdue",
        "pool-health.capacity" => "ZpoolCapacity",
        "pool-health.fragmentation" => "ZpoolFragmentation",
        "pool-health.spare" => "ZpoolSpare",
        "zevents.vdev-state" => {
            let state = word("vdev_state");
            return if state.is_empty() {
                "ZpoolDeviceState".into()
            } else {
                format!("ZpoolDevice{}", camel(state))
            };
        }
        "zevents.errors" if positive("data") => "ZpoolDataLost",
        "zevents.errors" if positive("checksum") => "ZpoolChecksumReports",
        "zevents.errors" => "ZpoolIoReports",
        "zevents.slow-io" if positive("deadman") => "ZpoolDeadman",
        "zevents.slow-io" => "ZpoolSlowIoReports",
        "zevents.scan" if word("scan") == "resilver" => "ZpoolResilverFailed",
        "zevents.scan" if word("scan") == "scrub" => "ZpoolScrubFoundErrors",
        "zevents.scan" => "ZpoolScrubCancelled",
        "zevents.probe" => "ZpoolProbeFailed",
        "zevents.pool" => "ZpoolExportedOrDestroyed",
        "zevents.change" => "ZpoolConfigChanged",
        "hdd-saturation" if data.get("seek_bound") == Some(&Json::Bool(true)) => "HddSeekBound",
        "hdd-saturation" => "HddSaturated",
        "arc-sizing" => "ArcSizing",
        "special-fill" => "SpecialVdevFilling",
        "special-fill.redundancy" => "SpecialVdevRedundancy",
        "special-fill.late" => "SpecialVdevFullSoon",
        "slog-usage" => "SlogUsage",
        "slog-usage.size" if word("sizing") == "undersized" => "SlogUndersized",
        "slog-usage.size" if word("sizing") == "oversized" => "SlogOversized",
        "slog-usage.size" => "SlogSize",
        "slog-usage.redundancy" => "SlogRedundancy",
        "slog-usage.device" => "SlogDevice",
        "l2arc-value" => "L2arcValue",
        HOST_SILENT_CHECK => "HostSilent",
        _ => "",
    };
    if !fixed.is_empty() {
        return fixed.into();
    }
    match check.strip_prefix("layout.") {
        Some(rest) => format!("Layout{}", camel(rest)),
        // Third-party checks and the agent's own findings.
        None => format!("Zpulse{}", camel(check)),
    }
}

/// The checks whose subject without a `/` is a pool (the others': a disk, or their word).
fn pool_level(check: &str) -> bool {
    [
        "pool-health",
        "zevents",
        "special-fill",
        "slog-usage",
        "layout",
    ]
    .iter()
    .any(|p| check == *p || check.strip_prefix(p).is_some_and(|r| r.starts_with('.')))
}

/// `pool`, `vdev` and `disk` of a finding, where they apply: from its figures first
/// (`data.pool`, `data.vdev`, `data.disk`), else from its subject (`pool`, `pool/class`,
/// `pool/class/vdev`, `pool/class/vdev/disk`, or a disk alone for `hdd-saturation`).
pub fn place(check: &str, subject: &str, data: &Json) -> [(&'static str, Option<String>); 3] {
    let from_data = |k: &str| {
        data.get(k)
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let parts: Vec<&str> = subject.split('/').collect();
    let (mut pool, mut vdev, mut disk) = (None, None, None);
    if parts.len() == 2 && check.starts_with("zevents") {
        // The zevents check names a device in its pool: `pool/sdb1`.
        pool = Some(parts[0].to_owned());
        disk = Some(parts[1].to_owned());
    } else if parts.len() > 1 {
        pool = Some(parts[0].to_owned());
        vdev = parts.get(2).map(|s| (*s).to_owned());
        disk = parts.get(3).map(|s| (*s).to_owned());
    } else if pool_level(check) {
        pool = Some(subject.to_owned());
    } else if check == "hdd-saturation" && !subject.is_empty() {
        disk = Some(subject.to_owned());
    }
    [
        ("pool", from_data("pool").or(pool)),
        ("vdev", from_data("vdev").or(vdev)),
        ("disk", from_data("disk").or(disk)),
    ]
}

/// `{public_url}/host/HOST#ANCHOR`: the finding on the collector's page.
pub fn finding_url(public_url: &str, (host, check, subject): FindingKey) -> String {
    format!(
        "{public_url}/host/{}#{}",
        crate::http::percent_encode(host),
        crate::http::finding_anchor(check, subject)
    )
}

/// The docs page of a check: `{base}/checks/{plugin}.md` for the shipped checks, the
/// alerting page's section for the collector's own finding; `None` for others.
pub fn runbook_url(base: &str, check: &str) -> Option<String> {
    const SHIPPED: &[&str] = &[
        "pool-health",
        "zevents",
        "layout",
        "hdd-saturation",
        "arc-sizing",
        "special-fill",
        "slog-usage",
        "l2arc-value",
    ];
    if check == HOST_SILENT_CHECK {
        return Some(format!("{base}/alerting.md#hostsilent"));
    }
    let plugin = check.split('.').next().unwrap_or(check);
    SHIPPED
        .contains(&plugin)
        .then(|| format!("{base}/checks/{plugin}.md"))
}

/// One alert as Alertmanager takes it, and whether it fires (else it resolves).
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub labels: Json,
    pub body: Json,
    pub firing: bool,
}

/// What one alert says: a finding or the collector's own.
struct Said<'a> {
    key: FindingKey<'a>,
    severity: i64,
    summary: &'a str,
    advice: Option<&'a str>,
    data: Json,
}

fn alert(said: Said, config: &Alerting, (starts, ends): (i64, i64), firing: bool) -> Alert {
    let (host, check, subject) = said.key;
    let mut labels = Map::new();
    labels.insert("alertname".into(), json!(alert_name(check, &said.data)));
    labels.insert("host".into(), json!(host));
    labels.insert("check".into(), json!(check));
    labels.insert("subject".into(), json!(subject));
    labels.insert("severity".into(), json!(severity_name(Some(said.severity))));
    for (name, value) in place(check, subject, &said.data) {
        if let Some(v) = value {
            labels.insert(name.into(), json!(v));
        }
    }
    let mut description = format!("{host}: {subject}: {}", said.summary);
    if let Some(figures) = said.data.as_object().filter(|m| !m.is_empty()) {
        let list: Vec<String> = figures.iter().map(|(k, v)| format!("{k}={v}")).collect();
        description.push_str(&format!(" ({})", list.join(", ")));
    }
    let mut annotations = json!({ "summary": said.summary, "description": description });
    if let Some(a) = said.advice {
        annotations["advice"] = json!(a);
    }
    if let Some(r) = runbook_url(&config.runbook_base, check) {
        annotations["runbook_url"] = json!(r);
    }
    let labels = Json::Object(labels);
    let mut body = json!({
        "labels": labels,
        "annotations": annotations,
        "startsAt": utc(starts),
        // Alertmanager refuses an end before the start.
        "endsAt": utc(ends.max(starts + 1)),
    });
    if let Some(base) = &config.public_url {
        body["generatorURL"] = json!(finding_url(base, said.key));
    }
    Alert {
        labels,
        body,
        firing,
    }
}

/// The alerts of one round: pure, from the findings (open and cleared), the silent hosts
/// (host, last seen) and the hosts that were silent last round and are not any more. An
/// acknowledged finding is an alert like any other: its silence mutes it.
pub fn round_alerts(
    findings: &[FindingRow],
    silent: &[(String, i64)],
    recovered: &BTreeSet<String>,
    config: &Alerting,
    now: i64,
) -> Vec<Alert> {
    let round = config.resend_every.as_secs().max(1) as i64;
    let mut out = Vec::new();
    for f in findings {
        if f.severity < config.min_severity {
            continue;
        }
        let starts = f.raised_ts.div_euclid(1_000_000_000).min(f.received);
        let (ends, firing) = if f.open {
            (now + ENDS_AFTER_ROUNDS * round, true)
        } else if now - f.received <= RESOLVED_ROUNDS * round {
            (f.received, false)
        } else {
            continue;
        };
        let said = Said {
            key: (&f.host, &f.check, &f.subject),
            severity: f.severity,
            summary: &f.summary,
            advice: f.advice.as_deref(),
            data: serde_json::from_str(&f.data).unwrap_or(Json::Null),
        };
        out.push(alert(said, config, (starts, ends), firing));
    }
    let silent_advice = "Check that the agent runs and can reach the collector.";
    for (host, last_seen) in silent {
        let summary = format!("{host} has sent nothing since {}", utc(*last_seen));
        let said = Said {
            key: (host, HOST_SILENT_CHECK, host),
            severity: 2,
            summary: &summary,
            advice: Some(silent_advice),
            data: Json::Null,
        };
        let span = (*last_seen, now + ENDS_AFTER_ROUNDS * round);
        out.push(alert(said, config, span, true));
    }
    for host in recovered {
        let summary = format!("{host} reports again");
        let said = Said {
            key: (host, HOST_SILENT_CHECK, host),
            severity: 2,
            summary: &summary,
            advice: None,
            data: Json::Null,
        };
        out.push(alert(said, config, (now - 1, now), false));
    }
    out
}

/// Runs the alerter: a thread per Alertmanager and one per webhook, until the process ends.
pub fn spawn(config: Alerting, db: PathBuf) -> Result<(), String> {
    for (url, endpoint) in config.alertmanagers.iter().zip(config.endpoints()?) {
        let mut sender = AlertmanagerSender::new(url, endpoint, &db)?;
        let (config, db) = (config.clone(), db.clone());
        std::thread::Builder::new()
            .name("alertmanager".into())
            .spawn(move || sender.run(&config, &db))
            .map_err(|e| e.to_string())?;
    }
    for w in &config.webhooks {
        let mut queue = WebhookQueue::open(&db)?;
        let store = Store::open_read_only(&db)?;
        let endpoint = Endpoint::new(&w.url, &TlsFiles::default(), None, "alerting.webhook")?;
        queue.start_cursor(&w.url)?;
        let (config, w) = (config.clone(), w.clone());
        std::thread::Builder::new()
            .name("webhook".into())
            .spawn(move || {
                loop {
                    let now = now_s();
                    if let Err(e) = queue
                        .feed(&store, &config, &w.url, now)
                        .and_then(|()| queue.deliver(&w, &endpoint, now))
                    {
                        crate::server::log(format!("webhook {}: {e}", w.url));
                    }
                    std::thread::sleep(POLL);
                }
            })
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// One Alertmanager's sender: what it was last told, and whether it answers.
struct AlertmanagerSender {
    endpoint: Endpoint,
    /// The URL as configured: what the acks' silences are recorded under.
    url: String,
    store: Store,
    /// Each alert's labels → its content when last sent (without the moving `endsAt`).
    told: HashMap<String, String>,
    /// Each finding's labels when last sent: a finding whose `alertname` (or place) changed
    /// has its old alert resolved.
    labels_of: HashMap<(String, String, String), Json>,
    silent_before: BTreeSet<String>,
    failing: bool,
}

impl AlertmanagerSender {
    fn new(url: &str, endpoint: Endpoint, db: &Path) -> Result<AlertmanagerSender, String> {
        Ok(AlertmanagerSender {
            endpoint,
            url: url.to_owned(),
            store: Store::open_read_only(db)?,
            told: HashMap::new(),
            labels_of: HashMap::new(),
            silent_before: BTreeSet::new(),
            failing: false,
        })
    }

    fn name(&self) -> String {
        let u = &self.endpoint.url;
        format!(
            "{}://{}{}",
            if u.tls { "https" } else { "http" },
            u.authority,
            u.path
        )
    }

    fn run(&mut self, config: &Alerting, db: &Path) {
        let mut version = None;
        let mut last_full: Option<Instant> = None;
        let mut last_look = Instant::now();
        loop {
            let due = last_full.is_none_or(|t| {
                t.elapsed()
                    >= if self.failing {
                        config.resend_every.min(RETRY_MAX)
                    } else {
                        config.resend_every
                    }
            });
            let v = self.store.data_version().ok();
            // Silence is a matter of time, not of writes: look again every few seconds.
            let changed = v != version || last_look.elapsed() >= Duration::from_secs(5);
            if due || (changed && !self.failing) {
                last_look = Instant::now();
                version = v;
                match self.round(config, db, due) {
                    Ok(posted) => {
                        if due {
                            last_full = Some(Instant::now());
                        }
                        if posted && self.failing {
                            self.failing = false;
                            crate::server::log(format!(
                                "alerting: {} reachable again",
                                self.name()
                            ));
                        }
                    }
                    Err(e) => {
                        last_full = Some(Instant::now());
                        self.told.clear();
                        if !self.failing {
                            self.failing = true;
                            crate::server::log(format!(
                                "alerting: {}: {e} (retrying; what it missed is resent whole)",
                                self.name()
                            ));
                        }
                    }
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// Posts the alerts that changed (all of them when `whole`); whether it posted anything.
    fn round(&mut self, config: &Alerting, db: &Path, whole: bool) -> Result<bool, String> {
        let now = now_s();
        // A database replaced under the collector (tests) is reopened on error.
        let findings = match self.store.findings(None, false) {
            Ok(f) => f,
            Err(_) => {
                self.store = Store::open_read_only(db)?;
                self.store.findings(None, false)?
            }
        };
        let silent = self.store.silent_hosts(now, config.silent_intervals)?;
        let silent_now: BTreeSet<String> = silent.iter().map(|(h, _)| h.clone()).collect();
        let recovered: BTreeSet<String> = self
            .silent_before
            .difference(&silent_now)
            .cloned()
            .collect();
        let mut alerts = round_alerts(&findings, &silent, &recovered, config, now);
        // Findings whose labels changed since they were last sent: resolve the old alert.
        let mut renamed = Vec::new();
        for a in &alerts {
            let key = (
                a.labels["host"].as_str().unwrap_or("").to_owned(),
                a.labels["check"].as_str().unwrap_or("").to_owned(),
                a.labels["subject"].as_str().unwrap_or("").to_owned(),
            );
            if let Some(old) = self.labels_of.insert(key, a.labels.clone())
                && old != a.labels
            {
                renamed.push(Alert {
                    body: json!({
                        "labels": old,
                        "startsAt": utc(now - 1),
                        "endsAt": utc(now),
                    }),
                    labels: old,
                    firing: false,
                });
            }
        }
        alerts.extend(renamed);
        // Forget what left the set (resolved long enough ago, or gone from the database), so
        // that the maps hold one round's alerts, not every alert ever sent.
        let current: BTreeSet<String> = alerts.iter().map(|a| a.labels.to_string()).collect();
        self.told.retain(|labels, _| current.contains(labels));
        self.labels_of
            .retain(|_, labels| current.contains(&labels.to_string()));
        let mut send = Vec::new();
        let mut told = Vec::new();
        for a in alerts {
            let labels = a.labels.to_string();
            let mut content = a.body.clone();
            if a.firing {
                content["endsAt"] = Json::Null;
            }
            let content = content.to_string();
            if whole || self.told.get(&labels) != Some(&content) {
                send.push(a.body);
                told.push((labels, content));
            }
        }
        self.silent_before = silent_now;
        if send.is_empty() {
            return Ok(false);
        }
        let body = serde_json::to_vec(&send).map_err(|e| e.to_string())?;
        let reply = self
            .endpoint
            .request("POST", "/api/v2/alerts", Some(&body), &[])?;
        if !reply.ok() {
            return Err(format!(
                "Alertmanager answered {}: {}",
                reply.status,
                String::from_utf8_lossy(&reply.body).trim()
            ));
        }
        self.told.extend(told);
        if whole {
            self.make_missing_silences(db, now);
        }
        Ok(true)
    }

    /// Acks made while this Alertmanager did not answer have no silence here: make them
    /// now that it does (at each full round), and record them with the ack.
    fn make_missing_silences(&mut self, db: &Path, now: i64) {
        let missing = match self.store.acks_without_silence(&self.url, now) {
            Ok(m) => m,
            Err(e) => return crate::server::log(format!("alerting: acks: {e}")),
        };
        for ((host, check, subject), ack) in missing {
            let key = (host.as_str(), check.as_str(), subject.as_str());
            let made = create_silence(&self.endpoint, key, &ack).and_then(|id| {
                if !Store::open(db)?.add_ack_silence(key, &self.url, &id)? {
                    // Unacked meanwhile: the silence goes too.
                    if let Some(e) = expire_silence(&self.endpoint, &self.url, &id) {
                        crate::server::log(format!("alerting: {e}"));
                    }
                }
                Ok(())
            });
            if let Err(e) = made {
                crate::server::log(format!(
                    "alerting: {}: no silence for the ack of {host} {check} {subject}: {e}",
                    self.name()
                ));
            }
        }
    }
}

/// The matchers of a finding's silence: the labels that name it, whatever its severity or
/// `alertname` becomes.
pub fn silence_matchers((host, check, subject): FindingKey) -> Json {
    json!([
        { "name": "host", "value": host, "isRegex": false, "isEqual": true },
        { "name": "check", "value": check, "isRegex": false, "isEqual": true },
        { "name": "subject", "value": subject, "isRegex": false, "isEqual": true },
    ])
}

/// The silences made for an ack: (Alertmanager URL, silence id) each.
pub type Silences = Vec<(String, String)>;

/// Creates the silence of an ack at one Alertmanager: its id.
fn create_silence(
    endpoint: &Endpoint,
    key: FindingKey,
    ack: &crate::store::Ack,
) -> Result<String, String> {
    let ends = ack.until.unwrap_or(ack.at + SILENCE_FOR_GOOD_S);
    let body = json!({
        "matchers": silence_matchers(key),
        "startsAt": utc(ack.at),
        "endsAt": utc(ends.max(ack.at + 1)),
        "createdBy": ack.by,
        "comment": ack.reason,
    })
    .to_string();
    let r = endpoint.request("POST", "/api/v2/silences", Some(body.as_bytes()), &[])?;
    let answer: Json = serde_json::from_slice(&r.body).unwrap_or(Json::Null);
    match answer["silenceID"].as_str() {
        Some(id) if r.ok() => Ok(id.to_owned()),
        _ => Err(format!(
            "answered {}: {}",
            r.status,
            String::from_utf8_lossy(&r.body).trim()
        )),
    }
}

/// Creates the silence of an ack at each Alertmanager: those made, and an error for each
/// Alertmanager that refused or could not be reached (the alerter makes those when the
/// Alertmanager answers again: [`AlertmanagerSender`]).
pub fn create_silences(
    config: &Alerting,
    key: FindingKey,
    ack: &crate::store::Ack,
) -> Result<(Silences, Vec<String>), String> {
    let mut made = Vec::new();
    let mut failed = Vec::new();
    for (url, endpoint) in config.alertmanagers.iter().zip(config.endpoints()?) {
        match create_silence(&endpoint, key, ack) {
            Ok(id) => made.push((url.clone(), id)),
            Err(e) => failed.push(format!("{url}: {e}")),
        }
    }
    Ok((made, failed))
}

/// Expires silences (`[[url, id], …]` as stored); an error for each that failed.
pub fn expire_silences(config: &Alerting, silences: &str) -> Vec<String> {
    let list: Silences = serde_json::from_str(silences).unwrap_or_default();
    let mut failed = Vec::new();
    for (url, id) in list {
        let endpoint = Endpoint::new(
            &url,
            &config.alertmanager_tls,
            config.alertmanager_auth.clone(),
            "alerting.alertmanager",
        );
        match endpoint {
            Ok(e) => failed.extend(expire_silence(&e, &url, &id)),
            Err(e) => failed.push(format!("{url} silence {id}: {e}")),
        }
    }
    failed
}

/// `DELETE /api/v2/silence/ID` at one Alertmanager: `None` when done, else what went wrong.
fn expire_silence(endpoint: &Endpoint, url: &str, id: &str) -> Option<String> {
    let outcome = endpoint
        .request("DELETE", &format!("/api/v2/silence/{id}"), None, &[])
        .and_then(|r| {
            if r.ok() {
                Ok(())
            } else {
                Err(format!("answered {}", r.status))
            }
        });
    outcome.err().map(|e| format!("{url} silence {id}: {e}"))
}

/// `sha256=HEX`: the HMAC-SHA256 of `body` keyed with `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// The webhook side: what each URL was last told per (host, check, subject), how far it
/// read the changes, and the queue.
pub struct WebhookQueue {
    conn: rusqlite::Connection,
}

const WEBHOOK_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS webhook_state (
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    check_name TEXT NOT NULL,
    subject TEXT NOT NULL,
    firing INTEGER NOT NULL,
    PRIMARY KEY (url, host, check_name, subject)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS webhook_queue (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_try INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_queue_url ON webhook_queue(url, id);
CREATE TABLE IF NOT EXISTS webhook_cursor (
    url TEXT PRIMARY KEY,
    event_id INTEGER NOT NULL,
    ack_id INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Changes read per feed, at most (the rest the next one).
const FEED_BATCH: i64 = 1000;

fn sql(e: rusqlite::Error) -> String {
    format!("SQLite: {e}")
}

/// One change a webhook is told of, in the order it was stored.
enum Change {
    /// A finding event: (host, check, subject), state, severity, summary, advice, ts (ns),
    /// data.
    Finding {
        key: (String, String, String),
        state: String,
        severity: i64,
        summary: String,
        advice: Option<String>,
        ts: i64,
        data: String,
    },
    /// An ack or unack: the `ack_log` row.
    Ack {
        key: (String, String, String),
        action: String,
        by: String,
        reason: String,
        at: i64,
        until: Option<i64>,
    },
}

impl WebhookQueue {
    pub fn open(db: &Path) -> Result<WebhookQueue, String> {
        // The server created the database (WAL) before the alerter starts.
        let conn = rusqlite::Connection::open(db).map_err(|e| format!("{}: {e}", db.display()))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(sql)?;
        conn.execute_batch(WEBHOOK_SCHEMA).map_err(sql)?;
        Ok(WebhookQueue { conn })
    }

    /// Entries queued for `url`.
    pub fn queued(&self, url: &str) -> Result<u64, String> {
        self.conn
            .query_row(
                "SELECT count(*) FROM webhook_queue WHERE url = ?1",
                [url],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(sql)
    }

    /// A webhook new to this database starts with the changes from now on (not the
    /// history); one it knows goes on where it stopped.
    fn start_cursor(&self, url: &str) -> Result<(), String> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO webhook_cursor(url, event_id, ack_id) VALUES (?1,
                   (SELECT coalesce(max(id), 0) FROM events),
                   (SELECT coalesce(max(id), 0) FROM ack_log))",
                [url],
            )
            .map_err(sql)?;
        Ok(())
    }

    /// The changes after the cursor, in the order they were stored (events and acks by
    /// receive time, events first within a second), and the cursor after them.
    fn changes(&self, url: &str) -> Result<(Vec<Change>, i64, i64), String> {
        let (mut event_id, mut ack_id): (i64, i64) = self
            .conn
            .query_row(
                "SELECT event_id, ack_id FROM webhook_cursor WHERE url = ?1",
                [url],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(sql)?;
        // Read up to the newest row now, so that the cursor can pass the rows that are no
        // findings (metrics, heartbeats: most of the table) once, not at every look.
        // Never past the first row of a batch still being stored in parts: it is not stored
        // until its last part commits (and is deleted if that never happens), and the cursor
        // must not pass it meanwhile.
        let events_end: i64 = self
            .conn
            .query_row(
                "SELECT min(coalesce((SELECT max(id) FROM events), 0),
                            coalesce((SELECT min(first_id) - 1 FROM pending_parts),
                                     9223372036854775807))",
                [],
                |r| r.get(0),
            )
            .map_err(sql)?;
        let acks_end: i64 = self
            .conn
            .query_row("SELECT coalesce(max(id), 0) FROM ack_log", [], |r| r.get(0))
            .map_err(sql)?;
        let mut timed: Vec<(i64, u8, i64, Change)> = Vec::new();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, received, (SELECT name FROM names WHERE id = host_id),
                        (SELECT name FROM names WHERE id = check_id), subject, state, severity,
                        summary, advice, ts, data
                 FROM events WHERE id > ?1 AND id <= ?4 AND state IS NOT NULL
                   AND kind IN ('finding', 'agent')
                   AND check_id IS NOT (SELECT id FROM names WHERE name = ?2)
                 ORDER BY id LIMIT ?3",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(
                rusqlite::params![
                    event_id,
                    crate::store::HEARTBEAT_CHECK,
                    FEED_BATCH,
                    events_end
                ],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        Change::Finding {
                            key: (r.get(2)?, r.get(3)?, r.get(4)?),
                            state: r.get(5)?,
                            severity: r.get::<_, Option<i64>>(6)?.unwrap_or(0),
                            summary: r.get(7)?,
                            advice: r.get(8)?,
                            ts: r.get(9)?,
                            data: r.get(10)?,
                        },
                    ))
                },
            )
            .map_err(sql)?;
        let mut found = 0;
        for row in rows {
            let (id, received, change) = row.map_err(sql)?;
            event_id = event_id.max(id);
            timed.push((received, 0, id, change));
            found += 1;
        }
        // A full batch: the rest the next time, from its last row; else all was read.
        if found < FEED_BATCH {
            event_id = event_id.max(events_end);
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, at, action, host, check_name, subject, by, reason, until
                 FROM ack_log WHERE id > ?1 AND id <= ?3 ORDER BY id LIMIT ?2",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(rusqlite::params![ack_id, FEED_BATCH, acks_end], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    Change::Ack {
                        action: r.get(2)?,
                        key: (r.get(3)?, r.get(4)?, r.get(5)?),
                        by: r.get(6)?,
                        reason: r.get(7)?,
                        at: r.get(1)?,
                        until: r.get(8)?,
                    },
                ))
            })
            .map_err(sql)?;
        for row in rows {
            let (id, at, change) = row.map_err(sql)?;
            // With events left to read, acks wait: they may come after those events.
            if found == FEED_BATCH {
                break;
            }
            ack_id = ack_id.max(id);
            timed.push((at, 1, id, change));
        }
        timed.sort_by_key(|(t, source, id, _)| (*t, *source, *id));
        Ok((
            timed.into_iter().map(|(.., c)| c).collect(),
            event_id,
            ack_id,
        ))
    }

    /// Queues every change since the last feed, in order, and the silent hosts' changes.
    fn feed(
        &mut self,
        store: &Store,
        config: &Alerting,
        url: &str,
        now: i64,
    ) -> Result<(), String> {
        let (changes, event_id, ack_id) = self.changes(url)?;
        let silent = store.silent_hosts(now, config.silent_intervals)?;
        let tx = self.conn.transaction().map_err(sql)?;
        let is_firing = |(h, c, s): &(String, String, String)| -> Result<bool, String> {
            tx.query_row(
                "SELECT 1 FROM webhook_state WHERE url = ?1 AND host = ?2 AND check_name = ?3
                   AND subject = ?4 AND firing = 1",
                rusqlite::params![url, h, c, s],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(sql)
        };
        let set_firing = |(h, c, s): &(String, String, String), on: bool| {
            let q = if on {
                "INSERT OR REPLACE INTO webhook_state(url, host, check_name, subject, firing)
                 VALUES (?1, ?2, ?3, ?4, 1)"
            } else {
                "DELETE FROM webhook_state WHERE url = ?1 AND host = ?2 AND check_name = ?3
                   AND subject = ?4"
            };
            tx.execute(q, rusqlite::params![url, h, c, s])
                .map(|_| ())
                .map_err(sql)
        };
        let queue = |body: &Json| {
            tx.execute(
                "INSERT INTO webhook_queue(url, body, next_try) VALUES (?1, ?2, ?3)",
                rusqlite::params![url, body.to_string(), now],
            )
            .map(|_| ())
            .map_err(sql)
        };
        for change in changes {
            match change {
                Change::Finding {
                    key,
                    state,
                    severity,
                    summary,
                    advice,
                    ts,
                    data,
                } => {
                    let firing = is_firing(&key)?;
                    let data: Json = serde_json::from_str(&data).unwrap_or(Json::Null);
                    let (h, c, s) = (&key.0, &key.1, &key.2);
                    let mut body = json!({
                        "host": h, "check": c, "subject": s,
                        "alertname": alert_name(c, &data),
                        "severity": severity_name(Some(severity)),
                        "summary": summary, "advice": advice,
                        "at": utc(ts.div_euclid(1_000_000_000)),
                    });
                    if let Some(base) = &config.public_url {
                        body["url"] = json!(finding_url(base, (h, c, s)));
                    }
                    let event = if state == "cleared" {
                        firing.then_some("cleared")
                    } else if severity < config.min_severity {
                        // Now below what this webhook is told of: for it, that is a clear.
                        firing.then_some("cleared")
                    } else if firing {
                        Some("updated")
                    } else {
                        Some("raised")
                    };
                    let Some(event) = event else { continue };
                    body["event"] = json!(event);
                    body[if event == "cleared" { "cleared" } else { event }] = body["at"].clone();
                    queue(&body)?;
                    set_firing(&key, event != "cleared")?;
                }
                Change::Ack {
                    key,
                    action,
                    by,
                    reason,
                    at,
                    until,
                } => {
                    // Only about what this webhook was told is firing.
                    if !is_firing(&key)? {
                        continue;
                    }
                    queue(&json!({
                        "event": action, "host": key.0, "check": key.1, "subject": key.2,
                        "by": by, "reason": reason, "at": utc(at),
                        "until": until.map(utc),
                    }))?;
                }
            }
        }
        tx.execute(
            "UPDATE webhook_cursor SET event_id = ?2, ack_id = ?3 WHERE url = ?1",
            rusqlite::params![url, event_id, ack_id],
        )
        .map_err(sql)?;
        // Silent hosts: a change of the set is a raise or a clear.
        let was_silent: BTreeSet<String> = {
            let mut stmt = tx
                .prepare(
                    "SELECT host FROM webhook_state WHERE url = ?1 AND check_name = ?2
                       AND firing = 1",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(rusqlite::params![url, HOST_SILENT_CHECK], |r| r.get(0))
                .map_err(sql)?;
            rows.collect::<Result<_, _>>().map_err(sql)?
        };
        let silent_now: BTreeSet<String> = silent.iter().map(|(h, _)| h.clone()).collect();
        for (host, last_seen) in &silent {
            if !was_silent.contains(host) {
                let mut body = json!({
                    "event": "raised", "host": host, "check": HOST_SILENT_CHECK,
                    "subject": host, "alertname": alert_name(HOST_SILENT_CHECK, &Json::Null),
                    "severity": "critical",
                    "summary": format!("{host} has sent nothing since {}", utc(*last_seen)),
                    "at": utc(now),
                });
                body["raised"] = body["at"].clone();
                queue(&body)?;
                set_firing(
                    &(host.clone(), HOST_SILENT_CHECK.into(), host.clone()),
                    true,
                )?;
            }
        }
        for host in was_silent.difference(&silent_now) {
            queue(&json!({
                "event": "cleared", "host": host, "check": HOST_SILENT_CHECK, "subject": host,
                "alertname": alert_name(HOST_SILENT_CHECK, &Json::Null),
                "at": utc(now), "cleared": utc(now),
            }))?;
            set_firing(
                &(host.clone(), HOST_SILENT_CHECK.into(), host.clone()),
                false,
            )?;
        }
        let max = config.webhook_queue_max;
        let dropped = tx
            .execute(
                "DELETE FROM webhook_queue WHERE url = ?1 AND id NOT IN
                   (SELECT id FROM webhook_queue WHERE url = ?1 ORDER BY id DESC LIMIT ?2)",
                rusqlite::params![url, max as i64],
            )
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        if dropped > 0 {
            crate::server::log(format!(
                "webhook {url}: queue over webhook_queue_max ({max}): {dropped} oldest dropped"
            ));
        }
        Ok(())
    }

    /// POSTs the due entries of one webhook in order; stops at the first failure (order is
    /// kept), which is retried after 2^attempts s (at most 300).
    fn deliver(&mut self, w: &Webhook, endpoint: &Endpoint, now: i64) -> Result<(), String> {
        loop {
            let next: Option<(i64, String, i64, i64)> = self
                .conn
                .query_row(
                    "SELECT id, body, attempts, next_try FROM webhook_queue WHERE url = ?1
                     ORDER BY id LIMIT 1",
                    [&w.url],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()
                .map_err(sql)?;
            let Some((id, body, attempts, next_try)) = next else {
                return Ok(());
            };
            if next_try > now {
                return Ok(());
            }
            let sig = signature(&w.secret, body.as_bytes());
            match endpoint.request(
                "POST",
                "",
                Some(body.as_bytes()),
                &[("X-Zpulse-Signature", sig)],
            ) {
                Ok(reply) if reply.ok() => {
                    self.conn
                        .execute("DELETE FROM webhook_queue WHERE id = ?1", [id])
                        .map_err(sql)?;
                    if attempts > 0 {
                        crate::server::log(format!("webhook {}: reachable again", w.url));
                    }
                }
                outcome => {
                    let wait = 1i64 << (attempts + 1).min(8);
                    self.conn
                        .execute(
                            "UPDATE webhook_queue SET attempts = attempts + 1, next_try = ?2 WHERE id = ?1",
                            rusqlite::params![id, now + wait.min(300)],
                        )
                        .map_err(sql)?;
                    if attempts == 0 {
                        crate::server::log(format!(
                            "webhook {}: {} (retrying with backoff; queued: {})",
                            w.url,
                            match outcome {
                                Ok(reply) => format!("answered {}", reply.status),
                                Err(e) => e,
                            },
                            self.queued(&w.url).unwrap_or(0)
                        ));
                    }
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of `n` events for `host`, the first a raised finding of `check` on `tank`.
    fn batch(host: &str, check: &str, n: usize) -> crate::store::Batch {
        use zpulse_proto::event::{Event, Severity, State};
        let rows = (0..n)
            .map(|i| {
                let mut e = if i == 0 {
                    Event::finding(check, State::Raised, Severity::Critical, "tank", "bad")
                } else {
                    Event::metrics("disk", "sda", "figures").with("seq", i as u64)
                };
                e.host = host.into();
                crate::store::Row::from_event("zpulse", 1_900_000_000_000_000_000, &e, host)
            })
            .collect();
        crate::store::Batch {
            rows,
            peer: "127.0.0.1".into(),
            ..Default::default()
        }
    }

    #[test]
    fn webhooks_see_a_batch_stored_in_parts_only_once_its_last_part_commits() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("events.db");
        let mut store = Store::open(&db).unwrap();
        let queue = WebhookQueue::open(&db).unwrap();
        let url = "http://127.0.0.1:1/hook";
        queue.start_cursor(url).unwrap();
        let keys = |changes: Vec<Change>| -> Vec<String> {
            changes
                .into_iter()
                .filter_map(|c| match c {
                    Change::Finding { key, .. } => Some(format!("{} {}", key.0, key.1)),
                    Change::Ack { .. } => None,
                })
                .collect()
        };
        // A heavy batch's first part, pending; then a light batch, stored after it.
        let heavy = batch("nas1", "pool-health", 6);
        let tx = store.transaction().unwrap();
        let part = Store::apply_part(&tx, &heavy, 0..3, &[], 100).unwrap();
        tx.commit().unwrap();
        let crate::store::Part::Pending(earlier) = part else {
            panic!("{part:?}")
        };
        store
            .store(&[batch("nas2", "special-fill", 1)], 100)
            .unwrap();
        // The cursor stops before the pending rows, so the light batch waits too...
        let (changes, event_id, _) = queue.changes(url).unwrap();
        assert!(changes.is_empty());
        assert_eq!(event_id, 0);
        // ...until the heavy batch's last part commits: then both, in the order stored.
        let tx = store.transaction().unwrap();
        let done = Store::apply_part(&tx, &heavy, 3..6, &earlier, 101).unwrap();
        tx.commit().unwrap();
        assert_eq!(
            done,
            crate::store::Part::Done(crate::store::Outcome::Stored(6))
        );
        let (changes, _, _) = queue.changes(url).unwrap();
        assert_eq!(keys(changes), ["nas1 pool-health", "nas2 special-fill"]);
    }

    #[test]
    fn alert_names_follow_the_documented_table() {
        let n = |check: &str, data: Json| alert_name(check, &data);
        assert_eq!(
            n("pool-health.state", json!({"health": "DEGRADED"})),
            "ZpoolStateDegraded"
        );
        assert_eq!(
            n("pool-health.state", json!({"health": "x]y"})),
            "ZpoolStateUnhealthy"
        );
        assert_eq!(
            n(
                "pool-health.errors",
                json!({"checksum_errors": 3, "read_errors": 0})
            ),
            "ZpoolChecksumErrors"
        );
        assert_eq!(
            n(
                "pool-health.errors",
                json!({"checksum_errors": 0, "read_errors": 2})
            ),
            "ZpoolIoErrors"
        );
        assert_eq!(
            n("hdd-saturation", json!({"seek_bound": true})),
            "HddSeekBound"
        );
        assert_eq!(
            n("hdd-saturation", json!({"seek_bound": false})),
            "HddSaturated"
        );
        assert_eq!(
            n("zevents.vdev-state", json!({"vdev_state": "OFFLINE"})),
            "ZpoolDeviceOffline"
        );
        assert_eq!(
            n("zevents.errors", json!({"checksum": 2, "data": 1})),
            "ZpoolDataLost"
        );
        assert_eq!(
            n("zevents.errors", json!({"checksum": 2})),
            "ZpoolChecksumReports"
        );
        assert_eq!(
            n("zevents.scan", json!({"scan": "resilver"})),
            "ZpoolResilverFailed"
        );
        assert_eq!(n("zevents.scan", Json::Null), "ZpoolScrubCancelled");
        assert_eq!(n("layout.raidz-width", Json::Null), "LayoutRaidzWidth");
        assert_eq!(n("my-plugin.too_hot", Json::Null), "ZpulseMyPluginTooHot");
        assert_eq!(n(HOST_SILENT_CHECK, Json::Null), "HostSilent");
    }

    #[test]
    fn places_from_subjects_and_figures() {
        let p =
            |check: &str, subject: &str, data: Json| place(check, subject, &data).map(|(_, v)| v);
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(
            p("pool-health.errors", "tank/normal/mirror-0/sdc", Json::Null),
            [s("tank"), s("mirror-0"), s("sdc")]
        );
        assert_eq!(
            p("pool-health.state", "tank", Json::Null),
            [s("tank"), None, None]
        );
        assert_eq!(
            p("zevents.vdev-state", "tank/sdb1", Json::Null),
            [s("tank"), None, s("sdb1")]
        );
        assert_eq!(
            p("zevents.scan", "tank", Json::Null),
            [s("tank"), None, None]
        );
        assert_eq!(
            p("hdd-saturation", "sdc", Json::Null),
            [None, None, s("sdc")]
        );
        assert_eq!(p("arc-sizing", "arc", Json::Null), [None, None, None]);
        assert_eq!(
            p("slog-usage.device", "tank/log", json!({"disk": "nvme0n1"})),
            [s("tank"), None, s("nvme0n1")]
        );
    }
}
