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
//!
//! # Depending on it, and what stays compatible
//!
//! A plugin depends on this crate alone (`zpulse-proto = "0.1"`); it needs nothing from
//! the zpulse workspace. Two promises, kept apart:
//!
//! * **The ABI** ([`abi`], `include/zpulse_plugin.h`) is what a built plugin and a running
//!   agent share. Within one ABI major version, an agent loads every plugin built for an
//!   earlier or equal minor version: a minor version only appends fields to the descriptor
//!   and the host API (each side reads the other's `struct_size` and takes an absent field's
//!   older meaning) and adds flags. A plugin built for a newer minor than the agent's is
//!   loaded as far as the agent understands it. A new major is refused at load, naming both
//!   versions. The history of every minor version is in [`abi::ABI_MINOR`].
//! * **The Rust API** (the SDK, the sample model, the event record) follows semver as Cargo
//!   reads it for a 0.x crate: a release that can break code that compiles against the one
//!   before bumps the minor (0.1 → 0.2); one that only adds bumps the patch (0.1.0 → 0.1.1).
//!   The model grows with every kernel figure zpulse learns to read, so a plugin should read
//!   the fields it needs and build the types it must with their constructors
//!   ([`sdk::Report::new`], [`sdk::testing`]), not with struct literals of every field.
//!   `CHANGELOG.md` beside this crate says what each release changed, and under which of the
//!   two promises.

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
