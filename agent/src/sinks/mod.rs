//! Sinks: where events leave the agent. Each sink runs on its own thread, fed by a bounded
//! channel (the daemon wires that); this module defines what every sink offers.
//!
//! * [`stdout`] — JSON lines, the default.
//! * [`forward`] — Fluent Forward (MessagePack) to a collector, with acks and a disk spool.
//! * [`syslog`] — local socket (RFC 3164 dialect; RFC 5424 on FreeBSD) or remote UDP/TCP/TLS
//!   (RFC 5424).
//!
//! A sink never panics on what it is given and never blocks the sampler: `deliver` may take
//! its time (the sink's own thread waits), and `stats` tells the heartbeat how it is doing.

pub mod build;
pub mod ca_bundle;
pub mod forward;
pub mod stdout;
pub mod syslog;

use std::fmt;
use std::time::Instant;

/// An event with the time it happened: the Forward entry of proto, under the name the sinks
/// have always used.
pub use zpulse_proto::event::Entry as Stamped;

/// Counters every sink keeps, for the agent heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Events handed to the transport and confirmed as far as it can confirm (acked for
    /// Forward, written for syslog and stdout).
    pub delivered: u64,
    /// Events lost: spool full, message refused, socket gone. Never silent: the heartbeat
    /// reports this.
    pub dropped: u64,
    /// Events waiting in the sink (memory and spool).
    pub pending: u64,
    /// Bytes in the on-disk spool.
    pub spool_bytes: u64,
}

#[derive(Debug)]
pub struct SinkError {
    pub sink: String,
    pub message: String,
}

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sink {}: {}", self.sink, self.message)
    }
}

impl std::error::Error for SinkError {}

pub trait Sink: Send {
    /// `stdout`, `forward collector.example.net:24224`, `syslog unix:///dev/log`.
    fn name(&self) -> String;
    /// Takes a batch in order. `Ok` means the sink has taken responsibility for every event
    /// (delivered, or safely queued/spooled); `Err` means some were dropped, which the sink
    /// has counted in [`SinkStats::dropped`].
    fn deliver(&mut self, batch: &[Stamped]) -> Result<(), SinkError>;
    /// Tries to get everything pending out before `deadline` (shutdown, reload).
    fn flush(&mut self, deadline: Instant) -> Result<(), SinkError>;
    fn stats(&self) -> SinkStats;
}
