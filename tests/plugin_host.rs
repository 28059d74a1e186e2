//! The plugin host against real shared objects: the template plugin (Rust), a C plugin, and
//! plugins that panic, hang, emit garbage or flood (`tests/plugins/*`). In every case the
//! host keeps running, reports the problem once, and the other plugins' events still arrive.
//!
//! The cdylibs are built once per test run, by `cargo build` into the same target directory
//! as this test (so nothing is compiled twice), and the C plugin with the system's C compiler.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use zpulse_agent::base::clock::{Clock, ManualClock};
use zpulse_agent::config::{self, PluginSettings};
use zpulse_agent::plugins::{Extra, Output, PluginHost, Status};
use zpulse_proto::event::{Kind, Severity, State, Value};
use zpulse_proto::{Entry, Sample, abi, sdk};
use zpulse_tests::workspace;

/// Where the built plugins are.
struct Built {
    /// `target/<profile>`: the Rust cdylibs and the `zpulse` binary.
    profile_dir: PathBuf,
    /// The C plugin, and the same built claiming ABI 2.
    hello_c: PathBuf,
    hello_c_abi2: PathBuf,
    /// The same, whose ABI 1.4 `sample_layout` never returns.
    hello_c_layout_hang: PathBuf,
    /// The guide's C example that reads the sample with msgpack-c.
    busy_disks_c: PathBuf,
    /// ABI 1.5 bundles built from the C plugin: hello-c, hello-c-twin and a bad name; one that
    /// never answers null; one exporting the entry point too.
    hello_c_bundle: PathBuf,
    hello_c_bundle_endless: PathBuf,
    hello_c_both: PathBuf,
    /// The bundle whose first plugin holds its first sample until the test releases it.
    hello_c_bundle_sleepy: PathBuf,
    /// Where that plugin says it has entered the call (`entered`) and waits for `release`.
    sleepy_gate: PathBuf,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profile_dir = zpulse_tests::build_into_test_target(&[
            "zpulse-plugin-template",
            "zpulse-test-plugin-panics",
            "zpulse-test-plugin-hangs",
            "zpulse-test-plugin-noisy",
        ]);
        let target_dir = profile_dir.parent().unwrap();
        let c_dir = target_dir.join("plugin-tests-c");
        std::fs::create_dir_all(&c_dir).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let compile = |out: &Path, defines: &[&str]| {
            let status = Command::new(&cc)
                .args([
                    "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                ])
                .args(defines)
                .arg("-I")
                .arg(workspace().join("proto/include"))
                .arg("-o")
                .arg(out)
                .arg(workspace().join("tests/plugins/c/hello.c"))
                .status()
                .expect("running the C compiler");
            assert!(status.success(), "compiling hello.c failed");
        };
        let hello_c = c_dir.join("libhello_c.so");
        let hello_c_abi2 = c_dir.join("libhello_c_abi2.so");
        compile(&hello_c, &[]);
        compile(
            &hello_c_abi2,
            &["-DHELLO_ABI_MAJOR=2", "-DHELLO_ABI_MINOR=0"],
        );
        let hello_c_layout_hang = c_dir.join("libhello_c_layout_hang.so");
        compile(&hello_c_layout_hang, &["-DHELLO_LAYOUT_HANG"]);
        let hello_c_bundle = c_dir.join("libhello_c_bundle.so");
        compile(&hello_c_bundle, &["-DHELLO_BUNDLE"]);
        let hello_c_bundle_endless = c_dir.join("libhello_c_bundle_endless.so");
        compile(&hello_c_bundle_endless, &["-DHELLO_BUNDLE_ENDLESS"]);
        let hello_c_both = c_dir.join("libhello_c_both.so");
        compile(&hello_c_both, &["-DHELLO_BOTH"]);
        // The gate's path is compiled into the plugin: one of this process's own, so that two
        // runs of these tests on one machine cannot open each other's gate.
        let sleepy_gate = c_dir.join(format!("sleepy-gate-{}", std::process::id()));
        std::fs::create_dir_all(&sleepy_gate).unwrap();
        let hello_c_bundle_sleepy = sleepy_gate.join("libhello_c_bundle_sleepy.so");
        compile(
            &hello_c_bundle_sleepy,
            &[
                "-DHELLO_BUNDLE",
                &format!("-DHELLO_BUNDLE_FIRST_WAITS_IN={:?}", sleepy_gate.display().to_string()),
            ],
        );
        // As docs/plugin-authoring.md builds it: msgpack-c's flags from pkg-config.
        let msgpack = Command::new("pkg-config")
            .args(["--cflags", "--libs", "msgpack"])
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run pkg-config ({e}): install pkg-config and libmsgpack-dev (tests/run does)")
            });
        assert!(
            msgpack.status.success(),
            "pkg-config knows no msgpack: install libmsgpack-dev (tests/run does): {}",
            String::from_utf8_lossy(&msgpack.stderr)
        );
        let busy_disks_c = c_dir.join("libbusy_disks_c.so");
        let status = Command::new(&cc)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I"])
            .arg(workspace().join("proto/include"))
            .arg("-o")
            .arg(&busy_disks_c)
            .arg(workspace().join("tests/plugins/c/busy_disks.c"))
            .args(String::from_utf8_lossy(&msgpack.stdout).split_whitespace())
            .status()
            .expect("running the C compiler");
        assert!(status.success(), "compiling busy_disks.c failed");
        Built {
            profile_dir,
            hello_c,
            hello_c_abi2,
            hello_c_layout_hang,
            busy_disks_c,
            hello_c_bundle,
            hello_c_bundle_endless,
            hello_c_both,
            hello_c_bundle_sleepy,
            sleepy_gate,
        }
    })
}

/// A Rust test plugin by crate name, e.g. `zpulse_test_plugin_noisy`.
fn rust_plugin(lib: &str) -> PathBuf {
    built().profile_dir.join(format!("lib{lib}.so"))
}

const TEMPLATE: &str = "zpulse_plugin_template";

/// A private plugin directory holding copies of `plugins` (source path, file name).
struct PluginDir {
    dir: tempfile::TempDir,
}

impl PluginDir {
    fn new(plugins: &[(&Path, &str)]) -> PluginDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        for (src, name) in plugins {
            let dst = dir.path().join(name);
            std::fs::copy(src, &dst).unwrap();
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        PluginDir { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The config `toml` (plugin tables and limits), with this directory as the plugin dir.
    fn settings(&self, toml: &str) -> PluginSettings {
        let file = self.dir.path().join("zpulse.toml");
        let text = format!("[plugins]\ndirs = [{:?}]\n{toml}", self.dir.path());
        std::fs::write(&file, &text).unwrap();
        config::parse(&text, &file).unwrap().plugins
    }

    fn start(&self, toml: &str) -> PluginHost {
        PluginHost::start(&self.settings(toml), &Extra::default(), "lab-host")
    }
}

/// The real sample between the two lab captures.
fn sample() -> Arc<Sample> {
    static SAMPLE: OnceLock<Arc<Sample>> = OnceLock::new();
    Arc::clone(SAMPLE.get_or_init(|| {
        let series = zpulse_tests::fixture("lab/basic");
        let a = zpulse_agent::capture::load(&series.join("000")).unwrap();
        let b = zpulse_agent::capture::load(&series.join("001")).unwrap();
        Arc::new(Sample::between(&a, &b).unwrap())
    }))
}

/// The same sample, `n` intervals later.
fn sample_n(n: u32) -> Arc<Sample> {
    let mut s = Sample::clone(&sample());
    s.end += f64::from(n) * s.interval;
    Arc::new(s)
}

fn from(out: &Output, check: &str) -> Vec<Entry> {
    out.events
        .iter()
        .filter(|e| e.event.check == check)
        .cloned()
        .collect()
}

fn agent(out: &Output, check: &str) -> Vec<Entry> {
    from(out, check)
        .into_iter()
        .filter(|e| e.event.kind == Kind::Agent)
        .collect()
}

fn status_of(host: &PluginHost, label: &str) -> Status {
    host.plugins()
        .into_iter()
        .find(|p| p.label() == label)
        .unwrap_or_else(|| panic!("no plugin {label} in {:?}", host.plugins()))
        .status
}

/// The C plugin answered this run: the proof that the other plugins keep going.
fn assert_hello(out: &Output, samples: u64) {
    let hello = from(out, "hello-c");
    assert_eq!(hello.len(), 1, "hello-c events: {:?}", out.events);
    assert_eq!(hello[0].event.data["samples"], Value::UInt(samples));
}

#[test]
fn good_rust_and_c_plugins_load_and_emit() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin(TEMPLATE), "libtemplate.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    // Thresholds at 0: every whole disk of the capture is "busy", so the check raises.
    let mut host = dir.start("[plugins.template]\nbusy_pct = 0\nclear_pct = 0\nraise_after = 1\n");
    let infos = host.plugins();
    assert_eq!(infos.len(), 2);
    for p in &infos {
        assert_eq!(p.status, Status::Loaded, "{p:?}");
        // Both are built against this tree's ABI (the Rust SDK and the C header).
        assert_eq!(p.abi, Some((abi::ABI_MAJOR, abi::ABI_MINOR)));
    }
    let c = infos
        .iter()
        .find(|p| p.name.as_deref() == Some("hello-c"))
        .unwrap();
    assert_eq!(c.version.as_deref(), Some("1.0.0"));
    let t = infos
        .iter()
        .find(|p| p.name.as_deref() == Some("template"))
        .unwrap();
    assert_eq!(t.version.as_deref(), Some("0.1.0"));
    assert_eq!(
        t.build_info.as_deref(),
        Some("zpulse-plugin-template 0.1.0")
    );

    let s = sample();
    let out = host.run(&s);
    assert!(
        out.events.iter().all(|e| e.event.kind != Kind::Agent),
        "{:?}",
        out.events
    );
    let findings = from(&out, "template");
    let mut subjects: Vec<&str> = findings.iter().map(|e| e.event.subject.as_str()).collect();
    subjects.sort();
    // The lab's pool disks and system disk: whole disks only (no partitions, no loop devices,
    // no floppy).
    assert_eq!(
        subjects,
        ["sda", "sdb", "sdc", "sdd", "sde", "sdf", "vda"],
        "{findings:?}"
    );
    for e in &findings {
        assert_eq!(e.event.state, Some(State::Raised));
        assert_eq!(e.event.severity, Severity::Warning);
        assert_eq!(e.event.host, "lab-host");
        assert_eq!(e.time.seconds, s.end as u32);
        assert!(
            e.event
                .summary
                .starts_with(&format!("{} was busy", e.event.subject))
        );
        assert!(e.event.validate().is_ok());
    }
    let hello = from(&out, "hello-c");
    assert_eq!(hello.len(), 1);
    let bytes = match hello[0].event.data["sample_bytes"] {
        Value::UInt(n) => n,
        ref v => panic!("{v:?}"),
    };
    assert_eq!(bytes as usize, sdk::encode_sample(&s).len());
    assert!(
        out.logs
            .iter()
            .any(|l| l.source == "hello-c" && l.message == "hello from C")
    );

    // Stateful: the next sample, with the same figures, raises nothing again.
    let out = host.run(&sample_n(1));
    assert!(from(&out, "template").is_empty(), "{:?}", out.events);
    assert_hello(&out, 2);
    host.shutdown();
}

#[test]
fn a_plugin_of_another_abi_is_refused_naming_both_versions() {
    let b = built();
    let dir = PluginDir::new(&[
        (&b.hello_c_abi2, "libhello_c_abi2.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("");
    let status = status_of(&host, "libhello_c_abi2.so");
    let Status::Refused(why) = status else {
        panic!("{status:?}")
    };
    assert!(
        why.contains("plugin ABI 2.0")
            && why.contains(&format!(
                "agent speaks ABI {}.{}",
                abi::ABI_MAJOR,
                abi::ABI_MINOR
            )),
        "{why}"
    );
    let abi2 = host.plugins().into_iter().find(|p| p.abi == Some((2, 0)));
    assert!(abi2.is_some(), "the refused plugin's ABI is still shown");

    let out = host.run(&sample());
    let refused = agent(&out, "plugin.refused");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].event.subject, "libhello_c_abi2.so");
    assert!(refused[0].event.summary.contains("ABI 2.0"));
    assert!(out.logs.iter().any(|l| l.message.contains("ABI 2.0")));
    assert_hello(&out, 1);
    let out = host.run(&sample_n(1));
    assert!(agent(&out, "plugin.refused").is_empty(), "reported once");
    assert_hello(&out, 2);
}

#[test]
fn a_world_writable_plugin_is_refused_before_it_is_loaded() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin(TEMPLATE), "libtemplate.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let open = dir.path().join("libtemplate.so");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut host = dir.start("");
    let Status::Refused(why) = status_of(&host, "libtemplate.so") else {
        panic!()
    };
    assert!(
        why.contains("libtemplate.so is writable by its group and everyone"),
        "{why}"
    );
    // Refused before dlopen: its name was never read.
    let info = host.plugins().into_iter().find(|p| p.path == open).unwrap();
    assert_eq!(info.name, None);

    let out = host.run(&sample());
    assert_eq!(agent(&out, "plugin.refused").len(), 1);
    assert_hello(&out, 1);
    let out = host.run(&sample_n(1));
    assert!(agent(&out, "plugin.refused").is_empty());
    assert_hello(&out, 2);
}

/// The guide's C example (`tests/plugins/c/busy_disks.c`, msgpack-c) reads the real sample:
/// its figures are those of the sample the Rust side decoded from the lab capture, and a
/// config it refuses is refused at start with its reason.
#[test]
fn a_c_plugin_reads_the_sample_with_msgpack_c() {
    let b = built();
    let dir = PluginDir::new(&[(&b.busy_disks_c, "libbusy_disks_c.so")]);
    let mut host = dir.start("[plugins.busy-disks-c]\nbusy_pct = 0.5\n");
    // Its descriptor claims a sample layout that is not the agent's: MessagePack it is.
    let plugin = &host.plugins()[0];
    assert_eq!(plugin.abi, Some((abi::ABI_MAJOR, abi::ABI_MINOR)));
    assert_eq!(plugin.delivery(), "messagepack");
    let s = sample();
    let out = host.run(&s);
    let events = from(&out, "busy-disks-c");
    assert_eq!(events.len(), 1, "{:?} {:?}", out.events, out.logs);
    let data = &events[0].event.data;
    // The first of the busiest, as the C code keeps it.
    let busiest = s
        .disks
        .iter()
        .fold(
            None,
            |best: Option<&zpulse_proto::sample::DiskRates>, d| match best {
                Some(b) if b.util >= d.util => Some(b),
                _ => Some(d),
            },
        )
        .expect("the lab capture has disks");
    let busy = s.disks.iter().filter(|d| d.util >= 0.5).count();
    assert!(
        busy > 0 && busy < s.disks.len(),
        "the threshold splits the disks"
    );
    assert_eq!(data["disks"], Value::UInt(s.disks.len() as u64));
    assert_eq!(data["busy"], Value::UInt(busy as u64));
    assert_eq!(data["busiest"], Value::Str(busiest.name.clone()));
    assert_eq!(data["busiest_util_pct"], Value::Float(busiest.util));
    host.shutdown();

    let host = dir.start("[plugins.busy-disks-c]\nbusy_pct = 200\n");
    let refused = host
        .plugins()
        .into_iter()
        .find_map(|p| match p.status {
            Status::Refused(why) => Some(why),
            _ => None,
        })
        .expect("busy_pct = 200 is refused");
    assert!(
        refused.contains("busy_pct must be a number from 0 to 100"),
        "{refused}"
    );
}

#[test]
fn a_group_writable_plugin_directory_is_refused() {
    let b = built();
    let dir = PluginDir::new(&[(&b.hello_c, "libhello_c.so")]);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o775)).unwrap();
    let host = PluginHost::start(&dir.settings(""), &Extra::default(), "h");
    let Status::Refused(why) = status_of(&host, "libhello_c.so") else {
        panic!()
    };
    assert!(why.contains("is writable by its group"), "{why}");
}

#[test]
fn a_panicking_plugin_is_disabled_after_max_failures_and_reported_once_each() {
    let b = built();
    // A file name of this test's own: its plugin's thread is named after it.
    let dir = PluginDir::new(&[
        (
            &rust_plugin("zpulse_test_plugin_panics"),
            "libpanics_disabled.so",
        ),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("max_failures = 3\n");
    assert_eq!(threads_named("panics_disabled"), 1);
    assert_eq!(status_of(&host, "panics"), Status::Loaded);
    let mut outs = Vec::new();
    for n in 0..6 {
        let out = host.run(&sample_n(n));
        assert_hello(&out, u64::from(n) + 1);
        outs.push(out);
    }
    let failing: Vec<Entry> = outs
        .iter()
        .flat_map(|o| agent(o, "plugin.failing"))
        .collect();
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert!(
        failing[0]
            .event
            .summary
            .contains("on_sample panicked: deliberate panic with"),
        "{}",
        failing[0].event.summary
    );
    assert_eq!(agent(&outs[0], "plugin.failing").len(), 1);
    let disabled: Vec<Entry> = outs
        .iter()
        .flat_map(|o| agent(o, "plugin.disabled"))
        .collect();
    assert_eq!(disabled.len(), 1);
    assert_eq!(
        agent(&outs[2], "plugin.disabled").len(),
        1,
        "after the third failure"
    );
    assert_eq!(disabled[0].event.severity, Severity::Critical);
    assert!(disabled[0].event.summary.contains("3 failures in a row"));
    let Status::Disabled(why) = status_of(&host, "panics") else {
        panic!()
    };
    assert!(why.contains("panicked"), "{why}");
    // Its last call destroyed the state, and its file's thread ended.
    assert_threads_named("panics_disabled", 0);
    host.shutdown();
}

#[test]
fn a_plugin_that_panics_in_create_is_refused() {
    let b = built();
    let dir = PluginDir::new(&[
        (
            &rust_plugin("zpulse_test_plugin_panics"),
            "libpanics_create.so",
        ),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("[plugins.panics]\nin_create = true\n");
    let Status::Refused(why) = status_of(&host, "panics") else {
        panic!()
    };
    // The message, and where the panic is in the plugin's source (its `new`), on one line.
    assert_eq!(
        why,
        "create panicked: told to panic in create (at tests/plugins/panics/src/lib.rs:27:13)"
    );
    let out = host.run(&sample());
    assert_eq!(agent(&out, "plugin.refused").len(), 1);
    assert_hello(&out, 1);
    // A file whose only plugin was refused keeps no thread.
    assert_threads_named("panics_create", 0);
}

/// A plugin whose ABI 1.4 layout query never returns is a plugin whose `create` hangs: it is
/// marked hung once the budget passes, and the others start and run without waiting for it.
/// The budget is kept on a manual clock, moved past it only once the host waits for the hung
/// plugin alone.
#[test]
fn a_sample_layout_that_never_returns_costs_only_that_plugin() {
    let b = built();
    let dir = PluginDir::new(&[
        (&b.hello_c_layout_hang, "libhello_c_layout_hang.so"),
        (&rust_plugin(TEMPLATE), "libtemplate.so"),
    ]);
    let settings = dir.settings("budget = \"400ms\"\n");
    let clock = Arc::new(ManualClock::default());
    // The host waits for both creates (its first wait), then, the template's done (however
    // early: its report is read in that wait), for the hanging one alone (its second).
    let driver = {
        let clock = Arc::clone(&clock);
        std::thread::spawn(move || {
            clock.until_waits(2);
            clock.advance(Duration::from_millis(400));
        })
    };
    let mut host = start_on_clock(&settings, &clock);
    driver.join().unwrap();
    match status_of(&host, "hello-c") {
        Status::Hung(why) => assert!(why.contains("create has been running"), "{why}"),
        other => panic!("hello-c: {other:?}"),
    }
    let template = status_of(&host, "template");
    assert_eq!(template, Status::Loaded);
    // The clock stands still now: were the host to wait for the hung plugin, it would wait
    // for ever; it answers once the template has.
    let out = host.run(&sample_n(0));
    let hung = agent(&out, "plugin.hung");
    assert_eq!(hung.len(), 1, "{:?}", out.events);
    assert_eq!(hung[0].event.subject, "hello-c");
    assert!(matches!(status_of(&host, "hello-c"), Status::Hung(_)));
    // Shut down without waiting for the thread that never comes back.
    host.shutdown();
}

/// The budget is kept on a manual clock: the plugin is hung because the test moved the clock
/// past the budget while the call was in hand, not because a sleep outlasted a real one.
#[test]
fn a_hung_plugin_is_skipped_until_it_returns_and_never_blocks_the_caller() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin("zpulse_test_plugin_hangs"), "libhangs.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let budget = Duration::from_millis(400);
    let entered = dir.path().join("entered");
    let release = dir.path().join("release");
    let settings = dir.settings(&format!(
        "budget = \"400ms\"\n[plugins.hangs]\nhang_samples = [1]\nentered_file = {:?}\n\
         release_file = {:?}\n",
        entered, release
    ));
    let clock = Arc::new(ManualClock::default());
    let mut host = start_on_clock(&settings, &clock);
    let hangs_events = |out: &Output| -> Vec<String> {
        from(out, "hangs")
            .iter()
            .filter(|e| e.event.kind == Kind::Metrics)
            .map(|e| e.event.summary.clone())
            .collect()
    };

    // Sample 1: the host waits for both plugins (its first wait), then, hello-c answered,
    // for the hanging one alone (its second). Once the plugin is in its call, the budget
    // passes on the clock: the caller gets its answer with the plugin hung.
    let waits = clock.waits();
    let driver = {
        let (clock, entered) = (Arc::clone(&clock), entered.clone());
        std::thread::spawn(move || {
            clock.until_waits(waits + 2);
            wait_for(|| entered.exists(), "the plugin to start its hang");
            clock.advance(budget);
        })
    };
    let out = host.run(&sample_n(0));
    driver.join().unwrap();
    assert_hello(&out, 1);
    assert!(hangs_events(&out).is_empty());
    let hung = agent(&out, "plugin.hung");
    assert_eq!(hung.len(), 1);
    assert_eq!(hung[0].event.state, Some(State::Raised));
    assert!(
        hung[0]
            .event
            .summary
            .contains("on_sample has been running for more than 0.4 s")
    );
    assert!(matches!(status_of(&host, "hangs"), Status::Hung(_)));

    // Sample 2, the clock standing still: the plugin is skipped and nothing is reported
    // again; the call returns as soon as hello-c has answered (were the host waiting for the
    // hung plugin, it would wait for a clock that does not move).
    let out = host.run(&sample_n(1));
    assert_hello(&out, 2);
    assert!(hangs_events(&out).is_empty());
    assert!(agent(&out, "plugin.hung").is_empty());

    // After it returns: what it emitted late arrives, it runs again, and the finding clears.
    let mut late = release_and_wait(&mut host, &release, |out| !hangs_events(out).is_empty());
    let out = host.run(&sample_n(2));
    assert_hello(&out, 3);
    late.push(out);
    let events: Vec<String> = late.iter().flat_map(hangs_events).collect();
    assert_eq!(events, ["sample 1", "sample 2"]);
    let hung: Vec<Entry> = late.iter().flat_map(|o| agent(o, "plugin.hung")).collect();
    assert_eq!(hung.len(), 1);
    assert_eq!(hung[0].event.state, Some(State::Cleared));
    assert!(
        late.iter()
            .flat_map(|o| &o.logs)
            .any(|l| l.message.starts_with("on_sample returned after 0.4 s")),
        "{late:?}"
    );
    assert_eq!(status_of(&host, "hangs"), Status::Loaded);
    host.shutdown();
}

/// A host of `settings` whose budget is kept on `clock`.
fn start_on_clock(settings: &PluginSettings, clock: &Arc<ManualClock>) -> PluginHost {
    PluginHost::start_on(
        settings,
        &Extra::default(),
        "lab-host",
        None,
        Arc::clone(clock) as Arc<dyn Clock>,
    )
}

/// Lets a plugin held in its call return (creates `release`, the file it waits for) and
/// gathers the host's output until `returned` sees what it sent late.
fn release_and_wait(
    host: &mut PluginHost,
    release: &Path,
    returned: impl Fn(&Output) -> bool,
) -> Vec<Output> {
    std::fs::write(release, b"").unwrap();
    let mut late = Vec::new();
    wait_for(
        || {
            let out = host.take_output();
            let back = returned(&out);
            late.push(out);
            back
        },
        "the plugin's late return",
    );
    late
}

/// Polls `done` until it holds; fails the test after a minute (a guard, not a timing).
fn wait_for(mut done: impl FnMut() -> bool, what: &str) {
    let guard = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < guard, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn garbage_events_are_dropped_and_reported_once() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin("zpulse_test_plugin_noisy"), "libnoisy.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("max_event_bytes = 8192\n[plugins.noisy]\ngarbage = true\n");
    let mut reports = 0;
    for n in 0..3 {
        let out = host.run(&sample_n(n));
        assert_hello(&out, u64::from(n) + 1);
        let noisy: Vec<Entry> = from(&out, "noisy");
        // Only the good event of each sample got through.
        assert_eq!(noisy.len(), 1, "{noisy:?}");
        assert_eq!(noisy[0].event.summary, format!("good event {}", n + 1));
        let invalid = agent(&out, "plugin.invalid-event");
        if n == 0 {
            assert_eq!(invalid.len(), 1);
            // The first bad record's reason, and how many were dropped in that sample.
            assert!(
                invalid[0]
                    .event
                    .summary
                    .contains("not a MessagePack event record"),
                "{}",
                invalid[0].event.summary
            );
            assert_eq!(invalid[0].event.data["dropped"], Value::UInt(5));
        }
        reports += invalid.len();
    }
    assert_eq!(reports, 1);
    assert_eq!(status_of(&host, "noisy"), Status::Loaded);
}

#[test]
fn a_flood_is_rate_limited_and_reported_once() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin("zpulse_test_plugin_noisy"), "libnoisy.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("max_events_per_sample = 100\n[plugins.noisy]\nflood = 20000\n");
    let mut reports = 0;
    for n in 0..3 {
        let out = host.run(&sample_n(n));
        assert_hello(&out, u64::from(n) + 1);
        assert_eq!(from(&out, "noisy").len(), 100);
        reports += agent(&out, "plugin.rate-limited").len();
    }
    assert_eq!(reports, 1);
}

#[test]
fn an_invalid_plugin_config_is_refused_naming_file_line_and_key() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin(TEMPLATE), "libtemplate.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    // Line 3 of the file: [plugins] and dirs come first.
    let mut host = dir.start("[plugins.template]\nbusy_pct = \"high\"\n");
    let Status::Refused(why) = status_of(&host, "template") else {
        panic!()
    };
    assert!(why.ends_with(
        "zpulse.toml:3: [plugins.template] is invalid: busy_pct: invalid type: string \"high\", expected f64"
    ), "{why}");
    let out = host.run(&sample());
    assert_eq!(agent(&out, "plugin.refused").len(), 1);
    assert_hello(&out, 1);

    let host = dir.start("[plugins.template]\nbusy_pc = 90\n");
    let Status::Refused(why) = status_of(&host, "template") else {
        panic!()
    };
    assert!(why.contains("unknown field `busy_pc`"), "{why}");
    // A config the plugin's own checks refuse.
    let host = dir.start("[plugins.template]\nbusy_pct = 50\nclear_pct = 60\n");
    let Status::Refused(why) = status_of(&host, "template") else {
        panic!()
    };
    // Refused by its declared settings before it is built, as a config error naming the key.
    assert!(
        why.contains(
            "[plugins.template] is invalid: clear_pct: must be at most busy_pct (50), not 60"
        ),
        "{why}"
    );
}

#[test]
fn two_plugins_of_one_name_load_once() {
    let dir = PluginDir::new(&[
        (&rust_plugin(TEMPLATE), "liba.so"),
        (&rust_plugin(TEMPLATE), "libb.so"),
    ]);
    let host = dir.start("");
    assert_eq!(status_of(&host, "template"), Status::Loaded);
    let Status::Refused(why) = &host.plugins()[1].status else {
        panic!()
    };
    assert!(
        why.contains("a plugin named template is already loaded from"),
        "{why}"
    );
}

#[test]
fn a_real_sample_round_trips_through_messagepack() {
    let s = sample();
    let bytes = sdk::encode_sample(&s);
    let back = sdk::decode_sample(&bytes).unwrap();
    // Byte-identical re-encoding, and the same JSON: nothing lost, absent stays absent.
    assert_eq!(sdk::encode_sample(&back), bytes);
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&*s).unwrap()
    );
    assert_eq!(back.disks, s.disks);
    assert_eq!(back.arc, s.arc);
}

/// `zpulse`, as built for these tests.
fn zpulse(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(built().profile_dir.join("zpulse"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_plugins_lists_name_version_abi_path_and_status() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin(TEMPLATE), "libtemplate.so"),
        (&b.hello_c_abi2, "libhello_c_abi2.so"),
    ]);
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let d = dir.path().to_str().unwrap();
    let (ok, stdout, stderr) = zpulse(&[
        "plugins",
        "--config",
        config.to_str().unwrap(),
        "--plugin-dir",
        d,
    ]);
    assert!(!ok, "a refused plugin makes the exit status 1");
    assert!(
        stderr.contains("1 of 2 plugins are not running"),
        "{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("ABI") && lines[0].ends_with("PATH"));
    assert!(lines[0].contains(" SAMPLE "), "{}", lines[0]);
    let abi2 = lines
        .iter()
        .position(|l| l.starts_with("libhello_c_abi2.so"))
        .unwrap();
    assert!(lines[abi2].contains(" 2.0 ") && lines[abi2].contains("refused"));
    assert!(lines[abi2 + 1].trim_start().starts_with("plugin ABI 2.0"));
    let template = lines.iter().find(|l| l.starts_with("template")).unwrap();
    let version = format!("{}.{}", abi::ABI_MAJOR, abi::ABI_MINOR);
    // Built by this workspace with the agent: it reads the agent's own sample.
    for part in ["0.1.0", &version, "loaded", "native", "libtemplate.so"] {
        assert!(template.contains(part), "{template}");
    }

    let (_, json, _) = zpulse(&[
        "plugins",
        "--format",
        "json",
        "--config",
        config.to_str().unwrap(),
        "--plugin-dir",
        d,
    ]);
    let listed: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(listed.len(), 2);
    assert!(
        listed
            .iter()
            .any(|p| p["name"] == "template" && p["status"] == "loaded" && p["sample"] == "native")
    );
}

#[test]
fn cli_replay_prints_plugin_events_with_the_samples() {
    let b = built();
    let dir = PluginDir::new(&[(&b.hello_c, "libhello_c.so")]);
    let config = dir.path().join("zpulse.toml");
    std::fs::write(&config, "hostname = \"replayed\"\n").unwrap();
    let series = zpulse_tests::fixture("lab/basic");
    let plugin = dir.path().join("libhello_c.so");
    let (ok, stdout, stderr) = zpulse(&[
        "replay",
        series.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--plugin",
        plugin.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(ok, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "one sample, one event");
    assert!(lines[0].get("interval").is_some());
    assert_eq!(lines[1]["tag"], "zpulse.metrics");
    assert_eq!(lines[1]["record"]["check"], "hello-c");
    assert_eq!(lines[1]["record"]["host"], "replayed");
    assert_eq!(
        lines[1]["time"].as_f64().unwrap() as u64,
        lines[0]["end"].as_f64().unwrap() as u64
    );
    assert!(stderr.contains("hello-c: hello from C"), "{stderr}");

    let (ok, text, _) = zpulse(&[
        "replay",
        series.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--plugin-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(ok);
    assert!(
        text.contains("Events\n  [info metrics] hello-c host: hello from C\n"),
        "{text}"
    );

    // Without an interval, `once` has no sample to give plugins: it says so.
    let (ok, _, stderr) = zpulse(&["once", "--plugin", plugin.to_str().unwrap()]);
    assert!(!ok && stderr.contains("add --interval"), "{stderr}");
}

/// The config the tests write is what `config::parse` accepts (keeps `PluginDir` honest).
#[test]
fn plugin_tables_reach_the_host_as_written() {
    let dir = PluginDir::new(&[]);
    let s = dir.settings("[plugins.template]\nbusy_pct = 1\n");
    let tables: BTreeMap<_, _> = s
        .tables
        .iter()
        .map(|(k, v)| (k.clone(), v.origin.clone()))
        .collect();
    assert!(tables["template"].ends_with("zpulse.toml:3"), "{tables:?}");
}

/// `zpulse replay` with a plugin that was refused still prints what the others found, and
/// exits non-zero naming it: a replay that silently ran fewer checks is not a pass.
#[test]
fn replay_exits_non_zero_when_a_plugin_did_not_run() {
    let b = built();
    let zpulse = zpulse_tests::build_bin("zpulse-agent", "zpulse");
    let dir = PluginDir::new(&[
        (&rust_plugin(TEMPLATE), "libtemplate.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let series = zpulse_tests::fixture("lab/basic");
    let replay = || {
        Command::new(&zpulse)
            .args(["replay", "--plugin-dir"])
            .arg(dir.path())
            .arg(&series)
            .output()
            .unwrap()
    };
    let all = replay();
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    std::fs::set_permissions(
        dir.path().join("libtemplate.so"),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    let one_refused = replay();
    let stderr = String::from_utf8_lossy(&one_refused.stderr);
    assert_eq!(one_refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 of 2 plugins did not run to the end"),
        "{stderr}"
    );
    assert!(stderr.contains("libtemplate.so refused"), "{stderr}");
    assert!(String::from_utf8_lossy(&one_refused.stdout).contains("hello from C"));
}

#[test]
fn plugins_contribute_to_a_report_through_the_abi() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin(TEMPLATE), "libtemplate.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("");
    let (sections, out) = report_after_three_samples(&mut host);
    // The template's sections: one per whole disk of the window, each with its %util.
    let whole = &window_of_three().whole;
    let disks: Vec<&str> = whole
        .disks
        .iter()
        .filter(|d| d.whole_disk.is_none() && !d.virtual_device)
        .map(|d| d.name.as_str())
        .collect();
    let template: Vec<&str> = sections
        .iter()
        .filter(|s| s.check == "template")
        .filter_map(|s| s.subject.as_deref())
        .collect();
    assert_eq!(template, disks, "{sections:?}");
    let hello: Vec<_> = sections.iter().filter(|s| s.check == "hello-c").collect();
    assert_eq!(hello.len(), 1, "{sections:?} {:?}", out.logs);
    let s = hello[0];
    assert_eq!(s.title, "hello from C");
    // The figures the C code computed: the samples it saw, the window it was given, and the
    // status the agent returned for its section without a title (ZPULSE_EMIT_INVALID).
    assert_eq!(s.get("samples"), Some(3.0));
    let sent = sdk::encode_window_for(&window_of_three(), 0).len();
    assert_eq!(s.get("window_bytes"), Some(sent as f64));
    assert_eq!(s.get("refused_status"), Some(f64::from(abi::EMIT_INVALID)));
    // The refused section is reported, once, as an invalid section of that plugin, in words
    // that read as one sentence.
    let refused: Vec<_> = out
        .events
        .iter()
        .filter(|e| e.event.check == "plugin.invalid-section" && e.event.subject == "hello-c")
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", out.events);
    assert!(
        refused[0].event.summary.starts_with(
            "plugin hello-c gave an invalid report section, which was left out of the report: "
        ),
        "{}",
        refused[0].event.summary
    );
}

/// The samples `sample_n(0..3)` through `host`, then the report over their window: the
/// sections and what the report call produced.
fn report_after_three_samples(
    host: &mut PluginHost,
) -> (Vec<zpulse_proto::report::Section>, Output) {
    for n in 0..3 {
        host.run(&sample_n(n));
    }
    host.report_window(&window_of_three())
}

/// A report window over the three samples `sample_n(0..3)`.
fn window_of_three() -> zpulse_proto::report::ReportWindow {
    zpulse_proto::report::ReportWindow {
        from: sample_n(0).start,
        to: sample_n(2).end,
        intervals: 3,
        whole: Sample::clone(&sample()),
        ..Default::default()
    }
}

#[test]
fn a_report_that_hangs_costs_only_that_plugin_its_late_sections() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin("zpulse_test_plugin_hangs"), "libhangs.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("budget = \"400ms\"\n[plugins.hangs]\nreport_hang_ms = 2500\n");
    let (sections, out) = report_after_three_samples(&mut host);
    // The C plugin's section, and what the hung one gave before it hung; nothing after.
    let titles: Vec<(&str, &str)> = sections
        .iter()
        .map(|s| (s.check.as_str(), s.title.as_str()))
        .collect();
    assert_eq!(
        titles,
        [("hangs", "before the hang"), ("hello-c", "hello from C")],
        "{:?}",
        out.logs
    );
    let hung = agent(&out, "plugin.hung");
    assert_eq!(hung.len(), 1, "{:?}", out.events);
    assert!(
        hung[0]
            .event
            .summary
            .contains("report has been running for more than 0.4 s"),
        "{}",
        hung[0].event.summary
    );
    assert!(matches!(status_of(&host, "hangs"), Status::Hung(_)));
    host.shutdown();
}

#[test]
fn sections_past_the_limit_are_left_out_and_that_is_said_once() {
    let b = built();
    let dir = PluginDir::new(&[
        (&rust_plugin("zpulse_test_plugin_noisy"), "libnoisy.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("[plugins.noisy]\nsections = 40\n");
    let (sections, out) = report_after_three_samples(&mut host);
    let noisy: Vec<&str> = sections
        .iter()
        .filter(|s| s.check == "noisy")
        .map(|s| s.title.as_str())
        .collect();
    // The first SECTIONS_PER_PLUGIN, in the order given.
    let want: Vec<String> = (0..zpulse_proto::report::SECTIONS_PER_PLUGIN)
        .map(|i| format!("section {i}"))
        .collect();
    assert_eq!(noisy, want);
    assert!(sections.iter().any(|s| s.check == "hello-c"));
    let truncated = agent(&out, "plugin.report-truncated");
    assert_eq!(truncated.len(), 1, "{:?}", out.events);
    assert_eq!(truncated[0].event.data["dropped"], Value::UInt(40 - 32));
    assert!(agent(&out, "plugin.rate-limited").is_empty());
    assert_eq!(status_of(&host, "noisy"), Status::Loaded);
}

/// ABI 1.5: a bundle's plugins are plugins of their own — each created with its own state,
/// each with its own thread and log source — and a bad one among them costs only itself.
#[test]
fn each_plugin_of_a_bundle_runs_on_its_own_and_a_bad_one_costs_only_itself() {
    let b = built();
    let dir = PluginDir::new(&[(&b.hello_c_bundle, "libhello_c_bundle.so")]);
    let mut host = dir.start("");
    let infos = host.plugins();
    let labels: Vec<String> = infos.iter().map(|p| p.label()).collect();
    assert_eq!(
        labels,
        ["hello-c", "hello-c-twin", "libhello_c_bundle.so[2]"],
        "hello.c's bundle, in its order"
    );
    assert_eq!(infos[0].status, Status::Loaded);
    assert_eq!(infos[1].status, Status::Loaded);
    assert_eq!(infos[0].path, infos[1].path, "one file");
    let Status::Refused(why) = &infos[2].status else {
        panic!("{:?}", infos[2])
    };
    assert!(
        why.starts_with("plugin 2 of the bundle: ") && why.contains("not a name"),
        "{why}"
    );

    let out = host.run(&sample());
    // hello.c emits under the check name hello-c whatever its descriptor's name: two events,
    // each counting the samples of its own state.
    let hello = from(&out, "hello-c");
    assert_eq!(hello.len(), 2, "{:?}", out.events);
    for e in &hello {
        assert_eq!(e.event.data["samples"], Value::UInt(1));
    }
    let mut said: Vec<&str> = out
        .logs
        .iter()
        .filter(|l| l.message == "hello from C")
        .map(|l| l.source.as_str())
        .collect();
    said.sort();
    assert_eq!(said, ["hello-c", "hello-c-twin"], "each created on its own");
    let refused = agent(&out, "plugin.refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].event.subject, "libhello_c_bundle.so[2]");
    let out = host.run(&sample_n(1));
    for e in &from(&out, "hello-c") {
        assert_eq!(e.event.data["samples"], Value::UInt(2));
    }
    host.shutdown();
}

/// The `/proc/self/task/*` directories of this process's threads named `name` (their `comm`).
fn tasks_named(name: &str) -> impl Iterator<Item = std::path::PathBuf> + '_ {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .map(|t| t.path())
        .filter(move |t| {
            std::fs::read_to_string(t.join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
}

/// Threads of this process named `name`.
fn threads_named(name: &str) -> usize {
    tasks_named(name).count()
}

/// `Cpus_allowed_list` of a `/proc` status file (`/proc/self/status`, a task's).
fn cpus_allowed(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_string()
}

/// The CPUs each thread named `name` may run on, sorted.
fn cpus_allowed_of_threads_named(name: &str) -> Vec<String> {
    let mut lists: Vec<String> = tasks_named(name)
        .filter_map(|t| std::fs::read_to_string(t.join("status")).ok())
        .map(|s| cpus_allowed(&s))
        .collect();
    lists.sort();
    lists
}

/// Waits (up to 10 s) until this process has `count` threads named `name`, then checks: a
/// thread names itself once it runs, and ends a little after it is told to.
fn assert_threads_named(name: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads_named(name) != count && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(threads_named(name), count, "threads named {name}");
}

/// A bundle's plugins share one thread (one wake-up a sample for all of them), and one that
/// hangs keeps that thread to itself: the plugins behind it go on on a new one, at once, and
/// the hung one is skipped until it returns, as a plugin of its own file would be.
#[test]
fn a_bundle_shares_a_thread_and_a_hung_plugin_of_it_keeps_it_alone() {
    let b = built();
    // A file name of this test's own: lanes are named after it, and tests share a process.
    let dir = PluginDir::new(&[(&b.hello_c_bundle_sleepy, "libsleepy_bundle.so")]);
    let (entered, release) = (b.sleepy_gate.join("entered"), b.sleepy_gate.join("release"));
    for f in [&entered, &release] {
        let _ = std::fs::remove_file(f);
    }
    // The budget is kept on a manual clock: hello-c is hung because the test moves the clock
    // past the budget while its call is in hand, not because a sleep outlasted a real one.
    let budget = Duration::from_millis(400);
    let clock = Arc::new(ManualClock::default());
    let mut host = start_on_clock(&dir.settings("budget = \"400ms\"\n"), &clock);
    assert_eq!(status_of(&host, "hello-c"), Status::Loaded);
    assert_eq!(status_of(&host, "hello-c-twin"), Status::Loaded);
    assert_eq!(threads_named("sleepy_bundle"), 1, "two plugins, one thread");
    let samples_seen = |out: &Output| -> Vec<u64> {
        let mut seen: Vec<u64> = from(out, "hello-c")
            .iter()
            .filter(|e| e.event.kind == Kind::Metrics)
            .map(|e| match e.event.data["samples"] {
                Value::UInt(n) => n,
                ref v => panic!("samples: {v:?}"),
            })
            .collect();
        seen.sort();
        seen
    };

    // Sample 1: hello-c holds its call with hello-c-twin queued behind it; once it is in the
    // call the budget passes on the clock: hello-c is hung and the twin moves to a thread of
    // its own.
    let driver = {
        let (clock, entered) = (Arc::clone(&clock), entered.clone());
        std::thread::spawn(move || {
            wait_for(|| entered.exists(), "hello-c to enter its first call");
            clock.advance(budget);
        })
    };
    let out1 = host.run(&sample_n(0));
    driver.join().unwrap();
    let hung = agent(&out1, "plugin.hung");
    assert_eq!(hung.len(), 1, "{:?}", out1.events);
    assert_eq!(hung[0].event.subject, "hello-c");
    assert!(matches!(status_of(&host, "hello-c"), Status::Hung(_)));
    assert_eq!(
        status_of(&host, "hello-c-twin"),
        Status::Loaded,
        "queued is not hung"
    );
    assert_threads_named("sleepy_bundle", 2);

    // Sample 2, the clock standing still: the twin answers without waiting for hello-c (were
    // the host waiting for it, it would wait for a clock that does not move); over the two
    // samples only the twin has emitted (its samples 1 and 2), hello-c nothing.
    let out2 = host.run(&sample_n(1));
    let mut both = samples_seen(&out1);
    both.extend(samples_seen(&out2));
    both.sort();
    assert_eq!(both, [1, 2], "{:?} {:?}", out1.events, out2.events);
    assert!(agent(&out2, "plugin.hung").is_empty());
    // Each post holds a lane's thread to the poster's CPU (plugins::placement); the hung
    // call's thread is let go to every CPU the process may use, so a call that spins is not
    // held to one. (On a machine of one CPU the two cannot be told apart.)
    let anywhere = cpus_allowed(&std::fs::read_to_string("/proc/self/status").unwrap());
    let lanes = cpus_allowed_of_threads_named("sleepy_bundle");
    assert_eq!(lanes.len(), 2, "{lanes:?}");
    assert!(
        lanes.contains(&anywhere),
        "the hung lane: {lanes:?}, process {anywhere}"
    );
    if anywhere.contains([',', '-']) {
        assert!(
            lanes.iter().any(|l| l.parse::<usize>().is_ok()),
            "the twin's lane is held to the poster's CPU: {lanes:?}"
        );
    }

    // After hello-c returns: its late sample 1, then its sample 2 (the newest sample), and the
    // twin's sample 3; the hung finding clears.
    let mut late = release_and_wait(&mut host, &release, |out| !samples_seen(out).is_empty());
    late.push(host.run(&sample_n(2)));
    let out3 = Output {
        events: late.iter().flat_map(|o| o.events.clone()).collect(),
        logs: late.iter().flat_map(|o| o.logs.clone()).collect(),
    };
    assert_eq!(samples_seen(&out3), [1, 2, 3], "{:?}", out3.events);
    let hung = agent(&out3, "plugin.hung");
    assert_eq!(hung.len(), 1, "{:?}", out3.events);
    assert_eq!(hung[0].event.state, Some(State::Cleared));
    assert_eq!(status_of(&host, "hello-c"), Status::Loaded);
    host.shutdown();
}

/// One plugin file at work in a sample runs on the host's CPU while the host waits; two run
/// side by side wherever the scheduler puts them, so that two heavy files do not share one
/// CPU and each other's budget (plugins::placement).
#[test]
fn one_lane_at_work_follows_the_host_and_two_run_anywhere() {
    let b = built();
    let anywhere = cpus_allowed(&std::fs::read_to_string("/proc/self/status").unwrap());
    // File names of this test's own: lanes are named after them, and tests share a process.
    let dir = PluginDir::new(&[
        (&b.hello_c, "libplaced_a.so"),
        (&b.busy_disks_c, "libplaced_b.so"),
    ]);
    let mut host = dir.start("");
    for name in ["placed_a", "placed_b"] {
        assert_eq!(threads_named(name), 1, "{name}");
    }
    for n in 0..3 {
        host.run(&sample_n(n));
        for name in ["placed_a", "placed_b"] {
            assert_eq!(
                cpus_allowed_of_threads_named(name),
                std::slice::from_ref(&anywhere),
                "{name}"
            );
        }
    }
    host.shutdown();

    let dir = PluginDir::new(&[(&b.hello_c, "libplaced_alone.so")]);
    let mut host = dir.start("");
    host.run(&sample_n(0));
    let lane = cpus_allowed_of_threads_named("placed_alone");
    assert_eq!(lane.len(), 1);
    if anywhere.contains([',', '-']) {
        assert!(
            lane[0].parse::<usize>().is_ok(),
            "held to one CPU: {lane:?}"
        );
    }
    host.shutdown();
}

/// A bundle that never answers null is refused at the ABI's bound instead of being asked
/// forever, and a file exporting both the entry point and a bundle is refused: which of the
/// two it means cannot be told. Neither stops the plugin beside it.
#[test]
fn an_endless_bundle_and_a_file_with_both_entries_are_refused() {
    let b = built();
    let dir = PluginDir::new(&[
        (&b.hello_c_bundle_endless, "libendless.so"),
        (&b.hello_c_both, "libboth.so"),
        (&b.hello_c, "libhello_c.so"),
    ]);
    let mut host = dir.start("");
    let Status::Refused(why) = status_of(&host, "libendless.so") else {
        panic!("{:?}", host.plugins())
    };
    assert!(
        why.contains(&format!("more than {} plugins", abi::BUNDLE_MAX)),
        "{why}"
    );
    let Status::Refused(why) = status_of(&host, "libboth.so") else {
        panic!("{:?}", host.plugins())
    };
    assert!(
        why.contains("zpulse_plugin_entry") && why.contains("zpulse_plugin_bundle"),
        "{why}"
    );
    assert_eq!(host.plugins().len(), 3, "one entry per refused file");
    let out = host.run(&sample());
    assert_hello(&out, 1);
    host.shutdown();
}

/// `[plugins] disable`: a plugin of a bundle that the config names is listed as off and never
/// created; the others run; a name that matches nothing is said once.
#[test]
fn disable_turns_off_one_plugin_of_a_bundle() {
    let b = built();
    let dir = PluginDir::new(&[(&b.hello_c_bundle, "libhello_c_bundle.so")]);
    let mut host = dir.start("disable = [\"hello-c-twin\", \"no-such-check\"]\n");
    assert_eq!(status_of(&host, "hello-c"), Status::Loaded);
    assert_eq!(status_of(&host, "hello-c-twin"), Status::Off);
    assert!(!Status::Off.is_trouble());
    let out = host.run(&sample());
    assert_hello(&out, 1);
    let sources: Vec<&str> = out.logs.iter().map(|l| l.source.as_str()).collect();
    assert!(
        !sources.contains(&"hello-c-twin"),
        "never created: {:?}",
        out.logs
    );
    let mentions = |what: &str| out.logs.iter().filter(|l| l.message.contains(what)).count();
    assert_eq!(mentions("hello-c-twin ("), 1, "{:?}", out.logs);
    assert_eq!(
        mentions("plugins.disable names no-such-check"),
        1,
        "{:?}",
        out.logs
    );
    assert!(
        agent(&out, "plugin.refused")
            .iter()
            .all(|e| e.event.subject != "hello-c-twin"),
        "off is not refused"
    );
    host.shutdown();
}
