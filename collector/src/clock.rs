//! Clock skew: when a host's heartbeat says something about its clock, and what.
//!
//! An event's time is the sender's clock when the event was made, not when it was sent: a
//! batch an agent spooled during an outage arrives hours late with honest times. So the
//! skew is not judged from event times against the receive time alone. The rule
//! ([`evidence`]): a heartbeat is evidence of the sender's clock only when, since the host's
//! previous heartbeat, its event time advanced by about as much as the collector's receive
//! time did (within half a heartbeat interval). A live agent's heartbeats pass (both clocks
//! advance one interval each, whatever the offset between them); heartbeats drained from a
//! spool do not (they arrive back to back, their times an interval apart, or the first of
//! them arrives long after the one before it, with a time only an interval later). The
//! first heartbeat of a host is no evidence either: there is nothing to compare it with.
//! The skew is then the heartbeat's time minus its receive time, in seconds (negative: the
//! sender's clock is behind; it includes the agent's batching delay of a few seconds).

/// A heartbeat as the collector saw it: the sender's time (ns since the epoch) and the
/// receive time (s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub ts_ns: i64,
    pub received: i64,
}

/// The clock skew (s) a heartbeat shows, or `None` when it shows nothing about the clock
/// (see the module doc). `interval_s` is the heartbeat interval the agent declared.
pub fn evidence(previous: Option<Seen>, now: Seen, interval_s: f64) -> Option<i64> {
    let previous = previous?;
    let event_gap = (now.ts_ns - previous.ts_ns) as f64 / 1e9;
    let receive_gap = (now.received - previous.received) as f64;
    // Receive times are whole seconds: a second of rounding either way is not a delay.
    let tolerance = (interval_s / 2.0).max(2.0);
    if event_gap <= 0.0 || (event_gap - receive_gap).abs() > tolerance {
        return None;
    }
    Some(now.ts_ns.div_euclid(1_000_000_000) - now.received)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60;

    fn at(ts_s: i64, received: i64) -> Seen {
        Seen {
            ts_ns: ts_s * 1_000_000_000,
            received,
        }
    }

    #[test]
    fn live_heartbeats_show_the_clock_whatever_its_offset() {
        let t = 1_900_000_000;
        // A correct clock: heartbeats a minute apart, each received 2 s after it was made.
        assert_eq!(
            evidence(Some(at(t, t + 2)), at(t + MIN, t + MIN + 2), 60.0),
            Some(-2)
        );
        // A clock an hour behind, and one ten minutes ahead: the gaps still match.
        let behind = t - 3600;
        assert_eq!(
            evidence(Some(at(behind, t)), at(behind + MIN, t + MIN), 60.0),
            Some(-3600)
        );
        assert_eq!(
            evidence(Some(at(t + 600, t)), at(t + 600 + MIN, t + MIN + 1), 60.0),
            Some(599)
        );
    }

    #[test]
    fn spooled_heartbeats_resent_late_show_nothing() {
        let t = 1_900_000_000;
        let back = t + 3 * 3600; // the collector comes back three hours later
        // The first spooled heartbeat: made a minute after the last one received, received
        // three hours later.
        assert_eq!(evidence(Some(at(t, t)), at(t + MIN, back), 60.0), None);
        // The next ones arrive back to back, their times a minute apart.
        assert_eq!(
            evidence(Some(at(t + MIN, back)), at(t + 2 * MIN, back), 60.0),
            None
        );
        // Several in one batch: the newest against the previous batch's, same result.
        assert_eq!(
            evidence(
                Some(at(t + 2 * MIN, back)),
                at(t + 30 * MIN, back + 1),
                60.0
            ),
            None
        );
        // The drain is over: the next live heartbeat shows the (correct) clock again.
        let last = t + 180 * MIN; // the last spooled one, made just before `back`
        assert_eq!(
            evidence(
                Some(at(last, back + 1)),
                at(last + MIN, back + 1 + MIN),
                60.0
            ),
            Some(-1)
        );
    }

    #[test]
    fn a_first_heartbeat_and_one_from_the_past_show_nothing() {
        let t = 1_900_000_000;
        assert_eq!(evidence(None, at(t - 86400, t), 60.0), None);
        // Older than the one before (sent out of order): nothing.
        assert_eq!(evidence(Some(at(t, t)), at(t - MIN, t + MIN), 60.0), None);
    }
}
