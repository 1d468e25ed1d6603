//! The RPC layer: wire format, cell blocks, connections and the connection pool.

pub mod cellblock;
pub(crate) mod connection;
pub mod frame;
pub(crate) mod pool;

pub use frame::Service;
