//! The history of a real `zpulse run`: killed with SIGKILL in the middle of a replay, what it
//! wrote reads back whole, record for record the captures it replayed; a write torn by a
//! power cut costs that record alone, and the next run goes on beside it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use zpulse_agent::{capture, history};
use zpulse_proto::Snapshot;

const STORM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/lab/storm/series"
);

fn start(config: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["run", "--replay", STORM, "--pace", "0.3", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn all(dir: &Path) -> (Vec<Snapshot>, Vec<String>) {
    let r = history::read(dir, f64::NEG_INFINITY, f64::INFINITY).unwrap();
    let mut notes = r.notes.clone();
    let mut out = Vec::new();
    for s in r.snapshots() {
        match s {
            Ok(s) => out.push(s),
            Err(e) => notes.push(e),
        }
    }
    (out, notes)
}

/// The replayed captures, as JSON (the model; see the unit tests on `KstatValue`).
fn json(v: &[Snapshot]) -> Vec<String> {
    v.iter()
        .map(|s| serde_json::to_string(s).unwrap())
        .collect()
}

#[test]
fn a_replay_killed_with_sigkill_leaves_every_whole_record_and_a_torn_one_costs_only_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().join("history");
    let config = tmp.path().join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins]\ndirs = []\n[history]\ndir = {:?}\n",
            dir.display().to_string()
        ),
    )
    .unwrap();
    let captures: Vec<Snapshot> = capture::series(Path::new(STORM))
        .unwrap()
        .iter()
        .map(|d| capture::load(d).unwrap())
        .collect();
    assert_eq!(captures.len(), 10);

    // Kill it once it has written four readings (of ten, 0.3 s apart).
    let mut agent = start(&config);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let written = history::read(&dir, f64::NEG_INFINITY, f64::INFINITY)
            .map(|r| r.len())
            .unwrap_or(0);
        if written >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "no history written");
        assert!(
            agent.try_wait().unwrap().is_none(),
            "the agent exited early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    agent.kill().unwrap(); // SIGKILL
    agent.wait().unwrap();

    let (got, notes) = all(&dir);
    assert!(notes.is_empty(), "{notes:?}");
    assert!(
        got.len() >= 4 && got.len() < captures.len(),
        "{}",
        got.len()
    );
    assert_eq!(json(&got), json(&captures[..got.len()]));
    let kept = got.len();

    // A power cut in the middle of the next write: half a record at the end of the segment.
    let segment = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    let torn_writer = tempfile::tempdir_in(tmp.path()).unwrap();
    let mut w = history::Writer::open(&history::Config {
        dir: Some(torn_writer.path().join("h")),
        ..history::Config::default()
    })
    .unwrap();
    w.append(&captures[kept]).unwrap();
    let record = std::fs::read_dir(torn_writer.path().join("h"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .next()
        .unwrap();
    drop(w);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&segment)
        .unwrap();
    f.write_all(&record[..record.len() / 2]).unwrap();
    drop(f);
    let (got, notes) = all(&dir);
    assert_eq!(json(&got), json(&captures[..kept]));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("cut short"), "{notes:?}");

    // The agent again, to the end of the replay: a new segment beside the torn one.
    let mut agent = start(&config);
    assert!(agent.wait().unwrap().success());
    let (got, notes) = all(&dir);
    assert_eq!(notes.len(), 1, "{notes:?}");
    // Each capture of the first run once, then each of the second run's (the whole series).
    let times: Vec<f64> = got.iter().map(|s| s.taken_at).collect();
    let mut want: Vec<f64> = captures[..kept].iter().map(|s| s.taken_at).collect();
    want.extend(captures.iter().map(|s| s.taken_at));
    want.sort_by(f64::total_cmp);
    assert_eq!(times, want);
}

#[test]
fn a_replay_without_a_configured_dir_writes_no_history() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("zpulse.toml");
    std::fs::write(&config, "[plugins]\ndirs = []\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["run", "--replay", STORM, "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a replay is not recorded in the host's history"),
        "{err}"
    );
}

#[test]
fn the_history_settings_are_documented_with_their_defaults() {
    zpulse_tests::settings::assert_agent_table_documented::<history::Config>(
        "history",
        &["agent/src/history/mod.rs", "docs/history.md"],
    );
}

#[test]
fn a_live_run_records_the_snapshots_it_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("history");
    let config = tmp.path().join("zpulse.toml");
    std::fs::write(
        &config,
        "interval = \"1s\"\n[plugins]\ndirs = []\n[history]\ndir = \"history\"\n",
    )
    .unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while history::read(&dir, f64::NEG_INFINITY, f64::INFINITY).map_or(0, |r| r.len()) < 2 {
        assert!(Instant::now() < deadline, "no history written");
        assert!(
            agent.try_wait().unwrap().is_none(),
            "the agent exited early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    agent.kill().unwrap();
    agent.wait().unwrap();
    let (got, notes) = all(&dir);
    assert!(notes.is_empty(), "{notes:?}");
    assert!(got.len() >= 2);
    // This host's own readings: its name, and its disks as /proc/diskstats lists them.
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let diskstats = std::fs::read_to_string("/proc/diskstats").unwrap();
    for s in &got {
        assert_eq!(s.host.hostname, hostname.trim());
        assert!(s.disks.iter().all(|d| {
            diskstats
                .lines()
                .any(|l| l.split_whitespace().nth(2) == Some(d.name.as_str()))
        }));
    }
    for pair in got.windows(2) {
        assert!(pair[0].taken_at < pair[1].taken_at);
    }
}
