//! The in-place reader ([`Decoder`], [`ListView`]) on hostile input: every refusal of
//! [`decode`] is its refusal too, a kept decoder is not confused by what it read before, and
//! lookups compare the bytes a name holds.

use super::super::encode::{Endian, encode};
use super::super::*;
use super::{pair_at, put_i32};
use proptest::collection::vec;
use proptest::prelude::*;

/// A vdev tree of the types pool configs are made of (the decoder's hot path).
fn tree() -> NvList<'static> {
    let leaf = |path: &'static str, guid: u64| {
        NvList::new()
            .with("type", NvValue::String("disk".into()))
            .with("path", NvValue::String(path.into()))
            .with("guid", NvValue::Uint64(guid))
            .with(
                "vdev_stats",
                NvValue::Uint64Array(vec![1, 7, 0, 4096].into()),
            )
            .with(
                "vdev_stats_ex",
                NvValue::NvList(NvList::new().with(
                    "vdev_tot_r_lat_histo",
                    NvValue::Uint64Array(vec![0, 3, 5].into()),
                )),
            )
    };
    NvList::new()
        .with("name", NvValue::String("tank".into()))
        .with("suspended", NvValue::Boolean)
        .with(
            "vdev_tree",
            NvValue::NvList(
                NvList::new()
                    .with("type", NvValue::String("root".into()))
                    .with(
                        "children",
                        NvValue::NvListArray(vec![leaf("/dev/sda1", 1), leaf("/dev/sdb1", 2)]),
                    ),
            ),
        )
}

/// What a kept decoder says about `bytes`: the tree it reads (shown), or the error.
fn through_decoder(decoder: &mut Decoder, bytes: &[u8]) -> Result<String, NvError> {
    decoder
        .decode(bytes)
        .map(|view| format!("{:?}", view.to_nvlist()))
}

/// An edit of an encoded stream.
type Damage = Box<dyn Fn(&mut Vec<u8>)>;

/// Each damage of a pair of the hot path's types is refused by the kept decoder with the
/// error, offset and path `decode` gives (its one set of checks and messages).
#[test]
fn damaged_pairs_are_refused_as_decode_refuses_them() {
    let good = encode(&tree(), Endian::Little);
    let leaf = pair_at(&good, "vdev_stats"); // children[0]'s: a UINT64_ARRAY of 4, 64 bytes
    assert_eq!(good[leaf..leaf + 4], 64i32.to_le_bytes());
    let name = pair_at(&good, "name"); // a STRING
    let guid = pair_at(&good, "guid"); // a UINT64
    let flag = pair_at(&good, "suspended"); // a BOOLEAN
    let list = pair_at(&good, "vdev_tree"); // an NVLIST
    let kids = pair_at(&good, "children"); // an NVLIST_ARRAY of 2
    let damages: Vec<(&str, Damage)> = vec![
        // Sizes that overlap the next pair, fall short of the value, or leave the input.
        (
            "size into the next pair",
            Box::new(move |b| put_i32(b, leaf, 64 + 8)),
        ),
        (
            "size short of the value",
            Box::new(move |b| put_i32(b, leaf, 40)),
        ),
        (
            "size past the end",
            Box::new(move |b| put_i32(b, guid, i32::MAX)),
        ),
        ("negative size", Box::new(move |b| put_i32(b, name, -16))),
        ("size below a pair", Box::new(move |b| put_i32(b, flag, 16))),
        // Name lengths: zero, negative, past the pair, off the NUL either way.
        (
            "name size 0",
            Box::new(move |b| b[guid + 4..guid + 6].copy_from_slice(&0i16.to_le_bytes())),
        ),
        (
            "name size -1",
            Box::new(move |b| b[guid + 4..guid + 6].copy_from_slice(&(-1i16).to_le_bytes())),
        ),
        (
            "name past the pair",
            Box::new(move |b| b[guid + 4..guid + 6].copy_from_slice(&200i16.to_le_bytes())),
        ),
        (
            "name size short",
            Box::new(move |b| b[guid + 4..guid + 6].copy_from_slice(&4i16.to_le_bytes())),
        ),
        (
            "name size long",
            Box::new(move |b| b[guid + 4..guid + 6].copy_from_slice(&6i16.to_le_bytes())),
        ),
        ("NUL inside the name", Box::new(move |b| b[guid + 17] = 0)),
        (
            "name's NUL overwritten",
            Box::new(move |b| b[flag + 16 + 9] = b'!'),
        ),
        // Counts and types.
        ("scalar count 0", Box::new(move |b| put_i32(b, guid + 8, 0))),
        (
            "array count -1",
            Box::new(move |b| put_i32(b, leaf + 8, -1)),
        ),
        (
            "array count too big",
            Box::new(move |b| put_i32(b, leaf + 8, 5)),
        ),
        (
            "boolean with a count",
            Box::new(move |b| put_i32(b, flag + 8, 1)),
        ),
        ("unknown type", Box::new(move |b| put_i32(b, guid + 12, 99))),
        (
            "uint64 without a NUL read as a string",
            Box::new(move |b| {
                b[guid + 24..guid + 32].fill(0xff);
                put_i32(b, guid + 12, 9);
            }),
        ),
        (
            "string without NUL",
            Box::new(move |b| b[name + 24..name + 32].fill(b'x')),
        ),
        // Embedded lists: versions, and an array claiming more elements than follow.
        (
            "nvlist version",
            Box::new(move |b| put_i32(b, list + 32, 1)),
        ),
        (
            "second element's version",
            Box::new(move |b| put_i32(b, kids + 32 + 16 + 24, 7)),
        ),
        (
            "array of 3 headers' size",
            Box::new(move |b| put_i32(b, kids + 8, 3)),
        ),
        (
            "cut inside children[1]",
            Box::new(move |b| b.truncate(b.len() - 40)),
        ),
        (
            "trailing bytes",
            Box::new(move |b| b.extend_from_slice(&[0; 4])),
        ),
    ];
    let mut decoder = Decoder::default();
    for (what, damage) in damages {
        let mut bytes = good.clone();
        damage(&mut bytes);
        let expected = decode(&bytes).expect_err(what);
        let err = through_decoder(&mut decoder, &bytes).expect_err(what);
        assert_eq!(err, expected, "{what}");
        // And the decoder reads a good reply after it as if new.
        assert_eq!(
            through_decoder(&mut decoder, &good).unwrap(),
            format!("{:?}", tree()),
            "{what}"
        );
    }
}

#[test]
fn a_truncated_element_names_its_path() {
    let good = encode(&tree(), Endian::Little);
    // The second leaf's histogram pair, cut after its size field.
    let needle = b"vdev_tot_r_lat_histo\0";
    let second = good
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| w == needle)
        .nth(1)
        .map(|(at, _)| at - 16 + 4)
        .unwrap();
    let err = Decoder::default().decode(&good[..second]).unwrap_err();
    assert_eq!(err.path, "vdev_tree.children[1].vdev_stats_ex");
    assert!(matches!(err.kind, NvErrorKind::BadPairSize { .. }), "{err}");
}

/// Lists nested to the limit decode in place; one more is refused, with its path.
#[test]
fn nesting_is_bounded_in_place_too() {
    let nested = |depth: usize| {
        (0..depth).fold(NvList::new().with("leaf", NvValue::Uint64(7)), |l, i| {
            let value = if i % 2 == 0 {
                NvValue::NvList(l)
            } else {
                NvValue::NvListArray(vec![l])
            };
            NvList::new().with("l", value)
        })
    };
    let mut decoder = Decoder::default();
    let deepest = encode(&nested(MAX_DEPTH), Endian::Big);
    let mut list = decoder.decode(&deepest).unwrap();
    for _ in 0..MAX_DEPTH {
        let l = list.get("l").unwrap();
        list = l
            .as_nvlist()
            .or_else(|| l.as_nvlist_array().and_then(|a| a.get(0)))
            .unwrap();
    }
    assert_eq!(list.u64("leaf"), Some(7));
    let err = decoder
        .decode(&encode(&nested(MAX_DEPTH + 1), Endian::Big))
        .unwrap_err();
    assert_eq!(err.kind, NvErrorKind::TooDeep { limit: MAX_DEPTH });
    assert!(err.path.starts_with("l.l[0].l.l[0]"), "{}", err.path);
}

/// A name that is not UTF-8 is handed out with its bad byte replaced, but lookups compare
/// the bytes it holds: neither the replaced text nor a valid name of the same length finds
/// it, and a valid pair of the same length is still found.
#[test]
fn a_name_that_is_not_utf8_matches_no_lookup() {
    let list = NvList::new()
        .with("type", NvValue::String("disk".into()))
        .with("typf", NvValue::String("file".into()));
    let mut bytes = encode(&list, Endian::Little);
    let at = pair_at(&bytes, "typf");
    bytes[at + 16 + 3] = 0xff; // "typ\xff"
    let mut decoder = Decoder::default();
    let view = decoder.decode(&bytes).unwrap();
    assert_eq!(view.str("type").as_deref(), Some("disk"));
    assert!(view.get("typ\u{fffd}").is_none());
    assert!(view.get("typf").is_none());
    let odd = view.iter().nth(1).unwrap();
    assert_eq!(odd.name_bytes(), b"typ\xff");
    assert_eq!(odd.name(), "typ\u{fffd}");
    assert_eq!(odd.as_str().as_deref(), Some("file"));
    // The owned tree, which replaces the byte, answers to the replaced name.
    assert_eq!(decode(&bytes).unwrap().str("typ\u{fffd}"), Some("file"));
}

/// A kept decoder reads a large reply, then a small one, then a refused one, then the
/// large one again: each answer is the one a new decoder gives.
#[test]
fn a_kept_decoder_forgets_the_last_reply() {
    let large = super::lab::replies()[1];
    let small = encode(&tree(), Endian::Big);
    let mut decoder = Decoder::default();
    for bytes in [large, &small[..], &large[..100], large, &small[..]] {
        let kept = through_decoder(&mut decoder, bytes);
        let fresh = through_decoder(&mut Decoder::default(), bytes);
        assert_eq!(kept, fresh);
        assert_eq!(kept.ok(), decode(bytes).ok().map(|l| format!("{l:?}")));
    }
}

/// Every NUL position in names of every length around the word size.
#[test]
fn the_nul_of_a_name_is_found_wherever_it_is() {
    for len in 1..=24usize {
        let name: String = (0..len - 1)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let bytes = encode(
            &NvList::new().with(name.as_str(), NvValue::Uint64(len as u64)),
            Endian::Little,
        );
        let view_bytes = bytes.clone();
        let mut decoder = Decoder::default();
        assert_eq!(
            decoder.decode(&view_bytes).unwrap().u64(&name),
            Some(len as u64)
        );
        // A NUL at each position before the end, and 0x80/0xff bytes (the borrow of the
        // word-wise test) before it.
        for nul in 0..len - 1 {
            let mut bad = bytes.clone();
            bad[12 + 16 + nul] = 0;
            assert_eq!(
                decoder.decode(&bad).unwrap_err().kind,
                NvErrorKind::BadName,
                "length {len}, NUL at {nul}"
            );
            let mut high = bytes.clone();
            for b in &mut high[12 + 16..12 + 16 + nul] {
                *b = if nul % 2 == 0 { 0x80 } else { 0xff };
            }
            let view = decoder.decode(&high).unwrap();
            assert_eq!(view.iter().next().unwrap().name_bytes().len(), len - 1);
        }
    }
}

proptest! {
    /// Whatever decodes, the in-place reader reads the same tree, and every view of it
    /// answers without panicking.
    #[test]
    fn views_read_what_decode_builds(
        which in 0usize..4,
        flips in vec((any::<prop::sample::Index>(), 0u8..8), 0..4),
    ) {
        let mut reply = super::lab::replies()[which].to_vec();
        for (i, bit) in flips {
            let at = i.index(reply.len());
            reply[at] ^= 1 << bit;
        }
        let mut decoder = Decoder::default();
        match (decode(&reply), decoder.decode(&reply)) {
            (Ok(tree), Ok(view)) => {
                prop_assert_eq!(format!("{:?}", view.to_nvlist()), format!("{tree:?}"));
                read_everything(view);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "decode {:?}, decoder {:?}", a.is_ok(), b.is_ok()),
        }
    }
}
