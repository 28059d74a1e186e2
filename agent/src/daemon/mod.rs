//! `zpulse run`: the long-running agent.
//!
//! ```text
//!  sampler thread ──Sample──► plugin stage thread ──batch──► one thread per sink
//!  (fixed schedule)           (plugins, heartbeat)            (bounded queues)
//!        ▲                          ▲
//!        └──── main thread: signals (TERM/INT: flush and exit; HUP: reload) ────┘
//! ```
//!
//! The sampler never waits for anything downstream: the plugin stage takes samples from a
//! short bounded queue (a full queue drops the sample and counts it), and the plugin stage
//! hands batches to sink queues without blocking. SIGTERM stops sampling, lets the plugins
//! finish within their budget, and gives the sinks what is left of 5 seconds to flush; the
//! process exits within 5 s of the signal whatever a plugin or a sink is stuck in (the main
//! thread waits for the others only until then). SIGHUP reads the config again (a regular
//! file only) and checks it whole, sinks included, before anything changes: a bad file is
//! logged and the running config stays; a good one restarts the plugins with their new
//! tables, keeps every sink whose settings did not change, and replaces the others only
//! after the old one has handed over (a Forward spool is never open in two sinks; its
//! successor sends what it holds). A sink's counters in the heartbeat run across reloads.
//! Each snapshot also goes, without waiting, to the history's own thread (`recorder`).
//!
//! Kernel events come from a thread of their own (`zevents`), which waits in the kernel for
//! the next event (no polling) and hands each batch to the plugin stage as soon as it is
//! read: the records go to the sinks and the plugins that take events judge them at once,
//! between samples; the stage then keeps the cursor (at most once a second, and at the
//! stop), so that a restart neither repeats nor loses an event.

mod heartbeat;
pub use crate::base::log;
mod pipeline;
mod recorder;
pub mod schedule;
pub(crate) mod zevents;

use crate::base::clock::{Clock, system_clock};
use crate::config::{self, Config};
use crate::plugins::{Extra, Level, PluginHost, Status};
use crate::sinks::build::{SinkKey, SinkPlan};
use crate::sinks::{self, Reading, Stamped};
use crate::sources::{self, System};
use crossbeam_channel::{Receiver, Sender, bounded, select};
use heartbeat::{Heartbeat, SamplerCounters};
use pipeline::SinkWorker;
use schedule::Schedule;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zpulse_proto::Sample;
use zpulse_proto::event::EventTime;
use zpulse_proto::sample::Pairing;

/// Shutdown must be complete within this, from the signal to the exit.
const STOP_WITHIN: Duration = Duration::from_secs(5);
/// How often the heartbeat goes out.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(60);

/// What `zpulse run` was asked on the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub config: Option<PathBuf>,
    pub extra: Extra,
    /// Feed the samples of this capture series instead of the live system, then flush and
    /// exit: the whole pipeline (plugins, sinks) on recorded data.
    pub replay: Option<PathBuf>,
    /// With `replay`: hold each reading this long (so that a scraper sees each capture).
    pub pace: Option<Duration>,
}

enum StageMsg {
    /// The first reading, which has no sample yet: only for the sinks that export figures.
    First(Box<zpulse_proto::Snapshot>),
    Sample(Box<Sample>),
    Reload(Box<Generation>),
    /// Kernel events read since the last batch (live, or a replayed capture's).
    Zevents(Box<crate::sources::zevent::Batch>),
    /// Replay: answered once everything sent before it has gone through the plugins, so that
    /// the replay's end (a SIGTERM) cannot overtake its last samples.
    Drained(Sender<()>),
    Stop(Instant),
}

enum SamplerMsg {
    Interval(Duration),
    Stop,
}

/// Everything that a reload replaces: checked, nothing started.
struct Generation {
    config: Config,
    hostname: String,
    sinks: Vec<SinkPlan>,
}

/// Checks the sinks of `config` (stdout when none is configured), starting none.
pub fn plan_sinks(config: &Config) -> Result<Vec<SinkPlan>, String> {
    if config.sinks.is_empty() {
        return Ok(vec![SinkPlan::stdout()]);
    }
    let dir = config.file.as_deref().and_then(Path::parent);
    config
        .sinks
        .iter()
        .map(|s| sinks::build::plan(s, dir))
        .collect()
}

fn generation(config: Config, system: &System) -> Result<Generation, String> {
    let sinks = plan_sinks(&config)?;
    let hostname = config
        .hostname
        .clone()
        .unwrap_or_else(|| system.identity().hostname);
    Ok(Generation {
        config,
        hostname,
        sinks,
    })
}

/// Runs until SIGTERM or SIGINT. Errors only when the first config cannot be used.
pub fn run(options: Options) -> Result<(), String> {
    let system = System::live();
    let first = generation(config::load(options.config.as_deref())?, &system)?;
    let interval = first.config.interval;
    log::log(
        Level::Info,
        "agent",
        &format!(
            "zpulse {} starting: interval {:?}, config {}, {} sink(s)",
            env!("CARGO_PKG_VERSION"),
            interval,
            first
                .config
                .file
                .as_deref()
                .map_or_else(|| "built-in defaults".into(), |p| p.display().to_string()),
            first.sinks.len()
        ),
    );

    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    // signal-hook runs no code of ours in the handler: signals arrive here as an iterator.
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let counters = Arc::new(Mutex::new(SamplerCounters::default()));
    let (stage_tx, stage_rx) = bounded::<StageMsg>(2);
    let (sampler_tx, sampler_rx) = bounded::<SamplerMsg>(4);
    // Never sent on: dropping the sender tells every thread at once that the agent stops,
    // whatever it is waiting for (a plugin, a reload, a full queue).
    let (stopping_tx, stopping) = bounded::<()>(0);

    let (history, history_thread) =
        recorder::start(first.config.history.clone(), options.replay.is_some());
    // Kernel events: live only (a replay's come from its captures), read for the life of
    // the process (a reload does not reopen the queue). Not joined at the stop: it waits in
    // the kernel, and the process's exit ends it.
    let (zevent_tx, zevent_rx) = bounded::<StageMsg>(16);
    let cursor = zevents::Keeper::new(&first.config.events, options.replay.is_none());
    if first.config.events.enabled && options.replay.is_none() {
        let stopping = stopping.clone();
        let kept = cursor.kept();
        std::thread::Builder::new()
            .name("zevents".into())
            .spawn(move || zevents::read_loop(kept, zevent_tx, stopping))
            .map_err(|e| format!("cannot start the kernel-events thread: {e}"))?;
    }
    let stage = {
        let counters = Arc::clone(&counters);
        let extra = options.extra.clone();
        let stopping = stopping.clone();
        std::thread::Builder::new()
            .name("plugins".into())
            .spawn({
                let history = history.clone();
                move || {
                    let inputs = StageInputs {
                        samples: stage_rx,
                        zevents: zevent_rx,
                        stopping,
                    };
                    plugin_stage(first, extra, inputs, cursor, history, counters)
                }
            })
            .map_err(|e| format!("cannot start the plugin thread: {e}"))?
    };
    let sampler = {
        let counters = Arc::clone(&counters);
        let stage_tx = stage_tx.clone();
        let history = history.clone();
        let pace = options.pace;
        let replay = match &options.replay {
            Some(dir) => Some(replay_series(dir)?),
            None => None,
        };
        std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || match replay {
                Some(dirs) => replay_loop(&dirs, pace, stage_tx, history, stopping, counters),
                None => {
                    let sampler = Sampler {
                        control: sampler_rx,
                        stage: stage_tx,
                        history,
                        counters,
                        clock: system_clock(),
                    };
                    let identity = system.identity();
                    let take = move || sources::snapshot(&system, identity.clone());
                    sampler_loop(take, interval, sampler)
                }
            })
            .map_err(|e| format!("cannot start the sampler thread: {e}"))?
    };

    for signal in signals.forever() {
        match signal {
            SIGHUP => match reload(&options) {
                Ok(next) => {
                    let interval = next.config.interval;
                    let history_config = next.config.history.clone();
                    // Neither may block the signal loop: a stage busy with an earlier reload
                    // gets this one when it is done; a reload it has no room for is refused.
                    if stage_tx.try_send(StageMsg::Reload(Box::new(next))).is_ok() {
                        let _ = sampler_tx.try_send(SamplerMsg::Interval(interval));
                        history.reconfigure(history_config);
                        log::log(Level::Info, "agent", "configuration reloaded");
                    } else {
                        log::log(
                            Level::Warn,
                            "agent",
                            "reload refused: the previous reloads are still being applied; \
                             send SIGHUP again later",
                        );
                    }
                }
                Err(e) => log::log(
                    Level::Error,
                    "agent",
                    &format!("reload refused, the running configuration stays: {e}"),
                ),
            },
            _ => break,
        }
    }
    // The exit is promised within STOP_WITHIN of the signal; the threads get a little less,
    // so that this one can still return in time when they do not.
    let exit_by = Instant::now() + STOP_WITHIN - EXIT_MARGIN;
    log::log(Level::Info, "agent", "stopping: flushing sinks");
    drop(stopping_tx);
    let _ = sampler_tx.try_send(SamplerMsg::Stop);
    drop(sampler_tx);
    drop(stage_tx);
    drop(history);
    let threads = [("sampler", Some(sampler)), ("plugins", Some(stage))];
    for (name, thread) in threads
        .into_iter()
        .chain([("history", history_thread)])
        .filter_map(|(name, t)| Some((name, t?)))
    {
        while !thread.is_finished() && Instant::now() < exit_by {
            std::thread::sleep(Duration::from_millis(10));
        }
        if thread.is_finished() {
            let _ = thread.join();
        } else {
            log::log(
                Level::Warn,
                "agent",
                &format!("the {name} thread did not finish in time; exiting without it"),
            );
        }
    }
    Ok(())
}

/// What the main thread keeps for itself of [`STOP_WITHIN`] to return after the others.
const EXIT_MARGIN: Duration = Duration::from_millis(500);

/// How long a reload waits for one plugin's `check_config` (it runs on the signal thread).
const RELOAD_CHECK_WITHIN: Duration = Duration::from_secs(1);

fn reload(options: &Options) -> Result<Generation, String> {
    let config = config::load(options.config.as_deref())?;
    // A table the plugin would refuse must not stop it at the swap: refuse the file instead.
    for note in crate::plugins::check_tables(
        &config.plugins,
        &options.extra,
        RELOAD_CHECK_WITHIN,
        config.file.as_deref(),
    )? {
        log::log(Level::Info, "agent", &note);
    }
    generation(config, &System::live())
}

/// The captures of a series, checked before the agent starts: every manifest reads and
/// every pair makes a sample (in time order, one OS), as `zpulse replay` requires. Only the
/// manifests are read here; the captures themselves are loaded one at a time as the replay
/// reaches them, so a replay holds two snapshots, not the series.
fn replay_series(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let dirs = crate::capture::series(dir).map_err(|e| e.to_string())?;
    let mut prev: Option<zpulse_proto::Snapshot> = None;
    for d in &dirs {
        let m = crate::capture::Manifest::read(d).map_err(|e| e.to_string())?;
        let stamp = zpulse_proto::Snapshot {
            taken_at: m.captured_at,
            host: zpulse_proto::snapshot::HostIdentity {
                os: m.os,
                ..Default::default()
            },
            ..Default::default()
        };
        if let Some(p) = &prev {
            Sample::between(p, &stamp).map_err(|e| e.to_string())?;
        }
        prev = Some(stamp);
    }
    if dirs.is_empty() {
        return Err("the series is empty".into());
    }
    Ok(dirs)
}

/// Hands the first capture, then the sample of every consecutive pair of captures, to the
/// plugin stage (waiting for it: nothing is dropped), then asks the agent to stop as SIGTERM
/// would, so the sinks flush. With a pace, each reading (the first capture, then each
/// sample) is held that long before the next, and the last one too: a scraper sees every
/// capture.
fn replay_loop(
    dirs: &[PathBuf],
    pace: Option<Duration>,
    stage: Sender<StageMsg>,
    history: recorder::Recorder,
    stopping: Receiver<()>,
    counters: Arc<Mutex<SamplerCounters>>,
) {
    // Held readings end early when the agent is told to stop (the channel is disconnected).
    let hold = || match pace {
        Some(p) => matches!(
            stopping.recv_timeout(p),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        ),
        None => false,
    };
    let offer = |msg: StageMsg| -> bool {
        select! {
            send(stage, msg) -> sent => sent.is_ok(),
            recv(stopping) -> _ => false,
        }
    };
    // Each capture is loaded as the loop reaches it, so a replay holds two snapshots. Each
    // is recorded in the history (when one is configured) as it is loaded. The kernel events
    // a capture holds were posted since the capture before it: they go to the plugins before
    // the sample that ends there, as the live agent hands them over between samples; the
    // first capture's were queued before the series began, and are history.
    let mut pairing = Pairing::new();
    for (i, d) in dirs.iter().enumerate() {
        let snapshot = match crate::capture::load(d) {
            Ok(s) => s,
            Err(e) => {
                log::log(Level::Error, "sampler", &e.to_string());
                break;
            }
        };
        history.send(Arc::new(snapshot.clone()), &stopping);
        if i == 0 && !offer(StageMsg::First(Box::new(snapshot.clone()))) {
            return;
        }
        let mut events = crate::capture::load_zevents(d);
        if i == 0 {
            events.events.iter_mut().for_each(|e| e.before_start = true);
        }
        if !events.is_empty() && !offer(StageMsg::Zevents(Box::new(events))) {
            return;
        }
        match pairing.push(snapshot) {
            None => {
                if hold() {
                    return;
                }
            }
            Some(Ok(sample)) => {
                counters.lock().unwrap_or_else(|p| p.into_inner()).samples += 1;
                if !offer(StageMsg::Sample(Box::new(sample))) || hold() {
                    return;
                }
            }
            Some(Err(e)) => log::log(Level::Warn, "sampler", &e.to_string()),
        }
    }
    // Wait until the plugins have seen the last sample before asking the agent to stop.
    let (done_tx, done) = bounded(1);
    if !offer(StageMsg::Drained(done_tx)) {
        return;
    }
    select! {
        recv(done) -> _ => {},
        recv(stopping) -> _ => return,
    }
    log::log(Level::Info, "agent", "replay finished");
    let _ = signal_hook::low_level::raise(signal_hook::consts::SIGTERM);
}

/// What the sampler thread talks to, and the clock its schedule is kept on.
struct Sampler {
    control: Receiver<SamplerMsg>,
    stage: Sender<StageMsg>,
    history: recorder::Recorder,
    counters: Arc<Mutex<SamplerCounters>>,
    clock: Arc<dyn Clock>,
}

/// Takes a snapshot with `take` (the live system's, or a test's source) on the schedule.
fn sampler_loop(
    mut take: impl FnMut() -> zpulse_proto::Snapshot,
    interval: Duration,
    sampler: Sampler,
) {
    let Sampler {
        control,
        stage,
        history,
        counters,
        clock,
    } = sampler;
    let mut schedule = Schedule::new(clock.now(), interval);
    let mut prev: Option<Arc<zpulse_proto::Snapshot>> = None;
    loop {
        let due = clock.at(schedule.next_due());
        select! {
            recv(control) -> msg => match msg {
                Ok(SamplerMsg::Interval(d)) if d != schedule.interval() => {
                    schedule = Schedule::new(clock.now(), d);
                    continue;
                }
                Ok(SamplerMsg::Interval(_)) => continue,
                Ok(SamplerMsg::Stop) | Err(_) => return,
            },
            recv(due) -> _ => {}
        }
        let now = clock.now();
        let tick = schedule.take(now);
        let late = now.saturating_duration_since(tick.due) > schedule.interval() / 2;
        let snap = Arc::new(take());
        history.offer(Arc::clone(&snap));
        let mut c = counters.lock().unwrap_or_else(|p| p.into_inner());
        c.samples += 1;
        c.missed += tick.missed;
        if late {
            c.late += 1;
        }
        if prev.is_none()
            && stage
                .try_send(StageMsg::First(Box::new((*snap).clone())))
                .is_err()
        {
            c.dropped += 1;
        }
        if let Some(before) = &prev {
            // The sample shares the snapshot the history and the next interval keep.
            match Sample::following(before, Arc::clone(&snap)) {
                Ok(sample) => {
                    if stage.try_send(StageMsg::Sample(Box::new(sample))).is_err() {
                        c.dropped += 1;
                    }
                }
                Err(e) => log::log(Level::Warn, "sampler", &e.to_string()),
            }
        }
        drop(c);
        prev = Some(snap);
    }
}

/// Runs plugins on each sample and hands their events, and the heartbeat, to the sinks.
/// What the plugin stage listens to.
struct StageInputs {
    /// Samples, reloads, the replay's drain and the stop.
    samples: Receiver<StageMsg>,
    /// Kernel events from their thread.
    zevents: Receiver<StageMsg>,
    /// Disconnected when the agent stops.
    stopping: Receiver<()>,
}

fn plugin_stage(
    first: Generation,
    extra: Extra,
    inputs: StageInputs,
    mut cursor: zevents::Keeper,
    history: recorder::Recorder,
    counters: Arc<Mutex<SamplerCounters>>,
) {
    let StageInputs {
        samples: inbox,
        zevents: mut zevent_inbox,
        stopping,
    } = inputs;
    let mut state = Stage::start(first, &extra, &stopping, Vec::new());
    loop {
        let msg = select! {
            recv(stopping) -> _ => StageMsg::Stop(Instant::now() + STOP_WITHIN - 2 * EXIT_MARGIN),
            recv(inbox) -> msg => match msg {
                Ok(msg) => msg,
                // The agent is stopping: the sender side is gone.
                Err(_) => StageMsg::Stop(Instant::now() + STOP_WITHIN - 2 * EXIT_MARGIN),
            },
            // The events thread ending (no ZFS, events off) closes this; samples go on.
            recv(zevent_inbox) -> msg => match msg {
                Ok(msg) => msg,
                Err(_) => {
                    zevent_inbox = crossbeam_channel::never();
                    continue;
                }
            },
        };
        // A stop outranks whatever was queued before it.
        let msg = if is_stopping(&stopping) {
            StageMsg::Stop(Instant::now() + STOP_WITHIN - 2 * EXIT_MARGIN)
        } else {
            msg
        };
        match msg {
            StageMsg::First(snapshot) => {
                state.offer_reading(&Reading::First(Arc::from(snapshot)));
            }
            StageMsg::Sample(sample) => {
                // The figures go out before the plugins run, so exporters are not late.
                let sample: Arc<Sample> = Arc::from(sample);
                state.offer_reading(&Reading::Sample(Arc::clone(&sample)));
                let out = state.host.run(&sample);
                for line in &out.logs {
                    log::line(line);
                }
                let mut events = out.events;
                let c = *counters.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(hb) = state.heartbeat_due(sample.end, c) {
                    events.push(hb);
                }
                state.dispatch(events);
            }
            StageMsg::Zevents(batch) => {
                let events = state.zevents(&batch);
                state.dispatch(events);
                cursor.handled(&batch);
                history.offer_zevents(batch.events);
            }
            StageMsg::Reload(next) => {
                let deadline = Instant::now() + STOP_WITHIN;
                state = state.reload(*next, &extra, &stopping, deadline);
            }
            StageMsg::Drained(done) => {
                let _ = done.send(());
            }
            StageMsg::Stop(deadline) => {
                cursor.flush();
                state.stop(deadline);
                return;
            }
        }
    }
}

struct Stage {
    host: PluginHost,
    /// What each sink was built from, in the order of `sinks`.
    plans: Vec<SinkKey>,
    sinks: Vec<SinkWorker>,
    hostname: String,
    interval: Duration,
    heartbeat: heartbeat::Cadence,
}

/// Whether the agent has been told to stop.
fn is_stopping(stopping: &Receiver<()>) -> bool {
    matches!(
        stopping.try_recv(),
        Err(crossbeam_channel::TryRecvError::Disconnected)
    )
}

impl Stage {
    /// Starts the plugins and sinks of `g`. `running` are sinks of the previous generation
    /// to keep: a planned sink the same as one of them is that one.
    fn start(
        g: Generation,
        extra: &Extra,
        stopping: &Receiver<()>,
        mut running: Vec<(SinkKey, SinkWorker)>,
    ) -> Stage {
        let host = PluginHost::start_interruptible(
            &g.config.plugins,
            extra,
            &g.hostname,
            Some(stopping.clone()),
        );
        let mut sinks = Vec::new();
        let mut plans = Vec::new();
        for plan in g.sinks {
            if let Some(i) = running.iter().position(|(k, _)| k == plan.key()) {
                let (key, worker) = running.swap_remove(i);
                plans.push(key);
                sinks.push(worker);
                continue;
            }
            let name = plan.name().to_owned();
            let key = plan.key().clone();
            match plan.start() {
                Ok(sink) => {
                    plans.push(key);
                    sinks.push(SinkWorker::start(sink));
                }
                Err(e) => log::log(
                    Level::Error,
                    "agent",
                    &format!("sink {name} could not be started, it is left out: {e}"),
                ),
            }
        }
        let mut stage = Stage {
            plans,
            host,
            sinks,
            hostname: g.hostname,
            interval: g.config.interval,
            heartbeat: heartbeat::Cadence::default(),
        };
        // Loading problems (refused plugins) go out at once.
        let out = stage.host.take_output();
        for line in &out.logs {
            log::line(line);
        }
        stage.dispatch(out.events);
        stage
    }

    /// A batch of kernel events: their records, what the plugins concluded from them, and
    /// a note of what the kernel dropped, for the sinks.
    fn zevents(&mut self, batch: &crate::sources::zevent::Batch) -> Vec<Stamped> {
        let mut out: Vec<Stamped> = batch
            .events
            .iter()
            .map(|z| {
                let mut event = z.to_event();
                event.host = self.hostname.clone();
                Stamped {
                    time: z.time,
                    event,
                }
            })
            .collect();
        let found = self.host.deliver(&batch.events);
        for line in &found.logs {
            log::line(line);
        }
        out.extend(found.events);
        for why in &batch.undecodable {
            log::log(Level::Warn, "zevents", why);
        }
        if let Some(mut note) = zevents::dropped_note(batch) {
            note.event.host = self.hostname.clone();
            out.push(note);
        }
        out
    }

    fn offer_reading(&self, reading: &Reading) {
        for sink in &self.sinks {
            sink.offer_reading(reading);
        }
    }

    fn dispatch(&self, events: Vec<Stamped>) {
        if events.is_empty() {
            return;
        }
        for sink in &self.sinks {
            sink.offer(events.clone());
        }
    }

    /// The heartbeat, when due by the monotonic clock; stamped with the wall time `now`.
    fn heartbeat_due(&mut self, now: f64, sampler: SamplerCounters) -> Option<Stamped> {
        let at = Instant::now();
        if !self.heartbeat.due(at, HEARTBEAT_EVERY) {
            return None;
        }
        let plugins = self.host.plugins();
        let me = crate::base::selfstat::read();
        let hb = Heartbeat {
            hostname: self.hostname.clone(),
            interval_s: self.interval.as_secs_f64(),
            sampler,
            plugins_running: plugins
                .iter()
                .filter(|p| p.status == Status::Loaded)
                .count(),
            plugins_total: plugins.iter().filter(|p| p.status != Status::Off).count(),
            sinks: self.sinks.iter().map(SinkWorker::report).collect(),
            now: me,
            before: self.heartbeat.beat(at, me),
        };
        let mut event = hb.event();
        event.host = self.hostname.clone();
        Some(Stamped {
            time: EventTime::from_unix(now),
            event,
        })
    }

    /// Replaces this generation with `next`. The old plugins stop (their late output goes
    /// to the sinks); sinks whose settings are unchanged keep running; each other old sink
    /// delivers its queue and ends before any new sink starts, so a new Forward sink never
    /// shares its spool with an old one; a new sink with an old one's name goes on from its
    /// counters.
    fn reload(
        mut self,
        next: Generation,
        extra: &Extra,
        stopping: &Receiver<()>,
        deadline: Instant,
    ) -> Stage {
        let late = self.host.take_output();
        self.dispatch(late.events);
        self.host.shutdown_by(deadline);
        // The heartbeat keeps its schedule: a reload (or a burst of SIGHUPs) is no reason
        // for one, and its CPU figures cover the time since the last one either way.
        let heartbeat = std::mem::take(&mut self.heartbeat);
        let mut kept = Vec::new();
        let mut ended = Vec::new();
        for (key, sink) in self.plans.into_iter().zip(self.sinks) {
            if next.sinks.iter().any(|p| *p.key() == key) {
                kept.push((key, sink));
            } else {
                ended.push(sink.hand_over(deadline));
            }
        }
        let mut stage = Stage::start(next, extra, stopping, kept);
        stage.heartbeat = heartbeat;
        for sink in &mut stage.sinks {
            if let Some(i) = ended.iter().position(|r| r.name == sink.name()) {
                sink.carry(&ended.swap_remove(i));
            }
        }
        stage
    }

    fn stop(mut self, deadline: Instant) {
        let late = self.host.take_output();
        self.dispatch(late.events);
        self.host.shutdown_by(deadline);
        for sink in self.sinks {
            sink.close(deadline);
        }
    }
}

#[cfg(test)]
mod sampler_tests {
    use super::*;

    use crate::base::clock::ManualClock;

    /// The sampler's counts add up to the slots that passed, whatever holds up what follows
    /// it: with the plugin stage stalled (nothing takes its samples, as with a plugin that
    /// never returns or sinks that do not drain), every slot of the run is a sample taken or
    /// a slot counted missed, and every sample the stage could not take is counted dropped
    /// (the first reading waits in the stage's queue, so all the samples after it). The
    /// schedule runs on a manual clock: the test says when each slot comes.
    #[test]
    fn a_stalled_stage_leaves_the_sampler_counts_adding_up_to_the_slots() {
        let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab/basic/001");
        let system = System::capture(&capture, zpulse_proto::snapshot::Os::Linux);
        let identity = system.identity();
        let take = move || sources::snapshot(&system, identity.clone());
        let interval = Duration::from_millis(100);
        let clock = Arc::new(ManualClock::default());
        let rig = Rig::start(&clock, interval, 1, take);
        // Slot 0 is due at once; then five slots one by one, on time (the sampler waits once
        // for each slot to come).
        for slot in 1..=5 {
            clock.until_waits(slot);
            clock.advance(interval);
        }
        // The host stalls for three and a half intervals: slots 6 and 7 pass untaken, slot
        // 8's sample is taken half an interval late.
        clock.until_waits(6);
        clock.advance(interval * 3 + interval / 2);
        clock.until_waits(7);
        let (c, stalled) = rig.stop();
        // Slots 0 to 8 passed: 7 taken, 2 missed.
        assert_eq!((c.samples, c.missed), (7, 2), "{c:?}");
        assert_eq!(c.dropped, c.samples - 1, "{c:?}");
        assert_eq!(c.late, 0, "half an interval late is not late: {c:?}");
        assert_eq!(stalled.len(), 1, "only the first reading waits");
    }

    /// A sampler on `clock` taking its snapshots with `take`, its samples queued for the
    /// stage in a queue of `depth` (the agent's is 2).
    struct Rig {
        control: Sender<SamplerMsg>,
        stage: Receiver<StageMsg>,
        counters: Arc<Mutex<SamplerCounters>>,
        thread: std::thread::JoinHandle<()>,
    }

    impl Rig {
        fn start(
            clock: &Arc<ManualClock>,
            interval: Duration,
            depth: usize,
            take: impl FnMut() -> zpulse_proto::Snapshot + Send + 'static,
        ) -> Rig {
            let (control_tx, control) = bounded(1);
            let (stage_tx, stage) = bounded(depth);
            let (history, _thread) = recorder::start(
                crate::history::Config {
                    enabled: false,
                    ..Default::default()
                },
                false,
            );
            let counters = Arc::new(Mutex::new(SamplerCounters::default()));
            let sampler = Sampler {
                control,
                stage: stage_tx,
                history,
                counters: Arc::clone(&counters),
                clock: Arc::clone(clock) as Arc<dyn Clock>,
            };
            let thread = std::thread::spawn(move || sampler_loop(take, interval, sampler));
            Rig {
                control: control_tx,
                stage,
                counters,
                thread,
            }
        }

        /// Stops the sampler (which must be waiting for the clock, so that the stop is the
        /// only thing it can do) and gives its counts.
        fn stop(self) -> (SamplerCounters, Receiver<StageMsg>) {
            self.control.send(SamplerMsg::Stop).unwrap();
            self.thread.join().unwrap();
            let c = *self.counters.lock().unwrap();
            (c, self.stage)
        }
    }

    /// The lab capture, read once: what the test sources hand out, stamped anew.
    fn lab_snapshot() -> zpulse_proto::Snapshot {
        let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab/basic/001");
        crate::capture::load(&capture).unwrap()
    }

    /// Seconds of `clock` since `t0`: the snapshot's monotonic reading, on the test's clock.
    fn seconds_since(clock: &ManualClock, t0: Instant) -> f64 {
        clock.now().duration_since(t0).as_secs_f64()
    }

    /// A source slower than the interval (each snapshot takes 1.6 intervals of the clock,
    /// as a loaded host's would): the counts say exactly which slots were sampled, late,
    /// or missed. By the schedule (slot k due at k × interval; a sample starting more than
    /// half an interval after its slot is late; a slot that passed entirely is missed),
    /// with snapshots starting at 0, 1.6, 3.2, 4.8, 6.4 and 8.0 intervals: slots 0, 1, 3,
    /// 4, 6 and 8 are sampled, 1 (0.6 late) and 4 (0.8 late) late, 2, 5 and 7 missed. The
    /// sixth snapshot is quick, so the sampler then waits for slot 9 and is stopped there.
    #[test]
    fn a_source_slower_than_the_interval_is_counted_late_and_missed_slot_by_slot() {
        let interval = Duration::from_millis(100);
        let clock = Arc::new(ManualClock::default());
        let t0 = clock.now();
        let (taken_tx, taken) = crossbeam_channel::unbounded();
        let source_clock = Arc::clone(&clock);
        let lab = lab_snapshot();
        let mut calls = 0;
        let take = move || {
            let mut snap = lab.clone();
            snap.monotonic = Some(seconds_since(&source_clock, t0));
            let _ = taken_tx.send(source_clock.now().duration_since(t0));
            calls += 1;
            if calls <= 5 {
                source_clock.advance(interval * 16 / 10);
            }
            snap
        };
        let rig = Rig::start(&clock, interval, 16, take);
        clock.until_waits(1);
        let (c, stage) = rig.stop();
        let started: Vec<Duration> = taken.try_iter().collect();
        let want: Vec<Duration> = [0, 16, 32, 48, 64, 80]
            .iter()
            .map(|&tenths| interval * tenths / 10)
            .collect();
        assert_eq!(started, want);
        assert_eq!(
            (c.samples, c.late, c.missed, c.dropped),
            (6, 2, 3, 0),
            "{c:?}"
        );
        // Every slot that passed (0 to 8) is a sample taken or a slot missed.
        assert_eq!(c.samples + c.missed, 9);
        // Each sample taken reached the stage: the first reading and five samples.
        assert_eq!(stage.len() as u64, c.samples);
    }

    /// A plugin stage slower than the interval (it takes a reading only every third slot,
    /// as with a plugin that needs three intervals a sample): the sampler keeps its
    /// schedule (nothing late, nothing missed) and every sample it took is either one the
    /// stage took or one counted dropped.
    #[test]
    fn a_slow_plugin_stage_leaves_every_sample_taken_or_dropped() {
        let interval = Duration::from_millis(100);
        let clock = Arc::new(ManualClock::default());
        let t0 = clock.now();
        let source_clock = Arc::clone(&clock);
        let lab = lab_snapshot();
        let take = move || {
            let mut snap = lab.clone();
            snap.monotonic = Some(seconds_since(&source_clock, t0));
            snap
        };
        // The agent's own queue depth.
        let rig = Rig::start(&clock, interval, 2, take);
        let mut taken_by_stage = 0u64;
        for slot in 1..=12u64 {
            clock.until_waits(slot);
            if slot % 3 == 0 && rig.stage.try_recv().is_ok() {
                taken_by_stage += 1;
            }
            clock.advance(interval);
        }
        clock.until_waits(13);
        let (c, stage) = rig.stop();
        taken_by_stage += stage.try_iter().count() as u64;
        // Slots 0 to 12 passed, each sampled on time.
        assert_eq!((c.samples, c.late, c.missed), (13, 0, 0), "{c:?}");
        assert_eq!(taken_by_stage + c.dropped, c.samples, "{c:?}");
        // Four readings were taken while the run went on, two more waited in the queue:
        // the other seven were dropped.
        assert_eq!((taken_by_stage, c.dropped), (6, 7), "{c:?}");
    }

    /// A step of the wall clock (an hour back, then two forward, as NTP or an administrator
    /// may make) moves neither the schedule nor the samples' intervals, which are on the
    /// monotonic clock: every slot is sampled once, on time, and every sample covers one
    /// interval; the samples' start and end say the wall time as it was read.
    #[test]
    fn a_wall_clock_step_changes_no_count_and_no_interval() {
        let interval = Duration::from_millis(100);
        let clock = Arc::new(ManualClock::default());
        let t0 = clock.now();
        let source_clock = Arc::clone(&clock);
        let lab = lab_snapshot();
        let wall0 = lab.taken_at;
        let mut calls = 0u32;
        let take = move || {
            let mut snap = lab.clone();
            let elapsed = seconds_since(&source_clock, t0);
            let step = match calls {
                0..3 => 0.0,
                3..6 => -3600.0,
                _ => 3600.0,
            };
            calls += 1;
            snap.monotonic = Some(elapsed);
            snap.taken_at = wall0 + elapsed + step;
            snap
        };
        let rig = Rig::start(&clock, interval, 16, take);
        for slot in 1..=8 {
            clock.until_waits(slot);
            clock.advance(interval);
        }
        clock.until_waits(9);
        let (c, stage) = rig.stop();
        assert_eq!(
            (c.samples, c.late, c.missed, c.dropped),
            (9, 0, 0, 0),
            "{c:?}"
        );
        let samples: Vec<Sample> = stage
            .try_iter()
            .filter_map(|m| match m {
                StageMsg::Sample(s) => Some(*s),
                _ => None,
            })
            .collect();
        assert_eq!(samples.len(), 8);
        for s in &samples {
            assert!((s.interval - 0.1).abs() < 1e-9, "interval {}", s.interval);
        }
        // The third sample spans the step back, the sixth the step forward.
        assert!((samples[2].end - samples[2].start + 3600.0 - 0.1).abs() < 1e-6);
        assert!((samples[5].end - samples[5].start - 7200.0 - 0.1).abs() < 1e-6);
    }
}
