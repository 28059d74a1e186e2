//! The time a decision is made against: [`Clock`], with the OS's monotonic clock
//! ([`SystemClock`]) for the agent and a clock that moves only when told ([`ManualClock`])
//! for tests. Whatever waits for a deadline waits on [`Clock::at`], so a test that steps a
//! [`ManualClock`] decides when each deadline passes, and no test has to sleep to see a
//! budget run out or a sample come due.

use crossbeam_channel::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where the time is read, and how a deadline is waited for.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
    /// A channel that receives once the clock reaches `deadline` (at once when it has).
    fn at(&self, deadline: Instant) -> Receiver<Instant>;
}

/// The monotonic clock of the OS.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn at(&self, deadline: Instant) -> Receiver<Instant> {
        crossbeam_channel::at(deadline)
    }
}

/// The system clock, shared: what the agent uses outside tests.
pub fn system_clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A clock that moves only when told to ([`ManualClock::advance`]). A deadline waited for
/// with [`Clock::at`] passes when an advance reaches it; [`ManualClock::until_waits`] lets a
/// test see that the code under test has come round to waiting for the clock before moving
/// it. Waits are counted rather than looked at: a wait given up (its receiver dropped) stays
/// among the deadlines, harmlessly, until an advance reaches it.
#[derive(Debug)]
pub struct ManualClock {
    state: Mutex<Manual>,
    waiting: Condvar,
}

#[derive(Debug)]
struct Manual {
    now: Instant,
    /// Deadlines not reached yet, each with the channel that hears of it.
    pending: Vec<(Instant, Sender<Instant>)>,
    /// Calls of [`Clock::at`] that had to wait, in all.
    waits: u64,
}

impl Default for ManualClock {
    fn default() -> ManualClock {
        ManualClock {
            state: Mutex::new(Manual {
                now: Instant::now(),
                pending: Vec::new(),
                waits: 0,
            }),
            waiting: Condvar::new(),
        }
    }
}

/// How long [`ManualClock::until_waits`] waits for the code under test before it fails the
/// test: a guard against a test that would otherwise hang, not a timing.
const GUARD: Duration = Duration::from_secs(60);

impl ManualClock {
    fn lock(&self) -> MutexGuard<'_, Manual> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves the clock on by `by`; every deadline it reaches is heard of.
    pub fn advance(&self, by: Duration) {
        let mut state = self.lock();
        state.now += by;
        let now = state.now;
        state.pending.retain(|(deadline, tx)| {
            if *deadline <= now {
                let _ = tx.try_send(now);
                false
            } else {
                true
            }
        });
    }

    /// How many waits for a deadline still in the future [`Clock::at`] has begun, in all.
    pub fn waits(&self) -> u64 {
        self.lock().waits
    }

    /// Blocks until [`Clock::at`] has begun `count` waits in all: the code under test has
    /// come round to waiting for the clock that often.
    pub fn until_waits(&self, count: u64) {
        self.until(|state| state.waits >= count, &format!("{count} waits"));
    }

    /// Blocks until `ready`; panics after a minute of real time, so that a test whose code
    /// never waits for the clock fails instead of hanging.
    fn until(&self, ready: impl Fn(&Manual) -> bool, what: &str) {
        let guard = Instant::now() + GUARD;
        let mut state = self.lock();
        while !ready(&state) {
            let left = guard.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "nobody waited for the clock ({what})");
            state = self
                .waiting
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.lock().now
    }
    fn at(&self, deadline: Instant) -> Receiver<Instant> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let mut state = self.lock();
        if deadline <= state.now {
            let _ = tx.try_send(state.now);
        } else {
            state.pending.push((deadline, tx));
            state.waits += 1;
            self.waiting.notify_all();
        }
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_passes_when_an_advance_reaches_it_and_not_before() {
        let clock = ManualClock::default();
        let t0 = clock.now();
        let due = clock.at(t0 + Duration::from_millis(500));
        assert_eq!(clock.waits(), 1);
        clock.advance(Duration::from_millis(499));
        assert!(due.try_recv().is_err());
        clock.advance(Duration::from_millis(1));
        assert_eq!(due.try_recv(), Ok(t0 + Duration::from_millis(500)));
        // A deadline already reached is heard of at once and is no wait.
        assert!(clock.at(t0).try_recv().is_ok());
        assert_eq!(clock.waits(), 1);
    }

    #[test]
    fn until_waits_returns_once_another_thread_waits() {
        let clock = Arc::new(ManualClock::default());
        let waiter = {
            let clock = Arc::clone(&clock);
            std::thread::spawn(move || clock.at(clock.now() + Duration::from_secs(5)).recv())
        };
        clock.until_waits(1);
        clock.advance(Duration::from_secs(5));
        assert!(waiter.join().unwrap().is_ok());
    }
}
