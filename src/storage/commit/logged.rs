//! Commits acknowledged from the commit log, and the flush that turns them into snapshots.
//!
//! With the log on ([`LogService`], opened by the warehouse), a transaction whose rows are all
//! in one sorted in-memory structure per bucket (`write/table_write.rs`: primary-key tables
//! whose newest version wins) commits by [`commit_logged`]: under the table's commit lock it
//! is checked — against other engines' snapshots since it read (as before), and by log
//! position against this server's transactions logged after it first read, flushed or not
//! (23505 / 40001 as before) — then its record is queued in the log (log order = lock order)
//! and the lock is released; it is acknowledged, and visible to every session, once its
//! group's fdatasync returns (`lsm/unflushed.rs` holds the rows until the flush).
//!
//! [`flush_table`] writes a table's visible unflushed transactions as level-0 files, in log
//! order, into one APPEND snapshot whose `commitUser` is the log's persistent user and whose
//! `commitIdentifier` is the last LSN it holds; sequence numbers are assigned then, above
//! every file in the table at flush time (tarn's flushed writes order after commits already
//! in the table). The flushed LSN goes to `log-state.json`, then the log is truncated behind
//! every table's flush. On start, [`LogService::open`] replays the records a table still
//! needs — those above both its flushed LSN in the state file and the identifier of its
//! latest snapshot by the log's user (a crash between the snapshot and the state file: the
//! state catches up then) — and flushes them before the server answers.
//!
//! Transactions that spilled to files, a table's first commit, tables of other kinds, and
//! tables with `'tarn.commit-log' = 'false'` commit directly as before (first flushing the
//! table, so the snapshot orders after the log's).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::array::{ArrayRef, Int8Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use bytes::Bytes;

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::commit::group::RoundKeys;
use crate::storage::commit::log::crash_points::crash_point;
use crate::storage::commit::log::{
    BucketChanges, CommitLog, LogOptions, LogState, TableChanges, TransactionRecord,
};
use crate::storage::commit::snapshot_writer::added_entries;
use crate::storage::commit::state::CommitState;
use crate::storage::commit::transaction::{
    SinceFiles, append_content, check_base, committed_since, count_committed,
};
use crate::storage::lsm::data_file::{KIND_COLUMN, SEQUENCE_COLUMN};
use crate::storage::lsm::live_files::BucketId;
use crate::storage::lsm::memrun::{MemRun, WriteMode, fold_runs};
use crate::storage::lsm::run_file::NewFile;
use crate::storage::lsm::unflushed::{LoggedTxn, Lsn, UnflushedState};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::write::table_write::{TableWrite, collect_written, delete_files, write_layers};

/// When the flusher flushes a table: this long after its oldest unflushed commit, or as soon
/// as its unflushed rows hold this many bytes.
#[derive(Debug, Clone, Copy)]
pub struct FlushPolicy {
    pub interval: Duration,
    pub bytes: usize,
}

impl Default for FlushPolicy {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            bytes: 64 << 20,
        }
    }
}

/// The server's commit log and what it knows of the tables that log to it.
pub struct LogService {
    log: CommitLog,
    dir: PathBuf,
    commit_user: String,
    /// `log-state.json`: the flushed LSN per table.
    state: Mutex<LogState>,
    fsyncs: AtomicU64,
    /// The next LSN an append gets (appends are queued under this lock, so the log's order
    /// is this counter's).
    next: Mutex<Lsn>,
    /// Tables with transactions in the log, by their key (`db.db/table`).
    tables: Mutex<BTreeMap<String, Table>>,
    /// Records of transaction blocks with DDL whose outcome is not settled yet, by block id
    /// (`storage/block_ddl.rs`): the log is not truncated past them, so a start after a
    /// crash still finds them.
    held: Mutex<BTreeMap<String, Lsn>>,
    /// What the records found at open say (blocks, schema ids), and the blocks whose record
    /// this server made durable since: asked when a block's DDL is settled.
    found: Mutex<FoundAtOpen>,
    pub policy: FlushPolicy,
}

/// What the records the log held at open name.
#[derive(Debug, Default)]
struct FoundAtOpen {
    /// Blocks whose transaction is in a record.
    blocks: HashSet<String>,
    /// Per table key, the highest schema id a record's rows follow.
    schemas: HashMap<String, i64>,
}

impl std::fmt::Debug for LogService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogService")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The key of `table` in the log and its state file.
pub fn table_key(database: &str, name: &str) -> String {
    format!("{database}.db/{name}")
}

impl LogService {
    /// Opens the log in `dir` and returns it with the records it holds, in order.
    pub async fn open(
        dir: PathBuf,
        policy: FlushPolicy,
    ) -> Result<(Arc<LogService>, Vec<(Lsn, Bytes)>), StorageError> {
        let (log, replay) = CommitLog::open(dir.clone(), LogOptions::default()).await?;
        if let Some(torn) = &replay.torn {
            tracing::warn!(
                offset = torn.offset,
                bytes = torn.bytes_cut,
                "the commit log ended in a torn record (never acknowledged); cut it"
            );
        }
        let mut found = FoundAtOpen::default();
        let mut held = BTreeMap::new();
        for (lsn, payload) in &replay.records {
            let (block, tables) = crate::storage::commit::log::record_summary(payload)?;
            if let Some(block) = block {
                found.blocks.insert(block.clone());
                held.insert(block, *lsn);
            }
            for (table, schema) in tables {
                let max = found.schemas.entry(table).or_insert(schema);
                *max = (*max).max(schema);
            }
        }
        let service = Arc::new(LogService {
            log,
            commit_user: replay.state.commit_user.clone(),
            state: Mutex::new(replay.state.clone()),
            fsyncs: AtomicU64::new(0),
            next: Mutex::new(replay.next_lsn),
            tables: Mutex::new(BTreeMap::new()),
            held: Mutex::new(held),
            found: Mutex::new(found),
            dir,
            policy,
        });
        Ok((service, replay.records))
    }

    /// Whether a durable record is block `block`'s transaction (its writes committed): held
    /// by the log when it opened, or appended by this server since.
    pub fn found_block(&self, block: &str) -> bool {
        self.found.lock().expect("log found").blocks.contains(block)
    }

    /// The highest schema id of table `key` (`db.db/table`) a record held at open follows.
    pub fn found_schema(&self, key: &str) -> Option<i64> {
        self.found
            .lock()
            .expect("log found")
            .schemas
            .get(key)
            .copied()
    }

    /// Block `block`'s outcome is settled: its record may go with the next truncation.
    pub fn release_block(&self, block: &str) {
        self.held.lock().expect("log held").remove(block);
        self.found.lock().expect("log found").blocks.remove(block);
    }

    /// The `commitUser` of every commit this server makes (it persists across restarts).
    pub fn commit_user(&self) -> &str {
        &self.commit_user
    }

    /// The last LSN of `key` in one of its snapshots.
    pub fn flushed(&self, key: &str) -> Lsn {
        self.state.lock().expect("log state").flushed(key)
    }

    /// The log's figures (records, groups, fsyncs).
    pub fn figures(&self) -> crate::storage::commit::log::LogFigures {
        self.log.figures()
    }

    /// How far the flushes are behind: the age in milliseconds of the oldest visible commit
    /// no snapshot holds yet (0 when none waits) and the bytes of every such commit.
    pub fn flush_lag(&self, now_millis: i64) -> (i64, usize) {
        let mut oldest: Option<i64> = None;
        let mut bytes = 0;
        for table in self.tables() {
            let state = table.state::<UnflushedState>();
            if let Some(m) = state.oldest_millis() {
                oldest = Some(oldest.map_or(m, |o| o.min(m)));
            }
            bytes += state.unflushed_bytes();
        }
        (oldest.map_or(0, |m| (now_millis - m).max(0)), bytes)
    }

    /// Tables with unflushed transactions.
    pub fn tables(&self) -> Vec<Table> {
        self.tables
            .lock()
            .expect("log tables")
            .values()
            .cloned()
            .collect()
    }

    /// Replays record `lsn` of the log at start: each table it wrote that still needs it
    /// gets its rows as an unflushed transaction. `open` opens a table by key (`None`: it was
    /// dropped since).
    pub async fn replay<F, Fut>(
        &self,
        lsn: Lsn,
        payload: &[u8],
        open: F,
    ) -> Result<(), StorageError>
    where
        F: Fn(String) -> Fut,
        Fut: std::future::Future<Output = Result<Option<Table>, StorageError>>,
    {
        let record = TransactionRecord::decode(payload)?;
        for changes in record.tables {
            if !crate::storage::commit::log::table_needs(
                &self.state.lock().expect("log state"),
                &changes.table,
                lsn,
            ) {
                continue;
            }
            let Some(table) = open(changes.table.clone()).await? else {
                continue;
            };
            if let Some(through) = self.in_snapshot(&table, lsn).await? {
                self.caught_up(&table, &changes.table, through)?;
                continue;
            }
            let txn = Arc::new(replayed_txn(&table, lsn, record.commit_millis, changes)?);
            let unflushed = table.state::<UnflushedState>();
            unflushed.log(txn);
            unflushed.durable(lsn);
            self.note(&table);
            crash_point("replay-mid");
        }
        Ok(())
    }

    /// Whether one of `table`'s snapshots by this server holds record `lsn` already (its
    /// latest snapshot by the log's commit user has it as identifier or above): `Some` of
    /// that identifier, the LSN the table is flushed through.
    async fn in_snapshot(&self, table: &Table, lsn: Lsn) -> Result<Option<Lsn>, StorageError> {
        let snapshots = table.snapshots();
        let Some(mut id) = snapshots.latest_id().await? else {
            return Ok(None);
        };
        while id > 0 {
            match snapshots.get(id).await? {
                Some(s) if s.commit_user == self.commit_user => {
                    return Ok(u64::try_from(s.commit_identifier)
                        .ok()
                        .filter(|&i| i >= lsn));
                }
                Some(_) => id -= 1,
                None => break,
            }
        }
        Ok(None)
    }

    /// A crash came between a flush's snapshot of `table` (through `through`) and the state
    /// file: the state and the table's commit identifiers catch up now. Otherwise the next
    /// commit that is no flush (a compaction, a direct commit) would carry the state's older
    /// LSN as identifier, become the latest snapshot by the log's user, and a later start
    /// would replay — duplicate — what the flush holds.
    fn caught_up(&self, table: &Table, key: &str, through: Lsn) -> Result<(), StorageError> {
        // Never past the log's end (a state naming a record the log does not hold is refused
        // at open).
        let through = through.min(*self.next.lock().expect("log next") - 1);
        table.state::<CommitState>().set_log_identifier(through);
        let mut state = self.state.lock().expect("log state");
        if state.flushed(key) < through {
            state.mark_flushed(key, through);
            state.store(&self.dir, &self.fsyncs)?;
        }
        Ok(())
    }

    /// The handle of `table` the log keeps (the first one that logged a commit since the
    /// table's last schema change: every unflushed transaction of the table is in its
    /// schema), else `table`.
    fn kept(&self, table: &Table) -> Table {
        self.tables
            .lock()
            .expect("log tables")
            .get(&table_key(table.database(), table.name()))
            .cloned()
            .unwrap_or_else(|| table.clone())
    }

    /// Under `table`'s commit lock, before a commit through `table` is logged: when the
    /// handle the log keeps has another schema (another engine altered the table since), the
    /// transactions logged under it are flushed first, so the table's unflushed rows stay in
    /// one schema.
    async fn align(&self, table: &Table) -> Result<(), StorageError> {
        let kept = self
            .tables
            .lock()
            .expect("log tables")
            .get(&table_key(table.database(), table.name()))
            .map(|t| t.schema().id);
        match kept {
            Some(id) if id != table.schema().id => drain_locked(self, table).await,
            _ => Ok(()),
        }
    }

    fn note(&self, table: &Table) {
        self.tables
            .lock()
            .expect("log tables")
            .entry(table_key(table.database(), table.name()))
            .or_insert_with(|| table.clone());
    }

    /// Flushes every table with unflushed transactions (shutdown, start-up after replay).
    pub async fn flush_all(&self) -> Result<(), StorageError> {
        for table in self.tables() {
            flush_table(self, &table).await?;
        }
        Ok(())
    }

    /// Flushes the tables whose oldest unflushed commit is older than the policy's interval,
    /// or whose unflushed rows outgrew its size. Returns how many it flushed.
    pub async fn flush_due(&self, now_millis: i64) -> Result<usize, StorageError> {
        let mut flushed = 0;
        for table in self.tables() {
            let state = table.state::<UnflushedState>();
            let due = state
                .oldest_millis()
                .is_some_and(|m| now_millis - m >= self.policy.interval.as_millis() as i64)
                || state.unflushed_bytes() >= self.policy.bytes;
            if due {
                flush_table(self, &table).await?;
                flushed += 1;
            }
        }
        Ok(flushed)
    }

    /// Records `table` as flushed through `lsn` (a snapshot holds every transaction up to
    /// it), then truncates the log behind every table.
    pub(in crate::storage) async fn table_flushed(
        &self,
        table: &Table,
        lsn: Lsn,
    ) -> Result<(), StorageError> {
        {
            let key = table_key(table.database(), table.name());
            let mut state = self.state.lock().expect("log state");
            state.mark_flushed(&key, lsn);
            state.store(&self.dir, &self.fsyncs)?;
        }
        // Every record below the oldest unflushed one of any table is in its snapshots; a
        // block's record whose outcome is not settled stays too.
        let held = self.held.lock().expect("log held").values().min().copied();
        let oldest = self
            .tables()
            .iter()
            .filter_map(|t| t.state::<UnflushedState>().oldest_lsn())
            .chain(held)
            .min();
        let through = match oldest {
            Some(o) => o - 1,
            None => *self.next.lock().expect("log next") - 1,
        };
        if through > 0 {
            self.log.truncate_through(through).await?;
        }
        Ok(())
    }

    /// Starts the background flusher (see [`FlushPolicy`]); it ends with the service.
    pub fn start_flusher(self: &Arc<Self>, clock: Arc<dyn crate::storage::io::clock::Clock>) {
        let weak = Arc::downgrade(self);
        let tick =
            (self.policy.interval / 4).clamp(Duration::from_millis(10), Duration::from_millis(250));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(tick).await;
                let Some(service) = weak.upgrade() else {
                    return;
                };
                if let Err(e) = service.flush_due(clock.now_millis()).await {
                    tracing::warn!(error = %e, "flushing the commit log failed; will try again");
                }
            }
        });
    }

    /// Table `key` was dropped: its records never replay (a table created under its name
    /// later starts after them). The mark is the LSN of an empty record appended now and
    /// awaited, not the last LSN queued: records queued before it may still wait for their
    /// fdatasync, and a state naming an LSN a crash then lost would make the next start
    /// refuse the log (acknowledged records missing).
    pub async fn forget_table(&self, key: &str) -> Result<(), StorageError> {
        self.tables.lock().expect("log tables").remove(key);
        let last = self.barrier().await?;
        let mut state = self.state.lock().expect("log state");
        state.mark_flushed(key, last);
        state.store(&self.dir, &self.fsyncs)
    }

    /// Appends an empty record and waits for it: every record queued before is durable
    /// then. Returns its LSN. What names an LSN in a snapshot or the state file without
    /// holding that record (DROP, TRUNCATE) waits for this first.
    pub(in crate::storage) async fn barrier(&self) -> Result<Lsn, StorageError> {
        let payload = TransactionRecord {
            commit_millis: 0,
            tables: Vec::new(),
            block: None,
        }
        .encode()?;
        let appended = {
            let mut next = self.next.lock().expect("log next");
            *next += 1;
            self.log.append(payload)
        };
        appended.await
    }

    /// Stops the log (after a final flush, at shutdown).
    pub async fn close(&self) {
        self.log.close().await;
    }
}

/// Whether `write` commits through the log. A table's first commit (no snapshot yet) goes
/// directly, as do commits to dynamic-bucket tables (`bucket = -1`: a flush writes no bucket
/// index); unflushed transactions always lie over a snapshot (a table never loses its last
/// one: expiry keeps it, TRUNCATE and rollback leave one).
pub(in crate::storage) fn logs(write: &TableWrite) -> Option<Arc<LogService>> {
    if write.spilled()
        || !write.sorted()
        || write.base().is_none()
        // Dynamic buckets: the commit writes the keys' bucket index with its files.
        || write.table().schema().bucket() < 0
        || !write.table().schema().core_options().commit_log()
    {
        return None;
    }
    write.table().state::<CommitState>().log.clone()
}

/// Commits `write` through the log (see the module docs). Returns the table's current
/// snapshot id (the commit is in no snapshot yet).
pub(in crate::storage) async fn commit_logged(
    service: Arc<LogService>,
    write: TableWrite,
    block: Option<&str>,
) -> Result<Option<i64>, StorageError> {
    commit_logged_all(service, vec![write], block).await
}

/// Commits the writes of one transaction to several tables as one log record: durable
/// together (one record, one LSN) and visible together (`UnflushedState::durable` publishes
/// a transaction's part of every table at once). The tables' commit locks are taken in
/// name order, so two such commits never wait on each other crosswise. Returns the current
/// snapshot id of the first table. `block`: the transaction block with DDL this transaction
/// ends, named in the record (held from truncation until the block's outcome is settled).
pub(in crate::storage) async fn commit_logged_all(
    service: Arc<LogService>,
    mut writes: Vec<TableWrite>,
    block: Option<&str>,
) -> Result<Option<i64>, StorageError> {
    writes.sort_by_key(|w| table_key(w.table().database(), w.table().name()));
    let tables: Vec<Table> = writes.iter().map(|w| w.table().clone()).collect();
    let states: Vec<Arc<CommitState>> = tables.iter().map(|t| t.state::<CommitState>()).collect();
    let unflushed: Vec<Arc<UnflushedState>> =
        tables.iter().map(|t| t.state::<UnflushedState>()).collect();
    let (appended, lsn, current) = {
        let mut locks = Vec::with_capacity(states.len());
        for state in &states {
            locks.push(state.lock.lock().await);
        }
        // Rows are logged in the schema of their handle: it must be the table's newest.
        for table in &tables {
            if let Some(newer) = committer::newest(table).await? {
                return Err(committer::altered(table, newer.schema().id));
            }
            service.align(table).await?;
        }
        let mut checked = Vec::with_capacity(writes.len());
        let mut current = None;
        for (i, write) in writes.iter_mut().enumerate() {
            let (keys, now) = check_logged(&tables[i], &unflushed[i], write).await?;
            if i == 0 {
                current = now;
            }
            checked.push(keys);
        }
        let commit_millis = tables[0].clock().now_millis();
        let runs: Vec<Vec<MemRun>> = writes.iter().map(|w| w.mem_runs().to_vec()).collect();
        let mut changes = Vec::with_capacity(tables.len());
        for (table, runs) in tables.iter().zip(&runs) {
            changes.push(table_changes(table, runs)?);
        }
        let payload = TransactionRecord {
            commit_millis,
            tables: changes,
            block: block.map(str::to_owned),
        }
        .encode()?;
        // Registered before the record is queued, under the counter: the log is never
        // truncated past a record whose table does not list it yet.
        for table in &tables {
            service.note(table);
        }
        let (appended, lsn) = {
            let mut next = service.next.lock().expect("log next");
            let lsn = *next;
            for (i, (runs, keys)) in runs.into_iter().zip(checked).enumerate() {
                let partners = unflushed
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, u)| Arc::downgrade(u))
                    .collect();
                unflushed[i].log(Arc::new(LoggedTxn {
                    lsn,
                    commit_millis,
                    runs,
                    keys,
                    partners,
                }));
            }
            if let Some(block) = block {
                service
                    .held
                    .lock()
                    .expect("log held")
                    .insert(block.to_owned(), lsn);
            }
            let appended = service.log.append(payload);
            *next += 1;
            (appended, lsn)
        };
        drop(locks);
        (appended, lsn, current)
    };
    match appended.await {
        Ok(durable) => {
            debug_assert_eq!(durable, lsn, "log order is the append counter's");
            if let Some(block) = block {
                // The block's commit point is passed (asked by `storage/block_ddl.rs`).
                service
                    .found
                    .lock()
                    .expect("log found")
                    .blocks
                    .insert(block.to_owned());
            }
            unflushed[0].durable(lsn);
            for write in &mut writes {
                write.set_committed();
            }
            Ok(current)
        }
        Err(e) => {
            for u in &unflushed {
                u.drop_failed(lsn);
            }
            Err(e)
        }
    }
}

/// Checks `write` under `table`'s commit lock: against other engines' snapshots since its
/// base (this server's flushes left out: they hold logged transactions, checked by position),
/// then against the transactions logged after it read. Returns its keys per bucket and the
/// table's current snapshot id.
async fn check_logged(
    table: &Table,
    unflushed: &UnflushedState,
    write: &mut TableWrite,
) -> Result<(HashMap<BucketId, HashSet<Vec<u8>>>, Option<i64>), StorageError> {
    check_base(table, write).await?;
    // Under the commit lock no commit of this server is half-registered: the current
    // snapshot is the latest.
    let current = table.current_snapshot().await?;
    let latest_id = current.as_ref().map_or(0, |s| s.id);
    let base_id = write.base().map_or(0, |s| s.id);
    if latest_id > base_id {
        let since = committed_since(
            table,
            base_id,
            latest_id,
            &write.touched(),
            &write.written_min_sequences(),
        )
        .await?;
        let since: SinceFiles = since
            .into_iter()
            .filter_map(|(at, files)| {
                let files: Vec<_> = files
                    .into_iter()
                    .filter(|(id, _)| !unflushed.is_flush(*id))
                    .collect();
                (!files.is_empty()).then_some((at, files))
            })
            .collect();
        if !since.is_empty() {
            write.check_since(&since).await?;
        }
    }
    let keys = RoundKeys::new(table)?;
    keys.check_logged(write, &unflushed.logged_after(write.base_lsn()))?;
    let mut own = HashMap::new();
    keys.add(write, &mut own)?;
    Ok((own, current.map(|s| s.id)))
}

/// A transaction's runs as the log record's changes of `table`: per (partition, bucket) the
/// rows in the table's columns, then `_VALUE_KIND`.
fn table_changes(table: &Table, runs: &[MemRun]) -> Result<TableChanges, StorageError> {
    let mut buckets = Vec::new();
    for r in runs {
        let mut fields: Vec<Field> = r
            .rows
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(KIND_COLUMN, DataType::Int8, false));
        let mut columns: Vec<ArrayRef> = r.rows.columns().to_vec();
        columns.push(Arc::new(r.kinds.clone()));
        buckets.push(BucketChanges {
            partition: Bytes::from(r.partition_bytes.clone()),
            bucket: r.bucket,
            rows: RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?,
        });
    }
    Ok(TableChanges {
        table: table_key(table.database(), table.name()),
        schema_id: table.schema().id,
        buckets,
    })
}

/// A replayed record's changes of `table` as an unflushed transaction.
fn replayed_txn(
    table: &Table,
    lsn: Lsn,
    commit_millis: i64,
    changes: TableChanges,
) -> Result<LoggedTxn, StorageError> {
    let schema = table.schema();
    if changes.schema_id != schema.id {
        return Err(StorageError::Unsupported(format!(
            "the commit log holds rows of {} under schema {} but the table is at schema {}; \
             tarn cannot replay rows across a schema change",
            table.qualified_name(),
            changes.schema_id,
            schema.id
        )));
    }
    let partition_types = table.partition_types();
    let key_names = schema.trimmed_primary_keys();
    let mut runs = Vec::new();
    for b in changes.buckets {
        let width = b.rows.num_columns();
        let kinds = b
            .rows
            .column_by_name(KIND_COLUMN)
            .and_then(|c| c.as_any().downcast_ref::<Int8Array>().cloned())
            .ok_or_else(|| {
                StorageError::format(format!(
                    "a commit log record of {} has no {KIND_COLUMN}",
                    changes.table
                ))
            })?;
        let value_columns: Vec<usize> = (0..width)
            .filter(|&i| {
                let n = b.rows.schema_ref().field(i).name().clone();
                n != KIND_COLUMN && n != SEQUENCE_COLUMN
            })
            .collect();
        let rows = b.rows.project(&value_columns)?;
        let keys: Vec<ArrayRef> = key_names
            .iter()
            .map(|k| {
                rows.column_by_name(k).cloned().ok_or_else(|| {
                    StorageError::format(format!(
                        "a commit log record of {} has no key column {k}",
                        changes.table
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let bytes = rows.get_array_memory_size();
        runs.push(MemRun {
            stmt: 0,
            mode: WriteMode::Upsert,
            read_at: 0,
            read_lsn: 0,
            partition: binary_row::deserialize(&b.partition, &partition_types)?,
            partition_bytes: b.partition.to_vec(),
            bucket: b.bucket,
            keys,
            kinds,
            rows,
            probes: Vec::new(),
            bytes,
        });
    }
    let encoder = RoundKeys::new(table)?;
    let mut keys = HashMap::new();
    encoder.add_runs(&runs, &mut keys)?;
    Ok(LoggedTxn {
        lsn,
        commit_millis,
        runs,
        keys,
        // Replayed before any read: each table's part is published on its own.
        partners: Vec::new(),
    })
}

/// `CALL sys.flush(table)`: the table's commits waiting in the log, as one snapshot now.
/// Returns its id (`None`: nothing waited, or the server runs no log).
pub async fn flush(table: &Table) -> Result<Option<i64>, StorageError> {
    match table.state::<CommitState>().log.clone() {
        Some(log) => flush_table(&log, table).await,
        None => Ok(None),
    }
}

/// Flushes `table`'s visible unflushed transactions into one snapshot (see the module docs).
/// Returns its id, `None` when there was nothing to flush.
pub async fn flush_table(service: &LogService, table: &Table) -> Result<Option<i64>, StorageError> {
    if table.state::<UnflushedState>().last_lsn().is_none() {
        return Ok(None);
    }
    let flushed = {
        let state = table.state::<CommitState>();
        let _lock = state.lock.lock().await;
        flush_locked(&service.kept(table)).await?
    };
    let Some((id, through)) = flushed else {
        return Ok(None);
    };
    crash_point("flush-after-snapshot");
    service.table_flushed(table, through).await?;
    Ok(Some(id))
}

/// [`flush_table`]'s snapshot, under the commit lock the caller holds; `table` is the handle
/// the log keeps ([`LogService::kept`]), whose schema the transactions were logged under.
/// Returns the snapshot id and the last LSN it holds (for [`LogService::table_flushed`]).
async fn flush_locked(table: &Table) -> Result<Option<(i64, Lsn)>, StorageError> {
    let mut message = Flush {
        txns: Arc::default(),
        through: 0,
        files: Vec::new(),
    };
    let result = committer::commit_locked(table, &mut message).await;
    if result.is_err() {
        table.state::<UnflushedState>().flush_failed();
        if !message.files.is_empty() {
            delete_files(table, std::mem::take(&mut message.files)).await;
        }
    }
    Ok(result?.map(|id| (id, message.through)))
}

/// Under `table`'s commit lock: every transaction of the table logged so far is flushed into
/// a snapshot — those still waiting for their fdatasync are waited for first — and the log
/// forgets the handle it kept of the table (the next commit logged leaves its own). What a
/// schema change does first: the log's records never hold rows of two schemas of a table, so
/// a replay never crosses a schema change, and a flush writes rows in the schema they were
/// logged under.
pub(in crate::storage) async fn drain_locked(
    service: &LogService,
    table: &Table,
) -> Result<(), StorageError> {
    let unflushed = table.state::<UnflushedState>();
    if unflushed.last_lsn().is_some() {
        // Every record queued before the barrier is durable once it is: visible now.
        let durable = service.barrier().await?;
        unflushed.durable(durable);
        if let Some((_, through)) = flush_locked(&service.kept(table)).await? {
            service.table_flushed(table, through).await?;
        }
    }
    service
        .tables
        .lock()
        .expect("log tables")
        .remove(&table_key(table.database(), table.name()));
    Ok(())
}

/// A flush: the unflushed transactions, in log order, as one APPEND snapshot.
struct Flush {
    txns: Arc<Vec<Arc<LoggedTxn>>>,
    through: Lsn,
    files: Vec<NewFile>,
}

impl CommitMessage for Flush {
    type Output = Option<i64>;

    fn start(&mut self, table: &Table) -> Option<Option<i64>> {
        // Taken under the commit lock: a flush that ran meanwhile (the flusher, `sys.flush`,
        // another session's COMMIT with `tarn.flush_on_commit`) took what it flushed out.
        let unflushed = table.state::<UnflushedState>();
        self.txns = unflushed.to_flush();
        let Some(last) = self.txns.last() else {
            return Some(None);
        };
        self.through = last.lsn;
        unflushed.begin_flush();
        None
    }

    fn identifier(&self) -> Option<i64> {
        i64::try_from(self.through).ok()
    }

    fn follows_schema(&self) -> bool {
        false
    }

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<Option<i64>>, StorageError> {
        // Another writer may have published since an earlier attempt: number above it.
        if !self.files.is_empty() {
            delete_files(table, std::mem::take(&mut self.files)).await;
        }
        let live = match latest {
            Some(s) => Some(table.live_files(s).await?),
            None => None,
        };
        let mut by_bucket: BTreeMap<(Vec<u8>, i32), Vec<&MemRun>> = BTreeMap::new();
        for t in self.txns.iter() {
            for r in &t.runs {
                by_bucket
                    .entry((r.partition_bytes.clone(), r.bucket))
                    .or_default()
                    .push(r);
            }
        }
        let schema = Arc::clone(table.schema());
        let mut tasks = Vec::new();
        for ((partition, bucket), runs) in by_bucket {
            let layers = fold_runs(&schema, &runs)?;
            let floor = live.as_ref().map_or(0, |l| {
                l.bucket(&(partition.clone(), bucket))
                    .iter()
                    .map(|f| f.max_sequence_number + 1)
                    .max()
                    .unwrap_or(0)
            });
            tasks.push(tokio::spawn(write_layers(
                table.clone(),
                runs[0].partition.clone(),
                partition,
                bucket,
                layers,
                floor,
            )));
        }
        collect_written(tasks, &mut self.files, "a flush writer task").await?;
        crash_point("flush-mid");
        append_content(table, latest, added_entries(&self.files), Vec::new(), &[])
            .await
            .map(Step::Publish)
    }

    fn published(&mut self, table: &Table, snapshot: &Snapshot) -> Option<i64> {
        count_committed(table, &self.files);
        self.files.clear();
        table
            .state::<UnflushedState>()
            .flushed(self.through, snapshot);
        table
            .state::<CommitState>()
            .set_log_identifier(self.through);
        Some(snapshot.id)
    }
}

#[cfg(test)]
mod tests;
