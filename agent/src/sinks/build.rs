//! Turning a `[[sink]]` table of the config into a running sink.

use super::Sink;
use super::forward::{ForwardConfig, ForwardSink};
use super::prometheus::{PrometheusConfig, PrometheusSink};
use super::stdout::StdoutSink;
use super::syslog::{SyslogConfig, SyslogSink};
use crate::config::SinkConfig;
use std::path::Path;

/// Builds the sink a `[[sink]]` table describes. Nothing is connected yet: a collector or log
/// host that is down must not stop the agent from starting. Errors name where the table is.
pub fn build(sink: &SinkConfig, config_dir: Option<&Path>) -> Result<Box<dyn Sink>, String> {
    let built: Result<Box<dyn Sink>, String> = match sink.kind.as_str() {
        "stdout" => {
            if sink.table.keys().any(|k| k != "type") {
                Err("a stdout sink takes no settings".into())
            } else {
                Ok(Box::new(StdoutSink::new()))
            }
        }
        "syslog" => SyslogConfig::from_table(&sink.table, config_dir)
            .and_then(SyslogSink::new)
            .map(|s| Box::new(s) as Box<dyn Sink>),
        "forward" => ForwardConfig::from_toml(&sink.table, config_dir.unwrap_or(Path::new(".")))
            .and_then(ForwardSink::new)
            .map(|s| Box::new(s) as Box<dyn Sink>),
        "prometheus" => PrometheusConfig::from_table(&sink.table, config_dir)
            .and_then(PrometheusSink::new)
            .map(|s| Box::new(s) as Box<dyn Sink>),
        other => Err(format!(
            "unknown sink type '{other}': use forward, syslog, stdout or prometheus"
        )),
    };
    built.map_err(|e| format!("{}: {e}", sink.origin))
}
