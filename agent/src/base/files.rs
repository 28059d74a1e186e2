//! Reading a file by name without being fooled by what stands in its place: [`read_regular`]
//! (every file the agent reads by name: kernel files, a capture, the config), and
//! [`file_kind`], the words for what a path is when it is not a regular file.

use std::io;
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
    buf.clear();
    let result = read_regular_appending(path, limit, buf);
    if result.is_err() {
        buf.clear();
    }
    result
}

fn read_regular_appending(path: &Path, limit: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    use std::io::Read;
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
    // Sized from the file as `fs::read` does: one read for a capture or a sysfs file instead
    // of a probe and a read per doubling of the buffer (a /proc file says 0: grown as read).
    buf.reserve(meta.len().min(limit) as usize + 1);
    file.take(limit + 1).read_to_end(buf)?;
    if buf.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(())
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
