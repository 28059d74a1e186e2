//! `zpulse report` across restarts of the counters that only the vdev tree or the boot tell:
//! devices replaced (`tests/lab/scenarios/replace.sh`) and a reboot
//! (`tests/lab/scenarios/reboot.sh`), both recorded on the lab's real OpenZFS 2.1 kernel.
//!
//! Expected values come from what the guest said beside each capture: `zpool status -g`
//! (the vdev guids each capture saw), `zpool status -P` (their paths), `/proc/stat`'s
//! `btime` and `boot_id` at each boot, the guest's clock at each start, and the vdevs'
//! counters as the kernel's ioctl reply holds them.

use std::path::{Path, PathBuf};
use zpulse_tests::raw::{self, close};
use zpulse_tests::{report_breaks as breaks, report_json as report};

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The leaf lines of a `zpool status` config section (indented below a top-level vdev):
/// the first word of each, a guid with `-g`, a path with `-P`.
fn leaves(status: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(status).unwrap();
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("NAME"))
        .skip(3) // NAME, the pool, the mirror
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect()
}

/// The device name `zpool status` gives a whole disk: its path without `/dev/` and the
/// partition ZFS made (`/dev/sdd1` → `sdd`).
fn disk_name(path: &str) -> String {
    path.trim_start_matches("/dev/")
        .trim_end_matches(char::is_numeric)
        .to_owned()
}

/// mirror-0 of `pool` in `capture`: (reads, writes, time since open in ns), from the decoded
/// ioctl reply.
fn mirror(capture: &Path, pool: &str) -> (u64, u64, u64) {
    let snap = zpulse_agent::capture::load(capture).unwrap();
    let pool = snap.pool(pool).expect("the pool");
    let top = &pool.config.as_ref().expect("a config").root.children[0];
    assert!(top.name.starts_with("mirror"), "{}", top.name);
    let s = top.stats.as_ref().expect("stats");
    (s.ops[1], s.ops[2], s.timestamp)
}

/// The report's figures are those of `pool`'s mirror-0 over the stretches of `series` between
/// captures `(a, b)`: the time they cover (by the captures' clocks) and the mirror's reads
/// and writes per second (by its own clock), from the raw counters.
fn figures_are_those_of(
    r: &serde_json::Value,
    series: &Path,
    pool: &str,
    sides: &[(usize, usize)],
) {
    let capture = |i: usize| series.join(format!("{i:03}"));
    let (mut reads, mut writes, mut ns, mut seconds) = (0.0, 0.0, 0.0, 0.0);
    for &(a, b) in sides {
        let (x, y) = (mirror(&capture(a), pool), mirror(&capture(b), pool));
        reads += (y.0 - x.0) as f64;
        writes += (y.1 - x.1) as f64;
        ns += (y.2 - x.2) as f64;
        seconds += raw::captured_at(&capture(b)) - raw::captured_at(&capture(a));
    }
    assert!(
        close(f(&r["covered_s"]), seconds, 1e-9),
        "{}",
        r["covered_s"]
    );
    let subject = format!("{pool}/normal/mirror-0");
    let v = r["vdevs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["subject"] == subject.as_str())
        .expect("mirror-0's figures");
    let (r_s, w_s) = (reads / (ns / 1e9), writes / (ns / 1e9));
    assert!(
        close(f(&v["read_ops_s"]), r_s, 1e-6),
        "{} vs {r_s}",
        v["read_ops_s"]
    );
    assert!(
        close(f(&v["write_ops_s"]), w_s, 1e-6),
        "{} vs {w_s}",
        v["write_ops_s"]
    );
    assert!(w_s > 1.0, "the writer ran on every side");
}

/// Two devices replaced in turn: sdd by sde (another disk), then sdc by a blank disk at its
/// own path. Each is a restart between the captures where `zpool status -g` shows a leaf
/// guid gone, said with the devices `zpool status -P` names; mirror-0's figures are those of
/// the three stretches between, from its raw counters.
#[test]
fn a_replaced_device_splits_the_window_and_is_named() {
    let series = raw::lab("replace/series");
    let n = 6;
    let capture = |i: usize| series.join(format!("{i:03}"));
    let guids: Vec<Vec<String>> = (0..n)
        .map(|i| leaves(&capture(i).join("cli/zpool-status-g.txt")))
        .collect();
    let paths: Vec<Vec<String>> = (0..n)
        .map(|i| leaves(&capture(i).join("cli/zpool-status-P.txt")))
        .collect();
    // Where a leaf guid went, and which device (by position) left and which came.
    let mut expected = Vec::new();
    for i in 1..n {
        let gone: Vec<usize> = (0..guids[i - 1].len())
            .filter(|&k| !guids[i].contains(&guids[i - 1][k]))
            .collect();
        if gone.is_empty() {
            continue;
        }
        assert_eq!(gone.len(), 1, "one device at a time");
        let old = disk_name(&paths[i - 1][gone[0]]);
        let new = disk_name(&paths[i][gone[0]]);
        let what = if old == new {
            format!("pool rp: device {old} was replaced by a new device at the same path")
        } else {
            format!("pool rp: device {old} was replaced by {new}")
        };
        expected.push((i - 1, i, what));
    }
    assert_eq!(
        expected.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(),
        [(1, 2), (3, 4)],
        "the recording replaced a device between 001 and 002 and between 003 and 004"
    );
    let r = report(&[series.as_os_str()]);
    let got = breaks(&r);
    assert_eq!(got.len(), 2, "{got:?}");
    for (got, (a, b, said)) in got.iter().zip(&expected) {
        assert_eq!(got.kind, "restart");
        let (x, y) = (
            raw::captured_at(&capture(*a)),
            raw::captured_at(&capture(*b)),
        );
        assert!(
            (got.from - x).abs() < 1e-6 && (got.to - y).abs() < 1e-6,
            "{got:?} against {x}..{y}"
        );
        assert!(
            got.what.starts_with(&format!("{said};")),
            "{got:?} / {said}"
        );
    }
    // mirror-0's rates over the three stretches, by its own clock.
    figures_are_those_of(&r, &series, "rp", &[(0, 1), (2, 3), (4, 5)]);
}

/// `boots.txt` of the reboot recording: (boot_id, btime) a boot.
fn boots(rec: &Path) -> Vec<(String, f64)> {
    std::fs::read_to_string(rec.join("boots.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!((w[0], w[2]), ("boot_id", "btime"), "{l}");
            (w[1].to_owned(), w[3].parse().unwrap())
        })
        .collect()
}

/// "HH:MM:SS" of a Unix time, UTC.
fn time_of_day(unix: f64) -> String {
    let s = unix as u64 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn reboot_rec() -> PathBuf {
    raw::lab("reboot")
}

/// The agent's history across a reboot (systemd stopped it, kexec started the kernel again,
/// systemd started it): one restart said as the reboot, with the second boot's time, from
/// the first boot's last snapshot to the second's first; the figures cover both runs.
#[test]
fn a_reboot_in_the_history_is_one_restart_said_as_a_reboot() {
    let rec = reboot_rec();
    let (boots, times) = (boots(&rec), raw::times(&rec));
    assert_eq!(boots.len(), 2, "two boots");
    assert_ne!(
        boots[0].0, boots[1].0,
        "another boot_id: the kernel started again"
    );
    let (start1, reboot, start2, stop2) = (
        times["start1"],
        times["reboot"],
        times["start2"],
        times["stop2"],
    );
    let (interval, startup) = (10.0, 3.0);
    let r = zpulse_tests::history_report(&rec.join("history"), start1, stop2);
    let b = breaks(&r);
    assert_eq!(b.len(), 1, "{b:?}");
    let (kind, from, to, what) = (&b[0].kind, b[0].from, b[0].to, &b[0].what);
    assert_eq!(kind, "restart");
    assert!(
        (reboot - interval - startup..=reboot + interval).contains(&from),
        "the restart starts at {from}, the reboot was asked at {reboot}"
    );
    assert!(
        (start2..=start2 + startup).contains(&to),
        "the restart ends at {to}, the agent started again at {start2}"
    );
    assert!(
        what.starts_with("the host rebooted (booted again at ")
            && what.contains(&time_of_day(boots[1].1)),
        "{what}: the second boot's btime is {}",
        boots[1].1
    );
    let runs = (reboot - start1) + (stop2 - start2);
    let covered = f(&r["covered_s"]);
    assert!(
        covered <= runs + interval && covered >= runs - 3.0 * (interval + startup),
        "covered {covered} s of runs lasting about {runs} s together"
    );
}

/// The captures on each side of the reboot: one restart, between 001 and 002, said as the
/// reboot; the figures those of the two sides.
#[test]
fn a_reboot_between_captures_is_a_restart_said_as_a_reboot() {
    let series = reboot_rec().join("series");
    let r = report(&[series.as_os_str()]);
    let b = breaks(&r);
    let at = |n: &str| raw::captured_at(&series.join(n));
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].kind, "restart");
    assert!(
        (b[0].from - at("001")).abs() < 1e-6 && (b[0].to - at("002")).abs() < 1e-6,
        "{b:?}"
    );
    assert!(b[0].what.starts_with("the host rebooted"), "{b:?}");
    // Each boot's side counts, from its own counters (the kernel's restarted at the boot).
    figures_are_those_of(&r, &series, "rb", &[(0, 1), (2, 3)]);
}

/// What the live checks see across the same recording: an interior vdev's counters are its
/// children's summed at each read, so over an interval in which a device left the pool (a
/// leaf guid of `zpool status -g` gone) mirror-0 and the pool root get no rate, whatever
/// their sums did; the devices that stayed keep theirs, and every other interval has all.
#[test]
fn an_interval_in_which_a_device_left_gives_its_parents_no_rate() {
    let series = raw::lab("replace/series");
    let capture = |i: usize| series.join(format!("{i:03}"));
    let load = |i: usize| zpulse_agent::capture::load(&capture(i)).unwrap();
    for i in 1..6 {
        let before = leaves(&capture(i - 1).join("cli/zpool-status-g.txt"));
        let after = leaves(&capture(i).join("cli/zpool-status-g.txt"));
        let left = before.iter().any(|g| !after.contains(g));
        let (a, b) = (load(i - 1), load(i));
        let sample = zpulse_proto::Sample::between(&a, &b).unwrap();
        let rates = sample.pools.iter().find(|p| p.name == "rp").expect("rp");
        let has = |subject: &str| rates.vdevs.iter().any(|v| v.subject == subject);
        let root = &b.pool("rp").unwrap().config.as_ref().unwrap().root;
        let top = &root.children[0];
        let mirror = top.subject_of("rp", top);
        assert_eq!(has("rp"), !left, "{i:03}: the pool root");
        assert_eq!(has(&mirror), !left, "{i:03}: {mirror}");
        // A device in both captures (by guid) keeps its rate.
        for leaf in top
            .children
            .iter()
            .filter(|l| l.guid.is_some_and(|g| before.contains(&g.to_string())))
        {
            let subject = top.subject_of("rp", leaf);
            assert!(has(&subject), "{i:03}: {subject} stayed and has a rate");
        }
    }
}
