//! Pure syslog formatters: an event, its time and the local UTC offset in, one message out.
//!
//! Nothing here reads a clock, a time zone or a socket, so every output is a golden string in
//! the tests. Two dialects:
//!
//! * [`Dialect::Rfc3164Local`] — what Linux's `/dev/log` readers expect (glibc's `syslog(3)`,
//!   journald, rsyslog's imuxsock): `<PRI>Mmm dd hh:mm:ss TAG[pid]: MSG`, local time, the day
//!   space-padded, **no hostname** (journald would take it for the identifier). There is no
//!   structured data, so the figures ride at the end of MSG as `| key=value …`.
//! * [`Dialect::Rfc5424`] — remote syslog and FreeBSD's `/var/run/log` (FreeBSD's libc speaks
//!   5424 there): `<PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD] MSG`, RFC 3339 time with the
//!   local offset, the event's identity and figures as structured data.
//!
//! Both are bounded by a byte limit. What gives way, in order: the readable text is cut (to
//! [`MIN_TEXT_BYTES`], which still names the check, subject and state), then figures are
//! dropped from the end, then the text is cut further; the identity (kind, check, severity,
//! state, subject) goes last, only when a header and it alone exceed the limit. A cut never
//! splits a UTF-8 character or an SD escape sequence, a figure that is a list or map is
//! shortened by whole elements so it stays valid JSON, and every cut leaves a mark: `...` at
//! the end of a cut text or string, `truncated="true"` in the SD when anything in it was cut
//! or dropped.

use jiff::Timestamp;
use jiff::tz::Offset;
use zpulse_proto::event::{Event, EventTime, Severity, State, Value};

/// The marker appended to a text that was cut, or to a figure list that lost figures. ASCII,
/// so that no receiver mangles it.
pub const CUT_MARK: &str = "...";

/// An SD param value longer than this (escaped) is cut, so one long string figure cannot push
/// every other figure out of a datagram.
pub const MAX_SD_VALUE_BYTES: usize = 256;

/// The readable text is cut no shorter than this before figures are dropped: enough for
/// `check on subject (state): ` and the start of the summary.
pub const MIN_TEXT_BYTES: usize = 128;

/// RFC 5424 header field limits (§6.2).
pub const MAX_HOSTNAME: usize = 255;
pub const MAX_APP_NAME: usize = 48;
pub const MAX_MSGID: usize = 32;
/// SD-IDs and param names (§6.3.2, §6.3.3).
pub const MAX_SD_NAME: usize = 32;

/// The IANA *example* private enterprise number (RFC 5612). It makes a syntactically valid
/// private SD-ID; a site that owns a PEN should configure its own.
pub const EXAMPLE_ENTERPRISE_NUMBER: u32 = 32473;

/// Which wire format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub enum Dialect {
    /// Hostless RFC 3164 as local syslog sockets on Linux expect it.
    #[serde(rename = "rfc3164")]
    Rfc3164Local,
    /// RFC 5424 with structured data.
    #[serde(rename = "rfc5424")]
    Rfc5424,
}

/// A syslog facility (RFC 5424 §6.2.1 numbering; names as rsyslog and syslog.conf spell them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facility(u8);

/// Facilities a user process may log to. `kern` (0) is left out: it is the kernel's, and
/// glibc rewrites it to `user` anyway.
const FACILITIES: &[(&str, u8)] = &[
    ("user", 1),
    ("mail", 2),
    ("daemon", 3),
    ("auth", 4),
    ("syslog", 5),
    ("lpr", 6),
    ("news", 7),
    ("uucp", 8),
    ("cron", 9),
    ("authpriv", 10),
    ("ftp", 11),
    ("ntp", 12),
    ("audit", 13),
    ("alert", 14),
    ("clock", 15),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

impl Facility {
    pub const DAEMON: Facility = Facility(3);

    /// Parses a facility name; the error lists the accepted ones.
    pub fn parse(name: &str) -> Result<Facility, String> {
        FACILITIES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, code)| Facility(code))
            .ok_or_else(|| {
                let names: Vec<&str> = FACILITIES.iter().map(|(n, _)| *n).collect();
                format!("unknown facility '{name}': use one of {}", names.join(", "))
            })
    }

    pub fn code(self) -> u8 {
        self.0
    }
}

/// Syslog severities used here (RFC 5424 §6.2.1).
pub mod severity {
    pub const CRIT: u8 = 2;
    pub const WARNING: u8 = 4;
    pub const NOTICE: u8 = 5;
    pub const INFO: u8 = 6;
}

/// The syslog severity of an event.
///
/// critical → crit (2), warning → warning (4), info → info (6), for every kind. A **cleared**
/// warning or critical finding becomes notice (5): it is good news, but one an administrator
/// who filters on `*.notice` or above must see, or the raised message is never closed. A
/// cleared info finding stays info: clearing never makes an event louder than it was.
pub fn syslog_severity(e: &Event) -> u8 {
    let base = match e.severity {
        Severity::Critical => severity::CRIT,
        Severity::Warning => severity::WARNING,
        Severity::Info => severity::INFO,
    };
    if e.state == Some(State::Cleared) {
        base.max(severity::NOTICE)
    } else {
        base
    }
}

/// `PRI` = facility × 8 + severity.
pub fn priority(facility: Facility, e: &Event) -> u8 {
    facility.code() * 8 + syslog_severity(e)
}

/// Everything but the event that shapes a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Formatter {
    pub dialect: Dialect,
    pub facility: Facility,
    /// TAG (3164) and APP-NAME (5424); checked by the config to be 1–32 of `[A-Za-z0-9._-]`.
    pub app_name: String,
    /// HOSTNAME (5424 only): this, else the event's `host`, else `fallback_hostname`, else `-`.
    pub hostname: Option<String>,
    pub fallback_hostname: String,
    /// PROCID (5424) and `[pid]` (3164).
    pub pid: u32,
    /// The number after `@` in the private SD-IDs.
    pub enterprise_number: u32,
    /// The whole message, in bytes, never exceeds this (framing excluded).
    pub max_bytes: usize,
}

impl Formatter {
    /// One message for `event` happening at `time`, in the zone whose offset at that moment is
    /// `offset`.
    pub fn format(&self, time: EventTime, offset: Offset, event: &Event) -> String {
        match self.dialect {
            Dialect::Rfc3164Local => self.rfc3164_local(time, offset, event),
            Dialect::Rfc5424 => self.rfc5424(time, offset, event),
        }
    }

    /// `<PRI>Mmm dd hh:mm:ss TAG[pid]: TEXT | key=value …`.
    pub fn rfc3164_local(&self, time: EventTime, offset: Offset, e: &Event) -> String {
        let header = format!(
            "<{}>{} {}[{}]: ",
            priority(self.facility, e),
            rfc3164_time(time, offset),
            tag(&self.app_name),
            self.pid
        );
        let text = message_text(e);
        let figures: Vec<String> = e
            .data
            .iter()
            .zip(unique_names(e.data.keys()))
            .map(|((_, value), name)| format!(" {name}={}", logfmt_value(value)))
            .collect();
        let room = self.max_bytes.saturating_sub(header.len());
        let mut out = header;
        out.push_str(&fit_text_and_figures(&text, &figures, room));
        hard_limit(out, self.max_bytes)
    }

    /// `<PRI>1 TIMESTAMP HOST APP PROCID MSGID [zpulse@PEN …][zpulse-data@PEN …] TEXT`.
    pub fn rfc5424(&self, time: EventTime, offset: Offset, e: &Event) -> String {
        let host = self
            .hostname
            .as_deref()
            .filter(|h| !h.is_empty())
            .or(Some(e.host.as_str()).filter(|h| !h.is_empty()))
            .unwrap_or(&self.fallback_hostname);
        let header = format!(
            "<{}>1 {} {} {} {} {} ",
            priority(self.facility, e),
            rfc3339(time, offset),
            header_field(host, MAX_HOSTNAME),
            header_field(&self.app_name, MAX_APP_NAME),
            self.pid,
            header_field(&e.check, MAX_MSGID),
        );
        let text = message_text(e);
        let mut cut = false;
        let mut param = |name: &str, value: &Value| {
            let (param, was_cut) = sd_param(name, value);
            cut |= was_cut;
            param
        };
        let mut meta = vec![
            param("kind", &Value::Str(e.kind.as_str().into())),
            param("check", &Value::Str(e.check.clone())),
            param("severity", &Value::Str(e.severity.as_str().into())),
        ];
        if let Some(state) = e.state {
            meta.push(param("state", &Value::Str(state.as_str().into())));
        }
        if !e.subject.is_empty() {
            meta.push(param("subject", &Value::Str(e.subject.clone())));
        }
        let data: Vec<String> = e
            .data
            .iter()
            .zip(unique_names(e.data.keys()))
            .map(|((_, value), name)| param(&name, value))
            .collect();
        let sd = StructuredData {
            meta_id: format!("zpulse@{}", self.enterprise_number),
            data_id: format!("zpulse-data@{}", self.enterprise_number),
            meta,
            data,
            values_cut: cut,
        };
        let room = self.max_bytes.saturating_sub(header.len());
        let mut out = header;
        out.push_str(&sd.fit_with_text(&text, room));
        hard_limit(out, self.max_bytes)
    }
}

/// The readable text: who speaks, about what, in which state, then the summary, and the advice
/// when a finding is raised (updates and clears would repeat it).
///
/// `hdd-saturation on tank/mirror-0/sda (raised): sda was busy 97%. Advice: add a special vdev.`
/// Control characters (the advice may hold line breaks) become spaces: a syslog line is one line.
pub fn message_text(e: &Event) -> String {
    let mut s = String::with_capacity(e.summary.len() + 64);
    s.push_str(&e.check);
    if !e.subject.is_empty() && e.subject != e.check {
        s.push_str(" on ");
        s.push_str(&e.subject);
    }
    if let Some(state) = e.state {
        s.push_str(" (");
        s.push_str(state.as_str());
        s.push(')');
    }
    s.push_str(": ");
    s.push_str(&e.summary);
    if let (Some(State::Raised), Some(advice)) = (e.state, e.advice.as_deref()) {
        let advice = advice.trim();
        if !advice.is_empty() {
            let ended = e.summary.trim_end().ends_with(['.', '!', '?']);
            s.push_str(if ended { " Advice: " } else { ". Advice: " });
            s.push_str(advice);
        }
    }
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Local time as RFC 3164 writes it: `Nov  3 09:05:01` (day padded with a space, no year).
pub fn rfc3164_time(time: EventTime, offset: Offset) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let dt = offset.to_datetime(timestamp(time));
    format!(
        "{} {:>2} {:02}:{:02}:{:02}",
        MONTHS[(dt.month().clamp(1, 12) - 1) as usize],
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

/// RFC 3339 as RFC 5424 restricts it: upper-case `T`, microseconds, and the offset (`Z` for
/// UTC). An offset with seconds (only pre-1970s local mean times have them) is cut to whole
/// minutes, and the clock reading with it, so the string stays one consistent instant.
pub fn rfc3339(time: EventTime, offset: Offset) -> String {
    let minutes = offset.seconds() / 60;
    let offset = Offset::from_seconds(minutes * 60).unwrap_or(Offset::UTC);
    let dt = offset.to_datetime(timestamp(time));
    let zone = if minutes == 0 {
        "Z".to_string()
    } else {
        let sign = if minutes < 0 { '-' } else { '+' };
        let m = minutes.unsigned_abs();
        format!("{sign}{:02}:{:02}", m / 60, m % 60)
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}{zone}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond() / 1000
    )
}

/// The event's time as a jiff timestamp (nanoseconds clamped to one second).
pub fn timestamp(time: EventTime) -> Timestamp {
    let nanos = time.nanos.min(999_999_999) as i32;
    Timestamp::new(i64::from(time.seconds), nanos).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The 3164 TAG: at most 32 of `[A-Za-z0-9._-]`, others `_`. The config already insists on
/// that; this keeps a hand-built [`Formatter`] from writing a `:` or `[` that journald would
/// misread as the end of the identifier.
fn tag(app_name: &str) -> String {
    let out: String = app_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    if out.is_empty() { "zpulse".into() } else { out }
}

/// A 5424 header field: printable ASCII (33–126) only, others become `_`; at most `max`
/// bytes; empty is NILVALUE `-`.
pub fn header_field(s: &str, max: usize) -> String {
    let out: String = s
        .chars()
        .map(|c| if matches!(c, '!'..='~') { c } else { '_' })
        .take(max)
        .collect();
    if out.is_empty() { "-".into() } else { out }
}

/// An SD param name (or figure key): 1–32 printable ASCII characters other than `=`, space,
/// `]` and `"` (RFC 5424 §6.3.3); the others become `_`.
pub fn sd_name(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if matches!(c, '!'..='~') && !matches!(c, '=' | ']' | '"') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_SD_NAME)
        .collect();
    if out.is_empty() { "_".into() } else { out }
}

/// Sanitized names for `keys`, made unique: sanitizing and the 32-character cut can map two
/// keys to one name, and a receiver that keeps params in a map would lose one of them.
pub(crate) fn unique_names<'a>(keys: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for key in keys {
        let base = sd_name(key);
        let mut name = base.clone();
        let mut n = 2;
        while !seen.insert(name.clone()) {
            let suffix = format!("~{n}");
            let keep = truncate_utf8(&base, MAX_SD_NAME - suffix.len());
            name = format!("{keep}{suffix}");
            n += 1;
        }
        out.push(name);
    }
    out
}

/// Escapes an SD param value: exactly `"`, `\` and `]` get a backslash (RFC 5424 §6.3.3).
pub fn escape_sd_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        if matches!(c, '"' | '\\' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// ` name="escaped value"` within [`MAX_SD_VALUE_BYTES`], and whether the value was cut to
/// fit: a string loses its end (and gets `...`), a list or map its last elements (and stays
/// valid JSON). Control characters become spaces: receivers escape them (`#012`) or split
/// lines on them.
fn sd_param(name: &str, value: &Value) -> (String, bool) {
    let escaped = |text: &str| {
        let clean: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        escape_sd_value(&clean)
    };
    let mut out = escaped(&value_text(value));
    let mut cut = false;
    if out.len() > MAX_SD_VALUE_BYTES {
        cut = true;
        out = match json_elements(value) {
            Some((open, elements, close)) => {
                // Whole elements, as many as fit with the brackets. The brackets are part of
                // the value, so escaped like the rest: a bare `]` would end the SD element.
                let (open, close) = (escaped(open), escaped(close));
                let mut s = open;
                for (i, element) in elements.iter().map(|e| escaped(e)).enumerate() {
                    let sep = usize::from(i > 0);
                    if s.len() + sep + element.len() + close.len() > MAX_SD_VALUE_BYTES {
                        break;
                    }
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(&element);
                }
                s.push_str(&close);
                s
            }
            None => {
                let keep = cut_escaped(&out, MAX_SD_VALUE_BYTES - CUT_MARK.len()).len();
                out.truncate(keep);
                out.push_str(CUT_MARK);
                out
            }
        };
    }
    (format!(" {}=\"{out}\"", sd_name(name)), cut)
}

/// A list or map figure as its JSON brackets and elements (`"key":value` for a map), so that
/// it can be shortened by whole elements; `None` for every other value.
fn json_elements(value: &Value) -> Option<(&'static str, Vec<String>, &'static str)> {
    match value {
        Value::List(items) => Some(("[", items.iter().map(json).collect(), "]")),
        Value::Map(entries) => Some((
            "{",
            entries
                .iter()
                .map(|(k, v)| format!("{}:{}", json(k), json(v)))
                .collect(),
            "}",
        )),
        _ => None,
    }
}

/// JSON text, the spelling of [`value_text`].
fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A figure as text: strings as they are, everything else as JSON (`97.5`, `true`, `null`,
/// `["sda","sdb"]`), the same spelling as the JSON sink.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        other => json(other),
    }
}

/// A figure in MSG (3164): quoted with `\"` and `\\` when it is empty or holds a space, `"`,
/// `=` or `\`, as logfmt readers expect.
fn logfmt_value(v: &Value) -> String {
    let text: String = value_text(v)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if !text.is_empty() && !text.contains([' ', '"', '=', '\\']) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest prefix of an *escaped* SD value of at most `max` bytes that splits neither a
/// UTF-8 character nor an escape sequence (a prefix ending in a lone `\` would escape the
/// closing quote).
pub fn cut_escaped(escaped: &str, max: usize) -> &str {
    let cut = truncate_utf8(escaped, max);
    // Count the backslashes the prefix ends with: an odd number means the last one starts an
    // escape whose escaped character was cut off.
    let trailing = cut.bytes().rev().take_while(|&b| b == b'\\').count();
    if trailing % 2 == 1 {
        &cut[..cut.len() - 1]
    } else {
        cut
    }
}

/// `text` in at most `budget` bytes: whole, or cut with [`CUT_MARK`] at its end.
fn cut_text(text: &str, budget: usize) -> String {
    if text.len() <= budget {
        return text.to_string();
    }
    let keep = truncate_utf8(text, budget.saturating_sub(CUT_MARK.len()));
    format!("{keep}{CUT_MARK}")
}

/// Whether `budget` bytes hold the text, or at least its first [`MIN_TEXT_BYTES`].
fn text_fits(text: &str, budget: usize) -> bool {
    budget >= text.len().min(MIN_TEXT_BYTES)
}

/// Text plus figures within `room` bytes: the text is cut first (to [`MIN_TEXT_BYTES`]), then
/// figures are dropped from the end (a ` ...` after the last kept one says so), then the text
/// is cut further.
fn fit_text_and_figures(text: &str, figures: &[String], room: usize) -> String {
    const SEP: &str = " |";
    if figures.is_empty() {
        return cut_text(text, room);
    }
    let mark = format!(" {CUT_MARK}");
    let mut len: usize = figures.iter().map(String::len).sum();
    if text.len() + SEP.len() + len <= room {
        return format!("{text}{SEP}{}", figures.concat());
    }
    if let Some(budget) = room.checked_sub(SEP.len() + len)
        && text_fits(text, budget)
    {
        return format!("{}{SEP}{}", cut_text(text, budget), figures.concat());
    }
    // Keep as many figures as fit beside the shortest text, then the mark.
    for kept in (1..figures.len()).rev() {
        len -= figures[kept].len();
        if let Some(budget) = room.checked_sub(SEP.len() + len + mark.len())
            && text_fits(text, budget)
        {
            let text = cut_text(text, budget);
            return format!("{text}{SEP}{}{mark}", figures[..kept].concat());
        }
    }
    format!("{}{mark}", cut_text(text, room.saturating_sub(mark.len())))
}

/// The SD of one event: identity (`zpulse@PEN`) and figures (`zpulse-data@PEN`), each param
/// already rendered as ` name="value"`.
struct StructuredData {
    meta_id: String,
    data_id: String,
    meta: Vec<String>,
    data: Vec<String>,
    /// A param value was cut to [`MAX_SD_VALUE_BYTES`]: the SD says `truncated="true"`.
    values_cut: bool,
}

impl StructuredData {
    const TRUNCATED: &'static str = " truncated=\"true\"";

    fn render(&self, meta: usize, data: usize, truncated: bool) -> String {
        let mut s = String::new();
        s.push('[');
        s.push_str(&self.meta_id);
        for p in &self.meta[..meta] {
            s.push_str(p);
        }
        if truncated {
            s.push_str(Self::TRUNCATED);
        }
        s.push(']');
        if data > 0 {
            s.push('[');
            s.push_str(&self.data_id);
            for p in &self.data[..data] {
                s.push_str(p);
            }
            s.push(']');
        }
        s
    }

    fn len(&self, meta: usize, data: usize, truncated: bool) -> usize {
        let mut n =
            2 + self.meta_id.len() + self.meta[..meta].iter().map(String::len).sum::<usize>();
        if truncated {
            n += Self::TRUNCATED.len();
        }
        if data > 0 {
            n += 2 + self.data_id.len() + self.data[..data].iter().map(String::len).sum::<usize>();
        }
        n
    }

    /// `SD SP TEXT` within `room` bytes: cuts the text (to [`MIN_TEXT_BYTES`]), then drops
    /// figures from the end, then cuts the text further, and only then drops identity params
    /// from the end (subject first: MSG repeats it). Anything cut or dropped from the SD adds
    /// `truncated="true"`; a cut text ends in `...`.
    fn fit_with_text(&self, text: &str, room: usize) -> String {
        let join = |sd: String, text: String| {
            if text.is_empty() {
                sd
            } else {
                format!("{sd} {text}")
            }
        };
        // Room for the text beside an SD of `sd` bytes (the separating space included).
        let budget = |sd: usize| room.checked_sub(sd + 1);
        let (m, d) = (self.meta.len(), self.data.len());
        let cut = self.values_cut;
        if budget(self.len(m, d, cut)).is_some_and(|b| text.len() <= b) {
            return join(self.render(m, d, cut), text.to_string());
        }
        if let Some(b) = budget(self.len(m, d, cut))
            && text_fits(text, b)
        {
            return join(self.render(m, d, cut), cut_text(text, b));
        }
        for d in (0..d).rev() {
            if let Some(b) = budget(self.len(m, d, true))
                && text_fits(text, b)
            {
                return join(self.render(m, d, true), cut_text(text, b));
            }
        }
        for m in (0..=m).rev() {
            if let Some(b) = budget(self.len(m, 0, true))
                && b > CUT_MARK.len()
            {
                return join(self.render(m, 0, true), cut_text(text, b));
            }
        }
        self.render(0, 0, true)
    }
}

/// The last guard: whatever happened above, the message ends within `max` bytes on a
/// character boundary. Only reachable when `max` is smaller than a header, which the config
/// refuses.
fn hard_limit(mut s: String, max: usize) -> String {
    let keep = truncate_utf8(&s, max).len();
    s.truncate(keep);
    s
}
