//! [`CommitState`]: what the committer keeps per table in this process — the commit lock, the
//! queue of transactions waiting for a group commit, the commit user and the next commit
//! identifier, the hooks registered around commits, and how many bytes of data files user
//! commits added.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::storage::commit::group::CommitRequest;
use crate::storage::commit::hooks::CommitHooks;
use crate::storage::commit::logged::LogService;

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
    /// The server's commit log, when it is on (`commit/logged.rs`).
    pub(in crate::storage) log: Option<Arc<LogService>>,
    /// The table's folder was renamed (set under the commit lock): handles opened before
    /// share this state and must not commit into the old folder.
    retired: AtomicBool,
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
            log: None,
            retired: AtomicBool::new(false),
        }
    }
}

impl CommitState {
    /// Registers the hooks of the table's commits (the first registration stays).
    pub(in crate::storage) fn register_hooks(&self, hooks: &Arc<dyn CommitHooks>) {
        let _ = self.hooks.set(Arc::clone(hooks));
    }

    /// The state of a table whose commits go through `log`: every commit carries the log's
    /// persistent commit user, and identifiers that never pass the last LSN flushed
    /// (`flushed`), so that "the latest snapshot by this user" tells how far the log is in
    /// the table.
    pub(in crate::storage) fn with_log(log: Arc<LogService>, flushed: u64) -> Self {
        Self {
            commit_user: log.commit_user().to_owned(),
            next_identifier: AtomicI64::new(i64::try_from(flushed).unwrap_or(i64::MAX)),
            log: Some(log),
            ..Self::default()
        }
    }

    /// A new `commitIdentifier` for this process's next commit (with the commit log on: the
    /// last LSN flushed into the table).
    pub fn next_commit_identifier(&self) -> i64 {
        match self.log {
            Some(_) => self.next_identifier.load(Ordering::SeqCst),
            None => self.next_identifier.fetch_add(1, Ordering::SeqCst),
        }
    }

    /// A flush put the log into the table through `lsn`.
    pub(in crate::storage) fn set_log_identifier(&self, lsn: u64) {
        self.next_identifier
            .fetch_max(i64::try_from(lsn).unwrap_or(i64::MAX), Ordering::SeqCst);
    }

    /// The table's folder moved away (RENAME; called under the commit lock): every commit
    /// through this state is refused from now on.
    pub(in crate::storage) fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
    }

    /// Whether [`retire`](Self::retire) was called.
    pub(in crate::storage) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::SeqCst)
    }

    /// Counts `bytes` of data files a user commit of this process added.
    pub(in crate::storage) fn count_committed(&self, bytes: i64) {
        self.bytes_committed
            .fetch_add(u64::try_from(bytes).unwrap_or(0), Ordering::Relaxed);
    }
}
