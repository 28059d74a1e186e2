//! The syslog sink against real receivers: Debian's rsyslogd and syslog-ng, every transport,
//! both TCP framings, TLS with and without a client certificate, every field as they parse it.
//!
//! The test (not the agent: the agent never starts a process) runs each daemon in the
//! foreground with a private config on free loopback ports and a temp dir (never `/dev/log`),
//! and reads back one output file whose template writes the fields the daemon parsed.
//!
//! * rsyslogd: imuxsock, imudp, imtcp (octet counting or LF: imtcp reads both), imtcp over
//!   TLS (gtls, the test CA of `fixtures/syslog-tls`), and imtcp over TLS that demands a client
//!   certificate signed by `client-ca.pem` (`x509/certvalid`). Default limits, so the sink's
//!   defaults are checked against them.
//! * syslog-ng: `network()` (LF framing, RFC 5424 with `flags(syslog-protocol)`), `syslog()`
//!   over TCP (octet counting) and over TLS with `peer-verify(required-trusted)`.
//!
//! `tests/run` installs `rsyslog` and `rsyslog-gnutls`, and unpacks `syslog-ng-core` (it
//! conflicts with rsyslog as a package) under `target/peers/syslog-ng`, where
//! `ZPULSE_SYSLOG_NG` points. A missing daemon fails the test, naming what to install.

use jiff::Timestamp;
use std::fs;
use std::io::Write;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use zpulse_agent::sinks::syslog::{Framing, SyslogConfig, SyslogSink, TlsConfig, format};
use zpulse_agent::sinks::{Sink, Stamped};
use zpulse_proto::event::{Event, EventTime, Severity, State, Value};

const FIELDS: &str = "%inputname%|%syslogseverity%|%syslogfacility-text%|%hostname%|%app-name%|\
                      %procid%|%msgid%|%timereported:::date-rfc3339%|%structured-data%|%msg%";

/// The complete lines of a peer's output file. A last line without its newline is one the
/// peer is still writing (a read can land between its writes): the next poll reads it whole.
fn complete_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
}

/// One line of the output file, as rsyslog parsed the message.
#[derive(Debug)]
struct Line {
    input: String,
    severity: u8,
    facility: String,
    hostname: String,
    app_name: String,
    procid: String,
    msgid: String,
    time: Timestamp,
    sd: String,
    msg: String,
}

impl Line {
    fn parse(line: &str) -> Line {
        let f: Vec<&str> = line.splitn(10, '|').collect();
        assert_eq!(f.len(), 10, "not a template line: {line:?}");
        Line {
            input: f[0].into(),
            severity: f[1].parse().unwrap(),
            facility: f[2].into(),
            hostname: f[3].into(),
            app_name: f[4].into(),
            procid: f[5].into(),
            msgid: f[6].into(),
            time: f[7]
                .parse()
                .unwrap_or_else(|e| panic!("time {:?}: {e}", f[7])),
            sd: f[8].into(),
            msg: f[9].into(),
        }
    }
}

/// rsyslogd, a child of this test, killed when dropped.
struct Rsyslog {
    child: Child,
    dir: tempfile::TempDir,
    socket: PathBuf,
    udp: u16,
    tcp: u16,
    tls: u16,
    /// TLS that requires a client certificate signed by `client-ca.pem`.
    mtls: u16,
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rsyslogd() -> PathBuf {
    let candidates = [
        "/usr/sbin/rsyslogd",
        "/sbin/rsyslogd",
        "/usr/local/sbin/rsyslogd",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "rsyslogd is not installed (looked at {candidates:?}); tests/run installs it: \
                 apt-get install rsyslog rsyslog-gnutls"
            )
        })
}

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/syslog-tls")
        .join(name)
}

impl Rsyslog {
    fn start() -> Rsyslog {
        let binary = rsyslogd();
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("log.sock");
        let (udp, tcp, tls, mtls) = (
            free_udp_port(),
            free_tcp_port(),
            free_tcp_port(),
            free_tcp_port(),
        );
        let d = dir.path().display();
        let config = format!(
            r#"
global(workDirectory="{d}"
       defaultNetstreamDriverCAFile="{ca}"
       defaultNetstreamDriverCertFile="{cert}"
       defaultNetstreamDriverKeyFile="{key}")
module(load="imuxsock" sysSock.use="off")
input(type="imuxsock" socket="{socket}" useSysTimeStamp="off" ignoreTimestamp="off")
input(type="imuxsock" socket="{d}/log5424.sock" useSpecialParser="off" useSysTimeStamp="off"
      ignoreTimestamp="off")
module(load="imudp")
input(type="imudp" address="127.0.0.1" port="{udp}" name="udp")
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="{tcp}" name="tcp")
input(type="imtcp" address="127.0.0.1" port="{tls}" name="tls"
      streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")
input(type="imtcp" address="127.0.0.1" port="{mtls}" name="mtls"
      streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="x509/certvalid"
      streamDriver.CAFile="{client_ca}")
template(name="fields" type="string" string="{FIELDS}\n")
*.* action(type="omfile" file="{d}/out.log" template="fields")
module(load="mmpstrucdata")
action(type="mmpstrucdata" sd_name.lowercase="off")
template(name="sd" type="string" string="%app-name%|%$!rfc5424-sd%\n")
*.* action(type="omfile" file="{d}/sd.log" template="sd")
"#,
            ca = fixture("ca.pem").display(),
            cert = fixture("server.pem").display(),
            key = fixture("server.key").display(),
            client_ca = fixture("client-ca.pem").display(),
            socket = socket.display(),
        );
        let conf = dir.path().join("rsyslog.conf");
        fs::write(&conf, config).unwrap();
        let child = Command::new(binary)
            .arg("-n")
            .arg("-i")
            .arg(dir.path().join("rsyslogd.pid"))
            .arg("-f")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(fs::File::create(dir.path().join("rsyslogd.out")).unwrap())
            .stderr(fs::File::create(dir.path().join("rsyslogd.err")).unwrap())
            .spawn()
            .unwrap();
        let r = Rsyslog {
            child,
            dir,
            socket,
            udp,
            tcp,
            tls,
            mtls,
        };
        r.wait_ready();
        r
    }

    /// The socket exists, both TCP ports accept, and a UDP probe came out of the file (UDP
    /// has no other way to say it listens).
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        loop {
            let ready = self.socket.exists()
                && self.dir.path().join("log5424.sock").exists()
                && TcpStream::connect(("127.0.0.1", self.tcp)).is_ok()
                && TcpStream::connect(("127.0.0.1", self.tls)).is_ok()
                && TcpStream::connect(("127.0.0.1", self.mtls)).is_ok()
                && {
                    let _ = probe.send_to(b"<14>1 - - probe - - - ready", ("127.0.0.1", self.udp));
                    self.lines().iter().any(|l| l.app_name == "probe")
                };
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "rsyslogd did not start (tests/run installs rsyslog and rsyslog-gnutls, whose \
                 gtls driver the TLS input needs): {}",
                self.stderr()
            );
            poll_pause();
        }
    }

    fn stderr(&self) -> String {
        let read = |name| fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        format!("{}{}", read("rsyslogd.out"), read("rsyslogd.err"))
    }

    fn lines(&self) -> Vec<Line> {
        complete_lines(&fs::read_to_string(self.dir.path().join("out.log")).unwrap_or_default())
            .map(Line::parse)
            .collect()
    }

    /// Waits until `input` has produced `n` lines from zpulse, and returns them.
    fn wait_for(&self, input: &str, n: usize) -> Vec<Line> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines: Vec<Line> = self
                .lines()
                .into_iter()
                .filter(|l| l.input == input && l.app_name == "zpulse")
                .collect();
            if lines.len() >= n {
                return lines;
            }
            assert!(
                Instant::now() < deadline,
                "{input}: {} of {n} messages arrived: {lines:#?}\n{}",
                lines.len(),
                self.stderr()
            );
            poll_pause();
        }
    }

    /// The SD params rsyslog's own RFC 5424 parser (mmpstrucdata) read from zpulse's
    /// messages, one JSON object per message, once `n` arrived.
    fn wait_for_sd(&self, n: usize) -> Vec<serde_json::Value> {
        wait_until(&format!("{n} parsed SDs from rsyslog"), || {
            let text = fs::read_to_string(self.dir.path().join("sd.log")).unwrap_or_default();
            let got: Vec<serde_json::Value> = complete_lines(&text)
                .filter_map(|l| l.strip_prefix("zpulse|"))
                .map(|j| serde_json::from_str(j).unwrap_or_else(|e| panic!("{e}: {j}")))
                .collect();
            (got.len() >= n).then_some(got)
        })
    }

    /// Waits until rsyslogd has said `needle` (its own messages go to its stderr here).
    fn wait_for_complaint(&self, needle: &str) {
        wait_until(&format!("rsyslogd to say {needle:?}"), || {
            self.stderr().contains(needle).then_some(())
        });
    }
}

/// The pause between two looks at a daemon's output file: the daemons write on their own
/// time, and a file has no way to say it changed. Nothing is timed by it.
fn poll_pause() {
    std::thread::sleep(Duration::from_millis(50));
}

/// Polls `look` until it gives a value; fails after 10 s, naming `what`.
fn wait_until<T>(what: &str, mut look: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = look() {
            return v;
        }
        assert!(Instant::now() < deadline, "waited 10 s for {what}");
        poll_pause();
    }
}

fn now() -> EventTime {
    let mut t = EventTime::from_system_time(SystemTime::now());
    // A fixed fraction, to see the microseconds arrive.
    t.nanos = 123_456_000;
    t
}

fn raised() -> Event {
    let mut e = Event::finding(
        "hdd-saturation",
        State::Raised,
        Severity::Critical,
        "tank/mirror-0/sda",
        "sda was busy 97% of the interval while moving 8.5 MB/s.",
    )
    .with_advice("Random I/O on spinning disks:\n1. add a special vdev")
    .with("util_pct", 97.5)
    .with("rotational", true);
    e.host = "nas1".into();
    e
}

/// The SD as the formatter wrote it: between the six header fields and MSG.
fn sent_sd(formatted: &str, msg: &str) -> String {
    let rest = formatted.splitn(7, ' ').nth(6).unwrap();
    rest[..rest.len() - msg.len() - 1].to_string()
}

/// MSG of a sent RFC 5424 message, as an independent parser reads it.
fn sent_msg(formatted: &str) -> String {
    syslog_rfc5424::parse_message(formatted).unwrap().msg
}

fn seconds(t: EventTime) -> i64 {
    i64::from(t.seconds)
}

#[test]
fn rsyslog_parses_every_transport() {
    let rsyslog = Rsyslog::start();
    let pid = std::process::id().to_string();

    // ---- local socket, hostless RFC 3164 ----
    let mut local = SyslogSink::new(SyslogConfig::new(format!(
        "unix://{}",
        rsyslog.socket.display()
    )))
    .unwrap();
    let mut cleared = raised();
    cleared.state = Some(State::Cleared);
    cleared.severity = Severity::Warning;
    let t = now();
    local
        .deliver(&[
            Stamped {
                time: t,
                event: raised(),
            },
            Stamped {
                time: t,
                event: cleared,
            },
        ])
        .unwrap();
    let lines = rsyslog.wait_for("imuxsock", 2);
    let l = &lines[0];
    assert_eq!((l.severity, l.facility.as_str()), (2, "daemon"));
    assert_eq!(
        (l.app_name.as_str(), l.procid.as_str()),
        ("zpulse", pid.as_str())
    );
    assert_eq!((l.msgid.as_str(), l.sd.as_str()), ("-", "-"));
    // RFC 3164 has whole seconds in local time; rsyslog read them back to the same instant.
    assert_eq!(l.time.as_second(), seconds(t), "{l:?}");
    // MSG keeps the space after `TAG[pid]:`, as RFC 3164 counts it part of MSG.
    assert_eq!(
        l.msg,
        " hdd-saturation on tank/mirror-0/sda (raised): sda was busy 97% of the interval \
         while moving 8.5 MB/s. Advice: Random I/O on spinning disks: 1. add a special vdev \
         | rotational=true util_pct=97.5"
    );
    assert_eq!(lines[1].severity, 5, "a cleared warning is notice");
    assert!(
        lines[1]
            .msg
            .starts_with(" hdd-saturation on tank/mirror-0/sda (cleared): ")
    );

    // ---- UDP, RFC 5424 with structured data ----
    let mut config = SyslogConfig::new(format!("udp://127.0.0.1:{}", rsyslog.udp));
    config.facility = "local4".into();
    config.hostname = Some("zpulse-test-host".into());
    let mut udp = SyslogSink::new(config).unwrap();
    let mut odd = raised();
    odd.severity = Severity::Warning;
    odd.subject = r#"tank/"odd]\name"#.into();
    odd.data
        .insert("quote\"key".into(), Value::Str(r#"a"b\c]d"#.into()));
    odd.data
        .insert("ünicode".into(), Value::Str("µs ≤ 5".into()));
    let odd = Stamped {
        time: t,
        event: odd,
    };
    let metrics = Stamped {
        time: t,
        event: Event::metrics("arc", "arc", "ARC hit ratio 93%").with("hit_pct", 93u32),
    };
    udp.deliver(&[odd.clone(), metrics.clone()]).unwrap();
    let lines = rsyslog.wait_for("udp", 2);
    let l = &lines[0];
    assert_eq!((l.severity, l.facility.as_str()), (4, "local4"));
    assert_eq!(l.hostname, "zpulse-test-host");
    assert_eq!(
        (l.procid.as_str(), l.msgid.as_str()),
        (pid.as_str(), "hdd-saturation")
    );
    // RFC 3339 with microseconds and the offset: the same instant, to the microsecond.
    assert_eq!(l.time.as_microsecond(), seconds(t) * 1_000_000 + 123_456);
    let msg = format::message_text(&odd.event);
    assert_eq!(l.msg, msg);
    let sd = sent_sd(&udp.format(&odd), &msg);
    assert_eq!(l.sd, sd, "rsyslog kept the SD as sent");
    assert!(
        sd.contains(r#" subject="tank/\"odd\]\\name""#)
            && sd.contains(r#" quote_key="a\"b\\c\]d""#),
        "{sd}"
    );
    assert!(sd.contains(r#" _nicode="µs ≤ 5""#), "{sd}");
    assert_eq!(lines[1].severity, 6);
    assert_eq!(lines[1].msg, "arc: ARC hit ratio 93%");
    assert_eq!(
        lines[1].sd,
        r#"[zpulse@32473 kind="metrics" check="arc" severity="info" subject="arc"][zpulse-data@32473 hit_pct="93"]"#
    );

    // ---- TCP, octet counting, up to the default limit ----
    let mut tcp = SyslogSink::new(SyslogConfig::new(format!(
        "tcp://127.0.0.1:{}",
        rsyslog.tcp
    )))
    .unwrap();
    let mut big = raised();
    for i in 0..600 {
        big.data.insert(format!("figure_{i:03}"), Value::UInt(i));
    }
    let big = Stamped {
        time: t,
        event: big,
    };
    let big_text = tcp.format(&big);
    // 8096 bytes: rsyslog's default maxMessageSize. At 8192 (RFC 5425's "should"), rsyslog
    // cut the message and read the rest of the frame as a second one.
    assert!(
        (8096 - 32..=8096).contains(&big_text.len()),
        "the big one is cut to just under the default limit: {}",
        big_text.len()
    );
    let small = Stamped {
        time: t,
        event: raised(),
    };
    tcp.deliver(&[small.clone(), big.clone(), small.clone()])
        .unwrap();
    let lines = rsyslog.wait_for("tcp", 3);
    assert_eq!(tcp.connects(), 1);
    let msg = format::message_text(&small.event);
    // The big one's text gave way first (to the limit, marked), its figures next.
    let big_msg = sent_msg(&big_text);
    assert!(big_msg.ends_with("...") && msg.starts_with(big_msg.trim_end_matches("...")));
    for (l, want) in lines.iter().zip([&msg, &big_msg, &msg]) {
        assert_eq!((l.severity, l.msgid.as_str()), (2, "hdd-saturation"));
        assert_eq!(l.hostname, "nas1", "the event's host");
        assert_eq!(&l.msg, want, "framing kept each message whole");
    }
    assert_eq!(lines[0].sd, sent_sd(&tcp.format(&small), &msg));
    // rsyslog's default maximum takes the whole message: the SD arrives as sent, with the
    // truncation mark.
    assert_eq!(lines[1].sd, sent_sd(&big_text, &big_msg));
    assert!(
        lines[1].sd.contains(r#" truncated="true"]"#),
        "{}",
        lines[1].sd
    );

    // ---- TLS (RFC 5425), verified against the test CA ----
    let mut config = SyslogConfig::new(format!("tls://localhost:{}", rsyslog.tls));
    config.tls = Some(TlsConfig {
        ca: Some(fixture("ca.pem")),
        ..TlsConfig::default()
    });
    let mut tls = SyslogSink::new(config).unwrap();
    tls.deliver(std::slice::from_ref(&small)).unwrap();
    let lines = rsyslog.wait_for("tls", 1);
    assert_eq!(lines[0].msg, msg);
    assert_eq!(lines[0].sd, sent_sd(&tls.format(&small), &msg));
    // rsyslog sent its post-handshake records (TLS 1.3 session tickets) before it read the
    // message it has just written out; the check for a closed peer reads them and keeps the
    // connection.
    tls.deliver(std::slice::from_ref(&small)).unwrap();
    rsyslog.wait_for("tls", 2);
    assert_eq!((tls.stats().delivered, tls.connects()), (2, 1));

    // A server the CA does not vouch for: nothing is sent, the event is counted as dropped.
    let mut config = SyslogConfig::new(format!("tls://127.0.0.1:{}", rsyslog.tls));
    let other_ca = rsyslog.dir.path().join("other-ca.pem");
    let mut pem = fs::File::create(&other_ca).unwrap();
    // Any valid CA that did not sign the server's certificate: the server's own certificate
    // (not a CA) cannot anchor itself.
    pem.write_all(&fs::read(fixture("server.pem")).unwrap())
        .unwrap();
    config.tls = Some(TlsConfig {
        ca: Some(other_ca),
        ..TlsConfig::default()
    });
    let mut untrusted = SyslogSink::new(config).unwrap();
    let err = untrusted.deliver(&[small]).unwrap_err();
    assert!(err.message.contains("handshake"), "{err}");
    assert_eq!(
        (untrusted.stats().delivered, untrusted.stats().dropped),
        (0, 1)
    );
}

/// An event whose summary says which sink sent it.
fn from(who: &str) -> Stamped {
    let mut e = raised();
    e.summary = format!("sent by {who}.");
    Stamped {
        time: now(),
        event: e,
    }
}

/// A raised finding with 600 figures: cut to just under the stream default (8096 bytes).
fn big() -> Stamped {
    let mut e = raised();
    for i in 0..600 {
        e.data.insert(format!("figure_{i:03}"), Value::UInt(i));
    }
    Stamped {
        time: now(),
        event: e,
    }
}

/// A `tls://` sink verifying the server with the test CA, presenting `client` (certificate
/// and key fixtures) when given.
fn tls_sink(port: u16, client: Option<(&str, &str)>) -> SyslogSink {
    let mut config = SyslogConfig::new(format!("tls://localhost:{port}"));
    config.tls = Some(TlsConfig {
        ca: Some(fixture("ca.pem")),
        cert: client.map(|(cert, _)| fixture(cert)),
        key: client.map(|(_, key)| fixture(key)),
        server_name: None,
    });
    SyslogSink::new(config).unwrap()
}

fn tcp_sink(port: u16, framing: Framing) -> SyslogSink {
    let mut config = SyslogConfig::new(format!("tcp://127.0.0.1:{port}"));
    config.framing = Some(framing);
    SyslogSink::new(config).unwrap()
}

#[test]
fn rsyslog_takes_lf_framing_and_mutual_tls() {
    let rsyslog = Rsyslog::start();

    // ---- TCP with a LF after each message: imtcp's plain framing ----
    let mut lf = tcp_sink(rsyslog.tcp, Framing::Lf);
    let (small, big) = (from("lf"), big());
    let big_text = lf.format(&big);
    lf.deliver(&[small.clone(), big.clone(), small.clone()])
        .unwrap();
    let lines = rsyslog.wait_for("tcp", 3);
    let msg = format::message_text(&small.event);
    let big_msg = sent_msg(&big_text);
    for (l, want) in lines.iter().zip([&msg, &big_msg, &msg]) {
        assert_eq!(
            (l.severity, l.msgid.as_str(), l.hostname.as_str()),
            (2, "hdd-saturation", "nas1")
        );
        assert_eq!(
            &l.msg, want,
            "the advice's line break did not split the message"
        );
    }
    assert_eq!(lines[0].sd, sent_sd(&lf.format(&small), &msg));
    assert_eq!(lines[1].sd, sent_sd(&big_text, &big_msg));

    // ---- TLS that demands a client certificate from client-ca.pem ----
    let mut stranger = tls_sink(rsyslog.mtls, Some(("stranger.pem", "stranger.key")));
    // Under TLS 1.3 the client's handshake ends before the server has judged its
    // certificate, so the sender may think this went out; the receiver is what counts.
    let _ = stranger.deliver(&[from("a stranger")]);
    rsyslog.wait_for_complaint("certificate invalid: signer not found");
    let mut anonymous = tls_sink(rsyslog.mtls, None);
    let _ = anonymous.deliver(&[from("nobody")]);
    rsyslog.wait_for_complaint("peer did not provide a certificate");
    let mut agent = tls_sink(rsyslog.mtls, Some(("client.pem", "client.key")));
    let mine = from("the agent");
    agent.deliver(std::slice::from_ref(&mine)).unwrap();
    let lines = rsyslog.wait_for("mtls", 1);
    assert_eq!(
        lines.len(),
        1,
        "only the trusted client got through: {lines:#?}"
    );
    let msg = format::message_text(&mine.event);
    assert_eq!(lines[0].msg, msg);
    assert_eq!(lines[0].sd, sent_sd(&agent.format(&mine), &msg));
    assert_eq!((agent.stats().delivered, agent.connects()), (1, 1));
}

/// syslog-ng, a child of this test, killed when dropped.
struct SyslogNg {
    child: Child,
    dir: tempfile::TempDir,
    /// `network()`: RFC 5424 framed by LF.
    lf: u16,
    /// `syslog()` over TCP: octet counting.
    octet: u16,
    /// `syslog()` over TLS, `peer-verify(required-trusted)` against `client-ca.pem`.
    mtls: u16,
}

impl Drop for SyslogNg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The syslog-ng binary and the command that runs it: the package unpacked where
/// `ZPULSE_SYSLOG_NG` says (tests/run), else an installed one.
fn syslog_ng() -> Command {
    if let Some(root) = std::env::var_os("ZPULSE_SYSLOG_NG").map(PathBuf::from) {
        let libs = root.join("usr/lib/syslog-ng");
        // Its modules are in a directory named for the version (3.38 on bookworm).
        let modules = fs::read_dir(&libs)
            .unwrap_or_else(|e| panic!("ZPULSE_SYSLOG_NG={}: {e}", root.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.is_dir())
            .unwrap_or_else(|| panic!("no module directory in {}", libs.display()));
        let mut cmd = Command::new(root.join("usr/sbin/syslog-ng"));
        cmd.env("LD_LIBRARY_PATH", &libs)
            .arg(format!("--module-path={}", modules.display()));
        return cmd;
    }
    let installed = Path::new("/usr/sbin/syslog-ng");
    assert!(
        installed.is_file(),
        "syslog-ng is not installed and ZPULSE_SYSLOG_NG is not set: run the tests with \
         tests/run, which unpacks Debian's syslog-ng-core under target/peers/syslog-ng"
    );
    Command::new(installed)
}

impl SyslogNg {
    fn start() -> SyslogNg {
        let dir = tempfile::tempdir().unwrap();
        let (lf, octet, mtls) = (free_tcp_port(), free_tcp_port(), free_tcp_port());
        let d = dir.path().display();
        // One JSON object per message: the header fields as syslog-ng parsed them and every SD
        // param (`.SDATA.<SD-ID>.<name>`, which format-json nests as `_SDATA`).
        let template = "$(format-json --pair source=${SOURCE} --pair severity=${LEVEL_NUM} \
                        --pair facility=${FACILITY} --pair host=${HOST} --pair program=${PROGRAM} \
                        --pair pid=${PID} --pair msgid=${MSGID} --pair time=${ISODATE} \
                        --pair msg=${MESSAGE} --key .SDATA.*)\\n";
        let config = format!(
            r#"@version: 3.38
options {{ keep-hostname(yes); chain-hostnames(no); frac-digits(6); stats-freq(0); }};
source lf {{ network(ip("127.0.0.1") port({lf}) transport("tcp") flags(syslog-protocol)); }};
source octet {{ syslog(ip("127.0.0.1") port({octet}) transport("tcp")); }};
source mtls {{ syslog(ip("127.0.0.1") port({mtls}) transport("tls")
  tls(key-file("{key}") cert-file("{cert}") ca-file("{client_ca}")
      peer-verify(required-trusted))); }};
destination out {{ file("{d}/out.log" template("{template}")); }};
log {{ source(lf); source(octet); source(mtls); destination(out); }};
source own {{ internal(); }};
destination own {{ file("{d}/internal.log"); }};
log {{ source(own); destination(own); }};
"#,
            cert = fixture("server.pem").display(),
            key = fixture("server.key").display(),
            client_ca = fixture("client-ca.pem").display(),
        );
        let conf = dir.path().join("syslog-ng.conf");
        fs::write(&conf, config).unwrap();
        let child = syslog_ng()
            .arg("--foreground")
            .arg(format!("--cfgfile={}", conf.display()))
            .arg(format!("--persist-file={d}/persist"))
            .arg(format!("--pidfile={d}/pid"))
            .arg(format!("--control={d}/ctl"))
            .stdin(Stdio::null())
            .stdout(fs::File::create(dir.path().join("stdout")).unwrap())
            .stderr(fs::File::create(dir.path().join("stderr")).unwrap())
            .spawn()
            .unwrap();
        let s = SyslogNg {
            child,
            dir,
            lf,
            octet,
            mtls,
        };
        wait_until("syslog-ng to listen", || {
            [s.lf, s.octet, s.mtls]
                .iter()
                .all(|&p| TcpStream::connect(("127.0.0.1", p)).is_ok())
                .then_some(())
        });
        s
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// Waits until `source` has produced `n` messages, and returns them.
    fn wait_for(&self, source: &str, n: usize) -> Vec<serde_json::Value> {
        wait_until(&format!("{n} messages from syslog-ng's {source}"), || {
            let got: Vec<serde_json::Value> = complete_lines(&self.read("out.log"))
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .filter(|v: &serde_json::Value| v["source"] == source)
                .collect();
            (got.len() >= n).then_some(got)
        })
    }

    fn wait_for_complaint(&self, needle: &str) {
        wait_until(&format!("syslog-ng to say {needle:?}"), || {
            let said = self.read("internal.log") + &self.read("stderr");
            said.contains(needle).then_some(())
        });
    }
}

/// What a sink sent, as syslog-ng's JSON line should have it: header fields, MSG and every
/// SD param, read from the sent message by an RFC 5424 parser of its own.
fn as_sent(sink: &SyslogSink, s: &Stamped) -> serde_json::Value {
    let sent = syslog_rfc5424::parse_message(sink.format(s)).unwrap();
    let mut sd = serde_json::Map::new();
    for element in sent.sd.iter() {
        let params: serde_json::Map<String, serde_json::Value> = element
            .1
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        sd.insert(element.0.clone(), params.into());
    }
    serde_json::json!({
        "severity": (sent.severity as u8).to_string(),
        "host": sent.hostname.unwrap(),
        "program": sent.appname.unwrap(),
        "pid": match sent.procid.unwrap() {
            syslog_rfc5424::message::ProcId::PID(pid) => pid.to_string(),
            syslog_rfc5424::message::ProcId::Name(name) => name,
        },
        "msgid": sent.msgid.unwrap(),
        "msg": sent.msg,
        "_SDATA": sd,
    })
}

/// The fields of `got` that [`as_sent`] gives.
fn received(got: &serde_json::Value) -> serde_json::Value {
    let keys = [
        "severity", "host", "program", "pid", "msgid", "msg", "_SDATA",
    ];
    serde_json::Value::Object(
        keys.iter()
            .map(|&k| (k.to_string(), got[k].clone()))
            .collect(),
    )
}

#[test]
fn syslog_ng_receives_both_framings_and_only_trusted_clients() {
    let ng = SyslogNg::start();

    // ---- LF framing into network(), octet counting into syslog() ----
    for (source, port, framing) in [
        ("lf", ng.lf, Framing::Lf),
        ("octet", ng.octet, Framing::OctetCounting),
    ] {
        let mut sink = tcp_sink(port, framing);
        let (small, big) = (from(source), big());
        sink.deliver(&[small.clone(), big.clone(), small.clone()])
            .unwrap();
        let got = ng.wait_for(source, 3);
        assert_eq!(got.len(), 3, "{source}: {got:#?}");
        for (g, sent) in got.iter().zip([&small, &big, &small]) {
            assert_eq!(received(g), as_sent(&sink, sent), "{source}: intact");
            assert_eq!(g["facility"], "daemon");
            // RFC 3339 with microseconds: the instant the message was stamped with (its own
            // time: the test's start can be a second earlier).
            let time: Timestamp = g["time"].as_str().unwrap().parse().unwrap();
            assert_eq!(
                time.as_microsecond(),
                seconds(sent.time) * 1_000_000 + 123_456
            );
        }
        // The big one kept its 600 figures' worth, cut to the limit and marked.
        assert_eq!(got[1]["_SDATA"]["zpulse@32473"]["truncated"], "true");
    }

    // ---- TLS with peer-verify(required-trusted) ----
    let mut stranger = tls_sink(ng.mtls, Some(("stranger.pem", "stranger.key")));
    let _ = stranger.deliver(&[from("a stranger")]);
    ng.wait_for_complaint("Certificate validation failed; subject='CN=zpulse-stranger'");
    let mut anonymous = tls_sink(ng.mtls, None);
    let _ = anonymous.deliver(&[from("nobody")]);
    ng.wait_for_complaint("peer did not return a certificate");
    let mut agent = tls_sink(ng.mtls, Some(("client.pem", "client.key")));
    let mine = from("the agent");
    agent.deliver(std::slice::from_ref(&mine)).unwrap();
    let got = ng.wait_for("mtls", 1);
    assert_eq!(
        got.len(),
        1,
        "only the trusted client got through: {got:#?}"
    );
    assert_eq!(received(&got[0]), as_sent(&agent, &mine));
}

/// A heartbeat as the daemon makes it (`agent/src/daemon/heartbeat.rs`), with sinks and
/// plugins lists long enough to be cut, whose names hold every character RFC 5424 §6.3.3
/// says must be escaped (`]`, `"`, `\`).
fn heartbeat_with_long_lists() -> Stamped {
    let mut e = Event::finding(
        "agent.heartbeat",
        State::Updated,
        Severity::Info,
        "nas1",
        "zpulse 0.1.0 on nas1: 100 samples (0 late, 0 missed), 7/7 plugins running",
    );
    e.kind = zpulse_proto::event::Kind::Agent;
    e.host = "nas1".into();
    let sinks = (0..8)
        .map(|i| {
            let mut m = std::collections::BTreeMap::new();
            m.insert(
                "name".into(),
                Value::Str(format!("forward [dc\"{i}\"] \\collector-{i}:24224]")),
            );
            m.insert("delivered".into(), Value::UInt(1000 + i));
            m.insert("pending".into(), Value::UInt(0));
            Value::Map(m)
        })
        .collect();
    e.data.insert("sinks".into(), Value::List(sinks));
    let plugins = (0..30).map(|i| Value::Str(format!("plugin]{i}"))).collect();
    e.data.insert("plugins".into(), Value::List(plugins));
    e.data.insert("samples".into(), Value::UInt(100));
    Stamped {
        time: now(),
        event: e,
    }
}

/// The kept elements of a cut list figure, as a receiver parsed it: JSON, and a prefix of the
/// list the heartbeat holds (serde's JSON of the event's own value), shorter than it.
fn kept_prefix(received: &str, sent: &Value) -> usize {
    let got: serde_json::Value = serde_json::from_str(received)
        .unwrap_or_else(|e| panic!("not JSON as received ({e}): {received}"));
    let all = serde_json::to_value(sent).unwrap();
    let (got, all) = (got.as_array().unwrap(), all.as_array().unwrap());
    assert!(!got.is_empty() && got.len() < all.len(), "{received}");
    assert_eq!(got[..], all[..got.len()], "whole elements, from the start");
    got.len()
}

/// Syslog-ng refused every heartbeat whose lists were cut (a bare `]` ended the SD
/// element early; rsyslog's default parsing did not mind). Both framings into syslog-ng, and
/// rsyslog's own SD parser (mmpstrucdata): the message is taken, every param is there and
/// unescaped to the figure sent.
#[test]
fn heartbeats_with_cut_lists_are_accepted_by_syslog_ng_and_rsyslog() {
    let hb = heartbeat_with_long_lists();
    let ng = SyslogNg::start();
    for (source, port, framing) in [
        ("lf", ng.lf, Framing::Lf),
        ("octet", ng.octet, Framing::OctetCounting),
    ] {
        let mut sink = tcp_sink(port, framing);
        sink.deliver(std::slice::from_ref(&hb)).unwrap();
        let got = ng.wait_for(source, 1);
        let sd = &got[0]["_SDATA"];
        let data = &sd["zpulse-data@32473"];
        for list in ["sinks", "plugins"] {
            let text = data[list]
                .as_str()
                .unwrap_or_else(|| panic!("{source}: no {list} in {got:#?}"));
            kept_prefix(text, &hb.event.data[list]);
        }
        assert_eq!(data["samples"], "100");
        assert_eq!(sd["zpulse@32473"]["truncated"], "true");
        assert_eq!(sd["zpulse@32473"]["check"], "agent.heartbeat");
        assert_eq!(received(&got[0]), as_sent(&sink, &hb), "{source}: intact");
    }
    // (A message syslog-ng cannot parse is still written, its MSG saying "Error processing
    // log message" and no SD: the params above are what shows it parsed.)

    let rsyslog = Rsyslog::start();
    let mut sink = tcp_sink(rsyslog.tcp, Framing::OctetCounting);
    sink.deliver(std::slice::from_ref(&hb)).unwrap();
    let got = rsyslog.wait_for_sd(1);
    let data = &got[0]["zpulse-data@32473"];
    for list in ["sinks", "plugins"] {
        let text = data[list]
            .as_str()
            .unwrap_or_else(|| panic!("rsyslog: no {list} in {got:#?}"));
        kept_prefix(text, &hb.event.data[list]);
    }
    assert_eq!(data["samples"], "100");
    assert_eq!(got[0]["zpulse@32473"]["truncated"], "true");
}

/// docs/syslog.md: `format = "rfc5424"` on a Linux local socket is for a reader that parses
/// RFC 5424 there: rsyslog's imuxsock with `useSpecialParser="off"` reads every header field
/// and the structured data (mmpstrucdata) as sent.
#[test]
fn rsyslog_reads_rfc5424_from_a_local_socket_without_its_special_parser() {
    let rsyslog = Rsyslog::start();
    let mut config = SyslogConfig::new(format!(
        "unix://{}",
        rsyslog.dir.path().join("log5424.sock").display()
    ));
    config.format = Some(format::Dialect::Rfc5424);
    let mut sink = SyslogSink::new(config).unwrap();
    let sent = from("the local socket in rfc5424");
    sink.deliver(std::slice::from_ref(&sent)).unwrap();
    let lines = rsyslog.wait_for("imuxsock", 1);
    let line = &lines[0];
    let formatted = sink.format(&sent);
    assert_eq!(
        line.msg,
        "hdd-saturation on tank/mirror-0/sda (raised): sent by the local socket in rfc5424. Advice: Random I/O on spinning disks: 1. add a special vdev"
    );
    assert_eq!(line.hostname, "nas1");
    assert_eq!(line.msgid, "hdd-saturation");
    assert_eq!(line.procid, std::process::id().to_string());
    assert_eq!(line.severity, 2);
    assert_eq!(line.sd, sent_sd(&formatted, &sent_msg(&formatted)));
    let sd = rsyslog.wait_for_sd(1);
    assert_eq!(sd[0]["zpulse@32473"]["subject"], "tank/mirror-0/sda");
    assert_eq!(sd[0]["zpulse-data@32473"]["util_pct"], "97.5");
}
