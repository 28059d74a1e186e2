//! One history record: a snapshot as bytes, framed so that a reader can tell a whole record
//! from a torn or damaged one and find the next whole one. Pure: bytes in, types out.
//!
//! ```text
//!  0  "ZPH1"                magic
//!  4  body length           u32, big-endian, at most MAX_BODY
//!  8  taken_at              f64 bits, big-endian: the snapshot's Unix seconds
//! 16  CRC-32 of bytes 0..16 the header's own check: a length can be trusted before the body
//!                           is read, so a damaged length never makes a reader allocate
//! 20  body                  raw deflate of the snapshot as named MessagePack
//!  …  CRC-32 of the body    u32, big-endian
//! ```
//!
//! Named MessagePack (field names kept, as samples cross the plugin ABI) so that a later
//! agent with more fields still reads older history: absent fields take their defaults.
//!
//! A batch of kernel events is a record of the same frame with the magic `ZPE1`, its time
//! the last event's and its body the events (`zpulse_proto::ZEvent`, named MessagePack). An
//! older reader knows neither magic's meaning but its own: it passes a `ZPE1` record by as
//! damage and reads on at the next `ZPH1`.

use crate::base::deflate::Deflater;
use flate2::Crc;
use std::io::Read;
use zpulse_proto::{Snapshot, ZEvent};

pub const MAGIC: &[u8; 4] = b"ZPH1";
/// The magic of a record of kernel events.
pub const ZEVENTS_MAGIC: &[u8; 4] = b"ZPE1";
/// Bytes before the body.
pub const HEADER: usize = 20;
/// Bytes after the body.
pub const TRAILER: usize = 4;
/// Largest body accepted, compressed: a snapshot of thousands of disks and vdevs is a few
/// MiB; a length above this is damage, not a record.
pub const MAX_BODY: u32 = 16 << 20;
/// Largest snapshot accepted once inflated, so that a small hostile body cannot inflate into
/// gigabytes.
pub const MAX_INFLATED: u64 = 256 << 20;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    Snapshot,
    /// A batch of kernel events.
    Zevents,
}

/// A valid header: what the record holds, where it is in time, and how long its body is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Header {
    pub taken_at: f64,
    pub body_len: u32,
    pub holds: Holds,
}

impl Header {
    /// The whole record's length, header and trailer included.
    pub fn record_len(&self) -> u64 {
        (HEADER + TRAILER) as u64 + u64::from(self.body_len)
    }
}

fn crc(bytes: &[u8]) -> u32 {
    let mut c = Crc::new();
    c.update(bytes);
    c.sum()
}

/// Makes records, keeping from one to the next what making one needs: the MessagePack and
/// record buffers (sized by the largest record so far, so an append neither grows nor copies
/// them) and the compressor, whose state (its window and hash tables, a few hundred KB) a new
/// one allocates and clears each time. Its bytes are [`encode`]'s.
#[derive(Debug, Default)]
pub struct Encoder {
    msgpack: Vec<u8>,
    record: Vec<u8>,
    deflate: Deflater,
}

impl Encoder {
    /// The record of `snapshot`.
    pub fn snapshot(&mut self, snapshot: &Snapshot) -> Result<&[u8], String> {
        if !snapshot.taken_at.is_finite() {
            return Err(format!(
                "a snapshot taken at {} cannot be stored",
                snapshot.taken_at
            ));
        }
        // Encoded whole, then deflated in one call: MessagePack's many small writes straight
        // into the compressor cost several times the compression itself.
        self.msgpack.clear();
        rmp_serde::encode::write_named(&mut self.msgpack, snapshot)
            .map_err(|e| format!("cannot encode the snapshot: {e}"))?;
        self.frame(MAGIC, snapshot.taken_at, "snapshot")
    }

    /// The record of a batch of kernel events, at the time of its last one.
    pub fn zevents(&mut self, events: &[ZEvent]) -> Result<&[u8], String> {
        let Some(last) = events.last() else {
            return Err("no event to store".into());
        };
        self.msgpack.clear();
        rmp_serde::encode::write_named(&mut self.msgpack, events)
            .map_err(|e| format!("cannot encode the kernel events: {e}"))?;
        self.frame(ZEVENTS_MAGIC, last.time.as_f64(), "batch of kernel events")
    }

    /// The MessagePack deflated and framed under `magic` at time `t`.
    fn frame(&mut self, magic: &[u8; 4], t: f64, what: &str) -> Result<&[u8], String> {
        let out = &mut self.record;
        out.clear();
        out.extend_from_slice(&[0; HEADER]);
        // Raw deflate, no zlib header: the frame has its own length and CRC.
        self.deflate
            .stream([&self.msgpack[..]], out)
            .map_err(|e| format!("cannot compress the {what}: {e}"))?;
        let body_len = out.len() - HEADER;
        if body_len > MAX_BODY as usize {
            return Err(format!(
                "a {what} of {body_len} bytes compressed is over the record limit of {MAX_BODY}"
            ));
        }
        out[..4].copy_from_slice(magic);
        out[4..8].copy_from_slice(&(body_len as u32).to_be_bytes());
        out[8..16].copy_from_slice(&t.to_bits().to_be_bytes());
        let header_crc = crc(&out[..16]);
        out[16..20].copy_from_slice(&header_crc.to_be_bytes());
        let body_crc = crc(&out[HEADER..]);
        out.extend_from_slice(&body_crc.to_be_bytes());
        Ok(out)
    }
}

/// The record of `snapshot`, by an [`Encoder`] of its own.
#[cfg(test)]
pub fn encode(snapshot: &Snapshot) -> Result<Vec<u8>, String> {
    Encoder::default().snapshot(snapshot).map(<[u8]>::to_vec)
}

/// The record of a batch of kernel events, by an [`Encoder`] of its own.
#[cfg(test)]
pub fn encode_zevents(events: &[ZEvent]) -> Result<Vec<u8>, String> {
    Encoder::default().zevents(events).map(<[u8]>::to_vec)
}

/// The header at the start of `bytes`, if a valid one is there.
pub fn parse_header(bytes: &[u8]) -> Option<Header> {
    let h = bytes.get(..HEADER)?;
    let holds = match &h[..4] {
        m if m == MAGIC => Holds::Snapshot,
        m if m == ZEVENTS_MAGIC => Holds::Zevents,
        _ => return None,
    };
    let sum = u32::from_be_bytes(h[16..20].try_into().ok()?);
    if crc(&h[..16]) != sum {
        return None;
    }
    let body_len = u32::from_be_bytes(h[4..8].try_into().ok()?);
    let taken_at = f64::from_bits(u64::from_be_bytes(h[8..16].try_into().ok()?));
    (body_len <= MAX_BODY && taken_at.is_finite()).then_some(Header {
        taken_at,
        body_len,
        holds,
    })
}

/// The first offset in `bytes` where a valid header starts.
pub fn find_header(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(i) = bytes[at..]
        .windows(4)
        .position(|w| w == MAGIC || w == ZEVENTS_MAGIC)
    {
        if parse_header(&bytes[at + i..]).is_some() {
            return Some(at + i);
        }
        at += i + 1;
    }
    None
}

/// The snapshot of a record whose header is `header`, from the bytes after the header (body
/// and trailer).
pub fn decode_body(header: &Header, rest: &[u8]) -> Result<Snapshot, String> {
    if header.holds != Holds::Snapshot {
        return Err("it holds kernel events, not a snapshot".into());
    }
    let msgpack = inflate(header, rest)?;
    let mut snapshot: Snapshot =
        rmp_serde::from_slice(&msgpack).map_err(|e| format!("cannot decode it: {e}"))?;
    // `monotonic` counts from the agent's start: between two runs its difference means
    // nothing, so readers take intervals from wall-clock time alone. It is dropped here, not
    // before writing: that would copy the whole snapshot at every append.
    snapshot.monotonic = None;
    if snapshot.taken_at.to_bits() != header.taken_at.to_bits() {
        return Err("its time differs from its header's".into());
    }
    Ok(snapshot)
}

/// The kernel events of a `ZPE1` record.
pub fn decode_zevents(header: &Header, rest: &[u8]) -> Result<Vec<ZEvent>, String> {
    if header.holds != Holds::Zevents {
        return Err("it holds a snapshot, not kernel events".into());
    }
    let msgpack = inflate(header, rest)?;
    let events: Vec<ZEvent> =
        rmp_serde::from_slice(&msgpack).map_err(|e| format!("cannot decode it: {e}"))?;
    match events.last() {
        Some(last) if last.time.as_f64().to_bits() == header.taken_at.to_bits() => Ok(events),
        _ => Err("its time differs from its header's".into()),
    }
}

/// The body of a record, checked against its trailer and inflated within bounds.
fn inflate(header: &Header, rest: &[u8]) -> Result<Vec<u8>, String> {
    let n = header.body_len as usize;
    let (Some(body), Some(trailer)) = (rest.get(..n), rest.get(n..n + TRAILER)) else {
        return Err("the record is cut short".into());
    };
    if crc(body).to_be_bytes() != trailer {
        return Err("its checksum does not match (damaged)".into());
    }
    let mut msgpack = Vec::with_capacity(n * 4);
    flate2::read::DeflateDecoder::new(body)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut msgpack)
        .map_err(|e| format!("cannot inflate it: {e}"))?;
    if msgpack.len() as u64 > MAX_INFLATED {
        return Err(format!("it inflates past {MAX_INFLATED} bytes"));
    }
    Ok(msgpack)
}
