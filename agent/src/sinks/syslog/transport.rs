//! Thin syslog transports: a formatted message in, bytes on a socket out.
//!
//! * `unix://PATH` — an `AF_UNIX` datagram socket, the way `syslog(3)` talks to the local
//!   daemon; a socket that turns out to be a stream (`EPROTOTYPE`) is used as one, each message
//!   ended by a NUL as glibc does. `/var/run/log` means FreeBSD's syslogd, whose libc first tries
//!   the root-only `/var/run/logpriv` (never dropped under load) and retries `ENOBUFS` only on
//!   the public socket; this does the same.
//! * `udp://HOST:PORT` — one message per datagram (RFC 5426).
//! * `tcp://HOST:PORT`, `tls://HOST:PORT` — [`Framing`]: RFC 6587 octet counting
//!   (`LEN SP MSG`, §3.4.1), which survives any byte in MSG and is what RFC 5425 requires for
//!   TLS, or non-transparent framing with LF as the trailer (`MSG LF`, §3.4.2), which plain TCP
//!   sources such as syslog-ng's `network()` and rsyslog's `imtcp` read as well. The
//!   formatters never put a LF into a message, so LF framing cannot split one.
//!
//! Nothing here blocks for long: every socket has a write timeout, connects have a timeout,
//! and after a failed connect the transport waits ([`Backoff`], read against an injected
//! [`Clock`]) before it tries again, refusing messages meanwhile. The sink drops and counts
//! what was refused.

use crate::base::clock::Clock;
use crate::sinks::backoff::Backoff;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where messages go, as written in the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    Unix(PathBuf),
    Udp { host: String, port: u16 },
    Tcp { host: String, port: u16 },
    Tls { host: String, port: u16 },
}

impl Address {
    /// `unix:///dev/log`, `udp://host[:514]`, `tcp://host[:601]`, `tls://host[:6514]`;
    /// IPv6 literals in brackets (`udp://[::1]:514`).
    pub fn parse(s: &str) -> Result<Address, String> {
        let help = "give unix:///dev/log, udp://host:514, tcp://host:601 or tls://host:6514";
        let Some((scheme, rest)) = s.split_once("://") else {
            return Err(format!("address: '{s}': {help}"));
        };
        let default_port = match scheme {
            "unix" => {
                if !rest.starts_with('/') {
                    return Err(format!(
                        "address: '{s}': a unix socket needs an absolute path (unix:///dev/log)"
                    ));
                }
                return Ok(Address::Unix(PathBuf::from(rest)));
            }
            "udp" => 514,
            "tcp" => 601,
            "tls" => 6514,
            other => return Err(format!("address: '{s}': unknown scheme '{other}': {help}")),
        };
        let (host, port) = split_host_port(rest).map_err(|e| format!("address: '{s}': {e}"))?;
        let port = port.unwrap_or(default_port);
        let (host, port) = (host.to_string(), port);
        Ok(match scheme {
            "udp" => Address::Udp { host, port },
            "tcp" => Address::Tcp { host, port },
            _ => Address::Tls { host, port },
        })
    }

    pub fn is_local(&self) -> bool {
        matches!(self, Address::Unix(_))
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, host, port) = match self {
            Address::Unix(p) => return write!(f, "unix://{}", p.display()),
            Address::Udp { host, port } => ("udp", host, port),
            Address::Tcp { host, port } => ("tcp", host, port),
            Address::Tls { host, port } => ("tls", host, port),
        };
        if host.contains(':') {
            write!(f, "{scheme}://[{host}]:{port}")
        } else {
            write!(f, "{scheme}://{host}:{port}")
        }
    }
}

fn split_host_port(rest: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or("an IPv6 address needs its closing ']'")?;
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (host, Some(p)),
                None => return Err(format!("unexpected '{after}' after the host")),
            },
        }
    } else {
        match rest.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err("write an IPv6 address in brackets: [::1]:514".into());
            }
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!("'{host}' is not a host name"));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("port '{p}' is not a number from 1 to 65535")),
        },
    };
    Ok((host, port))
}

/// How messages are delimited on a TCP or TLS stream (RFC 6587 §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
pub enum Framing {
    /// `LEN SP MSG` (§3.4.1): any byte may be in MSG; RFC 5425 requires it for TLS.
    #[default]
    #[serde(rename = "octet-counting")]
    OctetCounting,
    /// `MSG LF` (§3.4.2, non-transparent framing with LF as the trailer).
    #[serde(rename = "lf")]
    Lf,
}

impl Framing {
    /// One frame in one buffer, so an error between two writes never splits it.
    pub fn frame(self, msg: &[u8]) -> Vec<u8> {
        match self {
            Framing::OctetCounting => {
                let mut frame = format!("{} ", msg.len()).into_bytes();
                frame.extend_from_slice(msg);
                frame
            }
            Framing::Lf => {
                // A LF inside would end the message early and start a garbage one; the
                // formatters never write one, and a hand-made message gets a space instead.
                let mut frame: Vec<u8> = msg
                    .iter()
                    .map(|&b| if b == b'\n' { b' ' } else { b })
                    .collect();
                frame.push(b'\n');
                frame
            }
        }
    }
}

/// How a transport waits and retries. The defaults suit a daemon; tests shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Connect and write timeout of one message.
    pub timeout: Duration,
    /// First wait after a failed connect; it doubles up to `max_backoff`.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            timeout: Duration::from_secs(5),
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

/// `ENOBUFS` on FreeBSD's public socket means syslogd is behind; libc spins on it. We retry
/// this many times, 1 ms apart, then drop.
const ENOBUFS_RETRIES: u32 = 50;

enum Target {
    /// Socket paths in the order tried; `true` when `ENOBUFS` may be retried.
    Unix(Vec<(PathBuf, bool)>),
    Udp(String, u16),
    Tcp(String, u16, Framing),
    Tls(String, u16, Arc<ClientConfig>, Framing),
}

enum Conn {
    Datagram { sock: UnixDatagram, public: bool },
    Stream(UnixStream),
    Udp(UdpSocket),
    Tcp(TcpStream, Framing),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>, Framing),
}

/// One destination and its connection, reconnected on demand.
pub struct Transport {
    target: Target,
    conn: Option<Conn>,
    timing: Timing,
    backoff: Backoff,
    clock: Arc<dyn Clock>,
    last_error: String,
    connects: u64,
}

impl Transport {
    /// No I/O yet: the first send connects, so the agent starts while the log host is down.
    /// A `tls://` address needs its `tls` config ([`crate::sinks::tls_client`]); `framing`
    /// applies to TCP and TLS.
    pub fn new(
        address: &Address,
        tls: Option<Arc<ClientConfig>>,
        framing: Framing,
        timing: Timing,
        clock: Arc<dyn Clock>,
    ) -> Result<Transport, String> {
        let target = match (address, tls) {
            (Address::Unix(path), _) => {
                let mut paths = Vec::new();
                if path == Path::new("/var/run/log") {
                    paths.push((PathBuf::from("/var/run/logpriv"), false));
                }
                paths.push((path.clone(), true));
                Target::Unix(paths)
            }
            (Address::Udp { host, port }, _) => Target::Udp(host.clone(), *port),
            (Address::Tcp { host, port }, _) => Target::Tcp(host.clone(), *port, framing),
            (Address::Tls { host, port }, Some(config)) => {
                Target::Tls(host.clone(), *port, config, framing)
            }
            (Address::Tls { .. }, None) => {
                return Err(format!("{address}: TLS without a TLS configuration"));
            }
        };
        Ok(Transport {
            target,
            conn: None,
            timing,
            backoff: Backoff::new(timing.min_backoff, timing.max_backoff),
            clock,
            last_error: String::new(),
            connects: 0,
        })
    }

    /// Sends one formatted message, framed for the transport. On a broken connection it
    /// reconnects once and resends; an error means the message was not sent.
    pub fn send(&mut self, msg: &[u8]) -> Result<(), String> {
        // After a failed connect or a timeout, refuse at once until the backoff has passed:
        // one slow failure per backoff period, not one per message.
        if let Some(left) = self.backoff.remaining(self.clock.now()) {
            return Err(format!(
                "{}; next attempt in {} ms",
                self.last_error,
                left.as_millis()
            ));
        }
        // A TCP peer that has closed still accepts the first write into the kernel buffer,
        // and the message would vanish: look before writing.
        if self.conn.as_mut().is_some_and(Conn::peer_closed) {
            self.conn = None;
        }
        let mut error = String::new();
        for _ in 0..2 {
            if self.conn.is_none() {
                self.connect()?;
            }
            let Some(conn) = self.conn.as_mut() else {
                break;
            };
            match conn.send(msg) {
                Ok(()) => return Ok(()),
                Err(e) if is_timeout(&e) => {
                    // A reader that stopped reading (a full daemon queue, a stalled server).
                    // A stream may hold part of a frame: it is done. A datagram socket is
                    // fine and kept; either way, wait out a backoff.
                    if !conn.is_datagram() {
                        self.conn = None;
                    }
                    let error = format!("send: the receiver stopped reading ({e})");
                    self.failed(&error);
                    return Err(error);
                }
                Err(e) if conn.survives(&e) => return Err(format!("send: {e}")),
                Err(e) => {
                    self.conn = None;
                    error = format!("send: {e}");
                }
            }
        }
        Err(error)
    }

    /// Successful connects so far: 1 for a connection that stayed up.
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// Pushes out what TLS may still buffer.
    pub fn flush(&mut self) -> Result<(), String> {
        match self.conn.as_mut() {
            Some(Conn::Tls(s, _)) => s.flush().map_err(|e| {
                self.conn = None;
                format!("flush: {e}")
            }),
            _ => Ok(()),
        }
    }

    /// Connects; a failure starts (or lengthens) the backoff.
    fn connect(&mut self) -> Result<(), String> {
        match self.target.connect(self.timing.timeout) {
            Ok(conn) => {
                self.conn = Some(conn);
                self.connects += 1;
                self.backoff.reset();
                Ok(())
            }
            Err(e) => {
                self.failed(&e);
                Err(e)
            }
        }
    }

    /// No new connection before the backoff has passed (counted from when the failure was
    /// seen); the next failure waits longer.
    fn failed(&mut self, error: &str) {
        self.backoff.failed(self.clock.now());
        error.clone_into(&mut self.last_error);
    }
}

impl Target {
    fn connect(&self, timeout: Duration) -> Result<Conn, String> {
        match self {
            Target::Unix(paths) => {
                let mut last = String::from("no socket path");
                for (path, public) in paths {
                    match connect_unix(path, *public, timeout) {
                        Ok(conn) => return Ok(conn),
                        Err(e) => last = format!("{}: {e}", path.display()),
                    }
                }
                Err(last)
            }
            Target::Udp(host, port) => {
                let mut last = format!("{host}: no address");
                for addr in resolve(host, *port)? {
                    let bind: SocketAddr = if addr.is_ipv4() {
                        ([0, 0, 0, 0], 0).into()
                    } else {
                        ([0u16; 8], 0).into()
                    };
                    let sock = UdpSocket::bind(bind)
                        .and_then(|s| s.connect(addr).map(|()| s))
                        .and_then(|s| s.set_write_timeout(Some(timeout)).map(|()| s));
                    match sock {
                        Ok(s) => return Ok(Conn::Udp(s)),
                        Err(e) => last = format!("udp {addr}: {e}"),
                    }
                }
                Err(last)
            }
            Target::Tcp(host, port, framing) => {
                connect_tcp(host, *port, timeout).map(|s| Conn::Tcp(s, *framing))
            }
            Target::Tls(host, port, config, framing) => {
                let name = ServerName::try_from(host.clone())
                    .map_err(|e| format!("tls: '{host}' is not a server name: {e}"))?;
                let mut tcp = connect_tcp(host, *port, timeout)?;
                // The handshake reads: bound it like everything else.
                tcp.set_read_timeout(Some(timeout))
                    .map_err(|e| format!("tcp {host}:{port}: {e}"))?;
                let mut tls = ClientConnection::new(config.clone(), name)
                    .map_err(|e| format!("tls {host}:{port}: {e}"))?;
                while tls.is_handshaking() {
                    match tls.complete_io(&mut tcp) {
                        Ok((0, 0)) => {
                            return Err(format!(
                                "tls {host}:{port}: connection closed during the handshake"
                            ));
                        }
                        Ok(_) => {}
                        Err(e) => return Err(format!("tls {host}:{port}: handshake: {e}")),
                    }
                }
                Ok(Conn::Tls(Box::new(StreamOwned::new(tls, tcp)), *framing))
            }
        }
    }
}

fn connect_unix(path: &Path, public: bool, timeout: Duration) -> io::Result<Conn> {
    let sock = UnixDatagram::unbound()?;
    match sock.connect(path) {
        Ok(()) => {
            sock.set_write_timeout(Some(timeout))?;
            Ok(Conn::Datagram { sock, public })
        }
        // A stream socket where a datagram one was expected (some containers, old daemons).
        Err(e) if e.raw_os_error() == Some(libc::EPROTOTYPE) => {
            let stream = UnixStream::connect(path)?;
            stream.set_write_timeout(Some(timeout))?;
            Ok(Conn::Stream(stream))
        }
        Err(e) => Err(e),
    }
}

fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    (host, port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .map_err(|e| format!("cannot resolve '{host}': {e}"))
}

fn connect_tcp(host: &str, port: u16, timeout: Duration) -> Result<TcpStream, String> {
    let mut last = format!("'{host}' has no address");
    for addr in resolve(host, port)? {
        let stream = TcpStream::connect_timeout(&addr, timeout)
            .and_then(|s| s.set_write_timeout(Some(timeout)).map(|()| s))
            .and_then(|s| s.set_nodelay(true).map(|()| s));
        match stream {
            Ok(s) => return Ok(s),
            Err(e) => last = format!("tcp {addr}: {e}"),
        }
    }
    Err(last)
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Conn {
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        match self {
            Conn::Datagram { sock, public } => {
                let mut tries = 0;
                loop {
                    match sock.send(msg) {
                        Ok(_) => return Ok(()),
                        Err(e)
                            if *public
                                && e.raw_os_error() == Some(libc::ENOBUFS)
                                && tries < ENOBUFS_RETRIES =>
                        {
                            tries += 1;
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            Conn::Stream(s) => {
                // glibc ends each message with its NUL on a stream socket; the daemon splits
                // on it.
                let mut buf = Vec::with_capacity(msg.len() + 1);
                buf.extend_from_slice(msg);
                buf.push(0);
                s.write_all(&buf)
            }
            Conn::Udp(s) => s.send(msg).map(|_| ()),
            Conn::Tcp(s, framing) => s.write_all(&framing.frame(msg)),
            Conn::Tls(s, framing) => {
                s.write_all(&framing.frame(msg))?;
                s.flush()
            }
        }
    }

    fn is_datagram(&self) -> bool {
        matches!(self, Conn::Datagram { .. } | Conn::Udp(_))
    }

    /// Whether the connection is still good after `e`: a datagram that was too big, or a
    /// daemon that was too busy, costs that message only. A stream error may have written
    /// part of a frame, so the stream is done.
    fn survives(&self, e: &io::Error) -> bool {
        self.is_datagram() && matches!(e.raw_os_error(), Some(libc::EMSGSIZE | libc::ENOBUFS))
    }

    /// True when a TCP or TLS peer has closed (syslog servers never send, so anything
    /// readable is EOF, an error, a TLS alert or a session ticket, which is read and dropped).
    fn peer_closed(&mut self) -> bool {
        match self {
            Conn::Tcp(s, _) => Probe::Tcp(s).closed(),
            Conn::Tls(s, _) => Probe::Tls(s).closed(),
            _ => false,
        }
    }
}

/// Reads without blocking to see whether a stream is still open.
enum Probe<'a> {
    Tcp(&'a mut TcpStream),
    Tls(&'a mut StreamOwned<ClientConnection, TcpStream>),
}

impl Probe<'_> {
    fn closed(&mut self) -> bool {
        if self.socket().set_nonblocking(true).is_err() {
            return true;
        }
        let mut buf = [0u8; 1024];
        let mut closed = true;
        // Bounded: a peer that keeps sending is not a syslog server we can trust anyway.
        for _ in 0..64 {
            let read = match self {
                Probe::Tcp(s) => s.read(&mut buf),
                Probe::Tls(s) => s.read(&mut buf),
            };
            match read {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    closed = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        closed || self.socket().set_nonblocking(false).is_err()
    }

    fn socket(&self) -> &TcpStream {
        match self {
            Probe::Tcp(s) => s,
            Probe::Tls(s) => s.get_ref(),
        }
    }
}
