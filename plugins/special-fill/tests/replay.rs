//! The check replayed over real captures recorded in the OpenZFS 2.1 lab VM
//! (`tests/lab/scenarios/checks.sh`, `vdevs.sh`, the lab's `basic`). Expected figures are
//! computed here from the captures: the decoded vdev space checked against `zpool list -vp`
//! where the capture has it, the tunables from the module-parameter files, and the layout
//! from `zpool status`.

use zpulse_check_special_fill::{Config, SpecialFill};
use zpulse_proto::Event;
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{Severity, State, Value};
use zpulse_proto::snapshot::VdevClass;
use zpulse_tests::raw::*;

fn run(rels: &[&str]) -> Vec<Event> {
    let snaps = snapshots(rels);
    let mut check = SpecialFill::new(Config::default()).unwrap();
    samples(&snaps)
        .iter()
        .flat_map(|s| check.observe(s))
        .collect()
}

/// (alloc, space) of one class, summed over its top-level vdevs, from the decoded config.
fn class_space(snap: &zpulse_proto::Snapshot, pool: &str, class: VdevClass) -> (u64, u64) {
    snap.pool(pool)
        .unwrap()
        .config
        .as_ref()
        .unwrap()
        .class(class)
        .map(|v| v.stats.as_ref().unwrap())
        .fold((0, 0), |(a, s), st| (a + st.alloc, s + st.space))
}

#[test]
fn fill_warns_before_the_reserve_from_the_growth_and_never_claims_an_end() {
    // Two 384 MiB loop devices in a special mirror, special_small_blocks=64k, 64 KiB blocks
    // written at ~6 MiB/s: the class fills to the reserve in under a minute, then stops
    // growing because small blocks go to the normal class.
    let rels = ["checks/fill", "checks/fill-end"];
    let dirs = dirs(&rels);
    let snaps = snapshots(&rels);
    assert_eq!(snaps.len(), 7);
    let reserve_pct = tunable(&dirs[0], "zfs_special_class_metadata_reserve_pct").unwrap();
    assert_eq!(reserve_pct, 25);
    let points: Vec<(f64, f64)> = dirs
        .iter()
        .zip(&snaps)
        .map(|(d, s)| {
            (
                captured_at(d),
                class_space(s, "fill", VdevClass::Special).0 as f64,
            )
        })
        .collect();
    let space = class_space(&snaps[6], "fill", VdevClass::Special).1 as f64;
    let reserve_alloc = space * (1.0 - reserve_pct as f64 / 100.0);

    let events = run(&rels);
    assert!(!events.is_empty());
    for e in &events {
        assert_eq!(
            (e.check.as_str(), e.subject.as_str()),
            ("special-fill", "fill/special")
        );
        assert_eq!(
            e.severity,
            Severity::Warning,
            "never critical: {}",
            e.summary
        );
        assert!(!e.data.contains_key("days_to_full"), "{}", e.summary);
    }

    // The check sees each sample's later capture, so its first point is capture 001; the
    // first finding comes with the third point (min_samples = 3), capture 003: still far
    // below the 75% level, but growing towards the reserve within seconds.
    let first = &events[0];
    assert_eq!(first.state, Some(State::Raised));
    let fit = &points[1..=3];
    let used = fit[2].1 / space * 100.0;
    assert!(used < 75.0, "{used}");
    assert!((num(first, "used_pct") - used).abs() < 0.1);
    let rate = slope(fit);
    let eta_s = (reserve_alloc - fit[2].1) / rate;
    let span = fit[2].0 - fit[0].0;
    assert!(
        eta_s > 0.0 && eta_s < 20.0 * span,
        "{eta_s} s from {span} s"
    );
    assert!(
        (num(first, "days_to_reserve") * 86_400.0 - eta_s).abs() / eta_s < 0.01,
        "{} vs {eta_s} s",
        num(first, "days_to_reserve") * 86_400.0
    );
    assert!(
        (num(first, "growth_bytes_per_day") - rate * 86_400.0).abs() / (rate * 86_400.0) < 0.01
    );
    assert!(
        first.summary.contains("reserve is reached in ~"),
        "{}",
        first.summary
    );

    // At the end: past the reserve, small blocks go to the normal class; the end of the class
    // is not projected from a growth that small blocks made.
    let last = events.last().unwrap();
    let end_alloc = points[6].1;
    assert!(end_alloc > reserve_alloc);
    assert_eq!(last.data["below_reserve"], Value::Bool(true));
    assert_eq!(num(last, "alloc_bytes"), end_alloc);
    assert_eq!(num(last, "free_bytes"), space - end_alloc);
    assert!((num(last, "used_pct") - end_alloc / space * 100.0).abs() < 0.1);
    assert!(
        last.summary
            .starts_with("fill/special (mirror-1: loop0, loop1) is 82% full")
            && last
                .summary
                .contains("small blocks now go to the normal class"),
        "{}",
        last.summary
    );
}

#[test]
fn a_single_disk_special_beside_a_mirror_is_critical() {
    for series in ["vdevs/deg", "vdevs/deg-zpulse"] {
        let events = run(&[series]);
        // Expected from the capture's own `zpool status` (deg/000 has the CLI views).
        let status =
            std::fs::read_to_string(lab("vdevs/deg/000/cli/zpool-status.deg.txt")).unwrap();
        let tops = zpool_status(&status);
        let special = tops.iter().find(|v| v.section == "special").unwrap();
        let normal = tops.iter().find(|v| v.section == "normal").unwrap();
        assert_eq!(
            (special.name.as_str(), special.tolerated_failures()),
            ("sdc", 0)
        );
        assert_eq!(normal.tolerated_failures(), 1);
        assert_eq!(events.len(), 1, "{series}: {events:?}");
        let e = &events[0];
        assert_eq!(
            (e.check.as_str(), e.subject.as_str(), e.state, e.severity),
            (
                "special-fill.redundancy",
                "deg/special",
                Some(State::Raised),
                Severity::Critical
            )
        );
        assert_eq!(e.data["vdev"], Value::Str(special.name.clone()));
        assert_eq!(
            num(e, "tolerated_failures"),
            special.tolerated_failures() as f64
        );
        assert_eq!(
            num(e, "normal_tolerated_failures"),
            normal.tolerated_failures() as f64
        );
        assert!(e.summary.contains("losing it loses the whole pool"));
    }
}

#[test]
fn a_dedup_mirror_beside_raidz2_is_critical_and_its_fill_matches_zpool_list() {
    let events = run(&["vdevs/rz"]);
    let dir = lab("vdevs/rz/001");
    let tops = zpool_status(&std::fs::read_to_string(dir.join("cli/zpool-status.rz.txt")).unwrap());
    let dedup = tops.iter().find(|v| v.section == "dedup").unwrap();
    let normal = tops.iter().find(|v| v.section == "normal").unwrap();
    assert_eq!(
        (dedup.tolerated_failures(), normal.tolerated_failures()),
        (1, 2)
    );
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (
            events[0].check.as_str(),
            events[0].subject.as_str(),
            events[0].severity
        ),
        ("special-fill.redundancy", "rz/dedup", Severity::Critical)
    );
    assert_eq!(num(&events[0], "tolerated_failures"), 1.0);
    assert_eq!(num(&events[0], "normal_tolerated_failures"), 2.0);
    // The dedup class is nearly empty: no fill finding. The decoded figures the check uses
    // are what `zpool list -vp` printed.
    let list = zpool_list(&std::fs::read_to_string(dir.join("cli/zpool-list-vp.rz.txt")).unwrap());
    let snap = &snapshots(&["vdevs/rz/001"])[0];
    let (alloc, space) = class_space(snap, "rz", VdevClass::Dedup);
    assert_eq!((alloc, space - alloc), list["mirror-1"]);
    assert!((alloc as f64) / (space as f64) < 0.01);
}

#[test]
fn healthy_pools_with_a_mirrored_special_say_nothing() {
    for rels in [&["checks/quiet"][..], &["basic"], &["checks/storm"]] {
        let events = run(rels);
        assert!(events.is_empty(), "{rels:?}: {events:?}");
    }
    // The quiet pool's special mirror really is nearly empty and as redundant as its data.
    let dir = &dirs(&["checks/quiet"])[3];
    let snap = &snapshots(&["checks/quiet"])[3];
    let (alloc, space) = class_space(snap, "quiet", VdevClass::Special);
    assert!((alloc as f64) / (space as f64) < 0.01, "{alloc} of {space}");
    assert_eq!(
        tunable(dir, "zfs_special_class_metadata_reserve_pct"),
        Some(25)
    );
    // basic's decoded special space is what zpool list printed.
    let list =
        zpool_list(&std::fs::read_to_string(lab("basic/001/cli/zpool-list-vp.tank.txt")).unwrap());
    let snap = &snapshots(&["basic/001"])[0];
    let (alloc, space) = class_space(snap, "tank", VdevClass::Special);
    assert_eq!((alloc, space - alloc), list["mirror-1"]);
}

#[test]
fn the_plugin_emits_valid_events_through_the_abi() {
    let snaps = snapshots(&["checks/fill", "checks/fill-end"]);
    let host = TestHost::new();
    let events = host.run::<SpecialFill>(&[], &samples(&snaps)).unwrap();
    assert!(host.rejected().is_empty(), "{:?}", host.rejected());
    assert_eq!(events, run(&["checks/fill", "checks/fill-end"]));
}
