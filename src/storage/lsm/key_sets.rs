//! Key sets of data files: which primary keys a file holds, in one comparable byte encoding.
//!
//! Duplicate-key checks (INSERT) and write-conflict checks (commits since a transaction's
//! snapshot) ask "does this file hold any of these keys?" about the same recent files over and
//! over. Data files are immutable, so each table keeps the key sets it has read in a cache on the
//! warehouse's budget (`io::cache_budget`, weighed in bytes): a file's key column is read once,
//! later checks are hash lookups. Files whose key set would be too large for the budget are read
//! each time (compaction makes such files; point lookups into them are for file indexes to
//! serve).

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::Fields;
use arrow::row::{RowConverter, Rows, SortField};
use futures::StreamExt;

use crate::storage::StorageError;
use crate::storage::io::heap_size::arc_size;
use crate::storage::lsm::data_file::ReadLayout;
use crate::storage::lsm::split::Split;
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::DataFileMeta;

/// Encodes a table's primary-key columns as comparable rows (the same bytes for the same key
/// whatever Arrow type the columns arrived in).
pub(crate) struct KeyEncoder {
    converter: RowConverter,
    fields: Fields,
    layout: ReadLayout,
}

impl KeyEncoder {
    pub(crate) fn new(table: &Table) -> Result<Self, StorageError> {
        let layout = table.read_layout(&[]);
        let schema = layout.schema()?;
        let fields: Fields = schema.fields()[..layout.key_count()]
            .iter()
            .cloned()
            .collect();
        Ok(Self {
            converter: RowConverter::new(
                fields
                    .iter()
                    .map(|f| SortField::new(f.data_type().clone()))
                    .collect(),
            )?,
            fields,
            layout,
        })
    }

    /// The read layout of the key columns alone.
    pub(crate) fn layout(&self) -> &ReadLayout {
        &self.layout
    }

    /// Where `wanted` keys (encoded) are among the rows of `keys` (key columns sorted in this
    /// encoding's byte order, as a data file's or a sorted run's are): `(row, index into
    /// wanted)` for every matching row, by row. Few keys among many rows are found by binary
    /// search, a handful of one-row encodings each; else the rows are encoded whole.
    pub(crate) fn find_sorted(
        &self,
        keys: &[ArrayRef],
        wanted: &[&[u8]],
    ) -> Result<Vec<(u32, usize)>, StorageError> {
        let n = keys.first().map_or(0, |c| c.len());
        if n == 0 || wanted.is_empty() {
            return Ok(Vec::new());
        }
        let per_key = (n.ilog2() as usize + 2) * 8;
        if wanted.len().saturating_mul(per_key) >= n {
            let index: std::collections::HashMap<&[u8], usize> =
                wanted.iter().enumerate().map(|(i, k)| (*k, i)).collect();
            let rows = self.encode(keys)?;
            return Ok(rows
                .iter()
                .enumerate()
                .filter_map(|(r, row)| index.get(row.as_ref()).map(|&i| (r as u32, i)))
                .collect());
        }
        let key_at = |r: usize| -> Result<Vec<u8>, StorageError> {
            let row: Vec<ArrayRef> = keys.iter().map(|c| c.slice(r, 1)).collect();
            Ok(self.encode(&row)?.row(0).as_ref().to_vec())
        };
        let mut out = Vec::new();
        for (i, &want) in wanted.iter().enumerate() {
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if key_at(mid)?.as_slice() < want {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            // A key may have several rows (a run holds each key once; a file may not).
            while lo < n && key_at(lo)? == want {
                out.push((lo as u32, i));
                lo += 1;
            }
        }
        out.sort_unstable();
        out.dedup_by_key(|(r, _)| *r);
        Ok(out)
    }

    /// Whether the table has key columns at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The rows of `columns`: the key columns (leading columns of a batch are fine too).
    pub(crate) fn encode(&self, columns: &[ArrayRef]) -> Result<Rows, StorageError> {
        let keys = crate::storage::lsm::memrun::cast_to_fields(
            columns[..self.fields.len()].to_vec(),
            &self.fields,
        )?;
        Ok(self.converter.convert_columns(&keys)?)
    }
}

impl Table {
    /// Whether the key set of `file` can be cached (else it is read on each use), by an
    /// estimate of its bytes before reading it: per key a hash-table slot or two and the
    /// encoded key, taken as long as the file's longest key bound.
    pub(crate) fn key_set_cacheable(&self, file: &DataFileMeta) -> bool {
        let key_bytes = file.min_key.len().max(file.max_key.len()).max(8);
        let per_key = 2 * (std::mem::size_of::<Vec<u8>>() + 1) + key_bytes;
        usize::try_from(file.row_count).is_ok_and(|n| {
            self.shared()
                .lsm_caches()
                .key_sets
                .admits(n.saturating_mul(per_key))
        })
    }

    /// The keys of data file `file` of `split`'s bucket (every row kind), encoded by `encoder`.
    pub(crate) async fn key_set(
        &self,
        split: &Split,
        file: &DataFileMeta,
        encoder: &KeyEncoder,
    ) -> Result<Arc<HashSet<Vec<u8>>>, StorageError> {
        let caches = self.shared().lsm_caches();
        let cache = &caches.key_sets;
        if let Some(keys) = cache.get(&file.file_name) {
            return Ok(keys);
        }
        let mut keys = HashSet::new();
        // Every key the file holds, deleted rows included: the set is cached by file name
        // while a file's deletion vector grows from snapshot to snapshot.
        let whole = Split {
            deletions: None,
            ..split.clone()
        };
        let mut stream = self.open_data_file(&whole, file, &encoder.layout).await?;
        while let Some(batch) = stream.next().await {
            let rows = encoder.encode(batch?.columns())?;
            keys.extend(rows.iter().map(|r| r.as_ref().to_vec()));
        }
        let keys = Arc::new(keys);
        if self.key_set_cacheable(file) {
            cache.put(&file.file_name, Arc::clone(&keys), arc_size(keys.as_ref()));
        }
        Ok(keys)
    }
}
