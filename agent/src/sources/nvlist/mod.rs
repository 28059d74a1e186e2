//! Decoder for packed nvlists (NATIVE encoding), as `/dev/zfs` returns them.
//!
//! `ZFS_IOC_POOL_CONFIGS` and `ZFS_IOC_POOL_STATS` answer with an nvlist packed by the
//! kernel's `fnvlist_pack`: always NATIVE encoding, in the host's byte order
//! (docs/zfs-sources.md, "Packed nvlists"). NATIVE is the C structs copied out: a stream header, the
//! top-level list header, then each `nvpair_t` verbatim (size, name size, element count,
//! type, name, value padded to 8), with embedded lists following their pair rather than
//! inside it. See `decode.rs` for the layout details and every check made.
//!
//! Two ways to read a reply, both through the same checks:
//! * [`decode`] gives an [`NvList`] of typed [`NvValue`]s that borrows from the bytes (names
//!   and strings; each `UINT64_ARRAY`, [`U64s`], is read only when asked): for small replies
//!   (a kernel event) and tests. [`NvList`] is also what the test encoder packs.
//! * A [`Decoder`] gives a [`ListView`]: the reply read in place, through an index of its
//!   pairs that the decoder keeps for the next reply. Nothing is built for a pair until it is
//!   asked for, and names are compared as bytes: for the pool configs, read every interval,
//!   of which a snapshot reads a few pairs of some 50 per vdev.
//!
//! Typical use by the pool model (docs/zfs-sources.md, "The pool config"):
//!
//! ```
//! # use zpulse_agent::sources::nvlist::{NvList, NvValue};
//! # let config = NvList::new().with("vdev_tree", NvValue::NvList(NvList::new()
//! #     .with("children", NvValue::NvListArray(vec![NvList::new()
//! #         .with("type", NvValue::String("mirror".into()))
//! #         .with("vdev_stats", NvValue::Uint64Array(vec![0, 7, 0, 4096].into()))]))));
//! let tree = config.nvlist("vdev_tree").unwrap();
//! for top in tree.nvlist_array("children").unwrap_or_default() {
//!     let alloc = top.u64_array("vdev_stats").and_then(|vs| vs.get(3));
//!     println!("{:?} {:?}", top.str("type"), alloc);
//! }
//! let stats = config.lookup("vdev_tree.children[0].vdev_stats").and_then(|v| v.as_u64_array());
//! assert_eq!(stats.map(|vs| vs.iter().collect::<Vec<_>>()), Some(vec![0, 7, 0, 4096]));
//!
//! // The same reply read in place, by a reader that keeps its decoder.
//! # let packed = zpulse_agent::sources::nvlist::encode::encode(
//! #     &config, zpulse_agent::sources::nvlist::encode::Endian::Little);
//! let mut decoder = zpulse_agent::sources::nvlist::Decoder::default();
//! let view = decoder.decode(&packed).unwrap();
//! let tops = view.nvlist("vdev_tree").and_then(|t| t.nvlist_array("children")).unwrap();
//! let first = tops.get(0).unwrap();
//! assert_eq!(first.str("type").as_deref(), Some("mirror"));
//! assert_eq!(first.u64_array("vdev_stats").and_then(|vs| vs.get(3)), Some(4096));
//! ```

mod decode;
mod error;
mod value;
mod view;

/// The encoder of tests and of the benchmark's synthetic replies (the agent never encodes).
#[doc(hidden)]
pub mod encode;
#[cfg(test)]
mod tests;

pub use decode::{Decoder, MAX_DEPTH, decode};
pub use error::{NvError, NvErrorKind};
pub use value::{DataType, NV_UNIQUE_NAME, NV_UNIQUE_NAME_TYPE, NvList, NvPair, NvValue, U64s};
pub use view::{ListArrayView, ListView, PairView};

/// Every lookup and accessor of every pair of `list`, recursively, their answers dropped:
/// what the property tests and the fuzz target run on untrusted input, to show that none
/// panics or reads outside it.
#[doc(hidden)]
pub fn read_everything(list: ListView<'_>) {
    for pair in list.iter() {
        let _ = list.get(&pair.name());
        let _ = (pair.as_u64(), pair.as_str(), pair.as_bool(), pair.value());
        let _ = pair.as_u64_array().map(U64s::into_vec);
        if let Some(inner) = pair.as_nvlist() {
            read_everything(inner);
        }
        if let Some(items) = pair.as_nvlist_array() {
            assert!(items.get(items.len()).is_none());
            items.iter().for_each(read_everything);
        }
    }
}
