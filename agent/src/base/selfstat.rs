//! The agent's own CPU time and memory, for the heartbeat: `/proc/self/stat` and
//! `/proc/self/statm` on Linux. Elsewhere the figures are absent rather than guessed.

/// CPU seconds (user + system) and resident bytes of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SelfStat {
    pub cpu_seconds: Option<f64>,
    pub rss_bytes: Option<u64>,
}

/// Clock ticks per second of `/proc/<pid>/stat`: `sysconf(_SC_CLK_TCK)`, which is 100 on
/// every Linux architecture zpulse runs on (USER_HZ).
const USER_HZ: f64 = 100.0;
/// `/proc/self/statm` counts pages; 4 KiB on x86_64 and the usual aarch64 kernels.
const PAGE_SIZE: u64 = 4096;

pub fn read() -> SelfStat {
    SelfStat {
        cpu_seconds: std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| cpu_seconds(&s)),
        rss_bytes: std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| rss_bytes(&s)),
    }
}

/// Fields 14 and 15 (utime, stime) of `/proc/<pid>/stat`, counted after the `)` that ends
/// the command name (which may itself contain spaces and parentheses).
pub fn cpu_seconds(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ")": field 3 (state) is index 0, so utime (14) is index 11, stime (15) index 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

/// Second field of `/proc/<pid>/statm`: resident pages.
pub fn rss_bytes(statm: &str) -> Option<u64> {
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    pages.checked_mul(PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_name_with_spaces() {
        // proc(5) layout; utime 250 and stime 50 ticks.
        let line = "1234 (zp (ul) se) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 77 1000 200";
        assert_eq!(cpu_seconds(line), Some(3.0));
        assert_eq!(rss_bytes("2500 300 100 10 0 500 0"), Some(300 * 4096));
        assert_eq!(cpu_seconds("garbage"), None);
    }

    #[test]
    fn this_process_reports_itself() {
        if std::path::Path::new("/proc/self/stat").exists() {
            let s = read();
            assert!(s.rss_bytes.unwrap() > 0);
            assert!(s.cpu_seconds.unwrap() >= 0.0);
        }
    }
}
