//! Writing a capture: one snapshot is taken through a recorder
//! ([`sources::recorded_snapshot`]) and the capture holds exactly what it read, the bytes
//! unchanged, at the paths a replay reads them from: files as read, directories as listed
//! or probed (even empty), paths only probed for existence as empty files, and sysctls as
//! `sysctl/<name>`. A replay of the capture therefore reads what the live snapshot read, and
//! a new source is captured as soon as a reader reads it.

use super::{CaptureError, MANIFEST, Manifest};
use crate::sources::freebsd::CaptureSysctl;
use crate::sources::record::Recording;
use crate::sources::{self, System};
use std::path::Path;
use zpulse_proto::snapshot::HostIdentity;

/// What a capture run copied.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CaptureStats {
    pub files: usize,
    pub bytes: u64,
    /// Sources that exist but could not be read (e.g. the 0600 `reads` kstat as a user).
    pub unreadable: Vec<String>,
}

/// Writes one capture of `system` into `dest`, which must not exist or be an empty
/// directory: a capture never overwrites or mixes with another, and never writes through a
/// symbolic link (see [`refuse_existing`] and `write`).
pub fn capture_into(
    system: &System,
    identity: &HostIdentity,
    dest: &Path,
) -> Result<CaptureStats, CaptureError> {
    refuse_existing(dest)?;
    // The path the user gave (its ancestors may be links they chose); below it, none.
    std::fs::create_dir_all(dest).map_err(|error| CaptureError::Io {
        path: dest.to_path_buf(),
        error,
    })?;
    let (snap, recording) = sources::recorded_snapshot(system, identity.clone());
    let mut stats = CaptureStats::default();
    write_recording(dest, &recording, &mut stats)?;
    let manifest = Manifest {
        format: super::manifest::FORMAT,
        os: system.os(),
        captured_at: snap.taken_at,
        hostname: identity.hostname.clone(),
        kernel: identity.kernel.clone(),
        zfs_version: snap.host.zfs_version,
    };
    write(dest, MANIFEST, manifest.to_toml().as_bytes(), &mut stats)?;
    Ok(stats)
}

/// The kernel events of `batch` into the capture `dest` (written by [`capture_into`]): each
/// as the kernel packed it, `zevents/<eid>.nvlist` (the id 20 digits wide, so the names sort
/// in the kernel's order), and `zevents/counts`, what the reader was told it missed. A
/// replay reads them back through the same decoder ([`super::load_zevents`]).
pub fn write_zevents(
    dest: &Path,
    batch: &crate::sources::zevent::Batch,
    stats: &mut CaptureStats,
) -> Result<(), CaptureError> {
    make_dirs(dest, [super::ZEVENTS_DIR])?;
    for (event, packed) in batch.events.iter().zip(&batch.packed) {
        let rel = format!("{}/{:020}.nvlist", super::ZEVENTS_DIR, event.eid);
        write(dest, &rel, packed, stats)?;
        // The file the agent named for it: not in the kernel's bytes, asked of /dev/zfs.
        if let Some(file) = event.zio.as_ref().and_then(|z| z.file.as_deref()) {
            let rel = format!("{}/{:020}.file", super::ZEVENTS_DIR, event.eid);
            write(dest, &rel, file.as_bytes(), stats)?;
        }
    }
    let counts = format!(
        "dropped {}\nmissing {}\nundecodable {}\n",
        batch.dropped,
        batch.missing,
        batch.undecodable.len()
    );
    write(
        dest,
        &format!("{}/counts", super::ZEVENTS_DIR),
        counts.as_bytes(),
        stats,
    )
}

/// Everything `recording` holds, below `dest`. A path that would not stay below `dest`
/// (a name made up by a capture being re-captured, like a pool called `../../x`) is not
/// written, and said so.
pub(super) fn write_recording(
    dest: &Path,
    recording: &Recording,
    stats: &mut CaptureStats,
) -> Result<(), CaptureError> {
    let sysctls: Vec<(String, Vec<u8>)> = recording
        .sysctls
        .iter()
        .map(|(name, value)| (CaptureSysctl::file_of(name), CaptureSysctl::bytes_of(value)))
        .collect();
    // A path probed and then read (or listed) is written as what it was read as.
    let probed_only = (recording.present.iter())
        .filter(|rel| !recording.files.contains_key(*rel) && !recording.dirs.contains(*rel));
    let files = (probed_only.map(|rel| (rel, &[][..])))
        .chain(recording.files.iter().map(|(rel, b)| (rel, b.as_slice())))
        .chain(sysctls.iter().map(|(rel, b)| (rel, b.as_slice())));
    stats
        .unreadable
        .extend((recording.failed.iter()).map(|(what, why)| format!("{what}: {why}")));
    for rel in &recording.dirs {
        if !refused(rel, stats) {
            make_dirs(dest, rel.split('/'))?;
        }
    }
    for (rel, bytes) in files {
        if !refused(rel, stats) {
            write(dest, rel, bytes, stats)?;
        }
    }
    Ok(())
}

/// Whether `rel` is refused for not naming a path below the capture, noted in `stats`.
fn refused(rel: &str, stats: &mut CaptureStats) -> bool {
    if is_plain(rel) {
        return false;
    }
    stats.unreadable.push(format!(
        "{rel}: not a plain relative path, so not written into the capture"
    ));
    true
}

/// `rel` names a path below the directory it is joined to: plain names only, no empty,
/// `.` or `..` part (so no leading `/` either).
fn is_plain(rel: &str) -> bool {
    rel.split('/')
        .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\0'))
}

/// `dest` must be new or an empty directory (not a link to one): capturing into an earlier
/// capture or series would overwrite it, or hide it among new files.
pub fn refuse_existing(dest: &Path) -> Result<(), CaptureError> {
    let io = |error| CaptureError::Io {
        path: dest.to_path_buf(),
        error,
    };
    match std::fs::symlink_metadata(dest) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(e)),
        Ok(meta) if !meta.is_dir() => Err(io(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "is a {}, not a new or empty directory",
                crate::sources::root::file_kind(meta.file_type())
            ),
        ))),
        Ok(_) => match std::fs::read_dir(dest).map_err(io)?.next() {
            None => Ok(()),
            Some(_) => Err(io(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "is not empty: a capture goes into a new or empty directory, so that it \
                 never overwrites or mixes with another (choose a new one)",
            ))),
        },
    }
}

/// Writes `rel` below `dest` without following any symbolic link: each directory on the way
/// is made here or must be a real directory, and the file is created new (`O_EXCL`,
/// `O_NOFOLLOW`), so a link planted in `dest` cannot redirect the write elsewhere.
fn write(
    dest: &Path,
    rel: &str,
    bytes: &[u8],
    stats: &mut CaptureStats,
) -> Result<(), CaptureError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dest.join(rel);
    let io = |error| CaptureError::Io {
        path: path.clone(),
        error,
    };
    if !is_plain(rel) {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a plain relative path: a capture writes only below its directory",
        )));
    }
    let parts: Vec<&str> = rel.split('/').collect();
    if let Some((_, dirs)) = parts.split_last() {
        make_dirs(dest, dirs.iter().copied())?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(&path)
        .map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    stats.files += 1;
    stats.bytes += bytes.len() as u64;
    Ok(())
}

/// Makes each of `parts` below `dest` in turn, as real directories (see [`make_real_dir`]).
fn make_dirs<'a>(
    dest: &Path,
    parts: impl IntoIterator<Item = &'a str>,
) -> Result<(), CaptureError> {
    let mut dir = dest.to_path_buf();
    for part in parts {
        dir.push(part);
        make_real_dir(&dir).map_err(|error| CaptureError::Io {
            path: dir.clone(),
            error,
        })?;
    }
    Ok(())
}

/// Makes the directory `dir` (its parent exists), or accepts it when it is one already: a
/// symbolic link in its place, even to a directory, is an error.
fn make_real_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new().create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.is_dir() {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} is a {}, not a directory: a capture never writes through links",
                dir.display(),
                crate::sources::root::file_kind(meta.file_type())
            ),
        ))
    }
}
