//! The window's figures, computed from the window as one interval.
//!
//! [`ReportWindow::whole`] is `Sample::between` the first and the last snapshot, so every
//! figure here is the exact mean of its counter over the window — `iostat -x` run once with
//! the window as its interval — and every latency comes from all of the window's I/O in the
//! vdevs' histograms (`zpool iostat -l` over the window). The distribution of `%util` comes
//! from the per-interval values in [`ReportWindow::busy`].

use serde::{Deserialize, Serialize};
use zpulse_proto::Sample;
use zpulse_proto::report::ReportWindow;
use zpulse_proto::sample::VdevRates;
use zpulse_proto::snapshot::{Disk, VdevClass};

/// `%util` at or above this is "saturated", as in the seed's "16% of samples ≥ 95%" and the
/// hdd-saturation check's default.
pub const SATURATED_PCT: f64 = 95.0;

/// One disk over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskFigures {
    pub name: String,
    /// `hdd`, `ssd` or `unknown` (the kernel did not say whether it rotates).
    pub kind: String,
    /// Where it sits: `pool/class/vdev` of its first role, when it is in a pool.
    #[serde(default)]
    pub role: Option<String>,
    /// Mean `%util` over the window (busy time / window).
    pub util_mean: f64,
    /// Percentiles and maximum of the per-interval `%util`.
    pub util_p50: Option<f64>,
    pub util_p95: Option<f64>,
    pub util_max: Option<f64>,
    /// Share of intervals at or above [`SATURATED_PCT`], percent.
    pub saturated_pct: Option<f64>,
    /// Intervals per 10-point `%util` bucket: [0,10), [10,20), … [90,100].
    pub util_histogram: [u32; 10],
    pub r_s: f64,
    pub w_s: f64,
    /// Decimal MB/s (10^6 bytes), as `iostat -m` does not: stated so in the page.
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub r_await_ms: Option<f64>,
    pub w_await_ms: Option<f64>,
    /// Mean request sizes, KiB.
    pub rareq_kib: Option<f64>,
    pub wareq_kib: Option<f64>,
}

/// The disks of the window: whole, real disks (partitions are in their disk's figures;
/// loop and RAM devices store nothing of their own).
pub fn disks(window: &ReportWindow) -> Vec<DiskFigures> {
    let whole = &window.whole;
    let by_name = whole.snapshot.disks_by_name();
    whole
        .disks
        .iter()
        .filter(|d| d.whole_disk.is_none() && !d.virtual_device)
        .map(|d| {
            let busy = window
                .busy(&d.name)
                .map(|b| b.util.as_slice())
                .unwrap_or(&[]);
            let mut sorted = busy.to_vec();
            sorted.sort_by(f64::total_cmp);
            let mut histogram = [0u32; 10];
            for u in busy {
                histogram[((u / 10.0).floor() as usize).min(9)] += 1;
            }
            let disk = by_name.get(d.name.as_str()).copied();
            DiskFigures {
                name: d.name.clone(),
                kind: kind(d.rotational).to_owned(),
                role: disk.and_then(role),
                util_mean: d.util,
                util_p50: percentile(&sorted, 0.50),
                util_p95: percentile(&sorted, 0.95),
                util_max: sorted.last().copied(),
                saturated_pct: window
                    .busy(&d.name)
                    .and_then(|b| b.share_at_or_above(SATURATED_PCT))
                    .map(|s| s * 100.0),
                util_histogram: histogram,
                r_s: d.r_s,
                w_s: d.w_s,
                read_mb_s: d.rkb_s * 1024.0 / 1e6,
                write_mb_s: d.wkb_s * 1024.0 / 1e6,
                r_await_ms: d.r_await,
                w_await_ms: d.w_await,
                rareq_kib: d.rareq_sz,
                wareq_kib: d.wareq_sz,
            }
        })
        .collect()
}

pub fn kind(rotational: Option<bool>) -> &'static str {
    match rotational {
        Some(true) => "hdd",
        Some(false) => "ssd",
        None => "unknown",
    }
}

fn role(disk: &Disk) -> Option<String> {
    let r = disk.roles.first()?;
    Some(format!("{}/{}/{}", r.pool, r.class.as_str(), r.vdev))
}

/// Nearest-rank percentile of sorted values (`q` in 0–1).
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// One top-level vdev, or all top-level vdevs of one class of a pool, over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VdevFigures {
    /// `pool/class/vdev` (a class: `pool/class`).
    pub subject: String,
    pub pool: String,
    pub class: String,
    pub read_ops_s: f64,
    pub write_ops_s: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    /// Mean latency of a read / write from queueing to completion (`total_wait`), and of the
    /// device alone (`disk_wait`), ms; `None` with no such I/O in the window.
    pub read_total_ms: Option<f64>,
    pub read_disk_ms: Option<f64>,
    pub write_total_ms: Option<f64>,
    pub write_disk_ms: Option<f64>,
}

/// A class is its top-level vdevs together, with latencies weighted by their operations.
pub type ClassFigures = VdevFigures;

fn top_level(whole: &Sample) -> impl Iterator<Item = (&str, &VdevRates)> {
    whole.pools.iter().flat_map(|p| {
        p.vdevs
            .iter()
            // pool/class/vdev: three parts; the root is the pool's name, leaves have four.
            .filter(|v| v.subject.split('/').count() == 3)
            .map(move |v| (p.name.as_str(), v))
    })
}

fn ms(ns: Option<u64>) -> Option<f64> {
    ns.map(|n| n as f64 / 1e6)
}

pub fn vdevs(whole: &Sample) -> Vec<VdevFigures> {
    top_level(whole)
        .filter(|(_, v)| v.class != Some(VdevClass::Cache) && v.class != Some(VdevClass::Spare))
        .map(|(pool, v)| VdevFigures {
            subject: v.subject.clone(),
            pool: pool.to_owned(),
            class: v.class.map_or("normal", VdevClass::as_str).to_owned(),
            read_ops_s: v.read_ops_per_s,
            write_ops_s: v.write_ops_per_s,
            read_mb_s: v.read_bytes_per_s / 1e6,
            write_mb_s: v.write_bytes_per_s / 1e6,
            read_total_ms: ms(v.total_wait_r),
            read_disk_ms: ms(v.disk_wait_r),
            write_total_ms: ms(v.total_wait_w),
            write_disk_ms: ms(v.disk_wait_w),
        })
        .collect()
}

/// Ops-weighted mean of `value` over `rows` (`None` when no row has both).
fn weighted(
    rows: &[VdevFigures],
    ops: fn(&VdevFigures) -> f64,
    value: fn(&VdevFigures) -> Option<f64>,
) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0.0);
    for r in rows {
        if let Some(v) = value(r) {
            sum += v * ops(r);
            n += ops(r);
        }
    }
    (n > 0.0).then(|| sum / n)
}

pub fn classes(whole: &Sample) -> Vec<ClassFigures> {
    let rows = vdevs(whole);
    let mut keys: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.pool.clone(), r.class.clone()))
        .collect();
    keys.dedup();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|(pool, class)| {
            let of: Vec<VdevFigures> = rows
                .iter()
                .filter(|r| r.pool == pool && r.class == class)
                .cloned()
                .collect();
            let sum = |f: fn(&VdevFigures) -> f64| of.iter().map(f).sum::<f64>();
            let (r, w) = (
                |v: &VdevFigures| v.read_ops_s,
                |v: &VdevFigures| v.write_ops_s,
            );
            VdevFigures {
                subject: format!("{pool}/{class}"),
                read_ops_s: sum(r),
                write_ops_s: sum(w),
                read_mb_s: sum(|v| v.read_mb_s),
                write_mb_s: sum(|v| v.write_mb_s),
                read_total_ms: weighted(&of, r, |v| v.read_total_ms),
                read_disk_ms: weighted(&of, r, |v| v.read_disk_ms),
                write_total_ms: weighted(&of, w, |v| v.write_total_ms),
                write_disk_ms: weighted(&of, w, |v| v.write_disk_ms),
                pool,
                class,
            }
        })
        .collect()
}

/// The ARC over the window: rates are the window's, sizes the last snapshot's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArcFigures {
    pub size: Option<u64>,
    /// Target size (`c`) and maximum (`c_max`).
    pub target: Option<u64>,
    pub max: Option<u64>,
    pub data_size: Option<u64>,
    pub metadata_size: Option<u64>,
    /// Mean over the intervals of metadata / size, percent.
    pub metadata_pct: Option<f64>,
    pub reads_s: f64,
    pub hit_pct: Option<f64>,
    pub demand_metadata_hit_pct: Option<f64>,
    pub demand_data_hit_pct: Option<f64>,
    pub ghost_hits_s: Option<f64>,
    /// L2ARC: hits per second, the share of all ARC reads it served, the share of ARC misses
    /// it found, its size and the ARC memory its headers take.
    pub l2_hits_s: Option<f64>,
    pub l2_share_of_reads_pct: Option<f64>,
    pub l2_hit_pct: Option<f64>,
    pub l2_size: Option<u64>,
    pub l2_hdr_size: Option<u64>,
}

pub fn arc(window: &ReportWindow) -> Option<ArcFigures> {
    let whole = &window.whole;
    let stats = whole.snapshot.arc.as_ref()?;
    let rates = whole.arc.as_ref();
    let pct = |r: Option<f64>| r.map(|r| r * 100.0);
    let l2_present = stats.l2_size().is_some_and(|s| s > 0);
    Some(ArcFigures {
        size: stats.size(),
        target: stats.c(),
        max: stats.c_max(),
        data_size: stats.data_size(),
        metadata_size: stats.arc_meta_used(),
        metadata_pct: pct(window.arc_metadata_share_mean()),
        reads_s: rates.map_or(0.0, |r| r.reads_per_s),
        hit_pct: pct(rates.and_then(|r| r.hit_ratio)),
        demand_metadata_hit_pct: pct(rates.and_then(|r| r.demand_metadata_hit_ratio)),
        demand_data_hit_pct: pct(rates.and_then(|r| r.demand_data_hit_ratio)),
        ghost_hits_s: rates.and_then(|r| r.ghost_hits_per_s),
        l2_hits_s: rates
            .filter(|_| l2_present)
            .and_then(|r| r.delta("l2_hits"))
            .map(|h| h as f64 / whole.interval),
        l2_share_of_reads_pct: pct(rates
            .filter(|_| l2_present)
            .and_then(|r| r.l2_share_of_reads)),
        l2_hit_pct: pct(rates.filter(|_| l2_present).and_then(|r| r.l2_hit_ratio)),
        l2_size: stats.l2_size().filter(|_| l2_present),
        l2_hdr_size: stats.l2_hdr_size().filter(|_| l2_present),
    })
}

/// The ZIL over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZilFigures {
    pub commits_s: f64,
    pub itx_s: f64,
    pub itx_mb_s: f64,
    /// Log blocks written to SLOG devices and to the main pool, MB/s.
    pub slog_mb_s: f64,
    pub normal_mb_s: f64,
    pub slog_pct: Option<f64>,
}

pub fn zil(whole: &Sample) -> Option<ZilFigures> {
    let z = whole.zil.as_ref()?;
    Some(ZilFigures {
        commits_s: z.commits_per_s,
        itx_s: z.itx_per_s,
        itx_mb_s: z.itx_bytes_per_s / 1e6,
        slog_mb_s: z.slog_bytes_per_s / 1e6,
        normal_mb_s: z.normal_bytes_per_s / 1e6,
        slog_pct: z.slog_share.map(|s| s * 100.0),
    })
}

/// One pool at the end of the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolFigures {
    pub name: String,
    pub state: Option<String>,
    pub size: Option<u64>,
    pub alloc: Option<u64>,
    pub fill_pct: Option<f64>,
    /// Per class: (class, allocated bytes, size) of its top-level vdevs.
    pub classes: Vec<(String, u64, u64)>,
}

pub fn pools(whole: &Sample) -> Vec<PoolFigures> {
    whole
        .snapshot
        .pools
        .iter()
        .map(|p| {
            let root = p.config.as_ref().and_then(|c| c.root.stats.as_ref());
            let mut classes: Vec<(String, u64, u64)> = Vec::new();
            if let Some(cfg) = &p.config {
                for top in &cfg.root.children {
                    let (Some(class), Some(s)) = (top.class, &top.stats) else {
                        continue;
                    };
                    if matches!(class, VdevClass::Cache | VdevClass::Spare) {
                        continue;
                    }
                    match classes.iter_mut().find(|c| c.0 == class.as_str()) {
                        Some(c) => {
                            c.1 += s.alloc;
                            c.2 += s.space;
                        }
                        None => classes.push((class.as_str().to_owned(), s.alloc, s.space)),
                    }
                }
            }
            PoolFigures {
                name: p.name.clone(),
                state: p.state.clone(),
                size: root.map(|s| s.space),
                alloc: root.map(|s| s.alloc),
                fill_pct: root
                    .filter(|s| s.space > 0)
                    .map(|s| s.alloc as f64 * 100.0 / s.space as f64),
                classes,
            }
        })
        .collect()
}

/// One network interface over the window, MB/s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetFigures {
    pub name: String,
    pub rx_mb_s: f64,
    pub tx_mb_s: f64,
}

pub fn net(whole: &Sample) -> Vec<NetFigures> {
    whole
        .net
        .iter()
        .filter(|n| n.name != "lo")
        .map(|n| NetFigures {
            name: n.name.clone(),
            rx_mb_s: n.rx_bytes_per_s / 1e6,
            tx_mb_s: n.tx_bytes_per_s / 1e6,
        })
        .collect()
}
