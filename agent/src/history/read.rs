//! Reading a time range back: every segment's headers are scanned (a few bytes per record),
//! the records in the range are picked, and their snapshots are decoded one at a time as the
//! caller iterates, so a day of history is never in memory at once.

use super::record::Holds;
use super::segment::{self, Located};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use zpulse_proto::{Snapshot, ZEvent};

/// Records one read may pick; past this the latest ones are left out, with a note. A day at
/// a 1 s interval is 86,400.
pub const MAX_RECORDS: usize = 1_000_000;

/// The records of a range, ready to decode in time order.
#[derive(Debug)]
pub struct HistoryRead {
    /// Segments unreadable or damaged, records left out: one line each, for the reader.
    pub notes: Vec<String>,
    files: Vec<(String, File)>,
    /// (file index, record), in time order.
    picked: Vec<(usize, Located)>,
}

impl HistoryRead {
    /// How many snapshots [`HistoryRead::snapshots`] will offer.
    pub fn len(&self) -> usize {
        self.picked_holding(Holds::Snapshot).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The time of each picked snapshot, in order (from the headers: nothing decoded).
    pub fn times(&self) -> impl Iterator<Item = f64> + '_ {
        self.picked_holding(Holds::Snapshot)
            .map(|(_, r)| r.header.taken_at)
    }

    /// The snapshots in time order, decoded as the iterator goes: `Err` is a record that
    /// could not be read back (damaged body), in words; the next ones still come.
    pub fn snapshots(&self) -> impl Iterator<Item = Result<Snapshot, String>> + '_ {
        self.picked_holding(Holds::Snapshot).map(|(f, r)| {
            let (name, file) = &self.files[*f];
            segment::read_record(file, r)
                .map_err(|e| format!("{name}: the record at byte {}: {e}; skipped", r.offset))
        })
    }

    /// The kernel events recorded in the range, in the kernel's order, and a note for each
    /// batch that could not be read back. Events are posted between snapshots: those of the
    /// batch before the range's first snapshot are not in the range and are left out.
    pub fn zevents(&self, from: f64) -> (Vec<ZEvent>, Vec<String>) {
        let mut events = Vec::new();
        let mut notes = Vec::new();
        for (f, r) in self.picked_holding(Holds::Zevents) {
            let (name, file) = &self.files[*f];
            match segment::read_zevents(file, r) {
                Ok(batch) => events.extend(batch.into_iter().filter(|e| e.time.as_f64() >= from)),
                Err(e) => notes.push(format!(
                    "{name}: the kernel events at byte {}: {e}; skipped",
                    r.offset
                )),
            }
        }
        (events, notes)
    }

    fn picked_holding(&self, holds: Holds) -> impl Iterator<Item = &(usize, Located)> + '_ {
        self.picked
            .iter()
            .filter(move |(_, r)| r.header.holds == holds)
    }
}

/// The history in `dir` between `from` and `to` (Unix seconds, both included), plus the one
/// record just before `from` (so that the first snapshot in the range has a predecessor for
/// `Sample::between`). A missing directory is an error; damaged or foreign files are notes.
pub fn read(dir: &Path, from: f64, to: f64) -> Result<HistoryRead, String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| {
        format!(
            "{}: no history there ({e}); `zpulse run` writes it",
            dir.display()
        )
    })?;
    if !meta.file_type().is_dir() {
        return Err(format!(
            "{}: not a directory (a {})",
            dir.display(),
            crate::base::files::file_kind(meta.file_type())
        ));
    }
    let mut notes = Vec::new();
    // `run` refuses to write to such a directory; what is in it may be anyone's.
    if meta.mode() & 0o022 != 0 {
        notes.push(format!(
            "warning: {} is writable by others (mode {:o}): `zpulse run` refuses to write \
             there, and what it holds may have been put there by anyone",
            dir.display(),
            meta.mode() & 0o7777
        ));
    }
    let mut out = HistoryRead {
        notes,
        files: Vec::new(),
        picked: Vec::new(),
    };
    let mut before: Option<(usize, Located)> = None;
    let mut left_out = 0usize;
    for path in segment::list(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let name = path.display().to_string();
        let file = match segment::open_read(&path) {
            Ok(f) => f,
            Err(e) => {
                out.notes.push(format!("{name}: {e}; skipped"));
                continue;
            }
        };
        let len = match file.metadata() {
            Ok(m) => m.len(),
            Err(e) => {
                out.notes.push(format!("{name}: {e}; skipped"));
                continue;
            }
        };
        let scan = match segment::scan(&file, len, &name) {
            Ok(s) => s,
            Err(e) => {
                out.notes.push(format!("{name}: {e}; skipped"));
                continue;
            }
        };
        out.notes.extend(scan.notes);
        let index = out.files.len();
        let mut used = false;
        for r in scan.records {
            let t = r.header.taken_at;
            if t < from {
                // The one record before the range is the snapshot the first interval starts
                // from; events before the range are not in it.
                if r.header.holds == Holds::Snapshot
                    && before.is_none_or(|(_, b)| b.header.taken_at < t)
                {
                    before = Some((index, r));
                    used = true;
                }
            } else if t <= to {
                if out.picked.len() < MAX_RECORDS {
                    out.picked.push((index, r));
                    used = true;
                } else {
                    left_out += 1;
                }
            }
        }
        if used {
            out.files.push((name, file));
        }
    }
    out.picked.extend(before);
    out.picked
        .sort_by(|a, b| a.1.header.taken_at.total_cmp(&b.1.header.taken_at));
    if left_out > 0 {
        out.notes.push(format!(
            "{left_out} records in the range left out: one read picks at most {MAX_RECORDS}"
        ));
    }
    Ok(out)
}
