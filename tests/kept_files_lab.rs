//! The live agent keeps the kernel files it reads open and reads them again from their start
//! each interval (`agent/src/base/files.rs`, `KeptFiles`). On the real OpenZFS 2.1 kernel
//! (`tests/lab/scenarios/kept-files.sh`, `fixtures/lab/kept-files/`) the agent sampled every
//! second with a Prometheus textfile while 32 MiB were written to the dataset `kept`; the
//! dataset's objset kstat, read by `cat` right after the first textfile was copied and right
//! before the second, is the ground truth: a stale descriptor would have frozen the agent's
//! counters at their first reading.

use std::collections::BTreeMap;
use zpulse_tests::fixture;

const DATASET: &str = "kept";

/// The `objset-*` kstat of dataset `DATASET` in a `cat` of each (`== PATH` before each file):
/// its rows, name to value.
fn objset_rows(text: &str) -> BTreeMap<String, String> {
    for block in text.split("== ").filter(|b| !b.trim().is_empty()) {
        // Line 1: the path; line 2: the kstat header; line 3: `name type data`; then rows.
        let rows: BTreeMap<String, String> = block
            .lines()
            .skip(3)
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (name, _type, value) = (f.next()?, f.next()?, f.next()?);
                Some((name.to_string(), value.to_string()))
            })
            .collect();
        if rows.get("dataset_name").map(String::as_str) == Some(DATASET) {
            return rows;
        }
    }
    panic!("no objset kstat of {DATASET} in:\n{text}");
}

fn kstat(name: &str, row: &str) -> u64 {
    let text = std::fs::read_to_string(fixture("lab/kept-files").join(name)).unwrap();
    objset_rows(&text)[row].parse().unwrap()
}

/// The value of `family` for the dataset in a textfile the agent wrote.
fn exported(name: &str, family: &str) -> u64 {
    let text = std::fs::read_to_string(fixture("lab/kept-files").join(name)).unwrap();
    let label = format!("dataset=\"{DATASET}\"");
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{family}{{")) && l.contains(&label))
        .unwrap_or_else(|| panic!("{name}: no {family} for {DATASET}"));
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    value as u64
}

#[test]
fn the_live_agent_reads_its_kept_kstat_files_afresh_on_the_real_kernel() {
    // The scenario wrote 32 MiB (dd bs=1M count=32) between the two kstat readings.
    let written = kstat("001.kstat", "nwritten") - kstat("000.kstat", "nwritten");
    assert!(written >= 32 << 20, "the kernel counted {written} bytes");
    for (family, row) in [
        ("zpulse_dataset_written_bytes_total", "nwritten"),
        ("zpulse_dataset_writes_total", "writes"),
    ] {
        let (before, after) = (exported("000.prom", family), exported("001.prom", family));
        // The first textfile was copied before the first `cat`, the second a few samples
        // after the second `cat`: each bounds the agent's reading on its side.
        assert!(
            before <= kstat("000.kstat", row),
            "{family}: exported {before} before the kernel's {}",
            kstat("000.kstat", row)
        );
        assert!(
            after >= kstat("001.kstat", row),
            "{family}: exported {after}, the kernel had {} by then: a stale read",
            kstat("001.kstat", row)
        );
    }
    // And the readings came through kept descriptors: the agent held the dataset's kstat
    // file and the ARC's open at the end (`ls -l /proc/PID/fd`).
    let fds = std::fs::read_to_string(fixture("lab/kept-files/fd.txt")).unwrap();
    for target in [
        "-> /proc/spl/kstat/zfs/kept/objset-",
        "-> /proc/spl/kstat/zfs/arcstats",
    ] {
        assert!(fds.contains(target), "no descriptor {target}…:\n{fds}");
    }
}
