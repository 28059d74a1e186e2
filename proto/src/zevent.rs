//! Kernel events: what OpenZFS queued about faults, state changes and pool operations, typed.
//!
//! OpenZFS posts an event (a *zevent*) for every error report (`ereport.fs.zfs.checksum`,
//! `.io`, `.data`, `.delay`, `.deadman`, `.probe_failure`, …), every resource change
//! (`resource.fs.zfs.statechange`, `.removed`) and every pool operation
//! (`sysevent.fs.zfs.scrub_finish`, `.resilver_finish`, `.pool_import`, `.vdev_attach`,
//! `.history_event`, …) into one in-kernel queue, which `zpool events -v` prints and ZED reads
//! (OpenZFS `module/zfs/fm.c`, `zfs_zevent_post`; the classes in `include/sys/fm/fs/zfs.h`
//! and `include/sys/sysevent/eventdefs.h`, the payload names in both and in
//! `include/sys/fs/zfs.h`, `ZFS_EV_*`). The agent reads the queue through `/dev/zfs` with
//! its own cursor and hands each event on as a [`ZEvent`]:
//!
//! * the fields every consumer needs are typed ([`ZEvent::pool`], [`ZEventVdev`],
//!   [`ZEventZio`], [`ZEventChecksum`], [`ZEventHistory`]), each `None` when the kernel did not
//!   send it;
//! * every other pair of the kernel's nvlist is kept in [`ZEvent::raw`] under its kernel name,
//!   so nothing the kernel said is lost;
//! * [`ZEvent::kind`] names what the class means ([`ZEventKind`]), and
//!   [`ZEvent::to_event`] gives the record the sinks send (`zpulse.zevent`).
//!
//! Plugins receive these through the SDK's `Check::event` (ABI 1.6, `on_event`) as
//! MessagePack of this type. This module does no I/O.

use crate::event::{Data, Event, EventTime, Kind, Severity, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One kernel event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ZEvent {
    /// The kernel's event id: 1 for the first event since the module loaded, then one more
    /// per event (`zevent_eid`, `fm.c`). A gap between two events read means the kernel
    /// dropped the ones between.
    pub eid: u64,
    /// The full class: `ereport.fs.zfs.checksum`, `resource.fs.zfs.statechange`,
    /// `sysevent.fs.zfs.scrub_finish`.
    pub class: String,
    /// When the kernel posted it (`time`: seconds and nanoseconds of the wall clock).
    pub time: EventTime,
    /// The event was in the queue before this agent started reading it (or, after a
    /// restart, before the agent stopped): it is reported once as history, and no check
    /// raises a finding from it as if it had just happened.
    pub before_start: bool,
    /// `pool` (ereports, resource events) or `pool_name` (sysevents).
    pub pool: Option<String>,
    pub pool_guid: Option<u64>,
    /// `pool_state` (`spa_state`: 0 active, 1 exported, 2 destroyed, …).
    pub pool_state: Option<u64>,
    /// `pool_context` (`spa_load_state`: 0 none, 1 open, 2 import, 3 tryimport, …).
    pub pool_context: Option<u64>,
    pub pool_failmode: Option<String>,
    pub vdev: Option<ZEventVdev>,
    pub zio: Option<ZEventZio>,
    pub checksum: Option<ZEventChecksum>,
    pub history: Option<ZEventHistory>,
    /// `resilver_type` of a resilver's start (`healing` or `sequential`, OpenZFS 2.0+).
    pub resilver_type: Option<String>,
    /// Every other pair of the event, by its kernel name.
    pub raw: BTreeMap<String, Value>,
}

/// The vdev an event is about, and its parent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ZEventVdev {
    pub guid: Option<u64>,
    /// `vdev_type`: `disk`, `file`, `mirror`, `raidz`, …
    pub kind: Option<String>,
    pub path: Option<String>,
    pub devid: Option<String>,
    pub physpath: Option<String>,
    pub enc_sysfs_path: Option<String>,
    /// `vdev_state` (`vdev_state_t`, see [`vdev_state_name`]).
    pub state: Option<u64>,
    /// `vdev_laststate`, or `prev_state` of a statechange (the state it left).
    pub previous_state: Option<u64>,
    pub read_errors: Option<u64>,
    pub write_errors: Option<u64>,
    pub checksum_errors: Option<u64>,
    /// `vdev_delays`: slow I/Os counted on the vdev.
    pub delays: Option<u64>,
    pub parent_guid: Option<u64>,
    pub parent_kind: Option<String>,
    pub parent_path: Option<String>,
}

/// The I/O an error report is about.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ZEventZio {
    /// `zio_err`: the errno (5 EIO, 52 ECKSUM on Linux / 97 on FreeBSD, 6 ENXIO…).
    pub err: Option<u64>,
    pub offset: Option<u64>,
    pub size: Option<u64>,
    pub objset: Option<u64>,
    pub object: Option<u64>,
    pub level: Option<i64>,
    pub blkid: Option<u64>,
    pub flags: Option<u64>,
    pub stage: Option<u64>,
    pub pipeline: Option<u64>,
    pub priority: Option<u64>,
    /// `zio_delay` as the kernel sent it. Once an I/O has completed it is how long the disk
    /// took, in nanoseconds (`zio_vdev_io_done` subtracts the issue time from `gethrtime()`);
    /// before, it is that issue time itself, which is what a deadman report carries, its I/O
    /// still outstanding. [`ZEvent::io_latency_ns`] tells the two apart.
    pub delay_ns: Option<u64>,
    pub timestamp: Option<u64>,
    pub delta: Option<u64>,
    /// The file the I/O was for, named as `zpool status -v` names it (`/tank/fs/file`,
    /// `tank/fs:/file` when not mounted, `<metadata>:<0x…>`, …). Not in the kernel's
    /// event: the agent asks `/dev/zfs` for it when it reads the event (from `objset` and
    /// `object`), so it is the name at that moment.
    pub file: Option<String>,
}

/// What a checksum error report says about the bad data.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ZEventChecksum {
    pub algorithm: Option<String>,
    pub expected: Vec<u64>,
    pub actual: Vec<u64>,
    /// `bad_ranges`: byte ranges `[start, end)` of the block that differed.
    pub bad_ranges: Vec<(u64, u64)>,
    pub bad_set_bits: Option<u64>,
    pub bad_cleared_bits: Option<u64>,
}

/// The pool-history record a `history_event` carries (what `zpool history -i` prints).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ZEventHistory {
    pub hostname: Option<String>,
    /// `history_internal_str`: `func=2 mintxg=0 maxtxg=…`, `errors=0`.
    pub internal_str: Option<String>,
    /// `history_internal_name`: `scan setup`, `scan done`, `scan aborted`, `vdev attach`.
    pub internal_name: Option<String>,
    pub command: Option<String>,
    pub txg: Option<u64>,
    pub time: Option<u64>,
    pub dsname: Option<String>,
}

/// What a class means, for the consumers that act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ZEventKind {
    /// `ereport.fs.zfs.checksum` (and `authentication`: a failed MAC of an encrypted block).
    Checksum,
    /// `ereport.fs.zfs.io`, `io_failure`.
    Io,
    /// `ereport.fs.zfs.data`: a block no copy could repair.
    Data,
    /// `ereport.fs.zfs.delay`: an I/O slower than `zio_slow_io_ms`.
    Delay,
    /// `ereport.fs.zfs.deadman`: an I/O stuck past `zfs_deadman_ziotime_ms`.
    Deadman,
    ProbeFailure,
    /// Any other `ereport.fs.zfs.vdev.*` (open failed, no replicas, bad label, …) or
    /// `ereport.fs.zfs.zpool`.
    DeviceFault,
    /// `resource.fs.zfs.statechange`: a vdev changed state.
    StateChange,
    /// `resource.fs.zfs.removed`: a device went away.
    Removed,
    ScrubStart,
    ScrubFinish,
    ScrubAbort,
    ScrubPaused,
    ScrubResume,
    ResilverStart,
    ResilverFinish,
    PoolCreate,
    PoolImport,
    PoolExport,
    PoolDestroy,
    VdevAdd,
    VdevRemove,
    VdevAttach,
    VdevSpare,
    VdevOnline,
    VdevClear,
    TrimStart,
    TrimFinish,
    TrimCancel,
    History,
    ConfigSync,
    /// A class this agent has no meaning for (a newer kernel's, snapshot mounts, …).
    Other,
}

impl ZEventKind {
    /// The kind of a full class name.
    pub fn of(class: &str) -> ZEventKind {
        use ZEventKind::*;
        let short = short_class(class);
        if class.starts_with("ereport.") {
            return match short {
                "checksum" | "authentication" => Checksum,
                "io" | "io_failure" => Io,
                "data" => Data,
                "delay" => Delay,
                "deadman" => Deadman,
                "probe_failure" => ProbeFailure,
                s if s.starts_with("vdev.") || s == "zpool" => DeviceFault,
                _ => Other,
            };
        }
        match short {
            "statechange" => StateChange,
            "removed" => Removed,
            "scrub_start" => ScrubStart,
            "scrub_finish" => ScrubFinish,
            "scrub_abort" => ScrubAbort,
            "scrub_paused" => ScrubPaused,
            "scrub_resume" => ScrubResume,
            "resilver_start" => ResilverStart,
            "resilver_finish" => ResilverFinish,
            "pool_create" => PoolCreate,
            "pool_import" => PoolImport,
            "pool_export" => PoolExport,
            "pool_destroy" => PoolDestroy,
            "vdev_add" => VdevAdd,
            "vdev_remove" | "vdev_remove_aux" | "vdev_remove_dev" => VdevRemove,
            "vdev_attach" => VdevAttach,
            "vdev_spare" => VdevSpare,
            "vdev_online" => VdevOnline,
            "vdev_clear" => VdevClear,
            "trim_start" => TrimStart,
            "trim_finish" => TrimFinish,
            "trim_cancel" => TrimCancel,
            "history_event" => History,
            "config_sync" => ConfigSync,
            _ => Other,
        }
    }

    /// An error report about data or a device (what ZED diagnoses).
    pub fn is_error_report(self) -> bool {
        use ZEventKind::*;
        matches!(
            self,
            Checksum | Io | Data | Delay | Deadman | ProbeFailure | DeviceFault
        )
    }
}

/// The class after its `fs.zfs.` part: `checksum`, `statechange`, `scrub_finish`.
pub fn short_class(class: &str) -> &str {
    match class.find("fs.zfs.") {
        Some(at) => &class[at + "fs.zfs.".len()..],
        None => class,
    }
}

/// The name `zpool status` gives a `vdev_state_t` (`include/sys/fs/zfs.h`:
/// UNKNOWN 0, CLOSED 1, OFFLINE 2, REMOVED 3, CANT_OPEN 4, FAULTED 5, DEGRADED 6,
/// HEALTHY 7; `zpool_state_to_name` prints CANT_OPEN as UNAVAIL and HEALTHY as ONLINE).
pub fn vdev_state_name(state: u64) -> &'static str {
    match state {
        0 => "UNKNOWN",
        1 => "CLOSED",
        2 => "OFFLINE",
        3 => "REMOVED",
        4 => "UNAVAIL",
        5 => "FAULTED",
        6 => "DEGRADED",
        7 => "ONLINE",
        _ => "UNKNOWN",
    }
}

/// `vdev_state_t` values below DEGRADED: the vdev serves no I/O.
pub const VDEV_STATE_DEGRADED: u64 = 6;
pub const VDEV_STATE_HEALTHY: u64 = 7;

impl ZEvent {
    pub fn kind(&self) -> ZEventKind {
        ZEventKind::of(&self.class)
    }

    /// How long the reported I/O took at the disk, in nanoseconds: `zio_delay` of a report
    /// about a completed I/O (`delay`, and errors). A deadman report's I/O has not completed,
    /// and its `zio_delay` is the time the I/O was issued (nanoseconds since boot: recorded
    /// on the lab's kernel as `zio_timestamp` plus some microseconds), not a duration: none.
    pub fn io_latency_ns(&self) -> Option<u64> {
        match self.kind() {
            ZEventKind::Deadman => None,
            _ => self.zio.as_ref()?.delay_ns,
        }
    }

    /// The class after `fs.zfs.`.
    pub fn short_class(&self) -> &str {
        short_class(&self.class)
    }

    /// The device's name as `zpool status` shows a leaf: the path without `/dev/`, the
    /// `-part1`/partition suffix kept (it is what the pool holds).
    pub fn device(&self) -> Option<&str> {
        let path = self.vdev.as_ref()?.path.as_deref()?;
        Some(path.strip_prefix("/dev/").unwrap_or(path))
    }

    /// What the event is about: `tank/sdb1` for a device, `tank` for the pool, the class
    /// for an event that names neither.
    pub fn subject(&self) -> String {
        match (self.pool.as_deref(), self.device()) {
            (Some(pool), Some(dev)) => format!("{pool}/{dev}"),
            (Some(pool), None) => pool.to_owned(),
            (None, Some(dev)) => dev.to_owned(),
            (None, None) => self.short_class().to_owned(),
        }
    }

    /// How urgent the event is on its own, before any check judges it: data that could not
    /// be repaired and stuck I/O are critical, other error reports and a vdev leaving
    /// service warnings, the rest information.
    pub fn severity(&self) -> Severity {
        use ZEventKind::*;
        match self.kind() {
            Data | Deadman => Severity::Critical,
            Checksum | Io | Delay | ProbeFailure | DeviceFault | Removed => Severity::Warning,
            StateChange => match self.vdev.as_ref().and_then(|v| v.state) {
                Some(s) if s < VDEV_STATE_DEGRADED => Severity::Warning,
                Some(VDEV_STATE_DEGRADED) => Severity::Warning,
                _ => Severity::Info,
            },
            PoolDestroy | ScrubAbort | TrimCancel => Severity::Info,
            _ => Severity::Info,
        }
    }

    /// One sentence in zpulse's words, with the figures the event carries.
    pub fn summary(&self) -> String {
        use ZEventKind::*;
        let mut s = String::new();
        let pool = self.pool.as_deref().unwrap_or("(no pool)");
        let on = match self.device() {
            Some(dev) => format!("{pool}/{dev}"),
            None => pool.to_owned(),
        };
        match self.kind() {
            Checksum | Io | Data => {
                let what = match self.kind() {
                    Checksum => "checksum error",
                    Io => "I/O error",
                    _ => "unrecoverable data error",
                };
                let _ = write!(s, "{what} on {on}");
                if let Some(z) = &self.zio {
                    if let (Some(o), Some(n)) = (z.offset, z.size) {
                        let _ = write!(s, " at offset {o:#x}, {n} bytes");
                    }
                    if let Some(file) = &z.file {
                        let _ = write!(s, " in {file}");
                    }
                    if let (Some(os), Some(obj)) = (z.objset, z.object) {
                        let _ = write!(s, " (objset {os}, object {obj}");
                        if let (Some(l), Some(b)) = (z.level, z.blkid) {
                            let _ = write!(s, ", level {l}, block {b}");
                        }
                        s.push(')');
                    }
                    if let Some(e) = z.err {
                        let _ = write!(s, ", error {e}");
                    }
                }
            }
            Delay | Deadman => {
                let what = if self.kind() == Delay {
                    "slow I/O"
                } else {
                    "stuck I/O (deadman)"
                };
                let _ = write!(s, "{what} on {on}");
                if let Some(ns) = self.io_latency_ns() {
                    let _ = write!(s, ": {:.0} ms", ns as f64 / 1e6);
                }
            }
            StateChange => {
                let v = self.vdev.as_ref();
                let to = v.and_then(|v| v.state).map_or("UNKNOWN", vdev_state_name);
                let _ = write!(s, "{on} is now {to}");
                if let Some(from) = v.and_then(|v| v.previous_state) {
                    let _ = write!(s, " (was {})", vdev_state_name(from));
                }
            }
            History => {
                let h = self.history.as_ref();
                let name = h.and_then(|h| h.internal_name.as_deref());
                let text = h.and_then(|h| h.internal_str.as_deref().or(h.command.as_deref()));
                let _ = write!(s, "{pool} history: {}", name.unwrap_or("record"));
                if let Some(t) = text {
                    let _ = write!(s, " {t}");
                }
            }
            _ => {
                let words = self.short_class().replace(['_', '.'], " ");
                let _ = write!(s, "{on}: {words}");
                if let Some(t) = &self.resilver_type {
                    let _ = write!(s, " ({t})");
                }
            }
        }
        if self.before_start {
            s.push_str(" [queued before the agent started]");
        }
        s.chars()
            .take(crate::event::limits::SUMMARY_CHARS)
            .collect()
    }

    /// The record the sinks send: kind `zevent` (Forward tag `zpulse.zevent`), `check` the
    /// class (syslog's MSGID), the subject and summary above, and in `data` the typed fields
    /// and the raw pairs, every one under its kernel name, within the record's limits.
    pub fn to_event(&self) -> Event {
        let mut data = Data::new();
        data.insert("eid".into(), self.eid.into());
        data.insert("class".into(), self.class.clone().into());
        if self.before_start {
            data.insert("before_start".into(), true.into());
        }
        let mut put = |k: &str, v: Value| {
            if !matches!(v, Value::Null) {
                data.insert(k.to_owned(), v);
            }
        };
        put("pool", self.pool.clone().into());
        put("pool_guid", self.pool_guid.into());
        put("pool_state", self.pool_state.into());
        put("pool_context", self.pool_context.into());
        put("pool_failmode", self.pool_failmode.clone().into());
        put("resilver_type", self.resilver_type.clone().into());
        if let Some(v) = &self.vdev {
            put("vdev_guid", v.guid.into());
            put("vdev_type", v.kind.clone().into());
            put("vdev_path", v.path.clone().into());
            put("vdev_devid", v.devid.clone().into());
            put("vdev_physpath", v.physpath.clone().into());
            put("vdev_state", v.state.map(vdev_state_name).into());
            put(
                "vdev_laststate",
                v.previous_state.map(vdev_state_name).into(),
            );
            put("vdev_read_errors", v.read_errors.into());
            put("vdev_write_errors", v.write_errors.into());
            put("vdev_cksum_errors", v.checksum_errors.into());
            put("vdev_delays", v.delays.into());
            put("parent_guid", v.parent_guid.into());
            put("parent_type", v.parent_kind.clone().into());
            put("parent_path", v.parent_path.clone().into());
        }
        if let Some(z) = &self.zio {
            put("zio_err", z.err.into());
            put("zio_offset", z.offset.into());
            put("zio_size", z.size.into());
            put("zio_objset", z.objset.into());
            put("zio_object", z.object.into());
            put("file", z.file.clone().into());
            put("zio_level", z.level.into());
            put("zio_blkid", z.blkid.into());
            put("zio_delay", z.delay_ns.into());
            put("zio_priority", z.priority.into());
        }
        if let Some(c) = &self.checksum {
            put("cksum_algorithm", c.algorithm.clone().into());
            if !c.bad_ranges.is_empty() {
                let ranges = c
                    .bad_ranges
                    .iter()
                    .take(16)
                    .map(|&(a, b)| Value::List(vec![a.into(), b.into()]))
                    .collect();
                put("bad_ranges", Value::List(ranges));
            }
            put("bad_set_bits", c.bad_set_bits.into());
            put("bad_cleared_bits", c.bad_cleared_bits.into());
        }
        if let Some(h) = &self.history {
            put("history_hostname", h.hostname.clone().into());
            put("history_internal_name", h.internal_name.clone().into());
            put("history_internal_str", h.internal_str.clone().into());
            put("history_command", h.command.clone().into());
            put("history_txg", h.txg.into());
            put("history_dsname", h.dsname.clone().into());
        }
        // The raw pairs, as long as the record's item limit leaves room (the typed ones
        // above come first: they are what people read).
        let mut items = data.len();
        for (k, v) in &self.raw {
            let cost = value_items(v);
            let key: String = k
                .chars()
                .map(|c| if c.is_control() { '_' } else { c })
                .take(crate::event::limits::DATA_KEY_CHARS)
                .collect();
            if key.is_empty()
                || items + cost > crate::event::limits::DATA_ITEMS - 8
                || data.contains_key(&key)
            {
                continue;
            }
            if let Some(v) = printable(v) {
                items += cost;
                data.insert(key, v);
            }
        }
        Event {
            v: crate::event::EVENT_VERSION,
            kind: Kind::Zevent,
            host: String::new(),
            check: self
                .class
                .chars()
                .take(crate::event::limits::CHECK_CHARS)
                .collect(),
            severity: self.severity(),
            state: None,
            subject: self
                .subject()
                .chars()
                .take(crate::event::limits::SUBJECT_CHARS)
                .collect(),
            summary: self.summary(),
            advice: None,
            data,
        }
    }

    /// The event as MessagePack (a map with named keys): what `on_event` receives.
    pub fn to_msgpack(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).unwrap_or_default()
    }

    pub fn from_msgpack(bytes: &[u8]) -> Result<ZEvent, String> {
        rmp_serde::from_slice(bytes).map_err(|e| format!("not a MessagePack zevent: {e}"))
    }
}

/// How many items `v` counts against [`crate::event::limits::DATA_ITEMS`].
fn value_items(v: &Value) -> usize {
    match v {
        Value::List(l) => 1 + l.iter().map(value_items).sum::<usize>(),
        Value::Map(m) => 1 + m.values().map(value_items).sum::<usize>(),
        _ => 1,
    }
}

/// `v` as an event record accepts it: strings without control characters (replaced),
/// lists at most one level deep and 64 long, no maps (a nested nvlist is summarised by its
/// pair count).
fn printable(v: &Value) -> Option<Value> {
    match v {
        Value::Str(s) => Some(Value::Str(
            s.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(crate::event::limits::SUMMARY_CHARS)
                .collect(),
        )),
        Value::List(l) if l.len() <= 64 => {
            let flat: Option<Vec<Value>> = l
                .iter()
                .map(|x| match x {
                    Value::List(_) | Value::Map(_) => None,
                    other => printable(other),
                })
                .collect();
            flat.map(Value::List)
        }
        Value::List(_) | Value::Map(_) => None,
        Value::Float(f) if !f.is_finite() => None,
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Classes as `include/sys/fm/fs/zfs.h` and `include/sys/sysevent/eventdefs.h` define
    /// them (OpenZFS 2.1), prefixed as `zfs_ereport_start` (`ereport.fs.zfs.`),
    /// `zfs_post_common` (`resource.fs.zfs.`) and `spa_event_create` (`sysevent.fs.zfs.`,
    /// `EC_ZFS`/`ESC_ZFS_*`) post them.
    #[test]
    fn classes_have_their_kernel_meaning() {
        use ZEventKind::*;
        for (class, kind) in [
            ("ereport.fs.zfs.checksum", Checksum),
            ("ereport.fs.zfs.authentication", Checksum),
            ("ereport.fs.zfs.io", Io),
            ("ereport.fs.zfs.data", Data),
            ("ereport.fs.zfs.delay", Delay),
            ("ereport.fs.zfs.deadman", Deadman),
            ("ereport.fs.zfs.probe_failure", ProbeFailure),
            ("ereport.fs.zfs.vdev.open_failed", DeviceFault),
            ("ereport.fs.zfs.vdev.no_replicas", DeviceFault),
            ("resource.fs.zfs.statechange", StateChange),
            ("resource.fs.zfs.removed", Removed),
            ("sysevent.fs.zfs.resilver_finish", ResilverFinish),
            ("sysevent.fs.zfs.scrub_abort", ScrubAbort),
            ("sysevent.fs.zfs.pool_export", PoolExport),
            ("sysevent.fs.zfs.vdev_remove_dev", VdevRemove),
            ("sysevent.fs.zfs.history_event", History),
            ("sysevent.fs.zfs.snapshot_mount", Other),
            ("ereport.fs.zfs.something_new", Other),
        ] {
            assert_eq!(ZEventKind::of(class), kind, "{class}");
        }
        assert!(ZEventKind::Data.is_error_report());
        assert!(!ZEventKind::StateChange.is_error_report());
    }

    #[test]
    fn vdev_states_are_named_as_zpool_status_names_them() {
        assert_eq!(vdev_state_name(7), "ONLINE");
        assert_eq!(vdev_state_name(4), "UNAVAIL");
        assert_eq!(vdev_state_name(2), "OFFLINE");
        assert_eq!(vdev_state_name(99), "UNKNOWN");
    }

    fn statechange() -> ZEvent {
        ZEvent {
            eid: 12,
            class: "resource.fs.zfs.statechange".into(),
            time: EventTime {
                seconds: 1_700_000_000,
                nanos: 5,
            },
            pool: Some("tank".into()),
            pool_guid: Some(42),
            vdev: Some(ZEventVdev {
                guid: Some(7),
                path: Some("/dev/sdb1".into()),
                state: Some(2),
                previous_state: Some(7),
                ..Default::default()
            }),
            raw: BTreeMap::from([
                ("vdev_spare_guids".into(), Value::List(vec![1u64.into()])),
                ("odd\u{1b}text".into(), Value::Str("a\u{1b}b".into())),
            ]),
            ..Default::default()
        }
    }

    #[test]
    fn the_record_sinks_send_is_valid_and_names_the_device() {
        let e = statechange().to_event();
        e.validate().unwrap();
        assert_eq!(e.tag(), "zpulse.zevent");
        assert_eq!(e.check, "resource.fs.zfs.statechange");
        assert_eq!(e.subject, "tank/sdb1");
        assert_eq!(e.summary, "tank/sdb1 is now OFFLINE (was ONLINE)");
        assert_eq!(e.severity, Severity::Warning);
        assert_eq!(e.data["vdev_state"], Value::Str("OFFLINE".into()));
        assert_eq!(e.data["eid"], Value::UInt(12));
        // Raw pairs are kept, with control characters made printable.
        assert_eq!(
            e.data["vdev_spare_guids"],
            Value::List(vec![Value::UInt(1)])
        );
    }

    #[test]
    fn a_huge_raw_payload_still_makes_a_valid_record() {
        let mut z = statechange();
        for i in 0..400 {
            z.raw
                .insert(format!("k{i:03}"), Value::List(vec![1u64.into(); 64]));
            z.raw
                .insert(format!("s{i:03}"), Value::Str("x".repeat(5000)));
        }
        z.raw.insert(
            "nested".into(),
            Value::Map(BTreeMap::from([("a".into(), 1u64.into())])),
        );
        z.class = format!("ereport.fs.zfs.{}", "x".repeat(100));
        let e = z.to_event();
        e.validate().unwrap();
        assert!(!e.data.contains_key("nested"));
    }

    #[test]
    fn messagepack_round_trip() {
        let z = statechange();
        assert_eq!(ZEvent::from_msgpack(&z.to_msgpack()).unwrap(), z);
        assert!(ZEvent::from_msgpack(b"\xc1").is_err());
    }
}
