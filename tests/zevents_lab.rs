//! Kernel events on the real OpenZFS 2.1 kernel (`tests/lab/scenarios/events.sh`,
//! `fixtures/lab/events/`): each capture holds the events `zpulse capture` read since the
//! capture before it, and beside it, under `cli/`, what `zpool events -v` printed a moment
//! later — the ground truth every assertion here is drawn from. `follow.jsonl` is what
//! `zpulse events --follow` printed while ZED and `zpool events` read the same queue.

use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use zpulse_agent::capture;
use zpulse_proto::zevent::ZEvent;
use zpulse_tests::{
    CHECKS_LIBRARY, CHECKS_PACKAGE, build_into_test_target, disable_checks_but, fixture,
};

const PHASES: [&str; 6] = ["flap", "scrub", "resilver", "slow", "pools", "overflow"];

/// One event as `zpool events -v` prints it (`cmd/zpool/zpool_main.c`, `zpool_do_events`):
/// the class, and each top-level pair's text as printed (`0x…` numbers, quoted strings).
#[derive(Debug, Clone)]
struct Printed {
    class: String,
    pairs: BTreeMap<String, String>,
}

impl Printed {
    fn eid(&self) -> u64 {
        hex(&self.pairs["eid"])
    }

    fn text(&self, name: &str) -> Option<String> {
        self.pairs
            .get(name)
            .map(|v| v.trim_matches('"').to_string())
    }

    fn number(&self, name: &str) -> Option<u64> {
        self.pairs.get(name).map(|v| hex(v))
    }
}

/// A number as `zpool events -v` prints it: `0x1f`, or for a vdev state its name and number,
/// `"OFFLINE" (0x2)` (`zpool_do_events_nvprint`).
fn hex(v: &str) -> u64 {
    let v = match v.split_once(" (") {
        Some((_, n)) => n.trim_end_matches(')'),
        None => v.split_whitespace().next().unwrap_or(""),
    };
    u64::from_str_radix(v.trim_start_matches("0x"), 16)
        .unwrap_or_else(|_| panic!("not a hex number: {v:?}"))
}

/// The events of one `zpool events -v` listing, by eid.
fn zpool_events(path: &Path) -> BTreeMap<u64, Printed> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = BTreeMap::new();
    for block in text.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.starts_with("TIME "));
        let Some(head) = lines.next() else { continue };
        // `Dec  4 2026 01:35:36.196000000 sysevent.fs.zfs.pool_create`
        let Some(class) = head.split_whitespace().last() else {
            continue;
        };
        let mut pairs = BTreeMap::new();
        for line in lines {
            // Top-level pairs are indented 8 spaces; an embedded list's more.
            let Some(pair) = line.strip_prefix("        ") else {
                continue;
            };
            if pair.starts_with(' ') {
                continue;
            }
            if let Some((name, value)) = pair.split_once(" = ") {
                pairs.insert(name.to_string(), value.trim().to_string());
            }
        }
        if pairs.contains_key("eid") {
            let p = Printed {
                class: class.to_string(),
                pairs,
            };
            out.insert(p.eid(), p);
        }
    }
    out
}

fn lab() -> PathBuf {
    fixture("lab/events")
}

/// The captures of every phase, in the order they were taken.
fn captures() -> Vec<PathBuf> {
    captures_in(&lab(), &PHASES)
}

fn captures_in(lab: &Path, phases: &[&str]) -> Vec<PathBuf> {
    phases
        .iter()
        .flat_map(|p| capture::series(&lab.join(p)).expect("a recorded phase"))
        .collect()
}

/// Every event any `zpool events -v` listing printed during the run, by eid.
fn printed() -> BTreeMap<u64, Printed> {
    printed_of(&lab(), &PHASES)
}

/// The same for one run of the lab (each run boots the module afresh: ids begin at 1).
fn printed_of(lab: &Path, phases: &[&str]) -> BTreeMap<u64, Printed> {
    let mut all = BTreeMap::new();
    for c in captures_in(lab, phases) {
        all.extend(zpool_events(&c.join("cli/zpool-events-v.txt")));
    }
    // The listing after the last capture, where the scenario took one (the main run's also
    // holds what was posted after its last capture).
    let last = lab.join("zpool-events-v.final.txt");
    if last.exists() {
        all.extend(zpool_events(&last));
    }
    all
}

/// What the decoder made of an event, against what `zpool events -v` printed of it.
fn assert_same(z: &ZEvent, p: &Printed, at: &Path) {
    let here = format!("{} eid {}", at.display(), z.eid);
    assert_eq!(z.class, p.class, "{here}");
    assert_eq!(
        z.pool,
        p.text("pool").or(p.text("pool_name")),
        "{here}: pool"
    );
    assert_eq!(z.pool_guid, p.number("pool_guid"), "{here}: pool_guid");
    let v = z.vdev.clone().unwrap_or_default();
    assert_eq!(v.guid, p.number("vdev_guid"), "{here}: vdev_guid");
    assert_eq!(v.path, p.text("vdev_path"), "{here}: vdev_path");
    assert_eq!(v.state, p.number("vdev_state"), "{here}: vdev_state");
    if let (Some(state), Some(printed)) = (v.state, p.pairs.get("vdev_state")) {
        // zpool names the state as zpulse does.
        let name = printed.split(" (").next().unwrap().trim_matches('"');
        assert_eq!(zpulse_proto::zevent::vdev_state_name(state), name, "{here}");
    }
    assert_eq!(
        v.previous_state,
        p.number("prev_state").or(p.number("vdev_laststate")),
        "{here}: previous state"
    );
    let zio = z.zio.clone().unwrap_or_default();
    for (got, name) in [
        (zio.offset, "zio_offset"),
        (zio.size, "zio_size"),
        (zio.objset, "zio_objset"),
        (zio.object, "zio_object"),
        (zio.blkid, "zio_blkid"),
        (zio.delay_ns, "zio_delay"),
        (zio.err, "zio_err"),
    ] {
        assert_eq!(got, p.number(name), "{here}: {name}");
    }
    let h = z.history.clone().unwrap_or_default();
    assert_eq!(h.internal_name, p.text("history_internal_name"), "{here}");
    assert_eq!(h.internal_str, p.text("history_internal_str"), "{here}");
    // `time = 0x6b1218e8 0xbaeb900`: seconds and nanoseconds.
    let time: Vec<u64> = p.pairs["time"].split_whitespace().map(hex).collect();
    assert_eq!(
        (u64::from(z.time.seconds), u64::from(z.time.nanos)),
        (time[0], time[1]),
        "{here}: time"
    );
}

/// Checks every event captured in `lab`'s phases against what `zpool events -v` printed of
/// it, and that the run read every one of them (none dropped, none missing); how many.
fn assert_captured_as_printed(lab: &Path, phases: &[&str]) -> usize {
    let printed = printed_of(lab, phases);
    let mut decoded = 0;
    for c in captures_in(lab, phases) {
        let batch = capture::load_zevents(&c);
        assert!(
            batch.undecodable.is_empty(),
            "{}: {:?}",
            c.display(),
            batch.undecodable
        );
        for z in &batch.events {
            let p = printed.get(&z.eid).unwrap_or_else(|| {
                panic!("{}: eid {} was never printed by zpool", c.display(), z.eid)
            });
            assert_same(z, p, &c);
            decoded += 1;
        }
    }
    decoded
}

#[test]
fn every_captured_event_is_the_one_zpool_events_printed() {
    let decoded = assert_captured_as_printed(&lab(), &PHASES);
    assert!(decoded > 100, "the run holds {decoded} events");
}

#[test]
fn the_captures_hold_every_event_once_and_lose_none() {
    let mut seen = BTreeSet::new();
    let mut last = 0;
    for c in captures() {
        let batch = capture::load_zevents(&c);
        assert_eq!((batch.dropped, batch.missing), (0, 0), "{}", c.display());
        for z in &batch.events {
            assert!(
                seen.insert(z.eid),
                "{}: eid {} captured twice",
                c.display(),
                z.eid
            );
            assert!(z.eid > last, "{}: eid {} out of order", c.display(), z.eid);
            last = z.eid;
        }
    }
    // Every id from the module's first event to the last one captured: none lost.
    assert_eq!(
        seen.len() as u64,
        last,
        "captured {} of 1..={last}",
        seen.len()
    );
    // And each is an event the zpool listings printed: the listing after each capture held
    // every event posted since the capture before (fewer than the queue's 512).
    let printed = printed();
    let unprinted: Vec<&u64> = seen.iter().filter(|e| !printed.contains_key(e)).collect();
    assert!(
        unprinted.is_empty(),
        "never printed by zpool: {unprinted:?}"
    );
}

/// `fixtures/lab/events-overflow`: the queue held to 16 events, 60 posted between two
/// captures.
#[test]
fn what_the_queue_dropped_before_the_cursor_read_it_is_counted() {
    let series = fixture("lab/events-overflow/series");
    let dirs = capture::series(&series).unwrap();
    let before = capture::load_zevents(&dirs[0]);
    let after = capture::load_zevents(&dirs[1]);
    let kept = before
        .events
        .last()
        .expect("the first capture's events")
        .eid;
    // zpool events, reading the queue afresh, printed the 16 it still held.
    let listed = zpool_events(&dirs[1].join("cli/zpool-events-v.txt"));
    assert!(listed.len() <= 16, "{} listed", listed.len());
    let oldest = *listed.keys().next().unwrap();
    // The capture read those it could, and counted every id between its kept cursor and
    // the oldest still queued as missing.
    assert_eq!(after.events.first().map(|e| e.eid), Some(oldest));
    assert_eq!(after.missing, oldest - kept - 1);
    assert!(after.missing > 0);
}

#[test]
fn a_reader_beside_zed_and_zpool_events_sees_every_event_and_takes_none() {
    let follow = std::fs::read_to_string(lab().join("follow.jsonl")).unwrap();
    let followed: BTreeSet<u64> = follow
        .lines()
        .map(|l| {
            serde_json::from_str::<Json>(l).unwrap()["eid"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let printed = printed();
    // zpulse's follower saw every event that any zpool events listing printed…
    let unseen: Vec<&u64> = printed.keys().filter(|e| !followed.contains(e)).collect();
    assert!(unseen.is_empty(), "not followed: {unseen:?}");
    // … and reading took nothing away: after ZED, the follower and the capture's own cursor
    // had read them, zpool events still listed every event from the first (flap/001).
    let after_flap = zpool_events(&lab().join("flap/001/cli/zpool-events-v.txt"));
    let first = *after_flap.keys().next().unwrap();
    assert_eq!(first, 1);
    let ids: Vec<u64> = after_flap.keys().copied().collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
}

/// The records `zpulse replay --format json` printed for one phase with the zevents check
/// alone: `(check, state, severity, subject, summary)`.
fn findings(phase: &str) -> Vec<(String, String, String, String, String)> {
    findings_in(&lab(), phase)
}

fn findings_in(lab: &Path, phase: &str) -> Vec<(String, String, String, String, String)> {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("zpulse.toml");
    let only = disable_checks_but(&["zevents"]);
    std::fs::write(&config, format!("[plugins]\ndirs = []\n{only}\n")).unwrap();
    let out = Command::new(profile.join("zpulse"))
        .args(["replay", "--format", "json", "--config"])
        .arg(&config)
        .arg(lab.join(phase))
        .arg("--plugin")
        .arg(profile.join(CHECKS_LIBRARY))
        .output()
        .expect("running zpulse replay");
    assert!(
        out.status.success(),
        "replay of {phase}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Json>(l).ok())
        .filter(|j| j["tag"] == "zpulse.finding")
        .map(|j| {
            let r = &j["record"];
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            (
                s("check"),
                s("state"),
                s("severity"),
                s("subject"),
                s("summary"),
            )
        })
        .collect()
}

/// The events of a phase's later captures (the first's are history) that `zpool events -v`
/// printed, of class `class`.
fn printed_in(phase: &str, class: &str) -> Vec<Printed> {
    let dirs = capture::series(&lab().join(phase)).unwrap();
    let listed = zpool_events(&dirs.last().unwrap().join("cli/zpool-events-v.txt"));
    let first = capture::load_zevents(&dirs[0]);
    let after = first.events.last().map_or(0, |e| e.eid);
    listed
        .into_values()
        .filter(|p| p.eid() > after && p.class == class)
        .collect()
}

#[test]
fn a_flap_between_two_samples_is_raised_and_cleared() {
    let changes = printed_in("flap", "resource.fs.zfs.statechange");
    let offline = changes
        .iter()
        .find(|p| p.number("vdev_state") == Some(2))
        .expect("zpool events printed the OFFLINE statechange");
    let dev = offline.text("vdev_path").unwrap();
    let subject = format!("flap/{}", dev.trim_start_matches("/dev/"));
    let f: Vec<_> = findings("flap")
        .into_iter()
        .filter(|f| f.0 == "zevents.vdev-state" && f.3 == subject)
        .collect();
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!((f[0].1.as_str(), f[0].2.as_str()), ("raised", "warning"));
    assert!(f[0].4.contains("OFFLINE"), "{}", f[0].4);
    assert_eq!(f[1].1, "cleared");
}

#[test]
fn a_scrub_that_found_damage_names_it_critical() {
    let f = findings("scrub");
    // What the pool history said at the scan's end, as zpool events printed it.
    let done = printed_in("scrub", "sysevent.fs.zfs.history_event")
        .into_iter()
        .find(|p| p.text("history_internal_name").as_deref() == Some("scan done"))
        .expect("zpool events printed the scan's end");
    let errors = done.text("history_internal_str").unwrap();
    let n: u64 = errors.trim_start_matches("errors=").parse().unwrap();
    assert!(n > 0, "the damaged block is a permanent error: {errors}");
    let scan = f
        .iter()
        .find(|f| f.0 == "zevents.scan")
        .unwrap_or_else(|| panic!("no scan finding: {f:?}"));
    assert_eq!(
        (scan.1.as_str(), scan.2.as_str(), scan.3.as_str()),
        ("raised", "critical", "scrubp")
    );
    assert!(
        scan.4.contains(&format!("{n} in the error log")),
        "{}",
        scan.4
    );
    // The checksum reports are one error finding for the device zpool named.
    let checksums = printed_in("scrub", "ereport.fs.zfs.checksum");
    assert!(!checksums.is_empty());
    let dev = checksums[0].text("vdev_path").unwrap();
    let subject = format!("scrubp/{}", dev.trim_start_matches("/dev/"));
    let errs: Vec<_> = f
        .iter()
        .filter(|f| f.0 == "zevents.errors" && f.3 == subject)
        .collect();
    assert_eq!(errs[0].1, "raised");
    // And zpool status -v names the damaged file (what the advice tells the admin to run).
    let status =
        std::fs::read_to_string(lab().join("scrub/001/cli/zpool-status-v.scrubp.txt")).unwrap();
    assert!(status.contains("/scrubp/d/victim"), "{status}");
}

#[test]
fn a_resilver_with_unrepairable_errors_that_finished_between_captures_is_critical() {
    let f = findings("resilver");
    let finish = printed_in("resilver", "sysevent.fs.zfs.resilver_finish");
    assert_eq!(
        finish.len(),
        1,
        "the whole resilver ran between the two captures"
    );
    let scan = f
        .iter()
        .find(|f| f.0 == "zevents.scan")
        .unwrap_or_else(|| panic!("no scan finding: {f:?}"));
    assert_eq!(
        (scan.1.as_str(), scan.2.as_str(), scan.3.as_str()),
        ("raised", "critical", "rz")
    );
    let status =
        std::fs::read_to_string(lab().join("resilver/001/cli/zpool-status-v.rz.txt")).unwrap();
    assert!(
        status.contains("Permanent errors") || status.contains("errors: "),
        "{status}"
    );
}

#[test]
fn slow_io_reports_raise_one_finding_with_the_latency_zpool_printed() {
    let delays = printed_in("slow", "ereport.fs.zfs.delay");
    assert!(
        !delays.is_empty(),
        "the throttled HDD under zio_slow_io_ms=20 reported delays"
    );
    let f: Vec<_> = findings("slow")
        .into_iter()
        .filter(|f| f.0 == "zevents.slow-io")
        .collect();
    // Raised at the first report, with that report's latency as the longest so far.
    let first_ms = delays[0].number("zio_delay").unwrap() as f64 / 1e6;
    let dev = delays[0].text("vdev_path").unwrap();
    assert_eq!(f[0].1, "raised");
    assert_eq!(f[0].3, format!("slowp/{}", dev.trim_start_matches("/dev/")));
    assert!(
        f[0].4.contains(&format!("the longest {first_ms:.0} ms")),
        "{}",
        f[0].4
    );
    // One finding: every record is about that device, far fewer than the reports.
    assert!(f.iter().all(|x| x.3 == f[0].3));
    assert!(
        f.len() <= 1 + (delays.len() as f64).log2().ceil() as usize * 2,
        "{} records for {} reports",
        f.len(),
        delays.len()
    );
}

#[test]
fn an_export_is_noted_cleared_by_the_import_and_a_destroy_noted() {
    let f: Vec<_> = findings("pools")
        .into_iter()
        .filter(|f| f.0 == "zevents.pool")
        .collect();
    let states: Vec<(&str, &str)> = f.iter().map(|f| (f.1.as_str(), f.4.as_str())).collect();
    assert_eq!(
        states,
        vec![
            ("raised", "pool poolx was exported"),
            ("cleared", "pool poolx was imported"),
            ("raised", "pool poolx was destroyed"),
        ]
    );
    // Each comes from an event zpool events printed.
    for class in [
        "sysevent.fs.zfs.pool_export",
        "sysevent.fs.zfs.pool_import",
        "sysevent.fs.zfs.pool_destroy",
    ] {
        assert!(!printed_in("pools", class).is_empty(), "{class}");
    }
}

#[test]
fn zpulse_events_prints_a_capture_as_zpool_events_lists_it() {
    let profile = build_into_test_target(&[]);
    let out = Command::new(profile.join("zpulse"))
        .args(["events", "-v", "--root"])
        .arg(lab().join("flap/001"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let listed = zpool_events(&lab().join("flap/001/cli/zpool-events-v.txt"));
    for z in capture::load_zevents(&lab().join("flap/001")).events {
        let p = &listed[&z.eid];
        let line = format!("eid {}  {}  ", z.eid, p.class);
        assert!(text.contains(&line), "{line} missing");
    }
}

/// `fixtures/lab/events-live`: `zpulse run` live, each stdout line stamped with the guest's
/// wall clock as it arrived (`<unix seconds> <json>`).
fn live(name: &str) -> Vec<(f64, Json)> {
    let path = fixture("lab/events-live").join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| {
            let (at, json) = l.split_once(' ')?;
            Some((at.parse().ok()?, serde_json::from_str(json).ok()?))
        })
        .collect()
}

fn live_printed(n: u32) -> BTreeMap<u64, Printed> {
    zpool_events(&fixture(&format!("lab/events-live/zpool-events-v.{n}.txt")))
}

#[test]
fn live_findings_come_within_a_second_of_the_kernel_event() {
    let printed = live_printed(1);
    let offline = printed
        .values()
        .find(|p| p.class == "resource.fs.zfs.statechange" && p.number("vdev_state") == Some(2))
        .expect("zpool events printed the OFFLINE statechange");
    let time: Vec<u64> = offline.pairs["time"].split_whitespace().map(hex).collect();
    let posted = time[0] as f64 + time[1] as f64 / 1e9;
    let dev = offline.text("vdev_path").unwrap();
    let subject = format!("live/{}", dev.trim_start_matches("/dev/"));
    let lines = live("run1.jsonl");
    let (arrived, finding) = lines
        .iter()
        .find(|(_, j)| {
            j["record"]["check"] == "zevents.vdev-state"
                && j["record"]["subject"] == subject.as_str()
        })
        .expect("the zevents check raised the OFFLINE device");
    assert_eq!(finding["record"]["state"], "raised");
    // Stamped with the kernel's time of the event, and printed within a second of it (the
    // agent samples every 10 s: a sample would have been up to 10 s late).
    assert!((finding["time"].as_f64().unwrap() - posted).abs() < 1e-3);
    assert!(
        arrived - posted < 1.0,
        "{} s after the event",
        arrived - posted
    );
    // The record of the event itself went out too, under zpulse.zevent.
    let record = lines
        .iter()
        .find(|(_, j)| j["tag"] == "zpulse.zevent" && j["record"]["data"]["eid"] == offline.eid())
        .expect("the event's own record");
    assert!(record.0 - posted < 1.0);
}

#[test]
fn a_restart_repeats_no_event_and_marks_what_came_while_stopped() {
    let eids = |lines: &[(f64, Json)]| -> Vec<u64> {
        lines
            .iter()
            .filter(|(_, j)| j["tag"] == "zpulse.zevent")
            .map(|(_, j)| j["record"]["data"]["eid"].as_u64().unwrap())
            .collect()
    };
    let first = eids(&live("run1.jsonl"));
    let second_lines = live("run2.jsonl");
    let second = eids(&second_lines);
    // The cursor the first run kept names its last event.
    let kept = std::fs::read_to_string(fixture("lab/events-live/zevent-cursor.1")).unwrap();
    let kept_eid: u64 = kept
        .lines()
        .find_map(|l| l.strip_prefix("eid "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(Some(&kept_eid), first.iter().max());
    // The second run starts right after it: nothing repeated, nothing skipped.
    assert!(second.iter().all(|e| *e > kept_eid), "repeated: {second:?}");
    assert_eq!(second.first(), Some(&(kept_eid + 1)));
    let all: Vec<u64> = first.iter().chain(&second).copied().collect();
    let printed: Vec<u64> = live_printed(2)
        .keys()
        .copied()
        .filter(|e| *e <= *all.last().unwrap())
        .collect();
    assert_eq!(all, printed, "every event zpool events printed, once");
    // What the kernel posted while the agent was stopped (the scrub, the OFFLINE) is history
    // in the second run: marked, and no finding raised from it.
    let printed2 = live_printed(2);
    let offline_while_stopped = printed2
        .values()
        .filter(|p| {
            p.eid() > kept_eid
                && p.class == "resource.fs.zfs.statechange"
                && p.number("vdev_state") == Some(2)
        })
        .map(Printed::eid)
        .next()
        .expect("the OFFLINE while stopped");
    let rec = second_lines
        .iter()
        .find(|(_, j)| j["record"]["data"]["eid"] == offline_while_stopped)
        .unwrap();
    assert_eq!(rec.1["record"]["data"]["before_start"], true);
    assert!(
        !second_lines
            .iter()
            .any(|(_, j)| j["record"]["check"] == "zevents.vdev-state"
                && j["record"]["state"] == "raised"),
        "no alert for what happened while the agent was stopped"
    );
}

#[test]
fn an_idle_queue_costs_no_call() {
    // Between idle-from and idle-to nothing happened on the pools. Once the agent had read
    // the events queued before it started (under the emulator and strace, the first 1 to 2 s),
    // its events thread waited in one ZFS_IOC_EVENTS_NEXT (0x5a81; strace names it) that did
    // not return until the next event, and made no other call: no polling.
    let dir = fixture("lab/events-live");
    let read = |f: &str| -> f64 {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (from, to) = (read("idle-from"), read("idle-to"));
    assert!(to - from >= 15.0);
    let strace = std::fs::read_to_string(dir.join("strace1.log")).unwrap();
    // `PID TIME ioctl(FD, ZFS_IOC_EVENTS_NEXT, …` with -f -ttt.
    let calls: Vec<(f64, bool)> = strace
        .lines()
        .filter(|l| l.contains("ZFS_IOC_EVENTS_NEXT") || l.contains("0x5a81"))
        .filter(|l| !l.contains("resumed>"))
        .filter_map(|l| {
            let at: f64 = l.split_whitespace().nth(1)?.parse().ok()?;
            Some((at, l.contains("<unfinished")))
        })
        .collect();
    let wait = calls
        .iter()
        .find(|(at, blocked)| *blocked && *at > from)
        .expect("a call that waited in the kernel")
        .0;
    assert!(
        wait - from < 3.0,
        "the queued events took {} s to read",
        wait - from
    );
    let during: Vec<f64> = calls
        .iter()
        .map(|(at, _)| *at)
        .filter(|at| *at > wait && *at < to)
        .collect();
    assert!(during.is_empty(), "calls while idle: {during:?}");
}

/// The kernel events of a replayed series, sent by `zpulse run`'s Forward sink to a real
/// `zpulse-collector`: stored under kind `zevent`, each once, and listed on the host's page.
#[test]
fn the_collector_stores_and_shows_the_kernel_events() {
    use zpulse_tests::peer::{Collector, http_get};
    let collector_bin = zpulse_tests::build_bin("zpulse-collector", "zpulse-collector");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("events.db");
    let (_collector, port, http) = Collector::serve(&collector_bin, &db);
    replay_flap(
        tmp.path(),
        &format!(
            "hostname = \"nas-events\"\n[history]\nenabled = false\n[[sink]]\ntype = \
             \"forward\"\naddress = \"127.0.0.1:{port}\"\nspool_dir = {:?}\n",
            tmp.path().join("spool").display().to_string()
        ),
    );
    let out = Command::new(&collector_bin)
        .args([
            "query", "--kind", "zevent", "--limit", "10000", "--format", "json", "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Json = serde_json::from_slice(&out.stdout).unwrap();
    let stored: Vec<(String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["check"].as_str().unwrap().to_string(),
                r["tag"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let recorded: Vec<ZEvent> = capture::series(&lab().join("flap"))
        .unwrap()
        .iter()
        .flat_map(|d| capture::load_zevents(d).events)
        .collect();
    assert_eq!(
        stored.len(),
        recorded.len(),
        "each recorded event stored once"
    );
    assert!(stored.iter().all(|(_, tag)| tag == "zpulse.zevent"));
    let mut classes: Vec<&str> = stored.iter().map(|(c, _)| c.as_str()).collect();
    classes.sort();
    let mut want: Vec<&str> = recorded.iter().map(|z| z.class.as_str()).collect();
    want.sort();
    assert_eq!(classes, want);
    let page = http_get(http, "/host/nas-events");
    assert!(page.contains("Kernel events"), "{page}");
    assert!(
        page.contains("flap/sdd1 is now OFFLINE (was ONLINE)"),
        "{page}"
    );
}

/// `zpulse run --replay` of the flap phase with the zevents check alone and `config` (its
/// sinks, history), in `dir`.
fn replay_flap(dir: &Path, config: &str) {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let file = dir.join("zpulse.toml");
    let plugins = format!(
        "[plugins]\ndirs = []\n{}\n",
        disable_checks_but(&["zevents"])
    );
    // Top-level keys (hostname) before the tables.
    let (top, tables) = match config.find('[') {
        Some(i) => config.split_at(i),
        None => (config, ""),
    };
    std::fs::write(&file, format!("{top}{plugins}{tables}")).unwrap();
    let run = Command::new(profile.join("zpulse"))
        .args(["run", "--config"])
        .arg(&file)
        .arg("--plugin")
        .arg(profile.join(CHECKS_LIBRARY))
        .arg("--replay")
        .arg(lab().join("flap"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// `zpulse report` (JSON) with the zevents check alone.
fn report(args: &[&std::ffi::OsStr]) -> Json {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins]\ndirs = []\n{}\n",
            disable_checks_but(&["zevents"])
        ),
    )
    .unwrap();
    let out = Command::new(profile.join("zpulse"))
        .arg("report")
        .args(args)
        .args(["--format", "json", "--config"])
        .arg(&config)
        .arg("--plugin")
        .arg(profile.join(CHECKS_LIBRARY))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The eids a report lists as the window's kernel events.
fn listed_eids(b: &Json) -> Vec<u64> {
    b["kernel_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["eid"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_report_on_a_series_lists_its_kernel_events_and_concludes_from_them() {
    let b = report(&[lab().join("resilver").as_os_str()]);
    // The window's events are those its second capture recorded (the first's came before).
    let want: Vec<u64> = capture::load_zevents(&lab().join("resilver/001"))
        .events
        .iter()
        .map(|e| e.eid)
        .collect();
    assert_eq!(listed_eids(&b), want);
    let finding = b["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "zevents.scan")
        .expect("the resilver's errors are a finding of the window");
    assert_eq!(finding["severity"], "critical");
}

#[test]
fn the_history_keeps_the_kernel_events_for_a_report() {
    let tmp = tempfile::tempdir().unwrap();
    let history = tmp.path().join("history");
    // The agent replays the flap phase, recording its snapshots and events.
    replay_flap(
        tmp.path(),
        &format!("[history]\ndir = {:?}\n", history.display().to_string()),
    );
    let dirs = capture::series(&lab().join("flap")).unwrap();
    let at = |d: &Path| capture::Manifest::read(d).unwrap().captured_at;
    let (from, to) = (at(&dirs[0]), at(&dirs[1]));
    let b = report(&[
        "--from".as_ref(),
        format!("{from}").as_ref(),
        "--to".as_ref(),
        format!("{to}").as_ref(),
        "--history-dir".as_ref(),
        history.as_os_str(),
    ]);
    // Between the two captures: exactly the events flap/001 recorded, each once.
    let want: Vec<u64> = capture::load_zevents(&dirs[1])
        .events
        .iter()
        .map(|e| e.eid)
        .collect();
    assert_eq!(listed_eids(&b), want);
    let states: Vec<&str> = b["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "zevents.vdev-state")
        .map(|f| f["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, vec!["raised", "cleared"]);
}

#[test]
fn zpulse_once_shows_the_latest_kernel_events_of_a_capture() {
    let profile = build_into_test_target(&[]);
    let capture = lab().join("flap/001");
    let out = Command::new(profile.join("zpulse"))
        .args(["once", "--root"])
        .arg(&capture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let events = capture::load_zevents(&capture).events;
    let listed = zpool_events(&capture.join("cli/zpool-events-v.txt"));
    let shown = events.len().min(20);
    assert!(
        text.contains(&format!("Kernel events ({shown} of {};", events.len())),
        "{text}"
    );
    // The latest ones, each with its class as zpool printed it.
    for z in &events[events.len() - shown..] {
        assert!(
            text.contains(&format!("eid {}  {}  ", z.eid, listed[&z.eid].class)),
            "eid {} missing",
            z.eid
        );
    }
    let oldest_shown = events[events.len() - shown].eid;
    assert!(!text.contains(&format!("eid {}  ", oldest_shown - 1)));
}

/// `fixtures/lab/events-devices` (`tests/lab/scenarios/events-devices.sh`): a damaged file,
/// device changes and a device that stopped answering, on a VM run of its own.
const DEVICE_PHASES: [&str; 3] = ["named", "devices", "probe"];

fn devices_lab() -> PathBuf {
    fixture("lab/events-devices")
}

/// The files `zpool status -v` listed under "Permanent errors have been detected in the
/// following files:" (`cmd/zpool/zpool_main.c`, `print_error_log`).
fn permanent_errors(status: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(status).unwrap();
    let Some((_, list)) = text.split_once("in the following files:") else {
        return Vec::new();
    };
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_device_event_is_the_one_zpool_events_printed() {
    let decoded = assert_captured_as_printed(&devices_lab(), &DEVICE_PHASES);
    assert!(decoded > 50, "the run holds {decoded} events");
    for c in captures_in(&devices_lab(), &DEVICE_PHASES) {
        let batch = capture::load_zevents(&c);
        assert_eq!((batch.dropped, batch.missing), (0, 0), "{}", c.display());
    }
}

/// Each error report about the damaged file names it as `zpool status -v` listed it at the
/// same moment: by its path while its file system was mounted (named/001), as
/// `DATASET:PATH` once unmounted (named/002).
#[test]
fn error_reports_name_the_file_zpool_status_lists() {
    for capture in ["named/001", "named/002"] {
        let dir = devices_lab().join(capture);
        let listed = permanent_errors(&dir.join("cli/zpool-status-v.namep.txt"));
        assert_eq!(listed.len(), 1, "{capture}: {listed:?}");
        let reports: Vec<ZEvent> = (capture::load_zevents(&dir).events.into_iter())
            .filter(|z| z.zio.as_ref().is_some_and(|io| io.object.is_some()))
            .collect();
        assert!(!reports.is_empty(), "{capture}: no error report captured");
        for z in &reports {
            let file = z.zio.as_ref().and_then(|io| io.file.as_deref());
            assert_eq!(file, Some(listed[0].as_str()), "{capture} eid {}", z.eid);
        }
    }
}

/// The mount table as the lab's kernel wrote it: the damaged file's file system found where
/// `zpool status -v` said it was mounted, and not once unmounted.
#[test]
fn the_real_mount_table_gives_the_mount_point() {
    use zpulse_agent::sources::linux::mounts::zfs_mountpoint;
    let table = |c: &str| std::fs::read(devices_lab().join(c).join("cli/mounts.txt")).unwrap();
    let listed = permanent_errors(&devices_lab().join("named/001/cli/zpool-status-v.namep.txt"));
    let mounted = zfs_mountpoint(&table("named/001"), "namep/d").expect("namep/d mounted");
    assert_eq!(format!("{mounted}/victim"), listed[0]);
    assert_eq!(zfs_mountpoint(&table("named/002"), "namep/d"), None);
}

/// Device changes between samples (devices/001: a disk added, one attached and resilvered,
/// then detached; devices/002: a spare added, a disk replaced by it, both removed): every
/// one `zpool events -v` printed gives a `zevents.change` finding on its pool and device,
/// the spare's a warning, the rest information.
#[test]
fn device_changes_are_each_raised_on_their_device() {
    let lab = devices_lab();
    let dirs = capture::series(&lab.join("devices")).unwrap();
    let after = (capture::load_zevents(&dirs[0]).events.last()).map_or(0, |e| e.eid);
    let printed = printed_of(&lab, &["devices"]);
    let changes: Vec<&Printed> = (printed.values())
        .filter(|p| p.eid() > after)
        .filter(|p| {
            let class = p.class.trim_start_matches("sysevent.fs.zfs.");
            [
                "vdev_add",
                "vdev_attach",
                "vdev_remove",
                "vdev_remove_dev",
                "vdev_spare",
            ]
            .contains(&class)
        })
        .collect();
    let classes: BTreeSet<&str> = changes.iter().map(|p| p.class.as_str()).collect();
    assert!(
        classes.len() >= 4,
        "the run printed adds, attaches, removals and a spare: {classes:?}"
    );
    let findings = findings_in(&lab, "devices");
    for p in &changes {
        let pool = p.text("pool_name").or(p.text("pool")).unwrap();
        let subject = match p.text("vdev_path") {
            Some(path) => format!("{pool}/{}", path.trim_start_matches("/dev/")),
            None => pool,
        };
        let spare = p.class.ends_with("vdev_spare");
        let found = findings.iter().any(|(check, _, severity, s, _)| {
            check == "zevents.change"
                && *s == subject
                && severity == if spare { "warning" } else { "info" }
        });
        assert!(
            found,
            "{} eid {} on {subject}: {findings:?}",
            p.class,
            p.eid()
        );
    }
}

/// One side of a mirror whose SCSI device went offline under writes (probe/001): the kernel
/// reported I/O errors, a failed probe and the device UNAVAIL; back online and cleared
/// (probe/002), ONLINE. Each is a finding on the device `zpool events -v` named, and the
/// state finding clears when `zpool status` shows the device ONLINE again.
#[test]
fn a_device_that_stops_answering_is_probed_and_comes_back() {
    let lab = devices_lab();
    let printed = printed_of(&lab, &["probe"]);
    let dirs = capture::series(&lab.join("probe")).unwrap();
    let after = (capture::load_zevents(&dirs[0]).events.last()).map_or(0, |e| e.eid);
    let of = |class: &str| -> Vec<&Printed> {
        (printed.values())
            .filter(|p| p.eid() > after && p.class == class)
            .collect()
    };
    let probe = of("ereport.fs.zfs.probe_failure");
    assert_eq!(probe.len(), 1);
    let device = probe[0].text("vdev_path").unwrap();
    let subject = format!("probep/{}", device.trim_start_matches("/dev/"));
    let states: Vec<String> = of("resource.fs.zfs.statechange")
        .iter()
        .map(|p| {
            p.pairs["vdev_state"]
                .split(' ')
                .next()
                .unwrap()
                .trim_matches('"')
                .to_string()
        })
        .collect();
    assert_eq!(states, ["UNAVAIL", "ONLINE"]);
    assert!(!of("ereport.fs.zfs.io").is_empty());
    let status = std::fs::read_to_string(dirs[1].join("cli/zpool-status-v.probep.txt")).unwrap();
    assert!(status.contains("sdb     UNAVAIL"), "{status}");

    let findings = findings_in(&lab, "probe");
    let on = |check: &str, state: &str, severity: &str| {
        findings
            .iter()
            .any(|(c, st, sev, s, _)| c == check && st == state && sev == severity && *s == subject)
    };
    assert!(on("zevents.probe", "raised", "warning"), "{findings:?}");
    assert!(
        on("zevents.vdev-state", "raised", "critical"),
        "{findings:?}"
    );
    assert!(on("zevents.errors", "raised", "warning"), "{findings:?}");
    // A clear carries the severity of what it clears.
    assert!(
        on("zevents.vdev-state", "cleared", "critical"),
        "{findings:?}"
    );
}

/// A real OpenZFS 2.1 reply to `ZFS_IOC_OBJSET_STATS` (the pool's root dataset, recorded in
/// named/000's `zfs-ioctl/objset_stats/`): the pool's creation time read from it is the
/// second the kernel's pool history recorded `create` (`history_time` of the pool's first
/// `history_event`, as `zpool events -v` printed it).
#[test]
fn a_pools_creation_time_comes_from_its_root_dataset() {
    let dir = devices_lab().join("named/000");
    let snapshot = capture::load(&dir).expect("loads");
    let pool = snapshot.pool("namep").expect("pool namep");
    let printed = zpool_events(&dir.join("cli/zpool-events-v.txt"));
    let create = (printed.values())
        .find(|p| {
            p.text("pool").as_deref() == Some("namep")
                && p.text("history_internal_name").as_deref() == Some("create")
        })
        .expect("the pool's create record");
    assert_eq!(pool.created_at, create.number("history_time"));
}

fn deadman_lab() -> PathBuf {
    fixture("lab/events-deadman")
}

/// Stuck I/O on the real kernel (`tests/lab/scenarios/events-deadman.sh`: every read of the
/// pool's disk held 4 s by dm-delay under 16 outstanding reads, `zfs_deadman_ziotime_ms`
/// lowered to 2 s): every event
/// captured is the one `zpool events -v` printed, and the device the deadman reports name has
/// one slow-I/O finding that ends critical and says the I/O was stuck.
#[test]
fn deadman_reports_make_the_device_s_slow_io_finding_critical() {
    let decoded = assert_captured_as_printed(&deadman_lab(), &["series"]);
    let dirs = capture::series(&deadman_lab().join("series")).unwrap();
    let listed = zpool_events(&dirs.last().unwrap().join("cli/zpool-events-v.txt"));
    let deadman: Vec<&Printed> = listed
        .values()
        .filter(|p| p.class == "ereport.fs.zfs.deadman")
        .collect();
    assert!(
        !deadman.is_empty(),
        "the kernel reported no deadman in {decoded} events"
    );
    let dev = deadman[0].text("vdev_path").unwrap();
    let subject = format!(
        "{}/{}",
        deadman[0].text("pool").unwrap(),
        dev.trim_start_matches("/dev/")
    );
    let f: Vec<_> = findings_in(&deadman_lab(), "series")
        .into_iter()
        .filter(|f| f.0 == "zevents.slow-io")
        .collect();
    assert!(f.iter().all(|x| x.3 == subject), "{f:?}");
    let last = f.last().unwrap_or_else(|| panic!("no slow-I/O finding"));
    // Raised critical by a first deadman, or raised by delay reports and updated to critical.
    assert!(matches!(last.1.as_str(), "raised" | "updated"), "{f:?}");
    assert_eq!(last.2, "critical", "{f:?}");
    assert!(last.4.contains("deadman"), "{}", last.4);
    // The longest latency is a completed slow I/O's (`delay` reports); a deadman report's
    // I/O is still outstanding, its zio_delay the issue time since boot (zio_timestamp plus
    // microseconds), no duration.
    for d in &deadman {
        let (issued, timestamp) = (d.number("zio_delay").unwrap(), d.number("zio_timestamp"));
        assert!(issued >= timestamp.unwrap(), "{issued} {timestamp:?}");
    }
    // The slow-I/O reports in the kernel's order (listed by eid); a record that counts N of
    // them says the longest delay among those N.
    let slow: Vec<&Printed> = listed
        .values()
        .filter(|p| p.class == "ereport.fs.zfs.delay" || p.class == "ereport.fs.zfs.deadman")
        .collect();
    assert!(
        slow.iter().any(|p| p.class == "ereport.fs.zfs.delay"),
        "the held reads also made delay reports"
    );
    let counted: usize = last.4[subject.len() + 2..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {}", last.4));
    let longest_ms = slow[..counted]
        .iter()
        .filter(|p| p.class == "ereport.fs.zfs.delay")
        .map(|p| p.number("zio_delay").unwrap())
        .max()
        .expect("a delay report among those counted") as f64
        / 1e6;
    assert!(
        last.4.contains(&format!("the longest {longest_ms:.0} ms")),
        "{}",
        last.4
    );
}
