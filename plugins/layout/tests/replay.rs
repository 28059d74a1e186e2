//! The check replayed over real captures from the OpenZFS 2.1 lab VM; expected values come
//! from each capture's `cli/` files (`zpool status`, `zdb -C`) and `sys/block`.

use zpulse_check_layout::{Config, Layout};
use zpulse_proto::Event;
use zpulse_proto::sdk::Severity;
use zpulse_tests::raw::*;

/// The check over every capture of `rels`. It reads only the later snapshot of a sample, so
/// each capture is given as one (a series of one capture is then one sample too).
fn run(rels: &[&str]) -> Vec<Event> {
    let mut check = Layout::new(Config::default()).unwrap();
    snapshots(rels)
        .into_iter()
        .map(|snapshot| zpulse_proto::Sample {
            end: snapshot.taken_at,
            snapshot: snapshot.into(),
            ..Default::default()
        })
        .flat_map(|s| check.observe(&s))
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

fn read(rel: &str) -> String {
    std::fs::read_to_string(lab(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn number(rel: &str) -> u64 {
    read(rel).trim().parse().unwrap()
}

/// `health/layout` (tests/lab/scenarios/health.sh, 4 KiB-sector "AFT" HDDs): `ash` is ashift 9
/// on sda2, which starts one 512-byte sector past a 4 KiB boundary; `same` mirrors two
/// partitions of sdb; `mix` mirrors an HDD partition and an SSD; `wide` is raidz1 of ten files.
#[test]
fn each_layout_mistake_of_the_lab_is_said_once_with_its_figures() {
    let cap = "health/layout/000";
    // What zpool status itself says of ash.
    let ash = read(&format!("{cap}/cli/zpool-status.ash.txt"));
    assert!(
        ash.contains(
            "sda2      ONLINE       0     0     0  block size: 512B configured, 4096B native"
        ),
        "{ash}"
    );
    let physical = number(&format!("{cap}/sys/block/sda/queue/physical_block_size"));
    let start = number(&format!("{cap}/sys/block/sda/sda2/start")) * 512;
    assert_eq!(physical, 4096);
    assert_ne!(start % physical, 0);

    let events = run(&["health/layout"]);
    let one = |check: &str, subject: &str| -> &Event {
        let found: Vec<&Event> = events
            .iter()
            .filter(|e| e.check == check && e.subject == subject)
            .collect();
        assert_eq!(found.len(), 1, "{check} {subject}: {events:#?}");
        found[0]
    };
    let a = one("layout.ashift", "ash/normal/sda2");
    assert_eq!(num(a, "ashift"), 9.0);
    assert_eq!(num(a, "physical_sector_bytes"), physical as f64);
    let al = one("layout.alignment", "ash/normal/sda2");
    assert_eq!(num(al, "offset_bytes"), start as f64);
    assert!(
        al.summary
            .contains(&format!("{} past a 4 KiB", start % physical)),
        "{}",
        al.summary
    );

    // same: both members are partitions of sdb (their sysfs directories sit under sdb).
    let same = zpool_status(&read(&format!("{cap}/cli/zpool-status.same.txt")));
    assert_eq!(same[0].leaves, ["sdb2", "sdb3"]);
    for l in &same[0].leaves {
        assert!(lab(&format!("{cap}/sys/block/sdb/{l}/start")).exists());
    }
    let s = one("layout.shared-disk", "same/normal/mirror-0");
    assert_eq!(s.severity, Severity::Critical);
    assert!(
        s.summary.contains("sdb2 and sdb3 are all on sdb"),
        "{}",
        s.summary
    );

    // mix: sdb is rotational, sdf is not (queue/rotational).
    assert_eq!(number(&format!("{cap}/sys/block/sdb/queue/rotational")), 1);
    assert_eq!(number(&format!("{cap}/sys/block/sdf/queue/rotational")), 0);
    let m = one("layout.mixed-media", "mix/normal/mirror-0");
    assert!(
        m.summary.contains("HDDs (sdb4) and SSDs (sdf)"),
        "{}",
        m.summary
    );

    // wide: raidz1 of ten.
    let wide = zpool_status(&read(&format!("{cap}/cli/zpool-status.wide.txt")));
    assert_eq!(
        (wide[0].name.as_str(), wide[0].leaves.len()),
        ("raidz1-0", 10)
    );
    let w = one("layout.raidz-width", "wide/normal/raidz1-0");
    assert_eq!(num(w, "width"), 10.0);

    // Nothing else: each fact once, and no finding for what is sound.
    assert_eq!(events.len(), 5, "{events:#?}");
}
