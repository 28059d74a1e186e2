//! `zpulse report` says when its conclusions are incomplete: a check whose report call
//! panicked, or that hung, makes the exit status 1, and the page, the text and the JSON name
//! it and say why. The window is the lab's storm series; the checks are the test plugins
//! `panics` (told to panic in its report) and `hangs` (told to sleep past the budget in it).

use std::path::PathBuf;
use std::process::Command;
use zpulse_tests::build_into_test_target;

fn built() -> PathBuf {
    build_into_test_target(&["zpulse-test-plugin-panics", "zpulse-test-plugin-hangs"])
}

/// `zpulse report` of the storm series with the plugin `lib` configured by `table`, written
/// as `format` to a file: (exit success, stderr, the file).
fn report(lib: &str, table: &str, format: &str) -> (bool, String, String) {
    let profile = built();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("zpulse.toml");
    std::fs::write(
        &config,
        format!("[plugins]\ndirs = []\nbudget = \"1s\"\n{table}\n"),
    )
    .unwrap();
    let out_file = dir.path().join(format!("report.{format}"));
    let out = Command::new(profile.join("zpulse"))
        .arg("report")
        .arg(zpulse_tests::raw::lab("storm/series"))
        .args(["--config"])
        .arg(&config)
        .arg("--plugin")
        .arg(profile.join(format!("lib{lib}.so")))
        .args(["--format", format, "--out"])
        .arg(&out_file)
        .output()
        .expect("running zpulse report");
    let written = std::fs::read_to_string(&out_file).unwrap_or_default();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        written,
    )
}

fn problems(json: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).expect("a JSON report");
    v["plugin_problems"]
        .as_array()
        .expect("plugin_problems")
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_report_call_that_panics_is_said_on_the_page_and_in_the_exit_status() {
    let table = "[plugins.panics]\nin_report = true";
    let lib = "zpulse_test_plugin_panics";
    let (ok, stderr, json) = report(lib, table, "json");
    assert!(!ok, "a report with a failed check must exit 1");
    assert!(stderr.contains("the report is incomplete"), "{stderr}");
    assert!(
        stderr.contains("report written to"),
        "the path is printed: {stderr}"
    );
    let p = problems(&json);
    assert!(
        p.iter()
            .any(|p| p.contains("panics") && p.contains("deliberate panic in report")),
        "{p:?}"
    );
    let (ok, _, page) = report(lib, table, "html");
    assert!(!ok);
    assert!(page.contains("incomplete"), "the page says it");
    assert!(page.contains("deliberate panic in report"), "and why");
    let (_, _, text) = report(lib, table, "text");
    assert!(text.contains("INCOMPLETE"), "{text}");
}

#[test]
fn a_check_that_hangs_in_its_report_is_named_with_why() {
    let table = "[plugins.hangs]\nreport_hang_ms = 3000";
    let (ok, stderr, json) = report("zpulse_test_plugin_hangs", table, "json");
    assert!(!ok, "a report with a hung check must exit 1: {stderr}");
    let p = problems(&json);
    assert!(
        p.iter().any(|p| p.contains("hangs") && p.contains("hung")),
        "{p:?}"
    );
}

#[test]
fn a_report_whose_checks_all_ran_exits_0() {
    let (ok, stderr, json) = report("zpulse_test_plugin_hangs", "", "json");
    assert!(ok, "{stderr}");
    assert!(problems(&json).is_empty());
}
