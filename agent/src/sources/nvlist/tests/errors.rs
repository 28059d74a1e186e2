//! Refusals: each malformation gives its own error, at the right byte, under the right path.

use super::super::encode::{Endian, encode};
use super::super::*;
use super::{pair_at, put_i32};
use crate::sources::ParseError;
use crate::sources::error::Location;

fn kind(bytes: &[u8]) -> NvErrorKind {
    decode(bytes).unwrap_err().kind
}

fn one(name: &str, value: NvValue) -> Vec<u8> {
    encode(&NvList::new().with(name, value), Endian::Little)
}

/// A small vdev-like tree whose pairs the tests corrupt.
fn tree() -> NvList<'static> {
    let leaf = |p: &str| {
        NvList::new()
            .with("path", NvValue::String(p.to_owned().into()))
            .with(
                "vdev_stats",
                NvValue::Uint64Array(vec![1, 7, 0, 4096].into()),
            )
    };
    NvList::new()
        .with("name", NvValue::String("tank".into()))
        .with(
            "vdev_tree",
            NvValue::NvList(NvList::new().with(
                "children",
                NvValue::NvListArray(vec![
                leaf("/dev/sda1"),
                NvList::new()
                    .with("type", NvValue::String("mirror".into()))
                    .with("zzz", NvValue::Uint64(5)),
            ]),
            )),
        )
}

#[test]
fn xdr_is_refused_with_a_clear_message() {
    // An XDR stream: encoding 1, then big-endian version/nvflag and XDR pairs.
    let xdr = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    let err = decode(&xdr).unwrap_err();
    assert_eq!(err.kind, NvErrorKind::Xdr);
    assert_eq!(err.offset, 0);
    let msg = err.to_string();
    assert!(msg.contains("XDR") && msg.contains("NATIVE"), "{msg}");
}

#[test]
fn stream_header_checks() {
    assert_eq!(kind(&[2, 1, 0, 0]), NvErrorKind::UnknownEncoding(2));
    assert_eq!(kind(&[0, 2, 0, 0]), NvErrorKind::UnknownEndian(2));
    assert!(matches!(kind(&[]), NvErrorKind::Truncated { .. }));
    assert!(matches!(kind(&[0, 1, 0]), NvErrorKind::Truncated { .. }));
    assert!(matches!(
        kind(&[0, 1, 0, 0, 0, 0, 0, 0]),
        NvErrorKind::Truncated { .. }
    ));
    // Header and list header, but no terminator.
    assert!(matches!(
        kind(&[0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]),
        NvErrorKind::Truncated { .. }
    ));
    // The smallest valid stream: an empty list.
    let empty = decode(&[0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    assert!(empty.is_empty());
    let mut bad_version = encode(&NvList::new(), Endian::Little);
    put_i32(&mut bad_version, 4, 1);
    assert_eq!(kind(&bad_version), NvErrorKind::UnsupportedVersion(1));
}

#[test]
fn trailing_bytes_are_refused() {
    let mut bytes = encode(&tree(), Endian::Little);
    bytes.extend_from_slice(&[0; 8]);
    let err = decode(&bytes).unwrap_err();
    assert_eq!(err.kind, NvErrorKind::TrailingBytes(8));
    assert_eq!(err.offset, bytes.len() - 8);
}

#[test]
fn missing_nested_terminator_is_truncation_with_path() {
    let bytes = encode(&tree(), Endian::Little);
    // Drop the last 8 bytes: the `vdev_tree` and top-level terminators.
    let err = decode(&bytes[..bytes.len() - 8]).unwrap_err();
    assert!(matches!(err.kind, NvErrorKind::Truncated { .. }), "{err}");
    assert_eq!(err.path, "vdev_tree");
}

#[test]
fn unknown_type_names_code_pair_and_path() {
    let mut bytes = encode(&tree(), Endian::Little);
    let at = pair_at(&bytes, "zzz");
    put_i32(&mut bytes, at + 12, 99);
    let err = decode(&bytes).unwrap_err();
    assert_eq!(
        err.kind,
        NvErrorKind::UnknownType {
            code: 99,
            name: "zzz".into()
        }
    );
    assert_eq!(err.path, "vdev_tree.children[1].zzz");
    assert_eq!(err.offset, at + 12);
    let msg = err.to_string();
    assert!(msg.contains("99") && msg.contains("zzz"), "{msg}");
    // Code 0 is DATA_TYPE_UNKNOWN: no encoder writes it either.
    put_i32(&mut bytes, at + 12, 0);
    assert!(matches!(
        kind(&bytes),
        NvErrorKind::UnknownType { code: 0, .. }
    ));
}

#[test]
fn huge_element_counts_fail_before_allocating() {
    for (name, value) in [
        ("u64s", NvValue::Uint64Array(vec![1, 2].into())),
        ("bytes", NvValue::ByteArray(vec![1, 2])),
        ("bools", NvValue::BooleanArray(vec![true])),
        ("lists", NvValue::NvListArray(vec![NvList::new()])),
    ] {
        let mut bytes = one(name, value);
        let at = pair_at(&bytes, name);
        put_i32(&mut bytes, at + 8, i32::MAX);
        let err = decode(&bytes).unwrap_err();
        assert!(
            matches!(
                err.kind,
                NvErrorKind::SizeMismatch {
                    nelem: i32::MAX,
                    ..
                }
            ),
            "{name}: {err}"
        );
        assert_eq!(err.path, name);
        put_i32(&mut bytes, at + 8, -1);
        assert!(matches!(
            kind(&bytes),
            NvErrorKind::BadElementCount { nelem: -1, .. }
        ));
    }
    let mut bytes = one("strs", NvValue::StringArray(vec!["a".into()]));
    let at = pair_at(&bytes, "strs");
    put_i32(&mut bytes, at + 8, i32::MAX);
    assert!(matches!(
        kind(&bytes),
        NvErrorKind::ElementsDontFit {
            nelem: i32::MAX,
            ..
        }
    ));
}

#[test]
fn scalar_element_counts_must_be_exact() {
    let mut bytes = one("x", NvValue::Uint64(1));
    let at = pair_at(&bytes, "x");
    put_i32(&mut bytes, at + 8, 2);
    assert!(matches!(
        kind(&bytes),
        NvErrorKind::BadElementCount { nelem: 2, .. }
    ));
    let mut bytes = one("flag", NvValue::Boolean);
    let at = pair_at(&bytes, "flag");
    put_i32(&mut bytes, at + 8, 1);
    assert!(matches!(
        kind(&bytes),
        NvErrorKind::BadElementCount { nelem: 1, .. }
    ));
}

#[test]
fn pair_size_checks() {
    let good = one("x", NvValue::Uint64(1));
    let at = pair_at(&good, "x");
    for (size, expect_bad_size) in [(-8, true), (16, true), (23, true), (1 << 20, true)] {
        let mut bytes = good.clone();
        put_i32(&mut bytes, at, size);
        let err = decode(&bytes).unwrap_err();
        assert_eq!(
            matches!(err.kind, NvErrorKind::BadPairSize { .. }),
            expect_bad_size,
            "size {size}: {err}"
        );
        assert_eq!(err.offset, at);
    }
    // In bounds but not what the encoder writes (a u64 pair with name "x" is 32 bytes):
    // 24 (too small for the value) and 40 (padding the encoder never adds).
    let mut bytes = good.clone();
    put_i32(&mut bytes, at, 24);
    assert!(matches!(
        kind(&bytes),
        NvErrorKind::SizeMismatch {
            expected: 32,
            actual: 24,
            ..
        }
    ));
    let mut bytes = good.clone();
    bytes.splice(at + 32..at + 32, [0u8; 8]);
    put_i32(&mut bytes, at, 40);
    assert!(matches!(
        kind(&bytes),
        NvErrorKind::SizeMismatch {
            expected: 32,
            actual: 40,
            ..
        }
    ));
    // Not a multiple of 8: the exact-size rule refuses it.
    let mut bytes = good.clone();
    bytes.insert(at + 32, 0);
    put_i32(&mut bytes, at, 33);
    assert!(matches!(
        kind(&bytes),
        NvErrorKind::SizeMismatch { actual: 33, .. }
    ));
}

/// A name or string that is not UTF-8 (a hostile or corrupted reply) decodes with the bad
/// byte replaced, as `String::from_utf8_lossy` would; valid text is borrowed from the reply.
#[test]
fn bytes_that_are_not_utf8_are_replaced_not_refused() {
    let good = one("abc", NvValue::String("xyz".into()));
    let at = pair_at(&good, "abc");
    let mut bad = good.clone();
    bad[at + 16 + 1] = 0xff; // the name's `b`
    bad[at + 24 + 1] = 0xfe; // the value's `y`, at the next multiple of 8 after the name
    let list = decode(&bad).unwrap();
    let pair = &list.pairs()[0];
    assert_eq!(&*pair.name, "a\u{fffd}c");
    assert_eq!(pair.value.as_str(), Some("x\u{fffd}z"));
    assert!(matches!(pair.name, std::borrow::Cow::Owned(_)));
    let list = decode(&good).unwrap();
    let pair = &list.pairs()[0];
    assert!(matches!(pair.name, std::borrow::Cow::Borrowed("abc")));
    assert!(matches!(
        &pair.value,
        NvValue::String(std::borrow::Cow::Borrowed("xyz"))
    ));
}

#[test]
fn name_checks() {
    let good = one("abc", NvValue::Uint64(1));
    let at = pair_at(&good, "abc");
    let set_name_sz = |v: i16| {
        let mut b = good.clone();
        b[at + 4..at + 6].copy_from_slice(&v.to_le_bytes());
        b
    };
    assert!(matches!(
        kind(&set_name_sz(0)),
        NvErrorKind::BadNameSize { name_sz: 0, .. }
    ));
    assert!(matches!(
        kind(&set_name_sz(-3)),
        NvErrorKind::BadNameSize { .. }
    ));
    assert!(matches!(
        kind(&set_name_sz(100)),
        NvErrorKind::BadNameSize { .. }
    ));
    // name_sz 3 cuts "abc\0" before its NUL; name_sz 5 runs past it into padding.
    assert_eq!(kind(&set_name_sz(3)), NvErrorKind::BadName);
    assert_eq!(kind(&set_name_sz(5)), NvErrorKind::BadName);
    let mut embedded_nul = good.clone();
    embedded_nul[at + 17] = 0;
    assert_eq!(kind(&embedded_nul), NvErrorKind::BadName);
    // An empty name (name_sz 1) is valid, as in libnvpair.
    let bytes = one("", NvValue::Uint64(9));
    let empty = decode(&bytes).unwrap();
    assert_eq!(empty.u64(""), Some(9));
}

#[test]
fn strings_must_be_terminated_inside_the_pair() {
    // "abcdefg" + NUL fills the 8-byte value exactly; overwrite the NUL.
    let mut bytes = one("s", NvValue::String("abcdefg".into()));
    let at = pair_at(&bytes, "s");
    bytes[at + 24 + 7] = b'h';
    let err = decode(&bytes).unwrap_err();
    assert_eq!(err.kind, NvErrorKind::StringNotTerminated { index: None });
    assert_eq!(err.offset, at + 24);

    let mut bytes = one("sa", NvValue::StringArray(vec!["x".into(), "abcd".into()]));
    let at = pair_at(&bytes, "sa");
    // Value: 16 pointer bytes, "x\0abcd\0", 1 padding byte. Fill NUL and padding.
    bytes[at + 24 + 16 + 6] = b'e';
    bytes[at + 24 + 16 + 7] = b'f';
    assert_eq!(
        kind(&bytes),
        NvErrorKind::StringNotTerminated { index: Some(1) }
    );

    // A string shorter than its pair claims (NUL in the first of two 8-byte words).
    let mut bytes = one("s", NvValue::String("abcdefghijk".into()));
    let at = pair_at(&bytes, "s");
    bytes[at + 24 + 3] = 0;
    assert!(matches!(kind(&bytes), NvErrorKind::SizeMismatch { .. }));
}

#[test]
fn booleans_must_be_0_or_1() {
    let mut bytes = one("b", NvValue::BooleanValue(true));
    let at = pair_at(&bytes, "b");
    put_i32(&mut bytes, at + 24, 2);
    assert_eq!(kind(&bytes), NvErrorKind::BadBoolean(2));
    let mut bytes = one("ba", NvValue::BooleanArray(vec![false, true, false]));
    let at = pair_at(&bytes, "ba");
    put_i32(&mut bytes, at + 24 + 8, -1);
    let err = decode(&bytes).unwrap_err();
    assert_eq!(err.kind, NvErrorKind::BadBoolean(-1));
    assert_eq!(err.offset, at + 24 + 8);
}

#[test]
fn embedded_version_must_be_0() {
    let mut bytes = encode(&tree(), Endian::Little);
    let at = pair_at(&bytes, "vdev_tree");
    // name "vdev_tree\0" = 10 → value at +32.
    put_i32(&mut bytes, at + 32, 3);
    let err = decode(&bytes).unwrap_err();
    assert_eq!(err.kind, NvErrorKind::UnsupportedVersion(3));
    assert_eq!(err.path, "vdev_tree");
}

/// `depth` lists nested through NVLIST (or NVLIST_ARRAY) pairs named `l`.
fn nested(depth: usize, via_array: bool) -> NvList<'static> {
    let mut list = NvList::new().with("leaf", NvValue::Uint64(depth as u64));
    for _ in 0..depth {
        let value = if via_array {
            NvValue::NvListArray(vec![list])
        } else {
            NvValue::NvList(list)
        };
        list = NvList::new().with("l", value);
    }
    list
}

#[test]
fn depth_limit() {
    for via_array in [false, true] {
        let bytes = encode(&nested(MAX_DEPTH, via_array), Endian::Little);
        let ok = decode(&bytes).unwrap();
        let path = if via_array { "l[0]" } else { "l" };
        let deepest = vec![path; MAX_DEPTH].join(".") + ".leaf";
        assert_eq!(
            ok.lookup(&deepest).and_then(NvValue::as_u64),
            Some(MAX_DEPTH as u64)
        );

        let err = decode(&encode(&nested(MAX_DEPTH + 1, via_array), Endian::Little)).unwrap_err();
        assert_eq!(err.kind, NvErrorKind::TooDeep { limit: MAX_DEPTH });
        assert_eq!(err.path, vec![path; MAX_DEPTH].join(".") + ".l");
    }
}

/// A stream nesting far deeper than any stack could recurse is refused promptly: the decoder
/// keeps its own stack and stops at the limit.
#[test]
fn absurd_nesting_is_refused_without_recursion() {
    // Hand-made: 100 000 `NVLIST` pairs, each opening the next list, no terminators.
    let mut bytes = vec![0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    let mut pair = vec![0u8; 48];
    pair[..4].copy_from_slice(&48i32.to_le_bytes());
    pair[4..6].copy_from_slice(&2i16.to_le_bytes());
    pair[8..12].copy_from_slice(&1i32.to_le_bytes());
    pair[12..16].copy_from_slice(&19i32.to_le_bytes());
    pair[16] = b'n';
    for _ in 0..100_000 {
        bytes.extend_from_slice(&pair);
    }
    let err = decode(&bytes).unwrap_err();
    assert_eq!(err.kind, NvErrorKind::TooDeep { limit: MAX_DEPTH });
    assert_eq!(err.offset, 12 + 48 * MAX_DEPTH);
}

/// The debuggability promise on a real reply: break mirror-0's `vdev_stats` and the error
/// says where.
#[test]
fn real_reply_error_path() {
    let mut bytes = super::lab::replies()[1].to_vec();
    // Pairs named `vdev_stats`: the root's first, then children[0]'s.
    let needle = b"vdev_stats\0";
    let hits: Vec<usize> = bytes
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| w == needle)
        .map(|(i, _)| i - 16)
        .collect();
    let at = hits[1];
    put_i32(&mut bytes, at + 8, 1000);
    let err = decode(&bytes).unwrap_err();
    assert_eq!(err.path, "vdev_tree.children[0].vdev_stats");
    assert_eq!(err.offset, at);
    assert!(matches!(
        err.kind,
        NvErrorKind::SizeMismatch {
            nelem: 1000,
            actual: 400,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        format!(
            "at byte {at} (0x{at:x}, in vdev_tree.children[0].vdev_stats): uint64 array pair \
             with 1000 element(s) is 400 bytes, the encoder writes 8032"
        )
    );

    let parse: ParseError = err.into();
    assert_eq!(parse.what, "nvlist");
    assert_eq!(parse.at, Some(Location::Offset(at)));
    assert!(
        parse
            .message
            .starts_with("in vdev_tree.children[0].vdev_stats: ")
    );
}
