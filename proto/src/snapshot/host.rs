//! The host around ZFS: identity, CPU, memory, network.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    #[default]
    Linux,
    Freebsd,
}

impl Os {
    pub fn as_str(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Freebsd => "freebsd",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostIdentity {
    pub hostname: String,
    pub os: Os,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The ZFS module version (`/sys/module/zfs/version`, `vfs.zfs.version.module`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_version: Option<String>,
}

/// Aggregate CPU time in clock ticks since boot (Linux `/proc/stat` `cpu` line, FreeBSD
/// `kern.cp_time`). Fields one kernel lacks are `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    /// Linux only; time idle while I/O was outstanding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowait: Option<u64>,
    /// Hardware interrupts (Linux `irq`, FreeBSD `intr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<u64>,
    /// Ticks per second of these counters when the kernel says: FreeBSD's `stathz`
    /// (`kern.clockrate`). Linux's are USER_HZ, 100 by its ABI (proc(5)), and left `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks_per_second: Option<u32>,
}

impl CpuTimes {
    pub fn total(&self) -> u64 {
        self.busy() + self.idle_total()
    }

    /// Ticks spent doing work: everything but idle and iowait.
    pub fn busy(&self) -> u64 {
        [
            self.user,
            self.nice,
            self.system,
            self.irq.unwrap_or(0),
            self.softirq.unwrap_or(0),
            self.steal.unwrap_or(0),
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
    }

    pub fn idle_total(&self) -> u64 {
        self.idle.saturating_add(self.iowait.unwrap_or(0))
    }
}

/// Memory in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub total: u64,
    pub free: u64,
    /// Linux `MemAvailable` (3.14+); on FreeBSD free + inactive + laundry-free estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_free: Option<u64>,
}

/// Counters of one network interface since it appeared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetInterface {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errors: u64,
    pub rx_dropped: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub tx_dropped: u64,
}
