//! Sources: everything that reads the kernel, or a capture of it, into a [`Snapshot`].
//!
//! Each source is a pure parser (bytes in, typed value out, no I/O) plus a thin reader that
//! fetches the bytes through a [`Root`] (Linux files) or a [`freebsd::Sysctl`] (FreeBSD
//! sysctls). Both have a live and a capture implementation, so every platform's parsing is
//! tested on Linux against real captures.
//!
//! A source that fails adds a [`zpulse_proto::snapshot::SourceIssue`] to the snapshot and
//! the others go on: one unreadable file never costs the whole sample.

pub mod error;
pub mod freebsd;
pub mod nvlist;
pub mod linux;
pub mod root;

pub use error::ParseError;
pub use root::Root;

use zpulse_proto::Snapshot;
