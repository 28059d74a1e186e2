//! What the Prometheus exposition costs: rendering next to taking the sample it renders, and
//! what one scrape allocates next to the size of the pre-rendered body.
//!
//! `cargo bench -p zpulse-agent --bench prometheus` prints, for each lab capture series:
//! the time of a sample (two snapshots read and parsed from the capture, `Sample::between`),
//! the time to render the later snapshot in both formats, their ratio (target ≤ 10%), and
//! for a scrape over loopback the bytes the whole process allocated per request (counted by a
//! global allocator) next to the body's size (target: no allocation proportional to the
//! series, i.e. far below the body), and the cost and size of the same series as a Forward
//! metric record (`zpulse.series`). Under `cargo test` it runs one iteration as a smoke test.

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use std::alloc::System;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zpulse_agent::sinks::prometheus::exposition;
use zpulse_agent::sinks::prometheus::server::{self, Limits, Published};
use zpulse_agent::sources::{self, Root};
use zpulse_proto::Sample;

/// Counts every byte allocated by any thread (the server's included).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn time<F: FnMut()>(iterations: u32, mut f: F) -> Duration {
    f();
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    start.elapsed() / iterations
}

fn scrape(addr: &str, buf: &mut Vec<u8>, gzip: bool) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    let head: &[u8] = if gzip {
        b"GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n"
    } else {
        b"GET /metrics HTTP/1.1\r\n\r\n"
    };
    s.write_all(head).unwrap();
    buf.clear();
    s.read_to_end(buf).unwrap();
    buf.len()
}

fn main() {
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let n = if benchmarking { 200 } else { 1 };
    let lab = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab");
    for series in ["basic", "vdevs/rz", "storm/series"] {
        let dirs = zpulse_agent::capture::series(&lab.join(series)).unwrap();
        let (a, b) = (
            sources::System::Linux(Root::new(&dirs[0])),
            sources::System::Linux(Root::new(&dirs[1])),
        );
        let sample_time = time(n, || {
            let s0 = sources::snapshot(&a, Default::default());
            let s1 = sources::snapshot(&b, Default::default());
            std::hint::black_box(Sample::between(&s0, &s1).ok());
        });
        let snap = sources::snapshot(&b, Default::default());
        let render_time = time(n, || {
            std::hint::black_box(exposition::render(&snap, &[], None));
        });
        let rendered = exposition::render(&snap, &[], None);
        let series_count = rendered
            .text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .count();
        println!(
            "{series:<14} {series_count:>5} series  sample {:>8.1} µs  render {:>7.1} µs  ratio {:>5.1}%",
            sample_time.as_secs_f64() * 1e6,
            render_time.as_secs_f64() * 1e6,
            render_time.as_secs_f64() / sample_time.as_secs_f64() * 100.0
        );

        // The same series as a Forward metric record (forward sink, `metrics = true`).
        let record_time = time(n, || {
            std::hint::black_box(exposition::series_record(&snap, "bench"));
        });
        let record = exposition::series_record(&snap, "bench");
        let gzipped = zpulse_forward::encode::gzip(&record).map_or(0, |g| g.len());
        println!(
            "{:<14} forward record {:>7.1} µs  ratio {:>5.1}%  {:>7} B, gzip {:>6} B",
            "",
            record_time.as_secs_f64() * 1e6,
            record_time.as_secs_f64() / sample_time.as_secs_f64() * 100.0,
            record.len(),
            gzipped
        );

        let endpoint = server::endpoint(
            "127.0.0.1:0".parse().unwrap(),
            Limits {
                max_connections: 8,
                timeout: Duration::from_secs(10),
            },
        )
        .unwrap();
        let body = rendered.text.len();
        endpoint.shared.publish(Arc::new(Published::new(
            rendered.text,
            rendered.openmetrics,
        )));
        let addr = endpoint.addr.to_string();
        let mut buf = Vec::with_capacity(2 * body);
        for gzip in [false, true] {
            scrape(&addr, &mut buf, gzip); // the gzip form is made by the first request
            let before = GLOBAL.stats().bytes_allocated;
            let mut got = 0;
            let scrape_time = time(n, || got = scrape(&addr, &mut buf, gzip));
            let per = (GLOBAL.stats().bytes_allocated - before) as u64 / u64::from(n + 1);
            println!(
                "{:<14} scrape{} {:>7.1} µs  response {:>7} B  allocated {:>6} B per scrape ({:.2}% of the body)",
                "",
                if gzip { " gzip" } else { "     " },
                scrape_time.as_secs_f64() * 1e6,
                got,
                per,
                per as f64 / body as f64 * 100.0
            );
        }
    }
}
