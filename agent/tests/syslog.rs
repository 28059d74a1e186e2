//! The syslog sink against a real rsyslogd: every transport, every field as rsyslog parses it.
//!
//! The test (not the agent: the agent never starts a process) runs Debian's `rsyslogd` in the
//! foreground with a private config: imuxsock on a socket in a temp dir (never `/dev/log`),
//! imudp, imtcp and imtcp over TLS (gtls, the test CA of `fixtures/syslog-tls`) on free
//! loopback ports, and one output file whose template writes the fields rsyslog parsed,
//! `|`-separated. rsyslog keeps its default limits, so the sink's defaults are checked against
//! them. `.ci/run` installs `rsyslog` and `rsyslog-gnutls`.

use jiff::Timestamp;
use std::fs;
use std::io::Write;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use zpulse_agent::sinks::syslog::{SyslogConfig, SyslogSink, TlsSettings, format};
use zpulse_agent::sinks::{Sink, Stamped};
use zpulse_proto::event::{Event, EventTime, Severity, State, Value};

const FIELDS: &str = "%inputname%|%syslogseverity%|%syslogfacility-text%|%hostname%|%app-name%|\
                      %procid%|%msgid%|%timereported:::date-rfc3339%|%structured-data%|%msg%";

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
        let (udp, tcp, tls) = (free_udp_port(), free_tcp_port(), free_tcp_port());
        let d = dir.path().display();
        let config = format!(
            r#"
global(workDirectory="{d}"
       defaultNetstreamDriverCAFile="{ca}"
       defaultNetstreamDriverCertFile="{cert}"
       defaultNetstreamDriverKeyFile="{key}")
module(load="imuxsock" sysSock.use="off")
input(type="imuxsock" socket="{socket}" useSysTimeStamp="off" ignoreTimestamp="off")
module(load="imudp")
input(type="imudp" address="127.0.0.1" port="{udp}" name="udp")
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="{tcp}" name="tcp")
input(type="imtcp" address="127.0.0.1" port="{tls}" name="tls"
      streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")
template(name="fields" type="string" string="{FIELDS}\n")
*.* action(type="omfile" file="{d}/out.log" template="fields")
"#,
            ca = fixture("ca.pem").display(),
            cert = fixture("server.pem").display(),
            key = fixture("server.key").display(),
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
                && TcpStream::connect(("127.0.0.1", self.tcp)).is_ok()
                && TcpStream::connect(("127.0.0.1", self.tls)).is_ok()
                && {
                    let _ = probe.send_to(b"<14>1 - - probe - - - ready", ("127.0.0.1", self.udp));
                    self.lines().iter().any(|l| l.app_name == "probe")
                };
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "rsyslogd did not start (.ci/run installs rsyslog and rsyslog-gnutls, whose \
                 gtls driver the TLS input needs): {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stderr(&self) -> String {
        let read = |name| fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        format!("{}{}", read("rsyslogd.out"), read("rsyslogd.err"))
    }

    fn lines(&self) -> Vec<Line> {
        fs::read_to_string(self.dir.path().join("out.log"))
            .unwrap_or_default()
            .lines()
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
            std::thread::sleep(Duration::from_millis(50));
        }
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
    for l in &lines {
        assert_eq!((l.severity, l.msgid.as_str()), (2, "hdd-saturation"));
        assert_eq!(l.hostname, "nas1", "the event's host");
        assert_eq!(l.msg, msg, "framing kept each message whole");
    }
    assert_eq!(lines[0].sd, sent_sd(&tcp.format(&small), &msg));
    // rsyslog's default maximum takes the whole message: the SD arrives as sent, with the
    // truncation mark.
    assert_eq!(lines[1].sd, sent_sd(&big_text, &msg));
    assert!(
        lines[1].sd.contains(r#" truncated="true"]"#),
        "{}",
        lines[1].sd
    );

    // ---- TLS (RFC 5425), verified against the test CA ----
    let mut config = SyslogConfig::new(format!("tls://localhost:{}", rsyslog.tls));
    config.tls = Some(TlsSettings {
        ca: Some(fixture("ca.pem")),
    });
    let mut tls = SyslogSink::new(config).unwrap();
    tls.deliver(std::slice::from_ref(&small)).unwrap();
    let lines = rsyslog.wait_for("tls", 1);
    assert_eq!(lines[0].msg, msg);
    assert_eq!(lines[0].sd, sent_sd(&tls.format(&small), &msg));
    // The server's post-handshake records (TLS 1.3 session tickets) have arrived by now; the
    // check for a closed peer reads them and keeps the connection.
    std::thread::sleep(Duration::from_millis(200));
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
    config.tls = Some(TlsSettings { ca: Some(other_ca) });
    let mut untrusted = SyslogSink::new(config).unwrap();
    let err = untrusted.deliver(&[small]).unwrap_err();
    assert!(err.message.contains("handshake"), "{err}");
    assert_eq!(
        (untrusted.stats().delivered, untrusted.stats().dropped),
        (0, 1)
    );
}
