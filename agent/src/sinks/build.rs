//! Turning a `[[sink]]` of the config into a running sink, in two steps: [`plan`] checks
//! everything that can be checked without side effects (what `check-config` and a reload do
//! before anything changes), [`SinkPlan::start`] makes the sink (a Forward sink opens its
//! spool then; nothing connects before the first event). The kinds themselves are listed
//! once, in [`super::spec`].

use super::Sink;
use super::spec::Planned;
use super::spec::SinkConfig;
use std::path::{Path, PathBuf};

/// What a sink is made from: its table as written, and the directory its relative paths are
/// resolved against. Two sinks with the same key are the same sink (a reload keeps that one
/// running).
#[derive(Debug, Clone, PartialEq)]
pub struct SinkKey(toml::Table, Option<PathBuf>);

/// A checked `[[sink]]`, not started.
pub struct SinkPlan {
    key: SinkKey,
    name: String,
    planned: Box<dyn Planned>,
}

impl SinkPlan {
    /// The name the sink will have (`forward host:port`, `syslog …`, `stdout`).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn key(&self) -> &SinkKey {
        &self.key
    }

    /// The default when no `[[sink]]` is configured.
    pub fn stdout() -> SinkPlan {
        let mut table = toml::Table::new();
        table.insert("type".into(), "stdout".into());
        let planned = super::stdout::stdout_plan();
        SinkPlan {
            key: SinkKey(table, None),
            name: planned.name(),
            planned,
        }
    }

    pub fn start(self) -> Result<Box<dyn Sink>, String> {
        self.planned.start()
    }
}

/// Checks the sink a `[[sink]]` describes, touching nothing: no connection, no spool, no
/// directory. Errors name the key and its line.
pub fn plan(sink: &SinkConfig, config_dir: Option<&Path>) -> Result<SinkPlan, String> {
    let planned = sink.spec.plan().map_err(|e| sink.locate(&e))?;
    Ok(SinkPlan {
        key: SinkKey(sink.table.clone(), config_dir.map(Path::to_path_buf)),
        name: planned.name(),
        planned,
    })
}

/// Builds the sink a `[[sink]]` describes: [`plan`], then [`SinkPlan::start`].
pub fn build(sink: &SinkConfig, config_dir: Option<&Path>) -> Result<Box<dyn Sink>, String> {
    plan(sink, config_dir)?.start().map_err(|e| sink.locate(&e))
}
