//! Alerting: open findings at or above a severity, and hosts gone silent, go to Prometheus
//! Alertmanager through its API v2 (`POST /api/v2/alerts`, the `postableAlerts` body of
//! Alertmanager's OpenAPI spec `api/v2/openapi.yaml`).
//!
//! Alertmanager is level-based: a client re-sends every active alert before its `endsAt`
//! passes, and sends `endsAt` in the past to resolve one. So the alerter keeps no queue of
//! its own: every `resend_every` it reads the current state from the database and sends it
//! whole: open findings (not acknowledged) with `endsAt` four rounds ahead, findings cleared
//! or acknowledged recently with `endsAt` at their clearing, silent hosts as the
//! collector's own `collector.host-silent` finding. A collector or Alertmanager restart
//! loses nothing: the next round says it all again; alerts of a collector that died expire.
//!
//! Labels: `alertname="zpulse"`, `host`, `check`, `subject`, `severity`; annotations:
//! `summary`, `advice`.
//!
//! Webhooks are edge-based instead: each change (raised, cleared) of what would be alerted
//! is queued in the database (`webhook_queue`, at most `webhook_queue_max` per URL, oldest
//! dropped first and logged) and POSTed in order as JSON with
//! `X-Zpulse-Signature: sha256=HEX` (HMAC-SHA256 of the body with the webhook's secret,
//! RFC 2104); a failure is retried with backoff (2^attempts s, at most 5 min), and an entry
//! leaves the queue only on a 2xx. A receiver outage, or a collector restart, loses nothing.

use crate::query::utc;
use crate::store::{FindingRow, Store, severity_name};
use rusqlite::OptionalExtension;
use serde::Deserialize;
use serde_json::{Value as Json, json};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The check of the collector's own finding for a host that stopped reporting.
pub const HOST_SILENT_CHECK: &str = "collector.host-silent";
/// Cleared findings are sent as resolved for this many rounds after their clearing.
const RESOLVED_ROUNDS: i64 = 10;
/// An active alert's `endsAt`, in rounds ahead (what Prometheus does, too).
const ENDS_AFTER_ROUNDS: i64 = 4;
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// `[alerting]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Alerting {
    /// `http://HOST:PORT` of an Alertmanager; alerts are POSTed to `/api/v2/alerts`.
    pub alertmanager: Option<String>,
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
            alertmanager: None,
            min_severity: 1,
            resend_every: Duration::from_secs(60),
            silent_intervals: 3.0,
            webhooks: Vec::new(),
            webhook_queue_max: 10_000,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertingFile {
    alertmanager: Option<String>,
    min_severity: Option<String>,
    resend_every: Option<String>,
    silent_intervals: Option<f64>,
    #[serde(default)]
    webhook: Vec<Webhook>,
    webhook_queue_max: Option<u64>,
}

impl AlertingFile {
    pub fn resolve(self, _base: &Path) -> Result<Alerting, String> {
        let mut a = Alerting {
            alertmanager: self.alertmanager,
            ..Alerting::default()
        };
        if let Some(url) = &a.alertmanager {
            HttpUrl::parse(url).map_err(|e| format!("alerting.alertmanager: {e}"))?;
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
            HttpUrl::parse(&w.url).map_err(|e| format!("alerting.webhook.url: {e}"))?;
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

/// What an alert is about: (host, check, subject).
type AlertKey<'a> = (&'a str, &'a str, &'a str);

/// One alert as Alertmanager takes it; `span` is (starts, ends), s.
fn alert(
    (host, check, subject): AlertKey,
    severity: i64,
    summary: &str,
    advice: Option<&str>,
    (starts, ends): (i64, i64),
) -> Json {
    let mut annotations = json!({ "summary": summary });
    if let Some(a) = advice {
        annotations["advice"] = json!(a);
    }
    json!({
        "labels": {
            "alertname": "zpulse",
            "host": host,
            "check": check,
            "subject": subject,
            "severity": severity_name(Some(severity)),
        },
        "annotations": annotations,
        "startsAt": utc(starts),
        // Alertmanager refuses an end before the start.
        "endsAt": utc(ends.max(starts + 1)),
    })
}

/// The alerts of one round: pure, from the findings (open and cleared), the silent hosts
/// (host, last seen) and the hosts that were silent last round and are not any more.
pub fn round_alerts(
    findings: &[FindingRow],
    silent: &[(String, i64)],
    recovered: &BTreeSet<String>,
    config: &Alerting,
    now: i64,
) -> Vec<Json> {
    let round = config.resend_every.as_secs().max(1) as i64;
    let mut out = Vec::new();
    for f in findings {
        if f.severity < config.min_severity {
            continue;
        }
        let starts = f.raised_ts.div_euclid(1_000_000_000).min(f.received);
        let ends = if f.open && f.acked.is_none() {
            now + ENDS_AFTER_ROUNDS * round
        } else if now - f.received <= RESOLVED_ROUNDS * round || f.acked.is_some() {
            if f.open { now } else { f.received }
        } else {
            continue;
        };
        out.push(alert(
            (&f.host, &f.check, &f.subject),
            f.severity,
            &f.summary,
            f.advice.as_deref(),
            (starts, ends),
        ));
    }
    for (host, last_seen) in silent {
        out.push(alert(
            (host, HOST_SILENT_CHECK, host),
            2,
            &format!("{host} has sent nothing since {}", utc(*last_seen)),
            Some("Check that the agent runs and can reach the collector."),
            (*last_seen, now + ENDS_AFTER_ROUNDS * round),
        ));
    }
    for host in recovered {
        out.push(alert(
            (host, HOST_SILENT_CHECK, host),
            2,
            &format!("{host} reports again"),
            None,
            (now - 1, now),
        ));
    }
    out
}

/// An `http://host:port/path` URL (plain HTTP: Alertmanager on the collector's network or
/// loopback; put TLS in front with a proxy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    pub authority: String,
    pub path: String,
}

impl HttpUrl {
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url:?}: give http://HOST:PORT"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || !authority.contains(':') {
            return Err(format!("{url:?}: give http://HOST:PORT"));
        }
        Ok(HttpUrl {
            authority: authority.to_owned(),
            path: path.trim_end_matches('/').to_owned(),
        })
    }
}

/// POSTs a JSON body; the response's status code.
pub fn post_json(
    url: &HttpUrl,
    path: &str,
    body: &[u8],
    headers: &[(&str, String)],
) -> Result<u16, String> {
    let addr = url
        .authority
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", url.authority))?
        .next()
        .ok_or_else(|| format!("{}: no address", url.authority))?;
    let mut s = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT)
        .map_err(|e| format!("{}: {e}", url.authority))?;
    s.set_read_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut head = format!(
        "POST {}{path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\nUser-Agent: zpulse-collector\r\n",
        url.path,
        url.authority,
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body))
        .map_err(|e| format!("{}: {e}", url.authority))?;
    let mut reply = Vec::new();
    let _ = s.take(64 << 10).read_to_end(&mut reply);
    let text = String::from_utf8_lossy(&reply);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{}: no HTTP status in the reply", url.authority))
}

/// Runs the alerter in a thread: a round every `resend_every`, until the process ends.
pub fn spawn(config: Alerting, db: PathBuf) -> Result<(), String> {
    if config.alertmanager.is_none() && config.webhooks.is_empty() {
        return Ok(());
    }
    let url = config
        .alertmanager
        .as_deref()
        .map(HttpUrl::parse)
        .transpose()?;
    let am = config.alertmanager.clone().unwrap_or_default();
    let mut queue = WebhookQueue::open(&db)?;
    std::thread::Builder::new()
        .name("alerting".into())
        .spawn(move || {
            let mut silent_before: BTreeSet<String> = BTreeSet::new();
            let mut failing = false;
            loop {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                if !config.webhooks.is_empty()
                    && let Err(e) = queue.round(&config, &db, now)
                {
                    crate::server::log(format!("webhooks: {e}"));
                }
                let Some(url) = &url else {
                    std::thread::sleep(config.resend_every);
                    continue;
                };
                match send_round(url, &config, &db, now, &mut silent_before) {
                    Ok(()) if failing => {
                        failing = false;
                        crate::server::log(format!("alerting: {am} reachable again"));
                    }
                    Ok(()) => {}
                    Err(e) if !failing => {
                        failing = true;
                        crate::server::log(format!(
                            "alerting: {e} (the next rounds resend everything)"
                        ));
                    }
                    Err(_) => {}
                }
                std::thread::sleep(config.resend_every);
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn send_round(
    url: &HttpUrl,
    config: &Alerting,
    db: &Path,
    now: i64,
    silent_before: &mut BTreeSet<String>,
) -> Result<(), String> {
    let store = Store::open_read_only(db)?;
    let findings = store.findings(None, false)?;
    let silent = store.silent_hosts(now, config.silent_intervals)?;
    let silent_now: BTreeSet<String> = silent.iter().map(|(h, _)| h.clone()).collect();
    let recovered: BTreeSet<String> = silent_before.difference(&silent_now).cloned().collect();
    let alerts = round_alerts(&findings, &silent, &recovered, config, now);
    if !alerts.is_empty() {
        let body = serde_json::to_vec(&alerts).map_err(|e| e.to_string())?;
        let code = post_json(url, "/api/v2/alerts", &body, &[])?;
        if !(200..300).contains(&code) {
            return Err(format!("Alertmanager answered {code}"));
        }
    }
    *silent_before = silent_now;
    Ok(())
}

/// `sha256=HEX`: the HMAC-SHA256 of `body` keyed with `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// The webhook side: what each URL was last told per (host, check, subject), and the queue.
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
";

fn sql(e: rusqlite::Error) -> String {
    format!("SQLite: {e}")
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

    /// Queues the changes since the last round, then delivers what is due.
    pub fn round(&mut self, config: &Alerting, db: &Path, now: i64) -> Result<(), String> {
        let store = Store::open_read_only(db)?;
        let mut firing: Vec<(String, String, String, Json)> = Vec::new();
        for f in store.findings(None, true)? {
            if f.severity >= config.min_severity && f.acked.is_none() {
                let body = json!({
                    "event": "raised", "host": f.host, "check": f.check, "subject": f.subject,
                    "severity": severity_name(Some(f.severity)), "summary": f.summary,
                    "advice": f.advice, "raised": utc(f.raised_ts.div_euclid(1_000_000_000)),
                });
                firing.push((f.host, f.check, f.subject, body));
            }
        }
        for (host, last_seen) in store.silent_hosts(now, config.silent_intervals)? {
            let body = json!({
                "event": "raised", "host": host, "check": HOST_SILENT_CHECK, "subject": host,
                "severity": "critical",
                "summary": format!("{host} has sent nothing since {}", utc(last_seen)),
            });
            firing.push((host.clone(), HOST_SILENT_CHECK.to_owned(), host, body));
        }
        for w in &config.webhooks {
            self.queue_changes(&w.url, &firing, config.webhook_queue_max, now)?;
            self.deliver(w, now)?;
        }
        Ok(())
    }

    fn queue_changes(
        &mut self,
        url: &str,
        firing: &[(String, String, String, Json)],
        max: u64,
        now: i64,
    ) -> Result<(), String> {
        let tx = self.conn.transaction().map_err(sql)?;
        let known: BTreeSet<(String, String, String)> = {
            let mut stmt = tx
                .prepare("SELECT host, check_name, subject FROM webhook_state WHERE url = ?1 AND firing = 1")
                .map_err(sql)?;
            let rows = stmt
                .query_map([url], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(sql)?;
            rows.collect::<Result<_, _>>().map_err(sql)?
        };
        let now_firing: BTreeSet<(String, String, String)> = firing
            .iter()
            .map(|(h, c, s, _)| (h.clone(), c.clone(), s.clone()))
            .collect();
        let queue = |body: &Json| {
            tx.execute(
                "INSERT INTO webhook_queue(url, body, next_try) VALUES (?1, ?2, ?3)",
                rusqlite::params![url, body.to_string(), now],
            )
            .map_err(sql)
        };
        for (h, c, s, body) in firing {
            if !known.contains(&(h.clone(), c.clone(), s.clone())) {
                queue(body)?;
            }
        }
        for (h, c, s) in known.difference(&now_firing) {
            queue(
                &json!({ "event": "cleared", "host": h, "check": c, "subject": s, "cleared": utc(now) }),
            )?;
        }
        tx.execute("DELETE FROM webhook_state WHERE url = ?1", [url])
            .map_err(sql)?;
        for (h, c, s) in &now_firing {
            tx.execute(
                "INSERT INTO webhook_state(url, host, check_name, subject, firing) VALUES (?1, ?2, ?3, ?4, 1)",
                rusqlite::params![url, h, c, s],
            )
            .map_err(sql)?;
        }
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
    fn deliver(&mut self, w: &Webhook, now: i64) -> Result<(), String> {
        let url = HttpUrl::parse(&w.url)?;
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
            match post_json(&url, "", body.as_bytes(), &[("X-Zpulse-Signature", sig)]) {
                Ok(code) if (200..300).contains(&code) => {
                    self.conn
                        .execute("DELETE FROM webhook_queue WHERE id = ?1", [id])
                        .map_err(sql)?;
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
                                Ok(code) => format!("answered {code}"),
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
