//! [`read_view`]: what a read of one table sees in this session — the one place that decides it.
//!
//! A read sees one snapshot and, inside a transaction, that transaction's own writes on top of
//! it. Which snapshot: a past version when the reference names one (`VERSION AS OF`, the audit
//! log at a snapshot), else the snapshot the transaction pinned for the table (REPEATABLE READ:
//! its first read; READ COMMITTED: this statement's), else the current one. Which overlays:
//! the server's committed commits the commit log holds and no snapshot yet (taken with the
//! snapshot), then the transaction's runs of each split's bucket, plus splits for buckets only
//! they wrote to. Every
//! read path of the query layer ([`PaimonTable::scan`](super::table::PaimonTable), and through
//! it the direct execution of `query::direct_plan`) gets its view here, so a change of what a
//! read sees (another source of overlays, say) is made in this one function.

use std::sync::Arc;

use datafusion::error::Result;

use super::table::{pin, storage_error};
use super::txn::Transaction;
use crate::storage::{
    KeyQuery, Overlay, ScanFilter, ScanPlan, Snapshot, SnapshotPin, Split, Table, unflushed_cut,
};

/// The files and overlays one read of a table reads.
pub struct ReadView {
    /// The splits (with their files) at the snapshot read; splits of buckets only the
    /// transaction wrote to come last, without files.
    pub plan: ScanPlan,
    /// The transaction's own writes per split (same order as `plan.splits`).
    pub overlays: Vec<Option<Arc<Overlay>>>,
    /// Keeps the snapshot read from expiring while the read runs.
    pub pin: Option<SnapshotPin>,
}

/// How the files of a read are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Planning {
    /// Every file the filter's partition and key predicates do not prune.
    Scan,
    /// Only the files whose key ranges may hold the filter's pinned keys.
    ByKey,
}

/// What a read of `table` sees: at `version` when given (a past version: no transaction), else
/// through `txn` (its pinned snapshot and its own writes; of a read by `keys`, only theirs)
/// when one runs, else at the latest;
/// always with the commits the snapshot was taken with that the commit log holds and no
/// snapshot has yet (`storage::unflushed_cut`): the audit log shows them too, with their
/// row kinds, as it will once they are flushed.
pub async fn read_view(
    table: &Table,
    txn: Option<&Arc<Transaction>>,
    version: Option<&Snapshot>,
    filter: &ScanFilter,
    planning: Planning,
    keys: Option<&KeyQuery>,
) -> Result<ReadView> {
    let txn = match version {
        Some(_) => None,
        None => txn,
    };
    let plan_at = |snapshot: Option<Snapshot>| async move {
        match planning {
            Planning::ByKey => table.plan_key_scan(snapshot.as_ref(), filter).await,
            Planning::Scan => table.plan_scan(snapshot.as_ref(), filter).await,
        }
    };
    let mut plan = match (txn, version) {
        (_, Some(snapshot)) => plan_at(Some(snapshot.clone())).await,
        (None, None) => plan_at(None).await,
        (Some(txn), None) => match txn.snapshot_of(table).await {
            Ok(Some(snapshot)) => plan_at(Some(snapshot)).await,
            Ok(None) => Ok(ScanPlan::default()),
            Err(e) => Err(e),
        },
    }
    .map_err(storage_error)?;
    // Expiration keeps what a running query reads (the pin lives as long as the plan).
    let pin = match &plan.snapshot {
        Some(s) => pin(table, s.id).await?,
        None => None,
    };
    // What the read lays over its snapshot: the server's committed, unflushed transactions
    // (the commit log's), then the transaction's own writes — an overlay per split, and
    // splits for buckets only they wrote to (the unflushed ones pruned as files are).
    let cut = plan.snapshot.as_ref().and_then(unflushed_cut).cloned();
    let write = txn.and_then(|t| t.written(table));
    let write = match &write {
        Some(w) => Some(w.lock().await),
        None => None,
    };
    let overlay_of = |bytes: &[u8], bucket: i32| {
        let mut o = match &write {
            Some(w) => w.overlay(bytes, bucket, keys),
            None => Overlay::default(),
        };
        if let Some(c) = &cut {
            o.logged = c.runs_of(bytes, bucket);
        }
        (!o.is_empty()).then(|| Arc::new(o))
    };
    let mut overlays: Vec<Option<Arc<Overlay>>> = plan
        .splits
        .iter()
        .map(|split| overlay_of(&split.partition_bytes, split.bucket))
        .collect();
    let mut extra = Vec::new();
    if let Some(c) = &cut {
        extra.extend(
            c.buckets()
                .into_iter()
                .filter(|(values, _, bucket)| table.split_may_match(filter, values, *bucket)),
        );
    }
    if let Some(w) = &write {
        extra.extend(w.written_buckets());
    }
    for (values, bytes, bucket) in extra {
        if plan
            .splits
            .iter()
            .any(|s| s.partition_bytes == bytes && s.bucket == bucket)
        {
            continue;
        }
        let o = overlay_of(&bytes, bucket);
        plan.splits.push(Split {
            partition: values,
            partition_bytes: bytes,
            bucket,
            total_buckets: table.schema().bucket(),
            files: Vec::new(),
            deletions: None,
        });
        overlays.push(o);
    }
    drop(write);
    Ok(ReadView {
        plan,
        overlays,
        pin,
    })
}
