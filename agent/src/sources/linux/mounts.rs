//! `/proc/self/mounts`: where each ZFS file system is mounted, the table libzfs's
//! `is_mounted` reads (through `getmntent`) to name a damaged file by its path.
//!
//! A line is `SPEC MOUNTPOINT FSTYPE OPTIONS FREQ PASSNO`, space-separated, with space, tab,
//! newline and backslash in a field written as three octal digits after a backslash
//! (`\040`; Linux `fs/proc_namespace.c`, `show_vfsmnt` through `mangle`).

/// The mount point of the ZFS file system `dataset`, when `table` (the bytes of
/// `/proc/self/mounts`) has it mounted; the last such line wins, as a later mount over the
/// same name is the one in use.
pub fn zfs_mountpoint(table: &[u8], dataset: &str) -> Option<String> {
    let text = String::from_utf8_lossy(table);
    text.lines().rev().find_map(|line| {
        let mut fields = line.split(' ');
        let (spec, dir, fstype) = (fields.next()?, fields.next()?, fields.next()?);
        (fstype == "zfs" && unescape(spec) == dataset).then(|| unescape(dir))
    })
}

fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of the form `show_vfsmnt` writes: the lab's pools, a dataset and a mount point
    /// with a space (escaped as `mangle` does), and an ext4 file system that happens to have
    /// a dataset's name as its source.
    const TABLE: &[u8] = b"/dev/vda / ext4 rw,relatime 0 0\n\
        scrubp /scrubp zfs rw,xattr,noacl 0 0\n\
        scrubp/d /scrubp/d zfs rw,xattr,noacl 0 0\n\
        tank/my\\040files /srv/my\\040files zfs rw,xattr,noacl 0 0\n\
        scrubp/d /tmp/d ext4 rw 0 0\n";

    #[test]
    fn a_zfs_file_system_is_found_by_its_dataset_name() {
        assert_eq!(
            zfs_mountpoint(TABLE, "scrubp/d").as_deref(),
            Some("/scrubp/d")
        );
        assert_eq!(
            zfs_mountpoint(TABLE, "tank/my files").as_deref(),
            Some("/srv/my files")
        );
        assert_eq!(zfs_mountpoint(TABLE, "scrubp/e"), None);
        assert_eq!(zfs_mountpoint(b"", "scrubp"), None);
        assert_eq!(zfs_mountpoint(b"\\\\\\ \n\xff\xfe zfs\n", "x"), None);
    }
}
