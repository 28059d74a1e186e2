//! Kernel events for people: what `zpool events -v` prints (the time, the class, then each
//! pair), in zpulse's words: one line with the event's time in UTC, its id, class and
//! sentence, then its figures one per line under their kernel names.

use std::fmt::Write as _;
use zpulse_proto::event::Value;
use zpulse_proto::zevent::ZEvent;

/// One event, `verbose` with its pairs.
pub fn zevent_text(z: &ZEvent, verbose: bool) -> String {
    let mut s = String::new();
    let c = zpulse_proto::sdk::text::civil_utc(i64::from(z.time.seconds));
    let _ = writeln!(
        s,
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:09} UTC  eid {}  {}  {}",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        z.time.nanos,
        z.eid,
        z.class,
        z.summary()
    );
    if verbose {
        for (key, value) in &z.to_event().data {
            if key == "eid" || key == "class" {
                continue;
            }
            let _ = writeln!(s, "        {key} = {}", value_text(value));
        }
    }
    s
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        // Guids and offsets read best in hex, as `zpool events -v` prints them.
        Value::UInt(u) if *u > 0xffff_ffff => format!("{u:#x}"),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Str(t) => t.clone(),
        Value::List(l) => {
            let items: Vec<String> = l.iter().map(value_text).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Map(m) => format!("({} pairs)", m.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zpulse_proto::event::EventTime;
    use zpulse_proto::zevent::ZEventVdev;

    #[test]
    fn an_event_prints_its_time_class_sentence_and_pairs() {
        let z = ZEvent {
            eid: 9,
            class: "resource.fs.zfs.statechange".into(),
            // 2026-11-30 09:15:39 UTC (GNU `date -u -d @1796030139`).
            time: EventTime {
                seconds: 1_796_030_139,
                nanos: 5,
            },
            pool: Some("tank".into()),
            pool_guid: Some(0x1234_5678_9abc),
            vdev: Some(ZEventVdev {
                path: Some("/dev/sdb1".into()),
                state: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        let text = zevent_text(&z, true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "2026-11-30 09:15:39.000000005 UTC  eid 9  resource.fs.zfs.statechange  \
             tank/sdb1 is now FAULTED"
        );
        assert!(
            lines.contains(&"        pool_guid = 0x123456789abc"),
            "{text}"
        );
        assert!(lines.contains(&"        vdev_state = FAULTED"), "{text}");
        assert_eq!(zevent_text(&z, false).lines().count(), 1);
    }
}
