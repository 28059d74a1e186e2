//! Decode errors: what was wrong, at which byte, and under which pair names.

use std::fmt;

use crate::sources::ParseError;

/// Why a packed nvlist was refused, with enough context to find the fault in a hex dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvError {
    /// Byte offset in the input of the field that is wrong (or of the pair that contains it).
    pub offset: usize,
    /// Pair names from the top-level list down to the fault, e.g.
    /// `vdev_tree.children[0].vdev_stats`; empty for the stream header or the top level.
    pub path: String,
    pub kind: NvErrorKind,
}

/// The different ways a packed nvlist can be malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NvErrorKind {
    /// The input ends inside `what`.
    Truncated {
        what: &'static str,
        needed: usize,
        available: usize,
    },
    /// Encoding byte 1: an XDR stream (zpool.cache, labels). The ioctls never send one.
    Xdr,
    /// Encoding byte neither 0 (NATIVE) nor 1 (XDR).
    UnknownEncoding(u8),
    /// Endian byte neither 1 (little) nor 0 (big).
    UnknownEndian(u8),
    /// `nvl_version` is not 0 (`NV_VERSION`), in the stream header or an embedded list.
    UnsupportedVersion(i32),
    /// `nvp_size` negative, smaller than the 24-byte minimum pair, or past the input end.
    BadPairSize { size: i32, remaining: usize },
    /// `nvp_name_sz` < 1, or the name would not fit in the pair.
    BadNameSize { name_sz: i16, pair_size: usize },
    /// The name does not end with its NUL exactly at `nvp_name_sz`.
    BadName,
    /// A `data_type_t` no encoder writes.
    UnknownType { code: i32, name: String },
    /// `nvp_value_elem` invalid for the type: not 1 for a scalar, not 0 for `BOOLEAN`,
    /// negative for an array.
    BadElementCount { data_type: &'static str, nelem: i32 },
    /// `nvp_size` differs from what the encoder writes for this name, type and count
    /// (`NVP_SIZE_CALC`). This is also how an absurd element count is caught, before any
    /// allocation.
    SizeMismatch {
        data_type: &'static str,
        nelem: i32,
        expected: u64,
        actual: usize,
    },
    /// A `STRING_ARRAY` whose pointer slots and one byte per string already exceed the
    /// pair: an absurd count, refused before allocating.
    ElementsDontFit { nelem: i32, available: usize },
    /// A `STRING` (index `None`) or `STRING_ARRAY` element has no NUL inside the pair.
    StringNotTerminated { index: Option<usize> },
    /// A `boolean_t` that is neither 0 nor 1.
    BadBoolean(i32),
    /// Embedded lists nested deeper than the limit.
    TooDeep { limit: usize },
    /// Bytes after the final terminator: the caller passed more than the packed size.
    TrailingBytes(usize),
}

impl fmt::Display for NvErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use NvErrorKind::*;
        match self {
            Truncated {
                what,
                needed,
                available,
            } => write!(
                f,
                "input ends inside {what}: {needed} bytes needed, {available} left"
            ),
            Xdr => f.write_str(
                "XDR-encoded nvlist (encoding byte 1) refused: the /dev/zfs ioctls always send \
                 NATIVE encoding (fnvlist_pack), so this is not an ioctl reply",
            ),
            UnknownEncoding(b) => {
                write!(f, "unknown encoding byte {b} (0 = NATIVE, 1 = XDR)")
            }
            UnknownEndian(b) => write!(f, "unknown endian byte {b} (1 = little, 0 = big)"),
            UnsupportedVersion(v) => write!(f, "nvlist version {v}, only 0 is defined"),
            BadPairSize { size, remaining } => write!(
                f,
                "pair size {size} invalid (minimum 24, {remaining} bytes left in the input)"
            ),
            BadNameSize { name_sz, pair_size } => write!(
                f,
                "name size {name_sz} invalid for a pair of {pair_size} bytes"
            ),
            BadName => f.write_str("pair name is not NUL-terminated at its declared size"),
            UnknownType { code, name } => {
                write!(f, "unknown data type code {code} in pair `{name}`")
            }
            BadElementCount { data_type, nelem } => {
                write!(f, "element count {nelem} invalid for {data_type}")
            }
            SizeMismatch {
                data_type,
                nelem,
                expected,
                actual,
            } => write!(
                f,
                "{data_type} pair with {nelem} element(s) is {actual} bytes, the encoder \
                 writes {expected}"
            ),
            ElementsDontFit { nelem, available } => write!(
                f,
                "string array of {nelem} elements cannot fit in the {available} value bytes \
                 of its pair"
            ),
            StringNotTerminated { index: None } => {
                f.write_str("string value has no NUL inside its pair")
            }
            StringNotTerminated { index: Some(i) } => {
                write!(f, "string array element {i} has no NUL inside its pair")
            }
            BadBoolean(v) => write!(f, "boolean_t value {v} is neither 0 nor 1"),
            TooDeep { limit } => write!(f, "embedded nvlists nested deeper than {limit}"),
            TrailingBytes(n) => write!(
                f,
                "{n} bytes after the final terminator (pass exactly the packed size, \
                 zc_nvlist_dst_size)"
            ),
        }
    }
}

impl fmt::Display for NvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {} (0x{:x}", self.offset, self.offset)?;
        if !self.path.is_empty() {
            write!(f, ", in {}", self.path)?;
        }
        write!(f, "): {}", self.kind)
    }
}

impl std::error::Error for NvError {}

/// So the ioctl readers can report a bad reply like any other parse failure.
impl From<NvError> for ParseError {
    fn from(e: NvError) -> Self {
        let message = if e.path.is_empty() {
            e.kind.to_string()
        } else {
            format!("in {}: {}", e.path, e.kind)
        };
        ParseError::new("nvlist", message).at_offset(e.offset)
    }
}
