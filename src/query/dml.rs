//! [`Applier`]: turns the rows of a change query (see `sql::dml`) into Paimon row kinds in a
//! transaction's [`TableWrite`] — `+I` for inserts, `+U` for updates that keep the key, `-D`
//! then `+I` for updates that move it, `-D` for deletes — and keeps what RETURNING needs.
//!
//! It also enforces what PostgreSQL enforces per target row: a row changed twice by one MERGE
//! or ON CONFLICT DO UPDATE is an error (21000); UPDATE ... FROM and DELETE ... USING change
//! each target row once, whatever the number of matching rows.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int8Array, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{CastOptions, cast_with_options, concat_batches, take};
use datafusion::arrow::datatypes::{DataType, Int8Type, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};

use super::QueryError;
use super::sink::conform_pg_types;
use crate::sql::dml::action;
use crate::storage::{TableWrite, row_kind};

/// What a second change of one target row means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// UPDATE ... FROM, DELETE ... USING: the first match counts, the rest are ignored.
    KeepFirst,
    /// MERGE: 21000.
    MergeError,
}

/// How a statement's change rows are laid out and applied.
#[derive(Debug, Clone)]
pub struct ChangeSpec {
    /// Batches start with the action column (rewritten statements); otherwise every row is an
    /// insert in the table's column order (plain INSERT).
    pub with_action: bool,
    /// Positions of the primary-key columns among the table's columns.
    pub key_positions: Vec<usize>,
    pub repeat: Repeat,
    /// Keep the written rows for RETURNING.
    pub returning: bool,
    /// Plain rows must name each key once (ON CONFLICT DO UPDATE written blind, as an upsert:
    /// 21000 for a key proposed twice, as PostgreSQL).
    pub unique_keys: bool,
}

/// Applies change batches to one table's write.
pub struct Applier {
    spec: ChangeSpec,
    /// The table's Arrow schema (with PostgreSQL type hints).
    schema: SchemaRef,
    seen: HashSet<Vec<u8>>,
    count: u64,
    returned: Vec<RecordBatch>,
}

impl Applier {
    pub fn new(spec: ChangeSpec, schema: SchemaRef) -> Self {
        Self {
            spec,
            schema,
            seen: HashSet::new(),
            count: 0,
            returned: Vec::new(),
        }
    }

    /// Rows affected so far (the command tag's count).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The rows written, for RETURNING (new rows; the old row of a delete).
    pub fn returned(&self) -> Result<RecordBatch, QueryError> {
        Ok(concat_batches(&self.schema, &self.returned)?)
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Casts `columns` to the table's column types (an assignment cast).
    fn table_rows(&self, columns: &[ArrayRef], rows: usize) -> Result<RecordBatch, QueryError> {
        let options = CastOptions {
            safe: false,
            ..Default::default()
        };
        let cast = columns
            .iter()
            .zip(self.schema.fields())
            .map(|(c, f)| {
                if c.data_type() == f.data_type() {
                    Ok(Arc::clone(c))
                } else if super::functions::numeric::PgToInt::converts(c.data_type())
                    && super::functions::numeric::PgToInt::new(f.data_type()).is_some()
                {
                    // PostgreSQL's assignment cast rounds (`i + 0.5` into an int column).
                    super::functions::numeric::to_int_array(c, f.data_type()).map_err(|e| {
                        datafusion::arrow::error::ArrowError::ExternalError(Box::new(e))
                    })
                } else {
                    cast_with_options(c, f.data_type(), &options)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let batch = RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            cast,
            &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?;
        Ok(conform_pg_types(&self.schema, batch)?)
    }

    /// The keys (comparable bytes) of the rows `batch` changes: the old key of each row an
    /// UPDATE or DELETE changes and the new key of each row it writes. These are the rows
    /// the transaction locks before it writes them (`row_locks.rs`); plain INSERT batches
    /// (no action column) lock nothing (their keys' conflicts are duplicate keys).
    pub fn changed_keys(&self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>, QueryError> {
        if !self.spec.with_action || batch.num_rows() == 0 {
            return Ok(Vec::new());
        }
        let width = self.schema.fields().len();
        let keys = self.spec.key_positions.len();
        let key_types: Vec<DataType> = self
            .spec
            .key_positions
            .iter()
            .map(|&p| self.schema.field(p).data_type().clone())
            .collect();
        let converter = RowConverter::new(
            key_types
                .iter()
                .map(|t| SortField::new(t.clone()))
                .collect(),
        )?;
        // A value that does not cast to the key's type is NULL here; writing it fails later.
        let in_key_types = |columns: Vec<&ArrayRef>| -> Result<Vec<ArrayRef>, QueryError> {
            Ok(columns
                .into_iter()
                .zip(&key_types)
                .map(|(c, t)| cast_with_options(c, t, &CastOptions::default()))
                .collect::<Result<_, _>>()?)
        };
        let new_keys = in_key_types(
            self.spec
                .key_positions
                .iter()
                .map(|&p| batch.column(1 + p))
                .collect(),
        )?;
        let old_keys = in_key_types(
            batch.columns()[width + 1..width + 1 + keys]
                .iter()
                .collect(),
        )?;
        let new_rows = converter.convert_columns(&new_keys)?;
        let old_rows = converter.convert_columns(&old_keys)?;
        let actions = cast_with_options(batch.column(0), &DataType::Int8, &CastOptions::default())?;
        let actions = actions.as_primitive::<Int8Type>();
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut seen = HashSet::new();
        let mut add = |key: &[u8]| {
            if seen.insert(key.to_vec()) {
                out.push(key.to_vec());
            }
        };
        for i in 0..batch.num_rows() {
            if actions.is_null(i) {
                continue;
            }
            match actions.value(i) {
                action::INSERT => add(new_rows.row(i).as_ref()),
                action::DELETE => add(old_rows.row(i).as_ref()),
                action::UPDATE => {
                    add(old_rows.row(i).as_ref());
                    add(new_rows.row(i).as_ref());
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Writes one batch of change rows.
    pub async fn apply(
        &mut self,
        batch: RecordBatch,
        write: &mut TableWrite,
    ) -> Result<(), QueryError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let width = self.schema.fields().len();
        if !self.spec.with_action {
            let rows = self.table_rows(batch.columns(), batch.num_rows())?;
            if self.spec.unique_keys {
                self.check_unique(&rows)?;
            }
            self.count += rows.num_rows() as u64;
            if self.spec.returning {
                self.returned.push(rows.clone());
            }
            write.write(rows).await?;
            return Ok(());
        }
        let actions = cast_with_options(batch.column(0), &DataType::Int8, &CastOptions::default())?;
        let actions = actions.as_primitive::<Int8Type>();
        let new_cols = &batch.columns()[1..=width];
        let keys = self.spec.key_positions.len();
        let old_keys = &batch.columns()[width + 1..width + 1 + keys];
        // Old keys in the key columns' own types, comparable with the new rows' keys.
        let key_types: Vec<DataType> = self
            .spec
            .key_positions
            .iter()
            .map(|&p| self.schema.field(p).data_type().clone())
            .collect();
        let old_keys: Vec<ArrayRef> = old_keys
            .iter()
            .zip(&key_types)
            .map(|(c, t)| cast_with_options(c, t, &CastOptions::default()))
            .collect::<Result<_, _>>()?;
        let converter = RowConverter::new(
            key_types
                .iter()
                .map(|t| SortField::new(t.clone()))
                .collect(),
        )?;
        let old_rows = converter.convert_columns(&old_keys)?;

        // Rows that change something, each target row once.
        let mut keep: Vec<u32> = Vec::new();
        for i in 0..batch.num_rows() {
            let a = if actions.is_null(i) {
                action::NOTHING
            } else {
                actions.value(i)
            };
            let changes_target = matches!(a, action::UPDATE | action::DELETE);
            match a {
                action::NOTHING => continue,
                _ if changes_target && !self.seen.insert(old_rows.row(i).as_ref().to_vec()) => {
                    match self.spec.repeat {
                        Repeat::KeepFirst => continue,
                        Repeat::MergeError => {
                            return Err(QueryError::Cardinality(
                                "MERGE command cannot affect row a second time".to_owned(),
                            ));
                        }
                    }
                }
                _ => {}
            }
            keep.push(i as u32);
        }
        if keep.is_empty() {
            return Ok(());
        }
        let idx = UInt32Array::from(keep);
        let pick = |c: &ArrayRef| take(c, &idx, None);
        let new_cols: Vec<ArrayRef> = new_cols.iter().map(pick).collect::<Result<_, _>>()?;
        let old_keys: Vec<ArrayRef> = old_keys.iter().map(pick).collect::<Result<_, _>>()?;
        let actions: Int8Array = take(actions, &idx, None)?
            .as_primitive::<Int8Type>()
            .clone();
        let n = idx.len();
        let rows = self.table_rows(&new_cols, n)?;
        self.count += n as u64;

        // Kinds; updates that move their key also delete the old key.
        let new_key_cols: Vec<ArrayRef> = self
            .spec
            .key_positions
            .iter()
            .map(|&p| Arc::clone(rows.column(p)))
            .collect();
        let new_rows = converter.convert_columns(&new_key_cols)?;
        let old_rows = converter.convert_columns(&old_keys)?;
        let mut kinds: Vec<i8> = Vec::with_capacity(n);
        let mut moved: Vec<u32> = Vec::new();
        for i in 0..n {
            kinds.push(match actions.value(i) {
                action::INSERT => row_kind::INSERT,
                action::DELETE => row_kind::DELETE,
                _ if new_rows.row(i) == old_rows.row(i) => row_kind::UPDATE_AFTER,
                _ => {
                    moved.push(i as u32);
                    row_kind::INSERT
                }
            });
        }
        if !moved.is_empty() {
            // -D of the old key: the new row's values under the old key.
            let m = UInt32Array::from(moved);
            let mut columns: Vec<ArrayRef> = rows
                .columns()
                .iter()
                .map(|c| take(c, &m, None))
                .collect::<Result<_, _>>()?;
            for (k, &p) in self.spec.key_positions.iter().enumerate() {
                columns[p] = take(&old_keys[k], &m, None)?;
            }
            let deletes = self.table_rows(&columns, m.len())?;
            write
                .write_kinds(
                    deletes,
                    Some(Int8Array::from_value(row_kind::DELETE, m.len())),
                )
                .await?;
        }
        if self.spec.returning {
            self.returned.push(rows.clone());
        }
        write
            .write_kinds(rows, Some(Int8Array::from(kinds)))
            .await?;
        Ok(())
    }
}

impl Applier {
    /// 21000 if a row of `rows` has the key of an earlier row of the statement.
    fn check_unique(&mut self, rows: &RecordBatch) -> Result<(), QueryError> {
        let columns: Vec<ArrayRef> = self
            .spec
            .key_positions
            .iter()
            .map(|&p| Arc::clone(rows.column(p)))
            .collect();
        let converter = RowConverter::new(
            columns
                .iter()
                .map(|c| SortField::new(c.data_type().clone()))
                .collect(),
        )?;
        let keys = converter.convert_columns(&columns)?;
        for k in keys.iter() {
            if !self.seen.insert(k.as_ref().to_vec()) {
                return Err(QueryError::Cardinality(
                    "ON CONFLICT DO UPDATE command cannot affect row a second time".to_owned(),
                ));
            }
        }
        Ok(())
    }
}

/// Keys of `batch` (columns at `key_positions`) that repeat an earlier row's, in order: ON
/// CONFLICT's proposals must not touch one row twice.
pub fn repeated_keys(
    batch: &RecordBatch,
    key_positions: &[usize],
) -> Result<Vec<bool>, QueryError> {
    let columns: Vec<ArrayRef> = key_positions
        .iter()
        .map(|&p| Arc::clone(batch.column(p)))
        .collect();
    let converter = RowConverter::new(
        columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&columns)?;
    let mut seen = HashSet::new();
    Ok((0..batch.num_rows())
        .map(|i| !seen.insert(rows.row(i).as_ref().to_vec()))
        .collect())
}
