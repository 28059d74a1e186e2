//! Finding plugin files and opening them: the file is opened once and everything is checked
//! on that descriptor (ownership and permissions of it and its directories, then that it is
//! a complete ELF shared object for this machine); then that same descriptor is loaded
//! (`dlopen("/proc/self/fd/N")` on Linux, `fdlopen` on FreeBSD) with
//! `RTLD_NOW | RTLD_LOCAL`, and the descriptor's version is read before anything else in it.
//! A file holds one plugin (`zpulse_plugin_entry`) or a bundle of them (ABI 1.5,
//! `zpulse_plugin_bundle`), each read and checked on its own.
//!
//! Libraries are leaked on purpose: a plugin is never unloaded (`dlclose` with live
//! thread-locals or threads crashes or is a no-op, depending on the libc), so its code and
//! statics live as long as the process.

use super::{elf, perms};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use zpulse_proto::abi::{
    self, BundleFn, CreateFn, DescriptorHeader, DestroyFn, EntryFn, OnSampleFn, PluginDescriptor,
    StrRef,
};

/// Where to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// Every `*.so` in it; `required` = a missing directory is a problem to report.
    Dir {
        path: PathBuf,
        required: bool,
    },
    File(PathBuf),
}

/// The plugin files to load, in order (directories sorted by file name), and the directories
/// that could not be read.
pub(super) fn discover(sources: &[Source]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for source in sources {
        match source {
            Source::File(path) => files.push(path.clone()),
            Source::Dir { path, required } => match std::fs::read_dir(path) {
                Ok(entries) => {
                    let mut found: Vec<PathBuf> = entries
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "so"))
                        .collect();
                    found.sort();
                    files.extend(found);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {}
                Err(e) => problems.push((path.clone(), e.to_string())),
            },
        }
    }
    // The same file named twice (in a directory and in `paths`) is loaded once.
    let mut seen = std::collections::HashSet::new();
    files.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    (files, problems)
}

/// The plugin's functions, copied out of its descriptor.
#[derive(Clone, Copy)]
pub(super) struct Calls {
    pub create: CreateFn,
    pub on_sample: OnSampleFn,
    pub destroy: DestroyFn,
    /// The parts of the sample it does not read (ABI 1.1; 0 for 1.0).
    pub unread: u64,
    /// ABI 1.2: its conclusions over a window, for `zpulse report`.
    pub report: Option<abi::ReportFn>,
    /// ABI 1.4: its layout fingerprint and `on_sample` over the agent's own sample, used
    /// when the fingerprint is the agent's (asked on the plugin's thread, after `create`).
    pub native: Option<(abi::SampleLayoutFn, abi::OnSampleNativeFn)>,
    /// ABI 1.6: kernel events as they are read; `None`: the plugin takes none.
    pub on_event: Option<abi::OnEventFn>,
}

/// An opened plugin, before `create`.
pub(super) struct Opened {
    pub name: String,
    pub version: String,
    pub build_info: String,
    pub abi: (u32, u32),
    pub calls: Calls,
    /// ABI 1.1: checks a config without creating anything.
    pub check_config: Option<abi::CheckConfigFn>,
}

/// Why a file was refused, with what could be learnt before refusing it.
pub(super) struct Refusal {
    pub abi: Option<(u32, u32)>,
    pub reason: String,
}

impl From<String> for Refusal {
    fn from(reason: String) -> Refusal {
        Refusal { abi: None, reason }
    }
}

/// Checks and loads one plugin file and reads what it holds: one plugin, or each plugin of a
/// bundle (ABI 1.5), in the bundle's order. `Err` refuses the whole file; an `Err` in the list
/// refuses that plugin of the bundle only.
pub(super) fn open(path: &Path, euid: u32) -> Result<Vec<Result<Opened, Refusal>>, Refusal> {
    // Before dlopen: loading runs the library's initialisers, so the trust decision comes first.
    let file = perms::open_checked(path, euid)?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot stat it: {e}"))?
        .len();
    let mut head = vec![0; elf::HEAD_BYTES.min(len as usize)];
    file.read_exact_at(&mut head, 0)
        .map_err(|e| format!("cannot read it: {e}"))?;
    elf::check(&head, len)?;
    let library = load_descriptor(file)?;
    // Never unloaded: see the module documentation.
    let library: &'static libloading::os::unix::Library = Box::leak(Box::new(library));
    // SAFETY: each symbol is looked up with the ABI's type for it; a library exporting one
    // of these names with another type breaks the ABI, which no check can detect.
    let entry = unsafe { library.get::<EntryFn>(abi::ENTRY_SYMBOL) }
        .ok()
        .map(|f| *f);
    // SAFETY: as above.
    let bundle = unsafe { library.get::<BundleFn>(abi::BUNDLE_SYMBOL) }
        .ok()
        .map(|f| *f);
    let descriptors = descriptors_of(entry, bundle)?;
    let in_bundle = bundle.is_some();
    Ok(descriptors
        .into_iter()
        .enumerate()
        .map(|(index, descriptor)| {
            // SAFETY: `descriptors_of` returns only non-null pointers from the entry point or
            // the bundle, which point to static descriptors (ABI contract).
            unsafe { read(descriptor) }.map_err(|refusal| match in_bundle {
                true => Refusal {
                    reason: format!("plugin {index} of the bundle: {}", refusal.reason),
                    ..refusal
                },
                false => refusal,
            })
        })
        .collect())
}

/// The descriptors a file offers: its entry point's, or each of its bundle's (ABI 1.5) until
/// the bundle answers null. Never a null pointer.
fn descriptors_of(
    entry: Option<EntryFn>,
    bundle: Option<BundleFn>,
) -> Result<Vec<*const PluginDescriptor>, Refusal> {
    match (entry, bundle) {
        (Some(_), Some(_)) => Err("it exports both `zpulse_plugin_entry` and \
             `zpulse_plugin_bundle`: a plugin file exports one of them"
            .to_string()
            .into()),
        (None, None) => Err("it exports no `zpulse_plugin_entry` (nor a \
             `zpulse_plugin_bundle`): not a zpulse plugin (or built without \
             `zpulse_proto::export_plugin!`)"
            .to_string()
            .into()),
        (Some(entry), None) => {
            // SAFETY: the ABI's entry point takes nothing and returns a pointer to static data.
            let descriptor = unsafe { entry() };
            if descriptor.is_null() {
                return Err("its zpulse_plugin_entry returned no descriptor"
                    .to_string()
                    .into());
            }
            Ok(vec![descriptor])
        }
        (None, Some(bundle)) => {
            let mut descriptors = Vec::new();
            loop {
                // SAFETY: the ABI's bundle function takes any index and returns null or a
                // pointer to static data.
                let descriptor = unsafe { bundle(descriptors.len()) };
                if descriptor.is_null() {
                    break;
                }
                if descriptors.len() == abi::BUNDLE_MAX {
                    return Err(format!(
                        "its zpulse_plugin_bundle offers more than {} plugins (it never \
                         answered null): a bundle holds at most {}",
                        abi::BUNDLE_MAX,
                        abi::BUNDLE_MAX
                    )
                    .into());
                }
                descriptors.push(descriptor);
            }
            if descriptors.is_empty() {
                return Err("its zpulse_plugin_bundle holds no plugin"
                    .to_string()
                    .into());
            }
            Ok(descriptors)
        }
    }
}

/// Reads and checks one descriptor, the version first.
///
/// # Safety
/// `descriptor` must be non-null and point to static data at least as large as the header
/// (what the ABI requires of an entry point's or a bundle's answer).
unsafe fn read(descriptor: *const PluginDescriptor) -> Result<Opened, Refusal> {
    // SAFETY: a non-null descriptor points to static data at least as large as the header,
    // which has the same layout in every ABI version (the caller's guarantee).
    let header = unsafe { std::ptr::read(descriptor.cast::<DescriptorHeader>()) };
    let abi = Some((header.abi_major, header.abi_minor));
    abi::check_header(&header).map_err(|reason| Refusal { abi, reason })?;
    if header.flags & abi::DESCRIPTOR_PANIC_ABORT != 0 {
        return Err(Refusal {
            abi,
            reason: "it was built with panic = \"abort\": its first panic would abort the \
                     agent; rebuild it with panic = \"unwind\" (the default)"
                .into(),
        });
    }
    // SAFETY: the header says the descriptor is ABI 1 and at least as large as ABI 1.0's.
    let d: PluginDescriptor = unsafe { abi::read_descriptor(descriptor) };
    let refuse = |reason: String| Refusal { abi, reason };
    let text = |s: StrRef, what: &str| -> Result<String, Refusal> {
        // SAFETY: descriptor strings point to `len` bytes of static data (ABI contract).
        unsafe { s.to_string_lossless() }
            .ok_or_else(|| refuse(format!("its {what} is not UTF-8 text")))
    };
    let name = text(d.name, "name")?;
    abi::check_name(&name).map_err(refuse)?;
    let version = text(d.version, "version")?;
    if version.len() > 64 || version.chars().any(char::is_control) {
        return Err(refuse(format!(
            "version {version:?}: give up to 64 printable characters"
        )));
    }
    let build_info = text(d.build_info, "build info").unwrap_or_default();
    let (Some(create), Some(on_sample), Some(destroy)) = (d.create, d.on_sample, d.destroy) else {
        return Err(refuse(
            "its descriptor lacks create, on_sample or destroy".to_string(),
        ));
    };
    Ok(Opened {
        name,
        version,
        build_info,
        abi: (header.abi_major, header.abi_minor),
        calls: Calls {
            create,
            on_sample,
            destroy,
            unread: d.unread,
            report: d.report,
            native: d.sample_layout.zip(d.on_sample_native),
            on_event: d.on_event,
        },
        check_config: d.check_config,
    })
}

/// `dlopen` of the opened file itself, so that what was checked is what is loaded.
///
/// The loader knows a library by the name it was opened with, and answers a later `dlopen`
/// of the same name with the library already loaded. `/proc/self/fd/N` names whatever file
/// descriptor N is at the time, so N must never name another file afterwards: the
/// descriptor of every library loaded stays open for the life of the process (libraries
/// are never unloaded either), one per file — the same file opened again (a reload) is
/// loaded through the descriptor kept for it.
#[cfg(not(target_os = "freebsd"))]
fn load_descriptor(file: std::fs::File) -> Result<libloading::os::unix::Library, String> {
    use std::collections::HashMap;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    use std::sync::{Mutex, OnceLock};
    static KEPT: OnceLock<Mutex<HashMap<(u64, u64), std::fs::File>>> = OnceLock::new();
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat it: {e}"))?;
    let mut kept = KEPT
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let identity = (meta.dev(), meta.ino());
    let fd = match kept.get(&identity) {
        Some(same_file) => same_file.as_raw_fd(),
        None => file.as_raw_fd(),
    };
    let by_fd = format!("/proc/self/fd/{fd}");
    // SAFETY: dlopen runs the library's initialisers. The file behind this descriptor passed
    // the ownership, permission and ELF checks (a kept descriptor is the same file, by
    // device and inode): it is code that root (or the agent's user) put there, which is the
    // trust decision the agent makes for every plugin.
    let library = unsafe {
        libloading::os::unix::Library::open(
            Some(&by_fd),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .map_err(|e| format!("cannot load it: {e}"))?;
    // The descriptor whose number the loader recorded stays open, so the number stays ours.
    kept.entry(identity).or_insert(file);
    Ok(library)
}

/// `fdlopen(3)` of the opened file itself, so that what was checked is what is loaded.
#[cfg(target_os = "freebsd")]
fn load_descriptor(file: std::fs::File) -> Result<libloading::os::unix::Library, String> {
    use std::os::fd::AsRawFd;
    unsafe extern "C" {
        // FreeBSD's libc (dlfcn.h): dlopen of an open descriptor.
        fn fdlopen(fd: libc::c_int, mode: libc::c_int) -> *mut std::ffi::c_void;
    }
    // SAFETY: as in the Linux version; fdlopen reads the descriptor, which stays open for the
    // call, and returns a handle or null.
    let handle = unsafe { fdlopen(file.as_raw_fd(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns null or a NUL-terminated message valid until the next call.
        let why = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "fdlopen failed".to_string()
            } else {
                std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(format!("cannot load it: {why}"));
    }
    // SAFETY: a handle fdlopen returned, owned by the Library from now on (never closed).
    Ok(unsafe { libloading::os::unix::Library::from_raw(handle) })
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use super::*;

    const LIBZ: &str = "/usr/lib/x86_64-linux-gnu/libz.so.1";
    const LIBM: &str = "/usr/lib/x86_64-linux-gnu/libm.so.6";

    /// Whether `library` exports `symbol`.
    fn exports(library: &libloading::os::unix::Library, symbol: &[u8]) -> bool {
        // SAFETY: only looked up, never called.
        unsafe { library.get::<*const u8>(symbol) }.is_ok()
    }

    #[test]
    fn what_is_loaded_is_the_file_that_was_checked_not_what_the_path_names_now() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("libcheck.so");
        std::fs::copy(LIBZ, &plugin).expect("zlib1g installed");
        let checked = perms::open_checked(&plugin, perms::effective_uid()).unwrap();
        // Between the check and the load, the path is made to name another library.
        let other = dir.path().join("other.so");
        std::fs::copy(LIBM, &other).unwrap();
        std::fs::rename(&other, &plugin).unwrap();
        let loaded = load_descriptor(checked).unwrap();
        assert!(exports(&loaded, b"zlibVersion\0"), "zlib, as checked");
        assert!(
            !exports(&loaded, b"cbrt\0"),
            "not libm, which the path names now"
        );
    }

    #[test]
    fn a_link_swapped_into_a_checked_path_fails_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::copy(LIBZ, real.join("libz.so")).unwrap();
        // A directory on the resolved path is now a link: the walk does not follow it.
        let moved = dir.path().join("moved");
        std::fs::rename(&real, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &real).unwrap();
        let err = walk_nofollow_for_test(&real.join("libz.so"));
        assert!(err.contains("cannot open without following links"), "{err}");
    }

    fn walk_nofollow_for_test(resolved: &Path) -> String {
        perms::walk_resolved(resolved, perms::effective_uid()).unwrap_err()
    }
}
