//! [`CommitState`]: what the committer keeps per table in this process — the commit lock, the
//! queue of transactions waiting for a group commit, the commit user and the next commit
//! identifier, the hooks registered around commits, and how many bytes of data files user
//! commits added.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::storage::commit::group::CommitRequest;
use crate::storage::commit::hooks::CommitHooks;

/// A table's commit state ([`Table::state`](crate::storage::meta::table::Table::state)).
#[derive(Debug)]
pub struct CommitState {
    /// Held while a commit checks for conflicts and writes its snapshot (never across a
    /// statement or transaction).
    pub(in crate::storage) lock: tokio::sync::Mutex<()>,
    /// Transactions waiting to commit: whoever holds the commit lock next commits all of them
    /// in one snapshot (group commit).
    pub(in crate::storage) queue: Mutex<Vec<CommitRequest>>,
    /// `commitUser` of this process's commits to the table.
    pub commit_user: String,
    next_identifier: AtomicI64,
    /// What runs around the table's commits (registered by the warehouse that opened it).
    pub(in crate::storage) hooks: OnceLock<Arc<dyn CommitHooks>>,
    /// Bytes of data files (not changelog files) this process's user commits added: with the
    /// compactor's bytes written, the table's write amplification.
    pub bytes_committed: AtomicU64,
}

impl Default for CommitState {
    fn default() -> Self {
        Self {
            lock: tokio::sync::Mutex::new(()),
            queue: Mutex::new(Vec::new()),
            commit_user: uuid::Uuid::new_v4().to_string(),
            next_identifier: AtomicI64::new(1),
            hooks: OnceLock::new(),
            bytes_committed: AtomicU64::new(0),
        }
    }
}

impl CommitState {
    /// Registers the hooks of the table's commits (the first registration stays).
    pub(in crate::storage) fn register_hooks(&self, hooks: &Arc<dyn CommitHooks>) {
        let _ = self.hooks.set(Arc::clone(hooks));
    }

    /// A new `commitIdentifier` for this process's next commit.
    pub fn next_commit_identifier(&self) -> i64 {
        self.next_identifier.fetch_add(1, Ordering::SeqCst)
    }

    /// Counts `bytes` of data files a user commit of this process added.
    pub(in crate::storage) fn count_committed(&self, bytes: i64) {
        self.bytes_committed
            .fetch_add(u64::try_from(bytes).unwrap_or(0), Ordering::Relaxed);
    }
}
