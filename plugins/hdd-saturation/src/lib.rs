//! zpulse check `hdd-saturation`: **spinning disks that are saturated, and whether by seeks**.
//!
//! A spinning disk serves about 150 random requests a second; everything beyond waits in its
//! queue. For every rotational whole disk, and for every top-level vdev made only of
//! rotational disks, the check keeps a window of samples (default 30 minutes) and computes
//! what an administrator would from `iostat -x` over that time: mean and p95 `%util`, the
//! share of samples at or above the saturation level (95%), await mean and peak, IOPS, MB/s
//! and the average request size. It raises a finding when the saturated share (default 10%)
//! or the mean `%util` (default 60%) passes its threshold.
//!
//! It then asks the question the seed's admin asked: *can this much data keep a disk this
//! busy?* A disk streaming sequentially moves about `sequential_mb_s` (150 MB/s) for every
//! second it is busy. A disk that moved less than `seek_bound_pct` (25%) of that per busy
//! second, in requests of at most `small_request_kib` (64 KiB), spent its time moving its
//! heads, not data: it is **seek-bound** — provided each request kept the disk busy as long
//! as a seek takes ([`SEEK_SERVICE_MS`], 2 ms): a virtual disk or a drive answering from its
//! cache is not seeking, however little it moves. When the ARC is mostly metadata (more than
//! `metadata_share_pct`, 50%) and the pool has no special vdev, those seeks are metadata
//! reads, and the advice is a *mirrored* special vdev — mirrored because losing it loses the
//! pool.
//!
//! Config (`[plugins.hdd-saturation]` in zpulse.toml), every key optional; the page
//! `docs/checks/hdd-saturation.md` explains each
//! (the `settings!` declaration of `Config` is the one definition of them).

mod conclude;
mod window;

pub use window::{Obs, Stats, Window, percentile};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{ReportWindow, Section};
use zpulse_proto::sample::DiskRates;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::stats::{round2, settle};
use zpulse_proto::sdk::{self, Check, Event, Findings, Report, Rules, Threshold, Value, Verdict};
use zpulse_proto::snapshot::VdevClass;

zpulse_proto::settings! {
    /// The `[plugins.hdd-saturation]` table.
    pub struct Config {
        // 30 minutes as the seed measured; two minutes at the default 10 s interval before a
        // verdict: one burst in a handful of samples is not a saturated disk.
        window(Duration::from_secs(30 * 60), 360, 12);
        /// `%util` at or above which a sample counts as saturated (the seed's "95% busy or more")
        saturation_pct: f64 = 95.0, [Rule::Positive];
        /// raise when at least this % of the window's samples are saturated (the seed: 16%)
        saturated_share_pct: f64 = 10.0, [Rule::Pct];
        /// clear level for the share
        saturated_share_clear_pct: f64 = 5.0, [Rule::Pct, Rule::NotAbove("saturated_share_pct")];
        /// critical from this share
        saturated_share_critical_pct: f64 = 50.0,
            [Rule::Pct, Rule::NotBelow("saturated_share_pct")];
        /// raise when the time-weighted mean `%util` reaches this (M/M/1: 60% busy is 2.5× the wait)
        mean_util_pct: f64 = 60.0, [Rule::Pct];
        /// clear level for the mean
        mean_util_clear_pct: f64 = 45.0, [Rule::Pct, Rule::NotAbove("mean_util_pct")];
        /// critical from this mean
        mean_util_critical_pct: f64 = 90.0, [Rule::Pct, Rule::NotBelow("mean_util_pct")];
        /// consecutive holding samples before raising (the window already smooths)
        raise_after: u32 = 1, [];
        /// a raised finding is not cleared sooner
        #[serde(with = "sdk::config::duration")]
        min_hold: Duration = Duration::from_secs(600), [];
        /// one disk's sequential rate, MB/s (10⁶ B); 7200-rpm disks do 150–200
        sequential_mb_s: f64 = 150.0, [Rule::Positive];
        /// at or below this busy-time share (and small requests): seek-bound
        seek_bound_pct: f64 = 25.0, [Rule::AtLeast(0.0), Rule::NotAbove("streaming_pct")];
        /// "small request" limit for the seek-bound diagnosis, KiB
        small_request_kib: f64 = 64.0, [Rule::Positive];
        /// at or above this busy-time share: bandwidth-bound
        streaming_pct: f64 = 50.0, [];
        /// the ARC is "mostly metadata" above this share (%)
        metadata_share_pct: f64 = 50.0, [];
        /// also one finding per disk (false: vdevs only, and one-disk vdevs as vdevs)
        per_disk: bool = true, [];
        /// watch only these kernel disk names (still only rotational ones); empty = every HDD
        disks: Vec<String> = Vec::new(), [];
    }
}

/// The least busy time a request costs a disk that seeks, ms: a random request waits on
/// average half a rotation for its sector, 60 s / rpm / 2 = 2.0 ms on the fastest spinning
/// drives made (15,000 rpm), before any head movement (a few ms more). A disk busy less than
/// this per request (busy time / requests completed, iostat's old `svctm`) is not seeking,
/// whatever its throughput: a VM's virtual disk, or reads served from the drive's cache.
pub const SEEK_SERVICE_MS: f64 = 2.0;

/// What the time a busy disk spent went into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Little data per busy second, in small requests: the heads were moving.
    SeekBound,
    /// Near the sequential rate per busy second: the disk is out of bandwidth.
    Streaming,
    /// In between, or not enough to tell.
    Mixed,
}

/// One subject's window judged against the config.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub verdict: Verdict,
    pub stats: Stats,
    /// Disks behind the figures (1 for a disk).
    pub disks: usize,
    /// MB/s moved ÷ what the disks stream sequentially, 0–1.
    pub sequential_share: f64,
    /// MB/s moved per busy second ÷ the sequential rate, 0–1; `None` when never busy.
    pub busy_share: Option<f64>,
    pub load: Load,
}

/// One subject judged: its finding subject, the assessment and the event text.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub subject: String,
    pub assessment: Assessment,
    pub report: Report,
}

/// A top-level vdev made of spinning disks, as the disks' roles describe it.
#[derive(Debug, Clone)]
struct VdevTrack {
    pool: String,
    class: VdevClass,
    vdev: String,
    members: Vec<String>,
    window: Window,
}

pub struct HddSaturation {
    config: Config,
    share: Threshold,
    mean: Threshold,
    findings: Findings,
    disks: BTreeMap<String, Window>,
    vdevs: BTreeMap<String, VdevTrack>,
    /// The ARC's metadata share per sample, 0–1, over the same window.
    metadata: Window,
    /// Set on the instance that judges a whole report window ([`conclude`]).
    describing_window: bool,
}

impl Check for HddSaturation {
    const NAME: &'static str = "hdd-saturation";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// Of the optional parts of the sample: disk roles and rotational flags, the disk rates,
    /// the vdev rates (ZFS's own wait per HDD vdev), the vdev trees (whether a pool has a
    /// special vdev yet, the data vdevs' redundancy) and the ARC (its metadata share).
    const READS: u64 = zpulse_proto::abi::PART_SNAPSHOT_DISKS
        | zpulse_proto::abi::PART_DISK_RATES
        | zpulse_proto::abi::PART_POOL_RATES
        | zpulse_proto::abi::PART_POOL_CONFIGS
        | zpulse_proto::abi::PART_ARC;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        Ok(HddSaturation::with_config(config)?)
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        self.step(sample)
    }

    fn started(&self) -> Option<String> {
        let c = &self.config;
        Some(format!(
            "watching {} over {} s: saturated share {}% or mean {}% busy",
            if c.disks.is_empty() {
                "every spinning disk and HDD vdev".to_string()
            } else {
                c.disks.join(", ")
            },
            c.window.as_secs(),
            c.saturated_share_pct,
            c.mean_util_pct
        ))
    }

    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        self.conclude(window)
    }
}

impl HddSaturation {
    /// The check without a host: validates the config the way [`Check::build`] does.
    pub fn with_config(config: Config) -> Result<HddSaturation, String> {
        config.check_rules().map_err(|e| e.to_string())?;
        let share = Threshold::above(config.saturated_share_pct, config.saturated_share_clear_pct)
            .and_then(|t| t.critical(config.saturated_share_critical_pct))
            .map_err(|e| format!("saturated_share_pct: {e}"))?;
        let mean = Threshold::above(config.mean_util_pct, config.mean_util_clear_pct)
            .and_then(|t| t.critical(config.mean_util_critical_pct))
            .map_err(|e| format!("mean_util_pct: {e}"))?;
        let findings = Findings::new(
            Self::NAME,
            Rules {
                raise_after: config.raise_after,
                min_hold: config.min_hold,
                material_change: 0.25,
            },
        );
        let metadata = config.new_window();
        Ok(HddSaturation {
            config,
            share,
            mean,
            findings,
            disks: BTreeMap::new(),
            vdevs: BTreeMap::new(),
            metadata,
            describing_window: false,
        })
    }

    /// Takes one sample into the windows and returns the events it causes.
    pub fn step(&mut self, sample: &Sample) -> Vec<Event> {
        self.record(sample);
        self.evaluate(sample)
    }

    fn new_window(&self) -> Window {
        self.config.new_window()
    }

    fn record(&mut self, sample: &Sample) {
        let now = sample.end;
        let watched: BTreeMap<&str, &DiskRates> = sample
            .disks
            .iter()
            .filter(|d| watched(&self.config.disks, d))
            .map(|d| (d.name.as_str(), d))
            .collect();
        for (name, rates) in &watched {
            let fresh = self.new_window();
            self.disks
                .entry((*name).to_string())
                .or_insert(fresh)
                .push(disk_obs(rates, sample));
        }

        // Looked up by key: a scan per member or per vdev would be quadratic in disks and vdevs.
        let by_name = sample.snapshot.disks_by_name();
        let mut vdev_rates: HashMap<(&str, &str), &zpulse_proto::sample::VdevRates> =
            HashMap::new();
        for p in &sample.pools {
            for v in &p.vdevs {
                vdev_rates.entry((&p.name, &v.subject)).or_insert(v);
            }
        }
        // Top-level vdevs whose every disk spins: the disks' roles say which they are.
        let mut members: BTreeMap<(String, VdevClass, String), BTreeSet<String>> = BTreeMap::new();
        for disk in &sample.snapshot.disks {
            for role in &disk.roles {
                members
                    .entry((role.pool.clone(), role.class, role.vdev.clone()))
                    .or_default()
                    .insert(disk.name.clone());
            }
        }
        for ((pool, class, vdev), names) in members {
            let all_hdd = names.iter().all(|n| {
                by_name.get(n.as_str()).and_then(|d| d.rotational) == Some(true)
                    && (self.config.disks.is_empty() || self.config.disks.contains(n))
            });
            // Every disk must have rates this sample, or the vdev's figures would be partial.
            let rates: Option<Vec<&DiskRates>> = names
                .iter()
                .map(|n| watched.get(n.as_str()).copied())
                .collect();
            let (true, Some(rates)) = (all_hdd, rates) else {
                continue;
            };
            let subject = class.top_subject(&pool, &vdev);
            let mut obs = vdev_obs(&rates, sample);
            if let Some(v) = vdev_rates.get(&(pool.as_str(), subject.as_str())) {
                let ops_r = v.read_ops_per_s * v.seconds;
                let ops_w = v.write_ops_per_s * v.seconds;
                obs.zfs_read_wait = v
                    .total_wait_r
                    .filter(|_| ops_r > 0.0)
                    .map(|ns| (ns as f64 * ops_r, ops_r));
                obs.zfs_write_wait = v
                    .total_wait_w
                    .filter(|_| ops_w > 0.0)
                    .map(|ns| (ns as f64 * ops_w, ops_w));
            }
            let window = self.new_window();
            let track = self.vdevs.entry(subject).or_insert(VdevTrack {
                pool,
                class,
                vdev,
                members: Vec::new(),
                window,
            });
            track.members = names.into_iter().collect();
            track.window.push(obs);
        }

        if let Some(share) = sample
            .snapshot
            .arc
            .as_ref()
            .and_then(|a| a.metadata_share())
        {
            self.metadata.push(Obs {
                end: now,
                interval: sample.interval,
                util: share,
                ..Obs::default()
            });
        }

        // Age every window, also of subjects this sample did not have, and forget the empty.
        for w in self.disks.values_mut() {
            w.prune(now);
        }
        for t in self.vdevs.values_mut() {
            t.window.prune(now);
        }
        self.metadata.prune(now);
        self.disks.retain(|_, w| !w.is_empty());
        self.vdevs.retain(|_, t| !t.window.is_empty());
    }

    /// Mean share of the ARC that is metadata over the window, 0–1.
    pub fn metadata_share(&self) -> Option<f64> {
        Stats::over(&self.metadata, f64::INFINITY).map(|s| s.util_mean)
    }

    /// Judges one window.
    pub fn assess(&self, stats: Stats, disks: usize) -> Assessment {
        let c = &self.config;
        let share_v = self.share.verdict(settle(stats.saturated_share * 100.0));
        let mean_v = self.mean.verdict(settle(stats.util_mean));
        let verdict = combine(share_v, mean_v);
        let sequential = c.sequential_mb_s * 1e6 * disks as f64;
        let sequential_share = stats.bytes_per_s() / sequential;
        // Per second of busy time, what did the disks move? A sequential stream moves the
        // full rate; seeks move almost nothing.
        let busy_share =
            (stats.util_mean > 0.0).then(|| sequential_share / (stats.util_mean / 100.0));
        let small = stats
            .avg_request_bytes
            .is_some_and(|b| b <= c.small_request_kib * 1024.0);
        // Busy time per request of one disk: a seek costs at least SEEK_SERVICE_MS.
        let per_disk_iops = stats.iops / disks.max(1) as f64;
        let seeking = per_disk_iops > 0.0
            && settle(stats.util_mean / 100.0 / per_disk_iops * 1e3) >= SEEK_SERVICE_MS;
        let load = match busy_share.map(|b| settle(b * 100.0)) {
            Some(b) if b <= c.seek_bound_pct && small && seeking => Load::SeekBound,
            Some(b) if b >= c.streaming_pct => Load::Streaming,
            _ => Load::Mixed,
        };
        Assessment {
            verdict,
            stats,
            disks,
            sequential_share,
            busy_share,
            load,
        }
    }

    /// Every subject with enough samples, judged over its window as of `sample` (the
    /// newest one recorded): what the findings are fed.
    pub fn judge(&self, sample: &Sample) -> Vec<Judgement> {
        self.judge_adjusted(sample, &|_, _| {}, &|_, _| true)
    }

    /// [`judge`](Self::judge), with each subject's statistics passed through `adjust`
    /// (given the subject's disks) before they are judged, and a report only for the
    /// subjects `wants` (subject, verdict) names: the others' is empty (a quiet subject's,
    /// which its finding does not read).
    fn judge_adjusted(
        &self,
        sample: &Sample,
        adjust: &dyn Fn(&[String], &mut Stats),
        wants: &dyn Fn(&str, Verdict) -> bool,
    ) -> Vec<Judgement> {
        let min = self.config.min_samples.max(1);
        let meta = self.metadata_share();
        let mut judged = Vec::new();
        let by_name = sample.snapshot.disks_by_name();
        if self.config.per_disk {
            for (name, window) in &self.disks {
                if window.len() < min {
                    continue;
                }
                let Some(mut stats) = Stats::over(window, self.config.saturation_pct) else {
                    continue;
                };
                adjust(std::slice::from_ref(name), &mut stats);
                let assessment = self.assess(stats, 1);
                let report = if wants(name, assessment.verdict) {
                    let roles = disk_roles(by_name.get(name.as_str()).copied());
                    let subject = Subject::Disk {
                        name,
                        roles: &roles,
                    };
                    self.describe(&subject, &assessment, sample, meta)
                } else {
                    Report::default()
                };
                judged.push(Judgement {
                    subject: name.clone(),
                    assessment,
                    report,
                });
            }
        }
        for (subject, track) in &self.vdevs {
            // A one-disk vdev is its disk: the disk's finding already names the vdev.
            if track.window.len() < min || (self.config.per_disk && track.members.len() == 1) {
                continue;
            }
            let Some(mut stats) = Stats::over(&track.window, self.config.saturation_pct) else {
                continue;
            };
            adjust(&track.members, &mut stats);
            let assessment = self.assess(stats, track.members.len());
            let report = if wants(subject, assessment.verdict) {
                self.describe(&Subject::Vdev(track), &assessment, sample, meta)
            } else {
                Report::default()
            };
            judged.push(Judgement {
                subject: subject.clone(),
                assessment,
                report,
            });
        }
        judged
    }

    fn evaluate(&mut self, sample: &Sample) -> Vec<Event> {
        let mut events = Vec::new();
        let findings = &self.findings;
        let judged = self.judge_adjusted(sample, &|_, _| {}, &|subject, verdict| {
            findings.wants_report(subject, verdict)
        });
        for j in judged {
            events.extend(self.findings.observe_with(
                sample.end,
                &j.subject,
                j.assessment.verdict,
                || j.report,
            ));
        }
        // Subjects whose window has run dry (a disk pulled, a pool exported, a long gap).
        let min_samples = self.config.min_samples;
        events.extend(self.findings.clear_unseen(sample.end, |subject| {
            Report::new(format!(
                "{subject}: too few recent samples to judge (fewer than {min_samples} in the window)"
            ))
        }));
        events
    }

    fn describe(
        &self,
        subject: &Subject,
        a: &Assessment,
        sample: &Sample,
        meta: Option<f64>,
    ) -> Report {
        let c = &self.config;
        let s = &a.stats;
        let mb_s = s.bytes_per_s() / 1e6;
        let capacity = c.sequential_mb_s * a.disks as f64;
        let label = subject.label();
        // A report describes every subject in full, whatever its verdict; a finding that
        // clears only says so.
        let cleared = a.verdict == Verdict::Clear && !self.describing_window;
        let summary = if cleared {
            format!(
                "{label} is no longer saturated: busy {}% mean, ≥{}% in {}% of {} samples",
                pct(s.util_mean),
                pct(c.saturation_pct),
                pct(s.saturated_share * 100.0),
                s.samples
            )
        } else {
            let awaits = match (s.await_mean_ms, s.await_peak_ms) {
                (Some(m), Some(p)) => format!(", await {m:.1} ms mean / {p:.0} ms peak"),
                _ => String::new(),
            };
            let request = s
                .avg_request_bytes
                .map(|b| format!(" of {:.0} KiB", b / 1024.0))
                .unwrap_or_default();
            let whose = match subject {
                Subject::Disk { .. } => "its".to_string(),
                Subject::Vdev(_) => "its disks'".to_string(),
            };
            let tag = match a.load {
                Load::SeekBound => ": seek-bound",
                Load::Streaming => ": streaming near its sequential rate",
                Load::Mixed => "",
            };
            format!(
                "{label} busy {}% mean (p95 {}%), ≥{}% in {}% of {} samples{awaits}, \
                 moving {mb_s:.1} MB/s in {:.0} IOPS{request} — {}% of {whose} sequential \
                 {capacity:.0} MB/s{tag}",
                pct(s.util_mean),
                pct(s.util_p95),
                pct(c.saturation_pct),
                pct(s.saturated_share * 100.0),
                s.samples,
                s.iops,
                pct(a.sequential_share * 100.0),
            )
        };
        let pool = subject.pool_role();
        let pool_info = pool.as_ref().map(|(p, _)| pool_info(sample, p));
        let mut r = Report::new(summary)
            .with("util_mean_pct", round2(s.util_mean))
            .with("util_p95_pct", round2(s.util_p95))
            .with("util_max_pct", round2(s.util_max))
            .with("saturated_share_pct", round2(s.saturated_share * 100.0))
            .with("iops", round2(s.iops))
            .with("read_iops", round2(s.read_iops))
            .with("mb_per_s", round2(mb_s))
            .with("read_mb_per_s", round2(s.read_bytes_per_s / 1e6))
            .with("write_mb_per_s", round2(s.write_bytes_per_s / 1e6))
            .with("aqu_sz", round2(s.aqu_sz))
            .with("sequential_share_pct", round2(a.sequential_share * 100.0))
            .with("seek_bound", a.load == Load::SeekBound);
        let optional = [
            ("await_mean_ms", s.await_mean_ms),
            ("await_peak_ms", s.await_peak_ms),
            ("avg_request_kib", s.avg_request_bytes.map(|b| b / 1024.0)),
            ("busy_throughput_share_pct", a.busy_share.map(|b| b * 100.0)),
            ("arc_metadata_share_pct", meta.map(|m| m * 100.0)),
            ("zfs_read_wait_ms", s.zfs_read_wait_ms),
            ("zfs_write_wait_ms", s.zfs_write_wait_ms),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                r = r.with(key, round2(v));
            }
        }
        match subject {
            Subject::Disk { roles, .. } => {
                if !roles.is_empty() {
                    let list: Vec<Value> = roles
                        .iter()
                        .map(|(p, c, v)| Value::from(c.top_subject(p, v)))
                        .collect();
                    r = r.with("vdevs", Value::List(list));
                }
            }
            Subject::Vdev(t) => {
                r = r
                    .with("pool", t.pool.as_str())
                    .with("class", t.class.as_str())
                    .with("vdev", t.vdev.as_str())
                    .with("disks", t.members.clone())
                    .with("busiest_disk_util_mean_pct", round2(s.util_max_member_mean));
            }
        }
        if let Some(info) = &pool_info
            && let Some(has) = info.has_special
        {
            r = r.with("pool_has_special", has);
        }
        if !cleared && let Some(advice) = advice(a, pool.as_ref(), pool_info.as_ref(), meta, c) {
            r = r.advice(advice);
        }
        r
    }
}

enum Subject<'a> {
    Disk {
        name: &'a str,
        roles: &'a [(String, VdevClass, String)],
    },
    Vdev(&'a VdevTrack),
}

impl Subject<'_> {
    /// `tank mirror-0 (HDD: sda, sdb)`, `sda (tank mirror-0)`; the class only when it is
    /// not the normal one.
    fn label(&self) -> String {
        let place = |pool: &str, class: VdevClass, vdev: &str| match class {
            VdevClass::Normal => format!("{pool} {vdev}"),
            other => format!("{pool} {} {vdev}", other.as_str()),
        };
        match self {
            Subject::Disk { name, roles: [] } => (*name).to_string(),
            Subject::Disk { name, roles } => {
                let places: Vec<String> = roles.iter().map(|(p, c, v)| place(p, *c, v)).collect();
                format!("{name} ({})", places.join(", "))
            }
            Subject::Vdev(t) => format!(
                "{} (HDD: {})",
                place(&t.pool, t.class, &t.vdev),
                t.members.join(", ")
            ),
        }
    }

    /// The pool and class the subject serves (a disk: its first role).
    fn pool_role(&self) -> Option<(String, VdevClass)> {
        match self {
            Subject::Disk { roles, .. } => roles.first().map(|(p, c, _)| (p.clone(), *c)),
            Subject::Vdev(t) => Some((t.pool.clone(), t.class)),
        }
    }
}

/// What the pool config says that matters for the advice.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PoolInfo {
    /// `None` when the pool's vdev tree was not read.
    has_special: Option<bool>,
    /// Failures the weakest normal-class vdev survives.
    data_tolerates: Option<u32>,
}

fn pool_info(sample: &Sample, pool: &str) -> PoolInfo {
    let config = sample.snapshot.pool(pool).and_then(|p| p.config.as_ref());
    PoolInfo {
        has_special: config.map(|c| c.class(VdevClass::Special).next().is_some()),
        data_tolerates: config.and_then(|c| {
            c.class(VdevClass::Normal)
                .map(|v| v.redundancy.map(|r| r.tolerated_failures()))
                .collect::<Option<Vec<u32>>>()?
                .into_iter()
                .min()
        }),
    }
}

/// What to do about it, when there is something specific to say.
fn advice(
    a: &Assessment,
    pool: Option<&(String, VdevClass)>,
    info: Option<&PoolInfo>,
    meta: Option<f64>,
    c: &Config,
) -> Option<String> {
    let meta_heavy = meta.map(|m| m * 100.0 > c.metadata_share_pct);
    match a.load {
        Load::Streaming => Some(
            "The disks move data near their sequential rate: this is bandwidth, not seeks; \
             more vdevs (or faster disks) add bandwidth, or the workload must move less"
                .into(),
        ),
        Load::Mixed => None,
        Load::SeekBound => {
            let Some((pool, class)) = pool else {
                return Some(
                    "A spinning disk busy while moving little data in small requests is doing \
                     random I/O: move the random part to SSDs"
                        .into(),
                );
            };
            if *class != VdevClass::Normal {
                return Some(format!(
                    "This HDD serves {pool}'s {} class, whose I/O is small and random by \
                     nature: that class belongs on SSDs",
                    class.as_str()
                ));
            }
            let meta_pct = meta
                .map(|m| format!("{:.0}%", m * 100.0))
                .unwrap_or_default();
            match (meta_heavy, info.and_then(|i| i.has_special)) {
                (Some(true), Some(false)) => {
                    let tolerates = info.and_then(|i| i.data_tolerates).unwrap_or(1);
                    let width = (tolerates + 1).max(2);
                    // Reads: the seed's case, metadata the ARC misses. Writes: every txg
                    // writes indirect blocks, dnodes and space maps beside the data, and a
                    // special vdev takes those too.
                    let s = &a.stats;
                    let why = if s.iops > 0.0 && s.read_iops / s.iops >= 0.5 {
                        format!(
                            "so every metadata read the ARC misses is a seek on these HDDs \
                             ({:.0}% of their requests are reads)",
                            s.read_iops / s.iops * 100.0
                        )
                    } else {
                        format!(
                            "and these HDDs mostly write ({:.0}% of their requests): every \
                             txg scatters metadata (indirect blocks, dnodes, space maps) \
                             beside the data",
                            100.0 - s.read_iops / s.iops.max(f64::MIN_POSITIVE) * 100.0
                        )
                    };
                    Some(format!(
                        "The ARC is {meta_pct} metadata and {pool} has no special vdev, {why}: \
                         add a special vdev of SSDs as a {width}-way mirror (zpool add {pool} \
                         special mirror SSD1 SSD2{}), which takes metadata off the spindles. \
                         It must be mirrored, at least as redundant as the data vdevs: losing \
                         the special vdev loses the whole pool. Only metadata written after \
                         adding it moves there (rewrite datasets with zfs send | zfs recv for \
                         the rest)",
                        (3..=width).map(|i| format!(" SSD{i}")).collect::<String>()
                    ))
                }
                (Some(true), Some(true)) => Some(format!(
                    "The ARC is {meta_pct} metadata, yet {pool} already has a special vdev: \
                     metadata written before it was added still lives on the HDDs (rewrite \
                     with zfs send | zfs recv), and a full special vdev spills new metadata \
                     back to them (check its fill with zpool list -v)"
                )),
                (Some(false), _) => Some(format!(
                    "The ARC is only {meta_pct} metadata: the seeks are data reads and writes. \
                     A bigger ARC, more mirror vdevs to spread the seeks, or SSDs for the hot \
                     data help; a special vdev would only with special_small_blocks"
                )),
                _ => Some(
                    "A spinning disk busy while moving little data in small requests is doing \
                     random I/O: a mirrored special vdev for metadata, a bigger ARC or more \
                     vdevs spread the seeks"
                        .into(),
                ),
            }
        }
    }
}

/// Holds when either holds (the higher severity), clear when both are, else borderline.
pub fn combine(a: Verdict, b: Verdict) -> Verdict {
    match (a, b) {
        (Verdict::Holds(x), Verdict::Holds(y)) => Verdict::Holds(x.max(y)),
        (Verdict::Holds(x), _) | (_, Verdict::Holds(x)) => Verdict::Holds(x),
        (Verdict::Clear, Verdict::Clear) => Verdict::Clear,
        _ => Verdict::Borderline,
    }
}

/// The pools, classes and top-level vdevs a disk serves.
fn disk_roles(disk: Option<&zpulse_proto::snapshot::Disk>) -> Vec<(String, VdevClass, String)> {
    let mut roles: Vec<_> = disk
        .map(|d| {
            d.roles
                .iter()
                .map(|r| (r.pool.clone(), r.class, r.vdev.clone()))
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles.dedup();
    roles
}

/// Spinning whole disks (or the ones named in the config). Partitions repeat their disk's
/// figures; loop, RAM, zvol and optical devices are not what a pool's HDDs are.
pub fn watched(names: &[String], disk: &DiskRates) -> bool {
    let virtual_device = zpulse_proto::snapshot::is_virtual_disk(&disk.name);
    disk.rotational == Some(true)
        && disk.whole_disk.is_none()
        && !virtual_device
        && (names.is_empty() || names.contains(&disk.name))
}

fn disk_obs(d: &DiskRates, sample: &Sample) -> Obs {
    let ios = d.iops() * sample.interval;
    Obs {
        end: sample.end,
        interval: sample.interval,
        util: d.util,
        ios,
        read_ios: d.r_s * sample.interval,
        read_bytes: d.rkb_s * 1024.0 * sample.interval,
        write_bytes: d.wkb_s * 1024.0 * sample.interval,
        await_total_ms: d.await_ms.map(|a| a * ios),
        aqu_sz: d.aqu_sz,
        util_max_member: d.util,
        zfs_read_wait: None,
        zfs_write_wait: None,
    }
}

/// A vdev's disks together: traffic adds up, `%util` is their mean (a mirror is as busy as
/// its disks are on average; the busiest is kept too).
fn vdev_obs(disks: &[&DiskRates], sample: &Sample) -> Obs {
    let each: Vec<Obs> = disks.iter().map(|d| disk_obs(d, sample)).collect();
    let n = each.len().max(1) as f64;
    Obs {
        end: sample.end,
        interval: sample.interval,
        util: each.iter().map(|o| o.util).sum::<f64>() / n,
        ios: each.iter().map(|o| o.ios).sum(),
        read_ios: each.iter().map(|o| o.read_ios).sum(),
        read_bytes: each.iter().map(|o| o.read_bytes).sum(),
        write_bytes: each.iter().map(|o| o.write_bytes).sum(),
        await_total_ms: each.iter().map(|o| o.await_total_ms).sum(),
        aqu_sz: each.iter().map(|o| o.aqu_sz).sum(),
        util_max_member: each.iter().map(|o| o.util).fold(0.0, f64::max),
        zfs_read_wait: None,
        zfs_write_wait: None,
    }
}

/// A percentage for a sentence: one decimal below 10, none above.
fn pct(x: f64) -> String {
    if x.abs() < 10.0 && x.fract() != 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

#[cfg(test)]
mod tests;
