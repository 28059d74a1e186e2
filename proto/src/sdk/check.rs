//! The one shape most checks have: a value built from its config that turns each sample into
//! events. [`Check`] is that shape; every `Check` is a [`Plugin`], so the plugin plumbing
//! (emitting, logging the start) is written once, here.

use super::settings::Settings;
use super::{Error, Host, Plugin};
use crate::report::{ReportWindow, Section};
use crate::{Event, Sample, ZEvent};

/// A check as pure logic: build it from its config, feed it samples, get events. Export it
/// with [`crate::export_plugin!`] like any plugin; its unit and replay tests call
/// [`Check::observe`] directly.
pub trait Check: Sized + Send + 'static {
    /// As [`Plugin::NAME`].
    const NAME: &'static str;
    /// As [`Plugin::VERSION`].
    const VERSION: &'static str;
    /// Its `[plugins.<NAME>]` table, declared with [`crate::settings!`]: each setting's
    /// type, default, rules and doc line, once.
    type Config: Settings;
    /// As [`Plugin::READS`]: the parts of the sample this check reads (`abi::PART_*` bits);
    /// by default every part.
    const READS: u64 = crate::abi::PARTS_KNOWN;

    /// Builds the check from a config whose declared rules hold; an error refuses the
    /// plugin with that message (start it with the key it is about: `clear_pct: …`). It
    /// must be pure (no threads, no files, no host): `check-config` and a reload run it to
    /// check a table, and drop what it built.
    fn build(config: Self::Config) -> Result<Self, Error>;

    /// The events this sample causes (raised, updated, cleared findings).
    fn observe(&mut self, sample: &Sample) -> Vec<Event>;

    /// Whether the check reads kernel events ([`Check::event`]).
    const EVENTS: bool = false;

    /// The events one kernel event causes, the moment the agent reads it (a finding raised
    /// from a resilver that finished with errors, a vdev that went OFFLINE). Called only
    /// when [`Check::EVENTS`]; none by default.
    fn event(&mut self, event: &ZEvent) -> Vec<Event> {
        let _ = event;
        Vec::new()
    }

    /// `zpulse report`: the check's conclusions over a whole window (after every sample of
    /// it went through [`Check::observe`]), each a verdict with its figures and advice,
    /// independent of the alert thresholds. None by default.
    fn report(&self, window: &ReportWindow) -> Vec<Section> {
        let _ = window;
        Vec::new()
    }

    /// A line for the agent's log when the check starts, e.g. what it watches.
    fn started(&self) -> Option<String> {
        None
    }
}

impl<C: Check> Plugin for C {
    const NAME: &'static str = C::NAME;
    const VERSION: &'static str = C::VERSION;
    const READS: u64 = C::READS;
    const TAKES_EVENTS: bool = C::EVENTS;
    type Config = C::Config;

    fn new(config: C::Config, host: &Host) -> Result<Self, Error> {
        config.check_rules()?;
        let check = C::build(config)?;
        if let Some(line) = check.started() {
            host.info(&line);
        }
        Ok(check)
    }

    fn validate(config: C::Config) -> Result<(), Error> {
        config.check_rules()?;
        C::build(config).map(drop)
    }

    fn on_sample(&mut self, sample: &Sample, host: &Host) -> Result<(), Error> {
        for event in self.observe(sample) {
            host.emit(&event)?;
        }
        Ok(())
    }

    fn on_event(&mut self, event: &ZEvent, host: &Host) -> Result<(), Error> {
        for e in Check::event(self, event) {
            host.emit(&e)?;
        }
        Ok(())
    }

    fn report(&mut self, window: &ReportWindow, host: &Host) -> Result<(), Error> {
        for section in Check::report(self, window) {
            host.section(&section)?;
        }
        Ok(())
    }
}
