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
}
