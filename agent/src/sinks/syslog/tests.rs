//! Golden strings for both dialects, the edges of escaping and truncation, a round trip of
//! every RFC 5424 message through an independent parser, and the transports against sockets
//! of this process.

use super::format::{self, Dialect, Facility, Formatter, cut_escaped, escape_sd_value, sd_name};
use super::*;
use crate::base::clock::ManualClock;
use crate::sinks::spec::SinkKind;
use jiff::tz::Offset;
use proptest::prelude::*;
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::PathBuf;
use std::time::Duration;
use syslog_rfc5424::parse_message;
use zpulse_proto::event::{Event, EventTime, Severity, State, Value};

/// 2026-11-03T09:05:01.25Z.
const T: EventTime = EventTime {
    seconds: 1_793_696_701,
    nanos: 250_000_000,
};

fn hours(h: i32) -> Offset {
    Offset::from_seconds(h * 3600).unwrap()
}

fn formatter(dialect: Dialect, max_bytes: usize) -> Formatter {
    Formatter {
        dialect,
        facility: Facility::DAEMON,
        app_name: "zpulse".into(),
        hostname: None,
        fallback_hostname: "fallback".into(),
        pid: 4242,
        enterprise_number: 32473,
        max_bytes,
    }
}

fn finding() -> Event {
    let mut e = Event::finding(
        "hdd-saturation",
        State::Raised,
        Severity::Warning,
        "tank/mirror-0/sda",
        "sda was busy 97% of the interval while moving 8.5 MB/s.",
    )
    .with_advice("Random I/O on spinning disks:\n1. add a special vdev")
    .with("util_pct", 97.5)
    .with("rotational", true)
    .with("disks", vec!["sda", "sdb"]);
    e.host = "nas1".into();
    e
}

#[test]
fn rfc3164_local_golden() {
    let f = formatter(Dialect::Rfc3164Local, 2048);
    assert_eq!(
        f.format(T, hours(1), &finding()),
        "<28>Nov  3 10:05:01 zpulse[4242]: hdd-saturation on tank/mirror-0/sda (raised): \
         sda was busy 97% of the interval while moving 8.5 MB/s. Advice: Random I/O on \
         spinning disks: 1. add a special vdev | disks=\"[\\\"sda\\\",\\\"sdb\\\"]\" rotational=true \
         util_pct=97.5"
    );
    // Two-digit days are not padded; a cleared warning is notice (24 + 5).
    let mut cleared = finding();
    cleared.state = Some(State::Cleared);
    cleared.data.clear();
    let t = EventTime {
        seconds: 1_798_155_000,
        nanos: 0,
    };
    assert_eq!(
        f.format(t, hours(-5), &cleared),
        "<29>Dec 24 18:30:00 zpulse[4242]: hdd-saturation on tank/mirror-0/sda (cleared): \
         sda was busy 97% of the interval while moving 8.5 MB/s."
    );
}

#[test]
fn rfc5424_golden() {
    let f = formatter(Dialect::Rfc5424, 1200);
    assert_eq!(
        f.format(T, hours(1), &finding()),
        "<28>1 2026-11-03T10:05:01.250000+01:00 nas1 zpulse 4242 hdd-saturation \
         [zpulse@32473 kind=\"finding\" check=\"hdd-saturation\" severity=\"warning\" \
         state=\"raised\" subject=\"tank/mirror-0/sda\"][zpulse-data@32473 \
         disks=\"[\\\"sda\\\",\\\"sdb\\\"\\]\" rotational=\"true\" util_pct=\"97.5\"] \
         hdd-saturation on tank/mirror-0/sda (raised): sda was busy 97% of the interval while \
         moving 8.5 MB/s. Advice: Random I/O on spinning disks: 1. add a special vdev"
    );
    // Metrics: no state, no data element, UTC as `Z`, the configured host wins.
    let f = Formatter {
        hostname: Some("override".into()),
        facility: Facility::parse("local3").unwrap(),
        enterprise_number: 1,
        ..f
    };
    let mut m = Event::metrics("arc", "arc", "ARC hit ratio 93%");
    m.host = "nas1".into();
    assert_eq!(
        f.format(T, Offset::UTC, &m),
        "<158>1 2026-11-03T09:05:01.250000Z override zpulse 4242 arc \
         [zpulse@1 kind=\"metrics\" check=\"arc\" severity=\"info\" subject=\"arc\"] \
         arc: ARC hit ratio 93%"
    );
}

#[test]
fn host_falls_back_from_config_to_event_to_system() {
    let f = formatter(Dialect::Rfc5424, 1200);
    let mut e = finding();
    let host =
        |f: &Formatter, e: &Event| parse_message(f.format(T, Offset::UTC, e)).unwrap().hostname;
    assert_eq!(host(&f, &e).as_deref(), Some("nas1"));
    e.host.clear();
    assert_eq!(host(&f, &e).as_deref(), Some("fallback"));
    let f = Formatter {
        fallback_hostname: String::new(),
        ..f
    };
    assert_eq!(host(&f, &e), None, "nil when nothing is known");
    // Bytes outside printable ASCII cannot be a HOSTNAME.
    e.host = "näs 1".into();
    assert_eq!(host(&f, &e).as_deref(), Some("n_s_1"));
}

#[test]
fn severities() {
    use format::syslog_severity as sev;
    let mut e = finding();
    for (severity, state, want) in [
        (Severity::Critical, State::Raised, 2),
        (Severity::Critical, State::Updated, 2),
        (Severity::Critical, State::Cleared, 5),
        (Severity::Warning, State::Raised, 4),
        (Severity::Warning, State::Cleared, 5),
        (Severity::Info, State::Raised, 6),
        (Severity::Info, State::Cleared, 6),
    ] {
        e.severity = severity;
        e.state = Some(state);
        assert_eq!(sev(&e), want, "{severity:?} {state:?}");
    }
    let mut agent = finding();
    agent.kind = zpulse_proto::event::Kind::Agent;
    agent.severity = Severity::Critical;
    assert_eq!(sev(&agent), 2);
    assert_eq!(sev(&Event::metrics("arc", "arc", "x")), 6);
    assert_eq!(
        format::priority(Facility::parse("local7").unwrap(), &agent),
        23 * 8 + 2
    );
}

#[test]
fn message_text_reads_well() {
    let mut e = finding();
    e.state = Some(State::Updated);
    // Advice only when raised.
    assert_eq!(
        format::message_text(&e),
        "hdd-saturation on tank/mirror-0/sda (updated): sda was busy 97% of the interval \
         while moving 8.5 MB/s."
    );
    e.state = Some(State::Raised);
    e.summary = "busy\u{0}".into();
    e.advice = Some("  do this\r\n ".into());
    assert_eq!(
        format::message_text(&e),
        "hdd-saturation on tank/mirror-0/sda (raised): busy . Advice: do this"
    );
}

#[test]
fn time_formats() {
    let jan = EventTime {
        seconds: 1_767_225_600, // 2026-01-01T00:00:00Z
        nanos: 999_999_999,
    };
    assert_eq!(format::rfc3164_time(jan, Offset::UTC), "Jan  1 00:00:00");
    assert_eq!(format::rfc3164_time(jan, hours(-1)), "Dec 31 23:00:00");
    // Microseconds are truncated, never rounded into the next second.
    assert_eq!(
        format::rfc3339(jan, Offset::UTC),
        "2026-01-01T00:00:00.999999Z"
    );
    let india = Offset::from_seconds(5 * 3600 + 30 * 60).unwrap();
    assert_eq!(
        format::rfc3339(jan, india),
        "2026-01-01T05:30:00.999999+05:30"
    );
    let newfoundland = Offset::from_seconds(-(3 * 3600 + 30 * 60)).unwrap();
    assert_eq!(
        format::rfc3339(jan, newfoundland),
        "2025-12-31T20:30:00.999999-03:30"
    );
    // Local mean time with seconds: the offset and the clock both go to whole minutes.
    let lmt = Offset::from_seconds(561).unwrap();
    assert_eq!(
        format::rfc3339(jan, lmt),
        "2026-01-01T00:09:00.999999+00:09"
    );
}

#[test]
fn sd_escaping_is_exactly_three_characters() {
    assert_eq!(escape_sd_value(r#"a"b\c]d[e=f"#), r#"a\"b\\c\]d[e=f"#);
    assert_eq!(escape_sd_value("ünï"), "ünï");
    // Param names: printable ASCII without `=`, space, `]`, `"`; at most 32; never empty.
    assert_eq!(sd_name("a b=c]d\"e"), "a_b_c_d_e");
    assert_eq!(sd_name("µs"), "_s");
    assert_eq!(sd_name(""), "_");
    assert_eq!(sd_name(&"k".repeat(40)), "k".repeat(32));
}

#[test]
fn colliding_names_stay_apart() {
    let f = formatter(Dialect::Rfc5424, 8192);
    let long = "x".repeat(40);
    let mut e = finding();
    e.data.clear();
    e.data.insert("a b".into(), Value::UInt(1));
    e.data.insert("a=b".into(), Value::UInt(2));
    e.data.insert("a_b".into(), Value::UInt(3));
    e.data.insert(format!("{long}1"), Value::UInt(4));
    e.data.insert(format!("{long}2"), Value::UInt(5));
    let msg = parse_message(f.format(T, Offset::UTC, &e)).unwrap();
    let data = msg.sd.find_sdid("zpulse-data@32473").unwrap();
    let values: Vec<&str> = data.values().map(String::as_str).collect();
    assert_eq!(data.len(), 5, "{data:?}");
    for v in ["1", "2", "3", "4", "5"] {
        assert!(values.contains(&v), "{data:?}");
    }
    assert!(data.keys().all(|k| k.len() <= 32));
}

#[test]
fn cutting_never_splits_an_escape_or_a_character() {
    let escaped = escape_sd_value(r#"ab"é\"#); // ab\"é\\
    assert_eq!(escaped, r#"ab\"é\\"#);
    let cuts: Vec<&str> = (0..=escaped.len())
        .map(|n| cut_escaped(&escaped, n))
        .collect();
    assert_eq!(
        cuts,
        [
            "",
            "a",
            "ab",
            "ab",
            r#"ab\""#,
            r#"ab\""#,
            r#"ab\"é"#,
            r#"ab\"é"#,
            r#"ab\"é\\"#
        ]
    );
    assert_eq!(format::truncate_utf8("aé", 2), "a");
    assert_eq!(format::truncate_utf8("aé", 3), "aé");
}

#[test]
fn long_values_are_cut_safely() {
    let f = formatter(Dialect::Rfc5424, 8192);
    let mut e = finding();
    e.data.clear();
    // 200 × `]` escapes to 400 bytes; the cut must land between escapes.
    e.data
        .insert("brackets".into(), Value::Str("]".repeat(200)));
    e.data.insert("accents".into(), Value::Str("é".repeat(200)));
    let text = f.format(T, Offset::UTC, &e);
    let msg = parse_message(&text).unwrap();
    let data = msg.sd.find_sdid("zpulse-data@32473").unwrap();
    let brackets = &data["brackets"];
    assert!(brackets.ends_with("]..."), "{brackets}");
    assert!(brackets.trim_end_matches("...").chars().all(|c| c == ']'));
    assert!(2 * brackets.len() - 3 <= format::MAX_SD_VALUE_BYTES);
    let accents = &data["accents"];
    assert!(accents.ends_with("é..."), "{accents}");
    assert!(accents.len() <= format::MAX_SD_VALUE_BYTES);
    // A cut value is a cut like any other: the SD says so.
    assert_eq!(
        msg.sd
            .find_tuple("zpulse@32473", "truncated")
            .map(String::as_str),
        Some("true")
    );
}

/// An event that needs every truncation stage at small limits: 40 figures, a long summary
/// ending in a two-byte character.
fn heavy() -> Event {
    let mut e = finding();
    e.summary = format!("{}é", "s".repeat(600));
    e.advice = None;
    e.data.clear();
    for i in 0..40 {
        e.data.insert(format!("figure_{i:02}"), Value::UInt(i));
    }
    e
}

/// The identity params RFC 5424 messages carry: what a receiver filters and routes on.
const IDENTITY: [&str; 5] = ["kind", "check", "severity", "state", "subject"];

#[test]
fn truncation_cuts_the_text_then_drops_figures_and_keeps_the_identity() {
    let event = heavy();
    let text = format::message_text(&event);
    let f = formatter(Dialect::Rfc5424, 8192);
    let full = f.format(T, Offset::UTC, &event);
    assert!(!full.contains("truncated"));
    // Exactly at the limit: untouched.
    let f = formatter(Dialect::Rfc5424, full.len());
    assert_eq!(f.format(T, Offset::UTC, &event), full);

    // One byte less: the free text gives way first, with its mark; the SD is as it was.
    let f = formatter(Dialect::Rfc5424, full.len() - 1);
    let cut = f.format(T, Offset::UTC, &event);
    assert!(cut.len() < full.len());
    let msg = parse_message(&cut).unwrap();
    assert_eq!(msg.sd.find_sdid("zpulse-data@32473").unwrap().len(), 40);
    assert!(msg.sd.find_tuple("zpulse@32473", "truncated").is_none());
    assert!(msg.msg.ends_with("...") && msg.msg.len() < text.len());
    assert!(text.starts_with(msg.msg.trim_end_matches("...")));

    // Every limit down to the smallest: the identity is whole, the text keeps at least its
    // first MIN_TEXT_BYTES (it names check, subject and state), and figures that go, go from
    // the end and are marked.
    for max in (MIN_MAX_BYTES..full.len()).step_by(7) {
        let f = formatter(Dialect::Rfc5424, max);
        let cut = f.format(T, Offset::UTC, &event);
        assert!(cut.len() <= max, "{max}");
        let msg = parse_message(&cut).unwrap();
        let meta = msg.sd.find_sdid("zpulse@32473").unwrap();
        for key in IDENTITY {
            assert!(meta.contains_key(key), "{max}: {key} lost: {meta:?}");
        }
        assert_eq!(meta["subject"], "tank/mirror-0/sda");
        assert!(
            msg.msg.len() >= format::MIN_TEXT_BYTES,
            "{max}: {}",
            msg.msg
        );
        assert!(text.starts_with(msg.msg.trim_end_matches("...")), "{max}");
        let kept = msg.sd.find_sdid("zpulse-data@32473").map_or(0, |d| d.len());
        if kept < 40 {
            assert_eq!(meta.get("truncated").map(String::as_str), Some("true"));
            let data = msg.sd.find_sdid("zpulse-data@32473");
            for i in 0..kept {
                assert!(
                    data.unwrap().contains_key(&format!("figure_{i:02}")),
                    "{max}"
                );
            }
        }
    }
    // At the smallest limit the text is at its shortest: figures went until it fitted, so
    // it is short of the floor by less than one figure (15 bytes here).
    let f = formatter(Dialect::Rfc5424, MIN_MAX_BYTES);
    let msg = parse_message(f.format(T, Offset::UTC, &event)).unwrap();
    assert!(
        (format::MIN_TEXT_BYTES..format::MIN_TEXT_BYTES + 15).contains(&msg.msg.len()),
        "{}",
        msg.msg
    );
}

#[test]
fn the_identity_goes_only_when_a_header_leaves_no_room_for_it() {
    // A 255-byte hostname and a 250-byte subject cannot both fit 480 bytes: the subject (MSG
    // repeats it) is dropped, the rest of the identity stays.
    let mut event = heavy();
    event.subject = "v".repeat(250);
    let f = Formatter {
        hostname: Some("h".repeat(255)),
        ..formatter(Dialect::Rfc5424, MIN_MAX_BYTES)
    };
    let cut = f.format(T, Offset::UTC, &event);
    assert!(cut.len() <= MIN_MAX_BYTES);
    let msg = parse_message(&cut).unwrap();
    let meta = msg.sd.find_sdid("zpulse@32473").unwrap();
    assert!(!meta.contains_key("subject"), "{meta:?}");
    for key in ["kind", "check", "severity", "state", "truncated"] {
        assert!(meta.contains_key(key), "{key}: {meta:?}");
    }
}

/// The heartbeat's `sinks` figure: one map per sink (`agent/src/daemon/heartbeat.rs`).
fn heartbeat_sinks(n: usize) -> Value {
    Value::List(
        (0..n)
            .map(|i| {
                let mut m = std::collections::BTreeMap::new();
                m.insert(
                    "name".into(),
                    Value::Str(format!("forward collector-{i}.example.net:24224")),
                );
                m.insert("delivered".into(), Value::UInt(123_456));
                m.insert("dropped".into(), Value::UInt(0));
                m.insert("pending".into(), Value::UInt(17));
                Value::Map(m)
            })
            .collect(),
    )
}

#[test]
fn a_long_list_figure_loses_whole_elements_and_stays_json() {
    let mut e = Event::metrics("agent.heartbeat", "nas1", "agent ok");
    e.data.insert("sinks".into(), heartbeat_sinks(6));
    let full = format::value_text(&e.data["sinks"]);
    assert!(
        full.len() > format::MAX_SD_VALUE_BYTES,
        "the case needs a long list"
    );
    for dialect_max in [1200, 8192] {
        let f = formatter(Dialect::Rfc5424, dialect_max);
        let msg = parse_message(f.format(T, Offset::UTC, &e)).unwrap();
        let got = &msg.sd.find_sdid("zpulse-data@32473").unwrap()["sinks"];
        let parsed: serde_json::Value =
            serde_json::from_str(got).unwrap_or_else(|err| panic!("not JSON ({err}): {got}"));
        let all: serde_json::Value = serde_json::from_str(&full).unwrap();
        let (kept, all) = (parsed.as_array().unwrap(), all.as_array().unwrap());
        assert!(!kept.is_empty() && kept.len() < all.len(), "{got}");
        assert_eq!(
            kept[..],
            all[..kept.len()],
            "whole elements, from the start"
        );
        assert_eq!(
            msg.sd
                .find_tuple("zpulse@32473", "truncated")
                .map(String::as_str),
            Some("true"),
            "the cut is marked"
        );
    }
    // A map figure too.
    let mut e = Event::metrics("m", "m", "x");
    let mut map = std::collections::BTreeMap::new();
    for i in 0..40 {
        map.insert(format!("key_{i:02}"), Value::Str("value".into()));
    }
    e.data.insert("map".into(), Value::Map(map));
    let f = formatter(Dialect::Rfc5424, 8192);
    let msg = parse_message(f.format(T, Offset::UTC, &e)).unwrap();
    let got = &msg.sd.find_sdid("zpulse-data@32473").unwrap()["map"];
    let parsed: serde_json::Value = serde_json::from_str(got).unwrap();
    assert!(
        parsed.get("key_00").is_some() && parsed.get("key_39").is_none(),
        "{got}"
    );
}

#[test]
fn rfc3164_truncation() {
    let event = heavy();
    let text = format::message_text(&event);
    let f = formatter(Dialect::Rfc3164Local, 8192);
    let full = f.format(T, Offset::UTC, &event);
    assert!(full.ends_with(" figure_38=38 figure_39=39"), "{full}");
    let header_len = full.find(": hdd").unwrap() + 2;
    assert_eq!(&full[header_len..header_len + text.len()], text);
    let figures = &full[header_len + text.len()..];
    // One byte less: the text is cut, its last 4 bytes (the two-byte `é` and two `s`) making
    // room for the 3-byte mark; every figure stays.
    let f = formatter(Dialect::Rfc3164Local, full.len() - 1);
    let cut = f.format(T, Offset::UTC, &event);
    assert_eq!(
        &cut[header_len..],
        format!("{}...{figures}", &text[..text.len() - 4])
    );
    // Less room than the shortest text and all figures: figures go from the end, ` ...`
    // says so, the text keeps its first MIN_TEXT_BYTES.
    let f = formatter(Dialect::Rfc3164Local, header_len + 300);
    let cut = f.format(T, Offset::UTC, &event);
    assert!(cut.len() <= header_len + 300);
    let body = &cut[header_len..];
    let (kept_text, kept_figures) = body.split_once(" |").unwrap();
    assert!(kept_text.len() >= format::MIN_TEXT_BYTES && kept_text.ends_with("..."));
    assert!(text.starts_with(kept_text.trim_end_matches("...")));
    assert!(
        kept_figures.starts_with(" figure_00=0 figure_01=1"),
        "{body}"
    );
    assert!(kept_figures.ends_with(" ...") && !kept_figures.contains("figure_39"));
    // No figure fits beside the shortest text: the text alone, cut, and the mark.
    let f = formatter(Dialect::Rfc3164Local, header_len + 100);
    let cut = f.format(T, Offset::UTC, &event);
    assert_eq!(cut.len(), header_len + 100);
    assert_eq!(
        &cut[header_len..],
        format!("{}... ...", &text[..100 - 4 - 3])
    );
}

fn any_text() -> impl Strategy<Value = String> {
    // Quotes, backslashes, brackets, controls, multi-byte characters: what breaks formats.
    let special = proptest::sample::select(vec![
        '"', '\\', ']', '[', '=', ' ', 'é', '€', '😀', '\n', '\t', '\0', '\x7f', '\u{85}',
    ]);
    let any_char = prop_oneof![3 => proptest::char::range('!', '~'), 1 => special];
    proptest::collection::vec(any_char, 0..300).prop_map(|v| v.into_iter().collect())
}

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<u64>().prop_map(Value::UInt),
        any::<f64>().prop_map(Value::Float),
        any_text().prop_map(Value::Str),
        proptest::collection::vec(any_text().prop_map(Value::Str), 0..4).prop_map(Value::List),
    ]
}

prop_compose! {
    fn any_event()(
        check in "[a-z0-9._-]{1,64}",
        subject in any_text(),
        summary in any_text(),
        advice in proptest::option::of(any_text()),
        host in any_text(),
        state in proptest::option::of(prop_oneof![
            Just(State::Raised), Just(State::Updated), Just(State::Cleared)]),
        severity in prop_oneof![
            Just(Severity::Info), Just(Severity::Warning), Just(Severity::Critical)],
        data in proptest::collection::btree_map(any_text(), any_value(), 0..30),
    ) -> Event {
        let mut e = Event::finding(check, State::Raised, severity, subject, summary);
        e.state = state;
        e.advice = advice;
        e.host = host;
        e.data = data;
        e
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_event_fits_and_parses(
        event in any_event(),
        max in MIN_MAX_BYTES..3000usize,
        seconds in any::<u32>(),
        nanos in any::<u32>(),
        offset_minutes in -(25 * 60 - 1)..(25 * 60i32),
    ) {
        let time = EventTime { seconds, nanos };
        let offset = Offset::from_seconds(offset_minutes * 60).unwrap();
        let f = formatter(Dialect::Rfc5424, max);
        let text = f.format(time, offset, &event);
        prop_assert!(text.len() <= max, "{} > {max}", text.len());
        prop_assert!(std::str::from_utf8(text.as_bytes()).is_ok());
        prop_assert!(!text.contains(['\n', '\0']));
        let msg = parse_message(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        let msgid = &event.check[..event.check.len().min(32)];
        prop_assert_eq!(msg.msgid.as_deref(), Some(msgid).filter(|&m| m != "-"));
        let meta = msg.sd.find_sdid("zpulse@32473").unwrap();
        // What survived came through unchanged (escaping round-trips), or was marked cut.
        if let Some(data) = msg.sd.find_sdid("zpulse-data@32473") {
            let names = format::unique_names(event.data.keys());
            for ((k, v), name) in event.data.iter().zip(names) {
                if let (Some(got), true) = (data.get(&name), event.data.len() == data.len()) {
                    let want: String = format::value_text(v)
                        .chars()
                        .map(|c| if c.is_control() { ' ' } else { c })
                        .collect();
                    // A list or map is cut by whole elements: still JSON.
                    let json_cut = matches!(v, Value::List(_) | Value::Map(_))
                        && serde_json::from_str::<serde_json::Value>(got).is_ok();
                    prop_assert!(
                        got == &want || got.ends_with("...") || json_cut,
                        "{k}: {got:?} vs {want:?}"
                    );
                }
            }
        }
        // A value longer than an SD param may be is cut wherever the limit is.
        let escaped_len = |text: &str| {
            let clean: String = text
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            escape_sd_value(&clean).len()
        };
        let long_value = escaped_len(&event.subject) > format::MAX_SD_VALUE_BYTES
            || escaped_len(&event.check) > format::MAX_SD_VALUE_BYTES
            || event
                .data
                .values()
                .any(|v| escaped_len(&format::value_text(v)) > format::MAX_SD_VALUE_BYTES);
        if meta.contains_key("truncated") && !long_value {
            // Dropping stops as soon as it fits: the slack is at most one param (≤ 292 bytes)
            // and the figures' element (19).
            prop_assert!(text.len() + 340 > max, "truncated although far below the limit");
        }

        let f = formatter(Dialect::Rfc3164Local, max);
        let text = f.format(time, offset, &event);
        prop_assert!(text.len() <= max);
        prop_assert!(!text.contains(['\n', '\0']));
        prop_assert!(text.starts_with('<'));
    }
}

// ---- configuration ----

#[test]
fn config_from_table_with_defaults() {
    let table: toml::Table = toml::from_str(
        r#"
        type = "syslog"
        address = "tls://logs.example.net"
        [tls]
        ca = "ca.pem"
        "#,
    )
    .unwrap();
    let c = SyslogConfig::read(&table, Some(Path::new("/etc/zpulse"))).unwrap();
    assert_eq!(c.address, "tls://logs.example.net");
    assert_eq!(c.facility, "daemon");
    assert_eq!(c.app_name, "zpulse");
    assert_eq!(c.enterprise_number, 32473);
    assert_eq!(c.max_message_bytes, None);
    assert_eq!(
        c.tls.unwrap().ca.unwrap(),
        PathBuf::from("/etc/zpulse/ca.pem")
    );
    assert_eq!(c.framing, None);

    let table: toml::Table = toml::from_str(
        r#"
        address = "tls://logs.example.net"
        framing = "lf"
        [tls]
        cert = "agent.pem"
        key = "/keys/agent.key"
        "#,
    )
    .unwrap();
    let c = SyslogConfig::read(&table, Some(Path::new("/etc/zpulse"))).unwrap();
    assert_eq!(c.framing, Some(Framing::Lf));
    let tls = c.tls.unwrap();
    assert_eq!(tls.cert.unwrap(), PathBuf::from("/etc/zpulse/agent.pem"));
    assert_eq!(tls.key.unwrap(), PathBuf::from("/keys/agent.key"));
    let table: toml::Table = toml::from_str("address = \"tcp://h\"\nframing = \"nul\"").unwrap();
    let err = SyslogConfig::read(&table, None).unwrap_err();
    assert!(
        err.contains("octet-counting") && err.contains("lf"),
        "{err}"
    );

    let table: toml::Table = toml::from_str("address = \"udp://h\"\nfacilty = \"user\"").unwrap();
    let err = SyslogConfig::read(&table, None).unwrap_err();
    assert!(err.contains("facilty"), "{err}");
    let err = SyslogConfig::read(&toml::Table::new(), None).unwrap_err();
    assert!(err.contains("address"), "{err}");
}

#[test]
fn config_errors_are_clear() {
    let err = |mutate: fn(&mut SyslogConfig)| {
        let mut c = SyslogConfig::new("udp://127.0.0.1:514");
        mutate(&mut c);
        SyslogSink::new(c).err().unwrap_or_default()
    };
    assert!(err(|c| c.facility = "foo".into()).starts_with(
        "facility: unknown facility 'foo': use one of user, mail, daemon, auth, syslog"
    ));
    assert!(err(|c| c.app_name = "my app".into()).starts_with("app_name: 'my app'"));
    assert!(err(|c| c.app_name = "x".repeat(33)).starts_with("app_name: "));
    assert!(err(|c| c.hostname = Some("a b".into())).starts_with("hostname: 'a b'"));
    assert!(err(|c| c.max_message_bytes = Some(100)).contains("480 to 65507"));
    assert!(err(|c| c.max_message_bytes = Some(70_000)).contains("480 to 65507"));
    assert!(err(|c| c.enterprise_number = 0).starts_with("enterprise_number"));
    assert!(
        err(|c| c.format = Some(Dialect::Rfc3164Local))
            .starts_with("format: rfc3164 is for local sockets")
    );
    assert!(err(|c| c.tls = Some(TlsConfig::default())).contains("only for tls://"));
    assert!(err(|c| c.framing = Some(Framing::Lf)).starts_with("framing: only for tcp://"));
    assert!(
        err(|c| c.address = "http://x".into())
            .starts_with("address: 'http://x': unknown scheme 'http'")
    );
    let missing_ca = |c: &mut SyslogConfig| {
        c.address = "tls://127.0.0.1".into();
        c.tls = Some(TlsConfig {
            ca: Some("/nonexistent/ca.pem".into()),
            ..TlsConfig::default()
        });
    };
    assert!(err(missing_ca).starts_with("tls.ca: /nonexistent/ca.pem"));
    let cert_without_key = |c: &mut SyslogConfig| {
        c.address = "tls://127.0.0.1".into();
        c.tls = Some(TlsConfig {
            ca: Some(fixture("ca.pem")),
            cert: Some(fixture("server.pem")),
            key: None,
            server_name: None,
        });
    };
    assert!(err(cert_without_key).starts_with("tls.cert: give its private key"));
    let missing_key = |c: &mut SyslogConfig| {
        c.address = "tls://127.0.0.1".into();
        c.tls = Some(TlsConfig {
            ca: Some(fixture("ca.pem")),
            cert: Some(fixture("server.pem")),
            key: Some("/nonexistent/agent.key".into()),
            server_name: None,
        });
    };
    assert!(err(missing_key).starts_with("tls.key: /nonexistent/agent.key"));
    // The Forward sink's server_name, in the same [sink.tls] table, is refused by name.
    let server_name = |c: &mut SyslogConfig| {
        c.address = "tls://127.0.0.1".into();
        c.tls = Some(TlsConfig {
            server_name: Some("collector.example.net".into()),
            ..TlsConfig::default()
        });
    };
    assert!(err(server_name).starts_with("tls.server_name: not a syslog setting"));
    // Large limits are for streams.
    let mut c = SyslogConfig::new("tcp://127.0.0.1");
    c.max_message_bytes = Some(100_000);
    assert!(SyslogSink::new(c).is_ok());
}

#[test]
fn defaults_by_transport() {
    let sink = |a: &str| SyslogSink::new(SyslogConfig::new(a)).unwrap();
    let local = sink("unix:///dev/log");
    assert_eq!(local.formatter().max_bytes, 2048);
    let want = if cfg!(target_os = "freebsd") {
        Dialect::Rfc5424
    } else {
        Dialect::Rfc3164Local
    };
    assert_eq!(local.formatter().dialect, want);
    assert_eq!(sink("udp://h").formatter().max_bytes, 1200);
    assert_eq!(sink("udp://h").formatter().dialect, Dialect::Rfc5424);
    assert_eq!(sink("tcp://h").formatter().max_bytes, 8096);
    assert_eq!(sink("tcp://[::1]").name(), "syslog tcp://[::1]:601");
    // The FreeBSD dialect is a setting, so it is tested here too.
    let mut c = SyslogConfig::new("unix:///var/run/log");
    c.format = Some(Dialect::Rfc5424);
    let s = SyslogSink::new(c).unwrap();
    assert_eq!(s.formatter().dialect, Dialect::Rfc5424);
    assert_eq!(s.formatter().facility, Facility::DAEMON);
    assert_eq!(s.formatter().pid, std::process::id());
}

#[test]
fn addresses() {
    let ok = |s: &str| Address::parse(s).unwrap();
    assert_eq!(ok("unix:///dev/log"), Address::Unix("/dev/log".into()));
    assert_eq!(
        ok("udp://logs"),
        Address::Udp {
            host: "logs".into(),
            port: 514
        }
    );
    assert_eq!(
        ok("tcp://10.0.0.1:10514"),
        Address::Tcp {
            host: "10.0.0.1".into(),
            port: 10514
        }
    );
    assert_eq!(
        ok("tls://[2001:db8::1]"),
        Address::Tls {
            host: "2001:db8::1".into(),
            port: 6514
        }
    );
    for (bad, why) in [
        ("/dev/log", "give unix:///dev/log"),
        ("unix://dev/log", "absolute path"),
        ("udp://::1:514", "brackets"),
        ("udp://[::1", "closing"),
        ("udp://h:0", "port '0'"),
        ("udp://h:x", "port 'x'"),
        ("udp://:514", "not a host"),
        ("tcp://h/path", "not a host"),
    ] {
        let err = Address::parse(bad).unwrap_err();
        assert!(err.contains(why), "{bad}: {err}");
    }
}

// ---- transports, against sockets of this test ----

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/syslog-tls")
        .join(name)
}

/// Short socket timeouts; the backoff's own waits pass only when the test moves its clock.
fn fast() -> Timing {
    Timing {
        timeout: Duration::from_millis(500),
        min_backoff: Duration::from_millis(200),
        max_backoff: Duration::from_millis(400),
    }
}

fn stamped(e: Event) -> Stamped {
    Stamped { time: T, event: e }
}

/// A sink on a clock of the test's own.
fn sink_with(config: SyslogConfig) -> (SyslogSink, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::default());
    let sink = SyslogSink::with_timing(config, fast(), clock.clone()).unwrap();
    (sink, clock)
}

fn sink(address: String) -> (SyslogSink, Arc<ManualClock>) {
    sink_with(SyslogConfig::new(address))
}

#[test]
fn udp_sends_one_datagram_per_event() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (mut s, _) = sink(format!("udp://{}", server.local_addr().unwrap()));
    s.deliver(&[
        stamped(finding()),
        stamped(Event::metrics("arc", "arc", "ok")),
    ])
    .unwrap();
    let mut buf = [0u8; 2048];
    let n = server.recv(&mut buf).unwrap();
    let first = parse_message(std::str::from_utf8(&buf[..n]).unwrap()).unwrap();
    assert_eq!(first.msgid.as_deref(), Some("hdd-saturation"));
    let n = server.recv(&mut buf).unwrap();
    let second = parse_message(std::str::from_utf8(&buf[..n]).unwrap()).unwrap();
    assert_eq!(second.msg, "arc: ok");
    assert_eq!(s.stats().delivered, 2);
}

/// Reads octet-counted frames until `n` arrived.
fn read_frames(stream: &mut impl Read, n: usize) -> Vec<String> {
    let mut bytes = Vec::new();
    let mut frames = Vec::new();
    let mut buf = [0u8; 4096];
    while frames.len() < n {
        let got = stream.read(&mut buf).unwrap();
        assert!(got > 0, "stream ended after {frames:?}");
        bytes.extend_from_slice(&buf[..got]);
        while let Some(space) = bytes.iter().position(|&b| b == b' ') {
            let len: usize = std::str::from_utf8(&bytes[..space])
                .unwrap()
                .parse()
                .unwrap();
            if bytes.len() < space + 1 + len {
                break;
            }
            frames.push(String::from_utf8(bytes[space + 1..space + 1 + len].to_vec()).unwrap());
            bytes.drain(..space + 1 + len);
        }
    }
    frames
}

#[test]
fn tcp_octet_counting_and_reconnect() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (mut s, clock) = sink(format!("tcp://{addr}"));
    s.deliver(&[stamped(finding()), stamped(finding())])
        .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let frames = read_frames(&mut conn, 2);
    assert_eq!(s.connects(), 1);
    assert_eq!(
        parse_message(&frames[1]).unwrap().msg,
        format::message_text(&finding())
    );

    // The server drops the connection: the next event notices before writing and goes out
    // on a new connection, not into the dead one. (On loopback the FIN is queued to the peer
    // before shutdown returns.)
    conn.shutdown(std::net::Shutdown::Both).unwrap();
    drop(conn);
    s.deliver(&[stamped(Event::metrics("arc", "arc", "after close"))])
        .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(
        parse_message(&read_frames(&mut conn, 1)[0]).unwrap().msg,
        "arc: after close"
    );
    assert_eq!(s.connects(), 2);

    // The server is gone: dropped and counted, and during the backoff without a new try.
    conn.shutdown(std::net::Shutdown::Both).unwrap();
    drop((conn, listener));
    let err = s.deliver(&[stamped(finding())]).unwrap_err();
    assert!(err.message.starts_with("1 of 1 events dropped"), "{err}");
    let err = s.deliver(&[stamped(finding())]).unwrap_err();
    assert!(err.message.contains("next attempt in 200 ms"), "{err}");
    assert_eq!(s.stats().dropped, 2);

    // Back, but the backoff (200 ms) has not passed: still refused without a try, even with
    // a listener there.
    let listener = TcpListener::bind(addr).unwrap();
    clock.advance(Duration::from_millis(199));
    let err = s.deliver(&[stamped(finding())]).unwrap_err();
    assert!(err.message.contains("next attempt in 1 ms"), "{err}");
    assert_eq!(s.connects(), 2);
    // Once it has, delivery resumes.
    clock.advance(Duration::from_millis(1));
    s.deliver(&[stamped(finding())]).unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(read_frames(&mut conn, 1).len(), 1);
    assert_eq!(s.stats().delivered, 4);
    assert_eq!(s.stats().dropped, 3);
}

#[test]
fn tcp_lf_framing_ends_each_message_with_a_newline() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = SyslogConfig::new(format!("tcp://{}", listener.local_addr().unwrap()));
    c.framing = Some(Framing::Lf);
    let (mut s, _) = sink_with(c);
    // The advice holds line breaks: they must not split the message.
    s.deliver(&[
        stamped(finding()),
        stamped(Event::metrics("arc", "arc", "two")),
    ])
    .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    while bytes.iter().filter(|&&b| b == b'\n').count() < 2 {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "stream ended: {bytes:?}");
        bytes.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("<28>1 "),
        "no octet count: {}",
        lines[0]
    );
    assert_eq!(
        parse_message(lines[0]).unwrap().msg,
        format::message_text(&finding())
    );
    assert_eq!(parse_message(lines[1]).unwrap().msg, "arc: two");
    // A message handed to the framing with a LF in it cannot end early either.
    assert_eq!(Framing::Lf.frame(b"a\nb"), b"a b\n");
    assert_eq!(Framing::OctetCounting.frame(b"a\nb"), b"3 a\nb");
}

#[test]
fn a_stalled_tcp_reader_costs_messages_not_the_agent() {
    // Accepts, never reads: once the socket buffers are full, writes time out and drop.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = SyslogConfig::new(format!("tcp://{}", listener.local_addr().unwrap()));
    c.max_message_bytes = Some(MAX_STREAM);
    let (mut s, _) = sink_with(c);
    let mut big = finding();
    for i in 0..200 {
        big.data
            .insert(format!("f{i}"), Value::Str("x".repeat(250)));
    }
    let batch = vec![stamped(big); 10];
    let mut conn = None;
    for _ in 0..200 {
        if s.deliver(&batch).is_err() {
            break;
        }
        if conn.is_none() {
            conn = Some(listener.accept().unwrap());
        }
    }
    let stats = s.stats();
    assert!(stats.dropped > 0, "{stats:?}");
    // After the one timeout, the backoff refuses at once instead of timing out per message:
    // every event of the next batch is refused by it, none written.
    let err = s.deliver(&batch).unwrap_err();
    assert!(
        err.message.starts_with("10 of 10 events dropped")
            && err.message.contains("stopped reading")
            && err.message.contains("next attempt in 200 ms"),
        "{err}"
    );
    assert_eq!(s.connects(), 1);
}

#[test]
fn unix_datagram_gets_the_local_dialect() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let server = UnixDatagram::bind(&path).unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (mut s, _) = sink(format!("unix://{}", path.display()));
    s.deliver(&[stamped(finding())]).unwrap();
    let mut buf = [0u8; 4096];
    let n = server.recv(&mut buf).unwrap();
    let text = std::str::from_utf8(&buf[..n]).unwrap();
    let pid = std::process::id();
    assert!(text.starts_with("<28>Nov  "), "{text}");
    assert!(
        text.contains(&format!(":01 zpulse[{pid}]: hdd-saturation on ")),
        "{text}"
    );

    // The daemon restarts (a new socket at the same path): the next message reconnects.
    drop(server);
    std::fs::remove_file(&path).unwrap();
    let server = UnixDatagram::bind(&path).unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    s.deliver(&[stamped(finding())]).unwrap();
    assert!(server.recv(&mut buf).unwrap() > 0);

    // No daemon: dropped and counted.
    drop(server);
    std::fs::remove_file(&path).unwrap();
    assert!(s.deliver(&[stamped(finding())]).is_err());
    assert_eq!((s.stats().delivered, s.stats().dropped), (2, 1));
}

#[test]
fn unix_stream_fallback_ends_messages_with_nul() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let listener = UnixListener::bind(&path).unwrap();
    let (mut s, _) = sink(format!("unix://{}", path.display()));
    s.deliver(&[stamped(finding()), stamped(finding())])
        .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    while bytes.iter().filter(|&&b| b == 0).count() < 2 {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0);
        bytes.extend_from_slice(&buf[..n]);
    }
    let messages: Vec<&[u8]> = bytes.split(|&b| b == 0).collect();
    assert_eq!(messages.len(), 3);
    assert!(messages[0].starts_with(b"<28>") && messages[1].starts_with(b"<28>"));
}

#[test]
fn a_full_local_daemon_costs_one_timeout_per_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let server = UnixDatagram::bind(&path).unwrap();
    let (mut s, clock) = sink(format!("unix://{}", path.display()));
    let batch = vec![stamped(finding()); 100];
    // The daemon does not read: its queue fills, a send waits out the timeout, and drops.
    let mut err = None;
    for _ in 0..100 {
        if let Err(e) = s.deliver(&batch) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("the queue never filled");
    assert!(err.message.contains("stopped reading"), "{err}");
    // During the backoff, the whole batch is refused by it, not written.
    let err = s.deliver(&batch).unwrap_err();
    assert!(
        err.message.starts_with("100 of 100 events dropped")
            && err.message.contains("next attempt in 200 ms"),
        "{err}"
    );
    // The daemon catches up: after the backoff, the same socket carries on.
    server.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    while server.recv(&mut buf).is_ok() {}
    clock.advance(Duration::from_millis(200));
    s.deliver(&[stamped(finding())]).unwrap();
    assert!(server.recv(&mut buf).unwrap() > 0);
    assert_eq!(s.connects(), 1);
}

/// An SD-ELEMENT: its SD-ID and its params (name, unescaped value).
type SdElement = (String, Vec<(String, String)>);

/// STRUCTURED-DATA by RFC 5424 §6.3's ABNF, strictly, and its params unescaped (§6.3.3):
/// `1*SD-ELEMENT` of `"[" SD-ID *(SP PARAM-NAME "=" DQUOTE PARAM-VALUE DQUOTE) "]"`, names
/// 1–32 PRINTUSASCII but `=`, SP, `]`, `"`; in a value `"`, `\` and `]` only escaped (a
/// backslash before any other character is itself). Then nothing, or SP and MSG. Written
/// from the RFC, not from the formatter, so that a receiver as strict as syslog-ng is
/// stood in for here.
fn strict_sd(sd_and_msg: &str) -> Result<Vec<SdElement>, String> {
    fn name(s: &[u8], i: &mut usize) -> Result<String, String> {
        let start = *i;
        while *i < s.len() && (33..=126).contains(&s[*i]) && !b"= ]\"".contains(&s[*i]) {
            *i += 1;
        }
        let n = *i - start;
        if n == 0 || n > 32 {
            return Err(format!("SD-NAME of {n} characters at {start}"));
        }
        Ok(String::from_utf8(s[start..*i].to_vec()).unwrap())
    }
    let s = sd_and_msg.as_bytes();
    let mut i = 0;
    let mut elements = Vec::new();
    if s.first() != Some(&b'[') {
        return Err("no SD-ELEMENT".into());
    }
    while s.get(i) == Some(&b'[') {
        i += 1;
        let id = name(s, &mut i)?;
        let mut params = Vec::new();
        while s.get(i) == Some(&b' ') {
            i += 1;
            let param = name(s, &mut i)?;
            if s.get(i..i + 2) != Some(b"=\"") {
                return Err(format!("{id} {param}: no =\" at {i}"));
            }
            i += 2;
            let mut value = Vec::new();
            loop {
                match s.get(i) {
                    None => return Err(format!("{id} {param}: value not closed")),
                    Some(b'"') => break,
                    Some(b']') => return Err(format!("{id} {param}: unescaped ] at {i}")),
                    Some(b'\\') if matches!(s.get(i + 1), Some(b'"' | b'\\' | b']')) => {
                        value.push(s[i + 1]);
                        i += 2;
                    }
                    Some(&c) => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
            i += 1;
            let value = String::from_utf8(value).map_err(|e| format!("{param}: {e}"))?;
            params.push((param, value));
        }
        if s.get(i) != Some(&b']') {
            return Err(format!("{id}: element not closed at {i}"));
        }
        i += 1;
        elements.push((id, params));
    }
    if i < s.len() && s[i] != b' ' {
        return Err(format!(
            "after the SD, {:?} instead of SP MSG",
            s[i] as char
        ));
    }
    Ok(elements)
}

/// A heartbeat whose lists hold every character §6.3.3 says must be escaped.
fn heartbeat_with_awkward_names() -> Event {
    let mut e = Event::metrics("agent.heartbeat", "nas1", "zpulse 0.1 on nas1: ok");
    e.kind = zpulse_proto::event::Kind::Agent;
    e.state = Some(State::Updated);
    let sinks = (0..8)
        .map(|i| {
            let mut m = std::collections::BTreeMap::new();
            m.insert(
                "name".into(),
                Value::Str(format!("forward [dc\"{i}\"] \\\\collector-{i}:24224]")),
            );
            m.insert("delivered".into(), Value::UInt(1000 + i));
            Value::Map(m)
        })
        .collect();
    e.data.insert("sinks".into(), Value::List(sinks));
    let plugins = (0..30)
        .map(|i| Value::Str(format!("plugin]{i}\\")))
        .collect();
    e.data.insert("plugins".into(), Value::List(plugins));
    e.data
        .insert("note".into(), Value::Str("a ] b \" c \\ d ".repeat(30)));
    e.data.insert("samples".into(), Value::UInt(42));
    e
}

/// After every cut (every limit from a bare header to the whole message), the SD
/// is valid by the RFC's grammar, and each param in it is whole: a figure is its full value,
/// or (cut to its own limit) a prefix of its elements that is valid JSON, or a prefix of its
/// text marked `...`; never half a param, never a dangling escape.
#[test]
fn structured_data_is_valid_after_every_cut() {
    let e = heartbeat_with_awkward_names();
    let full: std::collections::BTreeMap<&str, serde_json::Value> = e
        .data
        .iter()
        .map(|(k, v)| (k.as_str(), serde_json::to_value(v).unwrap()))
        .collect();
    let mut saw_cut_list = false;
    for max in (120..=3000).step_by(7) {
        let f = formatter(Dialect::Rfc5424, max);
        let msg = f.format(T, Offset::UTC, &e);
        assert!(msg.len() <= max, "{max}: {} bytes", msg.len());
        // After the six header fields.
        let Some(rest) = msg.splitn(7, ' ').nth(6) else {
            continue;
        };
        let sd = strict_sd(rest).unwrap_or_else(|why| panic!("limit {max}: {why}\n{msg}"));
        for (id, params) in &sd {
            if id != "zpulse-data@32473" {
                continue;
            }
            for (name, value) in params {
                let whole = &full[name.as_str()];
                if let Some(text) = whole.as_str() {
                    let ok = value == text
                        || value
                            .strip_suffix(format::CUT_MARK)
                            .is_some_and(|p| text.starts_with(p));
                    assert!(ok, "limit {max}: {name}={value:?}");
                } else if whole.is_array() {
                    let got: serde_json::Value = serde_json::from_str(value)
                        .unwrap_or_else(|e| panic!("limit {max}: {name} not JSON ({e}): {value}"));
                    let (got, all) = (got.as_array().unwrap(), whole.as_array().unwrap());
                    assert_eq!(got[..], all[..got.len()], "limit {max}: {name}");
                    saw_cut_list |= got.len() < all.len();
                } else {
                    assert_eq!(value, &whole.to_string(), "limit {max}: {name}");
                }
            }
        }
    }
    assert!(saw_cut_list, "the case must cut a list");
}
