//! A NATIVE encoder written from the layout in docs/zfs-sources.md, "Packed nvlists", for tests: round trips with
//! the decoder, synthetic replies, and the fuzz target's oracle (which includes this file by
//! path, so it names nothing but `super::{NvList, NvValue}`).
//!
//! It writes what `nvs_native_*` writes: zeroed pointer slots and `nvl_priv`, `nvl_flag` 0,
//! zero padding. Recursion is fine here: inputs are built by tests, not read from outside.

use super::{NvList, NvValue};

/// Byte order of the encoded stream; the endian byte is 1 for little, 0 for big.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

/// Packs `list` as `nvlist_pack(NV_ENCODE_NATIVE)` would on a host of `endian` order.
pub fn encode(list: &NvList, endian: Endian) -> Vec<u8> {
    let mut w = Writer {
        out: Vec::new(),
        endian,
    };
    w.out
        .extend_from_slice(&[0, u8::from(endian == Endian::Little), 0, 0]);
    w.i32(0); // nvl_version
    w.u32(list.nvflag());
    w.pairs(list);
    w.out
}

struct Writer {
    out: Vec<u8>,
    endian: Endian,
}

macro_rules! puts {
    ($($fn:ident: $ty:ty;)*) => {
        $(
            fn $fn(&mut self, v: $ty) {
                let bytes = match self.endian {
                    Endian::Little => v.to_le_bytes(),
                    Endian::Big => v.to_be_bytes(),
                };
                self.out.extend_from_slice(&bytes);
            }
        )*
    };
}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

impl Writer {
    puts! {
        i16: i16;
        u16: u16;
        i32: i32;
        u32: u32;
        i64: i64;
        u64: u64;
    }

    /// A list's pairs (each followed by its embedded lists) and its 4-byte terminator.
    fn pairs(&mut self, list: &NvList) {
        for pair in list.pairs() {
            self.pair(&pair.name, &pair.value);
        }
        self.i32(0);
    }

    fn pair(&mut self, name: &str, value: &NvValue) {
        let (nelem, bytes) = self.value_bytes(value);
        let name_sz = name.len() + 1;
        let value_off = align8(16 + name_sz);
        let size = value_off + align8(bytes.len());
        let start = self.out.len();
        self.i32(size as i32);
        self.i16(name_sz as i16);
        self.i16(0); // nvp_reserve
        self.i32(nelem as i32);
        self.i32(value.data_type().code());
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.out.resize(start + value_off, 0);
        self.out.extend_from_slice(&bytes);
        self.out.resize(start + size, 0);
        // Embedded content follows the pair, outside nvp_size.
        match value {
            NvValue::NvList(l) => self.pairs(l),
            NvValue::NvListArray(ls) => ls.iter().for_each(|l| self.pairs(l)),
            _ => {}
        }
    }

    /// (nvp_value_elem, the value bytes before padding).
    fn value_bytes(&self, value: &NvValue) -> (usize, Vec<u8>) {
        let mut v = Writer {
            out: Vec::new(),
            endian: self.endian,
        };
        let n = match value {
            NvValue::Boolean => 0,
            NvValue::BooleanValue(b) => {
                v.i32(i32::from(*b));
                1
            }
            NvValue::Byte(x) | NvValue::Uint8(x) => {
                v.out.push(*x);
                1
            }
            NvValue::Int8(x) => {
                v.out.push(*x as u8);
                1
            }
            NvValue::Int16(x) => {
                v.i16(*x);
                1
            }
            NvValue::Uint16(x) => {
                v.u16(*x);
                1
            }
            NvValue::Int32(x) => {
                v.i32(*x);
                1
            }
            NvValue::Uint32(x) => {
                v.u32(*x);
                1
            }
            NvValue::Int64(x) | NvValue::Hrtime(x) => {
                v.i64(*x);
                1
            }
            NvValue::Uint64(x) => {
                v.u64(*x);
                1
            }
            NvValue::Double(x) => {
                v.u64(x.to_bits());
                1
            }
            NvValue::String(s) => {
                v.out.extend_from_slice(s.as_bytes());
                v.out.push(0);
                1
            }
            NvValue::ByteArray(xs) | NvValue::Uint8Array(xs) => {
                v.out.extend_from_slice(xs);
                xs.len()
            }
            NvValue::Int8Array(xs) => {
                v.out.extend(xs.iter().map(|&x| x as u8));
                xs.len()
            }
            NvValue::BooleanArray(xs) => {
                xs.iter().for_each(|&x| v.i32(i32::from(x)));
                xs.len()
            }
            NvValue::Int16Array(xs) => {
                xs.iter().for_each(|&x| v.i16(x));
                xs.len()
            }
            NvValue::Uint16Array(xs) => {
                xs.iter().for_each(|&x| v.u16(x));
                xs.len()
            }
            NvValue::Int32Array(xs) => {
                xs.iter().for_each(|&x| v.i32(x));
                xs.len()
            }
            NvValue::Uint32Array(xs) => {
                xs.iter().for_each(|&x| v.u32(x));
                xs.len()
            }
            NvValue::Int64Array(xs) => {
                xs.iter().for_each(|&x| v.i64(x));
                xs.len()
            }
            NvValue::Uint64Array(xs) => {
                xs.iter().for_each(|x| v.u64(x));
                xs.len()
            }
            NvValue::StringArray(xs) => {
                // Zeroed pointer slots, then the strings back to back.
                v.out.resize(8 * xs.len(), 0);
                for s in xs {
                    v.out.extend_from_slice(s.as_bytes());
                    v.out.push(0);
                }
                xs.len()
            }
            NvValue::NvList(l) => {
                v.nvlist_t(l);
                1
            }
            NvValue::NvListArray(ls) => {
                v.out.resize(8 * ls.len(), 0);
                ls.iter().for_each(|l| v.nvlist_t(l));
                ls.len()
            }
        };
        (n, v.out)
    }

    /// The 24-byte `nvlist_t`: version 0, nvflag, nvl_priv zeroed, nvl_flag 0, pad 0.
    fn nvlist_t(&mut self, list: &NvList) {
        self.i32(0);
        self.u32(list.nvflag());
        self.u64(0);
        self.u32(0);
        self.i32(0);
    }
}
