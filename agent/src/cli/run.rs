//! `zpulse run` and `zpulse check-config`.

use super::PluginArgs;
use crate::config;
use crate::daemon::{self, Options};
use std::path::Path;

pub fn run(
    args: &PluginArgs,
    replay: Option<std::path::PathBuf>,
    pace: Option<f64>,
) -> Result<(), String> {
    daemon::run(Options {
        config: args.config.clone(),
        extra: args.extra(),
        replay,
        pace: pace.map(std::time::Duration::from_secs_f64),
    })
}

/// Reads the config and builds every sink (without connecting), as `run` would; prints what
/// it found. The same errors as `run`, without starting anything.
pub fn check(path: Option<&Path>) -> Result<(), String> {
    let cfg = config::load(path)?;
    // The history directory, as `run` checks it (a missing one `run` creates).
    if cfg.history.enabled {
        crate::history::check_dir(&cfg.history.dir(), crate::plugins::effective_uid())
            .map_err(|e| format!("history: {e}"))?;
    }
    // Each plugin validates its own table (nothing created), as a reload does; tables and
    // `disable` entries that name no plugin found are refused.
    let notes = crate::plugins::check_tables(
        &cfg.plugins,
        &crate::plugins::Extra::default(),
        std::time::Duration::from_secs(5),
        cfg.file.as_deref(),
    )?;
    for note in &notes {
        eprintln!("zpulse: note: {note}");
    }
    let mut names: Vec<String> = daemon::plan_sinks(&cfg)?
        .iter()
        .map(|p| p.name().to_owned())
        .collect();
    if cfg.sinks.is_empty() {
        names = vec!["stdout (default)".into()];
    }
    let source = cfg.file.as_deref().map_or_else(
        || "no config file: built-in defaults".into(),
        |p| p.display().to_string(),
    );
    super::emit(&format!(
        "{source}: ok\n  interval {:?}\n  plugin dirs {}\n  plugin tables {}\n  sinks {}\n  \
         history {}\n",
        cfg.interval,
        cfg.plugins
            .dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        if cfg.plugins.tables.is_empty() {
            "-".into()
        } else {
            cfg.plugins
                .tables
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        },
        names.join(", "),
        if cfg.history.enabled {
            format!(
                "{} (retention {:?}, max_size {} bytes)",
                cfg.history.dir().display(),
                cfg.history.retention,
                cfg.history.max_size
            )
        } else {
            "off".into()
        }
    ))
}
