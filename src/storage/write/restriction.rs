//! Which tables tarn can write: the merge options, file format, bucket modes and column types
//! its writers handle. Every writer (a transaction, COPY, a compaction, restore) asks here
//! before it writes anything, and so does DDL before it creates a table.

use crate::storage::StorageError;
use crate::storage::lsm::merge_engine::MergeOptions;
use crate::storage::meta::table::Table;
use crate::storage::spec::options::changelog_restriction;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::TypeKind;

/// Fails with [`StorageError::ReadOnly`] unless tarn can write this table.
pub fn check_writable(table: &Table) -> Result<(), StorageError> {
    match write_restriction(table.schema()) {
        None => Ok(()),
        Some(reason) => Err(StorageError::ReadOnly {
            table: table.name().to_owned(),
            reason,
        }),
    }
}

/// Why tarn cannot write tables with this schema, if it cannot.
pub fn write_restriction(schema: &TableSchema) -> Option<String> {
    // Writes fold a key's versions with the merge function reads use (`memrun::fold_runs`):
    // whatever merge options tarn reads, it writes.
    if let Err(reason) = MergeOptions::from_schema(schema) {
        return Some(reason);
    }
    if let Some(format) = schema.core_options().file_format()
        && !format.eq_ignore_ascii_case("parquet")
    {
        return Some(format!(
            "tarn writes Parquet data files only, and the table sets file.format '{format}'"
        ));
    }
    let bucket = schema.bucket();
    if schema.has_primary_key() && bucket == -1 {
        if let Some(reason) = crate::storage::write::dynamic_bucket::write_restriction(schema) {
            return Some(reason);
        }
    } else if schema.has_primary_key() && bucket <= 0 {
        return Some(format!(
            "primary-key tables with bucket = {bucket} (postponed buckets) are not supported \
             for writing yet; use a fixed bucket count or dynamic buckets (bucket = -1)"
        ));
    }
    if !schema.has_primary_key() && bucket > 0 {
        return Some(format!(
            "append tables with fixed buckets (bucket = {bucket}) are not supported for writing \
             yet; tarn writes bucket-unaware append tables (bucket = -1)"
        ));
    }
    if !schema.has_primary_key() && schema.core_options().deletion_vectors_enabled() {
        return Some(
            "deletion vectors on append tables (without a primary key) are not supported for \
             writing yet"
                .to_owned(),
        );
    }
    if let Some(reason) = changelog_restriction(schema) {
        return Some(reason);
    }
    for f in &schema.fields {
        if let Err(e) = f.data_type.to_arrow() {
            return Some(format!("column \"{}\": {e}", f.name));
        }
        if matches!(f.data_type.kind, TypeKind::Map(..) | TypeKind::Row(_)) {
            return Some(format!(
                "column \"{}\" of type {} cannot be written by tarn yet",
                f.name, f.data_type
            ));
        }
    }
    None
}
