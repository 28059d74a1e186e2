//! The read-only web page: a minimal HTTP/1.1 server on `std::net` (GET and HEAD only, one
//! request per connection, the request head at most 8 KiB and within 5 s of connecting
//! whatever trickles in, at most 32 connections at once and 8 from one address; connections
//! still sending their head hold at most half the slots and give way to newcomers as the
//! Forward listener's unproven ones do), pages rendered on the server with inline SVG charts. Nothing is loaded from
//! elsewhere: no scripts at all, and a `Content-Security-Policy` of `default-src 'none'` says
//! so to the browser.
//!
//! * `/` — hosts, open findings, and per host a chart of its percentages over the last 24 h;
//! * `/host/NAME` — one host: its open findings, all its charts, its finding history;
//! * `/api/hosts`, `/api/open`, `/api/stats` — the same as JSON.
//!
//! Each request opens the database read-only (WAL lets readers run beside the writer).

use crate::query::{Audience, ago, findings_json, hosts_json, utc, utc_ns};
use crate::server::{Admission, PeerSlot, Peers, Stats, Unproven, log};
use crate::store::{Filter, FindingRow, HostRow, Store, TOO_BROAD, parse_severity, severity_name};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const MAX_HEAD: usize = 8 << 10;
const MAX_CONNECTIONS: usize = 32;
/// Connections from one address at once, at most: a browser opens up to 6 to a site, so 8
/// leave room for a reload; one address trickling heads cannot take every slot.
pub const MAX_CONNECTIONS_PER_PEER: usize = 8;
/// The whole request head must arrive within this of connecting; the answer is written
/// within it too.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection still sending its head keeps its slot against newcomers, at least:
/// a real client sends its head in its first packet.
const HEAD_GRACE: Duration = Duration::from_secs(1);
/// How far back the charts look.
const CHART_WINDOW_S: i64 = 86400;
const MAX_SERIES: usize = 12;
/// Open findings listed on the front page, at most (the worst first).
const OPEN_ROWS: usize = 200;
/// Hosts in one page of the front page's list (`?page=N`).
const HOSTS_PER_PAGE: usize = 100;
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                   base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What the page needs from the configuration.
#[derive(Debug, Clone)]
pub struct Page {
    pub db: PathBuf,
    /// Read access needs `Authorization: Bearer TOKEN` or `?token=TOKEN`; `None`: open.
    pub token: Option<String>,
    /// Clock skew flagged, s.
    pub max_skew: i64,
    /// Heartbeat intervals after which a host is marked silent.
    pub silent_intervals: f64,
}

impl Default for Page {
    fn default() -> Page {
        Page::from_config(&crate::config::Config::default())
    }
}

impl Page {
    pub fn from_config(c: &crate::config::Config) -> Page {
        Page {
            db: c.db.clone(),
            token: c.http_token.clone(),
            max_skew: c.max_clock_skew.as_secs() as i64,
            silent_intervals: c.alerting.silent_intervals,
        }
    }
}

/// Binds and serves in a thread; returns the bound address.
pub fn start(addr: &str, page: Page, stats: Arc<Stats>) -> Result<SocketAddr, String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("http {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let slots = Arc::new(Slots::default());
    std::thread::Builder::new()
        .name("http".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(stream) = conn else {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                let Some(admitted) = slots.admit(&stream) else {
                    let mut s = stream;
                    let _ = s.set_write_timeout(Some(TIMEOUT));
                    let _ = respond(&mut s, 503, "text/plain", b"busy\n", false);
                    continue;
                };
                let (page, stats) = (page.clone(), stats.clone());
                let spawned = std::thread::Builder::new()
                    .name("http conn".into())
                    .spawn(move || handle(stream, &page, &stats, &admitted));
                if spawned.is_err() {
                    log("http: cannot start a thread");
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(bound)
}

/// The web listener's connections: how many are open, from which addresses, and which are
/// still sending their request head (those hold at most half the slots; see
/// [`Unproven`]).
#[derive(Default)]
struct Slots {
    active: AtomicUsize,
    peers: Arc<Peers>,
    reading_head: Mutex<Unproven>,
}

/// A connection's slot, given back when it ends.
struct Admitted {
    slots: Arc<Slots>,
    _peer: PeerSlot,
    ip: IpAddr,
    head_id: u64,
}

impl Admitted {
    /// Its head is read: no longer one to give way to a newcomer.
    fn head_read(&self) {
        self.slots
            .reading_head
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .leave(self.ip, self.head_id);
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.head_read();
        self.slots.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Slots {
    /// A slot for a new connection, maybe in place of one still trickling its head (closed
    /// here); `None`: refused (all slots taken by requests being answered, or its address
    /// holds [`MAX_CONNECTIONS_PER_PEER`]).
    fn admit(self: &Arc<Self>, stream: &TcpStream) -> Option<Admitted> {
        let ip = stream.peer_addr().ok()?.ip();
        let handle = stream.try_clone().ok()?;
        let peer = PeerSlot::enter(&self.peers, ip, MAX_CONNECTIONS_PER_PEER)?;
        let mut reading = self.reading_head.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let active = self.active.load(Ordering::SeqCst);
        match reading.admit(ip, active, MAX_CONNECTIONS, now, HEAD_GRACE) {
            Admission::Take => {}
            Admission::TakeInPlaceOf(victim) => {
                // Its thread sees the connection end and gives its slot back.
                let _ = victim.shutdown(std::net::Shutdown::Both);
            }
            Admission::Refuse => return None,
        }
        self.active.fetch_add(1, Ordering::SeqCst);
        let head_id = reading.enter(ip, now, handle);
        Some(Admitted {
            slots: self.clone(),
            _peer: peer,
            ip,
            head_id,
        })
    }
}

fn respond(
    s: &mut TcpStream,
    code: u16,
    ctype: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: {CSP}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    if !head_only {
        s.write_all(body)?;
    }
    s.flush()
}

fn handle(mut s: TcpStream, page: &Page, stats: &Stats, admitted: &Admitted) {
    let _ = s.set_write_timeout(Some(TIMEOUT));
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    let deadline = Instant::now() + TIMEOUT;
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        if head.len() > MAX_HEAD {
            let _ = respond(
                &mut s,
                431,
                "text/plain",
                b"request head too large\n",
                false,
            );
            return;
        }
        // The head as a whole within TIMEOUT: each read waits only for what is left of it,
        // so a byte now and then does not extend it.
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(_) => return,
        }
    }
    admitted.head_read();
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        let _ = respond(&mut s, 405, "text/plain", b"GET or HEAD only\n", false);
        return;
    }
    if let Some(token) = &page.token
        && !authorized(&text, target, token)
    {
        let _ = respond(
            &mut s,
            401,
            "text/plain",
            b"a token is required: Authorization: Bearer TOKEN, or ?token=TOKEN\n",
            head_only,
        );
        return;
    }
    let (code, ctype, body) = route(target, page, stats);
    let _ = respond(&mut s, code, ctype, body.as_bytes(), head_only);
}

/// Whether a request carries `token`: `Authorization: Bearer TOKEN` (RFC 6750 §2.1) or the
/// query parameter `token` (§2.3). Compared in constant time.
fn authorized(head: &str, target: &str, token: &str) -> bool {
    let from_header = head.lines().skip(1).find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("authorization")
            .then(|| value.trim().strip_prefix("Bearer ").map(str::trim))?
    });
    let from_query = query_params(target).remove("token");
    [from_header.map(str::to_owned), from_query]
        .into_iter()
        .flatten()
        .any(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The query parameters of a request target, percent-decoded (`+` is a space).
pub fn query_params(target: &str) -> BTreeMap<String, String> {
    let Some((_, q)) = target.split_once('?') else {
        return BTreeMap::new();
    };
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (
                percent_decode(&k.replace('+', " ")),
                percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

/// The response to a GET of `target`: status, content type, body.
pub fn route(target: &str, config: &Page, stats: &Stats) -> (u16, &'static str, String) {
    let db = &config.db;
    let params = query_params(target);
    let path = target.split('?').next().unwrap_or("");
    const HTML: &str = "text/html; charset=utf-8";
    const JSON: &str = "application/json";
    if path == "/api/stats" {
        return (
            200,
            JSON,
            serde_json::to_string(&stats.snapshot()).unwrap_or_default(),
        );
    }
    let store = match Store::open_read_only(db) {
        Ok(s) => s,
        Err(e) => return (500, "text/plain; charset=utf-8", format!("{e}\n")),
    };
    let now = now_s();
    let result = match path {
        "/" | "/index.html" => index(&store, stats, config, &params, now).map(|b| (HTML, b)),
        "/api/hosts" => HostFilter::from_params(&params).and_then(|filter| {
            let open = store.open_findings(None)?;
            let hosts: Vec<HostRow> = store
                .hosts()?
                .into_iter()
                .filter(|h| filter.keeps(h, &open))
                .collect();
            Ok((
                JSON,
                hosts_json(&hosts, config.max_skew, Audience::Reader).to_string(),
            ))
        }),
        "/api/open" => api_filter(&params, now).and_then(|f| {
            let rows: Vec<FindingRow> = store
                .open_findings(f.host.as_deref())?
                .into_iter()
                .filter(|r| {
                    f.check.as_ref().is_none_or(|c| &r.check == c)
                        && f.min_severity.is_none_or(|s| r.severity >= s)
                })
                .take(f.limit)
                .collect();
            Ok((JSON, findings_json(&rows).to_string()))
        }),
        "/api/events" => api_filter(&params, now)
            .and_then(|f| Ok((JSON, crate::query::events_json(&store.events(&f)?, false)))),
        p if p.starts_with("/host/") => {
            let name = percent_decode(&p["/host/".len()..]);
            match store.host(&name) {
                Ok(Some(_)) => host_page(&store, &name, now).map(|b| (HTML, b)),
                Ok(None) => return (404, HTML, page("Not found", "<p>No such host.</p>")),
                Err(e) => Err(e),
            }
        }
        _ => return (404, HTML, page("Not found", "<p>Nothing here.</p>")),
    };
    match result {
        Ok((ctype, body)) => (200, ctype, body),
        Err(e) if e.starts_with(BAD_PARAMETER) || e.starts_with(TOO_BROAD) => {
            (400, "text/plain; charset=utf-8", format!("{e}\n"))
        }
        Err(e) => (500, "text/plain; charset=utf-8", format!("{e}\n")),
    }
}

const BAD_PARAMETER: &str = "parameter ";
/// `limit` of `/api/*`, at most.
const API_MAX_LIMIT: usize = 10_000;

/// `/api/open` and `/api/events` parameters: `host`, `check`, `severity` (this or worse),
/// `since` (a duration back from now: 15m, 1h, 7d), `kind` (events only), `limit` (100 by
/// default, at most 10,000).
fn api_filter(p: &BTreeMap<String, String>, now: i64) -> Result<Filter, String> {
    let bad = |k: &str, e: String| format!("{BAD_PARAMETER}{k}: {e}");
    let nonempty = |k: &str| p.get(k).filter(|v| !v.is_empty()).cloned();
    Ok(Filter {
        host: nonempty("host"),
        check: nonempty("check"),
        min_severity: nonempty("severity")
            .map(|s| parse_severity(&s))
            .transpose()
            .map_err(|e| bad("severity", e))?,
        kinds: nonempty("kind")
            .map(|k| {
                let kinds: Vec<String> = k.split(',').map(str::to_owned).collect();
                match kinds
                    .iter()
                    .find(|k| !crate::store::KINDS.contains(&k.as_str()))
                {
                    Some(k) => Err(bad(
                        "kind",
                        format!("{k:?}: give {}", crate::store::KINDS.join(", ")),
                    )),
                    None => Ok(kinds),
                }
            })
            .transpose()?,
        since_ts: nonempty("since")
            .map(|s| {
                crate::config::parse_duration(&s)
                    .map(|d| (now - d.as_secs() as i64).saturating_mul(1_000_000_000))
            })
            .transpose()
            .map_err(|e| bad("since", e))?,
        limit: nonempty("limit")
            .map(|l| l.parse::<usize>().map_err(|e| bad("limit", e.to_string())))
            .transpose()?
            .unwrap_or(100)
            .min(API_MAX_LIMIT),
        oldest_first: false,
        bounded: true,
    })
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The `id` of a finding's row on the host page (and the fragment of its `generatorURL`):
/// checks are `[A-Za-z0-9._-]`, the subject is percent-encoded, so the id has no spaces and
/// a link to it needs no further encoding.
pub fn finding_anchor(check: &str, subject: &str) -> String {
    format!("finding-{check}~{}", percent_encode(subject))
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{} — zpulse collector</title><style>\
         body{{font:14px system-ui,sans-serif;margin:1.5em;color:#222}}\
         table{{border-collapse:collapse;margin:.5em 0 1.5em}}\
         th,td{{text-align:left;padding:.25em .7em;border-bottom:1px solid #ddd;vertical-align:top}}\
         .critical{{color:#b00;font-weight:bold}}.warning{{color:#a60}}.info{{color:#367}}\
         .muted{{color:#777}}.ack{{color:#06c}}tr.acked td{{opacity:.75}}svg{{background:#fafafa;border:1px solid #ddd}}\
         td{{overflow-wrap:anywhere}}svg{{max-width:100%;height:auto}}\
         @media (max-width:640px){{body{{margin:.6em}}\
         table.findings,table.findings tbody,table.findings tr,table.findings td{{display:block}}\
         table.findings tr:first-child{{display:none}}table.findings td{{border:0;padding:.1em 0}}\
         table.findings tr.finding{{border-bottom:1px solid #ddd;padding:.4em 0}}\
         table.findings td.severity,table.findings td.host,table.findings td.check,table.findings td.since{{display:inline;margin-right:.6em}}\
         table.findings td.subject{{font-weight:bold}}\
         table.hosts th,table.hosts td,table.wrong td{{padding:.2em .3em}}\
         table:not(.findings){{display:block;overflow-x:auto;max-width:100%}}}}\
         </style></head><body><h1><a href=\"/\">zpulse collector</a> — {}</h1>\n{}\n</body></html>\n",
        esc(title),
        esc(title),
        body
    )
}

fn findings_html(out: &mut String, rows: &[FindingRow], now: i64, with_host: bool) {
    if rows.is_empty() {
        out.push_str("<p class=\"muted\">No open findings.</p>\n");
        return;
    }
    out.push_str("<table class=\"findings\"><tr><th>Severity</th>");
    if with_host {
        out.push_str("<th>Host</th>");
    }
    out.push_str("<th>Check</th><th>Subject</th><th>Since</th><th>Summary</th></tr>\n");
    for f in rows {
        let sev = severity_name(Some(f.severity));
        let acked = if f.ack.is_some() { " acked" } else { "" };
        let _ = write!(
            out,
            "<tr class=\"finding{acked}\" id=\"{}\"><td class=\"severity {sev}\">{sev}</td>",
            esc(&finding_anchor(&f.check, &f.subject))
        );
        if with_host {
            let _ = write!(
                out,
                "<td class=\"host\"><a href=\"/host/{}\">{}</a></td>",
                percent_encode(&f.host),
                esc(&f.host)
            );
        }
        let _ = writeln!(
            out,
            "<td class=\"check\">{}</td><td class=\"subject\">{}</td><td class=\"since\" \
             title=\"{}\">{}</td><td class=\"summary\">{}{}{}</td></tr>",
            esc(&f.check),
            esc(&f.subject),
            utc_ns(f.raised_ts),
            ago(f.raised_ts.div_euclid(1_000_000_000), now),
            esc(&f.summary),
            f.advice
                .as_deref()
                .map(|a| format!("<br><span class=\"muted\">{}</span>", esc(a)))
                .unwrap_or_default(),
            f.ack
                .as_ref()
                .map(|a| format!(
                    "<br><span class=\"ack\">{}</span>",
                    esc(&crate::query::ack_words(a))
                ))
                .unwrap_or_default()
        );
    }
    out.push_str("</table>\n");
}

/// What the front page and `/api/hosts` filter hosts by: `q` (text in the name),
/// `severity` (worst open finding at least this), `check` (an open finding of this check).
#[derive(Debug, Default)]
struct HostFilter {
    text: Option<String>,
    min_severity: Option<i64>,
    check: Option<String>,
}

impl HostFilter {
    fn from_params(p: &BTreeMap<String, String>) -> Result<HostFilter, String> {
        let nonempty = |k: &str| p.get(k).filter(|v| !v.is_empty()).cloned();
        Ok(HostFilter {
            text: nonempty("q"),
            min_severity: nonempty("severity")
                .map(|s| parse_severity(&s))
                .transpose()
                .map_err(|e| format!("{BAD_PARAMETER}severity: {e}"))?,
            check: nonempty("check"),
        })
    }

    fn keeps(&self, h: &HostRow, open: &[FindingRow]) -> bool {
        self.text
            .as_ref()
            .is_none_or(|t| h.host.contains(t.as_str()))
            && self
                .min_severity
                .is_none_or(|s| h.open_findings > 0 && h.worst_open.is_some_and(|w| w >= s))
            && self
                .check
                .as_ref()
                .is_none_or(|c| open.iter().any(|f| f.host == h.host && &f.check == c))
    }
}

/// Open findings grouped by (check, severity), worst first, then the most hosts: the front
/// page's first table.
fn groups(open: &[FindingRow]) -> Vec<(String, i64, Vec<String>)> {
    let mut by: BTreeMap<(String, i64), Vec<String>> = BTreeMap::new();
    for f in open.iter().filter(|f| f.ack.is_none()) {
        let hosts = by.entry((f.check.clone(), f.severity)).or_default();
        if !hosts.contains(&f.host) {
            hosts.push(f.host.clone());
        }
    }
    let mut out: Vec<(String, i64, Vec<String>)> =
        by.into_iter().map(|((c, s), h)| (c, s, h)).collect();
    out.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(b.2.len().cmp(&a.2.len()))
            .then(a.0.cmp(&b.0))
    });
    out
}

fn host_links(out: &mut String, hosts: &[String]) {
    for (i, h) in hosts.iter().take(12).enumerate() {
        let _ = write!(
            out,
            "{}<a href=\"/host/{}\">{}</a>",
            if i > 0 { ", " } else { "" },
            percent_encode(h),
            esc(h)
        );
    }
    if hosts.len() > 12 {
        let _ = write!(out, " and {} more", hosts.len() - 12);
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn index(
    store: &Store,
    stats: &Stats,
    config: &Page,
    params: &BTreeMap<String, String>,
    now: i64,
) -> Result<String, String> {
    let hosts = store.hosts()?;
    let open = store.open_findings(None)?;
    let silent: Vec<String> = store
        .silent_hosts(now, config.silent_intervals)?
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    let skewed: Vec<String> = hosts
        .iter()
        .filter(|h| crate::query::skewed(h, config.max_skew))
        .map(|h| h.host.clone())
        .collect();
    let mut b = String::new();
    // What is wrong, worst first.
    b.push_str("<h2>What is wrong</h2>\n");
    let grouped = groups(&open);
    if grouped.is_empty() && silent.is_empty() && skewed.is_empty() {
        let _ = writeln!(
            b,
            "<p class=\"ok\">Nothing: {} reporting, no open findings.</p>",
            plural(hosts.len(), "host")
        );
    } else {
        b.push_str("<table class=\"wrong\">\n");
        if !silent.is_empty() {
            let _ = write!(
                b,
                "<tr class=\"group silent\"><td class=\"critical\">silent</td><td>{}</td>\
                 <td>on {}</td><td>",
                crate::alert::HOST_SILENT_CHECK,
                plural(silent.len(), "host")
            );
            host_links(&mut b, &silent);
            b.push_str("</td></tr>\n");
        }
        for (check, sev, hs) in &grouped {
            let name = severity_name(Some(*sev));
            let _ = write!(
                b,
                "<tr class=\"group\"><td class=\"{name}\">{name}</td><td>\
                 <a href=\"/?check={}\">{}</a></td><td>on {}</td><td>",
                percent_encode(check),
                esc(check),
                plural(hs.len(), "host")
            );
            host_links(&mut b, hs);
            b.push_str("</td></tr>\n");
        }
        if !skewed.is_empty() {
            let _ = write!(
                b,
                "<tr class=\"group\"><td class=\"warning\">clock</td><td>clock off by more than \
                 {}</td><td>on {}</td><td>",
                crate::query::skew_words(config.max_skew).trim_end_matches(" ahead"),
                plural(skewed.len(), "host")
            );
            host_links(&mut b, &skewed);
            b.push_str("</td></tr>\n");
        }
        b.push_str("</table>\n");
    }
    // The host list: filtered and sorted by the query parameters (a plain GET form).
    let filter = HostFilter::from_params(params)?;
    // An unknown order is a bad parameter (400), as docs/collector.md promises, not the default.
    let sort = match params.get("sort").map(String::as_str) {
        None => "worst",
        Some(known @ ("name" | "seen" | "open" | "worst")) => known,
        Some(_) => {
            return Err(format!(
                "{BAD_PARAMETER}sort: one of name, seen, open, worst"
            ));
        }
    };
    let mut shown: Vec<&HostRow> = hosts.iter().filter(|h| filter.keeps(h, &open)).collect();
    match sort {
        "name" => {}
        "seen" => shown.sort_by_key(|h| h.last_seen),
        "open" => shown.sort_by_key(|h| std::cmp::Reverse(h.open_findings)),
        _ => shown.sort_by_key(|h| {
            (
                !silent.contains(&h.host),
                std::cmp::Reverse(if h.open_findings > 0 {
                    h.worst_open
                } else {
                    None
                }),
                std::cmp::Reverse(h.open_findings),
            )
        }),
    }
    let pages = shown.len().div_ceil(HOSTS_PER_PAGE).max(1);
    let page_no = match params.get("page").filter(|p| !p.is_empty()) {
        None => 1,
        Some(p) => p
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=pages).contains(n))
            .ok_or_else(|| format!("{BAD_PARAMETER}page: a number from 1 to {pages}"))?,
    };
    let _ = writeln!(b, "<h2>Hosts ({} of {})</h2>", shown.len(), hosts.len());
    let value = |k: &str| esc(params.get(k).map_or("", String::as_str));
    let _ = writeln!(
        b,
        "<form method=\"get\" action=\"/\"><input name=\"q\" placeholder=\"host name\" value=\"{}\">\
         <select name=\"severity\"><option value=\"\">any severity</option>{}</select>\
         <input name=\"check\" placeholder=\"check\" value=\"{}\">\
         <input type=\"hidden\" name=\"sort\" value=\"{}\"><button>Filter</button></form>",
        value("q"),
        ["warning", "critical"]
            .iter()
            .map(|s| format!(
                "<option{}>{s}</option>",
                if params.get("severity").is_some_and(|v| v == s) {
                    " selected"
                } else {
                    ""
                }
            ))
            .collect::<String>(),
        value("check"),
        esc(sort)
    );
    // A link to this list with one parameter changed (a new sort starts at page 1).
    let with = |key: &str, value: &str, label: &str| {
        let mut p = params.clone();
        if key == "sort" {
            p.remove("page");
        }
        p.insert(key.into(), value.into());
        let q: Vec<String> = p
            .iter()
            .filter(|(k, v)| !v.is_empty() && k.as_str() != "token")
            .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
            .collect();
        format!("<a href=\"/?{}\">{label}</a>", esc(&q.join("&")))
    };
    let link = |key: &str, label: &str| with("sort", key, label);
    let _ = writeln!(
        b,
        "<table class=\"hosts\"><tr><th>{}</th><th>{}</th><th>Agent</th><th>{}</th>\
         <th>Clock</th></tr>",
        link("name", "Host"),
        link("seen", "Last seen"),
        link("open", "Open findings"),
    );
    for h in shown
        .iter()
        .skip((page_no - 1) * HOSTS_PER_PAGE)
        .take(HOSTS_PER_PAGE)
    {
        let worst = if h.open_findings > 0 {
            severity_name(h.worst_open)
        } else {
            "muted"
        };
        let state = if silent.contains(&h.host) {
            " <span class=\"critical\">silent</span>"
        } else {
            ""
        };
        let _ = writeln!(
            b,
            "<tr class=\"host\"><td><a href=\"/host/{}\">{}</a>{state}</td><td title=\"{}\">{}</td>\
             <td>{}</td><td class=\"{worst}\">{}</td><td>{}</td></tr>",
            percent_encode(&h.host),
            esc(&h.host),
            utc(h.last_seen),
            ago(h.last_seen, now),
            esc(h.version.as_deref().unwrap_or("-")),
            h.open_findings,
            if crate::query::skewed(h, config.max_skew) {
                format!(
                    "<span class=\"warning\" title=\"{:+} s\">{}</span>",
                    h.clock_skew,
                    crate::query::skew_words(h.clock_skew)
                )
            } else {
                "ok".into()
            }
        );
    }
    b.push_str("</table>\n");
    if pages > 1 {
        let _ = write!(b, "<p class=\"pages\">Page {page_no} of {pages}");
        if page_no > 1 {
            let _ = write!(
                b,
                " · {}",
                with("page", &(page_no - 1).to_string(), "previous")
            );
        }
        if page_no < pages {
            let _ = write!(b, " · {}", with("page", &(page_no + 1).to_string(), "next"));
        }
        b.push_str("</p>\n");
    }
    let listed: Vec<FindingRow> = open
        .iter()
        .filter(|f| {
            filter.check.as_ref().is_none_or(|c| &f.check == c)
                && filter.min_severity.is_none_or(|s| f.severity >= s)
                && filter
                    .text
                    .as_ref()
                    .is_none_or(|t| f.host.contains(t.as_str()))
        })
        .take(OPEN_ROWS)
        .cloned()
        .collect();
    let _ = writeln!(
        b,
        "<h2>Open findings ({}{})</h2>",
        listed.len(),
        if listed.len() == OPEN_ROWS {
            ", the worst shown"
        } else {
            ""
        }
    );
    findings_html(&mut b, &listed, now, true);
    let s = stats.snapshot();
    let _ = writeln!(
        b,
        "<p class=\"muted\">This collector since start: {} events in {} batches, {} duplicate \
         batches dropped, {} connections ({} open, {} refused), {} authentication failures, \
         {} protocol errors, {} records refused for their host.</p>",
        s["events"],
        s["batches"],
        s["duplicates"],
        s["connections_total"],
        s["connections_active"],
        s["connections_refused"],
        s["auth_failures"],
        s["protocol_errors"],
        s["records_refused_host"]
    );
    Ok(page("fleet", &b))
}

fn host_page(store: &Store, host: &str, now: i64) -> Result<String, String> {
    let mut b = String::new();
    let open = store.open_findings(Some(host))?;
    let _ = writeln!(b, "<h2>Open findings ({})</h2>", open.len());
    findings_html(&mut b, &open, now, false);
    b.push_str("<h2>Figures, last 24 h</h2>\n");
    // The metric records' time series; hosts that send none keep the findings' figures.
    match crate::charts::section(store, host, now)? {
        Some(charts) => b.push_str(&charts),
        None => b.push_str(&chart(store, host, now)?),
    }
    let history = store.events(&Filter {
        host: Some(host.to_owned()),
        kinds: Some(vec!["finding".into()]),
        limit: 100,
        bounded: true,
        ..Filter::default()
    })?;
    let _ = writeln!(b, "<h2>Finding history (latest {})</h2>", history.len());
    event_rows(&mut b, &history, "State");
    // What the host's kernel said (zevents: docs/events.md), newest first.
    let kernel = store.events(&Filter {
        host: Some(host.to_owned()),
        kinds: Some(vec!["zevent".into()]),
        limit: 100,
        bounded: true,
        ..Filter::default()
    })?;
    if !kernel.is_empty() {
        let _ = writeln!(b, "<h2>Kernel events (latest {})</h2>", kernel.len());
        event_rows(&mut b, &kernel, "Kind");
    }
    Ok(page(host, &b))
}

/// A table of events, newest first: time, `second` (the finding's state, or the event's
/// kind), severity, check, subject, summary.
fn event_rows(b: &mut String, rows: &[crate::store::Row], second: &str) {
    let _ = writeln!(
        b,
        "<table><tr><th>Time</th><th>{second}</th><th>Severity</th><th>Check</th>\
         <th>Subject</th><th>Summary</th></tr>"
    );
    for e in rows {
        let sev = severity_name(e.severity);
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td class=\"{sev}\">{sev}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            utc_ns(e.ts),
            esc(e.state.as_deref().unwrap_or(&e.kind)),
            esc(&e.check),
            esc(&e.subject),
            esc(&e.summary)
        );
    }
    b.push_str("</table>\n");
}

/// The `_pct` figures of a host's metrics, agent and finding events over the last 24 h, as
/// series named `check subject key`, each a list of (time s, value): the chart points the
/// store keeps current at ingest (at most one a series per `CHART_BUCKET_S`), at most 64
/// series.
pub fn series(
    store: &Store,
    host: &str,
    now: i64,
) -> Result<BTreeMap<String, Vec<(f64, f64)>>, String> {
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (name, t, x) in store.chart_points(host, now - CHART_WINDOW_S)? {
        if out.len() >= 64 && !out.contains_key(&name) {
            continue;
        }
        out.entry(name).or_default().push((t, x));
    }
    Ok(out)
}

/// A line chart of a host's percentages (hosts that send no metric records), drawn as the
/// time series' charts are ([`crate::charts::chart`]), over the same window.
fn chart(store: &Store, host: &str, now: i64) -> Result<String, String> {
    let mut all: Vec<(String, Vec<(i64, f64)>)> = series(store, host, now)?
        .into_iter()
        .map(|(name, points)| {
            let ratios = points.iter().map(|&(t, pct)| (t as i64, pct / 100.0));
            (name, ratios.collect())
        })
        .collect();
    if all.is_empty() {
        return Ok("<p class=\"muted\">No figures in the last 24 h.</p>\n".into());
    }
    // The series with the most points first; at most MAX_SERIES.
    all.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    all.truncate(MAX_SERIES);
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let lines: Vec<(&str, &[(i64, f64)])> = all
        .iter()
        .map(|(name, points)| (name.as_str(), points.as_slice()))
        .collect();
    let mut out = String::new();
    crate::charts::chart(
        &mut out,
        host,
        "findings",
        "Percentages in findings and heartbeats",
        crate::timeseries::Unit::Ratio,
        &lines,
        now - CHART_WINDOW_S,
        now,
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_paths() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(percent_decode(&percent_encode("nas 1/ä")), "nas 1/ä");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
