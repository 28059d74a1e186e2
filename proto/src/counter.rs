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
    fn ratio_over_nothing_is_unknown() {
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(1.0, 4.0), Some(0.25));
    }
}
