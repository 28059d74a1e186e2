//! Encoding Forward messages: what the agent sends, and the acks a collector answers with.
//!
//! zpulse sends PackedForward: the entries are encoded once, concatenated into one `bin`, and
//! the receiver decodes them without re-parsing a nested array. Each entry is
//! `[EventTime, record]` with the time as a fixext8 (`D7 00`, seconds and nanoseconds
//! big-endian), the form every current receiver accepts.

use super::msgpack::{write_array_len, write_bin, write_map_len, write_str, write_uint};
use std::io::Write;
use zpulse_proto::event::{Event, EventTime};

/// The ext type of EventTime.
pub const EVENT_TIME_EXT: i8 = 0;

/// How a packed blob travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// PackedForward.
    #[default]
    None,
    /// CompressedPackedForward: the blob gzipped, with `compressed: "gzip"`.
    Gzip,
}

/// Writes an EventTime as fixext8, ext type 0.
pub fn event_time(out: &mut Vec<u8>, time: EventTime) {
    out.extend_from_slice(&[0xd7, EVENT_TIME_EXT as u8]);
    out.extend_from_slice(&time.to_be_bytes());
}

/// Writes one entry `[time, record]`; `record` is an encoded MessagePack map, copied as is.
pub fn entry(out: &mut Vec<u8>, time: EventTime, record: &[u8]) {
    write_array_len(out, 2);
    event_time(out, time);
    out.extend_from_slice(record);
}

/// Entries of one batch, encoded back to back: the body of a PackedForward message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entries {
    bytes: Vec<u8>,
    count: usize,
}

impl Entries {
    pub fn new() -> Entries {
        Entries::default()
    }

    /// Appends an entry whose record is already encoded (a MessagePack map).
    pub fn push(&mut self, time: EventTime, record: &[u8]) {
        entry(&mut self.bytes, time, record);
        self.count += 1;
    }

    /// Appends an event.
    pub fn push_event(&mut self, time: EventTime, event: &Event) {
        self.push(time, &event.to_msgpack());
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The concatenated entries.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The PackedForward (or CompressedPackedForward) message carrying these entries.
    pub fn packed_forward(
        &self,
        tag: &str,
        chunk: Option<&str>,
        compression: Compression,
    ) -> Vec<u8> {
        packed_forward(tag, &self.bytes, self.count, chunk, compression)
    }
}

/// `[tag, bin(entries), {size, chunk?, compressed?}]`.
///
/// `size` is the number of entries in `entries`; `chunk` asks the server for an ack. With
/// [`Compression::Gzip`] the blob is one gzip member.
pub fn packed_forward(
    tag: &str,
    entries: &[u8],
    size: usize,
    chunk: Option<&str>,
    compression: Compression,
) -> Vec<u8> {
    let gzipped = match compression {
        Compression::Gzip => gzip(entries),
        Compression::None => None,
    };
    let blob = gzipped.as_deref().unwrap_or(entries);
    let mut out = Vec::with_capacity(blob.len() + tag.len() + 64);
    write_array_len(&mut out, 3);
    write_str(&mut out, tag);
    write_bin(&mut out, blob);
    options(&mut out, size, chunk, gzipped.is_some());
    out
}

/// Message mode, `[tag, time, record, {chunk}?]`: one event. Not what zpulse sends; here for
/// tests and for clients of the collector.
pub fn message(tag: &str, time: EventTime, record: &[u8], chunk: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(record.len() + tag.len() + 48);
    write_array_len(&mut out, if chunk.is_some() { 4 } else { 3 });
    write_str(&mut out, tag);
    event_time(&mut out, time);
    out.extend_from_slice(record);
    if let Some(chunk) = chunk {
        write_map_len(&mut out, 1);
        write_str(&mut out, "chunk");
        write_str(&mut out, chunk);
    }
    out
}

/// Forward mode, `[tag, [[time, record], …], {size, chunk?}]`. For tests and other clients.
pub fn forward(tag: &str, entries: &[(EventTime, &[u8])], chunk: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    write_array_len(&mut out, 3);
    write_str(&mut out, tag);
    write_array_len(&mut out, entries.len());
    for (time, record) in entries {
        entry(&mut out, *time, record);
    }
    options(&mut out, entries.len(), chunk, false);
    out
}

fn options(out: &mut Vec<u8>, size: usize, chunk: Option<&str>, gzip: bool) {
    write_map_len(out, 1 + usize::from(chunk.is_some()) + usize::from(gzip));
    write_str(out, "size");
    write_uint(out, size as u64);
    if let Some(chunk) = chunk {
        write_str(out, "chunk");
        write_str(out, chunk);
    }
    // Only when compressed: Fluent Bit 1.5 choked on other values of this key.
    if gzip {
        write_str(out, "compressed");
        write_str(out, "gzip");
    }
}

/// The server's answer to a batch carrying `chunk`: `{"ack": chunk}`.
pub fn ack(chunk: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunk.len() + 8);
    write_map_len(&mut out, 1);
    write_str(&mut out, "ack");
    write_str(&mut out, chunk);
    out
}

/// One gzip member. `None` only if the encoder fails, which writing to memory does not; the
/// caller then sends the blob uncompressed, which is just as valid.
pub fn gzip(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4 + 64),
        flate2::Compression::default(),
    );
    enc.write_all(bytes).ok()?;
    enc.finish().ok()
}
