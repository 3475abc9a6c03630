//! Publishing a commit as a Paimon snapshot: the commit's [`Content`] (manifest entries,
//! changelog entries, the index manifest) becomes `snapshot-N+1` — a manifest of the new
//! entries, the previous lists merged when small manifests pile up (Paimon's minor and full
//! merges), base and delta manifest lists, and the snapshot file, written create-if-absent.
//!
//! This is the step that makes a commit visible to every Paimon reader. Today it is also the
//! step that makes it durable; a commit log in front of it (a later issue) will acknowledge
//! commits once logged and publish them here later, so nothing here decides *whether* a commit
//! may happen — the [`committer`](crate::storage::commit::committer) does.

use std::collections::HashMap;

use crate::storage::StorageError;
use crate::storage::lsm::run_file::NewFile;
use crate::storage::meta::manifest_files::write_manifest;
use crate::storage::meta::snapshot::{CommitKind, SNAPSHOT_VERSION, Snapshot};
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::{self, FileKind, ManifestEntry, ManifestFileMeta};

/// Entries per manifest file written by a merge (keeps files near the target size).
const ENTRIES_PER_MANIFEST: usize = 40_000;

/// What a commit adds to the table: the next snapshot's content, as a commit message prepared
/// it on top of the latest snapshot.
#[derive(Debug)]
pub(in crate::storage) struct Content {
    pub(in crate::storage) kind: CommitKind,
    /// Manifest entries: files added and deleted.
    pub(in crate::storage) entries: Vec<ManifestEntry>,
    /// Changelog files' entries (`changelog-producer`), in the snapshot's changelog list.
    pub(in crate::storage) changelog: Vec<ManifestEntry>,
    /// The new snapshot's index manifest (the latest's when the commit changes no index).
    pub(in crate::storage) index_manifest: Option<String>,
    /// Files this attempt wrote only for this snapshot (index files, an index manifest):
    /// deleted when it is not published.
    pub(in crate::storage) attempt_files: Vec<object_store::path::Path>,
}

impl Content {
    /// Content that carries `latest`'s index manifest over.
    pub(in crate::storage) fn new(
        kind: CommitKind,
        entries: Vec<ManifestEntry>,
        changelog: Vec<ManifestEntry>,
        latest: Option<&Snapshot>,
    ) -> Self {
        Self {
            kind,
            entries,
            changelog,
            index_manifest: latest.and_then(|s| s.index_manifest.clone()),
            attempt_files: Vec::new(),
        }
    }
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

/// Publishes `content` as `snapshot-N+1` on top of `latest`: its manifest, the merged base and
/// the delta manifest lists, the changelog's, then the snapshot file (create-if-absent). `None`
/// when another writer took N+1 first (everything written here is removed again).
pub(in crate::storage) async fn publish(
    table: &Table,
    latest: Option<&Snapshot>,
    content: Content,
    identifier: i64,
) -> Result<Option<Snapshot>, StorageError> {
    let Content {
        kind,
        entries,
        changelog,
        index_manifest,
        ..
    } = content;
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
        unflushed: Default::default(),
    };
    if table.snapshots().commit(&snapshot).await? {
        Ok(Some(snapshot))
    } else {
        Ok(None)
    }
}

/// Keeps the number of manifests a scan reads bounded however many commits the table has.
///
/// Minor merge (Paimon's): once `manifest.merge-min-count` (default
/// [`DEFAULT_MANIFEST_MERGE_MIN_COUNT`](crate::storage::spec::options::DEFAULT_MANIFEST_MERGE_MIN_COUNT))
/// small manifests have piled up at
/// the end of the list, their entries are replayed (an ADD and a later DELETE of one file cancel;
/// a DELETE of a file added earlier stays) and rewritten as few full-size manifests, appended in
/// the same place so the order of ADDs and DELETEs is kept. Full merge: when the list still grows
/// past twice that, every manifest is replayed into the live files and rewritten.
async fn merge_manifests(
    table: &Table,
    metas: Vec<ManifestFileMeta>,
    written: &mut Vec<String>,
) -> Result<Vec<ManifestFileMeta>, StorageError> {
    let options = table.schema().core_options();
    let min_count = options.manifest_merge_min_count();
    let target = options.manifest_target_file_size();
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
    let mut added: HashMap<crate::storage::lsm::split::FileId, usize> = HashMap::new();
    for m in &metas[split..] {
        for e in table.read_manifest(&m.file_name).await?.iter() {
            let id = crate::storage::lsm::split::file_id(e);
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
