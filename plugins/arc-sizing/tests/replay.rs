//! Replays of real captures recorded in the OpenZFS 2.1 lab VM (`tests/lab/scenarios/checks.sh`,
//! ARC capped at 384 MiB) through the check, with every expected figure computed here from
//! the raw files (arcstats rows, `/proc/meminfo`, `captured_at`), never copied from the
//! check's output.
//!
//! What the captures show: no lab series has ghost hits. In `storm` the metadata of 30 000
//! small files fitted the ARC (it grew from 58 to 155 MiB of its 384 MiB, ~100% hits); in
//! `fill` the ARC filled to its limit (99.5% at `fill-end`) with freshly written blocks that
//! nobody read back. Pinned without ghost hits is exactly the case where a bigger ARC would
//! *not* help, and the check must stay silent; the sizing arithmetic is still checked on the
//! real memory figures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zpulse_check_arc_sizing::{ArcSizing, Config, Judgement, slope};
use zpulse_proto::Sample;
use zpulse_proto::sdk::testing::TestHost;
use zpulse_proto::sdk::{self, Value, Verdict};
use zpulse_tests::raw::{captured_at, dirs, replay};

const MIB: f64 = 1024.0 * 1024.0;

/// A capture as its files say.
struct Raw {
    at: f64,
    arc: BTreeMap<String, i64>,
    /// MemTotal and MemAvailable, bytes.
    mem_total: f64,
    mem_available: f64,
}

fn raw(dir: &Path) -> Raw {
    let at = captured_at(dir);
    let arc = std::fs::read_to_string(dir.join("proc/spl/kstat/zfs/arcstats"))
        .unwrap()
        .lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f[0].to_string(), f.get(2)?.parse().ok()?))
        })
        .collect();
    let meminfo = std::fs::read_to_string(dir.join("proc/meminfo")).unwrap();
    let kib = |key: &str| -> f64 {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .unwrap()
            * 1024.0
    };
    Raw {
        at,
        arc,
        mem_total: kib("MemTotal:"),
        mem_available: kib("MemAvailable:"),
    }
}

/// The ARC over a run of captures, as the seed's admin would add it up.
#[derive(Debug)]
struct Expect {
    pinned: f64,
    hit_ratio: f64,
    reads_per_s: f64,
    ghost_hits_per_s: f64,
    metadata_share: f64,
    available_min: f64,
    trend: Option<f64>,
}

fn expect(raws: &[Raw]) -> Expect {
    let n = (raws.len() - 1) as f64;
    let (mut secs, mut hits, mut reads, mut ghosts) = (0.0, 0.0, 0.0, 0.0);
    let mut points = Vec::new();
    for w in raws.windows(2) {
        let d = |k: &str| (w[1].arc.get(k).unwrap_or(&0) - w[0].arc.get(k).unwrap_or(&0)) as f64;
        // OpenZFS 2.1: every read is a hit or a miss (iohits arrive in 2.2).
        let r = d("hits") + d("iohits") + d("misses");
        secs += w[1].at - w[0].at;
        hits += d("hits");
        reads += r;
        ghosts += d("mru_ghost_hits") + d("mfu_ghost_hits");
        if r > 0.0 {
            points.push((w[1].at / 3600.0, d("hits") / r * 100.0));
        }
    }
    let ends = &raws[1..];
    let ratio = |a: &str, b: &str| {
        ends.iter()
            .map(|r| r.arc[a] as f64 / r.arc[b] as f64)
            .sum::<f64>()
            / n
    };
    Expect {
        pinned: ratio("size", "c_max"),
        hit_ratio: hits / reads,
        reads_per_s: reads / secs,
        ghost_hits_per_s: ghosts / secs,
        metadata_share: ratio("arc_meta_used", "size"),
        available_min: ends
            .iter()
            .map(|r| r.mem_available)
            .fold(f64::INFINITY, f64::min),
        trend: slope(&points),
    }
}

fn num(j: &Judgement, key: &str) -> f64 {
    j.report
        .data
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {:?}", j.report.data))
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 0.006,
        "{what}: the check says {got}, the raw capture {want}"
    );
}

fn judge(config: Config, samples: &[Sample]) -> Judgement {
    let mut check = ArcSizing::with_config(config).unwrap();
    for s in samples {
        check.step(s);
    }
    check
        .judge(samples.last().unwrap())
        .expect("enough samples")
}

fn run(pairs: &[(&str, Value)], samples: &[Sample]) -> Vec<sdk::Event> {
    let table: BTreeMap<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    TestHost::new()
        .run::<ArcSizing>(&sdk::config::encode(&table), samples)
        .unwrap()
}

#[test]
fn storm_figures_match_the_raw_arcstats() {
    let dirs = dirs(&["checks/storm"]);
    let samples = replay(&dirs);
    let raws: Vec<Raw> = dirs.iter().map(|d| raw(d)).collect();
    let e = expect(&raws);
    let j = judge(
        Config {
            min_samples: 7,
            ..Config::default()
        },
        &samples,
    );
    close(num(&j, "pinned_pct"), e.pinned * 100.0, "pinned");
    close(num(&j, "hit_ratio_pct"), e.hit_ratio * 100.0, "hit ratio");
    close(num(&j, "reads_per_s"), e.reads_per_s, "reads/s");
    close(
        num(&j, "ghost_hits_per_s"),
        e.ghost_hits_per_s,
        "ghost hits/s",
    );
    close(
        num(&j, "metadata_share_pct"),
        e.metadata_share * 100.0,
        "metadata share",
    );
    close(num(&j, "available_min_bytes"), e.available_min, "available");
    close(num(&j, "c_max_bytes"), raws[7].arc["c_max"] as f64, "c_max");
    let trend = j.stats.hit_ratio_trend.unwrap();
    assert!((trend - e.trend.unwrap()).abs() < 1e-6, "{trend} vs {e:?}");
    // What the storm did to the ARC: far from its limit, no ghost hits, a metadata-heavy mix.
    assert!(e.pinned < 0.9 && e.ghost_hits_per_s == 0.0, "{e:?}");
    assert!(e.metadata_share > 0.5, "{e:?}");
    assert_eq!(j.verdict, Verdict::Clear);
    assert!(
        j.report.summary.starts_with(&format!(
            "The ARC is not starved: {:.0}% of its 384 MiB limit on average, 0.0 ghost hits/s",
            e.pinned * 100.0
        )),
        "{}",
        j.report.summary
    );
    assert!(run(&[("min_samples", Value::UInt(7))], &samples).is_empty());
}

#[test]
fn a_pinned_arc_without_ghost_hits_gets_no_advice() {
    // The fill series and its end capture, 30 s later, when the ARC had reached its limit.
    let dirs: Vec<PathBuf> = dirs(&["checks/fill", "checks/fill-end"]);
    assert_eq!(dirs.len(), 7);
    let samples = replay(&dirs);
    let raws: Vec<Raw> = dirs.iter().map(|d| raw(d)).collect();
    let last = &raws[6];
    let pinned = last.arc["size"] as f64 / last.arc["c_max"] as f64;
    assert!(
        pinned > 0.97,
        "fill-end: the ARC is at its limit ({pinned})"
    );
    let ghost_hits = last.arc["mru_ghost_hits"] + last.arc["mfu_ghost_hits"];
    assert_eq!(ghost_hits, 0, "but nothing asked for an evicted block");
    // Judged on that last sample alone: pinned holds, the ghost hits do not.
    let config = Config {
        window_samples: 1,
        min_samples: 1,
        ..Config::default()
    };
    let j = judge(config.clone(), &samples);
    close(num(&j, "pinned_pct"), pinned * 100.0, "pinned");
    assert_eq!(j.verdict, Verdict::Clear);
    // The sizing on the real memory figures, computed the documented way: keep 15% of RAM
    // (at least 1 GiB), raise by the ghost lists' size in 128 MiB steps, at least 256 MiB,
    // at most the headroom and 100% of c_max.
    let keep = (last.mem_total * 0.15).max(1024.0 * MIB);
    close(num(&j, "keep_free_bytes"), keep.round(), "keep free");
    let headroom = last.mem_available - keep;
    let c_max = last.arc["c_max"] as f64;
    let cap = (headroom.min(c_max) / (128.0 * MIB)).floor() * 128.0 * MIB;
    let ghost_size = (last.arc["mru_ghost_size"] + last.arc["mfu_ghost_size"]) as f64;
    let want = ((ghost_size / (128.0 * MIB)).ceil() * 128.0 * MIB).clamp(256.0 * MIB, cap);
    assert_eq!(j.plan.raise, want);
    close(num(&j, "ghost_size_bytes"), ghost_size, "ghost size");
    // Nothing to convert: no projected gain, so no advice.
    assert_eq!(j.plan.converted_per_s, 0.0);
    assert!(j.report.advice.is_none());
    let events = run(
        &[
            ("window_samples", Value::UInt(1)),
            ("min_samples", Value::UInt(1)),
        ],
        &samples,
    );
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn healthy_lab_captures_raise_nothing() {
    for series in [
        &["checks/quiet"][..],
        &["checks/storm"],
        &["checks/fill", "checks/fill-end"],
        &["basic"],
        &["vdevs/rz-zpulse"],
        &["vdevs/deg-zpulse"],
    ] {
        let samples = replay(&dirs(series));
        let events = run(&[("min_samples", Value::UInt(1))], &samples);
        assert!(events.is_empty(), "{series:?}: {events:?}");
    }
}

#[test]
fn the_quiet_pool_figures() {
    let dirs = dirs(&["checks/quiet"]);
    let samples = replay(&dirs);
    let raws: Vec<Raw> = dirs.iter().map(|d| raw(d)).collect();
    let e = expect(&raws);
    let j = judge(
        Config {
            min_samples: 3,
            ..Config::default()
        },
        &samples,
    );
    close(num(&j, "pinned_pct"), e.pinned * 100.0, "pinned");
    close(
        num(&j, "metadata_share_pct"),
        e.metadata_share * 100.0,
        "metadata",
    );
    close(num(&j, "available_min_bytes"), e.available_min, "available");
    assert_eq!(j.verdict, Verdict::Clear);
}
