//! Loading captures and series.

use super::{CaptureError, MANIFEST, Manifest};
use crate::sources::{self, System};
use std::path::{Path, PathBuf};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::HostIdentity;

/// The snapshot a capture holds, read through the same parsers as the live system.
pub fn load(dir: &Path) -> Result<Snapshot, CaptureError> {
    Ok(Reader::open(dir)?.load())
}

/// A capture opened once and read as often as wanted, the way the live agent reads its
/// system: one [`System`] for every snapshot, so what a live reader keeps across snapshots
/// (the disks' sysfs facts) is kept here too. The benchmark measures a live interval so.
pub struct Reader {
    system: System,
    manifest: Manifest,
}

impl Reader {
    pub fn open(dir: &Path) -> Result<Reader, CaptureError> {
        let manifest = Manifest::read(dir)?;
        Ok(Reader {
            system: System::capture(dir, manifest.os),
            manifest,
        })
    }

    /// The capture's snapshot, stamped with its capture time.
    pub fn load(&self) -> Snapshot {
        let m = &self.manifest;
        let identity = HostIdentity {
            hostname: m.hostname.clone(),
            os: m.os,
            kernel: m.kernel.clone(),
            zfs_version: m.zfs_version.clone(),
        };
        let mut snap = sources::snapshot(&self.system, identity);
        snap.taken_at = m.captured_at;
        snap.monotonic = None;
        snap
    }
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

/// The kernel events a capture holds ([`super::write_zevents`]), in the kernel's order, with
/// what its reader missed. A capture without events (one made before they were recorded,
/// or of a host without them) holds none; a file that does not decode is counted in
/// `undecodable`, with its name.
pub fn load_zevents(dir: &Path) -> crate::sources::zevent::Batch {
    use crate::sources::zevent::{Batch, decode};
    let mut batch = Batch::default();
    let events_dir = dir.join(super::ZEVENTS_DIR);
    let Ok(entries) = std::fs::read_dir(&events_dir) else {
        return batch;
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let path = events_dir.join(&name);
        if name == "counts" {
            let text = sources::root::read_regular(&path, 4096).unwrap_or_default();
            for line in String::from_utf8_lossy(&text).lines() {
                let mut words = line.split_whitespace();
                let (Some(key), Some(n)) = (words.next(), words.next()) else {
                    continue;
                };
                let n = n.parse::<u64>().unwrap_or(0);
                match key {
                    "dropped" => batch.dropped = n,
                    "missing" => batch.missing = n,
                    _ => {}
                }
            }
            continue;
        }
        if !name.ends_with(".nvlist") {
            continue;
        }
        let read = sources::root::read_regular(&path, zpulse_proto::abi::ZEVENT_MAX_BYTES as u64)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                decode::decode(&bytes)
                    .map(|event| (event, bytes))
                    .map_err(|e| e.to_string())
            });
        match read {
            Ok((mut event, bytes)) => {
                let named = events_dir.join(name.replace(".nvlist", ".file"));
                if let (Some(zio), Ok(file)) = (
                    event.zio.as_mut(),
                    sources::root::read_regular(&named, FILE_NAME_MAX),
                ) {
                    zio.file = Some(String::from_utf8_lossy(&file).into_owned());
                }
                batch.events.push(event);
                batch.packed.push(bytes);
            }
            Err(why) => batch.undecodable.push(format!("{}: {why}", path.display())),
        }
    }
    batch
}

/// The longest file name an event's `.file` holds: `zc_value`, 2 × MAXPATHLEN.
const FILE_NAME_MAX: u64 = 8192;
