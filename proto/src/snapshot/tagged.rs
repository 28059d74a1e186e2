//! Decoding the internally tagged enums of the snapshot ([`super::DiskCounters`],
//! [`super::Redundancy`]) without serde's buffering.
//!
//! `#[serde(tag = "…")]` on the decoding side first copies the whole map into serde's private
//! `Content` tree (every key and value allocated) and then decodes the variant from that copy,
//! because the tag may come anywhere in the map. Every plugin decodes every disk's counters and
//! every vdev's redundancy each interval, so that copy was a tenth of a plugin's decoding
//! time. Serde writes the tag as the first key of the map, and every encoder of a sample is
//! serde (the agent's, `zpulse once --format json`), so the decoder here reads the tag first
//! and decodes the variant's fields straight from the rest of the map. A map whose first key
//! is not the tag (from an encoder that sorts keys) still decodes, through a buffer.
//!
//! The encoding side keeps `#[derive(Serialize)]` with the same `tag`, so the wire format is
//! unchanged (the tests compare both ways with serde's own internally tagged decoding).

use serde::Deserializer;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// An enum encoded as a map whose first key, [`TAG`](TagFirst::TAG), names the variant.
pub(crate) trait TagFirst: Sized {
    /// The tag's key (`source`, `kind`).
    const TAG: &'static str;
    /// The tag's values, for the error naming an unknown one.
    const VARIANTS: &'static [&'static str];
    /// The value of variant `name` from the map's remaining entries (`None` for an unknown
    /// variant).
    fn variant<'de, A: MapAccess<'de>>(name: &str, rest: A) -> Option<Result<Self, A::Error>>;
}

/// Decodes `T` from a map that starts with its tag.
pub(crate) fn deserialize<'de, D: Deserializer<'de>, T: TagFirst>(d: D) -> Result<T, D::Error> {
    d.deserialize_map(TagFirstVisitor(PhantomData))
}

/// The remaining entries of a unit variant's map (`{"kind": "none"}` has none; a later
/// version may add some, which are skipped).
pub(crate) fn skip_rest<'de, A: MapAccess<'de>>(mut rest: A) -> Result<(), A::Error> {
    while rest.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

struct TagFirstVisitor<T>(PhantomData<T>);

impl<'de, T: TagFirst> Visitor<'de> for TagFirstVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a map whose first key is `{}`", T::TAG)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let first: Option<Name> = map.next_key()?;
        match first {
            Some(Name(key)) if key == T::TAG => {}
            Some(Name(key)) => return buffered(key.into_owned(), map),
            None => return Err(de::Error::missing_field(T::TAG)),
        }
        let Name(variant) = map.next_value()?;
        T::variant(&variant, map)
            .unwrap_or_else(|| Err(de::Error::unknown_variant(&variant, T::VARIANTS)))
    }
}

/// The slow path, for a map whose first key, `first`, is not the tag (written by an encoder
/// that sorts keys, say): the entries are kept as [`Value`]s until the tag is found.
fn buffered<'de, A: MapAccess<'de>, T: TagFirst>(first: String, mut map: A) -> Result<T, A::Error> {
    use crate::event::Value;
    let mut entries = std::collections::BTreeMap::new();
    entries.insert(first, map.next_value::<Value>()?);
    while let Some((key, value)) = map.next_entry::<String, Value>()? {
        entries.insert(key, value);
    }
    let variant = match entries.remove(T::TAG) {
        Some(Value::Str(variant)) => variant,
        Some(_) => {
            return Err(de::Error::custom(format_args!(
                "`{}` is not a string",
                T::TAG
            )));
        }
        None => return Err(de::Error::missing_field(T::TAG)),
    };
    let rest = de::value::MapDeserializer::<_, de::value::Error>::new(entries.into_iter());
    match T::variant(&variant, rest) {
        Some(decoded) => decoded.map_err(de::Error::custom),
        None => Err(de::Error::unknown_variant(&variant, T::VARIANTS)),
    }
}

/// A key or tag value: borrowed from the input when the decoder can (MessagePack from a
/// slice), owned otherwise.
struct Name<'de>(std::borrow::Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(v.into()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name<'de>, E> {
                Ok(Name(v.to_owned().into()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Name<'de>, E> {
                Ok(Name(v.into()))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Devstat, DiskCounters, Diskstats, Redundancy};
    use serde::{Deserialize, Serialize};

    /// The same enums decoded the way serde derives it (`Content` buffering), the reference
    /// the hand-written decoders must agree with.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "source", rename_all = "lowercase")]
    enum SerdeCounters {
        Diskstats(Diskstats),
        Devstat(Devstat),
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "kind", rename_all = "lowercase")]
    enum SerdeRedundancy {
        None,
        Mirror { width: u32 },
        Parity { parity: u32 },
    }

    fn diskstats() -> Diskstats {
        Diskstats {
            major: 8,
            minor: 16,
            reads: 1234,
            sectors_read: 99_000,
            io_ms: 777,
            discards: Some(3),
            flush_ms: Some(12),
            ..Diskstats::default()
        }
    }

    fn devstat() -> Devstat {
        Devstat {
            unit_number: 2,
            bytes: [1, 2, 3, 4],
            operations: [5, 6, 7, 8],
            duration: [0.5, 1.5, 2.5, 0.0],
            busy_time: 42.25,
            block_size: 512,
            ..Devstat::default()
        }
    }

    #[test]
    fn counters_decode_as_serde_decodes_them_in_messagepack_and_json() {
        for (ours, reference) in [
            (
                DiskCounters::Diskstats(diskstats()),
                SerdeCounters::Diskstats(diskstats()),
            ),
            (
                DiskCounters::Devstat(devstat()),
                SerdeCounters::Devstat(devstat()),
            ),
        ] {
            let bytes = rmp_serde::to_vec_named(&ours).unwrap();
            assert_eq!(bytes, rmp_serde::to_vec_named(&reference).unwrap());
            let back: DiskCounters = rmp_serde::from_slice(&bytes).unwrap();
            assert_eq!(back, ours);
            let json = serde_json::to_string(&ours).unwrap();
            assert!(json.starts_with(r#"{"source":"#), "{json}");
            assert_eq!(serde_json::from_str::<DiskCounters>(&json).unwrap(), ours);
        }
    }

    #[test]
    fn redundancy_decodes_as_serde_decodes_it() {
        for (ours, reference) in [
            (Redundancy::None, SerdeRedundancy::None),
            (
                Redundancy::Mirror { width: 3 },
                SerdeRedundancy::Mirror { width: 3 },
            ),
            (
                Redundancy::Parity { parity: 2 },
                SerdeRedundancy::Parity { parity: 2 },
            ),
        ] {
            let bytes = rmp_serde::to_vec_named(&ours).unwrap();
            assert_eq!(bytes, rmp_serde::to_vec_named(&reference).unwrap());
            assert_eq!(rmp_serde::from_slice::<Redundancy>(&bytes).unwrap(), ours);
            let json = serde_json::to_string(&ours).unwrap();
            assert_eq!(serde_json::from_str::<Redundancy>(&json).unwrap(), ours);
        }
    }

    #[test]
    fn fields_a_later_version_adds_are_skipped() {
        let r: Redundancy = serde_json::from_str(r#"{"kind":"none","spares":1}"#).unwrap();
        assert_eq!(r, Redundancy::None);
        let r: Redundancy = serde_json::from_str(r#"{"kind":"mirror","width":2,"x":[1]}"#).unwrap();
        assert_eq!(r, Redundancy::Mirror { width: 2 });
    }

    #[test]
    fn a_tag_after_other_keys_still_decodes() {
        let r: Redundancy = serde_json::from_str(r#"{"width":2,"kind":"mirror"}"#).unwrap();
        assert_eq!(r, Redundancy::Mirror { width: 2 });
        // Keys sorted, as a generic re-encoder writes them: `busy_time` before `source`.
        let json = serde_json::to_value(DiskCounters::Devstat(devstat())).unwrap();
        let mut sorted: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_value(json).unwrap();
        sorted.insert("added_later".into(), serde_json::Value::Bool(true));
        let bytes = rmp_serde::to_vec_named(&sorted).unwrap();
        let back: DiskCounters = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(back, DiskCounters::Devstat(devstat()));
    }

    /// The error decoding `json` as `T` gives.
    fn error_of<T: serde::de::DeserializeOwned + std::fmt::Debug>(json: &str) -> String {
        serde_json::from_str::<T>(json).unwrap_err().to_string()
    }

    #[test]
    fn a_tag_unknown_missing_or_not_text_is_a_clear_error() {
        for (json, want) in [
            (r#"{"width":2,"kind":7}"#, "`kind` is not a string"),
            (r#"{"width":2}"#, "missing field `kind`"),
            (r#"{"width":2,"kind":"stripe"}"#, "unknown variant `stripe`"),
            ("{}", "missing field `kind`"),
            (r#"{"kind":"mirror"}"#, "missing field `width`"),
        ] {
            let err = error_of::<Redundancy>(json);
            assert!(err.contains(want), "{json}: {err}");
        }
        let err = error_of::<DiskCounters>(r#"{"source":"iostat"}"#);
        assert!(err.contains("unknown variant `iostat`"), "{err}");
        assert!(rmp_serde::from_slice::<DiskCounters>(&[0x92, 0x01, 0x02]).is_err());
    }
}
