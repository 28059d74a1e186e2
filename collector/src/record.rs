//! A received zpulse event record read straight into its [`Row`]: what the connections do
//! with each entry of a batch.
//!
//! The general way ([`Event::from_msgpack`], then [`Row::from_owned_event`]) decodes the
//! record into an [`Event`] (a string and a map node per field and figure), validates it
//! (which formats each figure's path), and writes its `data` as JSON from that map: about
//! half of the collector's CPU per event at full rate. Here one pass over the MessagePack
//! bytes checks the same rules and writes the row's strings and JSON as it goes.
//!
//! It only answers for records in the form the agent writes (`rmp_serde`'s named maps:
//! known keys, each once, as `str`; `data` keys sorted and distinct; scalars, lists and
//! maps): for anything else (another encoding of the same event, a record that is not a
//! valid event, an unsure case) it says `None` and the caller decodes the general way,
//! which also says why a record is invalid. So what it returns is always the row the
//! general way makes of the same bytes (tested against it, `tests::*`).

use crate::store::{CHART_PCT_SUFFIX, Row, chart_point_name};
use serde::Serialize;
use zpulse_proto::event::{EVENT_VERSION, limits};

/// The row of `record` when it is a valid zpulse event in the agent's form, else `None`.
pub fn row(tag: &str, ts: i64, record: &[u8], peer_host: &str) -> Option<Row> {
    let mut c = Cursor {
        buf: record,
        pos: 0,
    };
    let n = c.map_len()?;
    let mut f = Fields::default();
    for i in 0..n {
        let key = c.str()?;
        match key {
            "v" => {
                if f.v.is_some() {
                    return None;
                }
                f.v = Some(c.uint()?);
            }
            "kind" => set(&mut f.kind, c.str()?)?,
            "host" => set(&mut f.host, c.str()?)?,
            "check" => set(&mut f.check, c.str()?)?,
            "severity" => set(&mut f.severity, c.str()?)?,
            "state" => set(&mut f.state, c.opt_str()?)?,
            "subject" => set(&mut f.subject, c.str()?)?,
            "summary" => set(&mut f.summary, c.str()?)?,
            "advice" => set(&mut f.advice, c.opt_str()?)?,
            "data" => {
                if f.data.is_some() {
                    return None;
                }
                f.data = Some(c.pos);
                // Last, as the agent writes it: read once the other fields are known,
                // right after this loop; else stepped over until then.
                if i + 1 < n {
                    c.skip_data()?;
                }
            }
            _ => return None,
        }
    }
    if f.v? != u64::from(EVENT_VERSION) {
        return None;
    }
    let kind = f.kind?;
    let stateful = match kind {
        "finding" | "agent" => true,
        "metrics" | "zevent" => false,
        _ => return None,
    };
    let severity = match f.severity? {
        "info" => 0,
        "warning" => 1,
        "critical" => 2,
        _ => return None,
    };
    let state = match f.state.flatten() {
        None => None,
        Some(s @ ("raised" | "updated" | "cleared")) => Some(s),
        Some(_) => return None,
    };
    // Event::validate's rules, in any order: a record that breaks one goes the general way,
    // which says which.
    if stateful != state.is_some() {
        return None;
    }
    let check = f.check?;
    if check.is_empty()
        || check.len() > limits::CHECK_CHARS
        || !check
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
    {
        return None;
    }
    let (host, subject, summary) = (
        f.host.unwrap_or(""),
        f.subject.unwrap_or(""),
        f.summary.unwrap_or(""),
    );
    let advice = f.advice.flatten();
    if !text_ok(subject, limits::SUBJECT_CHARS, false)
        || !text_ok(summary, limits::SUMMARY_CHARS, false)
        || !text_ok(host, limits::SUBJECT_CHARS, false)
        || advice.is_some_and(|a| !text_ok(a, limits::ADVICE_CHARS, true))
        || (stateful && (subject.is_empty() || summary.is_empty()))
    {
        return None;
    }
    let host = if host.is_empty() { peer_host } else { host };
    let mut json = Vec::with_capacity(64);
    let mut points = Vec::new();
    let end = match f.data {
        None => {
            json.extend_from_slice(b"{}");
            c.pos
        }
        Some(at) => {
            let mut d = Cursor {
                buf: record,
                pos: at,
            };
            let mut items = 0;
            let mut top = TopLevel {
                check,
                subject,
                host,
                points: &mut points,
            };
            let n = d.map_len()?;
            d.data_map(&mut json, n, 1, &mut items, Some(&mut top))?;
            // Where the record ends when `data` is its last field.
            d.pos.max(c.pos)
        }
    };
    // Nothing after the record's map (the entry holds exactly it).
    if end != record.len() {
        return None;
    }
    // Written by serde_json alone, so valid UTF-8.
    let data = String::from_utf8(json).ok()?;
    Some(Row {
        ts,
        received: 0,
        tag: tag.to_owned(),
        kind: kind.to_owned(),
        host: host.to_owned(),
        check: check.to_owned(),
        severity: Some(severity),
        state: state.map(str::to_owned),
        subject: subject.to_owned(),
        summary: summary.to_owned(),
        advice: advice.map(str::to_owned),
        data,
        points,
    })
}

/// The fields of a record as read (each at most once).
#[derive(Default)]
struct Fields<'a> {
    v: Option<u64>,
    kind: Option<&'a str>,
    host: Option<&'a str>,
    check: Option<&'a str>,
    severity: Option<&'a str>,
    state: Option<Option<&'a str>>,
    subject: Option<&'a str>,
    summary: Option<&'a str>,
    advice: Option<Option<&'a str>>,
    /// Where `data` starts.
    data: Option<usize>,
}

/// A field seen twice is an error of the general way (serde's "duplicate field").
fn set<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// `proto`'s text rule: at most `max` characters, no control character (but newlines and
/// tabs where `newlines`).
fn text_ok(s: &str, max: usize, newlines: bool) -> bool {
    // Bytes bound characters from above: most texts need no count.
    (s.len() <= max || s.chars().count() <= max)
        && !s
            .chars()
            .any(|c| c.is_control() && !(newlines && (c == '\n' || c == '\t')))
}

/// What the top level of `data` also makes: the row's chart points.
struct TopLevel<'a, 'p> {
    check: &'a str,
    subject: &'a str,
    host: &'a str,
    points: &'p mut Vec<(String, f64)>,
}

/// A scalar of `data`, as the general way holds it.
enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(&'a str),
}

/// One MessagePack value's start, as far as this reader takes it.
enum Head<'a> {
    Scalar(Scalar<'a>),
    Array(usize),
    Map(usize),
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let out = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(out)
    }

    fn be(&mut self, n: usize) -> Option<u64> {
        Some(
            self.take(n)?
                .iter()
                .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
        )
    }

    /// The next header. Bin, ext and the reserved byte are not in this reader's form.
    fn head(&mut self) -> Option<Head<'a>> {
        let first = *self.take(1)?.first()?;
        let str_len = match first {
            0x00..=0x7f => return Some(Head::Scalar(Scalar::UInt(u64::from(first)))),
            0x80..=0x8f => return Some(Head::Map(usize::from(first & 0x0f))),
            0x90..=0x9f => return Some(Head::Array(usize::from(first & 0x0f))),
            0xa0..=0xbf => usize::from(first & 0x1f),
            0xc0 => return Some(Head::Scalar(Scalar::Null)),
            0xc2 => return Some(Head::Scalar(Scalar::Bool(false))),
            0xc3 => return Some(Head::Scalar(Scalar::Bool(true))),
            0xca => {
                let bits = self.be(4)? as u32;
                return Some(Head::Scalar(Scalar::Float(f64::from(f32::from_bits(bits)))));
            }
            0xcb => return Some(Head::Scalar(Scalar::Float(f64::from_bits(self.be(8)?)))),
            0xcc..=0xcf => {
                let v = self.be(1 << (first - 0xcc))?;
                return Some(Head::Scalar(Scalar::UInt(v)));
            }
            0xd0..=0xd3 => {
                let n = 1usize << (first - 0xd0);
                let shift = 64 - 8 * n as u32;
                let v = ((self.be(n)? << shift) as i64) >> shift;
                // The general way keeps one spelling of each integer: non-negative ones
                // unsigned.
                return Some(Head::Scalar(if v >= 0 {
                    Scalar::UInt(v as u64)
                } else {
                    Scalar::Int(v)
                }));
            }
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            0xdc => return Some(Head::Array(self.be(2)? as usize)),
            0xdd => return Some(Head::Array(self.be(4)? as usize)),
            0xde => return Some(Head::Map(self.be(2)? as usize)),
            0xdf => return Some(Head::Map(self.be(4)? as usize)),
            0xe0..=0xff => return Some(Head::Scalar(Scalar::Int(i64::from(first as i8)))),
            _ => return None,
        };
        let text = std::str::from_utf8(self.take(str_len)?).ok()?;
        Some(Head::Scalar(Scalar::Str(text)))
    }

    fn map_len(&mut self) -> Option<usize> {
        match self.head()? {
            Head::Map(n) => Some(n),
            _ => None,
        }
    }

    fn str(&mut self) -> Option<&'a str> {
        match self.head()? {
            Head::Scalar(Scalar::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.head()? {
            Head::Scalar(Scalar::Str(s)) => Some(Some(s)),
            Head::Scalar(Scalar::Null) => Some(None),
            _ => None,
        }
    }

    fn uint(&mut self) -> Option<u64> {
        match self.head()? {
            Head::Scalar(Scalar::UInt(v)) => Some(v),
            _ => None,
        }
    }

    /// Steps over `data` (read again once the other fields are known): a map, nested at
    /// most as deep as `data` may be.
    fn skip_data(&mut self) -> Option<()> {
        let n = self.map_len()?;
        for _ in 0..n {
            self.str()?;
            self.skip_value(1)?;
        }
        Some(())
    }

    fn skip_value(&mut self, depth: usize) -> Option<()> {
        match self.head()? {
            Head::Scalar(_) => Some(()),
            Head::Array(n) | Head::Map(n)
                if depth >= limits::DATA_DEPTH || n > limits::DATA_ITEMS =>
            {
                None
            }
            Head::Array(n) => (0..n).try_for_each(|_| self.skip_value(depth + 1)),
            Head::Map(n) => (0..n).try_for_each(|_| {
                self.str()?;
                self.skip_value(depth + 1)
            }),
        }
    }

    /// A map of `data` of `n` pairs (its header read) at `depth` (`data` itself is 1), written as JSON to `out` as
    /// `serde_json` writes the general way's map: keys in order (they must come sorted and
    /// distinct, as the agent's map writes them: else the general way, which sorts), values
    /// each as serde_json writes it.
    fn data_map(
        &mut self,
        out: &mut Vec<u8>,
        n: usize,
        depth: usize,
        items: &mut usize,
        mut top: Option<&mut TopLevel>,
    ) -> Option<()> {
        if depth > limits::DATA_DEPTH {
            return None;
        }
        out.push(b'{');
        let mut previous: Option<&str> = None;
        for i in 0..n {
            let key = self.str()?;
            if previous.is_some_and(|p| p >= key)
                || key.is_empty()
                || !text_ok(key, limits::DATA_KEY_CHARS, false)
            {
                return None;
            }
            previous = Some(key);
            if i > 0 {
                out.push(b',');
            }
            json(out, key)?;
            out.push(b':');
            let number = self.value(out, depth, items)?;
            if let (Some(top), Some(x)) = (top.as_deref_mut(), number)
                && key.ends_with(CHART_PCT_SUFFIX)
                && x.is_finite()
            {
                let name = chart_point_name(top.check, top.subject, top.host, key);
                top.points.push((name, x));
            }
        }
        out.push(b'}');
        Some(())
    }

    /// One value of `data` at `depth`, written as JSON; its number, if it is one.
    fn value(&mut self, out: &mut Vec<u8>, depth: usize, items: &mut usize) -> Option<Option<f64>> {
        *items += 1;
        if *items > limits::DATA_ITEMS {
            return None;
        }
        match self.head()? {
            Head::Scalar(s) => {
                let number = match s {
                    Scalar::Null => {
                        out.extend_from_slice(b"null");
                        None
                    }
                    Scalar::Bool(b) => {
                        json(out, &b)?;
                        None
                    }
                    Scalar::Int(v) => {
                        json(out, &v)?;
                        Some(v as f64)
                    }
                    Scalar::UInt(v) => {
                        json(out, &v)?;
                        Some(v as f64)
                    }
                    Scalar::Float(v) => {
                        if !v.is_finite() {
                            return None;
                        }
                        json(out, &v)?;
                        Some(v)
                    }
                    Scalar::Str(s) => {
                        if !text_ok(s, limits::SUMMARY_CHARS, false) {
                            return None;
                        }
                        json(out, s)?;
                        None
                    }
                };
                Some(number)
            }
            Head::Array(n) => {
                if depth + 1 > limits::DATA_DEPTH {
                    return None;
                }
                out.push(b'[');
                for i in 0..n {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.value(out, depth + 1, items)?;
                }
                out.push(b']');
                Some(None)
            }
            Head::Map(n) => {
                self.data_map(out, n, depth + 1, items, None)?;
                Some(None)
            }
        }
    }
}

/// One value written as `serde_json` writes it (numbers and strings alike).
fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Option<()> {
    serde_json::to_writer(out, v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use zpulse_proto::event::{Event, Kind, Severity, State, Value};

    /// The general way's row of `record`, or its error.
    fn general(record: &[u8]) -> Result<Row, String> {
        Event::from_msgpack(record).map(|e| Row::from_owned_event("zpulse.t", 7, e, "peer"))
    }

    /// What the fast path says is what the general way says; `None` only where it declines.
    fn agrees(record: &[u8]) -> Option<Row> {
        let fast = row("zpulse.t", 7, record, "peer");
        if let Some(fast) = &fast {
            assert_eq!(Ok(fast), general(record).as_ref(), "record {record:02x?}");
        }
        fast
    }

    // Hand-written MessagePack, for the forms the agent does not write.
    fn s(out: &mut Vec<u8>, t: &str) {
        assert!(t.len() < 32);
        out.push(0xa0 | t.len() as u8);
        out.extend_from_slice(t.as_bytes());
    }

    /// A metrics record with its fields in this order, `data` as given (encoded), and
    /// `extra` pairs (encoded) after.
    fn metrics_record(data: &[u8], data_first: bool, extra: &[u8], extra_pairs: u8) -> Vec<u8> {
        let mut out = vec![0x80 | (6 + extra_pairs)];
        let fields = |out: &mut Vec<u8>| {
            s(out, "v");
            out.push(1);
            s(out, "kind");
            s(out, "metrics");
            s(out, "check");
            s(out, "disk");
            s(out, "severity");
            s(out, "info");
            s(out, "subject");
            s(out, "sdb");
        };
        if data_first {
            s(&mut out, "data");
            out.extend_from_slice(data);
            fields(&mut out);
        } else {
            fields(&mut out);
            s(&mut out, "data");
            out.extend_from_slice(data);
        }
        out.extend_from_slice(extra);
        out
    }

    /// The values the spec gives, written as the JSON the store keeps and charted.
    #[test]
    fn an_agent_record_becomes_its_row() {
        let mut e = Event::metrics("disk", "sdb", "disk figures")
            .with("busy_pct", 42.5)
            .with("delta", -3i64)
            .with("name", "a \"b\"")
            .with("read_iops", 7u64)
            .with("wait_pct", 0.0);
        e.host = "nas1".into();
        let r = agrees(&e.to_msgpack()).expect("the agent's form is read straight");
        assert_eq!(
            r.data,
            r#"{"busy_pct":42.5,"delta":-3,"name":"a \"b\"","read_iops":7,"wait_pct":0.0}"#
        );
        assert_eq!(
            r.points,
            [
                ("disk sdb busy_pct".to_owned(), 42.5),
                ("disk sdb wait_pct".to_owned(), 0.0)
            ]
        );
        assert_eq!(
            (r.kind.as_str(), r.host.as_str(), r.severity, r.state, r.ts),
            ("metrics", "nas1", Some(0), None, 7)
        );
        // A finding without a host: the peer's, and the subject about the host is left out
        // of the series name.
        let e = Event::finding("arc", State::Cleared, Severity::Critical, "peer", "arc ok")
            .with_advice("line one\nline two")
            .with("hit_pct", 97u64);
        let r = agrees(&e.to_msgpack()).unwrap();
        assert_eq!(
            (
                r.host.as_str(),
                r.state.as_deref(),
                r.severity,
                r.advice.as_deref()
            ),
            ("peer", Some("cleared"), Some(2), Some("line one\nline two"))
        );
        assert_eq!(r.points, [("arc hit_pct".to_owned(), 97.0)]);
        assert_eq!(r.data, r#"{"hit_pct":97}"#);
    }

    /// Forms the agent does not write but MessagePack allows: read alike, or left to the
    /// general way, never read otherwise.
    #[test]
    fn other_forms_agree_with_the_general_way() {
        // data first; a float32; a positive int in a signed marker; nested list and map.
        let mut data = vec![0x84];
        s(&mut data, "a_pct");
        data.extend_from_slice(&[0xca, 0x3f, 0xc0, 0, 0]); // 1.5f32
        s(&mut data, "b");
        data.extend_from_slice(&[0xd0, 0x05]); // 5 as int8
        s(&mut data, "c");
        data.extend_from_slice(&[0x92, 0xc0, 0xc3]); // [nil, true]
        s(&mut data, "d");
        data.extend_from_slice(&[0x81]);
        s(&mut data, "e");
        data.push(0xff); // -1
        for data_first in [true, false] {
            let r = agrees(&metrics_record(&data, data_first, &[], 0))
                .expect("read straight whatever the order of the fields");
            assert_eq!(
                r.data,
                r#"{"a_pct":1.5,"b":5,"c":[null,true],"d":{"e":-1}}"#
            );
            assert_eq!(r.points, [("disk sdb a_pct".to_owned(), 1.5)]);
        }
        // Declined (the general way decides): data keys unsorted or repeated, a field twice,
        // an unknown field, a bin string, bytes after the map, a NaN, a control character,
        // nesting past the limit, a state on metrics.
        let mut unsorted = vec![0x82];
        s(&mut unsorted, "b");
        unsorted.push(1);
        s(&mut unsorted, "a");
        unsorted.push(2);
        let mut repeated = vec![0x82];
        s(&mut repeated, "a");
        repeated.push(1);
        s(&mut repeated, "a");
        repeated.push(2);
        let mut twice = Vec::new();
        s(&mut twice, "subject");
        s(&mut twice, "sdc");
        let mut unknown = Vec::new();
        s(&mut unknown, "colour");
        s(&mut unknown, "red");
        let mut state = Vec::new();
        s(&mut state, "state");
        s(&mut state, "raised");
        let mut bin = vec![0x81];
        s(&mut bin, "a");
        bin.extend_from_slice(&[0xc4, 1, b'x']);
        let mut nan = vec![0x81];
        s(&mut nan, "a");
        nan.push(0xcb);
        nan.extend_from_slice(&f64::NAN.to_bits().to_be_bytes());
        let mut control = vec![0x81];
        s(&mut control, "a");
        s(&mut control, "x\u{7}");
        let mut deep = vec![0x81];
        s(&mut deep, "a");
        deep.extend_from_slice(&[0x91, 0x91, 0x91, 0x91, 1]);
        let empty = [0x80u8];
        let cases: Vec<Vec<u8>> = vec![
            metrics_record(&unsorted, false, &[], 0),
            metrics_record(&repeated, false, &[], 0),
            metrics_record(&empty, false, &twice, 1),
            metrics_record(&empty, false, &unknown, 1),
            metrics_record(&empty, false, &state, 1),
            metrics_record(&bin, false, &[], 0),
            metrics_record(&nan, false, &[], 0),
            metrics_record(&control, false, &[], 0),
            metrics_record(&deep, false, &[], 0),
            [metrics_record(&empty, false, &[], 0), vec![0xc0]].concat(),
        ];
        for (i, case) in cases.iter().enumerate() {
            assert_eq!(agrees(case), None, "case {i}");
        }
        // The same record without the fault is read straight.
        assert!(agrees(&metrics_record(&empty, false, &[], 0)).is_some());
        // Anything cut short, anywhere: declined or agreed, never a panic.
        let whole = metrics_record(&data, false, &[], 0);
        for end in 0..whole.len() {
            assert_eq!(agrees(&whole[..end]), None);
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[a-z0-9._-]{1,8}",
            "[a-z_]{0,6}(_pct)?",
            any::<String>(),
            "\\PC{0,300}",
            proptest::collection::vec(
                prop_oneof![Just('\n'), Just('\t'), Just('\u{85}'), Just('é'), Just('a')],
                0..70
            )
            .prop_map(|v| v.into_iter().collect()),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::UInt),
            any::<f64>().prop_map(Value::Float),
            prop_oneof![Just(f64::INFINITY), Just(-0.0), Just(1e300), Just(0.1)]
                .prop_map(Value::Float),
            text().prop_map(Value::Str),
        ];
        leaf.prop_recursive(5, 300, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::List),
                proptest::collection::btree_map(text(), inner, 0..6).prop_map(Value::Map),
            ]
        })
    }

    fn event() -> impl Strategy<Value = Event> {
        (
            (
                prop_oneof![
                    Just(Kind::Finding),
                    Just(Kind::Metrics),
                    Just(Kind::Agent),
                    Just(Kind::Zevent)
                ],
                prop_oneof![
                    Just(Severity::Info),
                    Just(Severity::Warning),
                    Just(Severity::Critical)
                ],
                proptest::option::of(prop_oneof![
                    Just(State::Raised),
                    Just(State::Updated),
                    Just(State::Cleared)
                ]),
                any::<u8>(),
            ),
            (text(), text(), text(), text(), proptest::option::of(text())),
            proptest::collection::btree_map(text(), value(), 0..8),
        )
            .prop_map(
                |((kind, severity, state, v), (host, check, subject, summary, advice), data)| {
                    let mut e = Event::metrics(check, subject, summary);
                    e.kind = kind;
                    e.severity = severity;
                    e.state = state;
                    e.host = host;
                    e.advice = advice;
                    e.data = data;
                    // Now and then another version.
                    if v == 0 {
                        e.v = 2;
                    }
                    e
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Every record the agent writes: the fast path makes the general way's row of
        /// the valid ones, and declines the invalid ones (which the general way refuses).
        #[test]
        fn agrees_with_the_general_way(e in event()) {
            let bytes = e.to_msgpack();
            let fast = agrees(&bytes);
            prop_assert_eq!(fast.is_some(), general(&bytes).is_ok());
        }

        /// Any bytes at all: never a row the general way would not make.
        #[test]
        fn any_bytes_agree(e in event(), at in any::<prop::sample::Index>(), b in any::<u8>()) {
            let mut bytes = e.to_msgpack();
            let i = at.index(bytes.len());
            bytes[i] = b;
            agrees(&bytes);
        }
    }

    /// `data` of many items is declined past the bound, as the general way refuses it.
    #[test]
    fn data_items_are_bounded() {
        let many: BTreeMap<String, Value> = (0..300)
            .map(|i| (format!("k{i:03}"), Value::UInt(i)))
            .collect();
        let mut e = Event::metrics("disk", "sdb", "x");
        e.data = many;
        assert!(general(&e.to_msgpack()).is_err());
        assert_eq!(agrees(&e.to_msgpack()), None);
    }
}
