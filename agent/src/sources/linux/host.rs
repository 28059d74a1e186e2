//! The host around ZFS: CPU time from `/proc/stat`, memory from `/proc/meminfo`, network
//! counters from `/proc/net/dev`. Pure parsers of bytes, and a reader that notes one issue per
//! file it cannot use.
//!
//! `/proc/stat` and `/proc/net/dev` go through `procfs-core`, which a proptest here keeps
//! checking returns errors rather than panicking. `/proc/meminfo` does not: procfs-core
//! 0.18's `Meminfo` panics on input a capture could hold (it slices the key at
//! `len() - 1` bytes, which splits a multi-byte last character, meminfo.rs:329; and
//! `num * 1024` overflows in debug builds on values above 2^54 kB, meminfo.rs:9), and it
//! fails outright when any of some twenty fields is missing. Our own parser reads only the
//! six keys we need.

use super::{Missing, read_parsed};
use crate::sources::{ParseError, Root};
use procfs_core::net::InterfaceDeviceStatus;
use procfs_core::{ExplicitSystemInfo, FromBufRead, FromBufReadSI, KernelStats, ProcError};
use zpulse_proto::Snapshot;
use zpulse_proto::snapshot::{CpuTimes, Memory, NetInterface};

const STAT: &str = "proc/stat";
const MEMINFO: &str = "proc/meminfo";
const NET_DEV: &str = "proc/net/dev";

/// What zpulse takes of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The aggregate `cpu` line, in clock ticks.
    pub cpu: CpuTimes,
    /// `btime`: when the host booted, Unix seconds (proc(5); the kernel prints the wall clock
    /// less the time since boot, fs/proc/stat.c `show_stat`).
    pub boot_time: u64,
}

/// The aggregate `cpu` line, in clock ticks, and the boot time.
///
/// `KernelStats` also insists on the `ctxt`, `btime` and `processes` lines and parses every
/// per-CPU line; every kernel since 2.6 prints them, so that costs nothing in practice.
pub fn parse_stat(bytes: &[u8]) -> Result<Stat, ParseError> {
    // Ticks per second only feed `CpuTime`'s millisecond helpers, which are not used: the
    // snapshot keeps ticks.
    let info = ExplicitSystemInfo {
        boot_time_secs: 0,
        ticks_per_second: 100,
        page_size: 4096,
        is_little_endian: cfg!(target_endian = "little"),
    };
    let stats = KernelStats::from_buf_read(bytes, &info).map_err(|e| procfs_error(STAT, e))?;
    let t = stats.total;
    Ok(Stat {
        cpu: CpuTimes {
            user: t.user,
            nice: t.nice,
            system: t.system,
            idle: t.idle,
            iowait: t.iowait,
            irq: t.irq,
            softirq: t.softirq,
            steal: t.steal,
            ticks_per_second: None,
        },
        boot_time: stats.btime,
    })
}

/// Memory in bytes. `MemTotal` and `MemFree` are required; `MemAvailable` (3.14+), `Cached`,
/// `SwapTotal` and `SwapFree` are taken when present. Other lines are not looked at: every
/// kernel adds some.
pub fn parse_meminfo(bytes: &[u8]) -> Result<Memory, ParseError> {
    const KEYS: [&[u8]; 6] = [
        b"MemTotal",
        b"MemFree",
        b"MemAvailable",
        b"Cached",
        b"SwapTotal",
        b"SwapFree",
    ];
    let mut found: [Option<u64>; 6] = [None; 6];
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let key = line[..colon].trim_ascii();
        let Some(k) = KEYS.iter().position(|want| *want == key) else {
            continue;
        };
        if found[k].is_some() {
            continue;
        }
        let err = |msg: &str| {
            ParseError::new(MEMINFO, format!("{}: {msg}", String::from_utf8_lossy(key)))
                .at_line(index + 1)
        };
        let mut rest = line[colon + 1..]
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let kib = match (rest.next(), rest.next(), rest.next()) {
            (Some(v), Some([b'k', b'B']), None) => {
                super::decimal::<u64>(v).map_err(|_| err("not a number"))?
            }
            _ => return Err(err("expected `<number> kB`")),
        };
        found[k] = Some(kib.checked_mul(1024).ok_or_else(|| err("too large"))?);
    }
    let [total, free, available, cached, swap_total, swap_free] = found;
    let missing = |k: &str| ParseError::new(MEMINFO, format!("no {k} line"));
    Ok(Memory {
        total: total.ok_or_else(|| missing("MemTotal"))?,
        free: free.ok_or_else(|| missing("MemFree"))?,
        available,
        cached,
        swap_total,
        swap_free,
    })
}

/// Every interface, sorted by name (procfs-core returns a map, so the file's order is lost).
pub fn parse_net_dev(bytes: &[u8]) -> Result<Vec<NetInterface>, ParseError> {
    // A trailing blank line (a hand-edited capture) would otherwise read as an interface.
    let status = InterfaceDeviceStatus::from_buf_read(bytes.trim_ascii_end())
        .map_err(|e| procfs_error(NET_DEV, e))?;
    let mut net: Vec<NetInterface> = status
        .0
        .into_values()
        .map(|d| NetInterface {
            name: d.name,
            rx_bytes: d.recv_bytes,
            rx_packets: d.recv_packets,
            rx_errors: d.recv_errs,
            rx_dropped: d.recv_drop,
            tx_bytes: d.sent_bytes,
            tx_packets: d.sent_packets,
            tx_errors: d.sent_errs,
            tx_dropped: d.sent_drop,
        })
        .collect();
    net.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(net)
}

/// Fills `cpu`, `memory` and `net`; a file that cannot be read or parsed leaves its field
/// empty and adds one issue.
pub fn read(root: &Root, snap: &mut Snapshot) {
    if let Some(stat) = read_parsed(root, STAT, snap, Missing::Issue, parse_stat) {
        snap.cpu = Some(stat.cpu);
        snap.boot_time = Some(stat.boot_time as f64);
    }
    if let Some(memory) = read_parsed(root, MEMINFO, snap, Missing::Issue, parse_meminfo) {
        snap.memory = Some(memory);
    }
    if let Some(net) = read_parsed(root, NET_DEV, snap, Missing::Issue, parse_net_dev) {
        snap.net = net;
    }
}

/// procfs-core words every parse failure as an internal bug ("please report this procfs
/// bug"), which would mislead an administrator reading the issue: keep only its detail.
fn procfs_error(what: &'static str, e: ProcError) -> ParseError {
    let detail = match e {
        ProcError::InternalError(inner) => {
            // Errors can be nested ("Internal Unwrap Error: Internal error: bug at …"): the
            // innermost detail is the one that says what was wrong.
            let msg = inner
                .msg
                .rsplit("Internal Unwrap Error: ")
                .next()
                .unwrap_or("")
                .trim();
            match msg {
                "NoneError" => "a required line or field is missing".to_string(),
                "" => "unrecognised content".to_string(),
                m => m.to_string(),
            }
        }
        ProcError::Io(inner, _) if inner.kind() == std::io::ErrorKind::InvalidData => {
            "not UTF-8 text".to_string()
        }
        other => other.to_string(),
    };
    ParseError::new(what, format!("malformed: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LAB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/lab/basic");

    fn lab_file(capture: &str, rel: &str) -> String {
        std::fs::read_to_string(format!("{LAB}/{capture}/{rel}")).expect("fixture file")
    }

    /// Independent reading: the `cpu ` line split on white space, columns 1..=8.
    #[test]
    fn stat_matches_the_lab_captures() {
        for capture in ["000", "001"] {
            let text = lab_file(capture, STAT);
            let line = text
                .lines()
                .find(|l| l.starts_with("cpu "))
                .expect("cpu line");
            let c: Vec<u64> = line
                .split_whitespace()
                .skip(1)
                .map(|v| v.parse().unwrap())
                .collect();
            let btime: u64 = text
                .lines()
                .find_map(|l| l.strip_prefix("btime "))
                .expect("btime line")
                .parse()
                .unwrap();
            let got = parse_stat(text.as_bytes()).expect("parses");
            assert_eq!(got.boot_time, btime, "{capture}");
            assert_eq!(
                got.cpu,
                CpuTimes {
                    user: c[0],
                    nice: c[1],
                    system: c[2],
                    idle: c[3],
                    iowait: Some(c[4]),
                    irq: Some(c[5]),
                    softirq: Some(c[6]),
                    steal: Some(c[7]),
                    ticks_per_second: None,
                },
                "{capture}"
            );
        }
        // 000 line 1: `cpu  2187 0 5212 2799 313 0 13 0 0 0`.
        let got = parse_stat(lab_file("000", STAT).as_bytes())
            .expect("parses")
            .cpu;
        assert_eq!((got.user, got.system, got.idle), (2187, 5212, 2799));
        assert_eq!((got.iowait, got.softirq), (Some(313), Some(13)));
    }

    #[test]
    fn stat_errors() {
        assert!(parse_stat(b"").is_err());
        assert!(parse_stat(b"cpu  1 2 x 4\nctxt 1\nbtime 1\nprocesses 1\n").is_err());
        let e = parse_stat(b"cpu  1 2 3 4\n").expect_err("no ctxt/btime/processes");
        assert!(!e.message.contains("procfs bug"), "{e}");
        // An old kernel's four columns: the rest are None, not 0.
        let old = parse_stat(b"cpu  1 2 3 4\nctxt 1\nbtime 1\nprocesses 1\n")
            .expect("parses")
            .cpu;
        assert_eq!((old.idle, old.iowait, old.steal), (4, None, None));
    }

    /// Independent reading: `Key: value kB` lines, value × 1024.
    #[test]
    fn meminfo_matches_the_lab_captures() {
        for capture in ["000", "001"] {
            let text = lab_file(capture, MEMINFO);
            let kb = |key: &str| -> Option<u64> {
                text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k == key)
                        .then(|| v.trim().trim_end_matches(" kB").parse::<u64>().unwrap() * 1024)
                })
            };
            let got = parse_meminfo(text.as_bytes()).expect("parses");
            assert_eq!(
                got,
                Memory {
                    total: kb("MemTotal").unwrap(),
                    free: kb("MemFree").unwrap(),
                    available: kb("MemAvailable"),
                    cached: kb("Cached"),
                    swap_total: kb("SwapTotal"),
                    swap_free: kb("SwapFree"),
                },
                "{capture}"
            );
        }
        // 000: `MemTotal:        3041240 kB`, `MemAvailable:    2576852 kB`, `SwapTotal: 0 kB`.
        let got = parse_meminfo(lab_file("000", MEMINFO).as_bytes()).expect("parses");
        assert_eq!(got.total, 3041240 * 1024);
        assert_eq!(got.available, Some(2576852 * 1024));
        assert_eq!(got.swap_total, Some(0));
    }

    #[test]
    fn meminfo_edge_cases() {
        // Before 3.14: no MemAvailable. `SwapCached` must not be taken for `Cached`.
        let old = b"MemTotal: 10 kB\nMemFree: 5 kB\nSwapCached: 7 kB\nHugePages_Total: 0\n";
        let m = parse_meminfo(old).expect("parses");
        assert_eq!(
            (m.total, m.free, m.available, m.cached),
            (10240, 5120, None, None)
        );
        assert!(parse_meminfo(b"MemFree: 5 kB\n").is_err());
        assert!(parse_meminfo(b"MemTotal: 5 MB\nMemFree: 1 kB\n").is_err());
        assert!(parse_meminfo(b"MemTotal: -5 kB\nMemFree: 1 kB\n").is_err());
        // The two inputs that panic procfs-core's Meminfo.
        assert!(parse_meminfo("MemTotal\u{e4} 1\n".as_bytes()).is_err());
        let e = parse_meminfo(b"MemTotal: 18446744073709551615 kB\nMemFree: 1 kB\n")
            .expect_err("overflow");
        assert_eq!(e.at, Some(crate::sources::error::Location::Line(1)));
        // No trailing newline, CRLF.
        let m = parse_meminfo(b"MemTotal: 2 kB\r\nMemFree: 1 kB").expect("parses");
        assert_eq!((m.total, m.free), (2048, 1024));
    }

    /// Independent reading: lines after the two headers, split at `:`, then on white space.
    #[test]
    fn net_dev_matches_the_lab_captures() {
        for capture in ["000", "001"] {
            let text = lab_file(capture, NET_DEV);
            let mut want: Vec<NetInterface> = text
                .lines()
                .skip(2)
                .map(|l| {
                    let (name, rest) = l.split_once(':').unwrap();
                    let c: Vec<u64> = rest
                        .split_whitespace()
                        .map(|v| v.parse().unwrap())
                        .collect();
                    assert_eq!(c.len(), 16);
                    NetInterface {
                        name: name.trim().to_string(),
                        rx_bytes: c[0],
                        rx_packets: c[1],
                        rx_errors: c[2],
                        rx_dropped: c[3],
                        tx_bytes: c[8],
                        tx_packets: c[9],
                        tx_errors: c[10],
                        tx_dropped: c[11],
                    }
                })
                .collect();
            want.sort_by(|a, b| a.name.cmp(&b.name));
            assert_eq!(parse_net_dev(text.as_bytes()).expect("parses"), want);
        }
        let got = parse_net_dev(lab_file("000", NET_DEV).as_bytes()).expect("parses");
        let names: Vec<&str> = got.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["ens5", "lo"]);
    }

    /// The lab's interfaces are all zeros, so a line in the kernel's own format
    /// (`"%6s: %7llu %7llu %4llu %4llu %4llu %5llu %10llu %9llu %8llu %7llu %4llu %4llu %4llu
    /// %5llu %7llu %10llu"`, net/core/net-procfs.c) with distinct values.
    #[test]
    fn net_dev_columns() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
            face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n\
            enp0s31f6: 123456789012  98765    1    2    3     4          5         6 210987654321   54321    7    8    9    10       11          12\n";
        let got = parse_net_dev(text.as_bytes()).expect("parses");
        assert_eq!(
            got,
            vec![NetInterface {
                name: "enp0s31f6".into(),
                rx_bytes: 123456789012,
                rx_packets: 98765,
                rx_errors: 1,
                rx_dropped: 2,
                tx_bytes: 210987654321,
                tx_packets: 54321,
                tx_errors: 7,
                tx_dropped: 8,
            }]
        );
        let short = format!("{}lo: 1 2 3\n", &text[..text.find("enp").unwrap()]);
        let e = parse_net_dev(short.as_bytes()).expect_err("short line");
        assert!(!e.message.contains("procfs bug"), "{e}");
    }

    #[test]
    fn read_lab_capture() {
        let mut snap = Snapshot::default();
        read(&Root::new(format!("{LAB}/001")), &mut snap);
        assert!(snap.issues.is_empty(), "{:?}", snap.issues);
        // 001: `cpu  2805 0 6049 6334 330 0 13 0 0 0`, `MemFree: 2630944 kB`.
        assert_eq!(snap.cpu.map(|c| c.user), Some(2805));
        assert_eq!(snap.memory.map(|m| m.free), Some(2630944 * 1024));
        assert_eq!(snap.net.len(), 2);
    }

    #[test]
    fn read_missing_files() {
        let mut snap = Snapshot::default();
        read(&Root::new(format!("{LAB}/does-not-exist")), &mut snap);
        assert_eq!((snap.cpu, snap.memory, snap.net.len()), (None, None, 0));
        let sources: Vec<&str> = snap.issues.iter().map(|i| i.source.as_str()).collect();
        assert_eq!(sources, [STAT, MEMINFO, NET_DEV]);
    }

    fn real_files() -> Vec<Vec<u8>> {
        ["000", "001"]
            .iter()
            .flat_map(|c| [STAT, MEMINFO, NET_DEV].map(|f| lab_file(c, f).into_bytes()))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_stat(&bytes);
            let _ = parse_meminfo(&bytes);
            let _ = parse_net_dev(&bytes);
        }

        /// Text shaped like the three files (keys, colons, numbers, non-ASCII), to get past
        /// the first checks that random bytes rarely pass.
        #[test]
        fn shaped_text_never_panics(text in "((cpu|ctxt|btime|processes|MemTotal|MemFree|Cached|lo|\u{e4}|[a-z]{1,3})[: ]{1,2}([0-9]{1,21}|kB|-1| ){0,18}\n){0,8}") {
            let _ = parse_stat(text.as_bytes());
            let _ = parse_meminfo(text.as_bytes());
            let _ = parse_net_dev(format!("h\nh\n{text}").as_bytes());
        }

        #[test]
        fn truncations_never_panic(file in 0usize..6, cut in any::<prop::sample::Index>()) {
            let bytes = &real_files()[file];
            let bytes = &bytes[..cut.index(bytes.len() + 1)];
            let _ = parse_stat(bytes);
            let _ = parse_meminfo(bytes);
            let _ = parse_net_dev(bytes);
        }
    }
}
