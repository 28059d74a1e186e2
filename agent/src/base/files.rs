//! Reading a file by name without being fooled by what stands in its place: [`read_regular`]
//! (every file the agent reads by name: kernel files, a capture, the config), [`KeptFiles`]
//! (the same for files read every interval, kept open between reads), and [`file_kind`], the
//! words for what a path is when it is not a regular file.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// The whole of the regular file at `path`, at most `limit` bytes.
///
/// Every file zpulse reads by name (kernel files, a capture, its manifest, the config) comes
/// through here, so that a FIFO, a device or a directory put in a file's place is an error
/// at once instead of a read that blocks forever (a FIFO) or never ends (`/dev/zero`). The
/// open does not block (`O_NONBLOCK`: opening a FIFO without a writer would), the type is
/// checked on the opened descriptor, and the read stops one byte past the limit. `/proc` and
/// `/sys` files are regular files whose size reads as 0 or 4096, so the size is only known
/// once read.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_regular_into(path, limit, &mut buf)?;
    Ok(buf)
}

/// [`read_regular`] into `buf`, cleared first (its capacity is kept); empty on failure.
pub fn read_regular_into(path: &Path, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    cleared_on_failure(buf, |buf| read_regular_appending(path, limit, buf))
}

/// `read` into `buf` cleared first, and left empty if it fails: no part of a failed read is
/// ever taken for the file.
fn cleared_on_failure(
    buf: &mut Vec<u8>,
    read: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
) -> io::Result<()> {
    buf.clear();
    let result = read(buf);
    if result.is_err() {
        buf.clear();
    }
    result
}

fn read_regular_appending(path: &Path, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    let (file, size) = open_regular(path)?;
    read_appending(&file, size, limit, buf)
}

/// `path` opened for reading if it is a regular file, with its size as it says it (0 for a
/// `/proc` file). The open does not block (`O_NONBLOCK`: opening a FIFO without a writer
/// would); the type is checked on the opened descriptor.
fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(dangling_or(path, e)),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file (a {})", file_kind(kind)),
        ));
    }
    Ok((file, meta.len()))
}

/// The rest of `file` from where it stands, appended to `buf`: at most `limit` bytes, sized
/// from `size` as `fs::read` does (one read for a capture or a sysfs file instead of a probe
/// and a read per doubling of the buffer; a /proc file says 0 and is grown as read).
fn read_appending(file: &File, size: u64, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.reserve(size.min(limit) as usize + 1);
    file.take(limit + 1).read_to_end(buf)?;
    if buf.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(())
}

/// Files read again and again (every interval), kept open and read from their start each
/// time instead of opened and closed: a live interval's ~70 kernel files cost a path walk,
/// an open and a close each, more than their reads. What the kernel answers is the same: a
/// `/proc` or `/sys` file (a seq_file) read from offset 0 runs its `show` afresh — the
/// kstat's update included (SPL `kstat_seq_start`) — exactly as a new open would.
///
/// A kept file that fails to read is closed and its path opened again, so a file removed
/// and made anew (a pool exported and imported: its kstat files are new entries, and the old
/// descriptor reads `EIO`) is read as it now is; a file that cannot seek is read the usual
/// way and never kept. Files not read between two [`KeptFiles::sweep`]s (each snapshot's
/// end) are closed, so a file that went away is held one interval at most; at most
/// [`MAX_KEPT_FILES`] are held, leaving the process's descriptors (a soft limit of 1,024 under
/// systemd) to its sockets and the history, and the rest are read the usual way.
#[derive(Debug, Default)]
pub struct KeptFiles {
    /// Keyed by the path's bytes, not as a `Path`: a `Path` hashes component by component
    /// (so that `a//b` and `a/b` are one key), which cost ~1,700 instructions a lookup, more
    /// than the read it saves an open for; the readers name each file one way.
    open: std::sync::Mutex<HashMap<OsString, KeptFile>>,
}

#[derive(Debug)]
struct KeptFile {
    file: File,
    /// Its size when opened: the first guess of the buffer for the next read.
    size: u64,
    /// Read since the last sweep.
    read: bool,
}

/// Descriptors [`KeptFiles`] holds at most.
pub const MAX_KEPT_FILES: usize = 256;

impl KeptFiles {
    /// [`read_regular_into`], from a descriptor kept from the last read of `path` when there
    /// is one.
    pub fn read_into(&self, path: &Path, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        cleared_on_failure(buf, |buf| self.read_appending(path, limit, buf))
    }

    fn read_appending(&self, path: &Path, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = open.get_mut(path.as_os_str()) {
            match from_start(&kept.file, kept.size, limit, buf) {
                Ok(()) => {
                    kept.read = true;
                    return Ok(());
                }
                // Too large is the file's own answer, not a stale descriptor's.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return Err(e),
                Err(_) => {
                    buf.clear();
                    open.remove(path.as_os_str());
                }
            }
        }
        let (file, size) = open_regular(path)?;
        read_appending(&file, size, limit, buf)?;
        // Kept only if it can be read again from its start.
        let rewinds = (&file).seek(SeekFrom::Start(0)).is_ok();
        if rewinds && open.len() < MAX_KEPT_FILES {
            let read = true;
            open.insert(path.as_os_str().to_owned(), KeptFile { file, size, read });
        }
        Ok(())
    }

    /// Closes the files not read since the last sweep.
    pub fn sweep(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, kept| std::mem::take(&mut kept.read));
    }

    /// Files held open.
    pub fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The whole of a kept `file`, read from its start.
fn from_start(mut file: &File, size: u64, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    read_appending(file, size, limit, buf)
}

/// `e` (not found), unless `path` itself is a symbolic link to nothing: then an error of
/// another kind, which names the link's target. Readers take a missing file for one this
/// kernel does not have and say nothing, but a link in a file's place was put there (a
/// capture made by hand, a live file swapped): the source it stands for is lost, and the
/// snapshot must say so. Only a failed open pays the extra `lstat`.
fn dangling_or(path: &Path, e: io::Error) -> io::Error {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return e;
    }
    let target = std::fs::read_link(path)
        .map(|t| t.to_string_lossy().chars().take(256).collect::<String>())
        .unwrap_or_default();
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("a symbolic link to nothing (its target {target:?} does not exist)"),
    )
}

/// What a non-regular file is, in words for an error message.
pub fn file_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_symlink() {
        "symbolic link"
    } else if kind.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn rchar(io: &[u8]) -> u64 {
        let text = std::str::from_utf8(io).unwrap();
        let line = text.lines().find(|l| l.starts_with("rchar:")).unwrap();
        line["rchar:".len()..].trim().parse().unwrap()
    }

    /// A kept `/proc` file answers afresh each read, as a new open would: `/proc/self/io`'s
    /// `rchar` counts the bytes this process has read, the last read of it included.
    #[test]
    fn a_kept_proc_file_is_read_afresh_from_the_same_descriptor() {
        let kept = KeptFiles::default();
        let path = Path::new("/proc/self/io");
        let mut buf = Vec::new();
        kept.read_into(path, 1 << 20, &mut buf).unwrap();
        let first = rchar(&buf);
        let bytes_read = std::fs::read("/proc/self/stat").unwrap().len() as u64;
        kept.read_into(path, 1 << 20, &mut buf).unwrap();
        assert_eq!(kept.len(), 1, "one descriptor, kept");
        assert!(
            rchar(&buf) >= first + bytes_read,
            "{first} then {}: not read afresh",
            rchar(&buf)
        );
    }

    /// A kernel file that goes away is not read from its stale descriptor: a thread's
    /// `/proc` directory, once the thread has ended, is a missing file, as `zpool export`
    /// makes a pool's kstats.
    #[test]
    fn a_kept_file_the_kernel_removed_reads_as_missing_not_stale() {
        let kept = KeptFiles::default();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (end_tx, end_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // `PID/task/TID`.
            let link = std::fs::read_link("/proc/thread-self").unwrap();
            let tid: u32 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
            tid_tx.send(tid).unwrap();
            let _ = end_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        let path = PathBuf::from(format!("/proc/self/task/{tid}/stat"));
        let mut buf = Vec::new();
        for _ in 0..2 {
            kept.read_into(&path, 1 << 20, &mut buf).unwrap();
            assert!(buf.starts_with(format!("{tid} (").as_bytes()));
        }
        assert_eq!(kept.len(), 1);
        end_tx.send(()).unwrap();
        thread.join().unwrap();
        // `join` returns once the thread has cleared its tid, a step of its exit before the
        // kernel unhashes the task from `/proc`: wait (bounded) until a new lookup of the
        // directory fails, so that the kernel has removed what the descriptor was kept for.
        let dir = path.parent().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dir.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "{} still there 10 s after the thread ended",
                dir.display()
            );
            std::thread::yield_now();
        }
        let err = kept.read_into(&path, 1 << 20, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(buf.is_empty());
        assert_eq!(kept.len(), 0, "the stale descriptor is closed");
    }

    /// A file rewritten in place is read as it now is; one that is not read between two
    /// sweeps is closed; no more than [`MAX_KEPT_FILES`] are held, and every file is read
    /// whole all the same.
    #[test]
    fn kept_files_are_read_whole_swept_when_unread_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let kept = KeptFiles::default();
        let mut buf = Vec::new();
        let a = dir.path().join("a");
        std::fs::write(&a, b"first").unwrap();
        kept.read_into(&a, 100, &mut buf).unwrap();
        std::fs::write(&a, b"second, longer").unwrap();
        kept.read_into(&a, 100, &mut buf).unwrap();
        assert_eq!(buf, b"second, longer");
        std::fs::write(&a, vec![b'x'; 101]).unwrap();
        let err = kept.read_into(&a, 100, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        assert!(buf.is_empty());
        kept.sweep();
        assert_eq!(kept.len(), 1, "read since the last sweep");
        kept.sweep();
        assert_eq!(kept.len(), 0, "not read since the last sweep");
        let n = MAX_KEPT_FILES + 10;
        for i in 0..n {
            std::fs::write(dir.path().join(format!("f{i}")), i.to_string()).unwrap();
        }
        for _ in 0..2 {
            for i in 0..n {
                kept.read_into(&dir.path().join(format!("f{i}")), 100, &mut buf)
                    .unwrap();
                assert_eq!(buf, i.to_string().as_bytes());
            }
        }
        assert_eq!(kept.len(), MAX_KEPT_FILES);
    }
}
