//! A snapshot as Prometheus metrics: the text exposition format 0.0.4 and OpenMetrics 1.0
//! ([`Exposition`]), or as a Forward metric record — the metric set said once, by the
//! functions of `families.rs`, to either emitter of `writer.rs`.
//!
//! Counters stay counters (Prometheus computes the rates); a value the kernel did not report
//! is an absent series, never 0. Names follow the Prometheus conventions: the `zpulse_`
//! prefix, base units (bytes, seconds, ratios 0–1) in the name, `_total` on counters, HELP and
//! TYPE for every family. `docs/metrics.md` lists every family.
//!
//! The two text formats differ only in a counter's TYPE/HELP name (OpenMetrics names the
//! family without `_total`) and in the `# EOF` terminator, so only the text is written: the
//! OpenMetrics form is the text with those cuts.
//!
//! A sink renders every reading, so the cost is per reading: [`Renderer`] and
//! [`RecordRenderer`] keep, from one reading to the next, what readings share (the headers
//! and kstat families, checked against each reading) and write a line as copies of ready
//! bytes (label sets written once per rendering, fixed-size copies for bucket bounds and
//! counts) and integer formatting, with no allocation per line. [`render`] and
//! [`series_record`] are the same with nothing kept.

use std::collections::BTreeMap;
use std::io::Write as _;
use zpulse_forward::series::{Number, SeriesType, SeriesWriter};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{
    DiskCounters, KstatValue, LatencyHistograms, Os, Vdev, VdevClass, VdevStats,
};

/// What Prometheus needs to know about one open finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct OpenFinding {
    pub check: String,
    pub subject: String,
    pub severity: String,
}

/// The agent's own figures, from its heartbeat and its process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentHealth {
    pub cpu_seconds: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub samples: Option<u64>,
    pub late_samples: Option<u64>,
    pub missed_slots: Option<u64>,
    pub dropped_samples: Option<u64>,
    pub plugins_running: Option<u64>,
    pub plugins_total: Option<u64>,
    pub sinks: Vec<SinkHealth>,
    /// Kernel events sent, by (class, pool; empty for an event of no pool).
    pub zevents: BTreeMap<(String, String), u64>,
    /// Kernel events the queue dropped before the agent read them: the kernel's count and
    /// the event ids that never came.
    pub zevents_dropped: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SinkHealth {
    pub name: String,
    pub queued_batches: Option<u64>,
    pub delivered: Option<u64>,
    pub dropped: Option<u64>,
    pub pending: Option<u64>,
    pub spool_bytes: Option<u64>,
}

/// One rendering: the text format, and where the OpenMetrics form differs from it.
///
/// The formats differ only in a counter family's HELP/TYPE name (OpenMetrics names the
/// family without the `_total` of its samples) and in the `# EOF` terminator, so the
/// OpenMetrics form is not written out a second time: it is the text with those `_total`s
/// left out ([`Exposition::openmetrics_pieces`]), put together by whoever sends it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exposition {
    /// `text/plain; version=0.0.4` (UTF-8: it is made of `str`s and ASCII, cut only
    /// between lines).
    text: Vec<u8>,
    /// Where in `text` a `_total` starts that OpenMetrics leaves out, ascending.
    om_cuts: Vec<usize>,
}

const OM_CUT: &str = "_total";
const OM_EOF: &str = "# EOF\n";

impl Exposition {
    /// `application/openmetrics-text; version=1.0.0`, piece by piece: the text between the
    /// cuts, then `# EOF`.
    pub fn openmetrics_pieces(&self) -> impl Iterator<Item = &[u8]> {
        let text = &self.text[..];
        let starts = std::iter::once(0).chain(self.om_cuts.iter().map(|c| c + OM_CUT.len()));
        let ends = self.om_cuts.iter().copied().chain([text.len()]);
        starts
            .zip(ends)
            .map(move |(a, b)| &text[a..b])
            .chain([OM_EOF.as_bytes()])
    }

    /// Bytes of the OpenMetrics form.
    pub fn openmetrics_len(&self) -> usize {
        self.text.len() - OM_CUT.len() * self.om_cuts.len() + OM_EOF.len()
    }

    /// `text/plain; version=0.0.4`.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The text format as a `str`.
    pub fn text_str(&self) -> &str {
        std::str::from_utf8(&self.text).unwrap_or_default()
    }

    /// The OpenMetrics form in one piece.
    pub fn openmetrics(&self) -> String {
        let bytes = self.openmetrics_pieces().collect::<Vec<_>>().concat();
        String::from_utf8(bytes).unwrap_or_default()
    }
}

/// How much of a reading an exposition carries (a sink's `detail` setting).
/// `docs/metrics.md` gives the series each costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Detail {
    /// What a fleet's Prometheus can carry: latency histograms of top-level vdevs (which name
    /// their class) in the standard buckets ([`STANDARD_EDGES`]), only those with I/O; block
    /// devices that are storage (no partitions, loop devices, RAM disks, … unless they serve
    /// a pool).
    #[default]
    Standard,
    /// Standard, and the latency histograms of leaf vdevs too.
    Leaves,
    /// Everything: every vdev's histograms in the kernel's own power-of-two buckets (empty
    /// ones too), every block device.
    Full,
}

impl Detail {
    pub const NAMES: [&'static str; 3] = ["standard", "leaves", "full"];

    pub fn parse(s: &str) -> Option<Detail> {
        match s {
            "standard" => Some(Detail::Standard),
            "leaves" => Some(Detail::Leaves),
            "full" => Some(Detail::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Detail::Standard => "standard",
            Detail::Leaves => "leaves",
            Detail::Full => "full",
        }
    }
}

pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

mod families;
mod writer;

use families::*;
use writer::*;

/// Renders successive readings for one sink, keeping between them what a reading seldom
/// changes: each family's HELP and TYPE lines as written, the family name and HELP made from
/// each kstat row, and the size of the last rendering (the next one's buffer is sized like
/// it, so it does not grow and copy as it fills). Its output is exactly [`render`]'s: what it
/// keeps is checked against the reading it renders.
#[derive(Debug, Default)]
pub struct Renderer {
    detail: Detail,
    kstat: KstatFamilies,
    headers: Headers,
    prefix: Vec<u8>,
    sets: Vec<u8>,
    last_len: usize,
    last_cuts: usize,
}

impl Renderer {
    pub fn new(detail: Detail) -> Renderer {
        Renderer {
            detail,
            ..Renderer::default()
        }
    }

    /// Renders one snapshot, the open findings and the agent's health.
    pub fn render(
        &mut self,
        snapshot: &Snapshot,
        findings: &[OpenFinding],
        agent: Option<&AgentHealth>,
    ) -> Exposition {
        let mut out = TextOut {
            text: Vec::with_capacity(self.last_len.max(64 * 1024) / 8 * 9),
            om_cuts: Vec::with_capacity(self.last_cuts / 8 * 9),
            unused_header: None,
            prefix: &mut self.prefix,
            sets: &mut self.sets,
            headers: &mut self.headers,
        };
        out.sets.clear();
        out.headers.next = 0;
        snapshot_metrics(&mut out, &mut self.kstat, snapshot, self.detail);
        out.family(
            "zpulse_finding",
            Type::Gauge,
            "An open finding of a check: 1 while raised, gone when cleared.",
        );
        for f in findings {
            out.line(
                "zpulse_finding",
                &[
                    ("check", &f.check),
                    ("subject", &f.subject),
                    ("severity", &f.severity),
                ],
                Value::Int(1),
            );
        }
        if let Some(agent) = agent {
            agent_health(&mut out, agent);
        }
        let exposition = out.finish();
        self.last_len = exposition.text.len();
        self.last_cuts = exposition.om_cuts.len();
        exposition
    }
}

/// Renders one snapshot, the open findings and the agent's health at the standard detail,
/// keeping nothing.
pub fn render(
    snapshot: &Snapshot,
    findings: &[OpenFinding],
    agent: Option<&AgentHealth>,
) -> Exposition {
    render_at(Detail::Standard, snapshot, findings, agent)
}

/// [`render`] at `detail`.
pub fn render_at(
    detail: Detail,
    snapshot: &Snapshot,
    findings: &[OpenFinding],
    agent: Option<&AgentHealth>,
) -> Exposition {
    Renderer::new(detail).render(snapshot, findings, agent)
}

/// Encodes successive readings as Forward metric records for one sink, keeping what
/// [`Renderer`] keeps. Its output is exactly [`series_record`]'s.
#[derive(Debug, Default)]
pub struct RecordRenderer {
    detail: Detail,
    kstat: KstatFamilies,
    last_len: usize,
}

impl RecordRenderer {
    pub fn new(detail: Detail) -> RecordRenderer {
        RecordRenderer {
            detail,
            ..RecordRenderer::default()
        }
    }

    /// The series of [`Renderer::render`] that come from the snapshot (findings and the
    /// agent's health travel as events).
    pub fn record(&mut self, snapshot: &Snapshot, host: &str) -> Vec<u8> {
        let mut out = SeriesOut {
            writer: SeriesWriter::new(host, self.last_len / 8 * 9),
            kind: Type::Gauge,
        };
        snapshot_metrics(&mut out, &mut self.kstat, snapshot, self.detail);
        let bytes = out.writer.finish();
        self.last_len = bytes.len();
        bytes
    }
}

/// A Forward metric record ([`zpulse_forward::series`]) of one snapshot at the standard
/// detail, keeping nothing.
pub fn series_record(snapshot: &Snapshot, host: &str) -> Vec<u8> {
    RecordRenderer::default().record(snapshot, host)
}
#[cfg(test)]
mod tests;
