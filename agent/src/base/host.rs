//! Facts about the host the agent runs on that any layer may ask for: its name and the
//! user the agent runs as. (What a snapshot reports about a host, live or from a capture,
//! is the sources' business: `crate::sources::System::identity`.)

/// The agent's effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The system's hostname (the `nodename` of uname(2), which is what gethostname(3) returns on
/// Linux and FreeBSD alike), or `None` when it is empty.
pub fn hostname() -> Option<String> {
    let uname = rustix::system::uname();
    let name = String::from_utf8_lossy(uname.nodename().to_bytes()).into_owned();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same name the kernel shows in /proc (the live identity's source on Linux).
    #[test]
    fn the_hostname_is_the_kernels() {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(hostname().as_deref(), Some(kernel.trim_end()));
    }
}
