//! The window as one interval when it was split: the stretches on each side of a restart, a
//! gap or a clock step, each exact (`Sample::between` its first and last snapshot), made into
//! one sample whose figures are those of all their time together.
//!
//! Rates are means over the time each object was counted (a disk present in one stretch only
//! has the rate of that stretch); mean latencies and request sizes are weighted by the
//! operations they are the mean of; ARC and ZIL counters are added up and their ratios made
//! from the sums, as for one interval.

use std::collections::BTreeMap;
use zpulse_proto::Sample;
use zpulse_proto::sample::{
    ArcRates, CpuRates, DatasetRates, DiskRates, NetRates, PoolRates, VdevRates, ZilRates,
};

/// Σ value·weight / Σ weight over the items that have a value.
fn mean<T>(items: &[(&T, f64)], value: impl Fn(&T) -> Option<f64>) -> Option<f64> {
    let (mut sum, mut weight) = (0.0, 0.0);
    for (item, w) in items {
        if let Some(v) = value(item) {
            sum += v * w;
            weight += w;
        }
    }
    (weight > 0.0).then(|| sum / weight)
}

/// The mean of a per-operation figure, weighted by the operations (`ops` per second × the
/// item's seconds) it is the mean of.
fn per_op<T>(
    items: &[(&T, f64)],
    value: impl Fn(&T) -> Option<f64>,
    ops: impl Fn(&T) -> f64,
) -> Option<f64> {
    let weighted: Vec<(&T, f64)> = items.iter().map(|(t, w)| (*t, ops(t) * w)).collect();
    mean(&weighted, value)
}

/// Every item of `parts` (each with its part's weight) grouped by `key`, in order of first
/// appearance from the last part back (the last snapshot's order first).
fn grouped<'a, T>(parts: &[(&'a [T], f64)], key: impl Fn(&T) -> &str) -> Vec<Vec<(&'a T, f64)>> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<&str, Vec<(&'a T, f64)>> = BTreeMap::new();
    for (items, w) in parts.iter().rev() {
        for item in items.iter() {
            let k = key(item);
            let g = groups.entry(k).or_insert_with(|| {
                order.push(k);
                Vec::new()
            });
            g.insert(0, (item, *w));
        }
    }
    order.into_iter().filter_map(|k| groups.remove(k)).collect()
}

/// The lists `list` of every item of `items` (with its weight), grouped by `key` and each
/// group made one by `merge`.
fn merged<'a, P, T: 'a>(
    items: &[(&'a P, f64)],
    list: impl Fn(&'a P) -> &'a [T],
    key: impl Fn(&T) -> &str,
    merge: impl Fn(&[(&'a T, f64)]) -> T,
) -> Vec<T> {
    let lists: Vec<(&[T], f64)> = items.iter().map(|(p, w)| (list(p), *w)).collect();
    grouped(&lists, key).iter().map(|g| merge(g)).collect()
}

fn time_weighted<T>(items: &[(&T, f64)], f: impl Fn(&T) -> f64) -> f64 {
    mean(items, |t| Some(f(t))).unwrap_or(0.0)
}

fn disk(items: &[(&DiskRates, f64)]) -> DiskRates {
    let mut d = items.last().expect("a group is never empty").0.clone();
    let tw = |f: fn(&DiskRates) -> f64| time_weighted(items, f);
    let opt = |f: fn(&DiskRates) -> Option<f64>| mean(items, f);
    d.r_s = tw(|d| d.r_s);
    d.w_s = tw(|d| d.w_s);
    d.rkb_s = tw(|d| d.rkb_s);
    d.wkb_s = tw(|d| d.wkb_s);
    d.aqu_sz = tw(|d| d.aqu_sz);
    d.util = tw(|d| d.util);
    d.d_s = opt(|d| d.d_s);
    d.f_s = opt(|d| d.f_s);
    d.dkb_s = opt(|d| d.dkb_s);
    d.rrqm_s = opt(|d| d.rrqm_s);
    d.wrqm_s = opt(|d| d.wrqm_s);
    d.r_await = per_op(items, |d| d.r_await, |d| d.r_s);
    d.w_await = per_op(items, |d| d.w_await, |d| d.w_s);
    d.d_await = per_op(items, |d| d.d_await, |d| d.d_s.unwrap_or(0.0));
    d.f_await = per_op(items, |d| d.f_await, |d| d.f_s.unwrap_or(0.0));
    d.await_ms = per_op(items, |d| d.await_ms, DiskRates::iops);
    d.rareq_sz = per_op(items, |d| d.rareq_sz, |d| d.r_s);
    d.wareq_sz = per_op(items, |d| d.wareq_sz, |d| d.w_s);
    d
}

fn vdev(items: &[(&VdevRates, f64)]) -> VdevRates {
    // A vdev's rates are over its own counters' time, not the snapshots'.
    let own: Vec<(&VdevRates, f64)> = items.iter().map(|(v, _)| (*v, v.seconds)).collect();
    let items = own.as_slice();
    let mut v = items.last().expect("a group is never empty").0.clone();
    let tw = |f: fn(&VdevRates) -> f64| time_weighted(items, f);
    let ns = |value: fn(&VdevRates) -> Option<u64>, ops: fn(&VdevRates) -> f64| {
        per_op(items, |v| value(v).map(|n| n as f64), ops).map(|n| n.round() as u64)
    };
    let (r, w) = (
        |v: &VdevRates| v.read_ops_per_s,
        |v: &VdevRates| v.write_ops_per_s,
    );
    v.seconds = items.iter().map(|(_, s)| s).sum();
    v.read_ops_per_s = tw(r);
    v.write_ops_per_s = tw(w);
    v.read_bytes_per_s = tw(|v| v.read_bytes_per_s);
    v.write_bytes_per_s = tw(|v| v.write_bytes_per_s);
    v.total_wait_r = ns(|v| v.total_wait_r, r);
    v.total_wait_w = ns(|v| v.total_wait_w, w);
    v.disk_wait_r = ns(|v| v.disk_wait_r, r);
    v.disk_wait_w = ns(|v| v.disk_wait_w, w);
    v.syncq_wait_r = ns(|v| v.syncq_wait_r, r);
    v.syncq_wait_w = ns(|v| v.syncq_wait_w, w);
    v.asyncq_wait_r = ns(|v| v.asyncq_wait_r, r);
    v.asyncq_wait_w = ns(|v| v.asyncq_wait_w, w);
    v.scrub_wait = ns(|v| v.scrub_wait, |_| 1.0);
    v.trim_wait = ns(|v| v.trim_wait, |_| 1.0);
    let sum = |f: fn(&VdevRates) -> Option<u64>| {
        items
            .iter()
            .filter_map(|(v, _)| f(v))
            .reduce(|a, b| a.saturating_add(b))
    };
    v.new_errors.read = sum(|v| v.new_errors.read);
    v.new_errors.write = sum(|v| v.new_errors.write);
    v.new_errors.checksum = sum(|v| v.new_errors.checksum);
    v.new_errors.slow_ios = sum(|v| v.new_errors.slow_ios);
    v
}

fn add_deltas<'a>(maps: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut sum: BTreeMap<String, u64> = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            let e = sum.entry(k.clone()).or_default();
            *e = e.saturating_add(*v);
        }
    }
    sum
}

fn dataset(items: &[(&DatasetRates, f64)]) -> DatasetRates {
    let mut d = items.last().expect("a group is never empty").0.clone();
    let tw = |f: fn(&DatasetRates) -> f64| time_weighted(items, f);
    d.reads_per_s = tw(|d| d.reads_per_s);
    d.writes_per_s = tw(|d| d.writes_per_s);
    d.read_bytes_per_s = tw(|d| d.read_bytes_per_s);
    d.written_bytes_per_s = tw(|d| d.written_bytes_per_s);
    d.zil = add_deltas(items.iter().map(|(d, _)| &d.zil));
    d
}

fn pool(items: &[(&PoolRates, f64)]) -> PoolRates {
    let mut p = items.last().expect("a group is never empty").0.clone();
    p.datasets = merged(items, |p| &p.datasets, |d| d.objset.as_str(), dataset);
    p.vdevs = merged(items, |p| &p.vdevs, |v| v.subject.as_str(), vdev);
    p
}

fn net(items: &[(&NetRates, f64)]) -> NetRates {
    let mut n = items.last().expect("a group is never empty").0.clone();
    let tw = |f: fn(&NetRates) -> f64| time_weighted(items, f);
    n.rx_bytes_per_s = tw(|n| n.rx_bytes_per_s);
    n.tx_bytes_per_s = tw(|n| n.tx_bytes_per_s);
    n.rx_packets_per_s = tw(|n| n.rx_packets_per_s);
    n.tx_packets_per_s = tw(|n| n.tx_packets_per_s);
    n.errors_per_s = tw(|n| n.errors_per_s);
    n
}

/// `parts` (the stretches of one window, in time order) as one sample: its `start` the first
/// stretch's, its `end` and `snapshot` the last's, its `interval` the time they cover
/// together. One part is returned as it is; `None` for none.
pub fn combine(mut parts: Vec<Sample>) -> Option<Sample> {
    if parts.len() <= 1 {
        return parts.pop();
    }
    let weighted = |f: &dyn Fn(&Sample) -> bool| -> f64 {
        parts.iter().filter(|s| f(s)).map(|s| s.interval).sum()
    };
    let mut whole = parts.last().expect("two or more").clone();
    whole.start = parts[0].start;
    whole.interval = parts.iter().map(|s| s.interval).sum();
    let samples: Vec<(&Sample, f64)> = parts.iter().map(|s| (s, s.interval)).collect();
    whole.disks = merged(&samples, |s| &s.disks, |d| d.name.as_str(), disk);
    whole.pools = merged(&samples, |s| &s.pools, |p| p.name.as_str(), pool);
    whole.net = merged(&samples, |s| &s.net, |n| n.name.as_str(), net);
    whole.arc = whole.arc.is_some().then(|| {
        ArcRates::from_deltas(
            add_deltas(
                parts
                    .iter()
                    .filter_map(|s| s.arc.as_ref().map(|a| &a.deltas)),
            ),
            weighted(&|s| s.arc.is_some()),
        )
    });
    whole.zil = whole.zil.is_some().then(|| {
        ZilRates::from_deltas(
            add_deltas(
                parts
                    .iter()
                    .filter_map(|s| s.zil.as_ref().map(|z| &z.deltas)),
            ),
            weighted(&|s| s.zil.is_some()),
        )
    });
    let cpus: Vec<(&CpuRates, f64)> = parts
        .iter()
        .filter_map(|s| Some((s.cpu.as_ref()?, s.interval)))
        .collect();
    whole.cpu = whole.cpu.map(|mut c| {
        c.busy_pct = time_weighted(&cpus, |c| c.busy_pct);
        c.iowait_pct = mean(&cpus, |c| c.iowait_pct);
        c
    });
    let mut resets: Vec<String> = parts.iter().flat_map(|s| s.resets.clone()).collect();
    resets.sort();
    resets.dedup();
    whole.resets = resets;
    Some(whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(interval: f64, r_s: f64, r_await: Option<f64>) -> Sample {
        Sample {
            interval,
            disks: vec![DiskRates {
                name: "sda".into(),
                r_s,
                r_await,
                util: r_s,
                ..DiskRates::default()
            }],
            ..Sample::default()
        }
    }

    #[test]
    fn rates_are_means_over_time_and_latencies_over_operations() {
        // 10 s at 100 r/s (1000 reads of 2 ms) and 30 s at 20 r/s (600 reads of 10 ms):
        // 1600 reads in 40 s, (1000·2 + 600·10) / 1600 = 5 ms.
        let whole = combine(vec![
            part(10.0, 100.0, Some(2.0)),
            part(30.0, 20.0, Some(10.0)),
        ])
        .unwrap();
        assert_eq!(whole.interval, 40.0);
        let d = &whole.disks[0];
        assert_eq!(d.r_s, 40.0);
        assert_eq!(d.r_await, Some(5.0));
        assert_eq!(d.util, 40.0);
    }
}
