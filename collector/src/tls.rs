//! TLS for the Forward listener: a certificate chain and its key, PEM files.

use crate::config::Tls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

pub fn server_config(t: &Tls) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs = CertificateDer::pem_file_iter(&t.cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("tls.cert {}: {e}", t.cert.display()))?;
    if certs.is_empty() {
        return Err(format!("tls.cert {}: no certificate", t.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&t.key)
        .map_err(|e| format!("tls.key {}: {e}", t.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls: {e}"))?;
    Ok(Arc::new(config))
}
