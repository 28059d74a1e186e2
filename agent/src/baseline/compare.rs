//! Two windows side by side (`zpulse report --compare BEFORE AFTER`): the figures that say
//! whether a change to a pool worked — latency per class and vdev (the seed's metadata reads,
//! 46 ms on an HDD mirror before a special vdev, 455 µs after), disk busy time, the ARC's
//! metadata share, where metadata lives.

use super::{Baseline, VdevFigures};
use serde::{Deserialize, Serialize};

/// One figure in both windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub group: String,
    pub what: String,
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub unit: String,
    /// `Some(true)` when a lower value is better (latency, busy time), `Some(false)` when a
    /// higher one is (hit ratios), `None` when neither.
    pub lower_is_better: Option<bool>,
}

impl Row {
    /// `after / before` as a factor and a percentage, or what appeared or went away.
    pub fn change(&self) -> String {
        match (self.before, self.after) {
            (Some(b), Some(a)) if b != 0.0 && a == 0.0 => "to 0".into(),
            (Some(b), Some(a)) if b != 0.0 => {
                let factor = a / b;
                let pct = (factor - 1.0) * 100.0;
                if factor < 0.5 && factor > 0.0 {
                    format!("{:.0}× less ({pct:+.0}%)", 1.0 / factor)
                } else if factor > 2.0 {
                    format!("{factor:.1}× more ({pct:+.0}%)")
                } else {
                    format!("{pct:+.1}%")
                }
            }
            (Some(_), Some(0.0)) => "unchanged (0)".into(),
            (Some(_), Some(_)) => "from 0".into(),
            (None, Some(_)) => "new".into(),
            (Some(_), None) => "gone".into(),
            (None, None) => "–".into(),
        }
    }

    /// Whether the change is an improvement (by more than 5%), a regression, or neither.
    pub fn better(&self) -> Option<bool> {
        let (b, a, lower) = (self.before?, self.after?, self.lower_is_better?);
        if b == 0.0 || ((a - b) / b).abs() < 0.05 {
            return None;
        }
        Some((a < b) == lower)
    }

    pub fn show(&self, v: Option<f64>) -> String {
        match v {
            None => "–".into(),
            Some(x) if self.unit == "ms" && x < 1.0 => format!("{:.0} µs", x * 1000.0),
            Some(x) if self.unit == "ms" => format!("{x:.1} ms"),
            Some(x) if self.unit == "%" => format!("{x:.1}%"),
            Some(x) => format!("{x:.2} {}", self.unit),
        }
    }
}

/// The two windows' differences.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The changes that matter most, in words.
    pub headlines: Vec<String>,
    pub rows: Vec<Row>,
}

/// The class that holds a pool's metadata in a window: its special class when it has one,
/// else its normal class. (Metadata written before a special vdev was added stays where it
/// was until rewritten; the allocation per class in the pool table shows how much moved.)
pub fn metadata_class<'a>(b: &'a Baseline, pool: &str) -> Option<&'a VdevFigures> {
    let of = |class: &str| {
        b.classes
            .iter()
            .find(|c| c.pool == pool && c.class == class)
    };
    of("special").or_else(|| of("normal"))
}

fn union<'a>(a: impl Iterator<Item = &'a str>, b: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = a.collect();
    for x in b {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

pub fn compare(before: &Baseline, after: &Baseline) -> Comparison {
    let mut c = Comparison::default();
    let mut row = |group: &str, what: String, b: Option<f64>, a: Option<f64>, unit: &str, lower| {
        // Nothing on either side (an idle log's reads) is not a change worth a row.
        let zero = |x: Option<f64>| x.is_none_or(|x| x.abs() < 1e-9);
        if !(zero(b) && zero(a)) {
            c.rows.push(Row {
                group: group.into(),
                what,
                before: b,
                after: a,
                unit: unit.into(),
                lower_is_better: lower,
            });
        }
    };
    let mut headlines = Vec::new();

    let pools = union(
        before.pools.iter().map(|p| p.name.as_str()),
        after.pools.iter().map(|p| p.name.as_str()),
    );
    for pool in &pools {
        let (mb, ma) = (metadata_class(before, pool), metadata_class(after, pool));
        let what = format!(
            "{pool}: metadata reads ({} → {} class), mean latency",
            mb.map_or("–", |v| v.class.as_str()),
            ma.map_or("–", |v| v.class.as_str())
        );
        let (b, a) = (
            mb.and_then(|v| v.read_total_ms),
            ma.and_then(|v| v.read_total_ms),
        );
        if let (Some(b), Some(a), Some(mb), Some(ma)) = (b, a, mb, ma) {
            let show = |x: f64| {
                if x < 1.0 {
                    format!("{:.0} µs", x * 1000.0)
                } else {
                    format!("{x:.1} ms")
                }
            };
            headlines.push(format!(
                "{pool}: metadata reads took {} on the {} class before and {} on the {} class \
                 after ({})",
                show(b),
                mb.class,
                show(a),
                ma.class,
                match a / b {
                    f if (0.9..=1.1).contains(&f) => "about the same".to_string(),
                    f if f < 1.0 => format!("{:.0}× faster", 1.0 / f),
                    f => format!("{f:.1}× slower"),
                }
            ));
        }
        row("Metadata", what, b, a, "ms", Some(true));
        let alloc = |x: &Baseline, class: &str| {
            x.pools
                .iter()
                .find(|p| p.name == *pool)
                .and_then(|p| p.classes.iter().find(|c| c.0 == class))
                .map(|c| c.1 as f64 / 1e6)
        };
        row(
            "Metadata",
            format!("{pool}: allocated on the special class"),
            alloc(before, "special"),
            alloc(after, "special"),
            "MB",
            None,
        );
    }

    let classes = union(
        before.classes.iter().map(|v| v.subject.as_str()),
        after.classes.iter().map(|v| v.subject.as_str()),
    );
    let vdevs = union(
        before.vdevs.iter().map(|v| v.subject.as_str()),
        after.vdevs.iter().map(|v| v.subject.as_str()),
    );
    for (group, names, list_b, list_a) in [
        (
            "Latency per class",
            &classes,
            &before.classes,
            &after.classes,
        ),
        ("Latency per vdev", &vdevs, &before.vdevs, &after.vdevs),
    ] {
        for name in names {
            let (b, a) = (
                list_b.iter().find(|v| v.subject == *name),
                list_a.iter().find(|v| v.subject == *name),
            );
            let f = |v: Option<&VdevFigures>, g: fn(&VdevFigures) -> Option<f64>| v.and_then(g);
            row(
                group,
                format!("{name}: read"),
                f(b, |v| v.read_total_ms),
                f(a, |v| v.read_total_ms),
                "ms",
                Some(true),
            );
            row(
                group,
                format!("{name}: read, disk only"),
                f(b, |v| v.read_disk_ms),
                f(a, |v| v.read_disk_ms),
                "ms",
                Some(true),
            );
            row(
                group,
                format!("{name}: write"),
                f(b, |v| v.write_total_ms),
                f(a, |v| v.write_total_ms),
                "ms",
                Some(true),
            );
            row(
                group,
                format!("{name}: reads/s"),
                b.map(|v| v.read_ops_s),
                a.map(|v| v.read_ops_s),
                "/s",
                None,
            );
        }
    }

    let disks = union(
        before.disks.iter().map(|d| d.name.as_str()),
        after.disks.iter().map(|d| d.name.as_str()),
    );
    for name in &disks {
        let (b, a) = (
            before.disks.iter().find(|d| d.name == *name),
            after.disks.iter().find(|d| d.name == *name),
        );
        // A disk idle in both windows says nothing about the change.
        if b.is_none_or(|d| d.util_mean < 1.0) && a.is_none_or(|d| d.util_mean < 1.0) {
            continue;
        }
        let kind = b.or(a).map_or("", |d| d.kind.as_str());
        row(
            "Disks",
            format!("{name} ({kind}): mean %util"),
            b.map(|d| d.util_mean),
            a.map(|d| d.util_mean),
            "%",
            Some(true),
        );
        row(
            "Disks",
            format!("{name} ({kind}): intervals ≥95% busy"),
            b.and_then(|d| d.saturated_pct),
            a.and_then(|d| d.saturated_pct),
            "%",
            Some(true),
        );
        row(
            "Disks",
            format!("{name} ({kind}): read await"),
            b.and_then(|d| d.r_await_ms),
            a.and_then(|d| d.r_await_ms),
            "ms",
            Some(true),
        );
        row(
            "Disks",
            format!("{name} ({kind}): MB/s read + write"),
            b.map(|d| d.read_mb_s + d.write_mb_s),
            a.map(|d| d.read_mb_s + d.write_mb_s),
            "MB/s",
            None,
        );
    }
    let busiest = |x: &Baseline| {
        x.disks
            .iter()
            .filter(|d| d.kind == "hdd")
            .map(|d| d.util_mean)
            .fold(None, |m: Option<f64>, u| Some(m.map_or(u, |m| m.max(u))))
    };
    if let (Some(b), Some(a)) = (busiest(before), busiest(after)) {
        headlines.push(format!(
            "the busiest HDD was {b:.0}% busy before and {a:.0}% after"
        ));
    }

    let (ab, aa) = (before.arc.as_ref(), after.arc.as_ref());
    row(
        "ARC",
        "metadata share (mean)".into(),
        ab.and_then(|a| a.metadata_pct),
        aa.and_then(|a| a.metadata_pct),
        "%",
        None,
    );
    row(
        "ARC",
        "hit ratio".into(),
        ab.and_then(|a| a.hit_pct),
        aa.and_then(|a| a.hit_pct),
        "%",
        Some(false),
    );
    row(
        "ARC",
        "demand metadata hit ratio".into(),
        ab.and_then(|a| a.demand_metadata_hit_pct),
        aa.and_then(|a| a.demand_metadata_hit_pct),
        "%",
        Some(false),
    );
    row(
        "ARC",
        "L2ARC share of all reads".into(),
        ab.and_then(|a| a.l2_share_of_reads_pct),
        aa.and_then(|a| a.l2_share_of_reads_pct),
        "%",
        Some(false),
    );
    let (zb, za) = (before.zil.as_ref(), after.zil.as_ref());
    row(
        "ZIL",
        "commits/s".into(),
        zb.map(|z| z.commits_s),
        za.map(|z| z.commits_s),
        "/s",
        None,
    );
    row(
        "ZIL",
        "log blocks to the SLOG".into(),
        zb.and_then(|z| z.slog_pct),
        za.and_then(|z| z.slog_pct),
        "%",
        None,
    );
    c.headlines = headlines;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::PoolFigures;

    fn class(pool: &str, class: &str, read_ms: f64) -> VdevFigures {
        VdevFigures {
            subject: format!("{pool}/{class}"),
            pool: pool.into(),
            class: class.into(),
            read_ops_s: 100.0,
            read_total_ms: Some(read_ms),
            ..VdevFigures::default()
        }
    }

    fn window(classes: Vec<VdevFigures>) -> Baseline {
        Baseline {
            pools: vec![PoolFigures {
                name: "tank".into(),
                ..PoolFigures::default()
            }],
            classes,
            ..Baseline::default()
        }
    }

    #[test]
    fn metadata_reads_move_from_the_normal_to_the_special_class() {
        // The seed's figures: 46 ms on the HDD mirror, 455 µs once a special vdev holds the
        // metadata.
        let before = window(vec![class("tank", "normal", 46.0)]);
        let after = window(vec![
            class("tank", "normal", 30.0),
            class("tank", "special", 0.455),
        ]);
        let c = compare(&before, &after);
        let row = c
            .rows
            .iter()
            .find(|r| {
                r.what
                    .starts_with("tank: metadata reads (normal → special class)")
            })
            .unwrap();
        assert_eq!((row.before, row.after), (Some(46.0), Some(0.455)));
        assert_eq!(row.better(), Some(true));
        assert_eq!(row.show(row.after), "455 µs");
        assert_eq!(row.change(), "101× less (-99%)");
        assert!(
            c.headlines[0].contains("46.0 ms on the normal class before and 455 µs on the special class after (101× faster)"),
            "{:?}",
            c.headlines
        );
    }

    #[test]
    fn changes_are_named_in_words() {
        let r = |before, after, lower| Row {
            group: String::new(),
            what: String::new(),
            before,
            after,
            unit: "%".into(),
            lower_is_better: lower,
        };
        assert_eq!(
            r(Some(10.0), Some(10.2), Some(true)).better(),
            None,
            "under 5%"
        );
        assert_eq!(r(Some(10.0), Some(20.0), Some(true)).better(), Some(false));
        assert_eq!(r(Some(50.0), Some(60.0), Some(false)).better(), Some(true));
        assert_eq!(
            r(Some(10.0), Some(30.0), None).change(),
            "3.0× more (+200%)"
        );
        assert_eq!(r(Some(10.0), Some(0.0), None).change(), "to 0");
        assert_eq!(r(None, Some(1.0), None).change(), "new");
        assert_eq!(r(Some(1.0), None, None).change(), "gone");
    }
}
