//! A bucket's split: the data files of one (partition, bucket) in one snapshot with the
//! bucket's deletion vectors — the unit a scan reads, a compaction rewrites and a write checks
//! keys against — and what a transaction's own writes lay over it ([`Overlay`]).
//!
//! Key order is the LSM tree's: [`compare_keys`] orders keys as Paimon's key comparator, and
//! [`sections`] groups a split's files into runs of overlapping key ranges (Paimon's
//! `IntervalPartition`), oldest run first. Opening a data file of a split skips the rows its
//! deletion vector deletes.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::RecordBatch;
use futures::stream::BoxStream;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{self, ReadLayout};
use crate::storage::lsm::deletions::{self, BucketDeletions};
use crate::storage::lsm::memrun::MemRun;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::{DataFileMeta, ManifestEntry};
use crate::storage::spec::types::PaimonType;

/// Files of one (partition, bucket): the unit of parallelism of a scan.
#[derive(Debug, Clone)]
pub struct Split {
    pub partition: Vec<Datum>,
    pub partition_bytes: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    pub files: Vec<DataFileMeta>,
    /// The bucket's deletion vectors in the planned snapshot (`deletions.rs`).
    pub deletions: Option<Arc<BucketDeletions>>,
}

impl Split {
    pub fn row_count(&self) -> i64 {
        self.files.iter().map(|f| f.row_count).sum()
    }
}

/// What a transaction's reads of one (partition, bucket) add on top of its snapshot.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    /// Spilled runs, oldest first (their sequence numbers are real ones).
    pub files: Vec<DataFileMeta>,
    /// In-memory runs, oldest statement first.
    pub runs: Vec<MemRun>,
    /// Committed transactions' runs not flushed yet (`unflushed.rs`), oldest first, with the
    /// sequence numbers they read with: below `files` and `runs` (which are the reading
    /// transaction's own), above the snapshot's files.
    pub logged: Vec<(i64, MemRun)>,
}

impl Overlay {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.runs.is_empty() && self.logged.is_empty()
    }
}

/// Lexicographic order of two keys.
pub fn compare_keys(a: &[Datum], b: &[Datum]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = x.compare(y);
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// What identifies a data file across ADD and DELETE entries (Paimon's file identifier).
pub(crate) type FileId = (Vec<u8>, i32, i32, String);

pub(crate) fn file_id(e: &ManifestEntry) -> FileId {
    (
        e.partition.clone(),
        e.bucket,
        e.file.level,
        e.file.file_name.clone(),
    )
}

/// Orders files so that runs are oldest first (sequence-number ties go to the newer file),
/// then groups them into sections: sets of files whose key ranges overlap, in key order.
pub(crate) fn sections(
    files: &[DataFileMeta],
    key_types: &[PaimonType],
) -> Result<Vec<Vec<DataFileMeta>>, StorageError> {
    let mut ranged: Vec<(Vec<Datum>, Vec<Datum>, DataFileMeta)> = files
        .iter()
        .map(|f| {
            Ok((
                binary_row::deserialize(&f.min_key, key_types)?,
                binary_row::deserialize(&f.max_key, key_types)?,
                f.clone(),
            ))
        })
        .collect::<Result<_, StorageError>>()?;
    ranged.sort_by(|a, b| compare_keys(&a.0, &b.0));
    let mut out: Vec<Vec<DataFileMeta>> = Vec::new();
    let mut section_max: Option<Vec<Datum>> = None;
    for (min, max, f) in ranged {
        let overlaps = section_max
            .as_ref()
            .is_some_and(|m| compare_keys(&min, m).is_le());
        if overlaps {
            out.last_mut().expect("open section").push(f);
            let m = section_max.as_mut().expect("open section");
            if compare_keys(&max, m).is_gt() {
                *m = max;
            }
        } else {
            out.push(vec![f]);
            section_max = Some(max);
        }
    }
    for section in &mut out {
        // Runs oldest first: higher levels hold older data; within a level, by sequence.
        section.sort_by(|a, b| {
            b.level
                .cmp(&a.level)
                .then(a.max_sequence_number.cmp(&b.max_sequence_number))
        });
    }
    Ok(out)
}

impl Table {
    /// The Parquet footer of data file `file` of `split`'s bucket, from the table's footer
    /// cache or read (with its page index) and cached.
    pub(crate) async fn footer(
        &self,
        split: &Split,
        file: &DataFileMeta,
    ) -> Result<Arc<data_file::Footer>, StorageError> {
        let cache = &self.shared().lsm_caches().footers;
        if let Some(f) = cache.get(&file.file_name) {
            return Ok(f);
        }
        let path = self.bucket_path(&split.partition, split.bucket);
        let alternate = self
            .alternate_bucket_path(&split.partition, split.bucket)
            .map(|p| p.join(file.file_name.as_str()));
        let footer = data_file::load_footer(
            self.io(),
            path.join(file.file_name.as_str()),
            alternate,
            file.file_size as u64,
        )
        .await?;
        let footer = Arc::new(footer);
        cache.put(&file.file_name, Arc::clone(&footer), footer.memory_size());
        Ok(footer)
    }

    /// Streams one data file of `split` in `layout`, without the rows the split's deletion
    /// vectors delete.
    pub(crate) async fn open_data_file(
        &self,
        split: &Split,
        file: &DataFileMeta,
        layout: &ReadLayout,
    ) -> Result<BoxStream<'static, Result<RecordBatch, StorageError>>, StorageError> {
        let lower = file.file_name.to_lowercase();
        if lower.ends_with(".orc") || lower.ends_with(".avro") {
            return Err(StorageError::Unsupported(format!(
                "data file {} of table {} is in {} format: tarn reads Parquet data files only",
                file.file_name,
                self.qualified_name(),
                if lower.ends_with(".orc") {
                    "ORC"
                } else {
                    "Avro"
                }
            )));
        }
        let file_schema = self.schema_by_id(file.schema_id).await?;
        let footer = self.footer(split, file).await?;
        let rows = data_file::read_rows(self.io(), &footer, &file_schema, layout, None)?;
        match split
            .deletions
            .as_ref()
            .and_then(|d| d.get(&file.file_name))
        {
            Some(at) => Ok(deletions::skip_deleted(
                rows,
                self.deletion_vector(at).await?,
            )),
            None => Ok(rows),
        }
    }
}
