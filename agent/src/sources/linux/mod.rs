//! Linux: `/proc/spl/kstat/zfs`, `/sys/module/zfs`, `/proc/diskstats`, `/sys/block`, and the
//! host files in `/proc`, all read relative to a [`Root`]; `read_parsed` is how each reader
//! turns a file into a value or an issue.

pub mod diskstats;
pub mod host;
pub mod kstat;
pub mod sysblock;
pub mod tunables;
pub mod zfs;

use super::{ParseError, Root};
use std::io;
use zpulse_proto::Snapshot;

/// Fills `snap` with everything a Linux root offers.
pub fn collect(root: &Root, snap: &mut Snapshot) {
    zfs::read(root, snap);
    snap.tunables = tunables::read(root, snap);
    diskstats::read(root, snap);
    host::read(root, snap);
}

/// Whether a missing file is news. The host's `/proc` files are on every Linux, so one that is
/// missing is an issue; a kstat that this OpenZFS version lacks, or that of a pool just
/// exported, is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    Issue,
    Expected,
}

/// Reads and parses `rel`: the one rule for a file a Linux reader cannot use. A file that
/// cannot be read (a missing one only as `missing` says), is empty or does not parse is noted
/// against `rel`, and gives `None`.
fn read_parsed<T>(
    root: &Root,
    rel: &str,
    snap: &mut Snapshot,
    missing: Missing,
    parse: fn(&[u8]) -> Result<T, ParseError>,
) -> Option<T> {
    let bytes = match root.read(rel) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound && missing == Missing::Expected => {
            return None;
        }
        Err(e) => {
            snap.note(rel, format!("cannot read: {e}"));
            return None;
        }
    };
    if bytes.is_empty() {
        snap.note(rel, super::root::EMPTY);
        return None;
    }
    match parse(&bytes) {
        Ok(value) => Some(value),
        Err(e) => {
            snap.note(rel, e.to_string());
            None
        }
    }
}
