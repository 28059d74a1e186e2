//! Behaviour preservation of the shipped checks on every lab series.
//!
//! `golden/lab-findings.jsonl` holds every event record that `zpulse replay --format json`
//! printed for each lab series below, with the five checks shipped then ([`RECORDED_WITH`])
//! loaded, **as the agent did before its performance work** (sample layout,
//! plugin dispatch, keyed lookups).
//! It was produced by running that binary, not derived from the captures: it is a regression
//! guard that the optimised sample path and plugins raise exactly the same findings — same
//! records, same figures, same order — not a statement of what the findings ought to be.
//! What they ought to be is asserted against the captures by each check's own replay tests
//! (`plugins/*/tests/replay.rs`).
//!
//! A deliberate change of a check's behaviour regenerates the file with the command in
//! `golden/README.md` and says so in its commit.

use std::path::Path;
use std::process::Command;
use zpulse_tests::{
    CHECKS_LIBRARY, CHECKS_PACKAGE, SHIPPED_CHECKS, build_into_test_target, disable_checks_but,
    fixture, workspace,
};

/// Every lab directory whose captures form one series (`lab/checks` itself holds separate
/// scenarios, out of time order, and is not one).
/// The checks the golden record was made with: the five shipped before that work, in the
/// order they are loaded (the order of their records). Checks shipped since (pool-health,
/// layout) are not in it, and are turned off here; what they raise on the lab captures is
/// asserted by their own replay tests (`plugins/*/tests/replay.rs`).
const RECORDED_WITH: [&str; 5] = [
    "hdd-saturation",
    "arc-sizing",
    "special-fill",
    "slog-usage",
    "l2arc-value",
];

const SERIES: [&str; 9] = [
    "basic",
    "checks/fill",
    "checks/quiet",
    "checks/storm",
    "storm/series",
    "vdevs/deg",
    "vdevs/deg-zpulse",
    "vdevs/rz",
    "vdevs/rz-zpulse",
];

fn replay(zpulse: &Path, profile: &Path, config: &Path, series: &str) -> Vec<String> {
    let out = Command::new(zpulse)
        .args(["replay", "--format", "json", "--config"])
        .arg(config)
        .arg(fixture(&format!("lab/{series}")))
        .arg("--plugin")
        .arg(profile.join(CHECKS_LIBRARY))
        .output()
        .expect("running zpulse replay");
    assert!(
        out.status.success(),
        "replay of {series}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("{\"record\""))
        .map(|l| format!("{series}\t{l}"))
        .collect()
}

#[test]
fn the_shipped_checks_raise_the_same_findings_on_every_lab_series() {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let zpulse = profile.join("zpulse");
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("zpulse.toml");
    let only = disable_checks_but(&RECORDED_WITH);
    std::fs::write(&config, format!("[plugins]\ndirs = []\n{only}\n")).unwrap();
    // The bundle still holds every recorded check, in the recorded order.
    let kept: Vec<_> = SHIPPED_CHECKS
        .iter()
        .filter(|c| RECORDED_WITH.contains(c))
        .copied()
        .collect();
    assert_eq!(
        kept, RECORDED_WITH,
        "every recorded check shipped, in order"
    );
    let mut got = Vec::new();
    for series in SERIES {
        got.extend(replay(&zpulse, &profile, &config, series));
    }
    // Every check loaded and ran: the agent said nothing about its plugins.
    for line in &got {
        assert!(!line.contains("\"kind\":\"agent\""), "{line}");
    }
    let golden = std::fs::read_to_string(workspace().join("tests/golden/lab-findings.jsonl"))
        .expect("tests/golden/lab-findings.jsonl");
    let want: Vec<&str> = golden.lines().collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "record {i} differs");
    }
    assert_eq!(got.len(), want.len(), "number of records");
}
