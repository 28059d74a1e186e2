//! Fluent Forward protocol v1: the wire framing shared by the agent's Forward sink and the
//! collector. Pure functions of bytes; no sockets, no clock, no randomness (callers pass the
//! random bytes in, so every message here is reproducible in a test).
//!
//! The stream carries back-to-back MessagePack values with no length prefix (the Forward
//! Protocol Specification v1, `github.com/fluent/fluentd/wiki/Forward-Protocol-Specification-v1`):
//!
//! * client → server: an event batch in one of four modes ([`Mode`]), a `PING`, or a lone
//!   `nil` (keep-alive);
//! * server → client: `HELO`, `PONG`, or an ack map `{"ack": chunk}`.
//!
//! What zpulse sends ([`encode`]): PackedForward `[tag, bin(entries), {size, chunk}]`, each
//! entry `[EventTime, record]` with the time as ext type 0 in a fixext8, optionally gzipped
//! (CompressedPackedForward, option `compressed: "gzip"`). What it accepts ([`decode`]): all
//! four modes, integer or EventTime times (fixext8 or ext8), packed entries in `bin` or `str`,
//! gzip blobs of several members. [`FrameDecoder`] cuts the stream into values incrementally:
//! a partial value waits for more bytes; size, nesting and inflation are bounded by
//! [`Limits`]; malformed input is a [`FrameError`], never a panic. [`handshake`] builds and
//! checks `HELO`/`PING`/`PONG` for both sides. [`series`] is zpulse's metric record (one
//! reading's Prometheus series) carried in an entry like any record.

pub mod decode;
pub mod encode;
pub mod handshake;
mod msgpack;
pub mod series;

#[cfg(test)]
mod tests;

pub use decode::{
    ClientMessage, ClientMessageRef, Entry, EntryRef, EventBatch, EventBatchRef, FrameDecoder,
    Mode, Options, ServerMessage,
};
pub use encode::{Compression, Entries};
pub use handshake::{Helo, Ping, Pong};

use base64::Engine as _;
use std::fmt;

/// The default Forward port.
pub const DEFAULT_PORT: u16 = 24224;

/// Bounds on what a decoder accepts from its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest single MessagePack value (one request or reply), in bytes.
    pub max_frame_bytes: usize,
    /// Deepest nesting of arrays and maps. A Forward entry holding an event record sits at
    /// depth 3 to 4, its `data` at most 4 below that.
    pub max_depth: usize,
    /// Largest gzip blob after inflation (a few kilobytes can inflate to gigabytes).
    pub max_inflated_bytes: usize,
    /// Most entries in one event message. Each decoded entry costs far more memory than its
    /// 3 wire bytes (`[0, {}]`), so 32 MiB of inflated tiny entries would be ~11 million
    /// decoded ones: the entry count is bounded on its own.
    pub max_entries: usize,
}

impl Default for Limits {
    /// A collector's limits: generous for 1–4 MiB batches, small enough to refuse abuse.
    fn default() -> Limits {
        Limits {
            max_frame_bytes: 16 << 20,
            max_depth: 32,
            max_inflated_bytes: 64 << 20,
            max_entries: 100_000,
        }
    }
}

impl Limits {
    /// What a client expects from a server: handshake messages and acks, all small.
    pub fn for_replies() -> Limits {
        Limits {
            max_frame_bytes: 64 << 10,
            max_depth: 4,
            max_inflated_bytes: 0,
            max_entries: 0,
        }
    }
}

/// Why bytes are not a Forward message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A value (or an inflated blob) is larger than the limit.
    TooLarge { limit: usize },
    /// Arrays and maps are nested deeper than the limit.
    TooDeep { limit: usize },
    /// An event message holds more entries than the limit.
    TooManyEntries { limit: usize },
    /// Not MessagePack, or not a Forward message; `offset` is counted from the start of the
    /// value (for entries of a packed blob, from the start of the inflated blob).
    Invalid { offset: usize, why: String },
}

impl FrameError {
    pub(crate) fn invalid(offset: usize, why: impl Into<String>) -> FrameError {
        FrameError::Invalid {
            offset,
            why: why.into(),
        }
    }

    /// The same error, for a value that starts `by` bytes further.
    pub(crate) fn shifted(self, by: usize) -> FrameError {
        match self {
            FrameError::Invalid { offset, why } => FrameError::Invalid {
                offset: offset + by,
                why,
            },
            other => other,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge { limit } => {
                write!(f, "a Forward message is larger than the {limit}-byte limit")
            }
            FrameError::TooDeep { limit } => {
                write!(f, "a Forward message nests deeper than {limit} levels")
            }
            FrameError::TooManyEntries { limit } => {
                write!(f, "a Forward message holds more than {limit} entries")
            }
            FrameError::Invalid { offset, why } => write!(f, "at byte {offset}: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// The id of one batch: 16 random bytes, sent as the `chunk` option in strict base64 (24
/// characters, padded, no newline) and echoed by the server's ack.
///
/// A resent batch keeps its id, so a receiver can drop the second copy of a batch whose
/// ack was lost (at-least-once delivery).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkId(pub [u8; 16]);

impl ChunkId {
    pub fn to_base64(self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }

    /// Parses the strict form only: what [`ChunkId::to_base64`] writes.
    pub fn from_base64(text: &str) -> Option<ChunkId> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?;
        let id = ChunkId(bytes.try_into().ok()?);
        (id.to_base64() == text).then_some(id)
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_base64())
    }
}

impl fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChunkId({self})")
    }
}
