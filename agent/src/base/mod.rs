//! The bottom layer of the agent: what any module may use and what imports nothing else of
//! this crate. Sinks, the history and the config stand on it instead of on the daemon, the
//! plugin host or the live system (ARCHITECTURE.md, "Layers").
//!
//! * [`clock`] — the time that decides budgets and schedules, injected so tests step it.

pub mod clock;
