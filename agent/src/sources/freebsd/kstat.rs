//! ZFS kstats from the `kstat.zfs.*` sysctl tree (docs/zfs-sources.md, "Kstats as sysctls"):
//!
//! | sysctl | snapshot |
//! |---|---|
//! | `kstat.zfs.misc.arcstats.<field>` | [`Snapshot::arc`] |
//! | `kstat.zfs.misc.zil.<field>` | [`Snapshot::zil`] |
//! | `kstat.zfs.<pool>.misc.{state,guid,io}`, `.disk.io` (OpenZFS 2.0), `.misc.iostats.<field>` | [`Pool`] |
//! | `kstat.zfs.<pool>.txgs` | [`Pool::txgs`] |
//! | `kstat.zfs.<pool>.dataset.objset-0x<id>.<field>` | [`Pool::datasets`] |
//!
//! A NAMED kstat is a sysctl node with one leaf per field, so it is rebuilt by listing the
//! leaves under its prefix. One listing of `kstat.zfs.` serves every kstat (it is the
//! expensive part live: two system calls per leaf). The raw leaves `state`, `guid` and
//! `txgs` are hidden from listings (`CTLFLAG_SKIP`) and are read by name.
//!
//! The text forms (`state`, `guid`, `io`, `txgs`) are the same as the Linux files, so their
//! parsers are shared with [`crate::sources::linux::kstat`].

use super::sysctl::{Sysctl, SysctlError, SysctlValue, optional};
use crate::sources::linux::kstat as text;
use std::collections::{BTreeMap, BTreeSet};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{ArcStats, DatasetKstats, Kstat, KstatValue, Pool, ZilStats};

pub const PREFIX: &str = "kstat.zfs.";
pub const ARCSTATS: &str = "kstat.zfs.misc.arcstats.";
pub const ZIL: &str = "kstat.zfs.misc.zil.";
pub const VERSION: &str = "vfs.zfs.version.module";

/// kstat fields of type KSTAT_DATA_STRING: kept as text even when they look like a number
/// (a dataset may be named `123` … below its pool, but the rule must not depend on that).
const STRING_FIELDS: &[&str] = &["dataset_name"];

/// A sysctl value as a kstat value. Numbers keep their sign only when negative, so a live
/// read (typed) and a capture (text) of the same kstat compare equal; text that is a number
/// becomes one, because captures and dumps do not record the type.
pub fn kstat_value(field: &str, value: SysctlValue) -> KstatValue {
    let text = match value {
        SysctlValue::Unsigned(v) => return KstatValue::Unsigned(v),
        SysctlValue::Signed(v) => return signed(v),
        SysctlValue::Text(s) => s,
        SysctlValue::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
    };
    if STRING_FIELDS.contains(&field) {
        return KstatValue::Text(text);
    }
    let t = text.trim();
    if let Ok(v) = t.parse::<u64>() {
        KstatValue::Unsigned(v)
    } else if let Ok(v) = t.parse::<i64>() {
        signed(v)
    } else {
        KstatValue::Text(text)
    }
}

fn signed(v: i64) -> KstatValue {
    match u64::try_from(v) {
        Ok(u) => KstatValue::Unsigned(u),
        Err(_) => KstatValue::Signed(v),
    }
}

/// The fields of the NAMED kstat at `prefix` (`kstat.zfs.misc.arcstats.`), from the leaf
/// names in `names` that lie directly below it. Leaves that fail to read are returned as
/// errors; the others are kept.
pub fn read_named(
    sysctl: &dyn Sysctl,
    names: &[String],
    prefix: &str,
) -> (Kstat, Vec<SysctlError>) {
    let mut kstat = Kstat::default();
    let mut errors = Vec::new();
    for name in names {
        let Some(field) = name.strip_prefix(prefix) else {
            continue;
        };
        // Deeper nodes (a kstat nested below this one) are not fields of this kstat.
        if field.is_empty() || field.contains('.') {
            continue;
        }
        match sysctl.read(name) {
            Ok(v) => kstat.insert(field, kstat_value(field, v)),
            Err(e) => errors.push(e),
        }
    }
    (kstat, errors)
}

/// Fills `arc`, `zil`, `pools`, `zfs_loaded` and `host.zfs_version`. With no `kstat.zfs.*`
/// sysctl at all the module is not loaded: `zfs_loaded = false` and one issue.
pub fn read(sysctl: &dyn Sysctl, snap: &mut Snapshot) {
    let names = match sysctl.list(PREFIX) {
        Ok(n) => n,
        Err(e) => {
            snap.zfs_loaded = false;
            snap.note("kstat.zfs", format!("cannot list the ZFS kstats: {e}"));
            return;
        }
    };
    if names.is_empty() {
        snap.zfs_loaded = false;
        snap.note(
            "kstat.zfs",
            "no kstat.zfs.* sysctls: the ZFS kernel module (zfs.ko) is not loaded",
        );
        return;
    }
    snap.zfs_loaded = true;

    match optional(sysctl.text(VERSION)) {
        Ok(v) => snap.host.zfs_version = v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
        Err(e) => snap.note(VERSION, e.to_string()),
    }

    let arc = named_or_note(sysctl, &names, ARCSTATS, snap);
    if arc.is_empty() {
        snap.note(
            ARCSTATS.trim_end_matches('.'),
            "ZFS is loaded but exposes no arcstats",
        );
    } else {
        snap.arc = Some(ArcStats(arc));
    }
    // Every OpenZFS has the zil kstat, but legacy FreeBSD ZFS may not: absence is no issue.
    let zil = named_or_note(sysctl, &names, ZIL, snap);
    if !zil.is_empty() {
        snap.zil = Some(ZilStats(zil));
    }

    for pool in pool_names(&names) {
        let p = read_pool(sysctl, &names, &pool, snap);
        snap.pools.push(p);
    }
}

/// A NAMED kstat; failed leaves become one issue for the whole kstat, not one per leaf.
fn named_or_note(
    sysctl: &dyn Sysctl,
    names: &[String],
    prefix: &str,
    snap: &mut Snapshot,
) -> Kstat {
    let (kstat, errors) = read_named(sysctl, names, prefix);
    note_errors(snap, prefix.trim_end_matches('.'), &errors);
    kstat
}

fn note_errors(snap: &mut Snapshot, source: &str, errors: &[SysctlError]) {
    if let Some(first) = errors.first() {
        let more = match errors.len() {
            1 => String::new(),
            n => format!(" (and {} more fields)", n - 1),
        };
        snap.note(source, format!("{first}{more}"));
    }
}

/// The pools below `kstat.zfs.`: every child but `misc`, sorted.
///
/// The pool name is what precedes the first `.misc.` / `.dataset.` / `.txgs`, so that a
/// capture of a pool whose name contains dots still groups correctly (live, such a pool's
/// sysctls cannot be read by name at all: docs/zfs-sources.md, "Kstats as sysctls").
pub fn pool_names(names: &[String]) -> BTreeSet<String> {
    let mut pools = BTreeSet::new();
    for name in names {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        if rest.starts_with("misc.") || rest == "misc" {
            continue;
        }
        let marker = [
            ".misc.",
            ".disk.",
            ".dataset.",
            ".txgs",
            ".reads",
            ".multihost",
        ]
        .iter()
        .filter_map(|m| rest.find(m))
        .min();
        let pool = match marker {
            Some(i) => &rest[..i],
            None => rest.split('.').next().unwrap_or(rest),
        };
        if !pool.is_empty() {
            pools.insert(pool.to_string());
        }
    }
    pools
}

/// The names `read_pool` reads by name (besides the listed iostats and dataset leaves).
///
/// The pool's io kstat is created with class "disk" (module/zfs/spa_stats.c of OpenZFS 2.0,
/// `kstat_create(name, 0, "io", "disk", KSTAT_TYPE_IO, …)`), and FreeBSD's SPL names a
/// kstat `kstat.<module>.<pool>.<class>.<name>` (module/os/freebsd/spl/spl_kstat.c,
/// `__kstat_create`): `kstat.zfs.<pool>.disk.io` on FreeBSD 13.0. OpenZFS 2.1 removed it.
/// `misc.io` is read too, in case a build names it by the Linux class.
pub fn pool_leaf_names(pool: &str) -> [String; 5] {
    [
        format!("{PREFIX}{pool}.misc.state"),
        format!("{PREFIX}{pool}.misc.guid"),
        format!("{PREFIX}{pool}.misc.io"),
        format!("{PREFIX}{pool}.disk.io"),
        format!("{PREFIX}{pool}.txgs"),
    ]
}

fn read_pool(sysctl: &dyn Sysctl, names: &[String], pool: &str, snap: &mut Snapshot) -> Pool {
    let mut p = Pool {
        name: pool.to_string(),
        ..Pool::default()
    };
    let [state, guid, io, disk_io, txgs] = pool_leaf_names(pool);

    // Each of these is optional by version (state 0.8+, guid 2.2+, io ≤ 2.0, txgs when
    // zfs_txg_history > 0), so "does not exist" is silent and only real failures are noted.
    p.state = parsed(sysctl, &state, text::parse_state, snap);
    p.guid = parsed(sysctl, &guid, text::parse_guid, snap);
    p.io = parsed(sysctl, &io, text::parse_pool_io, snap)
        .or_else(|| parsed(sysctl, &disk_io, text::parse_pool_io, snap));
    p.txgs = parsed(sysctl, &txgs, text::parse_txgs, snap).unwrap_or_default();

    let iostats_prefix = format!("{PREFIX}{pool}.misc.iostats.");
    let iostats = named_or_note(sysctl, names, &iostats_prefix, snap);
    p.iostats = (!iostats.is_empty()).then_some(iostats);

    p.datasets = read_datasets(sysctl, names, pool, snap);
    p
}

/// Reads a text leaf and parses it with a parser shared with Linux.
fn parsed<T>(
    sysctl: &dyn Sysctl,
    name: &str,
    parse: fn(&[u8]) -> Result<T, crate::sources::ParseError>,
    snap: &mut Snapshot,
) -> Option<T> {
    match optional(sysctl.bytes(name)) {
        Ok(None) => None,
        Ok(Some(bytes)) => match parse(&bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                snap.note(name, e.to_string());
                None
            }
        },
        Err(e) => {
            snap.note(name, e.to_string());
            None
        }
    }
}

/// `kstat.zfs.<pool>.dataset.objset-0x<id>.<field>`, one [`DatasetKstats`] per objset.
fn read_datasets(
    sysctl: &dyn Sysctl,
    names: &[String],
    pool: &str,
    snap: &mut Snapshot,
) -> Vec<DatasetKstats> {
    let prefix = format!("{PREFIX}{pool}.dataset.");
    let mut objsets: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for name in names {
        if let Some((objset, field)) = name.strip_prefix(&prefix).and_then(|r| r.split_once('.'))
            && !field.contains('.')
        {
            objsets.entry(objset).or_default().push(name.clone());
        }
    }
    let mut datasets = Vec::new();
    for (objset, leaves) in objsets {
        let node = format!("{prefix}{objset}.");
        let (counters, errors) = read_named(sysctl, &leaves, &node);
        // In a jail, datasets outside it answer EPERM: one issue per dataset, not per field.
        note_errors(snap, node.trim_end_matches('.'), &errors);
        if counters.is_empty() {
            continue;
        }
        datasets.push(DatasetKstats {
            objset: objset.strip_prefix("objset-").unwrap_or(objset).to_string(),
            name: counters.text("dataset_name").map(str::to_string),
            counters,
        });
    }
    datasets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::freebsd::sysctl::DumpSysctl;

    fn fixture(rel: &str) -> String {
        let path = format!(
            "{}/../tests/fixtures/external/freebsd/{rel}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Independent of the code under test: every `prefix<field>: <integer>` line of the file,
    /// split by hand. (All arcstats values are integers.)
    fn naive_fields(text: &str, prefix: &str) -> BTreeMap<String, i128> {
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|l| {
                let (k, v) = l.split_once(": ").expect("name: value");
                (k.to_string(), v.trim().parse::<i128>().expect("integer"))
            })
            .collect()
    }

    fn as_i128(v: &KstatValue) -> i128 {
        match v {
            KstatValue::Unsigned(u) => i128::from(*u),
            KstatValue::Signed(i) => i128::from(*i),
            KstatValue::Text(t) => panic!("text {t:?}"),
        }
    }

    fn snapshot_of(dump: &str) -> Snapshot {
        let d = DumpSysctl::parse(dump).unwrap();
        let mut snap = Snapshot::default();
        read(&d, &mut snap);
        snap
    }

    fn check_arcstats(rel: &str, expected_fields: usize) -> ArcStats {
        let raw = fixture(rel);
        let naive = naive_fields(&raw, ARCSTATS);
        assert_eq!(
            naive.len(),
            expected_fields,
            "{rel}: fields counted by hand"
        );
        let snap = snapshot_of(&raw);
        assert!(snap.zfs_loaded);
        assert!(snap.issues.is_empty(), "{:?}", snap.issues);
        let arc = snap.arc.expect("arcstats");
        assert_eq!(arc.0.fields.len(), naive.len());
        for (k, v) in &naive {
            assert_eq!(as_i128(&arc.0.fields[k]), *v, "{rel}: {k}");
        }
        assert!(snap.pools.is_empty());
        arc
    }

    #[test]
    fn arcstats_freebsd_10_2_legacy_zfs() {
        // 78 lines in the file, all arcstats.
        let arc = check_arcstats("node_exporter-10.2/sysctl-kstat.zfs.misc.arcstats.txt", 78);
        // Values read in the file by eye.
        assert_eq!(arc.arc_meta_used(), Some(392_649_848));
        assert_eq!(arc.arc_meta_limit(), Some(393_216_000));
        assert_eq!(arc.0.u64("other_size"), Some(166_832_272));
        assert_eq!(arc.0.u64("l2_write_not_cacheable"), Some(29_425));
        // 10.2's legacy ZFS has no memory_available_bytes and no iohits.
        assert_eq!(arc.memory_available_bytes(), None);
        assert_eq!(arc.iohits(), None);
    }

    #[test]
    fn arcstats_freebsd_14_0_rc2() {
        let arc = check_arcstats("telegraf-14.0-RC2/sysctl-kstat.zfs.misc.arcstats.txt", 148);
        assert_eq!(arc.memory_available_bytes(), Some(3_663_839_232));
        assert_eq!(arc.arc_meta_used(), Some(80_185_232));
        assert_eq!(arc.0.u64("other_size"), Some(36_376_512));
        assert_eq!(arc.arc_meta_limit(), None);
    }

    #[test]
    fn arcstats_freebsd_14_zftop() {
        let arc = check_arcstats("zftop-14+/sysctl-kstat.zfs.misc.arcstats.txt", 148);
        assert_eq!(arc.hits(), Some(8_019_094));
        assert_eq!(arc.iohits(), Some(12_844));
        assert_eq!(arc.misses(), Some(80_548));
        assert_eq!(arc.memory_available_bytes(), Some(21_221_376));
    }

    #[test]
    fn negative_memory_available_is_signed() {
        let snap = snapshot_of(
            "kstat.zfs.misc.arcstats.memory_available_bytes: -4096\n\
             kstat.zfs.misc.arcstats.size: 10\n",
        );
        let arc = snap.arc.unwrap();
        assert_eq!(
            arc.0.fields["memory_available_bytes"],
            KstatValue::Signed(-4096)
        );
        assert_eq!(arc.memory_available_bytes(), Some(-4096));
        assert_eq!(arc.size(), Some(10));
    }

    #[test]
    fn per_dataset_kstats_openzfs_exporter() {
        let snap = snapshot_of(&fixture(
            "openzfs_exporter/sysctl-kstat.zfs.zroot.dataset.txt",
        ));
        assert!(snap.zfs_loaded);
        // Only dataset kstats in this fixture: no arcstats, which is reported.
        assert!(snap.arc.is_none());
        assert_eq!(snap.issues.len(), 1, "{:?}", snap.issues);
        assert_eq!(snap.pools.len(), 1);
        let pool = &snap.pools[0];
        assert_eq!(pool.name, "zroot");
        assert_eq!(pool.state, None);
        // Sorted by objset name: "objset-0x30b" < "objset-0x84a1".
        let ds: Vec<(&str, Option<&str>)> = pool
            .datasets
            .iter()
            .map(|d| (d.objset.as_str(), d.name.as_deref()))
            .collect();
        assert_eq!(
            ds,
            [
                ("0x30b", Some("zroot/var/tmp")),
                ("0x84a1", Some("zroot/s3"))
            ]
        );
        // Values read in the file.
        let s3 = &pool.datasets[1].counters;
        assert_eq!(s3.u64("nunlinked"), Some(304_598));
        assert_eq!(s3.u64("nread"), Some(278_766_165));
        assert_eq!(s3.u64("reads"), Some(1_606_921));
        assert_eq!(s3.u64("nwritten"), Some(52_392_378_153));
        assert_eq!(s3.u64("writes"), Some(1_060_365));
        assert_eq!(s3.fields.len(), 7);
        assert_eq!(pool.datasets[0].counters.u64("writes"), Some(106_036));
    }

    #[test]
    fn other_global_kstats_parse_as_named() {
        for (rel, prefix, field, value) in [
            (
                "telegraf-14.0-RC2/sysctl-kstat.zfs.misc.zfetchstats.txt",
                "kstat.zfs.misc.zfetchstats.",
                "max_streams",
                9411,
            ),
            (
                "telegraf-freenas/sysctl-kstat.zfs.misc.zfetchstats.txt",
                "kstat.zfs.misc.zfetchstats.",
                "hits",
                0,
            ),
            (
                "telegraf-freenas/sysctl-kstat.zfs.misc.vdev_cache_stats.txt",
                "kstat.zfs.misc.vdev_cache_stats.",
                "hits",
                465_583,
            ),
        ] {
            let raw = fixture(rel);
            let d = DumpSysctl::parse(&raw).unwrap();
            let names = d.list(PREFIX).unwrap();
            let (k, errors) = read_named(&d, &names, prefix);
            assert!(errors.is_empty());
            assert_eq!(k.fields.len(), naive_fields(&raw, prefix).len(), "{rel}");
            assert_eq!(k.u64(field), Some(value), "{rel}");
        }
    }

    #[test]
    fn pool_leaves_state_guid_io_txgs_and_iostats() {
        let dump = "\
kstat.zfs.misc.arcstats.size: 1
kstat.zfs.misc.zil.zil_commit_count: 5
kstat.zfs.tank.misc.state: ONLINE
kstat.zfs.tank.misc.guid: 1234567890123
kstat.zfs.tank.misc.iostats.trim_bytes_written: 77
kstat.zfs.tank.misc.iostats.autotrim_bytes_written: 8
kstat.zfs.tank.misc.io: 100      200      3        4        5        6        7        8        9        10       11       12      
kstat.zfs.tank.misc.dmu_tx_assign.1 ns: 3
kstat.zfs.tank.txgs: 
txg      birth            state ndirty       nread        nwritten     reads    writes   otime        qtime        wtime        stime       
10       1000             C     4096         0            8192         0        2        100          10           20           30          
11       2000             O     0            0            0            0        0        0            0            0            0           
vfs.zfs.version.module: 2.2.0-FreeBSD_g95785196f
";
        let snap = snapshot_of(dump);
        assert!(snap.issues.is_empty(), "{:?}", snap.issues);
        assert_eq!(
            snap.host.zfs_version.as_deref(),
            Some("2.2.0-FreeBSD_g95785196f")
        );
        assert_eq!(snap.zil.as_ref().unwrap().zil_commit_count(), Some(5));
        let p = snap.pool("tank").unwrap();
        assert_eq!(p.state.as_deref(), Some("ONLINE"));
        assert_eq!(p.guid, Some(1_234_567_890_123));
        let iostats = p.iostats.as_ref().unwrap();
        assert_eq!(iostats.u64("trim_bytes_written"), Some(77));
        assert_eq!(iostats.fields.len(), 2);
        let io = p.io.unwrap();
        assert_eq!((io.nread, io.nwritten, io.rcnt), (100, 200, 12));
        assert_eq!(p.txgs.len(), 2);
        assert_eq!(
            (p.txgs[0].txg, p.txgs[0].nwritten, p.txgs[1].state.as_str()),
            (10, 8192, "O")
        );
    }

    /// OpenZFS 2.0 (FreeBSD 13.0): the io kstat has class "disk" (module/zfs/spa_stats.c,
    /// `spa_io_history_init`: `kstat_create(name, 0, "io", "disk", KSTAT_TYPE_IO, 1, 0)`),
    /// so FreeBSD's SPL puts it at `kstat.zfs.<pool>.disk.io` (module/os/freebsd/spl/
    /// spl_kstat.c, `__kstat_create`: `kstat.<module>[.<pool>].<class>.<name>`). Its text is
    /// `kstat_sysctl_io`'s one line of twelve `%-8llu` fields, nread first, rcnt last.
    #[test]
    fn openzfs_2_0_pool_io_is_read_from_disk_io() {
        let dump = "\
kstat.zfs.misc.arcstats.size: 1
kstat.zfs.zroot.misc.state: ONLINE
kstat.zfs.zroot.disk.io: 4096     8192     1        2        30       40       50       60       70       80       0        1       
vfs.zfs.version.module: 2.0.0-FreeBSD_gf11b09dec
";
        let snap = snapshot_of(dump);
        assert!(snap.issues.is_empty(), "{:?}", snap.issues);
        let names: Vec<&str> = snap.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["zroot"]);
        let io = snap.pool("zroot").unwrap().io.unwrap();
        assert_eq!(
            (io.nread, io.nwritten, io.reads, io.writes, io.wcnt, io.rcnt),
            (4096, 8192, 1, 2, 0, 1)
        );
    }

    #[test]
    fn bad_pool_leaves_are_noted_and_the_rest_continues() {
        let snap = snapshot_of(
            "kstat.zfs.misc.arcstats.size: 1\n\
             kstat.zfs.tank.misc.state: ONLINE DEGRADED\n\
             kstat.zfs.tank.misc.guid: abc\n\
             kstat.zfs.tank.misc.iostats.trim_bytes_written: 1\n",
        );
        let sources: Vec<&str> = snap.issues.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(
            sources,
            ["kstat.zfs.tank.misc.state", "kstat.zfs.tank.misc.guid"]
        );
        let p = snap.pool("tank").unwrap();
        assert_eq!((p.state.as_deref(), p.guid), (None, None));
        assert!(p.iostats.is_some());
    }

    #[test]
    fn no_kstats_means_zfs_not_loaded_with_one_issue() {
        let snap = snapshot_of("kern.ostype: FreeBSD\n");
        assert!(!snap.zfs_loaded);
        assert_eq!(snap.issues.len(), 1);
        assert!(snap.issues[0].message.contains("not loaded"));
        assert!(snap.arc.is_none() && snap.pools.is_empty());
    }

    #[test]
    fn pools_are_found_by_listing_and_misc_is_not_a_pool() {
        let names: Vec<String> = [
            "kstat.zfs.misc.arcstats.size",
            "kstat.zfs.tank.misc.iostats.x",
            "kstat.zfs.backup.dataset.objset-0x36.writes",
            "kstat.zfs.my.pool.misc.iostats.x",
            "kstat.zfs.odd.txgs",
            "kstat.zfs.bare",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let pools: Vec<String> = pool_names(&names).into_iter().collect();
        assert_eq!(pools, ["backup", "bare", "my.pool", "odd", "tank"]);
    }

    #[test]
    fn values_from_live_types_and_text_agree() {
        assert_eq!(
            kstat_value("x", SysctlValue::Signed(5)),
            KstatValue::Unsigned(5)
        );
        assert_eq!(
            kstat_value("x", SysctlValue::Text("5\n".into())),
            KstatValue::Unsigned(5)
        );
        assert_eq!(
            kstat_value("x", SysctlValue::Text("-5".into())),
            KstatValue::Signed(-5)
        );
        assert_eq!(
            kstat_value("dataset_name", SysctlValue::Text("123".into())),
            KstatValue::Text("123".into())
        );
        assert_eq!(
            kstat_value("x", SysctlValue::Text("18446744073709537686".into())),
            KstatValue::Unsigned(18_446_744_073_709_537_686)
        );
    }
}
