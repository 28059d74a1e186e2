//! Reader for `/sys/module/zfs/parameters`: the ZFS module tunables zpulse interprets.
//!
//! Only the names in [`Tunables::KNOWN`] are read. The directory holds hundreds of
//! parameters and this runs every sample, so listing and reading all of them would cost far
//! more than the handful we use.

use crate::sources::Root;
use std::sync::Mutex;
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::Tunables;

const PARAMETERS: &str = "sys/module/zfs/parameters";

/// The known tunables this kernel lacks, as a live reader last found them, kept across its
/// snapshots. Which parameters a module has is fixed when it loads: `zfs_arc_meta_limit` is
/// there on OpenZFS 2.1 and gone on 2.2, and nothing adds one at run time. Probing each absent
/// one every interval was a failed path walk plus the dangling-link `lstat` a missing file
/// pays ([`crate::base::files`]): on the lab host (OpenZFS 2.1, eleven of the nineteen known
/// names absent) a tenth of a live interval. So an absent name is probed again only every
/// [`REPROBE_EVERY`] snapshots: a module upgraded in place shows its new parameters within
/// that many intervals. Present ones are read every time (an admin may change them). A capture
/// never keeps this: it records a full read.
#[derive(Debug, Default)]
pub struct KeptAbsence {
    last: Mutex<Option<Absent>>,
}

#[derive(Debug, Clone, Copy)]
struct Absent {
    /// Bit `i`: `Tunables::KNOWN[i]` was not found.
    names: u32,
    /// Snapshots read since the absent names were last probed.
    uses: u32,
}

/// Snapshots between two probes of the tunables found absent.
pub const REPROBE_EVERY: u32 = 60;

const _: () = assert!(Tunables::KNOWN.len() <= u32::BITS as usize);

impl KeptAbsence {
    /// The names to leave unread in this snapshot (bit `i` for `Tunables::KNOWN[i]`), and
    /// counts it as read.
    fn skip(&self) -> u32 {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match last.as_mut() {
            Some(absent) if absent.uses < REPROBE_EVERY => {
                absent.uses += 1;
                absent.names
            }
            _ => 0,
        }
    }

    /// Remembers what a snapshot found absent: all of it after a full probe, and otherwise
    /// what it found gone since (a parameter cannot come back without a full probe).
    fn found(&self, absent: u32, probed_all: bool) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match last.as_mut() {
            Some(kept) if !probed_all => kept.names |= absent,
            _ => {
                *last = Some(Absent {
                    names: absent,
                    uses: 1,
                })
            }
        }
    }
}

/// Every known tunable that exists, as trimmed text. A parameter this OpenZFS version lacks
/// (`zfs_arc_meta_limit` after 2.1, `l2arc_mfuonly` before 2.0) is simply absent. One that
/// exists but cannot be read, or is not a number (every known one is an integer in OpenZFS's
/// `ZFS_MODULE_PARAM` declarations), is left out and noted: the checks that use it lose it.
/// With `kept` (a live reader's), the names absent last time are probed only now and then.
pub fn read(root: &Root, kept: Option<&KeptAbsence>, snap: &mut Snapshot) -> Tunables {
    let skip = kept.map_or(0, KeptAbsence::skip);
    let mut absent = 0u32;
    let mut tunables = Tunables::default();
    for (i, name) in Tunables::KNOWN.iter().enumerate() {
        if skip & (1 << i) != 0 {
            continue;
        }
        let rel = format!("{PARAMETERS}/{name}");
        match root.read_trimmed(&rel) {
            Ok(value) if value.parse::<i128>().is_ok() => {
                tunables.0.insert((*name).to_string(), value);
            }
            Ok(value) => snap.note(
                &rel,
                format!("{value:.40?} is not a number: the parameter is left out"),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => absent |= 1 << i,
            Err(e) => snap.note(&rel, format!("cannot read: {e}")),
        }
    }
    if let Some(kept) = kept {
        kept.found(absent, skip == 0);
    }
    tunables
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");

    fn read_afresh(root: &Root, snap: &mut Snapshot) -> Tunables {
        read(root, None, snap)
    }

    #[test]
    fn lab_capture() {
        let dir = Path::new(FIXTURES).join("lab/basic/000");
        let mut snap = Snapshot::default();
        let t = read_afresh(&Root::new(&dir), &mut snap);
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
        let t = read_afresh(&Root::new(dir), &mut snap);
        assert_eq!(t.zfs_arc_max(), Some(1073741824));
        assert_eq!(t.0.len(), 1);
        assert_eq!(
            read_afresh(&Root::new("/nonexistent-zpulse-root"), &mut snap),
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
        let t = read_afresh(&Root::new(dir.path()), &mut snap);
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

    #[test]
    fn a_live_reader_probes_absent_names_only_every_reprobe_interval() {
        let dir = tempfile::tempdir().unwrap();
        let params = dir.path().join(PARAMETERS);
        std::fs::create_dir_all(&params).unwrap();
        std::fs::write(params.join("zfs_arc_max"), "1073741824\n").unwrap();
        std::fs::write(params.join("zfs_arc_min"), "0\n").unwrap();
        // Files opened afresh: a kept descriptor of a removed tmpfs file still reads (a sysfs
        // attribute removed with its module does not), which is not what is tested here.
        let root = Root::new(dir.path());
        let kept = KeptAbsence::default();
        let mut snap = Snapshot::default();
        let first = read(&root, Some(&kept), &mut snap);
        assert_eq!(first.zfs_arc_max(), Some(1073741824));
        assert_eq!(first.zfs_txg_timeout(), None);
        // A parameter that appears (a module upgraded in place) waits for the next probe...
        std::fs::write(params.join("zfs_txg_timeout"), "5\n").unwrap();
        // ...while the present ones are read afresh every time, changed or gone.
        std::fs::write(params.join("zfs_arc_max"), "2147483648\n").unwrap();
        std::fs::remove_file(params.join("zfs_arc_min")).unwrap();
        for n in 2..=REPROBE_EVERY {
            let t = read(&root, Some(&kept), &mut snap);
            assert_eq!(
                t.zfs_txg_timeout(),
                None,
                "snapshot {n} probed an absent name"
            );
            assert_eq!(t.zfs_arc_max(), Some(2147483648));
            assert_eq!(t.get("zfs_arc_min"), None);
        }
        let probed = read(&root, Some(&kept), &mut snap);
        assert_eq!(probed.zfs_txg_timeout(), Some(5));
        assert_eq!(probed.zfs_arc_max(), Some(2147483648));
        // A name gone between probes is absent again at once; it came back at the next probe.
        std::fs::write(params.join("zfs_arc_min"), "0\n").unwrap();
        assert_eq!(read(&root, Some(&kept), &mut snap).get("zfs_arc_min"), None);
        // Without a live reader's memory every snapshot reads every name.
        assert_eq!(read(&root, None, &mut snap).get("zfs_arc_min"), Some("0"));
        assert_eq!(snap.issues, vec![]);
    }
}
