//! Cross-crate tests of zpulse: the agent's sources and the proto's sample model together,
//! against real captures in `fixtures/`. The library part only locates fixtures.

use std::path::PathBuf;

/// `tests/fixtures/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}
