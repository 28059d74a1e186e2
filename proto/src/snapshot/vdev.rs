//! A pool's vdev tree as `ZFS_IOC_POOL_STATS` reports it: configuration, space, traffic,
//! errors and latency histograms per vdev, each labelled with its allocation class.

use serde::{Deserialize, Serialize};

/// Where a top-level vdev's space goes (`zpool status` section headings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VdevClass {
    Normal,
    Special,
    Dedup,
    /// Separate intent log (SLOG).
    Log,
    /// L2ARC device.
    Cache,
    Spare,
}

impl VdevClass {
    pub fn as_str(self) -> &'static str {
        match self {
            VdevClass::Normal => "normal",
            VdevClass::Special => "special",
            VdevClass::Dedup => "dedup",
            VdevClass::Log => "log",
            VdevClass::Cache => "cache",
            VdevClass::Spare => "spare",
        }
    }

    /// The subject naming this class of `pool` in findings: `pool/class`, e.g. `tank/log`;
    /// [`Vdev::subject_of`] names the vdevs below it.
    pub fn subject_in(self, pool: &str) -> String {
        [pool, "/", self.as_str()].concat()
    }

    /// The subject naming the top-level vdev `top` of this class: `pool/class/top`, e.g.
    /// `tank/special/mirror-1` (what [`Vdev::subject_of`] gives a top-level vdev, for callers
    /// that hold only its name, such as a disk's [`super::DiskRole`]).
    pub fn top_subject(self, pool: &str, top: &str) -> String {
        // One allocation (checks name several subjects per vdev per sample).
        [pool, "/", self.as_str(), "/", top].concat()
    }
}

/// How many devices of a vdev may fail without losing it. On the wire a map tagged by its
/// first key, `kind`, decoded without buffering ([`super::tagged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Redundancy {
    /// A single device: no redundancy.
    None,
    /// An n-way mirror survives n − 1 failures.
    Mirror { width: u32 },
    /// RAID-Z or dRAID with this parity.
    Parity { parity: u32 },
}

impl super::tagged::TagFirst for Redundancy {
    const TAG: &'static str = "kind";
    const VARIANTS: &'static [&'static str] = &["none", "mirror", "parity"];
    fn variant<'de, A: serde::de::MapAccess<'de>>(
        name: &str,
        rest: A,
    ) -> Option<Result<Self, A::Error>> {
        #[derive(Deserialize)]
        struct Mirror {
            width: u32,
        }
        #[derive(Deserialize)]
        struct Parity {
            parity: u32,
        }
        use serde::de::value::MapAccessDeserializer as Fields;
        Some(match name {
            "none" => super::tagged::skip_rest(rest).map(|()| Redundancy::None),
            "mirror" => Mirror::deserialize(Fields::new(rest))
                .map(|m| Redundancy::Mirror { width: m.width }),
            "parity" => Parity::deserialize(Fields::new(rest))
                .map(|p| Redundancy::Parity { parity: p.parity }),
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for Redundancy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::tagged::deserialize(d)
    }
}

impl Redundancy {
    /// Devices that may fail without data loss.
    pub fn tolerated_failures(self) -> u32 {
        match self {
            Redundancy::None => 0,
            Redundancy::Mirror { width } => width.saturating_sub(1),
            Redundancy::Parity { parity } => parity,
        }
    }
}

/// One vdev and its children.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Vdev {
    /// The name `zpool status` prints: `mirror-0`, `raidz2-1`, `sda`, a file path.
    pub name: String,
    /// `root`, `mirror`, `raidz`, `draid`, `disk`, `file`, `spare`, `replacing`, `hole`, …
    #[serde(rename = "type")]
    pub vdev_type: String,
    /// The class of the top-level vdev this one belongs to (`None` for the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<VdevClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guid: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Device path of a leaf (`/dev/sdc1`, `/dev/disk/by-id/…-part1`, `/dev/gpt/zfs0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// ZFS partitioned the whole disk itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_disk: Option<bool>,
    /// Top-level vdevs: how many failures the vdev survives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redundancy: Option<Redundancy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ashift: Option<u64>,
    /// `ONLINE`, `DEGRADED`, `FAULTED`, `OFFLINE`, `UNAVAIL`, `REMOVED`, `SPLIT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Why it is not healthy (`vdev_aux_t` as text), when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aux: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<VdevStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<LatencyHistograms>,
    /// The kernel disk this leaf lives on (`sdc`, `ada2`), from the join with the disk stats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// The kernel partition of that disk the leaf is (`sdc1`), when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Vdev>,
}

impl Vdev {
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty() && self.vdev_type != "root"
    }

    /// This vdev and every vdev below it, depth first.
    pub fn walk(&self) -> Vec<&Vdev> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(v) = stack.pop() {
            out.push(v);
            stack.extend(v.children.iter().rev());
        }
        out
    }

    /// What a leaf is backed by when it is no disk of its own: a file, a loop device, a
    /// memory disk. Such a vdev has no power-loss guarantee and may not be there at import.
    pub fn virtual_backing(&self) -> Option<String> {
        let path = self.path.as_deref().unwrap_or(&self.name);
        if self.vdev_type == "file" {
            return Some(format!("a file ({path})"));
        }
        let dev = path.strip_prefix("/dev/").unwrap_or(path);
        let disk = self.disk.as_deref().unwrap_or(dev);
        if dev.starts_with("loop") || disk.starts_with("loop") {
            return Some(format!("a loop device ({path})"));
        }
        // FreeBSD memory disks: vnode-backed (a file) or malloc/swap-backed (RAM).
        if dev.starts_with("md") && dev[2..].chars().next().is_some_and(|c| c.is_ascii_digit()) {
            return Some(format!("a memory disk ({path})"));
        }
        if super::is_virtual_disk(dev) || super::is_virtual_disk(disk) {
            return Some(format!("a virtual device ({path})"));
        }
        None
    }

    pub fn leaves(&self) -> Vec<&Vdev> {
        self.walk().into_iter().filter(|v| v.is_leaf()).collect()
    }

    /// `mirror-1: sdc, sdd; sde`: each of `tops` (top-level vdevs) with its leaves, a top that
    /// is a disk itself by its name alone; how a finding describes a class's layout.
    pub fn layout(tops: &[&Vdev]) -> String {
        tops.iter()
            .map(|v| {
                if v.children.is_empty() {
                    v.name.clone()
                } else {
                    let leaves: Vec<&str> = v.leaves().iter().map(|l| l.name.as_str()).collect();
                    format!("{}: {}", v.name, leaves.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The subject naming `v`, which lies in this top-level vdev of `pool`, in findings and
    /// rates: `pool/class/top-level[/vdev]`, e.g. `tank/special/mirror-1/sdc`. Stable across
    /// samples and unique in the pool.
    pub fn subject_of(&self, pool: &str, v: &Vdev) -> String {
        let class = self.class.unwrap_or(VdevClass::Normal);
        if std::ptr::eq(self, v) {
            class.top_subject(pool, &self.name)
        } else {
            [pool, "/", class.as_str(), "/", &self.name, "/", &v.name].concat()
        }
    }
}

/// `vdev_stat_t`, by field. Arrays are indexed by ZIO type: 0 NULL, 1 READ, 2 WRITE, 3 FREE,
/// 4 CLAIM, 5 FLUSH/TRIM.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VdevStats {
    /// ns since the vdev was loaded; `zpool iostat` divides counter deltas by its delta.
    pub timestamp: u64,
    pub alloc: u64,
    pub space: u64,
    pub dspace: u64,
    pub ops: [u64; 6],
    pub bytes: [u64; 6],
    pub read_errors: u64,
    pub write_errors: u64,
    pub checksum_errors: u64,
    /// Percent; top-level only. `None` when the kernel reports it invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<u64>,
    /// Deadman "slow I/O" count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_ios: Option<u64>,
    /// Bytes repaired by self-healing reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_healed: Option<u64>,
    /// Bytes this vdev received from the current or last scan: non-zero on a leaf being
    /// resilvered (`zpool status` prints "(resilvering)") or repaired by a scrub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_processed: Option<u64>,
    /// The ashift the vdev was created with (2.0+; top-level vdevs and leaves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_ashift: Option<u64>,
    /// The device's logical and physical sector sizes as ashifts (2.0+; leaves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_ashift: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_ashift: Option<u64>,
    /// The whole array as the kernel sent it (41, 45, 47 or 48 entries by version).
    pub raw: Vec<u64>,
}

/// Latency histograms from `vdev_stats_ex`: bucket i counts I/Os that took [2^i, 2^(i+1)) ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHistograms {
    /// Queue + device ("total_wait").
    pub total_r: Vec<u64>,
    pub total_w: Vec<u64>,
    /// Device only ("disk_wait").
    pub disk_r: Vec<u64>,
    pub disk_w: Vec<u64>,
    /// Time in the sync and async queues.
    pub syncq_r: Vec<u64>,
    pub syncq_w: Vec<u64>,
    pub asyncq_r: Vec<u64>,
    pub asyncq_w: Vec<u64>,
    pub scrub: Vec<u64>,
    pub trim: Vec<u64>,
}

/// `pool_scan_stat_t` (include/sys/fs/zfs.h): the last or current scrub / resilver. Times are
/// Unix seconds; the `pass_*` fields describe the current pass and are not stored on disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScanStats {
    /// `scrub`, `resilver`, `errorscrub`, or `none`.
    pub function: String,
    /// `scanning`, `finished`, `canceled`, `errorscrubbing`, or `none`.
    pub state: String,
    pub start_time: u64,
    pub end_time: u64,
    pub to_examine: u64,
    pub examined: u64,
    /// Bytes repaired (scrub) or resilvered: what `zpool status` calls "repaired".
    pub processed: u64,
    pub errors: u64,
    /// Bytes issued (the progress `zpool status` reports); absent before 0.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued: Option<u64>,
    /// Bytes examined in this pass (`pss_pass_exam`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_examined: Option<u64>,
    /// Start of this pass (`pss_pass_start`): rates are over the pass, not the scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_start: Option<u64>,
    /// When a paused scrub was paused; 0 when it is not paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_scrub_pause: Option<u64>,
    /// Seconds this pass spent paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_scrub_spent_paused: Option<u64>,
    /// Bytes issued in this pass (`pss_pass_issued`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_issued: Option<u64>,
}

impl ScanStats {
    /// Progress 0–1 of a running scan: issued / to_examine, as `zpool status` computes "% done".
    /// A finished or canceled scan has no progress.
    pub fn progress(&self) -> Option<f64> {
        if !self.is_running() {
            return None;
        }
        crate::counter::ratio(self.issued? as f64, self.to_examine as f64)
    }

    pub fn is_running(&self) -> bool {
        self.state == "scanning"
    }

    pub fn is_finished(&self) -> bool {
        self.state == "finished"
    }

    /// Seconds of this pass that count for its rates at `now`, at least 1 (`zpool status`).
    pub fn pass_seconds(&self, now: u64) -> u64 {
        let start = self.pass_start.unwrap_or(self.start_time);
        now.saturating_sub(start)
            .saturating_sub(self.pass_scrub_spent_paused.unwrap_or(0))
            .max(1)
    }

    /// Issue rate of this pass in bytes/s at `now`.
    pub fn issue_rate(&self, now: u64) -> Option<u64> {
        Some(self.pass_issued? / self.pass_seconds(now))
    }

    /// Seconds left at the current issue rate, when it is known and not zero.
    pub fn seconds_left(&self, now: u64) -> Option<u64> {
        let rate = self.issue_rate(now).filter(|r| *r > 0)?;
        let issued = self.issued?;
        (self.to_examine >= issued).then(|| (self.to_examine - issued) / rate)
    }
}

/// What POOL_STATS says about the pool as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolConfig {
    /// `zc_cookie`: 0 when the pool is healthy, an errno for a faulted pool.
    pub error: u64,
    /// Health of the root vdev, or `SUSPENDED`.
    pub health: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub altroot: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<ScanStats>,
    /// Persistent error log size (approximate): blocks with permanent errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_count: Option<u64>,
    /// When the pool was imported (`initial_load_time`), Unix seconds; absent for a pool
    /// created since boot. With the root vdev's `timestamp` (time since it was opened), a
    /// lower bound of the pool's age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_at: Option<u64>,
    /// The root vdev. Its children are the top-level vdevs of every class, cache and spare
    /// devices included, each with `class` set.
    pub root: Vdev,
}

impl PoolConfig {
    /// Free-space fragmentation of the normal class, percent, as `zpool list` FRAG reports
    /// it (`metaslab_class_fragmentation`, module/zfs/metaslab.c): the top-level vdevs'
    /// fragmentation weighted by their space, in integers. `None` when no vdev reports one.
    pub fn fragmentation(&self) -> Option<u64> {
        let (mut weighted, mut space) = (0u128, 0u128);
        for v in self.class(VdevClass::Normal) {
            let Some(s) = &v.stats else { continue };
            let Some(f) = s.fragmentation else { continue };
            weighted += u128::from(f) * u128::from(s.space);
            space += u128::from(s.space);
        }
        (space > 0).then(|| (weighted / space) as u64)
    }

    /// Top-level vdevs of one class.
    pub fn class(&self, class: VdevClass) -> impl Iterator<Item = &Vdev> {
        self.root
            .children
            .iter()
            .filter(move |v| v.class == Some(class))
    }
}
