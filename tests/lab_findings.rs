//! Behaviour preservation of the shipped checks on every lab series.
//!
//! `golden/lab-findings.jsonl` holds every event record that `zpulse replay --format json`
//! printed for each lab series below, with the five checks shipped then ([`RECORDED_WITH`])
//! loaded, **as the agent did before the performance work of issue #14** (sample layout,
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
use zpulse_tests::{SHIPPED_CHECKS, build_into_test_target, fixture, workspace};

/// Every lab directory whose captures form one series (`lab/checks` itself holds separate
/// scenarios, out of time order, and is not one).
/// The checks the golden record was made with: the five shipped before issue #14, in the
/// order they are loaded (the order of their records). Checks shipped since (pool-health,
/// layout) are not in it; what they raise on the lab captures is asserted by their own replay
/// tests (`plugins/*/tests/replay.rs`).
const RECORDED_WITH: [&str; 5] = [
    "zpulse-check-hdd-saturation",
    "zpulse-check-arc-sizing",
    "zpulse-check-special-fill",
    "zpulse-check-slog-usage",
    "zpulse-check-l2arc-value",
];

/// The shipped checks among [`RECORDED_WITH`]: (package, shared object), in shipping order.
fn recorded_checks() -> Vec<(&'static str, &'static str)> {
    let checks: Vec<_> = SHIPPED_CHECKS
        .iter()
        .filter(|c| RECORDED_WITH.contains(&c.0))
        .copied()
        .collect();
    assert_eq!(
        checks.iter().map(|c| c.0).collect::<Vec<_>>(),
        RECORDED_WITH,
        "every check of the golden record is still shipped, in the same order"
    );
    checks
}

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

fn replay(zpulse: &Path, profile: &Path, series: &str) -> Vec<String> {
    let out = Command::new(zpulse)
        .args(["replay", "--format", "json"])
        .arg(fixture(&format!("lab/{series}")))
        .args(
            recorded_checks()
                .iter()
                .flat_map(|c| ["--plugin".into(), profile.join(c.1)]),
        )
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
    let packages: Vec<&str> = recorded_checks().iter().map(|c| c.0).collect();
    let profile = build_into_test_target(&packages);
    let zpulse = profile.join("zpulse");
    let mut got = Vec::new();
    for series in SERIES {
        got.extend(replay(&zpulse, &profile, series));
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
