//! `zpulse report` on the lab's storm series (the first seed's situation: an HDD mirror under
//! a metadata storm, an L2ARC, an unmirrored SLOG), with every shipped check loaded.
//!
//! The window's figures in `--format json` are compared with what this test computes from
//! the captures' raw files (`/proc/diskstats`, `arcstats`), without the agent's parsers; the
//! conclusions must be the seed's (seek-bound HDDs, metadata-heavy ARC, a useless L2ARC, a
//! SLOG that is useful and not saturated); the page must render in headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;
use zpulse_tests::raw::{self, close};
use zpulse_tests::synthetic::copy_tree;
use zpulse_tests::{CHECKS_LIBRARY, CHECKS_PACKAGE, build_into_test_target};

fn zpulse_with_checks() -> (PathBuf, Vec<String>) {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let plugins = vec![
        "--plugin".to_string(),
        profile.join(CHECKS_LIBRARY).display().to_string(),
    ];
    (profile.join("zpulse"), plugins)
}

fn report(args: &[&str]) -> serde_json::Value {
    let (zpulse, plugins) = zpulse_with_checks();
    let out = Command::new(zpulse)
        .arg("report")
        .args(args)
        .args(["--format", "json"])
        .args(&plugins)
        .output()
        .expect("running zpulse report");
    succeeded(&out);
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// Fails the test with the process's stderr unless it exited successfully.
fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{} failed: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `zpulse report ARGS`, which must fail: its stderr.
fn refused(args: &[&str]) -> String {
    let (zpulse, _) = zpulse_with_checks();
    let out = Command::new(zpulse)
        .arg("report")
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "zpulse report {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn storm() -> Vec<PathBuf> {
    raw::dirs(&["storm/series"])
}

/// `/proc/diskstats` fields (after the name): 2 reads, 4 sectors read, 5 ms reading,
/// 6 writes, 8 sectors written, 11 ms with I/O in flight (io_ticks).
fn disk_delta(a: &Path, b: &Path, name: &str, field: usize) -> f64 {
    (raw::diskstats(b, name)[field] - raw::diskstats(a, name)[field]) as f64
}

fn seconds(a: &Path, b: &Path) -> f64 {
    raw::captured_at(b) - raw::captured_at(a)
}

/// `%util` of disk `name` from capture `a` to `b`: Δio_ticks (ms with I/O in flight) over the
/// time between them, as iostat computes it.
fn util_pct(a: &Path, b: &Path, name: &str) -> f64 {
    disk_delta(a, b, name, 11) / (seconds(a, b) * 1000.0) * 100.0
}

/// Growth of arcstats row `k` from capture `a` to `b` (0 for a row the kernel lacks, such as
/// `iohits` before OpenZFS 2.2).
fn arc_delta(a: &Path, b: &Path) -> impl Fn(&str) -> f64 {
    let (a, b) = (raw::arcstats(a), raw::arcstats(b));
    move |k| (b.get(k).unwrap_or(&0) - a.get(k).unwrap_or(&0)) as f64
}

/// The element of the JSON array `list` whose `key` is `value`, if any.
fn find<'a>(list: &'a serde_json::Value, key: &str, value: &str) -> Option<&'a serde_json::Value> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .find(|x| x[key] == value)
}

fn section<'a>(r: &'a serde_json::Value, check: &str, subject: &str) -> &'a serde_json::Value {
    r["conclusions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["check"] == check && s["subject"] == subject)
        .unwrap_or_else(|| panic!("no {check} section on {subject}: {:#}", r["conclusions"]))
}

fn figure(s: &serde_json::Value, key: &str) -> f64 {
    s["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == key)
        .and_then(|f| f["value"].as_f64())
        .unwrap_or_else(|| panic!("no figure {key} in {s:#}"))
}

#[test]
fn the_storm_window_has_the_figures_of_its_captures() {
    let r = report(&[raw::lab("storm/series").to_str().unwrap()]);
    let dirs = storm();
    let (first, last) = (&dirs[0], &dirs[dirs.len() - 1]);
    let t = seconds(first, last);
    assert_eq!(r["intervals"], dirs.len() - 1);
    assert!(close(
        r["to"].as_f64().unwrap() - r["from"].as_f64().unwrap(),
        t,
        1e-9
    ));

    for name in ["sda", "sdb"] {
        let d = find(&r["disks"], "name", name).unwrap();
        assert_eq!(
            d["kind"], "hdd",
            "sda and sdb are the lab's throttled rotational disks"
        );
        let util = util_pct(first, last, name);
        let reads = disk_delta(first, last, name, 2);
        let mb = disk_delta(first, last, name, 4) * 512.0 / 1e6 / t;
        let await_ms = disk_delta(first, last, name, 5) / reads;
        assert!(
            close(d["util_mean"].as_f64().unwrap(), util, 1e-6),
            "{name} %util {d}"
        );
        assert!(
            close(d["r_s"].as_f64().unwrap(), reads / t, 1e-6),
            "{name} r/s"
        );
        assert!(
            close(d["read_mb_s"].as_f64().unwrap(), mb, 1e-6),
            "{name} rMB/s"
        );
        assert!(
            close(d["r_await_ms"].as_f64().unwrap(), await_ms, 1e-6),
            "{name} r_await"
        );
        // The distribution: every interval's %util, the share at or above 95%.
        let per: Vec<f64> = dirs
            .windows(2)
            .map(|w| util_pct(&w[0], &w[1], name).min(100.0))
            .collect();
        let hist: Vec<u64> = d["util_histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(hist.iter().sum::<u64>(), per.len() as u64);
        for (bucket, count) in hist.iter().enumerate() {
            let want = per
                .iter()
                .filter(|u| ((**u / 10.0).floor() as usize).min(9) == bucket)
                .count() as u64;
            assert_eq!(*count, want, "{name} bucket {bucket}");
        }
        let saturated = per.iter().filter(|u| **u >= 95.0).count() as f64 / per.len() as f64;
        assert!(close(
            d["saturated_pct"].as_f64().unwrap(),
            saturated * 100.0,
            1e-9
        ));
    }

    // The ARC: metadata share averaged over the intervals' ends, the L2ARC's share of reads.
    let meta: Vec<f64> = dirs[1..]
        .iter()
        .map(|d| {
            let a = raw::arcstats(d);
            a["arc_meta_used"] as f64 / a["size"] as f64
        })
        .collect();
    let meta = meta.iter().sum::<f64>() / meta.len() as f64 * 100.0;
    assert!(close(
        r["arc"]["metadata_pct"].as_f64().unwrap(),
        meta,
        1e-9
    ));
    assert!(
        meta > 85.0,
        "the storm's ARC is metadata, as in the seed: {meta}"
    );
    let delta = arc_delta(first, last);
    let reads = delta("hits") + delta("iohits") + delta("misses");
    let l2_share = delta("l2_hits") / reads * 100.0;
    assert!(close(
        r["arc"]["l2_share_of_reads_pct"].as_f64().unwrap(),
        l2_share,
        1e-9
    ));
    assert!(close(
        r["arc"]["hit_pct"].as_f64().unwrap(),
        delta("hits") / reads * 100.0,
        1e-9
    ));
}

#[test]
fn the_storm_report_reaches_the_seeds_conclusions() {
    let r = report(&[raw::lab("storm/series").to_str().unwrap()]);
    let dirs = storm();
    let (first, last) = (&dirs[0], &dirs[dirs.len() - 1]);
    let t = seconds(first, last);

    // hdd-saturation: the mirror's disks spend their busy time seeking, in small reads, for
    // metadata the ARC does not hold, and the pool has no special vdev.
    let mirror = section(&r, "hdd-saturation", "storm/normal/mirror-0");
    assert!(
        mirror["title"].as_str().unwrap().contains("seek-bound"),
        "{mirror:#}"
    );
    let util = ["sda", "sdb"]
        .iter()
        .map(|n| util_pct(first, last, n))
        .sum::<f64>()
        / 2.0;
    assert!(close(figure(mirror, "util_mean_pct"), util, 0.01));
    let bytes: f64 = ["sda", "sdb"]
        .iter()
        .map(|n| (disk_delta(first, last, n, 4) + disk_delta(first, last, n, 8)) * 512.0)
        .sum();
    assert!(close(figure(mirror, "mb_per_s"), bytes / t / 1e6, 0.01));
    let advice = mirror["advice"].as_str().unwrap();
    assert!(
        advice.contains("special") && advice.contains("mirror"),
        "{advice}"
    );

    // l2arc-value: the ARC misses too little for any L2ARC to matter (the seed's +1.3%).
    let l2 = section(&r, "l2arc-value", "storm/cache/sdf");
    assert_eq!(l2["rating"], "warning");
    assert!(l2["title"].as_str().unwrap().contains("negative"));
    let delta = arc_delta(first, last);
    let reads = delta("hits") + delta("iohits") + delta("misses");
    assert!(close(
        figure(l2, "l2_share_of_reads_pct"),
        delta("l2_hits") / reads * 100.0,
        0.01
    ));

    // slog-usage: the SLOG carries the fsync loop and is not saturated.
    let slog = section(&r, "slog-usage", "storm/log");
    let verdict = find(&r["conclusions"], "title", "storm/log: useful")
        .unwrap_or_else(|| panic!("no useful verdict: {slog:#}"));
    assert_eq!(verdict["check"], "slog-usage");
    assert_eq!(verdict["rating"], "ok");

    // pool-health: nothing wrong with the pool itself.
    let health = find(&r["conclusions"], "check", "pool-health").unwrap();
    assert_eq!(health["rating"], "ok", "{health:#}");

    // Worst first.
    let ratings: Vec<u8> = r["conclusions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| match s["rating"].as_str().unwrap() {
            "critical" => 3,
            "warning" => 2,
            "info" => 1,
            _ => 0,
        })
        .collect();
    assert!(ratings.windows(2).all(|w| w[0] >= w[1]), "{ratings:?}");
}

#[test]
fn the_page_renders_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let page = write_page(&raw::lab("storm/series"), dir.path());
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: no scripts, no external resources.
    assert!(!html.contains("<script"));
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "no external resources"
    );
    let url = format!("file://{}", page.display());
    let chromium = |args: &[&str]| {
        let out = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("profile").display()
            ))
            .args(args)
            .output()
            .expect("chromium (tests/run installs it)");
        succeeded(&out);
        out.stdout
    };
    let dom = String::from_utf8(chromium(&["--dump-dom", &url])).unwrap();
    assert!(dom.contains("<h2>Conclusions</h2>"));
    assert!(dom.contains("seek-bound"));
    // Charts of every part the issue names: disks (HDD and SSD), the %util distribution,
    // ARC, L2ARC, ZIL, per-class latency, pool fill, CPU.
    for title in [
        "HDD %util",
        "SSD %util",
        "%util distribution",
        "ARC size vs target and max",
        "ARC data vs metadata",
        "L2ARC hits vs ARC reads",
        "ZIL commits and itx",
        "SLOG %util",
        "Read latency per class (total)",
        "Pool fill",
        "CPU busy",
    ] {
        assert!(dom.contains(title), "no chart {title:?}");
    }
    // Laid out by Chromium and measured: chart text on a 390 px phone, tables at 1280 px.
    let phone = measure(&url, 390, 844, "phone.png", Media::Screen);
    assert_eq!(phone["innerWidth"], 390.0, "{phone}");
    assert!(
        phone["scrollWidth"].as_f64().unwrap() <= 390.0,
        "the page is wider than the phone: {phone}"
    );
    let texts = phone["chartText"].as_array().unwrap();
    assert!(texts.len() > 100, "chart text measured: {phone}");
    for t in texts {
        let px = t["px"].as_f64().unwrap();
        assert!(
            px >= 10.0,
            "chart text at {px:.1} px on a 390 px phone: {t}"
        );
    }
    let desk = measure(&url, 1280, 900, "desktop.png", Media::Screen);
    let tables = desk["tables"].as_array().unwrap();
    assert!(tables.len() >= 5, "{desk}");
    for t in tables {
        assert!(
            t["scrollWidth"].as_f64().unwrap() <= t["clientWidth"].as_f64().unwrap(),
            "a table overflows its box at 1280 px: {t}"
        );
    }
    // On paper: A4's width less Chromium's default margins (794 − 2 × 38 px) — chart text
    // at least 10 px, and no table cut off at the page's edge.
    let paper = measure(&url, 718, 1000, "print.png", Media::Print);
    for t in paper["chartText"].as_array().unwrap() {
        let px = t["px"].as_f64().unwrap();
        assert!(px >= 10.0, "chart text at {px:.1} px in print: {t}");
    }
    for t in paper["tables"].as_array().unwrap() {
        assert!(
            t["scrollWidth"].as_f64().unwrap() <= t["clientWidth"].as_f64().unwrap(),
            "a table wider than the paper: {t}"
        );
    }
    // The overview's titles: what a check put between backticks is set as code, as in its
    // card; no backtick is left in the text.
    let json = report(&[raw::lab("storm/series").to_str().unwrap()]);
    let pairs: usize = json["conclusions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap().matches('`').count() / 2)
        .sum();
    assert_eq!(desk["overviewCode"].as_u64(), Some(pairs as u64), "{desk}");
    assert_eq!(desk["overviewBackticks"], false, "{desk}");
}

/// `zpulse report SERIES --out DIR/report.html` with the shipped checks: the page's path.
fn write_page(series: &Path, dir: &Path) -> PathBuf {
    let (zpulse, plugins) = zpulse_with_checks();
    let page = dir.join("report.html");
    let out = Command::new(zpulse)
        .arg("report")
        .arg(series)
        .arg("--out")
        .arg(&page)
        .args(&plugins)
        .output()
        .unwrap();
    succeeded(&out);
    page
}

/// Chromium's layout of the page at `url` in a `width` × `height` viewport, as measured by
/// [`MEASURE`] (over the DevTools protocol: the page runs no scripts of its own); the
/// screenshot is kept under the test target directory for a person to look at.
fn measure(url: &str, width: u32, height: u32, png: &str, media: Media) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser/evaluate.mjs");
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join(png);
    let out = Command::new("node")
        .arg(&script)
        .args(["chromium", url, &width.to_string(), &height.to_string()])
        .arg(&png)
        .arg(MEASURE)
        .args((media == Media::Print).then_some("print"))
        .output()
        .expect("node (apt-get install nodejs; tests/run installs it)");
    succeeded(&out);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), width);
    eprintln!("screenshot at {width} px: {}", png.display());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The CSS media the page is laid out for.
#[derive(PartialEq)]
enum Media {
    Screen,
    Print,
}

/// What the page tests measure: each chart text's rendered size (its font size in the SVG's
/// units times the scale the SVG is drawn at, rotation taken out), each table's scroll and
/// box widths, the headings, and the overview's code and backticks.
const MEASURE: &str = r#"JSON.stringify({
  innerWidth: window.innerWidth,
  scrollWidth: document.documentElement.scrollWidth,
  chartText: [...document.querySelectorAll("figure.chart svg text")].map((t) => {
    const m = t.getScreenCTM();
    const scale = Math.hypot(m.a, m.b);
    return { cls: t.getAttribute("class"), text: t.textContent,
             px: parseFloat(getComputedStyle(t).fontSize) * scale };
  }),
  tables: [...document.querySelectorAll("table")].map((t) => ({
    head: (t.rows[0] ? t.rows[0].textContent : "").slice(0, 60),
    scrollWidth: t.scrollWidth, clientWidth: t.clientWidth })),
  headings: [...document.querySelectorAll("h2")].map((h) => h.textContent),
  noZfs: [...document.querySelectorAll(".nozfs")].map((p) => p.textContent),
  charts: [...document.querySelectorAll("figure.chart title")].map((t) => t.textContent),
  overviewCode: document.querySelectorAll("table.overview code").length,
  overviewBackticks: (document.querySelector("table.overview") || { textContent: "" })
    .textContent.includes("`"),
})"#;

/// A host without ZFS: the storm's first two captures with everything of ZFS taken out (the
/// module, its kstats, the ioctl replies and the version): one line says so, and no ZFS
/// section (ARC, ZIL, pool latency, pools) is on the page, not even empty.
#[test]
fn a_host_without_zfs_gets_one_line_and_no_zfs_sections() {
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("series");
    for (i, from) in storm().iter().take(2).enumerate() {
        let to = series.join(format!("{i:03}"));
        copy_tree(from, &to);
        for zfs in ["sys/module/zfs", "proc/spl", "zfs-ioctl"] {
            std::fs::remove_dir_all(to.join(zfs)).unwrap();
        }
        let toml = to.join("zpulse-capture.toml");
        let kept: String = std::fs::read_to_string(&toml)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("zfs_version"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&toml, kept).unwrap();
    }
    let page = write_page(&series, dir.path());
    let m = measure(
        &format!("file://{}", page.display()),
        1280,
        900,
        "no-zfs.png",
        Media::Screen,
    );
    let said = m["noZfs"].as_array().unwrap();
    assert_eq!(said.len(), 1, "{m}");
    assert!(
        said[0]
            .as_str()
            .unwrap()
            .starts_with("ZFS is not loaded on this host"),
        "{m}"
    );
    let headings: Vec<&str> = m["headings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    for zfs in ["ARC", "ZIL", "Pool", "Pools"] {
        assert!(
            headings.iter().all(|h| !h.starts_with(zfs)),
            "a ZFS section on a host without ZFS: {headings:?}"
        );
    }
    // What the host has is there: its disks and its CPU.
    assert!(
        headings.contains(&"Disks") && headings.contains(&"Host"),
        "{headings:?}"
    );
    let charts = m["charts"].as_array().unwrap();
    assert!(charts.iter().any(|c| c == "CPU busy"), "{m}");
    assert!(
        charts
            .iter()
            .all(|c| !c.as_str().unwrap().contains("ARC") && !c.as_str().unwrap().contains("ZIL")),
        "{m}"
    );
}

#[test]
fn a_report_needs_a_window() {
    assert!(refused(&[]).contains("--duration"));
    let one = raw::dirs(&["storm/series"])[0].clone();
    assert!(refused(&[one.to_str().unwrap()]).contains("at least two captures"));
    // A JSON file that is not a report, given to --compare.
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("x.json");
    std::fs::write(&bogus, "{\"version\": 1}").unwrap();
    let bogus = bogus.to_str().unwrap();
    assert!(
        refused(&["--compare", bogus, bogus]).contains("neither a capture series nor a report")
    );
    // A FIFO planted where a report is expected: refused at once, never read (a read would
    // block until someone writes), and so is a link to a device that never ends.
    let fifo = dir.path().join("fifo.json");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo = fifo.to_str().unwrap();
    let err = refused(&["--compare", fifo, fifo]);
    assert!(err.contains("fifo.json") && err.contains("FIFO"), "{err}");
    let zero = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let zero = zero.to_str().unwrap();
    assert!(refused(&["--compare", zero, zero]).contains("zero.json"));
}

#[test]
fn a_live_window_samples_this_host() {
    // This machine need not have ZFS: disks, CPU and network are reported all the same.
    let (zpulse, _) = zpulse_with_checks();
    let out = Command::new(&zpulse)
        .args([
            "report",
            "--duration",
            "2s",
            "--interval",
            "1",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["intervals"], 2);
    assert_eq!(r["source"], "live");
    assert!(r["cpu_busy_pct"].as_f64().is_some());
    assert_eq!(r["series"]["t"].as_array().unwrap().len(), 2);
}

#[test]
fn a_report_from_the_agents_history_equals_the_one_from_the_series() {
    // `zpulse run --replay` records the storm into a history directory, as a live agent
    // records a host; `report --from --to` then reads that window back.
    let (zpulse, _) = zpulse_with_checks();
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history");
    let config = dir.path().join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "[history]\ndir = \"{}\"\n\n[[sink]]\ntype = \"stdout\"\n",
            history.display()
        ),
    )
    .unwrap();
    let out = Command::new(&zpulse)
        .args(["run", "--replay"])
        .arg(raw::lab("storm/series"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    succeeded(&out);
    let dirs = storm();
    let (from, to) = (
        raw::captured_at(&dirs[0]),
        raw::captured_at(&dirs[dirs.len() - 1]),
    );
    let from_history = report(&[
        "--from",
        &format!("{from}"),
        "--to",
        &format!("{to}"),
        "--history-dir",
        history.to_str().unwrap(),
    ]);
    let from_series = report(&[raw::lab("storm/series").to_str().unwrap()]);
    assert!(
        from_history["source"]
            .as_str()
            .unwrap()
            .starts_with("history ")
    );
    for key in [
        "intervals",
        "from",
        "to",
        "disks",
        "classes",
        "vdevs",
        "arc",
        "zil",
        "pools",
    ] {
        assert_eq!(from_history[key], from_series[key], "{key}");
    }
    assert_eq!(from_history["conclusions"], from_series["conclusions"]);
    // Two halves of the history, compared: each side is its own window.
    let mid = raw::captured_at(&dirs[4]);
    let c = report(&[
        "--compare",
        &format!("history:{from}..{mid}"),
        &format!("history:{mid}..{to}"),
        "--history-dir",
        history.to_str().unwrap(),
    ]);
    assert_eq!(c["before"]["intervals"], 4);
    assert_eq!(c["after"]["intervals"], dirs.len() - 5);
    assert!(!c["comparison"]["rows"].as_array().unwrap().is_empty());
    // A range with nothing in it is an error that says where it looked.
    let history = history.to_str().unwrap();
    assert!(
        refused(&["--from", "1000", "--to", "2000", "--history-dir", history])
            .contains("no history between")
    );
}

#[test]
fn ctrl_c_ends_a_live_window_with_what_was_sampled() {
    use std::io::{BufRead, BufReader};
    let (zpulse, _) = zpulse_with_checks();
    let mut child = Command::new(&zpulse)
        .args([
            "report",
            "--duration",
            "1h",
            "--interval",
            "1",
            "--format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The agent says when the first interval is done (stderr is not a terminal here).
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("ends the window early") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "stderr ended: {line}"
        );
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = r["intervals"].as_u64().unwrap();
    assert!((1..3600).contains(&n), "{n} intervals");
}

#[test]
fn adding_a_special_vdev_moves_the_metadata_reads_off_the_hdds() {
    // The lab's seed series: the storm on an HDD mirror, then again after a mirrored special
    // vdev was added and the files rewritten.
    let r = report(&[
        "--compare",
        raw::lab("seed/before").to_str().unwrap(),
        raw::lab("seed/after").to_str().unwrap(),
    ]);
    let (before, after) = (&r["before"], &r["after"]);
    // `zpool status` of the pool before: no special vdev.
    let status = std::fs::read_to_string(raw::lab("seed/before-status.txt")).unwrap();
    assert!(!status.contains("special"), "{status}");
    let class = |b: &serde_json::Value, c: &str| {
        find(&b["classes"], "subject", &format!("seed/{c}")).cloned()
    };
    assert!(class(before, "special").is_none());
    let special = class(after, "special").expect("a special class after");
    assert!(special["read_ops_s"].as_f64().unwrap() > 10.0, "{special}");
    // The comparison reads metadata latency from the normal class before and the special
    // class after, with exactly the two classes' figures.
    let row = find(
        &r["comparison"]["rows"],
        "what",
        "seed: metadata reads (normal → special class), mean latency",
    )
    .unwrap_or_else(|| panic!("{:#}", r["comparison"]));
    assert_eq!(
        row["before"],
        class(before, "normal").unwrap()["read_total_ms"]
    );
    assert_eq!(row["after"], special["read_total_ms"]);
    assert!(
        r["comparison"]["headlines"][0]
            .as_str()
            .unwrap()
            .contains("on the normal class before")
    );
    // The HDDs' busy time, from the captures' own /proc/diskstats: the storm's reads left
    // them.
    let util = |series: &str, name: &str| {
        let dirs = raw::dirs(&[series]);
        util_pct(&dirs[0], &dirs[dirs.len() - 1], name)
    };
    for (side, series) in [(before, "seed/before"), (after, "seed/after")] {
        for name in ["sda", "sdb"] {
            let d = find(&side["disks"], "name", name).unwrap();
            assert!(close(
                d["util_mean"].as_f64().unwrap(),
                util(series, name),
                1e-6
            ));
        }
    }
    assert!(util("seed/before", "sda") > 5.0 * util("seed/after", "sda"));
    // Where the metadata now lives: allocated on the special class.
    let alloc = after["pools"][0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c[0] == "special")
        .map(|c| c[1].as_u64().unwrap())
        .unwrap();
    assert!(alloc > 0);
}

/// A fast disk the kernel calls rotational, under light random reads, is not seek-bound
/// (`tests/lab/scenarios/fast-disk.sh`, `fixtures/lab/fast-disk/`): sdd, an unthrottled
/// emulated disk flagged rotational after its pool was made, read 50 times a second in 4 KiB
/// requests. By its own counters it moved a sliver of what a disk streams per busy second in
/// small requests — the seed's seek-bound argument — but each request kept it busy for less
/// than a seek takes (2 ms, docs/checks/hdd-saturation.md), so the premise fails and the
/// report must not say seek-bound.
#[test]
fn a_fast_disk_at_low_throughput_is_not_called_seek_bound() {
    let series = raw::dirs(&["fast-disk/series"]);
    let (a, b) = (&series[0], &series[series.len() - 1]);
    let rotational = std::fs::read_to_string(b.join("cli/rotational.txt")).unwrap();
    assert!(
        rotational.contains("sdd/queue/rotational:1"),
        "{rotational}"
    );
    let reads = disk_delta(a, b, "sdd", 2);
    let busy_ms = disk_delta(a, b, "sdd", 11);
    let util = util_pct(a, b, "sdd");
    let per_request_ms = busy_ms / reads;
    let request_kib = disk_delta(a, b, "sdd", 4) * 512.0 / reads / 1024.0;
    let mb_s = disk_delta(a, b, "sdd", 4) * 512.0 / seconds(a, b) / 1e6;
    // Every other premise of seek-bound holds (the check's defaults: 150 MB/s streamed per
    // busy second, 25% of it at most, requests of 64 KiB at most), and the disk was busy
    // enough (5%) to be judged at all.
    assert!(util >= 5.0, "sdd {util:.1}% busy");
    assert!(
        mb_s / (util / 100.0) <= 0.25 * 150.0,
        "{mb_s} MB/s at {util}%"
    );
    assert!(request_kib <= 64.0, "{request_kib} KiB a request");
    // The one that fails: the disk answered faster than any seek.
    assert!(per_request_ms < 2.0, "{per_request_ms} ms busy per request");
    let r = report(&[raw::lab("fast-disk/series").to_str().unwrap()]);
    let s = section(&r, "hdd-saturation", "sdd");
    assert_ne!(s["verdict"], "seek-bound", "{s:#}");
    assert!(
        !s["title"].as_str().unwrap().contains("seek-bound"),
        "{s:#}"
    );
    assert!(
        (figure(s, "util_mean_pct") - util).abs() < 1.0,
        "{} against the counters' {util}",
        figure(s, "util_mean_pct")
    );
}

/// A log slower than the pool it serves (`tests/lab/scenarios/slow-log.sh`,
/// `fixtures/lab/slow-log/`): pool `fastlog` on an unthrottled emulated SSD (sdc) with a
/// throttled emulated HDD (sda) as its log, under four writers that fsync every write. The
/// report must say to remove the log, with both latencies: the kernel's own (`zpool iostat
/// -vlp`, each vdev's mean disk wait for writes since the pool was made, in ns) and the
/// disks' (`/proc/diskstats`, write time over writes completed) are the ground truth.
#[test]
fn a_log_slower_than_its_pool_is_to_be_removed() {
    let series = raw::dirs(&["slow-log/series"]);
    let (a, b) = (&series[0], &series[series.len() - 1]);
    let w_await = |disk: &str| disk_delta(a, b, disk, 9) / disk_delta(a, b, disk, 6);
    let (log_await, data_await) = (w_await("sda"), w_await("sdc"));
    assert!(
        log_await > 3.0 * data_await,
        "sda {log_await} ms, sdc {data_await} ms"
    );
    // The vdevs' mean write disk wait as `zpool iostat -vlp` printed it at the last capture:
    // columns name, alloc, free, 2 × operations, 2 × bandwidth, 2 × total_wait, then
    // disk_wait read and write.
    let iostat = std::fs::read_to_string(b.join("cli/zpool-iostat-vlp.txt")).unwrap();
    let disk_wait_w_ms = |vdev: &str| -> f64 {
        let row = iostat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(vdev))
            .unwrap_or_else(|| panic!("no row {vdev}:\n{iostat}"));
        let ns: f64 = row.split_whitespace().nth(10).unwrap().parse().unwrap();
        ns / 1e6
    };
    let logs = iostat.lines().skip_while(|l| !l.starts_with("logs"));
    assert!(
        logs.clone()
            .nth(1)
            .is_some_and(|l| l.trim_start().starts_with("sda")),
        "sda is the log:\n{iostat}"
    );
    let r = report(&[raw::lab("slow-log/series").to_str().unwrap()]);
    let s = section(&r, "slog-usage", "fastlog/log");
    assert_eq!(s["verdict"], "slower than the pool", "{s:#}");
    assert_eq!(s["rating"], "warning", "{s:#}");
    let advice = s["advice"].as_str().unwrap();
    assert!(advice.contains("zpool remove fastlog sda"), "{advice}");
    // Its figures: the log's and the pool's write latency as the kernel measures them (the
    // window leaves out the first seconds the iostat means include: within a tenth), the
    // busiest log disk's wait as its diskstats give it.
    for (key, want) in [
        ("log_device_write_ms", disk_wait_w_ms("sda")),
        ("data_device_write_ms", disk_wait_w_ms("sdc")),
    ] {
        let got = figure(s, key);
        assert!(
            (got - want).abs() <= 0.1 * want,
            "{key} {got}, zpool iostat {want}"
        );
    }
    assert!((figure(s, "busiest_w_await_ms") - log_await).abs() < 0.01);
}
