//! `/proc/diskstats` parser and the disk reader.

use crate::sources::Root;
use zpulse_proto::Snapshot;

/// Fills `disks`.
pub fn read(_root: &Root, _snap: &mut Snapshot) {}
