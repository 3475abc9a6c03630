//! [`MemTable`]: one transaction's rows of one (partition, bucket) in one sorted structure —
//! each key's newest version, found in O(log n) — for tables whose newest version of a key
//! wins (plain deduplicate, no `changelog-producer = input`).
//!
//! A list of runs, one per statement, made every statement dearer than the last: INSERT's
//! duplicate check merged every earlier run, every read merged them all. Here a finished
//! statement's folded rows ([`MemRun`]) are merged in key by key: the rows stay in the
//! statement's batch (a *chunk*), the map points at them. What the map held for a key before
//! a statement is kept in the statement's undo log, so a statement that fails and ROLLBACK TO
//! SAVEPOINT put the map back as it was (chunks of undone statements are dropped with them).
//!
//! Commits' first-committer-wins checks need, per key, how the transaction changed it: each
//! version carries the strictest check of every statement that wrote the key ([`Check`]: an
//! INSERT's 23505 over a change's 40001, the oldest snapshot read), so a key overwritten by a
//! blind upsert is still checked as the earlier statement required.
//!
//! Reads see the table as one run ([`MemTable::run`], materialised once per change and cached);
//! reads by key only the versions of their keys ([`MemTable::run_of`]).
//! A commit and a spill see it as runs grouped by check ([`MemTable::runs_by_check`]); a spill
//! keeps savepoints working by writing one group of files per savepoint interval
//! ([`MemTable::epochs`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, Int8Array, RecordBatch};
use arrow::compute::interleave;
use arrow::row::Rows;

use crate::storage::StorageError;
use crate::storage::lsm::memrun::{MemRun, WriteMode, cast_to_fields};
use crate::storage::spec::datum::Datum;

/// How a commit checks a key the transaction wrote against commits since its snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// An INSERT wrote the key: a commit of the same key since is 23505 (else 40001).
    pub insert: bool,
    /// The oldest snapshot a statement writing the key read.
    pub read_at: i64,
    /// The oldest commit-log position a statement writing the key read at.
    pub read_lsn: u64,
}

impl Check {
    fn of(mode: WriteMode, read_at: i64, read_lsn: u64) -> Option<Check> {
        match mode {
            WriteMode::Upsert => None,
            WriteMode::Insert => Some(Check {
                insert: true,
                read_at,
                read_lsn,
            }),
            WriteMode::Change => Some(Check {
                insert: false,
                read_at,
                read_lsn,
            }),
        }
    }

    fn combine(a: Option<Check>, b: Option<Check>) -> Option<Check> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => Some(Check {
                insert: a.insert || b.insert,
                read_at: a.read_at.min(b.read_at),
                read_lsn: a.read_lsn.min(b.read_lsn),
            }),
        }
    }
}

/// A key's newest version: a row of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    chunk: u32,
    row: u32,
    pub kind: i8,
    pub stmt: u32,
    pub check: Option<Check>,
}

/// One statement's folded rows, which versions point into.
#[derive(Debug)]
struct Chunk {
    stmt: u32,
    rows: RecordBatch,
    bytes: usize,
}

/// What a statement changed: each key it wrote and the version the key had before.
#[derive(Debug)]
struct Undo {
    stmt: u32,
    changes: Vec<(Vec<u8>, Option<Version>)>,
}

/// A transaction's rows of one (partition, bucket), newest version per key.
#[derive(Debug)]
pub struct MemTable {
    pub partition: Vec<Datum>,
    pub partition_bytes: Vec<u8>,
    pub bucket: i32,
    /// Positions of the trimmed primary-key columns among the table's columns.
    key_idx: Vec<usize>,
    entries: BTreeMap<Vec<u8>, Version>,
    chunks: Vec<Chunk>,
    undo: Vec<Undo>,
    bytes: usize,
    /// [`run`](Self::run)'s materialisation, until the next change.
    cached: Mutex<Option<MemRun>>,
}

impl MemTable {
    pub fn new(
        partition: Vec<Datum>,
        partition_bytes: Vec<u8>,
        bucket: i32,
        key_idx: Vec<usize>,
    ) -> Self {
        Self {
            partition,
            partition_bytes,
            bucket,
            key_idx,
            entries: BTreeMap::new(),
            chunks: Vec::new(),
            undo: Vec::new(),
            bytes: 0,
            cached: Mutex::new(None),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Memory held by the rows (versions overwritten since included).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The newest version of the key with encoded bytes `key`.
    pub fn get(&self, key: &[u8]) -> Option<&Version> {
        self.entries.get(key)
    }

    /// Merges a finished statement's folded rows (`keys`: their encoded keys, row by row):
    /// each becomes its key's newest version.
    pub fn merge(&mut self, run: MemRun, keys: &Rows) -> Result<(), StorageError> {
        if run.is_empty() {
            return Ok(());
        }
        if keys.num_rows() != run.len() {
            return Err(StorageError::internal(
                "memtable: keys and rows differ in length",
            ));
        }
        // Every chunk in the first one's Arrow types (materialising interleaves them).
        let mut run = run;
        if let Some(first) = self.chunks.first()
            && first.rows.schema() != run.rows.schema()
        {
            let columns =
                cast_to_fields(run.rows.columns().to_vec(), first.rows.schema().fields())?;
            run.rows = RecordBatch::try_new_with_options(
                first.rows.schema(),
                columns,
                &arrow::array::RecordBatchOptions::new().with_row_count(Some(run.len())),
            )?;
        }
        let chunk = u32::try_from(self.chunks.len())
            .map_err(|_| StorageError::internal("memtable: too many chunks"))?;
        let check = Check::of(run.mode, run.read_at, run.read_lsn);
        let mut changes = Vec::with_capacity(run.len());
        for (i, key) in keys.iter().enumerate() {
            let key = key.as_ref().to_vec();
            let kind = run.kinds.value(i);
            let version = |prev: Option<&Version>| Version {
                chunk,
                row: i as u32,
                kind,
                stmt: run.stmt,
                check: Check::combine(prev.and_then(|p| p.check), check),
            };
            let prev = match self.entries.get_mut(&key) {
                Some(slot) => {
                    let prev = *slot;
                    *slot = version(Some(&prev));
                    Some(prev)
                }
                None => {
                    self.entries.insert(key.clone(), version(None));
                    None
                }
            };
            changes.push((key, prev));
        }
        match self.undo.last_mut() {
            Some(u) if u.stmt == run.stmt => u.changes.extend(changes),
            _ => self.undo.push(Undo {
                stmt: run.stmt,
                changes,
            }),
        }
        self.bytes += run.bytes;
        self.chunks.push(Chunk {
            stmt: run.stmt,
            rows: run.rows,
            bytes: run.bytes,
        });
        self.invalidate();
        Ok(())
    }

    /// Undoes every statement after `mark`.
    pub fn rollback_to(&mut self, mark: u32) {
        while self.undo.last().is_some_and(|u| u.stmt > mark) {
            let undo = self.undo.pop().expect("undo");
            for (key, prev) in undo.changes.into_iter().rev() {
                match prev {
                    Some(p) => {
                        self.entries.insert(key, p);
                    }
                    None => {
                        self.entries.remove(&key);
                    }
                }
            }
        }
        while self.chunks.last().is_some_and(|c| c.stmt > mark) {
            let c = self.chunks.pop().expect("chunk");
            self.bytes -= c.bytes;
        }
        self.invalidate();
    }

    fn invalidate(&mut self) {
        *self.cached.get_mut().expect("memtable cache") = None;
    }

    /// Every key's newest version as one run, in key order (cached until the next change).
    pub fn run(&self) -> Result<MemRun, StorageError> {
        let mut cached = self.cached.lock().expect("memtable cache");
        if let Some(run) = cached.as_ref() {
            return Ok(run.clone());
        }
        let versions: Vec<&Version> = self.entries.values().collect();
        let stmt = self.chunks.last().map_or(0, |c| c.stmt);
        let run = self.materialise(&versions, stmt, WriteMode::Upsert, i64::MAX)?;
        *cached = Some(run.clone());
        Ok(run)
    }

    /// The newest versions of `keys` (encoded as the map's keys) as one run in key order, or
    /// `None` when the transaction wrote none of them: a read by key costs O(k log n), not a
    /// materialisation of every row the transaction wrote.
    pub fn run_of(&self, keys: &[Vec<u8>]) -> Result<Option<MemRun>, StorageError> {
        let mut found: Vec<(&[u8], &Version)> = keys
            .iter()
            .filter_map(|k| self.entries.get_key_value(k.as_slice()))
            .map(|(k, v)| (k.as_slice(), v))
            .collect();
        if found.is_empty() {
            return Ok(None);
        }
        found.sort_unstable_by(|a, b| a.0.cmp(b.0));
        found.dedup_by(|a, b| a.0 == b.0);
        let versions: Vec<&Version> = found.into_iter().map(|(_, v)| v).collect();
        let stmt = self.chunks.last().map_or(0, |c| c.stmt);
        self.materialise(&versions, stmt, WriteMode::Upsert, i64::MAX)
            .map(Some)
    }

    /// The keys' newest versions as runs with one check each (what a commit checks and
    /// writes): blind upserts, then per snapshot read the inserted and the changed keys.
    pub fn runs_by_check(&self) -> Result<Vec<MemRun>, StorageError> {
        let versions: Vec<&Version> = self.entries.values().collect();
        self.grouped(&versions)
    }

    fn grouped(&self, versions: &[&Version]) -> Result<Vec<MemRun>, StorageError> {
        let mut groups: BTreeMap<(u8, i64, u64), Vec<&Version>> = BTreeMap::new();
        for &v in versions {
            let at = match v.check {
                None => (0, i64::MAX, u64::MAX),
                Some(Check {
                    insert: true,
                    read_at,
                    read_lsn,
                }) => (1, read_at, read_lsn),
                Some(Check {
                    insert: false,
                    read_at,
                    read_lsn,
                }) => (2, read_at, read_lsn),
            };
            groups.entry(at).or_default().push(v);
        }
        let mut out = Vec::with_capacity(groups.len());
        for ((category, read_at, read_lsn), versions) in groups {
            let mode = match category {
                0 => WriteMode::Upsert,
                1 => WriteMode::Insert,
                _ => WriteMode::Change,
            };
            let stmt = versions.iter().map(|v| v.stmt).max().unwrap_or(0);
            let mut run = self.materialise(&versions, stmt, mode, read_at)?;
            run.read_lsn = if read_lsn == u64::MAX { 0 } else { read_lsn };
            out.push(run);
        }
        Ok(out)
    }

    /// What a spill writes: per savepoint interval (statements after one of `marks` up to
    /// the next), oldest first, the interval's last statement and the keys it wrote as they
    /// were at its end, grouped by check. Rolling back to a mark then drops whole intervals.
    pub fn epochs(&self, marks: &BTreeSet<u32>) -> Result<Vec<(u32, Vec<MemRun>)>, StorageError> {
        let Some(last) = self.undo.last().map(|u| u.stmt) else {
            return Ok(Vec::new());
        };
        // Interval ends, newest first.
        let mut ends: Vec<u32> = marks.iter().copied().filter(|&m| m < last).collect();
        ends.push(last);
        ends.sort_unstable();
        ends.dedup();
        ends.reverse();
        // Versions as of the interval being emitted: the map with later statements undone.
        let mut undone: HashMap<&[u8], Option<Version>> = HashMap::new();
        let mut out = Vec::new();
        let mut at = self.undo.len();
        for (e, &end) in ends.iter().enumerate() {
            let start = ends.get(e + 1).copied().unwrap_or(0);
            let first = self.undo[..at].partition_point(|u| u.stmt <= start);
            let mut keys: BTreeSet<&[u8]> = BTreeSet::new();
            for u in &self.undo[first..at] {
                keys.extend(u.changes.iter().map(|(k, _)| k.as_slice()));
            }
            let versions: Vec<Version> = keys
                .iter()
                .filter_map(|k| match undone.get(k) {
                    Some(v) => *v,
                    None => self.entries.get(*k).copied(),
                })
                .collect();
            let refs: Vec<&Version> = versions.iter().collect();
            out.push((end, self.grouped(&refs)?));
            for u in self.undo[first..at].iter().rev() {
                for (k, prev) in u.changes.iter().rev() {
                    undone.insert(k.as_slice(), *prev);
                }
            }
            at = first;
        }
        out.reverse();
        Ok(out)
    }

    /// A run of `versions` (in key order).
    fn materialise(
        &self,
        versions: &[&Version],
        stmt: u32,
        mode: WriteMode,
        read_at: i64,
    ) -> Result<MemRun, StorageError> {
        let schema = match self.chunks.first() {
            Some(c) => c.rows.schema(),
            None => return Err(StorageError::internal("memtable: no rows to read")),
        };
        let at: Vec<(usize, usize)> = versions
            .iter()
            .map(|v| (v.chunk as usize, v.row as usize))
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for j in 0..schema.fields().len() {
            let sources: Vec<&dyn Array> = self
                .chunks
                .iter()
                .map(|c| c.rows.column(j).as_ref())
                .collect();
            columns.push(interleave(&sources, &at)?);
        }
        let rows = RecordBatch::try_new_with_options(
            schema,
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(at.len())),
        )?;
        let keys = self
            .key_idx
            .iter()
            .map(|&i| Arc::clone(rows.column(i)))
            .collect();
        let kinds = Int8Array::from_iter_values(versions.iter().map(|v| v.kind));
        let bytes = rows.get_array_memory_size();
        Ok(MemRun {
            stmt,
            mode,
            read_at,
            read_lsn: 0,
            partition: self.partition.clone(),
            partition_bytes: self.partition_bytes.clone(),
            bucket: self.bucket,
            keys,
            kinds,
            rows,
            probes: Vec::new(),
            bytes,
        })
    }
}

#[cfg(test)]
#[path = "memtable_tests.rs"]
mod tests;
