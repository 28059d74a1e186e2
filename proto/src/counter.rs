//! Deltas of kernel counters that may wrap or reset.
//!
//! Two different things make a counter go backwards, and they need opposite answers:
//!
//! * a **wrap** of a fixed-width field (Linux prints the diskstats time fields as 32-bit
//!   `%u`): the true delta is the modular difference;
//! * a **reset** (ZFS module reloaded, device detached and re-attached, `iostats` written to):
//!   the previous value means nothing any more, so there is no delta for this interval.
//!
//! A 64-bit counter cannot wrap in practice, so going backwards is always a reset.
//!
//! Counters that one kernel object keeps together (a kstat's rows: arcstats, `zil`, a
//! dataset's `objset-*`) reset together, so [`kstat_deltas`] takes them as a set: one going
//! backwards, or the kstat re-created, and the whole set has no deltas for the interval.
//! Every delta of kernel counters in zpulse is made by the functions here.

use crate::snapshot::{Kstat, KstatValue};
use std::collections::BTreeMap;

/// Delta of a monotonic 64-bit counter; `None` when it went backwards (a reset).
pub fn delta(prev: u64, cur: u64) -> Option<u64> {
    cur.checked_sub(prev)
}

/// Delta of a counter that the kernel truncates to 32 bits; a wrap is taken modulo 2^32.
///
/// Callers must decide about resets from the 64-bit counters beside it: a 32-bit field alone
/// cannot tell a wrap from a reset.
pub fn delta_u32(prev: u64, cur: u64) -> u64 {
    (cur as u32).wrapping_sub(prev as u32) as u64
}

/// Delta of an optional counter: present only when both ends are present and it did not reset.
pub fn delta_opt(prev: Option<u64>, cur: Option<u64>) -> Option<u64> {
    delta(prev?, cur?)
}

/// Deltas of the unsigned rows of `cur` whose name passes `keep`, or `None` when the kstat was
/// re-created (another `crtime`) or any kept counter went backwards: after a module reload,
/// or a dataset destroyed and re-created, every delta would be wrong. A row missing from
/// `prev` (a kernel that added it) has no delta and is left out.
pub fn kstat_deltas(
    prev: &Kstat,
    cur: &Kstat,
    keep: impl Fn(&str) -> bool,
) -> Option<BTreeMap<String, u64>> {
    if let (Some(a), Some(b)) = (prev.header, cur.header)
        && a.crtime != b.crtime
    {
        return None;
    }
    // Both maps are sorted by name: one walk through them side by side finds each row's
    // previous value (no lookup per row), and the deltas come out sorted, so the map is
    // built in one pass.
    let mut previous = prev.fields.iter().peekable();
    let mut out = Vec::new();
    for (name, value) in &cur.fields {
        if !keep(name) {
            continue;
        }
        let KstatValue::Unsigned(now) = value else {
            continue;
        };
        while previous
            .next_if(|(p, _)| p.as_str() < name.as_str())
            .is_some()
        {}
        let Some(before) = previous
            .next_if(|(p, _)| *p == name)
            .and_then(|(_, v)| v.as_u64())
        else {
            continue;
        };
        out.push((name.clone(), delta(before, *now)?));
    }
    Some(BTreeMap::from_iter(out))
}

/// `part / whole`, or `None` when `whole` is zero: a ratio over nothing is unknown, not 0.
pub fn ratio(part: f64, whole: f64) -> Option<f64> {
    if whole > 0.0 && part.is_finite() {
        Some(part / whole)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_of_32_bit_field_is_modular() {
        // 2^32 - 10 → 5 is 15 ms of progress.
        assert_eq!(delta_u32(4_294_967_286, 5), 15);
        // The printed value never exceeds 2^32, but a wider input must not panic.
        assert_eq!(delta_u32(u64::MAX, 0), 1);
    }

    #[test]
    fn backwards_64_bit_counter_is_a_reset() {
        assert_eq!(delta(100, 40), None);
        assert_eq!(delta(40, 100), Some(60));
        assert_eq!(delta_opt(Some(1), None), None);
    }

    #[test]
    fn a_kstat_s_counters_reset_together() {
        let kstat = |rows: &[(&str, u64)]| {
            let mut k = Kstat::default();
            for (n, v) in rows {
                k.insert(*n, KstatValue::Unsigned(*v));
            }
            k
        };
        let a = kstat(&[
            ("zil_commit_count", 10),
            ("zil_itx_count", 50),
            ("reads", 7),
        ]);
        let b = kstat(&[
            ("zil_commit_count", 15),
            ("zil_itx_count", 80),
            ("reads", 1),
        ]);
        // `reads` went back, but only the zil_ rows are asked for.
        let zil = kstat_deltas(&a, &b, |n| n.starts_with("zil_")).unwrap();
        assert_eq!(zil["zil_commit_count"], 5);
        assert_eq!(zil["zil_itx_count"], 30);
        assert_eq!(zil.len(), 2);
        // One kept counter backwards: none of the set has a delta.
        assert_eq!(kstat_deltas(&a, &b, |_| true), None);
        // A row the earlier reading lacks has no delta; the others do.
        let c = kstat(&[
            ("zil_commit_count", 20),
            ("zil_itx_count", 90),
            ("zil_new", 3),
        ]);
        assert!(
            !kstat_deltas(&b, &c, |_| true)
                .unwrap()
                .contains_key("zil_new")
        );
    }

    #[test]
    fn each_row_is_paired_with_its_own_name_whatever_the_other_rows() {
        let mut a = Kstat::default();
        let mut b = Kstat::default();
        // Rows only in one reading, on both sides of the shared ones; a text row and a
        // non-negative signed one (which counts as unsigned, as `Kstat::u64` reads it).
        for (n, v) in [("aa_gone", 1), ("b", 10), ("d", 40), ("zz_gone", 9)] {
            a.insert(n, KstatValue::Unsigned(v));
        }
        a.insert("c", KstatValue::Signed(25));
        a.insert("e", KstatValue::Text("x".into()));
        for (n, v) in [
            ("a_new", 5),
            ("b", 12),
            ("c", 30),
            ("d", 41),
            ("e", 3),
            ("f", 8),
        ] {
            b.insert(n, KstatValue::Unsigned(v));
        }
        let d = kstat_deltas(&a, &b, |_| true).unwrap();
        let got: Vec<(&str, u64)> = d.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        assert_eq!(got, [("b", 2), ("c", 5), ("d", 1)]);
    }

    #[test]
    fn ratio_over_nothing_is_unknown() {
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(1.0, 4.0), Some(0.25));
    }
}
