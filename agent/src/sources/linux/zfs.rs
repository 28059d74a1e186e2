//! Reader for `/proc/spl/kstat/zfs`: ARC, ZIL and per-pool kstats, plus the module version.
//!
//! Thin on purpose: it fetches bytes through a [`Root`] and hands them to the pure parsers in
//! [`super::kstat`]. OpenZFS 0.6 to 2.4 differ in which files exist (`io` gone in 2.1, `guid`
//! new in 2.2, …), so a missing file is simply not reported, while a file that exists but
//! cannot be read or parsed becomes one [`zpulse_proto::SourceIssue`] and the rest goes on.

use super::kstat::{parse_guid, parse_named, parse_pool_io, parse_state, parse_txgs};
use super::{Missing, read_parsed};
use crate::sources::Root;
use std::io;
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{ArcStats, DatasetKstats, Pool, ZilStats};

const KSTAT_DIR: &str = "proc/spl/kstat/zfs";
const VERSION_FILE: &str = "sys/module/zfs/version";

/// Fills `zfs_loaded`, `arc`, `zil`, `pools` and `host.zfs_version`.
pub fn read(root: &Root, snap: &mut Snapshot) {
    read_version(root, snap);
    if !root.is_dir(KSTAT_DIR) {
        snap.zfs_loaded = false;
        let message = if root.exists(KSTAT_DIR) {
            "ZFS kernel module not loaded: /proc/spl/kstat/zfs is not a directory; pools, ARC \
             and ZIL are not reported"
        } else {
            "ZFS kernel module not loaded: /proc/spl/kstat/zfs does not exist; pools, ARC and \
             ZIL are not reported"
        };
        snap.note(KSTAT_DIR, message);
        return;
    }
    snap.zfs_loaded = true;
    snap.arc = read_parsed(
        root,
        &format!("{KSTAT_DIR}/arcstats"),
        snap,
        Missing::Expected,
        parse_named,
    )
    .map(ArcStats);
    snap.zil = read_parsed(
        root,
        &format!("{KSTAT_DIR}/zil"),
        snap,
        Missing::Expected,
        parse_named,
    )
    .map(ZilStats);

    let entries = match root.entries(KSTAT_DIR) {
        Ok(entries) => entries,
        Err(e) => {
            snap.note(KSTAT_DIR, format!("cannot list the directory: {e}"));
            Vec::new()
        }
    };
    // The global kstats are files; every directory beside them is an imported pool.
    let mut pools: Vec<Pool> = Vec::new();
    for (name, is_dir) in entries {
        if !is_dir {
            continue;
        }
        if GLOBAL_KSTATS.contains(&name.as_str()) {
            snap.note(
                format!("{KSTAT_DIR}/{name}"),
                "a directory where the kernel keeps a kstat file: not a pool, and its figures \
                 are missing",
            );
            continue;
        }
        pools.extend(read_pool(root, name, snap));
    }
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    snap.pools = pools;
}

fn read_version(root: &Root, snap: &mut Snapshot) {
    match root.read_trimmed(VERSION_FILE) {
        Ok(version) if !version.is_empty() => snap.host.zfs_version = Some(version),
        Ok(_) => snap.note(VERSION_FILE, "empty"),
        // Without the module there is no version; the kstat check says why, once.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => snap.note(VERSION_FILE, format!("cannot read: {e}")),
    }
}

/// One pool directory; `None` when the pool went away between listing and reading.
fn read_pool(root: &Root, name: String, snap: &mut Snapshot) -> Option<Pool> {
    let dir = format!("{KSTAT_DIR}/{name}");
    let files = match root.list(&dir) {
        Ok(files) => files,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            snap.note(&dir, format!("cannot list the directory: {e}"));
            return Some(Pool {
                name,
                ..Pool::default()
            });
        }
    };
    // Only files the listing showed are opened: most versions lack some of them, and `dbufs`
    // style expensive or unmodelled files (`reads`, `multihost`, `dmu_tx_assign`) are skipped.
    let has = |file: &str| files.iter().any(|f| f == file);
    let path = |file: &str| format!("{dir}/{file}");
    let mut pool = Pool {
        name,
        ..Pool::default()
    };
    if has("state") {
        pool.state = read_parsed(root, &path("state"), snap, Missing::Expected, parse_state);
    }
    if has("guid") {
        pool.guid = read_parsed(root, &path("guid"), snap, Missing::Expected, parse_guid);
    }
    if has("iostats") {
        pool.iostats = read_parsed(root, &path("iostats"), snap, Missing::Expected, parse_named);
    }
    if has("io") {
        pool.io = read_parsed(root, &path("io"), snap, Missing::Expected, parse_pool_io);
    }
    if has("txgs") {
        pool.txgs = read_parsed(root, &path("txgs"), snap, Missing::Expected, parse_txgs)
            .unwrap_or_default();
    }
    pool.datasets = files
        .iter()
        .filter_map(|file| {
            let objset = file.strip_prefix("objset-")?;
            let counters = read_parsed(root, &path(file), snap, Missing::Expected, parse_named)?;
            Some(DatasetKstats {
                objset: objset.to_string(),
                name: counters.text("dataset_name").map(str::to_string),
                counters,
            })
        })
        .collect();
    Some(pool)
}

/// The global kstats of `/proc/spl/kstat/zfs` that are files (OpenZFS
/// `module/os/linux/spl/spl-kstat.c` registers them beside the pool directories). One of
/// these names as a directory is a broken source, not a pool.
const GLOBAL_KSTATS: &[&str] = &[
    "abdstats",
    "arcstats",
    "dbgmsg",
    "dbufs",
    "dbufstats",
    "dmu_tx",
    "dnodestats",
    "fletcher_4_bench",
    "fm",
    "import_progress",
    "metaslab_stats",
    "qat",
    "vdev_cache_stats",
    "vdev_mirror_stats",
    "vdev_raidz_bench",
    "xuio_stats",
    "zfetchstats",
    "zil",
    "zstd",
    "chksum_bench",
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");

    /// A scratch root (a `tempfile` directory, removed on drop) that files are written into.
    struct Scratch(tempfile::TempDir);

    impl Scratch {
        fn new() -> Self {
            Scratch(tempfile::tempdir().unwrap())
        }

        fn path(&self) -> &Path {
            self.0.path()
        }

        fn write(&self, rel: &str, contents: &[u8]) {
            let path = self.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, contents).unwrap();
        }
    }

    fn lab(capture: &str) -> Root {
        Root::new(Path::new(FIXTURES).join("lab/basic").join(capture))
    }

    #[test]
    fn lab_capture() {
        let mut snap = Snapshot::default();
        read(&lab("000"), &mut snap);
        assert!(snap.zfs_loaded);
        assert_eq!(snap.issues, vec![], "{:?}", snap.issues);
        // sys/module/zfs/version
        assert_eq!(snap.host.zfs_version.as_deref(), Some("2.1.11-1+deb12u1"));
        let names: Vec<&str> = snap.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["tank"]);
        let tank = &snap.pools[0];
        assert_eq!(tank.state.as_deref(), Some("ONLINE"));
        assert_eq!(tank.guid, None, "2.1 has no guid kstat");
        assert_eq!(tank.io, None, "2.1 has no io kstat");
        assert_eq!(tank.iostats.as_ref().map(|k| k.fields.len()), Some(18));
        // tank/txgs: txgs 5 to 14.
        assert_eq!(tank.txgs.len(), 10);
        assert_eq!(tank.txgs.first().map(|t| t.txg), Some(5));
        let datasets: Vec<(&str, Option<&str>)> = tank
            .datasets
            .iter()
            .map(|d| (d.objset.as_str(), d.name.as_deref()))
            .collect();
        assert_eq!(
            datasets,
            [("0x36", Some("tank")), ("0x55", Some("tank/data"))]
        );
        // objset-0x55: nwritten 211763200; all rows kept, dataset_name included.
        assert_eq!(tank.datasets[1].counters.u64("nwritten"), Some(211763200));
        assert_eq!(tank.datasets[1].counters.fields.len(), 7);
        let arc = snap.arc.as_ref().unwrap();
        assert_eq!(arc.hits(), Some(3524));
        assert_eq!(arc.memory_available_bytes(), Some(2564484352));
        assert_eq!(arc.arc_meta_limit(), Some(1167836160));
        assert_eq!(snap.zil.as_ref().unwrap().zil_commit_count(), Some(500));

        let mut later = Snapshot::default();
        read(&lab("001"), &mut later);
        assert_eq!(later.issues, vec![]);
        assert_eq!(
            later.pools[0].datasets[1].counters.u64("nread"),
            Some(209715200)
        );
    }

    #[test]
    fn module_not_loaded() {
        let tmp = Scratch::new();
        // Starts true so that the reader is seen to clear it.
        let mut snap = Snapshot {
            zfs_loaded: true,
            ..Snapshot::default()
        };
        read(&Root::new(tmp.path()), &mut snap);
        assert!(!snap.zfs_loaded);
        assert_eq!(snap.issues.len(), 1, "{:?}", snap.issues);
        assert_eq!(snap.issues[0].source, "proc/spl/kstat/zfs");
        assert!(snap.issues[0].message.contains("not loaded"));
        assert!(snap.arc.is_none() && snap.zil.is_none() && snap.pools.is_empty());
        assert_eq!(snap.host.zfs_version, None);
    }

    /// Builds a root whose kstat directory holds a copy of a flat fixture tree.
    fn copy_tree(from: &Path, to: &Path) {
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                std::fs::create_dir_all(&target).unwrap();
                copy_tree(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    #[test]
    fn openzfs_2_3_tree() {
        let tmp = Scratch::new();
        let kstat = tmp.path().join(KSTAT_DIR);
        std::fs::create_dir_all(&kstat).unwrap();
        let src = Path::new(FIXTURES).join("external/linux/telegraf-openzfs-2.3");
        copy_tree(&src, &kstat);
        let mut snap = Snapshot::default();
        read(&Root::new(tmp.path()), &mut snap);
        assert_eq!(snap.issues, vec![]);
        let names: Vec<&str> = snap.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["store", "zroot-nas"]);
        // store/guid and zroot-nas/guid.
        assert_eq!(snap.pools[0].guid, Some(14462676634310329861));
        assert_eq!(snap.pools[1].guid, Some(13912022383768625417));
        for pool in &snap.pools {
            let objsets = std::fs::read_dir(src.join(&pool.name))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with("objset-")
                })
                .count();
            assert_eq!(pool.datasets.len(), objsets, "{}", pool.name);
            assert!(pool.datasets.iter().all(|d| d.name.is_some()));
            assert_eq!(pool.txgs.len(), 100);
            assert_eq!(pool.state.as_deref(), Some("ONLINE"));
        }
        assert!(
            snap.pools[0]
                .datasets
                .iter()
                .any(|d| d.objset == "0x36" && d.name.as_deref() == Some("store"))
        );
        assert_eq!(snap.arc.as_ref().unwrap().iohits(), Some(1992434));
        assert_eq!(snap.host.zfs_version, None, "no sys/module in this tree");
    }

    #[test]
    fn legacy_pool_io_and_odd_names() {
        let tmp = Scratch::new();
        let io = std::fs::read(
            Path::new(FIXTURES).join("external/linux/node_exporter-pool-kstats/pool1/io"),
        )
        .unwrap();
        tmp.write(&format!("{KSTAT_DIR}/my pool.v2/io"), &io);
        tmp.write(&format!("{KSTAT_DIR}/my pool.v2/state"), b"DEGRADED\n");
        tmp.write(&format!("{KSTAT_DIR}/a/state"), b"ONLINE\n");
        tmp.write(&format!("{KSTAT_DIR}/dbufs"), b"not parsed\n");
        tmp.write("sys/module/zfs/version", b"0.7.13-1\n");
        let mut snap = Snapshot::default();
        read(&Root::new(tmp.path()), &mut snap);
        assert_eq!(snap.issues, vec![]);
        assert!(snap.zfs_loaded);
        assert_eq!(snap.host.zfs_version.as_deref(), Some("0.7.13-1"));
        let names: Vec<&str> = snap.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "my pool.v2"]);
        // pool1/io line 3.
        assert_eq!(snap.pools[1].io.map(|io| io.nwritten), Some(3206144));
        assert_eq!(snap.pools[1].state.as_deref(), Some("DEGRADED"));
        assert!(snap.arc.is_none());
    }

    #[test]
    fn a_bad_file_is_one_issue_and_the_rest_continues() {
        let tmp = Scratch::new();
        tmp.write(
            &format!("{KSTAT_DIR}/arcstats"),
            b"1 1 0x01 2 96 1 2\nname type data\nhits 4 12\nsize 4 huge\n",
        );
        tmp.write(&format!("{KSTAT_DIR}/zil"), b"zil_commit_count 4 3\n");
        tmp.write(&format!("{KSTAT_DIR}/tank/state"), b"ONLINE\n");
        tmp.write(&format!("{KSTAT_DIR}/tank/txgs"), b"txg birth state\n1 2\n");
        tmp.write(
            &format!("{KSTAT_DIR}/tank/objset-0x1"),
            b"dataset_name 7 tank/with space\nwrites 4 5\n",
        );
        tmp.write(&format!("{KSTAT_DIR}/tank/objset-0x2"), b"writes 4 -5\n");
        let mut snap = Snapshot::default();
        read(&Root::new(tmp.path()), &mut snap);
        let sources: Vec<&str> = snap.issues.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(
            sources,
            [
                "proc/spl/kstat/zfs/arcstats",
                "proc/spl/kstat/zfs/tank/txgs",
                "proc/spl/kstat/zfs/tank/objset-0x2",
            ]
        );
        assert!(
            snap.issues[0].message.contains("line 4"),
            "{:?}",
            snap.issues
        );
        assert!(snap.arc.is_none());
        assert_eq!(snap.zil.as_ref().unwrap().zil_commit_count(), Some(3));
        let tank = &snap.pools[0];
        assert_eq!(tank.state.as_deref(), Some("ONLINE"));
        assert!(tank.txgs.is_empty());
        assert_eq!(tank.datasets.len(), 1);
        assert_eq!(tank.datasets[0].name.as_deref(), Some("tank/with space"));
    }

    /// One pool's damaged kstats cost that pool's figures only: four pools of a
    /// real OpenZFS 2.1 capture (tests/fixtures/lab/health/layout/000), with `same/state`
    /// garbled, `mix/iostats` cut in half and `wide/txgs` replaced by a directory.
    #[test]
    fn one_pools_damaged_kstats_cost_only_that_pool() {
        let src = Path::new(FIXTURES).join("lab/health/layout/000");
        let dir = tempfile::tempdir().unwrap();
        let kstat = dir.path().join(KSTAT_DIR);
        std::fs::create_dir_all(&kstat).unwrap();
        copy_tree(&src.join(KSTAT_DIR), &kstat);
        std::fs::write(kstat.join("same/state"), b"\xff\xfe not a state\n").unwrap();
        let iostats = std::fs::read(kstat.join("mix/iostats")).unwrap();
        std::fs::write(kstat.join("mix/iostats"), &iostats[..iostats.len() / 2]).unwrap();
        std::fs::remove_file(kstat.join("wide/txgs")).unwrap();
        std::fs::create_dir(kstat.join("wide/txgs")).unwrap();

        let mut damaged = Snapshot::default();
        read(&Root::new(dir.path()), &mut damaged);
        let mut intact = Snapshot::default();
        read(&Root::new(&src), &mut intact);

        let names: Vec<&str> = damaged.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["ash", "mix", "same", "wide"]);
        // Untouched pools are exactly as in the intact capture.
        assert_eq!(damaged.pool("ash"), intact.pool("ash"));
        let (same, mix, wide) = (
            damaged.pool("same").unwrap(),
            damaged.pool("mix").unwrap(),
            damaged.pool("wide").unwrap(),
        );
        assert_eq!(same.state, None);
        assert_eq!(same.txgs, intact.pool("same").unwrap().txgs);
        assert_eq!(mix.state.as_deref(), Some("ONLINE"));
        assert!(wide.txgs.is_empty());
        assert_eq!(wide.state.as_deref(), Some("ONLINE"));
        // Each damaged file is one note naming it.
        let noted: Vec<&str> = damaged.issues.iter().map(|i| i.source.as_str()).collect();
        for file in ["same/state", "wide/txgs"] {
            assert!(noted.iter().any(|n| n.ends_with(file)), "{file}: {noted:?}");
        }
        assert!(intact.issues.is_empty(), "{:?}", intact.issues);
    }
}
