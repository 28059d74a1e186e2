//! `[[sink]]` tables, typed: [`SinkSpec`] has one variant per sink kind, chosen by the table's
//! `type`, each holding that kind's own config type (as Vector's sink configs are one tagged
//! enum). Every kind reads its table the same way ([`SinkKind::read`]: serde's derive through
//! [`decode_table`], then its relative paths from the config file's directory, then the checks
//! its types do not make), and is planned without side effects ([`SinkKind::plan`]). Adding a
//! sink kind is a line in [`sink_kinds!`] and a module with its config type and its
//! [`SinkKind`] implementation.

use super::Sink;
use super::forward::ForwardConfig;
use super::prometheus::PrometheusConfig;
use super::stdout::StdoutConfig;
use super::syslog::SyslogConfig;
use crate::base::keys::KeyLines;
use std::path::{Path, PathBuf};

/// What every sink kind's config offers.
pub trait SinkKind: serde::de::DeserializeOwned + Sized {
    /// The `type` of its tables.
    const TYPE: &'static str;
    /// Takes its relative paths (`tls.ca`, a spool directory, a textfile) from `base`, the
    /// config file's directory.
    fn resolve_paths(&mut self, _base: &Path) {}
    /// The checks that serde's types do not make, without side effects; an error starts
    /// with the key it is about (`tls: give both cert and key …`).
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// Checks what can be checked without side effects and makes the sink, not started:
    /// nothing is opened, bound or connected before [`Planned::start`].
    fn plan(&self) -> Result<Box<dyn Planned>, String>;

    /// Reads its `[[sink]]` table as written (the `type` key skipped). An error starts with
    /// the key it is about (`tls.ca: …`), so that the config can point at that key's line.
    fn read(table: &toml::Table, base: Option<&Path>) -> Result<Self, String> {
        let mut config: Self = decode_table(table)?;
        if let Some(base) = base {
            config.resolve_paths(base);
        }
        config.check()?;
        Ok(config)
    }
}

/// A sink kind's config as serde reads it from its `[[sink]]` table (the `type` key skipped).
/// An error starts with the key it is about (`tls.ca: invalid type: …`), or is serde's
/// message alone for the table itself.
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

/// The one list of sink kinds: each `Variant(ConfigType)` becomes a variant of [`SinkSpec`],
/// chosen by its config type's [`SinkKind::TYPE`].
macro_rules! sink_kinds {
    ($($variant:ident($config:ty)),* $(,)?) => {
        /// One `[[sink]]`, typed by its `type`.
        #[derive(Debug, Clone, PartialEq)]
        pub enum SinkSpec {
            $($variant($config)),*
        }

        impl SinkSpec {
            /// Every `type` a `[[sink]]` may have.
            pub const TYPES: &'static [&'static str] = &[$(<$config as SinkKind>::TYPE),*];

            fn read_kind(
                kind: &str,
                table: &toml::Table,
                base: Option<&Path>,
            ) -> Option<Result<SinkSpec, String>> {
                $(if kind == <$config as SinkKind>::TYPE {
                    return Some(<$config as SinkKind>::read(table, base).map(SinkSpec::$variant));
                })*
                None
            }

            pub fn kind(&self) -> &'static str {
                match self {
                    $(SinkSpec::$variant(_) => <$config as SinkKind>::TYPE),*
                }
            }

            /// The sink, checked and not started ([`SinkKind::plan`]).
            pub fn plan(&self) -> Result<Box<dyn Planned>, String> {
                match self {
                    $(SinkSpec::$variant(c) => c.plan()),*
                }
            }
        }
    };
}

sink_kinds! {
    Stdout(StdoutConfig),
    Syslog(SyslogConfig),
    Forward(ForwardConfig),
    Prometheus(PrometheusConfig),
}

impl SinkSpec {
    /// Reads a `[[sink]]` table: its `type`, then that kind's own config.
    pub fn from_table(table: &toml::Table, base: Option<&Path>) -> Result<SinkSpec, String> {
        let types = SinkSpec::TYPES.join(", ");
        let kind = match table.get("type") {
            Some(toml::Value::String(kind)) => kind.as_str(),
            Some(other) => return Err(format!("type: {other} is not one of {types}")),
            None => return Err(format!("type: missing; say which sink: {types}")),
        };
        SinkSpec::read_kind(kind, table, base)
            .unwrap_or_else(|| Err(format!("type: \"{kind}\" is not one of {types}")))
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
