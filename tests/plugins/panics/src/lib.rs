//! Panics in `on_sample` (or, with `in_create = true`, in `create`): the SDK must turn the
//! panic into an error and the agent must disable the plugin after `max_failures`.

use zpulse_proto::sdk::{self, Host, Plugin, Sample};
use zpulse_proto::serde::Deserialize;

#[derive(Default, Deserialize)]
#[serde(crate = "zpulse_proto::serde", default, deny_unknown_fields)]
pub struct Config {
    in_create: bool,
}

pub struct Panics;

impl Plugin for Panics {
    const NAME: &'static str = "panics";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Config = Config;

    fn new(config: Config, _host: &Host) -> Result<Self, sdk::Error> {
        if config.in_create {
            panic!("told to panic in create");
        }
        Ok(Panics)
    }

    fn on_sample(&mut self, sample: &Sample, _host: &Host) -> Result<(), sdk::Error> {
        let disks: Vec<&str> = sample.disks.iter().map(|d| d.name.as_str()).collect();
        panic!("deliberate panic with {} disks", disks.len());
    }
}

zpulse_proto::export_plugin!(Panics);
