use super::*;
use zpulse_proto::Snapshot;
use zpulse_proto::event::{Event, EventTime, Severity};

fn finding(state: State, severity: Severity) -> Stamped {
    Stamped {
        time: EventTime::from_unix(1_700_000_000.0),
        event: Event::finding(
            "hdd-saturation",
            state,
            severity,
            "tank/normal/mirror-0",
            "busy",
        ),
    }
}

fn textfile_sink(dir: &Path) -> PrometheusSink {
    let mut table = toml::Table::new();
    table.insert("textfile".into(), "zpulse.prom".into());
    let config = PrometheusConfig::from_table(&table, Some(dir)).unwrap();
    assert_eq!(config.listen, None, "a textfile alone opens no port");
    PrometheusSink::new(config).unwrap()
}

#[test]
fn findings_open_on_raise_follow_updates_and_go_on_clear() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = textfile_sink(dir.path());
    let file = dir.path().join("zpulse.prom");
    sink.observe(&Reading::First(Arc::new(Snapshot::default())))
        .unwrap();
    let read = || std::fs::read_to_string(&file).unwrap();
    assert!(!read().contains("zpulse_finding{"));
    sink.deliver(&[finding(State::Raised, Severity::Warning)])
        .unwrap();
    assert!(read().contains(
        r#"zpulse_finding{check="hdd-saturation",subject="tank/normal/mirror-0",severity="warning"} 1"#
    ));
    sink.deliver(&[finding(State::Updated, Severity::Critical)])
        .unwrap();
    let text = read();
    assert!(text.contains(r#"severity="critical"} 1"#), "{text}");
    assert!(
        !text.contains(r#"severity="warning""#),
        "one series per finding: {text}"
    );
    sink.deliver(&[finding(State::Cleared, Severity::Critical)])
        .unwrap();
    assert!(!read().contains("zpulse_finding{"));
    // Written by rename: no temporary file is left for node_exporter to trip over.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["zpulse.prom"]);
}

#[test]
fn settings_are_checked_with_clear_errors() {
    let table = |text: &str| -> toml::Table { toml::from_str(text).unwrap() };
    let err = |text: &str| PrometheusConfig::from_table(&table(text), None).unwrap_err();
    assert!(err(r#"listen = "localhost""#).contains("is not IP:PORT"));
    assert!(err(r#"listen = "127.0.0.1:0""#).contains("give a port"));
    assert!(err(r#"listen = 9134"#).contains("give a string"));
    assert!(err(r#"textfile = "/tmp/zpulse.txt""#).contains("must end in .prom"));
    assert!(err(r#"textfile = "/nonexistent-dir/zpulse.prom""#).contains("does not exist"));
    assert!(err(r#"listen = """#).contains("needs a textfile"));
    assert!(err(r#"max_connections = 0"#).contains("from 1 to 256"));
    assert!(err(r#"timeout = "0s""#).contains("between 1ms and 5m"));
    assert!(err(r#"port = 9134"#).contains("unknown setting"));
    assert!(err(r#"detail = "all""#).contains(r#"is not one of "standard", "leaves", "full""#));
    let full = PrometheusConfig::from_table(&table(r#"detail = "full""#), None).unwrap();
    assert_eq!(full.detail, Detail::Full);
    let default = PrometheusConfig::from_table(&table(""), None).unwrap();
    assert_eq!(default.listen, Some("127.0.0.1:9134".parse().unwrap()));
    assert_eq!(default.detail, Detail::Standard);
}
