//! The `agent` heartbeat: how the agent itself is doing (its CPU and memory, the sampler's
//! punctuality, each sink's queue, spool and losses), as one event.

use super::pipeline::SinkReport;
use crate::base::selfstat::SelfStat;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use zpulse_proto::event::{Event, Severity, State, Value};

/// When the heartbeat is due: by the monotonic clock, so that a step of the wall clock (NTP,
/// an administrator) neither holds it back for as long as the step (backwards) nor brings it
/// early (forwards); the CPU share is over monotonic time too.
#[derive(Debug, Default)]
pub struct Cadence {
    last: Option<(Instant, SelfStat)>,
}

impl Cadence {
    /// Whether a heartbeat every `every` is due at `at`.
    pub fn due(&self, at: Instant, every: Duration) -> bool {
        self.last
            .is_none_or(|(last, _)| at.saturating_duration_since(last) >= every)
    }

    /// Records a heartbeat at `at` with the process figures `me`; the previous heartbeat's
    /// figures and the seconds since it, if there was one.
    pub fn beat(&mut self, at: Instant, me: SelfStat) -> Option<(SelfStat, f64)> {
        let before = self
            .last
            .map(|(last, s)| (s, at.saturating_duration_since(last).as_secs_f64()));
        self.last = Some((at, me));
        before
    }
}

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
            "zpulse {} on {}: {} samples ({} late, {} slots missed, {} dropped while the plugins were busy), {}/{} plugins running, {} sink(s), {} events lost{}",
            env!("CARGO_PKG_VERSION"),
            self.hostname,
            self.sampler.samples,
            self.sampler.late,
            self.sampler.missed,
            self.sampler.dropped,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The cadence follows the monotonic clock only. The old rule compared the samples' wall
    /// times: a wall clock stepped back an hour held the heartbeat back an hour; here the
    /// heartbeat comes every minute of the monotonic clock whatever the wall clock did, and
    /// the CPU share is over the monotonic seconds between heartbeats.
    #[test]
    fn the_heartbeat_keeps_its_minute_through_a_wall_clock_step() {
        let every = Duration::from_secs(60);
        let t0 = Instant::now();
        let mut cadence = Cadence::default();
        let me = |cpu: f64| SelfStat {
            cpu_seconds: Some(cpu),
            rss_bytes: Some(1),
        };
        assert!(cadence.due(t0, every), "the first heartbeat is due at once");
        assert_eq!(cadence.beat(t0, me(1.0)), None);
        assert!(!cadence.due(t0 + Duration::from_secs(59), every));
        // The wall clock stepped back an hour meanwhile: nothing here reads it.
        let t1 = t0 + Duration::from_secs(60);
        assert!(cadence.due(t1, every));
        assert_eq!(cadence.beat(t1, me(1.6)), Some((me(1.0), 60.0)));
        let hb = Heartbeat {
            hostname: "h".into(),
            interval_s: 1.0,
            sampler: SamplerCounters {
                samples: 182,
                late: 3,
                missed: 31,
                dropped: 5,
            },
            plugins_running: 0,
            plugins_total: 0,
            sinks: Vec::new(),
            now: me(1.6),
            before: Some((me(1.0), 60.0)),
        }
        .event();
        // 0.6 s of CPU over 60 s: 1%.
        let cpu_pct = hb.data["cpu_pct"].as_f64().unwrap();
        assert!((cpu_pct - 1.0).abs() < 1e-9, "{cpu_pct}");
        assert!(
            hb.summary.contains(
                "182 samples (3 late, 31 slots missed, 5 dropped while the plugins were busy)"
            ),
            "{}",
            hb.summary
        );
    }
}
