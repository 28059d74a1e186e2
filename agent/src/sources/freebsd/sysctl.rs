//! Reading sysctls by name: live (the `sysctl` crate) or from a capture (`sysctl/<name>`).

/// One way to read sysctls.
pub trait Sysctl {}
