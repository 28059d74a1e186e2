//! Who may change the code the agent runs: sshd's StrictModes, applied to plugin files.
//!
//! A plugin runs inside the agent, usually as root. So the file, and every directory from it
//! up to `/`, must be owned by root or by the agent's own user, and writable by nobody else:
//! whoever can write any of them can make the agent run their code. Symbolic links are
//! resolved one step at a time, as the kernel does ([`resolve_checked`]): every directory the
//! resolution passes through (the directory of each link on the way included, and every
//! directory a link's target names) and every link is held to the rule, so a link in a
//! directory someone else may write, pointing at any root-owned library, is refused.
//!
//! One difference from sshd: a directory with the sticky bit (like `/tmp`, mode 1777) is
//! accepted as long as it is owned by root or the agent's user, because in it nobody can
//! rename or remove an entry they do not own; everything below it is still checked.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub use crate::base::host::effective_uid;

/// Checks a plugin file for loading by a process running as `euid`.
pub fn check_plugin_file(path: &Path, euid: u32) -> Result<(), String> {
    open_checked(path, euid).map(drop)
}

/// Opens a plugin file for loading by a process running as `euid`, checking what it opens.
///
/// The check and the load must concern the same file: a path checked and then handed to
/// `dlopen` can be switched in between (a link in a writable directory flipped to another
/// file). So the path is resolved once, step by step, with every directory and link on the
/// way checked ([`resolve_checked`]), and the resolved path is then walked from `/` one
/// component at a time with `O_NOFOLLOW` (a link put in its place since fails the open);
/// the rule is applied to each directory and to the file as opened (`fstat` of the
/// descriptor), and the caller loads that descriptor, never the path.
pub fn open_checked(path: &Path, euid: u32) -> Result<std::fs::File, String> {
    let real = resolve_checked(path, euid)?;
    walk_resolved(&real, euid)
}

/// Links followed while resolving one path, at most: Linux's own limit (`ELOOP`).
const MAX_LINKS: usize = 40;

/// Resolves `path` as the kernel would, one component at a time, and applies the rule to
/// every directory entered (from `/`, also those a link leads to) and to every symbolic link
/// met (its owner: a link's mode means nothing, and who may replace it is its directory's
/// rule, checked as it was entered). Every path that breaks the rule is named. The resolved
/// path: absolute, without links or `..`.
pub(super) fn resolve_checked(path: &Path, euid: u32) -> Result<std::path::PathBuf, String> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::path::{Component, PathBuf};
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| format!("{}: cannot resolve: {e}", path.display()))?
            .join(path)
    };
    let mut bad: Vec<String> = Vec::new();
    let mut note = |r: Result<(), String>| {
        if let Err(e) = r
            && !bad.contains(&e)
        {
            bad.push(e);
        }
    };
    let lstat = |p: &Path| {
        std::fs::symlink_metadata(p).map_err(|e| format!("{}: cannot stat: {e}", p.display()))
    };
    let root = Path::new("/");
    note(check_one(root, &lstat(root)?, euid));
    // Where the resolution stands (a directory already checked) and what is left of the path.
    let mut current = PathBuf::from("/");
    let mut left: VecDeque<OsString> = components(&absolute).collect();
    let mut links = 0;
    while let Some(name) = left.pop_front() {
        if name == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&name);
        let meta = lstat(&next)?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(format!(
                    "{}: more than {MAX_LINKS} symbolic links on the way",
                    path.display()
                ));
            }
            note(link_rule(&next, meta.uid(), euid));
            let target = std::fs::read_link(&next)
                .map_err(|e| format!("{}: cannot read the link: {e}", next.display()))?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            for c in components(&target).collect::<Vec<_>>().into_iter().rev() {
                left.push_front(c);
            }
            continue;
        }
        note(check_one(&next, &meta, euid));
        if !meta.is_dir() && !left.is_empty() {
            return Err(format!("{}: not a directory", next.display()));
        }
        current = next;
    }
    // Components: names and `..` (`.` and the root dropped), in order.
    fn components(p: &Path) -> impl Iterator<Item = OsString> + '_ {
        p.components().filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
    }
    match bad.len() {
        0 => Ok(current),
        1 => Err(bad.remove(0)),
        n => Err(format!("{n} paths break the rule: {}", bad.join("; "))),
    }
}

/// A symbolic link on the way must be root's or the agent's user's: in a directory that
/// passes the rule only they could have made it, and a link someone else owns there means
/// that directory was not always as safe as it is now.
fn link_rule(path: &Path, uid: u32, euid: u32) -> Result<(), String> {
    if uid != 0 && uid != euid {
        return Err(format!(
            "symbolic link {} is owned by uid {uid}, not by root or the agent's user (uid \
             {euid}): that user could point it at other code",
            path.display()
        ));
    }
    Ok(())
}

/// Opens `real` (absolute, no `..`, no links) component by component without following
/// links, applying the rule to each directory and to the file on its descriptor.
pub(super) fn walk_resolved(real: &Path, euid: u32) -> Result<std::fs::File, String> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Component;
    // Directories are only walked through: on Linux `O_PATH` needs no read permission.
    #[cfg(target_os = "linux")]
    const DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY;
    #[cfg(not(target_os = "linux"))]
    const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY;
    let open_at = |dir: Option<&OwnedFd>, name: &[u8], flags: libc::c_int, shown: &Path| {
        let name = CString::new(name).map_err(|_| format!("{}: NUL in name", shown.display()))?;
        let at = dir.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
        // SAFETY: `name` is a NUL-terminated string that outlives the call; `at` is a
        // descriptor we own (or AT_FDCWD); the result is checked before use.
        let fd = unsafe {
            libc::openat(
                at,
                name.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(format!(
                "{}: cannot open without following links: {}",
                shown.display(),
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `fd` was just returned by openat and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let stat = |fd: &OwnedFd, shown: &Path| -> Result<Metadata, String> {
        let file = std::fs::File::from(fd.try_clone().map_err(|e| e.to_string())?);
        file.metadata()
            .map_err(|e| format!("{}: cannot stat: {e}", shown.display()))
    };
    // Every path that breaks the rule is named, not only the first: a plugin built under
    // umask 0002 has a group-writable file and directories, to be fixed in one go. The walk
    // goes on past a bad directory (still without following links); nothing is loaded then.
    let mut bad: Vec<String> = Vec::new();
    let mut note = |r: Result<(), String>| {
        if let Err(e) = r {
            bad.push(e);
        }
    };
    let mut dir = open_at(None, b"/", DIR_FLAGS, Path::new("/"))?;
    note(check_one(
        Path::new("/"),
        &stat(&dir, Path::new("/"))?,
        euid,
    ));
    let names: Vec<&std::ffi::OsStr> = real
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let Some((file_name, dirs)) = names.split_last() else {
        return Err(format!("{} is not a regular file", real.display()));
    };
    let mut shown = std::path::PathBuf::from("/");
    for name in dirs {
        shown.push(name);
        dir = open_at(Some(&dir), name.as_bytes(), DIR_FLAGS, &shown)?;
        note(check_one(&shown, &stat(&dir, &shown)?, euid));
    }
    shown.push(file_name);
    // O_NONBLOCK: a FIFO put there must not block the open.
    let file = open_at(
        Some(&dir),
        file_name.as_bytes(),
        libc::O_RDONLY | libc::O_NONBLOCK,
        &shown,
    )?;
    let meta = stat(&file, &shown)?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", real.display()));
    }
    note(check_one(&shown, &meta, euid));
    match bad.len() {
        0 => Ok(std::fs::File::from(file)),
        1 => Err(bad.remove(0)),
        n => Err(format!("{n} paths break the rule: {}", bad.join("; "))),
    }
}

/// The rule for one file or directory, on its owner and mode.
fn check_one(path: &Path, meta: &Metadata, euid: u32) -> Result<(), String> {
    rule(path, meta.uid(), meta.mode(), meta.is_dir(), euid)
}

/// Pure form of the rule, so that every case is testable without chown.
fn rule(path: &Path, uid: u32, mode: u32, is_dir: bool, euid: u32) -> Result<(), String> {
    let what = if is_dir { "directory" } else { "file" };
    if uid != 0 && uid != euid {
        return Err(format!(
            "{what} {} is owned by uid {uid}, not by root or the agent's user (uid {euid}): \
             that user could replace the code the agent runs",
            path.display()
        ));
    }
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !(is_dir && sticky) {
        let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
            (true, true) => "its group and everyone",
            (true, false) => "its group",
            _ => "everyone",
        };
        return Err(format!(
            "{what} {} is writable by {who} (mode {:04o}): anyone who can write it could \
             replace the code the agent runs; `chmod go-w` it",
            path.display(),
            mode & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_rule() {
        let p = Path::new("/x");
        assert!(rule(p, 0, 0o755, true, 1000).is_ok());
        assert!(rule(p, 1000, 0o644, false, 1000).is_ok());
        let err = rule(p, 1001, 0o644, false, 1000).unwrap_err();
        assert!(
            err.contains("owned by uid 1001") && err.contains("uid 1000"),
            "{err}"
        );
        let err = rule(p, 0, 0o646, false, 0).unwrap_err();
        assert!(
            err.contains("file /x is writable by everyone (mode 0646)"),
            "{err}"
        );
        let err = rule(p, 0, 0o666, false, 0).unwrap_err();
        assert!(
            err.contains("writable by its group and everyone (mode 0666)"),
            "{err}"
        );
        let err = rule(p, 0, 0o775, true, 0).unwrap_err();
        assert!(
            err.contains("directory /x is writable by its group"),
            "{err}"
        );
        assert!(
            rule(p, 0, 0o777, true, 0)
                .unwrap_err()
                .contains("group and everyone")
        );
        // /tmp: sticky and root's.
        assert!(rule(p, 0, 0o1777, true, 1000).is_ok());
        // A sticky directory of someone else is still someone else's.
        assert!(rule(p, 1001, 0o1777, true, 1000).is_err());
        // The sticky bit means nothing on a file.
        assert!(rule(p, 0, 0o1666, false, 0).is_err());
    }

    #[test]
    fn real_files_and_directories() {
        let euid = effective_uid();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("plugins");
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o755);
        let file = dir.join("libok.so");
        std::fs::write(&file, b"not really a library").unwrap();
        chmod(&file, 0o644);
        check_plugin_file(&file, euid).unwrap();

        chmod(&file, 0o666);
        let err = check_plugin_file(&file, euid).unwrap_err();
        assert!(
            err.contains("libok.so is writable by its group and everyone"),
            "{err}"
        );
        chmod(&file, 0o644);

        chmod(&dir, 0o775);
        let err = check_plugin_file(&file, euid).unwrap_err();
        assert!(err.contains("plugins is writable by its group"), "{err}");
        // Built under umask 0002: the directory and the file at once, both named in one error.
        chmod(&file, 0o664);
        let err = check_plugin_file(&file, euid).unwrap_err();
        assert!(err.starts_with("2 paths break the rule: "), "{err}");
        assert!(
            err.contains("directory ")
                && err.contains("plugins is writable by its group")
                && err.contains("file ")
                && err.contains("libok.so is writable by its group"),
            "{err}"
        );
        chmod(&file, 0o644);
        chmod(&dir, 0o755);

        // A link from a writable directory to a good file: the link's directory counts.
        let open_dir = root.path().join("open");
        std::fs::create_dir(&open_dir).unwrap();
        chmod(&open_dir, 0o777);
        let link = open_dir.join("liblink.so");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let err = check_plugin_file(&link, euid).unwrap_err();
        assert!(err.contains("open is writable"), "{err}");

        assert!(
            check_plugin_file(&dir, euid)
                .unwrap_err()
                .contains("not a regular file")
        );
        assert!(check_plugin_file(&dir.join("nope.so"), euid).is_err());
    }

    const LIBZ: &str = "/usr/lib/x86_64-linux-gnu/libz.so.1";

    /// A directory of mode `mode` at `path`, created.
    fn dir_with_mode(path: &Path, mode: u32) -> std::path::PathBuf {
        std::fs::create_dir(path).unwrap();
        chmod(path, mode);
        path.to_path_buf()
    }

    /// The directory of the link the plugin path names was checked, and the
    /// target's chain, but not the directory of a link met on the way: a good-looking link
    /// leading through a link in a 0777 directory to any root-owned library was loaded.
    #[test]
    fn a_link_on_the_way_in_a_writable_directory_is_refused_and_named() {
        let euid = effective_uid();
        let root = tempfile::tempdir().unwrap();
        let plugins = dir_with_mode(&root.path().join("plugins"), 0o755);
        let open = dir_with_mode(&root.path().join("open"), 0o777);
        // A plugin that is a link to a link in the open directory, which leads to libz (root's,
        // in a root-owned directory).
        std::os::unix::fs::symlink(LIBZ, open.join("hop.so")).unwrap();
        std::os::unix::fs::symlink(open.join("hop.so"), plugins.join("libx.so")).unwrap();
        let err = check_plugin_file(&plugins.join("libx.so"), euid).unwrap_err();
        assert!(
            err.contains(&format!("directory {} is writable", open.display())),
            "{err}"
        );
        // The same through a relative link, and through a directory that is a link.
        let relative = Path::new("..").join("open").join("hop.so");
        std::os::unix::fs::symlink(&relative, plugins.join("librel.so")).unwrap();
        let err = check_plugin_file(&plugins.join("librel.so"), euid).unwrap_err();
        assert!(err.contains(&open.display().to_string()), "{err}");
        std::fs::create_dir(open.join("lib")).unwrap();
        chmod(&open.join("lib"), 0o755);
        std::fs::copy(LIBZ, open.join("lib/libz.so")).unwrap();
        chmod(&open.join("lib/libz.so"), 0o644);
        std::os::unix::fs::symlink(open.join("lib"), plugins.join("lib")).unwrap();
        let err = check_plugin_file(&plugins.join("lib/libz.so"), euid).unwrap_err();
        assert!(err.contains(&open.display().to_string()), "{err}");
        // Once the directory is closed to others, the same chains load (the rule, not links,
        // refused them).
        chmod(&open, 0o755);
        for p in ["libx.so", "librel.so", "lib/libz.so"] {
            check_plugin_file(&plugins.join(p), euid).unwrap_or_else(|e| panic!("{p}: {e}"));
        }
    }

    #[test]
    fn a_link_in_a_directory_owned_by_another_user_is_refused() {
        let euid = effective_uid();
        let root = tempfile::tempdir().unwrap();
        let theirs = dir_with_mode(&root.path().join("theirs"), 0o755);
        let sticky = dir_with_mode(&root.path().join("sticky"), 0o1777);
        std::os::unix::fs::symlink(LIBZ, theirs.join("libz.so")).unwrap();
        std::os::unix::fs::symlink(LIBZ, sticky.join("libz.so")).unwrap();
        // Only root can give files away; CI runs as root, so the real case is exercised there.
        if std::os::unix::fs::chown(&theirs, Some(4242), None).is_err() {
            return;
        }
        let err = check_plugin_file(&theirs.join("libz.so"), euid).unwrap_err();
        assert!(
            err.contains(&format!(
                "directory {} is owned by uid 4242",
                theirs.display()
            )),
            "{err}"
        );
        // In a sticky directory (like /tmp), a link someone else made is theirs to point.
        std::os::unix::fs::lchown(sticky.join("libz.so"), Some(4242), None).unwrap();
        let err = check_plugin_file(&sticky.join("libz.so"), euid).unwrap_err();
        assert!(
            err.contains("symbolic link") && err.contains("owned by uid 4242"),
            "{err}"
        );
    }

    #[test]
    fn link_loops_end_with_an_error() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a.so");
        std::os::unix::fs::symlink(root.path().join("b.so"), &a).unwrap();
        std::os::unix::fs::symlink(&a, root.path().join("b.so")).unwrap();
        let err = check_plugin_file(&a, effective_uid()).unwrap_err();
        assert!(err.contains("more than 40 symbolic links"), "{err}");
    }

    #[test]
    fn a_file_owned_by_another_user_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("libother.so");
        std::fs::write(&file, b"x").unwrap();
        chmod(&file, 0o644);
        // Only root can give a file away; CI runs as root, so the real case is exercised there.
        if std::os::unix::fs::chown(&file, Some(4242), None).is_err() {
            return;
        }
        let err = check_plugin_file(&file, effective_uid()).unwrap_err();
        assert!(err.contains("owned by uid 4242"), "{err}");
    }
}
