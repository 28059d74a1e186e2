//! The settings shown in the crate doc, docs/checks/arc-sizing.md and the packaged zpulse.toml are
//! the code's defaults (tests/settings.rs).

#[test]
fn documented_settings_equal_the_code() {
    zpulse_tests::settings::assert_documented::<zpulse_check_arc_sizing::Config>("arc-sizing");
}

#[test]
fn window_samples_zero_is_no_limit_and_a_cap_below_min_samples_or_a_zero_window_is_refused() {
    zpulse_tests::settings::assert_window_rules::<zpulse_check_arc_sizing::ArcSizing>(12);
}
