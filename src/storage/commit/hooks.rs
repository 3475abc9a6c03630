//! [`CommitHooks`]: what the floors above the committer run around a table's commits — before a
//! transaction commits (a write stall while compaction catches up) and after a snapshot is
//! published (compaction, automatic tags, expiry). The maintenance floor implements them and
//! the warehouse registers them on every table it opens, so the committer calls them without
//! knowing what they do, and no commit path calls them by hand.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;

/// Work that runs around the commits of a table.
pub trait CommitHooks: Send + Sync + std::fmt::Debug {
    /// Before a transaction that wrote `buckets` (partition bytes, bucket) on top of `base`
    /// commits: may wait, never fails.
    fn before_commit<'a>(
        &'a self,
        table: &'a Table,
        buckets: &'a HashSet<(Vec<u8>, i32)>,
        base: Option<&'a Snapshot>,
    ) -> BoxFuture<'a, ()>;

    /// After snapshot `id` of `table` was published. Must not block: long work goes to a task
    /// of its own (needs a Tokio runtime).
    fn after_commit(&self, table: &Table, id: i64);
}

/// The hooks registered on a table, if any (tables opened outside a warehouse have none).
pub(in crate::storage) fn registered(table: &Table) -> Option<Arc<dyn CommitHooks>> {
    table
        .state::<crate::storage::commit::state::CommitState>()
        .hooks
        .get()
        .cloned()
}
