//! Turning a `[[sink]]` table of the config into a running sink, in two steps: [`plan`]
//! checks everything that can be checked without side effects (what `check-config` and a
//! reload do before anything changes), [`SinkPlan::start`] makes the sink (a Forward sink
//! opens its spool then; nothing connects before the first event).

use super::Sink;
use super::forward::{ForwardConfig, ForwardSink, Prepared};
use super::prometheus::{PrometheusConfig, PrometheusSink};
use super::stdout::StdoutSink;
use super::syslog::{SyslogConfig, SyslogSink};
use crate::config::SinkConfig;
use std::path::{Path, PathBuf};

/// What a sink is made from: its type, its table, and the directory its relative paths are
/// resolved against. Two sinks with the same key are the same sink (a reload keeps that one
/// running).
#[derive(Debug, Clone, PartialEq)]
pub struct SinkKey(String, toml::Table, Option<PathBuf>);

/// A checked `[[sink]]` table, not started.
pub struct SinkPlan {
    key: SinkKey,
    name: String,
    kind: Planned,
}

enum Planned {
    Stdout,
    Syslog(Box<SyslogSink>),
    Forward(Box<Prepared>),
    Prometheus(Box<PrometheusSink>),
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
        SinkPlan {
            key: SinkKey("stdout".into(), toml::Table::new(), None),
            name: "stdout".into(),
            kind: Planned::Stdout,
        }
    }

    pub fn start(self) -> Result<Box<dyn Sink>, String> {
        Ok(match self.kind {
            Planned::Stdout => Box::new(StdoutSink::new()),
            Planned::Syslog(sink) => sink,
            Planned::Forward(prepared) => Box::new(prepared.start()?),
            Planned::Prometheus(sink) => sink,
        })
    }
}

/// Checks the sink a `[[sink]]` table describes, touching nothing: no connection, no spool,
/// no directory. Errors name where the table is.
pub fn plan(sink: &SinkConfig, config_dir: Option<&Path>) -> Result<SinkPlan, String> {
    let planned: Result<Planned, String> = match sink.kind.as_str() {
        "stdout" => {
            if sink.table.keys().any(|k| k != "type") {
                Err("a stdout sink takes no settings".into())
            } else {
                Ok(Planned::Stdout)
            }
        }
        "syslog" => SyslogConfig::from_table(&sink.table, config_dir)
            .and_then(SyslogSink::new)
            .map(|s| Planned::Syslog(Box::new(s))),
        "forward" => ForwardConfig::from_toml(&sink.table, config_dir.unwrap_or(Path::new(".")))
            .and_then(ForwardSink::prepare)
            .map(|p| Planned::Forward(Box::new(p))),
        // The listener is opened here (or this process's own reused), so that a bad address
        // or a busy port is an error in check-config and before a reload swaps anything.
        "prometheus" => PrometheusConfig::from_table(&sink.table, config_dir)
            .and_then(PrometheusSink::new)
            .map(|s| Planned::Prometheus(Box::new(s))),
        other => Err(format!(
            "unknown sink type '{other}': use forward, syslog, stdout or prometheus"
        )),
    };
    let kind = planned.map_err(|e| format!("{}: {e}", sink.origin))?;
    let name = match &kind {
        Planned::Stdout => "stdout".into(),
        Planned::Syslog(s) => s.name(),
        Planned::Forward(p) => p.name(),
        Planned::Prometheus(p) => p.name(),
    };
    Ok(SinkPlan {
        key: SinkKey(
            sink.kind.clone(),
            sink.table.clone(),
            config_dir.map(Path::to_path_buf),
        ),
        name,
        kind,
    })
}

/// Builds the sink a `[[sink]]` table describes: [`plan`], then [`SinkPlan::start`].
pub fn build(sink: &SinkConfig, config_dir: Option<&Path>) -> Result<Box<dyn Sink>, String> {
    plan(sink, config_dir)?
        .start()
        .map_err(|e| format!("{}: {e}", sink.origin))
}
