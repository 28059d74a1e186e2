//! A zpulse check to start from: **a disk that is busy most of the time**.
//!
//! A disk whose `%util` stays near 100% is the bottleneck of its pool: requests queue behind
//! it. On a spinning disk that moves little data while busy, the load is seek-bound random
//! I/O. The check raises a finding per disk when `%util` reaches `busy_pct` for `raise_after`
//! samples in a row, updates it when the figures change materially, and clears it once
//! `%util` falls to `clear_pct` (and the finding has been up for `min_hold`).
//!
//! Config: `[plugins.template]` in zpulse.toml, every key optional, declared once below
//! with `settings!` (docs/plugin-authoring.md walks through it).

use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sample::DiskRates;
use zpulse_proto::sdk::settings::Rule;
use zpulse_proto::sdk::{self, Check, Event, Findings, Report, Rules, Threshold, Verdict};

// The `[plugins.template]` table, each setting once: its type, default, rules and doc line.
// The SDK refuses a table that breaks a rule before `build` runs, naming the key.
zpulse_proto::settings! {
    /// The `[plugins.template]` table.
    pub struct Config {
        /// raise at this %util
        busy_pct: f64 = 90.0, [Rule::Pct];
        /// clear at or below this %util (hysteresis)
        clear_pct: f64 = 70.0, [Rule::Pct, Rule::NotAbove("busy_pct")];
        /// critical from this %util
        critical_pct: f64 = 98.0, [Rule::Pct, Rule::NotBelow("busy_pct")];
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
    config: Config,
}

impl Check for DiskBusy {
    const NAME: &'static str = "template";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Config = Config;

    // Pure: no threads, no files. `check-config` runs it too, to check a table.
    fn build(config: Config) -> Result<Self, sdk::Error> {
        let threshold =
            Threshold::above(config.busy_pct, config.clear_pct)?.critical(config.critical_pct)?;
        let rules = Rules {
            raise_after: config.raise_after,
            min_hold: config.min_hold,
            material_change: 0.2,
        };
        let findings = Findings::new(Self::NAME, rules);
        Ok(DiskBusy {
            threshold,
            findings,
            config,
        })
    }

    fn started(&self) -> Option<String> {
        let disks = match self.config.disks.is_empty() {
            true => "every whole disk".to_string(),
            false => self.config.disks.join(", "),
        };
        Some(format!(
            "watching {disks} at {}% busy",
            self.config.busy_pct
        ))
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        let mut events = Vec::new();
        for disk in sample
            .disks
            .iter()
            .filter(|d| watched(&self.config.disks, d))
        {
            let verdict = self.threshold.verdict(disk.util);
            let report = report(disk, verdict);
            events.extend(
                self.findings
                    .observe(sample.end, &disk.name, verdict, report),
            );
        }
        // A disk that vanished (pulled, or the pool exported) is no longer busy.
        events.extend(self.findings.clear_unseen(sample.end, |name| {
            Report::new(format!("{name} is no longer reported by the kernel"))
        }));
        events
    }

    /// `zpulse report`: each watched disk's mean `%util` over the whole window.
    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        let disks = window
            .whole
            .disks
            .iter()
            .filter(|d| watched(&self.config.disks, d));
        disks
            .map(|d| {
                let rating = match self.threshold.verdict(d.util) {
                    Verdict::Clear => Rating::Ok,
                    _ => Rating::Warning,
                };
                let summary = format!("{} was {:.0}% busy over the window", d.name, d.util);
                Section::new(rating, format!("{} busy", d.name), summary)
                    .subject(d.name.clone())
                    .figure("util_pct", "%util", round(d.util), "%")
            })
            .collect()
    }
}

/// The disks named in the config, or every whole disk: partitions repeat their disk's
/// figures, and loop, RAM, floppy and optical devices are not what a pool is made of.
fn watched(names: &[String], disk: &DiskRates) -> bool {
    if names.is_empty() {
        let virtual_device = zpulse_proto::snapshot::is_virtual_disk(&disk.name);
        disk.whole_disk.is_none() && !virtual_device
    } else {
        names.contains(&disk.name)
    }
}

/// The event text: one sentence with the figures, advice when there is some to give.
fn report(disk: &DiskRates, verdict: Verdict) -> Report {
    let mb_s = disk.bytes_per_s() / 1e6;
    let iops = disk.iops();
    let summary = match verdict {
        Verdict::Clear => format!("{} is busy {:.0}% of the time again", disk.name, disk.util),
        _ => format!(
            "{} was busy {:.0}% of the interval while moving {mb_s:.1} MB/s in {iops:.0} IOPS",
            disk.name, disk.util
        ),
    };
    let mut report = Report::new(summary)
        .with("util_pct", round(disk.util))
        .with("mb_per_s", round(mb_s))
        .with("iops", round(iops))
        .with("rotational", disk.rotational);
    if let Some(await_ms) = disk.await_ms {
        report = report.with("await_ms", round(await_ms));
    }
    let seek_bound = disk.rotational == Some(true) && mb_s < 20.0;
    if verdict != Verdict::Clear && seek_bound {
        report = report.advice(
            "A spinning disk busy while moving little data is doing random I/O: a special \
             vdev for metadata and small blocks, or more mirrors, spread the seeks",
        );
    }
    report
}

/// Two decimals: enough for people, and stable figures don't look like changes.
fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

zpulse_proto::export_plugin!(DiskBusy);

#[cfg(test)]
mod tests {
    use super::*;
    use zpulse_proto::sdk::testing::TestHost;
    use zpulse_proto::sdk::{State, Value};

    fn sample(end: f64, util: f64) -> Sample {
        Sample {
            end,
            interval: 10.0,
            disks: vec![DiskRates {
                name: "sda".into(),
                rotational: Some(true),
                r_s: 150.0,
                rkb_s: 600.0,
                util,
                ..DiskRates::default()
            }],
            ..Sample::default()
        }
    }

    fn config(pairs: &[(&str, Value)]) -> Vec<u8> {
        let table: std::collections::BTreeMap<String, Value> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        sdk::config::encode(&table)
    }

    #[test]
    fn raises_after_three_busy_samples_and_clears_after_the_hold() {
        let host = TestHost::new();
        let samples: Vec<Sample> = [95.0, 96.0, 97.0, 99.0, 50.0, 50.0]
            .iter()
            .zip([0.0, 10.0, 20.0, 30.0, 40.0, 400.0])
            .map(|(&u, t)| sample(t, u))
            .collect();
        let events = host.run::<DiskBusy>(&[], &samples).unwrap();
        let states: Vec<_> = events
            .iter()
            .map(|e| (e.state.unwrap(), e.severity))
            .collect();
        use zpulse_proto::sdk::Severity::*;
        assert_eq!(
            states,
            [
                (State::Raised, Warning),
                (State::Updated, Critical),
                (State::Cleared, Critical)
            ]
        );
        assert!(
            events[0]
                .summary
                .starts_with("sda was busy 97% of the interval")
        );
        assert!(
            events[0]
                .advice
                .as_deref()
                .unwrap()
                .contains("special vdev")
        );
    }

    #[test]
    fn a_clear_level_above_the_raise_level_is_refused() {
        let host = TestHost::new();
        let cfg = config(&[
            ("busy_pct", Value::UInt(50)),
            ("clear_pct", Value::UInt(60)),
        ]);
        let err = host.run::<DiskBusy>(&cfg, &[]).unwrap_err();
        assert!(
            err.contains("clear_pct: must be at most busy_pct (50), not 60"),
            "{err}"
        );
        let err = host
            .run::<DiskBusy>(&config(&[("bsy_pct", Value::UInt(1))]), &[])
            .unwrap_err();
        assert!(err.contains("unknown field `bsy_pct`"), "{err}");
    }

    /// The declared defaults are what an empty table gives, and each rule refuses with its
    /// key (the agent shows it at that key's line).
    #[test]
    fn settings_default_and_refuse_by_their_rules() {
        use zpulse_proto::sdk::settings::Settings;
        assert_eq!(Config::default().busy_pct, 90.0);
        assert_eq!(Config::default().check_rules(), Ok(()));
        let host = TestHost::new();
        let err = host
            .run::<DiskBusy>(&config(&[("critical_pct", Value::UInt(80))]), &[])
            .unwrap_err();
        assert!(
            err.contains("critical_pct: must be at least busy_pct (90), not 80"),
            "{err}"
        );
    }

    /// A disk's counters over six intervals of 10 s (busy 9.5 s of each, then 5 s): %util is
    /// 95% (raise after three) and then 50% (clear once the 5-minute hold is over).
    #[test]
    fn a_series_built_from_counters_raises_and_clears() {
        use zpulse_proto::sdk::testing::{DiskLoad, SampleBuilder};
        let at = |end: f64, busy_ms: u64| {
            SampleBuilder::new(end, 10.0)
                .disk(
                    "sdb",
                    true,
                    DiskLoad::requests(1_000, 0, 4, 9).busy_ms(busy_ms),
                )
                .build()
        };
        let samples = [
            at(10.0, 9_500),
            at(20.0, 9_500),
            at(30.0, 9_500),
            at(40.0, 5_000),
            at(400.0, 5_000),
        ];
        let events = TestHost::new().run::<DiskBusy>(&[], &samples).unwrap();
        let states: Vec<_> = events.iter().map(|e| e.state.unwrap()).collect();
        assert_eq!(states, [State::Raised, State::Cleared]);
        assert!(
            events[0].summary.starts_with("sdb was busy 95%"),
            "{}",
            events[0].summary
        );
    }

    #[test]
    fn the_report_rates_each_disk_over_the_whole_window() {
        let window = ReportWindow {
            whole: sample(100.0, 93.0),
            ..ReportWindow::default()
        };
        let (_, sections) = TestHost::new()
            .report::<DiskBusy>(&[], &[], &window)
            .unwrap();
        assert_eq!(sections.len(), 1);
        assert_eq!(sections[0].rating, Rating::Warning);
        assert_eq!(sections[0].get("util_pct"), Some(93.0));
    }
}
