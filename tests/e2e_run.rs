//! `zpulse run` end to end: a recorded series (the degraded lab pool with a single-disk
//! special vdev) goes through the shipped checks, loaded as shared objects, and every finding
//! and the heartbeat reach both sinks at once — Fluent Forward to an independent receiver
//! (npm `@fluent-org/logger`'s FluentServer) and syslog on a local datagram socket.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use zpulse_tests::{build_into_test_target, fixture, workspace};

use zpulse_tests::{CHECKS_LIBRARY, CHECKS_PACKAGE, SHIPPED_CHECKS};

/// A directory removed when the test ends, whether it passes or not.
fn temp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("zpulse-e2e-{name}-"))
        .tempdir()
        .unwrap()
}

/// The two receivers: the Forward server (node) and a syslog datagram socket.
struct Peers {
    server: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    port: u64,
    syslog: UnixDatagram,
    log_path: PathBuf,
    /// Syslog messages received while waiting for one ([`Peers::until_syslogged`]).
    early: Vec<String>,
}

impl Peers {
    fn start(dir: &std::path::Path) -> Peers {
        let modules = workspace().join("tests/forward/node_modules/@fluent-org/logger");
        assert!(
            modules.is_dir(),
            "needs node and tests/forward/node_modules: .ci/run installs them (npm ci --prefix tests/forward)"
        );
        // The Forward receiver, on a free loopback port; it prints every entry as a JSON line.
        let mut server = Command::new("node")
            .arg(workspace().join("tests/forward/server.js"))
            .args(["--port", "0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node");
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let ready: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let port = ready["listening"].as_u64().unwrap();
        // The syslog "daemon": a datagram socket like /dev/log.
        let log_path = dir.join("log.sock");
        let syslog = UnixDatagram::bind(&log_path).unwrap();
        syslog
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        Peers {
            server,
            lines,
            port,
            syslog,
            log_path,
            early: Vec::new(),
        }
    }

    /// Waits until a syslog message contains `what` (a minute's guard against an agent that
    /// never sends it, not a timing); what arrives meanwhile is kept for [`Peers::collect`].
    fn until_syslogged(&mut self, what: &str) {
        let guard = std::time::Instant::now() + Duration::from_secs(60);
        let mut buf = vec![0u8; 65536];
        while std::time::Instant::now() < guard {
            if let Ok(n) = self.syslog.recv(&mut buf) {
                let message = String::from_utf8_lossy(&buf[..n]).into_owned();
                let found = message.contains(what);
                self.early.push(message);
                if found {
                    return;
                }
            }
        }
        panic!(
            "no syslog message with {what:?} within a minute: {:#?}",
            self.early
        );
    }

    fn sinks(&self, dir: &std::path::Path) -> String {
        format!(
            "[[sink]]\ntype = \"forward\"\naddress = \"127.0.0.1:{}\"\nspool_dir = {:?}\n\n[[sink]]\ntype = \"syslog\"\naddress = \"unix://{}\"\n",
            self.port,
            dir.join("spool").display().to_string(),
            self.log_path.display()
        )
    }

    /// Everything both received (call after the agent exited: it flushed).
    fn collect(mut self) -> (Vec<Value>, Vec<String>) {
        drop(self.server.stdin.take());
        let forwarded: Vec<Value> = self
            .lines
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .filter(|v| v.get("record").is_some())
            .collect();
        let _ = self.server.wait();
        let mut syslogged = std::mem::take(&mut self.early);
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = self.syslog.recv(&mut buf) {
            syslogged.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        (forwarded, syslogged)
    }
}

/// Every forwarded event is also in syslog, with its check and subject.
fn same_events(forwarded: &[Value], syslogged: &[String]) {
    assert_eq!(syslogged.len(), forwarded.len(), "{syslogged:#?}");
    for e in forwarded {
        let check = e["record"]["check"].as_str().unwrap();
        let subject = e["record"]["subject"].as_str().unwrap();
        assert!(
            syslogged
                .iter()
                .any(|m| m.contains(check) && m.contains(subject)),
            "{check} {subject} not in syslog: {syslogged:#?}"
        );
    }
}

#[test]
fn findings_and_heartbeat_reach_forward_and_syslog() {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let tmp = temp("run");
    let dir = tmp.path().to_path_buf();
    let peers = Peers::start(&dir);
    let paths = [format!(
        "{:?}",
        profile.join(CHECKS_LIBRARY).display().to_string()
    )];
    let config = dir.join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins]\ndirs = []\npaths = [{}]\n[history]\nenabled = false\n\n{}",
            paths.join(", "),
            peers.sinks(&dir)
        ),
    )
    .unwrap();
    let out = Command::new(profile.join("zpulse"))
        .args(["run", "--config"])
        .arg(&config)
        .arg("--replay")
        .arg(fixture("lab/vdevs/deg-zpulse"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("not loaded"),
        "every shipped check loads: {stderr}"
    );
    let (forwarded, syslogged) = peers.collect();

    let heartbeat = forwarded
        .iter()
        .find(|e| e["record"]["check"] == "agent.heartbeat")
        .expect("the heartbeat was forwarded");
    assert_eq!(heartbeat["tag"], "zpulse.agent");
    assert_eq!(
        heartbeat["record"]["data"]["plugins_running"],
        SHIPPED_CHECKS.len() as u64
    );
    // The pool's special class is one disk beside a mirror: losing it loses the pool.
    let special = forwarded
        .iter()
        .find(|e| {
            e["record"]["check"]
                .as_str()
                .is_some_and(|c| c.starts_with("special-fill"))
                && e["record"]["severity"] == "critical"
        })
        .unwrap_or_else(|| panic!("special-fill raised a critical finding: {forwarded:#?}"));
    assert!(
        special["record"]["subject"]
            .as_str()
            .unwrap()
            .starts_with("deg/special")
    );
    assert_eq!(special["tag"], "zpulse.finding");
    same_events(&forwarded, &syslogged);
    // The critical finding is syslog severity crit (2), facility daemon (3): PRI 26.
    assert!(
        syslogged
            .iter()
            .any(|m| m.starts_with("<26>") && m.contains("special-fill"))
    );
}

/// The live agent on this host (no ZFS here: disks and host only) with the same two sinks:
/// its heartbeat reaches both, and SIGTERM flushes them before it exits.
#[test]
fn a_live_run_delivers_its_heartbeat_to_both_sinks() {
    let profile = build_into_test_target(&[]);
    let tmp = temp("live");
    let dir = tmp.path().to_path_buf();
    let mut peers = Peers::start(&dir);
    let config = dir.join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "interval = \"1s\"\n[plugins]\ndirs = []\n[history]\nenabled = false\n\n{}",
            peers.sinks(&dir)
        ),
    )
    .unwrap();
    let mut agent = Command::new(profile.join("zpulse"))
        .args(["run", "--config"])
        .arg(&config)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Two readings, 1 s apart (the shortest interval), make the first sample and heartbeat.
    peers.until_syslogged("agent.heartbeat");
    let term = Command::new("kill")
        .args(["-TERM", &agent.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(agent.wait().unwrap().success());
    let (forwarded, syslogged) = peers.collect();
    assert!(
        forwarded
            .iter()
            .any(|e| e["record"]["check"] == "agent.heartbeat"),
        "{forwarded:#?}"
    );
    same_events(&forwarded, &syslogged);
}
