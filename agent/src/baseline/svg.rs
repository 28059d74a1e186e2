//! Inline SVG charts for the report page: no scripts, no external resources, readable when
//! printed in black and white (every line also has a dash pattern) and on a phone. The
//! viewBox is about a phone's width ([`W`] user units), so text set at 10 units is about 10
//! px on a 390 px phone, and larger where the chart is drawn wider.

use std::fmt::Write as _;

/// Eight colours distinguishable with the common colour-vision deficiencies (Okabe–Ito),
/// each with its own dash pattern for paper.
const COLOURS: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];
const DASHES: [&str; 8] = ["", "6 3", "2 2", "8 3 2 3", "1 3", "10 4", "4 4", "3 6"];

/// More points than this are averaged into this many buckets: a line 600 px wide shows no
/// more, and a day of 10-second samples stays a small page.
const MAX_POINTS: usize = 400;

/// The viewBox's width: a 390 px phone shows the chart at about 366 px (the page's padding
/// taken off), a scale just over 1.
pub const W: f64 = 360.0;
/// The plot's height; the legend's rows come below it.
const PLOT_H: f64 = 150.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 24.0;
/// Room under the plot for the time labels.
const AXIS: f64 = 18.0;
/// Legend entries per row, their width and row height.
const LEGEND_COLS: usize = 2;
const LEGEND_W: f64 = 150.0;
const LEGEND_ROW: f64 = 14.0;

/// The chart's height with `entries` legend entries.
fn height(entries: usize) -> f64 {
    TOP + PLOT_H + AXIS + entries.div_ceil(LEGEND_COLS).max(1) as f64 * LEGEND_ROW + 4.0
}

/// Text for SVG and HTML: the five characters that could end an element or attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// One line of a chart.
pub struct Line<'a> {
    pub label: String,
    pub values: &'a [Option<f64>],
}

/// A "nice" step (1, 2 or 5 × 10^n) giving about `ticks` ticks up to `max`.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    // 10^⌊log10 raw⌋, the power parsed (correctly rounded, as `powf` gives it): no call of
    // libm's `log10` and `pow`, so that the agent does not link libm (see `round_sig3`).
    let exponent = zpulse_proto::sdk::stats::decimal_exponent(raw);
    let mag: f64 = format!("1e{exponent}").parse().unwrap_or(1.0);
    let norm = raw / mag;
    let step = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    step * mag
}

/// A number for an axis: 1.2k, 3.4M, 0.05.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e12 {
        format!("{:.1}T", v / 1e12)
    } else if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The time of day, UTC, of Unix time `unix`: `hh:mm`, with seconds when ticks are closer
/// than a minute, and the date before it (`12-03 14:00`) when the window spans more than one
/// day.
fn clock(unix: f64, seconds: bool, dated: bool) -> String {
    let s = unix.max(0.0).round() as u64 % 86_400;
    let time = if seconds {
        format!("{:02}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 3600, (s % 3600) / 60)
    };
    if dated {
        // `YYYY-MM-DD hh:mm:ss UTC`: the month and day.
        let date = crate::report::utc(unix);
        format!("{} {time}", date.get(5..10).unwrap_or(&date))
    } else {
        time
    }
}

/// The UTC day of Unix time `unix`.
fn day(unix: f64) -> i64 {
    (unix / 86_400.0).floor() as i64
}

/// Averages `(t, v)` into about [`MAX_POINTS`] buckets. A bucket never spans a gap (a
/// `None`): it ends at the gap, and the gap stays a gap, so a missing stretch is not
/// averaged away however long the window.
fn thin(t: &[f64], v: &[Option<f64>]) -> Vec<(f64, Option<f64>)> {
    let n = t.len().min(v.len());
    if n <= MAX_POINTS {
        return (0..n).map(|i| (t[i], v[i])).collect();
    }
    let per = n.div_ceil(MAX_POINTS);
    let mut out = Vec::with_capacity(MAX_POINTS + 1);
    let (mut sum, mut count, mut last_t) = (0.0, 0usize, 0.0);
    let flush = |out: &mut Vec<(f64, Option<f64>)>, sum: &mut f64, count: &mut usize, t| {
        if *count > 0 {
            out.push((t, Some(*sum / *count as f64)));
            (*sum, *count) = (0.0, 0);
        }
    };
    for i in 0..n {
        match v[i] {
            Some(x) => {
                sum += x;
                count += 1;
                last_t = t[i];
                if count == per {
                    flush(&mut out, &mut sum, &mut count, last_t);
                }
            }
            None => {
                flush(&mut out, &mut sum, &mut count, last_t);
                if out.last().is_none_or(|p| p.1.is_some()) {
                    out.push((t[i], None));
                }
            }
        }
    }
    flush(&mut out, &mut sum, &mut count, last_t);
    out
}

/// A line chart over the window; `t` is seconds since `origin` (Unix seconds), which the time
/// axis shows as the time of day in UTC. `y_max` fixes the scale (100 for percentages).
pub fn lines(
    origin: f64,
    title: &str,
    unit: &str,
    t: &[f64],
    series: &[Line],
    y_max: Option<f64>,
) -> String {
    let t_max = t.last().copied().unwrap_or(1.0).max(1.0);
    let data_max = series
        .iter()
        .flat_map(|l| l.values.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let top = y_max.unwrap_or_else(|| {
        let step = nice_step(data_max.max(1e-9), 4.0);
        (data_max / step).ceil().max(1.0) * step
    });
    let (pw, ph) = (W - LEFT - RIGHT, PLOT_H);
    let h = height(series.len());
    let x = |s: f64| LEFT + s / t_max * pw;
    let y = |v: f64| TOP + ph - (v / top).clamp(0.0, 1.02) * ph;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<figure class="chart"><svg viewBox="0 0 {W} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="4" y="15" class="ct">{t}</text>"#,
        t = escape(title)
    );
    // Horizontal grid and y labels.
    let step = nice_step(top, 4.0);
    let mut v = 0.0;
    while v <= top * 1.0001 {
        let _ = write!(
            svg,
            r#"<line x1="{LEFT}" x2="{x2}" y1="{yy:.1}" y2="{yy:.1}" class="grid"/><text x="{lx}" y="{ty:.1}" class="yl">{label}</text>"#,
            x2 = W - RIGHT,
            yy = y(v),
            lx = LEFT - 4.0,
            ty = y(v) + 4.0,
            label = short(v)
        );
        v += step;
    }
    let _ = write!(
        svg,
        r#"<text x="10" y="{my}" class="unit" transform="rotate(-90 10 {my})">{u}</text>"#,
        my = TOP + ph / 2.0,
        u = escape(unit)
    );
    // Time ticks: absolute UTC time, the date too when the window spans days; fewer ticks
    // for longer labels, so that they do not run into each other on a phone.
    let dated = day(origin) != day(origin + t_max);
    let seconds = nice_time_step(t_max, 4.0) < 60.0;
    let ticks = if dated || seconds { 2.0 } else { 4.0 };
    let tstep = nice_time_step(t_max, ticks);
    let mut s = 0.0;
    while s <= t_max * 1.0001 {
        let _ = write!(
            svg,
            r#"<text x="{xx:.1}" y="{ty}" class="xl">{c}</text>"#,
            xx = x(s),
            ty = TOP + ph + 13.0,
            c = clock(origin + s, tstep < 60.0, dated)
        );
        s += tstep;
    }
    for (k, line) in series.iter().enumerate() {
        let pts = thin(t, line.values);
        let mut d = String::new();
        let mut pen_down = false;
        for (ts, v) in &pts {
            match v {
                Some(v) => {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1} ",
                        if pen_down { "L" } else { "M" },
                        x(*ts),
                        y(*v)
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        let (c, dash) = (COLOURS[k % 8], DASHES[k % 8]);
        let _ = write!(
            svg,
            r#"<path d="{d}" fill="none" stroke="{c}" stroke-width="1.6" stroke-dasharray="{dash}"/>"#
        );
        // A single point would be invisible as a path.
        if pts.iter().filter(|p| p.1.is_some()).count() == 1
            && let Some((ts, Some(v))) = pts.iter().find(|p| p.1.is_some())
        {
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#,
                x(*ts),
                y(*v)
            );
        }
    }
    // Legend below the axis, two entries a row.
    for (k, line) in series.iter().enumerate() {
        let (col, row) = ((k % LEGEND_COLS) as f64, (k / LEGEND_COLS) as f64);
        let lx = LEFT + col * LEGEND_W;
        let ly = TOP + ph + AXIS + 6.0 + row * LEGEND_ROW;
        let _ = write!(
            svg,
            r#"<line x1="{lx}" x2="{x2}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2" stroke-dasharray="{dash}"/><text x="{tx}" y="{ty}" class="lg">{label}</text>"#,
            x2 = lx + 18.0,
            c = COLOURS[k % 8],
            dash = DASHES[k % 8],
            tx = lx + 22.0,
            ty = ly + 4.0,
            label = escape(&line.label)
        );
    }
    svg.push_str("</svg></figure>");
    svg
}

/// The shortest step giving at most `ticks` intervals over `t_max` seconds.
fn nice_time_step(t_max: f64, ticks: f64) -> f64 {
    const STEPS: [f64; 15] = [
        10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0,
        43200.0, 86400.0, 604800.0,
    ];
    STEPS
        .iter()
        .copied()
        .find(|s| t_max / s <= ticks)
        .unwrap_or(2_592_000.0)
}

/// A bar chart of counts per bucket (the distribution of `%util`), each bar topped by its
/// share in percent; `labels` are the buckets' lower edges, and one more closes the axis.
pub fn bars(title: &str, labels: &[String], counts: &[u32], highlight_from: usize) -> String {
    let total: u32 = counts.iter().sum();
    let max = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let (pw, ph) = (W - LEFT - RIGHT, PLOT_H);
    let h_all = height(1);
    let n = counts.len().max(1) as f64;
    let bw = pw / n;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<figure class="chart"><svg viewBox="0 0 {W} {h_all}" role="img" aria-label="{t}"><title>{t}</title><text x="4" y="15" class="ct">{t}</text>"#,
        t = escape(title)
    );
    for (i, &c) in counts.iter().enumerate() {
        let h = c as f64 / max * ph;
        let bx = LEFT + i as f64 * bw;
        let class = if i >= highlight_from {
            "bar hot"
        } else {
            "bar"
        };
        let share = if total > 0 {
            c as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" class="{class}"/><text x="{:.1}" y="{:.1}" class="bl">{share:.0}%</text><text x="{:.1}" y="{:.1}" class="xl">{}</text>"#,
            bx + 1.0,
            TOP + ph - h,
            bw - 2.0,
            bx + bw / 2.0,
            TOP + ph - h - 3.0,
            bx,
            TOP + ph + 13.0,
            escape(labels.get(i).map(String::as_str).unwrap_or(""))
        );
    }
    // The buckets' edges are labelled; the last edge closes the axis.
    if let Some(last) = labels.get(counts.len()) {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="xl">{}</text>"#,
            LEFT + pw,
            TOP + ph + 13.0,
            escape(last)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{LEFT}" y="{:.1}" class="lg">share of {total} intervals per %util bucket</text></svg></figure>"#,
        h_all - 8.0
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(100.0, 4.0), 50.0);
        assert_eq!(nice_step(7.0, 4.0), 2.0);
        assert_eq!(nice_step(0.3, 4.0), 0.1);
    }

    #[test]
    fn markup_in_labels_cannot_escape_the_svg() {
        let values = [Some(1.0), None, Some(2.0)];
        let svg = lines(
            1_796_094_000.0,
            "</svg><script>x</script>",
            "ms",
            &[10.0, 20.0, 30.0],
            &[Line {
                label: "a\"b".into(),
                values: &values,
            }],
            None,
        );
        assert!(!svg.contains("<script"));
        assert!(svg.contains("&lt;/svg&gt;&lt;script&gt;"));
        // The time axis in UTC: 2026-12-01 03:00:00 to 03:00:30, with seconds (ticks closer
        // than a minute), two intervals at most for labels that long.
        assert!(
            svg.contains(">03:00:00<") && svg.contains(">03:00:30<"),
            "{svg}"
        );
        // The gap splits the line into two pieces.
        assert_eq!(svg.matches(" M").count() + svg.matches("\"M").count(), 2);
    }

    #[test]
    fn long_series_are_averaged_into_buckets() {
        let t: Vec<f64> = (1..=1000).map(f64::from).collect();
        let v: Vec<Option<f64>> = (1..=1000).map(|i| Some(f64::from(i % 2))).collect();
        let pts = thin(&t, &v);
        assert!(pts.len() <= MAX_POINTS);
        // Alternating 0 and 1 in buckets of 3 (1000/400 rounded up) average to 1/3 or 2/3;
        // the last bucket holds the one value left over (1000 = 333 × 3 + 1).
        assert_eq!(pts.len(), 334);
        assert!(
            pts[..333]
                .iter()
                .all(|p| p.1.is_some_and(|x| x > 0.3 && x < 0.7))
        );
        assert_eq!(pts[333], (1000.0, Some(0.0)));
    }

    #[test]
    fn a_gap_stays_a_gap_however_long_the_series() {
        // 1000 points of 5.0 with 20 missing (a gap of three buckets' worth) in the middle.
        let t: Vec<f64> = (1..=1000).map(f64::from).collect();
        let v: Vec<Option<f64>> = (1..=1000)
            .map(|i| (!(500..520).contains(&i)).then_some(5.0))
            .collect();
        let pts = thin(&t, &v);
        // One gap point where the values stop; the values on each side stay 5.0, and no
        // bucket reaches across the gap.
        let gaps: Vec<f64> = pts.iter().filter(|p| p.1.is_none()).map(|p| p.0).collect();
        assert_eq!(gaps, [500.0]);
        assert!(pts.iter().flat_map(|p| p.1).all(|x| x == 5.0));
        let before = pts.iter().rfind(|p| p.0 < 500.0).unwrap();
        let after = pts.iter().find(|p| p.0 > 500.0).unwrap();
        assert_eq!(before, &(499.0, Some(5.0)));
        assert!(
            after.0 >= 522.0,
            "the first bucket after the gap ends after 520: {after:?}"
        );
        assert!(pts.len() <= MAX_POINTS + 2);
        // Drawn, the line is two pieces.
        let svg = lines(
            0.0,
            "x",
            "ms",
            &t,
            &[Line {
                label: "a".into(),
                values: &v,
            }],
            None,
        );
        assert_eq!(svg.matches('M').count(), 2, "{svg}");
    }

    #[test]
    fn the_time_axis_shows_the_date_when_the_window_spans_days() {
        let values = [Some(1.0), Some(2.0)];
        let line = [Line {
            label: "a".into(),
            values: &values,
        }];
        // 2026-12-01 03:00:00 UTC (1_796_094_000) over 3 h: time of day only.
        let svg = lines(1_796_094_000.0, "x", "ms", &[0.0, 10_800.0], &line, None);
        assert!(svg.contains(">03:00<") && svg.contains(">06:00<"), "{svg}");
        // Over 2 days: the month and day before each time (ticks a day apart).
        let svg = lines(1_796_094_000.0, "x", "ms", &[0.0, 172_800.0], &line, None);
        for label in [">12-01 03:00<", ">12-02 03:00<", ">12-03 03:00<"] {
            assert!(svg.contains(label), "{label} in {svg}");
        }
    }
}
