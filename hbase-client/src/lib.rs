//! An async native client for Apache HBase 2.x, speaking HBase's own protobuf RPC.
//!
//! Start with [`Client::connect`], then use [`Client::table`] for data and [`Client::admin`]
//! for table management. One `get` flows through:
//! [`Table::get`] → `region::MetaLocator::locate` (cache, else a reversed `hbase:meta` scan) →
//! `rpc::pool` (one connection per server) → `rpc::connection` (call-id multiplexing) →
//! [`rpc::frame`] (bytes on the wire) and back.

#![warn(missing_docs)]

mod address_map;
pub mod admin;
mod cell;
mod client;
mod config;
mod error;
mod multi;
mod mutator;
mod ops;
pub mod region;
mod retry;
pub mod rpc;
mod scanner;
mod site;
mod stats;
mod table;
mod zk;
pub mod znode;

pub use address_map::AddressMap;
pub use admin::{Admin, ColumnFamily, SnapshotInfo, TableDescriptor, TableRegion};
pub use cell::{Cell, CellType, LATEST_TIMESTAMP};
pub use client::Client;
pub use config::{
    AddressMapper, ClientConfig, ClientConfigBuilder, DEFAULT_SCANNER_CACHING,
    DEFAULT_SCANNER_MAX_RESULT_SIZE, DEFAULT_WRITE_BUFFER_LIMIT, DEFAULT_WRITE_BUFFER_SIZE,
};
pub use error::{Error, ErrorKind, FailedMutation, RemoteException, Result};
pub use mutator::{BufferedMutator, FailureListener, MutatorConfig};
pub use ops::{
    Action, ActionResult, Append, CheckAndMutate, Comparator, CompareOp, Delete, Durability,
    Filter, Get, Increment, Mutation, Put, RowResult, Scan,
};
pub use region::{RegionInfo, RegionLocation, ServerName, TableName};
pub use retry::{HBaseBackoff, RetryPolicy, RETRY_BACKOFF};
pub use scanner::ScanStream;
pub use site::{HbaseSite, HONOURED_PROPERTIES};
pub use stats::{ServerStats, StatsSnapshot};
pub use table::Table;
