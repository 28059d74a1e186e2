//! The system's CA bundle, for the TLS sinks (syslog, Forward) when `tls.ca` is not given:
//! one list of places, so that both sinks trust the same roots on every OS.

use std::path::{Path, PathBuf};

/// Where the bundle is, first match wins:
/// * Debian/Ubuntu (ca-certificates) and Red Hat (ca-certificates, `tls/certs`);
/// * FreeBSD: `/etc/ssl/cert.pem`, the base system's bundle or security/ca_root_nss's
///   `ETCSYMLINK` (on by default), then that port's own files
///   (`${PREFIX}/etc/ssl/cert.pem`, `${PREFIX}/share/certs/ca-root-nss.crt`; ports Makefile
///   `do-install`).
pub const SYSTEM_CA_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/usr/local/etc/ssl/cert.pem",
    "/usr/local/share/certs/ca-root-nss.crt",
];

/// The first of [`SYSTEM_CA_BUNDLES`] that is a file, or an error that lists them all.
pub fn system_ca_bundle() -> Result<PathBuf, String> {
    first_file(SYSTEM_CA_BUNDLES, |p| p.is_file())
}

fn first_file(candidates: &[&str], is_file: impl Fn(&Path) -> bool) -> Result<PathBuf, String> {
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| is_file(p))
        .ok_or_else(|| {
            format!(
                "tls.ca: not given, and no system CA bundle found (tried {}); give the \
                 server's CA as a PEM file",
                candidates.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FreeBSD host with only security/ca_root_nss installed without ETCSYMLINK: its own
    /// files are found (before, the Forward sink looked only for the .crt and the syslog
    /// sink only for cert.pem, so the two sinks could disagree).
    #[test]
    fn freebsd_port_files_are_found_and_a_miss_names_every_place() {
        let present = [
            "/usr/local/etc/ssl/cert.pem",
            "/usr/local/share/certs/ca-root-nss.crt",
        ];
        let found = first_file(SYSTEM_CA_BUNDLES, |p| {
            present.iter().any(|f| Path::new(f) == p)
        });
        assert_eq!(found.unwrap(), Path::new("/usr/local/etc/ssl/cert.pem"));
        let only_crt = first_file(SYSTEM_CA_BUNDLES, |p| {
            p == Path::new("/usr/local/share/certs/ca-root-nss.crt")
        });
        assert_eq!(
            only_crt.unwrap(),
            Path::new("/usr/local/share/certs/ca-root-nss.crt")
        );
        let e = first_file(SYSTEM_CA_BUNDLES, |_| false).unwrap_err();
        for place in SYSTEM_CA_BUNDLES {
            assert!(e.contains(place), "{e}");
        }
    }
}
