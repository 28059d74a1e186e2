//! The host page's charts of the time series ([`crate::timeseries`]): one inline SVG line
//! chart per figure group (pool fill, ARC size, ARC hit ratio, disk util and await, vdev
//! latency by class), no scripts and nothing loaded from elsewhere.

use crate::http::esc;
use crate::query::utc;
use crate::store::Store;
use crate::timeseries::{FIGURES, Unit};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The window the host page draws.
pub const WINDOW_S: i64 = 86_400;
/// Lines per chart, at most: the busiest (highest mean over the window).
const MAX_LINES: usize = 8;

const COLORS: [&str; 12] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939",
];

/// The charts of `host` over the [`WINDOW_S`] up to its latest metric record (a host that
/// went silent shows its last day, with the dates on the axis), or `None` when it never sent
/// one (older agents, or `metrics = false`).
pub fn section(store: &Store, host: &str, now: i64) -> Result<Option<String>, String> {
    let Some(end) = store.series_latest(host)? else {
        return Ok(None);
    };
    let end = end.min(now);
    let points = store.series_points(host, end - WINDOW_S, end)?;
    if points.is_empty() {
        return Ok(None);
    }
    Ok(Some(render(host, &points, end - WINDOW_S, end)))
}

/// The charts of one host's points (figure → (time s, value)), from `t0` to `t1`.
pub fn render(host: &str, points: &BTreeMap<String, Vec<(i64, f64)>>, t0: i64, t1: i64) -> String {
    let mut out = String::new();
    for f in FIGURES {
        let mut lines: Vec<(&str, &[(i64, f64)])> = points
            .iter()
            .filter(|(name, _)| {
                name.as_str() == f.prefix
                    || name
                        .strip_prefix(f.prefix)
                        .is_some_and(|rest| rest.starts_with(':'))
            })
            .map(|(name, p)| {
                let label = name
                    .strip_prefix(f.prefix)
                    .and_then(|r| r.strip_prefix(':'))
                    .unwrap_or(name);
                (label, p.as_slice())
            })
            .collect();
        // The busiest (highest mean) lines, then by name.
        let mean = |p: &[(i64, f64)]| p.iter().map(|x| x.1).sum::<f64>() / p.len() as f64;
        lines.sort_by(|a, b| mean(b.1).total_cmp(&mean(a.1)).then(a.0.cmp(b.0)));
        lines.truncate(MAX_LINES);
        lines.sort_by(|a, b| a.0.cmp(b.0));
        if !lines.is_empty() {
            chart(&mut out, host, f.prefix, f.title, f.unit, &lines, t0, t1);
        }
    }
    out
}

fn format_value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Ratio => format!("{:.0}%", v * 100.0),
        Unit::Seconds if v < 1e-3 => format!("{:.0} µs", v * 1e6),
        Unit::Seconds => format!("{:.1} ms", v * 1e3),
        Unit::Bytes => {
            let gib = v / f64::from(1u32 << 30);
            if gib >= 1.0 {
                format!("{gib:.1} GiB")
            } else {
                format!("{:.0} MiB", v / f64::from(1u32 << 20))
            }
        }
    }
}

/// One chart of `lines` (name → (time s, value)) from `t0` to `t1`, its `<h3>` title, the
/// SVG and its legend, appended to `out`; `id` names the chart for tests and styles.
#[allow(clippy::too_many_arguments)]
pub(crate) fn chart(
    out: &mut String,
    host: &str,
    id: &str,
    title: &str,
    unit: Unit,
    lines: &[(&str, &[(i64, f64)])],
    t0: i64,
    t1: i64,
) {
    let (w, h, left, right, top, bottom) = (720.0, 160.0, 64.0, 10.0, 10.0, 24.0);
    let vmax = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(if unit == Unit::Ratio { 1.0 } else { 0.0 }, f64::max);
    let vmax = if vmax > 0.0 { vmax } else { 1.0 };
    let span = (t1 - t0).max(1) as f64;
    let x = |t: i64| left + (t - t0) as f64 / span * (w - left - right);
    let y = |v: f64| top + (1.0 - v.max(0.0) / vmax) * (h - top - bottom);
    let _ = writeln!(out, "<h3>{}</h3>", esc(title));
    let _ = write!(
        out,
        "<svg class=\"chart\" data-figure=\"{id}\" data-host=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\"><title>{} — {}</title>",
        esc(host),
        esc(host),
        esc(title)
    );
    for frac in [0.0, 0.5, 1.0] {
        let v = vmax * frac;
        let yy = y(v);
        let _ = write!(
            out,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            w - right,
            left - 4.0,
            yy + 3.0,
            format_value(unit, v)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{left}\" y=\"{}\" font-size=\"10\">{}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
        h - 6.0,
        utc(t0),
        w - right,
        h - 6.0,
        utc(t1)
    );
    for (i, (name, points)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        // A gap of more than 5 minutes breaks the line: no point is invented.
        let mut d = String::new();
        let mut prev: Option<i64> = None;
        for &(t, v) in points.iter() {
            let cmd = if prev.is_some_and(|p| t - p <= 300) {
                'L'
            } else {
                'M'
            };
            let _ = write!(d, "{cmd}{:.1},{:.1} ", x(t), y(v));
            if cmd == 'M' {
                // A lone point still shows (as a dot, with the round cap).
                d.push_str("h0.1 ");
            }
            prev = Some(t);
        }
        let _ = write!(
            out,
            "<path class=\"series\" data-name=\"{}\" d=\"{}\" fill=\"none\" stroke=\"{color}\" \
             stroke-width=\"1.5\" stroke-linecap=\"round\"><title>{}</title></path>",
            esc(name),
            d.trim_end(),
            esc(name)
        );
    }
    out.push_str("</svg>\n<ul class=\"legend\">");
    for (i, (name, points)) in lines.iter().enumerate() {
        let last = points.last().map_or(0.0, |p| p.1);
        let _ = write!(
            out,
            "<li><span style=\"color:{}\">■</span> {} — latest {}</li>",
            COLORS[i % COLORS.len()],
            esc(name),
            format_value(unit, last)
        );
    }
    out.push_str("</ul>\n");
}
