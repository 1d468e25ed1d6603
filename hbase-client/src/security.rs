//! Security settings of a client: Kerberos (SASL/GSSAPI, as HBase's `hbase.security.authentication
//! = kerberos`) and TLS (HBase 2.6 native RPC TLS), and what the client reports about them.
//!
//! ```no_run
//! # fn demo() -> hbase_client::Result<()> {
//! use hbase_client::{ClientConfig, Kerberos, Protection, Tls};
//! let config = ClientConfig::builder("zk1:2181")
//!     .kerberos(
//!         Kerberos::from_keytab("app@EXAMPLE.COM", "/etc/security/app.keytab")
//!             .protection(Protection::Privacy)
//!             .regionserver_principal("hbase/_HOST@EXAMPLE.COM")
//!             .master_principal("hbase/_HOST@EXAMPLE.COM"),
//!     )
//!     .tls(Tls::new("/etc/hbase/ca.pem"))
//!     .build()?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::error::{Error, Result};

/// Quality of protection after authentication (`hbase.rpc.protection`). With `Integrity` or
/// `Privacy` every frame after the SASL exchange travels as a GSSAPI-wrapped token (signed, or
/// signed and encrypted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protection {
    /// Authentication only (`auth`): frames travel as they are.
    Authentication,
    /// Authentication and integrity (`auth-int`): frames are signed.
    Integrity,
    /// Authentication, integrity and confidentiality (`auth-conf`): frames are encrypted.
    Privacy,
}

impl Protection {
    /// Parses one of HBase's names (`authentication`, `integrity`, `privacy`) or the SASL ones
    /// (`auth`, `auth-int`, `auth-conf`), any case.
    pub fn parse(s: &str) -> Result<Protection> {
        match s.trim().to_ascii_lowercase().as_str() {
            "authentication" | "auth" => Ok(Protection::Authentication),
            "integrity" | "auth-int" => Ok(Protection::Integrity),
            "privacy" | "auth-conf" => Ok(Protection::Privacy),
            other => Err(Error::InvalidInput(format!(
                "unknown RPC protection {other:?} (choose authentication, integrity or privacy)"
            ))),
        }
    }

    /// Parses a comma-separated list in order of preference, as `hbase.rpc.protection` allows.
    pub fn parse_list(s: &str) -> Result<Vec<Protection>> {
        let list = s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(Protection::parse)
            .collect::<Result<Vec<_>>>()?;
        if list.is_empty() {
            return Err(Error::InvalidInput("empty RPC protection list".into()));
        }
        Ok(list)
    }

    /// HBase's name of the level.
    pub fn name(self) -> &'static str {
        match self {
            Protection::Authentication => "authentication",
            Protection::Integrity => "integrity",
            Protection::Privacy => "privacy",
        }
    }

    /// The security-layer bit of RFC 4752 (GSSAPI SASL): 1 none, 2 integrity, 4 confidentiality.
    pub(crate) fn layer_bit(self) -> u8 {
        match self {
            Protection::Authentication => 1,
            Protection::Integrity => 2,
            Protection::Privacy => 4,
        }
    }

    #[cfg_attr(not(feature = "kerberos"), allow(dead_code))]
    fn index(self) -> usize {
        self.layer_bit().trailing_zeros() as usize
    }
}

impl std::fmt::Display for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the client's Kerberos credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Login {
    /// Log in as `principal` with the keys in `keytab`; log in again before the ticket expires.
    Keytab { principal: String, keytab: PathBuf },
    /// Use the tickets someone else keeps fresh (`kinit`, `k5start`, a login session) in a
    /// credential cache: the named one, or the default (`KRB5CCNAME`).
    TicketCache { cache: Option<String> },
}

/// Kerberos (SASL/GSSAPI) settings. The client talks to the KDC through the system's MIT
/// Kerberos, configured as usual (`/etc/krb5.conf` or `KRB5_CONFIG`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kerberos {
    pub(crate) login: Login,
    pub(crate) protection: Vec<Protection>,
    pub(crate) regionserver_principal: String,
    pub(crate) master_principal: String,
    /// `_HOST` as the canonical name of the server's address (see [`Kerberos::reverse_dns`]).
    pub(crate) reverse_dns: bool,
}

/// The server principal pattern when none is configured: `hbase/_HOST` in the default realm.
pub const DEFAULT_SERVER_PRINCIPAL: &str = "hbase/_HOST";

impl Kerberos {
    fn with_login(login: Login) -> Kerberos {
        Kerberos {
            login,
            protection: vec![Protection::Authentication],
            regionserver_principal: DEFAULT_SERVER_PRINCIPAL.into(),
            master_principal: DEFAULT_SERVER_PRINCIPAL.into(),
            reverse_dns: true,
        }
    }

    /// Logs in as `principal` (e.g. `app@EXAMPLE.COM`) with the keys in `keytab`, and logs in
    /// again from the keytab when 80% of the ticket's lifetime has passed (as Hadoop does), so
    /// long runs outlive their tickets.
    pub fn from_keytab(principal: impl Into<String>, keytab: impl AsRef<Path>) -> Kerberos {
        Kerberos::with_login(Login::Keytab {
            principal: principal.into(),
            keytab: keytab.as_ref().to_path_buf(),
        })
    }

    /// Uses the tickets in credential cache `cache` (e.g. `FILE:/tmp/krb5cc_1000`), or in the
    /// default cache when `None`. Whoever fills the cache renews it; the client reads it again
    /// when its ticket has expired.
    pub fn from_ticket_cache(cache: Option<&str>) -> Kerberos {
        Kerberos::with_login(Login::TicketCache {
            cache: cache.map(str::to_string),
        })
    }

    /// The one protection level the client accepts. Default [`Protection::Authentication`], as
    /// HBase's `hbase.rpc.protection`. The server must offer it.
    pub fn protection(mut self, protection: Protection) -> Kerberos {
        self.protection = vec![protection];
        self
    }

    /// The levels the client accepts, most preferred first (the server picks nothing: the client
    /// takes the first the server offers).
    pub fn protections(mut self, levels: &[Protection]) -> Kerberos {
        if !levels.is_empty() {
            self.protection = levels.to_vec();
        }
        self
    }

    /// Principal of the region servers (`hbase.regionserver.kerberos.principal`), e.g.
    /// `hbase/_HOST@EXAMPLE.COM`; `_HOST` becomes the canonical name of the server's address,
    /// lower-cased, as in the Java client (see [`reverse_dns`](Self::reverse_dns)). Without a
    /// realm the default realm applies. Default `hbase/_HOST`.
    pub fn regionserver_principal(mut self, pattern: impl Into<String>) -> Kerberos {
        self.regionserver_principal = pattern.into();
        self
    }

    /// Principal of the masters (`hbase.master.kerberos.principal`). Default `hbase/_HOST`.
    pub fn master_principal(mut self, pattern: impl Into<String>) -> Kerberos {
        self.master_principal = pattern.into();
        self
    }

    /// How `_HOST` in a server principal becomes a host name. `true` (the default, as the Java
    /// client): the canonical name of the server's address, that is the advertised name
    /// resolved, its address looked up in reverse, and the name kept if it resolves back to
    /// that address (else the address in text). `false` (Java's
    /// `hbase.unsafe.client.kerberos.hostname.disable.reversedns=true`): the name the cluster
    /// advertises, as written; an advertised address is still looked up in reverse, as Java
    /// does. Either way lower-cased. A name that does not resolve here (a server reached
    /// through an address map) stays as advertised.
    pub fn reverse_dns(mut self, on: bool) -> Kerberos {
        self.reverse_dns = on;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if let Login::Keytab { principal, keytab } = &self.login {
            if principal.trim().is_empty() {
                return Err(Error::InvalidInput("Kerberos principal is empty".into()));
            }
            if keytab.as_os_str().is_empty() {
                return Err(Error::InvalidInput("Kerberos keytab path is empty".into()));
            }
        }
        for pattern in [&self.regionserver_principal, &self.master_principal] {
            let service = pattern.split(['/', '@']).next().unwrap_or("");
            if service.is_empty() {
                return Err(Error::InvalidInput(format!(
                    "server principal {pattern:?} has no service name (expected e.g. hbase/_HOST@REALM)"
                )));
            }
        }
        Ok(())
    }
}

/// The server principal for `pattern` on the server the cluster advertises as `host`: a
/// `_HOST` instance part takes the canonical name of the host's address, as the Java client's
/// (`rpc/canonical_host.rs`), or with `reverse_dns` off the advertised name (an advertised
/// address still looked up in reverse, as Java's `InetAddress.getHostName`); any other
/// pattern is used as written.
#[cfg_attr(not(feature = "kerberos"), allow(dead_code))]
pub(crate) async fn principal_of_server(pattern: &str, host: &str, reverse_dns: bool) -> String {
    let name = pattern.split_once('@').map_or(pattern, |(name, _)| name);
    let has_host = name
        .split_once('/')
        .is_some_and(|(_, instance)| instance == "_HOST");
    let is_address = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok();
    if has_host && (reverse_dns || is_address) {
        server_principal(
            pattern,
            &crate::rpc::canonical_host::canonical_host(host).await,
        )
    } else {
        server_principal(pattern, host)
    }
}

#[cfg_attr(not(feature = "kerberos"), allow(dead_code))]
/// The server principal for `pattern` on `host`: `_HOST` as the instance part becomes the host
/// name, lower-cased, as Hadoop's `SecurityUtil.getServerPrincipal` makes `service/_HOST@REALM`.
/// A pattern without a realm (`hbase/_HOST`) Hadoop leaves as written (a principal no KDC
/// has); here it gets the host name too, and the default realm applies.
pub(crate) fn server_principal(pattern: &str, host: &str) -> String {
    let (name, realm) = match pattern.split_once('@') {
        Some((name, realm)) => (name, Some(realm)),
        None => (pattern, None),
    };
    let name = match name.split_once('/') {
        Some((service, "_HOST")) => format!("{service}/{}", host.to_ascii_lowercase()),
        _ => name.to_string(),
    };
    match realm {
        Some(realm) => format!("{name}@{realm}"),
        None => name,
    }
}

/// TLS settings (HBase 2.6 `hbase.server.netty.tls.enabled` on the servers). Every server
/// certificate is checked against the PEM trust store and, unless turned off, against the host
/// name the client dials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub(crate) ca_pem: PathBuf,
    pub(crate) client_cert: Option<(PathBuf, PathBuf)>,
    pub(crate) verify_hostname: bool,
}

impl Tls {
    /// Trusts the CA certificates in PEM file `ca_pem` (HBase: `hbase.rpc.tls.truststore.location`
    /// with type PEM).
    pub fn new(ca_pem: impl AsRef<Path>) -> Tls {
        Tls {
            ca_pem: ca_pem.as_ref().to_path_buf(),
            client_cert: None,
            verify_hostname: true,
        }
    }

    /// Presents a client certificate (PEM chain in `cert_pem`, its PKCS#8, PKCS#1 or SEC1 key in
    /// `key_pem`), for servers that ask for one (`hbase.server.netty.tls.client.auth.mode`).
    pub fn client_certificate(
        mut self,
        cert_pem: impl AsRef<Path>,
        key_pem: impl AsRef<Path>,
    ) -> Tls {
        self.client_cert = Some((
            cert_pem.as_ref().to_path_buf(),
            key_pem.as_ref().to_path_buf(),
        ));
        self
    }

    /// Whether a server certificate must name the host the client dials (an address mapper's
    /// result, if one is set). Default true; turning it off still checks the chain of trust.
    pub fn verify_hostname(mut self, verify: bool) -> Tls {
        self.verify_hostname = verify;
        self
    }
}

/// What the client has done for security so far; see [`Client::security`](crate::Client::security).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SecurityStatus {
    /// The Kerberos principal the client authenticates as, once logged in.
    pub principal: Option<String>,
    /// When the current ticket expires (keytab logins and ticket caches).
    pub ticket_expires: Option<SystemTime>,
    /// Kerberos logins (from the keytab, or readings of the ticket cache): the first one plus
    /// every one made because the ticket was due.
    pub logins: u64,
    /// Logins that brought a later ticket than the one about to expire (or expired).
    pub renewals: u64,
    /// Connections that completed the SASL exchange, per negotiated protection level.
    pub sasl_handshakes: SaslHandshakes,
    /// Connections that completed a TLS handshake.
    pub tls_handshakes: u64,
    /// Connection setups refused for security reasons (authentication, certificates).
    pub failures: u64,
}

/// Completed SASL exchanges per protection level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaslHandshakes {
    /// Negotiated `auth`.
    pub authentication: u64,
    /// Negotiated `auth-int`.
    pub integrity: u64,
    /// Negotiated `auth-conf`.
    pub privacy: u64,
}

impl SaslHandshakes {
    /// All levels together.
    pub fn total(&self) -> u64 {
        self.authentication + self.integrity + self.privacy
    }

    /// The count for one level.
    pub fn at(&self, level: Protection) -> u64 {
        match level {
            Protection::Authentication => self.authentication,
            Protection::Integrity => self.integrity,
            Protection::Privacy => self.privacy,
        }
    }
}

/// Counters behind [`SecurityStatus`], shared by the login and every connection setup.
#[derive(Debug, Default)]
pub(crate) struct SecurityCounters {
    logins: AtomicU64,
    renewals: AtomicU64,
    sasl: [AtomicU64; 3],
    tls: AtomicU64,
    failures: AtomicU64,
    ticket: Mutex<(Option<String>, Option<SystemTime>)>,
}

#[cfg_attr(not(all(feature = "kerberos", feature = "tls")), allow(dead_code))]
impl SecurityCounters {
    pub(crate) fn logged_in(&self, principal: &str, expires: Option<SystemTime>, renewal: bool) {
        self.logins.fetch_add(1, Ordering::Relaxed);
        if renewal {
            self.renewals.fetch_add(1, Ordering::Relaxed);
        }
        *self.ticket.lock().unwrap_or_else(|e| e.into_inner()) =
            (Some(principal.to_string()), expires);
    }

    pub(crate) fn sasl_done(&self, level: Protection) {
        self.sasl[level.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn tls_done(&self) {
        self.tls.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> SecurityStatus {
        let (principal, ticket_expires) = self
            .ticket
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let sasl = |i: usize| self.sasl[i].load(Ordering::Relaxed);
        SecurityStatus {
            principal,
            ticket_expires,
            logins: self.logins.load(Ordering::Relaxed),
            renewals: self.renewals.load(Ordering::Relaxed),
            sasl_handshakes: SaslHandshakes {
                authentication: sasl(0),
                integrity: sasl(1),
                privacy: sasl(2),
            },
            tls_handshakes: self.tls.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_substitution_follows_hadoop() {
        assert_eq!(
            server_principal("hbase/_HOST@EXAMPLE.COM", "RS1.Example.com"),
            "hbase/rs1.example.com@EXAMPLE.COM"
        );
        assert_eq!(server_principal("hbase/_HOST", "h"), "hbase/h");
        // only the instance part is substituted
        assert_eq!(
            server_principal("hbase/fixed.host@R", "other"),
            "hbase/fixed.host@R"
        );
        assert_eq!(server_principal("hbase@R", "h"), "hbase@R");
    }

    #[test]
    fn protection_names() {
        assert_eq!(
            Protection::parse_list("privacy, auth-int,authentication").unwrap(),
            vec![
                Protection::Privacy,
                Protection::Integrity,
                Protection::Authentication
            ]
        );
        assert_eq!(Protection::parse("AUTH-CONF").unwrap(), Protection::Privacy);
        assert!(Protection::parse("secret").is_err());
        assert!(Protection::parse_list(" , ").is_err());
    }

    #[test]
    fn settings_are_checked() {
        assert!(Kerberos::from_keytab("", "/k").validate().is_err());
        assert!(Kerberos::from_keytab("a@R", "").validate().is_err());
        assert!(Kerberos::from_keytab("a@R", "/k")
            .regionserver_principal("/_HOST@R")
            .validate()
            .is_err());
        assert!(Kerberos::from_ticket_cache(None).validate().is_ok());
    }
}
