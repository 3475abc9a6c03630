//! [`TableWrite`]: one transaction's writes to one table — statements of rows with their row
//! kinds, per-bucket memtables, in-memory runs the transaction reads back, sorted level-0
//! files, the duplicate-key check of INSERT, and the first-committer-wins check at COMMIT.
//!
//! Rows are routed to (partition, bucket) with Paimon's bucket function (dynamic-bucket tables:
//! the bucket index, `dynamic_bucket.rs`) and buffered per bucket.
//! At a statement's end each buffer is sorted and folded to one version per key ([`MemRun`]).
//! When buffered rows exceed the write buffer (`write-buffer-size`, default
//! [`DEFAULT_WRITE_BUFFER_SIZE`](crate::storage::spec::options::DEFAULT_WRITE_BUFFER_SIZE)), they are written as level-0 files (sorted runs) with fresh
//! sequence numbers, so memory stays bounded whatever the statement's size. In-memory runs get
//! their sequence numbers at COMMIT, under the commit lock, so a later commit always carries
//! higher numbers in a bucket. Nothing is visible to others until `commit::commit_write`
//! publishes a snapshot; a write that fails or is dropped deletes the files it wrote.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int8Array, RecordBatch, StringArray, UInt32Array};
use arrow::compute::{concat_batches, take, take_record_batch};
use arrow::datatypes::Int8Type;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::{self, kind};
use crate::storage::lsm::key_read::KeyQuery;
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::live_files::{BucketId, LiveFiles};
use crate::storage::lsm::memrun::{
    DuplicateAt, Folded, MEM_SEQUENCE_BASE, MemRun, fold_merge, fold_runs, fold_statement, key_rows,
};
use crate::storage::lsm::memtable::MemTable;
use crate::storage::lsm::merge::{KeyGroups, RunStream};
use crate::storage::lsm::run_file::{self, NewFile};
use crate::storage::lsm::split::{Overlay, Split, compare_keys};
use crate::storage::lsm::unflushed::{
    Lsn, ReaderPin, UnflushedCut, UnflushedState, cut_of, read_lsn,
};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::bucket;
use crate::storage::spec::datum::{Datum, PartitionText};
use crate::storage::spec::manifest::{DataFileMeta, FileSource};
use crate::storage::spec::types::TypeKind;
use crate::storage::write::dynamic_bucket::{DynamicBuckets, WrittenHashes};

pub use crate::storage::lsm::memrun::WriteMode;

/// A file written before COMMIT: a spilled run (sequence numbers assigned when written).
#[derive(Debug, Clone)]
struct Spilled {
    stmt: u32,
    mode: WriteMode,
    read_at: i64,
    file: NewFile,
}

struct Buffer {
    partition: Vec<Datum>,
    partition_bytes: Vec<u8>,
    bucket: i32,
    batches: Vec<RecordBatch>,
    kinds: Vec<Int8Array>,
    bytes: usize,
}

/// One transaction's writes to one table: statements of rows with their kinds, buffered per
/// bucket, folded into in-memory runs at each statement's end, spilled as sorted level-0 runs
/// when they outgrow the write buffer, and committed as one snapshot.
pub struct TableWrite {
    table: Table,
    base: Option<Snapshot>,
    /// Live files of the base snapshot per (partition, bucket).
    existing: Arc<LiveFiles>,
    /// The current statement: its number, mode, unsorted rows and spilled runs.
    stmt: u32,
    mode: WriteMode,
    /// The snapshot the current statement reads.
    read_at: i64,
    buffers: BTreeMap<BucketId, Buffer>,
    buffered: usize,
    stmt_files: Vec<NewFile>,
    stmt_rows: u64,
    /// Finished statements: in-memory runs and spilled files.
    runs: Vec<MemRun>,
    run_bytes: usize,
    files: Vec<Spilled>,
    /// Finished statements of a table whose newest version of a key wins: one sorted
    /// structure per bucket instead of `runs` (see `lsm/memtable.rs`); `None` for other
    /// tables. Turned into `runs` when the transaction commits.
    tables: Option<BTreeMap<BucketId, MemTable>>,
    /// Encodes keys for `tables`.
    encoder: Option<KeyEncoder>,
    /// Statement numbers savepoints were taken at (a spill keeps their intervals apart).
    marks: BTreeSet<u32>,
    /// Partition values and bytes by the partition columns' Arrow row encoding.
    partitions: HashMap<Vec<u8>, (Vec<Datum>, Vec<u8>)>,
    limit: usize,
    /// The run being written right now, if any.
    in_flight: Option<tokio::task::JoinHandle<Result<NewFile, StorageError>>>,
    rows: u64,
    committed: bool,
    /// Changelog files written by this write's commit (`changelog-producer` = `input`),
    /// deleted with the data files unless committed.
    changelog: Vec<NewFile>,
    /// Keeps the base snapshot from expiring while the transaction runs.
    _base_pin: Option<crate::storage::meta::pins::SnapshotPin>,
    /// Bucket assignment of a dynamic-bucket table (`bucket = -1`), see `dynamic_bucket.rs`.
    dynamic: Option<DynamicBuckets>,
    /// The committed, unflushed transactions the current statement reads over its snapshot
    /// (`lsm/unflushed.rs`).
    stmt_cut: Option<UnflushedCut>,
    /// The commit-log position the transaction first read at: its commit checks the
    /// transactions logged after it.
    base_lsn: Lsn,
    /// The commit-log position the current statement read at.
    stmt_lsn: Lsn,
    /// Keeps those transactions' keys until this write ends.
    _reader_pin: ReaderPin,
}

impl TableWrite {
    /// Starts a write on the table's latest snapshot (its first statement in `mode`).
    pub async fn new(table: Table, mode: WriteMode) -> Result<Self, StorageError> {
        let base = table.current_snapshot().await?;
        let mut write = Self::at(table, base.clone()).await?;
        write.begin_statement_on(mode, base.as_ref());
        Ok(write)
    }

    /// Starts a write whose reads and checks use snapshot `base`.
    pub async fn at(table: Table, base: Option<Snapshot>) -> Result<Self, StorageError> {
        crate::storage::write::restriction::check_writable(&table)?;
        // Expiration keeps the base (its files are read, and checked against at COMMIT). No
        // existence check here: a base expired before the pin fails COMMIT's `check_base`.
        let base_pin = base.as_ref().map(|s| table.shared().pin(s.id));
        let existing = match &base {
            Some(snapshot) => table.live_files(snapshot).await?,
            None => Arc::new(LiveFiles::empty()),
        };
        let limit = table.schema().core_options().write_buffer_size();
        let dynamic = DynamicBuckets::for_table(&table, &existing)?;
        let schema = table.schema();
        let sorted = schema.has_primary_key()
            && fold_merge(schema)?.is_none()
            && !crate::storage::write::changelog::writes_changelog(schema);
        let encoder = if sorted {
            Some(KeyEncoder::new(&table)?)
        } else {
            None
        };
        let base_lsn = read_lsn(base.as_ref());
        let reader_pin = table.state::<UnflushedState>().pin_reader(base_lsn);
        let stmt_cut = base.as_ref().and_then(cut_of).cloned();
        Ok(Self {
            table,
            base,
            existing,
            stmt: 0,
            mode: WriteMode::Insert,
            read_at: 0,
            buffers: BTreeMap::new(),
            buffered: 0,
            stmt_files: Vec::new(),
            stmt_rows: 0,
            runs: Vec::new(),
            run_bytes: 0,
            files: Vec::new(),
            tables: sorted.then(BTreeMap::new),
            encoder,
            marks: BTreeSet::new(),
            partitions: HashMap::new(),
            limit,
            in_flight: None,
            rows: 0,
            committed: false,
            changelog: Vec::new(),
            _base_pin: base_pin,
            dynamic,
            stmt_cut,
            base_lsn,
            stmt_lsn: base_lsn,
            _reader_pin: reader_pin,
        })
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The snapshot this write reads and checks against.
    pub fn base(&self) -> Option<&Snapshot> {
        self.base.as_ref()
    }

    /// Rows written so far, all statements.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether nothing was written (or everything was rolled back).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
            && self.files.is_empty()
            && self.tables.as_ref().is_none_or(BTreeMap::is_empty)
            && !self.has_open_statement()
    }

    /// Bytes of finished statements held in memory.
    fn mem_bytes(&self) -> usize {
        self.run_bytes
            + self
                .tables
                .iter()
                .flat_map(BTreeMap::values)
                .map(MemTable::bytes)
                .sum::<usize>()
    }

    fn has_open_statement(&self) -> bool {
        !self.buffers.is_empty() || !self.stmt_files.is_empty()
    }

    /// Starts the next statement. Statements are numbered; [`rollback_to`](Self::rollback_to)
    /// undoes every statement after a [`mark`](Self::mark).
    /// `read_at`: the snapshot the statement reads (its changes conflict with later commits
    /// of the same keys).
    pub fn begin_statement(&mut self, mode: WriteMode, read_at: i64) {
        debug_assert!(!self.has_open_statement(), "previous statement not ended");
        self.stmt += 1;
        self.mode = mode;
        self.read_at = read_at;
        self.stmt_rows = 0;
        if let Some(d) = &mut self.dynamic {
            d.read_at(read_at);
        }
    }

    /// [`begin_statement`](Self::begin_statement) reading `snapshot` (as
    /// [`Table::current_snapshot`] or a transaction's pinned one gave it: with the unflushed
    /// transactions it was taken with).
    pub fn begin_statement_on(&mut self, mode: WriteMode, snapshot: Option<&Snapshot>) {
        self.begin_statement(mode, snapshot.map_or(0, |s| s.id));
        self.stmt_cut = snapshot.and_then(cut_of).cloned();
        self.stmt_lsn = read_lsn(snapshot).max(self.base_lsn);
    }

    /// The commit-log position the transaction first read at.
    pub(crate) fn base_lsn(&self) -> Lsn {
        self.base_lsn
    }

    /// The point a savepoint returns to: statements after it are undone by `rollback_to`.
    pub fn mark(&mut self) -> u32 {
        self.marks.insert(self.stmt);
        self.stmt
    }

    /// Buffers `batch` as inserted rows (columns in the table schema's order and types).
    pub async fn write(&mut self, batch: RecordBatch) -> Result<(), StorageError> {
        self.write_kinds(batch, None).await
    }

    /// Buffers `batch` with a row kind per row (`None`: all `+I`).
    pub async fn write_kinds(
        &mut self,
        batch: RecordBatch,
        kinds: Option<Int8Array>,
    ) -> Result<(), StorageError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let kinds = kinds.unwrap_or_else(|| Int8Array::from_value(kind::INSERT, batch.num_rows()));
        let batch = self.conform(batch, &kinds)?;
        self.rows += batch.num_rows() as u64;
        self.stmt_rows += batch.num_rows() as u64;
        let schema = Arc::clone(self.table.schema());
        let partition_idx = schema.indexes_of(&schema.partition_keys);
        let num_buckets = schema.bucket();

        // Partition of each row.
        let mut groups: Vec<(Vec<u8>, Vec<u32>)> = Vec::new();
        if partition_idx.is_empty() {
            groups.push((Vec::new(), (0..batch.num_rows() as u32).collect()));
        } else {
            let columns: Vec<ArrayRef> = partition_idx
                .iter()
                .map(|&i| Arc::clone(batch.column(i)))
                .collect();
            let rows = key_rows(&columns)?;
            let mut index: HashMap<&[u8], usize> = HashMap::new();
            for i in 0..batch.num_rows() {
                let key = rows.row(i).data();
                let g = *index.entry(key).or_insert_with(|| {
                    groups.push((key.to_vec(), Vec::new()));
                    groups.len() - 1
                });
                groups[g].1.push(i as u32);
            }
            for (key, rows_of) in &groups {
                if !self.partitions.contains_key(key) {
                    let first = rows_of[0] as usize;
                    let types = self.table.partition_types();
                    let values = partition_idx
                        .iter()
                        .zip(&types)
                        .map(|(&c, t)| Datum::from_array(batch.column(c), first, t))
                        .collect::<Result<Vec<_>, _>>()?;
                    let bytes = binary_row::serialize(&values, &types);
                    self.partitions.insert(key.clone(), (values, bytes));
                }
            }
        }

        // Bucket of each row.
        let buckets: Option<Vec<i32>> = if let Some(dynamic) = &mut self.dynamic {
            let unpartitioned = binary_row::serialize(&[], &[]);
            let by_partition: Vec<(Vec<u8>, &[u32])> = groups
                .iter()
                .map(|(key, rows)| {
                    let bytes = self.partitions.get(key).map(|p| &p.1);
                    (bytes.unwrap_or(&unpartitioned).clone(), rows.as_slice())
                })
                .collect();
            Some(
                dynamic
                    .assign(&self.table, &batch, &by_partition, self.stmt)
                    .await?,
            )
        } else if num_buckets > 1 {
            let keys = schema.bucket_keys();
            let idx = schema.indexes_of(&keys);
            let columns: Vec<ArrayRef> = idx.iter().map(|&i| Arc::clone(batch.column(i))).collect();
            let types: Vec<_> = idx
                .iter()
                .map(|&i| schema.fields[i].data_type.clone())
                .collect();
            Some(bucket::bucket_ids(&columns, &types, num_buckets)?)
        } else {
            None
        };

        for (key, rows_of) in groups {
            let (values, bytes) = match self.partitions.get(&key) {
                Some(p) => p.clone(),
                None => (Vec::new(), binary_row::serialize(&[], &[])),
            };
            let mut by_bucket: BTreeMap<i32, Vec<u32>> = BTreeMap::new();
            match &buckets {
                Some(b) => {
                    for r in rows_of {
                        by_bucket.entry(b[r as usize]).or_default().push(r);
                    }
                }
                None => {
                    by_bucket.insert(0, rows_of);
                }
            }
            for (b, rows_of) in by_bucket {
                let (part, part_kinds) = if rows_of.len() == batch.num_rows() {
                    (batch.clone(), kinds.clone())
                } else {
                    let idx = UInt32Array::from(rows_of);
                    (
                        take_record_batch(&batch, &idx)?,
                        take(&kinds, &idx, None)?.as_primitive::<Int8Type>().clone(),
                    )
                };
                let size = part.get_array_memory_size();
                let buffer = self
                    .buffers
                    .entry((bytes.clone(), b))
                    .or_insert_with(|| Buffer {
                        partition: values.clone(),
                        partition_bytes: bytes.clone(),
                        bucket: b,
                        batches: Vec::new(),
                        kinds: Vec::new(),
                        bytes: 0,
                    });
                buffer.batches.push(part);
                buffer.kinds.push(part_kinds);
                buffer.bytes += size;
                self.buffered += size;
            }
        }
        if self.buffered + self.mem_bytes() > self.limit {
            self.spill().await?;
        }
        Ok(())
    }

    /// Ends the current statement: folds its rows into in-memory runs (one per bucket) and
    /// checks keys that must be new. On error the statement's writes are undone and earlier
    /// statements stay. Returns the statement's row count.
    ///
    /// A key the statement changed (other than by blind upsert) that a commit after the
    /// statement's snapshot changed too fails the statement: with 23505 for a key it inserted,
    /// else with [`StorageError::CommitConflict`] — the statement worked on an old version of
    /// the row. The session decides what that means (READ COMMITTED re-runs the statement on
    /// the newer data, REPEATABLE READ fails it with 40001), as PostgreSQL decides after
    /// waiting for a row lock; COMMIT's check would find the same conflict, only later.
    pub async fn end_statement(&mut self) -> Result<u64, StorageError> {
        match self.finish_statement().await {
            Ok(rows) => Ok(rows),
            Err(e) => {
                self.rollback_to(self.stmt.saturating_sub(1)).await;
                Err(e)
            }
        }
    }

    /// Whether a statement was begun and written to but neither ended nor rolled back (its
    /// future was dropped: a cancel request or statement timeout).
    pub fn statement_left_open(&self) -> bool {
        self.has_open_statement()
    }

    async fn finish_statement(&mut self) -> Result<u64, StorageError> {
        self.wait_in_flight().await?;
        let schema = Arc::clone(self.table.schema());
        let mut new_runs = Vec::new();
        for (_, buffer) in std::mem::take(&mut self.buffers) {
            let mut run = fold_buffer(&self.table, buffer, self.mode, self.stmt, self.read_at)?;
            run.read_lsn = self.stmt_lsn;
            if !run.is_empty() {
                new_runs.push(run);
            }
        }
        self.buffered = 0;
        if schema.has_primary_key() && self.mode != WriteMode::Upsert {
            self.check_new_keys(&new_runs).await?;
        }
        let checked_runs = if schema.has_primary_key() && self.mode != WriteMode::Upsert {
            new_runs.clone()
        } else {
            Vec::new()
        };
        self.add_runs(new_runs)?;
        let (stmt, mode, read_at) = (self.stmt, self.mode, self.read_at);
        self.files.extend(
            std::mem::take(&mut self.stmt_files)
                .into_iter()
                .map(|file| Spilled {
                    stmt,
                    mode,
                    read_at,
                    file,
                }),
        );
        if schema.has_primary_key() && self.mode != WriteMode::Upsert {
            self.check_statement_since(&checked_runs).await?;
        }
        if self.mem_bytes() > self.limit {
            self.spill().await?;
        }
        Ok(self.stmt_rows)
    }

    /// Keeps a finished statement's runs: merged into the buckets' sorted structures, or
    /// added to the list of runs.
    fn add_runs(&mut self, new_runs: Vec<MemRun>) -> Result<(), StorageError> {
        let Some(tables) = &mut self.tables else {
            for run in new_runs {
                self.run_bytes += run.bytes;
                self.runs.push(run);
            }
            return Ok(());
        };
        let encoder = self
            .encoder
            .as_ref()
            .expect("sorted tables have a key encoder");
        let key_idx = self
            .table
            .schema()
            .indexes_of(&self.table.schema().trimmed_primary_keys());
        for run in new_runs.into_iter().filter(|r| !r.is_empty()) {
            let keys = encoder.encode(&run.keys)?;
            tables
                .entry((run.partition_bytes.clone(), run.bucket))
                .or_insert_with(|| {
                    MemTable::new(
                        run.partition.clone(),
                        run.partition_bytes.clone(),
                        run.bucket,
                        key_idx.clone(),
                    )
                })
                .merge(run, &keys)?;
        }
        Ok(())
    }

    /// Undoes the current statement's writes.
    pub async fn rollback_statement(&mut self) {
        self.buffers.clear();
        self.buffered = 0;
        if let Some(task) = self.in_flight.take()
            && let Ok(Ok(file)) = task.await
        {
            self.stmt_files.push(file);
        }
        self.rows -= self.stmt_rows.min(self.rows);
        self.stmt_rows = 0;
        if let Some(d) = &mut self.dynamic {
            d.forget_after(self.stmt.saturating_sub(1));
        }
        delete_files(&self.table, std::mem::take(&mut self.stmt_files)).await;
    }

    /// Undoes every statement after `mark` (ROLLBACK TO SAVEPOINT).
    pub async fn rollback_to(&mut self, mark: u32) {
        self.rollback_statement().await;
        self.runs.retain(|r| r.stmt <= mark);
        self.run_bytes = self.runs.iter().map(|r| r.bytes).sum();
        if let Some(tables) = &mut self.tables {
            for t in tables.values_mut() {
                t.rollback_to(mark);
            }
            tables.retain(|_, t| !t.is_empty());
        }
        self.marks.retain(|&m| m <= mark);
        if let Some(d) = &mut self.dynamic {
            d.forget_after(mark);
        }
        let (keep, drop): (Vec<Spilled>, Vec<Spilled>) = std::mem::take(&mut self.files)
            .into_iter()
            .partition(|f| f.stmt <= mark);
        self.files = keep;
        delete_files(&self.table, drop.into_iter().map(|s| s.file).collect()).await;
    }

    /// What this transaction wrote to one (partition, bucket), for its own reads; with
    /// `keys` (a read by key), of the MemTable only those keys' versions.
    pub fn overlay(&self, partition: &[u8], bucket: i32, keys: Option<&KeyQuery>) -> Overlay {
        Overlay {
            files: self
                .files
                .iter()
                .filter(|f| f.file.partition == partition && f.file.bucket == bucket)
                .map(|f| f.file.meta.clone())
                .collect(),
            runs: match self
                .tables
                .as_ref()
                .and_then(|t| t.get(&(partition.to_vec(), bucket)))
            {
                // Chunks of one table share the table's Arrow types: materialising them cannot
                // fail but for a bug.
                Some(t) => match keys {
                    Some(k) => t
                        .run_of(k.encoded())
                        .expect("a transaction's rows of a bucket as one run")
                        .into_iter()
                        .collect(),
                    None => vec![
                        t.run()
                            .expect("a transaction's rows of a bucket as one run"),
                    ],
                },
                None => self
                    .runs
                    .iter()
                    .filter(|r| r.partition_bytes == partition && r.bucket == bucket)
                    .cloned()
                    .collect(),
            },
            logged: Vec::new(),
        }
    }

    /// Every (partition values, partition bytes, bucket) this transaction wrote to.
    pub fn written_buckets(&self) -> Vec<(Vec<Datum>, Vec<u8>, i32)> {
        let mut out: BTreeMap<BucketId, Vec<Datum>> = BTreeMap::new();
        for f in &self.files {
            out.entry((f.file.partition.clone(), f.file.bucket))
                .or_insert_with(|| f.file.partition_values.clone());
        }
        for r in &self.runs {
            out.entry((r.partition_bytes.clone(), r.bucket))
                .or_insert_with(|| r.partition.clone());
        }
        for t in self.tables.iter().flat_map(BTreeMap::values) {
            out.entry((t.partition_bytes.clone(), t.bucket))
                .or_insert_with(|| t.partition.clone());
        }
        out.into_iter().map(|((p, b), v)| (v, p, b)).collect()
    }

    /// Writes finished in-memory runs, then the current statement's buffers, as sorted runs.
    /// Finished runs go first so that their sequence numbers stay below the newer statement's.
    /// Each run is written by its own task, so a statement cancelled mid-write never leaves a
    /// file nobody knows about: a dropped `TableWrite` waits for the task in flight and
    /// deletes what it wrote.
    async fn spill(&mut self) -> Result<(), StorageError> {
        for run in std::mem::take(&mut self.runs) {
            let (stmt, mode, read_at) = (run.stmt, run.mode, run.read_at);
            let file = self.write_now(run).await?;
            self.files.push(Spilled {
                stmt,
                mode,
                read_at,
                file,
            });
        }
        self.run_bytes = 0;
        // A bucket's sorted structure: one interval of statements between savepoints after
        // another (rolling back to a savepoint drops whole files), oldest first.
        let tables = self.tables.as_mut().map(std::mem::take).unwrap_or_default();
        let mut marks = self.marks.clone();
        marks.insert(self.stmt.saturating_sub(1));
        for (_, table) in tables {
            for (stmt, runs) in table.epochs(&marks)? {
                for run in runs {
                    let (mode, read_at) = (run.mode, run.read_at);
                    let file = self.write_now(run).await?;
                    self.files.push(Spilled {
                        stmt,
                        mode,
                        read_at,
                        file,
                    });
                }
            }
        }
        let buffers = std::mem::take(&mut self.buffers);
        self.buffered = 0;
        for (_, buffer) in buffers {
            let run = fold_buffer(&self.table, buffer, self.mode, self.stmt, self.read_at)?;
            if run.is_empty() {
                continue;
            }
            let file = self.write_now(run).await?;
            self.stmt_files.push(file);
        }
        Ok(())
    }

    /// Writes one run as a level-0 file now (sequence numbers above what is known here), by
    /// its own task.
    async fn write_now(&mut self, run: MemRun) -> Result<NewFile, StorageError> {
        let floor = self.floor(&run.partition_bytes, run.bucket, None);
        let folded = Folded {
            keys: run.keys,
            kinds: run.kinds,
            rows: run.rows,
            probes: Vec::new(),
        };
        let task = tokio::spawn(write_folded(
            self.table.clone(),
            run.partition,
            run.partition_bytes,
            run.bucket,
            folded,
            floor,
        ));
        self.run_task(task).await
    }

    async fn run_task(
        &mut self,
        task: tokio::task::JoinHandle<Result<NewFile, StorageError>>,
    ) -> Result<NewFile, StorageError> {
        let handle = self.in_flight.insert(task);
        let result = handle.await;
        self.in_flight = None;
        result.map_err(|e| StorageError::task_failed("a writer task", e))?
    }

    async fn wait_in_flight(&mut self) -> Result<(), StorageError> {
        if let Some(task) = self.in_flight.take() {
            let file = task
                .await
                .map_err(|e| StorageError::task_failed("a writer task", e))??;
            self.stmt_files.push(file);
        }
        Ok(())
    }

    /// One above the highest sequence number known in a bucket (base files, and `since`).
    pub(crate) fn floor(
        &self,
        partition: &[u8],
        bucket: i32,
        since: Option<&HashMap<BucketId, Vec<(i64, DataFileMeta)>>>,
    ) -> i64 {
        let at = (partition.to_vec(), bucket);
        let existing = self
            .existing
            .bucket(&at)
            .iter()
            .map(|f| f.max_sequence_number)
            .max()
            .unwrap_or(-1);
        let since = since
            .and_then(|s| s.get(&at))
            .into_iter()
            .flatten()
            .map(|(_, f)| f.max_sequence_number)
            .max()
            .unwrap_or(-1);
        existing.max(since).max(
            self.files
                .iter()
                .filter(|f| f.file.partition == partition && f.file.bucket == bucket)
                .map(|f| f.file.meta.max_sequence_number)
                .max()
                .unwrap_or(-1),
        ) + 1
    }
}

impl TableWrite {
    /// Checks NOT NULL and length limits, pads CHAR(n): a row that breaks a rule fails the
    /// statement before anything is written.
    fn conform(&self, batch: RecordBatch, _kinds: &Int8Array) -> Result<RecordBatch, StorageError> {
        let schema = self.table.schema();
        let mut columns = batch.columns().to_vec();
        for (i, field) in schema.fields.iter().enumerate() {
            let column = &columns[i];
            if !field.data_type.nullable && column.null_count() > 0 {
                return Err(StorageError::NotNull {
                    table: self.table.name().to_owned(),
                    column: field.name.clone(),
                });
            }
            match field.data_type.kind {
                TypeKind::VarChar(n) if n < crate::storage::spec::types::MAX_LENGTH => {
                    let n = n as usize;
                    let s = column.as_string::<i32>();
                    let too_long = |v: &str| v.len() > n && v.chars().count() > n;
                    if s.iter().flatten().any(too_long) {
                        // PostgreSQL cuts excess trailing blanks and refuses anything else.
                        let mut cut = Vec::with_capacity(s.len());
                        for v in s.iter() {
                            cut.push(match v {
                                Some(v) if too_long(v) => {
                                    if v.chars().skip(n).any(|c| c != ' ') {
                                        return Err(StorageError::ValueTooLong {
                                            type_name: format!("character varying({n})"),
                                        });
                                    }
                                    Some(v.chars().take(n).collect::<String>())
                                }
                                other => other.map(str::to_owned),
                            });
                        }
                        columns[i] = Arc::new(StringArray::from(cut));
                    }
                }
                TypeKind::Timestamp(p) | TypeKind::TimestampLtz(p) if !matches!(p, 3 | 6 | 9) => {
                    // TIMESTAMP(p) keeps p fraction digits: round the finer unit as PostgreSQL
                    // does (half away from zero).
                    columns[i] = round_timestamps(column, p)?;
                }
                TypeKind::Char(n) => {
                    let n = n as usize;
                    let s = column.as_string::<i32>();
                    let mut padded = Vec::with_capacity(s.len());
                    for v in s.iter() {
                        padded.push(match v {
                            None => None,
                            Some(v) => {
                                let len = v.chars().count();
                                if len > n {
                                    // PostgreSQL drops excess trailing blanks, refuses the rest.
                                    let cut: String = v.chars().take(n).collect();
                                    if v.chars().skip(n).any(|c| c != ' ') {
                                        return Err(StorageError::ValueTooLong {
                                            type_name: format!("character({n})"),
                                        });
                                    }
                                    Some(cut)
                                } else {
                                    Some(format!("{v:<n$}"))
                                }
                            }
                        });
                    }
                    columns[i] = Arc::new(StringArray::from(padded));
                }
                _ => {}
            }
        }
        Ok(RecordBatch::try_new(batch.schema(), columns)?)
    }
}

impl TableWrite {
    /// The live files of the snapshot the current statement reads: the transaction's base, or
    /// under READ COMMITTED a newer snapshot for each later statement. A key another
    /// transaction added or deleted in between is what the statement saw (its INSERT fails
    /// with 23505, its upsert sees the key), not what the transaction's first statement saw.
    async fn statement_view(&self) -> Result<Arc<LiveFiles>, StorageError> {
        if self.read_at <= self.existing.snapshot_id() {
            return Ok(Arc::clone(&self.existing));
        }
        match self.table.snapshots().get(self.read_at).await? {
            Some(s) => self.table.live_files(&s).await,
            None => Ok(Arc::clone(&self.existing)),
        }
    }

    /// Fails with 23505 if a key the current statement adds as new (`+I`, see
    /// [`WriteMode`]) is live in what the transaction saw before the statement (its snapshot
    /// and earlier statements), or is added twice. Only files whose key ranges overlap the new
    /// keys are read, and only their key columns.
    async fn check_new_keys(&self, new_runs: &[MemRun]) -> Result<(), StorageError> {
        let seen = self.statement_view().await?;
        let key_types = self.table.key_types();
        let table_schema = Arc::clone(self.table.schema());
        let layout = self.table.read_layout(&[]);
        let schema = layout.schema()?;
        let key_count = layout.key_count();
        let encoder = KeyEncoder::new(&self.table)?;
        // (partition values, total buckets) of every bucket with keys to check.
        let mut buckets: BTreeMap<BucketId, (Vec<Datum>, i32)> = BTreeMap::new();
        for r in new_runs.iter().filter(|r| !r.probes.is_empty()) {
            buckets.insert(
                (r.partition_bytes.clone(), r.bucket),
                (r.partition.clone(), table_schema.bucket()),
            );
        }
        if self.mode == WriteMode::Insert {
            for f in &self.stmt_files {
                buckets.insert(
                    (f.partition.clone(), f.bucket),
                    (f.partition_values.clone(), f.total_buckets),
                );
            }
        }
        // Keys already in a bucket's sorted structure are decided there in O(log n) each: the
        // transaction's newest version is live (23505) or a delete (the key is free); only
        // the other keys are looked for in files. (A statement that spilled some of its rows
        // to files takes the general path below, with the structure as one run.)
        let mut decided: HashMap<BucketId, (Vec<u32>, Option<Vec<Datum>>)> = HashMap::new();
        for r in new_runs.iter().filter(|r| !r.probes.is_empty()) {
            let at = (r.partition_bytes.clone(), r.bucket);
            let spilled_here = self
                .stmt_files
                .iter()
                .any(|f| f.partition == at.0 && f.bucket == at.1);
            let Some(table) = self.tables.as_ref().and_then(|t| t.get(&at)) else {
                continue;
            };
            if spilled_here {
                continue;
            }
            let rows = encoder.encode(&r.keys)?;
            let mut rest = Vec::new();
            let mut live = None;
            for &p in &r.probes {
                match table.get(rows.row(p as usize).as_ref()) {
                    None => rest.push(p),
                    Some(v) if kind::is_add(v.kind) => {
                        live = Some(
                            r.keys
                                .iter()
                                .zip(&key_types)
                                .map(|(c, t)| Datum::from_array(c, p as usize, t))
                                .collect::<Result<Vec<_>, _>>()?,
                        );
                        break;
                    }
                    Some(_) => {}
                }
            }
            decided.insert(at, (rest, live));
        }
        let probes_of = |r: &MemRun| -> Vec<u32> {
            match decided.get(&(r.partition_bytes.clone(), r.bucket)) {
                Some((rest, _)) => rest.clone(),
                None => r.probes.clone(),
            }
        };
        for ((partition, bucket), (partition_values, total_buckets)) in buckets {
            let split = Split {
                partition: partition_values.clone(),
                partition_bytes: partition.clone(),
                bucket,
                total_buckets,
                files: Vec::new(),
                deletions: seen.deletions(&(partition.clone(), bucket)),
            };
            let in_bucket = |p: &[u8], b: i32| p == partition.as_slice() && b == bucket;
            // New keys and their range.
            let mut new: Vec<RunStream> = Vec::new();
            let mut range: Option<(Vec<Datum>, Vec<Datum>)> = None;
            let mut widen = |min: Vec<Datum>, max: Vec<Datum>| {
                range = Some(match range.take() {
                    None => (min, max),
                    Some((a, b)) => (
                        if compare_keys(&min, &a).is_lt() {
                            min
                        } else {
                            a
                        },
                        if compare_keys(&max, &b).is_gt() {
                            max
                        } else {
                            b
                        },
                    ),
                });
            };
            for r in new_runs
                .iter()
                .filter(|r| in_bucket(&r.partition_bytes, r.bucket) && !r.probes.is_empty())
            {
                let probes = probes_of(r);
                if probes.is_empty() {
                    continue;
                }
                let at = |row: u32| -> Result<Vec<Datum>, StorageError> {
                    r.keys
                        .iter()
                        .zip(&key_types)
                        .map(|(c, t)| Datum::from_array(c, row as usize, t))
                        .collect()
                };
                widen(at(probes[0])?, at(*probes.last().expect("probe"))?);
                new.push(r.stream(
                    &table_schema,
                    &layout,
                    MEM_SEQUENCE_BASE + i64::from(r.stmt),
                    Some(&probes),
                )?);
            }
            let mut new_files_here = 0;
            if self.mode == WriteMode::Insert {
                for f in self
                    .stmt_files
                    .iter()
                    .filter(|f| in_bucket(&f.partition, f.bucket))
                {
                    new_files_here += 1;
                    widen(
                        binary_row::deserialize(&f.meta.min_key, &key_types)?,
                        binary_row::deserialize(&f.meta.max_key, &key_types)?,
                    );
                    new.push(self.table.open_data_file(&split, &f.meta, &layout).await?);
                }
            }
            let Some((min, max)) = range else { continue };
            // What the transaction saw before this statement, oldest first.
            let mut old: Vec<RunStream> = Vec::new();
            let mut files: Vec<&DataFileMeta> = seen
                .bucket(&(partition.clone(), bucket))
                .iter()
                .map(AsRef::as_ref)
                .collect();
            files.extend(
                self.files
                    .iter()
                    .filter(|f| in_bucket(&f.file.partition, f.file.bucket))
                    .map(|f| &f.file.meta),
            );
            // The new keys, encoded, when they are all in memory: a file holding none of them
            // cannot change the outcome, and its cached key set says so without a read.
            let probes = match new_files_here {
                0 => Some(self.probe_keys(new_runs, &partition, bucket, &encoder, &probes_of)?),
                _ => None,
            };
            for f in files {
                let lo = binary_row::deserialize(&f.min_key, &key_types)?;
                let hi = binary_row::deserialize(&f.max_key, &key_types)?;
                if compare_keys(&hi, &min).is_lt() || compare_keys(&lo, &max).is_gt() {
                    continue;
                }
                if let Some(probes) = &probes
                    && self.table.key_set_cacheable(f)
                {
                    let keys = self.table.key_set(&split, f, &encoder).await?;
                    if !probes.iter().any(|k| keys.contains(k)) {
                        continue;
                    }
                }
                old.push(self.table.open_data_file(&split, f, &layout).await?);
            }
            // Committed transactions not flushed yet, newer than every file: only those that
            // wrote one of the new keys, when the keys are known (each transaction keeps its
            // keys per bucket), so a check costs hash probes, not a merge of every unflushed
            // commit (a second of them under a busy insert load).
            if let Some(cut) = &self.stmt_cut {
                let at = (partition.clone(), bucket);
                for t in cut.txns.iter() {
                    // (Most transactions wrote one bucket: compared before any hashing.)
                    if !t
                        .runs
                        .iter()
                        .any(|r| in_bucket(&r.partition_bytes, r.bucket))
                    {
                        continue;
                    }
                    if let Some(probes) = &probes
                        && !t
                            .keys
                            .get(&at)
                            .is_some_and(|keys| probes.iter().any(|k| keys.contains(k)))
                    {
                        continue;
                    }
                    for r in t
                        .runs
                        .iter()
                        .filter(|r| in_bucket(&r.partition_bytes, r.bucket))
                    {
                        old.push(r.stream(&table_schema, &layout, t.sequence(), None)?);
                    }
                }
            }
            for r in self
                .runs
                .iter()
                .filter(|r| in_bucket(&r.partition_bytes, r.bucket))
            {
                old.push(r.stream(
                    &table_schema,
                    &layout,
                    MEM_SEQUENCE_BASE + i64::from(r.stmt),
                    None,
                )?);
            }
            if !decided.contains_key(&(partition.clone(), bucket))
                && let Some(table) = self
                    .tables
                    .as_ref()
                    .and_then(|t| t.get(&(partition.clone(), bucket)))
            {
                let r = table.run()?;
                old.push(r.stream(
                    &table_schema,
                    &layout,
                    MEM_SEQUENCE_BASE + i64::from(r.stmt),
                    None,
                )?);
            }
            if old.is_empty() && new.len() == 1 {
                continue; // keys within one run are unique
            }
            let old_count = old.len();
            old.extend(new);
            let mut groups = KeyGroups::new(Arc::clone(&schema), key_count, old)?;
            let mut seen = 0usize;
            while let Some((_, versions)) = groups.next_group().await? {
                let is_new = |run: usize| run >= old_count;
                let new_count = versions.iter().filter(|v| is_new(v.run)).count();
                if new_count == 0 {
                    continue;
                }
                let live_before = versions
                    .iter()
                    .filter(|v| !is_new(v.run))
                    .max_by_key(|v| (v.sequence, v.run))
                    .is_some_and(|v| kind::is_add(v.kind));
                if new_count >= 2 || live_before {
                    let v = versions[0];
                    let batch = &groups.retained()[v.at.0];
                    let key: Vec<Datum> = (0..key_count)
                        .map(|i| Datum::from_array(batch.column(i), v.at.1, &key_types[i]))
                        .collect::<Result<_, _>>()?;
                    return Err(duplicate_key_error(&self.table, &key, &partition_values));
                }
                seen += 1;
                if seen.is_multiple_of(4096) {
                    groups.compact();
                }
            }
        }
        // Keys the sorted structures found live (the files held no smaller duplicate).
        for ((partition, _), (_, live)) in &decided {
            if let Some(key) = live {
                let values = self
                    .tables
                    .as_ref()
                    .and_then(|t| t.values().find(|t| &t.partition_bytes == partition))
                    .map(|t| t.partition.clone())
                    .unwrap_or_default();
                return Err(duplicate_key_error(&self.table, key, &values));
            }
        }
        Ok(())
    }

    /// The encoded keys the current statement's in-memory runs of a bucket add as new.
    fn probe_keys(
        &self,
        new_runs: &[MemRun],
        partition: &[u8],
        bucket: i32,
        encoder: &KeyEncoder,
        probes_of: &dyn Fn(&MemRun) -> Vec<u32>,
    ) -> Result<Vec<Vec<u8>>, StorageError> {
        let mut out = Vec::new();
        for r in new_runs
            .iter()
            .filter(|r| r.partition_bytes == partition && r.bucket == bucket)
        {
            let rows = encoder.encode(&r.keys)?;
            out.extend(
                probes_of(r)
                    .iter()
                    .map(|&p| rows.row(p as usize).as_ref().to_vec()),
            );
        }
        Ok(out)
    }

    /// Buckets this transaction wrote to.
    pub(crate) fn touched(&self) -> HashSet<BucketId> {
        self.written_buckets()
            .into_iter()
            .map(|(_, p, b)| (p, b))
            .collect()
    }

    /// Lowest sequence number of the files written so far, per bucket.
    pub(crate) fn written_min_sequences(&self) -> HashMap<BucketId, i64> {
        let mut out: HashMap<BucketId, i64> = HashMap::new();
        for f in &self.files {
            let e = out
                .entry((f.file.partition.clone(), f.file.bucket))
                .or_insert(i64::MAX);
            *e = (*e).min(f.file.meta.min_sequence_number);
        }
        out
    }

    /// First committer wins: fails if a key this transaction changed (other than by blind
    /// upsert) was written by a commit since its snapshot (`since`: files those commits added
    /// per bucket) — 23505 for a key it inserted, 40001 otherwise.
    pub(crate) async fn check_since(
        &self,
        since: &HashMap<BucketId, Vec<(i64, DataFileMeta)>>,
    ) -> Result<(), StorageError> {
        self.check_since_of(since, None).await
    }

    /// [`check_since`](Self::check_since) of one statement's writes (its number and its
    /// in-memory runs; `None`: all of the transaction's writes).
    async fn check_since_of(
        &self,
        since: &HashMap<BucketId, Vec<(i64, DataFileMeta)>>,
        stmt: Option<(u32, &[MemRun])>,
    ) -> Result<(), StorageError> {
        let of_stmt = |s: u32| stmt.is_none_or(|(only, _)| only == s);
        let all_runs: &[MemRun] = match stmt {
            Some((_, runs)) => runs,
            None => &self.runs,
        };
        if !self.table.schema().has_primary_key() {
            return Ok(());
        }
        let layout = self.table.read_layout(&[]);
        let schema = layout.schema()?;
        let key_count = layout.key_count();
        let key_types = self.table.key_types();
        let encoder = KeyEncoder::new(&self.table)?;
        for ((partition, bucket), since_files) in since {
            let in_bucket = |p: &[u8], b: i32| p == partition.as_slice() && b == *bucket;
            let runs: Vec<&MemRun> = all_runs
                .iter()
                .filter(|r| in_bucket(&r.partition_bytes, r.bucket) && r.mode != WriteMode::Upsert)
                .collect();
            let files: Vec<&Spilled> = self
                .files
                .iter()
                .filter(|f| {
                    in_bucket(&f.file.partition, f.file.bucket)
                        && f.mode != WriteMode::Upsert
                        && of_stmt(f.stmt)
                })
                .collect();
            let Some(partition_values) = runs
                .first()
                .map(|r| r.partition.clone())
                .or_else(|| files.first().map(|f| f.file.partition_values.clone()))
            else {
                continue;
            };
            let split = Split {
                partition: partition_values.clone(),
                partition_bytes: partition.clone(),
                bucket: *bucket,
                total_buckets: self.table.schema().bucket(),
                files: Vec::new(),
                deletions: None,
            };
            // Keys of each commit since, by snapshot id.
            let mut theirs: Vec<(i64, Arc<HashSet<Vec<u8>>>)> = Vec::new();
            for (id, f) in since_files {
                theirs.push((*id, self.table.key_set(&split, f, &encoder).await?));
            }
            let mut ours: Vec<(WriteMode, i64, RecordBatch)> = Vec::new();
            for r in runs {
                ours.push((
                    r.mode,
                    r.read_at,
                    concat_batches(
                        &schema,
                        &futures::TryStreamExt::try_collect::<Vec<_>>(r.stream(
                            self.table.schema(),
                            &layout,
                            0,
                            None,
                        )?)
                        .await?,
                    )?,
                ));
            }
            for f in files {
                let stream = self
                    .table
                    .open_data_file(&split, &f.file.meta, &layout)
                    .await?;
                let batches: Vec<RecordBatch> = futures::TryStreamExt::try_collect(stream).await?;
                ours.push((f.mode, f.read_at, concat_batches(&schema, &batches)?));
            }
            for (mode, read_at, batch) in ours {
                let rows = encoder.encode(batch.columns())?;
                let Some(i) = rows.iter().position(|r| {
                    theirs
                        .iter()
                        .any(|(id, keys)| *id > read_at && keys.contains(r.as_ref()))
                }) else {
                    continue;
                };
                let key: Vec<Datum> = (0..key_count)
                    .map(|k| Datum::from_array(batch.column(k), i, &key_types[k]))
                    .collect::<Result<_, _>>()?;
                return Err(if mode == WriteMode::Insert {
                    duplicate_key_error(&self.table, &key, &partition_values)
                } else {
                    self.row_changed(&key)
                });
            }
        }
        Ok(())
    }

    /// The first-committer-wins check of the statement just finished, against the commits
    /// since its snapshot (nothing to read when none came).
    async fn check_statement_since(&self, runs: &[MemRun]) -> Result<(), StorageError> {
        self.check_statement_logged(runs)?;
        let latest = self.table.current_snapshot().await?.map_or(0, |s| s.id);
        if latest <= self.read_at {
            return Ok(());
        }
        let unflushed = self.table.state::<UnflushedState>();
        let mut touched: HashSet<BucketId> = runs
            .iter()
            .map(|r| (r.partition_bytes.clone(), r.bucket))
            .collect();
        touched.extend(
            self.files
                .iter()
                .filter(|f| f.stmt == self.stmt)
                .map(|f| (f.file.partition.clone(), f.file.bucket)),
        );
        if touched.is_empty() {
            return Ok(());
        }
        let mut since: HashMap<BucketId, Vec<(i64, DataFileMeta)>> = HashMap::new();
        for added in
            crate::storage::meta::added_files::added_since(&self.table, self.read_at, latest)
                .await?
        {
            // This server's flushes hold logged transactions, checked by position above.
            if touched.contains(&added.bucket) && !unflushed.is_flush(added.snapshot) {
                since
                    .entry(added.bucket)
                    .or_default()
                    .push((added.snapshot, added.file));
            }
        }
        if since.is_empty() {
            return Ok(());
        }
        self.check_since_of(&since, Some((self.stmt, runs))).await
    }

    /// The statement's part of first committer wins against this server's transactions
    /// logged after the statement read (commit log): a key one of them wrote fails an INSERT
    /// with 23505 and any other change with 40001 (READ COMMITTED runs the statement again).
    fn check_statement_logged(&self, runs: &[MemRun]) -> Result<(), StorageError> {
        let logged = self
            .table
            .state::<UnflushedState>()
            .logged_after(self.stmt_lsn);
        if logged.is_empty() || runs.is_empty() {
            return Ok(());
        }
        let encoder = KeyEncoder::new(&self.table)?;
        let key_types = self.table.key_types();
        for r in runs.iter().filter(|r| r.mode != WriteMode::Upsert) {
            let at = (r.partition_bytes.clone(), r.bucket);
            let theirs: Vec<_> = logged.iter().filter_map(|t| t.keys.get(&at)).collect();
            if theirs.is_empty() {
                continue;
            }
            let rows = encoder.encode(&r.keys)?;
            let Some(i) = rows
                .iter()
                .position(|k| theirs.iter().any(|t| t.contains(k.as_ref())))
            else {
                continue;
            };
            let key: Vec<Datum> = r
                .keys
                .iter()
                .zip(&key_types)
                .map(|(c, t)| Datum::from_array(c, i, t))
                .collect::<Result<_, _>>()?;
            return Err(if r.mode == WriteMode::Insert {
                duplicate_key_error(&self.table, &key, &r.partition)
            } else {
                self.row_changed(&key)
            });
        }
        Ok(())
    }

    /// 40001: another transaction changed the row with `key` after this one read it.
    fn row_changed(&self, key: &[Datum]) -> StorageError {
        StorageError::CommitConflict(format!(
            "another transaction changed the row with key ({}) of {} after this one's snapshot",
            key.iter()
                .zip(&self.table.key_types())
                .map(|(d, t)| PartitionText(d, t).to_string())
                .collect::<Vec<_>>()
                .join(", "),
            self.table.qualified_name()
        ))
    }

    /// Writes the in-memory runs as level-0 files (one per bucket) with sequence numbers
    /// above everything committed there (`since` included). Called under the commit lock.
    pub(crate) async fn write_runs(
        &mut self,
        since: &HashMap<BucketId, Vec<(i64, DataFileMeta)>>,
    ) -> Result<(), StorageError> {
        let mut by_bucket: BTreeMap<BucketId, Vec<MemRun>> = BTreeMap::new();
        for r in std::mem::take(&mut self.runs) {
            by_bucket
                .entry((r.partition_bytes.clone(), r.bucket))
                .or_default()
                .push(r);
        }
        self.run_bytes = 0;
        let schema = Arc::clone(self.table.schema());
        let mut tasks = Vec::new();
        for ((partition, bucket), runs) in by_bucket {
            let refs: Vec<&MemRun> = runs.iter().collect();
            let layers = fold_runs(&schema, &refs)?;
            let floor = self.floor(&partition, bucket, Some(since));
            tasks.push(tokio::spawn(write_layers(
                self.table.clone(),
                runs[0].partition.clone(),
                partition,
                bucket,
                layers,
                floor,
            )));
        }
        let stmt = self.stmt;
        let mut failed = None;
        for task in tasks {
            match task.await {
                Ok(Ok(files)) => self.files.extend(files.into_iter().map(|file| Spilled {
                    stmt,
                    mode: WriteMode::Upsert,
                    read_at: i64::MAX,
                    file,
                })),
                Ok(Err(e)) => failed = Some(e),
                Err(e) => failed = Some(StorageError::task_failed("a writer task", e)),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The key hashes written to each dynamic bucket (empty unless `bucket = -1`).
    pub(crate) fn dynamic_hashes(&self) -> WrittenHashes {
        self.dynamic
            .as_ref()
            .map(DynamicBuckets::written)
            .unwrap_or_default()
    }

    /// The files to commit.
    pub(crate) fn new_files(&self) -> Vec<NewFile> {
        self.files.iter().map(|f| f.file.clone()).collect()
    }

    /// Ends the open statement; whether the transaction has anything to commit (one that
    /// wrote nothing is done here). `commit::commit_write` commits it.
    pub(crate) async fn finish_statements(&mut self) -> Result<bool, StorageError> {
        if self.has_open_statement() || self.in_flight.is_some() {
            self.end_statement().await?;
        }
        // The sorted structures as runs, one per check, for the commit's checks and fold.
        if let Some(tables) = &mut self.tables {
            for (_, table) in std::mem::take(tables) {
                for run in table.runs_by_check()? {
                    self.run_bytes += run.bytes;
                    self.runs.push(run);
                }
            }
        }
        if self.runs.is_empty() && self.files.is_empty() {
            self.committed = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// Whether finished statements are kept in one sorted structure per bucket (so the
    /// commit's runs hold each key once).
    pub(crate) fn sorted(&self) -> bool {
        self.encoder.is_some()
    }

    /// Whether runs were spilled to files (such a transaction commits alone, not in a group:
    /// its files' sequence numbers are fixed already).
    pub(crate) fn spilled(&self) -> bool {
        !self.files.is_empty()
    }

    /// The in-memory runs (a group commit writes them).
    pub(crate) fn mem_runs(&self) -> &[MemRun] {
        &self.runs
    }

    /// Changelog files its commit wrote (cleaned up with the data files if it fails).
    pub(crate) fn add_changelog(&mut self, files: Vec<NewFile>) {
        self.changelog.extend(files);
    }

    pub(crate) fn changelog_files(&self) -> &[NewFile] {
        &self.changelog
    }

    /// Marks the write committed by a group commit (nothing left to clean up).
    pub(crate) fn set_committed(&mut self) {
        self.committed = true;
    }

    /// Deletes the files this write produced (it will not be committed).
    pub async fn abort(mut self) {
        self.rollback_statement().await;
        self.committed = true;
        let mut files: Vec<NewFile> = std::mem::take(&mut self.files)
            .into_iter()
            .map(|s| s.file)
            .collect();
        files.append(&mut self.changelog);
        delete_files(&self.table, files).await;
    }
}

impl Drop for TableWrite {
    fn drop(&mut self) {
        let in_flight = self.in_flight.take();
        let mut files: Vec<NewFile> = std::mem::take(&mut self.stmt_files);
        files.extend(std::mem::take(&mut self.files).into_iter().map(|s| s.file));
        files.append(&mut self.changelog);
        if self.committed || (files.is_empty() && in_flight.is_none()) {
            return;
        }
        let table = self.table.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Some(task) = in_flight
                    && let Ok(Ok(file)) = task.await
                {
                    files.push(file);
                }
                delete_files(&table, files).await
            });
        }
    }
}

pub(crate) async fn delete_files(table: &Table, files: Vec<NewFile>) {
    for f in files {
        let dir = table.bucket_path(&f.partition_values, f.bucket);
        // The data file and its extra files (a file index too big for the manifest).
        for name in std::iter::once(&f.meta.file_name).chain(&f.meta.extra_files) {
            let path = dir.clone().join(name.as_str());
            if let Err(e) = table.io().delete(&path).await {
                tracing::warn!(error = %e, %path, "could not delete an uncommitted data file");
            }
        }
    }
}

/// Folds one statement's buffer of a bucket into a run (23505 for a key added twice).
fn fold_buffer(
    table: &Table,
    buffer: Buffer,
    mode: WriteMode,
    stmt: u32,
    read_at: i64,
) -> Result<MemRun, StorageError> {
    let schema = table.schema();
    let arrow_schema = buffer.batches[0].schema();
    let batch = concat_batches(&arrow_schema, &buffer.batches)?;
    let kinds: Vec<&dyn Array> = buffer.kinds.iter().map(|k| k as &dyn Array).collect();
    let kinds = arrow::compute::concat(&kinds)?
        .as_primitive::<Int8Type>()
        .clone();
    let folded = match fold_statement(schema, batch, kinds, mode)? {
        Ok(f) => f,
        Err(DuplicateAt { key }) => {
            return Err(duplicate_key_error(table, &key, &buffer.partition));
        }
    };
    let bytes = folded.rows.get_array_memory_size();
    Ok(MemRun {
        stmt,
        mode,
        read_at,
        read_lsn: 0,
        partition: buffer.partition,
        partition_bytes: buffer.partition_bytes,
        bucket: buffer.bucket,
        keys: folded.keys,
        kinds: folded.kinds,
        rows: folded.rows,
        probes: folded.probes,
        bytes,
    })
}

/// Writes the runs [`fold_runs`] made of one bucket as level-0 files, one after another so that
/// each run's sequence numbers are above the previous one's. On error, the files already
/// written are deleted.
pub(crate) async fn write_layers(
    table: Table,
    partition_values: Vec<Datum>,
    partition_bytes: Vec<u8>,
    bucket: i32,
    layers: Vec<Folded>,
    floor: i64,
) -> Result<Vec<NewFile>, StorageError> {
    let mut files = Vec::with_capacity(layers.len());
    for folded in layers {
        let written = write_folded(
            table.clone(),
            partition_values.clone(),
            partition_bytes.clone(),
            bucket,
            folded,
            floor,
        )
        .await;
        match written {
            Ok(file) => files.push(file),
            Err(e) => {
                delete_files(&table, files).await;
                return Err(e);
            }
        }
    }
    Ok(files)
}

/// Awaits `tasks` (each writing some buckets' files, as [`write_layers`] does), adding what
/// they wrote to `files` — also when one failed, so the caller can delete every file; the
/// error is the last failure.
pub(crate) async fn collect_written(
    tasks: Vec<tokio::task::JoinHandle<Result<Vec<NewFile>, StorageError>>>,
    files: &mut Vec<NewFile>,
    what: &str,
) -> Result<(), StorageError> {
    let mut failed = None;
    for t in tasks {
        match t.await {
            Ok(Ok(f)) => files.extend(f),
            Ok(Err(e)) => failed = Some(e),
            Err(e) => failed = Some(StorageError::task_failed(what, e)),
        }
    }
    failed.map_or(Ok(()), Err)
}

/// Numbers, encodes and writes one folded run as a level-0 data file.
pub(crate) async fn write_folded(
    table: Table,
    partition_values: Vec<Datum>,
    partition_bytes: Vec<u8>,
    bucket: i32,
    folded: Folded,
    floor: i64,
) -> Result<NewFile, StorageError> {
    let name = data_file::new_file_name("data");
    write_folded_as(
        table,
        partition_values,
        partition_bytes,
        bucket,
        folded,
        floor,
        name,
        true,
    )
    .await
}

/// [`write_folded`] under file name `name` (changelog files share the data files' layout);
/// `indexed`: with the table's file index (Java writes none for changelog files).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn write_folded_as(
    table: Table,
    partition_values: Vec<Datum>,
    partition_bytes: Vec<u8>,
    bucket: i32,
    folded: Folded,
    floor: i64,
    name: String,
    indexed: bool,
) -> Result<NewFile, StorageError> {
    let schema = Arc::clone(table.schema());
    let sequences = table.state::<crate::storage::write::sequences::Sequences>();
    let bytes_for_task = partition_bytes.clone();
    // Encoding is CPU work: off the async runtime.
    let run = tokio::task::spawn_blocking(move || {
        run_file::encode_folded(&schema, &folded, |n| {
            sequences.reserve(&bytes_for_task, bucket, floor, n)
        })
    })
    .await
    .map_err(|e| StorageError::task_failed("a writer task", e))??;
    let run = if indexed { run } else { run.without_index() };
    run_file::store(
        &table,
        partition_values,
        partition_bytes,
        bucket,
        name,
        run,
        0,
        FileSource::Append,
    )
    .await
}

/// The 23505 error for `key` (trimmed primary key values) in `partition`.
pub(crate) fn duplicate_key_error(
    table: &Table,
    key: &[Datum],
    partition: &[Datum],
) -> StorageError {
    StorageError::DuplicateKey {
        constraint: format!("{}_pkey", table.name()),
        detail: format_key(table.schema(), key, partition),
    }
}

fn format_key(
    schema: &crate::storage::spec::schema::TableSchema,
    key: &[Datum],
    partition: &[Datum],
) -> String {
    let trimmed = schema.trimmed_primary_keys();
    let values: Vec<String> = schema
        .primary_keys
        .iter()
        .map(|k| {
            let ty = schema.type_of(k);
            let v = match trimmed.iter().position(|t| t == k) {
                Some(i) => key.get(i),
                None => schema
                    .partition_keys
                    .iter()
                    .position(|p| p == k)
                    .and_then(|i| partition.get(i)),
            };
            match v {
                Some(Datum::Null) | None => "null".to_owned(),
                Some(d) => PartitionText(d, ty).to_string(),
            }
        })
        .collect();
    format!(
        "Key ({})=({}) already exists.",
        schema.primary_keys.join(", "),
        values.join(", ")
    )
}

/// Rounds timestamps to `precision` fraction digits (the column's Arrow unit is finer).
fn round_timestamps(column: &ArrayRef, precision: u8) -> Result<ArrayRef, StorageError> {
    use arrow::datatypes::{DataType as A, TimeUnit as U};
    let unit_digits = match column.data_type() {
        A::Timestamp(U::Second, _) => 0,
        A::Timestamp(U::Millisecond, _) => 3,
        A::Timestamp(U::Microsecond, _) => 6,
        A::Timestamp(U::Nanosecond, _) => 9,
        _ => return Ok(Arc::clone(column)),
    };
    if precision >= unit_digits {
        return Ok(Arc::clone(column));
    }
    let step = 10i64.pow((unit_digits - precision) as u32);
    let round = |v: i64| {
        let r = v.rem_euclid(step);
        let down = v - r;
        if r * 2 >= step { down + step } else { down }
    };
    let raw = arrow::compute::cast(column, &A::Int64)?;
    let rounded: arrow::array::Int64Array = raw
        .as_primitive::<arrow::datatypes::Int64Type>()
        .unary(round);
    Ok(arrow::compute::cast(&rounded, column.data_type())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_timestamps_to_their_precision() {
        use arrow::array::TimestampMillisecondArray;
        let a: ArrayRef = Arc::new(
            TimestampMillisecondArray::from(vec![Some(1_500), Some(1_499), Some(-500), None])
                .with_timezone("UTC"),
        );
        let r = round_timestamps(&a, 0).unwrap();
        let r = r.as_primitive::<arrow::datatypes::TimestampMillisecondType>();
        assert_eq!(r.values()[..3], [2_000, 1_000, 0]);
        assert!(r.is_null(3));
        assert_eq!(r.timezone(), Some("UTC"));
    }
}
