//! The report for a terminal (`--format text`): the same conclusions and the tables of the
//! page, without the charts.

use super::Baseline;
use super::compare::Comparison;
use std::fmt::Write as _;

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| "-".to_owned(), |x| format!("{x:.decimals$}"))
}

/// Control characters from a plugin or a capture never reach the terminal.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn window(out: &mut String, b: &Baseline) {
    let system = b.system();
    let _ = writeln!(
        out,
        "{}: {}, {}{}",
        clean(&b.host),
        clean(&b.span()),
        clean(&b.source),
        if system.is_empty() {
            String::new()
        } else {
            format!(" ({})", clean(&system))
        }
    );
    if !b.zfs_loaded {
        out.push_str(
            "ZFS is not loaded on this host: no ARC, no pools; disks, CPU and network only\n",
        );
    }
    if !b.plugin_problems.is_empty() {
        out.push_str("INCOMPLETE: not every check ran to the end:\n");
        for p in &b.plugin_problems {
            let _ = writeln!(out, "  {}", clean(p));
        }
    }
}

fn conclusions(out: &mut String, b: &Baseline) {
    if b.conclusions.is_empty() {
        out.push_str("  no check contributed a conclusion\n");
    }
    for s in &b.conclusions {
        let _ = writeln!(
            out,
            "  [{}] {}: {}",
            s.rating.as_str(),
            clean(&s.check),
            clean(&s.title)
        );
        let _ = writeln!(out, "      {}", clean(&s.summary));
        if let Some(a) = &s.advice {
            let _ = writeln!(out, "      advice: {}", clean(a));
        }
    }
}

/// The stretches with a verdict of their own: when, the check's title over the stretch, its
/// figures and advice.
fn phases(out: &mut String, b: &Baseline) {
    if b.phases.is_empty() {
        return;
    }
    out.push_str("\nphases\n");
    for p in &b.phases {
        let s = &p.section;
        let _ = writeln!(
            out,
            "  [{}] {}: {}",
            s.rating.as_str(),
            clean(&s.check),
            clean(&p.headline())
        );
        let _ = writeln!(out, "      {}", clean(&s.title));
        let figures: Vec<String> = s
            .figures
            .iter()
            .map(|f| {
                format!(
                    "{} {}{}",
                    clean(&f.label),
                    super::svg::short(f.value),
                    clean(&f.unit)
                )
            })
            .map(|f| f.trim_end().to_owned())
            .collect();
        if !figures.is_empty() {
            let _ = writeln!(out, "      {}", figures.join(", "));
        }
        if let Some(a) = &s.advice {
            let _ = writeln!(out, "      advice: {}", clean(a));
        }
    }
}

pub fn render(b: &Baseline) -> String {
    let mut out = String::new();
    window(&mut out, b);
    out.push_str("\nconclusions\n");
    conclusions(&mut out, b);
    phases(&mut out, b);
    out.push_str(
        "\ndisks             kind  %util  p95  >=95%    r/s    w/s  rMB/s  wMB/s r_await rareq\n",
    );
    for d in &b.disks {
        let _ = writeln!(
            out,
            "  {:<15} {:<5} {:>5.1} {:>5} {:>5} {:>6.1} {:>6.1} {:>6.2} {:>6.2} {:>7} {:>5}",
            clean(&d.name),
            d.kind,
            d.util_mean,
            opt(d.util_p95, 0),
            d.saturated_pct.map_or("-".into(), |s| format!("{s:.0}%")),
            d.r_s,
            d.w_s,
            d.read_mb_s,
            d.write_mb_s,
            opt(d.r_await_ms, 2),
            opt(d.rareq_kib, 1)
        );
    }
    if !b.classes.is_empty() {
        out.push_str("\nlatency per class   r/s    w/s  read ms  write ms\n");
    }
    for c in &b.classes {
        let _ = writeln!(
            out,
            "  {:<15} {:>6.1} {:>6.1} {:>8} {:>9}",
            clean(&c.subject),
            c.read_ops_s,
            c.write_ops_s,
            opt(c.read_total_ms, 3),
            opt(c.write_total_ms, 3)
        );
    }
    if let Some(a) = &b.arc {
        let _ = writeln!(
            out,
            "\narc: metadata {}% of the ARC, hit ratio {}%, ghost hits {}/s; L2ARC {}% of reads",
            opt(a.metadata_pct, 1),
            opt(a.hit_pct, 1),
            opt(a.ghost_hits_s, 1),
            opt(a.l2_share_of_reads_pct, 2)
        );
    }
    if let Some(z) = &b.zil {
        let _ = writeln!(
            out,
            "zil: {:.1} commits/s, {:.3} MB/s to the SLOG, {:.3} MB/s to the main pool",
            z.commits_s, z.slog_mb_s, z.normal_mb_s
        );
    }
    if !b.kernel_events.is_empty() {
        let _ = writeln!(out, "\nkernel events ({})", b.kernel_events.len());
        for e in &b.kernel_events {
            let _ = writeln!(
                out,
                "  {}  eid {:<6} {:<8} {}  {}",
                crate::report::utc(e.time),
                e.eid,
                e.severity,
                clean(&e.class),
                clean(&e.summary)
            );
        }
    }
    for n in &b.notes {
        let _ = writeln!(out, "note: {}", clean(n));
    }
    out
}

pub fn render_compare(before: &Baseline, after: &Baseline, cmp: &Comparison) -> String {
    let mut out = String::from("before: ");
    window(&mut out, before);
    out.push_str("after:  ");
    window(&mut out, after);
    out.push('\n');
    for h in &cmp.headlines {
        let _ = writeln!(out, "* {}", clean(h));
    }
    let mut group = "";
    for r in &cmp.rows {
        if r.group != group {
            group = &r.group;
            let _ = writeln!(out, "\n{group}");
        }
        let _ = writeln!(
            out,
            "  {:<52} {:>12} {:>12}  {}",
            clean(&r.what),
            r.show(r.before),
            r.show(r.after),
            r.change()
        );
    }
    out
}
