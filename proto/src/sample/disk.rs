//! Disk rates with the meaning `iostat -x` gives them (sysstat on Linux, devstat on FreeBSD).

use crate::Snapshot;
use crate::counter::{delta, delta_u32, ratio};
use crate::snapshot::{Devstat, Disk, DiskCounters, Diskstats};
use serde::{Deserialize, Serialize};

/// One disk over one interval. Averages over no I/O (e.g. `r_await` with no reads) are
/// `None`, not 0; fields a kernel does not count (discards before Linux 4.18) are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskRates {
    pub name: String,
    /// Set for a partition: the whole disk it is part of (its figures are in the disk's too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_disk: Option<String>,
    /// A loop device, RAM disk, zvol, floppy, optical drive or network block device
    /// ([`crate::snapshot::is_virtual_disk`]): no storage of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub virtual_device: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Reads / writes completed per second.
    pub r_s: f64,
    pub w_s: f64,
    /// Discards (TRIM) and flushes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f_s: Option<f64>,
    /// kB (1024 bytes) per second.
    pub rkb_s: f64,
    pub wkb_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dkb_s: Option<f64>,
    /// Merged requests per second (Linux only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrqm_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrqm_s: Option<f64>,
    /// Mean time per request, ms, queue included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r_await: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w_await: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d_await: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f_await: Option<f64>,
    /// Reads, writes and discards together, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub await_ms: Option<f64>,
    /// Mean request size, kB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rareq_sz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wareq_sz: Option<f64>,
    /// Mean number of requests in flight (`aqu-sz`).
    pub aqu_sz: f64,
    /// Share of the interval with I/O in flight, 0–100 (`%util`, gstat's `%busy`).
    pub util: f64,
}

impl DiskRates {
    /// A whole disk with storage of its own: not a partition (whose figures are in its
    /// disk's too) and not a [`virtual_device`](DiskRates::virtual_device). What a check
    /// watches when its config names no disks.
    pub fn is_storage(&self) -> bool {
        self.whole_disk.is_none() && !self.virtual_device
    }

    pub fn iops(&self) -> f64 {
        self.r_s + self.w_s + self.d_s.unwrap_or(0.0)
    }

    /// Read + write bandwidth, bytes per second.
    pub fn bytes_per_s(&self) -> f64 {
        (self.rkb_s + self.wkb_s) * 1024.0
    }
}

pub(super) fn disk_rates(
    prev: &Snapshot,
    cur: &Snapshot,
    itv: f64,
    resets: &mut Vec<String>,
) -> Vec<DiskRates> {
    let mut out = Vec::with_capacity(cur.disks.len());
    let before_by_name = super::first_by_key(&prev.disks, |d| d.name.as_str());
    for disk in &cur.disks {
        // A disk that appeared during the interval has no rate yet.
        let Some(&before) = before_by_name.get(disk.name.as_str()) else {
            continue;
        };
        let rates = match (&before.counters, &disk.counters) {
            (DiskCounters::Diskstats(a), DiskCounters::Diskstats(b)) => diskstats(a, b, itv),
            (DiskCounters::Devstat(a), DiskCounters::Devstat(b)) => devstat(a, b, itv),
            _ => None,
        };
        match rates {
            Some(mut r) => {
                label(&mut r, disk);
                out.push(r);
            }
            None => resets.push(format!("disk {}", disk.name)),
        }
    }
    out
}

fn label(r: &mut DiskRates, disk: &Disk) {
    r.name = disk.name.clone();
    r.whole_disk = disk.whole_disk.clone();
    r.virtual_device = crate::snapshot::is_virtual_disk(&disk.name);
    r.rotational = disk.rotational;
}

/// `None` when the device was replaced (major:minor changed) or a 64-bit counter went back.
fn diskstats(a: &Diskstats, b: &Diskstats, itv: f64) -> Option<DiskRates> {
    if (a.major, a.minor) != (b.major, b.minor) {
        return None;
    }
    let reads = delta(a.reads, b.reads)?;
    let writes = delta(a.writes, b.writes)?;
    let rsec = delta(a.sectors_read, b.sectors_read)?;
    let wsec = delta(a.sectors_written, b.sectors_written)?;
    let rmerged = delta(a.reads_merged, b.reads_merged)?;
    let wmerged = delta(a.writes_merged, b.writes_merged)?;
    // The 64-bit counters moved forward, so a smaller 32-bit time field wrapped.
    let read_ms = delta_u32(a.read_ms, b.read_ms) as f64;
    let write_ms = delta_u32(a.write_ms, b.write_ms) as f64;
    let itv_ms = itv * 1000.0;

    let discards = both(a.discards, b.discards).and_then(|(x, y)| delta(x, y));
    let dsec = both(a.sectors_discarded, b.sectors_discarded).and_then(|(x, y)| delta(x, y));
    let discard_ms = both(a.discard_ms, b.discard_ms).map(|(x, y)| delta_u32(x, y) as f64);
    let flushes = both(a.flushes, b.flushes).and_then(|(x, y)| delta(x, y));
    let flush_ms = both(a.flush_ms, b.flush_ms).map(|(x, y)| delta_u32(x, y) as f64);

    let all_ios = reads as f64 + writes as f64 + discards.unwrap_or(0) as f64;
    let all_ms = read_ms + write_ms + discard_ms.unwrap_or(0.0);
    Some(DiskRates {
        r_s: reads as f64 / itv,
        w_s: writes as f64 / itv,
        d_s: discards.map(|d| d as f64 / itv),
        f_s: flushes.map(|f| f as f64 / itv),
        rkb_s: rsec as f64 / 2.0 / itv,
        wkb_s: wsec as f64 / 2.0 / itv,
        dkb_s: dsec.map(|s| s as f64 / 2.0 / itv),
        rrqm_s: Some(rmerged as f64 / itv),
        wrqm_s: Some(wmerged as f64 / itv),
        r_await: ratio(read_ms, reads as f64),
        w_await: ratio(write_ms, writes as f64),
        d_await: discard_ms.and_then(|ms| ratio(ms, discards? as f64)),
        f_await: flush_ms.and_then(|ms| ratio(ms, flushes? as f64)),
        await_ms: ratio(all_ms, all_ios),
        rareq_sz: ratio(rsec as f64 / 2.0, reads as f64),
        wareq_sz: ratio(wsec as f64 / 2.0, writes as f64),
        aqu_sz: delta_u32(a.weighted_ms, b.weighted_ms) as f64 / itv_ms,
        util: percent(delta_u32(a.io_ms, b.io_ms) as f64 / itv_ms),
        ..DiskRates::default()
    })
}

/// devstat index order: 0 NO_DATA (flush and other), 1 READ, 2 WRITE, 3 FREE.
fn devstat(a: &Devstat, b: &Devstat, itv: f64) -> Option<DiskRates> {
    if a.creation_time != b.creation_time {
        return None;
    }
    let mut ops = [0u64; 4];
    let mut bytes = [0u64; 4];
    let mut dur = [0f64; 4];
    for i in 0..4 {
        ops[i] = delta(a.operations[i], b.operations[i])?;
        bytes[i] = delta(a.bytes[i], b.bytes[i])?;
        dur[i] = (b.duration[i] - a.duration[i]).max(0.0);
    }
    let busy = (b.busy_time - a.busy_time).max(0.0);
    let per_s = |n: u64| n as f64 / itv;
    let await_ms = |i: usize| ratio(dur[i] * 1000.0, ops[i] as f64);
    Some(DiskRates {
        r_s: per_s(ops[1]),
        w_s: per_s(ops[2]),
        d_s: Some(per_s(ops[3])),
        f_s: Some(per_s(ops[0])),
        rkb_s: bytes[1] as f64 / 1024.0 / itv,
        wkb_s: bytes[2] as f64 / 1024.0 / itv,
        dkb_s: Some(bytes[3] as f64 / 1024.0 / itv),
        r_await: await_ms(1),
        w_await: await_ms(2),
        d_await: await_ms(3),
        f_await: await_ms(0),
        await_ms: ratio(
            (dur[1] + dur[2] + dur[3]) * 1000.0,
            ops[1..].iter().map(|&n| n as f64).sum(),
        ),
        rareq_sz: ratio(bytes[1] as f64 / 1024.0, ops[1] as f64),
        wareq_sz: ratio(bytes[2] as f64 / 1024.0, ops[2] as f64),
        // Little's law: total time spent by all requests over the interval is the mean number
        // in flight, the same quantity Linux's weighted_ms gives.
        aqu_sz: dur.iter().sum::<f64>() / itv,
        util: percent(busy / itv),
        ..DiskRates::default()
    })
}

fn both(a: Option<u64>, b: Option<u64>) -> Option<(u64, u64)> {
    Some((a?, b?))
}

/// A busy fraction as a percentage. io_ticks can run slightly ahead of the interval (it is
/// updated at I/O start and end), so it is capped at 100.
fn percent(fraction: f64) -> f64 {
    (fraction * 100.0).clamp(0.0, 100.0)
}
