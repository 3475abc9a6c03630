//! Storage: the Paimon warehouse on an [`object_store::ObjectStore`].
//!
//! This layer knows the on-disk layout (`WAREHOUSE/<db>.db/<table>/...`) and nothing about SQL
//! planning or the wire protocol. **Invariant:** nothing under `storage` imports `datafusion` or
//! `pgwire`; the store is injected so tests can run on `memory://` or a fault-injecting store.

pub mod auto_tag;
pub mod binary_row;
pub mod bucket;
pub mod changelog;
pub mod changelog_scan;
pub mod changes;
pub mod clock;
pub mod commit;
pub mod compact;
mod compact_changelog;
pub mod compact_policy;
pub mod compact_sim;
pub mod compactor;
pub mod consumer;
pub mod data_file;
pub mod datum;
pub mod deletion_vector;
pub mod deletions;
pub mod dynamic_bucket;
mod error;
pub mod expire;
pub mod file_index;
pub mod file_io;
pub mod index_manifest;
mod key_sets;
mod live_files;
mod lookup;
mod lru;
mod maintenance;
pub mod manifest;
pub mod memrun;
pub mod merge;
pub mod merge_dml;
pub mod merge_engine;
pub mod metrics;
pub mod orphan;
pub mod pins;
pub mod predicate;
pub mod restore;
pub mod roles;
pub mod rollback;
mod run_file;
pub mod scan;
pub mod schema;
pub mod snapshot;
pub mod stats;
pub mod table;
pub mod tag;
pub mod time_travel;
pub mod types;
mod warehouse;
pub mod write;

pub use error::StorageError;
pub use table::Table;
pub use warehouse::{DATABASE_SUFFIX, Warehouse, WarehouseLocation};

#[cfg(test)]
mod compact_changelog_tests;
#[cfg(test)]
mod compact_tests;
#[cfg(test)]
mod tests;
