//! The host name a server's `_HOST` Kerberos principal takes, derived as the Java client
//! derives it.
//!
//! HBase's Java client (2.6's `RpcConnection.getServerPrincipal`; before 2.6
//! `GssSaslClientAuthenticationProvider.getServerPrincipal`, the same rule) does not put the
//! name the cluster advertises into `hbase/_HOST@REALM`: it resolves that name to an address
//! and puts the address's *canonical* name there, lower-cased
//! (`InetAddress.getCanonicalHostName()`): the reverse lookup of the address, kept only if a
//! forward lookup of that name gives the address back, else the address itself in text. A
//! cluster whose servers register by address or by a short name therefore works with
//! principals named by the host's full name, and a client that used the advertised name would
//! ask the KDC for a principal nobody has. `tests/security.rs` proves the rule by running
//! Java's own method beside this one on the same names.
//!
//! The lookups block (the system resolver), so they run on the blocking pool, and their
//! answers are kept for 30 s (the JDK's `networkaddress.cache.ttl`): a client that opens many
//! connections, or retries one against a slow resolver, asks once per host and half minute.

use std::collections::HashMap;
use std::ffi::CStr;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer is kept (the JDK's default for a resolved name).
const KEPT_FOR: Duration = Duration::from_secs(30);

/// The answers of the last [`KEPT_FOR`], by host as advertised.
static ANSWERS: Mutex<Option<HashMap<String, (String, Instant)>>> = Mutex::new(None);

/// The canonical host name for a server advertised as `host`, as Java's client takes it for a
/// `_HOST` principal. A name that does not resolve stays as written, lower-cased: Java could
/// not connect to it at all, and this client may reach it through an address map.
pub(crate) async fn canonical_host(host: &str) -> String {
    let answers = || ANSWERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((name, at)) = answers().get_or_insert_with(HashMap::new).get(host) {
        if at.elapsed() < KEPT_FOR {
            return name.clone();
        }
    }
    let owned = host.to_string();
    match tokio::task::spawn_blocking(move || canonical_host_blocking(&owned)).await {
        Ok(name) => {
            let mut kept = answers();
            let kept = kept.get_or_insert_with(HashMap::new);
            kept.retain(|_, (_, at)| at.elapsed() < KEPT_FOR);
            kept.insert(host.to_string(), (name.clone(), Instant::now()));
            name
        }
        // The blocking pool is gone (its runtime is shutting down): the name as written.
        Err(_) => host.to_ascii_lowercase(),
    }
}

/// [`canonical_host`], on the calling thread.
pub(crate) fn canonical_host_blocking(host: &str) -> String {
    let unbracketed = host.trim_start_matches('[').trim_end_matches(']');
    let address = match unbracketed.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) => {
            match first_address(unbracketed) {
                Some(ip) => ip,
                None => {
                    tracing::debug!(host, "no address for a server's host name; its principal takes the name as written");
                    return host.to_ascii_lowercase();
                }
            }
        }
    };
    let canonical = match reverse_name(address) {
        Some(name) if resolves_to(&name, address) => name,
        // No name for the address, or one that does not lead back to it: Java takes the
        // address in text.
        _ => java_address_text(address),
    };
    canonical.to_ascii_lowercase()
}

/// The address Java's `InetAddress.getByName` picks for a name: the resolver's first IPv4
/// address if there is one (Java prefers IPv4 unless `java.net.preferIPv6Addresses`), else
/// its first address.
fn first_address(name: &str) -> Option<IpAddr> {
    let addresses: Vec<IpAddr> = (name, 0).to_socket_addrs().ok()?.map(|a| a.ip()).collect();
    addresses
        .iter()
        .find(|ip| ip.is_ipv4())
        .or_else(|| addresses.first())
        .copied()
}

/// Whether a forward lookup of `name` gives `address` among its answers.
fn resolves_to(name: &str, address: IpAddr) -> bool {
    (name, 0)
        .to_socket_addrs()
        .map(|mut all| all.any(|a| a.ip() == address))
        .unwrap_or(false)
}

/// The name the system resolver gives `address` (`getnameinfo` with `NI_NAMEREQD`, as the JDK
/// asks it), or `None`.
fn reverse_name(address: IpAddr) -> Option<String> {
    // SAFETY: the socket address is a zeroed `sockaddr_storage` (large enough and aligned for
    // either family) filled field by field for its family and passed with that family's size;
    // `getnameinfo` writes at most `host.len()` bytes, NUL-terminated, into `host` and nothing
    // else.
    unsafe {
        let mut storage: libc::sockaddr_storage = std::mem::zeroed();
        let len = match SocketAddr::new(address, 0) {
            SocketAddr::V4(v4) => {
                let sa = &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in);
                sa.sin_family = libc::AF_INET as libc::sa_family_t;
                sa.sin_addr.s_addr = u32::from_ne_bytes(v4.ip().octets());
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(v6) => {
                let sa = &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in6);
                sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sa.sin6_addr.s6_addr = v6.ip().octets();
                sa.sin6_scope_id = v6.scope_id();
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        let mut host = [0 as libc::c_char; 1025];
        let rc = libc::getnameinfo(
            &storage as *const _ as *const libc::sockaddr,
            len as libc::socklen_t,
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        );
        if rc != 0 {
            return None;
        }
        let name = CStr::from_ptr(host.as_ptr()).to_str().ok()?;
        (!name.is_empty()).then(|| name.to_string())
    }
}

/// An address as Java's `getHostAddress()` writes it: IPv4 dotted; IPv6 as eight groups of
/// hexadecimal without leading zeros and without `::` compression.
fn java_address_text(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => v6
            .segments()
            .iter()
            .map(|s| format!("{s:x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_text_as_java_writes_them() {
        assert_eq!(
            java_address_text("10.0.0.5".parse().unwrap()),
            "10.0.0.5".to_string()
        );
        assert_eq!(java_address_text("::1".parse().unwrap()), "0:0:0:0:0:0:0:1");
        assert_eq!(
            java_address_text("fe80::a:00b0:1".parse().unwrap()),
            "fe80:0:0:0:0:a:b0:1"
        );
    }

    #[test]
    fn a_name_that_does_not_resolve_stays_as_written() {
        assert_eq!(
            canonical_host_blocking("No-Such-Host.invalid"),
            "no-such-host.invalid"
        );
    }
}
