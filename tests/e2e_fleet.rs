//! A fleet into one collector: four simulated agents, each `zpulse run --replay` of a lab
//! series recorded on a real OpenZFS kernel, with the shipped checks, send to one
//! `zpulse-collector`. Its `hosts`, `open`, `query` and web page must show exactly what the
//! agents concluded — the reference being each series replayed by `zpulse replay` with the
//! same checks, without any transport.

use serde_json::Value;
use std::collections::BTreeMap;

use std::process::{Command, Stdio};
use zpulse_tests::peer::{Collector, http_get};
use zpulse_tests::{build_bin, build_into_test_target, fixture};

use zpulse_tests::{CHECKS_LIBRARY, CHECKS_PACKAGE};

/// (host name given to the agent, lab series it replays).
const FLEET: [(&str, &str); 4] = [
    ("nas-deg", "lab/vdevs/deg-zpulse"),
    ("nas-storm", "lab/storm/series"),
    ("nas-fill", "lab/checks/fill"),
    ("nas-quiet", "lab/checks/quiet"),
];

/// (check, subject) → severity of every finding left open by the events of a replay.
fn open_set(events: &[Value]) -> BTreeMap<(String, String), String> {
    let mut open = BTreeMap::new();
    for e in events.iter().filter(|e| e["record"]["kind"] == "finding") {
        let r = &e["record"];
        let key = (
            r["check"].as_str().unwrap().to_string(),
            r["subject"].as_str().unwrap().to_string(),
        );
        if r["state"] == "cleared" {
            open.remove(&key);
        } else {
            open.insert(key, r["severity"].as_str().unwrap().to_string());
        }
    }
    open
}

fn json(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_fleet_of_replayed_agents_reports_into_one_collector() {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let collector_bin = build_bin("zpulse-collector", "zpulse-collector");
    let tmp = tempfile::Builder::new()
        .prefix("zpulse-fleet-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().to_path_buf();
    let db = dir.join("events.db");
    let (_collector, port, http) = Collector::serve(&collector_bin, &db);

    let plugins = [format!(
        "{:?}",
        profile.join(CHECKS_LIBRARY).display().to_string()
    )];
    let plugin_flags = [
        "--plugin".to_string(),
        profile.join(CHECKS_LIBRARY).display().to_string(),
    ];
    let mut agents = Vec::new();
    let mut expected: BTreeMap<String, BTreeMap<(String, String), String>> = BTreeMap::new();
    for (host, series) in FLEET {
        let config = dir.join(format!("{host}.toml"));
        std::fs::write(
            &config,
            format!(
                "hostname = {host:?}\n[plugins]\ndirs = []\npaths = [{}]\n[history]\nenabled = false\n[[sink]]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\nspool_dir = {:?}\n",
                plugins.join(", "),
                dir.join(format!("spool-{host}")).display().to_string()
            ),
        )
        .unwrap();
        agents.push(
            Command::new(profile.join("zpulse"))
                .args(["run", "--config"])
                .arg(&config)
                .arg("--replay")
                .arg(fixture(series))
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // The reference: the same series and checks, printed instead of sent.
        let out = Command::new(profile.join("zpulse"))
            .args(["replay", "--format", "json"])
            .arg(fixture(series))
            .args(&plugin_flags)
            .output()
            .unwrap();
        assert!(out.status.success());
        let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("record").is_some())
            .collect();
        expected.insert(host.to_string(), open_set(&events));
    }
    for a in agents {
        let out = a.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let cli = |args: &[&str]| {
        let mut c = Command::new(&collector_bin);
        c.args(args).arg("--db").arg(&db).args(["--format", "json"]);
        json(&mut c)
    };
    // Every agent is known, with the version its heartbeat carried.
    let hosts = cli(&["hosts"]);
    let names: Vec<&str> = hosts
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    for (host, _) in FLEET {
        assert!(names.contains(&host), "{host} in {names:?}");
    }
    for h in hosts.as_array().unwrap() {
        assert_eq!(h["version"], env!("CARGO_PKG_VERSION"));
    }
    // The open findings are exactly those the agents' own replays leave open.
    let open = cli(&["open"]);
    let mut got: BTreeMap<String, BTreeMap<(String, String), String>> = FLEET
        .iter()
        .map(|(h, _)| (h.to_string(), BTreeMap::new()))
        .collect();
    for f in open.as_array().unwrap() {
        got.entry(f["host"].as_str().unwrap().to_string())
            .or_default()
            .insert(
                (
                    f["check"].as_str().unwrap().to_string(),
                    f["subject"].as_str().unwrap().to_string(),
                ),
                f["severity"].as_str().unwrap().to_string(),
            );
    }
    assert_eq!(got, expected);
    let total: usize = expected.values().map(BTreeMap::len).sum();
    assert!(
        total >= 5,
        "the series raise findings to compare: {expected:#?}"
    );
    // The quiet, healthy pool leaves nothing worse than info open.
    assert!(
        expected["nas-quiet"].values().all(|s| s == "info"),
        "{expected:#?}"
    );
    // What the captures themselves say: the degraded pool's special class is a single disk.
    assert_eq!(
        expected["nas-deg"]
            .get(&(
                "special-fill.redundancy".to_string(),
                "deg/special".to_string()
            ))
            .map(String::as_str),
        Some("critical")
    );
    // Worst first.
    let first = &open.as_array().unwrap()[0];
    assert_eq!(first["severity"], "critical");
    // query by host and severity.
    let crit = cli(&["query", "--host", "nas-deg", "--severity", "critical"]);
    assert!(!crit.as_array().unwrap().is_empty());
    // The web page lists every host and the critical subject.
    let page = http_get(http, "/");
    assert!(
        page.starts_with("HTTP/1.1 200"),
        "{}",
        &page[..page.len().min(200)]
    );
    for (host, _) in FLEET {
        assert!(page.contains(host), "{host} on the page");
    }
    assert!(page.contains("deg/special"));
}
