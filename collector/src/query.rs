//! What `query`, `hosts` and `open` print: aligned tables for people, JSON for programs.

use crate::store::{FindingRow, HostRow, Row, severity_name};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value as Json, json};

/// `2026-11-30T12:34:56Z` from seconds since the epoch (UTC; no time-zone database needed).
pub fn utc(secs: i64) -> String {
    let c = zpulse_proto::sdk::text::civil_utc(secs);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// `utc` of a time in ns.
pub fn utc_ns(ts: i64) -> String {
    utc(ts.div_euclid(1_000_000_000))
}

/// `3m ago`, `2h ago`.
pub fn ago(secs: i64, now: i64) -> String {
    let d = (now - secs).max(0);
    match d {
        0..60 => format!("{d}s ago"),
        60..3600 => format!("{}m ago", d / 60),
        3600..86400 => format!("{}h ago", d / 3600),
        _ => format!("{}d ago", d / 86400),
    }
}

fn data_json(data: &str) -> Json {
    serde_json::from_str(data).unwrap_or(Json::Null)
}

/// One event as `query --format json` and `/api/events` give it. `data` is the stored JSON
/// text as it is (checked, not parsed into a tree and printed again: that was most of the
/// cost of a thousand-event answer).
#[derive(Serialize)]
struct EventJson<'a> {
    time: f64,
    utc: String,
    received: i64,
    received_utc: String,
    tag: &'a str,
    kind: &'a str,
    host: &'a str,
    check: &'a str,
    severity: Option<&'static str>,
    state: Option<&'a str>,
    subject: &'a str,
    summary: &'a str,
    advice: Option<&'a str>,
    data: &'a RawValue,
}

fn event_json(r: &Row) -> EventJson<'_> {
    EventJson {
        time: r.ts as f64 / 1e9,
        utc: utc_ns(r.ts),
        received: r.received,
        received_utc: utc(r.received),
        tag: &r.tag,
        kind: &r.kind,
        host: &r.host,
        check: &r.check,
        severity: r.severity.map(|s| severity_name(Some(s))),
        state: r.state.as_deref(),
        subject: &r.subject,
        summary: &r.summary,
        advice: r.advice.as_deref(),
        data: serde_json::from_str(&r.data).unwrap_or_else(|_| null_raw()),
    }
}

fn null_raw() -> &'static RawValue {
    serde_json::from_str("null").expect("null is JSON")
}

/// Events as a JSON array; `pretty` for people.
pub fn events_json(rows: &[Row], pretty: bool) -> String {
    let out: Vec<EventJson> = rows.iter().map(event_json).collect();
    if pretty {
        serde_json::to_string_pretty(&out)
    } else {
        serde_json::to_string(&out)
    }
    .unwrap_or_default()
}

/// Whether a host's clock is off by more than `max_skew` seconds.
pub fn skewed(h: &HostRow, max_skew: i64) -> bool {
    h.clock_skew.abs() > max_skew
}

/// A clock's skew (the sender's clock minus the collector's, s) in words: `4 min behind`,
/// `1 h 30 min ahead`, `on time`. Minutes and hours rounded to the nearest.
pub fn skew_words(skew: i64) -> String {
    let a = skew.unsigned_abs();
    let amount = if a < 60 {
        format!("{a} s")
    } else if a < 3600 {
        format!("{} min", (a + 30) / 60)
    } else if a < 86_400 {
        let minutes = (a + 30) / 60;
        match minutes % 60 {
            0 => format!("{} h", minutes / 60),
            m => format!("{} h {m} min", minutes / 60),
        }
    } else {
        format!("{} d", (a + 43_200) / 86_400)
    };
    match skew.signum() {
        -1 => format!("{amount} behind"),
        1 => format!("{amount} ahead"),
        _ => "on time".into(),
    }
}

/// `+3600s` for a skewed clock, else `-`.
fn skew_cell(h: &HostRow, max_skew: i64) -> String {
    if skewed(h, max_skew) {
        format!("{:+}s", h.clock_skew)
    } else {
        "-".into()
    }
}

/// Where a host list goes: the peer address each host last connected from is the network's
/// map, for the collector's admin only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// `hosts` on the command line: whoever can read the database (its file mode is the
    /// authentication) sees the peer addresses.
    Admin,
    /// The page and `/api/*`, read by anyone with the page's token: no addresses.
    Reader,
}

/// Hosts as `/api/hosts` (`Audience::Reader`) and `hosts --format json` (`Admin`) give them.
pub fn hosts_json(rows: &[HostRow], max_skew: i64, audience: Audience) -> Json {
    Json::Array(
        rows.iter()
            .map(|h| {
                let mut v = json!({
                    "host": h.host,
                    "last_seen": h.last_seen,
                    "last_seen_utc": utc(h.last_seen),
                    "first_seen": h.first_seen,
                    "last_event_time": h.last_event_ts as f64 / 1e9,
                    "version": h.version,
                    "open_findings": h.open_findings,
                    "worst_open": h.worst_open.map(|s| severity_name(Some(s))),
                    "clock_skew": h.clock_skew,
                    "clock_skewed": skewed(h, max_skew),
                });
                if audience == Audience::Admin {
                    v["peer"] = json!(h.peer);
                }
                v
            })
            .collect(),
    )
}

pub fn findings_json(rows: &[FindingRow]) -> Json {
    Json::Array(
        rows.iter()
            .map(|f| {
                json!({
                    "host": f.host,
                    "check": f.check,
                    "subject": f.subject,
                    "open": f.open,
                    "severity": severity_name(Some(f.severity)),
                    "state": f.state,
                    "raised": f.raised_ts as f64 / 1e9,
                    "raised_utc": utc_ns(f.raised_ts),
                    "updated": f.updated_ts as f64 / 1e9,
                    "cleared": f.cleared_ts.map(|t| t as f64 / 1e9),
                    "summary": f.summary,
                    "advice": f.advice,
                    "data": data_json(&f.data),
                    "ack": f.ack.as_ref().map(|a| json!({
                        "by": a.by,
                        "reason": a.reason,
                        "at": a.at,
                        "at_utc": utc(a.at),
                        "until": a.until,
                        "until_utc": a.until.map(utc),
                    })),
                })
            })
            .collect(),
    )
}

/// Text safe to print on a terminal: control characters (C0, DEL, C1: escape sequences
/// that could move the cursor, retitle the window or hide text) and the Unicode bidi
/// controls (which reorder what is shown, Unicode TR9) are written as `\u{..}` escapes.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// Columns padded to their widest cell; the last column is not padded. Every cell is made
/// [`printable`] here, so no caller can forget it.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c)).collect())
        .collect();
    let rows = &rows;
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<&str> = cells.collect();
        let n = cells.len();
        for (i, c) in cells.into_iter().enumerate() {
            out.push_str(c);
            if i + 1 < n {
                let pad = widths[i] - c.chars().count() + 2;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for r in rows {
        line(&mut r.iter().map(String::as_str));
    }
    out
}

/// One line per event: time, host, severity, state, check, subject, summary.
pub fn events_table(rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                utc_ns(r.ts),
                r.host.clone(),
                r.kind.clone(),
                severity_name(r.severity).to_owned(),
                r.state.clone().unwrap_or_else(|| "-".into()),
                if r.check.is_empty() {
                    r.tag.clone()
                } else {
                    r.check.clone()
                },
                r.subject.clone(),
                one_line(&r.summary, 120),
            ]
        })
        .collect();
    table(
        &[
            "TIME", "HOST", "KIND", "SEVERITY", "STATE", "CHECK", "SUBJECT", "SUMMARY",
        ],
        &cells,
    )
}

pub fn hosts_table(rows: &[HostRow], now: i64, max_skew: i64) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|h| {
            vec![
                h.host.clone(),
                format!("{} ({})", utc(h.last_seen), ago(h.last_seen, now)),
                h.version.clone().unwrap_or_else(|| "-".into()),
                h.open_findings.to_string(),
                if h.open_findings > 0 {
                    severity_name(h.worst_open).to_owned()
                } else {
                    "-".into()
                },
                skew_cell(h, max_skew),
                h.peer.clone(),
            ]
        })
        .collect();
    table(
        &[
            "HOST",
            "LAST SEEN",
            "AGENT",
            "OPEN",
            "WORST",
            "CLOCK",
            "PEER",
        ],
        &cells,
    )
}

pub fn findings_table(rows: &[FindingRow], now: i64) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|f| {
            vec![
                severity_name(Some(f.severity)).to_owned(),
                f.host.clone(),
                f.check.clone(),
                f.subject.clone(),
                ago(f.raised_ts.div_euclid(1_000_000_000), now),
                f.ack
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |a| one_line(&ack_words(a), 160)),
                one_line(&f.summary, 120),
            ]
        })
        .collect();
    table(
        &[
            "SEVERITY", "HOST", "CHECK", "SUBJECT", "SINCE", "ACK", "SUMMARY",
        ],
        &cells,
    )
}

/// An ack in words: `acknowledged by alice at 2026-…Z until 2026-…Z: replacing sdc`.
pub fn ack_words(a: &crate::store::Ack) -> String {
    let until = a
        .until
        .map_or_else(|| " for good".to_owned(), |u| format!(" until {}", utc(u)));
    let who = if a.by.is_empty() { "?" } else { &a.by };
    let why = if a.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", a.reason)
    };
    format!("acknowledged by {who} at {}{until}{why}", utc(a.at))
}

fn one_line(s: &str, max: usize) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    if s.chars().count() > max {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_764_505_496), "2025-11-30T12:24:56Z");
        assert_eq!(ago(100, 230), "2m ago");
    }

    #[test]
    fn clock_skew_in_words() {
        assert_eq!(skew_words(-240), "4 min behind");
        assert_eq!(skew_words(-4 * 60 - 20), "4 min behind");
        assert_eq!(skew_words(45), "45 s ahead");
        assert_eq!(skew_words(5400), "1 h 30 min ahead");
        assert_eq!(skew_words(-7200), "2 h behind");
        assert_eq!(skew_words(3 * 86_400), "3 d ahead");
        assert_eq!(skew_words(0), "on time");
    }

    #[test]
    fn terminal_output_is_printable() {
        // ESC ] 0 ; title BEL retitles a terminal; ESC [ 2 J clears it; U+202E reverses text.
        let hostile = "nas\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}1";
        assert_eq!(
            printable(hostile),
            "nas\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{202e}1"
        );
        let t = table(&["H"], &[vec![hostile.into()]]);
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        assert_eq!(printable("tank/ä ok"), "tank/ä ok");
    }

    #[test]
    fn tables_align() {
        let t = table(&["A", "BB"], &[vec!["xxx".into(), "y".into()]]);
        assert_eq!(t, "A    BB\nxxx  y\n");
    }
}
