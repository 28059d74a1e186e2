//! Loading captures and series.

use super::{CaptureError, MANIFEST, Manifest};
use crate::sources::{self, System};
use std::path::{Path, PathBuf};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::HostIdentity;

/// The snapshot a capture holds, read through the same parsers as the live system.
pub fn load(dir: &Path) -> Result<Snapshot, CaptureError> {
    let manifest = Manifest::read(dir)?;
    let system = System::capture(dir, manifest.os);
    let identity = HostIdentity {
        hostname: manifest.hostname.clone(),
        os: manifest.os,
        kernel: manifest.kernel.clone(),
        zfs_version: manifest.zfs_version.clone(),
    };
    let mut snap = sources::snapshot(&system, identity);
    snap.taken_at = manifest.captured_at;
    snap.monotonic = None;
    Ok(snap)
}

/// The captures of a series, in name order. A single capture is a series of one.
pub fn series(dir: &Path) -> Result<Vec<PathBuf>, CaptureError> {
    // Whatever stands at the manifest's name makes a capture, so that a manifest which is
    // not a regular file is refused by name (`Manifest::read`) rather than overlooked.
    let has_manifest = |d: &Path| std::fs::symlink_metadata(d.join(MANIFEST)).is_ok();
    if has_manifest(dir) {
        return Ok(vec![dir.to_path_buf()]);
    }
    let entries = std::fs::read_dir(dir).map_err(|error| CaptureError::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| has_manifest(p))
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(CaptureError::EmptySeries {
            path: dir.to_path_buf(),
        });
    }
    Ok(found)
}
