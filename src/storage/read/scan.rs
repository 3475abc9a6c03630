//! Scan planning and split reading: from a snapshot to the live data files of each
//! (partition, bucket), and from those files to merged rows.
//!
//! Planning takes the snapshot's live files (`lsm/scan_plan.rs`: manifests replayed, what the
//! partition and key predicates rule out skipped) and groups them into [`Split`]s, one per
//! (partition, bucket), each with its bucket's deletion vectors. Reading a split merges its
//! files by key only where their key ranges overlap (Paimon's "sections", `lsm/split.rs`); a
//! file whose key range overlaps no other is streamed as is. A transaction's reads lay its own
//! writes over the split ([`Overlay`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::stream;
use futures::{StreamExt, TryStreamExt};

use crate::storage::StorageError;
use crate::storage::lsm::data_file::ReadLayout;
pub use crate::storage::lsm::key_read::KeyQuery;
use crate::storage::lsm::live_files::BucketId;
use crate::storage::lsm::memrun::MEM_SEQUENCE_BASE;
use crate::storage::lsm::merge::{self, RunStream};
use crate::storage::lsm::scan_plan::file_may_match;
pub use crate::storage::lsm::scan_plan::{ScanFilter, ScanPlan};
use crate::storage::lsm::split::sections;
pub use crate::storage::lsm::split::{Overlay, Split};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::{DataFileMeta, FileKind, ManifestEntry};

impl Table {
    /// The snapshot a scan plans against: `snapshot`, else the latest (`None`: an empty table).
    async fn scanned_snapshot(
        &self,
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<Snapshot>, StorageError> {
        match snapshot {
            Some(s) => Ok(Some(s.clone())),
            None => self.current_snapshot().await,
        }
    }

    /// Whether `filter` lets the split of partition `values` and `bucket` hold rows (its
    /// partition predicate, and the buckets its key predicate hashes to): for splits that
    /// come from no file (a read's unflushed commits).
    pub fn split_may_match(&self, filter: &ScanFilter, values: &[Datum], bucket: i32) -> bool {
        if let Some(k) = &filter.key
            && self.key_buckets(k).is_some_and(|b| !b.contains(&bucket))
        {
            return false;
        }
        self.partition_matches(filter, values)
    }

    /// Whether `filter`'s partition predicate holds for partition `values`.
    fn partition_matches(&self, filter: &ScanFilter, values: &[Datum]) -> bool {
        let names = &self.schema().partition_keys;
        filter.partition.as_ref().is_none_or(|p| {
            p.eval(&|c| {
                names
                    .iter()
                    .position(|n| n == c)
                    .and_then(|i| values.get(i))
            })
        })
    }

    /// The live files of `snapshot` (the latest when `None`) that `filter` does not rule out.
    pub async fn plan_scan(
        &self,
        snapshot: Option<&Snapshot>,
        filter: &ScanFilter,
    ) -> Result<ScanPlan, StorageError> {
        let Some(snapshot) = self.scanned_snapshot(snapshot).await? else {
            return Ok(ScanPlan::default());
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

    /// [`plan_scan`](Self::plan_scan) for a read by key: the same splits and files, taken from
    /// the table's cached live files of the snapshot (`lsm/live_files.rs`, moved forward by
    /// delta manifests) instead of a replay of every manifest, so planning a point lookup
    /// costs the buckets its keys hash to, not the table's manifests.
    pub async fn plan_key_scan(
        &self,
        snapshot: Option<&Snapshot>,
        filter: &ScanFilter,
    ) -> Result<ScanPlan, StorageError> {
        let Some(snapshot) = self.scanned_snapshot(snapshot).await? else {
            return Ok(ScanPlan::default());
        };
        let live = match self.live_files(&snapshot).await {
            Ok(live) => live,
            Err(e) => return Err(self.missing_or_expired(snapshot.id, e).await),
        };
        let mut plan = ScanPlan::default();
        let buckets = filter.key.as_ref().and_then(|k| self.key_buckets(k));
        let partition_types = self.partition_types();
        let key_names = self.schema().trimmed_primary_keys();
        let key_types = self.key_types();
        let mut wanted: Vec<(&BucketId, &Arc<Vec<Arc<DataFileMeta>>>)> = live.buckets().collect();
        wanted.sort_by(|a, b| a.0.cmp(b.0));
        let mut entries: Vec<ManifestEntry> = Vec::new();
        for (at, files) in wanted {
            if buckets.as_ref().is_some_and(|b| !b.contains(&at.1)) {
                plan.files_skipped += files.len();
                continue;
            }
            if filter.partition.is_some() {
                let values = binary_row::deserialize(&at.0, &partition_types)?;
                if !self.partition_matches(filter, &values) {
                    plan.files_skipped += files.len();
                    continue;
                }
            }
            for f in files.iter() {
                if let Some(k) = &filter.key
                    && !file_may_match(f, k, &key_names, &key_types)?
                {
                    plan.files_skipped += 1;
                    continue;
                }
                entries.push(ManifestEntry {
                    kind: FileKind::Add,
                    partition: at.0.clone(),
                    bucket: at.1,
                    total_buckets: self.schema().bucket(),
                    file: f.as_ref().clone(),
                });
            }
        }
        if let Some(k) = &filter.key {
            let (kept, skipped) =
                crate::storage::meta::file_indexes::prune(self, entries, k).await?;
            entries = kept;
            plan.files_skipped += skipped;
        }
        let mut splits: Vec<Split> = Vec::new();
        for e in entries {
            match splits.last_mut() {
                Some(s) if s.partition_bytes == e.partition && s.bucket == e.bucket => {
                    s.files.push(e.file);
                }
                _ => splits.push(Split {
                    partition: binary_row::deserialize(&e.partition, &partition_types)?,
                    deletions: live.deletions(&(e.partition.clone(), e.bucket)),
                    partition_bytes: e.partition,
                    bucket: e.bucket,
                    total_buckets: e.total_buckets,
                    files: vec![e.file],
                }),
            }
        }
        plan.splits = splits;
        plan.snapshot = Some(snapshot);
        Ok(plan)
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
        self.read_merged(split, layout, overlay, true, Vec::new(), None)
            .await
    }

    /// [`read_split_with`](Self::read_split_with) restricted to the keys `query` wants: each
    /// file yields only the rows of those keys (`lsm/key_read.rs`), and the merge sees every
    /// version of them, so each key comes out as a full read gives it. Rows of other keys may
    /// come out too (a file too large for a key map is filtered, not skipped); callers filter.
    pub async fn read_split_keys(
        &self,
        split: &Split,
        layout: &ReadLayout,
        overlay: Option<&Overlay>,
        query: &Arc<KeyQuery>,
    ) -> Result<RunStream, StorageError> {
        self.read_merged(split, layout, overlay, true, Vec::new(), Some(query))
            .await
    }

    /// [`read_split`](Self::read_split), but a key whose newest version is a delete keeps that
    /// version (`-D`/`-U`): Paimon's audit-log read (`forceKeepDelete`). `overlay`: the
    /// server's unflushed commits laid over the split (never a transaction's own writes).
    pub async fn read_split_keeping_deletes(
        &self,
        split: &Split,
        layout: &ReadLayout,
        overlay: Option<&Overlay>,
    ) -> Result<RunStream, StorageError> {
        self.read_merged(split, layout, overlay, false, Vec::new(), None)
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
        self.read_merged(split, layout, None, drop_deletes, base, None)
            .await
    }

    async fn read_merged(
        &self,
        split: &Split,
        layout: &ReadLayout,
        overlay: Option<&Overlay>,
        drop_deletes: bool,
        base: Vec<(i32, RunStream)>,
        keys: Option<&Arc<KeyQuery>>,
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
                for (_, r) in &o.logged {
                    mem.push(r.stream(self.schema(), layout, 0, None)?);
                }
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
                    async move { table.open_data_file(&split, &f, &layout).await }
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
        if keys.is_some() {
            // Each file yields a few rows at most: one section, runs oldest first (the order
            // `sections` gives the files of one section, so the files holding a key keep it).
            let mut all: Vec<DataFileMeta> = split.files.clone();
            all.sort_by(|a, b| {
                b.level
                    .cmp(&a.level)
                    .then(a.max_sequence_number.cmp(&b.max_sequence_number))
            });
            sections = if all.is_empty() {
                Vec::new()
            } else {
                vec![all]
            };
        }
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
            for (sequence, r) in &o.logged {
                let only = keys.map(|q| q.positions_in(r)).transpose()?;
                mem.push(r.stream(self.schema(), &layout, *sequence, only.as_deref())?);
            }
            for r in &o.runs {
                let sequence = MEM_SEQUENCE_BASE + i64::from(r.stmt);
                let only = keys.map(|q| q.positions_in(r)).transpose()?;
                mem.push(r.stream(self.schema(), &layout, sequence, only.as_deref())?);
            }
        }
        let mut mem = Some(mem);
        let table = self.clone();
        let split = split.clone();
        let layout = layout.clone();
        let key_count = layout.key_count();
        let merge = Arc::clone(&engine);
        let lookup = self.lookup_merge();
        let keys = keys.cloned();
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
                let keys = keys.clone();
                async move {
                    let mut runs = Vec::with_capacity(section.len() + extra.len() + oldest.len());
                    let mut levels = Vec::with_capacity(runs.capacity());
                    for (level, run) in oldest {
                        levels.push(level);
                        runs.push(run);
                    }
                    for f in &section {
                        levels.push(f.level);
                        runs.push(match &keys {
                            Some(q) => table.open_data_file_at_keys(&split, f, &layout, q).await?,
                            None => table.open_data_file(&split, f, &layout).await?,
                        });
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
}
