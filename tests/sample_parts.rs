//! What the agent sends each plugin, on real captures: the part encoder
//! (`zpulse_proto::sample::PartEncoder`, each large part encoded once per sample) writes, for
//! every set of unread parts, the bytes serde writes for `Sample::without` of that set — the
//! definition of what each part is.

use zpulse_proto::abi::PARTS_KNOWN;
use zpulse_proto::sample::PartEncoder;
use zpulse_tests::raw::{samples, snapshots};

/// Lab series with every shape the kernel gave: L2ARC, SLOG, special and dedup vdevs, a
/// degraded pool, a resilver, raidz.
const SERIES: [&str; 5] = ["basic", "vdevs/deg", "vdevs/rz", "resilver/resilver", "seed/after"];

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
