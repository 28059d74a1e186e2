//! Plugins whose panics would abort the agent: `export_plugin!` refuses to compile under
//! `panic = "abort"`, and the agent refuses a descriptor flagged `DESCRIPTOR_PANIC_ABORT`
//! (ABI 1.1), here set by a C plugin built with `-DHELLO_FLAGS=ZPULSE_DESCRIPTOR_PANIC_ABORT`.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use zpulse_tests::{build_into_test_target, workspace};

#[test]
fn export_plugin_does_not_compile_under_panic_abort() {
    let profile = build_into_test_target(&[]);
    // A target directory of its own: panic = abort rebuilds every dependency.
    let target = profile.parent().unwrap().join("panic-abort-check");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace())
        .args([
            "check",
            "--quiet",
            "-p",
            "zpulse-plugin-template",
            "--target-dir",
        ])
        .arg(&target)
        .env("CARGO_PROFILE_DEV_PANIC", "abort")
        .output()
        .expect("running cargo check");
    assert!(!out.status.success(), "compiled under panic = abort");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("zpulse plugins must be built with panic = \"unwind\""),
        "{err}"
    );
}

#[test]
fn a_descriptor_flagged_panic_abort_is_refused_at_load() {
    let profile = build_into_test_target(&[]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let so = dir.path().join("libhello_abort.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-shared", "-fPIC"])
        .arg("-DHELLO_FLAGS=ZPULSE_DESCRIPTOR_PANIC_ABORT")
        .arg("-I")
        .arg(workspace().join("proto/include"))
        .arg("-o")
        .arg(&so)
        .arg(workspace().join("tests/plugins/c/hello.c"))
        .status()
        .expect("running the C compiler");
    assert!(status.success());
    let (_, text) = listed(&profile, &so);
    assert!(text.contains("refused"), "{text}");
    assert!(text.contains("built with panic = \"abort\""), "{text}");
}

/// The recorded series the template's replay test reads is what `zpulse replay --format json`
/// prints for its capture today, so that the template's test data follows the sample model
/// (`UPDATE=1` rewrites it).
#[test]
fn the_templates_recorded_series_is_what_replay_prints() {
    let printed = seed_after_series(&build_into_test_target(&[]));
    let kept = workspace().join("plugins/template/tests/seed-after.jsonl");
    if std::env::var_os("UPDATE").is_some_and(|v| v == "1") {
        std::fs::write(&kept, &printed).unwrap();
    }
    let shipped = std::fs::read(&kept).unwrap();
    assert!(
        shipped == printed,
        "{} differs from what `zpulse replay tests/fixtures/lab/seed/after --format json` \
         prints: UPDATE=1 cargo test -p zpulse-tests --test plugin_build rewrites it",
        kept.display()
    );
}

/// A panic the SDK catches is one log line naming the plugin, the call, the message and where
/// it happened: not the standard library's multi-line message (nor a backtrace, asked for here
/// with `RUST_BACKTRACE=1`) under a thread name the plugin's copy of std does not know. The
/// panicking plugin (`tests/plugins/panics`) panics in `on_sample` with the number of disks
/// in the sample: the lab capture `basic` has 28 (`000/proc/diskstats` lists 28 devices).
#[test]
fn a_caught_panic_is_one_log_line_naming_the_plugin() {
    let profile = build_into_test_target(&["zpulse-test-plugin-panics"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let so = dir.path().join("libpanics.so");
    std::fs::copy(profile.join("libzpulse_test_plugin_panics.so"), &so).unwrap();
    std::fs::set_permissions(&so, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(profile.join("zpulse"))
        .current_dir(workspace())
        .args(["replay", "tests/fixtures/lab/basic", "--plugin"])
        .arg(&so)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "zpulse: warning: plugins: plugin panics: on_sample panicked: deliberate panic with \
          28 disks (at tests/plugins/panics/src/lib.rs:39:9)"
        ],
        "{err}"
    );
}

/// A plugin written outside the workspace, as an author with only the published SDK would:
/// `cargo package` makes zpulse-proto's `.crate` (what crates.io would hold: no path to the
/// workspace can survive in it), the plugin in a temporary directory depends on that
/// crate's contents and is built `--offline`; the agent loads it, and `check-config` refuses
/// a value its declared settings refuse, at the key's line.
#[test]
fn a_plugin_built_outside_the_workspace_against_the_packaged_sdk_loads() {
    let profile = build_into_test_target(&[]);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = profile.parent().unwrap().join("outside");
    let out = Command::new(&cargo)
        .current_dir(workspace())
        .args([
            "package",
            "--offline",
            "--no-verify",
            "--quiet",
            "-p",
            "zpulse-proto",
        ])
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("running cargo package");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version = env!("CARGO_PKG_VERSION");
    let packaged = target.join(format!("package/zpulse-proto-{version}.crate"));

    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&packaged)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("running tar");
    assert!(status.success());
    let sdk = dir.path().join(format!("zpulse-proto-{version}"));
    let plugin = dir.path().join("busy");
    std::fs::create_dir_all(plugin.join("src")).unwrap();
    std::fs::write(
        plugin.join("Cargo.toml"),
        format!(
            "[package]\nname = \"busy\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n\
             zpulse-proto = {{ path = {sdk:?} }}\n\n[dev-dependencies]\n\
             zpulse-proto = {{ path = {sdk:?}, features = [\"replay\"] }}\n\n[workspace]\n",
            sdk = sdk.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(plugin.join("src/lib.rs"), OUTSIDE_PLUGIN).unwrap();
    // Its replay test's series: what the agent printed for a lab capture, as an author
    // records one with `zpulse replay SERIES --format json > series.jsonl`, here beside the
    // source that includes it.
    std::fs::write(plugin.join("src/series.jsonl"), seed_after_series(&profile)).unwrap();
    // The workspace's lock: the same dependency versions, all in the local cache.
    std::fs::copy(workspace().join("Cargo.lock"), plugin.join("Cargo.lock")).unwrap();
    let out = Command::new(&cargo)
        .current_dir(&plugin)
        .args(["build", "--offline", "--quiet", "--target-dir"])
        .arg(target.join("busy"))
        .output()
        .expect("running cargo build");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its own tests, with only the packaged SDK: the replay test must run, and pass.
    let out = Command::new(&cargo)
        .current_dir(&plugin)
        .args(["test", "--offline", "--quiet", "--target-dir"])
        .arg(target.join("busy"))
        .output()
        .expect("running cargo test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let so = dir.path().join("libbusy.so");
    std::fs::copy(target.join("busy/debug/libbusy.so"), &so).unwrap();
    let (out, text) = listed(&profile, &so);
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("busy") && l.contains("loaded")),
        "{text}"
    );

    let config = dir.path().join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins]\ndirs = []\npaths = [{:?}]\n[plugins.busy]\nbusy_pct = 90\nclear_pct = 95\n\
             [history]\nenabled = false\n",
            so.display().to_string()
        ),
    )
    .unwrap();
    let out = Command::new(profile.join("zpulse"))
        .args(["check-config", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "zpulse.toml:6: plugins.busy.clear_pct: must be at most busy_pct (90), not 95"
        ),
        "{err}"
    );
}

/// What `zpulse replay tests/fixtures/lab/seed/after --format json` prints: the lab's special
/// mirror under a metadata storm, the recorded series the replay tests read.
fn seed_after_series(profile: &std::path::Path) -> Vec<u8> {
    let out = Command::new(profile.join("zpulse"))
        .current_dir(workspace())
        .args([
            "replay",
            "tests/fixtures/lab/seed/after",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    out.stdout
}

/// `zpulse plugins --plugin so`, the file made 0644 (writable by its owner only, as the agent
/// requires):
/// its output and its stdout.
fn listed(profile: &std::path::Path, so: &std::path::Path) -> (std::process::Output, String) {
    std::fs::set_permissions(so, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(profile.join("zpulse"))
        .args(["plugins", "--plugin"])
        .arg(so)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

/// The plugin of [`a_plugin_built_outside_the_workspace_against_the_packaged_sdk_loads`]: a
/// `Check` with declared settings, nothing but the SDK.
const OUTSIDE_PLUGIN: &str = r#"
use zpulse_proto::sdk::settings::Rule;
use zpulse_proto::sdk::{self, Check, Event, Findings, Report, Rules, Threshold};
use zpulse_proto::Sample;

zpulse_proto::settings! {
    /// The `[plugins.busy]` table.
    pub struct Config {
        /// raise at this %util
        busy_pct: f64 = 90.0, [Rule::Pct];
        /// clear at or below this %util
        clear_pct: f64 = 70.0, [Rule::Pct, Rule::NotAbove("busy_pct")];
    }
}

pub struct Busy {
    threshold: Threshold,
    findings: Findings,
}

impl Check for Busy {
    const NAME: &'static str = "busy";
    const VERSION: &'static str = "0.1.0";
    type Config = Config;

    fn build(c: Config) -> Result<Self, sdk::Error> {
        Ok(Busy {
            threshold: Threshold::above(c.busy_pct, c.clear_pct)?,
            findings: Findings::new(Self::NAME, Rules::default()),
        })
    }

    fn observe(&mut self, s: &Sample) -> Vec<Event> {
        let mut events = Vec::new();
        for d in s.disks.iter().filter(|d| d.is_storage()) {
            let verdict = self.threshold.verdict(d.util);
            let report = Report::new(format!("{} is {:.0}% busy", d.name, d.util));
            events.extend(self.findings.observe(s.end, &d.name, verdict, report));
        }
        events
    }
}

zpulse_proto::export_plugin!(Busy);

/// The lab's seed/after series (`zpulse replay … --format json > series.jsonl`). Its
/// `proc/diskstats` give busy milliseconds (the 10th counter) at captures 164.64 s, 96.03 s
/// and 92.46 s apart: sdc 89176, 124880, 141236, 154596 (21.7%, 17.0%, 14.4% busy), sde (the
/// log disk) 77632, 122164, 122164, 122164 (27.0%, then idle). Raised at 20%: both, in the
/// first interval; cleared at 10%: sde, 96 s later (past the default one-minute hold);
/// sdc stays between the two levels.
#[cfg(test)]
mod tests {
    use zpulse_proto::sdk::{config, testing, State, Value};

    #[test]
    fn a_recorded_series_raises_and_clears() {
        let samples = testing::recorded_samples(include_str!("series.jsonl")).unwrap();
        let table: std::collections::BTreeMap<String, Value> =
            [("busy_pct".to_string(), 20.into()), ("clear_pct".to_string(), 10.into())].into();
        let events = testing::TestHost::new()
            .run::<super::Busy>(&config::encode(&table), &samples)
            .unwrap();
        let mut seen: Vec<_> = events.iter().map(|e| (e.subject.clone(), e.state.unwrap())).collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0)); // stable: each subject's events stay in order
        assert_eq!(
            seen,
            [
                ("sdc".to_string(), State::Raised),
                ("sde".to_string(), State::Raised),
                ("sde".to_string(), State::Cleared),
            ]
        );
    }
}
"#;
