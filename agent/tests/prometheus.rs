//! The Prometheus exposition and sink, run as the binary: `promtool check metrics` (Debian's
//! `prometheus` package, which `.ci/run` installs) on every lab capture, the `/metrics`
//! endpoint's negotiation (gzip, OpenMetrics), its limits against idle clients, and the
//! errors `check-config` gives for bad settings (it binds no port).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn captures(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("zpulse-capture.toml").exists() {
        out.push(dir.to_path_buf());
        return;
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for e in entries {
        captures(&e, out);
    }
}

/// `promtool check metrics` on `text`: its complaints (empty when clean).
fn promtool(text: &[u8]) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run `promtool` ({e}): install Debian's prometheus package (bash .ci/run does)")
        });
    child.stdin.take().unwrap().write_all(text).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn promtool_finds_nothing_to_lint_in_any_lab_capture() {
    let mut dirs = Vec::new();
    captures(&workspace().join("tests/fixtures/lab"), &mut dirs);
    assert!(dirs.len() >= 40, "{} lab captures", dirs.len());
    for dir in dirs {
        let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
            .args(["once", "--format", "prometheus", "--root"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        // Each pool the capture's kstats list (a directory per pool beside `arcstats`) has its
        // size exported; a capture of a host whose pools were all destroyed has none.
        let kstats = dir.join("proc/spl/kstat/zfs");
        for pool in std::fs::read_dir(&kstats).into_iter().flatten().flatten() {
            if pool.path().is_dir() {
                let name = pool.file_name().into_string().unwrap();
                assert!(
                    text.contains(&format!("zpulse_pool_size_bytes{{pool=\"{name}\"")),
                    "{}: {name}",
                    dir.display()
                );
            }
        }
        let (ok, complaints) = promtool(text.as_bytes());
        assert!(
            ok && complaints.trim().is_empty(),
            "{}: {complaints}",
            dir.display()
        );
    }
}

#[test]
fn once_refuses_rates_in_prometheus_format() {
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["once", "--format", "prometheus", "--interval", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("counters as counters"));
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Response {
    status: u16,
    headers: String,
    body: Vec<u8>,
}

fn request(addr: &str, head: &str) -> Response {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let headers = String::from_utf8_lossy(&buf[..end]).into_owned();
    Response {
        status: headers.split_whitespace().nth(1).unwrap().parse().unwrap(),
        headers,
        body: buf[end + 4..].to_vec(),
    }
}

/// `zpulse run --replay` of the basic lab series, holding each reading long enough for the
/// test; killed when dropped.
struct Agent(Child, String);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn agent(dir: &Path, sink: &str) -> Agent {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let config = dir.join("zpulse.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins]\ndirs = []\n[[sink]]\ntype = \"prometheus\"\nlisten = \"{addr}\"\n{sink}"
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["run", "--pace", "600", "--config"])
        .arg(&config)
        .arg("--replay")
        .arg(workspace().join("tests/fixtures/lab/basic"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("agent.log")).unwrap())
        .spawn()
        .unwrap();
    let agent = Agent(child, addr);
    // Up once the first reading is served (503 before it).
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut s) = TcpStream::connect(&agent.1) {
            let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
            let mut b = Vec::new();
            let _ = s.read_to_end(&mut b);
            if b.starts_with(b"HTTP/1.1 200") {
                return agent;
            }
        }
        assert!(Instant::now() < until, "the agent never served a reading");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn metrics_endpoint_negotiates_format_and_compression() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let a = agent(&dir, "");
    let plain = request(&a.1, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(plain.status, 200);
    assert!(
        plain
            .headers
            .contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{}",
        plain.headers
    );
    // The first capture of the series, as its manifest dates it.
    let text = String::from_utf8(plain.body.clone()).unwrap();
    assert!(text.contains("\nzpulse_last_sample_timestamp_seconds 1796030139.1137395\n"));
    assert!(text.contains("\nzpulse_agent_resident_memory_bytes "));
    let (ok, complaints) = promtool(&plain.body);
    assert!(ok && complaints.trim().is_empty(), "{complaints}");

    let gz = request(
        &a.1,
        "GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip, deflate\r\n\r\n",
    );
    assert!(
        gz.headers.contains("Content-Encoding: gzip"),
        "{}",
        gz.headers
    );
    let mut inflated = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut inflated)
        .unwrap();
    assert_eq!(inflated, plain.body);

    let om = request(
        &a.1,
        "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n",
    );
    assert!(
        om.headers
            .contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{}",
        om.headers
    );
    let om = String::from_utf8(om.body).unwrap();
    assert!(om.ends_with("# EOF\n"));
    assert!(om.contains("# TYPE zpulse_arc_hits counter\nzpulse_arc_hits_total "));

    assert_eq!(request(&a.1, "GET /other HTTP/1.1\r\n\r\n").status, 404);
    assert_eq!(request(&a.1, "POST /metrics HTTP/1.1\r\n\r\n").status, 405);
    // A request head over 8 KiB is refused (all of it sent before the answer, so that the
    // server has read everything when it hangs up).
    let mut huge = "GET /metrics HTTP/1.1\r\nX: ".to_string();
    huge.push_str(&"a".repeat(9000 - huge.len()));
    assert_eq!(request(&a.1, &huge).status, 400);
}

/// A client that sends its request head a byte at a time, `every` apart, starting with
/// `GET /metrics HTTP/1.1\r\n`, until the server closes the connection or `until`; when the
/// server closed it, or `None`.
fn trickle(addr: &str, every: Duration, until: Instant) -> Option<Instant> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    s.set_read_timeout(Some(every)).unwrap();
    let mut b = [0u8; 256];
    while Instant::now() < until {
        match s.read(&mut b) {
            // The read timed out: the connection is still open, so on with the next byte.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            // An answer (a 400 for a head it could not finish), the end, or a reset.
            _ => return Some(Instant::now()),
        }
        if s.write_all(b"X").is_err() {
            return Some(Instant::now());
        }
    }
    None
}

/// A request head is bounded as a whole: a client that keeps sending a byte of it every
/// half second is closed at the timeout from its accept, not kept while bytes trickle in.
#[test]
fn a_trickled_request_head_is_cut_off_at_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let a = agent(tmp.path(), "timeout = \"2s\"\n");
    let start = Instant::now();
    let closed = trickle(
        &a.1,
        Duration::from_millis(500),
        start + Duration::from_secs(20),
    )
    .expect("the server never closed a trickling client");
    let after = closed - start;
    assert!(
        after >= Duration::from_millis(1900) && after < Duration::from_secs(6),
        "closed after {after:?}, the timeout is 2 s"
    );
}

/// The trickling attack: eight connections (every slot of the default `max_connections`) each
/// send `GET /metrics HTTP/1.1` and then a byte every 2 s; meanwhile 20 real scrapes must all
/// be answered 200, each within 1 s. The trickling ones are given up for them.
#[test]
fn eight_trickling_clients_cannot_keep_twenty_scrapes_from_being_served() {
    let tmp = tempfile::tempdir().unwrap();
    let a = agent(tmp.path(), "");
    let until = Instant::now() + Duration::from_secs(30);
    let tricklers: Vec<_> = (0..8)
        .map(|_| {
            let addr = a.1.clone();
            std::thread::spawn(move || trickle(&addr, Duration::from_secs(2), until))
        })
        .collect();
    // Let them connect and be accepted (each holds a slot from its accept on).
    std::thread::sleep(Duration::from_millis(500));
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let t = Instant::now();
        let mut s = TcpStream::connect(&a.1).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut buf = Vec::new();
        let read = s.read_to_end(&mut buf);
        let took = t.elapsed();
        assert!(
            read.is_ok() && buf.starts_with(b"HTTP/1.1 200"),
            "scrape {i}: {read:?} after {took:?}: {}",
            String::from_utf8_lossy(&buf[..buf.len().min(80)])
        );
        assert!(took < Duration::from_secs(1), "scrape {i} took {took:?}");
        assert!(String::from_utf8_lossy(&buf).contains("\nzpulse_pool_size_bytes{pool=\"tank\"}"));
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    let closed: Vec<Option<Instant>> = tricklers.into_iter().map(|t| t.join().unwrap()).collect();
    // They held the slots: the server had to close them (before their 10 s timeout) to serve.
    assert!(
        closed.iter().all(Option::is_some),
        "a trickling client was never closed: {closed:?}"
    );
    eprintln!("slowest of 20 scrapes beside 8 trickling clients: {slowest:?}");
}

/// One peer address holds at most half the slots: with `max_connections = 2`, a second idle
/// connection from loopback takes the first one's place, and a scrape then takes its place.
#[test]
fn idle_clients_are_given_up_for_a_scrape() {
    let tmp = tempfile::tempdir().unwrap();
    let a = agent(tmp.path(), "max_connections = 2\ntimeout = \"30s\"\n");
    let mut first = TcpStream::connect(&a.1).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut second = TcpStream::connect(&a.1).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut b = Vec::new();
    assert!(
        first.read_to_end(&mut b).is_ok(),
        "the first idle connection was not closed for the second"
    );
    let r = request(&a.1, "GET /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(r.status, 200);
    second
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    b.clear();
    assert!(
        second.read_to_end(&mut b).is_ok(),
        "the second idle connection was not closed for the scrape"
    );
}

/// A connection to `addr` from the source address `from`: any of loopback's 127.0.0.0/8 is
/// this host's, so one machine can be many peers.
fn connect_from(from: [u8; 4], addr: &str) -> TcpStream {
    use rustix::net::{AddressFamily, SocketType};
    let to: std::net::SocketAddr = addr.parse().unwrap();
    let fd = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    rustix::net::bind(&fd, &std::net::SocketAddrV4::new(from.into(), 0)).unwrap();
    rustix::net::connect(&fd, &to).unwrap();
    TcpStream::from(fd)
}

/// The many-addresses attack: idle connections from as many source addresses as there are
/// slots, each within its address's share, take every slot; a scrape from yet another
/// address is still answered, the oldest idle connection given up for it. Again after a
/// newcomer from a fifth address has taken the freed slot.
#[test]
fn idle_clients_from_many_addresses_are_given_up_for_a_scrape() {
    let tmp = tempfile::tempdir().unwrap();
    let a = agent(tmp.path(), "max_connections = 4\ntimeout = \"30s\"\n");
    let mut idle = std::collections::VecDeque::new();
    let connect = |n: u8, idle: &mut std::collections::VecDeque<(u8, TcpStream)>| {
        idle.push_back((n, connect_from([127, 0, 0, n], &a.1)));
        // Accepted in this order: the front is the oldest.
        std::thread::sleep(Duration::from_millis(100));
    };
    for n in 2..6u8 {
        connect(n, &mut idle);
    }
    for round in 0..2u8 {
        let r = request(&a.1, "GET /metrics HTTP/1.1\r\n\r\n");
        assert_eq!(r.status, 200, "scrape {round} beside four idle peers");
        let (n, mut oldest) = idle.pop_front().unwrap();
        oldest
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut b = Vec::new();
        assert!(
            oldest.read_to_end(&mut b).is_ok(),
            "the oldest idle connection (127.0.0.{n}) was not closed for scrape {round}"
        );
        connect(6 + round, &mut idle);
    }
}

#[test]
fn a_reload_keeps_the_port_it_listens_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let a = agent(&dir, "");
    let hup = Command::new("kill")
        .args(["-HUP", &a.0.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    // The new configuration's sink listens on the same address: it must take over the
    // socket this process holds, not fail to bind it.
    let log = dir.join("agent.log");
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains("reload refused"), "{text}");
        if text.contains("configuration reloaded") {
            break;
        }
        assert!(Instant::now() < until, "no reload: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(request(&a.1, "GET /metrics HTTP/1.1\r\n\r\n").status, 200);
}

#[test]
fn textfile_is_written_for_node_exporter() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let file = dir.join("zpulse.prom");
    let mut a = agent(
        &dir,
        &format!("textfile = {:?}\n", file.display().to_string()),
    );
    // The listener answers from the first reading as soon as it is taken; the textfile is
    // written by the sink's own thread, so it may come a moment later (a guard, not a timing).
    let until = Instant::now() + Duration::from_secs(60);
    let text = loop {
        match std::fs::read(&file) {
            Ok(text) => break text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("{}: {e}", file.display()),
        }
    };
    let (ok, complaints) = promtool(&text);
    assert!(ok && complaints.trim().is_empty(), "{complaints}");
    // A clean exit (SIGTERM) takes the file away: node_exporter must not go on exporting
    // figures nobody updates.
    let term = Command::new("kill")
        .args(["-TERM", &a.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = a.0.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!file.exists(), "the textfile outlived a clean exit");
}

fn check_config(dir: &Path, sink: &str) -> (bool, String) {
    let config = dir.join("zpulse.toml");
    std::fs::write(&config, format!("[[sink]]\ntype = \"prometheus\"\n{sink}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .args(["check-config", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

#[test]
fn check_config_names_bad_listen_values_and_binds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let file = dir.join("zpulse.toml").display().to_string();
    let (ok, msg) = check_config(&dir, "listen = \"nas1:9134\"\n");
    assert!(!ok);
    assert!(
        msg.contains(&format!(
            "{file}:3: sink[0].listen: 'nas1:9134' is not IP:PORT"
        )),
        "{msg}"
    );

    // check-config has no side effects: it binds nothing, so a port another process holds
    // is not its business (the sink's start says so, see the sink's unit tests), and the
    // port stays as it was.
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let (ok, msg) = check_config(&dir, &format!("listen = \"{addr}\"\n"));
    assert!(ok, "{msg}");
    assert!(msg.contains(&format!("prometheus {addr}")), "{msg}");
    drop(busy);
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let (ok, msg) = check_config(&dir, &format!("listen = \"{addr}\"\n"));
    assert!(ok, "{msg}");
    TcpListener::bind(addr).expect("check-config left the port free");
}

/// One row of docs/metrics.md's "Series per object" table.
#[derive(Debug)]
struct DocFamily {
    /// A name, or a pattern with one `*`.
    name: String,
    kind: String,
    labels: BTreeSet<String>,
    per: String,
    series: usize,
}

impl DocFamily {
    fn matches(&self, family: &str) -> bool {
        match self.name.split_once('*') {
            None => self.name == family,
            Some((head, tail)) => {
                family.len() > head.len() + tail.len()
                    && family.starts_with(head)
                    && family.ends_with(tail)
            }
        }
    }

    /// The labels that tell one object of `per` from another.
    fn object<'a>(&self, labels: &'a BTreeMap<String, String>) -> Vec<&'a str> {
        let keys: &[&str] = match self.per.as_str() {
            "host" | "ARC row" | "ZIL row" => &[],
            "pool" | "pool iostats row" => &["pool"],
            "dataset" => &["pool", "dataset"],
            "vdev" | "top-level vdev" => &["pool", "vdev", "leaf"],
            "disk" => &["disk"],
            "disk role" => &["disk", "pool", "vdev", "leaf"],
            "interface" => &["device"],
            "finding" => &["check", "subject"],
            "sink" => &["sink"],
            "kernel event class" => &["class", "pool"],
            other => panic!("docs/metrics.md: unknown `per` {other:?} for {}", self.name),
        };
        keys.iter()
            .map(|k| labels.get(*k).map_or("", String::as_str))
            .collect()
    }
}

/// The table under "### Series per object" in docs/metrics.md.
fn doc_families() -> Vec<DocFamily> {
    let doc = std::fs::read_to_string(workspace().join("docs/metrics.md")).unwrap();
    let start = doc
        .find("### Series per object")
        .expect("docs/metrics.md has a 'Series per object' section");
    let rows: Vec<DocFamily> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the heading and its rule
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 5, "docs/metrics.md row: {l}");
            DocFamily {
                name: cells[0].trim_matches('`').to_string(),
                kind: cells[1].to_string(),
                labels: cells[2]
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                per: cells[3].to_string(),
                series: cells[4]
                    .parse()
                    .unwrap_or_else(|_| panic!("docs/metrics.md row: {l}")),
            }
        })
        .collect();
    assert!(rows.len() > 90, "{} rows", rows.len());
    rows
}

/// A sample line of the text format (no escaped quotes in the lab's label values): name, labels.
fn sample_line(line: &str) -> (String, BTreeMap<String, String>) {
    let (series, _value) = line.rsplit_once(' ').unwrap();
    let Some((name, rest)) = series.split_once('{') else {
        return (series.to_string(), BTreeMap::new());
    };
    let labels = rest
        .trim_end_matches('}')
        .split("\",")
        .map(|pair| {
            let (k, v) = pair.split_once("=\"").unwrap();
            (k.to_string(), v.trim_end_matches('"').to_string())
        })
        .collect();
    (name.to_string(), labels)
}

/// Each family's TYPE and its series' labels, histograms' `_bucket`, `_sum` and `_count`
/// counted with their family.
type Families = BTreeMap<String, (String, Vec<BTreeMap<String, String>>)>;

fn families(text: &str) -> Families {
    let mut out: Families = BTreeMap::new();
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            let (name, kind) = t.split_once(' ').unwrap();
            out.insert(name.to_string(), (kind.to_string(), Vec::new()));
        } else if !line.starts_with('#') {
            let (name, labels) = sample_line(line);
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .filter_map(|s| name.strip_suffix(s))
                .find(|base| out.get(*base).is_some_and(|(k, _)| k == "histogram"))
                .unwrap_or(&name)
                .to_string();
            out.get_mut(&family)
                .unwrap_or_else(|| panic!("{name}: a series before its TYPE"))
                .1
                .push(labels);
        }
    }
    out
}

/// The leaf vdevs of a capture's `zpool status` (its `cli/` output): the vdevs listed below a
/// top-level vdev, by indentation.
fn status_leaves(capture: &Path) -> Vec<String> {
    let mut leaves = Vec::new();
    for entry in std::fs::read_dir(capture.join("cli")).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().contains("zpool-status.") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for v in zpulse_tests::raw::zpool_status(&text) {
            leaves.extend(v.leaves.into_iter().filter(|l| *l != v.name));
        }
    }
    leaves
}

/// docs/metrics.md is the oracle of the exposition's cardinality: on the lab host (one pool,
/// 6 disks) the standard exposition, with a finding and the agent's health, has only the
/// documented families with their documented labels and type, no object more series of a
/// family than the table says, at most 1,000 series, and each leaf vdev of `zpool status` the
/// doc's cost of a vdev, a disk and a disk role (at most 60); promtool passes it, and the full
/// detail too.
#[test]
fn the_exposition_is_what_docs_metrics_md_says_it_costs() {
    use zpulse_agent::sinks::prometheus::exposition::{
        AgentHealth, Detail, OpenFinding, SinkHealth, render, render_at,
    };
    let doc = doc_families();
    let capture = workspace().join("tests/fixtures/lab/basic/001");
    let snap = zpulse_agent::capture::load(&capture).unwrap();
    let finding = OpenFinding {
        check: "hdd-saturation".into(),
        subject: "tank/normal/mirror-0".into(),
        severity: "warning".into(),
    };
    let agent = AgentHealth {
        cpu_seconds: Some(1.5),
        rss_bytes: Some(8 << 20),
        samples: Some(10),
        late_samples: Some(0),
        missed_slots: Some(0),
        dropped_samples: Some(0),
        plugins_running: Some(7),
        plugins_total: Some(7),
        sinks: vec![SinkHealth {
            name: "prometheus 127.0.0.1:9134".into(),
            queued_batches: Some(0),
            delivered: Some(3),
            dropped: Some(0),
            pending: Some(0),
            spool_bytes: Some(0),
        }],
        zevents: [(("resource.fs.zfs.statechange".into(), "tank".into()), 2)].into(),
        zevents_dropped: 3,
    };
    let e = render(&snap, &[finding], Some(&agent));
    let text = e.text_str();
    let (ok, complaints) = promtool(text.as_bytes());
    assert!(ok && complaints.trim().is_empty(), "standard: {complaints}");
    let full = render_at(Detail::Full, &snap, &[], Some(&agent));
    let (ok, complaints) = promtool(full.text());
    assert!(ok && complaints.trim().is_empty(), "full: {complaints}");

    let exposed = families(text);
    let mut total = 0;
    for (family, (kind, series)) in &exposed {
        let row = doc
            .iter()
            .find(|r| !r.name.contains('*') && r.matches(family))
            .or_else(|| doc.iter().find(|r| r.matches(family)))
            .unwrap_or_else(|| panic!("{family} is not in docs/metrics.md's table"));
        assert!(
            row.kind == *kind || row.kind == "any",
            "{family}: exposed as {kind}, documented as {}",
            row.kind
        );
        let labels: BTreeSet<String> = series.iter().flat_map(|l| l.keys().cloned()).collect();
        assert_eq!(labels, row.labels, "{family}: labels exposed vs documented");
        let mut per_object: BTreeMap<Vec<&str>, usize> = BTreeMap::new();
        for l in series {
            if row.per == "top-level vdev" {
                assert!(!l.contains_key("leaf"), "{family}: a leaf's series {l:?}");
            }
            *per_object.entry(row.object(l)).or_default() += 1;
        }
        for (object, n) in per_object {
            assert!(
                n <= row.series,
                "{family}: {n} series for {} {object:?}, documented {}",
                row.per,
                row.series
            );
        }
        total += series.len();
    }
    assert!(total <= 1000, "{total} series");
    assert_eq!(total, text.lines().filter(|l| !l.starts_with('#')).count());

    // Every leaf vdev zpool status lists is exposed, and costs what the doc says a vdev, a
    // disk (its whole-disk vdev's device) and a disk role cost.
    let per_leaf: usize = doc
        .iter()
        .filter(|r| ["vdev", "disk", "disk role"].contains(&r.per.as_str()))
        .map(|r| r.series)
        .sum();
    assert!(per_leaf <= 60, "docs/metrics.md: {per_leaf} series a leaf");
    let leaves = status_leaves(&capture);
    assert_eq!(leaves.len(), 4, "{leaves:?}");
    let all: Vec<&BTreeMap<String, String>> = exposed.values().flat_map(|(_, s)| s).collect();
    for leaf in &leaves {
        let n = all
            .iter()
            .filter(|l| l.get("leaf") == Some(leaf) || l.get("disk") == Some(leaf))
            .count();
        // At most: a family the kernel does not report for this disk is absent (the lab's
        // disks have no size in sysfs).
        assert!(
            n <= per_leaf && n + 2 >= per_leaf,
            "leaf {leaf}: {n} series"
        );
    }
}

/// `promtool test rules FILES…` in `dir`, which must pass: what it said.
fn promtool_test_rules(dir: &Path, files: &[&str]) -> String {
    let out = Command::new("promtool")
        .args(["test", "rules"])
        .args(files)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `promtool` ({e}): install Debian's prometheus package (bash .ci/run does)")
        });
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "promtool test rules {files:?}: {said}"
    );
    said
}

/// The shipped alerting rules pass their own `promtool test rules` unit tests (each alert
/// fires on the series it is about, at the time its `for` allows, and not on the healthy ones
/// beside them), and every zpulse family they use is one docs/metrics.md lists.
#[test]
fn shipped_alert_rules_pass_promtool_tests() {
    let dir = workspace().join("packaging/prometheus");
    let said = promtool_test_rules(
        &dir,
        &["zpulse-alerts.test.yml", "zpulse-scrub-age.test.yml"],
    );
    assert_eq!(said.matches("SUCCESS").count(), 2, "{said}");
    let rules = std::fs::read_to_string(dir.join("zpulse-alerts.yml")).unwrap();
    let doc = doc_families();
    let used: BTreeSet<&str> = rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("zpulse_"))
        .collect();
    assert!(used.len() >= 8, "{used:?}");
    for family in used {
        assert!(
            doc.iter().any(|r| r.matches(family)),
            "{family}: used by zpulse-alerts.yml, not in docs/metrics.md"
        );
    }
}

/// node_exporter's own exposition of a capture: its `zfs` collector reading the capture's
/// `/proc` (Debian's `prometheus-node-exporter`, which `.ci/run` installs).
fn node_exporter_zfs(capture: &Path) -> String {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new("prometheus-node-exporter")
        .arg(format!("--path.procfs={}", capture.join("proc").display()))
        .arg(format!("--path.sysfs={}", capture.join("sys").display()))
        .args(["--collector.disable-defaults", "--collector.zfs"])
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run `prometheus-node-exporter` ({e}): install Debian's prometheus-node-exporter package (bash .ci/run does)")
        });
    let peer = Agent(child, addr.clone());
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if TcpStream::connect(&peer.1).is_ok() {
            let r = request(&peer.1, "GET /metrics HTTP/1.0\r\n\r\n");
            assert_eq!(r.status, 200, "{}", r.headers);
            return String::from_utf8(r.body).unwrap();
        }
        assert!(Instant::now() < until, "node_exporter did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The shipped recording rules give node_exporter's `node_zfs_*` names from zpulse's series:
/// node_exporter and zpulse read the same lab capture, zpulse's series are the input of a
/// `promtool test rules` case, and every series each rule records must equal node_exporter's
/// (labels and value); every rule is so compared, and every node_exporter family of the
/// mapped kinds (arcstats, zil, pool state, datasets) has its rule.
#[test]
fn recording_rules_give_node_exporters_zfs_series_from_zpulses() {
    let capture = workspace().join("tests/fixtures/lab/basic/001");
    let ne = node_exporter_zfs(&capture);
    let snap = zpulse_agent::capture::load(&capture).unwrap();
    let ours = zpulse_agent::sinks::prometheus::exposition::render(&snap, &[], None);
    let rules_file = workspace().join("packaging/prometheus/zpulse-node-exporter.yml");
    let rules = std::fs::read_to_string(&rules_file).unwrap();
    let recorded: BTreeSet<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
        .collect();
    assert!(recorded.len() > 130, "{} rules", recorded.len());

    let mut theirs: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for line in ne.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let name = series.split('{').next().unwrap();
        theirs.entry(name).or_default().push((series, value));
    }
    let mapped_kinds = [
        "node_zfs_arc_",
        "node_zfs_zil_",
        "node_zfs_zpool_state",
        "node_zfs_zpool_dataset_",
    ];
    for name in theirs.keys() {
        if mapped_kinds.iter().any(|k| name.starts_with(k)) {
            assert!(recorded.contains(name), "{name}: no recording rule");
        }
    }

    let mut test = format!(
        "rule_files:\n  - {:?}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n",
        rules_file.display().to_string()
    );
    for line in ours.text_str().lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        test.push_str(&format!(
            "      - series: '{series}'\n        values: '{value}'\n"
        ));
    }
    test.push_str("    promql_expr_test:\n");
    let mut compared = 0;
    for name in &recorded {
        let samples = theirs
            .get(name)
            .unwrap_or_else(|| panic!("{name}: recorded, but node_exporter has no such series"));
        test.push_str(&format!(
            "      - expr: {name}\n        eval_time: 0m\n        exp_samples:\n"
        ));
        for (series, value) in samples {
            test.push_str(&format!(
                "          - labels: '{series}'\n            value: {value}\n"
            ));
            compared += 1;
        }
    }
    assert!(compared > 140, "{compared} values");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("node-exporter-names.test.yml"), &test).unwrap();
    let said = promtool_test_rules(dir.path(), &["node-exporter-names.test.yml"]);
    assert!(said.contains("SUCCESS"), "{said}");
}
