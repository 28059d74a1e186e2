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
    let config = dir.path().join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "interval = \"1s\"\n[plugins]\ndirs = []\npaths = [\"{}\"]\nbudget = \"10m\"\n\
             [plugins.hangs]\nhang_ms = 600000\nhang_samples = [1]\n[[sink]]\ntype = \"stdout\"\n",
            plugin.display()
        ),
    )
    .unwrap();
    let mut agent = Command::new(profile.join("zpulse"))
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(agent.stderr.take().unwrap()).lines();
    let started = err
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("starting"));
    assert!(started.is_some(), "the agent did not start");
    // Two readings (1 s apart) make the first sample, which the plugin hangs on for 10
    // minutes; nothing observable says it has begun, so give it the interval and a half.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(agent.try_wait().unwrap().is_none(), "still running");
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
