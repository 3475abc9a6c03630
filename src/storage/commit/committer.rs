//! The commit protocol: new files become visible as one snapshot, atomically, exactly once.
//!
//! 1. Under the table's in-process commit lock, read the latest snapshot.
//! 2. Check what committed since the write began: a commit of ours with the same identifier
//!    means it is done already (exactly-once); files another writer added to the same buckets
//!    are checked for duplicate keys (INSERT) and for sequence numbers that could outrank ours
//!    (then the commit fails with 40001 and leaves no trace).
//! 3. Write a manifest with the new entries, merge small manifests, write the base and delta
//!    manifest lists, then `snapshot-N+1` with create-if-absent semantics (durable on a local
//!    warehouse before this returns).
//! 4. If another writer took N+1, delete what step 3 wrote and go back to 1.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::storage::StorageError;
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::memrun::WriteMode;
use crate::storage::meta::snapshot::{CommitKind, SNAPSHOT_VERSION, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::{
    self, DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats,
};
use crate::storage::spec::schema::options;
use crate::storage::write::table_write::{NewFile, TableWrite};

/// Paimon's `manifest.merge-min-count` default: small manifests merged once this many pile up.
pub const MANIFEST_MERGE_MIN_COUNT: usize = 30;
/// Paimon's `manifest.target-file-size` default.
pub const MANIFEST_TARGET_SIZE: i64 = 8 * 1024 * 1024;
/// Entries per manifest file written by a merge (keeps files near the target size).
const ENTRIES_PER_MANIFEST: usize = 40_000;

/// Commits everything `write` holds as one APPEND snapshot; returns its id.
///
/// Under the commit lock: read what committed since the write's snapshot, check it (exactly
/// once; first committer wins on keys; sequence numbers of other writers that could outrank
/// files already written), write the in-memory runs with sequence numbers above everything
/// committed, then `snapshot-N+1`; on a lost race, check again and retry.
pub(crate) async fn commit_txn(write: &mut TableWrite) -> Result<i64, StorageError> {
    let table = write.table().clone();
    let commit = table.state::<crate::storage::commit::state::CommitState>();
    let _lock = commit.lock.lock().await;
    let identifier = commit.next_commit_identifier();
    check_base(&table, write).await?;
    let touched = write.touched();
    let mut checked = write.base().map_or(0, |s| s.id);
    let mut since_all: SinceFiles = HashMap::new();
    let mut runs_written = false;
    loop {
        let latest = table.snapshots().latest().await?;
        let latest_id = latest.as_ref().map_or(0, |s| s.id);
        if latest_id > checked {
            let min_seq = write.written_min_sequences();
            let mut since: SinceFiles = HashMap::new();
            for id in checked + 1..=latest_id {
                let Some(s) = table.snapshots().get(id).await? else {
                    return Err(StorageError::CommitConflict(format!(
                        "snapshot {id} of {} expired while this transaction ran",
                        table.qualified_name()
                    )));
                };
                if s.commit_user == commit.commit_user && s.commit_identifier == identifier {
                    count_committed(&table, &write.new_files());
                    return Ok(id);
                }
                if s.commit_kind == CommitKind::Compact {
                    // Rows moved between files: nothing new to check against.
                    continue;
                }
                for meta in table.read_manifest_list(&s.delta_manifest_list).await? {
                    for e in table.read_manifest(&meta.file_name).await?.iter() {
                        let at = (e.partition.clone(), e.bucket);
                        if e.kind != FileKind::Add || !touched.contains(&at) {
                            continue;
                        }
                        if s.commit_user != commit.commit_user
                            && min_seq
                                .get(&at)
                                .is_some_and(|m| e.file.max_sequence_number >= *m)
                        {
                            return Err(StorageError::CommitConflict(format!(
                                "another writer ({}) committed snapshot {id} to the same bucket \
                                 of {} with newer sequence numbers",
                                s.commit_user,
                                table.qualified_name()
                            )));
                        }
                        since.entry(at).or_default().push((id, e.file.clone()));
                    }
                }
            }
            if !since.is_empty() {
                write.check_since(&since).await?;
            }
            for (at, files) in since {
                since_all.entry(at).or_default().extend(files);
            }
            checked = latest_id;
        }
        if !runs_written {
            // The changelog holds the transaction's runs as written, before they are folded.
            let changelog = crate::storage::write::changelog::Pending::new(
                &table,
                write.new_files(),
                [write.mem_runs()],
            )?;
            write.write_runs(&since_all).await?;
            let files = changelog.write(&table, &write.new_files()).await?;
            write.add_changelog(files);
            runs_written = true;
        }
        let entries = added_entries(&write.new_files());
        // Dynamic-bucket tables: the bucket index rebased onto `latest`.
        if let Some(s) = crate::storage::write::dynamic_bucket::commit_entries_hashed(
            &table,
            latest.as_ref(),
            entries,
            added_entries(write.changelog_files()),
            identifier,
            &[write.dynamic_hashes()],
        )
        .await?
        {
            count_committed(&table, &write.new_files());
            crate::storage::maintenance::hooks::after_commit(&table, s.id);
            return Ok(s.id);
        }
    }
}

/// Counts the bytes of the data files a user commit added (`CommitState::bytes_committed`,
/// the denominator of the table's write amplification; changelog files are not counted).
fn count_committed(table: &Table, files: &[NewFile]) {
    let bytes = files.iter().map(|f| f.meta.file_size).sum();
    table
        .state::<crate::storage::commit::state::CommitState>()
        .count_committed(bytes);
}

/// ADD entries of new files.
pub(in crate::storage) fn added_entries(files: &[NewFile]) -> Vec<ManifestEntry> {
    files
        .iter()
        .map(|f| ManifestEntry {
            kind: FileKind::Add,
            partition: f.partition.clone(),
            bucket: f.bucket,
            total_buckets: f.total_buckets,
            file: f.meta.clone(),
        })
        .collect()
}

/// Removes every row of the table with one OVERWRITE snapshot (TRUNCATE). Returns the new
/// snapshot id, or `None` if the table had no snapshot.
pub async fn truncate(table: &Table) -> Result<Option<i64>, StorageError> {
    crate::storage::write::restriction::check_writable(table)?;
    let commit = table.state::<crate::storage::commit::state::CommitState>();
    let _lock = commit.lock.lock().await;
    let identifier = commit.next_commit_identifier();
    loop {
        let Some(latest) = table.snapshots().latest().await? else {
            return Ok(None);
        };
        let mut plan = crate::storage::read::scan::ScanPlan::default();
        let live = table
            .live_entries(
                &latest,
                &crate::storage::read::scan::ScanFilter::default(),
                &mut plan,
            )
            .await?;
        let entries = live
            .into_iter()
            .map(|mut e| {
                e.kind = FileKind::Delete;
                e
            })
            .collect();
        // No changelog, as Paimon's overwrite commits; no index files (the deletion vectors
        // of files no longer live).
        if let Some(s) = commit_entries_indexed(
            table,
            Some(&latest),
            entries,
            Vec::new(),
            CommitKind::Overwrite,
            identifier,
            None,
        )
        .await?
        {
            crate::storage::maintenance::hooks::after_commit(table, s.id);
            return Ok(Some(s.id));
        }
    }
}

/// Writes manifests, manifest lists and `snapshot-N+1` on top of `latest` (`changelog`: the
/// changelog files' entries, see `changelog.rs`). `None` when another writer committed N+1
/// first (everything written here is removed again).
pub(in crate::storage) async fn commit_entries(
    table: &Table,
    latest: Option<&Snapshot>,
    entries: Vec<ManifestEntry>,
    changelog: Vec<ManifestEntry>,
    kind: CommitKind,
    identifier: i64,
) -> Result<Option<Snapshot>, StorageError> {
    let index_manifest = latest.and_then(|s| s.index_manifest.clone());
    commit_entries_indexed(
        table,
        latest,
        entries,
        changelog,
        kind,
        identifier,
        index_manifest,
    )
    .await
}

/// [`commit_entries`] with the new snapshot's index manifest given (commits that change
/// deletion vectors or drop them; the others carry `latest`'s over).
pub(in crate::storage) async fn commit_entries_indexed(
    table: &Table,
    latest: Option<&Snapshot>,
    entries: Vec<ManifestEntry>,
    changelog: Vec<ManifestEntry>,
    kind: CommitKind,
    identifier: i64,
    index_manifest: Option<String>,
) -> Result<Option<Snapshot>, StorageError> {
    let mut written: Vec<String> = Vec::new();
    let head = Head {
        kind,
        identifier,
        index_manifest,
    };
    let result = write_snapshot(table, latest, entries, changelog, head, &mut written).await;
    match result {
        Ok(Some(s)) => Ok(Some(s)),
        other => {
            for name in written {
                let _ = table.io().delete(&table.manifest_path(&name)).await;
            }
            other
        }
    }
}

/// What a new snapshot says besides its files.
struct Head {
    kind: CommitKind,
    identifier: i64,
    index_manifest: Option<String>,
}

async fn write_snapshot(
    table: &Table,
    latest: Option<&Snapshot>,
    entries: Vec<ManifestEntry>,
    changelog: Vec<ManifestEntry>,
    head: Head,
    written: &mut Vec<String>,
) -> Result<Option<Snapshot>, StorageError> {
    let Head {
        kind,
        identifier,
        index_manifest,
    } = head;
    let mut base: Vec<ManifestFileMeta> = Vec::new();
    if let Some(s) = latest {
        base.extend(table.read_manifest_list(&s.base_manifest_list).await?);
        base.extend(table.read_manifest_list(&s.delta_manifest_list).await?);
    }
    let base = merge_manifests(table, base, written).await?;
    let delta_rows: i64 = entries
        .iter()
        .map(|e| match e.kind {
            FileKind::Add => e.file.row_count,
            FileKind::Delete => -e.file.row_count,
        })
        .sum();
    let mut delta = Vec::new();
    if !entries.is_empty() {
        delta.push(write_manifest(table, &entries, written).await?);
    }
    let prefix = uuid::Uuid::new_v4();
    let base_name = format!("manifest-list-{prefix}-0");
    let delta_name = format!("manifest-list-{prefix}-1");
    let base_bytes = manifest::write_manifest_list(&base)?;
    let delta_bytes = manifest::write_manifest_list(&delta)?;
    let (base_size, delta_size) = (base_bytes.len() as i64, delta_bytes.len() as i64);
    written.push(base_name.clone());
    written.push(delta_name.clone());
    let (base_path, delta_path) = (
        table.manifest_path(&base_name),
        table.manifest_path(&delta_name),
    );
    futures::try_join!(
        table.io().write(&base_path, base_bytes),
        table.io().write(&delta_path, delta_bytes)
    )?;
    let changelog_name = format!("manifest-list-{prefix}-2");
    let changelog = crate::storage::write::changelog::write_manifest_list(
        table,
        &changelog,
        changelog_name,
        written,
    )
    .await?;
    let snapshot = Snapshot {
        version: Some(SNAPSHOT_VERSION),
        id: latest.map_or(1, |s| s.id + 1),
        schema_id: table.schema().id,
        base_manifest_list: base_name,
        base_manifest_list_size: Some(base_size),
        delta_manifest_list: delta_name,
        delta_manifest_list_size: Some(delta_size),
        changelog_manifest_list: changelog.as_ref().map(|c| c.name.clone()),
        changelog_manifest_list_size: changelog.as_ref().map(|c| c.size),
        index_manifest,
        commit_user: table
            .state::<crate::storage::commit::state::CommitState>()
            .commit_user
            .clone(),
        commit_identifier: identifier,
        commit_kind: kind,
        time_millis: table.clock().now_millis(),
        total_record_count: Some(
            latest.and_then(|s| s.total_record_count).unwrap_or(0) + delta_rows,
        ),
        delta_record_count: Some(delta_rows),
        changelog_record_count: Some(changelog.as_ref().map_or(0, |c| c.rows)),
        watermark: latest.and_then(|s| s.watermark),
        statistics: None,
        properties: None,
        next_row_id: latest.and_then(|s| s.next_row_id),
        uuid: Some(uuid::Uuid::new_v4().to_string()),
        writer_version: Some(format!("tarn-{}", env!("CARGO_PKG_VERSION"))),
    };
    if table.snapshots().commit(&snapshot).await? {
        Ok(Some(snapshot))
    } else {
        Ok(None)
    }
}

/// Keeps the number of manifests a scan reads bounded however many commits the table has.
///
/// Minor merge (Paimon's): once [`MANIFEST_MERGE_MIN_COUNT`] small manifests have piled up at
/// the end of the list, their entries are replayed (an ADD and a later DELETE of one file cancel;
/// a DELETE of a file added earlier stays) and rewritten as few full-size manifests, appended in
/// the same place so the order of ADDs and DELETEs is kept. Full merge: when the list still grows
/// past twice that, every manifest is replayed into the live files and rewritten.
async fn merge_manifests(
    table: &Table,
    metas: Vec<ManifestFileMeta>,
    written: &mut Vec<String>,
) -> Result<Vec<ManifestFileMeta>, StorageError> {
    let schema = table.schema();
    let min_count = schema
        .option(options::MANIFEST_MERGE_MIN_COUNT)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(MANIFEST_MERGE_MIN_COUNT)
        .max(2);
    let target = schema
        .option(options::MANIFEST_TARGET_FILE_SIZE)
        .and_then(crate::storage::write::table_write::parse_size)
        .map_or(MANIFEST_TARGET_SIZE, |s| s as i64);
    let suffix = metas
        .iter()
        .rev()
        .take_while(|m| m.file_size < target / 2)
        .count();
    let full = metas.len() >= 2 * min_count;
    if suffix < min_count && !full {
        return Ok(metas);
    }
    let split = if full { 0 } else { metas.len() - suffix };
    let mut kept: Vec<ManifestFileMeta> = metas[..split].to_vec();
    let mut out: Vec<Option<ManifestEntry>> = Vec::new();
    let mut added: HashMap<crate::storage::read::scan::FileId, usize> = HashMap::new();
    for m in &metas[split..] {
        for e in table.read_manifest(&m.file_name).await?.iter() {
            let id = crate::storage::read::scan::file_id(e);
            match e.kind {
                FileKind::Add => {
                    added.insert(id, out.len());
                    out.push(Some(e.clone()));
                }
                FileKind::Delete => match added.remove(&id) {
                    Some(i) => out[i] = None,
                    // In a full merge nothing older exists: an unmatched delete is dropped.
                    None if full => {}
                    None => out.push(Some(e.clone())),
                },
            }
        }
    }
    let merged: Vec<ManifestEntry> = out.into_iter().flatten().collect();
    for chunk in merged.chunks(ENTRIES_PER_MANIFEST) {
        kept.push(write_manifest(table, chunk, written).await?);
    }
    Ok(kept)
}

/// Writes one manifest file of `entries` and describes it for a manifest list.
pub(in crate::storage) async fn write_manifest(
    table: &Table,
    entries: &[ManifestEntry],
    written: &mut Vec<String>,
) -> Result<ManifestFileMeta, StorageError> {
    let name = format!("manifest-{}-0", uuid::Uuid::new_v4());
    let bytes = manifest::write_manifest(entries)?;
    let size = bytes.len() as i64;
    written.push(name.clone());
    table.io().write(&table.manifest_path(&name), bytes).await?;
    table
        .shared()
        .manifests
        .put(&name, Arc::new(entries.to_vec()), entries.len());
    let types = table.partition_types();
    let mut min: Vec<Datum> = Vec::new();
    let mut max: Vec<Datum> = Vec::new();
    let mut nulls: Vec<i64> = vec![0; types.len()];
    let mut seen: HashSet<&[u8]> = HashSet::new();
    for e in entries {
        if !seen.insert(&e.partition) {
            continue;
        }
        let values = binary_row::deserialize(&e.partition, &types)?;
        for (i, v) in values.into_iter().enumerate().take(types.len()) {
            if v.is_null() {
                nulls[i] += 1;
                continue;
            }
            if min.len() <= i {
                min.resize(types.len(), Datum::Null);
                max.resize(types.len(), Datum::Null);
            }
            if min[i].is_null() || v.compare(&min[i]).is_lt() {
                min[i] = v.clone();
            }
            if max[i].is_null() || v.compare(&max[i]).is_gt() {
                max[i] = v;
            }
        }
    }
    min.resize(types.len(), Datum::Null);
    max.resize(types.len(), Datum::Null);
    let stat = |f: fn(&ManifestEntry) -> i32, pick: fn(i32, i32) -> i32| {
        entries.iter().map(f).reduce(pick)
    };
    Ok(ManifestFileMeta {
        file_name: name,
        file_size: size,
        num_added_files: entries.iter().filter(|e| e.kind == FileKind::Add).count() as i64,
        num_deleted_files: entries
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .count() as i64,
        partition_stats: SimpleStats {
            min_values: binary_row::serialize(&min, &types),
            max_values: binary_row::serialize(&max, &types),
            null_counts: Some(nulls.into_iter().map(Some).collect()),
        },
        schema_id: table.schema().id,
        min_bucket: stat(|e| e.bucket, i32::min),
        max_bucket: stat(|e| e.bucket, i32::max),
        min_level: stat(|e| e.file.level, i32::min),
        max_level: stat(|e| e.file.level, i32::max),
        min_row_id: None,
        max_row_id: None,
    })
}

/// A transaction waiting in its table's commit queue.
pub(crate) struct CommitRequest {
    write: TableWrite,
    done: tokio::sync::oneshot::Sender<Result<i64, StorageError>>,
}

impl std::fmt::Debug for CommitRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitRequest").finish_non_exhaustive()
    }
}

/// Group commit: queues `write`, then a committer takes the commit lock; whichever gets it
/// first commits every queued transaction in one snapshot (each one all-or-nothing: one that
/// conflicts is left out and gets its error). Returns once the snapshot holding `write` is
/// durable.
pub(crate) async fn commit_grouped(write: TableWrite) -> Result<i64, StorageError> {
    let table = write.table().clone();
    let commit = table.state::<crate::storage::commit::state::CommitState>();
    let (done, result) = tokio::sync::oneshot::channel();
    commit
        .queue
        .lock()
        .expect("commit queue lock")
        .push(CommitRequest { write, done });
    // The round runs in its own task: a client that cancels or disconnects while its
    // transaction leads a round must not abandon the others' commit halfway. A committer
    // that finds the queue empty (its request went in an earlier round) just lets go.
    tokio::spawn(async move {
        let _lock = commit.lock.lock().await;
        let round = std::mem::take(&mut *commit.queue.lock().expect("commit queue lock"));
        if !round.is_empty() {
            commit_round(&table, round).await;
        }
    });
    // Waiting for the answer, not for the lock: waiters answered by an earlier round never
    // queue behind the rounds that started since.
    answer(result.await)
}

fn answer(
    done: Result<Result<i64, StorageError>, tokio::sync::oneshot::error::RecvError>,
) -> Result<i64, StorageError> {
    done.map_err(|_| StorageError::format("the group commit ended without an answer"))?
}

/// Files added per bucket by the snapshots after `from` up to `to`, with their snapshot ids.
pub(crate) async fn added_since(
    table: &Table,
    from: i64,
    to: i64,
) -> Result<Vec<(i64, (Vec<u8>, i32), DataFileMeta)>, StorageError> {
    let mut out = Vec::new();
    for id in from + 1..=to {
        let Some(s) = table.snapshots().get(id).await? else {
            return Err(StorageError::CommitConflict(format!(
                "snapshot {id} of {} expired while this transaction ran",
                table.qualified_name()
            )));
        };
        if s.commit_kind == CommitKind::Compact {
            // Rows moved between files: nothing new to check against.
            continue;
        }
        for meta in table.read_manifest_list(&s.delta_manifest_list).await? {
            for e in table.read_manifest(&meta.file_name).await?.iter() {
                if e.kind == FileKind::Add {
                    out.push((id, (e.partition.clone(), e.bucket), e.file.clone()));
                }
            }
        }
    }
    Ok(out)
}

/// Fails when the write's base snapshot is no longer the table's (a rollback removed it, and
/// its id may have been committed again with other content): what committed since could not
/// be checked.
async fn check_base(table: &Table, write: &TableWrite) -> Result<(), StorageError> {
    let Some(base) = write.base() else {
        return Ok(());
    };
    let now = table.snapshots().get(base.id).await?;
    if now.is_some_and(|s| s.delta_manifest_list == base.delta_manifest_list) {
        return Ok(());
    }
    Err(StorageError::CommitConflict(format!(
        "snapshot {} of table {} was rolled back or expired while this transaction ran; run \
         it again",
        base.id,
        table.qualified_name()
    )))
}

/// Commits one round of queued transactions (under the commit lock).
async fn commit_round(table: &Table, round: Vec<CommitRequest>) {
    let _log = RoundLog(std::time::Instant::now(), round.len());
    let mut accepted: Vec<CommitRequest> = Vec::new();
    let mut result = round_checks(table, round, &mut accepted).await;
    if let Ok((latest, since_all)) = &mut result {
        match write_round(table, &accepted, latest.take(), since_all).await {
            Ok(id) => {
                for mut r in accepted {
                    r.write.set_committed();
                    let _ = r.done.send(Ok(id));
                }
                crate::storage::maintenance::hooks::after_commit(table, id);
                return;
            }
            Err(e) => {
                let message = e.to_string();
                let conflict = matches!(e, StorageError::CommitConflict(_));
                for r in accepted {
                    let _ = r.done.send(Err(if conflict {
                        StorageError::CommitConflict(message.clone())
                    } else {
                        StorageError::format(format!("group commit failed: {message}"))
                    }));
                }
                return;
            }
        }
    }
    if let Err(e) = result {
        let message = e.to_string();
        for r in accepted {
            let _ = r.done.send(Err(StorageError::format(format!(
                "group commit failed: {message}"
            ))));
        }
    }
}

/// Files added by commits since a transaction's snapshot, per bucket, with their snapshot ids.
pub(crate) type SinceFiles = HashMap<(Vec<u8>, i32), Vec<(i64, DataFileMeta)>>;

/// Logs a round's size and duration however it ends (`RUST_LOG=tarn=debug`).
struct RoundLog(std::time::Instant, usize);

impl Drop for RoundLog {
    fn drop(&mut self) {
        tracing::debug!(
            transactions = self.1,
            ms = self.0.elapsed().as_millis() as u64,
            "group commit round"
        );
    }
}

/// Checks each queued transaction against what committed since its snapshot and against the
/// transactions before it in the round; the ones that pass go to `accepted`, the others get
/// their error now. Returns the latest snapshot and every file added since the oldest base.
async fn round_checks(
    table: &Table,
    round: Vec<CommitRequest>,
    accepted: &mut Vec<CommitRequest>,
) -> Result<(Option<Snapshot>, SinceFiles), StorageError> {
    let latest = table.snapshots().latest().await?;
    let latest_id = latest.as_ref().map_or(0, |s| s.id);
    let oldest = round
        .iter()
        .map(|r| r.write.base().map_or(0, |s| s.id))
        .min()
        .unwrap_or(latest_id);
    let added = added_since(table, oldest, latest_id).await?;
    let mut since_all: SinceFiles = HashMap::new();
    for (id, at, f) in &added {
        since_all
            .entry(at.clone())
            .or_default()
            .push((*id, f.clone()));
    }
    let keys = RoundKeys::new(table)?;
    let mut written: HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>> = HashMap::new();
    // Dynamic-bucket tables: each transaction's keys must be in the buckets where the latest
    // index and the transactions before it in the round have them.
    let mut index = crate::storage::write::dynamic_bucket::IndexRebase::new(table, latest.as_ref());
    for r in round {
        let base = r.write.base().map_or(0, |s| s.id);
        let touched = r.write.touched();
        let mut since: SinceFiles = HashMap::new();
        for (id, at, f) in &added {
            if *id > base && touched.contains(at) {
                since.entry(at.clone()).or_default().push((*id, f.clone()));
            }
        }
        let checked = match check_base(table, &r.write).await {
            Err(e) => Err(e),
            Ok(()) if since.is_empty() => Ok(()),
            Ok(()) => r.write.check_since(&since).await,
        };
        let checked = checked.and_then(|()| keys.check_round(&r.write, &written));
        let checked = match checked {
            Ok(()) => index.add(&r.write.dynamic_hashes()).await,
            Err(e) => Err(e),
        };
        match checked {
            Ok(()) => {
                keys.add(&r.write, &mut written)?;
                accepted.push(r);
            }
            Err(e) => {
                let _ = r.done.send(Err(e));
            }
        }
    }
    Ok((latest, since_all))
}

/// Keys of a round's transactions, in one comparable encoding.
struct RoundKeys {
    encoder: KeyEncoder,
    key_types: Vec<crate::storage::spec::types::PaimonType>,
}

impl RoundKeys {
    fn new(table: &Table) -> Result<Self, StorageError> {
        Ok(Self {
            encoder: KeyEncoder::new(table)?,
            key_types: table.key_types(),
        })
    }

    fn rows(
        &self,
        run: &crate::storage::lsm::memrun::MemRun,
    ) -> Result<arrow::row::Rows, StorageError> {
        self.encoder.encode(&run.keys)
    }

    /// A key this transaction changed (other than blindly) that an earlier transaction of the
    /// round wrote: 23505 for an INSERT, 40001 otherwise.
    fn check_round(
        &self,
        write: &TableWrite,
        written: &HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        if self.encoder.is_empty() {
            return Ok(());
        }
        for run in write.mem_runs() {
            if run.mode == WriteMode::Upsert {
                continue;
            }
            let Some(theirs) = written.get(&(run.partition_bytes.clone(), run.bucket)) else {
                continue;
            };
            let rows = self.rows(run)?;
            if let Some(i) = rows.iter().position(|r| theirs.contains(r.as_ref())) {
                let key: Vec<Datum> = run
                    .keys
                    .iter()
                    .zip(&self.key_types)
                    .map(|(c, t)| Datum::from_array(c, i, t))
                    .collect::<Result<_, _>>()?;
                return Err(if run.mode == WriteMode::Insert {
                    crate::storage::write::table_write::duplicate_key_error(
                        write.table(),
                        &key,
                        &run.partition,
                    )
                } else {
                    StorageError::CommitConflict(format!(
                        "another transaction committed a change to the same row of {} first",
                        write.table().qualified_name()
                    ))
                });
            }
        }
        Ok(())
    }

    fn add(
        &self,
        write: &TableWrite,
        written: &mut HashMap<(Vec<u8>, i32), HashSet<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        if self.encoder.is_empty() {
            return Ok(());
        }
        for run in write.mem_runs() {
            let rows = self.rows(run)?;
            written
                .entry((run.partition_bytes.clone(), run.bucket))
                .or_default()
                .extend(rows.iter().map(|r| r.as_ref().to_vec()));
        }
        Ok(())
    }
}

/// Writes the accepted transactions' runs (one file per bucket, later transactions winning
/// on a key they share) and commits them as one APPEND snapshot.
async fn write_round(
    table: &Table,
    accepted: &[CommitRequest],
    latest: Option<Snapshot>,
    since_all: &SinceFiles,
) -> Result<i64, StorageError> {
    if accepted.is_empty() {
        return Err(StorageError::CommitConflict("nothing to commit".to_owned()));
    }
    let mut by_bucket: BTreeMap<(Vec<u8>, i32), Vec<&crate::storage::lsm::memrun::MemRun>> =
        BTreeMap::new();
    for r in accepted {
        for run in r.write.mem_runs() {
            by_bucket
                .entry((run.partition_bytes.clone(), run.bucket))
                .or_default()
                .push(run);
        }
    }
    let schema = Arc::clone(table.schema());
    // Every transaction's own runs, before the fold below keeps one version per key.
    let changelog = crate::storage::write::changelog::Pending::new(
        table,
        Vec::new(),
        accepted.iter().map(|r| r.write.mem_runs()),
    )?;
    let mut tasks = Vec::new();
    for ((partition, bucket), runs) in by_bucket {
        let layers = crate::storage::lsm::memrun::fold_runs(&schema, &runs)?;
        let floor = accepted
            .iter()
            .map(|r| r.write.floor(&partition, bucket, Some(since_all)))
            .max()
            .unwrap_or(0);
        tasks.push(tokio::spawn(
            crate::storage::write::table_write::write_layers(
                table.clone(),
                runs[0].partition.clone(),
                partition,
                bucket,
                layers,
                floor,
            ),
        ));
    }
    let mut files: Vec<NewFile> = Vec::new();
    let mut failed = None;
    for t in tasks {
        match t.await {
            Ok(Ok(f)) => files.extend(f),
            Ok(Err(e)) => failed = Some(e),
            Err(e) => failed = Some(StorageError::format(format!("writer task failed: {e}"))),
        }
    }
    let mut changelog_files: Vec<NewFile> = Vec::new();
    let result = match failed {
        Some(e) => Err(e),
        None => match changelog.write(table, &files).await {
            Ok(c) => {
                changelog_files = c;
                commit_files(table, accepted, latest, &files, &changelog_files).await
            }
            Err(e) => Err(e),
        },
    };
    if result.is_ok() {
        count_committed(table, &files);
    } else {
        let written: Vec<NewFile> = files.iter().chain(&changelog_files).cloned().collect();
        crate::storage::write::table_write::delete_files(table, written).await;
    }
    result
}

/// The snapshot of a round; on a lost race with another writer, checks what it committed and
/// tries the next id.
async fn commit_files(
    table: &Table,
    accepted: &[CommitRequest],
    mut latest: Option<Snapshot>,
    files: &[NewFile],
    changelog: &[NewFile],
) -> Result<i64, StorageError> {
    let commit = table.state::<crate::storage::commit::state::CommitState>();
    let identifier = commit.next_commit_identifier();
    let mut min_seq: HashMap<(Vec<u8>, i32), i64> = HashMap::new();
    for f in files {
        let m = min_seq
            .entry((f.partition.clone(), f.bucket))
            .or_insert(i64::MAX);
        *m = (*m).min(f.meta.min_sequence_number);
    }
    let hashes: Vec<_> = accepted.iter().map(|r| r.write.dynamic_hashes()).collect();
    loop {
        let entries = added_entries(files);
        if let Some(s) = crate::storage::write::dynamic_bucket::commit_entries_hashed(
            table,
            latest.as_ref(),
            entries,
            added_entries(changelog),
            identifier,
            &hashes,
        )
        .await?
        {
            return Ok(s.id);
        }
        // Another writer took the id: check what it committed, then try the next one.
        let from = latest.as_ref().map_or(0, |s| s.id);
        let newest = table.snapshots().latest().await?;
        let to = newest.as_ref().map_or(0, |s| s.id);
        let added = added_since(table, from, to).await?;
        let mut since: SinceFiles = HashMap::new();
        for (id, at, f) in added {
            if let Some(m) = min_seq.get(&at) {
                if f.max_sequence_number >= *m {
                    return Err(StorageError::CommitConflict(format!(
                        "another writer committed to the same bucket of {} with newer sequence \
                         numbers",
                        table.qualified_name()
                    )));
                }
                since.entry(at).or_default().push((id, f));
            }
        }
        if !since.is_empty() {
            for r in accepted {
                r.write.check_since(&since).await?;
            }
        }
        latest = newest;
    }
}
