//! The two ways a plugin receives a sample (ABI 1.4) give the same findings: the shipped
//! checks, built with the agent, read its own `Sample` (their layout fingerprint is the
//! agent's); any other plugin decodes the MessagePack the agent encodes for it. On every lab
//! series, each check raises exactly the same records either way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use zpulse_agent::plugins::PluginHost;
use zpulse_proto::Entry;
use zpulse_proto::event::Kind;
use zpulse_tests::raw::{load, samples};
use zpulse_tests::{CHECKS_PACKAGE, build_libs_into_test_target, fixture, start_shipped_checks};

/// Every lab directory holding a numbered series (`000`, `001`, …).
fn lab_series() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut subdirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        subdirs.sort();
        if subdirs.iter().any(|p| p.ends_with("000")) {
            out.push(dir.to_path_buf());
            return;
        }
        for sub in subdirs {
            walk(&sub, out);
        }
    }
    let mut out = Vec::new();
    walk(&fixture("lab"), &mut out);
    out
}

fn replay(host: &mut PluginHost, series: &Path) -> Vec<Entry> {
    let dirs = zpulse_agent::capture::series(series).expect("a capture series");
    let mut events = Vec::new();
    for sample in samples(&load(&dirs)) {
        events.extend(host.run(&Arc::new(sample)).events);
    }
    events
}

#[test]
fn a_native_sample_and_its_messagepack_raise_the_same_findings_on_every_lab_series() {
    let profile = build_libs_into_test_target(&[CHECKS_PACKAGE], false);
    let mut native = start_shipped_checks(&profile, "lab");
    let mut messagepack = start_shipped_checks(&profile, "lab");
    messagepack.messagepack_only();
    // The comparison means something only if the shipped checks do take the native path.
    for p in native.plugins() {
        assert_eq!(p.delivery(), "native", "{}", p.path.display());
    }
    let series = lab_series();
    assert!(series.len() >= 15, "lab series found: {series:?}");
    let mut findings = 0;
    for dir in &series {
        let want = replay(&mut messagepack, dir);
        let got = replay(&mut native, dir);
        assert!(
            want.iter().all(|e| e.event.kind != Kind::Agent),
            "{}: {want:?}",
            dir.display()
        );
        assert_eq!(got.len(), want.len(), "{}: number of events", dir.display());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{}: event {i}", dir.display());
        }
        findings += want.len();
    }
    // Findings were raised at all (a degraded pool, errors, a full pool among the series).
    assert!(findings > 20, "{findings} events in all");
    native.shutdown();
    messagepack.shutdown();
}
