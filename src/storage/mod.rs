//! Storage: the Paimon warehouse on an [`object_store::ObjectStore`].
//!
//! This layer knows the on-disk layout (`WAREHOUSE/<db>.db/<table>/...`) and nothing about SQL
//! planning or the wire protocol. **Invariant:** nothing under `storage` imports `datafusion` or
//! `pgwire`; the store is injected so tests can run on `memory://` or a fault-injecting store.

mod error;
mod warehouse;

pub use error::StorageError;
pub use warehouse::{DATABASE_SUFFIX, Warehouse, WarehouseLocation};
