//! Sinks: where events leave the agent. Each sink runs on its own thread, fed by a bounded
//! channel (the daemon wires that); this module defines what every sink offers.
//!
//! * [`stdout`] — JSON lines, the default.
//! * [`forward`] — Fluent Forward (MessagePack) to a collector, with acks and a disk spool.
//! * [`syslog`] — local socket (RFC 3164 dialect; RFC 5424 on FreeBSD) or remote UDP/TCP/TLS
//!   (RFC 5424).
//! * [`prometheus`] — every reading as Prometheus metrics at `GET /metrics` and/or a textfile.
//!
//! Shared by the sinks: [`backoff`] (when to reconnect), [`tls_client`] (TLS and client
//! certificates), [`ca_bundle`] (the system's CAs).
//!
//! A sink never panics on what it is given and never blocks the sampler: `deliver` may take
//! its time (the sink's own thread waits), and `stats` tells the heartbeat how it is doing.

pub mod backoff;
pub mod build;
pub mod ca_bundle;
pub mod forward;
pub mod prometheus;
pub mod spec;
pub mod stdout;
pub mod syslog;
pub mod tls_client;

use std::fmt;
use std::sync::Arc;
use std::time::Instant;
use zpulse_proto::{Sample, Snapshot};

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

/// A reading handed to the sinks that export figures rather than events
/// ([`Sink::wants_readings`]): the first snapshot, then every sample.
#[derive(Debug, Clone)]
pub enum Reading {
    First(Arc<Snapshot>),
    Sample(Arc<Sample>),
}

impl Reading {
    /// The absolute values of this reading.
    pub fn snapshot(&self) -> &Snapshot {
        match self {
            Reading::First(s) => s,
            Reading::Sample(s) => &s.snapshot,
        }
    }
}

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
    /// Whether the sink is given readings ([`Sink::observe`]) as well as events.
    fn wants_readings(&self) -> bool {
        false
    }
    /// Takes a reading, on the sink's own thread. Only called when `wants_readings`.
    fn observe(&mut self, _reading: &Reading) -> Result<(), SinkError> {
        Ok(())
    }
}
