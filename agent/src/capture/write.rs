//! Writing a capture: the raw bytes of every source, copied unchanged, so that a capture
//! replays through the same parsers as the live system.

use super::{CaptureError, MANIFEST, Manifest};
use crate::sources::freebsd::Sysctl;
use crate::sources::freebsd::sysctl::SysctlValue;
use crate::sources::zfs_ioctl::Platform;
use crate::sources::zpool::read as zpool;
use crate::sources::{Root, System};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};
use zpulse_proto::snapshot::{HostIdentity, Tunables};

/// What a capture run copied.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CaptureStats {
    pub files: usize,
    pub bytes: u64,
    /// Sources that exist but could not be read (e.g. the 0600 `reads` kstat as a user).
    pub unreadable: Vec<String>,
}

/// Kstats left out: `dbufs` dumps every buffer in the ARC (expensive, root only) and
/// `dbgmsg` is a debug log, not a statistic.
const SKIPPED_KSTATS: &[&str] = &["dbufs", "dbgmsg"];
const HOST_FILES: &[&str] = &[
    "proc/diskstats",
    "proc/stat",
    "proc/meminfo",
    "proc/net/dev",
];
const QUEUE_FILES: &[&str] = &["rotational", "physical_block_size", "logical_block_size"];

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
    let captured_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut stats = CaptureStats::default();
    let zfs_version = match system {
        System::Linux(root) => {
            copy_linux(root, dest, &mut stats)?;
            copy_ioctl_replies(root, Platform::Linux, None, dest, &mut stats)?;
            root.read_trimmed("sys/module/zfs/version").ok()
        }
        System::Freebsd { sysctl, root } => {
            copy_sysctls(sysctl.as_ref(), dest, &mut stats)?;
            let abi = sysctl.u64("vfs.zfs.version.ioctl").ok();
            copy_ioctl_replies(root, Platform::Freebsd, abi, dest, &mut stats)?;
            sysctl.text("vfs.zfs.version.module").ok()
        }
    };
    let manifest = Manifest {
        format: 1,
        os: system.os(),
        captured_at,
        hostname: identity.hostname.clone(),
        kernel: identity.kernel.clone(),
        zfs_version,
    };
    write(dest, MANIFEST, manifest.to_toml().as_bytes(), &mut stats)?;
    Ok(stats)
}

fn copy_linux(root: &Root, dest: &Path, stats: &mut CaptureStats) -> Result<(), CaptureError> {
    copy_tree(root, "proc/spl/kstat/zfs", dest, stats)?;
    for rel in HOST_FILES {
        copy_file(root, rel, dest, stats)?;
    }
    for dev in root.list("sys/block").unwrap_or_default() {
        for attr in QUEUE_FILES {
            copy_file(root, &format!("sys/block/{dev}/queue/{attr}"), dest, stats)?;
        }
        copy_file(root, &format!("sys/block/{dev}/size"), dest, stats)?;
        // Partitions: their offset and size (the layout check's alignment test).
        for part in root.list(&format!("sys/block/{dev}")).unwrap_or_default() {
            if root.exists(&format!("sys/block/{dev}/{part}/partition")) {
                for attr in ["start", "size", "partition"] {
                    copy_file(root, &format!("sys/block/{dev}/{part}/{attr}"), dest, stats)?;
                }
            }
        }
    }
    copy_file(root, "sys/module/zfs/version", dest, stats)?;
    for name in Tunables::KNOWN {
        copy_file(
            root,
            &format!("sys/module/zfs/parameters/{name}"),
            dest,
            stats,
        )?;
    }
    Ok(())
}

/// `sysctl/<name>`: numbers and strings as text, opaque nodes as their raw bytes.
fn copy_sysctls(
    sysctl: &dyn Sysctl,
    dest: &Path,
    stats: &mut CaptureStats,
) -> Result<(), CaptureError> {
    for name in crate::sources::freebsd::capture_names(sysctl) {
        let bytes = match sysctl.read(&name) {
            Ok(SysctlValue::Unsigned(v)) => v.to_string().into_bytes(),
            Ok(SysctlValue::Signed(v)) => v.to_string().into_bytes(),
            Ok(SysctlValue::Text(t)) => t.into_bytes(),
            Ok(SysctlValue::Bytes(b)) => b,
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                stats.unreadable.push(format!("{name}: {e}"));
                continue;
            }
        };
        write(dest, &format!("sysctl/{name}"), &bytes, stats)?;
    }
    Ok(())
}

/// The raw `/dev/zfs` replies and how the vdevs' device links resolved: live, one round of
/// ioctls; from a capture, its files as they are.
fn copy_ioctl_replies(
    root: &Root,
    platform: Platform,
    freebsd_abi: Option<u64>,
    dest: &Path,
    stats: &mut CaptureStats,
) -> Result<(), CaptureError> {
    if !root.is_live() {
        return copy_tree(root, "zfs-ioctl", dest, stats);
    }
    let raw = match zpool::fetch_live(platform, freebsd_abi) {
        Ok(raw) => raw,
        Err(e) => {
            stats.unreadable.push(format!("/dev/zfs: {e}"));
            return Ok(());
        }
    };
    write(dest, zpool::CONFIGS_FILE, &raw.configs, stats)?;
    let mut links = String::new();
    for pool in &raw.pools {
        let base = format!("{}/{}", zpool::STATS_DIR, pool.name);
        write(dest, &format!("{base}.nvlist"), &pool.packed, stats)?;
        if pool.error != 0 {
            write(
                dest,
                &format!("{base}.error"),
                pool.error.to_string().as_bytes(),
                stats,
            )?;
        }
        for path in zpool::leaf_paths(&pool.packed) {
            if let Ok(target) = std::fs::canonicalize(&path)
                && target.as_path() != Path::new(&path)
            {
                links.push_str(&format!("{path} {}\n", target.display()));
            }
        }
    }
    if !links.is_empty() {
        write(dest, zpool::LINKS_FILE, links.as_bytes(), stats)?;
    }
    Ok(())
}

fn copy_tree(
    root: &Root,
    rel: &str,
    dest: &Path,
    stats: &mut CaptureStats,
) -> Result<(), CaptureError> {
    let Ok(names) = root.list(rel) else {
        return Ok(());
    };
    for name in names {
        if SKIPPED_KSTATS.contains(&name.as_str()) {
            continue;
        }
        let child = format!("{rel}/{name}");
        if root.is_dir(&child) {
            copy_tree(root, &child, dest, stats)?;
        } else {
            copy_file(root, &child, dest, stats)?;
        }
    }
    Ok(())
}

/// Copies one source file if it exists; a source that is absent is simply not in the capture.
fn copy_file(
    root: &Root,
    rel: &str,
    dest: &Path,
    stats: &mut CaptureStats,
) -> Result<(), CaptureError> {
    match root.read(rel) {
        Ok(bytes) => write(dest, rel, &bytes, stats),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => {
            stats.unreadable.push(format!("{rel}: {e}"));
            Ok(())
        }
    }
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
    let mut dir = dest.to_path_buf();
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    if let Some((_, dirs)) = parts.split_last() {
        for part in dirs {
            dir.push(part);
            make_real_dir(&dir).map_err(io)?;
        }
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
