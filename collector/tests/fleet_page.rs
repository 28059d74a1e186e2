//! The front page of a 500-host fleet in headless Chromium: it leads with what is wrong —
//! silent hosts, then the open findings grouped by check and severity, worst first — before
//! the host list (pages of 100, sorted), and carries no per-host charts (those are on
//! /host/NAME). And a host page on a 390 px phone, laid out by Chromium and measured over
//! the DevTools protocol: every finding's subject and summary inside the viewport, no
//! sideways scrolling. Screenshots are written for a person to look at (their paths
//! printed). Chromium or Node missing is a failure (.ci/run installs them).

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

fn store_rows(s: &mut Store, rows: Vec<Row>, now: i64) {
    s.store(
        &[Batch {
            rows,
            ..Batch::default()
        }],
        now,
    )
    .unwrap();
}

/// The web page of `db` on a loopback port.
fn serve_page(db: &Path) -> std::net::SocketAddr {
    zpulse_collector::http::start(
        "127.0.0.1:0",
        Page {
            db: db.to_owned(),
            ..Page::default()
        },
        Arc::new(Stats::default()),
    )
    .unwrap()
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
    store_rows(&mut s, rows, now);
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
    let addr = serve_page(&db);
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
    // 503 hosts: pages of 100, the sort kept from page to page.
    assert_eq!(dom.matches("<tr class=\"host\">").count(), 100);
    assert!(dom.contains("Page 1 of 6"), "{dom}");
    let last = String::from_utf8(chromium(&[
        "--dump-dom",
        &format!("{url}?sort=name&page=6"),
    ]))
    .unwrap();
    let names: Vec<&str> = last
        .match_indices("<tr class=\"host\"><td><a href=\"/host/")
        .map(|(i, m)| {
            let name = &last[i + m.len()..];
            &name[..name.find('"').unwrap()]
        })
        .collect();
    assert_eq!(names, ["quiet0", "quiet1", "quiet2"], "{last}");
    assert!(
        last.contains("Page 6 of 6") && last.contains(">previous</a>"),
        "{last}"
    );
    assert!(!last.contains(">next</a>"));
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

/// A host page (and the front page's open findings) at 390 × 844 CSS px, a phone: Chromium
/// lays it out, `tests/browser/measure.mjs` reports each finding's subject and summary
/// boxes; each must be shown, hold the text sent, and lie inside the viewport, and the page
/// must not be wider than the phone. An acknowledged finding says so.
#[test]
fn on_a_390_px_phone_every_subject_and_summary_is_visible() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("phone.db");
    let now = now_s();
    let ns = |t: i64| t * 1_000_000_000;
    let sent = [
        (
            "pool-health.errors",
            "tank/special/mirror-12/nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0W123456",
            "nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0W123456 has 3 checksum errors since the last \
             scrub; its mirror still holds good copies, so nothing is lost yet.",
        ),
        (
            "hdd-saturation",
            "sdc",
            "sdc was busy 97% of the last 10 min while moving 8.5 MB/s: seek-bound.",
        ),
        (
            "special-fill",
            "tank/special",
            "The special vdev of tank is 91% full; new metadata spills to the HDDs.",
        ),
    ];
    let mut rows = vec![Row::from_event(
        "zpulse.agent",
        ns(now),
        &heartbeat("nas1", "0.1.0"),
        "p",
    )];
    for (check, subject, summary) in sent {
        let mut e = finding("nas1", check, subject, State::Raised, Severity::Critical);
        e.summary = summary.into();
        e.advice = Some("Replace the device, then zpool scrub tank.".into());
        rows.push(Row::from_event("zpulse.finding", ns(now), &e, "p"));
    }
    let mut s = Store::open(&db).unwrap();
    store_rows(&mut s, rows, now);
    let ack = zpulse_collector::store::Ack {
        by: "alice".into(),
        reason: "new disk ordered".into(),
        at: now,
        until: Some(now + 7200),
    };
    s.ack(("nas1", "special-fill", "tank/special"), &ack, "[]")
        .unwrap();
    drop(s);
    let addr = serve_page(&db);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/measure.mjs");
    for (path, name) in [("/host/nas1", "phone-host.png"), ("/", "phone-fleet.png")] {
        let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        let out = Command::new("node")
            .arg(&script)
            .args(["chromium", &format!("http://{addr}{path}"), "390", "844"])
            .arg(&png)
            .output()
            .expect("node (apt-get install nodejs; .ci/run does)");
        assert!(
            out.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let width = m["innerWidth"].as_f64().unwrap();
        assert_eq!(width, 390.0, "{m}");
        assert!(
            m["scrollWidth"].as_f64().unwrap() <= width,
            "{path}: wider than the phone: {m}"
        );
        let findings = m["findings"].as_array().unwrap();
        assert_eq!(findings.len(), sent.len(), "{path}: {m}");
        for (check, subject, summary) in sent {
            let f = findings
                .iter()
                .find(|f| f["subject"]["text"] == subject)
                .unwrap_or_else(|| panic!("{path}: no {check} {subject}: {m}"));
            for (cell, starts) in [("subject", subject), ("summary", summary)] {
                let b = &f[cell];
                assert!(
                    b["text"].as_str().unwrap().starts_with(starts),
                    "{path} {cell}: {b}"
                );
                assert_eq!(b["hidden"], false, "{path} {cell}: {b}");
                assert!(
                    b["width"].as_f64().unwrap() > 0.0 && b["height"].as_f64().unwrap() > 0.0,
                    "{path} {cell}: {b}"
                );
                assert!(
                    b["left"].as_f64().unwrap() >= 0.0 && b["right"].as_f64().unwrap() <= width,
                    "{path} {cell} outside the 390 px viewport: {b}"
                );
            }
        }
        let acked = findings
            .iter()
            .find(|f| f["subject"]["text"] == "tank/special")
            .unwrap();
        let words = acked["summary"]["text"].as_str().unwrap();
        assert!(
            words.contains("acknowledged by alice") && words.contains("new disk ordered"),
            "{words}"
        );
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 390);
        eprintln!("screenshot at 390 px: {}", png.display());
    }
}

/// A host that has reported every minute for five weeks and whose kernel said little: its
/// page lists the kernel events it has. They are found through their own index; without it,
/// finding them read the host's every event in time order (the page bench: 32 ms at 2,000),
/// and past the scan budget the query was refused and the host page with it.
#[test]
fn a_long_lived_host_page_lists_its_few_kernel_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    let now = now_s();
    common::fill_fleet(&db, 1, 50_000, now);
    let mut s = Store::open(&db).unwrap();
    let mut said = zpulse_proto::Event::metrics("zevents", "tank", "resilver_finish");
    said.kind = zpulse_proto::event::Kind::Zevent;
    said.host = "nas000".into();
    store_rows(
        &mut s,
        vec![Row::from_event(
            "zpulse.zevent",
            (now - 86_400 * 30) * 1_000_000_000,
            &said,
            "192.0.2.1",
        )],
        now,
    );
    drop(s);
    let page = Page {
        db: db.clone(),
        ..Page::default()
    };
    let (code, _, body) =
        zpulse_collector::http::route("/host/nas000", &page, &Arc::new(Stats::default()));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("Kernel events (latest 1)"), "{body}");
    assert!(body.contains("resilver_finish"), "{body}");
}
