//! The front page of a 500-host fleet in headless Chromium: it leads with what is wrong —
//! silent hosts, then the open findings grouped by check and severity, worst first — before
//! the host list, and carries no per-host charts (those are on /host/NAME). A screenshot is
//! written next to the database (its path printed) for a person to look at; the test checks
//! it is a PNG of the window's width. Chromium missing is a failure (.ci/run installs it).

mod common;

use common::{finding, heartbeat, now_s};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use zpulse_collector::http::Page;
use zpulse_collector::server::Stats;
use zpulse_collector::store::{Batch, Row, Store};
use zpulse_proto::event::{Severity, State};

fn chromium(args: &[&str]) -> Vec<u8> {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .args(args)
        .output()
        .expect("chromium (apt-get install chromium; .ci/run does)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn a_500_host_fleet_page_leads_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db");
    let now = now_s();
    let mut s = Store::open(&db).unwrap();
    let ns = |t: i64| t * 1_000_000_000;
    let mut rows = Vec::new();
    for h in 0..500 {
        let host = format!("nas{h:03}");
        rows.push(Row::from_event(
            "zpulse.agent",
            ns(now),
            &heartbeat(&host, "0.1.0"),
            "p",
        ));
        if h < 4 {
            rows.push(Row::from_event(
                "zpulse.finding",
                ns(now),
                &finding(
                    &host,
                    "special-fill",
                    "tank",
                    State::Raised,
                    Severity::Critical,
                ),
                "p",
            ));
        }
        if (100..120).contains(&h) {
            rows.push(Row::from_event(
                "zpulse.finding",
                ns(now),
                &finding(
                    &host,
                    "slog-usage",
                    "tank",
                    State::Raised,
                    Severity::Warning,
                ),
                "p",
            ));
        }
    }
    s.store(
        &[Batch {
            rows,
            ..Batch::default()
        }],
        now,
    )
    .unwrap();
    // Three hosts last heard of an hour ago: silent (3 intervals of 60 s).
    let quiet: Vec<Row> = (0..3)
        .map(|i| {
            Row::from_event(
                "zpulse.agent",
                ns(now - 3600),
                &heartbeat(&format!("quiet{i}"), "0.1.0"),
                "p",
            )
        })
        .collect();
    s.store(
        &[Batch {
            rows: quiet,
            ..Batch::default()
        }],
        now - 3600,
    )
    .unwrap();
    drop(s);
    let addr = zpulse_collector::http::start(
        "127.0.0.1:0",
        Page {
            db: db.clone(),
            ..Page::default()
        },
        Arc::new(Stats::default()),
    )
    .unwrap();
    let url = format!("http://{addr}/");
    let dom = String::from_utf8(chromium(&["--dump-dom", &url])).unwrap();
    let at = |needle: &str| {
        dom.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    // What is wrong, worst first: silent hosts, special-fill critical on 4, slog-usage
    // warning on 20; then the hosts.
    let groups: Vec<&str> = dom
        .match_indices("<tr class=\"group")
        .map(|(i, _)| &dom[i..i + 400])
        .collect();
    assert_eq!(groups.len(), 3, "{dom}");
    assert!(
        groups[0].contains("silent") && groups[0].contains("on 3 hosts"),
        "{}",
        groups[0]
    );
    assert!(
        groups[1].contains("special-fill")
            && groups[1].contains("critical")
            && groups[1].contains("on 4 hosts"),
        "{}",
        groups[1]
    );
    assert!(
        groups[2].contains("slog-usage")
            && groups[2].contains("warning")
            && groups[2].contains("on 20 hosts"),
        "{}",
        groups[2]
    );
    assert!(at("What is wrong") < at("Hosts (503 of 503)"));
    assert_eq!(dom.matches("<tr class=\"host\">").count(), 503);
    // The silent hosts head the host list, then the critical ones.
    let prefix = "<tr class=\"host\"><td><a href=\"/host/";
    let first_hosts: Vec<&str> = dom
        .match_indices(prefix)
        .take(4)
        .map(|(i, _)| {
            let name = &dom[i + prefix.len()..];
            &name[..name.find('"').unwrap()]
        })
        .collect();
    assert_eq!(first_hosts, ["quiet0", "quiet1", "quiet2", "nas000"]);
    assert!(!dom.contains("<svg"), "no charts on the front page");
    // A filter: only the critical ones.
    let dom = String::from_utf8(chromium(&[
        "--dump-dom",
        &format!("{url}?severity=critical"),
    ]))
    .unwrap();
    assert!(dom.contains("Hosts (4 of 503)"), "{dom}");
    // The screenshot, for people.
    let png = dir.path().join("fleet.png");
    chromium(&[
        &format!("--screenshot={}", png.display()),
        "--window-size=1280,1600",
        &url,
    ]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1280);
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fleet-page.png");
    std::fs::copy(&png, &keep).unwrap();
    eprintln!("screenshot: {}", keep.display());
}
