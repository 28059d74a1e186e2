//! The agent's log: one line per message on stderr, which systemd's journal and daemon(8)
//! collect. Under systemd (`JOURNAL_STREAM` set) each line starts with the `<N>` priority
//! prefix journald understands, so levels survive; elsewhere the level is spelled out.
//!
//! A message that repeats (a plugin's warning every sample, "No space left on device" at
//! every spool write) is written once per [`REPEAT_WINDOW`]: its repeats in between are
//! counted, and the next time it is written it says how many were left out. Messages that
//! differ only in their numbers are the same message. The agent's own lifecycle lines
//! (source `agent`: starting, reloaded, reload refused, stopping) answer an operator's action
//! and are always written.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warning",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

/// A log line from the host or a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub level: Level,
    /// The plugin's name (or file), or `plugins` for the host itself.
    pub source: String,
    pub message: String,
}

/// How long a message, once written, is not written again.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(600);
/// Distinct messages remembered; past this the oldest are forgotten (and may be written
/// again early), so a flood of distinct messages cannot grow memory.
const REMEMBERED: usize = 1024;

/// Decides which log lines are written. Pure: the caller gives the time.
#[derive(Default)]
pub struct Repeats {
    /// Key → (when it was last written, repeats left out since).
    seen: HashMap<String, (Instant, u64)>,
}

/// What to do with a line.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Write it; `left_out` repeats of it were not written since it was last written.
    Write {
        left_out: u64,
    },
    Suppress,
}

impl Repeats {
    pub fn judge(&mut self, level: Level, source: &str, message: &str, now: Instant) -> Verdict {
        let key = format!(
            "{}\u{0}{source}\u{0}{}",
            level.as_str(),
            without_numbers(message)
        );
        if let Some((at, left_out)) = self.seen.get_mut(&key) {
            if now.saturating_duration_since(*at) < REPEAT_WINDOW {
                *left_out += 1;
                return Verdict::Suppress;
            }
            let verdict = Verdict::Write {
                left_out: *left_out,
            };
            *at = now;
            *left_out = 0;
            return verdict;
        }
        if self.seen.len() >= REMEMBERED {
            self.seen
                .retain(|_, (at, _)| now.saturating_duration_since(*at) < REPEAT_WINDOW);
            if self.seen.len() >= REMEMBERED
                && let Some(oldest) = self
                    .seen
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| k.clone())
            {
                self.seen.remove(&oldest);
            }
        }
        self.seen.insert(key, (now, 0));
        Verdict::Write { left_out: 0 }
    }
}

/// The message with every run of digits replaced by `#`: "1204 events spooled" and
/// "1205 events spooled" are one message.
fn without_numbers(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_number = false;
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

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
    static REPEATS: OnceLock<Mutex<Repeats>> = OnceLock::new();
    let verdict = if source == "agent" {
        Verdict::Write { left_out: 0 }
    } else {
        REPEATS
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .judge(level, source, message, Instant::now())
    };
    let line = match verdict {
        Verdict::Suppress => return,
        Verdict::Write { left_out: 0 } => format(level, source, message, journald()),
        Verdict::Write { left_out } => format(
            level,
            source,
            &format!(
                "{message} (repeated {left_out} more times in the last {} minutes, not logged)",
                REPEAT_WINDOW.as_secs() / 60
            ),
            journald(),
        ),
    };
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
    fn a_repeated_message_is_written_once_per_window_with_the_count_left_out() {
        let mut r = Repeats::default();
        let t0 = Instant::now();
        let msg = |n: u32| {
            format!("spool /var/lib/zpulse: write: No space left on device ({n} events dropped)")
        };
        assert_eq!(
            r.judge(Level::Warn, "forward", &msg(1), t0),
            Verdict::Write { left_out: 0 }
        );
        for i in 1..=59 {
            let at = t0 + Duration::from_secs(10 * i);
            assert_eq!(
                r.judge(Level::Warn, "forward", &msg(i as u32 + 1), at),
                Verdict::Suppress
            );
        }
        // Another message, source or level is not held back by it.
        assert_eq!(
            r.judge(
                Level::Warn,
                "hdd-saturation",
                &msg(1),
                t0 + Duration::from_secs(5)
            ),
            Verdict::Write { left_out: 0 }
        );
        assert_eq!(
            r.judge(
                Level::Error,
                "forward",
                &msg(1),
                t0 + Duration::from_secs(5)
            ),
            Verdict::Write { left_out: 0 }
        );
        // Ten minutes after it was written, it is written again, saying what was left out.
        assert_eq!(
            r.judge(Level::Warn, "forward", &msg(99), t0 + REPEAT_WINDOW),
            Verdict::Write { left_out: 59 }
        );
        assert_eq!(
            r.judge(
                Level::Warn,
                "forward",
                &msg(100),
                t0 + REPEAT_WINDOW + Duration::from_secs(1)
            ),
            Verdict::Suppress
        );
    }

    #[test]
    fn distinct_messages_do_not_grow_memory_without_bound() {
        let mut r = Repeats::default();
        let t0 = Instant::now();
        for i in 0..5000u32 {
            let msg: String = format!("{i}")
                .chars()
                .map(|c| (b'a' + c as u8 - b'0') as char)
                .collect();
            r.judge(Level::Info, "x", &msg, t0);
        }
        assert!(r.seen.len() <= REMEMBERED);
    }

    #[test]
    fn journald_gets_priority_prefixes() {
        assert_eq!(format(Level::Error, "sink", "gone", true), "<3>sink: gone");
        assert_eq!(
            format(Level::Warn, "sink", "slow", false),
            "zpulse: warning: sink: slow"
        );
    }
}
