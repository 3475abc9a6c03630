//! Group commit: transactions whose rows are all in memory queue at their table, and one
//! commit — a [`Round`] — writes the runs of every queued transaction and publishes them in one
//! snapshot. Each transaction is all-or-nothing: one that conflicts (with what committed since
//! its snapshot, or with a transaction before it in the round) is left out and gets its error,
//! the others commit. This is what keeps many small concurrent commits from each paying a
//! snapshot's chain of durable writes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::commit::error::CommitError;
use crate::storage::commit::snapshot_writer::added_entries;
use crate::storage::commit::state::CommitState;
use crate::storage::commit::transaction::{
    SinceFiles, append_content, check_base, committed_since, count_committed,
};
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::memrun::{MemRun, WriteMode};
use crate::storage::lsm::run_file::NewFile;
use crate::storage::lsm::unflushed::LoggedTxn;
use crate::storage::meta::added_files::added_since;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::types::PaimonType;
use crate::storage::write::table_write::TableWrite;

/// A transaction waiting in its table's commit queue.
pub(in crate::storage) struct CommitRequest {
    write: TableWrite,
    done: tokio::sync::oneshot::Sender<Result<i64, StorageError>>,
}

impl std::fmt::Debug for CommitRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitRequest").finish_non_exhaustive()
    }
}

/// Queues `write` and makes sure a round commits it; returns once the snapshot holding it is
/// published (or with the error that left it out).
pub(in crate::storage) async fn commit_grouped(write: TableWrite) -> Result<i64, StorageError> {
    let table = write.table().clone();
    let (done, result) = tokio::sync::oneshot::channel();
    table
        .state::<CommitState>()
        .queue
        .lock()
        .expect("commit queue lock")
        .push(CommitRequest { write, done });
    // The round runs in its own task: a client that cancels or disconnects while its
    // transaction leads a round must not abandon the others' commit halfway. A round that
    // finds the queue empty (its request went in an earlier round) just ends.
    tokio::spawn(async move {
        let mut round = Round::default();
        let result = committer::commit(&table, &mut round).await;
        round.end(&table, result).await;
    });
    // Waiting for the answer, not for the lock: waiters answered by an earlier round never
    // queue behind the rounds that started since.
    answer(result.await)
}

fn answer(
    done: Result<Result<i64, StorageError>, tokio::sync::oneshot::error::RecvError>,
) -> Result<i64, StorageError> {
    done.map_err(|_| StorageError::from(CommitError::Unanswered))?
}

/// One round of queued transactions, committed as one APPEND snapshot.
#[derive(Default)]
struct Round {
    /// The transactions taken from the queue (under the commit lock, at the start).
    queued: Vec<CommitRequest>,
    /// Whether the queued transactions were checked and their files written.
    started: bool,
    /// The transactions that passed their checks, in commit order.
    accepted: Vec<CommitRequest>,
    /// The round's data and changelog files (written at the first attempt).
    files: Vec<NewFile>,
    changelog: Vec<NewFile>,
    /// The snapshot up to which others' commits were checked.
    checked: i64,
    /// The accepted transaction whose check against another writer's commit failed the round
    /// after its files were written (the others did not conflict themselves).
    culprit: Option<usize>,
    _log: Option<RoundLog>,
}

impl CommitMessage for Round {
    /// The snapshot id, `None` when the round had nothing to commit.
    type Output = Option<i64>;

    fn start(&mut self, table: &Table) -> Option<Option<i64>> {
        self.queued = std::mem::take(
            &mut *table
                .state::<CommitState>()
                .queue
                .lock()
                .expect("commit queue lock"),
        );
        self.queued.is_empty().then_some(None)
    }

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<Option<i64>>, StorageError> {
        let latest_id = latest.map_or(0, |s| s.id);
        if !self.started {
            self.started = true;
            let queued = std::mem::take(&mut self.queued);
            self._log = Some(RoundLog(std::time::Instant::now(), queued.len()));
            let since_all = round_checks(table, latest, queued, &mut self.accepted).await?;
            if self.accepted.is_empty() {
                return Ok(Step::Finish(None));
            }
            self.write_files(table, &since_all).await?;
        } else if latest_id > self.checked {
            // Another writer published first: check what it committed.
            let mut min_seq: HashMap<(Vec<u8>, i32), i64> = HashMap::new();
            for f in &self.files {
                let m = min_seq
                    .entry((f.partition.clone(), f.bucket))
                    .or_insert(i64::MAX);
                *m = (*m).min(f.meta.min_sequence_number);
            }
            let buckets: HashSet<_> = min_seq.keys().cloned().collect();
            let since = committed_since(table, self.checked, latest_id, &buckets, &min_seq).await?;
            if !since.is_empty() {
                for (i, r) in self.accepted.iter().enumerate() {
                    if let Err(e) = r.write.check_since(&since).await {
                        self.culprit = Some(i);
                        return Err(e);
                    }
                }
            }
        }
        self.checked = latest_id;
        let hashes: Vec<_> = self
            .accepted
            .iter()
            .map(|r| r.write.dynamic_hashes())
            .collect();
        append_content(
            table,
            latest,
            added_entries(&self.files),
            added_entries(&self.changelog),
            &hashes,
        )
        .await
        .map(Step::Publish)
    }

    fn published(&mut self, table: &Table, snapshot: &Snapshot) -> Option<i64> {
        count_committed(table, &self.files);
        for r in self.accepted.drain(..) {
            let mut r = r;
            r.write.set_committed();
            let _ = r.done.send(Ok(snapshot.id));
        }
        Some(snapshot.id)
    }
}

impl Round {
    /// Writes the accepted transactions' runs (one file per bucket, later transactions winning
    /// on a key they share) and their changelog files.
    async fn write_files(
        &mut self,
        table: &Table,
        since_all: &SinceFiles,
    ) -> Result<(), StorageError> {
        let accepted = &self.accepted;
        let mut by_bucket: BTreeMap<(Vec<u8>, i32), Vec<&MemRun>> = BTreeMap::new();
        for r in accepted {
            for run in r.write.mem_runs() {
                by_bucket
                    .entry((run.partition_bytes.clone(), run.bucket))
                    .or_default()
                    .push(run);
            }
        }
        let schema = Arc::clone(table.schema());
        // Every transaction's own runs, before the fold below keeps one version per key.
        let changelog = crate::storage::write::changelog::Pending::new(
            table,
            Vec::new(),
            accepted.iter().map(|r| r.write.mem_runs()),
        )?;
        let mut tasks = Vec::new();
        for ((partition, bucket), runs) in by_bucket {
            let layers = crate::storage::lsm::memrun::fold_runs(&schema, &runs)?;
            let floor = accepted
                .iter()
                .map(|r| r.write.floor(&partition, bucket, Some(since_all)))
                .max()
                .unwrap_or(0);
            tasks.push(tokio::spawn(
                crate::storage::write::table_write::write_layers(
                    table.clone(),
                    runs[0].partition.clone(),
                    partition,
                    bucket,
                    layers,
                    floor,
                ),
            ));
        }
        crate::storage::write::table_write::collect_written(
            tasks,
            &mut self.files,
            "a writer task",
        )
        .await?;
        self.changelog = changelog.write(table, &self.files).await?;
        Ok(())
    }

    /// After the commit: the transactions that were not answered (the round failed) get its
    /// error, and the files it wrote are removed. The round's error is shared, so each keeps
    /// its kind (a conflict stays one, an I/O failure stays one) and says it failed as part of
    /// a group. When one transaction's own check failed the round, that one gets its error and
    /// the others a conflict: they did nothing wrong and may run again.
    async fn end(self, table: &Table, result: Result<Option<i64>, StorageError>) {
        let Err(e) = result else {
            return;
        };
        let (shared, mut culprit) = match self.culprit {
            Some(i) => {
                let others = StorageError::CommitConflict(format!(
                    "another transaction in the same group commit conflicted with a concurrent \
                     commit to {} ({e}), so none of the group committed",
                    table.qualified_name()
                ));
                (Arc::new(others), Some((i, e)))
            }
            None => (Arc::new(e), None),
        };
        for (i, r) in self.accepted.into_iter().enumerate() {
            let answer = match culprit.take_if(|(at, _)| *at == i) {
                Some((_, own)) => own,
                None => CommitError::Group(Arc::clone(&shared)).into(),
            };
            let _ = r.done.send(Err(answer));
        }
        for r in self.queued {
            let _ = r
                .done
                .send(Err(CommitError::Group(Arc::clone(&shared)).into()));
        }
        let written: Vec<NewFile> = self.files.into_iter().chain(self.changelog).collect();
        if !written.is_empty() {
            crate::storage::write::table_write::delete_files(table, written).await;
        }
    }
}

/// Checks each queued transaction against what committed since its snapshot and against the
/// transactions before it in the round; the ones that pass go to `accepted`, the others get
/// their error now. Returns every file added since the oldest base, per bucket.
async fn round_checks(
    table: &Table,
    latest: Option<&Snapshot>,
    round: Vec<CommitRequest>,
    accepted: &mut Vec<CommitRequest>,
) -> Result<SinceFiles, StorageError> {
    let latest_id = latest.map_or(0, |s| s.id);
    let oldest = round
        .iter()
        .map(|r| r.write.base().map_or(0, |s| s.id))
        .min()
        .unwrap_or(latest_id);
    let added = added_since(table, oldest, latest_id).await?;
    let mut since_all: SinceFiles = HashMap::new();
    for a in &added {
        since_all
            .entry(a.bucket.clone())
            .or_default()
            .push((a.snapshot, a.file.clone()));
    }
    let keys = RoundKeys::new(table)?;
    let mut written: HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>> = HashMap::new();
    // Dynamic-bucket tables: each transaction's keys must be in the buckets where the latest
    // index and the transactions before it in the round have them.
    let mut index = crate::storage::write::dynamic_bucket::IndexRebase::new(table, latest);
    for r in round {
        let base = r.write.base().map_or(0, |s| s.id);
        let touched = r.write.touched();
        let mut since: SinceFiles = HashMap::new();
        for a in &added {
            if a.snapshot > base && touched.contains(&a.bucket) {
                since
                    .entry(a.bucket.clone())
                    .or_default()
                    .push((a.snapshot, a.file.clone()));
            }
        }
        let checked = match check_base(table, &r.write).await {
            Err(e) => Err(e),
            Ok(()) if since.is_empty() => Ok(()),
            Ok(()) => r.write.check_since(&since).await,
        };
        let checked = checked.and_then(|()| keys.check_round(&r.write, &written));
        let checked = match checked {
            Ok(()) => index.add(&r.write.dynamic_hashes()).await,
            Err(e) => Err(e),
        };
        match checked {
            Ok(()) => {
                keys.add(&r.write, &mut written)?;
                accepted.push(r);
            }
            Err(e) => {
                let _ = r.done.send(Err(e));
            }
        }
    }
    Ok(since_all)
}

/// Keys of a round's transactions, in one comparable encoding.
pub(in crate::storage) struct RoundKeys {
    encoder: KeyEncoder,
    key_types: Vec<PaimonType>,
}

impl RoundKeys {
    pub(in crate::storage) fn new(table: &Table) -> Result<Self, StorageError> {
        Ok(Self {
            encoder: KeyEncoder::new(table)?,
            key_types: table.key_types(),
        })
    }

    fn rows(&self, run: &MemRun) -> Result<arrow::row::Rows, StorageError> {
        self.encoder.encode(&run.keys)
    }

    /// A key this transaction changed (other than blindly) that an earlier transaction of the
    /// round wrote: 23505 for an INSERT, 40001 otherwise.
    pub(in crate::storage) fn check_round(
        &self,
        write: &TableWrite,
        written: &HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        self.check_runs(write, write.mem_runs(), written)
    }

    fn check_runs(
        &self,
        write: &TableWrite,
        runs: &[MemRun],
        written: &HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        if self.encoder.is_empty() {
            return Ok(());
        }
        for run in runs {
            if run.mode == WriteMode::Upsert {
                continue;
            }
            let Some(theirs) = written.get(&(run.partition_bytes.clone(), run.bucket)) else {
                continue;
            };
            let rows = self.rows(run)?;
            if let Some(i) = rows.iter().position(|r| theirs.contains(r.as_ref())) {
                let key: Vec<Datum> = run
                    .keys
                    .iter()
                    .zip(&self.key_types)
                    .map(|(c, t)| Datum::from_array(c, i, t))
                    .collect::<Result<_, _>>()?;
                return Err(if run.mode == WriteMode::Insert {
                    crate::storage::write::table_write::duplicate_key_error(
                        write.table(),
                        &key,
                        &run.partition,
                    )
                } else {
                    StorageError::CommitConflict(format!(
                        "another transaction committed a change to the same row of {} first",
                        write.table().qualified_name()
                    ))
                });
            }
        }
        Ok(())
    }

    /// A key this transaction changed (other than blindly) that one of `logged` — this
    /// server's transactions in the commit log — wrote after the statement that changed it
    /// read: 23505 for an INSERT, 40001 otherwise.
    pub(in crate::storage) fn check_logged(
        &self,
        write: &TableWrite,
        logged: &[Arc<LoggedTxn>],
    ) -> Result<(), StorageError> {
        for run in write.mem_runs() {
            let at = (run.partition_bytes.clone(), run.bucket);
            let mut theirs: HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>> = HashMap::new();
            for t in logged.iter().filter(|t| t.lsn > run.read_lsn) {
                if let Some(keys) = t.keys.get(&at) {
                    theirs
                        .entry(at.clone())
                        .or_default()
                        .extend(keys.iter().cloned());
                }
            }
            if !theirs.is_empty() {
                self.check_runs(write, std::slice::from_ref(run), &theirs)?;
            }
        }
        Ok(())
    }

    pub(in crate::storage) fn add(
        &self,
        write: &TableWrite,
        written: &mut HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        self.add_runs(write.mem_runs(), written)
    }

    /// [`add`](Self::add) for runs.
    pub(in crate::storage) fn add_runs(
        &self,
        runs: &[MemRun],
        written: &mut HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        if self.encoder.is_empty() {
            return Ok(());
        }
        for run in runs {
            let rows = self.rows(run)?;
            written
                .entry((run.partition_bytes.clone(), run.bucket))
                .or_default()
                .extend(rows.iter().map(|r| r.as_ref().to_vec()));
        }
        Ok(())
    }
}

/// Logs a round's size and duration however it ends (`RUST_LOG=tarn=debug`).
struct RoundLog(std::time::Instant, usize);

impl Drop for RoundLog {
    fn drop(&mut self) {
        tracing::debug!(
            transactions = self.1,
            ms = self.0.elapsed().as_millis() as u64,
            "group commit round"
        );
    }
}
