//! zpulse check `layout`: **what is wrong with a pool by construction** — facts of its
//! layout that no tuning fixes, each said once per pool and vdev with the reason and the fix.
//!
//! | check | subject | severity |
//! |---|---|---|
//! | `layout.ashift` | `pool/class/vdev` | warning: the vdev's ashift is below a member's physical sector |
//! | `layout.alignment` | `pool/class/vdev/leaf` | warning: a partition does not start on a physical sector |
//! | `layout.raidz-width` | `pool/class/vdev` | warning: single parity too wide, or on large HDDs |
//! | `layout.shared-disk` | `pool/class/vdev` | critical: two members of one vdev on one physical disk |
//! | `layout.mixed-media` | `pool/class/vdev` | warning: HDDs and SSDs in one vdev |
//! | `layout.virtual-device` | `pool/class/vdev/leaf` | warning: cache, special or dedup on a file, loop or memory device |
//!
//! Two layout facts live in other checks, once: a special or dedup class less redundant than
//! the data vdevs is `special-fill.redundancy`, and a log on a file or loop device or an
//! unmirrored log is `slog-usage.device` / `slog-usage.redundancy` (they judge it with the
//! log's load). `docs/checks/layout.md` explains each finding and key.

use zpulse_proto::Sample;
use zpulse_proto::report::{ReportWindow, Section};
use zpulse_proto::sdk::section::judge_afresh;
use zpulse_proto::sdk::settings::{Rule, Settings};
use zpulse_proto::sdk::{self, Check, Event, Findings, Report, Rules, Severity, Verdict};
use zpulse_proto::snapshot::{Disk, Pool, Redundancy, Vdev, VdevClass};

zpulse_proto::settings! {
    /// The `[plugins.layout]` table.
    pub struct Config {
        /// watch only these pools; empty = every pool
        pools: Vec<String> = Vec::new(), [];
        /// raidz1 wider than this (data + parity disks): warning
        raidz1_max_width: usize = 8, [Rule::AtLeast(2.0)];
        /// raidz1 of HDDs this large (decimal TB) or larger: warning
        raidz1_max_hdd_tb: f64 = 4.0, [Rule::Positive];
    }
}

/// A layout fact holds until the pool is rebuilt: raised at once, cleared when it is gone.
const FACT: Rules = Rules {
    raise_after: 1,
    min_hold: std::time::Duration::ZERO,
    material_change: 0.2,
};

pub struct Layout {
    config: Config,
    ashift: Findings,
    alignment: Findings,
    raidz_width: Findings,
    shared_disk: Findings,
    mixed_media: Findings,
    virtual_device: Findings,
}

/// Every disk by name, sorted once a sample and looked up per vdev leaf by binary search.
/// The snapshot's `disks_by_name` is a SipHash map: building it and hashing into it cost
/// more than the few lookups a pool's leaves make (callgrind of the lab's live interval).
struct DiskIndex<'a>(Vec<&'a Disk>);

impl<'a> DiskIndex<'a> {
    fn new(disks: &'a [Disk]) -> DiskIndex<'a> {
        let mut by_name: Vec<&Disk> = disks.iter().collect();
        // A stable sort: of two disks of one name the first stays first, as
        // `Snapshot::disk` finds it.
        by_name.sort_by(|a, b| a.name.cmp(&b.name));
        DiskIndex(by_name)
    }

    fn get(&self, name: &str) -> Option<&'a Disk> {
        let first = self.0.partition_point(|d| d.name.as_str() < name);
        self.0.get(first).copied().filter(|d| d.name == name)
    }
}

/// The disk a leaf lives on, and the whole disk behind a partition.
fn disks_of<'a>(disks: &DiskIndex<'a>, leaf: &Vdev) -> (Option<&'a Disk>, Option<&'a Disk>) {
    let disk = leaf.disk.as_deref().and_then(|d| disks.get(d));
    let whole = disk.map(|d| match &d.whole_disk {
        Some(w) => disks.get(w).unwrap_or(d),
        None => d,
    });
    (disk, whole)
}

/// A leaf's physical sector size in bytes: what ZFS saw at open (`vs_physical_ashift`,
/// OpenZFS 2.0+), else what the kernel's disk statistics say.
fn physical_sector(disks: &DiskIndex, leaf: &Vdev) -> Option<u64> {
    if let Some(a) = leaf.stats.as_ref().and_then(|s| s.physical_ashift) {
        return Some(1 << a.min(63));
    }
    let (disk, whole) = disks_of(disks, leaf);
    let sector = |d: Option<&Disk>| d.and_then(|d| d.physical_block_size).map(u64::from);
    sector(disk).or(sector(whole))
}

fn size_text(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} B")
    }
}

/// The leaves under `v`, depth first, appended to `out`: what `Vdev::leaves` gives, into one
/// buffer kept across the vdevs of a sample rather than two new vectors per vdev.
fn push_leaves<'a>(v: &'a Vdev, out: &mut Vec<&'a Vdev>) {
    if v.is_leaf() {
        out.push(v);
    }
    for child in &v.children {
        push_leaves(child, out);
    }
}

/// A fact's verdict about one subject, and its report, made only if the finding needs it
/// (most vdevs are quiet sample after sample, and their reports were never read).
type Judged<R> = Option<(Verdict, R)>;

impl Layout {
    pub fn new(config: Config) -> Result<Layout, String> {
        config.check_rules().map_err(|e| e.to_string())?;
        let f = |name: &str| Findings::new(format!("layout.{name}"), FACT);
        Ok(Layout {
            config,
            ashift: f("ashift"),
            alignment: f("alignment"),
            raidz_width: f("raidz-width"),
            shared_disk: f("shared-disk"),
            mixed_media: f("mixed-media"),
            virtual_device: f("virtual-device"),
        })
    }

    pub fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        let now = sample.end;
        let snap = &sample.snapshot;
        // One index a sample: every helper looks disks up by leaf.
        let disks = DiskIndex::new(&snap.disks);
        let mut events = Vec::new();
        let mut leaves = Vec::new();
        for pool in &snap.pools {
            if !(self.config.pools.is_empty() || self.config.pools.contains(&pool.name)) {
                continue;
            }
            let Some(cfg) = &pool.config else { continue };
            for top in &cfg.root.children {
                let subject = top.subject_of(&pool.name, top);
                leaves.clear();
                push_leaves(top, &mut leaves);
                if let Some((v, report)) = ashift(&disks, pool, top, &leaves, &subject) {
                    events.extend(self.ashift.observe_with(now, &subject, v, report));
                }
                if let Some((v, report)) =
                    raidz_width(&self.config, &disks, pool, top, &leaves, &subject)
                {
                    events.extend(self.raidz_width.observe_with(now, &subject, v, report));
                }
                if let Some((v, report)) = shared_disk(&disks, pool, top, &leaves, &subject) {
                    events.extend(self.shared_disk.observe_with(now, &subject, v, report));
                }
                if let Some((v, report)) = mixed_media(&disks, pool, &leaves, &subject) {
                    events.extend(self.mixed_media.observe_with(now, &subject, v, report));
                }
                for leaf in &leaves {
                    let leaf_subject = top.subject_of(&pool.name, leaf);
                    if let Some((v, report)) = alignment(&disks, pool, leaf, &leaf_subject) {
                        events.extend(self.alignment.observe_with(now, &leaf_subject, v, report));
                    }
                    if let Some((v, report)) = virtual_device(pool, top, leaf, &leaf_subject) {
                        events.extend(self.virtual_device.observe_with(
                            now,
                            &leaf_subject,
                            v,
                            report,
                        ));
                    }
                }
            }
        }
        let gone = |s: &str| Report::new(format!("{s} is no longer in the pool"));
        for f in [
            &mut self.ashift,
            &mut self.alignment,
            &mut self.raidz_width,
            &mut self.shared_disk,
            &mut self.mixed_media,
            &mut self.virtual_device,
        ] {
            events.extend(f.clear_unseen(now, gone));
        }
        events
    }
}

/// A raidz1 vdev too wide, or on HDDs too large to resilver in time.
fn raidz_width<'a>(
    config: &'a Config,
    disks: &DiskIndex,
    pool: &'a Pool,
    top: &'a Vdev,
    leaves: &[&Vdev],
    subject: &'a str,
) -> Judged<impl FnOnce() -> Report + 'a> {
    if top.vdev_type != "raidz" || top.redundancy != Some(Redundancy::Parity { parity: 1 }) {
        return None;
    }
    let width = top.children.len();
    let largest = leaves
        .iter()
        .filter_map(|l| disks_of(disks, l).1)
        .filter(|d| d.rotational == Some(true))
        .filter_map(|d| d.size)
        .max()
        .unwrap_or(0);
    let large = largest as f64 >= config.raidz1_max_hdd_tb * 1e12;
    let wide = width > config.raidz1_max_width;
    let verdict = if wide || large {
        Verdict::Holds(Severity::Warning)
    } else {
        Verdict::Clear
    };
    let report = move || {
        if !wide && !large {
            return Report::new(format!("{subject}: raidz1 of {width} is within limits"));
        }
        let mut why = Vec::new();
        if wide {
            why.push(format!(
                "{width} devices share one parity (more than {}): a resilver reads all {} \
                 others, and any second failure or unreadable sector meanwhile loses data",
                config.raidz1_max_width,
                width - 1
            ));
        }
        if large {
            why.push(format!(
                "its HDDs hold up to {:.1} TB each: a resilver takes a day or more, during \
                 which the vdev has no redundancy left",
                largest as f64 / 1e12
            ));
        }
        Report::new(format!(
            "{subject} is raidz1 of {width}: {}",
            why.join("; ")
        ))
        .with("width", width as u64)
        .with("parity", 1u64)
        .with("largest_hdd_bytes", largest)
        .advice(format!(
            "raidz2 (or mirrors) for new vdevs of this size: parity cannot be raised in \
                 place, so build a new vdev or pool and move the data (`zfs send -R \
                 {}@snap | zfs receive NEWPOOL`); meanwhile scrub often and keep backups \
                 current",
            pool.name
        ))
    };
    Some((verdict, report))
}

/// A top-level vdev whose own ashift is below a member's physical sector.
fn ashift<'a>(
    disks: &'a DiskIndex<'a>,
    pool: &'a Pool,
    top: &Vdev,
    leaves: &'a [&'a Vdev],
    subject: &'a str,
) -> Judged<impl FnOnce() -> Report + 'a> {
    let configured = top
        .ashift
        .or_else(|| top.stats.as_ref().and_then(|s| s.configured_ashift))?;
    let block = 1u64 << configured.min(63);
    // The members whose physical sector is larger than the vdev's block, with that sector.
    let larger = move || {
        leaves
            .iter()
            .filter_map(|l| Some((l.name.as_str(), physical_sector(disks, l)?)))
            .filter(move |(_, p)| *p > block)
    };
    let largest = larger().map(|(_, p)| p).max();
    let verdict = match largest {
        Some(_) => Verdict::Holds(Severity::Warning),
        None => Verdict::Clear,
    };
    let report = move || {
        let Some(physical) = largest else {
            return Report::new(format!("{subject}: ashift {configured} fits its devices"));
        };
        let names: Vec<&str> = larger().map(|(n, _)| n).collect();
        Report::new(format!(
            "{subject} has ashift {configured} ({} blocks) but {} has {} physical sectors: \
             every write smaller than a sector makes the device read, modify and rewrite it",
            size_text(block),
            names.join(", "),
            size_text(physical)
        ))
        .with("ashift", configured)
        .with("physical_sector_bytes", physical)
        .advice(format!(
            "A vdev's ashift is fixed when it is created: add new vdevs with `-o ashift={}` \
             and move the data to them, or recreate the pool with it (`zfs send -R {}@snap | \
             zfs receive`)",
            physical.trailing_zeros(),
            pool.name
        ))
    };
    Some((verdict, report))
}

/// A partition that does not start on a multiple of its disk's physical sector.
fn alignment<'a>(
    disks: &DiskIndex<'a>,
    pool: &'a Pool,
    leaf: &'a Vdev,
    subject: &'a str,
) -> Judged<impl FnOnce() -> Report + 'a> {
    let (_, whole) = disks_of(disks, leaf);
    let part = leaf.partition.as_deref().and_then(|p| disks.get(p))?;
    let offset = part.offset?;
    let physical = whole.and_then(|w| w.physical_block_size).map(u64::from)?;
    if physical == 0 {
        return None;
    }
    let aligned = offset.is_multiple_of(physical);
    let verdict = if aligned {
        Verdict::Clear
    } else {
        Verdict::Holds(Severity::Warning)
    };
    let report = move || {
        if aligned {
            return Report::new(format!("{subject}: {} is aligned", part.name));
        }
        let of = if part.name == leaf.name {
            String::new()
        } else {
            format!(", {}", leaf.name)
        };
        Report::new(format!(
            "{}{of} in {} starts at byte {offset}, {} past a {} physical sector boundary: \
             every aligned ZFS block straddles two sectors of the disk",
            part.name,
            pool.name,
            offset % physical,
            size_text(physical)
        ))
        .with("offset_bytes", offset)
        .with("physical_sector_bytes", physical)
        .advice(format!(
            "Repartition with 1 MiB alignment (sgdisk's and fdisk's default, `gpart add -a 1m` \
             on FreeBSD): `zpool replace {} {} NEW_ALIGNED_PARTITION`, one member at a time",
            pool.name, leaf.name
        ))
    };
    Some((verdict, report))
}

/// Two members of one top-level vdev on the same physical disk.
fn shared_disk<'a>(
    disks: &DiskIndex<'a>,
    pool: &'a Pool,
    top: &Vdev,
    leaves: &[&'a Vdev],
    subject: &'a str,
) -> Judged<impl FnOnce() -> Report + 'a> {
    if top.redundancy.map_or(0, |r| r.tolerated_failures()) == 0 {
        return None;
    }
    // (whole disk, member) by disk, the members of one disk in the vdev's order (a stable
    // sort): each disk's run of members is what the report names.
    let mut on_disk: Vec<(&str, &str)> = leaves
        .iter()
        .filter_map(|l| Some((disks_of(disks, l).1?.name.as_str(), l.name.as_str())))
        .collect();
    on_disk.sort_by(|a, b| a.0.cmp(b.0));
    let shared = on_disk.windows(2).any(|w| w[0].0 == w[1].0);
    let verdict = if shared {
        Verdict::Holds(Severity::Critical)
    } else {
        Verdict::Clear
    };
    let report = move || {
        if !shared {
            return Report::new(format!("{subject}: each member on its own disk"));
        }
        let runs: Vec<String> = on_disk
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|run| run.len() > 1)
            .map(|run| {
                let members: Vec<&str> = run.iter().map(|(_, l)| *l).collect();
                format!("{} are all on {}", members.join(" and "), run[0].0)
            })
            .collect();
        Report::new(format!(
            "{subject}: {}: that disk failing takes several members at once, so the \
             redundancy is not there",
            runs.join("; ")
        ))
        .advice(format!(
            "Move all but one of them to other disks, one at a time: `zpool replace {} MEMBER \
             OTHER_DISK`",
            pool.name
        ))
    };
    Some((verdict, report))
}

/// A top-level vdev mixing spinning and solid-state members.
fn mixed_media<'a>(
    disks: &'a DiskIndex<'a>,
    pool: &'a Pool,
    leaves: &'a [&'a Vdev],
    subject: &'a str,
) -> Judged<impl FnOnce() -> Report + 'a> {
    if leaves.len() < 2 {
        return None;
    }
    // The names of the members whose disk is rotational (`true`) or solid-state (`false`).
    let of_kind = move |rotational: bool| {
        leaves
            .iter()
            .filter(move |l| disks_of(disks, l).1.and_then(|d| d.rotational) == Some(rotational))
            .map(|l| l.name.as_str())
    };
    let mixed = of_kind(true).next().is_some() && of_kind(false).next().is_some();
    let verdict = if mixed {
        Verdict::Holds(Severity::Warning)
    } else {
        Verdict::Clear
    };
    let report = move || {
        if !mixed {
            return Report::new(format!("{subject}: one kind of media"));
        }
        let hdds: Vec<&str> = of_kind(true).collect();
        let ssds: Vec<&str> = of_kind(false).collect();
        Report::new(format!(
            "{subject} mixes HDDs ({}) and SSDs ({}): every write waits for the spinning \
             disks, so the SSDs buy nothing for writes",
            hdds.join(", "),
            ssds.join(", ")
        ))
        .advice(format!(
            "Give the SSDs their own role (a mirrored special vdev: `zpool add {} special \
             mirror SSD1 SSD2`) and pair HDDs with HDDs",
            pool.name
        ))
    };
    Some((verdict, report))
}

/// Cache, special or dedup on a file, loop or memory device (logs: `slog-usage.device`).
fn virtual_device<'a>(
    pool: &'a Pool,
    top: &Vdev,
    leaf: &'a Vdev,
    subject: &'a str,
) -> Judged<impl FnOnce() -> Report + 'a> {
    let class = top.class?;
    let role = match class {
        VdevClass::Cache => "an L2ARC device",
        VdevClass::Special => "a special vdev member",
        VdevClass::Dedup => "a dedup vdev member",
        _ => return None,
    };
    let backing = leaf.virtual_backing();
    let verdict = match (&backing, class) {
        (None, _) => Verdict::Clear,
        (Some(_), VdevClass::Cache) => Verdict::Holds(Severity::Info),
        (Some(_), _) => Verdict::Holds(Severity::Warning),
    };
    let report = move || {
        let Some(what) = backing else {
            return Report::new(format!("{subject} is a real device"));
        };
        let risk = if class == VdevClass::Cache {
            "it reads from the same storage that backs it and is gone after a reboot unless \
             set up before the import"
        } else {
            "the pool's metadata depends on it, yet it has no power-loss guarantee of its own \
             and may be missing at import, which makes the pool unimportable"
        };
        Report::new(format!("{subject} is {role} on {what}: {risk}"))
            .with("device", what)
            .advice(format!(
                "Use a real SSD (or partition) for it: `zpool replace {} {} /dev/disk/by-id/…`",
                pool.name, leaf.name
            ))
    };
    Some((verdict, report))
}

impl Check for Layout {
    const NAME: &'static str = "layout";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// Of the optional parts: the vdev trees and the disks (sector sizes, rotation, partition
    /// offsets, sizes).
    const READS: u64 =
        zpulse_proto::abi::PART_POOL_CONFIGS | zpulse_proto::abi::PART_SNAPSHOT_DISKS;
    type Config = Config;

    fn build(config: Config) -> Result<Self, sdk::Error> {
        Ok(Layout::new(config)?)
    }

    fn observe(&mut self, sample: &Sample) -> Vec<Event> {
        Layout::observe(self, sample)
    }

    /// `zpulse report`: the state at the window's end and every counter's growth over the
    /// whole window, judged afresh, as sections.
    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        judge_afresh::<Self>(self.config.clone(), window, |_| None)
    }
}

#[cfg(test)]
mod tests;
