//! Sources: everything that reads the kernel, or a capture of it, into a [`Snapshot`].
//!
//! Each source is a pure parser (bytes in, typed value out, no I/O) plus a thin reader that
//! fetches the bytes through a [`Root`] (Linux files) or a [`freebsd::Sysctl`] (FreeBSD
//! sysctls). Both have a live and a capture implementation, so every platform's parsing is
//! tested on Linux against real captures.
//!
//! [`recorded_snapshot`] takes a snapshot through a [`record::Recorder`], which is how
//! `zpulse capture` learns what to write: exactly what the readers read.
//!
//! A source that fails adds a [`zpulse_proto::snapshot::SourceIssue`] to the snapshot and
//! the others go on: one unreadable file never costs the whole sample.

pub mod error;
pub mod freebsd;
pub mod linux;
pub mod nvlist;
pub mod record;
pub mod root;
pub mod zevent;
pub mod zfs_ioctl;
pub mod zpool;

pub use error::ParseError;
pub use root::Root;

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{HostIdentity, Os};

/// Where a snapshot's bytes come from, and what its reader keeps across its snapshots.
pub enum System {
    /// `/proc` and `/sys` below a root: `/` live, or a capture directory.
    Linux(Root, Kept),
    /// Sysctls: live, or `sysctl/<name>` files in a capture. `root` is `/` live (for
    /// `/dev/zfs`) or the capture directory (for its `zfs-ioctl/` replies).
    Freebsd {
        sysctl: Box<dyn freebsd::Sysctl + Send>,
        root: Root,
        kept: Kept,
    },
}

/// What one [`System`] keeps from a snapshot for the next: what does not change while a
/// device stays, and what makes the next round of ioctls (or of a capture's replies) cheaper.
/// A recorded snapshot (a capture being made) uses none of it.
#[derive(Debug, Default)]
pub struct Kept {
    /// The disks' sysfs facts (Linux).
    pub disks: linux::sysblock::KeptFacts,
    /// The module tunables found absent (Linux).
    pub tunables: linux::tunables::KeptAbsence,
    /// Each pool's last POOL_STATS reply, whose size and memory the next one starts from.
    pub replies: zpool::read::KeptReplies,
}

impl System {
    /// The system this process runs on.
    pub fn live() -> System {
        #[cfg(target_os = "freebsd")]
        {
            System::Freebsd {
                sysctl: Box::new(freebsd::sysctl::LiveSysctl),
                root: Root::live().keeping_files(),
                kept: Kept::default(),
            }
        }
        #[cfg(not(target_os = "freebsd"))]
        {
            System::linux(Root::live())
        }
    }

    /// A capture directory of the given operating system.
    pub fn capture(dir: &Path, os: Os) -> System {
        match os {
            Os::Linux => System::linux(Root::new(dir)),
            Os::Freebsd => {
                // One root for the sysctl files and the replies: one set of kept files, swept
                // at each snapshot's end.
                let root = Root::new(dir).keeping_files();
                System::Freebsd {
                    sysctl: Box::new(freebsd::CaptureSysctl::new(root.clone())),
                    root,
                    kept: Kept::default(),
                }
            }
        }
    }

    /// The Linux system below `root`, nothing kept yet; the files it reads are kept open
    /// from one snapshot to the next ([`root::KeptFiles`]).
    pub fn linux(root: Root) -> System {
        System::Linux(root.keeping_files(), Kept::default())
    }

    pub fn os(&self) -> Os {
        match self {
            System::Linux(..) => Os::Linux,
            System::Freebsd { .. } => Os::Freebsd,
        }
    }

    /// Host name and kernel release as the running kernel reports them.
    pub fn identity(&self) -> HostIdentity {
        match self {
            System::Linux(root, _) => HostIdentity {
                hostname: root
                    .read_trimmed("proc/sys/kernel/hostname")
                    .unwrap_or_default(),
                os: Os::Linux,
                kernel: root.read_trimmed("proc/sys/kernel/osrelease").ok(),
                zfs_version: None,
            },
            System::Freebsd { sysctl, .. } => HostIdentity {
                hostname: sysctl.text("kern.hostname").unwrap_or_default(),
                os: Os::Freebsd,
                kernel: sysctl.text("kern.osrelease").ok(),
                zfs_version: None,
            },
        }
    }
}

/// Reads every source of `system` into one snapshot stamped with the current time.
pub fn snapshot(system: &System, identity: HostIdentity) -> Snapshot {
    match system {
        System::Linux(root, kept) => read(Through::Linux(root, Some(kept)), identity),
        System::Freebsd { sysctl, root, kept } => read(
            Through::Freebsd(sysctl.as_ref(), root, Some(kept)),
            identity,
        ),
    }
}

/// [`snapshot`], and everything it read on the way: every file with the bytes it returned,
/// every directory listed, every probe, every sysctl (see [`record`]).
pub fn recorded_snapshot(system: &System, identity: HostIdentity) -> (Snapshot, record::Recording) {
    let recorder = record::Recorder::new();
    let snap = match system {
        // A capture records a full read: nothing kept is used.
        System::Linux(root, _) => read(Through::Linux(&root.recorded(&recorder), None), identity),
        System::Freebsd { sysctl, root, .. } => {
            let sysctl = record::RecordingSysctl::new(sysctl.as_ref(), &recorder);
            read(
                Through::Freebsd(&sysctl, &root.recorded(&recorder), None),
                identity,
            )
        }
    };
    (snap, recorder.take())
}

/// What one snapshot is read through: a [`System`]'s parts, or the same recorded.
enum Through<'a> {
    /// Files below the root (and `/dev/zfs` or a capture's replies), and what was kept from
    /// earlier snapshots, if it may be used.
    Linux(&'a Root, Option<&'a Kept>),
    /// Sysctls, the root for `/dev/zfs` or a capture's replies, and what was kept.
    Freebsd(&'a dyn freebsd::Sysctl, &'a Root, Option<&'a Kept>),
}

fn read(through: Through<'_>, identity: HostIdentity) -> Snapshot {
    let mut snap = Snapshot {
        taken_at: unix_now(),
        monotonic: Some(monotonic_now()),
        host: identity,
        ..Snapshot::default()
    };
    let root = match through {
        Through::Linux(root, kept) => {
            linux::collect(root, kept, &mut snap);
            let replies = kept.map(|k| &k.replies);
            zpool::read::read(root, zfs_ioctl::Platform::Linux, None, replies, &mut snap);
            root
        }
        Through::Freebsd(sysctl, root, kept) => {
            freebsd::collect(sysctl, &mut snap);
            let abi = sysctl.u64("vfs.zfs.version.ioctl").ok();
            let replies = kept.map(|k| &k.replies);
            zpool::read::read(root, zfs_ioctl::Platform::Freebsd, abi, replies, &mut snap);
            root
        }
    };
    root.sweep_kept_files();
    snap
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Seconds on a monotonic clock that starts with the process; only differences matter.
fn monotonic_now() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}
