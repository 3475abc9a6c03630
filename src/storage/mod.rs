//! Storage: the Paimon warehouse on an [`object_store::ObjectStore`].
//!
//! This layer knows the on-disk layout (`WAREHOUSE/<db>.db/<table>/...`) and nothing about SQL
//! planning or the wire protocol. **Invariant:** nothing under `storage` imports `datafusion` or
//! `pgwire`; the store is injected so tests can run on `memory://` or a fault-injecting store
//! (`fault_tests.rs`).
//!
//! **The facade.** The floors (`io` ← `meta` ← `lsm` ← `read` ← `write` ← `commit` ←
//! `maintenance`) are private: the layers above, the integration tests and the benches name
//! what this file re-exports, and the facade modules `procedures` (Paimon's `sys.*` procedures,
//! for `query::procedures`), `compaction` (the compaction policy's figures), `metrics`, `roles`,
//! `sequences` (CREATE SEQUENCE's documents and `nextval` blocks, `_tarn/sequences/`), `views`
//! (CREATE VIEW's documents, `_tarn/views/`) and
//! `bench` — never a floor's module path, so a floor can change shape behind them.
//! `spec` stays public: it is the vocabulary every layer shares (Paimon types, values,
//! schemas, table options, predicates, manifests). `tests/layering.rs` checks that nothing
//! outside storage names a private floor.

mod commit;
mod error;
mod io;
mod lsm;
mod maintenance;
mod meta;
mod read;
pub mod spec;
mod warehouse;
mod write;

pub mod bench;
mod block_ddl;
pub mod compaction;
mod documents;
pub mod metrics;
pub mod procedures;
pub mod roles;
pub mod sequences;
pub mod views;

// The warehouse, its tables and errors: everyone above (main, config, query's catalog,
// server's metrics and errors, tests, benches).
pub use commit::error::CommitError;
pub use error::StorageError;
pub use io::cache_budget::DEFAULT_CACHE_MEMORY;
pub use meta::snapshot::Snapshot;
pub use meta::table::Table;
pub use warehouse::{Warehouse, WarehouseLocation};

// Reading rows at a version: query's table provider, time travel, `table_changes` and system
// tables.
pub use lsm::data_file::kind as row_kind;
pub use lsm::unflushed::cut_of as unflushed_cut;
pub use lsm::unflushed::read_epoch;
pub use meta::pins::SnapshotPin;
pub use meta::time_travel::{VersionError, VersionSpec};
pub use read::changelog_scan::row_kind_names;
pub use read::scan::{KeyQuery, Overlay, ScanFilter, ScanPlan, Split};

// Writing and committing: query's sink, DML and transactions, server's COPY and TRUNCATE.
pub use commit::logged::{FlushPolicy, LogService, flush_table};
pub use commit::{commit_write, commit_writes, commit_writes_in, truncate};
// A transaction block's DDL committed with its writes (server's COMMIT of a block).
pub use block_ddl::{BlockCommit, DdlChange, Settled, crash_after_writes};
// Dropped partitions: ALTER TABLE … DROP PARTITION, DELETE of whole partitions (server).
pub use commit::{DropOutcome, PartitionDrop, drop_partitions, partition_text};
pub use write::changelog::has_changelog;
pub use write::restriction::check_writable;
pub use write::table_write::{TableWrite, WriteMode};

// What a table's merge engine lets DML do: server's INSERT, UPDATE, DELETE, MERGE and COPY.
pub use lsm::merge_engine::MergeOptions;
pub use write::merge_dml::{DmlWhat, dml_notice, dml_support, insert_merges, upsert_replaces};

// A table's compactor and commit counters (its `Table::state` slots): query's `$compaction`
// system table, the manifests bench waiting for compaction to settle.
pub use commit::state::CommitState;
pub use maintenance::compactor::CompactorState;

#[cfg(test)]
mod alter_tests;
#[cfg(test)]
pub(crate) mod fault_tests;
#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
