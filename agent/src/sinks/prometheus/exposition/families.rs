//! The families of the exposition: every metric the sink exports, said once to an [`Emit`]
//! (the text formats or a Forward metric record). `docs/metrics.md` lists them.

use super::writer::*;
use super::*;
/// Every pool state `zpool status` can print (`zpool_state_to_name`, lib/libzfs/libzfs_pool.c),
/// and SUSPENDED (`zpool_pool_state_to_name`): one gauge each, 1 for the current one.
pub(super) const POOL_STATES: &[&str] = &[
    "ONLINE",
    "DEGRADED",
    "FAULTED",
    "OFFLINE",
    "UNAVAIL",
    "REMOVED",
    "SUSPENDED",
];

/// The family name and HELP of each kstat row (ARC, ZIL, pool `iostats`), made once per
/// row name. A reading has the rows of the one before in the same order unless the kernel
/// module changed, so they are kept by position, each checked against its row name.
#[derive(Debug, Default)]
pub(super) struct KstatFamilies {
    pub(super) arc: RowFamilies,
    pub(super) zil: RowFamilies,
    pub(super) pool: RowFamilies,
}

impl KstatFamilies {
    pub(super) fn restart(&mut self) {
        for rows in [&mut self.arc, &mut self.zil, &mut self.pool] {
            rows.next = 0;
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct RowFamilies {
    /// Each row name with its family's HELP and TYPE as written: a kstat family is written
    /// from here, not looked up among the headers of the last rendering by name and HELP.
    pub(super) rows: Vec<(String, Header)>,
    /// Position of the next row asked for in this rendering.
    pub(super) next: usize,
}

impl RowFamilies {
    /// The family of the next row, `row`: the kept one if the row at this position was
    /// `row` last time, else made and kept.
    pub(super) fn next(&mut self, row: &str, classify: fn(&str) -> Row) -> &Header {
        let i = self.next;
        self.next += 1;
        let family = |row: &str| {
            let r = classify(row);
            (row.to_owned(), Header::new(&r.name, r.kind, &r.help))
        };
        match self.rows.get(i) {
            Some((kept, _)) if kept == row => {}
            Some(_) => self.rows[i] = family(row),
            // Positions are asked for in order, so `i` is the length here.
            None => self.rows.push(family(row)),
        }
        &self.rows[i].1
    }
}

/// Every family that comes from the snapshot, in exposition order.
pub(super) fn snapshot_metrics(
    out: &mut dyn Emit,
    kstat: &mut KstatFamilies,
    snapshot: &Snapshot,
    detail: Detail,
) {
    kstat.restart();
    host(out, snapshot);
    if let Some(arc) = &snapshot.arc {
        kstat_rows(out, &arc.0.fields, &mut kstat.arc, arc_row);
    }
    if let Some(zil) = &snapshot.zil {
        kstat_rows(out, &zil.0.fields, &mut kstat.zil, zil_row);
    }
    pools(out, &mut kstat.pool, snapshot);
    vdevs(out, snapshot, detail);
    datasets(out, snapshot);
    disks(out, snapshot, detail);
    cpu_memory_network(out, snapshot);
}

pub(super) fn host(out: &mut dyn Emit, s: &Snapshot) {
    out.family(
        "zpulse_build_info",
        Type::Gauge,
        "The zpulse build that made these figures, as labels (value 1).",
    );
    out.line(
        "zpulse_build_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("os", std::env::consts::OS),
            ("arch", std::env::consts::ARCH),
        ],
        Value::Int(1),
    );
    out.family(
        "zpulse_host_info",
        Type::Gauge,
        "The host and its ZFS module, as labels (value 1).",
    );
    out.line(
        "zpulse_host_info",
        &[
            ("hostname", &s.host.hostname),
            ("os", s.host.os.as_str()),
            ("kernel", s.host.kernel.as_deref().unwrap_or("")),
            ("zfs_version", s.host.zfs_version.as_deref().unwrap_or("")),
            ("agent_version", env!("CARGO_PKG_VERSION")),
        ],
        Value::Int(1),
    );
    out.family(
        "zpulse_zfs_loaded",
        Type::Gauge,
        "1 when the ZFS kernel module answered, else 0.",
    );
    out.line("zpulse_zfs_loaded", &[], Value::Int(s.zfs_loaded.into()));
    out.family(
        "zpulse_last_sample_timestamp_seconds",
        Type::Gauge,
        "Unix time of the reading these figures come from: time() minus it is how stale they are.",
    );
    out.line(
        "zpulse_last_sample_timestamp_seconds",
        &[],
        Value::Float(s.taken_at),
    );
    out.family(
        "zpulse_source_issues",
        Type::Gauge,
        "Sources that could not be read or parsed in this reading (their figures are absent).",
    );
    out.line(
        "zpulse_source_issues",
        &[],
        Value::Int(s.issues.len() as u64),
    );
}

/// How one kstat row is exposed: family name, type and HELP.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) name: String,
    pub(super) kind: Type,
    pub(super) help: String,
}

/// ARC rows (`arc_stats_t` in module/zfs/arc.c): sizes and limits are gauges in bytes, the
/// rest are event counts that only grow.
pub(super) fn arc_row(row: &str) -> Row {
    const GAUGES: &[&str] = &[
        "hash_elements",
        "hash_elements_max",
        "hash_chains",
        "hash_chain_max",
        "arc_no_grow",
        "l2_log_blk_count",
        "l2_data_to_meta_ratio",
        "meta",
    ];
    // Byte gauges whose names do not say so.
    const BYTES: &[&str] = &[
        "p",
        "c",
        "c_min",
        "c_max",
        "size",
        "pd",
        "pm",
        "arc_tempreserve",
        "arc_loaned_bytes",
        "arc_meta_used",
        "arc_meta_limit",
        "arc_dnode_limit",
        "arc_meta_max",
        "arc_meta_min",
        "arc_need_free",
        "arc_sys_free",
        "l2_log_blk_avg_asize",
        "l2_log_blk_asize",
    ];
    let frag = name_fragment(row);
    let is_bytes_gauge = BYTES.contains(&row)
        || row.ends_with("_size")
        || row.ends_with("_asize")
        || (row.starts_with("memory_") && row.ends_with("_bytes"))
        || row.contains("_evictable_")
        || ["mru_data", "mru_metadata", "mfu_data", "mfu_metadata"]
            .iter()
            .any(|p| row.starts_with(p) && !row.ends_with("_hits"))
        || row.ends_with("_limit");
    if is_bytes_gauge {
        let name = if frag.ends_with("_bytes") {
            format!("zpulse_arc_{frag}")
        } else {
            format!("zpulse_arc_{frag}_bytes")
        };
        Row {
            name,
            kind: Type::Gauge,
            help: format!("ARC kstat {row} (bytes)."),
        }
    } else if GAUGES.contains(&row) {
        // `_count` is reserved for histograms and summaries.
        let name = match frag.strip_suffix("_count") {
            Some(base) => format!("zpulse_arc_{base}s"),
            None => format!("zpulse_arc_{frag}"),
        };
        Row {
            name,
            kind: Type::Gauge,
            help: format!("ARC kstat {row}."),
        }
    } else {
        let base = frag.strip_suffix("_count").unwrap_or(&frag);
        Row {
            name: format!("zpulse_arc_{base}_total"),
            kind: Type::Counter,
            help: format!("ARC kstat {row}."),
        }
    }
}

/// ZIL rows (`zil_kstat_values_t`, module/zfs/zil.c): every one is a counter.
pub(super) fn zil_row(row: &str) -> Row {
    let frag = name_fragment(row);
    let frag = frag.strip_prefix("zil_").unwrap_or(&frag);
    let base = frag.strip_suffix("_count").unwrap_or(frag);
    Row {
        name: format!("zpulse_zil_{base}_total"),
        kind: Type::Counter,
        help: format!("ZIL kstat {row}."),
    }
}

pub(super) fn kstat_rows(
    out: &mut dyn Emit,
    fields: &BTreeMap<String, KstatValue>,
    families: &mut RowFamilies,
    classify: fn(&str) -> Row,
) {
    for (row, value) in fields {
        let v = match value {
            KstatValue::Unsigned(v) => Value::Int(*v),
            KstatValue::Signed(v) => Value::Signed(*v),
            KstatValue::Text(_) => continue,
        };
        let r = families.next(row, classify);
        out.kept_family(r);
        out.line(&r.name, &[], v);
    }
}

pub(super) fn pools(out: &mut dyn Emit, iostats: &mut RowFamilies, s: &Snapshot) {
    out.family(
        "zpulse_pool_state",
        Type::Gauge,
        "Pool state, one series per state: 1 for the current one, 0 for the others.",
    );
    for p in &s.pools {
        let current = p
            .state
            .as_deref()
            .or(p.config.as_ref().map(|c| c.health.as_str()));
        let Some(current) = current else { continue };
        for state in POOL_STATES {
            out.line(
                "zpulse_pool_state",
                &[("pool", &p.name), ("state", state)],
                Value::Int((current == *state).into()),
            );
        }
        if !POOL_STATES.contains(&current) {
            out.line(
                "zpulse_pool_state",
                &[("pool", &p.name), ("state", current)],
                Value::Int(1),
            );
        }
    }
    let root_stats = |p: &zpulse_proto::snapshot::Pool| {
        p.config
            .as_ref()
            .and_then(|c| c.root.stats.as_ref())
            .cloned()
    };
    type PoolField = fn(&VdevStats) -> Option<Value>;
    let space: [(&str, &str, PoolField); 4] = [
        (
            "zpulse_pool_size_bytes",
            "Pool size (zpool list SIZE: vs_space of the root vdev).",
            |st| Some(Value::Int(st.space)),
        ),
        (
            "zpulse_pool_allocated_bytes",
            "Allocated space (zpool list ALLOC: vs_alloc of the root vdev).",
            |st| Some(Value::Int(st.alloc)),
        ),
        (
            "zpulse_pool_free_bytes",
            "Free space (zpool list FREE: size - allocated).",
            |st| Some(Value::Int(st.space.saturating_sub(st.alloc))),
        ),
        (
            "zpulse_pool_fragmentation_ratio",
            "Free-space fragmentation (zpool list FRAG / 100); absent when the kernel reports it invalid.",
            |st| st.fragmentation.map(|f| Value::decimal(f, 2)),
        ),
    ];
    for (name, help, pick) in space {
        out.family(name, Type::Gauge, help);
        for p in &s.pools {
            if let Some(v) = root_stats(p).as_ref().and_then(pick) {
                out.line(name, &[("pool", &p.name)], v);
            }
        }
    }
    out.family(
        "zpulse_pool_persistent_errors",
        Type::Gauge,
        "Entries in the pool's persistent error log (approximate, as zpool status -v).",
    );
    for p in &s.pools {
        if let Some(n) = p.config.as_ref().and_then(|c| c.error_count) {
            out.line(
                "zpulse_pool_persistent_errors",
                &[("pool", &p.name)],
                Value::Int(n),
            );
        }
    }
    scans(out, s);
    pool_io(out, s);
    // Pool `iostats` kstat (0.8+): TRIM and ARC counters of the pool.
    let mut rows: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for p in &s.pools {
        if let Some(k) = &p.iostats {
            for (row, v) in &k.fields {
                if let KstatValue::Unsigned(v) = v {
                    rows.entry(row).or_default().push((&p.name, *v));
                }
            }
        }
    }
    for (row, values) in rows {
        let r = iostats.next(row, pool_iostats_row);
        out.kept_family(r);
        for (pool, v) in values {
            out.line(&r.name, &[("pool", pool)], Value::Int(v));
        }
    }
}

/// Pool `iostats` rows (`spa_iostats_t`, module/zfs/spa_stats.c): counters.
pub(super) fn pool_iostats_row(row: &str) -> Row {
    Row {
        name: format!("zpulse_pool_{}_total", name_fragment(row)),
        kind: Type::Counter,
        help: format!("Pool iostats kstat {row} (zeroed when the kstat is written to)."),
    }
}

/// The pool-wide `io` kstat (KSTAT_TYPE_IO, OpenZFS up to 2.0; include/sys/kstat.h: byte and
/// operation counts, and the ns the wait and run queues were busy).
pub(super) fn pool_io(out: &mut dyn Emit, s: &Snapshot) {
    type Pick = fn(&zpulse_proto::snapshot::PoolIo) -> Value;
    let fields: [(&str, &str, Pick); 6] = [
        (
            "zpulse_pool_reads_total",
            "Read operations (pool io kstat, OpenZFS <= 2.0).",
            |io| Value::Int(io.reads),
        ),
        (
            "zpulse_pool_writes_total",
            "Write operations (pool io kstat).",
            |io| Value::Int(io.writes),
        ),
        (
            "zpulse_pool_read_bytes_total",
            "Bytes read (pool io kstat nread).",
            |io| Value::Int(io.nread),
        ),
        (
            "zpulse_pool_written_bytes_total",
            "Bytes written (pool io kstat nwritten).",
            |io| Value::Int(io.nwritten),
        ),
        (
            "zpulse_pool_wait_time_seconds_total",
            "Time the wait queue was not empty (pool io kstat wtime).",
            |io| Value::decimal(io.wtime, 9),
        ),
        (
            "zpulse_pool_run_time_seconds_total",
            "Time the run queue was not empty (pool io kstat rtime).",
            |io| Value::decimal(io.rtime, 9),
        ),
    ];
    for (name, help, pick) in fields {
        out.family(name, Type::Counter, help);
        for p in &s.pools {
            if let Some(io) = &p.io {
                out.line(name, &[("pool", &p.name)], pick(io));
            }
        }
    }
}

pub(super) fn scans(out: &mut dyn Emit, s: &Snapshot) {
    let scans: Vec<_> = s
        .pools
        .iter()
        .filter_map(|p| Some((p.name.as_str(), p.config.as_ref()?.scan.as_ref()?)))
        .collect();
    out.family(
        "zpulse_pool_scan_info",
        Type::Gauge,
        "The last or current scrub/resilver of the pool as labels (function, state), value 1.",
    );
    for (pool, scan) in &scans {
        out.line(
            "zpulse_pool_scan_info",
            &[
                ("pool", pool),
                ("function", &scan.function),
                ("state", &scan.state),
            ],
            Value::Int(1),
        );
    }
    type ScanField = fn(&zpulse_proto::snapshot::ScanStats) -> Option<Value>;
    let fields: [(&str, &str, ScanField); 8] = [
        (
            "zpulse_pool_scan_start_timestamp_seconds",
            "Unix time the scan started.",
            |sc| Some(Value::Int(sc.start_time)),
        ),
        (
            "zpulse_pool_scan_end_timestamp_seconds",
            "Unix time the scan ended (0 while it runs).",
            |sc| Some(Value::Int(sc.end_time)),
        ),
        (
            "zpulse_pool_scan_to_examine_bytes",
            "Bytes the scan has to examine.",
            |sc| Some(Value::Int(sc.to_examine)),
        ),
        (
            "zpulse_pool_scan_examined_bytes",
            "Bytes the scan has examined.",
            |sc| Some(Value::Int(sc.examined)),
        ),
        (
            "zpulse_pool_scan_processed_bytes",
            "Bytes the scan has repaired or resilvered.",
            |sc| Some(Value::Int(sc.processed)),
        ),
        (
            "zpulse_pool_scan_issued_bytes",
            "Bytes the scan has issued (0.8+).",
            |sc| sc.issued.map(Value::Int),
        ),
        ("zpulse_pool_scan_errors", "Errors the scan found.", |sc| {
            Some(Value::Int(sc.errors))
        }),
        (
            "zpulse_pool_scan_progress_ratio",
            "Scan progress 0-1: issued / to_examine while it runs, as zpool status reports \
             it; 1 once it finished.",
            |sc| {
                if sc.is_finished() {
                    Some(Value::Float(1.0))
                } else {
                    sc.progress().map(Value::Float)
                }
            },
        ),
    ];
    for (name, help, pick) in fields {
        out.family(name, Type::Gauge, help);
        for (pool, scan) in &scans {
            if let Some(v) = pick(scan) {
                out.line(name, &[("pool", pool)], v);
            }
        }
    }
}

/// A vdev below a pool's root with the labels that name it: `pool`, `class`, `vdev` (the
/// top-level vdev) and, below the top level, `leaf`.
pub(super) struct VdevRef<'a> {
    pub(super) labels: LabelSet<'a>,
    pub(super) vdev: &'a Vdev,
    pub(super) top_level: bool,
}

pub(super) fn vdev_refs<'a>(out: &mut dyn Emit, s: &'a Snapshot) -> Vec<VdevRef<'a>> {
    let mut refs = Vec::new();
    for p in &s.pools {
        let Some(config) = &p.config else { continue };
        for top in &config.root.children {
            let class = top.class.map_or("normal", VdevClass::as_str);
            for v in top.walk() {
                let top_level = std::ptr::eq(v, top);
                let leaf = if top_level { "" } else { &v.name };
                refs.push(VdevRef {
                    labels: out.label_set(&[
                        ("pool", &p.name),
                        ("class", class),
                        ("vdev", &top.name),
                        ("leaf", leaf),
                    ]),
                    vdev: v,
                    top_level,
                });
            }
        }
    }
    refs
}

/// Every vdev state `zpool status` prints (`zpool_state_to_name`).
pub(super) const VDEV_STATES: &[&str] = &[
    "ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "UNAVAIL", "REMOVED", "SPLIT",
];

pub(super) fn vdevs(out: &mut dyn Emit, s: &Snapshot, detail: Detail) {
    let refs = vdev_refs(out, s);
    out.family(
        "zpulse_vdev_info",
        Type::Gauge,
        "A vdev's type and, for a leaf, the kernel disk it is on (value 1).",
    );
    for r in &refs {
        out.line_in(
            "zpulse_vdev_info",
            &r.labels,
            &[
                ("type", &r.vdev.vdev_type),
                ("disk", r.vdev.disk.as_deref().unwrap_or("")),
            ],
            Value::Int(1),
        );
    }
    out.family(
        "zpulse_vdev_state",
        Type::Gauge,
        "Vdev state, one series per state: 1 for the current one, 0 for the others.",
    );
    for r in &refs {
        let Some(current) = r.vdev.state.as_deref() else {
            continue;
        };
        let other = (!VDEV_STATES.contains(&current)).then_some(current);
        for &state in VDEV_STATES.iter().chain(&other) {
            out.line_in(
                "zpulse_vdev_state",
                &r.labels,
                &[("state", state)],
                Value::Int((state == current).into()),
            );
        }
    }
    type Field = fn(&VdevStats) -> Option<u64>;
    // Space figures belong to top-level vdevs (a leaf's are 0, which would read as "empty").
    let space: [(&str, &str, Field); 2] = [
        (
            "zpulse_vdev_size_bytes",
            "Top-level vdev size (zpool list -v SIZE: vs_space).",
            |st| Some(st.space),
        ),
        (
            "zpulse_vdev_allocated_bytes",
            "Top-level vdev allocated space (zpool list -v ALLOC: vs_alloc).",
            |st| Some(st.alloc),
        ),
    ];
    for (name, help, pick) in space {
        out.family(name, Type::Gauge, help);
        for r in refs.iter().filter(|r| r.top_level) {
            if let Some(v) = r.vdev.stats.as_ref().and_then(pick) {
                out.line_in(name, &r.labels, &[], Value::Int(v));
            }
        }
    }
    out.family(
        "zpulse_vdev_fragmentation_ratio",
        Type::Gauge,
        "Top-level vdev free-space fragmentation (zpool list -v FRAG / 100).",
    );
    for r in refs.iter().filter(|r| r.top_level) {
        if let Some(f) = r.vdev.stats.as_ref().and_then(|st| st.fragmentation) {
            out.line_in(
                "zpulse_vdev_fragmentation_ratio",
                &r.labels,
                &[],
                Value::decimal(f, 2),
            );
        }
    }
    out.family(
        "zpulse_vdev_uptime_seconds",
        Type::Gauge,
        "Seconds since the vdev was opened (vs_timestamp): zpool iostat divides counter deltas by its delta.",
    );
    for r in &refs {
        if let Some(st) = &r.vdev.stats {
            out.line_in(
                "zpulse_vdev_uptime_seconds",
                &r.labels,
                &[],
                Value::decimal(st.timestamp, 9),
            );
        }
    }
    // vs_ops / vs_bytes are indexed by ZIO type: 1 READ, 2 WRITE (include/sys/fs/zfs.h).
    for (name, help, pick) in [
        (
            "zpulse_vdev_operations_total",
            "I/O operations the vdev completed, by op (zpool iostat operations).",
            (|st: &VdevStats| st.ops) as fn(&VdevStats) -> [u64; 6],
        ),
        (
            "zpulse_vdev_io_bytes_total",
            "Bytes the vdev read or wrote, by op (zpool iostat bandwidth).",
            |st: &VdevStats| st.bytes,
        ),
    ] {
        out.family(name, Type::Counter, help);
        for r in &refs {
            if let Some(st) = &r.vdev.stats {
                let a = pick(st);
                for (op, i) in [("read", 1), ("write", 2)] {
                    out.line_in(name, &r.labels, &[("op", op)], Value::Int(a[i]));
                }
            }
        }
    }
    out.family(
        "zpulse_vdev_errors_total",
        Type::Counter,
        "Read, write and checksum errors of the vdev (zpool status; zpool clear zeroes them).",
    );
    for r in &refs {
        if let Some(st) = &r.vdev.stats {
            for (kind, v) in [
                ("read", st.read_errors),
                ("write", st.write_errors),
                ("checksum", st.checksum_errors),
            ] {
                out.line_in(
                    "zpulse_vdev_errors_total",
                    &r.labels,
                    &[("kind", kind)],
                    Value::Int(v),
                );
            }
        }
    }
    out.family(
        "zpulse_vdev_slow_ios_total",
        Type::Counter,
        "I/Os the deadman counted as slow (zpool status -s).",
    );
    for r in &refs {
        if let Some(n) = r.vdev.stats.as_ref().and_then(|st| st.slow_ios) {
            out.line_in("zpulse_vdev_slow_ios_total", &r.labels, &[], Value::Int(n));
        }
    }
    latency_histograms(out, &refs, detail);
}

pub(super) type Histo = fn(&LatencyHistograms) -> &Vec<u64>;

/// The `zpool iostat -w` histograms as Prometheus histograms: at [`Detail::Full`] every
/// vdev's in the kernel's buckets, else the standard buckets of those with I/O, of top-level
/// vdevs only below [`Detail::Leaves`].
pub(super) fn latency_histograms(out: &mut dyn Emit, refs: &[VdevRef], detail: Detail) {
    type Family<'a> = (&'a str, &'a str, &'a [(&'a str, Histo)]);
    let families: [Family; 6] = [
        (
            "zpulse_vdev_total_wait_seconds",
            "Time an I/O spent queued and on the device (zpool iostat -w total_wait).",
            &[("read", |h| &h.total_r), ("write", |h| &h.total_w)],
        ),
        (
            "zpulse_vdev_disk_wait_seconds",
            "Time an I/O spent on the device (zpool iostat -w disk_wait).",
            &[("read", |h| &h.disk_r), ("write", |h| &h.disk_w)],
        ),
        (
            "zpulse_vdev_syncq_wait_seconds",
            "Time an I/O waited in the sync queue (zpool iostat -w syncq_wait).",
            &[("read", |h| &h.syncq_r), ("write", |h| &h.syncq_w)],
        ),
        (
            "zpulse_vdev_asyncq_wait_seconds",
            "Time an I/O waited in the async queue (zpool iostat -w asyncq_wait).",
            &[("read", |h| &h.asyncq_r), ("write", |h| &h.asyncq_w)],
        ),
        (
            "zpulse_vdev_scrub_wait_seconds",
            "Time a scrub I/O waited (zpool iostat -w scrub).",
            &[("", |h| &h.scrub)],
        ),
        (
            "zpulse_vdev_trim_wait_seconds",
            "Time a TRIM I/O waited (zpool iostat -w trim).",
            &[("", |h| &h.trim)],
        ),
    ];
    type ToBuckets = fn(&[u64], &mut Vec<Bucket>);
    let (buckets_help, to_buckets): (&str, ToBuckets) = match detail {
        Detail::Full => ("Buckets are the kernel's powers of two", kernel_buckets),
        Detail::Standard | Detail::Leaves => (
            "Buckets are every second power of two of the kernel's, 2^13 to 2^33 ns",
            standard_buckets,
        ),
    };
    let refs: Vec<&VdevRef> = refs
        .iter()
        .filter(|r| r.top_level || detail != Detail::Standard)
        .collect();
    let mut cumulative = Vec::with_capacity(65);
    let mut bucket_name = String::new();
    for (name, help, ops) in families {
        out.family(
            name,
            Type::Histogram,
            &format!(
                "{help} {buckets_help}; the sum takes each kernel bucket's midpoint, as zpool iostat -l does."
            ),
        );
        bucket_name.clear();
        bucket_name.push_str(name);
        bucket_name.push_str("_bucket");
        let sum_name = format!("{name}_sum");
        let count_name = format!("{name}_count");
        for r in &refs {
            let Some(h) = &r.vdev.histograms else {
                continue;
            };
            for (op, pick) in ops.iter() {
                let buckets = pick(h);
                if buckets.is_empty() {
                    continue;
                }
                // zpool iostat -l's average: each bucket's I/Os at its midpoint 2^i + 2^i/2.
                let mut count = 0u64;
                let mut sum_ns = 0u128;
                for (i, &n) in buckets.iter().enumerate() {
                    count = count.saturating_add(n);
                    let i = i.min(63);
                    sum_ns += u128::from(n) * ((1u128 << i) + ((1u128 << i) / 2));
                }
                // A histogram without I/O is an empty series: exported only in full.
                if count == 0 && detail != Detail::Full {
                    continue;
                }
                let op = [("op", *op)];
                to_buckets(buckets, &mut cumulative);
                out.buckets(&bucket_name, &r.labels, &op, &cumulative);
                let sum = u64::try_from(sum_ns).map_or_else(
                    |_| Value::Float(sum_ns as f64 / 1e9),
                    |ns| Value::decimal(ns, 9),
                );
                out.line_in(&sum_name, &r.labels, &op, sum);
                out.line_in(&count_name, &r.labels, &op, Value::Int(count));
            }
        }
    }
}

pub(super) fn datasets(out: &mut dyn Emit, s: &Snapshot) {
    // objset-0x* kstats (module/os/linux/zfs/zfs_kstat or dataset_kstats.c): all counters.
    let known: [(&str, &str, &str); 6] = [
        (
            "writes",
            "zpulse_dataset_writes_total",
            "Write calls to the dataset.",
        ),
        (
            "nwritten",
            "zpulse_dataset_written_bytes_total",
            "Bytes written to the dataset.",
        ),
        (
            "reads",
            "zpulse_dataset_reads_total",
            "Read calls to the dataset.",
        ),
        (
            "nread",
            "zpulse_dataset_read_bytes_total",
            "Bytes read from the dataset.",
        ),
        (
            "nunlinks",
            "zpulse_dataset_unlinks_total",
            "Files queued for deletion.",
        ),
        (
            "nunlinked",
            "zpulse_dataset_unlinked_total",
            "Files deleted.",
        ),
    ];
    for (row, name, help) in known {
        out.family(name, Type::Counter, help);
        for p in &s.pools {
            for d in &p.datasets {
                let Some(v) = d.counters.u64(row) else {
                    continue;
                };
                let dataset = d.name.as_deref().unwrap_or(&d.objset);
                out.line(
                    name,
                    &[("pool", &p.name), ("dataset", dataset)],
                    Value::Int(v),
                );
            }
        }
    }
}

pub(super) fn disks(out: &mut dyn Emit, s: &Snapshot, detail: Detail) {
    type Pick = fn(&DiskCounters) -> Option<Value>;
    let fields: [(&str, &str, Type, Pick); 17] = [
        (
            "zpulse_disk_reads_completed_total",
            "Reads completed (diskstats field 1, devstat operations[READ]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::Int(d.reads)),
                DiskCounters::Devstat(d) => Some(Value::Int(d.operations[1])),
            },
        ),
        (
            "zpulse_disk_reads_merged_total",
            "Adjacent reads merged (Linux diskstats only).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::Int(d.reads_merged)),
                DiskCounters::Devstat(_) => None,
            },
        ),
        (
            "zpulse_disk_read_bytes_total",
            "Bytes read (diskstats sectors x 512, devstat bytes[READ]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::Int(d.sectors_read.saturating_mul(512))),
                DiskCounters::Devstat(d) => Some(Value::Int(d.bytes[1])),
            },
        ),
        (
            "zpulse_disk_read_time_seconds_total",
            "Time reads took, summed over reads (diskstats field 4; devstat duration[READ]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::decimal(d.read_ms, 3)),
                DiskCounters::Devstat(d) => Some(Value::Float(d.duration[1])),
            },
        ),
        (
            "zpulse_disk_writes_completed_total",
            "Writes completed (diskstats field 5, devstat operations[WRITE]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::Int(d.writes)),
                DiskCounters::Devstat(d) => Some(Value::Int(d.operations[2])),
            },
        ),
        (
            "zpulse_disk_writes_merged_total",
            "Adjacent writes merged (Linux diskstats only).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::Int(d.writes_merged)),
                DiskCounters::Devstat(_) => None,
            },
        ),
        (
            "zpulse_disk_written_bytes_total",
            "Bytes written (diskstats sectors x 512, devstat bytes[WRITE]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => {
                    Some(Value::Int(d.sectors_written.saturating_mul(512)))
                }
                DiskCounters::Devstat(d) => Some(Value::Int(d.bytes[2])),
            },
        ),
        (
            "zpulse_disk_write_time_seconds_total",
            "Time writes took, summed over writes (diskstats field 8; devstat duration[WRITE]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::decimal(d.write_ms, 3)),
                DiskCounters::Devstat(d) => Some(Value::Float(d.duration[2])),
            },
        ),
        (
            "zpulse_disk_discards_completed_total",
            "Discards (TRIM) completed (diskstats 4.18+, devstat operations[FREE]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => d.discards.map(Value::Int),
                DiskCounters::Devstat(d) => Some(Value::Int(d.operations[3])),
            },
        ),
        (
            "zpulse_disk_discards_merged_total",
            "Adjacent discards merged (diskstats 4.18+).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => d.discards_merged.map(Value::Int),
                DiskCounters::Devstat(_) => None,
            },
        ),
        (
            "zpulse_disk_discarded_bytes_total",
            "Bytes discarded (diskstats sectors x 512, devstat bytes[FREE]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => d
                    .sectors_discarded
                    .map(|s| Value::Int(s.saturating_mul(512))),
                DiskCounters::Devstat(d) => Some(Value::Int(d.bytes[3])),
            },
        ),
        (
            "zpulse_disk_discard_time_seconds_total",
            "Time discards took (diskstats 4.18+, devstat duration[FREE]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => d.discard_ms.map(|v| Value::decimal(v, 3)),
                DiskCounters::Devstat(d) => Some(Value::Float(d.duration[3])),
            },
        ),
        (
            "zpulse_disk_flush_requests_total",
            "Flushes completed (diskstats 5.5+; devstat operations[NO_DATA], flushes and other).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => d.flushes.map(Value::Int),
                DiskCounters::Devstat(d) => Some(Value::Int(d.operations[0])),
            },
        ),
        (
            "zpulse_disk_flush_requests_time_seconds_total",
            "Time flushes took (diskstats 5.5+; devstat duration[NO_DATA]).",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => d.flush_ms.map(|v| Value::decimal(v, 3)),
                DiskCounters::Devstat(d) => Some(Value::Float(d.duration[0])),
            },
        ),
        (
            "zpulse_disk_io_now",
            "I/Os in flight (diskstats field 9; devstat start_count - end_count).",
            Type::Gauge,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::Int(d.in_flight)),
                DiskCounters::Devstat(d) => Some(Value::Int(u64::from(
                    d.start_count.wrapping_sub(d.end_count),
                ))),
            },
        ),
        (
            "zpulse_disk_io_time_seconds_total",
            "Time the device was busy, with I/O in flight (diskstats field 10; devstat busy_time): rate() is %util / 100.",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::decimal(d.io_ms, 3)),
                DiskCounters::Devstat(d) => Some(Value::Float(d.busy_time)),
            },
        ),
        (
            "zpulse_disk_io_time_weighted_seconds_total",
            "Sum of each I/O's time in the queue (diskstats field 11, Linux only): rate() is aqu-sz.",
            Type::Counter,
            |c| match c {
                DiskCounters::Diskstats(d) => Some(Value::decimal(d.weighted_ms, 3)),
                DiskCounters::Devstat(_) => None,
            },
        ),
    ];
    // A partition's I/O is its disk's too, and a loop device, RAM disk or zvol is no storage
    // of its own (node_exporter leaves them out by default as well): shown below full detail
    // only when they serve a pool.
    let shown = |d: &&zpulse_proto::snapshot::Disk| {
        detail == Detail::Full
            || !d.roles.is_empty()
            || (d.whole_disk.is_none() && !zpulse_proto::snapshot::is_virtual_disk(&d.name))
    };
    let disks: Vec<_> = s
        .disks
        .iter()
        .filter(shown)
        .map(|d| (d, out.label_set(&[("disk", &d.name)])))
        .collect();
    for (name, help, kind, pick) in fields {
        out.family(name, kind, help);
        for (d, labels) in &disks {
            if let Some(v) = pick(&d.counters) {
                out.line_in(name, labels, &[], v);
            }
        }
    }
    out.family(
        "zpulse_disk_rotational",
        Type::Gauge,
        "1 for a spinning disk (HDD), 0 for an SSD; absent when the kernel does not say.",
    );
    for (d, labels) in &disks {
        if let Some(r) = d.rotational {
            out.line_in("zpulse_disk_rotational", labels, &[], Value::Int(r.into()));
        }
    }
    out.family("zpulse_disk_size_bytes", Type::Gauge, "Disk size.");
    for (d, labels) in &disks {
        if let Some(v) = d.size {
            out.line_in("zpulse_disk_size_bytes", labels, &[], Value::Int(v));
        }
    }
    out.family(
        "zpulse_disk_role",
        Type::Gauge,
        "The vdev a disk (or a partition of it) serves, as labels (value 1): join disks to pools and classes.",
    );
    for (d, labels) in &disks {
        for role in &d.roles {
            out.line_in(
                "zpulse_disk_role",
                labels,
                &[
                    ("pool", &role.pool),
                    ("class", role.class.as_str()),
                    ("vdev", &role.vdev),
                    ("leaf", &role.leaf),
                ],
                Value::Int(1),
            );
        }
    }
}

/// Clock ticks per second of `/proc/stat` (USER_HZ, fixed by the kernel ABI: proc(5)).
pub(super) const LINUX_USER_HZ: f64 = 100.0;

pub(super) fn cpu_memory_network(out: &mut dyn Emit, s: &Snapshot) {
    if let Some(cpu) = &s.cpu {
        let modes: [(&str, Option<u64>); 8] = [
            ("user", Some(cpu.user)),
            ("nice", Some(cpu.nice)),
            ("system", Some(cpu.system)),
            ("idle", Some(cpu.idle)),
            ("iowait", cpu.iowait),
            ("irq", cpu.irq),
            ("softirq", cpu.softirq),
            ("steal", cpu.steal),
        ];
        // FreeBSD's kern.cp_time counts stathz ticks (kern.clockrate): seconds like Linux's
        // when the snapshot has the rate; ticks only from a capture made without it.
        let (name, help, scale) = match (s.host.os, cpu.ticks_per_second) {
            (Os::Linux, _) => (
                "zpulse_host_cpu_seconds_total",
                "CPU time of all CPUs by mode (/proc/stat cpu line).",
                1.0 / LINUX_USER_HZ,
            ),
            (Os::Freebsd, Some(stathz)) => (
                "zpulse_host_cpu_seconds_total",
                "CPU time of all CPUs by mode (kern.cp_time / stathz of kern.clockrate).",
                1.0 / f64::from(stathz),
            ),
            (Os::Freebsd, None) => (
                "zpulse_host_cpu_ticks_total",
                "CPU time of all CPUs by mode in stathz ticks (kern.cp_time; kern.clockrate unread); rate() of a mode over rate() of all is its share.",
                1.0,
            ),
        };
        out.family(name, Type::Counter, help);
        for (mode, v) in modes {
            if let Some(v) = v {
                let value = if scale == 1.0 {
                    Value::Int(v)
                } else {
                    Value::Float(v as f64 * scale)
                };
                out.line(name, &[("mode", mode)], value);
            }
        }
    }
    if let Some(m) = &s.memory {
        for (name, help, v) in [
            (
                "zpulse_host_memory_total_bytes",
                "Physical memory.",
                Some(m.total),
            ),
            (
                "zpulse_host_memory_free_bytes",
                "Free memory.",
                Some(m.free),
            ),
            (
                "zpulse_host_memory_available_bytes",
                "Memory available to programs without swapping (Linux MemAvailable).",
                m.available,
            ),
            ("zpulse_host_memory_cached_bytes", "Page cache.", m.cached),
            ("zpulse_host_swap_total_bytes", "Swap space.", m.swap_total),
            (
                "zpulse_host_swap_free_bytes",
                "Free swap space.",
                m.swap_free,
            ),
        ] {
            out.family(name, Type::Gauge, help);
            if let Some(v) = v {
                out.line(name, &[], Value::Int(v));
            }
        }
    }
    type Net = fn(&zpulse_proto::snapshot::NetInterface) -> u64;
    let net: [(&str, &str, Net); 8] = [
        (
            "zpulse_host_network_receive_bytes_total",
            "Bytes received.",
            |n| n.rx_bytes,
        ),
        (
            "zpulse_host_network_receive_packets_total",
            "Packets received.",
            |n| n.rx_packets,
        ),
        (
            "zpulse_host_network_receive_errs_total",
            "Receive errors.",
            |n| n.rx_errors,
        ),
        (
            "zpulse_host_network_receive_drop_total",
            "Received packets dropped.",
            |n| n.rx_dropped,
        ),
        (
            "zpulse_host_network_transmit_bytes_total",
            "Bytes sent.",
            |n| n.tx_bytes,
        ),
        (
            "zpulse_host_network_transmit_packets_total",
            "Packets sent.",
            |n| n.tx_packets,
        ),
        (
            "zpulse_host_network_transmit_errs_total",
            "Transmit errors.",
            |n| n.tx_errors,
        ),
        (
            "zpulse_host_network_transmit_drop_total",
            "Packets dropped on transmit.",
            |n| n.tx_dropped,
        ),
    ];
    for (name, help, pick) in net {
        out.family(name, Type::Counter, help);
        for n in &s.net {
            out.line(name, &[("device", &n.name)], Value::Int(pick(n)));
        }
    }
}

pub(super) fn agent_health(out: &mut dyn Emit, a: &AgentHealth) {
    let scalars: [(&str, &str, Type, Option<Value>); 9] = [
        (
            "zpulse_agent_cpu_seconds_total",
            "CPU time (user + system) the agent has used.",
            Type::Counter,
            a.cpu_seconds.map(Value::Float),
        ),
        (
            "zpulse_agent_resident_memory_bytes",
            "The agent's resident memory.",
            Type::Gauge,
            a.rss_bytes.map(Value::Int),
        ),
        (
            "zpulse_agent_samples_total",
            "Readings the sampler took (as of the last heartbeat).",
            Type::Counter,
            a.samples.map(Value::Int),
        ),
        (
            "zpulse_agent_late_samples_total",
            "Readings started more than half an interval late.",
            Type::Counter,
            a.late_samples.map(Value::Int),
        ),
        (
            "zpulse_agent_missed_slots_total",
            "Sampling slots skipped because the sampler could not keep up.",
            Type::Counter,
            a.missed_slots.map(Value::Int),
        ),
        (
            "zpulse_agent_dropped_samples_total",
            "Samples dropped because the plugins were still busy.",
            Type::Counter,
            a.dropped_samples.map(Value::Int),
        ),
        (
            "zpulse_agent_plugins_running",
            "Plugins loaded and running.",
            Type::Gauge,
            a.plugins_running.map(Value::Int),
        ),
        (
            "zpulse_agent_plugins",
            "Plugins found (running, refused, hung or disabled).",
            Type::Gauge,
            a.plugins_total.map(Value::Int),
        ),
        (
            "zpulse_agent_sinks",
            "Sinks configured.",
            Type::Gauge,
            Some(Value::Int(a.sinks.len() as u64)),
        ),
    ];
    for (name, help, kind, v) in scalars {
        out.family(name, kind, help);
        if let Some(v) = v {
            out.line(name, &[], v);
        }
    }
    type Pick = fn(&SinkHealth) -> Option<u64>;
    let per_sink: [(&str, &str, Type, Pick); 5] = [
        (
            "zpulse_agent_sink_queued_batches",
            "Batches waiting in the sink's queue.",
            Type::Gauge,
            |s| s.queued_batches,
        ),
        (
            "zpulse_agent_sink_delivered_events_total",
            "Events the sink delivered.",
            Type::Counter,
            |s| s.delivered,
        ),
        (
            "zpulse_agent_sink_dropped_events_total",
            "Events the sink lost (queue or spool full, refused).",
            Type::Counter,
            |s| s.dropped,
        ),
        (
            "zpulse_agent_sink_pending_events",
            "Events waiting in the sink (memory and spool).",
            Type::Gauge,
            |s| s.pending,
        ),
        (
            "zpulse_agent_sink_spool_bytes",
            "Bytes in the sink's disk spool.",
            Type::Gauge,
            |s| s.spool_bytes,
        ),
    ];
    for (name, help, kind, pick) in per_sink {
        out.family(name, kind, help);
        for s in &a.sinks {
            if let Some(v) = pick(s) {
                out.line(name, &[("sink", &s.name)], Value::Int(v));
            }
        }
    }
    let name = "zpulse_zevents_total";
    out.family(
        name,
        Type::Counter,
        "Kernel events the agent read and sent, by class and pool (docs/events.md).",
    );
    for ((class, pool), n) in &a.zevents {
        out.line(name, &[("class", class), ("pool", pool)], Value::Int(*n));
    }
    let name = "zpulse_zevents_dropped_total";
    out.family(
        name,
        Type::Counter,
        "Kernel events the kernel's queue dropped before the agent read them.",
    );
    out.line(name, &[], Value::Int(a.zevents_dropped));
}
