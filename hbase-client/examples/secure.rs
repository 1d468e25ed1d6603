//! Connect to a secured cluster (Kerberos and/or TLS), write and read a row, drop the table.
//!
//! ```sh
//! # Kerberos: the system's krb5.conf (or KRB5_CONFIG) names the KDC
//! cargo run -p hbase-client --example secure -- --zk zk1:2181 \
//!     --principal app@EXAMPLE.COM --keytab /etc/security/app.keytab --protection privacy
//! # TLS (HBase 2.6 native RPC TLS), optionally with a client certificate
//! cargo run -p hbase-client --example secure -- --zk zk1:2181 --ca ca.pem --cert c.pem --key k.pem
//! ```
//! `--ticket-cache [CACHE]` uses tickets from `kinit` instead of a keytab; `--server-principal`
//! sets the servers' principal pattern (default `hbase/_HOST`).

use hbase_client::{Client, ClientConfig, Get, Kerberos, Protection, Put, Tls};

mod common;

#[tokio::main]
async fn main() -> Result<(), common::Error> {
    let mut args = std::env::args().skip(1);
    let (mut zk, mut principal, mut keytab, mut cache) = (None, None, None, None);
    let (mut ca, mut cert, mut key) = (None, None, None);
    let mut protection = Protection::Authentication;
    let mut server_principal = None;
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--zk" => zk = Some(value()?),
            "--principal" => principal = Some(value()?),
            "--keytab" => keytab = Some(value()?),
            "--ticket-cache" => cache = Some(value()?),
            "--protection" => protection = Protection::parse(&value()?)?,
            "--server-principal" => server_principal = Some(value()?),
            "--ca" => ca = Some(value()?),
            "--cert" => cert = Some(value()?),
            "--key" => key = Some(value()?),
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    let mut builder = ClientConfig::builder(zk.unwrap_or_else(|| "127.0.0.1:2181".into()));
    let kerberos = match (principal, keytab, cache) {
        (Some(p), Some(k), _) => Some(Kerberos::from_keytab(p, k)),
        (None, None, Some(c)) => Some(Kerberos::from_ticket_cache(Some(&c))),
        (None, None, None) => None,
        _ => return Err("--principal and --keytab go together".into()),
    };
    if let Some(kerberos) = kerberos {
        let pattern = server_principal.unwrap_or_else(|| "hbase/_HOST".into());
        builder = builder.kerberos(
            kerberos
                .protection(protection)
                .regionserver_principal(pattern.clone())
                .master_principal(pattern),
        );
    }
    if let Some(ca) = ca {
        let mut tls = Tls::new(ca);
        if let (Some(cert), Some(key)) = (cert, key) {
            tls = tls.client_certificate(cert, key);
        }
        builder = builder.tls(tls);
    }
    let client = Client::connect(builder.build()?).await?;
    let admin = client.admin();
    let name = common::fresh_table(&admin, "secure_example", &[]).await?;
    let table = client.table("secure_example")?;
    table.put(Put::new("row").add("cf", "q", "secret")).await?;
    let row = table.get(Get::new("row")).await?.expect("just written");
    println!(
        "read back {:?}",
        String::from_utf8_lossy(row.value(b"cf", b"q").expect("has q"))
    );
    common::drop_table(&admin, &name).await?;
    let status = client.security();
    println!(
        "as {:?}: SASL exchanges {:?}, TLS handshakes {}",
        status.principal, status.sasl_handshakes, status.tls_handshakes
    );
    Ok(())
}
