//! The check replayed over real captures from the OpenZFS 2.1 lab VM. Expected states,
//! counters, scan results and fill levels are read from each capture's own `cli/` files
//! (`zpool status -p`, `zpool get -Hp`), written by the lab's capture.sh at the same moment.

use zpulse_check_pool_health::{Config, PoolHealth};
use zpulse_proto::Event;
use zpulse_proto::sdk::{Severity, State};
use zpulse_tests::raw::*;

fn run(rels: &[&str]) -> Vec<Event> {
    run_with(rels, Config::default())
}

fn run_with(rels: &[&str], config: Config) -> Vec<Event> {
    let mut check = PoolHealth::new(config).unwrap();
    samples(&snapshots(rels))
        .iter()
        .flat_map(|s| check.observe(s))
        .collect()
}

fn cli(rel: &str, file: &str) -> String {
    std::fs::read_to_string(lab(rel).join("cli").join(file)).unwrap()
}

fn of<'a>(events: &'a [Event], check: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.check == check).collect()
}

/// `vdevs/deg`: a 2-way HDD mirror with sdb offlined by the administrator.
#[test]
fn a_degraded_mirror_is_critical_and_names_the_offline_disk() {
    let status = cli("vdevs/deg/000", "zpool-status.deg.txt");
    assert!(status.contains(" state: DEGRADED"));
    let offline: Vec<String> = zpool_status_rows(&status)
        .into_iter()
        .filter(|(_, state, _)| state == "OFFLINE")
        .map(|(name, _, _)| name)
        .collect();
    assert_eq!(offline, ["sdb"]);

    let events = run(&["vdevs/deg"]);
    let state = of(&events, "pool-health.state");
    assert_eq!(state.len(), 1, "{events:?}");
    let e = state[0];
    assert_eq!(
        (e.subject.as_str(), e.severity),
        ("deg", Severity::Critical)
    );
    assert_eq!(e.state, Some(State::Raised));
    for name in &offline {
        assert!(
            e.summary.contains(&format!("{name} OFFLINE in mirror-0")),
            "{}",
            e.summary
        );
        assert!(
            e.advice
                .as_deref()
                .unwrap()
                .contains(&format!("zpool online deg {name}"))
        );
    }
    assert!(e.summary.contains("no redundancy left"), "{}", e.summary);
    // The scrub of the capture finished with 0 errors (its zpool status line): no error,
    // data-error or scan finding.
    assert!(zpool_status_scan(&status)[0].contains("with 0 errors"));
    assert!(
        events.iter().all(|e| e.check == "pool-health.state"),
        "{events:?}"
    );
}

/// Healthy pools (the lab's basic series, the storm series, the raidz2 of vdevs/rz, all
/// ONLINE with no errors by their zpool status) raise nothing above info.
#[test]
fn healthy_pools_raise_nothing_above_info() {
    for (rel, pool) in [("basic", "tank"), ("vdevs/rz", "rz")] {
        let status = cli(&format!("{rel}/000"), &format!("zpool-status.{pool}.txt"));
        assert!(status.contains(" state: ONLINE"), "{rel}");
        assert!(
            zpool_status_rows(&status)
                .iter()
                .all(|(_, s, c)| s == "ONLINE" && c == &[0, 0, 0])
        );
        let events = run(&[rel]);
        assert!(
            events.iter().all(|e| e.severity <= Severity::Info),
            "{rel}: {events:?}"
        );
    }
    let events = run(&["storm/series"]);
    assert!(
        events.iter().all(|e| e.severity <= Severity::Info),
        "{events:?}"
    );
}

/// `storm/scrub`: a scrub in progress is an info finding in zpool's words.
#[test]
fn a_running_scrub_is_info_with_its_progress() {
    let dirs = dirs(&["storm/series", "storm/scrub"]);
    let last = dirs.last().unwrap();
    let status = std::fs::read_to_string(last.join("cli/zpool-status.storm.txt")).unwrap();
    let scan = zpool_status_scan(&status);
    assert!(scan[0].starts_with("scrub in progress since"), "{scan:?}");
    // zpool ran moments after the ioctl reply: its "% done" is the later, larger figure.
    let zpool_done: f64 = scan[2]
        .split("% done")
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    let events = run(&["storm/series", "storm/scrub"]);
    let running = of(&events, "pool-health.scan");
    assert_eq!(running.len(), 1, "{events:?}");
    let e = running[0];
    assert_eq!((e.subject.as_str(), e.severity), ("storm", Severity::Info));
    assert!(e.summary.contains(&scan[0]), "{} / {}", e.summary, scan[0]);
    let done = num(e, "done_pct");
    assert!(done > 0.0 && done <= zpool_done, "{done} vs {zpool_done}");
}
