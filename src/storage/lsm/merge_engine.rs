//! Merge engines: how the versions of one primary key combine when a table is read, with
//! Paimon's semantics (`merge-engine`, `sequence.field`, and the options of partial-update and
//! aggregation).
//!
//! [`MergeOptions`] is what a schema's options say, parsed and checked (with the reason when
//! tarn cannot honour them; `spec/options/merge.rs`). [`MergeOptions::bind`], here, fits it to
//! a read layout — adding the value
//! columns merging needs that the read did not ask for (sequence fields) — and gives a
//! [`MergeFunction`], which [`crate::storage::lsm::merge`]'s k-way merge calls once per key with that key's
//! versions, oldest first:
//!
//! - deduplicate and first-row choose one version ([`MergeFunction::choose`]); its row is copied
//!   as is;
//! - partial-update and aggregation build a new row column by column ([`MergeFunction::merge`]):
//!   each [`Cell`] is a version's value, NULL, or a value computed here (a sum, a list).
//!
//! As in Paimon, a key with a single version is that version whatever the engine (Paimon's
//! `ReducerMergeFunctionWrapper` calls the merge function from the second version on), and reads
//! drop keys whose result is `-D`/`-U`.
//!
//! Versions are ordered by the `sequence.field` columns first (NULL oldest, in either sort
//! order), then by `_SEQUENCE_NUMBER`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Decimal128Array, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow::datatypes::{SchemaRef, i256};

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{ReadLayout, kind};
use crate::storage::lsm::merge::{self, RunStream};
use crate::storage::spec::datum::Datum;
pub use crate::storage::spec::options::merge::{AggFunc, FieldAgg, MergeEngine, MergeOptions};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{DataField, PaimonType, TypeKind};

impl MergeOptions {
    /// Fits the options to a read in `layout`: the merge function, and the layout files must be
    /// read in for it (the caller's value columns, then any column merging needs besides).
    pub fn bind(
        &self,
        schema: &TableSchema,
        layout: &ReadLayout,
    ) -> Result<(MergeFunction, ReadLayout), String> {
        let asked = |name: &str| layout.values.iter().any(|f| f.name == name);
        let mut needed: Vec<&str> = self.sequence_fields.iter().map(String::as_str).collect();
        for g in &self.groups {
            let read = g.sequence.iter().chain(&g.protected).any(|n| asked(n))
                || g.sequence.iter().any(|s| self.remove_on_group.contains(s));
            if read {
                needed.extend(g.sequence.iter().map(String::as_str));
            }
        }
        let mut values: Vec<DataField> = layout.values.clone();
        for name in needed {
            if !values.iter().any(|f| f.name == name) {
                let field = schema
                    .field(name)
                    .ok_or_else(|| format!("'{name}' is not a column of the table"))?;
                values.push(field.clone());
            }
        }
        let position = |name: &str| values.iter().position(|f| f.name == name);
        let mut groups = Vec::new();
        let mut group_of: BTreeMap<&str, usize> = BTreeMap::new();
        for g in &self.groups {
            let Some(sequence) = g
                .sequence
                .iter()
                .map(|s| position(s))
                .collect::<Option<Vec<usize>>>()
            else {
                continue; // none of its columns is read
            };
            for name in g.sequence.iter().chain(&g.protected) {
                group_of.insert(name, groups.len());
            }
            groups.push(Group { sequence });
        }
        let columns = values
            .iter()
            .map(|f| Column {
                name: f.name.clone(),
                ty: f.data_type.clone(),
                agg: self.aggregates.get(&f.name).cloned(),
                group: group_of.get(f.name.as_str()).copied(),
                remove_on_delete: self.remove_on_group.contains(&f.name),
            })
            .collect();
        let value_offset = layout.value_offset();
        let order = self
            .sequence_fields
            .iter()
            .map(|s| value_offset + position(s).expect("sequence fields are read"))
            .collect();
        let output = if values.len() > layout.values.len() {
            let schema = layout.schema().map_err(|e| e.to_string())?;
            let keep = (0..value_offset + layout.values.len()).collect();
            Some((schema, Arc::new(keep)))
        } else {
            None
        };
        let merge_layout = ReadLayout {
            keys: layout.keys.clone(),
            system: layout.system,
            values,
        };
        Ok((
            MergeFunction {
                engine: self.engine,
                ignore_delete: self.ignore_delete,
                remove_record_on_delete: self.remove_record_on_delete,
                order,
                descending: self.sequence_descending,
                value_offset,
                columns,
                groups,
                has_groups: !self.groups.is_empty(),
                output,
            },
            merge_layout,
        ))
    }
}

/// One value column of a merge read.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    ty: PaimonType,
    agg: Option<FieldAgg>,
    /// The sequence group it belongs to (as a sequence field or a protected field).
    group: Option<usize>,
    /// A `-D` version that updates this sequence field removes the row.
    remove_on_delete: bool,
}

/// A sequence group of a merge read: its sequence fields, as value column indexes.
#[derive(Debug, Clone)]
struct Group {
    sequence: Vec<usize>,
}

/// How the versions of one key combine in reads of one layout.
#[derive(Debug)]
pub struct MergeFunction {
    engine: MergeEngine,
    ignore_delete: bool,
    remove_record_on_delete: bool,
    /// Batch columns (`sequence.field`) that order versions before `_SEQUENCE_NUMBER`.
    order: Vec<usize>,
    descending: bool,
    value_offset: usize,
    /// One per value column of the merge layout.
    columns: Vec<Column>,
    groups: Vec<Group>,
    /// Whether the table has sequence groups (even when this read has none of their columns:
    /// retractions then change nothing, as in Paimon).
    has_groups: bool,
    /// When merging read more columns than asked for: the asked-for schema and columns.
    output: Option<(SchemaRef, Arc<Vec<usize>>)>,
}

/// One version of a key as a merge function sees it: a row of a batch in the merge layout.
#[derive(Debug, Clone, Copy)]
pub struct VersionRow<'a> {
    pub batch: &'a RecordBatch,
    pub row: usize,
    pub sequence: i64,
    pub kind: i8,
}

/// One value of a merged row.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Cell {
    #[default]
    Null,
    /// The column's value in version `i` (never NULL there).
    Of(usize),
    /// A value computed by the merge.
    Value(Datum),
}

impl Cell {
    pub fn is_null(&self) -> bool {
        matches!(self, Cell::Null)
    }
}

/// A row built from several versions (partial-update, aggregation).
#[derive(Debug, Clone, PartialEq)]
pub struct MergedRow {
    pub kind: i8,
    pub sequence: i64,
    /// The version whose key columns the row carries.
    pub key_from: usize,
    /// One per value column of the merge layout.
    pub values: Vec<Cell>,
}

/// What the versions of a key merge into.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Version `i`, as it is.
    Version(usize),
    Row(MergedRow),
    /// Nothing at all (every version was ignored).
    Nothing,
}

impl MergeFunction {
    /// Deduplicate by `_SEQUENCE_NUMBER` alone (what tarn's own tables use).
    pub fn deduplicate() -> Self {
        Self {
            engine: MergeEngine::Deduplicate,
            ignore_delete: false,
            remove_record_on_delete: false,
            order: Vec::new(),
            descending: false,
            value_offset: 0,
            columns: Vec::new(),
            groups: Vec::new(),
            has_groups: false,
            output: None,
        }
    }

    pub fn engine(&self) -> MergeEngine {
        self.engine
    }

    /// Whether the newest version by `_SEQUENCE_NUMBER` always wins.
    pub fn is_plain(&self) -> bool {
        self.engine == MergeEngine::Deduplicate && !self.ignore_delete && self.order.is_empty()
    }

    /// Whether a version of kind `kind` starts the key afresh whatever came before it (a `-D`
    /// under `remove-record-on-delete` of partial-update or aggregation): the versions before
    /// it no longer matter, and the row it leaves is only its NOT NULL columns.
    pub fn resets(&self, kind: i8) -> bool {
        kind == kind::DELETE
            && self.remove_record_on_delete
            && matches!(
                self.engine,
                MergeEngine::PartialUpdate | MergeEngine::Aggregation
            )
    }

    /// Whether the result is always one of the versions (deduplicate, first-row).
    pub fn chooses_version(&self) -> bool {
        matches!(
            self.engine,
            MergeEngine::Deduplicate | MergeEngine::FirstRow
        )
    }

    /// Batch columns ordering versions before `_SEQUENCE_NUMBER`, and whether descending.
    pub fn order(&self) -> (&[usize], bool) {
        (&self.order, self.descending)
    }

    /// Paimon type of value column `j`.
    pub fn value_type(&self, j: usize) -> &PaimonType {
        &self.columns[j].ty
    }

    /// `stream` (in the merge layout) cut to the columns the read asked for.
    pub fn output(&self, stream: RunStream) -> RunStream {
        match &self.output {
            None => stream,
            Some((schema, keep)) => merge::project(stream, Arc::clone(schema), Arc::clone(keep)),
        }
    }

    /// Deduplicate and first-row: which of `versions` (oldest first, at least one) is the
    /// key's row, if any.
    pub fn choose<T>(
        &self,
        versions: &[T],
        kind_of: impl Fn(&T) -> i8,
    ) -> Result<Option<usize>, StorageError> {
        let n = versions.len();
        if n == 1 {
            return Ok(Some(0));
        }
        match self.engine {
            MergeEngine::FirstRow => {
                let mut first = None;
                for (i, v) in versions.iter().enumerate() {
                    if !kind::is_add(kind_of(v)) {
                        if self.ignore_delete {
                            continue;
                        }
                        return Err(StorageError::Unsupported(
                            "a first-row table holds a DELETE/UPDATE_BEFORE version of a key; \
                             Paimon refuses these unless 'ignore-delete' is set"
                                .to_owned(),
                        ));
                    }
                    first.get_or_insert(i);
                }
                Ok(first)
            }
            _ if self.ignore_delete => {
                Ok((0..n).rev().find(|&i| kind::is_add(kind_of(&versions[i]))))
            }
            _ => Ok(Some(n - 1)),
        }
    }

    /// What `versions` (oldest first, at least one) merge into.
    pub fn merge(&self, versions: &[VersionRow<'_>]) -> Result<Outcome, StorageError> {
        if versions.len() == 1 {
            return Ok(Outcome::Version(0));
        }
        match self.engine {
            MergeEngine::Deduplicate | MergeEngine::FirstRow => {
                Ok(match self.choose(versions, |v| v.kind)? {
                    Some(i) => Outcome::Version(i),
                    None => Outcome::Nothing,
                })
            }
            MergeEngine::PartialUpdate => self.partial_update(versions).map(Outcome::Row),
            MergeEngine::Aggregation => self.aggregate(versions).map(Outcome::Row),
        }
    }

    /// Value column `j` of version `i`.
    fn input(&self, v: &[VersionRow<'_>], i: usize, j: usize) -> Cell {
        if v[i].batch.column(self.value_offset + j).is_null(v[i].row) {
            Cell::Null
        } else {
            Cell::Of(i)
        }
    }

    fn datum(&self, v: &[VersionRow<'_>], j: usize, cell: Cell) -> Result<Datum, StorageError> {
        match cell {
            Cell::Null => Ok(Datum::Null),
            Cell::Value(d) => Ok(d),
            Cell::Of(i) => Datum::from_array(
                v[i].batch.column(self.value_offset + j),
                v[i].row,
                &self.columns[j].ty,
            ),
        }
    }

    /// Paimon's `initRow`: the NOT NULL columns of version `i` (which must hold a value), NULL
    /// in every nullable column. A retraction that starts or resets a row leaves only what a
    /// row cannot lack; later versions fill the rest.
    fn init_row(&self, v: &[VersionRow<'_>], i: usize) -> Result<Vec<Cell>, StorageError> {
        (0..self.columns.len())
            .map(|j| {
                if self.columns[j].ty.nullable {
                    return Ok(Cell::Null);
                }
                let cell = self.input(v, i, j);
                if cell.is_null() {
                    return Err(self.null_in_not_null(j));
                }
                Ok(cell)
            })
            .collect()
    }

    fn null_in_not_null(&self, j: usize) -> StorageError {
        StorageError::format(format!(
            "a version being merged has NULL in NOT NULL column \"{}\"",
            self.columns[j].name
        ))
    }

    /// Paimon's PartialUpdateMergeFunction.
    fn partial_update(&self, v: &[VersionRow<'_>]) -> Result<MergedRow, StorageError> {
        let n = self.columns.len();
        let mut row = vec![Cell::Null; n];
        let mut first_seen = vec![false; n];
        let mut meet_insert = false;
        let mut filled = false;
        let mut delete_row = false;
        let mut sequence = 0;
        for (i, kv) in v.iter().enumerate() {
            delete_row = false;
            if !kind::is_add(kv.kind) {
                if !filled {
                    row = self.init_row(v, i)?;
                    filled = true;
                }
                if self.ignore_delete {
                    continue;
                }
                sequence = kv.sequence;
                if self.has_groups {
                    delete_row = self.retract_groups(v, i, &mut row)?;
                    continue;
                }
                if self.remove_record_on_delete {
                    if kv.kind == kind::DELETE {
                        delete_row = true;
                        row = self.init_row(v, i)?;
                    }
                    continue;
                }
                return Err(StorageError::Unsupported(
                    "a partial-update table holds a DELETE/UPDATE_BEFORE version of a key; \
                     Paimon refuses these unless 'ignore-delete', \
                     'partial-update.remove-record-on-delete' or sequence groups are set"
                        .to_owned(),
                ));
            }
            sequence = kv.sequence;
            if self.groups.is_empty() {
                for (j, cell) in row.iter_mut().enumerate() {
                    match self.input(v, i, j) {
                        Cell::Null if !self.columns[j].ty.nullable => {
                            return Err(self.null_in_not_null(j));
                        }
                        Cell::Null => {}
                        value => *cell = value,
                    }
                }
            } else {
                self.update_groups(v, i, &mut row, &mut first_seen)?;
            }
            meet_insert = true;
            filled = true;
        }
        Ok(MergedRow {
            kind: if delete_row || !meet_insert {
                kind::DELETE
            } else {
                kind::INSERT
            },
            sequence,
            key_from: v.len() - 1,
            values: row,
        })
    }

    /// Orders version `i` against the accumulated `row` by `group`'s sequence fields.
    fn compare_group(
        &self,
        v: &[VersionRow<'_>],
        i: usize,
        row: &[Cell],
        group: &Group,
    ) -> Result<Ordering, StorageError> {
        for &s in &group.sequence {
            let new = self.datum(v, s, self.input(v, i, s))?;
            let old = self.datum(v, s, row[s].clone())?;
            let o = new.compare(&old);
            if o.is_ne() {
                return Ok(o);
            }
        }
        Ok(Ordering::Equal)
    }

    /// Whether version `i` has no value in any sequence field of `group`.
    fn group_is_empty(&self, v: &[VersionRow<'_>], i: usize, group: &Group) -> bool {
        group
            .sequence
            .iter()
            .all(|&s| self.input(v, i, s).is_null())
    }

    /// An insert or update-after into a partial-update row with sequence groups.
    fn update_groups(
        &self,
        v: &[VersionRow<'_>],
        i: usize,
        row: &mut [Cell],
        first_seen: &mut [bool],
    ) -> Result<(), StorageError> {
        let mut done = vec![false; row.len()];
        for j in 0..row.len() {
            let col = &self.columns[j];
            let input = self.input(v, i, j);
            let Some(g) = col.group else {
                if let Some(agg) = &col.agg {
                    let acc = std::mem::take(&mut row[j]);
                    row[j] = self.agg(v, j, agg, acc, input, &mut first_seen[j])?;
                } else if !input.is_null() {
                    row[j] = input;
                }
                continue;
            };
            if done[j] {
                continue;
            }
            let group = &self.groups[g];
            if self.group_is_empty(v, i, group) {
                group.sequence.iter().for_each(|&s| done[s] = true);
                continue;
            }
            if self.compare_group(v, i, row, group)?.is_ge() {
                if group.sequence.contains(&j) {
                    for &s in &group.sequence {
                        row[s] = self.input(v, i, s);
                        done[s] = true;
                    }
                    continue;
                }
                row[j] = match &col.agg {
                    None => input,
                    Some(agg) => {
                        let acc = std::mem::take(&mut row[j]);
                        self.agg(v, j, agg, acc, input, &mut first_seen[j])?
                    }
                };
            } else if let Some(agg) = &col.agg {
                // An older version of the group: aggregated as if it came first.
                let acc = std::mem::take(&mut row[j]);
                row[j] = self.agg(v, j, agg, input, acc, &mut first_seen[j])?;
            }
        }
        Ok(())
    }

    /// A `-U`/`-D` version into a partial-update row with sequence groups; true when it
    /// removes the row (`partial-update.remove-record-on-sequence-group`).
    fn retract_groups(
        &self,
        v: &[VersionRow<'_>],
        i: usize,
        row: &mut Vec<Cell>,
    ) -> Result<bool, StorageError> {
        let mut done = vec![false; row.len()];
        let mut updated = vec![false; row.len()];
        for j in 0..row.len() {
            let col = &self.columns[j];
            let Some(g) = col.group else { continue };
            if done[j] {
                continue;
            }
            let group = &self.groups[g];
            if self.group_is_empty(v, i, group) {
                group.sequence.iter().for_each(|&s| done[s] = true);
                continue;
            }
            let input = self.input(v, i, j);
            if self.compare_group(v, i, row, group)?.is_ge() {
                if group.sequence.contains(&j) {
                    for &s in &group.sequence {
                        if !updated[s] {
                            if v[i].kind == kind::DELETE && self.columns[s].remove_on_delete {
                                *row = self.init_row(v, i)?;
                                return Ok(true);
                            }
                            row[s] = self.input(v, i, s);
                            updated[s] = true;
                        }
                        done[s] = true;
                    }
                } else {
                    row[j] = match &col.agg {
                        None => Cell::Null,
                        Some(agg) => {
                            let acc = std::mem::take(&mut row[j]);
                            self.retract(v, j, agg, acc, input)?
                        }
                    };
                }
            } else if let Some(agg) = &col.agg {
                let acc = std::mem::take(&mut row[j]);
                row[j] = self.retract(v, j, agg, acc, input)?;
            }
        }
        Ok(false)
    }

    /// Paimon's AggregateMergeFunction.
    fn aggregate(&self, v: &[VersionRow<'_>]) -> Result<MergedRow, StorageError> {
        let n = self.columns.len();
        let mut row = vec![Cell::Null; n];
        let mut first_seen = vec![false; n];
        let mut delete_row = false;
        for (i, kv) in v.iter().enumerate() {
            delete_row = self.remove_record_on_delete && kv.kind == kind::DELETE;
            if delete_row {
                row = self.init_row(v, i)?;
                continue;
            }
            let retract = !kind::is_add(kv.kind);
            for j in 0..n {
                let agg = self.columns[j]
                    .agg
                    .as_ref()
                    .expect("every column of an aggregation table has a function");
                let acc = std::mem::take(&mut row[j]);
                let input = self.input(v, i, j);
                row[j] = if retract {
                    self.retract(v, j, agg, acc, input)?
                } else {
                    self.agg(v, j, agg, acc, input, &mut first_seen[j])?
                };
            }
        }
        let last = v.last().expect("versions");
        Ok(MergedRow {
            kind: if delete_row {
                kind::DELETE
            } else {
                kind::INSERT
            },
            sequence: last.sequence,
            key_from: v.len() - 1,
            values: row,
        })
    }

    /// `acc` aggregated with `input` in column `j`. `first_seen` is the column's state for
    /// first_value / first_non_null_value.
    fn agg(
        &self,
        v: &[VersionRow<'_>],
        j: usize,
        agg: &FieldAgg,
        acc: Cell,
        input: Cell,
        first_seen: &mut bool,
    ) -> Result<Cell, StorageError> {
        Ok(match agg.func {
            AggFunc::PrimaryKey | AggFunc::LastValue => input,
            AggFunc::LastNonNullValue => {
                if input.is_null() {
                    acc
                } else {
                    input
                }
            }
            AggFunc::FirstValue => {
                if *first_seen {
                    acc
                } else {
                    *first_seen = true;
                    input
                }
            }
            AggFunc::FirstNonNullValue => {
                if !*first_seen && !input.is_null() {
                    *first_seen = true;
                    input
                } else {
                    acc
                }
            }
            _ if acc.is_null() && agg.func != AggFunc::ListAgg => input,
            _ if input.is_null() => acc,
            AggFunc::Min | AggFunc::Max => {
                let a = self.datum(v, j, acc.clone())?;
                let b = self.datum(v, j, input.clone())?;
                let acc_smaller = a.compare(&b).is_lt();
                if acc_smaller == (agg.func == AggFunc::Min) {
                    acc
                } else {
                    input
                }
            }
            AggFunc::Sum | AggFunc::Product | AggFunc::BoolAnd | AggFunc::BoolOr => {
                let a = self.datum(v, j, acc)?;
                let b = self.datum(v, j, input)?;
                let column = &self.columns[j];
                Cell::Value(match agg.func {
                    AggFunc::Sum => arith::add(a, b, &column.ty, &column.name)?,
                    AggFunc::Product => arith::multiply(a, b, &column.ty, &column.name)?,
                    _ => match (a, b) {
                        (Datum::Boolean(a), Datum::Boolean(b)) => {
                            Datum::Boolean(if agg.func == AggFunc::BoolAnd {
                                a && b
                            } else {
                                a || b
                            })
                        }
                        _ => return Err(self.mismatch(j)),
                    },
                })
            }
            AggFunc::ListAgg => {
                let (acc_text, input_text) = (self.datum(v, j, acc)?, self.datum(v, j, input)?);
                let input_text = match input_text {
                    Datum::String(s) if !java_blank(&s) => s,
                    Datum::String(_) | Datum::Null => {
                        return Ok(match acc_text {
                            Datum::Null => Cell::Null,
                            d => Cell::Value(d),
                        });
                    }
                    _ => return Err(self.mismatch(j)),
                };
                match acc_text {
                    Datum::String(a) if !java_blank(&a) => {
                        Cell::Value(Datum::String(list_append(a, &input_text, agg)))
                    }
                    Datum::String(_) | Datum::Null => Cell::Value(Datum::String(input_text)),
                    _ => return Err(self.mismatch(j)),
                }
            }
        })
    }

    /// `input`, a `-U`/`-D` version's value, taken back out of `acc` in column `j`.
    fn retract(
        &self,
        v: &[VersionRow<'_>],
        j: usize,
        agg: &FieldAgg,
        acc: Cell,
        input: Cell,
    ) -> Result<Cell, StorageError> {
        if agg.ignore_retract {
            return Ok(acc);
        }
        let column = &self.columns[j];
        Ok(match agg.func {
            AggFunc::PrimaryKey => input,
            AggFunc::LastValue => Cell::Null,
            AggFunc::LastNonNullValue => {
                if input.is_null() {
                    acc
                } else {
                    Cell::Null
                }
            }
            AggFunc::Sum if acc.is_null() => match self.datum(v, j, input)? {
                Datum::Null => Cell::Null,
                d => Cell::Value(arith::negate(d, &column.ty, &column.name)?),
            },
            AggFunc::Sum if input.is_null() => acc,
            AggFunc::Sum => {
                let a = self.datum(v, j, acc)?;
                let b = self.datum(v, j, input)?;
                Cell::Value(arith::subtract(a, b, &column.ty, &column.name)?)
            }
            AggFunc::Product if acc.is_null() || input.is_null() => acc,
            AggFunc::Product => {
                let a = self.datum(v, j, acc)?;
                let b = self.datum(v, j, input)?;
                Cell::Value(arith::divide(a, b, &column.ty, &column.name)?)
            }
            other => {
                return Err(StorageError::Unsupported(format!(
                    "cannot merge column \"{}\": aggregate function '{}' cannot take back a \
                     DELETE/UPDATE_BEFORE version; Paimon refuses this too unless \
                     'fields.{}.ignore-retract' is set",
                    column.name,
                    other.name(),
                    column.name
                )));
            }
        })
    }

    fn mismatch(&self, j: usize) -> StorageError {
        StorageError::format(format!(
            "column \"{}\" does not hold values of its type {}",
            self.columns[j].name, self.columns[j].ty
        ))
    }
}

/// listagg: `acc` followed by the delimiter and `input` (with `distinct`, only the tokens of
/// `input` not in `acc` yet).
fn list_append(mut acc: String, input: &str, agg: &FieldAgg) -> String {
    let delimiter = agg.delimiter.as_str();
    if !agg.distinct {
        acc.push_str(delimiter);
        acc.push_str(input);
        return acc;
    }
    let mut seen: HashSet<String> = split_tokens(&acc, delimiter)
        .into_iter()
        .map(str::to_owned)
        .collect();
    for token in split_tokens(input, delimiter) {
        if java_blank(token) || seen.contains(token) {
            continue;
        }
        seen.insert(token.to_owned());
        acc.push_str(delimiter);
        acc.push_str(token);
    }
    acc
}

/// Tokens between delimiters, empty ones kept (an empty delimiter splits at whitespace).
fn split_tokens<'a>(text: &'a str, delimiter: &str) -> Vec<&'a str> {
    if delimiter.is_empty() {
        text.split(java_whitespace).collect()
    } else {
        text.split(delimiter).collect()
    }
}

/// Java's `Character.isWhitespace`.
fn java_whitespace(c: char) -> bool {
    match c {
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1C}'..='\u{1F}' => true,
        '\u{85}' | '\u{A0}' | '\u{2007}' | '\u{202F}' => false,
        c => c.is_whitespace(),
    }
}

/// Empty or all whitespace (as Java's `isBlank` sees it).
fn java_blank(text: &str) -> bool {
    text.chars().all(java_whitespace)
}

/// Arithmetic of sum and product as Paimon does it: integers fail on overflow, decimals keep
/// their type's scale (rounding half up) and become NULL when they outgrow its precision.
mod arith {
    use super::*;

    fn overflow(column: &str, what: &str) -> StorageError {
        StorageError::Unsupported(format!(
            "cannot merge column \"{column}\": {what} (Paimon fails on this too)"
        ))
    }

    fn mismatch(column: &str, ty: &PaimonType) -> StorageError {
        StorageError::format(format!(
            "column \"{column}\" does not hold values of its type {ty}"
        ))
    }

    fn precision_scale(ty: &PaimonType) -> (u8, u8) {
        match ty.kind {
            TypeKind::Decimal { precision, scale } => (precision, scale),
            _ => (38, 0),
        }
    }

    fn fits(unscaled: i256, precision: u8) -> bool {
        let limit = i256::from_i128(10).wrapping_pow(precision as u32);
        unscaled < limit && unscaled > limit.wrapping_neg()
    }

    /// A decimal result, NULL when it outgrows `precision`.
    fn decimal(unscaled: i256, precision: u8) -> Datum {
        match unscaled.to_i128() {
            Some(v) if fits(unscaled, precision) => Datum::Decimal(v),
            _ => Datum::Null,
        }
    }

    /// `n / d` rounded half away from zero (`d` non-zero).
    fn round_half_up(n: i256, d: i256) -> i256 {
        let q = n.wrapping_div(d);
        let r = n.wrapping_rem(d);
        if r.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= d.wrapping_abs() {
            if n.is_negative() != d.is_negative() {
                q.wrapping_sub(i256::ONE)
            } else {
                q.wrapping_add(i256::ONE)
            }
        } else {
            q
        }
    }

    fn decimal_sum(a: i128, b: i128, ty: &PaimonType) -> Datum {
        let (precision, _) = precision_scale(ty);
        // Paimon adds compact decimals (precision <= 18) as longs, without a precision check.
        if precision <= 18
            && let (Ok(x), Ok(y)) = (i64::try_from(a), i64::try_from(b))
            && let Some(sum) = x.checked_add(y)
        {
            return Datum::Decimal(sum as i128);
        }
        decimal(
            i256::from_i128(a).wrapping_add(i256::from_i128(b)),
            precision,
        )
    }

    macro_rules! checked {
        ($a:expr, $op:ident, $b:expr, $variant:ident, $column:expr, $what:expr) => {
            $a.$op($b)
                .map(Datum::$variant)
                .ok_or_else(|| overflow($column, $what))
        };
    }

    pub fn add(a: Datum, b: Datum, ty: &PaimonType, column: &str) -> Result<Datum, StorageError> {
        use Datum::*;
        match (a, b) {
            (TinyInt(a), TinyInt(b)) => {
                checked!(a, checked_add, b, TinyInt, column, "sum overflows TINYINT")
            }
            (SmallInt(a), SmallInt(b)) => checked!(
                a,
                checked_add,
                b,
                SmallInt,
                column,
                "sum overflows SMALLINT"
            ),
            (Int(a), Int(b)) => checked!(a, checked_add, b, Int, column, "sum overflows INT"),
            (BigInt(a), BigInt(b)) => {
                checked!(a, checked_add, b, BigInt, column, "sum overflows BIGINT")
            }
            (Float(a), Float(b)) => Ok(Float(a + b)),
            (Double(a), Double(b)) => Ok(Double(a + b)),
            (Decimal(a), Decimal(b)) => Ok(decimal_sum(a, b, ty)),
            _ => Err(mismatch(column, ty)),
        }
    }

    pub fn subtract(
        a: Datum,
        b: Datum,
        ty: &PaimonType,
        column: &str,
    ) -> Result<Datum, StorageError> {
        use Datum::*;
        match (a, b) {
            (TinyInt(a), TinyInt(b)) => {
                checked!(a, checked_sub, b, TinyInt, column, "sum overflows TINYINT")
            }
            (SmallInt(a), SmallInt(b)) => checked!(
                a,
                checked_sub,
                b,
                SmallInt,
                column,
                "sum overflows SMALLINT"
            ),
            (Int(a), Int(b)) => checked!(a, checked_sub, b, Int, column, "sum overflows INT"),
            (BigInt(a), BigInt(b)) => {
                checked!(a, checked_sub, b, BigInt, column, "sum overflows BIGINT")
            }
            (Float(a), Float(b)) => Ok(Float(a - b)),
            (Double(a), Double(b)) => Ok(Double(a - b)),
            (Decimal(a), Decimal(b)) => Ok(decimal_sum(a, -b, ty)),
            _ => Err(mismatch(column, ty)),
        }
    }

    pub fn negate(a: Datum, ty: &PaimonType, column: &str) -> Result<Datum, StorageError> {
        use Datum::*;
        let what = "negating the value overflows its type";
        match a {
            TinyInt(a) => a
                .checked_neg()
                .map(TinyInt)
                .ok_or_else(|| overflow(column, what)),
            SmallInt(a) => a
                .checked_neg()
                .map(SmallInt)
                .ok_or_else(|| overflow(column, what)),
            Int(a) => a
                .checked_neg()
                .map(Int)
                .ok_or_else(|| overflow(column, what)),
            BigInt(a) => a
                .checked_neg()
                .map(BigInt)
                .ok_or_else(|| overflow(column, what)),
            Float(a) => Ok(Float(-a)),
            Double(a) => Ok(Double(-a)),
            Decimal(a) => Ok(decimal(i256::from_i128(-a), precision_scale(ty).0)),
            _ => Err(mismatch(column, ty)),
        }
    }

    pub fn multiply(
        a: Datum,
        b: Datum,
        ty: &PaimonType,
        column: &str,
    ) -> Result<Datum, StorageError> {
        use Datum::*;
        match (a, b) {
            (TinyInt(a), TinyInt(b)) => checked!(
                a,
                checked_mul,
                b,
                TinyInt,
                column,
                "product overflows TINYINT"
            ),
            (SmallInt(a), SmallInt(b)) => checked!(
                a,
                checked_mul,
                b,
                SmallInt,
                column,
                "product overflows SMALLINT"
            ),
            (Int(a), Int(b)) => checked!(a, checked_mul, b, Int, column, "product overflows INT"),
            (BigInt(a), BigInt(b)) => checked!(
                a,
                checked_mul,
                b,
                BigInt,
                column,
                "product overflows BIGINT"
            ),
            (Float(a), Float(b)) => Ok(Float(a * b)),
            (Double(a), Double(b)) => Ok(Double(a * b)),
            (Decimal(a), Decimal(b)) => {
                let (precision, scale) = precision_scale(ty);
                let exact = i256::from_i128(a).wrapping_mul(i256::from_i128(b));
                let unit = i256::from_i128(10).wrapping_pow(scale as u32);
                Ok(decimal(round_half_up(exact, unit), precision))
            }
            _ => Err(mismatch(column, ty)),
        }
    }

    pub fn divide(
        a: Datum,
        b: Datum,
        ty: &PaimonType,
        column: &str,
    ) -> Result<Datum, StorageError> {
        use Datum::*;
        let zero = || overflow(column, "division by zero while taking back a product");
        let what = "quotient overflows its type";
        match (a, b) {
            (_, TinyInt(0) | SmallInt(0) | Int(0) | BigInt(0)) => Err(zero()),
            (TinyInt(a), TinyInt(b)) => checked!(a, checked_div, b, TinyInt, column, what),
            (SmallInt(a), SmallInt(b)) => checked!(a, checked_div, b, SmallInt, column, what),
            (Int(a), Int(b)) => checked!(a, checked_div, b, Int, column, what),
            (BigInt(a), BigInt(b)) => checked!(a, checked_div, b, BigInt, column, what),
            (Float(a), Float(b)) => Ok(Float(a / b)),
            (Double(a), Double(b)) => Ok(Double(a / b)),
            (Decimal(_), Decimal(0)) => Err(zero()),
            (Decimal(a), Decimal(b)) => {
                let (precision, scale) = precision_scale(ty);
                let n =
                    i256::from_i128(a).wrapping_mul(i256::from_i128(10).wrapping_pow(scale as u32));
                let d = i256::from_i128(b);
                // Java's BigDecimal.divide is exact: a quotient without a finite decimal
                // expansion fails there.
                let mut rest = d
                    .wrapping_abs()
                    .wrapping_div(gcd(n.wrapping_abs(), d.wrapping_abs()));
                for p in [2, 5] {
                    let p = i256::from_i128(p);
                    while rest.wrapping_rem(p) == i256::ZERO {
                        rest = rest.wrapping_div(p);
                    }
                }
                if rest != i256::ONE {
                    return Err(overflow(
                        column,
                        "taking back a product gives a quotient without a finite decimal \
                         expansion",
                    ));
                }
                Ok(decimal(round_half_up(n, d), precision))
            }
            _ => Err(mismatch(column, ty)),
        }
    }

    fn gcd(mut a: i256, mut b: i256) -> i256 {
        while b != i256::ZERO {
            let r = a.wrapping_rem(b);
            a = b;
            b = r;
        }
        a
    }
}

/// An Arrow array of Paimon type `ty` holding `values` (the types merge functions compute).
pub fn datums_to_array(values: Vec<Datum>, ty: &PaimonType) -> Result<ArrayRef, StorageError> {
    let wrong = || StorageError::format(format!("a merged value is not of type {ty}"));
    macro_rules! build {
        ($array:ty, $variant:ident) => {
            Arc::new(
                values
                    .into_iter()
                    .map(|d| match d {
                        Datum::Null => Ok(None),
                        Datum::$variant(v) => Ok(Some(v)),
                        _ => Err(wrong()),
                    })
                    .collect::<Result<$array, StorageError>>()?,
            ) as ArrayRef
        };
    }
    Ok(match ty.kind {
        TypeKind::Boolean => build!(BooleanArray, Boolean),
        TypeKind::TinyInt => build!(Int8Array, TinyInt),
        TypeKind::SmallInt => build!(Int16Array, SmallInt),
        TypeKind::Int => build!(Int32Array, Int),
        TypeKind::BigInt => build!(Int64Array, BigInt),
        TypeKind::Float => build!(Float32Array, Float),
        TypeKind::Double => build!(Float64Array, Double),
        TypeKind::Char(_) | TypeKind::VarChar(_) => build!(StringArray, String),
        TypeKind::Decimal { precision, scale } => {
            let array = values
                .into_iter()
                .map(|d| match d {
                    Datum::Null => Ok(None),
                    Datum::Decimal(v) => Ok(Some(v)),
                    _ => Err(wrong()),
                })
                .collect::<Result<Decimal128Array, StorageError>>()?;
            Arc::new(array.with_precision_and_scale(precision, scale as i8)?)
        }
        _ => return Err(wrong()),
    })
}

#[cfg(test)]
mod tests;
