//! Reader for `/sys/module/zfs/parameters`: the ZFS module tunables zpulse interprets.
//!
//! Only the names in [`Tunables::KNOWN`] are read. The directory holds hundreds of
//! parameters and this runs every sample, so listing and reading all of them would cost far
//! more than the handful we use.

use crate::sources::Root;
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::Tunables;

const PARAMETERS: &str = "sys/module/zfs/parameters";

/// Every known tunable that exists, as trimmed text. A parameter this OpenZFS version lacks
/// (`zfs_arc_meta_limit` after 2.1, `l2arc_mfuonly` before 2.0) is simply absent. One that
/// exists but cannot be read, or is not a number (every known one is an integer in OpenZFS's
/// `ZFS_MODULE_PARAM` declarations), is left out and noted: the checks that use it lose it.
pub fn read(root: &Root, snap: &mut Snapshot) -> Tunables {
    let mut tunables = Tunables::default();
    for name in Tunables::KNOWN {
        let rel = format!("{PARAMETERS}/{name}");
        match root.read_trimmed(&rel) {
            Ok(value) if value.parse::<i128>().is_ok() => {
                tunables.0.insert((*name).to_string(), value);
            }
            Ok(value) => snap.note(
                &rel,
                format!("{value:.40?} is not a number: the parameter is left out"),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => snap.note(&rel, format!("cannot read: {e}")),
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
        let mut snap = Snapshot::default();
        let t = read(&Root::new(&dir), &mut snap);
        assert_eq!(snap.issues, vec![]);
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
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let params = dir.join(PARAMETERS);
        std::fs::create_dir_all(&params).unwrap();
        std::fs::write(params.join("zfs_arc_max"), "1073741824\n").unwrap();
        std::fs::write(params.join("zfs_vdev_async_read_max_active"), "3\n").unwrap();
        let mut snap = Snapshot::default();
        let t = read(&Root::new(dir), &mut snap);
        assert_eq!(t.zfs_arc_max(), Some(1073741824));
        assert_eq!(t.0.len(), 1);
        assert_eq!(
            read(&Root::new("/nonexistent-zpulse-root"), &mut snap),
            Tunables::default()
        );
        // Absent parameters are no issue.
        assert_eq!(snap.issues, vec![]);
    }

    #[test]
    fn a_bad_parameter_file_is_left_out_and_noted() {
        let dir = tempfile::tempdir().unwrap();
        let params = dir.path().join(PARAMETERS);
        std::fs::create_dir_all(&params).unwrap();
        std::fs::write(params.join("zfs_arc_max"), "lots\n").unwrap();
        std::fs::create_dir(params.join("zfs_txg_timeout")).unwrap();
        std::fs::write(params.join("zfs_arc_min"), "18446744073709551615\n").unwrap();
        let mut snap = Snapshot::default();
        let t = read(&Root::new(dir.path()), &mut snap);
        assert_eq!(t.get("zfs_arc_max"), None);
        assert_eq!(t.get("zfs_txg_timeout"), None);
        assert_eq!(t.get("zfs_arc_min"), Some("18446744073709551615"));
        let noted: Vec<&str> = snap.issues.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(
            noted,
            [
                "sys/module/zfs/parameters/zfs_arc_max",
                "sys/module/zfs/parameters/zfs_txg_timeout"
            ],
            "{:?}",
            snap.issues
        );
        assert!(snap.issues[0].message.contains("\"lots\" is not a number"));
        assert!(
            snap.issues[1]
                .message
                .contains("not a regular file (a directory)")
        );
    }
}
