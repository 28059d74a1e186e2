//! The text report: ARC against its bounds, the ZIL, pools, disks and the host, in the terms
//! `arc_summary`, `zpool iostat` and `iostat -x` use.

use super::units::{bytes, num, pct, utc};
use std::fmt::Write;
use zpulse_proto::sample::DiskRates;
use zpulse_proto::snapshot::{ArcStats, Disk};
use zpulse_proto::{Sample, Snapshot};

/// Devices that are not disks are shown only when they did I/O.
use zpulse_proto::snapshot::is_virtual_disk as is_virtual;

/// One snapshot: absolute values only (ratios are since boot).
pub fn snapshot_text(snap: &Snapshot) -> String {
    let mut out = String::new();
    header(&mut out, snap);
    if let Some(arc) = &snap.arc {
        arc_line(&mut out, arc);
        let hits = arc.hits().unwrap_or(0) + arc.iohits().unwrap_or(0);
        let reads = hits + arc.misses().unwrap_or(0);
        let _ = writeln!(
            out,
            "      since boot: hit {} of {} reads",
            pct(ratio(arc.hits(), Some(reads))),
            reads
        );
    }
    if let Some(zil) = &snap.zil {
        let slog = zil.zil_itx_metaslab_slog_bytes();
        let normal = zil.zil_itx_metaslab_normal_bytes();
        let total = slog.zip(normal).map(|(s, n)| s + n);
        let _ = writeln!(
            out,
            "ZIL   since boot: {} commits, {} itx; log blocks to SLOG {}",
            opt(zil.zil_commit_count()),
            opt(zil.zil_itx_count()),
            pct(ratio(slog, total))
        );
    }
    pools(&mut out, snap);
    let _ = writeln!(
        out,
        "DISK  {:<10} {:>4} {:>10} {:>9}",
        "name", "type", "size", "sectors"
    );
    for d in snap
        .disks
        .iter()
        .filter(|d| d.whole_disk.is_none() && !is_virtual(&d.name))
    {
        let _ = writeln!(
            out,
            "      {:<10} {:>4} {:>10} {:>9}",
            d.name,
            kind(d.rotational),
            d.size.map_or_else(|| "-".into(), bytes),
            sectors(d)
        );
    }
    host(&mut out, snap);
    notes(&mut out, snap);
    out
}

/// One interval: rates, with the later snapshot's sizes.
pub fn sample_text(sample: &Sample) -> String {
    let snap = &sample.snapshot;
    let mut out = String::new();
    header(&mut out, snap);
    let _ = writeln!(
        out,
        "interval {:.1} s, {} → {}",
        sample.interval,
        utc(sample.start),
        utc(sample.end)
    );
    if let Some(arc) = &snap.arc {
        arc_line(&mut out, arc);
    }
    if let Some(r) = &sample.arc {
        let _ = writeln!(
            out,
            "      {:.0} reads/s, hit {} (demand data {}, demand metadata {}, prefetch {})",
            r.reads_per_s,
            pct(r.hit_ratio),
            pct(r.demand_data_hit_ratio),
            pct(r.demand_metadata_hit_ratio),
            pct(r.prefetch_hit_ratio)
        );
        if r.l2_hit_ratio.is_some() || r.delta("l2_hits").unwrap_or(0) > 0 {
            let _ = writeln!(
                out,
                "      L2ARC hit {} of ARC misses, {} of all reads",
                pct(r.l2_hit_ratio),
                pct(r.l2_share_of_reads)
            );
        }
        if let Some(g) = r.ghost_hits_per_s {
            let _ = writeln!(out, "      ghost-list hits {g:.1}/s");
        }
    }
    if let Some(z) = &sample.zil {
        let _ = writeln!(
            out,
            "ZIL   {:.1} commits/s, {:.1} itx/s, {}/s logged; log blocks to SLOG {}",
            z.commits_per_s,
            z.itx_per_s,
            bytes(z.itx_bytes_per_s as u64),
            pct(z.slog_share)
        );
    }
    pools(&mut out, snap);
    for p in &sample.pools {
        if let Some(pool) = snap.pool(&p.name) {
            super::pool::pool_rates_text(&mut out, pool, &p.vdevs, &snap.disks);
        }
        for d in &p.datasets {
            if d.reads_per_s + d.writes_per_s > 0.0 {
                let _ = writeln!(
                    out,
                    "      {:<24} {:>8.1} r/s {:>8.1} w/s {:>10}/s read {:>10}/s written",
                    d.name.as_deref().unwrap_or(&d.objset),
                    d.reads_per_s,
                    d.writes_per_s,
                    bytes(d.read_bytes_per_s as u64),
                    bytes(d.written_bytes_per_s as u64)
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "DISK  {:<10} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6}",
        "name", "type", "r/s", "w/s", "rMB/s", "wMB/s", "r_await", "w_await", "aqu-sz", "%util"
    );
    for d in sample.disks.iter().filter(|d| shown(d)) {
        let _ = writeln!(
            out,
            "      {:<10} {:>4} {:>8.1} {:>8.1} {:>8.2} {:>8.2} {:>8} {:>8} {:>7.2} {:>6.1}",
            d.name,
            kind(d.rotational),
            d.r_s,
            d.w_s,
            d.rkb_s / 1024.0,
            d.wkb_s / 1024.0,
            num(d.r_await, 2),
            num(d.w_await, 2),
            d.aqu_sz,
            d.util
        );
    }
    if let Some(cpu) = &sample.cpu {
        let _ = writeln!(
            out,
            "CPU   busy {:.1}%, iowait {}",
            cpu.busy_pct,
            cpu.iowait_pct
                .map_or_else(|| "-".into(), |v| format!("{v:.1}%"))
        );
    }
    for n in sample
        .net
        .iter()
        .filter(|n| n.rx_bytes_per_s + n.tx_bytes_per_s > 0.0)
    {
        let _ = writeln!(
            out,
            "NET   {:<10} rx {}/s, tx {}/s",
            n.name,
            bytes(n.rx_bytes_per_s as u64),
            bytes(n.tx_bytes_per_s as u64)
        );
    }
    if let Some(mem) = &snap.memory {
        memory_line(&mut out, mem);
    }
    if !sample.resets.is_empty() {
        let _ = writeln!(
            out,
            "note: counters reset during the interval (no rates): {}",
            sample.resets.join(", ")
        );
    }
    notes(&mut out, snap);
    out
}

fn shown(d: &DiskRates) -> bool {
    d.whole_disk.is_none() && (!is_virtual(&d.name) || d.iops() > 0.0)
}

fn header(out: &mut String, snap: &Snapshot) {
    let h = &snap.host;
    let _ = writeln!(
        out,
        "{} · {} {} · OpenZFS {} · {}",
        if h.hostname.is_empty() {
            "?"
        } else {
            &h.hostname
        },
        h.os.as_str(),
        h.kernel.as_deref().unwrap_or(""),
        h.zfs_version.as_deref().unwrap_or("-"),
        utc(snap.taken_at)
    );
}

fn arc_line(out: &mut String, arc: &ArcStats) {
    let _ = writeln!(
        out,
        "ARC   {} of c_max {} ({}), target {}; metadata {} of the ARC",
        arc.size().map_or_else(|| "-".into(), bytes),
        arc.c_max().map_or_else(|| "-".into(), bytes),
        pct(ratio(arc.size(), arc.c_max())),
        arc.c().map_or_else(|| "-".into(), bytes),
        pct(arc.metadata_share())
    );
    if let Some(l2) = arc.l2_size().filter(|&s| s > 0) {
        let _ = writeln!(
            out,
            "L2ARC {} cached ({} on device), headers {} of ARC memory",
            bytes(l2),
            arc.l2_asize().map_or_else(|| "-".into(), bytes),
            arc.l2_hdr_size().map_or_else(|| "-".into(), bytes)
        );
    }
}

fn pools(out: &mut String, snap: &Snapshot) {
    for p in &snap.pools {
        super::pool::pool_text(out, p, &snap.disks, snap.taken_at);
    }
}

/// The host's absolute figures: CPU shares and network totals since boot (rates need two
/// readings: `--interval`), memory now.
fn host(out: &mut String, snap: &Snapshot) {
    if let Some(cpu) = &snap.cpu {
        let total = cpu.total() as f64;
        let share = |n: u64| pct(zpulse_proto::counter::ratio(n as f64, total));
        let _ = writeln!(
            out,
            "CPU   since boot: busy {}, iowait {}",
            share(cpu.busy()),
            cpu.iowait.map_or_else(|| "-".into(), share)
        );
    }
    for n in snap
        .net
        .iter()
        .filter(|n| n.name != "lo" && n.name != "lo0")
    {
        let _ = writeln!(
            out,
            "NET   {} since boot: received {} ({} errors), sent {} ({} errors)",
            n.name,
            bytes(n.rx_bytes),
            n.rx_errors,
            bytes(n.tx_bytes),
            n.tx_errors
        );
    }
    if let Some(mem) = &snap.memory {
        memory_line(out, mem);
    }
}

fn memory_line(out: &mut String, mem: &zpulse_proto::snapshot::Memory) {
    let _ = writeln!(
        out,
        "MEM   {} total, {} free, {} available",
        bytes(mem.total),
        bytes(mem.free),
        mem.available.map_or_else(|| "-".into(), bytes)
    );
}

fn notes(out: &mut String, snap: &Snapshot) {
    for issue in &snap.issues {
        let _ = writeln!(out, "note: {}: {}", issue.source, issue.message);
    }
}

fn kind(rotational: Option<bool>) -> &'static str {
    match rotational {
        Some(true) => "HDD",
        Some(false) => "SSD",
        None => "?",
    }
}

fn sectors(d: &Disk) -> String {
    match (d.logical_block_size, d.physical_block_size) {
        (Some(l), Some(p)) => format!("{l}/{p}"),
        _ => "-".into(),
    }
}

fn ratio(part: Option<u64>, whole: Option<u64>) -> Option<f64> {
    zpulse_proto::counter::ratio(part? as f64, whole? as f64)
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}
