//! Capture layout v1: one directory holding one snapshot of every source at the same
//! relative paths as on the live system, plus `zpulse-capture.toml`. A *series* is a
//! directory of captures, taken in name order.
//!
//! Beside the snapshot, a capture may hold the kernel events that arrived since the capture
//! before it (`zevents/`, [`write_zevents`]), so that a replay of a series hands the checks
//! the events between its samples exactly as the live agent would have.
//!
//! A capture is what a user attaches to a bug report and what every test reads: reading a
//! capture goes through exactly the same parsers as reading the live system.

mod manifest;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use manifest::{MANIFEST, Manifest};
pub use read::{Reader, load, load_zevents, series};
pub use write::{CaptureStats, capture_into, refuse_existing, write_zevents};

/// Where a capture keeps the kernel events that arrived since the capture before it.
pub const ZEVENTS_DIR: &str = "zevents";

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum CaptureError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    Manifest {
        path: PathBuf,
        message: String,
    },
    EmptySeries {
        path: PathBuf,
    },
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            CaptureError::Manifest { path, message } => {
                write!(f, "{}: {message}", path.display())
            }
            CaptureError::EmptySeries { path } => write!(
                f,
                "{}: no capture found (expected a directory holding {MANIFEST}, or \
                 subdirectories that do; make one with `zpulse capture DIR`)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for CaptureError {}
