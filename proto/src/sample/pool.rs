//! Per-pool and per-dataset rates from the pool kstats.

use crate::Snapshot;
use crate::counter::kstat_deltas;
use crate::snapshot::{DatasetKstats, Pool};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolRates {
    pub name: String,
    #[serde(default)]
    pub datasets: Vec<DatasetRates>,
    /// Every vdev with statistics: the root (subject = pool name), then each top-level vdev
    /// and its children. Empty when the pool config could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vdevs: Vec<super::VdevRates>,
}

/// Operations at the ZPL/zvol layer of one dataset (`objset-*`): what applications asked for,
/// before the ARC.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetRates {
    pub objset: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    pub read_bytes_per_s: f64,
    pub written_bytes_per_s: f64,
    /// Delta of every `zil_*` row over the interval (OpenZFS 2.2+ keeps the ZIL counters per
    /// dataset as well as host-wide); empty when the kernel has none.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::sorted_map::deserialize"
    )]
    pub zil: BTreeMap<String, u64>,
}

impl DatasetRates {
    /// Delta of one `zil_*` row, as [`super::ZilRates::delta`].
    pub fn zil_delta(&self, name: &str) -> Option<u64> {
        self.zil.get(name).copied()
    }
}

pub(super) fn pool_rates(
    prev: &Snapshot,
    cur: &Snapshot,
    itv: f64,
    resets: &mut Vec<String>,
) -> Vec<PoolRates> {
    cur.pools
        .iter()
        .filter_map(|pool| {
            let before = prev.pool(&pool.name)?;
            let vdevs = match (&before.config, &pool.config) {
                (Some(a), Some(b)) => {
                    super::pool_vdev_rates(&pool.name, Some(&a.root), &b.root, resets)
                }
                _ => Vec::new(),
            };
            Some(PoolRates {
                name: pool.name.clone(),
                datasets: dataset_rates(before, pool, itv, resets),
                vdevs,
            })
        })
        .collect()
}

fn dataset_rates(prev: &Pool, cur: &Pool, itv: f64, resets: &mut Vec<String>) -> Vec<DatasetRates> {
    let mut out = Vec::new();
    let before_by_objset = super::first_by_key(&prev.datasets, |d| d.objset.as_str());
    for ds in &cur.datasets {
        let Some(&before) = before_by_objset.get(ds.objset.as_str()) else {
            continue;
        };
        match one_dataset(before, ds, itv) {
            Some(r) => out.push(r),
            None => resets.push(format!(
                "dataset {}",
                ds.name.as_deref().unwrap_or(&ds.objset)
            )),
        }
    }
    out
}

fn one_dataset(a: &DatasetKstats, b: &DatasetKstats, itv: f64) -> Option<DatasetRates> {
    const OPS: [&str; 4] = ["reads", "writes", "nread", "nwritten"];
    // The objset kstat's counters reset together (the dataset destroyed and re-created).
    let mut deltas = kstat_deltas(&a.counters, &b.counters, |n| {
        OPS.contains(&n) || n.starts_with("zil_")
    })?;
    let mut rate = |n: &str| Some(deltas.remove(n)? as f64 / itv);
    Some(DatasetRates {
        objset: b.objset.clone(),
        name: b.name.clone(),
        reads_per_s: rate("reads")?,
        writes_per_s: rate("writes")?,
        read_bytes_per_s: rate("nread")?,
        written_bytes_per_s: rate("nwritten")?,
        zil: deltas,
    })
}
