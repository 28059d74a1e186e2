//! `zpulse plugins`, and running plugins for `once --interval` and `replay`.

use super::emit;
use crate::config::{self, Config};
use crate::plugins::{Extra, Level, Output, PluginHost, PluginInfo, Status};
use crate::report::Format;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use zpulse_proto::Sample;
use zpulse_proto::event::{Entry, Value};
use zpulse_proto::report::{ReportWindow, Section};

/// Flags shared by every command that runs plugins.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PluginArgs {
    /// Config file [default: /etc/zpulse/zpulse.toml (FreeBSD: /usr/local/etc/…) if it exists].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also load every *.so in DIR (repeatable).
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
    /// Also load the plugin file PATH (repeatable).
    #[arg(long = "plugin", value_name = "PATH")]
    pub plugins: Vec<PathBuf>,
}

impl PluginArgs {
    /// Whether any plugin flag was given.
    pub fn any(&self) -> bool {
        self.config.is_some() || !self.plugin_dirs.is_empty() || !self.plugins.is_empty()
    }

    pub fn extra(&self) -> Extra {
        Extra {
            dirs: self.plugin_dirs.clone(),
            paths: self.plugins.clone(),
        }
    }
}

/// The configured plugins, started, and how to print what they say.
pub(super) struct Runner {
    host: PluginHost,
    format: Format,
}

impl Runner {
    /// Reads the config and starts its plugins. `hostname` is the system's (or the capture's);
    /// the config's `hostname` wins.
    pub fn start(args: &PluginArgs, hostname: &str, format: Format) -> Result<Runner, String> {
        let config: Config = config::load(args.config.as_deref())?;
        let hostname = config.hostname.as_deref().unwrap_or(hostname);
        let host = PluginHost::start(&config.plugins, &args.extra(), hostname);
        Ok(Runner { host, format })
    }

    /// Runs the plugins on `sample`; returns their events rendered for stdout, and writes the
    /// log lines to stderr.
    pub fn run(&mut self, sample: &Arc<Sample>) -> String {
        let out = self.host.run(sample);
        print_logs(&out);
        render_events(&out.events, self.format)
    }

    /// Kernel events: each one's record, then what the plugins concluded from them, rendered
    /// for stdout (as `zpulse run`'s stdout sink would show them).
    pub fn zevents(&mut self, events: &[zpulse_proto::ZEvent]) -> String {
        if events.is_empty() {
            return String::new();
        }
        let mut entries: Vec<Entry> = events
            .iter()
            .map(|z| Entry {
                time: z.time,
                event: z.to_event(),
            })
            .collect();
        let out = self.host.deliver(events);
        print_logs(&out);
        entries.extend(out.events);
        render_events(&entries, self.format)
    }

    /// What the plugins concluded from kernel events, as they are (log lines go to stderr).
    pub fn zevent_findings(&mut self, events: &[zpulse_proto::ZEvent]) -> Vec<Entry> {
        let out = self.host.deliver(events);
        print_logs(&out);
        out.events
    }

    /// Runs the plugins on `sample` and returns their events as they are (log lines go to
    /// stderr).
    pub fn events(&mut self, sample: &Arc<Sample>) -> Vec<Entry> {
        let out = self.host.run(sample);
        print_logs(&out);
        out.events
    }

    /// `zpulse report`: every plugin's conclusions over `window`, the events the call
    /// produced, and what went wrong in it, in words for the report's page (a report call
    /// that failed or panicked, a section refused).
    pub fn report(&mut self, window: &ReportWindow) -> (Vec<Section>, Vec<Entry>, Vec<String>) {
        let (sections, out) = self.host.report_window(window);
        print_logs(&out);
        let mut problems: Vec<String> = out
            .logs
            .iter()
            .filter(|l| l.level <= Level::Warn)
            .map(|l| format!("{}: {}", l.source, l.message))
            .collect();
        problems.extend(
            out.events
                .iter()
                .filter(|e| e.event.check.starts_with("plugin."))
                .map(|e| e.event.summary.clone()),
        );
        (sections, out.events, problems)
    }

    /// Stops the plugins; each that did not run to the end (refused at start, hung, or
    /// disabled), with why. The output above is then not the whole picture.
    pub fn stop(self) -> (usize, Vec<String>) {
        let plugins = self.host.plugins();
        self.host.shutdown();
        let bad = plugins
            .iter()
            .filter(|p| p.status.is_trouble())
            .map(|p| {
                format!(
                    "{} {}: {}",
                    p.label(),
                    p.status.word(),
                    p.status.reason().unwrap_or("")
                )
            })
            .collect();
        (plugins.len(), bad)
    }

    /// [`Runner::stop`], as an error when any plugin did not run to the end: the command's
    /// exit status must say so.
    pub fn shutdown(self) -> Result<(), String> {
        let (all, bad) = self.stop();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} of {all} plugins did not run to the end: {}",
                bad.len(),
                bad.join("; ")
            ))
        }
    }
}

/// `zpulse plugins`: every plugin found, loaded or not, and why.
pub fn list(args: &PluginArgs, format: Format) -> Result<(), String> {
    let config = config::load(args.config.as_deref())?;
    let hostname = config.hostname.clone().unwrap_or_default();
    let mut host = PluginHost::start(&config.plugins, &args.extra(), &hostname);
    let out = host.take_output();
    print_logs(&out);
    let plugins = host.plugins();
    emit(&match format {
        Format::Text => table(&plugins, &config, args),
        Format::Json => {
            crate::report::json(&plugins.iter().map(info_json).collect::<Vec<_>>(), true) + "\n"
        }
    })?;
    host.shutdown();
    let bad = plugins.iter().filter(|p| p.status.is_trouble()).count();
    if bad > 0 {
        return Err(format!(
            "{bad} of {} plugins are not running",
            plugins.len()
        ));
    }
    Ok(())
}

fn table(plugins: &[PluginInfo], config: &Config, args: &PluginArgs) -> String {
    let mut s = String::new();
    if plugins.is_empty() {
        let mut places: Vec<String> = config
            .plugins
            .dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        places.extend(config.plugins.paths.iter().map(|p| p.display().to_string()));
        places.extend(args.plugin_dirs.iter().map(|d| d.display().to_string()));
        places.extend(args.plugins.iter().map(|p| p.display().to_string()));
        let _ = writeln!(s, "no plugins found (looked in: {})", places.join(", "));
        return s;
    }
    let rows: Vec<[String; 6]> = plugins
        .iter()
        .map(|p| {
            [
                p.label(),
                p.version.clone().unwrap_or_else(|| "-".into()),
                p.abi
                    .map_or_else(|| "-".into(), |(major, minor)| format!("{major}.{minor}")),
                p.status.word().to_string(),
                if p.status == Status::Loaded {
                    p.delivery()
                } else {
                    "-"
                }
                .to_string(),
                p.path.display().to_string(),
            ]
        })
        .collect();
    let header = ["NAME", "VERSION", "ABI", "STATUS", "SAMPLE", "PATH"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 6]| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i == 5 {
                l.push_str(cell);
            } else {
                let _ = write!(l, "{cell:<w$}  ", w = widths[i]);
            }
        }
        l + "\n"
    };
    s.push_str(&line(header));
    for (row, p) in rows.iter().zip(plugins) {
        s.push_str(&line(row.each_ref().map(String::as_str)));
        if let Some(why) = p.status.reason() {
            let _ = writeln!(s, "    {why}");
        }
    }
    s
}

fn info_json(p: &PluginInfo) -> serde_json::Value {
    serde_json::json!({
        "name": p.name,
        "version": p.version,
        "abi": p.abi.map(|(major, minor)| format!("{major}.{minor}")),
        "path": p.path,
        "build_info": p.build_info,
        "status": p.status.word(),
        "reason": p.status.reason(),
        "sample": p.delivery(),
    })
}

/// Log lines on stderr (debug ones are left out).
fn print_logs(out: &Output) {
    for line in out.logs.iter().filter(|l| l.level != Level::Debug) {
        eprintln!("zpulse: {line}");
    }
}

/// Events as text lines under the sample, or as JSON lines `{"time", "tag", "record"}`.
pub(super) fn render_events(events: &[Entry], format: Format) -> String {
    let mut s = String::new();
    match format {
        Format::Json => {
            for e in events {
                let line = serde_json::json!({
                    "time": e.time.as_f64(),
                    "tag": e.event.tag(),
                    "record": &e.event,
                });
                s.push_str(&crate::report::json(&line, false));
                s.push('\n');
            }
        }
        Format::Text => {
            if events.is_empty() {
                return s;
            }
            s.push_str("Events\n");
            for Entry { event: e, .. } in events {
                let state = e.state.map_or(e.kind.as_str(), |st| st.as_str());
                let _ = writeln!(
                    s,
                    "  [{} {}] {} {}: {}",
                    e.severity.as_str(),
                    state,
                    e.check,
                    e.subject,
                    e.summary
                );
                if let Some(advice) = &e.advice {
                    let _ = writeln!(s, "      advice: {}", advice.replace('\n', " "));
                }
                if !e.data.is_empty() {
                    let figures: Vec<String> = e
                        .data
                        .iter()
                        .map(|(k, v)| format!("{k}={}", figure(v)))
                        .collect();
                    let _ = writeln!(s, "      data: {}", figures.join(" "));
                }
            }
        }
    }
    s
}

fn figure(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => {
            let s = format!("{f:.2}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        Value::Str(s) => s.clone(),
        Value::List(_) | Value::Map(_) => serde_json::to_string(v).unwrap_or_default(),
    }
}
