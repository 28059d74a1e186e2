//! `zpulse report`: one window — sampled live, read from a capture series or from the
//! agent's history — analysed by every check, as a page, text or JSON; or two windows
//! compared.

use super::emit;
use super::plugins::{PluginArgs, Runner};
use crate::baseline::{self, Baseline, Builder, compare};
use crate::capture;
use crate::report::Format;
use crate::sources::{self, System};
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use zpulse_proto::Snapshot;
use zpulse_proto::event::Entry;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// One self-contained HTML page (inline SVG, no scripts): the default with --out.
    Html,
    /// For a terminal: the default without --out.
    Text,
    /// The whole model, for programs and for a later --compare.
    Json,
}

/// Where the window comes from: exactly one of a series, `--duration`, `--last`, `--from` or
/// `--compare` (none is a usage error, exit status 2, like any other bad option).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(group(
    clap::ArgGroup::new("window")
        .required(true)
        .args(["series", "duration", "last", "from", "compare"])
))]
pub struct ReportArgs {
    /// A capture series (`zpulse capture DIR --count N`) to analyse instead of the live system.
    pub series: Option<PathBuf>,
    /// Live: sample the system for this long (`30m`, `2h`, `90s`).
    #[arg(long, value_name = "DURATION", value_parser = window_length)]
    pub duration: Option<Duration>,
    /// Live: time between samples, 1s to 1d (`5s`, `1m`, or seconds).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = report_interval)]
    pub interval: f64,
    /// History: the last DURATION of what `zpulse run` recorded (`30m`, `6h`).
    #[arg(long, value_name = "DURATION", value_parser = window_length, conflicts_with_all = ["series", "duration"])]
    pub last: Option<Duration>,
    /// History: from this time (Unix seconds, `2026-12-01T03:00Z`, `2026-12-01 03:00` UTC,
    /// `-2h` for two hours ago, or `now`) …
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = time_arg, conflicts_with_all = ["series", "duration", "last"])]
    pub from: Option<String>,
    /// … to this time (default: now).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = time_arg, requires = "from")]
    pub to: Option<String>,
    /// History: the directory `zpulse run` keeps it in [default: the configured one].
    #[arg(long, value_name = "DIR")]
    pub history_dir: Option<PathBuf>,
    /// Two windows side by side: each a capture series, a report written with
    /// `--format json`, or `history:FROM..TO` (a window of the agent's history, e.g.
    /// `history:-2h..-1h`).
    #[arg(long, num_args = 2, value_names = ["BEFORE", "AFTER"], conflicts_with_all = ["series", "duration", "last", "from"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Write the report to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// html (the default with --out), text (the default without), or json.
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
}

/// `--duration`, `--last`: a window of at least a second.
fn window_length(text: &str) -> Result<Duration, String> {
    super::duration_between(text, "1s", "366d")
}

/// `--interval`: the live sampling of a report.
fn report_interval(text: &str) -> Result<f64, String> {
    super::duration_between(text, "1s", "1d").map(|d| d.as_secs_f64())
}

/// `--from`, `--to`: checked on the command line, resolved against one `now` later.
fn time_arg(text: &str) -> Result<String, String> {
    parse_time(text, 0.0).map(|_| text.to_string())
}

pub fn run(args: &ReportArgs, plugin_args: &PluginArgs) -> Result<(), String> {
    let format = args.format.unwrap_or(if args.out.is_some() {
        ReportFormat::Html
    } else {
        ReportFormat::Text
    });
    let unfinished;
    let rendered = if let Some(pair) = &args.compare {
        let before = load_or_build(&pair[0], args, plugin_args)?;
        let after = load_or_build(&pair[1], args, plugin_args)?;
        let cmp = compare::compare(&before, &after);
        unfinished = incomplete(&[&before, &after]);
        match format {
            ReportFormat::Html => baseline::page::render_compare(&before, &after, &cmp),
            ReportFormat::Text => baseline::text::render_compare(&before, &after, &cmp),
            ReportFormat::Json => {
                crate::report::json(
                    &serde_json::json!({"before": before, "after": after, "comparison": cmp}),
                    true,
                ) + "\n"
            }
        }
    } else {
        let b = if let Some(series) = &args.series {
            from_series(series, plugin_args)?
        } else if args.last.is_some() || args.from.is_some() {
            from_history(args, plugin_args)?
        } else {
            live(args, plugin_args)?
        };
        unfinished = incomplete(&[&b]);
        match format {
            ReportFormat::Html => baseline::page::render(&b),
            ReportFormat::Text => baseline::text::render(&b),
            ReportFormat::Json => crate::report::json(&b, true) + "\n",
        }
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, rendered)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            eprintln!("zpulse: report written to {}", path.display());
        }
        None => emit(&rendered)?,
    }
    unfinished.map_or(Ok(()), Err)
}

/// The error that makes the exit status 1 when a window's checks did not all run to the end:
/// the report is written all the same, and says which and why.
fn incomplete(reports: &[&Baseline]) -> Option<String> {
    let problems: Vec<&str> = reports
        .iter()
        .flat_map(|b| b.plugin_problems.iter().map(String::as_str))
        .collect();
    (!problems.is_empty()).then(|| {
        format!(
            "the report is incomplete, its checks did not all run to the end: {}",
            problems.join("; ")
        )
    })
}

/// The plugins over a window, one snapshot at a time.
struct Analysis {
    builder: Builder,
    runner: Option<Runner>,
    events: Vec<Entry>,
    /// Every interval's verdicts, for the window's phases.
    phases: baseline::phases::Tracker,
}

impl Analysis {
    fn start(first: Snapshot, plugin_args: &PluginArgs) -> Result<Analysis, String> {
        let runner = Runner::start(plugin_args, &first.host.hostname, Format::Text)?;
        let mut builder = Builder::new();
        builder.push(first);
        Ok(Analysis {
            builder,
            runner: Some(runner),
            events: Vec::new(),
            phases: baseline::phases::Tracker::new(),
        })
    }

    fn push(&mut self, snapshot: Snapshot) {
        let start = self.builder.last_snapshot();
        let Some(sample) = self.builder.push(snapshot) else {
            self.phases.interrupt();
            return;
        };
        let Some(r) = &mut self.runner else { return };
        // The interval judged as a window of its own (its events and problems are the
        // window's report's to say).
        let (verdicts, _, _) = r.report(&self.builder.interval_window(&sample));
        if let Some(start) = start {
            let end = Arc::clone(sample.snapshot.arc());
            self.phases
                .observe(self.builder.intervals(), &start, &end, &verdicts);
        }
        self.events.extend(r.events(&Arc::new(sample)));
    }

    /// Kernel events posted before the next snapshot: listed, and judged by the plugins that
    /// take them, as the live agent does between samples.
    fn zevents(&mut self, events: &[zpulse_proto::ZEvent]) {
        if events.is_empty() {
            return;
        }
        self.builder.note_zevents(events);
        if let Some(r) = &mut self.runner {
            self.events.extend(r.zevent_findings(events));
        }
    }

    fn finish(mut self, source: String) -> Result<Baseline, String> {
        let Some(window) = self.builder.window() else {
            return Err(format!(
                "{source}: a report needs at least two snapshots that make an interval \
                 (got {} usable intervals)",
                self.builder.intervals()
            ));
        };
        let mut runner = self.runner.take().expect("started");
        let (sections, events, mut problems) = runner.report(&window);
        self.events.extend(events);
        let (runs, dropped) = self.phases.finish(window.intervals);
        let (phases, unconfirmed) =
            baseline::phases::state(&self.builder, &runs, |w| runner.report(w).0);
        let (_, stopped) = runner.stop();
        let mut b = self.builder.finish(&window, sections, &self.events, source);
        b.phases = phases;
        if dropped > 0 {
            b.notes.push(format!(
                "{dropped} shorter stretch(es) with a verdict of their own are not listed as \
                 phases (at most {} are kept)",
                baseline::phases::KEPT_RUNS
            ));
        }
        if unconfirmed > 0 {
            b.notes.push(format!(
                "{unconfirmed} stretch(es) whose intervals each had a verdict of their own \
                 were, judged as one, not: not stated as phases"
            ));
        }
        // A plugin that did not run to the end, or whose report failed, leaves the
        // conclusions incomplete: said on the page itself, and in the exit status.
        problems.extend(stopped);
        b.plugin_problems = problems;
        Ok(b)
    }
}

fn from_series(series: &Path, plugin_args: &PluginArgs) -> Result<Baseline, String> {
    let dirs = capture::series(series).map_err(|e| e.to_string())?;
    if dirs.len() < 2 {
        return Err(format!(
            "{}: a report needs a series of at least two captures (found {}); record one \
             with `zpulse capture DIR --count N`",
            series.display(),
            dirs.len()
        ));
    }
    let load = |d: &PathBuf| capture::load(d).map_err(|e| format!("{}: {e}", d.display()));
    let first = load(&dirs[0])?;
    let mut analysis = Analysis::start(first, plugin_args)?;
    // A capture's events were posted since the one before it: the first's came before the
    // window.
    for d in &dirs[1..] {
        analysis.zevents(&capture::load_zevents(d).events);
        analysis.push(load(d)?);
    }
    analysis.finish(format!("series {}", series.display()))
}

/// One side of `--compare`: `history:FROM..TO` (a window of the agent's history, times as
/// for --from), a capture series, or a report written with `--format json`.
fn load_or_build(
    path: &Path,
    args: &ReportArgs,
    plugin_args: &PluginArgs,
) -> Result<Baseline, String> {
    if let Some(range) = path.to_str().and_then(|p| p.strip_prefix("history:")) {
        let (from, to) = range
            .split_once("..")
            .ok_or_else(|| format!("{range:?}: give history:FROM..TO, e.g. history:-2h..-1h"))?;
        let now = now();
        return history_window(
            parse_time(from, now)?,
            parse_time(to, now)?,
            &history_dir(args, plugin_args)?,
            plugin_args,
        );
    }
    if path.is_dir() {
        return from_series(path, plugin_args);
    }
    let text = crate::sources::root::read_regular(path, 256 << 20)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let b: Baseline = serde_json::from_slice(&text).map_err(|e| {
        format!(
            "{}: neither a capture series nor a report written with --format json: {e}",
            path.display()
        )
    })?;
    if b.version != baseline::BASELINE_VERSION {
        return Err(format!(
            "{}: a report of model version {}, this zpulse reads version {}",
            path.display(),
            b.version,
            baseline::BASELINE_VERSION
        ));
    }
    Ok(b)
}

/// Sampling the live system on a fixed schedule until the duration is over or SIGINT/SIGTERM
/// (then what was sampled so far is the window).
fn live(args: &ReportArgs, plugin_args: &PluginArgs) -> Result<Baseline, String> {
    let Some(duration) = args.duration else {
        return Err(
            "say which window: --duration D (sample now), a SERIES, --last D or --from T \
             (the agent's history), or --compare BEFORE AFTER"
                .into(),
        );
    };
    let interval = args.interval;
    if duration.as_secs_f64() < interval {
        return Err(format!(
            "--duration {}: shorter than one interval ({interval} s)",
            baseline::page::duration(duration.as_secs_f64())
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| format!("cannot catch signal {sig}: {e}"))?;
    }
    let system = System::live();
    let identity = system.identity();
    let start = Instant::now();
    let mut analysis = Analysis::start(sources::snapshot(&system, identity.clone()), plugin_args)?;
    let total = (duration.as_secs_f64() / interval).floor() as u32;
    let tty = std::io::stderr().is_terminal();
    for i in 1..=total {
        let due = start + Duration::from_secs_f64(interval * f64::from(i));
        // Wait in short steps, so that Ctrl-C ends the window at once.
        while Instant::now() < due && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(
                due.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(200)),
            );
        }
        if stop.load(Ordering::Relaxed) {
            eprintln!("\nzpulse: interrupted after {} of {total} samples", i - 1);
            break;
        }
        analysis.push(sources::snapshot(&system, identity.clone()));
        if !tty && i == 1 {
            // Said once where no progress line can be drawn (a log, a pipe): the window has
            // begun, and how to end it early.
            eprintln!(
                "zpulse: report: sampling {total} intervals of {interval} s; SIGINT or \
                 SIGTERM ends the window early and reports what was sampled"
            );
        }
        if tty {
            let elapsed = start.elapsed().as_secs_f64();
            eprint!(
                "\rzpulse report: {} of {}, {i}/{total} samples, {} to go ",
                baseline::page::duration(elapsed),
                baseline::page::duration(duration.as_secs_f64()),
                baseline::page::duration(duration.as_secs_f64() - elapsed)
            );
        }
    }
    if tty {
        eprintln!();
    }
    analysis.finish("live".into())
}

fn from_history(args: &ReportArgs, plugin_args: &PluginArgs) -> Result<Baseline, String> {
    let now = now();
    let (from, to) = match (&args.last, &args.from) {
        (Some(last), _) => (now - last.as_secs_f64(), now),
        (None, Some(from)) => (
            parse_time(from, now).map_err(|e| format!("--from: {e}"))?,
            match &args.to {
                Some(to) => parse_time(to, now).map_err(|e| format!("--to: {e}"))?,
                None => now,
            },
        ),
        (None, None) => unreachable!("called with --last or --from"),
    };
    history_window(from, to, &history_dir(args, plugin_args)?, plugin_args)
}

/// The window `from`–`to` of the history in `dir`.
fn history_window(
    from: f64,
    to: f64,
    dir: &Path,
    plugin_args: &PluginArgs,
) -> Result<Baseline, String> {
    if to <= from {
        return Err("the end of a history window must be later than its start".into());
    }
    let read = crate::history::read(dir, from, to)?;
    let mut notes = read.notes.clone();
    // A record that cannot be read back costs only itself: said, and skipped.
    let damaged = std::cell::Cell::new(0usize);
    // The window starts at the last snapshot at or before `from`: the reader adds the one
    // before the range, which is not needed when a snapshot falls on `from` itself (two
    // adjacent windows then share no interval).
    let times: Vec<f64> = read.times().collect();
    let skip = times.windows(2).take_while(|w| w[1] <= from).count();
    let mut snapshots = read.snapshots().skip(skip).filter_map(|s| match s {
        Ok(s) => Some(s),
        Err(why) => {
            eprintln!("zpulse: history: {why}");
            damaged.set(damaged.get() + 1);
            None
        }
    });
    for n in &notes {
        eprintln!("zpulse: history: {n}");
    }
    let Some(first) = snapshots.next() else {
        return Err(format!(
            "no history between {} and {} in {} (is `zpulse run` running, with [history] \
             enabled?)",
            crate::report::utc(from),
            crate::report::utc(to),
            dir.display()
        ));
    };
    let mut analysis = Analysis::start(first, plugin_args)?;
    // The events of the range go in before the first snapshot after them.
    let (zevents, zevent_notes) = read.zevents(from);
    notes.extend(zevent_notes);
    let mut pending = zevents.as_slice();
    for s in snapshots {
        let due = pending.partition_point(|e| e.time.as_f64() <= s.taken_at);
        analysis.zevents(&pending[..due]);
        pending = &pending[due..];
        analysis.push(s);
    }
    let damaged = damaged.get();
    if damaged > 0 {
        notes.push(format!(
            "{damaged} history records could not be read back and were skipped"
        ));
    }
    let mut b = analysis.finish(format!(
        "history {} to {}",
        crate::report::utc(from),
        crate::report::utc(to)
    ))?;
    b.notes.extend(notes);
    Ok(b)
}

fn history_dir(args: &ReportArgs, plugin_args: &PluginArgs) -> Result<PathBuf, String> {
    if let Some(d) = &args.history_dir {
        return Ok(d.clone());
    }
    let config = crate::config::load(plugin_args.config.as_deref())?;
    Ok(config.history.dir())
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A time on the command line: Unix seconds, `now`, `-2h` (before now), or a UTC date and
/// time `YYYY-MM-DD[T| ]HH:MM[:SS][Z]`.
pub fn parse_time(text: &str, now: f64) -> Result<f64, String> {
    let t = text.trim();
    if t == "now" {
        return Ok(now);
    }
    if let Some(ago) = t.strip_prefix('-') {
        let d = zpulse_proto::sdk::config::parse_duration(ago)?;
        return Ok(now - d.as_secs_f64());
    }
    if let Ok(unix) = t.parse::<f64>()
        && unix.is_finite()
        && unix >= 0.0
    {
        return Ok(unix);
    }
    let bad = || {
        format!(
            "{t:?}: give Unix seconds, -DURATION (before now) or a UTC time like \
             2026-12-01T03:00Z"
        )
    };
    let t = t.trim_end_matches('Z').trim_end_matches(" UTC");
    let (date, time) = t.split_once(['T', ' ']).ok_or_else(bad)?;
    let num = |s: &str| s.parse::<i64>().map_err(|_| bad());
    let d: Vec<&str> = date.split('-').collect();
    let h: Vec<&str> = time.split(':').collect();
    if d.len() != 3 || !(2..=3).contains(&h.len()) {
        return Err(bad());
    }
    let (y, m, day) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (hh, mm) = (num(h[0])?, num(h[1])?);
    let ss = if h.len() == 3 { num(h[2])? } else { 0 };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    Ok((days_from_civil(y, m, day) * 86_400 + hh * 3600 + mm * 60 + ss) as f64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// `zpulse_proto::sdk::text::civil_utc`): shift the year to start in March, so that the leap
/// day is the last of the year, then count 400-year eras.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_on_the_command_line() {
        // Expected values from GNU `date -u -d '2026-12-01 03:00:00' +%s` and friends.
        assert_eq!(parse_time("2026-12-01T03:00Z", 0.0), Ok(1_796_094_000.0));
        assert_eq!(parse_time("2026-12-01 03:00:30", 0.0), Ok(1_796_094_030.0));
        assert_eq!(parse_time("2000-02-29T00:00:00Z", 0.0), Ok(951_782_400.0));
        assert_eq!(parse_time("1970-01-01 00:00", 0.0), Ok(0.0));
        assert_eq!(parse_time("1796094000", 0.0), Ok(1_796_094_000.0));
        assert_eq!(parse_time("-2h", 10_000.0), Ok(2_800.0));
        assert_eq!(parse_time("now", 10_000.0), Ok(10_000.0));
        for bad in ["yesterday", "2026-13-01T00:00", "2026-12-01", "-x", "NaN"] {
            assert!(parse_time(bad, 0.0).is_err(), "{bad}");
        }
    }
}
