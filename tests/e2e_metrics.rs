//! Metrics over Forward into the real collector: replayed agents (`zpulse run --replay` of lab
//! series recorded on a real OpenZFS kernel, forward sink with `metrics = true`) send their
//! readings to one `zpulse-collector`, which keeps the charted figures as time series. Every
//! stored point must equal what this test computes from the captures' raw kernel files
//! (`proc/spl/kstat/zfs/arcstats`, `proc/diskstats`, the manifests' `captured_at`), with the
//! minute rule documented in `docs/metrics.md`: a gauge's point is the last value of the
//! minute; a rate's point runs from the last capture of an earlier minute (the anchor) to the
//! last capture of this one.

use std::collections::BTreeMap;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use zpulse_tests::peer::{Collector, http_get};
use zpulse_tests::{build_bin, build_into_test_target, fixture};

/// Agents replayed into the collector, ten at a time (the machine has two cores).
const AGENTS: usize = 50;
const WAVE: usize = 10;
const SERIES: [&str; 4] = [
    "lab/storm/series",
    "lab/checks/fill",
    "lab/checks/storm",
    "lab/checks/quiet",
];

/// One capture's raw figures.
struct Raw {
    at: f64,
    /// arcstats rows by name.
    arc: BTreeMap<String, f64>,
    /// diskstats per device: reads, read ms, writes, write ms, io ms (fields 1, 4, 5, 8, 10).
    disks: BTreeMap<String, [f64; 5]>,
}

fn raw(dir: &Path) -> Raw {
    let manifest = std::fs::read_to_string(dir.join("zpulse-capture.toml")).unwrap();
    let at = manifest
        .lines()
        .find_map(|l| l.strip_prefix("captured_at = "))
        .unwrap()
        .parse()
        .unwrap();
    let arcstats = std::fs::read_to_string(dir.join("proc/spl/kstat/zfs/arcstats")).unwrap();
    let arc = arcstats
        .lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.first()?.to_string(), f.get(2)?.parse().ok()?))
        })
        .collect();
    // The collector charts the disks that serve a pool (docs/alerting.md, the host page):
    // which those are, the capture's own pool configs say (decoded by the agent's reader,
    // which tests/zpool_cli.rs holds to `zpool status`).
    let pool_disks: Vec<String> = zpulse_agent::capture::load(dir)
        .unwrap()
        .disks
        .into_iter()
        .filter(|d| !d.roles.is_empty())
        .map(|d| d.name)
        .collect();
    let diskstats = std::fs::read_to_string(dir.join("proc/diskstats")).unwrap();
    let names: Vec<&str> = diskstats
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    let disks = diskstats
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f[i + 2].parse::<f64>().unwrap();
            (f[2].to_string(), [n(1), n(4), n(5), n(8), n(10)])
        })
        .filter(|(name, _)| is_storage(name, &names) && pool_disks.contains(name))
        .collect();
    Raw { at, arc, disks }
}

/// Whether the records carry a device of `/proc/diskstats` (docs/metrics.md, "Detail": a
/// partition or a virtual device — loop, RAM disk, zvol, floppy, optical, network block — is
/// left out unless it serves a pool; the lab's pools are on whole disks). A partition is
/// named after a device beside it: that name and digits (`sda1`), or `p` and digits
/// (`nvme0n1p1`).
fn is_storage(name: &str, all: &[&str]) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let partition = all.iter().any(|d| {
        name.strip_prefix(d)
            .is_some_and(|rest| digits(rest) || rest.strip_prefix('p').is_some_and(digits))
    });
    let virtual_device = ["loop", "ram", "zram", "zd", "fd", "sr", "nbd"]
        .iter()
        .any(|p| name.starts_with(p));
    !partition && !virtual_device
}

/// figure → minute start (s) → value, from the raw files alone.
fn expected(series: &Path) -> BTreeMap<String, BTreeMap<i64, f64>> {
    let mut dirs: Vec<_> = std::fs::read_dir(series)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("zpulse-capture.toml").is_file())
        .collect();
    dirs.sort();
    let captures: Vec<Raw> = dirs.iter().map(|d| raw(d)).collect();
    let minute = |t: f64| (t / 60.0).floor() as i64;
    let mut out: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    let mut put = |figure: String, at: f64, v: f64| {
        out.entry(figure).or_default().insert(minute(at) * 60, v);
    };
    let mut anchor: Option<usize> = None;
    for (i, c) in captures.iter().enumerate() {
        put("arc_size".into(), c.at, c.arc["size"]);
        put("arc_size:c_max".into(), c.at, c.arc["c_max"]);
        if i > 0 && minute(captures[i - 1].at) < minute(c.at) {
            anchor = Some(i - 1);
        }
        let Some(a) = anchor.map(|a| &captures[a]) else {
            continue;
        };
        let dt = c.at - a.at;
        let (hits, misses) = (
            c.arc["hits"] - a.arc["hits"],
            c.arc["misses"] - a.arc["misses"],
        );
        if hits >= 0.0 && misses >= 0.0 && hits + misses > 0.0 {
            put("arc_hit_ratio".into(), c.at, hits / (hits + misses));
        }
        for (disk, now) in &c.disks {
            let Some(then) = a.disks.get(disk) else {
                continue;
            };
            let d: Vec<f64> = (0..5).map(|k| now[k] - then[k]).collect();
            if d[4] >= 0.0 {
                put(format!("disk_util:{disk}"), c.at, d[4] / 1000.0 / dt);
            }
            let ops = d[0] + d[2];
            if ops > 0.0 && d.iter().all(|x| *x >= 0.0) {
                put(
                    format!("disk_await:{disk}"),
                    c.at,
                    (d[1] + d[3]) / 1000.0 / ops,
                );
            }
        }
    }
    out
}

#[test]
fn replayed_agents_send_metric_records_that_the_collector_stores_as_the_raw_files_say() {
    let profile = build_into_test_target(&[]);
    let collector_bin = build_bin("zpulse-collector", "zpulse-collector");
    let tmp = tempfile::Builder::new()
        .prefix("zpulse-metrics-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().to_path_buf();
    let db = dir.join("events.db");
    let (_collector, port, http) = Collector::serve(&collector_bin, &db);

    let hosts: Vec<(String, &str)> = (0..AGENTS)
        .map(|i| (format!("m-{i:02}"), SERIES[i % SERIES.len()]))
        .collect();
    for wave in hosts.chunks(WAVE) {
        let agents: Vec<Child> = wave
            .iter()
            .map(|(host, series)| {
                let config = dir.join(format!("{host}.toml"));
                std::fs::write(
                    &config,
                    format!(
                        "hostname = {host:?}\n[plugins]\ndirs = []\npaths = []\n[[sink]]\n\
                         type = \"forward\"\naddress = \"127.0.0.1:{port}\"\nmetrics = true\n\
                         gzip = true\nspool_dir = {:?}\n",
                        dir.join(format!("spool-{host}")).display().to_string()
                    ),
                )
                .unwrap();
                Command::new(profile.join("zpulse"))
                    .args(["run", "--config"])
                    .arg(&config)
                    .arg("--replay")
                    .arg(fixture(series))
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for a in agents {
            let out = a.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    let store = zpulse_collector::store::Store::open_read_only(&db).unwrap();
    let mut compared = 0usize;
    for (host, series) in &hosts {
        let want = expected(&fixture(series));
        let got = store.series_points(host, 0, 4_102_444_800).unwrap();
        // Every figure the raw files give is stored, at the same minutes, with the same value.
        for (figure, points) in &want {
            let stored: BTreeMap<i64, f64> = got
                .get(figure)
                .unwrap_or_else(|| panic!("{host}: {figure} not stored; got {:?}", got.keys()))
                .iter()
                .copied()
                .collect();
            assert_eq!(
                stored.keys().collect::<Vec<_>>(),
                points.keys().collect::<Vec<_>>(),
                "{host} {figure}: minutes"
            );
            for (t, v) in points {
                let s = stored[t];
                // Stored as f32: 7 significant digits.
                assert!(
                    (s - v).abs() <= 1e-6 * v.abs().max(1e-3),
                    "{host} {figure} at {t}: stored {s}, raw files say {v}"
                );
                compared += 1;
            }
        }
        // The figures from the ioctl's nvlists (no text file to compare with) are there and
        // sane: every pool's fill is a fraction, every class's latency positive.
        let fills: Vec<f64> = got
            .iter()
            .filter(|(k, _)| k.starts_with("pool_fill:"))
            .flat_map(|(_, p)| p.iter().map(|x| x.1))
            .collect();
        assert!(
            !fills.is_empty(),
            "{host}: no pool_fill in {:?}",
            got.keys()
        );
        assert!(fills.iter().all(|f| (0.0..=1.0).contains(f)), "{fills:?}");
        // Rates need captures in two minutes (`checks/quiet` spans one: no rate at all).
        let has_rates = want.contains_key("arc_hit_ratio");
        assert_eq!(
            got.keys().any(|k| k.starts_with("vdev_latency:")),
            has_rates,
            "{host}: vdev_latency in {:?}",
            got.keys()
        );
        if !has_rates {
            assert!(
                !got.keys().any(|k| k.starts_with("disk_")),
                "{host}: {:?}",
                got.keys()
            );
        }
    }
    eprintln!("{compared} stored points compared with the raw files, {AGENTS} agents");
    // Every agent had figures to compare (the pool disks, ARC and pool of each series).
    assert!(compared > AGENTS * 10, "{compared} points compared");

    // The host page charts them: inline SVG, one per figure group, no external resource.
    let page = http_get(http, &format!("/host/{}", hosts[0].0));
    for figure in [
        "pool_fill",
        "arc_size",
        "arc_hit_ratio",
        "disk_util",
        "disk_await",
    ] {
        assert!(
            page.contains(&format!("data-figure=\"{figure}\"")),
            "{figure} chart on the host page"
        );
    }
    assert!(!page.contains("http://") || !page.contains("src=\"http"));
}
