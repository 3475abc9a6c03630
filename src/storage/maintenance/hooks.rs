//! [`Maintenance`]: the commit hooks this floor registers on every table the warehouse opens.
//! Before a transaction commits: a write stall while a touched bucket is over compaction's
//! stop trigger. After each commit of this process: automatic tags, then partition expiration
//! (`partition_expire.rs`), then snapshot expiration; and a compaction pass (in a task of its own, see `compactor.rs`).
//!
//! Both are the committer's duty in Paimon; here they run in a task of their own after the
//! committing clients were answered, so a commit's latency never includes them. Tags come
//! first, so a snapshot an automatic tag is about to keep cannot expire in between. Failures
//! are logged, never reported to the commit that triggered them (the data is committed; the
//! next commit tries again).

use std::collections::HashSet;

use futures::future::BoxFuture;

use crate::storage::commit::hooks::CommitHooks;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;

/// The maintenance floor's commit hooks.
#[derive(Debug, Default)]
pub struct Maintenance;

impl CommitHooks for Maintenance {
    fn before_commit<'a>(
        &'a self,
        table: &'a Table,
        buckets: &'a HashSet<(Vec<u8>, i32)>,
        base: Option<&'a Snapshot>,
    ) -> BoxFuture<'a, ()> {
        // A bucket over the stop trigger takes no more runs until compaction catches up
        // (Paimon's writer waits the same way before it adds a file).
        Box::pin(crate::storage::maintenance::compactor::stall_if_needed(
            table, buckets, base,
        ))
    }

    fn after_commit(&self, table: &Table, id: i64) {
        after_commit(table, id);
    }
}

/// Starts the maintenance after snapshot `id` was committed to `table` (needs a Tokio
/// runtime).
fn after_commit(table: &Table, id: i64) {
    crate::storage::maintenance::compactor::after_commit(table);
    let table = table.clone();
    tokio::spawn(async move {
        auto_tag(&table, id).await;
        match crate::storage::maintenance::partition_expire::expire_after_commit(&table).await {
            Ok(Some(expired)) if !expired.is_empty() => {
                tracing::info!(table = %table.qualified_name(), ?expired, "partitions expired");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(table = %table.qualified_name(), "partition expiration failed: {e}");
            }
        }
        match crate::storage::maintenance::expire::expire_after_commit(&table).await {
            Ok(Some(report)) => tracing::debug!(
                table = %table.qualified_name(),
                expired = ?report.expired,
                data_files = report.data_files_deleted,
                manifests = report.manifests_deleted,
                "snapshots expired"
            ),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(table = %table.qualified_name(), "snapshot expiration failed: {e}");
            }
        }
    });
}

/// Automatic tags after snapshot `id` (the snapshot is read only when the table creates them).
async fn auto_tag(table: &Table, id: i64) {
    let active = crate::storage::spec::options::tags::AutoTagOptions::from_schema(table.schema())
        .is_ok_and(|o| o.is_active());
    if !active {
        return;
    }
    let snapshot = match table.snapshots().get(id).await {
        Ok(Some(s)) => s,
        // Rolled back or expired already: nothing to tag.
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(table = %table.qualified_name(), "automatic tags: {e}");
            return;
        }
    };
    match crate::storage::maintenance::auto_tag::auto_tag_after_commit(table, &snapshot).await {
        Ok(created) if !created.is_empty() => {
            tracing::info!(table = %table.qualified_name(), ?created, "automatic tags");
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(table = %table.qualified_name(), "automatic tags failed: {e}");
        }
    }
}
