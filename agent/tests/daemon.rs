//! `zpulse run` as a process: it samples, emits its heartbeat, reloads on SIGHUP (refusing a
//! bad file and keeping the running config), and exits cleanly on SIGTERM within 5 s.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The head of every config here: a sample every second, no plugins, and no history (a live
/// agent would otherwise record this host under /var/lib/zpulse: tests leave the host alone).
const EVERY_SECOND: &str = "interval = \"1s\"\n[plugins]\ndirs = []\n[history]\nenabled = false\n";

/// An agent config with one stdout sink, sampling every second, loading no plugins.
const STDOUT_EVERY_SECOND: &str = concat!(
    "interval = \"1s\"\n[plugins]\ndirs = []\n[history]\nenabled = false\n",
    "[[sink]]\ntype = \"stdout\"\n"
);

/// A `[[sink]]` table for a Forward collector on loopback `port`, spooling to `spool`, with
/// `extra` keys.
fn forward_sink(port: u16, spool: &Path, extra: &str) -> String {
    format!(
        "[[sink]]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\nspool_dir = \"{}\"\n{extra}",
        spool.display()
    )
}

/// An agent started on `STDOUT_EVERY_SECOND`, written to `dir/zpulse.toml`; and that path,
/// for the test to rewrite or replace.
fn running_on_stdout(dir: &Path) -> (Agent, PathBuf) {
    let config = dir.join("zpulse.toml");
    std::fs::write(&config, STDOUT_EVERY_SECOND).unwrap();
    let agent = Agent::start(&config);
    (agent, config)
}

/// The agent with its stdout and stderr lines arriving on channels.
struct Agent {
    child: Child,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
}

impl Agent {
    fn start(config: &PathBuf) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zpulse"))
            .args(["run", "--config"])
            .arg(config)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = |r: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(r).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        };
        let out = lines(Box::new(child.stdout.take().unwrap()));
        let err = lines(Box::new(child.stderr.take().unwrap()));
        Agent { child, out, err }
    }

    fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    /// Waits for a line on `rx` containing `needle`.
    fn expect(rx: &mpsc::Receiver<String>, needle: &str, within: Duration) -> String {
        Agent::expect_any(rx, &[needle], within)
    }

    /// Waits for a line on `rx` containing any of `needles`.
    fn expect_any(rx: &mpsc::Receiver<String>, needles: &[&str], within: Duration) -> String {
        let deadline = Instant::now() + within;
        while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if needles.iter().any(|n| line.contains(n)) {
                return line;
            }
        }
        panic!("no line containing any of {needles:?} within {within:?}");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGTERM, then: the exit status, and how long it took (or a panic after `within`).
fn stop_within(agent: &mut Agent, within: Duration) -> (std::process::ExitStatus, Duration) {
    let asked = Instant::now();
    agent.signal("TERM");
    loop {
        if let Some(s) = agent.child.try_wait().unwrap() {
            return (s, asked.elapsed());
        }
        assert!(
            asked.elapsed() < within,
            "still running {within:?} after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port nobody listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn sigterm_after_reloads_with_an_unreachable_collector_exits_within_5s() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = dir.join("zpulse.toml");
    let port = closed_port();
    let write = |batch: u32| {
        // Each reload changes the sink (batch_max_events), so each replaces it.
        let extra = format!("batch_max_events = {batch}\nconnect_timeout = \"30s\"\n");
        let sink = forward_sink(port, &dir.join("spool"), &extra);
        std::fs::write(&config, format!("{EVERY_SECOND}{sink}")).unwrap();
    };
    write(100);
    let mut agent = Agent::start(&config);
    Agent::expect(&agent.err, "starting", Duration::from_secs(10));
    // The first heartbeat is in the spool, and the sender is failing to connect.
    Agent::expect(&agent.err, "retrying", Duration::from_secs(10));
    for n in 0..4 {
        write(101 + n);
        agent.signal("HUP");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, took) = stop_within(&mut agent, Duration::from_secs(30));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(status.success(), "{status:?}");
}

#[test]
fn reloads_during_an_outage_lose_nothing_and_the_counters_run_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = dir.join("zpulse.toml");
    let port = closed_port();
    let write = |batch: u32| {
        let extra = format!("batch_max_events = {batch}\n");
        let sink = forward_sink(port, &dir.join("spool"), &extra);
        std::fs::write(&config, format!("{STDOUT_EVERY_SECOND}{sink}")).unwrap();
    };
    write(100);
    let mut agent = Agent::start(&config);
    // The first sample brings the first heartbeat, to both sinks; then one a minute, reloads
    // or not (each reload sent one at once). The collector is down, so each one
    // the Forward sink gets stays in its spool, across the sinks that replace it.
    let heartbeat = |agent: &Agent, within: u64| -> serde_json::Value {
        let line = Agent::expect(&agent.out, "agent.heartbeat", Duration::from_secs(within));
        serde_json::from_str(&line).unwrap()
    };
    let forward = |hb: &serde_json::Value| -> serde_json::Value {
        hb["record"]["data"]["sinks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str().unwrap().starts_with("forward"))
            .unwrap()
            .clone()
    };
    let first = heartbeat(&agent, 10);
    for n in 0..10 {
        // Changed (the Forward sink is replaced) and unchanged (it is kept) in turn.
        write(100 + n / 2);
        // A reload sent while two are still being applied is refused, and the agent says to
        // send it again later: so does the test (the signals come a millisecond apart).
        loop {
            agent.signal("HUP");
            let said = Agent::expect_any(
                &agent.err,
                &["configuration reloaded", "send SIGHUP again later"],
                Duration::from_secs(10),
            );
            if said.contains("configuration reloaded") {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // The next heartbeat, a minute (HEARTBEAT_EVERY) after the first, not at a reload.
    let hb = heartbeat(&agent, 75);
    let apart = hb["time"].as_f64().unwrap() - first["time"].as_f64().unwrap();
    assert!(apart >= 59.0, "{apart} s after the first");
    let sink = forward(&hb);
    assert_eq!(hb["record"]["data"]["events_lost"], 0, "{hb}");
    assert_eq!(sink["dropped"], 0, "{sink}");
    // The first heartbeat is waiting in the spool, handed over by each replaced sink.
    assert_eq!(sink["pending"], 1, "{sink}");
    let stdout = hb["record"]["data"]["sinks"][0].clone();
    assert_eq!(stdout["name"], "stdout");
    // The stdout sink was never replaced; it wrote the first heartbeat.
    assert_eq!(stdout["delivered"], 1, "{stdout}");
    let (status, _) = stop_within(&mut agent, Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
}

#[test]
fn check_config_connects_to_nothing_resends_nothing_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = dir.join("zpulse.toml");
    let spool = dir.join("spool");
    let forward =
        |port: u16, spool: &Path| format!("{EVERY_SECOND}{}", forward_sink(port, spool, ""));
    // A run against a collector that is down leaves its first heartbeat in the spool.
    std::fs::write(&config, forward(closed_port(), &spool)).unwrap();
    let mut agent = Agent::start(&config);
    Agent::expect(&agent.err, "retrying", Duration::from_secs(10));
    let (status, _) = stop_within(&mut agent, Duration::from_secs(30));
    assert!(status.success());
    let spooled = std::fs::read_dir(&spool).unwrap().count();
    assert!(spooled > 0, "the run left a spool");

    // Now a collector listens; check-config must neither connect nor resend the spool.
    let collector = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    collector.set_nonblocking(true).unwrap();
    let port = collector.local_addr().unwrap().port();
    std::fs::write(&config, forward(port, &spool)).unwrap();
    let check = |config: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_zpulse"))
            .args(["check-config", "--config"])
            .arg(config)
            .output()
            .unwrap()
    };
    let out = check(&config);
    assert!(out.status.success(), "{out:?}");
    match collector.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("check-config connected to the collector: {other:?}"),
    }
    // And a spool directory that does not exist yet is not created.
    let missing = dir.join("not-yet");
    let other = dir.join("other.toml");
    std::fs::write(&other, forward(port, &missing)).unwrap();
    let out = check(&other);
    assert!(out.status.success(), "{out:?}");
    assert!(
        !missing.exists(),
        "check-config created {}",
        missing.display()
    );
}

#[test]
fn a_fifo_in_place_of_the_config_neither_blocks_the_reload_nor_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut agent, config) = running_on_stdout(dir);
    Agent::expect(&agent.out, "agent.heartbeat", Duration::from_secs(10));
    std::fs::remove_file(&config).unwrap();
    let made = Command::new("mkfifo").arg(&config).status().unwrap();
    assert!(made.success());
    agent.signal("HUP");
    let refused = Agent::expect(&agent.err, "reload refused", Duration::from_secs(5));
    assert!(refused.contains("not a regular file (a FIFO)"), "{refused}");
    let (status, took) = stop_within(&mut agent, Duration::from_secs(30));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(status.success(), "{status:?}");
}

#[test]
fn heartbeat_reload_and_clean_stop() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut agent, config) = running_on_stdout(dir);

    // Two readings make the first sample; the first sample brings the first heartbeat.
    let hb = Agent::expect(&agent.out, "agent.heartbeat", Duration::from_secs(10));
    let hb: serde_json::Value = serde_json::from_str(&hb).unwrap();
    assert_eq!(hb["tag"], "zpulse.agent");
    assert_eq!(hb["record"]["kind"], "agent");
    assert_eq!(hb["record"]["data"]["interval_s"], 1.0);
    assert!(hb["record"]["data"]["samples"].as_u64().unwrap() >= 2);

    // A broken file is refused and the agent goes on.
    std::fs::write(&config, "interval = \"1s\"\nbogus_key = 1\n").unwrap();
    agent.signal("HUP");
    let refused = Agent::expect(&agent.err, "reload refused", Duration::from_secs(5));
    assert!(refused.contains("bogus_key"), "{refused}");
    assert!(agent.child.try_wait().unwrap().is_none(), "still running");

    // A good file is taken, three times: the heartbeat keeps its minute (each
    // reload sent one at once, so a burst of SIGHUPs was a burst of heartbeats). Nothing
    // else goes to stdout here, so nothing may come while the samples go on at 2 s.
    std::fs::write(
        &config,
        "interval = \"2s\"\n[plugins]\ndirs = []\n[[sink]]\ntype = \"stdout\"\n",
    )
    .unwrap();
    while agent.out.try_recv().is_ok() {}
    for _ in 0..3 {
        agent.signal("HUP");
        Agent::expect(&agent.err, "configuration reloaded", Duration::from_secs(5));
    }
    let quiet_until = Instant::now() + Duration::from_secs(5);
    while let Ok(line) = agent
        .out
        .recv_timeout(quiet_until.saturating_duration_since(Instant::now()))
    {
        assert!(
            !line.contains("agent.heartbeat"),
            "a heartbeat on reload: {line}"
        );
    }

    // SIGTERM: flush and exit 0 within 5 s.
    let (status, _) = stop_within(&mut agent, Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
    Agent::expect(&agent.err, "stopping", Duration::from_secs(1));
}

#[test]
fn a_bad_config_at_start_is_one_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = dir.join("zpulse.toml");
    std::fs::write(
        &config,
        "interval = \"10s\"\n[[sink]]\ntype = \"carrier-pigeon\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["run", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("carrier-pigeon") && err.contains("stdout, syslog, forward, prometheus"),
        "{err}"
    );
    assert!(
        err.contains("zpulse.toml:3: sink[0].type: "),
        "names the file, the key's own line and the key: {err}"
    );
    let check = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["check-config", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!check.status.success());
    assert!(String::from_utf8_lossy(&check.stderr).contains("carrier-pigeon"));
}
