//! The RPC layer: wire format, cell blocks, connections and the connection pool.

pub(crate) mod canonical_host;
pub mod cellblock;
pub mod compression;
pub(crate) mod connection;
pub mod frame;
#[cfg(feature = "kerberos")]
pub(crate) mod kerberos;
mod read_room;
pub(crate) mod sasl;
pub(crate) mod secure;
#[cfg(feature = "tls")]
pub(crate) mod tls;
pub(crate) mod varint;

pub use compression::CellBlockCompression;
pub use frame::Service;

/// Decodes the rows of a `ScanResponse` and its cell block (either response shape); the flag
/// says whether a row is partial. The scanner uses this; it is public for benchmarks and tools.
pub use crate::ops::results_from_scan as decode_scan_rows;
