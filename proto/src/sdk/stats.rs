//! Window statistics and rounding that checks share: the sliding window of recent
//! observations, a least-squares trend, a nearest-rank percentile, and the rounding of figures
//! before they are compared or reported.

use std::collections::VecDeque;

/// An observation that ends at a point in time (a sample's end, Unix seconds).
pub trait Timed {
    fn end(&self) -> f64;
}

/// A `(time, value)` point, as [`least_squares_slope`] takes them: a trend's window holds
/// these.
impl Timed for (f64, f64) {
    fn end(&self) -> f64 {
        self.0
    }
}

/// The most recent observations: at most `span` seconds back from the newest one, and at
/// most `max` of them. Every check's window is one of these, so they share one edge rule: an
/// observation that ended `span` or more seconds before the newest one is out (its whole
/// interval lies before the window), one that ended less than `span` before is in.
///
/// A check's `window` and `window_samples` settings are `span` and `max`;
/// [`check_window_samples`] is the one rule for the two together.
#[derive(Debug, Clone)]
pub struct Window<T> {
    obs: VecDeque<T>,
    span: f64,
    max: usize,
}

impl<T: Timed> Window<T> {
    /// `max` = 0 means no limit by count: `span` alone bounds the window.
    pub fn new(span_s: f64, max: usize) -> Window<T> {
        Window {
            obs: VecDeque::new(),
            span: span_s,
            max: if max == 0 { usize::MAX } else { max },
        }
    }

    pub fn push(&mut self, obs: T) {
        self.push_evicting(obs, |_| {});
    }

    /// [`Window::push`], handing each observation it drops to `evicted`, oldest first: for a
    /// summary kept beside the window ([`Trend`]).
    pub fn push_evicting(&mut self, obs: T, mut evicted: impl FnMut(T)) {
        let end = obs.end();
        self.obs.push_back(obs);
        while self.obs.len() > self.max {
            if let Some(old) = self.obs.pop_front() {
                evicted(old);
            }
        }
        self.prune_evicting(end, evicted);
    }

    /// Drops observations that ended `span` or more seconds before `now`: all their time lies
    /// outside the window.
    pub fn prune(&mut self, now: f64) {
        self.prune_evicting(now, |_| {});
    }

    /// [`Window::prune`], handing each observation it drops to `evicted`, oldest first.
    pub fn prune_evicting(&mut self, now: f64, mut evicted: impl FnMut(T)) {
        while self.obs.front().is_some_and(|o| o.end() <= now - self.span) {
            if let Some(old) = self.obs.pop_front() {
                evicted(old);
            }
        }
    }

    /// Forgets every observation (the subject went away).
    pub fn clear(&mut self) {
        self.obs.clear();
    }

    pub fn len(&self) -> usize {
        self.obs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.obs.is_empty()
    }

    pub fn iter(&self) -> std::collections::vec_deque::Iter<'_, T> {
        self.obs.iter()
    }

    pub fn front(&self) -> Option<&T> {
        self.obs.front()
    }

    pub fn back(&self) -> Option<&T> {
        self.obs.back()
    }
}

/// The one meaning of a check's `window_samples` beside its `min_samples`: 0 is no limit by
/// count (the `window` duration alone bounds the window); any other value must let the window
/// hold `min_samples`, or the check could never judge. The error names both settings.
pub fn check_window_samples(window_samples: usize, min_samples: usize) -> Result<(), String> {
    if window_samples != 0 && window_samples < min_samples {
        return Err(format!(
            "window_samples ({window_samples}) must be 0 (no limit) or at least min_samples \
             ({min_samples})"
        ));
    }
    Ok(())
}

/// A check's `window` and `window_samples` settings together: a window of 0 s could hold no
/// observation (each is out as soon as it is in, by [`Window`]'s edge rule), so it is
/// refused; `window_samples` as [`check_window_samples`] says.
pub fn check_window(
    window: std::time::Duration,
    window_samples: usize,
    min_samples: usize,
) -> Result<(), String> {
    if window.is_zero() {
        return Err("window must be longer than 0 s".into());
    }
    check_window_samples(window_samples, min_samples)
}

/// Slope of the least-squares line through `points` (x, y), in y per x. `None` for fewer than
/// two points or no spread in x.
///
/// The sums are centred on the means, so that x given as Unix times (squared, ~3e18) does not
/// lose the seconds in `f64`.
pub fn least_squares_slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// A [`Window`] of `(time, value)` points and the least-squares slope through them, kept as
/// running sums so that a sample costs the same however many points the window holds. A
/// capacity trend looks a day back: at a 10 s interval 8,640 points, which copied out and
/// fitted afresh each sample were a check's largest cost.
///
/// The sums are of the points less an origin (the oldest point when they were last summed
/// whole), so that Unix times and byte counts do not swamp the differences a slope is made
/// of; they are summed whole again once as many points have left as the window holds, which
/// keeps the rounding of many additions and subtractions from building up, at O(1) a sample
/// amortised. [`Trend::slope`] agrees with [`least_squares_slope`] over the same points.
#[derive(Debug, Clone)]
pub struct Trend {
    points: Window<(f64, f64)>,
    origin: (f64, f64),
    sums: Sums,
    /// Points that left since the sums were last made whole.
    left: usize,
}

/// Σ1, Σx, Σy, Σx², Σxy of points less the origin.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    n: f64,
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
}

impl Sums {
    fn add(&mut self, x: f64, y: f64, sign: f64) {
        self.n += sign;
        self.x += sign * x;
        self.y += sign * y;
        self.xx += sign * x * x;
        self.xy += sign * x * y;
    }
}

impl Trend {
    /// A trend over at most `span_s` seconds and `max` points, as [`Window::new`].
    pub fn new(span_s: f64, max: usize) -> Trend {
        Trend {
            points: Window::new(span_s, max),
            origin: (0.0, 0.0),
            sums: Sums::default(),
            left: 0,
        }
    }

    /// Adds the point `(t, y)`, dropping those the window no longer holds.
    pub fn push(&mut self, (t, y): (f64, f64)) {
        if self.points.is_empty() {
            self.origin = (t, y);
            self.sums = Sums::default();
            self.left = 0;
        }
        let (x0, y0) = self.origin;
        self.sums.add(t - x0, y - y0, 1.0);
        let (sums, left) = (&mut self.sums, &mut self.left);
        // A NaN or infinity leaves the sums non-finite: subtracting it back cannot undo that,
        // so once one has left (or stood as the origin) the sums are made whole again, and the
        // slope is the fit of what the window holds, as least_squares_slope would give.
        let mut non_finite_left = false;
        self.points.push_evicting((t, y), |(t, y)| {
            sums.add(t - x0, y - y0, -1.0);
            *left += 1;
            non_finite_left |= !(t.is_finite() && y.is_finite());
        });
        if non_finite_left
            || !(x0.is_finite() && y0.is_finite())
            || self.left >= self.points.len().max(1)
        {
            self.sum_whole();
        }
    }

    /// The sums made afresh from the points held, about the oldest finite one.
    fn sum_whole(&mut self) {
        self.origin = self
            .points
            .iter()
            .copied()
            .find(|(t, y)| t.is_finite() && y.is_finite())
            .unwrap_or_default();
        let (x0, y0) = self.origin;
        self.sums = Sums::default();
        for &(t, y) in self.points.iter() {
            self.sums.add(t - x0, y - y0, 1.0);
        }
        self.left = 0;
    }

    /// Slope of the least-squares line through the points, in value per second; `None` for
    /// fewer than two points or all at one time.
    pub fn slope(&self) -> Option<f64> {
        let s = &self.sums;
        if self.points.len() < 2 {
            return None;
        }
        let n = self.points.len() as f64;
        // Centred as least_squares_slope is: Σ(x − x̄)² and Σ(x − x̄)(y − ȳ).
        let sxx = s.xx - s.x * s.x / n;
        let sxy = s.xy - s.x * s.y / n;
        // A spread in x that is rounding of identical times is none.
        let spread =
            self.points.back().map_or(0.0, |b| b.0) - self.points.front().map_or(0.0, |f| f.0);
        (sxx > 0.0 && spread > 0.0).then(|| sxy / sxx)
    }

    /// The points, oldest first.
    pub fn points(&self) -> &Window<(f64, f64)> {
        &self.points
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Seconds from the oldest point to the newest.
    pub fn span_s(&self) -> f64 {
        match (self.points.front(), self.points.back()) {
            (Some(f), Some(b)) => b.0 - f.0,
            _ => 0.0,
        }
    }
}

/// Nearest-rank percentile of sorted values (the value at rank ⌈p/100 · n⌉, at least the
/// first); NaN for no values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A figure compared with a threshold, rounded to a billionth: a time-weighted mean of samples
/// at exactly 60% can come out as 60.00000000000001, and must not land across the edge.
pub fn settle(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// Two decimals: enough for people, and stable figures don't look like changes.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Three significant digits: enough for people, and stable figures don't look like changes.
/// 0 for 0 and for what is not finite.
pub fn round_sig3(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return 0.0;
    }
    let scale = 10f64.powi(2 - decimal_exponent(x));
    (x * scale).round() / scale
}

/// The decimal exponent of a finite, non-zero `x`, as its shortest representation writes it
/// (`1.23e-4`: -4): `x.abs().log10().floor()`, without `log10`. The one call of libm's in the
/// checks' bundle and the agent was `log10` (and the agent's `pow`): without them neither
/// links libm, whose pages (half a MiB resident: its relocations and IFUNC resolvers are
/// run at load) no process of the agent's then maps. Formatting `{:e}` costs a few hundred
/// instructions against `log10`'s few dozen; the checks round a few dozen figures a sample.
pub fn decimal_exponent(x: f64) -> i32 {
    struct Buf {
        bytes: [u8; 40],
        len: usize,
    }
    impl std::fmt::Write for Buf {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let end = self.len + s.len();
            self.bytes
                .get_mut(self.len..end)
                .ok_or(std::fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }
    let mut buf = Buf {
        bytes: [0; 40],
        len: 0,
    };
    // At most 17 digits, a point, "e" and "-324": it fits.
    let _ = std::fmt::Write::write_fmt(&mut buf, format_args!("{:e}", x.abs()));
    let text = std::str::from_utf8(&buf.bytes[..buf.len]).unwrap_or("");
    text.rsplit_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Timed for f64 {
        fn end(&self) -> f64 {
            *self
        }
    }

    #[test]
    fn the_window_keeps_span_seconds_and_max_observations() {
        let mut w: Window<f64> = Window::new(30.0, 0);
        for end in [0.0, 10.0, 20.0, 30.0] {
            w.push(end);
        }
        // 0.0 ended 30 s before 30.0: all its time lies outside the window.
        assert_eq!(w.iter().copied().collect::<Vec<_>>(), [10.0, 20.0, 30.0]);
        let mut capped: Window<f64> = Window::new(1e9, 2);
        for end in [1.0, 2.0, 3.0] {
            capped.push(end);
        }
        assert_eq!(capped.iter().copied().collect::<Vec<_>>(), [2.0, 3.0]);
        capped.prune(1e9 + 2.5);
        assert_eq!(capped.back(), Some(&3.0));
        assert_eq!(capped.len(), 1);
    }

    #[test]
    fn the_edge_is_span_seconds_back_from_the_newest() {
        // 10 s samples in a 60 s window: the one that ended exactly 60 s back is out, one
        // that ended 59.9 s back is in.
        let mut w: Window<f64> = Window::new(60.0, 0);
        for end in [0.0, 0.1, 10.0, 60.0] {
            w.push(end);
        }
        assert_eq!(w.iter().copied().collect::<Vec<_>>(), [0.1, 10.0, 60.0]);
        // Pruning with no new observation uses the same edge: 10.0 ended 60 s before 70.0.
        w.prune(70.0);
        assert_eq!(w.iter().copied().collect::<Vec<_>>(), [60.0]);
    }

    #[test]
    fn window_samples_zero_is_no_limit_and_otherwise_holds_min_samples() {
        assert_eq!(check_window_samples(0, 12), Ok(()));
        assert_eq!(check_window_samples(12, 12), Ok(()));
        let err = check_window_samples(5, 12).unwrap_err();
        assert!(
            err.contains("window_samples (5)") && err.contains("min_samples (12)"),
            "{err}"
        );
        assert_eq!(
            check_window(std::time::Duration::from_secs(600), 0, 12),
            Ok(())
        );
        assert_eq!(
            check_window(std::time::Duration::ZERO, 0, 12),
            Err("window must be longer than 0 s".into())
        );
        assert!(check_window(std::time::Duration::from_secs(600), 5, 12).is_err());
        // A window of 0 s keeps nothing, not even the observation just pushed.
        let mut empty: Window<f64> = Window::new(0.0, 0);
        empty.push(1.0);
        assert!(empty.is_empty());
        // 0 in the window itself: only the span drops observations.
        let mut w: Window<f64> = Window::new(1000.0, 0);
        for end in 0..500 {
            w.push(end as f64);
        }
        assert_eq!(w.len(), 500);
    }

    #[test]
    fn least_squares_slope_is_exact_on_a_line_and_robust_to_unix_times() {
        let t0 = 1.8e9;
        let pts: Vec<(f64, f64)> = (0..5)
            .map(|i| (t0 + i as f64 * 10.0, 1000.0 + 3.0 * i as f64 * 10.0))
            .collect();
        assert!((least_squares_slope(&pts).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(least_squares_slope(&pts[..1]), None);
        assert_eq!(least_squares_slope(&[(1.0, 1.0), (1.0, 2.0)]), None);
        // Noise around a line: the fit, not the end points.
        let noisy = [(0.0, 0.0), (1.0, 12.0), (2.0, 18.0), (3.0, 30.0)];
        assert!((least_squares_slope(&noisy).unwrap() - 9.6).abs() < 1e-9);
    }

    #[test]
    fn a_trend_is_the_least_squares_slope_of_its_window_however_long_it_runs() {
        // A special class filling over days at a 10 s interval: Unix times, byte counts in
        // the hundreds of GB, noise of a few MB, the window a day or 8,640 points; the
        // reference is the fit of the same points made afresh.
        for (span, max) in [(86_400.0, 8_640), (3_600.0, 0), (1e9, 50)] {
            let mut trend = Trend::new(span, max);
            let mut held: VecDeque<(f64, f64)> = VecDeque::new();
            let mut noise = 0x2545_f491_u64;
            for i in 0..30_000u32 {
                noise ^= noise << 13;
                noise ^= noise >> 7;
                noise ^= noise << 17;
                let t = 1.8e9 + f64::from(i) * 10.0;
                // 2 MB a minute, then flat, then shrinking: each a different slope.
                let growth = match i {
                    0..10_000 => 2e6 / 60.0 * f64::from(i) * 10.0,
                    10_000..20_000 => 3.3e8,
                    _ => 3.3e8 - 1e6 / 60.0 * f64::from(i - 20_000) * 10.0,
                };
                let y = 4e11 + growth + (noise % 4_000_000) as f64;
                trend.push((t, y));
                held.push_back((t, y));
                while held.len() > if max == 0 { usize::MAX } else { max }
                    || held.front().is_some_and(|p| p.0 <= t - span)
                {
                    held.pop_front();
                }
                if i % 997 == 1 || i == 29_999 {
                    let pts: Vec<(f64, f64)> = held.iter().copied().collect();
                    let want = least_squares_slope(&pts).unwrap();
                    let got = trend.slope().unwrap();
                    assert!(
                        (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                        "window ({span} s, {max}) after {i} points: {got} against {want}"
                    );
                    assert_eq!(trend.len(), pts.len());
                    assert_eq!(trend.span_s(), pts[pts.len() - 1].0 - pts[0].0);
                }
            }
        }
        let mut one = Trend::new(60.0, 0);
        assert_eq!(one.slope(), None);
        one.push((1.8e9, 5.0));
        assert_eq!(one.slope(), None);
        one.push((1.8e9, 7.0));
        assert_eq!(one.slope(), None, "two points at one time have no slope");
        one.push((1.8e9 + 10.0, 9.0));
        // By hand: x̄ = 10/3, ȳ = 7, Σ(x − x̄)² = 600/9, Σ(x − x̄)(y − ȳ) = 20.
        assert!((one.slope().unwrap() - 0.3).abs() < 1e-12);
    }

    #[test]
    fn a_trend_recovers_once_a_non_finite_point_has_left_its_window() {
        // At most 10 points. A NaN value, an infinite time, a NaN first point: while one is
        // held the slope is not a number; once it has left, the fit of the points held.
        for bad in [(1.8e9 + 50.0, f64::NAN), (f64::INFINITY, 7.0)] {
            for first in [false, true] {
                let mut trend = Trend::new(1e9, 10);
                let mut held: VecDeque<(f64, f64)> = VecDeque::new();
                for i in 0..30u32 {
                    let good = (1.8e9 + f64::from(i) * 10.0, 4e11 + 3.0 * f64::from(i * i));
                    let p = if i == if first { 0 } else { 5 } {
                        bad
                    } else {
                        good
                    };
                    trend.push(p);
                    held.push_back(p);
                    if held.len() > 10 {
                        held.pop_front();
                    }
                    let pts: Vec<(f64, f64)> = held.iter().copied().collect();
                    if pts.iter().all(|(t, y)| t.is_finite() && y.is_finite()) && pts.len() >= 2 {
                        let want = least_squares_slope(&pts).unwrap();
                        let got = trend.slope().unwrap();
                        assert!(
                            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                            "{bad:?} (first: {first}) after {i}: {got} against {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn nearest_rank_percentile() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&v, 100.0), 20.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn rounding() {
        assert_eq!(settle(60.00000000000001), 60.0);
        assert_eq!(round2(1.2345), 1.23);
        assert_eq!(round_sig3(123456.0), 123000.0);
        assert_eq!(round_sig3(0.0012345), 0.00123);
        assert_eq!(round_sig3(0.012_345), 0.0123);
        assert_eq!(round_sig3(-4.5678), -4.57);
        assert_eq!(round_sig3(f64::NAN), 0.0);
        assert_eq!(round_sig3(0.0), 0.0);
        assert_eq!(round_sig3(999.999_9), 1000.0);
    }

    #[test]
    fn the_decimal_exponent_is_log10s_floor() {
        for x in [
            1.0, 9.99, 10.0, 123456.0, 0.0012345, 0.1, 1e-300, 5e-324, 1e308, -42.0, 7e22, 1e23,
        ] {
            assert_eq!(decimal_exponent(x), x.abs().log10().floor() as i32, "{x}");
        }
    }
}
