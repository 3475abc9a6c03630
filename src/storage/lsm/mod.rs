//! A bucket as Paimon's LSM tree: data files and sorted runs, the live files of a snapshot per
//! bucket, deletion vectors applied, the k-way merge under the table's merge engine, in-memory
//! runs, key sets and key lookups.

pub(in crate::storage) mod caches;
pub mod data_file;
pub mod deletions;
pub(in crate::storage) mod key_sets;
pub(in crate::storage) mod live_files;
pub(in crate::storage) mod lookup;
pub mod memrun;
pub mod merge;
pub mod merge_engine;
pub(in crate::storage) mod run_file;
