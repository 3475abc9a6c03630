//! Orphan files: files in a table's folder that no snapshot or tag references (Paimon's
//! `remove_orphan_files` procedure, `OrphanFilesClean`).
//!
//! They are left by writers that died between writing files and committing, by commits that
//! lost their race and could not clean up, by crashed expiry runs (tarn deletes snapshot files
//! before their data), and by rollbacks that found a deleted snapshot still being read.
//!
//! As in Paimon, candidates are the files of the bucket folders (`[k=v/...]bucket-N/`, data,
//! changelog and extra files), of `manifest/` and the index files of `index/`, last modified before `older_than` (default a
//! day ago): the files of a commit in flight are that young, as are those of snapshots
//! committed after the references were read, so age is what keeps them safe. References are
//! gathered after listing, from every snapshot and tag: manifest lists, manifests, index
//! manifests, and every file a manifest entry names (ADD or DELETE) with its extra files,
//! compared by file name, and every index file an index manifest lists. `schema/`,
//! `snapshot/`, `tag/`, `consumer/`, `statistics/`, `changelog/` and anything unknown are never
//! touched.

use std::collections::HashSet;
use std::time::Duration;

use crate::storage::StorageError;
use crate::storage::maintenance::expire;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;

/// Paimon's default age below which files are never orphans.
pub const ORPHAN_DEFAULT_AGE: Duration = Duration::from_secs(24 * 3600);

/// What an orphan clean found (and deleted, unless it was a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanReport {
    /// Store paths of the orphan files, sorted.
    pub files: Vec<String>,
    /// Their total size.
    pub bytes: u64,
    pub dry_run: bool,
}

/// Deletes (or with `dry_run` only lists) the files of `table` that nothing references and
/// that were last modified before `older_than_millis` (milliseconds since the epoch).
pub async fn remove_orphan_files(
    table: &Table,
    older_than_millis: i64,
    dry_run: bool,
) -> Result<OrphanReport, StorageError> {
    // Listing first: anything committed later is younger than the cut-off or referenced.
    let depth = table.schema().partition_keys.len();
    let mut candidates = Vec::new();
    for meta in table.io().list(table.path()).await? {
        let Some(relative) = meta.location.prefix_match(table.path()) else {
            continue;
        };
        let parts: Vec<String> = relative.map(|p| p.as_ref().to_owned()).collect();
        if is_candidate(&parts, depth) && meta.last_modified.timestamp_millis() < older_than_millis
        {
            candidates.push(meta);
        }
    }
    if candidates.is_empty() {
        return Ok(OrphanReport {
            dry_run,
            ..OrphanReport::default()
        });
    }
    // No expiry or rollback of this process changes the references while they are read.
    let memo = table.state::<crate::storage::maintenance::expire::ExpireMemo>();
    let _lock = memo.lock.lock().await;
    let used = referenced_names(table).await?;
    let mut report = OrphanReport {
        dry_run,
        ..OrphanReport::default()
    };
    for meta in candidates {
        let name = meta.location.filename().unwrap_or_default();
        // A name the store shows percent-encoded cannot be compared with the manifests' names:
        // never an orphan (Paimon's and tarn's own names never need encoding).
        if used.contains(name) || name.contains('%') {
            continue;
        }
        if !dry_run {
            table.io().delete(&meta.location).await?;
        }
        report.bytes += meta.size;
        report.files.push(meta.location.to_string());
    }
    report.files.sort();
    if !report.files.is_empty() {
        tracing::info!(
            table = %table.qualified_name(),
            files = report.files.len(),
            bytes = report.bytes,
            dry_run,
            "orphan files"
        );
    }
    Ok(report)
}

/// A file under the table folder that may be an orphan: in `manifest/`, or in a bucket folder
/// `depth` partition folders deep.
fn is_candidate(parts: &[String], depth: usize) -> bool {
    match parts {
        [dir, _file] if dir == "manifest" => true,
        [dir, file] if dir == crate::storage::meta::deletion_vector::INDEX_DIR => {
            file.starts_with(crate::storage::meta::deletion_vector::INDEX_FILE_PREFIX)
        }
        _ => {
            parts.len() == depth + 2
                && parts[..depth].iter().all(|p| p.contains('='))
                && parts[depth].starts_with("bucket-")
        }
    }
}

/// Every file name a snapshot or tag of `table` references.
async fn referenced_names(table: &Table) -> Result<HashSet<String>, StorageError> {
    let mut versions: Vec<Snapshot> = Vec::new();
    for id in table.snapshots().list_ids().await? {
        // One expired by another engine meanwhile is skipped.
        if let Some(s) = table.snapshots().get(id).await? {
            versions.push(s);
        }
    }
    versions.extend(table.tags().list().await?.into_iter().map(|t| t.snapshot));
    let mut used: HashSet<String> = HashSet::new();
    let mut lists_seen: HashSet<String> = HashSet::new();
    let mut manifests: Vec<String> = Vec::new();
    let mut index_manifests: HashSet<&str> = HashSet::new();
    for s in &versions {
        used.extend(s.index_manifest.iter().cloned());
        index_manifests.extend(s.index_manifest.as_deref());
        used.extend(s.statistics.iter().cloned());
        for list in expire::snapshot_lists(s) {
            if !lists_seen.insert(list.to_owned()) {
                continue;
            }
            for name in expire::names_of_list(table, list, true).await? {
                if used.insert(name.clone()) && name != list {
                    manifests.push(name);
                }
            }
        }
    }
    for name in index_manifests {
        // Index files (deletion vectors and other engines' indexes) are named in index
        // manifests.
        let index = match table.read_index_entries(name).await {
            Ok(entries) => entries,
            Err(e) if e.is_missing_file() => continue,
            Err(e) => return Err(e),
        };
        used.extend(index.iter().map(|e| e.index_file.file_name.clone()));
    }
    for name in manifests {
        let entries = match table.read_manifest(&name).await {
            Ok(entries) => entries,
            Err(e) if e.is_missing_file() => continue,
            Err(e) => return Err(e),
        };
        for e in entries.iter() {
            used.insert(e.file.file_name.clone());
            used.extend(e.file.extra_files.iter().cloned());
        }
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::io::clock::{Clock, SystemClock};
    use crate::storage::testkit::{self, files, referenced, rows_at, snapshot, upsert};

    #[tokio::test]
    async fn deletes_old_unreferenced_files_only() {
        let t = testkit::table(&[]).await;
        upsert(&t, &[(1, 10, "a"), (2, 20, "b")]).await;
        upsert(&t, &[(3, 30, "a")]).await;
        let referenced_files = files(&t).await;
        let bucket = t.path().clone().join("dt=a").join("bucket-0");
        let stray = bucket.clone().join("data-stray-0.parquet");
        let stray_manifest = t.manifest_path("manifest-stray-0");
        let junk = t.path().clone().join("snapshot").join("junk");
        for p in [&stray, &stray_manifest, &junk] {
            t.io().write(p, b"x".to_vec()).await.unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let cutoff = SystemClock.now_millis();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let young = bucket.join("data-young-0.parquet");
        t.io().write(&young, b"y".to_vec()).await.unwrap();

        let dry = remove_orphan_files(&t, cutoff, true).await.unwrap();
        let mut want = vec![stray.to_string(), stray_manifest.to_string()];
        want.sort();
        assert_eq!(
            (dry.files.clone(), dry.bytes, dry.dry_run),
            (want.clone(), 2, true)
        );
        assert!(
            t.io().exists(&stray).await.unwrap(),
            "a dry run deletes nothing"
        );

        let report = remove_orphan_files(&t, cutoff, false).await.unwrap();
        assert_eq!(report.files, want);
        for (p, kept) in [
            (&stray, false),
            (&stray_manifest, false),
            (&junk, true),
            (&young, true),
        ] {
            assert_eq!(t.io().exists(p).await.unwrap(), kept, "{p}");
        }
        let mut remaining = files(&t).await;
        remaining.remove("dt=a/bucket-0/data-young-0.parquet");
        assert_eq!(remaining, referenced_files);
        let versions = [snapshot(&t, 1).await, snapshot(&t, 2).await];
        assert_eq!(remaining, referenced(&t, &versions).await);
        assert_eq!(rows_at(&t, &snapshot(&t, 2).await).await.len(), 3);
    }

    #[test]
    fn candidates_are_bucket_manifest_and_index_files() {
        let parts = |s: &str| s.split('/').map(str::to_owned).collect::<Vec<_>>();
        for (path, depth, want) in [
            ("manifest/manifest-1", 1, true),
            ("dt=a/bucket-0/data-1.parquet", 1, true),
            ("bucket-0/data-1.parquet", 0, true),
            ("bucket-0/data-1.parquet", 1, false),
            ("dt=a/x=1/bucket-3/f", 2, true),
            ("snapshot/snapshot-1", 1, false),
            ("schema/schema-0", 0, false),
            ("index/index-1", 0, true),
            ("index/readme", 0, false),
            ("tag/tag-x", 0, false),
            ("dt=a/other/f", 1, false),
        ] {
            assert_eq!(is_candidate(&parts(path), depth), want, "{path}");
        }
    }
}
