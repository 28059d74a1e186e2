//! TLS for the Forward listener: a certificate chain and its key, PEM files; optionally the
//! CA that signs client certificates, and the names such a certificate carries.

use crate::config::Tls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

/// The certificates of a PEM file, at least one; an error names the setting and the file.
pub(crate) fn certificates(
    path: &std::path::Path,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{what} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{what} {}: no certificate", path.display()));
    }
    Ok(certs)
}

/// Reads every file `t` names; an error names the key and the file.
pub fn server_config(t: &Tls) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs = certificates(&t.cert, "tls.cert")?;
    let key = PrivateKeyDer::from_pem_file(&t.key)
        .map_err(|e| format!("tls.key {}: {e}", t.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match &t.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certificates(ca, "tls.client_ca")? {
                roots
                    .add(c)
                    .map_err(|e| format!("tls.client_ca {}: {e}", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            );
            let verifier = if t.require_client_cert {
                verifier
            } else {
                verifier.allow_unauthenticated()
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| format!("tls.client_ca {}: {e}", ca.display()))?,
            )
        }
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls: {e}"))?;
    Ok(Arc::new(config))
}

/// The names of a (verified) client certificate: its subject's common names, then its DNS
/// subject alternative names (RFC 5280 §4.1.2.6, §4.2.1.6).
pub fn certificate_names(der: &CertificateDer<'_>) -> Vec<String> {
    let Ok(cert) = webpki::EndEntityCert::try_from(der) else {
        return Vec::new();
    };
    let mut names = common_names(cert.subject());
    for n in cert.valid_dns_names() {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_owned());
        }
    }
    names
}

/// The id-at-commonName (2.5.4.3) values of an X.501 Name's contents (RFC 5280 §4.1.2.4:
/// `SEQUENCE OF SET OF SEQUENCE { type OID, value }`), as UTF8String, PrintableString or
/// IA5String. Bytes that are not DER are no names.
pub fn common_names(name: &[u8]) -> Vec<String> {
    const CN: &[u8] = &[0x55, 0x04, 0x03];
    let mut out = Vec::new();
    let mut rdns = name;
    while let Some((0x31, set, rest)) = der_tlv(rdns) {
        rdns = rest;
        let mut atvs = set;
        while let Some((0x30, atv, rest)) = der_tlv(atvs) {
            atvs = rest;
            if let Some((0x06, oid, value)) = der_tlv(atv)
                && oid == CN
                && let Some((0x0c | 0x13 | 0x16, text, _)) = der_tlv(value)
                && let Ok(s) = std::str::from_utf8(text)
            {
                out.push(s.to_owned());
            }
        }
    }
    out
}

/// One DER tag-length-value: (tag, contents, what follows). Definite lengths only (X.690
/// §10.1), at most 4 length bytes.
fn der_tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&first, mut b) = b.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || b.len() < n {
            return None;
        }
        let len = b[..n]
            .iter()
            .fold(0usize, |a, &x| (a << 8) | usize::from(x));
        b = &b[n..];
        len
    };
    (b.len() >= len).then(|| (tag, &b[..len], &b[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_names_from_der() {
        // SEQUENCE contents of /O=zp/CN=nas1: SET{SEQ{OID 2.5.4.10, UTF8 "zp"}},
        // SET{SEQ{OID 2.5.4.3, PrintableString "nas1"}}.
        let name = [
            0x31, 0x0b, 0x30, 0x09, 0x06, 0x03, 0x55, 0x04, 0x0a, 0x0c, 0x02, b'z', b'p', 0x31,
            0x0d, 0x30, 0x0b, 0x06, 0x03, 0x55, 0x04, 0x03, 0x13, 0x04, b'n', b'a', b's', b'1',
        ];
        assert_eq!(common_names(&name), ["nas1"]);
        // Truncated or garbage: no names, no panic.
        assert!(common_names(&name[..20]).is_empty());
        assert!(common_names(&[0x31, 0x84, 0xff, 0xff, 0xff, 0xff]).is_empty());
        assert!(common_names(&[]).is_empty());
    }
}
