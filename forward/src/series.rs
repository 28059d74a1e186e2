//! The metric record: one reading's metrics as one Forward record under the tag
//! `zpulse.series` ([`TAG`]). [`SeriesWriter`] encodes it, [`SeriesRecord::decode`] reads it.
//!
//! Not an event (`zpulse.metrics` is a plugin's stateless event, bounded by the event's 256
//! data items): a lab host's reading has 2,700–4,600 series, which as events would be a
//! dozen or more records per reading that a receiver must put back together. So the series
//! are one record of their own type with their own bounds ([`MAX_SERIES`] and friends).
//!
//! The series are the Prometheus exposition's, by the same code: the same names, the same
//! labels, counters as counters (the receiver computes rates, as Prometheus does, so a lost
//! record loses no rate, only a point), histogram buckets as `…_bucket` series with `le`.
//! The record is a MessagePack map:
//!
//! ```text
//! { "v": 1, "host": "nas1",
//!   "groups": [ [name, type, [label names…], [[label values…, value], …]], … ] }
//! ```
//!
//! A group is a run of series with one name and one list of label names; label names are
//! written once per group, not once per series. An empty label value means "no such label"
//! (as in the exposition formats). `type` is `counter`, `gauge` or `histogram` (the family's
//! type: a histogram's `_bucket`, `_sum` and `_count` series all say `histogram`). A value is
//! a MessagePack integer or float.

use super::msgpack::{Head, Reader, write_array_len, write_map_len, write_str, write_uint};
use super::{FrameError, Limits};

/// The Forward tag of a metric record.
pub const TAG: &str = "zpulse.series";
/// The record version written in `v`.
pub const VERSION: u64 = 1;
/// Series in one record, at most.
pub const MAX_SERIES: usize = 100_000;
/// Label names of one group, at most.
pub const MAX_LABELS: usize = 16;
/// Characters of a name, label or label value, at most.
pub const MAX_TEXT: usize = 256;
/// Bytes of one encoded record, at most (a lab host's reading is 110–225 kB).
pub const MAX_RECORD_BYTES: usize = 4 << 20;

/// A family's type, as the exposition's `# TYPE` line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesType {
    Counter,
    Gauge,
    Histogram,
}

impl SeriesType {
    pub fn as_str(self) -> &'static str {
        match self {
            SeriesType::Counter => "counter",
            SeriesType::Gauge => "gauge",
            SeriesType::Histogram => "histogram",
        }
    }

    fn parse(s: &str) -> Option<SeriesType> {
        [
            SeriesType::Counter,
            SeriesType::Gauge,
            SeriesType::Histogram,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// A value as the kernel gave it: integers stay exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

impl Number {
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Unsigned(v) => v as f64,
            Number::Signed(v) => v as f64,
            Number::Float(v) => v,
        }
    }
}

/// Encodes a record series by series, without building it first. Group and series counts
/// are written as 32-bit array headers and filled in at the end.
pub struct SeriesWriter {
    out: Vec<u8>,
    groups: u32,
    groups_at: usize,
    group: Group,
    series: usize,
    /// The label values of a run of series, encoded once for the run ([`Self::series_run`]).
    row: Vec<u8>,
}

/// The open group: its name and label names (their buffers kept from group to group), and
/// where its series count goes.
#[derive(Default)]
struct Group {
    open: bool,
    name: String,
    keys: Vec<String>,
    count_at: usize,
    count: u32,
}

impl Group {
    fn is<'k>(&self, name: &str, mut keys: impl Iterator<Item = &'k str>, n: usize) -> bool {
        self.open
            && self.name == name
            && self.keys.len() == n
            && self.keys.iter().all(|k| keys.next() == Some(k.as_str()))
    }

    fn open<'k>(&mut self, name: &str, keys: impl Iterator<Item = &'k str>, count_at: usize) {
        self.open = true;
        self.name.clear();
        self.name.push_str(name);
        let mut n = 0;
        for k in keys {
            match self.keys.get_mut(n) {
                Some(kept) => {
                    kept.clear();
                    kept.push_str(k);
                }
                None => self.keys.push(k.to_owned()),
            }
            n += 1;
        }
        self.keys.truncate(n);
        self.count_at = count_at;
        self.count = 0;
    }
}

fn write_array32(out: &mut Vec<u8>) -> usize {
    out.push(0xdd);
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    at
}

fn patch(out: &mut [u8], at: usize, n: u32) {
    out[at..at + 4].copy_from_slice(&n.to_be_bytes());
}

#[inline]
fn write_number(out: &mut Vec<u8>, value: Number) {
    match value {
        Number::Unsigned(v) => write_uint(out, v),
        Number::Signed(v) if v >= 0 => write_uint(out, v as u64),
        Number::Signed(v) => {
            out.push(0xd3);
            out.extend_from_slice(&v.to_be_bytes());
        }
        Number::Float(v) => {
            out.push(0xcb);
            out.extend_from_slice(&v.to_bits().to_be_bytes());
        }
    }
}

impl SeriesWriter {
    pub fn new(host: &str, capacity: usize) -> SeriesWriter {
        let mut out = Vec::with_capacity(capacity);
        write_map_len(&mut out, 3);
        write_str(&mut out, "v");
        write_uint(&mut out, VERSION);
        write_str(&mut out, "host");
        write_str(&mut out, host);
        write_str(&mut out, "groups");
        let groups_at = write_array32(&mut out);
        SeriesWriter {
            out,
            groups: 0,
            groups_at,
            group: Group::default(),
            series: 0,
            row: Vec::new(),
        }
    }

    fn close_group(&mut self) {
        if self.group.open {
            self.group.open = false;
            patch(&mut self.out, self.group.count_at, self.group.count);
        }
    }

    /// Makes the open group the one of `name` and these `n` label names: consecutive series
    /// with the same name and label names share a group.
    fn enter_group<'k>(
        &mut self,
        name: &str,
        kind: SeriesType,
        keys: impl Iterator<Item = &'k str> + Clone,
        n: usize,
    ) {
        if self.group.is(name, keys.clone(), n) {
            return;
        }
        self.close_group();
        self.groups += 1;
        write_array_len(&mut self.out, 4);
        write_str(&mut self.out, name);
        write_str(&mut self.out, kind.as_str());
        write_array_len(&mut self.out, n);
        for k in keys.clone() {
            write_str(&mut self.out, k);
        }
        let at = write_array32(&mut self.out);
        self.group.open(name, keys, at);
    }

    /// Adds one series.
    pub fn series(&mut self, name: &str, kind: SeriesType, labels: &[(&str, &str)], value: Number) {
        if self.series >= MAX_SERIES {
            return;
        }
        self.enter_group(name, kind, labels.iter().map(|(k, _)| *k), labels.len());
        self.series += 1;
        self.group.count += 1;
        write_array_len(&mut self.out, labels.len() + 1);
        for (_, v) in labels {
            write_str(&mut self.out, v);
        }
        write_number(&mut self.out, value);
    }

    /// Adds one series for each item of `run`: `labels`, then `last_key` with the item's
    /// label value, and the item's value — the same as [`Self::series`] for each, with the
    /// labels encoded once for the run (a histogram's buckets: `le`).
    pub fn series_run<'v>(
        &mut self,
        name: &str,
        kind: SeriesType,
        labels: &[(&str, &str)],
        last_key: &str,
        run: impl IntoIterator<Item = (&'v str, Number)>,
    ) {
        if self.series >= MAX_SERIES {
            return;
        }
        let keys = labels.iter().map(|(k, _)| *k).chain([last_key]);
        self.enter_group(name, kind, keys, labels.len() + 1);
        self.row.clear();
        write_array_len(&mut self.row, labels.len() + 2);
        for (_, v) in labels {
            write_str(&mut self.row, v);
        }
        for (last, value) in run {
            if self.series >= MAX_SERIES {
                return;
            }
            self.series += 1;
            self.group.count += 1;
            self.out.extend_from_slice(&self.row);
            write_str(&mut self.out, last);
            write_number(&mut self.out, value);
        }
    }

    /// Series written so far (at most [`MAX_SERIES`]: more are not written).
    pub fn len(&self) -> usize {
        self.series
    }

    pub fn is_empty(&self) -> bool {
        self.series == 0
    }

    /// The encoded record.
    pub fn finish(mut self) -> Vec<u8> {
        self.close_group();
        patch(&mut self.out, self.groups_at, self.groups);
        self.out
    }
}

/// One series of a decoded record.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub kind: SeriesType,
    /// Labels with a value, in the record's order.
    pub labels: Vec<(String, String)>,
    pub value: Number,
}

impl Series {
    /// The value of label `key`, if present.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A decoded metric record.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesRecord {
    pub host: String,
    pub series: Vec<Series>,
}

fn bad(why: impl Into<String>) -> String {
    format!("metric record: {}", why.into())
}

fn frame(e: FrameError) -> String {
    bad(e.to_string())
}

fn text<'a>(r: &mut Reader<'a>, what: &str) -> Result<&'a str, String> {
    let s = r.str(what).map_err(frame)?;
    if s.chars().count() > MAX_TEXT {
        return Err(bad(format!("{what}: longer than {MAX_TEXT} characters")));
    }
    Ok(s)
}

fn array(r: &mut Reader, what: &str) -> Result<u32, String> {
    match r.head().map_err(frame)? {
        Head::Array(n) => Ok(n),
        other => Err(bad(format!(
            "{what}: expected an array, found {}",
            other.describe()
        ))),
    }
}

impl SeriesRecord {
    /// Reads and checks one record: every bound is checked before anything is allocated
    /// for it, and a malformed record is an error naming the field.
    pub fn decode(bytes: &[u8]) -> Result<SeriesRecord, String> {
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(bad(format!("larger than {MAX_RECORD_BYTES} bytes")));
        }
        let limits = Limits {
            max_frame_bytes: MAX_RECORD_BYTES,
            max_depth: 5,
            max_inflated_bytes: 0,
            max_entries: 0,
        };
        // The whole value first: its nesting and length are checked without recursion.
        let len = super::msgpack::value_len(bytes, &limits).map_err(frame)?;
        let mut r = Reader::new(&bytes[..len]);
        let fields = match r.head().map_err(frame)? {
            Head::Map(n) => n,
            other => return Err(bad(format!("expected a map, found {}", other.describe()))),
        };
        let (mut version, mut host, mut series) = (None, None, Vec::new());
        for _ in 0..fields {
            match text(&mut r, "key")? {
                "v" => match r.head().map_err(frame)? {
                    Head::UInt(v) => version = Some(v),
                    other => return Err(bad(format!("v: {}", other.describe()))),
                },
                "host" => host = Some(text(&mut r, "host")?.to_owned()),
                "groups" => {
                    let groups = array(&mut r, "groups")?;
                    for _ in 0..groups {
                        group(&mut r, &mut series)?;
                    }
                }
                _ => {
                    // Unknown keys are skipped: a later version may add some.
                    r.value(&limits).map_err(frame)?;
                }
            }
        }
        match version {
            Some(VERSION) => {}
            Some(v) => return Err(bad(format!("v: version {v} (this reads {VERSION})"))),
            None => return Err(bad("v: missing")),
        }
        let host = host.ok_or_else(|| bad("host: missing"))?;
        Ok(SeriesRecord { host, series })
    }
}

fn group(r: &mut Reader, series: &mut Vec<Series>) -> Result<(), String> {
    if array(r, "group")? != 4 {
        return Err(bad("group: give [name, type, label names, series]"));
    }
    let name = text(r, "name")?.to_owned();
    let kind = text(r, "type")?;
    let kind = SeriesType::parse(kind).ok_or_else(|| bad(format!("type {kind:?}")))?;
    let n_labels = array(r, "label names")? as usize;
    if n_labels > MAX_LABELS {
        return Err(bad(format!("{name}: more than {MAX_LABELS} labels")));
    }
    let mut keys = Vec::with_capacity(n_labels);
    for _ in 0..n_labels {
        keys.push(text(r, "label name")?.to_owned());
    }
    let rows = array(r, "series")? as usize;
    if series.len() + rows > MAX_SERIES {
        return Err(bad(format!("more than {MAX_SERIES} series")));
    }
    for _ in 0..rows {
        if array(r, "series")? as usize != n_labels + 1 {
            return Err(bad(format!(
                "{name}: a series needs {n_labels} label values and a value"
            )));
        }
        let mut labels = Vec::with_capacity(n_labels);
        for k in &keys {
            let v = text(r, "label value")?;
            if !v.is_empty() {
                labels.push((k.clone(), v.to_owned()));
            }
        }
        let value = match r.head().map_err(frame)? {
            Head::UInt(v) => Number::Unsigned(v),
            Head::Int(v) => Number::Signed(v),
            Head::Float(v) => Number::Float(v),
            other => {
                return Err(bad(format!(
                    "{name}: a value is a number, not {}",
                    other.describe()
                )));
            }
        };
        series.push(Series {
            name: name.clone(),
            kind,
            labels,
            value,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_decodes_to_what_was_written() {
        let mut w = SeriesWriter::new("nas1", 0);
        w.series(
            "zpulse_arc_size_bytes",
            SeriesType::Gauge,
            &[],
            Number::Unsigned(1 << 40),
        );
        let l = [("pool", "tank"), ("leaf", "")];
        w.series(
            "zpulse_x_total",
            SeriesType::Counter,
            &l,
            Number::Signed(-3),
        );
        let l2 = [("pool", "tank"), ("leaf", "sda")];
        w.series(
            "zpulse_x_total",
            SeriesType::Counter,
            &l2,
            Number::Float(0.5),
        );
        let r = SeriesRecord::decode(&w.finish()).unwrap();
        assert_eq!(r.host, "nas1");
        assert_eq!(r.series.len(), 3);
        assert_eq!(r.series[0].value, Number::Unsigned(1 << 40));
        assert_eq!(r.series[1].labels, vec![("pool".into(), "tank".into())]);
        assert_eq!(r.series[1].value, Number::Signed(-3));
        assert_eq!(r.series[2].label("leaf"), Some("sda"));
        assert_eq!(r.series[2].value.as_f64(), 0.5);
        assert_eq!(r.series[2].kind, SeriesType::Counter);
    }

    #[test]
    fn a_run_is_the_same_record_as_its_series_one_by_one() {
        let labels = [("pool", "tank"), ("leaf", "")];
        let run = [("0.5", 3u64), ("1", 5), ("+Inf", 9)];
        let mut one_by_one = SeriesWriter::new("h", 0);
        one_by_one.series("x", SeriesType::Gauge, &[], Number::Unsigned(1));
        for (le, n) in run {
            let [p, l] = labels;
            one_by_one.series(
                "x_bucket",
                SeriesType::Histogram,
                &[p, l, ("le", le)],
                Number::Unsigned(n),
            );
        }
        let mut by_run = SeriesWriter::new("h", 0);
        by_run.series("x", SeriesType::Gauge, &[], Number::Unsigned(1));
        by_run.series_run(
            "x_bucket",
            SeriesType::Histogram,
            &labels,
            "le",
            run.map(|(le, n)| (le, Number::Unsigned(n))),
        );
        assert_eq!(by_run.len(), 4);
        let bytes = by_run.finish();
        assert_eq!(bytes, one_by_one.finish());
        let r = SeriesRecord::decode(&bytes).unwrap();
        assert_eq!(r.series[3].label("le"), Some("+Inf"));
        assert_eq!(r.series[3].labels.len(), 2, "the empty leaf is absent");
    }

    #[test]
    fn hostile_records_are_errors() {
        // Not a map; a map without v; a group claiming 2^32-1 series in 20 bytes.
        assert!(SeriesRecord::decode(&[0x93, 1, 2, 3]).is_err());
        let mut w = SeriesWriter::new("h", 0);
        w.series("a", SeriesType::Gauge, &[], Number::Unsigned(1));
        let mut bytes = w.finish();
        assert!(SeriesRecord::decode(&bytes[..bytes.len() - 1]).is_err());
        let at = bytes.len() - 6;
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = SeriesRecord::decode(&bytes).unwrap_err();
        assert!(e.starts_with("metric record"), "{e}");
        // A future version is refused by name.
        let mut v2 = SeriesWriter::new("h", 0).finish();
        v2[3] = 2;
        assert!(SeriesRecord::decode(&v2).unwrap_err().contains("version 2"));
        // Random bytes never panic.
        for seed in 0u32..2000 {
            let b: Vec<u8> = (0..64)
                .map(|i| (seed.wrapping_mul(2654435761).rotate_left(i) >> 3) as u8)
                .collect();
            let _ = SeriesRecord::decode(&b);
        }
    }
}
