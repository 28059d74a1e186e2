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
//! * An [`Event`] is what checks find and what the agent says about itself ([`event`]).
//! * A [`zevent::ZEvent`] is one kernel event (`zpool events -v`), typed.
//! * [`report`] is what checks conclude over a whole window for `zpulse report`.
//! * [`abi`] is the C ABI between the agent and plugin shared objects; [`sdk`] is its safe
//!   side for plugin authors (a `Plugin` trait, an export macro, stateful findings).
//!
//! This crate does no I/O. It is what plugin authors depend on, so it stays small and stable.

// `settings!` names this crate `zpulse_proto` (serde's `crate` attribute takes a path as
// text, so `$crate` cannot be used there); the alias lets the SDK's own tests use it too.
extern crate self as zpulse_proto;

pub mod abi;
pub mod counter;
pub mod event;
pub mod report;
pub mod sample;
pub mod sdk;
pub mod snapshot;
mod sorted_map;
pub mod zevent;

pub use event::{Entry, Event, EventTime};
pub use sample::{Sample, SampleStream};
/// serde, for plugin configs: `#[derive(zpulse_proto::serde::Deserialize)]` with
/// `#[serde(crate = "zpulse_proto::serde")]`, so that plugins depend on this crate only.
pub use serde;
pub use snapshot::Snapshot;
pub use zevent::ZEvent;
