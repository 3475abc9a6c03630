//! Paimon's format vocabulary: types, schemas, values, BinaryRow, the bucket hash, manifests,
//! predicates, statistics and data-file indexes — what the bytes in a warehouse mean, with no
//! I/O. Everything above reads and writes these types; this floor imports nothing else of
//! storage.

pub mod binary_row;
pub mod bucket;
pub mod datum;
pub mod file_index;
pub mod manifest;
pub mod predicate;
pub mod schema;
pub mod stats;
pub mod types;
