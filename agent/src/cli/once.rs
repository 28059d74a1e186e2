//! `zpulse once`.

use super::emit;
use super::plugins::{PluginArgs, Runner};
use crate::capture;
use crate::report::{self, Format};
use crate::sinks::prometheus::exposition;
use crate::sources::{self, System};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use zpulse_proto::Sample;

/// `once` prints text and JSON like the other commands, and the Prometheus exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnceFormat {
    Text,
    Json,
    Prometheus,
}

pub fn run(
    root: Option<&Path>,
    interval: Option<f64>,
    format: OnceFormat,
    plugin_args: &PluginArgs,
) -> Result<(), String> {
    if format == OnceFormat::Prometheus && (interval.is_some() || plugin_args.any()) {
        return Err(
            "--format prometheus prints one reading, counters as counters \
                    (Prometheus computes the rates): drop --interval and the plugin flags"
                .into(),
        );
    }
    // One reader for both readings, as the daemon keeps one: the second starts from what the
    // first kept (each pool's POOL_STATS reply: one ioctl a pool, into the same memory).
    let live = System::live();
    let snapshot = || -> Result<_, String> {
        match root {
            Some(dir) => capture::load(dir).map_err(|e| e.to_string()),
            None => Ok(sources::snapshot(&live, live.identity())),
        }
    };
    let first = snapshot()?;
    let format = match format {
        OnceFormat::Text => Format::Text,
        OnceFormat::Json => Format::Json,
        OnceFormat::Prometheus => return emit(exposition::render(&first, &[], None).text_str()),
    };
    let Some(seconds) = interval else {
        if plugin_args.any() {
            return Err("plugins run on samples: add --interval S".into());
        }
        return emit(&match format {
            Format::Text => report::snapshot_text(&first) + &kernel_events(root),
            Format::Json => report::json(&first, true) + "\n",
        });
    };
    if root.is_some() {
        return Err(
            "--interval needs two readings of a live system; for captures use `zpulse replay SERIES`"
                .into(),
        );
    }
    // Loaded before the interval starts, so that a plugin's create does not delay the sample.
    let mut runner = Runner::start(plugin_args, &first.host.hostname, format)?;
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let second = snapshot()?;
    let sample = Arc::new(Sample::following(&first, Arc::new(second)).map_err(|e| e.to_string())?);
    let events = runner.run(&sample);
    emit(&match format {
        Format::Text => report::sample_text(&sample) + &events,
        Format::Json => report::json(&*sample, true) + "\n" + &events,
    })?;
    runner.shutdown()
}

/// How many of the latest kernel events `once` shows.
const EVENTS_SHOWN: usize = 20;

/// The latest kernel events, as `zpulse events` prints them: those queued in the kernel
/// (live), or those a capture recorded. Nothing on a host without ZFS or a capture without
/// events; one line when the queue cannot be read (the privilege it needs).
fn kernel_events(root: Option<&Path>) -> String {
    use crate::sources::zevent;
    let batch = match root {
        Some(dir) => capture::load_zevents(dir),
        None => {
            let (platform, abi) = zevent::live_platform();
            let now = zpulse_proto::EventTime::from_system_time(std::time::SystemTime::now());
            let mut reader = match zevent::open_live(platform, abi, now) {
                Ok(r) => r,
                // No /dev/zfs: the snapshot said so already.
                Err(_) => return String::new(),
            };
            match reader.drain() {
                Ok(all) => all,
                Err(e) => return format!("\nKernel events: not read: {e}\n"),
            }
        }
    };
    if batch.events.is_empty() {
        return String::new();
    }
    let n = batch.events.len();
    let mut out = format!(
        "\nKernel events ({} of {n}; `zpulse events -v` lists them all)\n",
        n.min(EVENTS_SHOWN)
    );
    for z in &batch.events[n.saturating_sub(EVENTS_SHOWN)..] {
        out.push_str("  ");
        out.push_str(&report::zevent_text(z, false));
    }
    out
}
