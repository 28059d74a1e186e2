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
}
