//! `zpulse report`: every spinning disk and HDD vdev judged over the whole report window,
//! with the check's own figures, words and advice, whatever its alert windows would say.
//!
//! The window arrives as one interval ([`ReportWindow::whole`]): one observation per subject
//! holds the window's exact means (busy time, IOPS, bytes, await, request size); the
//! distribution of `%util` (p95, maximum, the share of saturated intervals) comes from the
//! per-interval values the agent kept ([`ReportWindow::busy`]).

use super::{HddSaturation, Load, Obs, Stats, Window, percentile};
use zpulse_proto::report::{Rating, ReportWindow, Section};
use zpulse_proto::sdk::Verdict;
use zpulse_proto::sdk::section::{rating_of, section_of};

/// Below this mean `%util` a disk is idle: one line for all of them, not one section each.
const IDLE_PCT: f64 = 5.0;

impl HddSaturation {
    /// The sections of `window`: one per busy HDD and HDD vdev, worst first, and one for
    /// the idle ones.
    pub fn conclude(&self, window: &ReportWindow) -> Vec<Section> {
        let whole = &window.whole;
        let mut config = self.config.clone();
        // One observation covering the whole window, judged however few samples it holds.
        config.window = window.judging_span();
        config.window_samples = usize::MAX;
        config.min_samples = 1;
        let Ok(mut judge) = HddSaturation::with_config(config) else {
            return Vec::new();
        };
        judge.describing_window = true;
        judge.record(whole);
        if let Some(share) = window.arc_metadata_share_mean() {
            judge.metadata = Window::new(f64::INFINITY, 0);
            judge.metadata.push(Obs {
                end: whole.end,
                interval: whole.interval,
                util: share,
                ..Obs::default()
            });
        }
        let saturation = self.config.saturation_pct;
        let distribution = |members: &[String], stats: &mut Stats| {
            // Per interval, the members' mean %util (a vdev is as busy as its disks on average).
            let series: Vec<&[f64]> = members
                .iter()
                .filter_map(|m| window.busy(m).map(|b| b.util.as_slice()))
                .collect();
            if series.len() != members.len() {
                return;
            }
            let n = series.iter().map(|s| s.len()).min().unwrap_or(0);
            if n == 0 {
                return;
            }
            let mut per: Vec<f64> = (0..n)
                .map(|i| series.iter().map(|s| s[i]).sum::<f64>() / series.len() as f64)
                .collect();
            per.sort_by(f64::total_cmp);
            stats.samples = n;
            stats.util_p95 = percentile(&per, 95.0);
            stats.util_max = per[n - 1];
            stats.saturated_samples = per.iter().filter(|u| **u >= saturation).count();
            stats.saturated_share = stats.saturated_samples as f64 / n as f64;
        };
        let judged = judge.judge_adjusted(whole, &distribution, &|_, _| true);
        let mut sections = Vec::new();
        let mut idle = Vec::new();
        for j in judged {
            let a = &j.assessment;
            if a.stats.util_mean < IDLE_PCT && a.verdict == Verdict::Clear {
                idle.push(j.subject);
                continue;
            }
            let load = match a.load {
                Load::SeekBound => "seek-bound",
                Load::Streaming => "streaming",
                Load::Mixed => "mixed load",
            };
            let rating = match (a.verdict, a.load) {
                (Verdict::Holds(_), _) => rating_of(a.verdict),
                // Not saturated by the thresholds, but spending its busy time seeking: worth
                // knowing before it is.
                (_, Load::SeekBound) => Rating::Info,
                _ => Rating::Ok,
            };
            let title = format!(
                "{}: {:.0}% busy ({:.0}% of intervals at ≥{saturation:.0}%), {load}",
                j.subject,
                a.stats.util_mean,
                a.stats.saturated_share * 100.0
            );
            // The verdict in words that do not change with the figures: what phases compare.
            let verdict = match a.verdict {
                Verdict::Holds(_) => format!("saturated, {load}"),
                _ => load.to_owned(),
            };
            sections.push(
                section_of(&j.report, rating, title)
                    .subject(j.subject)
                    .verdict(verdict),
            );
        }
        if !idle.is_empty() {
            sections.push(
                Section::new(
                    Rating::Ok,
                    format!("{} spinning disk(s) idle", idle.len()),
                    format!(
                        "{} were busy less than {IDLE_PCT:.0}% of the window",
                        idle.join(", ")
                    ),
                )
                .figure("idle_disks", "idle spinning disks", idle.len() as f64, ""),
            );
        }
        sections.sort_by_key(|s| std::cmp::Reverse(s.rating));
        sections
    }
}
