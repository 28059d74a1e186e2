//! The sliding window of per-sample disk figures, and the statistics over it.
//!
//! Rates over the window are totals over total time (bytes moved ÷ seconds), exactly what
//! `iostat -x` would print for one interval as long as the window; `%util` percentiles and
//! the saturated share are over the per-sample values, because saturation is a property of
//! moments, and a mean hides it.

use zpulse_proto::sdk::stats;

/// One subject (a disk, or a top-level vdev's member disks together) over one sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Obs {
    /// The sample's end, Unix seconds.
    pub end: f64,
    /// Seconds the sample covers.
    pub interval: f64,
    /// `%util` over the sample, 0–100 (for a vdev: the mean of its disks).
    pub util: f64,
    /// Requests completed (reads, writes, discards) in the sample, and the reads among them.
    pub ios: f64,
    pub read_ios: f64,
    pub read_bytes: f64,
    pub write_bytes: f64,
    /// Σ of request times in ms (await × requests): `None` when the kernel gave no await.
    pub await_total_ms: Option<f64>,
    /// Mean requests in flight.
    pub aqu_sz: f64,
    /// For a vdev: its busiest disk's `%util` (the same as `util` for a disk).
    pub util_max_member: f64,
    /// For a vdev: ZFS's own view (`zpool iostat -l` total_wait), ns × ops, and the ops.
    pub zfs_read_wait: Option<(f64, f64)>,
    pub zfs_write_wait: Option<(f64, f64)>,
}

impl Obs {
    /// Mean time per request in this sample, ms.
    pub fn await_ms(&self) -> Option<f64> {
        let total = self.await_total_ms?;
        (self.ios > 0.0).then(|| total / self.ios)
    }
}

/// The samples of one subject that fall in the window: at most `span` seconds back from the
/// newest sample, and at most `max` samples (the SDK's window, its edge rule and `max` = 0).
pub type Window = stats::Window<Obs>;

impl stats::Timed for Obs {
    fn end(&self) -> f64 {
        self.end
    }
}

impl Stats {
    /// Statistics over the samples in `window`; `None` when it is empty or covers no time.
    pub fn over(window: &Window, saturation_pct: f64) -> Option<Stats> {
        let seconds: f64 = window.iter().map(|o| o.interval).sum();
        if window.is_empty() || seconds <= 0.0 {
            return None;
        }
        let samples = window.len();
        let mut utils: Vec<f64> = window.iter().map(|o| o.util).collect();
        utils.sort_by(f64::total_cmp);
        let saturated = utils.iter().filter(|&&u| u >= saturation_pct).count();
        let ios: f64 = window.iter().map(|o| o.ios).sum();
        let read_ios: f64 = window.iter().map(|o| o.read_ios).sum();
        let read_bytes: f64 = window.iter().map(|o| o.read_bytes).sum();
        let write_bytes: f64 = window.iter().map(|o| o.write_bytes).sum();
        // await over the window = Σ request time ÷ Σ requests, over the samples that have it.
        let (await_ms, await_ios) = window
            .iter()
            .filter_map(|o| Some((o.await_total_ms?, o.ios)))
            .fold((0.0, 0.0), |(t, n), (a, i)| (t + a, n + i));
        let await_peak_ms = window
            .iter()
            .filter_map(Obs::await_ms)
            .max_by(f64::total_cmp);
        let weighted =
            |f: fn(&Obs) -> f64| window.iter().map(|o| f(o) * o.interval).sum::<f64>() / seconds;
        let zfs_wait = |f: fn(&Obs) -> Option<(f64, f64)>| {
            let (t, n) = window
                .iter()
                .filter_map(f)
                .fold((0.0, 0.0), |(t, n), (a, b)| (t + a, n + b));
            (n > 0.0).then(|| t / n / 1e6)
        };
        Some(Stats {
            samples,
            seconds,
            util_mean: weighted(|o| o.util),
            util_p95: percentile(&utils, 95.0),
            util_max: utils[samples - 1],
            util_max_member_mean: weighted(|o| o.util_max_member),
            saturated_samples: saturated,
            saturated_share: saturated as f64 / samples as f64,
            iops: ios / seconds,
            read_iops: read_ios / seconds,
            read_bytes_per_s: read_bytes / seconds,
            write_bytes_per_s: write_bytes / seconds,
            avg_request_bytes: (ios > 0.0).then(|| (read_bytes + write_bytes) / ios),
            await_mean_ms: (await_ios > 0.0).then(|| await_ms / await_ios),
            await_peak_ms,
            aqu_sz: weighted(|o| o.aqu_sz),
            zfs_read_wait_ms: zfs_wait(|o| o.zfs_read_wait),
            zfs_write_wait_ms: zfs_wait(|o| o.zfs_write_wait),
        })
    }
}

pub use zpulse_proto::sdk::stats::percentile;

/// One subject over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub samples: usize,
    pub seconds: f64,
    /// Time-weighted mean `%util`.
    pub util_mean: f64,
    pub util_p95: f64,
    pub util_max: f64,
    /// For a vdev: time-weighted mean of its busiest disk's `%util`.
    pub util_max_member_mean: f64,
    /// Samples with `%util` at or above the saturation level, and their share (0–1).
    pub saturated_samples: usize,
    pub saturated_share: f64,
    pub iops: f64,
    pub read_iops: f64,
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    pub avg_request_bytes: Option<f64>,
    pub await_mean_ms: Option<f64>,
    pub await_peak_ms: Option<f64>,
    pub aqu_sz: f64,
    pub zfs_read_wait_ms: Option<f64>,
    pub zfs_write_wait_ms: Option<f64>,
}

impl Stats {
    pub fn bytes_per_s(&self) -> f64 {
        self.read_bytes_per_s + self.write_bytes_per_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(end: f64, util: f64) -> Obs {
        Obs {
            end,
            interval: 10.0,
            util,
            ios: 100.0,
            read_bytes: 409_600.0,
            await_total_ms: Some(800.0),
            util_max_member: util,
            ..Obs::default()
        }
    }

    #[test]
    fn the_window_keeps_time_and_count() {
        let mut w = Window::new(30.0, 0);
        for t in [10.0, 20.0, 30.0, 40.0] {
            w.push(obs(t, 50.0));
        }
        // At 40 s the window reaches back to 10 s: the sample ending at 10 s is all before it.
        assert_eq!(w.len(), 3);
        w.prune(75.0);
        assert_eq!(w.len(), 0);
        let mut w = Window::new(1e9, 2);
        for t in [10.0, 20.0, 30.0] {
            w.push(obs(t, 50.0));
        }
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn stats_are_totals_over_time() {
        let mut w = Window::new(1e9, 0);
        w.push(obs(10.0, 100.0));
        w.push(Obs {
            interval: 30.0,
            ios: 0.0,
            read_bytes: 0.0,
            await_total_ms: None,
            ..obs(40.0, 20.0)
        });
        let s = Stats::over(&w, 95.0).unwrap();
        assert_eq!(s.samples, 2);
        assert_eq!(s.seconds, 40.0);
        assert!((s.util_mean - (100.0 * 10.0 + 20.0 * 30.0) / 40.0).abs() < 1e-9);
        assert_eq!(s.saturated_samples, 1);
        assert_eq!(s.saturated_share, 0.5);
        assert!((s.iops - 2.5).abs() < 1e-9);
        assert!((s.read_bytes_per_s - 10_240.0).abs() < 1e-9);
        assert_eq!(s.avg_request_bytes, Some(4096.0));
        assert_eq!(s.await_mean_ms, Some(8.0));
        assert_eq!(s.await_peak_ms, Some(8.0));
        assert_eq!(s.util_p95, 100.0);
    }
}
