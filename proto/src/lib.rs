//! The contracts of zpulse: what the agent measures and what plugins receive.
//!
//! Data flows one way: **sources → [`Snapshot`] → [`Sample`] → plugins → events → sinks**.
//!
//! * A [`Snapshot`] holds the absolute values of every source at one moment, exactly as the
//!   kernel reported them (counters are not interpreted here). Anything a kernel does not
//!   provide is `None` or absent, never 0.
//! * A [`Sample`] is two snapshots turned into deltas and per-second rates over the interval
//!   between them ([`Sample::between`]). Counter wraps and resets never produce negative or
//!   absurd rates: a reset counter yields no rate for that interval (see [`counter`]).
//!
//! This crate does no I/O. It is what plugin authors depend on, so it stays small and stable.

pub mod counter;
pub mod sample;
pub mod snapshot;

pub use sample::Sample;
pub use snapshot::Snapshot;
