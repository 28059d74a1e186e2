//! Unit-testing a plugin without the agent: [`TestHost`] is an in-process host that records
//! what a plugin logs and emits, and [`TestHost::run`] drives a [`Plugin`] through the same
//! `extern "C"` functions the agent calls (config decoding, panics and all).
//!
//! ```
//! # use zpulse_proto::sdk::{self, testing::TestHost, Host, Plugin};
//! # struct Quiet;
//! # impl Plugin for Quiet {
//! #     const NAME: &'static str = "quiet";
//! #     const VERSION: &'static str = "0";
//! #     type Config = std::collections::BTreeMap<String, sdk::Value>;
//! #     fn new(_: Self::Config, _: &Host) -> Result<Self, sdk::Error> { Ok(Quiet) }
//! #     fn on_sample(&mut self, _: &sdk::Sample, _: &Host) -> Result<(), sdk::Error> { Ok(()) }
//! # }
//! let host = TestHost::new();
//! let events = host.run::<Quiet>(&[], &[sdk::Sample::default()]).unwrap();
//! assert!(events.is_empty());
//! ```

#[cfg(any(feature = "replay", test))]
pub use super::recorded::recorded_samples;
pub use super::sample_builder::{DiskLoad, SampleBuilder, VdevLoad};

use super::{Event, Host, Plugin, encode_sample_for, encode_window_for, export};
use crate::abi::{self, HostApi};
use crate::report::{ReportWindow, Section};
use crate::{Sample, ZEvent};
use std::ffi::c_void;
use std::sync::Mutex;

#[derive(Default)]
struct Recorded {
    events: Vec<Event>,
    rejected: Vec<String>,
    sections: Vec<Section>,
    logs: Vec<(i32, String)>,
    error: Option<String>,
}

/// A host for tests. Keep it alive while any [`Host`] made from it is used.
pub struct TestHost {
    // Boxed so that the `ctx` and `HostApi` pointers stay put when the TestHost moves.
    recorded: Box<Mutex<Recorded>>,
    api: Box<HostApi>,
}

impl Default for TestHost {
    fn default() -> Self {
        TestHost::new()
    }
}

impl TestHost {
    pub fn new() -> TestHost {
        let recorded = Box::new(Mutex::new(Recorded::default()));
        let ctx = (&*recorded as *const Mutex<Recorded>).cast_mut().cast();
        let api = Box::new(HostApi::new(ctx, log_cb, emit_cb, set_error_cb, section_cb));
        TestHost { recorded, api }
    }

    /// The raw API, as the agent passes it to `create`.
    pub fn api(&self) -> *const HostApi {
        &*self.api
    }

    /// A [`Host`] to call a plugin's methods directly.
    pub fn host(&self) -> Host {
        // SAFETY: `api` is a valid HostApi that lives as long as `self`, and its callbacks
        // only touch `recorded`, which lives as long too.
        unsafe { Host::from_raw(self.api()) }.expect("the test host speaks this ABI")
    }

    /// Events emitted so far (valid ones), emptied.
    pub fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut self.lock().events)
    }

    /// Report sections given so far (valid ones), emptied.
    pub fn take_sections(&self) -> Vec<Section> {
        std::mem::take(&mut self.lock().sections)
    }

    /// Why emitted records were rejected.
    pub fn rejected(&self) -> Vec<String> {
        self.lock().rejected.clone()
    }

    /// Log lines: (level, text).
    pub fn logs(&self) -> Vec<(i32, String)> {
        self.lock().logs.clone()
    }

    /// The last text given to `set_error`.
    pub fn last_error(&self) -> Option<String> {
        self.lock().error.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs plugin `P` the way the agent does: `create` with `config` (MessagePack bytes of
    /// the table; `&[]` is taken as an empty table), `on_sample` for each sample, `destroy`.
    /// Each sample leaves out the parts `P` says it does not read ([`Plugin::READS`]), as the
    /// agent's samples do. Returns the events, or the first failure as `"status N: reason"`.
    pub fn run<P: Plugin>(&self, config: &[u8], samples: &[Sample]) -> Result<Vec<Event>, String> {
        self.events::<P>(config, samples, false)
    }

    /// As [`TestHost::run`], but each sample is handed over as the agent hands it to a plugin
    /// built with it (ABI 1.4 `on_sample_native`): the sample itself, every part included.
    pub fn run_native<P: Plugin>(
        &self,
        config: &[u8],
        samples: &[Sample],
    ) -> Result<Vec<Event>, String> {
        self.events::<P>(config, samples, true)
    }

    fn events<P: Plugin>(
        &self,
        config: &[u8],
        samples: &[Sample],
        native: bool,
    ) -> Result<Vec<Event>, String> {
        let feeds: Vec<Feed> = samples.iter().map(Feed::Sample).collect();
        self.drive::<P>(config, &feeds, None, native)
            .map(|()| self.take_events())
    }

    /// As [`TestHost::run`], with kernel events between the samples, in the order given:
    /// each [`Feed::Event`] goes to the plugin's `on_event` (ABI 1.6) as the agent hands it
    /// one the moment it is read. A plugin that takes no events ([`Plugin::TAKES_EVENTS`])
    /// is not given them, as in the agent.
    pub fn feed<P: Plugin>(&self, config: &[u8], feeds: &[Feed]) -> Result<Vec<Event>, String> {
        self.drive::<P>(config, feeds, None, false)
            .map(|()| self.take_events())
    }

    /// As [`TestHost::run`], then `report` with `window` the way `zpulse report` calls it:
    /// the events of the samples, and the sections of the report.
    pub fn report<P: Plugin>(
        &self,
        config: &[u8],
        samples: &[Sample],
        window: &ReportWindow,
    ) -> Result<(Vec<Event>, Vec<Section>), String> {
        let feeds: Vec<Feed> = samples.iter().map(Feed::Sample).collect();
        self.drive::<P>(config, &feeds, Some(window), false)
            .map(|()| (self.take_events(), self.take_sections()))
    }

    fn drive<P: Plugin>(
        &self,
        config: &[u8],
        feeds: &[Feed],
        window: Option<&ReportWindow>,
        native: bool,
    ) -> Result<(), String> {
        let descriptor = export::descriptor::<P>("test");
        let on_sample_native = descriptor.on_sample_native.expect("set by the SDK");
        let (create, on_sample, destroy) = (
            descriptor.create.expect("set by the SDK"),
            descriptor.on_sample.expect("set by the SDK"),
            descriptor.destroy.expect("set by the SDK"),
        );
        let empty_map = [0x80u8];
        let config = if config.is_empty() {
            &empty_map[..]
        } else {
            config
        };
        let mut state: *mut c_void = std::ptr::null_mut();
        // SAFETY: the API is valid for `self`'s lifetime, the config slice for the call, and
        // `state` is a writable pointer.
        let status = unsafe { create(self.api(), config.as_ptr(), config.len(), &mut state) };
        if status != abi::STATUS_OK {
            return Err(self.failure(status));
        }
        let mut result = Ok(());
        for feed in feeds {
            let sample = match feed {
                Feed::Sample(sample) => sample,
                Feed::Event(event) => {
                    let Some(on_event) = descriptor.on_event else {
                        continue;
                    };
                    let bytes = event.to_msgpack();
                    // SAFETY: as for `on_sample` below.
                    let status = unsafe { on_event(state, bytes.as_ptr(), bytes.len()) };
                    if status != abi::STATUS_OK {
                        result = Err(self.failure(status));
                        break;
                    }
                    continue;
                }
            };
            let status = if native {
                // SAFETY: as below; the sample is this build's `Sample`, alive for the call.
                unsafe { on_sample_native(state, (*sample as *const Sample).cast()) }
            } else {
                let bytes = encode_sample_for(sample, descriptor.unread);
                // SAFETY: `state` came from `create` and is not destroyed yet; calls are serial.
                unsafe { on_sample(state, bytes.as_ptr(), bytes.len()) }
            };
            if status != abi::STATUS_OK {
                result = Err(self.failure(status));
                break;
            }
        }
        if let (Ok(()), Some(window)) = (&result, window) {
            let report = descriptor.report.expect("set by the SDK");
            let bytes = encode_window_for(window, descriptor.unread);
            // SAFETY: as for `on_sample`.
            let status = unsafe { report(state, bytes.as_ptr(), bytes.len()) };
            if status != abi::STATUS_OK {
                result = Err(self.failure(status));
            }
        }
        // SAFETY: destroyed once, after the last call.
        unsafe { destroy(state) };
        result
    }

    fn failure(&self, status: abi::Status) -> String {
        let why = self
            .last_error()
            .unwrap_or_else(|| "no reason given".into());
        format!("status {status}: {why}")
    }
}

/// What [`TestHost::feed`] hands a plugin, in order.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Feed<'a> {
    Sample(&'a Sample),
    Event(&'a ZEvent),
}

/// `ctx` back to the recorder.
///
/// # Safety
/// `ctx` must be the pointer `TestHost::new` stored, with the TestHost alive.
unsafe fn recorded<'a>(ctx: *mut c_void) -> &'a Mutex<Recorded> {
    // SAFETY: per the function's contract.
    unsafe { &*ctx.cast::<Mutex<Recorded>>() }
}

fn text(ptr: *const u8, len: usize) -> String {
    // SAFETY: the plugin passes `len` readable bytes for the duration of the callback.
    let bytes = unsafe { abi::bytes(ptr, len) }.unwrap_or_default();
    String::from_utf8_lossy(bytes).into_owned()
}

unsafe extern "C" fn log_cb(ctx: *mut c_void, level: i32, ptr: *const u8, len: usize) {
    let line = text(ptr, len);
    // SAFETY: ctx is the one this TestHost handed out.
    let rec = unsafe { recorded(ctx) };
    rec.lock()
        .unwrap_or_else(|p| p.into_inner())
        .logs
        .push((level, line));
}

unsafe extern "C" fn set_error_cb(ctx: *mut c_void, ptr: *const u8, len: usize) {
    let message = text(ptr, len);
    // SAFETY: as in `log_cb`.
    let rec = unsafe { recorded(ctx) };
    rec.lock().unwrap_or_else(|p| p.into_inner()).error = Some(message);
}

unsafe extern "C" fn emit_cb(ctx: *mut c_void, ptr: *const u8, len: usize) -> abi::EmitStatus {
    // SAFETY: the plugin passes `len` readable bytes for the call.
    let bytes = unsafe { abi::bytes(ptr, len) }.unwrap_or_default();
    let decoded = Event::from_msgpack(bytes);
    // SAFETY: as in `log_cb`.
    let rec = unsafe { recorded(ctx) };
    let mut rec = rec.lock().unwrap_or_else(|p| p.into_inner());
    match decoded {
        Ok(event) => {
            rec.events.push(event);
            abi::EMIT_OK
        }
        Err(why) => {
            rec.rejected.push(why);
            abi::EMIT_INVALID
        }
    }
}

unsafe extern "C" fn section_cb(ctx: *mut c_void, ptr: *const u8, len: usize) -> abi::EmitStatus {
    // SAFETY: the plugin passes `len` readable bytes for the call.
    let bytes = unsafe { abi::bytes(ptr, len) }.unwrap_or_default();
    let decoded = Section::from_msgpack(bytes);
    // SAFETY: as in `log_cb`.
    let rec = unsafe { recorded(ctx) };
    let mut rec = rec.lock().unwrap_or_else(|p| p.into_inner());
    match decoded {
        Ok(section) => {
            rec.sections.push(section);
            abi::EMIT_OK
        }
        Err(why) => {
            rec.rejected.push(why);
            abi::EMIT_INVALID
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk::{self, Findings, Report, Rules, Threshold};
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Cfg {
        raise: f64,
        clear: f64,
        panic_on_sample: bool,
    }
    impl Default for Cfg {
        fn default() -> Self {
            Cfg {
                raise: 90.0,
                clear: 70.0,
                panic_on_sample: false,
            }
        }
    }

    struct Busy {
        t: Threshold,
        f: Findings,
        panic: bool,
    }

    impl Plugin for Busy {
        const NAME: &'static str = "busy";
        const VERSION: &'static str = "1.2.3";
        type Config = Cfg;
        fn new(c: Cfg, host: &Host) -> Result<Self, sdk::Error> {
            host.info("starting");
            Ok(Busy {
                t: Threshold::above(c.raise, c.clear)?,
                f: Findings::new(Self::NAME, Rules::default()),
                panic: c.panic_on_sample,
            })
        }
        fn on_sample(&mut self, s: &Sample, host: &Host) -> Result<(), sdk::Error> {
            if self.panic {
                let v: Vec<u8> = Vec::new();
                let _ = v[s.disks.len() + 3];
            }
            for d in &s.disks {
                let r = Report::new(format!("{} {:.0}% busy", d.name, d.util)).with("util", d.util);
                if let Some(e) = self.f.observe(s.end, &d.name, self.t.verdict(d.util), r) {
                    host.emit(&e)?;
                }
            }
            Ok(())
        }
    }

    fn sample(end: f64, util: f64) -> Sample {
        Sample {
            end,
            disks: vec![crate::sample::DiskRates {
                name: "sda".into(),
                util,
                ..Default::default()
            }],
            ..Sample::default()
        }
    }

    fn config(pairs: &[(&str, sdk::Value)]) -> Vec<u8> {
        let m: std::collections::BTreeMap<String, sdk::Value> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        sdk::config::encode(&m)
    }

    #[test]
    fn a_plugin_runs_through_its_c_exports() {
        let host = TestHost::new();
        let events = host
            .run::<Busy>(
                &[],
                &[sample(0.0, 95.0), sample(10.0, 96.0), sample(100.0, 5.0)],
            )
            .unwrap();
        let states: Vec<_> = events.iter().map(|e| e.state.unwrap()).collect();
        assert_eq!(states, [sdk::State::Raised, sdk::State::Cleared]);
        assert_eq!(host.logs(), [(abi::LOG_INFO, "starting".to_string())]);
    }

    /// The agent's own sample, through `on_sample_native`, is seen as its MessagePack is.
    #[test]
    fn a_plugin_runs_on_the_native_sample_as_on_its_messagepack() {
        let host = TestHost::new();
        let samples = [sample(0.0, 95.0), sample(10.0, 96.0), sample(100.0, 5.0)];
        let encoded = host.run::<Busy>(&[], &samples).unwrap();
        let native = host.run_native::<Busy>(&[], &samples).unwrap();
        assert_eq!(native.len(), 2);
        assert_eq!(native, encoded);
        let d = export::descriptor::<Busy>("test");
        // SAFETY: the SDK's fingerprint function takes nothing and reads nothing.
        let layout = d.sample_layout.map(|f| unsafe { f() });
        assert_eq!(layout, Some(abi::sample_layout()));
    }

    #[test]
    fn the_descriptor_says_who_the_plugin_is() {
        let d = export::descriptor::<Busy>("busy 1.2.3");
        assert_eq!(d.header.abi_major, abi::ABI_MAJOR);
        assert_eq!(
            d.header.struct_size as usize,
            std::mem::size_of::<abi::PluginDescriptor>()
        );
        // SAFETY: the descriptor's strings are statics.
        unsafe {
            assert_eq!(d.name.to_string_lossless().as_deref(), Some("busy"));
            assert_eq!(d.version.to_string_lossless().as_deref(), Some("1.2.3"));
        }
        assert!(abi::check_header(&d.header).is_ok());
    }

    #[test]
    fn a_bad_config_is_status_config_naming_the_key() {
        let host = TestHost::new();
        let err = host
            .run::<Busy>(&config(&[("raise", "high".into())]), &[])
            .unwrap_err();
        assert!(err.starts_with("status 2: raise: invalid type"), "{err}");
        let err = host
            .run::<Busy>(&config(&[("rise", sdk::Value::UInt(1))]), &[])
            .unwrap_err();
        assert!(err.contains("unknown field `rise`"), "{err}");
        // Config that decodes but that `new` refuses is an error too (status 1).
        let err = host
            .run::<Busy>(
                &config(&[
                    ("raise", sdk::Value::UInt(50)),
                    ("clear", sdk::Value::UInt(60)),
                ]),
                &[],
            )
            .unwrap_err();
        assert!(
            err.starts_with("status 1:") && err.contains("flap"),
            "{err}"
        );
    }

    #[test]
    fn a_panic_becomes_status_panic_with_its_message() {
        let host = TestHost::new();
        // In `on_sample` and in `on_sample_native` alike.
        for native in [false, true] {
            let config = config(&[("panic_on_sample", true.into())]);
            let err = host
                .events::<Busy>(&config, &[sample(0.0, 1.0)], native)
                .unwrap_err();
            assert!(
                err.starts_with("status 3: panicked: index out of bounds"),
                "native {native}: {err}"
            );
            // One line, with where it happened: the line of `v[…]` in `Busy::on_sample`.
            assert!(!err.contains('\n'), "{err}");
            assert!(err.contains("(at proto/src/sdk/testing.rs:"), "{err}");
        }
    }

    #[test]
    fn a_sample_that_does_not_decode_is_an_error() {
        let host = TestHost::new();
        let d = export::descriptor::<Busy>("test");
        let mut state = std::ptr::null_mut();
        // SAFETY: valid API, config and out pointer; the state is destroyed once at the end.
        unsafe {
            let empty = [0x80u8];
            assert_eq!(
                d.create.unwrap()(host.api(), empty.as_ptr(), 1, &mut state),
                abi::STATUS_OK
            );
            // A null native sample is refused before the plugin sees it.
            assert_eq!(
                d.on_sample_native.unwrap()(state, std::ptr::null()),
                abi::STATUS_ERROR
            );
            assert!(
                host.last_error()
                    .unwrap()
                    .contains("on_sample_native was called with a null")
            );
            let garbage = [0xc1u8, 0x00];
            assert_eq!(
                d.on_sample.unwrap()(state, garbage.as_ptr(), garbage.len()),
                abi::STATUS_ERROR
            );
            assert_eq!(
                d.on_sample.unwrap()(std::ptr::null_mut(), garbage.as_ptr(), 2),
                abi::STATUS_ERROR
            );
            d.destroy.unwrap()(state);
            d.destroy.unwrap()(std::ptr::null_mut());
        }
        assert!(
            host.last_error()
                .unwrap()
                .contains("could not decode the sample")
        );
    }

    #[test]
    fn invalid_events_are_refused_before_they_leave() {
        let host = TestHost::new();
        let h = host.host();
        let mut e = Event::metrics("x", "y", "z");
        e.check = "has space".into();
        assert!(matches!(h.emit(&e), Err(sdk::EmitError::Invalid(_))));
        assert_eq!(h.emit_raw(b"\xc1"), Err(sdk::EmitError::Rejected));
        assert_eq!(host.rejected().len(), 1);
        assert!(h.emit(&Event::metrics("x", "y", "z")).is_ok());
        assert_eq!(host.take_events().len(), 1);
    }
}
