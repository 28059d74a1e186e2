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
//! finish within their budget, and gives the sinks what is left of 5 seconds to flush. SIGHUP
//! reads the config again: a bad file is logged and the running config stays; a good one
//! restarts the plugins with their new tables and replaces the sinks after the old ones have
//! delivered their queues (the Forward spool carries unacked events across).

mod heartbeat;
pub mod log;
mod pipeline;
pub mod schedule;
pub mod selfstat;

use crate::config::{self, Config};
use crate::plugins::{Extra, Level, PluginHost, Status};
use crate::sinks::stdout::StdoutSink;
use crate::sinks::{self, Sink, Stamped};
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
}

enum StageMsg {
    Sample(Box<Sample>),
    Reload(Box<Generation>),
    Stop(Instant),
}

enum SamplerMsg {
    Interval(Duration),
    Stop,
}

/// Everything that a reload replaces.
struct Generation {
    config: Config,
    hostname: String,
    sinks: Vec<Box<dyn Sink>>,
}

/// Builds the sinks of `config` (stdout when none is configured).
fn build_sinks(config: &Config) -> Result<Vec<Box<dyn Sink>>, String> {
    if config.sinks.is_empty() {
        return Ok(vec![Box::new(StdoutSink::new())]);
    }
    let dir = config.file.as_deref().and_then(Path::parent);
    config
        .sinks
        .iter()
        .map(|s| sinks::build::build(s, dir))
        .collect()
}

fn generation(config: Config, system: &System) -> Result<Generation, String> {
    let sinks = build_sinks(&config)?;
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

    let stage = {
        let counters = Arc::clone(&counters);
        let extra = options.extra.clone();
        std::thread::Builder::new()
            .name("plugins".into())
            .spawn(move || plugin_stage(first, extra, stage_rx, counters))
            .map_err(|e| format!("cannot start the plugin thread: {e}"))?
    };
    let sampler = {
        let counters = Arc::clone(&counters);
        let stage_tx = stage_tx.clone();
        let replay = match &options.replay {
            Some(dir) => Some(replay_series(dir)?),
            None => None,
        };
        std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || match replay {
                Some(dirs) => replay_loop(&dirs, stage_tx, counters),
                None => sampler_loop(system, interval, sampler_rx, stage_tx, counters),
            })
            .map_err(|e| format!("cannot start the sampler thread: {e}"))?
    };

    for signal in signals.forever() {
        match signal {
            SIGHUP => match reload(&options) {
                Ok(next) => {
                    let interval = next.config.interval;
                    let _ = sampler_tx.send(SamplerMsg::Interval(interval));
                    let _ = stage_tx.send(StageMsg::Reload(Box::new(next)));
                    log::log(Level::Info, "agent", "configuration reloaded");
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
    let deadline = Instant::now() + STOP_WITHIN;
    log::log(Level::Info, "agent", "stopping: flushing sinks");
    let _ = sampler_tx.send(SamplerMsg::Stop);
    let _ = sampler.join();
    let _ = stage_tx.send_deadline(StageMsg::Stop(deadline), deadline);
    let _ = stage.join();
    Ok(())
}

fn reload(options: &Options) -> Result<Generation, String> {
    let config = config::load(options.config.as_deref())?;
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
    Ok(dirs)
}

/// Hands the sample of every consecutive pair of captures to the plugin stage (waiting for
/// it: nothing is dropped), then asks the agent to stop as SIGTERM would, so the sinks flush.
fn replay_loop(dirs: &[PathBuf], stage: Sender<StageMsg>, counters: Arc<Mutex<SamplerCounters>>) {
    let mut prev: Option<zpulse_proto::Snapshot> = None;
    for d in dirs {
        let cur = match crate::capture::load(d) {
            Ok(s) => s,
            Err(e) => {
                log::log(Level::Error, "sampler", &e.to_string());
                break;
            }
        };
        if let Some(before) = &prev {
            match Sample::between(before, &cur) {
                Ok(sample) => {
                    counters.lock().unwrap_or_else(|p| p.into_inner()).samples += 1;
                    if stage.send(StageMsg::Sample(Box::new(sample))).is_err() {
                        break;
                    }
                }
                Err(e) => log::log(Level::Warn, "sampler", &e.to_string()),
            }
        }
        prev = Some(cur);
    }
    log::log(Level::Info, "agent", "replay finished");
    let _ = signal_hook::low_level::raise(signal_hook::consts::SIGTERM);
}

fn sampler_loop(
    system: System,
    interval: Duration,
    control: Receiver<SamplerMsg>,
    stage: Sender<StageMsg>,
    counters: Arc<Mutex<SamplerCounters>>,
) {
    let mut schedule = Schedule::new(Instant::now(), interval);
    let mut prev: Option<zpulse_proto::Snapshot> = None;
    let identity = system.identity();
    loop {
        let wait = schedule
            .next_due()
            .saturating_duration_since(Instant::now());
        select! {
            recv(control) -> msg => match msg {
                Ok(SamplerMsg::Interval(d)) if d != schedule.interval() => {
                    schedule = Schedule::new(Instant::now(), d);
                    continue;
                }
                Ok(SamplerMsg::Interval(_)) => continue,
                Ok(SamplerMsg::Stop) | Err(_) => return,
            },
            default(wait) => {}
        }
        let now = Instant::now();
        let tick = schedule.take(now);
        let late = now.saturating_duration_since(tick.due) > schedule.interval() / 2;
        let snap = sources::snapshot(&system, identity.clone());
        let mut c = counters.lock().unwrap_or_else(|p| p.into_inner());
        c.samples += 1;
        c.missed += tick.missed;
        if late {
            c.late += 1;
        }
        if let Some(before) = &prev {
            match Sample::between(before, &snap) {
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
fn plugin_stage(
    first: Generation,
    extra: Extra,
    inbox: Receiver<StageMsg>,
    counters: Arc<Mutex<SamplerCounters>>,
) {
    let mut state = Stage::start(first, &extra);
    while let Ok(msg) = inbox.recv() {
        match msg {
            StageMsg::Sample(sample) => {
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
            StageMsg::Reload(next) => {
                let deadline = Instant::now() + STOP_WITHIN;
                let old = std::mem::replace(&mut state, Stage::start(*next, &extra));
                // The plugins' late output and the old sinks' queues are not lost.
                old.retire(&state, deadline);
            }
            StageMsg::Stop(deadline) => {
                state.stop(deadline);
                return;
            }
        }
    }
}

struct Stage {
    host: PluginHost,
    sinks: Vec<SinkWorker>,
    hostname: String,
    interval: Duration,
    last_heartbeat: Option<(f64, selfstat::SelfStat)>,
}

impl Stage {
    fn start(g: Generation, extra: &Extra) -> Stage {
        let host = PluginHost::start(&g.config.plugins, extra, &g.hostname);
        let sinks = g.sinks.into_iter().map(SinkWorker::start).collect();
        let mut stage = Stage {
            host,
            sinks,
            hostname: g.hostname,
            interval: g.config.interval,
            last_heartbeat: None,
        };
        // Loading problems (refused plugins) go out at once.
        let out = stage.host.take_output();
        for line in &out.logs {
            log::line(line);
        }
        stage.dispatch(out.events);
        stage
    }

    fn dispatch(&self, events: Vec<Stamped>) {
        if events.is_empty() {
            return;
        }
        for sink in &self.sinks {
            sink.offer(events.clone());
        }
    }

    fn heartbeat_due(&mut self, now: f64, sampler: SamplerCounters) -> Option<Stamped> {
        if let Some((at, _)) = self.last_heartbeat
            && now - at < HEARTBEAT_EVERY.as_secs_f64()
        {
            return None;
        }
        let plugins = self.host.plugins();
        let me = selfstat::read();
        let hb = Heartbeat {
            hostname: self.hostname.clone(),
            interval_s: self.interval.as_secs_f64(),
            sampler,
            plugins_running: plugins
                .iter()
                .filter(|p| p.status == Status::Loaded)
                .count(),
            plugins_total: plugins.len(),
            sinks: self.sinks.iter().map(SinkWorker::report).collect(),
            now: me,
            before: self.last_heartbeat.map(|(at, s)| (s, now - at)),
        };
        self.last_heartbeat = Some((now, me));
        let mut event = hb.event();
        event.host = self.hostname.clone();
        Some(Stamped {
            time: EventTime::from_unix(now),
            event,
        })
    }

    /// Hands over to `next`: late plugin output goes to the new sinks, the old sinks deliver
    /// their queues and flush.
    fn retire(mut self, next: &Stage, deadline: Instant) {
        let late = self.host.take_output();
        next.dispatch(late.events);
        self.host.shutdown();
        for sink in self.sinks {
            sink.close(deadline);
        }
    }

    fn stop(mut self, deadline: Instant) {
        let late = self.host.take_output();
        self.dispatch(late.events);
        self.host.shutdown();
        for sink in self.sinks {
            sink.close(deadline);
        }
    }
}
