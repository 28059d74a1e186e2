//! Fetching pool configs: live through the ioctls, or from a capture's `zfs-ioctl/` files;
//! then decoding them into the snapshot's pools and joining leaves to disks.

use super::{config, join};
use crate::sources::Root;
use crate::sources::nvlist;
use crate::sources::zfs_ioctl::{self, Ioctl, Platform, PoolConfigs};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::Pool;

pub const CONFIGS_FILE: &str = "zfs-ioctl/pool_configs.nvlist";
pub const STATS_DIR: &str = "zfs-ioctl/pool_stats";
/// `link target` per line: how the capture's device links resolved, since a capture holds
/// no `/dev`.
pub const LINKS_FILE: &str = "zfs-ioctl/device-links";

/// The raw replies of one round of ioctls.
#[derive(Debug, Clone, Default)]
pub struct RawReplies {
    pub configs: Vec<u8>,
    pub pools: Vec<RawPool>,
}

#[derive(Debug, Clone)]
pub struct RawPool {
    pub name: String,
    pub packed: Vec<u8>,
    /// `zc_cookie`: the pool's real error.
    pub error: u64,
    pub altroot: Option<String>,
}

/// One round of ioctls on the live `/dev/zfs`.
pub fn fetch_live(platform: Platform, freebsd_abi: Option<u64>) -> Result<RawReplies, String> {
    let mut dev = zfs_ioctl::device::ZfsDevice::open(
        std::path::Path::new(zfs_ioctl::device::DEVICE),
        platform,
        freebsd_abi,
    )
    .map_err(|e| e.to_string())?;
    fetch(&mut dev)
}

fn fetch(dev: &mut dyn Ioctl) -> Result<RawReplies, String> {
    let configs = match zfs_ioctl::pool_configs(dev, 0).map_err(|e| e.to_string())? {
        PoolConfigs::Changed { packed, .. } => packed,
        // Generation 0 always returns data; "unchanged" would be a kernel bug.
        PoolConfigs::Unchanged => return Err("ZFS_IOC_POOL_CONFIGS returned no data".into()),
    };
    let names =
        config::pool_names(&nvlist::decode(&configs).map_err(|e| format!("pool list: {e}"))?);
    let mut pools = Vec::new();
    for name in names {
        match zfs_ioctl::pool_stats(dev, &name) {
            Ok(s) => pools.push(RawPool {
                name,
                packed: s.packed,
                error: s.error,
                altroot: s.altroot,
            }),
            // Exported between the two calls: simply not there any more.
            Err(zfs_ioctl::IoctlError::PoolGone(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(RawReplies { configs, pools })
}

/// The replies a capture recorded, or `None` when it has none (no ZFS, or an older capture).
pub fn load_captured(root: &Root) -> Result<Option<RawReplies>, String> {
    let configs = match root.read(CONFIGS_FILE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{CONFIGS_FILE}: {e}")),
    };
    let names =
        config::pool_names(&nvlist::decode(&configs).map_err(|e| format!("{CONFIGS_FILE}: {e}"))?);
    let mut pools = Vec::new();
    for name in names {
        let rel = format!("{STATS_DIR}/{name}.nvlist");
        let packed = root.read(&rel).map_err(|e| format!("{rel}: {e}"))?;
        let error = root
            .read_trimmed(&format!("{STATS_DIR}/{name}.error"))
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        pools.push(RawPool {
            name,
            packed,
            error,
            altroot: None,
        });
    }
    Ok(Some(RawReplies { configs, pools }))
}

/// Decodes the replies into `snap.pools` (merged with the pools the kstats found) and ties
/// each leaf to its disk. A pool whose reply does not decode is one issue; the others go on.
pub fn apply(raw: &RawReplies, snap: &mut Snapshot, resolve: &dyn Fn(&str) -> Option<String>) {
    for rp in &raw.pools {
        let decoded = nvlist::decode(&rp.packed)
            .map_err(|e| e.to_string())
            .and_then(|nv| config::pool_config(&nv, rp.error, rp.altroot.clone()));
        let mut cfg = match decoded {
            Ok(c) => c,
            Err(e) => {
                snap.note(format!("{STATS_DIR}/{}", rp.name), e);
                continue;
            }
        };
        join_disks(&mut cfg.root, &join::DiskIndex::new(&snap.disks), resolve);
        record_roles(&rp.name, &cfg, &mut snap.disks);
        match snap.pools.iter_mut().find(|p| p.name == rp.name) {
            Some(pool) => pool.config = Some(cfg),
            None => snap.pools.push(Pool {
                name: rp.name.clone(),
                config: Some(cfg),
                ..Pool::default()
            }),
        }
    }
    snap.pools.sort_by(|a, b| a.name.cmp(&b.name));
}

fn join_disks(
    v: &mut zpulse_proto::snapshot::Vdev,
    disks: &join::DiskIndex,
    resolve: &dyn Fn(&str) -> Option<String>,
) {
    if v.vdev_type == "disk"
        && let Some(path) = &v.path
    {
        v.disk = disks.disk_for(path, resolve);
    }
    for child in &mut v.children {
        join_disks(child, disks, resolve);
    }
}

/// Device paths of every leaf in a packed POOL_STATS reply (for recording link targets).
pub fn leaf_paths(packed: &[u8]) -> Vec<String> {
    let Ok(nv) = nvlist::decode(packed) else {
        return Vec::new();
    };
    let Ok(cfg) = config::pool_config(&nv, 0, None) else {
        return Vec::new();
    };
    cfg.root
        .leaves()
        .into_iter()
        .filter_map(|v| v.path.clone())
        .collect()
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

/// Reads pools from `root`: live ioctls when `root` is `/`, the recorded replies otherwise.
pub fn read(root: &Root, platform: Platform, freebsd_abi: Option<u64>, snap: &mut Snapshot) {
    if root.is_live() {
        if !snap.zfs_loaded {
            return; // the snapshot already says the module is not loaded
        }
        match fetch_live(platform, freebsd_abi) {
            Ok(raw) => apply(&raw, snap, &|p| {
                std::fs::canonicalize(p)
                    .ok()
                    .map(|t| t.display().to_string())
            }),
            Err(e) => snap.note(zfs_ioctl::device::DEVICE, e),
        }
        return;
    }
    match load_captured(root) {
        Ok(Some(raw)) => {
            let mut links = std::collections::HashMap::new();
            for (link, target) in captured_links(root) {
                links.entry(link).or_insert(target);
            }
            apply(&raw, snap, &|p| links.get(p).cloned())
        }
        Ok(None) => {}
        Err(e) => snap.note("zfs-ioctl", e),
    }
}
