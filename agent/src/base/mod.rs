//! The bottom layer of the agent: what any module may use and what imports nothing else of
//! this crate. Sinks, the history and the config stand on it instead of on the daemon, the
//! plugin host or the live system (ARCHITECTURE.md, "Layers point one way"; `tests/layers.rs` checks it).
//!
//! * [`log`] — the agent's log lines ([`log::Level`], [`log::LogLine`]) and the one writer of
//!   them, which leaves out repeats.
//! * [`clock`] — the time that decides budgets and schedules, injected so tests step it.
//! * [`host`] — the host's name and the user the agent runs as.
//! * [`selfstat`] — the agent's own CPU time and memory.
//! * [`keys`] — where each key of a config file was written, for errors at the key's line.
//! * [`files`] — reading a file by name without blocking on a FIFO or a device in its place.
//! * [`deflate`] — raw deflate by one kept compressor (the history's records, gzip responses).

pub mod clock;
pub mod deflate;
pub mod files;
pub mod host;
pub mod keys;
pub mod log;
pub mod selfstat;
