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
//! What a decode produces is an index, not values: one [`Entry`] per pair (where it starts,
//! its name's length, type, count) in one vector for the whole reply, each list's pairs a
//! contiguous range of it, and one [`Span`] per list. Every check above is made while
//! indexing, so reading a value later ([`super::view`]) only slices bytes already proven
//! present and well formed. Why an index: a 2,000-vdev pool's reply has some 100,000 pairs,
//! and building a typed value, a string and a vector per list for each was three quarters of
//! an interval's instructions (callgrind: 128.6 million an iteration for that pool), most of
//! it for pairs nobody reads. A [`Decoder`] kept by a long-lived reader reuses its vectors
//! from one reply to the next.
//!
//! Embedded lists are walked with an explicit stack, not recursion, so hostile nesting
//! cannot overflow the thread's stack; [`MAX_DEPTH`] bounds the nesting anyway, which also
//! bounds the recursion of the tree built by [`decode`] and of `Drop`, `Clone`, `Debug` and
//! `PartialEq` on it. Every allocation is sized from bytes already proven present in the
//! input, never from a count field alone.

use super::error::{NvError, NvErrorKind};
use super::value::{DataType, NvList, NvValue, U64s};
use super::view::{ListView, Reply};
use std::borrow::Cow;

/// Deepest nesting of embedded lists accepted (the top-level list is depth 0). The kernel's
/// encoder stops at `nvpair_max_recursion` = 20, userland libnvpair at 100; 64 leaves room
/// for anything the kernel can send (a vdev tree is about 5 deep) while staying far from
/// any stack limit in the recursive derived traits of [`NvList`].
pub const MAX_DEPTH: usize = 64;

const STREAM_HEADER: usize = 4;
const LIST_HEADER: usize = 8;
/// `sizeof (nvpair_t)`: size, name_sz, reserve, value_elem, type.
pub(super) const PAIR_HEADER: usize = 16;
/// `NVP_SIZE_CALC(1, 0)`: the smallest valid pair (one-byte name, no value).
const MIN_PAIR: usize = 24;
/// `sizeof (nvlist_t)`: version, nvflag, priv (8), flag, pad.
const NVLIST_T: usize = 24;
/// A pointer slot in `STRING_ARRAY` and `NVLIST_ARRAY` values.
pub(super) const POINTER: usize = 8;

/// Decodes a NATIVE packed nvlist, as `ZFS_IOC_POOL_CONFIGS` / `ZFS_IOC_POOL_STATS` return
/// it, into an [`NvList`] of its own values. `bytes` must be exactly the packed size the
/// kernel reported (`zc_nvlist_dst_size`). Pure: no I/O, never panics, memory bounded by the
/// input length. A reader that looks at a few pairs of a large reply, again and again, reads
/// them in place with a kept [`Decoder`] instead.
pub fn decode(bytes: &[u8]) -> Result<NvList<'_>, NvError> {
    let mut decoder = Decoder::default();
    let order = decoder.index(bytes)?;
    Ok(decoder.reply(bytes, order).tree(0))
}

/// Decodes packed nvlists into an index of their pairs, read in place ([`ListView`]). Its
/// vectors are kept from one reply to the next: a reader that keeps its decoder allocates
/// only when a reply has more pairs or lists than any before.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Every list's pairs, list after list: each list's are contiguous (see `pending`).
    entries: Vec<Entry>,
    /// Every list, the top-level one first; an `NVLIST_ARRAY`'s elements are consecutive.
    lists: Vec<Span>,
    /// The pairs read so far of the list open at each depth. A list's own pairs are
    /// interleaved in the stream with its embedded lists' pairs, so they gather here and move
    /// to `entries` together when its terminator is read; the buffer of each depth serves
    /// every list of that depth.
    pending: Vec<Vec<Entry>>,
    /// The embedded lists opened whose terminator has not been read yet, innermost last.
    open: Vec<Open>,
}

/// One pair, validated: where it lies in the reply and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry {
    /// Byte offset of the pair (its `nvp_size`); the name follows the 16-byte header.
    pub(super) at: usize,
    /// `STRING`: the string's length without its NUL. `STRING_ARRAY`: the length of the
    /// value up to the last string's NUL. `NVLIST`: the embedded list's index in the
    /// reply's lists; `NVLIST_ARRAY`: its first element's. Otherwise 0.
    pub(super) extra: usize,
    /// `nvp_value_elem`, valid for the type.
    pub(super) nelem: u32,
    /// `nvp_name_sz` without the NUL.
    pub(super) name_len: u16,
    pub(super) data_type: DataType,
}

impl Entry {
    /// The byte offset of the name.
    pub(super) fn name_at(&self) -> usize {
        self.at + PAIR_HEADER
    }

    /// The byte offset of the value: the next multiple of 8 after the name and its NUL.
    pub(super) fn value_at(&self) -> usize {
        self.at + align8(PAIR_HEADER + usize::from(self.name_len) + 1)
    }
}

/// One list: its pairs' range in the reply's entries, and its `nvl_nvflag`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) nvflag: u32,
}

/// An embedded list being read.
#[derive(Debug)]
struct Open {
    /// Its index in `lists`.
    list: usize,
    /// Where the pair that opened it starts: its name, for the path of an error.
    pair_at: usize,
    /// For an element of an `NVLIST_ARRAY`: its index, and the array's length.
    element: Option<(usize, usize)>,
}

impl Decoder {
    /// Decodes `bytes` (exactly the packed size) and returns its top-level list, read in
    /// place. Every check of [`decode`] is made; on an error the decoder holds nothing.
    pub fn decode<'a>(&'a mut self, bytes: &'a [u8]) -> Result<ListView<'a>, NvError> {
        let order = self.index(bytes)?;
        Ok(ListView::top(self.reply(bytes, order)))
    }

    fn reply<'i, 'a>(&'i self, bytes: &'a [u8], order: Order) -> Reply<'i, 'a> {
        Reply {
            bytes,
            order,
            entries: &self.entries,
            lists: &self.lists,
        }
    }

    /// Fills `entries` and `lists` from `bytes`; returns the stream's byte order.
    fn index(&mut self, bytes: &[u8]) -> Result<Order, NvError> {
        self.entries.clear();
        self.lists.clear();
        self.open.clear();
        self.pending.iter_mut().for_each(Vec::clear);
        let result = self.walk(bytes);
        if result.is_err() {
            self.entries.clear();
            self.lists.clear();
        }
        result
    }

    fn walk(&mut self, bytes: &[u8]) -> Result<Order, NvError> {
        let order = stream_header(bytes)?;
        let input = Input { buf: bytes, order };
        self.lists.push(Span {
            nvflag: list_header(&input)?,
            ..Span::default()
        });
        if self.pending.is_empty() {
            self.pending.push(Vec::new());
        }
        match order {
            Order::Little => self.pairs::<LittleEndian>(&input)?,
            Order::Big => self.pairs::<BigEndian>(&input)?,
        }
        Ok(order)
    }

    /// The pairs and terminators after the top-level list's header, to the end.
    fn pairs<E: Endian>(&mut self, input: &Input<'_>) -> Result<(), NvError> {
        let bytes = input.buf;
        let mut pos = STREAM_HEADER + LIST_HEADER;
        loop {
            let Some(size) = bytes.get(pos..).and_then(<[u8]>::first_chunk) else {
                let mut e = truncated(bytes, pos, "pair size or list terminator", 4);
                e.path = self.path(bytes, None);
                return Err(e);
            };
            if E::i32(*size) == 0 {
                pos += 4;
                if self.close() {
                    if pos != bytes.len() {
                        return Err(fault(pos, NvErrorKind::TrailingBytes(bytes.len() - pos)));
                    }
                    return Ok(());
                }
                continue;
            }
            let fast = common_pair::<E>(bytes, pos);
            #[cfg(debug_assertions)]
            if let Some(fast) = &fast {
                let checked = pair(input, pos, E::i32(*size)).ok();
                debug_assert_eq!(checked.as_ref(), Some(fast), "at {pos}");
            }
            let (size, entry, parsed) = match fast {
                Some(fast) => fast,
                None => pair(input, pos, E::i32(*size)).map_err(|f| NvError {
                    offset: f.offset,
                    path: self.path(bytes, f.name.as_deref()),
                    kind: f.kind,
                })?,
            };
            match parsed {
                // Most pairs: a value of the list being read.
                Parsed::Value => self.pending[self.open.len()].push(entry),
                _ => self.add(input, entry, parsed)?,
            }
            pos += size;
        }
    }

    /// Adds the pair `entry` to the list open at the current depth; an `NVLIST` or a
    /// non-empty `NVLIST_ARRAY` also opens the list whose pairs follow it.
    fn add(&mut self, input: &Input<'_>, mut entry: Entry, parsed: Parsed) -> Result<(), NvError> {
        let opens = match parsed {
            Parsed::Value => false,
            Parsed::Nested { .. } => true,
            Parsed::Array { .. } => entry.nelem > 0,
        };
        if opens && self.open.len() >= MAX_DEPTH {
            let name = text(input.name(&entry)).into_owned();
            return Err(NvError {
                offset: entry.at,
                path: self.path(input.buf, Some(&name)),
                kind: NvErrorKind::TooDeep { limit: MAX_DEPTH },
            });
        }
        match parsed {
            Parsed::Value => {}
            Parsed::Nested { nvflag } => {
                entry.extra = self.lists.len();
                self.lists.push(Span {
                    nvflag,
                    ..Span::default()
                });
                self.open(Open {
                    list: entry.extra,
                    pair_at: entry.at,
                    element: None,
                });
            }
            Parsed::Array { headers_at } => {
                entry.extra = self.lists.len();
                // The headers were proven present and of version 0 by `pair`.
                let count = entry.nelem as usize;
                for i in 0..count {
                    let at = headers_at + i * NVLIST_T + 4;
                    self.lists.push(Span {
                        nvflag: input.u32(at).unwrap_or_default(),
                        ..Span::default()
                    });
                }
                if count > 0 {
                    self.open(Open {
                        list: entry.extra,
                        pair_at: entry.at,
                        element: Some((0, count)),
                    });
                }
            }
        }
        // `open` pushed the embedded list: the pair belongs to the level below it.
        let depth = self.open.len() - usize::from(opens);
        self.pending[depth].push(entry);
        Ok(())
    }

    /// Opens a list one level deeper, whose pairs follow.
    fn open(&mut self, open: Open) {
        self.open.push(open);
        if self.pending.len() <= self.open.len() {
            self.pending.push(Vec::new());
        }
    }

    /// A terminator: ends the innermost open list, its pairs moved to `entries` as one range
    /// (and starts the array's next element). True when that was the top-level list, i.e.
    /// the stream ends.
    fn close(&mut self) -> bool {
        let depth = self.open.len();
        let start = self.entries.len();
        self.entries.append(&mut self.pending[depth]);
        let end = self.entries.len();
        let Some(open) = self.open.pop() else {
            self.lists[0].start = start;
            self.lists[0].end = end;
            return true;
        };
        let span = &mut self.lists[open.list];
        span.start = start;
        span.end = end;
        if let Some((index, count)) = open.element
            && index + 1 < count
        {
            self.open.push(Open {
                list: open.list + 1,
                pair_at: open.pair_at,
                element: Some((index + 1, count)),
            });
        }
        false
    }

    /// `vdev_tree.children[0].vdev_stats`: the open lists, then the pair being read if any.
    fn path(&self, bytes: &[u8], pair: Option<&str>) -> String {
        let mut segments: Vec<String> = self
            .open
            .iter()
            .map(|o| {
                let name = name_at(bytes, o.pair_at);
                match o.element {
                    None => name,
                    Some((index, _)) => format!("{name}[{index}]"),
                }
            })
            .collect();
        segments.extend(pair.map(str::to_owned));
        segments.join(".")
    }
}

/// The name of the pair at `at`, already validated (NUL-terminated exactly at its size), as
/// text: for the path of an error.
fn name_at(bytes: &[u8], at: usize) -> String {
    let rest = bytes.get(at + PAIR_HEADER..).unwrap_or_default();
    let len = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    text(&rest[..len]).into_owned()
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
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    /// A value, read in place when asked.
    Value,
    /// An `NVLIST` pair: the embedded list's nvflag; its pairs follow in the stream.
    Nested { nvflag: u32 },
    /// An `NVLIST_ARRAY` pair: where its elements' `nvlist_t` headers start (each proven
    /// present and of version 0); the elements follow in the stream.
    Array { headers_at: usize },
}

/// The pair at `pos` when it is of a type pool configs are made of (`BOOLEAN`, `UINT64`,
/// `STRING`, `UINT64_ARRAY`, `NVLIST`, `NVLIST_ARRAY`) and passes every check [`pair`] makes;
/// `None` otherwise, and [`pair`] reads it again: the other types, and every fault, whose
/// error it reports. Why a second reader of the same rules: [`pair`] builds its error's
/// context as it goes and reads fields through the run-time byte order, some 300
/// instructions a pair (callgrind, 142,480 pairs of the 2,000-vdev reply); this one reads
/// the header as one fixed-size array in a byte order known at compile time and only says
/// yes or no. Debug builds (every test) check that [`pair`] accepts each pair this one does,
/// with the same entry.
#[inline(always)]
fn common_pair<E: Endian>(buf: &[u8], pos: usize) -> Option<(usize, Entry, Parsed)> {
    let rest = buf.get(pos..)?;
    let h = rest.first_chunk::<PAIR_HEADER>()?;
    let size = usize::try_from(E::i32([h[0], h[1], h[2], h[3]])).ok()?;
    let name_sz = usize::try_from(E::i16([h[4], h[5]])).ok()?;
    let nelem = E::i32([h[8], h[9], h[10], h[11]]);
    let code = E::i32([h[12], h[13], h[14], h[15]]);
    if size < MIN_PAIR || name_sz == 0 {
        return None;
    }
    let pair = rest.get(..size)?;
    let value_off = align8(PAIR_HEADER + name_sz);
    let value = pair.get(value_off..)?;
    // The name's first NUL is its last byte: searched in the name with its padding, whole
    // words up to the value.
    if nul_at(pair.get(PAIR_HEADER..value_off)?) != Some(name_sz - 1) {
        return None;
    }
    let count = u32::try_from(nelem).ok()?;
    let (data_type, value_size, extra) = match code {
        1 if count == 0 => (DataType::Boolean, 0, 0),
        8 if count == 1 => (DataType::Uint64, 8, 0),
        9 if count == 1 => {
            let len = nul_at(value)?;
            (DataType::String, len as u64 + 1, len)
        }
        16 => (DataType::Uint64Array, u64::from(count) * 8, 0),
        19 if count == 1 => (DataType::NvList, NVLIST_T as u64, 0),
        20 => (
            DataType::NvListArray,
            u64::from(count) * (POINTER + NVLIST_T) as u64,
            0,
        ),
        _ => return None,
    };
    // `i_validate_nvpair`: exactly NVP_SIZE_CALC(name_sz, value_size).
    if value_off as u64 + align8_u64(value_size) != size as u64 {
        return None;
    }
    // The size check proved the embedded headers present.
    let version_0 = |header: &[u8]| header.first_chunk().is_some_and(|v| E::i32(*v) == 0);
    let parsed = match data_type {
        DataType::NvList => {
            let nvflag = value.get(4..)?.first_chunk()?;
            if !version_0(value) {
                return None;
            }
            Parsed::Nested {
                nvflag: E::u32(*nvflag),
            }
        }
        DataType::NvListArray => {
            let headers_off = count as usize * POINTER;
            let headers = value.get(headers_off..)?;
            if !headers.chunks_exact(NVLIST_T).all(version_0) {
                return None;
            }
            Parsed::Array {
                headers_at: pos + value_off + headers_off,
            }
        }
        _ => Parsed::Value,
    };
    let entry = Entry {
        at: pos,
        extra,
        nelem: count,
        name_len: (name_sz - 1) as u16,
        data_type,
    };
    Some((size, entry, parsed))
}

/// A byte order known at compile time: the hot path's loads, without a branch each.
trait Endian {
    fn i16(bytes: [u8; 2]) -> i16;
    fn i32(bytes: [u8; 4]) -> i32;
    fn u32(bytes: [u8; 4]) -> u32;
}

enum LittleEndian {}
enum BigEndian {}

impl Endian for LittleEndian {
    fn i16(bytes: [u8; 2]) -> i16 {
        i16::from_le_bytes(bytes)
    }
    fn i32(bytes: [u8; 4]) -> i32 {
        i32::from_le_bytes(bytes)
    }
    fn u32(bytes: [u8; 4]) -> u32 {
        u32::from_le_bytes(bytes)
    }
}

impl Endian for BigEndian {
    fn i16(bytes: [u8; 2]) -> i16 {
        i16::from_be_bytes(bytes)
    }
    fn i32(bytes: [u8; 4]) -> i32 {
        i32::from_be_bytes(bytes)
    }
    fn u32(bytes: [u8; 4]) -> u32 {
        u32::from_be_bytes(bytes)
    }
}

/// A fault found inside a pair, before the caller adds the path.
struct PairFault {
    offset: usize,
    name: Option<String>,
    kind: NvErrorKind,
}

/// Parses and checks the pair at `pos` whose `nvp_size` (non-zero) was read as `size`;
/// returns the validated size, the pair's entry and what it holds.
fn pair(input: &Input<'_>, pos: usize, size: i32) -> Result<(usize, Entry, Parsed), PairFault> {
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
        .map(|n| (n - 1, align8(PAIR_HEADER + n)))
        .filter(|&(_, off)| off <= size)
        .ok_or_else(|| PairFault {
            offset: pos + 4,
            name: None,
            kind: NvErrorKind::BadNameSize {
                name_sz,
                pair_size: size,
            },
        })?;
    let name = &bytes[PAIR_HEADER..PAIR_HEADER + name_len];
    if bytes[PAIR_HEADER + name_len] != 0 || nul_at(name).is_some() {
        return Err(PairFault {
            offset: pos + PAIR_HEADER,
            name: None,
            kind: NvErrorKind::BadName,
        });
    }

    // The name as text only when a fault is reported: a valid pair's is never converted.
    let fail = |offset: usize, kind: NvErrorKind| PairFault {
        offset,
        name: Some(text(name).into_owned()),
        kind,
    };
    let Some(ty) = DataType::from_code(code) else {
        return Err(fail(
            pos + 12,
            NvErrorKind::UnknownType {
                code,
                name: text(name).into_owned(),
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

    let mut extra = 0;
    let parsed = match ty {
        DataType::String => {
            let len = nul_at(value)
                .ok_or_else(|| fail(value_at, NvErrorKind::StringNotTerminated { index: None }))?;
            check_size(len as u64 + 1)?;
            extra = len;
            Parsed::Value
        }
        DataType::StringArray => {
            // n zeroed pointer slots, then n C strings back to back. Each string takes at
            // least its NUL, so a count the pair cannot hold is refused before the walk.
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
            let mut off = slots as usize;
            for index in 0..count {
                let len = nul_at(&value[off..]).ok_or_else(|| {
                    fail(
                        value_at + off,
                        NvErrorKind::StringNotTerminated { index: Some(index) },
                    )
                })?;
                off += len + 1;
            }
            check_size(off as u64)?;
            extra = off;
            Parsed::Value
        }
        DataType::NvList => {
            check_size(NVLIST_T as u64)?;
            Parsed::Nested {
                nvflag: embedded_header(value, order)
                    .map_err(|v| fail(value_at, NvErrorKind::UnsupportedVersion(v)))?,
            }
        }
        DataType::NvListArray => {
            // n zeroed pointer slots, then n nvlist_t headers.
            check_size(count as u64 * (POINTER + NVLIST_T) as u64)?;
            let headers = &value[count * POINTER..];
            for (i, header) in headers.chunks_exact(NVLIST_T).take(count).enumerate() {
                embedded_header(header, order).map_err(|v| {
                    fail(
                        value_at + count * POINTER + i * NVLIST_T,
                        NvErrorKind::UnsupportedVersion(v),
                    )
                })?;
            }
            Parsed::Array {
                headers_at: value_at + count * POINTER,
            }
        }
        _ => {
            // Fixed-size elements: the size check proves `count * width` bytes are there.
            let width = fixed_width(ty);
            check_size(count as u64 * width as u64)?;
            if matches!(ty, DataType::BooleanValue | DataType::BooleanArray) {
                check_booleans(&value[..count * width], order)
                    .map_err(|(i, v)| fail(value_at + i * width, NvErrorKind::BadBoolean(v)))?;
            }
            Parsed::Value
        }
    };
    let entry = Entry {
        at: pos,
        extra,
        // `check_nelem` refused negative counts.
        nelem: count as u32,
        // `nvp_name_sz` is an i16: the name is shorter than 32,767 bytes.
        name_len: name_len as u16,
        data_type: ty,
    };
    Ok((size, entry, parsed))
}

/// The index of the first NUL in `bytes`, eight bytes a step. Every name and string is
/// scanned for its NUL, and `memchr`'s setup, then a byte-by-byte tail, cost more than the
/// scan itself on names of some 20 bytes (callgrind: 50 to 75 instructions a name). The
/// hot path passes a name or string with its padding, a multiple of 8 long: no tail.
fn nul_at(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    for (i, word) in words.enumerate() {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A bit set in the high bit of each zero byte of `w`. A byte above a zero one may be
        // flagged too (the borrow), never one below: the lowest flag is the first NUL.
        let zeros = w.wrapping_sub(ONES) & !w & HIGHS;
        if zeros != 0 {
            return Some(i * 8 + (zeros.trailing_zeros() / 8) as usize);
        }
    }
    let at = bytes.len() - tail.len();
    tail.iter().position(|&b| b == 0).map(|i| at + i)
}

/// A C string's bytes as text: borrowed when they are UTF-8 (what ZFS writes), else copied
/// with each bad sequence replaced (see [`NvValue`]).
pub(super) fn text(bytes: &[u8]) -> Cow<'_, str> {
    // `from_utf8` first: several times faster than the lossy scan on short ASCII names.
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
pub(super) fn fixed_width(ty: DataType) -> usize {
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

/// A `boolean_t` other than 0/1 fails with its element index and raw value.
fn check_booleans(data: &[u8], order: Order) -> Result<(), (usize, i32)> {
    for (i, element) in data.chunks_exact(4).enumerate() {
        boolean(order.i32(element)).map_err(|v| (i, v))?;
    }
    Ok(())
}

/// A fixed-width value from exactly `count * width` bytes, already checked (booleans are 0
/// or 1).
pub(super) fn fixed_value(ty: DataType, data: &[u8], order: Order) -> NvValue<'_> {
    use DataType::*;
    // For scalars `data` is exactly one element; the loads read its first bytes.
    let byte = data.first().copied().unwrap_or_default();
    match ty {
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
        BooleanValue => NvValue::BooleanValue(order.i32(data) == 1),
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
        BooleanArray => {
            NvValue::BooleanArray(data.chunks_exact(4).map(|c| order.i32(c) == 1).collect())
        }
        // Not fixed-width; never asked for them.
        String | StringArray | NvList | NvListArray => NvValue::Boolean,
    }
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
/// shorter one would read as zero-padded rather than panic. The fixed-size copy first: a
/// copy of a length known only at run time was a call to `memcpy` for each field read.
macro_rules! loads {
    ($($fn:ident: $ty:ty;)*) => {
        impl Order {
            $(
                pub(super) fn $fn(self, bytes: &[u8]) -> $ty {
                    let raw = match bytes.first_chunk::<{ size_of::<$ty>() }>() {
                        Some(raw) => *raw,
                        None => {
                            let mut raw = [0u8; size_of::<$ty>()];
                            raw[..bytes.len()].copy_from_slice(bytes);
                            raw
                        }
                    };
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

impl<'a> Input<'a> {
    fn i32(&self, at: usize) -> Option<i32> {
        Some(self.order.i32(self.buf.get(at..at.checked_add(4)?)?))
    }

    fn u32(&self, at: usize) -> Option<u32> {
        Some(self.order.u32(self.buf.get(at..at.checked_add(4)?)?))
    }

    /// The name of a pair already checked.
    fn name(&self, entry: &Entry) -> &'a [u8] {
        let at = entry.name_at();
        self.buf
            .get(at..at + usize::from(entry.name_len))
            .unwrap_or_default()
    }
}
