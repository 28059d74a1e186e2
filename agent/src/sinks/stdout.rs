//! JSON lines on standard output: one event per line, `{"time": …, "tag": …, "record": …}`.

use super::{Sink, SinkError, SinkStats, Stamped};
use std::io::Write;
use std::time::Instant;

/// `[[sink]] type = "stdout"`: it takes no settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdoutConfig {}

impl super::spec::SinkKind for StdoutConfig {
    const TYPE: &'static str = "stdout";
    fn plan(&self) -> Result<Box<dyn super::spec::Planned>, String> {
        Ok(stdout_plan())
    }
}

/// The stdout sink, checked: there is nothing to check.
pub fn stdout_plan() -> Box<dyn super::spec::Planned> {
    Box::new(PlannedStdout)
}

struct PlannedStdout;

impl super::spec::Planned for PlannedStdout {
    fn name(&self) -> String {
        "stdout".into()
    }
    fn start(self: Box<Self>) -> Result<Box<dyn super::Sink>, String> {
        Ok(Box::new(StdoutSink::new()))
    }
}

pub struct StdoutSink<W: Write + Send> {
    out: W,
    stats: SinkStats,
}

impl StdoutSink<std::io::Stdout> {
    pub fn new() -> Self {
        StdoutSink::to(std::io::stdout())
    }
}

impl Default for StdoutSink<std::io::Stdout> {
    fn default() -> Self {
        StdoutSink::new()
    }
}

impl<W: Write + Send> StdoutSink<W> {
    /// Writes to any writer (tests).
    pub fn to(out: W) -> Self {
        StdoutSink {
            out,
            stats: SinkStats::default(),
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// One event as a JSON line.
pub fn json_line(s: &Stamped) -> String {
    let value = serde_json::json!({
        "time": s.time.as_f64(),
        "tag": s.event.tag(),
        "record": s.event,
    });
    value.to_string()
}

impl<W: Write + Send> Sink for StdoutSink<W> {
    fn name(&self) -> String {
        "stdout".into()
    }

    fn deliver(&mut self, batch: &[Stamped]) -> Result<(), SinkError> {
        let mut text = String::new();
        for s in batch {
            text.push_str(&json_line(s));
            text.push('\n');
        }
        match self
            .out
            .write_all(text.as_bytes())
            .and_then(|_| self.out.flush())
        {
            Ok(()) => {
                self.stats.delivered += batch.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.stats.dropped += batch.len() as u64;
                Err(SinkError {
                    sink: self.name(),
                    message: e.to_string(),
                })
            }
        }
    }

    fn flush(&mut self, _deadline: Instant) -> Result<(), SinkError> {
        self.out.flush().map_err(|e| SinkError {
            sink: "stdout".into(),
            message: e.to_string(),
        })
    }

    fn stats(&self) -> SinkStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zpulse_proto::event::{Event, EventTime, Severity, State};

    #[test]
    fn one_json_object_per_event() {
        let mut sink = StdoutSink::to(Vec::new());
        let e = Event::finding(
            "hdd-saturation",
            State::Raised,
            Severity::Warning,
            "tank/normal/mirror-0",
            "busy",
        )
        .with("util_mean", 60.0);
        let batch = vec![
            Stamped {
                time: EventTime::from_unix(1_700_000_000.25),
                event: e.clone(),
            },
            Stamped {
                time: EventTime::from_unix(1_700_000_010.0),
                event: e,
            },
        ];
        sink.deliver(&batch).unwrap();
        assert_eq!(sink.stats().delivered, 2);
        let text = String::from_utf8(sink.into_inner()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["tag"], "zpulse.finding");
        assert_eq!(lines[0]["time"], 1_700_000_000.25);
        assert_eq!(lines[0]["record"]["subject"], "tank/normal/mirror-0");
        assert_eq!(lines[0]["record"]["data"]["util_mean"], 60.0);
    }
}
