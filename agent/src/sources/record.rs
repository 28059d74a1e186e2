//! Recording what one snapshot reads, so that `zpulse capture` writes exactly that.
//!
//! A [`Recorder`] is attached to a [`Root`](super::Root) (`Root::recorded`) and wrapped
//! around a [`Sysctl`] ([`RecordingSysctl`]) while one snapshot is taken
//! ([`super::recorded_snapshot`]). Every read, listing and existence probe the readers make
//! goes through those two, so the [`Recording`] they fill is by construction what the
//! snapshot read: a new source is captured the moment a reader reads it, with no list of
//! files to keep beside the readers. The bytes kept are the bytes the read returned to the
//! parser (never a second read of a counter that moved since), and a replay of the capture
//! reads the same bytes, listings and probes back.
//!
//! Only the I/O boundary records; parsers never see a recorder.

use super::freebsd::{Sysctl, SysctlError, SysctlValue};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex};

/// Everything one snapshot read, by path relative to its root (`proc/diskstats`) or by
/// sysctl name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recording {
    /// Files read, with the bytes the last successful read returned.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Paths seen to be directories (listed, or probed with `is_dir`): a capture holds them
    /// even when empty, so that a replay lists and probes them as the live read did.
    pub dirs: BTreeSet<String>,
    /// Paths only probed for existence that are not directories: a replay needs them to
    /// exist, not their contents (they are empty files in a capture).
    pub present: BTreeSet<String>,
    /// Sysctls read, with the value of the last successful read.
    pub sysctls: BTreeMap<String, SysctlValue>,
    /// Sources that exist but could not be read (EACCES, a FIFO in a file's place, a failed
    /// ioctl), with why: not in the capture, and said so.
    pub failed: BTreeMap<String, String>,
}

/// The shared log of one recording. Clones record into the same [`Recording`].
#[derive(Debug, Default, Clone)]
pub struct Recorder(Arc<Mutex<Recording>>);

impl Recorder {
    pub fn new() -> Self {
        Recorder::default()
    }

    fn with(&self, f: impl FnOnce(&mut Recording)) {
        // A panic elsewhere while holding the lock leaves the log as it was: keep using it.
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// What has been recorded so far, taken out (a capture's replies may be large: moved,
    /// not copied); the recorder starts again empty.
    pub fn take(&self) -> Recording {
        std::mem::take(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A read of file `rel` and what it returned. "Does not exist" is not recorded: the
    /// capture simply lacks the file, which a replay reads as not existing.
    pub fn read(&self, rel: &str, result: &io::Result<Vec<u8>>) {
        match result {
            Ok(bytes) => self.file(rel, bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => self.failure(rel, e.to_string()),
        }
    }

    /// File `rel` of the capture holds `bytes`: what a read returned, or what a source that
    /// is no file (a live ioctl reply) recorded under the name its replay reads.
    pub fn file(&self, rel: &str, bytes: &[u8]) {
        self.with(|r| {
            r.failed.remove(rel);
            r.files.insert(rel.to_string(), bytes.to_vec());
        });
    }

    /// A listing of directory `rel`.
    pub fn list<T>(&self, rel: &str, result: &io::Result<T>) {
        match result {
            Ok(_) => self.dir(rel),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => self.failure(rel, format!("cannot list the directory: {e}")),
        }
    }

    /// `rel` is a directory.
    pub fn dir(&self, rel: &str) {
        self.with(|r| {
            r.dirs.insert(rel.to_string());
        });
    }

    /// `rel` exists and is not a directory, and nothing but its existence was asked.
    pub fn present(&self, rel: &str) {
        self.with(|r| {
            r.present.insert(rel.to_string());
        });
    }

    /// A sysctl read and what it returned; "does not exist" is not recorded.
    pub fn sysctl(&self, name: &str, result: &Result<SysctlValue, SysctlError>) {
        match result {
            Ok(value) => self.with(|r| {
                r.failed.remove(name);
                r.sysctls.insert(name.to_string(), value.clone());
            }),
            Err(e) if e.is_not_found() => {}
            Err(e) => self.failure(name, e.to_string()),
        }
    }

    /// Source `what` exists but could not be read, for `why`. A later successful read of
    /// the same source wins.
    pub fn failure(&self, what: &str, why: String) {
        self.with(|r| {
            if !r.files.contains_key(what) && !r.sysctls.contains_key(what) {
                r.failed.insert(what.to_string(), why);
            }
        });
    }
}

/// A [`Sysctl`] that records every read of the one it wraps.
pub struct RecordingSysctl<'a> {
    inner: &'a dyn Sysctl,
    recorder: Recorder,
}

impl<'a> RecordingSysctl<'a> {
    pub fn new(inner: &'a dyn Sysctl, recorder: &Recorder) -> Self {
        RecordingSysctl {
            inner,
            recorder: recorder.clone(),
        }
    }
}

impl Sysctl for RecordingSysctl<'_> {
    fn read(&self, name: &str) -> Result<SysctlValue, SysctlError> {
        let result = self.inner.read(name);
        self.recorder.sysctl(name, &result);
        result
    }

    /// A listing needs nothing in a capture of its own: a replay lists the names the
    /// capture holds, which are those read (see `CaptureSysctl::list`). The readers use a
    /// listing only to choose what to read (the pools, a kstat's leaves), so the replay reads
    /// the same; a listed name no reader reads (`kstat.zfs.misc.zfetchstats.*`) is not kept.
    fn list(&self, prefix: &str) -> Result<Vec<String>, SysctlError> {
        let result = self.inner.list(prefix);
        if let Err(e) = &result
            && !e.is_not_found()
        {
            self.recorder.failure(&format!("{prefix}*"), e.to_string());
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_successful_read_and_reports_real_failures_once() {
        let r = Recorder::new();
        r.read("a", &Ok(b"1".to_vec()));
        r.read("a", &Ok(b"2".to_vec()));
        r.read("gone", &Err(io::Error::from(io::ErrorKind::NotFound)));
        r.read(
            "secret",
            &Err(io::Error::from(io::ErrorKind::PermissionDenied)),
        );
        r.read("a", &Err(io::Error::from(io::ErrorKind::PermissionDenied)));
        r.list("d", &Ok(()));
        r.list(
            "nodir",
            &Err::<(), _>(io::Error::from(io::ErrorKind::NotFound)),
        );
        let got = r.take();
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.files["a"], b"2");
        assert_eq!(got.dirs.iter().collect::<Vec<_>>(), ["d"]);
        // "a" was read: its later failure does not make it unreadable.
        assert_eq!(got.failed.keys().collect::<Vec<_>>(), ["secret"]);
        assert_eq!(r.take(), Recording::default());
    }
}
