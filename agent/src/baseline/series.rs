//! The window's course over time: one point per interval of the figures the page charts.
//! Only these few numbers per interval are kept, so that a long window stays small.

use super::figures::kind;
use serde::{Deserialize, Serialize};
use zpulse_proto::Sample;

/// Every chart's data; index `i` of every vector is interval `i` (ending at `t[i]`).
/// A value the interval did not have (a reset, no I/O of that kind) is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The window's start, Unix seconds: where `t` counts from.
    #[serde(default)]
    pub start: f64,
    /// Seconds from the window's start to the end of each interval (clock steps left out).
    pub t: Vec<f64>,
    pub disks: Vec<DiskSeries>,
    pub arc: ArcSeries,
    pub zil: ZilSeries,
    /// Per pool and class (`pool/class`): mean read and write latency, ms.
    pub classes: Vec<ClassSeries>,
    /// Per pool: allocated share, percent.
    pub pools: Vec<Named>,
    pub cpu_busy_pct: Vec<Option<f64>>,
    /// Per interface: received + sent, MB/s.
    pub net: Vec<Named>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskSeries {
    pub name: String,
    pub kind: String,
    pub util: Vec<Option<f64>>,
    pub await_ms: Vec<Option<f64>>,
    pub r_s: Vec<Option<f64>>,
    pub w_s: Vec<Option<f64>>,
    pub mb_s: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArcSeries {
    /// Bytes.
    pub size: Vec<Option<f64>>,
    pub target: Vec<Option<f64>>,
    pub max: Vec<Option<f64>>,
    pub data: Vec<Option<f64>>,
    pub metadata: Vec<Option<f64>>,
    /// Percent.
    pub hit_pct: Vec<Option<f64>>,
    pub ghost_hits_s: Vec<Option<f64>>,
    pub l2_hits_s: Vec<Option<f64>>,
    pub reads_s: Vec<Option<f64>>,
    pub l2_hdr: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZilSeries {
    pub commits_s: Vec<Option<f64>>,
    pub itx_s: Vec<Option<f64>>,
    pub slog_mb_s: Vec<Option<f64>>,
    pub normal_mb_s: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassSeries {
    pub name: String,
    pub read_ms: Vec<Option<f64>>,
    pub write_ms: Vec<Option<f64>>,
    pub read_disk_ms: Vec<Option<f64>>,
    pub write_disk_ms: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Named {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// The entry named `name` of `list`, created (padded with `None` to `len` points) when new.
fn entry<'a, T: Default>(
    list: &'a mut Vec<T>,
    name: &str,
    get: fn(&T) -> &str,
    make: fn(&str) -> T,
) -> &'a mut T {
    match list.iter().position(|x| get(x) == name) {
        Some(i) => &mut list[i],
        None => {
            list.push(make(name));
            list.last_mut().expect("just pushed")
        }
    }
}

/// Pushes `v` as point `i`, padding earlier missing points with `None`.
fn put(values: &mut Vec<Option<f64>>, i: usize, v: Option<f64>) {
    values.resize(i, None);
    values.push(v.filter(|x| x.is_finite()));
}

impl Series {
    /// A point with no values at `t` seconds from the window's start: the lines of every
    /// chart break there (an interval left out of the window).
    pub fn push_break(&mut self, t: f64) {
        self.t.push(t);
    }

    /// Adds the interval `sample`; `start` is the window's start.
    pub fn push(&mut self, start: f64, sample: &Sample) {
        let i = self.t.len();
        self.t.push(sample.end - start);
        for d in sample
            .disks
            .iter()
            .filter(|d| d.whole_disk.is_none() && !d.virtual_device)
        {
            let s = entry(
                &mut self.disks,
                &d.name,
                |s| &s.name,
                |n| DiskSeries {
                    name: n.to_owned(),
                    ..DiskSeries::default()
                },
            );
            s.kind = kind(d.rotational).to_owned();
            put(&mut s.util, i, Some(d.util));
            put(&mut s.await_ms, i, d.await_ms);
            put(&mut s.r_s, i, Some(d.r_s));
            put(&mut s.w_s, i, Some(d.w_s));
            put(&mut s.mb_s, i, Some(d.bytes_per_s() / 1e6));
        }
        if let Some(stats) = &sample.snapshot.arc {
            let f = |v: Option<u64>| v.map(|x| x as f64);
            let a = &mut self.arc;
            put(&mut a.size, i, f(stats.size()));
            put(&mut a.target, i, f(stats.c()));
            put(&mut a.max, i, f(stats.c_max()));
            put(&mut a.data, i, f(stats.data_size()));
            put(&mut a.metadata, i, f(stats.arc_meta_used()));
            put(&mut a.l2_hdr, i, f(stats.l2_hdr_size()));
        }
        if let Some(r) = &sample.arc {
            let a = &mut self.arc;
            put(&mut a.hit_pct, i, r.hit_ratio.map(|h| h * 100.0));
            put(&mut a.ghost_hits_s, i, r.ghost_hits_per_s);
            put(&mut a.reads_s, i, Some(r.reads_per_s));
            put(
                &mut a.l2_hits_s,
                i,
                r.delta("l2_hits").map(|h| h as f64 / sample.interval),
            );
        }
        if let Some(z) = &sample.zil {
            let s = &mut self.zil;
            put(&mut s.commits_s, i, Some(z.commits_per_s));
            put(&mut s.itx_s, i, Some(z.itx_per_s));
            put(&mut s.slog_mb_s, i, Some(z.slog_bytes_per_s / 1e6));
            put(&mut s.normal_mb_s, i, Some(z.normal_bytes_per_s / 1e6));
        }
        for c in super::figures::classes(sample) {
            let s = entry(
                &mut self.classes,
                &c.subject,
                |s| &s.name,
                |n| ClassSeries {
                    name: n.to_owned(),
                    ..ClassSeries::default()
                },
            );
            put(&mut s.read_ms, i, c.read_total_ms);
            put(&mut s.write_ms, i, c.write_total_ms);
            put(&mut s.read_disk_ms, i, c.read_disk_ms);
            put(&mut s.write_disk_ms, i, c.write_disk_ms);
        }
        for p in super::figures::pools(sample) {
            let s = entry(&mut self.pools, &p.name, |s| &s.name, named);
            put(&mut s.values, i, p.fill_pct);
        }
        put(&mut self.cpu_busy_pct, i, sample.cpu.map(|c| c.busy_pct));
        for n in super::figures::net(sample) {
            let s = entry(&mut self.net, &n.name, |s| &s.name, named);
            put(&mut s.values, i, Some(n.rx_mb_s + n.tx_mb_s));
        }
    }
}

fn named(name: &str) -> Named {
    Named {
        name: name.to_owned(),
        values: Vec::new(),
    }
}
