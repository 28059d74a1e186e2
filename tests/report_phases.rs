//! `zpulse report`'s phases on the real kernel, from the lab's `storm-phase` recording
//! (tests/lab/scenarios/storm-phase.sh): an HDD mirror (sda, sdb) quiet, then two walkers
//! stat 200k small files for about 60 s, then quiet again; `phases.txt` names the last quiet
//! capture before the storm and the storm's last capture.
//!
//! Expected times are the captures' own `captured_at`; expected figures come from
//! `/proc/diskstats` in the captures, read as text here.

use std::path::{Path, PathBuf};
use zpulse_tests::raw;
use zpulse_tests::report_with_checks;
use zpulse_tests::synthetic::copy_tree;

/// `zpulse report SERIES` with the shipped checks, in `format`.
fn report_as(series: &Path, format: &str) -> String {
    report_with_checks(&[series.as_os_str()], format)
}

fn report(series: &Path) -> serde_json::Value {
    serde_json::from_str(&report_as(series, "json")).expect("a JSON report")
}

fn storm_capture(name: &str) -> PathBuf {
    raw::lab(&format!("storm-phase/series/{name}"))
}

/// The captures of the storm recording, in order.
fn storm_captures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(raw::lab("storm-phase/series"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `phases.txt`'s `key=value`: which captures bound the storm.
fn storm_mark(key: &str) -> String {
    let text = std::fs::read_to_string(raw::lab("storm-phase/phases.txt")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} missing in phases.txt"))
        .to_owned()
}

/// The captures bounding the storm as the disks counted it: the run of intervals in which sda
/// was busy at least 5% of the time (`/proc/diskstats` io_ticks; under 5% the HDD check calls
/// a disk idle). A capture's `captured_at` is when it began, and one takes about 50 s here,
/// so the walkers (started after `before_storm` ended, stopped after `storm_last` ended) fall
/// partly into the interval after `storm_last`.
fn storm_bounds() -> (String, String) {
    let captures = storm_captures();
    let busy: Vec<usize> = (1..captures.len())
        .filter(|&i| {
            let (a, b) = (storm_capture(&captures[i - 1]), storm_capture(&captures[i]));
            diskstats_figures(&a, &b, "sda").0 >= 5.0
        })
        .collect();
    let (first, last) = (busy[0], *busy.last().unwrap());
    assert_eq!(last - first + 1, busy.len(), "one busy stretch: {busy:?}");
    // The busy stretch is the storm's: it ends after the storm began and begins before it
    // ended.
    let began = read_date(&storm_capture(&storm_mark("before_storm")));
    let ended_by = read_date(&storm_capture(&storm_mark("storm_last")))
        + storm_mark("storm_seconds").parse::<f64>().unwrap();
    assert!(raw::captured_at(&storm_capture(&captures[last])) > began);
    assert!(raw::captured_at(&storm_capture(&captures[first - 1])) < ended_by);
    (captures[first - 1].clone(), captures[last].clone())
}

/// The guest's wall clock read right after a capture (`cli/date.txt`).
fn read_date(capture: &Path) -> f64 {
    std::fs::read_to_string(capture.join("cli/date.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn figure(section: &serde_json::Value, key: &str) -> f64 {
    let figures = section["figures"].as_array().unwrap();
    let fig = figures
        .iter()
        .find(|g| g["key"] == key)
        .unwrap_or_else(|| panic!("no figure {key} in {section}"));
    f(&fig["value"])
}

/// Figures of `disk` from its diskstats between captures `a` and `b`: (util %, IOPS, read
/// IOPS, MB/s moved).
fn diskstats_figures(a: &Path, b: &Path, disk: &str) -> (f64, f64, f64, f64) {
    let t = raw::captured_at(b) - raw::captured_at(a);
    let (x, y) = (raw::diskstats(a, disk), raw::diskstats(b, disk));
    // Fields after major, minor: reads 2, sectors read 4, writes 6, sectors written 8,
    // io_ticks 11 (proc/diskstats, Documentation/admin-guide/iostats.rst).
    let d = |i: usize| (y[i] - x[i]) as f64;
    (
        d(11) / (t * 1000.0) * 100.0,
        (d(2) + d(6)) / t,
        d(2) / t,
        (d(4) + d(8)) * 512.0 / 1e6 / t,
    )
}

/// Sections report figures rounded to two decimals.
fn rounded_equal(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 0.005 + 1e-9,
        "{what}: {got} in the report, {want} from the raw counters"
    );
}

fn hdd_phases(r: &serde_json::Value, subject: &str) -> Vec<serde_json::Value> {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["check"] == "hdd-saturation" && p["subject"] == subject)
        .cloned()
        .collect()
}

#[test]
fn the_storm_is_a_phase_with_the_times_and_figures_of_its_captures() {
    let series = raw::lab("storm-phase/series");
    let r = report(&series);
    let (from, to) = storm_bounds();
    let (before, last) = (storm_capture(&from), storm_capture(&to));
    let captures = storm_captures();
    assert!(
        captures.first() < Some(&from) && captures.last() > Some(&to),
        "quiet captures on both sides of the storm: {captures:?}"
    );
    for disk in ["sda", "sdb"] {
        let phases = hdd_phases(&r, disk);
        let storm: Vec<&serde_json::Value> = phases
            .iter()
            .filter(|p| p["verdict"].as_str().unwrap_or("").contains("seek-bound"))
            .collect();
        assert_eq!(
            storm.len(),
            1,
            "{disk}: one seek-bound phase in {phases:#?}"
        );
        let p = storm[0];
        assert_eq!(f(&p["from"]), raw::captured_at(&before), "{disk} from");
        assert_eq!(f(&p["to"]), raw::captured_at(&last), "{disk} to");
        let (util, iops, read_iops, mb_s) = diskstats_figures(&before, &last, disk);
        rounded_equal(figure(p, "util_mean_pct"), util, &format!("{disk} %util"));
        rounded_equal(figure(p, "iops"), iops, &format!("{disk} IOPS"));
        rounded_equal(
            figure(p, "read_iops"),
            read_iops,
            &format!("{disk} read IOPS"),
        );
        rounded_equal(figure(p, "mb_per_s"), mb_s, &format!("{disk} MB/s"));

        // The whole window is still judged as a whole, with every capture's figures: the
        // disk in a section of its own, or among the idle ones (under 5% busy, the check's
        // line for idle disks) — never with the storm's verdict.
        let (first, end) = (
            storm_capture(&captures[0]),
            storm_capture(captures.last().unwrap()),
        );
        let (util_all, ..) = diskstats_figures(&first, &end, disk);
        let hdd: Vec<&serde_json::Value> = r["conclusions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["check"] == "hdd-saturation")
            .collect();
        match hdd.iter().find(|s| s["subject"] == disk) {
            Some(whole) => {
                rounded_equal(
                    figure(whole, "util_mean_pct"),
                    util_all,
                    &format!("{disk} whole %util"),
                );
                assert_ne!(whole["verdict"], p["verdict"], "{disk}: {whole}");
            }
            None => {
                assert!(util_all < 5.0, "{disk} busy {util_all}% over the window");
                let idle = hdd
                    .iter()
                    .find(|s| s["title"].as_str().unwrap_or("").ends_with("idle"))
                    .unwrap_or_else(|| panic!("{disk}: neither judged nor idle in {hdd:#?}"));
                let names = idle["summary"].as_str().unwrap();
                assert!(
                    names.split([',', ' ']).any(|w| w == disk),
                    "{disk} among the idle: {names}"
                );
            }
        }
    }
}

#[test]
fn the_storm_captures_alone_say_what_the_phase_says() {
    let captures = storm_captures();
    let (from, to) = storm_bounds();
    let dir = tempfile::tempdir().unwrap();
    for name in captures
        .iter()
        .filter(|n| n.as_str() >= from.as_str() && n.as_str() <= to.as_str())
    {
        copy_tree(&storm_capture(name), &dir.path().join(name));
    }
    let alone = report(dir.path());
    let whole = report(&raw::lab("storm-phase/series"));
    for disk in ["sda", "sdb"] {
        let section = alone["conclusions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["check"] == "hdd-saturation" && s["subject"] == disk)
            .unwrap()
            .clone();
        let phase = hdd_phases(&whole, disk)
            .into_iter()
            .find(|p| p["verdict"].as_str().unwrap_or("").contains("seek-bound"))
            .unwrap();
        assert_eq!(section["verdict"], phase["verdict"], "{disk}");
        assert_eq!(section["title"], phase["title"], "{disk}");
        assert_eq!(section["figures"], phase["figures"], "{disk}");
        assert_eq!(section["advice"], phase["advice"], "{disk}");
    }
}

#[test]
fn text_and_page_name_the_phase_with_its_times() {
    let series = raw::lab("storm-phase/series");
    let at = |name: &str| {
        let t = raw::captured_at(&storm_capture(name)).floor() as i64;
        let s = t.rem_euclid(86_400);
        format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
    };
    let (from, to) = storm_bounds();
    let (from, to) = (at(&from), at(&to));
    let text = report_as(&series, "text");
    let line = text
        .lines()
        .find(|l| l.contains("sda: seek-bound from"))
        .unwrap_or_else(|| panic!("no phase line for sda in\n{text}"));
    assert!(line.contains(&format!("{from} UTC to {to} UTC")), "{line}");
    let page = report_as(&series, "html");
    assert!(page.contains("<h2>Phases</h2>"));
    assert!(page.contains(&format!("{from} UTC to {to} UTC")));
}
