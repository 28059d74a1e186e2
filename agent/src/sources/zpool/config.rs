//! The POOL_STATS config nvlist (docs/zfs-sources.md, "The pool config and `vdev_stat_t`") as a typed vdev tree.

use crate::sources::nvlist::{DataType, ListView, PairView, U64s};
use std::borrow::Cow;
use zpulse_proto::snapshot::{
    LatencyHistograms, Os, PoolConfig, Redundancy, ScanStats, Vdev, VdevClass, VdevStats,
};

/// `vdev_stat_t` indices (include/sys/fs/zfs.h).
mod vs {
    pub const TIMESTAMP: usize = 0;
    pub const STATE: usize = 1;
    pub const AUX: usize = 2;
    pub const ALLOC: usize = 3;
    pub const SPACE: usize = 4;
    pub const DSPACE: usize = 5;
    pub const OPS: usize = 8;
    pub const BYTES: usize = 14;
    pub const READ_ERRORS: usize = 20;
    pub const WRITE_ERRORS: usize = 21;
    pub const CHECKSUM_ERRORS: usize = 22;
    pub const SELF_HEALED: usize = 24;
    pub const SCAN_PROCESSED: usize = 26;
    pub const FRAGMENTATION: usize = 27;
    pub const SLOW_IOS: usize = 34;
    /// 2.0+: the vdev's own ashift, and what its device reports (logical, physical).
    pub const CONFIGURED_ASHIFT: usize = 42;
    pub const LOGICAL_ASHIFT: usize = 43;
    pub const PHYSICAL_ASHIFT: usize = 44;
    /// Everything up to the error counters has been there since before 0.8.
    pub const MIN_LEN: usize = 23;
}

/// The `creation` property (Unix seconds) in a dataset's OBJSET_STATS reply: the nvlist
/// `{property name → {"value": …, "source": …}}` (`dsl_prop_nvlist_add_uint64`,
/// module/zfs/dsl_prop.c; `creation` is added by `dsl_dataset_stats`,
/// module/zfs/dsl_dataset.c, from the dataset's `ds_creation_time`). A pool's root dataset
/// is created with the pool (`dsl_pool_create`), so this is when the pool was created.
pub fn creation_time(props: &ListView) -> Option<u64> {
    props.nvlist("creation")?.u64("value").filter(|&t| t > 0)
}

/// The pool's config with statistics. `error` is the ioctl's `zc_cookie`.
///
/// Only the pairs the tree holds are read from the reply: a leaf's statistics arrays once,
/// into the vectors the snapshot keeps.
pub fn pool_config(
    config: &ListView,
    error: u64,
    altroot: Option<String>,
    os: Os,
) -> Result<PoolConfig, String> {
    let pool_name = config
        .str("name")
        .map_or_else(|| "?".into(), Cow::into_owned);
    let suspended = config.contains("suspended");
    let error_count = config.u64("error_count");
    // `initial_load_time` (ZPOOL_CONFIG_LOADED_TIME): [seconds, nanoseconds] of the import
    // (spa_load in module/zfs/spa.c); 0 for a pool created since boot, which was never
    // loaded.
    let loaded_at = config
        .u64_array("initial_load_time")
        .and_then(|t| t.first())
        .filter(|&t| t > 0);
    let tree = config
        .nvlist("vdev_tree")
        .ok_or("the pool config has no vdev_tree")?;
    let scan = tree
        .u64_array("scan_stats")
        .and_then(|s| scan_stats(&s.into_vec()));
    let mut root = vdev(&VdevPairs::of(&tree), &pool_name, None, 0, os)?;
    // At its size: grown one push at a time, the vector of 2,500 top-level vdevs (784 bytes
    // each) was moved to a new allocation ten times, the last ones mapped and faulted in anew.
    let tops: usize = ["children", "l2cache", "spares"]
        .iter()
        .map(|key| tree.nvlist_array(key).map_or(0, |a| a.len()))
        .sum();
    root.children = Vec::with_capacity(tops);
    for child in tree.nvlist_array("children").iter().flat_map(|a| a.iter()) {
        let child = VdevPairs::of(&child);
        // Holes and removed devices keep their slot in the array but hold nothing.
        if matches!(str_of(child.kind).as_deref(), Some("hole" | "indirect")) {
            continue;
        }
        let class = top_level_class(&child);
        root.children.push(top_level(&child, class, os)?);
    }
    for (key, class) in [("l2cache", VdevClass::Cache), ("spares", VdevClass::Spare)] {
        for dev in tree.nvlist_array(key).iter().flat_map(|a| a.iter()) {
            let mut v = vdev(&VdevPairs::of(&dev), "", Some(class), 1, os)?;
            if class == VdevClass::Spare {
                v.state = spare_state(&v);
            }
            root.children.push(v);
        }
    }
    let health = if suspended {
        "SUSPENDED".to_string()
    } else {
        root.state.clone().unwrap_or_else(|| "UNKNOWN".into())
    };
    Ok(PoolConfig {
        error,
        health,
        altroot,
        scan,
        error_count,
        loaded_at,
        root,
    })
}

/// The pairs of a vdev's list that its [`Vdev`] is made of, found in one pass over the list
/// (some 20 pairs): one lookup by name each scanned it some fifteen times a vdev. Each is
/// the last pair of its name, as a lookup answers.
#[derive(Default)]
struct VdevPairs<'a> {
    kind: Option<PairView<'a>>,
    stats: Option<PairView<'a>>,
    stats_ex: Option<PairView<'a>>,
    children: Option<PairView<'a>>,
    guid: Option<PairView<'a>>,
    id: Option<PairView<'a>>,
    path: Option<PairView<'a>>,
    whole_disk: Option<PairView<'a>>,
    ashift: Option<PairView<'a>>,
    is_log: Option<PairView<'a>>,
    alloc_bias: Option<PairView<'a>>,
    nparity: Option<PairView<'a>>,
    draid_ndata: Option<PairView<'a>>,
    draid_nspares: Option<PairView<'a>>,
}

impl<'a> VdevPairs<'a> {
    fn of(nv: &ListView<'a>) -> Self {
        let mut p = VdevPairs::default();
        for pair in nv.iter() {
            let slot = match pair.name_bytes() {
                b"type" => &mut p.kind,
                b"vdev_stats" => &mut p.stats,
                b"vdev_stats_ex" => &mut p.stats_ex,
                b"children" => &mut p.children,
                b"guid" => &mut p.guid,
                b"id" => &mut p.id,
                b"path" => &mut p.path,
                b"whole_disk" => &mut p.whole_disk,
                b"ashift" => &mut p.ashift,
                b"is_log" => &mut p.is_log,
                b"alloc_bias" => &mut p.alloc_bias,
                b"nparity" => &mut p.nparity,
                b"draid_ndata" => &mut p.draid_ndata,
                b"draid_nspares" => &mut p.draid_nspares,
                _ => continue,
            };
            *slot = Some(pair);
        }
        p
    }
}

/// A `UINT64` pair's value (`None` for a pair of another type, as [`ListView::u64`]).
fn u64_of(pair: Option<PairView>) -> Option<u64> {
    pair?.as_u64()
}

/// A `STRING` pair's value.
fn str_of(pair: Option<PairView<'_>>) -> Option<Cow<'_, str>> {
    pair?.as_str()
}

/// §5.1: log first (it carries `alloc_bias` "log" too), then the bias, else normal.
fn top_level_class(nv: &VdevPairs) -> VdevClass {
    if u64_of(nv.is_log) == Some(1) {
        return VdevClass::Log;
    }
    match str_of(nv.alloc_bias).as_deref() {
        Some("special") => VdevClass::Special,
        Some("dedup") => VdevClass::Dedup,
        Some("log") => VdevClass::Log,
        _ => VdevClass::Normal,
    }
}

fn top_level(nv: &VdevPairs, class: VdevClass, os: Os) -> Result<Vdev, String> {
    let mut v = vdev(nv, "", Some(class), 1, os)?;
    v.redundancy = Some(match v.vdev_type.as_str() {
        "mirror" => Redundancy::Mirror {
            width: u32::try_from(v.children.len()).unwrap_or(u32::MAX),
        },
        "raidz" | "draid" => Redundancy::Parity {
            parity: u64_of(nv.nparity)
                .and_then(|p| u32::try_from(p).ok())
                .unwrap_or(1),
        },
        _ => Redundancy::None,
    });
    Ok(v)
}

/// Nesting is bounded by the nvlist decoder's depth limit, so recursion here is bounded too.
fn vdev(
    nv: &VdevPairs,
    name: &str,
    class: Option<VdevClass>,
    depth: usize,
    os: Os,
) -> Result<Vdev, String> {
    if depth > 32 {
        return Err("vdev tree nested more than 32 levels".into());
    }
    let vdev_type = str_of(nv.kind).map_or_else(|| "unknown".to_string(), Cow::into_owned);
    let stats = nv.stats.and_then(|s| s.as_u64_array()).map(U64s::into_vec);
    let mut children = Vec::new();
    if vdev_type != "root"
        && let Some(list) = nv.children.and_then(|c| c.as_nvlist_array())
    {
        children.reserve_exact(list.len());
        for child in list.iter() {
            children.push(vdev(&VdevPairs::of(&child), "", class, depth + 1, os)?);
        }
    }
    let mut v = Vdev {
        name: String::new(),
        vdev_type,
        class,
        guid: u64_of(nv.guid),
        id: u64_of(nv.id),
        path: str_of(nv.path).map(Cow::into_owned),
        whole_disk: u64_of(nv.whole_disk).map(|w| w != 0),
        redundancy: None,
        ashift: u64_of(nv.ashift),
        state: stats
            .as_deref()
            .and_then(|s| health(s.get(vs::STATE)?, s.get(vs::AUX)?)),
        aux: stats
            .as_deref()
            .and_then(|s| aux(*s.get(vs::AUX)?))
            .map(str::to_string),
        stats: stats.and_then(vdev_stats),
        histograms: nv.stats_ex.and_then(|ex| ex.as_nvlist()).map(histograms),
        disk: None,
        partition: None,
        children,
    };
    v.name = if name.is_empty() {
        display_name(nv, &v, os)
    } else {
        name.to_string()
    };
    Ok(v)
}

/// The name `zpool status` prints (libzfs `zpool_vdev_name` without -P/-L/-g).
fn display_name(nv: &VdevPairs, v: &Vdev, os: Os) -> String {
    let id = v.id.map_or_else(String::new, |id| format!("-{id}"));
    match v.vdev_type.as_str() {
        "disk" | "file" => match &v.path {
            Some(path) => {
                super::join::short_name(path, v.whole_disk == Some(true), &v.vdev_type, os)
            }
            None => v.guid.map_or_else(|| "?".into(), |g| g.to_string()),
        },
        "raidz" => format!("raidz{}{id}", u64_of(nv.nparity).unwrap_or(1)),
        "draid" => format!(
            "draid{}:{}d:{}c:{}s{id}",
            u64_of(nv.nparity).unwrap_or(1),
            u64_of(nv.draid_ndata).unwrap_or(0),
            v.children.len(),
            u64_of(nv.draid_nspares).unwrap_or(0)
        ),
        other => format!("{other}{id}"),
    }
}

fn vdev_stats(raw: Vec<u64>) -> Option<VdevStats> {
    if raw.len() < vs::MIN_LEN {
        return None;
    }
    let mut ops = [0u64; 6];
    let mut bytes = [0u64; 6];
    ops.copy_from_slice(&raw[vs::OPS..vs::OPS + 6]);
    bytes.copy_from_slice(&raw[vs::BYTES..vs::BYTES + 6]);
    Some(VdevStats {
        timestamp: raw[vs::TIMESTAMP],
        alloc: raw[vs::ALLOC],
        space: raw[vs::SPACE],
        dspace: raw[vs::DSPACE],
        ops,
        bytes,
        read_errors: raw[vs::READ_ERRORS],
        write_errors: raw[vs::WRITE_ERRORS],
        checksum_errors: raw[vs::CHECKSUM_ERRORS],
        // UINT64_MAX marks "no valid value" (leaves, or spacemap histograms not loaded).
        fragmentation: raw.get(vs::FRAGMENTATION).copied().filter(|&f| f <= 100),
        slow_ios: raw.get(vs::SLOW_IOS).copied(),
        self_healed: raw.get(vs::SELF_HEALED).copied(),
        scan_processed: raw.get(vs::SCAN_PROCESSED).copied(),
        // 0 where the kernel has no value (an interior vdev's device ashifts).
        configured_ashift: raw.get(vs::CONFIGURED_ASHIFT).copied().filter(|&a| a > 0),
        logical_ashift: raw.get(vs::LOGICAL_ASHIFT).copied().filter(|&a| a > 0),
        physical_ashift: raw.get(vs::PHYSICAL_ASHIFT).copied().filter(|&a| a > 0),
        raw,
    })
}

/// The ten histograms of `vdev_stats_ex`, read in one pass over its pairs (it holds some
/// thirty: ten lookups by name scanned it ten times, for every vdev of every reading). A name
/// given twice takes its last value, as a lookup would.
fn histograms(ex: ListView) -> LatencyHistograms {
    let mut h = LatencyHistograms::default();
    for pair in ex.iter() {
        let slot = match pair.name_bytes() {
            b"vdev_tot_r_lat_histo" => &mut h.total_r,
            b"vdev_tot_w_lat_histo" => &mut h.total_w,
            b"vdev_disk_r_lat_histo" => &mut h.disk_r,
            b"vdev_disk_w_lat_histo" => &mut h.disk_w,
            b"vdev_sync_r_lat_histo" => &mut h.syncq_r,
            b"vdev_sync_w_lat_histo" => &mut h.syncq_w,
            b"vdev_async_r_lat_histo" => &mut h.asyncq_r,
            b"vdev_async_w_lat_histo" => &mut h.asyncq_w,
            b"vdev_scrub_histo" => &mut h.scrub,
            b"vdev_trim_histo" => &mut h.trim,
            _ => continue,
        };
        *slot = pair.as_u64_array().map(U64s::into_vec).unwrap_or_default();
    }
    h
}

/// `zpool_state_to_name` (§5.4).
fn health(state: &u64, aux: &u64) -> Option<String> {
    const CORRUPT_DATA: u64 = 2;
    const BAD_LOG: u64 = 13;
    const SPLIT_POOL: u64 = 15;
    let text = match *state {
        1 | 2 => "OFFLINE",
        3 => "REMOVED",
        4 => match *aux {
            CORRUPT_DATA | BAD_LOG => "FAULTED",
            SPLIT_POOL => "SPLIT",
            _ => "UNAVAIL",
        },
        5 => "FAULTED",
        6 => "DEGRADED",
        7 => "ONLINE",
        _ => "UNKNOWN",
    };
    Some(text.to_string())
}

/// A hot spare is `INUSE` when it replaces a device, `AVAIL` when healthy and idle, as
/// `zpool status` says; otherwise its health.
fn spare_state(v: &Vdev) -> Option<String> {
    match (v.aux.as_deref(), v.state.as_deref()) {
        (Some("spared"), _) => Some("INUSE".into()),
        (_, Some("ONLINE")) => Some("AVAIL".into()),
        (_, other) => other.map(str::to_string),
    }
}

/// `vdev_aux_t` names, for the reason a vdev is not healthy.
fn aux(code: u64) -> Option<&'static str> {
    const NAMES: [&str; 21] = [
        "",
        "open_failed",
        "corrupt_data",
        "no_replicas",
        "bad_guid_sum",
        "too_small",
        "bad_label",
        "version_newer",
        "version_older",
        "unsup_feat",
        "spared",
        "err_exceeded",
        "io_failure",
        "bad_log",
        "external",
        "split_pool",
        "bad_ashift",
        "external_persist",
        "active",
        "children_offline",
        "ashift_too_big",
    ];
    match code {
        0 => None,
        c => Some(NAMES.get(c as usize).copied().unwrap_or("unknown")),
    }
}

/// `pool_scan_stat_t` (§5.5); index 6 changed meaning in 2.2 and is not used.
fn scan_stats(raw: &[u64]) -> Option<ScanStats> {
    if raw.len() < 9 {
        return None;
    }
    let function = match raw[0] {
        0 => "none",
        1 => "scrub",
        2 => "resilver",
        3 => "errorscrub",
        _ => "unknown",
    };
    let state = match raw[1] {
        0 => "none",
        1 => "scanning",
        2 => "finished",
        3 => "canceled",
        4 => "errorscrubbing",
        _ => "unknown",
    };
    Some(ScanStats {
        function: function.into(),
        state: state.into(),
        start_time: raw[2],
        end_time: raw[3],
        to_examine: raw[4],
        examined: raw[5],
        processed: raw[7],
        errors: raw[8],
        pass_examined: raw.get(9).copied(),
        pass_start: raw.get(10).copied(),
        pass_scrub_pause: raw.get(11).copied(),
        pass_scrub_spent_paused: raw.get(12).copied(),
        pass_issued: raw.get(13).copied(),
        issued: raw.get(14).copied(),
    })
}

/// The top-level list of POOL_CONFIGS: pool name → config without stats.
pub fn pool_names(configs: &ListView) -> Vec<String> {
    configs
        .iter()
        .filter(|p| p.data_type() == DataType::NvList)
        .map(|p| p.name().into_owned())
        .collect()
}
