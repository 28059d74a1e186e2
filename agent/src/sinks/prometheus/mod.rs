//! The Prometheus sink: every reading rendered once, served at `GET /metrics` and/or written
//! to a file for node_exporter's textfile collector.
//!
//! ```toml
//! [[sink]]
//! type = "prometheus"
//! listen = "127.0.0.1:9134"        # the default; "" = no HTTP (textfile only)
//! # textfile = "/var/lib/prometheus/node-exporter/zpulse.prom"
//! # max_connections = 8            # connections at once, half from one address
//! # timeout = "10s"                # to read a whole request head, to write a whole response
//! # detail = "standard"            # or "leaves" (leaf vdev histograms too), "full" (everything)
//! ```
//!
//! Nothing is rendered that nobody reads, and nothing twice. With only a listener, the sink
//! hands each reading (with the open findings and the agent's health) to the server, and the
//! first scrape of it renders it, once, for every scrape until the next reading; a reading no
//! scrape asks for is never rendered. With a textfile, the sink renders each reading on its
//! own thread (never the sampler's), writes the file only when its bytes changed, and the
//! server serves that same rendering. The server threads only copy rendered bytes.
//! On a clean exit the textfile is removed, so node_exporter stops exporting figures nobody
//! updates (after a crash, `zpulse_last_sample_timestamp_seconds` tells their age).
//! Open findings come from the events the sink is given (raised or updated: open; cleared:
//! gone), the agent's health from its heartbeat and its own process figures.

pub mod exposition;
pub mod server;

use super::spec::{Planned, SinkKind};
use super::{Reading, Sink, SinkError, SinkStats, Stamped};
use exposition::{AgentHealth, Detail, OpenFinding, SinkHealth};
use server::{Endpoint, Limits, Published};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zpulse_proto::event::{Kind, State, Value};

/// The port registered for zpulse in Prometheus' default port allocations wiki is not ours
/// to claim; 9134 is the one this project documents.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9134";

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(try_from = "PrometheusTable")]
pub struct PrometheusConfig {
    /// `None`: no HTTP server (textfile only).
    pub listen: Option<SocketAddr>,
    pub textfile: Option<PathBuf>,
    pub limits: Limits,
    pub detail: Detail,
}

/// A `[[sink]] type = "prometheus"` table as written, before its values are checked and
/// turned into a [`PrometheusConfig`].
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PrometheusTable {
    listen: Option<String>,
    textfile: Option<PathBuf>,
    #[serde(default = "default_max_connections")]
    max_connections: i64,
    #[serde(
        default = "default_timeout",
        deserialize_with = "zpulse_proto::sdk::config::duration::deserialize"
    )]
    timeout: Duration,
    detail: Option<String>,
}

fn default_max_connections() -> i64 {
    8
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

impl TryFrom<PrometheusTable> for PrometheusConfig {
    type Error = String;
    /// What can be said of the values alone; the textfile's directory is checked once its
    /// path is taken from the config file's directory ([`SinkKind::check`]).
    fn try_from(table: PrometheusTable) -> Result<PrometheusConfig, String> {
        if let Some(p) = &table.textfile
            && p.extension().is_none_or(|e| e != "prom")
        {
            return Err(format!(
                "textfile: {} must end in .prom (node_exporter's textfile collector reads only *.prom)",
                p.display()
            ));
        }
        let listen = match table.listen.as_deref() {
            // Only a textfile: no port unless one is asked for.
            None if table.textfile.is_some() => None,
            None => Some(parse_listen(DEFAULT_LISTEN)?),
            Some("") => None,
            Some(s) => Some(parse_listen(s)?),
        };
        if listen.is_none() && table.textfile.is_none() {
            return Err("listen = \"\" needs a textfile: the sink would export nowhere".into());
        }
        if !(1..=256).contains(&table.max_connections) {
            return Err(format!(
                "max_connections: give a number from 1 to 256, not {}",
                table.max_connections
            ));
        }
        if table.timeout.is_zero() || table.timeout > Duration::from_secs(300) {
            return Err("timeout: give a duration between 1ms and 5m".into());
        }
        let detail = match table.detail.as_deref() {
            None => Detail::default(),
            Some(s) => Detail::parse(s).ok_or_else(|| {
                format!(
                    "detail: '{s}' is not one of {}",
                    Detail::NAMES.map(|n| format!("\"{n}\"")).join(", ")
                )
            })?,
        };
        Ok(PrometheusConfig {
            listen,
            textfile: table.textfile,
            limits: Limits {
                max_connections: table.max_connections as usize,
                timeout: table.timeout,
            },
            detail,
        })
    }
}

impl SinkKind for PrometheusConfig {
    const TYPE: &'static str = "prometheus";
    fn resolve_paths(&mut self, base: &Path) {
        super::spec::resolve_relative(base, self.textfile.iter_mut());
    }
    fn check(&self) -> Result<(), String> {
        let Some(p) = &self.textfile else {
            return Ok(());
        };
        match p.parent() {
            Some(dir) if dir.as_os_str().is_empty() || dir.is_dir() => Ok(()),
            Some(dir) => Err(format!(
                "textfile: directory {} does not exist",
                dir.display()
            )),
            None => Err(format!("textfile: {} is not a file", p.display())),
        }
    }
    /// Nothing is opened: the listener is bound (or this process's own reused) by
    /// [`Planned::start`]; its address was checked when the table was read.
    fn plan(&self) -> Result<Box<dyn Planned>, String> {
        Ok(Box::new(PlannedPrometheus(self.clone())))
    }
}

struct PlannedPrometheus(PrometheusConfig);

impl Planned for PlannedPrometheus {
    fn name(&self) -> String {
        PrometheusSink::name_of(&self.0)
    }
    fn start(self: Box<Self>) -> Result<Box<dyn Sink>, String> {
        Ok(Box::new(PrometheusSink::new(self.0)?))
    }
}

impl PrometheusConfig {
    /// A listener on a loopback port the kernel picks, at `detail`, the other settings at
    /// their defaults: for tests and benchmarks (a configuration cannot ask for port 0).
    pub fn ephemeral_loopback(detail: Detail) -> PrometheusConfig {
        PrometheusConfig {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            textfile: None,
            limits: Limits {
                max_connections: 8,
                timeout: Duration::from_secs(10),
            },
            detail,
        }
    }
}

/// `IP:PORT` (`127.0.0.1:9134`, `0.0.0.0:9134`, `[::]:9134`), with the error saying so.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s.parse().map_err(|_| {
        format!(
            "listen: '{s}' is not IP:PORT; give e.g. \"127.0.0.1:9134\", \"0.0.0.0:9134\" or \"[::]:9134\""
        )
    })?;
    if addr.port() == 0 {
        return Err(format!(
            "listen: '{s}': give a port (Prometheus must know where to scrape)"
        ));
    }
    Ok(addr)
}

pub struct PrometheusSink {
    config: PrometheusConfig,
    endpoint: Option<Arc<Endpoint>>,
    last: Option<Reading>,
    findings: BTreeMap<(String, String), String>,
    agent: Option<AgentHealth>,
    /// Kernel events sent, by (class, pool), and those the kernel dropped: counted here, for
    /// the heartbeat replaces `agent` whole.
    zevents: BTreeMap<(String, String), u64>,
    zevents_dropped: u64,
    stats: SinkStats,
    textfile_error: Option<String>,
    /// The rendering last written to the textfile.
    textfile_written: Option<Arc<Published>>,
    /// Kept across readings, and used by the sink's thread (textfile) or by the scrape that
    /// renders a reading (listener only).
    renderer: Arc<Mutex<Rendering>>,
}

impl PrometheusSink {
    /// `prometheus 127.0.0.1:9134`, `prometheus /path/zpulse.prom`, or both.
    pub fn name_of(config: &PrometheusConfig) -> String {
        match (&config.listen, &config.textfile) {
            (Some(a), None) => format!("prometheus {a}"),
            (None, Some(p)) => format!("prometheus {}", p.display()),
            (Some(a), Some(p)) => format!("prometheus {a} {}", p.display()),
            (None, None) => "prometheus".into(),
        }
    }

    /// Opens the listener (or takes this process's own on that address): a busy port is
    /// an error when the sink starts.
    pub fn new(config: PrometheusConfig) -> Result<PrometheusSink, String> {
        let endpoint = match config.listen {
            Some(addr) => Some(server::endpoint(addr, config.limits)?),
            None => None,
        };
        let detail = config.detail;
        Ok(PrometheusSink {
            config,
            endpoint,
            last: None,
            findings: BTreeMap::new(),
            agent: None,
            zevents: BTreeMap::new(),
            zevents_dropped: 0,
            stats: SinkStats::default(),
            textfile_error: None,
            textfile_written: None,
            renderer: Arc::new(Mutex::new(Rendering {
                renderer: exposition::Renderer::new(detail),
                own: crate::base::selfstat::KeptSelfStat::default(),
            })),
        })
    }

    /// The address actually listened on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(|e| e.addr)
    }

    fn findings(&self) -> Vec<OpenFinding> {
        self.findings
            .iter()
            .map(|((check, subject), severity)| OpenFinding {
                check: check.clone(),
                subject: subject.clone(),
                severity: severity.clone(),
            })
            .collect()
    }

    fn render(&mut self) -> Result<(), SinkError> {
        let Some(reading) = self.last.clone() else {
            return Ok(());
        };
        let mut agent = self.agent.clone().unwrap_or_default();
        agent.zevents = self.zevents.clone();
        agent.zevents_dropped = self.zevents_dropped;
        let findings = self.findings();
        let Some(path) = &self.config.textfile else {
            if let Some(ep) = &self.endpoint {
                let renderer = Arc::clone(&self.renderer);
                ep.shared.offer(Box::new(move || {
                    render_reading(&renderer, &reading, &findings, agent)
                }));
            }
            return Ok(());
        };
        let rendered = Arc::new(Published::new(render_reading(
            &self.renderer,
            &reading,
            &findings,
            agent,
        )));
        // The file first, the listener after: whoever scrapes a reading finds it in the
        // file too.
        let published = Arc::clone(&rendered);
        let text = rendered.exposition.text();
        let unchanged = self
            .textfile_written
            .as_ref()
            .is_some_and(|w| w.exposition.text() == text);
        if !unchanged {
            match write_atomically(path, text) {
                Ok(()) => {
                    self.textfile_error = None;
                    self.textfile_written = Some(rendered);
                }
                Err(msg) => {
                    // Said once per failure streak, not every sample.
                    let first = self.textfile_error.is_none();
                    self.textfile_error = Some(msg.clone());
                    if first {
                        self.publish(published);
                        return Err(SinkError {
                            sink: self.name(),
                            message: msg,
                        });
                    }
                }
            }
        }
        self.publish(published);
        Ok(())
    }

    fn publish(&self, rendered: Arc<Published>) {
        if let Some(ep) = &self.endpoint {
            ep.shared.publish(rendered);
        }
    }

    /// Takes what the events say: open findings, and the agent's heartbeat figures.
    /// Returns whether anything the exposition shows changed.
    fn take_events(&mut self, batch: &[Stamped]) -> bool {
        let mut changed = false;
        for s in batch {
            let e = &s.event;
            match e.kind {
                Kind::Finding => {
                    let key = (e.check.clone(), e.subject.clone());
                    match e.state {
                        Some(State::Cleared) => changed |= self.findings.remove(&key).is_some(),
                        Some(_) => {
                            let sev = e.severity.as_str().to_string();
                            changed |=
                                self.findings.insert(key, sev.clone()).as_ref() != Some(&sev);
                        }
                        None => {}
                    }
                }
                Kind::Agent if e.check == "agent.heartbeat" => {
                    self.agent = Some(agent_health(&e.data));
                    changed = true;
                }
                Kind::Zevent => {
                    let pool = e.data.get("pool").and_then(Value::as_str).unwrap_or("");
                    *self
                        .zevents
                        .entry((e.check.clone(), pool.to_owned()))
                        .or_default() += 1;
                    changed = true;
                }
                Kind::Agent if e.check == "agent.zevents" => {
                    let n = |k: &str| e.data.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                    self.zevents_dropped += (n("dropped") + n("missing")) as u64;
                    changed = true;
                }
                _ => {}
            }
        }
        changed
    }
}

/// What renders the sink's readings, kept from one to the next.
struct Rendering {
    renderer: exposition::Renderer,
    /// Kept open: each rendering reads the agent's own figures afresh.
    own: crate::base::selfstat::KeptSelfStat,
}

/// One rendering of `reading`, with the agent's CPU and memory as of now.
fn render_reading(
    rendering: &Mutex<Rendering>,
    reading: &Reading,
    findings: &[OpenFinding],
    mut agent: AgentHealth,
) -> exposition::Exposition {
    let mut rendering = rendering.lock().unwrap_or_else(|e| e.into_inner());
    let me = rendering.own.read();
    agent.cpu_seconds = me.cpu_seconds;
    agent.rss_bytes = me.rss_bytes;
    rendering
        .renderer
        .render(reading.snapshot(), findings, Some(&agent))
}

/// The heartbeat's figures (see `daemon::heartbeat`).
fn agent_health(data: &BTreeMap<String, Value>) -> AgentHealth {
    let n =
        |m: &BTreeMap<String, Value>, k: &str| m.get(k).and_then(Value::as_f64).map(|v| v as u64);
    let sinks = match data.get("sinks") {
        Some(Value::List(list)) => list
            .iter()
            .filter_map(|v| match v {
                Value::Map(m) => Some(SinkHealth {
                    name: m.get("name")?.as_str()?.to_string(),
                    queued_batches: n(m, "queued_batches"),
                    delivered: n(m, "delivered"),
                    dropped: n(m, "dropped"),
                    pending: n(m, "pending"),
                    spool_bytes: n(m, "spool_bytes"),
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    AgentHealth {
        cpu_seconds: None,
        rss_bytes: None,
        samples: n(data, "samples"),
        late_samples: n(data, "late_samples"),
        missed_slots: n(data, "missed_slots"),
        dropped_samples: n(data, "dropped_samples"),
        plugins_running: n(data, "plugins_running"),
        plugins_total: n(data, "plugins_total"),
        sinks,
        ..AgentHealth::default()
    }
}

/// Write + rename in the same directory: a reader (node_exporter) sees the old file or the
/// new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // node_exporter reads only *.prom, so the temporary name must not end in .prom.
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("textfile {}: {e}", path.display())
    })
}

impl Sink for PrometheusSink {
    fn name(&self) -> String {
        PrometheusSink::name_of(&self.config)
    }

    fn deliver(&mut self, batch: &[Stamped]) -> Result<(), SinkError> {
        if batch.is_empty() {
            return Ok(());
        }
        let changed = self.take_events(batch);
        self.stats.delivered += batch.len() as u64;
        if changed { self.render() } else { Ok(()) }
    }

    fn wants_readings(&self) -> bool {
        true
    }

    fn observe(&mut self, reading: &Reading) -> Result<(), SinkError> {
        self.last = Some(reading.clone());
        self.render()
    }

    /// Called on a clean exit (a reload hands the sink over without it): the textfile goes,
    /// so that node_exporter does not go on exporting its figures as if they were current.
    fn flush(&mut self, _deadline: Instant) -> Result<(), SinkError> {
        let Some(path) = &self.config.textfile else {
            return Ok(());
        };
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(SinkError {
                sink: self.name(),
                message: format!("textfile {}: cannot remove it at exit: {e}", path.display()),
            }),
        }
    }

    fn stats(&self) -> SinkStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests;
