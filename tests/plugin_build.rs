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
    std::fs::set_permissions(&so, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(profile.join("zpulse"))
        .args(["plugins", "--plugin"])
        .arg(&so)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("refused"), "{text}");
    assert!(text.contains("built with panic = \"abort\""), "{text}");
}
