//! The Prometheus sink against Debian's real `prometheus`: two agents replay lab series
//! (`run --replay --pace`), Prometheus scrapes them every second, and PromQL over its HTTP
//! API returns what the test computes from the captures themselves — `zpool list -vp` and
//! `zpool iostat -vlp` (cli/), `/proc/diskstats` and `arcstats` read as text, and the vdev
//! counters and histograms of the `zfs-ioctl/` replies (decoded by the decoder that
//! `zpool_cli.rs` checks against the zpool CLI). Then every query of the shipped Grafana
//! dashboard must return data.
//!
//! Needs `prometheus` (Debian package `prometheus`; `.ci/run` installs it): the test fails,
//! and says so, without it.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{Vdev, VdevClass};
use zpulse_tests::peer::free_port;
use zpulse_tests::raw;
use zpulse_tests::{
    CHECKS_LIBRARY, CHECKS_PACKAGE, build_into_test_target, disable_checks_but, workspace,
};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zpulse-prom-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A plain HTTP/1.0 GET: (status, body).
fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no header end"))?;
    let head = String::from_utf8_lossy(&buf[..end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, buf[end + 4..].to_vec()))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

struct Prometheus {
    child: Child,
    addr: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Labels = BTreeMap<String, String>;

impl Prometheus {
    fn start(dir: &Path, targets: &[u16]) -> Prometheus {
        let port = free_port();
        let config = dir.join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: zpulse\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run `prometheus` ({e}): install Debian's prometheus package (bash .ci/run does)")
            });
        let p = Prometheus {
            child,
            addr: format!("127.0.0.1:{port}"),
        };
        let until = Instant::now() + Duration::from_secs(60);
        while !matches!(http_get(&p.addr, "/-/ready"), Ok((200, _))) {
            assert!(Instant::now() < until, "prometheus did not become ready");
            std::thread::sleep(Duration::from_millis(200));
        }
        // Prometheus applies its targets some seconds after start: wait until it has tried
        // every one, so that the agents' first readings are scraped.
        loop {
            let data = p.api("/api/v1/targets");
            let tried = data["activeTargets"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["health"] != "unknown")
                .count();
            if tried == targets.len() {
                return p;
            }
            assert!(
                Instant::now() < until,
                "prometheus did not scrape its targets: {data}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn api(&self, path: &str) -> Value {
        let (status, body) = http_get(&self.addr, path).unwrap();
        let v: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{path}: {e}: {}", String::from_utf8_lossy(&body)));
        assert_eq!(status, 200, "{path}: {v}");
        assert_eq!(v["status"], "success", "{path}: {v}");
        v["data"].clone()
    }

    /// An instant query at `time`: each series' labels and value.
    fn query(&self, q: &str, time: f64) -> Vec<(Labels, f64)> {
        let data = self.api(&format!(
            "/api/v1/query?query={}&time={time:.3}",
            urlencode(q)
        ));
        assert_eq!(data["resultType"], "vector", "{q}: {data}");
        data["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (labels(&r["metric"]), number(&r["value"][1])))
            .collect()
    }

    /// A range selector at `time`: each series' raw (timestamp, value) samples.
    fn samples(&self, selector: &str, time: f64) -> Vec<(Labels, Vec<(f64, f64)>)> {
        let data = self.api(&format!(
            "/api/v1/query?query={}&time={time:.3}",
            urlencode(selector)
        ));
        assert_eq!(data["resultType"], "matrix", "{selector}: {data}");
        data["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let points = r["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| (p[0].as_f64().unwrap(), number(&p[1])))
                    .collect();
                (labels(&r["metric"]), points)
            })
            .collect()
    }

    /// A range query: the number of series with at least one finite value.
    fn query_range(&self, q: &str, start: f64, end: f64) -> usize {
        let data = self.api(&format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step=1",
            urlencode(q)
        ));
        data["result"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                r["values"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|p| number(&p[1]).is_finite()))
            })
            .count()
    }
}

fn labels(v: &Value) -> Labels {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

fn number(v: &Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

/// One agent replaying a series into its prometheus sink.
struct Agent {
    series: &'static str,
    /// The sink's `detail`: `standard` (the default) or `full`.
    full: bool,
    port: u16,
    dirs: Vec<PathBuf>,
    snaps: Vec<Snapshot>,
}

impl Agent {
    fn instance(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// The scrapes that saw the first capture and the second: (last scrape of capture 0, first
/// scrape of capture 1), Prometheus' own timestamps.
fn scrape_times(prom: &Prometheus, agent: &Agent, now: f64) -> (f64, f64) {
    let series = prom.samples(
        &format!(
            "zpulse_last_sample_timestamp_seconds{{instance=\"{}\"}}[1h]",
            agent.instance()
        ),
        now,
    );
    assert_eq!(series.len(), 1, "{}: {series:?}", agent.series);
    let points = &series[0].1;
    let t0 = raw::captured_at(&agent.dirs[0]);
    let t1 = raw::captured_at(&agent.dirs[1]);
    let last0 = points
        .iter()
        .filter(|p| close(p.1, t0, 1e-12))
        .map(|p| p.0)
        .fold(f64::NAN, f64::max);
    let first1 = points
        .iter()
        .filter(|p| close(p.1, t1, 1e-12))
        .map(|p| p.0)
        .fold(f64::NAN, f64::min);
    assert!(
        last0.is_finite() && first1.is_finite() && first1 > last0,
        "{}: Prometheus did not scrape both captures (scrapes {points:?})",
        agent.series
    );
    (last0, first1)
}

/// `zpool list -vp`: name → (size, alloc) of the pool and its top-level vdevs.
fn zpool_list(dir: &Path, pool: &str) -> BTreeMap<String, (u64, u64)> {
    let text = std::fs::read_to_string(dir.join(format!("cli/zpool-list-vp.{pool}.txt"))).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f[0].to_string(), (f[1].parse().ok()?, f[2].parse().ok()?)))
        })
        .collect()
}

/// `zpool iostat -vlp` total_wait columns: vdev name → (read, write) in ns, `None` for `-`.
fn iostat_total_wait(dir: &Path, pool: &str) -> BTreeMap<String, (Option<u64>, Option<u64>)> {
    let text =
        std::fs::read_to_string(dir.join(format!("cli/zpool-iostat-vlp.{pool}.txt"))).unwrap();
    text.lines()
        .skip(3)
        .filter(|l| !l.starts_with('-'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // name alloc free rops wops rbw wbw total_r total_w …; section rows are all `-`.
            let alloc_known = f.get(3)?.parse::<u64>().is_ok();
            alloc_known.then(|| (f[0].to_string(), (f[7].parse().ok(), f[8].parse().ok())))
        })
        .collect()
}

/// Every vdev below the root of each pool with the labels zpulse gives it.
fn vdevs(s: &Snapshot) -> Vec<(Labels, &Vdev)> {
    let mut out = Vec::new();
    for p in &s.pools {
        let Some(cfg) = &p.config else { continue };
        for top in &cfg.root.children {
            let class = top.class.map_or("normal", VdevClass::as_str);
            for v in top.walk() {
                let mut l = Labels::new();
                l.insert("pool".into(), p.name.clone());
                l.insert("class".into(), class.into());
                l.insert("vdev".into(), top.name.clone());
                if !std::ptr::eq(v, top) {
                    l.insert("leaf".into(), v.name.clone());
                }
                out.push((l, v));
            }
        }
    }
    out
}

/// The series of `result` whose labels include all of `want`.
fn find<'a>(result: &'a [(Labels, f64)], want: &Labels) -> Option<&'a f64> {
    result
        .iter()
        .find(|(l, _)| {
            want.iter().all(|(k, v)| l.get(k) == Some(v))
                && ["leaf"]
                    .iter()
                    .all(|k| want.contains_key(*k) || !l.contains_key(*k))
        })
        .map(|(_, v)| v)
}

/// Kernel buckets as `detail = "full"` exposes them: bucket i holds [2^i, 2^(i+1)) ns, the
/// last one everything longer (+Inf). Upper bounds in seconds, and counts.
fn kernel_buckets(counts: &[u64]) -> (Vec<f64>, Vec<u64>) {
    let bounds = (0..counts.len())
        .map(|i| {
            if i + 1 == counts.len() {
                f64::INFINITY
            } else {
                2f64.powi(i as i32 + 1) / 1e9
            }
        })
        .collect();
    (bounds, counts.to_vec())
}

/// Kernel buckets summed into the standard ones (docs/metrics.md): bounds 2^13, 2^15, …,
/// 2^33 ns and +Inf; kernel bucket i lies below 2^k when i + 1 <= k, its last bucket only
/// below +Inf.
fn standard_buckets(counts: &[u64]) -> (Vec<f64>, Vec<u64>) {
    let last = counts.len() - 1;
    let below = |k: usize| -> u64 { counts[..k.min(last)].iter().sum() };
    let mut bounds = Vec::new();
    let mut out = Vec::new();
    let mut prev = 0;
    for k in (13..=33).step_by(2) {
        out.push(below(k) - prev);
        prev = below(k);
        bounds.push(2f64.powi(k as i32) / 1e9);
    }
    out.push(counts.iter().sum::<u64>() - prev);
    bounds.push(f64::INFINITY);
    (bounds, out)
}

/// Prometheus' `histogram_quantile` (promql/quantile.go, bucketQuantile) over buckets with
/// these upper bounds (+Inf last) and counts.
fn quantile(q: f64, (bounds, counts): (Vec<f64>, Vec<u64>)) -> Option<f64> {
    let mut cumulative = Vec::new();
    let mut c = 0u64;
    for n in &counts {
        c += n;
        cumulative.push(c as f64);
    }
    let total = *cumulative.last()?;
    if total == 0.0 {
        return None;
    }
    let rank = q * total;
    let b = cumulative.iter().position(|&c| c >= rank)?;
    if b == counts.len() - 1 {
        return Some(bounds[counts.len() - 2]);
    }
    let (start, below) = if b == 0 {
        (0.0, 0.0)
    } else {
        (bounds[b - 1], cumulative[b - 1])
    };
    let in_bucket = cumulative[b] - below;
    Some(start + (bounds[b] - start) * ((rank - below) / in_bucket))
}

#[test]
fn prometheus_scrapes_replaying_agents_and_promql_matches_the_captures() {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let dir = temp("e2e");
    // One agent at the default detail, one at full (every vdev in the kernel's buckets).
    let mut agents: Vec<Agent> = [("basic", false), ("vdevs/deg", true)]
        .into_iter()
        .map(|(series, full)| {
            let dirs = raw::dirs(&[series]);
            Agent {
                series,
                full,
                port: free_port(),
                snaps: raw::load(&dirs),
                dirs,
            }
        })
        .collect();
    let prom = Prometheus::start(&dir, &agents.iter().map(|a| a.port).collect::<Vec<_>>());
    let plugin = profile.join(CHECKS_LIBRARY);
    let only_special_fill = disable_checks_but(&["special-fill"]);
    let children: Vec<Child> = agents
        .iter_mut()
        .map(|a| {
            let config = dir.join(format!("{}.toml", a.port));
            std::fs::write(
                &config,
                format!(
                    "[plugins]\ndirs = []\npaths = [{:?}]\n{only_special_fill}\n\n[[sink]]\ntype = \"prometheus\"\nlisten = \"127.0.0.1:{}\"\n{}",
                    plugin.display().to_string(),
                    a.port,
                    if a.full { "detail = \"full\"\n" } else { "" },
                ),
            )
            .unwrap();
            // Four scrapes of each reading at Prometheus' 1 s interval.
            Command::new(profile.join("zpulse"))
                .args(["run", "--pace", "4", "--config"])
                .arg(&config)
                .arg("--replay")
                .arg(a.dirs[0].parent().unwrap())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.join(format!("{}.log", a.port))).unwrap())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(
            c.wait().unwrap().success(),
            "agent failed: see {}",
            dir.display()
        );
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();

    let mut window = (f64::MAX, 0.0f64);
    // Rates that are not 0 (the degraded pool was idle between its captures).
    let mut rated = 0;
    for a in &agents {
        let inst = a.instance();
        let (ta, tb) = scrape_times(&prom, a, now);
        window = (window.0.min(ta), window.1.max(tb));
        // Prometheus keeps integer milliseconds; the API's float seconds lose a little.
        let ms = (tb * 1000.0).round() as u64 - (ta * 1000.0).round() as u64;
        let seconds = ms as f64 / 1000.0;
        // Both scrapes fall inside the range (closed at the end; 1 ms of slack at the start,
        // which rate() extrapolates over and divides by again, leaving Δ/seconds).
        let range = format!("{}ms", ms + 1);
        let pool = a.snaps[1].pools[0].name.clone();

        // Pool size and allocation: zpool list -vp of each capture.
        for (capture, at) in [(0, ta), (1, tb)] {
            let list = zpool_list(&a.dirs[capture], &pool);
            for (family, pick) in [
                ("zpulse_pool_size_bytes", 0usize),
                ("zpulse_pool_allocated_bytes", 1),
            ] {
                let got = prom.query(&format!("{family}{{instance=\"{inst}\"}}"), at);
                assert_eq!(got.len(), 1, "{family}: {got:?}");
                let want = [list[&pool].0, list[&pool].1][pick] as f64;
                assert_eq!(got[0].1, want, "{} {capture} {family}", a.series);
            }
            let tops = prom.query(
                &format!("zpulse_vdev_allocated_bytes{{instance=\"{inst}\"}}"),
                at,
            );
            for (labels, v) in vdevs(&a.snaps[capture]) {
                if labels.contains_key("leaf") || v.class == Some(VdevClass::Spare) {
                    continue;
                }
                let want = list[&v.name].1 as f64;
                assert_eq!(find(&tops, &labels), Some(&want), "{labels:?}");
            }
        }

        // Average latency from the histogram's sum and count: zpool iostat -l's total_wait,
        // which does not depend on time, so exactly (to the nanosecond zpool rounds to).
        let waits = iostat_total_wait(&a.dirs[1], &pool);
        let mut compared = 0;
        for (op, col) in [("read", 0usize), ("write", 1)] {
            let got = prom.query(
                &format!(
                    "zpulse_vdev_total_wait_seconds_sum{{instance=\"{inst}\",op=\"{op}\"}} / zpulse_vdev_total_wait_seconds_count"
                ),
                tb,
            );
            for (mut labels, v) in vdevs(&a.snaps[1]) {
                let Some(row) = waits.get(&v.name) else {
                    continue;
                };
                let want = [row.0, row.1][col];
                // Below full detail only top-level vdevs have latency histograms.
                let want = want.filter(|_| a.full || !labels.contains_key("leaf"));
                labels.insert("op".into(), op.into());
                match (want, find(&got, &labels)) {
                    (Some(ns), Some(s)) => {
                        let ours = s * 1e9;
                        assert!(
                            ours - ns as f64 > -1e-3 && ours - (ns as f64) < 1.0,
                            "{} {labels:?}: PromQL {ours} ns, zpool iostat {ns} ns",
                            a.series
                        );
                        compared += 1;
                    }
                    // `-`: no I/O of that kind, so count 0 and the division is NaN or absent.
                    (None, got) => assert!(got.is_none_or(|v| v.is_nan()), "{labels:?}"),
                    (Some(ns), None) => panic!("{labels:?}: zpool has {ns} ns, PromQL nothing"),
                }
            }
        }
        assert!(compared >= 4, "{}: only {compared} latencies", a.series);

        // rate() of vdev operations and histogram_quantile() of their latency, against the
        // counters and histograms of the two captures' zfs-ioctl replies.
        let rates = prom.query(
            &format!("rate(zpulse_vdev_operations_total{{instance=\"{inst}\"}}[{range}])"),
            tb,
        );
        let before: Vec<_> = vdevs(&a.snaps[0]);
        for (labels, v) in vdevs(&a.snaps[1]) {
            let Some(prev) = before.iter().find(|(l, _)| *l == labels).map(|p| p.1) else {
                continue;
            };
            let (Some(now_st), Some(prev_st)) = (&v.stats, &prev.stats) else {
                continue;
            };
            for (op, i) in [("read", 1), ("write", 2)] {
                let mut l = labels.clone();
                l.insert("op".into(), op.into());
                let want = (now_st.ops[i] - prev_st.ops[i]) as f64 / seconds;
                let got = *find(&rates, &l).unwrap_or_else(|| panic!("no rate for {l:?}"));
                assert!(
                    close(got, want, 1e-9),
                    "{} {l:?}: rate() {got}, captures {want}",
                    a.series
                );
                rated += usize::from(want > 0.0);
            }
            let (Some(h1), Some(h0)) = (&v.histograms, &prev.histograms) else {
                continue;
            };
            let delta: Vec<u64> = h1
                .total_w
                .iter()
                .zip(&h0.total_w)
                .map(|(a, b)| a - b)
                .collect();
            for q in [0.5, 0.9, 0.99] {
                let got = prom.query(
                    &format!(
                        "histogram_quantile({q}, rate(zpulse_vdev_total_wait_seconds_bucket{{instance=\"{inst}\",op=\"write\"}}[{range}]))"
                    ),
                    tb,
                );
                let mut l = labels.clone();
                l.insert("op".into(), "write".into());
                let buckets = if a.full {
                    kernel_buckets(&delta)
                } else if labels.contains_key("leaf") {
                    // No histogram: no quantile.
                    (vec![f64::INFINITY], vec![0])
                } else {
                    standard_buckets(&delta)
                };
                match quantile(q, buckets) {
                    Some(want) => {
                        let got = *find(&got, &l).unwrap_or_else(|| panic!("no quantile {l:?}"));
                        assert!(
                            close(got, want, 1e-9),
                            "{} {l:?} q{q}: histogram_quantile {got}, captures {want}",
                            a.series
                        );
                    }
                    None => assert!(find(&got, &l).is_none_or(|v| v.is_nan()), "{l:?}"),
                }
            }
        }

        // Disks: rate() of /proc/diskstats counters read as text.
        for disk in ["sda", "sdb", "sdc"] {
            let d0 = raw::diskstats(&a.dirs[0], disk);
            let d1 = raw::diskstats(&a.dirs[1], disk);
            // 0 major, 1 minor, then the counters (Documentation/admin-guide/iostats.rst):
            // 2 reads, 6 writes, 8 sectors written, 11 ms doing I/O.
            for (family, field, scale) in [
                ("zpulse_disk_reads_completed_total", 2, 1.0),
                ("zpulse_disk_writes_completed_total", 6, 1.0),
                ("zpulse_disk_written_bytes_total", 8, 512.0),
                ("zpulse_disk_io_time_seconds_total", 11, 1e-3),
            ] {
                let got = prom.query(
                    &format!("rate({family}{{instance=\"{inst}\",disk=\"{disk}\"}}[{range}])"),
                    tb,
                );
                let want = (d1[field] - d0[field]) as f64 * scale / seconds;
                assert_eq!(got.len(), 1, "{family} {disk}");
                assert!(
                    close(got[0].1, want, 1e-9),
                    "{} {disk} {family}: rate() {}, diskstats {want}",
                    a.series,
                    got[0].1
                );
            }
        }

        // ARC: size as a gauge, hits as a counter, both from arcstats text.
        let arc0 = raw::arcstats(&a.dirs[0]);
        let arc1 = raw::arcstats(&a.dirs[1]);
        let size = prom.query(&format!("zpulse_arc_size_bytes{{instance=\"{inst}\"}}"), tb);
        assert_eq!(size[0].1, arc1["size"] as f64);
        let hits = prom.query(
            &format!("rate(zpulse_arc_hits_total{{instance=\"{inst}\"}}[{range}])"),
            tb,
        );
        let want = (arc1["hits"] - arc0["hits"]) as f64 / seconds;
        assert!(close(hits[0].1, want, 1e-9), "{} {hits:?} {want}", a.series);
    }

    assert!(rated >= 4, "only {rated} non-zero vdev rates compared");

    // The degraded pool's special vdev is less redundant than the pool: special-fill raises
    // a critical finding, which Prometheus sees as a series.
    let deg = &agents[1];
    let findings = prom.query(
        &format!("zpulse_finding{{instance=\"{}\"}}", deg.instance()),
        window.1,
    );
    assert!(
        findings
            .iter()
            .any(|(l, v)| l["check"] == "special-fill.redundancy"
                && l["subject"] == "deg/special"
                && l["severity"] == "critical"
                && *v == 1.0),
        "{findings:?}"
    );
    // The agent reports on itself.
    let health = prom.query("zpulse_agent_resident_memory_bytes", window.1);
    assert_eq!(health.len(), 2, "{health:?}");

    // Every query of the shipped dashboard returns data over the replay.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("packaging/grafana/zpulse.json")).unwrap(),
    )
    .unwrap();
    let mut exprs = Vec::new();
    collect_exprs(&dashboard["panels"], &mut exprs);
    assert!(exprs.len() >= 15, "{} queries", exprs.len());
    for (title, expr) in exprs {
        let q = expr
            .replace("$__rate_interval", "1m")
            .replace("$__interval", "1s")
            .replace("${instance:regex}", ".*")
            .replace("${pool:regex}", ".*")
            .replace("$instance", ".*")
            .replace("$pool", ".*");
        assert!(!q.contains('$'), "{title}: unknown variable in {expr}");
        let n = prom.query_range(&q, window.0, window.1 + 30.0);
        assert!(n > 0, "panel '{title}': {q} returns no data");
    }
}

/// (panel title, expr) of every target of every panel, rows included.
fn collect_exprs(panels: &Value, out: &mut Vec<(String, String)>) {
    for p in panels.as_array().into_iter().flatten() {
        let title = p["title"].as_str().unwrap_or("").to_string();
        for t in p["targets"].as_array().into_iter().flatten() {
            if let Some(e) = t["expr"].as_str() {
                out.push((title.clone(), e.to_string()));
            }
        }
        collect_exprs(&p["panels"], out);
    }
}
