//! The committer: the one place where a table's commits happen.
//!
//! Every kind of commit — a transaction ([`transaction`](super::transaction)), a group-commit
//! round ([`group`](super::group)), TRUNCATE ([`overwrite`](super::overwrite)), a compaction,
//! a restore, a rollback (maintenance) — is a [`CommitMessage`] handed to [`commit`], which:
//!
//! 1. takes the table's commit lock (held for the commit only, never across a statement) and
//!    assigns the commit's `commitIdentifier`;
//! 2. reads the latest snapshot and asks the message to [`prepare`](CommitMessage::prepare) on
//!    top of it: the message checks what committed since it last looked (conflicts end the
//!    commit with their error: 40001, 23505) and says what the next snapshot holds — or
//!    finishes without one (nothing to do, an abandoned compaction, a rollback);
//! 3. publishes that content as `snapshot-N+1` ([`snapshot_writer`](super::snapshot_writer));
//!    if another writer took N+1 first, removes what the attempt wrote and goes back to 2. The
//!    snapshot file is written create-if-absent, so a commit is published at most once (a
//!    store that can report a write that succeeded as failed — object stores — will need the
//!    snapshot writer to look for its own commit user and identifier before removing files);
//! 4. tells the message it was [`published`](CommitMessage::published), then runs the
//!    table's after-commit hooks (compaction, automatic tags, expiry: see
//!    [`hooks`](super::hooks)).
//!
//! Sequence numbers are not assigned here: they are in the data files, which writers write
//! before committing (`write::sequences`); a message that writes its in-memory runs at commit
//! time does so in `prepare`, under this lock, so a later commit always carries higher numbers
//! in a bucket.
//!
//! Today a commit is acknowledged when its snapshot is published. A durable commit log in front
//! of snapshots will acknowledge at step 3's place once the commit is logged and publish later;
//! that is why publishing is its own module and nothing here depends on how it is made durable.

use std::future::Future;

use crate::storage::StorageError;
use crate::storage::commit::snapshot_writer::{self, Content};
use crate::storage::commit::state::CommitState;
use crate::storage::lsm::unflushed::UnflushedState;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;

/// What one attempt of a commit says about the next snapshot.
pub(in crate::storage) enum Step<T> {
    /// Publish this content as the next snapshot.
    Publish(Content),
    /// End the commit without a snapshot, with this outcome.
    Finish(T),
}

/// One kind of commit.
pub(in crate::storage) trait CommitMessage: Send {
    /// What the commit answers with.
    type Output: Send;

    /// Under the commit lock, before anything is read: `Some` ends the commit at once with that
    /// outcome (a group-commit round whose transactions an earlier round took).
    fn start(&mut self, _table: &Table) -> Option<Self::Output> {
        None
    }

    /// Under the commit lock, on top of `latest` (the table's latest snapshot now): checks
    /// what committed since the previous attempt (or since the commit's own base) and says
    /// what the next snapshot holds. Called again on top of the new latest snapshot when
    /// another writer published first.
    fn prepare(
        &mut self,
        table: &Table,
        latest: Option<&Snapshot>,
        identifier: i64,
    ) -> impl Future<Output = Result<Step<Self::Output>, StorageError>> + Send;

    /// The prepared content was published as `snapshot`.
    fn published(&mut self, table: &Table, snapshot: &Snapshot) -> Self::Output;

    /// The commit's own `commitIdentifier` (a flush's: its last log position), instead of the
    /// one the committer assigns.
    fn identifier(&self) -> Option<i64> {
        None
    }

    /// Whether the commit is prepared and published against the table's newest schema when
    /// its handle is older (an ALTER TABLE since it was opened; the default). A flush is not:
    /// its rows are in the schema they were logged under.
    fn follows_schema(&self) -> bool {
        true
    }
}

/// Runs `message` as one commit of `table` (see the module docs for the steps).
pub(in crate::storage) async fn commit<M: CommitMessage>(
    table: &Table,
    message: &mut M,
) -> Result<M::Output, StorageError> {
    let state = table.state::<CommitState>();
    let _lock = state.lock.lock().await;
    commit_locked(table, message).await
}

/// [`commit`] for a caller that holds `table`'s commit lock already (an ALTER TABLE flushing
/// the commit log before the schema changes).
///
/// Under the lock the commit moves to the table's newest schema (see [`newest`]): its
/// snapshot records the schema the table has when it is published, and the messages check
/// that what they write was written under it (a transaction whose handle predates an ALTER is
/// refused with 40001, and runs again under the new schema).
pub(in crate::storage) async fn commit_locked<M: CommitMessage>(
    table: &Table,
    message: &mut M,
) -> Result<M::Output, StorageError> {
    let state = table.state::<CommitState>();
    if let Some(outcome) = message.start(table) {
        return Ok(outcome);
    }
    let fresh = if message.follows_schema() {
        newest(table).await?
    } else {
        check_retired(table)?;
        None
    };
    let table = fresh.as_ref().unwrap_or(table);
    let identifier = message
        .identifier()
        .unwrap_or_else(|| state.next_commit_identifier());
    let mut latest = table.snapshots().latest().await?;
    loop {
        let content = match message.prepare(table, latest.as_ref(), identifier).await? {
            Step::Finish(outcome) => return Ok(outcome),
            Step::Publish(content) => content,
        };
        let attempt_files = content.attempt_files.clone();
        let published =
            match snapshot_writer::publish(table, latest.as_ref(), content, identifier).await {
                Ok(published) => published,
                Err(e) => {
                    remove(table, &attempt_files).await;
                    return Err(e);
                }
            };
        if let Some(snapshot) = published {
            // The message first (a flush drops its transactions from the unflushed ones),
            // then the table's current snapshot moves: no read sees both.
            let outcome = message.published(table, &snapshot);
            table.state::<UnflushedState>().published(&snapshot);
            if let Some(hooks) = crate::storage::commit::hooks::registered(table) {
                hooks.after_commit(table, snapshot.id);
            }
            return Ok(outcome);
        }
        // Another writer took the id: prepare again on top of what it published.
        remove(table, &attempt_files).await;
        latest = table.snapshots().latest().await?;
    }
}

/// Under the commit lock: `table` at its newest schema when that is newer than the handle's
/// (`None`: the handle's is the newest). Refuses a table whose folder was renamed since the
/// handle was opened.
pub(in crate::storage) async fn newest(table: &Table) -> Result<Option<Table>, StorageError> {
    check_retired(table)?;
    Ok(table.newer_schema().await?.map(|s| table.with_schema(s)))
}

fn check_retired(table: &Table) -> Result<(), StorageError> {
    if table.state::<CommitState>().is_retired() {
        return Err(StorageError::CommitConflict(format!(
            "table {} was renamed while this transaction ran; run it again",
            table.qualified_name()
        )));
    }
    Ok(())
}

/// The refusal of a commit written under `table`'s schema when the table is at schema
/// `newest` now.
pub(in crate::storage) fn altered(table: &Table, newest: i64) -> StorageError {
    StorageError::CommitConflict(format!(
        "table {} was altered while this transaction wrote to it (schema {} is now schema \
         {newest}); run it again",
        table.qualified_name(),
        table.schema().id
    ))
}

/// Deletes files an attempt wrote for a snapshot it did not publish.
async fn remove(table: &Table, files: &[object_store::path::Path]) {
    for path in files {
        let _ = table.io().delete(path).await;
    }
}
