//! `zpulse capture`.

use crate::capture::{self, capture_into};
use crate::sources::zevent::{self, Batch, Cursor, Reader};
use crate::sources::zfs_ioctl::device::ZfsDevice;
use crate::sources::{Root, System};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};
use zpulse_proto::event::EventTime;

pub fn run(
    dir: &Path,
    count: u32,
    interval: f64,
    root: Option<&Path>,
    zevent_cursor: Option<&Path>,
) -> Result<(), String> {
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
    // The live kernel's events go with each capture: those posted since the one before.
    let mut events = match root {
        None => Some(LiveEvents::open(zevent_cursor)),
        Some(_) => None,
    };
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
        let mut stats = capture_into(&system, &identity, &dest).map_err(|e| e.to_string())?;
        if let Some(events) = &mut events {
            match events.take() {
                Ok(batch) => {
                    capture::write_zevents(&dest, &batch, &mut stats).map_err(|e| e.to_string())?
                }
                Err(why) => stats.unreadable.push(format!("kernel events: {why}")),
            }
        }
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

/// The live event queue as `zpulse capture` reads it: every event still queued the first
/// time (or those after the kept cursor), then those posted since.
struct LiveEvents {
    reader: Result<Reader<ZfsDevice>, String>,
    cursor: Option<(std::path::PathBuf, String)>,
}

impl LiveEvents {
    fn open(cursor: Option<&Path>) -> LiveEvents {
        let (platform, abi) = zevent::live_platform();
        let started = EventTime::from_system_time(SystemTime::now());
        let boot = zevent::boot_id();
        let reader = zevent::open_live(platform, abi, started)
            .map_err(|e| e.to_string())
            .and_then(|mut r| {
                if let Some(path) = cursor {
                    let kept = Cursor::load(path)?;
                    r.resume(kept.as_ref(), &boot).map_err(|e| e.to_string())?;
                }
                Ok(r)
            });
        LiveEvents {
            reader,
            cursor: cursor.map(|p| (p.to_path_buf(), boot)),
        }
    }

    /// What was posted since the last call, and the cursor kept past it.
    fn take(&mut self) -> Result<Batch, String> {
        let reader = self.reader.as_mut().map_err(|e| e.clone())?;
        let all = reader.drain().map_err(|e| e.to_string())?;
        if let Some((path, boot)) = &self.cursor
            && let Some(c) = reader.cursor(boot)
        {
            c.store(path)?;
        }
        Ok(all)
    }
}
