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
    assert_eq!(c.plugins.limits.max_failures, 3);
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
        (
            p.limits.max_failures,
            p.limits.max_events_per_sample,
            p.limits.max_event_bytes
        ),
        (5, 10, 4096)
    );
    let t = &p.tables["hdd-saturation"];
    assert_eq!(t.table["saturation_pct"].as_integer(), Some(95));
    assert_eq!(t.origin, "/etc/zpulse/zpulse.toml:11");
    assert_eq!(c.sinks.len(), 2);
    assert_eq!(c.sinks[1].kind(), "syslog");
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
        err.starts_with("/etc/zpulse/zpulse.toml:2: plugins.dir: unknown field `dir`"),
        "{err}"
    );
    assert!(
        err.contains("`dirs`, `paths`, `disable`, `budget`"),
        "{err}"
    );
    assert!(err.contains("[plugins.<name>]"), "{err}");
    // A table under an agent key's name is the agent key's, refused for its type.
    let err = parse_err(
        "[plugins.budget]
x = 1
",
    );
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:1: plugins.budget: "),
        "{err}"
    );
}

#[test]
fn disable_names_plugins_and_refuses_what_cannot_be_a_name() {
    let p = parse_ok("[plugins]\ndisable = [\"l2arc-value\", \"layout\"]\n").plugins;
    assert_eq!(p.disable, ["l2arc-value", "layout"]);
    assert!(
        parse_ok("").plugins.disable.is_empty(),
        "nothing off by default"
    );
    let err = parse_err("[plugins]\n\ndisable = [\"l2arc value\"]\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:3: plugins.disable: \"l2arc value\": "),
        "{err}"
    );
    let err = parse_err("[plugins]\ndisable = \"layout\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:2: plugins.disable: invalid type"),
        "{err}"
    );
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
    // No type: the table's header, which is where it is missing.
    let err = parse_err("[[sink]]\naddress = \"x\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:1: sink[0]: type: missing; say which sink"),
        "{err}"
    );
    let err = parse_err("\n[[sink]]\n\ntype = \"kafka\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:4: sink[0].type: \"kafka\" is not one of stdout, syslog, forward, prometheus"),
        "{err}"
    );
}

/// A config whose second sink is a syslog one with `line` (its 7th line) as given.
fn syslog_sink_with(line: &str) -> String {
    format!(
        "interval = \"10s\"\n[[sink]]\ntype = \"stdout\"\n\n[[sink]]\ntype = \"syslog\"\n{line}\n"
    )
}

#[test]
fn a_sinks_errors_name_the_key_at_its_own_line() {
    // Found while reading the table: a wrong type, an unknown key, a bad value.
    let err = parse_err(&syslog_sink_with("address = 514"));
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:7: sink[1].address: invalid type: integer"),
        "{err}"
    );
    let err = parse_err(&syslog_sink_with(
        "address = \"udp://h\"\nfacilty = \"user\"",
    ));
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:8: sink[1].facilty: unknown field `facilty`"),
        "{err}"
    );
    let err = parse_err(&syslog_sink_with(
        "address = \"udp://h\"\nframing = \"nul\"",
    ));
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:8: sink[1].framing: unknown variant `nul`"),
        "{err}"
    );
    // A key of a sub-table: its own line under [sink.tls].
    let err = parse_err(&syslog_sink_with(
        "address = \"tls://h\"\n[sink.tls]\nca = \"ca.pem\"\nkeyfile = \"k\"",
    ));
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:10: sink[1].tls.keyfile: unknown field `keyfile`"),
        "{err}"
    );
    // A missing key can only be at the header.
    let err = parse_err(&syslog_sink_with("facility = \"user\""));
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:5: sink[1]: missing field `address`"),
        "{err}"
    );
    // A forward and a prometheus sink's own checks.
    let err =
        parse_err("[[sink]]\ntype = \"forward\"\naddress = \"c:24224\"\nack_timeout = \"soon\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:4: sink[0].ack_timeout: "),
        "{err}"
    );
    let err = parse_err("[[sink]]\ntype = \"prometheus\"\n\nlisten = 9134\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:4: sink[0].listen: "),
        "{err}"
    );
    let err = parse_err("[[sink]]\ntype = \"stdout\"\nformat = \"json\"\n");
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:3: sink[0].format: unknown field `format`"),
        "{err}"
    );
}

#[test]
fn a_sinks_checks_after_parsing_name_the_key_at_its_own_line() {
    // These are found when the sink is planned (check-config, run, a reload).
    let plan_err = |line: &str| {
        let c = parse_ok(&syslog_sink_with(&format!(
            "address = \"udp://127.0.0.1\"\n{line}"
        )));
        match crate::sinks::build::plan(&c.sinks[1], None) {
            Ok(_) => panic!("{line}: planned"),
            Err(e) => e,
        }
    };
    for (line, want) in [
        (
            "facility = \"kernel\"",
            "sink[1].facility: unknown facility 'kernel'",
        ),
        (
            "app_name = \"my app\"",
            "sink[1].app_name: 'my app': give 1 to 32",
        ),
        (
            "hostname = \"a b\"",
            "sink[1].hostname: 'a b': give 1 to 255",
        ),
        (
            "max_message_bytes = 100",
            "sink[1].max_message_bytes: 100: give 480 to 65507",
        ),
        (
            "enterprise_number = 0",
            "sink[1].enterprise_number: 0 is reserved",
        ),
        (
            "format = \"rfc3164\"",
            "sink[1].format: rfc3164 is for local sockets",
        ),
        (
            "framing = \"lf\"",
            "sink[1].framing: only for tcp:// and tls://",
        ),
        (
            "[sink.tls]\nca = \"x.pem\"",
            "sink[1].tls: only for tls:// addresses",
        ),
    ] {
        let err = plan_err(line);
        assert!(
            err.starts_with(&format!("/etc/zpulse/zpulse.toml:8: {want}")),
            "{line}: {err}"
        );
    }
    // The address is on line 7.
    let c = parse_ok(&syslog_sink_with("address = \"http://x\""));
    let err = crate::sinks::build::plan(&c.sinks[1], None).err().unwrap();
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:7: sink[1].address: 'http://x': unknown scheme"),
        "{err}"
    );
}

#[test]
fn a_plugin_tables_errors_name_the_key_at_its_own_line() {
    let c = parse_ok("[plugins.hdd-saturation]\nwindow = 3\nsaturaton_pct = 95\n");
    let table = &c.plugins.tables["hdd-saturation"];
    // What the SDK's decoder says of a misspelt key.
    let err = table.locate(
        "hdd-saturation",
        "unknown field `saturaton_pct`, expected one of `saturation_pct`",
    );
    assert_eq!(
        err,
        "/etc/zpulse/zpulse.toml:3: plugins.hdd-saturation.saturaton_pct: unknown field `saturaton_pct`, expected one of `saturation_pct`"
    );
    let err = table.locate(
        "hdd-saturation",
        "window: invalid type: integer `3`, expected a string",
    );
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:2: plugins.hdd-saturation.window: "),
        "{err}"
    );
    // No key of the table named: the header.
    let err = table.locate("hdd-saturation", "the plugin refused its table");
    assert_eq!(
        err,
        "/etc/zpulse/zpulse.toml:1: plugins.hdd-saturation: the plugin refused its table"
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
    // A NUL or an ESC passed check-config.
    for name in ["nas\\u0000x", "nas\\u001b[31m", "nas\\u007f"] {
        let err = parse_err(&format!("hostname = \"{name}\"\n"));
        assert!(err.contains(":1: hostname: give a name"), "{name}: {err}");
    }
    assert_eq!(
        parse_ok("hostname = \"nas-1.example.net\"\n")
            .hostname
            .as_deref(),
        Some("nas-1.example.net")
    );
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

#[test]
fn two_forward_sinks_cannot_share_a_spool() {
    let err = parse_err(
        "[[sink]]\ntype = \"forward\"\naddress = \"a:24224\"\nspool_dir = \"/var/spool/z\"\n\
         [[sink]]\ntype = \"forward\"\naddress = \"b:24224\"\nspool_dir = \"/var/spool/z\"\n",
    );
    assert!(
        err.starts_with(
            "/etc/zpulse/zpulse.toml:8: sink[1].spool_dir: sink[0] (/etc/zpulse/zpulse.toml:1) \
             spools to /var/spool/z already"
        ),
        "{err}"
    );
    // The default spool is one per address: the same address twice shares it.
    let err = parse_err(
        "[[sink]]\ntype = \"forward\"\naddress = \"a:24224\"\n\
         [[sink]]\ntype = \"forward\"\naddress = \"a:24224\"\ngzip = true\n",
    );
    assert!(
        err.starts_with("/etc/zpulse/zpulse.toml:6: sink[1].address: sink[0]"),
        "{err}"
    );
    // Different addresses, different default spools.
    let c = parse_ok(
        "[[sink]]\ntype = \"forward\"\naddress = \"a:24224\"\n\
         [[sink]]\ntype = \"forward\"\naddress = \"b:24224\"\n",
    );
    assert_eq!(c.sinks.len(), 2);
}

/// Every sink kind reads its table the same way (serde's derive), and its errors, from the
/// types or from the checks after them, point at the key's own line.
#[test]
fn sink_errors_of_every_kind_name_the_key_and_its_line() {
    let cases = [
        (
            "[[sink]]\ntype = \"stdout\"\n\nformat = \"json\"\n",
            "/etc/zpulse/zpulse.toml:4: sink[0].format: unknown field `format`",
        ),
        (
            "[[sink]]\ntype = \"prometheus\"\n\nlisten = \"nas1\"\n",
            "/etc/zpulse/zpulse.toml:4: sink[0].listen: 'nas1' is not IP:PORT",
        ),
        (
            "[[sink]]\ntype = \"prometheus\"\nlisten = \"127.0.0.1:9134\"\nmax_connections = 0\n",
            "/etc/zpulse/zpulse.toml:4: sink[0].max_connections: give a number from 1 to 256",
        ),
        (
            "[[sink]]\ntype = \"prometheus\"\ntimeout = []\n",
            "/etc/zpulse/zpulse.toml:3: sink[0].timeout: ",
        ),
        (
            "[[sink]]\ntype = \"stdout\"\n[[sink]]\ntype = \"syslog\"\naddress = \"udp://h\"\nfacilty = \"user\"\n",
            "/etc/zpulse/zpulse.toml:6: sink[1].facilty: unknown field `facilty`",
        ),
        (
            "[[sink]]\ntype = \"forward\"\naddress = \"c:24224\"\n[sink.tls]\nca = 5\n",
            "/etc/zpulse/zpulse.toml:5: sink[0].tls.ca: invalid type",
        ),
        (
            "[[sink]]\ntype = \"pigeon\"\n",
            "/etc/zpulse/zpulse.toml:2: sink[0].type: \"pigeon\" is not one of stdout, syslog, forward, prometheus",
        ),
    ];
    for (text, expected) in cases {
        let err = parse_err(text);
        assert!(err.starts_with(expected), "{text}\n{err}");
    }
}

/// The shipped conffile and zpulse.toml(5) say each limit of `[plugins]` as it is declared:
/// its default, and (the man page) its doc line; the parser takes 1 to its maximum.
#[test]
fn the_conffile_and_the_man_page_say_each_declared_setting_as_declared() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let conffile = std::fs::read_to_string(root.join("packaging/conf/zpulse.toml")).unwrap();
    let man = std::fs::read_to_string(root.join("packaging/man/zpulse.toml.5")).unwrap();
    let man_lines: Vec<&str> = man.lines().collect();
    for limit in PLUGIN_LIMITS.iter().copied() {
        let key = limit.key;
        let line = format!("#{key} = {}", limit.default);
        assert!(
            conffile.lines().any(|l| l == line),
            "the conffile lacks {line:?}"
        );
        let item = format!(".It Ic {key} Pq integer, default {}", limit.default);
        let at = man_lines.iter().position(|l| *l == item);
        let at = at.unwrap_or_else(|| panic!("zpulse.toml(5) lacks {item:?}"));
        assert_eq!(man_lines.get(at + 1), Some(&limit.doc), "{key}'s doc line");
        let set = |n: u64| parse(&format!("[plugins]\n{key} = {n}\n"), Path::new("/z.toml"));
        assert!(set(limit.max).is_ok() && set(1).is_ok(), "{key}");
        assert!(set(limit.max + 1).is_err() && set(0).is_err(), "{key}");
    }
    for (span, section) in [(INTERVAL, ""), (BUDGET, "[plugins]\n")] {
        let key = span.key;
        let line = format!("#{key} = \"{}\"", span.default);
        assert!(
            conffile.lines().any(|l| l == line),
            "the conffile lacks {line:?}"
        );
        let item = format!(".It Ic {key} Pq duration, default Qq {}", span.default);
        assert!(
            man_lines.contains(&item.as_str()),
            "zpulse.toml(5) lacks {item:?}"
        );
        let set = |d: &str| parse(&format!("{section}{key} = \"{d}\"\n"), Path::new("/z.toml"));
        assert!(set(span.min).is_ok() && set(span.max).is_ok(), "{key}");
        let err = set("11d").unwrap_err();
        assert!(
            err.ends_with(&format!(
                "give a duration between {} and {}",
                span.min, span.max
            )),
            "{err}"
        );
    }
    assert_eq!(Config::default().interval, Duration::from_secs(10));
    let defaults = PluginSettings::default();
    assert_eq!(defaults.budget, Duration::from_secs(2));
    // The defaults docs/configuration.md promises.
    let limits = defaults.limits;
    assert_eq!(
        (
            limits.max_failures,
            limits.max_events_per_sample,
            limits.max_event_bytes
        ),
        (3, 1000, 65536)
    );
}

/// The keys serde accepts in a table, as its own error for an unknown key lists them
/// ("unknown field `x`, expected one of `a`, `b`" or "expected `a` or `b`"): the parser is
/// the one definition, so the pages are held to what it reads.
fn accepted_keys(table: &str) -> Vec<String> {
    let err = parse_err(&format!("{table}zz_not_a_key = 1\n"));
    let expected = err
        .split_once("expected")
        .unwrap_or_else(|| panic!("no key list in {err:?}"))
        .1;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The lines of zpulse.toml(5) from the first line containing `from` to the next line that
/// starts a table's part of the page (`.Ss`, `.Sh`, or a sink kind's paragraph).
fn man_part<'a>(man: &'a str, from: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = man.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(from))
        .unwrap_or_else(|| panic!("zpulse.toml(5) has no {from:?}"));
    let starts_part = |i: usize| {
        let l = lines[i];
        l.starts_with(".Ss")
            || l.starts_with(".Sh")
            || (l.starts_with(".Cm ") && lines.get(i + 1).is_some_and(|n| n.starts_with("sink ")))
    };
    let end = (start + 1..lines.len())
        .find(|&i| starts_part(i))
        .unwrap_or(lines.len());
    lines[start..end].to_vec()
}

/// Every key the parser accepts, in every table, has its entry in zpulse.toml(5) under that
/// table and is named in the shipped conffile and in the docs page for it; and every entry
/// the page gives a table is a key the parser accepts there (no documented key is refused).
#[test]
fn every_key_the_parser_reads_is_documented_where_its_table_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    let man = read("packaging/man/zpulse.toml.5");
    let conffile = read("packaging/conf/zpulse.toml");
    let forward = "[[sink]]\ntype = \"forward\"\naddress = \"127.0.0.1:24224\"\n";
    let syslog = "[[sink]]\ntype = \"syslog\"\naddress = \"unix:///dev/log\"\n";
    // (the table's start in a file, where its part of the man page starts, its docs page,
    // keys the page describes inside another entry rather than as an entry of their own)
    let tables: Vec<(String, &str, &str, &[&str])> = vec![
        (
            String::new(),
            ".Ss Top-level keys",
            "docs/configuration.md",
            &["plugins", "sink", "history", "events"],
        ),
        (
            "[plugins]\n".into(),
            ".Ss The [plugins] table",
            "docs/configuration.md",
            &[],
        ),
        (
            "[history]\n".into(),
            ".Ss The [history] table",
            "docs/history.md",
            &[],
        ),
        (
            "[events]\n".into(),
            ".Ss The [events] table",
            "docs/events.md",
            &[],
        ),
        (
            forward.into(),
            "sink sends Fluent Forward",
            "docs/sinks.md",
            &["type", "tls"],
        ),
        (
            syslog.into(),
            "sink is best effort",
            "docs/sinks.md",
            &["type", "tls"],
        ),
        (
            "[[sink]]\ntype = \"prometheus\"\n".into(),
            "sink renders every reading",
            "docs/sinks.md",
            &["type"],
        ),
        (
            format!("{forward}[sink.tls]\n"),
            "sink sends Fluent Forward",
            "docs/sinks.md",
            &[],
        ),
    ];
    let mut missing = Vec::new();
    for (table, part, page, elsewhere) in &tables {
        let keys = accepted_keys(table);
        assert!(!keys.is_empty(), "no keys listed for {table:?}");
        let lines = man_part(&man, part);
        let text = read(page);
        let tls = table.ends_with("[sink.tls]\n");
        for key in keys.iter().filter(|k| !elsewhere.contains(&k.as_str())) {
            let entry = if tls {
                lines
                    .iter()
                    .any(|l| *l == format!(".Ic {key}") || l.starts_with(&format!(".Ic {key} ")))
            } else {
                lines.iter().any(|l| {
                    l.starts_with(&format!(".It Ic {key}")) && {
                        let rest = &l[format!(".It Ic {key}").len()..];
                        rest.is_empty() || rest.starts_with(' ')
                    }
                })
            };
            if !entry {
                missing.push(format!("zpulse.toml(5) {part:?}: {key}"));
            }
            if !conffile.contains(&format!("{key} =")) {
                missing.push(format!("the conffile: {key}"));
            }
            if !text.contains(&format!("`{key}`")) && !text.contains(&format!("{key} =")) {
                missing.push(format!("{page}: {key}"));
            }
        }
        if !tls {
            for l in &lines {
                let Some(rest) = l.strip_prefix(".It Ic ") else {
                    continue;
                };
                let name = rest.split(' ').next().unwrap_or_default();
                if !name.starts_with('[') && !keys.iter().any(|k| k == name) {
                    missing.push(format!(
                        "zpulse.toml(5) {part:?} documents {name}, which the parser refuses"
                    ));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}
