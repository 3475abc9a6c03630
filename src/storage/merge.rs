//! Merge-on-read: the k-way merge of a bucket's sorted runs by key.
//!
//! Every version of a key lives in some sorted run of its bucket; the version with the highest
//! `_SEQUENCE_NUMBER` wins (ties go to the newer run), and a winning `-D`/`-U` means the key is
//! gone. [`KeyGroups`] walks the runs in key order and yields, per key, every version present;
//! [`merge_runs`] turns that into batches of winning rows. Keys are compared in Arrow's row
//! format (one converter for all runs), so a comparison is a `memcmp`, not a per-value match.
//! Memory is bounded by one batch per run plus one output batch.

use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::{filter_record_batch, interleave_record_batch};
use arrow::datatypes::{Int8Type, Int64Type, SchemaRef};
use arrow::row::{OwnedRow, RowConverter, Rows, SortField};
use futures::StreamExt;
use futures::stream::BoxStream;

use super::StorageError;
use super::data_file::{READ_BATCH_SIZE, kind};
use super::table::MergeEngine;

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
}

impl KeyGroups {
    /// Runs in order oldest to newest (the order breaks sequence-number ties).
    pub fn new(
        schema: SchemaRef,
        key_count: usize,
        runs: Vec<RunStream>,
    ) -> Result<Self, StorageError> {
        let fields = schema.fields()[..key_count]
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
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
        })
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
                    self.retained.push(batch);
                }
            }
        }
        Ok(())
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
        Ok(Some((key, versions)))
    }

    /// Drops retained batches no cursor is on; `at` indexes of versions taken before become
    /// invalid. Returns the new index of each old retained batch still kept.
    pub fn compact(&mut self) {
        let mut kept = Vec::new();
        for c in &mut self.cursors {
            if c.done || c.batch == usize::MAX {
                continue;
            }
            kept.push(self.retained[c.batch].clone());
            c.batch = kept.len() - 1;
        }
        self.retained = kept;
    }
}

/// The winning version of a key: highest sequence number, ties to the newer run.
pub fn winner(versions: &[Version]) -> Version {
    *versions
        .iter()
        .max_by_key(|v| (v.sequence, v.run))
        .expect("a group has versions")
}

/// The winning version under `engine` (first-row keeps the oldest live version).
pub fn winner_for(engine: MergeEngine, versions: &[Version]) -> Version {
    match engine {
        MergeEngine::Deduplicate => winner(versions),
        MergeEngine::FirstRow => versions
            .iter()
            .filter(|v| kind::is_add(v.kind))
            .min_by_key(|v| (v.sequence, std::cmp::Reverse(v.run)))
            .copied()
            .unwrap_or_else(|| winner(versions)),
    }
}

/// Merges sorted runs into one stream of the winning versions, in key order, in the runs'
/// layout. With `drop_deletes`, keys whose winner is `-D`/`-U` are left out (a read); without,
/// they are kept (a compaction into a level that is not the last).
pub fn merge_runs(
    schema: SchemaRef,
    key_count: usize,
    runs: Vec<RunStream>,
    drop_deletes: bool,
) -> Result<RunStream, StorageError> {
    merge_runs_with(
        MergeEngine::Deduplicate,
        schema,
        key_count,
        runs,
        drop_deletes,
    )
}

/// [`merge_runs`] under a merge engine.
pub fn merge_runs_with(
    engine: MergeEngine,
    schema: SchemaRef,
    key_count: usize,
    runs: Vec<RunStream>,
    drop_deletes: bool,
) -> Result<RunStream, StorageError> {
    if runs.len() == 1 && drop_deletes {
        let run = runs.into_iter().next().expect("one run");
        return Ok(drop_retracts(run, key_count));
    }
    let groups = KeyGroups::new(schema, key_count, runs)?;
    let stream = futures::stream::try_unfold(groups, move |mut groups| async move {
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(READ_BATCH_SIZE);
        while picks.len() < READ_BATCH_SIZE {
            match groups.next_group().await? {
                None => break,
                Some((_, versions)) => {
                    let w = winner_for(engine, &versions);
                    if !drop_deletes || kind::is_add(w.kind) {
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
    });
    Ok(stream.boxed())
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
