//! A bucket as Paimon's LSM tree: data files and sorted runs (written files not yet committed
//! included), a bucket's split and its key order, the live files of a snapshot (its manifests
//! replayed, pruned for a scan, and kept per bucket for writes), deletion vectors applied, the
//! k-way merge under the table's merge engine, in-memory runs and a transaction's overlay of
//! them, key sets and key lookups, reads by key.

pub(in crate::storage) mod caches;
pub mod data_file;
pub mod deletions;
pub(in crate::storage) mod fences;
pub mod key_read;
pub(in crate::storage) mod key_sets;
pub(in crate::storage) mod live_files;
pub(in crate::storage) mod lookup;
pub mod memrun;
pub mod memtable;
pub mod merge;
pub mod merge_engine;
pub(in crate::storage) mod run_file;
pub mod scan_plan;
pub mod split;
pub mod unflushed;
