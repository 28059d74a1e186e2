//! The history's thread: the sampler hands it each snapshot without waiting (a full queue
//! drops the snapshot for the history alone), and it appends them with
//! [`crate::history::Writer`]. A failing disk is logged (rate-limited by the log) and never
//! stops sampling; opening the history again is tried at most once a minute.

use crate::daemon::log;
use crate::history::{self, Writer};
use crate::plugins::Level;
use crossbeam_channel::{Receiver, Sender, bounded, select};
use std::sync::Arc;
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

/// The sampler's side: cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    tx: Sender<Msg>,
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

    /// Hands a batch of kernel events over without waiting (as [`Recorder::offer`]).
    pub fn offer_zevents(&self, events: Vec<zpulse_proto::ZEvent>) {
        if events.is_empty() {
            return;
        }
        if self.tx.try_send(Msg::Zevents(events)).is_err() {
            log::log(
                Level::Warn,
                "history",
                "the disk is behind: a batch of kernel events was not recorded",
            );
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
    let thread = std::thread::Builder::new()
        .name("history".into())
        .spawn(move || record(config, replay, rx));
    match thread {
        Ok(t) => (Recorder { tx }, Some(t)),
        Err(e) => {
            log::log(
                Level::Error,
                "history",
                &format!("cannot start the history thread, no history is kept: {e}"),
            );
            (Recorder { tx }, None)
        }
    }
}

fn wanted(config: &history::Config, replay: bool) -> bool {
    config.enabled && !(replay && config.dir.is_none())
}

fn record(mut config: history::Config, replay: bool, inbox: Receiver<Msg>) {
    if replay && config.enabled && config.dir.is_none() {
        log::log(
            Level::Info,
            "history",
            "a replay is not recorded in the host's history; set [history] dir to record it",
        );
    }
    let mut writer: Option<Writer> = None;
    let mut last_attempt: Option<f64> = None;
    for msg in inbox {
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
