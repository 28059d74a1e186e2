//! FreeBSD: the same data from sysctls (`kstat.zfs.*`, `vfs.zfs.*`, `kern.devstat.all`,
//! `kern.geom.confxml`, `kern.cp_time`, …), read by name through the [`Sysctl`] trait.
//! Everything here compiles and is tested on Linux; only the live sysctl call is
//! `cfg(target_os = "freebsd")` (`live.rs`).
//!
//! | module | reads | fills |
//! |---|---|---|
//! | [`kstat`] | `kstat.zfs.*`, `vfs.zfs.version.module` | `zfs_loaded`, `arc`, `zil`, `pools`, `host.zfs_version` |
//! | [`tunables`] | `vfs.zfs.*` | `tunables` (Linux names) |
//! | [`devstat`] + [`geom`] | `kern.devstat.*`, `kern.geom.confxml` | `disks` |
//! | [`host`] | `kern.*`, `hw.*`, `vm.*`, `net.link.generic.*` | `host`, `cpu`, `memory`, `net` |

pub mod devstat;
pub mod geom;
pub mod host;
pub mod kstat;
pub mod sysctl;
pub mod tunables;

#[cfg(target_os = "freebsd")]
mod live;
#[cfg(test)]
mod replay_tests;

#[cfg(target_os = "freebsd")]
pub use live::LiveSysctl;
pub use sysctl::{CaptureSysctl, DumpSysctl, Sysctl, SysctlError, SysctlValue};

use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{Disk, DiskCounters};

pub const DEVSTAT_VERSION: &str = "kern.devstat.version";
pub const DEVSTAT_ALL: &str = "kern.devstat.all";
pub const GEOM_CONFXML: &str = "kern.geom.confxml";

/// Fills `snap` with everything the sysctls offer. Each source that fails adds one issue
/// and the others go on.
pub fn collect(sysctl: &dyn Sysctl, snap: &mut Snapshot) {
    kstat::read(sysctl, snap);
    tunables::read(sysctl, snap);
    read_disks(sysctl, snap);
    host::read(sysctl, snap);
}

/// Disks: one per `kern.devstat.all` entry, with size, sector sizes and rotation from the
/// GEOM DISK provider of the same name, and as aliases the GEOM providers that sit on it
/// alone (partitions, labels, GELI), which is how vdev paths are joined to disks.
/// pass(4) devices are left out: they are a second path to an `ada`/`da` disk that has
/// its own entry, and carry no block I/O.
fn read_disks(sysctl: &dyn Sysctl, snap: &mut Snapshot) {
    let checked = sysctl
        .u64(DEVSTAT_VERSION)
        .map_err(|e| e.to_string())
        .and_then(|v| devstat::check_version(v).map_err(|e| e.to_string()));
    if let Err(message) = checked {
        snap.note(DEVSTAT_VERSION, format!("disks left out: {message}"));
        return;
    }
    let read_all = || {
        sysctl
            .bytes(DEVSTAT_ALL)
            .map_err(|e| e.to_string())
            .and_then(|b| devstat::decode(&b).map_err(|e| e.to_string()))
    };
    let mut all = match read_all() {
        Ok(a) => a,
        Err(message) => {
            snap.note(DEVSTAT_ALL, format!("disks left out: {message}"));
            return;
        }
    };
    // An entry copied mid-update is inconsistent; one fresh copy usually has none.
    if all.entries.iter().any(devstat::DevstatEntry::in_update)
        && let Ok(again) = read_all()
    {
        all = again;
    }

    // Without GEOM the disks are still listed, only without size and rotation.
    let geom = match sysctl
        .text(GEOM_CONFXML)
        .map_err(|e| e.to_string())
        .and_then(|x| geom::parse(&x).map_err(|e| e.to_string()))
    {
        Ok(g) => Some(g),
        Err(message) => {
            snap.note(
                GEOM_CONFXML,
                format!("disk size and type unknown: {message}"),
            );
            None
        }
    };

    let mut torn = Vec::new();
    for e in all.entries {
        if e.is_pass() {
            continue;
        }
        if e.in_update() {
            torn.push(e.name);
            continue;
        }
        let g = geom.as_ref().and_then(|g| g.disk(&e.name));
        let devstat_block = (e.stats.block_size > 0).then_some(e.stats.block_size);
        let aliases = geom
            .as_ref()
            .map(|g| g.aliases_of(&e.name))
            .unwrap_or_default();
        snap.disks.push(Disk {
            whole_disk: None,
            aliases,
            rotational: g.and_then(geom::GeomDisk::rotational),
            rpm: g.and_then(geom::GeomDisk::rpm),
            logical_block_size: g.and_then(|d| d.sectorsize).or(devstat_block),
            physical_block_size: g.and_then(geom::GeomDisk::physical_block_size),
            size: g.and_then(|d| d.mediasize),
            // devstat lists whole disks; partitions are GEOM aliases of them.
            offset: None,
            counters: DiskCounters::Devstat(e.stats),
            roles: Vec::new(),
            name: e.name,
        });
    }
    if !torn.is_empty() {
        snap.note(
            DEVSTAT_ALL,
            format!(
                "left out of this sample, their statistics were being updated while copied \
                 (sequence0 != sequence1): {}",
                torn.join(", ")
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::devstat::tests::{Raw, buffer};
    use super::host::tests::{ifmibdata, xswdev_v2};
    use super::sysctl::tests::MapSysctl;
    use super::*;
    use zpulse_proto::snapshot::Devstat;

    const ARCSTATS: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/external/freebsd/zftop-14+/sysctl-kstat.zfs.misc.arcstats.txt"
    ));
    const CONFXML: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/external/geom/facter-freebsd12/kern.geom.confxml"
    ));

    /// A FreeBSD 14 host: arcstats from a real machine, one pool, the facter laptop's GEOM
    /// (ada0 = SSD), and a devstat buffer with ada0, its pass device and a cd0.
    fn system() -> MapSysctl {
        let mut s = MapSysctl::default();
        let dump = DumpSysctl::parse(ARCSTATS).unwrap();
        for name in dump.list("").unwrap() {
            s.set(&name, dump.read(&name).unwrap());
        }
        let text = |t: &str| SysctlValue::Text(t.to_string());
        s.set("vfs.zfs.version.module", text("2.2.4-FreeBSD_g256659204"));
        s.set("kstat.zfs.zroot.misc.state", text("ONLINE\n"));
        s.set(
            "kstat.zfs.zroot.misc.iostats.trim_bytes_written",
            SysctlValue::Unsigned(9),
        );
        s.set(
            "kstat.zfs.zroot.dataset.objset-0x36.dataset_name",
            text("zroot/ROOT"),
        );
        s.set(
            "kstat.zfs.zroot.dataset.objset-0x36.writes",
            SysctlValue::Unsigned(11),
        );
        s.set("vfs.zfs.arc.max", SysctlValue::Unsigned(0));
        s.set("vfs.zfs.txg.timeout", SysctlValue::Signed(5));
        s.set(DEVSTAT_VERSION, SysctlValue::Signed(6));
        let mut ada = Raw::disk(b"ada\0", 0);
        ada.ops = [1, 100, 200, 3];
        ada.busy = (4, 0);
        let mut pass = Raw::disk(b"pass\0", 0);
        pass.device_type = 0x100;
        let mut cd = Raw::disk(b"cd\0", 0);
        cd.block_size = 2048;
        s.set(DEVSTAT_ALL, SysctlValue::Bytes(buffer(3, &[ada, pass, cd])));
        s.set(GEOM_CONFXML, text(CONFXML));
        s.set(host::CP_TIME, text("1 2 3 4 5"));
        s.set(host::PHYSMEM, SysctlValue::Unsigned(1 << 33));
        s.set(host::PAGESIZE, SysctlValue::Signed(4096));
        s.set(host::FREE_COUNT, SysctlValue::Unsigned(100));
        s.set(host::INACTIVE_COUNT, SysctlValue::Unsigned(50));
        s.set(host::NSWAPDEV, SysctlValue::Signed(1));
        s.set(&host::swap_info(0), xswdev_v2(256, 0));
        s.set(host::IFCOUNT, SysctlValue::Signed(2));
        s.set(
            &host::ifdata_general(2),
            SysctlValue::Bytes(ifmibdata(b"igb0", 152)),
        );
        s
    }

    #[test]
    fn collect_fills_every_part_of_the_snapshot() {
        let mut snap = Snapshot::default();
        collect(&system(), &mut snap);
        assert!(snap.issues.is_empty(), "{:?}", snap.issues);
        assert!(snap.zfs_loaded);
        assert_eq!(
            snap.host.zfs_version.as_deref(),
            Some("2.2.4-FreeBSD_g256659204")
        );
        assert_eq!(snap.arc.as_ref().unwrap().hits(), Some(8_019_094));
        let pool = snap.pool("zroot").unwrap();
        assert_eq!(pool.state.as_deref(), Some("ONLINE"));
        assert_eq!(pool.datasets[0].name.as_deref(), Some("zroot/ROOT"));
        assert_eq!(snap.tunables.zfs_arc_max(), Some(0));
        assert_eq!(snap.tunables.zfs_txg_timeout(), Some(5));

        // pass0 is left out; ada0 is joined with GEOM; cd0 has no GEOM DISK entry here.
        let names: Vec<&str> = snap.disks.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["ada0", "cd0"]);
        let ada = snap.disk("ada0").unwrap();
        assert_eq!(ada.rotational, Some(false));
        assert_eq!(ada.rpm, None);
        assert_eq!(ada.size, Some(512_110_190_592));
        assert_eq!(
            (ada.logical_block_size, ada.physical_block_size),
            (Some(512), Some(4096))
        );
        // The facter laptop's partitions, GELI providers and GPT label all lie on ada0.
        assert_eq!(
            ada.aliases,
            [
                "ada0p1",
                "ada0p2",
                "ada0p2.eli",
                "ada0p3",
                "ada0p3.eli",
                "gpt/gptboot0"
            ]
        );
        match &ada.counters {
            DiskCounters::Devstat(Devstat {
                operations,
                busy_time,
                ..
            }) => {
                assert_eq!(*operations, [1, 100, 200, 3]);
                assert_eq!(*busy_time, 4.0);
            }
            other => panic!("{other:?}"),
        }
        let cd = snap.disk("cd0").unwrap();
        assert_eq!(
            (cd.rotational, cd.size, cd.logical_block_size),
            (None, None, Some(2048))
        );

        assert_eq!(snap.cpu.unwrap().idle, 5);
        let mem = snap.memory.unwrap();
        assert_eq!(
            (mem.total, mem.swap_total, mem.swap_free),
            (1 << 33, Some(1 << 20), Some(1 << 20))
        );
        assert_eq!(snap.net.len(), 1);
        assert_eq!(snap.net[0].name, "igb0");
    }

    #[test]
    fn each_failing_source_adds_one_issue_and_the_rest_continue() {
        let mut s = system();
        s.set(DEVSTAT_VERSION, SysctlValue::Signed(5));
        s.set(GEOM_CONFXML, SysctlValue::Text("<mesh>".into()));
        s.0.remove(host::CP_TIME);
        let mut snap = Snapshot::default();
        collect(&s, &mut snap);
        let sources: Vec<&str> = snap.issues.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(sources, [DEVSTAT_VERSION, host::CP_TIME]);
        assert!(
            snap.issues[0].message.contains("version is 5"),
            "{:?}",
            snap.issues
        );
        assert!(snap.disks.is_empty());
        assert!(snap.arc.is_some() && snap.memory.is_some());

        // Version fine, GEOM broken: disks without size, and one issue for GEOM.
        s.set(DEVSTAT_VERSION, SysctlValue::Signed(6));
        let mut snap = Snapshot::default();
        collect(&s, &mut snap);
        let sources: Vec<&str> = snap.issues.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(sources, [GEOM_CONFXML, host::CP_TIME]);
        assert_eq!(snap.disk("ada0").unwrap().size, None);
    }

    #[test]
    fn mid_update_entries_are_reported_not_used() {
        let mut s = system();
        let mut torn = Raw::disk(b"da\0", 1);
        torn.seq0 = 5;
        torn.seq1 = 6;
        s.set(
            DEVSTAT_ALL,
            SysctlValue::Bytes(buffer(3, &[Raw::disk(b"ada\0", 0), torn])),
        );
        let mut snap = Snapshot::default();
        collect(&s, &mut snap);
        assert_eq!(snap.disks.len(), 1);
        assert_eq!(snap.issues.len(), 1);
        assert_eq!(snap.issues[0].source, DEVSTAT_ALL);
        assert!(
            snap.issues[0].message.ends_with(": da1"),
            "{:?}",
            snap.issues
        );

        s.set(DEVSTAT_ALL, SysctlValue::Bytes(vec![0; 100]));
        let mut snap = Snapshot::default();
        collect(&s, &mut snap);
        assert!(
            snap.issues[0].message.contains("length 100"),
            "{:?}",
            snap.issues
        );
    }

    #[test]
    fn zfs_not_loaded_still_collects_the_host() {
        let mut s = system();
        s.0.retain(|k, _| !k.starts_with("kstat.zfs.") && !k.starts_with("vfs.zfs."));
        let mut snap = Snapshot::default();
        collect(&s, &mut snap);
        assert!(!snap.zfs_loaded);
        assert_eq!(snap.issues.len(), 1);
        assert!(snap.arc.is_none() && snap.tunables.0.is_empty());
        assert_eq!(snap.disks.len(), 2);
        assert!(snap.cpu.is_some());
    }

    /// `zpulse capture` of this host, and its replay: every node of it is read by
    /// `collect` (the indexed `vm.swap_info.0` and `net.link.generic.ifdata.2.general`
    /// too, named from the counts read before them), so the capture holds each one, and the
    /// replay is the snapshot read from the source (typed values and capture text agree: a
    /// signed 5 is an unsigned 5).
    #[test]
    fn a_capture_holds_every_node_read_and_replays_the_same() {
        use crate::sources::{Root, System};
        let source = system();
        let names: Vec<String> = source.0.keys().cloned().collect();
        let empty = tempfile::tempdir().unwrap();
        let system = System::Freebsd {
            sysctl: Box::new(source),
            root: Root::new(empty.path()),
            kept: Default::default(),
        };
        let identity = system.identity();
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("capture");
        let stats = crate::capture::capture_into(&system, &identity, &dest).unwrap();
        assert!(stats.unreadable.is_empty(), "{:?}", stats.unreadable);
        let mut captured: Vec<String> = std::fs::read_dir(dest.join("sysctl"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        captured.sort();
        assert_eq!(captured, names);

        let mut live = crate::sources::snapshot(&system, identity);
        let replayed = crate::capture::load(&dest).unwrap();
        live.taken_at = replayed.taken_at;
        live.monotonic = None;
        assert_eq!(replayed, live);
        assert_eq!(replayed.tunables.zfs_txg_timeout(), Some(5));
        assert_eq!(replayed.net[0].name, "igb0");
    }
}
