//! Clock skew as the store judges it (`zpulse_collector::clock`), with the receive time
//! injected: an agent that spooled its batches through a three-hour outage and resends
//! them is not flagged (its clock is right; the batches are old), while an agent whose
//! clock is an hour behind is, from its second live heartbeat on.

mod common;

use common::*;
use zpulse_collector::query::skewed;
use zpulse_collector::store::{Batch, Row, Store};

const MAX_SKEW: i64 = 300;

/// One batch of heartbeats of `host` made at `made` (s, the agent's clock).
fn heartbeats(host: &str, made: &[i64]) -> Batch {
    Batch {
        rows: made
            .iter()
            .map(|t| Row::from_event("zpulse.agent", t * 1_000_000_000, &heartbeat(host, "1"), ""))
            .collect(),
        peer: "192.0.2.7".into(),
        ..Batch::default()
    }
}

fn skew_of(s: &Store, host: &str) -> (i64, bool) {
    let h = s.host(host).unwrap().unwrap();
    (h.clock_skew, skewed(&h, MAX_SKEW))
}

#[test]
fn spooled_heartbeats_resent_late_are_not_clock_skew() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("c.db")).unwrap();
    let t = 1_900_000_000;
    // Live, a heartbeat a minute, each received a second after it was made.
    for i in 0..3 {
        s.store(&[heartbeats("nas1", &[t + i * 60])], t + i * 60 + 1)
            .unwrap();
    }
    assert_eq!(skew_of(&s, "nas1"), (-1, false));
    // The collector is away for three hours; the agent spools a heartbeat a minute and sends
    // them when it is back, ten to a batch, back to back.
    let back = t + 120 + 3 * 3600;
    let spooled: Vec<i64> = (1..=180).map(|i| t + 120 + i * 60).collect();
    for (n, chunk) in spooled.chunks(10).enumerate() {
        s.store(&[heartbeats("nas1", chunk)], back + n as i64 / 6)
            .unwrap();
        let (skew, flagged) = skew_of(&s, "nas1");
        assert!(!flagged, "batch {n}: flagged with skew {skew}");
    }
    // Live again: the next heartbeat shows the clock, still right.
    let last = *spooled.last().unwrap();
    s.store(&[heartbeats("nas1", &[last + 60])], back + 3 + 60)
        .unwrap();
    let (skew, flagged) = skew_of(&s, "nas1");
    assert!(!flagged && skew.abs() < 10, "{skew}");
}

#[test]
fn a_clock_an_hour_behind_is_flagged_from_its_second_live_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("c.db")).unwrap();
    let t = 1_900_000_000;
    let clock = t - 3600;
    s.store(&[heartbeats("slow", &[clock])], t + 2).unwrap();
    // The first heartbeat of a host is compared with nothing.
    assert_eq!(skew_of(&s, "slow"), (0, false));
    s.store(&[heartbeats("slow", &[clock + 60])], t + 62)
        .unwrap();
    assert_eq!(skew_of(&s, "slow"), (-3602, true));
    // And it stays flagged while the clock stays wrong.
    s.store(&[heartbeats("slow", &[clock + 120])], t + 122)
        .unwrap();
    assert_eq!(skew_of(&s, "slow"), (-3602, true));
    // The page and `hosts` read the same figure.
    let all = s.hosts().unwrap();
    assert_eq!(
        all.iter().find(|h| h.host == "slow").unwrap().clock_skew,
        -3602
    );
}
