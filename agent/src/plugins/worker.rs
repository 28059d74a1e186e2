//! A plugin's calls as its lane makes them ([`Member`], [`work`]), and the callbacks it gives
//! the plugin.
//!
//! The host posts jobs to a plugin's [`lane`](super::lane) and hears back when the lane's
//! queue runs dry, so it never waits on a plugin longer than it chooses to: a call that hangs
//! only blocks its own lane, whose other plugins the host moves to a new one. Everything a
//! plugin passes to a callback is checked and copied into [`Shared`], which the host drains
//! after each sample.

use super::load::Calls;
use super::{Level, LogLine};
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard};
use zpulse_proto::Sample;
use zpulse_proto::abi::{self, HostApi, Status};
use zpulse_proto::event::{Entry, Event, EventTime, Kind};
use zpulse_proto::report::{SECTIONS_PER_PLUGIN, Section};

/// A lane's stack: plugins decode a whole sample, so more room than the 2 MiB default.
pub(super) const STACK_BYTES: usize = 8 << 20;
/// A log line longer than this is cut: it is meant for people.
const LOG_LINE_BYTES: usize = 4096;
/// Log lines a plugin may write per sample; more are dropped (and that is said once).
const LOG_LINES_PER_SAMPLE: u32 = 100;

/// The encodings of one argument (a sample, a report window), one per distinct set of parts
/// the plugins leave out, each made once by `encode` and shared by every plugin that reads
/// the same parts.
pub(super) struct Encoded<E> {
    encode: E,
    made: Vec<(u64, Arc<[u8]>)>,
}

impl<E: FnMut(u64) -> Vec<u8>> Encoded<E> {
    pub fn new(encode: E) -> Self {
        Encoded {
            encode,
            made: Vec::new(),
        }
    }

    /// The argument for a plugin that does not read the parts `unread`.
    pub fn for_plugin(&mut self, unread: u64) -> Arc<[u8]> {
        let unread = unread & abi::PARTS_KNOWN;
        if let Some((_, bytes)) = self.made.iter().find(|(u, _)| *u == unread) {
            return Arc::clone(bytes);
        }
        let bytes: Arc<[u8]> = (self.encode)(unread).into();
        self.made.push((unread, Arc::clone(&bytes)));
        bytes
    }
}

pub(super) enum Job {
    /// Build the state from this config (MessagePack map).
    Create(Vec<u8>),
    /// One encoded sample, shared by every plugin that reads the same parts.
    Sample(Arc<[u8]>),
    /// The sample itself, for a plugin whose `create` said it takes it natively; shared by
    /// every such plugin, and kept alive by a hung one until it returns.
    NativeSample(Arc<Sample>),
    /// One encoded report window (`zpulse report`).
    Report(Arc<[u8]>),
    /// Kernel events, each encoded once and shared by every plugin that takes them, in the
    /// kernel's order (ABI 1.6 `on_event`, one call each).
    Events(Arc<[EncodedZevent]>),
    /// Destroy the state (if `create` made one): the plugin gets no more calls.
    Stop,
}

/// A kernel event as `on_event` takes it, with the time its findings are stamped with.
pub(super) struct EncodedZevent {
    pub time: EventTime,
    pub bytes: Vec<u8>,
}

pub(super) enum Done {
    Created {
        status: Status,
        error: Option<String>,
        /// Whether the plugin's sample layout is the agent's: it gets [`Job::NativeSample`].
        native: bool,
    },
    Sampled {
        status: Status,
        error: Option<String>,
    },
    /// `on_event` returned for every event of a job, or the first that failed did.
    Evented {
        status: Status,
        error: Option<String>,
    },
    /// `report` returned (or the plugin has none: `STATUS_OK` at once).
    Reported {
        status: Status,
        error: Option<String>,
    },
    /// The state (if any) is destroyed: the plugin's last call.
    Stopped,
}

/// Limits the callbacks enforce: `[plugins]`' own.
pub(super) use crate::config::PluginLimits as Limits;

/// What one plugin's callbacks collected, and the context they stamp events with.
#[derive(Default)]
pub(super) struct Collected {
    /// Time given to events emitted now: the end of the sample being processed.
    pub time: EventTime,
    pub hostname: String,
    /// Emit calls and log lines since the current sample was dispatched.
    emitted: u32,
    logged: u32,
    pub events: Vec<Entry>,
    /// Report sections given during `report`, checked.
    pub sections: Vec<Section>,
    pub logs: Vec<LogLine>,
    /// The reason given to `set_error` during the current call.
    pub error: Option<String>,
    /// Records refused (malformed or too large), and the first reason.
    pub invalid: u64,
    pub first_invalid: Option<String>,
    /// Records dropped over the per-sample limit.
    pub rate_limited: u64,
    /// Report sections refused (malformed, too large, over a limit), and the first reason:
    /// said as sections, not as events.
    pub invalid_sections: u64,
    pub first_invalid_section: Option<String>,
    /// Report sections dropped over [`SECTIONS_PER_PLUGIN`].
    pub sections_dropped: u64,
    pub logs_dropped: u64,
}

/// The `ctx` of one plugin's callbacks. Never freed: a plugin may keep the pointer.
pub(super) struct Shared {
    pub name: String,
    limits: Limits,
    collected: Mutex<Collected>,
}

impl Shared {
    pub fn new(name: &str, limits: Limits, hostname: &str) -> Shared {
        Shared {
            name: name.to_owned(),
            limits,
            collected: Mutex::new(Collected {
                hostname: hostname.to_owned(),
                ..Collected::default()
            }),
        }
    }

    /// The collected state. A panic while it was held cannot leave it inconsistent (every
    /// update is one push or one counter), so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, Collected> {
        self.collected.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The time given to the events emitted from now on (a kernel event's, during `on_event`).
    fn stamp(&self, time: EventTime) {
        self.lock().time = time;
    }

    /// Starts the per-sample window: new time, fresh limits.
    pub fn begin_sample(&self, time: EventTime, hostname: &str) {
        let mut c = self.lock();
        c.time = time;
        if c.hostname != hostname {
            c.hostname = hostname.to_owned();
        }
        c.emitted = 0;
        c.logged = 0;
    }

    fn emit(&self, bytes: Option<&[u8]>) -> abi::EmitStatus {
        let Some(bytes) = bytes else {
            return self.invalid("emit was called with a null pointer".into());
        };
        if bytes.len() > self.limits.max_event_bytes {
            // Refused unread: no copy, no decoding, whatever the size.
            self.invalid(format!(
                "a record of {} bytes, over the limit of {} (plugins.max_event_bytes)",
                bytes.len(),
                self.limits.max_event_bytes
            ));
            return abi::EMIT_TOO_LARGE;
        }
        {
            let mut c = self.lock();
            if c.emitted >= self.limits.max_events_per_sample {
                c.rate_limited += 1;
                return abi::EMIT_RATE_LIMITED;
            }
            c.emitted += 1;
        }
        // Decoded outside the lock, on the plugin's own thread.
        let event = Event::from_msgpack(bytes).and_then(|e| {
            if e.kind == Kind::Agent {
                Err("kind: `agent` events are the agent's own; use finding or metrics".into())
            } else {
                Ok(e)
            }
        });
        match event {
            Ok(mut event) => {
                let mut c = self.lock();
                event.host = c.hostname.clone();
                let time = c.time;
                c.events.push(Entry { time, event });
                abi::EMIT_OK
            }
            Err(why) => self.invalid(why),
        }
    }

    fn section(&self, bytes: Option<&[u8]>) -> abi::EmitStatus {
        let Some(bytes) = bytes else {
            return self.invalid_section("section was called with a null pointer".into());
        };
        if bytes.len() > zpulse_proto::report::SECTION_MAX_BYTES {
            self.invalid_section(format!(
                "a report section of {} bytes, over the limit of {}",
                bytes.len(),
                zpulse_proto::report::SECTION_MAX_BYTES
            ));
            return abi::EMIT_TOO_LARGE;
        }
        if self.lock().sections.len() >= SECTIONS_PER_PLUGIN {
            self.lock().sections_dropped += 1;
            return abi::EMIT_RATE_LIMITED;
        }
        match Section::from_msgpack(bytes) {
            Ok(mut section) => {
                section.check = self.name.clone();
                self.lock().sections.push(section);
                abi::EMIT_OK
            }
            Err(why) => self.invalid_section(why),
        }
    }

    fn invalid_section(&self, why: String) -> abi::EmitStatus {
        let mut c = self.lock();
        c.invalid_sections += 1;
        c.first_invalid_section.get_or_insert(why);
        abi::EMIT_INVALID
    }

    fn invalid(&self, why: String) -> abi::EmitStatus {
        let mut c = self.lock();
        c.invalid += 1;
        c.first_invalid.get_or_insert(why);
        abi::EMIT_INVALID
    }

    fn log(&self, level: i32, bytes: Option<&[u8]>) {
        let mut c = self.lock();
        if c.logged >= LOG_LINES_PER_SAMPLE {
            c.logs_dropped += 1;
            return;
        }
        c.logged += 1;
        let level = match level {
            abi::LOG_ERROR => Level::Error,
            abi::LOG_WARN => Level::Warn,
            abi::LOG_DEBUG => Level::Debug,
            _ => Level::Info,
        };
        c.logs.push(LogLine {
            level,
            source: self.name.clone(),
            message: text(bytes),
        });
    }

    fn set_error(&self, bytes: Option<&[u8]>) {
        self.lock().error = Some(text(bytes));
    }
}

/// A plugin's bytes as one line of text: lossy UTF-8, control characters replaced, cut.
fn text(bytes: Option<&[u8]>) -> String {
    let bytes = bytes.unwrap_or(b"(null)");
    let cut = &bytes[..bytes.len().min(LOG_LINE_BYTES)];
    String::from_utf8_lossy(cut)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The `Shared` behind a callback's `ctx`.
///
/// # Safety
/// `ctx` must be a pointer made by `Arc::into_raw` in [`Api::for_plugin`], which is never
/// released.
unsafe fn shared<'a>(ctx: *mut c_void) -> &'a Shared {
    // SAFETY: per the contract; the Arc's count is never decremented, so it lives forever.
    unsafe { &*ctx.cast::<Shared>() }
}

/// # Safety
/// `ptr` must be null or point to `len` bytes readable during the call (ABI contract).
unsafe fn input<'a>(ptr: *const u8, len: usize) -> Option<&'a [u8]> {
    // SAFETY: per the contract.
    unsafe { abi::bytes(ptr, len) }
}

// The callbacks run on plugin threads, inside plugin frames: nothing may unwind out of them.

unsafe extern "C" fn log_cb(ctx: *mut c_void, level: i32, msg: *const u8, len: usize) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: ctx is the pointer this host gave the plugin; the message is valid for the
        // call and copied before it returns.
        unsafe { shared(ctx).log(level, input(msg, len)) }
    }));
}

unsafe extern "C" fn emit_cb(ctx: *mut c_void, event: *const u8, len: usize) -> abi::EmitStatus {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `log_cb`.
        unsafe { shared(ctx).emit(input(event, len)) }
    }))
    .unwrap_or(abi::EMIT_INVALID)
}

unsafe extern "C" fn section_cb(ctx: *mut c_void, bytes: *const u8, len: usize) -> abi::EmitStatus {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `log_cb`.
        unsafe { shared(ctx).section(input(bytes, len)) }
    }))
    .unwrap_or(abi::EMIT_INVALID)
}

unsafe extern "C" fn set_error_cb(ctx: *mut c_void, msg: *const u8, len: usize) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `log_cb`.
        unsafe { shared(ctx).set_error(input(msg, len)) }
    }));
}

/// The host API handed to one plugin: leaked, so valid for the life of the process.
#[derive(Clone, Copy)]
struct Api(&'static HostApi);

// SAFETY: the HostApi is immutable once built, its callbacks are thread-safe, and its ctx is
// an `Arc<Shared>` (Sync) that is never freed.
unsafe impl Send for Api {}

impl Api {
    /// The callbacks with `shared` as their `ctx`: a reference to it that is never released
    /// (what [`shared`] relies on), in a `HostApi` leaked for the life of the process.
    fn for_plugin(shared: &Arc<Shared>) -> Api {
        let ctx = Arc::into_raw(Arc::clone(shared))
            .cast_mut()
            .cast::<c_void>();
        Api(Box::leak(Box::new(HostApi::new(
            ctx,
            log_cb,
            emit_cb,
            set_error_cb,
            section_cb,
        ))))
    }
}

/// One plugin's instance as a lane calls it: its functions, callbacks and state.
pub(super) struct Member {
    calls: Calls,
    api: Api,
    state: *mut c_void,
    created: bool,
    /// The plugin's `on_sample_native`, once `create` succeeded and its layout is the agent's.
    native: Option<abi::OnSampleNativeFn>,
    shared: Arc<Shared>,
    /// Whether the plugin was said to have changed the agent's signal handling (once).
    changed_signals: bool,
}

// SAFETY: the state pointer is only used by the lane holding the member's lock, one call at a
// time, which is the ABI's rule (calls on one state are never concurrent); the ABI does not
// tie a state to a thread. `Api` is Send, and the rest are function pointers and an Arc.
unsafe impl Send for Member {}

impl Member {
    pub fn new(calls: Calls, shared: &Arc<Shared>) -> Member {
        Member {
            calls,
            api: Api::for_plugin(shared),
            state: std::ptr::null_mut(),
            created: false,
            native: None,
            shared: Arc::clone(shared),
            changed_signals: false,
        }
    }
}

/// What a lane is asked to do: `job` on `member`.
pub(super) struct Call {
    pub member: Arc<Mutex<Member>>,
    pub job: Job,
}

/// Runs one call on the lane's thread. `None` for a job the plugin cannot take (a sample
/// before a successful `create`): the host sends none, and nothing is said.
pub(super) fn work(call: Call) -> Option<Done> {
    // The lock is never contended (the host posts one call per plugin at a time and keeps a
    // plugin's calls on one lane); it makes that a guarantee.
    let mut member = call.member.lock().unwrap_or_else(|p| p.into_inner());
    member.shared.lock().error = None;
    let m = &mut *member;
    let done = match call.job {
        Job::Create(config) => {
            // SAFETY: the API lives forever, the config is valid for the call, and `state` is
            // a writable pointer; the member's lock makes this its only caller.
            let status =
                unsafe { (m.calls.create)(m.api.0, config.as_ptr(), config.len(), &mut m.state) };
            m.created = status == abi::STATUS_OK;
            let created = m.created;
            m.native = m
                .calls
                .native
                .filter(|(layout, _)| {
                    // SAFETY: an ABI 1.4 function taking nothing; asked on the lane, where a
                    // plugin that hangs in it is caught like one hanging in `create`.
                    created && (unsafe { layout() }) == abi::sample_layout()
                })
                .map(|(_, on_sample)| on_sample);
            Done::Created {
                status,
                error: m.shared.lock().error.take(),
                native: m.native.is_some(),
            }
        }
        Job::Sample(sample) if m.created => {
            // SAFETY: `state` came from a successful `create` and is not destroyed; the sample
            // is valid for the call; the member's lock makes calls on it serial.
            let status = unsafe { (m.calls.on_sample)(m.state, sample.as_ptr(), sample.len()) };
            Done::Sampled {
                status,
                error: m.shared.lock().error.take(),
            }
        }
        Job::NativeSample(sample) => {
            // Only after a `create` that said so (the host sends no other).
            let on_sample = m.native?;
            // SAFETY: as for `on_sample`; the plugin's layout fingerprint is the agent's, so
            // it reads `Sample` as this build lays it out; the Arc keeps it alive and
            // unchanged until the call returns.
            let status = unsafe { on_sample(m.state, Arc::as_ptr(&sample).cast()) };
            Done::Sampled {
                status,
                error: m.shared.lock().error.take(),
            }
        }
        Job::Report(window) if m.created => {
            let status = match m.calls.report {
                // SAFETY: as for `on_sample`; the window is valid for the call.
                Some(report) => unsafe { report(m.state, window.as_ptr(), window.len()) },
                None => abi::STATUS_OK,
            };
            Done::Reported {
                status,
                error: m.shared.lock().error.take(),
            }
        }
        Job::Events(events) if m.created => {
            let mut status = abi::STATUS_OK;
            if let Some(on_event) = m.calls.on_event {
                for event in events.iter() {
                    m.shared.stamp(event.time);
                    // SAFETY: as for `on_sample`; the event's bytes are valid for the call.
                    status = unsafe { on_event(m.state, event.bytes.as_ptr(), event.bytes.len()) };
                    if status != abi::STATUS_OK {
                        break;
                    }
                }
            }
            Done::Evented {
                status,
                error: m.shared.lock().error.take(),
            }
        }
        Job::Sample(_) | Job::Report(_) | Job::Events(_) => return None,
        Job::Stop => {
            if std::mem::take(&mut m.created) {
                // SAFETY: the state from `create`, destroyed once (`created` is now false),
                // under the member's lock.
                unsafe { (m.calls.destroy)(m.state) };
            }
            Done::Stopped
        }
    };
    // The call may have changed the process's signal dispositions (see `signals`).
    let restored = super::signals::restore_agents();
    if !restored.is_empty() && !std::mem::replace(&mut m.changed_signals, true) {
        m.shared.lock().logs.push(LogLine {
            level: Level::Warn,
            source: m.shared.name.clone(),
            message: super::signals::changed_warning(&restored),
        });
    }
    Some(done)
}

/// Calls a plugin's `check_config` on a thread of its own, waiting at most `within`. Only
/// `set_error` is honoured (`log` and `emit` go nowhere): checking must do nothing.
pub(super) fn check_config(
    check: abi::CheckConfigFn,
    config: Vec<u8>,
    name: &str,
    within: std::time::Duration,
) -> Result<(), String> {
    let limits = Limits {
        max_events_per_sample: 0,
        max_event_bytes: 0,
        ..Limits::default()
    };
    let shared = Arc::new(Shared::new(name, limits, ""));
    let api = Api::for_plugin(&shared);
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::Builder::new()
        .name(format!("check-{name}"))
        .spawn(move || {
            super::signals::block_in_this_thread();
            let api = api;
            // SAFETY: the API lives forever; the config is valid for the call.
            let status = unsafe { check(api.0, config.as_ptr(), config.len()) };
            super::signals::restore_agents();
            let _ = tx.send(status);
        })
        .map_err(|e| format!("cannot start a thread to check it: {e}"))?;
    match rx.recv_timeout(within) {
        Ok(abi::STATUS_OK) => Ok(()),
        Ok(_) => Err(shared
            .lock()
            .error
            .take()
            .unwrap_or_else(|| "its check_config refused the table and said nothing".into())),
        Err(_) => Err(format!("its check_config did not answer within {within:?}")),
    }
}
