//! `zpulse.toml`: the agent's one config file (docs/configuration.md).
//!
//! Every key has a default, so no file at all is a valid config: sample every 10 s, load the
//! plugins in the default directory, print to stdout. A wrong key or type is an error that
//! names the file, the key's own line and the key (`/etc/zpulse/zpulse.toml:7: plugins.budget:
//! …`, `/etc/zpulse/zpulse.toml:14: sink[1].tls.ca: …`), also for what is checked after
//! parsing: a sink's settings and a plugin's table ([`keys::KeyLines`]). Durations have the
//! one grammar of `zpulse_proto::sdk::config::parse_duration` (docs/configuration.md).
//!
//! ```toml
//! interval = "10s"
//! hostname = "nas1"                    # default: the system's
//! [plugins]
//! dirs = ["/usr/lib/zpulse/plugins"]   # every *.so there is loaded
//! paths = ["/opt/checks/libmine.so"]   # and these files
//! disable = ["l2arc-value"]            # plugins found there that are not started
//! budget = "2s"                        # time an on_sample call may take before it is hung
//! max_failures = 3                     # failures in a row before a plugin is disabled
//! max_events_per_sample = 1000         # events one plugin may emit per sample
//! max_event_bytes = 65536              # size limit of one event record
//! [plugins.hdd-saturation]             # any other table: that plugin's own config
//! saturation_pct = 95
//! [[sink]]                             # one per sink; `type` picks it (crate::sinks::spec)
//! type = "stdout"
//! [history]                            # see `crate::history::Config`
//! retention = "24h"
//! [events]                             # see `crate::sources::zevent::Config`
//! enabled = true
//! ```
//!
//! Relative paths in the file are relative to the file's directory.

pub use crate::base::keys;

use crate::sinks::spec::SinkSpec;
use keys::{KeyLines, decode_table, line_of};
use serde::Deserialize;
use serde::de::Deserializer;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// Where the agent looks when no `--config` is given.
pub fn default_path() -> &'static Path {
    if cfg!(target_os = "freebsd") {
        Path::new("/usr/local/etc/zpulse/zpulse.toml")
    } else {
        Path::new("/etc/zpulse/zpulse.toml")
    }
}

/// The plugin directory when the config names none.
pub fn default_plugin_dir() -> &'static Path {
    if cfg!(target_os = "freebsd") {
        Path::new("/usr/local/lib/zpulse/plugins")
    } else {
        Path::new("/usr/lib/zpulse/plugins")
    }
}

/// The whole config, every key resolved to its value or default.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file it was read from; `None` for the built-in defaults.
    pub file: Option<PathBuf>,
    pub interval: Duration,
    /// Overrides the system's hostname in events.
    pub hostname: Option<String>,
    pub plugins: PluginSettings,
    pub sinks: Vec<SinkConfig>,
    /// `[history]`: the local record of every snapshot.
    pub history: crate::history::Config,
    /// `[events]`: the kernel's event queue.
    pub events: crate::sources::zevent::Config,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            file: None,
            interval: INTERVAL.default(),
            hostname: None,
            plugins: PluginSettings::default(),
            sinks: Vec::new(),
            history: crate::history::Config::default(),
            events: crate::sources::zevent::Config::default(),
        }
    }
}

/// `[plugins]`: where plugins are, how they are run, and each one's own table.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSettings {
    /// Directories whose `*.so` files are loaded.
    pub dirs: Vec<PathBuf>,
    /// True when `dirs` is the built-in default, which may be missing without complaint.
    pub default_dirs: bool,
    /// Plugin files loaded in addition to the directories.
    pub paths: Vec<PathBuf>,
    /// Plugins, by name, that are found but not started (one check of a bundle, or a
    /// plugin in the shared directory that this host does not want).
    pub disable: Vec<String>,
    /// How long one call may take before the plugin is marked hung.
    pub budget: Duration,
    /// The whole-number limits, declared in [`plugin_limits!`].
    pub limits: PluginLimits,
    /// `[plugins.<name>]`, by plugin name.
    pub tables: BTreeMap<String, PluginTable>,
}

impl Default for PluginSettings {
    fn default() -> PluginSettings {
        PluginSettings {
            dirs: vec![default_plugin_dir().to_path_buf()],
            default_dirs: true,
            paths: Vec::new(),
            disable: Vec::new(),
            budget: BUDGET.default(),
            limits: PluginLimits::default(),
            tables: BTreeMap::new(),
        }
    }
}

/// One of `[plugins]`' limits, a whole number from 1 to `max`, as [`plugin_limits!`]
/// declares it: the parser, [`PluginLimits::default`] and the test that holds the shipped
/// conffile and zpulse.toml(5) to it all read this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub key: &'static str,
    pub default: u64,
    pub max: u64,
    pub doc: &'static str,
}

/// Declares every limit of `[plugins]` once — field, type, default, maximum, doc line — and
/// from that makes [`PluginLimits`] with its `Default`, the list [`PLUGIN_LIMITS`], the raw
/// keys serde reads and the check that applies them. A new limit is one line here.
macro_rules! plugin_limits {
    ($( $field:ident: $ty:ty = $default:expr, max $max:expr, $doc:literal; )*) => {
        /// The whole-number limits of `[plugins]` that the plugin host enforces.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct PluginLimits {
            $( #[doc = $doc] pub $field: $ty, )*
        }

        impl Default for PluginLimits {
            fn default() -> PluginLimits {
                PluginLimits { $( $field: $default, )* }
            }
        }

        /// Every limit of `[plugins]`, as declared.
        pub const PLUGIN_LIMITS: &[Limit] = &[
            $( Limit { key: stringify!($field), default: $default as u64, max: $max, doc: $doc }, )*
        ];

        /// The limits as the file writes them, before their ranges are checked.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawLimits {
            $( $field: Option<u64>, )*
        }

        impl RawLimits {
            /// Sets each limit the file gives, or the error naming the first out of range.
            fn apply(self, limits: &mut PluginLimits) -> Result<(), String> {
                $(
                    if let Some(n) = self.$field {
                        if n == 0 || n > $max {
                            return Err(format!(
                                "{}: give a number from 1 to {}", stringify!($field), $max
                            ));
                        }
                        limits.$field = n as $ty;
                    }
                )*
                Ok(())
            }
        }
    };
}

plugin_limits! {
    max_failures: u32 = 3, max 1000,
        "Failures in a row after which a plugin is disabled.";
    max_events_per_sample: u32 = 1000, max 1_000_000,
        "Events one plugin may emit per sample; the rest are dropped.";
    max_event_bytes: usize = 64 * 1024, max 16 << 20,
        "Largest event record accepted, in bytes of MessagePack.";
}

/// One of the agent's durations: declared once, with its default and its range as the
/// config file writes them (the one grammar, `zpulse_proto::sdk::config::parse_duration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub key: &'static str,
    pub default: &'static str,
    pub min: &'static str,
    pub max: &'static str,
}

/// `interval`: how often the agent samples.
pub const INTERVAL: Span = Span {
    key: "interval",
    default: "10s",
    min: "1s",
    max: "1d",
};

/// `plugins.budget`: how long one plugin call may take before the plugin is hung.
pub const BUDGET: Span = Span {
    key: "budget",
    default: "2s",
    min: "1ms",
    max: "10m",
};

impl Span {
    fn parse(text: &str) -> Duration {
        zpulse_proto::sdk::config::parse_duration(text)
            .unwrap_or_else(|e| panic!("a declared duration {text:?}: {e}"))
    }

    pub fn default(&self) -> Duration {
        Span::parse(self.default)
    }

    /// `d` if it is within the range, else the error naming the key.
    fn check(&self, d: Duration) -> Result<Duration, String> {
        if d < Span::parse(self.min) || d > Span::parse(self.max) {
            return Err(format!(
                "{}: give a duration between {} and {}",
                self.key, self.min, self.max
            ));
        }
        Ok(d)
    }
}

/// One plugin's table, and where it was written (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub struct PluginTable {
    pub table: toml::Table,
    /// `file:line` of the table's header.
    pub origin: String,
    /// The line of each of its keys.
    pub keys: KeyLines,
}

impl PluginTable {
    /// An error of plugin `name` about this table, at the line of the key it names.
    pub fn locate(&self, name: &str, message: &str) -> String {
        self.keys.locate(&format!("plugins.{name}"), message)
    }
}

pub use crate::sinks::spec::SinkConfig;

/// A config file is a page or two of TOML; a larger one is a mistake, not a config.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads the config: `explicit` must exist; without it the default path is read when it
/// exists, and the built-in defaults are used when it does not.
pub fn load(explicit: Option<&Path>) -> Result<Config, String> {
    let path = match explicit {
        Some(p) => p,
        None if default_path().exists() => default_path(),
        None => return Ok(Config::default()),
    };
    // A regular file only: a FIFO in its place would block the reload (and SIGTERM behind it).
    let bytes = crate::base::files::read_regular(path, MAX_CONFIG_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let text =
        String::from_utf8(bytes).map_err(|e| format!("{}: not UTF-8 text: {e}", path.display()))?;
    parse(&text, path)
}

/// Parses the text of a config file read from `file`.
pub fn parse(text: &str, file: &Path) -> Result<Config, String> {
    let origin = |span: Option<std::ops::Range<usize>>| match span {
        Some(span) => format!("{}:{}", file.display(), line_of(text, span.start)),
        None => file.display().to_string(),
    };
    let toml_de = toml::Deserializer::parse(text)
        .map_err(|e| format!("{}: {}", origin(e.span()), e.message().trim_end()))?;
    let raw: RawConfig = serde_path_to_error::deserialize(toml_de).map_err(|e| {
        let key = key_path(e.path());
        let inner = e.into_inner();
        let key = if key.is_empty() { key } else { key + ": " };
        format!("{}: {key}{}", origin(inner.span()), inner.message())
    })?;
    // The same text again, with every key's position: for errors found after parsing.
    let doc = toml::de::DeTable::parse(text)
        .map_err(|e| format!("{}: {}", origin(e.span()), e.message().trim_end()))?;
    let file_name = file.display().to_string();
    let top = |name: &str| {
        doc.get_ref()
            .iter()
            .find(|(k, _)| k.get_ref() == name)
            .map(|(_, v)| v)
    };
    let base = file.parent().unwrap_or(Path::new("."));
    let resolve = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };

    let mut config = Config {
        file: Some(file.to_path_buf()),
        ..Config::default()
    };
    if let Some(interval) = raw.interval {
        config.interval = INTERVAL
            .check(interval.get_ref().0)
            .map_err(|e| format!("{}: {e}", origin(Some(interval.span()))))?;
    }
    if let Some(host) = raw.hostname {
        let name = host.get_ref();
        // Control characters too: the name goes into every event, log line and syslog
        // header, where a NUL cuts it and an ESC drives the terminal that shows it.
        if name.is_empty()
            || name.len() > 255
            || name.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(format!(
                "{}: hostname: give a name of 1 to 255 characters without spaces or control \
                 characters",
                origin(Some(host.span()))
            ));
        }
        config.hostname = Some(name.clone());
    }

    let plugin_keys = top("plugins")
        .map(|v| KeyLines::of(&file_name, text, v))
        .unwrap_or_default();
    let (agent_keys, tables) = split_plugin_tables(raw.plugins.unwrap_or_default());
    let (p, limits) = decode_plugin_keys(agent_keys).map_err(|e| {
        let e = if e.contains("unknown field") {
            format!("{e}; a plugin's own settings go in a table [plugins.<name>]")
        } else {
            e
        };
        plugin_keys.locate("plugins", &e)
    })?;
    let settings = &mut config.plugins;
    let fail = |message: String| Err(plugin_keys.locate("plugins", &message));
    if let Some(dirs) = p.dirs {
        settings.dirs = dirs.into_iter().map(resolve).collect();
        settings.default_dirs = false;
    }
    if let Some(paths) = p.paths {
        settings.paths = paths.into_iter().map(resolve).collect();
    }
    if let Some(disable) = p.disable {
        for name in &disable {
            if let Err(e) = zpulse_proto::abi::check_name(name) {
                return fail(format!("disable: {name:?}: {e}"));
            }
        }
        settings.disable = disable;
    }
    if let Some(TomlDuration(d)) = p.budget {
        settings.budget = BUDGET
            .check(d)
            .map_err(|e| plugin_keys.locate("plugins", &e))?;
    }
    limits
        .apply(&mut settings.limits)
        .map_err(|e| plugin_keys.locate("plugins", &e))?;
    for (name, table) in tables {
        let at = plugin_keys.at(&name);
        if let Err(e) = zpulse_proto::abi::check_name(&name) {
            return Err(format!("{at}: plugins.{name}: {e}"));
        }
        let keys = top("plugins")
            .and_then(|plugins| match plugins.get_ref() {
                toml::de::DeValue::Table(t) => t.iter().find(|(k, _)| k.get_ref() == &name),
                _ => None,
            })
            .map(|(_, v)| KeyLines::of(&file_name, text, v))
            .unwrap_or_default();
        settings.tables.insert(
            name,
            PluginTable {
                table,
                origin: at,
                keys,
            },
        );
    }

    if let Some(history) = raw.history {
        let history = history.into_inner();
        if let Err(e) = history.check() {
            let keys = top("history")
                .map(|v| KeyLines::of(&file_name, text, v))
                .unwrap_or_default();
            return Err(keys.locate("history", &e));
        }
        let dir = history.dir.clone().map(resolve);
        config.history = crate::history::Config { dir, ..history };
    }

    if let Some(events) = raw.events {
        let events = events.into_inner();
        if let Err(e) = events.check() {
            let keys = top("events")
                .map(|v| KeyLines::of(&file_name, text, v))
                .unwrap_or_default();
            return Err(keys.locate("events", &e));
        }
        let cursor = events.cursor.clone().map(resolve);
        config.events = crate::sources::zevent::Config { cursor, ..events };
    }

    let sink_keys: Vec<KeyLines> = match top("sink").map(|v| v.get_ref()) {
        Some(toml::de::DeValue::Array(items)) => items
            .iter()
            .map(|item| KeyLines::of(&file_name, text, item))
            .collect(),
        _ => Vec::new(),
    };
    for (index, table) in raw.sink.into_iter().enumerate() {
        let keys = sink_keys.get(index).cloned().unwrap_or_default();
        let spec = SinkSpec::from_table(&table, Some(base))
            .map_err(|e| keys.locate(&format!("sink[{index}]"), &e))?;
        let sink = SinkConfig {
            spec,
            table,
            index,
            keys,
        };
        one_spool_per_sink(&config.sinks, &sink)?;
        config.sinks.push(sink);
    }
    Ok(config)
}

/// `[plugins]` split into the agent's own keys and the plugins' tables. A key is a plugin's
/// table when its value is a table that is not one of the agent's keys (a table under an
/// agent key's name stays with the agent's keys, to be refused for its type).
fn split_plugin_tables(plugins: toml::Table) -> (toml::Table, Vec<(String, toml::Table)>) {
    let mut agent = toml::Table::new();
    let mut tables = Vec::new();
    for (key, value) in plugins {
        match value {
            toml::Value::Table(table) if !is_agent_key(&key) => tables.push((key, table)),
            value => {
                agent.insert(key, value);
            }
        }
    }
    (agent, tables)
}

/// `[plugins]`' own keys, typed: the limits declared in [`plugin_limits!`] go to
/// [`RawLimits`], the others to [`PluginKeys`]; a key neither knows is refused by
/// [`PluginKeys`], whose error lists its keys and the limits'.
fn decode_plugin_keys(mut keys: toml::Table) -> Result<(PluginKeys, RawLimits), String> {
    let mut limits = toml::Table::new();
    for limit in PLUGIN_LIMITS {
        if let Some(value) = keys.remove(limit.key) {
            limits.insert(limit.key.to_string(), value);
        }
    }
    let limits: RawLimits = decode_table(limits)?;
    let plugin_keys: PluginKeys = decode_table(keys).map_err(|e| {
        // serde lists the keys of the type it decodes ("expected one of `dirs`, …"): the
        // limits, decoded apart, are added to the list.
        if e.contains("unknown field") && e.contains("expected one of") {
            let limits: Vec<String> = PLUGIN_LIMITS
                .iter()
                .map(|l| format!("`{}`", l.key))
                .collect();
            format!("{e}, {}", limits.join(", "))
        } else {
            e
        }
    })?;
    Ok((plugin_keys, limits))
}

/// Whether `key` is one of `[plugins]`' own keys: asked of serde, which knows the types' keys.
fn is_agent_key(key: &str) -> bool {
    if PLUGIN_LIMITS.iter().any(|l| l.key == key) {
        return true;
    }
    let mut probe = toml::Table::new();
    probe.insert(key.to_string(), toml::Value::Table(toml::Table::new()));
    match decode_table::<PluginKeys>(probe) {
        Ok(_) => true,
        Err(e) => !e.contains("unknown field"),
    }
}

/// Two Forward sinks on one spool directory would both append to it and number their new
/// segments alike (a batch then fails with "File exists" and is lost): refused.
fn one_spool_per_sink(earlier: &[SinkConfig], sink: &SinkConfig) -> Result<(), String> {
    let SinkSpec::Forward(forward) = &sink.spec else {
        return Ok(());
    };
    let dir = forward.spool_dir();
    for other in earlier {
        if let SinkSpec::Forward(f) = &other.spec
            && f.spool_dir() == dir
        {
            let key = if forward.spool_dir.is_some() {
                "spool_dir"
            } else {
                "address"
            };
            return Err(sink.locate(&format!(
                "{key}: sink[{}] ({}) spools to {} already; give each Forward sink its own \
                 spool_dir",
                other.index,
                other.origin(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// `plugins.dirs`, `sink[1].type`: the key as the file spells it (toml's `Spanned` wrapper
/// adds internal segments, which are left out).
fn key_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut s = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Map { key } if key.starts_with("$__") => {}
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(key);
            }
            Segment::Seq { index } => s.push_str(&format!("[{index}]")),
            Segment::Unknown => {}
        }
    }
    s
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    interval: Option<Spanned<TomlDuration>>,
    hostname: Option<Spanned<String>>,
    plugins: Option<toml::Table>,
    #[serde(default)]
    sink: Vec<toml::Table>,
    history: Option<Spanned<crate::history::Config>>,
    events: Option<Spanned<crate::sources::zevent::Config>>,
}

/// A duration as TOML gives it: `"10s"`, or a number of seconds.
struct TomlDuration(Duration);

impl<'de> Deserialize<'de> for TomlDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        zpulse_proto::sdk::config::duration::deserialize(d).map(TomlDuration)
    }
}

/// `[plugins]`: the agent's own keys, typed (the plugins' tables are split off before, see
/// [`split_plugin_tables`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginKeys {
    dirs: Option<Vec<PathBuf>>,
    paths: Option<Vec<PathBuf>>,
    disable: Option<Vec<String>>,
    budget: Option<TomlDuration>,
}

#[cfg(test)]
mod tests;
