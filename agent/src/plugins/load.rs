//! Finding plugin files and opening them: permission checks first, then `dlopen` with
//! `RTLD_NOW | RTLD_LOCAL`, then the descriptor's version before anything else in it.
//!
//! Libraries are leaked on purpose: a plugin is never unloaded (`dlclose` with live
//! thread-locals or threads crashes or is a no-op, depending on the libc), so its code and
//! statics live as long as the process.

use super::perms;
use std::path::{Path, PathBuf};
use zpulse_proto::abi::{
    self, CreateFn, DescriptorHeader, DestroyFn, EntryFn, OnSampleFn, PluginDescriptor, StrRef,
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

/// The plugin's three functions, copied out of its descriptor.
#[derive(Clone, Copy)]
pub(super) struct Calls {
    pub create: CreateFn,
    pub on_sample: OnSampleFn,
    pub destroy: DestroyFn,
    /// The parts of the sample it does not read (ABI 1.1; 0 for 1.0).
    pub unread: u64,
}

/// An opened plugin, before `create`.
pub(super) struct Opened {
    pub name: String,
    pub version: String,
    pub build_info: String,
    pub abi: (u32, u32),
    pub calls: Calls,
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

/// Checks, loads and reads one plugin file.
pub(super) fn open(path: &Path, euid: u32) -> Result<Opened, Refusal> {
    // Before dlopen: loading runs the library's initialisers, so the trust decision comes first.
    perms::check_plugin_file(path, euid)?;
    // SAFETY: dlopen runs the library's initialisers. The file passed the ownership and
    // permission checks above: it is code that root (or the agent's user) put there, which is
    // the trust decision the agent makes for every plugin.
    let library = unsafe {
        libloading::os::unix::Library::open(
            Some(path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .map_err(|e| format!("cannot load it: {e}"))?;
    // Never unloaded: see the module documentation.
    let library: &'static libloading::os::unix::Library = Box::leak(Box::new(library));
    // SAFETY: the symbol is looked up with the ABI's type for it; a library exporting
    // `zpulse_plugin_entry` with another type breaks the ABI, which no check can detect.
    let entry: EntryFn = *unsafe { library.get::<EntryFn>(abi::ENTRY_SYMBOL) }.map_err(|_| {
        "it exports no `zpulse_plugin_entry`: not a zpulse plugin (or built without \
         `zpulse_proto::export_plugin!`)"
            .to_string()
    })?;
    // SAFETY: the ABI's entry point takes nothing and returns a pointer to static data.
    let descriptor = unsafe { entry() };
    if descriptor.is_null() {
        return Err("its zpulse_plugin_entry returned no descriptor"
            .to_string()
            .into());
    }
    // SAFETY: a non-null descriptor points to static data at least as large as the header,
    // which has the same layout in every ABI version.
    let header = unsafe { std::ptr::read(descriptor.cast::<DescriptorHeader>()) };
    let abi = Some((header.abi_major, header.abi_minor));
    abi::check_header(&header).map_err(|reason| Refusal { abi, reason })?;
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
        },
    })
}
