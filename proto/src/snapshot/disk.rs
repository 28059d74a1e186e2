//! Block devices, with each kernel's own counters.

use serde::{Deserialize, Serialize};

/// One block device (whole disk or partition).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Disk {
    /// Kernel name: `sda`, `nvme0n1p2`, `ada0`.
    pub name: String,
    /// For a partition, the whole disk it lives on (`sdc1` → `sdc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_disk: Option<String>,
    /// Other names of this disk or of its partitions that a vdev path may use: FreeBSD GEOM
    /// providers and labels (`ada2p1`, `gpt/special0`, `diskid/…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// true = spinning (HDD). `None` when the kernel does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Spindle speed when known (FreeBSD GEOM `rotationrate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_block_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_block_size: Option<u32>,
    /// Bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// A partition's byte offset from the start of its whole disk, when known (Linux
    /// `sys/block/DISK/PART/start`; FreeBSD GEOM's provider offset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// The vdevs this disk (or a partition of it) serves. One SSD may serve several: a SLOG
    /// partition and a special partition, say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<DiskRole>,
    pub counters: DiskCounters,
}

/// Kernel name prefixes of block devices that are no storage of their own: loop devices, RAM
/// disks, zvols (`zd`), floppies, optical drives, network block devices.
pub const VIRTUAL_DISK_PREFIXES: &[&str] = &["loop", "ram", "zram", "zd", "fd", "sr", "nbd"];

/// Whether a kernel disk name is a virtual device (see [`VIRTUAL_DISK_PREFIXES`]). Linux's
/// `md0` is software RAID, real storage, so FreeBSD's memory disks (`md0` too) are told apart
/// where the vdev's path says more ([`super::Vdev::virtual_backing`]).
pub fn is_virtual_disk(name: &str) -> bool {
    VIRTUAL_DISK_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Where a disk sits in a pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskRole {
    pub pool: String,
    pub class: super::VdevClass,
    /// The top-level vdev (`mirror-0`, `sde`).
    pub vdev: String,
    /// The leaf's own name in the pool (`sda`, `ada2p1`, `gpt/slog0`).
    pub leaf: String,
}

/// On the wire a map tagged by its first key, `source` (`diskstats` or `devstat`), then the
/// variant's fields; decoded without buffering ([`super::tagged`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum DiskCounters {
    Diskstats(Diskstats),
    Devstat(Devstat),
}

impl super::tagged::TagFirst for DiskCounters {
    const TAG: &'static str = "source";
    const VARIANTS: &'static [&'static str] = &["diskstats", "devstat"];
    fn variant<'de, A: serde::de::MapAccess<'de>>(
        name: &str,
        rest: A,
    ) -> Option<Result<Self, A::Error>> {
        let fields = serde::de::value::MapAccessDeserializer::new(rest);
        Some(match name {
            "diskstats" => Diskstats::deserialize(fields).map(DiskCounters::Diskstats),
            "devstat" => Devstat::deserialize(fields).map(DiskCounters::Devstat),
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for DiskCounters {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::tagged::deserialize(d)
    }
}

impl Default for DiskCounters {
    fn default() -> Self {
        DiskCounters::Diskstats(Diskstats::default())
    }
}

/// A `/proc/diskstats` line. The `*_ms` fields are 32-bit in the kernel and wrap; sectors are
/// 512-byte units whatever the device's block size.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diskstats {
    pub major: u32,
    pub minor: u32,
    pub reads: u64,
    pub reads_merged: u64,
    pub sectors_read: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub writes_merged: u64,
    pub sectors_written: u64,
    pub write_ms: u64,
    pub in_flight: u64,
    /// Time the device had I/O in flight ("busy").
    pub io_ms: u64,
    /// Σ of each request's time in the queue: the basis of `aqu-sz`.
    pub weighted_ms: u64,
    /// Kernel 4.18+.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discards: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discards_merged: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sectors_discarded: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard_ms: Option<u64>,
    /// Kernel 5.5+.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms: Option<u64>,
}

/// A FreeBSD `struct devstat` (DEVSTAT_VERSION 6). Arrays are indexed
/// 0 = NO_DATA (flush and other), 1 = READ, 2 = WRITE, 3 = FREE (TRIM).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Devstat {
    pub unit_number: i32,
    pub bytes: [u64; 4],
    pub operations: [u64; 4],
    /// Σ of transaction durations, seconds.
    pub duration: [f64; 4],
    /// Time with at least one transaction outstanding, seconds.
    pub busy_time: f64,
    pub start_count: u32,
    pub end_count: u32,
    pub block_size: u32,
    pub device_type: u32,
    /// Seconds since boot when the device appeared: a change means it was re-attached.
    pub creation_time: f64,
}
