//! Merge-on-read: the k-way merge of a bucket's sorted runs by key.
//!
//! Every version of a key lives in some sorted run of its bucket. [`KeyGroups`] walks the runs in
//! key order and yields, per key, every version present; [`merge_runs_with`] turns that into
//! batches of merged rows under the table's [`MergeFunction`] (see [`crate::storage::lsm::merge_engine`]).
//! Under plain deduplication the version with the highest `_SEQUENCE_NUMBER` wins (ties go to
//! the newer run) and its row is copied; a winning `-D`/`-U` means the key is gone. Keys (and
//! `sequence.field` columns) are compared in Arrow's row format (one converter for all runs),
//! so a comparison is a `memcmp`, not a per-value match. Memory is bounded by one batch per run
//! plus one output batch.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int8Array, Int64Array, RecordBatch, new_null_array};
use arrow::compute::{SortOptions, filter_record_batch, interleave, interleave_record_batch};
use arrow::datatypes::{Int8Type, Int64Type, SchemaRef};
use arrow::row::{OwnedRow, RowConverter, Rows, SortField};
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{READ_BATCH_SIZE, kind};
use crate::storage::lsm::merge_engine::{
    Cell, MergeFunction, Outcome, VersionRow, datums_to_array,
};
use crate::storage::spec::datum::Datum;

/// A stream of batches whose first `key_count` columns are the key, followed by
/// `_SEQUENCE_NUMBER` and `_VALUE_KIND`; rows are sorted by key.
pub type RunStream = BoxStream<'static, Result<RecordBatch, StorageError>>;

struct Cursor {
    stream: RunStream,
    /// Index of the current batch in `KeyGroups::retained`.
    batch: usize,
    rows: Option<Rows>,
    pos: usize,
    len: usize,
    done: bool,
}

/// One version of a key: which run, and where its row is.
#[derive(Debug, Clone, Copy)]
pub struct Version {
    pub run: usize,
    pub sequence: i64,
    pub kind: i8,
    /// (index into the retained batches, row).
    pub at: (usize, usize),
}

/// Walks sorted runs in key order, yielding every version of each key.
pub struct KeyGroups {
    cursors: Vec<Cursor>,
    converter: RowConverter,
    key_count: usize,
    retained: Vec<RecordBatch>,
    schema: SchemaRef,
    /// Columns ordering the versions of a key before `_SEQUENCE_NUMBER` (`sequence.field`).
    order: Option<(RowConverter, Vec<usize>)>,
    /// Per retained batch, its `order` columns in row format (empty without `order`).
    retained_order: Vec<Rows>,
    /// The LSM level of each run, for tables that merge as Paimon's `LookupMergeFunction`.
    lookup_levels: Option<Vec<i32>>,
}

impl KeyGroups {
    /// Runs in order oldest to newest (the order breaks sequence-number ties).
    pub fn new(
        schema: SchemaRef,
        key_count: usize,
        runs: Vec<RunStream>,
    ) -> Result<Self, StorageError> {
        Self::with_order(schema, key_count, runs, &[], false)
    }

    /// [`KeyGroups::new`], also keeping columns `order` of every batch comparable (see
    /// [`KeyGroups::order_cmp`]): NULL first, values descending when `descending`.
    pub fn with_order(
        schema: SchemaRef,
        key_count: usize,
        runs: Vec<RunStream>,
        order: &[usize],
        descending: bool,
    ) -> Result<Self, StorageError> {
        let fields = schema.fields()[..key_count]
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let order = if order.is_empty() {
            None
        } else {
            let options = SortOptions {
                descending,
                nulls_first: true,
            };
            let fields = order
                .iter()
                .map(|&c| SortField::new_with_options(schema.field(c).data_type().clone(), options))
                .collect();
            Some((RowConverter::new(fields)?, order.to_vec()))
        };
        Ok(Self {
            cursors: runs
                .into_iter()
                .map(|stream| Cursor {
                    stream,
                    batch: usize::MAX,
                    rows: None,
                    pos: 0,
                    len: 0,
                    done: false,
                })
                .collect(),
            converter: RowConverter::new(fields)?,
            key_count,
            retained: Vec::new(),
            schema,
            order,
            retained_order: Vec::new(),
            lookup_levels: None,
        })
    }

    /// Keys keep, of their versions in levels >= 1, only the one of the lowest level (with
    /// every version of level 0 or below: files just written, in-memory runs): Paimon's
    /// `LookupMergeFunction`. In tables that need lookups, compaction to level N merges the
    /// previous version from the levels below into what it writes, so that version is the
    /// key's whole state and the older ones beneath must not be merged again. `levels`: one
    /// per run.
    pub fn with_lookup_levels(mut self, levels: Vec<i32>) -> Self {
        self.lookup_levels = Some(levels);
        self
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Batches that [`Version::at`] indexes into.
    pub fn retained(&self) -> &[RecordBatch] {
        &self.retained
    }

    /// Makes sure cursor `i` has a current row, or is done.
    async fn fill(&mut self, i: usize) -> Result<(), StorageError> {
        let c = &mut self.cursors[i];
        while !c.done && c.pos >= c.len {
            match c.stream.next().await {
                None => {
                    c.done = true;
                    c.rows = None;
                }
                Some(batch) => {
                    let batch = batch?;
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    c.rows = Some(
                        self.converter
                            .convert_columns(&batch.columns()[..self.key_count])?,
                    );
                    c.pos = 0;
                    c.len = batch.num_rows();
                    c.batch = self.retained.len();
                    if let Some((converter, columns)) = &self.order {
                        let arrays: Vec<ArrayRef> = columns
                            .iter()
                            .map(|&i| Arc::clone(batch.column(i)))
                            .collect();
                        self.retained_order
                            .push(converter.convert_columns(&arrays)?);
                    }
                    self.retained.push(batch);
                }
            }
        }
        Ok(())
    }

    /// Orders two versions (their [`Version::at`]) by the `order` columns; `Equal` without.
    pub fn order_cmp(&self, a: (usize, usize), b: (usize, usize)) -> Ordering {
        if self.order.is_none() {
            return Ordering::Equal;
        }
        self.retained_order[a.0]
            .row(a.1)
            .cmp(&self.retained_order[b.0].row(b.1))
    }

    fn current_key(&self, i: usize) -> Option<arrow::row::Row<'_>> {
        let c = &self.cursors[i];
        if c.done {
            return None;
        }
        c.rows.as_ref().map(|r| r.row(c.pos))
    }

    /// Every version of the next key, in run order; `None` when all runs are done.
    pub async fn next_group(&mut self) -> Result<Option<(OwnedRow, Vec<Version>)>, StorageError> {
        for i in 0..self.cursors.len() {
            self.fill(i).await?;
        }
        let mut min: Option<usize> = None;
        for i in 0..self.cursors.len() {
            if let Some(k) = self.current_key(i)
                && min.is_none_or(|m| k < self.current_key(m).expect("current"))
            {
                min = Some(i);
            }
        }
        let Some(m) = min else { return Ok(None) };
        let key = self.current_key(m).expect("current").owned();
        let mut versions = Vec::new();
        for i in 0..self.cursors.len() {
            // A run could hold a key twice (never in files Paimon writes; be safe anyway).
            while self.current_key(i).is_some_and(|k| k == key.row()) {
                let c = &self.cursors[i];
                let batch = &self.retained[c.batch];
                versions.push(Version {
                    run: i,
                    sequence: batch
                        .column(self.key_count)
                        .as_primitive::<Int64Type>()
                        .value(c.pos),
                    kind: batch
                        .column(self.key_count + 1)
                        .as_primitive::<Int8Type>()
                        .value(c.pos),
                    at: (c.batch, c.pos),
                });
                self.cursors[i].pos += 1;
                self.fill(i).await?;
            }
        }
        if let Some(levels) = &self.lookup_levels {
            let level = |v: &Version| levels.get(v.run).copied().unwrap_or(0);
            if let Some(high) = versions.iter().map(level).filter(|l| *l > 0).min() {
                versions.retain(|v| level(v) <= 0 || level(v) == high);
            }
        }
        Ok(Some((key, versions)))
    }

    /// Drops retained batches no cursor is on; `at` indexes of versions taken before become
    /// invalid. Returns the new index of each old retained batch still kept.
    pub fn compact(&mut self) {
        let mut kept = Vec::new();
        let mut kept_order = Vec::new();
        for c in &mut self.cursors {
            if c.done || c.batch == usize::MAX {
                continue;
            }
            kept.push(self.retained[c.batch].clone());
            if self.order.is_some() {
                kept_order.push(self.retained_order[c.batch].clone());
            }
            c.batch = kept.len() - 1;
        }
        self.retained = kept;
        self.retained_order = kept_order;
    }
}

/// Sorts the versions of a key oldest first: by the `sequence.field` columns, then
/// `_SEQUENCE_NUMBER`, then run.
pub fn sort_versions(groups: &KeyGroups, versions: &mut [Version]) {
    versions.sort_by(|a, b| {
        groups
            .order_cmp(a.at, b.at)
            .then(a.sequence.cmp(&b.sequence))
            .then(a.run.cmp(&b.run))
    });
}

/// The winning version of a key: highest sequence number, ties to the newer run.
pub fn winner(versions: &[Version]) -> Version {
    *versions
        .iter()
        .max_by_key(|v| (v.sequence, v.run))
        .expect("a group has versions")
}

/// Merges sorted runs into one stream of the winning versions, in key order, in the runs'
/// layout. With `drop_deletes`, keys whose winner is `-D`/`-U` are left out (a read); without,
/// they are kept (a compaction into a level that is not the last).
#[cfg(test)]
pub fn merge_runs(
    schema: SchemaRef,
    key_count: usize,
    runs: Vec<RunStream>,
    drop_deletes: bool,
) -> Result<RunStream, StorageError> {
    merge_runs_with(
        &Arc::new(MergeFunction::deduplicate()),
        schema,
        key_count,
        runs,
        drop_deletes,
    )
}

/// [`merge_runs`] under a table's merge function (bound to the runs' layout, see
/// [`crate::storage::lsm::merge_engine::MergeOptions::bind`]). Keys whose result is `-D`/`-U` are left out
/// with `drop_deletes`.
#[cfg(test)]
pub fn merge_runs_with(
    engine: &Arc<MergeFunction>,
    schema: SchemaRef,
    key_count: usize,
    runs: Vec<RunStream>,
    drop_deletes: bool,
) -> Result<RunStream, StorageError> {
    merge_runs_leveled(engine, schema, key_count, runs, drop_deletes, None)
}

/// [`merge_runs_with`]; with `lookup_levels` (the level of each run), versions below a key's
/// lowest level >= 1 are left out (see [`KeyGroups::with_lookup_levels`]).
pub fn merge_runs_leveled(
    engine: &Arc<MergeFunction>,
    schema: SchemaRef,
    key_count: usize,
    runs: Vec<RunStream>,
    drop_deletes: bool,
    lookup_levels: Option<Vec<i32>>,
) -> Result<RunStream, StorageError> {
    if runs.len() == 1 && drop_deletes {
        // One version per key: every engine keeps it as it is.
        let run = runs.into_iter().next().expect("one run");
        return Ok(drop_retracts(run, key_count));
    }
    let (order, descending) = engine.order();
    let mut groups = KeyGroups::with_order(schema, key_count, runs, order, descending)?;
    if let Some(levels) = lookup_levels {
        groups = groups.with_lookup_levels(levels);
    }
    let engine = Arc::clone(engine);
    if !engine.chooses_version() {
        return Ok(build_rows(engine, groups, key_count, drop_deletes));
    }
    let stream = futures::stream::try_unfold(groups, move |mut groups| {
        let engine = Arc::clone(&engine);
        async move {
            let plain = engine.is_plain();
            let mut picks: Vec<(usize, usize)> = Vec::with_capacity(READ_BATCH_SIZE);
            while picks.len() < READ_BATCH_SIZE {
                match groups.next_group().await? {
                    None => break,
                    Some((_, mut versions)) => {
                        let w = if versions.len() == 1 || plain {
                            Some(winner(&versions))
                        } else {
                            sort_versions(&groups, &mut versions);
                            engine.choose(&versions, |v| v.kind)?.map(|i| versions[i])
                        };
                        if let Some(w) = w
                            && (!drop_deletes || kind::is_add(w.kind))
                        {
                            picks.push(w.at);
                        }
                    }
                }
            }
            if picks.is_empty() {
                return Ok(None);
            }
            let refs: Vec<&RecordBatch> = groups.retained().iter().collect();
            let out = interleave_record_batch(&refs, &picks)?;
            groups.compact();
            Ok(Some((out, groups)))
        }
    });
    Ok(stream.boxed())
}

/// One row of an output batch that merge functions build.
enum OutRow {
    /// A version's row as it is.
    Copy((usize, usize)),
    /// A merged row; its value cells start at `cells` in [`OutRows::cells`].
    Merged {
        key: (usize, usize),
        sequence: i64,
        kind: i8,
        cells: usize,
    },
}

/// A value of a merged row: NULL, a value of a retained batch, or a computed value.
enum OutCell {
    Null,
    At((usize, usize)),
    Value(Datum),
}

#[derive(Default)]
struct OutRows {
    rows: Vec<OutRow>,
    cells: Vec<OutCell>,
}

/// The merge of partial-update and aggregation tables: rows built column by column.
fn build_rows(
    engine: Arc<MergeFunction>,
    groups: KeyGroups,
    key_count: usize,
    drop_deletes: bool,
) -> RunStream {
    let stream = futures::stream::try_unfold(groups, move |mut groups| {
        let engine = Arc::clone(&engine);
        async move {
            let mut out = OutRows::default();
            while out.rows.len() < READ_BATCH_SIZE {
                let Some((_, mut versions)) = groups.next_group().await? else {
                    break;
                };
                if versions.len() == 1 {
                    let v = versions[0];
                    if !drop_deletes || kind::is_add(v.kind) {
                        out.rows.push(OutRow::Copy(v.at));
                    }
                    continue;
                }
                sort_versions(&groups, &mut versions);
                let rows: Vec<VersionRow<'_>> = versions
                    .iter()
                    .map(|v| VersionRow {
                        batch: &groups.retained()[v.at.0],
                        row: v.at.1,
                        sequence: v.sequence,
                        kind: v.kind,
                    })
                    .collect();
                match engine.merge(&rows)? {
                    Outcome::Nothing => {}
                    Outcome::Version(i) => {
                        let v = versions[i];
                        if !drop_deletes || kind::is_add(v.kind) {
                            out.rows.push(OutRow::Copy(v.at));
                        }
                    }
                    Outcome::Row(m) => {
                        if drop_deletes && !kind::is_add(m.kind) {
                            continue;
                        }
                        out.rows.push(OutRow::Merged {
                            key: versions[m.key_from].at,
                            sequence: m.sequence,
                            kind: m.kind,
                            cells: out.cells.len(),
                        });
                        out.cells.extend(m.values.into_iter().map(|c| match c {
                            Cell::Null => OutCell::Null,
                            Cell::Of(i) => OutCell::At(versions[i].at),
                            Cell::Value(d) => OutCell::Value(d),
                        }));
                    }
                }
            }
            if out.rows.is_empty() {
                return Ok(None);
            }
            let batch = assemble(&engine, groups.schema(), key_count, groups.retained(), out)?;
            groups.compact();
            Ok(Some((batch, groups)))
        }
    });
    stream.boxed()
}

/// The output batch of [`build_rows`]: key columns and value columns copied from `retained`
/// where they can be, computed values built into arrays.
fn assemble(
    engine: &MergeFunction,
    schema: &SchemaRef,
    key_count: usize,
    retained: &[RecordBatch],
    mut out: OutRows,
) -> Result<RecordBatch, StorageError> {
    let value_offset = key_count + 2;
    let value_count = schema.fields().len() - value_offset;
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let arrays_of =
        |c: usize| -> Vec<&dyn Array> { retained.iter().map(|b| b.column(c).as_ref()).collect() };
    for c in 0..key_count {
        let at: Vec<(usize, usize)> = out
            .rows
            .iter()
            .map(|r| match r {
                OutRow::Copy(at) | OutRow::Merged { key: at, .. } => *at,
            })
            .collect();
        columns.push(interleave(&arrays_of(c), &at)?);
    }
    let system = |at: &(usize, usize), c: usize| retained[at.0].column(c);
    columns.push(Arc::new(Int64Array::from_iter_values(out.rows.iter().map(
        |r| {
            match r {
                OutRow::Copy(at) => system(at, key_count)
                    .as_primitive::<Int64Type>()
                    .value(at.1),
                OutRow::Merged { sequence, .. } => *sequence,
            }
        },
    ))));
    columns.push(Arc::new(Int8Array::from_iter_values(out.rows.iter().map(
        |r| {
            match r {
                OutRow::Copy(at) => system(at, key_count + 1)
                    .as_primitive::<Int8Type>()
                    .value(at.1),
                OutRow::Merged { kind, .. } => *kind,
            }
        },
    ))));
    for j in 0..value_count {
        let c = value_offset + j;
        let computed = out.rows.iter().any(|r| {
            matches!(r, OutRow::Merged { cells, .. } if matches!(out.cells[cells + j], OutCell::Value(_)))
        });
        if !computed {
            let nulls = new_null_array(schema.field(c).data_type(), 1);
            let mut arrays = arrays_of(c);
            arrays.push(nulls.as_ref());
            let null_at = (retained.len(), 0);
            let at: Vec<(usize, usize)> = out
                .rows
                .iter()
                .map(|r| match r {
                    OutRow::Copy(at) => *at,
                    OutRow::Merged { cells, .. } => match &out.cells[cells + j] {
                        OutCell::At(at) => *at,
                        OutCell::Null | OutCell::Value(_) => null_at,
                    },
                })
                .collect();
            columns.push(interleave(&arrays, &at)?);
            continue;
        }
        let ty = engine.value_type(j);
        let mut values = Vec::with_capacity(out.rows.len());
        for r in &out.rows {
            let at = match r {
                OutRow::Copy(at) => *at,
                OutRow::Merged { cells, .. } => {
                    match std::mem::replace(&mut out.cells[cells + j], OutCell::Null) {
                        OutCell::Null => {
                            values.push(Datum::Null);
                            continue;
                        }
                        OutCell::Value(d) => {
                            values.push(d);
                            continue;
                        }
                        OutCell::At(at) => at,
                    }
                }
            };
            values.push(Datum::from_array(retained[at.0].column(c), at.1, ty)?);
        }
        columns.push(datums_to_array(values, ty)?);
    }
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// A single run needs no merge: only `-D`/`-U` rows are dropped.
pub fn drop_retracts(run: RunStream, key_count: usize) -> RunStream {
    run.map(move |batch| {
        let batch = batch?;
        let kinds = batch.column(key_count + 1).as_primitive::<Int8Type>();
        if kinds.values().iter().all(|k| kind::is_add(*k)) {
            return Ok(batch);
        }
        let keep = arrow::array::BooleanArray::from_iter(
            kinds.values().iter().map(|k| Some(kind::is_add(*k))),
        );
        Ok(filter_record_batch(&batch, &keep)?)
    })
    .boxed()
}

/// Keeps only columns `indexes` of every batch.
pub fn project(run: RunStream, schema: SchemaRef, indexes: Arc<Vec<usize>>) -> RunStream {
    run.map(move |batch| {
        let batch = batch?;
        let columns = indexes
            .iter()
            .map(|&i| Arc::clone(batch.column(i)))
            .collect();
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&schema),
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?)
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int8Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("_KEY_id", DataType::Int64, false),
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("_VALUE_KIND", DataType::Int8, false),
            Field::new("v", DataType::Utf8, true),
        ]))
    }

    fn run(rows: &[(i64, i64, i8, &str)], batch: usize) -> RunStream {
        let batches: Vec<Result<RecordBatch, StorageError>> = rows
            .chunks(batch)
            .map(|c| {
                Ok(RecordBatch::try_new(
                    schema(),
                    vec![
                        Arc::new(Int64Array::from_iter_values(c.iter().map(|r| r.0))),
                        Arc::new(Int64Array::from_iter_values(c.iter().map(|r| r.1))),
                        Arc::new(Int8Array::from_iter_values(c.iter().map(|r| r.2))),
                        Arc::new(StringArray::from_iter_values(c.iter().map(|r| r.3))),
                    ],
                )
                .unwrap())
            })
            .collect();
        futures::stream::iter(batches).boxed()
    }

    async fn collect(s: RunStream) -> Vec<(i64, String)> {
        let batches: Vec<RecordBatch> = s.map(|b| b.unwrap()).collect().await;
        batches
            .iter()
            .flat_map(|b| {
                let k = b.column(0).as_primitive::<Int64Type>().clone();
                let v = b.column(3).as_string::<i32>().clone();
                (0..b.num_rows())
                    .map(|i| (k.value(i), v.value(i).to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[tokio::test]
    async fn highest_sequence_wins_and_deletes_vanish() {
        let old = run(
            &[
                (1, 1, 0, "a1"),
                (2, 2, 0, "b1"),
                (3, 3, 0, "c1"),
                (5, 4, 0, "e1"),
            ],
            2,
        );
        let new = run(&[(2, 10, 2, "b2"), (3, 11, 3, "c-"), (4, 12, 0, "d2")], 1);
        let merged = merge_runs(schema(), 1, vec![old, new], true).unwrap();
        assert_eq!(
            collect(merged).await,
            [
                (1, "a1".to_owned()),
                (2, "b2".to_owned()),
                (4, "d2".to_owned()),
                (5, "e1".to_owned())
            ]
        );
    }

    #[tokio::test]
    async fn an_older_run_can_hold_the_newer_version() {
        // Sequence numbers, not run order, decide.
        let a = run(&[(1, 9, 0, "newer")], 1);
        let b = run(&[(1, 3, 0, "older")], 1);
        let merged = merge_runs(schema(), 1, vec![a, b], true).unwrap();
        assert_eq!(collect(merged).await, [(1, "newer".to_owned())]);
    }

    #[tokio::test]
    async fn single_run_drops_retractions_without_merging() {
        let r = run(&[(1, 1, 0, "a"), (2, 2, 3, "gone"), (3, 3, 2, "c")], 8);
        let merged = merge_runs(schema(), 1, vec![r], true).unwrap();
        assert_eq!(
            collect(merged).await,
            [(1, "a".to_owned()), (3, "c".to_owned())]
        );
    }

    #[tokio::test]
    async fn many_runs_many_batches() {
        // 7 runs, keys interleaved, each key present in several runs: the newest must win.
        let mut runs = Vec::new();
        let mut expected = std::collections::BTreeMap::new();
        for r in 0..7i64 {
            let rows: Vec<(i64, i64, i8, String)> = (0..500i64)
                .filter(|k| k % (r + 2) == 0)
                .map(|k| (k, r * 1000 + k, 0, format!("r{r}k{k}")))
                .collect();
            for row in &rows {
                expected.insert(row.0, row.3.clone());
            }
            let rows: Vec<(i64, i64, i8, &str)> =
                rows.iter().map(|r| (r.0, r.1, r.2, r.3.as_str())).collect();
            runs.push(run(&rows, 37));
        }
        let merged = merge_runs(schema(), 1, runs, true).unwrap();
        let got = collect(merged).await;
        assert_eq!(got, expected.into_iter().collect::<Vec<_>>());
    }
}
