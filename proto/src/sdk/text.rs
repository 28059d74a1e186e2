//! Figures written for a sentence, the same way in every check's summary.

/// Bytes in binary units, as `zpool list` prints them: `512 B`, `4.5 MiB`, `384 MiB`.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n.abs();
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    let sign = if n < 0.0 { "-" } else { "" };
    if unit == 0 {
        format!("{sign}{v:.0} B")
    } else if v < 10.0 {
        format!("{sign}{v:.1} {}", UNITS[unit])
    } else {
        format!("{sign}{v:.0} {}", UNITS[unit])
    }
}

/// A window's length: `90 s`, `15 minutes`, `2.5 hours`.
pub fn duration(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} minutes", seconds / 60.0)
    } else {
        format!("{:.1} hours", seconds / 3600.0)
    }
}

/// A calendar date and time of day in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
}

/// Seconds since the Unix epoch as a UTC date and time, with no time-zone database
/// (Howard Hinnant's days-to-civil algorithm).
pub fn civil_utc(secs: i64) -> Civil {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    Civil {
        year: yoe + era * 400 + i64::from(month <= 2),
        month,
        day,
        hour: rem / 3600,
        minute: rem % 3600 / 60,
        second: rem % 60,
    }
}

/// A size as `zpool status` prints it (`zfs_nicebytes`, lib/libzutil/zutil_nicenum.c in
/// OpenZFS): 1024-based units `B K M G T P E`, no decimals for an exact multiple of the unit,
/// else the most decimals (2, 1, 0) that keep it within five characters: `0B`, `13K`, `151M`,
/// `1.50G`, `10.0K`.
pub fn zfs_bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "K", "M", "G", "T", "P", "E"];
    let (mut v, mut index) = (n, 0usize);
    while v >= 1024 && index < UNITS.len() - 1 {
        v /= 1024;
        index += 1;
    }
    let unit = UNITS[index];
    let base = 1u64 << (10 * index);
    if index == 0 || n.is_multiple_of(base) {
        return format!("{v}{unit}");
    }
    let value = n as f64 / base as f64;
    let mut text = String::new();
    for decimals in (0..=2).rev() {
        text = format!("{value:.decimals$}{unit}");
        if text.len() <= 5 {
            break;
        }
    }
    text
}

/// A duration as `zpool status` prints it (`secs_to_dhms`): `00:00:07`, `2 days 03:04:05`.
pub fn dhms(secs: u64) -> String {
    let (days, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if days > 0 {
        format!("{days} days {h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// Unix seconds as C's `ctime` writes them, in UTC and without the newline:
/// `Mon Nov 30 10:42:13 2026`.
pub fn ctime_utc(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let c = civil_utc(secs);
    // 1970-01-01 was a Thursday.
    let weekday = (secs.div_euclid(86_400) + 4).rem_euclid(7) as usize;
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        DAYS[weekday],
        MONTHS[(c.month - 1).clamp(0, 11) as usize],
        c.day,
        c.hour,
        c.minute,
        c.second,
        c.year
    )
}

/// The `scan:` of `zpool status` in its own words (`print_scan_scrub_resilver_status`,
/// cmd/zpool/zpool_main.c, OpenZFS 2.1), one string per printed line, as of `now` (Unix
/// seconds: `zpool status` uses the time it runs; a snapshot uses the time it was taken).
pub fn scan_status(scan: &crate::snapshot::ScanStats, now: u64) -> Vec<String> {
    let ctime = |t: u64| ctime_utc(i64::try_from(t).unwrap_or(i64::MAX));
    let what = match scan.function.as_str() {
        "scrub" => "scrub",
        "resilver" => "resilver",
        "none" => return vec!["none requested".into()],
        other => return vec![format!("{other} {}", scan.state)],
    };
    let processed = zfs_bytes(scan.processed);
    let took = dhms(scan.end_time.saturating_sub(scan.start_time));
    match scan.state.as_str() {
        "finished" if what == "scrub" => vec![format!(
            "scrub repaired {processed} in {took} with {} errors on {}",
            scan.errors,
            ctime(scan.end_time)
        )],
        "finished" => vec![format!(
            "resilvered {processed} in {took} with {} errors on {}",
            scan.errors,
            ctime(scan.end_time)
        )],
        "canceled" => vec![format!("{what} canceled on {}", ctime(scan.end_time))],
        "scanning" => {
            let paused = scan.pass_scrub_pause.unwrap_or(0);
            let mut lines = if what == "scrub" && paused != 0 {
                vec![
                    format!("scrub paused since {}", ctime(paused)),
                    format!("scrub started on {}", ctime(scan.start_time)),
                ]
            } else {
                vec![format!(
                    "{what} in progress since {}",
                    ctime(scan.start_time)
                )]
            };
            let secs = scan.pass_seconds(now);
            let issued = scan.issued.unwrap_or(0);
            let (scanned, total) = (zfs_bytes(scan.examined), zfs_bytes(scan.to_examine));
            if paused == 0 {
                lines.push(format!(
                    "{scanned} scanned at {}/s, {} issued at {}/s, {total} total",
                    zfs_bytes(scan.pass_examined.unwrap_or(0) / secs),
                    zfs_bytes(issued),
                    zfs_bytes(scan.pass_issued.unwrap_or(0) / secs),
                ));
            } else {
                lines.push(format!(
                    "{scanned} scanned, {} issued, {total} total",
                    zfs_bytes(issued)
                ));
            }
            let done = if scan.to_examine == 0 {
                0.0
            } else {
                100.0 * issued as f64 / scan.to_examine as f64
            };
            let verb = if what == "scrub" {
                "repaired"
            } else {
                "resilvered"
            };
            let mut line = format!("{processed} {verb}, {done:.2}% done");
            if paused == 0 {
                // zpool gives an estimate only from 10 MiB/s of issue rate on.
                match scan.seconds_left(now) {
                    Some(left) if scan.issue_rate(now).unwrap_or(0) >= 10 << 20 => {
                        line.push_str(&format!(", {} to go", dhms(left)))
                    }
                    _ => line.push_str(", no estimated completion time"),
                }
            }
            lines.push(line);
            lines
        }
        other => vec![format!("{what} {other}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_precision() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(4.5 * 1024.0 * 1024.0), "4.5 MiB");
        assert_eq!(bytes(384.0 * 1024.0 * 1024.0), "384 MiB");
        assert_eq!(bytes(-2048.0), "-2.0 KiB");
        assert_eq!(duration(90.0), "90 s");
        assert_eq!(duration(900.0), "15 minutes");
        assert_eq!(duration(9000.0), "2.5 hours");
    }

    #[test]
    fn civil_dates_match_gnu_date() {
        // Expected values from GNU `date -u -d @N`.
        let c = civil_utc(1_796_030_139);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.second),
            (2026, 11, 30, 9, 15, 39)
        );
        let leap = civil_utc(951_782_400);
        assert_eq!((leap.year, leap.month, leap.day), (2000, 2, 29));
        assert_eq!(civil_utc(-1).year, 1969);
    }

    #[test]
    fn sizes_as_zfs_nicebytes_prints_them() {
        // Expected strings worked by hand from zfs_nicenum_format's rules (exact multiples
        // without decimals; otherwise 2, 1, 0 decimals until it fits five characters).
        assert_eq!(zfs_bytes(0), "0B");
        assert_eq!(zfs_bytes(1023), "1023B");
        assert_eq!(zfs_bytes(13 << 10), "13K");
        assert_eq!(zfs_bytes(151 << 20), "151M");
        assert_eq!(zfs_bytes(1536), "1.50K");
        assert_eq!(zfs_bytes(10239), "10.0K");
        assert_eq!(zfs_bytes(629_145_600 + 1), "600M");
        assert_eq!(zfs_bytes(u64::MAX), "16.0E");
    }

    #[test]
    fn durations_and_dates_as_zpool_prints_them() {
        assert_eq!(dhms(7), "00:00:07");
        assert_eq!(dhms(2 * 86_400 + 3 * 3600 + 4 * 60 + 5), "2 days 03:04:05");
        // `date -u -d @1796035333` → Mon Nov 30 10:42:13 UTC 2026.
        assert_eq!(ctime_utc(1_796_035_333), "Mon Nov 30 10:42:13 2026");
        // Single-digit days are padded with a space, as ctime does.
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
    }
}
