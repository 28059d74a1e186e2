//! The fuzz target's committed seed corpus (`fuzz/seeds/nvlist_decode/`): the four lab
//! replies plus synthetic streams made here with the test encoder: every data type in both
//! byte orders (the kernel's replies use only a few types), and nesting at the depth limit.

use super::super::encode::{Endian, encode};
use super::super::*;

const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/seeds/nvlist_decode");

/// One pair of every type, nested lists and arrays included.
pub(super) fn all_types() -> NvList<'static> {
    let inner = NvList::new()
        .with("type", NvValue::String("disk".into()))
        .with(
            "vdev_stats",
            NvValue::Uint64Array(vec![1, 7, 0, 4096].into()),
        );
    NvList::new()
        .with("boolean", NvValue::Boolean)
        .with("boolean_value", NvValue::BooleanValue(true))
        .with("byte", NvValue::Byte(0xab))
        .with("int8", NvValue::Int8(-8))
        .with("uint8", NvValue::Uint8(8))
        .with("int16", NvValue::Int16(-16))
        .with("uint16", NvValue::Uint16(16))
        .with("int32", NvValue::Int32(-32))
        .with("uint32", NvValue::Uint32(32))
        .with("int64", NvValue::Int64(-64))
        .with("uint64", NvValue::Uint64(64))
        .with("hrtime", NvValue::Hrtime(1_000_000_000))
        .with("double", NvValue::Double(0.5))
        .with("string", NvValue::String("tank".into()))
        .with("byte_array", NvValue::ByteArray(vec![1, 2, 3]))
        .with("boolean_array", NvValue::BooleanArray(vec![true, false]))
        .with("int8_array", NvValue::Int8Array(vec![-1, 1]))
        .with("uint8_array", NvValue::Uint8Array(vec![1, 2]))
        .with("int16_array", NvValue::Int16Array(vec![-1, 1]))
        .with("uint16_array", NvValue::Uint16Array(vec![1, 2]))
        .with("int32_array", NvValue::Int32Array(vec![-1, 1]))
        .with("uint32_array", NvValue::Uint32Array(vec![1, 2]))
        .with("int64_array", NvValue::Int64Array(vec![-1, 1]))
        .with("uint64_array", NvValue::Uint64Array(vec![1, 2].into()))
        .with(
            "string_array",
            NvValue::StringArray(vec!["x".into(), "".into(), "yz".into()]),
        )
        .with("nvlist", NvValue::NvList(inner.clone()))
        .with(
            "nvlist_array",
            NvValue::NvListArray(vec![inner, NvList::new(), NvList::with_nvflag(0)]),
        )
        .with("empty_array", NvValue::NvListArray(Vec::new()))
}

/// Lists nested exactly [`MAX_DEPTH`] deep, alternating `NVLIST` and `NVLIST_ARRAY`, so the
/// fuzzer starts next to the depth limit (random mutation rarely builds 64 levels).
fn deepest() -> NvList<'static> {
    (0..MAX_DEPTH).fold(
        NvList::new().with("leaf", NvValue::Uint64(1)),
        |inner, i| {
            let value = if i % 2 == 0 {
                NvValue::NvList(inner)
            } else {
                NvValue::NvListArray(vec![inner])
            };
            NvList::new().with("d", value)
        },
    )
}

fn synthetic() -> [(&'static str, NvList<'static>, Vec<u8>); 3] {
    [
        (
            "all-types-le.nvlist",
            all_types(),
            encode(&all_types(), Endian::Little),
        ),
        (
            "all-types-be.nvlist",
            all_types(),
            encode(&all_types(), Endian::Big),
        ),
        (
            "depth-64-le.nvlist",
            deepest(),
            encode(&deepest(), Endian::Little),
        ),
    ]
}

#[test]
fn committed_seeds_decode() {
    let mut count = 0;
    for entry in std::fs::read_dir(SEEDS).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        decode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        count += 1;
    }
    assert!(count >= 7, "{count} seeds");
    for (name, list, bytes) in synthetic() {
        let committed = std::fs::read(format!("{SEEDS}/{name}")).unwrap();
        assert_eq!(
            committed, bytes,
            "{name} is stale: run write_synthetic_fuzz_seeds"
        );
        assert_eq!(decode(&bytes).unwrap(), list);
    }
}

/// `cargo test -p zpulse-agent --lib write_synthetic_fuzz_seeds -- --ignored` regenerates
/// the synthetic seeds after a change to them.
#[test]
#[ignore]
fn write_synthetic_fuzz_seeds() {
    for (name, _, bytes) in synthetic() {
        std::fs::write(format!("{SEEDS}/{name}"), bytes).unwrap();
    }
}
