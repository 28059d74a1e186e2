//! ARC and ZIL rates.

use crate::Snapshot;
use crate::counter::{kstat_deltas, ratio};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// arcstats rows that are monotonic counters. Every other row is a size or a setting, whose
/// difference means nothing. Names from OpenZFS 0.6 to 2.4; a kernel lacking one simply has
/// no delta for it.
pub const ARC_COUNTERS: &[&str] = &[
    "hits",
    "iohits",
    "misses",
    "demand_data_hits",
    "demand_data_iohits",
    "demand_data_misses",
    "demand_metadata_hits",
    "demand_metadata_iohits",
    "demand_metadata_misses",
    "prefetch_data_hits",
    "prefetch_data_iohits",
    "prefetch_data_misses",
    "prefetch_metadata_hits",
    "prefetch_metadata_iohits",
    "prefetch_metadata_misses",
    "mru_hits",
    "mru_ghost_hits",
    "mfu_hits",
    "mfu_ghost_hits",
    "uncached_hits",
    "deleted",
    "mutex_miss",
    "access_skip",
    "evict_skip",
    "evict_not_enough",
    "evict_l2_cached",
    "evict_l2_eligible",
    "evict_l2_eligible_mfu",
    "evict_l2_eligible_mru",
    "evict_l2_ineligible",
    "evict_l2_skip",
    "hash_collisions",
    "l2_hits",
    "l2_misses",
    "l2_feeds",
    "l2_rw_clash",
    "l2_read_bytes",
    "l2_write_bytes",
    "l2_writes_sent",
    "l2_writes_done",
    "l2_writes_error",
    "l2_writes_lock_retry",
    "l2_evict_lock_retry",
    "l2_evict_reading",
    "l2_evict_l1cached",
    "l2_free_on_write",
    "l2_abort_lowmem",
    "l2_cksum_bad",
    "l2_io_error",
    "l2_log_blk_writes",
    "memory_throttle_count",
    "memory_direct_count",
    "memory_indirect_count",
    "arc_prune",
    "arc_loaned_bytes",
    "predictive_prefetch",
    "prescient_prefetch",
];

/// ARC activity over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArcRates {
    /// Delta of every counter in [`ARC_COUNTERS`] the kernel reports.
    #[serde(deserialize_with = "crate::sorted_map::deserialize")]
    pub deltas: BTreeMap<String, u64>,
    /// Reads the ARC answered (hits + iohits + misses) per second.
    pub reads_per_s: f64,
    /// hits / (hits + iohits + misses), 0–1. Before 2.2 `hits` includes in-flight hits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_data_hit_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_metadata_hit_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch_hit_ratio: Option<f64>,
    /// l2_hits / (l2_hits + l2_misses): how often an ARC miss found its block on the L2ARC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_hit_ratio: Option<f64>,
    /// l2_hits / all ARC reads: the share of reads the L2ARC served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_share_of_reads: Option<f64>,
    /// MRU + MFU ghost-list hits per second: reads a larger ARC would have served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ghost_hits_per_s: Option<f64>,
}

impl ArcRates {
    pub fn delta(&self, name: &str) -> Option<u64> {
        self.deltas.get(name).copied()
    }
}

/// ZIL activity over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZilRates {
    /// Delta of every `zil` row (all are counters).
    #[serde(deserialize_with = "crate::sorted_map::deserialize")]
    pub deltas: BTreeMap<String, u64>,
    pub commits_per_s: f64,
    pub itx_per_s: f64,
    /// Bytes of sync writes logged (indirect + copied + needcopy) per second.
    pub itx_bytes_per_s: f64,
    /// Log-block bytes written to SLOG devices / to the main pool, per second.
    pub slog_bytes_per_s: f64,
    pub normal_bytes_per_s: f64,
    /// slog / (slog + normal) log-block bytes, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slog_share: Option<f64>,
}

impl ZilRates {
    pub fn delta(&self, name: &str) -> Option<u64> {
        self.deltas.get(name).copied()
    }
}

pub(super) fn arc_rates(
    prev: &Snapshot,
    cur: &Snapshot,
    itv: f64,
    resets: &mut Vec<String>,
) -> Option<ArcRates> {
    let (a, b) = (prev.arc.as_ref()?, cur.arc.as_ref()?);
    let Some(deltas) = kstat_deltas(&a.0, &b.0, |n| ARC_COUNTERS.contains(&n)) else {
        resets.push("arcstats".into());
        return None;
    };
    Some(ArcRates::from_deltas(deltas, itv))
}

impl ArcRates {
    /// The rates of counters that grew by `deltas` in `itv` seconds (a report adds up the
    /// deltas of the stretches of its window, and makes the rates of the sum here).
    pub fn from_deltas(deltas: BTreeMap<String, u64>, itv: f64) -> ArcRates {
        let d = |n: &str| deltas.get(n).copied().unwrap_or(0) as f64;
        let reads = d("hits") + d("iohits") + d("misses");
        let class_ratio = |prefix: &str| {
            let hits = d(&format!("{prefix}_hits"));
            let total = hits + d(&format!("{prefix}_iohits")) + d(&format!("{prefix}_misses"));
            ratio(hits, total)
        };
        let prefetch_hits = d("prefetch_data_hits") + d("prefetch_metadata_hits");
        let prefetch_total = prefetch_hits
            + d("prefetch_data_iohits")
            + d("prefetch_metadata_iohits")
            + d("prefetch_data_misses")
            + d("prefetch_metadata_misses");
        let has = |n: &str| deltas.contains_key(n);
        ArcRates {
            reads_per_s: reads / itv,
            hit_ratio: ratio(d("hits"), reads),
            demand_data_hit_ratio: class_ratio("demand_data"),
            demand_metadata_hit_ratio: class_ratio("demand_metadata"),
            prefetch_hit_ratio: ratio(prefetch_hits, prefetch_total),
            l2_hit_ratio: ratio(d("l2_hits"), d("l2_hits") + d("l2_misses")),
            l2_share_of_reads: if has("l2_hits") {
                ratio(d("l2_hits"), reads)
            } else {
                None
            },
            ghost_hits_per_s: (has("mru_ghost_hits") || has("mfu_ghost_hits"))
                .then(|| (d("mru_ghost_hits") + d("mfu_ghost_hits")) / itv),
            deltas,
        }
    }
}

pub(super) fn zil_rates(
    prev: &Snapshot,
    cur: &Snapshot,
    itv: f64,
    resets: &mut Vec<String>,
) -> Option<ZilRates> {
    let (a, b) = (prev.zil.as_ref()?, cur.zil.as_ref()?);
    let Some(deltas) = kstat_deltas(&a.0, &b.0, |_| true) else {
        resets.push("zil".into());
        return None;
    };
    Some(ZilRates::from_deltas(deltas, itv))
}

impl ZilRates {
    /// The rates of `zil` rows that grew by `deltas` in `itv` seconds.
    pub fn from_deltas(deltas: BTreeMap<String, u64>, itv: f64) -> ZilRates {
        let d = |n: &str| deltas.get(n).copied().unwrap_or(0) as f64;
        let slog = d("zil_itx_metaslab_slog_bytes");
        let normal = d("zil_itx_metaslab_normal_bytes");
        ZilRates {
            commits_per_s: d("zil_commit_count") / itv,
            itx_per_s: d("zil_itx_count") / itv,
            itx_bytes_per_s: (d("zil_itx_indirect_bytes")
                + d("zil_itx_copied_bytes")
                + d("zil_itx_needcopy_bytes"))
                / itv,
            slog_bytes_per_s: slog / itv,
            normal_bytes_per_s: normal / itv,
            slog_share: ratio(slog, slog + normal),
            deltas,
        }
    }
}
