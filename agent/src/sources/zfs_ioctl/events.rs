//! The kernel's event queue through `/dev/zfs`: `ZFS_IOC_EVENTS_NEXT` and
//! `ZFS_IOC_EVENTS_SEEK` (docs/zfs-sources.md, "Kernel events"), as libzfs's
//! `zpool_events_next` and `zpool_events_seek` issue them.
//!
//! The queue is the kernel's, one for the whole system (`module/zfs/fm.c`): reading never
//! takes an event away from anyone. Each open descriptor of `/dev/zfs` has its own cursor
//! (`zfs_zevent_fd_hold` finds it from `zc_cleanup_fd`), which starts before the oldest event;
//! `EVENTS_NEXT` returns the event after the cursor and moves it there, and `EVENTS_SEEK`
//! moves it onto the event with a given id. ZED, FreeBSD's zfsd and `zpool events` each hold
//! their own. The kernel keeps at most `zfs_zevent_len_max` events (512 in 2.1); the oldest
//! goes when a new one comes, and a reader whose cursor was on it is told so in
//! `zc_cookie` (its dropped count, with the events the rate limiter dropped).

use super::layout::{CmdBuffer, Request, ZEVENT_NONBLOCK};
use super::protocol::{Ioctl, IoctlError, call_growing};

/// Every event fits this on its first try: the kernel refuses to queue one whose nvlist is
/// larger than `ERPT_DATA_SZ`, 6 KiB (`include/sys/fm/util.h`, checked in
/// `zfs_zevent_post`).
pub const EVENT_START: usize = 8 << 10;

/// The largest event read: ten times what the kernel queues (a kernel claiming more for one
/// event is wrong, and the reader skips that event rather than allocate what it says). The
/// plugins' limit too ([`zpulse_proto::abi::ZEVENT_MAX_BYTES`]), so every event read can
/// reach them.
pub const EVENT_MAX: usize = zpulse_proto::abi::ZEVENT_MAX_BYTES;

/// One answer of `ZFS_IOC_EVENTS_NEXT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The packed nvlist of the next event, and the events the kernel says this cursor
    /// missed since its last read (`zc_cookie`).
    Event { packed: Vec<u8>, dropped: u64 },
    /// No event after the cursor (only when asked not to wait).
    Empty,
}

/// Reads the event after `cursor_fd`'s cursor. `wait`: block until one is posted, as ZED
/// does (the call returns at once when one is there); otherwise answer [`Next::Empty`].
/// A signal that interrupts the wait is not an error: the caller asks again.
pub fn events_next(dev: &mut dyn Ioctl, cursor_fd: i32, wait: bool) -> Result<Next, IoctlError> {
    let flags = if wait { 0 } else { ZEVENT_NONBLOCK };
    let fill = |cmd: &mut CmdBuffer| {
        cmd.set_guid(flags);
        cmd.set_cleanup_fd(cursor_fd);
    };
    match call_growing(
        dev,
        Request::EventsNext,
        "",
        0,
        (EVENT_START, EVENT_MAX),
        Vec::new(),
        &fill,
    ) {
        Ok((packed, cmd)) => Ok(Next::Event {
            packed,
            dropped: cmd.cookie(),
        }),
        Err(IoctlError::Errno { errno, .. }) if errno == libc::ENOENT || errno == libc::EINTR => {
            Ok(Next::Empty)
        }
        Err(e) => Err(events_error(e)),
    }
}

/// Moves `cursor_fd`'s cursor onto the event `eid`, so that the next read returns the one
/// after it. `Ok(false)`: no such event is queued any more (it was dropped, or the module
/// was reloaded and the ids began again); the cursor is then where it was.
pub fn events_seek(dev: &mut dyn Ioctl, cursor_fd: i32, eid: u64) -> Result<bool, IoctlError> {
    let mut cmd = CmdBuffer::new(dev.platform(), "", std::ptr::null_mut(), 0, 0);
    cmd.set_guid(eid);
    cmd.set_cleanup_fd(cursor_fd);
    match dev.call(Request::EventsSeek, &mut cmd) {
        Ok(()) => Ok(true),
        Err(errno) if errno == libc::ENOENT => Ok(false),
        Err(errno) => Err(events_error(IoctlError::Errno {
            call: "ZFS_IOC_EVENTS_SEEK",
            errno,
        })),
    }
}

/// The errors the events ioctls have that the pool ioctls do not, in words.
fn events_error(e: IoctlError) -> IoctlError {
    match e {
        IoctlError::Errno { call, errno } if errno == libc::EPERM => IoctlError::Refused {
            call,
            why: if cfg!(target_os = "freebsd") {
                "reading the kernel's event queue needs root (PRIV_ZFS_POOL_CONFIG)"
            } else {
                "reading the kernel's event queue needs CAP_SYS_ADMIN (the zpulse unit grants \
                 it; zfs_secpolicy_config)"
            },
        },
        IoctlError::Errno { call, errno } if errno == libc::EBADF => IoctlError::Refused {
            call,
            why: "the kernel did not find the event cursor's descriptor: this OpenZFS \
                  version's zfs_cmd_t puts zc_cleanup_fd where zpulse does not know",
        },
        IoctlError::Errno { call, errno } if errno == libc::ESHUTDOWN => IoctlError::Refused {
            call,
            why: "the ZFS module is being unloaded",
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::zfs_ioctl::fake::FakeQueue as Queue;

    fn queue(sizes: &[usize]) -> Queue {
        Queue::new(
            sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| (i as u64 + 1, vec![i as u8; n]))
                .collect(),
        )
    }

    #[test]
    fn events_are_read_in_order_and_a_large_one_after_the_size_the_kernel_asks_for() {
        let mut q = queue(&[100, 20_000, 50]);
        q.dropped = 3;
        let got: Vec<Next> = (0..4)
            .map(|_| events_next(&mut q, 9, false).unwrap())
            .collect();
        assert_eq!(
            got[0],
            Next::Event {
                packed: vec![0; 100],
                dropped: 3
            }
        );
        assert_eq!(
            got[1],
            Next::Event {
                packed: vec![1; 20_000],
                dropped: 0
            }
        );
        assert!(matches!(&got[2], Next::Event { packed, .. } if packed.len() == 50));
        assert_eq!(got[3], Next::Empty);
        // Every call names the cursor at both offsets and asks not to wait; the large event
        // took two calls (ENOMEM, then the size asked), the cursor staying for the second.
        assert_eq!(q.calls.len(), 5);
        assert!(
            q.calls
                .iter()
                .all(|c| c == &(Request::EventsNext, ZEVENT_NONBLOCK, 9, 9))
        );
    }

    #[test]
    fn a_blocking_read_sends_no_flag() {
        let mut q = queue(&[10]);
        events_next(&mut q, 4, true).unwrap();
        assert_eq!(q.calls[0].1, 0);
    }

    #[test]
    fn seeking_finds_a_queued_event_or_says_it_is_gone() {
        let mut q = queue(&[10, 11, 12]);
        assert!(events_seek(&mut q, 5, 2).unwrap());
        assert!(matches!(events_next(&mut q, 5, false).unwrap(),
            Next::Event { packed, .. } if packed == vec![2u8; 12]));
        assert!(!events_seek(&mut q, 5, 99).unwrap());
        assert_eq!(q.calls[0], (Request::EventsSeek, 2, 5, 5));
    }

    #[test]
    fn privilege_and_layout_refusals_say_what_to_do() {
        let mut q = queue(&[10]);
        q.fail = Some(libc::EPERM);
        let e = events_next(&mut q, 3, false).unwrap_err().to_string();
        assert!(
            e.contains("ZFS_IOC_EVENTS_NEXT") && e.contains("needs"),
            "{e}"
        );
        q.fail = Some(libc::EBADF);
        let e = events_seek(&mut q, 3, 1).unwrap_err().to_string();
        assert!(e.contains("zc_cleanup_fd"), "{e}");
        q.fail = Some(libc::EINTR);
        assert_eq!(events_next(&mut q, 3, true).unwrap(), Next::Empty);
    }
}
