//! Changelog files of `changelog-producer` = `input`: every change a commit makes, as the writer
//! received it, for streaming readers (Flink's, pypaimon's streaming scan).
//!
//! A data file keeps one version per key — a round of group commit folds every transaction's
//! runs together, so two transactions changing one key leave only the second version there. A
//! streaming reader of a table without a changelog sees only those folded versions. With
//! `input`, Paimon's writer double-writes what it received to changelog files
//! (`bucket-N/changelog-<uuid>-<n>.parquet`, the data files' key-value Parquet layout: `_KEY_*`,
//! `_SEQUENCE_NUMBER`, `_VALUE_KIND`, the columns), listed in manifests the snapshot references
//! through `changelogManifestList`; readers never merge them with data files.
//!
//! tarn builds a commit's changelog from each transaction's own runs before they are folded:
//! - in-memory runs (one statement's rows of a bucket, one version per key): per bucket, the
//!   runs of every transaction of the round in commit order, statement by statement, sorted by
//!   key with a key's versions kept in commit order, written as one file whose sequence numbers
//!   rise in that order (Paimon's changelog of one flush is sorted the same way: by key, then
//!   sequence number). Its numbers are reserved after the data files', from the same per-bucket
//!   counter.
//! - spilled runs (files a big transaction wrote before COMMIT, each one statement's fold of a
//!   part of its rows): copied byte for byte as changelog files, which keeps their sequence
//!   numbers. Within a bucket they come before the in-memory runs' file, as they are older.
//!
//! Row kinds are tarn's: `+I`, `+U` (an UPDATE keeping its key; no `-U`, the old row is not in
//! the change query), `-D`. Under `ignore-delete` the retractions (`-D`, `-U`) are left out, as
//! Paimon's writer drops them before they reach its changelog. TRUNCATE writes none (Paimon's
//! overwrite commits write no changelog either; streaming readers skip OVERWRITE snapshots).
//! Files and their manifests are removed again when the commit fails, like its data files.

use std::collections::{BTreeMap, HashMap};

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::{concat, concat_batches, take, take_record_batch};
use arrow::datatypes::Int8Type;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::kind;
use crate::storage::lsm::memrun::{Folded, MemRun, key_rows};
use crate::storage::lsm::merge_engine::MergeOptions;
use crate::storage::lsm::run_file::NewFile;
use crate::storage::meta::table::Table;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::{self, ManifestEntry, ManifestFileMeta};
use crate::storage::spec::options::ChangelogProducer;
use crate::storage::spec::schema::TableSchema;

/// Whether commits to tables of `schema` write changelog files (`changelog-producer` =
/// `input` on a primary-key table).
pub fn writes_changelog(schema: &TableSchema) -> bool {
    schema.has_primary_key()
        && schema.core_options().changelog_producer() == Ok(ChangelogProducer::Input)
}

/// Whether the table keeps a changelog (any `changelog-producer` but `none` on a primary-key
/// table: `input` written by tarn, `lookup` / `full-compaction` by other engines), so its audit
/// log is every change rather than the merged rows.
pub fn has_changelog(schema: &TableSchema) -> bool {
    schema.has_primary_key()
        && schema.core_options().changelog_producer() != Ok(ChangelogProducer::None)
}

/// A new changelog file name: `changelog-file.prefix` (default `changelog-`), a UUID, a count
/// (Paimon's `DataFilePathFactory`).
pub(in crate::storage) fn file_name(schema: &TableSchema) -> String {
    let prefix = schema.core_options().changelog_file_prefix();
    format!("{prefix}{}-0.parquet", uuid::Uuid::new_v4())
}

/// One bucket's changelog from in-memory runs, ready to be numbered and written.
struct PendingBucket {
    partition: Vec<Datum>,
    partition_bytes: Vec<u8>,
    bucket: i32,
    folded: Folded,
}

/// The changelog of a commit, taken from its transactions' runs before the commit folds them;
/// written by [`Pending::write`] once the data files are.
#[derive(Default)]
pub(crate) struct Pending {
    /// Spilled runs, oldest first: copied as they are.
    spilled: Vec<NewFile>,
    buckets: Vec<PendingBucket>,
}

impl Pending {
    /// The changelog of `txns` (each transaction's in-memory runs, statement order; the
    /// transactions in commit order) and of `spilled` (a transaction's files written before
    /// COMMIT, oldest first). Empty unless the table writes a changelog.
    pub(crate) fn new<'a>(
        table: &Table,
        spilled: Vec<NewFile>,
        txns: impl IntoIterator<Item = &'a [MemRun]>,
    ) -> Result<Self, StorageError> {
        let schema = table.schema();
        if !writes_changelog(schema) {
            return Ok(Self::default());
        }
        let ignore_delete = MergeOptions::from_schema(schema)
            .map_err(StorageError::Unsupported)?
            .ignore_delete;
        let mut by_bucket: BTreeMap<(Vec<u8>, i32), Vec<&MemRun>> = BTreeMap::new();
        for runs in txns {
            for run in runs.iter().filter(|r| !r.is_empty()) {
                by_bucket
                    .entry((run.partition_bytes.clone(), run.bucket))
                    .or_default()
                    .push(run);
            }
        }
        let mut buckets = Vec::with_capacity(by_bucket.len());
        for ((partition_bytes, bucket), runs) in by_bucket {
            let folded = versions(&runs, ignore_delete)?;
            if folded.rows.num_rows() == 0 {
                continue;
            }
            buckets.push(PendingBucket {
                partition: runs[0].partition.clone(),
                partition_bytes,
                bucket,
                folded,
            });
        }
        Ok(Self { spilled, buckets })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.spilled.is_empty() && self.buckets.is_empty()
    }

    /// Writes the changelog files: spilled runs copied, then one file per bucket of in-memory
    /// runs, numbered above `data` (the commit's data files) in their bucket. On error, the
    /// files already written are deleted.
    pub(crate) async fn write(
        self,
        table: &Table,
        data: &[NewFile],
    ) -> Result<Vec<NewFile>, StorageError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let mut floors: HashMap<(&[u8], i32), i64> = HashMap::new();
        for f in data {
            let floor = floors.entry((&f.partition, f.bucket)).or_insert(0);
            *floor = (*floor).max(f.meta.max_sequence_number + 1);
        }
        let mut tasks = Vec::with_capacity(self.spilled.len() + self.buckets.len());
        for file in self.spilled {
            tasks.push(tokio::spawn(copy_file(table.clone(), file)));
        }
        for b in self.buckets {
            let floor = floors
                .get(&(b.partition_bytes.as_slice(), b.bucket))
                .copied()
                .unwrap_or(0);
            tasks.push(tokio::spawn(
                crate::storage::write::table_write::write_folded_as(
                    table.clone(),
                    b.partition,
                    b.partition_bytes,
                    b.bucket,
                    b.folded,
                    floor,
                    file_name(table.schema()),
                    false,
                ),
            ));
        }
        let mut written = Vec::with_capacity(tasks.len());
        let mut failed = None;
        for task in tasks {
            match task.await {
                Ok(Ok(file)) => written.push(file),
                Ok(Err(e)) => failed = Some(e),
                Err(e) => failed = Some(StorageError::task_failed("a changelog writer task", e)),
            }
        }
        match failed {
            None => Ok(written),
            Some(e) => {
                delete(table, &written).await;
                Err(e)
            }
        }
    }
}

/// The versions of one bucket's runs (commit order) as one run: sorted by key, a key's versions
/// in commit order. Under `ignore_delete` retractions are left out.
fn versions(runs: &[&MemRun], ignore_delete: bool) -> Result<Folded, StorageError> {
    let schema = runs[0].rows.schema();
    let rows = concat_batches(&schema, runs.iter().map(|r| &r.rows))?;
    let kinds: Vec<&dyn Array> = runs.iter().map(|r| &r.kinds as &dyn Array).collect();
    let kinds = concat(&kinds)?.as_primitive::<Int8Type>().clone();
    let mut keys: Vec<ArrayRef> = Vec::with_capacity(runs[0].keys.len());
    for k in 0..runs[0].keys.len() {
        let columns: Vec<&dyn Array> = runs.iter().map(|r| r.keys[k].as_ref()).collect();
        keys.push(concat(&columns)?);
    }
    let encoded = key_rows(&keys)?;
    let mut order: Vec<u32> = (0..rows.num_rows() as u32)
        .filter(|&i| {
            !ignore_delete || {
                let k = kinds.value(i as usize);
                k != kind::DELETE && k != kind::UPDATE_BEFORE
            }
        })
        .collect();
    // Stable: a key's versions stay in commit order.
    order.sort_by(|a, b| encoded.row(*a as usize).cmp(&encoded.row(*b as usize)));
    let indices = UInt32Array::from(order);
    Ok(Folded {
        keys: keys
            .iter()
            .map(|c| take(c, &indices, None))
            .collect::<Result<_, _>>()?,
        kinds: take(&kinds, &indices, None)?
            .as_primitive::<Int8Type>()
            .clone(),
        rows: take_record_batch(&rows, &indices)?,
        probes: Vec::new(),
    })
}

/// A spilled run's file copied as a changelog file (same rows, kinds and sequence numbers).
async fn copy_file(table: Table, file: NewFile) -> Result<NewFile, StorageError> {
    let dir = table.bucket_path(&file.partition_values, file.bucket);
    let bytes = table
        .io()
        .read(&dir.clone().join(file.meta.file_name.as_str()))
        .await?;
    let name = file_name(table.schema());
    let size = bytes.len() as i64;
    table.io().write(&dir.join(name.as_str()), bytes).await?;
    let mut copy = file;
    copy.meta.file_name = name;
    copy.meta.file_size = size;
    copy.meta.creation_time = Some(table.clock().now_millis());
    Ok(copy)
}

/// Deletes changelog files of a commit that failed.
pub(crate) async fn delete(table: &Table, files: &[NewFile]) {
    for f in files {
        let path = table
            .bucket_path(&f.partition_values, f.bucket)
            .join(f.meta.file_name.as_str());
        if let Err(e) = table.io().delete(&path).await {
            tracing::warn!(error = %e, %path, "could not delete an uncommitted changelog file");
        }
    }
}

/// What a snapshot records of its changelog: the manifest list's name and size, and the row
/// count.
pub(crate) struct ChangelogList {
    pub name: String,
    pub size: i64,
    pub rows: i64,
}

/// Writes the manifest of a commit's changelog `entries` and the manifest list `name` naming
/// it (both pushed to `written`, deleted if the commit fails). `None` without entries.
pub(crate) async fn write_manifest_list(
    table: &Table,
    entries: &[ManifestEntry],
    name: String,
    written: &mut Vec<String>,
) -> Result<Option<ChangelogList>, StorageError> {
    if entries.is_empty() {
        return Ok(None);
    }
    let meta: ManifestFileMeta =
        crate::storage::meta::manifest_files::write_manifest(table, entries, written).await?;
    let bytes = manifest::write_manifest_list(std::slice::from_ref(&meta))?;
    let size = bytes.len() as i64;
    written.push(name.clone());
    table.io().write(&table.manifest_path(&name), bytes).await?;
    Ok(Some(ChangelogList {
        name,
        size,
        rows: entries.iter().map(|e| e.file.row_count).sum(),
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use arrow::array::{Int8Array, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::Int64Type;
    use futures::TryStreamExt;
    use futures::future::BoxFuture;
    use futures::stream::BoxStream;
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
        PutMultipartOptions, PutOptions, PutPayload, PutResult,
    };

    use super::*;
    use crate::storage::meta::snapshot::Snapshot;
    use crate::storage::read::scan::Split;
    use crate::storage::spec::options::changelog_restriction;
    use crate::storage::spec::types::{MAX_LENGTH, PaimonType, TypeKind};
    use crate::storage::testkit::{self, keyed_schema};
    use crate::storage::write::table_write::{TableWrite, WriteMode};
    use crate::storage::{Warehouse, WarehouseLocation};

    const I: i8 = kind::INSERT;
    const U: i8 = kind::UPDATE_AFTER;
    const D: i8 = kind::DELETE;

    async fn table_in(wh: &Warehouse, options: &[(&str, &str)]) -> Table {
        if !wh.database_exists("public").await.unwrap() {
            wh.create_database("public").await.unwrap();
        }
        let mut all = vec![("bucket", "1")];
        all.extend_from_slice(options);
        let schema = keyed_schema(
            &[("v", PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)))],
            &all,
        );
        wh.create_table("public", "t", schema).await.unwrap()
    }

    async fn table(options: &[(&str, &str)]) -> Table {
        table_in(
            &Warehouse::open(&WarehouseLocation::Memory).unwrap(),
            options,
        )
        .await
    }

    fn batch(t: &Table, rows: &[(i64, &str)]) -> RecordBatch {
        RecordBatch::try_new(
            crate::storage::testkit::arrow_schema(t.schema()),
            vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
            ],
        )
        .unwrap()
    }

    /// One upsert statement of `rows` with their kinds.
    async fn statement(w: &mut TableWrite, rows: &[(i64, i8, &str)]) {
        let t = w.table().clone();
        let values: Vec<(i64, &str)> = rows.iter().map(|r| (r.0, r.2)).collect();
        let kinds = Int8Array::from_iter_values(rows.iter().map(|r| r.1));
        w.write_kinds(batch(&t, &values), Some(kinds))
            .await
            .unwrap();
        w.end_statement().await.unwrap();
        w.begin_statement(WriteMode::Upsert, w.base().map_or(0, |s| s.id));
    }

    /// The changelog files of `snapshot`, each as (id, kind, sequence number, v) rows.
    async fn changelog(t: &Table, snapshot: &Snapshot) -> Vec<Vec<(i64, i8, i64, String)>> {
        let list = snapshot
            .changelog_manifest_list
            .as_ref()
            .expect("a changelog manifest list");
        let layout = t.read_layout(&[0, 1]);
        let mut out = Vec::new();
        for meta in t.read_manifest_list(list).await.unwrap() {
            for e in t.read_manifest(&meta.file_name).await.unwrap().iter() {
                assert_eq!(e.kind, manifest::FileKind::Add);
                let name = &e.file.file_name;
                assert!(
                    name.starts_with("changelog-") && name.ends_with("-0.parquet"),
                    "{name}"
                );
                let split = Split {
                    partition: Vec::new(),
                    partition_bytes: e.partition.clone(),
                    bucket: e.bucket,
                    total_buckets: e.total_buckets,
                    files: Vec::new(),
                    deletions: None,
                };
                let batches: Vec<RecordBatch> = t
                    .open_data_file(&split, &e.file, &layout)
                    .await
                    .unwrap()
                    .try_collect()
                    .await
                    .unwrap();
                let mut rows = Vec::new();
                for b in batches {
                    let off = layout.value_offset();
                    let seq = b
                        .column(layout.sequence_index())
                        .as_primitive::<Int64Type>();
                    let kinds = b.column(layout.kind_index()).as_primitive::<Int8Type>();
                    let id = b.column(off).as_primitive::<Int64Type>();
                    let v = b.column(off + 1).as_string::<i32>();
                    for i in 0..b.num_rows() {
                        rows.push((
                            id.value(i),
                            kinds.value(i),
                            seq.value(i),
                            v.value(i).to_owned(),
                        ));
                    }
                }
                assert_eq!(rows.len() as i64, e.file.row_count);
                assert_eq!(
                    (
                        rows.iter().map(|r| r.2).min(),
                        rows.iter().map(|r| r.2).max()
                    ),
                    (
                        Some(e.file.min_sequence_number),
                        Some(e.file.max_sequence_number)
                    )
                );
                out.push(rows);
            }
        }
        out
    }

    /// Live rows through scan planning and merge-on-read: id → v.
    async fn read(t: &Table) -> BTreeMap<i64, String> {
        let mut out = BTreeMap::new();
        for b in testkit::batches_at(t, None, &[0, 1]).await {
            let (id, v) = (testkit::i64s(&b, 0), testkit::strings(&b, 1));
            for i in 0..b.num_rows() {
                out.insert(id.value(i), v.value(i).to_owned());
            }
        }
        out
    }

    async fn latest(t: &Table) -> Snapshot {
        t.snapshots().latest().await.unwrap().unwrap()
    }

    /// Commits `writes` as one group-commit round (in this order).
    async fn one_round(t: &Table, writes: Vec<TableWrite>) -> Vec<i64> {
        let commit = t.state::<crate::storage::commit::state::CommitState>();
        let lock = commit.lock.lock().await;
        let mut tasks = Vec::new();
        for (i, w) in writes.into_iter().enumerate() {
            tasks.push(tokio::spawn(crate::storage::commit::commit_write(w)));
            while commit.queue.lock().unwrap().len() <= i {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
        drop(lock);
        let mut ids = Vec::new();
        for task in tasks {
            ids.push(task.await.unwrap().unwrap().unwrap());
        }
        ids
    }

    #[tokio::test]
    async fn a_round_writes_every_transactions_changes() {
        let t = table(&[("changelog-producer", "input")]).await;
        let mut first = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        statement(&mut first, &[(1, I, "a"), (2, I, "b")]).await;
        let mut second = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        statement(&mut second, &[(1, U, "a2"), (2, D, "b")]).await;
        statement(&mut second, &[(3, I, "c")]).await;
        let ids = one_round(&t, vec![first, second]).await;
        assert_eq!(ids, [1, 1], "one snapshot for both transactions");

        let s = latest(&t).await;
        assert_eq!(s.changelog_record_count, Some(5));
        assert!(s.changelog_manifest_list_size.is_some_and(|n| n > 0));
        assert_eq!(
            s.delta_record_count,
            Some(3),
            "the data file keeps one version per key"
        );
        let files = changelog(&t, &s).await;
        assert_eq!(files.len(), 1, "one changelog file per bucket");
        let rows: Vec<(i64, i8, &str)> = files[0]
            .iter()
            .map(|(id, k, _, v)| (*id, *k, v.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                (1, I, "a"),
                (1, U, "a2"),
                (2, I, "b"),
                (2, D, "b"),
                (3, I, "c")
            ],
            "by key, a key's versions in commit order"
        );
        assert!(files[0].windows(2).all(|w| w[0].2 < w[1].2));
        assert_eq!(
            read(&t).await,
            BTreeMap::from([(1, "a2".to_owned()), (3, "c".to_owned())])
        );

        // The next commit's changelog holds only its own change.
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        statement(&mut w, &[(3, D, "c")]).await;
        assert_eq!(
            crate::storage::commit::commit_write(w).await.unwrap(),
            Some(2)
        );
        let s2 = latest(&t).await;
        let files = changelog(&t, &s2).await;
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].len(), 1);
        assert_eq!((files[0][0].0, files[0][0].1), (3, D));
        assert_ne!(s2.changelog_manifest_list, s.changelog_manifest_list);
    }

    #[tokio::test]
    async fn spilled_runs_are_in_the_changelog() {
        let t = table(&[
            ("changelog-producer", "input"),
            ("write-buffer-size", "1 kb"),
        ])
        .await;
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        let xs: Vec<(i64, i8, &str)> = (0..200).map(|i| (i, I, "x")).collect();
        for chunk in xs.chunks(20) {
            let values: Vec<(i64, &str)> = chunk.iter().map(|r| (r.0, r.2)).collect();
            w.write(batch(&t, &values)).await.unwrap();
        }
        w.end_statement().await.unwrap();
        w.begin_statement(WriteMode::Upsert, 0);
        statement(&mut w, &[(5, U, "y"), (7, D, "x")]).await;
        assert_eq!(
            crate::storage::commit::commit_write(w).await.unwrap(),
            Some(1)
        );

        let s = latest(&t).await;
        assert_eq!(s.changelog_record_count, Some(202));
        let files = changelog(&t, &s).await;
        assert!(files.len() > 2, "spilled files are copied: {}", files.len());
        let mut versions: BTreeMap<i64, Vec<(i64, i8, String)>> = BTreeMap::new();
        for (id, k, seq, v) in files.into_iter().flatten() {
            versions.entry(id).or_default().push((seq, k, v));
        }
        assert_eq!(versions.len(), 200);
        for (id, mut vs) in versions {
            vs.sort();
            let kinds: Vec<(i8, &str)> = vs.iter().map(|(_, k, v)| (*k, v.as_str())).collect();
            match id {
                5 => assert_eq!(kinds, [(I, "x"), (U, "y")]),
                7 => assert_eq!(kinds, [(I, "x"), (D, "x")]),
                _ => assert_eq!(kinds, [(I, "x")]),
            }
        }
        let live = read(&t).await;
        assert_eq!(live.len(), 199);
        assert_eq!(live[&5], "y");
    }

    #[tokio::test]
    async fn without_the_option_no_changelog() {
        let t = table(&[]).await;
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        statement(&mut w, &[(1, I, "a")]).await;
        crate::storage::commit::commit_write(w).await.unwrap();
        let s = latest(&t).await;
        assert_eq!(s.changelog_manifest_list, None);
        assert_eq!(s.changelog_manifest_list_size, None);
        assert_eq!(s.changelog_record_count, Some(0));
        let files = t.io().list(t.path()).await.unwrap();
        assert!(
            !files
                .iter()
                .any(|m| m.location.as_ref().contains("changelog-")),
            "no changelog file"
        );
    }

    #[test]
    fn restrictions() {
        let schema = |options: &[(&str, &str)]| {
            keyed_schema(
                &[("v", PaimonType::nullable(TypeKind::Int))],
                &[&[("bucket", "1")], options].concat(),
            )
        };
        assert_eq!(changelog_restriction(&schema(&[])), None);
        assert_eq!(
            changelog_restriction(&schema(&[("changelog-producer", "NONE")])),
            None
        );
        let input = schema(&[("changelog-producer", "input")]);
        assert_eq!(changelog_restriction(&input), None);
        assert!(writes_changelog(&input));
        for accepted in [
            vec![("changelog-producer", "lookup")],
            vec![("changelog-producer", "Full-Compaction")],
            vec![
                ("changelog-producer", "lookup"),
                ("merge-engine", "first-row"),
            ],
        ] {
            let s = schema(&accepted);
            assert_eq!(changelog_restriction(&s), None, "{accepted:?}");
            // Compaction writes their changelog, commits do not.
            assert!(!writes_changelog(&s) && has_changelog(&s), "{accepted:?}");
        }
        for refused in [
            vec![("changelog-producer", "lookups")],
            vec![
                ("changelog-producer", "input"),
                ("merge-engine", "first-row"),
            ],
            vec![
                ("changelog-producer", "full-compaction"),
                ("merge-engine", "first-row"),
            ],
            vec![
                ("changelog-producer", "input"),
                ("changelog-file.format", "orc"),
            ],
        ] {
            assert!(
                changelog_restriction(&schema(&refused)).is_some(),
                "{refused:?}"
            );
        }
        let mut append = input.clone();
        append.primary_keys.clear();
        assert!(!writes_changelog(&append));
        assert!(changelog_restriction(&append).is_some());
        let mut prefixed = input.clone();
        prefixed
            .options
            .insert("changelog-file.prefix".into(), "log-".into());
        assert!(file_name(&prefixed).starts_with("log-"));
        assert!(file_name(&input).starts_with("changelog-"));
    }

    /// A store whose snapshot writes fail while `fail` is set (the commit's last step).
    #[derive(Debug)]
    struct FailSnapshots {
        inner: InMemory,
        fail: AtomicBool,
    }

    impl std::fmt::Display for FailSnapshots {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "FailSnapshots")
        }
    }

    impl ObjectStore for FailSnapshots {
        fn put_opts<'s, 'l, 'f>(
            &'s self,
            location: &'l Path,
            payload: PutPayload,
            opts: PutOptions,
        ) -> BoxFuture<'f, object_store::Result<PutResult>>
        where
            's: 'f,
            'l: 'f,
            Self: 'f,
        {
            Box::pin(async move {
                if self.fail.load(Ordering::SeqCst)
                    && location.as_ref().contains("snapshot/snapshot-")
                {
                    return Err(object_store::Error::Generic {
                        store: "FailSnapshots",
                        source: "injected failure".into(),
                    });
                }
                self.inner.put_opts(location, payload, opts).await
            })
        }

        fn put_multipart_opts<'s, 'l, 'f>(
            &'s self,
            location: &'l Path,
            opts: PutMultipartOptions,
        ) -> BoxFuture<'f, object_store::Result<Box<dyn MultipartUpload>>>
        where
            's: 'f,
            'l: 'f,
            Self: 'f,
        {
            self.inner.put_multipart_opts(location, opts)
        }

        fn get_opts<'s, 'l, 'f>(
            &'s self,
            location: &'l Path,
            options: GetOptions,
        ) -> BoxFuture<'f, object_store::Result<GetResult>>
        where
            's: 'f,
            'l: 'f,
            Self: 'f,
        {
            self.inner.get_opts(location, options)
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<Path>>,
        ) -> BoxStream<'static, object_store::Result<Path>> {
            self.inner.delete_stream(locations)
        }

        fn list(
            &self,
            prefix: Option<&Path>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.inner.list(prefix)
        }

        fn list_with_delimiter<'s, 'l, 'f>(
            &'s self,
            prefix: Option<&'l Path>,
        ) -> BoxFuture<'f, object_store::Result<ListResult>>
        where
            's: 'f,
            'l: 'f,
            Self: 'f,
        {
            self.inner.list_with_delimiter(prefix)
        }

        fn copy_opts<'s, 'a, 'b, 'f>(
            &'s self,
            from: &'a Path,
            to: &'b Path,
            options: CopyOptions,
        ) -> BoxFuture<'f, object_store::Result<()>>
        where
            's: 'f,
            'a: 'f,
            'b: 'f,
            Self: 'f,
        {
            self.inner.copy_opts(from, to, options)
        }
    }

    /// Names of the files under the table's buckets and manifest folder.
    async fn files_of(t: &Table) -> Vec<String> {
        let mut names: Vec<String> = t
            .io()
            .list(t.path())
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.location.to_string())
            .filter(|p| p.contains("/bucket-") || p.contains("/manifest/"))
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_failed_commit_leaves_no_changelog() {
        let store = Arc::new(FailSnapshots {
            inner: InMemory::new(),
            fail: AtomicBool::new(false),
        });
        let wh = Warehouse::with_store(Arc::clone(&store) as Arc<dyn ObjectStore>);
        let t = table_in(
            &wh,
            &[
                ("changelog-producer", "input"),
                ("write-buffer-size", "1 kb"),
            ],
        )
        .await;
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        statement(&mut w, &[(1, I, "a")]).await;
        crate::storage::commit::commit_write(w).await.unwrap();
        let before = files_of(&t).await;
        assert!(before.iter().any(|f| f.contains("changelog-")));

        store.fail.store(true, Ordering::SeqCst);
        // A group commit (in memory only), then a transaction with spilled runs.
        let mut small = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        statement(&mut small, &[(1, U, "b"), (2, I, "c")]).await;
        assert!(crate::storage::commit::commit_write(small).await.is_err());
        let mut big = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        let rows: Vec<(i64, &str)> = (0..200).map(|i| (i, "x")).collect();
        for chunk in rows.chunks(20) {
            big.write(batch(&t, chunk)).await.unwrap();
        }
        assert!(crate::storage::commit::commit_write(big).await.is_err());
        // The big write's cleanup runs in a task spawned when it was dropped.
        for _ in 0..100 {
            if files_of(&t).await == before {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(files_of(&t).await, before);
    }
}
