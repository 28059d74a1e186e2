//! The check replayed over real captures from the OpenZFS 2.1 lab VM. Expected states,
//! counters, scan results and fill levels are read from each capture's own `cli/` files
//! (`zpool status -p`, `zpool get -Hp`), written by the lab's capture.sh at the same moment.

use zpulse_check_pool_health::{Config, PoolHealth};
use zpulse_proto::Event;
use zpulse_proto::sdk::text::ctime_utc;
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

/// READ/WRITE/CKSUM of one vdev in a capture's `zpool status -p`.
fn counters(rel: &str, pool: &str, vdev: &str) -> [u64; 3] {
    zpool_status_rows(&cli(rel, &format!("zpool-status.{pool}.txt")))
        .into_iter()
        .find(|(name, _, _)| name == vdev)
        .unwrap_or_else(|| panic!("{rel}: no {vdev}"))
        .2
}

/// `health/cks` (tests/lab/scenarios/health.sh): one side of an SSD mirror overwritten while
/// exported; a scrub between captures 000 and 001 finds and repairs the damage; `zpool
/// clear` before 002.
#[test]
fn checksum_errors_found_by_a_scrub_are_a_warning_until_zpool_clear() {
    assert_eq!(counters("health/cks/000", "cks", "sdd"), [0, 0, 0]);
    let found = counters("health/cks/001", "cks", "sdd");
    assert!(found[2] > 0 && found[0] == 0 && found[1] == 0, "{found:?}");
    assert_eq!(counters("health/cks/001", "cks", "sdc"), [0, 0, 0]);
    assert_eq!(counters("health/cks/002", "cks", "sdd"), [0, 0, 0]);
    let scan = zpool_status_scan(&cli("health/cks/001", "zpool-status.cks.txt"));
    assert!(
        scan[0].starts_with("scrub repaired") && scan[0].contains("with 0 errors"),
        "{scan:?}"
    );

    let events = run(&["health/cks"]);
    let errors = of(&events, "pool-health.errors");
    assert_eq!(errors.len(), 2, "{events:?}");
    let (raised, cleared) = (errors[0], errors[1]);
    assert_eq!(raised.subject, "cks/normal/mirror-0/sdd");
    assert_eq!(
        (raised.severity, raised.state),
        (Severity::Warning, Some(State::Raised))
    );
    let n = found[2];
    assert!(
        raised
            .summary
            .contains(&format!("{n} checksum errors ({n} new)")),
        "{}",
        raised.summary
    );
    assert_eq!(num(raised, "checksum_errors"), n as f64);
    assert!(
        raised
            .advice
            .as_deref()
            .unwrap()
            .contains("zpool clear cks sdd")
    );
    assert_eq!(
        (cleared.subject.as_str(), cleared.state),
        ("cks/normal/mirror-0/sdd", Some(State::Cleared))
    );
    // The scrub repaired everything: the pool stays ONLINE with no data errors.
    assert!(of(&events, "pool-health.state").is_empty());
    assert!(of(&events, "pool-health.data-errors").is_empty());
}

/// `zpool get -Hp` values of one capture.
fn zpool_get(rel: &str, pool: &str, property: &str) -> u64 {
    cli(rel, &format!("zpool-get.{pool}.txt"))
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[1] == property)
        .unwrap_or_else(|| panic!("{rel}: no {property}"))[2]
        .parse()
        .unwrap()
}

/// `health/fill`: one SSD pool filled to ~84% (000), ~93% (001), ~94% (002), then a file
/// deleted (003).
#[test]
fn a_filling_pool_is_critical_past_90_with_its_growth_then_clears() {
    let rels: Vec<String> = (0..4).map(|i| format!("health/fill/{i:03}")).collect();
    let used: Vec<f64> = rels
        .iter()
        .map(|r| {
            zpool_get(r, "fill", "allocated") as f64 / zpool_get(r, "fill", "size") as f64 * 100.0
        })
        .collect();
    assert!(
        used[0] > 80.0 && used[0] < 90.0 && used[1] > 90.0 && used[3] < 75.0,
        "{used:?}"
    );
    let at: Vec<f64> = dirs(&["health/fill"])
        .iter()
        .map(|d| captured_at(d))
        .collect();

    let events = run_with(
        &["health/fill"],
        Config {
            min_hold: std::time::Duration::ZERO,
            ..Config::default()
        },
    );
    let cap = of(&events, "pool-health.capacity");
    // The check sees each sample's later capture: 001 first (past 90%), 002, then 003.
    assert_eq!(cap[0].state, Some(State::Raised));
    assert_eq!(cap[0].severity, Severity::Critical);
    assert!(
        (num(cap[0], "used_pct") - used[1]).abs() < 0.01,
        "{} vs {}",
        num(cap[0], "used_pct"),
        used[1]
    );
    assert!(
        cap[0]
            .summary
            .starts_with(&format!("fill is {:.1}% full", used[1])),
        "{}",
        cap[0].summary
    );
    // With two points there is a growth and a time to full.
    let update = cap
        .iter()
        .find(|e| e.data.contains_key("growth_bytes_per_day"))
        .expect("a growth");
    let alloc = |r: &str| zpool_get(r, "fill", "allocated") as f64;
    let growth = (alloc(&rels[2]) - alloc(&rels[1])) / (at[2] - at[1]);
    assert!(
        close(num(update, "growth_bytes_per_day"), growth * 86_400.0, 0.01),
        "{}",
        num(update, "growth_bytes_per_day")
    );
    let free = zpool_get(&rels[2], "fill", "free") as f64;
    assert!(close(
        num(update, "days_to_full") * 86_400.0,
        free / growth,
        0.01
    ));
    let last = cap.last().unwrap();
    assert_eq!(last.state, Some(State::Cleared), "{cap:?}");
    // zpool get fragmentation: 64% at 000, above 50% from 001 on.
    assert!(zpool_get(&rels[1], "fill", "fragmentation") >= 50);
    let frag = of(&events, "pool-health.fragmentation");
    assert_eq!(frag[0].severity, Severity::Info);
    assert_eq!(
        num(frag[0], "fragmentation_pct"),
        zpool_get(&rels[1], "fill", "fragmentation") as f64
    );
}

/// `health/hm`: an HDD mirror on partitions with sdb1 offline (000, DEGRADED), then onlined
/// and resilvered before the next capture (001, 002: ONLINE, "resilvered … with 0 errors").
#[test]
fn a_degraded_mirror_clears_once_resilvered() {
    let before = cli("health/hm/000", "zpool-status.hm.txt");
    assert!(before.contains(" state: DEGRADED"));
    let after = cli("health/hm/001", "zpool-status.hm.txt");
    assert!(after.contains(" state: ONLINE"));
    assert!(
        zpool_status_scan(&after)[0].starts_with("resilvered "),
        "{after}"
    );
    // The check sees 001 and 002 (the later capture of each sample): both ONLINE, so there
    // is nothing to raise, and the finished resilver is no running scan.
    let events = run(&["health/hm"]);
    assert!(
        events.iter().all(|e| e.severity <= Severity::Info),
        "{events:?}"
    );
    // From the DEGRADED capture on, the state is raised and then cleared.
    let mut check = PoolHealth::new(Config::default()).unwrap();
    let snaps = snapshots(&["health/hm"]);
    let first = zpulse_proto::Sample {
        end: snaps[0].taken_at,
        snapshot: snaps[0].clone().into(),
        ..Default::default()
    };
    let mut events = check.observe(&first);
    for s in samples(&snaps) {
        events.extend(check.observe(&s));
    }
    let state = of(&events, "pool-health.state");
    assert_eq!(state.len(), 2, "{events:?}");
    assert_eq!(
        (state[0].severity, state[0].state),
        (Severity::Critical, Some(State::Raised))
    );
    // sdb1 is a partition of sdb (its sysfs directory sits under sdb).
    assert!(lab("health/hm/000/sys/block/sdb/sdb1/start").exists());
    assert!(
        state[0]
            .summary
            .contains("sdb1 (disk sdb) OFFLINE in mirror-0"),
        "{}",
        state[0].summary
    );
    assert_eq!(state[1].state, Some(State::Cleared));
}

/// `resilver/age` (tests/lab/scenarios/resilver.sh): `scrubbed` scrubbed, `never` imported and
/// never scrubbed (000); the guest clock moved 40 days on, `fresh` created (001, 002).
#[test]
fn scrub_age_follows_the_captures_clock() {
    let at: Vec<f64> = dirs(&["resilver/age"])
        .iter()
        .map(|d| captured_at(d))
        .collect();
    assert!(at[1] - at[0] > 39.0 * 86_400.0, "{at:?}");
    let scan = zpool_status_scan(&cli("resilver/age/001", "zpool-status.scrubbed.txt"));
    assert!(scan[0].starts_with("scrub repaired"), "{scan:?}");
    assert!(
        !cli("resilver/age/001", "zpool-status.never.txt").contains("scan:")
            || zpool_status_scan(&cli("resilver/age/001", "zpool-status.never.txt"))[0]
                == "none requested"
    );

    let events = run(&["resilver/age"]);
    let aged = of(&events, "pool-health.scrub-age");
    let mut subjects: Vec<&str> = aged.iter().map(|e| e.subject.as_str()).collect();
    subjects.sort();
    assert_eq!(subjects, ["never", "scrubbed"], "{aged:?}");
    for e in &aged {
        assert_eq!(
            (e.severity, e.state),
            (Severity::Warning, Some(State::Raised))
        );
    }
    let scrubbed = aged.iter().find(|e| e.subject == "scrubbed").unwrap();
    // The scrub ended before capture 000; 40 days of clock lie between 000 and 001.
    assert!(
        num(scrubbed, "days_since_scrub") > 39.9,
        "{}",
        scrubbed.summary
    );
    let never = aged.iter().find(|e| e.subject == "never").unwrap();
    assert!(
        never.summary.contains("never been scrubbed"),
        "{}",
        never.summary
    );
    assert!(num(never, "days_in_use") > 39.9, "{}", never.summary);
}

/// `resilver/resilver` (tests/lab/scenarios/resilver.sh, this project's seed 003): sdb of an
/// HDD mirror offline while data lands, blocks of that data then damaged on sda, the only
/// copy; onlining sdb starts a resilver (001: held at 0%), which meets the damage (002:
/// checksum errors growing while both are marked "(resilvering)", data errors), and ends
/// "with N errors" (003): data lost.
#[test]
fn a_resilver_that_meets_errors_is_critical_and_data_loss_is_named() {
    let rel = |i: u32| format!("resilver/resilver/{i:03}");
    let status = |i: u32| cli(&rel(i), "zpool-status.rz1.txt");
    assert!(status(0).contains(" state: DEGRADED"));
    assert!(zpool_status_scan(&status(1))[0].starts_with("resilver in progress since"));
    let during = status(2);
    assert!(zpool_status_scan(&during)[0].starts_with("resilver in progress since"));
    let sda = counters(&rel(2), "rz1", "sda");
    assert!(sda[2] > 0, "{sda:?}");
    assert!(during.contains("(resilvering)"));
    let end = zpool_status_scan(&status(3));
    assert!(
        end[0].starts_with("resilvered ") && !end[0].contains("with 0 errors"),
        "{end:?}"
    );
    let lost: u64 = status(3)
        .lines()
        .find_map(|l| l.strip_prefix("errors: ")?.split(' ').next()?.parse().ok())
        .expect("errors: N data errors");
    assert!(lost > 0);

    let events = run(&["resilver/resilver"]);
    let hit = of(&events, "pool-health.resilver-errors");
    let sda_hit = hit
        .iter()
        .find(|e| e.subject == "rz1/normal/mirror-0/sda")
        .unwrap_or_else(|| panic!("{hit:#?}"));
    assert_eq!(
        (sda_hit.severity, sda_hit.state),
        (Severity::Critical, Some(State::Raised))
    );
    assert!(
        sda_hit.summary.contains("while sdb is being resilvered"),
        "{}",
        sda_hit.summary
    );
    assert_eq!(num(sda_hit, "checksum_errors"), sda[2] as f64);
    // The resilver's end clears it; the data loss stays.
    assert!(
        hit.iter()
            .any(|e| e.subject == sda_hit.subject && e.state == Some(State::Cleared))
    );
    let data = of(&events, "pool-health.data-errors");
    assert_eq!(
        (data[0].severity, data[0].state),
        (Severity::Critical, Some(State::Raised))
    );
    assert!(data.iter().all(|e| e.state != Some(State::Cleared)));
    // The kernel's count is approximate (zpool status counts unique entries): never fewer.
    assert!(
        num(data.last().unwrap(), "error_count") >= lost as f64,
        "{data:?}"
    );
    // The scan: raised (info) while it runs; its end with errors makes it critical, in
    // zpool's own words for the result, with zpool's error count.
    let scan = of(&events, "pool-health.scan");
    assert_eq!(
        (scan[0].state, scan[0].severity),
        (Some(State::Raised), Severity::Info)
    );
    let ended = scan.last().unwrap();
    assert_eq!(
        (ended.state, ended.severity),
        (Some(State::Updated), Severity::Critical)
    );
    assert!(
        ended.summary.contains(&end[0]),
        "{} / {}",
        ended.summary,
        end[0]
    );
    assert_eq!(num(ended, "errors"), scan_errors(&end[0]) as f64);
}

/// N of `zpool status`'s "… with N errors on DATE".
fn scan_errors(scan_line: &str) -> u64 {
    scan_line
        .split(" with ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no error count in {scan_line:?}"))
}

/// The Unix second between `from` and `to` that `zpool status` prints as `date` (ctime; the
/// lab VM runs in UTC), found by formatting each second of the window as ctime does.
fn zpool_date_within(date: &str, from: f64, to: f64) -> i64 {
    (from.floor() as i64..=to.ceil() as i64)
        .find(|&t| ctime_utc(t) == date)
        .unwrap_or_else(|| panic!("{date:?} is not between {from} and {to}"))
}

/// "00:02:19" as seconds.
fn hms_secs(text: &str) -> i64 {
    text.split(':')
        .map(|n| n.parse::<i64>().unwrap())
        .fold(0, |acc, n| acc * 60 + n)
}

/// Copies the capture directories `captures` into a new series directory, as 000, 001, …
fn series_of(captures: &[&str]) -> tempfile::TempDir {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            let target = to.join(entry.file_name());
            if kind.is_dir() {
                copy(&entry.path(), &target);
            } else if kind.is_symlink() {
                let link = std::fs::read_link(entry.path()).unwrap();
                std::os::unix::fs::symlink(link, target).unwrap();
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, rel) in captures.iter().enumerate() {
        copy(&lab(rel), &dir.path().join(format!("{i:03}")));
    }
    dir
}

/// Seed 003 sampled too slowly: a series of `resilver/resilver/000` (sdb offline, no scan on
/// record) and `003` (the resilver finished with errors), so the whole resilver ran between
/// the two samples and the check never saw it running. Its result still comes from the
/// pool's scan record: critical, with zpool's words and error count.
#[test]
fn a_resilver_with_errors_that_ran_entirely_between_two_samples_is_critical() {
    let (first, last) = ("resilver/resilver/000", "resilver/resilver/003");
    let before = cli(first, "zpool-status-v.rz1.txt");
    assert!(zpool_status_scan(&before).is_empty(), "{before}");
    let end = zpool_status_scan(&cli(last, "zpool-status-v.rz1.txt"));
    assert!(end[0].starts_with("resilvered "), "{end:?}");
    let errors = scan_errors(&end[0]);
    assert!(errors > 0);
    // "resilvered 305M in 00:02:19 with 758 errors on Tue Dec  1 11:43:53 2026": it started
    // (end minus its duration) after the first capture was taken.
    let took = hms_secs(
        end[0]
            .split(" in ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap(),
    );
    // Its end is a second between the two captures (the search fails otherwise).
    let ended = zpool_date_within(
        end[0].split(" errors on ").nth(1).unwrap(),
        captured_at(&lab(first)),
        captured_at(&lab(last)),
    );
    assert!((ended - took) as f64 > captured_at(&lab(first)), "{end:?}");

    let series = series_of(&[first, last]);
    let dirs = zpulse_agent::capture::series(series.path()).unwrap();
    assert_eq!(dirs.len(), 2);
    let mut check = PoolHealth::new(Config::default()).unwrap();
    let events: Vec<Event> = replay(&dirs)
        .iter()
        .flat_map(|s| check.observe(s))
        .collect();
    let scan = of(&events, "pool-health.scan");
    assert_eq!(scan.len(), 1, "{scan:#?}");
    assert_eq!(
        (scan[0].subject.as_str(), scan[0].state, scan[0].severity),
        ("rz1", Some(State::Raised), Severity::Critical)
    );
    assert!(
        scan[0].summary.contains(&end[0]),
        "{} / {}",
        scan[0].summary,
        end[0]
    );
    assert_eq!(num(scan[0], "errors"), errors as f64);
    assert_eq!(num(scan[0], "seconds"), took as f64);
}

/// `resilver/age` with a resilver after the scrub: `scrubbed`'s record in the last capture
/// (002) replaced by a resilver that finished 10 s before it, as the kernel replaces the one
/// scan record it keeps. The scrub age (40 days, raised at 001) must go on from the scrub's
/// end, not restart from the resilver's.
#[test]
fn a_resilver_after_a_scrub_does_not_reset_the_scrub_age() {
    use zpulse_proto::snapshot::ScanStats;
    let scrubbed_scan = zpool_status_scan(&cli("resilver/age/001", "zpool-status.scrubbed.txt"));
    let at: Vec<f64> = dirs(&["resilver/age"])
        .iter()
        .map(|d| captured_at(d))
        .collect();
    // The scrub ran just before capture 000 (resilver.sh: `zpool wait -t scrub`, then capa).
    let scrub_end = zpool_date_within(
        scrubbed_scan[0].split(" errors on ").nth(1).unwrap(),
        at[0] - 3600.0,
        at[0],
    ) as f64;
    let mut snaps = snapshots(&["resilver/age"]);
    let last = snaps.last_mut().unwrap();
    let pool = last
        .pools
        .iter_mut()
        .find(|p| p.name == "scrubbed")
        .unwrap();
    let resilver_end = at[2] as u64 - 10;
    pool.config.as_mut().unwrap().scan = Some(ScanStats {
        function: "resilver".into(),
        state: "finished".into(),
        start_time: resilver_end - 50,
        end_time: resilver_end,
        ..ScanStats::default()
    });

    let mut check = PoolHealth::new(Config::default()).unwrap();
    let per_sample: Vec<Vec<Event>> = samples(&snaps).iter().map(|s| check.observe(s)).collect();
    let aged = |events: &[Event]| -> Vec<Event> {
        events
            .iter()
            .filter(|e| e.check == "pool-health.scrub-age" && e.subject == "scrubbed")
            .cloned()
            .collect()
    };
    let raised = aged(&per_sample[0]);
    assert_eq!(raised[0].state, Some(State::Raised));
    assert_eq!(
        num(&raised[0], "days_since_scrub"),
        ((at[1] - scrub_end) / 86_400.0 * 100.0).round() / 100.0
    );
    // At 002 the record holds the resilver; the finding stays as it was: no clear.
    assert!(aged(&per_sample[1]).is_empty(), "{:?}", per_sample[1]);

    // A check that first sees 002 never saw the scrub: it cannot know the age (the control,
    // showing that the check above kept it from 001).
    let mut fresh = PoolHealth::new(Config::default()).unwrap();
    let events: Vec<Event> = samples(&snaps[1..])
        .iter()
        .flat_map(|s| fresh.observe(s))
        .collect();
    assert!(aged(&events).is_empty(), "{events:?}");
}
