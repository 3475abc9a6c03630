//! Rollback: a table made to end at an earlier snapshot again (Paimon's `rollback_to`
//! procedure, `RollbackHelper`), its later snapshots and their tags deleted.
//!
//! Paimon moves the `LATEST` hint to the target first, deletes the later snapshot files newest
//! first (so an interrupted rollback leaves a shorter but consistent history), deletes tags of
//! later snapshots, and — when the target came from a tag whose snapshot has expired — writes
//! the tag's snapshot back as `snapshot-<id>` and points `EARLIEST` at it. Current Paimon leaves
//! the later snapshots' files to orphan cleaning; tarn deletes the data, changelog and manifest
//! files that only the deleted snapshots referenced (as older Paimon did), with the same
//! keep-rules as expiry: nothing live in a kept snapshot or tag, nothing while a running read of
//! this process pins a deleted snapshot.
//!
//! Tags of later snapshots are deleted only when asked (`force`): they are named versions
//! someone wanted kept. Snapshot ids are reused by the next commit, so whatever this process
//! keeps by snapshot id (the live files, expiry's memo) is invalidated; the commit lock is held
//! throughout, so no commit of this process interleaves.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::storage::StorageError;
use crate::storage::commit::committer::{self, CommitMessage, Step};
use crate::storage::maintenance::expire::{self, FileKey, FileRef, Replay};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::meta::time_travel::VersionError;
use crate::storage::spec::manifest::FileKind;

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollbackReport {
    /// The snapshot the table now ends at.
    pub target: i64,
    /// Snapshot files deleted (the ids above the target).
    pub snapshots_deleted: usize,
    /// Tags of later snapshots deleted (only with `force`).
    pub tags_deleted: Vec<String>,
    /// The target's snapshot file had expired and was written back from its tag.
    pub snapshot_restored: bool,
    pub data_files_deleted: usize,
    pub changelog_files_deleted: usize,
    pub manifests_deleted: usize,
    /// Index files (deletion vectors) only deleted snapshots listed.
    pub index_files_deleted: usize,
    /// A running read pins a deleted snapshot: no file was deleted (`remove_orphan_files`
    /// collects them later).
    pub files_kept_for_pins: bool,
}

/// Rolls `table` back to `target` (a retained snapshot, or a tag's snapshot). Fails with
/// [`StorageError::Unsupported`] ("... use force => true ...") when tags of later snapshots
/// would be deleted and `force` is false.
pub async fn rollback_to(
    table: &Table,
    target: &Snapshot,
    force: bool,
) -> Result<RollbackReport, StorageError> {
    if let Some(log) = table
        .state::<crate::storage::commit::state::CommitState>()
        .log
        .clone()
    {
        // Commits waiting in the log are later than every snapshot: into the table first, so
        // the rollback removes them with the rest (and a restart does not replay them).
        crate::storage::commit::logged::flush_table(&log, table).await?;
    }
    let report = committer::commit(table, &mut Rollback { target, force }).await;
    // The table's current snapshot may be one the rollback deleted.
    table
        .state::<crate::storage::lsm::unflushed::UnflushedState>()
        .forget_current();
    report
}

/// A rollback, as a commit: under the commit lock, it publishes no snapshot but removes the
/// later ones.
struct Rollback<'a> {
    target: &'a Snapshot,
    force: bool,
}

impl CommitMessage for Rollback<'_> {
    type Output = RollbackReport;

    async fn prepare(
        &mut self,
        table: &Table,
        _latest: Option<&Snapshot>,
        _identifier: i64,
    ) -> Result<Step<RollbackReport>, StorageError> {
        roll_back(table, self.target, self.force)
            .await
            .map(Step::Finish)
    }

    fn published(&mut self, _table: &Table, _snapshot: &Snapshot) -> RollbackReport {
        unreachable!("a rollback never publishes a snapshot")
    }
}

/// [`rollback_to`] under the commit lock.
async fn roll_back(
    table: &Table,
    target: &Snapshot,
    force: bool,
) -> Result<RollbackReport, StorageError> {
    let shared = Arc::clone(table.shared());
    let memo = table.state::<expire::ExpireMemo>();
    let _expire = memo.lock.lock().await;
    let snapshots = table.snapshots();
    let latest = snapshots.latest_id().await?;
    let earliest = snapshots.earliest_id().await?;
    let existing = snapshots.get(target.id).await?;
    if let Some(s) = &existing
        && !same_version(s, target)
    {
        return Err(StorageError::Unsupported(format!(
            "cannot roll table {} back: snapshot {} is not the version asked for (it was \
             rewritten after a rollback)",
            table.qualified_name(),
            target.id
        )));
    }
    if existing.is_none() && latest.is_some_and(|l| target.id > l) {
        return Err(VersionError::SnapshotNotFound {
            table: table.qualified_name(),
            id: target.id,
            retained: earliest.zip(latest),
        }
        .into());
    }
    let tags = table.tags().list().await?;
    let (later_tags, kept_tags): (Vec<_>, Vec<_>) =
        tags.into_iter().partition(|t| t.snapshot.id > target.id);
    if !later_tags.is_empty() && !force {
        let names: Vec<String> = later_tags.iter().map(|t| format!("'{}'", t.name)).collect();
        return Err(StorageError::Unsupported(format!(
            "rolling table {} back to snapshot {} would delete tags {} of later snapshots; use \
             force => true to delete them",
            table.qualified_name(),
            target.id,
            names.join(", ")
        )));
    }

    memo.forget_ids();
    let first_deleted = earliest.map_or(target.id + 1, |e| e.max(target.id + 1));
    let mut deleted: Vec<Snapshot> = Vec::new();
    if let Some(latest) = latest {
        for id in (first_deleted..=latest).rev() {
            if let Some(s) = snapshots.get(id).await? {
                deleted.push(s);
            }
        }
    }
    // The snapshots that stay, ascending, the target last (a tag's copy when it expired).
    let mut kept: Vec<Arc<Snapshot>> = Vec::new();
    if let Some(earliest) = earliest {
        for id in earliest..target.id {
            if let Some(s) = memo.snapshot(table, id).await? {
                kept.push(s);
            }
        }
    }
    kept.push(Arc::new(target.clone()));
    let kept_tag_snapshots: Vec<Arc<Snapshot>> = kept_tags
        .into_iter()
        .map(|t| Arc::new(t.snapshot))
        .collect();
    let plan = plan_deletions(table, &deleted, &kept, &kept_tag_snapshots).await?;

    // Metadata: the target back if it expired, LATEST first, later snapshots newest first.
    let mut report = RollbackReport {
        target: target.id,
        ..RollbackReport::default()
    };
    if existing.is_none() {
        if !table
            .io()
            .write_new(&snapshots.path_of(target.id), target.to_json())
            .await?
        {
            return Err(StorageError::CommitConflict(format!(
                "snapshot {} of table {} was written concurrently with a rollback",
                target.id,
                table.qualified_name()
            )));
        }
        report.snapshot_restored = true;
    }
    hint(snapshots.write_latest_hint(target.id).await, "LATEST");
    for s in &deleted {
        snapshots.delete(s.id).await?;
    }
    report.snapshots_deleted = deleted.len();
    if report.snapshot_restored {
        hint(snapshots.write_earliest_hint(target.id).await, "EARLIEST");
    }
    for tag in later_tags.iter().rev() {
        table.tags().delete(&tag.name).await?;
        report.tags_deleted.push(tag.name.clone());
    }
    report.tags_deleted.sort();
    table
        .shared()
        .lsm_caches()
        .live_files
        .remove(crate::storage::lsm::caches::LATEST);
    memo.forget_ids();

    if shared.max_pinned().is_some_and(|p| p > target.id) {
        report.files_kept_for_pins = true;
        return Ok(report);
    }
    report.data_files_deleted = expire::delete_data_files(table, plan.data.into_values()).await?;
    report.changelog_files_deleted =
        expire::delete_data_files(table, plan.changelog.into_values()).await?;
    report.manifests_deleted = expire::delete_manifests(table, plan.manifests).await?;
    report.index_files_deleted = expire::delete_index_files(table, plan.index_files).await?;
    tracing::info!(
        table = %table.qualified_name(),
        target = target.id,
        snapshots = report.snapshots_deleted,
        tags = ?report.tags_deleted,
        "rolled back"
    );
    Ok(report)
}

fn hint(result: Result<(), StorageError>, name: &str) {
    if let Err(e) = result {
        tracing::warn!(error = %e, hint = name, "could not write a snapshot hint");
    }
}

/// The same snapshot: a tag's copy carries the snapshot's manifest lists.
fn same_version(a: &Snapshot, b: &Snapshot) -> bool {
    a.id == b.id
        && a.base_manifest_list == b.base_manifest_list
        && a.delta_manifest_list == b.delta_manifest_list
}

/// Files only the deleted snapshots reference.
struct Plan {
    data: HashMap<FileKey, FileRef>,
    changelog: HashMap<FileKey, FileRef>,
    manifests: BTreeSet<String>,
    index_files: BTreeSet<String>,
}

/// `deleted`: newest first; `kept`: the snapshots that stay (ascending, contiguous), or the
/// target alone when it comes from a tag; `tags`: the tags that stay.
async fn plan_deletions(
    table: &Table,
    deleted: &[Snapshot],
    kept: &[Arc<Snapshot>],
    tags: &[Arc<Snapshot>],
) -> Result<Plan, StorageError> {
    let tagged_changelogs: HashSet<&str> = tags
        .iter()
        .filter_map(|t| t.changelog_manifest_list.as_deref())
        .collect();
    // Everything live in a deleted snapshot: live in the oldest (which holds files of expired
    // snapshots after a tag's when the target comes from a tag), or added by a later one.
    let mut data: HashMap<FileKey, FileRef> = match deleted.last() {
        Some(oldest) => {
            let mut replay = Replay::default();
            for list in [&oldest.base_manifest_list, &oldest.delta_manifest_list] {
                for manifest in expire::entries_of_list(table, list, true).await? {
                    for e in manifest.iter() {
                        replay.apply(e, None);
                    }
                }
            }
            replay.live_files()
        }
        None => HashMap::new(),
    };
    let mut changelog: HashMap<FileKey, FileRef> = HashMap::new();
    for s in deleted {
        for manifest in expire::entries_of_list(table, &s.delta_manifest_list, true).await? {
            for e in manifest.iter().filter(|e| e.kind == FileKind::Add) {
                data.insert(expire::key_of(e), FileRef::of(e));
            }
        }
        if let Some(list) = &s.changelog_manifest_list
            && !tagged_changelogs.contains(list.as_str())
        {
            for manifest in expire::entries_of_list(table, list, true).await? {
                for e in manifest.iter().filter(|e| e.kind == FileKind::Add) {
                    changelog.insert(expire::key_of(e), FileRef::of(e));
                }
            }
        }
    }
    if !data.is_empty() || !changelog.is_empty() {
        // Live in some kept snapshot: live in the first or in the target, or added by a kept
        // snapshot's delta; or live in a kept tag.
        let memo = table.state::<expire::ExpireMemo>();
        let first = kept.first().into_iter();
        for s in first.chain(kept.last()).chain(tags) {
            let live = expire::live_among(table, s, &data, &changelog).await?;
            data.retain(|k, _| !live.contains(k));
            changelog.retain(|k, _| !live.contains(k));
        }
        for s in kept.iter().skip(1) {
            for key in &memo.refs(table, s).await?.added {
                data.remove(key);
                changelog.remove(key);
            }
        }
    }
    let index_files = crate::storage::lsm::deletions::unreferenced_index_files(
        table,
        deleted.iter(),
        kept.iter().chain(tags),
    )
    .await?;
    let manifests =
        expire::unreferenced_manifests(table, deleted.iter(), kept.iter().chain(tags)).await?;
    Ok(Plan {
        data,
        changelog,
        manifests,
        index_files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testkit::{self, START, files, referenced, rows_at, snapshot, upsert};
    use crate::storage::write::table_write::WriteMode;

    /// Snapshots 1..=5, each adding one row; tag `three` on snapshot 3.
    async fn history(t: &Table) {
        for i in 1..=5 {
            upsert(t, &[(i, i * 10, if i % 2 == 0 { "a" } else { "b" })]).await;
            if i == 3 {
                t.tags()
                    .create("three", &snapshot(t, 3).await, START)
                    .await
                    .unwrap();
            }
        }
    }

    #[tokio::test]
    async fn rolls_back_and_commits_again() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let two = snapshot(&t, 2).await;
        let rows = rows_at(&t, &two).await;
        let err = rollback_to(&t, &two, false).await.unwrap_err();
        assert!(
            matches!(&err, StorageError::Unsupported(m) if m.contains("'three'") && m.contains("force => true")),
            "{err}"
        );
        assert_eq!(
            t.snapshots().list_ids().await.unwrap(),
            [1, 2, 3, 4, 5],
            "nothing done"
        );

        let report = rollback_to(&t, &two, true).await.unwrap();
        assert_eq!(report.snapshots_deleted, 3);
        assert_eq!(report.tags_deleted, ["three"]);
        assert_eq!(report.data_files_deleted, 3);
        assert!(report.manifests_deleted > 0);
        assert!(!report.snapshot_restored && !report.files_kept_for_pins);
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [1, 2]);
        assert_eq!(t.snapshots().latest_id().await.unwrap(), Some(2));
        assert!(t.tags().names().await.unwrap().is_empty());
        let latest = t.snapshots().latest().await.unwrap().unwrap();
        assert_eq!(rows_at(&t, &latest).await, rows);
        let versions = [snapshot(&t, 1).await, two.clone()];
        assert_eq!(files(&t).await, referenced(&t, &versions).await);

        // Key 3 was only in the rolled-back snapshots: inserting it again is no duplicate.
        assert_eq!(
            testkit::write(&t, WriteMode::Insert, &[(3, 33, "b")]).await,
            3
        );
        let mut want = rows;
        want.insert(("b".into(), 3), 33);
        let latest = t.snapshots().latest().await.unwrap().unwrap();
        assert_eq!(rows_at(&t, &latest).await, want);
    }

    #[tokio::test]
    async fn rolls_back_to_a_tag_whose_snapshot_expired() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let tag = t.tags().get("three").await.unwrap().unwrap();
        let rows = rows_at(&t, &tag.snapshot).await;
        let cfg = crate::storage::maintenance::expire::ExpireConfig {
            retain_min: 1,
            retain_max: 1,
            ..Default::default()
        };
        crate::storage::maintenance::expire::expire_snapshots(&t, &cfg)
            .await
            .unwrap();
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [5]);

        let report = rollback_to(&t, &tag.snapshot, false).await.unwrap();
        assert!(report.snapshot_restored);
        assert_eq!(
            (report.snapshots_deleted, report.data_files_deleted),
            (1, 2)
        );
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [3]);
        assert_eq!(t.snapshots().earliest_id().await.unwrap(), Some(3));
        assert_eq!(rows_at(&t, &snapshot(&t, 3).await).await, rows);
        assert_eq!(
            files(&t).await,
            referenced(&t, std::slice::from_ref(&tag.snapshot)).await
        );
        assert_eq!(upsert(&t, &[(9, 90, "a")]).await, 4);
        assert_eq!(rows_at(&t, &snapshot(&t, 4).await).await.len(), 4);
    }

    #[tokio::test]
    async fn files_of_pinned_snapshots_stay() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let before = files(&t).await;
        let pin = t.pin_snapshot(4).await.unwrap().unwrap();
        let report = rollback_to(&t, &snapshot(&t, 2).await, true).await.unwrap();
        assert!(report.files_kept_for_pins);
        assert_eq!(report.data_files_deleted, 0);
        assert_eq!(files(&t).await, before);
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [1, 2]);
        drop(pin);
        let err = rollback_to(&t, &snapshot(&t, 1).await.clone(), false).await;
        assert_eq!(err.unwrap().snapshots_deleted, 1);
    }

    #[tokio::test]
    async fn refuses_unknown_targets() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let mut later = snapshot(&t, 5).await;
        later.id = 9;
        assert!(matches!(
            rollback_to(&t, &later, true).await,
            Err(StorageError::Version(VersionError::SnapshotNotFound {
                id: 9,
                ..
            }))
        ));
        let mut other = snapshot(&t, 5).await;
        other.id = 2;
        assert!(matches!(
            rollback_to(&t, &other, true).await,
            Err(StorageError::Unsupported(_))
        ));
    }
}
