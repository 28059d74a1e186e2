//! Page benchmark (not a timed test): a database of 500 hosts and 1,000,000 events (metrics
//! with percentages every minute, heartbeats, 150 open findings over 6 checks), then each
//! page and API answer timed, one at a time and eight at once.
//!
//!   cargo bench -p zpulse-collector --bench page
//!   ZPULSE_BENCH_HOSTS=500 ZPULSE_BENCH_ROWS=1000000 cargo bench -p zpulse-collector --bench page
//!
//! Prints the median and the worst of each; the goal is < 200 ms for every page.

use std::sync::Arc;
use std::time::{Duration, Instant};
use zpulse_collector::http::{Page, route};
use zpulse_collector::server::Stats;
use zpulse_collector::store::{Batch, Row, Store};
use zpulse_proto::event::{Event, Kind, Severity, State};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let hosts = env("ZPULSE_BENCH_HOSTS", 500);
    let rows = env("ZPULSE_BENCH_ROWS", 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("page.db");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t0 = Instant::now();
    let mut store = Store::open(&db).unwrap();
    let per_host = rows / hosts;
    let checks = [
        "special-fill",
        "slog-usage",
        "arc-sizing",
        "hdd-saturation",
        "l2arc-value",
        "pool-health",
    ];
    for h in 0..hosts {
        let host = format!("nas{h:03}");
        let mut batch = Batch::default();
        for i in 0..per_host {
            // One row a minute back from now: a day holds 1440 of them.
            let at = now - (per_host - i) as i64 * 60;
            let mut e = if i % 10 == 0 {
                let mut e = Event::finding(
                    "agent.heartbeat",
                    State::Updated,
                    Severity::Info,
                    &host,
                    "hb",
                )
                .with("version", "0.1.0")
                .with("interval_s", 60.0)
                .with("cpu_pct", 1.0);
                e.kind = Kind::Agent;
                e
            } else {
                Event::metrics("arc", "arc", "arc").with("hit_pct", (i % 100) as f64)
            };
            e.host = host.clone();
            batch.rows.push(Row::from_event(
                "zpulse.metrics",
                at * 1_000_000_000,
                &e,
                "p",
            ));
        }
        if h % 10 < 3 {
            let check = checks[h % checks.len()];
            let sev = if h % 2 == 0 {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let mut e = Event::finding(
                check,
                State::Raised,
                sev,
                "tank",
                format!("{check} on tank"),
            );
            e.host = host.clone();
            batch.rows.push(Row::from_event(
                "zpulse.finding",
                (now - 3600) * 1_000_000_000,
                &e,
                "p",
            ));
        }
        store.store(&[batch], now).unwrap();
    }
    drop(store);
    eprintln!(
        "filled {hosts} hosts × {per_host} rows in {:?}",
        t0.elapsed()
    );
    let page = Arc::new(Page {
        db: db.clone(),
        ..Page::default()
    });
    let stats = Arc::new(Stats::default());
    for target in [
        "/",
        "/?severity=critical",
        "/?q=nas01&sort=seen",
        "/host/nas250",
        "/api/hosts",
        "/api/open",
        "/api/events?host=nas250&since=1h&limit=100",
        "/api/events?limit=1000",
    ] {
        let mut times = Vec::new();
        for _ in 0..9 {
            let t = Instant::now();
            let (code, _, body) = route(target, &page, &stats);
            assert_eq!(code, 200, "{target}: {body}");
            times.push(t.elapsed());
        }
        times.sort();
        // Eight at once.
        let t = Instant::now();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (page, stats) = (page.clone(), stats.clone());
                let target = target.to_owned();
                std::thread::spawn(move || {
                    let t = Instant::now();
                    route(&target, &page, &stats);
                    t.elapsed()
                })
            })
            .collect();
        let worst8: Duration = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .max()
            .unwrap();
        eprintln!(
            "{target:45} median {:>8.1?}  worst {:>8.1?}  8 at once: all done {:>8.1?}, slowest {:>8.1?}",
            times[4],
            times[8],
            t.elapsed(),
            worst8
        );
    }
}
