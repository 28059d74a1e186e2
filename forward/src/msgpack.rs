//! The slice of MessagePack the Forward framing needs, hand-written.
//!
//! Why not rmp-serde here: the stream has no length prefix, so the decoder must know where
//! one value ends *before* it decodes it, without recursion (hostile nesting) and without
//! trusting announced lengths (a 4 GiB `bin32` header in a 10-byte packet). [`Scanner`] finds
//! value boundaries iteratively and resumably; [`Reader`] walks one complete value. The writers
//! emit the smallest header for each length, as every MessagePack encoder does.

use super::{FrameError, Limits};

/// One MessagePack header: the type and what it announces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Head {
    Nil,
    Bool(bool),
    UInt(u64),
    Int(i64),
    Float(f64),
    /// Length in bytes of the UTF-8 (or not) text that follows.
    Str(u32),
    Bin(u32),
    /// Number of elements.
    Array(u32),
    /// Number of key/value pairs.
    Map(u32),
    /// Ext type and payload length.
    Ext(i8, u32),
}

impl Head {
    /// Bytes of payload after the header (strings, binaries, ext data).
    fn payload(self) -> u64 {
        match self {
            Head::Str(n) | Head::Bin(n) | Head::Ext(_, n) => u64::from(n),
            _ => 0,
        }
    }

    /// Values that follow as children (array elements; map keys and values).
    fn children(self) -> u64 {
        match self {
            Head::Array(n) => u64::from(n),
            Head::Map(n) => 2 * u64::from(n),
            _ => 0,
        }
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Head::Nil => "nil",
            Head::Bool(_) => "a boolean",
            Head::UInt(_) | Head::Int(_) => "an integer",
            Head::Float(_) => "a float",
            Head::Str(_) => "a str",
            Head::Bin(_) => "a bin",
            Head::Array(_) => "an array",
            Head::Map(_) => "a map",
            Head::Ext(..) => "an ext value",
        }
    }
}

fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Parses the header at the start of `buf`: its meaning and its own length in bytes.
/// `Ok(None)`: `buf` ends inside the header.
pub(crate) fn head(buf: &[u8]) -> Result<Option<(Head, usize)>, &'static str> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    // Bytes of the length/value field after the marker, and how to read it.
    let (field, make): (usize, fn(&[u8]) -> Head) = match first {
        0x00..=0x7f => return Ok(Some((Head::UInt(u64::from(first)), 1))),
        0x80..=0x8f => return Ok(Some((Head::Map(u32::from(first & 0x0f)), 1))),
        0x90..=0x9f => return Ok(Some((Head::Array(u32::from(first & 0x0f)), 1))),
        0xa0..=0xbf => return Ok(Some((Head::Str(u32::from(first & 0x1f)), 1))),
        0xc0 => return Ok(Some((Head::Nil, 1))),
        0xc1 => return Err("0xc1 is never used in MessagePack"),
        0xc2 => return Ok(Some((Head::Bool(false), 1))),
        0xc3 => return Ok(Some((Head::Bool(true), 1))),
        0xe0..=0xff => return Ok(Some((Head::Int(i64::from(first as i8)), 1))),
        0xc4 => (1, |b| Head::Bin(be(b) as u32)),
        0xc5 => (2, |b| Head::Bin(be(b) as u32)),
        0xc6 => (4, |b| Head::Bin(be(b) as u32)),
        0xc7 => (2, |b| Head::Ext(b[1] as i8, be(&b[..1]) as u32)),
        0xc8 => (3, |b| Head::Ext(b[2] as i8, be(&b[..2]) as u32)),
        0xc9 => (5, |b| Head::Ext(b[4] as i8, be(&b[..4]) as u32)),
        0xca => (4, |b| Head::Float(f64::from(f32::from_bits(be(b) as u32)))),
        0xcb => (8, |b| Head::Float(f64::from_bits(be(b)))),
        0xcc..=0xcf => {
            let n = 1usize << (first - 0xcc);
            return Ok(buf.get(1..1 + n).map(|b| (Head::UInt(be(b)), 1 + n)));
        }
        0xd0..=0xd3 => {
            let n = 1usize << (first - 0xd0);
            return Ok(buf.get(1..1 + n).map(|b| {
                // Sign-extend from the field's width.
                let shift = 64 - 8 * n as u32;
                (Head::Int(((be(b) << shift) as i64) >> shift), 1 + n)
            }));
        }
        0xd4..=0xd8 => {
            let len = 1u32 << (first - 0xd4);
            return Ok(buf.get(1).map(|&t| (Head::Ext(t as i8, len), 2)));
        }
        0xd9 => (1, |b| Head::Str(be(b) as u32)),
        0xda => (2, |b| Head::Str(be(b) as u32)),
        0xdb => (4, |b| Head::Str(be(b) as u32)),
        0xdc => (2, |b| Head::Array(be(b) as u32)),
        0xdd => (4, |b| Head::Array(be(b) as u32)),
        0xde => (2, |b| Head::Map(be(b) as u32)),
        0xdf => (4, |b| Head::Map(be(b) as u32)),
    };
    Ok(buf.get(1..1 + field).map(|b| (make(b), 1 + field)))
}

/// Finds where one MessagePack value ends, a few bytes at a time.
///
/// It keeps its place between calls, so a value arriving in many TCP reads is scanned once
/// in total, not once per read. Memory is one counter per open container, bounded by
/// [`Limits::max_depth`]; nothing is allocated by an announced length.
#[derive(Debug, Default, Clone)]
pub(crate) struct Scanner {
    /// Bytes of the value scanned so far (complete headers and payloads).
    pos: usize,
    /// Children still expected by each open array or map, outermost first.
    open: Vec<u64>,
}

impl Scanner {
    /// Continues over `buf`, which holds the value from its first byte (and maybe more after
    /// it). `Ok(Some(len))`: the value is `buf[..len]`, and the scanner is ready for the next.
    pub(crate) fn scan(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<usize>, FrameError> {
        loop {
            let (h, hlen) = match head(&buf[self.pos..]) {
                Ok(Some(h)) => h,
                Ok(None) => return Ok(None),
                Err(why) => return Err(FrameError::invalid(self.pos, why)),
            };
            let end = self.pos as u64 + hlen as u64 + h.payload();
            if end > limits.max_frame_bytes as u64 {
                return Err(FrameError::TooLarge {
                    limit: limits.max_frame_bytes,
                });
            }
            if end > buf.len() as u64 {
                // The header is parsed again next time: cheaper than storing it.
                return Ok(None);
            }
            self.pos = end as usize;
            let children = h.children();
            if children > 0 {
                if self.open.len() >= limits.max_depth {
                    return Err(FrameError::TooDeep {
                        limit: limits.max_depth,
                    });
                }
                self.open.push(children);
                continue;
            }
            // One value is complete; so is every container it completes.
            loop {
                match self.open.last_mut() {
                    None => {
                        let len = self.pos;
                        self.pos = 0;
                        return Ok(Some(len));
                    }
                    Some(left) => {
                        *left -= 1;
                        if *left > 0 {
                            break;
                        }
                        self.open.pop();
                    }
                }
            }
        }
    }
}

/// Length of the complete value at the start of `buf`; running out of bytes is an error.
pub(crate) fn value_len(buf: &[u8], limits: &Limits) -> Result<usize, FrameError> {
    Scanner::default()
        .scan(buf, limits)?
        .ok_or_else(|| FrameError::invalid(buf.len(), "the value is cut short"))
}

/// A cursor over bytes known to hold complete values.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where `buf` starts in the frame, for error offsets.
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            base: 0,
        }
    }

    pub(crate) fn at(buf: &'a [u8], base: usize) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub(crate) fn err(&self, why: impl Into<String>) -> FrameError {
        FrameError::invalid(self.offset(), why)
    }

    pub(crate) fn peek(&self) -> Result<Head, FrameError> {
        match head(&self.buf[self.pos..]) {
            Ok(Some((h, _))) => Ok(h),
            Ok(None) => Err(self.err("the value is cut short")),
            Err(why) => Err(self.err(why)),
        }
    }

    pub(crate) fn head(&mut self) -> Result<Head, FrameError> {
        match head(&self.buf[self.pos..]) {
            Ok(Some((h, len))) => {
                self.pos += len;
                Ok(h)
            }
            Ok(None) => Err(self.err("the value is cut short")),
            Err(why) => Err(self.err(why)),
        }
    }

    pub(crate) fn bytes(&mut self, n: u32) -> Result<&'a [u8], FrameError> {
        let end = self.pos.saturating_add(n as usize);
        let out = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| self.err("the value is cut short"))?;
        self.pos = end;
        Ok(out)
    }

    /// A `str` value as text.
    pub(crate) fn str(&mut self, what: &str) -> Result<&'a str, FrameError> {
        let at = self.offset();
        match self.head()? {
            Head::Str(n) => std::str::from_utf8(self.bytes(n)?)
                .map_err(|_| FrameError::invalid(at, format!("{what}: not UTF-8"))),
            other => Err(FrameError::invalid(
                at,
                format!("{what}: expected a str, found {}", other.describe()),
            )),
        }
    }

    /// A `str` or `bin` value as bytes (fields that peers spell either way).
    pub(crate) fn raw(&mut self, what: &str) -> Result<&'a [u8], FrameError> {
        let at = self.offset();
        match self.head()? {
            Head::Str(n) | Head::Bin(n) => self.bytes(n),
            other => Err(FrameError::invalid(
                at,
                format!("{what}: expected a str or bin, found {}", other.describe()),
            )),
        }
    }

    /// What is left of the bytes, taken whole.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// One whole value, whatever it is, as its encoded bytes.
    pub(crate) fn value(&mut self, limits: &Limits) -> Result<&'a [u8], FrameError> {
        let start = self.pos;
        let len = value_len(&self.buf[start..], limits).map_err(|e| e.shifted(self.offset()))?;
        self.pos += len;
        Ok(&self.buf[start..start + len])
    }
}

fn header(out: &mut Vec<u8>, fix: Option<u8>, markers: [u8; 3], n: usize) {
    match (fix, n) {
        (Some(fix), _) => out.push(fix),
        (None, 0..=0xff) if markers[0] != 0 => out.extend_from_slice(&[markers[0], n as u8]),
        (None, 0..=0xffff) => {
            out.push(markers[1]);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            out.push(markers[2]);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
}

// The small forms inline: a metric record writes some 10 headers per series.
#[inline]
pub(crate) fn write_array_len(out: &mut Vec<u8>, n: usize) {
    if n < 16 {
        out.push(0x90 | n as u8);
    } else {
        header(out, None, [0, 0xdc, 0xdd], n);
    }
}

pub(crate) fn write_map_len(out: &mut Vec<u8>, n: usize) {
    let fix = (n < 16).then_some(0x80 | n as u8);
    header(out, fix, [0, 0xde, 0xdf], n);
}

#[inline]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    write_str_bytes(out, s.as_bytes());
}

/// A `str` holding bytes as given (the handshake hashes exactly what is sent).
#[inline]
pub(crate) fn write_str_bytes(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() < 32 {
        out.push(0xa0 | s.len() as u8);
    } else {
        header(out, None, [0xd9, 0xda, 0xdb], s.len());
    }
    out.extend_from_slice(s);
}

pub(crate) fn write_bin(out: &mut Vec<u8>, b: &[u8]) {
    header(out, None, [0xc4, 0xc5, 0xc6], b.len());
    out.extend_from_slice(b);
}

pub(crate) fn write_bool(out: &mut Vec<u8>, b: bool) {
    out.push(if b { 0xc3 } else { 0xc2 });
}

#[inline]
pub(crate) fn write_uint(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        _ => {
            out.push(0xcf);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}
