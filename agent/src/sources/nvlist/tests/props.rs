//! Property tests: encode→decode round trips of random nested lists in both byte orders,
//! and arbitrary or mutated input never panics.

use proptest::collection::vec;
use proptest::prelude::*;

use super::super::encode::{Endian, encode};
use super::super::*;

/// Names and strings are C strings: anything but NUL.
fn c_string() -> impl Strategy<Value = String> {
    "[^\\x00]{0,12}"
}

fn scalar() -> impl Strategy<Value = NvValue<'static>> {
    prop_oneof![
        Just(NvValue::Boolean),
        any::<bool>().prop_map(NvValue::BooleanValue),
        any::<u8>().prop_map(NvValue::Byte),
        any::<i8>().prop_map(NvValue::Int8),
        any::<u8>().prop_map(NvValue::Uint8),
        any::<i16>().prop_map(NvValue::Int16),
        any::<u16>().prop_map(NvValue::Uint16),
        any::<i32>().prop_map(NvValue::Int32),
        any::<u32>().prop_map(NvValue::Uint32),
        any::<i64>().prop_map(NvValue::Int64),
        any::<u64>().prop_map(NvValue::Uint64),
        any::<i64>().prop_map(NvValue::Hrtime),
        // NaN != NaN would fail the equality, not the decoder.
        any::<f64>()
            .prop_filter("not NaN", |f| !f.is_nan())
            .prop_map(NvValue::Double),
        c_string().prop_map(|s| NvValue::String(s.into())),
    ]
}

fn array() -> impl Strategy<Value = NvValue<'static>> {
    const N: std::ops::Range<usize> = 0..12;
    prop_oneof![
        vec(any::<u8>(), N).prop_map(NvValue::ByteArray),
        vec(any::<bool>(), N).prop_map(NvValue::BooleanArray),
        vec(any::<i8>(), N).prop_map(NvValue::Int8Array),
        vec(any::<u8>(), N).prop_map(NvValue::Uint8Array),
        vec(any::<i16>(), N).prop_map(NvValue::Int16Array),
        vec(any::<u16>(), N).prop_map(NvValue::Uint16Array),
        vec(any::<i32>(), N).prop_map(NvValue::Int32Array),
        vec(any::<u32>(), N).prop_map(NvValue::Uint32Array),
        vec(any::<i64>(), N).prop_map(NvValue::Int64Array),
        vec(any::<u64>(), N).prop_map(|v| NvValue::Uint64Array(v.into())),
        vec(c_string(), 0..5)
            .prop_map(|v| NvValue::StringArray(v.into_iter().map(Into::into).collect())),
    ]
}

fn make_list(nvflag: u32, pairs: Vec<(String, NvValue<'static>)>) -> NvList<'static> {
    pairs
        .into_iter()
        .fold(NvList::with_nvflag(nvflag), |l, (n, v)| l.with(n, v))
}

/// Random nested lists: leaves of every type, NVLIST and NVLIST_ARRAY (empty ones too) up
/// to a few levels, duplicate names possible, any nvflag.
fn list() -> impl Strategy<Value = NvList<'static>> {
    let leaf_value = prop_oneof![scalar(), array()];
    let leaf = (0u32..4, vec((c_string(), leaf_value.clone()), 0..6))
        .prop_map(|(f, pairs)| make_list(f, pairs));
    leaf.prop_recursive(4, 48, 6, move |inner| {
        let value = prop_oneof![
            3 => leaf_value.clone(),
            1 => inner.clone().prop_map(NvValue::NvList),
            1 => vec(inner, 0..4).prop_map(NvValue::NvListArray),
        ];
        (0u32..4, vec((c_string(), value), 0..6)).prop_map(|(f, pairs)| make_list(f, pairs))
    })
}

fn endian() -> impl Strategy<Value = Endian> {
    prop_oneof![Just(Endian::Little), Just(Endian::Big)]
}

/// Whatever the outcome, an error must point inside the input.
fn decode_checked(bytes: &[u8]) -> Result<NvList<'_>, NvError> {
    let result = decode(bytes);
    if let Err(e) = &result {
        assert!(
            e.offset <= bytes.len(),
            "offset {} past {}",
            e.offset,
            bytes.len()
        );
        let _ = e.to_string();
    }
    result
}

proptest! {
    #[test]
    fn round_trip(l in list(), e in endian()) {
        let bytes = encode(&l, e);
        prop_assert_eq!(decode(&bytes).unwrap(), l);
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        let _ = decode_checked(&bytes);
    }

    /// Random bytes after a valid header reach the pair parser instead of stopping at byte 0.
    #[test]
    fn random_pairs_never_panic(little in any::<bool>(), body in vec(any::<u8>(), 0..512)) {
        let mut bytes = vec![0, u8::from(little), 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        bytes.extend(body);
        let _ = decode_checked(&bytes);
    }

    /// Plausible garbage: a valid encoding with bytes overwritten.
    #[test]
    fn mutated_encodings_never_panic(
        l in list(),
        e in endian(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = encode(&l, e);
        for (i, b) in edits {
            let at = i.index(bytes.len());
            bytes[at] = b;
        }
        let _ = decode_checked(&bytes);
    }

    #[test]
    fn truncated_real_replies_fail_cleanly(which in 0usize..4, cut in any::<prop::sample::Index>()) {
        let reply = super::lab::replies()[which];
        let cut = cut.index(reply.len());
        // Every proper prefix lacks at least the final terminator.
        prop_assert!(decode_checked(&reply[..cut]).is_err());
    }

    #[test]
    fn bit_flipped_real_replies_never_panic(
        which in 0usize..4,
        flips in vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
    ) {
        let mut reply = super::lab::replies()[which].to_vec();
        for (i, bit) in flips {
            let at = i.index(reply.len());
            reply[at] ^= 1 << bit;
        }
        if let Ok(l) = decode_checked(&reply) {
            // Whatever decoded must survive a round trip of its own. (Debug, not ==: a flip
            // can turn a value into a NaN double.)
            let bytes = encode(&l, Endian::Little);
            let again = decode(&bytes).unwrap();
            prop_assert_eq!(format!("{again:?}"), format!("{l:?}"));
        }
    }
}

/// The configs reply is small enough to try every prefix.
#[test]
fn every_prefix_of_pool_configs_fails_cleanly() {
    let reply = super::lab::replies()[0];
    for cut in 0..reply.len() {
        assert!(decode_checked(&reply[..cut]).is_err(), "prefix {cut}");
    }
    assert!(decode_checked(reply).is_ok());
}

/// Real replies survive decode → encode → decode in both byte orders, and re-encoding a real
/// reply in its own order gives back the kernel's bytes: the decoder keeps everything.
#[test]
fn real_replies_round_trip() {
    for reply in super::lab::replies() {
        let l = decode(reply).unwrap();
        assert_eq!(encode(&l, Endian::Little), reply);
        assert_eq!(decode(&encode(&l, Endian::Big)).unwrap(), l);
    }
}
