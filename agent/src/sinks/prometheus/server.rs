//! The `/metrics` endpoint: a small HTTP/1.1 server on `std::net` that serves the bytes the
//! sink last rendered.
//!
//! A scrape costs no sampling and no rendering: the sink publishes an `Arc` of the rendered
//! text, and a request only copies bytes out of it (the gzip form is compressed once per
//! rendering, by the first request that asks for it). One request per connection.
//!
//! The accept thread never waits for a client. A connection whose request head is already
//! there when it is accepted (a scraper sends it with the connection) is answered on the
//! accept thread, as far as the socket takes the response without waiting: a lab
//! exposition over loopback goes whole in one `writev`, and the connection is closed. What
//! is left (a head not yet whole, a response the socket did not take whole) goes to a
//! connection thread, from where the accept thread stopped: each connection there has a
//! thread of its own (a thread is kept for the connections after it, not made per
//! connection), at most `max_connections` at once and half of them (at least one) from one
//! peer address.
//!
//! Each request is bounded as a whole, not per read: its head (at most 8 KiB) must arrive
//! within `timeout` of the accept, and the response must be written within `timeout` of the
//! head, whatever the client sends or reads in between — a byte every second does not restart
//! anything. And a connection still sending its head is the one given up when another
//! arrives with every slot taken (or its peer's share): the oldest such one is closed to make
//! room. A scrape sends its head at once, so no number of slow clients keeps it from being
//! served; only connections whose response is being written are never closed for another,
//! and when every slot is one of those the newcomer is answered 503.

use super::exposition::{Exposition, OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE};
use crate::base::deflate::Deflater;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Largest request head accepted (request line and headers).
const MAX_REQUEST_BYTES: usize = 8 * 1024;

/// One rendering, as served.
#[derive(Debug, Default)]
pub struct Published {
    pub exposition: Exposition,
    text_gzip: OnceLock<Vec<u8>>,
    openmetrics_gzip: OnceLock<Vec<u8>>,
}

impl Published {
    pub fn new(exposition: Exposition) -> Published {
        Published {
            exposition,
            ..Published::default()
        }
    }

    fn body(&self, openmetrics: bool, gzip: bool) -> Body<'_> {
        match (openmetrics, gzip) {
            (false, false) => Body::Bytes(self.exposition.text()),
            (true, false) => Body::OpenMetrics(&self.exposition),
            (_, true) => Body::Bytes(self.gzipped(openmetrics, None)),
        }
    }

    /// The gzip form, made by the first call that asks for it: with the server's kept
    /// compressor when given and free, else with one of its own (the text and OpenMetrics
    /// forms of one reading asked at once compress side by side rather than wait).
    fn gzipped(&self, openmetrics: bool, kept: Option<&Mutex<Deflater>>) -> &[u8] {
        let e = &self.exposition;
        let (cell, len) = if openmetrics {
            (&self.openmetrics_gzip, e.openmetrics_len())
        } else {
            (&self.text_gzip, e.text().len())
        };
        cell.get_or_init(|| {
            let mut own = Deflater::default();
            let mut guard = kept.and_then(|m| m.try_lock().ok());
            let deflater = guard.as_deref_mut().unwrap_or(&mut own);
            if openmetrics {
                gzip(deflater, e.openmetrics_pieces(), len)
            } else {
                gzip(deflater, [e.text()], len)
            }
        })
    }
}

/// What a response carries.
enum Body<'a> {
    Bytes(&'a [u8]),
    /// The OpenMetrics form, sent piece by piece from the text ([`Exposition::openmetrics_pieces`]).
    OpenMetrics(&'a Exposition),
}

impl Body<'_> {
    fn len(&self) -> usize {
        match self {
            Body::Bytes(b) => b.len(),
            Body::OpenMetrics(e) => e.openmetrics_len(),
        }
    }
}

/// Writes `head` then `body` from byte `*sent` of the two on, counting in `*sent` what each
/// write took: on an error (a full socket buffer that may not be waited on, a timeout)
/// `*sent` is where to go on from. Plain bytes go in one `writev` of head and body (not a
/// write and a TCP segment for the head alone).
fn write_response(
    w: &mut impl Write,
    head: &[u8],
    body: &Body,
    sent: &mut usize,
) -> std::io::Result<()> {
    match body {
        Body::Bytes(b) => write_vectored_from(w, [head, b], sent),
        Body::OpenMetrics(e) => {
            write_coalesced(w, std::iter::once(head).chain(e.openmetrics_pieces()), sent)
        }
    }
}

/// `parts` from byte `*sent` of them on, each write as many of them as the socket takes.
fn write_vectored_from(
    w: &mut impl Write,
    parts: [&[u8]; 2],
    sent: &mut usize,
) -> std::io::Result<()> {
    loop {
        let mut skip = *sent;
        let mut slices = [std::io::IoSlice::new(&[]); 2];
        let mut n = 0;
        for part in parts {
            if skip >= part.len() {
                skip -= part.len();
            } else {
                slices[n] = std::io::IoSlice::new(&part[skip..]);
                skip = 0;
                n += 1;
            }
        }
        if n == 0 {
            return Ok(());
        }
        match w.write_vectored(&slices[..n]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(k) => *sent += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes pieces from byte `*sent` of them on through a buffer on the stack: a write per
/// 16 KiB rather than per piece (a piece can be one line), and nothing allocated.
fn write_coalesced<'p>(
    w: &mut impl Write,
    pieces: impl Iterator<Item = &'p [u8]>,
    sent: &mut usize,
) -> std::io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    let mut used = 0;
    let mut skip = *sent;
    for piece in pieces {
        if skip >= piece.len() {
            skip -= piece.len();
            continue;
        }
        let piece = &piece[std::mem::take(&mut skip)..];
        if used + piece.len() > buf.len() {
            write_counted(w, &buf[..used], sent)?;
            used = 0;
        }
        if piece.len() >= buf.len() {
            write_counted(w, piece, sent)?;
        } else {
            buf[used..used + piece.len()].copy_from_slice(piece);
            used += piece.len();
        }
    }
    write_counted(w, &buf[..used], sent)
}

/// `write_all`, counting in `*sent` the bytes each write took.
fn write_counted(w: &mut impl Write, mut bytes: &[u8], sent: &mut usize) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match w.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(k) => {
                *sent += k;
                bytes = &bytes[k..];
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `pieces` as one gzip member (RFC 1952) of `len` bytes before compression. The header is
/// the one flate2's `GzEncoder` writes at level 1: no name, no time, XFL 4 (fastest), OS
/// unknown. On a compressor's error (none expected) the form is empty.
fn gzip<'p>(
    deflater: &mut Deflater,
    pieces: impl IntoIterator<Item = &'p [u8]>,
    len: usize,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(len / 4 + 1024 + 18);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
    let mut crc = flate2::Crc::new();
    let pieces = pieces.into_iter().inspect(|piece| crc.update(piece));
    if deflater.stream(pieces, &mut out).is_err() {
        return Vec::new();
    }
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
    out
}

/// Makes the rendering of one reading, when a scrape first asks for it.
pub type Render = Box<dyn FnOnce() -> Exposition + Send>;

/// The current reading as the server holds it.
#[derive(Default)]
enum Current {
    /// Before the first reading.
    #[default]
    Nothing,
    /// Not rendered yet: no scrape has asked since it came.
    Pending(Render),
    Rendered(Arc<Published>),
}

/// What the server knows: the current reading, rendered or to be rendered.
#[derive(Default)]
pub struct Shared {
    current: Mutex<Current>,
    pub scrapes: std::sync::atomic::AtomicU64,
    /// Readings rendered on demand ([`Shared::offer`]).
    pub renderings: std::sync::atomic::AtomicU64,
    /// The compressor of the gzip forms, kept from reading to reading ([`Deflater`]).
    deflater: Mutex<Deflater>,
}

impl Shared {
    /// A reading already rendered (for a textfile too).
    pub fn publish(&self, p: Arc<Published>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Current::Rendered(p);
    }

    /// A reading to render if and when it is scraped: once, by the first scrape, whose
    /// rendering every later scrape of the same reading is served (each form, plain or gzip,
    /// made from it at most once). A reading nobody scrapes is never rendered.
    pub fn offer(&self, render: Render) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Current::Pending(render);
    }

    fn current(&self) -> Option<Arc<Published>> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        // Rendered under the lock: scrapes that come meanwhile wait for this rendering
        // rather than make their own.
        if let Current::Pending(_) = &*current {
            let Current::Pending(render) = std::mem::take(&mut *current) else {
                return None;
            };
            self.renderings.fetch_add(1, Ordering::Relaxed);
            *current = Current::Rendered(Arc::new(Published::new(render())));
        }
        match &*current {
            Current::Rendered(p) => Some(Arc::clone(p)),
            Current::Nothing | Current::Pending(_) => None,
        }
    }
}

/// Limits of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    /// For reading the whole request head (from the accept) and for writing the whole
    /// response (from the head).
    pub timeout: Duration,
}

impl Limits {
    /// Connections one peer address may hold: half the slots, so that one host cannot take
    /// them all.
    pub fn per_peer(&self) -> usize {
        self.max_connections.div_ceil(2).max(1)
    }
}

/// The connections being served, each with what the accept loop needs to give it up.
#[derive(Debug, Default)]
struct Slots {
    open: Vec<Slot>,
    next_id: u64,
}

#[derive(Debug)]
struct Slot {
    id: u64,
    peer: IpAddr,
    accepted: Instant,
    /// Still sending its request head: may be closed to make room.
    reading_head: bool,
    /// The same socket, to shut down from the accept thread.
    socket: TcpStream,
}

impl Slots {
    /// Makes sure a new connection from `peer` can have a slot, closing the oldest
    /// connection still sending its head if every slot (or the peer's share) is taken; false
    /// when none can be given up.
    fn make_room(&mut self, peer: IpAddr, limits: Limits) -> bool {
        let from_peer = self.open.iter().filter(|s| s.peer == peer).count();
        if from_peer >= limits.per_peer() && self.give_up_oldest_head(|s| s.peer == peer).is_none()
        {
            return false;
        }
        self.open.len() < limits.max_connections || self.give_up_oldest_head(|_| true).is_some()
    }

    /// Gives a connection from `peer` (still sending its head if `reading_head`, else being
    /// answered) the slot [`Slots::make_room`] made for it.
    fn take(&mut self, peer: IpAddr, socket: TcpStream, reading_head: bool) -> u64 {
        self.next_id += 1;
        self.open.push(Slot {
            id: self.next_id,
            peer,
            accepted: Instant::now(),
            reading_head,
            socket,
        });
        self.next_id
    }

    fn give_up_oldest_head(&mut self, among: impl Fn(&Slot) -> bool) -> Option<()> {
        let i = self
            .open
            .iter()
            .enumerate()
            .filter(|(_, s)| s.reading_head && among(s))
            .min_by_key(|(_, s)| s.accepted)
            .map(|(i, _)| i)?;
        // Its thread's read fails at once; the thread then finds its slot gone.
        let _ = self.open.swap_remove(i).socket.shutdown(Shutdown::Both);
        Some(())
    }

    fn head_read(&mut self, id: u64) {
        if let Some(s) = self.open.iter_mut().find(|s| s.id == id) {
            s.reading_head = false;
        }
    }

    fn release(&mut self, id: u64) {
        self.open.retain(|s| s.id != id);
    }
}

/// A listening endpoint. Sinks of successive configurations (SIGHUP) that listen on the same
/// address share one, so a reload never has to bind a port the process already holds.
pub struct Endpoint {
    pub addr: SocketAddr,
    pub shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    limits: Arc<Mutex<Limits>>,
    /// The accept thread, which holds the listener: joined on drop, so that the port is
    /// free once the endpoint is gone (a reload binds it again at once).
    accepting: Option<std::thread::JoinHandle<()>>,
}

impl Endpoint {
    pub fn set_limits(&self, limits: Limits) {
        *self.limits.lock().unwrap_or_else(|e| e.into_inner()) = limits;
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept thread so it sees the flag and lets the port go (a wildcard
        // address is reached through loopback).
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let woken = TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok();
        // Only a woken thread is sure to return; one that was not is left to let the port
        // go when it next wakes.
        if let Some(thread) = self.accepting.take()
            && woken
        {
            let _ = thread.join();
        }
    }
}

type Registry = Mutex<Vec<(SocketAddr, Weak<Endpoint>)>>;

fn registry() -> &'static Registry {
    static ENDPOINTS: OnceLock<Registry> = OnceLock::new();
    ENDPOINTS.get_or_init(|| Mutex::new(Vec::new()))
}

/// The endpoint on `addr`: this process's own if one is open, else a new listener.
pub fn endpoint(addr: SocketAddr, limits: Limits) -> Result<Arc<Endpoint>, String> {
    let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    reg.retain(|(_, w)| w.strong_count() > 0);
    if let Some(e) = reg
        .iter()
        .find(|(a, _)| *a == addr)
        .and_then(|(_, w)| w.upgrade())
    {
        e.set_limits(limits);
        return Ok(e);
    }
    let listener = TcpListener::bind(addr).map_err(|e| bind_error(addr, &e))?;
    let addr = listener.local_addr().unwrap_or(addr);
    let shared = Arc::new(Shared::default());
    let stop = Arc::new(AtomicBool::new(false));
    let limits = Arc::new(Mutex::new(limits));
    let accepting = {
        let (shared, stop, limits) = (Arc::clone(&shared), Arc::clone(&stop), Arc::clone(&limits));
        std::thread::Builder::new()
            .name(format!("prometheus {addr}"))
            .spawn(move || accept_loop(listener, shared, stop, limits))
            .map_err(|e| format!("listen {addr}: cannot start the server thread: {e}"))?
    };
    let endpoint = Arc::new(Endpoint {
        addr,
        shared,
        stop,
        limits,
        accepting: Some(accepting),
    });
    reg.push((addr, Arc::downgrade(&endpoint)));
    Ok(endpoint)
}

fn bind_error(addr: SocketAddr, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "listen {addr}: the port is already in use (another zpulse, or another exporter?): \
             stop it or choose another port"
        ),
        std::io::ErrorKind::AddrNotAvailable => format!(
            "listen {addr}: this host has no such address: use one of its own, 127.0.0.1 or 0.0.0.0"
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "listen {addr}: permission denied (ports below 1024 need privileges): choose a port above 1024"
        ),
        _ => format!("listen {addr}: {e}"),
    }
}

fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    limits: Arc<Mutex<Limits>>,
) {
    let slots = Arc::new(Mutex::new(Slots::default()));
    let workers = Workers::new();
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok((mut stream, peer)) = accepted else {
            continue;
        };
        let limits = *limits.lock().unwrap_or_else(|e| e.into_inner());
        let accepted = Instant::now();
        // Room is made as for a connection that needs a thread, even for one answered at
        // once: a newcomer gives up the oldest connection still sending its head, so idle
        // connections never keep their slots while others come.
        let room = slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .make_room(peer.ip(), limits);
        if !room {
            // Best effort, bounded by the write timeout; the client may retry.
            let _ = stream.set_write_timeout(Some(limits.timeout));
            let response = plain("503 Service Unavailable", b"too many connections\n");
            let _ = response.send(&mut stream, &mut 0);
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        let Some(left) = serve_at_once(&mut stream, &shared, limits.timeout) else {
            // Served, or failed: dropping the stream closes it.
            continue;
        };
        // Only this thread takes slots: the room made above is still there.
        let Ok(socket) = stream.try_clone() else {
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        };
        let reading_head = matches!(left, Left::Head(_));
        let id =
            slots
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(peer.ip(), socket, reading_head);
        let conn = Connection {
            stream,
            id,
            accepted,
            limits,
            left,
        };
        if !workers.hand(conn, &shared, &slots) {
            // No thread for it (the connection is closed): the slot is given back.
            slots.lock().unwrap_or_else(|e| e.into_inner()).release(id);
        }
    }
}

/// What is left of a connection for a connection thread, once the accept thread has done what
/// it could without waiting for the peer.
enum Left {
    /// The request head, of which these bytes came.
    Head(Vec<u8>),
    /// The response, of which `sent` bytes are written; the rest due by `deadline`.
    Response {
        response: Response,
        sent: usize,
        deadline: Instant,
    },
}

/// Serves a connection on the accept thread as far as that needs no waiting for the peer:
/// the request head if it is already here (a scraper sends it as soon as it is connected),
/// then the response as far as the socket's send buffer takes it (a lab exposition, whole,
/// over loopback). `None` when nothing is left to do (or the connection failed); else what a
/// connection thread must do, from where this stopped. A connection served here costs no
/// thread woken, no slot and no timeouts set: a connection thread cost a scrape a futex wake,
/// two context switches and a setsockopt per read and per write.
fn serve_at_once(stream: &mut TcpStream, shared: &Shared, write_time: Duration) -> Option<Left> {
    if stream.set_nonblocking(true).is_err() {
        return Some(Left::Head(Vec::new()));
    }
    let mut head = Vec::new();
    let whole = match read_head(stream, &mut head, || Ok(())) {
        Ok(whole) => whole,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Some(Left::Head(head)),
        Err(_) => return None,
    };
    let response = respond_to(whole.then_some(&head[..]), shared);
    let deadline = Instant::now() + write_time;
    let mut sent = 0;
    match response.send(stream, &mut sent) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Some(Left::Response {
            response,
            sent,
            deadline,
        }),
        Ok(()) | Err(_) => None,
    }
}

/// An admitted connection, for a connection thread to serve.
struct Connection {
    stream: TcpStream,
    id: u64,
    accepted: Instant,
    limits: Limits,
    left: Left,
}

impl Connection {
    fn serve(mut self, shared: &Shared, slots: &Mutex<Slots>) {
        let id = self.id;
        let _ = self.finish(shared, || {
            slots
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .head_read(id)
        });
        let _ = self.stream.shutdown(Shutdown::Both);
        slots.lock().unwrap_or_else(|e| e.into_inner()).release(id);
    }

    /// Does what is left: the request head read by `accepted + timeout` (then `head_read` is
    /// called: the connection may no longer be given up for another), the response written
    /// whole within `timeout` of it.
    fn finish(&mut self, shared: &Shared, head_read: impl FnOnce()) -> std::io::Result<()> {
        self.stream.set_nonblocking(false)?;
        let left = std::mem::replace(&mut self.left, Left::Head(Vec::new()));
        let (response, mut sent, deadline) = match left {
            Left::Head(mut head) => {
                let head_deadline = self.accepted + self.limits.timeout;
                let stream = &self.stream;
                let whole = read_head(stream, &mut head, || {
                    stream.set_read_timeout(Some(remaining(head_deadline)?))
                })?;
                head_read();
                let deadline = Instant::now() + self.limits.timeout;
                (respond_to(whole.then_some(&head[..]), shared), 0, deadline)
            }
            Left::Response {
                response,
                sent,
                deadline,
            } => (response, sent, deadline),
        };
        let mut writer = DeadlineWriter {
            stream: &mut self.stream,
            deadline,
        };
        response.send(&mut writer, &mut sent)
    }
}

/// The connection threads. Each serves one connection at a time, and there are as many as
/// connections were ever served at once (at most `max_connections`): a connection is
/// handed to a thread that is idle, or to a new one when none is, so no connection ever
/// waits behind another (a slow client holds only its own thread). A thread, once made, is
/// kept for the next connections: a scrape then costs no thread made and torn down. They
/// end with the accept loop (their queue disconnected).
struct Workers {
    queue: crossbeam_channel::Sender<Connection>,
    waiting: crossbeam_channel::Receiver<Connection>,
    /// Threads waiting for a connection that no connection handed over has claimed yet.
    idle: Arc<AtomicUsize>,
}

impl Workers {
    fn new() -> Workers {
        let (queue, waiting) = crossbeam_channel::unbounded();
        Workers {
            queue,
            waiting,
            idle: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Gives `conn` to an idle thread, claimed here so that two connections never count
    /// on the same one, or to a new thread; false when no thread can be made.
    fn hand(&self, conn: Connection, shared: &Arc<Shared>, slots: &Arc<Mutex<Slots>>) -> bool {
        let claimed = self
            .idle
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if claimed {
            // A thread is in (or on its way to) its wait and nobody else's: it takes this.
            return self.queue.send(conn).is_ok();
        }
        let (shared, slots) = (Arc::clone(shared), Arc::clone(slots));
        let (waiting, idle) = (self.waiting.clone(), Arc::clone(&self.idle));
        let spawned = std::thread::Builder::new()
            .name("prometheus conn".into())
            .spawn(move || {
                conn.serve(&shared, &slots);
                loop {
                    idle.fetch_add(1, Ordering::AcqRel);
                    let Ok(conn) = waiting.recv() else { return };
                    conn.serve(&shared, &slots);
                }
            });
        spawned.is_ok()
    }
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub openmetrics: bool,
    pub gzip: bool,
}

/// Parses a request head (pure). `None` when it is not HTTP/1.x.
pub fn parse_request(head: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?;
    let version = first.next()?;
    if !version.starts_with("HTTP/1.") || first.next().is_some() {
        return None;
    }
    let path = target.split('?').next().unwrap_or(target).to_string();
    let (mut openmetrics, mut gzip) = (false, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.eq_ignore_ascii_case("accept") {
            openmetrics = accepts(value, "application/openmetrics-text");
        } else if name.eq_ignore_ascii_case("accept-encoding") {
            gzip = accepts(value, "gzip");
        }
    }
    Some(Request {
        method,
        path,
        openmetrics,
        gzip,
    })
}

/// Whether a comma-separated list (Accept, Accept-Encoding) names `what` without `q=0`.
fn accepts(list: &str, what: &str) -> bool {
    list.split(',').any(|item| {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim();
        let refused = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f64>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        name.eq_ignore_ascii_case(what) && !refused
    })
}

/// What is left of `deadline`, or a timeout error when it has passed.
fn remaining(deadline: Instant) -> std::io::Result<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left),
        _ => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

/// Reads the request head on into `head` (what came of it so far), `before_read` called
/// before each read (to bound it by what is left of a deadline); true once it is whole (and
/// `head` is cut to it), false if the peer closed first or sent more than a head may be.
fn read_head(
    stream: &TcpStream,
    head: &mut Vec<u8>,
    mut before_read: impl FnMut() -> std::io::Result<()>,
) -> std::io::Result<bool> {
    let mut chunk = [0u8; 1024];
    loop {
        before_read()?;
        let n = match (&*stream).read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(false);
        }
        head.extend_from_slice(&chunk[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end);
            return Ok(true);
        }
        if head.len() > MAX_REQUEST_BYTES {
            return Ok(false);
        }
    }
}

/// A socket whose writes must all be done by `deadline`: the response as a whole is bounded,
/// not each write (a client reading a byte at a time would otherwise reset it every time).
struct DeadlineWriter<'s> {
    stream: &'s mut TcpStream,
    deadline: Instant,
}

impl Write for DeadlineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream
            .set_write_timeout(Some(remaining(self.deadline)?))?;
        self.stream.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        self.stream
            .set_write_timeout(Some(remaining(self.deadline)?))?;
        self.stream.write_vectored(bufs)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// A response: its status line and headers, and what its body is made from (the same body
/// wherever the response is written from, the accept thread or a connection thread).
struct Response {
    head: Vec<u8>,
    content: Content,
}

enum Content {
    /// A response to HEAD.
    Nothing,
    Static(&'static [u8]),
    Rendering {
        published: Arc<Published>,
        openmetrics: bool,
        gzip: bool,
    },
}

impl Response {
    fn body(&self) -> Body<'_> {
        match &self.content {
            Content::Nothing => Body::Bytes(&[]),
            Content::Static(bytes) => Body::Bytes(bytes),
            Content::Rendering {
                published,
                openmetrics,
                gzip,
            } => published.body(*openmetrics, *gzip),
        }
    }

    /// Writes the response from byte `*sent` on (see [`write_response`]).
    fn send(&self, w: &mut impl Write, sent: &mut usize) -> std::io::Result<()> {
        write_response(w, &self.head, &self.body(), sent)
    }
}

/// A short plain-text response.
fn plain(status: &str, body: &'static [u8]) -> Response {
    Response {
        head: response_head(status, "text/plain", None, body.len()),
        content: Content::Static(body),
    }
}

/// The response to a request `head` (`None`: not a whole head).
fn respond_to(head: Option<&[u8]>, shared: &Shared) -> Response {
    let Some(req) = head.and_then(parse_request) else {
        return plain("400 Bad Request", b"bad request\n");
    };
    if req.method != "GET" && req.method != "HEAD" {
        return plain("405 Method Not Allowed", b"GET /metrics\n");
    }
    match req.path.as_str() {
        "/metrics" => {}
        "/" => {
            let body = b"<html><body><a href=\"/metrics\">zpulse metrics</a></body></html>\n";
            return Response {
                head: response_head("200 OK", "text/html; charset=utf-8", None, body.len()),
                content: Content::Static(body),
            };
        }
        _ => return plain("404 Not Found", b"not found: try /metrics\n"),
    }
    let Some(published) = shared.current() else {
        return plain(
            "503 Service Unavailable",
            b"no reading yet: the first one comes at the agent's first sample\n",
        );
    };
    shared.scrapes.fetch_add(1, Ordering::Relaxed);
    let content_type = if req.openmetrics {
        OPENMETRICS_CONTENT_TYPE
    } else {
        TEXT_CONTENT_TYPE
    };
    if req.gzip {
        published.gzipped(req.openmetrics, Some(&shared.deflater));
    }
    let len = published.body(req.openmetrics, req.gzip).len();
    let encoding = req.gzip.then_some("gzip");
    Response {
        head: response_head("200 OK", content_type, encoding, len),
        content: if req.method == "HEAD" {
            Content::Nothing
        } else {
            Content::Rendering {
                published,
                openmetrics: req.openmetrics,
                gzip: req.gzip,
            }
        },
    }
}

/// The status line and headers, `len` the body's length.
fn response_head(status: &str, content_type: &str, encoding: Option<&str>, len: usize) -> Vec<u8> {
    let mut head = Vec::with_capacity(256);
    for part in [
        "HTTP/1.1 ",
        status,
        "\r\nContent-Type: ",
        content_type,
        "\r\nContent-Length: ",
        len.to_string().as_str(),
        "\r\nConnection: close\r\n",
    ] {
        head.extend_from_slice(part.as_bytes());
    }
    if let Some(enc) = encoding {
        head.extend_from_slice(b"Content-Encoding: ");
        head.extend_from_slice(enc.as_bytes());
        head.extend_from_slice(b"\r\nVary: Accept-Encoding\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab_rendering() -> Exposition {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/lab/basic/001");
        super::super::exposition::render_at(
            super::super::exposition::Detail::Full,
            &crate::capture::load(&dir).unwrap(),
            &[],
            None,
        )
    }

    /// A socket that takes at most `take` bytes a call and refuses every other call, as a
    /// non-blocking socket whose send buffer fills does.
    struct Stingy {
        out: Vec<u8>,
        take: usize,
        refuse: bool,
    }

    impl Write for Stingy {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.write_vectored(&[std::io::IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            self.refuse = !self.refuse;
            if !self.refuse {
                return Err(std::io::ErrorKind::WouldBlock.into());
            }
            let before = self.out.len();
            for buf in bufs {
                let room = self.take - (self.out.len() - before);
                self.out.extend_from_slice(&buf[..buf.len().min(room)]);
            }
            Ok(self.out.len() - before)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What a scrape is sent in each form is the head, then the rendering's text or its
    /// OpenMetrics form, whole (a lab reading's pieces are many, and longer and shorter than
    /// the send buffer), gzipped or not; and so it is when the socket takes it bit by bit,
    /// each write going on from where the one before stopped.
    #[test]
    fn each_form_is_sent_whole_plain_or_gzipped_at_once_or_bit_by_bit() {
        let e = lab_rendering();
        let (text, om) = (e.text().to_vec(), e.openmetrics().into_bytes());
        assert!(text.len() > 100_000 && om.starts_with(b"# HELP "));
        let p = Published::new(e);
        let head = b"HTTP/1.1 200 OK\r\n\r\n";
        for (openmetrics, want) in [(false, &text), (true, &om)] {
            let body = p.body(openmetrics, false);
            assert_eq!(body.len(), want.len());
            let whole = [&head[..], want].concat();
            for take in [usize::MAX, 1, 7, 1000, 16 * 1024 + 3, 70_000] {
                let mut socket = Stingy {
                    out: Vec::new(),
                    take,
                    refuse: take != usize::MAX,
                };
                let mut sent = 0;
                let mut calls = 0;
                while let Err(e) = write_response(&mut socket, head, &body, &mut sent) {
                    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
                    assert_eq!(sent, socket.out.len());
                    calls += 1;
                    assert!(calls <= 2 * whole.len(), "no progress");
                }
                assert_eq!(sent, whole.len());
                assert!(
                    socket.out == whole,
                    "openmetrics {openmetrics}, {take} a write"
                );
            }
            let Body::Bytes(gzipped) = p.body(openmetrics, true) else {
                panic!("a gzip body is one piece");
            };
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(gzipped)
                .read_to_end(&mut plain)
                .unwrap();
            assert!(plain == *want, "gzip, openmetrics {openmetrics}");
        }
    }

    /// The accept thread answers a connection whose request head is already there, and
    /// leaves one whose head is not (whole) to a connection thread with what came of it,
    /// at once: it never waits for a peer.
    #[test]
    fn a_head_already_sent_is_answered_at_once_and_none_is_waited_for() {
        let e = lab_rendering();
        let text = e.text().to_vec();
        let shared = Shared::default();
        shared.publish(Arc::new(Published::new(e)));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let timeout = Duration::from_secs(10);

        let mut client = TcpStream::connect(addr).unwrap();
        client
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // Until the head has arrived.
        server.peek(&mut [0u8; 1]).unwrap();
        assert!(serve_at_once(&mut server, &shared, timeout).is_none());
        drop(server);
        let mut response = Vec::new();
        client.read_to_end(&mut response).unwrap();
        let want_head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {TEXT_CONTENT_TYPE}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            text.len()
        );
        assert!(response == [want_head.as_bytes(), &text].concat());
        assert_eq!(shared.scrapes.load(Ordering::Relaxed), 1);

        for sent in [&b""[..], b"GET /metrics HTTP/1.1\r\nHo"] {
            let mut client = TcpStream::connect(addr).unwrap();
            client.write_all(sent).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            if !sent.is_empty() {
                server.peek(&mut [0u8; 1]).unwrap();
            }
            let started = Instant::now();
            let left = serve_at_once(&mut server, &shared, timeout);
            assert!(started.elapsed() < Duration::from_secs(1));
            let Some(Left::Head(head)) = left else {
                panic!("a head not whole is left to a connection thread");
            };
            // What came of it (loopback delivers a write whole).
            assert_eq!(head, sent);
        }
        assert_eq!(shared.scrapes.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn prometheus_accept_header_asks_for_openmetrics() {
        // What Prometheus 2.42 sends (scrape/scrape.go, scrapeAcceptHeader).
        let head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n";
        let r = parse_request(head).unwrap();
        assert_eq!(r.path, "/metrics");
        assert!(r.openmetrics && r.gzip);
        let plain = parse_request(
            b"GET /metrics?x=1 HTTP/1.0\r\nAccept: text/plain\r\nAccept-Encoding: gzip;q=0, br",
        )
        .unwrap();
        assert!(!plain.openmetrics && !plain.gzip);
        assert_eq!(plain.path, "/metrics");
        assert!(parse_request(b"GET /metrics\r\n").is_none());
        assert!(parse_request(b"\xff\xfe").is_none());
    }
}
