//! A transaction's commit: [`commit_write`] is how a [`TableWrite`] becomes a snapshot.
//!
//! A transaction that spilled runs to files commits alone ([`TxnCommit`]); one whose rows are
//! all in memory joins a group commit (`group.rs`), which writes the runs of every transaction
//! in the round together. Either way the message checks what committed since the
//! transaction's snapshot with [`committed_since`]: first committer wins on keys (INSERT's
//! 23505, 40001 for other changes), and another writer's files must not outrank sequence
//! numbers this commit already wrote.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::commit::snapshot_writer::{Content, added_entries};
use crate::storage::commit::state::CommitState;
use crate::storage::lsm::run_file::NewFile;
use crate::storage::meta::added_files::added_since;
use crate::storage::meta::snapshot::{CommitKind, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::{DataFileMeta, ManifestEntry};
use crate::storage::write::dynamic_bucket::{WrittenHashes, rebase_index};
use crate::storage::write::table_write::TableWrite;

/// Files added by commits since a transaction's snapshot, per bucket, with their snapshot ids.
pub(crate) type SinceFiles = HashMap<(Vec<u8>, i32), Vec<(i64, DataFileMeta)>>;

/// Ends `write`'s open statement and commits everything it holds as one APPEND snapshot.
/// Returns the snapshot id, or `None` when it wrote nothing.
pub async fn commit_write(write: TableWrite) -> Result<Option<i64>, StorageError> {
    commit_write_in(write, None).await
}

/// [`commit_write`], for transaction block `block`'s writes (named in its log record).
async fn commit_write_in(
    mut write: TableWrite,
    block: Option<&str>,
) -> Result<Option<i64>, StorageError> {
    if !write.finish_statements().await? {
        return Ok(None);
    }
    let table = write.table().clone();
    before_commit(&write).await;
    if let Some(log) = crate::storage::commit::logged::logs(&write) {
        return crate::storage::commit::logged::commit_logged(log, write, block).await;
    }
    if let Some(log) = table.state::<CommitState>().log.clone() {
        // Committed directly: the log's transactions go into the table first, so this
        // commit's snapshot orders after them.
        crate::storage::commit::logged::flush_table(&log, &table).await?;
    }
    if !write.spilled() {
        // Small transactions (nothing spilled) share snapshots with others committing at the
        // same time.
        return crate::storage::commit::group::commit_grouped(write)
            .await
            .map(Some);
    }
    let mut message = TxnCommit {
        checked: write.base().map_or(0, |s| s.id),
        write: &mut write,
        base_checked: false,
        since_all: HashMap::new(),
        runs_written: false,
    };
    let id = committer::commit(&table, &mut message).await?;
    write.set_committed();
    Ok(Some(id))
}

/// Commits one transaction's writes to several tables. When every one of them goes through
/// the commit log (see `logged::logs`), they commit as one log record: all or none after a
/// crash, visible together to every read of this server, flushed into each table's snapshots
/// separately (another engine may see one table's part before the other's). Otherwise they
/// commit one table after another, each its own snapshot, in the order of their names — not
/// atomic: a reader can see the first before the second commits, a failure (a conflict, a
/// crash) in the second leaves the first committed. That is the case with the log off, for
/// a table written for the first time (no snapshot yet), and for writes that spilled or
/// tables that never go through the log.
pub async fn commit_writes(writes: Vec<TableWrite>) -> Result<(), StorageError> {
    commit_writes_in(writes, None).await
}

/// [`commit_writes`] of the transaction that ends block `block`, a transaction block with DDL
/// (`storage/block_ddl.rs`): its log record, when the writes commit as one, names the block
/// (the block's commit point, found again by a start after a crash).
pub async fn commit_writes_in(
    writes: Vec<TableWrite>,
    block: Option<&str>,
) -> Result<(), StorageError> {
    let mut live = Vec::with_capacity(writes.len());
    for mut write in writes {
        if write.finish_statements().await? {
            live.push(write);
        }
    }
    if live.len() <= 1 {
        if let Some(write) = live.pop() {
            commit_write_in(write, block).await?;
        }
        return Ok(());
    }
    let logs: Option<Vec<_>> = live
        .iter()
        .map(crate::storage::commit::logged::logs)
        .collect();
    if let Some(logs) = logs
        && logs.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1]))
    {
        for write in &live {
            before_commit(write).await;
        }
        crate::storage::commit::logged::commit_logged_all(Arc::clone(&logs[0]), live, block)
            .await?;
        return Ok(());
    }
    live.sort_by_key(|w| w.table().qualified_name());
    let mut rest = live.into_iter();
    while let Some(write) = rest.next() {
        if let Err(e) = commit_write_in(write, block).await {
            for write in rest {
                write.abort().await;
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Runs what the warehouse registered to run before a commit of `write`'s table.
async fn before_commit(write: &TableWrite) {
    let table = write.table();
    if let Some(hooks) = crate::storage::commit::hooks::registered(table) {
        hooks
            .before_commit(table, &write.touched(), write.base())
            .await;
    }
}

/// One transaction committed alone.
struct TxnCommit<'a> {
    write: &'a mut TableWrite,
    /// Whether the transaction's base snapshot was checked to be still the table's.
    base_checked: bool,
    /// The snapshot up to which commits of others were checked.
    checked: i64,
    /// Files others added since the base, per bucket (the runs are written above them).
    since_all: SinceFiles,
    runs_written: bool,
}

impl CommitMessage for TxnCommit<'_> {
    type Output = i64;

    async fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<i64>, StorageError> {
        let write = &mut *self.write;
        if !self.base_checked {
            check_base(table, write).await?;
            self.base_checked = true;
        }
        let latest_id = latest.map_or(0, |s| s.id);
        if latest_id > self.checked {
            let since = committed_since(
                table,
                self.checked,
                latest_id,
                &write.touched(),
                &write.written_min_sequences(),
            )
            .await?;
            if !since.is_empty() {
                write.check_since(&since).await?;
            }
            for (at, files) in since {
                self.since_all.entry(at).or_default().extend(files);
            }
            self.checked = latest_id;
        }
        if !self.runs_written {
            // The changelog holds the transaction's runs as written, before they are folded.
            let changelog = crate::storage::write::changelog::Pending::new(
                table,
                write.new_files(),
                [write.mem_runs()],
            )?;
            write.write_runs(&self.since_all).await?;
            let files = changelog.write(table, &write.new_files()).await?;
            write.add_changelog(files);
            self.runs_written = true;
        }
        append_content(
            table,
            latest,
            added_entries(&write.new_files()),
            added_entries(write.changelog_files()),
            &[write.dynamic_hashes()],
        )
        .await
        .map(Step::Publish)
    }

    fn published(&mut self, table: &Table, snapshot: &Snapshot) -> i64 {
        count_committed(table, &self.write.new_files());
        snapshot.id
    }
}

/// What committed after snapshot `from` up to `to` in `buckets`, per bucket with snapshot ids.
/// 40001 when a snapshot in between expired, or when another writer added files there whose
/// sequence numbers could outrank the ones this commit already wrote (`min_sequences`, per
/// bucket).
pub(in crate::storage) async fn committed_since(
    table: &Table,
    from: i64,
    to: i64,
    buckets: &HashSet<(Vec<u8>, i32)>,
    min_sequences: &HashMap<(Vec<u8>, i32), i64>,
) -> Result<SinceFiles, StorageError> {
    let own = table.state::<CommitState>();
    let mut since: SinceFiles = HashMap::new();
    for added in added_since(table, from, to).await? {
        if !buckets.contains(&added.bucket) {
            continue;
        }
        if *added.commit_user != own.commit_user
            && min_sequences
                .get(&added.bucket)
                .is_some_and(|m| added.file.max_sequence_number >= *m)
        {
            return Err(StorageError::CommitConflict(format!(
                "another writer ({}) committed snapshot {} to the same bucket of {} with newer \
                 sequence numbers",
                added.commit_user,
                added.snapshot,
                table.qualified_name()
            )));
        }
        since
            .entry(added.bucket)
            .or_default()
            .push((added.snapshot, added.file));
    }
    Ok(since)
}

/// The content of an APPEND commit of `entries`; for transactions that wrote dynamic buckets
/// (`writes`: each one's hashes, in commit order), their hashes rebased onto `latest`'s index
/// (40001 if another writer has one of them in another bucket) with the changed buckets' index
/// files and the index manifest written for this attempt.
pub(in crate::storage) async fn append_content(
    table: &Table,
    latest: Option<&Snapshot>,
    entries: Vec<ManifestEntry>,
    changelog: Vec<ManifestEntry>,
    writes: &[WrittenHashes],
) -> Result<Content, StorageError> {
    let mut content = Content::new(CommitKind::Append, entries, changelog, latest);
    if let Some(index) = rebase_index(table, latest, writes).await? {
        content.index_manifest = index.manifest.clone();
        content.attempt_files = index.files(table);
    }
    Ok(content)
}

/// Counts the bytes of the data files a user commit added (`CommitState::bytes_committed`,
/// the denominator of the table's write amplification; changelog files are not counted).
pub(in crate::storage) fn count_committed(table: &Table, files: &[NewFile]) {
    let bytes = files.iter().map(|f| f.meta.file_size).sum();
    table.state::<CommitState>().count_committed(bytes);
}

/// Fails when the write's base snapshot is no longer the table's (a rollback removed it, and
/// its id may have been committed again with other content): what committed since could not
/// be checked. Fails too when the table's schema changed since the write opened it (`table`
/// is the committer's handle, at the newest schema): its rows were checked and laid out
/// under the old one.
pub(in crate::storage) async fn check_base(
    table: &Table,
    write: &TableWrite,
) -> Result<(), StorageError> {
    if write.table().schema().id != table.schema().id {
        return Err(committer::altered(write.table(), table.schema().id));
    }
    let Some(base) = write.base() else {
        return Ok(());
    };
    let now = table.snapshots().get(base.id).await?;
    if now.is_some_and(|s| s.delta_manifest_list == base.delta_manifest_list) {
        return Ok(());
    }
    Err(StorageError::CommitConflict(format!(
        "snapshot {} of table {} was rolled back or expired while this transaction ran; run \
         it again",
        base.id,
        table.qualified_name()
    )))
}
