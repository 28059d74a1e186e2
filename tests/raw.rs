//! Readers of the real lab captures for the plugins' replay tests: the capture series through
//! the agent's own capture reader, and the raw files of those captures (kstats, module
//! parameters, the manifest, `/proc/diskstats`, `zpool status` and `zpool list -vp` text),
//! read here without the agent's parsers so that expected figures come from the captures
//! themselves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zpulse_proto::event::Value;
use zpulse_proto::{Event, Sample, SampleStream, Snapshot};

/// `tests/fixtures/lab/<rel>` of the workspace.
pub fn lab(rel: &str) -> PathBuf {
    crate::fixture("lab").join(rel)
}

/// The capture directories of `rels` (each a series or a single capture), in order.
pub fn dirs(rels: &[&str]) -> Vec<PathBuf> {
    rels.iter()
        .flat_map(|rel| zpulse_agent::capture::series(&lab(rel)).expect("a capture series"))
        .collect()
}

/// The snapshots of the captures `rels` (each a series or a single capture), in order.
pub fn snapshots(rels: &[&str]) -> Vec<Snapshot> {
    load(&dirs(rels))
}

/// The snapshots of the capture directories `dirs`, in order.
pub fn load(dirs: &[PathBuf]) -> Vec<Snapshot> {
    dirs.iter()
        .map(|dir| zpulse_agent::capture::load(dir).expect("loads"))
        .collect()
}

/// The samples between consecutive snapshots, as `zpulse replay` makes them.
pub fn samples(snaps: &[Snapshot]) -> Vec<Sample> {
    SampleStream::new(snaps.iter().cloned())
        .map(|s| s.expect("a sample"))
        .collect()
}

/// The samples of a replay of the capture directories `dirs`, in order: each capture loaded
/// as the stream reaches it, as `zpulse replay` does.
pub fn replay(dirs: &[PathBuf]) -> Vec<Sample> {
    let snapshots = dirs
        .iter()
        .map(|dir| zpulse_agent::capture::load(dir).expect("loads"));
    SampleStream::new(snapshots)
        .map(|s| s.expect("a sample"))
        .collect()
}

/// A NAMED kstat file's `name type value` rows, numbers only.
pub fn kstat(dir: &Path, rel: &str) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(dir.join(rel)).unwrap();
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.first()?.to_string(), f.get(2)?.parse().ok()?))
        })
        .collect()
}

pub fn arcstats(dir: &Path) -> BTreeMap<String, u64> {
    kstat(dir, "proc/spl/kstat/zfs/arcstats")
}

pub fn zil(dir: &Path) -> BTreeMap<String, u64> {
    kstat(dir, "proc/spl/kstat/zfs/zil")
}

/// A module parameter as the capture holds it.
pub fn tunable(dir: &Path, name: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join("sys/module/zfs/parameters").join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `captured_at` from the manifest.
/// A lab scenario's `times.txt`: one `NAME UNIX_SECONDS` line per moment it noted (the
/// guest's clock at a start, a stop, a reboot).
pub fn times(recording: &Path) -> BTreeMap<String, f64> {
    std::fs::read_to_string(recording.join("times.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let (name, at) = l.split_once(' ').expect("NAME SECONDS");
            (name.to_owned(), at.parse().expect("seconds"))
        })
        .collect()
}

pub fn captured_at(dir: &Path) -> f64 {
    let text = std::fs::read_to_string(dir.join("zpulse-capture.toml")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("captured_at = "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// One top-level vdev as `zpool status` prints it: section, name, leaves.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusVdev {
    pub section: String,
    pub name: String,
    pub leaves: Vec<String>,
}

impl StatusVdev {
    /// Failures it survives, read from its name the way an administrator would.
    pub fn tolerated_failures(&self) -> u32 {
        if self.name.starts_with("mirror-") {
            self.leaves.len() as u32 - 1
        } else if let Some(rest) = self.name.strip_prefix("raidz") {
            rest.split('-').next().unwrap().parse().unwrap_or(1)
        } else {
            0
        }
    }
}

/// The top-level vdevs of `zpool status` text (`cli/zpool-status.<pool>.txt`), by indentation.
pub fn zpool_status(text: &str) -> Vec<StatusVdev> {
    let mut out: Vec<StatusVdev> = Vec::new();
    let mut section = "normal".to_string();
    let mut in_config = false;
    for line in text.lines() {
        if line.trim_start().starts_with("NAME") {
            in_config = true;
            continue;
        }
        if !in_config || line.trim().is_empty() {
            if line.starts_with("errors:") {
                break;
            }
            continue;
        }
        let body = line.trim_start_matches('\t');
        let indent = body.len() - body.trim_start().len();
        let name = body.split_whitespace().next().unwrap().to_string();
        let heading = ["special", "dedup", "logs", "cache", "spares"];
        // A class heading has no state column after it.
        if body.split_whitespace().count() == 1 && heading.contains(&name.as_str()) {
            section = match name.as_str() {
                "logs" => "log".into(),
                "spares" => "spare".into(),
                other => other.into(),
            };
            continue;
        }
        match indent {
            0 => {} // the pool
            2 => out.push(StatusVdev {
                section: section.clone(),
                name,
                leaves: Vec::new(),
            }),
            _ => out.last_mut().unwrap().leaves.push(name),
        }
    }
    for v in &mut out {
        if v.leaves.is_empty() {
            v.leaves.push(v.name.clone());
        }
    }
    out
}

/// One row of `zpool status`'s config table with counters: name, state, READ, WRITE, CKSUM
/// (`zpool status -p` prints them exactly). Spares, which have none, are left out.
pub fn zpool_status_rows(text: &str) -> Vec<(String, String, [u64; 3])> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("NAME"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| w.get(i)?.parse::<u64>().ok();
            Some((
                w[0].to_string(),
                w.get(1)?.to_string(),
                [n(2)?, n(3)?, n(4)?],
            ))
        })
        .collect()
}

/// The `scan:` line of `zpool status` and its continuation lines, tabs and label dropped.
pub fn zpool_status_scan(text: &str) -> Vec<String> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("scan:"));
    let Some(first) = lines.next() else {
        return Vec::new();
    };
    let mut out = vec![
        first
            .trim_start()
            .trim_start_matches("scan:")
            .trim()
            .to_string(),
    ];
    out.extend(
        lines
            .take_while(|l| l.starts_with('\t'))
            .map(|l| l.trim().to_string()),
    );
    out
}

/// `zpool list -vp` rows with numbers: name → (alloc, free).
pub fn zpool_list(text: &str) -> BTreeMap<String, (u64, u64)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f[0].to_string(), (f[2].parse().ok()?, f[3].parse().ok()?)))
        })
        .collect()
}

/// Slope of the least-squares line, computed the textbook way (independent of the check's).
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let sx: f64 = points.iter().map(|p| p.0 - points[0].0).sum();
    let sy: f64 = points.iter().map(|p| p.1).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - points[0].0).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - points[0].0) * p.1).sum();
    (n * sxy - sx * sy) / (n * sxx - sx * sx)
}

/// One `/proc/diskstats` line's numbers by field index (0 = major), for disk `name`.
pub fn diskstats(dir: &Path, name: &str) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("proc/diskstats")).unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(name))
        .unwrap();
    line.split_whitespace()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, f)| f.parse().unwrap())
        .collect()
}

/// A number of an event's data; panics, naming the key, where it is missing or not a number.
pub fn num(e: &Event, key: &str) -> f64 {
    e.data
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {:?}", e.data))
}

/// Whether `a` is within `rel` (a fraction) of `b`.
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}
