//! Changelogs produced by compaction: `changelog-producer` = `lookup` and `full-compaction`.
//!
//! With these producers a commit writes no changelog; the compaction that next merges the
//! changed keys does, from the key's state before and after it (Paimon's
//! `LookupChangelogMergeFunctionWrapper` and `FullChangelogMergeFunctionWrapper`):
//! - `lookup`: every compaction that pushes level-0 files up. The changed keys are those of the
//!   level-0 inputs; a key's *before* is its version at the lowest level >= 1 (among the inputs,
//!   else looked up in the levels below the output), which in tables that need lookups is its
//!   whole state.
//! - `full-compaction`: full compactions (every file of the bucket to the max level). The
//!   changed keys are those of the inputs below the max level; a key's *before* is its version
//!   at the max level, the previous full compaction's result.
//!
//! A key's *after* is the compaction's merged row. Per key, in key order: no before and an
//! added after is `+I`; a before and no after (deleted) is `-D` of the before; both is `-U`
//! before and `+U` after, unless `changelog-producer.row-deduplicate` is on and the values are
//! equal. A deleted before counts as none. First-row tables only ever announce new keys (`+I`):
//! their rows never change. Rows keep their sequence numbers; the file (the data files' key-value
//! layout, named like input changelog files) rides on the COMPACT snapshot's changelog manifest
//! list, where Paimon's streaming readers and `table_changelog` find it.

use std::collections::{BTreeMap, HashSet};

use arrow::array::{
    Array, ArrayRef, AsArray, Int8Array, RecordBatch, UInt32Array, make_comparator,
};
use arrow::compute::{SortOptions, interleave_record_batch, take_record_batch};
use arrow::datatypes::Int8Type;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::kind;
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::merge_engine::MergeEngine;
use crate::storage::spec::options::ChangelogProducer;
use crate::storage::spec::schema::TableSchema;

/// Which compactions produce a changelog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    Lookup,
    FullCompaction,
}

/// The table's compaction-time changelog producer, if it has one (primary-key tables only).
pub fn producer(schema: &TableSchema) -> Option<Producer> {
    if !schema.has_primary_key() {
        return None;
    }
    match schema.core_options().changelog_producer() {
        Ok(ChangelogProducer::Lookup) => Some(Producer::Lookup),
        Ok(ChangelogProducer::FullCompaction) => Some(Producer::FullCompaction),
        _ => None,
    }
}

/// The changed keys' rows before and after one compaction, and what they make.
pub(crate) struct ChangeCapture {
    encoder: KeyEncoder,
    keys: HashSet<Vec<u8>>,
    batches: Vec<RecordBatch>,
    /// Per changed key (encoded, so in key order): where its before and after rows are.
    rows: BTreeMap<Vec<u8>, [Option<(usize, usize)>; 2]>,
    first_row: bool,
    /// Value columns compared under `row-deduplicate` (indexes into the full layout).
    dedup_columns: Option<Vec<usize>>,
}

const BEFORE: usize = 0;
const AFTER: usize = 1;

impl ChangeCapture {
    /// A capture of `keys` (encoded by `encoder`) for a table of `schema` whose rows come in
    /// the full read layout (keys, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, every column).
    pub(crate) fn new(schema: &TableSchema, encoder: KeyEncoder, keys: HashSet<Vec<u8>>) -> Self {
        let first_row = crate::storage::lsm::merge_engine::MergeOptions::from_schema(schema)
            .is_ok_and(|m| m.engine == MergeEngine::FirstRow);
        let options = schema.core_options();
        let dedup_columns = options.changelog_row_deduplicate().then(|| {
            let ignored: HashSet<&str> = options
                .changelog_row_deduplicate_ignore_fields()
                .into_iter()
                .collect();
            let value_offset = encoder.layout().key_count() + 2;
            schema
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| !ignored.contains(f.name.as_str()))
                .map(|(i, _)| value_offset + i)
                .collect()
        });
        Self {
            encoder,
            keys,
            batches: Vec::new(),
            rows: BTreeMap::new(),
            first_row,
            dedup_columns,
        }
    }

    /// Takes the changed keys' added rows of `batch` as their before images.
    pub(crate) fn before(&mut self, batch: &RecordBatch) -> Result<(), StorageError> {
        self.take(batch, BEFORE)
    }

    /// Takes the changed keys' added rows of `batch` (merged output) as their after images.
    pub(crate) fn after(&mut self, batch: &RecordBatch) -> Result<(), StorageError> {
        self.take(batch, AFTER)
    }

    fn take(&mut self, batch: &RecordBatch, side: usize) -> Result<(), StorageError> {
        if batch.num_rows() == 0 || self.keys.is_empty() {
            return Ok(());
        }
        let kinds = batch
            .column(self.encoder.layout().kind_index())
            .as_primitive::<Int8Type>();
        let encoded = self.encoder.encode(batch.columns())?;
        // Only the changed keys' rows are kept (a full compaction streams the whole bucket).
        let at = self.batches.len();
        let mut kept: Vec<u32> = Vec::new();
        for row in 0..batch.num_rows() {
            let key = encoded.row(row).data();
            if !kind::is_add(kinds.value(row)) || !self.keys.contains(key) {
                continue;
            }
            self.rows.entry(key.to_vec()).or_default()[side] = Some((at, kept.len()));
            kept.push(row as u32);
        }
        if !kept.is_empty() {
            self.batches
                .push(take_record_batch(batch, &UInt32Array::from(kept))?);
        }
        Ok(())
    }

    /// The changelog rows, in key order (`None` when nothing changed).
    pub(crate) fn changelog(&self) -> Result<Option<RecordBatch>, StorageError> {
        let mut picks: Vec<(usize, usize)> = Vec::new();
        let mut kinds: Vec<i8> = Vec::new();
        for [before, after] in self.rows.values() {
            match (before, after) {
                (None, Some(a)) => {
                    picks.push(*a);
                    kinds.push(kind::INSERT);
                }
                (Some(b), None) if !self.first_row => {
                    picks.push(*b);
                    kinds.push(kind::DELETE);
                }
                (Some(b), Some(a)) if !self.first_row && !self.unchanged(*b, *a)? => {
                    picks.extend([*b, *a]);
                    kinds.extend([kind::UPDATE_BEFORE, kind::UPDATE_AFTER]);
                }
                _ => {}
            }
        }
        if picks.is_empty() {
            return Ok(None);
        }
        let refs: Vec<&RecordBatch> = self.batches.iter().collect();
        let rows = interleave_record_batch(&refs, &picks)?;
        let mut columns: Vec<ArrayRef> = rows.columns().to_vec();
        columns[self.encoder.layout().kind_index()] = std::sync::Arc::new(Int8Array::from(kinds));
        Ok(Some(RecordBatch::try_new(rows.schema(), columns)?))
    }

    /// Whether `row-deduplicate` leaves this update out: its compared values are equal.
    fn unchanged(&self, b: (usize, usize), a: (usize, usize)) -> Result<bool, StorageError> {
        let Some(columns) = &self.dedup_columns else {
            return Ok(false);
        };
        for &c in columns {
            let (left, right): (&dyn Array, &dyn Array) = (
                self.batches[b.0].column(c).as_ref(),
                self.batches[a.0].column(c).as_ref(),
            );
            let cmp = make_comparator(left, right, SortOptions::default())?;
            if cmp(b.1, a.1).is_ne() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testkit::keyed_schema;

    #[test]
    fn producers() {
        let of = |opts: &[(&str, &str)]| producer(&keyed_schema(&[], opts));
        assert_eq!(of(&[]), None);
        assert_eq!(of(&[("changelog-producer", "input")]), None);
        assert_eq!(
            of(&[("changelog-producer", "Lookup")]),
            Some(Producer::Lookup)
        );
        assert_eq!(
            of(&[("changelog-producer", "full-compaction")]),
            Some(Producer::FullCompaction)
        );
    }
}
