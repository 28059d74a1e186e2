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
    let config = PrometheusConfig::read(&table, Some(dir)).unwrap();
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
    let err = |text: &str| PrometheusConfig::read(&table(text), None).unwrap_err();
    assert!(err(r#"listen = "localhost""#).contains("is not IP:PORT"));
    assert!(err(r#"listen = "127.0.0.1:0""#).contains("give a port"));
    assert!(err(r#"listen = 9134"#).contains("expected a string"));
    assert!(err(r#"textfile = "/tmp/zpulse.txt""#).contains("must end in .prom"));
    assert!(err(r#"textfile = "/nonexistent-dir/zpulse.prom""#).contains("does not exist"));
    assert!(err(r#"listen = """#).contains("needs a textfile"));
    assert!(err(r#"max_connections = 0"#).contains("from 1 to 256"));
    assert!(err(r#"timeout = "0s""#).contains("between 1ms and 5m"));
    assert!(err(r#"port = 9134"#).contains("unknown field `port`"));
    assert!(err(r#"detail = "all""#).contains(r#"is not one of "standard", "leaves", "full""#));
    let full = PrometheusConfig::read(&table(r#"detail = "full""#), None).unwrap();
    assert_eq!(full.detail, Detail::Full);
    let default = PrometheusConfig::read(&table(""), None).unwrap();
    assert_eq!(default.listen, Some("127.0.0.1:9134".parse().unwrap()));
    assert_eq!(default.detail, Detail::Standard);
}

fn lab(capture: &str) -> Reading {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/lab")
        .join(capture);
    Reading::First(Arc::new(crate::capture::load(&dir).unwrap()))
}

/// A GET of /metrics on `addr`: the body, gunzipped when `gzip`.
fn scrape(addr: SocketAddr, gzip: bool) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let encoding = if gzip {
        "Accept-Encoding: gzip\r\n"
    } else {
        ""
    };
    write!(s, "GET /metrics HTTP/1.1\r\n{encoding}\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    assert!(
        buf.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        &buf[..buf.len().min(40)]
    );
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let body = buf.split_off(end);
    if !gzip {
        return body;
    }
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut plain)
        .unwrap();
    plain
}

/// With only a listener, a reading is rendered by its first scrape and only then: readings
/// nobody scrapes cost no rendering, and every later scrape of the same reading, plain or
/// gzip, gets that one rendering.
#[test]
fn a_listener_renders_a_reading_once_when_it_is_scraped() {
    let mut sink =
        PrometheusSink::new(PrometheusConfig::ephemeral_loopback(Detail::Standard)).unwrap();
    let addr = sink.local_addr().unwrap();
    let shared = Arc::clone(&sink.endpoint.as_ref().unwrap().shared);
    let renderings = || shared.renderings.load(std::sync::atomic::Ordering::Relaxed);
    let (first, second) = (lab("basic/000"), lab("basic/001"));
    for reading in [&first, &second, &first] {
        sink.observe(reading).unwrap();
    }
    assert_eq!(renderings(), 0, "readings nobody scraped were rendered");
    let plain = scrape(addr, false);
    assert_eq!(scrape(addr, true), plain);
    assert_eq!(scrape(addr, false), plain);
    assert_eq!(renderings(), 1);
    // The last reading's: basic/000's own time.
    let taken = format!(
        "\nzpulse_last_sample_timestamp_seconds {}\n",
        first.snapshot().taken_at
    );
    assert!(String::from_utf8_lossy(&plain).contains(&taken));
    sink.observe(&second).unwrap();
    let next = scrape(addr, true);
    assert_eq!(renderings(), 2);
    let taken = format!(
        "\nzpulse_last_sample_timestamp_seconds {}\n",
        second.snapshot().taken_at
    );
    assert!(String::from_utf8_lossy(&next).contains(&taken));
}

/// Events that change nothing the exposition shows do not rewrite the textfile, a reading
/// does, and a clean exit (the sink's flush) removes it.
#[test]
fn the_textfile_is_rewritten_only_for_a_change_and_removed_at_exit() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let mut sink = textfile_sink(dir.path());
    let file = dir.path().join("zpulse.prom");
    let inode = || std::fs::metadata(&file).unwrap().ino();
    sink.observe(&lab("basic/000")).unwrap();
    let written = inode();
    sink.deliver(&[finding(State::Raised, Severity::Warning)])
        .unwrap();
    let with_finding = inode();
    assert_ne!(with_finding, written, "a new finding rewrites the file");
    // The same finding again, same severity: nothing to show.
    sink.deliver(&[finding(State::Updated, Severity::Warning)])
        .unwrap();
    assert_eq!(
        inode(),
        with_finding,
        "an unchanged exposition was rewritten"
    );
    sink.observe(&lab("basic/001")).unwrap();
    assert_ne!(inode(), with_finding, "a new reading was not written");
    sink.flush(Instant::now()).unwrap();
    assert!(!file.exists(), "the textfile outlived a clean exit");
}

/// The kernel events the lab's overflow phase recorded, as the agent sends them, and the
/// note of what the kernel dropped (its `missing` the capture's own count).
#[test]
fn kernel_events_are_counted_by_class_and_pool_and_what_was_dropped_too() {
    let capture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/lab/events-overflow/series/001"
    );
    let batch = crate::capture::load_zevents(Path::new(capture));
    let dir = tempfile::tempdir().unwrap();
    let mut sink = textfile_sink(dir.path());
    sink.observe(&Reading::First(Arc::new(Snapshot::default())))
        .unwrap();
    let mut stamped: Vec<Stamped> = batch
        .events
        .iter()
        .map(|z| Stamped {
            time: z.time,
            event: z.to_event(),
        })
        .collect();
    stamped.extend(crate::daemon::zevents::dropped_note(&batch));
    sink.deliver(&stamped).unwrap();
    let text = std::fs::read_to_string(dir.path().join("zpulse.prom")).unwrap();
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    for z in &batch.events {
        *want
            .entry((z.class.clone(), z.pool.clone().unwrap_or_default()))
            .or_default() += 1;
    }
    assert!(want.len() >= 2, "{want:?}");
    for ((class, pool), n) in want {
        let line = format!("zpulse_zevents_total{{class=\"{class}\",pool=\"{pool}\"}} {n}");
        assert!(text.contains(&line), "{line} not in:\n{text}");
    }
    let dropped = batch.dropped + batch.missing;
    assert!(dropped > 0);
    assert!(
        text.contains(&format!("zpulse_zevents_dropped_total {dropped}")),
        "{text}"
    );
}

/// Planning binds nothing (check-config and a reload's check have no side effects); the
/// start binds, and a port another process holds is the start's error, naming the address.
#[test]
fn planning_binds_nothing_and_a_busy_port_fails_the_start() {
    use crate::sinks::spec::SinkKind;
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let mut table = toml::Table::new();
    table.insert("listen".into(), addr.to_string().into());
    let config = PrometheusConfig::read(&table, None).unwrap();
    let planned = config.plan().unwrap();
    assert_eq!(planned.name(), format!("prometheus {addr}"));
    let Err(e) = planned.start() else {
        panic!("started on a port another socket holds")
    };
    assert!(
        e.contains(&format!("listen {addr}: the port is already in use")),
        "{e}"
    );
    drop(busy);

    // A free port: planned twice, nothing bound in between, then started once.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let mut table = toml::Table::new();
    table.insert("listen".into(), addr.to_string().into());
    let config = PrometheusConfig::read(&table, None).unwrap();
    let first = config.plan().unwrap();
    let _second = config.plan().unwrap();
    std::net::TcpListener::bind(addr).expect("planning bound the port");
    let sink = first.start().unwrap();
    assert_eq!(sink.name(), format!("prometheus {addr}"));
}

/// The agent's own figures, read through handles kept open, are those of the moment they are
/// read, as a read by path gives them: not the ones of when the handles were opened.
#[test]
fn own_figures_read_through_kept_handles_are_current() {
    if !Path::new("/proc/self/stat").exists() {
        return;
    }
    let mut own = crate::base::selfstat::KeptSelfStat::default();
    let first = own.read();
    assert!(first.rss_bytes.is_some_and(|b| b > 0), "{first:?}");
    let start = first.cpu_seconds.unwrap();
    // CPU spent until a read by path shows 5 more ticks of USER_HZ.
    let mut spin = 0u64;
    let by_path = loop {
        for i in 0..1_000_000u64 {
            spin = std::hint::black_box(spin.wrapping_mul(31).wrapping_add(i));
        }
        let now = crate::base::selfstat::read().cpu_seconds.unwrap();
        if now >= start + 0.05 {
            break now;
        }
    };
    let again = own.read();
    assert!(
        again.cpu_seconds.unwrap() >= by_path,
        "{again:?} < {by_path}"
    );
    assert!(again.rss_bytes.is_some_and(|b| b > 0));
}
