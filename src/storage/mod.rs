//! Storage: the Paimon warehouse on an [`object_store::ObjectStore`].
//!
//! This layer knows the on-disk layout (`WAREHOUSE/<db>.db/<table>/...`) and nothing about SQL
//! planning or the wire protocol. **Invariant:** nothing under `storage` imports `datafusion` or
//! `pgwire`; the store is injected so tests can run on `memory://` or a fault-injecting store.

pub mod binary_row;
pub mod bucket;
pub mod datum;
mod error;
pub mod manifest;
pub mod schema;
pub mod types;
mod warehouse;

pub use error::StorageError;
pub use warehouse::{DATABASE_SUFFIX, Warehouse, WarehouseLocation};
