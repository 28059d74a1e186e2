//! The `zpulse` command line: `once`, `events`, `capture`, `replay`, `report`, `plugins`,
//! `run`, `check-config`.

mod capture;
mod events;
mod once;
mod plugins;
mod replay;
mod report;
pub(crate) mod run;

pub use plugins::PluginArgs;

use crate::report::Format;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "zpulse",
    version,
    about = "ZFS telemetry straight from the kernel: ARC, ZIL, pools and disks, without spawning a process"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read every source once and print it; with --interval, print the rates between two reads.
    Once {
        /// Read a capture directory instead of the live system.
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Time between the two reads (live only), up to 1d: a duration (`5s`, `500ms`) or
        /// seconds.
        #[arg(long, value_name = "DURATION", value_parser = sampling_interval)]
        interval: Option<f64>,
        /// text for people, json for programs, prometheus: the reading in the Prometheus text
        /// exposition format 0.0.4.
        #[arg(long, value_enum, default_value_t = once::OnceFormat::Text)]
        format: once::OnceFormat,
        /// With --interval, the configured plugins run on the sample and print their events.
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Print the kernel's event queue as `zpool events` does (-v: with every pair), from the
    /// oldest event; --follow goes on printing events as they come. Needs root (FreeBSD) or
    /// CAP_SYS_ADMIN (Linux). Reads no event away from ZED or zfsd.
    Events {
        /// Read the events recorded in a capture or series instead of the live kernel.
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Keep reading: print each event as the kernel posts it (until interrupted).
        #[arg(long, short = 'f')]
        follow: bool,
        /// Every pair of each event, under its kernel name.
        #[arg(long, short = 'v')]
        verbose: bool,
        /// text as `zpool events` prints it, or json: one event per line.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Write capture layout v1 (for bug reports and tests); a series of N when --count N > 1.
    Capture {
        /// Destination directory; with --count > 1 it holds 000, 001, … subdirectories.
        dir: PathBuf,
        /// How many captures: more than 1 makes a series.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        count: u32,
        /// Time between captures of a series, up to 1d: a duration (`10s`, `1m`) or seconds.
        #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = sampling_interval)]
        interval: f64,
        /// Capture from this Linux root instead of `/` (e.g. to re-capture a capture).
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Keep the kernel-event cursor in FILE: each capture records the events after the
        /// one the file names (and the file moves on), so a series made by several runs holds
        /// every event once. Without it each run records every event still queued.
        #[arg(long, value_name = "FILE")]
        zevent_cursor: Option<PathBuf>,
    },
    /// Print the samples between consecutive captures of a series, timed by their captured_at.
    Replay {
        /// A series directory (or one capture).
        series: PathBuf,
        /// text for people, or json: one sample per line.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Print only the plugins' events (findings), not the samples: how a check judges
        /// the series.
        #[arg(long)]
        findings: bool,
        /// The configured plugins run on every sample and print their events.
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Analyse a window (live for --duration, a capture SERIES, or the agent's history with
    /// --last/--from) with every check, or compare two windows: a page, text or JSON.
    Report {
        #[command(flatten)]
        args: report::ReportArgs,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Run the agent: sample on a fixed schedule, run plugins, send events to the sinks.
    /// SIGHUP reloads the config; SIGTERM/SIGINT flush and exit.
    Run {
        #[command(flatten)]
        plugins: PluginArgs,
        /// Feed a capture series through the plugins and sinks instead of the live system,
        /// then flush and exit.
        #[arg(long, value_name = "SERIES")]
        replay: Option<PathBuf>,
        /// With --replay: hold each reading this long, up to 1h, a duration (`15s`) or
        /// seconds (so that a Prometheus scraping the prometheus sink sees every capture).
        #[arg(long, value_name = "DURATION", requires = "replay", value_parser = pace)]
        pace: Option<f64>,
    },
    /// Validate the config file (and build its sinks without connecting); exit 1 on errors.
    CheckConfig {
        /// Config file [default: /etc/zpulse/zpulse.toml if it exists].
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// List the plugins the agent would load: name, version, ABI, path, status and why.
    Plugins {
        /// text, a table for people, or json.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        plugins: PluginArgs,
    },
}

/// Runs the command line. Exit status (the table of zpulse(8) and docs/commands.md): 0 done;
/// 1 a failure or a finding (an error message, a plugin not running, a configuration with
/// errors); 2 a command line that does not parse, which clap reports before anything runs —
/// so every value an option takes is checked by its parser here, not later.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Once {
            root,
            interval,
            format,
            plugins,
        } => once::run(root.as_deref(), interval, format, &plugins),
        Command::Events {
            root,
            follow,
            verbose,
            format,
        } => events::run(root.as_deref(), follow, verbose, format),
        Command::Capture {
            dir,
            count,
            interval,
            root,
            zevent_cursor,
        } => capture::run(
            &dir,
            count,
            interval,
            root.as_deref(),
            zevent_cursor.as_deref(),
        ),
        Command::Replay {
            series,
            format,
            findings,
            plugins,
        } => replay::run(&series, format, findings, &plugins),
        Command::Plugins { format, plugins } => plugins::list(&plugins, format),
        Command::Report { args, plugins } => report::run(&args, &plugins),
        Command::Run {
            plugins,
            replay,
            pace,
        } => run::run(&plugins, replay, pace),
        Command::CheckConfig { config } => run::check(config.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("zpulse: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Prints to stdout; a closed pipe (`zpulse replay … | head`) ends quietly instead of panicking.
fn emit(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("writing output: {e}")),
    }
}

/// A duration on the command line, in the one grammar of the config files and the collector
/// (`zpulse_proto::sdk::config::parse_duration`; docs/configuration.md), from `min` to `max`
/// (written in that grammar too, so the message says them as the user would).
fn duration_between(text: &str, min: &str, max: &str) -> Result<Duration, String> {
    use zpulse_proto::sdk::config::parse_duration;
    let d = parse_duration(text)?;
    let bound = |b: &str| parse_duration(b).map_err(|e| format!("the bound {b}: {e}"));
    if d < bound(min)? || d > bound(max)? {
        return Err(format!("{text:?}: give a duration from {min} to {max}"));
    }
    Ok(d)
}

/// `once --interval`, `capture --interval`: what the kernel can be sampled at.
fn sampling_interval(text: &str) -> Result<f64, String> {
    duration_between(text, "1ms", "1d").map(|d| d.as_secs_f64())
}

/// `run --pace`.
fn pace(text: &str) -> Result<f64, String> {
    duration_between(text, "1ms", "1h").map(|d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture_interval(arg: &str) -> Result<f64, String> {
        match Cli::try_parse_from(["zpulse", "capture", "/tmp/x", "--interval", arg]) {
            Ok(Cli {
                command: Command::Capture { interval, .. },
            }) => Ok(interval),
            Ok(other) => Err(format!("{other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn command_line_durations_have_the_config_grammar() {
        // What the config files and the collector accept: seconds, units, decimals.
        assert_eq!(capture_interval("10"), Ok(10.0));
        assert_eq!(capture_interval("250ms"), Ok(0.25));
        assert_eq!(capture_interval("1.5m"), Ok(90.0));
        assert_eq!(capture_interval("1d"), Ok(86_400.0));
        let err = capture_interval("1w").unwrap_err();
        assert!(err.contains("give a duration from 1ms to 1d"), "{err}");
        let err = capture_interval("10 parsecs").unwrap_err();
        assert!(err.contains("is not a duration"), "{err}");
        let Cli {
            command: Command::Capture { interval, .. },
        } = Cli::try_parse_from(["zpulse", "capture", "/tmp/x"]).unwrap()
        else {
            panic!("not capture");
        };
        assert_eq!(interval, 10.0, "the default, 10s");
    }

    fn report_args(args: &[&str]) -> Result<report::ReportArgs, clap::Error> {
        let argv = ["zpulse", "report"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Report { args, .. } => Ok(args),
            other => panic!("not report: {other:?}"),
        }
    }

    #[test]
    fn every_duration_option_takes_units() {
        let r = report_args(&["--duration", "1m", "--interval", "5s"]).unwrap();
        assert_eq!(r.interval, 5.0);
        assert_eq!(r.duration, Some(Duration::from_secs(60)));
        let r = report_args(&["--last", "2h"]).unwrap();
        assert_eq!(r.last, Some(Duration::from_secs(7200)));
        assert_eq!(
            report_args(&["--last", "1h", "--interval", "500ms"])
                .unwrap_err()
                .kind(),
            clap::error::ErrorKind::ValueValidation,
            "a report's samples are 1s apart at least"
        );
        let Cli {
            command: Command::Run { pace, .. },
        } = Cli::try_parse_from(["zpulse", "run", "--replay", "/s", "--pace", "1.5s"]).unwrap()
        else {
            panic!("not run");
        };
        assert_eq!(pace, Some(1.5));
    }

    #[test]
    fn relative_times_parse_as_help_shows_them() {
        let r = report_args(&["--from", "-2h", "--to", "-30m"]).unwrap();
        assert_eq!(r.from.as_deref(), Some("-2h"));
        assert_eq!(r.to.as_deref(), Some("-30m"));
        let e = report_args(&["--from", "yesterday"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
    }

    #[test]
    fn usage_errors_are_clap_errors_so_exit_2() {
        // clap exits 2 on these (`Error::exit`); the command's own failures exit 1.
        for args in [
            &["report"][..],
            &["report", "--duration", "1m", "--interval", "5 parsecs"],
            &["once", "--interval", "0"],
            &["capture", "/tmp/x", "--count", "0"],
            &["run", "--pace", "1s"],
        ] {
            let argv = std::iter::once(&"zpulse").chain(args);
            let e = Cli::try_parse_from(argv).expect_err(&format!("{args:?} parsed"));
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        }
    }
}
