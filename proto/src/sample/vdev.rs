//! Per-vdev rates the way `zpool iostat -l` computes them (cmd/zpool/zpool_main.c):
//! counter deltas over the delta of the vdev's own `vs_timestamp`, and average latencies
//! from the delta of each power-of-two histogram, taking each bucket's midpoint.

use crate::counter::delta;
use crate::snapshot::{Vdev, VdevClass};
use serde::{Deserialize, Serialize};

/// One vdev over one interval (or since the pool was imported, when there is no previous
/// reading — what `zpool iostat` prints first).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VdevRates {
    /// `pool/class/top-level[/leaf]`, e.g. `tank/special/mirror-1/sdc`: stable across
    /// samples and unique in the pool.
    pub subject: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<VdevClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    pub leaf: bool,
    /// Seconds the counters cover (from `vs_timestamp`).
    pub seconds: f64,
    pub read_ops_per_s: f64,
    pub write_ops_per_s: f64,
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    /// Average latencies in ns; `None` when no I/O of that kind completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_wait_r: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_wait_w: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_wait_r: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_wait_w: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncq_wait_r: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncq_wait_w: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asyncq_wait_r: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asyncq_wait_w: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrub_wait: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim_wait: Option<u64>,
    /// Errors counted in the interval (since import when there is no previous reading).
    pub new_errors: NewErrors,
}

/// Growth of a vdev's error counters over one interval, per counter. A counter that went
/// backwards was reset (`zpool clear`): it has no growth this interval (`None`), like a
/// counter the kernel does not report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewErrors {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_ios: Option<u64>,
}

impl NewErrors {
    /// Read, write and checksum errors together (slow I/Os are not errors).
    pub fn total(&self) -> u64 {
        [self.read, self.write, self.checksum]
            .iter()
            .map(|n| n.unwrap_or(0))
            .sum()
    }

    fn between(
        prev: Option<&crate::snapshot::VdevStats>,
        cur: &crate::snapshot::VdevStats,
    ) -> NewErrors {
        use crate::counter::delta_opt;
        let before = |f: fn(&crate::snapshot::VdevStats) -> Option<u64>| match prev {
            Some(p) => f(p),
            None => Some(0),
        };
        NewErrors {
            read: delta_opt(before(|s| Some(s.read_errors)), Some(cur.read_errors)),
            write: delta_opt(before(|s| Some(s.write_errors)), Some(cur.write_errors)),
            checksum: delta_opt(
                before(|s| Some(s.checksum_errors)),
                Some(cur.checksum_errors),
            ),
            slow_ios: delta_opt(before(|s| s.slow_ios), cur.slow_ios),
        }
    }
}

/// `single_histo_average`: Σ count·(2^i + 2^i/2) / Σ count, integer arithmetic as in C.
pub fn histogram_average(histo: &[u64]) -> Option<u64> {
    average_since(None, histo)
}

/// [`histogram_average`] of the bucket-wise delta from `prev` to `cur`, without building the
/// delta; `None` when any bucket went backwards (vdev reopened), the lengths differ (module
/// upgraded) or nothing was counted.
fn average_since(prev: Option<&[u64]>, cur: &[u64]) -> Option<u64> {
    // Most buckets of most vdevs count nothing in an interval: those cost a compare, not a
    // 128-bit multiply (a 2,000-vdev pool has 740,000 buckets a reading).
    let (mut total, mut count) = (0u128, 0u128);
    let mut add = |i: usize, n: u64| {
        if n != 0 && i < 64 {
            let mid = (1u128 << i) + ((1u128 << i) / 2);
            total += u128::from(n) * mid;
            count += u128::from(n);
        }
    };
    match prev {
        Some(p) if p.len() != cur.len() => return None,
        Some(p) => {
            for (i, (&was, &now)) in p.iter().zip(cur).enumerate() {
                add(i, delta(was, now)?);
            }
        }
        None => {
            for (i, &now) in cur.iter().enumerate() {
                add(i, now);
            }
        }
    }
    (count > 0).then(|| u64::try_from(total / count).unwrap_or(u64::MAX))
}

/// Rates of `cur` since `prev` (the same vdev in the previous reading), or since import.
/// `None` when the vdev's counters went backwards (it was reopened).
pub fn vdev_rates(prev: Option<&Vdev>, cur: &Vdev, subject: String) -> Option<VdevRates> {
    let now = cur.stats.as_ref()?;
    let before = prev.and_then(|p| p.stats.as_ref());
    let zero = [0u64; 6];
    let (t0, ops0, bytes0) = match before {
        Some(b) => (b.timestamp, &b.ops, &b.bytes),
        None => (0, &zero, &zero),
    };
    let tdelta = delta(t0, now.timestamp)?;
    let mut d_ops = [0u64; 6];
    let mut d_bytes = [0u64; 6];
    for i in 0..6 {
        d_ops[i] = delta(ops0[i], now.ops[i])?;
        d_bytes[i] = delta(bytes0[i], now.bytes[i])?;
    }
    // zpool iostat: scale = NANOSEC / tdelta, or 1 when no time passed.
    let scale = if tdelta == 0 {
        1.0
    } else {
        1e9 / tdelta as f64
    };
    let hist_prev = prev.and_then(|p| p.histograms.as_ref());
    let avg = |pick: fn(&crate::snapshot::LatencyHistograms) -> &Vec<u64>| -> Option<u64> {
        let cur_h = pick(cur.histograms.as_ref()?);
        average_since(hist_prev.map(|h| pick(h).as_slice()), cur_h)
    };
    Some(VdevRates {
        subject,
        name: cur.name.clone(),
        class: cur.class,
        disk: cur.disk.clone(),
        leaf: cur.is_leaf(),
        seconds: tdelta as f64 / 1e9,
        read_ops_per_s: d_ops[1] as f64 * scale,
        write_ops_per_s: d_ops[2] as f64 * scale,
        read_bytes_per_s: d_bytes[1] as f64 * scale,
        write_bytes_per_s: d_bytes[2] as f64 * scale,
        total_wait_r: avg(|h| &h.total_r),
        total_wait_w: avg(|h| &h.total_w),
        disk_wait_r: avg(|h| &h.disk_r),
        disk_wait_w: avg(|h| &h.disk_w),
        syncq_wait_r: avg(|h| &h.syncq_r),
        syncq_wait_w: avg(|h| &h.syncq_w),
        asyncq_wait_r: avg(|h| &h.asyncq_r),
        asyncq_wait_w: avg(|h| &h.asyncq_w),
        scrub_wait: avg(|h| &h.scrub),
        trim_wait: avg(|h| &h.trim),
        new_errors: NewErrors::between(before, now),
    })
}

/// Rates of every vdev of a pool, root first, then each top-level vdev followed by its
/// children. Vdevs are matched to the previous reading by guid (names can change when a
/// device is replaced).
pub fn pool_vdev_rates(
    pool: &str,
    prev: Option<&Vdev>,
    cur: &Vdev,
    resets: &mut Vec<String>,
) -> Vec<VdevRates> {
    let mut out = Vec::new();
    // The previous tree walked once (not once per vdev: that was quadratic), by guid.
    let before = prev.map(Vdev::walk).unwrap_or_default();
    let departed = departed_leaves(&before, cur);
    let before_by_guid =
        super::first_by_key(before.into_iter().filter(|o| o.guid.is_some()), |o| o.guid);
    let find = |v: &Vdev| v.guid.and(before_by_guid.get(&v.guid).copied());
    let mut push = |v: &Vdev, subject: String, out: &mut Vec<VdevRates>| {
        let before = find(v);
        if prev.is_some() && before.is_none() {
            return; // new in this interval: no rate yet
        }
        if let Some(before) = before
            && !departed.is_empty()
            && !before.children.is_empty()
            && before
                .walk()
                .iter()
                .any(|x| x.is_leaf() && departed.contains(&x.guid))
        {
            // An interior vdev's counters are its children's summed at each read
            // (`vdev_get_stats_ex_impl`, module/zfs/vdev.c): with a device gone from below
            // it (replaced, detached) the two sums are of different devices, and their
            // difference is no rate, whether or not it went backwards.
            return;
        }
        match vdev_rates(before, v, subject.clone()) {
            Some(r) => out.push(r),
            None if v.stats.is_some() => resets.push(format!("vdev {subject}")),
            None => {}
        }
    };
    push(cur, pool.to_string(), &mut out);
    for top in &cur.children {
        for v in top.walk() {
            push(v, top.subject_of(pool, v), &mut out);
        }
    }
    out
}

/// The guids of the leaves of `prev` (a tree as [`Vdev::walk`] gives it) that are no longer
/// in `cur`: devices replaced or detached. Empty in almost every interval, and then the only
/// cost is one sorted list of `cur`'s leaves.
fn departed_leaves(prev: &[&Vdev], cur: &Vdev) -> Vec<Option<u64>> {
    if prev.is_empty() {
        return Vec::new();
    }
    let mut now: Vec<u64> = cur
        .walk()
        .into_iter()
        .filter(|v| v.is_leaf())
        .filter_map(|v| v.guid)
        .collect();
    now.sort_unstable();
    prev.iter()
        .filter(|v| v.is_leaf())
        .filter_map(|v| v.guid)
        .filter(|g| now.binary_search(g).is_err())
        .map(Some)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_average_uses_bucket_midpoints_in_integers() {
        // 3 I/Os in bucket 10 ([1024, 2048) ns, midpoint 1536) and 1 in bucket 20
        // (midpoint 1572864): (3·1536 + 1572864) / 4 = 394368.
        let mut h = vec![0u64; 37];
        h[10] = 3;
        h[20] = 1;
        assert_eq!(histogram_average(&h), Some(394_368));
        assert_eq!(histogram_average(&[0; 37]), None);
        // Bucket 0 holds 0 and 1 ns; its "midpoint" is 1 + 0.
        assert_eq!(histogram_average(&[5]), Some(1));
    }
}
