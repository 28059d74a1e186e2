//! Plugin ABI v1 (1.6): the C-compatible contract between the agent and a plugin shared object.
//!
//! `proto/include/zpulse_plugin.h` states the same contract for C. Plugin authors writing Rust
//! use [`crate::sdk`] and never touch this module; it is public for the agent, for the SDK's
//! macro, and for anyone binding the ABI by hand.
//!
//! # The contract
//!
//! * A plugin exports one function, [`ENTRY_SYMBOL`] (`zpulse_plugin_entry`), taking nothing
//!   and returning a pointer to a static [`PluginDescriptor`]. Since 1.5 a shared object may
//!   instead hold several plugins (a *bundle*) and export [`BUNDLE_SYMBOL`]
//!   (`zpulse_plugin_bundle`): the descriptor at an index, null past the last (see
//!   [`BundleFn`]). Each plugin of a bundle is a plugin like any other (its own name, table
//!   and state); they share the file, and so one copy of their code and of the libraries
//!   linked into it, and one thread of the agent, which calls them one after another. A file
//!   exporting both symbols is refused.
//! * The descriptor starts with [`DescriptorHeader`] (ABI major, minor, struct size), which
//!   never changes, so that the agent can read the version of any plugin and refuse a different
//!   major with a message naming both. Minor versions only append fields: the agent reads
//!   nothing past `struct_size`.
//! * Only `#[repr(C)]` structs, integers, pointers and byte strings cross the boundary.
//!   Config, sample and event payloads are MessagePack (maps with named keys).
//! * **Nobody frees what the other side allocated.** Pointers handed to a function are valid
//!   for the duration of that call only; the receiver copies what it keeps. The descriptor and
//!   its strings are static. The plugin's `state` is the plugin's: only `destroy` frees it.
//! * `create`, `on_sample` and `destroy` of one state are never called concurrently. The
//!   agent runs the plugins of one file on one thread of their own, one call after another;
//!   when one hangs, the others go on on a new thread, so a state must not be tied to the
//!   thread that made it. Host callbacks are thread-safe, and their `ctx` and the
//!   [`HostApi`] stay valid for the life of the process.
//! * A failing call returns a non-zero [`Status`]; before returning it may call
//!   [`HostApi::set_error`] with the reason, which the agent reports with the failure.
//! * Nothing may unwind across the boundary (a Rust panic escaping `extern "C"` aborts the
//!   process): the SDK catches panics and returns [`STATUS_PANIC`].
//! * Since 1.1 the descriptor ends with [`PluginDescriptor::check_config`] (may be null) and
//!   [`PluginDescriptor::unread`]: the parts of the sample
//!   ([`PART_SNAPSHOT_DISKS`], …) the plugin never looks at, which the agent may leave out of
//!   the samples it sends that plugin. 0 (and every 1.0 plugin) gets the whole sample.
//! * Since 1.2 the descriptor ends with [`PluginDescriptor::report`] (may be null): the
//!   plugin's verdict over a whole window for `zpulse report` ([`crate::report`]), given
//!   through the host's [`HostApi::section`], which a 1.2 host appends to its API (check
//!   [`HostApi::struct_size`] before calling it).
//! * Since 1.4 the descriptor ends with [`PluginDescriptor::sample_layout`] and
//!   [`PluginDescriptor::on_sample_native`] (both may be null, and are in C): a Rust plugin
//!   built from the same `zpulse-proto` sources by the same compiler as the agent may be given
//!   the agent's own [`crate::Sample`] instead of its MessagePack encoding, when the two
//!   [`sample_layout`] fingerprints are equal (see there). Any other plugin gets MessagePack.
//! * Since 1.6 the descriptor ends with [`PluginDescriptor::on_event`] (may be null: the
//!   plugin takes no kernel events, and loads as before): one kernel event
//!   ([`crate::zevent::ZEvent`], MessagePack, at most [`ZEVENT_MAX_BYTES`]) as soon as the
//!   agent reads it from the kernel's queue, between samples. The plugin answers with
//!   [`HostApi::emit`], as in `on_sample`; events it emits carry the kernel event's time.
//! * The agent never unloads a plugin (`dlclose` is unsafe with thread-locals and threads), so
//!   a plugin's statics live as long as the process.

use std::ffi::c_void;

/// Incompatible changes bump the major: the agent refuses a plugin with another major.
pub const ABI_MAJOR: u32 = 1;
/// Compatible additions (fields appended to the descriptor or the host API, header flags)
/// bump the minor. 1.1: [`DESCRIPTOR_PANIC_ABORT`], [`PluginDescriptor::check_config`] and
/// [`PluginDescriptor::unread`]. 1.2: [`PluginDescriptor::report`] and [`HostApi::section`].
/// 1.3: the parts [`PART_ARC`], [`PART_POOL_CONFIGS`] and [`PART_POOL_RATES`].
/// 1.4: [`PluginDescriptor::sample_layout`] and [`PluginDescriptor::on_sample_native`].
/// 1.5: bundles, [`BUNDLE_SYMBOL`]. 1.6: [`PluginDescriptor::on_event`].
pub const ABI_MINOR: u32 = 6;

/// [`DescriptorHeader::flags`]: the plugin was built with `panic = "abort"`, so its first
/// panic would abort the whole agent instead of being caught at the boundary. The SDK sets
/// it (and `export_plugin!` refuses to compile such a plugin); the agent refuses to load one.
pub const DESCRIPTOR_PANIC_ABORT: u32 = 1;

/// Parts of the sample a plugin may declare it does not read ([`PluginDescriptor::unread`]).
/// A part left out is absent from the MessagePack map (an empty list or no value), exactly as
/// when the kernel did not report it; everything no bit names is always sent.
///
/// `snapshot.disks`: the block devices' absolute counters, sizes and pool roles.
pub const PART_SNAPSHOT_DISKS: u64 = 1 << 0;
/// `snapshot.pools[].txgs`: the transaction-group history.
pub const PART_TXGS: u64 = 1 << 1;
/// `histograms` of every vdev in `snapshot.pools[].config` (the rates keep their averages).
pub const PART_VDEV_HISTOGRAMS: u64 = 1 << 2;
/// `stats.raw` of every vdev in `snapshot.pools[].config` (an empty list when left out; the
/// named fields of `stats` stay).
pub const PART_VDEV_RAW_STATS: u64 = 1 << 3;
/// `disks`: the per-disk rates.
pub const PART_DISK_RATES: u64 = 1 << 4;
/// `snapshot.pools[].datasets`: the per-dataset kstats.
pub const PART_DATASETS: u64 = 1 << 5;
/// `net`, `snapshot.net`, `cpu` and `snapshot.cpu`: the host's network and CPU figures.
pub const PART_HOST_RATES: u64 = 1 << 6;
/// ABI 1.3: `arc` and `snapshot.arc`, the ARC's rates and its `arcstats` rows.
pub const PART_ARC: u64 = 1 << 7;
/// ABI 1.3: `config` of every pool in `snapshot.pools` (the vdev tree, scan, error count;
/// the pool's name, state, guid, `iostats`, `io`, txgs and datasets stay).
pub const PART_POOL_CONFIGS: u64 = 1 << 8;
/// ABI 1.3: `pools`, the per-pool and per-vdev rates.
pub const PART_POOL_RATES: u64 = 1 << 9;
/// Every part this ABI version defines.
///
/// A Rust plugin declares the parts it reads (`Plugin::READS`) among these; the SDK sends
/// the agent the complement. So a plugin that narrowed `READS` and is rebuilt against a newer
/// SDK must add the parts added since that it reads (each says the minor that added it): a C
/// plugin names what it does *not* read, and a part added later is sent to it.
pub const PARTS_KNOWN: u64 = (1 << 10) - 1;

/// The one symbol a plugin exports.
pub const ENTRY_SYMBOL: &std::ffi::CStr = c"zpulse_plugin_entry";

/// The entry point: returns the plugin's static descriptor.
pub type EntryFn = unsafe extern "C" fn() -> *const PluginDescriptor;

/// ABI 1.5: the symbol a bundle exports instead of [`ENTRY_SYMBOL`].
pub const BUNDLE_SYMBOL: &std::ffi::CStr = c"zpulse_plugin_bundle";

/// ABI 1.5, `zpulse_plugin_bundle(index)`: the static descriptor of the bundle's plugin at
/// `index` (from 0), or null for the first index past the last plugin. The agent asks 0, 1,
/// 2, … until null, and refuses a bundle that answers [`BUNDLE_MAX`] indexes without one.
/// The same index always gives the same descriptor.
pub type BundleFn = unsafe extern "C" fn(index: usize) -> *const PluginDescriptor;

/// The most plugins one bundle may hold: a bound on a bundle that never answers null.
pub const BUNDLE_MAX: usize = 64;

/// Return value of `create` and `on_sample`.
pub type Status = i32;
pub const STATUS_OK: Status = 0;
/// The call failed; the reason was given to `set_error`. The agent counts consecutive failures
/// and disables a plugin that keeps failing.
pub const STATUS_ERROR: Status = 1;
/// `create` only: the plugin's config table is invalid. The plugin is refused.
pub const STATUS_CONFIG: Status = 2;
/// The plugin panicked (or, in C, hit an internal bug); counted as a failure.
pub const STATUS_PANIC: Status = 3;

/// Return value of [`HostApi::emit`].
pub type EmitStatus = i32;
pub const EMIT_OK: EmitStatus = 0;
/// Not a valid event record (the agent reports the first one, with the reason).
pub const EMIT_INVALID: EmitStatus = 1;
/// Larger than the agent's size limit.
pub const EMIT_TOO_LARGE: EmitStatus = 2;
/// Over the per-sample event limit; dropped.
pub const EMIT_RATE_LIMITED: EmitStatus = 3;

/// Levels of [`HostApi::log`].
pub const LOG_ERROR: i32 = 1;
pub const LOG_WARN: i32 = 2;
pub const LOG_INFO: i32 = 3;
pub const LOG_DEBUG: i32 = 4;

/// A borrowed UTF-8 string: pointer and length in bytes, no terminating NUL needed.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StrRef {
    pub ptr: *const u8,
    pub len: usize,
}

impl StrRef {
    /// For statics in descriptors.
    pub const fn from_static(s: &'static str) -> StrRef {
        StrRef {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The bytes, copied: `None` when the pointer is null (with a non-zero length) or the
    /// bytes are not UTF-8.
    ///
    /// # Safety
    /// `ptr` must be null or point to `len` readable bytes.
    pub unsafe fn to_string_lossless(self) -> Option<String> {
        // SAFETY: the caller guarantees `ptr..ptr+len` is readable; `bytes` checks null.
        let b = unsafe { bytes(self.ptr, self.len) }?;
        String::from_utf8(b.to_vec()).ok()
    }
}

/// `ptr..ptr+len` as a slice; `None` for a null pointer unless `len` is 0.
///
/// # Safety
/// A non-null `ptr` must point to `len` bytes readable for the lifetime `'a`.
pub unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Option<&'a [u8]> {
    if len == 0 {
        return Some(&[]);
    }
    if ptr.is_null() || len > isize::MAX as usize {
        return None;
    }
    // SAFETY: non-null, length bounded by isize::MAX, readability guaranteed by the caller.
    Some(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The first 16 bytes of every descriptor, of every ABI version.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DescriptorHeader {
    pub abi_major: u32,
    pub abi_minor: u32,
    /// `sizeof` the descriptor the plugin was built with.
    pub struct_size: u32,
    /// `DESCRIPTOR_*` bits (ABI 1.1); 0 before. Unknown bits are ignored.
    pub flags: u32,
}

/// `create(host, config, config_len, out_state)`: build the plugin's state from its config
/// (a MessagePack map, the `[plugins.<name>]` table; an empty map when there is none) and
/// store it in `*out_state` (which may be null for a stateless plugin).
pub type CreateFn = unsafe extern "C" fn(
    host: *const HostApi,
    config: *const u8,
    config_len: usize,
    out_state: *mut *mut c_void,
) -> Status;

/// `on_sample(state, sample, sample_len)`: one [`crate::Sample`] as a MessagePack map.
pub type OnSampleFn =
    unsafe extern "C" fn(state: *mut c_void, sample: *const u8, sample_len: usize) -> Status;

/// `destroy(state)`: free the state. Called at most once, never concurrently with the others.
pub type DestroyFn = unsafe extern "C" fn(state: *mut c_void);

/// `check_config(host, config, config_len)` (ABI 1.1): whether `create` would accept this
/// config, without building any state or doing anything else: [`STATUS_OK`], or
/// [`STATUS_CONFIG`] with the reason given to `set_error`. `check-config` and a reload call
/// it before anything changes; only `set_error` may be used.
pub type CheckConfigFn =
    unsafe extern "C" fn(host: *const HostApi, config: *const u8, config_len: usize) -> Status;

/// `report(state, window, window_len)` (ABI 1.2): one [`crate::report::ReportWindow`] as a
/// MessagePack map, after the window's samples went through `on_sample`. The plugin answers
/// by calling [`HostApi::section`] once per conclusion (none is a valid answer). Called on
/// the plugin's thread like `on_sample`, within the same budget.
pub type ReportFn =
    unsafe extern "C" fn(state: *mut c_void, window: *const u8, window_len: usize) -> Status;

/// `sample_layout()` (ABI 1.4): the plugin's [`sample_layout`] fingerprint.
pub type SampleLayoutFn = unsafe extern "C" fn() -> u64;

/// `on_sample_native(state, sample)` (ABI 1.4): `sample` points to a [`crate::Sample`] laid
/// out as in the agent, which calls this only when its [`sample_layout`] equals the plugin's.
/// Valid, and not mutated, for the call; the plugin copies what it keeps. Every part of the
/// sample is there, the `unread` ones too: a plugin must not read meaning into their absence.
pub type OnSampleNativeFn =
    unsafe extern "C" fn(state: *mut c_void, sample: *const c_void) -> Status;

/// `on_event(state, event, event_len)` (ABI 1.6): one kernel event
/// ([`crate::zevent::ZEvent`]) as a MessagePack map, valid for the call. Called on the
/// plugin's thread between samples, never concurrently with its other calls, within the same
/// budget; events are given in the kernel's order (`eid`). A failure counts as one, like a
/// failing `on_sample`.
pub type OnEventFn =
    unsafe extern "C" fn(state: *mut c_void, event: *const u8, event_len: usize) -> Status;

/// The largest kernel event the agent hands `on_event`, in MessagePack bytes. The kernel
/// refuses to queue an event whose nvlist is larger than `ERPT_DATA_SZ` (OpenZFS `fm.c`,
/// `zfs_zevent_post`); the agent keeps the encoding of the fields it decoded within this.
pub const ZEVENT_MAX_BYTES: usize = 64 << 10;

/// What a plugin exports (ABI 1.6; a 1.0 descriptor ends before `check_config`, a 1.1 one
/// before `report`, a 1.2 or 1.3 one before `sample_layout`, a 1.4 or 1.5 one before
/// `on_event`). Function
/// pointers are `Option` so that a null one from C is a refused plugin, not undefined
/// behaviour. Read one with [`read_descriptor`], which knows every 1.x size.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PluginDescriptor {
    pub header: DescriptorHeader,
    /// `[A-Za-z0-9_-]`, 1–64 bytes: the key of the plugin's table, `[plugins.<name>]`.
    pub name: StrRef,
    /// The plugin's own version, free text up to 64 bytes (`0.3.1`).
    pub version: StrRef,
    /// For diagnostics only: what built it (`zpulse-plugin-x 0.3.1, zpulse-proto 0.1.0`).
    pub build_info: StrRef,
    pub create: Option<CreateFn>,
    pub on_sample: Option<OnSampleFn>,
    pub destroy: Option<DestroyFn>,
    /// ABI 1.1; absent (and read as `None`) in a 1.0 descriptor.
    pub check_config: Option<CheckConfigFn>,
    /// ABI 1.1: `PART_*` bits of the sample this plugin does not read; the agent may leave
    /// them out of its samples. 0 = send everything (and absent, read as 0, in a 1.0
    /// descriptor). Unknown bits are ignored.
    pub unread: u64,
    /// ABI 1.2; absent (and read as `None`: the plugin adds nothing to reports) before.
    pub report: Option<ReportFn>,
    /// ABI 1.4, with `on_sample_native`; `None` (C plugins, older ones): MessagePack only.
    pub sample_layout: Option<SampleLayoutFn>,
    /// ABI 1.4: `on_sample` over the agent's own sample, when the layouts agree.
    pub on_sample_native: Option<OnSampleNativeFn>,
    /// ABI 1.6: kernel events as they arrive; `None` (and absent before 1.6): the plugin
    /// takes none.
    pub on_event: Option<OnEventFn>,
}

/// The size of an ABI 1.0 descriptor: everything before `check_config`.
pub const DESCRIPTOR_SIZE_1_0: usize = std::mem::offset_of!(PluginDescriptor, check_config);

/// Copies a descriptor of any 1.x size: as much of it as the plugin has, over a zeroed one,
/// so that the fields an older plugin does not have take their 1.0 meaning (`check_config`
/// `None`, `unread` 0: the whole sample).
///
/// # Safety
/// `descriptor` must point to a descriptor whose header passed [`check_header`]: at least
/// `header.struct_size` readable bytes.
pub unsafe fn read_descriptor(descriptor: *const PluginDescriptor) -> PluginDescriptor {
    // SAFETY: the header is the first field of every version and the caller checked it.
    let size = unsafe { (*descriptor.cast::<DescriptorHeader>()).struct_size } as usize;
    let n = size.min(std::mem::size_of::<PluginDescriptor>());
    let mut d = std::mem::MaybeUninit::<PluginDescriptor>::zeroed();
    // SAFETY: the plugin's static descriptor has `size` readable bytes (at least the 1.0
    // size, checked by `check_header`); `n` of them are copied over a zeroed descriptor.
    // Every field is an integer, a pointer or an `Option` of a function pointer, for which
    // all-zero is valid (`None`, empty), so the result is a valid descriptor.
    unsafe {
        std::ptr::copy_nonoverlapping(descriptor.cast::<u8>(), d.as_mut_ptr().cast::<u8>(), n);
        d.assume_init()
    }
}

// SAFETY: a descriptor is immutable static data: its pointers refer to static strings and
// functions, which any thread may read.
unsafe impl Sync for PluginDescriptor {}

/// `log(ctx, level, message, len)`: one line of UTF-8 (LOG_* level).
pub type LogFn = unsafe extern "C" fn(ctx: *mut c_void, level: i32, msg: *const u8, len: usize);
/// `emit(ctx, record, len)`: one event record as MessagePack; the host copies it.
pub type EmitFn =
    unsafe extern "C" fn(ctx: *mut c_void, event: *const u8, len: usize) -> EmitStatus;
/// `set_error(ctx, message, len)`: why the current call is about to fail.
pub type SetErrorFn = unsafe extern "C" fn(ctx: *mut c_void, msg: *const u8, len: usize);
/// `section(ctx, section, len)` (ABI 1.2): one [`crate::report::Section`] as MessagePack,
/// during `report` only; the host copies it. [`EMIT_INVALID`], [`EMIT_TOO_LARGE`] or
/// [`EMIT_RATE_LIMITED`] (more than [`crate::report::SECTIONS_PER_PLUGIN`]) when refused.
pub type SectionFn =
    unsafe extern "C" fn(ctx: *mut c_void, section: *const u8, len: usize) -> EmitStatus;

/// What the agent passes to `create`. Valid, with its `ctx`, for the life of the process.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HostApi {
    pub abi_major: u32,
    pub abi_minor: u32,
    /// `sizeof` the struct the host was built with; fields past it are absent.
    pub struct_size: u32,
    pub reserved: u32,
    pub ctx: *mut c_void,
    pub log: LogFn,
    pub emit: EmitFn,
    pub set_error: SetErrorFn,
    /// ABI 1.2: `None` from an older host, whose struct ends before it.
    pub section: Option<SectionFn>,
}

impl HostApi {
    /// The host API of this ABI version (its major, minor and size filled in) over `ctx`.
    pub fn new(
        ctx: *mut c_void,
        log: LogFn,
        emit: EmitFn,
        set_error: SetErrorFn,
        section: SectionFn,
    ) -> HostApi {
        HostApi {
            abi_major: ABI_MAJOR,
            abi_minor: ABI_MINOR,
            struct_size: std::mem::size_of::<HostApi>() as u32,
            reserved: 0,
            ctx,
            log,
            emit,
            set_error,
            section: Some(section),
        }
    }
}

/// The size of an ABI 1.0 and 1.1 host API: everything before `section`.
pub const HOST_API_SIZE_1_1: usize = std::mem::offset_of!(HostApi, section);

/// Why a descriptor header is refused, in words naming both versions.
pub fn check_header(h: &DescriptorHeader) -> Result<(), String> {
    if h.abi_major != ABI_MAJOR {
        return Err(format!(
            "plugin ABI {}.{}, but this agent speaks ABI {ABI_MAJOR}.{ABI_MINOR}: rebuild the \
             plugin against a zpulse-proto with ABI {ABI_MAJOR}",
            h.abi_major, h.abi_minor
        ));
    }
    let need = DESCRIPTOR_SIZE_1_0;
    if (h.struct_size as usize) < need {
        return Err(format!(
            "plugin descriptor is {} bytes, ABI {ABI_MAJOR}.0 needs at least {need}",
            h.struct_size
        ));
    }
    Ok(())
}

/// The sources that define [`crate::Sample`] and every type inside it: the `snapshot` and
/// `sample` modules (their unit tests excepted). A test keeps the list equal to the files.
macro_rules! model_sources {
    ($($path:literal),* $(,)?) => {
        /// The model's files, relative to `proto/src`, for the test that keeps them listed.
        #[cfg(test)]
        const MODEL_FILES: &[&str] = &[$($path),*];
        /// FNV-1a of every model file, computed by the compiler: no source is in the binary.
        const MODEL_HASH: u64 = {
            let mut h = FNV_OFFSET;
            $( h = fnv1a(h, include_bytes!($path)); )*
            h
        };
    };
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

const fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

model_sources!(
    "sample/arc.rs",
    "sample/disk.rs",
    "sample/host.rs",
    "sample/mod.rs",
    "sample/parts.rs",
    "sample/pool.rs",
    "sample/shared.rs",
    "sample/stream.rs",
    "sample/vdev.rs",
    "snapshot/disk.rs",
    "snapshot/host.rs",
    "snapshot/kstat.rs",
    "snapshot/mod.rs",
    "snapshot/pool.rs",
    "snapshot/tagged.rs",
    "snapshot/tunables.rs",
    "snapshot/vdev.rs",
    "snapshot/zfs.rs",
);

/// ABI 1.4: a fingerprint of how this build lays out [`crate::Sample`] in memory. Two builds
/// with the same fingerprint may hand each other a `&Sample`
/// ([`PluginDescriptor::on_sample_native`]); it is never 0.
///
/// A type's layout is a function of its definition, the compiler and the target (stable Rust
/// has no flag that changes it), so the fingerprint hashes exactly those: the model's source
/// text; the `TypeId`s of the standard library's types the model is made of, which name the
/// standard library linked, so its compiler, version and target (the compiler mixes its
/// version into every crate's id); and the size and alignment of `Sample` and its largest
/// parts. Not the `TypeId` of `Sample` itself: it also hashes how cargo built this crate, which
/// differs between an agent and its plugins built together (thin LTO compiles the crate once
/// for the binary and once, bitcode only, for the plugins). A plugin built by another compiler
/// or from other model sources gets MessagePack.
pub fn sample_layout() -> u64 {
    use std::hash::{Hash, Hasher};
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0 = fnv1a(self.0, bytes);
        }
    }
    use std::any::TypeId;
    use std::collections::BTreeMap;
    use std::mem::{align_of, size_of};
    let mut h = Fnv(MODEL_HASH);
    for std_type in [
        TypeId::of::<String>(),
        TypeId::of::<Vec<u64>>(),
        TypeId::of::<Option<f64>>(),
        TypeId::of::<BTreeMap<String, u64>>(),
    ] {
        std_type.hash(&mut h);
    }
    for (size, align) in [
        (size_of::<crate::Sample>(), align_of::<crate::Sample>()),
        (size_of::<crate::Snapshot>(), align_of::<crate::Snapshot>()),
        (
            size_of::<crate::snapshot::Pool>(),
            align_of::<crate::snapshot::Pool>(),
        ),
        (
            size_of::<crate::snapshot::Vdev>(),
            align_of::<crate::snapshot::Vdev>(),
        ),
        (
            size_of::<crate::snapshot::Disk>(),
            align_of::<crate::snapshot::Disk>(),
        ),
    ] {
        (size, align).hash(&mut h);
    }
    h.finish().max(1)
}

/// A plugin name is a TOML bare key and a check name: `[A-Za-z0-9_-]`, 1–64 bytes.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "plugin name {name:?}: give 1 to 64 characters of A-Z a-z 0-9 _ -"
        ));
    }
    Ok(())
}

// The layouts the C header states, on the 64-bit systems zpulse supports.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<DescriptorHeader>() == 16);
    assert!(size_of::<StrRef>() == 16);
    assert!(offset_of!(PluginDescriptor, name) == 16);
    assert!(offset_of!(PluginDescriptor, version) == 32);
    assert!(offset_of!(PluginDescriptor, build_info) == 48);
    assert!(offset_of!(PluginDescriptor, create) == 64);
    assert!(offset_of!(PluginDescriptor, on_sample) == 72);
    assert!(offset_of!(PluginDescriptor, destroy) == 80);
    // ABI 1.0 ends here; 1.1 appends check_config, then unread.
    assert!(DESCRIPTOR_SIZE_1_0 == 88);
    assert!(offset_of!(PluginDescriptor, check_config) == 88);
    assert!(offset_of!(PluginDescriptor, unread) == 96);
    // 1.2 appends report.
    assert!(offset_of!(PluginDescriptor, report) == 104);
    // 1.4 appends sample_layout and on_sample_native.
    assert!(offset_of!(PluginDescriptor, sample_layout) == 112);
    assert!(offset_of!(PluginDescriptor, on_sample_native) == 120);
    // 1.6 appends on_event.
    assert!(offset_of!(PluginDescriptor, on_event) == 128);
    assert!(size_of::<PluginDescriptor>() == 136);
    assert!(offset_of!(HostApi, ctx) == 16);
    assert!(offset_of!(HostApi, log) == 24);
    assert!(offset_of!(HostApi, emit) == 32);
    assert!(offset_of!(HostApi, set_error) == 40);
    assert!(offset_of!(HostApi, section) == 48);
    assert!(size_of::<HostApi>() == 56);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_major_is_refused_naming_both_versions() {
        let h = DescriptorHeader {
            abi_major: 2,
            abi_minor: 3,
            struct_size: 200,
            flags: 0,
        };
        let err = check_header(&h).unwrap_err();
        let agent = format!("ABI {ABI_MAJOR}.{ABI_MINOR}");
        assert!(err.contains("ABI 2.3") && err.contains(&agent), "{err}");
        let small = DescriptorHeader {
            abi_major: 1,
            abi_minor: 0,
            struct_size: 40,
            flags: 0,
        };
        assert!(check_header(&small).unwrap_err().contains("40 bytes"));
        // A 1.0 descriptor (88 bytes, no `check_config` nor `unread`) is still accepted.
        let one_zero = DescriptorHeader {
            abi_major: 1,
            abi_minor: 0,
            struct_size: 88,
            flags: 0,
        };
        assert!(check_header(&one_zero).is_ok());
        let newer_minor = DescriptorHeader {
            abi_major: 1,
            abi_minor: 7,
            struct_size: 120,
            flags: 0,
        };
        assert!(check_header(&newer_minor).is_ok());
    }

    unsafe extern "C" fn report_nothing(_: *mut c_void, _: *const u8, _: usize) -> Status {
        STATUS_OK
    }

    unsafe extern "C" fn accept_any(_: *const HostApi, _: *const u8, _: usize) -> Status {
        STATUS_OK
    }

    /// A descriptor whose 1.1 fields are set, as a 1.1 plugin would export it, claiming
    /// `struct_size` bytes.
    fn descriptor_claiming(struct_size: u32) -> PluginDescriptor {
        PluginDescriptor {
            header: DescriptorHeader {
                abi_major: 1,
                abi_minor: 0,
                struct_size,
                flags: 0,
            },
            name: StrRef::from_static("old"),
            version: StrRef::from_static("1"),
            build_info: StrRef::from_static(""),
            create: None,
            on_sample: None,
            destroy: None,
            check_config: Some(accept_any),
            unread: PART_TXGS,
            report: Some(report_nothing),
            sample_layout: Some(layout_of_this_build),
            on_sample_native: None,
            on_event: Some(event_ignored),
        }
    }

    unsafe extern "C" fn event_ignored(_: *mut c_void, _: *const u8, _: usize) -> Status {
        STATUS_OK
    }

    unsafe extern "C" fn layout_of_this_build() -> u64 {
        sample_layout()
    }

    #[test]
    fn a_descriptor_is_read_only_as_far_as_its_size_says() {
        // 1.0 (88 bytes): nothing past `destroy` is read, whatever lies there.
        let old = descriptor_claiming(88);
        assert!(check_header(&old.header).is_ok());
        // SAFETY: `old` is a live descriptor of at least the 88 bytes its header claims.
        let d = unsafe { read_descriptor(&raw const old) };
        assert!(d.check_config.is_none(), "a 1.0 plugin has no check_config");
        assert_eq!(d.unread, 0, "a 1.0 plugin gets the whole sample");
        // SAFETY: a static string.
        assert_eq!(
            unsafe { d.name.to_string_lossless() }.as_deref(),
            Some("old")
        );
        // 96 bytes: check_config but not unread.
        let middle = descriptor_claiming(96);
        // SAFETY: as above, 96 bytes.
        let d = unsafe { read_descriptor(&raw const middle) };
        assert!(d.check_config.is_some());
        assert_eq!(d.unread, 0);
        // The whole 1.1 descriptor: both its fields, no report.
        let one_one = descriptor_claiming(104);
        // SAFETY: as above, 104 bytes.
        let d = unsafe { read_descriptor(&raw const one_one) };
        assert!(d.check_config.is_some());
        assert_eq!(d.unread, PART_TXGS);
        assert!(d.report.is_none(), "a 1.1 plugin has no report");
        // 1.2 and 1.3 (112 bytes): report, but no native sample.
        let one_two = descriptor_claiming(112);
        // SAFETY: as above, 112 bytes.
        let d = unsafe { read_descriptor(&raw const one_two) };
        assert!(d.report.is_some());
        assert!(d.sample_layout.is_none(), "a 1.3 plugin gets MessagePack");
        // 1.4 and 1.5 (128 bytes): the native sample, but no kernel events.
        let one_five = descriptor_claiming(128);
        // SAFETY: as above, 128 bytes.
        let d = unsafe { read_descriptor(&raw const one_five) };
        assert!(d.sample_layout.is_some());
        assert!(d.on_event.is_none(), "a 1.5 plugin takes no kernel events");
        // 1.6, and a larger one from a newer minor: every field.
        for size in [136, 160] {
            let new = descriptor_claiming(size);
            // SAFETY: only size_of::<PluginDescriptor>() bytes are read, which `new` has.
            let d = unsafe { read_descriptor(&raw const new) };
            assert!(d.check_config.is_some());
            assert_eq!(d.unread, PART_TXGS);
            assert!(d.report.is_some());
            assert!(d.sample_layout.is_some());
            assert!(d.on_event.is_some());
        }
    }

    /// Every file of the `snapshot` and `sample` modules is in the fingerprint (a type of the
    /// sample defined in a file left out could change without changing it), and nothing else.
    #[test]
    fn the_sample_layout_hashes_every_model_file() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        for dir in ["sample", "snapshot"] {
            for entry in std::fs::read_dir(src.join(dir)).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                if name.ends_with(".rs") && name != "tests.rs" {
                    found.push(format!("{dir}/{name}"));
                }
            }
        }
        found.sort();
        assert_eq!(found, MODEL_FILES);
    }

    /// The fingerprint is the same for every caller in one build, is never 0 (0 would read as
    /// a plugin without one), and moves when any model byte does.
    #[test]
    fn the_sample_layout_changes_with_the_model_source() {
        assert_eq!(sample_layout(), sample_layout());
        assert_ne!(sample_layout(), 0);
        let one = fnv1a(FNV_OFFSET, b"pub struct Sample { pub start: f64 }");
        let other = fnv1a(FNV_OFFSET, b"pub struct Sample { pub start: f32 }");
        assert_ne!(one, other);
        // FNV-1a 64's published test vector: "a" hashes to 0xaf63dc4c8601ec8c.
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn names_are_toml_bare_keys() {
        assert!(check_name("hdd-saturation_2").is_ok());
        for bad in ["", "a.b", "a b", "é", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn null_pointers_are_not_slices() {
        // SAFETY: null and zero-length inputs are exactly what `bytes` must survive.
        unsafe {
            assert_eq!(bytes(std::ptr::null(), 0), Some(&[][..]));
            assert_eq!(bytes(std::ptr::null(), 3), None);
            let s = StrRef {
                ptr: std::ptr::null(),
                len: 1,
            };
            assert_eq!(s.to_string_lossless(), None);
            assert_eq!(
                StrRef::from_static("tmpl").to_string_lossless().as_deref(),
                Some("tmpl")
            );
        }
    }

    /// The C header states the same version and part bits as this module: a `#define` that
    /// drifts from its Rust constant (or a part only one side has) fails here.
    #[test]
    fn the_c_header_defines_the_same_version_and_parts() {
        let header = include_str!("../include/zpulse_plugin.h");
        let define = |name: &str| -> Option<String> {
            header.lines().find_map(|l| {
                let rest = l.strip_prefix("#define ")?.strip_prefix(name)?;
                rest.starts_with(' ').then(|| rest.trim().to_string())
            })
        };
        assert_eq!(define("ZPULSE_ABI_MAJOR"), Some(ABI_MAJOR.to_string()));
        assert_eq!(define("ZPULSE_ABI_MINOR"), Some(ABI_MINOR.to_string()));
        let quoted = |c: &std::ffi::CStr| Some(format!("{:?}", c.to_str().unwrap()));
        assert_eq!(define("ZPULSE_ENTRY_SYMBOL"), quoted(ENTRY_SYMBOL));
        assert_eq!(define("ZPULSE_BUNDLE_SYMBOL"), quoted(BUNDLE_SYMBOL));
        assert_eq!(define("ZPULSE_BUNDLE_MAX"), Some(BUNDLE_MAX.to_string()));
        let parts = [
            ("SNAPSHOT_DISKS", PART_SNAPSHOT_DISKS),
            ("TXGS", PART_TXGS),
            ("VDEV_HISTOGRAMS", PART_VDEV_HISTOGRAMS),
            ("VDEV_RAW_STATS", PART_VDEV_RAW_STATS),
            ("DISK_RATES", PART_DISK_RATES),
            ("DATASETS", PART_DATASETS),
            ("HOST_RATES", PART_HOST_RATES),
            ("ARC", PART_ARC),
            ("POOL_CONFIGS", PART_POOL_CONFIGS),
            ("POOL_RATES", PART_POOL_RATES),
        ];
        let mut all = 0;
        for (name, bit) in parts {
            let value = define(&format!("ZPULSE_PART_{name}")).unwrap_or_default();
            // `(1ULL << N)   /* comment */`
            let shift: u32 = value
                .strip_prefix("(1ULL << ")
                .and_then(|v| v.split(')').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("ZPULSE_PART_{name} is not (1ULL << N): {value:?}"));
            assert_eq!(1u64 << shift, bit, "ZPULSE_PART_{name}");
            all |= bit;
        }
        assert_eq!(
            all, PARTS_KNOWN,
            "every known part has a name on both sides"
        );
        let in_header = header.matches("#define ZPULSE_PART_").count();
        assert_eq!(
            in_header,
            parts.len(),
            "the header defines no part Rust lacks"
        );
    }
}
