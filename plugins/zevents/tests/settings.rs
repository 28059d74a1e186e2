//! The settings shown in the crate doc, docs/checks/zevents.md and the packaged zpulse.toml are
//! the code's defaults (tests/settings.rs).

#[test]
fn documented_settings_equal_the_code() {
    zpulse_tests::settings::assert_documented::<zpulse_check_zevents::Config>("zevents");
}
