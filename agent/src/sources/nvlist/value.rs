//! The decoded value model: an ordered list of named, typed values.
//!
//! [`NvList`] keeps pairs in stream order and does not deduplicate names: the format allows
//! duplicates (lists without `NV_UNIQUE_NAME`), and hiding them would make a decoded reply
//! differ from the bytes. Lookups by name return the **last** pair of that name, which is
//! what libnvpair's `nvlist_lookup_*` returns for the same stream (its hash chains put the
//! newest pair first, and under `NV_UNIQUE_NAME` a later pair replaces an earlier one).
//!
//! Typed getters are strict: [`NvList::u64`] answers only for a `DATA_TYPE_UINT64` pair, not
//! for an `INT64` or `UINT32` one. ZFS never changes the type of a config key, so a type
//! mismatch means "not the key you think" and is reported as `None` like a missing key.

use super::decode::Order;
use std::borrow::Cow;
use std::fmt;

/// `data_type_t` from include/sys/nvpair.h: the type code stored in every pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DataType {
    Boolean = 1,
    Byte = 2,
    Int16 = 3,
    Uint16 = 4,
    Int32 = 5,
    Uint32 = 6,
    Int64 = 7,
    Uint64 = 8,
    String = 9,
    ByteArray = 10,
    Int16Array = 11,
    Uint16Array = 12,
    Int32Array = 13,
    Uint32Array = 14,
    Int64Array = 15,
    Uint64Array = 16,
    StringArray = 17,
    Hrtime = 18,
    NvList = 19,
    NvListArray = 20,
    BooleanValue = 21,
    Int8 = 22,
    Uint8 = 23,
    BooleanArray = 24,
    Int8Array = 25,
    Uint8Array = 26,
    Double = 27,
}

impl DataType {
    /// The type for a `data_type_t` code; `None` for 0 (`DATA_TYPE_UNKNOWN`), the userland-only
    /// `DATA_TYPE_DONTCARE` (-1) and anything else no encoder writes.
    pub fn from_code(code: i32) -> Option<DataType> {
        use DataType::*;
        Some(match code {
            1 => Boolean,
            2 => Byte,
            3 => Int16,
            4 => Uint16,
            5 => Int32,
            6 => Uint32,
            7 => Int64,
            8 => Uint64,
            9 => String,
            10 => ByteArray,
            11 => Int16Array,
            12 => Uint16Array,
            13 => Int32Array,
            14 => Uint32Array,
            15 => Int64Array,
            16 => Uint64Array,
            17 => StringArray,
            18 => Hrtime,
            19 => NvList,
            20 => NvListArray,
            21 => BooleanValue,
            22 => Int8,
            23 => Uint8,
            24 => BooleanArray,
            25 => Int8Array,
            26 => Uint8Array,
            27 => Double,
            _ => return None,
        })
    }

    /// The `data_type_t` code.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// Lower-case name as `nvlist_print` spells it (`uint64`, `nvlist array`, …).
    pub fn name(self) -> &'static str {
        use DataType::*;
        match self {
            Boolean => "boolean",
            Byte => "byte",
            Int16 => "int16",
            Uint16 => "uint16",
            Int32 => "int32",
            Uint32 => "uint32",
            Int64 => "int64",
            Uint64 => "uint64",
            String => "string",
            ByteArray => "byte array",
            Int16Array => "int16 array",
            Uint16Array => "uint16 array",
            Int32Array => "int32 array",
            Uint32Array => "uint32 array",
            Int64Array => "int64 array",
            Uint64Array => "uint64 array",
            StringArray => "string array",
            Hrtime => "hrtime",
            NvList => "nvlist",
            NvListArray => "nvlist array",
            BooleanValue => "boolean value",
            Int8 => "int8",
            Uint8 => "uint8",
            BooleanArray => "boolean array",
            Int8Array => "int8 array",
            Uint8Array => "uint8 array",
            Double => "double",
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One decoded value, one variant per `data_type_t`.
///
/// Strings (values and names) are C strings in the stream with no declared encoding; they are
/// converted with [`String::from_utf8_lossy`] so that one odd byte in, say, a pool comment
/// cannot make the whole reply undecodable. Everything ZFS names (pools, vdev types, device
/// paths on Linux and FreeBSD) is ASCII in practice, so a decoded string borrows from the
/// reply (`'a`) and only one with an odd byte is copied: a pool's reply has a name per pair
/// and a few strings per vdev, and copying each was a tenth of a snapshot's instructions.
#[derive(Debug, Clone, PartialEq)]
pub enum NvValue<'a> {
    /// `DATA_TYPE_BOOLEAN`: a flag with no value; its presence means true.
    Boolean,
    /// `DATA_TYPE_BOOLEAN_VALUE` (a C `boolean_t`, 0 or 1).
    BooleanValue(bool),
    Byte(u8),
    Int8(i8),
    Uint8(u8),
    Int16(i16),
    Uint16(u16),
    Int32(i32),
    Uint32(u32),
    Int64(i64),
    Uint64(u64),
    /// `hrtime_t`: nanoseconds.
    Hrtime(i64),
    /// Userland only; the kernel never sends one.
    Double(f64),
    String(Cow<'a, str>),
    ByteArray(Vec<u8>),
    BooleanArray(Vec<bool>),
    Int8Array(Vec<i8>),
    Uint8Array(Vec<u8>),
    Int16Array(Vec<i16>),
    Uint16Array(Vec<u16>),
    Int32Array(Vec<i32>),
    Uint32Array(Vec<u32>),
    Int64Array(Vec<i64>),
    Uint64Array(U64s<'a>),
    StringArray(Vec<Cow<'a, str>>),
    NvList(NvList<'a>),
    NvListArray(Vec<NvList<'a>>),
}

/// Generates `NvValue::as_*` accessors: `Some` only for the exact variant.
macro_rules! value_accessors {
    ($($(#[$doc:meta])* $fn:ident => $variant:ident : copy $ty:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $fn(&self) -> Option<$ty> {
                match self {
                    NvValue::$variant(v) => Some(*v),
                    _ => None,
                }
            }
        )*
    };
    ($($(#[$doc:meta])* $fn:ident => $variant:ident : ref $ty:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $fn(&self) -> Option<&$ty> {
                match self {
                    NvValue::$variant(v) => Some(v),
                    _ => None,
                }
            }
        )*
    };
}

impl<'a> NvValue<'a> {
    /// The `data_type_t` this value is stored as.
    pub fn data_type(&self) -> DataType {
        match self {
            NvValue::Boolean => DataType::Boolean,
            NvValue::BooleanValue(_) => DataType::BooleanValue,
            NvValue::Byte(_) => DataType::Byte,
            NvValue::Int8(_) => DataType::Int8,
            NvValue::Uint8(_) => DataType::Uint8,
            NvValue::Int16(_) => DataType::Int16,
            NvValue::Uint16(_) => DataType::Uint16,
            NvValue::Int32(_) => DataType::Int32,
            NvValue::Uint32(_) => DataType::Uint32,
            NvValue::Int64(_) => DataType::Int64,
            NvValue::Uint64(_) => DataType::Uint64,
            NvValue::Hrtime(_) => DataType::Hrtime,
            NvValue::Double(_) => DataType::Double,
            NvValue::String(_) => DataType::String,
            NvValue::ByteArray(_) => DataType::ByteArray,
            NvValue::BooleanArray(_) => DataType::BooleanArray,
            NvValue::Int8Array(_) => DataType::Int8Array,
            NvValue::Uint8Array(_) => DataType::Uint8Array,
            NvValue::Int16Array(_) => DataType::Int16Array,
            NvValue::Uint16Array(_) => DataType::Uint16Array,
            NvValue::Int32Array(_) => DataType::Int32Array,
            NvValue::Uint32Array(_) => DataType::Uint32Array,
            NvValue::Int64Array(_) => DataType::Int64Array,
            NvValue::Uint64Array(_) => DataType::Uint64Array,
            NvValue::StringArray(_) => DataType::StringArray,
            NvValue::NvList(_) => DataType::NvList,
            NvValue::NvListArray(_) => DataType::NvListArray,
        }
    }

    /// `BOOLEAN_VALUE` as itself, and a `BOOLEAN` flag as `true` (present means set).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            NvValue::Boolean => Some(true),
            NvValue::BooleanValue(b) => Some(*b),
            _ => None,
        }
    }

    /// A `STRING` value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            NvValue::String(s) => Some(s),
            _ => None,
        }
    }

    value_accessors! {
        /// A `BYTE` value.
        as_byte => Byte: copy u8;
        as_i8 => Int8: copy i8;
        as_u8 => Uint8: copy u8;
        as_i16 => Int16: copy i16;
        as_u16 => Uint16: copy u16;
        as_i32 => Int32: copy i32;
        as_u32 => Uint32: copy u32;
        as_i64 => Int64: copy i64;
        /// A `UINT64` value: most ZFS config numbers (guid, ashift, is_log, …).
        as_u64 => Uint64: copy u64;
        /// An `HRTIME` value in nanoseconds.
        as_hrtime => Hrtime: copy i64;
        as_f64 => Double: copy f64;
    }

    value_accessors! {
        as_byte_array => ByteArray: ref [u8];
        as_bool_array => BooleanArray: ref [bool];
        as_i8_array => Int8Array: ref [i8];
        as_u8_array => Uint8Array: ref [u8];
        as_i16_array => Int16Array: ref [i16];
        as_u16_array => Uint16Array: ref [u16];
        as_i32_array => Int32Array: ref [i32];
        as_u32_array => Uint32Array: ref [u32];
        as_i64_array => Int64Array: ref [i64];
        /// A `UINT64_ARRAY`: `vdev_stats`, `scan_stats`, the histograms of `vdev_stats_ex`.
        as_u64_array => Uint64Array: ref U64s<'a>;
        as_str_array => StringArray: ref [Cow<'a, str>];
        /// An embedded `NVLIST` (`vdev_tree`, `vdev_stats_ex`, …).
        as_nvlist => NvList: ref NvList<'a>;
        /// An `NVLIST_ARRAY` (`children`, `l2cache`, `spares`).
        as_nvlist_array => NvListArray: ref [NvList<'a>];
    }
}

/// A `UINT64_ARRAY`: its elements as the stream holds them, read when asked, or numbers made
/// in memory (what the encoder writes).
///
/// Why not a `Vec<u64>` always: a leaf vdev's `vdev_stats_ex` holds 22 arrays (OpenZFS 2.1,
/// the lab's leaves) and the snapshot keeps 10 of them; decoding every one was an
/// allocation, a copy and a free per array for nothing, 90,000 of each an interval at 5,000
/// disks.
#[derive(Clone, Default)]
pub struct U64s<'a>(Elements<'a>);

#[derive(Clone)]
enum Elements<'a> {
    /// `8 × len` bytes in the stream's byte order (the decoder proved them present).
    Packed {
        bytes: &'a [u8],
        order: Order,
    },
    Numbers(Vec<u64>),
}

impl Default for Elements<'_> {
    fn default() -> Self {
        Elements::Numbers(Vec::new())
    }
}

impl<'a> U64s<'a> {
    /// The elements in `bytes` (a multiple of 8 long: a trailing part is not one).
    pub(super) fn packed(bytes: &'a [u8], order: Order) -> Self {
        U64s(Elements::Packed { bytes, order })
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Elements::Packed { bytes, .. } => bytes.len() / 8,
            Elements::Numbers(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<u64> {
        match &self.0 {
            Elements::Packed { bytes, order } => {
                let at = i.checked_mul(8)?;
                Some(order.u64(bytes.get(at..at.checked_add(8)?)?))
            }
            Elements::Numbers(v) => v.get(i).copied(),
        }
    }

    pub fn first(&self) -> Option<u64> {
        self.get(0)
    }

    /// The elements, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
    }

    /// The elements as numbers of their own.
    pub fn into_vec(self) -> Vec<u64> {
        // The byte order chosen once, not per element: a snapshot reads some 400 elements a
        // vdev this way, and `get`'s checks made it 23 instructions an element.
        match self.0 {
            Elements::Packed { bytes, order } => {
                let words = bytes
                    .chunks_exact(8)
                    .map(|c| c.try_into().unwrap_or_default());
                match order {
                    Order::Little => words.map(u64::from_le_bytes).collect(),
                    Order::Big => words.map(u64::from_be_bytes).collect(),
                }
            }
            Elements::Numbers(v) => v,
        }
    }
}

impl From<Vec<u64>> for U64s<'_> {
    fn from(numbers: Vec<u64>) -> Self {
        U64s(Elements::Numbers(numbers))
    }
}

impl PartialEq for U64s<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for U64s<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One name/value pair.
#[derive(Debug, Clone, PartialEq)]
pub struct NvPair<'a> {
    pub name: Cow<'a, str>,
    pub value: NvValue<'a>,
}

/// `NV_UNIQUE_NAME`: the flag the kernel's `fnvlist_alloc` sets on every list it builds.
pub const NV_UNIQUE_NAME: u32 = 1;
/// `NV_UNIQUE_NAME_TYPE`: names are unique per type.
pub const NV_UNIQUE_NAME_TYPE: u32 = 2;

/// An nvlist: pairs in stream order plus the list's `nvl_nvflag`.
#[derive(Debug, Clone, PartialEq)]
pub struct NvList<'a> {
    nvflag: u32,
    pairs: Vec<NvPair<'a>>,
}

impl Default for NvList<'_> {
    fn default() -> Self {
        NvList::new()
    }
}

/// Generates the `NvList` getters by name, delegating to the `NvValue::as_*` accessor.
macro_rules! list_getters {
    ($($fn:ident => $as:ident -> $ret:ty;)*) => {
        $(
            #[doc = concat!("The last pair named `name`, through [`NvValue::", stringify!($as), "`].")]
            pub fn $fn(&self, name: &str) -> Option<$ret> {
                self.get(name).and_then(NvValue::$as)
            }
        )*
    };
}

impl<'a> NvList<'a> {
    /// An empty list flagged `NV_UNIQUE_NAME`, as the kernel builds them.
    pub fn new() -> Self {
        NvList::with_nvflag(NV_UNIQUE_NAME)
    }

    /// An empty list with the given `nvl_nvflag`.
    pub fn with_nvflag(nvflag: u32) -> Self {
        NvList {
            nvflag,
            pairs: Vec::new(),
        }
    }

    /// A list of these pairs, in this order (the decoder builds each list whole).
    pub(super) fn from_pairs(nvflag: u32, pairs: Vec<NvPair<'a>>) -> Self {
        NvList { nvflag, pairs }
    }

    /// The `nvl_nvflag` from the stream (1 = `NV_UNIQUE_NAME`, 2 = `NV_UNIQUE_NAME_TYPE`).
    pub fn nvflag(&self) -> u32 {
        self.nvflag
    }

    /// Appends a pair; names are not deduplicated (see the module docs).
    pub fn push(&mut self, name: impl Into<Cow<'a, str>>, value: NvValue<'a>) {
        self.pairs.push(NvPair {
            name: name.into(),
            value,
        });
    }

    /// Builder form of [`NvList::push`].
    pub fn with(mut self, name: impl Into<Cow<'a, str>>, value: NvValue<'a>) -> Self {
        self.push(name, value);
        self
    }

    /// All pairs, in stream order.
    pub fn pairs(&self) -> &[NvPair<'a>] {
        &self.pairs
    }

    pub fn iter(&self) -> std::slice::Iter<'_, NvPair<'a>> {
        self.pairs.iter()
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The value of the last pair named `name` (libnvpair's lookup semantics).
    pub fn get(&self, name: &str) -> Option<&NvValue<'a>> {
        self.pairs
            .iter()
            .rev()
            .find(|p| p.name == name)
            .map(|p| &p.value)
    }

    /// Whether a pair named `name` exists, whatever its type. This is how `BOOLEAN` flags
    /// are tested.
    pub fn contains(&self, name: &str) -> bool {
        self.pairs.iter().any(|p| p.name == name)
    }

    list_getters! {
        bool => as_bool -> bool;
        str => as_str -> &str;
        byte => as_byte -> u8;
        i8 => as_i8 -> i8;
        u8 => as_u8 -> u8;
        i16 => as_i16 -> i16;
        u16 => as_u16 -> u16;
        i32 => as_i32 -> i32;
        u32 => as_u32 -> u32;
        i64 => as_i64 -> i64;
        u64 => as_u64 -> u64;
        hrtime => as_hrtime -> i64;
        f64 => as_f64 -> f64;
        byte_array => as_byte_array -> &[u8];
        bool_array => as_bool_array -> &[bool];
        i8_array => as_i8_array -> &[i8];
        u8_array => as_u8_array -> &[u8];
        i16_array => as_i16_array -> &[i16];
        u16_array => as_u16_array -> &[u16];
        i32_array => as_i32_array -> &[i32];
        u32_array => as_u32_array -> &[u32];
        i64_array => as_i64_array -> &[i64];
        u64_array => as_u64_array -> &U64s<'a>;
        str_array => as_str_array -> &[Cow<'a, str>];
        nvlist => as_nvlist -> &NvList<'a>;
        nvlist_array => as_nvlist_array -> &[NvList<'a>];
    }

    /// Follows a path such as `vdev_tree.children[0].vdev_stats`: names separated by `.`,
    /// `[i]` indexing an `NVLIST_ARRAY`. Each step uses [`NvList::get`] semantics.
    ///
    /// Pair names may themselves contain `.` (feature names like `com.delphix:hole_birth`,
    /// `org.openzfs:rebuild_stats`), so a step matches any pair whose name is a prefix of the
    /// rest of the path ending at `.`, `[` or the end; on a dead end the next candidate is
    /// tried. `None` if nothing matches, the path is malformed, or it ends at an array
    /// element (an element is an [`NvList`], not a value: use [`NvList::lookup_list`]).
    pub fn lookup(&self, path: &str) -> Option<&NvValue<'a>> {
        match lookup_in(self, path)? {
            Node::Value(v) => Some(v),
            Node::Element(_) => None,
        }
    }

    /// Like [`NvList::lookup`] for a path that ends at a list: an `NVLIST` pair
    /// (`vdev_tree`) or an element of an `NVLIST_ARRAY` (`vdev_tree.children[1]`).
    pub fn lookup_list(&self, path: &str) -> Option<&NvList<'a>> {
        match lookup_in(self, path)? {
            Node::Value(v) => v.as_nvlist(),
            Node::Element(l) => Some(l),
        }
    }
}

/// Where a lookup path ends.
enum Node<'r, 'a> {
    Value(&'r NvValue<'a>),
    Element(&'r NvList<'a>),
}

/// One step of a lookup. The recursion depth is bounded by the number of `.` and `[` in the
/// caller's path, never by the decoded data.
fn lookup_in<'r, 'a>(list: &'r NvList<'a>, path: &str) -> Option<Node<'r, 'a>> {
    // Candidates in `get` order (last first), so an unambiguous path behaves exactly like
    // chained `get` calls; an earlier pair of a name already seen is shadowed, as in `get`.
    let mut seen: Vec<&str> = Vec::new();
    for pair in list.pairs.iter().rev() {
        if seen.contains(&&*pair.name) {
            continue;
        }
        seen.push(&pair.name);
        let Some(rest) = path.strip_prefix(&*pair.name) else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')) {
            continue;
        }
        if let Some(found) = follow(&pair.value, rest) {
            return Some(found);
        }
    }
    None
}

/// Applies what follows a matched name: nothing, `[i]` (then nothing or `.rest`), or `.rest`.
fn follow<'r, 'a>(value: &'r NvValue<'a>, rest: &str) -> Option<Node<'r, 'a>> {
    if rest.is_empty() {
        return Some(Node::Value(value));
    }
    if let Some(after) = rest.strip_prefix('[') {
        let close = after.find(']')?;
        let index: usize = after[..close].parse().ok()?;
        let element = value.as_nvlist_array()?.get(index)?;
        let rest = &after[close + 1..];
        if rest.is_empty() {
            return Some(Node::Element(element));
        }
        // Elements are lists, not arrays, so only `.name` may follow `[i]`.
        return lookup_in(element, rest.strip_prefix('.')?);
    }
    lookup_in(value.as_nvlist()?, rest.strip_prefix('.')?)
}

impl<'r, 'a> IntoIterator for &'r NvList<'a> {
    type Item = &'r NvPair<'a>;
    type IntoIter = std::slice::Iter<'r, NvPair<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        self.pairs.iter()
    }
}
