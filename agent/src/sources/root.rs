//! Reading kernel files relative to a root: `/` on a live system, a capture directory in
//! tests and replay. This is the only place the Linux sources touch the file system, so a
//! root with a [`Recorder`] (`Root::recorded`) sees every read, listing and probe a
//! snapshot makes: what `zpulse capture` writes.

use super::record::Recorder;
pub use crate::base::files::{KeptFiles, file_kind, read_regular, read_regular_into};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Upper bound on one kernel file. The largest real text one (`arcstats`, a busy `txgs`) is a
/// few KiB; a capture handed to us could hold anything. The largest file a capture holds is a
/// recorded `/dev/zfs` reply, so the bound is the live ioctl's: a pool that works live also
/// replays.
pub const MAX_FILE_BYTES: u64 = super::zfs_ioctl::protocol::MAX_REPLY as u64;

#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
    /// Set while a capture records what one snapshot reads (see `sources::record`).
    recorder: Option<Recorder>,
    /// The files a [`System`](super::System) reads each interval, kept open
    /// ([`Root::keeping_files`]); shared by the clones of this root.
    kept: Option<Arc<KeptFiles>>,
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root {
            dir: dir.into(),
            recorder: None,
            kept: None,
        }
    }

    /// The same root, keeping open the files it reads until [`Root::sweep_kept_files`] finds
    /// them unread ([`KeptFiles`]): for a system read every interval.
    pub fn keeping_files(self) -> Self {
        Root {
            kept: Some(Arc::default()),
            ..self
        }
    }

    /// Closes the kept files not read since the last sweep: called at each snapshot's end.
    pub fn sweep_kept_files(&self) {
        if let Some(kept) = &self.kept {
            kept.sweep();
        }
    }

    /// Files held open by [`Root::keeping_files`].
    pub fn kept_files(&self) -> usize {
        self.kept.as_ref().map_or(0, |k| k.len())
    }

    /// The same root, recording into `recorder` every read, listing and probe made through
    /// it. A recording reads every file afresh: nothing kept is used.
    pub fn recorded(&self, recorder: &Recorder) -> Self {
        Root {
            dir: self.dir.clone(),
            recorder: Some(recorder.clone()),
            kept: None,
        }
    }

    /// The recorder of a recorded root: for sources that do not come from a file (the live
    /// `/dev/zfs` replies), which record what their replay will read.
    pub fn recorder(&self) -> Option<&Recorder> {
        self.recorder.as_ref()
    }

    /// The live system.
    pub fn live() -> Self {
        Root::new("/")
    }

    /// Whether this root is the running system rather than a capture.
    pub fn is_live(&self) -> bool {
        self.dir == Path::new("/")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The absolute path of `rel` (written like `proc/diskstats`, without a leading slash).
    pub fn path(&self, rel: &str) -> PathBuf {
        let rel = rel.trim_start_matches('/');
        // Sized once: `join` copies the root and then grows the copy for `rel`, and a
        // snapshot builds a path for each of its ~90 reads.
        let mut path = PathBuf::with_capacity(self.dir.as_os_str().len() + 1 + rel.len());
        path.push(&self.dir);
        path.push(rel);
        path
    }

    /// [`Root::path`] of a `rel` that stays below the root. Readers build some names from
    /// what they read (a pool's name from a capture's POOL_CONFIGS reply), and a capture is
    /// untrusted input: a `..` in such a name must not reach a file outside it.
    fn inside(&self, rel: &str) -> io::Result<PathBuf> {
        // `..` as a whole component only; the substring test first skips the split for the
        // paths without one (every path the readers build from kernel names in practice).
        if rel.contains("..") && rel.split('/').any(|part| part == "..") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "names a path outside the root (`..`): not read",
            ));
        }
        Ok(self.path(rel))
    }

    /// Whole file, at most [`MAX_FILE_BYTES`]; only a regular file (see [`read_regular`]).
    pub fn read(&self, rel: &str) -> io::Result<Vec<u8>> {
        let result = self.inside(rel).and_then(|path| {
            let mut buf = Vec::new();
            self.read_path_into(&path, &mut buf).map(|()| buf)
        });
        if let Some(r) = &self.recorder {
            r.read(rel, &result);
        }
        result
    }

    /// [`Root::read`] into `buf`, which is cleared first and keeps its memory: for a file
    /// read every interval whose size would otherwise be allocated anew each time (a pool's
    /// `/dev/zfs` reply in a capture; see `zpool::read::KeptReplies`). On failure `buf` is
    /// empty.
    pub fn read_into(&self, rel: &str, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        if self.recorder.is_some() {
            // A recording keeps what it reads anyway (and `read` records it).
            *buf = self.read(rel)?;
            return Ok(());
        }
        let path = self.inside(rel)?;
        self.read_path_into(&path, buf)
    }

    /// The regular file at `path` (below the root) into `buf`, through the kept files when
    /// this root keeps them.
    fn read_path_into(&self, path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
        match &self.kept {
            Some(kept) => kept.read_into(path, MAX_FILE_BYTES, buf),
            None => read_regular_into(path, MAX_FILE_BYTES, buf),
        }
    }

    /// A small text file with surrounding white space removed (sysfs attributes, `state`).
    pub fn read_trimmed(&self, rel: &str) -> io::Result<String> {
        let bytes = self.read(rel)?;
        Ok(String::from_utf8_lossy(&bytes).trim().to_string())
    }

    /// Whether `rel` exists, following links (as `Path::exists`).
    pub fn exists(&self, rel: &str) -> bool {
        let Ok(meta) = self.inside(rel).and_then(std::fs::metadata) else {
            return false;
        };
        if let Some(r) = &self.recorder {
            if meta.is_dir() {
                r.dir(rel);
            } else {
                r.present(rel);
            }
        }
        true
    }

    /// Names in a directory, sorted, without `.`/`..`; names that are not UTF-8 are skipped.
    pub fn list(&self, rel: &str) -> io::Result<Vec<String>> {
        let result = self.inside(rel).and_then(std::fs::read_dir).map(|entries| {
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect();
            names.sort();
            names
        });
        if let Some(r) = &self.recorder {
            r.list(rel, &result);
        }
        result
    }

    /// [`Root::list`] with whether each entry is a directory (following links, as
    /// [`Root::is_dir`]), told by the listing itself where the file system gives entry
    /// types (procfs, sysfs, ext4, tmpfs do): no `stat` per entry, which for the ~20 entries of
    /// `/proc/spl/kstat/zfs` was 3 % of a live interval. A link, or an entry of unknown
    /// type, is looked up as `is_dir` would.
    pub fn entries(&self, rel: &str) -> io::Result<Vec<(String, bool)>> {
        let result = self.inside(rel).and_then(|path| {
            let mut entries: Vec<(String, bool)> = std::fs::read_dir(path)?
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let is_dir = match e.file_type() {
                        Ok(kind) if !kind.is_symlink() => kind.is_dir(),
                        _ => e.path().is_dir(),
                    };
                    Some((e.file_name().into_string().ok()?, is_dir))
                })
                .collect();
            entries.sort();
            Ok(entries)
        });
        if let Some(r) = &self.recorder {
            r.list(rel, &result);
            for (name, _) in result.iter().flatten().filter(|(_, is_dir)| *is_dir) {
                r.dir(&format!("{}/{name}", rel.trim_end_matches('/')));
            }
        }
        result
    }

    /// Whether `rel` is a directory, following links (as `Path::is_dir`).
    pub fn is_dir(&self, rel: &str) -> bool {
        let is_dir = self.inside(rel).is_ok_and(|path| path.is_dir());
        if is_dir && let Some(r) = &self.recorder {
            r.dir(rel);
        }
        is_dir
    }
}

/// The note for a source file that exists but holds nothing: the kernel never writes an
/// empty kstat, `/proc/diskstats` or `/proc/net/dev`, so its data is lost, and said so.
pub const EMPTY: &str = "empty file: nothing reported (its figures are missing)";

/// Makes a FIFO at `path` for a test's attack (mkfifoat(2), no mkfifo(1) process).
#[cfg(test)]
pub(crate) fn make_fifo(path: &Path) {
    use rustix::fs::{CWD, Mode, mkfifoat};
    mkfifoat(CWD, path, Mode::from_raw_mode(0o600))
        .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_file_may_be_as_large_as_a_live_ioctl_reply() {
        // A recorded POOL_STATS reply of a pool the live ioctl accepts (over the old 16 MiB
        // bound, under the 64 MiB ZFS_IOC reply limit) replays; one byte more is refused.
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let big = std::fs::File::create(dir.path().join("big")).unwrap();
        big.set_len(20 << 20).unwrap();
        assert_eq!(root.read("big").unwrap().len(), 20 << 20);
        let over = std::fs::File::create(dir.path().join("over")).unwrap();
        over.set_len((64 << 20) + 1).unwrap();
        let err = root.read("over").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(
            err.to_string().contains(&(64u64 << 20).to_string()),
            "{err}"
        );
    }

    #[test]
    fn read_into_reuses_the_buffer_and_leaves_it_empty_on_any_failure() {
        let dir = tempfile::tempdir().unwrap();
        read_into_refuses_the_attacks(&Root::new(dir.path()));
        // The same through the files a system keeps open, twice (opened, then kept).
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).keeping_files();
        read_into_refuses_the_attacks(&root);
        read_into_refuses_the_attacks(&root);
        assert_eq!(root.kept_files(), 2, "the two regular files, kept");
    }

    fn read_into_refuses_the_attacks(root: &Root) {
        let dir = root.dir();
        std::fs::write(dir.join("reply"), b"0123456789").unwrap();
        std::fs::write(dir.join("short"), b"ab").unwrap();
        let mut buf = Vec::with_capacity(4096);
        let memory = buf.as_ptr();
        root.read_into("reply", &mut buf).unwrap();
        assert_eq!(buf, b"0123456789");
        root.read_into("short", &mut buf).unwrap();
        assert_eq!(buf, b"ab", "cleared first, not overwritten in place");
        assert_eq!(buf.as_ptr(), memory, "the same memory");
        // The attacks read() refuses: a FIFO (no hang), a directory, a path out of the root,
        // a missing file, a file over the limit. Nothing of the last read stays behind.
        if !dir.join("fifo").exists() {
            make_fifo(&dir.join("fifo"));
            std::fs::create_dir(dir.join("dir")).unwrap();
        }
        let over = std::fs::File::create(dir.join("over")).unwrap();
        over.set_len((64 << 20) + 1).unwrap();
        for rel in ["fifo", "dir", "../outside", "missing", "over"] {
            root.read_into("reply", &mut buf).unwrap();
            assert!(root.read_into(rel, &mut buf).is_err(), "{rel}");
            assert!(buf.is_empty(), "{rel}: {} bytes left", buf.len());
        }
    }

    #[test]
    fn a_dangling_link_is_an_error_that_names_it_not_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::os::unix::fs::symlink("gone/arcstats", dir.path().join("arcstats")).unwrap();
        let err = root.read("arcstats").unwrap_err();
        assert_ne!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(err.to_string().contains("\"gone/arcstats\""), "{err}");
        let mut buf = Vec::new();
        let err = root.read_into("arcstats", &mut buf).unwrap_err();
        assert_ne!(err.kind(), io::ErrorKind::NotFound, "{err}");
        // A file that is simply absent, or below a missing directory, is still "not found".
        for rel in ["missing", "no-dir/missing", "arcstats/below-the-link"] {
            assert_eq!(root.read(rel).unwrap_err().kind(), io::ErrorKind::NotFound);
        }
    }

    #[test]
    fn entries_tell_directories_as_is_dir_does_and_are_recorded_so() {
        let dir = tempfile::tempdir().unwrap();
        let kstat = dir.path().join("kstat");
        std::fs::create_dir_all(kstat.join("tank")).unwrap();
        std::fs::write(kstat.join("arcstats"), b"").unwrap();
        std::os::unix::fs::symlink("tank", kstat.join("link-to-dir")).unwrap();
        std::os::unix::fs::symlink("arcstats", kstat.join("link-to-file")).unwrap();
        std::os::unix::fs::symlink("nowhere", kstat.join("dangling")).unwrap();
        let recorder = crate::sources::record::Recorder::new();
        let root = Root::new(dir.path()).recorded(&recorder);
        let entries = root.entries("kstat").unwrap();
        for (name, is_dir) in &entries {
            assert_eq!(*is_dir, kstat.join(name).is_dir(), "{name}");
        }
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "arcstats",
                "dangling",
                "link-to-dir",
                "link-to-file",
                "tank"
            ]
        );
        let dirs: Vec<String> = recorder.take().dirs.into_iter().collect();
        assert_eq!(dirs, ["kstat", "kstat/link-to-dir", "kstat/tank"]);
        assert!(root.entries("../outside").is_err());
        assert_eq!(
            root.entries("missing").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
