//! Sleeps in `on_sample` for the samples listed in `hang_samples` (1-based), `hang_ms` each;
//! emits one metrics event per sample it finishes, so the test sees when it runs again. With
//! `entered_file` it creates that file when it starts to hang (so a test knows the call is in
//! hand), and with `release_file` it hangs until that file exists instead of for `hang_ms`.
//! Asked for a report, it gives one section, then sleeps `report_hang_ms` and gives another.

use std::time::Duration;
use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sdk::{self, Event, Host, Plugin, Sample};
use zpulse_proto::serde::Deserialize;

#[derive(Default, Deserialize)]
#[serde(crate = "zpulse_proto::serde", default, deny_unknown_fields)]
pub struct Config {
    hang_ms: u64,
    hang_samples: Vec<u64>,
    report_hang_ms: u64,
    entered_file: Option<std::path::PathBuf>,
    release_file: Option<std::path::PathBuf>,
}

pub struct Hangs {
    config: Config,
    seen: u64,
}

impl Plugin for Hangs {
    const NAME: &'static str = "hangs";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Config = Config;

    fn new(config: Config, _host: &Host) -> Result<Self, sdk::Error> {
        Ok(Hangs { config, seen: 0 })
    }

    fn on_sample(&mut self, sample: &Sample, host: &Host) -> Result<(), sdk::Error> {
        self.seen += 1;
        if self.config.hang_samples.contains(&self.seen) {
            if let Some(entered) = &self.config.entered_file {
                std::fs::write(entered, b"")?;
            }
            match &self.config.release_file {
                Some(release) => {
                    while !release.exists() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                None => std::thread::sleep(Duration::from_millis(self.config.hang_ms)),
            }
        }
        let event = Event::metrics(Self::NAME, "hangs", format!("sample {}", self.seen))
            .with("n", self.seen)
            .with("end", sample.end);
        host.emit(&event)?;
        Ok(())
    }

    fn report(&mut self, _window: &ReportWindow, host: &Host) -> Result<(), sdk::Error> {
        host.section(&Section::new(
            Rating::Info,
            "before the hang",
            "given at once",
        ))?;
        std::thread::sleep(Duration::from_millis(self.config.report_hang_ms));
        host.section(&Section::new(Rating::Info, "after the hang", "given late"))?;
        Ok(())
    }
}

zpulse_proto::export_plugin!(Hangs);
