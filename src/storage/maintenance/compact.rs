//! Compaction of one bucket: running a [`CompactPlan`] and committing it as a COMPACT snapshot.
//!
//! Which runs to merge is `compact_policy.rs`'s pure decision; this module does the I/O. As
//! Paimon's `MergeTreeCompactTask` does, the plan's files are cut into sections of overlapping
//! key ranges, in key order: a section of several files is merged (the table's merge engine
//! applies; deletes are dropped only when the plan says nothing older remains below), and a
//! lone file is *upgraded* — moved to the output level by its manifest entry alone, the same
//! file under the same name — unless it is small (then it joins the neighbouring merge, so
//! small files do not pile up) or it holds deletes that the plan may drop. Merged rows keep
//! their sequence numbers, so later commits still outrank them; output files roll over near
//! `target-file-size` (estimated from the inputs' bytes per row) and form one sorted run at the
//! output level, with no overlapping key ranges.
//!
//! The commit is the conflict check: under the commit lock, every input must still be live in
//! the latest snapshot (a TRUNCATE, restore or another compaction may have removed it); if not,
//! the outputs are deleted and the compaction is abandoned, which loses nothing. User commits
//! only add level-0 files with higher sequence numbers, so they never conflict with it.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use futures::{StreamExt, TryStreamExt};

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage};
use crate::storage::commit::snapshot_writer::{Content, added_entries};
use crate::storage::lsm::data_file;
use crate::storage::lsm::deletions::{BucketDeletions, DeletionChange};
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::live_files::BucketId;
use crate::storage::lsm::merge::RunStream;
use crate::storage::lsm::run_file::{self, NewFile};
use crate::storage::maintenance::compact_changelog::{self, ChangeCapture, Producer};
use crate::storage::maintenance::compact_policy::{CompactOptions, CompactPlan, FileSummary};
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::read::scan::Split;
use crate::storage::spec::binary_row;
use crate::storage::spec::manifest::{DataFileMeta, FileKind, FileSource, ManifestEntry};

/// Most bytes of rows an output file is built from in memory (a file rolls over earlier when
/// the target size is larger).
const MAX_FILE_BUFFER: usize = 256 * 1024 * 1024;

/// What one bucket's compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactResult {
    /// The COMPACT snapshot, or `None` when the inputs changed meanwhile (abandoned).
    pub snapshot: Option<i64>,
    pub files_before: usize,
    pub files_after: usize,
    /// Files merged and rewritten (the rest were upgraded in place).
    pub rewritten: usize,
    pub bytes_read: i64,
    pub bytes_written: i64,
}

/// The policy's view of a data file.
pub fn summary(f: &DataFileMeta) -> FileSummary {
    FileSummary {
        name: f.file_name.clone(),
        level: u32::try_from(f.level).unwrap_or(0),
        size: u64::try_from(f.file_size).unwrap_or(0),
        min_sequence: f.min_sequence_number,
        max_sequence: f.max_sequence_number,
        creation_millis: f.creation_time.unwrap_or(0),
    }
}

/// The table's compaction options (Paimon's keys and defaults).
pub fn options_of(table: &Table) -> Result<CompactOptions, StorageError> {
    CompactOptions::from_lookup(|k| table.schema().option(k)).map_err(|e| {
        StorageError::InvalidSchema(format!(
            "compaction options of {}: {e}",
            table.qualified_name()
        ))
    })
}

/// Looked-up rows by level, held in memory (they are versions of level-0 keys only): read
/// for the before images and again for the merge.
type LevelRows = Vec<(i32, Vec<RecordBatch>)>;

async fn collect_runs(runs: Vec<(i32, RunStream)>) -> Result<LevelRows, StorageError> {
    let mut out = Vec::with_capacity(runs.len());
    for (level, run) in runs {
        out.push((level, run.try_collect().await?));
    }
    Ok(out)
}

fn streams(rows: &LevelRows) -> Vec<(i32, RunStream)> {
    rows.iter()
        .map(|(level, batches)| {
            let batches = batches.clone();
            (
                *level,
                futures::stream::iter(batches.into_iter().map(Ok)).boxed(),
            )
        })
        .collect()
}

/// One step of a compaction: files merged into new ones, or a file moved up a level.
enum Step {
    Merge(Vec<DataFileMeta>),
    Upgrade(Box<DataFileMeta>),
}

impl Table {
    /// Runs `plan` on bucket `at` (whose files are `files`) and commits it.
    pub(crate) async fn compact_bucket(
        &self,
        at: &BucketId,
        total_buckets: i32,
        files: &[Arc<DataFileMeta>],
        deletions: Option<Arc<BucketDeletions>>,
        plan: &CompactPlan,
        opts: &CompactOptions,
    ) -> Result<CompactResult, StorageError> {
        let wanted: HashSet<(&str, u32)> = plan
            .inputs
            .iter()
            .map(|f| (f.name.as_str(), f.level))
            .collect();
        let inputs: Vec<DataFileMeta> = files
            .iter()
            .filter(|f| {
                wanted.contains(&(f.file_name.as_str(), u32::try_from(f.level).unwrap_or(0)))
            })
            .map(|f| f.as_ref().clone())
            .collect();
        let output_level = i32::try_from(plan.output_level).unwrap_or(i32::MAX);
        let partition = binary_row::deserialize(&at.0, &self.partition_types())?;
        let split = Split {
            partition,
            partition_bytes: at.0.clone(),
            bucket: at.1,
            total_buckets,
            files: Vec::new(),
            deletions: deletions.clone(),
        };
        // Tables that need lookups: the previous versions of the level-0 inputs' keys in the
        // levels below the output are merged in (unless the newest version simply wins), and
        // with deletion vectors deleted where they lie.
        let level0_up = output_level > 0 && inputs.iter().any(|f| f.level == 0);
        // (First-row tables with deletion vectors too: the old row, deleted where it lies,
        // must win the merge.)
        let merge_old = level0_up
            && (opts.lookup_merge || opts.deletion_vectors)
            && !crate::storage::lsm::merge_engine::MergeOptions::from_schema(self.schema())
                .is_ok_and(|o| o.is_plain());
        // Tables whose compactions produce the changelog (`compact_changelog.rs`): the keys
        // of the inputs below this level changed, and their before images lie at it.
        let before_level = match compact_changelog::producer(self.schema()) {
            Some(Producer::Lookup) if level0_up => Some(1),
            Some(Producer::FullCompaction)
                if output_level > 0
                    && inputs.len() == files.len()
                    && inputs.iter().any(|f| f.level < output_level) =>
            {
                Some(output_level)
            }
            _ => None,
        };
        let capture_lookup = before_level == Some(1);
        let lookup = merge_old || capture_lookup || (level0_up && opts.deletion_vectors);
        let (found, old_rows) = if lookup {
            self.lookup_for_compaction(
                &split,
                files,
                &inputs,
                output_level,
                merge_old || capture_lookup,
            )
            .await?
        } else {
            Default::default()
        };
        let mut old_rows = collect_runs(old_rows).await?;
        let mut capture = match before_level {
            Some(level) => Some(
                self.capture_before(&split, &inputs, level, &old_rows)
                    .await?,
            ),
            None => None,
        };
        if !merge_old {
            old_rows.clear();
        }
        let steps = if merge_old || capture.is_some() {
            // Old versions may belong anywhere among the inputs' keys, and every changed key
            // must pass through the merge: one merge.
            vec![Step::Merge(inputs.clone())]
        } else {
            self.steps(&inputs, plan, opts)?
        };
        let mut outputs: Vec<NewFile> = Vec::new();
        let mut result = CompactResult {
            files_before: inputs.len(),
            bytes_read: 0,
            ..CompactResult::default()
        };
        for step in steps {
            let written = match step {
                Step::Upgrade(mut file) => {
                    file.level = output_level;
                    Ok(vec![NewFile {
                        partition: at.0.clone(),
                        partition_values: split.partition.clone(),
                        bucket: at.1,
                        total_buckets,
                        meta: *file,
                    }])
                }
                Step::Merge(group) => {
                    result.rewritten += group.len();
                    result.bytes_read += group.iter().map(|f| f.file_size).sum::<i64>();
                    let split = Split {
                        files: group,
                        ..split.clone()
                    };
                    let base = streams(&std::mem::take(&mut old_rows));
                    self.merge_files(
                        &split,
                        output_level,
                        plan.drop_delete,
                        opts,
                        base,
                        capture.as_mut(),
                    )
                    .await
                }
            };
            match written {
                Ok(files) => outputs.extend(files),
                Err(e) => {
                    self.delete_rewritten(&outputs, &inputs).await;
                    return Err(e);
                }
            }
        }
        result.files_after = outputs.len();
        let changelog = match self.write_changelog(&split, capture).await {
            Ok(files) => files,
            Err(e) => {
                self.delete_rewritten(&outputs, &inputs).await;
                return Err(e);
            }
        };
        let dv_change = if opts.deletion_vectors && output_level > 0 {
            // Files live after this compaction: the others' vectors go.
            let after: HashSet<String> = files
                .iter()
                .filter(|f| !inputs.iter().any(|i| i.file_name == f.file_name))
                .map(|f| f.file_name.clone())
                .chain(outputs.iter().map(|o| o.meta.file_name.clone()))
                .collect();
            match self
                .write_bucket_deletions(&split, deletions.as_deref(), &after, &found)
                .await
            {
                Ok(change) => change,
                Err(e) => {
                    self.delete_rewritten(&outputs, &inputs).await;
                    return Err(e);
                }
            }
        } else {
            None
        };
        result.bytes_written = outputs
            .iter()
            .filter(|o| !inputs.iter().any(|i| i.file_name == o.meta.file_name))
            .map(|o| o.meta.file_size)
            .sum();
        let committed = self
            .commit_compaction(
                at,
                total_buckets,
                &inputs,
                &outputs,
                &changelog,
                dv_change.as_ref().map(|c| (c, deletions.as_deref())),
            )
            .await;
        if !matches!(committed, Ok(Some(_))) {
            self.delete_rewritten(&outputs, &inputs).await;
            crate::storage::write::table_write::delete_files(self, changelog).await;
            if let Some(change) = &dv_change {
                self.delete_index_files(change).await;
            }
        }
        result.snapshot = committed?;
        Ok(result)
    }

    /// Cuts the plan's files into merges and upgrades, in key order.
    fn steps(
        &self,
        inputs: &[DataFileMeta],
        plan: &CompactPlan,
        opts: &CompactOptions,
    ) -> Result<Vec<Step>, StorageError> {
        if plan.file_rewrite {
            // Each file on its own (a full compaction of a bucket already in one run).
            return Ok(inputs
                .iter()
                .map(|f| Step::Merge(vec![f.clone()]))
                .collect());
        }
        let small = opts.compaction_file_size();
        let mut steps = Vec::new();
        let mut pending: Vec<DataFileMeta> = Vec::new();
        for section in crate::storage::lsm::split::sections(inputs, &self.key_types())? {
            let [file] = section.as_slice() else {
                pending.extend(section);
                continue;
            };
            let has_deletes = file.delete_row_count.is_none_or(|n| n > 0);
            let is_small = u64::try_from(file.file_size).unwrap_or(0) < small;
            if is_small || (plan.drop_delete && has_deletes) || opts.force_rewrite_all_files {
                pending.push(file.clone());
                continue;
            }
            if !pending.is_empty() {
                steps.push(Step::Merge(std::mem::take(&mut pending)));
            }
            steps.push(Step::Upgrade(Box::new(file.clone())));
        }
        if !pending.is_empty() {
            steps.push(Step::Merge(pending));
        }
        Ok(steps)
    }

    /// Merges the files of `split` into files at `level`, rolling over near the target size.
    async fn merge_files(
        &self,
        split: &Split,
        level: i32,
        drop_delete: bool,
        opts: &CompactOptions,
        base: Vec<(i32, RunStream)>,
        mut capture: Option<&mut ChangeCapture>,
    ) -> Result<Vec<NewFile>, StorageError> {
        let layout = self.full_layout();
        let schema = layout.schema()?;
        let key_count = layout.key_count();
        let rows: i64 = split.files.iter().map(|f| f.row_count).sum();
        let bytes: i64 = split.files.iter().map(|f| f.file_size).sum();
        let bytes_per_row = (bytes / rows.max(1)).max(1) as u64;
        let rows_per_file = (opts.target_file_size / bytes_per_row).max(1) as usize;
        let mut stream = self
            .read_split_merging(split, &layout, drop_delete, base)
            .await?;
        let mut out = Vec::new();
        let mut buffer: Vec<RecordBatch> = Vec::new();
        let (mut buffered_rows, mut buffered_bytes) = (0usize, 0usize);
        let result: Result<(), StorageError> = async {
            while let Some(batch) = stream.try_next().await? {
                if batch.num_rows() == 0 {
                    continue;
                }
                if let Some(c) = capture.as_deref_mut() {
                    c.after(&batch)?;
                }
                buffered_rows += batch.num_rows();
                buffered_bytes += batch.get_array_memory_size();
                buffer.push(batch);
                if buffered_rows >= rows_per_file || buffered_bytes >= MAX_FILE_BUFFER {
                    let batch = concat_batches(&schema, &std::mem::take(&mut buffer))?;
                    (buffered_rows, buffered_bytes) = (0, 0);
                    out.push(self.write_merged(split, batch, key_count, level).await?);
                }
            }
            if !buffer.is_empty() {
                let batch = concat_batches(&schema, &buffer)?;
                out.push(self.write_merged(split, batch, key_count, level).await?);
            }
            Ok(())
        }
        .await;
        match result {
            Ok(()) => Ok(out),
            Err(e) => {
                crate::storage::write::table_write::delete_files(self, out).await;
                Err(e)
            }
        }
    }

    async fn write_merged(
        &self,
        split: &Split,
        batch: RecordBatch,
        key_count: usize,
        level: i32,
    ) -> Result<NewFile, StorageError> {
        let name = data_file::new_file_name("data");
        self.write_rows(split, batch, key_count, name, level, true)
            .await
    }

    /// Encodes rows (full layout, key order) off the async runtime and stores them as file
    /// `name` of the bucket at `level`; `indexed`: with the table's file index.
    async fn write_rows(
        &self,
        split: &Split,
        batch: RecordBatch,
        key_count: usize,
        name: String,
        level: i32,
        indexed: bool,
    ) -> Result<NewFile, StorageError> {
        let schema = Arc::clone(self.schema());
        let run = tokio::task::spawn_blocking(move || {
            run_file::encode_merged(&schema, &batch, key_count)
        })
        .await
        .map_err(|e| StorageError::task_failed("a compaction task", e))??;
        let run = if indexed { run } else { run.without_index() };
        run_file::store(
            self,
            split.partition.clone(),
            split.partition_bytes.clone(),
            split.bucket,
            name,
            run,
            level,
            FileSource::Compact,
        )
        .await
    }

    /// The changed keys of a compaction (those of `inputs` below `before_level`) with their
    /// before images: their versions at the lowest level from `before_level` on, among the
    /// inputs and the `looked_up` rows of the levels below.
    async fn capture_before(
        &self,
        split: &Split,
        inputs: &[DataFileMeta],
        before_level: i32,
        looked_up: &LevelRows,
    ) -> Result<ChangeCapture, StorageError> {
        let encoder = KeyEncoder::new(self)?;
        let mut keys: HashSet<Vec<u8>> = HashSet::new();
        for f in inputs.iter().filter(|f| f.level < before_level) {
            keys.extend(self.key_set(split, f, &encoder).await?.iter().cloned());
        }
        let mut capture = ChangeCapture::new(self.schema(), encoder, keys);
        let split = Split {
            files: inputs
                .iter()
                .filter(|f| f.level >= before_level)
                .cloned()
                .collect(),
            ..split.clone()
        };
        let base = streams(looked_up);
        let mut rows = self
            .read_split_merging(&split, &self.full_layout(), false, base)
            .await?;
        while let Some(batch) = rows.try_next().await? {
            capture.before(&batch)?;
        }
        Ok(capture)
    }

    /// Writes the changelog `capture` made of a compaction (full layout, key order) as a
    /// changelog file of the bucket, without a file index as Java writes them; none when
    /// nothing was captured or nothing changed.
    async fn write_changelog(
        &self,
        split: &Split,
        capture: Option<ChangeCapture>,
    ) -> Result<Vec<NewFile>, StorageError> {
        let Some(rows) = capture.map(|c| c.changelog()).transpose()?.flatten() else {
            return Ok(Vec::new());
        };
        let key_count = self.full_layout().key_count();
        let name = crate::storage::write::changelog::file_name(self.schema());
        let file = self
            .write_rows(split, rows, key_count, name, 0, false)
            .await?;
        Ok(vec![file])
    }

    /// Deletes the files a compaction wrote (not the upgraded inputs, which stay live).
    async fn delete_rewritten(&self, outputs: &[NewFile], inputs: &[DataFileMeta]) {
        let written: Vec<NewFile> = outputs
            .iter()
            .filter(|o| !inputs.iter().any(|i| i.file_name == o.meta.file_name))
            .cloned()
            .collect();
        crate::storage::write::table_write::delete_files(self, written).await;
    }

    /// Commits a compaction of bucket `at` as a COMPACT snapshot: `inputs` deleted, `outputs`
    /// added, `changelog` its changelog files; `dv_change` the deletion vectors it changed and
    /// the bucket's vectors it started from. `None` when an input is no longer live in the
    /// latest snapshot (or the vectors changed meanwhile).
    async fn commit_compaction(
        &self,
        at: &BucketId,
        total_buckets: i32,
        inputs: &[DataFileMeta],
        outputs: &[NewFile],
        changelog: &[NewFile],
        dv_change: Option<(&DeletionChange, Option<&BucketDeletions>)>,
    ) -> Result<Option<i64>, StorageError> {
        let mut message = CompactCommit {
            at,
            total_buckets,
            inputs,
            outputs,
            changelog,
            dv_change,
        };
        committer::commit(self, &mut message).await
    }
}

/// A compaction of one bucket, as a commit.
struct CompactCommit<'a> {
    at: &'a BucketId,
    total_buckets: i32,
    inputs: &'a [DataFileMeta],
    outputs: &'a [NewFile],
    changelog: &'a [NewFile],
    dv_change: Option<(&'a DeletionChange, Option<&'a BucketDeletions>)>,
}

impl CommitMessage for CompactCommit<'_> {
    /// The snapshot id; `None` when the compaction was abandoned.
    type Output = Option<i64>;

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<committer::Step<Option<i64>>, StorageError> {
        let Some(latest) = latest else {
            return Ok(committer::Step::Finish(None));
        };
        let at = self.at;
        let live = table.live_files(latest).await?;
        let bucket = live.bucket(at);
        let all_live = self.inputs.iter().all(|i| {
            bucket
                .iter()
                .any(|f| f.level == i.level && f.file_name == i.file_name)
        });
        // The vectors this compaction extended must be the ones it started from, in files
        // still live.
        let same_deletions = self.dv_change.is_none_or(|(c, base_deletions)| {
            live.deletions(at).as_deref().map(|d| &d.entries) == base_deletions.map(|d| &d.entries)
                && c.marked
                    .iter()
                    .all(|m| bucket.iter().any(|f| &f.file_name == m))
        });
        // Rows of a file written under a newer schema than this compaction's (an ALTER TABLE
        // since it opened the table) were read into the older layout: a column added since
        // would be lost.
        let newest_input = self.inputs.iter().map(|f| f.schema_id).max();
        let older_output = self
            .outputs
            .iter()
            .chain(self.changelog)
            .filter(|o| !self.inputs.iter().any(|i| i.file_name == o.meta.file_name))
            .any(|o| newest_input.is_some_and(|n| o.meta.schema_id < n));
        if older_output {
            tracing::info!(
                table = %table.qualified_name(),
                bucket = at.1,
                "compaction abandoned: the table's schema changed meanwhile"
            );
            return Ok(committer::Step::Finish(None));
        }
        if !all_live || !same_deletions {
            tracing::info!(
                table = %table.qualified_name(),
                bucket = at.1,
                "compaction abandoned: its input files changed meanwhile"
            );
            return Ok(committer::Step::Finish(None));
        }
        let entry = |kind: FileKind, file: &DataFileMeta| ManifestEntry {
            kind,
            partition: at.0.clone(),
            bucket: at.1,
            total_buckets: self.total_buckets,
            file: file.clone(),
        };
        let mut entries: Vec<ManifestEntry> = self
            .inputs
            .iter()
            .map(|f| entry(FileKind::Delete, f))
            .collect();
        entries.extend(self.outputs.iter().map(|o| entry(FileKind::Add, &o.meta)));
        let mut content = Content::new(
            CommitKind::Compact,
            entries,
            added_entries(self.changelog),
            Some(latest),
        );
        if let Some((change, _)) = self.dv_change {
            let name = table
                .write_index_manifest(live.deletion_index(), change)
                .await?;
            if let Some(name) = &name {
                content.attempt_files.push(table.manifest_path(name));
            }
            content.index_manifest = name;
        }
        Ok(committer::Step::Publish(content))
    }

    fn published(&mut self, _table: &Table, snapshot: &Snapshot) -> Option<i64> {
        Some(snapshot.id)
    }
}
