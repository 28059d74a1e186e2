//! Decoder of `kern.devstat.all`: an 8-byte generation followed by N `struct devstat`
//! (DEVSTAT_VERSION 6, amd64, little-endian, 288 bytes each; layout in
//! docs/zfs-sources.md, "`devstat`", from sys/sys/devicestat.h).
//!
//! Pure: bytes in, entries out. The reader checks `kern.devstat.version` with
//! [`check_version`] first, because a different version means a different struct and
//! decoding it with this layout would produce plausible-looking garbage.

use crate::sources::error::ParseError;
use zpulse_proto::snapshot::Devstat;

/// The only `struct devstat` layout this decoder knows.
pub const DEVSTAT_VERSION: u64 = 6;
/// `sizeof(struct devstat)` on amd64 for version 6.
pub const DEVSTAT_SIZE: usize = 288;
/// The leading `long` generation count (amd64).
pub const GENERATION_SIZE: usize = 8;
/// `DEVSTAT_NAME_LEN`.
const NAME_LEN: usize = 16;
/// `DEVSTAT_TYPE_PASS`: a pass(4) pass-through device, which duplicates an `ada`/`da` disk.
pub const DEVSTAT_TYPE_PASS: u32 = 0x100;

const WHAT: &str = "kern.devstat.all";

// Field offsets in one struct devstat (sys/sys/devicestat.h, amd64).
const OFF_SEQUENCE0: usize = 0;
const OFF_START_COUNT: usize = 8;
const OFF_END_COUNT: usize = 12;
const OFF_DEVICE_NAME: usize = 44;
const OFF_UNIT_NUMBER: usize = 60;
const OFF_BYTES: usize = 64;
const OFF_OPERATIONS: usize = 96;
const OFF_DURATION: usize = 128;
const OFF_BUSY_TIME: usize = 192;
const OFF_CREATION_TIME: usize = 208;
const OFF_BLOCK_SIZE: usize = 224;
const OFF_FLAGS: usize = 256;
const OFF_DEVICE_TYPE: usize = 260;
const OFF_SEQUENCE1: usize = 280;

/// One decoded `struct devstat`.
#[derive(Debug, Clone, PartialEq)]
pub struct DevstatEntry {
    /// `device_name` + `unit_number`, e.g. `ada0` (the GEOM DISK name). Just `device_name`
    /// when the unit is negative.
    pub name: String,
    /// `device_name` alone, e.g. `ada`.
    pub device_name: String,
    /// The kernel increments `sequence1` before an update and `sequence0` after it; when they
    /// differ this copy was taken mid-update and its counters may be inconsistent.
    pub sequence0: u32,
    pub sequence1: u32,
    /// `devstat_support_flags`.
    pub flags: u32,
    pub stats: Devstat,
}

impl DevstatEntry {
    /// True when the copy was taken while the kernel was updating the entry.
    pub fn in_update(&self) -> bool {
        self.sequence0 != self.sequence1
    }

    /// A pass(4) device: ATA/SCSI pass-through to a disk that has its own entry.
    pub fn is_pass(&self) -> bool {
        self.stats.device_type & DEVSTAT_TYPE_PASS != 0
    }
}

/// The whole `kern.devstat.all` buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct DevstatAll {
    /// Incremented by the kernel whenever a device is added or removed.
    pub generation: u64,
    pub entries: Vec<DevstatEntry>,
}

/// Refuses any `kern.devstat.version` but 6.
pub fn check_version(version: u64) -> Result<(), ParseError> {
    if version == DEVSTAT_VERSION {
        Ok(())
    } else {
        Err(ParseError::new(
            WHAT,
            format!(
                "kern.devstat.version is {version}; zpulse decodes only version \
                 {DEVSTAT_VERSION} (struct devstat of {DEVSTAT_SIZE} bytes), so disk \
                 statistics are left out"
            ),
        ))
    }
}

/// Decodes the buffer. Its length must be `8 + k × 288`.
pub fn decode(buf: &[u8]) -> Result<DevstatAll, ParseError> {
    if buf.len() < GENERATION_SIZE || !(buf.len() - GENERATION_SIZE).is_multiple_of(DEVSTAT_SIZE) {
        return Err(ParseError::new(
            WHAT,
            format!(
                "length {} is not {GENERATION_SIZE} + a multiple of {DEVSTAT_SIZE} (the size \
                 of a version-{DEVSTAT_VERSION} struct devstat on amd64); the buffer is \
                 truncated or from another architecture",
                buf.len()
            ),
        ));
    }
    let generation = le_u64(buf, 0);
    let entries = buf[GENERATION_SIZE..]
        .chunks_exact(DEVSTAT_SIZE)
        .map(decode_entry)
        .collect();
    Ok(DevstatAll {
        generation,
        entries,
    })
}

/// One struct; `b` is exactly [`DEVSTAT_SIZE`] bytes (guaranteed by `chunks_exact`).
fn decode_entry(b: &[u8]) -> DevstatEntry {
    let name_bytes = &b[OFF_DEVICE_NAME..OFF_DEVICE_NAME + NAME_LEN];
    let end = name_bytes.iter().position(|&c| c == 0).unwrap_or(NAME_LEN);
    let device_name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
    let unit_number = le_i32(b, OFF_UNIT_NUMBER);
    let name = if unit_number >= 0 {
        format!("{device_name}{unit_number}")
    } else {
        device_name.clone()
    };
    let u64_array = |off: usize| std::array::from_fn(|i| le_u64(b, off + 8 * i));
    DevstatEntry {
        name,
        device_name,
        sequence0: le_u32(b, OFF_SEQUENCE0),
        sequence1: le_u32(b, OFF_SEQUENCE1),
        flags: le_u32(b, OFF_FLAGS),
        stats: Devstat {
            unit_number,
            bytes: u64_array(OFF_BYTES),
            operations: u64_array(OFF_OPERATIONS),
            duration: std::array::from_fn(|i| bintime(b, OFF_DURATION + 16 * i)),
            busy_time: bintime(b, OFF_BUSY_TIME),
            start_count: le_u32(b, OFF_START_COUNT),
            end_count: le_u32(b, OFF_END_COUNT),
            block_size: le_u32(b, OFF_BLOCK_SIZE),
            device_type: le_u32(b, OFF_DEVICE_TYPE),
            creation_time: bintime(b, OFF_CREATION_TIME),
        },
    }
}

/// `struct bintime { time_t sec; uint64_t frac; }` → seconds; `frac` is in units of 2^-64 s.
fn bintime(b: &[u8], off: usize) -> f64 {
    let sec = le_u64(b, off) as i64;
    let frac = le_u64(b, off + 8);
    sec as f64 + frac as f64 / 18_446_744_073_709_551_616.0
}

// The callers stay inside one 288-byte chunk (or the 8-byte header) at constant offsets, so
// these cannot go out of bounds; `get` keeps it panic-free even if a constant were wrong.
fn le_u64(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn le_u32(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn le_i32(b: &[u8], off: usize) -> i32 {
    le_u32(b, off) as i32
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Builds one struct devstat from the offsets in sys/sys/devicestat.h (written out
    /// here independently of the decoder's constants).
    pub(crate) struct Raw {
        pub seq0: u32,
        pub seq1: u32,
        pub start: u32,
        pub end: u32,
        pub name: &'static [u8],
        pub unit: i32,
        pub bytes: [u64; 4],
        pub ops: [u64; 4],
        pub duration: [(i64, u64); 4],
        pub busy: (i64, u64),
        pub created: (i64, u64),
        pub block_size: u32,
        pub device_type: u32,
    }

    impl Raw {
        pub(crate) fn disk(name: &'static [u8], unit: i32) -> Raw {
            Raw {
                seq0: 7,
                seq1: 7,
                start: 0,
                end: 0,
                name,
                unit,
                bytes: [0; 4],
                ops: [0; 4],
                duration: [(0, 0); 4],
                busy: (0, 0),
                created: (0, 0),
                block_size: 512,
                device_type: 0,
            }
        }

        pub(crate) fn bytes(&self) -> Vec<u8> {
            let mut v = vec![0u8; 288];
            let put =
                |v: &mut Vec<u8>, off: usize, b: &[u8]| v[off..off + b.len()].copy_from_slice(b);
            put(&mut v, 0, &self.seq0.to_le_bytes());
            put(&mut v, 4, &1i32.to_le_bytes()); // allocated
            put(&mut v, 8, &self.start.to_le_bytes());
            put(&mut v, 12, &self.end.to_le_bytes());
            put(&mut v, 16, &5i64.to_le_bytes()); // busy_from.sec: not decoded
            put(&mut v, 32, &0xdead_beef_u64.to_le_bytes()); // dev_links pointer
            put(&mut v, 40, &0x1234u32.to_le_bytes()); // device_number
            put(&mut v, 44, self.name);
            put(&mut v, 60, &self.unit.to_le_bytes());
            for i in 0..4 {
                put(&mut v, 64 + 8 * i, &self.bytes[i].to_le_bytes());
                put(&mut v, 96 + 8 * i, &self.ops[i].to_le_bytes());
                put(&mut v, 128 + 16 * i, &self.duration[i].0.to_le_bytes());
                put(&mut v, 136 + 16 * i, &self.duration[i].1.to_le_bytes());
            }
            put(&mut v, 192, &self.busy.0.to_le_bytes());
            put(&mut v, 200, &self.busy.1.to_le_bytes());
            put(&mut v, 208, &self.created.0.to_le_bytes());
            put(&mut v, 216, &self.created.1.to_le_bytes());
            put(&mut v, 224, &self.block_size.to_le_bytes());
            put(&mut v, 232, &[0xaa; 24]); // tag_types: not decoded
            put(&mut v, 256, &0x2u32.to_le_bytes()); // flags
            put(&mut v, 260, &self.device_type.to_le_bytes());
            put(&mut v, 264, &0x110u32.to_le_bytes()); // priority
            put(&mut v, 272, &0xffff_f800_0351_8200u64.to_le_bytes()); // id pointer
            put(&mut v, 280, &self.seq1.to_le_bytes());
            v
        }
    }

    pub(crate) fn buffer(generation: u64, entries: &[Raw]) -> Vec<u8> {
        let mut v = generation.to_le_bytes().to_vec();
        for e in entries {
            v.extend(e.bytes());
        }
        v
    }

    const HALF: u64 = 1 << 63; // frac = 0.5 s
    const QUARTER: u64 = 1 << 62; // frac = 0.25 s

    #[test]
    fn decodes_a_two_device_buffer() {
        let mut ada = Raw::disk(b"ada\0", 0);
        ada.bytes = [0, 1_048_576, 2_097_152, 4096];
        ada.ops = [3, 256, 512, 1];
        ada.duration = [(0, HALF), (1, QUARTER), (2, 0), (0, 0)];
        ada.busy = (12, HALF);
        ada.created = (3, QUARTER);
        ada.start = 10;
        ada.end = 9;
        ada.device_type = 0x20; // IF_IDE | DIRECT
        let mut nvd = Raw::disk(b"nvd\0", 12);
        nvd.block_size = 4096;
        nvd.ops = [0, u64::MAX, 1, 2];
        let buf = buffer(42, &[ada, nvd]);
        assert_eq!(buf.len(), 8 + 2 * 288);

        let all = decode(&buf).unwrap();
        assert_eq!(all.generation, 42);
        assert_eq!(all.entries.len(), 2);
        let a = &all.entries[0];
        assert_eq!(a.name, "ada0");
        assert_eq!(a.device_name, "ada");
        assert!(!a.in_update());
        assert!(!a.is_pass());
        assert_eq!(a.flags, 2);
        assert_eq!(a.stats.unit_number, 0);
        assert_eq!(a.stats.bytes, [0, 1_048_576, 2_097_152, 4096]);
        assert_eq!(a.stats.operations, [3, 256, 512, 1]);
        assert_eq!(a.stats.duration, [0.5, 1.25, 2.0, 0.0]);
        assert_eq!(a.stats.busy_time, 12.5);
        assert_eq!(a.stats.creation_time, 3.25);
        assert_eq!((a.stats.start_count, a.stats.end_count), (10, 9));
        assert_eq!(a.stats.block_size, 512);
        assert_eq!(a.stats.device_type, 0x20);
        let n = &all.entries[1];
        assert_eq!(n.name, "nvd12");
        assert_eq!(n.stats.block_size, 4096);
        assert_eq!(n.stats.operations, [0, u64::MAX, 1, 2]);
    }

    #[test]
    fn flags_a_mid_update_entry_and_a_pass_device() {
        let mut torn = Raw::disk(b"da\0", 3);
        torn.seq0 = 100;
        torn.seq1 = 101;
        let mut pass = Raw::disk(b"pass\0", 0);
        pass.device_type = 0x100 | 0x10;
        let all = decode(&buffer(1, &[torn, pass])).unwrap();
        assert!(all.entries[0].in_update());
        assert_eq!(all.entries[0].name, "da3");
        assert!(all.entries[1].is_pass());
    }

    #[test]
    fn name_without_nul_and_negative_unit() {
        let all = decode(&buffer(0, &[Raw::disk(b"abcdefghijklmnop", -1)])).unwrap();
        assert_eq!(all.entries[0].name, "abcdefghijklmnop");
    }

    #[test]
    fn empty_list_is_just_the_generation() {
        let all = decode(&7u64.to_le_bytes()).unwrap();
        assert_eq!(all.generation, 7);
        assert!(all.entries.is_empty());
    }

    #[test]
    fn wrong_lengths_are_refused_with_the_length() {
        for len in [0usize, 7, 9, 8 + 287, 8 + 289, 8 + 2 * 288 - 1] {
            let e = decode(&vec![0u8; len]).unwrap_err();
            assert!(e.message.contains(&format!("length {len} ")), "{e}");
            assert!(e.message.contains("288"), "{e}");
        }
        // The version-5 struct was smaller: such a buffer is refused by length too.
        assert!(decode(&vec![0u8; 8 + 3 * 240]).is_err());
    }

    #[test]
    fn only_version_6_is_accepted() {
        assert!(check_version(6).is_ok());
        for v in [0, 4, 5, 7] {
            let e = check_version(v).unwrap_err();
            assert!(e.message.contains(&format!("is {v};")), "{e}");
        }
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..2000)) {
            if let Ok(all) = decode(&buf) {
                prop_assert_eq!(all.entries.len(), (buf.len() - 8) / 288);
            }
        }

        #[test]
        fn truncations_of_a_valid_buffer_never_panic(cut in 0usize..(8 + 3 * 288)) {
            let disks = [Raw::disk(b"ada\0", 0), Raw::disk(b"da\0", 1), Raw::disk(b"cd\0", 0)];
            let buf = buffer(9, &disks);
            let r = decode(&buf[..cut]);
            prop_assert_eq!(r.is_ok(), cut >= 8 && (cut - 8) % 288 == 0);
        }
    }
}
