//! The check replayed over real captures recorded in the OpenZFS 2.1 lab VM
//! (`tests/lab/scenarios/checks.sh`, `vdevs.sh`, the lab's `basic`). Expected figures are
//! computed here from the raw capture files: arcstats, `/proc/diskstats`, the module
//! parameters and `zpool status`.

use zpulse_check_l2arc_value::{Config, L2arcValue};
use zpulse_proto::Event;
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{Severity, State, Value};
use zpulse_tests::raw::*;

/// Each event with the index of the capture that ended its sample.
fn run_indexed(rels: &[&str]) -> Vec<(usize, Event)> {
    let snaps = snapshots(rels);
    let mut check = L2arcValue::new(Config::default()).unwrap();
    samples(&snaps)
        .iter()
        .enumerate()
        .flat_map(|(i, s)| check.observe(s).into_iter().map(move |e| (i + 1, e)))
        .collect()
}

/// `storm`: a metadata storm the small ARC still answers 99.7% of the time, beside an L2ARC
/// (sdf) that is fed but never hit: negative, because the ARC misses too little for any
/// L2ARC to matter (the seed's argument).
#[test]
fn storm_l2arc_that_never_hits_is_negative() {
    let dirs = dirs(&["checks/storm"]);
    let indexed = run_indexed(&["checks/storm"]);
    assert!(!indexed.is_empty());
    for (_, e) in &indexed {
        assert_eq!(
            (e.check.as_str(), e.subject.as_str(), e.severity),
            ("l2arc-value", "storm/cache/sdf", Severity::Warning)
        );
        assert_eq!(
            e.data["verdict"],
            Value::Str("negative".into()),
            "{}",
            e.summary
        );
    }
    assert_eq!(indexed[0].1.state, Some(State::Raised));
    // The cache device, from `zpool status` of the same pool.
    let status =
        std::fs::read_to_string(lab("checks/scrub/000/cli/zpool-status.storm.txt")).unwrap();
    let cache = zpool_status(&status)
        .into_iter()
        .find(|v| v.section == "cache")
        .unwrap();
    assert_eq!(format!("storm/cache/{}", cache.name), "storm/cache/sdf");

    // Every event's figures against raw arcstats over the window it covers (the window is
    // 15 minutes: from the first capture to the one that ended its sample).
    for (at, e) in &indexed {
        let (a0, a1) = (arcstats(&dirs[0]), arcstats(&dirs[*at]));
        assert!(
            !a1.contains_key("iohits"),
            "OpenZFS 2.1: hits + misses are all reads"
        );
        let d = |k: &str| (a1[k] - a0[k]) as f64;
        let secs = captured_at(&dirs[*at]) - captured_at(&dirs[0]);
        let reads = d("hits") + d("misses");
        assert_eq!(num(e, "arc_reads"), reads);
        assert!(close(
            num(e, "arc_hit_pct"),
            d("hits") / reads * 100.0,
            0.01
        ));
        assert_eq!(d("l2_hits"), 0.0);
        assert_eq!(num(e, "l2_share_of_reads_pct"), 0.0);
        assert_eq!(num(e, "l2_hit_pct"), 0.0);
        let max_share = d("misses") / reads * 100.0;
        assert!(max_share < 2.0);
        assert!(close(num(e, "max_share_of_reads_pct"), max_share, 0.01));
        assert!(d("l2_write_bytes") > 0.0, "fed");
        assert!(close(
            num(e, "l2_write_bytes_per_s"),
            d("l2_write_bytes") / secs,
            0.01
        ));
        assert_eq!(num(e, "l2_hdr_bytes"), a1["l2_hdr_size"] as f64);
        assert_eq!(num(e, "rebuild_success"), a1["l2_rebuild_success"] as f64);
        assert_eq!(
            e.data["rebuild_enabled"],
            Value::Bool(tunable(&dirs[*at], "l2arc_rebuild_enabled") == Some(1))
        );
        // The device's busy from raw diskstats (io_ms).
        let (s0, s1) = (diskstats(&dirs[0], "sdf"), diskstats(&dirs[*at], "sdf"));
        let util = (s1[11] - s0[11]) as f64 / (secs * 1000.0) * 100.0;
        assert!(
            close(num(e, "device_util_pct"), util, 0.02),
            "{} vs {util}",
            num(e, "device_util_pct")
        );
        let advice = e.advice.as_deref().unwrap();
        assert!(
            advice.contains(&format!("the ARC misses only {max_share:.2}% of reads")),
            "{advice}"
        );
    }
    let last = &indexed.last().unwrap().1;
    assert!(
        last.summary.starts_with("storm/cache/sdf served 0 of "),
        "{}",
        last.summary
    );
    assert!(last.summary.ends_with(": negative"));
}

#[test]
fn no_verdict_without_an_l2arc_or_with_too_little_data() {
    // basic has an L2ARC but one sample; the others have none.
    for rels in [
        &["basic"][..],
        &["checks/quiet"],
        &["checks/fill"],
        &["vdevs/deg"],
        &["vdevs/rz"],
    ] {
        assert!(run_indexed(rels).is_empty(), "{rels:?}");
    }
}

#[test]
fn the_plugin_emits_valid_events_through_the_abi() {
    let snaps = snapshots(&["checks/storm"]);
    let host = TestHost::new();
    let events = host.run::<L2arcValue>(&[], &samples(&snaps)).unwrap();
    assert!(host.rejected().is_empty(), "{:?}", host.rejected());
    let direct: Vec<Event> = run_indexed(&["checks/storm"])
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    assert_eq!(events, direct);
}
