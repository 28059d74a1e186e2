//! zpulse check `zevents`: **what the kernel says the moment it says it** — findings born of
//! kernel events (ABI 1.6, `Check::event`), raised within the second the event is read, so
//! that what starts and ends between two samples is never lost.
//!
//! | check | subject | severity |
//! |---|---|---|
//! | `zevents.scan` | `pool` | critical (a scrub or resilver finished with unrepairable errors, or a resilver met any error), warning (a scrub repaired errors; a scan was cancelled) |
//! | `zevents.vdev-state` | `pool/device` | warning (OFFLINE, DEGRADED), critical (FAULTED, REMOVED, UNAVAIL); cleared when it is ONLINE again |
//! | `zevents.errors` | `pool/device` | warning (checksum, I/O errors), critical (data no copy could repair): one finding per device with the count and rate of a burst |
//! | `zevents.slow-io` | `pool/device` | warning (`delay`: slower than `zio_slow_io_ms`), critical (`deadman`: stuck) |
//! | `zevents.probe` | `pool/device` | warning (a probe of the device failed) |
//! | `zevents.pool` | `pool` | info: the pool was exported or destroyed (cleared when it is imported or created again) |
//! | `zevents.change` | `pool` or `pool/device` | info: a vdev added, removed, attached, a spare activated (cleared after `notice_hold`) |
//!
//! A burst is one finding: raised at the first event, updated as its count doubles, cleared
//! once the device has been quiet for `quiet_after` (ZED's diagnosis counts N events in T
//! seconds the same way). Events the kernel queued before the agent started
//! (`ZEvent::before_start`) raise nothing: they reach the sinks as history, not as alerts.
//! `docs/checks/zevents.md` explains each finding.

use std::collections::BTreeMap;
use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::{
    self, Check, Event, Findings, Report, Rules, Severity, Verdict, ZEvent, ZEventKind,
};
use zpulse_proto::zevent::{VDEV_STATE_DEGRADED, VDEV_STATE_HEALTHY, vdev_state_name};

zpulse_proto::settings! {
    /// The `[plugins.zevents]` table.
    pub struct Config {
        /// an error or slow-I/O finding clears after this long without a new report
        #[serde(with = "sdk::config::duration")]
        quiet_after: Duration = Duration::from_secs(600), [Rule::AtLeast(1.0)];
        /// how long a vdev change (added, attached, removed, spare) stays raised
        #[serde(with = "sdk::config::duration")]
        notice_hold: Duration = Duration::from_secs(3600), [Rule::AtLeast(1.0)];
    }
}

/// A burst of error or slow-I/O reports on one device.
#[derive(Debug, Clone)]
struct Burst {
    count: u64,
    first: f64,
    last: f64,
    worst: Severity,
    /// The longest I/O reported, in milliseconds (slow-I/O bursts).
    max_ms: f64,
    /// What the last report named: `objset 54, object 2` and the offset.
    last_where: String,
    /// Counts by kind: checksum, io, data (errors) or delay, deadman (slow I/O).
    kinds: BTreeMap<&'static str, u64>,
    /// The files the reports were about, as the agent named them (the first
    /// [`FILES_KEPT`]).
    files: Vec<String>,
}

/// Files named per burst at most: enough to act on, bounded for a burst over a whole pool.
const FILES_KEPT: usize = 8;

impl Default for Burst {
    fn default() -> Burst {
        Burst {
            count: 0,
            first: 0.0,
            last: 0.0,
            worst: Severity::Info,
            max_ms: 0.0,
            last_where: String::new(),
            kinds: BTreeMap::new(),
            files: Vec::new(),
        }
    }
}

/// A scrub or resilver in progress, and the errors reported while it runs.
#[derive(Debug, Clone, Default)]
struct Scan {
    resilver: bool,
    /// `errors=N` of the pool history's `scan done`: the error log's size.
    permanent: Option<u64>,
    /// Error reports during the scan, per device and kind.
    reports: BTreeMap<String, BTreeMap<&'static str, u64>>,
}

pub struct Zevents {
    config: Config,
    scans: BTreeMap<String, Scan>,
    errors: BTreeMap<String, Burst>,
    slow: BTreeMap<String, Burst>,
    /// Change notices raised, with their time.
    notices: BTreeMap<String, f64>,
    scan_findings: Findings,
    state: Findings,
    error_findings: Findings,
    slow_findings: Findings,
    probe: Findings,
    pool: Findings,
    change: Findings,
}

/// Findings that follow the kernel's word at once: raised by one event, cleared by the next.
fn immediate() -> Rules {
    Rules {
        raise_after: 1,
        min_hold: Duration::ZERO,
        material_change: 0.5,
    }
}

/// A burst: updated when a count has doubled (so 10,000 events are some 14 updates).
fn bursts() -> Rules {
    Rules {
        raise_after: 1,
        min_hold: Duration::from_secs(60),
        material_change: 1.0,
    }
}

impl Check for Zevents {
    const NAME: &'static str = "zevents";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    // Samples only tell it the time (to clear quiet bursts): it reads none of their parts.
    const READS: u64 = 0;
    const EVENTS: bool = true;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        config.check_rules()?;
        Ok(Zevents {
            config,
            scans: BTreeMap::new(),
            errors: BTreeMap::new(),
            slow: BTreeMap::new(),
            notices: BTreeMap::new(),
            scan_findings: Findings::new("zevents.scan", immediate()),
            state: Findings::new("zevents.vdev-state", immediate()),
            error_findings: Findings::new("zevents.errors", bursts()),
            slow_findings: Findings::new("zevents.slow-io", bursts()),
            probe: Findings::new("zevents.probe", bursts()),
            pool: Findings::new("zevents.pool", immediate()),
            change: Findings::new("zevents.change", immediate()),
        })
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        self.tick(sample.end)
    }

    fn event(&mut self, z: &ZEvent) -> Vec<Event> {
        let now = z.time.as_f64();
        let mut out = Vec::new();
        // A scan's start is remembered even from history, so its end is judged whole.
        match z.kind() {
            ZEventKind::ScrubStart | ZEventKind::ResilverStart => {
                let pool = z.pool.clone().unwrap_or_default();
                self.scans.insert(
                    pool,
                    Scan {
                        resilver: z.kind() == ZEventKind::ResilverStart,
                        ..Scan::default()
                    },
                );
            }
            _ => {}
        }
        if z.before_start {
            return out;
        }
        let pool = z.pool.clone().unwrap_or_else(|| "-".into());
        let subject = z.subject();
        match z.kind() {
            k @ (ZEventKind::Checksum | ZEventKind::Io | ZEventKind::Data) => {
                let kind = match k {
                    ZEventKind::Checksum => "checksum",
                    ZEventKind::Io => "io",
                    _ => "data",
                };
                if let Some(scan) = self.scans.get_mut(&pool) {
                    *scan
                        .reports
                        .entry(subject.clone())
                        .or_default()
                        .entry(kind)
                        .or_default() += 1;
                }
                let severity = if k == ZEventKind::Data {
                    Severity::Critical
                } else {
                    Severity::Warning
                };
                let burst = record(&mut self.errors, &subject, now, kind, severity, z);
                let report = error_report(&subject, burst);
                out.extend(self.error_findings.observe(
                    now,
                    &subject,
                    Verdict::Holds(burst.worst),
                    report,
                ));
            }
            k @ (ZEventKind::Delay | ZEventKind::Deadman) => {
                let (kind, severity) = if k == ZEventKind::Delay {
                    ("delay", Severity::Warning)
                } else {
                    ("deadman", Severity::Critical)
                };
                let burst = record(&mut self.slow, &subject, now, kind, severity, z);
                let report = slow_report(&subject, burst);
                out.extend(self.slow_findings.observe(
                    now,
                    &subject,
                    Verdict::Holds(burst.worst),
                    report,
                ));
            }
            ZEventKind::ProbeFailure => {
                let report = Report::new(format!(
                    "a probe of {subject} failed: the device did not answer a test read or \
                     write"
                ))
                .advice(
                    "Check the device's cabling and its SMART status; ZED faults a device \
                     whose probes keep failing.",
                );
                out.extend(self.probe.observe(
                    now,
                    &subject,
                    Verdict::Holds(Severity::Warning),
                    report,
                ));
            }
            ZEventKind::StateChange => out.extend(self.state_change(now, &subject, z)),
            ZEventKind::Removed => {
                let report = Report::new(format!("{subject} was removed from the system"))
                    .with("vdev_state", "REMOVED");
                out.extend(self.state.observe(
                    now,
                    &subject,
                    Verdict::Holds(Severity::Critical),
                    report,
                ));
            }
            ZEventKind::History => {
                let h = z.history.as_ref();
                if h.and_then(|h| h.internal_name.as_deref()) == Some("scan done")
                    && let Some(scan) = self.scans.get_mut(&pool)
                {
                    scan.permanent = h
                        .and_then(|h| h.internal_str.as_deref())
                        .and_then(|s| s.strip_prefix("errors="))
                        .and_then(|n| n.trim().parse().ok());
                }
            }
            ZEventKind::ScrubFinish | ZEventKind::ResilverFinish => {
                let scan = self.scans.remove(&pool).unwrap_or(Scan {
                    resilver: z.kind() == ZEventKind::ResilverFinish,
                    ..Scan::default()
                });
                let (verdict, report) = scan_verdict(&pool, &scan);
                out.extend(self.scan_findings.observe(now, &pool, verdict, report));
            }
            ZEventKind::ScrubAbort => {
                self.scans.remove(&pool);
                let report = Report::new(format!(
                    "the scrub of {pool} was cancelled before it finished: the pool's data \
                     was not all checked"
                ))
                .advice(format!(
                    "Run `zpool scrub {pool}` again when the load allows."
                ));
                out.extend(self.scan_findings.observe(
                    now,
                    &pool,
                    Verdict::Holds(Severity::Warning),
                    report,
                ));
            }
            ZEventKind::PoolExport | ZEventKind::PoolDestroy => {
                let what = if z.kind() == ZEventKind::PoolExport {
                    "exported"
                } else {
                    "destroyed"
                };
                let report = Report::new(format!("pool {pool} was {what}"));
                out.extend(
                    self.pool
                        .observe(now, &pool, Verdict::Holds(Severity::Info), report),
                );
                self.scans.remove(&pool);
            }
            ZEventKind::PoolImport | ZEventKind::PoolCreate => {
                let what = if z.kind() == ZEventKind::PoolImport {
                    "imported"
                } else {
                    "created"
                };
                let report = Report::new(format!("pool {pool} was {what}"));
                out.extend(self.pool.observe(now, &pool, Verdict::Clear, report));
            }
            k @ (ZEventKind::VdevAdd
            | ZEventKind::VdevRemove
            | ZEventKind::VdevAttach
            | ZEventKind::VdevSpare) => {
                let what = match k {
                    ZEventKind::VdevAdd => "a vdev was added to",
                    ZEventKind::VdevRemove => "a device was removed from",
                    ZEventKind::VdevAttach => "a device was attached in",
                    _ => "a spare was activated in",
                };
                let severity = if k == ZEventKind::VdevSpare {
                    Severity::Warning
                } else {
                    Severity::Info
                };
                let dev = z.device().map(|d| format!(" ({d})")).unwrap_or_default();
                let report = Report::new(format!("{what} {pool}{dev}"));
                self.notices.insert(subject.clone(), now);
                out.extend(
                    self.change
                        .observe(now, &subject, Verdict::Holds(severity), report),
                );
            }
            _ => {}
        }
        out
    }

    fn started(&self) -> Option<String> {
        Some(format!(
            "judging kernel events as they come (bursts clear after {}s quiet)",
            self.config.quiet_after.as_secs()
        ))
    }
}

impl Zevents {
    fn state_change(&mut self, now: f64, subject: &str, z: &ZEvent) -> Option<Event> {
        let v = z.vdev.as_ref()?;
        let state = v.state?;
        let name = vdev_state_name(state);
        let was = v
            .previous_state
            .map(|s| format!(" (was {})", vdev_state_name(s)))
            .unwrap_or_default();
        let verdict = match state {
            VDEV_STATE_HEALTHY => Verdict::Clear,
            VDEV_STATE_DEGRADED | 2 => Verdict::Holds(Severity::Warning),
            // CLOSED is a device being closed for an export or a reopen, not a fault.
            0 | 1 => return None,
            _ => Verdict::Holds(Severity::Critical),
        };
        let mut report = Report::new(format!("{subject} is {name}{was}")).with("vdev_state", name);
        if let Some(p) = v.previous_state {
            report = report.with("vdev_laststate", vdev_state_name(p));
        }
        if matches!(verdict, Verdict::Holds(_)) {
            let pool = z.pool.as_deref().unwrap_or("POOL");
            let dev = z.device().unwrap_or("DEVICE");
            report = report.advice(match state {
                2 => format!(
                    "It was taken offline; `zpool online {pool} {dev}` brings it back (a \
                     resilver then copies what it missed)."
                ),
                _ => format!(
                    "The pool has lost this device's redundancy: check the disk (SMART, \
                     cabling), then `zpool replace {pool} {dev}` or `zpool clear {pool} {dev}` \
                     once it is sound."
                ),
            });
        }
        self.state.observe(now, subject, verdict, report)
    }

    /// Clears bursts quiet for `quiet_after` and notices older than `notice_hold`.
    fn tick(&mut self, now: f64) -> Vec<Event> {
        let quiet = self.config.quiet_after.as_secs_f64();
        let hold = self.config.notice_hold.as_secs_f64();
        let mut out = Vec::new();
        for (bursts, findings) in [
            (&mut self.errors, &mut self.error_findings),
            (&mut self.slow, &mut self.slow_findings),
        ] {
            let done: Vec<String> = bursts
                .iter()
                .filter(|(_, b)| now - b.last >= quiet)
                .map(|(s, _)| s.clone())
                .collect();
            for subject in done {
                let b = bursts.remove(&subject).unwrap_or_default();
                let report = Report::new(format!(
                    "{subject}: no new report for {}s after {} in all",
                    quiet as u64, b.count
                ))
                .with("count", b.count);
                out.extend(findings.observe(now, &subject, Verdict::Clear, report));
            }
        }
        let probes: Vec<String> = self.probe.raised_subjects().map(str::to_owned).collect();
        for subject in probes {
            let report = Report::new(format!("{subject}: no failed probe since"));
            out.extend(self.probe.observe(now, &subject, Verdict::Clear, report));
        }
        let old: Vec<String> = self
            .notices
            .iter()
            .filter(|(_, at)| now - **at >= hold)
            .map(|(s, _)| s.clone())
            .collect();
        for subject in old {
            self.notices.remove(&subject);
            let report = Report::new(format!("{subject}: change noted"));
            out.extend(self.change.observe(now, &subject, Verdict::Clear, report));
        }
        out
    }
}

/// Adds one report to `subject`'s burst.
fn record<'a>(
    bursts: &'a mut BTreeMap<String, Burst>,
    subject: &str,
    now: f64,
    kind: &'static str,
    severity: Severity,
    z: &ZEvent,
) -> &'a Burst {
    let b = bursts.entry(subject.to_owned()).or_insert_with(|| Burst {
        first: now,
        ..Burst::default()
    });
    b.count += 1;
    b.last = now;
    b.worst = b.worst.max(severity);
    *b.kinds.entry(kind).or_default() += 1;
    if let Some(ns) = z.io_latency_ns() {
        b.max_ms = b.max_ms.max(ns as f64 / 1e6);
    }
    if let Some(zio) = &z.zio {
        if let Some(file) = &zio.file
            && b.files.len() < FILES_KEPT
            && !b.files.contains(file)
        {
            b.files.push(file.clone());
        }
        let mut at = String::new();
        if let (Some(os), Some(obj)) = (zio.objset, zio.object) {
            at = format!("objset {os}, object {obj}");
        }
        if let Some(o) = zio.offset {
            if !at.is_empty() {
                at.push_str(", ");
            }
            at.push_str(&format!("offset {o:#x}"));
        }
        b.last_where = at;
    }
    b
}

fn kinds_text(kinds: &BTreeMap<&'static str, u64>) -> String {
    kinds
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Events a minute over the burst so far (the first alone: none).
fn per_minute(b: &Burst) -> Option<f64> {
    let span = b.last - b.first;
    (span > 0.0 && b.count > 1).then(|| sdk::stats::round2(b.count as f64 * 60.0 / span))
}

fn error_report(subject: &str, b: &Burst) -> Report {
    let rate = per_minute(b)
        .map(|r| format!(" ({r}/min)"))
        .unwrap_or_default();
    let at = if b.last_where.is_empty() {
        String::new()
    } else {
        format!("; last at {}", b.last_where)
    };
    let files = if b.files.is_empty() {
        String::new()
    } else {
        format!(" in {}", b.files.join(", "))
    };
    let mut r = Report::new(format!(
        "{subject}: {} error report(s){rate}{files}: {}{at}",
        b.count,
        kinds_text(&b.kinds)
    ))
    .with("count", b.count)
    .with("files", (!b.files.is_empty()).then(|| b.files.join("\n")))
    .with("per_min", per_minute(b))
    .with("first", b.first)
    .with("last", b.last);
    for (k, n) in &b.kinds {
        r = r.with(*k, *n);
    }
    let pool = subject.split('/').next().unwrap_or(subject);
    r.advice(if b.kinds.contains_key("data") {
        let which = if b.files.is_empty() {
            format!("`zpool status -v {pool}` names the files")
        } else {
            format!("in {}", b.files.join(", "))
        };
        format!(
            "Data was lost ({which}): no copy could repair it. Restore the files from a \
             backup, then `zpool clear {pool}`."
        )
    } else {
        format!(
            "The pool repaired what it could. Check the device (SMART, cabling); if the errors \
             keep coming, replace it (`zpool replace {pool} …`)."
        )
    })
}

fn slow_report(subject: &str, b: &Burst) -> Report {
    let rate = per_minute(b)
        .map(|r| format!(", {r}/min"))
        .unwrap_or_default();
    // A deadman report is posted while its I/O is still outstanding, so it gives no
    // latency (`ZEvent::io_latency_ns`): only completed slow I/O does.
    let longest = if b.max_ms > 0.0 {
        format!(", the longest {:.0} ms", b.max_ms)
    } else {
        String::new()
    };
    let stuck = if b.kinds.contains_key("deadman") {
        " (deadman: an I/O outstanding past zfs_deadman_ziotime_ms)"
    } else {
        ""
    };
    Report::new(format!(
        "{subject}: {} slow I/O report(s){rate}{longest}: {}{stuck}",
        b.count,
        kinds_text(&b.kinds)
    ))
    .with("count", b.count)
    .with("per_min", per_minute(b))
    .with(
        "max_ms",
        (b.max_ms > 0.0).then(|| sdk::stats::round2(b.max_ms)),
    )
    .advice(
        "I/O this slow stalls every writer of the pool: check the device (SMART, its queue in \
         `zpool iostat -l`), and whether it is saturated.",
    )
}

/// What a finished scan concludes.
fn scan_verdict(pool: &str, scan: &Scan) -> (Verdict, Report) {
    let what = if scan.resilver { "resilver" } else { "scrub" };
    let mut reports: BTreeMap<&'static str, u64> = BTreeMap::new();
    for kinds in scan.reports.values() {
        for (k, n) in kinds {
            *reports.entry(k).or_default() += n;
        }
    }
    let devices: Vec<String> = scan
        .reports
        .iter()
        .map(|(d, k)| format!("{d}: {}", kinds_text(k)))
        .collect();
    let permanent = scan.permanent.unwrap_or(0);
    let data = reports.get("data").copied().unwrap_or(0);
    let any = reports.values().sum::<u64>();
    let mut report = Report::new(String::new())
        .with("scan", what)
        .with("permanent_errors", scan.permanent)
        .with("reports", any);
    for (k, n) in &reports {
        report = report.with(*k, *n);
    }
    let on = if devices.is_empty() {
        String::new()
    } else {
        format!(" ({})", devices.join("; "))
    };
    let verdict = if permanent > 0 || data > 0 {
        report.summary = format!(
            "the {what} of {pool} finished with unrepairable errors: {permanent} in the \
             error log{on}"
        );
        report = report.advice(format!(
            "Data was lost. `zpool status -v {pool}` names the files: restore them from a \
             backup. Check every device with errors before trusting the pool's redundancy."
        ));
        Verdict::Holds(Severity::Critical)
    } else if any > 0 && scan.resilver {
        report.summary = format!("the resilver of {pool} met errors{on}");
        report = report.advice(format!(
            "A resilver reads the only good copy of what it rebuilds: check the devices that \
             reported errors and run `zpool scrub {pool}`."
        ));
        Verdict::Holds(Severity::Critical)
    } else if any > 0 {
        report.summary = format!("the scrub of {pool} repaired errors{on}");
        report = report.advice(
            "The pool repaired them from its redundancy; a device that keeps reporting errors \
             is failing: check it and replace it.",
        );
        Verdict::Holds(Severity::Warning)
    } else {
        report.summary = format!("the {what} of {pool} finished without errors");
        Verdict::Clear
    };
    (verdict, report)
}

#[cfg(test)]
mod tests;
