//! Segment files on disk: their names, opening them without following links, and scanning
//! their records' headers (the bodies are read only when wanted).
//!
//! A segment is `YYYYMMDDTHHMMSSZ.zph`, named after the UTC time of its first record (with
//! `-N` when that name is taken), holding records of one UTC hour at most. The directory is
//! the agent's own (0700, owned by its user, writable by nobody else); every file is created
//! 0600 with `O_EXCL` and opened with `O_NOFOLLOW | O_NONBLOCK`, then checked to be a regular
//! file, so neither a link nor a FIFO put in a segment's place redirects or blocks anything.

use super::record::{self, HEADER, Header};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub const SUFFIX: &str = ".zph";

/// Headers read per scan step after damage, looking for the next whole record.
const RESYNC_WINDOW: usize = 64 << 10;

/// A record found in a segment: its time and where it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Located {
    pub header: Header,
    pub offset: u64,
}

/// What scanning a segment found.
#[derive(Debug, Default)]
pub struct Scan {
    pub records: Vec<Located>,
    /// Damaged or torn stretches, in words (one per stretch).
    pub notes: Vec<String>,
}

/// The segment name for a first record taken at `taken_at` (`n` > 0: the n-th alternative).
pub fn name(taken_at: f64, n: u32) -> Result<String, String> {
    let t = jiff::Timestamp::from_second(taken_at.floor() as i64)
        .map_err(|e| format!("time {taken_at} has no calendar date: {e}"))?;
    let stem = t.strftime("%Y%m%dT%H%M%SZ").to_string();
    Ok(match n {
        0 => format!("{stem}{SUFFIX}"),
        n => format!("{stem}-{n}{SUFFIX}"),
    })
}

/// The segment files in `dir` (by name: whatever stands there, so that a link or FIFO in a
/// segment's place is seen and refused when opened, never silently overlooked).
pub fn list(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(SUFFIX) && !n.starts_with('.'))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Creates `dir` (0700, with its missing parents) when absent, and checks that it is a real
/// directory (not a link) owned by `euid` and writable by nobody else: whoever can write it
/// could put a link where the next segment goes.
pub fn ensure_dir(dir: &Path, euid: u32) -> Result<(), String> {
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                format!(
                    "{}: cannot create the history directory: {e}",
                    dir.display()
                )
            })?;
    }
    check_dir(dir, euid)
}

/// The checks of [`ensure_dir`] on a directory that may not exist yet (`run` creates it
/// then): what `check-config` says before `run` would refuse it.
pub fn check_dir(dir: &Path, euid: u32) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        // A state directory this user cannot enter yet (before the service first starts:
        // the unit's StateDirectory= makes it the agent's then): nothing to judge, as with a
        // missing one; `run` checks what it finds at start.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    if !meta.file_type().is_dir() {
        return Err(format!(
            "{}: the history directory is a {}, not a directory; refusing to write there",
            dir.display(),
            crate::base::files::file_kind(meta.file_type())
        ));
    }
    if meta.uid() != euid {
        return Err(format!(
            "{}: the history directory belongs to uid {}, not to the agent's uid {euid}; \
             refusing to write there",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{}: the history directory is writable by others (mode {:o}); refusing to write \
             there: chmod 700 it",
            dir.display(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Creates a new segment for appending: 0600, failing if anything (a link too) stands at
/// `path`.
pub fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Opens a segment for reading: no link followed, no FIFO waited on, a regular file only.
pub fn open_read(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(io::ErrorKind::InvalidInput, "a symbolic link; not followed")
            } else {
                e
            }
        })?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "not a regular file (a {})",
                crate::base::files::file_kind(kind)
            ),
        ));
    }
    Ok(file)
}

/// The headers of every whole record in `file` (of `len` bytes). Memory is bounded by the
/// record count (one small entry each), never by a length read from the file; damage is
/// skipped up to the next valid header and said once per stretch.
pub fn scan(file: &File, len: u64, name: &str) -> io::Result<Scan> {
    let mut out = Scan::default();
    let mut at = 0u64;
    let mut header = [0u8; HEADER];
    while at < len {
        let whole = len - at >= HEADER as u64
            && file.read_exact_at(&mut header, at).is_ok()
            && record::parse_header(&header).is_some();
        if whole {
            let h = record::parse_header(&header).expect("checked above");
            if at + h.record_len() > len {
                out.notes.push(format!(
                    "{name}: the record at byte {at} is cut short ({} of {} bytes: torn by a \
                     crash mid-write); skipped",
                    len - at,
                    h.record_len()
                ));
                break;
            }
            out.records.push(Located {
                header: h,
                offset: at,
            });
            at += h.record_len();
            continue;
        }
        // Damage: look for the next valid header, a window at a time.
        let start = at;
        let next = loop {
            let want = (len - at).min(RESYNC_WINDOW as u64) as usize;
            let mut window = vec![0u8; want];
            file.read_exact_at(&mut window, at)?;
            // Skip the byte where the damage starts; a header may span two windows.
            let from = usize::from(at == start);
            if let Some(i) = window.get(from..).and_then(record::find_header) {
                break Some(at + (from + i) as u64);
            }
            if at + want as u64 >= len {
                break None;
            }
            at += (want - HEADER + 1).max(1) as u64;
        };
        match next {
            Some(n) => {
                out.notes.push(format!(
                    "{name}: bytes {start}..{n} are not a whole record (damaged); skipped"
                ));
                at = n;
            }
            None => {
                out.notes.push(format!(
                    "{name}: the last {} bytes (from byte {start}) are not a whole record \
                     (torn by a crash mid-write, or damaged); skipped",
                    len - start
                ));
                break;
            }
        }
    }
    Ok(out)
}

/// Reads the snapshot of a record `scan` found.
pub fn read_record(file: &File, at: &Located) -> Result<zpulse_proto::Snapshot, String> {
    record::decode_body(&at.header, &read_rest(file, at)?)
}

/// Reads the kernel events of a record `scan` found.
pub fn read_zevents(file: &File, at: &Located) -> Result<Vec<zpulse_proto::ZEvent>, String> {
    record::decode_zevents(&at.header, &read_rest(file, at)?)
}

fn read_rest(file: &File, at: &Located) -> Result<Vec<u8>, String> {
    let mut rest = vec![0u8; at.header.record_len() as usize - HEADER];
    file.read_exact_at(&mut rest, at.offset + HEADER as u64)
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(rest)
}
