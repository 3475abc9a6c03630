//! Reads by key: the versions of a few given primary keys in a bucket's data files, without
//! reading the files whole.
//!
//! A point lookup (`WHERE k = $1`, `k IN (…)`, every key column pinned) needs, per sorted run,
//! only the rows of its keys. For each data file the scan plan kept (bucket, key statistics and
//! file indexes already applied): the keys outside the file's min/max key are dropped — a file
//! without any is not opened at all; then the file's page fences (`fences.rs`: each page's
//! first key, cached) name the one page that can hold each key. The file's footer is cached
//! (kind `footer`, with the offset index that places each page), and each page a lookup
//! touches is decoded once into a batch cached by (file, first row, layout) (kind `page`), so
//! a warm lookup costs two binary searches (fences, then the page's sorted keys) and a `take`;
//! the rows its deletion vector deletes are dropped. A file whose fences the budget cannot
//! hold is read whole and filtered by key.
//!
//! What comes out is, per file, its rows of the wanted keys in key order: a sorted run like
//! the whole file's, so the merge (`merge.rs`, the table's merge engine) gives each key exactly
//! the result a full scan gives it — the merge is a pure function of a key's versions.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, filter_record_batch, take_record_batch};
use futures::{StreamExt, TryStreamExt};
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{self, ReadLayout};
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::memrun::MemRun;
use crate::storage::lsm::merge::RunStream;
use crate::storage::lsm::split::{Split, compare_keys};
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::DataFileMeta;

/// The keys a read by key wants, and what it read (for `EXPLAIN ANALYZE`).
pub struct KeyQuery {
    /// Full trimmed primary keys, in key-column order.
    keys: Vec<Vec<Datum>>,
    /// The same keys in the encoder's comparable bytes.
    encoded: Vec<Vec<u8>>,
    encoded_set: HashSet<Vec<u8>>,
    encoder: KeyEncoder,
    pub stats: KeyReadStats,
}

impl std::fmt::Debug for KeyQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyQuery")
            .field("keys", &self.keys)
            .field("stats", &self.stats)
            .finish()
    }
}

/// Counters of one read by key, over all its splits.
#[derive(Debug, Default)]
pub struct KeyReadStats {
    /// Data files the lookup considered (those the scan plan kept).
    pub files: AtomicU64,
    /// Files it read rows from (the others cannot hold a wanted key).
    pub files_read: AtomicU64,
    /// Pages decoded from files.
    pub pages_read: AtomicU64,
    /// Pages found decoded in the page cache.
    pub pages_cached: AtomicU64,
    /// Files too large for a cached key map, read whole.
    pub files_scanned: AtomicU64,
}

impl KeyReadStats {
    /// `files=…, files_read=…, pages_read=…, pages_cached=…[, files_scanned=…]`.
    pub fn summary(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut s = format!(
            "files={}, files_read={}, pages_read={}, pages_cached={}",
            get(&self.files),
            get(&self.files_read),
            get(&self.pages_read),
            get(&self.pages_cached)
        );
        if get(&self.files_scanned) > 0 {
            s.push_str(&format!(", files_scanned={}", get(&self.files_scanned)));
        }
        s
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl KeyQuery {
    /// How many keys are wanted.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Keeps the rows of `batch` (key columns first) whose key is wanted.
    fn filter(&self, batch: &RecordBatch) -> Result<RecordBatch, StorageError> {
        let rows = self.encoder.encode(batch.columns())?;
        let keep: BooleanArray = rows
            .iter()
            .map(|r| Some(self.encoded_set.contains(r.as_ref())))
            .collect();
        Ok(filter_record_batch(batch, &keep)?)
    }

    /// The wanted keys in the key encoder's comparable bytes (what a transaction's MemTable
    /// is keyed by).
    pub fn encoded(&self) -> &[Vec<u8>] {
        &self.encoded
    }

    /// The positions of `run`'s rows whose key is wanted (for its `stream`'s `only`),
    /// ascending. A run is sorted by key in the encoder's byte order, so a few keys in a long
    /// run are found by binary search (a handful of one-row encodings each) instead of
    /// encoding the whole run: a point read through a large transaction or a large unflushed
    /// commit stays O(log n).
    pub(crate) fn positions_in(&self, run: &MemRun) -> Result<Vec<u32>, StorageError> {
        let wanted: Vec<&[u8]> = self.encoded.iter().map(Vec::as_slice).collect();
        self.positions_in_sorted(&run.keys, &wanted)
    }

    /// The rows of `keys` (sorted key columns) whose key is one of `wanted`, ascending.
    fn positions_in_sorted(
        &self,
        keys: &[ArrayRef],
        wanted: &[&[u8]],
    ) -> Result<Vec<u32>, StorageError> {
        let found = self.encoder.find_sorted(keys, wanted)?;
        Ok(found.into_iter().map(|(row, _)| row).collect())
    }
}

impl Table {
    /// A read of `keys` (each a full trimmed primary key of this table, its values of the key
    /// columns' types).
    pub fn key_query(&self, keys: Vec<Vec<Datum>>) -> Result<KeyQuery, StorageError> {
        let encoder = KeyEncoder::new(self)?;
        let key_types = self.key_types();
        if encoder.is_empty() || keys.iter().any(|k| k.len() != key_types.len()) {
            return Err(StorageError::Internal(
                "a read by key needs every primary-key column".into(),
            ));
        }
        let columns: Vec<ArrayRef> = key_types
            .iter()
            .enumerate()
            .map(|(i, ty)| {
                let column: Vec<Datum> = keys.iter().map(|k| k[i].clone()).collect();
                Datum::to_column(&column, ty)
            })
            .collect::<Result<_, _>>()?;
        let rows = if keys.is_empty() {
            Vec::new()
        } else {
            let rows = encoder.encode(&columns)?;
            rows.iter().map(|r| r.as_ref().to_vec()).collect()
        };
        Ok(KeyQuery {
            encoded_set: rows.iter().cloned().collect(),
            encoded: rows,
            keys,
            encoder,
            stats: KeyReadStats::default(),
        })
    }

    /// The rows of `file` (of `split`'s bucket) whose key `query` wants, in `layout`, without
    /// those the split's deletion vectors delete: a sorted run.
    pub(crate) async fn open_data_file_at_keys(
        &self,
        split: &Split,
        file: &DataFileMeta,
        layout: &ReadLayout,
        query: &Arc<KeyQuery>,
    ) -> Result<RunStream, StorageError> {
        bump(&query.stats.files);
        let key_types = self.key_types();
        let lo = binary_row::deserialize(&file.min_key, &key_types)?;
        let hi = binary_row::deserialize(&file.max_key, &key_types)?;
        let in_range: Vec<usize> = (0..query.keys.len())
            .filter(|&i| {
                let k = &query.keys[i];
                lo.len() != k.len()
                    || (compare_keys(k, &lo).is_ge() && compare_keys(k, &hi).is_le())
            })
            .collect();
        if in_range.is_empty() {
            return Ok(futures::stream::empty().boxed());
        }
        let footer = self.footer(split, file).await?;
        let Some(fences) = self
            .page_fences_within_budget(split, file, &footer, &query.encoder)
            .await?
        else {
            // Too many pages to keep fences of: the whole file, filtered.
            bump(&query.stats.files_scanned);
            bump(&query.stats.files_read);
            let rows = self.open_data_file(split, file, layout).await?;
            let query = Arc::clone(query);
            return Ok(rows.map(move |b| query.filter(&b?)).boxed());
        };
        // The pages that can hold each key, and the keys wanted of each page.
        let mut wanted: BTreeMap<usize, Vec<&[u8]>> = BTreeMap::new();
        for &i in &in_range {
            for page in fences.pages_of(&query.encoded[i]) {
                wanted.entry(page).or_default().push(&query.encoded[i]);
            }
        }
        if wanted.is_empty() {
            return Ok(futures::stream::empty().boxed());
        }
        let deletions = match split
            .deletions
            .as_ref()
            .and_then(|d| d.get(&file.file_name))
        {
            Some(at) => Some(self.deletion_vector(at).await?),
            None => None,
        };
        let signature = layout_signature(layout);
        let keys = layout.keys.len();
        let mut out: Vec<RecordBatch> = Vec::new();
        for (page, keys_here) in wanted {
            let range = fences.page(page);
            let batch = self
                .page(
                    file,
                    &footer,
                    range.clone(),
                    layout,
                    &signature,
                    &query.stats,
                )
                .await?;
            let mut at = query.positions_in_sorted(&batch.columns()[..keys], &keys_here)?;
            if let Some(dv) = &deletions {
                at.retain(|&p| !dv.is_deleted(range.start + u64::from(p)));
            }
            if !at.is_empty() {
                out.push(take_record_batch(&batch, &UInt32Array::from(at))?);
            }
        }
        if !out.is_empty() {
            bump(&query.stats.files_read);
        }
        Ok(futures::stream::iter(out.into_iter().map(Ok)).boxed())
    }

    /// Rows `range` of `file` in `layout`, decoded once and cached.
    pub(crate) async fn page(
        &self,
        file: &DataFileMeta,
        footer: &data_file::Footer,
        range: std::ops::Range<u64>,
        layout: &ReadLayout,
        signature: &str,
        stats: &KeyReadStats,
    ) -> Result<RecordBatch, StorageError> {
        let cache = &self.shared().lsm_caches().pages;
        let name = format!("{}@{}:{signature}", file.file_name, range.start);
        if let Some(batch) = cache.get(&name) {
            bump(&stats.pages_cached);
            return Ok(batch);
        }
        bump(&stats.pages_read);
        let starts = footer.row_group_starts();
        let group = starts
            .windows(2)
            .position(|w| w[0] <= range.start && range.start < w[1])
            .ok_or_else(|| {
                StorageError::format(format!("data file {} has no such page", file.file_name))
            })?;
        let (group_start, group_end) = (starts[group], starts[group + 1]);
        let mut selectors = Vec::with_capacity(3);
        if range.start > group_start {
            selectors.push(RowSelector::skip((range.start - group_start) as usize));
        }
        selectors.push(RowSelector::select((range.end - range.start) as usize));
        if group_end > range.end {
            selectors.push(RowSelector::skip((group_end - range.end) as usize));
        }
        let file_schema = self.schema_by_id(file.schema_id).await?;
        let batches: Vec<RecordBatch> = data_file::read_rows(
            self.io(),
            footer,
            &file_schema,
            layout,
            Some((vec![group], RowSelection::from(selectors))),
        )?
        .try_collect()
        .await?;
        let schema = layout.schema()?;
        let batch = concat_batches(&schema, &batches)?;
        if batch.num_rows() as u64 != range.end - range.start {
            return Err(StorageError::format(format!(
                "data file {} gave {} rows for rows {range:?}",
                file.file_name,
                batch.num_rows()
            )));
        }
        cache.put(&name, batch.clone(), batch.get_array_memory_size());
        Ok(batch)
    }
}

/// What identifies a layout's decoded columns: field ids, names and types of the key and
/// value columns (the system columns are always there). Names too: a batch decoded before a
/// column was renamed carries the old name in its Arrow schema.
pub(crate) fn layout_signature(layout: &ReadLayout) -> String {
    let mut s = String::new();
    for f in layout.keys.iter().chain(&layout.values) {
        s.push_str(&format!("{}:{:?}:{};", f.id, f.name, f.data_type));
    }
    s
}
