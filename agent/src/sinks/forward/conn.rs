//! One connection to the collector: TCP, optional TLS, optional shared-key handshake, then
//! batches sent one at a time, each waiting for its ack.
//!
//! One batch in flight per connection keeps the ack bookkeeping trivial (acks arrive in
//! order anyway) and costs one round trip per batch, which is nothing at one batch per
//! sampling interval. Every blocking call is bounded: sockets read with a short timeout so
//! the sink's shutdown flag is seen within [`POLL`], and each phase has a deadline.

use rustls::pki_types::ServerName;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use zpulse_forward::handshake::{Ping, salt_text};
use zpulse_forward::{FrameDecoder, Limits, ServerMessage};

/// How often a blocked read looks at the shutdown flag.
pub const POLL: Duration = Duration::from_millis(100);

/// What a connection needs, resolved once from the config.
pub struct Target {
    pub host: String,
    pub port: u16,
    pub tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    pub shared_key: Option<String>,
    pub hostname: String,
    pub connect_timeout: Duration,
    pub ack_timeout: Duration,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// Why an attempt failed.
#[derive(Debug)]
pub enum Failure {
    /// The sink is shutting down.
    Stopped,
    /// Anything else; the text says what, for the log and the heartbeat.
    Error(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Failure {
        Failure::Error(s)
    }
}

pub struct Connection {
    stream: Stream,
    decoder: FrameDecoder,
    /// `false` when the server's HELO said it takes one request per connection.
    pub keepalive: bool,
    /// No batch has gone through it yet.
    pub fresh: bool,
}

impl Connection {
    /// Connects, and runs the TLS and Forward handshakes, within `connect_timeout` each.
    pub fn open(t: &Target, stop: &AtomicBool) -> Result<Connection, Failure> {
        let addrs: Vec<SocketAddr> = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", t.host))?
            .collect();
        let mut last = format!("{} resolves to no address", t.host);
        let mut tcp = None;
        for addr in addrs {
            if stop.load(Ordering::Relaxed) {
                return Err(Failure::Stopped);
            }
            match TcpStream::connect_timeout(&addr, t.connect_timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = format!("connect to {addr}: {e}"),
            }
        }
        let tcp = tcp.ok_or(last)?;
        let setup = |e: io::Error| format!("socket setup: {e}");
        tcp.set_nodelay(true).map_err(setup)?;
        tcp.set_read_timeout(Some(POLL)).map_err(setup)?;
        // A peer that stops reading must not hold a write forever.
        tcp.set_write_timeout(Some(t.ack_timeout)).map_err(setup)?;
        let deadline = Instant::now() + t.connect_timeout;
        let stream = match &t.tls {
            None => Stream::Plain(tcp),
            Some((config, name)) => {
                let conn = rustls::ClientConnection::new(config.clone(), name.clone())
                    .map_err(|e| format!("TLS: {e}"))?;
                let mut s = rustls::StreamOwned::new(conn, tcp);
                while s.conn.is_handshaking() {
                    match s.conn.complete_io(&mut s.sock) {
                        Ok(_) => {}
                        Err(e) if waiting(&e) => check(deadline, stop, "the TLS handshake")?,
                        Err(e) => return Err(format!("TLS handshake: {e}").into()),
                    }
                }
                Stream::Tls(Box::new(s))
            }
        };
        let mut c = Connection {
            stream,
            decoder: FrameDecoder::new(Limits::for_replies()),
            keepalive: true,
            fresh: true,
        };
        if let Some(key) = &t.shared_key {
            c.handshake(t, key, deadline, stop)?;
        }
        Ok(c)
    }

    fn handshake(
        &mut self,
        t: &Target,
        key: &str,
        deadline: Instant,
        stop: &AtomicBool,
    ) -> Result<(), Failure> {
        let helo = match self.read_message(deadline, stop, "HELO")? {
            ServerMessage::Helo(h) => h,
            other => return Err(format!("expected HELO from the server, got {other:?}").into()),
        };
        if helo.requires_user() {
            return Err(Failure::Error(
                "the server asks for a username and password, which zpulse does not send".into(),
            ));
        }
        self.keepalive = helo.keepalive;
        let ping = Ping::answer(&helo, &t.hostname, &salt_text(super::random16()), key, None);
        self.write(&ping.encode())?;
        match self.read_message(deadline, stop, "PONG")? {
            ServerMessage::Pong(pong) => pong.verify(&ping, &helo, key).map_err(Failure::Error),
            other => Err(format!("expected PONG from the server, got {other:?}").into()),
        }
    }

    /// Sends one Forward message carrying `chunk` and waits for its ack.
    pub fn send(
        &mut self,
        message: &[u8],
        chunk: &str,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<(), Failure> {
        self.fresh = false;
        self.write(message)?;
        match self.read_message(Instant::now() + timeout, stop, "the ack")? {
            ServerMessage::Ack(a) if a == chunk => Ok(()),
            ServerMessage::Ack(a) => {
                Err(format!("ack {a:?} for another chunk than {chunk:?}").into())
            }
            ServerMessage::Helo(_) => Err(Failure::Error(
                "the server requires a shared key (it sent HELO): set shared_key".into(),
            )),
            ServerMessage::Pong(_) => Err(Failure::Error("unexpected PONG from the server".into())),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.stream
            .write_all(bytes)
            .and_then(|()| self.stream.flush())
            .map_err(|e| Failure::Error(format!("send: {e}")))
    }

    fn read_message(
        &mut self,
        deadline: Instant,
        stop: &AtomicBool,
        what: &str,
    ) -> Result<ServerMessage, Failure> {
        let mut buf = [0u8; 4096];
        loop {
            match self.decoder.next_server() {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => return Err(format!("bad reply from the server: {e}").into()),
            }
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    return Err(
                        format!("the server closed the connection (waiting for {what})").into(),
                    );
                }
                Ok(n) => self.decoder.feed(&buf[..n]),
                Err(e) if waiting(&e) => check(deadline, stop, what)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("receive (waiting for {what}): {e}").into()),
            }
        }
    }
}

fn waiting(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn check(deadline: Instant, stop: &AtomicBool, what: &str) -> Result<(), Failure> {
    if stop.load(Ordering::Relaxed) {
        return Err(Failure::Stopped);
    }
    if Instant::now() >= deadline {
        return Err(Failure::Error(format!("timed out waiting for {what}")));
    }
    Ok(())
}
