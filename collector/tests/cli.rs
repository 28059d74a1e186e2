//! The binary end to end: `serve --http` receives a small fleet, `query`, `hosts` and `open`
//! show it, the web page renders it (in headless Chromium when installed).

mod common;

use common::*;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};
use zpulse_forward::{Compression, Entries};
use zpulse_proto::event::{Severity, State};

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The DOM headless Chromium builds from `url`. Chromium is a test dependency (.ci/run
/// installs it): missing, the test fails.
fn chromium_dom(url: &str) -> String {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--dump-dom",
            url,
        ])
        .output()
        .expect("chromium (apt-get install chromium; .ci/run does)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn run(args: &[&str], db: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_small_fleet_through_serve_query_hosts_open_and_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("events.db");
    let (fwd, http) = (free_addr(), free_addr());
    let mut child = Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
        .args([
            "serve",
            "--listen",
            &fwd.to_string(),
            "--http",
            &http.to_string(),
            "--db",
        ])
        .arg(&db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut c = loop {
        if let Ok(s) = std::net::TcpStream::connect(fwd) {
            break Client::from_stream(s);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let now = now_t().seconds;
    for (i, host) in ["nas1", "nas2", "backup"].iter().enumerate() {
        let mut entries = Entries::new();
        for k in 0..20u32 {
            entries.push_event(
                t(now - 2000 + k * 100),
                &metrics(host, "hdd-saturation", "tank", "busy_pct", f64::from(k * 5)),
            );
        }
        entries.push_event(t(now - 60), &heartbeat(host, &format!("0.{i}.0")));
        let sev = [Severity::Critical, Severity::Warning, Severity::Info][i];
        entries.push_event(
            t(now - 30),
            &finding(host, "special-fill", "tank/special", State::Raised, sev),
        );
        if *host == "backup" {
            entries.push_event(
                t(now - 10),
                &finding(
                    host,
                    "special-fill",
                    "tank/special",
                    State::Cleared,
                    Severity::Info,
                ),
            );
        }
        let ch = random_chunk();
        c.send(&entries.packed_forward("zpulse.metrics", Some(&ch), Compression::Gzip))
            .unwrap();
        assert_eq!(c.ack(), Some(ch));
    }

    let hosts = run(&["hosts"], &db);
    let lines: Vec<&str> = hosts.lines().collect();
    assert!(lines[0].starts_with("HOST"), "{hosts}");
    assert!(
        lines[1].starts_with("backup") && lines[1].contains("0.2.0"),
        "{hosts}"
    );
    assert!(
        lines[2].starts_with("nas1") && lines[2].contains("critical"),
        "{hosts}"
    );
    let open = run(&["open"], &db);
    let lines: Vec<&str> = open.lines().collect();
    assert_eq!(lines.len(), 3, "{open}");
    assert!(
        lines[1].starts_with("critical") && lines[1].contains("nas1"),
        "{open}"
    );
    assert!(
        lines[2].starts_with("warning") && lines[2].contains("nas2"),
        "{open}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&run(&["open", "--format", "json"], &db)).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    let q: serde_json::Value = serde_json::from_str(&run(
        &[
            "query",
            "--host",
            "nas2",
            "--check",
            "special-fill",
            "--since",
            "1h",
            "--format",
            "json",
        ],
        &db,
    ))
    .unwrap();
    assert_eq!(q.as_array().unwrap().len(), 1, "{q}");
    assert_eq!(q[0]["severity"], "warning");
    let q = run(&["query", "--severity", "warning"], &db);
    assert_eq!(q.lines().count(), 1 + 2, "{q}");
    let q = run(&["query", "--since", "15m", "--host", "nas1"], &db);
    // 10 metrics in the last 15 min (k*100 s ≥ 1100 s ago excluded), heartbeat, finding.
    assert!(q.lines().count() > 3, "{q}");

    // The page, in headless Chromium (a real browser: CSP and HTML parsing apply).
    let dom = chromium_dom(&format!("http://{http}/"));
    for host in ["nas1", "nas2", "backup"] {
        assert!(dom.contains(&format!(">{host}</a>")), "{host} missing");
    }
    assert_eq!(dom.matches("<tr class=\"finding\" id=").count(), 2, "{dom}");
    // What is wrong comes first: one row per (check, severity).
    let wrong = dom.find("What is wrong").unwrap();
    assert!(wrong < dom.find("Hosts (").unwrap());
    assert_eq!(dom.matches("<tr class=\"group\">").count(), 2, "{dom}");
    let host_page = chromium_dom(&format!("http://{http}/host/nas1"));
    assert!(host_page.contains("<svg class=\"chart\""));
    assert!(host_page.contains("hdd-saturation tank busy_pct"));
    // Nothing loaded from outside: no scripts, no external references.
    assert!(!dom.contains("<script"));
    assert!(!dom.contains("src=\""));
    assert!(!dom.contains("href=\"http"));
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Safe defaults: an open listener beyond loopback is refused at start, with the reason and
/// the ways out, and exit status 1 (a failure, not a usage error); with a key it starts.
#[test]
fn serve_refuses_an_unauthenticated_listener_beyond_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
        .args(["serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(dir.path().join("e.db"))
        .args(["--config", "/nonexistent/zpulse-collector.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent"), "{err}");
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
        .args(["serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(dir.path().join("e.db"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("beyond loopback") && err.contains("shared_key") && err.contains("insecure"),
        "{err}"
    );
    assert!(
        !dir.path().join("e.db").exists(),
        "nothing created before the refusal"
    );
}

/// `hosts`/`query` printed a foreign record's control characters raw to the
/// terminal, and `hosts | head` panicked on the closed pipe. Now every table cell is
/// escaped, and a reader that goes away ends the command quietly with status 0.
#[test]
fn terminal_output_is_escaped_and_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use zpulse_collector::store::{Batch, Row, Store};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let mut s = Store::open(&db).unwrap();
    // ESC ] 0 ; … BEL retitles the terminal; ESC [ 2 J clears it.
    let hostile = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let mut rows: Vec<Row> = (0..20_000)
        .map(|i| {
            Row::from_event(
                "zpulse.agent",
                1_000_000_000,
                &heartbeat(&format!("host{i:05}"), "1.0"),
                "p",
            )
        })
        .collect();
    rows.push(Row::from_event(
        "zpulse.metrics",
        1_000_000_000,
        &metrics(hostile, "c", hostile, "x_pct", 1.0),
        "p",
    ));
    s.store(
        &[Batch {
            rows,
            ..Batch::default()
        }],
        1_000,
    )
    .unwrap();
    drop(s);
    for args in [&["query", "--limit", "5"][..], &["hosts"]] {
        let out = run(args, &db);
        let evil = out
            .lines()
            .find(|l| l.contains("evil"))
            .expect("the hostile row");
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{7}'),
            "{args:?}: {out:?}"
        );
        assert!(
            evil.contains("evil\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"),
            "{evil}"
        );
    }
    // `hosts | head -1`: 20,000 lines, the reader takes one and closes the pipe.
    let mut child = Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
        .args(["hosts", "--db"])
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("HOST"), "{first}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// One exit-status convention with the agent: 2 for a command line that does not parse (a
/// duration outside the one grammar, an empty reason), 1 for a failure of a command that
/// did parse (here: no database).
#[test]
fn usage_errors_exit_2_and_failures_1() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zpulse-collector"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for args in [
        &["query", "--since", "5 parsecs"][..],
        &["ack", "nas1", "pool-health", "tank", "--reason", " "],
        &[
            "ack",
            "nas1",
            "pool-health",
            "tank",
            "--reason",
            "x",
            "--until",
            "-1h",
        ],
        &["hosts", "--format", "yaml"],
    ] {
        let (code, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
    }
    // Units in every duration, as in the config file: this parses, then finds no database.
    let (code, err) = run(&["query", "--since", "1.5h", "--db", "/nonexistent/e.db"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/e.db"), "{err}");
}
