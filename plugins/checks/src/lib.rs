//! The checks zpulse ships, in one shared object: `libzpulse_checks.so`, a plugin bundle
//! (ABI 1.5, [`zpulse_proto::export_plugins!`]).
//!
//! Each check is a crate of its own (`plugins/<check>`: its logic, its tests, its doc in
//! `docs/checks/`) and stays a plugin of its own once loaded — its name, its
//! `[plugins.<name>]` table, its state and its thread, exactly as if it were alone in a file.
//! What the bundle saves is the code they share: one copy of the SDK, serde and the standard
//! library in one file instead of eight, which is most of every check's shared object (one
//! check alone is ~2 MB of code, ~85% of it the shared part), and so most of the agent's
//! resident memory for code (docs/performance.md). `[plugins] disable` turns one off.
//!
//! The order below is the order the agent loads them in, and so the order of their events
//! in a sample: the pool's basic health first, then what the kernel's events say.

zpulse_proto::export_plugins!(
    zpulse_check_pool_health::PoolHealth,
    zpulse_check_zevents::Zevents,
    zpulse_check_layout::Layout,
    zpulse_check_hdd_saturation::HddSaturation,
    zpulse_check_arc_sizing::ArcSizing,
    zpulse_check_special_fill::SpecialFill,
    zpulse_check_slog_usage::SlogUsage,
    zpulse_check_l2arc_value::L2arcValue,
);
