//! Pools in the text report: the vdev tree as `zpool list -v` lays it out, with the
//! `zpool iostat -l` columns when there are rates; allocation classes are section headings.

use super::units::{bytes, pct};
use std::fmt::Write;
use zpulse_proto::sample::VdevRates;
use zpulse_proto::snapshot::{Disk, Pool, PoolConfig, Redundancy, Vdev, VdevClass};

/// Section order of `zpool status`.
const SECTIONS: [(VdevClass, &str); 6] = [
    (VdevClass::Normal, ""),
    (VdevClass::Dedup, "dedup"),
    (VdevClass::Special, "special"),
    (VdevClass::Log, "logs"),
    (VdevClass::Cache, "cache"),
    (VdevClass::Spare, "spares"),
];

/// A pool as `zpool status` and `zpool list -v` describe it together: health, the scan line
/// in zpool's words, per vdev its space, state, READ/WRITE/CKSUM errors (and SLOW I/Os when
/// any vdev has some), redundancy and disk, then the pool's data-error count. `now` is the
/// snapshot's time (a running scan's rates are as of then).
pub fn pool_text(out: &mut String, pool: &Pool, disks: &[Disk], now: f64) {
    let Some(cfg) = &pool.config else {
        let _ = writeln!(
            out,
            "POOL  {} {} ({} datasets mounted)",
            pool.name,
            pool.state.as_deref().unwrap_or("-"),
            pool.datasets.len()
        );
        return;
    };
    let root = cfg.root.stats.as_ref();
    let _ = writeln!(
        out,
        "POOL  {} {}: {} allocated of {} ({})",
        pool.name,
        cfg.health,
        root.map_or_else(|| "-".into(), |s| bytes(s.alloc)),
        root.map_or_else(|| "-".into(), |s| bytes(s.space)),
        pct(root.and_then(|s| zpulse_proto::counter::ratio(s.alloc as f64, s.space as f64))),
    );
    if let Some(scan) = &cfg.scan {
        let lines = zpulse_proto::sdk::text::scan_status(scan, now.max(0.0) as u64);
        for (i, line) in lines.iter().enumerate() {
            let lead = if i == 0 { "scan: " } else { "      " };
            let _ = writeln!(out, "      {lead}{line}");
        }
    }
    let slow = cfg
        .root
        .walk()
        .iter()
        .any(|v| v.stats.as_ref().and_then(|s| s.slow_ios).unwrap_or(0) > 0);
    let _ = writeln!(
        out,
        "      {:<18} {:>10} {:>10} {:>10} {:>5} {:<9} {:>5} {:>5} {:>5}{} {:<14} disk",
        "vdev",
        "size",
        "alloc",
        "free",
        "frag",
        "health",
        "READ",
        "WRITE",
        "CKSUM",
        if slow { "  SLOW" } else { "" },
        "redundancy"
    );
    let _ = writeln!(
        out,
        "    {:<20} {:>10} {:>10} {:>10} {:>5} {:<9}{}",
        format!("  {}", pool.name),
        "",
        "",
        "",
        "",
        cfg.health,
        error_columns(&cfg.root, slow)
    );
    tree_rows(out, cfg, |out, v, depth| {
        space_row(out, v, depth, disks, slow)
    });
    let _ = match cfg.error_count {
        Some(0) | None => writeln!(out, "      errors: No known data errors"),
        Some(n) => writeln!(
            out,
            "      errors: {n} data errors (the kernel's approximate count): data has been \
             lost; `zpool status -v {}` lists the files",
            pool.name
        ),
    };
}

/// READ, WRITE, CKSUM (and SLOW) of a vdev; spares have none, as in `zpool status`.
fn error_columns(v: &Vdev, slow: bool) -> String {
    match &v.stats {
        Some(s) if v.class != Some(VdevClass::Spare) => {
            let mut cols = format!(
                " {:>5} {:>5} {:>5}",
                s.read_errors, s.write_errors, s.checksum_errors
            );
            if slow {
                cols.push_str(&format!(" {:>5}", s.slow_ios.unwrap_or(0)));
            }
            cols
        }
        _ => format!(
            " {:>5} {:>5} {:>5}{}",
            "",
            "",
            "",
            if slow { "      " } else { "" }
        ),
    }
}

fn space_row(out: &mut String, v: &Vdev, depth: usize, disks: &[Disk], slow: bool) {
    let name = format!("{}{}", "  ".repeat(depth + 1), v.name);
    let (size, alloc, free, frag) = match &v.stats {
        Some(s) if s.space > 0 => (
            bytes(s.space),
            bytes(s.alloc),
            bytes(s.space.saturating_sub(s.alloc)),
            s.fragmentation
                .map_or_else(|| "-".into(), |f| format!("{f}%")),
        ),
        _ => ("-".into(), "-".into(), "-".into(), "-".into()),
    };
    let _ = writeln!(
        out,
        "    {:<20} {:>10} {:>10} {:>10} {:>5} {:<9}{} {:<14} {}",
        name,
        size,
        alloc,
        free,
        frag,
        v.state.as_deref().unwrap_or("-"),
        error_columns(v, slow),
        v.redundancy.map(redundancy_text).unwrap_or_default(),
        disk_text(v, disks)
    );
}

/// A pool's vdevs with their rates (`zpool iostat -vl` columns, latencies in ms).
pub fn pool_rates_text(out: &mut String, pool: &Pool, rates: &[VdevRates], disks: &[Disk]) {
    let Some(cfg) = &pool.config else {
        return;
    };
    let _ = writeln!(
        out,
        "      {:<18} {:>8} {:>8} {:>9} {:>9} {:>17} {:>17} disk",
        "vdev", "r/s", "w/s", "rMB/s", "wMB/s", "total_wait r/w ms", "disk_wait r/w ms"
    );
    let find = |v: &Vdev| {
        rates
            .iter()
            .find(|r| r.name == v.name && r.class == v.class)
    };
    if let Some(r) = rates.first() {
        rate_row(out, &pool.name, 0, r, "");
    }
    tree_rows(out, cfg, |out, v, depth| {
        if let Some(r) = find(v) {
            rate_row(out, &v.name, depth + 1, r, &disk_text(v, disks));
        }
    });
}

fn rate_row(out: &mut String, name: &str, depth: usize, r: &VdevRates, disk: &str) {
    let ms = |ns: Option<u64>| ns.map_or_else(|| "-".into(), |n| format!("{:.2}", n as f64 / 1e6));
    let _ = writeln!(
        out,
        "    {:<20} {:>8.1} {:>8.1} {:>9.2} {:>9.2} {:>17} {:>17} {}",
        format!("{}{}", "  ".repeat(depth + 1), name),
        r.read_ops_per_s,
        r.write_ops_per_s,
        r.read_bytes_per_s / 1_048_576.0,
        r.write_bytes_per_s / 1_048_576.0,
        format!("{}/{}", ms(r.total_wait_r), ms(r.total_wait_w)),
        format!("{}/{}", ms(r.disk_wait_r), ms(r.disk_wait_w)),
        disk
    );
}

/// The vdev tree in `zpool status` order: each class of [`SECTIONS`] that the pool has, under
/// its heading, and each of its top-level vdevs depth first; `row` writes one vdev at its
/// depth below its top-level vdev.
fn tree_rows(out: &mut String, cfg: &PoolConfig, mut row: impl FnMut(&mut String, &Vdev, usize)) {
    for (class, heading) in SECTIONS {
        let tops: Vec<&Vdev> = cfg.class(class).collect();
        if tops.is_empty() {
            continue;
        }
        if !heading.is_empty() {
            let _ = writeln!(out, "      {heading}");
        }
        for top in tops {
            for (depth, v) in with_depth(top) {
                row(out, v, depth);
            }
        }
    }
}

fn with_depth(top: &Vdev) -> Vec<(usize, &Vdev)> {
    let mut out = Vec::new();
    let mut stack = vec![(0usize, top)];
    while let Some((d, v)) = stack.pop() {
        out.push((d, v));
        stack.extend(v.children.iter().rev().map(|c| (d + 1, c)));
    }
    out
}

fn redundancy_text(r: Redundancy) -> String {
    match r {
        Redundancy::None => "none".into(),
        Redundancy::Mirror { width } => format!("{width}-way mirror"),
        Redundancy::Parity { parity } => format!("parity {parity}"),
    }
}

fn disk_text(v: &Vdev, disks: &[Disk]) -> String {
    let Some(name) = &v.disk else {
        return if v.vdev_type == "file" {
            "(file)".into()
        } else {
            String::new()
        };
    };
    let kind = match disks
        .iter()
        .find(|d| &d.name == name)
        .and_then(|d| d.rotational)
    {
        Some(true) => " HDD",
        Some(false) => " SSD",
        None => "",
    };
    format!("{name}{kind}")
}
