//! The agent never starts a process: `strace -f` sees exactly one execve (its own start) and
//! no fork/vfork, and any clone is a thread (CLONE_THREAD), never a child process.

use std::path::PathBuf;
use std::process::Command;

fn lab(capture: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/lab/basic")
        .join(capture)
}

fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `zpulse ARGS` under strace and returns the trace.
fn trace(args: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("strace.log");
    let status = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=execve,execveat,fork,vfork,clone,clone3",
            "-o",
        ])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_zpulse"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("strace runs");
    assert!(status.success(), "zpulse {args:?} failed under strace");
    std::fs::read_to_string(&log).expect("strace log")
}

fn assert_no_spawn(args: &[&str]) {
    let text = trace(args);
    let execs: Vec<&str> = text.lines().filter(|l| l.contains("execve")).collect();
    assert_eq!(
        execs.len(),
        1,
        "zpulse {args:?} exec'd more than itself:\n{text}"
    );
    assert!(
        execs[0].contains("zpulse"),
        "the one exec is zpulse itself: {}",
        execs[0]
    );
    for line in text.lines() {
        assert!(!line.contains("fork("), "zpulse {args:?} forked:\n{line}");
        if line.contains("clone(") || line.contains("clone3(") {
            assert!(
                line.contains("CLONE_THREAD"),
                "zpulse {args:?} cloned a process:\n{line}"
            );
        }
    }
}

#[test]
fn once_live_spawns_nothing() {
    if !strace_available() {
        panic!("strace is required for this test (.ci/run installs it: apt-get install strace)");
    }
    assert_no_spawn(&["once"]);
    assert_no_spawn(&["once", "--format", "json"]);
    assert_no_spawn(&["once", "--interval", "0.2"]);
}

#[test]
fn replay_and_capture_spawn_nothing() {
    if !strace_available() {
        panic!("strace is required for this test (.ci/run installs it: apt-get install strace)");
    }
    let series = lab("");
    assert_no_spawn(&["replay", series.to_str().unwrap()]);
    assert_no_spawn(&["once", "--root", lab("000").to_str().unwrap()]);
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("capture");
    assert_no_spawn(&["capture", dest.to_str().unwrap()]);
}
