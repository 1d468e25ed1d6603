//! [`AddressMap`]: a textual address mapping for
//! [`ClientConfigBuilder::address_mapper`](crate::ClientConfigBuilder::address_mapper). Only
//! server addresses that HBase hands out (meta, master, region servers) are mapped; the
//! ZooKeeper quorum is given to the client directly.

use std::collections::HashMap;
use std::fmt;

use crate::error::{Error, Result};

/// A parsed address mapping, for clusters whose servers register names the client cannot
/// reach (HBase in docker registers container host names; behind NAT, private addresses).
///
/// The text is a comma-separated list of `from=to` pairs, each side `host:port` or `host`:
/// `hbase-rs1:16020=127.0.0.1:16021` maps exactly that server address, and
/// `hbase-rs1=127.0.0.1` maps the host on every port, keeping the port. An exact pair wins
/// over a host-only one; host names compare case-insensitively; addresses the map does not
/// name are used as they are.
///
/// ```
/// use hbase_client::{AddressMap, ClientConfig};
/// let map = AddressMap::parse("hbase-rs1:16020=127.0.0.1:16021, hbase-master=127.0.0.1")?;
/// assert_eq!(map.map("hbase-rs1:16020"), "127.0.0.1:16021");
/// assert_eq!(map.map("HBASE-MASTER:16000"), "127.0.0.1:16000");
/// assert_eq!(map.map("other:16020"), "other:16020");
/// let config = ClientConfig::builder("127.0.0.1:2181")
///     .address_mapper(map.into_mapper())
///     .build()?;
/// # Ok::<(), hbase_client::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressMap {
    /// `host:port` (host lower-cased) → `host:port`.
    exact: HashMap<String, String>,
    /// host (lower-cased) → host.
    hosts: HashMap<String, String>,
}

impl AddressMap {
    /// Parses `from=to[,from=to…]`; whitespace around pairs is ignored, an empty text is an
    /// empty map. A malformed pair, a port that is not a number, a host-only source mapped to a
    /// `host:port`, or a source named twice is an [`Error::InvalidInput`] naming the pair.
    pub fn parse(text: &str) -> Result<AddressMap> {
        let mut map = AddressMap::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = |why: &str| {
                Error::InvalidInput(format!(
                    "address map entry {pair:?}: {why} (expected host[:port]=host[:port])"
                ))
            };
            let (from, to) = pair.split_once('=').ok_or_else(|| bad("no '='"))?;
            let from = Endpoint::parse(from.trim()).map_err(|why| bad(&why))?;
            let to = Endpoint::parse(to.trim()).map_err(|why| bad(&why))?;
            let fresh = match (from.port, to.port) {
                (Some(fp), Some(tp)) => map
                    .exact
                    .insert(
                        format!("{}:{fp}", from.host.to_ascii_lowercase()),
                        format!("{}:{tp}", to.host),
                    )
                    .is_none(),
                (Some(fp), None) => map
                    .exact
                    .insert(
                        format!("{}:{fp}", from.host.to_ascii_lowercase()),
                        format!("{}:{fp}", to.host),
                    )
                    .is_none(),
                (None, None) => map
                    .hosts
                    .insert(from.host.to_ascii_lowercase(), to.host)
                    .is_none(),
                (None, Some(_)) => {
                    return Err(bad(
                        "a host without a port maps every port, so its target cannot name one",
                    ))
                }
            };
            if !fresh {
                return Err(bad("this source is mapped twice"));
            }
        }
        Ok(map)
    }

    /// True when the map names no address.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.hosts.is_empty()
    }

    /// The address to connect to for `addr` (`host:port`, as HBase advertises it).
    pub fn map(&self, addr: &str) -> String {
        let Some((host, port)) = addr.rsplit_once(':') else {
            return addr.to_string();
        };
        let host_key = host.to_ascii_lowercase();
        if let Some(to) = self.exact.get(&format!("{host_key}:{port}")) {
            return to.clone();
        }
        match self.hosts.get(&host_key) {
            Some(to) => format!("{to}:{port}"),
            None => addr.to_string(),
        }
    }

    /// The mapping as a function for
    /// [`ClientConfigBuilder::address_mapper`](crate::ClientConfigBuilder::address_mapper).
    pub fn into_mapper(self) -> impl Fn(&str) -> String + Send + Sync + 'static {
        move |addr: &str| self.map(addr)
    }

    /// The host-only pairs (`from host`, `to host`), in name order: what a name resolver can
    /// express (e.g. a hosts file for another client on the same machine).
    pub fn host_pairs(&self) -> Vec<(String, String)> {
        sorted(&self.hosts)
    }

    /// The exact `host:port` pairs, in name order.
    pub fn exact_pairs(&self) -> Vec<(String, String)> {
        sorted(&self.exact)
    }
}

impl fmt::Display for AddressMap {
    /// The map in the syntax [`AddressMap::parse`] reads (pairs in name order).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self
            .exact_pairs()
            .into_iter()
            .chain(self.host_pairs())
            .map(|(from, to)| format!("{from}={to}"))
            .collect();
        f.write_str(&pairs.join(","))
    }
}

fn sorted(map: &HashMap<String, String>) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> =
        map.iter().map(|(f, t)| (f.clone(), t.clone())).collect();
    pairs.sort();
    pairs
}

/// One side of a pair: a host and maybe a port.
struct Endpoint {
    host: String,
    port: Option<u16>,
}

impl Endpoint {
    fn parse(s: &str) -> std::result::Result<Endpoint, String> {
        let (host, port) = match s.rsplit_once(':') {
            Some((host, port)) => {
                let port: u16 = port
                    .parse()
                    .map_err(|_| format!("port {port:?} is not a number from 0 to 65535"))?;
                (host, Some(port))
            }
            None => (s, None),
        };
        let valid = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !valid {
            return Err(format!(
                "host {host:?} is not a host name or IPv4 address (letters, digits, . - _)"
            ));
        }
        Ok(Endpoint {
            host: host.to_string(),
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_pairs_win_over_host_pairs() {
        let m = AddressMap::parse(" rs1:16020=127.0.0.1:1, rs1=10.0.0.1 ,rs2:7=h2").unwrap();
        assert_eq!(m.map("rs1:16020"), "127.0.0.1:1");
        assert_eq!(m.map("RS1:16020"), "127.0.0.1:1");
        assert_eq!(m.map("rs1:16030"), "10.0.0.1:16030");
        assert_eq!(m.map("rs2:7"), "h2:7");
        assert_eq!(m.map("rs2:8"), "rs2:8");
        assert_eq!(m.map("no-port"), "no-port");
        assert_eq!(
            m.to_string(),
            "rs1:16020=127.0.0.1:1,rs2:7=h2:7,rs1=10.0.0.1"
        );
        assert_eq!(AddressMap::parse(&m.to_string()).unwrap(), m);
        assert_eq!(m.host_pairs(), vec![("rs1".into(), "10.0.0.1".into())]);
    }

    #[test]
    fn empty_text_is_an_empty_map() {
        let m = AddressMap::parse(" , ").unwrap();
        assert!(m.is_empty());
        assert_eq!(m.map("a:1"), "a:1");
    }

    #[test]
    fn bad_pairs_name_themselves() {
        for (text, why) in [
            ("rs1:16020", "no '='"),
            ("rs1:x=h:1", "is not a number"),
            ("rs1:70000=h:1", "is not a number"),
            ("rs1=h:1", "cannot name one"),
            ("=h", "is not a host name"),
            ("a b=h", "is not a host name"),
            ("rs1=h,RS1=g", "mapped twice"),
            ("a:1=h:2,a:1=h:3", "mapped twice"),
        ] {
            let e = AddressMap::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.contains("address map entry"), "{text}: {e}");
        }
    }
}
