//! The sample a plugin receives when it declared parts it does not read (plugin ABI 1.1,
//! [`crate::abi::PluginDescriptor::unread`]).
//!
//! [`Sample::without`] says what each part is: the sample with those parts left out, which
//! serde encodes as the plugin receives it. [`PartEncoder`] makes the same bytes without
//! copying or encoding a part twice: the agent sends one sample to every plugin in as many
//! variants as there are distinct sets of unread parts (five for the shipped checks), and the
//! large parts (the disks, the vdev trees, the ARC's rows, the rates) are each encoded once
//! and copied into every variant that has them.

use super::Sample;
use crate::abi::{
    PART_ARC, PART_DATASETS, PART_DISK_RATES, PART_HOST_RATES, PART_POOL_CONFIGS, PART_POOL_RATES,
    PART_SNAPSHOT_DISKS, PART_TXGS, PART_VDEV_HISTOGRAMS, PART_VDEV_RAW_STATS,
};
use crate::snapshot::{Vdev, VdevStats};
use serde::Serialize;

impl Sample {
    /// This sample without the `PART_*` parts in `unread`: each is left empty (absent on the
    /// wire), the rest unchanged. Unknown bits are ignored.
    pub fn without(&self, unread: u64) -> Sample {
        let has = |part: u64| unread & part != 0;
        let mut s = Sample {
            start: self.start,
            end: self.end,
            interval: self.interval,
            arc: if has(PART_ARC) {
                None
            } else {
                self.arc.clone()
            },
            zil: self.zil.clone(),
            pools: if has(PART_POOL_RATES) {
                Vec::new()
            } else {
                self.pools.clone()
            },
            disks: if has(PART_DISK_RATES) {
                Vec::new()
            } else {
                self.disks.clone()
            },
            cpu: if has(PART_HOST_RATES) { None } else { self.cpu },
            net: if has(PART_HOST_RATES) {
                Vec::new()
            } else {
                self.net.clone()
            },
            resets: self.resets.clone(),
            snapshot: crate::Snapshot {
                taken_at: self.snapshot.taken_at,
                monotonic: self.snapshot.monotonic,
                boot_time: self.snapshot.boot_time,
                host: self.snapshot.host.clone(),
                zfs_loaded: self.snapshot.zfs_loaded,
                arc: if has(PART_ARC) {
                    None
                } else {
                    self.snapshot.arc.clone()
                },
                zil: self.snapshot.zil.clone(),
                pools: Vec::new(),
                tunables: self.snapshot.tunables.clone(),
                disks: Vec::new(),
                cpu: None,
                memory: self.snapshot.memory,
                net: Vec::new(),
                issues: self.snapshot.issues.clone(),
            }
            .into(),
        };
        let snap = &self.snapshot;
        if !has(PART_SNAPSHOT_DISKS) {
            s.snapshot.disks = snap.disks.clone();
        }
        if !has(PART_HOST_RATES) {
            s.snapshot.net = snap.net.clone();
            s.snapshot.cpu = snap.cpu;
        }
        s.snapshot.pools = pools_without(&snap.pools, unread);
        s
    }
}

/// `pools` (a snapshot's) without the parts in `unread`: txgs, datasets, the config or, in
/// it, the vdevs' histograms and raw stats.
pub(crate) fn pools_without(
    pools: &[crate::snapshot::Pool],
    unread: u64,
) -> Vec<crate::snapshot::Pool> {
    let has = |part: u64| unread & part != 0;
    pools
        .iter()
        .map(|p| crate::snapshot::Pool {
            name: p.name.clone(),
            state: p.state.clone(),
            guid: p.guid,
            created_at: p.created_at,
            iostats: p.iostats.clone(),
            io: p.io,
            txgs: if has(PART_TXGS) {
                Vec::new()
            } else {
                p.txgs.clone()
            },
            config: p
                .config
                .as_ref()
                .filter(|_| !has(PART_POOL_CONFIGS))
                .map(|c| crate::snapshot::PoolConfig {
                    error: c.error,
                    health: c.health.clone(),
                    altroot: c.altroot.clone(),
                    scan: c.scan.clone(),
                    error_count: c.error_count,
                    loaded_at: c.loaded_at,
                    root: vdev_without(&c.root, unread),
                }),
            datasets: if has(PART_DATASETS) {
                Vec::new()
            } else {
                p.datasets.clone()
            },
        })
        .collect()
}

/// `v` and its children without the parts in `unread`, copied field by field so that what
/// is left out (a leaf's ten latency histograms, the raw `vdev_stats` array) is never
/// copied at all: this runs once per distinct set of parts the plugins leave out, every
/// sample.
fn vdev_without(v: &Vdev, unread: u64) -> Vdev {
    let has = |part: u64| unread & part != 0;
    Vdev {
        name: v.name.clone(),
        vdev_type: v.vdev_type.clone(),
        class: v.class,
        guid: v.guid,
        id: v.id,
        path: v.path.clone(),
        whole_disk: v.whole_disk,
        redundancy: v.redundancy,
        ashift: v.ashift,
        state: v.state.clone(),
        aux: v.aux.clone(),
        stats: v.stats.as_ref().map(|st| {
            if has(PART_VDEV_RAW_STATS) {
                // Every other field is Copy.
                VdevStats {
                    raw: Vec::new(),
                    ..*st
                }
            } else {
                st.clone()
            }
        }),
        histograms: if has(PART_VDEV_HISTOGRAMS) {
            None
        } else {
            v.histograms.clone()
        },
        disk: v.disk.clone(),
        partition: v.partition.clone(),
        children: v.children.iter().map(|c| vdev_without(c, unread)).collect(),
    }
}

/// The MessagePack of one sample for any set of unread parts, byte for byte what
/// `rmp_serde::to_vec_named(&sample.without(unread))` gives (a test holds the two equal for
/// every set of parts), with each large part encoded once per sample.
///
/// It writes the two outer maps (`Sample`, `Snapshot`) itself, so a field added to either
/// must be added here too; the test fails until it is.
pub struct PartEncoder<'a> {
    sample: &'a Sample,
    /// Encoded large parts, by [`Piece`].
    pieces: Vec<(Piece, Vec<u8>)>,
}

/// A large part of the sample, encoded once: the snapshot's pools per set of the parts
/// inside them that are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    ArcRates,
    PoolRates,
    DiskRates,
    SnapshotArc,
    SnapshotDisks,
    SnapshotPools { unread: u64 },
}

/// The parts that live inside `snapshot.pools`.
const POOL_PARTS: u64 =
    PART_TXGS | PART_VDEV_HISTOGRAMS | PART_VDEV_RAW_STATS | PART_DATASETS | PART_POOL_CONFIGS;

/// The empty list a part left out encodes as.
const EMPTY_LIST: [u8; 1] = [0x90];

impl<'a> PartEncoder<'a> {
    pub fn new(sample: &'a Sample) -> Self {
        PartEncoder {
            sample,
            pieces: Vec::new(),
        }
    }

    /// The sample without the parts in `unread` (unknown bits ignored), encoded.
    pub fn encode(&mut self, unread: u64) -> Vec<u8> {
        let has = |part: u64| unread & part != 0;
        let s = self.sample;
        let mut out = Vec::with_capacity(16 * 1024);
        let arc = s.arc.as_ref().filter(|_| !has(PART_ARC));
        let cpu = s.cpu.as_ref().filter(|_| !has(PART_HOST_RATES));
        let optional = [
            arc.is_some(),
            s.zil.is_some(),
            cpu.is_some(),
            !s.resets.is_empty(),
        ];
        map_len(&mut out, 7 + optional.iter().filter(|o| **o).count());
        field(&mut out, "start", &s.start);
        field(&mut out, "end", &s.end);
        field(&mut out, "interval", &s.interval);
        if arc.is_some() {
            self.piece(&mut out, "arc", Piece::ArcRates);
        }
        if let Some(zil) = &s.zil {
            field(&mut out, "zil", zil);
        }
        if has(PART_POOL_RATES) {
            raw_field(&mut out, "pools", &EMPTY_LIST);
        } else {
            self.piece(&mut out, "pools", Piece::PoolRates);
        }
        if has(PART_DISK_RATES) {
            raw_field(&mut out, "disks", &EMPTY_LIST);
        } else {
            self.piece(&mut out, "disks", Piece::DiskRates);
        }
        if let Some(cpu) = cpu {
            field(&mut out, "cpu", cpu);
        }
        if has(PART_HOST_RATES) {
            raw_field(&mut out, "net", &EMPTY_LIST);
        } else {
            field(&mut out, "net", &s.net);
        }
        if !s.resets.is_empty() {
            field(&mut out, "resets", &s.resets);
        }
        key(&mut out, "snapshot");
        self.snapshot(&mut out, unread);
        out
    }

    fn snapshot(&mut self, out: &mut Vec<u8>, unread: u64) {
        let has = |part: u64| unread & part != 0;
        let snap = &self.sample.snapshot;
        let arc = snap.arc.is_some() && !has(PART_ARC);
        let cpu = snap.cpu.as_ref().filter(|_| !has(PART_HOST_RATES));
        let optional = [
            snap.monotonic.is_some(),
            snap.boot_time.is_some(),
            arc,
            snap.zil.is_some(),
            cpu.is_some(),
            snap.memory.is_some(),
            !snap.issues.is_empty(),
        ];
        map_len(out, 7 + optional.iter().filter(|o| **o).count());
        field(out, "taken_at", &snap.taken_at);
        if let Some(monotonic) = &snap.monotonic {
            field(out, "monotonic", monotonic);
        }
        if let Some(boot_time) = &snap.boot_time {
            field(out, "boot_time", boot_time);
        }
        field(out, "host", &snap.host);
        field(out, "zfs_loaded", &snap.zfs_loaded);
        if arc {
            self.piece(out, "arc", Piece::SnapshotArc);
        }
        if let Some(zil) = &snap.zil {
            field(out, "zil", zil);
        }
        self.piece(
            out,
            "pools",
            Piece::SnapshotPools {
                unread: unread & POOL_PARTS,
            },
        );
        field(out, "tunables", &snap.tunables);
        if has(PART_SNAPSHOT_DISKS) {
            raw_field(out, "disks", &EMPTY_LIST);
        } else {
            self.piece(out, "disks", Piece::SnapshotDisks);
        }
        if let Some(cpu) = cpu {
            field(out, "cpu", cpu);
        }
        if let Some(memory) = &snap.memory {
            field(out, "memory", memory);
        }
        if has(PART_HOST_RATES) {
            raw_field(out, "net", &EMPTY_LIST);
        } else {
            field(out, "net", &snap.net);
        }
        if !snap.issues.is_empty() {
            field(out, "issues", &snap.issues);
        }
    }

    /// Writes `name` and the piece, encoding it the first time.
    fn piece(&mut self, out: &mut Vec<u8>, name: &str, piece: Piece) {
        let bytes = match self.pieces.iter().position(|(p, _)| *p == piece) {
            Some(i) => &self.pieces[i].1,
            None => {
                let s = self.sample;
                let mut bytes = Vec::new();
                match piece {
                    Piece::ArcRates => value(&mut bytes, &s.arc),
                    Piece::PoolRates => value(&mut bytes, &s.pools),
                    Piece::DiskRates => value(&mut bytes, &s.disks),
                    Piece::SnapshotArc => value(&mut bytes, &s.snapshot.arc),
                    Piece::SnapshotDisks => value(&mut bytes, &s.snapshot.disks),
                    Piece::SnapshotPools { unread: 0 } => value(&mut bytes, &s.snapshot.pools),
                    Piece::SnapshotPools { unread } => {
                        value(&mut bytes, &pools_without(&s.snapshot.pools, unread))
                    }
                }
                self.pieces.push((piece, bytes));
                &self.pieces[self.pieces.len() - 1].1
            }
        };
        raw_field(out, name, bytes);
    }
}

/// The header of a map of `len` entries, in the smallest form, as rmp_serde writes it: a
/// fixmap up to 15 entries (the two structs written here have 11 and 13 fields), else map 16.
fn map_len(out: &mut Vec<u8>, len: usize) {
    match u8::try_from(len) {
        Ok(small) if small < 16 => out.push(0x80 | small),
        _ => {
            out.push(0xde);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
    }
}

fn key(out: &mut Vec<u8>, name: &str) {
    value(out, name);
}

/// One value as `rmp_serde`'s named encoding writes it inside a struct. Writing into a Vec
/// cannot fail, and the sample's types always serialize.
fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = rmp_serde::encode::write_named(out, v);
}

fn field<T: Serialize + ?Sized>(out: &mut Vec<u8>, name: &str, v: &T) {
    key(out, name);
    value(out, v);
}

fn raw_field(out: &mut Vec<u8>, name: &str, encoded: &[u8]) {
    key(out, name);
    out.extend_from_slice(encoded);
}

#[cfg(test)]
mod tests {
    /// The two map headers of the MessagePack specification (fixmap `1000xxxx`, map 16
    /// `0xde` and a big-endian count), at the boundary between them.
    #[test]
    fn map_headers_follow_the_specification() {
        for (len, want) in [
            (0, vec![0x80]),
            (15, vec![0x8f]),
            (16, vec![0xde, 0x00, 0x10]),
            (300, vec![0xde, 0x01, 0x2c]),
        ] {
            let mut out = Vec::new();
            super::map_len(&mut out, len);
            assert_eq!(out, want, "{len} entries");
        }
    }
}
