//! Linux: `/proc/spl/kstat/zfs`, `/sys/module/zfs`, `/proc/diskstats`, `/sys/block`, and the
//! host files in `/proc`, all read relative to a [`Root`]; `read_parsed` is how each reader
//! turns a file into a value or an issue.

pub mod diskstats;
pub mod host;
pub mod kstat;
pub mod mounts;
pub mod sysblock;
pub mod tunables;
pub mod zfs;

use super::{ParseError, Root};
use std::io;
use zpulse_proto::Snapshot;

/// Why a field is not a plain decimal number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadDecimal {
    /// Empty, or a byte that is not an ASCII digit (a sign, a space, garbage).
    NotDigits,
    /// More than the type asked for holds.
    TooLarge,
}

/// A field of ASCII digits only, as the kernel prints every counter and size: `str::parse`
/// would also take a leading `+`, which no kernel prints and which would hide a corrupted
/// field. The value is accumulated from the digits directly (no UTF-8 check and second scan:
/// a snapshot parses some two thousand of them), then taken as a `T`.
pub(crate) fn decimal<T: TryFrom<u64>>(field: &[u8]) -> Result<T, BadDecimal> {
    if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
        return Err(BadDecimal::NotDigits);
    }
    field
        .iter()
        .try_fold(0u64, |n, &d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .and_then(|n| T::try_from(n).ok())
        .ok_or(BadDecimal::TooLarge)
}

/// Fills `snap` with everything a Linux root offers. With `kept` (a live reader's), the
/// disks' sysfs facts come from it while they still hold ([`sysblock::KeptFacts`]) and the
/// tunables this module lacks are probed only now and then ([`tunables::KeptAbsence`]).
pub fn collect(root: &Root, kept: Option<&super::Kept>, snap: &mut Snapshot) {
    zfs::read(root, snap);
    snap.tunables = tunables::read(root, kept.map(|k| &k.tunables), snap);
    diskstats::read(root, kept.map(|k| &k.disks), snap);
    host::read(root, snap);
}

/// Whether a missing file is news. The host's `/proc` files are on every Linux, so one that is
/// missing is an issue; a kstat that this OpenZFS version lacks, or that of a pool just
/// exported, is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    Issue,
    Expected,
}

/// Reads and parses `rel`: the one rule for a file a Linux reader cannot use. A file that
/// cannot be read (a missing one only as `missing` says), is empty or does not parse is noted
/// against `rel`, and gives `None`.
fn read_parsed<T>(
    root: &Root,
    rel: &str,
    snap: &mut Snapshot,
    missing: Missing,
    parse: fn(&[u8]) -> Result<T, ParseError>,
) -> Option<T> {
    let bytes = match root.read(rel) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound && missing == Missing::Expected => {
            return None;
        }
        Err(e) => {
            snap.note(rel, format!("cannot read: {e}"));
            return None;
        }
    };
    if bytes.is_empty() {
        snap.note(rel, super::root::EMPTY);
        return None;
    }
    match parse(&bytes) {
        Ok(value) => Some(value),
        Err(e) => {
            snap.note(rel, e.to_string());
            None
        }
    }
}

#[cfg(test)]
mod decimal_tests {
    use super::{BadDecimal, decimal};

    #[test]
    fn digits_only_and_the_whole_u64_range() {
        assert_eq!(decimal::<u64>(b"0"), Ok(0));
        assert_eq!(decimal::<u64>(b"007"), Ok(7));
        // u64::MAX is 18446744073709551615: the last value, then one more.
        assert_eq!(decimal(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            decimal::<u64>(b"18446744073709551616"),
            Err(BadDecimal::TooLarge)
        );
        assert_eq!(
            decimal::<u64>(b"99999999999999999999999"),
            Err(BadDecimal::TooLarge)
        );
        // A narrower type: u32::MAX is 4294967295.
        assert_eq!(decimal(b"4294967295"), Ok(u32::MAX));
        assert_eq!(decimal::<u32>(b"4294967296"), Err(BadDecimal::TooLarge));
        for bad in [
            &b""[..],
            b"+1",
            b"-1",
            b" 1",
            b"1 ",
            b"1e3",
            b"0x10",
            b"\xff",
        ] {
            assert_eq!(decimal::<u64>(bad), Err(BadDecimal::NotDigits), "{bad:?}");
        }
    }
}
