//! Which rows of a snapshot's data files are deleted by deletion vectors, and reads that skip
//! them.
//!
//! A table with `deletion-vectors.enabled` keeps, per bucket, one `DELETION_VECTORS` index file
//! listed in the snapshot's index manifest: for each data file with deleted rows, a bitmap of
//! their positions (see `deletion_vector.rs`). Compaction writes them (merge-on-write: see
//! `lookup.rs`), so that in levels >= 1 every key has at most one row that is not deleted and
//! Paimon's readers read those levels without merging. tarn's own reads still merge every level
//! (level 0 included: read-your-writes), with each file's deleted rows left out first.
//!
//! A data file's vector depends on the snapshot (later compactions delete more of its rows),
//! so the vectors travel with the snapshot: [`DeletionIndex`] is one snapshot's index manifest,
//! and a [`Split`] carries its bucket's [`BucketDeletions`]. Index
//! manifests and index files never change once written, so both are cached by file name.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::storage::StorageError;
use crate::storage::io::heap_size::{ARC_HEADER, HeapSize, arc_size, hash_table_size};
use crate::storage::lsm::live_files::BucketId;
use crate::storage::lsm::lookup::Found;
use crate::storage::lsm::split::Split;
use crate::storage::meta::deletion_vector::{self, DeletionVector};
use crate::storage::meta::index_manifest::{
    self, DELETION_VECTORS_INDEX, DeletionVectorMeta, IndexFileMeta, IndexManifestEntry,
};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::FileKind;

/// Where one data file's deletion vector is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct DeletionFile {
    /// The index file (under `index/`), shared by the data files it holds vectors of.
    pub index_file: Arc<IndexFileMeta>,
    pub meta: DeletionVectorMeta,
}

/// The deletion vectors of one bucket in one snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BucketDeletions {
    /// The bucket's `DELETION_VECTORS` index manifest entries (one, as Paimon writes them).
    pub entries: Vec<IndexManifestEntry>,
    /// By data file name.
    pub files: HashMap<String, DeletionFile>,
}

impl BucketDeletions {
    pub fn get(&self, data_file: &str) -> Option<&DeletionFile> {
        self.files.get(data_file)
    }

    /// Rows deleted in `data_file` (as the index manifest records them).
    pub fn deleted_rows(&self, data_file: &str) -> i64 {
        self.files
            .get(data_file)
            .and_then(|f| f.meta.cardinality)
            .unwrap_or(0)
    }
}

impl HeapSize for DeletionFile {
    /// The index file's description is shared by every data file of the bucket: counted by
    /// [`BucketDeletions`], once.
    fn heap_size(&self) -> usize {
        self.meta.heap_size()
    }
}

impl HeapSize for BucketDeletions {
    fn heap_size(&self) -> usize {
        let shared_index_files: usize = self
            .entries
            .iter()
            .map(|e| {
                ARC_HEADER
                    + std::mem::size_of::<IndexFileMeta>()
                    + e.index_file.index_type.heap_size()
                    + e.index_file.file_name.heap_size()
            })
            .sum();
        self.entries.heap_size() + self.files.heap_size() + shared_index_files
    }
}

impl HeapSize for DeletionIndex {
    fn heap_size(&self) -> usize {
        // The map's slots, then each bucket's value behind its `Arc`.
        let slots = hash_table_size(
            self.buckets.capacity(),
            std::mem::size_of::<(BucketId, Arc<BucketDeletions>)>(),
        );
        self.entries.heap_size()
            + slots
            + self
                .buckets
                .iter()
                .map(|(k, v)| k.heap_size() + arc_size(v.as_ref()))
                .sum::<usize>()
    }
}

/// One snapshot's index manifest: deletion vectors by bucket, and every entry (other index
/// types included, which a commit carries over untouched).
#[derive(Debug, Clone, Default)]
pub struct DeletionIndex {
    pub entries: Vec<IndexManifestEntry>,
    buckets: HashMap<BucketId, Arc<BucketDeletions>>,
}

impl DeletionIndex {
    fn from_entries(entries: Vec<IndexManifestEntry>) -> Self {
        let mut buckets: HashMap<BucketId, BucketDeletions> = HashMap::new();
        for e in &entries {
            if e.index_file.index_type != DELETION_VECTORS_INDEX {
                continue;
            }
            let bucket = buckets.entry((e.partition.clone(), e.bucket)).or_default();
            bucket.entries.push(e.clone());
            let index_file = Arc::new(IndexFileMeta {
                dv_ranges: None,
                ..e.index_file.clone()
            });
            for meta in e.index_file.dv_ranges.iter().flatten() {
                bucket.files.insert(
                    meta.data_file_name.clone(),
                    DeletionFile {
                        index_file: Arc::clone(&index_file),
                        meta: meta.clone(),
                    },
                );
            }
        }
        Self {
            entries,
            buckets: buckets.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        }
    }

    pub fn bucket(&self, at: &BucketId) -> Option<Arc<BucketDeletions>> {
        self.buckets.get(at).cloned()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

impl Table {
    /// The deletion vectors of `snapshot` (empty without an index manifest).
    pub async fn deletion_index(
        &self,
        snapshot: &Snapshot,
    ) -> Result<Arc<DeletionIndex>, StorageError> {
        match &snapshot.index_manifest {
            None => Ok(Arc::new(DeletionIndex::default())),
            Some(name) => self.index_manifest(name).await,
        }
    }

    async fn index_manifest(&self, name: &str) -> Result<Arc<DeletionIndex>, StorageError> {
        let caches = self.shared().lsm_caches();
        let cache = &caches.deletion_indexes;
        if let Some(index) = cache.get(name) {
            return Ok(index);
        }
        let entries =
            index_manifest::read_index_manifest_file(self.io(), self.path(), name).await?;
        let index = Arc::new(DeletionIndex::from_entries(entries));
        cache.put(name, Arc::clone(&index), arc_size(index.as_ref()));
        Ok(index)
    }

    /// Every entry of the index manifest `name`.
    pub(crate) async fn read_index_entries(
        &self,
        name: &str,
    ) -> Result<Vec<IndexManifestEntry>, StorageError> {
        Ok(self.index_manifest(name).await?.entries.clone())
    }

    /// The index manifest `name`, `None` if it is gone (expired by another process).
    async fn index_manifest_named(
        &self,
        name: &str,
    ) -> Result<Option<Arc<DeletionIndex>>, StorageError> {
        match self.index_manifest(name).await {
            Ok(index) => Ok(Some(index)),
            Err(e) if e.is_missing_file() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The deletion vector stored at `file` (only its bytes are read).
    pub async fn deletion_vector(
        &self,
        file: &DeletionFile,
    ) -> Result<Arc<DeletionVector>, StorageError> {
        let key = format!("{}@{}", file.index_file.file_name, file.meta.offset);
        let cache = &self.shared().deletion_vectors;
        if let Some(dv) = cache.get(&key) {
            return Ok(dv);
        }
        let path = deletion_vector::index_file_path(self.path(), &file.index_file)?;
        let range = deletion_vector::byte_range(&file.meta)?;
        let bytes = self
            .io()
            .read_range(&path, range.start as u64..range.end as u64)
            .await?;
        let dv = Arc::new(deletion_vector::read_range(&bytes, &file.meta)?);
        cache.put(&key, Arc::clone(&dv), arc_size(dv.as_ref()));
        Ok(dv)
    }
}

/// How a compaction changes its bucket's deletion vectors.
#[derive(Debug, Clone)]
pub struct DeletionChange {
    /// The bucket's index entries replaced.
    pub removed: Vec<IndexManifestEntry>,
    /// Its new index file, unless no vector is left.
    pub added: Option<IndexManifestEntry>,
    /// Data files whose vectors gained positions (they must still be live at commit).
    pub marked: Vec<String>,
}

impl Table {
    /// Writes the vectors of bucket `split` after a compaction: those of `current` whose data
    /// files stay live (`live_after`), extended by the rows `found` deleted. `None` when
    /// nothing changes.
    pub(crate) async fn write_bucket_deletions(
        &self,
        split: &Split,
        current: Option<&BucketDeletions>,
        live_after: &HashSet<String>,
        found: &Found,
    ) -> Result<Option<DeletionChange>, StorageError> {
        let mut vectors: BTreeMap<String, DeletionVector> = BTreeMap::new();
        let mut dropped = false;
        if let Some(current) = current {
            dropped = current.files.keys().any(|name| !live_after.contains(name));
            // Each index file read once for the vectors that stay.
            for e in &current.entries {
                let keep = current
                    .files
                    .iter()
                    .filter(|(name, at)| {
                        live_after.contains(*name)
                            && at.index_file.file_name == e.index_file.file_name
                    })
                    .map(|(name, _)| name.as_str());
                vectors.extend(
                    deletion_vector::read_deletion_vectors(
                        self.io(),
                        self.path(),
                        &e.index_file,
                        keep,
                    )
                    .await?,
                );
            }
        }
        let mut marked = Vec::new();
        for (name, positions) in found {
            let dv = vectors.entry(name.clone()).or_default();
            let mut grew = false;
            for &p in positions {
                grew |= dv.delete(p)?;
            }
            if grew {
                marked.push(name.clone());
            }
        }
        if !dropped && marked.is_empty() {
            return Ok(None);
        }
        vectors.retain(|_, dv| !dv.is_empty());
        let added = if vectors.is_empty() {
            None
        } else {
            let list: Vec<(&str, &DeletionVector)> =
                vectors.iter().map(|(k, v)| (k.as_str(), v)).collect();
            let meta = deletion_vector::write_index_file(
                self.io(),
                self.path(),
                &self.shared().index_file_names,
                &list,
            )
            .await?;
            Some(IndexManifestEntry {
                kind: FileKind::Add,
                partition: split.partition_bytes.clone(),
                bucket: split.bucket,
                index_file: meta,
            })
        };
        Ok(Some(DeletionChange {
            removed: current.map(|c| c.entries.clone()).unwrap_or_default(),
            added,
            marked,
        }))
    }

    /// Writes the index manifest of `base` with `change` applied; `None` when no index file
    /// is left.
    pub(crate) async fn write_index_manifest(
        &self,
        base: &DeletionIndex,
        change: &DeletionChange,
    ) -> Result<Option<String>, StorageError> {
        let mut changes: Vec<IndexManifestEntry> = change
            .removed
            .iter()
            .map(|e| IndexManifestEntry {
                kind: FileKind::Delete,
                ..e.clone()
            })
            .collect();
        changes.extend(change.added.iter().cloned());
        let entries = index_manifest::combine(base.entries.clone(), changes);
        if entries.is_empty() {
            return Ok(None);
        }
        let name =
            index_manifest::write_index_manifest_file(self.io(), self.path(), &entries).await?;
        Ok(Some(name))
    }

    /// Deletes the index file a compaction wrote but did not commit.
    pub(crate) async fn delete_index_files(&self, change: &DeletionChange) {
        if let Some(added) = &change.added {
            let path = deletion_vector::index_path(self.path(), &added.index_file.file_name);
            let _ = self.io().delete(&path).await;
        }
    }
}

/// The index files (deletion vectors, any index type) that the index manifests of `doomed`
/// list and those of `keep` do not.
pub(crate) async fn unreferenced_index_files<'a, 'b>(
    table: &Table,
    doomed: impl IntoIterator<Item = &'b Snapshot>,
    keep: impl Iterator<Item = &'a Arc<Snapshot>>,
) -> Result<BTreeSet<String>, StorageError> {
    let doomed: BTreeSet<&str> = doomed
        .into_iter()
        .filter_map(|s| s.index_manifest.as_deref())
        .collect();
    let keep: BTreeSet<String> = keep.filter_map(|s| s.index_manifest.clone()).collect();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for m in doomed.iter().filter(|m| !keep.contains(**m)) {
        if let Some(index) = table.index_manifest_named(m).await? {
            names.extend(index.entries.iter().map(|e| e.index_file.file_name.clone()));
        }
    }
    for m in &keep {
        if names.is_empty() {
            break;
        }
        if let Some(index) = table.index_manifest_named(m).await? {
            for e in &index.entries {
                names.remove(&e.index_file.file_name);
            }
        }
    }
    Ok(names)
}

/// `rows` (a data file's rows in file order, from position 0) without the positions `dv`
/// deletes.
pub fn skip_deleted(
    rows: BoxStream<'static, Result<RecordBatch, StorageError>>,
    dv: Arc<DeletionVector>,
) -> BoxStream<'static, Result<RecordBatch, StorageError>> {
    let mut position: u64 = 0;
    rows.map(move |batch| {
        let batch = batch?;
        let start = position;
        position += batch.num_rows() as u64;
        let keep: BooleanArray = (start..position).map(|p| Some(!dv.is_deleted(p))).collect();
        if keep.true_count() == batch.num_rows() {
            return Ok(batch);
        }
        Ok(filter_record_batch(&batch, &keep)?)
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};
    use futures::TryStreamExt;

    #[tokio::test]
    async fn deleted_positions_are_skipped_across_batches() {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let batch = |from: i64, n: i64| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(Int64Array::from_iter_values(from..from + n))],
            )
            .unwrap()
        };
        let mut dv = DeletionVector::new();
        for p in [0u64, 3, 4, 7, 9] {
            dv.delete(p).unwrap();
        }
        let rows =
            futures::stream::iter(vec![Ok(batch(0, 5)), Ok(batch(5, 2)), Ok(batch(7, 3))]).boxed();
        let out: Vec<RecordBatch> = skip_deleted(rows, Arc::new(dv))
            .try_collect()
            .await
            .unwrap();
        let values: Vec<i64> = out
            .iter()
            .flat_map(|b| {
                let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                (0..a.len()).map(|i| a.value(i)).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(values, vec![1, 2, 5, 6, 8]);
    }
}
