//! The host without real plugins: discovery, refusals before `dlopen`, config conversion, and
//! reporting. Real cdylibs are loaded by the integration tests in `tests/plugin_host.rs`.

use super::*;
use std::os::unix::fs::PermissionsExt;
use zpulse_proto::event::Kind;

fn settings(dirs: Vec<PathBuf>) -> PluginSettings {
    PluginSettings {
        dirs,
        default_dirs: false,
        budget: Duration::from_millis(200),
        ..PluginSettings::default()
    }
}

fn file(dir: &Path, name: &str, mode: u32) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, b"\x7fELF but not really").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn discovery_takes_so_files_sorted_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let b = file(dir.path(), "libb.so", 0o644);
    let a = file(dir.path(), "liba.so", 0o644);
    file(dir.path(), "README", 0o644);
    file(dir.path(), "libc.so.disabled", 0o644);
    let sources = [
        Source::Dir {
            path: dir.path().into(),
            required: true,
        },
        Source::File(a.clone()),
        Source::Dir {
            path: dir.path().join("missing-but-optional"),
            required: false,
        },
        Source::Dir {
            path: dir.path().join("missing"),
            required: true,
        },
    ];
    let (files, problems) = load::discover(&sources);
    assert_eq!(files, [a, b]);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].0.ends_with("missing"));
}

#[test]
fn refusals_are_reported_once_with_the_reason_and_nothing_else_stops() {
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().to_path_buf();
    std::fs::set_permissions(&dir_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    file(&dir_path, "libopen.so", 0o666);
    file(&dir_path, "libjunk.so", 0o644);
    let mut host = PluginHost::start(&settings(vec![dir_path.clone()]), &Extra::default(), "h1");
    let infos = host.plugins();
    assert_eq!(infos.len(), 2);
    // Sorted: libjunk before libopen. Its fifth byte (the ELF class) is a space.
    assert!(
        matches!(&infos[0].status, Status::Refused(why) if why.contains("ELF class 32 is unknown")),
        "{:?}",
        infos[0].status
    );
    assert!(
        matches!(&infos[1].status, Status::Refused(why) if why.contains("writable by its group and everyone")),
        "{:?}",
        infos[1].status
    );
    let out = host.take_output();
    assert_eq!(out.events.len(), 2);
    for e in &out.events {
        assert_eq!(e.event.kind, Kind::Agent);
        assert_eq!(e.event.check, "plugin.refused");
        assert_eq!(e.event.host, "h1");
        assert!(e.event.validate().is_ok(), "{:?}", e.event);
    }
    assert_eq!(out.logs.len(), 2);
    // Reported once: later runs say nothing more.
    let later = host.run(&Arc::new(Sample::default()));
    assert!(later.events.is_empty() && later.logs.is_empty());
}

#[test]
fn a_missing_configured_directory_is_reported_and_the_default_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let mut host = PluginHost::start(&settings(vec![missing.clone()]), &Extra::default(), "h");
    let out = host.take_output();
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.events[0].event.check, "plugin.dir");
    assert!(out.events[0].event.summary.contains("cannot be read"));

    let defaults = PluginSettings {
        dirs: vec![missing],
        ..PluginSettings::default()
    };
    let mut host = PluginHost::start(&defaults, &Extra::default(), "h");
    assert_eq!(host.take_output(), Output::default());
    assert!(host.plugins().is_empty());
}

#[test]
fn a_config_table_for_no_plugin_is_a_warning() {
    let mut s = settings(vec![]);
    s.tables.insert(
        "hdd-saturaton".into(),
        crate::config::PluginTable {
            table: toml::Table::new(),
            origin: "zpulse.toml:7".into(),
            keys: Default::default(),
        },
    );
    let mut host = PluginHost::start(&s, &Extra::default(), "h");
    let out = host.take_output();
    assert!(out.events.is_empty());
    assert_eq!(out.logs.len(), 1);
    assert!(
        out.logs[0]
            .message
            .starts_with("zpulse.toml:7: [plugins.hdd-saturaton]")
    );
}

#[test]
fn toml_tables_become_messagepack_maps() {
    let table: toml::Table = toml::from_str(
        "a = 1\nb = -2\nc = 1.5\nd = true\ne = \"x\"\nf = [1, \"y\"]\ng = 1979-05-27T07:32:00Z\n[h]\ni = 2\n",
    )
    .unwrap();
    let v = toml_to_value(toml::Value::Table(table));
    let Value::Map(m) = &v else { panic!() };
    assert_eq!(m["a"], Value::UInt(1));
    assert_eq!(m["b"], Value::Int(-2));
    assert_eq!(m["c"], Value::Float(1.5));
    assert_eq!(m["d"], Value::Bool(true));
    assert_eq!(m["f"], Value::List(vec![Value::UInt(1), "y".into()]));
    assert_eq!(m["g"], Value::Str("1979-05-27T07:32:00Z".into()));
    let bytes = sdk::config::encode(&v);
    let back: Value = sdk::config::decode(&bytes).unwrap();
    assert_eq!(back, v);
}

#[test]
fn log_lines_read_well() {
    let l = LogLine {
        level: Level::Warn,
        source: "noisy".into(),
        message: "hi".into(),
    };
    assert_eq!(l.to_string(), "warning: noisy: hi");
}
