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
             zpulse-proto = {{ path = {:?} }}\n\n[workspace]\n",
            sdk.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(plugin.join("src/lib.rs"), OUTSIDE_PLUGIN).unwrap();
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
        for d in &s.disks {
            let verdict = self.threshold.verdict(d.util);
            let report = Report::new(format!("{} is {:.0}% busy", d.name, d.util));
            events.extend(self.findings.observe(s.end, &d.name, verdict, report));
        }
        events
    }
}

zpulse_proto::export_plugin!(Busy);
"#;
