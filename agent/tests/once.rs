//! `zpulse once` and `zpulse capture`, run as the binary: on this host (which has no ZFS),
//! on real lab captures, and on broken captures.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lab(capture: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/lab/basic")
        .join(capture)
}

fn zpulse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(args)
        .output()
        .unwrap()
}

fn json(args: &[&str]) -> Value {
    let out = zpulse(args);
    assert!(
        out.status.success(),
        "zpulse {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A path `name` (not created) in a fresh temporary directory, removed when this drops: a
/// failing test leaves nothing behind, and two runs never meet.
struct Scratch {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn temp(name: &str) -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    Scratch { _dir: dir, path }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// The run succeeded; else its stderr is the failure.
fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The run failed, saying `why` on stderr.
fn assert_refused(out: &Output, why: &str) {
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(why), "{err}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `name → last token` of every data row of a NAMED kstat file, read naively.
fn kstat_rows(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(2)
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            (t[0].to_string(), t[t.len() - 1].to_string())
        })
        .collect()
}

#[test]
fn json_carries_every_arcstats_and_zil_value_and_every_disk() {
    for capture in ["000", "001"] {
        let root = lab(capture);
        let snap = json(&["once", "--root", root.to_str().unwrap(), "--format", "json"]);
        for (file, key) in [("arcstats", "arc"), ("zil", "zil")] {
            let rows = kstat_rows(&root.join("proc/spl/kstat/zfs").join(file));
            assert!(rows.len() > 10, "{file} has rows");
            for (name, value) in rows {
                let got = &snap[key]["fields"][&name];
                assert_eq!(got.to_string(), value, "{capture} {file} {name}");
            }
        }
        let disks: Vec<&str> = snap["disks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        let raw = std::fs::read_to_string(root.join("proc/diskstats")).unwrap();
        let expected: Vec<&str> = raw
            .lines()
            .map(|l| l.split_whitespace().nth(2).unwrap())
            .collect();
        assert_eq!(disks, expected);
        assert_eq!(snap["pools"][0]["name"], "tank");
        assert_eq!(snap["host"]["zfs_version"], "2.1.11-1+deb12u1");
    }
}

#[test]
fn once_without_zfs_still_reports_the_host() {
    let out = zpulse(&["once"]);
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    if !Path::new("/proc/spl/kstat/zfs").exists() {
        assert!(text.contains("ZFS kernel module not loaded"), "{text}");
    }
    let snap = json(&["once", "--format", "json"]);
    let raw = std::fs::read_to_string("/proc/diskstats").unwrap();
    let first = raw.lines().next().and_then(|l| l.split_whitespace().nth(2));
    if let Some(first) = first {
        assert_eq!(snap["disks"][0]["name"], first);
    }
    assert!(snap["memory"]["total"].as_u64().unwrap() > 0);
}

#[test]
fn once_with_interval_gives_rates() {
    let sample = json(&["once", "--interval", "0.3", "--format", "json"]);
    let itv = sample["interval"].as_f64().unwrap();
    assert!((0.29..1.5).contains(&itv), "interval {itv}");
    assert!(sample["cpu"]["busy_pct"].as_f64().unwrap() >= 0.0);
}

#[test]
fn capture_of_a_capture_reads_back_identically() {
    let dest = temp("recapture");
    let out = zpulse(&[
        "capture",
        dest.to_str().unwrap(),
        "--root",
        lab("000").to_str().unwrap(),
    ]);
    assert_ok(&out);
    let strip = |mut v: Value| {
        v["taken_at"] = Value::Null;
        v
    };
    let original = strip(json(&[
        "once",
        "--root",
        lab("000").to_str().unwrap(),
        "--format",
        "json",
    ]));
    let copy = strip(json(&[
        "once",
        "--root",
        dest.to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert_eq!(original, copy);
}

#[test]
fn a_live_series_replays() {
    let dest = temp("series");
    let out = zpulse(&[
        "capture",
        dest.to_str().unwrap(),
        "--count",
        "2",
        "--interval",
        "0.2",
    ]);
    assert_ok(&out);
    assert!(dest.join("000/zpulse-capture.toml").is_file());
    assert!(dest.join("001/proc/diskstats").is_file());
    let out = zpulse(&["replay", dest.to_str().unwrap(), "--format", "json"]);
    assert_ok(&out);
    let sample: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(sample["interval"].as_f64().unwrap() > 0.1);
}

#[test]
fn a_broken_kstat_costs_only_itself() {
    let root = temp("broken");
    copy_dir(&lab("000"), &root);
    std::fs::write(
        root.join("proc/spl/kstat/zfs/arcstats"),
        b"\x00\xffgarbage\nnot a kstat",
    )
    .unwrap();
    let snap = json(&["once", "--root", root.to_str().unwrap(), "--format", "json"]);
    let issues = snap["issues"].to_string();
    assert!(
        issues.contains("arcstats"),
        "the broken file is named: {issues}"
    );
    assert!(
        snap["zil"]["fields"]["zil_commit_count"].is_u64(),
        "the ZIL still parsed"
    );
    assert!(
        !snap["disks"].as_array().unwrap().is_empty(),
        "disks still parsed"
    );
}

#[test]
fn a_missing_capture_is_a_clear_error() {
    let out = zpulse(&["once", "--root", "/nonexistent/capture"]);
    assert_refused(&out, "zpulse-capture.toml");
}

#[test]
fn a_capture_of_an_unknown_format_is_refused() {
    let root = temp("format2");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("zpulse-capture.toml"),
        "format = 2\nos = \"linux\"\ncaptured_at = 1.0\n",
    )
    .unwrap();
    let out = zpulse(&["once", "--root", root.to_str().unwrap()]);
    assert_refused(&out, "format 2 is not supported");
}

/// A FreeBSD capture (`sysctl/<name>` files) goes through the FreeBSD parsers: built here
/// from a real FreeBSD 14 `sysctl kstat.zfs.misc.arcstats` listing, every value must come
/// back, and re-capturing it keeps it a FreeBSD capture.
#[test]
fn a_freebsd_capture_replays_through_the_sysctl_parsers() {
    let listing = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/external/freebsd/zftop-14+/sysctl-kstat.zfs.misc.arcstats.txt");
    let text = std::fs::read_to_string(listing).unwrap();
    let root = temp("freebsd");
    std::fs::create_dir_all(root.join("sysctl")).unwrap();
    let mut rows = Vec::new();
    for line in text.lines() {
        let (name, value) = line.split_once(": ").unwrap();
        std::fs::write(root.join("sysctl").join(name), value).unwrap();
        rows.push((
            name.rsplit('.').next().unwrap().to_string(),
            value.to_string(),
        ));
    }
    std::fs::write(
        root.join("zpulse-capture.toml"),
        "format = 1\nos = \"freebsd\"\ncaptured_at = 1700000000.5\nhostname = \"bsd\"\n",
    )
    .unwrap();
    let snap = json(&["once", "--root", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(snap["host"]["os"], "freebsd");
    assert_eq!(rows.len(), 148);
    for (field, value) in &rows {
        assert_eq!(snap["arc"]["fields"][field].to_string(), *value, "{field}");
    }
    let copy = temp("freebsd-copy");
    let out = zpulse(&[
        "capture",
        copy.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let again = json(&["once", "--root", copy.to_str().unwrap(), "--format", "json"]);
    assert_eq!(again["arc"], snap["arc"]);
}

/// Runs zpulse; a run that has not finished in 20 s is a hang, and the test fails.
fn zpulse_bounded(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
    match rx.recv_timeout(std::time::Duration::from_secs(20)) {
        Ok(out) => out,
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("zpulse {args:?} hung");
        }
    }
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn a_fifo_or_device_in_place_of_a_source_costs_only_itself() {
    let root = temp("fifo-source");
    copy_dir(&lab("000"), &root);
    mkfifo(&root.join("proc/diskstats"));
    std::fs::remove_file(root.join("proc/stat")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("proc/stat")).unwrap();
    let out = zpulse_bounded(&["once", "--root", root.to_str().unwrap(), "--format", "json"]);
    assert_ok(&out);
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    let issues = snap["issues"].to_string();
    assert!(
        issues.contains("diskstats") && issues.contains("not a regular file (a FIFO)"),
        "{issues}"
    );
    assert!(
        issues.contains("proc/stat") && issues.contains("character device"),
        "{issues}"
    );
    // Everything else still read: the arcstats of the capture.
    assert!(snap["arc"]["fields"]["hits"].is_u64(), "{}", snap["arc"]);
}

#[test]
fn a_manifest_that_is_a_fifo_or_dev_zero_is_refused_at_once() {
    let root = temp("fifo-manifest");
    copy_dir(&lab("000"), &root);
    let manifest = root.join("zpulse-capture.toml");
    mkfifo(&manifest);
    let out = zpulse_bounded(&["once", "--root", root.to_str().unwrap()]);
    assert_refused(&out, "not a regular file (a FIFO)");

    std::fs::remove_file(&manifest).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &manifest).unwrap();
    let out = zpulse_bounded(&["once", "--root", root.to_str().unwrap()]);
    assert_refused(&out, "character device");
    // In a series, for replay.
    let series = temp("fifo-series");
    copy_dir(&lab("000"), &series.join("000"));
    copy_dir(&lab("001"), &series.join("001"));
    let second = series.join("001/zpulse-capture.toml");
    std::fs::remove_file(&second).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &second).unwrap();
    let out = zpulse_bounded(&["replay", series.to_str().unwrap()]);
    assert_refused(&out, "character device");

    // A regular file too large to be a manifest.
    std::fs::remove_file(&manifest).unwrap();
    std::fs::write(&manifest, vec![b'#'; 1 << 20]).unwrap();
    let out = zpulse_bounded(&["once", "--root", root.to_str().unwrap()]);
    assert_refused(&out, "larger than");
}

#[test]
fn capture_never_writes_through_a_link_planted_in_its_directory() {
    let dest = temp("planted");
    std::fs::create_dir_all(dest.join("proc")).unwrap();
    let victim = temp("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, dest.join("proc/diskstats")).unwrap();
    let out = zpulse(&[
        "capture",
        dest.to_str().unwrap(),
        "--root",
        lab("000").to_str().unwrap(),
    ]);
    assert_refused(&out, "not empty");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn capture_into_an_existing_capture_or_series_is_refused() {
    let dest = temp("twice");
    let from = lab("000");
    let args = [
        "capture",
        dest.to_str().unwrap(),
        "--root",
        from.to_str().unwrap(),
    ];
    assert!(zpulse(&args).status.success());
    let before = std::fs::read(dest.join("zpulse-capture.toml")).unwrap();
    let out = zpulse(&args);
    assert_refused(&out, "not empty");
    assert_eq!(
        std::fs::read(dest.join("zpulse-capture.toml")).unwrap(),
        before
    );
    let out = zpulse(&[
        "capture",
        dest.to_str().unwrap(),
        "--count",
        "2",
        "--interval",
        "0.1",
    ]);
    assert!(!out.status.success());
}

#[test]
fn every_empty_or_misplaced_source_gets_its_note() {
    let root = temp("lost-sources");
    copy_dir(&lab("000"), &root);
    for rel in [
        "proc/spl/kstat/zfs/arcstats",
        "proc/diskstats",
        "proc/net/dev",
    ] {
        std::fs::write(root.join(rel), b"").unwrap();
    }
    // A kstat file replaced by a directory is a lost kstat, not a pool named after it.
    let zil = root.join("proc/spl/kstat/zfs/zil");
    std::fs::remove_file(&zil).unwrap();
    std::fs::create_dir(&zil).unwrap();
    std::fs::write(zil.join("state"), b"ONLINE\n").unwrap();
    let snap = json(&["once", "--root", root.to_str().unwrap(), "--format", "json"]);
    let issues = snap["issues"].as_array().unwrap();
    let noted = |source: &str, words: &str| {
        assert!(
            issues
                .iter()
                .any(|i| i["source"] == source && i["message"].as_str().unwrap().contains(words)),
            "no note for {source} saying {words:?}: {issues:?}"
        );
    };
    noted("proc/spl/kstat/zfs/arcstats", "empty file");
    noted("proc/diskstats", "empty file");
    noted("proc/net/dev", "empty file");
    noted("proc/spl/kstat/zfs/zil", "not a pool");
    let pools: Vec<&str> = snap["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    // The capture's one pool (lab/basic: `tank`), and no phantom `zil`.
    assert_eq!(pools, ["tank"]);
}

/// `zpulse once` of a host without ZFS (the lab capture with its kstats removed) shows the
/// CPU's shares since boot and each interface's totals, taken here from the capture's own
/// `/proc/stat` and `/proc/net/dev`.
#[test]
fn once_without_zfs_shows_cpu_and_network_since_boot() {
    let root = temp("capture");
    copy_dir(&lab("000"), &root);
    std::fs::remove_dir_all(root.join("proc/spl")).unwrap();
    std::fs::remove_dir_all(root.join("zfs-ioctl")).ok();
    let out = zpulse(&["once", "--root", root.to_str().unwrap()]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ZFS kernel module not loaded"), "{text}");

    let stat = std::fs::read_to_string(root.join("proc/stat")).unwrap();
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
    let total: u64 = cpu[..8].iter().sum();
    let busy = total - cpu[3] - cpu[4];
    let expected = format!(
        "CPU   since boot: busy {:.1}%, iowait {:.1}%",
        busy as f64 / total as f64 * 100.0,
        cpu[4] as f64 / total as f64 * 100.0
    );
    assert!(text.contains(&expected), "{expected}\n{text}");

    let dev = std::fs::read_to_string(root.join("proc/net/dev")).unwrap();
    for line in dev.lines().skip(2) {
        let (name, rest) = line.split_once(':').unwrap();
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        let name = name.trim();
        if name == "lo" {
            assert!(!text.contains("NET   lo "), "{text}");
            continue;
        }
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("NET   {name} ")))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        assert!(line.contains(&format!("({} errors), sent", f[2])), "{line}");
        assert!(line.ends_with(&format!("({} errors)", f[10])), "{line}");
    }
}
