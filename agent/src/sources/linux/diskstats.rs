//! `/proc/diskstats`: the pure parser, and the reader that joins it with `/sys/block` into
//! [`Snapshot::disks`].
//!
//! The field count is decided per line, because kernels and collages mix them: 14 fields
//! before 4.18, 18 with the discard counters (4.18+), 20 with the flush counters (5.5+). Any
//! other count is an error for that line alone. Values are kept as the kernel printed them;
//! the 32-bit `*_ms` counters wrap, which is for the sample to handle.

use super::sysblock;
use crate::sources::{ParseError, Root};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{Disk, DiskCounters, Diskstats};

const WHAT: &str = "diskstats";
const SOURCE: &str = "proc/diskstats";

/// Bad lines reported one by one before the rest are only counted: a file of garbage must not
/// flood the snapshot with issues.
const MAX_LINE_ISSUES: usize = 5;

/// The counters after the name, in the order the kernel prints them.
const COUNTERS: [&str; 17] = [
    "reads",
    "reads_merged",
    "sectors_read",
    "read_ms",
    "writes",
    "writes_merged",
    "sectors_written",
    "write_ms",
    "in_flight",
    "io_ms",
    "weighted_ms",
    "discards",
    "discards_merged",
    "sectors_discarded",
    "discard_ms",
    "flushes",
    "flush_ms",
];

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskstatsLine {
    /// As printed, `/` included (`cciss/c0d0`).
    pub name: String,
    pub stats: Diskstats,
}

/// Every line that parses, in file order, and an error (with its 1-based line number) for
/// each that does not. Blank lines are skipped.
pub fn parse(bytes: &[u8]) -> (Vec<DiskstatsLine>, Vec<ParseError>) {
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (index, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            continue;
        }
        match parse_line(raw) {
            Ok(line) => lines.push(line),
            Err(message) => errors.push(ParseError::new(WHAT, message).at_line(index + 1)),
        }
    }
    (lines, errors)
}

fn parse_line(line: &[u8]) -> Result<DiskstatsLine, String> {
    // At most 20 fields are valid: the first 21 are kept (in place, no allocation per line)
    // and the rest only counted, for the message.
    let mut fields: [&[u8]; 21] = [&[]; 21];
    let mut n = 0;
    for field in line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
    {
        if let Some(slot) = fields.get_mut(n) {
            *slot = field;
        }
        n += 1;
    }
    let [major, minor, name, counters @ ..] = &fields[..n.min(fields.len())] else {
        return Err(format!("{n} fields, expected 14, 18 or 20"));
    };
    if !matches!(n, 14 | 18 | 20) {
        return Err(format!("{n} fields, expected 14, 18 or 20"));
    }
    let name = std::str::from_utf8(name).map_err(|_| "device name is not UTF-8".to_string())?;
    let mut v = [0u64; 17];
    for ((slot, field), what) in v.iter_mut().zip(counters).zip(COUNTERS) {
        *slot = decimal(field, what)?;
    }
    // Columns past the line's width were not printed by this kernel: None, not 0.
    let printed = |i: usize| (i < counters.len()).then_some(v[i]);
    Ok(DiskstatsLine {
        name: name.to_string(),
        stats: Diskstats {
            major: decimal(major, "major")?,
            minor: decimal(minor, "minor")?,
            reads: v[0],
            reads_merged: v[1],
            sectors_read: v[2],
            read_ms: v[3],
            writes: v[4],
            writes_merged: v[5],
            sectors_written: v[6],
            write_ms: v[7],
            in_flight: v[8],
            io_ms: v[9],
            weighted_ms: v[10],
            discards: printed(11),
            discards_merged: printed(12),
            sectors_discarded: printed(13),
            discard_ms: printed(14),
            flushes: printed(15),
            flush_ms: printed(16),
        },
    })
}

/// [`super::decimal`] as a `T`, with the field named in the message.
fn decimal<T: TryFrom<u64>>(field: &[u8], what: &str) -> Result<T, String> {
    let shown = || String::from_utf8_lossy(&field[..field.len().min(32)]).into_owned();
    super::decimal(field).map_err(|e| match e {
        super::BadDecimal::NotDigits => format!("{what}: {:?} is not a decimal number", shown()),
        super::BadDecimal::TooLarge => format!("{what}: {} is out of range", shown()),
    })
}

/// Fills `snap.disks`, in diskstats order, with each device's sysfs facts (from `kept` when
/// they still hold). A file that cannot be read is one issue and no disks; bad lines are
/// issues and the other lines still count.
pub fn read(root: &Root, kept: Option<&sysblock::KeptFacts>, snap: &mut Snapshot) {
    let bytes = match root.read(SOURCE) {
        Ok(b) => b,
        Err(e) => {
            snap.note(SOURCE, format!("cannot read: {e}"));
            return;
        }
    };
    if bytes.is_empty() {
        snap.note(SOURCE, crate::sources::root::EMPTY);
        return;
    }
    let (mut lines, errors) = parse(&bytes);
    for e in errors.iter().take(MAX_LINE_ISSUES) {
        snap.note(SOURCE, e.to_string());
    }
    if errors.len() > MAX_LINE_ISSUES {
        snap.note(
            SOURCE,
            format!("{} more malformed lines", errors.len() - MAX_LINE_ISSUES),
        );
    }
    // The kernel never repeats a name; a capture might, and two disks under one name would
    // make the sample pair the wrong counters.
    let mut seen = std::collections::HashSet::new();
    lines.retain(|l| {
        let first = seen.insert(l.name.clone());
        if !first {
            snap.note(
                SOURCE,
                format!("device {} listed twice; first kept", l.name),
            );
        }
        first
    });

    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    let (infos, issues) = match kept {
        Some(kept) => {
            let progress: Vec<u64> = lines
                .iter()
                .map(|l| l.stats.reads.saturating_add(l.stats.writes))
                .collect();
            kept.describe(root, &names, &progress)
        }
        None => sysblock::describe(root, &names),
    };
    snap.issues.extend(issues);
    snap.disks = lines
        .into_iter()
        .zip(infos)
        .map(|(line, info)| Disk {
            name: line.name,
            whole_disk: info.whole_disk,
            rotational: info.queue.rotational,
            rpm: None,
            logical_block_size: info.queue.logical_block_size,
            physical_block_size: info.queue.physical_block_size,
            size: info.size,
            offset: info.start,
            counters: DiskCounters::Diskstats(line.stats),
            aliases: Vec::new(),
            roles: Vec::new(),
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");

    const EXTERNAL: &[&str] = &[
        "external/diskstats/gopsutil/diskstats-post5.5-20field",
        "external/diskstats/gopsutil/diskstats-pre5.5-18field",
        "external/diskstats/gopsutil/diskstats-pre4.18-14field",
        "external/diskstats/jamescun-procfs-6.12/diskstats",
        "external/diskstats/jc/diskstats",
        "external/diskstats/node_exporter/diskstats-mixed-14-18-20",
        "external/diskstats/procfs/diskstats-mixed-14-18-20",
        "external/diskstats/sysstat/root1-diskstats",
        "external/diskstats/sysstat/root2-diskstats",
        "external/diskstats/sysstat/root3-diskstats",
        "external/diskstats/sysstat/root4-diskstats",
        "external/diskstats/sysstat/root5-diskstats",
        "external/diskstats/sysstat/root6-diskstats",
        "external/diskstats/sysstat/root6b-diskstats",
        "external/diskstats/sysstat/root7-diskstats",
        "lab/basic/000/proc/diskstats",
        "lab/basic/001/proc/diskstats",
    ];

    fn fixture(rel: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{rel}")).expect("fixture file")
    }

    fn parse_file(rel: &str) -> (Vec<DiskstatsLine>, Vec<ParseError>) {
        parse(&fixture(rel))
    }

    fn find<'a>(lines: &'a [DiskstatsLine], name: &str) -> &'a Diskstats {
        &lines
            .iter()
            .find(|l| l.name == name)
            .unwrap_or_else(|| panic!("{name} not parsed"))
            .stats
    }

    /// The struct's counters in the kernel's column order, for comparing with a naive split.
    fn columns(d: &Diskstats) -> Vec<Option<u64>> {
        vec![
            Some(d.reads),
            Some(d.reads_merged),
            Some(d.sectors_read),
            Some(d.read_ms),
            Some(d.writes),
            Some(d.writes_merged),
            Some(d.sectors_written),
            Some(d.write_ms),
            Some(d.in_flight),
            Some(d.io_ms),
            Some(d.weighted_ms),
            d.discards,
            d.discards_merged,
            d.sectors_discarded,
            d.discard_ms,
            d.flushes,
            d.flush_ms,
        ]
    }

    /// Every fixture against an independent reading: `str::lines` + `split_whitespace` +
    /// `parse`, field by field; lines of another width must come back as errors with their
    /// line number, and nothing may be lost or invented.
    #[test]
    fn every_fixture_matches_a_naive_split() {
        for rel in EXTERNAL {
            let text = String::from_utf8(fixture(rel)).expect("fixtures are ASCII");
            let (lines, errors) = parse(text.as_bytes());
            let mut parsed = lines.iter();
            let mut bad = errors.iter();
            let mut nonblank = 0;
            for (i, raw) in text.lines().enumerate() {
                let f: Vec<&str> = raw.split_whitespace().collect();
                if f.is_empty() {
                    continue;
                }
                nonblank += 1;
                if ![14, 18, 20].contains(&f.len()) {
                    let e = bad
                        .next()
                        .unwrap_or_else(|| panic!("{rel}:{} not rejected", i + 1));
                    assert_eq!(e.at, Some(crate::sources::error::Location::Line(i + 1)));
                    continue;
                }
                let got = parsed
                    .next()
                    .unwrap_or_else(|| panic!("{rel}:{} missing", i + 1));
                assert_eq!(got.name, f[2], "{rel}:{}", i + 1);
                assert_eq!(
                    got.stats.major,
                    f[0].parse::<u32>().unwrap(),
                    "{rel}:{}",
                    i + 1
                );
                assert_eq!(
                    got.stats.minor,
                    f[1].parse::<u32>().unwrap(),
                    "{rel}:{}",
                    i + 1
                );
                let mut want: Vec<Option<u64>> =
                    f[3..].iter().map(|v| Some(v.parse().unwrap())).collect();
                want.resize(17, None);
                assert_eq!(columns(&got.stats), want, "{rel}:{}", i + 1);
            }
            assert!(parsed.next().is_none(), "{rel}: extra lines");
            assert!(bad.next().is_none(), "{rel}: extra errors");
            assert_eq!(lines.len() + errors.len(), nonblank, "{rel}");
        }
    }

    #[test]
    fn line_counts() {
        // (file, parsed lines, errors), counted with `wc -l` and `awk '{print NF}'`.
        let want: &[(&str, usize, usize)] = &[
            (
                "external/diskstats/gopsutil/diskstats-post5.5-20field",
                4,
                0,
            ),
            ("external/diskstats/gopsutil/diskstats-pre5.5-18field", 4, 0),
            (
                "external/diskstats/gopsutil/diskstats-pre4.18-14field",
                4,
                0,
            ),
            ("external/diskstats/jamescun-procfs-6.12/diskstats", 11, 0),
            ("external/diskstats/jc/diskstats", 15, 0),
            (
                "external/diskstats/node_exporter/diskstats-mixed-14-18-20",
                51,
                0,
            ),
            ("external/diskstats/procfs/diskstats-mixed-14-18-20", 52, 0),
            ("external/diskstats/sysstat/root1-diskstats", 21, 1),
            ("external/diskstats/sysstat/root2-diskstats", 20, 1),
            ("external/diskstats/sysstat/root3-diskstats", 20, 1),
            ("external/diskstats/sysstat/root4-diskstats", 21, 0),
            ("external/diskstats/sysstat/root5-diskstats", 22, 0),
            ("external/diskstats/sysstat/root6-diskstats", 20, 0),
            ("external/diskstats/sysstat/root6b-diskstats", 22, 0),
            ("external/diskstats/sysstat/root7-diskstats", 20, 0),
            ("lab/basic/000/proc/diskstats", 28, 0),
            ("lab/basic/001/proc/diskstats", 28, 0),
        ];
        for &(rel, n, e) in want {
            let (lines, errors) = parse_file(rel);
            assert_eq!((lines.len(), errors.len()), (n, e), "{rel}");
        }
    }

    #[test]
    fn widths_without_trailing_newline() {
        // gopsutil: the same capture at three widths, no final newline in any of them.
        let base = "external/diskstats/gopsutil/diskstats-";
        let (l20, _) = parse_file(&format!("{base}post5.5-20field"));
        let (l18, _) = parse_file(&format!("{base}pre5.5-18field"));
        let (l14, _) = parse_file(&format!("{base}pre4.18-14field"));
        assert_eq!(
            fixture(&format!("{base}post5.5-20field")).last(),
            Some(&b'0')
        );
        // Last line, `8 33 sdc1 256835879 ... 398782004 168817 110 4991981424 387582 0 0`.
        let sdc1 = find(&l20, "sdc1");
        assert_eq!((sdc1.major, sdc1.minor), (8, 33));
        assert_eq!(sdc1.reads, 256835879);
        assert_eq!(sdc1.weighted_ms, 398782004);
        assert_eq!(sdc1.sectors_discarded, Some(4991981424));
        assert_eq!(sdc1.flush_ms, Some(0));
        // Line 1, sda: flush columns `984400 3464799`.
        assert_eq!(find(&l20, "sda").flushes, Some(984400));
        assert_eq!(find(&l20, "sda").flush_ms, Some(3464799));
        for ((a, b), c) in l20.iter().zip(&l18).zip(&l14) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.name, c.name);
            assert_eq!(columns(&a.stats)[..15], columns(&b.stats)[..15]);
            assert_eq!(columns(&a.stats)[..11], columns(&c.stats)[..11]);
            assert_eq!((b.stats.flushes, b.stats.flush_ms), (None, None));
            // 14 fields: no discard or flush counters at all, not zeros.
            assert_eq!(columns(&c.stats)[11..], [None; 6]);
        }
    }

    #[test]
    fn literal_values() {
        // jamescun 6.12, line 9: `9 0 md0 100 0 4704 6 0 0 0 0 0 5 6 0 0 0 0 0 0`.
        let (l, _) = parse_file("external/diskstats/jamescun-procfs-6.12/diskstats");
        let md0 = find(&l, "md0");
        assert_eq!(
            (md0.major, md0.minor, md0.reads, md0.sectors_read),
            (9, 0, 100, 4704)
        );
        assert_eq!((md0.io_ms, md0.weighted_ms, md0.flushes), (5, 6, Some(0)));
        // Line 1, nvme1n1: sectors_discarded 2991609264, discard_ms 19417.
        let nvme = find(&l, "nvme1n1");
        assert_eq!(nvme.sectors_discarded, Some(2991609264));
        assert_eq!(nvme.discard_ms, Some(19417));

        // jc, line 9: `8 0 sda 14200 3361 892828 5058 18736 13416 715384 12604 0 24940 17663 ...`.
        let (l, _) = parse_file("external/diskstats/jc/diskstats");
        let sda = find(&l, "sda");
        assert_eq!((sda.reads, sda.writes, sda.write_ms), (14200, 18736, 12604));
        assert_eq!(
            (sda.in_flight, sda.io_ms, sda.weighted_ms),
            (0, 24940, 17663)
        );

        // node_exporter, line 50, the 20-field sdc: `... 18851 0 125173784 11130 1555 1944`.
        let (l, _) = parse_file("external/diskstats/node_exporter/diskstats-mixed-14-18-20");
        let sdc = find(&l, "sdc");
        assert_eq!(sdc.discards, Some(18851));
        assert_eq!((sdc.flushes, sdc.flush_ms), (Some(1555), Some(1944)));
        // Line 25, the 14-field sda.
        let sda = find(&l, "sda");
        assert_eq!((sda.reads, sda.reads_merged), (25354637, 34367663));
        assert_eq!((sda.discards, sda.flushes), (None, None));
        // Line 48, the 18-field sdb.
        let sdb = find(&l, "sdb");
        assert_eq!(
            (sdb.sectors_discarded, sdb.flushes),
            (Some(1925173784), None)
        );

        // sysstat root6, line 16: `104 0 cciss/c0d0 35817 15211 0 163484 ... 7365500 19000180`.
        let (l, _) = parse_file("external/diskstats/sysstat/root6-diskstats");
        let c = find(&l, "cciss/c0d0");
        assert_eq!(
            (c.major, c.minor, c.reads, c.read_ms),
            (104, 0, 35817, 163484)
        );
        assert_eq!((c.weighted_ms, c.discards), (19000180, None));
        // Line 17 writes `055711`, a leading zero the kernel would not print.
        assert_eq!(find(&l, "cciss/c0d0p1").writes, 55711);
        // Line 20, `202 4096 xvdq`: a minor above 255.
        assert_eq!(find(&l, "xvdq").minor, 4096);
        // Line 1 (18 fields): discard columns `100 100 100 100`.
        assert_eq!(find(&l, "sda").discard_ms, Some(100));

        // Lab 000, line 3: `8 16 sdb 416 0 19949 3011 688 0 412899 11436 0 4232 14463 0 0 0 0 22 16`.
        let (l, _) = parse_file("lab/basic/000/proc/diskstats");
        let sdb = find(&l, "sdb");
        assert_eq!(
            (sdb.major, sdb.minor, sdb.reads, sdb.sectors_read),
            (8, 16, 416, 19949)
        );
        assert_eq!((sdb.sectors_written, sdb.weighted_ms), (412899, 14463));
        assert_eq!((sdb.flushes, sdb.flush_ms), (Some(22), Some(16)));
        assert_eq!(l[0].name, "fd0", "file order kept");
    }

    #[test]
    fn sysstat_short_sds_line_is_an_error_for_that_line_only() {
        // root1 line 21: `65 32 sds 386 416 8554 100 727 820 8746 3902 0 762 7902 0 0 0`.
        for (rel, line) in [
            ("external/diskstats/sysstat/root1-diskstats", 21),
            ("external/diskstats/sysstat/root2-diskstats", 21),
            ("external/diskstats/sysstat/root3-diskstats", 21),
        ] {
            let (lines, errors) = parse_file(rel);
            assert_eq!(errors.len(), 1, "{rel}");
            assert_eq!(
                errors[0].at,
                Some(crate::sources::error::Location::Line(line))
            );
            assert!(errors[0].message.contains("17 fields"), "{}", errors[0]);
            assert!(lines.iter().all(|l| l.name != "sds"));
            // The lines on either side still parse.
            assert!(lines.iter().any(|l| l.name == "sdr"));
        }
        // root1's only line after it: `253 2 dm-2 ...`.
        let (lines, _) = parse_file("external/diskstats/sysstat/root1-diskstats");
        assert_eq!(lines.last().map(|l| l.name.as_str()), Some("dm-2"));
    }

    #[test]
    fn hand_written_cases() {
        let ok = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\r\n";
        let (l, e) = parse(ok.as_bytes());
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(l[0].name, "sda");
        assert_eq!((l[0].stats.reads, l[0].stats.weighted_ms), (1, 11));

        let input = "\n\
            8 0 sda 1 2 3 4 5 6 7 8 9 10\n\
            8 0 sdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n\
            8 0 sdc 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n\
            8 0 sdd 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n\
            8 0 sde 1 2 3 4 5 6 7 8 9 10 -11\n\
            8 0 sdf 1 2 3 4 5 6 7 8 9 10 +11\n\
            8 0 sdg 1 2 3 4 5 6 7 8 9 10 18446744073709551616\n\
            4294967296 0 sdh 1 2 3 4 5 6 7 8 9 10 11\n\
            8 x sdi 1 2 3 4 5 6 7 8 9 10 11\n\
            \n\
            8 0 sdj 1 2 3 4 5 6 7 8 9 10 18446744073709551615";
        let (l, e) = parse(input.as_bytes());
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].name, "sdj");
        assert_eq!(l[0].stats.weighted_ms, u64::MAX);
        let at: Vec<_> = e.iter().map(|e| e.at).collect();
        let want: Vec<_> = (2..=10)
            .map(|n| Some(crate::sources::error::Location::Line(n)))
            .collect();
        assert_eq!(at, want);
        assert!(e[6].message.contains("out of range"), "{}", e[6]);

        let (l, e) = parse(b"8 0 sd\xff 1 2 3 4 5 6 7 8 9 10 11\n8 1 ok 1 2 3 4 5 6 7 8 9 10 11");
        assert_eq!((l.len(), e.len()), (1, 1));
        assert!(e[0].message.contains("UTF-8"));
        assert_eq!(parse(b""), (vec![], vec![]));
        assert_eq!(parse(b"\n \n\t\n"), (vec![], vec![]));
    }

    #[test]
    fn read_lab_capture() {
        let mut snap = Snapshot::default();
        read(
            &Root::new(format!("{FIXTURES}/lab/basic/000")),
            None,
            &mut snap,
        );
        assert!(snap.issues.is_empty(), "{:?}", snap.issues);
        assert_eq!(snap.disks.len(), 28);
        let d = |n: &str| snap.disk(n).unwrap_or_else(|| panic!("{n}"));
        assert_eq!(d("sda").rotational, Some(true));
        assert_eq!(d("sdb1").rotational, Some(true));
        assert_eq!(d("sdb1").whole_disk.as_deref(), Some("sdb"));
        assert_eq!(d("sdb9").whole_disk.as_deref(), Some("sdb"));
        for n in ["sdc", "sdd", "sde", "sdf", "sdc1", "sdf9"] {
            assert_eq!(d(n).rotational, Some(false), "{n}");
        }
        assert_eq!(d("sdc").whole_disk, None);
        assert_eq!(d("loop0").whole_disk, None);
        assert_eq!(d("sde1").logical_block_size, Some(512));
        assert_eq!(d("sde1").physical_block_size, Some(512));
        assert_eq!(d("sde").size, None, "the capture has no size files");
        let DiskCounters::Diskstats(s) = &d("sde").counters else {
            panic!("diskstats counters")
        };
        // Line 15 of 000: `8 64 sde 420 0 20941 322 1040 0 11035 726 0 956 1442 0 0 0 0 511 393`.
        assert_eq!(
            (s.writes, s.flushes, s.flush_ms),
            (1040, Some(511), Some(393))
        );
        assert_eq!(snap.disks[0].name, "fd0");
    }

    #[test]
    fn read_missing_file_is_one_issue() {
        let mut snap = Snapshot::default();
        read(
            &Root::new(format!("{FIXTURES}/does-not-exist")),
            None,
            &mut snap,
        );
        assert!(snap.disks.is_empty());
        assert_eq!(snap.issues.len(), 1);
        assert_eq!(snap.issues[0].source, "proc/diskstats");
    }

    #[test]
    fn read_reports_bad_lines_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("proc")).expect("mkdir");
        let mut text =
            String::from("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n");
        for _ in 0..8 {
            text.push_str("garbage\n");
        }
        std::fs::write(dir.join("proc/diskstats"), text).expect("write");
        let mut snap = Snapshot::default();
        read(&Root::new(dir), None, &mut snap);
        assert_eq!(snap.disks.len(), 1);
        // Five bad lines, one summary, one duplicate.
        assert_eq!(snap.issues.len(), MAX_LINE_ISSUES + 2, "{:?}", snap.issues);
        assert!(snap.issues.iter().any(|i| i.message.contains("3 more")));
        assert!(snap.issues.iter().any(|i| i.message.contains("twice")));
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let (lines, errors) = parse(&bytes);
            let nonblank = bytes.split(|&b| b == b'\n').filter(|l| !l.trim_ascii().is_empty()).count();
            prop_assert_eq!(lines.len() + errors.len(), nonblank);
        }

        #[test]
        fn random_lines_never_panic(text in "([ 0-9a-z/+-]{0,12}( [0-9]{1,21}){0,22}\n){0,6}") {
            let _ = parse(text.as_bytes());
        }

        /// A file cut anywhere parses every complete line before the cut as the whole file did.
        #[test]
        fn truncations(file in 0..EXTERNAL.len(), cut in any::<prop::sample::Index>()) {
            let bytes = fixture(EXTERNAL[file]);
            let cut = cut.index(bytes.len() + 1);
            let (whole, _) = parse(&bytes);
            let (part, _) = parse(&bytes[..cut]);
            let complete = bytes[..cut].iter().filter(|&&b| b == b'\n').count();
            let (before, _) = parse(&bytes[..bytes[..cut].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)]);
            prop_assert!(part.len() >= before.len());
            prop_assert_eq!(&part[..before.len()], &whole[..before.len()]);
            prop_assert!(before.len() <= complete);
        }
    }
}
