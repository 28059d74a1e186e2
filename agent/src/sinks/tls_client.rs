//! The TLS client side of the sinks that speak TLS (Forward, syslog): [`TlsConfig`] is their
//! one `[sink.tls]` table, and [`client_config`] makes the rustls [`ClientConfig`] from its
//! files, so both sinks trust servers and present a client certificate (mutual TLS) the same
//! way and name the same keys in errors.
//!
//! * `ca`: PEM file of the CA certificates a server's chain must end at; default: the system
//!   bundle ([`super::ca_bundle`]).
//! * `cert` and `key`: PEM files of this agent's certificate chain (leaf first) and its private
//!   key (PKCS#8, PKCS#1 or SEC1), presented when the server asks for one (RFC 8446 §4.3.2,
//!   RFC 5246 §7.4.4). Both or neither.
//!
//! ring is the provider, named explicitly so that another crate enabling aws-lc-rs cannot make
//! the process default ambiguous.

use rustls::ClientConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `[sink.tls]`, the same table for every sink that speaks TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file of the CA certificates to trust; default: the system's bundle.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// PEM file of the client certificate chain (with `key`: mutual TLS).
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// PEM file of the client certificate's private key.
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// The name the server's certificate must carry; default: the address's host. Forward
    /// only (the syslog sink refuses it: see `sinks::syslog`).
    #[serde(default)]
    pub server_name: Option<String>,
}

impl TlsConfig {
    /// The rustls client config of these files ([`client_config`]).
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, String> {
        client_config(
            self.ca.as_deref(),
            self.cert.as_deref(),
            self.key.as_deref(),
        )
    }
}

/// The client config for `ca`, and for `cert` with `key` when given (errors name the key:
/// `tls.key: /etc/zpulse/agent.key: …`).
pub fn client_config(
    ca: Option<&Path>,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<Arc<ClientConfig>, String> {
    let ca = match ca {
        Some(p) => p.to_path_buf(),
        None => super::ca_bundle::system_ca_bundle()?,
    };
    let at = ca.display();
    let mut roots = rustls::RootCertStore::empty();
    for found in CertificateDer::pem_file_iter(&ca).map_err(|e| format!("tls.ca: {at}: {e}"))? {
        let found = found.map_err(|e| format!("tls.ca: {at}: {e}"))?;
        // A bundle may hold certificates this TLS stack cannot use; the rest still count.
        let _ = roots.add(found);
    }
    if roots.is_empty() {
        return Err(format!("tls.ca: {at}: no usable CA certificate"));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots);
    let config = match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("tls.cert: {}: {e}", cert.display()))?;
            if chain.is_empty() {
                return Err(format!("tls.cert: {}: no certificate", cert.display()));
            }
            let key_der = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("tls.key: {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| format!("tls.cert/tls.key: {e}"))?
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => return Err("tls.cert: give its private key as tls.key too".into()),
        (None, Some(_)) => return Err("tls.key: give its certificate as tls.cert too".into()),
    };
    Ok(Arc::new(config))
}
