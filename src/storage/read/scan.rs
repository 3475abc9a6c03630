//! Scan planning and split reading: from a snapshot to the live data files of each
//! (partition, bucket), and from those files to merged rows.
//!
//! Planning reads the snapshot's manifest lists and manifests (decoded manifests are cached:
//! they never change), replays ADD/DELETE entries into the live file set, and skips manifests,
//! partitions and files that the partition and key predicates rule out (by statistics, then by
//! the bloom filters of key columns, `file_index.rs`). Reading a split merges its files by key
//! only where their key ranges overlap (Paimon's "sections"); a file whose key range overlaps no
//! other is streamed as is.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::RecordBatch;
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};

use crate::storage::StorageError;
use crate::storage::io::heap_size::arc_size;
use crate::storage::lsm::data_file::{self, ReadLayout};
use crate::storage::lsm::deletions::{self, BucketDeletions};
use crate::storage::lsm::memrun::MEM_SEQUENCE_BASE;
use crate::storage::lsm::merge::{self, RunStream};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::{
    self, DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta,
};
use crate::storage::spec::predicate::{ColumnStats, Predicate};
use crate::storage::spec::types::PaimonType;
use crate::storage::write::table_write::Overlay;

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

/// What a scan will read.
#[derive(Debug, Clone, Default)]
pub struct ScanPlan {
    pub snapshot: Option<Snapshot>,
    pub splits: Vec<Split>,
    /// Manifest files opened to plan (for tests and EXPLAIN).
    pub manifests_read: usize,
    /// Bytes of the manifest files opened (as their manifest lists record them).
    pub manifest_bytes_read: i64,
    /// Manifest files skipped by their partition statistics.
    pub manifests_skipped: usize,
    /// Data files skipped by partition or key statistics, or by key columns' file indexes.
    pub files_skipped: usize,
}

/// Which data a scan may skip.
#[derive(Debug, Clone, Default)]
pub struct ScanFilter {
    /// On partition columns only: evaluated exactly per partition.
    pub partition: Option<Predicate>,
    /// On primary-key columns only: evaluated on each file's key statistics.
    pub key: Option<Predicate>,
}

impl Table {
    /// The live files of `snapshot` (the latest when `None`) that `filter` does not rule out.
    pub async fn plan_scan(
        &self,
        snapshot: Option<&Snapshot>,
        filter: &ScanFilter,
    ) -> Result<ScanPlan, StorageError> {
        let snapshot = match snapshot {
            Some(s) => s.clone(),
            None => match self.snapshots().latest().await? {
                Some(s) => s,
                None => return Ok(ScanPlan::default()),
            },
        };
        let mut plan = ScanPlan::default();
        let planned = async {
            let entries = self.live_entries(&snapshot, filter, &mut plan).await?;
            Ok((entries, self.deletion_index(&snapshot).await?))
        };
        // A snapshot that expires while it is planned loses its manifests: a race to retry.
        let (entries, deletions) = match planned.await {
            Ok(planned) => planned,
            Err(e) => return Err(self.missing_or_expired(snapshot.id, e).await),
        };
        let partition_types = self.partition_types();
        let mut groups: BTreeMap<(Vec<u8>, i32), Split> = BTreeMap::new();
        for e in entries {
            let split = groups
                .entry((e.partition.clone(), e.bucket))
                .or_insert_with(|| Split {
                    partition: Vec::new(),
                    partition_bytes: e.partition.clone(),
                    bucket: e.bucket,
                    total_buckets: e.total_buckets,
                    files: Vec::new(),
                    deletions: deletions.bucket(&(e.partition.clone(), e.bucket)),
                });
            split.files.push(e.file);
        }
        for split in groups.values_mut() {
            split.partition = binary_row::deserialize(&split.partition_bytes, &partition_types)?;
        }
        plan.splits = groups.into_values().collect();
        plan.snapshot = Some(snapshot);
        Ok(plan)
    }

    /// Replays the manifest entries of `snapshot` into its live files, skipping what `filter`
    /// rules out.
    pub(crate) async fn live_entries(
        &self,
        snapshot: &Snapshot,
        filter: &ScanFilter,
        plan: &mut ScanPlan,
    ) -> Result<Vec<ManifestEntry>, StorageError> {
        let mut metas = self
            .read_manifest_list(&snapshot.base_manifest_list)
            .await?;
        metas.extend(
            self.read_manifest_list(&snapshot.delta_manifest_list)
                .await?,
        );
        let partition_types = self.partition_types();
        let partition_names = self.schema().partition_keys.clone();
        let wanted: Vec<ManifestFileMeta> = metas
            .into_iter()
            .filter(|m| {
                let keep = match &filter.partition {
                    Some(p) => manifest_may_match(m, p, &partition_names, &partition_types),
                    None => true,
                };
                if !keep {
                    plan.manifests_skipped += 1;
                }
                keep
            })
            .collect();
        plan.manifests_read += wanted.len();
        plan.manifest_bytes_read += wanted.iter().map(|m| m.file_size).sum::<i64>();
        let manifests: Vec<Arc<Vec<ManifestEntry>>> = stream::iter(wanted)
            .map(|m| async move { self.read_manifest(&m.file_name).await })
            .buffered(8)
            .try_collect()
            .await?;

        let key_names = self.schema().trimmed_primary_keys();
        let key_types = self.key_types();
        let buckets = filter.key.as_ref().and_then(|k| self.key_buckets(k));
        let mut partition_ok: HashMap<Vec<u8>, bool> = HashMap::new();
        let mut live: HashMap<FileId, ManifestEntry> = HashMap::new();
        let mut order: Vec<FileId> = Vec::new();
        for manifest in manifests {
            for e in manifest.iter() {
                if let Some(p) = &filter.partition {
                    let ok = match partition_ok.get(&e.partition) {
                        Some(ok) => *ok,
                        None => {
                            let values = binary_row::deserialize(&e.partition, &partition_types)?;
                            let ok = p.eval(&|c| {
                                partition_names
                                    .iter()
                                    .position(|n| n == c)
                                    .and_then(|i| values.get(i))
                            });
                            partition_ok.insert(e.partition.clone(), ok);
                            ok
                        }
                    };
                    if !ok {
                        if e.kind == FileKind::Add {
                            plan.files_skipped += 1;
                        }
                        continue;
                    }
                }
                if buckets.as_ref().is_some_and(|b| !b.contains(&e.bucket)) {
                    if e.kind == FileKind::Add {
                        plan.files_skipped += 1;
                    }
                    continue;
                }
                if let Some(k) = &filter.key
                    && !key_names.is_empty()
                    && !file_may_match(&e.file, k, &key_names, &key_types)?
                {
                    if e.kind == FileKind::Add {
                        plan.files_skipped += 1;
                    }
                    continue;
                }
                let id = file_id(e);
                match e.kind {
                    FileKind::Add => {
                        if live.insert(id.clone(), e.clone()).is_none() {
                            order.push(id);
                        }
                    }
                    FileKind::Delete => {
                        live.remove(&id);
                    }
                }
            }
        }
        let live: Vec<ManifestEntry> = order
            .into_iter()
            .filter_map(|id| live.remove(&id))
            .collect();
        // Bloom filters of key columns, over the live files only: applied after the replay, so
        // a DELETE entry always removes its file whatever that file's index says.
        match &filter.key {
            Some(k) if !key_names.is_empty() => {
                let (live, skipped) =
                    crate::storage::spec::file_index::prune(self, live, k).await?;
                plan.files_skipped += skipped;
                Ok(live)
            }
            _ => Ok(live),
        }
    }

    /// The buckets a key predicate can reach: when it fixes every bucket-key column to one
    /// value (or a few, with IN), a point lookup reads one bucket, not all.
    fn key_buckets(&self, predicate: &Predicate) -> Option<std::collections::HashSet<i32>> {
        let schema = self.schema();
        let num_buckets = schema.bucket();
        if num_buckets <= 0 {
            return None;
        }
        let mut conjuncts = Vec::new();
        flatten_and(predicate, &mut conjuncts);
        let keys = schema.bucket_keys();
        let mut choices: Vec<Vec<Datum>> = Vec::new();
        for k in &keys {
            let values = conjuncts.iter().find_map(|p| match p {
                Predicate::Compare {
                    column,
                    op: crate::storage::spec::predicate::CmpOp::Eq,
                    value,
                } if column == k => Some(vec![value.clone()]),
                Predicate::In { column, values } if column == k => Some(values.clone()),
                _ => None,
            })?;
            choices.push(values);
        }
        let combos: usize = choices.iter().map(Vec::len).product();
        if combos == 0 || combos > 256 {
            return None;
        }
        let types: Vec<PaimonType> = keys.iter().map(|k| schema.type_of(k).clone()).collect();
        let mut out = std::collections::HashSet::new();
        let mut writer = binary_row::BinaryRowWriter::new(keys.len());
        for i in 0..combos {
            writer.reset();
            let mut rest = i;
            for (pos, values) in choices.iter().enumerate() {
                let v = &values[rest % values.len()];
                rest /= values.len();
                writer.write_datum(pos, v, &types[pos]).ok()?;
            }
            let hash = crate::storage::spec::bucket::hash_row(writer.bytes());
            out.insert(crate::storage::spec::bucket::bucket_of_hash(
                hash,
                num_buckets,
            ));
        }
        Some(out)
    }

    pub(crate) async fn read_manifest_list(
        &self,
        name: &str,
    ) -> Result<Vec<ManifestFileMeta>, StorageError> {
        if let Some(metas) = self.shared().manifest_lists.get(name) {
            return Ok(metas.as_ref().clone());
        }
        let bytes = self.io().read(&self.manifest_path(name)).await?;
        let metas = manifest::read_manifest_list(&bytes)?;
        let cached = Arc::new(metas.clone());
        let bytes = arc_size(cached.as_ref());
        self.shared().manifest_lists.put(name, cached, bytes);
        Ok(metas)
    }

    pub(crate) async fn read_manifest(
        &self,
        name: &str,
    ) -> Result<Arc<Vec<ManifestEntry>>, StorageError> {
        if let Some(entries) = self.shared().manifests.get(name) {
            return Ok(entries);
        }
        let bytes = self.io().read(&self.manifest_path(name)).await?;
        let entries = Arc::new(manifest::read_manifest(&bytes)?);
        self.shared()
            .manifests
            .put(name, Arc::clone(&entries), arc_size(entries.as_ref()));
        Ok(entries)
    }

    /// The read layout of a primary-key table: its trimmed key, the system columns, then
    /// `values` (indexes into the current schema's fields).
    pub fn read_layout(&self, values: &[usize]) -> ReadLayout {
        let schema = self.schema();
        let has_key = schema.has_primary_key();
        ReadLayout {
            keys: if has_key {
                schema
                    .trimmed_primary_keys()
                    .iter()
                    .map(|k| schema.field(k).expect("key field").clone())
                    .collect()
            } else {
                Vec::new()
            },
            system: has_key,
            values: values.iter().map(|&i| schema.fields[i].clone()).collect(),
        }
    }

    /// Merged rows of `split` in `layout` (winning versions only, deletes dropped), in key order
    /// for primary-key tables, file order for append tables.
    pub async fn read_split(
        &self,
        split: &Split,
        layout: &ReadLayout,
    ) -> Result<RunStream, StorageError> {
        self.read_split_with(split, layout, None).await
    }

    /// [`read_split`](Self::read_split) with a transaction's own writes to the split layered on
    /// top (`overlay`: its spilled files and in-memory runs, newer than every file).
    pub async fn read_split_with(
        &self,
        split: &Split,
        layout: &ReadLayout,
        overlay: Option<&Overlay>,
    ) -> Result<RunStream, StorageError> {
        self.read_merged(split, layout, overlay, true, Vec::new())
            .await
    }

    /// [`read_split`](Self::read_split), but a key whose newest version is a delete keeps that
    /// version (`-D`/`-U`): Paimon's audit-log read (`forceKeepDelete`).
    pub async fn read_split_keeping_deletes(
        &self,
        split: &Split,
        layout: &ReadLayout,
    ) -> Result<RunStream, StorageError> {
        self.read_merged(split, layout, None, false, Vec::new())
            .await
    }

    /// Merged rows of `split` in `layout`, keeping keys whose newest version is a delete unless
    /// `drop_deletes`: what compaction writes. `base`: rows older than every file of the split
    /// to merge in as well, with their levels (versions a lookup found in levels the compaction
    /// leaves alone).
    pub(crate) async fn read_split_merging(
        &self,
        split: &Split,
        layout: &ReadLayout,
        drop_deletes: bool,
        base: Vec<(i32, RunStream)>,
    ) -> Result<RunStream, StorageError> {
        self.read_merged(split, layout, None, drop_deletes, base)
            .await
    }

    async fn read_merged(
        &self,
        split: &Split,
        layout: &ReadLayout,
        overlay: Option<&Overlay>,
        drop_deletes: bool,
        base: Vec<(i32, RunStream)>,
    ) -> Result<RunStream, StorageError> {
        let overlay = overlay.filter(|o| !o.is_empty()).cloned();
        if !layout.system {
            // Append table: files in sequence order, no merge.
            // Files are opened one after another, as the previous one is exhausted.
            let mut files = split.files.clone();
            files.sort_by_key(|f| f.min_sequence_number);
            let mut mem: Vec<RunStream> = Vec::new();
            if let Some(o) = &overlay {
                files.extend(o.files.iter().cloned());
                for r in &o.runs {
                    mem.push(r.stream(self.schema(), layout, 0, None)?);
                }
            }
            let table = self.clone();
            let split = split.clone();
            let layout = layout.clone();
            return Ok(stream::iter(files)
                .then(move |f| {
                    let (table, split, layout) = (table.clone(), split.clone(), layout.clone());
                    async move { table.open_file(&split, &f, &layout).await }
                })
                .try_flatten()
                .chain(stream::iter(mem).flatten())
                .boxed());
        }
        let (engine, layout) =
            crate::storage::lsm::merge_engine::MergeOptions::from_schema(self.schema())
                .and_then(|options| options.bind(self.schema(), layout))
                .map_err(|reason| {
                    StorageError::Unsupported(format!(
                        "cannot read table {}: {reason}",
                        self.qualified_name()
                    ))
                })?;
        // The merge may read columns besides the asked-for ones (sequence fields); `output`
        // cuts them off again.
        let (engine, schema) = (Arc::new(engine), layout.schema()?);
        let key_types = self.key_types();
        let mut sections = sections(&split.files, &key_types)?;
        if !base.is_empty() {
            // The base rows may hold any key: one section.
            let mut all: Vec<DataFileMeta> = sections.into_iter().flatten().collect();
            all.sort_by(|a, b| {
                b.level
                    .cmp(&a.level)
                    .then(a.max_sequence_number.cmp(&b.max_sequence_number))
            });
            sections = vec![all];
        }
        let mut base = Some(base);
        let mut mem: Vec<RunStream> = Vec::new();
        if let Some(o) = &overlay {
            // The transaction's writes may touch any key: one section, overlay runs newest.
            let mut all: Vec<DataFileMeta> = sections.into_iter().flatten().collect();
            all.extend(o.files.iter().cloned());
            sections = vec![all];
            for r in &o.runs {
                let sequence = MEM_SEQUENCE_BASE + i64::from(r.stmt);
                mem.push(r.stream(self.schema(), &layout, sequence, None)?);
            }
        }
        let mut mem = Some(mem);
        let table = self.clone();
        let split = split.clone();
        let layout = layout.clone();
        let key_count = layout.key_count();
        let merge = Arc::clone(&engine);
        let lookup = self.lookup_merge();
        // Sections are opened lazily, one after another, so only one section's files are open.
        let out = stream::iter(sections)
            .then(move |section| {
                let table = table.clone();
                let split = split.clone();
                let layout = layout.clone();
                let schema = Arc::clone(&schema);
                let engine = Arc::clone(&merge);
                let extra = mem.take().unwrap_or_default();
                let oldest = base.take().unwrap_or_default();
                async move {
                    let mut runs = Vec::with_capacity(section.len() + extra.len() + oldest.len());
                    let mut levels = Vec::with_capacity(runs.capacity());
                    for (level, run) in oldest {
                        levels.push(level);
                        runs.push(run);
                    }
                    for f in &section {
                        levels.push(f.level);
                        runs.push(table.open_file(&split, f, &layout).await?);
                    }
                    // In-memory runs: below every level, like Paimon's write buffer.
                    levels.resize(levels.len() + extra.len(), -1);
                    runs.extend(extra);
                    let levels = lookup.then_some(levels);
                    merge::merge_runs_leveled(
                        &engine,
                        schema,
                        key_count,
                        runs,
                        drop_deletes,
                        levels,
                    )
                }
            })
            .try_flatten();
        Ok(engine.output(out.boxed()))
    }

    /// Streams one data file of `split` in `layout`.
    pub(crate) async fn open_data_file(
        &self,
        split: &Split,
        file: &DataFileMeta,
        layout: &ReadLayout,
    ) -> Result<BoxStream<'static, Result<RecordBatch, StorageError>>, StorageError> {
        self.open_file(split, file, layout).await
    }

    async fn open_file(
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
        let path = self.bucket_path(&split.partition, split.bucket);
        let alternate = self
            .alternate_bucket_path(&split.partition, split.bucket)
            .map(|p| p.join(file.file_name.as_str()));
        let rows = data_file::read_file(
            self.io(),
            path.join(file.file_name.as_str()),
            alternate,
            file.file_size as u64,
            &file_schema,
            layout,
        )
        .await?;
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

fn flatten_and<'a>(p: &'a Predicate, out: &mut Vec<&'a Predicate>) {
    match p {
        Predicate::And(ps) => ps.iter().for_each(|p| flatten_and(p, out)),
        other => out.push(other),
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

fn manifest_may_match(
    m: &ManifestFileMeta,
    predicate: &Predicate,
    names: &[String],
    types: &[PaimonType],
) -> bool {
    stats_may_match(
        &m.partition_stats,
        m.num_added_files + m.num_deleted_files,
        predicate,
        names,
        types,
    )
}

fn file_may_match(
    f: &DataFileMeta,
    predicate: &Predicate,
    names: &[String],
    types: &[PaimonType],
) -> Result<bool, StorageError> {
    Ok(stats_may_match(
        &f.key_stats,
        f.row_count,
        predicate,
        names,
        types,
    ))
}

/// Whether rows described by `stats` (min/max/null counts of columns `names`) may satisfy
/// `predicate`; unreadable statistics never exclude anything.
fn stats_may_match(
    stats: &crate::storage::spec::manifest::SimpleStats,
    row_count: i64,
    predicate: &Predicate,
    names: &[String],
    types: &[PaimonType],
) -> bool {
    let (Ok(min), Ok(max)) = (
        binary_row::deserialize(&stats.min_values, types),
        binary_row::deserialize(&stats.max_values, types),
    ) else {
        return true;
    };
    if min.len() != names.len() || max.len() != names.len() {
        return true;
    }
    predicate.may_match(&|c| {
        let i = names.iter().position(|n| n == c)?;
        Some(ColumnStats {
            min: (!min[i].is_null()).then(|| min[i].clone()),
            max: (!max[i].is_null()).then(|| max[i].clone()),
            null_count: stats
                .null_counts
                .as_ref()
                .and_then(|n| n.get(i).copied().flatten()),
            row_count,
        })
    })
}
