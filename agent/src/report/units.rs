//! Number formatting for the text report.

/// Binary units, as `zpool list` and `arc_summary` print sizes: `1.4 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A 0–1 ratio as a percentage, or `-` when unknown.
pub fn pct(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "-".into(), |r| format!("{:.1}%", r * 100.0))
}

/// A value with fixed decimals, or `-` when unknown.
pub fn num(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".into(), |v| format!("{v:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }
}

/// Unix seconds as `2026-11-30 09:41:31 UTC` (no time-zone database needed).
pub fn utc(unix: f64) -> String {
    let c = zpulse_proto::sdk::text::civil_utc(unix.floor() as i64);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

#[cfg(test)]
mod time_tests {
    #[test]
    fn utc_matches_known_instants() {
        assert_eq!(super::utc(0.0), "1970-01-01 00:00:00 UTC");
        // Expected values from GNU `date -u -d @N`.
        assert_eq!(super::utc(1_796_030_139.1), "2026-11-30 09:15:39 UTC");
        assert_eq!(super::utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
    }
}
