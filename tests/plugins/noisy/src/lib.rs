//! Emits one good event per sample, then what it is told to: `flood` more events, and with
//! `garbage = true` every kind of bad record (not MessagePack, not a map, a wrong field, an
//! `agent` event, an oversized one). The agent must drop the bad ones, report each problem
//! once, and still deliver the good event. Asked for a report, it gives `sections` sections.

use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sdk::{self, Event, Host, Plugin, Sample, Value};
use zpulse_proto::serde::Deserialize;

#[derive(Default, Deserialize)]
#[serde(crate = "zpulse_proto::serde", default, deny_unknown_fields)]
pub struct Config {
    flood: u32,
    garbage: bool,
    sections: u32,
}

pub struct Noisy {
    config: Config,
    seen: u64,
}

impl Plugin for Noisy {
    const NAME: &'static str = "noisy";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Config = Config;

    fn new(config: Config, _host: &Host) -> Result<Self, sdk::Error> {
        Ok(Noisy { config, seen: 0 })
    }

    fn on_sample(&mut self, _sample: &Sample, host: &Host) -> Result<(), sdk::Error> {
        self.seen += 1;
        let good = Event::metrics(Self::NAME, "good", format!("good event {}", self.seen))
            .with("n", self.seen);
        host.emit(&good)?;
        if self.config.garbage {
            // Errors are expected here: the agent refuses each one.
            let _ = host.emit_raw(b"\xc1 this is not MessagePack");
            let _ = host.emit_raw(&[0x2a]);
            let mut record = good.to_msgpack();
            // Corrupt the kind: "metrics" → "metricz".
            if let Some(i) = record.windows(7).position(|w| w == b"metrics") {
                record[i + 6] = b'z';
            }
            let _ = host.emit_raw(&record);
            let mut agent = good.clone();
            agent.kind = sdk::Kind::Agent;
            agent.state = Some(sdk::State::Raised);
            let _ = host.emit_raw(&agent.to_msgpack());
            let big = good.clone().with("blob", Value::Str("x".repeat(1000)));
            let huge: Vec<u8> = (0..100).flat_map(|_| big.to_msgpack()).collect();
            let _ = host.emit_raw(&huge);
            host.warn("emitted garbage on purpose");
        }
        for i in 0..self.config.flood {
            let e = Event::metrics(Self::NAME, "flood", format!("flood {i}")).with("i", i);
            // Rate limited after a while: a well-behaved plugin would stop; this one doesn't.
            let _ = host.emit(&e);
        }
        Ok(())
    }

    fn report(&mut self, _window: &ReportWindow, host: &Host) -> Result<(), sdk::Error> {
        for i in 0..self.config.sections {
            // Refused past the agent's limit: a well-behaved plugin would stop; this one
            // doesn't.
            let _ = host.section(&Section::new(Rating::Info, format!("section {i}"), "x"));
        }
        Ok(())
    }
}

zpulse_proto::export_plugin!(Noisy);
