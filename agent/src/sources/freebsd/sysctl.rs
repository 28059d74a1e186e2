//! Reading sysctls by name: live (`sysctl(3)`, FreeBSD only, in `live.rs`), from a
//! capture directory (`sysctl/<name>` files) or from `sysctl -a`-style text.
//!
//! A capture file does not say whether it holds a number, a string or opaque bytes, and the
//! `name: value` text of `sysctl(8)` does not either. So a [`SysctlValue`] converts leniently:
//! a number asked for as text prints it, text asked for as a number parses it, and text asked
//! for as bytes is its bytes. The readers (kstat, devstat, …) ask for the kind they need.
//!
//! "Does not exist" ([`SysctlError::NotFound`]) is kept apart from real failures because a
//! missing sysctl is normal (older OpenZFS, no such pool, a tunable renamed) and must not be
//! reported as a problem, while a read that fails is.

use crate::sources::Root;
use crate::sources::error::ParseError;
use std::collections::BTreeMap;
use std::fmt;
use std::io;

/// The live reader lives in `live.rs` (FreeBSD only); also reachable here as
/// `freebsd::sysctl::LiveSysctl`.
#[cfg(target_os = "freebsd")]
pub use super::live::LiveSysctl;

/// One sysctl value as the kernel (or a capture) gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysctlValue {
    /// Any unsigned integer type (`IU`, `LU`, `QU`, …).
    Unsigned(u64),
    /// Any signed integer type (`I`, `L`, `Q`, …).
    Signed(i64),
    /// A string (`A`), or text of unknown type from a capture or a dump.
    Text(String),
    /// An opaque or struct node (`kern.devstat.all`, `ifmibdata`), or a capture file that is
    /// not UTF-8.
    Bytes(Vec<u8>),
}

impl SysctlValue {
    /// The value as an unsigned number. Text is parsed after trimming white space.
    pub fn to_u64(&self) -> Result<u64, String> {
        match self {
            SysctlValue::Unsigned(v) => Ok(*v),
            SysctlValue::Signed(v) => {
                u64::try_from(*v).map_err(|_| format!("is negative ({v}), expected unsigned"))
            }
            SysctlValue::Text(s) => parse_u64(s),
            SysctlValue::Bytes(b) => match std::str::from_utf8(b) {
                Ok(s) => parse_u64(s),
                Err(_) => Err(format!(
                    "is {} bytes of binary data, expected a number",
                    b.len()
                )),
            },
        }
    }

    /// The value as a signed number. Text is parsed after trimming white space.
    pub fn to_i64(&self) -> Result<i64, String> {
        match self {
            SysctlValue::Unsigned(v) => {
                i64::try_from(*v).map_err(|_| format!("{v} does not fit a signed 64-bit integer"))
            }
            SysctlValue::Signed(v) => Ok(*v),
            SysctlValue::Text(s) => parse_i64(s),
            SysctlValue::Bytes(b) => match std::str::from_utf8(b) {
                Ok(s) => parse_i64(s),
                Err(_) => Err(format!(
                    "is {} bytes of binary data, expected a number",
                    b.len()
                )),
            },
        }
    }

    /// The value as text, unchanged (numbers are printed in decimal). Binary data that is not
    /// UTF-8 is an error rather than lossy text, so a wrong-kind read is noticed.
    pub fn to_text(&self) -> Result<String, String> {
        match self {
            SysctlValue::Unsigned(v) => Ok(v.to_string()),
            SysctlValue::Signed(v) => Ok(v.to_string()),
            SysctlValue::Text(s) => Ok(s.clone()),
            SysctlValue::Bytes(b) => String::from_utf8(b.clone())
                .map_err(|_| format!("is {} bytes of binary data, expected text", b.len())),
        }
    }

    /// The raw bytes of an opaque node. Text (a capture that happened to be valid UTF-8) is
    /// returned byte for byte; a number has no byte form here and is an error.
    pub fn into_bytes(self) -> Result<Vec<u8>, String> {
        match self {
            SysctlValue::Bytes(b) => Ok(b),
            SysctlValue::Text(s) => Ok(s.into_bytes()),
            SysctlValue::Unsigned(v) => Err(format!("is the number {v}, expected opaque bytes")),
            SysctlValue::Signed(v) => Err(format!("is the number {v}, expected opaque bytes")),
        }
    }
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.trim();
    t.parse()
        .map_err(|_| format!("{:?} is not an unsigned number", short(t)))
}

fn parse_i64(s: &str) -> Result<i64, String> {
    let t = s.trim();
    t.parse()
        .map_err(|_| format!("{:?} is not a signed number", short(t)))
}

/// The start of a value for an error message: a whole confxml would drown the message.
fn short(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The type of a sysctl node, `CTLTYPE_*` in FreeBSD's `sys/sys/sysctl.h`, as far as it
/// decides how the bytes of a read are decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtlKind {
    /// `CTLTYPE_NODE` with a handler (`kern.devstat.all`) and `CTLTYPE_OPAQUE` (structs).
    Opaque,
    /// `CTLTYPE_STRING`.
    String,
    /// A signed integer of this many bytes (`INT`, `S8`…`S64`; `LONG` is 8 on LP64).
    Signed(usize),
    /// An unsigned integer of this many bytes (`UINT`, `U8`…`U64`; `ULONG` is 8 on LP64).
    Unsigned(usize),
}

/// The value of one read: the bytes `sysctl(3)` returned for a node of `kind`. Pure, so the
/// live reader's decoding is tested on Linux; the live reader only makes the call.
///
/// * A string loses its last byte only when that byte is NUL. `sysctl_handle_string`
///   (sys/kern/kern_sysctl.c) copies the terminating NUL, and so do the sbufs of
///   `sbuf_new_for_sysctl` (OpenZFS ≥ 2.2.3, module/os/freebsd/spl/spl_kstat.c); but
///   `kstat_sysctl_raw` of OpenZFS ≤ 2.2.2 (FreeBSD 13.x, 14.0) ends with
///   `SYSCTL_OUT(req, sbuf_data(sb), sbuf_len(sb))` after `sbuf_trim`: no NUL, trailing
///   white space gone, so the last byte is the last character of `ONLINE` or of the guid.
///   (The `sysctl` crate 0.7 drops the last byte unconditionally: unix/funcs.rs,
///   `value_oid`, `CtlType::String => &val[..l - 1]`.)
/// * An integer node that returns a multiple of its width is an array (`kern.cp_time` is
///   `long[CPUSTATES]`, sys/kern/kern_clock.c `sysctl_kern_cp_time`); it is returned as its
///   bytes for the reader that knows the layout. Exactly one element is a number.
pub fn decode(name: &str, kind: CtlKind, mut bytes: Vec<u8>) -> Result<SysctlValue, SysctlError> {
    let (width, signed) = match kind {
        CtlKind::Opaque => return Ok(SysctlValue::Bytes(bytes)),
        CtlKind::String => {
            if bytes.last() == Some(&0) {
                bytes.pop();
            }
            return Ok(match String::from_utf8(bytes) {
                Ok(s) => SysctlValue::Text(s),
                Err(e) => SysctlValue::Bytes(e.into_bytes()),
            });
        }
        CtlKind::Signed(w) => (w, true),
        CtlKind::Unsigned(w) => (w, false),
    };
    if !matches!(width, 1 | 2 | 4 | 8) {
        return Err(SysctlError::Unsupported {
            name: name.to_string(),
            reason: format!("{width}-byte integers"),
        });
    }
    if bytes.len() != width {
        return if !bytes.is_empty() && bytes.len().is_multiple_of(width) {
            Ok(SysctlValue::Bytes(bytes))
        } else {
            Err(SysctlError::wrong_kind(
                name,
                format!(
                    "returned {} bytes, not a whole number of {width}-byte integers",
                    bytes.len()
                ),
            ))
        };
    }
    // The kernel's own memory: native byte order (the port is little-endian only).
    let mut raw = [0u8; 8];
    let value = if cfg!(target_endian = "little") {
        raw[..width].copy_from_slice(&bytes);
        if signed && bytes[width - 1] & 0x80 != 0 {
            raw[width..].fill(0xff);
        }
        u64::from_le_bytes(raw)
    } else {
        raw[8 - width..].copy_from_slice(&bytes);
        if signed && bytes[0] & 0x80 != 0 {
            raw[..8 - width].fill(0xff);
        }
        u64::from_be_bytes(raw)
    };
    Ok(if signed {
        SysctlValue::Signed(value as i64)
    } else {
        SysctlValue::Unsigned(value)
    })
}

/// Why a sysctl could not be read.
#[derive(Debug)]
pub enum SysctlError {
    /// The name does not exist here: an older OpenZFS, a pool that is gone, a FreeBSD release
    /// without it, or a capture that did not record it. Usually not a problem.
    NotFound { name: String },
    /// The kernel or the capture refused or failed the read (EPERM in a jail, I/O error, …).
    Read { name: String, source: io::Error },
    /// The node exists but its value is not of the kind the reader needs.
    WrongKind { name: String, message: String },
    /// This reader cannot fetch this node (a limitation of the implementation, not the kernel).
    Unsupported { name: String, reason: String },
}

impl SysctlError {
    pub fn name(&self) -> &str {
        match self {
            SysctlError::NotFound { name }
            | SysctlError::Read { name, .. }
            | SysctlError::WrongKind { name, .. }
            | SysctlError::Unsupported { name, .. } => name,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, SysctlError::NotFound { .. })
    }

    fn wrong_kind(name: &str, message: String) -> Self {
        SysctlError::WrongKind {
            name: name.to_string(),
            message,
        }
    }
}

impl fmt::Display for SysctlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SysctlError::NotFound { name } => write!(f, "sysctl {name} does not exist"),
            SysctlError::Read { name, source } => {
                write!(f, "sysctl {name} could not be read: {source}")
            }
            SysctlError::WrongKind { name, message } => write!(f, "sysctl {name} {message}"),
            SysctlError::Unsupported { name, reason } => {
                write!(f, "sysctl {name} cannot be read by zpulse: {reason}")
            }
        }
    }
}

impl std::error::Error for SysctlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SysctlError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// One way to read sysctls by their full dotted name.
pub trait Sysctl {
    /// Reads one node.
    fn read(&self, name: &str) -> Result<SysctlValue, SysctlError>;

    /// The full names of the readable leaves whose name starts with `prefix` (give it with a
    /// trailing dot, `kstat.zfs.`), sorted. Nothing there is an empty list, not an error.
    ///
    /// Live, leaves the kernel flags `CTLFLAG_SKIP` (the raw kstats `state`, `guid`, `txgs`)
    /// are not listed, exactly as `sysctl -a` hides them; read those by name.
    fn list(&self, prefix: &str) -> Result<Vec<String>, SysctlError>;

    fn u64(&self, name: &str) -> Result<u64, SysctlError> {
        self.read(name)?
            .to_u64()
            .map_err(|m| SysctlError::wrong_kind(name, m))
    }

    fn i64(&self, name: &str) -> Result<i64, SysctlError> {
        self.read(name)?
            .to_i64()
            .map_err(|m| SysctlError::wrong_kind(name, m))
    }

    fn text(&self, name: &str) -> Result<String, SysctlError> {
        self.read(name)?
            .to_text()
            .map_err(|m| SysctlError::wrong_kind(name, m))
    }

    fn bytes(&self, name: &str) -> Result<Vec<u8>, SysctlError> {
        self.read(name)?
            .into_bytes()
            .map_err(|m| SysctlError::wrong_kind(name, m))
    }
}

/// Turns "does not exist" into `None` and keeps every other outcome.
pub fn optional<T>(r: Result<T, SysctlError>) -> Result<Option<T>, SysctlError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// A sysctl name is safe as a capture file name: no path separators, no `..`, no NUL. Real
/// names never contain those, so anything else is treated as not existing rather than
/// letting a crafted name escape the capture directory.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && !name.contains("..")
}

/// The sysctls of a capture directory (capture layout v1): one file `sysctl/<full.name>` per
/// node, holding the value as text for numbers and strings and the raw bytes for opaque nodes.
#[derive(Debug, Clone)]
pub struct CaptureSysctl {
    root: Root,
}

impl CaptureSysctl {
    /// The capture directory, i.e. the one that holds `sysctl/`.
    pub fn new(root: Root) -> Self {
        CaptureSysctl { root }
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The capture file that holds sysctl `name`.
    pub fn file_of(name: &str) -> String {
        format!("{DIR}/{name}")
    }

    /// What the capture file of a value holds, so that [`Sysctl::read`] of it gives the
    /// value back (numbers as decimal text, strings as they are, opaque nodes as their raw
    /// bytes).
    pub fn bytes_of(value: &SysctlValue) -> Vec<u8> {
        match value {
            SysctlValue::Unsigned(v) => v.to_string().into_bytes(),
            SysctlValue::Signed(v) => v.to_string().into_bytes(),
            SysctlValue::Text(t) => t.clone().into_bytes(),
            SysctlValue::Bytes(b) => b.clone(),
        }
    }
}

/// The directory of a capture that holds one file per sysctl.
const DIR: &str = "sysctl";

impl Sysctl for CaptureSysctl {
    fn read(&self, name: &str) -> Result<SysctlValue, SysctlError> {
        if !is_plain_name(name) {
            return Err(SysctlError::NotFound {
                name: name.to_string(),
            });
        }
        match self.root.read(&Self::file_of(name)) {
            // Text when it is text; opaque nodes (devstat) usually are not UTF-8, and when one
            // happens to be, `bytes()` still returns it byte for byte.
            Ok(buf) => Ok(match String::from_utf8(buf) {
                Ok(s) => SysctlValue::Text(s),
                Err(e) => SysctlValue::Bytes(e.into_bytes()),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(SysctlError::NotFound {
                name: name.to_string(),
            }),
            Err(source) => Err(SysctlError::Read {
                name: name.to_string(),
                source,
            }),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, SysctlError> {
        match self.root.list(DIR) {
            // `Root::list` sorts; names are the file names, so no further parsing.
            Ok(names) => Ok(names
                .into_iter()
                .filter(|n| n.starts_with(prefix))
                .collect()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(SysctlError::Read {
                name: format!("{prefix}*"),
                source,
            }),
        }
    }
}

/// Sysctls parsed from `name: value` text, the output of `sysctl name…` / `sysctl -a` (and
/// the format of the external fixtures). Handy for bug reports: a user can paste that output.
///
/// A value runs from after the first `": "` to the end of the line, so values may contain
/// `": "` themselves; the following lines belong to it until a line that starts a new entry
/// (see [`DumpSysctl::parse`]), which is how multi-line values (`kern.geom.confxml`, `txgs`)
/// are kept whole.
#[derive(Debug, Clone, Default)]
pub struct DumpSysctl {
    values: BTreeMap<String, String>,
}

impl DumpSysctl {
    /// Parses the text. A line starts a new entry when it does not begin with white space and
    /// its part before the first `": "` (or before a final `:`, for an empty value) looks like
    /// a sysctl name: starts with a letter, digit or `_`, contains a dot, and holds only
    /// letters, digits and `_ . - % +` or inner spaces (kstat leaves like `1 ns` have one).
    /// Any other line continues the previous value. Text before the first entry, other than
    /// blank lines, is an error. When a name repeats, the last value wins.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut values = BTreeMap::new();
        let mut current: Option<(String, String)> = None;
        for (i, line) in text.lines().enumerate() {
            if let Some((name, value)) = split_entry(line) {
                if let Some((n, v)) = current.take() {
                    values.insert(n, finish_value(v));
                }
                current = Some((name.to_string(), value.to_string()));
            } else if let Some((_, v)) = current.as_mut() {
                v.push('\n');
                v.push_str(line);
            } else if !line.trim().is_empty() {
                return Err(ParseError::new(
                    "sysctl dump",
                    format!("expected `name: value`, found {:?}", short(line)),
                )
                .at_line(i + 1));
            }
        }
        if let Some((n, v)) = current {
            values.insert(n, finish_value(v));
        }
        Ok(DumpSysctl { values })
    }

    /// Adds or replaces one value, e.g. to build a test input by hand.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.values.insert(name.into(), value.into());
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// Blank lines between entries end up at the end of the previous value; they are not part
/// of it. (A value's own leading newline, as in `txgs`, is kept.)
fn finish_value(mut v: String) -> String {
    while v.ends_with('\n') || v.ends_with('\r') {
        v.pop();
    }
    v
}

/// `name: value` → `(name, value)` when the line starts an entry.
fn split_entry(line: &str) -> Option<(&str, &str)> {
    let (name, value) = match line.find(": ") {
        Some(i) => (&line[..i], &line[i + 2..]),
        None => (line.strip_suffix(':')?, ""),
    };
    looks_like_sysctl_name(name).then_some((name, value))
}

fn looks_like_sysctl_name(name: &str) -> bool {
    let Some(first) = name.chars().next() else {
        return false;
    };
    (first.is_ascii_alphanumeric() || first == '_')
        && !name.ends_with(' ')
        && name.contains('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '%' | '+' | ' '))
}

impl Sysctl for DumpSysctl {
    fn read(&self, name: &str) -> Result<SysctlValue, SysctlError> {
        self.values
            .get(name)
            .map(|v| SysctlValue::Text(v.clone()))
            .ok_or_else(|| SysctlError::NotFound {
                name: name.to_string(),
            })
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, SysctlError> {
        Ok(self
            .values
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }
}

/// Nodes whose handler takes the rest of the OID as arguments. The kernel's `name2oid`
/// stops at such a node and answers ENOENT for a longer name, so
/// `net.link.generic.ifdata.3.general` cannot be looked up by name: the live reader resolves
/// the node by name and appends the numeric tail this function returns. Captures and dumps
/// use the long names as they are.
pub fn split_handler_name(name: &str) -> Option<(&'static str, Vec<i32>)> {
    // net/if_mib.h: IFDATA_GENERAL = 1 (struct ifmibdata). The index must be > 0.
    const IFDATA: &str = "net.link.generic.ifdata";
    const IFDATA_GENERAL: i32 = 1;
    // vm/swap_pager.c: vm.swap_info.<n> returns struct xswdev for swap device n (from 0).
    const SWAP_INFO: &str = "vm.swap_info";

    if let Some(rest) = name.strip_prefix(IFDATA).and_then(|r| r.strip_prefix('.')) {
        let (index, leaf) = rest.split_once('.')?;
        let index: i32 = index.parse().ok().filter(|i| *i > 0)?;
        return (leaf == "general").then(|| (IFDATA, vec![index, IFDATA_GENERAL]));
    }
    if let Some(rest) = name
        .strip_prefix(SWAP_INFO)
        .and_then(|r| r.strip_prefix('.'))
    {
        let n: i32 = rest.parse().ok().filter(|n| *n >= 0)?;
        return Some((SWAP_INFO, vec![n]));
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A Sysctl over a map, for tests that need typed or binary values.
    #[derive(Debug, Default)]
    pub(crate) struct MapSysctl(pub BTreeMap<String, SysctlValue>);

    impl MapSysctl {
        pub(crate) fn set(&mut self, name: &str, value: SysctlValue) {
            self.0.insert(name.to_string(), value);
        }
    }

    impl Sysctl for MapSysctl {
        fn read(&self, name: &str) -> Result<SysctlValue, SysctlError> {
            self.0
                .get(name)
                .cloned()
                .ok_or_else(|| SysctlError::NotFound {
                    name: name.to_string(),
                })
        }

        fn list(&self, prefix: &str) -> Result<Vec<String>, SysctlError> {
            Ok(self
                .0
                .keys()
                .filter(|k| k.starts_with(prefix))
                .cloned()
                .collect())
        }
    }

    #[test]
    fn dump_keeps_colon_space_inside_values_and_multiline_values() {
        let text = "kern.geom.confxml: <mesh>\n  <class id=\"0x1\">\n    <name>DISK</name>\n  \
                    </class>\n</mesh>\n\nkstat.zfs.tank.misc.state: ONLINE\n\
                    kstat.zfs.z.dataset.objset-0x1.dataset_name: tank/a: b\n\
                    kstat.zfs.tank.txgs: \ntxg      birth\n1        2\n\
                    kstat.zfs.tank.misc.dmu_tx_assign.1 ns: 7\nempty.value:\n";
        let d = DumpSysctl::parse(text).unwrap();
        assert_eq!(
            d.text("kern.geom.confxml").unwrap(),
            "<mesh>\n  <class id=\"0x1\">\n    <name>DISK</name>\n  </class>\n</mesh>"
        );
        assert_eq!(d.text("kstat.zfs.tank.misc.state").unwrap(), "ONLINE");
        assert_eq!(
            d.text("kstat.zfs.z.dataset.objset-0x1.dataset_name")
                .unwrap(),
            "tank/a: b"
        );
        assert_eq!(
            d.text("kstat.zfs.tank.txgs").unwrap(),
            "\ntxg      birth\n1        2"
        );
        assert_eq!(d.u64("kstat.zfs.tank.misc.dmu_tx_assign.1 ns").unwrap(), 7);
        assert_eq!(d.text("empty.value").unwrap(), "");
        assert_eq!(d.len(), 6);
        assert!(d.read("no.such").unwrap_err().is_not_found());
        assert_eq!(
            d.list("kstat.zfs.tank.").unwrap(),
            vec![
                "kstat.zfs.tank.misc.dmu_tx_assign.1 ns".to_string(),
                "kstat.zfs.tank.misc.state".to_string(),
                "kstat.zfs.tank.txgs".to_string(),
            ]
        );
    }

    /// What `sysctl(3)` returns for the raw kstats. OpenZFS ≤ 2.2.2 (module/os/freebsd/spl/
    /// spl_kstat.c, `kstat_sysctl_raw`): `sbuf_trim` then `SYSCTL_OUT(req, sbuf_data(sb),
    /// sbuf_len(sb))`, so `spa_state_data`'s "%s\n" arrives as `ONLINE`, no newline, no NUL.
    /// OpenZFS ≥ 2.2.3: `sbuf_new_for_sysctl`, whose sbuf has `SBUF_INCLUDENUL`
    /// (sys/kern/kern_sysctl.c), and no trim: `ONLINE\n\0`.
    #[test]
    fn strings_lose_their_last_byte_only_when_it_is_nul() {
        let text = |b: &[u8]| decode("kstat.zfs.tank.misc.state", CtlKind::String, b.to_vec());
        assert_eq!(text(b"ONLINE").unwrap(), SysctlValue::Text("ONLINE".into()));
        assert_eq!(
            text(b"ONLINE\n\0").unwrap(),
            SysctlValue::Text("ONLINE\n".into())
        );
        // spa_guid_data: "%llu\n"; trimmed, the last digit is the last byte.
        let guid = text(b"16181557826227404498").unwrap();
        assert_eq!(guid.to_u64().unwrap(), 16_181_557_826_227_404_498);
        assert_eq!(text(b"").unwrap(), SysctlValue::Text(String::new()));
        assert_eq!(text(b"\0").unwrap(), SysctlValue::Text(String::new()));
        // Only one NUL is the terminator.
        assert_eq!(text(b"a\0\0").unwrap(), SysctlValue::Text("a\0".into()));
        assert_eq!(
            text(&[0xff, 0xfe, 0]).unwrap(),
            SysctlValue::Bytes(vec![0xff, 0xfe])
        );
    }

    /// `kern.cp_time` is `CTLTYPE_LONG` but returns `long cp_time[CPUSTATES]`
    /// (sys/kern/kern_clock.c, `sysctl_kern_cp_time`): five longs are an array, kept as
    /// bytes for `parse_cp_time`; one long is a number.
    #[test]
    fn integers_by_width_and_arrays_as_bytes() {
        let cp: Vec<u8> = [7u64, 0, 3, 1, 900]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let v = decode("kern.cp_time", CtlKind::Signed(8), cp.clone()).unwrap();
        assert_eq!(v, SysctlValue::Bytes(cp));
        let c = super::super::host::parse_cp_time(&v.into_bytes().unwrap()).unwrap();
        assert_eq!(
            (c.user, c.nice, c.system, c.irq, c.idle),
            (7, 0, 3, Some(1), 900)
        );

        let one = |kind, b: &[u8]| decode("x", kind, b.to_vec()).unwrap();
        assert_eq!(
            one(CtlKind::Signed(8), &(-2i64).to_le_bytes()),
            SysctlValue::Signed(-2)
        );
        assert_eq!(one(CtlKind::Signed(4), &[0xff; 4]), SysctlValue::Signed(-1));
        assert_eq!(
            one(CtlKind::Unsigned(4), &[0xff; 4]),
            SysctlValue::Unsigned(u64::from(u32::MAX))
        );
        assert_eq!(
            one(CtlKind::Unsigned(1), &[200]),
            SysctlValue::Unsigned(200)
        );
        assert_eq!(
            one(CtlKind::Signed(2), &[0x00, 0x80]),
            SysctlValue::Signed(-32768)
        );
        assert_eq!(
            one(CtlKind::Opaque, &[1, 2, 3]),
            SysctlValue::Bytes(vec![1, 2, 3])
        );
        let e = decode("x.y", CtlKind::Unsigned(4), vec![1, 2, 3]).unwrap_err();
        assert!(matches!(e, SysctlError::WrongKind { .. }), "{e}");
        assert!(decode("x.y", CtlKind::Signed(8), Vec::new()).is_err());
        assert!(decode("x.y", CtlKind::Signed(3), vec![0; 3]).is_err());
    }

    #[test]
    fn dump_rejects_text_before_the_first_entry() {
        let e = DumpSysctl::parse("\nhello world\nkern.x: 1\n").unwrap_err();
        assert_eq!(e.at, Some(crate::sources::error::Location::Line(2)));
    }

    #[test]
    fn values_convert_between_kinds_and_name_the_sysctl_on_error() {
        let mut d = DumpSysctl::default();
        d.insert("a.num", " 42\n");
        d.insert("a.neg", "-5");
        d.insert("a.word", "ONLINE");
        assert_eq!(d.u64("a.num").unwrap(), 42);
        assert_eq!(d.i64("a.neg").unwrap(), -5);
        assert_eq!(d.bytes("a.word").unwrap(), b"ONLINE");
        let e = d.u64("a.neg").unwrap_err();
        assert!(matches!(e, SysctlError::WrongKind { .. }));
        assert!(e.to_string().contains("a.neg"), "{e}");
        let e = d.u64("a.word").unwrap_err();
        assert!(e.to_string().starts_with("sysctl a.word "), "{e}");
        assert!(SysctlValue::Bytes(vec![0xff, 0]).to_u64().is_err());
        assert!(SysctlValue::Unsigned(3).into_bytes().is_err());
        assert_eq!(SysctlValue::Signed(-1).to_text().unwrap(), "-1");
        assert!(SysctlValue::Unsigned(u64::MAX).to_i64().is_err());
    }

    #[test]
    fn capture_reads_files_under_sysctl_and_lists_by_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let s = dir.join("sysctl");
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(s.join("kstat.zfs.misc.arcstats.size"), "123\n").unwrap();
        std::fs::write(s.join("kstat.zfs.misc.arcstats.c"), "456").unwrap();
        std::fs::write(s.join("kstat.zfs.tank.misc.state"), "ONLINE\n").unwrap();
        std::fs::write(s.join("kern.devstat.all"), [0u8, 1, 2, 0xff, 0xfe]).unwrap();
        std::fs::write(dir.join("outside"), "secret").unwrap();
        let c = CaptureSysctl::new(Root::new(dir));

        assert_eq!(c.u64("kstat.zfs.misc.arcstats.size").unwrap(), 123);
        assert_eq!(
            c.text("kstat.zfs.tank.misc.state").unwrap().trim(),
            "ONLINE"
        );
        assert_eq!(
            c.read("kern.devstat.all").unwrap(),
            SysctlValue::Bytes(vec![0, 1, 2, 0xff, 0xfe])
        );
        assert_eq!(
            c.bytes("kern.devstat.all").unwrap(),
            vec![0, 1, 2, 0xff, 0xfe]
        );
        assert!(
            c.read("kstat.zfs.misc.arcstats.hits")
                .unwrap_err()
                .is_not_found()
        );
        // A name cannot walk out of sysctl/.
        assert!(c.read("../outside").unwrap_err().is_not_found());
        assert!(c.read("a/b").unwrap_err().is_not_found());
        assert_eq!(
            c.list("kstat.zfs.misc.").unwrap(),
            vec!["kstat.zfs.misc.arcstats.c", "kstat.zfs.misc.arcstats.size"]
        );
        assert_eq!(c.list("kstat.").unwrap().len(), 3);
        // A capture without sysctl/ lists nothing.
        let empty = CaptureSysctl::new(Root::new(dir.join("nothing-here")));
        assert!(empty.list("kstat.").unwrap().is_empty());
    }

    #[test]
    fn handler_names_split_into_node_and_numeric_tail() {
        assert_eq!(
            split_handler_name("net.link.generic.ifdata.3.general"),
            Some(("net.link.generic.ifdata", vec![3, 1]))
        );
        assert_eq!(
            split_handler_name("vm.swap_info.0"),
            Some(("vm.swap_info", vec![0]))
        );
        assert_eq!(
            split_handler_name("net.link.generic.ifdata.0.general"),
            None
        );
        assert_eq!(
            split_handler_name("net.link.generic.ifdata.3.linkspecific"),
            None
        );
        assert_eq!(
            split_handler_name("net.link.generic.ifdata.x.general"),
            None
        );
        assert_eq!(split_handler_name("vm.swap_info.-1"), None);
        assert_eq!(split_handler_name("vm.swap_infox.1"), None);
        assert_eq!(split_handler_name("kstat.zfs.misc.arcstats.size"), None);
    }

    proptest! {
        #[test]
        fn dump_parser_never_panics(text in "\\PC*") {
            let _ = DumpSysctl::parse(&text);
        }

        #[test]
        fn dump_parser_never_panics_on_sysctl_like_lines(
            lines in proptest::collection::vec("[a-z0-9_. :<>-]{0,30}", 0..20)
        ) {
            let text = lines.join("\n");
            if let Ok(d) = DumpSysctl::parse(&text) {
                for name in d.list("").unwrap() {
                    let _ = d.read(&name).unwrap();
                }
            }
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..48), w in 0usize..10) {
            for kind in [CtlKind::Opaque, CtlKind::String, CtlKind::Signed(w), CtlKind::Unsigned(w)] {
                let _ = decode("x", kind, bytes.clone());
            }
        }

        #[test]
        fn handler_split_never_panics(name in "\\PC{0,60}") {
            let _ = split_handler_name(&name);
        }
    }
}
