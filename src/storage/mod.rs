//! Storage: the Paimon warehouse on an [`object_store::ObjectStore`].
//!
//! This layer knows the on-disk layout (`WAREHOUSE/<db>.db/<table>/...`) and nothing about SQL
//! planning or the wire protocol. **Invariant:** nothing under `storage` imports `datafusion` or
//! `pgwire`; the store is injected so tests can run on `memory://` or a fault-injecting store
//! (`fault_tests.rs`).

pub mod commit;
mod error;
pub mod io;
pub mod lsm;
pub mod maintenance;
pub mod meta;
pub mod metrics;
pub mod procedures;
pub mod read;
pub mod roles;
pub mod spec;
mod warehouse;
pub mod write;

pub use error::StorageError;
pub use io::cache_budget::DEFAULT_CACHE_MEMORY;
pub use meta::snapshot::Snapshot;
pub use meta::table::Table;
pub use meta::time_travel::VersionSpec;
pub use warehouse::{DATABASE_SUFFIX, Warehouse, WarehouseLocation};

#[cfg(test)]
pub(crate) mod fault_tests;
#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
