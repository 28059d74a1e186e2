//! Typed views of the global ZFS kstats: `arcstats` and `zil`.
//!
//! Both keep every row the kernel printed (so nothing is lost when OpenZFS adds a field) and
//! offer typed accessors for the rows zpulse interprets. Every accessor returns `Option`:
//! OpenZFS 0.6 to 2.4 renamed and removed fields (`arc_meta_limit` and `p` are gone in 2.2,
//! `iohits` is new in 2.2, `l2_rebuild_*` is 2.0+).

use super::Kstat;
use serde::{Deserialize, Serialize};

macro_rules! accessors {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $( $(#[$doc])* pub fn $name(&self) -> Option<u64> { self.0.u64(stringify!($name)) } )*
    };
}

/// `/proc/spl/kstat/zfs/arcstats` or `kstat.zfs.misc.arcstats.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ArcStats(pub Kstat);

impl ArcStats {
    accessors!(
        /// Current ARC size in bytes (data, metadata and overhead).
        size,
        /// Target size.
        c,
        c_min,
        /// The effective maximum (the tunable may be 0 = automatic).
        c_max,
        data_size,
        metadata_size,
        hdr_size,
        dbuf_size,
        dnode_size,
        bonus_size,
        /// Everything but DATA buffers and chunk waste; present in every version.
        arc_meta_used,
        /// ≤ 2.1 only.
        arc_meta_limit,
        hits,
        /// 2.2+: the read found its I/O already in flight (counted in `hits` before 2.2).
        iohits,
        misses,
        demand_data_hits,
        demand_data_iohits,
        demand_data_misses,
        demand_metadata_hits,
        demand_metadata_iohits,
        demand_metadata_misses,
        prefetch_data_hits,
        prefetch_data_iohits,
        prefetch_data_misses,
        prefetch_metadata_hits,
        prefetch_metadata_iohits,
        prefetch_metadata_misses,
        mru_hits,
        mfu_hits,
        mru_ghost_hits,
        mfu_ghost_hits,
        l2_hits,
        l2_misses,
        l2_size,
        l2_asize,
        l2_hdr_size,
        l2_read_bytes,
        l2_write_bytes,
        l2_rebuild_success,
        memory_all_bytes,
        memory_free_bytes,
        memory_throttle_count,
        arc_no_grow,
    );

    /// Free memory the ARC may still grow into; INT64, can be negative.
    pub fn memory_available_bytes(&self) -> Option<i64> {
        self.0.i64("memory_available_bytes")
    }

    /// Share of the ARC that is metadata (0..=1): `arc_meta_used / size`.
    pub fn metadata_share(&self) -> Option<f64> {
        crate::counter::ratio(self.arc_meta_used()? as f64, self.size()? as f64)
    }
}

/// `/proc/spl/kstat/zfs/zil` or `kstat.zfs.misc.zil.*`. Every field is a monotonic counter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ZilStats(pub Kstat);

impl ZilStats {
    accessors!(
        /// zil_commit() requests: fsync, O_SYNC, sync=always.
        zil_commit_count,
        zil_commit_writer_count,
        zil_itx_count,
        zil_itx_indirect_count,
        zil_itx_indirect_bytes,
        zil_itx_copied_count,
        zil_itx_copied_bytes,
        zil_itx_needcopy_count,
        zil_itx_needcopy_bytes,
        /// Log blocks written to the main pool.
        zil_itx_metaslab_normal_count,
        zil_itx_metaslab_normal_bytes,
        /// Log blocks written to a separate log (SLOG) vdev.
        zil_itx_metaslab_slog_count,
        zil_itx_metaslab_slog_bytes,
    );
}
