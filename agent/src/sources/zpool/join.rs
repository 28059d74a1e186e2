//! Leaf vdevs and disks: the names `zpool status` prints, and which kernel disk a device path
//! lives on.

use std::collections::HashMap;
use zpulse_proto::snapshot::{Disk, Os};

/// Linux udev link directories: `zpool status` shows only the link's own name.
const LINK_DIRS: &[&str] = &[
    "disk/by-id/",
    "disk/by-path/",
    "disk/by-uuid/",
    "disk/by-partuuid/",
    "disk/by-partlabel/",
    "disk/by-label/",
    "disk/by-vdev/",
    "mapper/",
];

/// The short name of a leaf, as libzfs `zpool_vdev_name` (lib/libzfs/libzfs_pool.c) gives
/// it on `os`: files keep their path; a disk's path goes through `zfs_strip_path` and, when
/// `whole_disk` is set, `zfs_strip_partition`, whose implementations differ by OS
/// (lib/libzutil/os/*/zutil_device_path_os.c):
///
/// * Linux: `/dev/` and a udev link directory go; a whole disk that ZFS partitioned itself
///   loses the partition suffix (`sda1` → `sda`, `…-part1` → `…`, `nvme0n1p1` → `nvme0n1`).
/// * FreeBSD: only a leading `/dev/` goes, and partitions are never stripped ("We don't
///   strip/append partitions on FreeBSD"). That matters because FreeBSD's `zpool` records
///   `whole_disk = 1` for any GEOM provider it can open (`zfs_dev_is_whole_disk` is a
///   `g_open`), partitions and labels included: `ada0p3`, `gpt/zfs0` and `da12` stay.
pub fn short_name(path: &str, whole_disk: bool, vdev_type: &str, os: Os) -> String {
    if vdev_type == "file" {
        return path.to_string();
    }
    let mut name = path.strip_prefix("/dev/").unwrap_or(path);
    if os == Os::Freebsd {
        return name.to_string();
    }
    for dir in LINK_DIRS {
        if let Some(rest) = name.strip_prefix(dir) {
            name = rest;
            break;
        }
    }
    if whole_disk {
        name = strip_partition(name);
    }
    name.to_string()
}

/// `sda1` → `sda`, `nvme0n1p1` → `nvme0n1`, `ata-X-part1` → `ata-X`; anything else unchanged.
fn strip_partition(name: &str) -> &str {
    if let Some(pos) = name.rfind("-part")
        && name[pos + 5..].bytes().all(|b| b.is_ascii_digit())
        && pos + 5 < name.len()
    {
        return &name[..pos];
    }
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if stem.len() == name.len() || stem.is_empty() {
        return name;
    }
    // A device name that itself ends in a digit (nvme0n1, loop0) separates with `p`.
    if let Some(base) = stem.strip_suffix('p')
        && base.ends_with(|c: char| c.is_ascii_digit())
    {
        return base;
    }
    if stem.ends_with(|c: char| c.is_ascii_digit()) {
        return name;
    }
    stem
}

/// The whole disk that a device path lives on, among the disks of the snapshot.
///
/// `resolve` turns a link (`/dev/disk/by-id/…`) into its target (`/dev/sdc1`): the live file
/// system, or the link table a capture recorded. A partition maps to its whole disk; FreeBSD
/// GEOM names (`gpt/zfs0`, `ada0p3`, `diskid/…`) match a disk's aliases.
pub fn disk_for(
    path: &str,
    disks: &[Disk],
    resolve: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    DiskIndex::new(disks).disk_for(path, resolve)
}

/// The disks of a snapshot by name and by alias, for joining every leaf of a pool without a
/// scan per leaf (quadratic on hosts with thousands of disks).
pub struct DiskIndex<'a> {
    by_name: HashMap<&'a str, &'a Disk>,
    by_alias: HashMap<&'a str, &'a Disk>,
}

impl<'a> DiskIndex<'a> {
    /// The first disk of each name and of each alias wins, as a scan in order finds it.
    pub fn new(disks: &'a [Disk]) -> Self {
        let mut by_name = HashMap::with_capacity(disks.len());
        let mut by_alias = HashMap::new();
        for d in disks {
            by_name.entry(d.name.as_str()).or_insert(d);
            for a in &d.aliases {
                by_alias.entry(a.as_str()).or_insert(d);
            }
        }
        DiskIndex { by_name, by_alias }
    }

    /// [`disk_for`] against these disks.
    pub fn disk_for(&self, path: &str, resolve: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        let found = self.device_for(path, resolve)?;
        Some(
            found
                .whole_disk
                .clone()
                .unwrap_or_else(|| found.name.clone()),
        )
    }

    /// The kernel device a path names, partition or whole disk, among these disks (see
    /// [`disk_for`]): by name first, then by alias.
    pub fn device_for(
        &self,
        path: &str,
        resolve: &dyn Fn(&str) -> Option<String>,
    ) -> Option<&'a Disk> {
        let target = resolve(path).unwrap_or_else(|| path.to_string());
        let name = target.strip_prefix("/dev/").unwrap_or(&target);
        self.by_name
            .get(name)
            .or_else(|| self.by_alias.get(name))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_zpool_status_prints_them() {
        for (path, whole, kind, want) in [
            ("/dev/sda1", true, "disk", "sda"),
            ("/dev/sda1", false, "disk", "sda1"),
            ("/dev/nvme0n1p1", true, "disk", "nvme0n1"),
            (
                "/dev/disk/by-id/ata-WDC_WD40-part1",
                true,
                "disk",
                "ata-WDC_WD40",
            ),
            (
                "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4",
                false,
                "disk",
                "wwn-0x5000c500a1b2c3d4",
            ),
            ("/dev/loop0", false, "disk", "loop0"),
            ("/var/tmp/vdev.img", false, "file", "/var/tmp/vdev.img"),
            ("/dev/mapper/crypt-sdb", false, "disk", "crypt-sdb"),
        ] {
            assert_eq!(short_name(path, whole, kind, Os::Linux), want, "{path}");
        }
    }

    /// FreeBSD's libzutil (lib/libzutil/os/freebsd/zutil_device_path_os.c):
    /// `zfs_strip_partition` returns the name unchanged, `zfs_strip_path` removes only
    /// `_PATH_DEV`, and `zfs_dev_is_whole_disk` is true for every provider `g_open` opens,
    /// so the configs of partitions and labels carry `whole_disk = 1` too. `zpool status`
    /// therefore prints the provider's name below /dev.
    #[test]
    fn freebsd_names_keep_partitions_and_labels() {
        for (path, whole, want) in [
            ("/dev/ada0p3", true, "ada0p3"),
            ("/dev/gpt/zfs0", true, "gpt/zfs0"),
            ("/dev/gpt/zfs1", true, "gpt/zfs1"),
            ("/dev/da12", true, "da12"),
            ("/dev/nda0p4.eli", true, "nda0p4.eli"),
            (
                "/dev/diskid/DISK-S3Z9NB0K123456p2",
                true,
                "diskid/DISK-S3Z9NB0K123456p2",
            ),
            ("/dev/label/data0", false, "label/data0"),
        ] {
            assert_eq!(short_name(path, whole, "disk", Os::Freebsd), want, "{path}");
        }
        assert_eq!(
            short_name("/tank/vdev.img", true, "file", Os::Freebsd),
            "/tank/vdev.img"
        );
        // The same paths on Linux would lose their "partition" (what was wrong before).
        assert_eq!(short_name("/dev/da12", true, "disk", Os::Linux), "da");
    }

    fn disk(name: &str, whole: Option<&str>, aliases: &[&str]) -> Disk {
        Disk {
            name: name.into(),
            whole_disk: whole.map(str::to_string),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            ..Disk::default()
        }
    }

    #[test]
    fn paths_join_to_whole_disks() {
        let disks = vec![
            disk("sdc", None, &[]),
            disk("sdc1", Some("sdc"), &[]),
            disk("ada2", None, &["ada2p1", "gpt/special0"]),
        ];
        let none = |_: &str| None;
        assert_eq!(disk_for("/dev/sdc1", &disks, &none).as_deref(), Some("sdc"));
        assert_eq!(
            disk_for("/dev/gpt/special0", &disks, &none).as_deref(),
            Some("ada2")
        );
        let by_id = |p: &str| (p == "/dev/disk/by-id/ata-X-part1").then(|| "/dev/sdc1".to_string());
        assert_eq!(
            disk_for("/dev/disk/by-id/ata-X-part1", &disks, &by_id).as_deref(),
            Some("sdc")
        );
        assert_eq!(disk_for("/dev/sdz", &disks, &none), None);
    }
}
