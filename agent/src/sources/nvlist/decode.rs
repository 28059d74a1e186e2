//! The NATIVE decoder (module/nvpair/nvpair.c `nvs_native_*`, checked against
//! docs/zfs-sources.md, "Packed nvlists").
//!
//! Layout in one paragraph: a 4-byte stream header (encoding, endian, 2 reserved), the
//! top-level list's `nvl_version` and `nvl_nvflag` (4 bytes each), then pairs. A pair is the
//! in-memory `nvpair_t` copied verbatim: `nvp_size` (i32, the whole pair), `nvp_name_sz` (i16,
//! with the NUL), reserved i16, `nvp_value_elem` (i32), `nvp_type` (i32), the name, and the
//! value at the next multiple of 8. A 4-byte zero `nvp_size` ends a list. An `NVLIST` pair
//! holds only the 24-byte `nvlist_t` header; the embedded list's pairs and terminator follow
//! the pair in the stream, and an `NVLIST_ARRAY` is followed by each element's pairs and
//! terminator in turn. Those terminators are 4 bytes long, so pairs are not 8-aligned in the
//! buffer: every field is read with an explicit unaligned load in the stream's byte order.
//!
//! Strictness follows libnvpair's own `nvs_native_nvpair` + `i_validate_nvpair`: a pair must
//! be **exactly** `NVP_SIZE_CALC(name_sz, value_size)` bytes (which implies a multiple of 8),
//! names and strings must be NUL-terminated inside the pair, element counts must match the
//! type, `boolean_t` must be 0 or 1. On top of that, this decoder refuses bytes after the
//! final terminator, because the ioctl reports the exact packed size and anything more means
//! the caller sliced the buffer wrongly.
//!
//! Embedded lists are walked with an explicit stack, not recursion, so hostile nesting
//! cannot overflow the thread's stack; [`MAX_DEPTH`] bounds the nesting anyway, which also
//! bounds the recursion of `Drop`, `Clone`, `Debug` and `PartialEq` on the result. Every
//! allocation is sized from bytes already proven present in the input, never from a count
//! field alone.

use super::error::{NvError, NvErrorKind};
use super::value::{DataType, NvList, NvPair, NvValue, U64s};
use std::borrow::Cow;

/// Deepest nesting of embedded lists accepted (the top-level list is depth 0). The kernel's
/// encoder stops at `nvpair_max_recursion` = 20, userland libnvpair at 100; 64 leaves room
/// for anything the kernel can send (a vdev tree is about 5 deep) while staying far from
/// any stack limit in the recursive derived traits of [`NvList`].
pub const MAX_DEPTH: usize = 64;

const STREAM_HEADER: usize = 4;
const LIST_HEADER: usize = 8;
/// `sizeof (nvpair_t)`: size, name_sz, reserve, value_elem, type.
const PAIR_HEADER: usize = 16;
/// `NVP_SIZE_CALC(1, 0)`: the smallest valid pair (one-byte name, no value).
const MIN_PAIR: usize = 24;
/// `sizeof (nvlist_t)`: version, nvflag, priv (8), flag, pad.
const NVLIST_T: usize = 24;
/// A pointer slot in `STRING_ARRAY` and `NVLIST_ARRAY` values.
const POINTER: usize = 8;

/// Decodes a NATIVE packed nvlist, as `ZFS_IOC_POOL_CONFIGS` / `ZFS_IOC_POOL_STATS` return
/// it, into an [`NvList`]. `bytes` must be exactly the packed size the kernel reported
/// (`zc_nvlist_dst_size`). Pure: no I/O, never panics, memory bounded by the input length.
pub fn decode(bytes: &[u8]) -> Result<NvList<'_>, NvError> {
    let order = stream_header(bytes)?;
    let input = Input { buf: bytes, order };
    let mut lists = Lists::new(list_header(&input)?);
    let mut pos = STREAM_HEADER + LIST_HEADER;
    loop {
        let Some(size) = input.i32(pos) else {
            let mut e = truncated(bytes, pos, "pair size or list terminator", 4);
            e.path = lists.path(None);
            return Err(e);
        };
        if size == 0 {
            pos += 4;
            if let Some(root) = lists.close() {
                if pos != bytes.len() {
                    return Err(fault(pos, NvErrorKind::TrailingBytes(bytes.len() - pos)));
                }
                return Ok(root);
            }
            continue;
        }
        let (size, name, parsed) = pair(&input, pos, size).map_err(|f| NvError {
            offset: f.offset,
            path: lists.path(f.name.as_deref()),
            kind: f.kind,
        })?;
        lists.add(pos, name, parsed)?;
        pos += size;
    }
}

/// The top-level `nvl_version` (must be 0) and `nvl_nvflag`, after the stream header.
fn list_header(input: &Input<'_>) -> Result<u32, NvError> {
    let (Some(version), Some(nvflag)) = (input.i32(STREAM_HEADER), input.u32(STREAM_HEADER + 4))
    else {
        return Err(truncated(
            input.buf,
            STREAM_HEADER,
            "nvlist header",
            LIST_HEADER,
        ));
    };
    if version != 0 {
        return Err(fault(
            STREAM_HEADER,
            NvErrorKind::UnsupportedVersion(version),
        ));
    }
    Ok(nvflag)
}

/// The explicit stack that replaces recursion: the top-level list and the embedded lists
/// opened under it whose terminator has not been read yet, innermost last.
///
/// The pairs of the list open at depth `d` gather in `pending[d]`, a buffer kept for every
/// list of that depth, and become the list's own vector, allocated once at its exact size,
/// when its terminator is read. Pushed into a vector of its own, a list of 30 pairs grew
/// through four reallocations; at 5,000 disks (7,500 vdevs) the reallocations were a tenth of
/// an interval's CPU time.
struct Lists<'a> {
    root_nvflag: u32,
    open: Vec<Open<'a>>,
    pending: Vec<Vec<NvPair<'a>>>,
}

/// An embedded list being read: its `nvl_nvflag` and where it goes when it ends.
struct Open<'a> {
    nvflag: u32,
    slot: Slot<'a>,
}

enum Slot<'a> {
    /// The value of the parent's `NVLIST` pair `name`.
    Nested { name: Cow<'a, str> },
    /// Element `elements.len()` of the parent's `NVLIST_ARRAY` pair `name`; `nvflags` holds
    /// every element's `nvl_nvflag`, read from the array's value.
    Element {
        name: Cow<'a, str>,
        nvflags: Vec<u32>,
        elements: Vec<NvList<'a>>,
    },
}

impl<'a> Lists<'a> {
    fn new(nvflag: u32) -> Self {
        Lists {
            root_nvflag: nvflag,
            open: Vec::new(),
            pending: vec![Vec::new()],
        }
    }

    /// The pairs so far of the list the next pair belongs to.
    fn current(&mut self) -> &mut Vec<NvPair<'a>> {
        &mut self.pending[self.open.len()]
    }

    /// Adds `value` to the current list.
    fn push(&mut self, name: Cow<'a, str>, value: NvValue<'a>) {
        self.current().push(NvPair { name, value });
    }

    /// Opens a list one level deeper, whose pairs follow.
    fn open(&mut self, open: Open<'a>) {
        self.open.push(open);
        if self.pending.len() <= self.open.len() {
            self.pending.push(Vec::new());
        }
    }

    /// The pairs gathered at `depth`, as a list of their own.
    fn finish(&mut self, depth: usize, nvflag: u32) -> NvList<'a> {
        NvList::from_pairs(nvflag, self.pending[depth].drain(..).collect())
    }

    /// Adds the pair that starts at byte `at`: a value goes into the current list; an
    /// `NVLIST` or non-empty `NVLIST_ARRAY` opens the list whose pairs follow.
    fn add(&mut self, at: usize, name: Cow<'a, str>, parsed: Parsed<'a>) -> Result<(), NvError> {
        let opens = match &parsed {
            Parsed::Value(_) => false,
            Parsed::Nested(_) => true,
            Parsed::Array(nvflags) => !nvflags.is_empty(),
        };
        if opens && self.open.len() >= MAX_DEPTH {
            return Err(NvError {
                offset: at,
                path: self.path(Some(&name)),
                kind: NvErrorKind::TooDeep { limit: MAX_DEPTH },
            });
        }
        match parsed {
            Parsed::Value(value) => self.push(name, value),
            Parsed::Nested(nvflag) => self.open(Open {
                nvflag,
                slot: Slot::Nested { name },
            }),
            Parsed::Array(nvflags) => match nvflags.first() {
                // An empty NVLIST_ARRAY has no element lists after it.
                None => self.push(name, NvValue::NvListArray(Vec::new())),
                Some(&first) => self.open(Open {
                    nvflag: first,
                    slot: Slot::Element {
                        name,
                        elements: Vec::with_capacity(nvflags.len()),
                        nvflags,
                    },
                }),
            },
        }
        Ok(())
    }

    /// A terminator: ends the innermost open list, attaching it to its parent (or starting
    /// the array's next element). The top-level list when it was that one, i.e. the stream
    /// ends.
    fn close(&mut self) -> Option<NvList<'a>> {
        let Some(Open { nvflag, slot }) = self.open.pop() else {
            return Some(self.finish(0, self.root_nvflag));
        };
        // Its pairs are one level below the lists still open.
        let done = self.finish(self.open.len() + 1, nvflag);
        match slot {
            Slot::Nested { name } => self.push(name, NvValue::NvList(done)),
            Slot::Element {
                name,
                nvflags,
                mut elements,
            } => {
                elements.push(done);
                match nvflags.get(elements.len()) {
                    Some(&nvflag) => self.open(Open {
                        nvflag,
                        slot: Slot::Element {
                            name,
                            nvflags,
                            elements,
                        },
                    }),
                    None => self.push(name, NvValue::NvListArray(elements)),
                }
            }
        }
        None
    }

    /// `vdev_tree.children[0].vdev_stats`: the open lists, then the pair being read if any.
    fn path(&self, pair: Option<&str>) -> String {
        let mut segments: Vec<String> = self
            .open
            .iter()
            .map(|o| match &o.slot {
                Slot::Nested { name } => name.to_string(),
                Slot::Element { name, elements, .. } => format!("{name}[{}]", elements.len()),
            })
            .collect();
        segments.extend(pair.map(str::to_owned));
        segments.join(".")
    }
}

/// The stream header: refuse XDR and unknown encodings, return the byte order.
fn stream_header(bytes: &[u8]) -> Result<Order, NvError> {
    let Some(header) = bytes.get(..STREAM_HEADER) else {
        return Err(truncated(bytes, 0, "stream header", STREAM_HEADER));
    };
    match header[0] {
        0 => {}
        1 => return Err(fault(0, NvErrorKind::Xdr)),
        other => return Err(fault(0, NvErrorKind::UnknownEncoding(other))),
    }
    // header[2..4] are reserved; libnvpair does not look at them either.
    match header[1] {
        1 => Ok(Order::Little),
        0 => Ok(Order::Big),
        other => Err(fault(1, NvErrorKind::UnknownEndian(other))),
    }
}

/// What one pair turned out to be.
enum Parsed<'a> {
    Value(NvValue<'a>),
    /// An `NVLIST` pair: the embedded list's nvflag; its pairs follow in the stream.
    Nested(u32),
    /// An `NVLIST_ARRAY` pair: each element's nvflag; the elements follow in the stream.
    Array(Vec<u32>),
}

/// A fault found inside a pair, before the caller adds the path.
struct PairFault {
    offset: usize,
    name: Option<String>,
    kind: NvErrorKind,
}

/// Parses the pair at `pos` whose `nvp_size` (non-zero) was read as `size`; returns the
/// validated size, the name and the value.
fn pair<'a>(
    input: &Input<'a>,
    pos: usize,
    size: i32,
) -> Result<(usize, Cow<'a, str>, Parsed<'a>), PairFault> {
    let remaining = input.buf.len() - pos;
    let bad_size = || PairFault {
        offset: pos,
        name: None,
        kind: NvErrorKind::BadPairSize { size, remaining },
    };
    let size = usize::try_from(size).map_err(|_| bad_size())?;
    if size < MIN_PAIR || size > remaining {
        return Err(bad_size());
    }
    let bytes = &input.buf[pos..pos + size];
    let order = input.order;
    let name_sz = order.i16(&bytes[4..6]);
    let nelem = order.i32(&bytes[8..12]);
    let code = order.i32(&bytes[12..16]);

    // The name: 1..=n bytes, NUL exactly at the end (`i_validate_nvpair_name`).
    let (name_len, value_off) = usize::try_from(name_sz)
        .ok()
        .filter(|&n| n >= 1)
        .map(|n| (n, align8(PAIR_HEADER + n)))
        .filter(|&(_, off)| off <= size)
        .ok_or(PairFault {
            offset: pos + 4,
            name: None,
            kind: NvErrorKind::BadNameSize {
                name_sz,
                pair_size: size,
            },
        })?;
    let name_bytes = &bytes[PAIR_HEADER..PAIR_HEADER + name_len];
    if name_bytes.iter().position(|&b| b == 0) != Some(name_bytes.len() - 1) {
        return Err(PairFault {
            offset: pos + PAIR_HEADER,
            name: None,
            kind: NvErrorKind::BadName,
        });
    }
    let name = text(&name_bytes[..name_bytes.len() - 1]);

    let fail = |offset: usize, kind: NvErrorKind| PairFault {
        offset,
        name: Some(name.to_string()),
        kind,
    };
    let Some(ty) = DataType::from_code(code) else {
        return Err(fail(
            pos + 12,
            NvErrorKind::UnknownType {
                code,
                name: name.to_string(),
            },
        ));
    };
    let count = check_nelem(ty, nelem).ok_or_else(|| {
        fail(
            pos + 8,
            NvErrorKind::BadElementCount {
                data_type: ty.name(),
                nelem,
            },
        )
    })?;
    let value = &bytes[value_off..];
    let value_at = pos + value_off;
    // `i_validate_nvpair`: the pair is exactly NVP_SIZE_CALC(name_sz, value_size).
    let check_size = |value_size: u64| {
        let expected = value_off as u64 + align8_u64(value_size);
        if expected == size as u64 {
            Ok(())
        } else {
            Err(fail(
                pos,
                NvErrorKind::SizeMismatch {
                    data_type: ty.name(),
                    nelem,
                    expected,
                    actual: size,
                },
            ))
        }
    };

    let parsed = match ty {
        DataType::String => {
            let len = value
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| fail(value_at, NvErrorKind::StringNotTerminated { index: None }))?;
            check_size(len as u64 + 1)?;
            Parsed::Value(NvValue::String(text(&value[..len])))
        }
        DataType::StringArray => {
            // n zeroed pointer slots, then n C strings back to back. Each string takes at
            // least its NUL, so a count the pair cannot hold is refused before allocating.
            let slots = count as u64 * POINTER as u64;
            if slots + count as u64 > value.len() as u64 {
                return Err(fail(
                    pos + 8,
                    NvErrorKind::ElementsDontFit {
                        nelem,
                        available: value.len(),
                    },
                ));
            }
            let mut strings = Vec::with_capacity(count);
            let mut off = slots as usize;
            for index in 0..count {
                let len = value[off..].iter().position(|&b| b == 0).ok_or_else(|| {
                    fail(
                        value_at + off,
                        NvErrorKind::StringNotTerminated { index: Some(index) },
                    )
                })?;
                strings.push(text(&value[off..off + len]));
                off += len + 1;
            }
            check_size(off as u64)?;
            Parsed::Value(NvValue::StringArray(strings))
        }
        DataType::NvList => {
            check_size(NVLIST_T as u64)?;
            Parsed::Nested(
                embedded_header(value, order)
                    .map_err(|v| fail(value_at, NvErrorKind::UnsupportedVersion(v)))?,
            )
        }
        DataType::NvListArray => {
            // n zeroed pointer slots, then n nvlist_t headers.
            check_size(count as u64 * (POINTER + NVLIST_T) as u64)?;
            let headers = &value[count * POINTER..];
            let mut nvflags = Vec::with_capacity(count);
            for (i, header) in headers.chunks_exact(NVLIST_T).take(count).enumerate() {
                let nvflag = embedded_header(header, order).map_err(|v| {
                    fail(
                        value_at + count * POINTER + i * NVLIST_T,
                        NvErrorKind::UnsupportedVersion(v),
                    )
                })?;
                nvflags.push(nvflag);
            }
            Parsed::Array(nvflags)
        }
        _ => {
            // Fixed-size elements: the size check proves `count * width` bytes are there.
            let width = fixed_width(ty);
            check_size(count as u64 * width as u64)?;
            let data = &value[..count * width];
            Parsed::Value(
                fixed_value(ty, data, order)
                    .map_err(|(i, v)| fail(value_at + i * width, NvErrorKind::BadBoolean(v)))?,
            )
        }
    };
    Ok((size, name, parsed))
}

/// A C string's bytes as text: borrowed when they are UTF-8 (what ZFS writes), else copied
/// with each bad sequence replaced (see [`NvValue`]). `from_utf8` first because it is
/// several times faster than the lossy scan on the short ASCII names of a reply.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `i_validate_type_nelem`: the element count a type allows, as a usize.
fn check_nelem(ty: DataType, nelem: i32) -> Option<usize> {
    use DataType::*;
    let ok = match ty {
        Boolean => nelem == 0,
        ByteArray | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array
        | Uint32Array | Int64Array | Uint64Array | BooleanArray | StringArray | NvListArray => {
            nelem >= 0
        }
        _ => nelem == 1,
    };
    if ok {
        usize::try_from(nelem).ok()
    } else {
        None
    }
}

/// Bytes per element of the types whose value is `nelem` fixed-size elements.
fn fixed_width(ty: DataType) -> usize {
    use DataType::*;
    match ty {
        Boolean => 0,
        Byte | Int8 | Uint8 | ByteArray | Int8Array | Uint8Array => 1,
        Int16 | Uint16 | Int16Array | Uint16Array => 2,
        Int32 | Uint32 | BooleanValue | Int32Array | Uint32Array | BooleanArray => 4,
        Int64 | Uint64 | Hrtime | Double | Int64Array | Uint64Array => 8,
        // Variable-size types are handled before this is called; a width of 0 would only
        // make their size check fail, never read out of bounds.
        String | StringArray | NvList | NvListArray => 0,
    }
}

/// Decodes a fixed-width value from exactly `count * width` bytes. A `boolean_t` other than
/// 0/1 fails with its element index and raw value.
fn fixed_value(ty: DataType, data: &[u8], order: Order) -> Result<NvValue<'_>, (usize, i32)> {
    use DataType::*;
    // For scalars `data` is exactly one element; the loads read its first bytes.
    let byte = data.first().copied().unwrap_or_default();
    Ok(match ty {
        Boolean => NvValue::Boolean,
        Byte => NvValue::Byte(byte),
        Int8 => NvValue::Int8(byte as i8),
        Uint8 => NvValue::Uint8(byte),
        Int16 => NvValue::Int16(order.i16(data)),
        Uint16 => NvValue::Uint16(order.u16(data)),
        Int32 => NvValue::Int32(order.i32(data)),
        Uint32 => NvValue::Uint32(order.u32(data)),
        Int64 => NvValue::Int64(order.i64(data)),
        Uint64 => NvValue::Uint64(order.u64(data)),
        Hrtime => NvValue::Hrtime(order.i64(data)),
        Double => NvValue::Double(f64::from_bits(order.u64(data))),
        BooleanValue => NvValue::BooleanValue(boolean(order.i32(data)).map_err(|v| (0, v))?),
        ByteArray => NvValue::ByteArray(data.to_vec()),
        Uint8Array => NvValue::Uint8Array(data.to_vec()),
        Int8Array => NvValue::Int8Array(data.iter().map(|&b| b as i8).collect()),
        Int16Array => NvValue::Int16Array(data.chunks_exact(2).map(|c| order.i16(c)).collect()),
        Uint16Array => NvValue::Uint16Array(data.chunks_exact(2).map(|c| order.u16(c)).collect()),
        Int32Array => NvValue::Int32Array(data.chunks_exact(4).map(|c| order.i32(c)).collect()),
        Uint32Array => NvValue::Uint32Array(data.chunks_exact(4).map(|c| order.u32(c)).collect()),
        Int64Array => NvValue::Int64Array(data.chunks_exact(8).map(|c| order.i64(c)).collect()),
        // Read when asked: most of a vdev's statistics arrays never are (see `U64s`).
        Uint64Array => NvValue::Uint64Array(U64s::packed(data, order)),
        BooleanArray => NvValue::BooleanArray(
            data.chunks_exact(4)
                .enumerate()
                .map(|(i, c)| boolean(order.i32(c)).map_err(|v| (i, v)))
                .collect::<Result<_, _>>()?,
        ),
        // Not fixed-width; `pair` never calls this for them.
        String | StringArray | NvList | NvListArray => NvValue::Boolean,
    })
}

/// `boolean_t` is an int that libnvpair insists is `B_FALSE` (0) or `B_TRUE` (1).
fn boolean(v: i32) -> Result<bool, i32> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(other),
    }
}

/// An embedded `nvlist_t` header: `nvl_version` must be 0; returns `nvl_nvflag`. The
/// pointer (`nvl_priv`), `nvl_flag` and padding carry nothing in a packed stream.
fn embedded_header(header: &[u8], order: Order) -> Result<u32, i32> {
    let version = order.i32(header.get(..4).unwrap_or_default());
    if version != 0 {
        return Err(version);
    }
    Ok(order.u32(header.get(4..8).unwrap_or_default()))
}

fn fault(offset: usize, kind: NvErrorKind) -> NvError {
    NvError {
        offset,
        path: String::new(),
        kind,
    }
}

fn truncated(bytes: &[u8], at: usize, what: &'static str, needed: usize) -> NvError {
    fault(
        at,
        NvErrorKind::Truncated {
            what,
            needed,
            available: bytes.len().saturating_sub(at),
        },
    )
}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

fn align8_u64(n: u64) -> u64 {
    n.saturating_add(7) & !7
}

/// The byte order named by the stream header's endian byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    Little,
    Big,
}

/// Generates `Order::<ty>(bytes)`: an unaligned load of the first `size_of::<ty>()` bytes.
/// Callers always pass a slice of at least that length (proven by the size checks); a
/// shorter one would read as zero-padded rather than panic.
macro_rules! loads {
    ($($fn:ident: $ty:ty;)*) => {
        impl Order {
            $(
                pub(super) fn $fn(self, bytes: &[u8]) -> $ty {
                    let mut raw = [0u8; size_of::<$ty>()];
                    let n = raw.len().min(bytes.len());
                    raw[..n].copy_from_slice(&bytes[..n]);
                    match self {
                        Order::Little => <$ty>::from_le_bytes(raw),
                        Order::Big => <$ty>::from_be_bytes(raw),
                    }
                }
            )*
        }
    };
}

loads! {
    i16: i16;
    u16: u16;
    i32: i32;
    u32: u32;
    i64: i64;
    u64: u64;
}

/// The input and its byte order, for header fields read at absolute offsets.
struct Input<'a> {
    buf: &'a [u8],
    order: Order,
}

impl Input<'_> {
    fn i32(&self, at: usize) -> Option<i32> {
        Some(self.order.i32(self.buf.get(at..at.checked_add(4)?)?))
    }

    fn u32(&self, at: usize) -> Option<u32> {
        Some(self.order.u32(self.buf.get(at..at.checked_add(4)?)?))
    }
}
