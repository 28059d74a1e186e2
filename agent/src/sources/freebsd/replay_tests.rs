//! A FreeBSD host as `sysctl(3)` and `/dev/zfs` answer it, captured with `zpulse capture`'s
//! code and replayed: the raw bytes of each node go through [`decode`], the same function
//! the live reader applies to what the kernel returned, so the only thing not exercised is
//! the system call itself.
//!
//! Three OpenZFS releases differ in how the raw kstats end (module/os/freebsd/spl/
//! spl_kstat.c, `kstat_sysctl_raw`):
//! * 2.1 (FreeBSD 13.x) and 2.2.0–2.2.2 (FreeBSD 14.0): `sbuf_trim`, then `SYSCTL_OUT` of
//!   `sbuf_len` bytes: no trailing newline and no NUL;
//! * 2.2.3 and later (FreeBSD 14.1+, 15): `sbuf_new_for_sysctl` (`SBUF_INCLUDENUL`) and no
//!   trim: the text as printed, then a NUL.
//!
//! 2.1 has no `guid` kstat (module/zfs/spa_stats.c gained `spa_guid_data` in 2.2).

use super::devstat::tests::{Raw, buffer};
use super::host;
use super::sysctl::{CtlKind, Sysctl, SysctlError, SysctlValue, decode};
use crate::sources::nvlist::encode::{Endian, encode};
use crate::sources::nvlist::{NvList, NvValue};
use crate::sources::{Root, System};
use std::collections::{BTreeMap, BTreeSet};
use zpulse_proto::snapshot::{Os, VdevClass};

/// The kernel's answers: per node its `CTLTYPE` and the bytes one read returns.
struct Kernel(BTreeMap<String, (CtlKind, Vec<u8>)>);

impl Kernel {
    fn set(&mut self, name: &str, kind: CtlKind, bytes: impl Into<Vec<u8>>) {
        self.0.insert(name.to_string(), (kind, bytes.into()));
    }

    /// `sysctl_handle_string` (sys/kern/kern_sysctl.c) copies the string with its NUL.
    fn string(&mut self, name: &str, text: &str) {
        let mut b = text.as_bytes().to_vec();
        b.push(0);
        self.set(name, CtlKind::String, b);
    }
}

impl Sysctl for Kernel {
    fn read(&self, name: &str) -> Result<SysctlValue, SysctlError> {
        let (kind, bytes) = self.0.get(name).ok_or_else(|| SysctlError::NotFound {
            name: name.to_string(),
        })?;
        decode(name, *kind, bytes.clone())
    }

    /// The raw kstats are `CTLFLAG_SKIP` (spl_kstat.c, `kstat_install`): not listed.
    fn list(&self, prefix: &str) -> Result<Vec<String>, SysctlError> {
        let skipped = |n: &str| {
            n.ends_with(".misc.state") || n.ends_with(".misc.guid") || n.ends_with(".txgs")
        };
        Ok(self
            .0
            .keys()
            .filter(|k| k.starts_with(prefix) && !skipped(k))
            .cloned()
            .collect())
    }
}

/// `spa_txg_history_show_header` and two `spa_txg_history_show` rows as the kernel prints
/// them (the rows of the lab capture vdevs/rz-zpulse/001, same format on both OSes); the
/// raw kstat handler puts a newline before the header.
const TXGS: &str = "\ntxg      birth            state ndirty       nread        nwritten     reads    writes   otime        qtime        wtime        stime       \n\
5        53388742410      C     688128       0            995328       0        229      1825158760   34480        207850       456338380   \n\
6        55213901170      C     0            0            909312       0        150      456713380    20320        201180       236567300   \n";
const GUID: u64 = 16_181_557_826_227_404_498;
const CP_TIME: [u64; 5] = [81_512, 3, 40_017, 912, 7_700_321];

/// `terminated`: OpenZFS ≥ 2.2.3; `guid`: OpenZFS ≥ 2.2.
fn host(version: &str, terminated: bool, guid: bool) -> Kernel {
    let mut k = Kernel(BTreeMap::new());
    let raw = |text: &str| -> Vec<u8> {
        if terminated {
            let mut b = text.as_bytes().to_vec();
            b.push(0);
            b
        } else {
            // sbuf_trim: trailing white space goes.
            text.trim_end().as_bytes().to_vec()
        }
    };
    k.string("kern.hostname", "nas.example.org");
    k.string("kern.osrelease", "14.0-RELEASE-p6");
    k.string("vfs.zfs.version.module", version);
    // Named kstats: one CTLTYPE_U64 leaf per KSTAT_DATA_UINT64 field.
    k.set(
        "kstat.zfs.misc.arcstats.hits",
        CtlKind::Unsigned(8),
        8_019_094u64.to_ne_bytes(),
    );
    k.set(
        "kstat.zfs.misc.arcstats.misses",
        CtlKind::Unsigned(8),
        12_345u64.to_ne_bytes(),
    );
    // Listed leaves of the pool (its raw kstats are not listed).
    k.set(
        "kstat.zfs.zroot.misc.iostats.trim_bytes_written",
        CtlKind::Unsigned(8),
        4096u64.to_ne_bytes(),
    );
    k.set(
        "kstat.zfs.zroot.misc.state",
        CtlKind::String,
        raw("ONLINE\n"),
    );
    if guid {
        k.set(
            "kstat.zfs.zroot.misc.guid",
            CtlKind::String,
            raw(&format!("{GUID}\n")),
        );
    }
    k.set("kstat.zfs.zroot.txgs", CtlKind::String, raw(TXGS));
    // sys/vm/vm_meter.c and sys/kern/kern_mib.c: hw.physmem "LU", hw.pagesize "I", the
    // page counts "IU".
    k.set(
        host::PHYSMEM,
        CtlKind::Unsigned(8),
        (8u64 << 30).to_ne_bytes(),
    );
    k.set(host::PAGESIZE, CtlKind::Signed(4), 4096i32.to_ne_bytes());
    k.set(
        host::FREE_COUNT,
        CtlKind::Unsigned(4),
        100_000u32.to_ne_bytes(),
    );
    k.set(
        host::INACTIVE_COUNT,
        CtlKind::Unsigned(4),
        50_000u32.to_ne_bytes(),
    );
    let cp: Vec<u8> = CP_TIME.iter().flat_map(|v| v.to_ne_bytes()).collect();
    k.set("kern.cp_time", CtlKind::Signed(8), cp);
    k.set(
        "kern.devstat.version",
        CtlKind::Signed(4),
        6i32.to_ne_bytes(),
    );
    k.set(
        "kern.devstat.all",
        CtlKind::Opaque,
        buffer(1, &[Raw::disk(b"ada\0", 0), Raw::disk(b"da\0", 12)]),
    );
    k.string(
        "kern.geom.confxml",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/external/geom/facter-freebsd12/kern.geom.confxml"
        )),
    );
    k
}

fn disk(path: &str, id: u64) -> NvList<'static> {
    NvList::new()
        .with("type", NvValue::String("disk".into()))
        .with("id", NvValue::Uint64(id))
        .with("guid", NvValue::Uint64(1000 + id))
        .with("path", NvValue::String(path.to_owned().into()))
        // FreeBSD's zpool sets whole_disk for every GEOM provider it opens
        // (lib/libzutil/os/freebsd/zutil_device_path_os.c, zfs_dev_is_whole_disk).
        .with("whole_disk", NvValue::Uint64(1))
}

/// The pool `zroot`: a mirror of two GPT labels, and a partition of ada0 as log.
fn pool_config() -> NvList<'static> {
    let mirror = NvList::new()
        .with("type", NvValue::String("mirror".into()))
        .with("id", NvValue::Uint64(0))
        .with(
            "children",
            NvValue::NvListArray(vec![disk("/dev/gpt/zfs0", 0), disk("/dev/gpt/zfs1", 1)]),
        );
    let log = disk("/dev/ada0p3", 1).with("is_log", NvValue::Uint64(1));
    let tree = NvList::new()
        .with("type", NvValue::String("root".into()))
        .with("id", NvValue::Uint64(0))
        .with("children", NvValue::NvListArray(vec![mirror, log]));
    NvList::new()
        .with("name", NvValue::String("zroot".into()))
        .with("vdev_tree", NvValue::NvList(tree))
}

/// Captures `kernel` (with the pool's ioctl replies) and loads the capture again. The
/// capture holds one file per node of `kernel` that the readers read (their values are
/// checked by [`check`] on the replay); `kern.hostname` (the manifest's `hostname`) and the nodes
/// `unread` names, which no reader reads, are not among them.
fn capture_and_replay(mut kernel: Kernel) -> zpulse_proto::Snapshot {
    // Nodes a FreeBSD host has that no reader reads: a global kstat zpulse does not model
    // (listed with the others) and a sysctl of its own.
    let unread = ["kstat.zfs.misc.zfetchstats.hits", "kern.maxproc"];
    for name in unread {
        kernel.set(name, CtlKind::Unsigned(8), 7u64.to_ne_bytes());
    }
    let replies_dir = tempfile::tempdir().unwrap();
    let replies = replies_dir.path();
    let cfg = pool_config();
    let configs = NvList::new().with("zroot", NvValue::NvList(cfg.clone()));
    std::fs::create_dir_all(replies.join("zfs-ioctl/pool_stats")).unwrap();
    std::fs::write(
        replies.join("zfs-ioctl/pool_configs.nvlist"),
        encode(&configs, Endian::Little),
    )
    .unwrap();
    std::fs::write(
        replies.join("zfs-ioctl/pool_stats/zroot.nvlist"),
        encode(&cfg, Endian::Little),
    )
    .unwrap();
    let expected: BTreeSet<String> = kernel
        .0
        .keys()
        .filter(|n| *n != "kern.hostname" && !unread.contains(&n.as_str()))
        .cloned()
        .collect();
    let system = System::Freebsd {
        sysctl: Box::new(kernel),
        root: Root::new(replies),
        kept: Default::default(),
    };
    let identity = system.identity();
    let dest_dir = tempfile::tempdir().unwrap();
    let dest = dest_dir.path();
    let stats = crate::capture::capture_into(&system, &identity, dest).unwrap();
    assert!(stats.unreadable.is_empty(), "{:?}", stats.unreadable);
    let captured: BTreeSet<String> = std::fs::read_dir(dest.join("sysctl"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(captured, expected);
    crate::capture::load(dest).unwrap()
}

fn check(snap: &zpulse_proto::Snapshot, version: &str, guid: Option<u64>) {
    assert!(snap.issues.is_empty(), "{version}: {:?}", snap.issues);
    assert_eq!(snap.host.os, Os::Freebsd);
    assert_eq!(snap.host.hostname, "nas.example.org");
    assert_eq!(snap.host.kernel.as_deref(), Some("14.0-RELEASE-p6"));
    assert_eq!(snap.host.zfs_version.as_deref(), Some(version));
    assert_eq!(snap.arc.as_ref().unwrap().hits(), Some(8_019_094));

    let pool = snap.pool("zroot").unwrap();
    assert_eq!(pool.state.as_deref(), Some("ONLINE"), "{version}");
    assert_eq!(pool.guid, guid, "{version}");
    assert_eq!(pool.txgs.len(), 2, "{version}");
    assert_eq!((pool.txgs[0].txg, pool.txgs[0].birth), (5, 53_388_742_410));
    assert_eq!(pool.txgs[0].state, "C");
    // The very last bytes of the kstat: what a dropped last byte would have cut.
    assert_eq!(
        (pool.txgs[1].txg, pool.txgs[1].stime),
        (6, 236_567_300),
        "{version}"
    );

    assert_eq!(snap.memory.unwrap().total, 8 << 30);
    let cpu = snap.cpu.unwrap();
    assert_eq!(
        (cpu.user, cpu.nice, cpu.system, cpu.irq, cpu.idle),
        (
            CP_TIME[0],
            CP_TIME[1],
            CP_TIME[2],
            Some(CP_TIME[3]),
            CP_TIME[4]
        )
    );

    // Vdev names as FreeBSD's `zpool status` prints them, joined to their disks.
    let cfg = pool.config.as_ref().unwrap();
    let tops: Vec<&str> = cfg.root.children.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(tops, ["mirror-0", "ada0p3"]);
    let leaves: Vec<&str> = cfg.root.children[0]
        .children
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(leaves, ["gpt/zfs0", "gpt/zfs1"]);
    let log = &cfg.root.children[1];
    assert_eq!(log.class, Some(VdevClass::Log));
    // The facter laptop's GEOM puts ada0p3 on ada0.
    assert_eq!(log.disk.as_deref(), Some("ada0"));
    let ada = snap.disk("ada0").unwrap();
    assert_eq!(ada.roles.len(), 1);
    assert_eq!(ada.roles[0].leaf, "ada0p3");
    assert!(snap.disk("da12").is_some());
}

#[test]
fn openzfs_2_1_unterminated_kstats_replay_whole() {
    let version = "2.1.14-FreeBSD_gd99134be8";
    check(
        &capture_and_replay(host(version, false, false)),
        version,
        None,
    );
}

#[test]
fn openzfs_2_2_2_unterminated_guid_replays_whole() {
    let version = "2.2.0-FreeBSD_g95785196f";
    check(
        &capture_and_replay(host(version, false, true)),
        version,
        Some(GUID),
    );
}

#[test]
fn openzfs_2_2_3_nul_terminated_kstats_replay_whole() {
    let version = "2.2.4-FreeBSD_g256659204";
    check(
        &capture_and_replay(host(version, true, true)),
        version,
        Some(GUID),
    );
}

/// What the `sysctl` crate 0.7 did (unix/funcs.rs `value_oid`: `&val[..l - 1]` for every
/// string), applied to the same OpenZFS 2.2.2 bytes: the failure this replay guards against.
#[test]
fn dropping_the_last_byte_unconditionally_would_mangle_them() {
    let k = host("2.2.0-FreeBSD_g95785196f", false, true);
    let crate_text = |name: &str| {
        let b = &k.0[name].1;
        String::from_utf8(b[..b.len() - 1].to_vec()).unwrap()
    };
    assert_eq!(crate_text("kstat.zfs.zroot.misc.state"), "ONLIN");
    assert_eq!(
        crate_text("kstat.zfs.zroot.misc.guid"),
        (GUID / 10).to_string()
    );
    assert_eq!(k.text("kstat.zfs.zroot.misc.state").unwrap(), "ONLINE");
    assert_eq!(k.u64("kstat.zfs.zroot.misc.guid").unwrap(), GUID);
}
