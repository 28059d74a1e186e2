//! Each rule on synthetic trees and disks, shaped as the agent builds them from
//! `ZFS_IOC_POOL_STATS` and sysfs.

use super::*;
use zpulse_proto::sdk::State;
use zpulse_proto::snapshot::Snapshot;
use zpulse_proto::snapshot::VdevStats;

fn leaf(name: &str, disk: &str) -> Vdev {
    Vdev {
        name: name.into(),
        vdev_type: "disk".into(),
        class: Some(VdevClass::Normal),
        state: Some("ONLINE".into()),
        disk: Some(disk.into()),
        stats: Some(VdevStats::default()),
        ..Vdev::default()
    }
}

/// A leaf on partition `name` of `disk`, as the agent's join describes it.
fn part_leaf(name: &str, disk: &str) -> Vdev {
    Vdev {
        partition: Some(name.into()),
        ..leaf(name, disk)
    }
}

fn top(name: &str, kind: &str, redundancy: Redundancy, ashift: u64, children: Vec<Vdev>) -> Vdev {
    Vdev {
        name: name.into(),
        vdev_type: kind.into(),
        class: Some(VdevClass::Normal),
        state: Some("ONLINE".into()),
        redundancy: Some(redundancy),
        ashift: Some(ashift),
        children,
        ..Vdev::default()
    }
}

fn disk(name: &str, rotational: bool, physical: u32) -> Disk {
    Disk {
        name: name.into(),
        rotational: Some(rotational),
        physical_block_size: Some(physical),
        logical_block_size: Some(512),
        ..Disk::default()
    }
}

fn part(name: &str, of: &str, offset: u64) -> Disk {
    Disk {
        name: name.into(),
        whole_disk: Some(of.into()),
        offset: Some(offset),
        ..Disk::default()
    }
}

/// Pool `tank` with one top-level vdev, `mirror-0` of `leaves` at `ashift`, over `disks`.
fn one_mirror(ashift: u64, leaves: Vec<Vdev>, disks: Vec<Disk>) -> Sample {
    sample(
        vec![top("mirror-0", "mirror", MIRROR, ashift, leaves)],
        disks,
    )
}

fn sample(tops: Vec<Vdev>, disks: Vec<Disk>) -> Sample {
    Sample {
        end: 1_796_000_000.0,
        interval: 10.0,
        snapshot: Snapshot {
            pools: vec![Pool {
                name: "tank".into(),
                config: Some(zpulse_proto::snapshot::PoolConfig {
                    health: "ONLINE".into(),
                    root: Vdev {
                        name: "tank".into(),
                        vdev_type: "root".into(),
                        children: tops,
                        ..Vdev::default()
                    },
                    ..Default::default()
                }),
                ..Pool::default()
            }],
            disks,
            ..Snapshot::default()
        }
        .into(),
        ..Sample::default()
    }
}

fn events(s: &Sample) -> Vec<Event> {
    Layout::new(Config::default()).unwrap().observe(s)
}

fn one<'a>(ev: &'a [Event], check: &str) -> &'a Event {
    let found: Vec<&Event> = ev.iter().filter(|e| e.check == check).collect();
    assert_eq!(found.len(), 1, "{check}: {ev:?}");
    found[0]
}

const MIRROR: Redundancy = Redundancy::Mirror { width: 2 };

#[test]
fn ashift_below_the_physical_sector_and_a_misaligned_partition() {
    // ashift 9 (512 B) on a 512e disk with 4 KiB physical sectors, partition 2 starting one
    // 512-byte sector past a 4 KiB boundary (sector 10487809).
    let s = sample(
        vec![top("sda2", "disk", Redundancy::None, 9, vec![])]
            .into_iter()
            .map(|mut t| {
                t.disk = Some("sda".into());
                t.partition = Some("sda2".into());
                t
            })
            .collect(),
        vec![
            disk("sda", true, 4096),
            part("sda2", "sda", 10_487_809 * 512),
        ],
    );
    let ev = events(&s);
    let a = one(&ev, "layout.ashift");
    assert_eq!(a.subject, "tank/normal/sda2");
    assert_eq!(a.severity, Severity::Warning);
    assert!(
        a.summary
            .contains("ashift 9 (512 B blocks) but sda2 has 4 KiB physical sectors"),
        "{}",
        a.summary
    );
    assert!(a.advice.as_deref().unwrap().contains("-o ashift=12"));
    let al = one(&ev, "layout.alignment");
    assert!(
        al.summary
            .contains("starts at byte 5369758208, 512 past a 4 KiB"),
        "{}",
        al.summary
    );
    assert_eq!(al.state, Some(State::Raised));
}

#[test]
fn vs_physical_ashift_wins_over_the_disk_statistics() {
    let mut l = leaf("sdc", "sdc");
    l.stats.as_mut().unwrap().physical_ashift = Some(12);
    let s = one_mirror(
        9,
        vec![l, leaf("sdd", "sdd")],
        vec![disk("sdc", false, 512), disk("sdd", false, 512)],
    );
    assert!(
        one(&events(&s), "layout.ashift")
            .summary
            .contains("sdc has 4 KiB")
    );
}

#[test]
fn matching_ashift_and_aligned_partitions_raise_nothing() {
    let s = one_mirror(
        12,
        vec![part_leaf("sda1", "sda"), part_leaf("sdb1", "sdb")],
        vec![
            disk("sda", true, 4096),
            disk("sdb", true, 4096),
            part("sda1", "sda", 1 << 20),
            part("sdb1", "sdb", 1 << 20),
        ],
    );
    assert!(events(&s).is_empty(), "{:?}", events(&s));
}

#[test]
fn two_members_on_one_disk_are_critical() {
    let s = one_mirror(
        12,
        vec![part_leaf("sdb2", "sdb"), part_leaf("sdb3", "sdb")],
        vec![
            disk("sdb", true, 512),
            part("sdb2", "sdb", 1 << 20),
            part("sdb3", "sdb", 300 << 20),
        ],
    );
    let ev = events(&s);
    let e = one(&ev, "layout.shared-disk");
    assert_eq!(e.severity, Severity::Critical);
    assert!(
        e.summary.contains("sdb2 and sdb3 are all on sdb"),
        "{}",
        e.summary
    );
}

#[test]
fn hdd_and_ssd_in_one_mirror() {
    let s = one_mirror(
        12,
        vec![part_leaf("sdb4", "sdb"), leaf("sdf", "sdf")],
        vec![
            disk("sdb", true, 512),
            part("sdb4", "sdb", 1 << 20),
            disk("sdf", false, 512),
        ],
    );
    let ev = events(&s);
    let e = one(&ev, "layout.mixed-media");
    assert!(
        e.summary.contains("mixes HDDs (sdb4) and SSDs (sdf)"),
        "{}",
        e.summary
    );
}

#[test]
fn raidz1_wider_than_eight_or_on_large_hdds() {
    let files: Vec<Vdev> = (0..10)
        .map(|i| Vdev {
            vdev_type: "file".into(),
            disk: None,
            ..leaf(&format!("/var/tmp/w/f{i}"), "")
        })
        .collect();
    let wide = sample(
        vec![top(
            "raidz1-0",
            "raidz",
            Redundancy::Parity { parity: 1 },
            12,
            files,
        )],
        vec![],
    );
    let ev = events(&wide);
    let e = one(&ev, "layout.raidz-width");
    assert!(
        e.summary
            .contains("raidz1 of 10: 10 devices share one parity (more than 8)"),
        "{}",
        e.summary
    );
    let big = |name: &str| Disk {
        size: Some(8_000_000_000_000),
        ..disk(name, true, 4096)
    };
    let hdds = sample(
        vec![top(
            "raidz1-0",
            "raidz",
            Redundancy::Parity { parity: 1 },
            12,
            vec![leaf("sda", "sda"), leaf("sdb", "sdb"), leaf("sdc", "sdc")],
        )],
        vec![big("sda"), big("sdb"), big("sdc")],
    );
    let ev = events(&hdds);
    let e = one(&ev, "layout.raidz-width");
    assert!(e.summary.contains("up to 8.0 TB each"), "{}", e.summary);
    // raidz2 of the same disks is fine.
    let rz2 = sample(
        vec![top(
            "raidz2-0",
            "raidz",
            Redundancy::Parity { parity: 2 },
            12,
            vec![leaf("sda", "sda"), leaf("sdb", "sdb"), leaf("sdc", "sdc")],
        )],
        vec![big("sda"), big("sdb"), big("sdc")],
    );
    assert!(events(&rz2).is_empty());
}

#[test]
fn special_and_cache_on_virtual_devices() {
    let mut special = top("loop1", "disk", Redundancy::None, 12, vec![]);
    special.class = Some(VdevClass::Special);
    special.disk = Some("loop1".into());
    special.path = Some("/dev/loop1".into());
    let mut cache = leaf("/var/tmp/c", "");
    cache.vdev_type = "file".into();
    cache.disk = None;
    cache.class = Some(VdevClass::Cache);
    let s = sample(vec![special, cache], vec![]);
    let ev = events(&s);
    let v: Vec<&Event> = ev
        .iter()
        .filter(|e| e.check == "layout.virtual-device")
        .collect();
    assert_eq!(v.len(), 2, "{ev:?}");
    assert_eq!(
        (v[0].subject.as_str(), v[0].severity),
        ("tank/special/loop1", Severity::Warning)
    );
    assert!(
        v[0].summary.contains("a loop device (/dev/loop1)"),
        "{}",
        v[0].summary
    );
    assert_eq!(
        (v[1].subject.as_str(), v[1].severity),
        ("tank/cache//var/tmp/c", Severity::Info)
    );
}

#[test]
fn bad_configs_are_refused() {
    assert!(
        Layout::new(Config {
            raidz1_max_width: 1,
            ..Config::default()
        })
        .is_err()
    );
    assert!(
        Layout::new(Config {
            raidz1_max_hdd_tb: f64::NAN,
            ..Config::default()
        })
        .is_err()
    );
}

#[test]
fn the_disk_index_finds_each_name_and_the_first_of_a_name_listed_twice() {
    let sized = |name: &str, size: u64| Disk {
        size: Some(size),
        ..disk(name, true, 4096)
    };
    // Out of name order, `sdb` twice, as a capture can list them.
    let listed = vec![
        sized("sdc", 3),
        sized("sdb", 21),
        sized("sda", 1),
        sized("sdb", 22),
    ];
    let index = DiskIndex::new(&listed);
    for (name, size) in [("sda", 1), ("sdb", 21), ("sdc", 3)] {
        assert_eq!(index.get(name).and_then(|d| d.size), Some(size), "{name}");
    }
    assert!(index.get("sdd").is_none());
    assert!(index.get("sd").is_none());
}
