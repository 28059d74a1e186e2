//! Property tests of the collector's frame handling: however a stream is cut into reads it is
//! stored and acked in order; arbitrary bytes never take the server down; arbitrary records
//! are stored (as foreign) without panicking.

mod common;

use common::*;
use proptest::prelude::*;
use std::io::Write;
use std::time::Duration;
use zpulse_collector::store::{Row, Store};
use zpulse_forward::{Compression, Entries, Entry, encode};
use zpulse_proto::event::EventTime;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_cut_of_a_stream_is_stored_and_acked_in_order(
        cuts in proptest::collection::vec(1usize..700, 1..40),
        modes in proptest::collection::vec(0u8..4, 1..6),
    ) {
        let r = start(|_| {});
        let mut stream = Vec::new();
        let mut chunks = Vec::new();
        let mut expected = 0;
        for (i, m) in modes.iter().enumerate() {
            let e = metrics("p", "c", "s", "x_pct", i as f64).to_msgpack();
            let ch = chunk(i as u8 + 1);
            let mut entries = Entries::new();
            entries.push(t(i as u32), &e);
            entries.push(t(i as u32 + 1), &e);
            let (msg, n) = match m {
                0 => (encode::message("zpulse.metrics", t(i as u32), &e, Some(&ch)), 1),
                1 => (encode::forward("zpulse.metrics", &[(t(1), &e[..]), (t(2), &e[..])], Some(&ch)), 2),
                2 => (entries.packed_forward("zpulse.metrics", Some(&ch), Compression::None), 2),
                _ => (entries.packed_forward("zpulse.metrics", Some(&ch), Compression::Gzip), 2),
            };
            expected += n;
            stream.extend_from_slice(&msg);
            stream.push(0xc0); // keep-alive between messages
            chunks.push(ch);
        }
        let mut c = Client::connect(r.server.addr);
        c.s.set_nodelay(true).unwrap();
        let mut at = 0;
        for cut in cuts.iter().cycle() {
            if at >= stream.len() {
                break;
            }
            let end = (at + cut).min(stream.len());
            c.s.write_all(&stream[at..end]).unwrap();
            at = end;
            std::thread::sleep(Duration::from_micros(200));
        }
        for ch in &chunks {
            let got = c.ack();
            prop_assert_eq!(got.as_deref(), Some(ch.as_str()));
        }
        let (events, _) = Store::open_read_only(&r.db).unwrap().counts().unwrap();
        prop_assert_eq!(events as usize, expected);
    }

    #[test]
    fn arbitrary_bytes_never_take_the_server_down(
        junk in proptest::collection::vec(any::<u8>(), 0..2000),
    ) {
        let r = start(|c| c.read_timeout = Duration::from_millis(200));
        let mut c = Client::connect(r.server.addr);
        let _ = c.s.write_all(&junk);
        let _ = c.s.shutdown(std::net::Shutdown::Write);
        let _ = closed(&mut c);
        // Still serving.
        let mut c = Client::connect(r.server.addr);
        let e = metrics("p", "c", "s", "x_pct", 1.0).to_msgpack();
        c.send(&encode::message("zpulse.metrics", t(1), &e, Some(&chunk(1)))).unwrap();
        prop_assert_eq!(c.ack(), Some(chunk(1)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn any_record_becomes_a_row(record in proptest::collection::vec(any::<u8>(), 0..300)) {
        let entry = Entry { time: EventTime { seconds: 1, nanos: 2 }, record };
        let (row, _) = Row::from_entry("t", &entry, "peer");
        prop_assert_eq!(row.ts, 1_000_000_002);
        prop_assert!(serde_json::from_str::<serde_json::Value>(&row.data).is_ok());
    }
}
