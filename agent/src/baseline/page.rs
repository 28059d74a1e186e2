//! The report as one self-contained HTML page: inline CSS and SVG, no scripts, no external
//! resources, so that it can be mailed, archived and printed. It reads top-down like an
//! administrator's own analysis: first the conclusions, each with its figures and advice,
//! then the evidence, chart by chart.

use super::compare::Comparison;
use super::svg::{self, Line, escape};
use super::{Baseline, DiskFigures};
use crate::report::utc;
use std::fmt::Write as _;

const STYLE: &str = r#"
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:12px;color:#1b1b1b;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;border-bottom:2px solid #ddd;margin-top:1.6em}h3{font-size:1.05em;margin:1em 0 .3em}
.meta{color:#555}.card{border:1px solid #ccc;border-left:6px solid #999;border-radius:4px;padding:8px 12px;margin:10px 0;break-inside:avoid}
.card.critical{border-left-color:#b00020}.card.warning{border-left-color:#d55e00}.card.info{border-left-color:#0072b2}.card.ok{border-left-color:#009e73}
.badge{display:inline-block;font-size:.75em;font-weight:700;text-transform:uppercase;padding:1px 6px;border-radius:3px;color:#fff;background:#777;margin-right:6px}
.critical .badge{background:#b00020}.warning .badge{background:#d55e00}.info .badge{background:#0072b2}.ok .badge{background:#009e73}
.figs{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.85em;color:#333;margin:4px 0}.figs b{color:#000}
table.overview td:last-child,table.overview th:last-child{text-align:left;white-space:normal}
td.text{text-align:left;white-space:normal;min-width:20em}
.advice{background:#f6f6f6;padding:4px 8px;border-radius:3px}.who{color:#666;font-size:.85em}
table{border-collapse:collapse;margin:6px 0;font-size:.9em;display:block;overflow-x:auto}th,td{padding:3px 8px;border-bottom:1px solid #e4e4e4;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3;white-space:normal;vertical-align:bottom}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(360px,100%),1fr));gap:8px}
figure.chart{margin:0}figure.chart svg{width:100%;height:auto}
.ct{font-weight:700;font-size:12px}.yl{font-size:10px;text-anchor:end}.xl{font-size:10px;text-anchor:middle}.lg{font-size:10px}.unit{font-size:10px;text-anchor:middle}.bl{font-size:10px;text-anchor:middle}
.grid{stroke:#e6e6e6;stroke-width:1}.bar{fill:#56b4e9}.bar.hot{fill:#d55e00}
.better{color:#00784a;font-weight:700}.worse{color:#b00020;font-weight:700}
@media print{body{max-width:none}table{font-size:.75em}th,td{padding:2px 4px;white-space:normal}td.text{min-width:14em}.charts{grid-template-columns:1fr}figure.chart{max-width:540px}.card,figure.chart{break-inside:avoid}h2{break-after:avoid}}
"#;

fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body>",
        escape(title)
    );
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| "–".to_owned(), |x| format!("{x:.decimals$}"))
}

fn bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_owned(), crate::report::units::bytes)
}

fn window_line(b: &Baseline) -> String {
    let system = b.system();
    format!(
        "{}{} · {}",
        escape(&b.span()),
        if system.is_empty() {
            String::new()
        } else {
            format!(" · {}", escape(&system))
        },
        escape(&b.source)
    )
}

/// A check's words on the page: escaped, and what it put between backticks (a command, a
/// tunable) set as code, as in markdown. An unpaired backtick stays as it is.
fn prose(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut out = String::with_capacity(text.len());
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if i % 2 == 1 && !last {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            if i % 2 == 1 {
                out.push('`');
            }
            out.push_str(&escape(part));
        }
    }
    out
}

/// The checks that did not run to the end: first on the page, as the conclusions below
/// are incomplete.
fn plugin_problems(out: &mut String, b: &Baseline) {
    if b.plugin_problems.is_empty() {
        return;
    }
    out.push_str(
        "<div class=\"card critical\"><div><span class=\"badge\">incomplete</span><strong>\
         Not every check ran to the end: the conclusions below are incomplete</strong></div><ul>",
    );
    for p in &b.plugin_problems {
        let _ = write!(out, "<li>{}</li>", escape(p));
    }
    out.push_str("</ul></div>");
}

/// `1 h 05 min`, `4 min 10 s`.
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// The page of one window.
pub fn render(b: &Baseline) -> String {
    let mut out = String::new();
    head(&mut out, &format!("zpulse report: {}", b.host));
    let _ = write!(
        out,
        "<h1>zpulse report: {}</h1><p class=\"meta\">{}</p>",
        escape(&b.host),
        window_line(b)
    );
    if !b.zfs_loaded {
        out.push_str(
            "<p class=\"nozfs\"><strong>ZFS is not loaded on this host</strong>: no ARC, no \
             pools; the report covers its disks, CPU and network.</p>",
        );
    }
    plugin_problems(&mut out, b);
    conclusions(&mut out, b);
    out.push_str(&super::phases::html(&b.phases));
    evidence(&mut out, b);
    findings(&mut out, b);
    kernel_events(&mut out, b);
    notes(&mut out, b);
    out.push_str("</body></html>\n");
    out
}

fn conclusions(out: &mut String, b: &Baseline) {
    out.push_str("<h2>Conclusions</h2>");
    if b.conclusions.is_empty() {
        out.push_str(
            "<p>No check contributed a conclusion (no plugins loaded, or none has a report: \
             see <code>zpulse plugins</code>).</p>",
        );
    }
    if !b.conclusions.is_empty() {
        out.push_str(
            "<table class=\"overview\"><tr><th>rating</th><th>check</th><th>conclusion</th></tr>",
        );
        for s in &b.conclusions {
            let _ = write!(
                out,
                "<tr class=\"{r}\"><td><span class=\"badge\">{r}</span></td><td>{}</td><td>{}</td></tr>",
                escape(&s.check),
                prose(&s.title),
                r = s.rating.as_str()
            );
        }
        out.push_str("</table>");
    }
    for s in &b.conclusions {
        let r = s.rating.as_str();
        let _ = write!(
            out,
            "<div class=\"card {r}\"><div><span class=\"badge\">{r}</span><strong>{}</strong></div><p>{}</p>",
            prose(&s.title),
            prose(&s.summary)
        );
        if let Some(a) = &s.advice {
            let _ = write!(
                out,
                "<p class=\"advice\"><strong>Advice:</strong> {}</p>",
                prose(a)
            );
        }
        if !s.figures.is_empty() {
            out.push_str("<div class=\"figs\">");
            for f in &s.figures {
                let _ = write!(
                    out,
                    "<span><b>{}&#8239;{}</b> {}</span>",
                    svg::short(f.value),
                    escape(&f.unit),
                    escape(&f.label)
                );
            }
            out.push_str("</div>");
        }
        let _ = write!(
            out,
            "<div class=\"who\">{}{}</div></div>",
            escape(&s.check),
            s.subject
                .as_ref()
                .map(|x| format!(" · {}", escape(x)))
                .unwrap_or_default()
        );
    }
}

fn findings(out: &mut String, b: &Baseline) {
    if b.findings.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Findings raised during the window</h2><p>What the checks' alerting said as the \
         samples went by (their thresholds and windows, as <code>zpulse run</code> applies \
         them).</p><table><tr><th>time</th><th>check</th><th>severity</th><th>state</th><th>subject</th><th>summary</th></tr>",
    );
    for f in &b.findings {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            utc(f.time),
            escape(&f.check),
            escape(&f.severity),
            escape(&f.state),
            escape(&f.subject),
            escape(&f.summary)
        );
    }
    out.push_str("</table>");
}

fn kernel_events(out: &mut String, b: &Baseline) {
    if b.kernel_events.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h2>Kernel events during the window ({})</h2><p>What the kernel posted \
         (<code>zpool events</code>), between the samples.</p><table><tr><th>time</th>\
         <th>eid</th><th>class</th><th>severity</th><th>subject</th><th>summary</th></tr>",
        b.kernel_events.len()
    );
    for e in &b.kernel_events {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            utc(e.time),
            e.eid,
            escape(&e.class),
            escape(&e.severity),
            escape(&e.subject),
            escape(&e.summary)
        );
    }
    out.push_str("</table>");
}

fn disk_table(out: &mut String, disks: &[DiskFigures]) {
    out.push_str(
        "<table><tr><th>disk</th><th>kind</th><th>in</th><th>%util mean</th><th>p95</th>\
         <th>≥95%</th><th>r/s</th><th>w/s</th><th>rMB/s</th><th>wMB/s</th><th>r_await ms</th>\
         <th>w_await ms</th><th>rareq KiB</th><th>wareq KiB</th></tr>",
    );
    for d in disks {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&d.name),
            escape(&d.kind),
            escape(d.role.as_deref().unwrap_or("–")),
            d.util_mean,
            opt(d.util_p95, 1),
            d.saturated_pct.map_or("–".into(), |s| format!("{s:.0}%")),
            d.r_s,
            d.w_s,
            d.read_mb_s,
            d.write_mb_s,
            opt(d.r_await_ms, 2),
            opt(d.w_await_ms, 2),
            opt(d.rareq_kib, 1),
            opt(d.wareq_kib, 1)
        );
    }
    out.push_str("</table>");
}

fn evidence(out: &mut String, b: &Baseline) {
    let s = &b.series;
    let t = &s.t;
    out.push_str(
        "<h2>Disks</h2><p>Means over the window (MB = 10<sup>6</sup> bytes); the \
                  %util distribution from every interval.</p>",
    );
    disk_table(out, &b.disks);
    out.push_str("<div class=\"charts\">");
    for (kind, label) in [("hdd", "HDD"), ("ssd", "SSD"), ("unknown", "other")] {
        let of: Vec<_> = s.disks.iter().filter(|d| d.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let lines = |f: fn(&super::series::DiskSeries) -> &Vec<Option<f64>>| {
            of.iter()
                .map(|d| Line {
                    label: d.name.clone(),
                    values: f(d),
                })
                .collect::<Vec<_>>()
        };
        out.push_str(&svg::lines(
            b.series.start,
            &format!("{label} %util"),
            "%",
            t,
            &lines(|d| &d.util),
            Some(100.0),
        ));
        out.push_str(&svg::lines(
            b.series.start,
            &format!("{label} await"),
            "ms",
            t,
            &lines(|d| &d.await_ms),
            None,
        ));
        out.push_str(&svg::lines(
            b.series.start,
            &format!("{label} reads/s"),
            "r/s",
            t,
            &lines(|d| &d.r_s),
            None,
        ));
        out.push_str(&svg::lines(
            b.series.start,
            &format!("{label} writes/s"),
            "w/s",
            t,
            &lines(|d| &d.w_s),
            None,
        ));
        out.push_str(&svg::lines(
            b.series.start,
            &format!("{label} MB/s (read + write)"),
            "MB/s",
            t,
            &lines(|d| &d.mb_s),
            None,
        ));
    }
    // The buckets' edges, 0 to 100.
    let labels: Vec<String> = (0..=10).map(|i| format!("{}", i * 10)).collect();
    for d in b
        .disks
        .iter()
        .filter(|d| d.util_histogram.iter().any(|c| *c > 0))
    {
        out.push_str(&svg::bars(
            &format!(
                "{} ({}): %util distribution, {} at ≥95%",
                d.name,
                d.kind,
                d.saturated_pct.map_or("–".into(), |s| format!("{s:.0}%"))
            ),
            &labels,
            &d.util_histogram,
            9,
        ));
    }
    out.push_str("</div>");

    if let Some(a) = &b.arc {
        out.push_str("<h2>ARC and L2ARC</h2><table><tr><th>figure</th><th>value</th></tr>");
        let rows: [(&str, String); 13] = [
            (
                "size / target / max",
                format!("{} / {} / {}", bytes(a.size), bytes(a.target), bytes(a.max)),
            ),
            (
                "data / metadata",
                format!("{} / {}", bytes(a.data_size), bytes(a.metadata_size)),
            ),
            (
                "metadata share (mean)",
                format!("{}%", opt(a.metadata_pct, 1)),
            ),
            ("reads/s", format!("{:.0}", a.reads_s)),
            ("hit ratio", format!("{}%", opt(a.hit_pct, 1))),
            (
                "demand metadata hit ratio",
                format!("{}%", opt(a.demand_metadata_hit_pct, 1)),
            ),
            (
                "demand data hit ratio",
                format!("{}%", opt(a.demand_data_hit_pct, 1)),
            ),
            (
                "ghost hits/s (a larger ARC would have served)",
                opt(a.ghost_hits_s, 1),
            ),
            ("L2ARC hits/s", opt(a.l2_hits_s, 2)),
            (
                "L2ARC share of all reads",
                format!("{}%", opt(a.l2_share_of_reads_pct, 2)),
            ),
            (
                "L2ARC hit ratio of ARC misses",
                format!("{}%", opt(a.l2_hit_pct, 1)),
            ),
            ("L2ARC size", bytes(a.l2_size)),
            ("L2ARC headers in ARC", bytes(a.l2_hdr_size)),
        ];
        for (k, v) in rows {
            let _ = write!(out, "<tr><td>{k}</td><td>{v}</td></tr>");
        }
        out.push_str("</table><div class=\"charts\">");
        let arc = &s.arc;
        let l = |label: &str, values| Line {
            label: label.into(),
            values,
        };
        out.push_str(&svg::lines(
            b.series.start,
            "ARC size vs target and max",
            "bytes",
            t,
            &[
                l("size", &arc.size),
                l("target (c)", &arc.target),
                l("c_max", &arc.max),
            ],
            None,
        ));
        out.push_str(&svg::lines(
            b.series.start,
            "ARC data vs metadata",
            "bytes",
            t,
            &[l("data", &arc.data), l("metadata", &arc.metadata)],
            None,
        ));
        out.push_str(&svg::lines(
            b.series.start,
            "ARC hit ratio",
            "%",
            t,
            &[l("hits", &arc.hit_pct)],
            Some(100.0),
        ));
        out.push_str(&svg::lines(
            b.series.start,
            "ARC ghost hits",
            "/s",
            t,
            &[l("MRU+MFU ghost hits", &arc.ghost_hits_s)],
            None,
        ));
        if a.l2_size.is_some() {
            out.push_str(&svg::lines(
                b.series.start,
                "L2ARC hits vs ARC reads",
                "/s",
                t,
                &[
                    l("ARC reads", &arc.reads_s),
                    l("L2ARC hits", &arc.l2_hits_s),
                ],
                None,
            ));
            out.push_str(&svg::lines(
                b.series.start,
                "L2ARC header RAM",
                "bytes",
                t,
                &[l("l2_hdr_size", &arc.l2_hdr)],
                None,
            ));
        }
        out.push_str("</div>");
    }

    if let Some(z) = &b.zil {
        out.push_str("<h2>ZIL and SLOG</h2><table><tr><th>commits/s</th><th>itx/s</th><th>itx MB/s</th><th>to SLOG MB/s</th><th>to main pool MB/s</th><th>SLOG share</th></tr>");
        let _ = write!(
            out,
            "<tr><td>{:.1}</td><td>{:.1}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}%</td></tr></table><div class=\"charts\">",
            z.commits_s,
            z.itx_s,
            z.itx_mb_s,
            z.slog_mb_s,
            z.normal_mb_s,
            opt(z.slog_pct, 1)
        );
        let zs = &s.zil;
        let l = |label: &str, values| Line {
            label: label.into(),
            values,
        };
        out.push_str(&svg::lines(
            b.series.start,
            "ZIL commits and itx",
            "/s",
            t,
            &[l("commits", &zs.commits_s), l("itx", &zs.itx_s)],
            None,
        ));
        out.push_str(&svg::lines(
            b.series.start,
            "Log blocks: SLOG vs main pool",
            "MB/s",
            t,
            &[l("SLOG", &zs.slog_mb_s), l("main pool", &zs.normal_mb_s)],
            None,
        ));
        let slogs: Vec<Line> = b
            .disks
            .iter()
            .filter(|d| {
                d.role
                    .as_deref()
                    .is_some_and(|r| r.split('/').nth(1) == Some("log"))
            })
            .filter_map(|d| s.disks.iter().find(|x| x.name == d.name))
            .map(|x| Line {
                label: x.name.clone(),
                values: &x.util,
            })
            .collect();
        if !slogs.is_empty() {
            out.push_str(&svg::lines(
                b.series.start,
                "SLOG %util",
                "%",
                t,
                &slogs,
                Some(100.0),
            ));
        }
        out.push_str("</div>");
    }

    if b.zfs_loaded {
        pools(out, b);
    }
    host(out, b);
}

/// Per-class and per-vdev latency, and the pools' fill: only on a host with ZFS.
fn pools(out: &mut String, b: &Baseline) {
    let s = &b.series;
    let t = &s.t;
    out.push_str(
        "<h2>Pool latency per class and vdev</h2><p>From the kernel's latency histograms over \
         the whole window (<code>zpool iostat -l</code>): total is queue plus device, disk is \
         the device alone.</p><table><tr><th>class / vdev</th><th>r/s</th><th>w/s</th>\
         <th>rMB/s</th><th>wMB/s</th><th>read ms</th><th>read disk ms</th><th>write ms</th><th>write disk ms</th></tr>",
    );
    for v in b.classes.iter().chain(b.vdevs.iter()) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&v.subject),
            v.read_ops_s,
            v.write_ops_s,
            v.read_mb_s,
            v.write_mb_s,
            opt(v.read_total_ms, 3),
            opt(v.read_disk_ms, 3),
            opt(v.write_total_ms, 3),
            opt(v.write_disk_ms, 3)
        );
    }
    out.push_str("</table><div class=\"charts\">");
    let reads: Vec<Line> = s
        .classes
        .iter()
        .map(|c| Line {
            label: c.name.clone(),
            values: &c.read_ms,
        })
        .collect();
    let writes: Vec<Line> = s
        .classes
        .iter()
        .map(|c| Line {
            label: c.name.clone(),
            values: &c.write_ms,
        })
        .collect();
    let rdisk: Vec<Line> = s
        .classes
        .iter()
        .map(|c| Line {
            label: c.name.clone(),
            values: &c.read_disk_ms,
        })
        .collect();
    let wdisk: Vec<Line> = s
        .classes
        .iter()
        .map(|c| Line {
            label: c.name.clone(),
            values: &c.write_disk_ms,
        })
        .collect();
    out.push_str(&svg::lines(
        b.series.start,
        "Read latency per class (total)",
        "ms",
        t,
        &reads,
        None,
    ));
    out.push_str(&svg::lines(
        b.series.start,
        "Read latency per class (disk)",
        "ms",
        t,
        &rdisk,
        None,
    ));
    out.push_str(&svg::lines(
        b.series.start,
        "Write latency per class (total)",
        "ms",
        t,
        &writes,
        None,
    ));
    out.push_str(&svg::lines(
        b.series.start,
        "Write latency per class (disk)",
        "ms",
        t,
        &wdisk,
        None,
    ));
    out.push_str("</div>");

    out.push_str("<h2>Pools</h2><table><tr><th>pool</th><th>state</th><th>size</th><th>allocated</th><th>fill</th><th>per class (allocated / size)</th></tr>");
    for p in &b.pools {
        let classes: Vec<String> = p
            .classes
            .iter()
            .map(|(c, a, sz)| format!("{c}: {} / {}", bytes(Some(*a)), bytes(Some(*sz))))
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}%</td><td style=\"text-align:left\">{}</td></tr>",
            escape(&p.name),
            escape(p.state.as_deref().unwrap_or("–")),
            bytes(p.size),
            bytes(p.alloc),
            opt(p.fill_pct, 1),
            escape(&classes.join(", "))
        );
    }
    out.push_str("</table><div class=\"charts\">");
    let fills: Vec<Line> = s
        .pools
        .iter()
        .map(|p| Line {
            label: p.name.clone(),
            values: &p.values,
        })
        .collect();
    out.push_str(&svg::lines(
        b.series.start,
        "Pool fill",
        "%",
        t,
        &fills,
        Some(100.0),
    ));
    out.push_str("</div>");
}

/// The host's CPU and network, under their own heading.
fn host(out: &mut String, b: &Baseline) {
    let s = &b.series;
    let t = &s.t;
    out.push_str("<h2>Host</h2><div class=\"charts\">");
    out.push_str(&svg::lines(
        b.series.start,
        "CPU busy",
        "%",
        t,
        &[Line {
            label: "all CPUs".into(),
            values: &s.cpu_busy_pct,
        }],
        Some(100.0),
    ));
    let nets: Vec<Line> = s
        .net
        .iter()
        .map(|n| Line {
            label: n.name.clone(),
            values: &n.values,
        })
        .collect();
    if !nets.is_empty() {
        out.push_str(&svg::lines(
            b.series.start,
            "Network (received + sent)",
            "MB/s",
            t,
            &nets,
            None,
        ));
    }
    out.push_str("</div>");
    if let Some(c) = b.cpu_busy_pct {
        let _ = write!(out, "<p>CPU busy on average: {c:.1}%.</p>");
    }
}

fn notes(out: &mut String, b: &Baseline) {
    if b.notes.is_empty() {
        return;
    }
    out.push_str("<h2>Notes</h2><ul>");
    for n in &b.notes {
        let _ = write!(out, "<li>{}</li>", escape(n));
    }
    out.push_str("</ul>");
}

/// The page of two windows side by side: the changes first, then each window's conclusions.
pub fn render_compare(before: &Baseline, after: &Baseline, cmp: &Comparison) -> String {
    let mut out = String::new();
    head(
        &mut out,
        &format!("zpulse report: {} before and after", after.host),
    );
    let _ = write!(
        out,
        "<h1>zpulse report: before and after</h1><p class=\"meta\"><strong>Before:</strong> {} \
         {}<br><strong>After:</strong> {} {}</p>",
        escape(&before.host),
        window_line(before),
        escape(&after.host),
        window_line(after)
    );
    out.push_str("<h2>What changed</h2>");
    for h in &cmp.headlines {
        let _ = write!(
            out,
            "<div class=\"card info\"><strong>{}</strong></div>",
            escape(h)
        );
    }
    let mut group = "";
    for row in &cmp.rows {
        if row.group != group {
            if !group.is_empty() {
                out.push_str("</table>");
            }
            group = &row.group;
            let _ = write!(
                out,
                "<h3>{}</h3><table><tr><th>what</th><th>before</th><th>after</th><th>change</th></tr>",
                escape(group)
            );
        }
        let class = match row.better() {
            Some(true) => " class=\"better\"",
            Some(false) => " class=\"worse\"",
            None => "",
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td{class}>{}</td></tr>",
            escape(&row.what),
            row.show(row.before),
            row.show(row.after),
            escape(&row.change())
        );
    }
    if !group.is_empty() {
        out.push_str("</table>");
    }
    for (label, b) in [("Before", before), ("After", after)] {
        let _ = write!(out, "<h2>{label}: conclusions</h2>");
        let mut part = String::new();
        conclusions(&mut part, b);
        // Drop the inner heading: this page has its own.
        out.push_str(part.trim_start_matches("<h2>Conclusions</h2>"));
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zpulse_proto::report::{Rating, Section};

    #[test]
    fn backticks_in_a_title_are_code_in_the_overview_and_the_card() {
        let b = Baseline {
            conclusions: vec![Section::new(
                Rating::Warning,
                "arc: raise `zfs_arc_max` <now>",
                "the `arc` is `capped",
            )],
            ..Baseline::default()
        };
        let page = render(&b);
        let overview = &page[page.find("<table class=\"overview\">").unwrap()..];
        let overview = &overview[..overview.find("</table>").unwrap()];
        assert!(
            overview.contains("<td>arc: raise <code>zfs_arc_max</code> &lt;now&gt;</td>"),
            "{overview}"
        );
        assert!(!overview.contains('`'), "{overview}");
        assert!(page.contains("<strong>arc: raise <code>zfs_arc_max</code> &lt;now&gt;</strong>"));
        // An unpaired backtick stays as written.
        assert!(page.contains("the <code>arc</code> is `capped"), "{page}");
    }
}
