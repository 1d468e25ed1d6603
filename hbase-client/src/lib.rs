//! An async native client for Apache HBase 2.x, speaking HBase's own protobuf RPC.
//!
//! Start with [`Client::connect`], then use [`Client::table`] for data and [`Client::admin`]
//! for table management. One `get` flows through:
//! [`Table::get`] → the runtime's retrying caller → the meta locator (cache, else a reversed
//! `hbase:meta` scan) → the connection pool (one connection per server) → the connection
//! (call-id multiplexing) → the wire format, and back. See [`Table`] for what a write's result
//! means when things fail.
//!
//! Layers, each importing only from those below it: the wire format (`rpc::frame`,
//! `rpc::cellblock`, request types in `ops`) → one connection (`rpc::connection`) → the
//! runtime (config, locator, pool, stats, the retrying caller) → operations (`table`,
//! `multi`, `scanner`, `mutator`, `admin`) → [`Client`]. Errors and the exception table are
//! at the bottom, beside everything.

#![warn(missing_docs)]

mod address_map;
pub mod admin;
mod cell;
mod client;
/// Values and checks the public API does not show, for the oracle tests that run the Java
/// client beside ours. Not part of the public API.
#[doc(hidden)]
pub mod client_oracle;
mod error;
mod multi;
mod multi_request;
mod multi_response;
mod mutator;
mod ops;
mod prefetch;
pub mod region;
/// The wire format and connections. Not part of the public API (it may change in any
/// release); public for this workspace's benches, property tests and test proxy.
#[doc(hidden)]
pub mod rpc;
mod runtime;
mod scan_metrics;
mod scan_row;
mod scanner;
pub mod security;
mod site;
mod table;
mod write_budget;
/// HBase's znode payload format. Not part of the public API; public for property tests.
#[doc(hidden)]
pub mod znode;

pub use address_map::AddressMap;
pub use admin::{Admin, ColumnFamily, SnapshotInfo, TableDescriptor, TableRegion};
pub use cell::{Cell, CellRef, CellType, LATEST_TIMESTAMP};
pub use client::Client;
/// The exception table in words, for the oracle test that runs the Java client beside it. Not
/// part of the public API.
#[doc(hidden)]
pub use error::exceptions::oracle as exception_oracle;
pub use error::{Error, ErrorKind, FailedMutation, RemoteException, Result};
pub use mutator::{
    BufferedMutator, FailureListener, MutatorConfig, DEFAULT_MAX_FAILURES_KEPT,
    DEFAULT_MAX_FAILURE_BYTES_KEPT, PENDING_BUFFERS,
};
pub use ops::{
    Action, ActionResult, Append, CheckAndMutate, Comparator, CompareOp, Consistency, Delete,
    Durability, Filter, Get, Increment, Mutation, Put, RawCells, RawRow, ReadType, RowMutation,
    RowMutations, RowResult, Scan,
};
pub use region::{RegionInfo, RegionLocation, ServerName, TableName};
pub use rpc::CellBlockCompression;
pub use runtime::config::{
    AddressMapper, ClientConfig, ClientConfigBuilder, Registry, DEFAULT_SCANNER_CACHING,
    DEFAULT_SCANNER_MAX_RESULT_SIZE, DEFAULT_WRITE_BUFFER_LIMIT, DEFAULT_WRITE_BUFFER_SIZE,
    MAX_DURATION,
};
pub use runtime::retry::{HBaseBackoff, RetryPolicy, RETRY_BACKOFF};
pub use runtime::stats::{ServerStats, StatsSnapshot};
pub use scan_metrics::ScanMetrics;
pub use scanner::{RawScanStream, ScanStream};
pub use security::{Kerberos, Protection, SecurityStatus, Tls};
pub use site::{HbaseSite, HONOURED_PROPERTIES};
pub use table::{Table, TableBuilder};
