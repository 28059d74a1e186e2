//! `/dev/zfs` and the `ioctl(2)` call: the only `unsafe` in the sources.

use super::layout::{self, CmdBuffer, Platform, Request};
use super::protocol::{Ioctl, IoctlError};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

pub const DEVICE: &str = "/dev/zfs";

/// An open `/dev/zfs`. It needs no privilege: the device is mode 0666 (udev rule on Linux,
/// `make_dev_s` on FreeBSD) and both ioctls are `secpolicy_none`/`secpolicy_read`.
pub struct ZfsDevice {
    file: File,
    platform: Platform,
}

impl ZfsDevice {
    /// Opens the device read-write as libzfs does (the kernel ignores the mode). On FreeBSD
    /// the caller passes `vfs.zfs.version.ioctl`, which must be 15.
    pub fn open(
        path: &Path,
        platform: Platform,
        freebsd_abi: Option<u64>,
    ) -> Result<Self, IoctlError> {
        if platform == Platform::Freebsd
            && freebsd_abi != Some(u64::from(layout::FREEBSD_IOCTL_VERSION))
        {
            return Err(IoctlError::UnsupportedAbi { found: freebsd_abi });
        }
        // std opens with O_CLOEXEC.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|error| IoctlError::Open {
                path: path.display().to_string(),
                error,
            })?;
        Ok(ZfsDevice { file, platform })
    }
}

impl ZfsDevice {
    /// The descriptor whose event cursor the events ioctls move (`zc_cleanup_fd`): each
    /// open of `/dev/zfs` has its own, so this device's never moves anyone else's.
    pub fn cursor_fd(&self) -> i32 {
        self.file.as_raw_fd()
    }
}

impl Ioctl for ZfsDevice {
    fn platform(&self) -> Platform {
        self.platform
    }

    fn call(&mut self, request: Request, cmd: &mut CmdBuffer) -> Result<(), i32> {
        let fd = self.file.as_raw_fd();
        let number = self.platform.request(request);
        let rc = match self.platform {
            Platform::Linux => {
                // SAFETY: `cmd` is a zeroed buffer larger than any kernel's zfs_cmd_t (the
                // kernel copies its own sizeof in and out); the nvlist_dst pointer inside it
                // refers to a live Vec of exactly nvlist_dst_size bytes, owned by the caller
                // for the duration of this call.
                unsafe { libc::ioctl(fd, number as _, cmd.as_mut_ptr()) }
            }
            Platform::Freebsd => {
                let mut parm = layout::iocparm(cmd.as_mut_ptr(), cmd.len());
                // SAFETY: `parm` is a zfs_iocparm_t pointing at `cmd` (valid as above); both
                // outlive the call, and the kernel checks IOCPARM_LEN == 24.
                unsafe { libc::ioctl(fd, number as _, parm.as_mut_ptr()) }
            }
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_device_says_zfs_is_not_loaded() {
        let e = ZfsDevice::open(Path::new("/nonexistent/zfs"), Platform::Linux, None)
            .err()
            .unwrap();
        assert!(e.to_string().contains("ZFS module is not loaded"), "{e}");
    }

    #[test]
    fn freebsd_needs_the_openzfs_ioctl_abi() {
        let e = ZfsDevice::open(Path::new("/dev/null"), Platform::Freebsd, Some(7))
            .err()
            .unwrap();
        assert!(e.to_string().contains("is 7"), "{e}");
    }

    #[test]
    fn a_device_that_is_not_zfs_answers_with_an_errno() {
        // /dev/null accepts the open but not the request: the error path of the real syscall.
        let mut dev = ZfsDevice::open(Path::new("/dev/null"), Platform::Linux, None).unwrap();
        let e = super::super::protocol::pool_configs(&mut dev, 0).unwrap_err();
        assert!(
            e.to_string().starts_with("ZFS_IOC_POOL_CONFIGS failed"),
            "{e}"
        );
    }
}
