//! Paimon's data-file indexes (`file-index.bloom-filter.columns`): a bloom filter per listed
//! column of each data file, so a point lookup skips files that cannot hold its value.
//!
//! Paimon Java readers trust these filters: a file whose filter says "no" is skipped, so a filter
//! tarn writes with another hash or bit layout would make them silently lose rows. Everything
//! here therefore follows Java byte for byte:
//!
//! - the container (`FileIndexFormat`): `magic: i64 | version: i32 | head length: i32 |
//!   columns: i32 | per column: name (Java `writeUTF`) | indexes: i32 | per index: type name
//!   (`writeUTF`) | start: i32 | length: i32 |` then `redundant length: i32 = 0`, then the bodies.
//!   Starts count from the start of the container; `-1` marks an empty index. All big-endian.
//! - a bloom-filter body (`BloomFilterFileIndex`): the number of hash functions (i32) and the
//!   bits of `BloomFilter64` (bit `i` is bit `i % 8` of byte `i / 8`), sized from the column's
//!   `items` (default 1,000,000) and `fpp` (default 0.1) options.
//! - the hash of a value (`FastHash`): Thomas Wang's 64-bit integer hash of integers, dates,
//!   times, float bits and timestamps (milliseconds up to precision 3, else microseconds);
//!   XXH64 (seed 0) of the bytes of strings (UTF-8) and binaries.
//!
//! A data file's index is stored in its manifest entry (`_EMBEDDED_FILE_INDEX`) when it has at
//! most `file-index.in-manifest-threshold` bytes (default 500), else as `<data file>.index` next
//! to the data file, named in `_EXTRA_FILES` (Java's `DataFileIndexWriter`).
//!
//! tarn reads the filters of key columns of primary-key tables only (a key absent from a file has
//! no version there, so skipping the file loses nothing; a value column absent from a file says
//! nothing about the newest version of a row), and only for types whose SQL equality is equality
//! of the hashed value: not floats (`-0.0 = 0.0`) nor CHAR (blank padding).
//!
//! `format.rs` holds the bytes (hash, filter, container), `options.rs` the table options; this
//! module builds a data file's index, decodes one and tests a predicate against it. Pruning a
//! table's live files with their indexes (reading index files, caching them) is the table's
//! business: `meta/file_indexes.rs`.

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType as ArrowType, Int32Type, Int64Type};

use crate::storage::StorageError;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::DataFileMeta;
use crate::storage::spec::predicate::{CmpOp, Predicate};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{DataField, PaimonType, TypeKind};

pub mod format;
pub mod options;

pub use format::{
    BLOOM_FILTER, BloomFilter64, IndexEntry, MAGIC, VERSION, bytes_hash, hash_datum, hashable,
    long_hash, read_container, write_container,
};
pub use format::{prunable, same_hashing};
pub use options::{
    BloomColumn, DEFAULT_FPP, DEFAULT_IN_MANIFEST_THRESHOLD, DEFAULT_ITEMS, IndexOptions,
    check_option, read_enabled, validate,
};

type Result<T> = std::result::Result<T, StorageError>;

/// Suffix of an index file next to its data file (Java `DataFilePathFactory.INDEX_PATH_SUFFIX`).
pub const INDEX_FILE_SUFFIX: &str = ".index";

// --- building a data file's index ------------------------------------------------------------------

/// A data file's index, and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltIndex {
    pub bytes: Vec<u8>,
    /// In the manifest entry (`_EMBEDDED_FILE_INDEX`), else in `<data file>.index`.
    pub embedded: bool,
}

/// The index of a data file of `schema` whose value columns (every field, in schema order, as
/// written) are `values`; `None` when the table indexes nothing.
pub fn build(schema: &TableSchema, values: &[ArrayRef]) -> Result<Option<BuiltIndex>> {
    let options = IndexOptions::from_options(&schema.options).map_err(|why| {
        StorageError::InvalidSchema(format!("file index options of this table: {why}"))
    })?;
    let Some(options) = options else {
        return Ok(None);
    };
    let mut entries = Vec::new();
    for c in &options.bloom {
        let Some(at) = schema.field_index(&c.name) else {
            return Err(StorageError::InvalidSchema(format!(
                "column {} of file-index.bloom-filter.columns does not exist",
                c.name
            )));
        };
        let field = &schema.fields[at];
        let mut filter = BloomFilter64::new(c.items, c.fpp);
        add_column(&mut filter, &values[at], field)?;
        entries.push(IndexEntry {
            column: c.name.clone(),
            index_type: BLOOM_FILTER.to_owned(),
            body: Some(filter.to_bytes()),
        });
    }
    let bytes = write_container(&entries)?;
    Ok(Some(BuiltIndex {
        embedded: bytes.len() <= options.in_manifest_threshold,
        bytes,
    }))
}

/// Adds the non-null values of `array` (column `field`) to `filter`.
fn add_column(filter: &mut BloomFilter64, array: &ArrayRef, field: &DataField) -> Result<()> {
    let ty = &field.data_type;
    if !hashable(ty) {
        return Err(StorageError::Unsupported(format!(
            "column {} of type {ty} cannot have a bloom-filter file index",
            field.name
        )));
    }
    match (array.data_type(), &ty.kind) {
        (ArrowType::Utf8, TypeKind::Char(_) | TypeKind::VarChar(_)) => {
            for s in array.as_string::<i32>().iter().flatten() {
                filter.add_hash(bytes_hash(s.as_bytes()));
            }
        }
        (ArrowType::Int32, TypeKind::Int) => {
            for v in array.as_primitive::<Int32Type>().iter().flatten() {
                filter.add_hash(long_hash(v as i64));
            }
        }
        (ArrowType::Int64, TypeKind::BigInt) => {
            for v in array.as_primitive::<Int64Type>().iter().flatten() {
                filter.add_hash(long_hash(v));
            }
        }
        _ => {
            for row in 0..array.len() {
                if let Some(h) = hash_datum(&Datum::from_array(array, row, ty)?, ty) {
                    filter.add_hash(h);
                }
            }
        }
    }
    Ok(())
}

/// Name of the index file of data file `name`.
pub fn index_file_name(name: &str) -> String {
    format!("{name}{INDEX_FILE_SUFFIX}")
}

// --- reading and testing ---------------------------------------------------------------------

/// A data file's decoded bloom filters by column (other index types are not read).
#[derive(Debug, Default)]
pub struct FileIndex {
    bloom: HashMap<String, BloomFilter64>,
}

impl FileIndex {
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut bloom = HashMap::new();
        for e in read_container(bytes)? {
            if e.index_type == BLOOM_FILTER
                && let Some(body) = e.body
            {
                bloom.insert(e.column, BloomFilter64::from_bytes(&body)?);
            }
        }
        Ok(Self { bloom })
    }

    /// Whether column `column` of the file may hold `value` (of type `ty`): `false` only when
    /// its bloom filter rules the value out.
    pub fn may_contain(&self, column: &str, ty: &PaimonType, value: &Datum) -> bool {
        match (self.bloom.get(column), hash_datum(value, ty)) {
            (Some(filter), Some(hash)) => filter.test_hash(hash),
            _ => true,
        }
    }

    /// Bytes the decoded index holds (its weight in the cache).
    pub fn weight(&self) -> usize {
        self.bloom
            .values()
            .map(|f| f.byte_len() + 64)
            .sum::<usize>()
            + 64
    }
}

/// Whether rows of a file may satisfy `predicate`, as far as equalities and IN lists on columns
/// `test` knows say (`test(column, value)`: may the file hold `value` there).
pub fn may_match(predicate: &Predicate, test: &impl Fn(&str, &Datum) -> bool) -> bool {
    match predicate {
        Predicate::Compare {
            column,
            op: CmpOp::Eq,
            value,
        } => test(column, value),
        Predicate::In { column, values } => values.iter().any(|v| test(column, v)),
        Predicate::And(ps) => ps.iter().all(|p| may_match(p, test)),
        Predicate::Or(ps) => ps.iter().any(|p| may_match(p, test)),
        _ => true,
    }
}

/// Columns `predicate` compares by equality or IN somewhere.
pub fn equality_columns<'a>(predicate: &'a Predicate, out: &mut Vec<&'a str>) {
    match predicate {
        Predicate::Compare {
            column,
            op: CmpOp::Eq,
            ..
        }
        | Predicate::In { column, .. } => out.push(column),
        Predicate::And(ps) | Predicate::Or(ps) => ps.iter().for_each(|p| equality_columns(p, out)),
        _ => {}
    }
}

/// The `.index` extra file of a data file, if it has one.
pub fn index_file_of(f: &DataFileMeta) -> Option<&str> {
    f.extra_files
        .iter()
        .find(|n| n.ends_with(INDEX_FILE_SUFFIX))
        .map(String::as_str)
}

#[cfg(test)]
#[path = "file_index_tests.rs"]
mod tests;
