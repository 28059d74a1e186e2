//! The live reader: the one place that calls the kernel for sysctls. Compiled only on
//! FreeBSD (`mod live` is `cfg(target_os = "freebsd")`); CI type-checks and lints it with
//! `cargo clippy --target x86_64-unknown-freebsd`, nothing here runs on Linux.
//!
//! The `sysctl` crate 0.7 resolves names to OIDs, reads a node's type (`oidfmt`) and walks
//! the tree; the value itself is read with `sysctl(3)` here and decoded by the pure
//! [`decode`], because the crate's own decoding is wrong for two kinds of node zpulse needs:
//! * strings: it always drops the last byte, but OpenZFS ≤ 2.2.2 returns its raw kstats
//!   (`state`, `guid`, `txgs`) without a NUL (sysctl crate unix/funcs.rs `value_oid`;
//!   OpenZFS module/os/freebsd/spl/spl_kstat.c `kstat_sysctl_raw`);
//! * arrays: a `CTLTYPE_LONG` node is decoded as its first element, so `kern.cp_time`
//!   (`long[CPUSTATES]`) would be one number.
//!
//! A node that grows between the size query and the read (devstat, confxml, txgs) fails
//! with ENOMEM, and devstat answers EBUSY when its generation changed: both are retried a
//! few times. Names that continue past a node with its own handler (`vm.swap_info.0`,
//! `net.link.generic.ifdata.3.general`) cannot be resolved by name: the node is resolved
//! and the numeric tail appended (`split_handler_name`).

use super::sysctl::{CtlKind, Sysctl, SysctlError, SysctlValue, decode, split_handler_name};
use ::sysctl::{Ctl, CtlIter, CtlType, Sysctl as _};
use std::io;

/// errno values (sys/sys/errno.h).
const ENOENT: i32 = 2;
const ENOMEM: i32 = 12;
const EBUSY: i32 = 16;
const ATTEMPTS: usize = 4;
/// `CTLFLAG_RD` (sys/sys/sysctl.h).
const CTLFLAG_RD: u32 = 0x8000_0000;

/// Reads the running kernel's sysctls.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveSysctl;

impl LiveSysctl {
    pub fn new() -> Self {
        LiveSysctl
    }
}

fn oid(name: &str) -> Result<Vec<libc::c_int>, ::sysctl::SysctlError> {
    let (node, tail) = match split_handler_name(name) {
        Some((node, tail)) => (node, tail),
        None => (name, Vec::new()),
    };
    let mut oid = Ctl::new(node)?
        .oid()
        .cloned()
        .ok_or(::sysctl::SysctlError::MissingImplementation)?;
    oid.extend(tail);
    Ok(oid)
}

fn error(name: &str, e: ::sysctl::SysctlError) -> SysctlError {
    let name = name.to_string();
    match e {
        ::sysctl::SysctlError::NotFound(_) => SysctlError::NotFound { name },
        ::sysctl::SysctlError::IoError(io) => os_error(&name, io),
        other => SysctlError::Read {
            name,
            source: io::Error::other(other.to_string()),
        },
    }
}

fn os_error(name: &str, source: io::Error) -> SysctlError {
    let name = name.to_string();
    if source.raw_os_error() == Some(ENOENT) {
        SysctlError::NotFound { name }
    } else {
        SysctlError::Read { name, source }
    }
}

/// The crate's type of a node as the [`CtlKind`] that [`decode`] takes. `long` is 8 bytes:
/// the port is built for LP64 only (`ONLY_FOR_ARCHS`).
fn kind(name: &str, t: CtlType) -> Result<CtlKind, SysctlError> {
    Ok(match t {
        CtlType::Node | CtlType::Struct => CtlKind::Opaque,
        CtlType::String => CtlKind::String,
        CtlType::Int | CtlType::S32 => CtlKind::Signed(4),
        CtlType::S64 | CtlType::Long => CtlKind::Signed(8),
        CtlType::S8 => CtlKind::Signed(1),
        CtlType::S16 => CtlKind::Signed(2),
        CtlType::Uint | CtlType::U32 => CtlKind::Unsigned(4),
        CtlType::Ulong | CtlType::U64 => CtlKind::Unsigned(8),
        CtlType::U8 => CtlKind::Unsigned(1),
        CtlType::U16 => CtlKind::Unsigned(2),
        // `None` and `Temperature` (a format, not a type): nothing zpulse reads.
        other => {
            return Err(SysctlError::Unsupported {
                name: name.to_string(),
                reason: format!("value of type {other:?}"),
            });
        }
    })
}

/// One `sysctl(3)` read of `oid`: a size query, then the read into a buffer with some room
/// to grow. `Err` carries errno.
fn read_raw(oid: &[libc::c_int]) -> io::Result<Vec<u8>> {
    let namelen = libc::c_uint::try_from(oid.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "OID too long"))?;
    let mut size: libc::size_t = 0;
    // SAFETY: `oid` is valid for `namelen` ints; a null `oldp` with a valid `oldlenp` asks
    // only for the size; no new value is given (null, 0).
    let rc = unsafe {
        libc::sysctl(
            oid.as_ptr(),
            namelen,
            std::ptr::null_mut(),
            &mut size,
            std::ptr::null(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; size + size / 8 + 64];
    let mut len: libc::size_t = buf.len();
    // SAFETY: `buf` is valid for writes of `len` bytes; the kernel writes at most `len` and
    // stores the count in `len`; no new value is given.
    let rc = unsafe {
        libc::sysctl(
            oid.as_ptr(),
            namelen,
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(len.min(buf.len()));
    Ok(buf)
}

impl Sysctl for LiveSysctl {
    fn read(&self, name: &str) -> Result<SysctlValue, SysctlError> {
        let oid = oid(name).map_err(|e| error(name, e))?;
        let info = Ctl::Oid(oid.clone()).info().map_err(|e| error(name, e))?;
        if info.flags & CTLFLAG_RD == 0 {
            return Err(SysctlError::Read {
                name: name.to_string(),
                source: io::Error::new(io::ErrorKind::PermissionDenied, "not readable"),
            });
        }
        let kind = kind(name, info.ctl_type)?;
        let mut attempt = 1;
        loop {
            match read_raw(&oid) {
                Ok(bytes) => return decode(name, kind, bytes),
                Err(e)
                    if attempt < ATTEMPTS
                        && matches!(e.raw_os_error(), Some(ENOMEM) | Some(EBUSY)) =>
                {
                    attempt += 1
                }
                Err(e) => return Err(os_error(name, e)),
            }
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, SysctlError> {
        let node = prefix.trim_end_matches('.');
        let base = match Ctl::new(node) {
            Ok(c) => c,
            Err(e) => {
                let e = error(node, e);
                return if e.is_not_found() {
                    Ok(Vec::new())
                } else {
                    Err(e)
                };
            }
        };
        // CTL_SYSCTL_NEXT ({0, 2}) walks the leaves below `node`, skipping CTLFLAG_SKIP ones.
        let mut names = Vec::new();
        for item in CtlIter::below(base) {
            let name = item.and_then(|c| c.name()).map_err(|e| error(node, e))?;
            if name.starts_with(prefix) {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }
}
