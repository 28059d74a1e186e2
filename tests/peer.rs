//! Running a `zpulse-collector` process beside replayed agents: a free port, the process
//! killed when the test ends however it ends, waiting until it listens, and a plain HTTP GET.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on now (the kernel's choice for port 0).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed and reaped when dropped.
pub struct Collector(pub Child);

impl Collector {
    /// `bin serve` with its Forward listener and web page on free loopback ports and its
    /// database at `db`, once both ports accept connections: the process and the two ports.
    pub fn serve(bin: &Path, db: &Path) -> (Collector, u16, u16) {
        let (port, http) = (free_port(), free_port());
        let collector = Collector(
            Command::new(bin)
                .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
                .args(["--http", &format!("127.0.0.1:{http}")])
                .arg("--db")
                .arg(db)
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_for(port);
        wait_for(http);
        (collector, port, http)
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (at most 20 s) until something accepts connections on `port`.
pub fn wait_for(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "collector did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The whole HTTP/1.1 response to `GET path`, head included.
pub fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}
