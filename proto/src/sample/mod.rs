//! Two snapshots turned into deltas and per-second rates.
//!
//! [`Sample::between`] is the only constructor; [`SampleStream`] makes the samples of a
//! series of snapshots with it. Rates are over the interval between the two
//! snapshots: the monotonic clock when both have one (live), else `taken_at` (captures).
//! A counter that went backwards is a reset (module reload, device re-attached, `iostats`
//! written to): that object has no rates for this interval and the reset is named in
//! [`Sample::resets`], so no rate is ever negative or absurd.

mod arc;
mod disk;
mod host;
mod parts;
mod pool;
mod shared;
mod stream;
mod vdev;

pub use arc::{ArcRates, ZilRates};
pub use disk::DiskRates;
pub use host::{CpuRates, NetRates};
pub use parts::PartEncoder;
pub use pool::{DatasetRates, PoolRates};
pub use shared::SharedSnapshot;
pub use stream::{Pairing, SampleStream};
pub use vdev::{NewErrors, VdevRates, histogram_average, pool_vdev_rates, vdev_rates};

use crate::Snapshot;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

/// `items` by key, the first of each key kept (what a linear `find` returns): the previous
/// snapshot's objects are looked up this way, so that a sample is linear in disks and vdevs.
fn first_by_key<'a, T: 'a, K: Hash + Eq>(
    items: impl IntoIterator<Item = &'a T>,
    key: impl Fn(&'a T) -> K,
) -> HashMap<K, &'a T> {
    let mut map = HashMap::new();
    for item in items {
        map.entry(key(item)).or_insert(item);
    }
    map
}

/// What plugins receive every interval: the newest absolute values and the rates since the
/// previous snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// `taken_at` of the earlier snapshot, Unix seconds.
    pub start: f64,
    /// `taken_at` of the later snapshot, Unix seconds.
    pub end: f64,
    /// Seconds between the two snapshots.
    pub interval: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arc: Option<ArcRates>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zil: Option<ZilRates>,
    #[serde(default)]
    pub pools: Vec<PoolRates>,
    #[serde(default)]
    pub disks: Vec<DiskRates>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuRates>,
    #[serde(default)]
    pub net: Vec<NetRates>,
    /// Objects whose counters went backwards in this interval, and so have no rates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resets: Vec<String>,
    /// The later snapshot: absolute values (sizes, states, configuration), shared with
    /// whoever took it rather than copied.
    pub snapshot: SharedSnapshot,
}

/// Why two snapshots cannot make a sample.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleError {
    /// The later snapshot is not later: out-of-order captures, or a clock that jumped back.
    NonPositiveInterval { seconds: f64 },
    /// Captures from two different systems were paired.
    OsMismatch,
}

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleError::NonPositiveInterval { seconds } => write!(
                f,
                "the second snapshot is not later than the first ({seconds:.3} s apart): \
                 captures out of order or the clock went back"
            ),
            SampleError::OsMismatch => {
                write!(f, "the two snapshots come from different operating systems")
            }
        }
    }
}

impl std::error::Error for SampleError {}

impl Sample {
    /// The sample over the interval from `prev` to `cur`.
    pub fn between(prev: &Snapshot, cur: &Snapshot) -> Result<Sample, SampleError> {
        Sample::following(prev, Arc::new(cur.clone()))
    }

    /// [`Sample::between`] `prev` and `cur`, sharing `cur` instead of copying it: what the
    /// agent and every series reader use, since they keep the snapshot anyway.
    pub fn following(prev: &Snapshot, cur: Arc<Snapshot>) -> Result<Sample, SampleError> {
        if prev.host.os != cur.host.os {
            return Err(SampleError::OsMismatch);
        }
        let interval = match (prev.monotonic, cur.monotonic) {
            (Some(a), Some(b)) => b - a,
            _ => cur.taken_at - prev.taken_at,
        };
        if !(interval > 0.0 && interval.is_finite()) {
            return Err(SampleError::NonPositiveInterval { seconds: interval });
        }
        let mut resets = Vec::new();
        let arc = arc::arc_rates(prev, &cur, interval, &mut resets);
        let zil = arc::zil_rates(prev, &cur, interval, &mut resets);
        let pools = pool::pool_rates(prev, &cur, interval, &mut resets);
        let disks = disk::disk_rates(prev, &cur, interval, &mut resets);
        let cpu = host::cpu_rates(prev, &cur);
        let net = host::net_rates(prev, &cur, interval, &mut resets);
        Ok(Sample {
            start: prev.taken_at,
            end: cur.taken_at,
            interval,
            arc,
            zil,
            pools,
            disks,
            cpu,
            net,
            resets,
            snapshot: cur.into(),
        })
    }

    pub fn disk(&self, name: &str) -> Option<&DiskRates> {
        self.disks.iter().find(|d| d.name == name)
    }
}

#[cfg(test)]
mod tests;
