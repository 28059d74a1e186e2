//! The framing against hand-made bytes, hostile input, and itself (property tests).

use super::decode::{self, client_message, server_message};
use super::encode::{self, Compression, Entries};
use super::handshake::{self, Helo, Ping, Pong};
use super::*;
use proptest::prelude::*;
use zpulse_proto::event::{Event, EventTime, Severity, State, Value};

fn finding(n: u64) -> Event {
    Event::finding(
        "hdd-saturation",
        State::Raised,
        Severity::Warning,
        format!("tank/mirror-0/sd{n}"),
        "busy 97% of the interval",
    )
    .with("util_pct", 97.5)
    .with("n", n)
}

const T: EventTime = EventTime {
    seconds: 0x6543_2100,
    nanos: 5,
};

/// Every message the stream holds, decoded as a server would.
fn client_messages(stream: &[u8]) -> Vec<Result<ClientMessage, FrameError>> {
    let mut d = FrameDecoder::new(Limits::default());
    d.feed(stream);
    let mut out = Vec::new();
    loop {
        match d.next_client() {
            Ok(Some(m)) => out.push(Ok(m)),
            Ok(None) => break,
            Err(e) => {
                let fatal = !matches!(e, FrameError::Invalid { .. }) || d.next_frame().is_err();
                out.push(Err(e));
                if fatal {
                    break;
                }
            }
        }
    }
    out
}

fn one_batch(stream: &[u8]) -> EventBatch {
    match client_messages(stream).as_slice() {
        [Ok(ClientMessage::Events(b))] => b.clone(),
        other => panic!("expected one batch, got {other:?}"),
    }
}

#[test]
fn an_entry_is_a_fixext8_time_and_the_record() {
    let record = finding(1).to_msgpack();
    let mut out = Vec::new();
    encode::entry(&mut out, T, &record);
    assert_eq!(
        &out[..10],
        [0x92, 0xd7, 0x00, 0x65, 0x43, 0x21, 0x00, 0x00, 0x00, 0x00]
    );
    assert_eq!(out[10], 0x05);
    assert_eq!(&out[11..], record);
}

#[test]
fn packed_forward_layout_and_round_trip() {
    let mut entries = Entries::new();
    for n in 0..3 {
        entries.push_event(T, &finding(n));
    }
    let chunk = ChunkId([7; 16]).to_base64();
    let msg = entries.packed_forward("zpulse.finding", Some(&chunk), Compression::None);
    // [tag, bin, {size, chunk}]: fixarray 3, fixstr tag, bin8/16 blob.
    assert_eq!(msg[0], 0x93);
    assert_eq!(msg[1], 0xa0 | 14);
    assert_eq!(&msg[2..16], b"zpulse.finding");
    assert!(matches!(msg[16], 0xc4..=0xc6));
    let b = one_batch(&msg);
    assert_eq!(b.tag, "zpulse.finding");
    assert_eq!(b.mode, Mode::PackedForward);
    assert_eq!(b.options.size, Some(3));
    assert_eq!(b.options.chunk.as_deref(), Some(chunk.as_str()));
    assert_eq!(b.options.compressed, None);
    assert_eq!(b.entries.len(), 3);
    for (n, e) in b.entries.iter().enumerate() {
        assert_eq!(e.time, T);
        assert_eq!(e.event().unwrap(), finding(n as u64));
    }
    // No chunk: no ack asked for, and the option map holds only the size.
    let msg = entries.packed_forward("zpulse.finding", None, Compression::None);
    assert_eq!(one_batch(&msg).options.chunk, None);
}

#[test]
fn gzip_mode_with_one_or_several_members() {
    let mut entries = Entries::new();
    for n in 0..50 {
        entries.push_event(T, &finding(n));
    }
    let msg = entries.packed_forward("zpulse.finding", Some("c"), Compression::Gzip);
    assert!(
        msg.len() < entries.as_bytes().len() / 2,
        "gzip should shrink 50 alike events"
    );
    let b = one_batch(&msg);
    assert_eq!(b.mode, Mode::CompressedPackedForward);
    assert_eq!(b.options.compressed.as_deref(), Some("gzip"));
    assert_eq!(b.entries.len(), 50);

    // Two gzip members back to back (a sender that compresses as it appends).
    let bytes = entries.as_bytes();
    let mut first = Entries::new();
    first.push_event(T, &finding(0));
    let split = first.as_bytes().len();
    let mut blob = encode::gzip(&bytes[..split]).unwrap();
    blob.extend(encode::gzip(&bytes[split..]).unwrap());
    let mut msg = vec![0x93];
    super::msgpack::write_str(&mut msg, "t");
    super::msgpack::write_bin(&mut msg, &blob);
    msg.extend_from_slice(b"\x81\xaacompressed\xa4gzip");
    let b = one_batch(&msg);
    assert_eq!(b.entries.len(), 50);
    assert_eq!(b.entries[49].event().unwrap(), finding(49));
}

#[test]
fn every_mode_and_time_spelling_is_read() {
    let record = finding(1).to_msgpack();
    // Message mode, with and without options.
    let b = one_batch(&encode::message("a.b", T, &record, Some("x")));
    assert_eq!((b.mode, b.entries.len()), (Mode::Message, 1));
    assert_eq!(b.options.chunk.as_deref(), Some("x"));
    let b = one_batch(&encode::message("a.b", T, &record, None));
    assert_eq!(b.entries[0].record, record);
    // Forward mode.
    let b = one_batch(&encode::forward(
        "a.b",
        &[(T, &record), (T, &record)],
        Some("y"),
    ));
    assert_eq!((b.mode, b.entries.len()), (Mode::Forward, 2));
    assert_eq!(b.options.size, Some(2));
    // PackedForward in a str (old Fluentd), without options.
    let mut entries = Entries::new();
    entries.push(T, &record);
    let mut msg = vec![0x92, 0xa1, b't'];
    super::msgpack::write_str_bytes(&mut msg, entries.as_bytes());
    assert_eq!(one_batch(&msg).mode, Mode::PackedForward);
    // Integer seconds; ext8 spelling of EventTime; v1.5 metadata entries.
    let mut msg = vec![0x93, 0xa1, b't', 0xce, 0x65, 0x43, 0x21, 0x00];
    msg.extend_from_slice(&record);
    assert_eq!(
        one_batch(&msg).entries[0].time,
        EventTime {
            seconds: 0x6543_2100,
            nanos: 0
        }
    );
    let mut msg = vec![0x93, 0xa1, b't', 0xc7, 0x08, 0x00];
    msg.extend_from_slice(&T.to_be_bytes());
    msg.extend_from_slice(&record);
    assert_eq!(one_batch(&msg).entries[0].time, T);
    let mut msg = vec![0x92, 0xa1, b't', 0x91, 0x92, 0x92, 0xd7, 0x00];
    msg.extend_from_slice(&T.to_be_bytes());
    msg.extend_from_slice(b"\x81\xa1k\x01");
    msg.extend_from_slice(&record);
    let b = one_batch(&msg);
    assert_eq!((b.mode, b.entries[0].time), (Mode::Forward, T));
    // Unknown option keys are skipped, even nested ones; "text" means not compressed.
    let mut msg = vec![0x93, 0xa1, b't'];
    super::msgpack::write_bin(&mut msg, entries.as_bytes());
    msg.extend_from_slice(b"\x83\xa5extra\x91\x81\x01\x02\xa5chunk\xa1z\xaacompressed\xa4text");
    let b = one_batch(&msg);
    assert_eq!(
        (b.mode, b.options.chunk.as_deref()),
        (Mode::PackedForward, Some("z"))
    );
}

#[test]
fn bad_messages_say_why() {
    let record = finding(1).to_msgpack();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![0x2a], "array or nil"),
        (vec![0x90], "empty array"),
        (b"\x92\xa0\x90".to_vec(), "tag: empty"),
        (b"\x92\x01\x90".to_vec(), "tag: expected a str"),
        (
            [
                &b"\x93\xa1t\xcb\x41\xd9\x50\xc8\x40\x00\x00\x00"[..],
                &record,
            ]
            .concat(),
            "float",
        ),
        (
            [&b"\x93\xa1t\xd7\x05"[..], &[0; 8], &record].concat(),
            "ext type 5",
        ),
        (
            [&b"\x93\xa1t\xd7\x00\0\0\0\0\xff\xff\xff\xff"[..], &record].concat(),
            "nanoseconds",
        ),
        (b"\x93\xa1t\x01\x90".to_vec(), "record: expected a map"),
        (b"\x92\xa1t\x91\x93\x01\x80\x80".to_vec(), "an array of 3"),
        (
            b"\x93\xa1t\xc4\x00\x81\xaacompressed\xa4zstd".to_vec(),
            "zstd",
        ),
        (
            b"\x93\xa1t\xc4\x03abc\x81\xaacompressed\xa4gzip".to_vec(),
            "gzip",
        ),
        (b"\x93\xa1t\xc4\x01\x01\x80".to_vec(), "an entry is"),
        (b"\x93\xa1t\xc4\x01\x92\x80".to_vec(), "cut short"),
        (
            b"\x93\xa1t\xc4\x00\x81\xa4size\xa1x".to_vec(),
            "options.size",
        ),
        (b"\x93\xa1t\xc4\x00\x01".to_vec(), "options: expected a map"),
        (
            b"\x95\xa1t\xc4\x00\xc0\xc0\xc0".to_vec(),
            "PackedForward mode has",
        ),
        (b"\x92\xa1t\xc0".to_vec(), "second element is nil"),
    ];
    for (bytes, why) in cases {
        let got = client_messages(&bytes);
        let msg = match got.as_slice() {
            [Err(e)] => e.to_string(),
            other => panic!("{bytes:x?}: expected an error with {why:?}, got {other:?}"),
        };
        assert!(
            msg.contains(why),
            "{bytes:x?}: {msg:?} should mention {why:?}"
        );
    }
}

#[test]
fn a_keepalive_is_a_lone_nil_between_batches() {
    let mut entries = Entries::new();
    entries.push_event(T, &finding(1));
    let msg = entries.packed_forward("t", Some("c"), Compression::None);
    let stream = [&[0xc0][..], &msg, &[0xc0], &msg].concat();
    let got = client_messages(&stream);
    assert_eq!(got.len(), 4);
    assert_eq!(got[0], Ok(ClientMessage::KeepAlive));
    assert!(matches!(got[3], Ok(ClientMessage::Events(_))));
}

#[test]
fn partial_values_wait_for_more_bytes() {
    let mut entries = Entries::new();
    for n in 0..20 {
        entries.push_event(T, &finding(n));
    }
    let msg = entries.packed_forward("zpulse.finding", Some("c"), Compression::Gzip);
    let stream = [&msg[..], &encode::ack("c"), &msg].concat();
    let mut d = FrameDecoder::new(Limits::default());
    let mut frames = Vec::new();
    for &b in &stream {
        d.feed(&[b]);
        while let Some(f) = d.next_frame().unwrap() {
            frames.push(f.to_vec());
        }
    }
    assert_eq!(frames, [msg.clone(), encode::ack("c"), msg]);
    assert_eq!(d.buffered(), 0);
}

#[test]
fn limits_refuse_big_deep_and_inflating_values() {
    let limits = Limits {
        max_frame_bytes: 1000,
        max_depth: 8,
        max_inflated_bytes: 10_000,
        max_entries: 100,
    };
    // A bin32 header announcing 1 GiB: refused at once, without waiting for the bytes.
    let mut d = FrameDecoder::new(limits);
    d.feed(&[0x92, 0xa1, b't', 0xc6, 0x40, 0, 0, 0]);
    assert_eq!(d.next_frame(), Err(FrameError::TooLarge { limit: 1000 }));
    // And the stream stays failed: there is no next value to find.
    d.feed(&[0xc0]);
    assert_eq!(d.next_frame(), Err(FrameError::TooLarge { limit: 1000 }));
    // Many small elements add up too.
    let mut d = FrameDecoder::new(limits);
    d.feed(&[0xdd, 0, 1, 0, 0]);
    d.feed(&[0x01; 999]);
    assert_eq!(d.next_frame(), Err(FrameError::TooLarge { limit: 1000 }));
    // Nesting.
    let mut d = FrameDecoder::new(limits);
    d.feed(&[0x91; 9]);
    assert_eq!(d.next_frame(), Err(FrameError::TooDeep { limit: 8 }));
    let mut d = FrameDecoder::new(limits);
    d.feed(&[0x91; 8]);
    d.feed(&[0xc0]);
    assert!(d.next_frame().unwrap().is_some());
    // A gzip bomb: 1 MB of zeros in a few hundred bytes.
    let mut zeros = Entries::new();
    let big_record = [&b"\x81\xa1k\xc6\x00\x10\x00\x00"[..], &vec![0u8; 1 << 20]].concat();
    zeros.push(T, &big_record);
    let msg = zeros.packed_forward("t", None, Compression::Gzip);
    assert!(msg.len() < 5000, "{}", msg.len());
    let mut d = FrameDecoder::new(Limits {
        max_frame_bytes: 5000,
        ..limits
    });
    d.feed(&msg);
    assert_eq!(d.next_client(), Err(FrameError::TooLarge { limit: 10_000 }));
}

/// A decompression bomb: a gzip blob of ~65 KB inflating to ~2 million entries `[t, {}]`
/// (each 11 bytes on the wire, a decoded `Entry` and its record allocation each).
#[test]
fn a_gzip_blob_of_millions_of_tiny_entries_is_refused_by_count() {
    let mut tiny = Entries::new();
    for _ in 0..2_000_000 {
        tiny.push(T, &[0x80]);
    }
    assert_eq!(tiny.as_bytes().len(), 2_000_000 * 12);
    let msg = tiny.packed_forward("t", None, Compression::Gzip);
    assert!(msg.len() < 128 << 10, "{}", msg.len());
    let limits = Limits {
        max_frame_bytes: 1 << 20,
        max_depth: 8,
        max_inflated_bytes: 32 << 20,
        max_entries: 10_000,
    };
    assert!(decode::is_compressed(&msg, &limits));
    let mut d = FrameDecoder::new(limits);
    d.feed(&msg);
    assert_eq!(
        d.next_client(),
        Err(FrameError::TooManyEntries { limit: 10_000 })
    );
    // Refused while inflating, after the first 10,000 entries: the other 23 MB are never
    // inflated, so the message costs what a legal one costs. (With the count limit lifted,
    // the same blob decodes to all its entries: the count is what stops it.)
    let all = decode::client_message(
        &msg,
        &Limits {
            max_entries: 2_000_000,
            ..limits
        },
    );
    match all {
        Ok(ClientMessage::Events(b)) => assert_eq!(b.entries.len(), 2_000_000),
        other => panic!("{:?}", other.map(|_| ())),
    }
    // The same count in Forward mode is refused from the array header alone, before any
    // entry is decoded: 0xdd announces 2^31 entries in 5 bytes.
    let mut d = FrameDecoder::new(limits);
    let mut header = vec![0x92, 0xa1, b't', 0xdd, 0x80, 0, 0, 0];
    header.extend_from_slice(&[0x00; 16]);
    assert_eq!(
        decode::client_message(&header, &limits),
        Err(FrameError::TooManyEntries { limit: 10_000 })
    );
    // Exactly the limit passes.
    let mut ok = Entries::new();
    for _ in 0..10_000 {
        ok.push(T, &[0x80]);
    }
    let ok_msg = ok.packed_forward("t", None, Compression::Gzip);
    assert!(!decode::is_compressed(
        &ok.packed_forward("t", None, Compression::None),
        &limits
    ));
    d.feed(&ok_msg);
    match d.next_client() {
        Ok(Some(ClientMessage::Events(b))) => assert_eq!(b.entries.len(), 10_000),
        other => panic!("{other:?}"),
    }
}

#[test]
fn acks_and_handshake_messages_round_trip() {
    let limits = Limits::for_replies();
    let chunk = ChunkId([0xab; 16]).to_base64();
    assert_eq!(
        server_message(&encode::ack(&chunk), &limits),
        Ok(ServerMessage::Ack(chunk.clone()))
    );
    // Other keys in the ack map are ignored; a map without ack is an error.
    assert_eq!(
        server_message(b"\x82\x01\x02\xa3ack\xa1c", &limits),
        Ok(ServerMessage::Ack("c".into()))
    );
    assert!(server_message(b"\x81\xa1x\xa1c", &limits).is_err());

    let helo = Helo {
        nonce: b"nonce".to_vec(),
        auth: Vec::new(),
        keepalive: true,
    };
    assert_eq!(
        server_message(&helo.encode(), &limits),
        Ok(ServerMessage::Helo(helo.clone()))
    );
    // A HELO with a str nonce and only the nonce (older servers).
    let got = server_message(b"\x92\xa4HELO\x81\xa5nonce\xa5nonce", &limits).unwrap();
    assert_eq!(got, ServerMessage::Helo(helo.clone()));

    let ping = Ping::answer(&helo, "client", "salt", "key", None);
    assert_eq!(
        ping.shared_key_digest,
        "3e248aa088bb87580dd4d9dadb22c4a0335df68b0741d007d17ec8005aeb9998e843e2a85c37bd98d796ff5e2bd5e616e2c5fa1c72deb0a074e05ece1705ecba"
    );
    // The salt travels as a str.
    let bytes = ping.encode();
    assert!(bytes.windows(5).any(|w| w == b"\xa4salt"));
    assert_eq!(
        client_message(&bytes, &Limits::default()),
        Ok(ClientMessage::Ping(ping.clone()))
    );

    let pong = ping.check(&helo, "server", "key", &|_| None);
    assert!(pong.ok, "{pong:?}");
    assert_eq!(
        server_message(&pong.encode(), &limits),
        Ok(ServerMessage::Pong(pong.clone()))
    );
    assert_eq!(pong.verify(&ping, &helo, "key"), Ok(()));
}

#[test]
fn the_handshake_checks_both_ways() {
    let helo = Helo {
        nonce: vec![1, 2, 3],
        auth: Vec::new(),
        keepalive: true,
    };
    let no_users = |_: &str| None;
    // The server refuses a wrong key and the same hostname.
    let ping = Ping::answer(&helo, "client", "salt", "wrong", None);
    let pong = ping.check(&helo, "server", "key", &no_users);
    assert_eq!(
        (pong.ok, pong.reason.as_str()),
        (false, "shared key mismatch")
    );
    assert!(
        pong.verify(&ping, &helo, "wrong")
            .unwrap_err()
            .contains("refused")
    );
    let ping = Ping::answer(&helo, "server", "salt", "key", None);
    assert!(
        ping.check(&helo, "server", "key", &no_users)
            .reason
            .contains("same hostname")
    );

    // The client refuses a PONG that says yes without knowing the key.
    let ping = Ping::answer(&helo, "client", "salt", "key", None);
    let forged = Pong {
        ok: true,
        reason: String::new(),
        hostname: "server".into(),
        shared_key_digest: handshake::shared_key_digest(b"salt", "server", &[1, 2, 3], "guess"),
    };
    assert!(
        forged
            .verify(&ping, &helo, "key")
            .unwrap_err()
            .contains("does not match")
    );
    // Nor one computed for another nonce (a replayed PONG).
    let replayed = Pong {
        shared_key_digest: handshake::shared_key_digest(b"salt", "server", &[9], "key"),
        ..forged.clone()
    };
    assert!(replayed.verify(&ping, &helo, "key").is_err());
    let same_host = Pong {
        hostname: "client".into(),
        ..forged
    };
    assert!(
        same_host
            .verify(&ping, &helo, "key")
            .unwrap_err()
            .contains("self_hostname")
    );

    // User authentication.
    let helo = Helo {
        auth: b"authsalt".to_vec(),
        ..helo
    };
    assert!(helo.requires_user());
    assert_eq!(
        handshake::password_digest(b"authsalt", "user", "pw"),
        "33278d8eb11bd6d49ffb571b4f5a589118476da6157aa63b6400511f6995a329e4afa4fda76b71d718316aed63dc310f8434ee0fa481bc247dd8758001e48118"
    );
    let users = |u: &str| (u == "user").then(|| "pw".to_string());
    let ping = Ping::answer(&helo, "client", "s", "key", Some(("user", "pw")));
    assert!(ping.check(&helo, "server", "key", &users).ok);
    let ping = Ping::answer(&helo, "client", "s", "key", Some(("user", "bad")));
    assert!(!ping.check(&helo, "server", "key", &users).ok);
    let ping = Ping::answer(&helo, "client", "s", "key", None);
    assert!(!ping.check(&helo, "server", "key", &users).ok);
}

#[test]
fn chunk_ids_are_strict_base64() {
    let id = ChunkId([0xfb; 16]);
    let text = id.to_base64();
    assert_eq!(text.len(), 24);
    assert!(text.ends_with("=="));
    assert_eq!(ChunkId::from_base64(&text), Some(id));
    assert_eq!(ChunkId::from_base64(&format!("{text}\n")), None);
    assert_eq!(ChunkId::from_base64(&text[..22]), None);
    assert_eq!(ChunkId::from_base64("AAAA"), None);
    assert_eq!(handshake::salt_text([0xa5; 16]), "a5".repeat(16));
}

fn arb_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::UInt),
        (i64::MIN..0).prop_map(Value::Int),
        (-1e12f64..1e12).prop_map(Value::Float),
        "[a-z ]{0,40}".prop_map(Value::Str),
    ]
}

fn arb_event() -> impl Strategy<Value = Event> {
    (
        "[a-z0-9/-]{1,40}",
        "\\PC{1,80}",
        proptest::collection::btree_map("[a-z_]{1,12}", arb_value(), 0..8),
    )
        .prop_map(|(subject, summary, data)| {
            let mut e = Event::metrics("prop", subject, summary);
            e.data = data;
            e
        })
}

fn arb_time() -> impl Strategy<Value = EventTime> {
    (any::<u32>(), 0u32..1_000_000_000).prop_map(|(seconds, nanos)| EventTime { seconds, nanos })
}

/// Splits `bytes` at the given (sorted, deduplicated) points.
fn split<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut at = 0;
    for p in points {
        out.push(&bytes[at..p]);
        at = p;
    }
    out.push(&bytes[at..]);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn batches_round_trip_however_the_stream_is_cut(
        batches in proptest::collection::vec(
            ("[a-z]{1,8}(\\.[a-z]{1,8}){0,2}",
             proptest::collection::vec((arb_time(), arb_event()), 1..6),
             any::<[u8; 16]>(),
             any::<bool>()),
            1..4),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut stream = Vec::new();
        for (tag, events, chunk, gzip) in &batches {
            let mut entries = Entries::new();
            for (t, e) in events {
                entries.push_event(*t, e);
            }
            let compression = if *gzip { Compression::Gzip } else { Compression::None };
            stream.extend(entries.packed_forward(tag, Some(&ChunkId(*chunk).to_base64()), compression));
        }
        let mut d = FrameDecoder::new(Limits::default());
        let mut got = Vec::new();
        for piece in split(&stream, &cuts) {
            d.feed(piece);
            while let Some(m) = d.next_client().unwrap() {
                got.push(m);
            }
        }
        prop_assert_eq!(got.len(), batches.len());
        for (m, (tag, events, chunk, gzip)) in got.iter().zip(&batches) {
            let ClientMessage::Events(b) = m else { panic!("{m:?}") };
            prop_assert_eq!(&b.tag, tag);
            prop_assert_eq!(b.mode, if *gzip { Mode::CompressedPackedForward } else { Mode::PackedForward });
            let expected_chunk = ChunkId(*chunk).to_base64();
            prop_assert_eq!(b.options.chunk.as_deref(), Some(expected_chunk.as_str()));
            prop_assert_eq!(b.options.size, Some(events.len() as u64));
            prop_assert_eq!(b.entries.len(), events.len());
            for (entry, (t, e)) in b.entries.iter().zip(events) {
                prop_assert_eq!(entry.time, *t);
                prop_assert_eq!(&entry.record, &e.to_msgpack());
                prop_assert_eq!(&entry.event().unwrap(), e);
            }
        }
    }

    #[test]
    fn random_bytes_never_panic_and_cutting_changes_nothing(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let limits = Limits { max_frame_bytes: 400, max_depth: 6, max_inflated_bytes: 4096, max_entries: 64 };
        let whole = decode_all(&[&bytes[..]], limits);
        let pieces = decode_all(&split(&bytes, &cuts), limits);
        prop_assert_eq!(whole, pieces);
        let _ = decode::entries(&bytes, &limits);
        let _ = decode::inflate(&bytes, 4096);
    }

    #[test]
    fn mutated_messages_never_panic(
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        gzip in any::<bool>(),
    ) {
        let mut entries = Entries::new();
        entries.push_event(T, &finding(1));
        entries.push_event(T, &finding(2));
        let compression = if gzip { Compression::Gzip } else { Compression::None };
        let mut msg = entries.packed_forward("zpulse.finding", Some("c"), compression);
        for (at, b) in flips {
            let n = msg.len();
            msg[at % n] = b;
        }
        let _ = client_messages(&msg);
        let _ = server_message(&msg, &Limits::default());
    }
}

/// What a peer would see: each client and server reading of each frame, until the first
/// stream error.
fn decode_all(pieces: &[&[u8]], limits: Limits) -> Vec<String> {
    let mut d = FrameDecoder::new(limits);
    let mut out = Vec::new();
    for piece in pieces {
        d.feed(piece);
        loop {
            match d.next_frame() {
                Ok(Some(frame)) => {
                    let frame = frame.to_vec();
                    out.push(format!(
                        "{:?} / {:?}",
                        client_message(&frame, &limits),
                        server_message(&frame, &limits)
                    ));
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
