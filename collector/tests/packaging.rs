//! The packaged files agree with the code: the sample zpulse-collector.toml documents the
//! real defaults and parses with every setting switched on, and the systemd unit's
//! MemoryMax= and TasksMax= hold what the default limits allow.

use std::path::Path;
use zpulse_collector::config::Config;

fn packaging(file: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../packaging")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_sample_config_parses_and_shows_the_defaults() {
    let sample = packaging("conf/zpulse-collector.toml");
    // As shipped (everything commented out): the defaults, which listen on loopback only.
    let shipped = Config::parse(&sample, Path::new("/etc/zpulse-collector")).unwrap();
    assert_eq!(shipped, Config::default());
    assert_eq!(shipped.listen, "127.0.0.1:24224");
    // Every setting switched on (`#key = …` and `#[table]` lines uncommented): still valid,
    // and each limit shown is the default.
    let on: String = sample
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest)
                if rest.starts_with(|c: char| c.is_ascii_lowercase() || c == '[' || c == '"') =>
            {
                rest
            }
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let c = Config::parse(&on, Path::new("/etc/zpulse-collector"))
        .unwrap_or_else(|e| panic!("{e}\n{on}"));
    let d = Config::default();
    assert_eq!(c.max_connections, d.max_connections);
    assert_eq!(c.max_connections_per_peer, d.max_connections_per_peer);
    assert_eq!(c.max_frame_bytes, d.max_frame_bytes);
    assert_eq!(c.max_inflated_bytes, d.max_inflated_bytes);
    assert_eq!(c.max_entries, d.max_entries);
    assert_eq!(c.max_entries_per_second, d.max_entries_per_second);
    assert_eq!(c.max_record_bytes, d.max_record_bytes);
    assert_eq!(c.max_tag_bytes, d.max_tag_bytes);
    assert_eq!(c.max_buffered_bytes, d.max_buffered_bytes);
    assert_eq!(c.max_inflight_bytes, d.max_inflight_bytes);
    assert_eq!(c.max_wal_bytes, d.max_wal_bytes);
    assert_eq!(c.read_timeout, d.read_timeout);
    assert_eq!(c.first_message_timeout, d.first_message_timeout);
    assert_eq!(c.idle_timeout, d.idle_timeout);
    assert_eq!(c.max_clock_skew, d.max_clock_skew);
    assert_eq!(c.retention.max_age, d.retention.max_age);
    assert_eq!(c.retention.dedup_window, d.retention.dedup_window);
    assert_eq!(c.listen, d.listen);
    assert_eq!(c.db, d.db);
    assert_eq!(c.clients["nas2"].hosts, ["nas2", "nas2-backup"]);
}

/// `1G`, `512M` (systemd.resource-control(5): K, M, G, T are powers of 1024).
fn bytes(v: &str) -> u64 {
    let (n, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: u64 = n.parse().unwrap();
    n << match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        u => panic!("unit {u}"),
    }
}

#[test]
fn the_unit_ceilings_hold_the_default_limits() {
    let unit = packaging("systemd/zpulse-collector.service");
    let value = |key: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key}= missing"))
            .to_owned()
    };
    let d = Config::default();
    // Threads: one per connection, the web page's 32, and acceptor, writer, web listener,
    // signals, main, alerting.
    let tasks: usize = value("TasksMax").parse().unwrap();
    assert!(tasks >= d.max_connections + 32 + 6, "TasksMax={tasks}");
    // Memory: the two global budgets, two gzip messages being decoded at their limits
    // (frame + inflated bytes, and as much again for their rows), and 128 MiB for SQLite,
    // stacks and the rest.
    let memory = bytes(&value("MemoryMax"));
    let need = (d.max_buffered_bytes + d.max_inflight_bytes) as u64
        + zpulse_collector::server::DECODERS
            * 2
            * (d.max_frame_bytes + d.max_inflated_bytes) as u64
        + (128 << 20);
    assert!(memory >= need, "MemoryMax={memory} < {need}");
    assert!(
        !unit.contains("0.0.0.0"),
        "the unit must not open the listener"
    );
}
