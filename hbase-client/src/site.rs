//! `hbase-site.xml`: the client configuration HBase users already have.
//!
//! [`HbaseSite`] holds Hadoop-style properties (parsed from the XML, or set one by one) and
//! turns the client properties among them into a [`ClientConfigBuilder`]. Unknown properties
//! are ignored, as Hadoop's `Configuration` keeps but never reads them; a bad value of a known
//! one is an [`Error::InvalidInput`] naming the property.
//!
//! | property | becomes |
//! |---|---|
//! | `hbase.zookeeper.quorum` | the quorum; hosts without a port get `clientPort`; a trailing `/chroot` is kept |
//! | `hbase.zookeeper.property.clientPort` | the port of hosts without one (default 2181) |
//! | `zookeeper.znode.parent` | [`ClientConfigBuilder::znode_parent`] (default `/hbase`) |
//! | `hbase.rpc.timeout` (ms) | [`ClientConfigBuilder::rpc_timeout`] |
//! | `hbase.client.operation.timeout` (ms) | [`ClientConfigBuilder::operation_timeout`] |
//! | `hbase.client.retries.number` (below 0: no retries, as Java's max(1, retries + 1) attempts) | [`ClientConfigBuilder::retries`] |
//! | `hbase.client.pause` (ms) | [`ClientConfigBuilder::pause`] |
//! | `hbase.client.pause.server.overloaded` (ms; else the deprecated `hbase.client.pause.cqtbe`) | [`ClientConfigBuilder::pause_server_overloaded`] |
//! | `hbase.client.write.buffer` (bytes) | [`ClientConfigBuilder::write_buffer_size`] |
//! | `hbase.client.write.buffer.periodicflush.timeout.ms` (ms; 0: off) | [`ClientConfigBuilder::write_buffer_periodic_flush`] |
//! | `hbase.client.write.buffer.maxmutations` (≤ 0: no limit) | [`ClientConfigBuilder::write_buffer_max_mutations`] |
//! | `hbase.client.max.perserver.tasks` | [`ClientConfigBuilder::max_tasks_per_server`] |
//! | `hbase.client.max.perregion.tasks` | [`ClientConfigBuilder::max_tasks_per_region`] |
//! | `hbase.client.max.perrequest.heapsize` (bytes) | [`ClientConfigBuilder::max_request_size`] |
//! | `hbase.client.max.perrequest.rows` | [`ClientConfigBuilder::max_request_rows`] |
//! | `hbase.client.scanner.caching` | [`ClientConfigBuilder::scanner_caching`] |
//! | `hbase.client.scanner.max.result.size` (bytes) | [`ClientConfigBuilder::scanner_max_result_size`] |
//! | `hbase.client.keyvalue.maxsize` (bytes; ≤ 0: no limit) | [`ClientConfigBuilder::keyvalue_max_size`] |
//! | `hbase.client.locate.prefetch.limit` (≤ 0: 1) | [`ClientConfigBuilder::meta_prefetch`] |
//! | `hbase.client.meta.max.concurrent.locate.per.table` (≤ 0: 1) | [`ClientConfigBuilder::meta_lookups_per_table`] |
//! | `hbase.client.bootstrap.refresh_interval_secs` (s; ≤ 0: 1) | [`ClientConfigBuilder::bootstrap_refresh_interval`] |
//! | `hbase.ipc.client.failed.servers.expiry` (ms; 0, or below 0: off) | [`ClientConfigBuilder::failed_server_expiry`] |
//! | `hbase.ipc.client.socket.timeout.connect` (ms; above 0) | [`ClientConfigBuilder::connect_timeout`] |
//! | `zookeeper.session.timeout` (ms; above 0) | [`ClientConfigBuilder::zk_session_timeout`] |
//! | `hbase.client.rpc.compressor` | [`ClientConfigBuilder::cellblock_compression`] (`SnappyCodec`) |
//! | `hbase.client.registry.impl` | [`ClientConfigBuilder::registry`]: `…ZKConnectionRegistry` (default) → [`Registry::ZooKeeper`]; `…RpcConnectionRegistry` or `…MasterRegistry` → [`Registry::Rpc`] |
//! | `hbase.client.bootstrap.servers` (else `hbase.masters`) | [`ClientConfigBuilder::bootstrap_servers`]: the RPC registry's servers, `host:port,…` |
//! | `hbase.security.authentication` | `kerberos`: [`ClientConfigBuilder::kerberos`] (`simple`, the default: none) |
//! | `hbase.client.keytab.file`, `hbase.client.keytab.principal` | with Kerberos: [`Kerberos::from_keytab`]; without them the ticket cache ([`Kerberos::from_ticket_cache`]) |
//! | `hbase.rpc.protection` | with Kerberos: [`Kerberos::protections`] (`authentication`, `integrity`, `privacy`, a list) |
//! | `hbase.regionserver.kerberos.principal`, `hbase.master.kerberos.principal` | with Kerberos: the server principals (`hbase/_HOST@REALM`) |
//! | `hbase.unsafe.client.kerberos.hostname.disable.reversedns` | `true`: `_HOST` is the advertised name, not its address's canonical name ([`Kerberos::reverse_dns`]) |
//! | `hbase.client.netty.tls.enabled` | `true`: [`ClientConfigBuilder::tls`] |
//! | `hbase.rpc.tls.truststore.location` | with TLS: the CA certificates (PEM), required |
//! | `hbase.rpc.tls.keystore.location` | with TLS: a client certificate and its key in one PEM file (optional) |
//! | `hbase.rpc.tls.truststore.type`, `hbase.rpc.tls.keystore.type` | `PEM` only (JKS and PKCS12 stores are an error: convert them with `keytool`/`openssl`) |
//!
//! Numbers are read as the Java client reads them, each as the Java `int` or `long` it reads
//! it as (Hadoop's `getInt` or `getLong`; `tests/hbase_site.rs` compares the typed values of
//! the files of `tests/hbase_site/configured/` with what hbase-shaded-client resolves from
//! them): spaces, tabs and line breaks around them are trimmed, `0x…` (after an optional `-`)
//! is hexadecimal, a decimal number may have a `+` or `-`, and a value that is not such a
//! number of the type, a blank one too (spaces only; `<value></value>` sets nothing), is an
//! [`Error::InvalidInput`] naming the property (where Java throws a `NumberFormatException`). The bounds are ours: a value Java
//! would take but that breaks a client (a timeout of 0, a write buffer of 0 bytes) is refused,
//! naming the property. The deprecated `hbase.client.pause.cqtbe` counts only when
//! `hbase.client.pause.server.overloaded` is unset, wherever each is in the file, as in Java
//! (HBase reads the two names in turn; no client property is among the names HBase or Hadoop
//! map to others by `Configuration.addDeprecations`). The Java client of 2.6 no longer reads
//! `hbase.regionserver.lease.period` (the old name of `hbase.client.scanner.timeout.period`);
//! this client has no scanner timeout setting and reads neither.
//!
//! Differences we keep, asserted by that test unless said otherwise: a negative
//! `hbase.client.retries.number` is 0 retries here, where Java keeps the negative number (both
//! make one attempt);
//! `hbase.client.write.buffer.periodicflush.timeout.ms` is milliseconds here, as
//! `hbase-default.xml` documents it and Java's blocking `BufferedMutator` reads it, where
//! Java's async client (2.6.4) keeps the number as nanoseconds;
//! `hbase.client.locate.prefetch.limit` of 0 or less is 1 here, where Java keeps the number;
//! a negative `hbase.ipc.client.failed.servers.expiry` is 0 (off) here, where Java keeps it
//! (its failed servers expire at once); `hbase.client.meta.max.concurrent.locate.per.table`
//! of 0 or less is 1 and `hbase.client.bootstrap.refresh_interval_secs` of 0 or less 1 s
//! (not compared with Java); and a `<!DOCTYPE>` that declares entities or attribute lists or
//! names an external DTD is refused here (below), where Hadoop reads it.
//!
//! The file is read as Hadoop's `Configuration` reads it (`tests/hbase_site.rs` runs Hadoop's
//! beside this on the cases of `tests/hbase_site/`): names are trimmed, values are kept as
//! written (the client properties trim them before use), a property without a value is not
//! set, and a property marked `<final>true</final>` keeps its first value (one without a value
//! too: the name is final, with no value). Hadoop does not check the file's structure: it
//! reads `<property>` elements wherever they are, under any root element, and so does this.
//! A `<!DOCTYPE configuration>` is read as there, and so is one whose internal subset
//! (`[…]`) only declares elements or notations, or holds comments. Three kinds
//! are refused, naming the file, where Hadoop reads them. A document type that declares an
//! entity (`<!ENTITY …>`, general or `%` parameter, used or not; one in a comment of such a
//! file is refused too, as the error says): Hadoop expands its entities where they are used
//! (up to 100,000 expansions, and reads the file or URL an external entity names), but this
//! client reads no entity declarations, as the parser it uses bounds their expansion too
//! loosely (a file of 2 KB took it 4 s, one of 5 KB more than ten minutes); write the value
//! itself, or a `${name}` reference to a property. And a document type with an external ID
//! (`SYSTEM "x.dtd"`, `PUBLIC "…" "x.dtd"`): Hadoop reads that DTD (the file is an error when
//! missing, its entities and default attributes apply), but this client reads no file an XML
//! declaration names. An attribute list declaration (`<!ATTLIST …>`) is refused too: Hadoop
//! applies the default values it declares (a default `final` makes every property final),
//! which this client's parser would not, so the file would be misread.
//!
//! XInclude is read as Hadoop reads it (`tests/hbase_site/xinclude/`): `<xi:include
//! href="other.xml"/>` reads that file in place, its properties where the include is. A
//! relative href is relative to the directory of the top-level file, in included files too
//! (Hadoop's rule: not the including file's directory); an absolute path or a `file:` URL is
//! read as it is. An include whose file does not exist reads its `<xi:fallback>` instead, and
//! without one fails the whole file ([`Error::InvalidInput`], naming the href and the file);
//! a file that exists but is not XML fails it, fallback or not. Hadoop's quirks are kept: an
//! include inside the fallback of an include that worked is read anyway. Deliberately not as
//! Hadoop: an include loop is an error naming the files (Hadoop recurses until its stack
//! overflows), `http:`/`https:`/`ftp:`/`jar:` URLs are an error (Hadoop fetches them; this
//! client reads files only), and an href is never looked up on a class path (Hadoop looks
//! there first; HBase puts its configuration directory there, which is the directory used
//! here). [`HbaseSite::parse`] has no file, so a relative href there is an error.
//!
//! Values may refer to other properties (`${name}`) or the environment (`${env.NAME}`, with
//! `${env.NAME:-default}` and `${env.NAME-default}`), expanded as Hadoop expands them (see
//! [`HbaseSite::get`]). Hadoop looks a name up among Java's system properties first
//! (`${user.name}`); there are none here, so such a reference stays as written unless the
//! file defines the name.

use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::rpc::CellBlockCompression;
use crate::runtime::config::{ClientConfig, ClientConfigBuilder, Registry};
use crate::security::{Kerberos, Protection, Tls};

mod xml;

/// The properties this client reads; every other property is ignored.
pub const HONOURED_PROPERTIES: [&str; 41] = [
    "hbase.zookeeper.quorum",
    "hbase.zookeeper.property.clientPort",
    "zookeeper.znode.parent",
    "hbase.rpc.timeout",
    "hbase.client.operation.timeout",
    "hbase.client.retries.number",
    "hbase.client.pause",
    "hbase.client.pause.server.overloaded",
    "hbase.client.pause.cqtbe",
    "hbase.client.write.buffer",
    "hbase.client.write.buffer.periodicflush.timeout.ms",
    "hbase.client.write.buffer.maxmutations",
    "hbase.client.max.perserver.tasks",
    "hbase.client.max.perregion.tasks",
    "hbase.client.max.perrequest.heapsize",
    "hbase.client.max.perrequest.rows",
    "hbase.client.scanner.caching",
    "hbase.client.scanner.max.result.size",
    "hbase.client.keyvalue.maxsize",
    "hbase.client.locate.prefetch.limit",
    "hbase.client.meta.max.concurrent.locate.per.table",
    "hbase.client.bootstrap.refresh_interval_secs",
    "hbase.ipc.client.failed.servers.expiry",
    "hbase.ipc.client.socket.timeout.connect",
    "zookeeper.session.timeout",
    "hbase.client.rpc.compressor",
    "hbase.client.registry.impl",
    "hbase.client.bootstrap.servers",
    "hbase.masters",
    "hbase.security.authentication",
    "hbase.client.keytab.file",
    "hbase.client.keytab.principal",
    "hbase.rpc.protection",
    "hbase.regionserver.kerberos.principal",
    "hbase.master.kerberos.principal",
    "hbase.unsafe.client.kerberos.hostname.disable.reversedns",
    "hbase.client.netty.tls.enabled",
    "hbase.rpc.tls.truststore.location",
    "hbase.rpc.tls.keystore.location",
    "hbase.rpc.tls.truststore.type",
    "hbase.rpc.tls.keystore.type",
];

/// Hadoop-style configuration properties, as read from `hbase-site.xml`. Later values of a
/// name replace earlier ones.
#[derive(Debug, Clone, Default)]
pub struct HbaseSite {
    properties: Vec<(String, String)>,
}

fn invalid(msg: String) -> Error {
    Error::InvalidInput(msg)
}

/// The substitutions one value's expansion may make; Hadoop (`MAX_SUBST`) refuses a value
/// that has not expanded fully after them.
const MAX_SUBSTITUTIONS: usize = 20;

/// Where the first reference of `eval` is: the bounds of `${var}`, where `var` is not empty
/// and holds no space, `$` or `}` (Hadoop's rule: a `{` is part of a name). A `${` whose name
/// runs into a space or `$`, or an empty `${}`, is not a reference; the search goes on after
/// it.
fn find_reference(eval: &str) -> Option<(usize, usize)> {
    let bytes = eval.as_bytes();
    let mut from = 0;
    while let Some(at) = eval[from..].find("${").map(|i| from + i) {
        let name_start = at + 2;
        let mut i = name_start;
        while i < bytes.len() && !matches!(bytes[i], b'}' | b' ' | b'$') {
            i += 1;
        }
        match bytes.get(i) {
            Some(b'}') if i > name_start => return Some((at, i + 1)),
            // A `$` may start the next reference itself.
            Some(b'$') => from = i,
            Some(_) => from = i + 1,
            None => return None,
        }
    }
    None
}

/// `${env.NAME}`, `${env.NAME:-default}` (the default when NAME is unset or empty) or
/// `${env.NAME-default}` (when unset), from the process's environment. As in Hadoop, the
/// first `:-` or `-` from the left ends the name (`A-B:-C` is `A` with the default `B:-C`).
fn env_with_default(spec: &str) -> Option<String> {
    let Some(at) = spec.find('-') else {
        return std::env::var(spec).ok();
    };
    if at > 0 && spec.as_bytes()[at - 1] == b':' {
        let (name, default) = (&spec[..at - 1], &spec[at + 1..]);
        return Some(
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string()),
        );
    }
    let (name, default) = (&spec[..at], &spec[at + 1..]);
    Some(std::env::var(name).unwrap_or_else(|_| default.to_string()))
}

/// The Java type the Java client reads a number as: an `int` (Hadoop's `getInt`) or a `long`
/// (its `getLong`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JavaNumber {
    Int,
    Long,
}

impl JavaNumber {
    fn type_name(self) -> &'static str {
        match self {
            JavaNumber::Int => "int",
            JavaNumber::Long => "long",
        }
    }

    fn min(self) -> i64 {
        match self {
            JavaNumber::Int => i32::MIN.into(),
            JavaNumber::Long => i64::MIN,
        }
    }

    fn max(self) -> i64 {
        match self {
            JavaNumber::Int => i32::MAX.into(),
            JavaNumber::Long => i64::MAX,
        }
    }
}

/// `value` as Hadoop's `Configuration.getInt` / `getLong` reads it (`tests/hbase_site.rs`
/// runs the Java client beside this): characters up to U+0020 trimmed at both ends, as Java's
/// `String.trim` (spaces, tabs, line breaks and other control characters), then
/// `0x` or `0X` after an optional `-` is hexadecimal (`-0x10` is -16; no `+` before the
/// `0x`), else a decimal number with an optional `+` or `-`; it must fit the Java type.
/// `None` where Java throws a `NumberFormatException`, an empty value included. The digits
/// are Java's: those of every script in the Basic Multilingual Plane (`٣٠`, `３０`), and for
/// hexadecimal the fullwidth letters too (see [`java_digit`]).
fn java_integer(value: &str, java: JavaNumber) -> Option<i64> {
    let trimmed = value.trim_matches(|c: char| c <= ' ');
    let (negative, unsigned) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed),
    };
    let (digits, radix) = match unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        Some(hex) if negative => (format!("-{hex}"), 16),
        Some(hex) => (hex.to_string(), 16),
        None => (trimmed.to_string(), 10),
    };
    java_parse(&digits, radix)
        .and_then(|n| i64::try_from(n).ok())
        .filter(|n| (java.min()..=java.max()).contains(n))
}

/// `s` as Java's `Long.parseLong(s, radix)` reads it, unbounded up to a little over the range
/// of a `long` (the caller bounds it): an optional ASCII `+` or `-`, then at least one digit.
fn java_parse(s: &str, radix: u32) -> Option<i128> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: i128 = 0;
    for c in digits.chars() {
        n = n * i128::from(radix) + i128::from(java_digit(c, radix)?);
        if n > i128::from(u64::MAX) {
            // Out of every Java type's range already; more digits only add to it.
            return None;
        }
    }
    Some(if negative { -n } else { n })
}

/// The zeros of the runs of decimal digits (Unicode's category Nd, ten code points from zero
/// to nine each) that Java 17's `Character.digit` reads in the Basic Multilingual Plane
/// (Unicode 13.0). Java's integer parsers take a string's UTF-16 units one at a time, so the
/// digits beyond that plane (such as the mathematical ones, U+1D7CE on) are two surrogates to
/// them, no digit. `tests/hbase_site.rs` compares every character with Java's parser. Later
/// Java versions know more scripts; the client is compared with Java 17, the newest HBase 2.6
/// supports.
const DECIMAL_DIGIT_ZEROS: [u32; 37] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
    0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
];

/// `c`'s value as a digit of `radix` (10 or 16), as Java's `Character.digit` reads it: a
/// decimal digit of any script, and for hexadecimal a letter `a`–`f` or `A`–`F`, ASCII or
/// fullwidth.
fn java_digit(c: char, radix: u32) -> Option<u32> {
    let cp = u32::from(c);
    let decimal = match DECIMAL_DIGIT_ZEROS.binary_search(&cp) {
        Ok(_) => Some(0),
        Err(0) => None,
        Err(i) => Some(cp - DECIMAL_DIGIT_ZEROS[i - 1]).filter(|d| *d < 10),
    };
    if decimal.is_some() || radix != 16 {
        return decimal;
    }
    let letter = match c {
        'a'..='f' => cp - u32::from('a'),
        'A'..='F' => cp - u32::from('A'),
        '\u{FF41}'..='\u{FF46}' => cp - 0xFF41,
        '\u{FF21}'..='\u{FF26}' => cp - 0xFF21,
        _ => return None,
    };
    Some(10 + letter)
}

impl HbaseSite {
    /// Reads `dir_or_file`: a configuration directory (its `hbase-site.xml`) or the file, and
    /// the files it includes (XInclude, as Hadoop reads it: see the module's documentation).
    /// A file that cannot be read, is not XML, or has an include that fails without a fallback
    /// or that loops is an [`Error::InvalidInput`] naming the file.
    pub fn load(dir_or_file: impl AsRef<Path>) -> Result<HbaseSite> {
        let path = dir_or_file.as_ref();
        let file = if path.is_dir() {
            path.join("hbase-site.xml")
        } else {
            path.to_path_buf()
        };
        Ok(HbaseSite::from_definitions(xml::read_file(&file)?))
    }

    /// The `hbase-site.xml` of `$HBASE_CONF_DIR`, when that is set (and holds one).
    pub fn from_env() -> Result<Option<HbaseSite>> {
        match std::env::var_os("HBASE_CONF_DIR") {
            Some(dir) if Path::new(&dir).join("hbase-site.xml").is_file() => {
                HbaseSite::load(Path::new(&dir)).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Parses the text of an `hbase-site.xml` (`<configuration><property><name>…</name>
    /// <value>…</value></property>…`). Text has no location, so an XInclude with a relative
    /// href is an [`Error::InvalidInput`] saying so (read the file with [`HbaseSite::load`]);
    /// one with an absolute path or a `file:` URL is read.
    pub fn parse(xml: &str) -> Result<HbaseSite> {
        Ok(HbaseSite::from_definitions(xml::read_text(xml)?))
    }

    /// The properties of the definitions, in order, as Hadoop's `Configuration` loads them: a
    /// definition marked final keeps its name's value from then on (one without a value too:
    /// it sets nothing, but the name is final), and one without a value sets nothing.
    fn from_definitions(definitions: Vec<xml::Definition>) -> HbaseSite {
        let mut site = HbaseSite::default();
        let mut finals: Vec<String> = Vec::new();
        for d in definitions {
            if let Some(value) = d.value {
                if !finals.contains(&d.name) {
                    site.set(d.name.clone(), value);
                } else if site.raw(&d.name) != Some(value.as_str()) {
                    tracing::warn!(property = %d.name, "hbase-site.xml redefines a final property; the first value is kept");
                }
            }
            if d.is_final && !finals.contains(&d.name) {
                finals.push(d.name);
            }
        }
        site
    }

    /// Sets `name` to `value`, replacing any earlier value.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let name = name.into();
        let value = value.into();
        match self.properties.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = value,
            None => self.properties.push((name, value)),
        }
    }

    /// The raw value of `name` (trimmed, as Hadoop trims the names it is asked for).
    pub fn raw(&self, name: &str) -> Option<&str> {
        let name = name.trim();
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `name` with `${name}` and `${env.NAME}` references expanded as Hadoop's
    /// `Configuration` expands them (`tests/hbase_site.rs` runs Hadoop's beside this): left to
    /// right; `${env.NAME:-default}` and `${env.NAME-default}` as in a shell (the first for
    /// unset or empty, the second for unset), and an unset `${env.NAME}` falls back to a
    /// property named `env.NAME`; an unbound reference stops the expansion (it and everything
    /// after it stay as written), and a value that refers to itself is left as written. A
    /// value that needs 20 substitutions or more is refused ([`Error::InvalidInput`]), as
    /// Hadoop refuses it ("Variable substitution depth too large"): references that refer to
    /// each other in a loop end there.
    pub fn get(&self, name: &str) -> Result<Option<String>> {
        self.raw(name).map(|v| self.expand(name, v)).transpose()
    }

    fn expand(&self, name: &str, value: &str) -> Result<String> {
        let mut eval = value.to_string();
        for _ in 0..MAX_SUBSTITUTIONS {
            let Some((start, end)) = find_reference(&eval) else {
                return Ok(eval);
            };
            // `eval[start..end]` is `${var}`.
            let reference = &eval[start..end];
            let var = &reference[2..reference.len() - 1];
            let resolved = var
                .strip_prefix("env.")
                .filter(|v| !v.is_empty())
                .and_then(env_with_default)
                .or_else(|| self.raw(var).map(str::to_string));
            let Some(resolved) = resolved else {
                return Ok(eval);
            };
            if resolved.contains(reference) {
                return Ok(value.to_string());
            }
            eval = format!("{}{resolved}{}", &eval[..start], &eval[end..]);
        }
        Err(invalid(format!(
            "{}={value:?}: variable substitution depth too large (Hadoop's limit: {MAX_SUBSTITUTIONS} substitutions)",
            name.trim()
        )))
    }

    /// True for the properties this client reads.
    pub fn is_honoured(name: &str) -> bool {
        HONOURED_PROPERTIES.contains(&name)
    }

    /// The value of `name` as the Java client reads it with Hadoop's `getInt` (`java` is
    /// [`JavaNumber::Int`]) or `getLong` ([`JavaNumber::Long`]): see [`java_integer`]. `None` when unset; a
    /// value that is no such number (an empty one too) is an [`Error::InvalidInput`] naming
    /// the property, where Java throws a `NumberFormatException`.
    fn integer(&self, name: &str, java: JavaNumber) -> Result<Option<i64>> {
        let Some(v) = self.get(name)? else {
            return Ok(None);
        };
        match java_integer(&v, java) {
            Some(n) => Ok(Some(n)),
            None => Err(invalid(format!(
                "{name}={v:?} is not a number (the Java client reads it as a Java {}: decimal \
                 with an optional + or -, or 0x hexadecimal with an optional -, from {} to {})",
                java.type_name(),
                java.min(),
                java.max()
            ))),
        }
    }

    /// [`integer`](Self::integer), refused below `least` (`what` says what the value is).
    fn at_least(
        &self,
        name: &str,
        java: JavaNumber,
        least: i64,
        what: &str,
    ) -> Result<Option<i64>> {
        match self.integer(name, java)? {
            Some(n) if n < least => Err(invalid(format!("{name}={n} is not {what}"))),
            other => Ok(other),
        }
    }

    /// Milliseconds, read as [`integer`](Self::integer) reads them; 0 too when `allow_zero`.
    fn millis(&self, name: &str, java: JavaNumber, allow_zero: bool) -> Result<Option<Duration>> {
        let (least, what) = if allow_zero {
            (0, "a number of milliseconds (0 or more)")
        } else {
            (1, "a number of milliseconds above 0")
        };
        Ok(self
            .at_least(name, java, least, what)?
            .map(|n| Duration::from_millis(n as u64)))
    }

    /// The ZooKeeper connect string: `host:port,…[/chroot]`.
    pub fn zk_quorum(&self) -> Result<String> {
        let port_name = "hbase.zookeeper.property.clientPort";
        let port = match self.integer(port_name, JavaNumber::Int)? {
            Some(p) if (1..=65535).contains(&p) => p as u16,
            Some(p) => {
                return Err(invalid(format!(
                    "{port_name}={p} is not a port number (1 to 65535)"
                )))
            }
            None => 2181,
        };
        let quorum = self
            .get("hbase.zookeeper.quorum")?
            .unwrap_or_else(|| "127.0.0.1".into());
        let quorum = quorum.trim();
        // A chroot applies to the whole connect string: `zk1,zk2:2182/hbase-root`.
        let (hosts, chroot) = match quorum.find('/') {
            Some(i) => (&quorum[..i], &quorum[i..]),
            None => (quorum, ""),
        };
        let mut servers = Vec::new();
        for h in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            let server = match h.rsplit_once(':') {
                Some((host, p)) => {
                    if host.is_empty() || p.parse::<u16>().map_or(true, |p| p == 0) {
                        return Err(invalid(format!(
                            "hbase.zookeeper.quorum: {h:?} is not host or host:port"
                        )));
                    }
                    h.to_string()
                }
                None => format!("{h}:{port}"),
            };
            servers.push(server);
        }
        if servers.is_empty() {
            return Err(invalid(format!(
                "hbase.zookeeper.quorum={quorum:?} names no ZooKeeper server"
            )));
        }
        if chroot.len() > 1 && chroot.ends_with('/') {
            return Err(invalid(format!(
                "hbase.zookeeper.quorum: the chroot {chroot:?} must not end with '/'"
            )));
        }
        Ok(format!("{}{chroot}", servers.join(",")))
    }

    /// The client configuration of these properties (defaults for those not set).
    pub fn to_builder(&self) -> Result<ClientConfigBuilder> {
        let mut b = ClientConfig::builder(self.zk_quorum()?);
        if let Some(parent) = self.get("zookeeper.znode.parent")? {
            let parent = parent.trim();
            if !parent.starts_with('/') {
                return Err(invalid(format!(
                    "zookeeper.znode.parent={parent:?} must start with '/'"
                )));
            }
            b = b.znode_parent(parent);
        }
        // Each as the Java client reads it (`JavaNumber::Int`: Hadoop's getInt, `JavaNumber::Long`: its
        // getLong); the bounds are ours, where Java would take a value that breaks a client.
        if let Some(t) = self.millis("hbase.rpc.timeout", JavaNumber::Int, false)? {
            b = b.rpc_timeout(t);
        }
        if let Some(t) = self.millis("hbase.client.operation.timeout", JavaNumber::Int, false)? {
            b = b.operation_timeout(t);
        }
        if let Some(n) = self.integer("hbase.client.retries.number", JavaNumber::Int)? {
            // Java's callers make max(1, retries + 1) attempts: a negative count is no retries.
            b = b.retries(n.max(0) as u32);
        }
        if let Some(t) = self.millis("hbase.client.pause", JavaNumber::Long, true)? {
            b = b.pause(t);
        }
        // As Java's ConnectionConfiguration: the new name, else the one deprecated in 2.5
        // (wherever each is in the file: the names are read in this order, not merged).
        let overloaded = match self.millis(
            "hbase.client.pause.server.overloaded",
            JavaNumber::Long,
            true,
        )? {
            Some(t) => Some(t),
            None => self.millis("hbase.client.pause.cqtbe", JavaNumber::Long, true)?,
        };
        if let Some(t) = overloaded {
            b = b.pause_server_overloaded(t);
        }
        let positive = "a number above 0";
        if let Some(n) =
            self.at_least("hbase.client.write.buffer", JavaNumber::Long, 1, positive)?
        {
            b = b.write_buffer_size(usize::try_from(n).unwrap_or(usize::MAX));
        }
        let flush = "hbase.client.write.buffer.periodicflush.timeout.ms";
        if let Some(t) = self.millis(flush, JavaNumber::Long, true)? {
            b = b.write_buffer_periodic_flush(Some(t));
        }
        if let Some(n) = self.integer("hbase.client.write.buffer.maxmutations", JavaNumber::Int)? {
            // HBase: -1 (or any value of 0 or less) means no count limit.
            b = b.write_buffer_max_mutations((n > 0).then_some(n as usize));
        }
        for (name, java, set) in [
            (
                "hbase.client.max.perserver.tasks",
                JavaNumber::Int,
                ClientConfigBuilder::max_tasks_per_server as fn(_, _) -> _,
            ),
            (
                "hbase.client.max.perregion.tasks",
                JavaNumber::Int,
                ClientConfigBuilder::max_tasks_per_region,
            ),
            (
                "hbase.client.max.perrequest.heapsize",
                JavaNumber::Long,
                ClientConfigBuilder::max_request_size,
            ),
            (
                "hbase.client.max.perrequest.rows",
                JavaNumber::Long,
                ClientConfigBuilder::max_request_rows,
            ),
        ] {
            // Java's SimpleRequestController refuses 0 and below too.
            if let Some(n) = self.at_least(name, java, 1, positive)? {
                b = set(b, usize::try_from(n).unwrap_or(usize::MAX));
            }
        }
        let rows = "a number of rows above 0";
        if let Some(n) = self.at_least("hbase.client.scanner.caching", JavaNumber::Int, 1, rows)? {
            b = b.scanner_caching(n as u32);
        }
        let size = "hbase.client.scanner.max.result.size";
        if let Some(n) = self.at_least(size, JavaNumber::Long, 1, positive)? {
            b = b.scanner_max_result_size(n as u64);
        }
        if let Some(n) = self.integer("hbase.client.keyvalue.maxsize", JavaNumber::Int)? {
            // HBase: a value of 0 or less turns the client-side check off.
            b = b.keyvalue_max_size(if n <= 0 { usize::MAX } else { n as usize });
        }
        // Java takes any int for these two: 0 or less prefetches no more than the region
        // asked for (1 here; the builder clamps it), and a negative expiry makes Java's failed
        // servers expire at once (0 here: off).
        let prefetch = "hbase.client.locate.prefetch.limit";
        if let Some(n) = self.integer(prefetch, JavaNumber::Int)? {
            b = b.meta_prefetch(n.max(1) as u32);
        }
        let expiry = "hbase.ipc.client.failed.servers.expiry";
        if let Some(n) = self.integer(expiry, JavaNumber::Int)? {
            b = b.failed_server_expiry(Duration::from_millis(n.max(0) as u64));
        }
        // 0 or less: at least one lookup, and a refresh at most every second (the builder
        // clamps both), where Java keeps the number.
        let lookups = "hbase.client.meta.max.concurrent.locate.per.table";
        if let Some(n) = self.integer(lookups, JavaNumber::Int)? {
            b = b.meta_lookups_per_table(n.max(1) as usize);
        }
        let refresh = "hbase.client.bootstrap.refresh_interval_secs";
        if let Some(n) = self.integer(refresh, JavaNumber::Long)? {
            b = b.bootstrap_refresh_interval(Duration::from_secs(n.max(1) as u64));
        }
        // Java passes these on as they are; here a connect and a ZooKeeper session each need
        // a timeout.
        for (name, what, set) in [
            (
                "hbase.ipc.client.socket.timeout.connect",
                "connect",
                ClientConfigBuilder::connect_timeout as fn(_, _) -> _,
            ),
            (
                "zookeeper.session.timeout",
                "session",
                ClientConfigBuilder::zk_session_timeout,
            ),
        ] {
            match self.integer(name, JavaNumber::Int)? {
                Some(n) if n <= 0 => {
                    return Err(invalid(format!(
                        "{name}={n}: this client needs a {what} timeout, a number of \
                         milliseconds above 0 (it has no setting for none)"
                    )))
                }
                Some(n) => b = set(b, Duration::from_millis(n as u64)),
                None => {}
            }
        }
        if let Some(codec) = self.get("hbase.client.rpc.compressor")? {
            let codec = codec.trim();
            let compression = match codec.rsplit('.').next().unwrap_or("") {
                "" => CellBlockCompression::None,
                "SnappyCodec" => CellBlockCompression::Snappy,
                _ => {
                    return Err(invalid(format!(
                        "hbase.client.rpc.compressor={codec:?} is not supported (org.apache.hadoop.io.compress.SnappyCodec, or empty for none)"
                    )))
                }
            };
            b = b.cellblock_compression(compression);
        }
        let servers = match self.get("hbase.client.bootstrap.servers")? {
            Some(list) => Some(list),
            None => self.get("hbase.masters")?,
        }
        .filter(|list| !list.trim().is_empty());
        let servers_given = servers.clone();
        if let Some(list) = servers {
            let mut parsed = Vec::new();
            for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let ok = s
                    .rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
                let name = if self.raw("hbase.client.bootstrap.servers").is_some() {
                    "hbase.client.bootstrap.servers"
                } else {
                    "hbase.masters"
                };
                if !ok {
                    return Err(invalid(format!("{name}: {s:?} is not host:port")));
                }
                parsed.push(s.to_string());
            }
            b = b.bootstrap_servers(parsed);
        }
        if let Some(kerberos) = self.kerberos()? {
            b = b.kerberos(kerberos);
        }
        if let Some(tls) = self.tls()? {
            b = b.tls(tls);
        }
        if let Some(registry) = self.get("hbase.client.registry.impl")? {
            let registry = registry.trim();
            // Java names a class; its simple name is enough here.
            let kind = match registry.rsplit('.').next().unwrap_or("") {
                "" => Registry::ZooKeeper,
                "ZKConnectionRegistry" | "ZooKeeperConnectionRegistry" => Registry::ZooKeeper,
                "RpcConnectionRegistry" | "MasterRegistry" => Registry::Rpc,
                _ => {
                    return Err(invalid(format!(
                        "hbase.client.registry.impl={registry} is not a registry this client has (org.apache.hadoop.hbase.client.ZKConnectionRegistry, RpcConnectionRegistry or MasterRegistry)"
                    )))
                }
            };
            if kind == Registry::Rpc && servers_given.is_none() {
                return Err(invalid(format!(
                    "hbase.client.registry.impl={registry} needs hbase.client.bootstrap.servers (or hbase.masters): host:port,host:port"
                )));
            }
            b = b.registry(kind);
        }
        Ok(b)
    }
}

impl HbaseSite {
    /// The Kerberos settings, when `hbase.security.authentication` is `kerberos`.
    fn kerberos(&self) -> Result<Option<Kerberos>> {
        let auth = self
            .get("hbase.security.authentication")?
            .map(|a| a.trim().to_ascii_lowercase());
        match auth.as_deref() {
            None | Some("") | Some("simple") => return Ok(None),
            Some("kerberos") => {}
            Some(other) => {
                return Err(invalid(format!(
                    "hbase.security.authentication={other:?} is not simple or kerberos"
                )))
            }
        }
        let keytab = self.get("hbase.client.keytab.file")?;
        let principal = self.get("hbase.client.keytab.principal")?;
        let mut k = match (principal, keytab) {
            (Some(principal), Some(keytab)) => {
                Kerberos::from_keytab(principal.trim(), keytab.trim())
            }
            (None, None) => Kerberos::from_ticket_cache(None),
            (Some(_), None) | (None, Some(_)) => {
                return Err(invalid(
                    "a keytab login needs both hbase.client.keytab.file and hbase.client.keytab.principal".into(),
                ))
            }
        };
        if let Some(levels) = self.get("hbase.rpc.protection")? {
            let levels = Protection::parse_list(&levels)
                .map_err(|e| invalid(format!("hbase.rpc.protection: {e}")))?;
            k = k.protections(&levels);
        }
        if let Some(rs) = self.get("hbase.regionserver.kerberos.principal")? {
            k = k.regionserver_principal(rs.trim());
        }
        if let Some(master) = self.get("hbase.master.kerberos.principal")? {
            k = k.master_principal(master.trim());
        }
        let no_reverse_dns = "hbase.unsafe.client.kerberos.hostname.disable.reversedns";
        match self
            .get(no_reverse_dns)?
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("") | Some("false") => {}
            Some("true") => k = k.reverse_dns(false),
            Some(v) => {
                return Err(invalid(format!(
                    "{no_reverse_dns}={v:?} is not true or false"
                )))
            }
        }
        Ok(Some(k))
    }

    /// The TLS settings, when `hbase.client.netty.tls.enabled` is `true`.
    fn tls(&self) -> Result<Option<Tls>> {
        match self
            .get("hbase.client.netty.tls.enabled")?
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => return Ok(None),
            Some(v) if v.is_empty() || v == "false" => return Ok(None),
            Some(v) if v == "true" => {}
            Some(v) => {
                return Err(invalid(format!(
                    "hbase.client.netty.tls.enabled={v:?} is not true or false"
                )))
            }
        }
        for store in ["truststore", "keystore"] {
            let name = format!("hbase.rpc.tls.{store}.type");
            match self.get(&name)? {
                Some(t) if !t.trim().is_empty() && !t.trim().eq_ignore_ascii_case("pem") => {
                    return Err(invalid(format!(
                        "{name}={t}: this client reads PEM files only (convert the store to PEM)"
                    )))
                }
                _ => {}
            }
        }
        let ca = self
            .get("hbase.rpc.tls.truststore.location")?
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                invalid(
                    "TLS (hbase.client.netty.tls.enabled=true) needs hbase.rpc.tls.truststore.location (a PEM file of CA certificates)".into(),
                )
            })?;
        let mut tls = Tls::new(ca.trim());
        if let Some(keystore) = self
            .get("hbase.rpc.tls.keystore.location")?
            .filter(|v| !v.trim().is_empty())
        {
            // HBase's PEM keystore: the certificate chain and its key in one file.
            tls = tls.client_certificate(keystore.trim(), keystore.trim());
        }
        Ok(Some(tls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(pairs: &[(&str, &str)]) -> HbaseSite {
        let mut s = HbaseSite::default();
        for (k, v) in pairs {
            s.set(*k, *v);
        }
        s
    }

    fn config(pairs: &[(&str, &str)]) -> Result<ClientConfig> {
        site(pairs).to_builder()?.build()
    }

    fn err(pairs: &[(&str, &str)]) -> String {
        match config(pairs) {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("{pairs:?}: expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn security_properties() {
        let c = config(&[
            ("hbase.security.authentication", "Kerberos"),
            ("hbase.client.keytab.file", "/k"),
            ("hbase.client.keytab.principal", "app@R"),
            ("hbase.rpc.protection", "privacy,integrity"),
            ("hbase.regionserver.kerberos.principal", "hbase/_HOST@R"),
            ("hbase.master.kerberos.principal", "hm/_HOST@R"),
            ("hbase.client.netty.tls.enabled", "true"),
            ("hbase.rpc.tls.truststore.type", "PEM"),
            ("hbase.rpc.tls.truststore.location", "/ca.pem"),
            ("hbase.rpc.tls.keystore.location", "/client.pem"),
        ])
        .unwrap();
        let want = Kerberos::from_keytab("app@R", "/k")
            .protections(&[Protection::Privacy, Protection::Integrity])
            .regionserver_principal("hbase/_HOST@R")
            .master_principal("hm/_HOST@R");
        assert_eq!(c.kerberos, Some(want));
        assert_eq!(
            c.tls,
            Some(Tls::new("/ca.pem").client_certificate("/client.pem", "/client.pem"))
        );
        // Kerberos without a keytab: the ticket cache; simple: none
        let c = config(&[("hbase.security.authentication", "kerberos")]).unwrap();
        assert_eq!(c.kerberos, Some(Kerberos::from_ticket_cache(None)));
        let c = config(&[
            ("hbase.security.authentication", "simple"),
            ("hbase.client.keytab.file", "/k"),
        ])
        .unwrap();
        assert_eq!((c.kerberos, c.tls), (None, None));
        // Java's switch for the advertised name in `_HOST`
        let c = config(&[
            ("hbase.security.authentication", "kerberos"),
            (
                "hbase.unsafe.client.kerberos.hostname.disable.reversedns",
                " TRUE ",
            ),
        ])
        .unwrap();
        assert_eq!(
            c.kerberos,
            Some(Kerberos::from_ticket_cache(None).reverse_dns(false))
        );
        for (bad, says) in [
            (
                &[("hbase.security.authentication", "token")][..],
                "hbase.security.authentication",
            ),
            (
                &[
                    ("hbase.security.authentication", "kerberos"),
                    ("hbase.client.keytab.file", "/k"),
                ][..],
                "hbase.client.keytab.principal",
            ),
            (
                &[
                    ("hbase.security.authentication", "kerberos"),
                    ("hbase.rpc.protection", "secret"),
                ][..],
                "hbase.rpc.protection",
            ),
            (
                &[
                    ("hbase.security.authentication", "kerberos"),
                    (
                        "hbase.unsafe.client.kerberos.hostname.disable.reversedns",
                        "yes",
                    ),
                ][..],
                "hbase.unsafe.client.kerberos.hostname.disable.reversedns",
            ),
            (
                &[("hbase.client.netty.tls.enabled", "true")][..],
                "hbase.rpc.tls.truststore.location",
            ),
            (
                &[
                    ("hbase.client.netty.tls.enabled", "true"),
                    ("hbase.rpc.tls.truststore.location", "/t.jks"),
                    ("hbase.rpc.tls.truststore.type", "JKS"),
                ][..],
                "hbase.rpc.tls.truststore.type",
            ),
        ] {
            let m = err(bad);
            assert!(m.contains(says), "{bad:?}: {m}");
        }
    }

    #[test]
    fn quorum_forms() {
        let q = |pairs: &[(&str, &str)]| site(pairs).zk_quorum().unwrap();
        assert_eq!(q(&[]), "127.0.0.1:2181");
        assert_eq!(
            q(&[("hbase.zookeeper.quorum", "zk1,zk2")]),
            "zk1:2181,zk2:2181"
        );
        assert_eq!(
            q(&[
                ("hbase.zookeeper.quorum", "zk1, zk2:2182 ,zk3"),
                ("hbase.zookeeper.property.clientPort", "2222")
            ]),
            "zk1:2222,zk2:2182,zk3:2222"
        );
        assert_eq!(
            q(&[("hbase.zookeeper.quorum", "zk1:2181,zk2:2181/hbase-root")]),
            "zk1:2181,zk2:2181/hbase-root"
        );
        assert_eq!(
            q(&[("hbase.zookeeper.quorum", "zk1,zk2/chroot/a")]),
            "zk1:2181,zk2:2181/chroot/a"
        );
    }

    #[test]
    fn parses_the_xml_and_expands_references() {
        let xml = r#"<?xml version="1.0"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<configuration>
  <!-- a comment -->
  <property><name>hbase.zookeeper.quorum</name><value>zk1,zk2</value></property>
  <property>
    <name>hbase.zookeeper.property.clientPort</name>
    <value> 2281 </value>
    <final>true</final>
    <description>the port</description>
  </property>
  <property><name>zookeeper.znode.parent</name><value>/hbase-unsecure</value></property>
  <property><name>hbase.rpc.timeout</name><value>${my.timeout}</value></property>
  <property><name>my.timeout</name><value>30000</value></property>
  <property><name>hbase.client.operation.timeout</name><value>90000</value></property>
  <property><name>hbase.client.retries.number</name><value>7</value></property>
  <property><name>hbase.client.pause</name><value>250</value></property>
  <property><name>hbase.client.write.buffer</name><value>4194304</value></property>
  <property><name>hbase.client.scanner.caching</name><value>500</value></property>
  <property><name>hbase.client.write.buffer.periodicflush.timeout.ms</name><value>250</value></property>
  <property><name>hbase.client.write.buffer.maxmutations</name><value>300</value></property>
  <property><name>hbase.client.max.perserver.tasks</name><value>3</value></property>
  <property><name>hbase.client.max.perregion.tasks</name><value>2</value></property>
  <property><name>hbase.client.max.perrequest.heapsize</name><value>1048576</value></property>
  <property><name>hbase.client.max.perrequest.rows</name><value>500</value></property>
  <property><name>hbase.client.scanner.max.result.size</name><value>1048576</value></property>
  <property><name>hbase.client.keyvalue.maxsize</name><value>-1</value></property>
  <property><name>hbase.client.rpc.compressor</name><value>org.apache.hadoop.io.compress.SnappyCodec</value></property>
  <property><name>hbase.masters</name><value>m1:16000,m2:16000</value></property>
  <property><name>some.unknown.property</name><value>whatever &amp; more</value></property>
  <property><value>no name: skipped</value></property>
</configuration>"#;
        let c = HbaseSite::parse(xml)
            .unwrap()
            .to_builder()
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(c.zk_quorum(), "zk1:2281,zk2:2281");
        assert_eq!(c.znode_parent(), "/hbase-unsecure");
        assert_eq!(c.rpc_timeout(), Duration::from_secs(30));
        assert_eq!(c.operation_timeout(), Duration::from_secs(90));
        assert_eq!(c.retries(), 7);
        assert_eq!(c.pause(), Duration::from_millis(250));
        assert_eq!(c.write_buffer_size(), 4 << 20);
        assert_eq!(c.scanner_caching(), 500);
        assert_eq!(
            c.write_buffer_periodic_flush(),
            Some(Duration::from_millis(250))
        );
        assert_eq!(c.write_buffer_max_mutations(), Some(300));
        assert_eq!(c.max_tasks_per_server(), 3);
        assert_eq!(c.max_tasks_per_region(), 2);
        assert_eq!(c.max_request_size(), 1 << 20);
        assert_eq!(c.max_request_rows(), 500);
        assert_eq!(c.scanner_max_result_size(), 1 << 20);
        assert_eq!(c.keyvalue_max_size(), usize::MAX);
        assert_eq!(c.cellblock_compression(), CellBlockCompression::Snappy);
        assert_eq!(c.bootstrap_servers(), ["m1:16000", "m2:16000"]);
    }

    /// As Java's ConnectionConfiguration: the pause itself when unset, the deprecated name
    /// when the new one is unset, and never below the pause.
    #[test]
    fn pause_for_an_overloaded_server() {
        let overloaded = |pairs: &[(&str, &str)]| {
            let c = site(pairs).to_builder().unwrap().build().unwrap();
            c.pause_server_overloaded().as_millis()
        };
        assert_eq!(overloaded(&[("hbase.client.pause", "250")]), 250);
        assert_eq!(
            overloaded(&[("hbase.client.pause.server.overloaded", "700")]),
            700
        );
        assert_eq!(overloaded(&[("hbase.client.pause.cqtbe", "600")]), 600);
        let below = [
            ("hbase.client.pause", "300"),
            ("hbase.client.pause.server.overloaded", "200"),
        ];
        assert_eq!(overloaded(&below), 300);
    }

    #[test]
    fn bad_values_name_the_property() {
        for (pairs, says) in [
            (vec![("hbase.rpc.timeout", "soon")], "hbase.rpc.timeout"),
            (vec![("hbase.rpc.timeout", "0")], "hbase.rpc.timeout=0"),
            (
                vec![("hbase.client.operation.timeout", "-5")],
                "hbase.client.operation.timeout",
            ),
            (
                vec![("hbase.client.retries.number", "2147483648")],
                "hbase.client.retries.number=\"2147483648\" is not a number",
            ),
            (
                vec![("hbase.client.write.buffer", "  ")],
                "hbase.client.write.buffer=\"  \" is not a number",
            ),
            (
                vec![("hbase.ipc.client.socket.timeout.connect", "0")],
                "hbase.ipc.client.socket.timeout.connect=0: this client needs a connect timeout",
            ),
            (
                vec![("zookeeper.session.timeout", "-1")],
                "zookeeper.session.timeout=-1: this client needs a session timeout",
            ),
            (vec![("hbase.client.pause", "1.5")], "hbase.client.pause"),
            (
                vec![("hbase.client.write.buffer", "0")],
                "hbase.client.write.buffer",
            ),
            (
                vec![("hbase.client.scanner.caching", "0")],
                "hbase.client.scanner.caching",
            ),
            (
                vec![("hbase.client.scanner.max.result.size", "big")],
                "hbase.client.scanner.max.result.size",
            ),
            (
                vec![("hbase.client.keyvalue.maxsize", "x")],
                "hbase.client.keyvalue.maxsize",
            ),
            (
                vec![("hbase.zookeeper.property.clientPort", "70000")],
                "hbase.zookeeper.property.clientPort",
            ),
            (
                vec![("hbase.zookeeper.quorum", "zk1:port")],
                "hbase.zookeeper.quorum",
            ),
            (
                vec![("hbase.zookeeper.quorum", " , ")],
                "hbase.zookeeper.quorum",
            ),
            (
                vec![("zookeeper.znode.parent", "hbase")],
                "zookeeper.znode.parent",
            ),
            (
                vec![(
                    "hbase.client.rpc.compressor",
                    "org.apache.hadoop.io.compress.GzipCodec",
                )],
                "hbase.client.rpc.compressor",
            ),
            (
                vec![("hbase.client.bootstrap.servers", "m1")],
                "hbase.client.bootstrap.servers",
            ),
        ] {
            let m = err(&pairs);
            assert!(m.contains(says), "{pairs:?}: {m}");
        }
    }

    /// Numbers as Hadoop's getInt and getLong read them (`tests/hbase_site.rs` compares the
    /// typed values with the Java client's on the files of `tests/hbase_site/configured/`).
    #[test]
    fn numbers_are_read_as_javas_get_int_and_get_long() {
        for (value, int, long) in [
            ("7", Some(7), Some(7)),
            (" 7 ", Some(7), Some(7)),
            ("\n\t  250\r\n", Some(250), Some(250)),
            ("+5", Some(5), Some(5)),
            ("-5", Some(-5), Some(-5)),
            ("0x10", Some(16), Some(16)),
            ("0X1f", Some(31), Some(31)),
            ("-0x10", Some(-16), Some(-16)),
            // After the 0x, Java's parser takes a sign of its own.
            ("0x+5", Some(5), Some(5)),
            ("0x-5", Some(-5), Some(-5)),
            ("2147483647", Some(2147483647), Some(2147483647)),
            ("-0x80000000", Some(-2147483648), Some(-2147483648)),
            ("2147483648", None, Some(2147483648)),
            ("0xffffffff", None, Some(0xffff_ffff)),
            ("-9223372036854775808", None, Some(i64::MIN)),
            // Java's digits are every script's, and fullwidth letters in hexadecimal.
            ("\u{663}\u{660}", Some(30), Some(30)),
            ("1\u{662}3", Some(123), Some(123)),
            ("-\u{FF15}", Some(-5), Some(-5)),
            ("0x\u{FF26}\u{FF46}", Some(255), Some(255)),
        ] {
            assert_eq!(java_integer(value, JavaNumber::Int), int, "int {value:?}");
            assert_eq!(
                java_integer(value, JavaNumber::Long),
                long,
                "long {value:?}"
            );
        }
        // Not numbers to Java either (Java's trim stops at U+0020: a no-break space stays).
        for value in [
            "9223372036854775808",
            "",
            "   ",
            "+0x10",
            "-0x-5",
            "0x",
            "-",
            "1.5",
            "1e3",
            "10 000",
            "10ms",
            "\u{a0}5",
            "-9223372036854775809",
            "99999999999999999999999999999999999999999999",
            // Numbers, but not decimal digits: superscript two, one half, Roman numeral one.
            "\u{B2}",
            "\u{BD}",
            "\u{2160}",
            // A mathematical digit three: two surrogates to Java's parser.
            "\u{1D7D1}",
            // A fullwidth letter is a digit in hexadecimal only; U+FF27 is a G.
            "\u{FF26}",
            "0x\u{FF27}",
        ] {
            let (int, long) = (
                java_integer(value, JavaNumber::Int),
                java_integer(value, JavaNumber::Long),
            );
            assert_eq!((int, long), (None, None), "{value:?}");
        }
        // Each property with its Java type: a long property takes a long.
        let c = config(&[
            ("hbase.client.write.buffer", "0x100000000"),
            ("hbase.client.retries.number", " -1 "),
            ("hbase.client.keyvalue.maxsize", "-0x1"),
            ("hbase.client.write.buffer.maxmutations", "0"),
        ])
        .unwrap();
        assert_eq!(c.write_buffer_size(), 1 << 32);
        assert_eq!(c.retries(), 0);
        assert_eq!(c.keyvalue_max_size(), usize::MAX);
        assert_eq!(c.write_buffer_max_mutations(), None);
        let m = err(&[("hbase.rpc.timeout", "0x100000000")]);
        assert!(m.contains("a Java int"), "{m}");
    }

    /// The connection settings the Java client reads from the same file.
    #[test]
    fn connection_settings() {
        let c = config(&[
            ("hbase.client.locate.prefetch.limit", "20"),
            ("hbase.ipc.client.failed.servers.expiry", "0"),
            ("hbase.ipc.client.socket.timeout.connect", "3000"),
            ("zookeeper.session.timeout", "60000"),
            ("hbase.client.meta.max.concurrent.locate.per.table", "3"),
            ("hbase.client.bootstrap.refresh_interval_secs", "45"),
        ])
        .unwrap();
        assert_eq!(c.meta_lookups_per_table(), 3);
        assert_eq!(c.bootstrap_refresh_interval(), Duration::from_secs(45));
        assert_eq!(c.meta_prefetch(), 20);
        assert_eq!(c.failed_server_expiry(), Duration::ZERO);
        assert_eq!(c.connect_timeout(), Duration::from_secs(3));
        assert_eq!(c.zk_session_timeout(), Duration::from_secs(60));
        // Values Java takes that mean little: no prefetch is the one region asked for, and a
        // negative expiry (Java's entries expire at once) is none.
        for (prefetch, expiry) in [("0", "-0x1"), ("-5", "-2147483648")] {
            let c = config(&[
                ("hbase.client.locate.prefetch.limit", prefetch),
                ("hbase.ipc.client.failed.servers.expiry", expiry),
                (
                    "hbase.client.meta.max.concurrent.locate.per.table",
                    prefetch,
                ),
                ("hbase.client.bootstrap.refresh_interval_secs", prefetch),
            ])
            .unwrap();
            assert_eq!(c.meta_prefetch(), 1, "{prefetch}");
            assert_eq!(c.failed_server_expiry(), Duration::ZERO, "{expiry}");
            assert_eq!(c.meta_lookups_per_table(), 1, "{prefetch}");
            assert_eq!(c.bootstrap_refresh_interval(), Duration::from_secs(1));
        }
    }

    /// The error of parsing `xml`, which must be an `InvalidInput`.
    fn refused(xml: &str) -> String {
        match HbaseSite::parse(xml) {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("{xml}: expected InvalidInput, got {other:?}"),
        }
    }

    /// A `<!DOCTYPE>` is read as Hadoop reads it when it declares no entities and names no
    /// file; an entity declaration (which Hadoop expands) and an external DTD (which Hadoop
    /// reads) are refused before the document is parsed, saying why.
    #[test]
    fn document_types_and_entities() {
        let property = "<configuration><property><name>a</name><value>b</value></property>\
                        </configuration>";
        for accepted in [
            "<!DOCTYPE configuration>".to_string(),
            "<?xml version=\"1.0\"?>\n<!-- before -->\n<!DOCTYPE configuration [\n\
             <!-- a comment: ' ] -->\n<!ELEMENT configuration (property*)>\n<?pi ]?>\n]>"
                .to_string(),
        ] {
            let s = HbaseSite::parse(&format!("{accepted}{property}")).unwrap();
            assert_eq!(s.raw("a"), Some("b"), "{accepted}");
        }
        // An entity declaration of any kind, here used or not, is refused, naming the text.
        let says = |m: &str| {
            m.contains("the text given to HbaseSite::parse")
                && m.contains("entity declarations")
                && m.contains("${name}")
        };
        for declared in [
            "<!DOCTYPE configuration [<!ENTITY t \"30000\">]>",
            "<!DOCTYPE configuration [<!ENTITY t SYSTEM \"/etc/hostname\">]>",
            "<!DOCTYPE configuration [\n<!ELEMENT configuration ANY>\n<!ENTITY % p \"x\">]>",
            // roxmltree skips an element or attribute list declaration to its `>`, quotes and
            // all: a scan that skipped quoted text would miss this declaration.
            "<!DOCTYPE configuration [<!ELEMENT x '> <!ENTITY t \"1\"> <!ELEMENT y '>]>",
            // Not a declaration, but refused all the same (a false refusal, said clearly).
            "<!DOCTYPE configuration [<!-- <!ENTITY t \"1\"> -->]>",
        ] {
            let m = refused(&format!("{declared}{property}"));
            assert!(says(&m), "{declared}: {m}");
        }
        // A billion laughs: depth.
        let mut laughs = String::from("<!DOCTYPE configuration [<!ENTITY l0 \"ha\">");
        for i in 1..10 {
            let refs = format!("&l{};", i - 1).repeat(10);
            laughs.push_str(&format!("<!ENTITY l{i} \"{refs}\">"));
        }
        laughs.push_str("]><configuration><property><name>a</name><value>&l9;</value></property></configuration>");
        assert!(says(&refused(&laughs)));
        // Breadth, within every bound roxmltree has (10 levels, 255 references under one):
        // 16 references to 254 of 1,000 bytes, 4 MB from 2 KB, which roxmltree expanded in
        // 4 s (1,000 references: minutes). Refused at once.
        let breadth = format!(
            "<!DOCTYPE configuration [<!ENTITY b \"{}\"><!ENTITY a \"{}\">]>\
             <configuration><property><name>a</name><value>{}</value></property></configuration>",
            "x".repeat(1000),
            "&b;".repeat(254),
            "&a;".repeat(16)
        );
        assert!(says(&refused(&breadth)));
        // An attribute list: Hadoop applies its defaults (`final` on every property, here),
        // roxmltree does not, so it is refused rather than misread; one in a comment too.
        for listed in [
            "<!DOCTYPE configuration [<!ATTLIST property final CDATA \"true\">]>",
            "<!DOCTYPE configuration [<!ATTLIST configuration note CDATA #IMPLIED>]>",
            "<!DOCTYPE configuration [<!-- <!ATTLIST property final CDATA \"true\"> -->]>",
        ] {
            let m = refused(&format!("{listed}{property}"));
            assert!(
                m.contains("attribute lists") && m.contains("default values"),
                "{listed}: {m}"
            );
        }
        // An external DTD, which Hadoop reads (its entities and default attributes applied).
        for external in [
            "<!DOCTYPE configuration SYSTEM \"configuration.dtd\">",
            "<!DOCTYPE configuration PUBLIC \"-//x//y//EN\" \"http://h/c.dtd\" []>",
        ] {
            let m = refused(&format!("{external}{property}"));
            assert!(
                m.contains("external DTD") && m.contains("reads no file"),
                "{m}"
            );
        }
        // An entity no declaration defines.
        let m = refused(
            "<configuration><property><name>a</name><value>&t;</value></property></configuration>",
        );
        assert!(m.contains("'t'") && m.contains("${t}"), "{m}");
    }

    #[test]
    fn the_registry_is_chosen_by_its_class() {
        let rpc = config(&[
            (
                "hbase.client.registry.impl",
                "org.apache.hadoop.hbase.client.RpcConnectionRegistry",
            ),
            ("hbase.client.bootstrap.servers", "rs1:16020, rs2:16020"),
            ("hbase.masters", "m1:16000"),
        ])
        .unwrap();
        assert_eq!(rpc.registry(), Registry::Rpc);
        assert_eq!(rpc.bootstrap_servers(), ["rs1:16020", "rs2:16020"]);
        let masters = config(&[
            (
                "hbase.client.registry.impl",
                "org.apache.hadoop.hbase.client.MasterRegistry",
            ),
            ("hbase.masters", "m1:16000,m2:16000"),
        ])
        .unwrap();
        assert_eq!(masters.registry(), Registry::Rpc);
        assert_eq!(masters.bootstrap_servers(), ["m1:16000", "m2:16000"]);
        let zk = config(&[(
            "hbase.client.registry.impl",
            "org.apache.hadoop.hbase.client.ZKConnectionRegistry",
        )])
        .unwrap();
        assert_eq!(zk.registry(), Registry::ZooKeeper);
        // Bootstrap servers alone keep the ZooKeeper registry (HBase 2.x's default).
        let default = config(&[("hbase.client.bootstrap.servers", "rs1:16020")]).unwrap();
        assert_eq!(default.registry(), Registry::ZooKeeper);

        let m = err(&[(
            "hbase.client.registry.impl",
            "org.apache.hadoop.hbase.client.RpcConnectionRegistry",
        )]);
        assert!(
            m.contains("hbase.client.registry.impl")
                && m.contains("hbase.client.bootstrap.servers"),
            "{m}"
        );
        let m = err(&[("hbase.client.registry.impl", "com.example.MyRegistry")]);
        assert!(
            m.contains("hbase.client.registry.impl=com.example.MyRegistry"),
            "{m}"
        );
    }

    #[test]
    fn unknown_properties_and_bad_files() {
        config(&[
            ("hbase.cluster.distributed", "false"),
            ("x", "${undefined}"),
        ])
        .unwrap();
        // Hadoop reads <property> elements under any root (tests/hbase_site/xinclude/roots.xml).
        let other_root =
            "<properties><property><name>a</name><value>b</value></property></properties>";
        assert_eq!(HbaseSite::parse(other_root).unwrap().raw("a"), Some("b"));
        assert!(HbaseSite::parse("<configuration><property>").is_err());
        let e = HbaseSite::load("/nonexistent/conf")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/conf/hbase-site.xml") || e.contains("/nonexistent/conf"),
            "{e}"
        );
        let s = site(&[("a", "${b}-${env.HBASE_SITE_TEST_NOT_SET}"), ("b", "B")]);
        assert_eq!(value(&s, "a"), "B-${env.HBASE_SITE_TEST_NOT_SET}");
    }

    /// The value of `name`, expanded.
    fn value(s: &HbaseSite, name: &str) -> String {
        s.get(name).unwrap().unwrap()
    }

    /// References expand left to right and stop at the first unbound one; a value that
    /// refers to itself stays as written; references in a loop, or more than Hadoop's 20
    /// substitutions, are refused. (`tests/hbase_site.rs` compares all of this with Hadoop's
    /// own `Configuration`.) Before Round 33, every reference was expanded recursively:
    /// `${x}${x}${x}${x}` as the value of `x` took 4^21 expansions (a hang).
    #[test]
    fn references_expand_as_hadoop_expands_them() {
        let s = site(&[
            ("x", "${x}${x}${x}${x}"),
            ("a", "${b}"),
            ("b", "${a}"),
            ("c", "${nope}-${d}"),
            ("d", "D"),
            ("e", "pre-${d}-${d}"),
        ]);
        assert_eq!(value(&s, "x"), "${x}${x}${x}${x}");
        let m = s.get("a").unwrap_err().to_string();
        assert!(
            m.contains("a=\"${b}\"") && m.contains("depth too large"),
            "{m}"
        );
        // A `$` or a space ends a name (a `{` does not); the search goes on after it.
        let odd = site(&[("s", "$${d} ${ d} ${}${d} ${a{b}${d}"), ("d", "D")]);
        assert_eq!(value(&odd, "s"), "$D ${ d} ${}D ${a{b}${d}");
        assert_eq!(value(&s, "c"), "${nope}-${d}");
        assert_eq!(value(&s, "e"), "pre-D-D");
        // A chain of 20 substitutions or more is refused, wherever it is read from.
        let mut chain: Vec<(String, String)> = (0..30)
            .map(|i| (format!("k{i}"), format!("${{k{}}}", i + 1)))
            .collect();
        chain.push(("k30".into(), "end".into()));
        let pairs: Vec<(&str, &str)> = chain
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let long = site(&pairs);
        assert_eq!(value(&long, "k11"), "end");
        assert!(long.get("k10").is_err() && long.get("k0").is_err());
        // The environment, with Hadoop's defaults: `:-` for unset or empty, `-` for unset;
        // the first of them from the left counts.
        let home = std::env::var("HOME").unwrap_or_default();
        let env = site(&[
            ("q", "${env.HBASE_SITE_TEST_NOT_SET:-zk1}:2181"),
            ("r", "${env.HBASE_SITE_TEST_NOT_SET-zk2}"),
            ("h", "${env.HOME:-elsewhere}"),
            ("f", "${env.HBASE_SITE_TEST_NOT_SET-a:-b}"),
        ]);
        assert_eq!(value(&env, "q"), "zk1:2181");
        assert_eq!(value(&env, "r"), "zk2");
        assert_eq!(value(&env, "h"), home);
        assert_eq!(value(&env, "f"), "a:-b");
        // A client property whose value is refused fails the configuration, naming it.
        let m = err(&[
            ("hbase.rpc.timeout", "${t}"),
            ("t", "${hbase.rpc.timeout}0"),
        ]);
        assert!(
            m.contains("hbase.rpc.timeout") && m.contains("depth too large"),
            "{m}"
        );
    }

    /// Values keep their spaces and line breaks (Hadoop's `get` does not trim them); the client
    /// properties read here trim them before use, so a value on a line of its own works.
    #[test]
    fn values_keep_their_spaces_and_client_properties_trim_them() {
        let s = HbaseSite::parse(
            "<configuration>\
             <property><name> hbase.rpc.timeout </name><value>\n  7000\n</value></property>\
             <property><name>hbase.zookeeper.quorum</name><value>\n  zk1,zk2:2182\n</value></property>\
             <property><name>hbase.client.pause</name><value/></property>\
             </configuration>",
        )
        .unwrap();
        assert_eq!(s.raw("hbase.rpc.timeout"), Some("\n  7000\n"));
        assert_eq!(s.raw("hbase.client.pause"), None);
        let c = s.to_builder().unwrap().build().unwrap();
        assert_eq!(c.rpc_timeout(), Duration::from_millis(7000));
        assert_eq!(c.zk_quorum(), "zk1:2181,zk2:2182");
    }

    /// A property marked `<final>` keeps its first value: a later definition in the file is
    /// ignored, as Hadoop ignores it.
    #[test]
    fn a_final_property_keeps_its_first_value() {
        let s = HbaseSite::parse(
            "<configuration>\
             <property><name>hbase.rpc.timeout</name><value>7000</value><final>true</final></property>\
             <property><name>hbase.rpc.timeout</name><value>9000</value></property>\
             <property><name>hbase.client.pause</name><value>10</value></property>\
             <property><name>hbase.client.pause</name><value>20</value></property>\
             </configuration>",
        )
        .unwrap();
        assert_eq!(value(&s, "hbase.rpc.timeout"), "7000");
        assert_eq!(value(&s, "hbase.client.pause"), "20");
    }

    /// XInclude in text given to `parse`: a relative href has nothing to be relative to and is
    /// an error saying so (even with a fallback: text cannot tell a missing file from an
    /// unresolvable href); an absolute one is read, and a missing one falls back as in a file.
    /// `tests/hbase_site.rs` compares `load` with Hadoop on files.
    #[test]
    fn includes_in_text_need_absolute_hrefs() {
        let m = HbaseSite::parse(
            r#"<configuration xmlns:xi="http://www.w3.org/2001/XInclude">
                 <xi:include href="other.xml"><xi:fallback/></xi:include>
               </configuration>"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            m.contains("\"other.xml\"") && m.contains("HbaseSite::load"),
            "{m}"
        );
        let dir = std::env::temp_dir().join(format!("hbase-site-parse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let inc = dir.join("inc.xml");
        std::fs::write(
            &inc,
            "<configuration><property><name>a</name><value>inc</value></property></configuration>",
        )
        .unwrap();
        let xml = format!(
            r#"<configuration xmlns:xi="http://www.w3.org/2001/XInclude">
                 <xi:include href="{}"/>
                 <xi:include href="{}/missing.xml"><xi:fallback>
                   <property><name>b</name><value>fallback</value></property>
                 </xi:fallback></xi:include>
               </configuration>"#,
            inc.display(),
            dir.display()
        );
        let s = HbaseSite::parse(&xml).unwrap();
        assert_eq!((s.raw("a"), s.raw("b")), (Some("inc"), Some("fallback")));
        let without_fallback = xml.replace("xi:fallback>", "other>");
        let m = HbaseSite::parse(&without_fallback).unwrap_err().to_string();
        assert!(
            m.contains("missing.xml") && m.contains("no <xi:fallback>"),
            "{m}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
