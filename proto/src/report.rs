//! What a check says about a whole window: the input and output of the plugin ABI's `report`
//! entry point (ABI 1.2), behind `zpulse report`.
//!
//! A check's `on_sample` watches for alert conditions over its own windows, with thresholds
//! and hysteresis: right for a daemon that pages someone, silent on a 4-minute storm. A report
//! asks another question, once, over the window the administrator chose: *what happened, and
//! what should I change?* The agent gives every plugin a [`ReportWindow`] — the whole window
//! as one interval plus the per-interval distribution of disk busy time — and each plugin
//! answers with [`Section`]s: a verdict, the figures it rests on, advice. The window's figures
//! do not depend on the checks' alert thresholds.
//!
//! Both types cross the ABI as MessagePack maps with named keys, like samples and events.

use crate::Sample;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The window a report covers, as plugins receive it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportWindow {
    /// `taken_at` of the first and last snapshot, Unix seconds.
    pub from: f64,
    pub to: f64,
    /// Intervals (samples) in the window: one fewer than the snapshots.
    pub intervals: u32,
    /// The window as one interval ([`Sample::between`] the first and the last snapshot): its
    /// rates are the window's means, its latency histograms hold every I/O of the window, its
    /// `snapshot` is the last one. An object whose counters were reset inside the window has
    /// no rates here and is named in `whole.resets`.
    pub whole: Sample,
    /// Every disk's `%util` in each interval, in time order: the distribution behind "60%
    /// busy on average, 16% of the time at 95% or more".
    #[serde(default)]
    pub busy: Vec<DiskBusy>,
    /// The ARC's metadata share (0–1, [`crate::snapshot::ArcStats::metadata_share`]) at the
    /// end of each interval, in time order.
    #[serde(default)]
    pub arc_metadata_share: Vec<f64>,
}

impl ReportWindow {
    /// The window of one interval, `whole`: what a check's report test needs (the agent fills
    /// in the busy and metadata series too).
    pub fn new(whole: Sample) -> ReportWindow {
        ReportWindow {
            from: whole.start,
            to: whole.end,
            intervals: 1,
            whole,
            ..ReportWindow::default()
        }
    }

    /// The busy-time series of disk `name`.
    pub fn busy(&self, name: &str) -> Option<&DiskBusy> {
        self.busy.iter().find(|b| b.name == name)
    }

    /// Seconds the window covers.
    pub fn seconds(&self) -> f64 {
        self.whole.interval
    }

    /// The `window` setting under which a check judges [`whole`](Self::whole) as its one
    /// observation: twice the window's length, at least 2 s, so that observation lies well
    /// inside the check's window ([`crate::sdk::stats::Window`]'s edge rule).
    pub fn judging_span(&self) -> Duration {
        Duration::from_secs_f64(self.whole.interval.max(1.0) * 2.0)
    }

    /// The mean of the ARC's metadata share over the window's intervals, 0–1.
    pub fn arc_metadata_share_mean(&self) -> Option<f64> {
        let n = self.arc_metadata_share.len();
        (n > 0).then(|| self.arc_metadata_share.iter().sum::<f64>() / n as f64)
    }
}

/// One disk's `%util` per interval of the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskBusy {
    pub name: String,
    /// 0–100, one per interval in which the disk had rates (a reset interval has none).
    pub util: Vec<f64>,
}

impl DiskBusy {
    /// The share (0–1) of intervals at or above `pct`; `None` with no intervals.
    pub fn share_at_or_above(&self, pct: f64) -> Option<f64> {
        if self.util.is_empty() {
            return None;
        }
        let n = self.util.iter().filter(|u| **u >= pct).count();
        Some(n as f64 / self.util.len() as f64)
    }
}

/// How a section judges what it saw, from good to bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rating {
    /// Nothing to change ("the SLOG is not saturated").
    Ok,
    /// Worth knowing, nothing urgent.
    Info,
    /// Costs performance or safety: change it.
    Warning,
    /// Data is at risk or the pool is failing.
    Critical,
}

impl Rating {
    pub fn as_str(self) -> &'static str {
        match self {
            Rating::Ok => "ok",
            Rating::Info => "info",
            Rating::Warning => "warning",
            Rating::Critical => "critical",
        }
    }
}

/// One conclusion of one check over the window.
/// It grows: outside this crate, make one with [`Section::new`] and its builders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Section {
    /// The plugin's name; the agent sets it (whatever the plugin wrote).
    #[serde(default)]
    pub check: String,
    /// What it is about (`storm/mirror-0`, `sda`, `arc`), as in events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub rating: Rating,
    /// One line: the verdict ("sda, sdb: seek-bound metadata reads").
    pub title: String,
    /// What was seen, with its figures, in sentences.
    pub summary: String,
    /// What to do about it, when anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// The figures the verdict rests on, for tables and machines.
    #[serde(default)]
    pub figures: Vec<Figure>,
    /// The verdict in a few stable words (`seek-bound`, `saturated, streaming`), the same
    /// whatever the figures: the report judges every interval of the window too, and a
    /// stretch of intervals whose verdict is not the same all along is stated as a phase
    /// (`seek-bound from 09:12 to 09:13`). Without it the rating stands for the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// A named figure of a section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Stable machine name (`util_mean_pct`).
    pub key: String,
    /// For people ("mean %util").
    pub label: String,
    pub value: f64,
    /// `%`, `ms`, `MB/s`, `KiB`, `/s`, `B` or empty.
    #[serde(default)]
    pub unit: String,
}

/// Limits the agent enforces on a section (larger ones are refused, and that is said).
pub const SECTION_MAX_BYTES: usize = 16 * 1024;
/// Sections one plugin may contribute to one report.
pub const SECTIONS_PER_PLUGIN: usize = 32;
/// Figures in one section.
pub const FIGURES_PER_SECTION: usize = 32;
/// Bytes of a section's verdict words.
pub const VERDICT_MAX_BYTES: usize = 64;

impl Section {
    pub fn new(rating: Rating, title: impl Into<String>, summary: impl Into<String>) -> Section {
        Section {
            check: String::new(),
            subject: None,
            rating,
            title: title.into(),
            summary: summary.into(),
            advice: None,
            figures: Vec::new(),
            verdict: None,
        }
    }

    /// Names the verdict ([`Section::verdict`](Section#structfield.verdict)).
    pub fn verdict(mut self, verdict: impl Into<String>) -> Section {
        self.verdict = Some(verdict.into());
        self
    }

    /// The verdict that phases compare: the section's own words, else its rating.
    pub fn verdict_key(&self) -> &str {
        self.verdict.as_deref().unwrap_or(self.rating.as_str())
    }

    pub fn subject(mut self, subject: impl Into<String>) -> Section {
        self.subject = Some(subject.into());
        self
    }

    pub fn advice(mut self, advice: impl Into<String>) -> Section {
        self.advice = Some(advice.into());
        self
    }

    /// Adds a figure; a non-finite value (no data) is left out rather than sent as NaN.
    pub fn figure(mut self, key: &str, label: &str, value: f64, unit: &str) -> Section {
        if value.is_finite() {
            self.figures.push(Figure {
                key: key.to_owned(),
                label: label.to_owned(),
                value,
                unit: unit.to_owned(),
            });
        }
        self
    }

    /// The figure named `key`.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.figures.iter().find(|f| f.key == key).map(|f| f.value)
    }

    /// Decodes a section a plugin sent and checks it against the limits above.
    pub fn from_msgpack(bytes: &[u8]) -> Result<Section, String> {
        if bytes.len() > SECTION_MAX_BYTES {
            return Err(format!(
                "a report section of {} bytes (at most {SECTION_MAX_BYTES})",
                bytes.len()
            ));
        }
        let s: Section =
            rmp_serde::from_slice(bytes).map_err(|e| format!("not a report section: {e}"))?;
        s.validate()?;
        Ok(s)
    }

    pub fn to_msgpack(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).expect("a section always encodes")
    }

    /// Text fields non-empty and bounded, figures finite and few.
    pub fn validate(&self) -> Result<(), String> {
        if self.title.trim().is_empty() || self.title.len() > 300 {
            return Err("a section's title must have 1 to 300 bytes".into());
        }
        if self.summary.len() > 4000 || self.advice.as_ref().is_some_and(|a| a.len() > 4000) {
            return Err("a section's summary and advice have at most 4000 bytes each".into());
        }
        if self
            .verdict
            .as_ref()
            .is_some_and(|v| v.trim().is_empty() || v.len() > VERDICT_MAX_BYTES)
        {
            return Err(format!(
                "a section's verdict must have 1 to {VERDICT_MAX_BYTES} bytes"
            ));
        }
        if self.figures.len() > FIGURES_PER_SECTION {
            return Err(format!(
                "a section has {} figures (at most {FIGURES_PER_SECTION})",
                self.figures.len()
            ));
        }
        if let Some(f) = self.figures.iter().find(|f| !f.value.is_finite()) {
            return Err(format!("figure {:?} is not a finite number", f.key));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_survives_messagepack_and_its_limits_hold() {
        let s = Section::new(Rating::Warning, "sda: seek-bound", "62% busy at 2.5 MB/s")
            .subject("sda")
            .advice("add a mirrored special vdev")
            .figure("util_mean_pct", "mean %util", 62.0, "%")
            .figure("nan", "no data", f64::NAN, "");
        assert_eq!(s.figures.len(), 1, "a NaN figure is left out");
        let back = Section::from_msgpack(&s.to_msgpack()).unwrap();
        assert_eq!(back, s);
        let mut long = s.clone();
        long.title = "x".repeat(301);
        assert!(Section::from_msgpack(&long.to_msgpack()).is_err());
        let mut untitled = s.clone();
        untitled.title = " ".into();
        assert!(untitled.validate().is_err());
        // The verdict's words travel too, and are bounded; without them the rating stands in.
        assert_eq!(s.verdict_key(), "warning");
        let worded = s.clone().verdict("seek-bound");
        let back = Section::from_msgpack(&worded.to_msgpack()).unwrap();
        assert_eq!(back.verdict_key(), "seek-bound");
        assert!(s.clone().verdict(" ").validate().is_err());
        assert!(s.clone().verdict("x".repeat(65)).validate().is_err());
        assert!(Section::from_msgpack(&[0xc1]).is_err());
        assert!(Section::from_msgpack(&vec![0x90; SECTION_MAX_BYTES + 1]).is_err());
    }

    #[test]
    fn the_share_of_saturated_intervals_counts_the_threshold_itself() {
        let b = DiskBusy {
            name: "sda".into(),
            util: vec![95.0, 100.0, 40.0, 94.9],
        };
        assert_eq!(b.share_at_or_above(95.0), Some(0.5));
        assert_eq!(DiskBusy::default().share_at_or_above(95.0), None);
    }

    #[test]
    fn the_whole_window_is_judged_inside_a_window_of_twice_its_length() {
        let mut w = ReportWindow::default();
        w.whole.end = 1_800.0;
        w.whole.interval = 1_800.0;
        assert_eq!(w.judging_span(), Duration::from_secs(3_600));
        let mut window = crate::sdk::stats::Window::new(w.judging_span().as_secs_f64(), 1);
        window.push((w.whole.end, 0.0));
        assert_eq!(
            window.len(),
            1,
            "the one observation is inside the check's window"
        );
        // A window of one snapshot covers no time: still a window of 2 s, not of 0.
        w.whole.interval = 0.0;
        assert_eq!(w.judging_span(), Duration::from_secs(2));
    }
}
