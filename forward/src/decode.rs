//! Decoding a Forward stream: cutting it into messages ([`FrameDecoder`]) and reading each
//! one, as a server reads a client ([`client_message`]) or a client reads a server
//! ([`server_message`]).
//!
//! Receivers tell the four event modes apart by the second array element: an integer or ext
//! (a time) is Message, an array is Forward, a `bin` or `str` is PackedForward (gzipped when
//! the options say `compressed: "gzip"`). Entries may also use the v1.5 metadata form
//! `[[time, metadata], record]` (Fluent Bit ≥ 5 sends it); the metadata is dropped.

use super::handshake::{Helo, Ping, Pong};
use super::msgpack::{Head, Reader, Scanner, value_len};
use super::{FrameError, Limits};
use std::borrow::Cow;
use std::io::Read;
use zpulse_proto::event::{Event, EventTime};

/// How a batch was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `[tag, time, record, option?]`
    Message,
    /// `[tag, [[time, record], …], option?]`
    Forward,
    /// `[tag, bin|str(entries), option?]`
    PackedForward,
    /// `[tag, bin|str(gzip(entries)), {compressed: "gzip", …}]`
    CompressedPackedForward,
}

/// The option map of an event message. Unknown keys are ignored, as the spec asks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    /// Number of entries, as the client counted them.
    pub size: Option<u64>,
    /// Asks for an ack carrying this exact string.
    pub chunk: Option<String>,
    /// `gzip` for CompressedPackedForward.
    pub compressed: Option<String>,
}

/// One event as received: its time and its record, still encoded (a MessagePack map).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// An integer time arrives as whole seconds.
    pub time: EventTime,
    pub record: Vec<u8>,
}

impl Entry {
    /// The record as a zpulse [`Event`], validated.
    pub fn event(&self) -> Result<Event, String> {
        Event::from_msgpack(&self.record)
    }
}

/// One event as received, its record borrowed from the message where it can be (an
/// inflated blob's entries are copies): what a receiver that makes its own rows of the
/// records reads, without an allocation and a copy per entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRef<'a> {
    pub time: EventTime,
    pub record: Cow<'a, [u8]>,
}

impl EntryRef<'_> {
    pub fn into_owned(self) -> Entry {
        Entry {
            time: self.time,
            record: self.record.into_owned(),
        }
    }
}

/// A client message whose entries borrow the frame ([`client_message_ref`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessageRef<'a> {
    KeepAlive,
    Ping(Ping),
    Events(EventBatchRef<'a>),
}

/// The events of one client message, their records borrowed ([`EntryRef`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventBatchRef<'a> {
    pub tag: String,
    pub mode: Mode,
    pub entries: Vec<EntryRef<'a>>,
    pub options: Options,
}

impl ClientMessageRef<'_> {
    pub fn into_owned(self) -> ClientMessage {
        match self {
            ClientMessageRef::KeepAlive => ClientMessage::KeepAlive,
            ClientMessageRef::Ping(p) => ClientMessage::Ping(p),
            ClientMessageRef::Events(b) => ClientMessage::Events(EventBatch {
                tag: b.tag,
                mode: b.mode,
                entries: b.entries.into_iter().map(EntryRef::into_owned).collect(),
                options: b.options,
            }),
        }
    }
}

/// The events of one client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventBatch {
    pub tag: String,
    pub mode: Mode,
    pub entries: Vec<Entry>,
    pub options: Options,
}

/// What a client sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessage {
    /// A lone `nil`.
    KeepAlive,
    Ping(Ping),
    Events(EventBatch),
}

/// What a server sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMessage {
    Helo(Helo),
    Pong(Pong),
    /// The `ack` of `{"ack": chunk}`.
    Ack(String),
}

/// Cuts a byte stream into complete MessagePack values, however the bytes arrive.
///
/// [`feed`](FrameDecoder::feed) what the socket gave; call a `next_*` method until it says
/// `None` (a partial value waits for more bytes). A stream that is not MessagePack, or a
/// value over [`Limits`], is an error from which the decoder does not recover (without a
/// length prefix there is no way to find the next value): it repeats the error, and the
/// connection should be closed. An error in the *content* of a complete value
/// ([`next_client`](FrameDecoder::next_client), [`next_server`](FrameDecoder::next_server))
/// leaves the stream in step; Forward receivers close the connection anyway.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already handed out.
    start: usize,
    scanner: Scanner,
    limits: Limits,
    failed: Option<FrameError>,
}

impl FrameDecoder {
    pub fn new(limits: Limits) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            scanner: Scanner::default(),
            limits,
            failed: None,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Appends bytes read from the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        // Drop what was handed out here, not in `next_frame`: one move per read, however
        // many small values the read held.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes received and not yet returned as a value.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete value, as its bytes.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.scanner.scan(&self.buf[self.start..], &self.limits) {
            Ok(Some(len)) => {
                let at = self.start;
                self.start += len;
                Ok(Some(&self.buf[at..at + len]))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// The next client message (server side).
    pub fn next_client(&mut self) -> Result<Option<ClientMessage>, FrameError> {
        let limits = self.limits;
        match self.next_frame()? {
            Some(frame) => client_message(frame, &limits).map(Some),
            None => Ok(None),
        }
    }

    /// The next server message (client side).
    pub fn next_server(&mut self) -> Result<Option<ServerMessage>, FrameError> {
        let limits = self.limits;
        match self.next_frame()? {
            Some(frame) => server_message(frame, &limits).map(Some),
            None => Ok(None),
        }
    }
}

/// Reads one complete client message (a value cut by [`FrameDecoder`]).
pub fn client_message(frame: &[u8], limits: &Limits) -> Result<ClientMessage, FrameError> {
    client_message_ref(frame, limits).map(ClientMessageRef::into_owned)
}

/// [`client_message`] with the records of its entries borrowed from `frame` (but those of a
/// gzip blob, inflated).
pub fn client_message_ref<'a>(
    frame: &'a [u8],
    limits: &Limits,
) -> Result<ClientMessageRef<'a>, FrameError> {
    let mut r = Reader::new(frame);
    let len = match r.head()? {
        Head::Nil => return Ok(ClientMessageRef::KeepAlive),
        Head::Array(len) => len,
        other => {
            return Err(FrameError::invalid(
                0,
                format!(
                    "a client message is an array or nil, not {}",
                    other.describe()
                ),
            ));
        }
    };
    if len == 0 {
        return Err(r.err("an empty array is not a Forward message"));
    }
    let tag_at = r.offset();
    let tag = r.str("tag")?.to_owned();
    if tag == "PING" && len == 6 {
        return ping(&mut r).map(ClientMessageRef::Ping);
    }
    if tag.is_empty() {
        return Err(FrameError::invalid(tag_at, "tag: empty"));
    }
    let arity = |ok: &[u32], mode: &str| {
        if ok.contains(&len) {
            Ok(())
        } else {
            Err(FrameError::invalid(
                0,
                format!("{mode} mode has {ok:?} elements, not {len}"),
            ))
        }
    };
    let second_at = r.offset();
    let (mode, entries, options) = match r.peek()? {
        Head::Array(n) => {
            arity(&[2, 3], "Forward")?;
            if n as usize > limits.max_entries {
                return Err(FrameError::TooManyEntries {
                    limit: limits.max_entries,
                });
            }
            r.head()?;
            let mut entries = Vec::with_capacity((n as usize).min(1024));
            for _ in 0..n {
                entries.push(entry(&mut r, limits, false)?);
            }
            let options = if len == 3 {
                options(&mut r, limits)?
            } else {
                Options::default()
            };
            (Mode::Forward, entries, options)
        }
        Head::Str(_) | Head::Bin(_) => {
            arity(&[2, 3], "PackedForward")?;
            let blob = r.raw("entries")?;
            let options = if len == 3 {
                options(&mut r, limits)?
            } else {
                Options::default()
            };
            match options.compressed.as_deref() {
                Some("gzip") => (
                    Mode::CompressedPackedForward,
                    inflate_entries(blob, limits).map_err(|e| e.shifted(second_at))?,
                    options,
                ),
                // Fluent Bit has sent "text" for an uncompressed blob.
                None | Some("text") => (
                    Mode::PackedForward,
                    entries_ref(blob, limits).map_err(|e| e.shifted(second_at))?,
                    options,
                ),
                Some(other) => {
                    return Err(FrameError::invalid(
                        second_at,
                        format!("compressed: {other:?} is not supported (only \"gzip\")"),
                    ));
                }
            }
        }
        Head::UInt(_) | Head::Int(_) | Head::Float(_) | Head::Ext(..) => {
            arity(&[3, 4], "Message")?;
            let entry = EntryRef {
                time: time(&mut r)?,
                record: Cow::Borrowed(record(&mut r, limits)?),
            };
            let options = if len == 4 {
                options(&mut r, limits)?
            } else {
                Options::default()
            };
            (Mode::Message, vec![entry], options)
        }
        other => {
            return Err(FrameError::invalid(
                second_at,
                format!(
                    "the second element is {}: not a time, entries or a packed blob",
                    other.describe()
                ),
            ));
        }
    };
    Ok(ClientMessageRef::Events(EventBatchRef {
        tag,
        mode,
        entries,
        options,
    }))
}

/// Reads one complete server message.
pub fn server_message(frame: &[u8], limits: &Limits) -> Result<ServerMessage, FrameError> {
    let mut r = Reader::new(frame);
    match r.head()? {
        Head::Map(n) => {
            let mut ack = None;
            for _ in 0..n {
                if key(&mut r, limits)?.as_deref() == Some("ack") {
                    ack = Some(r.str("ack")?.to_owned());
                } else {
                    r.value(limits)?;
                }
            }
            ack.map(ServerMessage::Ack)
                .ok_or_else(|| FrameError::invalid(0, "a map from the server without \"ack\""))
        }
        Head::Array(n) => {
            let kind = r.str("message type")?;
            match (kind, n) {
                ("HELO", 2) => helo(&mut r, limits).map(ServerMessage::Helo),
                ("PONG", 5) => {
                    let at = r.offset();
                    let ok = match r.head()? {
                        Head::Bool(b) => b,
                        other => {
                            return Err(FrameError::invalid(
                                at,
                                format!("PONG: expected a boolean, found {}", other.describe()),
                            ));
                        }
                    };
                    Ok(ServerMessage::Pong(Pong {
                        ok,
                        reason: r.str("PONG reason")?.to_owned(),
                        hostname: r.str("PONG hostname")?.to_owned(),
                        shared_key_digest: r.str("PONG digest")?.to_owned(),
                    }))
                }
                (kind, n) => Err(FrameError::invalid(
                    0,
                    format!("a server sends HELO (2 elements) or PONG (5), not {kind:?} with {n}"),
                )),
            }
        }
        other => Err(FrameError::invalid(
            0,
            format!(
                "a server message is a map or an array, not {}",
                other.describe()
            ),
        )),
    }
}

/// The entries of a PackedForward blob (already inflated), at most `limits.max_entries`.
pub fn entries(blob: &[u8], limits: &Limits) -> Result<Vec<Entry>, FrameError> {
    entries_ref(blob, limits).map(|e| e.into_iter().map(EntryRef::into_owned).collect())
}

/// [`entries`], their records borrowed from `blob`.
pub fn entries_ref<'a>(blob: &'a [u8], limits: &Limits) -> Result<Vec<EntryRef<'a>>, FrameError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < blob.len() {
        if out.len() == limits.max_entries {
            return Err(FrameError::TooManyEntries {
                limit: limits.max_entries,
            });
        }
        let len = value_len(&blob[at..], limits).map_err(|e| e.shifted(at))?;
        let mut r = Reader::at(&blob[at..at + len], at);
        out.push(entry(&mut r, limits, true)?);
        at += len;
    }
    Ok(out)
}

/// Whether a complete client message is a CompressedPackedForward one: the messages whose
/// decoding can cost far more than their size. Reads only the headers; a malformed message
/// is `false` (decoding it says why).
pub fn is_compressed(frame: &[u8], limits: &Limits) -> bool {
    fn read(r: &mut Reader, limits: &Limits) -> Result<bool, FrameError> {
        if !matches!(r.head()?, Head::Array(3)) || r.str("tag").is_err() {
            return Ok(false);
        }
        if !matches!(r.peek()?, Head::Str(_) | Head::Bin(_)) {
            return Ok(false);
        }
        r.raw("entries")?;
        Ok(options(r, limits)?.compressed.is_some())
    }
    read(&mut Reader::new(frame), limits).unwrap_or(false)
}

/// Inflates a gzip blob and reads its entries as they come out, so that the entry limit
/// stops a blob of millions of tiny entries after `max_entries`, without inflating the
/// rest; at most `max_inflated_bytes` of output either way. Offsets in errors count from
/// the start of the inflated bytes.
fn inflate_entries(blob: &[u8], limits: &Limits) -> Result<Vec<EntryRef<'static>>, FrameError> {
    let mut gz = flate2::read::MultiGzDecoder::new(blob);
    let mut out = Vec::new();
    // Inflated bytes not yet read as entries; `base`: their offset in the whole output.
    let mut pending: Vec<u8> = Vec::new();
    let (mut base, mut total) = (0usize, 0usize);
    let mut scanner = Scanner::default();
    let mut chunk = vec![0u8; 32 << 10];
    loop {
        let mut at = 0;
        while let Some(len) = scanner
            .scan(&pending[at..], limits)
            .map_err(|e| e.shifted(base + at))?
        {
            if out.len() == limits.max_entries {
                return Err(FrameError::TooManyEntries {
                    limit: limits.max_entries,
                });
            }
            let mut r = Reader::at(&pending[at..at + len], base + at);
            let e = entry(&mut r, limits, true)?;
            out.push(EntryRef {
                time: e.time,
                record: Cow::Owned(e.record.into_owned()),
            });
            at += len;
        }
        pending.drain(..at);
        base += at;
        let n = gz
            .read(&mut chunk)
            .map_err(|e| FrameError::invalid(0, format!("gzip: {e}")))?;
        if n == 0 {
            if !pending.is_empty() {
                return Err(FrameError::invalid(base, "the value is cut short"));
            }
            return Ok(out);
        }
        total += n;
        if total > limits.max_inflated_bytes {
            return Err(FrameError::TooLarge {
                limit: limits.max_inflated_bytes,
            });
        }
        pending.extend_from_slice(&chunk[..n]);
    }
}

/// Inflates a gzip blob of one or more members, refusing more than `limit` bytes of output.
pub fn inflate(blob: &[u8], limit: usize) -> Result<Vec<u8>, FrameError> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(blob)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| FrameError::invalid(0, format!("gzip: {e}")))?;
    if out.len() > limit {
        return Err(FrameError::TooLarge { limit });
    }
    Ok(out)
}

/// One entry `[time, record]` at `r`. `whole`: `r` holds exactly this entry, already known
/// to be one complete value (its length was found), so the record is the rest of it and is
/// not walked again.
fn entry<'a>(r: &mut Reader<'a>, limits: &Limits, whole: bool) -> Result<EntryRef<'a>, FrameError> {
    let at = r.offset();
    match r.head()? {
        Head::Array(2) => {}
        other => {
            return Err(FrameError::invalid(
                at,
                format!("an entry is [time, record], not {}", describe_len(other)),
            ));
        }
    }
    let time = if let Head::Array(2) = r.peek()? {
        // v1.5: [[time, metadata], record].
        r.head()?;
        let t = time(r)?;
        r.value(limits)?;
        t
    } else {
        time(r)?
    };
    let record = if whole {
        record_rest(r)?
    } else {
        record(r, limits)?
    };
    Ok(EntryRef {
        time,
        record: Cow::Borrowed(record),
    })
}

fn describe_len(h: Head) -> String {
    match h {
        Head::Array(n) => format!("an array of {n}"),
        other => other.describe().to_owned(),
    }
}

fn time(r: &mut Reader) -> Result<EventTime, FrameError> {
    let at = r.offset();
    let bad = |why: String| Err(FrameError::invalid(at, why));
    match r.head()? {
        Head::UInt(s) => match u32::try_from(s) {
            Ok(seconds) => Ok(EventTime { seconds, nanos: 0 }),
            Err(_) => bad(format!("time: {s} seconds is past 2106")),
        },
        Head::Ext(0, 8) => {
            let b = r.bytes(8)?;
            let nanos = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            if nanos >= 1_000_000_000 {
                return bad(format!("time: {nanos} nanoseconds"));
            }
            Ok(EventTime {
                seconds: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                nanos,
            })
        }
        Head::Ext(t, n) => bad(format!(
            "time: ext type {t} with {n} bytes is not EventTime (type 0, 8 bytes)"
        )),
        Head::Float(_) => bad("time: a float (receivers reject these; send EventTime)".into()),
        other => bad(format!(
            "time: expected EventTime or an integer, found {}",
            other.describe()
        )),
    }
}

fn record<'a>(r: &mut Reader<'a>, limits: &Limits) -> Result<&'a [u8], FrameError> {
    match r.peek()? {
        Head::Map(_) => Ok(r.value(limits)?),
        other => Err(r.err(format!(
            "record: expected a map, found {}",
            other.describe()
        ))),
    }
}

/// The record of an entry whose reader holds exactly that entry (see [`entry`]): the rest.
fn record_rest<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], FrameError> {
    match r.peek()? {
        Head::Map(_) => Ok(r.rest()),
        other => Err(r.err(format!(
            "record: expected a map, found {}",
            other.describe()
        ))),
    }
}

/// A map key as text; `None` for keys of another type (skipped by the caller with the value).
fn key(r: &mut Reader, limits: &Limits) -> Result<Option<String>, FrameError> {
    if let Head::Str(_) = r.peek()? {
        Ok(Some(r.str("key")?.to_owned()))
    } else {
        r.value(limits)?;
        Ok(None)
    }
}

fn options(r: &mut Reader, limits: &Limits) -> Result<Options, FrameError> {
    let at = r.offset();
    let n = match r.head()? {
        Head::Nil => return Ok(Options::default()),
        Head::Map(n) => n,
        other => {
            return Err(FrameError::invalid(
                at,
                format!("options: expected a map, found {}", other.describe()),
            ));
        }
    };
    let mut o = Options::default();
    for _ in 0..n {
        let k = key(r, limits)?;
        match k.as_deref() {
            Some("size") => {
                let at = r.offset();
                match r.head()? {
                    Head::UInt(n) => o.size = Some(n),
                    other => {
                        return Err(FrameError::invalid(
                            at,
                            format!(
                                "options.size: expected an integer, found {}",
                                other.describe()
                            ),
                        ));
                    }
                }
            }
            Some("chunk") => o.chunk = Some(r.str("options.chunk")?.to_owned()),
            Some("compressed") => o.compressed = Some(r.str("options.compressed")?.to_owned()),
            _ => {
                r.value(limits)?;
            }
        }
    }
    Ok(o)
}

fn ping(r: &mut Reader) -> Result<Ping, FrameError> {
    Ok(Ping {
        hostname: r.str("PING hostname")?.to_owned(),
        salt: r.raw("PING salt")?.to_vec(),
        shared_key_digest: r.str("PING digest")?.to_owned(),
        username: r.str("PING username")?.to_owned(),
        password_digest: r.str("PING password digest")?.to_owned(),
    })
}

fn helo(r: &mut Reader, limits: &Limits) -> Result<Helo, FrameError> {
    let at = r.offset();
    let n = match r.head()? {
        Head::Map(n) => n,
        other => {
            return Err(FrameError::invalid(
                at,
                format!("HELO: expected an option map, found {}", other.describe()),
            ));
        }
    };
    let mut nonce = None;
    let mut helo = Helo {
        nonce: Vec::new(),
        auth: Vec::new(),
        keepalive: true,
    };
    for _ in 0..n {
        match key(r, limits)?.as_deref() {
            Some("nonce") => nonce = Some(r.raw("HELO nonce")?.to_vec()),
            Some("auth") => helo.auth = r.raw("HELO auth")?.to_vec(),
            Some("keepalive") => {
                let at = r.offset();
                match r.head()? {
                    Head::Bool(b) => helo.keepalive = b,
                    other => {
                        return Err(FrameError::invalid(
                            at,
                            format!(
                                "HELO keepalive: expected a boolean, found {}",
                                other.describe()
                            ),
                        ));
                    }
                }
            }
            _ => {
                r.value(limits)?;
            }
        }
    }
    helo.nonce = nonce.ok_or_else(|| FrameError::invalid(at, "HELO without a nonce"))?;
    Ok(helo)
}
