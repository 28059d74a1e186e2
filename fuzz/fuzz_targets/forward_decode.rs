//! Fuzz target for the Forward stream decoder (`zpulse_forward`): what a collector
//! reads from any client, and what the agent reads from any server.
//!
//! The first input byte chooses where the rest is cut into reads. Beyond "never panics,
//! never allocates unboundedly" (the sanitizer and `-malloc_limit_mb` watch those), oracles:
//! * cutting the stream differently changes nothing: every frame and error is the same;
//! * whatever decodes is encoded again (events as PackedForward, handshake messages and acks
//!   by their encoders) and decodes to the same value.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zpulse_forward::decode::{client_message, server_message};
use zpulse_forward::{
    ClientMessage, Compression, Entries, FrameDecoder, Limits, ServerMessage, encode,
};

const LIMITS: Limits = Limits {
    max_frame_bytes: 64 << 10,
    max_depth: 16,
    max_inflated_bytes: 1 << 20,
    max_entries: 4096,
};

/// Every frame of the stream read as both sides would, until the first stream error.
fn decode(pieces: &[&[u8]]) -> Vec<String> {
    let mut d = FrameDecoder::new(LIMITS);
    let mut out = Vec::new();
    for piece in pieces {
        d.feed(piece);
        loop {
            match d.next_frame() {
                Ok(Some(frame)) => {
                    let frame = frame.to_vec();
                    let client = client_message(&frame, &LIMITS);
                    let server = server_message(&frame, &LIMITS);
                    if let Ok(m) = &client {
                        client_round_trip(m);
                    }
                    if let Ok(m) = &server {
                        server_round_trip(m);
                    }
                    out.push(format!("{client:?} / {server:?}"));
                }
                Ok(None) => break,
                Err(e) => {
                    out.push(format!("stream: {e}"));
                    return out;
                }
            }
        }
    }
    out
}

fn client_round_trip(m: &ClientMessage) {
    let again = match m {
        ClientMessage::KeepAlive => return,
        ClientMessage::Ping(p) => p.encode(),
        ClientMessage::Events(b) => {
            let mut entries = Entries::new();
            for e in &b.entries {
                entries.push(e.time, &e.record);
            }
            let packed =
                entries.packed_forward(&b.tag, b.options.chunk.as_deref(), Compression::None);
            let limits = Limits {
                max_frame_bytes: usize::MAX,
                max_inflated_bytes: usize::MAX,
                max_entries: usize::MAX,
                ..LIMITS
            };
            match client_message(&packed, &limits) {
                Ok(ClientMessage::Events(c)) => {
                    assert_eq!(c.tag, b.tag);
                    assert_eq!(c.entries, b.entries);
                    assert_eq!(c.options.chunk, b.options.chunk);
                    assert_eq!(c.options.size, Some(b.entries.len() as u64));
                }
                other => panic!("re-encoded batch decodes as {other:?}"),
            }
            return;
        }
    };
    assert_eq!(client_message(&again, &LIMITS).as_ref(), Ok(m));
}

fn server_round_trip(m: &ServerMessage) {
    let again = match m {
        ServerMessage::Helo(h) => h.encode(),
        ServerMessage::Pong(p) => p.encode(),
        ServerMessage::Ack(a) => encode::ack(a),
    };
    assert_eq!(server_message(&again, &LIMITS).as_ref(), Ok(m));
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let whole = decode(&[stream]);
    let step = usize::from(step % 64) + 1;
    let pieces: Vec<&[u8]> = stream.chunks(step).collect();
    assert_eq!(
        decode(&pieces),
        whole,
        "cutting the stream changed what it says"
    );
});
