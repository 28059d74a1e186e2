//! `zpulse events`: the kernel's event queue as `zpool events [-v]` prints it, from the live
//! kernel (with `--follow`, as events come) or from the captures of a series.

use super::emit;
use crate::report::{Format, json, zevent_text};
use crate::sources::zevent::{self, BATCH_MAX, Batch};
use std::path::Path;
use std::time::SystemTime;
use zpulse_proto::event::EventTime;

pub fn run(root: Option<&Path>, follow: bool, verbose: bool, format: Format) -> Result<(), String> {
    match root {
        Some(dir) => {
            if follow {
                return Err("--follow reads the live kernel; a capture holds no more".into());
            }
            for capture in crate::capture::series(dir).map_err(|e| e.to_string())? {
                print(&crate::capture::load_zevents(&capture), verbose, format)?;
            }
            Ok(())
        }
        None => {
            let (platform, abi) = zevent::live_platform();
            let started = EventTime::from_system_time(SystemTime::now());
            let mut reader =
                zevent::open_live(platform, abi, started).map_err(|e| e.to_string())?;
            loop {
                let batch = reader.read(follow, BATCH_MAX).map_err(|e| e.to_string())?;
                if batch.is_empty() && !follow {
                    return Ok(());
                }
                print(&batch, verbose, format)?;
            }
        }
    }
}

fn print(batch: &Batch, verbose: bool, format: Format) -> Result<(), String> {
    let mut out = String::new();
    for z in &batch.events {
        match format {
            Format::Text => out.push_str(&zevent_text(z, verbose)),
            Format::Json => {
                out.push_str(&json(z, false));
                out.push('\n');
            }
        }
    }
    emit(&out)?;
    if batch.dropped > 0 || batch.missing > 0 {
        eprintln!(
            "zpulse: the kernel dropped events: it counts {} for this reader, and {} event \
             ids never came",
            batch.dropped, batch.missing
        );
    }
    for why in &batch.undecodable {
        eprintln!("zpulse: {why}");
    }
    Ok(())
}
