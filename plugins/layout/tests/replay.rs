//! The check replayed over real captures from the OpenZFS 2.1 lab VM; expected values come
//! from each capture's `cli/` files (`zpool status`, `zdb -C`) and `sys/block`.

use zpulse_check_layout::{Config, Layout};
use zpulse_proto::Event;
use zpulse_proto::sdk::Severity;
use zpulse_tests::raw::*;

fn run(rels: &[&str]) -> Vec<Event> {
    let mut check = Layout::new(Config::default()).unwrap();
    samples(&snapshots(rels))
        .iter()
        .flat_map(|s| check.observe(s))
        .collect()
}

/// `vdevs/rz`: the dedup mirror is two files; the log on loop0 is slog-usage's to judge, the
/// spare is not in use, and the raidz2 of files is normal-class data.
#[test]
fn a_dedup_mirror_of_files_is_flagged_once_per_member() {
    let status = std::fs::read_to_string(lab("vdevs/rz/000/cli/zpool-status.rz.txt")).unwrap();
    let dedup: Vec<String> = zpool_status(&status)
        .into_iter()
        .filter(|v| v.section == "dedup")
        .flat_map(|v| {
            v.leaves
                .into_iter()
                .map(move |l| format!("rz/dedup/{}/{l}", v.name))
        })
        .collect();
    assert_eq!(dedup.len(), 2);
    let events = run(&["vdevs/rz"]);
    let mut subjects: Vec<String> = events.iter().map(|e| e.subject.clone()).collect();
    subjects.sort();
    assert_eq!(subjects, dedup, "{events:?}");
    for e in &events {
        assert_eq!(
            (e.check.as_str(), e.severity),
            ("layout.virtual-device", Severity::Warning)
        );
        assert!(
            e.summary.contains("a dedup vdev member on a file"),
            "{}",
            e.summary
        );
    }
}

/// The lab's basic pool (HDD mirror, SSD special mirror, SSD log and cache, ashift 12 on
/// 512-byte disks, whole disks) is built right.
#[test]
fn a_sound_layout_raises_nothing() {
    let events = run(&["basic"]);
    assert!(events.is_empty(), "{events:?}");
}
