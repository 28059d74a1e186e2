//! `zpulse replay`.

use super::emit;
use super::plugins::{PluginArgs, Runner};
use crate::capture;
use crate::report::{self, Format};
use std::path::Path;
use std::sync::Arc;
use zpulse_proto::sample::Pairing;

/// Prints each sample of `series` with the events the plugins emit on it; with
/// `findings_only`, the events alone.
pub fn run(
    series: &Path,
    format: Format,
    findings_only: bool,
    plugin_args: &PluginArgs,
) -> Result<(), String> {
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
    let mut pairing = Pairing::after(first);
    // The first capture's kernel events were queued before the series began: history.
    let mut events = capture::load_zevents(&dirs[0]);
    events.events.iter_mut().for_each(|e| e.before_start = true);
    emit(&runner.zevents(&events.events))?;
    // Each capture is loaded as the loop reaches it: two snapshots held, not the series.
    let mut unreadable = None;
    for (i, dir) in dirs.iter().enumerate().skip(1) {
        let snapshot = match capture::load(dir) {
            Ok(s) => s,
            Err(e) => {
                unreadable = Some(e.to_string());
                break;
            }
        };
        // The events posted since the capture before go to the plugins before the sample
        // that ends here, as the live agent hands them over between samples.
        let events = capture::load_zevents(dir);
        emit(&runner.zevents(&events.events))?;
        let Some(sample) = pairing.push(snapshot) else {
            continue;
        };
        let sample = Arc::new(
            sample.map_err(|e| format!("{} → {}: {e}", dirs[i - 1].display(), dir.display()))?,
        );
        let events = runner.run(&sample);
        emit(&match format {
            _ if findings_only => events,
            Format::Text => report::sample_text(&sample) + &events + "\n",
            Format::Json => report::json(&*sample, false) + "\n" + &events,
        })?;
    }
    if let Some(e) = unreadable {
        return Err(e);
    }
    runner.shutdown()
}
