//! zpulse check `arc-sizing`: **an ARC held at its limit that a bigger ARC would serve
//! better, while the host has memory to give it**.
//!
//! The ARC keeps, beside its cached blocks, "ghost" lists: the headers of blocks it recently
//! evicted. A read that misses but finds its block on a ghost list (`mru_ghost_hits`,
//! `mfu_ghost_hits`) is a miss that an ARC larger by up to the ghost lists' size would have
//! served from RAM. So when, over a window (default 30 minutes):
//!
//! * the ARC sits at its maximum — mean `size` at least `pinned_pct` (97%) of `c_max`;
//! * ghost hits are at least `ghost_share_pct` (1%) of all ARC reads and at least
//!   `min_ghost_hits_per_s` (5/s);
//! * and the host has memory available beyond a safety margin (`keep_free_pct` of RAM, at
//!   least `keep_free_min_mib`), the lowest it was in the window;
//!
//! the check advises raising `zfs_arc_max`, by how much (no more than the free memory minus
//! the margin, no more than the ghost lists could use, at most `max_growth_pct` of the
//! current limit), and with the expected effect: the ghost hits per second that would become
//! hits and the hit ratio that follows. Without memory to spare it says so at `info`. Every
//! finding reports the ARC's metadata share and the hit ratio's trend (least-squares slope
//! over the window, percentage points per hour). This is the seed's "ARC glued to its 16 GiB
//! limit at 94.7% while RAM was free: raise it".
//!
//! Config (`[plugins.arc-sizing]` in zpulse.toml), every key optional; the page
//! `docs/checks/arc-sizing.md` explains each
//! (the `settings!` declaration of `Config` is the one definition of them).

use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sdk::section::sections_of_events;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::stats::{Timed, Window, least_squares_slope, round2, settle};
use zpulse_proto::sdk::{
    self, Check, Event, Findings, Report, Rules, Severity, Threshold, Verdict,
};
use zpulse_proto::snapshot::{Os, Snapshot, VdevClass};

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

zpulse_proto::settings! {
    /// The `[plugins.arc-sizing]` table.
    pub struct Config {
        window(Duration::from_secs(30 * 60), 360, 12);
        /// consecutive holding samples before raising
        raise_after: u32 = 1, [];
        /// a raised finding is not cleared sooner
        #[serde(with = "sdk::config::duration")]
        min_hold: Duration = Duration::from_secs(600), [];
        /// mean `size/c_max` (%) from which the ARC counts as pinned (the seed: 15.7 of 16 GiB = 98%)
        pinned_pct: f64 = 97.0, [Rule::Pct];
        /// clear level for pinned
        pinned_clear_pct: f64 = 90.0, [Rule::Pct, Rule::NotAbove("pinned_pct")];
        /// ghost hits as % of ARC reads: one point of hit ratio to gain (at 95%, a fifth of the misses)
        ghost_share_pct: f64 = 1.0, [Rule::Pct];
        /// clear level for the share
        ghost_share_clear_pct: f64 = 0.5, [Rule::Pct, Rule::NotAbove("ghost_share_pct")];
        /// fewer ghost hits per second are not worth RAM (clear at half)
        min_ghost_hits_per_s: f64 = 5.0, [Rule::AtLeast(0.0)];
        /// % of RAM the advice leaves available
        keep_free_pct: f64 = 15.0, [Rule::AtLeast(0.0), Rule::AtMost(99.0)];
        /// … and at least this many MiB
        keep_free_min_mib: f64 = 1024.0, [Rule::AtLeast(0.0)];
        /// one advice raises the limit by at most this % of `c_max`
        max_growth_pct: f64 = 100.0, [Rule::AtLeast(0.0)];
        /// a smaller possible raise is reported as "no memory to spare" (info)
        min_step_mib: f64 = 256.0, [Rule::AtLeast(0.0)];
    }
}

/// The ARC over one sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ArcObs {
    pub end: f64,
    pub interval: f64,
    /// Bytes, at the sample's end.
    pub size: f64,
    pub c_max: f64,
    /// ARC reads in the sample (hits + iohits + misses) and hits.
    pub reads: f64,
    pub hits: f64,
    /// mru_ghost_hits + mfu_ghost_hits in the sample.
    pub ghost_hits: f64,
    /// ARC misses the L2ARC served (`l2_hits`) in the sample.
    pub l2_hits: f64,
    /// mru_ghost_size + mfu_ghost_size: how much data the ghost lists stand for.
    pub ghost_size: Option<f64>,
    pub metadata_share: Option<f64>,
    /// Memory the host has available beyond the ARC, and its RAM, bytes.
    pub available: Option<f64>,
    pub total: Option<f64>,
}

impl ArcObs {
    /// The figures of one sample; `None` without ARC statistics or rates (no ZFS, a reset).
    pub fn from_sample(sample: &Sample) -> Option<ArcObs> {
        let rates = sample.arc.as_ref()?;
        let arc = sample.snapshot.arc.as_ref()?;
        let d = |n: &str| rates.delta(n).unwrap_or(0) as f64;
        let ghost_size = match (arc.0.u64("mru_ghost_size"), arc.0.u64("mfu_ghost_size")) {
            (None, None) => None,
            (a, b) => Some((a.unwrap_or(0) + b.unwrap_or(0)) as f64),
        };
        let memory = sample.snapshot.memory.as_ref();
        // MemAvailable does not count the ARC (it is not page cache), so it is what the ARC
        // could still take; arcstats' own figure is the fallback (FreeBSD without it, old
        // kernels).
        let available = memory
            .and_then(|m| m.available)
            .map(|a| a as f64)
            .or_else(|| arc.memory_available_bytes().map(|a| a.max(0) as f64));
        let total = memory
            .map(|m| m.total as f64)
            .filter(|&t| t > 0.0)
            .or_else(|| arc.memory_all_bytes().map(|t| t as f64));
        Some(ArcObs {
            end: sample.end,
            interval: sample.interval,
            size: arc.size()? as f64,
            c_max: arc.c_max().filter(|&c| c > 0)? as f64,
            reads: d("hits") + d("iohits") + d("misses"),
            hits: d("hits"),
            ghost_hits: d("mru_ghost_hits") + d("mfu_ghost_hits"),
            l2_hits: d("l2_hits"),
            ghost_size,
            metadata_share: arc.metadata_share(),
            available,
            total,
        })
    }
}

/// The ARC over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowStats {
    pub samples: usize,
    pub seconds: f64,
    pub size_mean: f64,
    /// `c_max` at the newest sample.
    pub c_max: f64,
    /// Mean of size ÷ c_max, 0–1.
    pub pinned: f64,
    pub reads_per_s: f64,
    /// hits ÷ reads over the window; `None` without reads.
    pub hit_ratio: Option<f64>,
    pub ghost_hits_per_s: f64,
    /// Ghost hits ÷ reads, 0–1 (0 without reads).
    pub ghost_share: f64,
    /// Least-squares slope of the per-sample hit ratio, percentage points per hour.
    pub hit_ratio_trend: Option<f64>,
    pub metadata_share: Option<f64>,
    /// The least memory available in the window, and RAM at the newest sample.
    pub available_min: Option<f64>,
    pub total: Option<f64>,
    pub ghost_size: Option<f64>,
    /// Reads the L2ARC served, per second and as a share of all ARC reads (0–1).
    pub l2_hits_per_s: f64,
    pub l2_share: f64,
    /// Σ hits and Σ ghost hits, for the projection.
    hits: f64,
    reads: f64,
    ghost_hits: f64,
}

impl Timed for ArcObs {
    fn end(&self) -> f64 {
        self.end
    }
}

impl WindowStats {
    /// The ARC over the samples in `window`; `None` when it is empty or covers no time.
    pub fn over(window: &Window<ArcObs>) -> Option<WindowStats> {
        let last = window.back()?;
        let seconds: f64 = window.iter().map(|o| o.interval).sum();
        if seconds <= 0.0 {
            return None;
        }
        let n = window.len() as f64;
        let reads: f64 = window.iter().map(|o| o.reads).sum();
        let hits: f64 = window.iter().map(|o| o.hits).sum();
        let ghost_hits: f64 = window.iter().map(|o| o.ghost_hits).sum();
        let l2_hits: f64 = window.iter().map(|o| o.l2_hits).sum();
        let mean_of = |f: fn(&ArcObs) -> Option<f64>| {
            let v: Vec<f64> = window.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let points: Vec<(f64, f64)> = window
            .iter()
            .filter(|o| o.reads > 0.0)
            .map(|o| (o.end / 3600.0, o.hits / o.reads * 100.0))
            .collect();
        Some(WindowStats {
            samples: window.len(),
            seconds,
            size_mean: window.iter().map(|o| o.size).sum::<f64>() / n,
            c_max: last.c_max,
            pinned: window.iter().map(|o| o.size / o.c_max).sum::<f64>() / n,
            reads_per_s: reads / seconds,
            hit_ratio: (reads > 0.0).then(|| hits / reads),
            ghost_hits_per_s: ghost_hits / seconds,
            ghost_share: if reads > 0.0 { ghost_hits / reads } else { 0.0 },
            hit_ratio_trend: slope(&points),
            metadata_share: mean_of(|o| o.metadata_share),
            available_min: window
                .iter()
                .filter_map(|o| o.available)
                .min_by(f64::total_cmp),
            total: last.total,
            ghost_size: mean_of(|o| o.ghost_size),
            l2_hits_per_s: l2_hits / seconds,
            l2_share: if reads > 0.0 { l2_hits / reads } else { 0.0 },
            hits,
            reads,
            ghost_hits,
        })
    }
}

/// Least-squares slope of y over x; `None` with fewer than 3 points or no spread in x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 3 {
        return None;
    }
    least_squares_slope(points)
}

/// How much bigger the ARC could be, and what that would bring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Memory to leave to everything else.
    pub keep_free: f64,
    /// Available beyond that (≥ 0); `None` when the host's free memory is unknown.
    pub headroom: Option<f64>,
    /// The advised raise, bytes; 0 when there is no room worth advising.
    pub raise: f64,
    pub new_max: f64,
    /// Share of the ghost hits the raise would turn into hits (0–1).
    pub converted: f64,
    pub converted_per_s: f64,
    pub projected_hit_ratio: Option<f64>,
}

/// The window judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    pub stats: WindowStats,
    pub plan: Plan,
    pub report: Report,
}

pub struct ArcSizing {
    config: Config,
    pinned: Threshold,
    ghost_share: Threshold,
    ghost_rate: Threshold,
    findings: Findings,
    window: Window<ArcObs>,
}

pub const SUBJECT: &str = "arc";

impl Check for ArcSizing {
    const NAME: &'static str = "arc-sizing";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// Of the optional parts of the sample: the ARC (memory and tunables are always sent),
    /// and the pools' vdev trees, for the cache devices an advice must know of.
    const READS: u64 = zpulse_proto::abi::PART_ARC | zpulse_proto::abi::PART_POOL_CONFIGS;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        Ok(ArcSizing::with_config(config)?)
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        self.step(sample)
    }

    fn started(&self) -> Option<String> {
        Some(format!(
            "watching the ARC over {} s: pinned at {}% of c_max with ghost hits ≥ {}% of reads",
            self.config.window.as_secs(),
            self.config.pinned_pct,
            self.config.ghost_share_pct
        ))
    }

    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        self.conclude(window)
    }
}

impl ArcSizing {
    /// `zpulse report`: the ARC judged over the whole window as one interval (its reads and
    /// ghost hits over all of it, its size at the end), whatever the check's own window; when
    /// nothing is wrong, one `ok` section with the figures.
    pub fn conclude(&self, window: &ReportWindow) -> Vec<Section> {
        let whole = &window.whole;
        let config = Config {
            window: window.judging_span(),
            window_samples: usize::MAX,
            min_samples: 1,
            raise_after: 1,
            ..self.config.clone()
        };
        let Ok(mut judge) = ArcSizing::with_config(config) else {
            return Vec::new();
        };
        let sections = sections_of_events(&judge.step(whole), |_| None);
        if !sections.is_empty() {
            return sections;
        }
        let Some(arc) = whole.snapshot.arc.as_ref() else {
            return Vec::new();
        };
        let (size, max) = (
            arc.size().unwrap_or(0) as f64,
            arc.c_max().unwrap_or(0) as f64,
        );
        let rates = whole.arc.as_ref();
        let meta = window.arc_metadata_share_mean();
        let mut summary = format!(
            "the ARC ended the window at {:.0}% of its maximum ({:.0} of {:.0} MiB)",
            if max > 0.0 { size / max * 100.0 } else { 0.0 },
            size / MIB,
            max / MIB
        );
        if let Some(h) = rates.and_then(|r| r.hit_ratio) {
            summary += &format!(", answering {:.1}% of reads", h * 100.0);
        }
        if let Some(m) = meta {
            summary += &format!("; metadata was {:.0}% of it on average", m * 100.0);
        }
        summary += ": no sign that a larger ARC would serve more";
        let mut s = Section::new(Rating::Ok, "ARC size fits the workload", summary)
            .subject("arc")
            .figure(
                "size_pct_of_max",
                "size, % of c_max",
                if max > 0.0 {
                    size / max * 100.0
                } else {
                    f64::NAN
                },
                "%",
            );
        if let Some(m) = meta {
            s = s.figure("metadata_share_pct", "metadata share", m * 100.0, "%");
        }
        if let Some(r) = rates {
            if let Some(h) = r.hit_ratio {
                s = s.figure("hit_pct", "hit ratio", h * 100.0, "%");
            }
            if let Some(g) = r.ghost_hits_per_s {
                s = s.figure("ghost_hits_per_s", "ghost hits", g, "/s");
            }
        }
        vec![s]
    }
}

impl ArcSizing {
    /// The check without a host: validates the config the way [`Check::build`] does.
    pub fn with_config(config: Config) -> Result<ArcSizing, String> {
        config.check_rules().map_err(|e| e.to_string())?;
        let pinned = Threshold::above(config.pinned_pct, config.pinned_clear_pct)
            .map_err(|e| format!("pinned_pct: {e}"))?;
        let ghost_share = Threshold::above(config.ghost_share_pct, config.ghost_share_clear_pct)
            .map_err(|e| format!("ghost_share_pct: {e}"))?;
        let ghost_rate = Threshold::above(
            config.min_ghost_hits_per_s,
            config.min_ghost_hits_per_s / 2.0,
        )
        .map_err(|e| format!("min_ghost_hits_per_s: {e}"))?;
        for (key, value) in [
            ("keep_free_pct", config.keep_free_pct),
            ("keep_free_min_mib", config.keep_free_min_mib),
            ("max_growth_pct", config.max_growth_pct),
            ("min_step_mib", config.min_step_mib),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(format!("{key} must be a number ≥ 0, not {value}"));
            }
        }
        if config.keep_free_pct >= 100.0 {
            return Err("keep_free_pct must be below 100".into());
        }
        let findings = Findings::new(
            Self::NAME,
            Rules {
                raise_after: config.raise_after,
                min_hold: config.min_hold,
                material_change: 0.25,
            },
        );
        let window = config.new_window();
        Ok(ArcSizing {
            config,
            pinned,
            ghost_share,
            ghost_rate,
            findings,
            window,
        })
    }

    /// Takes one sample into the window and returns the events it causes.
    pub fn step(&mut self, sample: &Sample) -> Vec<Event> {
        if let Some(obs) = ArcObs::from_sample(sample) {
            self.window.push(obs);
        }
        self.window.prune(sample.end);
        let mut events = Vec::new();
        if let Some((verdict, stats, plan)) = self.assess() {
            // The report only when the finding reads it: not while the ARC is not starved
            // and no finding is raised, the usual case, sample after sample.
            let report = self
                .findings
                .wants_report(SUBJECT, verdict)
                .then(|| self.report_of(sample, &stats, &plan, verdict));
            events.extend(
                self.findings
                    .observe_with(sample.end, SUBJECT, verdict, || {
                        report.expect("made whenever the finding wants it")
                    }),
            );
        }
        let min = self.config.min_samples;
        events.extend(self.findings.clear_unseen(sample.end, |subject| {
            Report::new(format!(
                "{subject}: too few recent samples to judge (fewer than {min} in the window)"
            ))
        }));
        events
    }

    /// The window as of `sample`, judged; `None` with fewer than `min_samples` samples.
    pub fn judge(&self, sample: &Sample) -> Option<Judgement> {
        let (verdict, stats, plan) = self.assess()?;
        let report = self.report_of(sample, &stats, &plan, verdict);
        Some(Judgement {
            verdict,
            stats,
            plan,
            report,
        })
    }

    /// The window's verdict with the figures and plan it rests on, without a report;
    /// `None` with fewer than `min_samples` samples.
    fn assess(&self) -> Option<(Verdict, WindowStats, Plan)> {
        if self.window.len() < self.config.min_samples.max(1) {
            return None;
        }
        let stats = WindowStats::over(&self.window)?;
        let plan = self.plan(&stats);
        let conditions = [
            self.pinned.verdict(settle(stats.pinned * 100.0)),
            self.ghost_share.verdict(settle(stats.ghost_share * 100.0)),
            self.ghost_rate.verdict(settle(stats.ghost_hits_per_s)),
        ];
        let verdict = if conditions.contains(&Verdict::Clear) {
            Verdict::Clear
        } else if conditions.iter().all(|v| matches!(v, Verdict::Holds(_))) {
            // Only advice the host can follow is a warning; starving without RAM to give is
            // worth knowing, not worth waking anyone.
            Verdict::Holds(if plan.raise > 0.0 {
                Severity::Warning
            } else {
                Severity::Info
            })
        } else {
            Verdict::Borderline
        };
        Some((verdict, stats, plan))
    }

    /// The report of `verdict` over the window, with the host facts `sample` gives.
    fn report_of(
        &self,
        sample: &Sample,
        stats: &WindowStats,
        plan: &Plan,
        verdict: Verdict,
    ) -> Report {
        let os = sample.snapshot.host.os;
        let tunable = sample.snapshot.tunables.zfs_arc_max();
        let cache = cache_devices(&sample.snapshot);
        self.report(stats, plan, verdict, os, tunable, &cache)
    }

    /// How much to raise `zfs_arc_max`, and the expected effect.
    pub fn plan(&self, s: &WindowStats) -> Plan {
        let c = &self.config;
        let keep_free =
            (s.total.unwrap_or(0.0) * c.keep_free_pct / 100.0).max(c.keep_free_min_mib * MIB);
        let headroom = s.available_min.map(|a| (a - keep_free).max(0.0));
        let min_step = c.min_step_mib * MIB;
        // The growth limit never goes below the smallest step worth advising: a small ARC
        // capped by its admin (96 MiB with gigabytes free) would otherwise round to no raise
        // at all, and be told there is no memory.
        let cap = headroom
            .unwrap_or(0.0)
            .min((s.c_max * c.max_growth_pct / 100.0).max(min_step));
        // Round to what a person would type: whole GiB for big steps, 128 MiB below 4 GiB.
        let unit = if cap >= 4.0 * GIB { GIB } else { 128.0 * MIB };
        let cap = (cap / unit).floor() * unit;
        let raise = if cap >= min_step && cap > 0.0 {
            // No more than the ghost lists stand for: beyond it there is no evidence.
            match s.ghost_size.filter(|&g| g > 0.0) {
                Some(g) => ((g / unit).ceil() * unit).clamp(min_step, cap),
                None => cap,
            }
        } else {
            0.0
        };
        let converted = match s.ghost_size.filter(|&g| g > 0.0) {
            Some(g) => (raise / g).min(1.0),
            None if raise > 0.0 => 1.0,
            None => 0.0,
        };
        Plan {
            keep_free,
            headroom,
            raise,
            new_max: s.c_max + raise,
            converted,
            converted_per_s: s.ghost_hits_per_s * converted,
            projected_hit_ratio: (s.reads > 0.0)
                .then(|| (s.hits + s.ghost_hits * converted) / s.reads),
        }
    }

    fn report(
        &self,
        s: &WindowStats,
        plan: &Plan,
        verdict: Verdict,
        os: Os,
        tunable: Option<u64>,
        cache: &[String],
    ) -> Report {
        let hit = s
            .hit_ratio
            .map(|h| format!("{:.1}%", h * 100.0))
            .unwrap_or_else(|| "no".into());
        let trend = match s.hit_ratio_trend {
            Some(t) if t.abs() < 0.05 => ", steady".to_string(),
            Some(t) if t < 0.0 => format!(", falling {:.1} pp/h", -t),
            Some(t) => format!(", rising {t:.1} pp/h"),
            None => String::new(),
        };
        let meta = s
            .metadata_share
            .map(|m| format!("; metadata is {:.0}% of the ARC", m * 100.0))
            .unwrap_or_default();
        let ghosts = format!(
            "{:.1} ghost hits/s ({:.1}% of reads)",
            s.ghost_hits_per_s,
            s.ghost_share * 100.0
        );
        let free = s
            .available_min
            .map(|a| format!("{} available", bytes(a)))
            .unwrap_or_else(|| "free memory unknown".into());
        let summary = match verdict {
            Verdict::Clear => format!(
                "The ARC is not starved: {:.0}% of its {} limit on average, {ghosts}, \
                 {hit} hit ratio{trend}{meta}",
                s.pinned * 100.0,
                bytes(s.c_max)
            ),
            Verdict::Holds(Severity::Info) => format!(
                "ARC pinned at its {} limit (mean {}, {:.0}%) at a {hit} hit ratio{trend}, \
                 and {ghosts} say a bigger ARC would hit more, but {}{meta}",
                bytes(s.c_max),
                bytes(s.size_mean),
                s.pinned * 100.0,
                match (s.available_min, plan.headroom) {
                    (Some(a), Some(h)) if h > 0.0 => format!(
                        "with {} available only {} is to spare beyond the {} to keep free, less \
                         than the {} step worth advising",
                        bytes(a),
                        bytes(h),
                        bytes(plan.keep_free),
                        bytes(self.config.min_step_mib * MIB)
                    ),
                    (Some(a), _) => format!(
                        "with {} available there is no memory to spare beyond the {} to keep free",
                        bytes(a),
                        bytes(plan.keep_free)
                    ),
                    (None, _) => "the host's free memory is unknown".to_string(),
                }
            ),
            _ => format!(
                "ARC pinned at its {} limit (mean {}, {:.0}%) at a {hit} hit ratio{trend} \
                 while {free}: {ghosts} say a bigger ARC would hit more{meta}",
                bytes(s.c_max),
                bytes(s.size_mean),
                s.pinned * 100.0
            ),
        };
        let mut r = Report::new(summary)
            .with("size_mean_bytes", s.size_mean.round())
            .with("c_max_bytes", s.c_max.round())
            .with("pinned_pct", round2(s.pinned * 100.0))
            .with("reads_per_s", round2(s.reads_per_s))
            .with("ghost_hits_per_s", round2(s.ghost_hits_per_s))
            .with("ghost_share_pct", round2(s.ghost_share * 100.0))
            .with("keep_free_bytes", plan.keep_free.round())
            .with("raise_bytes", plan.raise.round());
        if verdict != Verdict::Clear {
            // The words of the state it is in (or holds, between the clear and raise levels),
            // for the report's title and its phases: a phase where memory could be given and
            // one where none can are not alike.
            let words = if plan.raise > 0.0 {
                "too small"
            } else {
                "too small, no memory to spare"
            };
            r = r.with("verdict", words);
        }
        let optional = [
            ("hit_ratio_pct", s.hit_ratio.map(|h| h * 100.0)),
            // Whole points per hour: a steady ARC's slope wobbles around 0, and every wobble
            // would otherwise look like a material change worth an update.
            (
                "hit_ratio_trend_pp_per_h",
                s.hit_ratio_trend.map(|t| t.round() + 0.0),
            ),
            ("metadata_share_pct", s.metadata_share.map(|m| m * 100.0)),
            ("ghost_size_bytes", s.ghost_size.map(f64::round)),
            ("available_min_bytes", s.available_min.map(f64::round)),
            ("memory_total_bytes", s.total.map(f64::round)),
            ("zfs_arc_max_tunable", tunable.map(|t| t as f64)),
            (
                "l2_hits_per_s",
                (!cache.is_empty()).then_some(s.l2_hits_per_s),
            ),
            (
                "l2_share_pct",
                (!cache.is_empty()).then_some(s.l2_share * 100.0),
            ),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                r = r.with(key, round2(v));
            }
        }
        if plan.raise > 0.0 {
            r = r
                .with("new_arc_max_bytes", plan.new_max.round())
                .with("converted_ghost_hits_per_s", round2(plan.converted_per_s));
            if let Some(p) = plan.projected_hit_ratio {
                r = r.with("projected_hit_ratio_pct", round2(p * 100.0));
            }
        }
        match verdict {
            Verdict::Clear => r,
            Verdict::Holds(Severity::Info) => r.advice(no_raise_advice(s, cache)),
            _ if plan.raise > 0.0 => r.advice(raise_advice(s, plan, os, tunable)),
            _ => r,
        }
    }
}

/// The cache devices of every pool (`seed/cache/sdf`): the L2ARC serves the one ARC of the
/// host, whichever pool's device it is.
fn cache_devices(snap: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for pool in &snap.pools {
        for top in pool.config.iter().flat_map(|c| c.class(VdevClass::Cache)) {
            out.push(top.subject_of(&pool.name, top));
        }
    }
    out
}

/// The advice when the ARC starves but no raise can be advised: what the sample says can
/// help — RAM when memory is known to be short, a look at memory when it is unknown, and an
/// L2ARC only where there is none (one that is there is said with what it serves).
fn no_raise_advice(s: &WindowStats, cache: &[String]) -> String {
    let first = match s.available_min {
        Some(_) => "There is no memory to spare for a bigger ARC: more RAM would turn these \
                    ghost hits into hits"
            .to_string(),
        None => "The host's free memory is unknown (neither MemAvailable nor the ARC's \
                 memory_available_bytes): see how much is free before raising zfs_arc_max; \
                 more RAM would turn these ghost hits into hits"
            .to_string(),
    };
    if cache.is_empty() {
        format!("{first}; until then an L2ARC on SSD can serve some of the misses")
    } else {
        format!(
            "{first}. The L2ARC already there ({}) serves {:.1} reads/s, {:.1}% of all ARC \
             reads",
            cache.join(", "),
            s.l2_hits_per_s,
            s.l2_share * 100.0
        )
    }
}

fn raise_advice(s: &WindowStats, plan: &Plan, os: Os, tunable: Option<u64>) -> String {
    let new = plan.new_max.round() as u64;
    let effect = match (s.hit_ratio, plan.projected_hit_ratio) {
        (Some(h), Some(p)) => format!(
            ": about {:.1} of the {:.1} ghost hits/s ({:.1}% of reads) would become hits, \
             hit ratio {:.1}% → ~{:.1}%",
            plan.converted_per_s,
            s.ghost_hits_per_s,
            plan.converted_per_s / s.reads_per_s * 100.0,
            h * 100.0,
            p * 100.0
        ),
        _ => String::new(),
    };
    let auto = if tunable == Some(0) {
        " (zfs_arc_max is 0 now: the automatic limit)"
    } else {
        ""
    };
    let how = match os {
        Os::Linux => format!(
            "echo {new} > /sys/module/zfs/parameters/zfs_arc_max now, and \
             `options zfs zfs_arc_max={new}` in /etc/modprobe.d/zfs.conf to keep it"
        ),
        Os::Freebsd => format!(
            "sysctl vfs.zfs.arc.max={new} now, and vfs.zfs.arc.max={new} in /etc/sysctl.conf \
             to keep it"
        ),
    };
    format!(
        "Raise the ARC limit{auto} by {} to {} ({new} bytes), which still leaves {} of the \
         {} available free{effect}. {how}",
        bytes(plan.raise),
        bytes(plan.new_max),
        bytes(s.available_min.unwrap_or(0.0) - plan.raise),
        bytes(s.available_min.unwrap_or(0.0)),
    )
}

/// `16.0 GiB`, `384 MiB`.
pub fn bytes(b: f64) -> String {
    if b.abs() >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.0} MiB", b / MIB)
    }
}

#[cfg(test)]
mod tests;
