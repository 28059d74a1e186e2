//! Appending snapshots to the history, and keeping it within its age and size.

use super::Config;
use super::record;
use super::segment;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use zpulse_proto::Snapshot;

/// What the writer knows of one segment.
#[derive(Debug, Clone)]
struct SegmentInfo {
    path: PathBuf,
    /// Time of its first and newest record (None: no whole record in it).
    first: Option<f64>,
    newest: Option<f64>,
    size: u64,
}

/// Appends snapshots to the history directory of a [`Config`].
///
/// Each [`Writer::open`] starts a new segment at its first append (an older segment's torn
/// tail is left as it is: readers skip it with a note). Each append is one `write` of the
/// whole record, so a crash of the agent costs at most the record being written. Snapshots
/// reach the disk (`fdatasync`) at most [`SYNC_EVERY_S`] of snapshot time apart, when a
/// segment is closed, and when the writer is dropped, so a power cut costs at most that
/// last stretch of them; a batch of kernel events is synced as it is appended, as journald
/// syncs at once after a message of priority CRIT or above: the record of a fault must
/// outlive the power cut that may follow it. A sync per append cost about as much CPU as
/// encoding the record.
#[derive(Debug)]
pub struct Writer {
    dir: PathBuf,
    retention_s: f64,
    max_size: u64,
    segment_cap: u64,
    /// Closed segments, any order; rotation picks the oldest by newest record.
    closed: Vec<SegmentInfo>,
    open: Option<(File, SegmentInfo)>,
    /// What opening found (damaged or unreadable segments), for the log.
    notes: Vec<String>,
    /// Snapshot time of the open segment's last `fdatasync` (None: not yet).
    synced_at: Option<f64>,
    /// `fdatasync` calls made by appends.
    syncs: u64,
    encoder: record::Encoder,
}

/// Snapshot seconds between two syncs of the open segment: journald's default
/// `SyncIntervalSec` (five minutes). On the project's VM a sync cost about 200 µs of CPU
/// (the virtio request and its completion), a third of an interval's with every output on;
/// once a minute that was a tenth of the history's cost at the lab's 20 s interval.
pub const SYNC_EVERY_S: f64 = 300.0;

/// What one append did besides appending.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Appended {
    /// Segments removed (past the retention or to stay under the size cap).
    pub removed: Vec<PathBuf>,
}

impl Writer {
    /// Opens the history of `config` for appending: creates its directory (0700) when
    /// absent, refuses one that is a link or writable by others, and reads every segment's
    /// headers to know their ages and sizes.
    pub fn open(config: &Config) -> Result<Writer, String> {
        let dir = config.dir();
        segment::ensure_dir(&dir, crate::base::host::effective_uid())?;
        let mut w = Writer {
            retention_s: config.retention.as_secs_f64(),
            max_size: config.max_size,
            segment_cap: config.segment_cap(),
            closed: Vec::new(),
            open: None,
            notes: Vec::new(),
            synced_at: None,
            syncs: 0,
            encoder: record::Encoder::default(),
            dir,
        };
        let paths = segment::list(&w.dir).map_err(|e| format!("{}: {e}", w.dir.display()))?;
        for path in paths {
            let label = path.display().to_string();
            let file = match segment::open_read(&path) {
                Ok(f) => f,
                Err(e) => {
                    w.notes.push(format!("{label}: {e}; left alone"));
                    continue;
                }
            };
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            let scan = segment::scan(&file, size, &label).map_err(|e| format!("{label}: {e}"))?;
            w.notes.extend(scan.notes);
            let times = scan.records.iter().map(|r| r.header.taken_at);
            w.closed.push(SegmentInfo {
                path,
                first: times.clone().reduce(f64::min),
                newest: times.reduce(f64::max),
                size,
            });
        }
        Ok(w)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What opening found: damaged stretches, files that are not segments.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Bytes of segment files on disk.
    pub fn disk_bytes(&self) -> u64 {
        self.closed.iter().map(|s| s.size).sum::<u64>()
            + self.open.as_ref().map_or(0, |(_, s)| s.size)
    }

    /// Appends `snapshot`, then removes the segments older than the retention. Age is judged
    /// by the snapshot's own time (`taken_at`, the agent's wall clock), so a replay of older
    /// captures keeps its own span, and tests give the time with the snapshot.
    pub fn append(&mut self, snapshot: &Snapshot) -> Result<Appended, String> {
        // Taken out for the append and put back: it lends the record it made.
        let mut encoder = std::mem::take(&mut self.encoder);
        let appended = encoder
            .snapshot(snapshot)
            .and_then(|bytes| self.append_record(bytes, snapshot.taken_at, false));
        self.encoder = encoder;
        appended
    }

    /// Appends a batch of kernel events (a record at its last event's time), with the same
    /// rotation and retention as a snapshot, and syncs it.
    pub fn append_zevents(&mut self, events: &[zpulse_proto::ZEvent]) -> Result<Appended, String> {
        let t = events.last().map_or(0.0, |e| e.time.as_f64());
        let mut encoder = std::mem::take(&mut self.encoder);
        let appended = encoder
            .zevents(events)
            .and_then(|bytes| self.append_record(bytes, t, true));
        self.encoder = encoder;
        appended
    }

    /// Appends one framed record taken at `t`; `sync` makes it reach the disk now, not
    /// when the next sync is due.
    fn append_record(&mut self, bytes: &[u8], t: f64, sync: bool) -> Result<Appended, String> {
        let len = bytes.len() as u64;
        if len > self.max_size / 2 {
            return Err(format!(
                "a record of {len} bytes does not fit a history of max_size {}",
                self.max_size
            ));
        }
        let mut appended = Appended::default();
        let hour = |x: f64| (x / 3600.0).floor();
        let roll = match &self.open {
            None => true,
            Some((_, s)) => {
                s.size + len > self.segment_cap || s.first.is_some_and(|f| hour(f) != hour(t))
            }
        };
        if roll {
            if let Some((file, s)) = self.open.take() {
                // Its last records reach the disk before it counts as closed.
                let _ = file.sync_data();
                self.closed.push(s);
            }
            self.synced_at = None;
            let (file, path) = self.create_segment(t)?;
            self.open = Some((
                file,
                SegmentInfo {
                    path,
                    first: None,
                    newest: None,
                    size: 0,
                },
            ));
        }
        // Make room first, so the directory never holds more than max_size.
        while self.disk_bytes() + len > self.max_size && !self.closed.is_empty() {
            let oldest = self.oldest_closed();
            appended.removed.push(self.remove_closed(oldest));
        }
        let (file, info) = self.open.as_mut().expect("a segment is open");
        // The snapshots' schedule, which a forced sync leaves as it is: kernel events carry
        // the kernel's times, not the snapshots'.
        let due = self
            .synced_at
            .is_none_or(|at| (t - at).abs() >= SYNC_EVERY_S);
        let written = file.write_all(bytes).and_then(|()| {
            if due || sync {
                file.sync_data()
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            // Leave no partial record behind: the next append goes after the last whole one.
            let _ = file.set_len(info.size);
            return Err(format!("{}: write: {e}", info.path.display()));
        }
        if due && !sync {
            self.synced_at = Some(t);
        }
        if due || sync {
            self.syncs += 1;
        }
        info.size += len;
        info.first.get_or_insert(t);
        info.newest = Some(info.newest.map_or(t, |n| n.max(t)));
        // Then age: a closed segment whose newest record is older than the retention goes.
        while let Some(i) = self
            .closed
            .iter()
            .position(|s| s.newest.is_none_or(|n| n < t - self.retention_s))
        {
            appended.removed.push(self.remove_closed(i));
        }
        Ok(appended)
    }

    fn create_segment(&self, t: f64) -> Result<(File, PathBuf), String> {
        for n in 0..100 {
            let path = self.dir.join(segment::name(t, n)?);
            match segment::create(&path) {
                Ok(file) => return Ok((file, path)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    // A segment of the same second (the clock went back): take the next name.
                    // Anything else there is not ours to write to.
                    match std::fs::symlink_metadata(&path) {
                        Ok(m) if m.file_type().is_file() => continue,
                        Ok(m) => {
                            return Err(format!(
                                "{}: a {} stands at the new segment's name; refusing to \
                                 write there",
                                path.display(),
                                crate::base::files::file_kind(m.file_type())
                            ));
                        }
                        Err(_) => continue,
                    }
                }
                Err(e) => return Err(format!("{}: cannot create: {e}", path.display())),
            }
        }
        Err(format!(
            "{}: no free segment name for time {t}",
            self.dir.display()
        ))
    }

    fn oldest_closed(&self) -> usize {
        let key = |s: &SegmentInfo| s.newest.unwrap_or(f64::NEG_INFINITY);
        (0..self.closed.len())
            .min_by(|&a, &b| key(&self.closed[a]).total_cmp(&key(&self.closed[b])))
            .unwrap_or(0)
    }

    fn remove_closed(&mut self, i: usize) -> PathBuf {
        let s = self.closed.swap_remove(i);
        // Not there any more is as good as removed; a failure leaves it counted out, and the
        // next open sees it again.
        let _ = std::fs::remove_file(&s.path);
        s.path
    }
}

impl Drop for Writer {
    /// What was written since the last sync reaches the disk: a clean stop loses nothing to
    /// a later power cut.
    fn drop(&mut self) {
        if let Some((file, _)) = &self.open {
            let _ = file.sync_data();
        }
    }
}

#[cfg(test)]
impl Writer {
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// The segment being appended to.
    pub fn open_segment(&self) -> Option<&Path> {
        self.open.as_ref().map(|(_, s)| s.path.as_path())
    }
}
