//! ZFS module parameters, under their Linux names on both systems.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Tunables as text, keyed by the Linux parameter name (`zfs_arc_max`, `l2arc_rebuild_enabled`);
/// the FreeBSD reader maps `vfs.zfs.*` sysctls onto the same names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Tunables(
    #[serde(deserialize_with = "crate::sorted_map::deserialize")] pub BTreeMap<String, String>,
);

macro_rules! numeric {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $( $(#[$doc])* pub fn $name(&self) -> Option<u64> { self.number(stringify!($name)) } )*
    };
}

impl Tunables {
    /// The tunables zpulse reads, by Linux name. The FreeBSD reader has its own map onto these.
    pub const KNOWN: &'static [&'static str] = &[
        "zfs_arc_max",
        "zfs_arc_min",
        "zfs_arc_meta_limit",
        "zfs_arc_meta_limit_percent",
        "zfs_arc_meta_balance",
        "zfs_dirty_data_max",
        "zfs_dirty_data_max_percent",
        "zfs_dirty_data_max_max",
        "zfs_txg_timeout",
        "zfs_txg_history",
        "zfs_special_class_metadata_reserve_pct",
        "zfs_immediate_write_sz",
        "zil_slog_bulk",
        "l2arc_write_max",
        "l2arc_write_boost",
        "l2arc_headroom",
        "l2arc_noprefetch",
        "l2arc_rebuild_enabled",
        "l2arc_mfuonly",
    ];

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn number(&self, name: &str) -> Option<u64> {
        self.get(name)?.trim().parse().ok()
    }

    numeric!(
        /// 0 means automatic: read arcstats `c_max` for the value in force.
        zfs_arc_max,
        zfs_arc_min,
        zfs_dirty_data_max,
        zfs_txg_timeout,
        zfs_special_class_metadata_reserve_pct,
        l2arc_rebuild_enabled,
    );
}
