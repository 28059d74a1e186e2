//! The sampler's clock: sample k is due at `start + k × interval`, whatever the previous one
//! cost. A sample that could not start on time is counted as late; slots that passed entirely
//! are skipped, never made up in a burst.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Schedule {
    start: Instant,
    interval: Duration,
    next: u64,
}

/// What the sampler should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// When this sample was due.
    pub due: Instant,
    /// Slots skipped because the sampler could not keep up (0 when on time).
    pub missed: u64,
}

impl Schedule {
    pub fn new(start: Instant, interval: Duration) -> Schedule {
        Schedule {
            start,
            interval: interval.max(Duration::from_millis(10)),
            next: 0,
        }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// When the next sample is due.
    pub fn next_due(&self) -> Instant {
        self.start
            + self
                .interval
                .saturating_mul(u32::try_from(self.next).unwrap_or(u32::MAX))
    }

    /// Consumes the next slot at time `now` (at or after [`Schedule::next_due`]). If `now` is
    /// already past later slots, they are skipped and counted.
    pub fn take(&mut self, now: Instant) -> Tick {
        let due = self.next_due();
        let elapsed = now.saturating_duration_since(self.start);
        // The slot that `now` falls in; everything between `next` and it was missed.
        let current = (elapsed.as_nanos() / self.interval.as_nanos().max(1)) as u64;
        let missed = current.saturating_sub(self.next);
        self.next = current.max(self.next) + 1;
        Tick {
            due: if missed > 0 {
                self.start
                    + self
                        .interval
                        .saturating_mul(u32::try_from(current).unwrap_or(u32::MAX))
            } else {
                due
            },
            missed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_time_samples_follow_the_grid_without_drift() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, Duration::from_secs(10));
        assert_eq!(s.next_due(), t0);
        // Each sample is taken a little late (work takes time); the grid does not move.
        for k in 0..5u32 {
            let tick = s.take(t0 + Duration::from_secs(10) * k + Duration::from_millis(300));
            assert_eq!(tick.missed, 0);
            assert_eq!(tick.due, t0 + Duration::from_secs(10) * k);
        }
        assert_eq!(s.next_due(), t0 + Duration::from_secs(50));
    }

    #[test]
    fn a_stall_skips_slots_instead_of_bunching() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, Duration::from_secs(10));
        s.take(t0);
        // The host froze for 35 s: slots 1, 2 and 3 are gone; the sample now is slot 3's.
        let tick = s.take(t0 + Duration::from_secs(35));
        assert_eq!(tick.missed, 2);
        assert_eq!(tick.due, t0 + Duration::from_secs(30));
        assert_eq!(s.next_due(), t0 + Duration::from_secs(40));
    }
}
