//! The plugin host: loads checks from shared objects and runs them on every sample, so that
//! no plugin can stop the agent from sampling.
//!
//! * **Loading** ([`PluginHost::start`]): every `*.so` in the plugin directories and every
//!   explicit path, after StrictModes-like ownership and permission checks (`perms`), with
//!   `dlopen(RTLD_NOW | RTLD_LOCAL)`, never unloaded. A plugin with another ABI major, a bad
//!   descriptor, a duplicate name or a config it rejects is refused.
//! * **Running** ([`PluginHost::run`]): the plugins of each file share a thread (a
//!   [`lane`]), which takes each sample's calls for all of them in one batch; the sample is
//!   encoded once and handed to every idle plugin; the caller waits at most the budget (2 s by
//!   default). A plugin whose call is still running then is **hung** and gets no samples
//!   until its call returns, and its lane is its own from then on: the file's other plugins
//!   go on on a new one. A call that fails or overruns counts as a failure, and
//!   `max_failures` in a row **disable** the plugin.
//! * **Events** from plugins are validated (well-formed record, size limit, per-sample rate
//!   limit), stamped with the sample's time and the host name, and returned with the sample.
//!
//! Every problem is reported **once**, as an `agent` event (a finding of the agent about
//! itself: check `plugin.<problem>`, subject the plugin) and a log line; a hung or failing
//! plugin that works again clears its finding.

mod elf;
mod lane;
mod load;
pub(crate) mod perms;
mod placement;
mod signals;
mod worker;

pub use perms::{check_plugin_file, effective_uid};

use crate::base::clock::{Clock, system_clock};
use crate::config::PluginSettings;
use crossbeam_channel::{Receiver, Sender};
use lane::{Lane, Place, Queued};
use load::Source;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use worker::{Call, Done, Job, Limits, Member, Shared};
use zpulse_proto::abi;
use zpulse_proto::event::{Data, Entry, Event, EventTime, Severity, State, Value};
use zpulse_proto::report::{ReportWindow, Section};
use zpulse_proto::{Sample, sdk};

pub use crate::base::log::{Level, LogLine};

impl fmt::Display for LogLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.level.as_str(),
            self.source,
            self.message
        )
    }
}

/// What a run (or loading) produced: events for the sinks, lines for the log.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Output {
    /// Plugin events in plugin order, then the agent's own events.
    pub events: Vec<Entry>,
    pub logs: Vec<LogLine>,
}

/// Where a plugin stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Loaded,
    /// Never ran: permissions, ABI, descriptor, duplicate name, or `create` failed.
    Refused(String),
    /// A call has been running longer than the budget; no samples until it returns.
    Hung(String),
    /// Stopped after failing too often.
    Disabled(String),
    /// Found, and not started: `[plugins] disable` names it.
    Off,
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Loaded => "loaded",
            Status::Refused(_) => "refused",
            Status::Hung(_) => "hung",
            Status::Disabled(_) => "disabled",
            Status::Off => "off",
        }
    }

    /// Whether it is not running although the config wants it to: refused, hung or
    /// disabled (not a plugin the config turned off).
    pub fn is_trouble(&self) -> bool {
        !matches!(self, Status::Loaded | Status::Off)
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            Status::Loaded | Status::Off => None,
            Status::Refused(r) | Status::Hung(r) | Status::Disabled(r) => Some(r),
        }
    }
}

/// One plugin file, as `zpulse plugins` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    pub path: PathBuf,
    /// From the descriptor; `None` when it could not be read.
    pub name: Option<String>,
    pub version: Option<String>,
    /// (major, minor) of the plugin's ABI, when its descriptor header could be read.
    pub abi: Option<(u32, u32)>,
    pub build_info: Option<String>,
    /// Its place in the file when the file is a bundle (ABI 1.5) of several plugins.
    pub in_bundle: Option<usize>,
    pub status: Status,
    /// Whether it is given the agent's own sample (ABI 1.4, a plugin built with the agent:
    /// the layouts agree) rather than MessagePack; known once `create` returned.
    pub native: bool,
}

impl PluginInfo {
    /// How it is given samples: `native` (the agent's own, ABI 1.4) or `messagepack`.
    pub fn delivery(&self) -> &'static str {
        if self.native { "native" } else { "messagepack" }
    }

    /// The name, or the file name when the plugin could not say (with the plugin's place in
    /// it, `libchecks.so[2]`, for a bundle's).
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            let file = self.path.file_name().map_or_else(
                || self.path.display().to_string(),
                |f| f.to_string_lossy().into(),
            );
            match self.in_bundle {
                Some(index) => format!("{file}[{index}]"),
                None => file,
            }
        })
    }
}

/// Where plugins come from besides the config: `--plugin-dir` and `--plugin`.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    pub dirs: Vec<PathBuf>,
    pub paths: Vec<PathBuf>,
}

/// A call in progress.
struct Busy {
    call: &'static str,
    since: Instant,
    /// Reported hung already (and counted as a failure).
    hung: bool,
}

/// Problems reported and not yet cleared (each is reported once).
#[derive(Default)]
struct Raised {
    hung: bool,
    failing: bool,
    invalid: bool,
    rate_limited: bool,
    sections_dropped: bool,
    invalid_sections: bool,
    logs_dropped: bool,
}

/// A plugin that passed loading: its instance, its lane and bookkeeping.
struct Running {
    /// The lane its calls go to (an index into `PluginHost::lanes`); `None` once it is
    /// stopped (disabled, or the host is shutting down): it gets no more calls.
    lane: Option<usize>,
    member: Arc<Mutex<Member>>,
    shared: Arc<Shared>,
    busy: Option<Busy>,
    created: bool,
    failures: u32,
    last_error: String,
    raised: Raised,
    /// Where its config table was written, for messages about it.
    origin: Option<String>,
    /// The parts of the sample it does not read (its descriptor's `unread`).
    unread: u64,
    /// Whether it takes kernel events (ABI 1.6 `on_event`).
    takes_events: bool,
}

struct Slot {
    info: PluginInfo,
    run: Option<Running>,
}

/// Limits and budget of the host, from `[plugins]`.
#[derive(Debug, Clone, Copy)]
struct Budget {
    budget: Duration,
    max_failures: u32,
    limits: Limits,
}

/// A lane of plugin calls and the name its threads get.
struct PluginLane {
    lane: Lane<Call, Done>,
    name: String,
}

/// The loaded plugins and their lanes.
pub struct PluginHost {
    budget: Budget,
    hostname: String,
    slots: Vec<Slot>,
    /// One per plugin file with a running plugin, and one more each time a bundle's lane is
    /// split away from a call that outran the budget. Never removed: indices stay valid.
    lanes: Vec<PluginLane>,
    /// Lanes say here, by index, that their queue ran dry.
    done_tx: Sender<usize>,
    done_rx: Receiver<usize>,
    /// Output produced outside `run` (loading, late returns), given with the next one.
    pending: Output,
    /// Disconnected when the agent is stopping: no more waiting for plugins.
    interrupt: Option<Receiver<()>>,
    /// Whether plugins whose layout agrees get the sample natively (see [`PluginHost::run`]).
    native: bool,
    /// What a call's time in hand is measured on: when it was posted, and when the budget
    /// has run out.
    clock: Arc<dyn Clock>,
}

impl PluginHost {
    /// Loads every plugin of `settings` plus `extra`, creates each with its config table and
    /// waits at most the budget for them. Never fails: every problem is in the output of the
    /// next [`run`](PluginHost::run) or [`take_output`](PluginHost::take_output), and in
    /// [`plugins`](PluginHost::plugins). `hostname` goes into every event.
    pub fn start(settings: &PluginSettings, extra: &Extra, hostname: &str) -> PluginHost {
        PluginHost::start_interruptible(settings, extra, hostname, None)
    }

    /// [`start`](PluginHost::start), but every wait for plugins (here and in
    /// [`run`](PluginHost::run)) ends as soon as `interrupt` is disconnected: a plugin with a
    /// long budget must not hold up the agent's exit.
    pub fn start_interruptible(
        settings: &PluginSettings,
        extra: &Extra,
        hostname: &str,
        interrupt: Option<Receiver<()>>,
    ) -> PluginHost {
        PluginHost::start_on(settings, extra, hostname, interrupt, system_clock())
    }

    /// [`start_interruptible`](PluginHost::start_interruptible), the budget kept on `clock`
    /// (a test's manual clock decides when a call has run too long).
    pub fn start_on(
        settings: &PluginSettings,
        extra: &Extra,
        hostname: &str,
        interrupt: Option<Receiver<()>>,
        clock: Arc<dyn Clock>,
    ) -> PluginHost {
        signals::keep_agents();
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let mut host = PluginHost {
            budget: Budget {
                budget: settings.budget,
                max_failures: settings.limits.max_failures.max(1),
                limits: settings.limits,
            },
            hostname: hostname.to_owned(),
            slots: Vec::new(),
            lanes: Vec::new(),
            done_tx,
            done_rx,
            pending: Output::default(),
            interrupt,
            native: true,
            clock,
        };
        let sources = sources_of(settings, extra);

        let (files, dir_problems) = load::discover(&sources);
        for (dir, why) in dir_problems {
            let summary = format!("plugin directory {} cannot be read: {why}", dir.display());
            host.report(
                "plugin.dir",
                Severity::Warning,
                State::Raised,
                &dir.display().to_string(),
                summary,
                Data::new(),
            );
        }
        let euid = perms::effective_uid();
        let mut names: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in files {
            host.load_file(&path, euid, settings, &mut names);
            // Its initialisers ran in this thread: they must not leave the agent deaf.
            host.restore_signals(&path.display().to_string());
        }
        for name in &settings.disable {
            if !names.contains_key(name) {
                host.log(
                    Level::Warn,
                    "plugins",
                    format!(
                        "plugins.disable names {name}, which is not loaded (a misspelt name, \
                         or a plugin missing from the plugin directories)"
                    ),
                );
            }
        }
        for (name, table) in &settings.tables {
            if !names.contains_key(name) {
                host.log(
                    Level::Warn,
                    "plugins",
                    format!(
                        "{}: [plugins.{name}] configures a plugin that is not loaded \
                         (a misspelt name, or a plugin missing from the plugin directories)",
                        table.origin
                    ),
                );
            }
        }
        let deadline = host.clock.now() + host.budget.budget;
        host.wait(deadline);
        host.mark_hung();
        host
    }

    /// Loads the plugin, or each plugin of the bundle, in `path`.
    fn load_file(
        &mut self,
        path: &Path,
        euid: u32,
        settings: &PluginSettings,
        names: &mut BTreeMap<String, PathBuf>,
    ) {
        let info = |in_bundle| PluginInfo {
            path: path.to_path_buf(),
            name: None,
            version: None,
            abi: None,
            build_info: None,
            in_bundle,
            status: Status::Loaded,
            native: false,
        };
        let plugins = match load::open(path, euid) {
            Ok(plugins) => plugins,
            Err(refusal) => {
                let mut info = info(None);
                info.abi = refusal.abi;
                return self.refuse(info, refusal.reason);
            }
        };
        let bundle = plugins.len() > 1;
        // The file's plugins share one lane (see `lane`), made for the first that runs.
        let mut file_lane = None;
        let mut disabled = Vec::new();
        for (index, opened) in plugins.into_iter().enumerate() {
            let mut info = info(bundle.then_some(index));
            match opened {
                Ok(opened) if settings.disable.contains(&opened.name) => {
                    disabled.push(self.load_off(info, opened, names));
                }
                Ok(opened) => self.load_one(info, opened, settings, names, &mut file_lane),
                Err(refusal) => {
                    info.abi = refusal.abi;
                    self.refuse(info, refusal.reason);
                }
            }
        }
        // One line a file: a bundle's checks that a host leaves off are a list, not a page.
        let disabled: Vec<String> = disabled.into_iter().flatten().collect();
        if !disabled.is_empty() {
            self.log(
                Level::Info,
                "plugins",
                format!(
                    "not started, as plugins.disable says: {} ({})",
                    disabled.join(", "),
                    path.display()
                ),
            );
        }
    }

    /// Records a plugin that `disable` names, found but not started; its name, unless
    /// another plugin of that name came first (then it is refused as a duplicate).
    fn load_off(
        &mut self,
        info: PluginInfo,
        opened: load::Opened,
        names: &mut BTreeMap<String, PathBuf>,
    ) -> Option<String> {
        let mut info = self.claim_name(info, &opened, names)?;
        info.status = Status::Off;
        self.slots.push(Slot { info, run: None });
        Some(opened.name)
    }

    /// `info` with what the plugin says of itself, and its name taken; `None` when a plugin
    /// of that name came first (this one is refused, and the first stays).
    fn claim_name(
        &mut self,
        mut info: PluginInfo,
        opened: &load::Opened,
        names: &mut BTreeMap<String, PathBuf>,
    ) -> Option<PluginInfo> {
        info.name = Some(opened.name.clone());
        info.version = Some(opened.version.clone());
        info.abi = Some(opened.abi);
        info.build_info = Some(opened.build_info.clone());
        if let Some(first) = names.get(&opened.name) {
            let why = format!(
                "a plugin named {} is already loaded from {}",
                opened.name,
                first.display()
            );
            self.refuse(info, why);
            return None;
        }
        names.insert(opened.name.clone(), info.path.clone());
        Some(info)
    }

    fn load_one(
        &mut self,
        info: PluginInfo,
        opened: load::Opened,
        settings: &PluginSettings,
        names: &mut BTreeMap<String, PathBuf>,
        file_lane: &mut Option<usize>,
    ) {
        let Some(info) = self.claim_name(info, &opened, names) else {
            return;
        };
        let table = settings.tables.get(&opened.name);
        let config = match table {
            Some(t) => sdk::config::encode(&toml_to_value(toml::Value::Table(t.table.clone()))),
            None => sdk::config::encode(&Value::Map(BTreeMap::new())),
        };
        let shared = Arc::new(Shared::new(
            &opened.name,
            self.budget.limits,
            &self.hostname,
        ));
        // Events emitted from `create` (unusual, but allowed) carry the time of loading.
        shared.begin_sample(
            EventTime::from_system_time(SystemTime::now()),
            &self.hostname,
        );
        let lane = match *file_lane {
            Some(lane) => lane,
            None => match self.new_lane(lane_name_of_file(&info.path)) {
                Ok(lane) => *file_lane.insert(lane),
                Err(e) => return self.refuse(info, format!("cannot start its thread: {e}")),
            },
        };
        let index = self.slots.len();
        let member = Arc::new(Mutex::new(Member::new(opened.calls, &shared)));
        let since = self.clock.now();
        self.lanes[lane].lane.post([Queued {
            owner: index,
            posted: since,
            job: Call {
                member: Arc::clone(&member),
                job: Job::Create(config),
            },
        }]);
        self.slots.push(Slot {
            info,
            run: Some(Running {
                lane: Some(lane),
                member,
                shared,
                busy: Some(Busy {
                    call: "create",
                    since,
                    hung: false,
                }),
                created: false,
                failures: 0,
                last_error: String::new(),
                raised: Raised::default(),
                origin: table.map(|t| t.origin.clone()),
                unread: opened.calls.unread,
                takes_events: opened.calls.on_event.is_some(),
            }),
        });
    }

    fn refuse(&mut self, mut info: PluginInfo, why: String) {
        let subject = info.label();
        let summary = format!("plugin {} was not loaded: {why}", info.path.display());
        let data = data(&[("path", info.path.display().to_string().into())]);
        self.report(
            "plugin.refused",
            Severity::Warning,
            State::Raised,
            &subject,
            summary,
            data,
        );
        info.status = Status::Refused(why);
        self.slots.push(Slot { info, run: None });
    }

    /// Hands `sample` to every idle plugin and returns, within the budget, what they emitted
    /// and what went wrong. A plugin built with this agent (ABI 1.4, the same sample layout)
    /// reads the sample itself; the others get it encoded, each large part once. The `Arc`
    /// is what a hung plugin holds until it returns.
    pub fn run(&mut self, sample: &Arc<Sample>) -> Output {
        // Each large part of the sample is encoded once, for all the variants, and only for
        // the plugins that take MessagePack.
        let mut parts = zpulse_proto::sample::PartEncoder::new(sample);
        let mut encoded = worker::Encoded::new(|unread| parts.encode(unread));
        let native = self.native;
        self.dispatch(
            EventTime::from_unix(sample.end),
            "on_sample",
            |run, takes_native| {
                Some(if takes_native && native {
                    Job::NativeSample(Arc::clone(sample))
                } else {
                    Job::Sample(encoded.for_plugin(run.unread))
                })
            },
        );
        self.take_output()
    }

    /// Hands kernel events to every idle plugin that takes them (ABI 1.6 `on_event`), in
    /// order, and returns within the budget what they emitted, each finding stamped with
    /// the time of the event it came from. An event whose encoding is over
    /// [`abi::ZEVENT_MAX_BYTES`] goes to no plugin (said in a log line); a hung plugin gets
    /// none until it returns.
    pub fn deliver(&mut self, events: &[zpulse_proto::ZEvent]) -> Output {
        let takers = self
            .slots
            .iter()
            .filter_map(|s| s.run.as_ref())
            .any(|r| r.takes_events);
        let Some(last) = events.last().filter(|_| takers) else {
            return self.take_output();
        };
        let mut encoded = Vec::with_capacity(events.len());
        for event in events {
            let bytes = event.to_msgpack();
            if bytes.len() > abi::ZEVENT_MAX_BYTES {
                let why = format!(
                    "kernel event {} ({}) is {} bytes encoded, over the {} plugins take; \
                     no plugin sees it",
                    event.eid,
                    event.class,
                    bytes.len(),
                    abi::ZEVENT_MAX_BYTES
                );
                self.log(Level::Warn, "plugins", why);
                continue;
            }
            encoded.push(worker::EncodedZevent {
                time: event.time,
                bytes,
            });
        }
        let encoded: Arc<[worker::EncodedZevent]> = encoded.into();
        self.dispatch(last.time, "on_event", |run, _| {
            run.takes_events.then(|| Job::Events(Arc::clone(&encoded)))
        });
        self.take_output()
    }

    /// Sends every plugin the MessagePack sample, even those that could take the agent's
    /// own (for comparing the two deliveries; a plugin sees the same figures either way).
    pub fn messagepack_only(&mut self) {
        self.native = false;
    }

    /// `zpulse report`: hands `window` to every running plugin's `report` (after the window's
    /// samples went through [`run`](PluginHost::run)) and returns, within the budget, the
    /// sections they gave, in plugin order, with what went wrong in the output.
    pub fn report_window(&mut self, window: &ReportWindow) -> (Vec<Section>, Output) {
        let mut encoded =
            worker::Encoded::new(|unread| zpulse_proto::sdk::encode_window_for(window, unread));
        self.dispatch(EventTime::from_unix(window.to), "report", |run, _| {
            Some(Job::Report(encoded.for_plugin(run.unread)))
        });
        let out = self.take_output();
        let sections = self
            .slots
            .iter()
            .filter_map(|s| s.run.as_ref())
            .flat_map(|run| std::mem::take(&mut run.shared.lock().sections))
            .collect();
        (sections, out)
    }

    /// Gives every idle, created plugin the job `job(the plugin, takes the native sample)`
    /// for `call` (none when it gives `None`), stamped with `time`, then waits for them
    /// within the budget and marks the late ones hung.
    fn dispatch(
        &mut self,
        time: EventTime,
        call: &'static str,
        mut job: impl FnMut(&Running, bool) -> Option<Job>,
    ) {
        self.collect();
        let now = self.clock.now();
        // One batch a lane, so that each lane is woken once.
        let mut batches: Vec<Vec<Queued<Call>>> = self.lanes.iter().map(|_| Vec::new()).collect();
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(run) = slot.run.as_mut() else {
                continue;
            };
            if run.busy.is_some() || !run.created {
                continue;
            }
            let Some(lane) = run.lane else { continue };
            let Some(job) = job(run, slot.info.native) else {
                continue;
            };
            run.shared.begin_sample(time, &self.hostname);
            batches[lane].push(Queued {
                owner: index,
                posted: now,
                job: Call {
                    member: Arc::clone(&run.member),
                    job,
                },
            });
            run.busy = Some(Busy {
                call,
                since: now,
                hung: false,
            });
        }
        // One lane at work (the shipped checks are one file) runs on the host's CPU while the
        // host waits; several run side by side wherever the scheduler puts them, so that two
        // heavy plugin files do not share one CPU and each other's budget.
        let at_work = batches.iter().filter(|b| !b.is_empty()).count();
        let place = if at_work == 1 {
            Place::WithCaller
        } else {
            Place::Anywhere
        };
        for (lane, batch) in self.lanes.iter().zip(batches) {
            lane.lane.post_placed(batch, place);
        }
        self.wait(now + self.budget.budget);
        self.mark_hung();
        // A plugin still in its call may have changed them there (lanes restore after each
        // call, which a hung one has not finished).
        self.restore_signals("a plugin still in its call");
    }

    /// Puts back the agent's SIGTERM, SIGINT and SIGHUP handling if `who` changed it.
    fn restore_signals(&mut self, who: &str) {
        let restored = signals::restore_agents();
        if !restored.is_empty() {
            let message = format!("{who} {}", signals::changed_warning(&restored));
            self.log(Level::Warn, "plugins", message);
        }
    }

    /// What has been produced since the last call (loading problems, late returns).
    pub fn take_output(&mut self) -> Output {
        self.collect();
        let mut out = Output::default();
        for i in 0..self.slots.len() {
            self.drain(i, &mut out);
        }
        out.events.append(&mut self.pending.events);
        out.logs.append(&mut self.pending.logs);
        out
    }

    /// Every plugin file found, loaded or not.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.slots.iter().map(|s| s.info.clone()).collect()
    }

    /// Stops every plugin: each finishes its call, gets `destroy`, and its thread ends. Waits
    /// at most the budget; a hung plugin is left to the process's exit.
    pub fn shutdown(self) {
        let deadline = Instant::now() + self.budget.budget;
        self.shutdown_by(deadline);
    }

    /// [`shutdown`](PluginHost::shutdown), waiting never past `deadline`.
    pub fn shutdown_by(mut self, deadline: Instant) {
        let mut waiting = self.stop_all();
        let deadline = deadline.min(Instant::now() + self.budget.budget);
        while waiting > 0 {
            if self.done_rx.recv_deadline(deadline).is_err() {
                break;
            }
            waiting -= self
                .take_finished()
                .into_iter()
                .filter(|(_, done)| matches!(done, Done::Stopped))
                .count();
        }
    }

    /// Posts every running plugin its last call (`destroy`) and closes the lanes, whose
    /// threads end once they have run it (a hung call keeps its lane's thread, and what is
    /// queued behind it, to the process's exit). Returns how many plugins were stopped.
    fn stop_all(&mut self) -> usize {
        let mut stopped = 0;
        for index in 0..self.slots.len() {
            stopped += usize::from(self.stop(index));
        }
        for lane in &self.lanes {
            lane.lane.close();
        }
        stopped
    }

    /// The plugins whose calls go to lane `lane`.
    fn plugins_on(&self, lane: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots.len()).filter(move |&i| {
            self.slots[i]
                .run
                .as_ref()
                .is_some_and(|r| r.lane == Some(lane))
        })
    }

    /// Closes lane `lane` once no plugin has it: a file whose plugins are all refused or
    /// disabled keeps no thread (what is queued, a last call, still runs).
    fn close_if_unused(&self, lane: usize) {
        if self.plugins_on(lane).next().is_none() {
            self.lanes[lane].lane.close();
        }
    }

    /// Posts plugin `index` its last call, if it has a lane: it gets no more calls, and its
    /// lane ends once no other plugin has it.
    fn stop(&mut self, index: usize) -> bool {
        let Some(run) = self.slots[index].run.as_mut() else {
            return false;
        };
        let Some(lane) = run.lane.take() else {
            return false;
        };
        self.lanes[lane].lane.post([Queued {
            owner: index,
            posted: self.clock.now(),
            job: Call {
                member: Arc::clone(&run.member),
                job: Job::Stop,
            },
        }]);
        self.close_if_unused(lane);
        true
    }

    /// Starts a lane whose threads are named `name`.
    fn new_lane(&mut self, name: String) -> std::io::Result<usize> {
        let id = self.lanes.len();
        let lane = Lane::spawn(
            id,
            name.clone(),
            worker::STACK_BYTES,
            self.done_tx.clone(),
            worker::work,
        )?;
        self.lanes.push(PluginLane { lane, name });
        Ok(id)
    }

    /// Every outcome the lanes have finished, as (plugin, outcome).
    fn take_finished(&self) -> Vec<(usize, Done)> {
        let mut finished = Vec::new();
        for lane in &self.lanes {
            lane.lane.take_finished(&mut finished);
        }
        finished
    }

    /// Handles every outcome the lanes have finished, without waiting.
    fn collect(&mut self) {
        while self.done_rx.try_recv().is_ok() {}
        for (index, done) in self.take_finished() {
            self.handle(index, done);
        }
    }

    /// Handles reports until no plugin is busy with a call not yet found hung, or until
    /// `deadline`.
    fn wait(&mut self, deadline: Instant) {
        loop {
            let waiting = self.slots.iter().any(|s| {
                s.run
                    .as_ref()
                    .and_then(|r| r.busy.as_ref())
                    .is_some_and(|b| !b.hung)
            });
            if !waiting {
                return;
            }
            let budget_over = self.clock.at(deadline);
            let dry = match &self.interrupt {
                None => crossbeam_channel::select! {
                    recv(self.done_rx) -> dry => dry.ok(),
                    recv(budget_over) -> _ => None,
                },
                Some(stop) => crossbeam_channel::select! {
                    recv(self.done_rx) -> dry => dry.ok(),
                    recv(stop) -> _ => None,
                    recv(budget_over) -> _ => None,
                },
            };
            // What finished before the deadline counts, also on a lane still busy.
            self.collect();
            if dry.is_none() {
                return;
            }
        }
    }

    /// Marks every call in hand that has outrun the budget (counted from when it was posted)
    /// as hung: reported once, and a failure. Its lane is left to it: the other plugins of
    /// the lane, and what they have queued, go on on a new one. A call still queued behind
    /// it is not hung: it has not started.
    fn mark_hung(&mut self) {
        let budget = self.budget.budget;
        let now = self.clock.now();
        for lane in 0..self.lanes.len() {
            let Some(in_hand) = self.lanes[lane].lane.in_hand() else {
                continue;
            };
            if now.saturating_duration_since(in_hand.posted) < budget {
                continue;
            }
            // A call that spins is not held to the CPU the host was on when it posted.
            self.lanes[lane].lane.release_placement();
            self.split(lane, in_hand.owner);
            self.mark_one_hung(in_hand.owner);
        }
    }

    /// Moves every plugin of lane `lane` but `owner`, and their queued calls, to a new lane.
    fn split(&mut self, lane: usize, owner: usize) {
        let others: Vec<usize> = self.plugins_on(lane).filter(|&i| i != owner).collect();
        let moved = self.lanes[lane].lane.take_queued_except(owner);
        if others.is_empty() && moved.is_empty() {
            return;
        }
        let name = self.lanes[lane].name.clone();
        match self.new_lane(name) {
            Ok(new) => {
                for i in others {
                    if let Some(run) = self.slots[i].run.as_mut() {
                        run.lane = Some(new);
                    }
                }
                self.lanes[new].lane.post(moved);
            }
            Err(e) => {
                // They wait behind the hung call, as they would on a thread of their own.
                self.lanes[lane].lane.post(moved);
                let why = format!(
                    "cannot start a thread for the plugins beside a hung one; they wait for \
                     it: {e}"
                );
                self.log(Level::Warn, "plugins", why);
            }
        }
    }

    /// Plugin `i`'s call in hand has outrun the budget.
    fn mark_one_hung(&mut self, i: usize) {
        let budget = self.budget.budget;
        let slot = &mut self.slots[i];
        let Some(run) = slot.run.as_mut() else {
            return;
        };
        let Some(busy) = run.busy.as_mut() else {
            return;
        };
        if busy.hung {
            return;
        }
        busy.hung = true;
        let call = busy.call;
        run.failures += 1;
        let why = format!("{call} has been running for more than {}", seconds(budget));
        slot.info.status = Status::Hung(why.clone());
        let first = !std::mem::replace(&mut run.raised.hung, true);
        let name = slot.info.label();
        if first {
            let summary = format!(
                "plugin {name}: {why} (plugins.budget); it gets no samples until the call \
                 returns"
            );
            let data = data(&[
                ("call", call.into()),
                ("budget_s", budget.as_secs_f64().into()),
            ]);
            self.report(
                "plugin.hung",
                Severity::Warning,
                State::Raised,
                &name,
                summary,
                data,
            );
        }
        self.maybe_disable(i);
    }

    fn handle(&mut self, index: usize, done: Done) {
        let Some(slot) = self.slots.get_mut(index) else {
            return;
        };
        let name = slot.info.label();
        let Some(run) = slot.run.as_mut() else { return };
        let late = run.busy.take().filter(|b| b.hung);
        if let Some(busy) = &late {
            if matches!(slot.info.status, Status::Hung(_)) {
                slot.info.status = Status::Loaded;
            }
            let line = format!(
                "{} returned after {}",
                busy.call,
                seconds(self.clock.now().saturating_duration_since(busy.since))
            );
            self.log(Level::Info, &name, line);
        }
        match done {
            Done::Created {
                status,
                error,
                native,
            } => self.created(index, status, error, native),
            Done::Sampled { status, error } => {
                self.sampled(index, "on_sample", status, error, late.is_some())
            }
            Done::Evented { status, error } => {
                self.sampled(index, "on_event", status, error, late.is_some())
            }
            Done::Reported { status, error } => {
                if status != abi::STATUS_OK {
                    let why = error.unwrap_or_else(|| format!("status {status}, no reason"));
                    self.log(Level::Warn, &name, format!("report failed: {why}"));
                }
            }
            Done::Stopped => {}
        }
    }

    /// `create` returned: the plugin runs from the next sample, or is refused.
    fn created(&mut self, index: usize, status: abi::Status, error: Option<String>, native: bool) {
        let slot = &mut self.slots[index];
        let name = slot.info.label();
        let Some(run) = slot.run.as_mut() else { return };
        if status == abi::STATUS_OK {
            run.created = true;
            slot.info.native = native;
            return;
        }
        let why = error.unwrap_or_else(|| "no reason given".into());
        let why = match (status, &run.origin) {
            (abi::STATUS_CONFIG, Some(origin)) => {
                format!("{origin}: [plugins.{name}] is invalid: {why}")
            }
            (abi::STATUS_CONFIG, None) => format!("its config is invalid: {why}"),
            (abi::STATUS_PANIC, _) => format!("create {why}"),
            _ => format!("create failed: {why}"),
        };
        // Its lane sends it nothing more (it has no state to destroy).
        let lane = run.lane;
        slot.run = None;
        slot.info.status = Status::Refused(why.clone());
        let summary = format!("plugin {} was not loaded: {why}", slot.info.path.display());
        let data = data(&[("path", slot.info.path.display().to_string().into())]);
        if let Some(lane) = lane {
            self.close_if_unused(lane);
        }
        self.report(
            "plugin.refused",
            Severity::Warning,
            State::Raised,
            &name,
            summary,
            data,
        );
    }

    /// `call` (`on_sample`, `on_event`) returned; `late` when it had been found hung (and
    /// counted) already.
    fn sampled(
        &mut self,
        index: usize,
        call: &str,
        status: abi::Status,
        error: Option<String>,
        late: bool,
    ) {
        if status == abi::STATUS_OK {
            if !late {
                self.recovered(index);
            }
            return;
        }
        let slot = &mut self.slots[index];
        let name = slot.info.label();
        let Some(run) = slot.run.as_mut() else { return };
        let why = match (status, error) {
            (abi::STATUS_PANIC, Some(e)) => format!("{call} {e}"),
            (_, Some(e)) => format!("{call} failed: {e}"),
            (s, None) => format!("{call} failed with status {s} and no reason"),
        };
        run.last_error = why.clone();
        if late {
            self.log(Level::Warn, &name, why);
            return;
        }
        run.failures += 1;
        if !std::mem::replace(&mut run.raised.failing, true) {
            let summary = format!("plugin {name}: {why}");
            let data = data(&[("status", i64::from(status).into())]);
            self.report(
                "plugin.failing",
                Severity::Warning,
                State::Raised,
                &name,
                summary,
                data,
            );
        }
        self.maybe_disable(index);
    }

    /// An on-time, successful call: the failure count restarts and raised problems clear.
    fn recovered(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        let name = slot.info.label();
        let Some(run) = slot.run.as_mut() else { return };
        run.failures = 0;
        let hung = std::mem::take(&mut run.raised.hung);
        let failing = std::mem::take(&mut run.raised.failing);
        if hung {
            let summary = format!("plugin {name} answers within its budget again");
            self.report(
                "plugin.hung",
                Severity::Warning,
                State::Cleared,
                &name,
                summary,
                Data::new(),
            );
        }
        if failing {
            let summary = format!("plugin {name} works again");
            self.report(
                "plugin.failing",
                Severity::Warning,
                State::Cleared,
                &name,
                summary,
                Data::new(),
            );
        }
    }

    fn maybe_disable(&mut self, index: usize) {
        let max = self.budget.max_failures;
        let slot = &mut self.slots[index];
        let name = slot.info.label();
        let Some(run) = slot.run.as_ref() else { return };
        if run.failures < max || run.lane.is_none() {
            return;
        }
        let last = if run.last_error.is_empty() {
            match &slot.info.status {
                Status::Hung(why) => why.clone(),
                _ => "no reason given".into(),
            }
        } else {
            run.last_error.clone()
        };
        let why = format!("{max} failures in a row; the last: {last}");
        slot.info.status = Status::Disabled(why.clone());
        // Its last call, behind the one in hand if it is hung.
        self.stop(index);
        let summary =
            format!("plugin {name} was disabled after {why}. Fix it and restart the agent");
        let data = data(&[("failures", u64::from(max).into())]);
        self.report(
            "plugin.disabled",
            Severity::Critical,
            State::Raised,
            &name,
            summary,
            data,
        );
    }

    /// Moves a plugin's collected events and logs into `out`, reporting event problems once.
    fn drain(&mut self, index: usize, out: &mut Output) {
        let slot = &mut self.slots[index];
        let name = slot.info.label();
        let Some(run) = slot.run.as_mut() else { return };
        let mut problems = Vec::new();
        {
            let mut c = run.shared.lock();
            out.events.append(&mut c.events);
            out.logs.append(&mut c.logs);
            if c.invalid > 0 && !std::mem::replace(&mut run.raised.invalid, true) {
                let why = c.first_invalid.clone().unwrap_or_default();
                problems.push((
                    "plugin.invalid-event",
                    format!(
                        "plugin {name} emitted an invalid event, which was dropped: {why}; \
                         further invalid events from it are dropped without notice"
                    ),
                    data(&[("dropped", c.invalid.into())]),
                ));
            }
            if c.rate_limited > 0 && !std::mem::replace(&mut run.raised.rate_limited, true) {
                problems.push((
                    "plugin.rate-limited",
                    format!(
                        "plugin {name} emitted more than {} events for one sample \
                         (plugins.max_events_per_sample); the rest were dropped, now and \
                         from now on",
                        self.budget.limits.max_events_per_sample
                    ),
                    data(&[("dropped", c.rate_limited.into())]),
                ));
            }
            if c.invalid_sections > 0 && !std::mem::replace(&mut run.raised.invalid_sections, true)
            {
                let why = c.first_invalid_section.clone().unwrap_or_default();
                problems.push((
                    "plugin.invalid-section",
                    format!(
                        "plugin {name} gave an invalid report section, which was left out of the \
                         report: {why}"
                    ),
                    data(&[("dropped", c.invalid_sections.into())]),
                ));
            }
            if c.sections_dropped > 0 && !std::mem::replace(&mut run.raised.sections_dropped, true)
            {
                problems.push((
                    "plugin.report-truncated",
                    format!(
                        "plugin {name} gave more than {} sections to one report; the rest \
                         were left out",
                        zpulse_proto::report::SECTIONS_PER_PLUGIN
                    ),
                    data(&[("dropped", c.sections_dropped.into())]),
                ));
            }
            if c.logs_dropped > 0 && !std::mem::replace(&mut run.raised.logs_dropped, true) {
                out.logs.push(LogLine {
                    level: Level::Warn,
                    source: name.clone(),
                    message: "more than 100 log lines for one sample; the rest are dropped".into(),
                });
            }
        }
        for (check, summary, data) in problems {
            self.report(
                check,
                Severity::Warning,
                State::Raised,
                &name,
                summary,
                data,
            );
        }
    }

    /// Queues an agent event and its log line.
    fn report(
        &mut self,
        check: &str,
        severity: Severity,
        state: State,
        subject: &str,
        summary: String,
        data: Data,
    ) {
        let level = match (state, severity) {
            (State::Cleared, _) => Level::Info,
            (_, Severity::Critical) => Level::Error,
            _ => Level::Warn,
        };
        self.pending.logs.push(LogLine {
            level,
            source: "plugins".into(),
            message: summary.clone(),
        });
        let mut event = Event::agent(
            check,
            state,
            severity,
            truncate(subject, zpulse_proto::event::limits::SUBJECT_CHARS),
            truncate(&summary, zpulse_proto::event::limits::SUMMARY_CHARS),
        );
        event.host = self.hostname.clone();
        event.data = data;
        self.pending.events.push(Entry {
            time: EventTime::from_system_time(SystemTime::now()),
            event,
        });
    }

    fn log(&mut self, level: Level, source: &str, message: String) {
        self.pending.logs.push(LogLine {
            level,
            source: source.into(),
            message,
        });
    }
}

impl Drop for PluginHost {
    fn drop(&mut self) {
        // Idle plugins destroy their states and the lanes end; a hung call keeps its lane to
        // the process's exit.
        self.stop_all();
    }
}

/// A lane's thread name: its file's stem without `lib` (`libzpulse_checks.so`:
/// `zpulse_checks`), which the 15 bytes a thread name keeps say the most of.
fn lane_name_of_file(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    stem.strip_prefix("lib").unwrap_or(&stem).to_owned()
}

fn data(pairs: &[(&str, Value)]) -> Data {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Text cut to `max` characters and made one line, for fields with limits.
fn truncate(s: &str, max: usize) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect()
}

/// A TOML value as the MessagePack-ready [`Value`] plugins receive. Datetimes become their
/// TOML text (RFC 3339).
/// Where the plugins of `settings` and `extra` are, in loading order.
fn sources_of(settings: &PluginSettings, extra: &Extra) -> Vec<Source> {
    let mut sources: Vec<Source> = settings
        .dirs
        .iter()
        .map(|d| Source::Dir {
            path: d.clone(),
            required: !settings.default_dirs,
        })
        .collect();
    sources.extend(settings.paths.iter().cloned().map(Source::File));
    sources.extend(extra.dirs.iter().map(|d| Source::Dir {
        path: d.clone(),
        required: true,
    }));
    sources.extend(extra.paths.iter().cloned().map(Source::File));
    sources
}

/// Checks every `[plugins.<name>]` table with that plugin's own `check_config` (ABI 1.1),
/// which decodes it and validates it as `create` would (the SDK's declared settings and the
/// check's own rules) and builds nothing: what `check-config` and a reload do before anything
/// changes. Also refused: a table that names no plugin found (misspelt, or no plugin could
/// be loaded to check it: said so, with why), and a `disable` entry that names none. `Err`
/// holds one line per problem, naming the file, the line and the key; `Ok` holds notes (a
/// plugin that cannot check its table without running it, ABI 1.0). Plugins that would be
/// refused at load for other reasons are `run`'s to report, not config errors. `file` is
/// the config file, for the line of `disable`.
pub fn check_tables(
    settings: &PluginSettings,
    extra: &Extra,
    within: Duration,
    file: Option<&Path>,
) -> Result<Vec<String>, String> {
    let (files, unreadable) = load::discover(&sources_of(settings, extra));
    let euid = perms::effective_uid();
    let mut errors = Vec::new();
    let mut notes = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    // Why files gave no plugin, for a table whose plugin is not among those found.
    let mut not_loaded: Vec<String> = unreadable
        .iter()
        .map(|(dir, why)| format!("{}: {why}", dir.display()))
        .collect();
    let mut opened_all = Vec::new();
    for path in &files {
        match load::open(path, euid) {
            Ok(plugins) => {
                for plugin in plugins {
                    match plugin {
                        Ok(p) => opened_all.push((path, p)),
                        Err(r) => not_loaded.push(format!("{}: {}", path.display(), r.reason)),
                    }
                }
            }
            Err(r) => not_loaded.push(format!("{}: {}", path.display(), r.reason)),
        }
    }
    for (path, opened) in &opened_all {
        // The first of a name is the one loaded; one that `disable` names is not started.
        if !seen.insert(opened.name.clone()) || settings.disable.contains(&opened.name) {
            continue;
        }
        let Some(table) = settings.tables.get(&opened.name) else {
            continue;
        };
        let name = &opened.name;
        let Some(check) = opened.check_config else {
            notes.push(format!(
                "{}: plugins.{name}: plugin {} (ABI {}.{}) cannot check its table without \
                 running it; `run` will",
                table.origin,
                path.display(),
                opened.abi.0,
                opened.abi.1
            ));
            continue;
        };
        let config = sdk::config::encode(&toml_to_value(toml::Value::Table(table.table.clone())));
        if let Err(why) = worker::check_config(check, config, name, within) {
            // One line per failure the plugin gave, each at its key's line.
            for line in why.lines().filter(|l| !l.trim().is_empty()) {
                errors.push(table.locate(name, line));
            }
        }
    }
    let found: Vec<&str> = seen.iter().map(String::as_str).collect();
    let unknown = |name: &str| {
        if found.is_empty() {
            let why = if not_loaded.is_empty() {
                "none was found".to_string()
            } else {
                not_loaded.join("; ")
            };
            format!("no plugin could be loaded to check it ({why})")
        } else {
            let mut text = format!("no plugin is called {name:?} (found: {})", found.join(", "));
            if let Some(near) = nearest(name, &found) {
                text.push_str(&format!("; did you mean {near:?}?"));
            }
            text
        }
    };
    for (name, table) in &settings.tables {
        if !seen.contains(name) {
            errors.push(format!(
                "{}: plugins.{name}: {}",
                table.origin,
                unknown(name)
            ));
        }
    }
    let disable_lines = file.map(disable_lines).unwrap_or_default();
    for (i, name) in settings.disable.iter().enumerate() {
        if !seen.contains(name) {
            let at = match (file, disable_lines.get(i)) {
                (Some(f), Some(line)) => format!("{}:{line}", f.display()),
                (Some(f), None) => f.display().to_string(),
                (None, _) => "plugins".to_string(),
            };
            errors.push(format!("{at}: plugins.disable[{i}]: {}", unknown(name)));
        }
    }
    if errors.is_empty() {
        Ok(notes)
    } else {
        Err(errors.join("\n"))
    }
}

/// The found name one or two edits from `name` (a misspelt table), if exactly one is.
fn nearest<'a>(name: &str, found: &[&'a str]) -> Option<&'a str> {
    let mut close = found.iter().filter(|f| edit_distance(name, f) <= 2);
    let first = close.next()?;
    close.next().is_none().then_some(*first)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// The line of each entry of `[plugins] disable` in the config file (already parsed once by
/// the config, so it reads; none when it cannot be read again).
fn disable_lines(file: &Path) -> Vec<usize> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let Ok(doc) = toml::de::DeTable::parse(&text) else {
        return Vec::new();
    };
    let plugins = doc.get_ref().iter().find(|(k, _)| k.get_ref() == "plugins");
    let Some((_, plugins)) = plugins else {
        return Vec::new();
    };
    let toml::de::DeValue::Table(plugins) = plugins.get_ref() else {
        return Vec::new();
    };
    let Some((_, disable)) = plugins.iter().find(|(k, _)| k.get_ref() == "disable") else {
        return Vec::new();
    };
    let toml::de::DeValue::Array(items) = disable.get_ref() else {
        return Vec::new();
    };
    let line = |at: usize| {
        text.as_bytes()[..at.min(text.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    };
    items.iter().map(|item| line(item.span().start)).collect()
}

pub fn toml_to_value(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::Str(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => Value::Float(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::Str(d.to_string()),
        toml::Value::Array(a) => Value::List(a.into_iter().map(toml_to_value).collect()),
        toml::Value::Table(t) => {
            Value::Map(t.into_iter().map(|(k, v)| (k, toml_to_value(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests;
