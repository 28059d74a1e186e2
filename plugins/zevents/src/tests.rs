//! The check over events made as the kernel posts them (classes and payload names of
//! OpenZFS 2.1: `zfs_fm.c`, `fm.c`, `spa.c`, `dsl_scan.c`), fed through the SDK's test host
//! as the agent feeds them.

use super::*;
use zpulse_proto::event::{EventTime, State};
use zpulse_proto::sdk::testing::{Feed, TestHost};
use zpulse_proto::zevent::{ZEventHistory, ZEventVdev, ZEventZio};

fn at(secs: u32) -> EventTime {
    EventTime {
        seconds: 1_800_000_000 + secs,
        nanos: 0,
    }
}

fn ev(eid: u64, secs: u32, class: &str) -> ZEvent {
    ZEvent {
        eid,
        class: class.into(),
        time: at(secs),
        pool: Some("tank".into()),
        ..ZEvent::default()
    }
}

fn on(mut z: ZEvent, path: &str) -> ZEvent {
    z.vdev = Some(ZEventVdev {
        path: Some(path.into()),
        ..z.vdev.unwrap_or_default()
    });
    z
}

fn state(eid: u64, secs: u32, path: &str, to: u64, from: u64) -> ZEvent {
    let mut z = on(ev(eid, secs, "resource.fs.zfs.statechange"), path);
    let v = z.vdev.as_mut().unwrap();
    v.state = Some(to);
    v.previous_state = Some(from);
    z
}

fn checksum(eid: u64, secs: u32, path: &str) -> ZEvent {
    let mut z = on(ev(eid, secs, "ereport.fs.zfs.checksum"), path);
    z.zio = Some(ZEventZio {
        objset: Some(54),
        object: Some(2),
        offset: Some(0x40_0000),
        ..ZEventZio::default()
    });
    z
}

fn history(eid: u64, secs: u32, name: &str, text: &str) -> ZEvent {
    let mut z = ev(eid, secs, "sysevent.fs.zfs.history_event");
    z.history = Some(ZEventHistory {
        internal_name: Some(name.into()),
        internal_str: Some(text.into()),
        ..ZEventHistory::default()
    });
    z
}

fn run(feeds: &[Feed]) -> Vec<Event> {
    TestHost::new().feed::<Zevents>(&[], feeds).unwrap()
}

fn states(events: &[Event]) -> Vec<(String, State, Severity, String)> {
    events
        .iter()
        .map(|e| {
            (
                e.check.clone(),
                e.state.unwrap(),
                e.severity,
                e.subject.clone(),
            )
        })
        .collect()
}

#[test]
fn a_flap_between_two_samples_is_raised_and_cleared_at_once() {
    let off = state(1, 0, "/dev/sdd1", 2, 7);
    let back = state(2, 3, "/dev/sdd1", 7, 2);
    let events = run(&[Feed::Event(&off), Feed::Event(&back)]);
    assert_eq!(
        states(&events),
        vec![
            (
                "zevents.vdev-state".into(),
                State::Raised,
                Severity::Warning,
                "tank/sdd1".into()
            ),
            (
                "zevents.vdev-state".into(),
                State::Cleared,
                Severity::Warning,
                "tank/sdd1".into()
            ),
        ]
    );
    assert_eq!(events[0].summary, "tank/sdd1 is OFFLINE (was ONLINE)");
}

#[test]
fn a_faulted_device_is_critical() {
    let f = state(1, 0, "/dev/sdb1", 5, 7);
    let events = run(&[Feed::Event(&f)]);
    assert_eq!(events[0].severity, Severity::Critical);
    assert!(
        events[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("zpool replace tank sdb1")
    );
}

#[test]
fn a_resilver_that_met_unrepairable_errors_and_finished_is_critical() {
    let start = ev(1, 0, "sysevent.fs.zfs.resilver_start");
    let c1 = checksum(2, 1, "/dev/sda1");
    let mut d = on(ev(3, 1, "ereport.fs.zfs.data"), "/dev/sda1");
    d.vdev = None;
    let done = history(4, 2, "scan done", "errors=3");
    let finish = ev(5, 2, "sysevent.fs.zfs.resilver_finish");
    let events = run(&[
        Feed::Event(&start),
        Feed::Event(&c1),
        Feed::Event(&d),
        Feed::Event(&done),
        Feed::Event(&finish),
    ]);
    let scan: Vec<&Event> = events
        .iter()
        .filter(|e| e.check == "zevents.scan")
        .collect();
    assert_eq!(scan.len(), 1);
    assert_eq!(scan[0].severity, Severity::Critical);
    assert_eq!(scan[0].subject, "tank");
    assert!(
        scan[0].summary.contains("3 in the error log"),
        "{}",
        scan[0].summary
    );
    assert!(
        scan[0].summary.contains("tank/sda1: 1 checksum"),
        "{}",
        scan[0].summary
    );
    // The data report on the pool is a critical error finding of its own, at once.
    let data = events
        .iter()
        .find(|e| e.check == "zevents.errors" && e.subject == "tank")
        .unwrap();
    assert_eq!(data.severity, Severity::Critical);
}

#[test]
fn a_clean_scrub_clears_an_earlier_cancelled_one() {
    let a = ev(1, 0, "sysevent.fs.zfs.scrub_start");
    let abort = ev(2, 5, "sysevent.fs.zfs.scrub_abort");
    let b = ev(3, 10, "sysevent.fs.zfs.scrub_start");
    let fin = ev(4, 20, "sysevent.fs.zfs.scrub_finish");
    let events = run(&[
        Feed::Event(&a),
        Feed::Event(&abort),
        Feed::Event(&b),
        Feed::Event(&fin),
    ]);
    assert_eq!(
        states(&events),
        vec![
            (
                "zevents.scan".into(),
                State::Raised,
                Severity::Warning,
                "tank".into()
            ),
            (
                "zevents.scan".into(),
                State::Cleared,
                Severity::Warning,
                "tank".into()
            ),
        ]
    );
}

#[test]
fn a_burst_of_ten_thousand_checksum_reports_is_one_finding() {
    let burst: Vec<ZEvent> = (0..10_000)
        .map(|i| checksum(i + 1, (i / 100) as u32, "/dev/sdb1"))
        .collect();
    let feeds: Vec<Feed> = burst.iter().map(Feed::Event).collect();
    let events = run(&feeds);
    assert_eq!(events[0].state, Some(State::Raised));
    assert!(events.iter().all(|e| e.subject == "tank/sdb1"));
    // Updated as the count doubles: 1 → 10,000 is 14 doublings at most.
    assert!(events.len() <= 15, "{} events", events.len());
    let last = events.last().unwrap();
    assert!(last.data["count"].as_f64().unwrap() >= 5000.0);
}

#[test]
fn a_quiet_device_clears_its_burst_at_the_sample_after_quiet_after() {
    let c = checksum(1, 0, "/dev/sdb1");
    let sample = Sample {
        end: at(599).as_f64(),
        ..Sample::default()
    };
    let later = Sample {
        end: at(601).as_f64(),
        ..Sample::default()
    };
    let events = run(&[Feed::Event(&c), Feed::Sample(&sample), Feed::Sample(&later)]);
    assert_eq!(
        events.iter().map(|e| e.state.unwrap()).collect::<Vec<_>>(),
        vec![State::Raised, State::Cleared]
    );
}

#[test]
fn events_queued_before_the_agent_started_raise_nothing() {
    let mut old = state(1, 0, "/dev/sdd1", 5, 7);
    old.before_start = true;
    let mut old_err = checksum(2, 0, "/dev/sdd1");
    old_err.before_start = true;
    assert!(run(&[Feed::Event(&old), Feed::Event(&old_err)]).is_empty());
}

#[test]
fn slow_io_reports_give_the_longest_latency() {
    let mut a = on(ev(1, 0, "ereport.fs.zfs.delay"), "/dev/sda1");
    a.zio = Some(ZEventZio {
        delay_ns: Some(45_000_000),
        ..ZEventZio::default()
    });
    let mut b = a.clone();
    b.eid = 2;
    b.zio.as_mut().unwrap().delay_ns = Some(120_000_000);
    let events = run(&[Feed::Event(&a), Feed::Event(&b)]);
    assert_eq!(events[0].check, "zevents.slow-io");
    assert!(
        events[0].summary.contains("the longest 45 ms"),
        "{}",
        events[0].summary
    );
    assert!(events.iter().all(|e| e.severity == Severity::Warning));
}

/// A deadman report (`ereport.fs.zfs.deadman`, posted by `zio_deadman_impl` in OpenZFS 2.1's
/// `zio.c` for an I/O outstanding past `zfs_deadman_ziotime_ms`, with the vdev and the zio's
/// payload of `zfs_fm.c`) after slow-I/O reports on the same device: the one slow-I/O finding
/// of that device turns critical and says the I/O was stuck, not a second finding.
#[test]
fn a_deadman_report_makes_the_device_s_slow_io_finding_critical() {
    let mut delay = on(ev(1, 0, "ereport.fs.zfs.delay"), "/dev/sda1");
    delay.zio = Some(ZEventZio {
        delay_ns: Some(45_000_000),
        ..ZEventZio::default()
    });
    // Still outstanding when reported: the kernel's zio_delay is the I/O's issue time, not a
    // duration (the lab's deadman run, `fixtures/lab/events-deadman`, eid 0x28: zio_delay
    // 0x381fcb2044, zio_timestamp 0x381fcab88e, both nanoseconds since boot: 241 s).
    let mut deadman = on(ev(2, 5, "ereport.fs.zfs.deadman"), "/dev/sda1");
    deadman.zio = Some(ZEventZio {
        delay_ns: Some(0x381fcb2044),
        timestamp: Some(0x381fcab88e),
        ..ZEventZio::default()
    });
    let events = run(&[Feed::Event(&delay), Feed::Event(&deadman)]);
    let subjects: Vec<&str> = events.iter().map(|e| e.subject.as_str()).collect();
    assert!(subjects.windows(2).all(|w| w[0] == w[1]), "{subjects:?}");
    assert!(events.iter().all(|e| e.check == "zevents.slow-io"));
    assert_eq!(events[0].severity, Severity::Warning);
    let last = events.last().unwrap();
    assert_eq!(last.severity, Severity::Critical);
    assert!(last.summary.contains("1 deadman"), "{}", last.summary);
    assert!(
        last.summary.contains("the longest 45 ms"),
        "{}",
        last.summary
    );
    // A deadman alone claims no latency it was not given.
    let alone = run(&[Feed::Event(&deadman)]);
    assert_eq!(alone[0].severity, Severity::Critical);
    assert!(
        !alone[0].summary.contains("longest"),
        "{}",
        alone[0].summary
    );
    assert!(
        alone[0].summary.contains("zfs_deadman_ziotime_ms"),
        "{}",
        alone[0].summary
    );
}

#[test]
fn an_export_is_noted_and_the_import_clears_it() {
    let x = ev(1, 0, "sysevent.fs.zfs.pool_export");
    let i = ev(2, 1, "sysevent.fs.zfs.pool_import");
    let events = run(&[Feed::Event(&x), Feed::Event(&i)]);
    assert_eq!(
        states(&events),
        vec![
            (
                "zevents.pool".into(),
                State::Raised,
                Severity::Info,
                "tank".into()
            ),
            (
                "zevents.pool".into(),
                State::Cleared,
                Severity::Info,
                "tank".into()
            ),
        ]
    );
}

/// A data error whose file the agent named (`/scrubp/d/victim`, what `zpool status -v`
/// listed in the lab's scrub phase): the finding and its advice name it, once however many
/// reports name it.
#[test]
fn a_data_error_names_the_file_it_was_in() {
    let mut reports = Vec::new();
    for (eid, class) in [(1, "ereport.fs.zfs.checksum"), (2, "ereport.fs.zfs.data")] {
        let mut z = checksum(eid, 0, "/dev/sde1");
        z.class = class.into();
        z.zio.as_mut().unwrap().file = Some("/scrubp/d/victim".into());
        reports.push(z);
    }
    let feeds: Vec<Feed> = reports.iter().map(Feed::Event).collect();
    let events = run(&feeds);
    let last = events
        .iter()
        .rfind(|e| e.check == "zevents.errors")
        .expect("an errors finding");
    assert!(
        last.summary.contains(" in /scrubp/d/victim:"),
        "{}",
        last.summary
    );
    assert_eq!(last.data["files"].as_str(), Some("/scrubp/d/victim"));
    let advice = last.advice.as_deref().unwrap_or("");
    assert!(advice.contains("(in /scrubp/d/victim)"), "{advice}");
}
