//! Kernel events: the zevent queue read with a cursor of the agent's own, so that what
//! happens between two samples is never lost (docs/events.md).
//!
//! * [`decode`] — one event's packed nvlist into a [`ZEvent`] (pure).
//! * [`cursor`] — the last event handled, kept in the state directory across restarts, in
//!   a small text file (pure parser and writer, and the atomic file write).
//! * [`Reader`] — the `/dev/zfs` descriptor and its cursor: resumes after the kept event,
//!   reads in batches, blocking when the queue is empty (no polling), and counts what the
//!   kernel dropped. Written against the [`Ioctl`] trait, so it is tested without a kernel.
//!
//! The reader never takes an event from ZED, zfsd or `zpool events`: the queue is the
//! kernel's and each descriptor has its own cursor (`zfs_ioctl::events`).

pub mod cursor;
pub mod decode;

use crate::base::clock::{Clock, SystemClock};
use crate::sources::zfs_ioctl::events::{Next, events_next, events_seek};
use crate::sources::zfs_ioctl::objects;
use crate::sources::zfs_ioctl::{Ioctl, IoctlError, Platform};
pub use cursor::Cursor;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use zpulse_proto::event::EventTime;
use zpulse_proto::zevent::ZEvent;

/// `[events]` of `zpulse.toml`.
///
/// ```toml
/// [events]
/// enabled = true
/// cursor = "/var/lib/zpulse/zevent-cursor"  # FreeBSD: /var/db/zpulse/zevent-cursor
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Whether `zpulse run` reads the kernel's event queue.
    pub enabled: bool,
    /// The file that keeps the last event handled; default `zevent-cursor` under the state
    /// directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            enabled: true,
            cursor: None,
        }
    }
}

impl Config {
    pub fn cursor_path(&self) -> PathBuf {
        self.cursor
            .clone()
            .unwrap_or_else(|| crate::history::state_dir().join("zevent-cursor"))
    }

    pub fn check(&self) -> Result<(), String> {
        if self
            .cursor
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err("cursor: empty; leave it out for the default".into());
        }
        Ok(())
    }
}

/// Events read at most per batch: a burst is handed on in pieces this size, so the first
/// of them reach the checks without waiting for the whole burst.
pub const BATCH_MAX: usize = 1024;

/// What one read gave.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Batch {
    /// In the kernel's order.
    pub events: Vec<ZEvent>,
    /// Each event's packed nvlist as the kernel returned it, in the same order (what a
    /// capture records).
    pub packed: Vec<Vec<u8>>,
    /// What the kernel said this cursor missed (`zc_cookie`: events dropped from the queue
    /// while the cursor was on them, and events its rate limiter dropped).
    pub dropped: u64,
    /// Event ids that never came: the gaps between consecutive events read (events the
    /// queue dropped before this reader got to them).
    pub missing: u64,
    /// Events that did not decode, with why (counted, never fatal).
    pub undecodable: Vec<String>,
}

impl Batch {
    /// Adds `other`'s events and counts after this one's.
    pub fn append(&mut self, other: Batch) {
        self.events.extend(other.events);
        self.packed.extend(other.packed);
        self.dropped += other.dropped;
        self.missing += other.missing;
        self.undecodable.extend(other.undecodable);
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
            && self.dropped == 0
            && self.missing == 0
            && self.undecodable.is_empty()
    }
}

/// How [`Reader::resume`] found the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resumed {
    /// No cursor kept, or one of another boot: every queued event is read.
    Fresh,
    /// The kept event is still queued: reading goes on after it.
    After(u64),
    /// The kept event is gone: reading starts at the oldest event after it, and the ids
    /// between are counted as missing.
    Dropped(u64),
}

/// The event queue and this reader's place in it.
pub struct Reader<D> {
    dev: D,
    cursor_fd: i32,
    /// The last event read (or the kept cursor's, until the first read).
    last: Option<(u64, EventTime)>,
    /// Events at or before this one are skipped: the kept cursor's, when its event had left
    /// the queue (every later event reads as new, whatever its id).
    skip_through: Option<(u64, EventTime)>,
    /// Events posted before this are marked [`ZEvent::before_start`].
    started: EventTime,
    /// Where a dataset is mounted, for naming the file an error report is about
    /// ([`ZEventZio::file`](zpulse_proto::zevent::ZEventZio::file)); `None`: files are not
    /// named (a queue double without the naming calls).
    mounts: Option<MountLookup>,
    /// Keeps [`NAMING_BUDGET`].
    clock: Arc<dyn Clock>,
}

/// The mount point of a dataset, if it is mounted.
pub type MountLookup = Box<dyn Fn(&str) -> Option<String> + Send>;

/// Distinct files named per read at most: a burst of errors on many objects costs at most
/// this many pairs of calls; the rest keep their object numbers only.
const FILES_NAMED_MAX: usize = 64;

/// Time one read may spend naming files: each name costs the pool a few metadata reads
/// (cold ones go to disk), and the events it reads must reach the checks within the second
/// they were posted. Reports past it keep their object numbers only.
pub const NAMING_BUDGET: Duration = Duration::from_millis(250);

impl<D: Ioctl> Reader<D> {
    /// A reader over `dev` whose cursor is `cursor_fd`'s (the descriptor `dev` issues its
    /// calls on), marking events older than `started` as history.
    pub fn new(dev: D, cursor_fd: i32, started: EventTime) -> Reader<D> {
        Reader {
            dev,
            cursor_fd,
            last: None,
            skip_through: None,
            started,
            mounts: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// Names the file of each error report read from now on, with `mounts` telling where
    /// datasets are mounted, within [`NAMING_BUDGET`] a read as `clock` keeps it.
    pub fn naming_files(mut self, mounts: MountLookup, clock: Arc<dyn Clock>) -> Reader<D> {
        self.mounts = Some(mounts);
        self.clock = clock;
        self
    }

    /// Puts the cursor after `kept` when it is this boot's: the same queue, so every event
    /// after it is new and none before it is read again.
    pub fn resume(&mut self, kept: Option<&Cursor>, boot_id: &str) -> Result<Resumed, IoctlError> {
        let Some(kept) = kept.filter(|c| c.boot_id == boot_id) else {
            return Ok(Resumed::Fresh);
        };
        if events_seek(&mut self.dev, self.cursor_fd, kept.eid)? {
            self.last = Some((kept.eid, kept.time));
            Ok(Resumed::After(kept.eid))
        } else {
            self.skip_through = Some((kept.eid, kept.time));
            Ok(Resumed::Dropped(kept.eid))
        }
    }

    /// Up to `max` events, without waiting when `wait` is false. With `wait`, a call on an
    /// empty queue blocks in the kernel until an event is posted (no polling), then takes
    /// what else is queued without waiting. The wait ends early only with a signal (an
    /// empty batch).
    pub fn read(&mut self, wait: bool, max: usize) -> Result<Batch, IoctlError> {
        let mut batch = Batch::default();
        let mut block = wait;
        while batch.events.len() + batch.undecodable.len() < max.max(1) {
            let next = match events_next(&mut self.dev, self.cursor_fd, block) {
                Err(IoctlError::ReplyTooLarge { needed, limit, .. }) => {
                    // The cursor stays before an event it cannot take: past it by its id (the
                    // one after the last read), or the queue cannot be read at all.
                    let Some((last, _)) = self.last else {
                        return Err(IoctlError::ReplyTooLarge {
                            call: "ZFS_IOC_EVENTS_NEXT",
                            needed,
                            limit,
                        });
                    };
                    if !events_seek(&mut self.dev, self.cursor_fd, last + 1)? {
                        return Err(IoctlError::ReplyTooLarge {
                            call: "ZFS_IOC_EVENTS_NEXT",
                            needed,
                            limit,
                        });
                    }
                    self.last = Some((last + 1, self.last.map_or(EventTime::default(), |l| l.1)));
                    batch.undecodable.push(format!(
                        "event {}: the kernel claims {needed} bytes for it, more than the \
                         {limit} any event can take; skipped",
                        last + 1
                    ));
                    block = false;
                    continue;
                }
                other => other?,
            };
            let (packed, dropped) = match next {
                Next::Event { packed, dropped } => (packed, dropped),
                Next::Empty => break,
            };
            block = false;
            batch.dropped += dropped;
            match decode::decode(&packed) {
                Ok(mut event) => {
                    if self.skipped(&event) {
                        continue;
                    }
                    if let Some((last, _)) = self.last
                        && event.eid > last + 1
                    {
                        batch.missing += event.eid - last - 1;
                    }
                    self.last = Some((event.eid, event.time));
                    event.before_start = event.time < self.started;
                    batch.events.push(event);
                    batch.packed.push(packed);
                }
                Err(e) => batch.undecodable.push(e.to_string()),
            }
        }
        self.name_files(&mut batch.events);
        Ok(batch)
    }

    /// Sets the file of every error report (checksum, I/O, data: what `zpool status -v`
    /// lists) that has an objset and an object, asking the kernel once per distinct (pool,
    /// objset, object) of the batch. Slow-I/O reports (`delay`, `deadman`) keep their object
    /// numbers only: naming a file reads the pool's metadata, and on a pool whose I/O is stuck
    /// that read is stuck too — the lab's deadman run held a capture for over four minutes on it, and the
    /// events behind it with it.
    fn name_files(&mut self, events: &mut [ZEvent]) {
        use zpulse_proto::zevent::ZEventKind;
        let Some(mounts) = &self.mounts else { return };
        let deadline = self.clock.now() + NAMING_BUDGET;
        let mut named: std::collections::HashMap<(String, u64, u64), String> = Default::default();
        for event in events {
            if !matches!(
                event.kind(),
                ZEventKind::Checksum | ZEventKind::Io | ZEventKind::Data
            ) {
                continue;
            }
            let (Some(pool), Some(zio)) = (&event.pool, event.zio.as_mut()) else {
                continue;
            };
            let (Some(dsobj), Some(obj)) = (zio.objset, zio.object) else {
                continue;
            };
            let key = (pool.clone(), dsobj, obj);
            if let Some(name) = named.get(&key) {
                zio.file = Some(name.clone());
            } else if named.len() < FILES_NAMED_MAX && self.clock.now() < deadline {
                let name = objects::file_name(&mut self.dev, pool, dsobj, obj, mounts);
                zio.file = Some(name.clone());
                named.insert(key, name);
            }
        }
    }

    /// Everything queued after the cursor, without waiting: batch after batch until the
    /// queue is empty (what `zpulse capture` and `zpulse once` take).
    pub fn drain(&mut self) -> Result<Batch, IoctlError> {
        let mut all = Batch::default();
        loop {
            let b = self.read(false, BATCH_MAX)?;
            if b.is_empty() {
                return Ok(all);
            }
            all.append(b);
        }
    }

    /// Whether `event` was handled before the restart (the kept cursor's event had left the
    /// queue, so reading started at the oldest one). An id at or below the kept one that is
    /// also no newer is one of those; a newer one with a small id is a new queue (the module
    /// was reloaded), from which point nothing is skipped.
    fn skipped(&mut self, event: &ZEvent) -> bool {
        let Some((eid, time)) = self.skip_through else {
            return false;
        };
        if event.eid <= eid && event.time <= time {
            return true;
        }
        self.skip_through = None;
        if event.eid > eid {
            // The ids between the kept one and this one went while the agent was not reading.
            self.last = Some((eid, time));
        }
        false
    }

    /// Where this reader is, to keep for the next start.
    pub fn cursor(&self, boot_id: &str) -> Option<Cursor> {
        self.last.map(|(eid, time)| Cursor {
            boot_id: boot_id.to_owned(),
            eid,
            time,
        })
    }
}

/// The live queue: `/dev/zfs` opened for this reader alone.
pub fn open_live(
    platform: Platform,
    freebsd_abi: Option<u64>,
    started: EventTime,
) -> Result<Reader<crate::sources::zfs_ioctl::device::ZfsDevice>, IoctlError> {
    let dev = crate::sources::zfs_ioctl::device::ZfsDevice::open(
        std::path::Path::new(crate::sources::zfs_ioctl::device::DEVICE),
        platform,
        freebsd_abi,
    )?;
    let fd = dev.cursor_fd();
    Ok(
        Reader::new(dev, fd, started)
            .naming_files(Box::new(live_mountpoint), Arc::new(SystemClock)),
    )
}

/// Where `dataset` is mounted on this machine. Linux: `/proc/self/mounts`, read afresh at
/// each error report named (a mount can change any time). FreeBSD: not looked up, so files
/// are named `DATASET:PATH` (the mount table is `getfsstat(2)`, a call zpulse does not make).
fn live_mountpoint(dataset: &str) -> Option<String> {
    #[cfg(target_os = "freebsd")]
    {
        let _ = dataset;
        None
    }
    #[cfg(not(target_os = "freebsd"))]
    {
        let table =
            crate::sources::root::read_regular(std::path::Path::new("/proc/self/mounts"), 4 << 20)
                .ok()?;
        crate::sources::linux::mounts::zfs_mountpoint(&table, dataset)
    }
}

/// What identifies this boot, so that a cursor kept by an earlier boot (whose queue is gone)
/// is not sought in this one: Linux's `/proc/sys/kernel/random/boot_id`, FreeBSD's
/// `kern.boottime`. Empty when it cannot be read: every cursor is then taken as another
/// boot's, which reads the queue again rather than miss anything.
pub fn boot_id() -> String {
    #[cfg(target_os = "freebsd")]
    {
        use crate::sources::freebsd::Sysctl as _;
        match crate::sources::freebsd::LiveSysctl::new().read("kern.boottime") {
            Ok(v) => format!("boottime {v:?}"),
            Err(_) => String::new(),
        }
    }
    #[cfg(not(target_os = "freebsd"))]
    {
        let path = std::path::Path::new("/proc/sys/kernel/random/boot_id");
        crate::sources::root::read_regular(path, 64)
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_default()
    }
}

/// This machine's platform and, on FreeBSD, its ioctl ABI (`vfs.zfs.version.ioctl`).
pub fn live_platform() -> (Platform, Option<u64>) {
    #[cfg(target_os = "freebsd")]
    {
        use crate::sources::freebsd::Sysctl as _;
        let abi = crate::sources::freebsd::LiveSysctl::new()
            .u64("vfs.zfs.version.ioctl")
            .ok();
        (Platform::Freebsd, abi)
    }
    #[cfg(not(target_os = "freebsd"))]
    {
        (Platform::Linux, None)
    }
}

#[cfg(test)]
mod tests;
