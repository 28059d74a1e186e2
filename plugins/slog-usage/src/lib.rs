//! zpulse check **slog-usage**: what a separate intent log (SLOG) does for its pool — whether
//! sync writes use it at all, whether it keeps up, whether it is sized for what it can ever
//! hold, and what a crash would cost with the device it sits on.
//!
//! The ZIL is always there; a SLOG is only a fast, power-safe place for it. It helps
//! synchronous writes (fsync, O_SYNC, `sync=always`, NFS and iSCSI commits) and nothing else,
//! and it is only read after a crash, to replay. Four findings, each under its own `check`
//! name:
//!
//! * `slog-usage` (subject `pool/log`) — the verdict over the window: `idle` (no sync writes
//!   reach it: it brings nothing), `useful`, or `saturated` (its busiest device is busy
//!   `saturated_busy_pct` of the time, or its writes wait `saturated_wait_ms`) or `slower
//!   than the pool` (its device answers a write no faster than the pool's own data vdevs':
//!   remove it), each with a clear level below its raise level, with the
//!   sync-write load (ZIL commits/s, itx/s, bytes/s), the share of ZIL bytes that went to the
//!   SLOG rather than the main pool, and each device's busy and latency.
//! * `slog-usage.size` (subject `pool/log`) — the log against what it can ever hold, about
//!   two txgs of `zfs_dirty_data_max`: `oversized` beyond `oversize_factor` times that,
//!   `undersized` below one `zfs_dirty_data_max` or when its peak use reaches `full_pct`.
//! * `slog-usage.redundancy` (subject `pool/log/<vdev>`) — an unmirrored log vdev: a crash
//!   together with the loss of that device loses the last seconds of acknowledged sync
//!   writes. A warning while sync writes use it, information while it is idle.
//! * `slog-usage.device` (subject `pool/log/<vdev>[/<leaf>]`) — a log on a loop device or a
//!   file (no power-loss guarantee of its own, and missing at import unless set up before the
//!   pool: critical while sync writes use it, else a warning), or on a spinning disk (info).
//!
//! Config (`[plugins.slog-usage]`), every key optional; `docs/checks/slog-usage.md` explains
//! each (the `settings!` declaration of `Config` is the one definition of them).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sdk::section::sections_of_events;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::stats::{self, Timed, round_sig3};
pub use zpulse_proto::sdk::text::bytes;
use zpulse_proto::sdk::text::duration;
use zpulse_proto::sdk::{
    self, Check, Event, Findings, Report, Rules, Severity, Threshold, Verdict,
};
use zpulse_proto::snapshot::{Pool, Redundancy, Snapshot, Vdev, VdevClass};

/// OpenZFS's cap on `zfs_dirty_data_max` when the kernel does not report it: 4 GiB
/// (`zfs_dirty_data_max_max`), and 10% of memory (`zfs_dirty_data_max_percent`).
const DIRTY_MAX_MAX: u64 = 4 << 30;
const DIRTY_MAX_PERCENT: u64 = 10;

zpulse_proto::settings! {
    /// The `[plugins.slog-usage]` table.
    pub struct Config {
        window(Duration::from_secs(600), 60, 3);
        /// log-vdev writes/s below which the SLOG counts as idle (and an unmirrored one as not exposed)
        idle_writes_per_s: f64 = 0.1, [Rule::AtLeast(0.0)];
        /// time-weighted mean `%util` of the busiest log disk that means saturated
        saturated_busy_pct: f64 = 90.0, [Rule::Pct];
        /// a saturated verdict stays until that mean `%util` is at or below this
        saturated_busy_clear_pct: f64 = 80.0, [Rule::Pct, Rule::NotAbove("saturated_busy_pct")];
        /// write-weighted mean ZFS write wait (ms) of a log leaf that means saturated; an SSD SLOG answers in well under 1 ms
        saturated_wait_ms: f64 = 10.0, [Rule::AtLeast(0.0)];
        /// a saturated verdict by wait stays until the wait is at or below this (ms)
        saturated_wait_clear_ms: f64 = 8.0, [Rule::AtLeast(0.0), Rule::NotAbove("saturated_wait_ms")];
        /// the wait criterion counts only while the busiest log device is at least this busy
        saturated_wait_busy_pct: f64 = 60.0, [Rule::Pct];
        /// ... and stops counting only once it is at or below this busy
        saturated_wait_busy_clear_pct: f64 = 50.0, [Rule::Pct, Rule::NotAbove("saturated_wait_busy_pct")];
        /// the log's device write latency over the pool's own data vdevs' at which the log is slower than the pool it serves
        slower_ratio: f64 = 1.0, [Rule::Positive];
        /// a slower-than-the-pool verdict stays until that ratio is at or below this
        slower_clear_ratio: f64 = 0.8, [Rule::Positive, Rule::NotAbove("slower_ratio")];
        /// txgs of `zfs_dirty_data_max` a log can ever hold
        txgs_held: f64 = 2.0, [Rule::Positive];
        /// oversized above this × holdable
        oversize_factor: f64 = 4.0, [Rule::AtLeast(1.0)];
        /// undersized when the window's peak `alloc` reaches this % of `space`
        full_pct: f64 = 80.0, [Rule::Pct];
        /// a raised finding is not cleared sooner
        #[serde(with = "sdk::config::duration")]
        min_hold: Duration = Duration::from_secs(300), [];
        /// watch only these pools; empty = every pool with a log vdev
        pools: Vec<String> = Vec::new(), [];
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

/// ZIL activity over one interval, as counts (not rates).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Zil {
    pub commits: f64,
    pub itx: f64,
    pub itx_bytes: f64,
    pub slog_bytes: f64,
    pub normal_bytes: f64,
}

impl Zil {
    fn add(&mut self, o: &Zil) {
        self.commits += o.commits;
        self.itx += o.itx;
        self.itx_bytes += o.itx_bytes;
        self.slog_bytes += o.slog_bytes;
        self.normal_bytes += o.normal_bytes;
    }

    /// From `zil` counter deltas (the global kstat, or a 2.2+ dataset's rows: `Sample` makes
    /// both, with the one reset rule of `zpulse_proto::counter`).
    fn from_deltas(d: impl Fn(&str) -> Option<u64>) -> Zil {
        let f = |n: &str| d(n).unwrap_or(0) as f64;
        Zil {
            commits: f("zil_commit_count"),
            itx: f("zil_itx_count"),
            itx_bytes: f("zil_itx_indirect_bytes")
                + f("zil_itx_copied_bytes")
                + f("zil_itx_needcopy_bytes"),
            slog_bytes: f("zil_itx_metaslab_slog_bytes"),
            normal_bytes: f("zil_itx_metaslab_normal_bytes"),
        }
    }
}

/// Where the ZIL figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZilScope {
    /// The pool's own datasets (OpenZFS 2.2+ per-dataset ZIL counters).
    Pool,
    /// The host-wide `zil` kstat: every pool together.
    Host,
}

impl ZilScope {
    fn as_str(self) -> &'static str {
        match self {
            ZilScope::Pool => "pool",
            ZilScope::Host => "host",
        }
    }
}

/// One log leaf device over one interval.
#[derive(Debug, Clone, Default, PartialEq)]
struct DevPoint {
    /// `sde`, `loop0`: the leaf's name in the pool.
    name: String,
    /// Kernel disk, for the busy figure.
    disk: Option<String>,
    util: Option<f64>,
    w_await: Option<f64>,
    w_s: f64,
    /// ZFS's write wait for this leaf (queue + device), ns.
    total_wait_w: Option<u64>,
    /// The device's own write latency as ZFS timed it (`zpool iostat -l` `disk_wait`), ns,
    /// and the leaf's write I/Os in the interval that it averages.
    disk_wait_w: Option<u64>,
    zfs_writes: f64,
    /// The top-level log vdev it belongs to: what `zpool remove` takes.
    top: String,
}

/// One log vdev set of a pool over one interval.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    end: f64,
    interval: f64,
    /// Write I/Os and bytes the log vdevs took.
    writes: f64,
    bytes: f64,
    /// Per top-level log vdev: write I/Os in the interval.
    top_writes: BTreeMap<String, f64>,
    zil: Option<(Zil, ZilScope)>,
    devices: Vec<DevPoint>,
    /// Σ alloc of the log vdevs at the end of the interval.
    alloc: u64,
    /// The pool's own data (normal-class) top-level vdevs: Σ write I/Os that have a device
    /// latency, and Σ (latency ms × those writes). Without a SLOG the ZIL is written there.
    data_writes: f64,
    data_wait_ms_writes: f64,
}

impl Timed for Point {
    fn end(&self) -> f64 {
        self.end
    }
}

/// The verdict on a pool's SLOG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    Idle,
    Useful,
    Saturated,
    /// The log answers writes no faster than the pool's own data vdevs: every sync write
    /// waits longer than it would without it.
    Slower,
}

impl Usage {
    pub fn as_str(self) -> &'static str {
        match self {
            Usage::Idle => "idle",
            Usage::Useful => "useful",
            Usage::Saturated => "saturated",
            Usage::Slower => "slower than the pool",
        }
    }
}

/// A device's figures over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceSummary {
    pub name: String,
    pub util_mean: Option<f64>,
    pub util_peak: Option<f64>,
    /// Mean write time per request (iostat `w_await`), weighted by writes, ms.
    pub w_await_ms: Option<f64>,
    /// ZFS's mean write wait (queue + device), weighted by writes, ms.
    pub wait_ms: Option<f64>,
    /// The device's mean write latency as ZFS timed it (`disk_wait`), weighted by the leaf's
    /// writes, ms.
    pub disk_wait_ms: Option<f64>,
    /// The top-level log vdev it belongs to.
    pub top: String,
}

/// The window's figures for one pool's log class.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub samples: usize,
    pub seconds: f64,
    pub writes_per_s: f64,
    pub bytes_per_s: f64,
    pub zil: Option<(Zil, ZilScope)>,
    pub devices: Vec<DeviceSummary>,
    pub peak_alloc: u64,
    /// The pool's own data vdevs' mean device write latency, weighted by their writes, ms.
    pub data_disk_wait_ms: Option<f64>,
}

impl Window {
    /// The busiest log device and its mean utilisation, %.
    fn busiest(&self) -> Option<(&DeviceSummary, f64)> {
        self.devices
            .iter()
            .filter_map(|d| d.util_mean.map(|u| (d, u)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The log's device against the pool's own data vdevs, both as ZFS timed the device
    /// (`disk_wait`): ((the slowest log leaf, its ms), the data vdevs' ms). Without a SLOG
    /// the ZIL blocks are written to those vdevs, so a log answering no faster makes every
    /// sync write wait longer, not shorter. The slowest log leaf counts (a sync write waits
    /// for every leg of a log mirror).
    fn versus(&self) -> Option<((&DeviceSummary, f64), f64)> {
        let log_slowest = self
            .devices
            .iter()
            .filter_map(|d| d.disk_wait_ms.map(|ms| (d, ms)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        log_slowest.zip(self.data_disk_wait_ms.filter(|&ms| ms > 0.0))
    }

    pub fn slog_share(&self) -> Option<f64> {
        let (z, _) = self.zil?;
        let total = z.slog_bytes + z.normal_bytes;
        (total > 0.0).then(|| z.slog_bytes / total)
    }
}

/// What the kernel holds back as dirty data at most: the tunable, or OpenZFS's default
/// (10% of memory, at most 4 GiB). The second value says which.
pub fn dirty_data_max(snap: &Snapshot) -> Option<(u64, &'static str)> {
    if let Some(v) = snap.tunables.zfs_dirty_data_max().filter(|&v| v > 0) {
        return Some((v, "zfs_dirty_data_max"));
    }
    let total = snap.memory?.total;
    let pct = snap
        .tunables
        .number("zfs_dirty_data_max_percent")
        .unwrap_or(DIRTY_MAX_PERCENT);
    let cap = snap
        .tunables
        .number("zfs_dirty_data_max_max")
        .unwrap_or(DIRTY_MAX_MAX);
    Some((
        (total / 100 * pct).min(cap),
        "default (10% of memory, at most 4 GiB)",
    ))
}

/// Why a log leaf offers no power-loss guarantee of its own, if it does not.
pub fn not_power_safe(leaf: &Vdev) -> Option<String> {
    leaf.virtual_backing()
}

/// The check's logic, without the plugin plumbing: feed it samples, get events.
pub struct SlogUsage {
    config: Config,
    verdict: Findings,
    size: Findings,
    redundancy: Findings,
    device: Findings,
    windows: BTreeMap<String, stats::Window<Point>>,
    /// Raise and clear levels of the verdict's criteria, so that figures hovering at a
    /// level do not flip the verdict at every sample.
    levels: Levels,
}

#[derive(Debug, Clone, Copy)]
struct Levels {
    busy: Threshold,
    wait: Threshold,
    wait_busy: Threshold,
    slower: Threshold,
}

/// Both criteria hold: holds when both hold, clear when either is clear.
fn both(a: Verdict, b: Verdict) -> Verdict {
    match (a, b) {
        (Verdict::Holds(s), Verdict::Holds(_)) => Verdict::Holds(s),
        (Verdict::Clear, _) | (_, Verdict::Clear) => Verdict::Clear,
        _ => Verdict::Borderline,
    }
}

/// Either criterion holds: holds when one holds, clear when both are clear.
fn either(a: Verdict, b: Verdict) -> Verdict {
    match (a, b) {
        (Verdict::Holds(s), _) | (_, Verdict::Holds(s)) => Verdict::Holds(s),
        (Verdict::Clear, Verdict::Clear) => Verdict::Clear,
        _ => Verdict::Borderline,
    }
}

impl SlogUsage {
    pub fn new(config: Config) -> Result<SlogUsage, String> {
        config.validate()?;
        let levels = Levels {
            busy: Threshold::above(config.saturated_busy_pct, config.saturated_busy_clear_pct)?,
            wait: Threshold::above(config.saturated_wait_ms, config.saturated_wait_clear_ms)?,
            wait_busy: Threshold::above(
                config.saturated_wait_busy_pct,
                config.saturated_wait_busy_clear_pct,
            )?,
            slower: Threshold::above(config.slower_ratio, config.slower_clear_ratio)?,
        };
        let rules = Rules {
            raise_after: 1,
            min_hold: config.min_hold,
            material_change: 0.2,
        };
        Ok(SlogUsage {
            // Sync-write rates swing with the workload: the verdict is updated when a figure
            // halves or doubles, or the verdict changes.
            verdict: Findings::new(
                "slog-usage",
                Rules {
                    material_change: 0.5,
                    ..rules
                },
            ),
            // The peak use in the window moves with every burst: update the sizing only
            // when a figure doubles or halves.
            size: Findings::new(
                "slog-usage.size",
                Rules {
                    material_change: 1.0,
                    ..rules
                },
            ),
            redundancy: Findings::new(
                "slog-usage.redundancy",
                Rules {
                    material_change: 1.0,
                    ..rules
                },
            ),
            device: Findings::new(
                "slog-usage.device",
                Rules {
                    material_change: 1.0,
                    ..rules
                },
            ),
            config,
            windows: BTreeMap::new(),
            levels,
        })
    }

    fn watched(&self, pool: &str) -> bool {
        self.config.pools.is_empty() || self.config.pools.iter().any(|p| p == pool)
    }

    /// The pool's own ZIL counts from its datasets' 2.2+ counters: `None` when the kernel
    /// has no such counters, `Some(None)` when no dataset has deltas this interval (all new,
    /// or re-created).
    fn pool_zil(sample: &Sample, pool: &Pool) -> Option<Option<Zil>> {
        let supported = pool
            .datasets
            .iter()
            .any(|ds| ds.counters.u64("zil_commit_count").is_some());
        if !supported {
            return None;
        }
        let rates = sample.pools.iter().find(|p| p.name == pool.name);
        let mut total: Option<Zil> = None;
        for ds in rates.iter().flat_map(|r| &r.datasets) {
            if !ds.zil.is_empty() {
                total
                    .get_or_insert_with(Zil::default)
                    .add(&Zil::from_deltas(|n| ds.zil_delta(n)));
            }
        }
        Some(total)
    }

    /// Looks at one sample; returns the events to emit.
    pub fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        let now = sample.end;
        let snap = &sample.snapshot;
        let host_zil = sample
            .zil
            .as_ref()
            .map(|z| Zil::from_deltas(|n| z.delta(n)));
        let dirty = dirty_data_max(snap);
        let mut events = Vec::new();
        let mut live = Vec::new();
        for pool in &snap.pools {
            if !self.watched(&pool.name) {
                continue;
            }
            let Some(config) = pool.config.as_ref() else {
                continue;
            };
            let tops: Vec<&Vdev> = config.class(VdevClass::Log).collect();
            if tops.is_empty() {
                continue;
            }
            let subject = VdevClass::Log.subject_in(&pool.name);
            live.push(subject.clone());
            let zil = match (Self::pool_zil(sample, pool), host_zil) {
                (Some(z), _) => z.map(|z| (z, ZilScope::Pool)),
                (None, Some(z)) => Some((z, ZilScope::Host)),
                (None, None) => None,
            };
            if let Some(point) = point(sample, pool, &tops, zil) {
                let (span, max) = (self.config.window.as_secs_f64(), self.config.window_samples);
                self.windows
                    .entry(subject.clone())
                    .or_insert_with(|| stats::Window::new(span, max))
                    .push(point);
            }
            let window = self.windows.get(&subject);
            let layout = Vdev::layout(&tops);
            let space: u64 = tops
                .iter()
                .filter_map(|v| v.stats.as_ref())
                .map(|s| s.space)
                .sum();

            // The window summed up once: the verdict reads it once it holds enough samples,
            // the size whatever there is.
            let seen = window.filter(|w| !w.is_empty()).map(summarize);
            let summary = seen
                .as_ref()
                .filter(|w| w.samples >= self.config.min_samples);
            if let Some(win) = summary {
                let (verdict, usage, figures) = self.verdict_figures(&subject, &layout, win);
                events.extend(self.verdict.observe_worded(
                    now,
                    &subject,
                    verdict,
                    || figures,
                    |report| verdict_words(&subject, &layout, win, pool, usage, report),
                ));
            }

            // Size against what it can hold; the peak use over whatever window there is.
            if let Some((dirty, basis)) = dirty {
                let facts = self.size_facts(&layout, space, dirty, basis, seen.as_ref());
                events.extend(self.size.observe_worded(
                    now,
                    &subject,
                    facts.verdict(),
                    || facts.figures(),
                    |report| facts.words(&subject, report),
                ));
            }

            // Redundancy and the devices, per top-level vdev; exposure from whatever part of
            // the window there is.
            for top in &tops {
                let top_subject = top.subject_of(&pool.name, top);
                let writes_per_s = window.map(|w| {
                    let secs: f64 = w.iter().map(|p| p.interval).sum();
                    let n: f64 = w.iter().filter_map(|p| p.top_writes.get(&top.name)).sum();
                    if secs > 0.0 { n / secs } else { 0.0 }
                });
                let busy = writes_per_s.is_some_and(|w| w >= self.config.idle_writes_per_s);
                let redundancy = RedundancyFacts {
                    pool: &pool.name,
                    top,
                    writes_per_s,
                    busy,
                };
                events.extend(self.redundancy.observe_worded(
                    now,
                    &top_subject,
                    redundancy.verdict(),
                    || redundancy.figures(),
                    |report| redundancy.words(&top_subject, report),
                ));
                for leaf in top.leaves() {
                    let Some(device) = log_device(snap, leaf) else {
                        continue;
                    };
                    let leaf_subject = top.subject_of(&pool.name, leaf);
                    events.extend(self.device.observe_worded(
                        now,
                        &leaf_subject,
                        device.verdict(busy),
                        || device.figures(writes_per_s),
                        |report| {
                            device.words(
                                &pool.name,
                                &leaf_subject,
                                leaf,
                                busy,
                                writes_per_s,
                                report,
                            )
                        },
                    ));
                }
            }
        }
        let gone = |s: &str| Report::new(format!("{s} is no longer reported"));
        for f in [
            &mut self.verdict,
            &mut self.size,
            &mut self.redundancy,
            &mut self.device,
        ] {
            events.extend(f.clear_unseen(now, gone));
        }
        self.windows.retain(|s, _| live.contains(s));
        events
    }

    /// `zpulse report`: every finding the check would raise over the whole window judged as
    /// one interval (verdict, size, redundancy, devices), whatever its own window.
    pub fn conclude(&self, window: &ReportWindow) -> Vec<Section> {
        let whole = &window.whole;
        let config = Config {
            window: window.judging_span(),
            window_samples: usize::MAX,
            min_samples: 1,
            ..self.config.clone()
        };
        let Ok(mut judge) = SlogUsage::new(config) else {
            return Vec::new();
        };
        let events = judge.observe(whole);
        sections_of_events(&events, |e| {
            (e.data.get("verdict").and_then(|v| v.as_str()) == Some(Usage::Useful.as_str()))
                .then_some(Rating::Ok)
        })
    }

    /// The verdict on what the log is worth and its figures; [`verdict_words`] writes its
    /// words. The finding is held all the time (`info` while the log is idle or useful), so
    /// its figures are compared every sample and its words made only for an event.
    fn verdict_figures(&self, subject: &str, layout: &str, w: &Window) -> (Verdict, Usage, Report) {
        let busiest = w.busiest();
        let slowest = w
            .devices
            .iter()
            .filter_map(|d| d.wait_ms.map(|u| (d, u)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let versus = w.versus();
        let unknown = f64::NAN;
        let levels = &self.levels;
        let slower = levels
            .slower
            .verdict(versus.map_or(unknown, |((_, log), data)| log / data));
        let busy = busiest.map_or(unknown, |(_, u)| u);
        // Slow writes alone are a slow device, not a saturated one: writes only queue behind
        // a log that is also busy much of the time (the seed's SLOG at 42% busy was judged
        // not saturated).
        let saturated = either(
            levels.busy.verdict(busy),
            both(
                levels.wait.verdict(slowest.map_or(unknown, |(_, ms)| ms)),
                levels.wait_busy.verdict(busy),
            ),
        );
        // Between the clear and raise levels a verdict stays what it was: the last one sent.
        let was = self
            .verdict
            .raised_data(subject)
            .and_then(|d| d.get("verdict"))
            .and_then(|v| v.as_str());
        let stays = |v: Verdict, usage: Usage| {
            matches!(v, Verdict::Holds(_))
                || (v == Verdict::Borderline && was == Some(usage.as_str()))
        };
        let usage = if w.writes_per_s < self.config.idle_writes_per_s {
            Usage::Idle
        } else if stays(slower, Usage::Slower) {
            Usage::Slower
        } else if stays(saturated, Usage::Saturated) {
            Usage::Saturated
        } else {
            Usage::Useful
        };
        let mut report = Report::default()
            .with("verdict", usage.as_str())
            .with("log_writes_per_s", round_sig3(w.writes_per_s))
            .with("log_bytes_per_s", round_sig3(w.bytes_per_s))
            .with("peak_alloc_bytes", w.peak_alloc)
            .with("vdevs", layout);
        if let Some((z, scope)) = w.zil {
            let secs = w.seconds.max(f64::MIN_POSITIVE);
            report = report
                .with("zil_scope", scope.as_str())
                .with("zil_commits_per_s", round_sig3(z.commits / secs))
                .with("zil_itx_per_s", round_sig3(z.itx / secs))
                .with("zil_itx_bytes_per_s", round_sig3(z.itx_bytes / secs))
                .with("zil_slog_bytes_per_s", round_sig3(z.slog_bytes / secs))
                .with("zil_normal_bytes_per_s", round_sig3(z.normal_bytes / secs));
            if let Some(s) = w.slog_share() {
                report = report.with("slog_share_pct", round_sig3(s * 100.0));
            }
        }
        let names: Vec<String> = w.devices.iter().map(|d| d.name.clone()).collect();
        report = report.with("devices", names);
        // The figures of the busiest device (the members of a log mirror move together).
        if let Some((d, mean)) = busiest {
            report = report
                .with("busiest_device", d.name.clone())
                .with("busiest_util_pct", round_sig3(mean));
            if let Some(peak) = d.util_peak {
                report = report.with("busiest_util_peak_pct", round_sig3(peak));
            }
            if let Some(ms) = d.w_await_ms {
                report = report.with("busiest_w_await_ms", round_sig3(ms));
            }
        }
        if let Some((d, ms)) = slowest {
            report = report
                .with("slowest_device", d.name.clone())
                .with("slowest_zfs_write_wait_ms", round_sig3(ms));
        }
        if let Some(((_, log), data)) = versus {
            report = report
                .with("log_device_write_ms", round_sig3(log))
                .with("data_device_write_ms", round_sig3(data))
                .with("log_to_data_write_ratio", round_sig3(log / data));
        }
        let severity = match usage {
            Usage::Saturated | Usage::Slower => Severity::Warning,
            Usage::Idle | Usage::Useful => Severity::Info,
        };
        (Verdict::Holds(severity), usage, report)
    }

    /// The log's size against what it can hold (`dirty`, the dirty-data limit named by
    /// `basis`), with the peak use over whatever window there is.
    fn size_facts<'a>(
        &self,
        layout: &'a str,
        space: u64,
        dirty: u64,
        basis: &'a str,
        w: Option<&Window>,
    ) -> SizeFacts<'a> {
        let holdable = self.config.txgs_held * dirty as f64;
        let peak = w.map(|w| w.peak_alloc);
        // Nearly full is a judgement over the window: only with enough samples.
        let judged = w.is_some_and(|w| w.samples >= self.config.min_samples);
        let nearly_full =
            judged && peak.is_some_and(|p| p as f64 >= space as f64 * self.config.full_pct / 100.0);
        let sizing = if space < dirty || nearly_full {
            Sizing::Undersized { nearly_full }
        } else if space as f64 > self.config.oversize_factor * holdable {
            Sizing::Oversized
        } else {
            Sizing::Fits
        };
        SizeFacts {
            layout,
            space,
            dirty,
            basis,
            txgs_held: self.config.txgs_held,
            holdable,
            peak,
            seconds: w.map(|w| w.seconds),
            sizing,
        }
    }
}

/// How a log's size compares with what it can ever hold.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sizing {
    /// Smaller than one txg's dirty data, or nearly full at its peak.
    Undersized {
        nearly_full: bool,
    },
    /// Far beyond what it can hold: the rest is never used.
    Oversized,
    Fits,
}

/// What the size finding of one log is judged from.
struct SizeFacts<'a> {
    layout: &'a str,
    space: u64,
    dirty: u64,
    basis: &'a str,
    txgs_held: f64,
    holdable: f64,
    peak: Option<u64>,
    /// The window the peak is over.
    seconds: Option<f64>,
    sizing: Sizing,
}

impl SizeFacts<'_> {
    fn verdict(&self) -> Verdict {
        match self.sizing {
            Sizing::Undersized { .. } => Verdict::Holds(Severity::Warning),
            Sizing::Oversized => Verdict::Holds(Severity::Info),
            Sizing::Fits => Verdict::Clear,
        }
    }

    fn figures(&self) -> Report {
        let mut report = Report::default()
            .with("size_bytes", self.space)
            .with("dirty_data_max_bytes", self.dirty)
            .with("dirty_data_max_basis", self.basis)
            .with("holdable_bytes", round_sig3(self.holdable))
            .with(
                "size_to_holdable",
                round_sig3(self.space as f64 / self.holdable),
            );
        if let Some(p) = self.peak {
            report = report.with("peak_alloc_bytes", p).with(
                "peak_alloc_pct",
                round_sig3(p as f64 / self.space as f64 * 100.0),
            );
        }
        let sizing = match self.sizing {
            Sizing::Undersized { .. } => "undersized",
            Sizing::Oversized => "oversized",
            Sizing::Fits => "fits",
        };
        report.with("sizing", sizing)
    }

    /// The summary and advice, written into `report`: only for an event that goes out.
    fn words(&self, subject: &str, report: &mut Report) {
        let (layout, space, basis) = (self.layout, self.space, self.basis);
        let peak_text = match (self.peak, self.seconds) {
            (Some(p), Some(seconds)) => format!(
                "; its peak use over the last {} was {}",
                duration(seconds),
                bytes(p as f64)
            ),
            _ => String::new(),
        };
        let can_hold = format!(
            "about {} ({} txgs of {} {})",
            bytes(self.holdable),
            self.txgs_held,
            basis_name(basis),
            bytes(self.dirty as f64)
        );
        match self.sizing {
            Sizing::Undersized { nearly_full } => {
                report.summary = format!(
                    "{subject} ({layout}) is {}, {}: it can hold {can_hold}{peak_text}: \
                     undersized, a burst of sync writes spills the ZIL to the main pool",
                    bytes(space as f64),
                    if nearly_full {
                        format!(
                            "and was {:.0}% full",
                            self.peak.unwrap_or(0) as f64 / space as f64 * 100.0
                        )
                    } else {
                        format!("less than one {}", basis_name(basis))
                    }
                );
                report.advice = Some(format!(
                    "Give the log at least {} (zpool add POOL log mirror DEV1 DEV2 with larger \
                     devices, then remove the old one)",
                    bytes(self.holdable)
                ));
            }
            Sizing::Oversized => {
                report.summary = format!(
                    "{subject} ({layout}) is {} but can ever hold {can_hold}{peak_text}: \
                     oversized, {} of it is never used",
                    bytes(space as f64),
                    bytes(space as f64 - self.holdable)
                );
                report.advice = Some(format!(
                    "A log of about {} is enough (more brings nothing); on a new layout, the \
                     rest of the device can serve as a partition of a mirrored special vdev",
                    bytes(self.holdable * 2.0)
                ));
            }
            Sizing::Fits => {
                report.summary = format!(
                    "{subject} ({layout}) is {}, fitting what it can hold: {can_hold}",
                    bytes(space as f64)
                );
            }
        }
    }
}

/// Whether a top-level log vdev survives the loss of a device, and the load it carries.
struct RedundancyFacts<'a> {
    pool: &'a str,
    top: &'a Vdev,
    writes_per_s: Option<f64>,
    busy: bool,
}

impl RedundancyFacts<'_> {
    fn redundant(&self) -> bool {
        self.top
            .redundancy
            .unwrap_or(Redundancy::None)
            .tolerated_failures()
            > 0
    }

    fn verdict(&self) -> Verdict {
        if self.redundant() {
            Verdict::Clear
        } else if self.busy {
            Verdict::Holds(Severity::Warning)
        } else {
            Verdict::Holds(Severity::Info)
        }
    }

    fn figures(&self) -> Report {
        if self.redundant() {
            return Report::default();
        }
        let report = Report::default().with("tolerated_failures", 0u32);
        match self.writes_per_s {
            Some(w) => report.with("writes_per_s", round_sig3(w)),
            None => report,
        }
    }

    fn words(&self, subject: &str, report: &mut Report) {
        if self.redundant() {
            report.summary = format!("{subject} is redundant now");
            return;
        }
        let load = match self.writes_per_s {
            Some(w) if self.busy => format!("carries {w:.0} sync writes/s"),
            Some(w) => format!("is idle ({w:.2} writes/s)"),
            None => "has no rates yet".to_string(),
        };
        report.summary = format!(
            "{subject} is a single unmirrored device and {load}: if the system crashes and \
             the device is lost with it, the sync writes of the last seconds (up to about two \
             txgs) are gone although fsync had returned"
        );
        report.advice = Some(format!(
            "Attach a second device (zpool attach {} {} NEWDEV). Losing the log alone \
             while the system runs costs nothing: ZFS still holds the data and falls back to \
             the main pool; only a crash together with the device's loss does",
            self.pool, self.top.name
        ));
    }
}

fn basis_name(basis: &str) -> &str {
    if basis == "zfs_dirty_data_max" {
        "zfs_dirty_data_max"
    } else {
        "dirty_data_max"
    }
}

/// What a log leaf is, for its device finding: a loop device or file, a spinning disk, or a
/// solid-state device; `None` when its disk is not known.
fn log_device<'a>(snap: &'a Snapshot, leaf: &Vdev) -> Option<LogDevice<'a>> {
    if let Some(what) = not_power_safe(leaf) {
        return Some(LogDevice::NotPowerSafe(what));
    }
    let disk = leaf.disk.as_deref().and_then(|d| snap.disk(d))?;
    Some(if disk.rotational == Some(true) {
        LogDevice::Spinning(&disk.name)
    } else {
        LogDevice::SolidState
    })
}

/// The kind of device a log leaf is on.
enum LogDevice<'a> {
    /// Not power-safe: what it is (a loop device, a file).
    NotPowerSafe(String),
    /// A spinning disk, by name.
    Spinning(&'a str),
    SolidState,
}

impl LogDevice<'_> {
    fn verdict(&self, busy: bool) -> Verdict {
        match self {
            LogDevice::NotPowerSafe(_) if busy => Verdict::Holds(Severity::Critical),
            LogDevice::NotPowerSafe(_) => Verdict::Holds(Severity::Warning),
            LogDevice::Spinning(_) => Verdict::Holds(Severity::Info),
            LogDevice::SolidState => Verdict::Clear,
        }
    }

    fn figures(&self, writes_per_s: Option<f64>) -> Report {
        match self {
            LogDevice::NotPowerSafe(what) => Report::default()
                .with("device", what.as_str())
                .with("writes_per_s", round_sig3(writes_per_s.unwrap_or(0.0))),
            LogDevice::Spinning(disk) => Report::default()
                .with("disk", *disk)
                .with("rotational", true),
            LogDevice::SolidState => Report::default(),
        }
    }

    /// The summary and advice of the finding about `leaf` (`subject`) of `pool`.
    fn words(
        &self,
        pool: &str,
        subject: &str,
        leaf: &Vdev,
        busy: bool,
        writes_per_s: Option<f64>,
        report: &mut Report,
    ) {
        match self {
            LogDevice::NotPowerSafe(what) => {
                let load = match writes_per_s {
                    Some(w) if busy => format!("taking {w:.0} sync writes/s"),
                    _ => "idle now".to_string(),
                };
                report.summary = format!(
                    "{subject} is {what}, {load}: a log there has no power-loss guarantee of \
                     its own (an acknowledged sync write is only as safe as the backing \
                     store's flush), and after a reboot the pool imports without it unless it \
                     is set up first, exactly when its records are needed"
                );
                report.advice = Some(format!(
                    "Put the log on a partition or whole SSD with power-loss protection (zpool \
                     remove {pool} {}, then zpool add {pool} log mirror DEV1 DEV2), or drop \
                     it: the ZIL in the main pool is safe",
                    leaf.name
                ));
            }
            LogDevice::Spinning(disk) => {
                report.summary = format!(
                    "{subject} is a spinning disk ({disk}): a log there is hardly faster than \
                     the ZIL in the main pool"
                );
                report.advice =
                    Some("A SLOG pays off on a low-latency SSD with power-loss protection".into());
            }
            LogDevice::SolidState => {
                report.summary = format!("{subject} is a solid-state device");
            }
        }
    }
}

/// One interval of a pool's log vdevs, or `None` when a log vdev has no rates this time
/// (new, or reopened): such an interval is left out rather than read as "no writes".
fn point(
    sample: &Sample,
    pool: &Pool,
    tops: &[&Vdev],
    zil: Option<(Zil, ZilScope)>,
) -> Option<Point> {
    let rates = sample.pools.iter().find(|p| p.name == pool.name)?;
    // Each vdev's rates by subject, the first of each kept (what a `find` returns): a `find`
    // per top-level vdev made an interval quadratic in the pool's vdevs.
    let mut by_subject = HashMap::with_capacity(rates.vdevs.len());
    for v in &rates.vdevs {
        by_subject.entry(v.subject.as_str()).or_insert(v);
    }
    let mut top_writes = BTreeMap::new();
    let (mut writes, mut bytes) = (0.0, 0.0);
    let mut devices = Vec::new();
    for top in tops {
        let subject = top.subject_of(&pool.name, top);
        let r = *by_subject.get(subject.as_str())?;
        let n = r.write_ops_per_s * r.seconds;
        writes += n;
        bytes += r.write_bytes_per_s * r.seconds;
        top_writes.insert(top.name.clone(), n);
        for leaf in top.leaves() {
            let leaf_subject = top.subject_of(&pool.name, leaf);
            let lr = by_subject.get(leaf_subject.as_str()).copied();
            let dr = leaf.disk.as_deref().and_then(|d| sample.disk(d));
            devices.push(DevPoint {
                name: leaf.name.clone(),
                disk: leaf.disk.clone(),
                util: dr.map(|d| d.util),
                w_await: dr.and_then(|d| d.w_await),
                w_s: dr.map_or(0.0, |d| d.w_s),
                total_wait_w: lr.and_then(|l| l.total_wait_w),
                disk_wait_w: lr.and_then(|l| l.disk_wait_w),
                zfs_writes: lr.map_or(0.0, |l| l.write_ops_per_s * l.seconds),
                top: top.name.clone(),
            });
        }
    }
    let alloc = tops
        .iter()
        .filter_map(|v| v.stats.as_ref())
        .map(|s| s.alloc)
        .sum();
    let (mut data_writes, mut data_wait_ms_writes) = (0.0, 0.0);
    let data_tops = pool.config.iter().flat_map(|c| c.class(VdevClass::Normal));
    for top in data_tops {
        let subject = top.subject_of(&pool.name, top);
        let r = by_subject.get(subject.as_str()).copied();
        if let Some((r, ns)) = r.and_then(|r| Some((r, r.disk_wait_w?))) {
            let n = r.write_ops_per_s * r.seconds;
            data_writes += n;
            data_wait_ms_writes += ns as f64 / 1e6 * n;
        }
    }
    Some(Point {
        end: sample.end,
        interval: sample.interval,
        writes,
        bytes,
        top_writes,
        zil,
        devices,
        alloc,
        data_writes,
        data_wait_ms_writes,
    })
}

/// The window's figures. Rates are totals over the window's seconds, so a short interval
/// weighs as little as it lasted.
fn summarize(w: &stats::Window<Point>) -> Window {
    let seconds: f64 = w.iter().map(|p| p.interval).sum();
    let per_s = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    // ZIL counts over the intervals that have them (the first reading of 2.2+ dataset
    // counters has none), scaled to the window's seconds.
    let with_zil: Vec<(Zil, ZilScope, f64)> = w
        .iter()
        .filter_map(|p| p.zil.map(|(z, s)| (z, s, p.interval)))
        .collect();
    let zil_secs: f64 = with_zil.iter().map(|z| z.2).sum();
    let zil = (zil_secs > 0.0).then(|| {
        let mut sum = Zil::default();
        for (z, _, _) in &with_zil {
            sum.add(z);
        }
        let k = seconds / zil_secs;
        let scaled = Zil {
            commits: sum.commits * k,
            itx: sum.itx * k,
            itx_bytes: sum.itx_bytes * k,
            slog_bytes: sum.slog_bytes * k,
            normal_bytes: sum.normal_bytes * k,
        };
        let scope = if with_zil.iter().any(|z| z.1 == ZilScope::Host) {
            ZilScope::Host
        } else {
            ZilScope::Pool
        };
        (scaled, scope)
    });
    let mut names: Vec<&str> = w
        .iter()
        .flat_map(|p| p.devices.iter().map(|d| d.name.as_str()))
        .collect();
    names.dedup();
    names.sort_unstable();
    names.dedup();
    let devices = names
        .into_iter()
        .map(|name| {
            let pts: Vec<(&DevPoint, f64)> = w
                .iter()
                .flat_map(|p| {
                    p.devices
                        .iter()
                        .filter(move |d| d.name == name)
                        .map(move |d| (d, p.interval))
                })
                .collect();
            let utils: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|(d, s)| d.util.map(|u| (u, *s)))
                .collect();
            let secs: f64 = utils.iter().map(|u| u.1).sum();
            let util_mean =
                (secs > 0.0).then(|| utils.iter().map(|(u, s)| u * s).sum::<f64>() / secs);
            let util_peak = utils.iter().map(|u| u.0).reduce(f64::max);
            // Per-write averages weighted by the writes of each interval.
            let weighted = |f: &dyn Fn(&DevPoint) -> Option<f64>| {
                let (sum, n) = pts.iter().fold((0.0, 0.0), |(sum, n), (d, s)| match f(d) {
                    Some(v) if d.w_s > 0.0 => (sum + v * d.w_s * s, n + d.w_s * s),
                    _ => (sum, n),
                });
                (n > 0.0).then(|| sum / n)
            };
            // The device latency ZFS timed, weighted by the leaf's own writes (a file vdev
            // has no kernel disk to count them).
            let (sum, n) = pts
                .iter()
                .fold((0.0, 0.0), |(sum, n), (d, _)| match d.disk_wait_w {
                    Some(ns) if d.zfs_writes > 0.0 => {
                        (sum + ns as f64 / 1e6 * d.zfs_writes, n + d.zfs_writes)
                    }
                    _ => (sum, n),
                });
            DeviceSummary {
                name: name.to_string(),
                util_mean,
                util_peak,
                w_await_ms: weighted(&|d| d.w_await),
                wait_ms: weighted(&|d| d.total_wait_w.map(|ns| ns as f64 / 1e6)),
                disk_wait_ms: (n > 0.0).then(|| sum / n),
                top: pts.first().map_or_else(String::new, |(d, _)| d.top.clone()),
            }
        })
        .collect();
    Window {
        samples: w.len(),
        seconds,
        writes_per_s: per_s(w.iter().map(|p| p.writes).sum()),
        bytes_per_s: per_s(w.iter().map(|p| p.bytes).sum()),
        zil,
        devices,
        peak_alloc: w.iter().map(|p| p.alloc).max().unwrap_or(0),
        data_disk_wait_ms: {
            let n: f64 = w.iter().map(|p| p.data_writes).sum();
            (n > 0.0).then(|| w.iter().map(|p| p.data_wait_ms_writes).sum::<f64>() / n)
        },
    }
}

/// The summary and advice of the verdict `usage` whose figures `report` holds, written into
/// it: made only for an event that goes out.
fn verdict_words(
    subject: &str,
    layout: &str,
    w: &Window,
    pool: &Pool,
    usage: Usage,
    report: &mut Report,
) {
    let versus = w.versus();
    let zil_text = match w.zil {
        Some((z, scope)) => {
            let secs = w.seconds.max(f64::MIN_POSITIVE);
            let share = w.slog_share();
            let whose = if scope == ZilScope::Host {
                " (host-wide)"
            } else {
                ""
            };
            format!(
                " for {:.1} ZIL commits/s, {:.1} itx/s and {}/s of logged data{whose}{}",
                z.commits / secs,
                z.itx / secs,
                bytes(z.itx_bytes / secs),
                share.map_or(String::new(), |s| format!(
                    ", {:.0}% of the log-block bytes going to the SLOG",
                    s * 100.0
                ))
            )
        }
        None => String::new(),
    };
    let mut devices = Vec::new();
    for d in &w.devices {
        let mut parts = Vec::new();
        if let (Some(mean), Some(peak)) = (d.util_mean, d.util_peak) {
            parts.push(format!("busy {mean:.0}% (peak {peak:.0}%)"));
        }
        if let Some(ms) = d.w_await_ms {
            parts.push(format!("{ms:.1} ms per write"));
        }
        if !parts.is_empty() {
            devices.push(format!("{} {}", d.name, parts.join(", ")));
        }
    }
    let data_vdevs: Vec<&str> = pool
        .config
        .iter()
        .flat_map(|c| c.class(VdevClass::Normal))
        .map(|v| v.name.as_str())
        .collect();
    let versus_text = match versus {
        Some(((d, log), data)) => {
            format!(
                "; a write takes {log:.2} ms on the log's device ({}) against {data:.2} ms \
                 on the pool's own vdevs ({})",
                d.name,
                data_vdevs.join(", ")
            )
        }
        None => String::new(),
    };
    let devices = if devices.is_empty() {
        String::new()
    } else {
        format!("; {}", devices.join("; "))
    };
    let over = duration(w.seconds);
    report.summary = match usage {
        Usage::Idle => format!(
            "{subject} ({layout}) took {:.2} writes/s over the last {over}{zil_text}: no \
             sync writes use it, so the SLOG brings nothing",
            w.writes_per_s
        ),
        Usage::Useful => format!(
            "{subject} ({layout}) took {:.0} writes/s ({}/s) over the last {over}{zil_text}\
             {devices}{versus_text}: useful, not saturated",
            w.writes_per_s,
            bytes(w.bytes_per_s)
        ),
        Usage::Saturated => format!(
            "{subject} ({layout}) took {:.0} writes/s ({}/s) over the last {over}{zil_text}\
             {devices}{versus_text}: saturated, sync writes queue behind it",
            w.writes_per_s,
            bytes(w.bytes_per_s)
        ),
        Usage::Slower => format!(
            "{subject} ({layout}) took {:.0} writes/s ({}/s) over the last {over}{zil_text}\
             {devices}{versus_text}: slower than the pool it serves, so every sync write \
             waits longer than it would without it",
            w.writes_per_s,
            bytes(w.bytes_per_s)
        ),
    };
    let spilled = w.slog_share().is_some_and(|s| s < 0.9);
    let advice = match usage {
        Usage::Idle => Some(format!(
            "A SLOG speeds up only synchronous writes (fsync, O_SYNC, sync=always, NFS and \
             iSCSI commits). Without them it can go (zpool remove {} <log vdev>) and its \
             device serve elsewhere, e.g. as half of a special mirror",
            pool.name
        )),
        Usage::Saturated => Some(format!(
            "The log device is the bottleneck of sync writes: a faster device with \
             power-loss protection, or a second log vdev (zpool add {} log mirror DEV1 \
             DEV2), spreads them; logbias=throughput keeps bulk sync writes off the SLOG",
            pool.name
        )),
        Usage::Useful if spilled => Some(
            "Part of the ZIL went to the main pool: datasets with logbias=throughput, a \
             log that was full, or (host-wide figures) other pools without a SLOG"
                .to_string(),
        ),
        Usage::Slower => versus.map(|((d, log), data)| {
            format!(
                "Remove the log (zpool remove {} {}): the ZIL then goes to the pool's own \
                 vdevs, which answer a write in {data:.2} ms against the log's {log:.2} ms. \
                 A SLOG pays off only on a device faster than the pool's, with power-loss \
                 protection",
                pool.name, d.top
            )
        }),
        Usage::Useful => None,
    };
    report.advice = advice;
}

impl Check for SlogUsage {
    const NAME: &'static str = "slog-usage";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// Of the optional parts of the sample: the vdev trees and rates, the log devices' disks
    /// and their rates, and the datasets' ZIL counters.
    const READS: u64 = zpulse_proto::abi::PART_POOL_CONFIGS
        | zpulse_proto::abi::PART_POOL_RATES
        | zpulse_proto::abi::PART_SNAPSHOT_DISKS
        | zpulse_proto::abi::PART_DISK_RATES
        | zpulse_proto::abi::PART_DATASETS;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        Ok(SlogUsage::new(config)?)
    }

    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        self.conclude(window)
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        SlogUsage::observe(self, sample)
    }

    fn started(&self) -> Option<String> {
        Some(format!(
            "watching the log vdevs of {} over {} s",
            if self.config.pools.is_empty() {
                "every pool".to_string()
            } else {
                self.config.pools.join(", ")
            },
            self.config.window.as_secs()
        ))
    }
}

#[cfg(test)]
mod tests;
