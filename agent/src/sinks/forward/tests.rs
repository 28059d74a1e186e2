//! The Forward sink against an in-process receiver that misbehaves on purpose (lost acks,
//! silence, one request per connection, a forged PONG), the spool on its own, and the
//! config. The interoperability tests with an independent receiver are in
//! `agent/tests/forward.rs`.

use super::spool::{BatchId, Spool};
use super::*;
use crate::sinks::spec::SinkKind;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use zpulse_forward::handshake::Helo;
use zpulse_forward::{ClientMessage, FrameDecoder, Limits, encode};
use zpulse_proto::event::{Event, EventTime, Severity, State};

fn stamped(i: u64) -> Stamped {
    Stamped {
        time: EventTime {
            seconds: 1_700_000_000 + i as u32,
            nanos: 0,
        },
        event: Event::finding(
            "test",
            State::Raised,
            Severity::Info,
            format!("subject-{i}"),
            "a finding",
        )
        .with("n", i),
    }
}

fn n_of(record: &[u8]) -> u64 {
    Event::from_msgpack(record).unwrap().data["n"]
        .as_f64()
        .unwrap() as u64
}

/// What the fake receiver does with a batch.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Act {
    Ack,
    /// Close the connection without acking (the ack is lost).
    Close,
    /// Say nothing and keep the connection open.
    Ignore,
}

#[derive(Debug, Clone)]
struct Got {
    connection: usize,
    chunk: String,
    events: Vec<u64>,
}

#[derive(Default)]
struct FakeState {
    got: Vec<Got>,
    script: VecDeque<Act>,
    /// Closes every connection at once, as a receiver that is not there.
    refuse: bool,
}

struct Fake {
    port: u16,
    state: Arc<Mutex<FakeState>>,
    stop: Arc<AtomicBool>,
}

#[derive(Clone, Default)]
struct FakeOptions {
    /// Shared key and the server's hostname.
    key: Option<(&'static str, &'static str)>,
    keepalive_off: bool,
    forge_pong: bool,
}

impl Fake {
    fn start(options: FakeOptions, script: &[Act]) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(FakeState {
            script: script.iter().copied().collect(),
            ..FakeState::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut connection = 0;
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        connection += 1;
                        if s.lock().unwrap().refuse {
                            continue;
                        }
                        serve(sock, connection, &options, &s, &st);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Fake { port, state, stop }
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn got(&self) -> Vec<Got> {
        self.state.lock().unwrap().got.clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(
    mut sock: TcpStream,
    connection: usize,
    o: &FakeOptions,
    state: &Mutex<FakeState>,
    stop: &AtomicBool,
) {
    sock.set_nonblocking(false).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut d = FrameDecoder::new(Limits::default());
    let mut next = |sock: &mut TcpStream| -> Option<ClientMessage> {
        let mut buf = [0u8; 65536];
        loop {
            if let Some(m) = d.next_client().unwrap() {
                return Some(m);
            }
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            match sock.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => d.feed(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return None,
            }
        }
    };
    if let Some((key, hostname)) = o.key {
        let helo = Helo {
            nonce: vec![connection as u8; 16],
            auth: Vec::new(),
            keepalive: !o.keepalive_off,
        };
        sock.write_all(&helo.encode()).unwrap();
        let Some(ClientMessage::Ping(ping)) = next(&mut sock) else {
            return;
        };
        let mut pong = ping.check(&helo, hostname, key, &|_| None);
        if o.forge_pong {
            pong.shared_key_digest = "0".repeat(128);
        }
        let _ = sock.write_all(&pong.encode());
        if !pong.ok {
            return;
        }
    }
    while let Some(m) = next(&mut sock) {
        let ClientMessage::Events(batch) = m else {
            continue;
        };
        let chunk = batch.options.chunk.clone().unwrap_or_default();
        let act = {
            let mut st = state.lock().unwrap();
            st.got.push(Got {
                connection,
                chunk: chunk.clone(),
                events: batch.entries.iter().map(|e| n_of(&e.record)).collect(),
            });
            st.script.pop_front().unwrap_or(Act::Ack)
        };
        match act {
            Act::Ack => {
                let _ = sock.write_all(&encode::ack(&chunk));
                if o.keepalive_off {
                    return;
                }
            }
            Act::Close => return,
            Act::Ignore => {}
        }
    }
}

fn sink_config(fake: &Fake, dir: &Path) -> ForwardConfig {
    ForwardConfig {
        spool_dir: Some(dir.to_path_buf()),
        self_hostname: Some("agent".into()),
        ack_timeout: Duration::from_secs(3),
        connect_timeout: Duration::from_secs(3),
        ..ForwardConfig::new(fake.address())
    }
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

#[test]
fn a_lost_ack_means_the_same_chunk_again() {
    let fake = Fake::start(FakeOptions::default(), &[Act::Close]);
    let dir = tempfile::tempdir().unwrap();
    let mut sink = ForwardSink::new(sink_config(&fake, dir.path())).unwrap();
    sink.deliver(&(0..3).map(stamped).collect::<Vec<_>>())
        .unwrap();
    sink.flush(soon()).unwrap();
    let got = fake.got();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].chunk, got[1].chunk);
    assert_eq!(got[0].events, [0, 1, 2]);
    assert_eq!(got[1].events, [0, 1, 2]);
    assert_ne!(got[0].connection, got[1].connection);
    assert_eq!(sink.stats().delivered, 3);
    assert!(ChunkId::from_base64(&got[0].chunk).is_some());
}

#[test]
fn no_ack_in_time_means_a_new_connection_and_the_same_chunk() {
    let fake = Fake::start(FakeOptions::default(), &[Act::Ignore]);
    let dir = tempfile::tempdir().unwrap();
    let mut sink = ForwardSink::new(ForwardConfig {
        ack_timeout: Duration::from_millis(200),
        ..sink_config(&fake, dir.path())
    })
    .unwrap();
    sink.deliver(&[stamped(7)]).unwrap();
    sink.flush(soon()).unwrap();
    let got = fake.got();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].chunk, got[1].chunk);
    assert_eq!(sink.stats().delivered, 1);
    assert_eq!(sink.last_error(), None);
}

#[test]
fn keepalive_false_means_one_batch_per_connection() {
    let fake = Fake::start(
        FakeOptions {
            key: Some(("k", "server")),
            keepalive_off: true,
            ..FakeOptions::default()
        },
        &[],
    );
    let dir = tempfile::tempdir().unwrap();
    let mut sink = ForwardSink::new(ForwardConfig {
        shared_key: Some("k".into()),
        batch_max_events: 2,
        ..sink_config(&fake, dir.path())
    })
    .unwrap();
    sink.deliver(&(0..6).map(stamped).collect::<Vec<_>>())
        .unwrap();
    sink.flush(soon()).unwrap();
    let got = fake.got();
    let connections: Vec<usize> = got.iter().map(|g| g.connection).collect();
    assert_eq!(connections, [1, 2, 3], "{got:?}");
    let events: Vec<u64> = got.iter().flat_map(|g| g.events.clone()).collect();
    assert_eq!(events, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_pong_without_the_key_is_refused() {
    let fake = Fake::start(
        FakeOptions {
            key: Some(("k", "server")),
            forge_pong: true,
            ..FakeOptions::default()
        },
        &[],
    );
    let dir = tempfile::tempdir().unwrap();
    let mut sink = ForwardSink::new(ForwardConfig {
        shared_key: Some("k".into()),
        ..sink_config(&fake, dir.path())
    })
    .unwrap();
    sink.deliver(&[stamped(1)]).unwrap();
    assert!(
        sink.flush(Instant::now() + Duration::from_millis(500))
            .is_err()
    );
    assert!(sink.last_error().unwrap().contains("does not match"));
    assert!(fake.got().is_empty(), "no event goes to an unproven server");
    assert_eq!(sink.stats().pending, 1);
}

#[test]
fn a_full_spool_drops_the_oldest_and_counts_them() {
    let fake = Fake::start(FakeOptions::default(), &[]);
    fake.state.lock().unwrap().refuse = true;
    let dir = tempfile::tempdir().unwrap();
    let mut sink = ForwardSink::new(ForwardConfig {
        spool_max_bytes: 1 << 20,
        batch_max_bytes: 64 << 10,
        ..sink_config(&fake, dir.path())
    })
    .unwrap();
    // About 1.5 KiB per event: 1500 events are twice the spool.
    let big = |i: u64| {
        let mut s = stamped(i);
        s.event.summary = "x".repeat(1000);
        s.event.advice = Some("y".repeat(400));
        s
    };
    let sent: Vec<Stamped> = (0..1500).map(big).collect();
    for part in sent.chunks(50) {
        sink.deliver(part).unwrap();
    }
    let stats = sink.stats();
    assert!(stats.dropped > 0, "{stats:?}");
    assert_eq!(stats.dropped + stats.pending, 1500, "{stats:?}");
    assert!(stats.spool_bytes <= 1 << 20, "{stats:?}");

    fake.state.lock().unwrap().refuse = false;
    sink.flush(soon()).unwrap();
    // What is left is the newest events, in order.
    let events: Vec<u64> = fake.got().iter().flat_map(|g| g.events.clone()).collect();
    let first = stats.dropped;
    assert_eq!(events, (first..1500).collect::<Vec<_>>());
    let stats = sink.stats();
    assert_eq!((stats.delivered, stats.pending), (1500 - first, 0));
}

#[test]
fn a_restart_replays_the_spool_in_order() {
    let fake = Fake::start(FakeOptions::default(), &[]);
    fake.state.lock().unwrap().refuse = true;
    let dir = tempfile::tempdir().unwrap();
    let config = ForwardConfig {
        batch_max_events: 3,
        ..sink_config(&fake, dir.path())
    };
    let mut sink = ForwardSink::new(config.clone()).unwrap();
    sink.deliver(&(0..10).map(stamped).collect::<Vec<_>>())
        .unwrap();
    drop(sink);
    let mut sink = ForwardSink::new(config).unwrap();
    assert_eq!(sink.stats().pending, 10);
    sink.deliver(&(10..12).map(stamped).collect::<Vec<_>>())
        .unwrap();
    fake.state.lock().unwrap().refuse = false;
    sink.flush(soon()).unwrap();
    let events: Vec<u64> = fake.got().iter().flat_map(|g| g.events.clone()).collect();
    assert_eq!(events, (0..12).collect::<Vec<_>>());
}

#[test]
fn batches_are_cut_at_tags_and_limits() {
    let fake = Fake::start(FakeOptions::default(), &[]);
    let dir = tempfile::tempdir().unwrap();
    let sink = ForwardSink::new(ForwardConfig {
        batch_max_events: 3,
        ..sink_config(&fake, dir.path())
    })
    .unwrap();
    let mut events: Vec<Stamped> = (0..7).map(stamped).collect();
    events[4].event = Event::metrics("m", "s", "metrics");
    let cut = sink.encode(&events);
    let sizes: Vec<u32> = cut.iter().map(|c| c.1).collect();
    // 0 1 2 | 3 | metrics | 5 6
    assert_eq!(sizes, [3, 1, 1, 2]);
    let chunks: std::collections::HashSet<_> = cut.iter().map(|c| c.0).collect();
    assert_eq!(chunks.len(), 4, "every batch has its own chunk id");
    assert!(sink.encode(&[]).is_empty());
    // The daemon's idle ticks deliver nothing: no batch, no spool write.
    let mut sink = sink;
    sink.deliver(&[]).unwrap();
    assert_eq!(sink.stats(), SinkStats::default());
}

#[test]
fn spool_appends_acks_and_deletes_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (mut spool, rec) = Spool::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(rec, Default::default());
    assert!(spool.is_empty());
    for i in 0..3u8 {
        spool
            .append(ChunkId([i; 16]), u32::from(i) + 1, &[i; 100])
            .unwrap();
    }
    spool.sync().unwrap();
    assert_eq!(spool.events(), 6);
    let head = spool.read_head().unwrap().unwrap();
    assert_eq!(
        (head.chunk, head.events, head.message.clone()),
        (ChunkId([0; 16]), 1, vec![0; 100])
    );
    // An ack for something other than the head changes nothing.
    assert_eq!(
        spool.ack(BatchId {
            segment: 99,
            offset: 0
        }),
        None
    );
    assert_eq!(spool.ack(head.id), Some(1));
    assert_eq!(spool.events(), 5);
    // Reopening skips the acked batch (the cursor) and finds the others.
    drop(spool);
    let (mut spool, rec) = Spool::open(dir.path(), 1 << 20).unwrap();
    assert_eq!((rec.batches, rec.events), (2, 5));
    let b = spool.read_head().unwrap().unwrap();
    assert_eq!(b.chunk, ChunkId([1; 16]));
    spool.ack(b.id);
    let b = spool.read_head().unwrap().unwrap();
    spool.ack(b.id);
    assert!(spool.is_empty());
    assert_eq!(spool.disk_bytes(), 0);
    let segments = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "seg")
        })
        .count();
    assert_eq!(segments, 0, "acked segments are deleted");
    // New appends after everything was acked go on as usual.
    spool.append(ChunkId([9; 16]), 1, b"m").unwrap();
    drop(spool);
    let (spool, rec) = Spool::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(rec.events, 1);
    assert_eq!(spool.read_head().unwrap().unwrap().chunk, ChunkId([9; 16]));
}

#[test]
fn a_torn_record_is_cut_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (mut spool, _) = Spool::open(dir.path(), 1 << 20).unwrap();
    spool.append(ChunkId([1; 16]), 1, &[1; 50]).unwrap();
    spool.append(ChunkId([2; 16]), 1, &[2; 50]).unwrap();
    drop(spool);
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .unwrap();
    // A crash in the middle of the second record.
    let len = std::fs::metadata(&seg).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    let (spool, rec) = Spool::open(dir.path(), 1 << 20).unwrap();
    assert_eq!((rec.batches, rec.events), (1, 1));
    assert_eq!(rec.torn_bytes, 50 + 36 - 10);
    assert_eq!(spool.read_head().unwrap().unwrap().chunk, ChunkId([1; 16]));
    // Damage inside a record is found by the checksum.
    drop(spool);
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[40] ^= 0xff;
    std::fs::write(&seg, bytes).unwrap();
    let (spool, rec) = Spool::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(rec.batches, 0);
    assert!(spool.is_empty());
}

#[test]
fn a_full_spool_drops_whole_oldest_segments() {
    let dir = tempfile::tempdir().unwrap();
    // 1 MiB bound: segments of 128 KiB.
    let (mut spool, _) = Spool::open(dir.path(), 1 << 20).unwrap();
    let mut dropped = 0;
    for i in 0..100u32 {
        dropped += spool
            .append(ChunkId([i as u8; 16]), 10, &vec![0; 30_000])
            .unwrap()
            .dropped_events;
        assert!(spool.disk_bytes() <= 1 << 20);
    }
    assert!(dropped > 0);
    assert_eq!(spool.events() + dropped, 1000);
    // Too big for the spool at all: refused, nothing dropped for it.
    assert!(
        spool
            .append(ChunkId([0; 16]), 1, &vec![0; 2 << 20])
            .is_err()
    );
    assert_eq!(spool.events() + dropped, 1000);
}

#[test]
fn config_keys_defaults_and_errors() {
    let base = Path::new("/etc/zpulse");
    let parse = |text: &str| {
        let table: toml::Table = toml::from_str(text).unwrap();
        ForwardConfig::read(&table, Some(base))
    };
    let c = parse("type = \"forward\"\naddress = \"collector:24224\"").unwrap();
    assert_eq!(c, ForwardConfig::new("collector:24224"));
    assert_eq!(c.spool_max_bytes, 256 << 20);
    assert_eq!(c.ack_timeout, Duration::from_secs(30));
    assert_eq!(
        c.spool_dir(),
        Path::new(if cfg!(target_os = "freebsd") {
            "/var/db/zpulse/spool/forward-collector_24224"
        } else {
            "/var/lib/zpulse/spool/forward-collector_24224"
        })
    );

    let c = parse(
        r#"
address = "[::1]:9999"
shared_key = "k"
self_hostname = "nas1"
gzip = true
spool_dir = "spool"
spool_max_bytes = 10485760
batch_max_events = 10
batch_max_bytes = 65536
ack_timeout = "500ms"
connect_timeout = 2
[tls]
ca = "ca.pem"
cert = "/abs/cert.pem"
key = "key.pem"
server_name = "collector.example.net"
"#,
    )
    .unwrap();
    assert_eq!(c.spool_dir(), Path::new("/etc/zpulse/spool"));
    assert_eq!(c.ack_timeout, Duration::from_millis(500));
    assert_eq!(c.connect_timeout, Duration::from_secs(2));
    let tls = c.tls.unwrap();
    assert_eq!(tls.ca.unwrap(), Path::new("/etc/zpulse/ca.pem"));
    assert_eq!(tls.cert.unwrap(), Path::new("/abs/cert.pem"));
    assert_eq!(tls.server_name.as_deref(), Some("collector.example.net"));

    for (text, why) in [
        ("", "missing field `address`"),
        ("address = \"c\"\nadress = 1", "unknown field `adress`"),
        ("address = \"c\"\nack_timeout = \"soon\"", "ack_timeout: "),
        (
            "address = \"c\"\n[tls]\ncafile = \"x\"",
            "tls.cafile: unknown field `cafile`",
        ),
        ("address = \"c\"\n[tls]\ncert = \"x\"", "both cert and key"),
        ("address = \"c:0\"", "bad port"),
        ("address = \"c:x\"", "bad port"),
        ("address = \"\"", "no host"),
        ("address = \"c\"\nshared_key = \"\"", "shared_key"),
        ("address = \"c\"\nspool_max_bytes = 1000", "spool_max_bytes"),
        ("address = \"c\"\nbatch_max_events = 0", "batch_max_events"),
        (
            "address = \"c\"\nspool_max_bytes = 2097152\nbatch_max_bytes = 1048576",
            "quarter",
        ),
        (
            "address = \"c\"\nconnect_timeout = \"0s\"",
            "connect_timeout",
        ),
        ("address = \"c\"\nself_hostname = \"a b\"", "self_hostname"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            err.contains(why),
            "{text:?}: {err:?} should contain {why:?}"
        );
    }
}

#[test]
fn addresses() {
    let ok = |a: &str| split_address(a).unwrap();
    assert_eq!(ok("collector:24225"), ("collector".into(), 24225));
    assert_eq!(ok("collector"), ("collector".into(), 24224));
    assert_eq!(ok("10.0.0.1:1"), ("10.0.0.1".into(), 1));
    assert_eq!(ok("[::1]:24226"), ("::1".into(), 24226));
    assert_eq!(ok("[::1]"), ("::1".into(), 24224));
    assert_eq!(ok("fe80::1"), ("fe80::1".into(), 24224));
    for bad in ["", ":24224", "[::1", "[::1]x", "c:65536", "a b:1"] {
        assert!(split_address(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn tls_files_are_checked_when_the_sink_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let missing = ForwardSink::new(ForwardConfig {
        tls: Some(TlsConfig {
            ca: Some(dir.path().join("missing.pem")),
            ..TlsConfig::default()
        }),
        spool_dir: Some(dir.path().join("spool")),
        ..ForwardConfig::new("127.0.0.1:1")
    });
    let err = missing.err().unwrap();
    assert!(err.starts_with("tls.ca: "), "{err}");
    std::fs::write(dir.path().join("empty.pem"), "not a certificate\n").unwrap();
    let empty = ForwardSink::new(ForwardConfig {
        tls: Some(TlsConfig {
            ca: Some(dir.path().join("empty.pem")),
            ..TlsConfig::default()
        }),
        spool_dir: Some(dir.path().join("spool")),
        ..ForwardConfig::new("127.0.0.1:1")
    });
    assert!(empty.err().unwrap().contains("no usable CA"));
}

/// A lab reading (OpenZFS 2.1 under a storm of I/O: 2,700 series at full detail).
fn lab_reading() -> Reading {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/lab/storm/series/000");
    Reading::First(Arc::new(crate::capture::load(&dir).unwrap()))
}

#[test]
fn metrics_wait_for_the_host_name_and_never_crowd_events_out_of_the_spool() {
    // The collector is down: everything stays in a 1 MiB spool.
    let fake = Fake::start(FakeOptions::default(), &[]);
    fake.state.lock().unwrap().refuse = true;
    let dir = tempfile::tempdir().unwrap();
    let mut sink = ForwardSink::new(ForwardConfig {
        metrics: true,
        spool_max_bytes: 1 << 20,
        batch_max_bytes: 64 << 10,
        ..sink_config(&fake, dir.path())
    })
    .unwrap();
    assert!(sink.wants_readings());
    let reading = lab_reading();
    let record = exposition::series_record(reading.snapshot(), "h");
    // Before any event the host is unknown: the reading waits, nothing is spooled.
    sink.observe(&reading).unwrap();
    assert_eq!(sink.stats().pending, 0);
    // The first events name the host; the waiting reading goes in with them.
    sink.deliver(&[stamped(0)]).unwrap();
    assert_eq!(sink.stats().pending, 2);
    // Some records fit under half of the spool; the readings after them (three here) are
    // skipped, the first skip said once (an error), the rest silent.
    let fit = (((1u64 << 20) as f64 * METRICS_SHARE) as u64 / record.len() as u64).max(1);
    let readings = fit + 4;
    let mut results = Vec::new();
    for _ in 1..readings {
        results.push(sink.observe(&reading).is_ok());
    }
    let spooled_metrics = sink.stats().pending - 1;
    assert_eq!(spooled_metrics, fit);
    assert_eq!(sink.metrics_skipped(), readings - fit);
    assert_eq!(results.iter().filter(|ok| !**ok).count(), 1);
    // Findings still find room: none dropped.
    let events: Vec<Stamped> = (1..=200).map(stamped).collect();
    sink.deliver(&events).unwrap();
    let st = sink.stats();
    assert_eq!(st.dropped, 0);
    assert_eq!(st.pending, spooled_metrics + 201);
    assert!(st.spool_bytes <= 1 << 20);
}

#[test]
fn without_the_option_a_sink_takes_no_readings() {
    let fake = Fake::start(FakeOptions::default(), &[]);
    let dir = tempfile::tempdir().unwrap();
    let mut sink = ForwardSink::new(sink_config(&fake, dir.path())).unwrap();
    assert!(!sink.wants_readings());
    sink.observe(&lab_reading()).unwrap();
    assert_eq!(sink.stats().pending, 0);
}
