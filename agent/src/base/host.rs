//! Facts about the host the agent runs on that any layer may ask for: its name and the
//! user the agent runs as. (What a snapshot reports about a host, live or from a capture,
//! is the sources' business: `crate::sources::System::identity`.)

/// The agent's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// The system's hostname (gethostname(3)), or `None` when it cannot be read or is empty.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the pointer and length describe `buf`, which outlives the call; gethostname
    // writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    // POSIX leaves a truncated name without its NUL: the buffer's end then ends it.
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..len]).into_owned();
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
