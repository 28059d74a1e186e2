//! When a sink that lost its receiver may try again: [`Backoff`], the one reconnect policy of
//! the sinks that reconnect (Forward, syslog), read against a [`crate::base::clock::Clock`].
//!
//! The wait starts at a minimum and doubles after each failure up to a maximum; a success
//! starts over. With jitter ([`Backoff::jittered`]) each wait is drawn from the upper half of
//! the current window, so agents cut off by one outage do not all come back in the same
//! instant (the "equal jitter" of AWS's *Exponential Backoff and Jitter*, 2015). The type
//! keeps the time of the next attempt itself, so callers ask it ([`Backoff::remaining`])
//! instead of keeping a second copy of that fact.
//!
//! Time comes in as an argument (`Clock::now` at the call site), never from a clock read
//! here, so tests step a `ManualClock` instead of sleeping.

use std::time::{Duration, Instant};

/// Exponential backoff between connection attempts. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    /// The next wait (its upper bound, with jitter).
    window: Duration,
    jitter: bool,
    retry_at: Option<Instant>,
}

impl Backoff {
    /// Waits of exactly `min`, `2·min`, … up to `max`.
    pub fn new(min: Duration, max: Duration) -> Backoff {
        let max = max.max(min);
        Backoff {
            min,
            max,
            window: min,
            jitter: false,
            retry_at: None,
        }
    }

    /// Each wait drawn from the upper half of the window instead.
    pub fn jittered(self) -> Backoff {
        Backoff {
            jitter: true,
            ..self
        }
    }

    /// An attempt failed at `now`: no new attempt before the returned wait has passed, and
    /// the next failure waits longer.
    pub fn failed(&mut self, now: Instant) -> Duration {
        let window = self.window;
        self.window = (window * 2).min(self.max);
        let wait = if self.jitter {
            let half = window / 2;
            half + Duration::from_nanos(random_u64() % (half.as_nanos() as u64 + 1))
        } else {
            window
        };
        self.retry_at = Some(now + wait);
        wait
    }

    /// How long until an attempt may be made; `None`: now.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.retry_at
            .filter(|&at| at > now)
            .map(|at| at.duration_since(now))
    }

    /// The next attempt may be made at once (a flush asks for it; an idle connection the
    /// peer closed is no outage); the next failure still waits as long as it would have.
    pub fn skip_wait(&mut self) {
        self.retry_at = None;
    }

    /// An attempt succeeded: the next failure waits the minimum again.
    pub fn reset(&mut self) {
        self.window = self.min;
        self.retry_at = None;
    }
}

/// Jitter only needs to differ between agents; should the OS generator fail, the full
/// window (no jitter) is still a correct wait.
fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    match getrandom::fill(&mut b) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::{Clock, ManualClock};

    const MIN: Duration = Duration::from_millis(500);
    const MAX: Duration = Duration::from_secs(30);

    #[test]
    fn doubles_to_the_maximum_and_a_success_starts_over() {
        let clock = ManualClock::default();
        let mut b = Backoff::new(MIN, MAX);
        let waits: Vec<u128> = (0..9).map(|_| b.failed(clock.now()).as_millis()).collect();
        assert_eq!(
            waits,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        b.reset();
        assert_eq!(b.failed(clock.now()), MIN);
    }

    #[test]
    fn the_next_attempt_waits_until_the_clock_has_moved_past_it() {
        let clock = ManualClock::default();
        let mut b = Backoff::new(MIN, MAX);
        assert_eq!(b.remaining(clock.now()), None, "nothing failed yet");
        b.failed(clock.now());
        assert_eq!(b.remaining(clock.now()), Some(MIN));
        clock.advance(Duration::from_millis(499));
        assert_eq!(b.remaining(clock.now()), Some(Duration::from_millis(1)));
        clock.advance(Duration::from_millis(1));
        assert_eq!(b.remaining(clock.now()), None);
        // Skipping a wait keeps the window: the next failure waits twice as long.
        assert_eq!(b.failed(clock.now()), MIN * 2);
        b.skip_wait();
        assert_eq!(b.remaining(clock.now()), None);
        assert_eq!(b.failed(clock.now()), MIN * 4);
    }

    #[test]
    fn jitter_stays_in_the_upper_half_of_each_window() {
        let clock = ManualClock::default();
        let mut b = Backoff::new(MIN, MAX).jittered();
        let mut window = MIN;
        for _ in 0..12 {
            let wait = b.failed(clock.now());
            assert!(
                wait >= window / 2 && wait <= window,
                "{wait:?} in {window:?}"
            );
            window = (window * 2).min(MAX);
        }
        // Many agents' first waits spread out rather than coincide.
        let firsts: std::collections::BTreeSet<Duration> = (0..20)
            .map(|_| Backoff::new(MIN, MAX).jittered().failed(clock.now()))
            .collect();
        assert!(firsts.len() > 10, "{firsts:?}");
    }
}
