//! zpulse check **l2arc-value**: what an L2ARC gives (reads it serves that would otherwise go
//! to the pool) against what it costs (ARC memory for the headers of the blocks it holds, and
//! the writes that feed it), with a verdict: `worth it`, `marginal` or `negative`.
//!
//! Over the window: the L2ARC hit ratio (how often an ARC miss found its block there); the
//! share of *all* ARC reads it served, `l2_hits / (hits + iohits + misses)` (`iohits` from
//! OpenZFS 2.2), on top of the ARC's own hit rate; the bytes it served; the RAM its headers
//! take (`l2_hdr_size`) as a share of the ARC; what that RAM would do as ARC (ghost-list hits
//! are reads a larger ARC would have served); persistence (`l2arc_rebuild_enabled`,
//! `l2_rebuild_success`); and the write load on its device.
//!
//! The verdict (check `l2arc-value`, subject `pool/cache/dev` when the host has one cache
//! device, else `l2arc`):
//!
//! * `negative` (warning) — it costs RAM or device writes, and it serves less than
//!   `marginal_share_pct` of the reads while no longer filling up, or the ARC misses so
//!   little that even a perfect L2ARC could not serve that much (the seed: ARC 98.5%, L2ARC
//!   +1.3%); or the RAM of its headers, as ARC, would have served more reads than it did.
//! * `worth it` (info) — it serves at least `worth_share_pct` of the reads.
//! * `marginal` (info) — in between, or still filling.
//!
//! Config (`[plugins.l2arc-value]`), every key optional; `docs/checks/l2arc-value.md`
//! explains each
//! (the `settings!` declaration of `Config` is the one definition of them).

use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sdk::section::section_of;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::stats::{Timed, Window, round_sig3};
use zpulse_proto::sdk::text::{bytes, duration};
use zpulse_proto::sdk::{self, Check, Event, Findings, Report, Rules, Severity, Verdict};
use zpulse_proto::snapshot::{Snapshot, VdevClass};

zpulse_proto::settings! {
    /// The `[plugins.l2arc-value]` table.
    pub struct Config {
        window(Duration::from_secs(900), 90, 3);
        /// fewer ARC reads in the window: no verdict (a share of a handful of reads means nothing)
        min_reads: u64 = 10_000, [];
        /// worth it from this % of all ARC reads served
        worth_share_pct: f64 = 5.0, [Rule::Pct];
        /// under this % (served, or at most servable): negative when it costs
        marginal_share_pct: f64 = 2.0, [Rule::Pct, Rule::NotAbove("worth_share_pct")];
        /// a raised finding is not cleared sooner
        #[serde(with = "sdk::config::duration")]
        min_hold: Duration = Duration::from_secs(900), [];
    }
}

impl Config {
    /// Refuses settings that cannot work, saying why.
    pub fn validate(&self) -> Result<(), String> {
        if self.min_samples < 1 {
            return Err("min_samples: must be at least 1".into());
        }
        self.check_rules().map_err(|e| e.to_string())
    }
}

/// One interval: arcstats counter deltas and the cache devices' load.
#[derive(Debug, Clone, Default, PartialEq)]
struct Point {
    end: f64,
    interval: f64,
    reads: f64,
    hits: f64,
    misses: f64,
    l2_hits: f64,
    l2_misses: f64,
    l2_read_bytes: f64,
    l2_write_bytes: f64,
    ghost_hits: f64,
    /// Σ of the cache disks' busy × interval, and the seconds it covers.
    busy_s: f64,
    busy_secs: f64,
    /// `l2_asize` at the end of the interval.
    l2_asize: Option<u64>,
}

impl Timed for Point {
    fn end(&self) -> f64 {
        self.end
    }
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worth {
    WorthIt,
    Marginal,
    Negative,
}

impl Worth {
    pub fn as_str(self) -> &'static str {
        match self {
            Worth::WorthIt => "worth it",
            Worth::Marginal => "marginal",
            Worth::Negative => "negative",
        }
    }
}

/// Everything the verdict rests on, over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub value: Worth,
    /// Why it is negative, in words.
    pub reason: Option<String>,
    pub samples: usize,
    pub seconds: f64,
    pub reads: f64,
    pub arc_hit_ratio: f64,
    /// l2_hits / all ARC reads.
    pub l2_share: f64,
    /// ARC misses / all ARC reads: the most any L2ARC could serve.
    pub max_share: f64,
    pub l2_hit_ratio: Option<f64>,
    pub l2_hits: f64,
    pub l2_read_bytes: f64,
    pub l2_write_bytes: f64,
    pub ghost_hits: f64,
    /// Reads the headers' RAM would have served as ARC (linear in the ghost lists).
    pub ram_as_arc_hits: f64,
    pub hdr_bytes: u64,
    pub arc_bytes: u64,
    pub l2_asize: Option<u64>,
    pub device_bytes: u64,
    pub filling: bool,
    pub device_util: Option<f64>,
    /// `l2arc_rebuild_enabled` (absent before OpenZFS 2.0: never persistent).
    pub rebuild_enabled: Option<bool>,
    pub rebuild_success: Option<u64>,
}

/// A percentage with as many decimals as a small figure needs.
fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p != 0.0 && p.abs() < 1.0 {
        format!("{p:.2}%")
    } else {
        format!("{p:.1}%")
    }
}

/// The cache devices of every pool: (subject `pool/cache/dev`, kernel disk, space).
fn cache_devices(snap: &Snapshot) -> Vec<(String, Option<String>, u64)> {
    let mut out = Vec::new();
    for pool in &snap.pools {
        let Some(config) = pool.config.as_ref() else {
            continue;
        };
        for v in config.class(VdevClass::Cache) {
            out.push((
                v.subject_of(&pool.name, v),
                v.disk.clone(),
                v.stats.as_ref().map_or(0, |s| s.space),
            ));
        }
    }
    out
}

/// The subject of the verdict: the one cache device, or `l2arc` for several; and their names.
fn subject_of(devices: &[(String, Option<String>, u64)]) -> (String, Vec<String>) {
    let subject = if devices.len() == 1 {
        devices[0].0.clone()
    } else {
        "l2arc".to_string()
    };
    (subject, devices.iter().map(|d| d.0.clone()).collect())
}

/// The check's logic, without the plugin plumbing: feed it samples, get events.
pub struct L2arcValue {
    config: Config,
    findings: Findings,
    window: Window<Point>,
}

impl L2arcValue {
    pub fn new(config: Config) -> Result<L2arcValue, String> {
        config.validate()?;
        Ok(L2arcValue {
            // Read mixes swing: the verdict is updated when a figure halves or doubles, or the
            // verdict changes.
            findings: Findings::new(
                "l2arc-value",
                Rules {
                    raise_after: 1,
                    min_hold: config.min_hold,
                    material_change: 0.5,
                },
            ),
            window: config.new_window(),
            config,
        })
    }

    /// Looks at one sample; returns the events to emit.
    pub fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        let now = sample.end;
        let snap = &sample.snapshot;
        let devices = cache_devices(snap);
        let mut events = Vec::new();
        if devices.is_empty() {
            self.window.clear();
        } else if self.record(sample, &devices)
            && let Some(a) = self.assess(snap, &devices)
        {
            let (subject, names) = subject_of(&devices);
            let (verdict, figures) = figures(&names, &a);
            events.extend(self.findings.observe_worded(
                now,
                &subject,
                verdict,
                || figures,
                |report| words(&subject, &a, report),
            ));
        }
        events.extend(self.findings.clear_unseen(now, |s| {
            Report::new(format!("{s}: no L2ARC device any more"))
        }));
        events
    }

    /// Takes the sample's ARC deltas and cache-device load into the window; false when the
    /// sample has no ARC rates.
    fn record(&mut self, sample: &Sample, devices: &[(String, Option<String>, u64)]) -> bool {
        let Some(arc) = sample.arc.as_ref() else {
            return false;
        };
        let d = |n: &str| arc.delta(n).unwrap_or(0) as f64;
        let (busy_s, busy_secs) = devices
            .iter()
            .filter_map(|(_, disk, _)| sample.disk(disk.as_deref()?))
            .fold((0.0, 0.0), |(b, s), r| {
                (b + r.util / 100.0 * sample.interval, s + sample.interval)
            });
        let now = sample.end;
        self.window.push(Point {
            end: now,
            interval: sample.interval,
            reads: d("hits") + d("iohits") + d("misses"),
            hits: d("hits"),
            misses: d("misses"),
            l2_hits: d("l2_hits"),
            l2_misses: d("l2_misses"),
            l2_read_bytes: d("l2_read_bytes"),
            l2_write_bytes: d("l2_write_bytes"),
            ghost_hits: d("mru_ghost_hits") + d("mfu_ghost_hits"),
            busy_s,
            busy_secs,
            l2_asize: sample.snapshot.arc.as_ref().and_then(|a| a.l2_asize()),
        });
        true
    }

    /// `zpulse report`: the verdict over the whole window (one interval holding all of its
    /// reads), whatever the check's own window and minimum samples.
    pub fn conclude(&self, window: &ReportWindow) -> Vec<Section> {
        let whole = &window.whole;
        let devices = cache_devices(&whole.snapshot);
        if devices.is_empty() {
            return Vec::new();
        }
        let config = Config {
            window: window.judging_span(),
            window_samples: usize::MAX,
            min_samples: 1,
            ..self.config.clone()
        };
        let Ok(mut judge) = L2arcValue::new(config) else {
            return Vec::new();
        };
        if !judge.record(whole, &devices) {
            return Vec::new();
        }
        let (subject, names) = subject_of(&devices);
        let Some(a) = judge.assess(&whole.snapshot, &devices) else {
            return vec![
                Section::new(
                    Rating::Info,
                    format!("{subject}: too few ARC reads to judge"),
                    format!(
                        "fewer than {} ARC reads in the window (min_reads)",
                        self.config.min_reads
                    ),
                )
                .subject(subject),
            ];
        };
        let (_, report) = report(&subject, &names, &a);
        let rating = match a.value {
            Worth::Negative => Rating::Warning,
            Worth::Marginal => Rating::Info,
            Worth::WorthIt => Rating::Ok,
        };
        let title = format!(
            "{subject}: {} (serves {} of all reads)",
            a.value.as_str(),
            pct(a.l2_share)
        );
        vec![section_of(&report, rating, title).subject(subject)]
    }

    fn assess(
        &self,
        snap: &Snapshot,
        devices: &[(String, Option<String>, u64)],
    ) -> Option<Assessment> {
        let w = &self.window;
        if w.len() < self.config.min_samples {
            return None;
        }
        let sum = |f: fn(&Point) -> f64| w.iter().map(f).sum::<f64>();
        let reads = sum(|p| p.reads);
        if reads < self.config.min_reads as f64 || reads <= 0.0 {
            return None;
        }
        let arc = snap.arc.as_ref()?;
        let l2_hits = sum(|p| p.l2_hits);
        let l2_lookups = l2_hits + sum(|p| p.l2_misses);
        let ghost_hits = sum(|p| p.ghost_hits);
        let hdr_bytes = arc.l2_hdr_size().unwrap_or(0);
        let ghost_size =
            arc.0.u64("mru_ghost_size").unwrap_or(0) + arc.0.u64("mfu_ghost_size").unwrap_or(0);
        // Ghost hits are reads a larger ARC would have served, the ghost lists being the size
        // of that larger ARC: RAM worth a fraction of them serves about that fraction.
        let ram_as_arc_hits = if ghost_size > 0 {
            ghost_hits * (hdr_bytes as f64 / ghost_size as f64).min(1.0)
        } else {
            0.0
        };
        let l2_share = l2_hits / reads;
        let max_share = sum(|p| p.misses) / reads;
        let l2_write_bytes = sum(|p| p.l2_write_bytes);
        let device_bytes: u64 = devices.iter().map(|d| d.2).sum();
        let asize_start = w.front().and_then(|p| p.l2_asize);
        let l2_asize = w.back().and_then(|p| p.l2_asize);
        // Still filling: its content grew by more than a tenth over the window and it is
        // not yet near the device's size. While it fills, a low hit rate says little.
        let filling = match (asize_start, l2_asize) {
            (Some(a), Some(b)) => {
                b as f64 > a as f64 * 1.1 && (b as f64) < device_bytes as f64 * 0.9
            }
            _ => false,
        };
        let costs = hdr_bytes > 0 || l2_write_bytes > 0.0;
        let marginal = self.config.marginal_share_pct / 100.0;
        let reason = if !costs {
            None
        } else if max_share < marginal {
            Some(format!(
                "the ARC misses only {} of reads, so no L2ARC can add more than that",
                pct(max_share)
            ))
        } else if hdr_bytes > 0 && ram_as_arc_hits > l2_hits {
            Some("the RAM of its headers would serve more reads as ARC".to_string())
        } else if l2_share < marginal && !filling {
            Some("it serves too few reads for what it costs".to_string())
        } else {
            None
        };
        let value = if reason.is_some() {
            Worth::Negative
        } else if l2_share >= self.config.worth_share_pct / 100.0 {
            Worth::WorthIt
        } else {
            Worth::Marginal
        };
        let busy_secs = sum(|p| p.busy_secs);
        Some(Assessment {
            value,
            reason,
            samples: w.len(),
            seconds: sum(|p| p.interval),
            reads,
            arc_hit_ratio: sum(|p| p.hits) / reads,
            l2_share,
            max_share,
            l2_hit_ratio: (l2_lookups > 0.0).then(|| l2_hits / l2_lookups),
            l2_hits,
            l2_read_bytes: sum(|p| p.l2_read_bytes),
            l2_write_bytes,
            ghost_hits,
            ram_as_arc_hits,
            hdr_bytes,
            arc_bytes: arc.size().unwrap_or(0),
            l2_asize,
            device_bytes,
            filling,
            device_util: (busy_secs > 0.0).then(|| sum(|p| p.busy_s) / busy_secs * 100.0),
            rebuild_enabled: snap.tunables.l2arc_rebuild_enabled().map(|v| v != 0),
            rebuild_success: arc.l2_rebuild_success(),
        })
    }
}

/// The finding for one assessment: its figures and its words.
pub fn report(subject: &str, devices: &[String], a: &Assessment) -> (Verdict, Report) {
    let (verdict, mut report) = figures(devices, a);
    words(subject, a, &mut report);
    (verdict, report)
}

/// Bytes a second over the assessment's window.
fn per_s(a: &Assessment, x: f64) -> f64 {
    if a.seconds > 0.0 { x / a.seconds } else { 0.0 }
}

/// The share of the ARC its L2ARC headers take.
fn hdr_share(a: &Assessment) -> f64 {
    if a.arc_bytes > 0 {
        a.hdr_bytes as f64 / a.arc_bytes as f64
    } else {
        0.0
    }
}

/// The verdict and the figures of one assessment, without the words: what is compared every
/// sample (the finding is held all the time, as `info` when the L2ARC pays).
fn figures(devices: &[String], a: &Assessment) -> (Verdict, Report) {
    let per_s = |x: f64| per_s(a, x);
    let hdr_share = hdr_share(a);
    let mut report = Report::default()
        .with("verdict", a.value.as_str())
        .with("arc_reads", a.reads.round())
        .with("arc_hit_pct", round_sig3(a.arc_hit_ratio * 100.0))
        .with("l2_share_of_reads_pct", round_sig3(a.l2_share * 100.0))
        .with("max_share_of_reads_pct", round_sig3(a.max_share * 100.0))
        .with("l2_hits", a.l2_hits.round())
        .with("l2_read_bytes_per_s", round_sig3(per_s(a.l2_read_bytes)))
        .with("l2_write_bytes_per_s", round_sig3(per_s(a.l2_write_bytes)))
        .with("l2_hdr_bytes", a.hdr_bytes)
        .with("l2_hdr_share_of_arc_pct", round_sig3(hdr_share * 100.0))
        .with("ghost_hits_per_s", round_sig3(per_s(a.ghost_hits)))
        .with("ram_as_arc_hits", a.ram_as_arc_hits.round())
        .with("filling", a.filling)
        .with("devices", devices.to_vec());
    if let Some(r) = a.l2_hit_ratio {
        report = report.with("l2_hit_pct", round_sig3(r * 100.0));
    }
    if let Some(u) = a.device_util {
        report = report.with("device_util_pct", round_sig3(u));
    }
    if let Some(e) = a.rebuild_enabled {
        report = report.with("rebuild_enabled", e);
    }
    if let Some(n) = a.rebuild_success {
        report = report.with("rebuild_success", n);
    }
    let severity = match a.value {
        Worth::Negative => Severity::Warning,
        Worth::Marginal | Worth::WorthIt => Severity::Info,
    };
    (Verdict::Holds(severity), report)
}

/// The summary and advice of one assessment, written into its report: made only for an
/// event that goes out, and for `zpulse report`.
fn words(subject: &str, a: &Assessment, report: &mut Report) {
    let per_s = |x: f64| per_s(a, x);
    let hdr_share = hdr_share(a);
    let hit = a.l2_hit_ratio.map_or(String::new(), |r| {
        format!(", L2ARC hit ratio {:.0}%", r * 100.0)
    });
    let mut text = format!(
        "{subject} served {:.0} of {:.0} ARC reads over the last {} ({} of all reads on top \
         of the ARC's own {} hit rate{hit}, {}/s read from it)",
        a.l2_hits,
        a.reads,
        duration(a.seconds),
        pct(a.l2_share),
        pct(a.arc_hit_ratio),
        bytes(per_s(a.l2_read_bytes)),
    );
    text += &format!(
        "; its headers take {} of ARC RAM ({} of the ARC) and feeding it wrote {}/s to it",
        bytes(a.hdr_bytes as f64),
        pct(hdr_share),
        bytes(per_s(a.l2_write_bytes)),
    );
    if let Some(u) = a.device_util {
        text += &format!(" ({u:.0}% busy)");
    }
    if a.ghost_hits > 0.0 {
        text += &format!(
            "; the ARC's ghost lists were hit {:.1} times/s, so that RAM as ARC would have \
             served about {:.0} reads",
            per_s(a.ghost_hits),
            a.ram_as_arc_hits
        );
    }
    if a.rebuild_enabled != Some(true) {
        text += "; it is not persistent: empty after every reboot";
    } else if a.filling {
        text += "; it is still filling";
    }
    report.advice = match a.value {
        Worth::Negative => {
            let why = a.reason.as_deref().unwrap_or("it costs more than it gives");
            Some(format!(
                "Remove it (zpool remove <pool> <device>): {why}. Its header RAM returns \
                 to the ARC, and the device can serve better as a mirrored special vdev \
                 or SLOG"
            ))
        }
        Worth::Marginal => Some(
            "It gives little: judge it over a longer window or a busier period; \
             secondarycache=metadata or l2arc_mfuonly=1 focus it on what is re-read"
                .to_string(),
        ),
        Worth::WorthIt => None,
    };
    text += &format!(": {}", a.value.as_str());
    report.summary = text;
}

impl Check for L2arcValue {
    const NAME: &'static str = "l2arc-value";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// Of the optional parts of the sample: the ARC, the vdev trees (which devices are cache)
    /// and the cache devices' disk rates.
    const READS: u64 = zpulse_proto::abi::PART_ARC
        | zpulse_proto::abi::PART_POOL_CONFIGS
        | zpulse_proto::abi::PART_DISK_RATES;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        Ok(L2arcValue::new(config)?)
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        L2arcValue::observe(self, sample)
    }

    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        self.conclude(window)
    }

    fn started(&self) -> Option<String> {
        Some(format!(
            "weighing the L2ARC over {} s, from {} ARC reads",
            self.config.window.as_secs(),
            self.config.min_reads
        ))
    }
}

#[cfg(test)]
mod tests;
