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

use crate::query::utc;
use crate::store::{FindingRow, Store, severity_name};
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
}

impl Eq for Alerting {}

impl Default for Alerting {
    fn default() -> Alerting {
        Alerting {
            alertmanager: None,
            min_severity: 1,
            resend_every: Duration::from_secs(60),
            silent_intervals: 3.0,
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
    let Some(am) = config.alertmanager.clone() else {
        return Ok(());
    };
    let url = HttpUrl::parse(&am)?;
    std::thread::Builder::new()
        .name("alerting".into())
        .spawn(move || {
            let mut silent_before: BTreeSet<String> = BTreeSet::new();
            let mut failing = false;
            loop {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                match send_round(&url, &config, &db, now, &mut silent_before) {
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
