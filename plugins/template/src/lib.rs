//! A zpulse check to start from: **a disk that is busy most of the time**.
//!
//! A disk whose `%util` stays near 100% is the bottleneck of its pool: requests queue behind
//! it. On a spinning disk that moves little data while busy, the load is seek-bound random
//! I/O. The check raises a finding per disk when `%util` reaches `busy_pct` for `raise_after`
//! samples in a row, updates it when the figures change materially, and clears it once
//! `%util` falls to `clear_pct` (and the finding has been up for `min_hold`).
//!
//! Config (`[plugins.template]` in zpulse.toml), every key optional:
//!
//! ```toml
//! [plugins.template]
//! busy_pct = 90       # raise at this %util
//! clear_pct = 70      # clear at or below this %util (hysteresis)
//! critical_pct = 98   # critical from this %util
//! raise_after = 3     # consecutive samples before raising
//! min_hold = "5m"     # a finding stays up at least this long
//! disks = []          # only these disks (kernel names); empty = every whole disk
//! ```

use std::time::Duration;
use zpulse_proto::Sample;
use zpulse_proto::sample::DiskRates;
use zpulse_proto::sdk::{self, Findings, Host, Plugin, Report, Rules, Threshold, Verdict};
use zpulse_proto::serde::Deserialize;

/// The `[plugins.template]` table. `default` fills in missing keys; `deny_unknown_fields`
/// turns a misspelt key into an error that names it.
#[derive(Debug, Deserialize)]
#[serde(crate = "zpulse_proto::serde", default, deny_unknown_fields)]
pub struct Config {
    pub busy_pct: f64,
    pub clear_pct: f64,
    pub critical_pct: f64,
    pub raise_after: u32,
    #[serde(with = "sdk::config::duration")]
    pub min_hold: Duration,
    pub disks: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            busy_pct: 90.0,
            clear_pct: 70.0,
            critical_pct: 98.0,
            raise_after: 3,
            min_hold: Duration::from_secs(300),
            disks: Vec::new(),
        }
    }
}

pub struct DiskBusy {
    threshold: Threshold,
    findings: Findings,
    disks: Vec<String>,
}

impl Plugin for DiskBusy {
    const NAME: &'static str = "template";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Config = Config;

    fn new(config: Config, host: &Host) -> Result<Self, sdk::Error> {
        // Refuse a config that makes no sense, with a message that says why.
        let threshold =
            Threshold::above(config.busy_pct, config.clear_pct)?.critical(config.critical_pct)?;
        host.info(&format!(
            "watching {} at {}% busy",
            if config.disks.is_empty() {
                "every whole disk".to_string()
            } else {
                config.disks.join(", ")
            },
            config.busy_pct
        ));
        Ok(DiskBusy {
            threshold,
            findings: Findings::new(
                Self::NAME,
                Rules {
                    raise_after: config.raise_after,
                    min_hold: config.min_hold,
                    material_change: 0.2,
                },
            ),
            disks: config.disks,
        })
    }

    fn on_sample(&mut self, sample: &Sample, host: &Host) -> Result<(), sdk::Error> {
        for disk in sample.disks.iter().filter(|d| watched(&self.disks, d)) {
            let verdict = self.threshold.verdict(disk.util);
            let report = report(disk, verdict);
            if let Some(event) = self
                .findings
                .observe(sample.end, &disk.name, verdict, report)
            {
                host.emit(&event)?;
            }
        }
        // A disk that vanished (pulled, or the pool exported) is no longer busy.
        for event in self.findings.clear_unseen(sample.end, |name| {
            Report::new(format!("{name} is no longer reported by the kernel"))
        }) {
            host.emit(&event)?;
        }
        Ok(())
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
        assert!(err.contains("flap"), "{err}");
        let err = host
            .run::<DiskBusy>(&config(&[("bsy_pct", Value::UInt(1))]), &[])
            .unwrap_err();
        assert!(err.contains("unknown field `bsy_pct`"), "{err}");
    }
}
