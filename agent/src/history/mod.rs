//! The agent's own history: every snapshot `zpulse run` takes, kept on local disk for a day
//! (by default) within a size cap, so that "what happened at 3 am" can be answered afterwards
//! (`zpulse report --last 30m`) with no preparation.
//!
//! * [`Config`] — the `[history]` table of `zpulse.toml` (defaults here, and only here);
//! * [`Writer`] — appends one record per snapshot and rotates old segments away;
//! * [`read`] — the snapshots of a time range (plus the one before it), as a
//!   [`HistoryRead`] that decodes them one at a time.
//!
//! Snapshots are stored, not samples: a reader computes rates between any two consecutive
//! ones with `Sample::between`, exactly as the live agent does. On disk (`record`, `segment`)
//! the history is a directory of append-only segment files, one per UTC hour (more when an
//! hour's records pass a sixteenth of `max_size`), each a sequence of framed records: a
//! header with its own CRC-32 (magic, length, time), the snapshot as named MessagePack
//! compressed with deflate, and the body's CRC-32. A record is one `write` followed by
//! `fdatasync`; after `kill -9` or a power cut at most the record being written is lost, and
//! readers detect the torn or damaged bytes and skip them with a note, never a panic. A
//! length is trusted only once its header's CRC matches, bodies are capped (16 MiB, 256 MiB
//! inflated), and a read holds headers (a few bytes per record) and one snapshot at a time.
//!
//! Bounds: after each append, segments whose newest record is older than `retention` are
//! removed (age is the appended snapshot's `taken_at`, the agent's wall clock); before it,
//! the oldest segments go until the directory fits `max_size`. The directory is created 0700
//! and refused when it is a link, another user's, or writable by others; segments are created
//! 0600 with `O_EXCL|O_NOFOLLOW` and read with `O_NOFOLLOW|O_NONBLOCK` (regular files only),
//! so a link or FIFO in a segment's place neither redirects a write nor blocks a read.
//!
//! Size: `cargo bench -p zpulse-agent --bench history` measures it (figures in
//! `docs/history.md`): a snapshot of the lab's 4-disk pool is about 6–8.5 KB on disk, one of
//! a 100-disk pool (50 mirrors) about the figure given there, so the default 256 MiB holds a
//! day at the default 10 s interval on hosts of that size.

mod read;
mod record;
mod segment;
mod writer;

#[cfg(test)]
mod tests;

pub use read::{HistoryRead, MAX_RECORDS, read};
pub use segment::check_dir;
pub use writer::{Appended, Writer};

use serde::{Deserialize, Deserializer, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The agent's state directory: the Forward spools and the history live below it.
pub fn state_dir() -> &'static Path {
    if cfg!(target_os = "freebsd") {
        Path::new("/var/db/zpulse")
    } else {
        Path::new("/var/lib/zpulse")
    }
}

/// `[history]` of `zpulse.toml`.
///
/// ```toml
/// [history]
/// enabled = true
/// dir = "/var/lib/zpulse/history"  # FreeBSD: /var/db/zpulse/history
/// retention = "24h"
/// max_size = "256MiB"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Whether `zpulse run` records its snapshots.
    pub enabled: bool,
    /// Where; default: `history` under the state directory ([`Config::dir`]). A replay
    /// (`zpulse run --replay`) writes history only to a `dir` given here, never to the
    /// default one: recorded data of another time or host must not mix with this host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// How long snapshots are kept.
    #[serde(with = "zpulse_proto::sdk::config::duration")]
    pub retention: Duration,
    /// Bytes of segment files at most: bytes (`268435456`) or text with a binary unit
    /// (`"256MiB"`, `"1GiB"`, `"512KiB"`).
    #[serde(deserialize_with = "size")]
    pub max_size: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            enabled: true,
            dir: None,
            retention: Duration::from_secs(24 * 3600),
            max_size: 256 << 20,
        }
    }
}

impl Config {
    /// The history directory: `dir`, or `history` under [`state_dir`].
    pub fn dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| state_dir().join("history"))
    }

    /// Largest segment before another is started: a sixteenth of the cap, so that rotation
    /// frees space in steps that leave most of the history in place.
    pub fn segment_cap(&self) -> u64 {
        (self.max_size / 16).clamp(64 << 10, 64 << 20)
    }

    /// The checks serde's types do not make; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        let r = self.retention;
        if r < Duration::from_secs(600) || r > Duration::from_secs(366 * 86_400) {
            return Err("retention: give a duration between 10m and 366d".into());
        }
        if !(4 << 20..=1 << 40).contains(&self.max_size) {
            return Err("max_size: give 4MiB to 1TiB".into());
        }
        if self.dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
            return Err("dir: empty; leave it out for the default".into());
        }
        Ok(())
    }
}

/// Bytes as a number, or text with a binary unit: `"256MiB"`, `"1GiB"`, `"4096"`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        _ => {
            return Err(format!(
                "{text:?} is not a size: bytes, or a number and KiB, MiB, GiB or TiB, e.g. \
                 \"256MiB\""
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{text:?} is not a size in bytes up to 2^64"))
}

fn size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct V;
    impl serde::de::Visitor<'_> for V {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a size such as \"256MiB\" or a number of bytes")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("{v} is not a size")))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u64, E> {
            parse_size(v).map_err(E::custom)
        }
    }
    d.deserialize_any(V)
}
