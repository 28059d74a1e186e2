//! `zpulse report`: a window of snapshots turned into one baseline — the conclusions of every
//! check over the whole window, the figures behind them, and their course over time — the
//! analysis an administrator does by hand with `iostat -x`, `arcstat` and `zpool iostat -l`
//! for half an hour before changing a pool.
//!
//! * [`Builder`] takes the window's snapshots one by one (live, from a capture series or
//!   from the agent's history), hands back each interval's [`Sample`] for the plugins, and
//!   keeps only compact per-interval [`Series`] and the first and last snapshot, so a window
//!   of any length costs memory per interval, not per snapshot.
//! * [`Builder::window`] is the [`ReportWindow`] plugins judge (ABI 1.2 `report`);
//!   [`Builder::finish`] makes the [`Baseline`]: the machine-readable model behind every
//!   output (`--format json` prints it as it is).
//! * [`figures`] computes the window's figures from the window as one interval (exact means
//!   of every counter, latency from every I/O's histogram bucket); [`page`] renders the
//!   self-contained HTML page, [`text`] the terminal form, [`compare`] two windows side by
//!   side.

pub mod breaks;
mod combine;
pub mod compare;
pub mod figures;
pub mod page;
pub mod phases;
mod series;
mod svg;
pub mod text;

pub use breaks::Break;
pub use figures::{ArcFigures, ClassFigures, DiskFigures, PoolFigures, VdevFigures, ZilFigures};
pub use phases::Phase;
pub use series::Series;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use zpulse_proto::event::Entry;
use zpulse_proto::report::{DiskBusy, Rating, ReportWindow, Section};
use zpulse_proto::sample::Pairing;
use zpulse_proto::{Sample, Snapshot};

/// Version of the [`Baseline`] JSON model: bumped when a field changes meaning.
pub const BASELINE_VERSION: u32 = 1;

/// One window, analysed: what `zpulse report` prints in every format.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub version: u32,
    pub host: String,
    /// The kernel and the ZFS module of the last snapshot, as the system named them.
    #[serde(default)]
    pub kernel: Option<String>,
    #[serde(default)]
    pub zfs_version: Option<String>,
    /// Whether the ZFS module answered (at the window's end): without it the report covers
    /// the disks, CPU and network only, and says so.
    #[serde(default = "zfs_by_default")]
    pub zfs_loaded: bool,
    /// Where the snapshots came from: `live`, `series DIR`, `history FROM–TO`.
    pub source: String,
    /// `taken_at` of the first and last snapshot, Unix seconds.
    pub from: f64,
    pub to: f64,
    pub intervals: u32,
    /// The checks' conclusions over the whole window, worst first.
    pub conclusions: Vec<Section>,
    /// Findings the checks raised, updated or cleared while the window's samples went by.
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub disks: Vec<DiskFigures>,
    /// Per pool and allocation class (top-level vdevs of one class together).
    #[serde(default)]
    pub classes: Vec<ClassFigures>,
    /// Per top-level vdev.
    #[serde(default)]
    pub vdevs: Vec<VdevFigures>,
    #[serde(default)]
    pub arc: Option<ArcFigures>,
    #[serde(default)]
    pub zil: Option<ZilFigures>,
    #[serde(default)]
    pub pools: Vec<PoolFigures>,
    /// Mean CPU busy share, 0–100.
    #[serde(default)]
    pub cpu_busy_pct: Option<f64>,
    /// Per interface: mean received and sent, MB/s.
    #[serde(default)]
    pub net: Vec<figures::NetFigures>,
    pub series: Series,
    /// What could not be used (resets, unreadable snapshots, plugins that said nothing).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Checks that did not run to the end (refused, hung, disabled) or whose report call
    /// failed, with why: the conclusions are then incomplete, and `zpulse report` exits 1.
    #[serde(default)]
    pub plugin_problems: Vec<String>,
    /// Intervals left out of every figure (counters restarted, a gap, a clock step, an
    /// impossible counter), in time order: the window's figures come from the stretches
    /// between them.
    #[serde(default)]
    pub breaks: Vec<Break>,
    /// Seconds the figures cover: the window less its breaks.
    #[serde(default)]
    pub covered_s: f64,
    /// The kernel's events during the window (`zpool events`: docs/events.md), in order.
    #[serde(default)]
    pub kernel_events: Vec<KernelEvent>,
    /// Stretches of the window over which a check's verdict was not the window's all along
    /// ([`phases`]), in time order.
    #[serde(default)]
    pub phases: Vec<Phase>,
}

/// A report written before `zfs_loaded` was kept had ZFS (it had no way to say otherwise).
fn zfs_by_default() -> bool {
    true
}

impl Baseline {
    /// The window in words: `FROM to TO (LENGTH, N intervals)`, and what its figures cover
    /// when intervals were left out.
    pub fn span(&self) -> String {
        let mut s = format!(
            "{} to {} ({}, {} intervals",
            crate::report::utc(self.from),
            crate::report::utc(self.to),
            page::duration(self.to - self.from),
            self.intervals
        );
        if !self.breaks.is_empty() {
            s.push_str(&format!(
                "; {} left out, the figures cover {}",
                self.breaks.len(),
                page::duration(self.covered_s)
            ));
        }
        s.push(')');
        s
    }

    /// `Linux 6.1.0-50-amd64, OpenZFS 2.1.11-1+deb12u1`, from what the snapshot said.
    pub fn system(&self) -> String {
        let mut parts = Vec::new();
        if let Some(k) = &self.kernel {
            parts.push(format!("kernel {k}"));
        }
        if let Some(z) = &self.zfs_version {
            parts.push(format!("OpenZFS {z}"));
        }
        parts.join(", ")
    }
}

/// One kernel event of the window, for the page's list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelEvent {
    pub time: f64,
    pub eid: u64,
    pub class: String,
    pub severity: String,
    pub subject: String,
    pub summary: String,
}

impl KernelEvent {
    pub fn of(z: &zpulse_proto::ZEvent) -> KernelEvent {
        KernelEvent {
            time: z.time.as_f64(),
            eid: z.eid,
            class: z.class.clone(),
            severity: z.severity().as_str().to_owned(),
            subject: z.subject(),
            summary: z.summary(),
        }
    }
}

/// One event a check emitted during the window, for the page's list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub time: f64,
    pub check: String,
    pub severity: String,
    pub state: String,
    pub subject: String,
    pub summary: String,
}

impl Finding {
    pub fn from_entry(e: &Entry) -> Option<Finding> {
        let ev = &e.event;
        Some(Finding {
            time: e.time.as_f64(),
            check: ev.check.clone(),
            severity: ev.severity.as_str().to_owned(),
            state: ev.state?.as_str().to_owned(),
            subject: ev.subject.clone(),
            summary: ev.summary.clone(),
        })
    }
}

/// A conclusion for each finding raised in the window that no section of its check speaks
/// about (same check and subject, or a section of the check with no subject that names it; a
/// finding's check is its plugin's name or that name and a dot, `slog-usage.redundancy`):
/// what was raised is never only in the list of findings. Rated by its severity while it
/// stands at the window's end; info once cleared.
fn unconcluded(findings: &[Finding], sections: &[Section]) -> Vec<Section> {
    let spoken = |f: &Finding| {
        sections.iter().any(|s| {
            let of_check = f.check == s.check
                || (f.check.strip_prefix(s.check.as_str())).is_some_and(|r| r.starts_with('.'));
            of_check
                && match &s.subject {
                    Some(subject) => *subject == f.subject,
                    None => s.title.contains(&f.subject) || s.summary.contains(&f.subject),
                }
        })
    };
    let mut out: Vec<Section> = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for f in findings.iter().filter(|f| f.state == "raised") {
        let key = (f.check.as_str(), f.subject.as_str());
        if seen.contains(&key) || spoken(f) {
            continue;
        }
        seen.push(key);
        let last = findings
            .iter()
            .rev()
            .find(|g| g.check == f.check && g.subject == f.subject)
            .unwrap_or(f);
        let cleared = last.state == "cleared";
        let rating = match (cleared, f.severity.as_str()) {
            (true, _) | (false, "info") => Rating::Info,
            (false, "critical") => Rating::Critical,
            (false, _) => Rating::Warning,
        };
        let when = if cleared {
            format!(
                "raised at {} and cleared at {} during the window",
                crate::report::utc(f.time),
                crate::report::utc(last.time)
            )
        } else {
            format!(
                "raised at {} and still standing at the end of the window",
                crate::report::utc(f.time)
            )
        };
        let mut section = Section::new(
            rating,
            format!("{}: {}", f.subject, last.summary),
            format!(
                "{} {when}; the check gave no conclusion of its own about it over the whole \
                 window.",
                f.severity
            ),
        )
        .subject(f.subject.clone());
        section.check = f.check.clone();
        out.push(section);
    }
    out
}

/// Accumulates a window one snapshot at a time.
#[derive(Default)]
pub struct Builder {
    first: Option<Snapshot>,
    /// Pairs the snapshots; its previous one is the window's last.
    pairing: Pairing,
    /// Where the current stretch (intervals with no break between them) starts, and how many
    /// intervals it has.
    stretch_start: Option<Arc<Snapshot>>,
    stretch_intervals: u32,
    /// The stretches before the current one, each as one interval.
    stretches: Vec<Sample>,
    pace: breaks::Pace,
    breaks: Vec<Break>,
    /// Seconds the charts' time line leaves out: what clock steps added to the wall clock.
    chart_shift: f64,
    intervals: u32,
    /// Per disk, its `%util` in each interval it had rates in, with the interval's number
    /// (1 for the window's first), so that a stretch's can be told apart.
    busy: BTreeMap<String, Vec<(u32, f64)>>,
    metadata_share: Vec<(u32, f64)>,
    series: Series,
    notes: Vec<String>,
    kernel_events: Vec<KernelEvent>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Adds the next snapshot of the window. Returns the sample since the previous one, for
    /// the plugins; `None` for the first snapshot, for one that cannot follow the previous
    /// (out of order, another system: [`Pairing`], the rule of every series and the live
    /// agent), and for an interval that breaks the window ([`breaks`]): the window is split
    /// there and the snapshot starts the next stretch.
    pub fn push(&mut self, snapshot: Snapshot) -> Option<Sample> {
        if self.first.is_none() {
            self.series.start = snapshot.taken_at;
            self.first = Some(snapshot.clone());
        }
        let prev = self.pairing.previous_shared();
        let paired = self.pairing.push(snapshot);
        let cur = self.pairing.previous_shared().expect("just pushed");
        let Some(prev) = prev else {
            self.stretch_start = Some(cur);
            return None;
        };
        let sample = match paired.expect("a previous snapshot") {
            Ok(s) => s,
            Err(e) => {
                self.split(
                    &prev,
                    cur.clone(),
                    Break::new(&prev, &cur, "unpaired", e.to_string()),
                );
                return None;
            }
        };
        let broken = self
            .pace
            .judge(&prev, &cur, sample.interval, &sample.resets);
        if let Some(b) = broken {
            if b.kind == "clock-step" {
                self.chart_shift += sample.interval - self.pace.usual().unwrap_or(0.0);
            }
            self.split(&prev, cur, b);
            return None;
        }
        self.pace.keep(&prev, &cur, sample.interval);
        self.stretch_intervals += 1;
        self.intervals += 1;
        for d in &sample.disks {
            self.busy
                .entry(d.name.clone())
                .or_default()
                .push((self.intervals, d.util));
        }
        if let Some(share) = sample
            .snapshot
            .arc
            .as_ref()
            .and_then(|a| a.metadata_share())
        {
            self.metadata_share.push((self.intervals, share));
        }
        let start = self.first.as_ref().map_or(sample.start, |f| f.taken_at);
        self.series.push(start + self.chart_shift, &sample);
        Some(sample)
    }

    /// Ends the current stretch at `prev` and starts the next at `cur`, for `why`; the charts
    /// get a point with no values there, so that their lines break instead of joining across.
    fn split(&mut self, prev: &Snapshot, cur: Arc<Snapshot>, why: Break) {
        if let Some(start) = self.stretch_start.take()
            && self.stretch_intervals > 0
            && let Ok(s) = Sample::between(&start, prev)
        {
            self.stretches.push(s);
        }
        let start = self.first.as_ref().map_or(cur.taken_at, |f| f.taken_at);
        self.series
            .push_break(cur.taken_at - start - self.chart_shift);
        self.stretch_start = Some(cur);
        self.stretch_intervals = 0;
        self.breaks.push(why);
    }

    /// The window as one interval: its stretches together ([`combine`]).
    fn whole(&self) -> Option<Sample> {
        let mut parts = self.stretches.clone();
        if let (Some(start), Some(last)) = (&self.stretch_start, self.pairing.previous())
            && self.stretch_intervals > 0
        {
            parts.push(Sample::between(start, last).ok()?);
        }
        combine::combine(parts)
    }

    pub fn intervals(&self) -> u32 {
        self.intervals
    }

    /// Kernel events posted in the window, for its list (the plugins get them separately).
    pub fn note_zevents(&mut self, events: &[zpulse_proto::ZEvent]) {
        self.kernel_events
            .extend(events.iter().map(KernelEvent::of));
    }

    /// The window as plugins receive it; `None` until two snapshots made an interval.
    pub fn window(&self) -> Option<ReportWindow> {
        let (first, last) = (self.first.as_ref()?, self.pairing.previous()?);
        if self.intervals == 0 {
            return None;
        }
        let whole = self.whole()?;
        Some(self.window_of(first.taken_at, last.taken_at, whole, 1..=self.intervals))
    }

    /// The snapshot the next interval starts at (the last one pushed).
    pub fn last_snapshot(&self) -> Option<Arc<Snapshot>> {
        self.pairing.previous_shared()
    }

    /// The interval `sample` (the last [`Builder::push`] returned) as a window of its own,
    /// for judging each interval ([`phases`]).
    pub fn interval_window(&self, sample: &Sample) -> ReportWindow {
        let n = self.intervals;
        self.window_of(sample.start, sample.end, sample.clone(), n..=n)
    }

    /// The stretch from `start` to `end` (intervals `first..=last`, with no break between
    /// them) as a window of its own: its figures are those of that stretch alone.
    pub fn stretch_window(
        &self,
        start: &Snapshot,
        end: &Snapshot,
        intervals: std::ops::RangeInclusive<u32>,
    ) -> Option<ReportWindow> {
        let whole = Sample::between(start, end).ok()?;
        Some(self.window_of(start.taken_at, end.taken_at, whole, intervals))
    }

    fn window_of(
        &self,
        from: f64,
        to: f64,
        whole: Sample,
        intervals: std::ops::RangeInclusive<u32>,
    ) -> ReportWindow {
        let within = |values: &[(u32, f64)]| -> Vec<f64> {
            values
                .iter()
                .filter(|(i, _)| intervals.contains(i))
                .map(|(_, v)| *v)
                .collect()
        };
        ReportWindow {
            from,
            to,
            intervals: intervals.end().saturating_sub(*intervals.start()) + 1,
            whole,
            busy: self
                .busy
                .iter()
                .map(|(name, util)| DiskBusy {
                    name: name.clone(),
                    util: within(util),
                })
                .filter(|b| !b.util.is_empty())
                .collect(),
            arc_metadata_share: within(&self.metadata_share),
        }
    }

    /// The baseline of `window` (from [`Builder::window`]) with the checks' `sections` and
    /// the events they emitted on the way.
    pub fn finish(
        self,
        window: &ReportWindow,
        mut sections: Vec<Section>,
        events: &[Entry],
        source: String,
    ) -> Baseline {
        let findings: Vec<Finding> = events.iter().filter_map(Finding::from_entry).collect();
        sections.extend(unconcluded(&findings, &sections));
        // Worst first; within a rating, in plugin order (a stable sort).
        sections.sort_by_key(|s| std::cmp::Reverse(s.rating));
        let mut notes = self.notes;
        notes.extend(self.breaks.iter().map(Break::note));
        notes.extend(
            window
                .whole
                .resets
                .iter()
                .map(|r| format!("{r}: counters reset inside the window; no figures for it")),
        );
        let whole = &window.whole;
        Baseline {
            version: BASELINE_VERSION,
            host: whole.snapshot.host.hostname.clone(),
            kernel: whole.snapshot.host.kernel.clone(),
            zfs_version: whole.snapshot.host.zfs_version.clone(),
            zfs_loaded: whole.snapshot.zfs_loaded,
            source,
            from: window.from,
            to: window.to,
            intervals: window.intervals,
            conclusions: sections,
            findings,
            disks: figures::disks(window),
            classes: figures::classes(whole),
            vdevs: figures::vdevs(whole),
            arc: figures::arc(window),
            zil: figures::zil(whole),
            pools: figures::pools(whole),
            cpu_busy_pct: whole.cpu.map(|c| c.busy_pct),
            net: figures::net(whole),
            series: self.series,
            notes,
            plugin_problems: Vec::new(),
            breaks: self.breaks,
            covered_s: whole.interval,
            kernel_events: self.kernel_events,
            phases: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(time: f64, state: &str, subject: &str) -> Finding {
        Finding {
            time,
            check: "special-fill".into(),
            severity: "warning".into(),
            state: state.into(),
            subject: subject.into(),
            summary: format!("{subject} is 93% full"),
        }
    }

    #[test]
    fn a_finding_raised_in_the_window_always_has_a_conclusion() {
        let raised = [finding(10.0, "raised", "fill")];
        let added = unconcluded(&raised, &[]);
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].check, "special-fill");
        assert_eq!(added[0].rating, Rating::Warning);
        assert_eq!(added[0].title, "fill: fill is 93% full");
        // Raised then cleared: said, as information.
        let both = [
            finding(10.0, "raised", "fill"),
            finding(20.0, "cleared", "fill"),
        ];
        assert_eq!(unconcluded(&both, &[])[0].rating, Rating::Info);
        // The check's own conclusion about that subject is enough.
        let mut own = Section::new(Rating::Ok, "fill: 93% full", "…").subject("fill");
        own.check = "special-fill".into();
        assert!(unconcluded(&raised, &[own.clone()]).is_empty());
        // A finding named after its plugin and a dot (what the storm series' slog-usage
        // raises, `slog-usage.redundancy`) is spoken for by the plugin's section; a plugin
        // whose name merely begins the same is not.
        let mut dotted = finding(10.0, "raised", "fill");
        dotted.check = "special-fill.usage".into();
        assert!(unconcluded(std::slice::from_ref(&dotted), &[own.clone()]).is_empty());
        dotted.check = "special-fillx".into();
        assert_eq!(unconcluded(&[dotted], &[own]).len(), 1);
    }
}
