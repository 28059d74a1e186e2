//! The three tests a check needs: its settings, a series it should find something in (built
//! from kernel counters, and recorded on a real machine), and its report.

use super::*;
use zpulse_proto::report::Rating;
use zpulse_proto::sdk::testing::{DiskLoad, SampleBuilder, TestHost, recorded_samples};
use zpulse_proto::sdk::{State, Value, config};

/// A `[plugins.template]` table, as the agent passes it.
fn table(pairs: &[(&str, Value)]) -> Vec<u8> {
    let table: std::collections::BTreeMap<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    config::encode(&table)
}

/// Each declared rule refuses with its key (the agent shows it at that key's line), and a
/// misspelt key is refused.
#[test]
fn settings_refuse_by_their_rules() {
    let host = TestHost::new();
    let cfg = table(&[("busy_pct", 50.into()), ("clear_pct", 60.into())]);
    let err = host.run::<DiskBusy>(&cfg, &[]).unwrap_err();
    assert!(
        err.contains("clear_pct: must be at most busy_pct (50), not 60"),
        "{err}"
    );
    let err = host
        .run::<DiskBusy>(&table(&[("bsy_pct", 1.into())]), &[])
        .unwrap_err();
    assert!(err.contains("unknown field `bsy_pct`"), "{err}");
}

/// A disk busy 9.5 s of each 10 s interval (95% > 90%) three times raises; busy 5 s (50% ≤
/// 70%) clears, once the 5-minute hold is over.
#[test]
fn a_series_built_from_counters_raises_and_clears() {
    let at = |end: f64, busy_ms: u64| {
        let load = DiskLoad::requests(1_000, 0, 4, 9).busy_ms(busy_ms);
        SampleBuilder::new(end, 10.0)
            .disk("sdb", true, load)
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

/// `zpulse replay tests/fixtures/lab/seed/after --format json` (`seed-after.jsonl`, kept
/// current by the workspace's tests/plugin_build.rs): the lab's special mirror sdc + sdd
/// under a metadata storm. Its `proc/diskstats` give sdd's busy milliseconds (the 10th
/// counter) 83968, 115840, 131156, 146352 at captures taken 164.64 s, 96.03 s and 92.46 s
/// apart: 19.4%, 15.9%, 16.4% busy; sdc's (89176, 124880, 141236, 154596) 21.7%, 17.0%,
/// 14.4%. At 15% sdd alone is busy three samples in a row.
#[test]
fn a_recorded_series_raises_for_the_disk_busy_throughout() {
    let samples = recorded_samples(include_str!("../tests/seed-after.jsonl")).unwrap();
    assert_eq!(samples.len(), 3);
    let cfg = table(&[("busy_pct", 15.into()), ("clear_pct", 10.into())]);
    let events = TestHost::new().run::<DiskBusy>(&cfg, &samples).unwrap();
    let raised: Vec<_> = events
        .iter()
        .map(|e| (e.subject.as_str(), e.state))
        .collect();
    assert_eq!(raised, [("sdd", Some(State::Raised))]);
    let busy_ms = (146_352 - 131_156) as f64;
    let interval_s = 1_796_133_044.661_409_4 - 1_796_132_952.197_638;
    let util = events[0]
        .data
        .get("util_pct")
        .and_then(Value::as_f64)
        .unwrap();
    assert!((util - busy_ms / interval_s / 10.0).abs() < 0.01, "{util}");
}

/// Each disk of the window, rated by the alert thresholds, with its figures.
#[test]
fn the_report_rates_each_disk_over_the_window() {
    let whole = SampleBuilder::new(100.0, 100.0)
        .disk("sda", true, DiskLoad::requests(10, 0, 4, 1).busy_ms(93_000))
        .disk("sdb", true, DiskLoad::requests(10, 0, 4, 1).busy_ms(1_000))
        .build();
    let window = ReportWindow::new(whole);
    let (_, sections) = TestHost::new()
        .report::<DiskBusy>(&[], &[], &window)
        .unwrap();
    let rated: Vec<_> = sections
        .iter()
        .map(|s| (s.title.as_str(), s.rating))
        .collect();
    assert_eq!(rated, [("sda", Rating::Warning), ("sdb", Rating::Ok)]);
    assert_eq!(sections[0].get("util_pct"), Some(93.0));
}
