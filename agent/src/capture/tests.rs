//! A capture holds what the readers read, and nothing else: real captures are captured
//! again (a capture's [`System`] stands in for the live one) and the result is held to its
//! source.

use super::{CaptureStats, Manifest, capture_into, load};
use crate::sources::System;
use crate::sources::freebsd::{DumpSysctl, Sysctl};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{HostIdentity, Os};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");

fn lab(rel: &str) -> PathBuf {
    Path::new(FIXTURES).join("lab").join(rel)
}

/// The identity `zpulse capture --root` gives a capture it re-captures: its manifest's.
fn identity(dir: &Path) -> HostIdentity {
    let m = Manifest::read(dir).unwrap();
    HostIdentity {
        hostname: m.hostname,
        os: m.os,
        kernel: m.kernel,
        zfs_version: m.zfs_version,
    }
}

/// Captures capture `source` into `dest` as `zpulse capture DEST --root SOURCE` does.
fn recapture(source: &Path, dest: &Path) -> CaptureStats {
    let os = Manifest::read(source).unwrap().os;
    capture_into(&System::capture(source, os), &identity(source), dest).unwrap()
}

/// A capture's snapshot with the moment it was taken left out: a new capture is taken now.
fn loaded(dir: &Path) -> Snapshot {
    let mut snap = load(dir).unwrap();
    snap.taken_at = 0.0;
    snap
}

/// Every file below `dir`, relative to it, the manifest and the lab's `cli/` excepted.
fn files(dir: &Path) -> BTreeSet<String> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir.join(rel)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if dir.join(&child).is_dir() {
                walk(dir, &child, out);
            } else {
                out.insert(child);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, "", &mut out);
    out.retain(|f| f != super::MANIFEST && !f.starts_with("cli/"));
    out
}

/// A scratch directory holding a copy of lab `basic/000` at `source`, to change.
fn basic_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    copy(&lab("basic/000"), &source);
    (tmp, source)
}

/// The `i`th source a capture run reports as not captured is `source`, for `why`.
fn reported(stats: &CaptureStats, i: usize, source: &str, why: &str) {
    let note = &stats.unreadable[i];
    assert!(
        note.starts_with(&format!("{source}: ")) && note.contains(why),
        "{:?}",
        stats.unreadable
    );
}

/// A copy of capture `from` at `to`, to change.
fn copy(from: &Path, to: &Path) {
    for rel in files(from).iter().chain([&super::MANIFEST.to_string()]) {
        let target = to.join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(from.join(rel), target).unwrap();
    }
}

#[test]
fn a_capture_of_a_capture_loads_as_the_same_snapshot() {
    // Plain disks, partitions with their offsets (layout), a raidz, a degraded pool.
    for rel in [
        "basic/000",
        "basic/001",
        "health/layout/000",
        "health/hm/000",
        "vdevs/rz-zpulse/001",
        "vdevs/deg-zpulse/000",
    ] {
        let source = lab(rel);
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("copy");
        let stats = recapture(&source, &dest);
        assert!(stats.unreadable.is_empty(), "{rel}: {:?}", stats.unreadable);
        assert_eq!(loaded(&dest), loaded(&source), "{rel}");
        // Every byte is the source's.
        for f in files(&dest) {
            assert_eq!(
                std::fs::read(dest.join(&f)).unwrap(),
                std::fs::read(source.join(&f)).unwrap(),
                "{rel}: {f}"
            );
        }
        assert_eq!(
            stats.files,
            files(&dest).len() + 1,
            "{rel}: with the manifest"
        );
    }
}

/// The files of lab `basic/000` that no reader parses: the global kstats besides `arcstats`
/// and `zil` (zpulse models no `abdstats`, `dbufstats`, …) and the pool kstats `reads`,
/// `multihost` and `dmu_tx_assign` (docs/zfs-sources.md).
const UNPARSED: &[&str] = &[
    "proc/spl/kstat/zfs/abdstats",
    "proc/spl/kstat/zfs/dbufstats",
    "proc/spl/kstat/zfs/dmu_tx",
    "proc/spl/kstat/zfs/dnodestats",
    "proc/spl/kstat/zfs/fletcher_4_bench",
    "proc/spl/kstat/zfs/fm",
    "proc/spl/kstat/zfs/import_progress",
    "proc/spl/kstat/zfs/metaslab_stats",
    "proc/spl/kstat/zfs/vdev_cache_stats",
    "proc/spl/kstat/zfs/vdev_mirror_stats",
    "proc/spl/kstat/zfs/vdev_raidz_bench",
    "proc/spl/kstat/zfs/zfetchstats",
    "proc/spl/kstat/zfs/zstd",
    "proc/spl/kstat/zfs/tank/dmu_tx_assign",
    "proc/spl/kstat/zfs/tank/multihost",
    "proc/spl/kstat/zfs/tank/reads",
];

#[test]
fn files_no_reader_reads_are_left_out() {
    let (tmp, source) = basic_copy();
    // Files a Linux host has and no reader reads.
    for extra in [
        "proc/loadavg",
        "proc/spl/kstat/zfs/tank/new_kstat",
        "sys/block/sda/queue/scheduler",
        "sys/module/zfs/parameters/zfs_not_a_known_tunable",
    ] {
        let path = source.join(extra);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "1\n").unwrap();
    }
    let dest = tmp.path().join("copy");
    recapture(&source, &dest);
    let mut expected = files(&lab("basic/000"));
    for f in UNPARSED {
        assert!(expected.remove(*f), "{f} is in basic/000");
    }
    assert_eq!(files(&dest), expected);
    assert_eq!(loaded(&dest), loaded(&source));
}

/// Each file a capture holds is one its snapshot needs: without it, the snapshot differs.
#[test]
fn every_file_captured_changes_the_snapshot_when_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("copy");
    recapture(&lab("basic/000"), &dest);
    // The manifest repeats the module's version (`sys/module/zfs/version`), so that a
    // capture says what it is without a reader; here only the file may say it.
    let manifest = dest.join(super::MANIFEST);
    let text = std::fs::read_to_string(&manifest).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("zfs_version"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without, text);
    std::fs::write(&manifest, without).unwrap();
    let whole = loaded(&dest);
    assert!(whole.host.zfs_version.is_some());
    let aside = tmp.path().join("aside");
    let captured = files(&dest);
    assert!(captured.len() > 60, "{}", captured.len());
    for f in &captured {
        std::fs::rename(dest.join(f), &aside).unwrap();
        assert!(loaded(&dest) != whole, "{f} was captured but is not needed");
        std::fs::rename(&aside, dest.join(f)).unwrap();
    }
}

/// A root laid out like a live sysfs (`sources::linux::sysblock`'s `live_layout`), where
/// `sys/class/block` says which devices are partitions: `md0` is a whole disk beside `md`,
/// though its name says partition. The capture keeps what the readers probed there, so its
/// replay knows it too.
#[test]
fn a_live_sysfs_replays_as_it_was_read() {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    let names = crate::sources::linux::sysblock::tests::live_layout_in(&live);
    let diskstats: String = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("   9 {i:7} {n} 1 0 8 1 2 0 16 3 0 4 4\n"))
        .collect();
    std::fs::create_dir_all(live.join("proc")).unwrap();
    std::fs::write(live.join("proc/diskstats"), diskstats).unwrap();
    std::fs::write(
        live.join("sys/block/cciss!c0d0/cciss!c0d0p1/start"),
        "2048\n",
    )
    .unwrap();
    let system = System::linux(crate::sources::Root::new(&live));
    let identity = system.identity();
    let dest = tmp.path().join("copy");
    capture_into(&system, &identity, &dest).unwrap();

    let mut read_live = crate::sources::snapshot(&system, identity);
    read_live.taken_at = 0.0;
    read_live.monotonic = None;
    let replayed = loaded(&dest);
    assert_eq!(replayed, read_live);
    let disk = |n: &str| replayed.disk(n).unwrap();
    assert_eq!(disk("md0").whole_disk, None);
    assert_eq!(disk("weird").whole_disk.as_deref(), Some("odd"));
    assert_eq!(
        disk("cciss/c0d0p1").whole_disk.as_deref(),
        Some("cciss/c0d0")
    );
    assert_eq!(disk("cciss/c0d0p1").offset, Some(2048 * 512));
    // Probed for existence only: there, and empty. The `dev` files nobody reads: absent.
    assert_eq!(
        std::fs::read(dest.join("sys/class/block/weird/partition")).unwrap(),
        b""
    );
    assert!(dest.join("sys/class/block/md0").is_dir());
    let captured = files(&dest);
    assert!(
        !captured.iter().any(|f| f.ends_with("/dev")),
        "{captured:?}"
    );
}

/// A pool directory with no kstat in it is still a pool the snapshot lists, so the capture
/// keeps the directory.
#[test]
fn a_listed_directory_is_kept_even_when_empty() {
    let (tmp, source) = basic_copy();
    std::fs::create_dir(source.join("proc/spl/kstat/zfs/bare")).unwrap();
    let dest = tmp.path().join("copy");
    recapture(&source, &dest);
    assert!(dest.join("proc/spl/kstat/zfs/bare").is_dir());
    let snap = loaded(&dest);
    assert!(snap.pool("bare").is_some(), "{:?}", snap.pools);
    assert_eq!(snap, loaded(&source));
}

/// A source that cannot be read is reported and left out; the rest is captured.
#[test]
fn unreadable_sources_are_reported_not_copied() {
    let (tmp, source) = basic_copy();
    std::fs::remove_file(source.join("proc/stat")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", source.join("proc/stat")).unwrap();
    let arcstats = source.join("proc/spl/kstat/zfs/arcstats");
    std::fs::remove_file(&arcstats).unwrap();
    crate::sources::root::make_fifo(&arcstats);
    let dest = tmp.path().join("copy");
    let stats = recapture(&source, &dest);
    assert_eq!(stats.unreadable.len(), 2, "{:?}", stats.unreadable);
    reported(&stats, 0, "proc/spl/kstat/zfs/arcstats", "FIFO");
    reported(&stats, 1, "proc/stat", "character device");
    assert!(!dest.join("proc/stat").exists());
    assert!(!dest.join("proc/spl/kstat/zfs/arcstats").exists());
    assert!(dest.join("proc/spl/kstat/zfs/zil").is_file());
}

/// A capture whose `arcstats` or `pool_configs.nvlist` is a dangling symbolic link
/// lost the ARC or the pool layout without a word (a missing file is one this kernel does
/// not have). Each is a note naming the link now; the rest is still read.
#[test]
fn a_dangling_link_in_a_sources_place_is_a_note() {
    let (_tmp, source) = basic_copy();
    let whole = loaded(&source);
    assert!(whole.arc.is_some() && whole.pools.iter().any(|p| p.config.is_some()));
    for rel in [
        "proc/spl/kstat/zfs/arcstats",
        "zfs-ioctl/pool_configs.nvlist",
    ] {
        std::fs::remove_file(source.join(rel)).unwrap();
        std::os::unix::fs::symlink("/nonexistent/zpulse-target", source.join(rel)).unwrap();
    }
    let snap = loaded(&source);
    assert!(snap.arc.is_none());
    assert!(
        snap.pools.iter().all(|p| p.config.is_none()),
        "{:?}",
        snap.pools
    );
    for source_name in ["proc/spl/kstat/zfs/arcstats", "zfs-ioctl"] {
        let issue = snap
            .issues
            .iter()
            .find(|i| i.source == source_name)
            .unwrap_or_else(|| panic!("no note for {source_name}: {:?}", snap.issues));
        assert!(
            issue.message.contains("symbolic link") && issue.message.contains("zpulse-target"),
            "{issue:?}"
        );
    }
    // What else the capture holds is read as before (the disks without their pool roles).
    assert_eq!(snap.zil, whole.zil);
    let names = |s: &Snapshot| s.disks.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&snap), names(&whole));
}

/// A capture being re-captured names a pool `../../../x`: the reply its name leads to,
/// outside the capture, is neither read nor written anywhere; the pool costs only itself.
#[test]
fn a_path_out_of_the_capture_is_neither_read_nor_written() {
    use crate::sources::nvlist::encode::{Endian, encode};
    use crate::sources::nvlist::{NvList, NvValue};
    let (tmp, source) = basic_copy();
    let evil = "../../../x";
    let configs = NvList::new()
        .with("tank", NvValue::NvList(NvList::new()))
        .with(evil, NvValue::NvList(NvList::new()));
    std::fs::write(
        source.join("zfs-ioctl/pool_configs.nvlist"),
        encode(&configs, Endian::Little),
    )
    .unwrap();
    // zfs-ioctl/pool_stats/../../../x.nvlist below `source` is `tmp/x.nvlist`: a real
    // reply, which a read would decode into a pool.
    let reply = std::fs::read(source.join("zfs-ioctl/pool_stats/tank.nvlist")).unwrap();
    std::fs::write(tmp.path().join("x.nvlist"), reply).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let dest = out.join("copy");
    let stats = recapture(&source, &dest);
    // Said so, as a source that could not be read.
    assert_eq!(stats.unreadable.len(), 1, "{:?}", stats.unreadable);
    reported(
        &stats,
        0,
        "zfs-ioctl/pool_stats/../../../x.nvlist",
        "outside",
    );
    assert!(!out.join("x.nvlist").exists());
    let snap = loaded(&source);
    let pool = snap.pool(evil).expect("listed by POOL_CONFIGS");
    assert!(pool.config.is_none(), "the reply outside was read");
    assert!(
        snap.issues
            .iter()
            .any(|i| i.message.contains("outside the root")),
        "{:?}",
        snap.issues
    );
    assert!(snap.pool("tank").unwrap().config.is_some());
    assert_eq!(loaded(&dest), snap);
}

/// A FreeBSD capture made from real `sysctl` listings (FreeBSD 14.0-RC2's arcstats and
/// zfetchstats, a pool's dataset kstats): re-captured, it holds the leaves the readers read
/// (arcstats, the datasets) and not zfetchstats, which no reader parses.
#[test]
fn a_freebsd_capture_keeps_the_sysctls_read_and_no_others() {
    let dump = |rel: &str| {
        let text = std::fs::read_to_string(Path::new(FIXTURES).join(rel)).unwrap();
        DumpSysctl::parse(&text).unwrap()
    };
    let read = [
        dump("external/freebsd/telegraf-14.0-RC2/sysctl-kstat.zfs.misc.arcstats.txt"),
        dump("external/freebsd/openzfs_exporter/sysctl-kstat.zfs.zroot.dataset.txt"),
    ];
    let unread = dump("external/freebsd/telegraf-14.0-RC2/sysctl-kstat.zfs.misc.zfetchstats.txt");
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    std::fs::create_dir_all(source.join("sysctl")).unwrap();
    let mut expected = BTreeSet::new();
    for (d, keep) in read.iter().map(|d| (d, true)).chain([(&unread, false)]) {
        for name in d.list("").unwrap() {
            std::fs::write(source.join("sysctl").join(&name), d.text(&name).unwrap()).unwrap();
            if keep {
                expected.insert(format!("sysctl/{name}"));
            }
        }
    }
    let objsets: BTreeSet<&str> = expected
        .iter()
        .filter_map(|f| {
            f.strip_prefix("sysctl/kstat.zfs.zroot.dataset.")?
                .split('.')
                .next()
        })
        .collect();
    assert!(expected.len() > 100 && objsets.len() > 1 && !unread.is_empty());
    std::fs::write(
        source.join(super::MANIFEST),
        "format = 1\nos = \"freebsd\"\ncaptured_at = 1700000000.5\nhostname = \"bsd\"\n",
    )
    .unwrap();
    let dest = tmp.path().join("copy");
    let stats = recapture(&source, &dest);
    assert!(stats.unreadable.is_empty(), "{:?}", stats.unreadable);
    assert_eq!(files(&dest), expected);
    let snap = loaded(&dest);
    assert_eq!(snap.host.os, Os::Freebsd);
    assert_eq!(snap.pool("zroot").unwrap().datasets.len(), objsets.len());
    assert_eq!(snap, loaded(&source));
}

/// A path a reader probed and then read is captured with what it read, once.
#[test]
fn a_path_probed_then_read_holds_what_was_read() {
    let mut recording = crate::sources::record::Recording::default();
    recording.present.insert("proc/x".into());
    recording.files.insert("proc/x".into(), b"42\n".to_vec());
    recording.present.insert("sys/probed".into());
    recording.present.insert("sys/d".into());
    recording.dirs.insert("sys/d".into());
    let tmp = tempfile::tempdir().unwrap();
    let mut stats = CaptureStats::default();
    super::write::write_recording(tmp.path(), &recording, &mut stats).unwrap();
    assert_eq!(std::fs::read(tmp.path().join("proc/x")).unwrap(), b"42\n");
    assert_eq!(std::fs::read(tmp.path().join("sys/probed")).unwrap(), b"");
    assert!(tmp.path().join("sys/d").is_dir());
    assert_eq!((stats.files, stats.bytes), (2, 3));
}

/// Whatever a recording names, nothing is written outside the capture: a path with `..`,
/// an absolute one, or a sysctl name with a `/` is refused and said so.
#[test]
fn a_recorded_path_leaving_the_capture_is_refused() {
    let mut recording = crate::sources::record::Recording::default();
    recording
        .files
        .insert("a/../../escaped".into(), b"x".to_vec());
    recording
        .files
        .insert("/tmp/absolute".into(), b"x".to_vec());
    recording.dirs.insert("../up".into());
    recording.sysctls.insert(
        "../../sysctl-escaped".into(),
        crate::sources::freebsd::SysctlValue::Unsigned(1),
    );
    recording.files.insert("kept".into(), b"x".to_vec());
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("in/capture");
    std::fs::create_dir_all(&dest).unwrap();
    let mut stats = CaptureStats::default();
    super::write::write_recording(&dest, &recording, &mut stats).unwrap();
    assert_eq!(stats.unreadable.len(), 4, "{:?}", stats.unreadable);
    assert!(
        stats
            .unreadable
            .iter()
            .all(|u| u.contains("not a plain relative path"))
    );
    assert_eq!(
        files(tmp.path()),
        BTreeSet::from(["in/capture/kept".to_string()])
    );
    assert!(!tmp.path().join("up").exists() && !tmp.path().join("in/up").exists());
}
