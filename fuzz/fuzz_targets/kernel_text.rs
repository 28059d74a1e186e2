//! The text and binary parsers of kernel statistics: Linux kstat files (NAMED, txgs, pool
//! io), /proc/diskstats, /proc/stat, meminfo and net/dev, FreeBSD devstat, GEOM XML and
//! `sysctl -a` listings. The first byte picks the parser, the rest is its input: none may
//! panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zpulse_agent::sources::{freebsd, linux};

fuzz_target!(|data: &[u8]| {
    let Some((&which, input)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(input);
    match which % 10 {
        0 => drop(linux::kstat::parse_named(input)),
        1 => drop(linux::kstat::parse_txgs(input)),
        2 => drop(linux::kstat::parse_pool_io(input)),
        3 => drop(linux::diskstats::parse(input)),
        4 => drop(linux::host::parse_stat(input)),
        5 => drop(linux::host::parse_meminfo(input)),
        6 => drop(linux::host::parse_net_dev(input)),
        7 => drop(freebsd::devstat::decode(input)),
        8 => drop(freebsd::geom::parse(&text)),
        _ => drop(freebsd::sysctl::DumpSysctl::parse(&text)),
    }
});
