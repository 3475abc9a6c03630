//! Paimon's format vocabulary: types, schemas and their table options (keys, defaults,
//! parsers, what CREATE TABLE accepts), values, BinaryRow, the bucket hash, manifests,
//! predicates, statistics and data-file indexes — what the bytes in a warehouse mean, with no
//! I/O. Everything above reads and writes these types; this floor imports nothing else of
//! storage.
//!
//! The one public floor (`pub mod spec`; the others are private behind storage's facade): this
//! vocabulary is shared by every layer — SQL's CREATE TABLE builds schemas and checks options
//! with it, the query layer maps types, values and predicates, the format tests read manifests
//! and BinaryRows — so re-exporting it item by item would only copy its module tree.

pub mod binary_row;
pub mod bucket;
pub mod datum;
pub mod file_index;
pub mod manifest;
pub mod options;
pub mod predicate;
pub mod schema;
pub mod schema_change;
pub mod stats;
pub mod types;
