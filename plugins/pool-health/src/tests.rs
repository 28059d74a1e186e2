//! Every finding on synthetic vdev trees, built the way `ZFS_IOC_POOL_STATS` describes them;
//! samples come from the real `Sample::between`, so error growth and resets are proto's.

use super::*;
use zpulse_proto::Snapshot;
use zpulse_proto::sdk::State;
use zpulse_proto::snapshot::{Redundancy, ScanStats, VdevStats};

const DAY: f64 = 86_400.0;
const T0: f64 = 1_796_000_000.0;

fn leaf(name: &str, state: &str) -> Vdev {
    Vdev {
        name: name.into(),
        vdev_type: "disk".into(),
        class: Some(VdevClass::Normal),
        guid: Some(guid(name)),
        state: Some(state.into()),
        disk: Some(name.trim_end_matches(char::is_numeric).into()),
        stats: Some(VdevStats::default()),
        ..Vdev::default()
    }
}

fn guid(name: &str) -> u64 {
    name.bytes()
        .fold(7, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

fn top(name: &str, kind: &str, redundancy: Redundancy, children: Vec<Vdev>) -> Vdev {
    let state = if children
        .iter()
        .all(|c| c.state.as_deref() == Some("ONLINE"))
    {
        "ONLINE"
    } else {
        "DEGRADED"
    };
    Vdev {
        name: name.into(),
        vdev_type: kind.into(),
        class: Some(VdevClass::Normal),
        guid: Some(guid(name)),
        state: Some(state.into()),
        redundancy: Some(redundancy),
        stats: Some(VdevStats::default()),
        children,
        ..Vdev::default()
    }
}

fn pool(health: &str, tops: Vec<Vdev>) -> Pool {
    Pool {
        name: "tank".into(),
        config: Some(PoolConfig {
            health: health.into(),
            error_count: Some(0),
            root: Vdev {
                name: "tank".into(),
                vdev_type: "root".into(),
                guid: Some(1),
                state: Some(health.into()),
                stats: Some(VdevStats {
                    space: 1000,
                    ..VdevStats::default()
                }),
                children: tops,
                ..Vdev::default()
            },
            ..PoolConfig::default()
        }),
        ..Pool::default()
    }
}

fn snapshot(at: f64, pool: Pool) -> Snapshot {
    Snapshot {
        taken_at: at,
        zfs_loaded: true,
        pools: vec![pool],
        ..Snapshot::default()
    }
}

/// Runs the check over snapshots taken 10 s apart (each vdev's `timestamp` advancing with
/// them) and returns the events of each sample.
fn run(check: &mut PoolHealth, snaps: Vec<Snapshot>) -> Vec<Vec<Event>> {
    let mut snaps = snaps;
    for (i, s) in snaps.iter_mut().enumerate() {
        let ns = (i as u64 + 1) * 10_000_000_000;
        for p in &mut s.pools {
            if let Some(c) = &mut p.config {
                set_timestamps(&mut c.root, ns);
            }
        }
    }
    snaps
        .windows(2)
        .map(|w| check.observe(&Sample::between(&w[0], &w[1]).unwrap()))
        .collect()
}

fn set_timestamps(v: &mut Vdev, ns: u64) {
    if let Some(s) = &mut v.stats {
        s.timestamp = ns;
    }
    for c in &mut v.children {
        set_timestamps(c, ns);
    }
}

fn check() -> PoolHealth {
    PoolHealth::new(Config::default()).unwrap()
}

fn named<'a>(events: &'a [Event], check: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.check == check).collect()
}

fn mirror(a: Vdev, b: Vdev) -> Vdev {
    top(
        "mirror-0",
        "mirror",
        Redundancy::Mirror { width: 2 },
        vec![a, b],
    )
}

#[test]
fn a_mirror_with_one_side_gone_has_no_redundancy_left() {
    let p = || {
        pool(
            "DEGRADED",
            vec![mirror(leaf("sda", "ONLINE"), leaf("sdb", "OFFLINE"))],
        )
    };
    let ev = run(
        &mut check(),
        vec![snapshot(T0, p()), snapshot(T0 + 10.0, p())],
    );
    let state = named(&ev[0], "pool-health.state");
    assert_eq!(state.len(), 1);
    assert_eq!(state[0].severity, Severity::Critical);
    assert_eq!(state[0].subject, "tank");
    assert!(
        state[0].summary.contains("sdb OFFLINE in mirror-0"),
        "{}",
        state[0].summary
    );
    assert!(
        state[0].summary.contains("no redundancy left"),
        "{}",
        state[0].summary
    );
    assert_eq!(state[0].advice.as_deref(), Some("`zpool online tank sdb`"));
}

#[test]
fn raidz2_with_one_member_faulted_is_a_warning_with_the_replace_command() {
    let mut members: Vec<Vdev> = (0..4)
        .map(|i| leaf(&format!("sd{}", ['a', 'b', 'c', 'd'][i]), "ONLINE"))
        .collect();
    members[2].state = Some("FAULTED".into());
    members[2].aux = Some("too many errors".into());
    let p = || {
        pool(
            "DEGRADED",
            vec![top(
                "raidz2-0",
                "raidz",
                Redundancy::Parity { parity: 2 },
                members.clone(),
            )],
        )
    };
    let ev = run(
        &mut check(),
        vec![snapshot(T0, p()), snapshot(T0 + 10.0, p())],
    );
    let state = named(&ev[0], "pool-health.state");
    assert_eq!(state[0].severity, Severity::Warning);
    assert!(
        state[0]
            .summary
            .contains("sdc FAULTED, too many errors in raidz2-0"),
        "{}",
        state[0].summary
    );
    assert!(
        state[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("zpool replace tank sdc NEW_DEVICE")
    );
}

#[test]
fn suspended_and_unavail_pools_are_critical_and_online_clears() {
    let p = |h: &str| {
        pool(
            h,
            vec![mirror(leaf("sda", "ONLINE"), leaf("sdb", "ONLINE"))],
        )
    };
    let ev = run(
        &mut check(),
        vec![
            snapshot(T0, p("ONLINE")),
            snapshot(T0 + 10.0, p("SUSPENDED")),
            snapshot(T0 + 20.0, p("ONLINE")),
        ],
    );
    let raised = named(&ev[0], "pool-health.state");
    assert_eq!(raised[0].severity, Severity::Critical);
    assert!(
        raised[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("zpool clear tank")
    );
    let cleared = named(&ev[1], "pool-health.state");
    assert_eq!(cleared[0].state, Some(State::Cleared));
}

fn with_cksum(mut v: Vdev, n: u64) -> Vdev {
    v.stats.as_mut().unwrap().checksum_errors = n;
    v
}

#[test]
fn errors_from_before_are_info_growth_is_a_warning_and_zpool_clear_clears() {
    let p = |n: u64| {
        pool(
            "ONLINE",
            vec![mirror(
                leaf("sdc", "ONLINE"),
                with_cksum(leaf("sdd", "ONLINE"), n),
            )],
        )
    };
    let ev = run(
        &mut check(),
        vec![
            snapshot(T0, p(5)),
            snapshot(T0 + 10.0, p(5)),
            snapshot(T0 + 20.0, p(9)),
            snapshot(T0 + 30.0, p(0)),
        ],
    );
    let first = named(&ev[0], "pool-health.errors");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].subject, "tank/normal/mirror-0/sdd");
    assert_eq!(first[0].severity, Severity::Info);
    assert!(
        first[0]
            .summary
            .contains("5 checksum errors, all counted before"),
        "{}",
        first[0].summary
    );
    let grown = named(&ev[1], "pool-health.errors");
    assert_eq!(grown[0].severity, Severity::Warning);
    assert_eq!(grown[0].state, Some(State::Updated));
    assert!(
        grown[0].summary.contains("9 checksum errors (4 new)"),
        "{}",
        grown[0].summary
    );
    assert!(
        grown[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("zpool clear tank sdd")
    );
    let cleared = named(&ev[2], "pool-health.errors");
    assert_eq!(cleared[0].state, Some(State::Cleared));
}

#[test]
fn errors_met_by_a_running_resilver_are_critical_and_name_the_rebuilt_leaf() {
    let p = |n: u64, processed: u64| {
        let mut target = leaf("sdb1", "ONLINE");
        target.stats.as_mut().unwrap().scan_processed = Some(processed);
        let mut tree = pool(
            "ONLINE",
            vec![mirror(with_cksum(leaf("sda1", "ONLINE"), n), target)],
        );
        tree.config.as_mut().unwrap().scan = Some(ScanStats {
            function: "resilver".into(),
            state: "scanning".into(),
            start_time: T0 as u64,
            to_examine: 1000,
            issued: Some(100),
            ..ScanStats::default()
        });
        tree
    };
    let ev = run(
        &mut check(),
        vec![
            snapshot(T0, p(0, 10)),
            snapshot(T0 + 10.0, p(3, 100)),
            snapshot(T0 + 20.0, p(3, 200)),
        ],
    );
    let hit = named(&ev[0], "pool-health.resilver-errors");
    assert_eq!(hit.len(), 1);
    assert_eq!(hit[0].severity, Severity::Critical);
    assert_eq!(hit[0].subject, "tank/normal/mirror-0/sda1");
    assert!(
        hit[0]
            .summary
            .contains("while sdb1 (disk sdb) is being resilvered"),
        "{}",
        hit[0].summary
    );
    // No new errors in the next interval: the finding stays raised for the whole resilver.
    assert!(named(&ev[1], "pool-health.resilver-errors").is_empty());
    let scan = named(&ev[0], "pool-health.scan");
    assert_eq!(scan[0].severity, Severity::Info);
    assert!(
        scan[0].summary.contains("resilver in progress since"),
        "{}",
        scan[0].summary
    );
}

#[test]
fn permanent_errors_are_critical_until_the_log_is_empty() {
    let p = |n: u64| {
        let mut tree = pool(
            "ONLINE",
            vec![mirror(leaf("sda", "ONLINE"), leaf("sdb", "ONLINE"))],
        );
        tree.config.as_mut().unwrap().error_count = Some(n);
        tree
    };
    let ev = run(
        &mut check(),
        vec![
            snapshot(T0, p(0)),
            snapshot(T0 + 10.0, p(4)),
            snapshot(T0 + 20.0, p(0)),
        ],
    );
    let lost = named(&ev[0], "pool-health.data-errors");
    assert_eq!(lost[0].severity, Severity::Critical);
    assert!(
        lost[0]
            .summary
            .contains("data has been lost; `zpool status -v tank` lists the files")
    );
    assert_eq!(
        named(&ev[1], "pool-health.data-errors")[0].state,
        Some(State::Cleared)
    );
}

fn scrubbed(end: f64) -> Pool {
    let mut tree = pool(
        "ONLINE",
        vec![mirror(leaf("sda", "ONLINE"), leaf("sdb", "ONLINE"))],
    );
    tree.config.as_mut().unwrap().scan = Some(ScanStats {
        function: "scrub".into(),
        state: "finished".into(),
        start_time: end as u64 - 60,
        end_time: end as u64,
        ..ScanStats::default()
    });
    tree
}

#[test]
fn scrub_age_is_judged_at_the_samples_time() {
    let now = T0 + 50.0 * DAY;
    let old = run(
        &mut check(),
        vec![
            snapshot(now - 10.0, scrubbed(now - 40.0 * DAY)),
            snapshot(now, scrubbed(now - 40.0 * DAY)),
        ],
    );
    let aged = named(&old[0], "pool-health.scrub-age");
    assert_eq!(aged[0].severity, Severity::Warning);
    assert!(
        aged[0].summary.contains("finished 40 days ago"),
        "{}",
        aged[0].summary
    );
    let recent = run(
        &mut check(),
        vec![
            snapshot(now - 10.0, scrubbed(now - 34.0 * DAY)),
            snapshot(now, scrubbed(now - 34.0 * DAY)),
        ],
    );
    assert!(named(&recent[0], "pool-health.scrub-age").is_empty());
}

#[test]
fn a_never_scrubbed_pool_is_flagged_only_once_it_is_known_to_be_old() {
    let now = T0 + 100.0 * DAY;
    let never = |loaded_at: Option<f64>| {
        let mut tree = pool(
            "ONLINE",
            vec![mirror(leaf("sda", "ONLINE"), leaf("sdb", "ONLINE"))],
        );
        tree.config.as_mut().unwrap().loaded_at = loaded_at.map(|t| t as u64);
        tree
    };
    // Imported 40 days ago: in use for at least that long.
    let ev = run(
        &mut check(),
        vec![
            snapshot(now - 10.0, never(Some(now - 40.0 * DAY))),
            snapshot(now, never(Some(now - 40.0 * DAY))),
        ],
    );
    let aged = named(&ev[0], "pool-health.scrub-age");
    assert_eq!(aged[0].severity, Severity::Warning);
    assert!(
        aged[0].summary.contains("never been scrubbed"),
        "{}",
        aged[0].summary
    );
    // Created since boot (no import time), its root vdev open for 20 s: nothing.
    let ev = run(
        &mut check(),
        vec![
            snapshot(now - 10.0, never(None)),
            snapshot(now, never(None)),
        ],
    );
    assert!(named(&ev[0], "pool-health.scrub-age").is_empty());
}

#[test]
fn capacity_warns_at_80_is_critical_at_90_and_projects_the_time_to_full() {
    let full = |alloc: u64| {
        let mut tree = pool(
            "ONLINE",
            vec![mirror(leaf("sda", "ONLINE"), leaf("sdb", "ONLINE"))],
        );
        let root = tree.config.as_mut().unwrap().root.stats.as_mut().unwrap();
        root.alloc = alloc;
        root.space = 1000;
        tree
    };
    let mut c = PoolHealth::new(Config {
        min_hold: Duration::ZERO,
        ..Config::default()
    })
    .unwrap();
    let ev = run(
        &mut c,
        vec![
            snapshot(T0, full(700)),
            snapshot(T0 + 10.0, full(850)),
            snapshot(T0 + 20.0, full(910)),
            snapshot(T0 + 30.0, full(700)),
        ],
    );
    let warn = named(&ev[0], "pool-health.capacity");
    assert_eq!(warn[0].severity, Severity::Warning);
    assert!(
        warn[0].summary.starts_with("tank is 85.0% full"),
        "{}",
        warn[0].summary
    );
    let crit = named(&ev[1], "pool-health.capacity");
    assert_eq!(crit[0].severity, Severity::Critical);
    // Least squares over (10 s, 850) and (20 s, 910): 6 bytes/s, 90 bytes free → 15 s.
    // Reported to three significant figures.
    let growth = crit[0].data["growth_bytes_per_day"].as_f64().unwrap();
    assert!((growth - 6.0 * DAY).abs() <= 0.005 * 6.0 * DAY, "{growth}");
    assert!(
        crit[0].summary.contains("full in ~00:00:15"),
        "{}",
        crit[0].summary
    );
    assert_eq!(
        named(&ev[2], "pool-health.capacity")[0].state,
        Some(State::Cleared)
    );
}

#[test]
fn a_spare_in_use_names_what_it_replaced() {
    let spare = Vdev {
        vdev_type: "spare".into(),
        ..top(
            "spare-1",
            "spare",
            Redundancy::Mirror { width: 2 },
            vec![leaf("sdb", "FAULTED"), leaf("sdf", "ONLINE")],
        )
    };
    let p = || {
        pool(
            "DEGRADED",
            vec![top(
                "mirror-0",
                "mirror",
                Redundancy::Mirror { width: 2 },
                vec![leaf("sda", "ONLINE"), spare.clone()],
            )],
        )
    };
    let ev = run(
        &mut check(),
        vec![snapshot(T0, p()), snapshot(T0 + 10.0, p())],
    );
    let used = named(&ev[0], "pool-health.spare");
    assert_eq!(used[0].subject, "tank/spare/sdf");
    assert_eq!(used[0].severity, Severity::Warning);
    assert!(
        used[0].summary.contains("standing in for sdb (FAULTED)"),
        "{}",
        used[0].summary
    );
}

#[test]
fn a_healthy_pool_raises_nothing_above_info() {
    let now = T0 + 10.0 * DAY;
    let ev = run(
        &mut check(),
        vec![
            snapshot(now - 10.0, scrubbed(now - DAY)),
            snapshot(now, scrubbed(now - DAY)),
        ],
    );
    assert!(
        ev[0].iter().all(|e| e.severity <= Severity::Info),
        "{:?}",
        ev[0]
    );
}

#[test]
fn bad_configs_are_refused_with_the_key() {
    let bad = |c: Config| PoolHealth::new(c).err().unwrap();
    assert!(
        bad(Config {
            capacity_warn_pct: 95.0,
            ..Config::default()
        })
        .contains("capacity_warn_pct")
    );
    assert!(
        bad(Config {
            capacity_clear_pct: 85.0,
            ..Config::default()
        })
        .contains("capacity_clear_pct")
    );
    assert!(
        bad(Config {
            scrub_max_age: Duration::ZERO,
            ..Config::default()
        })
        .contains("scrub_max_age")
    );
}

/// The events of the one sample in which `pool` is the same at `now - 10` and at `now`.
fn unchanged(pool: Pool, now: f64) -> Vec<Event> {
    run(
        &mut check(),
        vec![snapshot(now - 10.0, pool.clone()), snapshot(now, pool)],
    )
    .remove(0)
}

fn scanned(function: &str, state: &str, start: f64, end: f64, errors: u64) -> Pool {
    let mut tree = scrubbed(end);
    tree.config.as_mut().unwrap().scan = Some(ScanStats {
        function: function.into(),
        state: state.into(),
        start_time: start as u64,
        end_time: end as u64,
        errors,
        ..ScanStats::default()
    });
    tree
}

/// Scans that started and ended between two samples, never seen running: the scan record
/// alone gives their result.
#[test]
fn a_scan_that_ran_between_two_samples_gives_its_result_from_the_scan_record() {
    let now = T0 + 10.0 * DAY;
    let clean = scrubbed(now - 20.0 * DAY);
    // A scrub with 3 errors that ran from now-8 s to now-2 s, between the samples at now-10
    // and now: critical, held while the record stays, cleared by the next clean scrub.
    let erred = scanned("scrub", "finished", now - 8.0, now - 2.0, 3);
    let ev = run(
        &mut check(),
        vec![
            snapshot(now - 20.0, clean.clone()),
            snapshot(now - 10.0, clean.clone()),
            snapshot(now, erred.clone()),
            snapshot(now + 10.0, erred.clone()),
            snapshot(now + 20.0, scrubbed(now + 15.0)),
        ],
    );
    assert!(named(&ev[0], "pool-health.scan").is_empty());
    let raised = named(&ev[1], "pool-health.scan");
    assert_eq!(
        (raised[0].state, raised[0].severity),
        (Some(State::Raised), Severity::Critical)
    );
    assert_eq!(raised[0].data["errors"].as_f64(), Some(3.0));
    assert!(
        raised[0].summary.contains("with 3 errors"),
        "{}",
        raised[0].summary
    );
    assert!(named(&ev[2], "pool-health.scan").is_empty(), "{:?}", ev[2]);
    assert_eq!(
        named(&ev[3], "pool-health.scan")[0].state,
        Some(State::Cleared)
    );

    // A resilver with errors whose record replaced an older one (start time new) although
    // its end time is before the previous sample: the record changed, so it ended while
    // watched.
    let ev = run(
        &mut check(),
        vec![
            snapshot(now - 20.0, clean.clone()),
            snapshot(now - 10.0, clean.clone()),
            snapshot(
                now,
                scanned("resilver", "finished", now - 30.0, now - 12.0, 5),
            ),
        ],
    );
    assert!(named(&ev[0], "pool-health.scan").is_empty());
    let raised = named(&ev[1], "pool-health.scan");
    assert_eq!(raised[0].severity, Severity::Critical);
    assert!(
        raised[0].summary.contains("resilvered"),
        "{}",
        raised[0].summary
    );

    // A scrub canceled between two samples is said, at info.
    let ev = run(
        &mut check(),
        vec![
            snapshot(now - 10.0, clean.clone()),
            snapshot(now, scanned("scrub", "canceled", now - 8.0, now - 2.0, 0)),
        ],
    );
    let said = named(&ev[0], "pool-health.scan");
    assert_eq!(said[0].severity, Severity::Info);
    assert!(
        said[0].summary.contains("scrub canceled on"),
        "{}",
        said[0].summary
    );

    // The same results from before the first sample's interval are from before zpulse
    // watched: errors are info (said once, not paged), a cancel is not news.
    let erred_before = scanned("scrub", "finished", now - 40.0, now - 30.0, 3);
    let ev = unchanged(erred_before, now);
    let old = named(&ev, "pool-health.scan");
    assert_eq!(old[0].severity, Severity::Info);
    assert!(old[0].summary.contains("before zpulse started watching"));
    let canceled = scanned("scrub", "canceled", now - 30.0, now - 20.0, 0);
    let ev = unchanged(canceled, now);
    assert!(named(&ev, "pool-health.scan").is_empty());
}

/// A resilver replaces the pool's only scan record: the scrub before it still counts for
/// the scrub age, which goes on from the scrub's end, not the resilver's.
#[test]
fn the_last_scrub_is_remembered_when_a_resilver_replaces_the_scan_record() {
    let now = T0 + 100.0 * DAY;
    let scrub_end = now - 30.0 * DAY;
    let resilver = || scanned("resilver", "finished", now - 100.0, now - 5.0, 0);
    let mut check = check();
    let ev = run(
        &mut check,
        vec![
            // The check sees the later snapshot of each sample: the scrub at now - 10.
            snapshot(now - 20.0, scrubbed(scrub_end)),
            snapshot(now - 10.0, scrubbed(scrub_end)),
            snapshot(now, resilver()),
            // Six days on: 36 days since the scrub, 6 since the resilver.
            snapshot(now + 6.0 * DAY, resilver()),
        ],
    );
    assert!(named(&ev[0], "pool-health.scrub-age").is_empty());
    assert!(named(&ev[1], "pool-health.scrub-age").is_empty());
    let aged = named(&ev[2], "pool-health.scrub-age");
    assert_eq!(aged.len(), 1, "{:?}", ev[2]);
    assert_eq!(aged[0].severity, Severity::Warning);
    assert_eq!(aged[0].data["days_since_scrub"].as_f64(), Some(36.0));
    assert!(
        aged[0].summary.contains(&ctime_utc(scrub_end as i64))
            && aged[0].summary.contains("now holds a resilver finished"),
        "{}",
        aged[0].summary
    );
    // A new check, which never saw the scrub, knows only the resilver.
    let ev = run(
        &mut super::PoolHealth::new(Config::default()).unwrap(),
        vec![
            snapshot(now, resilver()),
            snapshot(now + 6.0 * DAY, resilver()),
        ],
    );
    assert!(
        named(&ev[0], "pool-health.scrub-age").is_empty(),
        "{:?}",
        ev[0]
    );
}

/// A never-scrubbed pool created since boot (no import time, its root vdev open for
/// seconds): its age is its root dataset's creation time when the snapshot has it, and
/// without it the lower bound, said in the finding.
#[test]
fn a_never_scrubbed_pool_s_age_comes_from_its_creation_time() {
    let now = T0 + 100.0 * DAY;
    let created = |created_at: Option<f64>| {
        let mut tree = pool(
            "ONLINE",
            vec![mirror(leaf("sda", "ONLINE"), leaf("sdb", "ONLINE"))],
        );
        tree.created_at = created_at.map(|t| t as u64);
        tree
    };
    let created_at = now - 40.0 * DAY;
    let ev = unchanged(created(Some(created_at)), now);
    let aged = named(&ev, "pool-health.scrub-age");
    assert_eq!(aged.len(), 1, "{:?}", ev);
    assert_eq!(aged[0].severity, Severity::Warning);
    assert_eq!(aged[0].data["days_in_use"].as_f64(), Some(40.0));
    assert_eq!(aged[0].data["age_from"].as_str(), Some("creation"));
    assert!(
        aged[0].summary.contains(&format!(
            "was created 40 days ago ({})",
            ctime_utc(created_at as i64)
        )),
        "{}",
        aged[0].summary
    );
    // Created 10 days ago: not old enough.
    let ev = unchanged(created(Some(now - 10.0 * DAY)), now);
    assert!(named(&ev, "pool-health.scrub-age").is_empty());
    // A creation time in the future (a clock set back, a hostile capture) is an age of zero,
    // not a panic or a negative age.
    let mut future = created(None);
    future.created_at = Some(u64::MAX);
    assert!(named(&unchanged(future, now), "pool-health.scrub-age").is_empty());
    // Without a creation time: imported 40 days ago is still known from below, and the
    // finding says where its age comes from.
    let mut imported = created(None);
    imported.config.as_mut().unwrap().loaded_at = Some((now - 40.0 * DAY) as u64);
    let ev = unchanged(imported, now);
    let aged = named(&ev, "pool-health.scrub-age");
    assert!(
        aged[0].summary.contains("creation time is not known"),
        "{}",
        aged[0].summary
    );
    assert_eq!(
        aged[0].data["age_from"].as_str(),
        Some("import or vdev open (a lower bound)")
    );
}
