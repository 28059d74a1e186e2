//! A check's [`Report`] (the summary, advice and figures of a finding) as a report
//! [`Section`]: checks describe a window for `zpulse report` with the same words and figures
//! as their findings, written once.

use super::{Check, Report, Verdict};
use crate::event::{Event, Severity, State};
use crate::report::ReportWindow;
use crate::report::{FIGURES_PER_SECTION, Figure, Rating, Section, VERDICT_MAX_BYTES};

/// The unit a figure's key names by its suffix, the way checks name their figures
/// (`util_mean_pct`, `await_mean_ms`, `mb_per_s`, `avg_request_kib`, `…_bytes`).
pub fn unit_of(key: &str) -> &'static str {
    const SUFFIXES: [(&str, &str); 9] = [
        ("_pct", "%"),
        ("_ms", "ms"),
        ("mb_per_s", "MB/s"),
        ("_kib", "KiB"),
        ("_bytes", "B"),
        ("_per_s", "/s"),
        ("iops", "/s"),
        ("_s", "s"),
        ("_ratio", ""),
    ];
    SUFFIXES
        .iter()
        .find(|(suffix, _)| key.ends_with(suffix))
        .map_or("", |(_, unit)| unit)
}

/// A figure's key for people: its unit suffix dropped (the unit is shown beside the value),
/// underscores as spaces (`util_mean_pct` → `util mean`, `mb_per_s` → `MB/s moved`).
pub fn label_of(key: &str) -> String {
    let stem = ["_pct", "_ms", "_kib", "_bytes", "_per_s"]
        .iter()
        .find_map(|suffix| key.strip_suffix(suffix))
        .unwrap_or(key);
    match stem {
        "mb" => "moved".to_owned(),
        "read_mb" => "read".to_owned(),
        "write_mb" => "written".to_owned(),
        s => s.replace('_', " "),
    }
}

/// The rating of a verdict: a condition that holds is rated by its severity, anything else
/// is `ok` (use [`Section::rating`] directly for finer distinctions).
pub fn rating_of(verdict: Verdict) -> Rating {
    match verdict {
        Verdict::Holds(Severity::Critical) => Rating::Critical,
        Verdict::Holds(Severity::Warning) => Rating::Warning,
        Verdict::Holds(Severity::Info) => Rating::Info,
        Verdict::Borderline | Verdict::Clear => Rating::Ok,
    }
}

/// The section saying `report`, titled `title`: its numeric figures (the first
/// [`FIGURES_PER_SECTION`], labelled by key, unit from the key) and its advice.
pub fn section_of(report: &Report, rating: Rating, title: impl Into<String>) -> Section {
    let mut s = Section::new(rating, title, report.summary.clone());
    s.advice = report.advice.clone();
    s.figures = report
        .data
        .iter()
        .filter_map(|(key, v)| {
            let value = v.as_f64().filter(|x| x.is_finite())?;
            Some(Figure {
                key: key.clone(),
                label: label_of(key),
                value,
                unit: unit_of(key).to_owned(),
            })
        })
        .take(FIGURES_PER_SECTION)
        .collect();
    s
}

/// The sections of the findings a check raised or updated when it judged a whole window in
/// one interval (a check built afresh, fed the window's `whole` sample): each finding's
/// summary, advice and figures, rated by its severity — or by `rate`, which may say better
/// (an `info` finding that a SLOG is useful is an `ok` conclusion). Titles are
/// `subject: verdict` when the finding has a `verdict` figure, else `subject: aspect` for a
/// check named `check.aspect`, else the subject.
pub fn sections_of_events(
    events: &[Event],
    rate: impl Fn(&Event) -> Option<Rating>,
) -> Vec<Section> {
    events
        .iter()
        .filter(|e| matches!(e.state, Some(State::Raised | State::Updated)))
        .map(|e| {
            let report = Report {
                summary: e.summary.clone(),
                advice: e.advice.clone(),
                data: e.data.clone(),
            };
            let rating = rate(e).unwrap_or(match e.severity {
                Severity::Critical => Rating::Critical,
                Severity::Warning => Rating::Warning,
                Severity::Info => Rating::Info,
            });
            // `subject: verdict`, else `subject: aspect` from a dotted check name
            // (`slog-usage.redundancy`), else the subject alone.
            let aspect = e.check.split_once('.').map(|(_, a)| a);
            let verdict = e.data.get("verdict").and_then(|v| v.as_str());
            let title = match (verdict, aspect) {
                (Some(v), _) => format!("{}: {v}", e.subject),
                (None, Some(a)) => format!("{}: {a}", e.subject),
                (None, None) => e.subject.clone(),
            };
            let mut s = section_of(&report, rating, title).subject(e.subject.clone());
            s.check = e.check.clone();
            // The same words name the verdict that phases compare (`useful` and `saturated`
            // are both a warning's rating, but two phases), when they are words a section's
            // verdict may be.
            if let Some(v) =
                verdict.filter(|v| !v.trim().is_empty() && v.len() <= VERDICT_MAX_BYTES)
            {
                s = s.verdict(v);
            }
            s
        })
        .collect()
}

/// The conclusions of a check that judges the state of each sample (no window of its own):
/// a check built afresh from `config` looks at the whole window as one interval — the last
/// snapshot's state, and every counter's growth over the whole window (errors, I/O) — and
/// its findings become sections ([`sections_of_events`], `rate` as there).
pub fn judge_afresh<C: Check>(
    config: C::Config,
    window: &ReportWindow,
    rate: impl Fn(&Event) -> Option<Rating>,
) -> Vec<Section> {
    match C::build(config) {
        Ok(mut check) => sections_of_events(&check.observe(&window.whole), rate),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_becomes_a_section_with_its_numbers() {
        let r = Report::new("sda busy 62%")
            .with("util_mean_pct", 62.0)
            .with("mb_per_s", 2.5)
            .with("seek_bound", true)
            .with("pool", "tank")
            .advice("add a mirrored special vdev");
        let s = section_of(&r, Rating::Warning, "sda: seek-bound");
        assert_eq!(s.summary, "sda busy 62%");
        assert_eq!(s.advice.as_deref(), Some("add a mirrored special vdev"));
        // Booleans and strings are not figures.
        assert_eq!(s.figures.len(), 2);
        assert_eq!(s.get("util_mean_pct"), Some(62.0));
        assert_eq!(s.figures[0].unit, "MB/s");
        assert_eq!(s.figures[1].unit, "%");
        assert_eq!(s.figures[1].label, "util mean");
        assert_eq!(label_of("await_mean_ms"), "await mean");
        assert!(s.validate().is_ok());
        assert_eq!(rating_of(Verdict::Borderline), Rating::Ok);
        assert_eq!(
            rating_of(Verdict::Holds(Severity::Critical)),
            Rating::Critical
        );
    }

    /// A finding's `verdict` words name its section's verdict, which the report's phases
    /// compare (a SLOG `useful` and then `saturated` are two phases, though both are rated
    /// alike); words a verdict may not be leave the rating to stand for it.
    #[test]
    fn a_findings_verdict_words_name_its_sections_verdict() {
        let with = |verdict: Option<&str>| {
            let mut e = Event::finding(
                "slog-usage",
                State::Raised,
                Severity::Info,
                "tank/log",
                "the log is useful",
            );
            if let Some(v) = verdict {
                e.data.insert("verdict".into(), v.into());
            }
            sections_of_events(&[e], |_| None).remove(0)
        };
        let s = with(Some("useful, not saturated"));
        assert_eq!(s.verdict.as_deref(), Some("useful, not saturated"));
        assert_eq!(s.title, "tank/log: useful, not saturated");
        assert!(s.validate().is_ok());
        for (words, why) in [(None, "none"), (Some(" "), "blank")] {
            assert_eq!(with(words).verdict, None, "{why}");
            assert_eq!(with(words).verdict_key(), "info", "{why}");
        }
        let long = "x".repeat(VERDICT_MAX_BYTES + 1);
        assert_eq!(with(Some(&long)).verdict, None, "over the bound");
    }
}
