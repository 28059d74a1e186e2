//! What one sample costs, next to what reading its files costs and what node_exporter costs.
//!
//! `cargo bench -p zpulse-tests --bench sample` prints, for a lab capture and for synthetic
//! captures of 10 to 5,000 disks and 10 to 2,000 vdevs, the CPU time per interval of:
//!
//! * **floor** — reading every file of the capture, byte for byte (what no agent can beat);
//! * **snapshot** — reading and parsing them into a `Snapshot` (kstats, diskstats, sysfs,
//!   the `/dev/zfs` replies decoded and joined to the disks);
//! * **sample** — the steady state without checks: a snapshot plus `Sample::between` against
//!   the previous one;
//! * **+ checks** — the same with every shipped check (the `plugins/` shared objects)
//!   loaded through the real plugin host, which encodes and dispatches the sample;
//! * **live snapshot**, **live + checks** — the snapshot and the interval with every check as
//!   the live agent makes them: one reader kept across snapshots (`capture::Reader`, as the
//!   daemon keeps its `System`), so the disks' static sysfs facts are read once and kept
//!   (`sysblock::KeptFacts`) instead of every interval, and no capture manifest is read;
//! * **+ outputs** — the live interval with every check as users run it: the reading handed
//!   to a Prometheus sink with a listener (`detail` standard), scraped once over loopback (as
//!   Prometheus would each reading; plain, and again gzip: the listener renders at the
//!   scrape), and the snapshot appended to a history (`history::Writer`, with its
//!   `fdatasync`; CPU only is counted); and where that goes, part by part ([`Parts`]);
//! * **node_exporter** — when Debian's `prometheus-node-exporter` is installed, its CPU per
//!   scrape of the same capture (`--path.procfs`, `--path.sysfs`, collectors `zfs` and
//!   `diskstats` only, scraped over loopback).
//!
//! zpulse's CPU time is the whole process's (every thread: the plugins' lanes, the listener's
//! threads, the history), less what the bench's own HTTP client spends scraping on its thread
//! (Prometheus' cost, not the agent's); node_exporter's is its process's, the server side
//! alone too. Both as ratios to the floor. Every stage of a capture is measured in five interleaved rounds and its median
//! kept, so that a machine whose speed drifts during the run moves all stages alike. The
//! growth exponent of each column is the slope of log(cost) over log(size) between the two
//! largest synthetic captures of an axis (and, for the live interval, over the whole axis
//! too), and the growth of the interval with every output on as a factor against the floor's
//! (500 → 5,000 disks, 200 → 2,000 vdevs). Memory: the resident set of `zpulse run --replay`
//! at the lab host with every output on (checks, a listener scraped all along, a history), and
//! per disk and per vdev the slope of it with every check over a synthetic series. Last, each
//! target with its verdict and the load average.
//!
//! `--quick` (what CI runs) and `cargo test` do a few iterations of everything: a smoke run
//! that prints the same table, not a measurement. `--no-rss` leaves out the memory figures
//! (and the build of the `zpulse` binary they need). `--callgrind` adds instruction counts per
//! iteration (valgrind, when installed), which do not depend on the machine's load.
//!
//! Synthetic captures start from the lab capture and add disks to `/proc/diskstats` and
//! `/sys/block`, and two-way mirrors to the pool's vdev tree, encoded with the agent's own
//! nvlist encoder from the lab's real `vdev_stats` and histograms (disk axis: the mirrors are
//! made of the new disks; vdev axis: of files, so that only the vdevs grow).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zpulse_agent::capture;
use zpulse_agent::sinks::prometheus::exposition::Detail;
use zpulse_agent::sinks::prometheus::{PrometheusConfig, PrometheusSink};
use zpulse_agent::sinks::{Reading, Sink};
use zpulse_proto::{Sample, Snapshot};
use zpulse_tests::synthetic::{Axis, LAB, copy_tree, synthetic_series};
use zpulse_tests::{
    CHECKS_LIBRARY, CHECKS_PACKAGE, SHIPPED_CHECKS, build_libs_into_test_target, fixture,
    start_shipped_checks,
};

/// CPU time of the bench's own HTTP client threads, ns: what a scrape costs the scraper
/// (connect, request, reading the response), which is Prometheus' cost, not the agent's.
static CLIENT_CPU_NS: AtomicU64 = AtomicU64::new(0);

fn clock(id: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(id);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The agent's CPU time: the whole process's (every thread: the plugins' lanes, the
/// listener's accept and connection threads, the history), less what the bench's HTTP
/// client spent on its own thread scraping it. node_exporter is charged the same way: its
/// process, not the client's.
fn cpu_now() -> Duration {
    clock(rustix::time::ClockId::ProcessCPUTime)
        .saturating_sub(Duration::from_nanos(CLIENT_CPU_NS.load(Ordering::Relaxed)))
}

/// CPU time per call of `f`, after one warm-up call, over at least `iterations` calls and
/// (outside quick mode) at least `min_cpu` of CPU.
fn cpu_per_call(mode: &Mode, mut f: impl FnMut(u32)) -> Duration {
    f(0);
    let start = cpu_now();
    let wall = Instant::now();
    let mut n = 0u32;
    loop {
        n += 1;
        f(n);
        if n >= mode.iterations
            && (mode.quick || cpu_now() - start >= mode.min_cpu || wall.elapsed() > mode.max_wall)
        {
            break;
        }
    }
    (cpu_now() - start) / n
}

#[derive(Clone, Copy)]
struct Mode {
    quick: bool,
    iterations: u32,
    min_cpu: Duration,
    max_wall: Duration,
    callgrind: bool,
}

/// Every file of a capture (the manifest too: loading reads it), `cli/` excepted.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == "cli") {
            continue;
        }
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The sample `k` intervals later: the same counters, the clock moved on, so that the checks'
/// windows advance as they would live.
fn shifted(mut s: Sample, k: u32) -> Arc<Sample> {
    let dt = f64::from(k) * s.interval;
    s.start += dt;
    s.end += dt;
    s.snapshot.taken_at += dt;
    Arc::new(s)
}

/// One row: CPU per interval of each stage, µs.
#[derive(Clone, Copy, Default)]
struct Costs {
    floor: f64,
    snapshot: f64,
    sample: f64,
    checks: f64,
    /// The snapshot and the interval with every check as the live agent makes them: one
    /// reader for every snapshot, which keeps the disks' sysfs facts (`KeptFacts`).
    kept_snapshot: f64,
    kept_checks: f64,
    /// The floor of what a live reader reads each interval: the files less the disks' sysfs
    /// attributes it keeps and the capture's manifest.
    kept_floor: f64,
    /// The live interval with every check, a Prometheus listener scraped once (plain, then
    /// gzip) and a history append.
    outputs: f64,
    outputs_gzip: f64,
    /// Where `outputs` goes, part by part.
    parts: Parts,
    /// Bytes of the last response to a scrape, plain and gzip (headers included).
    response_bytes: (usize, usize),
    node_exporter: Option<f64>,
    /// CPU a live kernel spends at the least on the capture's POOL_STATS replies each
    /// interval ([`kernel_work`]), when libnvpair is there to measure it.
    kernel: Option<f64>,
}

/// The agent's CPU per reading for each part of its outputs, µs (each part's median over
/// the rounds). The scrape parts are told apart by scraping one reading three times: the
/// first plain scrape renders it and serves it, the second only serves it (accept, the
/// connection's thread, the request read, the bytes written), the gzip one compresses it
/// and serves it.
#[derive(Clone, Copy, Default)]
struct Parts {
    /// `Sink::observe`: the reading handed to the listener, to render when scraped.
    handoff: f64,
    render_and_serve: f64,
    serve: f64,
    gzip_and_serve: f64,
    history: f64,
}

impl Parts {
    fn render(&self) -> f64 {
        self.render_and_serve - self.serve
    }
    fn gzip(&self) -> f64 {
        self.gzip_and_serve - self.serve
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Measures every stage on series `dir` (two captures, `000` then `001`) in interleaved
/// rounds, each stage a share of the CPU budget in every round, and keeps each stage's median:
/// a machine whose speed drifts during the run (a VM's neighbours, the page cache) then moves
/// every stage alike, and the ratios to the floor stay true.
fn measure(mode: &Mode, dir: &Path, profile: &Path) -> Costs {
    let (d0, d1) = (dir.join("000"), dir.join("001"));
    let mut list = Vec::new();
    files(&d1, &mut list);
    let prev: Snapshot = capture::load(&d0).expect("synthetic capture 000");
    let per_interval: Vec<&PathBuf> = list
        .iter()
        .filter(|f| !f.starts_with(d1.join("sys/block")) && !f.ends_with(capture::MANIFEST))
        .collect();
    let reader = capture::Reader::open(&d1).expect("capture 001");
    let mut host = native_checks(profile, &prev.host.hostname);
    let rounds = if mode.quick { 1 } else { ROUNDS };
    let round = Mode {
        iterations: (mode.iterations / rounds).max(1),
        min_cpu: mode.min_cpu / rounds,
        max_wall: mode.max_wall / rounds,
        ..*mode
    };
    // The checks see one interval after another across every round and stage, as live.
    let mut interval = 0u32;
    let mut next = || {
        interval += 1;
        interval
    };
    let mut stages: [Vec<f64>; 9] = Default::default();
    let mut parts: [Vec<f64>; 5] = Default::default();
    let mut outputs = Outputs::new();
    for _ in 0..rounds {
        let costs = [
            cpu_per_call(&round, |_| {
                for f in &list {
                    std::hint::black_box(std::fs::read(f).ok());
                }
            }),
            cpu_per_call(&round, |_| {
                std::hint::black_box(capture::load(&d1).ok());
            }),
            cpu_per_call(&round, |_| {
                let cur = Arc::new(capture::load(&d1).expect("capture 001"));
                std::hint::black_box(Sample::following(&prev, cur).ok());
            }),
            cpu_per_call(&round, |_| {
                let cur = Arc::new(capture::load(&d1).expect("capture 001"));
                let sample = Sample::following(&prev, cur).expect("a sample");
                std::hint::black_box(host.run(&shifted(sample, next())));
            }),
            cpu_per_call(&round, |_| {
                for f in &per_interval {
                    std::hint::black_box(std::fs::read(f).ok());
                }
            }),
            cpu_per_call(&round, |_| {
                std::hint::black_box(reader.load());
            }),
            cpu_per_call(&round, |_| {
                let sample = Sample::following(&prev, Arc::new(reader.load())).expect("a sample");
                std::hint::black_box(host.run(&shifted(sample, next())));
            }),
            cpu_per_call(&round, |_| {
                let sample = Sample::following(&prev, Arc::new(reader.load())).expect("a sample");
                let sample = shifted(sample, next());
                std::hint::black_box(host.run(&sample));
                outputs.take(sample, false);
            }),
            cpu_per_call(&round, |_| {
                let sample = Sample::following(&prev, Arc::new(reader.load())).expect("a sample");
                let sample = shifted(sample, next());
                std::hint::black_box(host.run(&sample));
                outputs.take(sample, true);
            }),
        ];
        for (stage, cost) in stages.iter_mut().zip(costs) {
            stage.push(us(cost));
        }
        let p = outputs.parts(&round, || {
            let sample = Sample::following(&prev, Arc::new(reader.load())).expect("a sample");
            let sample = shifted(sample, next());
            std::hint::black_box(host.run(&sample));
            sample
        });
        for (part, cost) in parts.iter_mut().zip(p) {
            part.push(cost);
        }
    }
    host.shutdown();
    let response_bytes = outputs.response_bytes;
    let [
        floor,
        snapshot,
        sample,
        checks,
        kept_floor,
        kept_snapshot,
        kept_checks,
        outputs,
        outputs_gzip,
    ] = stages.map(|mut v| median(&mut v));
    let [handoff, render_and_serve, serve, gzip_and_serve, history] =
        parts.map(|mut v| median(&mut v));
    Costs {
        floor,
        snapshot,
        sample,
        checks,
        kept_snapshot,
        kept_checks,
        kept_floor,
        outputs,
        outputs_gzip,
        parts: Parts {
            handoff,
            render_and_serve,
            serve,
            gzip_and_serve,
            history,
        },
        response_bytes,
        node_exporter: None,
        kernel: None,
    }
}

/// The shipped checks, from the bundle in `profile`. As installed, the agent and its checks
/// are one build: the checks take the agent's own sample. A bundle left from another build
/// would get MessagePack and decode every sample once per check, which is not what users run.
fn native_checks(profile: &Path, hostname: &str) -> zpulse_agent::plugins::PluginHost {
    let host = start_shipped_checks(profile, hostname);
    for p in host.plugins() {
        assert!(
            p.native,
            "{}: given MessagePack, not the native sample",
            p.label()
        );
    }
    host
}

/// What a live agent does with a reading besides the checks, every output users turn on: a
/// Prometheus sink with a listener on loopback, scraped once as Prometheus would, and a
/// history in a temporary directory.
struct Outputs {
    sink: PrometheusSink,
    port: u16,
    history: zpulse_agent::history::Writer,
    _history_dir: tempfile::TempDir,
    /// Bytes of the last response, plain and gzip.
    response_bytes: (usize, usize),
}

impl Outputs {
    fn new() -> Outputs {
        let sink = PrometheusSink::new(PrometheusConfig::ephemeral_loopback(Detail::Standard))
            .expect("a prometheus listener on loopback");
        let port = sink.local_addr().expect("a listener").port();
        let history_dir = tempfile::tempdir().expect("a temporary directory");
        let history = zpulse_agent::history::Writer::open(&zpulse_agent::history::Config {
            dir: Some(history_dir.path().to_path_buf()),
            ..zpulse_agent::history::Config::default()
        })
        .expect("a history");
        Outputs {
            sink,
            port,
            history,
            _history_dir: history_dir,
            response_bytes: (0, 0),
        }
    }

    fn take(&mut self, sample: Arc<Sample>, gzip: bool) {
        let reading = Reading::Sample(sample);
        self.sink
            .observe(&reading)
            .expect("the sink takes the reading");
        self.scrape(gzip);
        self.history
            .append(reading.snapshot())
            .expect("a history append");
    }

    /// One scrape, as Prometheus makes it each reading.
    fn scrape(&mut self, gzip: bool) {
        let bytes = scrape(self.port, gzip);
        self.note_response(gzip, bytes);
    }

    fn note_response(&mut self, gzip: bool, bytes: usize) {
        assert!(bytes > 1000, "the listener answered nothing");
        if gzip {
            self.response_bytes.1 = bytes;
        } else {
            self.response_bytes.0 = bytes;
        }
    }

    /// CPU per reading of each part ([`Parts`], in its order), µs, over readings made by
    /// `reading` (whose own cost is not counted), at least `mode.iterations` of them and
    /// (outside quick mode) at least `mode.min_cpu` of the parts' CPU.
    fn parts(&mut self, mode: &Mode, mut reading: impl FnMut() -> Arc<Sample>) -> [f64; 5] {
        let mut sums = [Duration::ZERO; 5];
        let wall = Instant::now();
        let mut n = 0u32;
        loop {
            let reading = Reading::Sample(reading());
            let mut part = |i: usize, f: &mut dyn FnMut()| {
                let t = cpu_now();
                f();
                sums[i] += cpu_now() - t;
            };
            part(0, &mut || {
                self.sink
                    .observe(&reading)
                    .expect("the sink takes the reading")
            });
            for (i, gzip) in [(1, false), (2, false), (3, true)] {
                let mut bytes = 0;
                part(i, &mut || bytes = scrape(self.port, gzip));
                self.note_response(gzip, bytes);
            }
            part(4, &mut || {
                self.history
                    .append(reading.snapshot())
                    .expect("a history append");
            });
            n += 1;
            let total: Duration = sums.iter().sum();
            if n >= mode.iterations
                && (mode.quick || total >= mode.min_cpu || wall.elapsed() > mode.max_wall)
            {
                break;
            }
        }
        sums.map(|d| us(d / n))
    }
}

/// Rounds of [`measure`] outside quick mode.
const ROUNDS: u32 = 5;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

// ---- node_exporter ------------------------------------------------------------------------

const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";

/// CPU ticks (utime + stime) of process `pid`, in seconds.
fn process_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// One scrape of `/metrics` over loopback, as Prometheus makes it (a connection per scrape);
/// the bytes received. The CPU this thread spends on it is the client's, counted apart
/// ([`CLIENT_CPU_NS`]).
fn scrape(port: u16, gzip: bool) -> usize {
    let start = clock(rustix::time::ClockId::ThreadCPUTime);
    let n = scrape_as_client(port, gzip);
    let spent = clock(rustix::time::ClockId::ThreadCPUTime).saturating_sub(start);
    CLIENT_CPU_NS.fetch_add(spent.as_nanos() as u64, Ordering::Relaxed);
    n
}

fn scrape_as_client(port: u16, gzip: bool) -> usize {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let accept = if gzip {
        "Accept-Encoding: gzip\r\n"
    } else {
        ""
    };
    // In one write, as Prometheus' HTTP client sends a request (`write!` straight onto the
    // socket sends each piece of the format on its own).
    let request =
        format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut body = Vec::new();
    s.read_to_end(&mut body).unwrap();
    body.len()
}

/// node_exporter's CPU per scrape of capture `dir` (plain, gzip), µs; `None` when absent.
fn node_exporter(mode: &Mode, dir: &Path) -> Option<(f64, f64)> {
    if !Path::new(NODE_EXPORTER).exists() {
        // CI installs it (.ci/run): there, a comparison that cannot run is a failure.
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{NODE_EXPORTER} is missing: apt-get install prometheus-node-exporter"
        );
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(NODE_EXPORTER)
        .arg(format!("--path.procfs={}", dir.join("proc").display()))
        .arg(format!("--path.sysfs={}", dir.join("sys").display()))
        .args([
            "--collector.disable-defaults",
            "--collector.zfs",
            "--collector.diskstats",
        ])
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "node_exporter did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let scrapes = if mode.quick { 20 } else { 400 };
    let per = |gzip: bool| {
        for _ in 0..5 {
            assert!(scrape(port, gzip) > 1000, "node_exporter answered nothing");
        }
        let before = process_cpu(child.id()).unwrap();
        for _ in 0..scrapes {
            scrape(port, gzip);
        }
        (process_cpu(child.id()).unwrap() - before) / f64::from(scrapes) * 1e6
    };
    let plain = per(false);
    let gzip = per(true);
    let _ = child.kill();
    let _ = child.wait();
    Some((plain, gzip))
}

// ---- zpulse run --replay: resident memory -------------------------------------------------

/// Peak resident set (KiB) of `zpulse run --replay` over `series` with every shipped check,
/// polled from /proc while it runs. With `every_output`, as users run it: a Prometheus
/// listener scraped all along (so each reading is rendered, plain and gzip in turn) and a
/// history, paced so that each reading is scraped.
fn run_rss(profile: &Path, series: &Path, work: &Path, every_output: bool) -> Rss {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = format!(
        "[plugins]\ndirs = []\npaths = [{:?}]\n",
        profile.join(CHECKS_LIBRARY).display().to_string()
    );
    if every_output {
        config += &format!(
            "[history]\ndir = {:?}\n[[sink]]\ntype = \"prometheus\"\nlisten = \"127.0.0.1:{port}\"\n",
            work.join("rss-history").display().to_string()
        );
    }
    let config_path = work.join("rss.toml");
    std::fs::write(&config_path, config).unwrap();
    let pace: &[&str] = if every_output {
        &["--pace", "100ms"]
    } else {
        &[]
    };
    let mut child = Command::new(profile.join("zpulse"))
        .envs(unit_environment())
        .arg("run")
        .args(pace)
        .arg("--config")
        .arg(&config_path)
        .arg("--replay")
        .arg(series)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut peak = Rss::default();
    let mut scraped = 0u32;
    let mut gzip = false;
    while child.try_wait().unwrap().is_none() {
        // Answered 503 until the first reading; refused once the replay ends.
        if every_output && let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let accept = if gzip {
                "Accept-Encoding: gzip\r\n"
            } else {
                ""
            };
            let request = format!(
                "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n"
            );
            let _ = s.write_all(request.as_bytes());
            let mut body = Vec::new();
            if s.read_to_end(&mut body).is_ok() && body.starts_with(b"HTTP/1.1 200") {
                scraped += 1;
            }
            gzip = !gzip;
        }
        if let Some(now) = rss_of(child.id())
            && now.total > peak.total
        {
            peak = now;
        }
        std::thread::sleep(Duration::from_millis(if every_output { 10 } else { 2 }));
    }
    assert!(
        !every_output || scraped > 0,
        "the replaying agent was never scraped"
    );
    let _ = std::fs::remove_dir_all(work.join("rss-history"));
    peak
}

/// The `Environment=` of the agent's systemd unit, which the package runs it with (one malloc
/// arena): memory is measured as installed.
fn unit_environment() -> Vec<(String, String)> {
    let unit = zpulse_tests::workspace().join("packaging/systemd/zpulse.service");
    std::fs::read_to_string(&unit)
        .expect("the agent's systemd unit")
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn rss_of(pid: u32) -> Option<Rss> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap_or(0)
    };
    Some(Rss {
        total: kb("VmRSS:"),
        anon: kb("RssAnon:"),
        file: kb("RssFile:"),
    })
}

/// A resident set in KiB: in all, anonymous (the heap, stacks) and file-backed (the code and
/// read-only data of the binary and the plugins' shared objects, as far as it was touched).
#[derive(Debug, Default, Clone, Copy)]
struct Rss {
    total: u64,
    anon: u64,
    file: u64,
}

/// A series of `n` captures alternating the two of `pair` with increasing `captured_at`, so
/// that every sample has rates.
fn long_series(pair: &Path, out: &Path, n: usize) -> PathBuf {
    for i in 0..n {
        let dir = out.join(format!("{i:03}"));
        copy_tree(&pair.join(format!("{:03}", i % 2)), &dir);
        let m = std::fs::read_to_string(dir.join(capture::MANIFEST)).unwrap();
        let m: String = m
            .lines()
            .map(|l| {
                if let Some(t) = l.strip_prefix("captured_at = ") {
                    format!(
                        "captured_at = {}\n",
                        t.parse::<f64>().unwrap() + 60.0 * i as f64
                    )
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(dir.join(capture::MANIFEST), m).unwrap();
    }
    out.to_path_buf()
}

// ---- callgrind ----------------------------------------------------------------------------

/// `--phase NAME --series DIR --iterations N`: one stage alone, for callgrind or perf;
/// `outputs` is the live interval with every check and every output (a plain scrape).
fn phase(name: &str, series: &Path, iterations: u32, profile: &Path) {
    let (d0, d1) = (series.join("000"), series.join("001"));
    let prev = capture::load(&d0).unwrap();
    let mut list = Vec::new();
    files(&d1, &mut list);
    let with_outputs = name == "outputs";
    let with_checks = name == "checks" || name == "live-checks" || with_outputs;
    let mut host = with_checks.then(|| start_shipped_checks(profile, &prev.host.hostname));
    let reader = capture::Reader::open(&d1).unwrap();
    let mut outputs = Outputs::new();
    for k in 0..iterations {
        match name {
            "outputs" => {
                let sample = shifted(
                    Sample::following(&prev, Arc::new(reader.load())).unwrap(),
                    k,
                );
                if let Some(h) = host.as_mut() {
                    std::hint::black_box(h.run(&sample));
                }
                outputs.take(sample, false);
            }
            "floor" => {
                for f in &list {
                    std::hint::black_box(std::fs::read(f).ok());
                }
            }
            "snapshot" => {
                std::hint::black_box(capture::load(&d1).ok());
            }
            "live-snapshot" => {
                std::hint::black_box(reader.load());
            }
            "live-checks" => {
                let sample = Sample::following(&prev, Arc::new(reader.load())).unwrap();
                if let Some(h) = host.as_mut() {
                    std::hint::black_box(h.run(&shifted(sample, k)));
                }
            }
            _ => {
                let cur = Arc::new(capture::load(&d1).unwrap());
                let sample = Sample::following(&prev, cur).unwrap();
                if let Some(h) = host.as_mut() {
                    std::hint::black_box(h.run(&shifted(sample, k)));
                }
            }
        }
    }
    if let Some(h) = host {
        h.shutdown();
    }
}

/// Instructions per iteration of a stage: callgrind's total at 2n iterations minus at n.
fn instructions(name: &str, series: &Path, n: u32, profile: &Path) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let total = |iterations: u32| -> Option<u64> {
        let out = Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(&exe)
            .args(["--phase", name, "--series"])
            .arg(series)
            .args(["--iterations", &iterations.to_string()])
            .arg("--profile")
            .arg(profile)
            .output()
            .ok()?;
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.contains("Collected :"))?;
        line.rsplit(':').next()?.trim().parse().ok()
    };
    let (a, b) = (total(n)?, total(2 * n)?);
    Some(b.saturating_sub(a) / u64::from(n))
}

// ---- the kernel's work on the replies ----------------------------------------------------

/// `tests/lab/tools/nvcal.c`, built into `work` with the C compiler, when libnvpair loads
/// (Debian contrib's `libnvpair3linux`, or `ZPULSE_BENCH_LIBNVPAIR_DIR`, a directory holding
/// `libnvpair.so.3`, e.g. the package unpacked with `dpkg -x`): what the kernel's own nvpair
/// code costs to build and pack a reply. `Err` says why not.
fn nvcal(work: &Path) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/tools/nvcal.c");
    let exe = work.join("nvcal");
    let built = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&source)
        .arg("-ldl")
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if !built.status.success() {
        return Err(format!(
            "cc: {}",
            String::from_utf8_lossy(&built.stderr).trim()
        ));
    }
    // nvcal with no file says whether libnvpair loads before it looks at its arguments.
    let out = nvcal_command(&exe).output().map_err(|e| e.to_string())?;
    let said = String::from_utf8_lossy(&out.stderr);
    if said.contains("usage") {
        Ok(exe)
    } else {
        Err(said.trim().to_string())
    }
}

fn nvcal_command(exe: &Path) -> Command {
    let mut c = Command::new(exe);
    if let Some(dir) = std::env::var_os("ZPULSE_BENCH_LIBNVPAIR_DIR") {
        c.env("LD_LIBRARY_PATH", dir);
    }
    c
}

/// CPU µs a live kernel spends at the least on capture `dir`'s POOL_STATS replies each
/// interval: libnvpair building (duplicating) each pool's config and packing it, as the
/// ioctl does before the agent reads a byte (docs/performance.md, "against a live kernel").
fn kernel_work(nvcal: &Path, dir: &Path) -> f64 {
    let Ok(replies) = std::fs::read_dir(dir.join("001/zfs-ioctl/pool_stats")) else {
        return 0.0;
    };
    let mut total = 0.0;
    for reply in replies.flatten() {
        let bytes = reply.metadata().map_or(1, |m| m.len().max(1));
        // Some 500 MB of reply in all: about twenty iterations of a 2,000-vdev reply.
        let iterations = (500_000_000 / bytes).clamp(3, 2_000);
        let out = nvcal_command(nvcal)
            .arg(reply.path())
            .arg(iterations.to_string())
            .output()
            .expect("nvcal runs");
        // "…; CPU µs each: unpack+free A, dup B, pack+free C"
        let text = String::from_utf8_lossy(&out.stdout);
        let figure = |name: &str| -> f64 {
            text.split("each: ")
                .nth(1)
                .into_iter()
                .flat_map(|list| list.trim().split(", "))
                .find_map(|item| item.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or_else(|| panic!("nvcal said {text:?}"))
        };
        total += figure("dup") + figure("pack+free");
    }
    total
}

// ---- the live kernel ----------------------------------------------------------------------

/// One row of `--live-kernel`: CPU per interval, µs, on this host's live kernel.
#[derive(Clone, Copy, Debug, Default)]
struct LiveCosts {
    leaves: usize,
    /// The files a live reader reads each interval (its `/proc` and `/sys` files less the
    /// disks' sysfs facts it keeps), read raw, and the round of `/dev/zfs` ioctls.
    floor: f64,
    /// The ioctls alone.
    ioctls: f64,
    snapshot: f64,
    checks: f64,
    outputs: f64,
}

impl LiveCosts {
    const FIELDS: usize = 6;

    fn line(&self) -> String {
        format!(
            "{} {} {} {} {} {}",
            self.leaves, self.floor, self.ioctls, self.snapshot, self.checks, self.outputs
        )
    }

    fn parse(line: &str) -> Option<LiveCosts> {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        (v.len() == Self::FIELDS).then(|| LiveCosts {
            leaves: v[0] as usize,
            floor: v[1],
            ioctls: v[2],
            snapshot: v[3],
            checks: v[4],
            outputs: v[5],
        })
    }
}

/// `--live-kernel --profile DIR [--save FILE] [--compare FILE]`: on a host with ZFS loaded
/// (the lab VM: `tests/lab/scenarios/live-growth.sh`), as root, the interval's stages on the
/// live kernel, each with its floor: the files the live reader reads each interval, read raw,
/// and the round of `/dev/zfs` ioctls it makes, whose cost is the kernel's building and
/// packing of every vdev's config and statistics. The floor of the replayed rows reads
/// recorded replies, a copy that costs about 1 µs a leaf vdev: this one is what a live host
/// pays for them. `--save` writes the row to FILE; `--compare` reads a row saved on a host
/// with fewer vdevs and prints the growth from it to this one against the floor's.
fn live_kernel(args: &[String], profile: &Path) {
    use zpulse_agent::sources::{self, System, zfs_ioctl::Platform, zpool::read};
    let system = System::live();
    let identity = system.identity();
    let (first, recording) = sources::recorded_snapshot(&system, identity.clone());
    assert!(
        first.zfs_loaded,
        "--live-kernel: the ZFS module is not loaded"
    );
    let leaves: usize = first
        .pools
        .iter()
        .filter_map(|p| p.config.as_ref())
        .map(|c| c.root.walk().iter().filter(|v| v.is_leaf()).count())
        .sum();
    assert!(leaves > 0, "--live-kernel: no pool with vdevs");
    let files: Vec<PathBuf> = recording
        .files
        .keys()
        .filter(|k| {
            (k.starts_with("proc/") || k.starts_with("sys/")) && !k.starts_with("sys/block")
        })
        .map(|k| Path::new("/").join(k))
        .collect();
    let platform = if cfg!(target_os = "freebsd") {
        Platform::Freebsd
    } else {
        Platform::Linux
    };
    let kept = read::KeptReplies::default();
    let prev = sources::snapshot(&system, identity.clone());
    let mut host = native_checks(profile, &identity.hostname);
    let mut outputs = Outputs::new();
    let iterations = arg_value(args, "--iterations").map_or(20, |n| n.parse().unwrap());
    let round = Mode {
        quick: false,
        iterations: (iterations / ROUNDS).max(1),
        min_cpu: Duration::from_millis(400),
        max_wall: Duration::from_secs(60),
        callgrind: false,
    };
    let mut interval = 0u32;
    let mut sample = || {
        interval += 1;
        let cur = Arc::new(sources::snapshot(&system, identity.clone()));
        shifted(Sample::following(&prev, cur).expect("a sample"), interval)
    };
    let mut stages: [Vec<f64>; 5] = Default::default();
    for _ in 0..ROUNDS {
        let costs = [
            cpu_per_call(&round, |_| {
                for f in &files {
                    std::hint::black_box(std::fs::read(f).ok());
                }
                std::hint::black_box(read::floor_round(platform, &kept).expect("the ioctls"));
            }),
            cpu_per_call(&round, |_| {
                std::hint::black_box(read::floor_round(platform, &kept).expect("the ioctls"));
            }),
            cpu_per_call(&round, |_| {
                std::hint::black_box(sources::snapshot(&system, identity.clone()));
            }),
            cpu_per_call(&round, |_| {
                std::hint::black_box(host.run(&sample()));
            }),
            cpu_per_call(&round, |_| {
                let sample = sample();
                std::hint::black_box(host.run(&sample));
                outputs.take(sample, false);
            }),
        ];
        for (stage, cost) in stages.iter_mut().zip(costs) {
            stage.push(us(cost));
        }
    }
    host.shutdown();
    let [floor, ioctls, snapshot, checks, outputs] = stages.map(|mut v| median(&mut v));
    let c = LiveCosts {
        leaves,
        floor,
        ioctls,
        snapshot,
        checks,
        outputs,
    };
    println!(
        "live kernel ({} pools, {leaves} leaf vdevs, {} files a reading), CPU µs per interval, \
         load average {}",
        first.pools.len(),
        files.len(),
        load_average()
    );
    let row = |label: &str, v: f64| println!("  {label:<40} {v:>11.1} µs  {:>6.2} ×", v / floor);
    row("floor: the files read raw + the ioctls", floor);
    row("  the ioctls alone", ioctls);
    row("snapshot", snapshot);
    row("+ checks", checks);
    row("+ listener scraped + history", outputs);
    if let Some(file) = arg_value(args, "--save") {
        std::fs::write(&file, c.line() + "\n").expect("--save: the file is written");
    }
    if let Some(file) = arg_value(args, "--compare") {
        let text = std::fs::read_to_string(&file).expect("--compare: a file of --save");
        let a = LiveCosts::parse(text.trim()).expect("--compare: a row of --save");
        let per_leaf = |x: f64, y: f64| (y - x) / (c.leaves as f64 - a.leaves as f64);
        let (floor_growth, growth) = (c.floor / a.floor, c.outputs / a.outputs);
        println!(
            "  from {} to {} leaf vdevs: the floor ×{:.2}, the interval with every output \
             on ×{:.2}: {:.2}× the floor's growth (target ≤ 1.2); each leaf more: +{:.2} µs, \
             the floor +{:.2} µs (the ioctls +{:.2} µs)",
            a.leaves,
            c.leaves,
            floor_growth,
            growth,
            growth / floor_growth,
            per_leaf(a.outputs, c.outputs),
            per_leaf(a.floor, c.floor),
            per_leaf(a.ioctls, c.ioctls),
        );
    }
}

// ---- report -------------------------------------------------------------------------------

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// An axis of synthetic captures: its name, its sizes, and how to make one.
type AxisSizes<'a> = (&'a str, &'a [usize], fn(usize) -> Axis);

/// Instructions per interval at one size: (size, live snapshot, live + checks).
type Counted = (usize, Option<u64>, Option<u64>);

/// Growth exponent between two sizes.
fn exponent(size: (f64, f64), cost: (f64, f64)) -> f64 {
    (cost.1 / cost.0).ln() / (size.1 / size.0).ln()
}

fn arg_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--live-kernel") {
        let profile = PathBuf::from(arg_value(&args, "--profile").expect("--profile"));
        live_kernel(&args, &profile);
        return;
    }
    if let Some(name) = arg_value(&args, "--phase") {
        let profile = PathBuf::from(arg_value(&args, "--profile").expect("--profile"));
        let series = PathBuf::from(arg_value(&args, "--series").expect("--series"));
        let n = arg_value(&args, "--iterations").map_or(1, |n| n.parse().unwrap());
        phase(&name, &series, n, &profile);
        return;
    }
    // `--synthetic disks|vdevs N DIR`: writes that synthetic series into DIR and stops, for
    // profiling a size by hand (`--phase NAME --series DIR/disks-N`).
    if let Some(i) = args.iter().position(|a| a == "--synthetic") {
        let [axis, n, dir] = [1, 2, 3].map(|k| args.get(i + k).expect("--synthetic AXIS N DIR"));
        let n: usize = n.parse().expect("--synthetic: N is a number");
        let axis = match axis.as_str() {
            "disks" => Axis::Disks(n),
            "vdevs" => Axis::Vdevs(n),
            other => panic!("--synthetic: no axis {other:?} (disks or vdevs)"),
        };
        println!("{}", synthetic_series(Path::new(dir), axis).display());
        return;
    }
    // `--no-rss`: no `zpulse run` memory figures, and so no release build of the binary.
    let rss = !args.iter().any(|a| a == "--no-rss");
    let profile = build_libs_into_test_target(&[CHECKS_PACKAGE], rss);
    let benchmarking = args.iter().any(|a| a == "--bench");
    let quick = !benchmarking || args.iter().any(|a| a == "--quick");
    let mode = Mode {
        quick,
        iterations: if quick { 3 } else { 50 },
        min_cpu: Duration::from_millis(600),
        max_wall: Duration::from_secs(20),
        callgrind: args.iter().any(|a| a == "--callgrind"),
    };
    let work = std::env::temp_dir().join(format!("zpulse-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();

    println!(
        "zpulse sample benchmark ({}, {} build): {} CPUs, load average {}",
        if quick {
            "quick smoke run, not a measurement"
        } else {
            "measurement"
        },
        profile.file_name().unwrap().to_string_lossy(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!(
        "CPU time per interval, µs, and × the floor: the bench process's every thread (the \
         plugins' lanes, the listener's threads, the history) less its HTTP client's own \
         thread; node_exporter: its process's CPU per scrape\n"
    );
    let mut verdicts: Vec<Verdict> = Vec::new();

    // The lab capture.
    let lab = fixture(LAB);
    let mut lab_costs = measure(&mode, &lab, &profile);
    let ne = node_exporter(&mode, &lab.join("001"));
    lab_costs.node_exporter = ne.map(|n| n.0);
    let c = lab_costs;
    let mut n_files = Vec::new();
    files(&lab.join("001"), &mut n_files);
    println!("lab capture {LAB}/001 ({} files)", n_files.len());
    let row = |label: &str, v: f64| println!("  {label:<34} {v:>10.1} µs  {:>6.2} ×", v / c.floor);
    row("floor: read the files", c.floor);
    row("snapshot", c.snapshot);
    row("sample, no checks", c.sample);
    row(
        &format!("sample + {} shipped checks", SHIPPED_CHECKS.len()),
        c.checks,
    );
    // A live agent reads one system for every snapshot and keeps its disks' sysfs facts.
    row("snapshot, disk facts kept (live)", c.kept_snapshot);
    row("+ checks, disk facts kept (live)", c.kept_checks);
    row("+ listener scraped + history (live)", c.outputs);
    row("  the same, scraped with gzip", c.outputs_gzip);
    let p = c.parts;
    println!("  where the interval with every output on goes (agent CPU per reading):");
    row("  live + checks", c.kept_checks);
    row("  hand-off to the listener", p.handoff);
    row("  render (by the reading's 1st scrape)", p.render());
    row("  serve a scrape (accept, thread, send)", p.serve);
    row("  gzip (once per reading)", p.gzip());
    println!(
        "    a scrape's response: {} bytes plain, {} bytes gzip ({:.1}×)",
        c.response_bytes.0,
        c.response_bytes.1,
        c.response_bytes.0 as f64 / c.response_bytes.1.max(1) as f64
    );
    row("  history append", p.history);
    // The "a sample": what the row `sample, no checks` measures, a snapshot read and
    // parsed and `Sample::between` the previous one (as the history bench compares too).
    verdicts.push(Verdict::at_most(
        "history append ÷ a sample (snapshot + Sample::between)",
        p.history / c.sample,
        0.2,
    ));
    verdicts.push(Verdict::at_most(
        "interval with every output on ÷ floor, plain",
        c.outputs / c.floor,
        3.0,
    ));
    verdicts.push(Verdict::at_most(
        "interval with every output on ÷ floor, gzip",
        c.outputs_gzip / c.floor,
        3.0,
    ));
    println!(
        "  each interval the live reader reads every file but the disks' sysfs attributes: \
         reading only those costs {:.1} µs; live snapshot {:.2} ×, live + checks {:.2} ×, \
         every output on {:.2} × (gzip {:.2} ×) that",
        c.kept_floor,
        c.kept_snapshot / c.kept_floor,
        c.kept_checks / c.kept_floor,
        c.outputs / c.kept_floor,
        c.outputs_gzip / c.kept_floor
    );
    match ne {
        Some((plain, gzip)) => {
            row("node_exporter scrape (zfs+diskstats)", plain);
            row("node_exporter scrape, gzip", gzip);
            println!(
                "  node_exporter's plain scrape costs {:.2}× zpulse's interval with every check \
                 ({:.2}× the live one)",
                plain / c.checks,
                plain / c.kept_checks
            );
            println!(
                "  node_exporter ÷ zpulse with every output on (checks, listener scraped, \
                 history): {:.2}× plain, {:.2}× gzip",
                plain / c.outputs,
                gzip / c.outputs_gzip
            );
            verdicts.push(Verdict::at_least(
                "node_exporter ÷ zpulse, every output on, plain",
                plain / c.outputs,
                3.0,
            ));
            verdicts.push(Verdict::at_least(
                "node_exporter ÷ zpulse, every output on, gzip",
                gzip / c.outputs_gzip,
                3.0,
            ));
        }
        None => println!("  node_exporter: {NODE_EXPORTER} not installed, not compared"),
    }
    if mode.callgrind {
        let n = if quick { 2 } else { 10 };
        let ir: Vec<(&str, Option<u64>)> = [
            "floor",
            "snapshot",
            "live-snapshot",
            "sample",
            "checks",
            "live-checks",
        ]
        .iter()
        .map(|p| (*p, instructions(p, &lab, n, &profile)))
        .collect();
        match ir[0].1 {
            Some(floor) => {
                println!("  instructions (callgrind) per iteration:");
                for (p, v) in &ir {
                    let v = v.unwrap_or(0);
                    println!("    {p:<10} {v:>12}  {:>6.2} ×", v as f64 / floor as f64);
                }
            }
            None => println!("  callgrind: valgrind not available"),
        }
    }

    // Scaling.
    // The growth targets are between the two largest sizes of each axis: 500 to 5,000
    // disks, 200 to 2,000 vdevs.
    let disk_sizes: &[usize] = if quick { &[10, 100] } else { &[10, 500, 5000] };
    let vdev_sizes: &[usize] = if quick { &[10, 100] } else { &[10, 200, 2000] };
    // `--no-scaling`: the lab capture alone (and its memory), no synthetic captures.
    let scaling = !args.iter().any(|a| a == "--no-scaling");
    let axes: &[AxisSizes] = if scaling {
        &[
            ("disks", disk_sizes, Axis::Disks as fn(usize) -> Axis),
            ("vdevs", vdev_sizes, Axis::Vdevs as fn(usize) -> Axis),
        ]
    } else {
        &[]
    };
    if scaling {
        println!("\nscaling (synthetic captures grown from the lab's), µs per interval");
    }
    if scaling {
        println!(
            "  {:<12} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9} {:>11} {:>11} {:>11} {:>11} {:>7}",
            "capture",
            "floor",
            "snapshot",
            "sample",
            "+ checks",
            "snap/fl",
            "chk/fl",
            "live floor",
            "live snap",
            "live chk",
            "+ outputs",
            "out/fl"
        );
    }
    let nvcal = if scaling { Some(nvcal(&work)) } else { None };
    if let Some(Err(why)) = &nvcal {
        println!(
            "  the kernel's work on the replies is not measured: {why} (libnvpair: Debian \
             contrib's libnvpair3linux, or ZPULSE_BENCH_LIBNVPAIR_DIR)"
        );
    }
    let nvcal = nvcal.and_then(Result::ok);
    let mut axis_rows: Vec<(&str, Vec<(usize, Costs)>)> = Vec::new();
    // With `--callgrind`: user-space instructions of the live snapshot and of the live
    // interval with every check at the two largest sizes of each axis, whose growth is that
    // of zpulse's own code, without the kernel's share of the floor.
    let mut axis_instructions: Vec<(&str, Vec<Counted>)> = Vec::new();
    for &(label, sizes, make) in axes {
        let mut rows = Vec::new();
        let mut counted = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let dir = synthetic_series(&work, make(n));
            let mut c = measure(&mode, &dir, &profile);
            // Only the two largest sizes are compared.
            if i + 2 >= sizes.len() {
                c.kernel = nvcal.as_deref().map(|exe| kernel_work(exe, &dir));
            }
            if mode.callgrind && i + 2 >= sizes.len() {
                counted.push((
                    n,
                    instructions("live-snapshot", &dir, 1, &profile),
                    instructions("live-checks", &dir, 1, &profile),
                ));
            }
            println!(
                "  {:<12} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>9.2} {:>9.2} {:>11.1} {:>11.1} {:>11.1} {:>11.1} {:>7.2}",
                format!("{n} {label}"),
                c.floor,
                c.snapshot,
                c.sample,
                c.checks,
                c.snapshot / c.floor,
                c.checks / c.floor,
                c.kept_floor,
                c.kept_snapshot,
                c.kept_checks,
                c.outputs,
                c.outputs / c.floor
            );
            rows.push((n, c));
            let _ = std::fs::remove_dir_all(&dir);
        }
        axis_rows.push((label, rows));
        axis_instructions.push((label, counted));
    }
    for (label, rows) in &axis_rows {
        // Between the two largest sizes, where the lab's own share no longer hides the growth
        // of what was added: 1.0 is linear, 2.0 quadratic.
        let (a, b) = (rows[rows.len() - 2], rows[rows.len() - 1]);
        let e = |f: fn(&Costs) -> f64| exponent((a.0 as f64, b.0 as f64), (f(&a.1), f(&b.1)));
        println!(
            "  growth exponent in {label}, {}→{}: floor {:.2}, snapshot {:.2}, sample {:.2}, + checks {:.2}; live: snapshot {:.2}, + checks {:.2}",
            a.0,
            b.0,
            e(|c| c.floor),
            e(|c| c.snapshot),
            e(|c| c.sample),
            e(|c| c.checks),
            e(|c| c.kept_snapshot),
            e(|c| c.kept_checks)
        );
        // What the kernel and the memory hierarchy charge for the bytes alone grows as the
        // live floor does; what zpulse adds to reading them is the rest.
        println!(
            "    live: floor {:.2}; zpulse's share above it (live + checks − live floor) {:.2}",
            e(|c| c.kept_floor),
            e(|c| (c.kept_checks - c.kept_floor).max(f64::MIN_POSITIVE))
        );
        // Growth as a factor, against the floor's own: what the target is.
        let grown = |f: fn(&Costs) -> f64| f(&b.1) / f(&a.1);
        let relative = grown(|c| c.outputs) / grown(|c| c.floor);
        println!(
            "    {}→{} {label}: the floor grows ×{:.2}, the interval with every output on ×{:.2} \
             (gzip ×{:.2}): {:.2}× the floor's growth",
            a.0,
            b.0,
            grown(|c| c.floor),
            grown(|c| c.outputs),
            grown(|c| c.outputs_gzip),
            relative
        );
        // What one more disk or leaf vdev costs, in µs an interval: the slope between the two
        // sizes, which no fixed part of an interval (the lab's own files) moves, unlike the
        // growth factor above, which a cheaper fixed part raises for the same slope.
        let slope = |f: fn(&Costs) -> f64| (f(&b.1) - f(&a.1)) / (b.0 - a.0) as f64;
        println!(
            "    each {} more, {}→{}: the interval with every output on +{:.2} µs, the floor \
             +{:.2} µs ({:.1}×)",
            label.trim_end_matches('s'),
            a.0,
            b.0,
            slope(|c| c.outputs),
            slope(|c| c.floor),
            slope(|c| c.outputs) / slope(|c| c.floor)
        );
        // The same against the files the live interval reads (the floor above reads every
        // file of the capture, the disks' static sysfs attributes too, which the live reader
        // keeps): not the target's measure, printed beside it because the two differ most
        // where a capture's fixed files outweigh what grows (docs/performance.md).
        println!(
            "    against the files the live reader reads: they grow ×{:.2}, the interval with \
             every output on {:.2}× that",
            grown(|c| c.kept_floor),
            grown(|c| c.outputs) / grown(|c| c.kept_floor)
        );
        // The same on a live host, whose kernel builds and packs the replies the floor above
        // only reads: that work added to the floor and to the interval alike. On the real
        // kernel (the lab's `live-growth`) the replayed floor misses most of what a live
        // host's floor costs on the vdev axis, so the target is judged on this one when
        // libnvpair is there to measure it (docs/performance.md).
        let live = match (a.1.kernel, b.1.kernel) {
            (Some(ka), Some(kb)) => {
                let (floor_a, floor_b) = (a.1.floor + ka, b.1.floor + kb);
                let live = ((b.1.outputs + kb) / (a.1.outputs + ka)) / (floor_b / floor_a);
                println!(
                    "    with the kernel's least work on the replies (libnvpair's build and \
                     pack: {ka:.1} → {kb:.1} µs, +{:.2} µs a {}): the floor grows ×{:.2}, the \
                     interval with every output on ×{:.2}: {live:.2}× the floor's growth",
                    (kb - ka) / (b.0 - a.0) as f64,
                    label.trim_end_matches('s'),
                    floor_b / floor_a,
                    (b.1.outputs + kb) / (a.1.outputs + ka),
                );
                Some(live)
            }
            _ => None,
        };
        verdicts.push(match live {
            Some(live) => Verdict::at_most(
                &format!(
                    "growth {}→{} {label}, every output on, ÷ a live host's floor's growth \
                     (the kernel's least work on the replies counted; {relative:.2} on the \
                     replayed floor)",
                    a.0, b.0
                ),
                live,
                1.2,
            ),
            None => Verdict::at_most(
                &format!(
                    "growth {}→{} {label}, every output on, ÷ the replayed floor's growth \
                     (libnvpair not installed: the kernel's work on the replies left out)",
                    a.0, b.0
                ),
                relative,
                1.2,
            ),
        });
        // Over the whole axis too (the smallest size still carries the lab capture's own
        // cost, which flatters this figure; the one above is the strict one).
        let (first, last) = (rows[0], rows[rows.len() - 1]);
        println!(
            "    over the whole axis, {}→{}: live + checks {:.2}",
            first.0,
            last.0,
            exponent(
                (first.0 as f64, last.0 as f64),
                (first.1.kept_checks, last.1.kept_checks)
            )
        );
    }
    for (label, counted) in &axis_instructions {
        if let [(a, Some(sa), Some(ca)), (b, Some(sb), Some(cb))] = counted[..] {
            let size = (a as f64, b as f64);
            println!(
                "  instructions (callgrind, user space) in {label}: live snapshot {sa} → {sb}, \
                 growth {:.2}; live + checks {ca} → {cb}, growth {:.2}",
                exponent(size, (sa as f64, sb as f64)),
                exponent(size, (ca as f64, cb as f64))
            );
        }
    }

    if !rss {
        print_verdicts(&verdicts, quick);
        let _ = std::fs::remove_dir_all(&work);
        return;
    }
    // Memory of the agent doing the interval with every output on, at the lab host.
    let lab_series = long_series(&lab, &work.join("lab-series"), if quick { 4 } else { 12 });
    let lab_rss = run_rss(&profile, &lab_series, &work, true);
    let _ = std::fs::remove_dir_all(&lab_series);
    let mib = |kb: u64| kb as f64 / 1024.0;
    println!(
        "\nlab host {LAB}, `zpulse run --replay --pace 100ms` with every check, a listener \
         scraped every 10 ms (plain and gzip in turn) and a history: peak RSS {:.1} MiB \
         ({:.1} MiB anonymous, {:.1} MiB file-backed)",
        mib(lab_rss.total),
        mib(lab_rss.anon),
        mib(lab_rss.file)
    );
    verdicts.push(Verdict::at_most(
        "peak RSS at the lab host, every output on, MiB",
        mib(lab_rss.total),
        12.0,
    ));
    // Memory: `zpulse run --replay` with every check.
    let captures = if quick { 4 } else { 12 };
    if !scaling {
        print_verdicts(&verdicts, quick);
        let _ = std::fs::remove_dir_all(&work);
        return;
    }
    println!("\nresident memory of `zpulse run --replay` with every check ({captures} captures)");
    let mut mem = Vec::new();
    for axis in [
        Axis::Vdevs(10),
        Axis::Disks(100),
        Axis::Disks(if quick { 200 } else { 1000 }),
        Axis::Vdevs(if quick { 100 } else { 1000 }),
    ] {
        let pair = synthetic_series(&work, axis);
        let series = long_series(&pair, &work.join("series"), captures);
        let rss = run_rss(&profile, &series, &work, false);
        let _ = std::fs::remove_dir_all(&series);
        let _ = std::fs::remove_dir_all(&pair);
        let (label, n) = match axis {
            Axis::Disks(n) => ("disks", n),
            Axis::Vdevs(n) => ("vdevs", n),
        };
        let mib = |kb: u64| kb as f64 / 1024.0;
        println!(
            "  {n:>5} {label:<6} peak RSS {:>8.1} MiB: {:.1} MiB anonymous (heap, stacks), {:.1} MiB file-backed (code of the binary and the plugins)",
            mib(rss.total),
            mib(rss.anon),
            mib(rss.file)
        );
        mem.push((n, rss.total));
    }
    let slope = |a: (usize, u64), b: (usize, u64)| {
        ((b.1 as f64 - a.1 as f64) * 1024.0 / (b.0 - a.0) as f64).max(0.0)
    };
    println!(
        "  ≈ {:.0} bytes per disk (with its half of a mirror), ≈ {:.0} bytes per leaf vdev (files)",
        slope(mem[1], mem[2]),
        slope(mem[0], mem[3])
    );
    print_verdicts(&verdicts, quick);
    let _ = std::fs::remove_dir_all(&work);
}

/// A target of the bench and what this run measured against it.
struct Verdict {
    target: String,
    value: f64,
    limit: f64,
    at_most: bool,
}

impl Verdict {
    fn at_most(target: &str, value: f64, limit: f64) -> Verdict {
        Verdict {
            target: target.into(),
            value,
            limit,
            at_most: true,
        }
    }
    fn at_least(target: &str, value: f64, limit: f64) -> Verdict {
        Verdict {
            at_most: false,
            ..Verdict::at_most(target, value, limit)
        }
    }
    fn met(&self) -> bool {
        if self.at_most {
            self.value <= self.limit
        } else {
            self.value >= self.limit
        }
    }
}

fn print_verdicts(verdicts: &[Verdict], quick: bool) {
    println!(
        "\ntargets{}, load average {}",
        if quick {
            " (quick smoke run: sizes and iterations too small to judge)"
        } else {
            ""
        },
        load_average()
    );
    for v in verdicts {
        println!(
            "  {:<62} {:>7.2}  {} {:<5} {}",
            v.target,
            v.value,
            if v.at_most { "≤" } else { "≥" },
            v.limit,
            if v.met() { "met" } else { "NOT MET" }
        );
    }
}
