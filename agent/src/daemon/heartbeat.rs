//! The `agent` heartbeat: how the agent itself is doing (its CPU and memory, the sampler's
//! punctuality, each sink's queue, spool and losses), as one event.

use super::pipeline::SinkReport;
use super::selfstat::SelfStat;
use std::collections::BTreeMap;
use zpulse_proto::event::{Event, Severity, State, Value};

/// Sampler counters since the agent started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamplerCounters {
    pub samples: u64,
    /// Samples that started more than half an interval after they were due.
    pub late: u64,
    /// Slots skipped entirely because the sampler could not keep up.
    pub missed: u64,
    /// Samples dropped because the plugin stage was still busy with earlier ones.
    pub dropped: u64,
}

pub struct Heartbeat {
    pub hostname: String,
    pub interval_s: f64,
    pub sampler: SamplerCounters,
    pub plugins_running: usize,
    pub plugins_total: usize,
    pub sinks: Vec<SinkReport>,
    /// This process now and at the previous heartbeat, with the wall time between.
    pub now: SelfStat,
    pub before: Option<(SelfStat, f64)>,
}

impl Heartbeat {
    pub fn event(&self) -> Event {
        let cpu_pct = match (self.now.cpu_seconds, self.before) {
            (Some(now), Some((before, wall))) if wall > 0.0 => before
                .cpu_seconds
                .map(|b| (now - b).max(0.0) / wall * 100.0),
            _ => None,
        };
        let lost: u64 = self
            .sinks
            .iter()
            .map(|s| s.stats.dropped + s.overflow)
            .sum();
        let mut sinks = Vec::new();
        for s in &self.sinks {
            let mut m = BTreeMap::new();
            m.insert("name".to_string(), Value::from(s.name.as_str()));
            m.insert(
                "queued_batches".into(),
                Value::from(s.queued_batches as u64),
            );
            m.insert("delivered".into(), Value::from(s.stats.delivered));
            m.insert("dropped".into(), Value::from(s.stats.dropped + s.overflow));
            m.insert("pending".into(), Value::from(s.stats.pending));
            m.insert("spool_bytes".into(), Value::from(s.stats.spool_bytes));
            sinks.push(Value::Map(m));
        }
        let severity = if lost > 0 {
            Severity::Warning
        } else {
            Severity::Info
        };
        let summary = format!(
            "zpulse {} on {}: {} samples ({} late, {} missed), {}/{} plugins running, {} sink(s), {} events lost{}",
            env!("CARGO_PKG_VERSION"),
            self.hostname,
            self.sampler.samples,
            self.sampler.late,
            self.sampler.missed,
            self.plugins_running,
            self.plugins_total,
            self.sinks.len(),
            lost,
            cpu_pct.map_or_else(String::new, |c| format!(", {c:.2}% CPU"))
        );
        let mut e = Event::finding(
            "agent.heartbeat",
            State::Updated,
            severity,
            self.hostname.clone(),
            summary,
        )
        .with("version", env!("CARGO_PKG_VERSION"))
        .with("interval_s", self.interval_s)
        .with("samples", self.sampler.samples)
        .with("late_samples", self.sampler.late)
        .with("missed_slots", self.sampler.missed)
        .with("dropped_samples", self.sampler.dropped)
        .with("plugins_running", self.plugins_running as u64)
        .with("plugins_total", self.plugins_total as u64)
        .with("events_lost", lost)
        .with("sinks", Value::List(sinks));
        e.kind = zpulse_proto::event::Kind::Agent;
        if let Some(c) = cpu_pct {
            e = e.with("cpu_pct", c);
        }
        if let Some(rss) = self.now.rss_bytes {
            e = e.with("rss_bytes", rss);
        }
        e
    }
}
