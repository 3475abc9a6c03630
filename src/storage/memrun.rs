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
use arrow::compute::{concat, concat_batches, take, take_record_batch};
use arrow::datatypes::Int8Type;
use arrow::row::{RowConverter, Rows, SortField};
use futures::StreamExt;

use super::StorageError;
use super::data_file::{ReadLayout, kind};
use super::datum::Datum;
use super::merge::RunStream;
use super::schema::TableSchema;

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
        let columns = columns
            .into_iter()
            .zip(out_schema.fields())
            .map(|(c, f)| {
                if c.data_type() == f.data_type() {
                    Ok(c)
                } else {
                    arrow::compute::cast(&c, f.data_type())
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
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
pub fn fold_statement(
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

/// Folds the runs of one bucket (oldest statement first) into one version per key: the
/// newest statement's version wins. The result is what a commit writes.
pub fn fold_runs(schema: &TableSchema, runs: &[&MemRun]) -> Result<Folded, StorageError> {
    let batches: Vec<&RecordBatch> = runs.iter().map(|r| &r.rows).collect();
    let arrow_schema = batches[0].schema();
    let batch = concat_batches(&arrow_schema, batches)?;
    let kinds: Vec<&dyn Array> = runs.iter().map(|r| &r.kinds as &dyn Array).collect();
    let kinds = concat(&kinds)?.as_primitive::<Int8Type>().clone();
    match fold_statement(schema, batch, kinds, WriteMode::Upsert)? {
        Ok(f) => Ok(f),
        Err(_) => unreachable!("upsert folding never fails"),
    }
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
    use crate::storage::schema::TableSchema;
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
        assert_eq!(ids(&f), vec![1, 2]);
        assert_eq!(f.kinds.values().to_vec(), vec![kind::INSERT, kind::DELETE]);
    }
}
