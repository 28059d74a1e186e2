//! `zpulse run` with a plugin that hangs: SIGTERM still ends the agent within 5 s, whatever
//! the plugin's budget (the agent does not wait for a call that has not returned).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zpulse_tests::build_into_test_target;

#[test]
fn sigterm_ends_the_agent_within_5s_while_a_plugin_with_a_10_minute_budget_hangs() {
    let profile = build_into_test_target(&["zpulse-test-plugin-hangs"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let plugin = dir.path().join("libhangs.so");
    std::fs::copy(profile.join("libzpulse_test_plugin_hangs.so"), &plugin).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o644)).unwrap();
    let entered = dir.path().join("entered");
    let mut agent = run_with(
        dir.path(),
        &profile,
        &plugin,
        &format!(
            "budget = \"10m\"\n[plugins.hangs]\nhang_ms = 600000\nhang_samples = [1]\n\
             entered_file = {entered:?}\n"
        ),
        Stdio::null(),
    );
    let mut err = BufReader::new(agent.stderr.take().unwrap()).lines();
    let started = err
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("starting"));
    assert!(started.is_some(), "the agent did not start");
    // Two readings (1 s apart) make the first sample, which the plugin hangs on for 10
    // minutes: it says so by creating `entered` (a minute's guard against a plugin that never
    // gets there, not a timing).
    let guard = Instant::now() + Duration::from_secs(60);
    while !entered.exists() {
        assert!(Instant::now() < guard, "the plugin never began its hang");
        assert!(agent.try_wait().unwrap().is_none(), "the agent ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(agent.try_wait().unwrap().is_none(), "still running");
    sigterm_ends_it_within_5s(&mut agent);
}

/// `zpulse run` sampling every second with `plugin` alone (`plugins` adds to its
/// `[plugins]` table), no history, a stdout sink to `stdout`; its stderr piped.
fn run_with(
    dir: &std::path::Path,
    profile: &std::path::Path,
    plugin: &std::path::Path,
    plugins: &str,
    stdout: Stdio,
) -> std::process::Child {
    let config = dir.join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "interval = \"1s\"\n[plugins]\ndirs = []\npaths = [\"{}\"]\n{plugins}[history]\n\
             enabled = false\n[[sink]]\ntype = \"stdout\"\n",
            plugin.display()
        ),
    )
    .unwrap();
    Command::new(profile.join("zpulse"))
        .args(["run", "--config"])
        .arg(&config)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// SIGTERM to `agent`: it exits 0 within 5 s (killed, and the test failed, after 30 s).
fn sigterm_ends_it_within_5s(agent: &mut std::process::Child) {
    let asked = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &agent.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let status = loop {
        if let Some(s) = agent.try_wait().unwrap() {
            break s;
        }
        if asked.elapsed() > Duration::from_secs(30) {
            let _ = agent.kill();
            panic!("still running 30 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(status.success(), "{status:?}");
}

/// A C plugin's `signal(SIGTERM, SIG_IGN)` left only SIGKILL to stop the agent.
/// The plugin here ignores SIGTERM, SIGINT and SIGHUP when loaded, in `create` and in every
/// sample; the agent restores its handling after each and still exits on SIGTERM within 5 s.
#[test]
fn sigterm_ends_the_agent_within_5s_although_a_c_plugin_ignores_it() {
    let profile = build_into_test_target(&[]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let plugin = dir.path().join("libhello_ignores_signals.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let compiled = Command::new(&cc)
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
        ])
        .arg("-DHELLO_IGNORES_SIGNALS")
        .arg("-I")
        .arg(zpulse_tests::workspace().join("proto/include"))
        .arg("-o")
        .arg(&plugin)
        .arg(zpulse_tests::workspace().join("tests/plugins/c/hello.c"))
        .status()
        .expect("running the C compiler");
    assert!(compiled.success(), "compiling hello.c failed");
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut agent = run_with(dir.path(), &profile, &plugin, "", Stdio::piped());
    let stderr = BufReader::new(agent.stderr.take().unwrap());
    let log = std::thread::spawn(move || stderr.lines().map_while(Result::ok).collect::<Vec<_>>());
    // The plugin's event, from its first sample: it has ignored the signals three times.
    let mut out = BufReader::new(agent.stdout.take().unwrap()).lines();
    let sampled = out
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("\"check\":\"hello-c\""));
    assert!(sampled.is_some(), "no event from the plugin");
    std::thread::spawn(move || for _ in out {});
    sigterm_ends_it_within_5s(&mut agent);
    let log = log.join().unwrap();
    assert!(
        log.iter()
            .any(|l| l.contains("changed the agent's handling of SIGTERM, SIGINT, SIGHUP")),
        "{log:#?}"
    );
}

/// A private plugin directory with the template plugin, and a config loading it with `table`
/// as its `[plugins.template]`.
fn template_config(dir: &std::path::Path, profile: &std::path::Path, table: &str) -> String {
    let plugin = dir.join("libtemplate.so");
    if !plugin.exists() {
        std::fs::copy(profile.join("libzpulse_plugin_template.so"), &plugin).unwrap();
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    format!(
        "interval = \"1s\"\n[plugins]\ndirs = []\npaths = [\"{}\"]\n[plugins.template]\n{table}\n\
         [history]\nenabled = false\n[[sink]]\ntype = \"stdout\"\n",
        plugin.display()
    )
}

#[test]
fn check_config_and_reload_refuse_a_table_the_plugin_would_refuse() {
    let profile = build_into_test_target(&["zpulse-plugin-template"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("zpulse.toml");
    let check = || {
        Command::new(profile.join("zpulse"))
            .args(["check-config", "--config"])
            .arg(&config)
            .output()
            .unwrap()
    };
    // `busy_pct` misspelt: the template's Config denies unknown fields.
    std::fs::write(
        &config,
        template_config(dir.path(), &profile, "busy_pcnt = 95"),
    )
    .unwrap();
    let out = check();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "check-config said ok: {err}");
    // At the misspelt key's own line (the table's header is line 5).
    assert!(
        err.contains("zpulse.toml:6: plugins.template.busy_pcnt: "),
        "{err}"
    );
    assert!(err.contains("unknown field `busy_pcnt`"), "{err}");
    // A wrong type too.
    std::fs::write(
        &config,
        template_config(dir.path(), &profile, "busy_pct = \"high\""),
    )
    .unwrap();
    let out = check();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("busy_pct"));

    // The agent runs with a good table; a reload to the bad one is refused, the plugin runs on.
    std::fs::write(
        &config,
        template_config(dir.path(), &profile, "busy_pct = 95"),
    )
    .unwrap();
    assert!(check().status.success());
    let mut agent = Command::new(profile.join("zpulse"))
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(agent.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(agent.stderr.take().unwrap()).lines();
    let heartbeat = |out: &mut std::io::Lines<BufReader<std::process::ChildStdout>>| {
        let line = out
            .by_ref()
            .map_while(Result::ok)
            .find(|l| l.contains("agent.heartbeat"))
            .expect("a heartbeat");
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    let hb = heartbeat(&mut out);
    assert_eq!(hb["record"]["data"]["plugins_running"], 1, "{hb}");
    std::fs::write(
        &config,
        template_config(dir.path(), &profile, "busy_pcnt = 95"),
    )
    .unwrap();
    Command::new("kill")
        .args(["-HUP", &agent.id().to_string()])
        .status()
        .unwrap();
    let refused = err
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("reload refused"))
        .expect("the reload is refused");
    assert!(refused.contains("unknown field `busy_pcnt`"), "{refused}");
    let _ = agent.kill();
    let _ = agent.wait();
}
