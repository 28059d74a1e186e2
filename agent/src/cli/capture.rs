//! `zpulse capture`.

use crate::capture::{self, capture_into};
use crate::sources::{Root, System};
use std::path::Path;
use std::time::{Duration, Instant};

pub fn run(dir: &Path, count: u32, interval: f64, root: Option<&Path>) -> Result<(), String> {
    if count == 0 {
        return Err("--count must be at least 1".into());
    }
    if !(interval > 0.0 && interval <= 86_400.0) {
        return Err(format!(
            "--interval {interval}: give seconds between 0 and 86400"
        ));
    }
    let system = match root {
        // A capture keeps the system it came from; any other directory is a Linux root.
        Some(r) => match capture::Manifest::read(r) {
            Ok(m) => System::capture(r, m.os),
            Err(_) => System::linux(Root::new(r)),
        },
        None => System::live(),
    };
    // Re-capturing a capture keeps its identity; a live system reports its own.
    let identity = match root.map(capture::Manifest::read) {
        Some(Ok(m)) => zpulse_proto::snapshot::HostIdentity {
            hostname: m.hostname,
            os: m.os,
            kernel: m.kernel,
            zfs_version: m.zfs_version,
        },
        _ => system.identity(),
    };
    // A series goes into a new or empty directory too: numbering from 000 again would
    // overwrite the captures already there.
    capture::refuse_existing(dir).map_err(|e| e.to_string())?;
    let start = Instant::now();
    for i in 0..count {
        // Fixed schedule: capture i is due at start + i × interval, whatever the last one cost.
        let due = start + Duration::from_secs_f64(interval * f64::from(i));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let dest = if count == 1 {
            dir.to_path_buf()
        } else {
            dir.join(format!("{i:03}"))
        };
        let stats = capture_into(&system, &identity, &dest).map_err(|e| e.to_string())?;
        eprintln!(
            "zpulse: captured {} files ({} bytes) into {}",
            stats.files,
            stats.bytes,
            dest.display()
        );
        for u in &stats.unreadable {
            eprintln!("zpulse: not captured (unreadable): {u}");
        }
    }
    Ok(())
}
