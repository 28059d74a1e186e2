//! A check's [`Report`] (the summary, advice and figures of a finding) as a report
//! [`Section`]: checks describe a window for `zpulse report` with the same words and figures
//! as their findings, written once.

use super::{Report, Verdict};
use crate::event::Severity;
use crate::report::{FIGURES_PER_SECTION, Figure, Rating, Section};

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
                label: key.replace('_', " "),
                value,
                unit: unit_of(key).to_owned(),
            })
        })
        .take(FIGURES_PER_SECTION)
        .collect();
    s
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
        assert!(s.validate().is_ok());
        assert_eq!(rating_of(Verdict::Borderline), Rating::Ok);
        assert_eq!(
            rating_of(Verdict::Holds(Severity::Critical)),
            Rating::Critical
        );
    }
}
