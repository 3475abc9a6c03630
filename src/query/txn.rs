//! [`Transaction`]: what one session's transaction read and wrote, shared with the table
//! providers of its DataFusion context through a [`TxnSlot`].
//!
//! Snapshot isolation: the first time a transaction touches a table it pins the table's latest
//! snapshot, and every later read of that table in the transaction plans against it, with the
//! transaction's own writes layered on top (read-your-writes). Writes go to one
//! [`TableWrite`] per table; COMMIT commits them together (`storage::commit_writes`: one
//! commit-log record for every table, so atomic for tarn's readers; see there for the cases
//! that commit table by table).
//!
//! A transaction block's DDL stays pending until COMMIT (`server/session/block_ddl.rs`); until
//! then the block's own statements see the tables as that DDL left them through the
//! transaction's [`PendingTable`]s, which the catalog consults before the warehouse.
//!
//! A transaction is also an owner of row locks ([`RowLocks`]): the keys its UPDATE, DELETE,
//! MERGE and ON CONFLICT change stay locked until it ends ([`Transaction::release_row_locks`],
//! or when it is dropped).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::storage::{Snapshot, StorageError, Table, TableWrite};

use super::QueryError;
use super::row_locks::{LockError, OwnerId, RowLocks, next_owner};

/// A writer shared between the session (which writes) and scans (which read its overlay).
pub type SharedWrite = Arc<tokio::sync::Mutex<TableWrite>>;

/// A table as the transaction's pending DDL left it.
#[derive(Clone, Debug)]
pub enum PendingTable {
    /// Created or altered by the block: the handle under its pending schema.
    Defined(Table),
    /// Renamed to this name by the block: readable, not writable before COMMIT (its files
    /// still live under the old name).
    Renamed(Table),
    /// Dropped, or renamed away, by the block.
    Gone,
}

impl PendingTable {
    /// The handle the block's statements read, `None` for a table that is gone.
    pub fn table(&self) -> Option<&Table> {
        match self {
            Self::Defined(t) | Self::Renamed(t) => Some(t),
            Self::Gone => None,
        }
    }
}

/// Pending tables by (database, name).
pub type PendingTables = BTreeMap<(String, String), PendingTable>;

/// One transaction.
pub struct Transaction {
    /// Snapshot pinned per table (by qualified name); `None` inside: the table had none.
    pinned: Mutex<BTreeMap<String, Option<Snapshot>>>,
    /// The tables this transaction writes, in the order it first wrote them.
    written: Mutex<Vec<(String, SharedWrite)>>,
    /// This transaction as an owner of row locks.
    owner: OwnerId,
    /// The lock table it took row locks in, once it took one.
    row_locks: Mutex<Option<Arc<RowLocks>>>,
    /// Tables as the block's pending DDL left them.
    pending: Mutex<PendingTables>,
}

impl Default for Transaction {
    fn default() -> Self {
        Self {
            pinned: Mutex::default(),
            written: Mutex::default(),
            owner: next_owner(),
            row_locks: Mutex::default(),
            pending: Mutex::default(),
        }
    }
}

impl Transaction {
    /// READ COMMITTED: the next statement reads the tables' latest snapshots (plus this
    /// transaction's own writes). REPEATABLE READ never calls this.
    pub fn new_statement_snapshot(&self) {
        self.pinned.lock().expect("txn lock").clear();
    }

    /// Locks the rows with `keys` of `table` for this transaction, waiting for other
    /// transactions that hold them (see [`RowLocks::lock`]).
    pub async fn lock_rows(
        &self,
        locks: &Arc<RowLocks>,
        table: &str,
        keys: Vec<Vec<u8>>,
        timeout: Option<std::time::Duration>,
    ) -> Result<(), LockError> {
        if keys.is_empty() {
            return Ok(());
        }
        self.row_locks
            .lock()
            .expect("txn lock")
            .get_or_insert_with(|| Arc::clone(locks));
        locks.lock(self.owner, table, keys, timeout).await
    }

    /// Releases the row locks this transaction holds (its end, or a failure that ends its
    /// chance to commit).
    pub fn release_row_locks(&self) {
        if let Some(locks) = self.row_locks.lock().expect("txn lock").take() {
            locks.release(self.owner);
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.release_row_locks();
    }
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction").finish_non_exhaustive()
    }
}

impl Transaction {
    pub fn new() -> Self {
        Self::default()
    }

    /// The snapshot this transaction reads `table` at (pinned on first use).
    pub async fn snapshot_of(&self, table: &Table) -> Result<Option<Snapshot>, StorageError> {
        let name = table.qualified_name();
        if let Some(s) = self.pinned.lock().expect("txn lock").get(&name) {
            return Ok(s.clone());
        }
        let latest = table.current_snapshot().await?;
        Ok(self
            .pinned
            .lock()
            .expect("txn lock")
            .entry(name)
            .or_insert(latest)
            .clone())
    }

    /// The writer of `table`, started at the pinned snapshot on first use.
    pub async fn writer(&self, table: &Table) -> Result<SharedWrite, QueryError> {
        if let Some(w) = self.written(table) {
            return Ok(w);
        }
        let name = table.qualified_name();
        let renamed = self
            .pending
            .lock()
            .expect("txn lock")
            .iter()
            .find_map(|(k, p)| {
                matches!(p, PendingTable::Renamed(t) if t.qualified_name() == name)
                    .then(|| k.1.clone())
            });
        if let Some(to) = renamed {
            return Err(QueryError::Unsupported(format!(
                "cannot write table \"{to}\" in the transaction block that renamed it: COMMIT \
                 first"
            )));
        }
        let name = table.qualified_name();
        let base = self.snapshot_of(table).await?;
        let write = TableWrite::at(table.clone(), base).await?;
        let shared = Arc::new(tokio::sync::Mutex::new(write));
        let mut written = self.written.lock().expect("txn lock");
        if let Some((_, w)) = written.iter().find(|(n, _)| *n == name) {
            return Ok(Arc::clone(w));
        }
        written.push((name, Arc::clone(&shared)));
        Ok(shared)
    }

    /// The writer of `table` if this transaction wrote it.
    pub fn written(&self, table: &Table) -> Option<SharedWrite> {
        let name = table.qualified_name();
        self.written
            .lock()
            .expect("txn lock")
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, w)| Arc::clone(w))
    }

    /// Every table this transaction writes, with its writer.
    pub fn writers(&self) -> Vec<(String, SharedWrite)> {
        self.written.lock().expect("txn lock").clone()
    }

    /// Takes the writers out (COMMIT or ROLLBACK).
    pub fn take_writers(&self) -> Vec<SharedWrite> {
        std::mem::take(&mut *self.written.lock().expect("txn lock"))
            .into_iter()
            .map(|(_, w)| w)
            .collect()
    }

    /// Drops what this transaction wrote to `table` (the block dropped the table).
    pub async fn discard_writes(&self, table: &Table) {
        let name = table.qualified_name();
        let found = {
            let mut written = self.written.lock().expect("txn lock");
            let at = written.iter().position(|(n, _)| *n == name);
            at.map(|at| written.remove(at).1)
        };
        if let Some(write) = found {
            match Arc::try_unwrap(write) {
                Ok(m) => m.into_inner().abort().await,
                Err(shared) => shared.lock().await.rollback_to(0).await,
            }
        }
    }

    /// `database.name` as the block's pending DDL left it, `None` if untouched.
    pub fn pending(&self, database: &str, name: &str) -> Option<PendingTable> {
        self.pending
            .lock()
            .expect("txn lock")
            .get(&(database.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Records what the block's DDL made of `database.name`.
    pub fn set_pending(&self, database: &str, name: &str, table: PendingTable) {
        self.pending
            .lock()
            .expect("txn lock")
            .insert((database.to_owned(), name.to_owned()), table);
    }

    /// Every pending table (kept by a savepoint).
    pub fn pending_tables(&self) -> PendingTables {
        self.pending.lock().expect("txn lock").clone()
    }

    /// Returns to the pending tables a savepoint kept.
    pub fn restore_pending(&self, tables: PendingTables) {
        *self.pending.lock().expect("txn lock") = tables;
    }

    /// Whether this transaction has written anything.
    pub fn has_writes(&self) -> bool {
        !self.written.lock().expect("txn lock").is_empty()
    }
}

/// The transaction a session's statements currently run in (none: each read plans against
/// the latest snapshot).
#[derive(Debug, Default)]
pub struct TxnSlot(Mutex<Option<Arc<Transaction>>>);

impl TxnSlot {
    pub fn current(&self) -> Option<Arc<Transaction>> {
        self.0.lock().expect("txn slot lock").clone()
    }

    pub fn set(&self, txn: Option<Arc<Transaction>>) {
        *self.0.lock().expect("txn slot lock") = txn;
    }
}
