//! What `/sys/block` says about the devices of `/proc/diskstats`: rotational, sector sizes,
//! size, and which whole disk a partition lives on.
//!
//! The partition → disk link is decided from names by [`whole_disk`], and a partition takes
//! its disk's queue attributes. Where `sys/class/block/<name>` exists (live, and in captures
//! of a live system, which keep what was probed there), its `partition` confirms or overrules
//! the name rule. Older captures have no `sys/class/block` and no partition directories
//! (`sys/block/<disk>/<part>/`): the name rule alone decides, and partitions have no size.

use crate::sources::{ParseError, Root};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::Mutex;
use zpulse_proto::snapshot::SourceIssue;

const WHAT: &str = "sysfs block attribute";

/// `/sys/block/<disk>/queue` attributes. `None` when the file is absent: not every driver
/// has them, and captures may leave them out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueAttrs {
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
}

/// One device as sysfs describes it. For a partition, `queue` is its whole disk's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockInfo {
    pub whole_disk: Option<String>,
    pub queue: QueueAttrs,
    /// Bytes, from the device's own `size` (512-byte sectors) when sysfs has it.
    pub size: Option<u64>,
    /// A partition's offset from the start of its disk in bytes, from its `start` (512-byte
    /// sectors, block/partitions/core.c `part_start_show`).
    pub start: Option<u64>,
}

/// The whole disk that partition `name` belongs to, if `name` is a partition of a known device.
///
/// The kernel names a partition `<disk><n>`, or `<disk>p<n>` when the disk's name ends in a
/// digit (`add_partition()` in block/partitions/core.c). Names alone are ambiguous (`md0` could
/// be partition 0 of a disk `md`), so the disk must be in the set the caller knows, which is
/// normally every name in `/proc/diskstats`.
pub fn whole_disk(name: &str, is_known: impl Fn(&str) -> bool) -> Option<&str> {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if stem.len() == name.len() || stem.is_empty() {
        return None;
    }
    if let Some(disk) = stem.strip_suffix('p')
        && disk.ends_with(|c: char| c.is_ascii_digit())
        && is_known(disk)
    {
        return Some(disk);
    }
    // All trailing digits are gone, so `stem` ends in a non-digit: the form without `p`.
    is_known(stem).then_some(stem)
}

/// The directory name sysfs uses for a device: the kernel turns `/` into `!`
/// (`cciss/c0d0` → `cciss!c0d0`). `None` for names that would leave the directory they are
/// joined to, since a capture's diskstats may hold anything.
pub fn sysfs_name(name: &str) -> Option<Cow<'_, str>> {
    if name.is_empty() || name == "." || name == ".." || name.contains('\0') {
        return None;
    }
    // Almost every name has no `/`: no copy for those (a snapshot asks for each disk's).
    Some(if name.contains('/') {
        Cow::Owned(name.replace('/', "!"))
    } else {
        Cow::Borrowed(name)
    })
}

/// `queue/rotational`: `1` spinning, `0` not.
pub fn parse_rotational(text: &str) -> Result<bool, ParseError> {
    match text.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        other => Err(ParseError::new(
            WHAT,
            format!("rotational is {:?}, expected 0 or 1", clip(other)),
        )),
    }
}

/// `queue/logical_block_size` and `queue/physical_block_size`, in bytes.
pub fn parse_block_size(text: &str) -> Result<u32, ParseError> {
    super::decimal::<u32>(text.trim().as_bytes()).map_err(|_| {
        ParseError::new(
            WHAT,
            format!("block size {:?} is not a number", clip(text.trim())),
        )
    })
}

/// `size`: 512-byte sectors whatever the device's block size; returns bytes.
pub fn parse_size(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    let sectors = super::decimal::<u64>(t.as_bytes())
        .map_err(|_| ParseError::new(WHAT, format!("size {:?} is not a number", clip(t))))?;
    sectors
        .checked_mul(512)
        .ok_or_else(|| ParseError::new(WHAT, format!("size of {sectors} sectors overflows bytes")))
}

/// Sysfs facts for each of `names` (in order), which are taken to be every device the caller
/// knows: a partition is tied to a disk only when that disk is among them. Unparseable
/// attribute files are returned as issues; missing ones are just `None`.
pub fn describe(root: &Root, names: &[&str]) -> (Vec<BlockInfo>, Vec<SourceIssue>) {
    let known: HashSet<&str> = names.iter().copied().collect();
    let mut issues = Vec::new();
    // Many partitions share a disk: read its queue once.
    let mut queues: HashMap<String, QueueAttrs> = HashMap::new();
    let mut infos = Vec::with_capacity(names.len());
    for &name in names {
        let whole = resolve_whole_disk(root, name, names, &known);
        let disk = whole.as_deref().unwrap_or(name);
        let queue = match queues.get(disk) {
            Some(q) => *q,
            None => {
                let q = read_queue(root, disk, &mut issues);
                queues.insert(disk.to_string(), q);
                q
            }
        };
        let size = size_path(name, whole.as_deref())
            .and_then(|rel| read_attr(root, &rel, parse_size, &mut issues));
        let start = whole
            .as_deref()
            .and_then(|w| {
                Some(format!(
                    "sys/block/{}/{}/start",
                    sysfs_name(w)?,
                    sysfs_name(name)?
                ))
            })
            .and_then(|rel| read_attr(root, &rel, parse_size, &mut issues));
        infos.push(BlockInfo {
            whole_disk: whole,
            queue,
            size,
            start,
        });
    }
    (infos, issues)
}

/// How many snapshots may reuse the sysfs facts of one full read: with the default 10 s
/// interval they are read again at least every five minutes.
pub const REREAD_EVERY: u32 = 30;

/// The sysfs facts of the last full read ([`describe`]), kept across the snapshots of one
/// live reader. Rotational, sector sizes, sizes and the partition → disk links do not change
/// while a device stays, and re-reading them was a third of a snapshot's file reads (five
/// files a device: at 5,000 disks, 25,000 opens an interval). They are read afresh when the
/// set of devices changes, when a device's I/O counters went backwards (a device re-created
/// under the same name starts from zero: a disk swapped for another), and at least every
/// [`REREAD_EVERY`] snapshots (a device resized, or swapped between two readings without
/// ever doing I/O). A capture never keeps them: it records a full read.
#[derive(Debug, Default)]
pub struct KeptFacts {
    last: Mutex<Option<Kept>>,
}

#[derive(Debug)]
struct Kept {
    names: Vec<String>,
    /// Each device's completed I/Os (reads + writes) when the facts were last used.
    progress: Vec<u64>,
    infos: Vec<BlockInfo>,
    issues: Vec<SourceIssue>,
    uses: u32,
}

impl KeptFacts {
    /// [`describe`] of `names`, or the facts of the last full read when they still hold.
    /// `progress[i]` is device `i`'s completed I/Os (reads + writes) in this reading.
    pub fn describe(
        &self,
        root: &Root,
        names: &[&str],
        progress: &[u64],
    ) -> (Vec<BlockInfo>, Vec<SourceIssue>) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = last.as_mut()
            && kept.uses < REREAD_EVERY
            && kept
                .names
                .iter()
                .map(String::as_str)
                .eq(names.iter().copied())
            && kept
                .progress
                .iter()
                .zip(progress)
                .all(|(then, now)| now >= then)
        {
            kept.uses += 1;
            kept.progress.copy_from_slice(progress);
            return (kept.infos.clone(), kept.issues.clone());
        }
        let (infos, issues) = describe(root, names);
        *last = Some(Kept {
            names: names.iter().map(|n| n.to_string()).collect(),
            progress: progress.to_vec(),
            infos: infos.clone(),
            issues: issues.clone(),
            uses: 1,
        });
        (infos, issues)
    }
}

/// The queue attributes of whole disk `disk`.
pub fn read_queue(root: &Root, disk: &str, issues: &mut Vec<SourceIssue>) -> QueueAttrs {
    let Some(dir) = sysfs_name(disk) else {
        return QueueAttrs::default();
    };
    let q = format!("sys/block/{dir}/queue");
    QueueAttrs {
        rotational: read_attr(root, &format!("{q}/rotational"), parse_rotational, issues),
        logical_block_size: read_attr(
            root,
            &format!("{q}/logical_block_size"),
            parse_block_size,
            issues,
        ),
        physical_block_size: read_attr(
            root,
            &format!("{q}/physical_block_size"),
            parse_block_size,
            issues,
        ),
    }
}

/// The name rule, overruled by the kernel where a live `sys/class/block` can say.
fn resolve_whole_disk(
    root: &Root,
    name: &str,
    names: &[&str],
    known: &HashSet<&str>,
) -> Option<String> {
    let by_name = whole_disk(name, |n| n != name && known.contains(n)).map(str::to_string);
    let Some(dir) = sysfs_name(name) else {
        return by_name;
    };
    let class = format!("sys/class/block/{dir}");
    if !root.is_dir(&class) {
        // A capture, or a device gone since diskstats was read: the name rule alone.
        return by_name;
    }
    if !root.exists(&format!("{class}/partition")) {
        // The kernel says whole disk, e.g. `md0` next to a device that happens to be `md`.
        return None;
    }
    if by_name.is_some() {
        return by_name;
    }
    // A partition whose name does not follow the rule: find the disk directory holding it.
    names
        .iter()
        .filter(|&&d| d != name)
        .find(|&&d| sysfs_name(d).is_some_and(|dd| root.is_dir(&format!("sys/block/{dd}/{dir}"))))
        .map(|d| d.to_string())
}

/// Where `size` lives: `sys/block/<disk>/size`, or `sys/block/<disk>/<part>/size` for a
/// partition (captures older than partition directories lack it: its size is then unknown).
fn size_path(name: &str, whole: Option<&str>) -> Option<String> {
    let own = sysfs_name(name)?;
    match whole {
        None => Some(format!("sys/block/{own}/size")),
        Some(w) => Some(format!("sys/block/{}/{own}/size", sysfs_name(w)?)),
    }
}

fn read_attr<T>(
    root: &Root,
    rel: &str,
    parse: fn(&str) -> Result<T, ParseError>,
    issues: &mut Vec<SourceIssue>,
) -> Option<T> {
    match root.read(rel) {
        Ok(bytes) => match parse(&String::from_utf8_lossy(&bytes)) {
            Ok(v) => Some(v),
            Err(e) => {
                issues.push(issue(rel, e.message));
                None
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            issues.push(issue(rel, format!("cannot read: {e}")));
            None
        }
    }
}

fn issue(source: &str, message: String) -> SourceIssue {
    SourceIssue {
        source: source.to_string(),
        message,
    }
}

/// Keeps messages about garbage files short.
fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};

    fn lab(n: &str) -> PathBuf {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/lab/basic"
        ))
        .join(n)
    }

    #[test]
    fn partition_rule_table() {
        let known: HashSet<&str> = [
            "sda",
            "sdc",
            "sdp",
            "nvme0n1",
            "mmcblk0",
            "mmcblk0boot0",
            "vda",
            "md0",
            "md127",
            "loop0",
            "cciss/c0d0",
            "zd16",
            "dm-0",
            "xvdq",
        ]
        .into_iter()
        .collect();
        let is_known = |n: &str| known.contains(n);
        let table: &[(&str, Option<&str>)] = &[
            ("sdc1", Some("sdc")),
            ("sda10", Some("sda")),
            ("sdp1", Some("sdp")),
            ("nvme0n1p2", Some("nvme0n1")),
            ("nvme0n1p12", Some("nvme0n1")),
            ("mmcblk0p1", Some("mmcblk0")),
            ("vda3", Some("vda")),
            ("md0p1", Some("md0")),
            ("md127p3", Some("md127")),
            ("loop0p1", Some("loop0")),
            ("cciss/c0d0p1", Some("cciss/c0d0")),
            ("zd16p1", Some("zd16")),
            // Whole disks, even those ending in digits.
            ("sda", None),
            ("sdc", None),
            ("nvme0n1", None),
            ("mmcblk0", None),
            ("mmcblk0boot0", None),
            ("md0", None),
            ("loop0", None),
            ("cciss/c0d0", None),
            ("dm-0", None),
            ("dm-1", None),
            ("sr0", None),
            ("xvdq", None),
            // The disk must be known.
            ("sdz1", None),
            ("nvme1n1p1", None),
            // A disk ending in a digit needs the `p`; one ending in a letter must not have it.
            ("nvme0n11", None),
            ("sdap1", None),
            ("md01", None),
            ("", None),
            ("1", None),
            ("p1", None),
        ];
        for &(name, want) in table {
            assert_eq!(whole_disk(name, is_known), want, "{name}");
        }
    }

    #[test]
    fn sysfs_names() {
        assert_eq!(sysfs_name("cciss/c0d0p1").as_deref(), Some("cciss!c0d0p1"));
        assert_eq!(sysfs_name("sda").as_deref(), Some("sda"));
        assert_eq!(sysfs_name(".."), None);
        assert_eq!(sysfs_name(""), None);
    }

    #[test]
    fn attribute_parsers() {
        assert_eq!(parse_rotational("1\n").ok(), Some(true));
        assert_eq!(parse_rotational("0").ok(), Some(false));
        assert!(parse_rotational("2").is_err());
        assert!(parse_rotational("").is_err());
        assert_eq!(parse_block_size("4096\n").ok(), Some(4096));
        assert!(parse_block_size("+512").is_err());
        assert!(parse_block_size("4294967296").is_err());
        assert_eq!(parse_size("1953525168\n").ok(), Some(1953525168 * 512));
        assert!(
            parse_size("36028797018963968").is_err(),
            "2^55 sectors overflow u64 bytes"
        );
        assert!(parse_size("-1").is_err());
    }

    /// The lab's sda and sdb are the "HDD" mirror (rotational 1), sdc–sdf the SSD special,
    /// log and cache vdevs (rotational 0); all have 512-byte sectors (lab/README.md).
    #[test]
    fn lab_capture_queue_attrs() {
        for capture in ["000", "001"] {
            let dir = lab(capture);
            let root = Root::new(&dir);
            for dev in [
                "fd0", "loop0", "sda", "sdb", "sdc", "sdd", "sde", "sdf", "vda",
            ] {
                let file = |attr: &str| {
                    std::fs::read_to_string(dir.join(format!("sys/block/{dev}/queue/{attr}")))
                        .expect("fixture file")
                        .trim()
                        .to_string()
                };
                let mut issues = Vec::new();
                let q = read_queue(&root, dev, &mut issues);
                assert!(issues.is_empty(), "{issues:?}");
                assert_eq!(q.rotational, Some(file("rotational") == "1"), "{dev}");
                assert_eq!(
                    q.logical_block_size.map(|v| v.to_string()),
                    Some(file("logical_block_size")),
                    "{dev}"
                );
                assert_eq!(
                    q.physical_block_size.map(|v| v.to_string()),
                    Some(file("physical_block_size")),
                    "{dev}"
                );
            }
            let mut issues = Vec::new();
            for (dev, rot) in [
                ("sda", true),
                ("sdb", true),
                ("sdc", false),
                ("sdd", false),
                ("sde", false),
                ("sdf", false),
            ] {
                let q = read_queue(&root, dev, &mut issues);
                assert_eq!(q.rotational, Some(rot), "{capture} {dev}");
                assert_eq!(q.logical_block_size, Some(512));
                assert_eq!(q.physical_block_size, Some(512));
            }
            assert!(issues.is_empty());
        }
    }

    #[test]
    fn lab_capture_partitions_inherit() {
        let root = Root::new(lab("000"));
        let names = ["sda", "sda1", "sda9", "sdc", "sdc1", "loop0", "nothere"];
        let (infos, issues) = describe(&root, &names);
        assert!(issues.is_empty(), "{issues:?}");
        let by_name: HashMap<&str, &BlockInfo> = names.iter().copied().zip(&infos).collect();
        assert_eq!(by_name["sda1"].whole_disk.as_deref(), Some("sda"));
        assert_eq!(by_name["sda9"].whole_disk.as_deref(), Some("sda"));
        assert_eq!(by_name["sdc1"].whole_disk.as_deref(), Some("sdc"));
        assert_eq!(by_name["sda"].whole_disk, None);
        assert_eq!(by_name["sda1"].queue.rotational, Some(true));
        assert_eq!(by_name["sdc1"].queue.rotational, Some(false));
        assert_eq!(by_name["sda9"].queue, by_name["sda"].queue);
        assert_eq!(by_name["nothere"], &BlockInfo::default());
        // The capture has no `size` files.
        assert!(infos.iter().all(|i| i.size.is_none()));
    }

    /// Writes below `dir` a root laid out like a live sysfs (directories instead of
    /// symlinks, which `Root` follows the same way): sizes, `!` names, and `sys/class/block`
    /// overruling the name rule. Returns the device names, as `/proc/diskstats` gives them.
    pub(crate) fn live_layout_in(dir: &Path) -> [&'static str; 6] {
        let w = |rel: &str, text: &str| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        w("sys/block/cciss!c0d0/queue/rotational", "1\n");
        w("sys/block/cciss!c0d0/queue/logical_block_size", "512\n");
        w("sys/block/cciss!c0d0/queue/physical_block_size", "4096\n");
        w("sys/block/cciss!c0d0/size", "1000\n");
        w("sys/block/cciss!c0d0/cciss!c0d0p1/size", "800\n");
        w("sys/class/block/cciss!c0d0/dev", "104:0\n");
        w("sys/class/block/cciss!c0d0p1/partition", "1\n");
        // `md` and `md0` both whole disks: the name rule alone would call md0 a partition.
        w("sys/block/md/queue/rotational", "0\n");
        w("sys/block/md0/queue/rotational", "garbage\n");
        w("sys/class/block/md/dev", "9:0\n");
        w("sys/class/block/md0/dev", "9:1\n");
        // A partition named off-rule, found through its disk's directory.
        w("sys/block/odd/queue/rotational", "1\n");
        w("sys/block/odd/weird/size", "8\n");
        w("sys/class/block/odd/dev", "1:0\n");
        w("sys/class/block/weird/partition", "1\n");
        ["cciss/c0d0", "cciss/c0d0p1", "md", "md0", "odd", "weird"]
    }

    #[test]
    fn live_layout() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let names = live_layout_in(tmp.path());
        let root = Root::new(tmp.path());
        let (infos, issues) = describe(&root, &names);

        assert_eq!(infos[0].whole_disk, None);
        assert_eq!(infos[0].size, Some(1000 * 512));
        assert_eq!(infos[0].queue.physical_block_size, Some(4096));
        assert_eq!(infos[1].whole_disk.as_deref(), Some("cciss/c0d0"));
        assert_eq!(infos[1].size, Some(800 * 512));
        assert_eq!(infos[1].queue, infos[0].queue);
        assert_eq!(
            infos[3].whole_disk, None,
            "sys/class/block/md0 has no `partition`"
        );
        assert_eq!(infos[3].queue.rotational, None);
        assert_eq!(infos[5].whole_disk.as_deref(), Some("odd"));
        assert_eq!(infos[5].queue.rotational, Some(true));
        assert_eq!(infos[5].size, Some(8 * 512));
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].source, "sys/block/md0/queue/rotational");
    }

    #[test]
    fn kept_facts_hold_until_a_device_changes_is_reset_or_they_are_old() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let names = live_layout_in(tmp.path());
        let root = Root::new(tmp.path());
        let odd = 4;
        let rotational = |facts: &(Vec<BlockInfo>, Vec<SourceIssue>)| facts.0[odd].queue.rotational;
        let swap_odd_for_an_ssd = || {
            std::fs::write(tmp.path().join("sys/block/odd/queue/rotational"), "0\n").unwrap();
        };
        let kept = KeptFacts::default();
        let mut progress = vec![10u64; names.len()];
        let first = kept.describe(&root, &names, &progress);
        assert_eq!(
            first,
            describe(&root, &names),
            "the first reading is a full read"
        );
        assert_eq!(rotational(&first), Some(true));

        // The same devices, their counters moving on: the kept facts, issues included, and
        // not what the files say now.
        swap_odd_for_an_ssd();
        progress.iter_mut().for_each(|p| *p += 5);
        let again = kept.describe(&root, &names, &progress);
        assert_eq!(again, first);

        // `odd`'s counters went back: a device re-created under its name is read afresh.
        progress[odd] = 0;
        assert_eq!(
            rotational(&kept.describe(&root, &names, &progress)),
            Some(false)
        );

        // Another set of devices: read afresh.
        std::fs::write(tmp.path().join("sys/block/odd/queue/rotational"), "1\n").unwrap();
        let fewer = &names[..names.len() - 1];
        assert_eq!(
            rotational(&kept.describe(&root, fewer, &progress[..fewer.len()])),
            Some(true)
        );

        // Unchanged devices are read again after REREAD_EVERY snapshots all the same.
        swap_odd_for_an_ssd();
        let reads: Vec<Option<bool>> = (0..REREAD_EVERY)
            .map(|_| rotational(&kept.describe(&root, fewer, &progress[..fewer.len()])))
            .collect();
        assert_eq!(
            reads[..(REREAD_EVERY - 1) as usize],
            vec![Some(true); (REREAD_EVERY - 1) as usize]
        );
        assert_eq!(reads.last(), Some(&Some(false)));
    }

    proptest! {
        #[test]
        fn whole_disk_is_a_known_proper_prefix(
            name in "[a-z/!.]{0,6}[0-9p]{0,5}",
            known in proptest::collection::vec("[a-z/]{0,6}[0-9p]{0,4}", 0..8),
        ) {
            let set: HashSet<&str> = known.iter().map(String::as_str).collect();
            if let Some(w) = whole_disk(&name, |n| set.contains(n)) {
                prop_assert!(set.contains(w));
                prop_assert!(name.len() > w.len() && name.starts_with(w));
                let rest = &name[w.len()..];
                let number = if w.ends_with(|c: char| c.is_ascii_digit()) {
                    rest.strip_prefix('p')
                } else {
                    Some(rest)
                };
                prop_assert!(
                    number.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())),
                    "{} -> {}", name, w
                );
            }
        }

        #[test]
        fn parsers_never_panic(s in any::<String>()) {
            let _ = parse_rotational(&s);
            let _ = parse_block_size(&s);
            let _ = parse_size(&s);
            let _ = whole_disk(&s, |_| true);
            let _ = sysfs_name(&s);
        }
    }
}
