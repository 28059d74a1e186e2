//! `zpulse replay` over the lab series agrees with `iostat -x`: the expected figures are
//! computed here from the raw `/proc/diskstats` lines of the two captures with sysstat's
//! formulas (docs/zfs-sources.md, "`/proc/diskstats`"), independently of the agent's parsers.

use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

fn series() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab/basic")
}

fn captured_at(capture: &str) -> f64 {
    let text = std::fs::read_to_string(series().join(capture).join("zpulse-capture.toml")).unwrap();
    let line = text.lines().find(|l| l.starts_with("captured_at")).unwrap();
    line.split('=').nth(1).unwrap().trim().parse().unwrap()
}

/// name → the 11+ numeric fields after the name, as sysstat reads them.
fn diskstats(capture: &str) -> HashMap<String, Vec<u64>> {
    let text = std::fs::read_to_string(series().join(capture).join("proc/diskstats")).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[2].to_string(),
                f[3..].iter().map(|v| v.parse().unwrap()).collect(),
            )
        })
        .collect()
}

fn replay_json() -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["replay", "--format", "json"])
        .arg(series())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn replay_matches_iostat_formulas() {
    let samples = replay_json();
    assert_eq!(samples.len(), 1, "two captures make one sample");
    let sample = &samples[0];
    let itv = captured_at("001") - captured_at("000");
    assert!((sample["interval"].as_f64().unwrap() - itv).abs() < 1e-9);

    let (a, b) = (diskstats("000"), diskstats("001"));
    let disks = sample["disks"].as_array().unwrap();
    assert_eq!(disks.len(), b.len(), "every disk of the capture has rates");
    let mut busy_disks = 0;
    for d in disks {
        let name = d["name"].as_str().unwrap();
        let (x, y) = (&a[name], &b[name]);
        // Fields after the name: 0 reads, 2 sectors read, 4 writes, 6 sectors written,
        // 9 io_ticks (ms busy), 10 weighted ms.
        let delta = |i: usize| (y[i] as u32).wrapping_sub(x[i] as u32) as f64;
        let util = (delta(9) / (itv * 1000.0) * 100.0).min(100.0);
        let r_s = (y[0] - x[0]) as f64 / itv;
        let w_s = (y[4] - x[4]) as f64 / itv;
        let rkb = (y[2] - x[2]) as f64 / 2.0 / itv;
        let got = |k: &str| d[k].as_f64().unwrap();
        assert!(
            (got("util") - util).abs() <= 1.0,
            "{name}: %util {} vs iostat {util}",
            got("util")
        );
        assert!((got("r_s") - r_s).abs() < 1e-9, "{name}: r/s");
        assert!((got("w_s") - w_s).abs() < 1e-9, "{name}: w/s");
        assert!((got("rkb_s") - rkb).abs() < 1e-9, "{name}: rkB/s");
        if r_s + w_s > 0.0 {
            busy_disks += 1;
        }
    }
    // The scenario wrote 2000 files between the captures: the pool's disks did I/O, so the
    // comparison above was not only over idle devices.
    assert!(
        busy_disks >= 4,
        "expected the pool's disks to be active in the lab interval"
    );
}

#[test]
fn replay_text_names_the_disks_and_their_kind() {
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .arg("replay")
        .arg(series())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // The lab's sda/sdb are rotational, sdc–sdf not (sys/block/*/queue/rotational).
    for (disk, kind) in [
        ("sda", "HDD"),
        ("sdb", "HDD"),
        ("sdc", "SSD"),
        ("sdf", "SSD"),
    ] {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(disk))
            .unwrap_or_else(|| panic!("no line for {disk} in\n{text}"));
        assert!(line.contains(kind), "{disk} should be {kind}: {line}");
    }
}

#[test]
fn replay_of_a_single_capture_says_what_to_do() {
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .arg("replay")
        .arg(series().join("000"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least two captures"), "{err}");
}
