//! Reading kernel files relative to a root: `/` on a live system, a capture directory in
//! tests and replay. This is the only place the Linux sources touch the file system.

use std::io;
use std::path::{Path, PathBuf};

/// Upper bound on one kernel file. The largest real one (`arcstats`, a busy `txgs`) is a few
/// KiB; a capture handed to us could hold anything.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root { dir: dir.into() }
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
        self.dir.join(rel.trim_start_matches('/'))
    }

    /// Whole file, at most [`MAX_FILE_BYTES`].
    pub fn read(&self, rel: &str) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let file = std::fs::File::open(self.path(rel))?;
        let mut buf = Vec::new();
        file.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf)?;
        if buf.len() as u64 > MAX_FILE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("larger than {MAX_FILE_BYTES} bytes"),
            ));
        }
        Ok(buf)
    }

    /// A small text file with surrounding white space removed (sysfs attributes, `state`).
    pub fn read_trimmed(&self, rel: &str) -> io::Result<String> {
        let bytes = self.read(rel)?;
        Ok(String::from_utf8_lossy(&bytes).trim().to_string())
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Names in a directory, sorted, without `.`/`..`; names that are not UTF-8 are skipped.
    pub fn list(&self, rel: &str) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(rel))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }

    pub fn is_dir(&self, rel: &str) -> bool {
        self.path(rel).is_dir()
    }
}
