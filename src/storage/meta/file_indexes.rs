//! Pruning a scan's live files with their data-file indexes (`file-index.bloom-filter.columns`,
//! the format in `spec/file_index.rs`): for a predicate on primary-key columns, a file whose
//! bloom filter rules out every `=`/`IN` value of a key column is skipped. A file's index is
//! embedded in its manifest entry or stored as `<data file>.index` beside it; decoded indexes are
//! cached by file name (files never change), and an index that is missing or unreadable skips
//! nothing.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};

use crate::storage::StorageError;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::file_index::{
    FileIndex, equality_columns, index_file_of, may_match, prunable, read_enabled, same_hashing,
};
use crate::storage::spec::manifest::ManifestEntry;
use crate::storage::spec::predicate::Predicate;
use crate::storage::spec::types::PaimonType;

type Result<T> = std::result::Result<T, StorageError>;

/// The live `entries` of a primary-key table whose file indexes do not rule out `key` (a
/// predicate on the table's key columns), and how many were skipped.
pub(crate) async fn prune(
    table: &Table,
    entries: Vec<ManifestEntry>,
    key: &Predicate,
) -> Result<(Vec<ManifestEntry>, usize)> {
    let schema = table.schema();
    let keys = schema.trimmed_primary_keys();
    let mut columns = Vec::new();
    equality_columns(key, &mut columns);
    columns.retain(|c| keys.iter().any(|k| k == c) && prunable(schema.type_of(c)));
    columns.sort_unstable();
    columns.dedup();
    let indexed = |e: &ManifestEntry| {
        e.file.embedded_file_index.is_some() || index_file_of(&e.file).is_some()
    };
    if columns.is_empty()
        || !schema.has_primary_key()
        || !read_enabled(schema)
        || !entries.iter().any(indexed)
    {
        return Ok((entries, 0));
    }
    let columns = &columns;
    let checked: Vec<(ManifestEntry, bool)> = stream::iter(entries)
        .map(|e| async move {
            let keep = entry_may_match(table, &e, key, columns).await?;
            Ok::<_, StorageError>((e, keep))
        })
        .buffered(8)
        .try_collect()
        .await?;
    let before = checked.len();
    let kept: Vec<ManifestEntry> = checked
        .into_iter()
        .filter_map(|(e, keep)| keep.then_some(e))
        .collect();
    let skipped = before - kept.len();
    Ok((kept, skipped))
}

async fn entry_may_match(
    table: &Table,
    e: &ManifestEntry,
    predicate: &Predicate,
    columns: &[&str],
) -> Result<bool> {
    let f = &e.file;
    if f.embedded_file_index.is_none() && index_file_of(f).is_none() {
        return Ok(true);
    }
    // Each column by its name in the file's schema (same field id), if its index answers for
    // values of the column's type now.
    let schema = table.schema();
    let file_schema = if f.schema_id == schema.id {
        Arc::clone(schema)
    } else {
        table.schema_by_id(f.schema_id).await?
    };
    let names: Vec<(&str, String, &PaimonType)> = columns
        .iter()
        .filter_map(|&c| {
            let now = schema.field(c)?;
            let then = file_schema.field_by_id(now.id)?;
            same_hashing(&then.data_type, &now.data_type)
                .then(|| (c, then.name.clone(), &now.data_type))
        })
        .collect();
    if names.is_empty() {
        return Ok(true);
    }
    let Some(index) = load(table, e).await? else {
        return Ok(true);
    };
    Ok(may_match(predicate, &|column, value| {
        names
            .iter()
            .find(|(c, _, _)| *c == column)
            .is_none_or(|(_, name, ty)| index.may_contain(name, ty, value))
    }))
}

/// The decoded index of an entry's file (cached by name), `None` when it has none or it cannot
/// be read (then nothing is skipped).
async fn load(table: &Table, e: &ManifestEntry) -> Result<Option<Arc<FileIndex>>> {
    let f = &e.file;
    let cache = &table.shared().file_indexes;
    let (key, bytes) = if let Some(bytes) = &f.embedded_file_index {
        if let Some(hit) = cache.get(&f.file_name) {
            return Ok(Some(hit));
        }
        (
            f.file_name.clone(),
            Some(bytes::Bytes::copy_from_slice(bytes)),
        )
    } else {
        let Some(name) = index_file_of(f) else {
            return Ok(None);
        };
        if f.external_path.is_some() {
            return Ok(None);
        }
        if let Some(hit) = cache.get(name) {
            return Ok(Some(hit));
        }
        let partition = binary_row::deserialize(&e.partition, &table.partition_types())?;
        let dirs = [
            Some(table.bucket_path(&partition, e.bucket)),
            table.alternate_bucket_path(&partition, e.bucket),
        ];
        let mut found = None;
        for dir in dirs.into_iter().flatten() {
            if let Some(b) = table.io().read_if_exists(&dir.join(name)).await? {
                found = Some(b);
                break;
            }
        }
        (name.to_owned(), found)
    };
    let Some(bytes) = bytes else {
        tracing::warn!(table = %table.qualified_name(), file = %key, "file index missing");
        return Ok(None);
    };
    let index = FileIndex::decode(&bytes).unwrap_or_else(|err| {
        tracing::warn!(table = %table.qualified_name(), file = %key, %err, "unreadable file index");
        FileIndex::default()
    });
    let weight = index.weight();
    let index = Arc::new(index);
    cache.put(&key, Arc::clone(&index), weight);
    Ok(Some(index))
}
