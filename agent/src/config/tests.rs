//! The config file: defaults, every key, and errors that name file, line and key.

use super::*;

fn parse_ok(text: &str) -> Config {
    parse(text, Path::new("/etc/zpulse/zpulse.toml")).unwrap()
}

fn parse_err(text: &str) -> String {
    parse(text, Path::new("/etc/zpulse/zpulse.toml")).unwrap_err()
}

#[test]
fn an_empty_file_is_every_default() {
    let c = parse_ok("");
    assert_eq!(
        c,
        Config {
            file: Some("/etc/zpulse/zpulse.toml".into()),
            ..Config::default()
        }
    );
    assert_eq!(c.interval, Duration::from_secs(10));
    assert_eq!(c.plugins.budget, Duration::from_secs(2));
    assert_eq!(c.plugins.max_failures, 3);
    assert!(c.plugins.default_dirs);
    assert_eq!(c.plugins.dirs, [default_plugin_dir()]);
}

#[test]
fn the_design_example_parses() {
    let c = parse_ok(
        r#"
interval = "10s"
hostname = "nas1"
[plugins]
dirs = ["/usr/lib/zpulse/plugins", "extra"]
paths = ["/opt/libx.so"]
budget = "500ms"
max_failures = 5
max_events_per_sample = 10
max_event_bytes = 4096
[plugins.hdd-saturation]
saturation_pct = 95
disks = ["sda"]
[plugins.hdd-saturation.nested]
when = 1979-05-27T07:32:00Z
[[sink]]
type = "forward"
address = "collector.example.net:24224"
[[sink]]
type = "syslog"
address = "unix:///dev/log"
"#,
    );
    assert_eq!(c.hostname.as_deref(), Some("nas1"));
    let p = &c.plugins;
    assert_eq!(
        p.dirs,
        [
            PathBuf::from("/usr/lib/zpulse/plugins"),
            PathBuf::from("/etc/zpulse/extra")
        ]
    );
    assert!(!p.default_dirs);
    assert_eq!(p.paths, [PathBuf::from("/opt/libx.so")]);
    assert_eq!(p.budget, Duration::from_millis(500));
    assert_eq!(
        (p.max_failures, p.max_events_per_sample, p.max_event_bytes),
        (5, 10, 4096)
    );
    let t = &p.tables["hdd-saturation"];
    assert_eq!(t.table["saturation_pct"].as_integer(), Some(95));
    assert_eq!(t.origin, "/etc/zpulse/zpulse.toml:11");
    assert_eq!(c.sinks.len(), 2);
    assert_eq!(c.sinks[1].kind, "syslog");
    assert_eq!(
        c.sinks[0].table["address"].as_str(),
        Some("collector.example.net:24224")
    );
}

#[test]
fn durations_may_be_numbers_of_seconds() {
    let c = parse_ok("interval = 30\n[plugins]\nbudget = 0.25\n");
    assert_eq!(c.interval, Duration::from_secs(30));
    assert_eq!(c.plugins.budget, Duration::from_millis(250));
}

#[test]
fn an_unknown_key_names_file_line_and_key() {
    let err = parse_err("interval = \"10s\"\nintervall = \"5s\"\n");
    assert!(err.starts_with("/etc/zpulse/zpulse.toml:2: "), "{err}");
    assert!(err.contains("unknown field `intervall`"), "{err}");
}

#[test]
fn a_wrong_type_names_file_line_and_key() {
    let err = parse_err("\n[plugins]\ndirs = \"/usr/lib\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:3: plugins.dirs: invalid type: string"),
        "{err}"
    );
    let err = parse_err("[plugins]\nmax_failures = \"three\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:2: plugins.max_failures: invalid type"),
        "{err}"
    );
    let err = parse_err("hostname = 7\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:1: hostname: invalid type"),
        "{err}"
    );
}

#[test]
fn bad_durations_say_how_to_write_one() {
    let err = parse_err("interval = \"10 parsecs\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:1: interval: ") && err.contains("\"10s\""),
        "{err}"
    );
    let err = parse_err("\n\n[plugins]\nbudget = \"0s\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:4: plugins.budget:"),
        "{err}"
    );
    let err = parse_err("interval = \"2d\"\n");
    assert!(err.contains("interval: give a duration"), "{err}");
}

#[test]
fn the_interval_is_1s_to_1d_nothing_is_clamped() {
    for bad in ["\"1ms\"", "\"999ms\"", "0.5", "\"25h\"", "\"2w\""] {
        let err = parse_err(&format!("\ninterval = {bad}\n"));
        assert!(
            err.starts_with(
                "/etc/zpulse/zpulse.toml:2: interval: give a duration between 1s and 1d"
            ),
            "{bad}: {err}"
        );
    }
    assert_eq!(
        parse_ok("interval = \"1s\"\n").interval,
        Duration::from_secs(1)
    );
    assert_eq!(
        parse_ok("interval = \"1d\"\n").interval,
        Duration::from_secs(86_400)
    );
    // The one grammar: decimals and weeks parse (and then meet the range).
    assert_eq!(
        parse_ok("interval = \"1.5m\"\n").interval,
        Duration::from_secs(90)
    );
}

#[test]
fn a_misspelt_agent_setting_in_plugins_is_an_error() {
    let err = parse_err("[plugins]\ndir = [\"/x\"]\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:2: plugins.dir: unknown setting"),
        "{err}"
    );
    assert!(err.contains("dirs, paths, budget"), "{err}");
}

#[test]
fn limits_must_be_positive() {
    let err = parse_err("[plugins]\nmax_failures = 0\n");
    assert!(
        err.contains(":2: plugins.max_failures: give a number from 1"),
        "{err}"
    );
    let err = parse_err("[plugins]\nmax_failures = -1\n");
    assert!(err.contains(":2: plugins.max_failures"), "{err}");
}

#[test]
fn plugin_names_are_bare_keys() {
    let err = parse_err("[plugins.\"a b\"]\nx = 1\n");
    assert!(err.contains("plugins.a b: plugin name"), "{err}");
}

#[test]
fn sinks_need_a_known_type() {
    let err = parse_err("[[sink]]\naddress = \"x\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:1: sink: say its type"),
        "{err}"
    );
    let err = parse_err("\n[[sink]]\ntype = \"kafka\"\n");
    assert!(
        err.contains(":2: sink.type: \"kafka\" is not one of"),
        "{err}"
    );
}

#[test]
fn toml_syntax_errors_name_the_line() {
    let err = parse_err("interval = \"10s\"\n[plugins\n");
    assert!(err.starts_with("/etc/zpulse/zpulse.toml:2: "), "{err}");
}

#[test]
fn hostname_must_be_a_name() {
    assert!(parse_err("hostname = \"\"\n").contains(":1: hostname: give a name"));
    assert!(parse_err("hostname = \"a b\"\n").contains("hostname"));
}

#[test]
fn load_without_a_file_is_the_defaults_and_an_explicit_missing_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.toml");
    let err = load(Some(&missing)).unwrap_err();
    assert!(err.contains("nope.toml: cannot read"), "{err}");
    let file = dir.path().join("zpulse.toml");
    std::fs::write(&file, "[plugins]\ndirs = [\"plugins\"]\n").unwrap();
    let c = load(Some(&file)).unwrap();
    assert_eq!(c.plugins.dirs, [dir.path().join("plugins")]);
    assert_eq!(c.file.as_deref(), Some(file.as_path()));
}
