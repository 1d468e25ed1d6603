//! TLS for HBase 2.6 native RPC TLS (rustls, ring provider): a PEM trust store, an optional
//! client certificate, and the server's certificate checked against the host the client dials.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::error::{Error, Result};
use crate::security::Tls;

/// A TLS client built once from [`Tls`] settings and shared by every connection.
#[derive(Clone)]
pub(crate) struct TlsClient {
    connector: TlsConnector,
    ca_pem: String,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("ca_pem", &self.ca_pem)
            .finish()
    }
}

fn bad_file(path: &std::path::Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("TLS {what} {}: {e}", path.display()))
}

/// Checks the chain of trust but accepts any host name (for `verify_hostname(false)`).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

impl TlsClient {
    /// Reads the PEM files; a missing or unreadable file is an [`Error::InvalidInput`] naming it.
    pub(crate) fn new(settings: &Tls) -> Result<TlsClient> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        let cas = CertificateDer::pem_file_iter(&settings.ca_pem)
            .map_err(|e| bad_file(&settings.ca_pem, "trust store", e))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| bad_file(&settings.ca_pem, "trust store", e))?;
        if cas.is_empty() {
            return Err(bad_file(
                &settings.ca_pem,
                "trust store",
                "no certificate in it",
            ));
        }
        for ca in cas {
            roots
                .add(ca)
                .map_err(|e| bad_file(&settings.ca_pem, "trust store", e))?;
        }
        let roots = Arc::new(roots);
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::InvalidInput(format!("TLS: {e}")))?;
        let builder = if settings.verify_hostname {
            builder.with_root_certificates(roots)
        } else {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| Error::InvalidInput(format!("TLS trust store: {e}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyName(webpki)))
        };
        let config = match &settings.client_cert {
            None => builder.with_no_client_auth(),
            Some((cert_path, key_path)) => {
                let chain = CertificateDer::pem_file_iter(cert_path)
                    .map_err(|e| bad_file(cert_path, "client certificate", e))?
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| bad_file(cert_path, "client certificate", e))?;
                if chain.is_empty() {
                    return Err(bad_file(
                        cert_path,
                        "client certificate",
                        "no certificate in it",
                    ));
                }
                let key = PrivateKeyDer::from_pem_file(key_path)
                    .map_err(|e| bad_file(key_path, "client key", e))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| bad_file(key_path, "client key", e))?
            }
        };
        Ok(TlsClient {
            connector: TlsConnector::from(Arc::new(config)),
            ca_pem: settings.ca_pem.display().to_string(),
        })
    }

    /// The TLS handshake over `stream` with the server known as `host` (what the certificate
    /// must name). `addr` names the server in errors.
    pub(crate) async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
        host: &str,
        addr: &str,
    ) -> Result<TlsStream<S>> {
        let name = ServerName::try_from(host.to_string()).map_err(|e| {
            Error::InvalidInput(format!("server host {host:?} is not a valid TLS name: {e}"))
        })?;
        self.connector
            .connect(name, stream)
            .await
            .map_err(|e| self.classify(e, host, addr))
    }

    /// A refused certificate is an [`Error::Tls`]; anything else a connection failure.
    fn classify(&self, e: std::io::Error, host: &str, addr: &str) -> Error {
        let Some(tls) = e.get_ref().and_then(|r| r.downcast_ref::<rustls::Error>()) else {
            return Error::Connection {
                addr: addr.to_string(),
                source: e,
            };
        };
        let message = match tls {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
                "the server's certificate is not signed by a CA in the trust store {} ({tls})",
                self.ca_pem
            ),
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => format!(
                "the server's certificate is not valid for the host name {host:?} the client \
                 connected to ({tls})"
            ),
            rustls::Error::InvalidCertificate(c) => {
                format!("the server's certificate was refused: {c:?} ({tls})")
            }
            rustls::Error::AlertReceived(alert) => format!(
                "the server refused the handshake with alert {alert:?} (does it require a client \
                 certificate, or distrust ours?)"
            ),
            other => format!("handshake failed: {other}"),
        };
        Error::Tls {
            addr: addr.to_string(),
            message,
        }
    }
}
