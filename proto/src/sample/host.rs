//! CPU and network rates.

use crate::Snapshot;
use crate::counter::{delta, ratio};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuRates {
    /// Share of CPU time spent working, 0–100, over all CPUs.
    pub busy_pct: f64,
    /// Share idle while I/O was outstanding (Linux), 0–100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowait_pct: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetRates {
    pub name: String,
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    pub rx_packets_per_s: f64,
    pub tx_packets_per_s: f64,
    /// Errors and drops together, per second, both directions.
    pub errors_per_s: f64,
}

/// Errors and drops in both directions; saturating, as the inputs are the kernel's.
fn faults(n: &crate::snapshot::NetInterface) -> u64 {
    [n.rx_errors, n.tx_errors, n.rx_dropped, n.tx_dropped]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
}

pub(super) fn cpu_rates(prev: &Snapshot, cur: &Snapshot) -> Option<CpuRates> {
    let (a, b) = (prev.cpu?, cur.cpu?);
    let total = delta(a.total(), b.total())? as f64;
    let busy = delta(a.busy(), b.busy())? as f64;
    Some(CpuRates {
        busy_pct: ratio(busy, total)? * 100.0,
        iowait_pct: match (a.iowait, b.iowait) {
            (Some(x), Some(y)) => ratio(delta(x, y)? as f64, total).map(|r| r * 100.0),
            _ => None,
        },
    })
}

pub(super) fn net_rates(
    prev: &Snapshot,
    cur: &Snapshot,
    itv: f64,
    resets: &mut Vec<String>,
) -> Vec<NetRates> {
    let mut out = Vec::new();
    let before_by_name = super::first_by_key(&prev.net, |n| n.name.as_str());
    for nic in &cur.net {
        let Some(&a) = before_by_name.get(nic.name.as_str()) else {
            continue;
        };
        let rate = |x: u64, y: u64| delta(x, y).map(|d| d as f64 / itv);
        let rates = (|| {
            Some(NetRates {
                name: nic.name.clone(),
                rx_bytes_per_s: rate(a.rx_bytes, nic.rx_bytes)?,
                tx_bytes_per_s: rate(a.tx_bytes, nic.tx_bytes)?,
                rx_packets_per_s: rate(a.rx_packets, nic.rx_packets)?,
                tx_packets_per_s: rate(a.tx_packets, nic.tx_packets)?,
                errors_per_s: rate(faults(a), faults(nic))?,
            })
        })();
        match rates {
            Some(r) => out.push(r),
            None => resets.push(format!("interface {}", nic.name)),
        }
    }
    out
}
