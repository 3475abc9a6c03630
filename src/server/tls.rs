//! TLS for client connections (`--tls-cert`, `--tls-key`): a rustls server configuration that
//! pgwire uses when a client sends SSLRequest (`sslmode=require`, `verify-full`).
//!
//! rustls comes through pgwire's `tokio_rustls` (one copy, with ring), so TLS adds no crate.

use std::sync::Arc;

use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls::ServerConfig;
use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Builds the acceptor from a PEM certificate chain and a PEM private key (PKCS#8, PKCS#1 or
/// SEC1). Errors say which file is wrong and how.
pub fn acceptor(cert_path: &str, key_path: &str) -> Result<TlsAcceptor, String> {
    let cert_pem =
        std::fs::read(cert_path).map_err(|e| format!("cannot read --tls-cert {cert_path}: {e}"))?;
    let key_pem =
        std::fs::read(key_path).map_err(|e| format!("cannot read --tls-key {key_path}: {e}"))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {cert_path} is not a PEM certificate chain: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "--tls-cert {cert_path} holds no certificate (expected PEM \"BEGIN CERTIFICATE\")"
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| format!("--tls-key {key_path} is not a PEM private key: {e}"))?;
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert and --tls-key do not make a usable pair: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
