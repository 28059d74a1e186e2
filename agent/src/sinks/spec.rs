//! `[[sink]]` tables, typed: [`SinkSpec`] has one variant per sink kind, chosen by the table's
//! `type`, each holding that kind's own config type (as Vector's sink configs are one tagged
//! enum). The config file's parser reads sinks only through [`SinkSpec::from_table`], and
//! [`super::build`] makes them only through [`SinkSpec::plan`], so adding a sink kind is a
//! variant here and an implementation of [`SinkKind`] for its config. [`decode_table`] and
//! [`resolve_relative`] are how a kind whose config is a serde type reads its table and takes
//! its files from the config file's directory.

use super::Sink;
use super::forward::{ForwardConfig, ForwardSink, Prepared};
use super::prometheus::{PrometheusConfig, PrometheusSink};
use super::stdout::{StdoutConfig, StdoutSink};
use super::syslog::{SyslogConfig, SyslogSink};
use crate::base::keys::KeyLines;
use std::path::{Path, PathBuf};

/// What every sink kind's config offers.
pub trait SinkKind: Sized {
    /// The `type` of its tables.
    const TYPE: &'static str;
    /// Reads its `[[sink]]` table as written (the `type` key included, which it skips);
    /// relative paths are taken from `base`, the config file's directory. An error starts with
    /// the key it is about (`tls.ca: …`), so that the config can point at that key's line.
    fn from_table(table: &toml::Table, base: Option<&Path>) -> Result<Self, String>;
    /// Checks what can be checked without side effects and makes the sink, not started.
    fn plan(&self) -> Result<Box<dyn Planned>, String>;
}

/// A sink kind's config as serde reads it from its `[[sink]]` table (the `type` key skipped),
/// for the kinds whose config is a serde type. An error starts with the key it is about
/// (`tls.ca: invalid type: …`), or is serde's message alone for the table itself.
pub fn decode_table<T: serde::de::DeserializeOwned>(table: &toml::Table) -> Result<T, String> {
    let mut table = table.clone();
    table.remove("type");
    crate::base::keys::decode_table(table)
}

/// Takes each relative path among `paths` (a sink's files: `tls.ca`, a spool directory) from
/// `base`, the config file's directory.
pub fn resolve_relative<'a>(base: &Path, paths: impl IntoIterator<Item = &'a mut PathBuf>) {
    for path in paths {
        if path.is_relative() {
            *path = base.join(&*path);
        }
    }
}

/// A checked sink, not started: what `check-config` and a reload stop at.
pub trait Planned: Send {
    /// The name the sink will have (`forward host:port`, `syslog …`, `stdout`).
    fn name(&self) -> String;
    fn start(self: Box<Self>) -> Result<Box<dyn Sink>, String>;
}

/// One `[[sink]]`, typed by its `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkSpec {
    Stdout(StdoutConfig),
    Syslog(SyslogConfig),
    Forward(ForwardConfig),
    Prometheus(PrometheusConfig),
}

impl SinkSpec {
    /// Every `type` a `[[sink]]` may have.
    pub const TYPES: [&'static str; 4] = [
        StdoutConfig::TYPE,
        SyslogConfig::TYPE,
        ForwardConfig::TYPE,
        PrometheusConfig::TYPE,
    ];

    /// Reads a `[[sink]]` table: its `type`, then that kind's own config.
    pub fn from_table(table: &toml::Table, base: Option<&Path>) -> Result<SinkSpec, String> {
        let types = SinkSpec::TYPES.join(", ");
        let kind = match table.get("type") {
            Some(toml::Value::String(kind)) => kind.as_str(),
            Some(other) => return Err(format!("type: {other} is not one of {types}")),
            None => return Err(format!("type: missing; say which sink: {types}")),
        };
        fn read<K: SinkKind>(
            table: &toml::Table,
            base: Option<&Path>,
            wrap: fn(K) -> SinkSpec,
        ) -> Result<SinkSpec, String> {
            K::from_table(table, base).map(wrap)
        }
        match kind {
            StdoutConfig::TYPE => read(table, base, SinkSpec::Stdout),
            SyslogConfig::TYPE => read(table, base, SinkSpec::Syslog),
            ForwardConfig::TYPE => read(table, base, SinkSpec::Forward),
            PrometheusConfig::TYPE => read(table, base, SinkSpec::Prometheus),
            other => Err(format!("type: \"{other}\" is not one of {types}")),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            SinkSpec::Stdout(_) => StdoutConfig::TYPE,
            SinkSpec::Syslog(_) => SyslogConfig::TYPE,
            SinkSpec::Forward(_) => ForwardConfig::TYPE,
            SinkSpec::Prometheus(_) => PrometheusConfig::TYPE,
        }
    }

    pub fn plan(&self) -> Result<Box<dyn Planned>, String> {
        match self {
            SinkSpec::Stdout(c) => c.plan(),
            SinkSpec::Syslog(c) => c.plan(),
            SinkSpec::Forward(c) => c.plan(),
            SinkSpec::Prometheus(c) => c.plan(),
        }
    }
}

impl SinkKind for StdoutConfig {
    const TYPE: &'static str = "stdout";
    fn from_table(table: &toml::Table, _base: Option<&Path>) -> Result<Self, String> {
        match table.keys().find(|k| *k != "type") {
            Some(k) => Err(format!("{k}: unknown setting; a stdout sink takes none")),
            None => Ok(StdoutConfig),
        }
    }
    fn plan(&self) -> Result<Box<dyn Planned>, String> {
        Ok(stdout_plan())
    }
}

/// The stdout sink, checked: there is nothing to check.
pub fn stdout_plan() -> Box<dyn Planned> {
    Box::new(PlannedStdout)
}

struct PlannedStdout;

impl Planned for PlannedStdout {
    fn name(&self) -> String {
        "stdout".into()
    }
    fn start(self: Box<Self>) -> Result<Box<dyn Sink>, String> {
        Ok(Box::new(StdoutSink::new()))
    }
}

impl SinkKind for SyslogConfig {
    const TYPE: &'static str = "syslog";
    fn from_table(table: &toml::Table, base: Option<&Path>) -> Result<Self, String> {
        SyslogConfig::from_table(table, base)
    }
    fn plan(&self) -> Result<Box<dyn Planned>, String> {
        Ok(Box::new(SyslogSink::new(self.clone())?))
    }
}

impl Planned for SyslogSink {
    fn name(&self) -> String {
        Sink::name(self)
    }
    fn start(self: Box<Self>) -> Result<Box<dyn Sink>, String> {
        Ok(self)
    }
}

impl SinkKind for ForwardConfig {
    const TYPE: &'static str = "forward";
    fn from_table(table: &toml::Table, base: Option<&Path>) -> Result<Self, String> {
        ForwardConfig::from_toml(table, base.unwrap_or(Path::new(".")))
    }
    /// Nothing is opened: the spool waits for [`Planned::start`].
    fn plan(&self) -> Result<Box<dyn Planned>, String> {
        Ok(Box::new(ForwardSink::prepare(self.clone())?))
    }
}

impl Planned for Prepared {
    fn name(&self) -> String {
        Prepared::name(self)
    }
    fn start(self: Box<Self>) -> Result<Box<dyn Sink>, String> {
        Ok(Box::new(Prepared::start(*self)?))
    }
}

impl SinkKind for PrometheusConfig {
    const TYPE: &'static str = "prometheus";
    fn from_table(table: &toml::Table, base: Option<&Path>) -> Result<Self, String> {
        PrometheusConfig::from_table(table, base)
    }
    /// Nothing is opened: the listener is bound (or this process's own reused) by
    /// [`Planned::start`]; its address was checked when the table was read.
    fn plan(&self) -> Result<Box<dyn Planned>, String> {
        Ok(Box::new(PlannedPrometheus(self.clone())))
    }
}

struct PlannedPrometheus(PrometheusConfig);

impl Planned for PlannedPrometheus {
    fn name(&self) -> String {
        PrometheusSink::name_of(&self.0)
    }
    fn start(self: Box<Self>) -> Result<Box<dyn Sink>, String> {
        Ok(Box::new(PrometheusSink::new(self.0)?))
    }
}

/// One `[[sink]]`: its typed config, the table as written (what a reload compares), and
/// where each key was written.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkConfig {
    pub spec: SinkSpec,
    pub table: toml::Table,
    /// Its place among the `[[sink]]` tables, from 0.
    pub index: usize,
    pub keys: KeyLines,
}

impl SinkConfig {
    /// `forward`, `syslog`, `stdout` or `prometheus`.
    pub fn kind(&self) -> &'static str {
        self.spec.kind()
    }

    /// `file:line` of the table's header.
    pub fn origin(&self) -> String {
        self.keys.origin()
    }

    /// An error about this sink, at the line of the key it names (`file:line: sink[0].key:
    /// …`).
    pub fn locate(&self, message: &str) -> String {
        self.keys.locate(&format!("sink[{}]", self.index), message)
    }
}
