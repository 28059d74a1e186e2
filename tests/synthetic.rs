//! Synthetic captures for the benchmarks: the lab capture `lab/basic` grown to many disks or
//! many vdevs, written as real captures (loaded through the agent's parsers like any other).
//!
//! Disks are added to `/proc/diskstats` and `/sys/block`, and two-way mirrors to the pool's
//! vdev tree, encoded with the agent's own nvlist encoder from the lab's real `vdev_stats` and
//! histograms (disk axis: the mirrors are made of the new disks; vdev axis: of files, so that
//! only the vdevs grow).

use crate::fixture;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use zpulse_agent::sources::nvlist::encode::{Endian, encode};
use zpulse_agent::sources::nvlist::{self, NvList, NvValue};

/// The lab capture every synthetic one starts from: HDD mirror, special mirror, log, cache.
pub const LAB: &str = "lab/basic";

/// `sd` + base-26 letters, as Linux names SCSI disks (`sdaa`, `sdab`, …), after the lab's.
pub fn disk_name(i: usize) -> String {
    let mut n = i + 26; // two letters and more: never one of the lab's sda…sdz
    let mut letters = Vec::new();
    loop {
        letters.push(b'a' + (n % 26) as u8);
        n /= 26;
        if n == 0 {
            break;
        }
        n -= 1;
    }
    letters.reverse();
    format!("sd{}", String::from_utf8(letters).unwrap())
}

/// `list` with the pairs named in `set` replaced (or appended).
pub fn with_pairs<'a>(list: &NvList<'a>, set: &[(&'a str, NvValue<'a>)]) -> NvList<'a> {
    let mut out = NvList::with_nvflag(list.nvflag());
    for p in list.pairs() {
        match set.iter().find(|(n, _)| *n == p.name) {
            Some((_, v)) => out.push(p.name.clone(), v.clone()),
            None => out.push(p.name.clone(), p.value.clone()),
        }
    }
    for (n, v) in set {
        if !list.contains(n) {
            out.push(*n, v.clone());
        }
    }
    out
}

/// How a synthetic capture grows the lab's.
#[derive(Clone, Copy)]
pub enum Axis {
    /// `n` more disks, paired into n/2 mirrors of the pool.
    Disks(usize),
    /// `n` more leaf vdevs (files), paired into n/2 mirrors; no more disks.
    Vdevs(usize),
}

/// Writes capture `step` (0 or 1) of a synthetic series into `out`: the lab capture of the
/// same step, grown along `axis`.
pub fn synthesize(lab: &Path, out: &Path, axis: Axis, step: u64) {
    copy_tree(lab, out);
    let (disks, leaves) = match axis {
        Axis::Disks(n) => (n, n),
        Axis::Vdevs(n) => (0, n),
    };
    // Diskstats (kernel 5.5+ layout: 20 fields) and the sysfs attributes the agent reads.
    let mut diskstats = std::fs::read_to_string(out.join("proc/diskstats")).unwrap();
    for i in 0..disks {
        let name = disk_name(i);
        let k = step * (1 + i as u64 % 7);
        let _ = writeln!(
            diskstats,
            "{:4} {:7} {name} {} 0 {} {} {} 0 {} {} 0 {} {} 0 0 0 0 {} {}",
            65 + i / 16,
            (i % 16) * 16,
            100 + 10 * k,
            800 + 80 * k,
            30 + 3 * k,
            200 + 20 * k,
            1600 + 160 * k,
            90 + 9 * k,
            400 + 40 * k,
            120 + 12 * k,
            5 + k,
            7 + k
        );
        let q = out.join("sys/block").join(&name).join("queue");
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(q.join("rotational"), "1\n").unwrap();
        std::fs::write(q.join("logical_block_size"), "512\n").unwrap();
        std::fs::write(q.join("physical_block_size"), "4096\n").unwrap();
    }
    std::fs::write(out.join("proc/diskstats"), diskstats).unwrap();

    // The pool: the lab's first mirror (real stats and histograms of this step) as the model.
    let stats_dir = out.join("zfs-ioctl/pool_stats");
    let file = std::fs::read_dir(&stats_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "nvlist"))
        .expect("a pool_stats reply");
    let reply = std::fs::read(&file).unwrap();
    let config = nvlist::decode(&reply).unwrap();
    let tree = config.nvlist("vdev_tree").unwrap();
    let children = tree.nvlist_array("children").unwrap();
    let model = &children[0];
    let model_leaf = &model.nvlist_array("children").unwrap()[0];
    let mut grown = children.to_vec();
    for m in 0..leaves / 2 {
        let id = (children.len() + m) as u64;
        let leaf = |j: usize| {
            let i = 2 * m + j;
            let (kind, path) = match axis {
                Axis::Disks(_) => ("disk", format!("/dev/{}", disk_name(i))),
                Axis::Vdevs(_) => ("file", format!("/var/tmp/zpulse-bench/v{i}.img")),
            };
            with_pairs(
                model_leaf,
                &[
                    ("type", NvValue::String(kind.into())),
                    ("path", NvValue::String(path.into())),
                    ("whole_disk", NvValue::Uint64(0)),
                    (
                        "guid",
                        NvValue::Uint64(0x5eed_0000_0000 + 4 * id + j as u64),
                    ),
                    ("id", NvValue::Uint64(j as u64)),
                ],
            )
        };
        grown.push(with_pairs(
            model,
            &[
                ("guid", NvValue::Uint64(0x5eed_0000_0000 + 4 * id + 3)),
                ("id", NvValue::Uint64(id)),
                ("children", NvValue::NvListArray(vec![leaf(0), leaf(1)])),
            ],
        ));
    }
    let tree = with_pairs(tree, &[("children", NvValue::NvListArray(grown))]);
    let config = with_pairs(&config, &[("vdev_tree", NvValue::NvList(tree))]);
    std::fs::write(&file, encode(&config, Endian::Little)).unwrap();
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "cli" {
            continue;
        }
        if p.is_dir() {
            copy_tree(&p, &to.join(&name));
        } else {
            std::fs::copy(&p, to.join(&name)).unwrap();
        }
    }
}

/// A two-capture synthetic series along `axis`.
pub fn synthetic_series(root: &Path, axis: Axis) -> PathBuf {
    let name = match axis {
        Axis::Disks(n) => format!("disks-{n}"),
        Axis::Vdevs(n) => format!("vdevs-{n}"),
    };
    let dir = root.join(name);
    let lab = fixture(LAB);
    for step in 0..2u64 {
        synthesize(
            &lab.join(format!("{step:03}")),
            &dir.join(format!("{step:03}")),
            axis,
            step,
        );
    }
    dir
}
