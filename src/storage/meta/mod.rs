//! A table's metadata: the `Table` handle (location, schemas, snapshots), snapshot, tag and
//! consumer files, time travel (which snapshot a version names), pins of snapshots in use, the
//! index manifest with its deletion-vector files, manifest files read and written, and the
//! data-file indexes a scan prunes with.

pub(in crate::storage) mod added_files;
pub mod consumer;
pub mod deletion_vector;
pub(in crate::storage) mod file_indexes;
pub(in crate::storage) mod heap_sizes;
pub mod index_manifest;
pub(in crate::storage) mod manifest_files;
pub mod pins;
pub mod snapshot;
pub mod table;
pub mod tag;
pub mod time_travel;
