//! The agent's log: one line per message on stderr, which systemd's journal and daemon(8)
//! collect. Under systemd (`JOURNAL_STREAM` set) each line starts with the `<N>` priority
//! prefix journald understands, so levels survive; elsewhere the level is spelled out.

use crate::plugins::{Level, LogLine};
use std::io::Write;
use std::sync::OnceLock;

fn journald() -> bool {
    static J: OnceLock<bool> = OnceLock::new();
    *J.get_or_init(|| std::env::var_os("JOURNAL_STREAM").is_some())
}

/// Formats one log line.
pub fn format(level: Level, source: &str, message: &str, journald: bool) -> String {
    let priority = match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug => 7,
    };
    if journald {
        format!("<{priority}>{source}: {message}")
    } else {
        format!("zpulse: {}: {source}: {message}", level.as_str())
    }
}

pub fn log(level: Level, source: &str, message: &str) {
    let line = format(level, source, message, journald());
    // A closed stderr must not take the agent down.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

pub fn line(l: &LogLine) {
    log(l.level, &l.source, &l.message);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journald_gets_priority_prefixes() {
        assert_eq!(format(Level::Error, "sink", "gone", true), "<3>sink: gone");
        assert_eq!(
            format(Level::Warn, "sink", "slow", false),
            "zpulse: warning: sink: slow"
        );
    }
}
