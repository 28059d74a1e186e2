//! A worked example: the 420-byte NATIVE stream that OpenZFS's own `nvpair.c` packs for the
//! list below, rebuilt here byte by byte from the layout in docs/zfs-sources.md ("Packed
//! nvlists"), then decoded.

use super::super::encode::{Endian, encode};
use super::super::*;

const A: u64 = 0x0102_0304_0506_0708;
const VS: [u64; 3] = [10, 20, u64::MAX];
const G: u64 = 42;
const Z: u64 = 7;

/// A little-endian byte builder that checks each item starts at the documented offset.
struct Doc(Vec<u8>);

impl Doc {
    fn at(&mut self, offset: usize) -> &mut Self {
        assert_eq!(self.0.len(), offset, "item should start at 0x{offset:03X}");
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    fn zeros(&mut self, n: usize) -> &mut Self {
        self.0.resize(self.0.len() + n, 0);
        self
    }
    /// nvp_size, name_sz, reserve, nelem, type, name + NUL, padded to the value offset.
    fn pair(&mut self, size: u32, name: &str, nelem: u32, ty: u32) -> &mut Self {
        let start = self.0.len();
        let name_sz = name.len() + 1;
        self.u32(size);
        self.0.extend_from_slice(&(name_sz as u16).to_le_bytes());
        self.0.extend_from_slice(&0u16.to_le_bytes());
        self.u32(nelem).u32(ty).bytes(name.as_bytes()).zeros(1);
        let value_off = (16 + name_sz).next_multiple_of(8);
        self.zeros(start + value_off - self.0.len())
    }
    /// A 24-byte nvlist_t: version 0, nvflag 1 (NV_UNIQUE_NAME), priv, flag, pad zero.
    fn nvlist_t(&mut self) -> &mut Self {
        self.u32(0).u32(1).u64(0).u32(0).u32(0)
    }
    fn terminator(&mut self) -> &mut Self {
        self.u32(0)
    }
}

/// The bytes of §4.4, item by item.
fn worked_example() -> Vec<u8> {
    let mut d = Doc(Vec::new());
    // header 00 01 00 00; version 0; nvflag 1
    d.at(0x000).bytes(&[0, 1, 0, 0]).u32(0).u32(1);
    // pair `a`: size 32, name_sz 2, nelem 1, type 8; value at +24
    d.at(0x00C).pair(32, "a", 1, 8).u64(A);
    // pair `tree`: size 48, name_sz 5, type 19; 24-byte nvlist_t value at +24
    d.at(0x02C).pair(48, "tree", 1, 19).nvlist_t();
    // (embedded) `type`: size 32, type 9, value `disk\0` padded to 8
    d.at(0x05C).pair(32, "type", 1, 9).bytes(b"disk\0").zeros(3);
    // (embedded) `vs`: size 48, nelem 3, type 16
    d.at(0x07C).pair(48, "vs", 3, 16);
    VS.iter().for_each(|&v| {
        d.u64(v);
    });
    // 4-byte terminator of `tree`
    d.at(0x0AC).terminator();
    // pair `children`: size 96, name_sz 9, nelem 2, type 20; 16 zero bytes + 2 × nvlist_t
    d.at(0x0B0)
        .pair(96, "children", 2, 20)
        .zeros(16)
        .nvlist_t()
        .nvlist_t();
    // element 0: `g` (size 32), terminator at 0x130
    d.at(0x110).pair(32, "g", 1, 8).u64(G);
    d.at(0x130).terminator();
    // element 1: `b` (size 24, nelem 0, type 1), terminator at 0x14C
    d.at(0x134).pair(24, "b", 0, 1);
    d.at(0x14C).terminator();
    // pair `sa`: size 48, nelem 2, type 17; 16 zero bytes + `x\0yz\0`
    d.at(0x150)
        .pair(48, "sa", 2, 17)
        .zeros(16)
        .bytes(b"x\0yz\0")
        .zeros(3);
    // pair `z`
    d.at(0x180).pair(32, "z", 1, 8).u64(Z);
    // final terminator; end = 0x1A4 = 420
    d.at(0x1A0).terminator();
    d.at(0x1A4);
    d.0
}

fn expected() -> NvList<'static> {
    NvList::new()
        .with("a", NvValue::Uint64(A))
        .with(
            "tree",
            NvValue::NvList(
                NvList::new()
                    .with("type", NvValue::String("disk".into()))
                    .with("vs", NvValue::Uint64Array(VS.to_vec().into())),
            ),
        )
        .with(
            "children",
            NvValue::NvListArray(vec![
                NvList::new().with("g", NvValue::Uint64(G)),
                NvList::new().with("b", NvValue::Boolean),
            ]),
        )
        .with("sa", NvValue::StringArray(vec!["x".into(), "yz".into()]))
        .with("z", NvValue::Uint64(Z))
}

#[test]
fn worked_example_is_420_bytes() {
    assert_eq!(worked_example().len(), 420);
}

#[test]
fn worked_example_decodes() {
    let bytes = worked_example();
    let list = decode(&bytes).unwrap();
    assert_eq!(list, expected());
    assert_eq!(list.nvflag(), NV_UNIQUE_NAME);
    assert_eq!(list.u64("a"), Some(A));
    assert_eq!(
        list.lookup("tree.type").and_then(NvValue::as_str),
        Some("disk")
    );
    assert_eq!(
        list.lookup("tree.vs")
            .and_then(NvValue::as_u64_array)
            .map(|vs| vs.clone().into_vec()),
        Some(VS.to_vec())
    );
    assert_eq!(
        list.lookup("children[0].g").and_then(NvValue::as_u64),
        Some(G)
    );
    assert_eq!(
        list.lookup("children[1].b").and_then(NvValue::as_bool),
        Some(true)
    );
    assert_eq!(list.lookup_list("children[1]").map(NvList::len), Some(1));
    assert_eq!(list.str_array("sa"), Some(&["x".into(), "yz".into()][..]));
    assert_eq!(list.u64("z"), Some(Z));
}

/// The test encoder, written from §4.1–4.3, reproduces the worked example exactly, so the
/// round-trip property tests exercise the real layout.
#[test]
fn test_encoder_matches_worked_example() {
    assert_eq!(encode(&expected(), Endian::Little), worked_example());
}

/// The same content from a big-endian host: same layout, integers swapped, endian byte 0.
#[test]
fn worked_example_big_endian() {
    let be = encode(&expected(), Endian::Big);
    assert_eq!(be.len(), 420);
    assert_eq!(&be[..4], &[0, 0, 0, 0]);
    assert_eq!(&be[0x0C..0x10], &32u32.to_be_bytes());
    assert_eq!(decode(&be).unwrap(), expected());
}
