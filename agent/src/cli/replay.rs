//! `zpulse replay`.

use super::emit;
use super::plugins::{PluginArgs, Runner};
use crate::capture;
use crate::report::{self, Format};
use std::path::Path;
use zpulse_proto::Sample;

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
    let mut prev = capture::load(&dirs[0]).map_err(|e| e.to_string())?;
    let mut runner = Runner::start(plugin_args, &prev.host.hostname, format)?;
    for dir in &dirs[1..] {
        let cur = capture::load(dir).map_err(|e| e.to_string())?;
        let sample = Sample::between(&prev, &cur)
            .map_err(|e| format!("{} → {}: {e}", dirs[0].display(), dir.display()))?;
        let events = runner.run(&sample);
        emit(&match format {
            Format::Text => report::sample_text(&sample) + &events + "\n",
            Format::Json => report::json(&sample, false) + "\n" + &events,
        })?;
        prev = cur;
    }
    runner.shutdown()
}
