//! A plugin's config: its `[plugins.<name>]` table from `zpulse.toml`, as a MessagePack map.
//!
//! The SDK decodes it into the plugin's `Config` with serde, and errors name the key
//! (`saturation_pct: invalid type: string "x", expected f64`). Durations may be written the
//! way the agent's own settings are: `"90s"`, `"5m"`, `"1h"`, `"250ms"`, or a number of seconds
//! (use [`duration`] with `#[serde(with = …)]`).

use crate::event::Value;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use std::fmt;
use std::time::Duration;

/// Decodes a config map; the error names the key that is wrong.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    // Through `Value` rather than straight from MessagePack: serde's type errors
    // ("invalid type: string \"x\", expected f64") say more than the decoder's markers.
    let value: Value = rmp_serde::from_slice(bytes)
        .map_err(|e| format!("the config is not a MessagePack map: {e}"))?;
    from_value(value)
}

/// Deserializes a config from a [`Value`] (a map); the error names the key that is wrong.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.into_inner().to_string()
        } else {
            format!("{path}: {}", e.into_inner())
        }
    })
}

/// A percentage setting: 0 to 100 (NaN is none), or an error naming the key:
/// `full_pct must be a percentage from 0 to 100, not 120`.
pub fn check_pct(key: &str, value: f64) -> Result<(), String> {
    if (0.0..=100.0).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{key} must be a percentage from 0 to 100, not {value}"
        ))
    }
}

/// Encodes a config value (for tests: what the agent would pass).
pub fn encode<T: serde::Serialize>(config: &T) -> Vec<u8> {
    rmp_serde::to_vec_named(config).unwrap_or_default()
}

/// The one duration grammar of zpulse (the agent's config, the plugins' tables, the
/// collector's config and command line): a non-negative decimal number and a unit, `ms`,
/// `s`, `m` (or `min`), `h`, `d` or `w`; no unit means seconds. `"10s"`, `"1.5h"`,
/// `"250ms"`, `"2w"`, `"90"`. At most 10⁹ seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        "w" => 7.0 * 86_400.0,
        _ => return Err(bad_duration(text)),
    };
    let n: f64 = number.parse().map_err(|_| bad_duration(text))?;
    seconds(n * scale).ok_or_else(|| bad_duration(text))
}

fn bad_duration(text: &str) -> String {
    format!(
        "{text:?} is not a duration: a number and a unit (ms, s, m, h, d, w), e.g. \"10s\", \
         \"250ms\", \"1.5h\", \"7d\""
    )
}

fn seconds(s: f64) -> Option<Duration> {
    (s.is_finite() && (0.0..=1e9).contains(&s)).then(|| Duration::from_secs_f64(s))
}

/// Serde helper: a duration written as text (`"5m"`) or a number of seconds.
pub mod duration {
    use super::*;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(DurationVisitor)
    }

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Duration;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration such as \"10s\", \"5m\" or a number of seconds")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        parse_duration(v).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        self.visit_f64(v as f64)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        self.visit_f64(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
        seconds(v).ok_or_else(|| E::custom(format!("{v} seconds is not a duration")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[test]
    fn a_percentage_setting_is_0_to_100_and_its_error_names_the_key() {
        assert_eq!(check_pct("full_pct", 0.0), Ok(()));
        assert_eq!(check_pct("full_pct", 100.0), Ok(()));
        assert_eq!(
            check_pct("full_pct", 120.0),
            Err("full_pct must be a percentage from 0 to 100, not 120".into())
        );
        assert!(check_pct("full_pct", -0.5).is_err());
        assert!(check_pct("full_pct", f64::NAN).is_err());
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Cfg {
        pct: f64,
        disks: Vec<String>,
        #[serde(with = "duration")]
        hold: Duration,
    }
    impl Default for Cfg {
        fn default() -> Self {
            Cfg {
                pct: 90.0,
                disks: vec![],
                hold: Duration::from_secs(60),
            }
        }
    }

    fn map(pairs: &[(&str, Value)]) -> Vec<u8> {
        let m: BTreeMap<String, Value> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        encode(&m)
    }

    #[test]
    fn an_empty_table_means_the_defaults() {
        assert_eq!(decode::<Cfg>(&map(&[])).unwrap(), Cfg::default());
    }

    #[test]
    fn integers_are_accepted_for_floats_and_durations_parse() {
        let c: Cfg = decode(&map(&[
            ("pct", Value::UInt(95)),
            ("hold", "5m".into()),
            ("disks", vec!["sda"].into()),
        ]))
        .unwrap();
        assert_eq!(c.pct, 95.0);
        assert_eq!(c.hold, Duration::from_secs(300));
        assert_eq!(c.disks, ["sda"]);
        let c: Cfg = decode(&map(&[("hold", Value::Float(1.5))])).unwrap();
        assert_eq!(c.hold, Duration::from_millis(1500));
    }

    #[test]
    fn errors_name_the_key() {
        let err = decode::<Cfg>(&map(&[("pct", "high".into())])).unwrap_err();
        assert!(err.starts_with("pct: invalid type"), "{err}");
        let err = decode::<Cfg>(&map(&[("disks", vec![Value::UInt(1)].into())])).unwrap_err();
        assert!(err.starts_with("disks[0]:"), "{err}");
        let err = decode::<Cfg>(&map(&[("hold", "soon".into())])).unwrap_err();
        assert!(
            err.starts_with("hold:") && err.contains("\"soon\""),
            "{err}"
        );
        let err = decode::<Cfg>(&map(&[("pcts", Value::UInt(1))])).unwrap_err();
        assert!(err.contains("unknown field `pcts`"), "{err}");
        assert!(decode::<Cfg>(b"\xc1").is_err());
    }

    #[test]
    fn durations() {
        for (text, ms) in [
            ("10s", 10_000),
            ("1.5s", 1500),
            ("250ms", 250),
            ("5m", 300_000),
            ("2h", 7_200_000),
            ("1d", 86_400_000),
            ("1w", 604_800_000),
            ("1.5h", 5_400_000),
            ("3", 3000),
            (" 4 s ", 4000),
        ] {
            assert_eq!(parse_duration(text).unwrap().as_millis(), ms, "{text}");
        }
        for bad in ["", "s", "10 parsecs", "-1s", "1e400s", "1.2.3s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
