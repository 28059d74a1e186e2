//! The check replayed over real captures recorded in the OpenZFS 2.1 lab VM
//! (`tests/lab/scenarios/checks.sh`, `vdevs.sh`, the lab's `basic`). Expected figures are
//! computed here from the raw capture files: the `zil` kstat, `/proc/diskstats`, the module
//! parameters, `zpool list -vp` and `zpool status`.

use zpulse_check_slog_usage::{Config, SlogUsage};
use zpulse_proto::Event;
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{Severity, State, Value};
use zpulse_tests::raw::*;

fn run(rels: &[&str]) -> Vec<Event> {
    run_indexed(rels).into_iter().map(|(_, e)| e).collect()
}

/// Each event with the index of the capture that ended its sample.
fn run_indexed(rels: &[&str]) -> Vec<(usize, Event)> {
    let snaps = snapshots(rels);
    let mut check = SlogUsage::new(Config::default()).unwrap();
    samples(&snaps)
        .iter()
        .enumerate()
        .flat_map(|(i, s)| check.observe(s).into_iter().map(move |e| (i + 1, e)))
        .collect()
}

fn of<'a>(events: &'a [Event], check: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.check == check).collect()
}

/// `storm`: an HDD mirror with an unmirrored SSD log (sde) under an fsync loop of 8 KiB
/// writes: the SLOG is useful, far from saturated, oversized, and unmirrored while it
/// carries sync writes.
#[test]
fn storm_slog_is_useful_unmirrored_and_oversized() {
    let dirs = dirs(&["checks/storm"]);
    let indexed = run_indexed(&["checks/storm"]);
    let events: Vec<Event> = indexed.iter().map(|(_, e)| e.clone()).collect();

    // The verdict: useful once three samples are in, and it stays useful.
    let verdicts = of(&events, "slog-usage");
    assert!(!verdicts.is_empty());
    for v in &verdicts {
        assert_eq!(v.subject, "storm/log");
        assert_eq!(
            v.data["verdict"],
            Value::Str("useful".into()),
            "{}",
            v.summary
        );
        assert_eq!(v.severity, Severity::Info);
    }
    assert_eq!(verdicts[0].state, Some(State::Raised));
    // The last update covers the series up to its capture (the window is 10 minutes):
    // expected from the raw zil kstat, host-wide on 2.1.
    let (at, v) = indexed
        .iter()
        .rfind(|(_, e)| e.check == "slog-usage")
        .unwrap();
    assert!(*at >= 3);
    let (first, last) = (&dirs[0], &dirs[*at]);
    let secs = captured_at(last) - captured_at(first);
    let (z0, z1) = (zil(first), zil(last));
    let d = |k: &str| (z1[k] - z0[k]) as f64;
    let expect_commits = d("zil_commit_count") / secs;
    assert!(expect_commits > 50.0, "an fsync loop: {expect_commits}");
    assert!(close(num(v, "zil_commits_per_s"), expect_commits, 0.01));
    assert!(close(
        num(v, "zil_itx_per_s"),
        d("zil_itx_count") / secs,
        0.01
    ));
    let slog = d("zil_itx_metaslab_slog_bytes");
    let normal = d("zil_itx_metaslab_normal_bytes");
    assert!(close(
        num(v, "slog_share_pct"),
        slog / (slog + normal) * 100.0,
        0.01
    ));
    assert_eq!(v.data["zil_scope"], Value::Str("host".into()));
    // sde's busy from raw diskstats: io_ms (field 12 without the name) over the series.
    let (s0, s1) = (diskstats(first, "sde"), diskstats(last, "sde"));
    let util = (s1[11] - s0[11]) as f64 / (secs * 1000.0) * 100.0;
    assert!(util > 20.0 && util < 90.0, "{util}");
    assert_eq!(v.data["busiest_device"], Value::Str("sde".into()));
    assert!(
        close(num(v, "busiest_util_pct"), util, 0.01),
        "{} vs {util}",
        num(v, "busiest_util_pct")
    );
    // Peak: the busiest single interval.
    let peak = dirs[..=*at]
        .windows(2)
        .map(|w| {
            let (a, b) = (diskstats(&w[0], "sde"), diskstats(&w[1], "sde"));
            (b[11] - a[11]) as f64 / ((captured_at(&w[1]) - captured_at(&w[0])) * 1000.0) * 100.0
        })
        .fold(0.0, f64::max);
    assert!(close(
        num(v, "busiest_util_peak_pct"),
        peak.min(100.0),
        0.01
    ));
    // iostat's w_await over the series: write_ms / writes.
    let w_await = (s1[9] - s0[9]) as f64 / (s1[6] - s0[6]) as f64;
    assert!(
        close(num(v, "busiest_w_await_ms"), w_await, 0.02),
        "{} vs {w_await}",
        num(v, "busiest_w_await_ms")
    );
    assert!(
        v.summary.starts_with("storm/log (sde) took "),
        "{}",
        v.summary
    );
    assert!(
        v.summary.ends_with(": useful, not saturated"),
        "{}",
        v.summary
    );

    // Unmirrored, per `zpool status` of the scrub capture of the same pool, and carrying
    // sync writes: a warning.
    let status =
        std::fs::read_to_string(lab("checks/scrub/000/cli/zpool-status.storm.txt")).unwrap();
    let log = zpool_status(&status)
        .into_iter()
        .find(|v| v.section == "log")
        .unwrap();
    assert_eq!((log.name.as_str(), log.tolerated_failures()), ("sde", 0));
    let r = of(&events, "slog-usage.redundancy");
    assert_eq!(r.len(), 1, "raised once: {r:?}");
    assert_eq!(
        (r[0].subject.as_str(), r[0].state, r[0].severity),
        ("storm/log/sde", Some(State::Raised), Severity::Warning)
    );
    assert!(num(r[0], "writes_per_s") > 0.1);

    // Oversized: its size against two txgs of the raw zfs_dirty_data_max.
    let dirty = tunable(last, "zfs_dirty_data_max").unwrap() as f64;
    let list = zpool_list(
        &std::fs::read_to_string(lab("checks/scrub/000/cli/zpool-list-vp.storm.txt")).unwrap(),
    );
    let (alloc, free) = list["sde"];
    let space = (alloc + free) as f64;
    assert!(space > 4.0 * 2.0 * dirty);
    let s = of(&events, "slog-usage.size");
    let s = s.last().unwrap();
    assert_eq!(
        (s.subject.as_str(), s.severity),
        ("storm/log", Severity::Info)
    );
    assert_eq!(s.data["sizing"], Value::Str("oversized".into()));
    assert_eq!(num(s, "size_bytes"), space);
    assert_eq!(num(s, "dirty_data_max_bytes"), dirty);
    assert!(close(num(s, "holdable_bytes"), 2.0 * dirty, 0.01));

    // sde is an SSD (sysfs rotational 0): no device finding.
    let rot = std::fs::read_to_string(last.join("sys/block/sde/queue/rotational")).unwrap();
    assert_eq!(rot.trim(), "0");
    assert!(of(&events, "slog-usage.device").is_empty());
}

/// `vdevs/rz`: the log is a loop device over a file (seed 002) and idle.
#[test]
fn rz_log_on_a_loop_device_warns_and_fits() {
    let events = run(&["vdevs/rz"]);
    let dir = lab("vdevs/rz/001");
    let status = std::fs::read_to_string(dir.join("cli/zpool-status.rz.txt")).unwrap();
    let log = zpool_status(&status)
        .into_iter()
        .find(|v| v.section == "log")
        .unwrap();
    assert_eq!(log.name, "loop0");
    // No sync writes between the two captures (raw zil kstat).
    let (z0, z1) = (zil(&lab("vdevs/rz/000")), zil(&dir));
    assert_eq!(z0["zil_commit_count"], z1["zil_commit_count"]);
    let d = of(&events, "slog-usage.device");
    assert_eq!(d.len(), 1, "{events:?}");
    assert_eq!(
        (d[0].subject.as_str(), d[0].severity),
        ("rz/log/loop0", Severity::Warning)
    );
    assert!(
        d[0].summary
            .contains("a loop device (/dev/loop0), idle now"),
        "{}",
        d[0].summary
    );
    let r = of(&events, "slog-usage.redundancy");
    assert_eq!(
        (r[0].subject.as_str(), r[0].severity),
        ("rz/log/loop0", Severity::Info)
    );
    // 480 MiB: more than one zfs_dirty_data_max, less than 4 × two of them: fits.
    let list = zpool_list(&std::fs::read_to_string(dir.join("cli/zpool-list-vp.rz.txt")).unwrap());
    let (alloc, free) = list["loop0"];
    let dirty = tunable(&dir, "zfs_dirty_data_max").unwrap();
    assert!(alloc + free >= dirty && ((alloc + free) as f64) <= 8.0 * dirty as f64);
    assert!(of(&events, "slog-usage.size").is_empty());
    // One sample: no verdict.
    assert!(of(&events, "slog-usage").is_empty());
}

/// `basic`: a healthy pool whose unmirrored log saw no sync writes between the captures.
#[test]
fn basic_idle_unmirrored_log_is_information_only() {
    let events = run(&["basic"]);
    let (z0, z1) = (zil(&lab("basic/000")), zil(&lab("basic/001")));
    assert_eq!(z0["zil_commit_count"], z1["zil_commit_count"]);
    assert!(!events.is_empty());
    for e in &events {
        assert_eq!(e.severity, Severity::Info, "{}: {}", e.check, e.summary);
    }
    assert_eq!(
        of(&events, "slog-usage.redundancy")[0].subject,
        "tank/log/sde"
    );
}

#[test]
fn pools_without_a_log_say_nothing() {
    for rels in [&["checks/quiet"][..], &["checks/fill"], &["vdevs/deg"]] {
        assert!(run(rels).is_empty(), "{rels:?}");
    }
}

#[test]
fn the_plugin_emits_valid_events_through_the_abi() {
    let snaps = snapshots(&["checks/storm"]);
    let host = TestHost::new();
    let events = host.run::<SlogUsage>(&[], &samples(&snaps)).unwrap();
    assert!(host.rejected().is_empty(), "{:?}", host.rejected());
    assert_eq!(events, run(&["checks/storm"]));
}

/// The window's device write latency of `disks` from raw `/proc/diskstats` between two
/// captures: Σ write_ms / Σ writes (fields 10 and 7 without the name), ms.
fn disk_write_ms(first: &std::path::Path, last: &std::path::Path, disks: &[&str]) -> f64 {
    let (mut ms, mut n) = (0.0, 0.0);
    for d in disks {
        let (a, b) = (diskstats(first, d), diskstats(last, d));
        ms += (b[9] - a[9]) as f64;
        n += (b[6] - a[6]) as f64;
    }
    ms / n
}

/// `storm`: the SSD log (sde) answers a write several times faster than the HDD mirror it
/// serves (raw diskstats), so it is no "slower than the pool" case: the verdict stays useful
/// and states both latencies. ZFS times the device itself (`disk_wait`, averaged from
/// power-of-two histogram buckets), diskstats from the block layer: they agree within 2×.
#[test]
fn storm_slog_is_faster_than_the_pool_it_serves() {
    let dirs = dirs(&["checks/storm"]);
    let indexed = run_indexed(&["checks/storm"]);
    let (at, v) = indexed
        .iter()
        .rfind(|(_, e)| e.check == "slog-usage")
        .unwrap();
    let (first, last) = (&dirs[0], &dirs[*at]);
    let log_ms = disk_write_ms(first, last, &["sde"]);
    let data_ms = disk_write_ms(first, last, &["sda", "sdb"]);
    assert!(
        log_ms * 3.0 < data_ms,
        "sde {log_ms} ms, sda/sdb {data_ms} ms"
    );
    let within_2x = |a: f64, b: f64| a > b / 2.0 && a < b * 2.0;
    assert!(
        within_2x(num(v, "log_device_write_ms"), log_ms),
        "{} vs {log_ms}",
        num(v, "log_device_write_ms")
    );
    assert!(
        within_2x(num(v, "data_device_write_ms"), data_ms),
        "{} vs {data_ms}",
        num(v, "data_device_write_ms")
    );
    assert!(num(v, "log_to_data_write_ratio") < 0.8);
    assert_eq!(v.data["verdict"], Value::Str("useful".into()));
    assert!(
        v.summary.contains("on the log's device (sde) against")
            && v.summary.contains("on the pool's own vdevs (mirror-0)"),
        "{}",
        v.summary
    );
}

/// The same recording with the roles swapped: the HDD mirror (sda, sdb, mirror-0) made the
/// log and the SSD (sde) the pool's data vdev — an SSD pool whose log is an HDD, with the
/// latencies the lab's devices really had. The log is slower than the pool it serves: a
/// warning that says to remove it, with both latencies.
#[test]
fn an_hdd_log_in_front_of_an_ssd_pool_is_slower_than_the_pool() {
    use zpulse_proto::snapshot::VdevClass;
    let dirs = dirs(&["checks/storm"]);
    let mut snaps = snapshots(&["checks/storm"]);
    for snap in &mut snaps {
        for pool in &mut snap.pools {
            let root = &mut pool.config.as_mut().unwrap().root;
            for top in &mut root.children {
                let class = match top.name.as_str() {
                    "mirror-0" => VdevClass::Log,
                    "sde" => VdevClass::Normal,
                    _ => continue,
                };
                fn set(v: &mut zpulse_proto::snapshot::Vdev, class: VdevClass) {
                    v.class = Some(class);
                    v.children.iter_mut().for_each(|c| set(c, class));
                }
                set(top, class);
            }
        }
    }
    let mut check = SlogUsage::new(Config::default()).unwrap();
    let events: Vec<Event> = samples(&snaps)
        .iter()
        .flat_map(|s| check.observe(s))
        .filter(|e| e.check == "slog-usage")
        .collect();
    let v = events.last().expect("a verdict");
    assert_eq!(
        (
            v.data["verdict"].as_str(),
            v.severity,
            events[0].state,
            events[0].data["verdict"].as_str()
        ),
        (
            Some("slower than the pool"),
            Severity::Warning,
            Some(State::Raised),
            Some("slower than the pool")
        ),
        "{}",
        v.summary
    );
    let (first, last) = (&dirs[0], &dirs[dirs.len() - 1]);
    let log_ms = disk_write_ms(first, last, &["sda", "sdb"]);
    let data_ms = disk_write_ms(first, last, &["sde"]);
    assert!(log_ms > 3.0 * data_ms, "log {log_ms} ms, pool {data_ms} ms");
    assert!(num(v, "log_to_data_write_ratio") > 1.0);
    let advice = v.advice.as_deref().unwrap();
    assert!(
        advice.starts_with("Remove the log (zpool remove storm mirror-0)"),
        "{advice}"
    );
    // Both latencies, as the figures give them.
    for key in ["log_device_write_ms", "data_device_write_ms"] {
        let text = format!("{:.2} ms", num(v, key));
        assert!(advice.contains(&text), "{key}: {text} in {advice}");
    }
    assert!(v.summary.ends_with(
        "slower than the pool it serves, so every sync write waits longer than it would \
         without it"
    ));
}
