//! Cross-crate tests of zpulse: the agent's sources and the proto's sample model together,
//! against real captures in `fixtures/`. The library part locates fixtures, and [`raw`] reads
//! the lab captures for the plugins' replay tests, [`peer`] runs a collector beside them,
//! [`pages`] holds the checks' pages to the example findings their unit tests make.

use std::path::PathBuf;

pub mod pages;
pub mod peer;
pub mod raw;
pub mod settings;
pub mod synthetic;

/// `tests/fixtures/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Builds `packages` (their libraries and the `zpulse` binary) into the target directory this
/// test runs from, so nothing is compiled twice, and returns `target/<profile>`, where the
/// binary and the plugin shared objects are. Integration tests run from
/// `target/<profile>/deps/`.
pub fn build_into_test_target(packages: &[&str]) -> PathBuf {
    build_libs_into_test_target(packages, true)
}

/// [`build_into_test_target`], without the `zpulse` binary when `with_agent` is false.
pub fn build_libs_into_test_target(packages: &[&str], with_agent: bool) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps")
        .to_path_buf();
    let target_dir = profile_dir.parent().expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    build
        .current_dir(workspace())
        .args(["build", "--quiet", "--target-dir"])
        .arg(target_dir);
    for p in packages {
        build.args(["-p", p]);
    }
    if with_agent {
        build.args(["-p", "zpulse-agent", "--bin", "zpulse", "--lib"]);
    }
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("running cargo build");
    assert!(status.success(), "cargo build of {packages:?} failed");
    profile_dir
}

/// Builds one binary of a workspace package into the test's target directory (see
/// [`build_into_test_target`]) and returns its path.
pub fn build_bin(package: &str, bin: &str) -> PathBuf {
    let profile_dir = build_into_test_target(&[]);
    let target_dir = profile_dir.parent().expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    build
        .current_dir(workspace())
        .args(["build", "--quiet", "--target-dir"])
        .arg(target_dir)
        .args(["-p", package, "--bin", bin]);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("running cargo build");
    assert!(status.success(), "cargo build of {package} failed");
    profile_dir.join(bin)
}

/// `zpulse report ARGS --format FORMAT` with the shipped checks and no other plugins: its
/// standard output, the command having succeeded.
pub fn report_with_checks(args: &[&std::ffi::OsStr], format: &str) -> String {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    // A config of its own per call (tests run side by side), with no plugin directory.
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let config = profile.join(format!("report-checks-{}-{n}.toml", std::process::id()));
    std::fs::write(&config, "[plugins]\ndirs = []\n").unwrap();
    let out = std::process::Command::new(profile.join("zpulse"))
        .arg("report")
        .args(args)
        .arg("--config")
        .arg(&config)
        .arg("--plugin")
        .arg(profile.join(CHECKS_LIBRARY))
        .args(["--format", format])
        .output()
        .expect("running zpulse report");
    let _ = std::fs::remove_file(&config);
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// [`report_with_checks`] as JSON: the report's model.
pub fn report_json(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    serde_json::from_str(&report_with_checks(args, "json")).expect("a JSON report")
}

/// [`report_json`] over an agent's history directory, from `from` to `to` (Unix seconds).
pub fn history_report(history: &std::path::Path, from: f64, to: f64) -> serde_json::Value {
    report_json(&[
        "--history-dir".as_ref(),
        history.as_os_str(),
        "--from".as_ref(),
        format!("{from}").as_ref(),
        "--to".as_ref(),
        format!("{to}").as_ref(),
    ])
}

/// One interval a report left out (its JSON `breaks`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportBreak {
    pub kind: String,
    pub from: f64,
    pub to: f64,
    pub what: String,
}

/// The breaks of a [`report_json`], in order.
pub fn report_breaks(report: &serde_json::Value) -> Vec<ReportBreak> {
    report["breaks"]
        .as_array()
        .expect("a list of breaks")
        .iter()
        .map(|b| ReportBreak {
            kind: b["kind"].as_str().expect("a kind").to_owned(),
            from: b["from"].as_f64().expect("a start"),
            to: b["to"].as_f64().expect("an end"),
            what: b["what"].as_str().expect("words").to_owned(),
        })
        .collect()
}

/// The package that builds the checks the agent ships, as one plugin bundle (ABI 1.5 and on).
pub const CHECKS_PACKAGE: &str = "zpulse-checks";

/// The shared object [`CHECKS_PACKAGE`] builds, which the packages install.
pub const CHECKS_LIBRARY: &str = "libzpulse_checks.so";

/// The checks the agent ships (one page each in `docs/checks/`), by plugin name, in the order
/// the bundle holds them: the order they are loaded in and their events come in.
pub const SHIPPED_CHECKS: [&str; 8] = [
    "pool-health",
    "zevents",
    "layout",
    "hdd-saturation",
    "arc-sizing",
    "special-fill",
    "slog-usage",
    "l2arc-value",
];

/// `[plugins] disable` naming every shipped check but `keep`, as a config line.
pub fn disable_checks_but(keep: &[&str]) -> String {
    let off: Vec<String> = SHIPPED_CHECKS
        .iter()
        .filter(|c| !keep.contains(c))
        .map(|c| format!("{c:?}"))
        .collect();
    format!("disable = [{}]", off.join(", "))
}

/// Every shipped check built into `profile`, started by the real plugin host (no config,
/// no plugin directory), each asserted loaded; what loading said is taken out.
pub fn start_shipped_checks(
    profile: &std::path::Path,
    hostname: &str,
) -> zpulse_agent::plugins::PluginHost {
    use zpulse_agent::plugins::{Extra, PluginHost, Status};
    let settings = zpulse_agent::config::PluginSettings {
        dirs: Vec::new(),
        default_dirs: false,
        ..Default::default()
    };
    let extra = Extra {
        dirs: Vec::new(),
        paths: vec![profile.join(CHECKS_LIBRARY)],
    };
    let mut host = PluginHost::start(&settings, &extra, hostname);
    let _ = host.take_output();
    let plugins = host.plugins();
    let names: Vec<_> = plugins.iter().filter_map(|p| p.name.as_deref()).collect();
    assert_eq!(
        names, SHIPPED_CHECKS,
        "the bundle holds every shipped check, in order"
    );
    for p in plugins {
        assert_eq!(p.status, Status::Loaded, "{p:?}");
    }
    host
}
