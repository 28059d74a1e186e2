//! The safe side of the plugin ABI: write a check as a Rust type, export it with one macro.
//!
//! ```no_run
//! use serde::Deserialize;
//! use zpulse_proto::sdk::{self, Findings, Host, Plugin, Rules, Threshold};
//! use zpulse_proto::Sample;
//!
//! #[derive(Deserialize)]
//! #[serde(default, deny_unknown_fields)]
//! struct Config { busy_pct: f64, clear_pct: f64 }
//! impl Default for Config {
//!     fn default() -> Self { Config { busy_pct: 90.0, clear_pct: 70.0 } }
//! }
//!
//! struct Busy { threshold: Threshold, findings: Findings }
//!
//! impl Plugin for Busy {
//!     const NAME: &'static str = "busy";
//!     const VERSION: &'static str = env!("CARGO_PKG_VERSION");
//!     type Config = Config;
//!
//!     fn new(c: Config, _host: &Host) -> Result<Self, sdk::Error> {
//!         Ok(Busy {
//!             threshold: Threshold::above(c.busy_pct, c.clear_pct)?,
//!             findings: Findings::new(Self::NAME, Rules::default()),
//!         })
//!     }
//!
//!     fn on_sample(&mut self, s: &Sample, host: &Host) -> Result<(), sdk::Error> {
//!         for d in &s.disks {
//!             let verdict = self.threshold.verdict(d.util);
//!             let report = sdk::Report::new(format!("{} busy {:.0}%", d.name, d.util))
//!                 .with("util_pct", d.util);
//!             if let Some(event) = self.findings.observe(s.end, &d.name, verdict, report) {
//!                 host.emit(&event)?;
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//!
//! zpulse_proto::export_plugin!(Busy);
//! ```
//!
//! What the SDK does for the plugin: it decodes the config table into `Config` (errors name the
//! key) and every sample into [`Sample`]; it catches panics at every export and reports them
//! to the agent as errors; it encodes events and checks them before they leave. [`Findings`]
//! gives every check stateful findings (raise once, update on material change, clear with
//! hysteresis and a minimum hold time), and [`testing`] runs a plugin through its exported C
//! functions in a unit test.

mod check;
pub mod config;
#[doc(hidden)]
pub mod export;
mod findings;
#[cfg(any(feature = "replay", test))]
mod recorded;
mod sample_builder;
pub mod section;
pub mod settings;
pub mod stats;
pub mod testing;
pub mod text;

pub use crate::Sample;
pub use crate::event::{Data, Event, Kind, Severity, State, Value};
pub use crate::report::{Figure, Rating, ReportWindow, Section};
pub use crate::zevent::{ZEvent, ZEventKind};
pub use check::Check;
pub use findings::{Findings, Report, Rules, Threshold, Verdict};

use crate::abi::{self, HostApi};
use serde::de::DeserializeOwned;
use std::fmt;

/// Any error a plugin returns: `?` works on every error type and `"text".into()` makes one.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A check. One value is created per agent from the plugin's config table; the agent then
/// calls [`Plugin::on_sample`] once per interval, always from one thread at a time.
pub trait Plugin: Sized + Send + 'static {
    /// The plugin's name: its config table is `[plugins.<NAME>]`; the default `check` of its
    /// events. `[A-Za-z0-9_-]`, 1–64 characters.
    const NAME: &'static str;
    /// Usually `env!("CARGO_PKG_VERSION")`.
    const VERSION: &'static str;
    /// The config table, deserialized with serde. Use `#[serde(default, deny_unknown_fields)]`
    /// so that a missing table means the defaults and a misspelt key is an error.
    type Config: DeserializeOwned;
    /// The parts of the sample this check reads (`abi::PART_*` bits, or-ed): the agent may
    /// leave the others out of the samples it sends it, which saves decoding them on every
    /// interval. Everything no `PART_*` bit names is always sent. The default is every part,
    /// so a plugin that does not say gets the whole sample.
    const READS: u64 = abi::PARTS_KNOWN;

    /// Builds the check. An error here refuses the plugin, with the message shown to the
    /// administrator.
    fn new(config: Self::Config, host: &Host) -> Result<Self, Error>;

    /// Whether [`Plugin::new`] would accept this config, without building anything (no
    /// threads, no state, no host): what the plugin's `check_config` runs for `zpulse
    /// check-config`, a reload's check and the load itself. An error that starts with the
    /// key it is about (`clear_pct: …`) is shown at that key's line of the config file. A
    /// [`Check`] validates its declared settings and runs its `build` (pure) here.
    fn validate(config: Self::Config) -> Result<(), Error> {
        let _ = config;
        Ok(())
    }

    /// Looks at one sample and emits what it finds through `host`. An error counts as a
    /// failure; several in a row disable the plugin.
    fn on_sample(&mut self, sample: &Sample, host: &Host) -> Result<(), Error>;

    /// Whether the plugin takes kernel events ([`Plugin::on_event`], ABI 1.6). A plugin that
    /// says no is never called with one (and the agent encodes none for it).
    const TAKES_EVENTS: bool = false;

    /// One kernel event, as soon as the agent reads it from the kernel's queue (between
    /// samples), in the kernel's order. Events emitted here carry the kernel event's time.
    /// Called only when [`Plugin::TAKES_EVENTS`]; an error counts as a failure.
    fn on_event(&mut self, event: &ZEvent, host: &Host) -> Result<(), Error> {
        let _ = (event, host);
        Ok(())
    }

    /// `zpulse report`: after every sample of the window went through `on_sample`, the
    /// plugin's conclusions over the whole window, given with [`Host::section`]. The default
    /// adds nothing.
    fn report(&mut self, window: &ReportWindow, host: &Host) -> Result<(), Error> {
        let _ = (window, host);
        Ok(())
    }
}

/// For [`export_plugin!`] and [`export_plugins!`]: evaluated in the crate that builds the
/// shared object, whose panic strategy is the plugin's. A panic must unwind to the SDK's
/// `catch_unwind`; under `panic = "abort"` it would take the whole agent down.
#[doc(hidden)]
#[macro_export]
macro_rules! __unwind_required {
    () => {
        #[cfg(panic = "abort")]
        compile_error!(
            "zpulse plugins must be built with panic = \"unwind\" (the default): with \
             panic = \"abort\" the plugin's first panic would abort the agent. Remove \
             `panic = \"abort\"` from the [profile] that builds this plugin."
        );
    };
}

/// Exports a [`Plugin`] as the shared object's `zpulse_plugin_entry`. Use once per `cdylib`
/// (or [`export_plugins!`] for several).
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        $crate::__unwind_required!();
        /// The plugin's entry point for the zpulse agent (ABI v1).
        #[unsafe(no_mangle)]
        pub extern "C" fn zpulse_plugin_entry() -> *const $crate::abi::PluginDescriptor {
            static DESCRIPTOR: $crate::abi::PluginDescriptor =
                $crate::sdk::export::descriptor::<$plugin>(concat!(
                    env!("CARGO_PKG_NAME"),
                    " ",
                    env!("CARGO_PKG_VERSION")
                ));
            &DESCRIPTOR
        }
    };
}

/// Exports several [`Plugin`]s from one `cdylib`, as the shared object's
/// `zpulse_plugin_bundle` (ABI 1.5): each is loaded as a plugin of its own (its name, its
/// `[plugins.<name>]` table, its state; the agent runs them on one thread, one call after
/// another), and the file holds one copy of the code they share
/// — the SDK, serde, the standard library — instead of one per plugin. The checks zpulse
/// ships are one bundle (`plugins/checks`). Use once per `cdylib`, instead of
/// [`export_plugin!`]; at most [`abi::BUNDLE_MAX`] plugins, with different names.
#[macro_export]
macro_rules! export_plugins {
    ($($plugin:ty),+ $(,)?) => {
        $crate::__unwind_required!();
        /// The bundle's entry point for the zpulse agent (ABI 1.5): the descriptor of
        /// plugin `index`, null past the last.
        #[unsafe(no_mangle)]
        pub extern "C" fn zpulse_plugin_bundle(
            index: usize,
        ) -> *const $crate::abi::PluginDescriptor {
            static DESCRIPTORS: &[$crate::abi::PluginDescriptor] = &[$(
                $crate::sdk::export::descriptor::<$plugin>(concat!(
                    env!("CARGO_PKG_NAME"),
                    " ",
                    env!("CARGO_PKG_VERSION")
                )),
            )+];
            const _: () = assert!(
                DESCRIPTORS.len() <= $crate::abi::BUNDLE_MAX,
                "a bundle holds at most abi::BUNDLE_MAX plugins"
            );
            match DESCRIPTORS.get(index) {
                Some(descriptor) => descriptor,
                None => ::std::ptr::null(),
            }
        }
    };
}

/// Log levels of [`Host::log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl Level {
    fn code(self) -> i32 {
        match self {
            Level::Error => abi::LOG_ERROR,
            Level::Warn => abi::LOG_WARN,
            Level::Info => abi::LOG_INFO,
            Level::Debug => abi::LOG_DEBUG,
        }
    }
}

/// Why the agent did not take an event.
#[derive(Debug, Clone, PartialEq)]
pub enum EmitError {
    /// The SDK's own check failed before sending (the reason names the field).
    Invalid(String),
    /// The agent found the record invalid.
    Rejected,
    /// Over the agent's size limit.
    TooLarge,
    /// Over the agent's per-sample event limit.
    RateLimited,
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::Invalid(why) => write!(f, "invalid event: {why}"),
            EmitError::Rejected => f.write_str("the agent rejected the event as invalid"),
            EmitError::TooLarge => f.write_str("the event is over the agent's size limit"),
            EmitError::RateLimited => f.write_str("over the agent's per-sample event limit"),
        }
    }
}

impl std::error::Error for EmitError {}

/// The agent, as a plugin sees it: logging and emitting events.
pub struct Host {
    api: HostApi,
}

impl Host {
    /// Copies the host API; `None` for a null pointer or an agent of another ABI major.
    ///
    /// # Safety
    /// `api` must be null or point to a valid [`HostApi`] whose callbacks and `ctx` stay valid
    /// as long as this `Host` is used (the agent guarantees this for the process's lifetime).
    pub unsafe fn from_raw(api: *const HostApi) -> Option<Host> {
        if api.is_null() {
            return None;
        }
        // SAFETY: non-null and valid per the caller's contract; the first fields are the same
        // in every ABI version, so reading the version before the rest is sound.
        let (major, size) = unsafe { ((*api).abi_major, (*api).struct_size) };
        if major != abi::ABI_MAJOR || (size as usize) < abi::HOST_API_SIZE_1_1 {
            return None;
        }
        // An older host's struct ends before the fields it does not have: copy what it has
        // over a zeroed one, in which those fields are `None`.
        let n = (size as usize).min(std::mem::size_of::<HostApi>());
        let mut copy = std::mem::MaybeUninit::<HostApi>::zeroed();
        // SAFETY: `api` has `size` readable bytes (its own struct_size, at least the 1.1 size
        // checked above, which covers every non-optional field); `n` of them are copied over
        // a zeroed struct, where the remaining fields are `Option`s of function pointers, for
        // which all-zero is `None`.
        let api = unsafe {
            std::ptr::copy_nonoverlapping(api.cast::<u8>(), copy.as_mut_ptr().cast::<u8>(), n);
            copy.assume_init()
        };
        Some(Host { api })
    }

    /// One log line, attributed to this plugin by the agent.
    pub fn log(&self, level: Level, message: &str) {
        // SAFETY: the callback and ctx come from a valid HostApi (see `from_raw`); the message
        // is valid for the call, and the host copies it.
        unsafe { (self.api.log)(self.api.ctx, level.code(), message.as_ptr(), message.len()) }
    }

    pub fn error(&self, message: &str) {
        self.log(Level::Error, message)
    }
    pub fn warn(&self, message: &str) {
        self.log(Level::Warn, message)
    }
    pub fn info(&self, message: &str) {
        self.log(Level::Info, message)
    }
    pub fn debug(&self, message: &str) {
        self.log(Level::Debug, message)
    }

    /// Checks and sends one event. The agent fills in `host` and the time.
    pub fn emit(&self, event: &Event) -> Result<(), EmitError> {
        event.validate().map_err(EmitError::Invalid)?;
        self.emit_raw(&event.to_msgpack())
    }

    /// Sends bytes as they are, for plugins that encode records themselves. The agent still
    /// validates them.
    pub fn emit_raw(&self, record: &[u8]) -> Result<(), EmitError> {
        // SAFETY: as in `log`: valid callback and ctx; the bytes are valid for the call and
        // the host copies them.
        let status = unsafe { (self.api.emit)(self.api.ctx, record.as_ptr(), record.len()) };
        match status {
            abi::EMIT_OK => Ok(()),
            abi::EMIT_TOO_LARGE => Err(EmitError::TooLarge),
            abi::EMIT_RATE_LIMITED => Err(EmitError::RateLimited),
            _ => Err(EmitError::Rejected),
        }
    }

    /// Gives the agent one conclusion of `report`. An agent older than ABI 1.2 has no
    /// reports and never calls `report`; should one, the section is refused.
    pub fn section(&self, section: &Section) -> Result<(), EmitError> {
        section.validate().map_err(EmitError::Invalid)?;
        let Some(send) = self.api.section else {
            return Err(EmitError::Rejected);
        };
        let bytes = section.to_msgpack();
        // SAFETY: as in `log`: valid callback and ctx; the bytes are valid for the call and
        // the host copies them.
        let status = unsafe { send(self.api.ctx, bytes.as_ptr(), bytes.len()) };
        match status {
            abi::EMIT_OK => Ok(()),
            abi::EMIT_TOO_LARGE => Err(EmitError::TooLarge),
            abi::EMIT_RATE_LIMITED => Err(EmitError::RateLimited),
            _ => Err(EmitError::Rejected),
        }
    }

    /// Tells the agent why the current call fails.
    pub(crate) fn set_error(&self, message: &str) {
        // SAFETY: as in `log`.
        unsafe { (self.api.set_error)(self.api.ctx, message.as_ptr(), message.len()) }
    }
}

/// Decodes a report window as the agent sends it to `report`.
pub fn decode_window(bytes: &[u8]) -> Result<ReportWindow, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("could not decode the report window: {e}"))
}

/// Encodes a report window as the agent sends it, leaving out the parts of its `whole`
/// sample the plugin does not read.
pub fn encode_window_for(window: &ReportWindow, unread: u64) -> Vec<u8> {
    let whole;
    let window = if unread & abi::PARTS_KNOWN == 0 {
        window
    } else {
        whole = ReportWindow {
            whole: window.whole.without(unread),
            ..window.clone()
        };
        &whole
    };
    rmp_serde::to_vec_named(window).unwrap_or_default()
}

/// Decodes a sample as the agent sends it (MessagePack, named fields).
pub fn decode_sample(bytes: &[u8]) -> Result<Sample, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("could not decode the sample: {e}"))
}

/// Decodes a sample into `place`, reusing the strings, lists and structs of the sample held
/// there (serde's in-place decoding): a plugin receives a sample of the same shape every
/// interval, so most of its allocations, and freeing the previous sample, are saved. The
/// result is the same as [`decode_sample`]'s whatever `place` held (every field is written:
/// absent ones take their defaults); on an error `place` is emptied.
pub fn decode_sample_into<'a>(
    bytes: &[u8],
    place: &'a mut Option<Sample>,
) -> Result<&'a Sample, String> {
    let decoded = match place {
        Some(previous) => {
            let mut decoder = rmp_serde::Deserializer::from_read_ref(bytes);
            serde::Deserialize::deserialize_in_place(&mut decoder, previous)
                .map_err(|e| format!("could not decode the sample: {e}"))
        }
        None => decode_sample(bytes).map(|sample| *place = Some(sample)),
    };
    match decoded {
        Ok(()) => place.as_ref().ok_or_else(|| "no sample".to_string()),
        Err(e) => {
            *place = None;
            Err(e)
        }
    }
}

/// Encodes a sample as the agent sends it to a plugin that does not read the `unread` parts
/// (its descriptor's [`abi::PluginDescriptor::unread`]).
/// One call encodes one variant; the agent keeps a [`crate::sample::PartEncoder`] for all the
/// variants of one sample.
pub fn encode_sample_for(sample: &Sample, unread: u64) -> Vec<u8> {
    crate::sample::PartEncoder::new(sample).encode(unread)
}

/// Encodes a sample as the agent sends it.
pub fn encode_sample(sample: &Sample) -> Vec<u8> {
    // Named fields, so that fields added later are skipped by older plugins and missing ones
    // take their defaults in newer plugins.
    rmp_serde::to_vec_named(sample).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{ArcRates, CpuRates, DiskRates, PoolRates};
    use crate::snapshot::{Devstat, Disk, DiskCounters, Diskstats, KstatValue, Memory};

    /// A sample exercising every shape: options present and absent, tagged enums, maps.
    fn rich_sample() -> Sample {
        let mut s = Sample {
            start: 100.0,
            end: 110.5,
            interval: 10.5,
            arc: Some(ArcRates {
                deltas: [("hits".to_string(), 5u64)].into(),
                reads_per_s: 1.5,
                hit_ratio: Some(0.0),
                l2_hit_ratio: None,
                ..ArcRates::default()
            }),
            pools: vec![PoolRates {
                name: "tank".into(),
                ..PoolRates::default()
            }],
            disks: vec![DiskRates {
                name: "sda".into(),
                rotational: Some(true),
                d_s: Some(0.0),
                r_await: None,
                util: 42.0,
                ..DiskRates::default()
            }],
            cpu: Some(CpuRates {
                busy_pct: 3.0,
                iowait_pct: None,
            }),
            resets: vec!["disk sdz".into()],
            ..Sample::default()
        };
        s.snapshot.disks = vec![
            Disk {
                name: "sda".into(),
                rotational: Some(true),
                counters: DiskCounters::Diskstats(Diskstats {
                    reads: 7,
                    discards: Some(0),
                    flushes: None,
                    ..Diskstats::default()
                }),
                ..Disk::default()
            },
            Disk {
                name: "ada0".into(),
                counters: DiskCounters::Devstat(Devstat {
                    duration: [0.5, 1.0, 0.0, 0.25],
                    ..Devstat::default()
                }),
                ..Disk::default()
            },
        ];
        s.snapshot.memory = Some(Memory {
            total: 8,
            available: None,
            cached: Some(0),
            ..Memory::default()
        });
        let mut arc = crate::snapshot::ArcStats::default();
        arc.0.insert("size", KstatValue::Unsigned(u64::MAX));
        arc.0
            .insert("memory_available_bytes", KstatValue::Signed(-5));
        arc.0.insert("name", KstatValue::Text("x".into()));
        s.snapshot.arc = Some(arc);
        s.snapshot
            .tunables
            .0
            .insert("zfs_arc_max".into(), "0".into());
        s
    }

    #[test]
    fn a_sample_round_trips_with_absent_and_none_options_kept_apart() {
        let s = rich_sample();
        let bytes = encode_sample(&s);
        let back = decode_sample(&bytes).unwrap();
        assert_eq!(back, s);
        // Absent stays absent, and Some(0.0) stays a value (never confused with None).
        assert_eq!(back.disks[0].r_await, None);
        assert_eq!(back.disks[0].d_s, Some(0.0));
        assert_eq!(back.arc.as_ref().unwrap().hit_ratio, Some(0.0));
        // Named fields, not positional arrays.
        assert!(bytes.windows(8).any(|w| w == b"interval"));
        assert!(!bytes.windows(7).any(|w| w == b"r_await"));
    }

    #[test]
    fn a_plugin_gets_every_part_it_reads_and_none_it_said_it_does_not() {
        let s = rich_sample();
        // Reading everything (unread 0, every 1.0 plugin): the very bytes of the full sample.
        assert_eq!(encode_sample_for(&s, 0), encode_sample(&s));
        let unread = abi::PART_SNAPSHOT_DISKS | abi::PART_DISK_RATES | abi::PART_HOST_RATES;
        let bytes = encode_sample_for(&s, unread);
        assert!(bytes.len() < encode_sample(&s).len());
        let got = decode_sample(&bytes).unwrap();
        assert!(got.disks.is_empty() && got.snapshot.disks.is_empty());
        assert_eq!((got.cpu, got.snapshot.cpu), (None, None));
        // Everything else as it was.
        let mut want = s.clone();
        want.disks.clear();
        want.snapshot.disks.clear();
        want.cpu = None;
        want.snapshot.cpu = None;
        want.net.clear();
        want.snapshot.net.clear();
        assert_eq!(got, want);
        // The descriptor says what the plugin does not read.
        struct Reads;
        impl Plugin for Reads {
            const NAME: &'static str = "reads";
            const VERSION: &'static str = "1";
            const READS: u64 = abi::PART_DISK_RATES;
            type Config = ();
            fn new(_: (), _: &Host) -> Result<Self, Error> {
                Ok(Reads)
            }
            fn on_sample(&mut self, _: &Sample, _: &Host) -> Result<(), Error> {
                Ok(())
            }
        }
        let d = export::descriptor::<Reads>("test");
        assert_eq!(d.unread, abi::PARTS_KNOWN & !abi::PART_DISK_RATES);
        assert_eq!(
            d.header.struct_size as usize,
            std::mem::size_of::<abi::PluginDescriptor>()
        );
    }

    #[test]
    fn a_sample_decoded_into_the_previous_one_is_what_a_fresh_decoding_gives() {
        let rich = rich_sample();
        let mut fewer = rich_sample();
        fewer.disks.truncate(0);
        fewer.snapshot.disks.truncate(1);
        fewer.snapshot.arc = None;
        fewer.arc.as_mut().unwrap().hit_ratio = None;
        fewer.resets.clear();
        let reduced = encode_sample_for(&rich, abi::PARTS_KNOWN);
        // Shapes that grow, shrink, lose and gain optional fields, from one place.
        let sequence = [
            encode_sample(&rich),
            encode_sample(&Sample::default()),
            encode_sample(&rich),
            reduced,
            encode_sample(&fewer),
            encode_sample(&rich),
        ];
        let mut place = None;
        for (i, bytes) in sequence.iter().enumerate() {
            let fresh = decode_sample(bytes).unwrap();
            assert_eq!(
                decode_sample_into(bytes, &mut place).unwrap(),
                &fresh,
                "step {i}"
            );
        }
        // Bytes that do not decode: an error, the place emptied, the next decoding afresh.
        let broken = &sequence[0][..sequence[0].len() / 2];
        assert!(decode_sample_into(broken, &mut place).is_err());
        assert!(place.is_none());
        assert_eq!(
            decode_sample_into(&sequence[4], &mut place).unwrap(),
            &fewer
        );
    }

    #[test]
    fn an_older_plugin_ignores_fields_it_does_not_know() {
        // A newer agent adds a field: a plugin built against this proto still decodes it.
        let mut map: std::collections::BTreeMap<String, Value> =
            rmp_serde::from_slice(&encode_sample(&rich_sample())).unwrap();
        map.insert("added_in_a_later_version".into(), Value::UInt(1));
        let bytes = rmp_serde::to_vec_named(&map).unwrap();
        assert_eq!(decode_sample(&bytes).unwrap(), rich_sample());
    }
}
