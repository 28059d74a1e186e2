//! The text writer of the exposition: [`Emit`], where the metric set goes (the text formats
//! through [`TextOut`], a Forward metric record through [`SeriesOut`]), and what writes a
//! line as copies of ready bytes: label sets, HELP/TYPE headers, numbers, escapes, histogram
//! buckets. It knows nothing of ZFS: the families (`families.rs`) say what to write.

use super::*;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Type {
    Counter,
    Gauge,
    Histogram,
}

impl Type {
    pub(super) fn as_str(self) -> &'static str {
        self.series_type().as_str()
    }

    pub(super) fn series_type(self) -> SeriesType {
        match self {
            Type::Counter => SeriesType::Counter,
            Type::Gauge => SeriesType::Gauge,
            Type::Histogram => SeriesType::Histogram,
        }
    }
}

/// Where the metric set goes: the text formats ([`TextOut`]) or a Forward metric record
/// ([`SeriesOut`]). The families (`families.rs`) say each family once, to either.
pub(super) trait Emit {
    /// Starts a family; a family that gets no series leaves no trace.
    fn family(&mut self, name: &str, kind: Type, help: &str);
    /// Starts the family of `header`, made by whoever keeps it.
    fn kept_family(&mut self, header: &Header) {
        self.family(&header.name, header.kind, &header.help);
    }
    fn line(&mut self, name: &str, labels: &Labels, value: Value) {
        self.line_in(name, &LabelSet::default(), labels, value);
    }
    /// Labels that many series share (a disk's, a vdev's), made ready once per rendering.
    fn label_set<'a>(&mut self, labels: &Labels<'a>) -> LabelSet<'a>;
    /// A series with the labels of `set`, then `extra`.
    fn line_in(&mut self, name: &str, set: &LabelSet, extra: &Labels, value: Value);
    /// The buckets of one histogram series (`name` ends in `_bucket`) with the labels of
    /// `set` and `extra`: each bound with its cumulative count, `+Inf` last.
    fn buckets(&mut self, bucket_name: &str, set: &LabelSet, extra: &Labels, counts: &[Bucket]);
}

pub(super) type Labels<'a> = [(&'a str, &'a str)];

/// Labels many series share, as [`Emit::label_set`] made them ready: the pairs (at most
/// [`LabelSet::MAX`]) and, for the text, where their written form `{k="v",…` lies in the
/// emitter's scratch buffer (empty when no label has a value).
#[derive(Debug, Clone, Default)]
pub(super) struct LabelSet<'a> {
    pub(super) pairs: [(&'a str, &'a str); LabelSet::MAX],
    pub(super) len: usize,
    pub(super) text: std::ops::Range<usize>,
}

impl<'a> LabelSet<'a> {
    const MAX: usize = 4;

    pub(super) fn new(labels: &Labels<'a>) -> LabelSet<'a> {
        debug_assert!(labels.len() <= LabelSet::MAX, "{labels:?}");
        let mut set = LabelSet::default();
        for (slot, label) in set.pairs.iter_mut().zip(labels) {
            *slot = *label;
            set.len += 1;
        }
        set
    }

    pub(super) fn labels(&self) -> &[(&'a str, &'a str)] {
        &self.pairs[..self.len]
    }

    /// The set's labels, then `extra`, in `buf` (for an emitter that wants them in one slice).
    pub(super) fn with<'b>(
        &self,
        extra: &Labels<'a>,
        buf: &'b mut [(&'a str, &'a str); 8],
    ) -> &'b [(&'a str, &'a str)] {
        let n = self.len + extra.len();
        debug_assert!(n <= buf.len(), "{extra:?}");
        for (slot, label) in buf.iter_mut().zip(self.labels().iter().chain(extra)) {
            *slot = *label;
        }
        &buf[..n.min(8)]
    }
}

/// A family's HELP and TYPE lines as the text writes them, and where in them OpenMetrics cuts
/// a `_total`.
#[derive(Debug)]
pub(super) struct Header {
    pub(super) name: String,
    pub(super) kind: Type,
    pub(super) help: String,
    pub(super) text: Vec<u8>,
    pub(super) om_cuts: Vec<usize>,
}

impl Header {
    pub(super) fn new(name: &str, kind: Type, help: &str) -> Header {
        let mut t = Vec::with_capacity(2 * name.len() + help.len() + 24);
        t.extend_from_slice(b"# HELP ");
        let help_name = t.len();
        t.extend_from_slice(name.as_bytes());
        t.push(b' ');
        escape_help_into(&mut t, help);
        t.extend_from_slice(b"\n# TYPE ");
        let type_name = t.len();
        t.extend_from_slice(name.as_bytes());
        t.push(b' ');
        t.extend_from_slice(kind.as_str().as_bytes());
        t.push(b'\n');
        // OpenMetrics names a counter family without the `_total` of its samples.
        let om_cuts = match name.strip_suffix(OM_CUT) {
            Some(base) if kind == Type::Counter => {
                vec![help_name + base.len(), type_name + base.len()]
            }
            _ => Vec::new(),
        };
        Header {
            name: name.to_owned(),
            kind,
            help: help.to_owned(),
            text: t,
            om_cuts,
        }
    }
}

/// The headers of the last rendering by position: a rendering starts the families of the one
/// before in the same order (most families are there every time), so each is checked against
/// the family asked for and written again only when it differs.
#[derive(Debug, Default)]
pub(super) struct Headers {
    pub(super) kept: Vec<Header>,
    pub(super) next: usize,
}

impl Headers {
    pub(super) fn next(&mut self, name: &str, kind: Type, help: &str) -> &Header {
        let i = self.next;
        self.next += 1;
        match self.kept.get(i) {
            Some(h) if h.kind == kind && h.name == name && h.help == help => {}
            Some(_) => self.kept[i] = Header::new(name, kind, help),
            // Positions are asked for in order, so `i` is the length here.
            None => self.kept.push(Header::new(name, kind, help)),
        }
        &self.kept[i]
    }
}

/// Writes the text format (and the OpenMetrics cuts).
pub(super) struct TextOut<'r> {
    pub(super) text: Vec<u8>,
    pub(super) om_cuts: Vec<usize>,
    /// The header of the family started last while it has no series yet: where it starts in
    /// `text` and how many cuts there were before it.
    pub(super) unused_header: Option<(usize, usize)>,
    /// A histogram series up to its `le` value, kept allocated between histograms.
    pub(super) prefix: &'r mut Vec<u8>,
    /// The written form of the label sets of this rendering.
    pub(super) sets: &'r mut Vec<u8>,
    pub(super) headers: &'r mut Headers,
}

impl Emit for TextOut<'_> {
    fn family(&mut self, name: &str, kind: Type, help: &str) {
        let header = self.headers.next(name, kind, help);
        start_family(
            &mut self.text,
            &mut self.om_cuts,
            &mut self.unused_header,
            header,
        );
    }

    fn kept_family(&mut self, header: &Header) {
        start_family(
            &mut self.text,
            &mut self.om_cuts,
            &mut self.unused_header,
            header,
        );
    }

    fn label_set<'a>(&mut self, labels: &Labels<'a>) -> LabelSet<'a> {
        let mut set = LabelSet::new(labels);
        let start = self.sets.len();
        write_labels(self.sets, labels, false);
        set.text = start..self.sets.len();
        set
    }

    fn line_in(&mut self, name: &str, set: &LabelSet, extra: &Labels, value: Value) {
        self.unused_header = None;
        let t = &mut self.text;
        t.extend_from_slice(name.as_bytes());
        t.extend_from_slice(&self.sets[set.text.clone()]);
        if write_labels(t, extra, !set.text.is_empty()) || !set.text.is_empty() {
            t.push(b'}');
        }
        t.push(b' ');
        value.write(t);
        t.push(b'\n');
    }

    fn buckets(&mut self, bucket_name: &str, set: &LabelSet, extra: &Labels, counts: &[Bucket]) {
        self.unused_header = None;
        let prefix = &mut *self.prefix;
        prefix.clear();
        prefix.extend_from_slice(bucket_name.as_bytes());
        prefix.extend_from_slice(&self.sets[set.text.clone()]);
        let any = write_labels(prefix, extra, !set.text.is_empty()) || !set.text.is_empty();
        prefix.extend_from_slice(if any { b",le=\"" } else { b"{le=\"" });
        // Cumulative counts repeat (every bucket below the fastest I/O, every one above the
        // slowest): formatted once per run.
        let mut digits = Digits::default();
        let mut last = None;
        for &(bound, count) in counts {
            if last != Some(count) {
                digits.set(count);
                last = Some(count);
            }
            let t = &mut self.text;
            t.extend_from_slice(prefix);
            extend_padded(t, &bound.text);
            extend_padded(t, &digits.line());
        }
    }
}

/// Writes `header`, after dropping that of the family started before it if it got no series.
fn start_family(
    text: &mut Vec<u8>,
    om_cuts: &mut Vec<usize>,
    unused_header: &mut Option<(usize, usize)>,
    header: &Header,
) {
    if let Some((text_len, cuts)) = unused_header.take() {
        text.truncate(text_len);
        om_cuts.truncate(cuts);
    }
    *unused_header = Some((text.len(), om_cuts.len()));
    let at = text.len();
    text.extend_from_slice(&header.text);
    om_cuts.extend(header.om_cuts.iter().map(|c| at + c));
}

impl TextOut<'_> {
    pub(super) fn drop_unused_header(&mut self) {
        if let Some((text, cuts)) = self.unused_header.take() {
            self.text.truncate(text);
            self.om_cuts.truncate(cuts);
        }
    }

    pub(super) fn finish(mut self) -> Exposition {
        self.drop_unused_header();
        Exposition {
            text: self.text,
            om_cuts: self.om_cuts,
        }
    }
}

/// Writes a Forward metric record: the same series, labels as given (an empty value is an
/// absent label there too).
pub(super) struct SeriesOut {
    pub(super) writer: SeriesWriter,
    pub(super) kind: Type,
}

impl Emit for SeriesOut {
    fn family(&mut self, _name: &str, kind: Type, _help: &str) {
        self.kind = kind;
    }

    fn line(&mut self, name: &str, labels: &Labels, value: Value) {
        self.writer
            .series(name, self.kind.series_type(), labels, value.number());
    }

    fn label_set<'a>(&mut self, labels: &Labels<'a>) -> LabelSet<'a> {
        LabelSet::new(labels)
    }

    fn line_in(&mut self, name: &str, set: &LabelSet, extra: &Labels, value: Value) {
        let mut buf = Default::default();
        self.line(name, set.with(extra, &mut buf), value);
    }

    fn buckets(&mut self, bucket_name: &str, set: &LabelSet, extra: &Labels, counts: &[Bucket]) {
        let mut buf = Default::default();
        self.writer.series_run(
            bucket_name,
            SeriesType::Histogram,
            set.with(extra, &mut buf),
            "le",
            counts
                .iter()
                .map(|&(bound, n)| (bound.le.as_str(), Number::Unsigned(n))),
        );
    }
}

/// A histogram bucket as exposed: its bound and the cumulative count of I/Os up to it.
pub(super) type Bucket = (&'static Bound, u64);

/// A kernel latency histogram as Prometheus buckets, one per kernel bucket, into `out`. Bucket
/// i counts I/Os of [2^i, 2^(i+1)) ns; the last one also everything longer (vdev_stat_update,
/// module/zfs/vdev.c), so it is +Inf's alone.
pub(super) fn kernel_buckets(counts: &[u64], out: &mut Vec<Bucket>) {
    let le = bucket_bounds();
    let last = counts.len().saturating_sub(1);
    let mut total = 0u64;
    out.clear();
    out.extend(counts.iter().enumerate().map(|(i, &n)| {
        total = total.saturating_add(n);
        let bound = if i == last { &le[64] } else { &le[i.min(63)] };
        (bound, total)
    }));
}

/// The bounds of the standard histograms, as powers of two in ns: 2^13 (8.2 µs) to 2^33
/// (8.6 s), every second one. They are edges of the kernel's own buckets, so each count is
/// exact (the kernel's buckets are summed, never split or interpolated); a factor of 4 per
/// bucket spans NVMe reads to a stalled disk in 11 bounds and `+Inf`, 12 buckets where the
/// kernel has 37 (most of them always 0: nothing completes in under 8 µs, and I/O slower than
/// 8.6 s is for `zpulse_vdev_slow_ios_total` to count).
pub(super) const STANDARD_EDGES: [u32; 11] = [13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33];

/// A kernel latency histogram in the standard buckets ([`STANDARD_EDGES`]), into `out`: the
/// bound 2^k ns counts the kernel's buckets below it, the kernel's last bucket (which also
/// holds everything longer) only `+Inf`.
pub(super) fn standard_buckets(counts: &[u64], out: &mut Vec<Bucket>) {
    let le = bucket_bounds();
    let last = counts.len().saturating_sub(1);
    out.clear();
    let mut below = counts[..last].iter().copied();
    let mut total = 0u64;
    let mut summed = 0usize;
    for k in STANDARD_EDGES {
        // Kernel bucket i ends at 2^(i+1) ns: the ones with i + 1 <= k lie below 2^k.
        while summed < k as usize && summed < last {
            total = total.saturating_add(below.next().unwrap_or(0));
            summed += 1;
        }
        out.push((&le[k as usize - 1], total));
    }
    let all = counts.iter().fold(0u64, |a, &n| a.saturating_add(n));
    out.push((&le[64], all));
}

/// `{k="v",…` for the labels with a value (an empty value is the same as no label in the
/// exposition formats), or `,k="v",…` after labels already written (`after`); whether any
/// label is written now (the caller closes the brace).
pub(super) fn write_labels(buf: &mut Vec<u8>, labels: &Labels, after: bool) -> bool {
    let mut first = !after;
    let mut any = false;
    for (k, v) in labels.iter().filter(|(_, v)| !v.is_empty()) {
        any = true;
        buf.push(if first { b'{' } else { b',' });
        first = false;
        buf.extend_from_slice(k.as_bytes());
        buf.extend_from_slice(b"=\"");
        escape_label_into(buf, v);
        buf.push(b'"');
    }
    any
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Value {
    Int(u64),
    Signed(i64),
    Float(f64),
    /// `units / 10^decimals` (milliseconds, nanoseconds or percent in base units): the
    /// float of that quotient, written without float formatting where its decimal form is
    /// the same ([`Value::decimal`]).
    Decimal {
        units: u64,
        decimals: u8,
    },
}

/// 10^k as f64, exactly (k ≤ 9).
pub(super) const POWERS_OF_TEN: [f64; 10] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/// For k decimals, the `units` below which `units / 10^k` as f64 prints as the exact decimal
/// `units / 10^k`: where the f64's spacing (ulp) is below 10^-k, no other decimal of k places
/// or fewer rounds to the same f64, so the shortest form that does (what `{}` prints) is that
/// decimal. The ulp of x < 2^(52-c) is below 2^-c ≤ 10^-k for c = ⌈k·log2 10⌉.
pub(super) const DECIMAL_FAST_BELOW: [u64; 10] = {
    const BITS: [u32; 10] = [0, 4, 7, 10, 14, 17, 20, 24, 27, 30];
    let mut t = [0u64; 10];
    let mut k = 0;
    while k < 10 {
        t[k] = 10u64.pow(k as u32) << (52 - BITS[k]);
        k += 1;
    }
    t
};

impl Value {
    pub(super) fn decimal(units: u64, decimals: u8) -> Value {
        debug_assert!((decimals as usize) < POWERS_OF_TEN.len());
        Value::Decimal { units, decimals }
    }

    /// As a Forward record carries it.
    pub(super) fn number(self) -> Number {
        match self {
            Value::Int(v) => Number::Unsigned(v),
            Value::Signed(v) => Number::Signed(v),
            Value::Float(v) => Number::Float(v),
            Value::Decimal { .. } => Number::Float(self.as_f64()),
        }
    }

    pub(super) fn as_f64(self) -> f64 {
        match self {
            Value::Int(v) => v as f64,
            Value::Signed(v) => v as f64,
            Value::Float(v) => v,
            Value::Decimal { units, decimals } => {
                units as f64 / POWERS_OF_TEN[usize::from(decimals).min(9)]
            }
        }
    }

    pub(super) fn write(self, out: &mut Vec<u8>) {
        let mut digits = Digits::default();
        match self {
            Value::Int(v) => {
                digits.set(v);
                out.extend_from_slice(digits.as_bytes());
            }
            Value::Signed(v) => {
                if v < 0 {
                    out.push(b'-');
                }
                digits.set(v.unsigned_abs());
                out.extend_from_slice(digits.as_bytes());
            }
            Value::Decimal { units, decimals }
                if usize::from(decimals) < DECIMAL_FAST_BELOW.len()
                    && units < DECIMAL_FAST_BELOW[usize::from(decimals)] =>
            {
                let scale = 10u64.pow(u32::from(decimals));
                digits.set(units / scale);
                out.extend_from_slice(digits.as_bytes());
                let mut fraction = units % scale;
                if fraction != 0 {
                    // The fraction's digits, zero-padded to `decimals`, trailing zeros cut.
                    let mut places = usize::from(decimals);
                    while fraction % 10 == 0 {
                        fraction /= 10;
                        places -= 1;
                    }
                    digits.set(fraction);
                    out.push(b'.');
                    let shown = digits.as_bytes().len();
                    out.resize(out.len() + places.saturating_sub(shown), b'0');
                    out.extend_from_slice(digits.as_bytes());
                }
            }
            Value::Decimal { .. } => Value::Float(self.as_f64()).write(out),
            Value::Float(v) if v.is_nan() => out.extend_from_slice(b"NaN"),
            Value::Float(v) if v == f64::INFINITY => out.extend_from_slice(b"+Inf"),
            Value::Float(v) if v == f64::NEG_INFINITY => out.extend_from_slice(b"-Inf"),
            Value::Float(v) => {
                let _ = write!(out, "{v}");
            }
        }
    }
}

/// Two decimal digits for each of 0–99.
pub(super) const DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Up to 24 bytes in a buffer of that size, so that appending them is a copy of a size known
/// when compiling (moves, not a call to memcpy): bucket lines are most of an exposition.
#[derive(Debug, Clone, Copy)]
pub(super) struct Padded {
    pub(super) bytes: [u8; 24],
    pub(super) len: usize,
}

impl Padded {
    pub(super) fn new(s: &[u8]) -> Padded {
        let mut p = Padded {
            bytes: [0; 24],
            len: s.len().min(24),
        };
        p.bytes[..p.len].copy_from_slice(&s[..p.len]);
        p
    }
}

/// Appends `p`: all 24 bytes, then the padding cut off again.
pub(super) fn extend_padded(out: &mut Vec<u8>, p: &Padded) {
    let end = out.len() + p.len;
    out.extend_from_slice(&p.bytes);
    out.truncate(end);
}

/// An integer in decimal, and a line feed after it. Most values of an exposition are integers
/// (histogram buckets above all): two digits at a time into a stack buffer cost a fraction of
/// `write!`'s machinery.
#[derive(Default)]
pub(super) struct Digits {
    pub(super) buf: [u8; 24],
    /// How many digits.
    pub(super) len: usize,
}

impl Digits {
    pub(super) fn set(&mut self, mut v: u64) {
        let len = v.checked_ilog10().map_or(1, |l| l as usize + 1);
        self.len = len;
        self.buf[len] = b'\n';
        let mut i = len;
        while v >= 100 {
            let pair = (v % 100) as usize * 2;
            v /= 100;
            i -= 2;
            self.buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        }
        if v >= 10 {
            let pair = v as usize * 2;
            i -= 2;
            self.buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        } else {
            i -= 1;
            self.buf[i] = b'0' + v as u8;
        }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The digits and a line feed.
    pub(super) fn line(&self) -> Padded {
        Padded {
            bytes: self.buf,
            len: self.len + 1,
        }
    }
}

/// HELP text: backslash and line feed escaped (exposition format 0.0.4).
pub(super) fn escape_help_into(out: &mut Vec<u8>, s: &str) {
    escape_into(out, s, false);
}

/// A label value: backslash, double quote and line feed escaped.
pub(super) fn escape_label_into(out: &mut Vec<u8>, v: &str) {
    escape_into(out, v, true);
}

/// `s` with backslash and line feed escaped, and the double quote too if `quote`.
pub(super) fn escape_into(out: &mut Vec<u8>, s: &str, quote: bool) {
    let special = |b: u8| b == b'\\' || b == b'\n' || (quote && b == b'"');
    // Almost every text needs nothing escaped: copy it whole.
    if !s.bytes().any(special) {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    for b in s.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'"' if quote => out.extend_from_slice(b"\\\""),
            b => out.push(b),
        }
    }
}

/// A kstat row or config key as a metric-name fragment: `[a-z0-9_]`, anything else `_`.
pub(super) fn name_fragment(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// A bucket's upper bound: the `le` value, and as a bucket line writes it, with the `"} ` that
/// ends the labels.
#[derive(Debug)]
pub(super) struct Bound {
    pub(super) le: String,
    pub(super) text: Padded,
}

/// The bound of bucket i < 64: 2^(i+1) ns, in seconds; then +Inf (at 64).
pub(super) fn bucket_bounds() -> &'static [Bound] {
    static BOUNDS: std::sync::OnceLock<Vec<Bound>> = std::sync::OnceLock::new();
    BOUNDS.get_or_init(|| {
        let bound = |le: Vec<u8>| {
            let mut text = le.clone();
            text.extend_from_slice(b"\"} ");
            Bound {
                le: String::from_utf8(le).unwrap_or_default(),
                // At most "18446744073.709553" (2^64 ns) and the 3 bytes.
                text: Padded::new(&text),
            }
        };
        (0..64)
            .map(|i| {
                let mut le = Vec::new();
                Value::Float((1u128 << (i + 1)) as f64 / 1e9).write(&mut le);
                bound(le)
            })
            .chain([bound(b"+Inf".to_vec())])
            .collect()
    })
}
