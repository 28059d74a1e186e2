//! `zpulse report` on windows an expert would split before computing a rate, from the lab's
//! `report-breaks` recording (tests/lab/scenarios/report-breaks.sh): pool `rs` exported and
//! imported between captures 001 and 002 (every vdev, pool and dataset counter restarted),
//! no capture for 330 s between 003 and 004, the wall clock moved three weeks on between 005
//! and 006.
//!
//! Expected figures come from the captures' raw counters on each side of the break:
//! `/proc/diskstats` read as text here, the vdevs' counters as the kernel's ioctl reply holds
//! them (`ops`, `vs_timestamp`), the manifest's `captured_at`, and for the clock, each
//! capture's `cli/uptime.txt` (seconds since boot, which `date -s` does not move).

use std::path::PathBuf;
use zpulse_tests::raw::{self, close};
use zpulse_tests::synthetic::copy_tree;

const REC: &str = "report-breaks";

fn capture(n: usize) -> PathBuf {
    raw::lab(&format!("{REC}/series/{n:03}"))
}

use zpulse_tests::report_json as report;

/// The report of a series made of the captures `from..=to` (copied, names kept).
fn series_report(from: usize, to: usize) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    for n in from..=to {
        copy_tree(&capture(n), &dir.path().join(format!("{n:03}")));
    }
    report(&[dir.path().as_os_str()])
}

/// The stretches of captures `(a, b)` a window's figures must come from.
type Sides = [(usize, usize)];

fn seconds(sides: &Sides) -> f64 {
    sides
        .iter()
        .map(|&(a, b)| raw::captured_at(&capture(b)) - raw::captured_at(&capture(a)))
        .sum()
}

/// Σ Δ of diskstats field `field` of `disk` over the sides.
fn disk_sum(sides: &Sides, disk: &str, field: usize) -> f64 {
    sides
        .iter()
        .map(|&(a, b)| {
            (raw::diskstats(&capture(b), disk)[field] - raw::diskstats(&capture(a), disk)[field])
                as f64
        })
        .sum()
}

/// The top-level vdev `mirror-0` of pool rs in capture `n`: (reads, writes, time since open
/// in ns), from the decoded ioctl reply.
fn mirror(n: usize) -> (u64, u64, u64) {
    let snap = zpulse_agent::capture::load(&capture(n)).unwrap();
    let pool = snap.pool("rs").expect("pool rs");
    let root = &pool.config.as_ref().expect("a config").root;
    let top = root
        .children
        .iter()
        .find(|v| v.name.starts_with("mirror"))
        .expect("the mirror");
    let s = top.stats.as_ref().expect("stats");
    (s.ops[1], s.ops[2], s.timestamp)
}

/// Reads and writes per second of mirror-0 over the sides, by its own clock.
fn mirror_rates(sides: &Sides) -> (f64, f64) {
    let (mut r, mut w, mut ns) = (0.0, 0.0, 0.0);
    for &(a, b) in sides {
        let (x, y) = (mirror(a), mirror(b));
        r += (y.0 - x.0) as f64;
        w += (y.1 - x.1) as f64;
        ns += (y.2 - x.2) as f64;
    }
    (r / (ns / 1e9), w / (ns / 1e9))
}

fn find<'a>(
    list: &'a serde_json::Value,
    key: &str,
    pred: impl Fn(&str) -> bool,
) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|x| x[key].as_str().is_some_and(&pred))
        .unwrap_or_else(|| panic!("no {key} matching in {list}"))
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The report's disk and mirror figures equal the raw counters over `sides`.
fn figures_are_those_of(r: &serde_json::Value, sides: &Sides) {
    let t = seconds(sides);
    assert!(
        close(f(&r["covered_s"]), t, 1e-9),
        "covered {} vs {t}",
        r["covered_s"]
    );
    for disk in ["sdc", "sdd", "sda"] {
        let d = find(&r["disks"], "name", |n| n == disk);
        let reads = disk_sum(sides, disk, 2) / t;
        let writes = disk_sum(sides, disk, 6) / t;
        let util = disk_sum(sides, disk, 11) / (t * 1000.0) * 100.0;
        assert!(
            close(f(&d["r_s"]), reads, 1e-6),
            "{disk} r/s {} vs {reads}",
            d["r_s"]
        );
        assert!(
            close(f(&d["w_s"]), writes, 1e-6),
            "{disk} w/s {} vs {writes}",
            d["w_s"]
        );
        assert!(
            (f(&d["util_mean"]) - util.min(100.0)).abs() < 1e-6,
            "{disk} %util {} vs {util}",
            d["util_mean"]
        );
    }
    let (reads, writes) = mirror_rates(sides);
    let v = find(&r["vdevs"], "subject", |s| {
        s.starts_with("rs/normal/mirror")
    });
    assert!(
        close(f(&v["read_ops_s"]), reads, 1e-6),
        "mirror r/s {} vs {reads}",
        v["read_ops_s"]
    );
    assert!(
        close(f(&v["write_ops_s"]), writes, 1e-6),
        "mirror w/s {} vs {writes}",
        v["write_ops_s"]
    );
}

/// (kind, from, to) of each break.
fn breaks(r: &serde_json::Value) -> Vec<(String, f64, f64)> {
    zpulse_tests::report_breaks(r)
        .into_iter()
        .map(|b| (b.kind, b.from, b.to))
        .collect()
}

fn at(n: usize) -> f64 {
    raw::captured_at(&capture(n))
}

#[test]
fn an_export_and_import_splits_the_window_and_each_side_counts() {
    let r = series_report(0, 3);
    assert_eq!(breaks(&r), vec![("restart".to_owned(), at(1), at(2))]);
    let note = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n.as_str().unwrap().contains("restarted"));
    let note = note.expect("a note says what restarted").as_str().unwrap();
    assert!(note.contains("pool rs"), "{note}");
    figures_are_those_of(&r, &[(0, 1), (2, 3)]);
    // The restart is in the recording: the mirror's time since open started again.
    assert!(mirror(2).2 < mirror(1).2, "{:?} {:?}", mirror(1), mirror(2));
}

#[test]
fn a_gap_is_left_out_and_said() {
    // More than 3 usual intervals without a capture, by the guest's own clock too.
    let usual = (at(3) - at(2)).max(at(5) - at(4));
    assert!(at(4) - at(3) > 3.0 * usual, "the recording has a gap");
    let r = series_report(2, 5);
    assert_eq!(breaks(&r), vec![("gap".to_owned(), at(3), at(4))]);
    figures_are_those_of(&r, &[(2, 3), (4, 5)]);
    // The series' points: one per interval kept and one empty point at the gap.
    assert_eq!(r["series"]["t"].as_array().unwrap().len(), 3);
}

fn uptime(n: usize) -> f64 {
    let text = std::fs::read_to_string(capture(n).join("cli/uptime.txt")).unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn a_clock_step_is_told_from_a_gap_and_left_out() {
    // The guest's own record: three weeks on the wall clock, minutes since boot.
    let wall = at(6) - at(5);
    let passed = uptime(6) - uptime(5);
    assert!(wall > 20.0 * 86_400.0 && passed < 600.0, "{wall} {passed}");
    let r = series_report(4, 7);
    let b = breaks(&r);
    assert_eq!(b, vec![("clock-step".to_owned(), at(5), at(6))]);
    figures_are_those_of(&r, &[(4, 5), (6, 7)]);
    // The charts' time line does not carry the step: its last point is about the time that
    // passed since the window began, not three weeks.
    let t = r["series"]["t"].as_array().unwrap();
    let last = f(t.last().unwrap());
    let elapsed = uptime(7) - uptime(4);
    assert!(
        last < elapsed * 2.0,
        "chart time {last} s, {elapsed} s passed"
    );
}

#[test]
fn the_whole_recording_has_its_three_breaks_in_order() {
    let r = series_report(0, 7);
    let kinds: Vec<String> = breaks(&r).into_iter().map(|b| b.0).collect();
    assert_eq!(kinds, ["restart", "gap", "clock-step"]);
    figures_are_those_of(&r, &[(0, 1), (2, 3), (4, 5), (6, 7)]);
}

/// An agent stop read back through its history (`tests/lab/scenarios/history-stop.sh`):
/// `zpulse run` at a 10 s interval with its history on, stopped for about 150 s between two
/// runs of 65 s. The guest's wall clock at each start and stop (`times.txt`) is the ground
/// truth: the stop is one gap, from the first run's last snapshot (within an interval of its
/// stop) to the second run's first (within seconds of its start), and the figures cover the
/// two runs and nothing of the stop.
#[test]
fn an_agent_stop_in_the_history_is_one_gap_between_the_runs() {
    let rec = raw::lab("history-stop");
    let times = raw::times(&rec);
    let (start1, stop1, start2, stop2) = (
        times["start1"],
        times["stop1"],
        times["start2"],
        times["stop2"],
    );
    let interval = 10.0;
    // The agent's first snapshot comes once it has started (plugins, sinks, /dev/zfs).
    let startup = 3.0;
    let r = zpulse_tests::history_report(&rec.join("history"), start1, stop2);
    let b = breaks(&r);
    assert_eq!(b.len(), 1, "{b:?}");
    let (kind, from, to) = &b[0];
    assert_eq!(kind, "gap");
    assert!(
        (stop1 - interval..=stop1).contains(from),
        "the gap starts at {from}, the first run stopped at {stop1}"
    );
    assert!(
        (start2..=start2 + startup).contains(to),
        "the gap ends at {to}, the second run started at {start2}"
    );
    let runs = (stop1 - start1) + (stop2 - start2);
    let covered = f(&r["covered_s"]);
    assert!(
        covered <= runs && covered >= runs - 2.0 * (interval + startup),
        "covered {covered} s of runs lasting {runs} s together"
    );
}

/// A pool destroyed and created again under its name between two captures
/// (`tests/lab/scenarios/recreate.sh`, OpenZFS 2.1, which has no `guid` kstat): the window is
/// split there and the note says what happened. `zpool get guid` beside each capture is the
/// ground truth: one guid in `000`, `001`, another in `002`, `003`.
#[test]
fn a_pool_created_again_under_its_name_is_a_restart_that_says_so() {
    let series = raw::lab("recreate/series");
    let guid = |n: &str| -> String {
        let text = std::fs::read_to_string(series.join(n).join("cli/zpool-guid.txt")).unwrap();
        text.split('\t').nth(2).unwrap().to_owned()
    };
    assert_eq!(guid("000"), guid("001"));
    assert_ne!(guid("001"), guid("002"));
    assert_eq!(guid("002"), guid("003"));
    let r = report(&[series.as_os_str()]);
    let b = breaks(&r);
    let at = |n: &str| raw::captured_at(&series.join(n));
    assert_eq!(
        b,
        vec![("restart".to_owned(), at("001"), at("002"))],
        "{:#}",
        r["breaks"]
    );
    let what = r["breaks"][0]["what"].as_str().unwrap();
    assert!(
        what.contains("pool rc was destroyed and created again"),
        "{what}"
    );
    // The figures cover the intervals on each side, none across the re-creation.
    let covered = f(&r["covered_s"]);
    let sides = (at("001") - at("000")) + (at("003") - at("002"));
    assert!(close(covered, sides, 0.001), "{covered} against {sides}");
}
