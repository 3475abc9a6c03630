//! Time travel: which snapshot a version names — a snapshot id, a tag, or a point in time.
//!
//! The rules are Paimon's (`TimeTravelUtil`, `SnapshotManager#earlierOrEqualTimeMills`): a tag
//! reads the snapshot stored in its file, even when `snapshot-N` itself has expired; a time reads
//! the latest snapshot committed at or before it. The choice among snapshots is a pure function
//! ([`snapshot_at_time`]) so its boundaries are tested without files; [`Table::resolve_version`]
//! only fetches what it needs — commit times are found by binary search over the snapshot ids,
//! which are contiguous from the earliest retained one to the latest, reading O(log n) files.
//!
//! A version that does not resolve is a [`VersionError`] (inside [`StorageError::Version`]), so
//! the layers above can give each case its own SQLSTATE; its message names the table and says
//! what does exist.

use chrono::DateTime;

use crate::storage::StorageError;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;

/// A version of a table, as a query names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionSpec {
    SnapshotId(i64),
    Tag(String),
    /// The latest snapshot committed at or before this time (milliseconds since the epoch).
    TimestampMillis(i64),
}

/// Why no snapshot matches a time (see [`snapshot_at_time`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TravelError {
    #[error("there are no snapshots")]
    NoSnapshots,
    #[error(
        "no snapshot was committed at or before {}; the earliest retained snapshot, {earliest_id}, \
         was committed at {}",
        format_millis(*at_millis),
        format_millis(*earliest_millis)
    )]
    BeforeEarliest {
        at_millis: i64,
        earliest_id: i64,
        earliest_millis: i64,
    },
}

/// A version of a table that cannot be resolved, or a tag that cannot be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "snapshot {id} of table {table} does not exist (expired or never written); {}",
        match retained {
            Some((first, last)) => format!("retained snapshots are {first}..{last}"),
            None => "the table has no snapshots".to_owned(),
        }
    )]
    SnapshotNotFound {
        table: String,
        id: i64,
        /// Earliest and latest retained snapshot ids.
        retained: Option<(i64, i64)>,
    },
    #[error(
        "tag '{tag}' of table {table} does not exist; {}",
        if existing.is_empty() {
            "the table has no tags".to_owned()
        } else {
            format!("its tags are: {}", existing.join(", "))
        }
    )]
    TagNotFound {
        table: String,
        tag: String,
        /// The table's tags (at most a few, for the message).
        existing: Vec<String>,
    },
    #[error(
        "table {table} has no snapshot committed at or before {}; {}",
        format_millis(*at_millis),
        match earliest {
            Some((id, millis)) => format!(
                "its earliest retained snapshot, {id}, was committed at {}",
                format_millis(*millis)
            ),
            None => "the table has no snapshots".to_owned(),
        }
    )]
    NoSnapshotAtTime {
        table: String,
        at_millis: i64,
        /// Id and commit time of the earliest retained snapshot, if there is one.
        earliest: Option<(i64, i64)>,
    },
    #[error("tag '{tag}' of table {table} already exists")]
    TagExists { table: String, tag: String },
    #[error("invalid tag name '{name}': {reason}")]
    InvalidTagName { name: String, reason: &'static str },
    #[error(
        "the range of versions of table {table} runs backwards: from is snapshot {from}, to is \
         snapshot {to}; give the older version first"
    )]
    Backwards { table: String, from: i64, to: i64 },
    /// The version was there when the statement resolved it, then went away (snapshot expiry,
    /// or a rollback) before its files were read: a race, not damage. Running the statement
    /// again reads a version that exists.
    #[error(
        "snapshot {id} of table {table} expired while the statement read it; run the statement \
         again"
    )]
    Expired { table: String, id: i64 },
    /// A search by time kept finding the snapshots it was reading expired.
    #[error(
        "snapshots of table {table} kept expiring while searching for the one at {}; run the \
         statement again",
        format_millis(*at_millis)
    )]
    KeptExpiring { table: String, at_millis: i64 },
}

/// How many tag names a [`VersionError::TagNotFound`] message lists.
const TAGS_IN_MESSAGE: usize = 10;

/// `2026-12-01 10:00:00.000 UTC`, for messages (the session's time zone is not known here).
pub fn format_millis(millis: i64) -> String {
    match DateTime::from_timestamp_millis(millis) {
        Some(t) => t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        None => format!("{millis} ms since the epoch"),
    }
}

/// Id of the latest snapshot committed at or before `at_millis`, among `snapshots` (`(id, commit
/// time in milliseconds)` with ids ascending). Commit times need not be strictly increasing (equal
/// times: the higher id wins; a clock that stepped back: still the highest id at or before).
pub fn snapshot_at_time(snapshots: &[(i64, i64)], at_millis: i64) -> Result<i64, TravelError> {
    let Some(&(earliest_id, earliest_millis)) = snapshots.first() else {
        return Err(TravelError::NoSnapshots);
    };
    snapshots
        .iter()
        .rev()
        .find(|(_, time)| *time <= at_millis)
        .map(|(id, _)| *id)
        .ok_or(TravelError::BeforeEarliest {
            at_millis,
            earliest_id,
            earliest_millis,
        })
}

/// How often a time search starts over when snapshots expire while it reads them.
const SEARCH_ATTEMPTS: usize = 4;

impl Table {
    /// The snapshot `spec` names.
    pub async fn resolve_version(&self, spec: &VersionSpec) -> Result<Snapshot, StorageError> {
        match spec {
            VersionSpec::SnapshotId(id) => match self.snapshots().get(*id).await? {
                Some(s) => Ok(s),
                None => {
                    let retained = match self.snapshots().earliest_id().await? {
                        Some(first) => self.snapshots().latest_id().await?.map(|l| (first, l)),
                        None => None,
                    };
                    Err(VersionError::SnapshotNotFound {
                        table: self.qualified_name(),
                        id: *id,
                        retained,
                    }
                    .into())
                }
            },
            VersionSpec::Tag(name) => {
                let tags = self.tags();
                match tags.get(name).await? {
                    Some(tag) => Ok(tag.snapshot),
                    None => {
                        let mut existing = tags.names().await?;
                        existing.truncate(TAGS_IN_MESSAGE);
                        Err(VersionError::TagNotFound {
                            table: self.qualified_name(),
                            tag: name.clone(),
                            existing,
                        }
                        .into())
                    }
                }
            }
            VersionSpec::TimestampMillis(at) => self.snapshot_at_millis(*at).await,
        }
    }

    /// The latest snapshot committed at or before `at_millis`: a binary search over the ids
    /// from the earliest to the latest, then [`snapshot_at_time`] over the snapshots it read.
    /// The search assumes commit times never decrease with ids (as Paimon's does); equal times
    /// are fine.
    async fn snapshot_at_millis(&self, at_millis: i64) -> Result<Snapshot, StorageError> {
        let manager = self.snapshots();
        let mut listed: Option<Vec<i64>> = None;
        for _ in 0..SEARCH_ATTEMPTS {
            // The contiguous range the hints give, or (after a missing file) the listing.
            let ids: Vec<i64> = match &listed {
                Some(ids) => ids.clone(),
                None => match (manager.earliest_id().await?, manager.latest_id().await?) {
                    (Some(first), Some(last)) if first <= last => (first..=last).collect(),
                    _ => manager.list_ids().await?,
                },
            };
            match self.search_time(&ids, at_millis).await? {
                Some(snapshot) => return Ok(snapshot),
                // A snapshot vanished under the search (expired): search the files there are.
                None => listed = Some(manager.list_ids().await?),
            }
        }
        Err(VersionError::KeptExpiring {
            table: self.qualified_name(),
            at_millis,
        }
        .into())
    }

    /// `e` as the reader should see it when reading snapshot `id` failed with it: a missing
    /// file whose snapshot has gone since it was resolved (its `snapshot-N` file is gone and no
    /// tag holds it) is [`VersionError::Expired`] — expiry deleted the version's files under
    /// the reader. A missing file of a snapshot that is still there stays
    /// [`StorageError::MissingFile`]: something else deleted it.
    pub async fn missing_or_expired(&self, id: i64, e: StorageError) -> StorageError {
        if !e.is_missing_file() {
            return e;
        }
        match self.io().exists(&self.snapshots().path_of(id)).await {
            Ok(false) => {}
            Ok(true) | Err(_) => return e,
        }
        match self.tags().list().await {
            Ok(tags) if !tags.iter().any(|t| t.snapshot.id == id) => VersionError::Expired {
                table: self.qualified_name(),
                id,
            }
            .into(),
            _ => e,
        }
    }

    /// One search over `ids` (ascending). `Ok(None)`: a snapshot file was missing.
    async fn search_time(
        &self,
        ids: &[i64],
        at_millis: i64,
    ) -> Result<Option<Snapshot>, StorageError> {
        let mut read: Vec<Snapshot> = Vec::new();
        if let Some(&first) = ids.first() {
            let Some(earliest) = self.snapshots().get(first).await? else {
                return Ok(None);
            };
            let too_early = earliest.time_millis > at_millis;
            read.push(earliest);
            // The first index whose commit time is after `at_millis`: the answer is the one
            // before it, which this search has always read (or it is the earliest).
            let (mut lo, mut hi) = (1, if too_early { 1 } else { ids.len() });
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let Some(s) = self.snapshots().get(ids[mid]).await? else {
                    return Ok(None);
                };
                if s.time_millis <= at_millis {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
                read.push(s);
            }
        }
        read.sort_by_key(|s| s.id);
        let times: Vec<(i64, i64)> = read.iter().map(|s| (s.id, s.time_millis)).collect();
        match snapshot_at_time(&times, at_millis) {
            Ok(id) => Ok(read.into_iter().find(|s| s.id == id)),
            Err(e) => Err(VersionError::NoSnapshotAtTime {
                table: self.qualified_name(),
                at_millis,
                earliest: match e {
                    TravelError::NoSnapshots => None,
                    TravelError::BeforeEarliest {
                        earliest_id,
                        earliest_millis,
                        ..
                    } => Some((earliest_id, earliest_millis)),
                },
            }
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};

    use crate::storage::io::clock::ManualClock;
    use crate::storage::meta::snapshot::CommitKind;

    use crate::storage::spec::schema::TableSchema;
    use crate::storage::spec::types::{DataField, PaimonType, TypeKind};
    use crate::storage::write::table_write::{TableWrite, WriteMode};

    #[test]
    fn latest_at_or_before() {
        let s = [(3, 100), (4, 200), (5, 200), (6, 300)];
        assert_eq!(snapshot_at_time(&s, 100), Ok(3), "equal to the earliest");
        assert_eq!(snapshot_at_time(&s, 199), Ok(3));
        assert_eq!(snapshot_at_time(&s, 200), Ok(5), "equal times: the latest");
        assert_eq!(snapshot_at_time(&s, 299), Ok(5));
        assert_eq!(snapshot_at_time(&s, 300), Ok(6));
        assert_eq!(snapshot_at_time(&s, i64::MAX), Ok(6));
        assert_eq!(
            snapshot_at_time(&s, 99),
            Err(TravelError::BeforeEarliest {
                at_millis: 99,
                earliest_id: 3,
                earliest_millis: 100
            })
        );
        assert_eq!(snapshot_at_time(&[], 1), Err(TravelError::NoSnapshots));
        assert_eq!(snapshot_at_time(&[(1, 5)], 5), Ok(1));
        // A clock that stepped back: still the latest id committed at or before the time.
        assert_eq!(
            snapshot_at_time(&[(1, 100), (2, 300), (3, 200)], 250),
            Ok(3)
        );
        assert_eq!(
            snapshot_at_time(&[(1, 100), (2, 300), (3, 200)], 150),
            Ok(1)
        );
        let msg = snapshot_at_time(&[(3, 0)], -1).unwrap_err().to_string();
        assert_eq!(
            msg,
            "no snapshot was committed at or before 1969-12-31 23:59:59.999 UTC; the earliest \
             retained snapshot, 3, was committed at 1970-01-01 00:00:00.000 UTC"
        );
    }

    fn schema() -> TableSchema {
        TableSchema {
            id: 0,
            fields: vec![DataField::new(
                0,
                "id",
                PaimonType::new(TypeKind::BigInt, false),
            )],
            highest_field_id: 0,
            partition_keys: vec![],
            primary_keys: vec!["id".into()],
            options: [("bucket".to_owned(), "1".to_owned())].into(),
            comment: None,
            time_millis: 0,
        }
    }

    fn snapshot(id: i64, time_millis: i64) -> Snapshot {
        Snapshot {
            version: Some(3),
            id,
            schema_id: 0,
            base_manifest_list: format!("manifest-list-{id}-0"),
            base_manifest_list_size: None,
            delta_manifest_list: format!("manifest-list-{id}-1"),
            delta_manifest_list_size: None,
            changelog_manifest_list: None,
            changelog_manifest_list_size: None,
            index_manifest: None,
            commit_user: "test".into(),
            commit_identifier: id,
            commit_kind: CommitKind::Append,
            time_millis,
            total_record_count: Some(0),
            delta_record_count: Some(0),
            changelog_record_count: None,
            watermark: None,
            statistics: None,
            properties: None,
            next_row_id: None,
            uuid: None,
            writer_version: None,
            unflushed: Default::default(),
        }
    }

    async fn table_with_clock(clock: Arc<ManualClock>) -> Table {
        let wh = crate::storage::testkit::warehouse(Some(clock)).await;
        wh.create_table("public", "t", schema()).await.unwrap()
    }

    async fn table() -> Table {
        table_with_clock(ManualClock::new(1_000)).await
    }

    /// Rows of `t` at `snapshot`.
    async fn rows_at(t: &Table, snapshot: &Snapshot) -> usize {
        crate::storage::testkit::batches_at(t, Some(snapshot), &[0])
            .await
            .iter()
            .map(RecordBatch::num_rows)
            .sum()
    }

    /// Commits through the real write path take their times from the warehouse's clock; each
    /// version reads its own rows.
    #[tokio::test]
    async fn travels_over_real_commits() {
        let clock = ManualClock::new(1_000);
        let t = table_with_clock(Arc::clone(&clock)).await;
        for (n, at) in [(1, 1_000), (2, 5_000), (3, 5_000)] {
            clock.set(at);
            let mut w = TableWrite::new(t.clone(), WriteMode::Insert).await.unwrap();
            let ids = Int64Array::from_iter_values([n]);
            let schema = arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new(
                "id",
                arrow::datatypes::DataType::Int64,
                false,
            )]);
            w.write(RecordBatch::try_new(Arc::new(schema), vec![Arc::new(ids)]).unwrap())
                .await
                .unwrap();
            assert_eq!(
                crate::storage::commit::commit_write(w).await.unwrap(),
                Some(n)
            );
        }
        for (at, id, rows) in [(1_000, 1, 1), (4_999, 1, 1), (5_000, 3, 3), (9_999, 3, 3)] {
            let s = t
                .resolve_version(&VersionSpec::TimestampMillis(at))
                .await
                .unwrap();
            assert_eq!((s.id, rows_at(&t, &s).await), (id, rows), "at {at}");
        }
        let s2 = t
            .resolve_version(&VersionSpec::SnapshotId(2))
            .await
            .unwrap();
        t.tags().create("two", &s2, 6_000).await.unwrap();
        let tagged = t
            .resolve_version(&VersionSpec::Tag("two".into()))
            .await
            .unwrap();
        assert_eq!(rows_at(&t, &tagged).await, 2);
    }

    fn version_error(e: StorageError) -> VersionError {
        match e {
            StorageError::Version(v) => v,
            e => panic!("not a version error: {e}"),
        }
    }

    #[tokio::test]
    async fn resolves_ids_tags_and_times() {
        let t = table().await;
        let at = |ms| {
            let t = t.clone();
            async move { t.resolve_version(&VersionSpec::TimestampMillis(ms)).await }
        };
        assert!(matches!(
            version_error(at(5).await.unwrap_err()),
            VersionError::NoSnapshotAtTime { earliest: None, .. }
        ));
        // Snapshots 1..=20 committed at 100, 200, 200, 400, ...: ids 2 and 3 share a time.
        let time = |id: i64| if id == 3 { 200 } else { id * 100 };
        for id in 1..=20 {
            assert!(t.snapshots().commit(&snapshot(id, time(id))).await.unwrap());
        }
        for (ms, id) in [
            (100, 1),
            (199, 1),
            (200, 3),
            (399, 3),
            (400, 4),
            (2_000, 20),
        ] {
            assert_eq!(at(ms).await.unwrap().id, id, "at {ms}");
        }
        assert_eq!(at(i64::MAX).await.unwrap().id, 20);
        let err = at(99).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "table public.t has no snapshot committed at or before 1970-01-01 00:00:00.099 UTC; \
             its earliest retained snapshot, 1, was committed at 1970-01-01 00:00:00.100 UTC"
        );

        assert_eq!(
            t.resolve_version(&VersionSpec::SnapshotId(7))
                .await
                .unwrap()
                .time_millis,
            700
        );
        let err = t
            .resolve_version(&VersionSpec::SnapshotId(21))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "snapshot 21 of table public.t does not exist (expired or never written); retained \
             snapshots are 1..20"
        );

        // A tag keeps its snapshot after the snapshot file is gone (expired).
        t.tags().create("v5", &snapshot(5, 500), 9).await.unwrap();
        t.io().delete(&t.snapshots().path_of(5)).await.unwrap();
        let tagged = t
            .resolve_version(&VersionSpec::Tag("v5".into()))
            .await
            .unwrap();
        assert_eq!((tagged.id, tagged.time_millis), (5, 500));
        let err = t
            .resolve_version(&VersionSpec::Tag("nope".into()))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "tag 'nope' of table public.t does not exist; its tags are: v5"
        );
        assert!(matches!(
            version_error(
                t.resolve_version(&VersionSpec::SnapshotId(5))
                    .await
                    .unwrap_err()
            ),
            VersionError::SnapshotNotFound {
                id: 5,
                retained: Some((1, 20)),
                ..
            }
        ));
        // The gap at 5 sends the time search to the listing; it still finds the right ones.
        for (ms, id) in [(450, 4), (500, 4), (650, 6), (2_000, 20)] {
            assert_eq!(at(ms).await.unwrap().id, id, "at {ms} with a gap");
        }
        // Expired from the front: the earliest retained is the boundary.
        for id in 1..=3 {
            t.io().delete(&t.snapshots().path_of(id)).await.unwrap();
        }
        assert!(matches!(
            version_error(at(399).await.unwrap_err()),
            VersionError::NoSnapshotAtTime {
                earliest: Some((4, 400)),
                ..
            }
        ));
        assert_eq!(at(400).await.unwrap().id, 4);
    }
}
