//! Byte layout of `zfs_cmd_t` (x86_64 / amd64) and of FreeBSD's `zfs_iocparm_t` wrapper
//! (docs/zfs-sources.md, "Pool statistics from `/dev/zfs`").
//!
//! Every field zpulse touches sits before `zc_inject_record` and has not moved from OpenZFS
//! 0.8 to 2.4; the size of the whole struct has (13736 … 13760 bytes on Linux). The kernel
//! copies *its own* `sizeof(zfs_cmd_t)` in and out, so the command buffer is a zeroed block
//! larger than any version's struct: no kernel can read or write past it.

/// Which kernel's layout to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    Freebsd,
}

/// `ZFS_IOC_POOL_CONFIGS` and `ZFS_IOC_POOL_STATS` are entries 4 and 5 of the ioctl table,
/// `ZFS_IOC_OBJSET_STATS` entry 0x12, `ZFS_IOC_DSOBJ_TO_DSNAME` and `ZFS_IOC_OBJ_TO_PATH`
/// entries 0x24 and 0x25; `ZFS_IOC_EVENTS_NEXT` and `ZFS_IOC_EVENTS_SEEK` entries 0x81 and 0x83, the first of the
/// platform range (`ZFS_IOC_PLATFORM = ZFS_IOC_FIRST + 0x80`, `include/sys/fs/zfs.h`), which
/// `zfs_ioctl_init` registers on every platform, FreeBSD included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    PoolConfigs,
    PoolStats,
    ObjsetStats,
    DsobjToDsname,
    ObjToPath,
    EventsNext,
    EventsSeek,
}

/// `zc_guid` flag of `ZFS_IOC_EVENTS_NEXT`: answer ENOENT at once instead of waiting for an
/// event (`ZEVENT_NONBLOCK`, `include/sys/fs/zfs.h`).
pub const ZEVENT_NONBLOCK: u64 = 0x1;
/// `zc_guid` of `ZFS_IOC_EVENTS_SEEK`: back to the oldest event (`ZEVENT_SEEK_START`).
pub const ZEVENT_SEEK_START: u64 = 0;

/// FreeBSD's `ZFS_IOCVER_OZFS`: the only `vfs.zfs.version.ioctl` this layout is for.
pub const FREEBSD_IOCTL_VERSION: u32 = 15;

/// Size of `zfs_iocparm_t` on amd64.
pub const IOCPARM_SIZE: usize = 24;

impl Platform {
    /// `MAXPATHLEN`: the only platform difference in `zfs_cmd_t`.
    const fn maxpathlen(self) -> usize {
        match self {
            Platform::Linux => 4096,
            Platform::Freebsd => 1024,
        }
    }

    /// Size of the zeroed command buffer: at least 16 KiB on Linux, 8 KiB on FreeBSD.
    pub const fn cmd_buffer_size(self) -> usize {
        match self {
            Platform::Linux => 16 << 10,
            Platform::Freebsd => 8 << 10,
        }
    }

    /// `zc_name`: the pool name, NUL-terminated, MAXPATHLEN bytes.
    pub const fn name_offset(self) -> usize {
        0
    }

    pub const fn name_capacity(self) -> usize {
        self.maxpathlen()
    }

    /// `zc_nvlist_dst` (u64 user pointer).
    pub const fn nvlist_dst(self) -> usize {
        self.maxpathlen() + 16
    }

    /// `zc_nvlist_dst_size` (u64): in, the buffer size; out, the packed size or, on ENOMEM,
    /// the size needed.
    pub const fn nvlist_dst_size(self) -> usize {
        self.maxpathlen() + 24
    }

    /// `zc_value` (char[2·MAXPATHLEN]): the altroot, out of POOL_STATS.
    pub const fn value(self) -> usize {
        self.maxpathlen() + 48
    }

    /// `zc_cookie` (u64): POOL_CONFIGS generation in/out; POOL_STATS the pool's real error.
    pub const fn cookie(self) -> usize {
        // After zc_value (2·MAXPATHLEN), zc_string (256), zc_guid, zc_nvlist_conf(_size).
        self.value() + 2 * self.maxpathlen() + 256 + 24
    }

    /// `zc_obj` (u64): the object number DSOBJ_TO_DSNAME and OBJ_TO_PATH take. After
    /// `zc_cookie`: `zc_objset_type`, `zc_perm_action`, `zc_history_len`,
    /// `zc_history_offset`.
    pub const fn obj(self) -> usize {
        self.cookie() + 8 + 4 * 8
    }

    /// `zc_guid` (u64): the events ioctls' flags (NEXT) and event id (SEEK).
    pub const fn guid(self) -> usize {
        self.value() + 2 * self.maxpathlen() + 256
    }

    /// Where `zc_cleanup_fd` (int) has been: the events ioctls take the descriptor whose
    /// cursor they move from it. It sits after `zc_inject_record`, whose size changed once:
    /// OpenZFS 2.3.1 alone grew `zinject_record_t` by 16 bytes (`zi_match_count`,
    /// `zi_inject_count`) without the union 2.3.2 and 2.4 put around it to keep
    /// `zfs_cmd_t`'s layout. So the field is at one offset in 0.8 to 2.3.0, 2.3.2 and 2.4,
    /// and 16 bytes further in 2.3.1 (Linux 13664 and 13680, FreeBSD 4448 and 4464). The
    /// events calls write the descriptor at both: each offset is a field the other
    /// versions' events ioctls do not read (the first is 2.3.1's `zc_defer_destroy`, the
    /// second the others' `zc_fromobj`), so one command is right for every version.
    pub const fn cleanup_fd_offsets(self) -> [usize; 2] {
        // zc_cookie, then zc_objset_type, zc_perm_action, zc_history_len,
        // zc_history_offset, zc_obj, zc_iflags (6 × 8), zc_share (32), zc_objset_stats
        // (288), zc_begin_record (304), zc_inject_record (352), zc_defer_destroy and zc_flags
        // (8), zc_action_handle (8).
        let first = self.cookie() + 8 + 6 * 8 + 32 + 288 + 304 + 352 + 8 + 8;
        [first, first + 16]
    }

    /// The ioctl request number.
    pub const fn request(self, request: Request) -> u64 {
        let index: u64 = match request {
            Request::PoolConfigs => 4,
            Request::PoolStats => 5,
            Request::ObjsetStats => 0x12,
            Request::DsobjToDsname => 0x24,
            Request::ObjToPath => 0x25,
            Request::EventsNext => 0x81,
            Request::EventsSeek => 0x83,
        };
        match self {
            // Linux: ZFS_IOC_FIRST = 'Z' << 8, no _IOWR encoding.
            Platform::Linux => (b'Z' as u64) << 8 | index,
            // FreeBSD: _IOWR('Z', n, zfs_iocparm_t) = IOC_INOUT | sizeof << 16 | 'Z' << 8 | n.
            Platform::Freebsd => {
                0xC000_0000 | (IOCPARM_SIZE as u64) << 16 | (b'Z' as u64) << 8 | index
            }
        }
    }
}

/// A zeroed `zfs_cmd_t` with the fields of one call filled in.
pub struct CmdBuffer {
    platform: Platform,
    bytes: Vec<u8>,
}

impl CmdBuffer {
    /// `name` must not contain NUL and must fit with its terminator; longer names are refused
    /// by the caller before this point, so they are truncated here only as a last guard.
    pub fn new(platform: Platform, name: &str, dst: *mut u8, dst_size: usize, cookie: u64) -> Self {
        let mut bytes = vec![0u8; platform.cmd_buffer_size()];
        let name = name.as_bytes();
        let n = name.len().min(platform.name_capacity() - 1);
        bytes[..n].copy_from_slice(&name[..n]);
        let mut cmd = CmdBuffer { platform, bytes };
        cmd.put(platform.nvlist_dst(), dst as usize as u64);
        cmd.put(platform.nvlist_dst_size(), dst_size as u64);
        cmd.put(platform.cookie(), cookie);
        cmd
    }

    /// Sets `zc_guid`: the events ioctls' flags or event id.
    pub fn set_guid(&mut self, value: u64) {
        self.put(self.platform.guid(), value);
    }

    /// Sets `zc_obj`: the dataset or file object a name is asked for.
    pub fn set_obj(&mut self, value: u64) {
        self.put(self.platform.obj(), value);
    }

    /// Sets `zc_cleanup_fd` at every offset it has had ([`Platform::cleanup_fd_offsets`]).
    pub fn set_cleanup_fd(&mut self, fd: i32) {
        for offset in self.platform.cleanup_fd_offsets() {
            self.bytes[offset..offset + 4].copy_from_slice(&fd.to_ne_bytes());
        }
    }

    fn put(&mut self, offset: usize, value: u64) {
        self.bytes[offset..offset + 8].copy_from_slice(&value.to_ne_bytes());
    }

    fn get(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[offset..offset + 8]);
        u64::from_ne_bytes(b)
    }

    pub fn nvlist_dst_size(&self) -> u64 {
        self.get(self.platform.nvlist_dst_size())
    }

    pub fn cookie(&self) -> u64 {
        self.get(self.platform.cookie())
    }

    /// `zc_value` up to its first NUL (the altroot after POOL_STATS, a name after
    /// DSOBJ_TO_DSNAME and OBJ_TO_PATH).
    pub fn value(&self) -> String {
        let start = self.platform.value();
        let field = &self.bytes[start..start + 2 * self.platform.maxpathlen()];
        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        String::from_utf8_lossy(&field[..end]).into_owned()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.bytes.as_mut_ptr()
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Sets `zc_cookie` as a kernel would on its way out.
    #[cfg(test)]
    pub(crate) fn set_cookie_for_test(&mut self, value: u64) {
        self.put(self.platform.cookie(), value);
    }

    #[cfg(test)]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

/// FreeBSD's `zfs_iocparm_t`: {u32 version, u32 pad, u64 cmd pointer, u64 cmd size}.
pub fn iocparm(cmd: *mut u8, cmd_size: usize) -> [u8; IOCPARM_SIZE] {
    let mut out = [0u8; IOCPARM_SIZE];
    out[0..4].copy_from_slice(&FREEBSD_IOCTL_VERSION.to_ne_bytes());
    out[8..16].copy_from_slice(&(cmd as usize as u64).to_ne_bytes());
    out[16..24].copy_from_slice(&(cmd_size as u64).to_ne_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets of `zc_nvlist_dst`, `zc_nvlist_dst_size`, `zc_value` and `zc_cookie` in
    /// `include/sys/zfs_ioctl.h` (x86_64, `MAXPATHLEN` 4096 on Linux and 1024 on FreeBSD),
    /// as `offsetof` gives them for every OpenZFS tag from 0.8 to 2.4.
    #[test]
    fn offsets_match_the_documented_layout() {
        let l = Platform::Linux;
        assert_eq!(
            (l.nvlist_dst(), l.nvlist_dst_size(), l.value(), l.cookie()),
            (4112, 4120, 4144, 12616)
        );
        let f = Platform::Freebsd;
        assert_eq!(
            (f.nvlist_dst(), f.nvlist_dst_size(), f.value(), f.cookie()),
            (1040, 1048, 1072, 3400)
        );
        // zc_obj: five u64 after zc_cookie's start (zc_cookie, zc_objset_type,
        // zc_perm_action, zc_history_len, zc_history_offset).
        assert_eq!((l.obj(), f.obj()), (12656, 3440));
        // The buffers exceed every version's sizeof(zfs_cmd_t): 13760 (2.3.1) / 4544.
        assert!(l.cmd_buffer_size() > 13760 && f.cmd_buffer_size() > 4544);
    }

    /// Request numbers: entries 4 and 5 from `('Z' << 8)` (include/sys/fs/zfs.h), on FreeBSD
    /// wrapped as `_IOWR('Z', n, zfs_iocparm_t)` (sys/sys/ioccom.h, a 24-byte argument).
    /// `ZFS_IOC_EVENTS_NEXT` is commented `0x81` and `ZFS_IOC_EVENTS_SEEK` `0x83` beside
    /// their enum entries there.
    #[test]
    fn request_numbers() {
        assert_eq!(Platform::Linux.request(Request::PoolConfigs), 0x5A04);
        assert_eq!(Platform::Linux.request(Request::PoolStats), 0x5A05);
        assert_eq!(Platform::Freebsd.request(Request::PoolConfigs), 0xC018_5A04);
        assert_eq!(Platform::Freebsd.request(Request::PoolStats), 0xC018_5A05);
        // Commented `0x5a12` beside ZFS_IOC_OBJSET_STATS in include/sys/fs/zfs.h (2.1.11).
        assert_eq!(Platform::Linux.request(Request::ObjsetStats), 0x5A12);
        assert_eq!(Platform::Freebsd.request(Request::ObjsetStats), 0xC018_5A12);
        // Commented `0x5a24` and `0x5a25` beside ZFS_IOC_DSOBJ_TO_DSNAME and
        // ZFS_IOC_OBJ_TO_PATH there.
        assert_eq!(Platform::Linux.request(Request::DsobjToDsname), 0x5A24);
        assert_eq!(Platform::Linux.request(Request::ObjToPath), 0x5A25);
        assert_eq!(Platform::Freebsd.request(Request::ObjToPath), 0xC018_5A25);
        assert_eq!(Platform::Linux.request(Request::EventsNext), 0x5A81);
        assert_eq!(Platform::Linux.request(Request::EventsSeek), 0x5A83);
        assert_eq!(Platform::Freebsd.request(Request::EventsNext), 0xC018_5A81);
    }

    /// `offsetof(zfs_cmd_t, zc_guid)` and `offsetof(zfs_cmd_t, zc_cleanup_fd)` on x86_64,
    /// counted from `include/sys/zfs_ioctl.h` of OpenZFS 2.1 (and 0.8–2.4 but 2.3.1), and of
    /// 2.3.1 (its `zinject_record_t` 16 bytes larger); `sizeof(zfs_cmd_t)` is 13744 on Linux
    /// (2.0 and later but 2.3.1, whose 13760 the buffer-size test above names), so the
    /// first offset is the 80 bytes before its end that `zc_cleanup_fd` .. `zc_zoneid` take.
    #[test]
    fn the_events_fields_sit_where_every_version_has_them() {
        assert_eq!(Platform::Linux.guid(), 12592);
        assert_eq!(Platform::Freebsd.guid(), 12592 - 3 * 3072);
        assert_eq!(Platform::Linux.cleanup_fd_offsets(), [13664, 13680]);
        assert_eq!(13744 - 80, 13664);
        assert_eq!(Platform::Freebsd.cleanup_fd_offsets(), [4448, 4464]);
        let mut cmd = CmdBuffer::new(Platform::Linux, "", std::ptr::null_mut(), 0, 0);
        cmd.set_cleanup_fd(7);
        cmd.set_guid(ZEVENT_NONBLOCK);
        assert_eq!(&cmd.bytes[13664..13668], &7i32.to_ne_bytes());
        assert_eq!(&cmd.bytes[13680..13684], &7i32.to_ne_bytes());
        assert_eq!(cmd.get(12592), 1);
        // Nothing else was written.
        let set = cmd.bytes.iter().filter(|&&b| b != 0).count();
        assert_eq!(set, 3);
    }

    #[test]
    fn command_buffer_fields() {
        let mut dst = vec![0u8; 100];
        let cmd = CmdBuffer::new(Platform::Linux, "tank", dst.as_mut_ptr(), 100, 7);
        assert_eq!(&cmd.bytes[..5], b"tank\0");
        assert_eq!(cmd.nvlist_dst_size(), 100);
        assert_eq!(cmd.cookie(), 7);
        assert_eq!(cmd.get(4112), dst.as_ptr() as u64);
    }

    #[test]
    fn iocparm_wraps_the_command() {
        let mut cmd = CmdBuffer::new(Platform::Freebsd, "", std::ptr::null_mut(), 0, 0);
        let p = iocparm(cmd.as_mut_ptr(), cmd.len());
        assert_eq!(u32::from_ne_bytes(p[0..4].try_into().unwrap()), 15);
        assert_eq!(u64::from_ne_bytes(p[16..24].try_into().unwrap()), 8192);
    }
}
