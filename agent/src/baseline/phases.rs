//! Phases: the stretches of a window over which a check's verdict was not the same all along.
//!
//! A report judges the whole window as one interval, and a 60-second metadata storm inside
//! a quiet three-minute window comes out as "mixed load", the storm's own verdict averaged
//! away. So the report also hands every check each interval as a window of its own (the
//! same `report` entry point, nothing for a check to add): each section's
//! [`verdict_key`](Section::verdict_key) per interval, under its check and subject, makes a
//! track. A run of intervals with one verdict that is worth saying (rated above `ok`) and
//! does not hold the whole window is a phase; the check judges that stretch once more, as a
//! window of its own, for the phase's figures, words and advice. A break in the window
//! (counters restarted, a gap, a clock step) ends every run.
//!
//! The tracker keeps one run per track, each with the snapshots it starts and ends at (shared,
//! not copied), and the finished runs worth stating, at most [`KEPT_RUNS`]: the shortest go
//! first when there are more, and the report says how many.

use super::Builder;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use zpulse_proto::Snapshot;
use zpulse_proto::report::{Rating, ReportWindow, Section};

/// Finished runs kept for phases; each holds two snapshots.
pub const KEPT_RUNS: usize = 64;

/// One stretch of the window and what a check concluded over it alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// `taken_at` of the stretch's first and last snapshot, Unix seconds.
    pub from: f64,
    pub to: f64,
    pub intervals: u32,
    /// The check's conclusion over the stretch as a window of its own.
    #[serde(flatten)]
    pub section: Section,
}

impl Phase {
    /// `sda: seek-bound from 2026-11-30 11:00:00 UTC to 11:01:05 UTC (1 min 05 s, 4 intervals)`.
    pub fn headline(&self) -> String {
        let from = crate::report::utc(self.from);
        let to = crate::report::utc(self.to);
        // The end's date is said only when it is not the start's.
        let to = match (from.split_once(' '), to.split_once(' ')) {
            (Some((day_from, _)), Some((day_to, time))) if day_from == day_to => time.to_owned(),
            _ => to,
        };
        // The verdict's words after the subject; a check that names none is said by its
        // title (a rating alone says too little).
        let what = match (&self.section.verdict, &self.section.subject) {
            (Some(v), Some(s)) => format!("{s}: {v}"),
            (Some(v), None) => v.clone(),
            (None, _) => self.section.title.clone(),
        };
        format!(
            "{what} from {from} to {to} ({}, {} interval{})",
            super::page::duration(self.to - self.from),
            self.intervals,
            if self.intervals == 1 { "" } else { "s" }
        )
    }
}

/// A check's sections about one thing: its subject, or for a section without one, its
/// verdict.
type Track = (String, String);

fn track_of(s: &Section) -> Track {
    (
        s.check.clone(),
        s.subject
            .clone()
            .unwrap_or_else(|| format!("({})", s.verdict_key())),
    )
}

/// Intervals in a row with one verdict of one track.
#[derive(Debug, Clone)]
pub struct Run {
    pub check: String,
    pub subject: Option<String>,
    pub verdict: String,
    pub rating: Rating,
    pub start: Arc<Snapshot>,
    pub end: Arc<Snapshot>,
    /// The numbers of its first and last interval (1 for the window's first).
    pub first: u32,
    pub last: u32,
}

impl Run {
    fn seconds(&self) -> f64 {
        self.end.taken_at - self.start.taken_at
    }
}

/// Follows every track's verdict interval by interval.
#[derive(Default)]
pub struct Tracker {
    open: BTreeMap<Track, Run>,
    finished: Vec<Run>,
    /// Finished runs worth stating that were let go for [`KEPT_RUNS`].
    dropped: usize,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// The sections every check gave over interval number `index`, from `start` to `end`.
    pub fn observe(
        &mut self,
        index: u32,
        start: &Arc<Snapshot>,
        end: &Arc<Snapshot>,
        sections: &[Section],
    ) {
        // A check may say several things about one subject (a log's redundancy, its size,
        // its use): its verdict on the subject is its worst-rated section's, the first of
        // equals.
        let mut worst: Vec<(Track, &Section)> = Vec::with_capacity(sections.len());
        for s in sections {
            let track = track_of(s);
            match worst.iter_mut().find(|(t, _)| *t == track) {
                Some((_, w)) if s.rating > w.rating => *w = s,
                Some(_) => {}
                None => worst.push((track, s)),
            }
        }
        let seen: Vec<Track> = worst.iter().map(|(t, _)| t.clone()).collect();
        for (track, s) in worst {
            let verdict = s.verdict_key();
            match self.open.get_mut(&track) {
                Some(run) if run.verdict == verdict && run.last + 1 == index => {
                    run.end = Arc::clone(end);
                    run.last = index;
                    run.rating = run.rating.max(s.rating);
                }
                _ => {
                    let run = Run {
                        check: s.check.clone(),
                        subject: s.subject.clone(),
                        verdict: verdict.to_owned(),
                        rating: s.rating,
                        start: Arc::clone(start),
                        end: Arc::clone(end),
                        first: index,
                        last: index,
                    };
                    if let Some(done) = self.open.insert(track, run) {
                        self.keep(done);
                    }
                }
            }
        }
        // A track this interval did not speak of has ended.
        let silent: Vec<Track> = self
            .open
            .keys()
            .filter(|t| !seen.contains(t))
            .cloned()
            .collect();
        for t in silent {
            if let Some(done) = self.open.remove(&t) {
                self.keep(done);
            }
        }
    }

    /// A break in the window: every run ends.
    pub fn interrupt(&mut self) {
        for (_, done) in std::mem::take(&mut self.open) {
            self.keep(done);
        }
    }

    fn keep(&mut self, run: Run) {
        if run.rating <= Rating::Ok {
            return;
        }
        self.finished.push(run);
        if self.finished.len() > KEPT_RUNS {
            let shortest = self
                .finished
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.seconds().total_cmp(&b.1.seconds()))
                .map(|(i, _)| i)
                .expect("not empty");
            self.finished.remove(shortest);
            self.dropped += 1;
        }
    }

    /// The runs that are phases of a window of `intervals` judged intervals: rated above
    /// `ok` and not holding every interval, in time order; and how many were let go.
    pub fn finish(mut self, intervals: u32) -> (Vec<Run>, usize) {
        self.interrupt();
        let mut runs: Vec<Run> = self
            .finished
            .into_iter()
            .filter(|r| !(r.first == 1 && r.last == intervals))
            .collect();
        runs.sort_by(|a, b| (a.first, &a.check, &a.subject).cmp(&(b.first, &b.check, &b.subject)));
        (runs, self.dropped)
    }
}

/// The phases of `runs`: each stretch judged again as a window of its own by `judge` (every
/// check's `report`), the run's own check's section about its subject with the same verdict.
/// A stretch whose whole says otherwise than its intervals did is no phase, and is counted
/// in the second value.
pub fn state(
    builder: &Builder,
    runs: &[Run],
    mut judge: impl FnMut(&ReportWindow) -> Vec<Section>,
) -> (Vec<Phase>, usize) {
    let mut phases = Vec::new();
    let mut unconfirmed = 0;
    for run in runs {
        let Some(window) = builder.stretch_window(&run.start, &run.end, run.first..=run.last)
        else {
            unconfirmed += 1;
            continue;
        };
        let sections = judge(&window);
        let worst = sections
            .iter()
            .filter(|s| s.check == run.check && s.subject == run.subject)
            .max_by_key(|s| s.rating)
            .map(|s| s.rating);
        // The stretch's verdict on the subject, as each interval's was taken: its worst.
        let section = sections.into_iter().find(|s| {
            s.check == run.check
                && s.subject == run.subject
                && Some(s.rating) == worst
                && s.verdict_key() == run.verdict
        });
        match section {
            Some(section) => phases.push(Phase {
                from: window.from,
                to: window.to,
                intervals: window.intervals,
                section,
            }),
            None => unconfirmed += 1,
        }
    }
    (phases, unconfirmed)
}

/// The page's section of `phases` (nothing when there are none): one row per phase, when,
/// which check, and what it concluded over the stretch with its figures and advice.
pub fn html(phases: &[Phase]) -> String {
    use super::svg::{escape, short};
    use std::fmt::Write as _;
    if phases.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2>Phases</h2><p>Stretches of the window over which a check's verdict was not the \
         window's all along, each judged as a window of its own.</p><table class=\"overview\">\
         <tr><th>rating</th><th>when</th><th>over the stretch</th></tr>",
    );
    for p in phases {
        let s = &p.section;
        let figures: Vec<String> = s
            .figures
            .iter()
            .map(|f| {
                format!(
                    "{} {}&#8239;{}",
                    escape(&f.label),
                    short(f.value),
                    escape(&f.unit)
                )
            })
            .collect();
        let _ = write!(
            out,
            "<tr class=\"{r}\"><td><span class=\"badge\">{r}</span></td><td>{}<br>{}</td>\
             <td><strong>{}</strong><br>{}<br><small>{}</small>{}</td></tr>",
            escape(&p.headline()),
            escape(&s.check),
            escape(&s.title),
            escape(&s.summary),
            figures.join(", "),
            s.advice.as_ref().map_or_else(String::new, |a| format!(
                "<br><strong>Advice:</strong> {}",
                escape(a)
            )),
            r = s.rating.as_str()
        );
    }
    out.push_str("</table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(t: f64) -> Arc<Snapshot> {
        Arc::new(Snapshot {
            taken_at: t,
            ..Snapshot::default()
        })
    }

    fn section(subject: &str, rating: Rating, verdict: &str) -> Section {
        let mut s = Section::new(rating, format!("{subject}: {verdict}"), "…")
            .subject(subject)
            .verdict(verdict);
        s.check = "hdd-saturation".into();
        s
    }

    /// Feeds one verdict of `sda` per interval, 10 s apart.
    fn runs_of(verdicts: &[Option<(Rating, &str)>]) -> Vec<(u32, u32, String)> {
        let mut t = Tracker::new();
        for (i, v) in verdicts.iter().enumerate() {
            let sections: Vec<Section> = v.iter().map(|(r, w)| section("sda", *r, w)).collect();
            let n = i as u32 + 1;
            t.observe(
                n,
                &snap(f64::from(n - 1) * 10.0),
                &snap(f64::from(n) * 10.0),
                &sections,
            );
        }
        let (runs, _) = t.finish(verdicts.len() as u32);
        runs.into_iter()
            .map(|r| (r.first, r.last, r.verdict))
            .collect()
    }

    #[test]
    fn a_stretch_with_its_own_verdict_is_a_run_and_quiet_ones_are_not() {
        let mixed = Some((Rating::Ok, "mixed load"));
        let seek = Some((Rating::Info, "seek-bound"));
        // Idle (no section), then seek-bound for three intervals, mixed, idle.
        let runs = runs_of(&[None, None, seek, seek, seek, mixed, None]);
        assert_eq!(runs, vec![(3, 5, "seek-bound".to_owned())]);
        // Seek-bound all along: the window's own verdict, no phase.
        assert!(runs_of(&[seek, seek, seek]).is_empty());
        // Two storms: two phases, in time order.
        let runs = runs_of(&[seek, None, seek, seek]);
        assert_eq!(
            runs,
            vec![
                (1, 1, "seek-bound".to_owned()),
                (3, 4, "seek-bound".to_owned())
            ]
        );
    }

    #[test]
    fn a_break_ends_every_run() {
        let mut t = Tracker::new();
        let s = [section("sda", Rating::Warning, "saturated, seek-bound")];
        t.observe(1, &snap(0.0), &snap(10.0), &s);
        t.interrupt();
        // The next stretch starts after the break: interval 2 is numbered on.
        t.observe(2, &snap(400.0), &snap(410.0), &s);
        let (runs, dropped) = t.finish(3);
        assert_eq!(dropped, 0);
        let spans: Vec<(f64, f64)> = runs
            .iter()
            .map(|r| (r.start.taken_at, r.end.taken_at))
            .collect();
        assert_eq!(spans, vec![(0.0, 10.0), (400.0, 410.0)]);
    }

    #[test]
    fn several_sections_about_one_subject_are_its_worst() {
        let mut t = Tracker::new();
        let mut sections = vec![
            section("log", Rating::Warning, "unmirrored"),
            section("log", Rating::Ok, "useful"),
        ];
        t.observe(1, &snap(0.0), &snap(10.0), &sections);
        // The same two in the other order: the same verdict, one run.
        sections.reverse();
        t.observe(2, &snap(10.0), &snap(20.0), &sections);
        t.observe(3, &snap(20.0), &snap(30.0), &sections[..1]);
        let (runs, _) = t.finish(3);
        let spans: Vec<(u32, u32, &str)> = runs
            .iter()
            .map(|r| (r.first, r.last, r.verdict.as_str()))
            .collect();
        assert_eq!(spans, vec![(1, 2, "unmirrored")]);
    }

    #[test]
    fn sections_without_a_subject_are_tracked_by_their_verdict() {
        let mut t = Tracker::new();
        let mut busy = Section::new(Rating::Warning, "SLOG busy", "…");
        busy.check = "slog-usage".into();
        let mut fine = Section::new(Rating::Ok, "SLOG useful", "…");
        fine.check = "slog-usage".into();
        t.observe(1, &snap(0.0), &snap(10.0), std::slice::from_ref(&fine));
        t.observe(2, &snap(10.0), &snap(20.0), std::slice::from_ref(&busy));
        t.observe(3, &snap(20.0), &snap(30.0), std::slice::from_ref(&fine));
        let (runs, _) = t.finish(3);
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].first, runs[0].last), (2, 2));
        assert_eq!(
            runs[0].verdict, "warning",
            "no words: the rating is the verdict"
        );
    }

    #[test]
    fn past_the_limit_the_shortest_runs_go_and_are_counted() {
        let mut t = Tracker::new();
        let seek = [section("sda", Rating::Info, "seek-bound")];
        // Runs of one interval each (10 s), then one long run (100 s), alternated with idle.
        let mut n = 0u32;
        let mut at = 0.0;
        for _ in 0..KEPT_RUNS + 5 {
            n += 1;
            t.observe(n, &snap(at), &snap(at + 10.0), &seek);
            at += 10.0;
            n += 1;
            t.observe(n, &snap(at), &snap(at + 10.0), &[]);
            at += 10.0;
        }
        n += 1;
        t.observe(n, &snap(at), &snap(at + 100.0), &seek);
        let (runs, dropped) = t.finish(n);
        assert_eq!(runs.len(), KEPT_RUNS);
        assert_eq!(dropped, 6);
        assert_eq!(runs.last().map(|r| r.seconds()), Some(100.0));
    }

    #[test]
    fn a_headline_says_the_verdict_and_its_times() {
        let p = Phase {
            from: 1_796_036_400.0,
            to: 1_796_036_465.0,
            intervals: 4,
            section: section("sda", Rating::Info, "seek-bound"),
        };
        assert_eq!(
            p.headline(),
            "sda: seek-bound from 2026-11-30 11:00:00 UTC to 11:01:05 UTC (1 min 05 s, 4 intervals)"
        );
        // Without verdict words, the title says what.
        let mut worded = p.clone();
        worded.section = Section::new(Rating::Warning, "storm/log: busy 80%", "…");
        worded.to += 86_400.0;
        assert_eq!(
            worded.headline(),
            "storm/log: busy 80% from 2026-11-30 11:00:00 UTC to 2026-12-01 11:01:05 UTC \
             (24 h 01 min, 4 intervals)"
        );
    }
}
