//! Partition expiration (Paimon's `PartitionExpire` with the `values-time` strategy): a
//! partition whose time — read from its values by `partition.timestamp-pattern` /
//! `partition.timestamp-formatter` (`spec/options/partition.rs`) — is before now minus
//! `partition.expiration-time` is dropped, at most `partition.expiration-max-num` of them at a
//! time (the first by their values' text, as Java sorts them), in one OVERWRITE snapshot
//! (`commit/overwrite.rs`, as `dropPartitions`).
//!
//! Which partitions expire is a pure function of (partition values, options, now):
//! [`expired`]. After a commit of this process the check runs at most once per
//! `partition.expiration-check-interval` per table (the first commit after the server starts
//! checks at once; Java starts its interval at a random point instead). Partitions whose values
//! are not a time, or hold NULL, never expire. Times are compared as local date-times with
//! now taken in UTC (Java takes the JVM's time zone).

use std::collections::BTreeSet;
use std::sync::Mutex;

use chrono::{DateTime, NaiveDateTime};

use crate::storage::StorageError;
use crate::storage::commit::overwrite::{DropOutcome, drop_partitions, partition_text};
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::{Datum, PartitionText};
use crate::storage::spec::options::DEFAULT_PARTITION_NAME;
use crate::storage::spec::options::partition::PartitionExpireOptions;
use crate::storage::spec::predicate::{CmpOp, Predicate};

/// When this process last checked a table's partitions (a `Table::state` slot).
#[derive(Debug, Default)]
pub struct PartitionExpireState {
    last_check_millis: Mutex<Option<i64>>,
}

/// The partitions of `partitions` (each its values' texts in `keys`' order, `None` for NULL)
/// that expire at `now_millis`, as indexes into `partitions`: those whose time is before now
/// minus the expiration time, the first `max_num` by their values joined with commas.
pub fn expired(
    keys: &[String],
    partitions: &[Vec<Option<String>>],
    options: &PartitionExpireOptions,
    now_millis: i64,
) -> Vec<usize> {
    let Some(now) = DateTime::from_timestamp_millis(now_millis).map(|t| t.naive_utc()) else {
        return Vec::new();
    };
    let Ok(expiration) = chrono::Duration::from_std(options.expiration_time) else {
        return Vec::new();
    };
    let Some(limit) = now.checked_sub_signed(expiration) else {
        return Vec::new();
    };
    let mut out: Vec<(String, usize)> = partitions
        .iter()
        .enumerate()
        .filter(|(_, values)| {
            options
                .time
                .extract(keys, values)
                .is_some_and(|t: NaiveDateTime| t < limit)
        })
        .map(|(i, values)| {
            let joined = values
                .iter()
                .map(|v| v.as_deref().unwrap_or(DEFAULT_PARTITION_NAME))
                .collect::<Vec<_>>()
                .join(",");
            (joined, i)
        })
        .collect();
    out.sort();
    out.truncate(options.max_num);
    out.into_iter().map(|(_, i)| i).collect()
}

/// Drops the partitions of `table` that expire at `now_millis` under `options`, in one
/// OVERWRITE snapshot; returns them as Paimon prints them (`dt=2026-01-01, hour=3`).
pub async fn expire_partitions(
    table: &Table,
    options: &PartitionExpireOptions,
    now_millis: i64,
) -> Result<Vec<String>, StorageError> {
    let Some(latest) = table.snapshots().latest().await? else {
        return Ok(Vec::new());
    };
    let keys = table.schema().partition_keys.clone();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let types = table.partition_types();
    let live = table.live_files(&latest).await?;
    let bytes: BTreeSet<&Vec<u8>> = live.buckets().map(|(at, _)| &at.0).collect();
    let mut values: Vec<Vec<Datum>> = Vec::with_capacity(bytes.len());
    for b in bytes {
        values.push(binary_row::deserialize(b, &types)?);
    }
    let texts: Vec<Vec<Option<String>>> = values
        .iter()
        .map(|vs| {
            vs.iter()
                .zip(&types)
                .map(|(v, ty)| (!v.is_null()).then(|| PartitionText(v, ty).to_string()))
                .collect()
        })
        .collect();
    let chosen = expired(&keys, &texts, options, now_millis);
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    let specs: Vec<Predicate> = chosen
        .iter()
        .map(|&i| {
            Predicate::And(
                keys.iter()
                    .zip(&values[i])
                    .map(|(k, v)| match v {
                        Datum::Null => Predicate::IsNull(k.clone()),
                        v => Predicate::Compare {
                            column: k.clone(),
                            op: CmpOp::Eq,
                            value: v.clone(),
                        },
                    })
                    .collect(),
            )
        })
        .collect();
    match drop_partitions(table, &specs, false, None).await? {
        DropOutcome::Dropped(d) => Ok(d
            .partitions
            .iter()
            .map(|p| partition_text(table, p))
            .collect()),
        DropOutcome::Missing(_) | DropOutcome::Changed => Ok(Vec::new()),
    }
}

/// After a commit: expires `table`'s partitions when it has `partition.expiration-time` and
/// the check interval has passed since this process last checked. `None`: nothing checked.
pub(crate) async fn expire_after_commit(
    table: &Table,
) -> Result<Option<Vec<String>>, StorageError> {
    let options = match PartitionExpireOptions::from_options(&table.schema().options) {
        Ok(Some(options)) => options,
        Ok(None) => return Ok(None),
        Err(e) => return Err(StorageError::Unsupported(e)),
    };
    let now = table.clock().now_millis();
    {
        let state = table.state::<PartitionExpireState>();
        let mut last = state
            .last_check_millis
            .lock()
            .expect("partition expire state");
        if last.is_some_and(|l| now - l < options.check_interval.as_millis() as i64) {
            return Ok(None);
        }
        *last = Some(now);
    }
    expire_partitions(table, &options, now).await.map(Some)
}

#[cfg(test)]
#[path = "partition_expire_tests.rs"]
mod tests;
