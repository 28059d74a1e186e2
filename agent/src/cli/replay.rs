//! `zpulse replay`.

use super::emit;
use super::plugins::{PluginArgs, Runner};
use crate::capture;
use crate::report::{self, Format};
use std::path::Path;
use std::sync::Arc;
use zpulse_proto::SampleStream;

pub fn run(series: &Path, format: Format, plugin_args: &PluginArgs) -> Result<(), String> {
    let dirs = capture::series(series).map_err(|e| e.to_string())?;
    if dirs.len() < 2 {
        return Err(format!(
            "{}: a replay needs at least two captures to compute rates (found {}); \
             record a series with `zpulse capture DIR --count N`",
            series.display(),
            dirs.len()
        ));
    }
    let first = capture::load(&dirs[0]).map_err(|e| e.to_string())?;
    let mut runner = Runner::start(plugin_args, &first.host.hostname, format)?;
    // Each capture is loaded as the stream reaches it: two snapshots held, not the series.
    let mut unreadable = None;
    let rest = dirs[1..].iter().map_while(|dir| {
        capture::load(dir)
            .map_err(|e| unreadable = Some(e.to_string()))
            .ok()
    });
    for (i, sample) in SampleStream::after(first, rest).enumerate() {
        let sample = Arc::new(
            sample
                .map_err(|e| format!("{} → {}: {e}", dirs[i].display(), dirs[i + 1].display()))?,
        );
        let events = runner.run(&sample);
        emit(&match format {
            Format::Text => report::sample_text(&sample) + &events + "\n",
            Format::Json => report::json(&*sample, false) + "\n" + &events,
        })?;
    }
    if let Some(e) = unreadable {
        return Err(e);
    }
    runner.shutdown()
}
