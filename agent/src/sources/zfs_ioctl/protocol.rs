//! The calling sequence of the two pool ioctls (docs/zfs-sources.md, "Pool statistics from `/dev/zfs`"), independent of how
//! the system call is made.

use super::layout::{CmdBuffer, Platform, Request};
use std::fmt;

/// One way to issue a ZFS ioctl: the real device, or a test double of the kernel.
pub trait Ioctl {
    fn platform(&self) -> Platform;
    /// Issues `request` with `cmd`; `Err(errno)` on failure. The kernel copies the command
    /// back even on failure, so `cmd` is meaningful either way.
    fn call(&mut self, request: Request, cmd: &mut CmdBuffer) -> Result<(), i32>;
}

/// libzfs starts POOL_CONFIGS at 256 KiB and POOL_STATS at 64 KiB.
const CONFIGS_START: usize = 256 << 10;
/// The buffer of a pool's first POOL_STATS call, when nothing better is known.
pub const STATS_START: usize = 64 << 10;
/// ENOMEM can be a real allocation failure, not only "buffer too small": never follow a
/// size request past this, nor retry forever.
pub const MAX_REPLY: usize = 64 << 20;
const MAX_TRIES: usize = 8;

#[derive(Debug)]
pub enum IoctlError {
    /// `/dev/zfs` could not be opened.
    Open {
        path: String,
        error: std::io::Error,
    },
    /// FreeBSD's `vfs.zfs.version.ioctl` is not the OpenZFS ABI this code speaks.
    UnsupportedAbi {
        found: Option<u64>,
    },
    /// The pool name does not fit `zc_name` or contains NUL.
    BadPoolName(String),
    /// The pool was exported or destroyed between listing and asking.
    PoolGone(String),
    /// The reply would exceed the call's limit ([`MAX_REPLY`] for the pool calls), or kept
    /// growing.
    ReplyTooLarge {
        call: &'static str,
        needed: u64,
        limit: usize,
    },
    Errno {
        call: &'static str,
        errno: i32,
    },
    /// The kernel refused the call for a reason that is not the caller's bug (a privilege,
    /// a layout it does not know, a module going away), said in words.
    Refused {
        call: &'static str,
        why: &'static str,
    },
}

/// Who makes `/dev/zfs` mode 0666, so what to check when opening it is refused: on Linux
/// OpenZFS's udev rule (udev/rules.d/90-zfs.rules.in); on FreeBSD the module itself
/// (module/os/freebsd/zfs/kmod_core.c, `zfsdev_attach`: `mda_mode = 0666`), so a refusal
/// comes from a devfs ruleset (devfs.rules(5), or a jail's `devfs_ruleset`).
fn permission_advice(freebsd: bool) -> &'static str {
    if freebsd {
        "zfs.ko creates it mode 0666 — check the devfs rules (devfs.rules(5); in a jail, \
         its devfs_ruleset must unhide zfs)"
    } else {
        "OpenZFS's udev rule makes it mode 0666 — check that 90-zfs.rules is installed"
    }
}

impl fmt::Display for IoctlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoctlError::Open { path, error } => match error.kind() {
                std::io::ErrorKind::NotFound => write!(
                    f,
                    "{path} does not exist: the ZFS module is not loaded; per-vdev statistics are not reported"
                ),
                std::io::ErrorKind::PermissionDenied => write!(
                    f,
                    "{path}: permission denied; {} (per-vdev statistics are not reported)",
                    permission_advice(cfg!(target_os = "freebsd"))
                ),
                _ => write!(f, "{path}: {error}"),
            },
            IoctlError::UnsupportedAbi { found } => write!(
                f,
                "vfs.zfs.version.ioctl is {}, but zpulse speaks the OpenZFS ioctl ABI 15 \
                 (FreeBSD 13 or later); per-vdev statistics are not reported",
                found.map_or_else(|| "missing".into(), |v| v.to_string())
            ),
            IoctlError::BadPoolName(name) => {
                write!(f, "pool name {name:?} cannot be passed to the kernel")
            }
            IoctlError::PoolGone(name) => write!(f, "pool {name} disappeared while being read"),
            IoctlError::ReplyTooLarge {
                call,
                needed,
                limit,
            } => write!(
                f,
                "{call}: the kernel asked for a {needed}-byte buffer, more than the {limit}-byte limit"
            ),
            IoctlError::Refused { call, why } => write!(f, "{call}: {why}"),
            IoctlError::Errno { call, errno } => write!(
                f,
                "{call} failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
        }
    }
}

impl std::error::Error for IoctlError {}

/// The answer of `ZFS_IOC_POOL_CONFIGS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolConfigs {
    /// EEXIST: no pool was imported or exported since `generation`.
    Unchanged,
    /// The packed nvlist `{pool name → config}` and the namespace generation to pass next time.
    Changed { generation: u64, packed: Vec<u8> },
}

/// The answer of `ZFS_IOC_POOL_STATS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolStats {
    /// The pool config with statistics, as a packed nvlist.
    pub packed: Vec<u8>,
    /// The pool's real error (`zc_cookie`): 0 when healthy, an errno for a faulted pool whose
    /// config is still returned.
    pub error: u64,
    /// `zc_value`: the altroot, if any.
    pub altroot: Option<String>,
}

/// Lists the imported pools; `generation` is what the last call returned (0 the first time).
pub fn pool_configs(dev: &mut dyn Ioctl, generation: u64) -> Result<PoolConfigs, IoctlError> {
    match call_growing(
        dev,
        Request::PoolConfigs,
        "",
        generation,
        (CONFIGS_START, MAX_REPLY),
        Vec::new(),
        &|_| {},
    ) {
        Ok((packed, cmd)) => Ok(PoolConfigs::Changed {
            generation: cmd.cookie(),
            packed,
        }),
        Err(IoctlError::Errno { errno, .. }) if errno == libc::EEXIST => Ok(PoolConfigs::Unchanged),
        Err(e) => Err(e),
    }
}

/// The buffer to start a pool's POOL_STATS call with when its last reply was `last` bytes:
/// that and an eighth more (a reply grows with a scan's progress, the error log, a new vdev).
/// A buffer too small costs a second call, and the kernel builds the pool's whole config
/// again for it (`spa_get_stats` on each try): a pool of 15 vdevs already replies with
/// 77,632 bytes (the lab capture), more than [`STATS_START`].
pub fn stats_buffer_after(last: usize) -> usize {
    last.saturating_add(last / 8).clamp(STATS_START, MAX_REPLY)
}

/// The configuration and statistics of one pool, asked with a `start`-byte buffer first
/// ([`STATS_START`], or [`stats_buffer_after`] its last reply).
pub fn pool_stats(dev: &mut dyn Ioctl, pool: &str, start: usize) -> Result<PoolStats, IoctlError> {
    pool_stats_into(dev, pool, start, Vec::new())
}

/// [`pool_stats`] into `buffer`, whose memory the reply reuses (its bytes are overwritten):
/// a reader that keeps each pool's last reply hands it back here.
pub fn pool_stats_into(
    dev: &mut dyn Ioctl,
    pool: &str,
    start: usize,
    buffer: Vec<u8>,
) -> Result<PoolStats, IoctlError> {
    refuse_unfit_name(dev, pool)?;
    let start = start.clamp(1, MAX_REPLY);
    match call_growing(
        dev,
        Request::PoolStats,
        pool,
        0,
        (start, MAX_REPLY),
        buffer,
        &|_| {},
    ) {
        Ok((packed, cmd)) => {
            let altroot = cmd.value();
            Ok(PoolStats {
                packed,
                error: cmd.cookie(),
                altroot: (!altroot.is_empty()).then_some(altroot),
            })
        }
        Err(IoctlError::Errno { errno, .. }) if errno == libc::ENOENT || errno == libc::EINVAL => {
            Err(IoctlError::PoolGone(pool.to_string()))
        }
        Err(e) => Err(e),
    }
}

/// A name with a NUL, or too long for `zc_name` with its terminator, never reaches the kernel.
fn refuse_unfit_name(dev: &dyn Ioctl, name: &str) -> Result<(), IoctlError> {
    if name.contains('\0') || name.len() >= dev.platform().name_capacity() {
        return Err(IoctlError::BadPoolName(name.to_string()));
    }
    Ok(())
}

/// The first buffer of an OBJSET_STATS call: a root dataset's properties pack into a few
/// KiB (one nvlist per property, `dsl_prop_get_all` and `dsl_dataset_stats`); a dataset with
/// many user properties makes the kernel ask for more.
const OBJSET_STATS_START: usize = 16 << 10;

/// The properties of dataset `name` (`ZFS_IOC_OBJSET_STATS`, `zfs_ioc_objset_stats` in
/// module/zfs/zfs_ioctl.c: `dsl_prop_get_all`, then `dmu_objset_stats` adds the statistics
/// such as `creation`), as the packed nvlist `{property → {value, source}}` that `zfs get`
/// reads through libzfs (`get_stats_ioctl`, lib/libzfs/libzfs_dataset.c). A read ioctl
/// (`zfs_secpolicy_read`: any process in the global zone).
pub fn objset_stats(dev: &mut dyn Ioctl, name: &str) -> Result<Vec<u8>, IoctlError> {
    refuse_unfit_name(dev, name)?;
    match call_growing(
        dev,
        Request::ObjsetStats,
        name,
        0,
        (OBJSET_STATS_START, MAX_REPLY),
        Vec::new(),
        &|_| {},
    ) {
        Ok((packed, _)) => Ok(packed),
        // zfs_secpolicy_read answers ENOENT too for a dataset this jail or zone cannot see.
        Err(IoctlError::Errno { errno, .. }) if errno == libc::ENOENT => Err(IoctlError::Refused {
            call: "ZFS_IOC_OBJSET_STATS",
            why: "no such dataset visible here (the pool was exported or destroyed, or this \
                  jail or zone does not see it)",
        }),
        Err(e) => Err(e),
    }
}

/// Issues `request` with a reply buffer of `start` bytes, growing it up to `limit` bytes as
/// the kernel asks (ENOMEM with the needed size in `zc_nvlist_dst_size`). Each try starts from a fresh command (`fill` sets what the
/// request needs beyond the name, buffer and cookie), so the cookie the kernel overwrote
/// before failing is reset. The reply is written into `dst`'s memory: only the
/// bytes past its length are zeroed when it is sized for a try, so a buffer kept from the
/// last reply costs no allocation and no page faults.
pub(super) fn call_growing(
    dev: &mut dyn Ioctl,
    request: Request,
    name: &str,
    cookie: u64,
    (start, limit): (usize, usize),
    mut dst: Vec<u8>,
    fill: &dyn Fn(&mut CmdBuffer),
) -> Result<(Vec<u8>, CmdBuffer), IoctlError> {
    let call = match request {
        Request::PoolConfigs => "ZFS_IOC_POOL_CONFIGS",
        Request::PoolStats => "ZFS_IOC_POOL_STATS",
        Request::ObjsetStats => "ZFS_IOC_OBJSET_STATS",
        Request::DsobjToDsname => "ZFS_IOC_DSOBJ_TO_DSNAME",
        Request::ObjToPath => "ZFS_IOC_OBJ_TO_PATH",
        Request::EventsNext => "ZFS_IOC_EVENTS_NEXT",
        Request::EventsSeek => "ZFS_IOC_EVENTS_SEEK",
    };
    let mut size = start;
    for _ in 0..MAX_TRIES {
        dst.resize(size, 0);
        let mut cmd = CmdBuffer::new(dev.platform(), name, dst.as_mut_ptr(), size, cookie);
        fill(&mut cmd);
        let result = dev.call(request, &mut cmd);
        let reported = cmd.nvlist_dst_size();
        // FreeBSD's libzfs_core treats "success but larger than the buffer" as ENOMEM.
        let too_small = matches!(result, Err(e) if e == libc::ENOMEM)
            || (result.is_ok() && reported > size as u64);
        if too_small {
            if reported > limit as u64 {
                return Err(IoctlError::ReplyTooLarge {
                    call,
                    needed: reported,
                    limit,
                });
            }
            // A kernel that reports no larger size still gets a bigger buffer, so the loop
            // always makes progress.
            size = (reported as usize).max(size.saturating_mul(2)).min(limit);
            continue;
        }
        return match result {
            Ok(()) => {
                dst.truncate(reported as usize);
                Ok((dst, cmd))
            }
            Err(errno) => Err(IoctlError::Errno { call, errno }),
        };
    }
    Err(IoctlError::ReplyTooLarge {
        call,
        needed: size as u64,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel double that behaves as `put_nvlist` does: ENOMEM with the needed size when the
    /// caller's buffer is too small, the packed bytes otherwise, and the cookie rules of
    /// `spa_all_configs`.
    struct FakeKernel {
        reply: Vec<u8>,
        generation: u64,
        calls: Vec<(Request, u64, u64)>,
        errno: Option<i32>,
    }

    impl Ioctl for FakeKernel {
        fn platform(&self) -> Platform {
            Platform::Linux
        }

        fn call(&mut self, request: Request, cmd: &mut CmdBuffer) -> Result<(), i32> {
            let p = self.platform();
            let bytes = cmd.bytes_mut();
            let read =
                |b: &[u8], off: usize| u64::from_ne_bytes(b[off..off + 8].try_into().unwrap());
            let (dst, size, cookie) = (
                read(bytes, p.nvlist_dst()),
                read(bytes, p.nvlist_dst_size()),
                read(bytes, p.cookie()),
            );
            self.calls.push((request, size, cookie));
            if let Some(e) = self.errno {
                return Err(e);
            }
            if request == Request::PoolConfigs {
                if cookie == self.generation {
                    return Err(libc::EEXIST);
                }
                // The kernel stores the new generation before it packs.
                bytes[p.cookie()..p.cookie() + 8].copy_from_slice(&self.generation.to_ne_bytes());
            }
            bytes[p.nvlist_dst_size()..p.nvlist_dst_size() + 8]
                .copy_from_slice(&(self.reply.len() as u64).to_ne_bytes());
            if (self.reply.len() as u64) > size {
                return Err(libc::ENOMEM);
            }
            // The "user pointer" is the Vec the protocol allocated; copy as copyout would.
            let dst = dst as usize as *mut u8;
            // SAFETY: test double of the kernel's copyout: `dst` is the live buffer of `size`
            // bytes that call_growing passed, and the reply fits (checked above).
            unsafe { std::ptr::copy_nonoverlapping(self.reply.as_ptr(), dst, self.reply.len()) };
            Ok(())
        }
    }

    /// On FreeBSD no udev rule exists: the message must name what makes the device
    /// unreadable there (a devfs ruleset), and on Linux the udev rule.
    #[test]
    fn permission_advice_names_each_systems_own_mechanism() {
        let freebsd = permission_advice(true);
        assert!(
            freebsd.contains("devfs") && !freebsd.contains("udev"),
            "{freebsd}"
        );
        let linux = permission_advice(false);
        assert!(linux.contains("90-zfs.rules"), "{linux}");
        let e = IoctlError::Open {
            path: "/dev/zfs".into(),
            error: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let text = e.to_string();
        assert!(text.starts_with("/dev/zfs: permission denied; "), "{text}");
        assert!(text.contains(permission_advice(cfg!(target_os = "freebsd"))));
    }

    fn kernel(reply_len: usize) -> FakeKernel {
        FakeKernel {
            reply: (0..reply_len).map(|i| i as u8).collect(),
            generation: 3,
            calls: vec![],
            errno: None,
        }
    }

    #[test]
    fn a_remembered_reply_size_never_asks_for_less_than_the_start_or_more_than_the_limit() {
        assert_eq!(stats_buffer_after(0), STATS_START);
        assert_eq!(stats_buffer_after(77_632), 77_632 + 9_704);
        // A kernel that once claimed an absurd size cannot make every later call allocate it.
        assert_eq!(stats_buffer_after(MAX_REPLY), MAX_REPLY);
        assert_eq!(stats_buffer_after(usize::MAX), MAX_REPLY);
    }

    #[test]
    fn enomem_grows_to_the_size_the_kernel_asks_for() {
        let mut k = kernel(300_000);
        let stats = pool_stats(&mut k, "tank", STATS_START).unwrap();
        assert_eq!(stats.packed, k.reply);
        assert_eq!(
            k.calls.iter().map(|c| c.1).collect::<Vec<_>>(),
            vec![65_536, 300_000]
        );
    }

    #[test]
    fn configs_reset_the_cookie_on_retry_and_return_the_generation() {
        let mut k = kernel(400_000);
        let r = pool_configs(&mut k, 0).unwrap();
        assert_eq!(
            r,
            PoolConfigs::Changed {
                generation: 3,
                packed: k.reply.clone()
            }
        );
        assert!(
            k.calls.iter().all(|c| c.2 == 0),
            "each retry sends the caller's cookie"
        );
        assert_eq!(pool_configs(&mut k, 3).unwrap(), PoolConfigs::Unchanged);
    }

    #[test]
    fn absurd_sizes_are_refused() {
        let mut k = kernel(MAX_REPLY + 1);
        assert!(matches!(
            pool_stats(&mut k, "tank", STATS_START),
            Err(IoctlError::ReplyTooLarge { .. })
        ));
    }

    #[test]
    fn a_vanished_pool_is_named() {
        let mut k = kernel(10);
        k.errno = Some(libc::ENOENT);
        let e = pool_stats(&mut k, "gone", STATS_START).unwrap_err();
        assert_eq!(e.to_string(), "pool gone disappeared while being read");
    }

    /// OBJSET_STATS follows the same ENOMEM protocol from its own first buffer (16 KiB), with
    /// no cookie; a dataset that is gone or hidden (ENOENT) is said so; unfit names never reach
    /// the kernel.
    #[test]
    fn objset_stats_grows_like_the_pool_calls_and_names_a_missing_dataset() {
        let mut k = kernel(20_000);
        assert_eq!(objset_stats(&mut k, "tank").unwrap(), k.reply);
        assert_eq!(
            k.calls,
            [
                (Request::ObjsetStats, 16_384, 0),
                (Request::ObjsetStats, 32_768, 0)
            ]
        );
        k.errno = Some(libc::ENOENT);
        let e = objset_stats(&mut k, "gone").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("ZFS_IOC_OBJSET_STATS: no such dataset visible here"),
            "{e}"
        );
        k.calls.clear();
        assert!(matches!(
            objset_stats(&mut k, "a\0b"),
            Err(IoctlError::BadPoolName(_))
        ));
        assert!(k.calls.is_empty());
    }

    #[test]
    fn names_that_cannot_reach_the_kernel_are_refused() {
        let mut k = kernel(10);
        assert!(matches!(
            pool_stats(&mut k, "a\0b", STATS_START),
            Err(IoctlError::BadPoolName(_))
        ));
        assert!(matches!(
            pool_stats(&mut k, &"x".repeat(5000), STATS_START),
            Err(IoctlError::BadPoolName(_))
        ));
        assert!(k.calls.is_empty());
    }
}
