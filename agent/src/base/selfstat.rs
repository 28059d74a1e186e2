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

/// The figures now, the files opened for this one read.
pub fn read() -> SelfStat {
    KeptSelfStat::default().read()
}

/// `/proc/self/stat` and `/proc/self/statm` kept open, for a caller that reads its figures
/// again and again (each Prometheus rendering): a read at offset 0 makes a proc file anew, so
/// each [`KeptSelfStat::read`] is one `pread` a file. Opening them by path, probing their size,
/// reading to the end and closing them every time was a third of a lab reading's rendering
/// (perf, the sample bench's outputs phase). Where they cannot be opened (no procfs: FreeBSD)
/// the figures are absent.
#[derive(Debug, Default)]
pub struct KeptSelfStat {
    stat: Option<std::fs::File>,
    statm: Option<std::fs::File>,
}

impl KeptSelfStat {
    pub fn read(&mut self) -> SelfStat {
        SelfStat {
            cpu_seconds: reread(&mut self.stat, "/proc/self/stat", cpu_seconds),
            rss_bytes: reread(&mut self.statm, "/proc/self/statm", rss_bytes),
        }
    }
}

/// What `parse` finds in the file at `path`, read whole from its start through the kept
/// handle; a handle that fails to read is opened again once (as a read by path would).
fn reread<T>(
    kept: &mut Option<std::fs::File>,
    path: &str,
    parse: fn(&str) -> Option<T>,
) -> Option<T> {
    use std::os::unix::fs::FileExt;
    // Both files are one line (proc(5)): stat's 52 fields, even each at 20 digits and the
    // 16-byte command name, stay under 1.2 KiB.
    let mut buf = [0u8; 4096];
    for _ in 0..2 {
        if kept.is_none() {
            *kept = Some(std::fs::File::open(path).ok()?);
        }
        match kept.as_ref()?.read_at(&mut buf, 0) {
            Ok(n) if n < buf.len() => return std::str::from_utf8(&buf[..n]).ok().and_then(parse),
            _ => *kept = None,
        }
    }
    None
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
