//! A recorded series for a plugin's tests: the samples `zpulse replay SERIES --format json`
//! printed, read back, so that a test replays a real capture with only this crate.
//!
//! `zpulse replay --format json` prints one line per sample (the [`Sample`] as JSON, every
//! field under its serde name, as the plugin receives it in MessagePack) and, after each, one
//! line per event its plugins emitted (`{"record":…,"tag":"zpulse.finding","time":…}`). The
//! event lines are what some plugin said, not what the kernel counted: they are skipped.
//!
//! The test reads the file itself (`include_str!`, `std::fs::read_to_string`): this crate
//! does no I/O. Behind the `replay` feature, which adds `serde_json`; a plugin turns it on
//! for its tests only:
//!
//! ```toml
//! [dev-dependencies]
//! zpulse-proto = { version = "0.1", features = ["replay"] }
//! ```

use crate::Sample;
use serde::Deserialize;

/// The samples of `zpulse replay --format json`'s output, in order, each as the agent made it
/// and handed it to its plugins. An error names the line (from 1) and what is wrong with it;
/// output with no sample at all is an error too, so that a test fed the wrong file fails
/// instead of passing on nothing.
///
/// ```
/// # #[cfg(feature = "replay")] {
/// use zpulse_proto::sdk::testing::recorded_samples;
/// let err = recorded_samples("{\"end\":\"late\"}").unwrap_err();
/// assert!(err.starts_with("line 1: not a sample"), "{err}");
/// # }
/// ```
pub fn recorded_samples(json_lines: &str) -> Result<Vec<Sample>, String> {
    let mut samples = Vec::new();
    for (i, line) in json_lines.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = i + 1;
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("line {at}: not JSON ({e}): is this `--format json` output?"))?;
        if value.get("tag").is_some() && value.get("record").is_some() {
            continue; // an event a plugin emitted
        }
        let sample = Sample::deserialize(value).map_err(|e| {
            format!("line {at}: not a sample of `zpulse replay --format json`: {e}")
        })?;
        samples.push(sample);
    }
    if samples.is_empty() {
        return Err(
            "no sample in it: record one with `zpulse replay SERIES --format json` on a \
                    series of at least two captures"
                .into(),
        );
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_are_skipped_and_bad_lines_named() {
        let sample = serde_json::to_string(&Sample {
            end: 20.0,
            interval: 10.0,
            ..Sample::default()
        })
        .unwrap();
        let event = r#"{"record":{"v":1},"tag":"zpulse.finding","time":20.0}"#;
        let text = format!("{sample}\n{event}\n\n{sample}\n");
        let samples = recorded_samples(&text).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!((samples[1].end, samples[1].interval), (20.0, 10.0));

        let err = recorded_samples(&format!("{sample}\nnot json\n")).unwrap_err();
        assert!(err.starts_with("line 2: not JSON"), "{err}");
        let err = recorded_samples(r#"{"end":"late"}"#).unwrap_err();
        assert!(err.starts_with("line 1: not a sample"), "{err}");
        let err = recorded_samples(&format!("{event}\n")).unwrap_err();
        assert!(err.starts_with("no sample in it"), "{err}");
        assert!(recorded_samples("").is_err());
    }
}
