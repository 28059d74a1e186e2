//! A check's settings, declared once.
//!
//! [`crate::settings!`] takes each setting's name, type, default, rules and one doc line, and
//! makes from that one declaration the `Config` struct (serde: every key optional, unknown
//! keys refused), its `Default`, and [`Settings`]: the list of settings
//! ([`Settings::SETTINGS`], what the docs table, the shipped conffile and the man page are
//! generated from) and the check of the declared rules ([`Settings::check_rules`]), which
//! the agent's load, `zpulse check-config` and a reload all run through the plugin's
//! `check_config` before the check's own `build`.
//!
//! ```
//! use std::time::Duration;
//! use zpulse_proto::sdk::settings::Rule;
//!
//! zpulse_proto::settings! {
//!     /// The `[plugins.busy]` table.
//!     pub struct Config {
//!         window(Duration::from_secs(600), 60, 3);
//!         /// raise when a disk is at least this busy (%util)
//!         busy_pct: f64 = 90.0, [Rule::Pct];
//!         /// clear at or below this %util
//!         clear_pct: f64 = 70.0, [Rule::Pct, Rule::NotAbove("busy_pct")];
//!         /// a raised finding stays up at least this long
//!         #[serde(with = "zpulse_proto::sdk::config::duration")]
//!         min_hold: Duration = Duration::from_secs(300), [];
//!         /// only these disks (kernel names); empty = every disk
//!         disks: Vec<String> = Vec::new(), [];
//!     }
//! }
//!
//! use zpulse_proto::sdk::settings::Settings;
//! let bad = Config { clear_pct: 95.0, ..Config::default() };
//! assert_eq!(
//!     bad.check_rules().unwrap_err().to_string(),
//!     "clear_pct: must be at most busy_pct (90), not 95"
//! );
//! assert_eq!(Config::SETTINGS[0].key, "window");
//! ```
//!
//! The optional first line, `window(span, samples, min);`, declares the three window
//! settings every windowed check has (`window`, `window_samples`, `min_samples`), with the
//! one rule of [`crate::sdk::stats::check_window`], and `Config::new_window`.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;
use std::time::Duration;

/// One declared setting: what the docs, the conffile and the man page show of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    pub key: &'static str,
    /// What kind of value it takes, in words: `number`, `integer`, `duration`, `boolean`,
    /// `string`, `list of strings`.
    pub kind: &'static str,
    /// The rules its value must follow, besides its type.
    pub rules: &'static [Rule],
    /// One line: what the setting does.
    pub doc: &'static str,
}

/// A rule on a setting's value (as a number: a duration in seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// A percentage: 0 to 100.
    Pct,
    /// More than 0.
    Positive,
    /// At least this.
    AtLeast(f64),
    /// At most this.
    AtMost(f64),
    /// No more than the named setting (a clear level below its raise level).
    NotAbove(&'static str),
    /// No less than the named setting (a critical level above its raise level).
    NotBelow(&'static str),
}

impl Rule {
    /// The rule in a few words, for the docs table: `0–100`, `> 0`, `≤ busy_pct`.
    pub fn describe(&self) -> String {
        match self {
            Rule::Pct => "0–100".into(),
            Rule::Positive => "> 0".into(),
            Rule::AtLeast(v) => format!("≥ {v}"),
            Rule::AtMost(v) => format!("≤ {v}"),
            Rule::NotAbove(k) => format!("≤ `{k}`"),
            Rule::NotBelow(k) => format!("≥ `{k}`"),
        }
    }
}

/// A setting's failure: the key, and what is wrong with its value. Shown as `key: message`,
/// which the agent places at the key's line of the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError {
    pub key: String,
    pub message: String,
}

impl SettingError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> SettingError {
        SettingError {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for SettingError {}

/// What the declaration of a check's settings gives (implemented by [`crate::settings!`]).
pub trait Settings:
    DeserializeOwned + Serialize + Default + Clone + fmt::Debug + PartialEq
{
    /// Every setting, in the order declared.
    const SETTINGS: &'static [Setting];
    /// Each setting's value as TOML text, in the order of [`Settings::SETTINGS`]; `None`
    /// for an optional setting that is unset.
    fn values(&self) -> Vec<Option<String>>;
    /// A setting's value as a number (a duration in seconds), for the rules.
    fn figure(&self, key: &str) -> Option<f64>;
    /// The declared rules, the first failure: what every load and check runs before the
    /// check's own `build`.
    fn check_rules(&self) -> Result<(), SettingError>;
}

fn check_rule<S: Settings>(
    settings: &S,
    key: &str,
    value: f64,
    rule: &Rule,
) -> Result<(), SettingError> {
    let fail = |why: String| Err(SettingError::new(key, format!("{why}, not {value}")));
    match *rule {
        Rule::Pct if !(0.0..=100.0).contains(&value) => {
            fail("must be a percentage from 0 to 100".into())
        }
        Rule::Positive if !(value.is_finite() && value > 0.0) => {
            fail("must be a positive number".into())
        }
        Rule::AtLeast(min) if value.is_nan() || value < min => {
            fail(format!("must be at least {min}"))
        }
        Rule::AtMost(max) if value.is_nan() || value > max => {
            fail(format!("must be at most {max}"))
        }
        Rule::NotAbove(other) => match settings.figure(other) {
            Some(limit) if value.is_nan() || value > limit => {
                fail(format!("must be at most {other} ({limit})"))
            }
            _ => Ok(()),
        },
        Rule::NotBelow(other) => match settings.figure(other) {
            Some(limit) if value.is_nan() || value < limit => {
                fail(format!("must be at least {other} ({limit})"))
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The type of a setting's value: its kind in words, its number for the rules, its TOML text.
pub trait SettingValue {
    const KIND: &'static str;
    fn figure(&self) -> Option<f64>;
    fn toml(&self) -> Option<String>;
}

impl SettingValue for f64 {
    const KIND: &'static str = "number";
    fn figure(&self) -> Option<f64> {
        Some(*self)
    }
    fn toml(&self) -> Option<String> {
        Some(format!("{self}"))
    }
}

macro_rules! integer_setting {
    ($($t:ty),*) => {$(
        impl SettingValue for $t {
            const KIND: &'static str = "integer";
            fn figure(&self) -> Option<f64> {
                Some(*self as f64)
            }
            fn toml(&self) -> Option<String> {
                Some(self.to_string())
            }
        }
    )*};
}
integer_setting!(u32, u64, usize);

impl SettingValue for bool {
    const KIND: &'static str = "boolean";
    fn figure(&self) -> Option<f64> {
        None
    }
    fn toml(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl SettingValue for Duration {
    const KIND: &'static str = "duration";
    fn figure(&self) -> Option<f64> {
        Some(self.as_secs_f64())
    }
    fn toml(&self) -> Option<String> {
        Some(format!("\"{}\"", duration_text(*self)))
    }
}

impl SettingValue for String {
    const KIND: &'static str = "string";
    fn figure(&self) -> Option<f64> {
        None
    }
    fn toml(&self) -> Option<String> {
        Some(format!("{self:?}"))
    }
}

impl SettingValue for Vec<String> {
    const KIND: &'static str = "list of strings";
    fn figure(&self) -> Option<f64> {
        None
    }
    fn toml(&self) -> Option<String> {
        let items: Vec<String> = self.iter().map(|s| format!("{s:?}")).collect();
        Some(format!("[{}]", items.join(", ")))
    }
}

impl<T: SettingValue> SettingValue for Option<T> {
    const KIND: &'static str = T::KIND;
    fn figure(&self) -> Option<f64> {
        self.as_ref().and_then(T::figure)
    }
    fn toml(&self) -> Option<String> {
        self.as_ref().and_then(T::toml)
    }
}

/// A duration as the one grammar writes it, in the largest unit that keeps it whole:
/// `"30m"`, `"24h"`, `"35d"`, `"250ms"`, `"90s"`.
pub fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    // Days from two of them on (a day reads better as "24h"); never weeks, which people
    // count in days.
    for (unit, len, from) in [("d", 86_400, 2 * 86_400), ("h", 3600, 1), ("m", 60, 1)] {
        if s >= from && s.is_multiple_of(len) {
            return format!("{}{unit}", s / len);
        }
    }
    format!("{s}s")
}

/// The doc lines of the window settings, shared by every check that declares them (a
/// macro, so that the struct's field docs take them too).
#[doc(hidden)]
#[macro_export]
macro_rules! __window_doc {
    (window) => {
        "how far back the window reaches"
    };
    (window_samples) => {
        "at most this many samples in the window; 0 = no limit (only `window` bounds it), \
         otherwise at least `min_samples`"
    };
    (min_samples) => {
        "fewer samples in the window: no verdict"
    };
}

pub const WINDOW_DOC: &str = crate::__window_doc!(window);
pub const WINDOW_SAMPLES_DOC: &str = crate::__window_doc!(window_samples);
pub const MIN_SAMPLES_DOC: &str = crate::__window_doc!(min_samples);

/// The window settings' rule ([`crate::sdk::stats::check_window`]), naming the key it is
/// about.
pub fn check_window(
    window: Duration,
    window_samples: usize,
    min_samples: usize,
) -> Result<(), SettingError> {
    if window.is_zero() {
        return Err(SettingError::new(
            "window",
            "must be longer than 0 s: a window of 0 s holds no sample",
        ));
    }
    crate::sdk::stats::check_window_samples(window_samples, min_samples).map_err(|_| {
        SettingError::new(
            "window_samples",
            format!(
                "must be 0 (no limit) or at least min_samples ({min_samples}), not \
                 {window_samples}"
            ),
        )
    })
}

/// Declares a check's settings once: the struct, its defaults, its [`Settings`]. See the
/// [module](crate::sdk::settings) for the syntax. The plugin crate names this one
/// `zpulse_proto` (the serde derives go through `zpulse_proto::serde`).
#[macro_export]
macro_rules! settings {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(window($span:expr, $samples:expr, $min:expr);)?
            $(
                #[doc = $doc:literal]
                $(#[$attr:meta])*
                $field:ident : $ty:ty = $default:expr, [$($rule:expr),* $(,)?];
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, $crate::serde::Deserialize, $crate::serde::Serialize)]
        #[serde(crate = "zpulse_proto::serde", default, deny_unknown_fields)]
        $vis struct $name {
            $(
                #[doc = $crate::__window_doc!(window)]
                #[doc = concat!("\n\nDefault: `", stringify!($span), "`.")]
                #[serde(with = "zpulse_proto::sdk::config::duration")]
                pub window: ::std::time::Duration,
                #[doc = $crate::__window_doc!(window_samples)]
                pub window_samples: usize,
                #[doc = $crate::__window_doc!(min_samples)]
                pub min_samples: usize,
            )?
            $(
                #[doc = $doc]
                $(#[$attr])*
                pub $field: $ty,
            )*
        }

        impl ::std::default::Default for $name {
            fn default() -> Self {
                $name {
                    $(
                        window: $span,
                        window_samples: $samples,
                        min_samples: $min,
                    )?
                    $($field: $default,)*
                }
            }
        }

        impl $crate::sdk::settings::Settings for $name {
            const SETTINGS: &'static [$crate::sdk::settings::Setting] = &[
                $(
                    $crate::sdk::settings::window_setting("window", stringify!($span)),
                    $crate::sdk::settings::window_setting("window_samples", stringify!($samples)),
                    $crate::sdk::settings::window_setting("min_samples", stringify!($min)),
                )?
                $($crate::sdk::settings::Setting {
                    key: stringify!($field),
                    kind: <$ty as $crate::sdk::settings::SettingValue>::KIND,
                    rules: &[$($rule),*],
                    doc: $doc,
                },)*
            ];

            fn values(&self) -> Vec<Option<String>> {
                use $crate::sdk::settings::SettingValue as _;
                let mut values = Vec::new();
                $(
                    let _ = $span;
                    values.push(self.window.toml());
                    values.push(self.window_samples.toml());
                    values.push(self.min_samples.toml());
                )?
                $(values.push(self.$field.toml());)*
                values
            }

            fn figure(&self, key: &str) -> Option<f64> {
                use $crate::sdk::settings::SettingValue as _;
                $(
                    let _ = $span;
                    match key {
                        "window" => return self.window.figure(),
                        "window_samples" => return self.window_samples.figure(),
                        "min_samples" => return self.min_samples.figure(),
                        _ => {}
                    }
                )?
                match key {
                    $(stringify!($field) => self.$field.figure(),)*
                    _ => None,
                }
            }

            fn check_rules(&self) -> Result<(), $crate::sdk::settings::SettingError> {
                $(
                    let _ = $span;
                    $crate::sdk::settings::check_window(
                        self.window,
                        self.window_samples,
                        self.min_samples,
                    )?;
                )?
                $crate::sdk::settings::check_declared(self)
            }
        }

        $(
            impl $name {
                /// A window of these settings' span and count.
                #[allow(dead_code)]
                pub fn new_window<T: $crate::sdk::stats::Timed>(&self) -> $crate::sdk::stats::Window<T> {
                    let _ = $span;
                    $crate::sdk::stats::Window::new(self.window.as_secs_f64(), self.window_samples)
                }

                /// A trend over a window of these settings' span and count.
                #[allow(dead_code)]
                pub fn new_trend(&self) -> $crate::sdk::stats::Trend {
                    $crate::sdk::stats::Trend::new(self.window.as_secs_f64(), self.window_samples)
                }
            }
        )?
    };
}

/// The declaration of one of the window settings (`window`, `window_samples`,
/// `min_samples`), the same in every check; `_default` is the declared default's text,
/// which the macro passes so the window's line is matched to its defaults.
#[doc(hidden)]
pub const fn window_setting(key: &'static str, _default: &'static str) -> Setting {
    let (kind, rules, doc): (_, &'static [Rule], _) = match key.as_bytes() {
        b"window" => ("duration", &[Rule::Positive], WINDOW_DOC),
        b"window_samples" => ("integer", &[], WINDOW_SAMPLES_DOC),
        _ => ("integer", &[], MIN_SAMPLES_DOC),
    };
    Setting {
        key,
        kind,
        rules,
        doc,
    }
}

/// The declared rules of every setting (what [`Settings::check_rules`] runs after the
/// window's rule).
pub fn check_declared<S: Settings>(settings: &S) -> Result<(), SettingError> {
    for setting in S::SETTINGS {
        let Some(value) = settings.figure(setting.key) else {
            continue;
        };
        for rule in setting.rules {
            check_rule(settings, setting.key, value, rule)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::settings! {
        /// A table with every kind of setting and rule.
        struct Table {
            window(Duration::from_secs(600), 60, 3);
            /// raise level
            raise_pct: f64 = 90.0, [Rule::Pct];
            /// clear level
            clear_pct: f64 = 70.0, [Rule::Pct, Rule::NotAbove("raise_pct")];
            /// critical level
            critical_pct: Option<f64> = None, [Rule::NotBelow("raise_pct")];
            /// a count
            count: u32 = 2, [Rule::AtLeast(1.0), Rule::AtMost(10.0)];
            /// a hold
            #[serde(with = "crate::sdk::config::duration")]
            hold: Duration = Duration::from_secs(300), [Rule::Positive];
            /// names
            names: Vec<String> = Vec::new(), [];
        }
    }

    fn refused(table: Table) -> String {
        table.check_rules().unwrap_err().to_string()
    }

    #[test]
    fn the_declaration_lists_every_setting_in_order_with_its_default_as_toml() {
        let keys: Vec<&str> = Table::SETTINGS.iter().map(|s| s.key).collect();
        assert_eq!(
            keys,
            [
                "window",
                "window_samples",
                "min_samples",
                "raise_pct",
                "clear_pct"
            ]
            .into_iter()
            .chain(["critical_pct", "count", "hold", "names"])
            .collect::<Vec<_>>()
        );
        let values = Table::default().values();
        assert_eq!(values[0].as_deref(), Some("\"10m\""));
        assert_eq!(values[3].as_deref(), Some("90"));
        assert_eq!(values[5], None);
        assert_eq!(values[8].as_deref(), Some("[]"));
        assert_eq!(Table::SETTINGS[7].kind, "duration");
        assert_eq!(Table::SETTINGS[4].doc.trim(), "clear level");
        assert_eq!(Table::default().check_rules(), Ok(()));
    }

    #[test]
    fn each_rule_refuses_with_the_key_and_the_value() {
        let d = Table::default;
        assert_eq!(
            refused(Table {
                raise_pct: 120.0,
                ..d()
            }),
            "raise_pct: must be a percentage from 0 to 100, not 120"
        );
        assert_eq!(
            refused(Table {
                clear_pct: 95.0,
                ..d()
            }),
            "clear_pct: must be at most raise_pct (90), not 95"
        );
        assert_eq!(
            refused(Table {
                critical_pct: Some(80.0),
                ..d()
            }),
            "critical_pct: must be at least raise_pct (90), not 80"
        );
        assert!(
            Table {
                critical_pct: Some(95.0),
                ..d()
            }
            .check_rules()
            .is_ok()
        );
        assert_eq!(
            refused(Table { count: 0, ..d() }),
            "count: must be at least 1, not 0"
        );
        assert_eq!(
            refused(Table { count: 11, ..d() }),
            "count: must be at most 10, not 11"
        );
        assert_eq!(
            refused(Table {
                hold: Duration::ZERO,
                ..d()
            }),
            "hold: must be a positive number, not 0"
        );
        assert_eq!(
            refused(Table {
                window: Duration::ZERO,
                ..d()
            }),
            "window: must be longer than 0 s: a window of 0 s holds no sample"
        );
        assert_eq!(
            refused(Table {
                window_samples: 2,
                ..d()
            }),
            "window_samples: must be 0 (no limit) or at least min_samples (3), not 2"
        );
        assert!(
            Table {
                window_samples: 0,
                ..d()
            }
            .check_rules()
            .is_ok()
        );
        assert!(
            Table {
                raise_pct: f64::NAN,
                ..d()
            }
            .check_rules()
            .is_err(),
            "NaN is no percentage"
        );
    }

    #[test]
    fn durations_are_written_in_the_largest_whole_unit() {
        for (secs, text) in [
            (600, "10m"),
            (86_400, "24h"),
            (35 * 86_400, "35d"),
            (90, "90s"),
        ] {
            assert_eq!(duration_text(Duration::from_secs(secs)), text);
            assert_eq!(
                crate::sdk::config::parse_duration(text).unwrap(),
                Duration::from_secs(secs)
            );
        }
        assert_eq!(duration_text(Duration::from_millis(250)), "250ms");
        assert_eq!(duration_text(Duration::ZERO), "0s");
    }
}
