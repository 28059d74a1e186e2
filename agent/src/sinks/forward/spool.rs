//! The Forward sink's disk spool: every batch not yet acked by the collector, in order.
//!
//! Layout of the spool directory:
//!
//! * `NNNNNNNNNNNNNNNN.seg` (sequence number in hex): append-only segments of batch records;
//! * `cursor`: `"<segment> <offset>\n"`, the first byte not yet acked. Written on every ack
//!   (to a temporary file, then renamed), so an agent restart resends only what was not acked.
//!
//! A record is `"ZPF1"`, the message length and the event count (u32 big-endian), the chunk
//! id (16 bytes), the Forward message exactly as it goes on the wire, and an FNV-1a 64 of
//! everything after the magic. The checksum finds a record torn by a crash: the segment is
//! cut there when the spool is opened. A segment is deleted once all its batches are acked.
//!
//! The spool is bounded: before a record goes in, the oldest segments are deleted until it
//! fits, and their unacked events are counted as dropped. Dropping a whole segment (an
//! eighth of the bound, at most 16 MiB) at a time frees disk space at once, which dropping
//! single records from an append-only file would not.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use zpulse_forward::ChunkId;

const MAGIC: &[u8; 4] = b"ZPF1";
/// Magic, length, events, chunk id.
const HEADER: usize = 4 + 4 + 4 + 16;
const TRAILER: usize = 8;
/// Bytes a record adds to its message.
pub const RECORD_OVERHEAD: u64 = (HEADER + TRAILER) as u64;
const CURSOR: &str = "cursor";

/// Where a batch is: its segment and its byte offset there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BatchId {
    pub segment: u64,
    pub offset: u64,
}

/// A batch read back from the spool, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub id: BatchId,
    pub chunk: ChunkId,
    pub events: u32,
    /// The Forward message, as it goes on the wire.
    pub message: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    offset: u64,
    /// The whole record's length.
    len: u64,
    events: u32,
}

#[derive(Debug)]
struct Segment {
    seq: u64,
    /// Bytes in the file.
    size: u64,
    /// Batches not yet acked, oldest first.
    live: VecDeque<Entry>,
}

/// What opening a spool found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub batches: u64,
    pub events: u64,
    /// Bytes cut off the end of segments (records torn by a crash).
    pub torn_bytes: u64,
}

/// What appending did besides appending.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Appended {
    /// Events of older batches dropped to make room.
    pub dropped_events: u64,
}

#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    segment_bytes: u64,
    /// Oldest first; the last one is where appends go while `writer` is open.
    segments: VecDeque<Segment>,
    writer: Option<File>,
    next_seq: u64,
    disk_bytes: u64,
    events: u64,
}

impl Spool {
    /// Opens (creating it if needed) the spool in `dir`, bounded to `max_bytes` on disk.
    pub fn open(dir: &Path, max_bytes: u64) -> io::Result<(Spool, Recovered)> {
        fs::create_dir_all(dir)?;
        let cursor = read_cursor(dir);
        let mut seqs: Vec<u64> = Vec::new();
        for entry in fs::read_dir(dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if let Some(seq) = name
                .strip_suffix(".seg")
                .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            {
                seqs.push(seq);
            }
        }
        seqs.sort_unstable();
        let mut spool = Spool {
            dir: dir.to_path_buf(),
            max_bytes,
            segment_bytes: (max_bytes / 8).clamp(4096, 16 << 20),
            segments: VecDeque::new(),
            writer: None,
            next_seq: seqs.last().map_or(1, |s| s + 1),
            disk_bytes: 0,
            events: 0,
        };
        let mut recovered = Recovered::default();
        for seq in seqs {
            let path = spool.path(seq);
            let (acked_seq, acked_offset) = cursor;
            if seq < acked_seq {
                remove(&path)?;
                continue;
            }
            let bytes = fs::read(&path)?;
            let mut at = 0u64;
            let mut live = VecDeque::new();
            while let Some((len, events, _)) = parse_record(&bytes[at as usize..]) {
                if !(seq == acked_seq && at < acked_offset) {
                    live.push_back(Entry {
                        offset: at,
                        len,
                        events,
                    });
                }
                at += len;
            }
            if at < bytes.len() as u64 {
                recovered.torn_bytes += bytes.len() as u64 - at;
                OpenOptions::new().write(true).open(&path)?.set_len(at)?;
            }
            if live.is_empty() {
                remove(&path)?;
                continue;
            }
            recovered.batches += live.len() as u64;
            let events: u64 = live.iter().map(|e| u64::from(e.events)).sum();
            recovered.events += events;
            spool.events += events;
            spool.disk_bytes += at;
            spool.segments.push_back(Segment {
                seq,
                size: at,
                live,
            });
        }
        Ok((spool, recovered))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Events in batches not yet acked.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes of segment files on disk (acked records included until their segment goes).
    pub fn disk_bytes(&self) -> u64 {
        self.disk_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.segments.iter().all(|s| s.live.is_empty())
    }

    /// Appends a batch at the end, dropping the oldest segments first if it would not fit.
    /// Call [`Spool::sync`] after a run of appends.
    pub fn append(&mut self, chunk: ChunkId, events: u32, message: &[u8]) -> io::Result<Appended> {
        let len = message.len() as u64 + RECORD_OVERHEAD;
        if len > self.max_bytes || message.len() > u32::MAX as usize {
            return Err(io::Error::other(format!(
                "a batch of {} bytes does not fit in a spool of {} bytes",
                message.len(),
                self.max_bytes
            )));
        }
        let mut appended = Appended::default();
        while self.disk_bytes + len > self.max_bytes {
            let Some(oldest) = self.segments.pop_front() else {
                break;
            };
            if self.segments.is_empty() {
                self.writer = None;
            }
            appended.dropped_events += oldest.live.iter().map(|e| u64::from(e.events)).sum::<u64>();
            self.forget(&oldest);
        }
        let roll = match self.segments.back() {
            Some(last) => {
                self.writer.is_none() || (last.size > 0 && last.size + len > self.segment_bytes)
            }
            None => true,
        };
        if roll {
            let seq = self.next_seq;
            self.next_seq += 1;
            let file = OpenOptions::new()
                .create_new(true)
                .append(true)
                .open(self.path(seq))?;
            self.writer = Some(file);
            self.segments.push_back(Segment {
                seq,
                size: 0,
                live: VecDeque::new(),
            });
        }
        let record = record(chunk, events, message);
        let (Some(writer), Some(segment)) = (self.writer.as_mut(), self.segments.back_mut()) else {
            return Err(io::Error::other("spool: no segment open for appending"));
        };
        if let Err(e) = writer.write_all(&record) {
            // Leave no torn record behind: the next append goes after the last whole one.
            let _ = writer.set_len(segment.size);
            return Err(e);
        }
        segment.live.push_back(Entry {
            offset: segment.size,
            len,
            events,
        });
        segment.size += len;
        self.disk_bytes += len;
        self.events += u64::from(events);
        Ok(appended)
    }

    /// Makes the appended records durable (they survive a power cut, not just a restart).
    pub fn sync(&mut self) -> io::Result<()> {
        match &self.writer {
            Some(w) => w.sync_data(),
            None => Ok(()),
        }
    }

    /// The oldest batch not yet acked.
    pub fn head(&self) -> Option<BatchId> {
        let s = self.segments.iter().find(|s| !s.live.is_empty())?;
        Some(BatchId {
            segment: s.seq,
            offset: s.live.front()?.offset,
        })
    }

    /// Reads the oldest batch. An error means the record cannot be read back (disk error,
    /// damaged after opening); [`Spool::drop_head`] removes it.
    pub fn read_head(&self) -> Option<io::Result<Batch>> {
        let s = self.segments.iter().find(|s| !s.live.is_empty())?;
        let e = *s.live.front()?;
        Some(self.read(s.seq, e))
    }

    fn read(&self, seq: u64, e: Entry) -> io::Result<Batch> {
        let mut bytes = vec![0u8; e.len as usize];
        File::open(self.path(seq))?.read_exact_at(&mut bytes, e.offset)?;
        let (len, events, chunk) = parse_record(&bytes).ok_or_else(|| {
            io::Error::other(format!(
                "spool segment {:016x} is damaged at byte {}",
                seq, e.offset
            ))
        })?;
        if len != e.len {
            return Err(io::Error::other(format!(
                "spool segment {seq:016x} changed under the agent at byte {}",
                e.offset
            )));
        }
        bytes.truncate(HEADER + (len as usize - HEADER - TRAILER));
        bytes.drain(..HEADER);
        Ok(Batch {
            id: BatchId {
                segment: seq,
                offset: e.offset,
            },
            chunk,
            events,
            message: bytes,
        })
    }

    /// Removes batch `id` after its ack and returns its event count; `None` if it is no longer
    /// the oldest (dropped meanwhile to make room).
    pub fn ack(&mut self, id: BatchId) -> Option<u32> {
        (self.head() == Some(id)).then(|| self.drop_head())
    }

    /// Removes the oldest batch, acked or unreadable, and returns its event count.
    ///
    /// File errors here are not reported: a segment that could not be deleted is deleted
    /// when the spool is next opened (the cursor is past it), and a cursor that could not be
    /// written only means acked batches are sent again after a restart, which at-least-once
    /// delivery allows.
    pub fn drop_head(&mut self) -> u32 {
        let Some(i) = self.segments.iter().position(|s| !s.live.is_empty()) else {
            return 0;
        };
        let s = &mut self.segments[i];
        let Some(e) = s.live.pop_front() else {
            return 0;
        };
        self.events -= u64::from(e.events);
        if s.live.is_empty() {
            // Everything up to here is acked: the files go, the segment being appended to
            // too (the next append opens a new one).
            for _ in 0..=i {
                if let Some(old) = self.segments.pop_front() {
                    self.forget(&old);
                }
            }
            if self.segments.is_empty() {
                self.writer = None;
            }
            let head = self.segments.front().map_or(self.next_seq, |s| s.seq);
            let _ = write_cursor(&self.dir, head, 0);
        } else {
            let _ = write_cursor(&self.dir, s.seq, e.offset + e.len);
        }
        e.events
    }

    fn forget(&mut self, segment: &Segment) {
        self.disk_bytes -= segment.size;
        self.events -= segment
            .live
            .iter()
            .map(|e| u64::from(e.events))
            .sum::<u64>();
        let _ = fs::remove_file(self.path(segment.seq));
    }

    fn path(&self, seq: u64) -> PathBuf {
        self.dir.join(format!("{seq:016x}.seg"))
    }
}

fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn record(chunk: ChunkId, events: u32, message: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(message.len() + HEADER + TRAILER);
    r.extend_from_slice(MAGIC);
    r.extend_from_slice(&(message.len() as u32).to_be_bytes());
    r.extend_from_slice(&events.to_be_bytes());
    r.extend_from_slice(&chunk.0);
    r.extend_from_slice(message);
    let sum = fnv1a(&r[4..]);
    r.extend_from_slice(&sum.to_be_bytes());
    r
}

/// The record at the start of `bytes`: its length, events and chunk id; `None` if there is
/// no whole, intact record there.
fn parse_record(bytes: &[u8]) -> Option<(u64, u32, ChunkId)> {
    let header = bytes.get(..HEADER)?;
    if &header[..4] != MAGIC {
        return None;
    }
    let n = u32::from_be_bytes(header[4..8].try_into().ok()?) as usize;
    let events = u32::from_be_bytes(header[8..12].try_into().ok()?);
    let chunk = ChunkId(header[12..28].try_into().ok()?);
    let body_end = HEADER.checked_add(n)?;
    let sum = bytes.get(body_end..body_end + TRAILER)?;
    (fnv1a(&bytes[4..body_end]).to_be_bytes() == sum).then_some((
        (body_end + TRAILER) as u64,
        events,
        chunk,
    ))
}

/// FNV-1a, 64 bits: enough to tell a torn or damaged record from a whole one (this guards
/// against crashes, not against anyone who can write the spool directory).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn read_cursor(dir: &Path) -> (u64, u64) {
    let text = fs::read_to_string(dir.join(CURSOR)).unwrap_or_default();
    let mut parts = text.split_whitespace().map(|p| p.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(seq), Some(offset)) => (seq, offset),
        _ => (0, 0),
    }
}

fn write_cursor(dir: &Path, seq: u64, offset: u64) -> io::Result<()> {
    let tmp = dir.join("cursor.tmp");
    fs::write(&tmp, format!("{seq} {offset}\n"))?;
    fs::rename(tmp, dir.join(CURSOR))
}
