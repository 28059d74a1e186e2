//! zpulse check `pool-health`: **the alerts every ZFS administrator needs first** — what
//! `zpool status` would tell them if they looked, raised the moment it changes.
//!
//! Each finding has its own `check` name, so that one pool can carry several:
//!
//! | check | subject | severity |
//! |---|---|---|
//! | `pool-health.state` | `pool` | warning (DEGRADED), critical (no redundancy left, FAULTED, UNAVAIL, SUSPENDED) |
//! | `pool-health.errors` | `pool/class/vdev[/leaf]` | info (counted before zpulse watched), warning (growing) |
//! | `pool-health.slow-ios` | `pool/class/vdev[/leaf]` | warning (growing) |
//! | `pool-health.data-errors` | `pool` | critical |
//! | `pool-health.resilver-errors` | `pool/class/vdev/leaf` | critical |
//! | `pool-health.scan` | `pool` | info while a scrub or resilver runs; cleared with a clean result; critical when it ended with errors (seen running or not), info when canceled |
//! | `pool-health.scrub-age` | `pool` | warning |
//! | `pool-health.capacity` | `pool` | warning, critical |
//! | `pool-health.fragmentation` | `pool` | info |
//! | `pool-health.spare` | `pool/spare/device` | warning |
//!
//! Everything is judged at the sample's time (`Sample::end`), so a recorded series replays
//! as it happened. `docs/checks/pool-health.md` explains each finding and key.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sample::VdevRates;
use zpulse_proto::sdk::section::judge_afresh;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::stats::{Trend, round_sig3, round2};
use zpulse_proto::sdk::text::{bytes, ctime_utc, dhms, scan_status};
use zpulse_proto::sdk::{
    self, Check, Event, Findings, Report, Rules, Severity, Threshold, Verdict,
};
use zpulse_proto::snapshot::{Pool, PoolConfig, ScanStats, Vdev, VdevClass};

zpulse_proto::settings! {
    /// The `[plugins.pool-health]` table.
    pub struct Config {
        /// watch only these pools; empty = every pool
        pools: Vec<String> = Vec::new(), [];
        /// no completed scrub for longer: warning
        #[serde(with = "sdk::config::duration")]
        scrub_max_age: Duration = Duration::from_secs(35 * 86_400), [Rule::Positive];
        /// allocated / size at or above this: warning
        capacity_warn_pct: f64 = 80.0, [Rule::Pct, Rule::NotAbove("capacity_critical_pct")];
        /// allocated / size at or above this: critical
        capacity_critical_pct: f64 = 90.0, [Rule::Pct];
        /// the capacity finding clears at or below this
        capacity_clear_pct: f64 = 75.0, [Rule::Pct, Rule::NotAbove("capacity_warn_pct")];
        /// free-space fragmentation at or above this: info
        fragmentation_pct: f64 = 50.0, [Rule::Pct];
        /// the fragmentation finding clears at or below this
        fragmentation_clear_pct: f64 = 45.0, [Rule::Pct, Rule::NotAbove("fragmentation_pct")];
        /// the allocation growth and time to full are fitted over this
        #[serde(with = "sdk::config::duration")]
        growth_window: Duration = Duration::from_secs(6 * 3600), [Rule::Positive];
        /// … and at most this many points (0 = no limit)
        growth_window_samples: usize = 2160, [];
        /// capacity and fragmentation findings stay up at least this long
        #[serde(with = "sdk::config::duration")]
        min_hold: Duration = Duration::from_secs(600), [];
    }
}

/// Facts, not levels: raised at once, cleared the moment they stop holding.
const FACT: Rules = Rules {
    raise_after: 1,
    min_hold: Duration::ZERO,
    material_change: 0.2,
};

/// Vdev states in which a device contributes nothing to its parent's redundancy.
fn is_missing(state: Option<&str>) -> bool {
    matches!(
        state,
        Some("OFFLINE" | "FAULTED" | "UNAVAIL" | "REMOVED" | "CANT_OPEN" | "CLOSED")
    )
}

/// What the check remembers of one vdev's error counters.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// (read, write, checksum) when zpulse first saw this vdev with errors.
    baseline: [u64; 3],
}

/// The scan record (`pool_scan_stat_t`) of a pool as the last sample showed it, and whether
/// the scan it describes ended while zpulse watched. The kernel keeps one record per pool and
/// the next scan overwrites it, so a scan that started and ended between two samples is seen
/// only as a record that changed, or as an end time after the previous sample.
#[derive(Debug, Clone, PartialEq)]
struct ScanSeen {
    function: String,
    state: String,
    start_time: u64,
    end_time: u64,
    ended_while_watched: bool,
}

impl ScanSeen {
    fn same_record(&self, scan: &ScanStats) -> bool {
        self.function == scan.function
            && self.state == scan.state
            && self.start_time == scan.start_time
            && self.end_time == scan.end_time
    }
}

pub struct PoolHealth {
    config: Config,
    capacity: Threshold,
    fragmentation: Threshold,
    state: Findings,
    errors: Findings,
    slow: Findings,
    data_errors: Findings,
    resilver_errors: Findings,
    scan: Findings,
    scrub_age: Findings,
    capacity_findings: Findings,
    fragmentation_findings: Findings,
    spare: Findings,
    // Maps looked up per vdev or pool every sample are B-trees: no SipHash of the key, and
    // `counts` is empty on a healthy host, so its per-vdev `remove` finds nothing at once.
    counts: BTreeMap<String, Counts>,
    /// Leaves that returned errors during the resilver running in their top-level vdev:
    /// top-level subject → leaf subjects.
    resilver_hits: BTreeMap<String, BTreeSet<String>>,
    growth: BTreeMap<String, Trend>,
    /// Per pool: its scan record at the last sample.
    scans: BTreeMap<String, ScanSeen>,
    /// Per pool: the end time of the last completed scrub seen. A resilver (or a canceled
    /// scrub) overwrites the pool's scan record, not the fact that the pool was scrubbed.
    last_scrub_end: BTreeMap<String, u64>,
}

impl PoolHealth {
    pub fn new(config: Config) -> Result<PoolHealth, String> {
        config.check_rules().map_err(|e| e.to_string())?;
        let capacity = Threshold::above(config.capacity_warn_pct, config.capacity_clear_pct)
            .map_err(|e| format!("capacity_warn_pct/capacity_clear_pct: {e}"))?
            .critical(config.capacity_critical_pct)
            .map_err(|e| format!("capacity_critical_pct: {e}"))?;
        let fragmentation =
            Threshold::above(config.fragmentation_pct, config.fragmentation_clear_pct)
                .map_err(|e| format!("fragmentation_pct/fragmentation_clear_pct: {e}"))?
                .severity(Severity::Info);
        let held = Rules {
            min_hold: config.min_hold,
            ..FACT
        };
        let findings =
            |name: &str, rules: Rules| Findings::new(format!("pool-health.{name}"), rules);
        Ok(PoolHealth {
            capacity,
            fragmentation,
            state: findings("state", FACT),
            errors: findings("errors", FACT),
            slow: findings("slow-ios", FACT),
            data_errors: findings("data-errors", FACT),
            resilver_errors: findings("resilver-errors", FACT),
            // A scan's progress is news every 20% of it, not every sample.
            scan: findings("scan", FACT),
            scrub_age: findings("scrub-age", FACT),
            capacity_findings: findings("capacity", held),
            fragmentation_findings: findings("fragmentation", held),
            spare: findings("spare", FACT),
            counts: BTreeMap::new(),
            resilver_hits: BTreeMap::new(),
            growth: BTreeMap::new(),
            scans: BTreeMap::new(),
            last_scrub_end: BTreeMap::new(),
            config,
        })
    }

    fn watched(&self, pool: &str) -> bool {
        self.config.pools.is_empty() || self.config.pools.iter().any(|p| p == pool)
    }

    /// Every finding this sample changes.
    pub fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        let now = sample.end;
        let mut events = Vec::new();
        // The last of a subject wins, as it did in the hash map this was.
        let rates: BTreeMap<&str, &VdevRates> = sample
            .pools
            .iter()
            .flat_map(|p| p.vdevs.iter())
            .map(|r| (r.subject.as_str(), r))
            .collect();
        for pool in &sample.snapshot.pools {
            if !self.watched(&pool.name) {
                continue;
            }
            let Some(cfg) = &pool.config else {
                // No vdev tree this sample (the note says why): the kstat state still tells.
                if let Some(state) = pool.state.as_deref() {
                    let (verdict, report) = state_without_tree(&pool.name, state);
                    events.extend(self.state.observe(now, &pool.name, verdict, report));
                }
                // No scan record this sample is no news about the scan.
                self.scan.keep(&pool.name);
                self.scrub_age.keep(&pool.name);
                continue;
            };
            let (verdict, report) = pool_state(&pool.name, cfg);
            events.extend(self.state.observe_with(now, &pool.name, verdict, report));
            self.vdev_errors(now, pool, cfg, &rates, &mut events);
            let (verdict, report) = data_errors(&pool.name, cfg);
            events.extend(
                self.data_errors
                    .observe_with(now, &pool.name, verdict, report),
            );
            if let Some(scan) = &cfg.scan {
                let watched = self.scan_ended_while_watched(&pool.name, scan, sample.start);
                let (verdict, report) = scan_result(&pool.name, scan, now, watched);
                events.extend(self.scan.observe_with(now, &pool.name, verdict, report));
                if scan.function == "scrub" && scan.is_finished() {
                    match self.last_scrub_end.get_mut(&pool.name) {
                        Some(end) => *end = scan.end_time,
                        None => {
                            self.last_scrub_end.insert(pool.name.clone(), scan.end_time);
                        }
                    }
                }
            }
            let (verdict, report) = scrub_age(&self.config, &self.last_scrub_end, pool, cfg, now);
            events.extend(
                self.scrub_age
                    .observe_with(now, &pool.name, verdict, report),
            );
            self.capacity(now, pool, cfg, &mut events);
            for (subject, verdict, report) in spares(&pool.name, cfg) {
                events.extend(self.spare.observe(now, &subject, verdict, report));
            }
        }
        // What is kept per pool lasts as long as the pool is reported.
        let pools = &sample.snapshot.pools;
        let reported = |name: &String| pools.iter().any(|p| p.name == *name);
        self.scans.retain(|p, _| reported(p));
        self.last_scrub_end.retain(|p, _| reported(p));
        let gone = |s: &str| {
            Report::new(format!(
                "{s} is no longer reported: pool exported or destroyed"
            ))
        };
        for findings in [
            &mut self.state,
            &mut self.errors,
            &mut self.slow,
            &mut self.data_errors,
            &mut self.resilver_errors,
            &mut self.scan,
            &mut self.scrub_age,
            &mut self.capacity_findings,
            &mut self.fragmentation_findings,
            &mut self.spare,
        ] {
            events.extend(findings.clear_unseen(now, gone));
        }
        events
    }

    /// Whether the scan `scan` describes ended (finished or was canceled) while zpulse
    /// watched the pool, remembering the record for the next sample. A record that changed
    /// since the last sample (a new start time, a running scan now finished) ended in this
    /// interval; on first sight, the record ended in this interval when its end time is not
    /// before the previous snapshot (`interval_start`, the sample's start: whole seconds, so
    /// a scan that ended in that snapshot's second counts as ending in the interval).
    fn scan_ended_while_watched(
        &mut self,
        pool: &str,
        scan: &ScanStats,
        interval_start: f64,
    ) -> bool {
        let ended = !scan.is_running() && scan.function != "none";
        let watched = match self.scans.get(pool) {
            Some(seen) if seen.same_record(scan) => seen.ended_while_watched,
            Some(_) => ended,
            None => ended && scan.end_time as f64 >= interval_start.floor(),
        };
        // The same record as last time (the usual case) is kept, not copied again.
        match self.scans.get_mut(pool) {
            Some(seen) if seen.same_record(scan) => seen.ended_while_watched = watched,
            _ => {
                let seen = ScanSeen {
                    function: scan.function.clone(),
                    state: scan.state.clone(),
                    start_time: scan.start_time,
                    end_time: scan.end_time,
                    ended_while_watched: watched,
                };
                self.scans.insert(pool.to_string(), seen);
            }
        }
        watched
    }

    /// Error counters of every vdev, slow I/Os, and errors met by a running resilver.
    fn vdev_errors(
        &mut self,
        now: f64,
        pool: &Pool,
        cfg: &PoolConfig,
        rates: &BTreeMap<&str, &VdevRates>,
        events: &mut Vec<Event>,
    ) {
        let resilvering = cfg
            .scan
            .as_ref()
            .is_some_and(|s| s.function == "resilver" && s.is_running());
        for top in &cfg.root.children {
            if top.class == Some(VdevClass::Spare) {
                continue; // spares have no counters (zpool status shows none)
            }
            let top_subject = top.subject_of(&pool.name, top);
            for v in top.walk() {
                let Some(stats) = &v.stats else { continue };
                let subject = top.subject_of(&pool.name, v);
                let rate = rates.get(subject.as_str()).copied();
                let counts = [stats.read_errors, stats.write_errors, stats.checksum_errors];
                let new = rate.map(|r| r.new_errors);
                if counts.iter().all(|&n| n == 0) {
                    // The usual case: nothing to raise, and the text only if one was raised.
                    self.counts.remove(&subject);
                    events.extend(self.errors.observe_with(now, &subject, Verdict::Clear, || {
                        Report::new(format!("{subject}: error counters are zero again"))
                    }));
                } else {
                    let (verdict, report) =
                        self.error_verdict(&pool.name, v, &subject, counts, rate);
                    events.extend(self.errors.observe(now, &subject, verdict, report));
                }

                let slow_new = new.and_then(|n| n.slow_ios).unwrap_or(0);
                let slow_total = stats.slow_ios.unwrap_or(0);
                let verdict = if slow_new > 0 {
                    Verdict::Holds(Severity::Warning)
                } else if slow_total == 0 {
                    Verdict::Clear
                } else {
                    Verdict::Borderline
                };
                let report = || {
                    Report::new(format!(
                        "{subject}{}: {slow_new} I/Os slower than zfs_deadman_ziotime_ms in {} \
                         ({slow_total} since the counters were last cleared)",
                        disk_note(v),
                        rate.map_or_else(
                            || "this interval".into(),
                            |r| sdk::text::duration(r.seconds)
                        )
                    ))
                    .with("slow_ios", slow_total)
                    .with("new_slow_ios", slow_new)
                    .advice(
                        "A device that stalls I/O for this long is failing or overloaded: check \
                         its SMART data and its cabling and controller, then `zpool clear` it",
                    )
                };
                events.extend(self.slow.observe_with(now, &subject, verdict, report));

                // Errors on a leaf while a resilver rebuilds another leaf of the same
                // top-level vdev: the copy that would repair them is the one being rebuilt.
                let erred = new.is_some_and(|n| n.read.unwrap_or(0) + n.checksum.unwrap_or(0) > 0);
                if resilvering && v.is_leaf() && erred {
                    self.resilver_hits
                        .entry(top_subject.clone())
                        .or_default()
                        .insert(subject.clone());
                }
            }
            let hits = if resilvering {
                self.resilver_hits
                    .get(&top_subject)
                    .cloned()
                    .unwrap_or_default()
            } else {
                // The resilver is over: what it could not repair is now the pool's error log
                // (pool-health.data-errors).
                for leaf_subject in self.resilver_hits.remove(&top_subject).unwrap_or_default() {
                    let report = Report::new(format!(
                        "the resilver of {} in {} is over; `zpool status -v {}` lists what it \
                         could not repair",
                        top.name, pool.name, pool.name
                    ));
                    events.extend(self.resilver_errors.observe(
                        now,
                        &leaf_subject,
                        Verdict::Clear,
                        report,
                    ));
                }
                BTreeSet::new()
            };
            // The leaves the resilver is rebuilding, named in a hit's report: only with hits.
            let rebuilt: Vec<&Vdev> = if hits.is_empty() {
                Vec::new()
            } else {
                top.leaves()
                    .into_iter()
                    .filter(|l| l.stats.as_ref().and_then(|s| s.scan_processed).unwrap_or(0) > 0)
                    .collect()
            };
            for leaf_subject in hits {
                let leaf = top
                    .walk()
                    .into_iter()
                    .find(|v| top.subject_of(&pool.name, v) == leaf_subject);
                let Some(leaf) = leaf else { continue };
                let others: Vec<String> = rebuilt
                    .iter()
                    .filter(|r| !std::ptr::eq(**r, leaf))
                    .map(|r| format!("{}{}", r.name, disk_note(r)))
                    .collect();
                let s = leaf.stats.as_ref();
                let rebuilding = if others.is_empty() {
                    "while a resilver runs".to_string()
                } else {
                    format!("while {} is being resilvered", others.join(" and "))
                };
                let report = Report::new(format!(
                    "{}{} in {} of {} returned read or checksum errors {rebuilding}: the \
                     redundancy that would repair them is being rebuilt, so blocks may be lost",
                    leaf.name,
                    disk_note(leaf),
                    top.name,
                    pool.name
                ))
                .with("leaf", leaf.name.clone())
                .with("read_errors", s.map_or(0, |s| s.read_errors))
                .with("checksum_errors", s.map_or(0, |s| s.checksum_errors))
                .with("resilvering", others.join(", "))
                .advice(format!(
                    "Do not detach or offline anything in {top}. Let the resilver finish, then \
                     `zpool status -v {pool}` lists damaged files to restore from backup; replace \
                     {leaf} (`zpool replace {pool} {leaf} NEW_DEVICE`) once the pool is whole",
                    top = top.name,
                    pool = pool.name,
                    leaf = leaf.name
                ));
                events.extend(self.resilver_errors.observe(
                    now,
                    &leaf_subject,
                    Verdict::Holds(Severity::Critical),
                    report,
                ));
            }
        }
    }

    /// The verdict and report of a vdev with at least one error counted (`counts` is not all
    /// zeros: the caller handles that cheaper, usual case itself).
    fn error_verdict(
        &mut self,
        pool: &str,
        v: &Vdev,
        subject: &str,
        counts: [u64; 3],
        rate: Option<&VdevRates>,
    ) -> (Verdict, Report) {
        // Without rates the vdev is new in this interval or was reopened in it (its counters
        // reset, e.g. by an export and import): everything it counts happened in the interval.
        let new = rate
            .map(|r| r.new_errors)
            .unwrap_or(zpulse_proto::sample::NewErrors {
                read: Some(counts[0]),
                write: Some(counts[1]),
                checksum: Some(counts[2]),
                slow_ios: None,
            });
        let new3 = [
            new.read.unwrap_or(0),
            new.write.unwrap_or(0),
            new.checksum.unwrap_or(0),
        ];
        // First sight: what was there before this interval predates zpulse's watch.
        let entry = self.counts.entry(subject.to_string()).or_insert(Counts {
            baseline: [0, 1, 2].map(|i| counts[i].saturating_sub(new3[i])),
        });
        // A counter below its baseline was cleared meanwhile and counted again.
        for (base, now) in entry.baseline.iter_mut().zip(counts) {
            *base = (*base).min(now);
        }
        let grown = (0..3).any(|i| counts[i] > entry.baseline[i]);
        let names = ["read", "write", "checksum"];
        let listed: Vec<String> = (0..3)
            .filter(|&i| counts[i] > 0)
            .map(|i| {
                if new3[i] > 0 {
                    format!("{} {} errors ({} new)", counts[i], names[i], new3[i])
                } else {
                    format!("{} {} errors", counts[i], names[i])
                }
            })
            .collect();
        let whose = if v.is_leaf() {
            format!("{}{} in {pool}", v.name, disk_note(v))
        } else {
            format!(
                "{} of {pool} itself (no copy below it could repair these)",
                v.name
            )
        };
        let (severity, when) = if grown {
            (Severity::Warning, "")
        } else {
            (
                Severity::Info,
                ", all counted before zpulse started watching",
            )
        };
        let what = if counts[2] > 0 && counts[0] == 0 && counts[1] == 0 {
            "The device returned wrong data: check its cabling, controller and SMART data"
        } else {
            "The device failed I/O: check its cabling, controller and SMART data"
        };
        let report = Report::new(format!("{whose}: {}{when}", listed.join(", ")))
            .with("read_errors", counts[0])
            .with("write_errors", counts[1])
            .with("checksum_errors", counts[2])
            .with("new_errors", new.total())
            .advice(format!(
                "{what}. After fixing the cause, `zpool scrub {pool}` repairs from redundancy \
                 and `zpool clear {pool} {name}` resets the counters; if errors return, \
                 `zpool replace {pool} {name} NEW_DEVICE`",
                name = v.name
            ));
        (Verdict::Holds(severity), report)
    }

    fn capacity(&mut self, now: f64, pool: &Pool, cfg: &PoolConfig, events: &mut Vec<Event>) {
        let Some(root) = cfg.root.stats.as_ref().filter(|s| s.space > 0) else {
            return;
        };
        let used_pct = root.alloc as f64 / root.space as f64 * 100.0;
        let trend = self.growth.entry(pool.name.clone()).or_insert_with(|| {
            Trend::new(
                self.config.growth_window.as_secs_f64(),
                self.config.growth_window_samples,
            )
        });
        trend.push((now, root.alloc as f64));
        let growth = trend.slope();
        let free = root.space.saturating_sub(root.alloc);
        let verdict = self.capacity.verdict(used_pct);
        let report = || {
            let mut summary = format!(
                "{} is {used_pct:.1}% full: {} allocated of {}, {} free",
                pool.name,
                bytes(root.alloc as f64),
                bytes(root.space as f64),
                bytes(free as f64)
            );
            let mut report = Report::new(String::new())
                .with("used_pct", round2(used_pct))
                .with("free_bytes", free);
            if let Some(g) = growth.filter(|g| *g > 0.0) {
                let to_full = free as f64 / g;
                summary.push_str(&format!(
                    ", growing {}/day (full in ~{} at this rate)",
                    bytes(g * 86_400.0),
                    dhms(to_full as u64)
                ));
                // Three significant figures: a pool minutes from full has days_to_full ≈ 0.005.
                report = report
                    .with("growth_bytes_per_day", round_sig3(g * 86_400.0))
                    .with("days_to_full", round_sig3(to_full / 86_400.0));
            }
            report.summary = summary;
            report.advice(format!(
                "Past about 80% ZFS slows down allocating and fragments free space; near 100% \
                 writes fail. Free space (destroy old snapshots: `zfs list -t snapshot -o \
                 name,used -s used -r {pool}`) or add a vdev as redundant as the others (`zpool \
                 add {pool} …`)",
                pool = pool.name
            ))
        };
        events.extend(
            self.capacity_findings
                .observe_with(now, &pool.name, verdict, report),
        );
        if let Some(frag) = cfg.fragmentation() {
            let verdict = self.fragmentation.verdict(frag as f64);
            let report = || {
                Report::new(format!(
                    "{}'s free space is {frag}% fragmented (zpool list FRAG)",
                    pool.name
                ))
                .with("fragmentation_pct", frag)
                .advice(
                    "New allocations find fewer large free runs, so writes get slower. Free \
                     space or add capacity; fragmentation itself cannot be undone in place",
                )
            };
            events.extend(
                self.fragmentation_findings
                    .observe_with(now, &pool.name, verdict, report),
            );
        }
    }
}

/// What is known of a pool's last scrub, before any text is made of it.
#[derive(Debug, Clone, Copy)]
enum LastScrub {
    /// A scrub is running, since this time.
    Running { start: u64 },
    /// The last completed scrub ended at `end`; `remembered`: seen at an earlier sample,
    /// the pool's scan record since replaced by a resilver or a canceled scrub.
    Finished { end: u64, remembered: bool },
    /// No completed scrub on record.
    Never,
}

/// How long since the pool was last scrubbed: a warning past `config.scrub_max_age`. The
/// verdict takes no text; the report is made when the finding reads it.
fn scrub_age<'a>(
    config: &Config,
    last_scrub_end: &BTreeMap<String, u64>,
    pool: &'a Pool,
    cfg: &'a PoolConfig,
    now: f64,
) -> (Verdict, impl FnOnce() -> Report + 'a) {
    let max = config.scrub_max_age.as_secs_f64();
    let scan = cfg.scan.as_ref();
    // The last completed scrub: the scan record's, or the one remembered from an earlier
    // sample when a resilver or a canceled scrub has replaced the record since.
    let last = if let Some(s) = scan.filter(|s| s.function == "scrub" && s.is_running()) {
        LastScrub::Running {
            start: s.start_time,
        }
    } else if let Some(s) = scan.filter(|s| s.function == "scrub" && s.is_finished()) {
        LastScrub::Finished {
            end: s.end_time,
            remembered: false,
        }
    } else if let Some(&end) = last_scrub_end.get(&pool.name) {
        LastScrub::Finished {
            end,
            remembered: true,
        }
    } else {
        LastScrub::Never
    };
    let overdue = match last {
        LastScrub::Running { .. } => false,
        LastScrub::Finished { end, .. } => now - end as f64 > max,
        LastScrub::Never => pool_age(pool.created_at, cfg, now).0 > max,
    };
    let verdict = if overdue {
        Verdict::Holds(Severity::Warning)
    } else {
        Verdict::Clear
    };
    (verdict, move || {
        scrub_report(&pool.name, pool.created_at, cfg, now, last, overdue)
    })
}

/// How old a pool is, and from what. Exact from its creation time (its root dataset's
/// `creation`); without it, known only from below: the pool has existed at least since it
/// was imported and as long as its root vdev has been open.
fn pool_age(created_at: Option<u64>, cfg: &PoolConfig, now: f64) -> (f64, &'static str) {
    match created_at {
        Some(t) => ((now - t as f64).max(0.0), "creation"),
        None => {
            let opened = cfg
                .root
                .stats
                .as_ref()
                .map_or(0.0, |s| s.timestamp as f64 / 1e9);
            let imported = cfg.loaded_at.map_or(0.0, |t| now - t as f64);
            (opened.max(imported), "import or vdev open (a lower bound)")
        }
    }
}

/// The scrub-age report of `last`, overdue (a warning) or not.
fn scrub_report(
    pool: &str,
    created_at: Option<u64>,
    cfg: &PoolConfig,
    now: f64,
    last: LastScrub,
    overdue: bool,
) -> Report {
    let days = |s: f64| format!("{:.0} days", s / 86_400.0);
    let scan = cfg.scan.as_ref();
    match last {
        LastScrub::Running { start } => {
            return Report::new(format!(
                "a scrub of {pool} has been running since {}",
                ctime_utc(start as i64)
            ));
        }
        LastScrub::Finished { end, remembered } => {
            let replaced_by = match scan {
                Some(s) if remembered => format!(
                    "; the scan record now holds a {} {} on {}",
                    s.function,
                    s.state,
                    ctime_utc(s.end_time.max(s.start_time) as i64)
                ),
                _ => String::new(),
            };
            let age = now - end as f64;
            let text = format!(
                "the last scrub of {pool} finished {} ago ({}{replaced_by})",
                days(age.max(0.0)),
                ctime_utc(end as i64)
            );
            if !overdue {
                return Report::new(text);
            }
            return Report::new(format!(
                "{text}: scrubs find silent corruption while redundancy can still repair it"
            ))
            .with("days_since_scrub", round2(age / 86_400.0))
            .advice(scrub_advice(pool));
        }
        LastScrub::Never => {}
    }
    let (age, age_source) = pool_age(created_at, cfg, now);
    let last = match scan {
        Some(s) if s.function != "none" => format!(
            "its last scan is a {} {} on {}",
            s.function,
            s.state,
            ctime_utc(s.end_time.max(s.start_time) as i64)
        ),
        _ => "it has never been scrubbed".to_string(),
    };
    let unknown_creation = "its creation time is not known, so this counts from its import \
                            or the opening of its vdevs";
    if !overdue {
        let known = match created_at {
            Some(t) => format!("created {} ago ({})", days(age), ctime_utc(t as i64)),
            None => format!("known to exist for {} ({unknown_creation})", days(age)),
        };
        return Report::new(format!(
            "{pool} has no completed scrub on record; {last}; {known}"
        ));
    }
    let in_use = match created_at {
        Some(t) => format!("was created {} ago ({})", days(age), ctime_utc(t as i64)),
        None => format!(
            "has been in use for at least {} ({unknown_creation})",
            days(age)
        ),
    };
    Report::new(format!(
        "{pool} has no completed scrub on record ({last}) and {in_use}"
    ))
    .with("days_in_use", round2(age / 86_400.0))
    .with("age_from", age_source)
    .advice(scrub_advice(pool))
}

fn scrub_advice(pool: &str) -> String {
    format!(
        "`zpool scrub {pool}` now, and schedule one monthly (Debian's zfsutils-linux ships a \
         cron job; FreeBSD: daily_scrub_zfs_enable=\"YES\" in periodic.conf)"
    )
}

/// " (disk sda, HDD)" for a leaf joined to a disk, "" otherwise.
fn disk_note(v: &Vdev) -> String {
    match &v.disk {
        Some(d) if *d != v.name => format!(" (disk {d})"),
        _ => String::new(),
    }
}

/// A verdict and its report, made only when read: the report of a verdict that holds is
/// read in any case and comes made (`judged`); without one the verdict is clear, and `clear`
/// formats its text only if a raised finding clears (not for a pool quiet and staying so).
fn clear_unless<'a>(
    judged: Option<(Verdict, Report)>,
    clear: impl FnOnce() -> Report + 'a,
) -> (Verdict, impl FnOnce() -> Report + 'a) {
    let verdict = judged.as_ref().map_or(Verdict::Clear, |(v, _)| *v);
    (verdict, move || judged.map_or_else(clear, |(_, r)| r))
}

/// The pool's health from its vdev tree.
fn pool_state<'a>(pool: &'a str, cfg: &PoolConfig) -> (Verdict, impl FnOnce() -> Report + 'a) {
    let unhealthy = (cfg.health != "ONLINE").then(|| not_online(pool, cfg));
    clear_unless(unhealthy, move || Report::new(format!("{pool} is ONLINE")))
}

/// A pool not ONLINE: which vdevs are not ONLINE, and whether any top-level vdev has no
/// redundancy left.
fn not_online(pool: &str, cfg: &PoolConfig) -> (Verdict, Report) {
    let health = cfg.health.as_str();
    let mut trouble = Vec::new();
    let mut advice = Vec::new();
    let mut exhausted = Vec::new();
    for top in cfg
        .root
        .children
        .iter()
        .filter(|t| t.class != Some(VdevClass::Spare))
    {
        let missing = top
            .children
            .iter()
            .filter(|c| is_missing(c.state.as_deref()))
            .count() as u32;
        let tolerated = top.redundancy.map_or(0, |r| r.tolerated_failures());
        if !top.children.is_empty() && missing > 0 && missing >= tolerated {
            exhausted.push(format!(
                "{} has no redundancy left ({missing} of {} devices missing)",
                top.name,
                top.children.len()
            ));
        }
        for v in top.walk() {
            let state = v.state.as_deref().unwrap_or("UNKNOWN");
            // A DEGRADED mirror or raidz is named through its leaves.
            if state == "ONLINE" || !v.is_leaf() {
                continue;
            }
            let aux = v
                .aux
                .as_deref()
                .map(|a| format!(", {a}"))
                .unwrap_or_default();
            let place = if std::ptr::eq(v, top) {
                String::new()
            } else {
                format!(" in {}", top.name)
            };
            trouble.push(format!("{}{} {state}{aux}{place}", v.name, disk_note(v)));
            advice.push(match state {
                "OFFLINE" => format!("`zpool online {pool} {}`", v.name),
                _ => format!(
                    "`zpool replace {pool} {} NEW_DEVICE` (or, if the device is back and sound, \
                     `zpool clear {pool} {}`)",
                    v.name, v.name
                ),
            });
        }
    }
    let severity = if health == "DEGRADED" && exhausted.is_empty() {
        Severity::Warning
    } else {
        Severity::Critical
    };
    let mut summary = format!("{pool} is {health}");
    if !trouble.is_empty() {
        summary.push_str(&format!(": {}", trouble.join("; ")));
    }
    if !exhausted.is_empty() {
        summary.push_str(&format!(
            "; {}: one more failure loses data",
            exhausted.join("; ")
        ));
    }
    let mut report = Report::new(summary)
        .with("health", health.to_string())
        .with("not_online", trouble.len() as u64);
    if !advice.is_empty() {
        report = report.advice(advice.join("; "));
    } else if health == "SUSPENDED" {
        report = report.advice(format!(
            "I/O to {pool} is suspended after device failures: restore the devices, then \
             `zpool clear {pool}`"
        ));
    }
    (Verdict::Holds(severity), report)
}

/// The kstat `state` alone, when this sample has no vdev tree.
fn state_without_tree(pool: &str, state: &str) -> (Verdict, Report) {
    let verdict = match state {
        "ONLINE" => Verdict::Clear,
        "DEGRADED" => Verdict::Holds(Severity::Warning),
        _ => Verdict::Holds(Severity::Critical),
    };
    (
        verdict,
        Report::new(format!(
            "{pool} is {state} (from its kstat; no vdev statistics this sample)"
        ))
        .with("health", state.to_string()),
    )
}

fn data_errors<'a>(pool: &'a str, cfg: &PoolConfig) -> (Verdict, impl FnOnce() -> Report + 'a) {
    let errors = cfg.error_count.filter(|&n| n > 0).map(|n| {
        (
            Verdict::Holds(Severity::Critical),
            Report::new(format!(
                "{pool} has permanent errors in about {n} blocks: data has been lost; `zpool \
                 status -v {pool}` lists the files"
            ))
            .with("error_count", n)
            .advice(format!(
                "Restore the listed files from backup, delete or overwrite them, then `zpool \
                 scrub {pool}`: the list empties after the scrub no longer finds them"
            )),
        )
    });
    clear_unless(errors, move || {
        Report::new(format!("{pool} has no known data errors"))
    })
}

/// A running scan as an info finding; its end clears it with the result. A scan that ended
/// with errors while zpulse watched (`ended_while_watched`: seen running, or its record new
/// since the last sample, or ended after it) is critical, and one that was canceled is said
/// (info); either is held until the pool's scan record changes, as `zpool status` goes on
/// printing it. The same ended before zpulse watched is info, once, so that an agent restart
/// does not hide it.
fn scan_result<'a>(
    pool: &'a str,
    scan: &'a ScanStats,
    now: f64,
    ended_while_watched: bool,
) -> (Verdict, impl FnOnce() -> Report + 'a) {
    let known_kind = matches!(scan.function.as_str(), "scrub" | "resilver");
    let lost = scan.is_finished() && scan.errors > 0 && known_kind;
    let canceled = scan.state == "canceled" && ended_while_watched;
    // Every outcome but a plain end holds, and its report is read in any case.
    let holds = (scan.is_running() || lost || canceled)
        .then(|| held_scan_result(pool, scan, now, ended_while_watched, lost));
    clear_unless(holds, move || ended_scan_report(pool, scan, now))
}

/// The report of a scan that is over: what `zpool status` says of it, with its figures.
fn ended_scan_report(pool: &str, scan: &ScanStats, now: f64) -> Report {
    let lines = scan_status(scan, now.max(0.0) as u64);
    let report = Report::new(format!("{pool}: {}", lines.join("; ")))
        .with("errors", scan.errors)
        .with("repaired_bytes", scan.processed);
    if scan.is_finished() {
        return report.with("seconds", scan.end_time.saturating_sub(scan.start_time));
    }
    report
}

/// A scan that holds a finding: running, ended having lost data (`lost`), or canceled while
/// watched.
fn held_scan_result(
    pool: &str,
    scan: &ScanStats,
    now: f64,
    ended_while_watched: bool,
    lost: bool,
) -> (Verdict, Report) {
    if scan.is_running() {
        let lines = scan_status(scan, now.max(0.0) as u64);
        let done = scan.progress().map_or(0.0, |p| p * 100.0);
        let mut report = Report::new(format!("{pool}: {}", lines.join("; ")))
            .with("done_pct", round2(done))
            .with("processed_bytes", scan.processed)
            .with("errors", scan.errors);
        if let Some(rate) = scan.issue_rate(now.max(0.0) as u64) {
            report = report.with("issued_bytes_per_s", rate);
        }
        if let Some(left) = scan.seconds_left(now.max(0.0) as u64) {
            report = report.with("seconds_left", left);
        }
        return (Verdict::Holds(Severity::Info), report);
    }
    let mut report = ended_scan_report(pool, scan, now);
    let before = ", before zpulse started watching";
    if lost {
        // pss_errors: blocks the scan read and could not repair from any copy (dsl_scan.c
        // counts them in dsl_scan_scrub_done: a zio error on a scan read). For a resilver
        // these are blocks the rebuilt device did not get either.
        let what = if scan.function == "resilver" {
            "the resilver could not rebuild these blocks from any copy: data has been lost"
        } else {
            "the scrub found blocks no copy could repair: data has been lost"
        };
        let (severity, when) = if ended_while_watched {
            (Severity::Critical, "")
        } else {
            (Severity::Info, before)
        };
        report.summary = format!("{}{when}; {what}", report.summary);
        let report = report.advice(format!(
            "`zpool status -v {pool}` lists the damaged files: restore them from backup (or \
             delete them), then `zpool scrub {pool}`; replace devices that keep counting \
             errors"
        ));
        return (Verdict::Holds(severity), report);
    }
    // Canceled while watched.
    report.summary = format!(
        "{}: its result is not known, and {pool} was not fully checked",
        report.summary
    );
    let report = report.advice(format!(
        "Start it again when convenient: `zpool scrub {pool}`"
    ));
    (Verdict::Holds(Severity::Info), report)
}

/// One finding per hot spare in use: which device it stands in for.
fn spares(pool: &str, cfg: &PoolConfig) -> Vec<(String, Verdict, Report)> {
    let mut out = Vec::new();
    for top in &cfg.root.children {
        if top.class == Some(VdevClass::Spare) {
            continue;
        }
        for v in top.walk() {
            if v.vdev_type != "spare" {
                continue;
            }
            // A `spare-N` vdev holds the original device first, then the spare(s).
            let Some((original, spares)) = v.children.split_first() else {
                continue;
            };
            for s in spares {
                let subject = VdevClass::Spare.top_subject(pool, &s.name);
                let report = Report::new(format!(
                    "hot spare {}{} is in use in {} of {pool}, standing in for {}{} ({})",
                    s.name,
                    disk_note(s),
                    top.name,
                    original.name,
                    disk_note(original),
                    original.state.as_deref().unwrap_or("?")
                ))
                .with("replaces", original.name.clone())
                .advice(format!(
                    "Replace the failed device: `zpool replace {pool} {} NEW_DEVICE` returns \
                     the spare; or make the spare permanent with `zpool detach {pool} {}`",
                    original.name, original.name
                ));
                out.push((subject, Verdict::Holds(Severity::Warning), report));
            }
        }
    }
    out
}

impl Check for PoolHealth {
    const NAME: &'static str = "pool-health";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// Of the optional parts: the vdev trees (their named fields) and the vdev rates.
    const READS: u64 = zpulse_proto::abi::PART_POOL_CONFIGS | zpulse_proto::abi::PART_POOL_RATES;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        Ok(PoolHealth::new(config)?)
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        PoolHealth::observe(self, sample)
    }

    /// `zpulse report`: the state at the window's end and every counter's growth over the
    /// whole window, judged afresh, as sections.
    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        let sections = judge_afresh::<Self>(self.config.clone(), window, |_| None);
        let pools = &window.whole.snapshot.pools;
        if !sections.is_empty() || pools.is_empty() {
            return sections;
        }
        let names: Vec<String> = pools
            .iter()
            .map(|p| {
                format!(
                    "{} {}",
                    p.name,
                    p.state.as_deref().unwrap_or("(state unknown)")
                )
            })
            .collect();
        vec![
            Section::new(
                Rating::Ok,
                "pools healthy",
                format!(
                    "{}; no read, write or checksum errors during the window, none fuller or \
                 longer unscrubbed than the thresholds",
                    names.join(", ")
                ),
            )
            .figure("pools", "pools", pools.len() as f64, ""),
        ]
    }
}

#[cfg(test)]
mod tests;
