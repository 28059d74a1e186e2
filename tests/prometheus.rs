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

/// An independent reader of the Prometheus text format (version 0.0.4), written from the
/// format's description ("Text format details" in
/// <https://prometheus.io/docs/instrumenting/exposition_formats/>), not from the renderer:
/// every rule the description states for a line, a family and a histogram is checked here,
/// and the series are handed back for their values to be compared with the capture.
mod text_format {
    use std::collections::{BTreeMap, BTreeSet};

    /// A series: its metric name and labels, as written.
    pub type Series = (String, BTreeMap<String, String>);

    /// Every series of `text` with its value, or the first rule it breaks (with its line).
    pub fn read(text: &str) -> Result<BTreeMap<Series, f64>, String> {
        if !text.is_empty() && !text.ends_with('\n') {
            return Err("the last line must end with a line feed".into());
        }
        let mut help: BTreeSet<String> = BTreeSet::new();
        let mut types: BTreeMap<String, String> = BTreeMap::new();
        // Families whose group has ended: a name seen again after another family's lines.
        let mut closed: BTreeSet<String> = BTreeSet::new();
        let mut current: Option<String> = None;
        let mut series: BTreeMap<Series, f64> = BTreeMap::new();
        let mut order: Vec<(Series, f64)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let at = |why: String| format!("line {}: {why}: {line:?}", n + 1);
            let line_t = line.trim_matches([' ', '\t']);
            if line_t.is_empty() {
                continue;
            }
            let family = if let Some(comment) = line_t.strip_prefix('#') {
                let mut tokens = comment
                    .trim_start_matches([' ', '\t'])
                    .splitn(3, [' ', '\t']);
                match tokens.next() {
                    Some("HELP") => {
                        let name = tokens
                            .next()
                            .ok_or_else(|| at("HELP without a name".into()))?;
                        check_metric_name(name).map_err(at)?;
                        check_escapes(tokens.next().unwrap_or("")).map_err(at)?;
                        if !help.insert(name.to_string()) {
                            return Err(at(format!("a second HELP line for {name}")));
                        }
                        name.to_string()
                    }
                    Some("TYPE") => {
                        let name = tokens
                            .next()
                            .ok_or_else(|| at("TYPE without a name".into()))?;
                        check_metric_name(name).map_err(at)?;
                        let kind = tokens.next().unwrap_or("").trim();
                        if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind)
                        {
                            return Err(at(format!("{kind:?} is not a metric type")));
                        }
                        if types.insert(name.to_string(), kind.to_string()).is_some() {
                            return Err(at(format!("a second TYPE line for {name}")));
                        }
                        if order.iter().any(|((m, _), _)| family_of(m, &types) == name) {
                            return Err(at(format!("the TYPE of {name} after its samples")));
                        }
                        name.to_string()
                    }
                    // Any other comment is ignored.
                    _ => continue,
                }
            } else {
                let (name, labels, value) = sample(line_t).map_err(at)?;
                let family = family_of(&name, &types).to_string();
                let key = (name, labels);
                if series.insert(key.clone(), value).is_some() {
                    return Err(at("a second line for the same name and labels".into()));
                }
                order.push((key, value));
                family
            };
            if current.as_deref() != Some(family.as_str()) {
                if closed.contains(&family) {
                    return Err(at(format!("the lines of {family} are not one group")));
                }
                if let Some(previous) = current.replace(family.clone()) {
                    closed.insert(previous);
                }
            }
        }
        for (name, kind) in &types {
            if kind == "histogram" {
                check_histogram(name, &series)?;
            }
        }
        Ok(series)
    }

    /// The family a sample belongs to: a histogram's `_bucket`, `_sum` and `_count` are its
    /// own lines.
    fn family_of<'a>(name: &'a str, types: &BTreeMap<String, String>) -> &'a str {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = name.strip_suffix(suffix)
                && types
                    .get(base)
                    .is_some_and(|t| t == "histogram" || t == "summary")
            {
                return base;
            }
        }
        name
    }

    /// `metric_name [{label="value",…}] value [timestamp]`.
    fn sample(line: &str) -> Result<(String, BTreeMap<String, String>, f64), String> {
        let name_end = line
            .find(['{', ' ', '\t'])
            .ok_or("a sample without a value")?;
        let name = &line[..name_end];
        check_metric_name(name)?;
        let mut rest = &line[name_end..];
        let mut labels = BTreeMap::new();
        if let Some(inner) = rest.strip_prefix('{') {
            let mut pos = 0;
            let close = loop {
                let here = inner[pos..].trim_start_matches([' ', '\t']);
                pos = inner.len() - here.len();
                if here.starts_with('}') {
                    break pos;
                }
                let eq = here.find('=').ok_or("labels without their closing }")?;
                let label = here[..eq].trim_matches([' ', '\t']);
                check_label_name(label)?;
                let quoted = here[eq + 1..].trim_start_matches([' ', '\t']);
                let body = quoted
                    .strip_prefix('"')
                    .ok_or_else(|| format!("the value of label {label} is not quoted"))?;
                let mut value = String::new();
                let mut escaped = false;
                let mut end = None;
                for (i, c) in body.char_indices() {
                    match (escaped, c) {
                        (true, '\\') => value.push('\\'),
                        (true, '"') => value.push('"'),
                        (true, 'n') => value.push('\n'),
                        (true, other) => return Err(format!("\\{other} is not an escape")),
                        (false, '\\') => {
                            escaped = true;
                            continue;
                        }
                        (false, '"') => {
                            end = Some(i);
                            break;
                        }
                        (false, c) => value.push(c),
                    }
                    escaped = false;
                }
                let end = end.ok_or("a label value without its closing quote")?;
                if labels.insert(label.to_string(), value).is_some() {
                    return Err(format!("label {label} twice"));
                }
                let after = body[end + 1..].trim_start_matches([' ', '\t']);
                let after = match after.strip_prefix(',') {
                    Some(more) => more,
                    None if after.starts_with('}') => after,
                    None => return Err("labels not separated by commas".into()),
                };
                pos = inner.len() - after.len();
            };
            rest = &inner[close + 1..];
        }
        let mut tokens = rest.split([' ', '\t']).filter(|t| !t.is_empty());
        let value = parse_value(tokens.next().ok_or("a sample without a value")?)?;
        if let Some(ts) = tokens.next() {
            ts.parse::<i64>()
                .map_err(|_| format!("{ts:?} is not a timestamp in milliseconds"))?;
        }
        if tokens.next().is_some() {
            return Err("text after the timestamp".into());
        }
        Ok((name.to_string(), labels, value))
    }

    /// A float as Go's ParseFloat reads it, or `NaN`, `+Inf`, `-Inf`.
    fn parse_value(text: &str) -> Result<f64, String> {
        match text {
            "NaN" => Ok(f64::NAN),
            "+Inf" => Ok(f64::INFINITY),
            "-Inf" => Ok(f64::NEG_INFINITY),
            _ => text
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{text:?} is not a value")),
        }
    }

    fn check_metric_name(name: &str) -> Result<(), String> {
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
        if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            Ok(())
        } else {
            Err(format!("{name:?} is not a metric name"))
        }
    }

    fn check_label_name(name: &str) -> Result<(), String> {
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("{name:?} is not a label name"));
        }
        if name.starts_with("__") {
            return Err(format!("{name:?}: names starting with __ are reserved"));
        }
        Ok(())
    }

    /// A HELP text escapes only backslash and line feed.
    fn check_escapes(text: &str) -> Result<(), String> {
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('\\' | 'n') => {}
                    other => return Err(format!("\\{other:?} is not an escape of HELP")),
                }
            }
        }
        Ok(())
    }

    /// Each histogram series: buckets with an `le`, cumulative, a `+Inf` bucket equal to its
    /// `_count`, and a `_sum`.
    fn check_histogram(name: &str, series: &BTreeMap<Series, f64>) -> Result<(), String> {
        let bucket = format!("{name}_bucket");
        let mut by_rest: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
        for ((metric, labels), value) in series {
            if *metric != bucket {
                continue;
            }
            let mut rest = labels.clone();
            let le = rest
                .remove("le")
                .ok_or_else(|| format!("{bucket} without le: {labels:?}"))?;
            let le = parse_value(&le).map_err(|e| format!("{bucket} le: {e}"))?;
            by_rest.entry(rest).or_default().push((le, *value));
        }
        for (rest, mut buckets) in by_rest {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            if buckets.windows(2).any(|w| w[1].1 < w[0].1) {
                return Err(format!("{bucket}{rest:?}: the counts are not cumulative"));
            }
            let inf = buckets.last().filter(|b| b.0 == f64::INFINITY);
            let inf = inf
                .ok_or_else(|| format!("{bucket}{rest:?}: no +Inf bucket"))?
                .1;
            let count = series.get(&(format!("{name}_count"), rest.clone()));
            if count != Some(&inf) {
                return Err(format!(
                    "{name}_count{rest:?} is {count:?}, its +Inf bucket {inf}"
                ));
            }
            if !series.contains_key(&(format!("{name}_sum"), rest.clone())) {
                return Err(format!("{name}_sum{rest:?} is missing"));
            }
        }
        Ok(())
    }
}

/// The reader refuses what the format's description forbids, so that its silence about a
/// rendering means something.
#[test]
fn the_text_format_reader_refuses_what_the_format_forbids() {
    let good = "# HELP a_total Things, with a \\\\ and a \\n.\n# TYPE a_total counter\n\
                a_total{x=\"q\\\"uote\",y=\"b\\\\s\"} 3\na_total 4 1700000000000\n\
                # TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.5\n\
                h_count 2\n";
    let series = text_format::read(good).unwrap();
    let key = |name: &str, labels: &[(&str, &str)]| {
        (
            name.to_string(),
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    };
    assert_eq!(
        series[&key("a_total", &[("x", "q\"uote"), ("y", "b\\s")])],
        3.0
    );
    assert_eq!(series[&key("h_count", &[])], 2.0);
    for (bad, why) in [
        ("a 1", "no final line feed"),
        ("# TYPE a gauge\n# TYPE a gauge\na 1\n", "two TYPE lines"),
        ("a 1\n# TYPE a gauge\n", "TYPE after the samples"),
        ("a 1\nb 1\na{x=\"1\"} 2\n", "a family in two groups"),
        ("a 1\na 2\n", "the same series twice"),
        ("1a 1\n", "a bad metric name"),
        ("a{1x=\"v\"} 1\n", "a bad label name"),
        ("a{x=v} 1\n", "an unquoted label value"),
        ("a{x=\"\\t\"} 1\n", "an unknown escape"),
        ("a one\n", "a value that is not a number"),
        (
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
            "buckets not cumulative",
        ),
        (
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
            "no +Inf bucket",
        ),
        (
            "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
            "a count that is not +Inf's",
        ),
    ] {
        assert!(text_format::read(bad).is_err(), "accepted {why}: {bad:?}");
    }
}

/// Every capture's exposition, at every detail, read by the reader above: it keeps the
/// format's rules, and the ARC rows it exports are the capture's own `arcstats` text.
#[test]
fn the_exposition_of_every_lab_capture_keeps_the_text_format() {
    use zpulse_agent::sinks::prometheus::exposition::{Detail, render_at};
    fn captures(dir: &Path, out: &mut Vec<PathBuf>) {
        if dir.join("zpulse-capture.toml").is_file() {
            out.push(dir.to_path_buf());
            return;
        }
        for entry in std::fs::read_dir(dir).into_iter().flatten() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                captures(&path, out);
            }
        }
    }
    let mut dirs = Vec::new();
    captures(&zpulse_tests::fixture(""), &mut dirs);
    let mut checked = 0;
    for dir in dirs {
        {
            let snapshot = zpulse_agent::capture::load(&dir).unwrap();
            for detail in [Detail::Standard, Detail::Leaves, Detail::Full] {
                let exposition = render_at(detail, &snapshot, &[], None);
                let series = text_format::read(exposition.text_str())
                    .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
                let arc = raw::arcstats(&dir);
                let value = |name: &str| series.get(&(name.to_string(), BTreeMap::new()));
                if let Some(size) = arc.get("size") {
                    assert_eq!(value("zpulse_arc_size_bytes"), Some(&(*size as f64)));
                }
                if let Some(hits) = arc.get("hits") {
                    assert_eq!(value("zpulse_arc_hits_total"), Some(&(*hits as f64)));
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 50, "the captures were found ({checked})");
}
