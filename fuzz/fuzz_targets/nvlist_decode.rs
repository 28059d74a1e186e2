//! Fuzz target for the packed-nvlist decoder (`zpulse_agent::sources::nvlist::decode`).
//!
//! Beyond "never panics, never allocates unboundedly" (the sanitizer and libFuzzer's
//! `-rss_limit_mb`/`-malloc_limit_mb` watch those), two oracles:
//! * an error points inside the input;
//! * whatever decodes is re-encoded with the test encoder, in both byte orders, and must
//!   decode to the same value (compared through `Debug`, since a NaN double is `!=` itself).

#![no_main]

use libfuzzer_sys::fuzz_target;
use zpulse_agent::sources::nvlist::{NvList, NvValue, decode};

/// The agent's test-only NATIVE encoder, compiled here too. It names only
/// `super::{NvList, NvValue}`, which the imports above provide.
#[path = "../../agent/src/sources/nvlist/encode.rs"]
#[allow(dead_code)]
mod encode;

use encode::{Endian, encode};

fuzz_target!(|data: &[u8]| {
    match decode(data) {
        Ok(list) => {
            let shown = format!("{list:?}");
            for endian in [Endian::Little, Endian::Big] {
                let bytes = encode(&list, endian);
                let again = decode(&bytes)
                    .unwrap_or_else(|e| panic!("re-encoded list fails to decode: {e}"));
                assert_eq!(format!("{again:?}"), shown, "round trip changed the value");
            }
            exercise(&list);
        }
        Err(e) => {
            assert!(
                e.offset <= data.len(),
                "error offset {} past {}",
                e.offset,
                data.len()
            );
            let _ = e.to_string();
        }
    }
});

/// Touches the lookup helpers the pool model uses, on whatever names the input has.
fn exercise(list: &NvList) {
    let _ = list.lookup("vdev_tree.children[0].vdev_stats");
    for pair in list {
        let _ = list.get(&pair.name);
        let _ = list.lookup(&pair.name);
        if let NvValue::NvListArray(items) = &pair.value {
            let _ = list.lookup_list(&format!("{}[{}]", pair.name, items.len().saturating_sub(1)));
        }
    }
}
