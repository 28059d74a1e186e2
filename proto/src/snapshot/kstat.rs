//! A named kstat: the header the kernel printed and its `name → value` rows.

use serde::{Deserialize, Deserializer, Serialize, de};
use std::collections::BTreeMap;

/// The seven-field header line of a Linux kstat file. FreeBSD sysctls have no header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KstatHeader {
    pub kid: u64,
    /// 0 RAW, 1 NAMED, 2 INTR, 3 IO, 4 TIMER.
    pub kstat_type: u32,
    pub flags: u32,
    pub ndata: u64,
    pub data_size: u64,
    /// Creation time (monotonic ns). It changes when the module is reloaded, which is how a
    /// reset of every counter in the kstat is recognised.
    pub crtime: u64,
    /// Time of this read (monotonic ns).
    pub snaptime: u64,
}

/// One kstat value, typed by the kernel's type code.
///
/// On the wire it is the bare number or string (no tag). Decoding goes through a visitor of
/// its own rather than `#[serde(untagged)]`, which would buffer every value and try each
/// variant in turn: a sample carries hundreds of kstat rows, decoded by every plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum KstatValue {
    /// UINT32, UINT64, ULONG.
    Unsigned(u64),
    /// INT32, INT64, LONG (e.g. `memory_available_bytes`, which can be negative).
    Signed(i64),
    /// STRING and CHAR (e.g. `dataset_name`).
    Text(String),
}

/// A NAMED kstat (Linux file or FreeBSD sysctl subtree), every row kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Kstat {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<KstatHeader>,
    #[serde(deserialize_with = "crate::sorted_map::deserialize")]
    pub fields: BTreeMap<String, KstatValue>,
}

impl KstatValue {
    /// An unsigned value; a signed one that is not negative is accepted too.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            KstatValue::Unsigned(v) => Some(*v),
            KstatValue::Signed(v) => u64::try_from(*v).ok(),
            KstatValue::Text(_) => None,
        }
    }
}

impl Kstat {
    /// An unsigned value; a signed one that is not negative is accepted too.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.fields.get(name)?.as_u64()
    }

    pub fn i64(&self, name: &str) -> Option<i64> {
        match self.fields.get(name)? {
            KstatValue::Unsigned(v) => i64::try_from(*v).ok(),
            KstatValue::Signed(v) => Some(*v),
            KstatValue::Text(_) => None,
        }
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        match self.fields.get(name)? {
            KstatValue::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn insert(&mut self, name: impl Into<String>, value: KstatValue) {
        self.fields.insert(name.into(), value);
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

impl<'de> Deserialize<'de> for KstatValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KstatValueVisitor)
    }
}

/// A number that fits `u64` is `Unsigned` whatever its encoding (as the untagged form read
/// it), a negative one `Signed`, a string `Text`.
struct KstatValueVisitor;

impl<'de> de::Visitor<'de> for KstatValueVisitor {
    type Value = KstatValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an integer or a string (a kstat value)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<KstatValue, E> {
        Ok(KstatValue::Unsigned(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<KstatValue, E> {
        Ok(u64::try_from(v).map_or(KstatValue::Signed(v), KstatValue::Unsigned))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<KstatValue, E> {
        Ok(KstatValue::Text(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<KstatValue, E> {
        Ok(KstatValue::Text(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire form is the bare value, and reads back as the untagged form read it: a
    /// non-negative integer is `Unsigned` however it was encoded, a negative one `Signed`.
    #[test]
    fn values_are_bare_on_the_wire_and_read_back_by_their_range() {
        let rows = vec![
            KstatValue::Unsigned(u64::MAX),
            KstatValue::Unsigned(7),
            KstatValue::Signed(-3),
            KstatValue::Signed(5),
            KstatValue::Text("tank/home".into()),
        ];
        let bytes = rmp_serde::to_vec_named(&rows).unwrap();
        let back: Vec<KstatValue> = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(
            back,
            vec![
                KstatValue::Unsigned(u64::MAX),
                KstatValue::Unsigned(7),
                KstatValue::Signed(-3),
                KstatValue::Unsigned(5),
                KstatValue::Text("tank/home".into()),
            ]
        );
        let json: Vec<KstatValue> = serde_json::from_str(r#"[1, -2, "x"]"#).unwrap();
        assert_eq!(
            json,
            vec![
                KstatValue::Unsigned(1),
                KstatValue::Signed(-2),
                KstatValue::Text("x".into())
            ]
        );
        assert!(rmp_serde::from_slice::<KstatValue>(&rmp_serde::to_vec(&1.5f64).unwrap()).is_err());
    }
}
