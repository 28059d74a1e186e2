//! Stateful findings for free: raise once, update on material change, clear with hysteresis.
//!
//! A check decides, for each subject and sample, a [`Verdict`] (often with a [`Threshold`],
//! which has separate raise and clear levels) and describes what it sees in a [`Report`].
//! [`Findings::observe`] turns that stream into the few events an administrator wants:
//!
//! * **raised** once the condition has held for [`Rules::raise_after`] consecutive samples;
//! * **updated** while raised, only when the severity changes or a figure in `data` moved by
//!   more than [`Rules::material_change`] (relative to the last figures sent);
//! * **cleared** when the condition stops holding, but not before [`Rules::min_hold`] has
//!   passed since it was raised (a clear that comes too early waits; if the condition returns
//!   meanwhile, nothing is sent at all). Between the clear and raise levels
//!   ([`Verdict::Borderline`]) a raised finding stays raised and an unraised one stays quiet.

use super::{Data, Event, Severity, State, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// What a check concluded about one subject in one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The condition holds, at this severity.
    Holds(Severity),
    /// Between the clear and raise levels: keep the current state.
    Borderline,
    /// The condition does not hold.
    Clear,
}

/// What the check sees, for the event text: used for whichever event the state machine sends.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub summary: String,
    pub advice: Option<String>,
    /// The figures. Numbers here are what [`Rules::material_change`] compares.
    pub data: Data,
}

impl Report {
    pub fn new(summary: impl Into<String>) -> Report {
        Report {
            summary: summary.into(),
            ..Report::default()
        }
    }

    pub fn advice(mut self, advice: impl Into<String>) -> Report {
        self.advice = Some(advice.into());
        self
    }

    /// Adds a figure. A number that is not finite (NaN, ±∞: a ratio over nothing, a rate
    /// with no interval) is not a figure: it is left out, so the event stays valid and the
    /// figure is simply absent, as an unknown kernel value is everywhere else.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Report {
        let value = value.into();
        if matches!(value, Value::Float(f) if !f.is_finite()) {
            return self;
        }
        self.data.insert(key.into(), value);
        self
    }
}

/// How findings of one check behave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// Consecutive samples the condition must hold before it is raised (≥ 1).
    pub raise_after: u32,
    /// A raised finding is not cleared sooner than this after it was raised.
    pub min_hold: Duration,
    /// Relative change of a figure that is worth an `updated` event: 0.2 = 20%.
    pub material_change: f64,
}

impl Default for Rules {
    /// Raise at once, hold at least a minute, update on a 20% change.
    fn default() -> Self {
        Rules {
            raise_after: 1,
            min_hold: Duration::from_secs(60),
            material_change: 0.2,
        }
    }
}

#[derive(Debug, Clone)]
enum Track {
    /// Not raised; the condition has held for `streak` consecutive samples.
    Quiet { streak: u32 },
    Raised {
        since: f64,
        severity: Severity,
        /// The figures of the last event sent.
        sent: Data,
    },
}

/// The finding state of one check, per subject.
#[derive(Debug, Clone)]
pub struct Findings {
    check: String,
    rules: Rules,
    subjects: BTreeMap<String, (Track, bool)>,
}

impl Findings {
    /// Findings of `check` (use the plugin's name, or `name.something` for several checks).
    pub fn new(check: impl Into<String>, rules: Rules) -> Findings {
        Findings {
            check: check.into(),
            rules,
            subjects: BTreeMap::new(),
        }
    }

    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Feeds one verdict about `subject` at time `now` (the sample's `end`, Unix seconds) and
    /// returns the event to emit, if any.
    pub fn observe(
        &mut self,
        now: f64,
        subject: &str,
        verdict: Verdict,
        report: Report,
    ) -> Option<Event> {
        self.observe_with(now, subject, verdict, || report)
    }

    /// [`Findings::observe`] with the report made only when the state machine needs it: not
    /// for a subject that is quiet and stays quiet (no finding raised and the condition not
    /// holding), which is most subjects in most samples. A check whose report formats text
    /// saves that work.
    pub fn observe_with(
        &mut self,
        now: f64,
        subject: &str,
        verdict: Verdict,
        report: impl FnOnce() -> Report,
    ) -> Option<Event> {
        self.observe_worded(now, subject, verdict, report, |_| {})
    }

    /// [`Findings::observe_with`] with the report's words apart from its figures: `figures`
    /// makes the report without its text (what [`Rules::material_change`] compares), and
    /// `words` writes its summary and advice into it only when an event goes out. For a
    /// check that holds a finding all the time (an `info` verdict every sample), whose
    /// figures are compared every sample but whose sentences are read only when they moved.
    pub fn observe_worded(
        &mut self,
        now: f64,
        subject: &str,
        verdict: Verdict,
        figures: impl FnOnce() -> Report,
        words: impl FnOnce(&mut Report),
    ) -> Option<Event> {
        let report = figures;
        let holds = matches!(verdict, Verdict::Holds(_));
        let rules = self.rules;
        // One lookup of the subject: most are quiet and stay so, the rest mostly raised.
        let (event, report) = match self.subjects.get_mut(subject) {
            // Quiet and not holding: the streak ends, nothing is remembered, no report.
            Some((Track::Quiet { .. }, _)) if !holds => {
                self.subjects.remove(subject);
                return None;
            }
            None if !holds => return None,
            Some((track, seen)) => {
                *seen = true;
                let report = report();
                let event = step(track, rules, now, verdict, &report);
                if matches!(track, Track::Quiet { streak: 0 }) {
                    // Nothing to remember: keeps the map as small as what is going on.
                    self.subjects.remove(subject);
                }
                (event, report)
            }
            None => {
                let report = report();
                let mut track = Track::Quiet { streak: 0 };
                let event = step(&mut track, rules, now, verdict, &report);
                if !matches!(track, Track::Quiet { streak: 0 }) {
                    self.subjects.insert(subject.to_owned(), (track, true));
                }
                (event, report)
            }
        };
        let (state, severity) = event?;
        let mut report = report;
        words(&mut report);
        Some(self.event(state, severity, subject, report))
    }

    /// Whether [`Findings::observe_with`] of `subject` with `verdict` would make its report:
    /// false for a subject that is quiet and stays quiet. For a check that works out its
    /// verdicts and their reports in one pass over its state (which `observe_with`'s
    /// `&mut self` cannot borrow): ask this during the pass, build only the reports wanted.
    pub fn wants_report(&self, subject: &str, verdict: Verdict) -> bool {
        matches!(verdict, Verdict::Holds(_))
            || matches!(self.subjects.get(subject), Some((track, _)) if !matches!(track, Track::Quiet { .. }))
    }

    /// "No news about `subject` this sample": the kernel gave no figure to judge it by (a
    /// counter reset, a source missing for one interval). Its finding keeps its state and
    /// sends nothing, and [`Findings::clear_unseen`] does not take it for gone.
    pub fn keep(&mut self, subject: &str) {
        if let Some((_, seen)) = self.subjects.get_mut(subject) {
            *seen = true;
        }
    }

    /// Treats every subject not observed since the previous call as [`Verdict::Clear`] (a disk
    /// that disappeared, a pool exported), with the report `report_for(subject)` gives, and
    /// returns the events. Call it after observing all subjects of a sample.
    pub fn clear_unseen(
        &mut self,
        now: f64,
        mut report_for: impl FnMut(&str) -> Report,
    ) -> Vec<Event> {
        let unseen: Vec<String> = self
            .subjects
            .iter()
            .filter(|(_, (_, seen))| !seen)
            .map(|(s, _)| s.clone())
            .collect();
        let mut events = Vec::new();
        for subject in unseen {
            let report = report_for(&subject);
            events.extend(self.observe(now, &subject, Verdict::Clear, report));
        }
        for (_, seen) in self.subjects.values_mut() {
            *seen = false;
        }
        events
    }

    /// Whether a finding about `subject` is raised, and at which severity.
    pub fn raised(&self, subject: &str) -> Option<Severity> {
        match self.subjects.get(subject) {
            Some((Track::Raised { severity, .. }, _)) => Some(*severity),
            _ => None,
        }
    }

    /// The figures of the last event sent about `subject`'s raised finding: what a check
    /// with several raised states of one severity (`data["verdict"]`) reads to keep the one
    /// it is in while its figures are between the clear and raise levels.
    pub fn raised_data(&self, subject: &str) -> Option<&Data> {
        match self.subjects.get(subject) {
            Some((Track::Raised { sent, .. }, _)) => Some(sent),
            _ => None,
        }
    }

    /// The subjects with a raised finding.
    pub fn raised_subjects(&self) -> impl Iterator<Item = &str> {
        self.subjects
            .iter()
            .filter(|(_, (t, _))| matches!(t, Track::Raised { .. }))
            .map(|(s, _)| s.as_str())
    }

    fn event(&self, state: State, severity: Severity, subject: &str, report: Report) -> Event {
        Event {
            advice: report.advice,
            data: report.data,
            ..Event::finding(&*self.check, state, severity, subject, report.summary)
        }
    }
}

/// One transition, in place (a raised finding that stays as it is, the usual case, is not
/// copied with its figures): the event (state, severity) to send, if any.
fn step(
    track: &mut Track,
    rules: Rules,
    now: f64,
    verdict: Verdict,
    report: &Report,
) -> Option<(State, Severity)> {
    match (&mut *track, verdict) {
        (Track::Quiet { streak }, Verdict::Holds(severity)) => {
            let streak = streak.saturating_add(1);
            if streak >= rules.raise_after.max(1) {
                *track = Track::Raised {
                    since: now,
                    severity,
                    sent: report.data.clone(),
                };
                Some((State::Raised, severity))
            } else {
                *track = Track::Quiet { streak };
                None
            }
        }
        (Track::Quiet { .. }, _) => {
            *track = Track::Quiet { streak: 0 };
            None
        }
        (
            Track::Raised {
                since, severity, ..
            },
            Verdict::Clear,
        ) => {
            if now - *since >= rules.min_hold.as_secs_f64() {
                let severity = *severity;
                *track = Track::Quiet { streak: 0 };
                Some((State::Cleared, severity))
            } else {
                None
            }
        }
        (Track::Raised { severity, sent, .. }, Verdict::Holds(_) | Verdict::Borderline) => {
            let new_severity = match verdict {
                Verdict::Holds(s) => s,
                _ => *severity,
            };
            if new_severity != *severity || material(sent, &report.data, rules.material_change) {
                *severity = new_severity;
                sent.clone_from(&report.data);
                Some((State::Updated, new_severity))
            } else {
                None
            }
        }
    }
}

/// Whether the figures moved materially: a number by more than `threshold` relative to the
/// one sent, any other value changed, or a figure appeared or disappeared.
fn material(sent: &Data, now: &Data, threshold: f64) -> bool {
    if sent.len() != now.len() || sent.keys().ne(now.keys()) {
        return true;
    }
    sent.values().zip(now.values()).any(|(a, b)| {
        match (a.as_f64(), b.as_f64()) {
            // Relative to the figure sent; from zero, any change is material.
            (Some(x), Some(y)) if x == y => false,
            (Some(0.0), Some(_)) => true,
            (Some(x), Some(y)) => (x - y).abs() / x.abs() > threshold,
            _ => a != b,
        }
    })
}

/// A threshold with hysteresis: raise at one level, clear only past another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    raise: f64,
    clear: f64,
    critical: Option<f64>,
    severity: Severity,
    above: bool,
}

impl Threshold {
    /// Holds when the value is ≥ `raise`; clears when it is ≤ `clear` (`clear` ≤ `raise`).
    pub fn above(raise: f64, clear: f64) -> Result<Threshold, String> {
        Threshold::new(raise, clear, true)
    }

    /// Holds when the value is ≤ `raise`; clears when it is ≥ `clear` (`clear` ≥ `raise`).
    pub fn below(raise: f64, clear: f64) -> Result<Threshold, String> {
        Threshold::new(raise, clear, false)
    }

    fn new(raise: f64, clear: f64, above: bool) -> Result<Threshold, String> {
        if !(raise.is_finite() && clear.is_finite()) {
            return Err(format!(
                "thresholds must be numbers, not {raise} and {clear}"
            ));
        }
        let (word, ok) = if above {
            ("at or below", clear <= raise)
        } else {
            ("at or above", clear >= raise)
        };
        if !ok {
            return Err(format!(
                "the clear level ({clear}) must be {word} the raise level ({raise}), \
                 or findings would flap"
            ));
        }
        Ok(Threshold {
            raise,
            clear,
            critical: None,
            severity: Severity::Warning,
            above,
        })
    }

    /// Severity when the raise level is reached (default `warning`).
    pub fn severity(mut self, severity: Severity) -> Threshold {
        self.severity = severity;
        self
    }

    /// A level beyond `raise` at which the finding is `critical`.
    pub fn critical(mut self, at: f64) -> Result<Threshold, String> {
        let beyond = if self.above {
            at >= self.raise
        } else {
            at <= self.raise
        };
        if !(at.is_finite() && beyond) {
            return Err(format!(
                "the critical level ({at}) must be beyond the raise level ({})",
                self.raise
            ));
        }
        self.critical = Some(at);
        Ok(self)
    }

    /// The verdict for one value. An unknown value (NaN) is borderline: it changes nothing.
    pub fn verdict(&self, value: f64) -> Verdict {
        if value.is_nan() {
            return Verdict::Borderline;
        }
        let reached = |level: f64| {
            if self.above {
                value >= level
            } else {
                value <= level
            }
        };
        let cleared = if self.above {
            value <= self.clear
        } else {
            value >= self.clear
        };
        if self.critical.is_some_and(reached) {
            Verdict::Holds(Severity::Critical)
        } else if reached(self.raise) {
            Verdict::Holds(self.severity)
        } else if cleared {
            Verdict::Clear
        } else {
            Verdict::Borderline
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Verdict = Verdict::Holds(Severity::Warning);
    const C: Verdict = Verdict::Holds(Severity::Critical);

    fn report(util: f64) -> Report {
        Report::new(format!("busy {util}%")).with("util", util)
    }

    fn rules(raise_after: u32, hold_s: u64, change: f64) -> Rules {
        Rules {
            raise_after,
            min_hold: Duration::from_secs(hold_s),
            material_change: change,
        }
    }

    /// Feeds (time, verdict, util) and returns the states sent, `-` for nothing.
    fn run(f: &mut Findings, steps: &[(f64, Verdict, f64)]) -> Vec<String> {
        steps
            .iter()
            .map(|&(t, v, u)| match f.observe(t, "sda", v, report(u)) {
                Some(e) => format!("{}:{}", e.state.unwrap().as_str(), e.severity.as_str()),
                None => "-".into(),
            })
            .collect()
    }

    #[test]
    fn raises_once_while_it_holds() {
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        let got = run(&mut f, &[(0.0, W, 95.0), (10.0, W, 95.0), (20.0, W, 96.0)]);
        assert_eq!(got, ["raised:warning", "-", "-"]);
        assert_eq!(f.raised("sda"), Some(Severity::Warning));
        let e = f.observe(30.0, "sda", W, report(95.0));
        assert!(e.is_none());
    }

    #[test]
    fn observe_with_makes_the_report_only_when_a_finding_may_change() {
        let mut f = Findings::new("busy", rules(2, 0, 0.2));
        let mut made = Vec::new();
        let mut wanted = Vec::new();
        let mut step = |f: &mut Findings, t: f64, v: Verdict| {
            if f.wants_report("sda", v) {
                wanted.push(t);
            }
            f.observe_with(t, "sda", v, || {
                made.push(t);
                report(95.0)
            })
            .map(|e| e.state.unwrap().as_str())
        };
        // Quiet and clear or borderline: nothing to raise, so no report.
        assert_eq!(step(&mut f, 0.0, Verdict::Clear), None);
        assert_eq!(step(&mut f, 1.0, Verdict::Borderline), None);
        // Holding: counted towards raise_after (the report is made: the raise may come).
        assert_eq!(step(&mut f, 2.0, W), None);
        // A clear in between restarts the count, as with `observe`.
        assert_eq!(step(&mut f, 3.0, Verdict::Clear), None);
        assert_eq!(step(&mut f, 4.0, W), None);
        assert_eq!(step(&mut f, 5.0, W), Some("raised"));
        // Raised: every verdict needs the figures (material change, clear).
        assert_eq!(step(&mut f, 6.0, Verdict::Borderline), None);
        assert_eq!(step(&mut f, 7.0, Verdict::Clear), Some("cleared"));
        assert_eq!(step(&mut f, 8.0, Verdict::Clear), None);
        assert_eq!(made, [2.0, 4.0, 5.0, 6.0, 7.0]);
        assert_eq!(wanted, made, "wants_report says what observe_with does");
        assert_eq!(f.raised_subjects().count(), 0);
    }

    #[test]
    fn observe_worded_writes_the_words_only_for_an_event_that_goes_out() {
        // Raise at once, update on a 20% move: the figures are compared every sample, the
        // words written for the raise, the update and the clear only.
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        let mut worded = Vec::new();
        let mut step = |f: &mut Findings, t: f64, v: Verdict, util: f64| {
            f.observe_worded(
                t,
                "sda",
                v,
                || Report::default().with("util", util),
                |r| {
                    worded.push(t);
                    r.summary = format!("busy {util}%");
                    r.advice = Some("add disks".into());
                },
            )
        };
        let raised = step(&mut f, 0.0, W, 90.0).unwrap();
        assert_eq!(raised.state, Some(State::Raised));
        assert_eq!(raised.summary, "busy 90%");
        assert_eq!(raised.advice.as_deref(), Some("add disks"));
        assert_eq!(raised.data["util"], Value::Float(90.0));
        // 10% and then 15% from the 90 sent: not material, no words.
        assert!(step(&mut f, 1.0, W, 99.0).is_none());
        assert!(step(&mut f, 2.0, W, 103.5).is_none());
        // 30% from the 90 sent.
        let updated = step(&mut f, 3.0, W, 117.0).unwrap();
        assert_eq!(updated.state, Some(State::Updated));
        assert_eq!(updated.summary, "busy 117%");
        let cleared = step(&mut f, 4.0, Verdict::Clear, 10.0).unwrap();
        assert_eq!(cleared.state, Some(State::Cleared));
        assert_eq!(cleared.summary, "busy 10%");
        // Quiet and clear: neither figures nor words.
        assert!(step(&mut f, 5.0, Verdict::Clear, 10.0).is_none());
        assert_eq!(worded, [0.0, 3.0, 4.0]);
        assert!(raised.validate().is_ok() && updated.validate().is_ok());
    }

    #[test]
    fn the_raised_event_carries_the_report() {
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        let e = f
            .observe(5.0, "sda", W, report(97.0).advice("add disks"))
            .unwrap();
        assert_eq!(e.check, "busy");
        assert_eq!(e.subject, "sda");
        assert_eq!(e.summary, "busy 97%");
        assert_eq!(e.advice.as_deref(), Some("add disks"));
        assert_eq!(e.data["util"], Value::Float(97.0));
        assert!(e.validate().is_ok());
    }

    #[test]
    fn raise_after_k_consecutive_samples_and_an_interruption_restarts_the_count() {
        let mut f = Findings::new("busy", rules(3, 0, 0.2));
        let got = run(
            &mut f,
            &[
                (0.0, W, 95.0),
                (1.0, W, 95.0),
                (2.0, Verdict::Clear, 10.0),
                (3.0, W, 95.0),
                (4.0, W, 95.0),
                (5.0, Verdict::Borderline, 80.0),
                (6.0, W, 95.0),
                (7.0, W, 95.0),
                (8.0, W, 95.0),
            ],
        );
        assert_eq!(
            got,
            ["-", "-", "-", "-", "-", "-", "-", "-", "raised:warning"]
        );
    }

    #[test]
    fn raise_after_zero_means_one() {
        let mut f = Findings::new("busy", rules(0, 0, 0.2));
        assert_eq!(run(&mut f, &[(0.0, W, 95.0)]), ["raised:warning"]);
    }

    #[test]
    fn updates_only_on_material_change_measured_from_the_last_sent_figures() {
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        let got = run(
            &mut f,
            &[
                (0.0, W, 50.0),
                (1.0, W, 59.0),                   // +18%: not material
                (2.0, W, 61.0),                   // +22% from 50: material
                (3.0, W, 70.0),                   // +14.8% from 61: not
                (4.0, W, 73.5),                   // +20.5% from 61: material
                (5.0, Verdict::Borderline, 40.0), // raised stays raised; figures moved a lot
            ],
        );
        assert_eq!(
            got,
            [
                "raised:warning",
                "-",
                "updated:warning",
                "-",
                "updated:warning",
                "updated:warning"
            ]
        );
    }

    #[test]
    fn updates_on_severity_change_both_ways() {
        let mut f = Findings::new("busy", rules(1, 0, 0.5));
        let got = run(
            &mut f,
            &[
                (0.0, W, 95.0),
                (1.0, C, 99.0),
                (2.0, C, 99.0),
                (3.0, W, 96.0),
            ],
        );
        assert_eq!(
            got,
            ["raised:warning", "updated:critical", "-", "updated:warning"]
        );
    }

    #[test]
    fn clears_when_it_stops_holding_and_keeps_the_severity() {
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        let got = run(
            &mut f,
            &[
                (0.0, C, 99.0),
                (1.0, Verdict::Clear, 10.0),
                (2.0, Verdict::Clear, 10.0),
            ],
        );
        assert_eq!(got, ["raised:critical", "cleared:critical", "-"]);
        assert_eq!(f.raised("sda"), None);
        assert_eq!(f.raised_subjects().count(), 0);
    }

    #[test]
    fn borderline_keeps_a_raised_finding_raised() {
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        let got = run(
            &mut f,
            &[
                (0.0, W, 95.0),
                (1.0, Verdict::Borderline, 90.0),
                (2.0, Verdict::Borderline, 90.0),
            ],
        );
        assert_eq!(got, ["raised:warning", "-", "-"]);
        assert_eq!(f.raised("sda"), Some(Severity::Warning));
    }

    #[test]
    fn min_hold_defers_the_clear_and_a_return_cancels_it() {
        let mut f = Findings::new("busy", rules(1, 60, 0.2));
        let got = run(
            &mut f,
            &[
                (100.0, W, 95.0),
                (110.0, Verdict::Clear, 10.0), // 10 s after raising: too early
                (120.0, W, 95.0),              // holds again: nothing was ever cleared
                (150.0, Verdict::Clear, 10.0), // 50 s: still too early
                (159.9, Verdict::Clear, 10.0), // 59.9 s
                (160.0, Verdict::Clear, 10.0), // 60 s: cleared
            ],
        );
        assert_eq!(
            got,
            ["raised:warning", "-", "-", "-", "-", "cleared:warning"]
        );
    }

    #[test]
    fn min_hold_counts_from_the_raise_not_from_updates() {
        let mut f = Findings::new("busy", rules(1, 60, 0.2));
        let got = run(
            &mut f,
            &[(0.0, W, 50.0), (50.0, C, 99.0), (61.0, Verdict::Clear, 1.0)],
        );
        assert_eq!(
            got,
            ["raised:warning", "updated:critical", "cleared:critical"]
        );
    }

    #[test]
    fn raises_again_after_a_clear() {
        let mut f = Findings::new("busy", rules(2, 0, 0.2));
        let got = run(
            &mut f,
            &[
                (0.0, W, 95.0),
                (1.0, W, 95.0),
                (2.0, Verdict::Clear, 1.0),
                (3.0, W, 95.0),
                (4.0, W, 95.0),
            ],
        );
        assert_eq!(
            got,
            [
                "-",
                "raised:warning",
                "cleared:warning",
                "-",
                "raised:warning"
            ]
        );
    }

    #[test]
    fn subjects_are_independent() {
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        assert!(f.observe(0.0, "sda", W, report(95.0)).is_some());
        assert!(f.observe(0.0, "sdb", W, report(95.0)).is_some());
        let e = f.observe(1.0, "sdb", Verdict::Clear, report(1.0)).unwrap();
        assert_eq!((e.subject.as_str(), e.state), ("sdb", Some(State::Cleared)));
        assert_eq!(f.raised("sda"), Some(Severity::Warning));
        assert_eq!(f.raised_subjects().collect::<Vec<_>>(), ["sda"]);
    }

    #[test]
    fn unseen_subjects_clear_after_their_hold_time() {
        let mut f = Findings::new("busy", rules(1, 30, 0.2));
        f.observe(0.0, "sda", W, report(95.0));
        f.observe(0.0, "sdb", W, report(95.0));
        assert!(f.clear_unseen(0.0, |_| unreachable!()).is_empty());
        // sdb disappears at t=10: too early to clear; it stays raised.
        f.observe(10.0, "sda", W, report(95.0));
        assert!(
            f.clear_unseen(10.0, |s| Report::new(format!("{s} gone")))
                .is_empty()
        );
        assert_eq!(f.raised("sdb"), Some(Severity::Warning));
        // Still gone at t=40: cleared, with the report made for it.
        f.observe(40.0, "sda", W, report(95.0));
        let events = f.clear_unseen(40.0, |s| Report::new(format!("{s} gone")));
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].summary, "sdb gone");
        assert_eq!(events[0].state, Some(State::Cleared));
        assert_eq!(f.raised("sdb"), None);
    }

    #[test]
    fn materiality_edges() {
        let d = |pairs: &[(&str, Value)]| -> Data {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        };
        let zero = d(&[("x", Value::UInt(0))]);
        assert!(!material(&zero, &zero, 0.2));
        assert!(material(&zero, &d(&[("x", Value::UInt(1))]), 0.2));
        assert!(!material(
            &d(&[("x", Value::UInt(100))]),
            &d(&[("x", Value::Float(100.0))]),
            0.2
        ));
        assert!(material(&zero, &d(&[("y", Value::UInt(0))]), 0.2));
        assert!(material(&zero, &d(&[]), 0.2));
        assert!(material(
            &d(&[("s", "ONLINE".into())]),
            &d(&[("s", "DEGRADED".into())]),
            0.2
        ));
        assert!(!material(
            &d(&[("s", "ONLINE".into())]),
            &d(&[("s", "ONLINE".into())]),
            0.2
        ));
        // Negative figures compare by magnitude.
        assert!(material(
            &d(&[("x", Value::Int(-10))]),
            &d(&[("x", Value::Int(-20))]),
            0.2
        ));
    }

    #[test]
    fn threshold_above_with_hysteresis_and_critical() {
        let t = Threshold::above(90.0, 70.0)
            .unwrap()
            .critical(99.0)
            .unwrap();
        assert_eq!(t.verdict(95.0), W);
        assert_eq!(t.verdict(90.0), W);
        assert_eq!(t.verdict(99.5), C);
        assert_eq!(t.verdict(80.0), Verdict::Borderline);
        assert_eq!(t.verdict(70.0), Verdict::Clear);
        assert_eq!(t.verdict(f64::NAN), Verdict::Borderline);
        assert_eq!(t.verdict(f64::INFINITY), C);
        let info = Threshold::above(1.0, 1.0).unwrap().severity(Severity::Info);
        assert_eq!(info.verdict(1.0), Verdict::Holds(Severity::Info));
        assert_eq!(info.verdict(0.9), Verdict::Clear);
    }

    #[test]
    fn threshold_below() {
        let t = Threshold::below(10.0, 20.0).unwrap().critical(5.0).unwrap();
        assert_eq!(t.verdict(8.0), W);
        assert_eq!(t.verdict(4.0), C);
        assert_eq!(t.verdict(15.0), Verdict::Borderline);
        assert_eq!(t.verdict(25.0), Verdict::Clear);
    }

    #[test]
    fn thresholds_that_would_flap_are_refused() {
        assert!(Threshold::above(70.0, 90.0).unwrap_err().contains("flap"));
        assert!(Threshold::below(20.0, 10.0).is_err());
        assert!(Threshold::above(f64::NAN, 1.0).is_err());
        assert!(
            Threshold::above(90.0, 70.0)
                .unwrap()
                .critical(80.0)
                .is_err()
        );
        assert!(
            Threshold::below(10.0, 20.0)
                .unwrap()
                .critical(15.0)
                .is_err()
        );
    }

    #[test]
    fn hysteresis_end_to_end() {
        // A value oscillating between the clear and raise levels raises once, never flaps.
        let t = Threshold::above(90.0, 70.0).unwrap();
        let mut f = Findings::new("busy", rules(1, 0, 10.0));
        let mut states = vec![];
        for (i, v) in [50.0, 91.0, 85.0, 92.0, 75.0, 91.0, 60.0, 80.0, 95.0]
            .into_iter()
            .enumerate()
        {
            if let Some(e) = f.observe(i as f64, "sda", t.verdict(v), report(v)) {
                states.push((i, e.state.unwrap()));
            }
        }
        assert_eq!(
            states,
            [(1, State::Raised), (6, State::Cleared), (8, State::Raised)]
        );
    }

    #[test]
    fn non_finite_figures_are_left_out_and_the_event_stays_valid() {
        let r = Report::new("x")
            .with("nan", f64::NAN)
            .with("inf", f64::INFINITY)
            .with("ok", 1.5);
        assert_eq!(r.data.keys().collect::<Vec<_>>(), ["ok"]);
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        let e = f.observe(0.0, "sda", W, r).unwrap();
        assert_eq!(e.validate(), Ok(()));
    }

    #[test]
    fn keep_holds_a_finding_through_a_sample_without_news() {
        let mut f = Findings::new("busy", rules(1, 0, 0.2));
        assert!(f.observe(0.0, "sda", W, report(95.0)).is_some());
        assert!(f.clear_unseen(0.0, |_| Report::new("gone")).is_empty());
        // No figure for sda this sample: kept, not cleared as unseen.
        f.keep("sda");
        assert!(f.clear_unseen(10.0, |_| Report::new("gone")).is_empty());
        assert_eq!(f.raised("sda"), Some(Severity::Warning));
        // Not observed nor kept: cleared as gone.
        let gone = f.clear_unseen(20.0, |_| Report::new("gone"));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].state, Some(State::Cleared));
        // Keeping an unknown subject does nothing.
        f.keep("sdz");
        assert_eq!(f.raised("sdz"), None);
    }
}
