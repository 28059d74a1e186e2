//! The value model's lookups: typed getters, duplicate names, paths.

use super::super::*;

fn sample() -> NvList<'static> {
    NvList::new()
        .with("n", NvValue::Uint64(1))
        .with("n", NvValue::Uint64(2))
        .with("s", NvValue::String("x".into()))
        .with("flag", NvValue::Boolean)
        .with("bv", NvValue::BooleanValue(false))
        .with("i", NvValue::Int64(-5))
        .with("a.b", NvValue::Uint64(10))
        .with(
            "a",
            NvValue::NvList(NvList::new().with("b", NvValue::Uint64(20))),
        )
        .with(
            "kids",
            NvValue::NvListArray(vec![
                NvList::new().with("id", NvValue::Uint64(0)),
                NvList::new()
                    .with("id", NvValue::Uint64(1))
                    .with("org.openzfs:x", NvValue::Uint64Array(vec![3, 4].into())),
            ]),
        )
}

#[test]
fn getters_are_typed_and_see_the_last_duplicate() {
    let l = sample();
    assert_eq!(l.len(), 9);
    // libnvpair's lookup returns the newest pair of a name.
    assert_eq!(l.u64("n"), Some(2));
    assert_eq!(l.iter().filter(|p| p.name == "n").count(), 2);
    assert_eq!(l.str("s"), Some("x"));
    assert_eq!(l.u64("s"), None, "no conversion across types");
    assert_eq!(l.i64("i"), Some(-5));
    assert_eq!(l.u64("i"), None);
    assert_eq!(l.bool("flag"), Some(true));
    assert_eq!(l.bool("bv"), Some(false));
    assert_eq!(l.bool("missing"), None);
    assert!(l.contains("flag"));
    assert_eq!(
        l.get("flag").map(NvValue::data_type),
        Some(DataType::Boolean)
    );
    assert_eq!(l.nvlist_array("kids").map(<[NvList]>::len), Some(2));
    assert_eq!(DataType::from_code(8), Some(DataType::Uint64));
    assert_eq!(DataType::Uint64Array.to_string(), "uint64 array");
    assert_eq!(DataType::from_code(0), None);
    assert_eq!(DataType::from_code(28), None);
}

#[test]
fn paths() {
    let l = sample();
    let u64_at = |p: &str| l.lookup(p).and_then(NvValue::as_u64);
    assert_eq!(u64_at("n"), Some(2));
    assert_eq!(u64_at("kids[1].id"), Some(1));
    // A dotted name and a nested path that spell the same text both resolve.
    assert_eq!(u64_at("a.b"), Some(20));
    assert_eq!(
        l.lookup("kids[1].org.openzfs:x")
            .and_then(NvValue::as_u64_array)
            .map(|a| a.iter().collect::<Vec<_>>()),
        Some(vec![3, 4])
    );
    assert_eq!(l.lookup_list("kids[0]").and_then(|k| k.u64("id")), Some(0));
    assert_eq!(l.lookup_list("a").and_then(|a| a.u64("b")), Some(20));
    // Ends at an element: a list, not a value.
    assert!(l.lookup("kids[0]").is_none());
    for bad in [
        "",
        "kids[2].id",
        "kids[x].id",
        "kids[0",
        "kids.id",
        "s.x",
        "n[0]",
        "kids[0]x",
    ] {
        assert!(l.lookup(bad).is_none(), "{bad}");
    }
}

/// A reply read in place answers as the tree's getters do: typed, the last pair of a name,
/// nested lists and arrays reachable, and the whole of it equal to what `decode` builds.
#[test]
fn views_answer_as_the_tree_does() {
    use crate::sources::nvlist::encode::{Endian, encode};
    use crate::sources::nvlist::{Decoder, decode};
    let list = sample()
        .with("h", NvValue::Uint64Array(vec![1, 2].into()))
        .with("h", NvValue::Uint64Array(vec![7, 8, 9].into()))
        .with(
            "sa",
            NvValue::StringArray(vec!["x".into(), "".into(), "yz".into()]),
        )
        .with("empty", NvValue::NvListArray(Vec::new()));
    let mut decoder = Decoder::default();
    for endian in [Endian::Little, Endian::Big] {
        let bytes = encode(&list, endian);
        let view = decoder.decode(&bytes).unwrap();
        assert_eq!(view.len(), list.len());
        assert_eq!(view.nvflag(), NV_UNIQUE_NAME);
        assert_eq!(view.u64("n"), Some(2), "the newest pair of a name");
        assert_eq!(view.iter().filter(|p| p.name() == "n").count(), 2);
        assert_eq!(view.str("s").as_deref(), Some("x"));
        assert_eq!(view.u64("s"), None, "no conversion across types");
        assert_eq!(view.str("n"), None);
        assert_eq!(view.u64("i"), None);
        assert_eq!(view.get("i").map(|p| p.value()), Some(NvValue::Int64(-5)));
        assert_eq!(view.bool("flag"), Some(true));
        assert_eq!(view.bool("bv"), Some(false));
        assert_eq!(view.bool("missing"), None);
        assert!(view.contains("flag") && !view.contains("fla") && !view.contains("flags"));
        assert_eq!(
            view.get("flag").map(|p| p.data_type()),
            Some(DataType::Boolean)
        );
        assert_eq!(view.u64("a.b"), Some(10), "a dotted name is a name");
        assert_eq!(view.nvlist("a").and_then(|a| a.u64("b")), Some(20));
        assert!(view.nvlist("s").is_none());
        assert_eq!(
            view.u64_array("h").map(|h| h.into_vec()),
            Some(vec![7, 8, 9])
        );
        assert!(view.u64_array("n").is_none(), "a UINT64 is not an array");
        let kids = view.nvlist_array("kids").unwrap();
        assert_eq!(kids.len(), 2);
        assert_eq!(kids.get(0).and_then(|k| k.u64("id")), Some(0));
        assert!(kids.get(2).is_none());
        let ids: Vec<_> = kids.iter().map(|k| k.u64("id")).collect();
        assert_eq!(ids, [Some(0), Some(1)]);
        assert_eq!(
            kids.get(1)
                .and_then(|k| k.u64_array("org.openzfs:x"))
                .map(|x| x.into_vec()),
            Some(vec![3, 4])
        );
        assert!(view.nvlist_array("empty").is_some_and(|e| e.is_empty()));
        assert_eq!(
            view.get("sa").map(|p| p.value()),
            Some(NvValue::StringArray(vec![
                "x".into(),
                "".into(),
                "yz".into()
            ]))
        );
        assert_eq!(view.to_nvlist(), list);
        assert_eq!(decode(&bytes).unwrap(), list);
        assert_eq!(format!("{view:?}"), format!("{list:?}"));
    }
}

/// A decoded `UINT64_ARRAY` is read from the stream when asked, in the stream's byte order,
/// and equals the same numbers made in memory.
#[test]
fn a_decoded_u64_array_reads_its_elements_in_either_byte_order() {
    use crate::sources::nvlist::encode::{Endian, encode};
    use crate::sources::nvlist::{U64s, decode};
    let numbers = vec![0, 1, 0x0102_0304_0506_0708, u64::MAX];
    let list = NvList::new().with("a", NvValue::Uint64Array(numbers.clone().into()));
    for endian in [Endian::Little, Endian::Big] {
        let bytes = encode(&list, endian);
        let decoded = decode(&bytes).unwrap();
        let a = decoded.u64_array("a").unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(a.first(), Some(0));
        assert_eq!(a.get(2), Some(0x0102_0304_0506_0708));
        assert_eq!(a.get(3), Some(u64::MAX));
        assert_eq!(a.get(4), None);
        assert_eq!(a.get(usize::MAX), None);
        assert_eq!(a.iter().collect::<Vec<_>>(), numbers);
        assert_eq!(*a, U64s::from(numbers.clone()));
        assert_eq!(a.clone().into_vec(), numbers);
        assert_eq!(format!("{a:?}"), format!("{numbers:?}"));
    }
}
