//! Two snapshots turned into deltas and per-second rates.

use crate::Snapshot;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub snapshot: Snapshot,
}
