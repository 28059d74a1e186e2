//! Panics in `on_sample` (or, with `in_create = true`, in `create`; with `in_report = true`,
//! only in `report`): the SDK must turn the panic into an error and the agent must disable
//! the plugin after `max_failures`, or say on the report's page that its report failed.

use zpulse_proto::report::ReportWindow;
use zpulse_proto::sdk::{self, Host, Plugin, Sample};
use zpulse_proto::serde::Deserialize;

#[derive(Default, Deserialize)]
#[serde(crate = "zpulse_proto::serde", default, deny_unknown_fields)]
pub struct Config {
    in_create: bool,
    in_report: bool,
}

pub struct Panics {
    in_report: bool,
}

impl Plugin for Panics {
    const NAME: &'static str = "panics";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Config = Config;

    fn new(config: Config, _host: &Host) -> Result<Self, sdk::Error> {
        if config.in_create {
            panic!("told to panic in create");
        }
        Ok(Panics {
            in_report: config.in_report,
        })
    }

    fn on_sample(&mut self, sample: &Sample, _host: &Host) -> Result<(), sdk::Error> {
        if self.in_report {
            return Ok(());
        }
        let disks: Vec<&str> = sample.disks.iter().map(|d| d.name.as_str()).collect();
        panic!("deliberate panic with {} disks", disks.len());
    }

    fn report(&mut self, window: &ReportWindow, _host: &Host) -> Result<(), sdk::Error> {
        if !self.in_report {
            return Ok(());
        }
        panic!(
            "deliberate panic in report over {} intervals",
            window.intervals
        );
    }
}

zpulse_proto::export_plugin!(Panics);
