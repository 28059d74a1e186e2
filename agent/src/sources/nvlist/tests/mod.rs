//! Tests of the nvlist decoder: the spec's worked example, real replies from the lab,
//! refusals of malformed input, and property tests (round trips, mutations).

mod errors;
mod example;
mod lab;
mod lookup;
mod props;
mod seeds;
mod views;

/// Start of the first pair named `name` in an encoded stream.
fn pair_at(bytes: &[u8], name: &str) -> usize {
    let mut needle = name.as_bytes().to_vec();
    needle.push(0);
    bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("name in stream")
        - 16
}

/// Overwrites the little-endian `i32` at `at` (a pair's size, name size, count or type).
fn put_i32(bytes: &mut [u8], at: usize, v: i32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
