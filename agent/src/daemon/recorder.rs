//! The history's thread: the sampler hands it each snapshot without waiting (a full queue
//! drops the snapshot for the history alone), and it appends them with
//! [`crate::history::Writer`]. A failing disk is logged (rate-limited by the log) and never
//! stops sampling; opening the history again is tried at most once a minute.

use crate::daemon::log;
use crate::history::{self, Writer};
use crate::plugins::Level;
use crossbeam_channel::{Receiver, Sender, bounded, select};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use zpulse_proto::Snapshot;

/// Snapshots that may wait for the disk: a minute at the default interval.
const QUEUE: usize = 6;
/// Seconds (of snapshot time) between attempts to open a history that failed to open.
const RETRY_OPEN_S: f64 = 60.0;

enum Msg {
    Snapshot(Arc<Snapshot>),
    /// A batch of kernel events, recorded between the snapshots they came between.
    Zevents(Vec<zpulse_proto::ZEvent>),
    Config(history::Config),
}

/// Kernel events that may wait for the disk: far more than a burst the kernel's queue
/// holds (`zfs_zevent_len_max`, 512 by default), so a slow disk loses none of a burst.
const EVENTS_WAITING_MAX: usize = 65_536;

/// The sampler's side: cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    tx: Sender<Msg>,
    /// Kernel events not yet handed over: they wait here while the queue is full (a
    /// snapshot may be dropped, an event is not) and go with the next message.
    waiting: Arc<Mutex<Vec<zpulse_proto::ZEvent>>>,
}

impl Recorder {
    /// Hands a snapshot over without waiting; when the queue is full it is not recorded.
    pub fn offer(&self, snapshot: Arc<Snapshot>) {
        if self.tx.try_send(Msg::Snapshot(snapshot)).is_err() {
            log::log(
                Level::Warn,
                "history",
                "the disk is behind: a snapshot was not recorded",
            );
        }
    }

    /// Hands a snapshot over, waiting for room (a replay loses nothing) unless the agent
    /// stops meanwhile.
    pub fn send(&self, snapshot: Arc<Snapshot>, stopping: &Receiver<()>) {
        select! {
            send(self.tx, Msg::Snapshot(snapshot)) -> _ => {},
            recv(stopping) -> _ => {},
        }
    }

    /// Hands a batch of kernel events over without waiting. Unlike a snapshot, a batch is
    /// never dropped because the disk is behind: it waits (up to [`EVENTS_WAITING_MAX`]
    /// events) and is recorded before the next snapshot.
    pub fn offer_zevents(&self, events: Vec<zpulse_proto::ZEvent>) {
        if events.is_empty() {
            return;
        }
        let waiting = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            let room = EVENTS_WAITING_MAX.saturating_sub(waiting.len());
            let lost = events.len().saturating_sub(room);
            waiting.extend(events.into_iter().take(room));
            if lost > 0 {
                log::log(
                    Level::Warn,
                    "history",
                    &format!(
                        "the disk is far behind: {lost} kernel events were not recorded \
                         ({EVENTS_WAITING_MAX} wait already)"
                    ),
                );
            }
            std::mem::take(&mut *waiting)
        };
        if let Err(e) = self.tx.try_send(Msg::Zevents(waiting)) {
            let Msg::Zevents(back) = e.into_inner() else {
                return;
            };
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            let newer = std::mem::replace(&mut *waiting, back);
            waiting.extend(newer);
        }
    }

    /// A reloaded `[history]`: the history is reopened when it changed.
    pub fn reconfigure(&self, config: history::Config) {
        let _ = self.tx.try_send(Msg::Config(config));
    }
}

/// Starts the thread. `replay`: the snapshots are a recording, written only to a configured
/// `dir` (see [`history::Config::dir`]).
pub fn start(config: history::Config, replay: bool) -> (Recorder, Option<JoinHandle<()>>) {
    let (tx, rx) = bounded(QUEUE);
    let waiting = Arc::new(Mutex::new(Vec::new()));
    let recorder = Recorder {
        tx,
        waiting: Arc::clone(&waiting),
    };
    let thread = std::thread::Builder::new()
        .name("history".into())
        .spawn(move || record(config, replay, rx, &waiting));
    match thread {
        Ok(t) => (recorder, Some(t)),
        Err(e) => {
            log::log(
                Level::Error,
                "history",
                &format!("cannot start the history thread, no history is kept: {e}"),
            );
            (recorder, None)
        }
    }
}

fn wanted(config: &history::Config, replay: bool) -> bool {
    config.enabled && !(replay && config.dir.is_none())
}

/// The events [`Recorder::offer_zevents`] could not hand over, once every message queued
/// before them is handled (so events are recorded in the order they came).
fn take_waiting(inbox: &Receiver<Msg>, waiting: &Mutex<Vec<zpulse_proto::ZEvent>>) -> Option<Msg> {
    if !inbox.is_empty() {
        return None;
    }
    let events = std::mem::take(&mut *waiting.lock().unwrap_or_else(|p| p.into_inner()));
    (!events.is_empty()).then_some(Msg::Zevents(events))
}

fn record(
    mut config: history::Config,
    replay: bool,
    inbox: Receiver<Msg>,
    waiting: &Mutex<Vec<zpulse_proto::ZEvent>>,
) {
    if replay && config.enabled && config.dir.is_none() {
        log::log(
            Level::Info,
            "history",
            "a replay is not recorded in the host's history; set [history] dir to record it",
        );
    }
    let mut writer: Option<Writer> = None;
    let mut last_attempt: Option<f64> = None;
    let mut messages = inbox
        .iter()
        .chain(std::iter::from_fn(|| take_waiting(&inbox, waiting)));
    while let Some(msg) = take_waiting(&inbox, waiting).or_else(|| messages.next()) {
        let snapshot = match msg {
            Msg::Config(next) => {
                if next != config {
                    writer = None;
                    last_attempt = None;
                    config = next;
                }
                continue;
            }
            // Events go into the history opened for the snapshots (none before the first).
            Msg::Zevents(events) => {
                if let (Some(w), true) = (writer.as_mut(), wanted(&config, replay))
                    && let Err(e) = w.append_zevents(&events)
                {
                    log::log(Level::Warn, "history", &e);
                }
                continue;
            }
            Msg::Snapshot(s) => s,
        };
        if !wanted(&config, replay) {
            continue;
        }
        if writer.is_none()
            && last_attempt.is_none_or(|t| (snapshot.taken_at - t).abs() >= RETRY_OPEN_S)
        {
            last_attempt = Some(snapshot.taken_at);
            match Writer::open(&config) {
                Ok(mut w) => {
                    for note in w.take_notes() {
                        log::log(Level::Warn, "history", &note);
                    }
                    writer = Some(w);
                }
                Err(e) => log::log(
                    Level::Error,
                    "history",
                    &format!("{e} (no history is recorded; retried every minute)"),
                ),
            }
        }
        let Some(w) = writer.as_mut() else { continue };
        if let Err(e) = w.append(&snapshot) {
            log::log(Level::Warn, "history", &e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(ids: &[u64]) -> Vec<zpulse_proto::ZEvent> {
        (ids.iter())
            .map(|&eid| zpulse_proto::ZEvent {
                eid,
                ..Default::default()
            })
            .collect()
    }

    fn ids(msg: Option<Msg>) -> Vec<u64> {
        match msg {
            Some(Msg::Zevents(e)) => e.iter().map(|e| e.eid).collect(),
            _ => Vec::new(),
        }
    }

    /// A disk so slow that the queue is full when events come: they wait instead of being
    /// dropped, and the history's thread takes them after what was queued before them.
    #[test]
    fn events_that_find_the_queue_full_wait_and_keep_their_order() {
        let (tx, inbox) = bounded(1);
        let waiting = Arc::new(Mutex::new(Vec::new()));
        let recorder = Recorder {
            tx,
            waiting: Arc::clone(&waiting),
        };
        recorder.offer_zevents(events(&[1, 2]));
        recorder.offer_zevents(events(&[3]));
        recorder.offer_zevents(events(&[4, 5]));
        assert!(
            take_waiting(&inbox, &waiting).is_none(),
            "queued ones go first"
        );
        assert_eq!(ids(inbox.try_recv().ok()), vec![1, 2]);
        assert_eq!(ids(take_waiting(&inbox, &waiting)), vec![3, 4, 5]);
        assert!(take_waiting(&inbox, &waiting).is_none());
    }
}
