//! ZFS tunables from `vfs.zfs.*`, stored under their Linux parameter names.
//!
//! OpenZFS declares each parameter once with `ZFS_MODULE_PARAM(scope, prefix, name, …)`: on
//! Linux it becomes `/sys/module/zfs/parameters/<prefix><name>`, on FreeBSD the sysctl
//! `vfs.<scope with _ as .>.<name>` (include/os/freebsd/spl/sys/mod.h). So `zfs_arc_max`
//! (scope `zfs_arc`, prefix `zfs_arc_`) is `vfs.zfs.arc.max`, and `l2arc_rebuild_enabled`
//! (scope `zfs_l2arc`, prefix `l2arc_`) is `vfs.zfs.l2arc.rebuild_enabled`. The scopes below
//! were checked in module/zfs/{arc,dsl_pool,spa_misc,spa_stats,zil,zfs_log}.c.
//!
//! Second names are aliases tried when the first does not exist: the "(LEGACY)" sysctls of
//! module/os/freebsd/zfs/sysctl_os.c (OpenZFS 2.0–2.4; removed in master) and the names of
//! FreeBSD's own ZFS before OpenZFS (FreeBSD ≤ 12), which used the same flat spelling.

use super::sysctl::{Sysctl, SysctlValue};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::Tunables;

/// Linux name → FreeBSD sysctl names, first the current one, then aliases.
pub const MAP: &[(&str, &[&str])] = &[
    ("zfs_arc_max", &["vfs.zfs.arc.max", "vfs.zfs.arc_max"]),
    ("zfs_arc_min", &["vfs.zfs.arc.min", "vfs.zfs.arc_min"]),
    // ≤ 2.1. `arc_meta_limit` is the pre-OpenZFS FreeBSD name; 2.x has no legacy alias.
    (
        "zfs_arc_meta_limit",
        &["vfs.zfs.arc.meta_limit", "vfs.zfs.arc_meta_limit"],
    ),
    (
        "zfs_arc_meta_limit_percent",
        &["vfs.zfs.arc.meta_limit_percent"],
    ),
    // 2.2+.
    ("zfs_arc_meta_balance", &["vfs.zfs.arc.meta_balance"]),
    ("zfs_dirty_data_max", &["vfs.zfs.dirty_data_max"]),
    (
        "zfs_dirty_data_max_percent",
        &["vfs.zfs.dirty_data_max_percent"],
    ),
    ("zfs_dirty_data_max_max", &["vfs.zfs.dirty_data_max_max"]),
    ("zfs_txg_timeout", &["vfs.zfs.txg.timeout"]),
    ("zfs_txg_history", &["vfs.zfs.txg.history"]),
    (
        "zfs_special_class_metadata_reserve_pct",
        &["vfs.zfs.special_class_metadata_reserve_pct"],
    ),
    ("zfs_immediate_write_sz", &["vfs.zfs.immediate_write_sz"]),
    // Scope zfs_zil. The flat alias is the pre-OpenZFS FreeBSD spelling (not verified here).
    (
        "zil_slog_bulk",
        &["vfs.zfs.zil.slog_bulk", "vfs.zfs.zil_slog_bulk"],
    ),
    (
        "l2arc_write_max",
        &["vfs.zfs.l2arc.write_max", "vfs.zfs.l2arc_write_max"],
    ),
    (
        "l2arc_write_boost",
        &["vfs.zfs.l2arc.write_boost", "vfs.zfs.l2arc_write_boost"],
    ),
    (
        "l2arc_headroom",
        &["vfs.zfs.l2arc.headroom", "vfs.zfs.l2arc_headroom"],
    ),
    (
        "l2arc_noprefetch",
        &["vfs.zfs.l2arc.noprefetch", "vfs.zfs.l2arc_noprefetch"],
    ),
    ("l2arc_rebuild_enabled", &["vfs.zfs.l2arc.rebuild_enabled"]),
    ("l2arc_mfuonly", &["vfs.zfs.l2arc.mfuonly"]),
];

/// Fills `snap.tunables`. A tunable whose names all do not exist is left out silently
/// (renamed or removed in this version); a read that fails is noted.
pub fn read(sysctl: &dyn Sysctl, snap: &mut Snapshot) {
    let mut tunables = Tunables::default();
    for (linux, names) in MAP {
        for name in *names {
            match sysctl.read(name) {
                Ok(v) => {
                    tunables.0.insert(linux.to_string(), as_text(v));
                    break;
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) => {
                    snap.note(*name, e.to_string());
                    break;
                }
            }
        }
    }
    snap.tunables = tunables;
}

/// Tunables are stored as text, like the Linux parameter files (trimmed).
fn as_text(v: SysctlValue) -> String {
    match v {
        SysctlValue::Unsigned(n) => n.to_string(),
        SysctlValue::Signed(n) => n.to_string(),
        SysctlValue::Text(s) => s.trim().to_string(),
        SysctlValue::Bytes(b) => String::from_utf8_lossy(&b).trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::freebsd::sysctl::DumpSysctl;
    use std::collections::BTreeSet;

    #[test]
    fn every_known_linux_tunable_has_a_freebsd_name_and_nothing_else() {
        let known: BTreeSet<&str> = Tunables::KNOWN.iter().copied().collect();
        let mapped: BTreeSet<&str> = MAP.iter().map(|(l, _)| *l).collect();
        assert_eq!(known, mapped);
        assert_eq!(MAP.len(), Tunables::KNOWN.len(), "no duplicates");
        for (linux, names) in MAP {
            assert!(!names.is_empty(), "{linux}");
            assert!(names.iter().all(|n| n.starts_with("vfs.zfs.")), "{linux}");
        }
    }

    #[test]
    fn current_names_win_over_aliases_and_aliases_fill_in() {
        let d = DumpSysctl::parse(
            "vfs.zfs.arc.max: 8589934592\n\
             vfs.zfs.arc_max: 1\n\
             vfs.zfs.arc_min: 268435456\n\
             vfs.zfs.txg.timeout: 5\n\
             vfs.zfs.l2arc.rebuild_enabled: 1\n\
             vfs.zfs.dirty_data_max: 4294967296\n\
             vfs.zfs.special_class_metadata_reserve_pct: 25\n\
             vfs.zfs.l2arc_noprefetch: 0\n\
             vfs.zfs.unrelated: 3\n",
        )
        .unwrap();
        let mut snap = Snapshot::default();
        read(&d, &mut snap);
        assert!(snap.issues.is_empty());
        let t = &snap.tunables;
        assert_eq!(t.zfs_arc_max(), Some(8_589_934_592));
        assert_eq!(t.zfs_arc_min(), Some(268_435_456));
        assert_eq!(t.zfs_txg_timeout(), Some(5));
        assert_eq!(t.l2arc_rebuild_enabled(), Some(1));
        assert_eq!(t.zfs_dirty_data_max(), Some(4_294_967_296));
        assert_eq!(t.zfs_special_class_metadata_reserve_pct(), Some(25));
        assert_eq!(t.get("l2arc_noprefetch"), Some("0"));
        assert_eq!(t.0.len(), 7);
    }
}
