//! [`MemRun`]: one finished statement's rows of one bucket, held in memory until the
//! transaction commits — sorted by key, one version per key, each with its row kind.
//!
//! A transaction's own writes are an extra sorted run layered on top of the snapshot it reads
//! (read-your-writes): [`MemRun::stream`] presents a run in any read layout, with a sequence
//! number above every file's, so the ordinary merge lets it win. At COMMIT the runs of a bucket
//! are folded into one level-0 file whose sequence numbers are assigned then, under the commit
//! lock, in commit order.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int8Array, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{SortOptions, concat, concat_batches, take, take_record_batch};
use arrow::datatypes::Int8Type;
use arrow::row::{RowConverter, Rows, SortField};
use futures::StreamExt;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{ReadLayout, kind};
use crate::storage::lsm::merge::RunStream;
use crate::storage::lsm::merge_engine::{
    Cell, MergeEngine, MergeFunction, MergeOptions, Outcome, VersionRow, datums_to_array,
};
use crate::storage::spec::datum::Datum;
use crate::storage::spec::schema::TableSchema;

/// Sequence numbers given to in-memory runs when they are read: above any real one.
pub const MEM_SEQUENCE_BASE: i64 = i64::MAX / 2;

/// How a statement's rows are checked and folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// PostgreSQL's INSERT: an existing key (or one given twice) fails with 23505.
    Insert,
    /// Blind upsert: the last version of a key wins; nothing is read or checked, and other
    /// transactions writing the same key don't conflict with it (the later commit wins).
    Upsert,
    /// Row changes computed from what the transaction read (UPDATE, DELETE, MERGE, ON
    /// CONFLICT): rows carry their kinds; a key added twice fails with 23505; an added key
    /// (`+I`) that the statement did not also delete must not exist yet; at COMMIT, a key that
    /// another transaction changed since this one's snapshot fails with 40001.
    Change,
}

/// One statement's rows of one (partition, bucket).
#[derive(Debug, Clone)]
pub struct MemRun {
    pub stmt: u32,
    pub mode: WriteMode,
    /// The snapshot the statement read: commits after it that touched the same keys conflict.
    pub read_at: i64,
    /// The commit-log position the statement read at (0 without a log): this server's
    /// transactions logged after it that touched the same keys conflict.
    pub read_lsn: u64,
    pub partition: Vec<Datum>,
    pub partition_bytes: Vec<u8>,
    pub bucket: i32,
    /// Trimmed primary-key columns (empty for append tables).
    pub keys: Vec<ArrayRef>,
    pub kinds: Int8Array,
    /// Rows in the table schema's column order.
    pub rows: RecordBatch,
    /// Row positions whose keys must not already exist (checked `+I`), ascending.
    pub probes: Vec<u32>,
    pub bytes: usize,
}

impl MemRun {
    pub fn len(&self) -> usize {
        self.rows.num_rows()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.num_rows() == 0
    }

    /// The run in `layout`, with sequence number `sequence` on every row. `only` keeps just
    /// those row positions (the probes of a key check).
    pub fn stream(
        &self,
        schema: &TableSchema,
        layout: &ReadLayout,
        sequence: i64,
        only: Option<&[u32]>,
    ) -> Result<RunStream, StorageError> {
        let out_schema = layout.schema()?;
        let pick = only.map(|p| UInt32Array::from(p.to_vec()));
        let select = |c: &ArrayRef| -> Result<ArrayRef, StorageError> {
            Ok(match &pick {
                Some(p) => take(c, p, None)?,
                None => Arc::clone(c),
            })
        };
        let rows = only.map_or(self.len(), <[u32]>::len);
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(out_schema.fields().len());
        for k in &self.keys {
            columns.push(select(k)?);
        }
        if layout.system {
            columns.push(Arc::new(Int64Array::from_value(sequence, rows)));
            columns.push(select(&(Arc::new(self.kinds.clone()) as ArrayRef))?);
        }
        for v in &layout.values {
            let i = schema
                .fields
                .iter()
                .position(|f| f.id == v.id)
                .ok_or_else(|| StorageError::format(format!("no field {} in schema", v.name)))?;
            columns.push(select(self.rows.column(i))?);
        }
        let columns = cast_to_fields(columns, out_schema.fields())?;
        let batch = RecordBatch::try_new_with_options(
            out_schema,
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?;
        Ok(futures::stream::once(async move { Ok(batch) }).boxed())
    }
}

/// A statement's buffered rows of one bucket, sorted and folded to one version per key.
pub struct Folded {
    pub keys: Vec<ArrayRef>,
    pub kinds: Int8Array,
    pub rows: RecordBatch,
    pub probes: Vec<u32>,
}

/// The key of row `row` that broke a rule (for the 23505 message).
pub struct DuplicateAt {
    pub key: Vec<Datum>,
}

/// Sorts one statement's rows of a bucket by key and folds each key to one version under
/// `mode`. Without a primary key the rows stay as they are (all `+I`).
///
/// Under a merge engine other than plain deduplicate (see [`fold_merge`]), the versions of a
/// key that an upsert writes merge into the row a Paimon reader would make of them, and a
/// change statement's delete and new row of one key merge likewise; plain INSERT folding never
/// merges (a key twice is 23505).
pub fn fold_statement(
    schema: &TableSchema,
    batch: RecordBatch,
    kinds: Int8Array,
    mode: WriteMode,
) -> Result<Result<Folded, DuplicateAt>, StorageError> {
    if schema.has_primary_key()
        && mode != WriteMode::Insert
        && let Some(merge) = fold_merge(schema)?
    {
        return Ok(fold_merged(schema, &merge, batch, kinds, Some(mode))?.map(|(main, _)| main));
    }
    fold_plain(schema, batch, kinds, mode)
}

/// [`fold_statement`] when the newest version of a key wins (or a key may come only once).
fn fold_plain(
    schema: &TableSchema,
    batch: RecordBatch,
    kinds: Int8Array,
    mode: WriteMode,
) -> Result<Result<Folded, DuplicateAt>, StorageError> {
    if !schema.has_primary_key() {
        let n = batch.num_rows() as u32;
        return Ok(Ok(Folded {
            keys: Vec::new(),
            kinds,
            rows: batch,
            probes: if mode == WriteMode::Upsert {
                Vec::new()
            } else {
                (0..n).collect()
            },
        }));
    }
    let key_idx = schema.indexes_of(&schema.trimmed_primary_keys());
    let key_cols: Vec<ArrayRef> = key_idx
        .iter()
        .map(|&i| Arc::clone(batch.column(i)))
        .collect();
    let rows = key_rows(&key_cols)?;
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    // Stable: among equal keys the later row stays later.
    order.sort_by(|a, b| rows.row(*a as usize).cmp(&rows.row(*b as usize)));
    let kind_of = |i: u32| kinds.value(i as usize);
    let mut keep: Vec<u32> = Vec::with_capacity(order.len());
    let mut probes: Vec<u32> = Vec::new();
    let mut at = 0;
    while at < order.len() {
        let mut end = at + 1;
        while end < order.len() && rows.row(order[end] as usize) == rows.row(order[at] as usize) {
            end += 1;
        }
        let group = &order[at..end];
        at = end;
        let (pick, probe) = match mode {
            WriteMode::Upsert => (*group.last().expect("group"), false),
            WriteMode::Insert => {
                if group.len() > 1 {
                    return Ok(Err(duplicate_at(&key_cols, schema, &key_idx, group[1])?));
                }
                (group[0], true)
            }
            WriteMode::Change => {
                let adds: Vec<u32> = group
                    .iter()
                    .copied()
                    .filter(|&i| kind::is_add(kind_of(i)))
                    .collect();
                if adds.len() > 1 {
                    return Ok(Err(duplicate_at(&key_cols, schema, &key_idx, adds[1])?));
                }
                match adds.first() {
                    Some(&a) => {
                        let deleted_here = adds.len() < group.len();
                        (a, kind_of(a) == kind::INSERT && !deleted_here)
                    }
                    None => (*group.last().expect("group"), false),
                }
            }
        };
        if probe {
            probes.push(keep.len() as u32);
        }
        keep.push(pick);
    }
    let indices = UInt32Array::from(keep);
    let sorted = take_record_batch(&batch, &indices)?;
    let keys = key_cols
        .iter()
        .map(|c| take(c, &indices, None))
        .collect::<Result<Vec<_>, _>>()?;
    let kinds = take(&kinds, &indices, None)?
        .as_primitive::<Int8Type>()
        .clone();
    Ok(Ok(Folded {
        keys,
        kinds,
        rows: sorted,
        probes,
    }))
}

/// Folds the runs of one bucket (oldest statement first) into what a commit writes: sorted
/// runs, oldest first, each with one version per key — under plain deduplicate one run, in
/// which the newest statement's version wins.
///
/// Under other merge engines each key's versions (ordered by `sequence.field`, then statement)
/// merge into the row a Paimon reader makes of them, so a later read merges that row with older
/// files as it would have merged the versions one by one (an aggregation's sum of the
/// transaction's contributions, for one). A version that starts a key afresh (a `-D` under
/// `remove-record-on-delete`, see [`MergeFunction::resets`]) followed by others cannot be one
/// row: older files would merge into it. It is written in a run of its own, before the merge of
/// the versions after it.
pub fn fold_runs(schema: &TableSchema, runs: &[&MemRun]) -> Result<Vec<Folded>, StorageError> {
    let batches: Vec<&RecordBatch> = runs.iter().map(|r| &r.rows).collect();
    let arrow_schema = batches[0].schema();
    let batch = concat_batches(&arrow_schema, batches)?;
    let kinds: Vec<&dyn Array> = runs.iter().map(|r| &r.kinds as &dyn Array).collect();
    let kinds = concat(&kinds)?.as_primitive::<Int8Type>().clone();
    if schema.has_primary_key()
        && let Some(merge) = fold_merge(schema)?
    {
        let Ok((main, resets)) = fold_merged(schema, &merge, batch, kinds, None)? else {
            unreachable!("folding runs never refuses a key")
        };
        return Ok(resets.into_iter().chain([main]).collect());
    }
    match fold_plain(schema, batch, kinds, WriteMode::Upsert)? {
        Ok(f) => Ok(vec![f]),
        Err(_) => unreachable!("upsert folding never fails"),
    }
}

/// The merge function that folds versions of `schema`'s keys, or `None` when the newest
/// version wins (plain deduplicate: no `sequence.field`, no `ignore-delete`).
pub fn fold_merge(schema: &TableSchema) -> Result<Option<MergeFunction>, StorageError> {
    let options = MergeOptions::from_schema(schema).map_err(StorageError::Unsupported)?;
    if options.is_plain() {
        return Ok(None);
    }
    // Every column, in the table's order, at the start of the batch: the merge function reads
    // a statement's rows as they are.
    let layout = ReadLayout {
        keys: Vec::new(),
        system: false,
        values: schema.fields.clone(),
    };
    let (function, _) = options
        .bind(schema, &layout)
        .map_err(StorageError::Unsupported)?;
    Ok(Some(function))
}

/// Folds rows (in the table's column order) to one version per key under `merge`. `mode`: the
/// statement's (`Upsert` or `Change`), or `None` for a commit's fold of runs, which also returns
/// the run of versions that start keys afresh (see [`fold_runs`]).
fn fold_merged(
    schema: &TableSchema,
    merge: &MergeFunction,
    batch: RecordBatch,
    kinds: Int8Array,
    mode: Option<WriteMode>,
) -> Result<Result<(Folded, Option<Folded>), DuplicateAt>, StorageError> {
    let key_idx = schema.indexes_of(&schema.trimmed_primary_keys());
    let key_cols: Vec<ArrayRef> = key_idx
        .iter()
        .map(|&i| Arc::clone(batch.column(i)))
        .collect();
    let rows = key_rows(&key_cols)?;
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    order.sort_by(|a, b| rows.row(*a as usize).cmp(&rows.row(*b as usize)));
    // `sequence.field` values in row format: NULL oldest, as reads order them.
    let (order_cols, descending) = merge.order();
    let sequence = if order_cols.is_empty() {
        None
    } else {
        let options = SortOptions {
            descending,
            nulls_first: true,
        };
        let converter = RowConverter::new(
            order_cols
                .iter()
                .map(|&c| SortField::new_with_options(batch.column(c).data_type().clone(), options))
                .collect(),
        )?;
        let columns: Vec<ArrayRef> = order_cols
            .iter()
            .map(|&c| Arc::clone(batch.column(c)))
            .collect();
        Some(converter.convert_columns(&columns)?)
    };
    let kind_of = |i: u32| kinds.value(i as usize);
    let mut main = FoldBuilder::default();
    let mut resets = FoldBuilder::default();
    let mut probes: Vec<u32> = Vec::new();
    let mut at = 0;
    while at < order.len() {
        let mut end = at + 1;
        while end < order.len() && rows.row(order[end] as usize) == rows.row(order[at] as usize) {
            end += 1;
        }
        let mut group: Vec<u32> = order[at..end].to_vec();
        at = end;
        let mut probe = false;
        match mode {
            Some(WriteMode::Insert) => {
                if group.len() > 1 {
                    return Ok(Err(duplicate_at(&key_cols, schema, &key_idx, group[1])?));
                }
                probe = true;
            }
            Some(WriteMode::Change) => {
                let adds: Vec<u32> = group
                    .iter()
                    .copied()
                    .filter(|&i| kind::is_add(kind_of(i)))
                    .collect();
                if adds.len() > 1 {
                    return Ok(Err(duplicate_at(&key_cols, schema, &key_idx, adds[1])?));
                }
                if let Some(&a) = adds.first() {
                    let deleted_here = adds.len() < group.len();
                    probe = kind_of(a) == kind::INSERT && !deleted_here;
                    if deleted_here && group.iter().any(|&i| merge.resets(kind_of(i))) {
                        return Err(StorageError::Unsupported(format!(
                            "this statement deletes a key and writes it again, which tarn cannot                              write as one version on a table with '{}.remove-record-on-delete'                              = 'true'; delete and insert in separate statements",
                            if merge.engine() == MergeEngine::Aggregation {
                                "aggregation"
                            } else {
                                "partial-update"
                            }
                        )));
                    }
                }
                // One statement's changes of a key: its delete comes before its new row.
                group.sort_by_key(|&i| kind::is_add(kind_of(i)));
            }
            Some(WriteMode::Upsert) | None => {
                if let Some(sequence) = &sequence {
                    group.sort_by(|a, b| sequence.row(*a as usize).cmp(&sequence.row(*b as usize)));
                }
            }
        }
        if mode.is_none()
            && let Some(r) = group.iter().rposition(|&i| merge.resets(kind_of(i)))
            && r + 1 < group.len()
        {
            resets.rows.push(FoldRow::Copy(group[r]));
            group.drain(..=r);
        }
        if probe {
            probes.push(main.rows.len() as u32);
        }
        main.push(merge, &batch, &kinds, &group)?;
    }
    let main = main.finish(merge, &batch, &kinds, &key_cols, probes)?;
    let resets = if resets.rows.is_empty() {
        None
    } else {
        Some(resets.finish(merge, &batch, &kinds, &key_cols, Vec::new())?)
    };
    Ok(Ok((main, resets)))
}

/// One row of a fold's output.
enum FoldRow {
    /// Row `i` of the input as it is.
    Copy(u32),
    /// A merged row: its key from input row `key`, its value cells from `cells` on.
    Merged { key: u32, kind: i8, cells: usize },
}

/// A value of a merged row.
enum FoldCell {
    Null,
    /// The value of input row `i`.
    At(u32),
    Value(Datum),
}

/// The output of a fold, row by row, built into arrays at the end.
#[derive(Default)]
struct FoldBuilder {
    rows: Vec<FoldRow>,
    cells: Vec<FoldCell>,
}

impl FoldBuilder {
    /// Adds what `versions` (input rows of one key, oldest first) merge into.
    fn push(
        &mut self,
        merge: &MergeFunction,
        batch: &RecordBatch,
        kinds: &Int8Array,
        versions: &[u32],
    ) -> Result<(), StorageError> {
        if let [only] = versions {
            self.rows.push(FoldRow::Copy(*only));
            return Ok(());
        }
        let rows: Vec<VersionRow<'_>> = versions
            .iter()
            .enumerate()
            .map(|(s, &i)| VersionRow {
                batch,
                row: i as usize,
                sequence: s as i64,
                kind: kinds.value(i as usize),
            })
            .collect();
        match merge.merge(&rows)? {
            Outcome::Version(v) => self.rows.push(FoldRow::Copy(versions[v])),
            // Every version was ignored (deletes under ignore-delete): the last is kept, which
            // reads ignore just as well.
            Outcome::Nothing => self
                .rows
                .push(FoldRow::Copy(*versions.last().expect("versions"))),
            Outcome::Row(m) => {
                self.rows.push(FoldRow::Merged {
                    key: versions[m.key_from],
                    kind: m.kind,
                    cells: self.cells.len(),
                });
                self.cells.extend(m.values.into_iter().map(|c| match c {
                    Cell::Null => FoldCell::Null,
                    Cell::Of(v) => FoldCell::At(versions[v]),
                    Cell::Value(d) => FoldCell::Value(d),
                }));
            }
        }
        Ok(())
    }

    fn finish(
        mut self,
        merge: &MergeFunction,
        batch: &RecordBatch,
        kinds: &Int8Array,
        key_cols: &[ArrayRef],
        probes: Vec<u32>,
    ) -> Result<Folded, StorageError> {
        let key_at = UInt32Array::from_iter_values(self.rows.iter().map(|r| match r {
            FoldRow::Copy(i) | FoldRow::Merged { key: i, .. } => *i,
        }));
        let keys = key_cols
            .iter()
            .map(|c| take(c, &key_at, None))
            .collect::<Result<Vec<_>, _>>()?;
        let out_kinds = Int8Array::from_iter_values(self.rows.iter().map(|r| match r {
            FoldRow::Copy(i) => kinds.value(*i as usize),
            FoldRow::Merged { kind, .. } => *kind,
        }));
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
        for (j, column) in batch.columns().iter().enumerate() {
            let computed = self.rows.iter().any(|r| {
                matches!(r, FoldRow::Merged { cells, .. }
                    if matches!(self.cells[cells + j], FoldCell::Value(_)))
            });
            if !computed {
                let at = UInt32Array::from_iter(self.rows.iter().map(|r| match r {
                    FoldRow::Copy(i) => Some(*i),
                    FoldRow::Merged { cells, .. } => match self.cells[cells + j] {
                        FoldCell::At(i) => Some(i),
                        FoldCell::Null | FoldCell::Value(_) => None,
                    },
                }));
                columns.push(take(column, &at, None)?);
                continue;
            }
            let ty = merge.value_type(j);
            let mut values = Vec::with_capacity(self.rows.len());
            for r in &self.rows {
                let i = match r {
                    FoldRow::Copy(i) => *i,
                    FoldRow::Merged { cells, .. } => {
                        match std::mem::replace(&mut self.cells[cells + j], FoldCell::Null) {
                            FoldCell::Null => {
                                values.push(Datum::Null);
                                continue;
                            }
                            FoldCell::Value(d) => {
                                values.push(d);
                                continue;
                            }
                            FoldCell::At(i) => i,
                        }
                    }
                };
                values.push(Datum::from_array(column, i as usize, ty)?);
            }
            let array = datums_to_array(values, ty)?;
            columns.push(if array.data_type() == column.data_type() {
                array
            } else {
                arrow::compute::cast(&array, column.data_type())?
            });
        }
        let rows = RecordBatch::try_new(batch.schema(), columns)?;
        Ok(Folded {
            keys,
            kinds: out_kinds,
            rows,
            probes,
        })
    }
}

/// `columns` with the types of `fields` (same types up to nested field names, e.g. a list's
/// "item" vs Paimon's "element", or a key read in another layout).
pub fn cast_to_fields(
    columns: Vec<ArrayRef>,
    fields: &arrow::datatypes::Fields,
) -> Result<Vec<ArrayRef>, StorageError> {
    Ok(columns
        .into_iter()
        .zip(fields)
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(c)
            } else {
                arrow::compute::cast(&c, f.data_type())
            }
        })
        .collect::<Result<Vec<_>, _>>()?)
}

/// Arrow row encoding of key columns (comparable bytes).
pub fn key_rows(key_cols: &[ArrayRef]) -> Result<Rows, StorageError> {
    let converter = RowConverter::new(
        key_cols
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    Ok(converter.convert_columns(key_cols)?)
}

fn duplicate_at(
    key_cols: &[ArrayRef],
    schema: &TableSchema,
    key_idx: &[usize],
    row: u32,
) -> Result<DuplicateAt, StorageError> {
    let key = key_cols
        .iter()
        .zip(key_idx)
        .map(|(c, &k)| Datum::from_array(c, row as usize, &schema.fields[k].data_type))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DuplicateAt { key })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::spec::schema::TableSchema;
    use arrow::array::{Int32Array, StringArray};

    fn schema() -> TableSchema {
        let json = r#"{"version":3,"id":0,"fields":[
            {"id":0,"name":"id","type":"INT NOT NULL"},
            {"id":1,"name":"v","type":"STRING"}],
            "highestFieldId":1,"partitionKeys":[],"primaryKeys":["id"],
            "options":{"bucket":"1"},"timeMillis":0}"#;
        TableSchema::from_json(json.as_bytes()).unwrap()
    }

    fn batch(ids: &[i32], vs: &[&str]) -> RecordBatch {
        RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int32Array::from(ids.to_vec())) as ArrayRef),
            ("v", Arc::new(StringArray::from(vs.to_vec())) as ArrayRef),
        ])
        .unwrap()
    }

    fn ids(f: &Folded) -> Vec<i32> {
        f.rows
            .column(0)
            .as_primitive::<arrow::datatypes::Int32Type>()
            .values()
            .to_vec()
    }

    #[test]
    fn insert_folding_refuses_a_key_twice() {
        let s = schema();
        let b = batch(&[2, 1, 2], &["a", "b", "c"]);
        let r = fold_statement(&s, b, Int8Array::from(vec![0i8; 3]), WriteMode::Insert).unwrap();
        assert!(matches!(r, Err(DuplicateAt { key }) if key == vec![Datum::Int(2)]));
    }

    #[test]
    fn change_folding_prefers_the_add_and_probes_only_new_keys() {
        let s = schema();
        // Swap of keys 1 and 2 by an UPDATE: -D 1, +I 2, -D 2, +I 1; and a plain +I 3.
        let b = batch(&[1, 2, 2, 1, 3], &["x", "from1", "y", "from2", "new"]);
        let kinds = Int8Array::from(vec![
            kind::DELETE,
            kind::INSERT,
            kind::DELETE,
            kind::INSERT,
            kind::INSERT,
        ]);
        let f = fold_statement(&s, b, kinds, WriteMode::Change)
            .unwrap()
            .ok()
            .unwrap();
        assert_eq!(ids(&f), vec![1, 2, 3]);
        assert_eq!(f.kinds.values().to_vec(), vec![0, 0, 0]);
        let v = f.rows.column(1).as_string::<i32>();
        assert_eq!((v.value(0), v.value(1)), ("from2", "from1"));
        assert_eq!(f.probes, vec![2], "only key 3 must be new");
    }

    #[test]
    fn later_statements_win_when_runs_fold() {
        let s = schema();
        let mk = |stmt, ids: &[i32], vs: &[&str], k: i8| MemRun {
            stmt,
            mode: WriteMode::Change,
            read_at: 0,
            read_lsn: 0,
            partition: Vec::new(),
            partition_bytes: Vec::new(),
            bucket: 0,
            keys: vec![Arc::new(Int32Array::from(ids.to_vec())) as ArrayRef],
            kinds: Int8Array::from(vec![k; ids.len()]),
            rows: batch(ids, vs),
            probes: Vec::new(),
            bytes: 0,
        };
        let a = mk(1, &[1, 2], &["a1", "a2"], kind::INSERT);
        let b = mk(2, &[2], &["gone"], kind::DELETE);
        let f = fold_runs(&s, &[&a, &b]).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(ids(&f[0]), vec![1, 2]);
        assert_eq!(
            f[0].kinds.values().to_vec(),
            vec![kind::INSERT, kind::DELETE]
        );
    }

    // ---- folding under merge engines ----

    use crate::storage::spec::types::{MAX_LENGTH, PaimonType, TypeKind};

    const I: i8 = kind::INSERT;
    const D: i8 = kind::DELETE;
    const UA: i8 = kind::UPDATE_AFTER;

    fn n(v: i64) -> Datum {
        Datum::BigInt(v)
    }

    fn s(v: &str) -> Datum {
        Datum::String(v.to_owned())
    }

    const NULL: Datum = Datum::Null;

    /// `id BIGINT NOT NULL PRIMARY KEY`, then `columns`, with `options`.
    fn engine_schema(columns: &[(&str, TypeKind)], options: &[(&str, &str)]) -> TableSchema {
        let columns: Vec<(&str, PaimonType)> = columns
            .iter()
            .map(|(n, t)| (*n, PaimonType::nullable(t.clone())))
            .collect();
        let mut all = vec![("bucket", "1")];
        all.extend_from_slice(options);
        crate::storage::testkit::keyed_schema(&columns, &all)
    }

    /// A statement's rows (every column, the table's order).
    fn rows_batch(schema: &TableSchema, rows: &[Vec<Datum>]) -> RecordBatch {
        let layout = ReadLayout {
            keys: Vec::new(),
            system: false,
            values: schema.fields.clone(),
        };
        let columns = schema
            .fields
            .iter()
            .enumerate()
            .map(|(j, f)| {
                let values = rows.iter().map(|r| r[j].clone()).collect();
                datums_to_array(values, &f.data_type).unwrap()
            })
            .collect();
        RecordBatch::try_new(layout.schema().unwrap(), columns).unwrap()
    }

    /// Every row of a fold: (kind, values).
    fn folded_rows(schema: &TableSchema, f: &Folded) -> Vec<(i8, Vec<Datum>)> {
        (0..f.rows.num_rows())
            .map(|i| {
                let values = schema
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(j, field)| {
                        Datum::from_array(f.rows.column(j), i, &field.data_type).unwrap()
                    })
                    .collect();
                (f.kinds.value(i), values)
            })
            .collect()
    }

    fn upsert(schema: &TableSchema, rows: &[Vec<Datum>]) -> Vec<(i8, Vec<Datum>)> {
        let batch = rows_batch(schema, rows);
        let kinds = Int8Array::from(vec![I; rows.len()]);
        let f = fold_statement(schema, batch, kinds, WriteMode::Upsert)
            .unwrap()
            .ok()
            .unwrap();
        folded_rows(schema, &f)
    }

    fn run(schema: &TableSchema, stmt: u32, rows: &[(i8, Vec<Datum>)]) -> MemRun {
        let values: Vec<Vec<Datum>> = rows.iter().map(|r| r.1.clone()).collect();
        let batch = rows_batch(schema, &values);
        let kinds = Int8Array::from_iter_values(rows.iter().map(|r| r.0));
        let f = fold_statement(schema, batch, kinds, WriteMode::Change)
            .unwrap()
            .ok()
            .unwrap();
        MemRun {
            stmt,
            mode: WriteMode::Change,
            read_at: 0,
            read_lsn: 0,
            partition: Vec::new(),
            partition_bytes: Vec::new(),
            bucket: 0,
            keys: f.keys,
            kinds: f.kinds,
            rows: f.rows,
            probes: Vec::new(),
            bytes: 0,
        }
    }

    /// What a reader merges `versions` (batch, row, kind; oldest first) of one key into.
    fn read_merge(
        schema: &TableSchema,
        versions: &[(&RecordBatch, usize, i8)],
    ) -> Option<(i8, Vec<Datum>)> {
        let merge = fold_merge(schema).unwrap().unwrap();
        let rows: Vec<VersionRow<'_>> = versions
            .iter()
            .enumerate()
            .map(|(s, (batch, row, kind))| VersionRow {
                batch,
                row: *row,
                sequence: s as i64,
                kind: *kind,
            })
            .collect();
        let value = |batch: &RecordBatch, row: usize, j: usize| {
            Datum::from_array(batch.column(j), row, &schema.fields[j].data_type).unwrap()
        };
        let out = match merge.merge(&rows).unwrap() {
            Outcome::Nothing => return None,
            Outcome::Version(v) => {
                let (b, r, k) = versions[v];
                (
                    k,
                    (0..schema.fields.len()).map(|j| value(b, r, j)).collect(),
                )
            }
            Outcome::Row(m) => (
                m.kind,
                m.values
                    .into_iter()
                    .enumerate()
                    .map(|(j, c)| match c {
                        Cell::Null => Datum::Null,
                        Cell::Value(d) => d,
                        Cell::Of(v) => value(versions[v].0, versions[v].1, j),
                    })
                    .collect(),
            ),
        };
        // Reads drop keys whose result is a retraction.
        kind::is_add(out.0).then_some(out)
    }

    #[test]
    fn plain_deduplicate_is_not_merged() {
        assert!(fold_merge(&schema()).unwrap().is_none());
        let dedup = engine_schema(
            &[("v", TypeKind::BigInt)],
            &[("merge-engine", "deduplicate")],
        );
        assert!(fold_merge(&dedup).unwrap().is_none());
        let ignoring = engine_schema(&[("v", TypeKind::BigInt)], &[("ignore-delete", "true")]);
        assert!(fold_merge(&ignoring).unwrap().is_some());
    }

    #[test]
    fn partial_update_folds_to_the_newest_non_null_value_per_column() {
        let t = engine_schema(
            &[
                ("a", TypeKind::BigInt),
                ("b", TypeKind::VarChar(MAX_LENGTH)),
            ],
            &[("merge-engine", "partial-update")],
        );
        let got = upsert(
            &t,
            &[
                vec![n(1), n(1), NULL],
                vec![n(2), n(20), s("only")],
                vec![n(1), NULL, s("x")],
                vec![n(1), n(3), NULL],
            ],
        );
        assert_eq!(
            got,
            vec![
                (I, vec![n(1), n(3), s("x")]),
                (I, vec![n(2), n(20), s("only")])
            ]
        );
    }

    #[test]
    fn aggregation_folds_each_column_with_its_function() {
        let t = engine_schema(
            &[
                ("total", TypeKind::BigInt),
                ("top", TypeKind::BigInt),
                ("tags", TypeKind::VarChar(MAX_LENGTH)),
                ("note", TypeKind::VarChar(MAX_LENGTH)),
            ],
            &[
                ("merge-engine", "aggregation"),
                ("fields.total.aggregate-function", "sum"),
                ("fields.top.aggregate-function", "max"),
                ("fields.tags.aggregate-function", "listagg"),
            ],
        );
        let got = upsert(
            &t,
            &[
                vec![n(1), n(5), n(3), s("a"), s("first")],
                vec![n(1), n(2), n(9), s("b"), NULL],
                vec![n(1), NULL, n(1), NULL, s("last")],
                vec![n(1), n(10), NULL, s("c"), NULL],
            ],
        );
        assert_eq!(
            got,
            vec![(I, vec![n(1), n(17), n(9), s("a,b,c"), s("last")])]
        );
    }

    #[test]
    fn first_row_folds_to_the_first_version() {
        let t = engine_schema(
            &[("v", TypeKind::VarChar(MAX_LENGTH))],
            &[("merge-engine", "first-row")],
        );
        let got = upsert(
            &t,
            &[
                vec![n(1), s("first")],
                vec![n(1), s("second")],
                vec![n(2), s("x")],
            ],
        );
        assert_eq!(
            got,
            vec![(I, vec![n(1), s("first")]), (I, vec![n(2), s("x")])]
        );
    }

    #[test]
    fn sequence_field_orders_versions_before_statement_order() {
        let cols = [
            ("ts", TypeKind::BigInt),
            ("v", TypeKind::VarChar(MAX_LENGTH)),
        ];
        let t = engine_schema(&cols, &[("sequence.field", "ts")]);
        let rows = [
            vec![n(1), n(5), s("newest")],
            vec![n(1), n(3), s("late but older")],
            vec![n(1), NULL, s("no ts")],
            vec![n(2), n(1), s("a")],
            vec![n(2), n(1), s("b")],
        ];
        assert_eq!(
            upsert(&t, &rows),
            vec![
                (I, vec![n(1), n(5), s("newest")]),
                (I, vec![n(2), n(1), s("b")])
            ]
        );
        let desc = engine_schema(
            &cols,
            &[
                ("sequence.field", "ts"),
                ("sequence.field.sort-order", "descending"),
            ],
        );
        assert_eq!(
            upsert(&desc, &rows),
            vec![
                (I, vec![n(1), n(3), s("late but older")]),
                (I, vec![n(2), n(1), s("b")])
            ]
        );
        // Across statements too.
        let a = run(&t, 1, &[(I, vec![n(1), n(7), s("stmt 1")])]);
        let b = run(&t, 2, &[(I, vec![n(1), n(6), s("stmt 2")])]);
        let f = fold_runs(&t, &[&a, &b]).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(
            folded_rows(&t, &f[0]),
            vec![(I, vec![n(1), n(7), s("stmt 1")])]
        );
    }

    #[test]
    fn runs_fold_with_retractions_as_a_reader_merges_them() {
        let t = engine_schema(
            &[("total", TypeKind::BigInt), ("last", TypeKind::BigInt)],
            &[
                ("merge-engine", "aggregation"),
                ("fields.total.aggregate-function", "sum"),
                ("fields.last.aggregate-function", "last_value"),
            ],
        );
        let a = run(
            &t,
            1,
            &[(I, vec![n(1), n(5), n(1)]), (I, vec![n(2), n(1), n(1)])],
        );
        let b = run(&t, 2, &[(I, vec![n(1), n(3), n(2)])]);
        let c = run(&t, 3, &[(D, vec![n(1), n(2), n(2)])]);
        let f = fold_runs(&t, &[&a, &b, &c]).unwrap();
        assert_eq!(f.len(), 1);
        let got = folded_rows(&t, &f[0]);
        // 5 + 3 - 2; last_value retracted to NULL; the result is an insert.
        assert_eq!(
            got,
            vec![(I, vec![n(1), n(6), NULL]), (I, vec![n(2), n(1), n(1)])]
        );
        // A committed sum of 10 read with the folded row: 16, as with the three versions.
        let older = rows_batch(&t, &[vec![n(1), n(10), n(0)]]);
        let folded = &f[0].rows;
        // Key 1 is the first row of each run.
        let one_by_one = [
            (&older, 0, I),
            (&a.rows, 0, I),
            (&b.rows, 0, I),
            (&c.rows, 0, D),
        ];
        assert_eq!(
            read_merge(&t, &[(&older, 0, I), (folded, 0, I)]),
            read_merge(&t, &one_by_one)
        );
        assert_eq!(
            read_merge(&t, &[(&older, 0, I), (folded, 0, I)]),
            Some((I, vec![n(1), n(16), NULL]))
        );
    }

    #[test]
    fn a_delete_that_removes_the_row_is_written_before_what_follows_it() {
        let t = engine_schema(
            &[("total", TypeKind::BigInt)],
            &[
                ("merge-engine", "aggregation"),
                ("fields.total.aggregate-function", "sum"),
                ("aggregation.remove-record-on-delete", "true"),
            ],
        );
        let a = run(&t, 1, &[(I, vec![n(1), n(5)]), (I, vec![n(2), n(1)])]);
        let b = run(&t, 2, &[(D, vec![n(1), n(15)])]);
        let c = run(&t, 3, &[(I, vec![n(1), n(3)]), (I, vec![n(2), n(1)])]);
        let f = fold_runs(&t, &[&a, &b, &c]).unwrap();
        assert_eq!(f.len(), 2, "the -D of key 1 in a run of its own");
        assert_eq!(folded_rows(&t, &f[0]), vec![(D, vec![n(1), n(15)])]);
        assert_eq!(
            folded_rows(&t, &f[1]),
            vec![(I, vec![n(1), n(3)]), (I, vec![n(2), n(2)])]
        );
        // Read over a committed 10: the delete drops it, 3 remains — as one by one.
        let older = rows_batch(&t, &[vec![n(1), n(10)]]);
        let layered = read_merge(
            &t,
            &[(&older, 0, I), (&f[0].rows, 0, D), (&f[1].rows, 0, I)],
        );
        let one_by_one = read_merge(
            &t,
            &[
                (&older, 0, I),
                (&a.rows, 0, I),
                (&b.rows, 0, D),
                (&c.rows, 0, I),
            ],
        );
        assert_eq!(layered, one_by_one);
        assert_eq!(layered, Some((I, vec![n(1), n(3)])));
        // A final -D stays in the one run (as Paimon's initRow leaves it: NOT NULL columns).
        let f = fold_runs(&t, &[&a, &b]).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(
            folded_rows(&t, &f[0]),
            vec![(D, vec![n(1), NULL]), (I, vec![n(2), n(1)])]
        );
    }

    #[test]
    fn a_statement_cannot_delete_and_rewrite_a_key_that_deletes_remove() {
        let t = engine_schema(
            &[("v", TypeKind::BigInt)],
            &[
                ("merge-engine", "partial-update"),
                ("partial-update.remove-record-on-delete", "true"),
            ],
        );
        let batch = rows_batch(&t, &[vec![n(1), n(1)], vec![n(1), n(2)]]);
        let err = fold_statement(&t, batch, Int8Array::from(vec![D, I]), WriteMode::Change)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("partial-update.remove-record-on-delete"),
            "{err}"
        );
        // Where deletes retract, the statement's delete and new row fold into one version.
        let sum = engine_schema(
            &[("v", TypeKind::BigInt)],
            &[
                ("merge-engine", "aggregation"),
                ("fields.v.aggregate-function", "sum"),
            ],
        );
        // The new row comes first in the batch; the delete still counts first.
        let batch = rows_batch(&sum, &[vec![n(1), n(7)], vec![n(1), n(4)]]);
        let f = fold_statement(&sum, batch, Int8Array::from(vec![I, D]), WriteMode::Change)
            .unwrap()
            .ok()
            .unwrap();
        assert_eq!(folded_rows(&sum, &f), vec![(I, vec![n(1), n(3)])]);
        assert!(
            f.probes.is_empty(),
            "a key the statement deleted is not probed"
        );
    }

    #[test]
    fn ignored_deletes_leave_the_row_they_follow() {
        let t = engine_schema(&[("v", TypeKind::BigInt)], &[("ignore-delete", "true")]);
        let a = run(&t, 1, &[(I, vec![n(1), n(1)])]);
        let b = run(&t, 2, &[(D, vec![n(1), n(1)]), (D, vec![n(2), n(2)])]);
        let c = run(&t, 3, &[(D, vec![n(2), n(2)])]);
        let f = fold_runs(&t, &[&a, &b, &c]).unwrap();
        assert_eq!(
            folded_rows(&t, &f[0]),
            vec![(I, vec![n(1), n(1)]), (D, vec![n(2), n(2)])]
        );
        // partial-update +U rows merge like inserts.
        let p = engine_schema(
            &[("a", TypeKind::BigInt), ("b", TypeKind::BigInt)],
            &[
                ("merge-engine", "partial-update"),
                ("ignore-delete", "true"),
            ],
        );
        let a = run(&p, 1, &[(I, vec![n(1), n(1), n(1)])]);
        let b = run(&p, 2, &[(UA, vec![n(1), NULL, n(2)])]);
        let c = run(&p, 3, &[(D, vec![n(1), n(1), n(2)])]);
        let f = fold_runs(&p, &[&a, &b, &c]).unwrap();
        assert_eq!(folded_rows(&p, &f[0]), vec![(I, vec![n(1), n(1), n(2)])]);
    }
}
