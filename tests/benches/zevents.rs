//! What kernel events cost: `cargo bench -p zpulse-tests --bench zevents [-- --quick]`.
//!
//! The events are the real kernel's: every packed nvlist the lab recorded
//! (`fixtures/lab/events/*/*/zevents/`, OpenZFS 2.1: checksum, data and delay reports,
//! statechanges, scans, pool and history events), cycled to 10,000. Each stage is measured
//! on the whole set, as CPU time of the process (every thread, the plugin lane included):
//!
//! * **decode** — the packed nvlist into a `ZEvent` (what the reader does per event);
//! * **+ record** — and the record every sink gets (`ZEvent::to_event`);
//! * **+ checks** — and the batches handed to the shipped checks through the real plugin host
//!   (`PluginHost::deliver`, 1,024 at a time as the reader hands them on): each event encoded
//!   once, the `zevents` check's `on_event` on its lane, its findings back.
//!
//! It prints events per second of CPU for each, against the 10,000 a second a burst must be
//! read at without falling behind, with the load average beside it. What an idle queue costs
//! is not measured here: the reader then waits inside the kernel (`ZFS_IOC_EVENTS_NEXT`
//! without `ZEVENT_NONBLOCK`) and makes no call at all; `tests/lab/scenarios/events-live.sh`
//! traces the live agent's ioctls over an idle stretch to show it.

use std::path::PathBuf;
use std::time::Duration;
use zpulse_agent::capture;
use zpulse_agent::sources::zevent::{BATCH_MAX, decode};
use zpulse_proto::ZEvent;
use zpulse_tests::{CHECKS_PACKAGE, build_libs_into_test_target, fixture, start_shipped_checks};

const EVENTS: usize = 10_000;
/// The rate a burst must be read at (issue: 10,000 events a second).
const TARGET_PER_S: f64 = 10_000.0;

fn cpu_now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Every event the lab recorded, as the kernel packed it.
fn recorded() -> Vec<Vec<u8>> {
    let lab = fixture("lab/events");
    let mut packed = Vec::new();
    let mut phases: Vec<PathBuf> = std::fs::read_dir(&lab)
        .expect("fixtures/lab/events")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    phases.sort();
    for phase in phases {
        for dir in capture::series(&phase).unwrap_or_default() {
            packed.extend(capture::load_zevents(&dir).packed);
        }
    }
    assert!(
        !packed.is_empty(),
        "no recorded events under {}",
        lab.display()
    );
    packed
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 1 } else { 5 };
    let recorded = recorded();
    let packed: Vec<&[u8]> = recorded
        .iter()
        .map(Vec::as_slice)
        .cycle()
        .take(EVENTS)
        .collect();
    println!(
        "kernel events: {EVENTS} (the lab's {} recorded events, cycled); load average {}",
        recorded.len(),
        load_average()
    );
    let profile = build_libs_into_test_target(&[CHECKS_PACKAGE], false);
    let mut host = start_shipped_checks(&profile, "bench");

    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut decode_t = Vec::new();
    let mut record_t = Vec::new();
    let mut checks_t = Vec::new();
    let mut findings = 0;
    for _ in 0..rounds {
        let start = cpu_now();
        let events: Vec<ZEvent> = packed.iter().map(|p| decode::decode(p).unwrap()).collect();
        decode_t.push(cpu_now() - start);
        drop(events);

        let start = cpu_now();
        let events: Vec<ZEvent> = packed
            .iter()
            .map(|p| decode::decode(p).unwrap())
            .collect::<Vec<_>>();
        let records: usize = events.iter().map(|z| z.to_event().data.len()).sum();
        record_t.push(cpu_now() - start);
        assert!(records > 0);

        let start = cpu_now();
        let events: Vec<ZEvent> = packed.iter().map(|p| decode::decode(p).unwrap()).collect();
        for z in &events {
            std::hint::black_box(z.to_event());
        }
        for batch in events.chunks(BATCH_MAX) {
            findings += host.deliver(batch).events.len();
        }
        checks_t.push(cpu_now() - start);
        drop(events);
    }
    host.shutdown();
    println!(
        "{:<28} {:>12} {:>14} {:>10}",
        "stage", "CPU", "events/s", "× 10,000/s"
    );
    for (name, t) in [
        ("decode", median(decode_t)),
        ("+ record", median(record_t)),
        ("+ checks (plugin host)", median(checks_t)),
    ] {
        let per_s = EVENTS as f64 / t.as_secs_f64();
        println!(
            "{name:<28} {:>10.1}ms {:>14.0} {:>10.1}",
            t.as_secs_f64() * 1e3,
            per_s,
            per_s / TARGET_PER_S
        );
    }
    println!("findings and updates the checks sent over all rounds: {findings}");
}
