//! The daemon's side of kernel events: the thread that reads the queue ([`read_loop`]), the
//! cursor kept across restarts ([`Keeper`]), and the note of what the kernel dropped.

use super::StageMsg;
use super::log;
use crate::plugins::Level;
use crate::sinks::Stamped;
use crate::sources::zevent::{self, BATCH_MAX, Batch, Cursor, Resumed};
use crossbeam_channel::{Receiver, Sender, select};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use zpulse_proto::event::{Event, EventTime, Kind, Severity, State};

/// How often a queue that cannot be opened (no ZFS module yet, a privilege missing) is tried
/// again.
const REOPEN_EVERY: Duration = Duration::from_secs(30);
/// The cursor is written at most this often (and at the stop): a crash repeats at most
/// this much of the queue, a burst does not write the file per batch.
const STORE_EVERY: Duration = Duration::from_secs(1);
/// Waits in the kernel interrupted in a row before the thread pauses between them.
const INTERRUPTS_BEFORE_PAUSE: u32 = 3;
const INTERRUPTED_PAUSE: Duration = Duration::from_millis(200);

/// The cursor file: what the last run handled, and what this one has.
pub(super) struct Keeper {
    path: Option<PathBuf>,
    boot_id: String,
    /// Read at the start, for the reader's resume.
    kept: Option<Cursor>,
    pending: Option<Cursor>,
    stored_at: Option<Instant>,
}

impl Keeper {
    /// The keeper of `config`'s cursor; `live` false (a replay) keeps none.
    pub(super) fn new(config: &zevent::Config, live: bool) -> Keeper {
        let path = (live && config.enabled).then(|| config.cursor_path());
        let kept = match path.as_deref().map(Cursor::load) {
            Some(Ok(kept)) => kept,
            Some(Err(why)) => {
                log::log(
                    Level::Warn,
                    "zevents",
                    &format!(
                        "{why}; reading the whole queue (events already handled may come again)"
                    ),
                );
                None
            }
            None => None,
        };
        Keeper {
            path,
            boot_id: zevent::boot_id(),
            kept,
            pending: None,
            stored_at: None,
        }
    }

    /// The cursor to resume from, with this boot's id.
    pub(super) fn kept(&self) -> (Option<Cursor>, String) {
        (self.kept.clone(), self.boot_id.clone())
    }

    /// `batch` went to the sinks and the plugins: its last event is handled.
    pub(super) fn handled(&mut self, batch: &Batch) {
        let Some(last) = batch.events.last() else {
            return;
        };
        self.pending = Some(Cursor {
            boot_id: self.boot_id.clone(),
            eid: last.eid,
            time: last.time,
        });
        if self.stored_at.is_none_or(|at| at.elapsed() >= STORE_EVERY) {
            self.flush();
        }
    }

    /// Writes the pending cursor, if any.
    pub(super) fn flush(&mut self) {
        let (Some(path), Some(cursor)) = (&self.path, self.pending.take()) else {
            return;
        };
        self.stored_at = Some(Instant::now());
        if let Err(why) = cursor.store(path) {
            log::log(Level::Warn, "zevents", &why);
        }
    }
}

/// Reads the live queue until the agent stops: resumes after the kept cursor, then waits in
/// the kernel for each next event and hands every batch to the plugin stage (waiting for
/// room: while the stage is busy, events wait in the kernel's queue, which is what it is
/// for). A queue that cannot be opened is tried again every [`REOPEN_EVERY`], and why is
/// said once per distinct reason.
pub(super) fn read_loop(
    kept: (Option<Cursor>, String),
    stage: Sender<StageMsg>,
    stopping: Receiver<()>,
) {
    let (kept, boot_id) = kept;
    let started = EventTime::from_system_time(SystemTime::now());
    let mut said = String::new();
    // Waits before the queue is tried again; false when the agent stops meanwhile.
    let wait = || {
        !stopping
            .recv_timeout(REOPEN_EVERY)
            .is_err_and(|e| e.is_disconnected())
    };
    let mut say = |level: Level, why: String| {
        if why != said {
            log::log(level, "zevents", &why);
            said = why;
        }
    };
    loop {
        let (platform, abi) = zevent::live_platform();
        let mut reader = match zevent::open_live(platform, abi, started) {
            Ok(r) => r,
            Err(e) => {
                say(Level::Info, format!("kernel events are not read: {e}"));
                if !wait() {
                    return;
                }
                continue;
            }
        };
        match reader.resume(kept.as_ref(), &boot_id) {
            Ok(Resumed::Fresh) => say(
                Level::Info,
                "reading kernel events from the oldest queued (those before now are history)"
                    .into(),
            ),
            Ok(Resumed::After(eid)) => say(
                Level::Info,
                format!("reading kernel events after event {eid}"),
            ),
            Ok(Resumed::Dropped(eid)) => say(
                Level::Warn,
                format!(
                    "event {eid}, the last handled, has left the kernel's queue: reading from \
                     the oldest one queued"
                ),
            ),
            Err(e) => {
                say(Level::Warn, format!("kernel events are not read: {e}"));
                if !wait() {
                    return;
                }
                continue;
            }
        }
        let mut pause_or_stop = |pause: Duration| {
            stopping
                .recv_timeout(pause)
                .is_err_and(|e| e.is_disconnected())
        };
        match follow(&mut reader, &stage, &stopping, &mut pause_or_stop) {
            Followed::Stopped => return,
            Followed::Failed(e) => say(Level::Warn, format!("reading kernel events failed: {e}")),
        }
        if !wait() {
            return;
        }
    }
}

/// How [`follow`] ended.
enum Followed {
    /// The agent is stopping (or the stage is gone).
    Stopped,
    /// The queue failed: it is opened again after a pause.
    Failed(crate::sources::zfs_ioctl::IoctlError),
}

/// Hands every batch `reader` reads to the stage until the agent stops or the queue fails.
/// `pause_or_stop` waits up to the given time for the agent's stop and says whether it came
/// (the daemon waits on its stop channel; tests count the pauses instead of sleeping).
fn follow<D: crate::sources::zfs_ioctl::Ioctl>(
    reader: &mut zevent::Reader<D>,
    stage: &Sender<StageMsg>,
    stopping: &Receiver<()>,
    pause_or_stop: &mut dyn FnMut(Duration) -> bool,
) -> Followed {
    let mut interrupted = 0u32;
    loop {
        let batch = match reader.read(true, BATCH_MAX) {
            Ok(batch) => batch,
            Err(e) => return Followed::Failed(e),
        };
        // A wait in the kernel ends without an event only when a signal interrupts it
        // (EINTR). A few in a row is a storm of signals, or a kernel that answers EINTR at
        // once: the thread pauses rather than spin, and ends if the agent is stopping.
        if batch.is_empty() {
            interrupted += 1;
            let pause = if interrupted >= INTERRUPTS_BEFORE_PAUSE {
                INTERRUPTED_PAUSE
            } else {
                Duration::ZERO
            };
            if pause_or_stop(pause) {
                return Followed::Stopped;
            }
            continue;
        }
        interrupted = 0;
        select! {
            send(stage, StageMsg::Zevents(Box::new(batch))) -> sent => {
                if sent.is_err() {
                    return Followed::Stopped;
                }
            }
            recv(stopping) -> _ => return Followed::Stopped,
        }
    }
}

/// An agent event saying what the kernel dropped before the agent read it, if it did.
pub fn dropped_note(batch: &Batch) -> Option<Stamped> {
    if batch.dropped == 0 && batch.missing == 0 {
        return None;
    }
    let time = batch
        .events
        .first()
        .map(|e| e.time)
        .unwrap_or_else(|| EventTime::from_system_time(SystemTime::now()));
    let summary = format!(
        "the kernel dropped events before zpulse read them: it counts {} for zpulse's cursor, \
         and {} event ids never came (its queue holds zfs_zevent_len_max events; a burst, or \
         the agent stopped, outran it)",
        batch.dropped, batch.missing
    );
    let mut event = Event::finding(
        "agent.zevents",
        State::Raised,
        Severity::Warning,
        "zevents",
        summary,
    )
    .with("dropped", batch.dropped)
    .with("missing", batch.missing)
    .with_advice(
        "Raise zfs_zevent_len_max if bursts outrun the queue; what was dropped is lost to \
             every reader, ZED's included.",
    );
    event.kind = Kind::Agent;
    Some(Stamped { time, event })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::zfs_ioctl::fake::FakeQueue;
    use crossbeam_channel::bounded;

    /// A kernel whose every wait is interrupted (EINTR at once, as under a storm of
    /// signals, or forever): each interrupted wait is followed by one pause, the first
    /// `INTERRUPTS_BEFORE_PAUSE - 1` of them empty (a signal or two is normal), every later
    /// one `INTERRUPTED_PAUSE` long, so the thread cannot spin; and the stop ends it.
    #[test]
    fn interrupted_waits_pause_and_end_at_the_stop() {
        let mut queue = FakeQueue::new(Vec::new());
        queue.fail = Some(libc::EINTR);
        let mut reader = zevent::Reader::new(queue, 3, EventTime::default());
        let (stage, _inbox) = bounded::<StageMsg>(1);
        let (_stop_tx, stopping) = bounded::<()>(0);
        let mut pauses = Vec::new();
        let mut pause_or_stop = |pause: Duration| {
            pauses.push(pause);
            pauses.len() == 10
        };
        let end = follow(&mut reader, &stage, &stopping, &mut pause_or_stop);
        assert!(matches!(end, Followed::Stopped));
        let quiet = (INTERRUPTS_BEFORE_PAUSE - 1) as usize;
        assert_eq!(pauses[..quiet], vec![Duration::ZERO; quiet]);
        assert_eq!(pauses[quiet..], vec![INTERRUPTED_PAUSE; 10 - quiet]);
    }

    #[test]
    fn a_failing_queue_ends_the_follow_with_its_error() {
        let mut queue = FakeQueue::new(Vec::new());
        queue.fail = Some(libc::ESHUTDOWN);
        let mut reader = zevent::Reader::new(queue, 3, EventTime::default());
        let (stage, _inbox) = bounded::<StageMsg>(1);
        let (_stop_tx, stopping) = bounded::<()>(0);
        let mut never_stop = |_: Duration| false;
        match follow(&mut reader, &stage, &stopping, &mut never_stop) {
            Followed::Failed(e) => assert!(e.to_string().contains("unloaded"), "{e}"),
            Followed::Stopped => panic!("a failing queue is not a stop"),
        }
    }
}
