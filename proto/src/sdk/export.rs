//! The `extern "C"` functions behind [`crate::export_plugin!`]: every one catches panics, so
//! nothing unwinds into the agent, and turns errors into a status plus `set_error`.

use super::{Host, Plugin, config, decode_sample_into, decode_window};
use crate::abi::{self, HostApi, PluginDescriptor, Status, StrRef};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

/// The descriptor of plugin `P`, built at compile time into a static.
pub const fn descriptor<P: Plugin>(build_info: &'static str) -> PluginDescriptor {
    PluginDescriptor {
        header: abi::DescriptorHeader {
            abi_major: abi::ABI_MAJOR,
            abi_minor: abi::ABI_MINOR,
            struct_size: std::mem::size_of::<PluginDescriptor>() as u32,
            // One panic strategy for the whole build: this crate's is the plugin's.
            flags: if cfg!(panic = "abort") {
                abi::DESCRIPTOR_PANIC_ABORT
            } else {
                0
            },
        },
        name: StrRef::from_static(P::NAME),
        version: StrRef::from_static(P::VERSION),
        build_info: StrRef::from_static(build_info),
        create: Some(create::<P>),
        on_sample: Some(on_sample::<P>),
        destroy: Some(destroy::<P>),
        check_config: Some(check_config::<P>),
        unread: abi::PARTS_KNOWN & !P::READS,
        report: Some(report::<P>),
        sample_layout: Some(sample_layout),
        on_sample_native: Some(on_sample_native::<P>),
        on_event: if P::TAKES_EVENTS {
            Some(on_event::<P>)
        } else {
            None
        },
    }
}

/// This build's [`abi::sample_layout`], which the agent compares with its own.
unsafe extern "C" fn sample_layout() -> u64 {
    abi::sample_layout()
}

/// Decodes the config and validates it as `create` would ([`Plugin::validate`]), building
/// nothing.
unsafe extern "C" fn check_config<P: Plugin>(
    host: *const HostApi,
    config: *const u8,
    config_len: usize,
) -> Status {
    // SAFETY: the agent passes a HostApi valid for the call at least (ABI contract).
    let Some(host) = (unsafe { Host::from_raw(host) }) else {
        return abi::STATUS_ERROR;
    };
    // SAFETY: the agent passes `config_len` readable bytes, valid for this call.
    let Some(config) = (unsafe { abi::bytes(config, config_len) }) else {
        host.set_error("check_config was called with a null config");
        return abi::STATUS_CONFIG;
    };
    let checked = catching(|| {
        let config = config::decode::<P::Config>(config)?;
        P::validate(config).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|(_, why)| Err(why));
    match checked {
        Ok(()) => abi::STATUS_OK,
        Err(message) => {
            host.set_error(&message);
            abi::STATUS_CONFIG
        }
    }
}

/// What `create` hands back as the opaque state.
struct Instance<P> {
    plugin: P,
    host: Host,
    /// The previous sample, which the next one is decoded into (see [`decode_sample_into`]).
    sample: Option<crate::Sample>,
}

/// The text of a panic payload (`panic!("…")` gives `&str` or `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

thread_local! {
    /// Whether this thread is inside a call the SDK catches panics of.
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic caught in a call happened (`src/lib.rs:39:9`).
    static PANICKED_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs, once per copy of the standard library, a panic hook that keeps quiet about
/// panics the SDK catches: the agent logs each as one line naming the plugin (`plugin X:
/// on_sample panicked: …`), and the default hook would add a multi-line message (a backtrace
/// under `RUST_BACKTRACE`) under a thread name the plugin's copy of std does not know. Any
/// other panic, such as a failing assertion in a plugin's own tests, goes to the hook that
/// was there before.
fn quiet_caught_panics() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if IN_CALL.with(Cell::get) {
                let at = info.location().map(|l| l.to_string());
                PANICKED_AT.with(|p| *p.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// `f`, with a panic caught (and kept quiet: [`quiet_caught_panics`]) as its reason and
/// status.
fn catching<R>(f: impl FnOnce() -> R) -> Result<R, (Status, String)> {
    quiet_caught_panics();
    let outer = IN_CALL.with(|c| c.replace(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    IN_CALL.with(|c| c.set(outer));
    result.map_err(panicked)
}

/// The reason and status of a caught panic: its message and where it happened, on one line.
/// The payload is leaked rather than dropped: a payload whose destructor panics would
/// otherwise unwind out of `extern "C"` and abort.
fn panicked(payload: Box<dyn Any + Send>) -> (Status, String) {
    let text = panic_message(&*payload);
    // A message of several lines is still one log line.
    let text = text.lines().collect::<Vec<_>>().join(" / ");
    let message = match PANICKED_AT.with(|p| p.borrow_mut().take()) {
        Some(at) => format!("panicked: {text} (at {at})"),
        None => format!("panicked: {text}"),
    };
    std::mem::forget(payload);
    (abi::STATUS_PANIC, message)
}

unsafe extern "C" fn create<P: Plugin>(
    host: *const HostApi,
    config: *const u8,
    config_len: usize,
    out_state: *mut *mut c_void,
) -> Status {
    // SAFETY: the agent passes a HostApi valid for the process's lifetime (ABI contract).
    let Some(host) = (unsafe { Host::from_raw(host) }) else {
        return abi::STATUS_ERROR;
    };
    if out_state.is_null() {
        host.set_error("create was called without a place for the state");
        return abi::STATUS_ERROR;
    }
    // SAFETY: the agent passes `config_len` readable bytes, valid for this call.
    let Some(config) = (unsafe { abi::bytes(config, config_len) }) else {
        host.set_error("create was called with a null config");
        return abi::STATUS_CONFIG;
    };
    let built = catching(|| {
        let refused = |e: String| (abi::STATUS_CONFIG, e);
        // The one validation check_config runs, on a copy decoded for it: a config it
        // refuses is refused here with the same words, as a config error.
        P::validate(config::decode::<P::Config>(config).map_err(refused)?)
            .map_err(|e| refused(e.to_string()))?;
        let config = config::decode::<P::Config>(config).map_err(refused)?;
        P::new(config, &host).map_err(|e| (abi::STATUS_ERROR, e.to_string()))
    })
    .unwrap_or_else(Err);
    match built {
        Ok(plugin) => {
            let state = Box::into_raw(Box::new(Instance {
                plugin,
                host,
                sample: None,
            }));
            // SAFETY: checked non-null above; the agent provides a writable pointer.
            unsafe { *out_state = state.cast() };
            abi::STATUS_OK
        }
        Err((status, message)) => {
            host.set_error(&message);
            status
        }
    }
}

unsafe extern "C" fn on_sample<P: Plugin>(
    state: *mut c_void,
    sample: *const u8,
    sample_len: usize,
) -> Status {
    // SAFETY: the agent passes `sample_len` readable bytes, valid for this call.
    let bytes = unsafe { abi::bytes(sample, sample_len) };
    // SAFETY: the agent's state, as `call` requires.
    unsafe {
        call::<P, _>(state, bytes, "on_sample", |instance, bytes| {
            let sample = decode_sample_into(bytes, &mut instance.sample)?;
            Ok(instance.plugin.on_sample(sample, &instance.host)?)
        })
    }
}

/// `on_sample` over the agent's own sample: nothing to decode.
unsafe extern "C" fn on_sample_native<P: Plugin>(
    state: *mut c_void,
    sample: *const c_void,
) -> Status {
    // SAFETY: the agent calls this only with a `Sample` of this build's layout (the
    // fingerprints are equal), alive and unchanged for the call; null is refused by `as_ref`.
    let sample = unsafe { sample.cast::<crate::Sample>().as_ref() };
    // SAFETY: the agent's state, as `call` requires.
    unsafe {
        call::<P, _>(state, sample, "on_sample_native", |instance, sample| {
            Ok(instance.plugin.on_sample(sample, &instance.host)?)
        })
    }
}

unsafe extern "C" fn on_event<P: Plugin>(
    state: *mut c_void,
    event: *const u8,
    event_len: usize,
) -> Status {
    // SAFETY: the agent passes `event_len` readable bytes, valid for this call.
    let bytes = unsafe { abi::bytes(event, event_len) };
    // SAFETY: the agent's state, as `call` requires.
    unsafe {
        call::<P, _>(state, bytes, "on_event", |instance, bytes| {
            let event = crate::zevent::ZEvent::from_msgpack(bytes)?;
            Ok(instance.plugin.on_event(&event, &instance.host)?)
        })
    }
}

unsafe extern "C" fn report<P: Plugin>(
    state: *mut c_void,
    window: *const u8,
    window_len: usize,
) -> Status {
    // SAFETY: the agent passes `window_len` readable bytes, valid for this call.
    let bytes = unsafe { abi::bytes(window, window_len) };
    // SAFETY: the agent's state, as `call` requires.
    unsafe {
        call::<P, _>(state, bytes, "report", |instance, bytes| {
            let window = decode_window(bytes)?;
            Ok(instance.plugin.report(&window, &instance.host)?)
        })
    }
}

/// Why a call failed: a message for `set_error`, from the decoding or the plugin.
struct Failed(String);

impl From<String> for Failed {
    fn from(message: String) -> Failed {
        Failed(message)
    }
}

impl From<super::Error> for Failed {
    fn from(e: super::Error) -> Failed {
        Failed(e.to_string())
    }
}

/// One call on a live state with one argument (`on_sample`'s and `report`'s MessagePack, the
/// native sample; `None` when the agent passed a null pointer): the plugin's method run,
/// panics caught, errors given to `set_error`.
///
/// # Safety
/// `state` must be null or the live `Instance<P>` this plugin's `create` returned, called
/// from one thread at a time.
unsafe fn call<P: Plugin, A>(
    state: *mut c_void,
    arg: Option<A>,
    what: &str,
    run: impl FnOnce(&mut Instance<P>, A) -> Result<(), Failed>,
) -> Status {
    if state.is_null() {
        return abi::STATUS_ERROR;
    }
    // SAFETY: a non-null state is the `Instance<P>` this plugin's `create` returned, not yet
    // destroyed, and the agent never calls one state concurrently: the borrow is exclusive.
    let instance = unsafe { &mut *state.cast::<Instance<P>>() };
    let Some(arg) = arg else {
        instance
            .host
            .set_error(&format!("{what} was called with a null argument"));
        return abi::STATUS_ERROR;
    };
    let result =
        catching(|| run(instance, arg).map_err(|Failed(message)| (abi::STATUS_ERROR, message)))
            .unwrap_or_else(|panic| {
                // A panic may have left the reused sample half decoded: the next is decoded afresh.
                instance.sample = None;
                Err(panic)
            });
    match result {
        Ok(()) => abi::STATUS_OK,
        Err((status, message)) => {
            instance.host.set_error(&message);
            status
        }
    }
}

unsafe extern "C" fn destroy<P: Plugin>(state: *mut c_void) {
    if state.is_null() {
        return;
    }
    // SAFETY: a non-null state is the box `create` leaked; the agent destroys it once.
    let instance = unsafe { Box::from_raw(state.cast::<Instance<P>>()) };
    // A panic in a destructor has nobody to be reported to: caught, and quiet.
    let _ = catching(move || drop(instance));
}
