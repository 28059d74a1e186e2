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
            Format::Text => report::snapshot_text(&first),
            Format::Json => report::json(&first, true) + "\n",
        });
    };
    if root.is_some() {
        return Err(
            "--interval needs two readings of a live system; for captures use `zpulse replay SERIES`"
                .into(),
        );
    }
    if !(seconds > 0.0 && seconds <= 86_400.0) {
        return Err(format!(
            "--interval {seconds}: give seconds between 0 and 86400"
        ));
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
