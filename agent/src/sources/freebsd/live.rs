//! The live reader: the one place that calls the kernel, through the `sysctl` crate 0.7.
//! Compiled only on FreeBSD (`mod live` is `cfg(target_os = "freebsd")`).
//!
//! NOT COMPILED IN CI: no FreeBSD Rust target can be installed where zpulse is built, so this
//! file was only type-checked against a stub with the signatures of `sysctl` 0.7.1's unix
//! module (`Ctl`, `CtlIter`, `CtlValue`, `SysctlError`). It is kept to a thin translation;
//! everything it relies on that can be tested on Linux lives in `sysctl.rs`
//! (`split_handler_name`) or in the pure decoders.
//!
//! Limits of `sysctl` 0.7 that shape this file:
//! * A `CTLTYPE_LONG` node is decoded as one long even when the kernel returns an array, so
//!   `kern.cp_time` (5 longs) cannot be read correctly; it is refused with
//!   [`SysctlError::Unsupported`] instead of returning the first element as if it were all.
//! * `value()` sizes the buffer in one call and reads in a second; a node that grows or
//!   shrinks in between (devstat, confxml, txgs) fails with ENOMEM or a short read, which
//!   is retried a few times. EBUSY (devstat generation changed) is retried too.
//! * Names that continue past a node with its own handler (`vm.swap_info.0`,
//!   `net.link.generic.ifdata.3.general`) cannot be resolved by name: the node is resolved
//!   and the numeric tail appended (`split_handler_name`).

use super::sysctl::{Sysctl, SysctlError, SysctlValue, split_handler_name};
use ::sysctl::{Ctl, CtlIter, CtlType, CtlValue, Sysctl as _};
use std::io;

/// errno values (the same numbers on FreeBSD and Linux).
const ENOENT: i32 = 2;
const ENOMEM: i32 = 12;
const EBUSY: i32 = 16;
const ATTEMPTS: usize = 4;

/// Arrays of longs that `sysctl` 0.7 would truncate to their first element.
const LONG_ARRAYS: &[&str] = &["kern.cp_time", "kern.cp_times"];

/// Reads the running kernel's sysctls.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveSysctl;

impl LiveSysctl {
    pub fn new() -> Self {
        LiveSysctl
    }
}

fn ctl(name: &str) -> Result<Ctl, ::sysctl::SysctlError> {
    match split_handler_name(name) {
        Some((node, tail)) => {
            let mut oid = Ctl::new(node)?
                .oid()
                .cloned()
                .ok_or(::sysctl::SysctlError::MissingImplementation)?;
            oid.extend(tail);
            Ok(Ctl::Oid(oid))
        }
        None => Ctl::new(name),
    }
}

fn is_transient(e: &::sysctl::SysctlError) -> bool {
    match e {
        ::sysctl::SysctlError::IoError(io) => {
            matches!(io.raw_os_error(), Some(ENOMEM) | Some(EBUSY))
        }
        ::sysctl::SysctlError::ShortRead { .. } => true,
        _ => false,
    }
}

fn error(name: &str, e: ::sysctl::SysctlError) -> SysctlError {
    let name = name.to_string();
    match e {
        ::sysctl::SysctlError::NotFound(_) => SysctlError::NotFound { name },
        ::sysctl::SysctlError::IoError(io) if io.raw_os_error() == Some(ENOENT) => {
            SysctlError::NotFound { name }
        }
        ::sysctl::SysctlError::IoError(source) => SysctlError::Read { name, source },
        ::sysctl::SysctlError::NoReadAccess => SysctlError::Read {
            name,
            source: io::Error::new(io::ErrorKind::PermissionDenied, "not readable"),
        },
        other => SysctlError::Read {
            name,
            source: io::Error::other(other.to_string()),
        },
    }
}

fn convert(name: &str, v: CtlValue) -> Result<SysctlValue, SysctlError> {
    Ok(match v {
        CtlValue::String(s) => SysctlValue::Text(s),
        CtlValue::Node(b) | CtlValue::Struct(b) => SysctlValue::Bytes(b),
        CtlValue::Int(i) | CtlValue::S32(i) => SysctlValue::Signed(i64::from(i)),
        CtlValue::S64(i) | CtlValue::Long(i) => SysctlValue::Signed(i),
        CtlValue::S8(i) => SysctlValue::Signed(i64::from(i)),
        CtlValue::S16(i) => SysctlValue::Signed(i64::from(i)),
        CtlValue::Uint(u) | CtlValue::U32(u) => SysctlValue::Unsigned(u64::from(u)),
        CtlValue::Ulong(u) | CtlValue::U64(u) => SysctlValue::Unsigned(u),
        CtlValue::U8(u) => SysctlValue::Unsigned(u64::from(u)),
        CtlValue::U16(u) => SysctlValue::Unsigned(u64::from(u)),
        // `None` and, on FreeBSD, `Temperature`: nothing zpulse reads.
        other => {
            return Err(SysctlError::Unsupported {
                name: name.to_string(),
                reason: format!("value of type {:?}", CtlType::from(&other)),
            });
        }
    })
}

impl Sysctl for LiveSysctl {
    fn read(&self, name: &str) -> Result<SysctlValue, SysctlError> {
        if LONG_ARRAYS.contains(&name) {
            return Err(SysctlError::Unsupported {
                name: name.to_string(),
                reason: "the sysctl crate 0.7 decodes a CTLTYPE_LONG array as its first \
                         element only; reading it needs a raw sysctl(3) call"
                    .to_string(),
            });
        }
        let mut attempt = 1;
        loop {
            match ctl(name).and_then(|c| c.value()) {
                Ok(v) => return convert(name, v),
                Err(e) if attempt < ATTEMPTS && is_transient(&e) => attempt += 1,
                Err(e) => return Err(error(name, e)),
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
