//! A zpulse check to start from: **a disk that is busy most of the time**.
//!
//! A disk whose `%util` stays high is the bottleneck of its pool: requests queue behind it.
//! The check raises a finding per disk when `%util` reaches `busy_pct` for `raise_after`
//! samples in a row, and clears it once `%util` falls to `clear_pct` and the finding has been
//! up for `min_hold`. `zpulse report` gets each disk's `%util` over the window. The guide,
//! docs/plugin-authoring.md, walks through it.

use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{ReportWindow, Section};
use zpulse_proto::sample::DiskRates;
use zpulse_proto::sdk::section::{rating_of, section_of};
use zpulse_proto::sdk::settings::Rule;
use zpulse_proto::sdk::stats::round2;
use zpulse_proto::sdk::{self, Check, Event, Findings, Report, Rules, Threshold};

// The `[plugins.template]` table, each setting once: type, default, rules, doc line. The SDK
// refuses a table that breaks a rule, naming the key, before `build` runs.
zpulse_proto::settings! {
    /// The `[plugins.template]` table.
    pub struct Config {
        /// raise at this %util
        busy_pct: f64 = 90.0, [Rule::Pct];
        /// clear at or below this %util (hysteresis)
        clear_pct: f64 = 70.0, [Rule::Pct, Rule::NotAbove("busy_pct")];
        /// consecutive samples before raising
        raise_after: u32 = 3, [Rule::AtLeast(1.0)];
        /// a finding stays up at least this long
        #[serde(with = "sdk::config::duration")]
        min_hold: Duration = Duration::from_secs(300), [];
        /// only these disks (kernel names); empty = every whole disk
        disks: Vec<String> = Vec::new(), [];
    }
}

pub struct DiskBusy {
    threshold: Threshold,
    findings: Findings,
    disks: Vec<String>,
}

impl Check for DiskBusy {
    const NAME: &'static str = "template";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    // The parts of the sample it reads: the agent leaves the others out of its samples.
    const READS: u64 = zpulse_proto::abi::PART_DISK_RATES;
    type Config = Config;

    // Pure (no threads, no files): `check-config` runs it too, to check a table.
    fn build(c: Config) -> Result<Self, sdk::Error> {
        let rules = Rules {
            raise_after: c.raise_after,
            min_hold: c.min_hold,
            material_change: 0.2,
        };
        Ok(DiskBusy {
            threshold: Threshold::above(c.busy_pct, c.clear_pct)?,
            findings: Findings::new(Self::NAME, rules),
            disks: c.disks,
        })
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        let mut events = Vec::new();
        for disk in sample.disks.iter().filter(|d| watched(&self.disks, d)) {
            let verdict = self.threshold.verdict(disk.util);
            let report = || report(disk, "of the interval");
            let found = self
                .findings
                .observe_with(sample.end, &disk.name, verdict, report);
            events.extend(found);
        }
        // A disk that vanished (pulled, or its pool exported) is no longer busy.
        events.extend(self.findings.clear_unseen(sample.end, |name| {
            Report::new(format!("{name} is no longer reported by the kernel"))
        }));
        events
    }

    // `zpulse report`: each watched disk over the whole window, in the findings' words.
    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        let disks = window
            .whole
            .disks
            .iter()
            .filter(|d| watched(&self.disks, d));
        disks
            .map(|d| {
                let rating = rating_of(self.threshold.verdict(d.util));
                section_of(&report(d, "of the window"), rating, &d.name).subject(d.name.clone())
            })
            .collect()
    }
}

/// The disks the config names, or every whole disk with storage of its own.
fn watched(names: &[String], disk: &DiskRates) -> bool {
    (names.is_empty() && disk.is_storage()) || names.contains(&disk.name)
}

/// One sentence with the figures, and the figures themselves (two decimals: stable figures
/// don't look like changes).
fn report(disk: &DiskRates, span: &str) -> Report {
    let (util, mb_s) = (disk.util, disk.bytes_per_s() / 1e6);
    Report::new(format!(
        "{} was busy {util:.0}% {span} while moving {mb_s:.1} MB/s",
        disk.name
    ))
    .with("util_pct", round2(util))
    .with("mb_per_s", round2(mb_s))
}

zpulse_proto::export_plugin!(DiskBusy);

#[cfg(test)]
mod tests;
