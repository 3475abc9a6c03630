//! Paimon's format vocabulary: types, schemas and their table options (keys, defaults,
//! parsers, what CREATE TABLE accepts), values, BinaryRow, the bucket hash, manifests,
//! predicates, statistics and data-file indexes — what the bytes in a warehouse mean, with no
//! I/O. Everything above reads and writes these types; this floor imports nothing else of
//! storage.

pub mod binary_row;
pub mod bucket;
pub mod datum;
pub mod file_index;
pub mod manifest;
pub mod options;
pub mod predicate;
pub mod schema;
pub mod stats;
pub mod types;
