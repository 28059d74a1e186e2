//! Fetching pool configs: live through the ioctls, or from a capture's `zfs-ioctl/` files;
//! then decoding them into the snapshot's pools and joining leaves to disks.

use super::{config, join};
use crate::sources::Root;
use crate::sources::nvlist::Decoder;
use crate::sources::record::Recorder;
use crate::sources::zfs_ioctl::{self, Ioctl, Platform, PoolConfigs};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::Pool;

pub const CONFIGS_FILE: &str = "zfs-ioctl/pool_configs.nvlist";
pub const STATS_DIR: &str = "zfs-ioctl/pool_stats";
/// Each pool's root dataset's `ZFS_IOC_OBJSET_STATS` reply, `<pool>.nvlist`: its `creation`
/// is the pool's creation time. Captures made before zpulse read it have none.
pub const OBJSET_STATS_DIR: &str = "zfs-ioctl/objset_stats";
/// `link target` per line: how the capture's device links resolved, since a capture holds
/// no `/dev`.
pub const LINKS_FILE: &str = "zfs-ioctl/device-links";

/// The raw replies of one round of ioctls.
#[derive(Debug, Clone, Default)]
pub struct RawReplies {
    pub configs: Vec<u8>,
    pub pools: Vec<RawPool>,
    /// Pools listed by POOL_CONFIGS whose POOL_STATS reply is missing or failed, with why.
    /// Each costs only its own vdev tree: the other pools are complete.
    pub failed: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct RawPool {
    pub name: String,
    pub packed: Vec<u8>,
    /// `zc_cookie`: the pool's real error.
    pub error: u64,
    pub altroot: Option<String>,
    /// `pool_guid` from POOL_CONFIGS (live rounds only).
    pub guid: Option<u64>,
    /// The root dataset's OBJSET_STATS reply (its properties), when it was read; why not,
    /// when it failed. `None`: not asked (a faulted pool, or its creation time kept), or a
    /// capture without it.
    pub root_dataset: Option<Result<Vec<u8>, String>>,
    /// The creation time a live reader kept for this pool (same name and guid) from an
    /// earlier round, when OBJSET_STATS was therefore not asked.
    pub kept_created_at: Option<u64>,
}

/// What a reader keeps of its last round of POOL_STATS replies: each pool's reply itself.
///
/// Its size sizes the next call's buffer, so that the reply fits the first time
/// ([`zfs_ioctl::stats_buffer_after`]: one ioctl, and one config built by the kernel, instead
/// of two). Its memory takes the next reply (the ioctl's buffer live, the file's bytes from a
/// capture): a reply allocated anew each interval is, past glibc's mmap threshold (32 MiB: a
/// pool of some 2,700 leaf vdevs), mapped, faulted in page by page and unmapped every time —
/// at 5,000 disks 15,000 page faults and two thirds of the cost of reading the files
/// (measured: 27.6 ms against 8.5 ms with one buffer kept). A pool no longer listed is
/// forgotten.
///
/// And each pool's creation time with the pool guid it was read for: it never changes for a
/// pool, so a live reader asks OBJSET_STATS (which makes the kernel gather every property of
/// the root dataset, `dsl_prop_get_all`) once per pool rather than every interval; a pool
/// destroyed and created again under its name has a new guid and is asked again.
///
/// And the nvlist decoder, whose index of a reply's pairs (some 50 per vdev) takes the next
/// replies': allocated anew each interval, it grew to its size again, copying itself.
#[derive(Debug, Default)]
pub struct KeptReplies {
    replies: Mutex<HashMap<String, Vec<u8>>>,
    /// Pool name → (pool guid, creation time).
    creations: Mutex<HashMap<String, (u64, u64)>>,
    decoder: Mutex<Decoder>,
}

/// Runs `f` with the decoder `kept` keeps, or a new one when nothing is kept.
fn with_decoder<R>(kept: Option<&KeptReplies>, f: impl FnOnce(&mut Decoder) -> R) -> R {
    match kept {
        Some(kept) => f(&mut kept.decoder.lock().unwrap_or_else(|p| p.into_inner())),
        None => f(&mut Decoder::default()),
    }
}

impl KeptReplies {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<u8>>> {
        self.replies.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The creation time kept for pool `name` when it was read for the pool with `guid`.
    fn creation(&self, name: &str, guid: u64) -> Option<u64> {
        let creations = self.creations.lock().unwrap_or_else(|p| p.into_inner());
        creations
            .get(name)
            .filter(|(kept_guid, _)| *kept_guid == guid)
            .map(|(_, created_at)| *created_at)
    }

    /// Pool `name`'s last reply, taken out (empty when there is none).
    fn take(&self, name: &str) -> Vec<u8> {
        self.lock().remove(name).unwrap_or_default()
    }

    /// Keeps this round's replies for the next, and only them, and the creation time `snap`
    /// has for each pool whose guid is known.
    fn keep(&self, pools: Vec<RawPool>, snap: &Snapshot) {
        let creations: HashMap<String, (u64, u64)> = pools
            .iter()
            .filter_map(|p| {
                let created_at = snap.pool(&p.name)?.created_at?;
                Some((p.name.clone(), (p.guid?, created_at)))
            })
            .collect();
        *self.creations.lock().unwrap_or_else(|p| p.into_inner()) = creations;
        *self.lock() = pools.into_iter().map(|p| (p.name, p.packed)).collect();
    }
}

/// One round of ioctls on the live `/dev/zfs`, into the replies kept in `kept` when given.
pub fn fetch_live(
    platform: Platform,
    freebsd_abi: Option<u64>,
    kept: Option<&KeptReplies>,
) -> Result<RawReplies, String> {
    let mut dev = zfs_ioctl::device::ZfsDevice::open(
        std::path::Path::new(zfs_ioctl::device::DEVICE),
        platform,
        freebsd_abi,
    )
    .map_err(|e| e.to_string())?;
    fetch(&mut dev, kept)
}

/// The live floor of the pools' part of a snapshot: one round of ioctls as
/// [`fetch_live`] makes it, each pool's reply kept in `kept` for the next round's buffer as a
/// snapshot keeps it, nothing decoded but the pool list (and, with no creation time kept
/// here, each pool's root dataset asked for it again: one small ioctl a pool). Its cost per
/// interval is what no reader of `/dev/zfs` can beat (the sample bench's `--live-kernel`).
#[doc(hidden)]
pub fn floor_round(platform: Platform, kept: &KeptReplies) -> Result<usize, String> {
    let raw = fetch_live(platform, None, Some(kept))?;
    let bytes = raw.pools.iter().map(|p| p.packed.len()).sum();
    *kept.lock() = raw.pools.into_iter().map(|p| (p.name, p.packed)).collect();
    Ok(bytes)
}

fn fetch(dev: &mut dyn Ioctl, kept: Option<&KeptReplies>) -> Result<RawReplies, String> {
    let configs = match zfs_ioctl::pool_configs(dev, 0).map_err(|e| e.to_string())? {
        PoolConfigs::Changed { packed, .. } => packed,
        // Generation 0 always returns data; "unchanged" would be a kernel bug.
        PoolConfigs::Unchanged => return Err("ZFS_IOC_POOL_CONFIGS returned no data".into()),
    };
    let listed = with_decoder(kept, |decoder| {
        let listed = decoder
            .decode(&configs)
            .map_err(|e| format!("pool list: {e}"))?;
        let guid = |name: &str| listed.nvlist(name).and_then(|c| c.u64("pool_guid"));
        let names = config::pool_names(&listed);
        Ok::<_, String>(names.into_iter().map(|n| (guid(&n), n)).collect::<Vec<_>>())
    })?;
    let mut pools = Vec::new();
    let mut failed = Vec::new();
    for (guid, name) in listed {
        // No reply kept: an empty one, and stats_buffer_after(0) is the first buffer.
        let last = kept.map(|k| k.take(&name)).unwrap_or_default();
        let start = zfs_ioctl::stats_buffer_after(last.len());
        match zfs_ioctl::pool_stats_into(dev, &name, start, last) {
            Ok(s) => {
                let kept_created_at = kept.zip(guid).and_then(|(k, g)| k.creation(&name, g));
                // A pool that could not be opened (its error in zc_cookie) has no dataset to
                // hold: asking would fail every interval.
                // The name passed POOL_STATS, so each error left names ZFS_IOC_OBJSET_STATS.
                let root_dataset = (s.error == 0 && kept_created_at.is_none())
                    .then(|| zfs_ioctl::objset_stats(dev, &name).map_err(|e| e.to_string()));
                pools.push(RawPool {
                    name,
                    packed: s.packed,
                    error: s.error,
                    altroot: s.altroot,
                    guid,
                    root_dataset,
                    kept_created_at,
                })
            }
            // Exported or destroyed between the two calls (ENOENT): simply not there any more.
            Err(zfs_ioctl::IoctlError::PoolGone(_)) => {}
            // One pool's failure costs that pool only.
            Err(e) => failed.push((name, format!("ZFS_IOC_POOL_STATS: {e}"))),
        }
    }
    Ok(RawReplies {
        configs,
        pools,
        failed,
    })
}

/// The replies a capture recorded, or `None` when it has none (no ZFS, or an older capture),
/// read into the replies kept in `kept` when given.
pub fn load_captured(
    root: &Root,
    kept: Option<&KeptReplies>,
) -> Result<Option<RawReplies>, String> {
    let configs = match root.read(CONFIGS_FILE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{CONFIGS_FILE}: {e}")),
    };
    let names = with_decoder(kept, |decoder| match decoder.decode(&configs) {
        Ok(listed) => Ok(config::pool_names(&listed)),
        Err(e) => Err(format!("{CONFIGS_FILE}: {e}")),
    })?;
    let mut pools = Vec::new();
    let mut failed = Vec::new();
    for name in names {
        let rel = format!("{STATS_DIR}/{name}.nvlist");
        let mut packed = kept.map(|k| k.take(&name)).unwrap_or_default();
        match root.read_into(&rel, &mut packed) {
            Ok(()) => {}
            Err(e) => {
                failed.push((name, format!("{rel}: {e}")));
                continue;
            }
        };
        let error = root
            .read_trimmed(&format!("{STATS_DIR}/{name}.error"))
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let props = format!("{OBJSET_STATS_DIR}/{name}.nvlist");
        let root_dataset = match root.read(&props) {
            Ok(b) => Some(Ok(b)),
            // A capture from before the reply was recorded, or of a pool it was not read for.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(Err(format!("{props}: {e}"))),
        };
        pools.push(RawPool {
            name,
            packed,
            error,
            altroot: None,
            guid: None,
            root_dataset,
            kept_created_at: None,
        });
    }
    Ok(Some(RawReplies {
        configs,
        pools,
        failed,
    }))
}

/// Decodes the replies into `snap.pools` (merged with the pools the kstats found) and ties
/// each leaf to its disk. A pool whose reply is missing or does not decode is one issue that
/// names it, and the pool is still listed (without a vdev tree); the other pools go on.
pub fn apply(
    raw: &RawReplies,
    decoder: &mut Decoder,
    snap: &mut Snapshot,
    resolve: &dyn Fn(&str) -> Option<String>,
) {
    for (name, why) in &raw.failed {
        snap.note(
            format!("{STATS_DIR}/{name}"),
            format!("pool {name}: no vdev statistics this sample: {why}"),
        );
        pool_entry(snap, name);
    }
    for rp in &raw.pools {
        let decoded = decoder
            .decode(&rp.packed)
            .map_err(|e| e.to_string())
            .and_then(|nv| config::pool_config(&nv, rp.error, rp.altroot.clone(), snap.host.os));
        let mut cfg = match decoded {
            Ok(c) => c,
            Err(e) => {
                snap.note(
                    format!("{STATS_DIR}/{}", rp.name),
                    format!(
                        "pool {}: the POOL_STATS reply does not decode: {e}",
                        rp.name
                    ),
                );
                pool_entry(snap, &rp.name);
                continue;
            }
        };
        join_disks(&mut cfg.root, &join::DiskIndex::new(&snap.disks), resolve);
        record_roles(&rp.name, &cfg, &mut snap.disks);
        let created_at = rp.kept_created_at.or_else(|| {
            rp.root_dataset
                .as_ref()
                .and_then(|reply| creation_of(&rp.name, reply, decoder, snap))
        });
        let pool = pool_entry(snap, &rp.name);
        pool.config = Some(cfg);
        pool.created_at = created_at;
    }
    snap.pools.sort_by(|a, b| a.name.cmp(&b.name));
}

/// The creation time in pool `name`'s root dataset's OBJSET_STATS `reply`; a reply that
/// failed, does not decode or has no `creation` is a note, and costs only that figure.
fn creation_of(
    name: &str,
    reply: &Result<Vec<u8>, String>,
    decoder: &mut Decoder,
    snap: &mut Snapshot,
) -> Option<u64> {
    let source = format!("{OBJSET_STATS_DIR}/{name}");
    let why = match reply {
        Err(why) => why.clone(),
        Ok(bytes) => match decoder.decode(bytes) {
            Ok(props) => match config::creation_time(&props) {
                Some(t) => return Some(t),
                None => "the reply has no creation property".to_string(),
            },
            Err(e) => format!("the reply does not decode: {e}"),
        },
    };
    snap.note(
        source,
        format!("pool {name}: its creation time is not known this sample: {why}"),
    );
    None
}

/// The snapshot's pool of that name, added when the kstats did not list it.
fn pool_entry<'a>(snap: &'a mut Snapshot, name: &str) -> &'a mut Pool {
    let i = match snap.pools.iter().position(|p| p.name == name) {
        Some(i) => i,
        None => {
            snap.pools.push(Pool {
                name: name.to_string(),
                ..Pool::default()
            });
            snap.pools.len() - 1
        }
    };
    &mut snap.pools[i]
}

fn join_disks(
    v: &mut zpulse_proto::snapshot::Vdev,
    disks: &join::DiskIndex,
    resolve: &dyn Fn(&str) -> Option<String>,
) {
    if v.vdev_type == "disk"
        && let Some(path) = &v.path
        && let Some(device) = disks.device_for(path, resolve)
    {
        v.disk = Some(
            device
                .whole_disk
                .clone()
                .unwrap_or_else(|| device.name.clone()),
        );
        v.partition = device.whole_disk.is_some().then(|| device.name.clone());
    }
    for child in &mut v.children {
        join_disks(child, disks, resolve);
    }
}

/// Tells each disk which pool, class and top-level vdev it serves.
fn record_roles(
    pool: &str,
    cfg: &zpulse_proto::snapshot::PoolConfig,
    disks: &mut [zpulse_proto::snapshot::Disk],
) {
    // By name, first wins: a scan per leaf would be quadratic in disks.
    let mut by_name = std::collections::HashMap::with_capacity(disks.len());
    for (i, d) in disks.iter().enumerate() {
        by_name.entry(d.name.clone()).or_insert(i);
    }
    for top in &cfg.root.children {
        let Some(class) = top.class else { continue };
        for leaf in top.leaves() {
            let Some(name) = &leaf.disk else { continue };
            if let Some(d) = by_name.get(name).map(|&i| &mut disks[i]) {
                d.roles.push(zpulse_proto::snapshot::DiskRole {
                    pool: pool.to_string(),
                    class,
                    vdev: top.name.clone(),
                    leaf: leaf.name.clone(),
                });
            }
        }
    }
}

/// Device links as a capture recorded them.
pub fn captured_links(root: &Root) -> Vec<(String, String)> {
    root.read(LINKS_FILE)
        .map(|b| {
            String::from_utf8_lossy(&b)
                .lines()
                .filter_map(|l| {
                    let (a, b) = l.split_once(' ')?;
                    Some((a.to_string(), b.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Records live replies in a capture as the files [`load_captured`] and [`captured_links`]
/// read: the POOL_CONFIGS reply, each pool's POOL_STATS reply and its error when not 0, its
/// root dataset's OBJSET_STATS reply (or its failure, reported), and
/// each device link the join resolved to another path. A pool whose POOL_STATS failed is
/// reported, not captured.
fn record_live(recorder: &Recorder, raw: &RawReplies, links: &BTreeMap<String, String>) {
    recorder.file(CONFIGS_FILE, &raw.configs);
    for pool in &raw.pools {
        let base = format!("{STATS_DIR}/{}", pool.name);
        recorder.file(&format!("{base}.nvlist"), &pool.packed);
        if pool.error != 0 {
            recorder.file(&format!("{base}.error"), pool.error.to_string().as_bytes());
        }
        let props = format!("{OBJSET_STATS_DIR}/{}", pool.name);
        match &pool.root_dataset {
            Some(Ok(reply)) => recorder.file(&format!("{props}.nvlist"), reply),
            Some(Err(why)) => recorder.failure(&props, why.clone()),
            None => {}
        }
    }
    for (name, why) in &raw.failed {
        recorder.failure(&format!("{STATS_DIR}/{name}"), why.clone());
    }
    if !links.is_empty() {
        let lines: String = links.iter().map(|(l, t)| format!("{l} {t}\n")).collect();
        recorder.file(LINKS_FILE, lines.as_bytes());
    }
}

/// Live replies (or why there are none) into `snap`, device links resolved by `resolve`;
/// with a recorder, also recorded as the capture files their replay reads (see
/// [`record_live`]). Returns the replies, for keeping.
fn apply_live(
    fetched: Result<RawReplies, String>,
    decoder: &mut Decoder,
    resolve: &dyn Fn(&str) -> Option<String>,
    recorder: Option<&Recorder>,
    snap: &mut Snapshot,
) -> Option<RawReplies> {
    let raw = match fetched {
        Ok(raw) => raw,
        Err(e) => {
            if let Some(recorder) = recorder {
                recorder.failure(zfs_ioctl::device::DEVICE, e.clone());
            }
            snap.note(zfs_ioctl::device::DEVICE, e);
            return None;
        }
    };
    // The links the join followed, for a capture: it holds no `/dev`.
    let followed = RefCell::new(BTreeMap::new());
    apply(&raw, decoder, snap, &|p| {
        let target = resolve(p)?;
        if target != p {
            followed.borrow_mut().insert(p.to_string(), target.clone());
        }
        Some(target)
    });
    if let Some(recorder) = recorder {
        record_live(recorder, &raw, &followed.into_inner());
    }
    Some(raw)
}

/// Reads pools from `root`: live ioctls when `root` is `/`, the recorded replies otherwise.
pub fn read(
    root: &Root,
    platform: Platform,
    freebsd_abi: Option<u64>,
    kept: Option<&KeptReplies>,
    snap: &mut Snapshot,
) {
    let raw = if root.is_live() {
        if !snap.zfs_loaded {
            return; // the snapshot already says the module is not loaded
        }
        let canonical = |p: &str| {
            std::fs::canonicalize(p)
                .ok()
                .map(|t| t.display().to_string())
        };
        let fetched = fetch_live(platform, freebsd_abi, kept);
        with_decoder(kept, |decoder| {
            apply_live(fetched, decoder, &canonical, root.recorder(), snap)
        })
    } else {
        match load_captured(root, kept) {
            Ok(Some(raw)) => {
                let mut links = std::collections::HashMap::new();
                for (link, target) in captured_links(root) {
                    links.entry(link).or_insert(target);
                }
                with_decoder(kept, |decoder| {
                    apply(&raw, decoder, snap, &|p| links.get(p).cloned())
                });
                Some(raw)
            }
            Ok(None) => None,
            Err(e) => {
                snap.note("zfs-ioctl", e);
                None
            }
        }
    };
    // The snapshot owns what it took from the replies: their memory takes the next ones.
    if let (Some(kept), Some(raw)) = (kept, raw) {
        kept.keep(raw.pools, snap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::nvlist::encode::{Endian, encode};
    use crate::sources::nvlist::{NvList, NvValue};
    use crate::sources::zfs_ioctl::fake::FakeKernel;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    fn lab(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/lab")
            .join(rel)
    }

    /// A POOL_CONFIGS reply naming these pools (the reader only needs their names).
    fn configs(names: &[&str]) -> Vec<u8> {
        let mut list = NvList::new();
        for n in names {
            list.push(*n, NvValue::NvList(NvList::new()));
        }
        encode(&list, Endian::Little)
    }

    /// Creation times given to the doubles' root datasets.
    const DEG_CREATED: u64 = 1_796_040_000;
    const RZ_CREATED: u64 = 1_796_050_000;

    /// An OBJSET_STATS reply as `zfs_ioc_objset_stats` builds it (module/zfs/zfs_ioctl.c):
    /// one nvlist per property, `{"value": …}` and, for a property set or inherited, its
    /// `"source"` (`dsl_prop_nvlist_add_uint64` in module/zfs/dsl_prop.c, `dsl_prop_get_all`);
    /// `creation` among the statistics `dsl_dataset_stats` adds.
    fn root_props(creation: u64) -> Vec<u8> {
        let prop = |value: u64| NvList::new().with("value", NvValue::Uint64(value));
        let list = NvList::new()
            .with(
                "compression",
                NvValue::NvList(prop(15).with("source", NvValue::String("tank".into()))),
            )
            .with("type", NvValue::NvList(prop(2)))
            .with("creation", NvValue::NvList(prop(creation)))
            .with("createtxg", NvValue::NvList(prop(1)));
        encode(&list, Endian::Little)
    }

    /// Real replies from OpenZFS 2.1.11: `deg` (mirror-0 + special sdc) and `rz` (raidz2-0,
    /// mirror-1, loop0, spare), recorded by tests/lab/scenarios/vdevs.sh.
    fn real_reply(pool: &str) -> Vec<u8> {
        std::fs::read(lab(&format!(
            "vdevs/{pool}/000/zfs-ioctl/pool_stats/{pool}.nvlist"
        )))
        .unwrap()
    }

    fn top_names(snap: &Snapshot, pool: &str) -> Vec<String> {
        let cfg = snap.pool(pool).and_then(|p| p.config.as_ref());
        cfg.map(|c| c.root.children.iter().map(|v| v.name.clone()).collect())
            .unwrap_or_default()
    }

    /// Counts the POOL_STATS calls and the buffer each was given, and answers as `inner`.
    struct Counting {
        inner: FakeKernel,
        stats_buffers: Vec<u64>,
    }

    impl Ioctl for Counting {
        fn platform(&self) -> Platform {
            self.inner.platform()
        }
        fn call(
            &mut self,
            request: zfs_ioctl::layout::Request,
            cmd: &mut zfs_ioctl::layout::CmdBuffer,
        ) -> Result<(), i32> {
            if matches!(request, zfs_ioctl::layout::Request::PoolStats) {
                self.stats_buffers.push(cmd.nvlist_dst_size());
            }
            self.inner.call(request, cmd)
        }
    }

    #[test]
    fn a_live_reader_sizes_each_pool_s_buffer_from_its_last_reply_and_reuses_its_memory() {
        // The lab's 15-vdev pool: 77,632 bytes, more than the first buffer of 64 KiB.
        let tank = std::fs::read(lab("basic/001/zfs-ioctl/pool_stats/tank.nvlist")).unwrap();
        assert_eq!(tank.len(), 77_632);
        let mut kernel = Counting {
            inner: FakeKernel {
                configs: configs(&["tank"]),
                stats: BTreeMap::from([("tank".to_string(), Ok(tank.clone()))]),
                objsets: BTreeMap::from([("tank".to_string(), Ok(root_props(1_700_000_000)))]),
            },
            stats_buffers: Vec::new(),
        };
        let kept = KeptReplies::default();
        let first = fetch(&mut kernel, Some(&kept)).unwrap();
        // ENOMEM, then the size asked or twice the buffer, whichever is larger.
        assert_eq!(kernel.stats_buffers, [65_536, 131_072]);
        assert_eq!(first.pools[0].packed, tank);
        let memory = first.pools[0].packed.as_ptr();
        kept.keep(first.pools, &Snapshot::default());
        kernel.stats_buffers.clear();
        let second = fetch(&mut kernel, Some(&kept)).unwrap();
        assert_eq!(
            kernel.stats_buffers,
            [77_632 + 77_632 / 8],
            "one call: it fits"
        );
        assert_eq!(second.pools[0].packed, tank);
        assert_eq!(
            second.pools[0].packed.as_ptr(),
            memory,
            "the kept reply's memory took the new one"
        );
        kept.keep(second.pools, &Snapshot::default());
        // Without a memory (a capture's full read), every round starts small.
        kernel.stats_buffers.clear();
        fetch(&mut kernel, None).unwrap();
        assert_eq!(kernel.stats_buffers, [65_536, 131_072]);
        // An exported pool is forgotten: imported again, it starts from the first buffer.
        kernel.inner.configs = configs(&[]);
        let none = fetch(&mut kernel, Some(&kept)).unwrap();
        kept.keep(none.pools, &Snapshot::default());
        kernel.inner.configs = configs(&["tank"]);
        kernel.stats_buffers.clear();
        fetch(&mut kernel, Some(&kept)).unwrap();
        assert_eq!(kernel.stats_buffers, [65_536, 131_072]);
    }

    #[test]
    fn a_capture_read_again_reuses_each_reply_s_memory_and_forgets_what_fails() {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join(STATS_DIR);
        std::fs::create_dir_all(&stats).unwrap();
        std::fs::write(dir.path().join(CONFIGS_FILE), configs(&["deg", "rz"])).unwrap();
        for pool in ["deg", "rz"] {
            std::fs::write(stats.join(format!("{pool}.nvlist")), real_reply(pool)).unwrap();
        }
        let root = Root::new(dir.path());
        let kept = KeptReplies::default();
        let read_pools = || {
            let mut snap = Snapshot::default();
            read(&root, Platform::Linux, None, Some(&kept), &mut snap);
            snap
        };
        let memory = |kept: &KeptReplies| -> BTreeMap<String, usize> {
            kept.lock()
                .iter()
                .map(|(pool, reply)| (pool.clone(), reply.as_ptr() as usize))
                .collect()
        };
        let first = read_pools();
        let was = memory(&kept);
        assert_eq!(was.keys().collect::<Vec<_>>(), ["deg", "rz"]);
        let second = read_pools();
        assert_eq!(
            memory(&kept),
            was,
            "each reply read into the last one's memory"
        );
        for (pool, reply) in kept.lock().iter() {
            assert_eq!(reply, &real_reply(pool), "{pool}");
        }
        assert_eq!(
            first.pools, second.pools,
            "the same pools from reused memory"
        );
        assert_eq!(top_names(&second, "deg"), ["mirror-0", "sdc"]);
        // A reply that can no longer be read costs its pool, and its memory is let go.
        std::fs::remove_file(stats.join("rz.nvlist")).unwrap();
        let third = read_pools();
        assert!(third.pool("rz").is_some_and(|p| p.config.is_none()));
        assert_eq!(kept.lock().keys().collect::<Vec<_>>(), ["deg"]);
        assert_eq!(top_names(&third, "deg"), ["mirror-0", "sdc"]);
    }

    #[test]
    fn a_failing_pool_stats_ioctl_costs_only_that_pool() {
        let mut kernel = FakeKernel {
            configs: configs(&["deg", "broken", "gone", "rz"]),
            stats: BTreeMap::from([
                ("deg".to_string(), Ok(real_reply("deg"))),
                ("broken".to_string(), Err(libc::EIO)),
                // "gone": exported between the two calls, so POOL_STATS answers ENOENT.
                ("rz".to_string(), Ok(real_reply("rz"))),
            ]),
            objsets: BTreeMap::from([
                ("deg".to_string(), Ok(root_props(DEG_CREATED))),
                ("rz".to_string(), Ok(root_props(RZ_CREATED))),
            ]),
        };
        let raw = fetch(&mut kernel, None).unwrap();
        let mut snap = Snapshot::default();
        apply(&raw, &mut Decoder::default(), &mut snap, &|_| None);
        // zpool status of the same replies (tests/fixtures/lab/vdevs/*/000/cli).
        assert_eq!(top_names(&snap, "deg"), ["mirror-0", "sdc"]);
        assert_eq!(
            top_names(&snap, "rz"),
            ["raidz2-0", "mirror-1", "loop0", "/var/tmp/v/f6"]
        );
        assert_eq!(snap.pool("deg").unwrap().created_at, Some(DEG_CREATED));
        assert_eq!(snap.pool("rz").unwrap().created_at, Some(RZ_CREATED));
        let broken = snap.pool("broken").expect("a failed pool is still listed");
        assert!(broken.config.is_none());
        assert_eq!(broken.created_at, None);
        assert!(
            snap.pool("gone").is_none(),
            "an exported pool is simply not there"
        );
        let notes: Vec<&str> = snap.issues.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("pool broken"), "{notes:?}");
        assert!(notes[0].contains("ZFS_IOC_POOL_STATS"), "{notes:?}");
    }

    /// A capture of two pools whose second reply is missing or truncated keeps the first.
    #[test]
    fn a_missing_or_corrupt_captured_reply_costs_only_that_pool() {
        for damage in ["missing", "truncated"] {
            let dir = tempfile::tempdir().unwrap();
            let stats = dir.path().join(STATS_DIR);
            std::fs::create_dir_all(&stats).unwrap();
            std::fs::write(dir.path().join(CONFIGS_FILE), configs(&["deg", "rz"])).unwrap();
            std::fs::write(stats.join("deg.nvlist"), real_reply("deg")).unwrap();
            if damage == "truncated" {
                let rz = real_reply("rz");
                std::fs::write(stats.join("rz.nvlist"), &rz[..rz.len() / 2]).unwrap();
            }
            let mut snap = Snapshot::default();
            read(
                &Root::new(dir.path()),
                Platform::Linux,
                None,
                None,
                &mut snap,
            );
            assert_eq!(top_names(&snap, "deg"), ["mirror-0", "sdc"], "{damage}");
            let rz = snap.pool("rz").expect("the damaged pool is still listed");
            assert!(rz.config.is_none(), "{damage}");
            assert_eq!(snap.issues.len(), 1, "{damage}: {:?}", snap.issues);
            assert!(
                snap.issues[0].message.contains("pool rz"),
                "{:?}",
                snap.issues
            );
            assert!(snap.issues[0].source.ends_with("rz"), "{:?}", snap.issues);
        }
    }

    /// What a live round records is what a capture replays: the replies of `deg` and `rz`
    /// (real, OpenZFS 2.1.11), `broken`'s failure reported, and the one device link the join
    /// followed (`/dev/sda1`, here a link to `/dev/dm-0`; the others are their own target).
    #[test]
    fn a_recorded_live_round_replays_the_same_pools() {
        let mut kernel = FakeKernel {
            configs: configs(&["deg", "broken", "rz"]),
            stats: BTreeMap::from([
                ("deg".to_string(), Ok(real_reply("deg"))),
                ("broken".to_string(), Err(libc::EIO)),
                ("rz".to_string(), Ok(real_reply("rz"))),
            ]),
            objsets: BTreeMap::from([
                ("deg".to_string(), Ok(root_props(DEG_CREATED))),
                // rz's properties cannot be read: its creation time is not captured.
                ("rz".to_string(), Err(libc::EIO)),
            ]),
        };
        let disk = |name: &str| zpulse_proto::snapshot::Disk {
            name: name.to_string(),
            ..Default::default()
        };
        let before = Snapshot {
            disks: vec![disk("dm-0"), disk("sdb1"), disk("sdc1")],
            ..Snapshot::default()
        };
        let resolve = |p: &str| Some(if p == "/dev/sda1" { "/dev/dm-0" } else { p }.to_string());
        let recorder = Recorder::new();
        let mut live = before.clone();
        apply_live(
            fetch(&mut kernel, None),
            &mut Decoder::default(),
            &resolve,
            Some(&recorder),
            &mut live,
        );
        let recording = recorder.take();
        assert_eq!(
            recording.failed.keys().collect::<Vec<_>>(),
            [
                &format!("{OBJSET_STATS_DIR}/rz"),
                &format!("{STATS_DIR}/broken")
            ]
        );
        assert_eq!(
            recording.files[&format!("{OBJSET_STATS_DIR}/deg.nvlist")],
            root_props(DEG_CREATED)
        );
        assert_eq!(
            String::from_utf8_lossy(&recording.files[LINKS_FILE]),
            "/dev/sda1 /dev/dm-0\n"
        );

        let dir = tempfile::tempdir().unwrap();
        for (rel, bytes) in &recording.files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let mut replayed = before.clone();
        read(
            &Root::new(dir.path()),
            Platform::Linux,
            None,
            None,
            &mut replayed,
        );
        assert_eq!(replayed.pools, live.pools);
        assert_eq!(replayed.disks, live.disks);
        let deg = live.pool("deg").and_then(|p| p.config.as_ref()).unwrap();
        let sda = &deg.root.children[0].children[0];
        assert_eq!(
            (sda.name.as_str(), sda.disk.as_deref()),
            ("sda", Some("dm-0"))
        );
        assert!(live.pool("broken").unwrap().config.is_none());
        assert_eq!(live.pool("deg").unwrap().created_at, Some(DEG_CREATED));
        // rz's failed read is a note live; its capture simply has no reply for it.
        assert_eq!(live.pool("rz").unwrap().created_at, None);
        assert!(
            live.issues
                .iter()
                .any(|i| i.source == format!("{OBJSET_STATS_DIR}/rz")
                    && i.message.contains("creation time is not known")),
            "{:?}",
            live.issues
        );
    }

    /// A POOL_CONFIGS reply naming these pools, each config with its `pool_guid` (as
    /// `spa_all_configs` sends it).
    fn configs_with_guids(pools: &[(&str, u64)]) -> Vec<u8> {
        let mut list = NvList::new();
        for (name, guid) in pools {
            let config = NvList::new().with("pool_guid", NvValue::Uint64(*guid));
            list.push(*name, NvValue::NvList(config));
        }
        encode(&list, Endian::Little)
    }

    /// Answers as the double it wraps and logs each request; with `pool_error`, POOL_STATS
    /// comes back with that error in `zc_cookie`, as `spa_get_stats` answers for a pool it
    /// could not open.
    struct Logged {
        kernel: FakeKernel,
        requests: Vec<zfs_ioctl::layout::Request>,
        pool_error: Option<u64>,
    }

    impl Logged {
        fn new(kernel: FakeKernel) -> Logged {
            Logged {
                kernel,
                requests: Vec::new(),
                pool_error: None,
            }
        }

        fn objset_calls(&self) -> usize {
            let objset = zfs_ioctl::layout::Request::ObjsetStats;
            self.requests.iter().filter(|r| **r == objset).count()
        }
    }

    impl Ioctl for Logged {
        fn platform(&self) -> Platform {
            self.kernel.platform()
        }
        fn call(
            &mut self,
            request: zfs_ioctl::layout::Request,
            cmd: &mut zfs_ioctl::layout::CmdBuffer,
        ) -> Result<(), i32> {
            self.requests.push(request);
            let answer = self.kernel.call(request, cmd);
            if let Some(error) = self.pool_error
                && request == zfs_ioctl::layout::Request::PoolStats
            {
                cmd.set_cookie_for_test(error);
            }
            answer
        }
    }

    /// A live reader that keeps its replies asks a pool's root dataset once: the creation
    /// time is kept with the pool guid, and asked again for a pool created anew under the same
    /// name (another guid). A reader that keeps nothing (a capture being made) asks each time.
    #[test]
    fn a_live_reader_asks_each_pool_s_creation_time_once() {
        let mut kernel = Logged::new(FakeKernel {
            configs: configs_with_guids(&[("deg", 7)]),
            stats: BTreeMap::from([("deg".to_string(), Ok(real_reply("deg")))]),
            objsets: BTreeMap::from([("deg".to_string(), Ok(root_props(DEG_CREATED)))]),
        });
        let kept = KeptReplies::default();
        let round = |kernel: &mut Logged, kept: Option<&KeptReplies>| {
            let raw = fetch(kernel, kept).unwrap();
            let mut snap = Snapshot::default();
            apply(&raw, &mut Decoder::default(), &mut snap, &|_| None);
            if let Some(kept) = kept {
                kept.keep(raw.pools, &snap);
            }
            snap.pool("deg").unwrap().created_at
        };
        assert_eq!(round(&mut kernel, Some(&kept)), Some(DEG_CREATED));
        assert_eq!(round(&mut kernel, Some(&kept)), Some(DEG_CREATED));
        assert_eq!(kernel.objset_calls(), 1, "asked once");
        // Destroyed and created again between two rounds: a new guid and a new creation.
        kernel.kernel.configs = configs_with_guids(&[("deg", 8)]);
        kernel.kernel.objsets = BTreeMap::from([("deg".to_string(), Ok(root_props(RZ_CREATED)))]);
        assert_eq!(round(&mut kernel, Some(&kept)), Some(RZ_CREATED));
        assert_eq!(kernel.objset_calls(), 2);
        assert_eq!(round(&mut kernel, None), Some(RZ_CREATED));
        assert_eq!(round(&mut kernel, None), Some(RZ_CREATED));
        assert_eq!(
            kernel.objset_calls(),
            4,
            "without a memory, every round asks"
        );
    }

    /// A pool whose POOL_STATS `zc_cookie` carries an error could not be opened: its root
    /// dataset is not asked for (the call would fail every interval).
    #[test]
    fn a_faulted_pool_s_root_dataset_is_not_asked_for() {
        let mut kernel = Logged::new(FakeKernel {
            configs: configs(&["deg"]),
            stats: BTreeMap::from([("deg".to_string(), Ok(real_reply("deg")))]),
            objsets: BTreeMap::from([("deg".to_string(), Ok(root_props(DEG_CREATED)))]),
        });
        kernel.pool_error = Some(libc::ENXIO as u64);
        let raw = fetch(&mut kernel, None).unwrap();
        assert_eq!(raw.pools[0].error, libc::ENXIO as u64);
        assert!(raw.pools[0].root_dataset.is_none());
        assert_eq!(kernel.objset_calls(), 0);
    }

    /// Replies that are not what `zfs_ioc_objset_stats` sends — cut short, garbage, without
    /// `creation`, `creation` of another type — cost only the creation time, with a note.
    #[test]
    fn a_bad_root_dataset_reply_costs_only_the_creation_time() {
        let good = root_props(DEG_CREATED);
        let wrong_type = encode(
            &NvList::new().with(
                "creation",
                NvValue::NvList(NvList::new().with("value", NvValue::String("x".into()))),
            ),
            Endian::Little,
        );
        let flat = encode(
            &NvList::new().with("creation", NvValue::Uint64(DEG_CREATED)),
            Endian::Little,
        );
        for (what, reply) in [
            ("truncated", good[..good.len() / 2].to_vec()),
            ("garbage", vec![0xff; 40]),
            ("empty", Vec::new()),
            ("no creation", encode(&NvList::new(), Endian::Little)),
            ("wrong type", wrong_type),
            ("not a property list", flat),
        ] {
            let raw = RawReplies {
                configs: configs(&["deg"]),
                pools: vec![RawPool {
                    name: "deg".into(),
                    packed: real_reply("deg"),
                    error: 0,
                    altroot: None,
                    guid: None,
                    root_dataset: Some(Ok(reply)),
                    kept_created_at: None,
                }],
                failed: Vec::new(),
            };
            let mut snap = Snapshot::default();
            apply(&raw, &mut Decoder::default(), &mut snap, &|_| None);
            let deg = snap.pool("deg").unwrap();
            assert!(deg.config.is_some(), "{what}");
            assert_eq!(deg.created_at, None, "{what}");
            assert_eq!(snap.issues.len(), 1, "{what}: {:?}", snap.issues);
            assert!(
                snap.issues[0]
                    .message
                    .contains("creation time is not known"),
                "{what}: {:?}",
                snap.issues
            );
        }
    }
}
