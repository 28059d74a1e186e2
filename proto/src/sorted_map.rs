//! Decoding the string-keyed maps of a sample (a kstat's rows, the ARC's and ZIL's deltas,
//! the tunables) in one pass.
//!
//! serde decodes a `BTreeMap` by inserting each entry, one search of the tree per key,
//! each a string comparison at every level: for the ARC's 120-odd rows, decoded by every
//! plugin that reads the ARC each interval, that search was most of the map's decoding.
//! The agent writes these maps from `BTreeMap`s, so their keys arrive sorted; collecting
//! the entries first and building the tree from them ([`BTreeMap::from_iter`] sorts, which is
//! one pass over sorted input, then builds the tree bottom up) decodes the same map without
//! the searches. Unsorted or repeated keys give what inserting them would (the last wins).

use serde::Deserializer;
use serde::de::{Deserialize, MapAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

/// Entries preallocated at most, whatever length the input announces (it is untrusted).
const PREALLOCATED: usize = 1024;

/// `#[serde(deserialize_with = "crate::sorted_map::deserialize")]` for a
/// `BTreeMap<String, V>`.
pub(crate) fn deserialize<'de, D, V>(d: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Entries<V>(PhantomData<V>);
    impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map with string keys")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(PREALLOCATED));
            while let Some(entry) = map.next_entry::<String, V>()? {
                entries.push(entry);
            }
            Ok(BTreeMap::from_iter(entries))
        }
    }
    d.deserialize_map(Entries(PhantomData))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Rows(#[serde(deserialize_with = "super::deserialize")] BTreeMap<String, u64>);

    /// What serde's own `BTreeMap` decoding gives, for sorted, unsorted and repeated keys.
    #[test]
    fn the_map_is_the_one_inserting_each_entry_gives() {
        for json in [
            r#"{"hits": 1, "misses": 2, "size": 3}"#,
            r#"{"size": 3, "hits": 1, "misses": 2}"#,
            r#"{"hits": 1, "hits": 7, "a": 0}"#,
            "{}",
        ] {
            let ours: Rows = serde_json::from_str(json).unwrap();
            let serde: BTreeMap<String, u64> = serde_json::from_str(json).unwrap();
            assert_eq!(ours.0, serde, "{json}");
        }
        assert_eq!(
            serde_json::from_str::<Rows>(r#"{"hits": 1, "hits": 7}"#)
                .unwrap()
                .0["hits"],
            7
        );
        assert!(serde_json::from_str::<Rows>(r#"{"hits": "x"}"#).is_err());
        assert!(serde_json::from_str::<Rows>("[1]").is_err());
    }
}
