//! Net changes of a table between two versions: what `table_changes(t, from, to)` returns.
//!
//! The answer is the difference of two merged states, not a replay of the commits in between,
//! so it is right for every merge engine with or without a changelog producer, and a key
//! changed and changed back shows nothing. Only buckets whose live files differ between the
//! versions are read (a bucket with the same files holds the same rows).
//!
//! Each change names the snapshot of its last commit: the newest APPEND/OVERWRITE snapshot in
//! `(from, to]` whose new files hold the key (key sets are cached, see `key_sets.rs`), else the
//! newest one that deleted files of the bucket (TRUNCATE), else `to` when the snapshots in
//! between have expired.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::compute::{concat_batches, interleave};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::row::{RowConverter, SortField};
use futures::TryStreamExt;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::ReadLayout;
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::live_files::BucketId;
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::meta::time_travel::VersionError;
use crate::storage::read::scan::{ScanFilter, Split};
use crate::storage::spec::manifest::{DataFileMeta, FileKind};

/// Row kinds of a change, as Paimon writes them.
pub const INSERT: &str = "+I";
pub const UPDATE_BEFORE: &str = "-U";
pub const UPDATE_AFTER: &str = "+U";
pub const DELETE: &str = "-D";

/// Where a change row comes from: the old state (0) or the new one (1), and its row.
type Source = (usize, usize);

/// One change: its row kind, its snapshot, and the row it shows.
struct Change {
    kind: &'static str,
    snapshot: i64,
    row: Source,
}

impl Table {
    /// The schema of [`changes`](Self::changes): `rowkind`, `snapshot_id`, then every column.
    pub fn changes_schema(&self) -> Result<SchemaRef, StorageError> {
        let layout = self.full_layout();
        let values = layout.schema()?;
        let mut fields = vec![
            Field::new("rowkind", DataType::Utf8, false),
            Field::new("snapshot_id", DataType::Int64, false),
        ];
        fields.extend(
            values.fields()[layout.value_offset()..]
                .iter()
                .map(|f| f.as_ref().clone()),
        );
        Ok(Arc::new(Schema::new(fields)))
    }

    /// The net change of every row from `from` (exclusive; `None`: the empty table before the
    /// first snapshot) to `to` (inclusive), in [`changes_schema`](Self::changes_schema).
    pub async fn changes(
        &self,
        from: Option<&Snapshot>,
        to: &Snapshot,
    ) -> Result<Vec<RecordBatch>, StorageError> {
        let schema = self.changes_schema()?;
        if let Some(f) = from
            && f.id > to.id
        {
            return Err(StorageError::Version(VersionError::Backwards {
                table: self.qualified_name(),
                from: f.id,
                to: to.id,
            }));
        }
        let old = match from {
            Some(s) => splits_of(self, s).await?,
            None => BTreeMap::new(),
        };
        let new = splits_of(self, to).await?;
        let buckets: BTreeSet<&BucketId> = old.keys().chain(new.keys()).collect();
        let changed: Vec<BucketId> = buckets
            .into_iter()
            .filter(|at| file_names(old.get(*at)) != file_names(new.get(*at)))
            .cloned()
            .collect();
        if changed.is_empty() {
            return Ok(Vec::new());
        }
        let from_id = from.map_or(0, |s| s.id);
        let history = History::read(self, from_id, to, &changed).await?;
        let encoder = KeyEncoder::new(self)?;
        let mut out = Vec::new();
        for at in &changed {
            let (old_split, new_split) = (old.get(at), new.get(at));
            let batch = if encoder.is_empty() {
                self.append_changes(old_split, new_split, &history, &schema)
                    .await?
            } else {
                self.keyed_changes(old_split, new_split, &history, &encoder, &schema)
                    .await?
            };
            if let Some(b) = batch {
                out.push(b);
            }
        }
        Ok(out)
    }

    /// A primary-key bucket: keys only in the new state are +I, only in the old -D, in both
    /// with other values -U (old) and +U (new).
    async fn keyed_changes(
        &self,
        old: Option<&Split>,
        new: Option<&Split>,
        history: &History,
        encoder: &KeyEncoder,
        schema: &SchemaRef,
    ) -> Result<Option<RecordBatch>, StorageError> {
        let layout = self.full_layout();
        let offset = layout.value_offset();
        let states = [
            self.merged(old, &layout).await?,
            self.merged(new, &layout).await?,
        ];
        let values = RowConverter::new(
            states[0].schema().fields()[offset..]
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?;
        let keys = [
            encoder.encode(states[0].columns())?,
            encoder.encode(states[1].columns())?,
        ];
        let vals = [
            values.convert_columns(&states[0].columns()[offset..])?,
            values.convert_columns(&states[1].columns()[offset..])?,
        ];
        let mut old_rows: HashMap<&[u8], usize> = HashMap::new();
        for (i, k) in keys[0].iter().enumerate() {
            old_rows.insert(k.data(), i);
        }
        let split = new.or(old).expect("a changed bucket has files");
        let mut changes = Vec::new();
        for (i, k) in keys[1].iter().enumerate() {
            match old_rows.remove(k.data()) {
                None => changes.push(Change {
                    kind: INSERT,
                    snapshot: history
                        .last_commit(self, split, k.as_ref(), encoder)
                        .await?,
                    row: (1, i),
                }),
                Some(j) if vals[0].row(j) != vals[1].row(i) => {
                    let snapshot = history
                        .last_commit(self, split, k.as_ref(), encoder)
                        .await?;
                    changes.push(Change {
                        kind: UPDATE_BEFORE,
                        snapshot,
                        row: (0, j),
                    });
                    changes.push(Change {
                        kind: UPDATE_AFTER,
                        snapshot,
                        row: (1, i),
                    });
                }
                Some(_) => {}
            }
        }
        let mut gone: Vec<usize> = old_rows.into_values().collect();
        gone.sort_unstable();
        for j in gone {
            let key = keys[0].row(j);
            changes.push(Change {
                kind: DELETE,
                snapshot: history
                    .last_commit(self, split, key.as_ref(), encoder)
                    .await?,
                row: (0, j),
            });
        }
        build(schema, &states, offset, &changes)
    }

    /// An append bucket: rows of files only in the new state are +I, of files only in the old
    /// state -D (rows have no identity beyond their file).
    async fn append_changes(
        &self,
        old: Option<&Split>,
        new: Option<&Split>,
        history: &History,
        schema: &SchemaRef,
    ) -> Result<Option<RecordBatch>, StorageError> {
        let layout = self.full_layout();
        let (old_names, new_names) = (file_names(old), file_names(new));
        let mut states: [Vec<RecordBatch>; 2] = [Vec::new(), Vec::new()];
        let mut changes = Vec::new();
        let sides = [(old, &new_names, DELETE), (new, &old_names, INSERT)];
        for (side, (split, other, kind)) in sides.into_iter().enumerate() {
            let Some(split) = split else { continue };
            let mut files: Vec<&DataFileMeta> = split
                .files
                .iter()
                .filter(|f| !other.contains(f.file_name.as_str()))
                .collect();
            files.sort_by_key(|f| f.min_sequence_number);
            let mut rows = 0;
            for f in files {
                let snapshot = history.file_commit(&f.file_name, kind == DELETE, split);
                let batches: Vec<RecordBatch> = self
                    .open_data_file(split, f, &layout)
                    .await?
                    .try_collect()
                    .await?;
                for b in batches {
                    for r in 0..b.num_rows() {
                        changes.push(Change {
                            kind,
                            snapshot,
                            row: (side, rows + r),
                        });
                    }
                    rows += b.num_rows();
                    states[side].push(b);
                }
            }
        }
        let layout_schema = layout.schema()?;
        let states = [
            concat_batches(&layout_schema, &states[0])?,
            concat_batches(&layout_schema, &states[1])?,
        ];
        build(schema, &states, layout.value_offset(), &changes)
    }

    /// The merged rows of `split` (none when the bucket is absent) in one batch.
    async fn merged(
        &self,
        split: Option<&Split>,
        layout: &ReadLayout,
    ) -> Result<RecordBatch, StorageError> {
        let schema = layout.schema()?;
        let Some(split) = split else {
            return Ok(RecordBatch::new_empty(schema));
        };
        let batches: Vec<RecordBatch> = self.read_split(split, layout).await?.try_collect().await?;
        Ok(concat_batches(&schema, &batches)?)
    }
}

/// The live files of `snapshot` by bucket.
async fn splits_of(
    table: &Table,
    snapshot: &Snapshot,
) -> Result<BTreeMap<BucketId, Split>, StorageError> {
    let plan = table
        .plan_scan(Some(snapshot), &ScanFilter::default())
        .await?;
    Ok(plan
        .splits
        .into_iter()
        .map(|s| ((s.partition_bytes.clone(), s.bucket), s))
        .collect())
}

fn file_names(split: Option<&Split>) -> HashSet<&str> {
    split
        .map(|s| s.files.iter().map(|f| f.file_name.as_str()).collect())
        .unwrap_or_default()
}

/// The commits in `(from, to]` that touched the changed buckets.
struct History {
    to: i64,
    /// Files added per bucket, newest commit first.
    added: HashMap<BucketId, Vec<(i64, DataFileMeta)>>,
    /// Which commit added / deleted each file.
    added_by: HashMap<String, i64>,
    deleted_by: HashMap<String, i64>,
    /// The newest commit that deleted files of each bucket.
    last_delete: HashMap<BucketId, i64>,
}

impl History {
    async fn read(
        table: &Table,
        from: i64,
        to: &Snapshot,
        buckets: &[BucketId],
    ) -> Result<Self, StorageError> {
        let mut history = History {
            to: to.id,
            added: HashMap::new(),
            added_by: HashMap::new(),
            deleted_by: HashMap::new(),
            last_delete: HashMap::new(),
        };
        let wanted: HashSet<&BucketId> = buckets.iter().collect();
        for id in (from + 1..=to.id).rev() {
            // Expired in between: later changes are attributed to `to`.
            let snapshot = if id == to.id {
                to.clone()
            } else {
                match table.snapshots().get(id).await? {
                    Some(s) => s,
                    None => break,
                }
            };
            if snapshot.commit_kind == CommitKind::Compact {
                continue;
            }
            for meta in table
                .read_manifest_list(&snapshot.delta_manifest_list)
                .await?
            {
                for e in table.read_manifest(&meta.file_name).await?.iter() {
                    let at = (e.partition.clone(), e.bucket);
                    if !wanted.contains(&at) {
                        continue;
                    }
                    match e.kind {
                        FileKind::Add => {
                            history.added_by.insert(e.file.file_name.clone(), id);
                            history
                                .added
                                .entry(at)
                                .or_default()
                                .push((id, e.file.clone()));
                        }
                        FileKind::Delete => {
                            history.deleted_by.insert(e.file.file_name.clone(), id);
                            history.last_delete.entry(at).or_insert(id);
                        }
                    }
                }
            }
        }
        Ok(history)
    }

    /// The newest commit whose new files hold `key`, else the newest that deleted files of the
    /// bucket, else `to`.
    async fn last_commit(
        &self,
        table: &Table,
        split: &Split,
        key: &[u8],
        encoder: &KeyEncoder,
    ) -> Result<i64, StorageError> {
        let at = (split.partition_bytes.clone(), split.bucket);
        for (id, file) in self.added.get(&at).into_iter().flatten() {
            if table.key_set(split, file, encoder).await?.contains(key) {
                return Ok(*id);
            }
        }
        Ok(self.last_delete.get(&at).copied().unwrap_or(self.to))
    }

    /// The commit that added (or, for `deleted`, removed) file `name`.
    fn file_commit(&self, name: &str, deleted: bool, split: &Split) -> i64 {
        let by = if deleted {
            &self.deleted_by
        } else {
            &self.added_by
        };
        by.get(name).copied().unwrap_or_else(|| {
            let at = (split.partition_bytes.clone(), split.bucket);
            self.last_delete.get(&at).copied().unwrap_or(self.to)
        })
    }
}

/// The change rows: kind, snapshot, then the value columns of each change's source row.
fn build(
    schema: &SchemaRef,
    states: &[RecordBatch; 2],
    offset: usize,
    changes: &[Change],
) -> Result<Option<RecordBatch>, StorageError> {
    if changes.is_empty() {
        return Ok(None);
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            changes.iter().map(|c| c.kind),
        )),
        Arc::new(Int64Array::from_iter_values(
            changes.iter().map(|c| c.snapshot),
        )),
    ];
    let indices: Vec<Source> = changes.iter().map(|c| c.row).collect();
    for col in offset..states[0].num_columns() {
        let arrays: [&dyn Array; 2] = [
            states[0].column(col).as_ref(),
            states[1].column(col).as_ref(),
        ];
        columns.push(interleave(&arrays, &indices)?);
    }
    Ok(Some(RecordBatch::try_new(Arc::clone(schema), columns)?))
}
