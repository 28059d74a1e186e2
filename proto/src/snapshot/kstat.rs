//! A named kstat: the header the kernel printed and its `name → value` rows.

use serde::{Deserialize, Serialize};
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    pub fields: BTreeMap<String, KstatValue>,
}

impl Kstat {
    /// An unsigned value; a signed one that is not negative is accepted too.
    pub fn u64(&self, name: &str) -> Option<u64> {
        match self.fields.get(name)? {
            KstatValue::Unsigned(v) => Some(*v),
            KstatValue::Signed(v) => u64::try_from(*v).ok(),
            KstatValue::Text(_) => None,
        }
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
