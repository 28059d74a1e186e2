//! zpulse check **special-fill**: the special and dedup allocation classes of every pool —
//! how full they are, how fast they fill, whether they are as redundant as the pool, and
//! whether a special class added late holds only a small part of the pool's metadata.
//!
//! Three findings, each under its own `check` name so that one subject (`tank/special`) can
//! carry several:
//!
//! * `special-fill` — used %, free bytes, growth over the window (least squares, bytes/day)
//!   and the projected time until free space falls below
//!   `zfs_special_class_metadata_reserve_pct` (from then on small blocks go to the normal
//!   class) and until the class is full (then metadata spills to the normal class too).
//! * `special-fill.redundancy` — a special or dedup class that survives fewer device failures
//!   than the normal class: losing any top-level vdev loses the pool, so this is critical,
//!   always.
//! * `special-fill.late` — the special class served far fewer reads than the ARC missed
//!   metadata blocks: most metadata still lives on the normal class, because a special vdev
//!   only receives metadata written after it was added.
//!
//! Config (`[plugins.special-fill]`), every key optional; `docs/checks/special-fill.md`
//! explains each
//! (the `settings!` declaration of `Config` is the one definition of them).

use std::collections::BTreeMap;
use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{ReportWindow, Section};
use zpulse_proto::sdk::section::judge_afresh;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::stats::{Timed, Trend, Window, round_sig3};
pub use zpulse_proto::sdk::text::bytes;
use zpulse_proto::sdk::{self, Check, Event, Findings, Report, Rules, Severity, Verdict};
use zpulse_proto::snapshot::{Pool, Redundancy, Vdev, VdevClass};

/// OpenZFS's default of `zfs_special_class_metadata_reserve_pct`, used when the kernel does
/// not report the tunable.
pub const DEFAULT_RESERVE_PCT: f64 = 25.0;

const DAY: f64 = 86_400.0;

zpulse_proto::settings! {
    /// The `[plugins.special-fill]` table.
    pub struct Config {
        window(Duration::from_secs(24 * 3600), 8640, 3);
        /// warning from this used %; unset = where the metadata reserve begins (100 − `zfs_special_class_metadata_reserve_pct`, 75 by default)
        warn_used_pct: Option<f64> = None, [Rule::Pct, Rule::NotAbove("critical_used_pct")];
        /// critical from this used %
        critical_used_pct: f64 = 90.0, [Rule::Pct];
        /// clear at or below the warning level minus this
        clear_margin_pct: f64 = 5.0, [Rule::Pct];
        /// warning when the reserve or the end is projected within this many days
        warn_days: f64 = 30.0, [Rule::AtLeast(0.0)];
        /// critical when the end is projected within this many days
        critical_days: f64 = 7.0, [Rule::AtLeast(0.0), Rule::NotAbove("warn_days")];
        /// a projection is made only up to this many times the fitted span
        max_extrapolation: f64 = 20.0, [Rule::Positive];
        /// the late-added note when the special class served less than this %
        late_share_pct: f64 = 50.0, [Rule::Pct];
        /// metadata reads from disk the window needs for the estimate
        late_min_metadata_reads: u64 = 1000, [];
        /// a raised finding is not cleared sooner
        #[serde(with = "sdk::config::duration")]
        min_hold: Duration = Duration::from_secs(300), [];
        /// watch only these pools; empty = every pool with a special or dedup vdev
        pools: Vec<String> = Vec::new(), [];
    }
}

impl Config {
    /// Refuses settings that cannot work, saying why.
    pub fn validate(&self) -> Result<(), String> {
        if self.min_samples < 2 {
            return Err("min_samples: must be at least 2: a growth rate needs two points".into());
        }
        self.check_rules().map_err(|e| e.to_string())
    }
}

/// A least-squares growth rate and what it projects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    pub bytes_per_day: f64,
    pub samples: usize,
    /// Seconds between the first and the last point of the fit.
    pub span_s: f64,
    /// Days until free space falls below the reserve; `None` when already below it, not
    /// growing, or too far out to project from this window.
    pub days_to_reserve: Option<f64>,
    /// Days until the class is full; `None` when not growing or too far out.
    pub days_to_full: Option<f64>,
}

/// The fill of one class of one pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Fill {
    pub subject: String,
    pub pool: String,
    pub class: VdevClass,
    pub alloc: u64,
    pub space: u64,
    pub reserve_pct: f64,
    pub growth: Option<Growth>,
}

impl Fill {
    pub fn used_pct(&self) -> f64 {
        if self.space == 0 {
            return 0.0;
        }
        self.alloc as f64 / self.space as f64 * 100.0
    }

    pub fn free(&self) -> u64 {
        self.space.saturating_sub(self.alloc)
    }

    /// Allocation at which free space falls below the reserve.
    pub fn reserve_alloc(&self) -> f64 {
        self.space as f64 * (1.0 - self.reserve_pct / 100.0)
    }

    /// Free space is below the reserve: small blocks go to the normal class. Only the special
    /// class has the reserve (`spa_preferred_class`); the dedup class takes DDT blocks until
    /// it is full.
    pub fn below_reserve(&self) -> bool {
        self.class == VdevClass::Special && self.alloc as f64 > self.reserve_alloc()
    }
}

pub use zpulse_proto::sdk::stats::least_squares_slope;

/// The weakest top-level vdev of a class: (name, failures it survives). Holes and indirect
/// vdevs (left behind by device removal) hold no redundancy of their own and are skipped.
fn weakest(vdevs: &[&Vdev]) -> Option<(String, u32)> {
    vdevs
        .iter()
        .filter(|v| v.vdev_type != "hole" && v.vdev_type != "indirect")
        .map(|v| {
            let r = v.redundancy.unwrap_or(Redundancy::None);
            (v.name.clone(), r.tolerated_failures())
        })
        .min_by_key(|(_, n)| *n)
}

fn describe_redundancy(v: &Vdev) -> String {
    match v.redundancy.unwrap_or(Redundancy::None) {
        Redundancy::None => "a single device".to_string(),
        Redundancy::Mirror { width } => format!("a {width}-way mirror"),
        Redundancy::Parity { parity } => format!("{}{parity}", v.vdev_type),
    }
}

fn failures(n: u32) -> String {
    match n {
        0 => "no failure".to_string(),
        1 => "1 failure".to_string(),
        n => format!("{n} failures"),
    }
}

/// A duration given in days, as people say it.
fn days(d: f64) -> String {
    let s = d * DAY;
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} minutes", s / 60.0)
    } else if d < 2.0 {
        format!("{:.0} hours", s / 3600.0)
    } else {
        format!("{d:.0} days")
    }
}

/// Read evidence of one interval for the late-added estimate.
#[derive(Debug, Clone, Copy)]
struct ReadPoint {
    end: f64,
    special_reads: f64,
    metadata_misses: f64,
    l2_hits: f64,
}

impl Timed for ReadPoint {
    fn end(&self) -> f64 {
        self.end
    }
}

/// The check's logic, without the plugin plumbing: feed it samples, get events.
pub struct SpecialFill {
    config: Config,
    fill: Findings,
    redundancy: Findings,
    late: Findings,
    /// (time, alloc) per subject, oldest first.
    history: BTreeMap<String, Trend>,
    reads: BTreeMap<String, Window<ReadPoint>>,
}

impl SpecialFill {
    pub fn new(config: Config) -> Result<SpecialFill, String> {
        config.validate()?;
        let rules = Rules {
            raise_after: 1,
            min_hold: config.min_hold,
            material_change: 0.2,
        };
        Ok(SpecialFill {
            fill: Findings::new("special-fill", rules),
            redundancy: Findings::new("special-fill.redundancy", rules),
            // The estimate moves with the workload: update it only when it halves or doubles.
            late: Findings::new(
                "special-fill.late",
                Rules {
                    material_change: 0.5,
                    ..rules
                },
            ),
            config,
            history: BTreeMap::new(),
            reads: BTreeMap::new(),
        })
    }

    fn watched(&self, pool: &str) -> bool {
        self.config.pools.is_empty() || self.config.pools.iter().any(|p| p == pool)
    }

    /// The fill of `class` in `pool` now, with the growth over the window (which this call
    /// extends by one point).
    fn fill(&mut self, now: f64, pool: &Pool, class: VdevClass, reserve_pct: f64) -> Option<Fill> {
        let config = pool.config.as_ref()?;
        // A pool without the class has no fill of it.
        config.class(class).next()?;
        let (alloc, space) = config
            .class(class)
            .filter_map(|v| v.stats.as_ref())
            .fold((0u64, 0u64), |(a, s), st| (a + st.alloc, s + st.space));
        if space == 0 {
            return None;
        }
        let subject = class.subject_in(&pool.name);
        // Looked up before inserting: the subject is not copied again every sample.
        let trend = match self.history.get_mut(&subject) {
            Some(trend) => trend,
            None => self
                .history
                .entry(subject.clone())
                .or_insert(self.config.new_trend()),
        };
        trend.push((now, alloc as f64));
        let mut fill = Fill {
            subject,
            pool: pool.name.clone(),
            class,
            alloc,
            space,
            reserve_pct,
            growth: None,
        };
        let min = self.config.min_samples;
        let max_extrapolation = self.config.max_extrapolation;
        // Seconds until `target` bytes are allocated at `slope`, if growing and within what a
        // fit over `span_s` can honestly project.
        let eta = |slope: f64, span_s: f64, target: f64| -> Option<f64> {
            let left = target - alloc as f64;
            if slope <= 0.0 || left < 0.0 {
                return None;
            }
            let s = left / slope;
            (s <= max_extrapolation * span_s).then_some(s / DAY)
        };
        if trend.len() >= min
            && let Some(slope) = trend.slope()
        {
            let span_s = trend.span_s();
            let reserve_alloc = fill.reserve_alloc();
            let past = fill.below_reserve();
            // Before the reserve, small blocks drive the growth, and they stop at the reserve:
            // only the reserve is projected from it. Past the reserve only metadata lands on
            // the class, so the end is projected from the samples since the reserve was
            // crossed, once there are enough of them. The dedup class has no reserve.
            let (days_to_reserve, days_to_full) = if class != VdevClass::Special {
                (None, eta(slope, span_s, space as f64))
            } else if !past {
                (eta(slope, span_s, reserve_alloc), None)
            } else {
                // Past the reserve is rare and brief before a warning: fitted afresh.
                let since: Vec<(f64, f64)> = trend
                    .points()
                    .iter()
                    .rev()
                    .take_while(|p| p.1 > reserve_alloc)
                    .copied()
                    .collect();
                let full = (since.len() >= min)
                    .then(|| least_squares_slope(&since))
                    .flatten()
                    .and_then(|s| eta(s, since[0].0 - since[since.len() - 1].0, space as f64));
                (None, full)
            };
            fill.growth = Some(Growth {
                bytes_per_day: slope * DAY,
                samples: trend.len(),
                span_s,
                days_to_reserve,
                days_to_full,
            });
        }
        Some(fill)
    }

    fn warn_used_pct(&self, reserve_pct: f64) -> f64 {
        self.config
            .warn_used_pct
            .unwrap_or((100.0 - reserve_pct).max(0.0))
            .min(self.config.critical_used_pct)
    }

    /// The verdict on one class's fill.
    pub fn fill_verdict(&self, fill: &Fill) -> Verdict {
        let used = fill.used_pct();
        let warn_at = self.warn_used_pct(fill.reserve_pct);
        let to_reserve = fill.growth.and_then(|g| g.days_to_reserve);
        let to_full = fill.growth.and_then(|g| g.days_to_full);
        if used >= self.config.critical_used_pct
            || to_full.is_some_and(|d| d <= self.config.critical_days)
        {
            Verdict::Holds(Severity::Critical)
        } else if used >= warn_at
            || to_reserve.is_some_and(|d| d <= self.config.warn_days)
            || to_full.is_some_and(|d| d <= self.config.warn_days)
        {
            Verdict::Holds(Severity::Warning)
        } else if used <= warn_at - self.config.clear_margin_pct {
            Verdict::Clear
        } else {
            Verdict::Borderline
        }
    }

    /// Looks at one sample; returns the events to emit.
    pub fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        let now = sample.end;
        let snap = &sample.snapshot;
        let reserve_pct = snap
            .tunables
            .zfs_special_class_metadata_reserve_pct()
            .map_or(DEFAULT_RESERVE_PCT, |v| (v as f64).min(100.0));
        // The ARC is shared by every pool: its metadata misses can be laid at one pool's door
        // only when that pool is the only one with data vdevs.
        let data_pools = snap
            .pools
            .iter()
            .filter(|p| {
                p.config
                    .as_ref()
                    .is_some_and(|c| c.class(VdevClass::Normal).next().is_some())
            })
            .count();
        let mut events = Vec::new();
        for pool in &snap.pools {
            if !self.watched(&pool.name) {
                continue;
            }
            for class in [VdevClass::Special, VdevClass::Dedup] {
                let Some(fill) = self.fill(now, pool, class, reserve_pct) else {
                    continue;
                };
                let verdict = self.fill_verdict(&fill);
                let report = || fill_report(&fill, pool, verdict);
                events.extend(self.fill.observe_with(now, &fill.subject, verdict, report));
                if let Some((verdict, report)) = redundancy(pool, class, &fill.subject) {
                    events.extend(self.redundancy.observe_with(
                        now,
                        &fill.subject,
                        verdict,
                        report,
                    ));
                }
            }
            if pool
                .config
                .as_ref()
                .is_some_and(|c| c.class(VdevClass::Special).next().is_some())
            {
                let subject = VdevClass::Special.subject_in(&pool.name);
                let (verdict, late) = self.late_verdict(sample, pool, &subject, data_pools == 1);
                let report = || late_report(&subject, pool, late);
                events.extend(self.late.observe_with(now, &subject, verdict, report));
            }
        }
        let gone = |s: &str| Report::new(format!("{s} is no longer reported (pool exported?)"));
        events.extend(self.fill.clear_unseen(now, gone));
        events.extend(self.redundancy.clear_unseen(now, gone));
        events.extend(self.late.clear_unseen(now, gone));
        // Forget the history of classes that went away with their pool: a subject is live
        // while it is `pool/special` or `pool/dedup` of a pool reported (matched without
        // formatting the subjects of every pool each sample).
        let live = |subject: &String| {
            snap.pools.iter().any(|p| {
                let class = subject
                    .strip_prefix(p.name.as_str())
                    .and_then(|rest| rest.strip_prefix('/'));
                class == Some(VdevClass::Special.as_str())
                    || class == Some(VdevClass::Dedup.as_str())
            })
        };
        self.history.retain(|s, _| live(s));
        self.reads.retain(|s, _| live(s));
        events
    }
}

/// The fill finding's report, with the class's layout (`mirror-1: sdc, sdd` for each
/// top-level vdev) read from `pool`.
fn fill_report(f: &Fill, pool: &Pool, verdict: Verdict) -> Report {
    let tops: Vec<&Vdev> = pool.config.iter().flat_map(|c| c.class(f.class)).collect();
    let layout = Vdev::layout(&tops);
    let used = f.used_pct();
    let reserve = f.reserve_pct;
    let mut report = Report::new("")
        .with("used_pct", round_sig3(used))
        .with("alloc_bytes", f.alloc)
        .with("size_bytes", f.space)
        .with("free_bytes", f.free())
        .with("vdevs", layout.as_str());
    if f.class == VdevClass::Special {
        report = report
            .with("reserve_pct", reserve)
            .with("below_reserve", f.below_reserve());
    }
    let again = if verdict == Verdict::Clear {
        " again"
    } else {
        ""
    };
    let mut text = format!(
        "{} ({}) is {used:.0}% full{again}: {} of {}, {} free",
        f.subject,
        layout,
        bytes(f.alloc as f64),
        bytes(f.space as f64),
        bytes(f.free() as f64)
    );
    if verdict == Verdict::Clear {
        report.summary = text;
        return report;
    }
    if let Some(g) = f.growth {
        // The window's length is in the summary, not in `data`: while the window fills,
        // its growth would look like a material change of the finding.
        report = report.with("growth_bytes_per_day", round_sig3(g.bytes_per_day));
        if g.bytes_per_day > 0.0 {
            text += &format!(
                ", growing {}/day over the last {}",
                bytes(g.bytes_per_day),
                days(g.span_s / DAY)
            );
        } else {
            text += &format!(", not growing over the last {}", days(g.span_s / DAY));
        }
        if let Some(d) = g.days_to_reserve {
            report = report.with("days_to_reserve", round_sig3(d));
        }
        if let Some(d) = g.days_to_full {
            report = report.with("days_to_full", round_sig3(d));
        }
    }
    if f.below_reserve() {
        text += &format!(
            "; free space is below the {reserve:.0}% reserve, so small blocks now go to \
                 the normal class"
        );
    } else if let Some(d) = f.growth.and_then(|g| g.days_to_reserve) {
        text += &format!("; the {reserve:.0}% reserve is reached in ~{}", days(d));
    }
    if let Some(d) = f.growth.and_then(|g| g.days_to_full) {
        let what = if f.class == VdevClass::Dedup {
            "dedup tables spill to the special or normal class"
        } else {
            "metadata spills to the normal class and the benefit fades"
        };
        text += &format!("; full in ~{}, then {what}", days(d));
    }
    report.summary = text;
    if matches!(verdict, Verdict::Holds(_)) {
        let class = f.class.as_str();
        report = report.advice(format!(
            "Add capacity to the {class} class with a vdev as redundant as the rest \
                 (zpool add {} {class} mirror DEV1 DEV2){}; blocks already there stay until \
                 they are rewritten",
            f.pool,
            if f.class == VdevClass::Special {
                ", or lower special_small_blocks on the datasets that fill it"
            } else {
                ""
            }
        ));
    }
    report
}

impl SpecialFill {
    /// Whether the special class serves the metadata reads: special-class read I/Os against
    /// the ARC's metadata misses (minus every L2ARC hit) over the window. The verdict comes
    /// with the figures its report is made of, only if the finding reads it.
    fn late_verdict(
        &mut self,
        sample: &Sample,
        pool: &Pool,
        subject: &str,
        only_pool: bool,
    ) -> (Verdict, Late) {
        let rates = sample.pools.iter().find(|p| p.name == pool.name);
        let tops = top_level_subjects(pool, VdevClass::Special);
        let special_reads: Option<f64> = rates.map(|r| {
            r.vdevs
                .iter()
                .filter(|v| tops.contains(&v.subject))
                .map(|v| v.read_ops_per_s * v.seconds)
                .sum()
        });
        let arc = sample.arc.as_ref();
        // A top-level vdev without rates this time (new, or reopened) would count as no
        // reads: such an interval is left out rather than taken as evidence.
        let complete =
            rates.is_some_and(|r| tops.iter().all(|t| r.vdevs.iter().any(|v| &v.subject == t)));
        let point = match (special_reads, arc) {
            (Some(special_reads), Some(arc)) if only_pool && complete => {
                let d = |n: &str| arc.delta(n).unwrap_or(0) as f64;
                Some(ReadPoint {
                    end: sample.end,
                    special_reads,
                    metadata_misses: d("demand_metadata_misses") + d("prefetch_metadata_misses"),
                    l2_hits: d("l2_hits"),
                })
            }
            _ => None,
        };
        let window = match self.reads.get_mut(subject) {
            Some(window) => window,
            None => self
                .reads
                .entry(subject.to_owned())
                .or_insert(self.config.new_window()),
        };
        if let Some(p) = point {
            window.push(p);
        }
        window.prune(sample.end);
        if !only_pool {
            // Unknowable: clear rather than hold a stale estimate.
            return (Verdict::Clear, Late::Serves);
        }
        let special: f64 = window.iter().map(|p| p.special_reads).sum();
        let misses: f64 = window.iter().map(|p| p.metadata_misses).sum();
        let l2: f64 = window.iter().map(|p| p.l2_hits).sum();
        let from_disk = (misses - l2).max(0.0);
        if window.len() < self.config.min_samples
            || from_disk < self.config.late_min_metadata_reads as f64
        {
            return (Verdict::Borderline, Late::Serves);
        }
        let share = (special / from_disk).min(1.0);
        let late = Late::Share {
            special,
            from_disk,
            l2,
            share,
            span_s: window.back().map_or(0.0, |p| p.end) - window.front().map_or(0.0, |p| p.end)
                + sample.interval,
            samples: window.len(),
        };
        if share * 100.0 < self.config.late_share_pct {
            (Verdict::Holds(Severity::Info), late)
        } else {
            (Verdict::Clear, late)
        }
    }
}

/// What the late finding's report says: the figures of the share of metadata reads the
/// special class served, or only that it serves them.
#[derive(Debug, Clone, Copy)]
enum Late {
    Serves,
    Share {
        special: f64,
        from_disk: f64,
        l2: f64,
        share: f64,
        span_s: f64,
        samples: usize,
    },
}

fn late_report(subject: &str, pool: &Pool, late: Late) -> Report {
    let Late::Share {
        special,
        from_disk,
        l2,
        share,
        span_s,
        samples,
    } = late
    else {
        return Report::new(format!("{subject} serves the metadata reads"));
    };
    Report::new(format!(
        "{subject} served {special:.0} reads while {from_disk:.0} metadata blocks were \
         read from disk over the last {} ({samples} samples): at most {:.0}% of the metadata \
         comes from the special class, the rest from the normal class",
        days(span_s / DAY),
        share * 100.0
    ))
    .with("special_reads", special.round())
    .with("metadata_reads_from_disk", from_disk.round())
    .with("l2_hits", l2.round())
    .with("share_upper_bound_pct", round_sig3(share * 100.0))
    .advice(format!(
        "A special vdev only receives metadata written after it was added; what was \
         written before stays on the normal class until rewritten. A send/receive rewrite \
         (zfs send -R {pool}/ds@snap | zfs receive {pool}/ds.new, then rename) moves it. \
         The estimate is an upper bound: small blocks and scrub reads on the special \
         class count for it",
        pool = pool.name
    ))
}

/// The subjects `VdevRates` gives the top-level vdevs of `class` (`tank/special/mirror-1`):
/// matched by name, since file vdev names contain slashes themselves.
pub fn top_level_subjects(pool: &Pool, class: VdevClass) -> Vec<String> {
    pool.config.as_ref().map_or_else(Vec::new, |c| {
        c.class(class)
            .map(|v| v.subject_of(&pool.name, v))
            .collect()
    })
}

/// The redundancy finding for one class: critical when it survives fewer failures than the
/// normal class.
fn redundancy<'a>(
    pool: &Pool,
    class: VdevClass,
    subject: &'a str,
) -> Option<(Verdict, impl FnOnce() -> Report + 'a)> {
    let config = pool.config.as_ref()?;
    let normal: Vec<&Vdev> = config.class(VdevClass::Normal).collect();
    let ours: Vec<&Vdev> = config.class(class).collect();
    let (normal_name, normal_n) = weakest(&normal)?;
    let (name, n) = weakest(&ours)?;
    let holds = if class == VdevClass::Dedup {
        "the dedup class holds the pool's dedup tables"
    } else {
        "the special class holds the pool's metadata"
    };
    let vdev = ours.iter().find(|v| v.name == name)?;
    let normal_vdev = normal.iter().find(|v| v.name == normal_name)?;
    // Less redundant holds, and its report is read in any case; as redundant is clear, and
    // its text is made only if a raised finding clears.
    let held = (n < normal_n).then(|| {
        Report::new(format!(
            "{subject} ({}: {}, survives {}) is less redundant than the normal class ({}: {}, \
             survives {}): losing it loses the whole pool",
            name,
            describe_redundancy(vdev),
            failures(n),
            normal_name,
            describe_redundancy(normal_vdev),
            failures(normal_n)
        ))
        .with("vdev", name.clone())
        .with("tolerated_failures", n)
        .with("normal_vdev", normal_name)
        .with("normal_tolerated_failures", normal_n)
        .advice(if vdev.children.is_empty() {
            format!(
                "Attach a device to make it a mirror (zpool attach {} {} NEWDEV): {holds}, and \
                 a pool does not survive the loss of any of its top-level vdevs",
                pool.name, name
            )
        } else {
            format!(
                "Widen it (zpool attach {} <a device of {}> NEWDEV) until it survives as \
                 many failures as the normal class: {holds}, and a pool does not survive the \
                 loss of any of its top-level vdevs",
                pool.name, name
            )
        })
    });
    let verdict = if held.is_some() {
        Verdict::Holds(Severity::Critical)
    } else {
        Verdict::Clear
    };
    let report = move || {
        held.unwrap_or_else(|| {
            Report::new(format!(
                "{subject} ({name}) survives {} now, as the normal class does",
                failures(n)
            ))
        })
    };
    Some((verdict, report))
}

impl Check for SpecialFill {
    const NAME: &'static str = "special-fill";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// Of the optional parts of the sample: the vdev trees and rates, and the ARC (metadata).
    const READS: u64 = zpulse_proto::abi::PART_POOL_CONFIGS
        | zpulse_proto::abi::PART_POOL_RATES
        | zpulse_proto::abi::PART_ARC;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        Ok(SpecialFill::new(config)?)
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        SpecialFill::observe(self, sample)
    }

    /// `zpulse report`: the state at the window's end and every counter's growth over the
    /// whole window, judged afresh, as sections.
    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        judge_afresh::<Self>(self.config.clone(), window, |_| None)
    }

    fn started(&self) -> Option<String> {
        Some(format!(
            "watching the special and dedup classes of {}",
            if self.config.pools.is_empty() {
                "every pool".to_string()
            } else {
                self.config.pools.join(", ")
            }
        ))
    }
}

#[cfg(test)]
mod tests;
