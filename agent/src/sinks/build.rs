//! Turning a `[[sink]]` table of the config into a running sink.

use super::Sink;
use super::forward::{ForwardConfig, ForwardSink};
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
        "forward" => forward_config(&sink.table, config_dir)
            .and_then(ForwardSink::new)
            .map(|s| Box::new(s) as Box<dyn Sink>),
        other => Err(format!(
            "unknown sink type '{other}': use forward, syslog or stdout"
        )),
    };
    built.map_err(|e| format!("{}: {e}", sink.origin))
}

fn forward_config(table: &toml::Table, base: Option<&Path>) -> Result<ForwardConfig, String> {
    let mut table = table.clone();
    table.remove("type");
    let mut config: ForwardConfig = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| format!("sink (forward): {}", e.message()))?;
    if let Some(base) = base {
        let resolve = |p: &mut std::path::PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(dir) = config.spool_dir.as_mut() {
            resolve(dir);
        }
        if let Some(tls) = config.tls.as_mut() {
            for p in [tls.ca.as_mut(), tls.cert.as_mut(), tls.key.as_mut()]
                .into_iter()
                .flatten()
            {
                resolve(p);
            }
        }
    }
    Ok(config)
}
