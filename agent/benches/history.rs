//! What the history costs: bytes per snapshot on disk, and the time of one append next to
//! the sample it records.
//!
//! `cargo bench -p zpulse-agent --bench history` prints, for every lab capture
//! (`tests/fixtures/lab/**`) and for synthetic captures grown from `lab/basic`
//! (`zpulse_tests::synthetic`: 100 and 1,000 disks in mirrors, 1,000 file vdevs), the bytes of
//! one history record (named MessagePack, deflated) and what a day at the default 10 s
//! interval takes; then, on `lab/basic` and the 100-disk capture, the CPU time of encoding a
//! record, the wall time of an append (encode, write, `fdatasync`) and the CPU time of the
//! sample it records (snapshot + `Sample::between`). `cargo test` runs it with a few
//! iterations: a smoke run, not a measurement.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zpulse_agent::{capture, history};
use zpulse_proto::{Sample, Snapshot};
use zpulse_tests::fixture;
use zpulse_tests::synthetic::{Axis, synthetic_series};

/// Snapshots a day at the default interval.
const PER_DAY: f64 = 86_400.0 / 10.0;

fn cpu_now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn captures_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.join("zpulse-capture.toml").is_file() {
            out.push(p);
        } else if p.is_dir() {
            captures_under(&p, out);
        }
    }
}

/// Bytes of the record of `s`, through the real writer (one record in a fresh history).
fn record_bytes(s: &Snapshot, work: &Path) -> u64 {
    let dir = work.join("one");
    let _ = std::fs::remove_dir_all(&dir);
    let config = history::Config {
        dir: Some(dir),
        ..history::Config::default()
    };
    let mut w = history::Writer::open(&config).unwrap();
    w.append(s).unwrap();
    w.disk_bytes()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--quick");
    let n = if quick { 3 } else { 200 };
    let work = tempfile::tempdir().unwrap();
    println!(
        "history bench{}",
        if quick {
            " (quick smoke run, not a measurement)"
        } else {
            ""
        }
    );

    let mut dirs = Vec::new();
    captures_under(&fixture("lab"), &mut dirs);
    let mut sizes: Vec<(u64, PathBuf)> = dirs
        .iter()
        .filter_map(|d| {
            Some((
                record_bytes(&capture::load(d).ok()?, work.path()),
                d.clone(),
            ))
        })
        .collect();
    sizes.sort();
    let median = sizes[sizes.len() / 2].0;
    let (min, max) = (&sizes[0], &sizes[sizes.len() - 1]);
    let day = |b: u64| b as f64 * PER_DAY / (1 << 20) as f64;
    println!(
        "lab captures ({}): bytes per snapshot min {} median {median} max {} ({}); a day at 10 s: \
         {:.0} MiB (median) to {:.0} MiB (max)",
        sizes.len(),
        min.0,
        max.0,
        max.1.strip_prefix(fixture("lab")).unwrap().display(),
        day(median),
        day(max.0)
    );

    let mut synthetic = Vec::new();
    for axis in [Axis::Disks(100), Axis::Disks(1000), Axis::Vdevs(1000)] {
        let label = match axis {
            Axis::Disks(n) => format!("{n} disks"),
            Axis::Vdevs(n) => format!("{n} vdevs"),
        };
        let series = synthetic_series(work.path(), axis);
        let s = capture::load(&series.join("001")).unwrap();
        let json = serde_json::to_vec(&s).unwrap().len();
        let b = record_bytes(&s, work.path());
        println!(
            "synthetic {label}: {b} bytes per snapshot (JSON {json}); a day at 10 s: {:.0} MiB",
            day(b)
        );
        synthetic.push((label, series));
    }

    // Cost of an append next to the sample it records.
    let cases = [
        ("lab/basic".to_string(), fixture("lab/basic")),
        synthetic.swap_remove(0),
    ];
    for (label, series) in cases {
        let d0 = series.join("000");
        let d1 = series.join("001");
        let prev = capture::load(&d0).unwrap();
        let cpu = cpu_now();
        let mut cur = prev.clone();
        for _ in 0..n {
            cur = capture::load(&d1).unwrap();
            std::hint::black_box(Sample::between(&prev, &cur).unwrap());
        }
        let sample_cpu = (cpu_now() - cpu) / n;

        let config = history::Config {
            dir: Some(
                work.path()
                    .join(format!("cost-{}", label.replace('/', "-"))),
            ),
            ..history::Config::default()
        };
        let mut w = history::Writer::open(&config).unwrap();
        let cpu = cpu_now();
        let wall = Instant::now();
        for i in 0..n {
            let s = Snapshot {
                taken_at: cur.taken_at + 10.0 * f64::from(i),
                ..cur.clone()
            };
            w.append(&s).unwrap();
        }
        let (append_cpu, append_wall) = ((cpu_now() - cpu) / n, wall.elapsed() / n);
        // Less the clones of the loop above, which the agent does not make.
        let cpu = cpu_now();
        for _ in 0..n {
            std::hint::black_box(cur.clone());
        }
        let clone_cpu = (cpu_now() - cpu) / n;
        let append_cpu = append_cpu.saturating_sub(clone_cpu);
        println!(
            "{label}: sample (snapshot + between) {:.0} µs CPU; append {:.0} µs CPU ({:.2}× the \
             sample), {:.0} µs wall with fdatasync",
            sample_cpu.as_secs_f64() * 1e6,
            append_cpu.as_secs_f64() * 1e6,
            append_cpu.as_secs_f64() / sample_cpu.as_secs_f64(),
            append_wall.as_secs_f64() * 1e6,
        );
    }
}
