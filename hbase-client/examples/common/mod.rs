//! What every example does first and last: connect to the cluster named on the command line,
//! start from a fresh table, drop it at the end. A module of the examples (`mod common;`), not
//! an example itself; each example reads on its own with these three calls in mind.

use bytes::Bytes;
use hbase_client::{Admin, Client, ClientConfig, ColumnFamily, TableDescriptor, TableName};

/// The examples' error type: any error, printed by `main`.
pub type Error = Box<dyn std::error::Error>;

/// A client of the cluster whose ZooKeeper quorum is the first argument (default
/// `127.0.0.1:2181`).
#[allow(dead_code)] // secure.rs builds its client from its own options
pub async fn connect_from_args() -> Result<Client, Error> {
    let zk = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    Ok(Client::connect(ClientConfig::builder(zk).build()?).await?)
}

/// Creates table `name` with family `cf`, split at `splits`; a table of that name left by an
/// earlier run is dropped first.
pub async fn fresh_table(admin: &Admin, name: &str, splits: &[&str]) -> Result<TableName, Error> {
    let name = TableName::parse(name)?;
    if admin.table_exists(&name).await? {
        drop_table(admin, &name).await?;
    }
    let splits: Vec<Bytes> = splits
        .iter()
        .map(|s| Bytes::copy_from_slice(s.as_bytes()))
        .collect();
    let desc = TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf"));
    admin.create_table(&desc, &splits).await?;
    Ok(name)
}

/// Disables and deletes table `name`.
pub async fn drop_table(admin: &Admin, name: &TableName) -> Result<(), Error> {
    admin.disable_table(name).await?;
    admin.delete_table(name).await?;
    Ok(())
}
