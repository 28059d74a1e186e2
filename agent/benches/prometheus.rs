//! What the Prometheus exposition costs: rendering next to taking the sample it renders, and
//! what one scrape allocates next to the size of the pre-rendered body.
//!
//! `cargo bench -p zpulse-agent --bench prometheus` prints, for each lab capture series:
//! the time of a sample (two snapshots read and parsed from the capture, `Sample::between`);
//! the time to render a snapshot with nothing kept (`exposition::render`, as `zpulse once`
//! does), and as the sink renders each reading (`Renderer` with what it kept from the reading
//! before: the two snapshots of the series in turn), with its ratio to the sample (target
//! ≤ 10%); the whole of the sink's work for a reading (`PrometheusSink::observe`: its own
//! figures read from /proc, the rendering, the publication to the server); the same for the
//! series as a Forward metric record (`zpulse.series`); and for a scrape over loopback in
//! each format, plain and gzip, the bytes the whole process allocated per request (counted
//! by a global allocator) next to the body's size (target: no allocation proportional to
//! the series, i.e. far below the body). Under `cargo test` it runs one iteration as a smoke
//! test.

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use std::alloc::System;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zpulse_agent::sinks::prometheus::server::{self, Limits, Published};
use zpulse_agent::sinks::prometheus::{PrometheusConfig, PrometheusSink, exposition};
use zpulse_agent::sinks::{Reading, Sink};
use zpulse_agent::sources::{self, Root};
use zpulse_proto::Sample;

/// Counts every byte allocated by any thread (the server's included).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// CPU time of the calling thread: what a measured step costs, without the time other
/// processes of a busy machine hold the CPU.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Mean CPU time of one call of `f` on this thread, after a first call.
fn cpu_time<F: FnMut()>(iterations: u32, mut f: F) -> Duration {
    f();
    let start = thread_cpu();
    for _ in 0..iterations {
        f();
    }
    (thread_cpu() - start) / iterations
}

/// Mean wall time of one call (a scrape: the server's threads do the work).
fn time<F: FnMut()>(iterations: u32, mut f: F) -> Duration {
    f();
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    start.elapsed() / iterations
}

fn scrape(addr: &str, buf: &mut Vec<u8>, openmetrics: bool, gzip: bool) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut head = String::from("GET /metrics HTTP/1.1\r\n");
    if openmetrics {
        head.push_str("Accept: application/openmetrics-text;version=1.0.0\r\n");
    }
    if gzip {
        head.push_str("Accept-Encoding: gzip\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    buf.clear();
    s.read_to_end(buf).unwrap();
    buf.len()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let n = if benchmarking { 200 } else { 1 };
    let lab = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab");
    for series in ["basic", "vdevs/rz", "storm/series"] {
        let dirs = zpulse_agent::capture::series(&lab.join(series)).unwrap();
        let (a, b) = (
            sources::System::linux(Root::new(&dirs[0])),
            sources::System::linux(Root::new(&dirs[1])),
        );
        let sample_time = cpu_time(n, || {
            let s0 = sources::snapshot(&a, Default::default());
            let s1 = sources::snapshot(&b, Default::default());
            std::hint::black_box(Sample::between(&s0, &s1).ok());
        });
        let snaps = [
            Arc::new(sources::snapshot(&a, Default::default())),
            Arc::new(sources::snapshot(&b, Default::default())),
        ];
        let ratio = |d: Duration| d.as_secs_f64() / sample_time.as_secs_f64() * 100.0;
        // Each of the two snapshots in turn, so every rendering is of another reading than
        // the one before, as in the agent.
        let mut turn = 0;
        let mut next = || {
            turn += 1;
            &snaps[turn % 2]
        };

        let fresh_time = cpu_time(n, || {
            std::hint::black_box(exposition::render(&snaps[1], &[], None));
        });
        let mut renderer = exposition::Renderer::default();
        let kept_time = cpu_time(n, || {
            std::hint::black_box(renderer.render(next(), &[], None));
        });
        let mut sink =
            PrometheusSink::new(PrometheusConfig::ephemeral_loopback(Default::default())).unwrap();
        let sink_time = cpu_time(n, || {
            sink.observe(&Reading::First(Arc::clone(next()))).unwrap();
        });
        let rendered = exposition::render(&snaps[1], &[], None);
        let series_count = rendered
            .text_str()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .count();
        println!(
            "{series:<14} {series_count:>5} series  sample {:>7.1} µs  render: fresh {:>6.1} µs, kept {:>6.1} µs  ratio {:>4.1}%  (sink's whole work {:>6.1} µs, {:>4.1}%)",
            us(sample_time),
            us(fresh_time),
            us(kept_time),
            ratio(kept_time),
            us(sink_time),
            ratio(sink_time),
        );

        // The same series as a Forward metric record (forward sink, `metrics = true`).
        let fresh_record = cpu_time(n, || {
            std::hint::black_box(exposition::series_record(&snaps[1], "bench"));
        });
        let mut records = exposition::RecordRenderer::default();
        let kept_record = cpu_time(n, || {
            std::hint::black_box(records.record(next(), "bench"));
        });
        let record = exposition::series_record(&snaps[1], "bench");
        let gzipped = zpulse_forward::encode::gzip(&record).map_or(0, |g| g.len());
        println!(
            "{:<14} forward record: fresh {:>6.1} µs, kept {:>6.1} µs  ratio {:>4.1}%  {:>7} B, gzip {:>6} B",
            "",
            us(fresh_record),
            us(kept_record),
            ratio(kept_record),
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
        let body = rendered.text().len();
        endpoint.shared.publish(Arc::new(Published::new(rendered)));
        let addr = endpoint.addr.to_string();
        let mut buf = Vec::with_capacity(2 * body);
        for (openmetrics, gzip) in [(false, false), (false, true), (true, false), (true, true)] {
            // The gzip form is made by the first request.
            scrape(&addr, &mut buf, openmetrics, gzip);
            let before = GLOBAL.stats().bytes_allocated;
            let mut got = 0;
            let scrape_time = time(n, || got = scrape(&addr, &mut buf, openmetrics, gzip));
            let per = (GLOBAL.stats().bytes_allocated - before) as u64 / u64::from(n + 1);
            println!(
                "{:<14} scrape {:<11} {:>7.1} µs  response {:>7} B  allocated {:>6} B per scrape ({:.2}% of the body)",
                "",
                match (openmetrics, gzip) {
                    (false, false) => "text",
                    (false, true) => "text gzip",
                    (true, false) => "openmetrics",
                    (true, true) => "om gzip",
                },
                us(scrape_time),
                got,
                per,
                per as f64 / body as f64 * 100.0
            );
        }
    }
}
