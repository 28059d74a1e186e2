//! A kernel event's packed nvlist → [`ZEvent`]: pure, no I/O.
//!
//! The names and types are the kernel's (docs/zfs-sources.md, "Kernel events"): `class`,
//! `eid` and `time` (two int64, seconds and nanoseconds) on every event (`fm.c`,
//! `zfs_zevent_post`); the ereport payload of `zfs_ereport_start` and `annotate_ecksum`
//! (`module/zfs/zfs_fm.c`); the statechange's `vdev_state`/`prev_state`
//! (`zfs_post_state_change`); a sysevent's `pool_name`, `pool_guid`, `vdev_path`,
//! `vdev_guid` and its `history_*` pairs (`spa_event_create`, `include/sys/fs/zfs.h`).
//! Integers are taken whatever their width or sign (the kernel writes `pool_context` as an
//! int32 and `zio_err` as an int32 in some versions), and every pair not typed here is kept
//! in [`ZEvent::raw`].

use crate::sources::nvlist::{self, NvError, NvList, NvValue};
use std::collections::BTreeMap;
use zpulse_proto::event::{EventTime, Value};
use zpulse_proto::zevent::{ZEvent, ZEventChecksum, ZEventHistory, ZEventVdev, ZEventZio};

/// Names decoded into typed fields (so not repeated in `raw`).
const TYPED: &[&str] = &[
    "class",
    "eid",
    "time",
    "pool",
    "pool_name",
    "pool_guid",
    "pool_state",
    "pool_context",
    "pool_failmode",
    "resilver_type",
    "vdev_guid",
    "vdev_type",
    "vdev_path",
    "vdev_devid",
    "vdev_physpath",
    "vdev_enc_sysfs_path",
    "vdev_state",
    "vdev_laststate",
    "prev_state",
    "vdev_read_errors",
    "vdev_write_errors",
    "vdev_cksum_errors",
    "vdev_delays",
    "parent_guid",
    "parent_type",
    "parent_path",
    "zio_err",
    "zio_offset",
    "zio_size",
    "zio_objset",
    "zio_object",
    "zio_level",
    "zio_blkid",
    "zio_flags",
    "zio_stage",
    "zio_pipeline",
    "zio_priority",
    "zio_delay",
    "zio_timestamp",
    "zio_delta",
    "cksum_algorithm",
    "cksum_expected",
    "cksum_actual",
    "bad_ranges",
    "bad_set_bits",
    "bad_cleared_bits",
    "history_hostname",
    "history_internal_str",
    "history_internal_name",
    "history_command",
    "history_txg",
    "history_time",
    "history_dsname",
];

/// Why an event could not be decoded.
#[derive(Debug)]
pub enum DecodeError {
    Nvlist(NvError),
    /// Decoded, but without the `class` every event has.
    NoClass,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Nvlist(e) => write!(f, "a kernel event that is not a packed nvlist: {e}"),
            DecodeError::NoClass => f.write_str("a kernel event without a class"),
        }
    }
}

/// Decodes one event as `ZFS_IOC_EVENTS_NEXT` returned it.
pub fn decode(packed: &[u8]) -> Result<ZEvent, DecodeError> {
    let list = nvlist::decode(packed).map_err(DecodeError::Nvlist)?;
    from_nvlist(&list)
}

/// [`decode`] of an nvlist already decoded.
pub fn from_nvlist(list: &NvList<'_>) -> Result<ZEvent, DecodeError> {
    let class = list.str("class").ok_or(DecodeError::NoClass)?.to_owned();
    let s = |name: &str| list.str(name).map(str::to_owned);
    let u = |name: &str| list.get(name).and_then(unsigned);
    let time = match list.get("time") {
        Some(NvValue::Int64Array(t)) if t.len() == 2 => EventTime {
            seconds: u32::try_from(t[0]).unwrap_or(0),
            nanos: u32::try_from(t[1]).unwrap_or(0).min(999_999_999),
        },
        _ => EventTime::default(),
    };
    let vdev = ZEventVdev {
        guid: u("vdev_guid"),
        kind: s("vdev_type"),
        path: s("vdev_path"),
        devid: s("vdev_devid"),
        physpath: s("vdev_physpath"),
        enc_sysfs_path: s("vdev_enc_sysfs_path"),
        state: u("vdev_state"),
        previous_state: u("prev_state").or_else(|| u("vdev_laststate")),
        read_errors: u("vdev_read_errors"),
        write_errors: u("vdev_write_errors"),
        checksum_errors: u("vdev_cksum_errors"),
        delays: u("vdev_delays"),
        parent_guid: u("parent_guid"),
        parent_kind: s("parent_type"),
        parent_path: s("parent_path"),
    };
    let zio = ZEventZio {
        err: u("zio_err"),
        offset: u("zio_offset"),
        size: u("zio_size"),
        objset: u("zio_objset"),
        object: u("zio_object"),
        level: list.get("zio_level").and_then(signed),
        blkid: u("zio_blkid"),
        flags: u("zio_flags"),
        stage: u("zio_stage"),
        pipeline: u("zio_pipeline"),
        priority: u("zio_priority"),
        delay_ns: u("zio_delay"),
        timestamp: u("zio_timestamp"),
        delta: u("zio_delta"),
        file: None,
    };
    let numbers = |name: &str| list.get(name).map(numbers).unwrap_or_default();
    let ranges = numbers("bad_ranges");
    let checksum = ZEventChecksum {
        algorithm: s("cksum_algorithm"),
        expected: numbers("cksum_expected"),
        actual: numbers("cksum_actual"),
        bad_ranges: ranges.chunks_exact(2).map(|r| (r[0], r[1])).collect(),
        bad_set_bits: u("bad_set_bits"),
        bad_cleared_bits: u("bad_cleared_bits"),
    };
    let history = ZEventHistory {
        hostname: s("history_hostname"),
        internal_str: s("history_internal_str"),
        internal_name: s("history_internal_name"),
        command: s("history_command"),
        txg: u("history_txg"),
        time: u("history_time"),
        dsname: s("history_dsname"),
    };
    let mut raw = BTreeMap::new();
    for pair in list.iter() {
        if !TYPED.contains(&pair.name.as_ref()) {
            raw.insert(pair.name.to_string(), value(&pair.value));
        }
    }
    Ok(ZEvent {
        eid: u("eid").unwrap_or(0),
        class,
        time,
        before_start: false,
        pool: s("pool").or_else(|| s("pool_name")),
        pool_guid: u("pool_guid"),
        pool_state: u("pool_state"),
        pool_context: u("pool_context"),
        pool_failmode: s("pool_failmode"),
        vdev: (vdev != ZEventVdev::default()).then_some(vdev),
        zio: (zio != ZEventZio::default()).then_some(zio),
        checksum: (checksum != ZEventChecksum::default()).then_some(checksum),
        history: (history != ZEventHistory::default()).then_some(history),
        resilver_type: s("resilver_type"),
        raw,
    })
}

/// An integer of any width as u64 (a negative one is not a count, an id or an offset).
fn unsigned(v: &NvValue<'_>) -> Option<u64> {
    signed(v).and_then(|i| u64::try_from(i).ok()).or(match v {
        NvValue::Uint64(x) => Some(*x),
        _ => None,
    })
}

fn signed(v: &NvValue<'_>) -> Option<i64> {
    Some(match *v {
        NvValue::Byte(x) | NvValue::Uint8(x) => x.into(),
        NvValue::Int8(x) => x.into(),
        NvValue::Int16(x) => x.into(),
        NvValue::Uint16(x) => x.into(),
        NvValue::Int32(x) => x.into(),
        NvValue::Uint32(x) => x.into(),
        NvValue::Int64(x) | NvValue::Hrtime(x) => x,
        NvValue::Uint64(x) => i64::try_from(x).ok()?,
        NvValue::BooleanValue(b) => b.into(),
        _ => return None,
    })
}

/// The elements of an integer array, as u64 (negative ones left out).
fn numbers(v: &NvValue<'_>) -> Vec<u64> {
    let cast = |i: i64| u64::try_from(i).ok();
    match v {
        NvValue::Uint64Array(a) => a.iter().collect(),
        NvValue::Uint32Array(a) => a.iter().map(|&x| x.into()).collect(),
        NvValue::Uint16Array(a) => a.iter().map(|&x| x.into()).collect(),
        NvValue::Uint8Array(a) | NvValue::ByteArray(a) => a.iter().map(|&x| x.into()).collect(),
        NvValue::Int64Array(a) => a.iter().filter_map(|&x| cast(x)).collect(),
        NvValue::Int32Array(a) => a.iter().filter_map(|&x| cast(x.into())).collect(),
        NvValue::Int16Array(a) => a.iter().filter_map(|&x| cast(x.into())).collect(),
        NvValue::Int8Array(a) => a.iter().filter_map(|&x| cast(x.into())).collect(),
        _ => Vec::new(),
    }
}

/// Any pair as an event value: numbers, text, lists and maps.
fn value(v: &NvValue<'_>) -> Value {
    let ints = |it: &mut dyn Iterator<Item = i64>| Value::List(it.map(Value::from).collect());
    match v {
        NvValue::Boolean => Value::Bool(true),
        NvValue::BooleanValue(b) => Value::Bool(*b),
        NvValue::Double(f) => Value::Float(*f),
        NvValue::String(s) => Value::Str(s.to_string()),
        NvValue::Uint64(x) => Value::UInt(*x),
        NvValue::Uint64Array(a) => Value::List(a.iter().map(Value::UInt).collect()),
        NvValue::BooleanArray(a) => Value::List(a.iter().map(|&b| Value::Bool(b)).collect()),
        NvValue::StringArray(a) => {
            Value::List(a.iter().map(|s| Value::Str(s.to_string())).collect())
        }
        NvValue::NvList(l) => Value::Map(map(l)),
        NvValue::NvListArray(ls) => Value::List(ls.iter().map(|l| Value::Map(map(l))).collect()),
        NvValue::Uint8Array(a) | NvValue::ByteArray(a) => ints(&mut a.iter().map(|&x| x.into())),
        NvValue::Int8Array(a) => ints(&mut a.iter().map(|&x| x.into())),
        NvValue::Int16Array(a) => ints(&mut a.iter().map(|&x| x.into())),
        NvValue::Uint16Array(a) => ints(&mut a.iter().map(|&x| x.into())),
        NvValue::Int32Array(a) => ints(&mut a.iter().map(|&x| x.into())),
        NvValue::Uint32Array(a) => ints(&mut a.iter().map(|&x| x.into())),
        NvValue::Int64Array(a) => ints(&mut a.iter().copied()),
        other => signed(other).map_or(Value::Null, Value::from),
    }
}

fn map(l: &NvList<'_>) -> BTreeMap<String, Value> {
    l.iter()
        .map(|p| (p.name.to_string(), value(&p.value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::nvlist::encode::{Endian, encode};
    use std::borrow::Cow;

    /// A checksum ereport with the pairs `zfs_ereport_start` and `annotate_ecksum` write,
    /// with their kernel types (OpenZFS 2.1 `zfs_fm.c`: `zio_err` INT32, `zio_level` INT64,
    /// `bad_ranges` UINT32_ARRAY, `pool_context` INT32, `time` INT64_ARRAY).
    fn checksum_ereport() -> Vec<u8> {
        let l = NvList::new()
            .with("class", NvValue::String("ereport.fs.zfs.checksum".into()))
            .with("ena", NvValue::Uint64(0xabc))
            .with(
                "detector",
                NvValue::NvList(NvList::new().with("scheme", NvValue::String("zfs".into()))),
            )
            .with("pool", NvValue::String("tank".into()))
            .with("pool_guid", NvValue::Uint64(111))
            .with("pool_state", NvValue::Uint64(0))
            .with("pool_context", NvValue::Int32(0))
            .with("pool_failmode", NvValue::String("wait".into()))
            .with("vdev_guid", NvValue::Uint64(222))
            .with("vdev_type", NvValue::String("disk".into()))
            .with("vdev_path", NvValue::String("/dev/sdb1".into()))
            .with("vdev_ashift", NvValue::Uint64(12))
            .with("vdev_cksum_errors", NvValue::Uint64(5))
            .with("parent_guid", NvValue::Uint64(333))
            .with("parent_type", NvValue::String("mirror".into()))
            .with("zio_err", NvValue::Int32(52))
            .with("zio_offset", NvValue::Uint64(0x400000))
            .with("zio_size", NvValue::Uint64(131072))
            .with("zio_objset", NvValue::Uint64(54))
            .with("zio_object", NvValue::Uint64(2))
            .with("zio_level", NvValue::Int64(0))
            .with("zio_blkid", NvValue::Uint64(7))
            .with("cksum_algorithm", NvValue::String("fletcher4".into()))
            .with(
                "bad_ranges",
                NvValue::Uint32Array(vec![0, 4096, 8192, 8200]),
            )
            .with("bad_set_bits", NvValue::Uint32(40))
            .with("time", NvValue::Int64Array(vec![1_764_800_000, 123]))
            .with("eid", NvValue::Uint64(31));
        encode(&l, Endian::Little)
    }

    #[test]
    fn a_checksum_ereport_decodes_into_its_typed_fields() {
        let z = decode(&checksum_ereport()).unwrap();
        assert_eq!(z.class, "ereport.fs.zfs.checksum");
        assert_eq!(z.eid, 31);
        assert_eq!(
            z.time,
            EventTime {
                seconds: 1_764_800_000,
                nanos: 123
            }
        );
        assert_eq!(z.pool.as_deref(), Some("tank"));
        assert_eq!(z.pool_context, Some(0));
        let v = z.vdev.as_ref().unwrap();
        assert_eq!((v.guid, v.path.as_deref()), (Some(222), Some("/dev/sdb1")));
        assert_eq!((v.checksum_errors, v.parent_guid), (Some(5), Some(333)));
        let zio = z.zio.as_ref().unwrap();
        assert_eq!(
            (zio.err, zio.offset, zio.size),
            (Some(52), Some(0x400000), Some(131072))
        );
        assert_eq!(
            (zio.objset, zio.object, zio.level, zio.blkid),
            (Some(54), Some(2), Some(0), Some(7))
        );
        let c = z.checksum.as_ref().unwrap();
        assert_eq!(c.bad_ranges, vec![(0, 4096), (8192, 8200)]);
        assert_eq!(c.bad_set_bits, Some(40));
        // What is not typed is kept by its kernel name.
        assert_eq!(z.raw["vdev_ashift"], Value::UInt(12));
        assert_eq!(z.raw["ena"], Value::UInt(0xabc));
        assert!(
            matches!(&z.raw["detector"], Value::Map(m) if m["scheme"] == Value::Str("zfs".into()))
        );
        assert!(!z.raw.contains_key("pool") && !z.raw.contains_key("time"));
        assert_eq!(z.subject(), "tank/sdb1");
    }

    #[test]
    fn a_sysevent_names_its_pool_with_pool_name() {
        let l = NvList::new()
            .with(
                "class",
                NvValue::String("sysevent.fs.zfs.resilver_start".into()),
            )
            .with("pool_name", NvValue::String(Cow::Borrowed("tank")))
            .with("pool_guid", NvValue::Uint64(9))
            .with("resilver_type", NvValue::String("healing".into()))
            .with("eid", NvValue::Uint64(2));
        let z = decode(&encode(&l, Endian::Little)).unwrap();
        assert_eq!(z.pool.as_deref(), Some("tank"));
        assert_eq!(z.resilver_type.as_deref(), Some("healing"));
        assert!(z.vdev.is_none() && z.zio.is_none() && z.checksum.is_none());
        assert_eq!(z.summary(), "tank: resilver start (healing)");
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(matches!(decode(b""), Err(DecodeError::Nvlist(_))));
        let bytes = checksum_ereport();
        for cut in [1, 8, 40, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let no_class = encode(
            &NvList::new().with("eid", NvValue::Uint64(1)),
            Endian::Little,
        );
        assert!(matches!(decode(&no_class), Err(DecodeError::NoClass)));
        // A time of the wrong shape and a negative size are left out, not trusted.
        let odd = NvList::new()
            .with("class", NvValue::String("ereport.fs.zfs.io".into()))
            .with("time", NvValue::Int64Array(vec![-5]))
            .with("zio_size", NvValue::Int64(-1));
        let z = decode(&encode(&odd, Endian::Little)).unwrap();
        assert_eq!(z.time, EventTime::default());
        assert!(z.zio.is_none());
    }
}
