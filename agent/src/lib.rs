//! The zpulse agent as a library: everything the `zpulse` binary does, testable in-process.
//!
//! The folders follow the data: [`sources`] read the kernel (or a capture) into a
//! [`zpulse_proto::Snapshot`]; `zpulse_proto::Sample` turns two snapshots into rates;
//! [`capture`] writes and reads the capture layout; [`report`] renders snapshots and samples
//! for people; [`cli`] wires it to the command line.
//!
//! Invariant: nothing in this crate starts a process. Parsers are pure functions of bytes;
//! only the thin readers in [`sources`] touch the file system or the kernel.

pub mod base;
pub mod baseline;
pub mod capture;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod history;
pub mod plugins;
pub mod report;
pub mod sinks;
pub mod sources;
