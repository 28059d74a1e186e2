//! The host around ZFS on FreeBSD: identity, CPU (`kern.cp_time`), memory (`hw.physmem`,
//! `vm.stats.vm.*`), swap (`vm.swap_info.<n>`) and network counters
//! (`net.link.generic.ifdata.<index>.general`).
//!
//! The binary structs are decoded by pure functions with explicit offsets (amd64):
//! * `struct ifmibdata` (sys/net/if_mib.h) holding the FreeBSD 11+ `struct if_data`
//!   (sys/net/if.h), whose counters are fixed-width `uint64_t` and whose `ifi_datalen` the
//!   kernel sets to `sizeof(struct if_data)` = 152 (`if_data_copy`), which is checked;
//! * `struct xswdev` (vm/swap_pager.c): version 2 with a 64-bit `dev_t` (FreeBSD 12+), or
//!   the 20-byte version 1 of FreeBSD 11.

use super::sysctl::{Sysctl, optional};
use crate::sources::error::ParseError;
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{CpuTimes, Memory, NetInterface, Os};

pub const CP_TIME: &str = "kern.cp_time";
/// `struct clockinfo`, whose `stathz` is `kern.cp_time`'s tick rate.
pub const CLOCKRATE: &str = "kern.clockrate";
pub const OSRELEASE: &str = "kern.osrelease";
/// `struct timeval` of the boot, the wall clock less the uptime (sys/kern/kern_tc.c).
pub const BOOTTIME: &str = "kern.boottime";
pub const HOSTNAME: &str = "kern.hostname";
pub const PHYSMEM: &str = "hw.physmem";
pub const PAGESIZE: &str = "hw.pagesize";
pub const FREE_COUNT: &str = "vm.stats.vm.v_free_count";
pub const INACTIVE_COUNT: &str = "vm.stats.vm.v_inactive_count";
/// FreeBSD 12+: dirty pages queued for writing to swap before reuse.
pub const LAUNDRY_COUNT: &str = "vm.stats.vm.v_laundry_count";
/// FreeBSD ≤ 11: the "cache" queue of clean pages that can be reused at once.
pub const CACHE_COUNT: &str = "vm.stats.vm.v_cache_count";
pub const NSWAPDEV: &str = "vm.nswapdev";
pub const IFCOUNT: &str = "net.link.generic.system.ifcount";

/// Upper bound on indices probed (if_index is a u_short in the kernel's ifnet); a corrupt
/// capture cannot make us loop for ever.
pub const MAX_IFINDEX: u64 = 0xffff;
pub const MAX_SWAPDEV: u64 = 256;

pub fn swap_info(n: u64) -> String {
    format!("vm.swap_info.{n}")
}

pub fn ifdata_general(index: u64) -> String {
    format!("net.link.generic.ifdata.{index}.general")
}

/// Fills `host` (os, kernel, hostname if unset), `cpu`, `memory` and `net`.
pub fn read(sysctl: &dyn Sysctl, snap: &mut Snapshot) {
    snap.host.os = Os::Freebsd;
    match optional(sysctl.text(OSRELEASE)) {
        Ok(v) => snap.host.kernel = v.map(|s| s.trim().to_string()),
        Err(e) => snap.note(OSRELEASE, e.to_string()),
    }
    if snap.host.hostname.is_empty()
        && let Ok(Some(h)) = optional(sysctl.text(HOSTNAME))
    {
        snap.host.hostname = h.trim().to_string();
    }

    match sysctl.bytes(CP_TIME) {
        Ok(b) => match parse_cp_time(&b) {
            Ok(c) => snap.cpu = Some(c),
            Err(e) => snap.note(CP_TIME, e.to_string()),
        },
        Err(e) => snap.note(CP_TIME, e.to_string()),
    }
    // Captures made before zpulse read it have no kern.clockrate: their CPU stays in ticks.
    if snap.cpu.is_some() {
        let stathz = match optional(sysctl.bytes(CLOCKRATE)) {
            Ok(Some(b)) => parse_stathz(&b).map(Some).map_err(|e| e.to_string()),
            Ok(None) => Ok(None),
            Err(e) => Err(e.to_string()),
        };
        match stathz {
            Ok(hz) => {
                if let Some(cpu) = &mut snap.cpu {
                    cpu.ticks_per_second = hz;
                }
            }
            Err(e) => snap.note(CLOCKRATE, e),
        }
    }

    // Captures made before zpulse read it have no kern.boottime: no boot time, no reboot told.
    match optional(sysctl.bytes(BOOTTIME)) {
        Ok(Some(b)) => match parse_boottime(&b) {
            Ok(t) => snap.boot_time = Some(t),
            Err(e) => snap.note(BOOTTIME, e.to_string()),
        },
        Ok(None) => {}
        Err(e) => snap.note(BOOTTIME, e.to_string()),
    }

    read_memory(sysctl, snap);
    read_net(sysctl, snap);
}

/// A struct node as sysctl(8) prints it, `{ name = value, … }` (a dump or a capture written
/// from one), rather than the kernel's bytes.
fn struct_text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes)
        .ok()
        .filter(|t| t.trim_start().starts_with('{'))
}

/// The field `name` of a [`struct_text`], parsed.
fn struct_field<T: std::str::FromStr>(text: &str, name: &str) -> Option<T> {
    text.split(['{', '}', ','])
        .filter_map(|f| f.split_once('='))
        .find(|(k, _)| k.trim() == name)
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// `kern.boottime`, Unix seconds: the kernel's `struct timeval` (LP64: `time_t tv_sec` and
/// `suseconds_t tv_usec`, 8 bytes each, sys/sys/_timeval.h), or sysctl(8)'s text of it,
/// `{ sec = 1733300000, usec = 123456 } Fri Dec  4 …` (sbin/sysctl/sysctl.c `S_timeval`).
pub fn parse_boottime(bytes: &[u8]) -> Result<f64, ParseError> {
    let (sec, usec) = match struct_text(bytes) {
        Some(t) => struct_field::<i64>(t, "sec")
            .zip(struct_field::<i64>(t, "usec"))
            .ok_or_else(|| ParseError::new(BOOTTIME, format!("no sec and usec in {t:?}")))?,
        None if bytes.len() == 16 => (
            le_u64(bytes, 0).unwrap_or(0) as i64,
            le_u64(bytes, 8).unwrap_or(0) as i64,
        ),
        None => {
            return Err(ParseError::new(
                BOOTTIME,
                format!(
                    "{} bytes; expected struct timeval (16) or its text",
                    bytes.len()
                ),
            ));
        }
    };
    if sec <= 0 || !(0..1_000_000).contains(&usec) {
        return Err(ParseError::new(
            BOOTTIME,
            format!("sec {sec}, usec {usec} is not a boot time"),
        ));
    }
    Ok(sec as f64 + usec as f64 / 1e6)
}

/// `kern.cp_time`: CPUSTATES (5) longs, user nice sys intr idle, in stathz ticks. As text
/// (`sysctl(8)`) or as the raw 5 × 8 bytes of the kernel (live, and so in captures).
///
/// The raw form is recognised by its length and a NUL byte (text never has one; tick counts
/// below 2^56 always do), not by failing UTF-8: small counts are valid UTF-8.
pub fn parse_cp_time(bytes: &[u8]) -> Result<CpuTimes, ParseError> {
    const WHAT: &str = "kern.cp_time";
    let raw = bytes.len() == 40 && (bytes.contains(&0) || std::str::from_utf8(bytes).is_err());
    let v: [u64; 5] = match std::str::from_utf8(bytes) {
        _ if raw => std::array::from_fn(|i| le_u64(bytes, 8 * i).unwrap_or(0)),
        Ok(text) => {
            let fields: Vec<&str> = text.split_whitespace().collect();
            if fields.len() != 5 {
                return Err(ParseError::new(
                    WHAT,
                    format!(
                        "{} fields, expected 5 (user nice sys intr idle)",
                        fields.len()
                    ),
                ));
            }
            let mut v = [0u64; 5];
            for (slot, f) in v.iter_mut().zip(&fields) {
                *slot = f
                    .parse()
                    .map_err(|_| ParseError::new(WHAT, format!("{f:?} is not a tick count")))?;
            }
            v
        }
        Err(_) => {
            return Err(ParseError::new(
                WHAT,
                format!(
                    "{} bytes of binary data; expected text or 5 longs (40 bytes)",
                    bytes.len()
                ),
            ));
        }
    };
    Ok(CpuTimes {
        user: v[0],
        nice: v[1],
        system: v[2],
        irq: Some(v[3]),
        idle: v[4],
        iowait: None,
        softirq: None,
        steal: None,
        ticks_per_second: None,
    })
}

/// `kern.clockrate`: `struct clockinfo` (sys/sys/time.h: int hz, tick, spare, stathz,
/// profhz; 20 bytes), or its `sysctl(8)` text `{ hz = 1000, tick = 1000, profhz = 8128,
/// stathz = 127 }`. Its `stathz` is the rate `kern.cp_time` counts at: `statclock()` adds
/// one tick of the running state per statistics clock interrupt, and `sysctl_kern_clockrate`
/// reports `stathz ? stathz : hz` (sys/kern/kern_clock.c).
pub fn parse_stathz(bytes: &[u8]) -> Result<u32, ParseError> {
    const WHAT: &str = "kern.clockrate";
    let stathz = match struct_text(bytes) {
        Some(t) => struct_field::<u32>(t, "stathz")
            .ok_or_else(|| ParseError::new(WHAT, format!("no stathz in {t:?}")))?,
        None if bytes.len() == 20 => le_u32(bytes, 12).unwrap_or(0),
        None => {
            return Err(ParseError::new(
                WHAT,
                format!(
                    "{} bytes; expected struct clockinfo (20) or its text",
                    bytes.len()
                ),
            ));
        }
    };
    if stathz == 0 {
        return Err(ParseError::new(WHAT, "stathz is 0"));
    }
    Ok(stathz)
}

/// The page counts behind [`Memory`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmCounts {
    pub physmem: u64,
    pub pagesize: u64,
    pub free: u64,
    pub inactive: Option<u64>,
    pub cache: Option<u64>,
    pub laundry: Option<u64>,
}

/// Memory in bytes. `available` is free + inactive (+ the pre-12 cache queue): pages the
/// kernel can hand out without writing anything. Laundry pages are left out because they
/// are dirty and must go to swap first. `cached` stays `None`: FreeBSD has no equivalent of
/// Linux's page-cache figure (file data lives in the inactive/active queues, ZFS in the ARC).
pub fn memory(c: &VmCounts, swap: Option<(u64, u64)>) -> Memory {
    let pages = |n: u64| n.saturating_mul(c.pagesize);
    Memory {
        total: c.physmem,
        free: pages(c.free),
        available: c.inactive.map(|i| {
            pages(
                c.free
                    .saturating_add(i)
                    .saturating_add(c.cache.unwrap_or(0)),
            )
        }),
        cached: None,
        swap_total: swap.map(|(total, _)| total),
        swap_free: swap.map(|(_, free)| free),
    }
}

fn read_memory(sysctl: &dyn Sysctl, snap: &mut Snapshot) {
    let required = (|| {
        Ok::<_, super::sysctl::SysctlError>((
            sysctl.u64(PHYSMEM)?,
            sysctl.u64(PAGESIZE)?,
            sysctl.u64(FREE_COUNT)?,
        ))
    })();
    let (physmem, pagesize, free) = match required {
        Ok(v) => v,
        Err(e) => {
            snap.note(e.name().to_string(), format!("memory left out: {e}"));
            return;
        }
    };
    let mut opt = |name: &str| match optional(sysctl.u64(name)) {
        Ok(v) => v,
        Err(e) => {
            snap.note(name, e.to_string());
            None
        }
    };
    let counts = VmCounts {
        physmem,
        pagesize,
        free,
        inactive: opt(INACTIVE_COUNT),
        cache: opt(CACHE_COUNT),
        laundry: opt(LAUNDRY_COUNT),
    };
    let swap = read_swap(sysctl, pagesize, snap);
    snap.memory = Some(memory(&counts, swap));
}

/// (total, free) bytes of swap over every device; `None` when it cannot be told.
fn read_swap(sysctl: &dyn Sysctl, pagesize: u64, snap: &mut Snapshot) -> Option<(u64, u64)> {
    let n = match optional(sysctl.u64(NSWAPDEV)) {
        Ok(Some(n)) => n.min(MAX_SWAPDEV),
        Ok(None) => return None,
        Err(e) => {
            snap.note(NSWAPDEV, e.to_string());
            return None;
        }
    };
    let (mut total, mut free) = (0u64, 0u64);
    for i in 0..n {
        let name = swap_info(i);
        let dev = match sysctl.bytes(&name).map(|b| decode_xswdev(&b)) {
            Ok(Ok(d)) => d,
            Ok(Err(e)) => {
                snap.note(name, format!("swap left out: {e}"));
                return None;
            }
            Err(e) => {
                snap.note(name, format!("swap left out: {e}"));
                return None;
            }
        };
        // nblks and used are in pages (swapinfo(8) multiplies by the page size).
        let nblks = u64::try_from(dev.nblks).unwrap_or(0);
        let used = u64::try_from(dev.used).unwrap_or(0).min(nblks);
        total = total.saturating_add(nblks.saturating_mul(pagesize));
        free = free.saturating_add((nblks - used).saturating_mul(pagesize));
    }
    Some((total, free))
}

/// `struct xswdev`, one swap device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Xswdev {
    pub version: u32,
    pub dev: u64,
    pub flags: i32,
    /// Size in pages.
    pub nblks: i32,
    /// Pages in use.
    pub used: i32,
}

/// Version 2 (FreeBSD 12+, amd64): `u_int version; dev_t dev (uint64_t, at 8); int flags;
/// int nblks; int used;` = 32 bytes. Version 1 (FreeBSD 11): `dev` is 32-bit, 20 bytes.
pub fn decode_xswdev(b: &[u8]) -> Result<Xswdev, ParseError> {
    const WHAT: &str = "vm.swap_info";
    let version = le_u32(b, 0)
        .ok_or_else(|| ParseError::new(WHAT, format!("{} bytes, too short", b.len())))?;
    let (len, dev, rest) = match version {
        2 => (32, le_u64(b, 8), 16),
        1 => (20, le_u32(b, 4).map(u64::from), 8),
        v => {
            return Err(ParseError::new(
                WHAT,
                format!("struct xswdev version {v}; zpulse knows versions 1 and 2"),
            ));
        }
    };
    if b.len() != len {
        return Err(ParseError::new(
            WHAT,
            format!(
                "{} bytes for struct xswdev version {version}, expected {len}",
                b.len()
            ),
        ));
    }
    let int = |off| le_u32(b, off).map_or(0, |v| v as i32);
    Ok(Xswdev {
        version,
        dev: dev.unwrap_or(0),
        flags: int(rest),
        nblks: int(rest + 4),
        used: int(rest + 8),
    })
}

/// `sizeof(struct ifmibdata)` on amd64 with the FreeBSD 11+ `struct if_data`.
pub const IFMIBDATA_SIZE: usize = 208;
/// `sizeof(struct if_data)`, FreeBSD 11+ (the same on every architecture).
const IF_DATA_SIZE: u16 = 152;
/// Offset of `ifmd_data`: 16 (name) + 9 ints = 52, rounded up to the 8-byte alignment of
/// the `uint64_t` members of `struct if_data`.
const OFF_IFMD_DATA: usize = 56;

/// Decodes `net.link.generic.ifdata.<index>.general` into the interface's counters.
pub fn decode_ifmibdata(b: &[u8]) -> Result<NetInterface, ParseError> {
    const WHAT: &str = "ifmibdata";
    if b.len() != IFMIBDATA_SIZE {
        return Err(ParseError::new(
            WHAT,
            format!(
                "{} bytes, expected {IFMIBDATA_SIZE} (struct ifmibdata with the FreeBSD 11+ \
                 struct if_data, amd64)",
                b.len()
            ),
        ));
    }
    let d = OFF_IFMD_DATA;
    let datalen = u16::from_le_bytes([b[d + 6], b[d + 7]]);
    if datalen != IF_DATA_SIZE {
        return Err(ParseError::new(
            WHAT,
            format!(
                "ifi_datalen is {datalen}, expected {IF_DATA_SIZE}: not the FreeBSD 11+ \
                 struct if_data"
            ),
        )
        .at_offset(d + 6));
    }
    let name = &b[..16];
    let end = name.iter().position(|&c| c == 0).unwrap_or(16);
    if end == 0 {
        return Err(ParseError::new(WHAT, "empty interface name").at_offset(0));
    }
    let c = |off: usize| le_u64(b, d + off).unwrap_or(0);
    Ok(NetInterface {
        name: String::from_utf8_lossy(&name[..end]).into_owned(),
        rx_packets: c(24),
        rx_errors: c(32),
        tx_packets: c(40),
        tx_errors: c(48),
        rx_bytes: c(64),
        tx_bytes: c(72),
        rx_dropped: c(96),
        tx_dropped: c(104),
    })
}

fn read_net(sysctl: &dyn Sysctl, snap: &mut Snapshot) {
    let count = match optional(sysctl.u64(IFCOUNT)) {
        Ok(Some(n)) => n.min(MAX_IFINDEX),
        Ok(None) => return,
        Err(e) => {
            snap.note(IFCOUNT, e.to_string());
            return;
        }
    };
    // Interface indices are 1-based and may have gaps (destroyed clones): a missing index
    // is skipped. A read error is noted once, for the first interface it hits.
    let mut read_error_noted = false;
    for index in 1..=count {
        let name = ifdata_general(index);
        match sysctl.bytes(&name) {
            Ok(b) => match decode_ifmibdata(&b) {
                Ok(i) => snap.net.push(i),
                Err(e) => snap.note(name, e.to_string()),
            },
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                if !std::mem::replace(&mut read_error_noted, true) {
                    snap.note(name, e.to_string());
                }
            }
        }
    }
}

fn le_u64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn le_u32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sources::freebsd::sysctl::tests::MapSysctl;
    use crate::sources::freebsd::sysctl::{DumpSysctl, SysctlValue};
    use proptest::prelude::*;

    /// Lays out a C struct from its member list the way the SysV amd64 ABI does (each member
    /// at the next multiple of its alignment, the size rounded to the largest alignment), so
    /// the test bytes derive from the header text, not from the decoder's offsets.
    struct CStruct {
        bytes: Vec<u8>,
        max_align: usize,
    }

    impl CStruct {
        fn new() -> Self {
            CStruct {
                bytes: Vec::new(),
                max_align: 1,
            }
        }
        fn member(&mut self, align: usize, value: &[u8]) -> &mut Self {
            while !self.bytes.len().is_multiple_of(align) {
                self.bytes.push(0);
            }
            self.max_align = self.max_align.max(align);
            self.bytes.extend_from_slice(value);
            self
        }
        fn u8(&mut self, v: u8) -> &mut Self {
            self.member(1, &[v])
        }
        fn u16(&mut self, v: u16) -> &mut Self {
            self.member(2, &v.to_le_bytes())
        }
        fn u32(&mut self, v: u32) -> &mut Self {
            self.member(4, &v.to_le_bytes())
        }
        fn i32(&mut self, v: i32) -> &mut Self {
            self.member(4, &v.to_le_bytes())
        }
        fn u64(&mut self, v: u64) -> &mut Self {
            self.member(8, &v.to_le_bytes())
        }
        fn finish(&mut self) -> Vec<u8> {
            while !self.bytes.len().is_multiple_of(self.max_align) {
                self.bytes.push(0);
            }
            self.bytes.clone()
        }
    }

    /// `struct if_data` (sys/net/if.h, FreeBSD 11+), member by member, with distinct values.
    fn if_data(datalen: u16) -> Vec<u8> {
        CStruct::new()
            .u8(6) // ifi_type (IFT_ETHER)
            .u8(0) // ifi_physical
            .u8(6) // ifi_addrlen
            .u8(14) // ifi_hdrlen
            .u8(2) // ifi_link_state (UP)
            .u8(0) // ifi_vhid
            .u16(datalen) // ifi_datalen
            .u32(1500) // ifi_mtu
            .u32(0) // ifi_metric
            .u64(1_000_000_000) // ifi_baudrate
            .u64(1001) // ifi_ipackets
            .u64(1002) // ifi_ierrors
            .u64(1003) // ifi_opackets
            .u64(1004) // ifi_oerrors
            .u64(1005) // ifi_collisions
            .u64(1006) // ifi_ibytes
            .u64(1007) // ifi_obytes
            .u64(1008) // ifi_imcasts
            .u64(1009) // ifi_omcasts
            .u64(1010) // ifi_iqdrops
            .u64(1011) // ifi_oqdrops
            .u64(1012) // ifi_noproto
            .u64(1013) // ifi_hwassist
            .u64(1014) // __ifi_epoch (union time_t / uint64_t)
            .u64(1015) // __ifi_lastchange.ph1 (union with struct timeval)
            .u64(1016) // __ifi_lastchange.ph2
            .finish()
    }

    /// `struct ifmibdata` (sys/net/if_mib.h) around it.
    pub(crate) fn ifmibdata(name: &[u8], datalen: u16) -> Vec<u8> {
        let mut ifname = [0u8; 16];
        ifname[..name.len()].copy_from_slice(name);
        let data = if_data(datalen);
        let mut s = CStruct::new();
        s.member(1, &ifname)
            .i32(1) // ifmd_pcount
            .i32(0x8843) // ifmd_flags
            .i32(0) // ifmd_snd_len
            .i32(50) // ifmd_snd_maxlen
            .i32(7) // ifmd_snd_drops
            .i32(0)
            .i32(0)
            .i32(0)
            .i32(0) // ifmd_filler[4]
            .member(8, &data); // struct if_data: 8-byte aligned (uint64_t members)
        s.finish()
    }

    /// A version-2 `struct xswdev` of `nblks` pages with `used` in use.
    pub(crate) fn xswdev_v2(nblks: i32, used: i32) -> SysctlValue {
        SysctlValue::Bytes(
            CStruct::new()
                .u32(2)
                .u64(1)
                .i32(0)
                .i32(nblks)
                .i32(used)
                .finish(),
        )
    }

    #[test]
    fn ifmibdata_from_the_header_layout() {
        let b = ifmibdata(b"em0", 152);
        assert_eq!(if_data(152).len(), 152, "sizeof(struct if_data)");
        assert_eq!(b.len(), 208, "sizeof(struct ifmibdata)");
        let i = decode_ifmibdata(&b).unwrap();
        assert_eq!(i.name, "em0");
        assert_eq!(
            (i.rx_packets, i.rx_errors, i.tx_packets, i.tx_errors),
            (1001, 1002, 1003, 1004)
        );
        assert_eq!((i.rx_bytes, i.tx_bytes), (1006, 1007));
        assert_eq!((i.rx_dropped, i.tx_dropped), (1010, 1011));
        // A full 16-byte name has no NUL.
        assert_eq!(
            decode_ifmibdata(&ifmibdata(b"abcdefghijklmnop", 152))
                .unwrap()
                .name
                .len(),
            16
        );
    }

    #[test]
    fn ifmibdata_refuses_other_layouts() {
        let e = decode_ifmibdata(&ifmibdata(b"em0", 152)[..207]).unwrap_err();
        assert!(e.message.contains("207 bytes"), "{e}");
        // The pre-11 u_long if_data has a u_char ifi_datalen at offset 7: read as u16 it is
        // 152 << 8.
        let e = decode_ifmibdata(&ifmibdata(b"em0", 152 << 8)).unwrap_err();
        assert!(e.message.contains("ifi_datalen is 38912"), "{e}");
        assert!(decode_ifmibdata(&ifmibdata(b"", 152)).is_err());
    }

    #[test]
    fn xswdev_versions_2_and_1() {
        // struct xswdev { u_int xsw_version; dev_t xsw_dev; int xsw_flags; int xsw_nblks;
        // int xsw_used; } with a 64-bit dev_t.
        let v2 = CStruct::new()
            .u32(2)
            .u64(0x5a)
            .i32(1)
            .i32(524_288)
            .i32(1000)
            .finish();
        assert_eq!(v2.len(), 32);
        assert_eq!(
            decode_xswdev(&v2).unwrap(),
            Xswdev {
                version: 2,
                dev: 0x5a,
                flags: 1,
                nblks: 524_288,
                used: 1000
            }
        );
        // struct xswdev11 with a uint32_t xsw_dev.
        let v1 = CStruct::new()
            .u32(1)
            .u32(0x5a)
            .i32(1)
            .i32(100)
            .i32(10)
            .finish();
        assert_eq!(v1.len(), 20);
        assert_eq!(decode_xswdev(&v1).unwrap().nblks, 100);
        assert!(decode_xswdev(&v2[..20]).is_err());
        assert!(decode_xswdev(&CStruct::new().u32(3).u64(0).finish()).is_err());
        assert!(decode_xswdev(&[2, 0]).is_err());
    }

    #[test]
    fn cp_time_text_and_binary() {
        let c = parse_cp_time(b"1 2 3 4 5\n").unwrap();
        assert_eq!(
            (c.user, c.nice, c.system, c.irq, c.idle),
            (1, 2, 3, Some(4), 5)
        );
        assert_eq!((c.iowait, c.softirq, c.steal), (None, None, None));
        let mut raw = Vec::new();
        for v in [10u64, 20, 30, 40, 50] {
            raw.extend(v.to_le_bytes());
        }
        raw[39] = 0x80; // make it non-UTF-8 for sure, and a huge idle count
        let c = parse_cp_time(&raw).unwrap();
        assert_eq!((c.user, c.irq), (10, Some(40)));
        // Small counts (a fresh boot) are valid UTF-8 and still the binary form.
        let small: Vec<u8> = [1u64, 2, 3, 4, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let c = parse_cp_time(&small).unwrap();
        assert_eq!(
            (c.user, c.nice, c.system, c.irq, c.idle),
            (1, 2, 3, Some(4), 5)
        );
        assert!(parse_cp_time(b"1 2 3 4").is_err());
        assert!(parse_cp_time(b"1 2 3 4 x").is_err());
        assert!(parse_cp_time(&[0xff; 39]).is_err());
    }

    #[test]
    fn memory_from_page_counts() {
        let c = VmCounts {
            physmem: 8 << 30,
            pagesize: 4096,
            free: 1000,
            inactive: Some(500),
            cache: None,
            laundry: Some(50),
        };
        let m = memory(&c, Some((2 << 30, 1 << 30)));
        assert_eq!(m.total, 8 << 30);
        assert_eq!(m.free, 1000 * 4096);
        assert_eq!(m.available, Some(1500 * 4096));
        assert_eq!((m.swap_total, m.swap_free), (Some(2 << 30), Some(1 << 30)));
        let old = VmCounts {
            cache: Some(100),
            laundry: None,
            ..c
        };
        assert_eq!(memory(&old, None).available, Some(1600 * 4096));
        assert_eq!(
            memory(
                &VmCounts {
                    inactive: None,
                    ..c
                },
                None
            )
            .available,
            None
        );
    }

    #[test]
    fn read_fills_cpu_memory_swap_and_net() {
        let mut s = MapSysctl::default();
        let text = |s: &str| SysctlValue::Text(s.to_string());
        s.set(OSRELEASE, text("14.1-RELEASE-p5\n"));
        s.set(HOSTNAME, text("nas1"));
        s.set(CP_TIME, text("100 0 50 5 1000"));
        s.set(PHYSMEM, SysctlValue::Unsigned(8 << 30));
        s.set(PAGESIZE, SysctlValue::Signed(4096));
        s.set(FREE_COUNT, SysctlValue::Unsigned(1000));
        s.set(INACTIVE_COUNT, SysctlValue::Unsigned(10));
        s.set(NSWAPDEV, SysctlValue::Signed(2));
        s.set(&swap_info(0), xswdev_v2(1000, 100));
        s.set(&swap_info(1), xswdev_v2(500, 0));
        s.set(IFCOUNT, SysctlValue::Signed(3));
        s.set(
            &ifdata_general(1),
            SysctlValue::Bytes(ifmibdata(b"em0", 152)),
        );
        // index 2 is a gap; index 3 is lo0
        s.set(
            &ifdata_general(3),
            SysctlValue::Bytes(ifmibdata(b"lo0", 152)),
        );

        let mut snap = Snapshot::default();
        read(&s, &mut snap);
        assert!(snap.issues.is_empty(), "{:?}", snap.issues);
        assert_eq!(snap.host.os, Os::Freebsd);
        assert_eq!(snap.host.kernel.as_deref(), Some("14.1-RELEASE-p5"));
        assert_eq!(snap.host.hostname, "nas1");
        assert_eq!(snap.cpu.unwrap().system, 50);
        let mem = snap.memory.unwrap();
        assert_eq!(mem.available, Some(1010 * 4096));
        assert_eq!(mem.swap_total, Some(1500 * 4096));
        assert_eq!(mem.swap_free, Some(1400 * 4096));
        let names: Vec<&str> = snap.net.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["em0", "lo0"]);
    }

    #[test]
    fn missing_sources_are_noted_once_each() {
        let d = DumpSysctl::parse("hw.physmem: 1024\n").unwrap();
        let mut snap = Snapshot::default();
        read(&d, &mut snap);
        let sources: Vec<&str> = snap.issues.iter().map(|i| i.source.as_str()).collect();
        // No kernel/ifcount/nswapdev: optional, silent. cp_time and memory: one issue each.
        assert_eq!(sources, [CP_TIME, PAGESIZE]);
        assert!(snap.memory.is_none() && snap.cpu.is_none() && snap.net.is_empty());
    }

    proptest! {
        #[test]
        fn decoders_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode_ifmibdata(&b);
            let _ = decode_xswdev(&b);
            let _ = parse_cp_time(&b);
        }

        #[test]
        fn truncated_ifmibdata_is_an_error(cut in 0usize..208) {
            prop_assert!(decode_ifmibdata(&ifmibdata(b"em0", 152)[..cut]).is_err());
        }

        #[test]
        fn flipped_bytes_in_ifmibdata_never_panic(at in 0usize..208, byte in any::<u8>()) {
            let mut b = ifmibdata(b"igb0", 152);
            b[at] = byte;
            let _ = decode_ifmibdata(&b);
        }
    }
}

#[cfg(test)]
mod clockrate_tests {
    use super::*;

    /// `struct clockinfo` as the kernel copies it out (sys/sys/time.h: hz, tick, spare,
    /// stathz, profhz, each a 32-bit int), and as sysctl(8) prints it.
    #[test]
    fn stathz_from_struct_clockinfo_or_its_text() {
        let mut raw = Vec::new();
        for v in [1000i32, 1000, 0, 127, 8128] {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(parse_stathz(&raw).unwrap(), 127);
        let text = b"{ hz = 1000, tick = 1000, profhz = 8128, stathz = 127 }\n";
        assert_eq!(parse_stathz(text).unwrap(), 127);
        assert!(parse_stathz(&raw[..16]).is_err());
        assert!(parse_stathz(b"{ hz = 1000 }").is_err());
        let mut zero = raw.clone();
        zero[12..16].copy_from_slice(&0i32.to_le_bytes());
        assert!(parse_stathz(&zero).is_err());
    }

    /// `struct timeval` as the kernel copies it out on amd64 (two 64-bit fields), and as
    /// sysctl(8) prints it (`S_timeval`: the fields, then ctime(3) of the seconds).
    #[test]
    fn boot_time_from_struct_timeval_or_its_text() {
        let mut raw = Vec::new();
        raw.extend_from_slice(&1_733_300_000i64.to_le_bytes());
        raw.extend_from_slice(&250_000i64.to_le_bytes());
        assert_eq!(parse_boottime(&raw).unwrap(), 1_733_300_000.25);
        let text = b"{ sec = 1733300000, usec = 250000 } Wed Dec  4 08:13:20 2024\n";
        assert_eq!(parse_boottime(text).unwrap(), 1_733_300_000.25);
        assert!(parse_boottime(&raw[..8]).is_err(), "a 32-bit timeval");
        assert!(parse_boottime(b"{ sec = 1733300000 }").is_err());
        let mut bad = raw.clone();
        bad[8..16].copy_from_slice(&2_000_000i64.to_le_bytes());
        assert!(parse_boottime(&bad).is_err(), "usec out of range");
        assert!(
            parse_boottime(&[0; 16]).is_err(),
            "the epoch is no boot time"
        );
    }
}
