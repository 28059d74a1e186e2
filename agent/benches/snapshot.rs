//! What a snapshot costs next to what reading its raw files costs.
//!
//! `cargo bench -p zpulse-agent --bench snapshot` prints, for the lab capture and for this
//! host, the time to read every source file byte-for-byte (the floor no agent can beat) and
//! the time to read and parse them into a `Snapshot`, and the ratio. Under `cargo test` the
//! bench runs one iteration of each as a smoke test.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zpulse_agent::sources::{self, Root, System};

/// Every regular file below `dir` (what a capture holds is what a snapshot reads).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.file_name().is_some_and(|n| n != "zpulse-capture.toml")
            && !p.starts_with(dir.join("cli"))
        {
            out.push(p);
        }
    }
}

fn time<F: FnMut()>(iterations: u32, mut f: F) -> Duration {
    f(); // warm the page cache and the allocator
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    start.elapsed() / iterations
}

fn report(label: &str, raw: Duration, parsed: Duration) {
    println!(
        "{label:<28} raw read {:>9.1} µs   snapshot {:>9.1} µs   ratio {:>5.2}",
        raw.as_secs_f64() * 1e6,
        parsed.as_secs_f64() * 1e6,
        parsed.as_secs_f64() / raw.as_secs_f64()
    );
}

fn main() {
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let n = if benchmarking { 500 } else { 1 };

    let lab = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab/basic/000");
    let mut lab_files = Vec::new();
    files(&lab, &mut lab_files);
    let raw = time(n, || {
        for f in &lab_files {
            std::hint::black_box(std::fs::read(f).ok());
        }
    });
    let system = System::Linux(Root::new(&lab));
    let parsed = time(n, || {
        std::hint::black_box(sources::snapshot(&system, Default::default()));
    });
    report(
        &format!("lab capture ({} files)", lab_files.len()),
        raw,
        parsed,
    );

    // This host: the files a Linux snapshot reads when ZFS is absent.
    let live = System::live();
    let host_files = [
        "/proc/diskstats",
        "/proc/stat",
        "/proc/meminfo",
        "/proc/net/dev",
    ];
    let raw = time(n, || {
        for f in host_files {
            std::hint::black_box(std::fs::read(f).ok());
        }
        for dev in std::fs::read_dir("/sys/block")
            .into_iter()
            .flatten()
            .flatten()
        {
            for attr in [
                "rotational",
                "physical_block_size",
                "logical_block_size",
                "size",
            ] {
                let p = dev.path().join("queue").join(attr);
                std::hint::black_box(std::fs::read(p).ok());
            }
        }
    });
    let parsed = time(n, || {
        std::hint::black_box(sources::snapshot(&live, Default::default()));
    });
    report("this host (live)", raw, parsed);
}
