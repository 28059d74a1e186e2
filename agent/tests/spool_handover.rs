//! "Under spool pressure a reload really dropped 901 ('File exists')": a reload
//! used to open the new Forward sink's spool while the old sink was still appending to it, and
//! the two numbered new segments alike (`create_new` then failed: `File exists`, the batch
//! lost). The daemon now plans the new sink (which touches nothing), lets the old one end, and
//! only then starts the new one on the same spool (`daemon::Stage::reload`). This replays that
//! order thirty times with the collector down and the spool at its bound, so every
//! generation rolls and drops segments, and checks that nothing fails and every event is
//! accounted for: still spooled, or counted as dropped by the sink that dropped it.

use std::net::TcpListener;
use std::time::{Instant, SystemTime};
use zpulse_agent::sinks::forward::{ForwardConfig, ForwardSink};
use zpulse_agent::sinks::{Sink, Stamped};
use zpulse_proto::event::{Event, EventTime};

/// A port nothing listens on: the collector is down for the whole test.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `n` events of about 2 KiB each.
fn events(n: usize, from: usize) -> Vec<Stamped> {
    (from..from + n)
        .map(|i| Stamped {
            time: EventTime::from_system_time(SystemTime::now()),
            event: Event::metrics("load", "load", format!("event {i} {}", "x".repeat(2000))),
        })
        .collect()
}

#[test]
fn reloads_under_spool_pressure_lose_nothing_unaccounted_and_never_collide() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ForwardConfig::new(format!("127.0.0.1:{}", closed_port()));
    config.spool_dir = Some(dir.path().join("spool"));
    // The smallest spool: 1 MiB in segments of 128 KiB, about 500 of these events.
    config.spool_max_bytes = 1 << 20;
    config.batch_max_events = 1;
    config.batch_max_bytes = 64 << 10;

    let mut sink = ForwardSink::new(config.clone()).unwrap();
    let (mut given, mut dropped) = (0usize, 0u64);
    for generation in 0..30 {
        // The reload plans the next sink while the old one still takes events.
        let next = ForwardSink::prepare(config.clone()).unwrap();
        for _ in 0..3 {
            let batch = events(100, given);
            given += batch.len();
            sink.deliver(&batch)
                .unwrap_or_else(|e| panic!("generation {generation}: {e}"));
        }
        // The old one ends (its flush gives up at once: the collector is down), then the new
        // one starts on the same spool and continues it.
        let _ = sink.flush(Instant::now());
        dropped += sink.stats().dropped;
        drop(sink);
        sink = next.start().unwrap();
    }
    let batch = events(100, given);
    given += batch.len();
    sink.deliver(&batch).unwrap();
    let last = sink.stats();
    dropped += last.dropped;
    assert_eq!(last.delivered, 0);
    assert!(dropped > 0, "the spool was never under pressure");
    assert_eq!(
        last.pending + dropped,
        given as u64,
        "every event is spooled or counted as dropped ({} pending, {dropped} dropped)",
        last.pending
    );
    // The spool holds what fits its bound, no more.
    assert!(last.spool_bytes <= 1 << 20, "{last:?}");
}
