//! Fuzz target for the packed-nvlist decoder (`zpulse_agent::sources::nvlist::decode`).
//!
//! Beyond "never panics, never allocates unboundedly" (the sanitizer and libFuzzer's
//! `-rss_limit_mb`/`-malloc_limit_mb` watch those), three oracles:
//! * an error points inside the input;
//! * the in-place reader (`Decoder`, what the pool model uses) accepts exactly what `decode`
//!   accepts, with the same error, and reads the same tree, after a reply of its own kept
//!   from the last input (so a stale index would show);
//! * whatever decodes is re-encoded with the test encoder, in both byte orders, and must
//!   decode to the same value (compared through `Debug`, since a NaN double is `!=` itself).

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Mutex;
use zpulse_agent::sources::nvlist::{Decoder, NvList, NvValue, decode, read_everything};

/// The agent's test-only NATIVE encoder, compiled here too. It names only
/// `super::{NvList, NvValue}`, which the imports above provide.
#[path = "../../agent/src/sources/nvlist/encode.rs"]
#[allow(dead_code)]
mod encode;

use encode::{Endian, encode};

/// One decoder for the whole run, as the agent keeps one: each input is read after the last.
static DECODER: Mutex<Option<Decoder>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut kept = DECODER.lock().unwrap_or_else(|p| p.into_inner());
    let decoder = kept.get_or_insert_with(Decoder::default);
    let in_place = decoder.decode(data);
    match (decode(data), &in_place) {
        (Ok(list), Ok(view)) => assert_eq!(format!("{:?}", view.to_nvlist()), format!("{list:?}")),
        (Err(a), Err(b)) => assert_eq!(&a, b),
        (a, b) => panic!("decode ok {}, decoder ok {}", a.is_ok(), b.is_ok()),
    }
    if let Ok(view) = in_place {
        read_everything(view);
    }
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
