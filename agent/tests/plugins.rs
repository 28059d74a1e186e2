//! `zpulse plugins` on files that are not plugins: each is refused with a reason, and the
//! agent survives them (a truncated shared object used to kill it with SIGBUS).

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// A real shared object of this system: zlib, which every Debian has (`zlib1g`).
const LIBZ: &str = "/usr/lib/x86_64-linux-gnu/libz.so.1";

#[test]
fn a_truncated_or_non_elf_plugin_is_refused_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let so = std::fs::read(LIBZ).expect("zlib1g installed");
    std::fs::write(dir.path().join("libtruncated.so"), &so[..so.len() / 2]).unwrap();
    std::fs::write(dir.path().join("libtext.so"), b"not a library\n").unwrap();
    for f in ["libtruncated.so", "libtext.so"] {
        let p = dir.path().join(f);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_zpulse"))
        .arg("plugins")
        .arg("--plugin-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    // Exits by itself (1: plugins not running), not by a signal.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("truncated: the ELF headers describe more than its"),
        "{text}"
    );
    assert!(text.contains("not an ELF file"), "{text}");
}
