//! Debian's real `prometheus-alertmanager` for the alerting tests: started on a loopback
//! address with a routing tree that groups by `alertname` and `pool` (what an on-call team
//! writes), read back through its API v2. Missing is a failure, never a skip.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";
/// The routing tree of the tests: one group per kind of finding and pool.
const ROUTES: &str = "route:\n  receiver: 'null'\n  group_by: ['alertname', 'pool']\n\
                      receivers:\n  - name: 'null'\n";

/// An Alertmanager, a child of the test, killed when dropped.
pub struct Alertmanager {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Alertmanager {
    /// Started on `addr` with the test routing tree (and a web config, for TLS and auth);
    /// returned at once: [`Alertmanager::plain`] waits until it is ready.
    pub fn start(addr: SocketAddr, web_config: Option<&Path>) -> Alertmanager {
        assert!(
            Path::new(ALERTMANAGER).exists(),
            "{ALERTMANAGER} is missing: apt-get install prometheus-alertmanager (.ci/run does)"
        );
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("alertmanager.yml");
        std::fs::write(&config, ROUTES).unwrap();
        let mut cmd = Command::new(ALERTMANAGER);
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(w) = web_config {
            cmd.arg(format!("--web.config.file={}", w.display()));
        }
        Alertmanager {
            child: cmd.spawn().unwrap(),
            addr,
            _dir: dir,
        }
    }

    /// Plain HTTP on `addr`, once ready.
    pub fn plain(addr: SocketAddr) -> Alertmanager {
        let am = Alertmanager::start(addr, None);
        super::wait_until("alertmanager ready", || {
            get(addr, "/-/ready").is_some_and(|(c, _)| c == 200)
        });
        am
    }

    /// The alerts it lists now (its default: active, silenced, inhibited ones).
    pub fn alerts(&self) -> Vec<serde_json::Value> {
        get_json(self.addr, "/api/v2/alerts")
    }
}

/// `GET path`: the status code and body, `None` when nothing answers.
pub fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    let code = reply.split_whitespace().nth(1)?.parse().ok()?;
    let body = reply.split_once("\r\n\r\n")?.1.to_owned();
    Some((code, body))
}

/// A JSON array Alertmanager answers (chunked or not: the body's outermost brackets).
pub fn get_json(addr: SocketAddr, path: &str) -> Vec<serde_json::Value> {
    let (code, body) = get(addr, path).unwrap_or_else(|| panic!("GET {path}"));
    assert_eq!(code, 200, "{body}");
    let start = body.find('[').unwrap();
    let end = body.rfind(']').unwrap();
    serde_json::from_str(&body[start..=end]).unwrap()
}
