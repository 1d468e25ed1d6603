//! Connection setup with the configured security: TCP, then TLS (if configured), then the
//! preamble, the SASL exchange (with Kerberos) and the connection header. What comes out is a
//! reader and a writer for the frame stream, and the SASL session when frames travel wrapped.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::frame::{self, AuthMethod, Service};
use super::sasl::SaslSession;
use crate::error::{Error, Result};
use crate::security::{Kerberos, SecurityCounters, SecurityStatus, Tls};

#[cfg(feature = "kerberos")]
use super::kerberos::{GssContext, KerberosAuth};
#[cfg(feature = "tls")]
use super::tls::TlsClient;

/// The reading half of an established connection.
pub(crate) type Reader = Box<dyn AsyncRead + Send + Unpin>;
/// The writing half of an established connection.
pub(crate) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// An established connection, ready for request frames.
pub(crate) struct Established {
    pub(crate) reader: Reader,
    pub(crate) writer: Writer,
    /// The SASL session of a Kerberos connection; with integrity or privacy every later byte
    /// travels wrapped.
    pub(crate) sasl: Option<Arc<SaslSession>>,
    /// A write that fails sent none of the bytes it was given: true over plain TCP (write(2)
    /// takes bytes or fails with none taken); false over TLS, whose write may have sent
    /// records of what it took before the socket failed.
    pub(crate) write_failure_sends_nothing: bool,
}

/// The client's security: its Kerberos identity and TLS settings, shared by every connection.
pub(crate) struct Security {
    #[cfg(feature = "kerberos")]
    kerberos: Option<Arc<KerberosAuth>>,
    #[cfg(feature = "tls")]
    tls: Option<TlsClient>,
    counters: Arc<SecurityCounters>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Security").finish_non_exhaustive()
    }
}

impl Security {
    /// Prepares the configured security: reads the TLS files and logs in to Kerberos, so that
    /// bad settings and bad credentials fail here, once. Neither configured: SIMPLE over TCP.
    pub(crate) async fn new(kerberos: Option<&Kerberos>, tls: Option<&Tls>) -> Result<Security> {
        let counters = Arc::new(SecurityCounters::default());
        let _ = (kerberos, tls); // unused when both features are off
        #[cfg(feature = "tls")]
        let tls = tls.map(TlsClient::new).transpose()?;
        #[cfg(feature = "kerberos")]
        let kerberos = match kerberos {
            Some(settings) => match KerberosAuth::new(settings.clone(), counters.clone()).await {
                Ok(auth) => Some(Arc::new(auth)),
                Err(e) => {
                    counters.failed();
                    return Err(e);
                }
            },
            None => None,
        };
        Ok(Security {
            #[cfg(feature = "kerberos")]
            kerberos,
            #[cfg(feature = "tls")]
            tls,
            counters,
        })
    }

    pub(crate) fn status(&self) -> SecurityStatus {
        self.counters.snapshot()
    }

    /// Connects to `addr` (what the client dials, after the address mapper) for `service` of the
    /// server the cluster advertises as `host` (the host part of a `_HOST` principal).
    pub(crate) async fn establish(
        &self,
        addr: &str,
        host: &str,
        service: Service,
        user: &str,
        compressor: Option<&str>,
    ) -> Result<Established> {
        let setup = async {
            let connection_error = |source| Error::Connection {
                addr: addr.to_string(),
                source,
            };
            let mut tcp = TcpStream::connect(addr).await.map_err(connection_error)?;
            tcp.set_nodelay(true).map_err(connection_error)?;
            #[cfg(feature = "tls")]
            if let Some(tls) = &self.tls {
                let mut stream = tls.handshake(tcp, dial_host(addr), addr).await?;
                self.counters.tls_done();
                let sasl = self
                    .authenticate(&mut stream, addr, host, service, user, compressor)
                    .await?;
                let (reader, writer) = tokio::io::split(stream);
                return Ok(Established {
                    reader: Box::new(reader),
                    writer: Box::new(writer),
                    sasl,
                    write_failure_sends_nothing: false,
                });
            }
            let sasl = self
                .authenticate(&mut tcp, addr, host, service, user, compressor)
                .await?;
            // A TCP stream splits without a lock between its halves.
            let (reader, writer) = tcp.into_split();
            Ok(Established {
                reader: Box::new(reader),
                writer: Box::new(writer),
                sasl,
                write_failure_sends_nothing: true,
            })
        };
        let result: Result<Established> = setup.await;
        if let Err(e) = &result {
            if e.kind() == crate::ErrorKind::Authentication {
                self.counters.failed();
            }
        }
        result
    }

    /// The preamble, the SASL exchange (with Kerberos) and the connection header on the
    /// transport; the SASL session if there is one.
    async fn authenticate<S>(
        &self,
        stream: &mut S,
        addr: &str,
        host: &str,
        service: Service,
        user: &str,
        compressor: Option<&str>,
    ) -> Result<Option<Arc<SaslSession>>>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin,
    {
        #[cfg(feature = "kerberos")]
        if let Some(auth) = &self.kerberos {
            return self
                .kerberos_exchange(auth, stream, addr, host, service, compressor)
                .await;
        }
        let _ = host;
        let mut hello = frame::preamble(AuthMethod::Simple).to_vec();
        hello.extend_from_slice(&frame::connection_header(user, service, compressor));
        let io = |source| Error::Connection {
            addr: addr.to_string(),
            source,
        };
        stream.write_all(&hello).await.map_err(io)?;
        stream.flush().await.map_err(io)?;
        Ok(None)
    }

    /// Preamble (KERBEROS), SASL/GSSAPI, then the connection header as the principal.
    #[cfg(feature = "kerberos")]
    async fn kerberos_exchange<S>(
        &self,
        auth: &KerberosAuth,
        stream: &mut S,
        addr: &str,
        host: &str,
        service: Service,
        compressor: Option<&str>,
    ) -> Result<Option<Arc<SaslSession>>>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin,
    {
        let io = |source| Error::Connection {
            addr: addr.to_string(),
            source,
        };
        let settings = auth.settings();
        let pattern = match service {
            // A bootstrap server of the RPC registry may be a master or a region server; the
            // master's principal is used for both (clusters usually share one pattern;
            // `kerberos_bootstrap_on_an_address_asks_for_its_hosts_principal` bootstraps on a
            // secured master).
            Service::Master | Service::ClientMeta => &settings.master_principal,
            Service::Client | Service::Admin => &settings.regionserver_principal,
        };
        let target =
            crate::security::principal_of_server(pattern, host, settings.reverse_dns).await;
        let ticket = auth.ticket().await?;
        let principal = ticket.principal().to_string();
        let (context, initial) = GssContext::start(ticket, target.clone())
            .await
            .map_err(|e| match e {
                Error::Authentication { message, .. } => Error::Authentication {
                    server: Some(addr.to_string()),
                    message,
                },
                other => other,
            })?;
        stream
            .write_all(&frame::preamble(AuthMethod::Kerberos))
            .await
            .map_err(io)?;
        let session = super::sasl::negotiate(
            stream,
            Box::new(context),
            initial,
            &settings.protection,
            addr,
        )
        .await
        .map_err(|e| match e {
            // The server hung up mid-exchange: what it usually means.
            Error::Connection { addr, source }
                if source.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                Error::Authentication {
                    server: Some(addr),
                    message: format!(
                        "the server closed the connection during the SASL exchange as {principal} \
                         for server principal {target} (is Kerberos enabled on the server, and is \
                         {target} its principal?)"
                    ),
                }
            }
            other => other,
        })?;
        let header = frame::connection_header(&principal, service, compressor);
        if session.wraps() {
            let mut sealed = bytes::BytesMut::new();
            session.seal(&header, &mut sealed)?;
            stream.write_all(&sealed).await.map_err(io)?;
        } else {
            stream.write_all(&header).await.map_err(io)?;
        }
        stream.flush().await.map_err(io)?;
        self.counters.sasl_done(session.protection());
        tracing::debug!(addr, %target, protection = %session.protection(), "SASL established");
        Ok(Some(Arc::new(session)))
    }
}

/// The host part of `host:port` (brackets of an IPv6 literal removed).
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
pub(crate) fn dial_host(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dial_host_of_addresses() {
        assert_eq!(dial_host("127.0.0.1:16020"), "127.0.0.1");
        assert_eq!(dial_host("rs1.example.com:16020"), "rs1.example.com");
        assert_eq!(dial_host("[::1]:16020"), "::1");
    }
}
