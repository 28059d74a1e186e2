//! What the agent sends each plugin, on real captures: the part encoder
//! (`zpulse_proto::sample::PartEncoder`, each large part encoded once per sample) writes, for
//! every set of unread parts, the bytes serde writes for `Sample::without` of that set — the
//! definition of what each part is.

use zpulse_proto::abi::PARTS_KNOWN;
use zpulse_proto::sample::PartEncoder;
use zpulse_proto::sdk::{decode_sample, decode_sample_into, encode_sample_for};
use zpulse_tests::raw::{samples, snapshots};

/// Lab series with every shape the kernel gave: L2ARC, SLOG, special and dedup vdevs, a
/// degraded pool, a resilver, raidz.
const SERIES: [&str; 5] = [
    "basic",
    "vdevs/deg",
    "vdevs/rz",
    "resilver/resilver",
    "seed/after",
];

#[test]
fn every_set_of_parts_encodes_as_serde_encodes_the_sample_without_them() {
    let mut checked = 0;
    for rel in SERIES {
        let samples = samples(&snapshots(&[rel]));
        assert!(!samples.is_empty(), "{rel} makes samples");
        // Every set on the first sample of each series, a stride of sets on the others.
        for (i, sample) in samples.iter().enumerate() {
            let mut encoder = PartEncoder::new(sample);
            let step = if i == 0 { 1 } else { 61 };
            for unread in (0..=PARTS_KNOWN).step_by(step) {
                let want = rmp_serde::to_vec_named(&sample.without(unread)).unwrap();
                assert!(
                    encoder.encode(unread) == want,
                    "{rel} sample {i}, unread parts {unread:#x}: not serde's bytes"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 5 * 1024);
}

/// The SDK decodes each sample into the previous one (in place, reusing its allocations):
/// over the lab series one after another, and with the sets of parts the shipped checks
/// read, what the plugin sees is what a fresh decoding gives.
#[test]
fn each_sample_decoded_into_the_previous_is_what_a_fresh_decoding_gives() {
    let sets = [0, PARTS_KNOWN, 0x2a5, 0x15a];
    for unread in sets {
        let mut place = None;
        for rel in SERIES {
            for (i, sample) in samples(&snapshots(&[rel])).iter().enumerate() {
                let bytes = encode_sample_for(sample, unread);
                let fresh = decode_sample(&bytes).unwrap();
                let reused = decode_sample_into(&bytes, &mut place).unwrap();
                assert!(reused == &fresh, "{rel} sample {i}, unread {unread:#x}");
            }
        }
    }
}
