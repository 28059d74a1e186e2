//! Reader for `/sys/module/zfs/parameters`: the ZFS module tunables zpulse interprets.
//!
//! Only the names in [`Tunables::KNOWN`] are read. The directory holds hundreds of
//! parameters and this runs every sample, so listing and reading all of them would cost far
//! more than the handful we use.

use crate::sources::Root;
use zpulse_proto::snapshot::Tunables;

const PARAMETERS: &str = "sys/module/zfs/parameters";

/// Every known tunable that exists, as trimmed text. A parameter this OpenZFS version lacks
/// (`zfs_arc_meta_limit` after 2.1, `l2arc_mfuonly` before 2.0) is simply absent, and so is
/// one that cannot be read: tunables are context, never worth an issue of their own.
pub fn read(root: &Root) -> Tunables {
    let mut tunables = Tunables::default();
    for name in Tunables::KNOWN {
        if let Ok(value) = root.read_trimmed(&format!("{PARAMETERS}/{name}")) {
            tunables.0.insert((*name).to_string(), value);
        }
    }
    tunables
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");

    #[test]
    fn lab_capture() {
        let dir = Path::new(FIXTURES).join("lab/basic/000");
        let t = read(&Root::new(&dir));
        // Values read from lab/basic/000/sys/module/zfs/parameters/*.
        assert_eq!(t.get("zfs_arc_max"), Some("0"));
        assert_eq!(t.get("zfs_arc_min"), Some("0"));
        assert_eq!(t.zfs_dirty_data_max(), Some(311422976));
        assert_eq!(t.get("zfs_dirty_data_max_percent"), Some("10"));
        assert_eq!(t.zfs_special_class_metadata_reserve_pct(), Some(25));
        assert_eq!(t.zfs_txg_timeout(), Some(5));
        assert_eq!(t.get("l2arc_write_max"), Some("8388608"));
        assert_eq!(t.l2arc_rebuild_enabled(), Some(1));
        // The capture holds exactly these eight parameters, all of them known.
        let on_disk = std::fs::read_dir(dir.join(PARAMETERS)).unwrap().count();
        assert_eq!(t.0.len(), on_disk);
        assert_eq!(t.get("zfs_arc_meta_limit"), None);
    }

    #[test]
    fn only_known_names_are_read() {
        let dir =
            std::env::temp_dir().join(format!("zpulse-linux-tunables-{}", std::process::id()));
        let params = dir.join(PARAMETERS);
        std::fs::create_dir_all(&params).unwrap();
        std::fs::write(params.join("zfs_arc_max"), "1073741824\n").unwrap();
        std::fs::write(params.join("zfs_vdev_async_read_max_active"), "3\n").unwrap();
        let t = read(&Root::new(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(t.zfs_arc_max(), Some(1073741824));
        assert_eq!(t.0.len(), 1);
        assert_eq!(
            read(&Root::new("/nonexistent-zpulse-root")),
            Tunables::default()
        );
    }
}
