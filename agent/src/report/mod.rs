//! Rendering snapshots and samples for people (text) and programs (JSON).
//!
//! Text is what a ZFS administrator wants at a glance; JSON is the whole model, with the
//! stable names of `zpulse_proto` (a disk's object has `name`, a pool's has `name`).

mod pool;
mod text;
pub mod units;
mod zevents;

pub use text::{sample_text, snapshot_text};
pub use units::utc;
pub use zevents::zevent_text;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// One JSON document on one line (JSON lines for series), or pretty for a single document.
pub fn json<T: Serialize>(value: &T, pretty: bool) -> String {
    let rendered = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    // The model holds only strings, numbers, maps and lists; non-finite floats become null.
    rendered.unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
