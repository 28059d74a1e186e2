//! [`SharedSnapshot`]: the snapshot inside a [`super::Sample`], shared rather than copied.

use crate::Snapshot;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// The later snapshot of a sample, behind an `Arc`. The agent keeps the snapshot it took (it
/// starts the next interval, and the history stores it) and the sample shares it instead of
/// copying every string, array and map in it each interval: on the lab capture that copy and
/// its drop were about 160,000 instructions per sample, a sixth of making it.
///
/// Reads go through `Deref` (`sample.snapshot.pools`). A write (a test, the benchmark moving
/// a sample in time) goes through `DerefMut`, which first copies the snapshot if another
/// owner shares it (`Arc::make_mut`), so no holder ever sees it change. On the wire it is the
/// snapshot itself, and the SDK's in-place decoding decodes into the previous sample's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SharedSnapshot(Arc<Snapshot>);

impl SharedSnapshot {
    /// The `Arc` itself, for a holder that keeps the snapshot beyond the sample.
    pub fn arc(&self) -> &Arc<Snapshot> {
        &self.0
    }
}

impl From<Arc<Snapshot>> for SharedSnapshot {
    fn from(snapshot: Arc<Snapshot>) -> Self {
        SharedSnapshot(snapshot)
    }
}

impl From<Snapshot> for SharedSnapshot {
    fn from(snapshot: Snapshot) -> Self {
        SharedSnapshot(Arc::new(snapshot))
    }
}

impl Deref for SharedSnapshot {
    type Target = Snapshot;
    fn deref(&self) -> &Snapshot {
        &self.0
    }
}

impl DerefMut for SharedSnapshot {
    fn deref_mut(&mut self) -> &mut Snapshot {
        Arc::make_mut(&mut self.0)
    }
}

impl Serialize for SharedSnapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedSnapshot {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Snapshot::deserialize(deserializer).map(SharedSnapshot::from)
    }

    fn deserialize_in_place<D: Deserializer<'de>>(
        deserializer: D,
        place: &mut Self,
    ) -> Result<(), D::Error> {
        // The SDK's previous sample owns its snapshot alone, so this decodes into its
        // allocations; a shared one is copied first and the other holder keeps its own.
        Snapshot::deserialize_in_place(deserializer, Arc::make_mut(&mut place.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(taken_at: f64) -> Snapshot {
        Snapshot {
            taken_at,
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_write_never_changes_what_another_holder_sees() {
        let kept = Arc::new(snapshot(1.0));
        let mut shared = SharedSnapshot::from(Arc::clone(&kept));
        assert!(Arc::ptr_eq(shared.arc(), &kept), "shared, not copied");
        shared.taken_at = 2.0;
        assert_eq!(kept.taken_at, 1.0);
        assert_eq!(shared.taken_at, 2.0);
        assert!(!Arc::ptr_eq(shared.arc(), &kept));
    }

    #[test]
    fn on_the_wire_it_is_the_snapshot_and_decodes_in_place() {
        let bytes = rmp_serde::to_vec_named(&SharedSnapshot::from(snapshot(7.0))).unwrap();
        assert_eq!(bytes, rmp_serde::to_vec_named(&snapshot(7.0)).unwrap());
        let mut place = SharedSnapshot::from(snapshot(1.0));
        let before = Arc::as_ptr(place.arc());
        let mut decoder = rmp_serde::Deserializer::new(&bytes[..]);
        SharedSnapshot::deserialize_in_place(&mut decoder, &mut place).unwrap();
        assert_eq!(place.taken_at, 7.0);
        assert_eq!(
            Arc::as_ptr(place.arc()),
            before,
            "decoded into the same snapshot"
        );
    }
}
