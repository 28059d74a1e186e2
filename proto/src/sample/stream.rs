//! [`SampleStream`]: the samples of a series of snapshots, each consecutive pair made into a
//! [`Sample`], holding one snapshot at a time; [`Pairing`], the same rule for snapshots that
//! arrive one at a time.
//!
//! Every consumer of a series (the agent's replay, `zpulse replay`, the history store's
//! readers, the tests' capture readers, `zpulse report`'s window) pairs snapshots the same
//! way through [`Pairing`], so that a pair that cannot make a sample is treated alike
//! everywhere: it is reported, and the later snapshot becomes the start of the next interval
//! (what the live agent does).

use super::{Sample, SampleError};
use crate::Snapshot;
use std::sync::Arc;

/// The samples between consecutive snapshots of `snapshots`, in order.
///
/// An iterator of `Result<Sample, SampleError>`: the first snapshot makes no sample (it only
/// starts the first interval); each later one makes the sample since the one before it, or
/// the error why that pair cannot (out of order, another OS), after which it starts the next
/// interval. Memory: the previous snapshot and the sample being made, whatever the length of
/// the series, so a series read lazily (e.g. `dirs.iter().map(load)`) is streamed.
pub struct SampleStream<I> {
    snapshots: I,
    pairing: Pairing,
}

/// The pairing rule for snapshots pushed one at a time (a live report window takes them on a
/// clock): each makes the sample since the one before it, or says why that pair cannot, and
/// becomes the start of the next interval either way.
#[derive(Debug, Default)]
pub struct Pairing {
    /// Shared with the last sample made (its `snapshot`), not copied.
    previous: Option<Arc<Snapshot>>,
}

impl Pairing {
    /// No interval started yet: the first snapshot pushed starts it.
    pub fn new() -> Self {
        Pairing { previous: None }
    }

    /// The first interval starting at `previous`.
    pub fn after(previous: Snapshot) -> Self {
        Pairing {
            previous: Some(Arc::new(previous)),
        }
    }

    /// `None` for the first snapshot (it only starts the first interval); else the sample
    /// since the previous one, or the error why that pair cannot make one.
    pub fn push(&mut self, snapshot: Snapshot) -> Option<Result<Sample, SampleError>> {
        let cur = Arc::new(snapshot);
        let prev = self.previous.replace(Arc::clone(&cur))?;
        Some(Sample::following(&prev, cur))
    }

    /// The latest snapshot pushed: where the next interval starts.
    pub fn previous(&self) -> Option<&Snapshot> {
        self.previous.as_deref()
    }

    /// [`Pairing::previous`], shared: for a caller that keeps the start of the next interval
    /// beyond the next push (a report splitting its window there).
    pub fn previous_shared(&self) -> Option<Arc<Snapshot>> {
        self.previous.clone()
    }
}

impl<I: Iterator<Item = Snapshot>> SampleStream<I> {
    /// The samples of `snapshots`; the first one starts the first interval.
    pub fn new(snapshots: impl IntoIterator<IntoIter = I>) -> Self {
        SampleStream {
            snapshots: snapshots.into_iter(),
            pairing: Pairing::new(),
        }
    }

    /// The samples of `rest`, the first interval starting at `previous` (a snapshot the
    /// caller already took from the series, e.g. to hand it on before any sample).
    pub fn after(previous: Snapshot, rest: impl IntoIterator<IntoIter = I>) -> Self {
        SampleStream {
            snapshots: rest.into_iter(),
            pairing: Pairing::after(previous),
        }
    }

    /// The latest snapshot taken from the series: where the next interval starts.
    pub fn previous(&self) -> Option<&Snapshot> {
        self.pairing.previous()
    }
}

impl<I: Iterator<Item = Snapshot>> Iterator for SampleStream<I> {
    type Item = Result<Sample, SampleError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(sample) = self.pairing.push(self.snapshots.next()?) {
                return Some(sample);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Os;

    fn at(t: f64, os: Os) -> Snapshot {
        let mut s = Snapshot {
            taken_at: t,
            ..Snapshot::default()
        };
        s.host.os = os;
        s
    }

    #[test]
    fn consecutive_pairs_make_samples_and_a_bad_pair_restarts_the_interval() {
        let series = [
            at(10.0, Os::Linux),
            at(20.0, Os::Linux),
            at(15.0, Os::Linux), // before the previous one: no sample, but starts the next
            at(45.0, Os::Linux),
            at(50.0, Os::Freebsd),
        ];
        let out: Vec<_> = SampleStream::new(series).collect();
        assert_eq!(out.len(), 4, "five snapshots, four pairs");
        let s = out[0].as_ref().unwrap();
        assert_eq!((s.start, s.end, s.interval), (10.0, 20.0, 10.0));
        assert_eq!(
            out[1].as_ref().unwrap_err(),
            &SampleError::NonPositiveInterval { seconds: -5.0 }
        );
        let s = out[2].as_ref().unwrap();
        assert_eq!((s.start, s.end), (15.0, 45.0));
        assert_eq!(out[3].as_ref().unwrap_err(), &SampleError::OsMismatch);
    }

    #[test]
    fn a_series_of_one_makes_no_sample_and_after_starts_from_the_given_snapshot() {
        let mut one = SampleStream::new([at(1.0, Os::Linux)]);
        assert!(one.next().is_none());
        assert_eq!(one.previous().map(|s| s.taken_at), Some(1.0));
        let mut rest = SampleStream::after(at(1.0, Os::Linux), [at(4.0, Os::Linux)]);
        let s = rest.next().unwrap().unwrap();
        assert_eq!((s.start, s.end, s.interval), (1.0, 4.0, 3.0));
        assert!(rest.next().is_none());
    }
}
