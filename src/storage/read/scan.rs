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
use crate::storage::lsm::memrun::MEM_SEQUENCE_BASE;
use crate::storage::lsm::merge::{self, RunStream};
pub use crate::storage::lsm::scan_plan::{ScanFilter, ScanPlan};
use crate::storage::lsm::split::sections;
pub use crate::storage::lsm::split::{Overlay, Split};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::manifest::DataFileMeta;

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
                        runs.push(table.open_data_file(&split, f, &layout).await?);
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
