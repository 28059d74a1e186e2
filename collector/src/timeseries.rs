//! Time series of each host's main figures, from the agents' metric records
//! (`zpulse.series`, [`zpulse_forward::series`]): what the host page charts.
//!
//! A record holds thousands of series, counters as counters. The collector keeps only the
//! figures it draws ([`Figure`]), one point per minute:
//!
//! | figure                 | from the record's series (Prometheus names)                          |
//! |------------------------|----------------------------------------------------------------------|
//! | `pool_fill:POOL`       | `zpulse_pool_allocated_bytes / zpulse_pool_size_bytes`               |
//! | `arc_size`, `arc_size:c_max` | `zpulse_arc_size_bytes`, `zpulse_arc_c_max_bytes`              |
//! | `arc_hit_ratio`        | Δ`zpulse_arc_hits_total` / Δ(hits + `zpulse_arc_misses_total`)       |
//! | `disk_util:DISK`       | Δ`zpulse_disk_io_time_seconds_total` / Δt (only the disks a `zpulse_disk_role` puts in a pool, when the record has any) |
//! | `disk_await:DISK`      | Δ(read + write `_time_seconds_total`) / Δ(reads + writes `_completed_total`) |
//! | `vdev_latency:POOL/CLASS` | Δ`zpulse_vdev_total_wait_seconds_sum` / Δ`_count`, top-level vdevs, both ops |
//!
//! **Minutes.** A gauge's point is the last value received in that minute (of the sender's
//! clock). A rate's point is taken between the last record of the minute and the *anchor*,
//! the last record of an earlier minute: so consecutive points cover consecutive intervals
//! with nothing counted twice or lost. A counter that went backwards (a reset) gives no
//! point for that minute. The per-host anchor and latest counters live in `series_state`,
//! so a collector restart loses no rate.
//!
//! **Storage and bounds.** Table `series`: one row per (host, figure, UTC day) holding 1,440
//! little-endian f32 (NaN: no point), 5,760 bytes: f32 keeps 7 significant digits, plenty
//! for a chart; about 8.8 kB on disk with SQLite's overflow pages. A host has at most
//! [`MAX_FIGURES`] figures (more are not stored), so it costs at most about 560 kB a day,
//! 17 MB for the default 30 days. Rows whose
//! last write (`updated`, the collector's clock) is older than the event retention are
//! deleted with the events.

use rusqlite::{Connection, OptionalExtension, params};
use std::collections::BTreeMap;
use zpulse_forward::series::SeriesRecord;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS series (
    host TEXT NOT NULL,
    figure TEXT NOT NULL,
    day INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (host, figure, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS series_updated ON series(updated);
CREATE TABLE IF NOT EXISTS series_state (
    host TEXT PRIMARY KEY,
    latest_ts INTEGER NOT NULL,
    latest TEXT NOT NULL,
    anchor_ts INTEGER,
    anchor TEXT
) WITHOUT ROWID;
";

/// Figures kept per host, at most.
pub const MAX_FIGURES: usize = 64;
const MINUTES: usize = 1440;
const DAY_S: i64 = 86_400;

/// A figure's kind of value, for charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Ratio,
    Bytes,
    Seconds,
}

/// What one figure name means: its prefix, chart title and unit.
pub struct Figure {
    pub prefix: &'static str,
    pub title: &'static str,
    pub unit: Unit,
}

/// Every figure, in the order the host page draws them.
pub const FIGURES: &[Figure] = &[
    Figure {
        prefix: "pool_fill",
        title: "Pool fill",
        unit: Unit::Ratio,
    },
    Figure {
        prefix: "arc_size",
        title: "ARC size and c_max",
        unit: Unit::Bytes,
    },
    Figure {
        prefix: "arc_hit_ratio",
        title: "ARC hit ratio",
        unit: Unit::Ratio,
    },
    Figure {
        prefix: "disk_util",
        title: "Disk utilisation",
        unit: Unit::Ratio,
    },
    Figure {
        prefix: "disk_await",
        title: "Disk await",
        unit: Unit::Seconds,
    },
    Figure {
        prefix: "vdev_latency",
        title: "Vdev latency by class (total_wait)",
        unit: Unit::Seconds,
    },
];

/// The figures of one record, ready to store: gauges as they are, counters to be turned
/// into rates against the host's anchor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub host: String,
    /// The record's time, ns since the epoch (the sender's clock).
    pub ts: i64,
    pub gauges: BTreeMap<String, f64>,
    pub counters: BTreeMap<String, f64>,
}

impl Reading {
    /// Picks the figures' inputs out of a record.
    pub fn from_record(record: &SeriesRecord, host: &str, ts: i64) -> Reading {
        let mut r = Reading {
            host: host.to_owned(),
            ts,
            ..Reading::default()
        };
        let mut size: BTreeMap<&str, f64> = BTreeMap::new();
        let mut alloc: BTreeMap<&str, f64> = BTreeMap::new();
        let mut pool_disks: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        for s in &record.series {
            let v = s.value.as_f64();
            let disk = || s.label("disk").unwrap_or("");
            let mut add = |key: String, v: f64| *r.counters.entry(key).or_insert(0.0) += v;
            match s.name.as_str() {
                "zpulse_pool_size_bytes" => {
                    size.insert(s.label("pool").unwrap_or(""), v);
                }
                "zpulse_pool_allocated_bytes" => {
                    alloc.insert(s.label("pool").unwrap_or(""), v);
                }
                "zpulse_arc_size_bytes" => {
                    r.gauges.insert("arc_size".into(), v);
                }
                "zpulse_arc_c_max_bytes" => {
                    r.gauges.insert("arc_size:c_max".into(), v);
                }
                "zpulse_arc_hits_total" => add("arc_hits".into(), v),
                "zpulse_arc_misses_total" => add("arc_misses".into(), v),
                "zpulse_disk_io_time_seconds_total" => add(format!("busy:{}", disk()), v),
                "zpulse_disk_read_time_seconds_total" | "zpulse_disk_write_time_seconds_total" => {
                    add(format!("time:{}", disk()), v)
                }
                "zpulse_disk_reads_completed_total" | "zpulse_disk_writes_completed_total" => {
                    add(format!("ops:{}", disk()), v)
                }
                "zpulse_vdev_total_wait_seconds_sum" | "zpulse_vdev_total_wait_seconds_count"
                    if s.label("leaf").is_none() =>
                {
                    let class = format!(
                        "{}/{}",
                        s.label("pool").unwrap_or(""),
                        s.label("class").unwrap_or("")
                    );
                    let what = if s.name.ends_with("_sum") {
                        "wait"
                    } else {
                        "ios"
                    };
                    add(format!("{what}:{class}"), v)
                }
                "zpulse_disk_role" => {
                    pool_disks.insert(disk());
                }
                _ => {}
            }
        }
        // The disk charts are about the pools: when the record says which disks serve a
        // pool (`zpulse_disk_role`), the others (a floppy, loop devices, the boot disk) are
        // left out, so that idle devices do not crowd the busiest-eight lines.
        if !pool_disks.is_empty() {
            r.counters.retain(|key, _| {
                match ["busy:", "time:", "ops:"]
                    .iter()
                    .find_map(|p| key.strip_prefix(p))
                {
                    Some(disk) => pool_disks.contains(disk),
                    None => true,
                }
            });
        }
        for (pool, size) in size {
            if let Some(a) = alloc.get(pool).filter(|_| size > 0.0) {
                r.gauges.insert(format!("pool_fill:{pool}"), a / size);
            }
        }
        r
    }
}

/// The rate figures between two sets of counters `dt` seconds apart. A figure whose
/// counters went backwards (reset) or did not move when it divides by them is absent.
pub fn rates(
    anchor: &BTreeMap<String, f64>,
    latest: &BTreeMap<String, f64>,
    dt: f64,
) -> BTreeMap<String, f64> {
    let delta = |k: &str| -> Option<f64> {
        let d = latest.get(k)? - anchor.get(k)?;
        (d >= 0.0).then_some(d)
    };
    let mut out = BTreeMap::new();
    if dt <= 0.0 {
        return out;
    }
    if let (Some(h), Some(m)) = (delta("arc_hits"), delta("arc_misses"))
        && h + m > 0.0
    {
        out.insert("arc_hit_ratio".into(), h / (h + m));
    }
    for key in latest.keys() {
        if let Some(disk) = key.strip_prefix("busy:") {
            if let Some(d) = delta(key) {
                out.insert(format!("disk_util:{disk}"), d / dt);
            }
        } else if let Some(disk) = key.strip_prefix("ops:") {
            if let (Some(ops), Some(t)) = (delta(key), delta(&format!("time:{disk}")))
                && ops > 0.0
            {
                out.insert(format!("disk_await:{disk}"), t / ops);
            }
        } else if let Some(class) = key.strip_prefix("ios:")
            && let (Some(n), Some(w)) = (delta(key), delta(&format!("wait:{class}")))
            && n > 0.0
        {
            out.insert(format!("vdev_latency:{class}"), w / n);
        }
    }
    out
}

fn sql(e: rusqlite::Error) -> String {
    format!("SQLite: {e}")
}

fn minute_of(ts_ns: i64) -> i64 {
    ts_ns.div_euclid(60_000_000_000)
}

/// Stores one reading inside the caller's transaction; `now` is the receive time (s).
pub fn apply(conn: &Connection, r: &Reading, now: i64) -> Result<(), String> {
    let state: Option<(i64, String, Option<i64>, Option<String>)> = conn
        .prepare_cached(
            "SELECT latest_ts, latest, anchor_ts, anchor FROM series_state WHERE host = ?1",
        )
        .and_then(|mut s| {
            s.query_row([&r.host], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .optional()
        })
        .map_err(sql)?;
    let parse = |s: &str| serde_json::from_str::<BTreeMap<String, f64>>(s).unwrap_or_default();
    let (anchor_ts, anchor) = match state {
        // Older than what is stored (a late resend): gauges and rates are already there.
        Some((latest_ts, _, _, _)) if r.ts <= latest_ts => return Ok(()),
        // The latest record was in an earlier minute: it is the new anchor.
        Some((latest_ts, latest, _, _)) if minute_of(latest_ts) < minute_of(r.ts) => {
            (Some(latest_ts), Some(parse(&latest)))
        }
        Some((_, _, anchor_ts, anchor)) => (anchor_ts, anchor.as_deref().map(parse)),
        None => (None, None),
    };
    let mut figures = r.gauges.clone();
    if let (Some(at), Some(anchor)) = (anchor_ts, &anchor) {
        figures.extend(rates(anchor, &r.counters, (r.ts - at) as f64 / 1e9));
    }
    let latest = serde_json::to_string(&r.counters).map_err(|e| e.to_string())?;
    let anchor = anchor
        .map(|a| serde_json::to_string(&a))
        .transpose()
        .map_err(|e| e.to_string())?;
    conn.prepare_cached(
        "INSERT INTO series_state(host, latest_ts, latest, anchor_ts, anchor)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(host) DO UPDATE SET latest_ts = excluded.latest_ts,
           latest = excluded.latest, anchor_ts = excluded.anchor_ts, anchor = excluded.anchor",
    )
    .and_then(|mut s| s.execute(params![r.host, r.ts, latest, anchor_ts, anchor]))
    .map_err(sql)?;
    let minute = minute_of(r.ts);
    let (day, slot) = (minute.div_euclid(1440), minute.rem_euclid(1440) as usize);
    let known: Vec<String> = conn
        .prepare_cached("SELECT DISTINCT figure FROM series WHERE host = ?1 AND day = ?2")
        .and_then(|mut s| {
            s.query_map(params![r.host, day], |row| row.get(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(sql)?;
    let mut count = known.len();
    for (figure, value) in figures {
        if !known.contains(&figure) {
            if count >= MAX_FIGURES {
                continue;
            }
            count += 1;
        }
        let data: Option<Vec<u8>> = conn
            .prepare_cached("SELECT data FROM series WHERE host = ?1 AND figure = ?2 AND day = ?3")
            .and_then(|mut s| {
                s.query_row(params![r.host, figure, day], |row| row.get(0))
                    .optional()
            })
            .map_err(sql)?;
        let mut data = data
            .filter(|d| d.len() == MINUTES * 4)
            .unwrap_or_else(|| f32::NAN.to_le_bytes().repeat(MINUTES));
        data[slot * 4..slot * 4 + 4].copy_from_slice(&(value as f32).to_le_bytes());
        conn.prepare_cached(
            "INSERT INTO series(host, figure, day, updated, data) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(host, figure, day) DO UPDATE SET updated = excluded.updated,
               data = excluded.data",
        )
        .and_then(|mut s| s.execute(params![r.host, figure, day, now, data]))
        .map_err(sql)?;
    }
    Ok(())
}

/// The time (s) of the host's latest metric record, if any.
pub fn latest(conn: &Connection, host: &str) -> Result<Option<i64>, String> {
    conn.prepare_cached("SELECT latest_ts FROM series_state WHERE host = ?1")
        .and_then(|mut s| s.query_row([host], |r| r.get::<_, i64>(0)).optional())
        .map(|t| t.map(|ns| ns.div_euclid(1_000_000_000)))
        .map_err(sql)
}

/// Deletes what was last written before `cutoff` (s, the collector's clock).
pub fn retain(conn: &Connection, cutoff: i64) -> Result<u64, String> {
    let n = conn
        .execute("DELETE FROM series WHERE updated < ?1", [cutoff])
        .map_err(sql)?;
    conn.execute(
        "DELETE FROM series_state WHERE host NOT IN (SELECT DISTINCT host FROM series)",
        [],
    )
    .map_err(sql)?;
    Ok(n as u64)
}

/// A host's points from `since` to `until` (s since the epoch), by figure: (minute start s,
/// value), oldest first.
pub fn points(
    conn: &Connection,
    host: &str,
    since: i64,
    until: i64,
) -> Result<BTreeMap<String, Vec<(i64, f64)>>, String> {
    let mut out: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
    let mut s = conn
        .prepare_cached(
            "SELECT figure, day, data FROM series WHERE host = ?1 AND day BETWEEN ?2 AND ?3
             ORDER BY figure, day",
        )
        .map_err(sql)?;
    let rows = s
        .query_map(
            params![host, since.div_euclid(DAY_S), until.div_euclid(DAY_S)],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, Vec<u8>>(2)?,
                ))
            },
        )
        .map_err(sql)?;
    for row in rows {
        let (figure, day, data) = row.map_err(sql)?;
        let list = out.entry(figure).or_default();
        for (i, b) in data.chunks_exact(4).enumerate() {
            let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let t = day * DAY_S + i as i64 * 60;
            if v.is_finite() && (since..=until).contains(&t) {
                list.push((t, f64::from(v)));
            }
        }
    }
    out.retain(|_, v| !v.is_empty());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Batch, Store};

    fn reading(host: &str, t_s: f64, busy: f64, extra: &[(&str, f64)]) -> Reading {
        let mut r = Reading {
            host: host.into(),
            ts: (t_s * 1e9) as i64,
            ..Reading::default()
        };
        r.counters.insert("busy:sda".into(), busy);
        r.gauges.insert("arc_size".into(), t_s);
        for (k, v) in extra {
            r.gauges.insert((*k).into(), *v);
        }
        r
    }

    fn store(s: &mut Store, readings: Vec<Reading>, now: i64) {
        s.store(
            &[Batch {
                readings,
                ..Batch::default()
            }],
            now,
        )
        .unwrap();
    }

    fn series(name: &str, labels: &[(&str, &str)], v: f64) -> zpulse_forward::series::Series {
        zpulse_forward::series::Series {
            name: name.into(),
            kind: zpulse_forward::series::SeriesType::Counter,
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            value: zpulse_forward::series::Number::Float(v),
        }
    }

    #[test]
    fn disk_charts_keep_the_disks_pools_use() {
        let io = |disk: &str| series("zpulse_disk_io_time_seconds_total", &[("disk", disk)], 1.0);
        let mut record = zpulse_forward::series::SeriesRecord {
            host: "h".into(),
            series: vec![io("sda"), io("sdb"), io("fd0"), io("loop0")],
        };
        // No roles (no pool imported, or an agent that does not say): every disk.
        let all = Reading::from_record(&record, "h", 0);
        let keys = |r: &Reading| r.counters.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&all),
            ["busy:fd0", "busy:loop0", "busy:sda", "busy:sdb"]
        );
        // sda and sdb serve tank (as the agent's zpulse_disk_role says): only they.
        for disk in ["sda", "sdb"] {
            record.series.push(series(
                "zpulse_disk_role",
                &[
                    ("disk", disk),
                    ("pool", "tank"),
                    ("class", "normal"),
                    ("vdev", "mirror-0"),
                ],
                1.0,
            ));
        }
        let pooled = Reading::from_record(&record, "h", 0);
        assert_eq!(keys(&pooled), ["busy:sda", "busy:sdb"]);
    }

    #[test]
    fn minutes_anchor_resets_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("t.db")).unwrap();
        // Minute 0: 0 s and 30 s; minute 1: 70 s and 100 s; minute 2: 130 s (counter reset).
        let t0 = 1_800_000_000.0 - 1_800_000_000.0 % 60.0;
        for (t, busy) in [
            (0.0, 10.0),
            (30.0, 16.0),
            (70.0, 20.0),
            (100.0, 31.0),
            (130.0, 1.0),
        ] {
            store(&mut s, vec![reading("h", t0 + t, busy, &[])], 5);
        }
        let p = s.series_points("h", 0, 4_000_000_000).unwrap();
        let m = t0 as i64;
        // Gauges: the last value of each minute.
        assert_eq!(
            p["arc_size"],
            vec![
                (m, (t0 + 30.0) as f32 as f64),
                (m + 60, (t0 + 100.0) as f32 as f64),
                (m + 120, (t0 + 130.0) as f32 as f64)
            ]
        );
        // Minute 0 has no anchor; minute 1 runs from 30 s (16) to 100 s (31): 15 / 70; the
        // reset in minute 2 gives no point.
        assert_eq!(
            p["disk_util:sda"],
            vec![(m + 60, (15.0f64 / 70.0) as f32 as f64)]
        );
        // A late record (older than the latest) changes nothing.
        store(&mut s, vec![reading("h", t0 + 10.0, 99.0, &[])], 5);
        assert_eq!(s.series_points("h", 0, 4_000_000_000).unwrap(), p);
        // At most MAX_FIGURES figures a host.
        let many: Vec<(String, f64)> = (0..100)
            .map(|i| (format!("pool_fill:p{i:03}"), 0.5))
            .collect();
        let extra: Vec<(&str, f64)> = many.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        store(&mut s, vec![reading("h", t0 + 200.0, 2.0, &extra)], 5);
        let p = s.series_points("h", 0, 4_000_000_000).unwrap();
        assert_eq!(p.len(), MAX_FIGURES);
        // Retention by the collector's clock: written at 5, cut at 6.
        let keep_1s = crate::store::Retention {
            max_age: Some(std::time::Duration::from_secs(1)),
            ..crate::store::Retention::default()
        };
        assert_eq!(s.retain(&keep_1s, 7).unwrap().series, MAX_FIGURES as u64);
        assert!(s.series_points("h", 0, 4_000_000_000).unwrap().is_empty());
        assert_eq!(s.series_latest("h").unwrap(), None);
    }
}
