//! `snapshot/snapshot-N`: one committed version of a table, and finding the versions there are.
//!
//! Snapshot files are immutable and numbered without gaps from the earliest retained one. The
//! `LATEST`/`EARLIEST` files are hints only (Paimon writers update them after the fact, pypaimon
//! writes only `LATEST`), so the latest snapshot is the hint checked against the files, with a
//! listing as the fallback.

use std::collections::BTreeMap;

use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::storage::StorageError;
use crate::storage::io::file_io::FileIO;

/// Version of the snapshot JSON tarn writes.
pub const SNAPSHOT_VERSION: i32 = 3;
/// `commitIdentifier` of a batch commit in Paimon.
#[cfg(test)]
pub const BATCH_COMMIT_IDENTIFIER: i64 = i64::MAX;

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CommitKind {
    Append,
    Compact,
    Overwrite,
    Analyze,
}

impl CommitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CommitKind::Append => "APPEND",
            CommitKind::Compact => "COMPACT",
            CommitKind::Overwrite => "OVERWRITE",
            CommitKind::Analyze => "ANALYZE",
        }
    }
}

/// A `snapshot-N` file (fields Paimon leaves out when null are optional).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub version: Option<i32>,
    pub id: i64,
    pub schema_id: i64,
    pub base_manifest_list: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_manifest_list_size: Option<i64>,
    pub delta_manifest_list: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_manifest_list_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_manifest_list: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_manifest_list_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_manifest: Option<String>,
    pub commit_user: String,
    pub commit_identifier: i64,
    pub commit_kind: CommitKind,
    pub time_millis: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_record_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_record_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_record_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_version: Option<String>,
    /// What this server committed to the table and has not flushed into a snapshot yet, as
    /// seen when this snapshot was taken as the table's current one (`lsm/unflushed.rs`);
    /// empty for snapshots read from a file. Never written.
    #[serde(skip)]
    pub unflushed: Unflushed,
}

/// A snapshot's unflushed commits, opaque at this floor (`lsm/unflushed.rs` knows the type).
/// Snapshots compare by their file's content: two reads of one snapshot are equal whatever
/// commits each saw above it.
#[derive(Clone, Default)]
pub struct Unflushed(pub Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>);

impl PartialEq for Unflushed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Unflushed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Unflushed(..)"
        } else {
            "Unflushed(none)"
        })
    }
}

impl Snapshot {
    pub fn from_json(bytes: &[u8]) -> Result<Self, StorageError> {
        serde_json::from_slice(bytes)
            .map_err(|e| StorageError::format(format!("snapshot file is not valid: {e}")))
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("snapshot serializes")
    }
}

/// Reads and writes a table's snapshot files.
#[derive(Debug, Clone)]
pub struct SnapshotManager {
    io: FileIO,
    dir: Path,
}

const PREFIX: &str = "snapshot-";

impl SnapshotManager {
    /// The snapshots of the table at `table_path`.
    pub fn new(io: FileIO, table_path: &Path) -> Self {
        Self {
            io,
            dir: table_path.clone().join("snapshot"),
        }
    }

    pub fn path_of(&self, id: i64) -> Path {
        self.dir.clone().join(format!("{PREFIX}{id}"))
    }

    /// Snapshot `id`, or `None` if it does not exist (never written, or expired).
    pub async fn get(&self, id: i64) -> Result<Option<Snapshot>, StorageError> {
        match self.io.read_if_exists(&self.path_of(id)).await? {
            Some(bytes) => Ok(Some(Snapshot::from_json(&bytes)?)),
            None => Ok(None),
        }
    }

    /// Ids of every snapshot file present, ascending.
    pub async fn list_ids(&self) -> Result<Vec<i64>, StorageError> {
        let (objects, _) = self.io.list_dir(&self.dir).await?;
        let mut ids: Vec<i64> = objects
            .iter()
            .filter_map(|m| m.location.filename())
            .filter_map(|f| f.strip_prefix(PREFIX))
            .filter_map(|n| n.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Id of the latest snapshot, if any: the `LATEST` hint when the next id is absent, else
    /// a listing.
    pub async fn latest_id(&self) -> Result<Option<i64>, StorageError> {
        let hint = self.read_hint("LATEST").await?;
        if let Some(id) = hint
            && self.io.exists(&self.path_of(id)).await?
            && !self.io.exists(&self.path_of(id + 1)).await?
        {
            return Ok(Some(id));
        }
        Ok(self.list_ids().await?.last().copied())
    }

    /// The latest snapshot, if the table has one.
    pub async fn latest(&self) -> Result<Option<Snapshot>, StorageError> {
        loop {
            let Some(id) = self.latest_id().await? else {
                return Ok(None);
            };
            // Expiry may delete it between listing and reading: look again.
            if let Some(s) = self.get(id).await? {
                return Ok(Some(s));
            }
        }
    }

    /// Id of the earliest retained snapshot.
    pub async fn earliest_id(&self) -> Result<Option<i64>, StorageError> {
        if let Some(id) = self.read_hint("EARLIEST").await?
            && self.io.exists(&self.path_of(id)).await?
            && (id == 1 || !self.io.exists(&self.path_of(id - 1)).await?)
        {
            return Ok(Some(id));
        }
        Ok(self.list_ids().await?.first().copied())
    }

    /// A hint file's id. Hints are rewritten in place by other writers (pypaimon truncates and
    /// writes), so a read that fails or finds garbage is "no hint": callers then list.
    async fn read_hint(&self, name: &str) -> Result<Option<i64>, StorageError> {
        Ok(
            match self.io.read_if_exists(&self.dir.clone().join(name)).await {
                Ok(bytes) => bytes.and_then(|b| std::str::from_utf8(&b).ok()?.trim().parse().ok()),
                Err(e) => {
                    tracing::debug!(error = %e, hint = name, "unreadable snapshot hint; listing instead");
                    None
                }
            },
        )
    }

    /// Deletes `snapshot-<id>` (expiry, rollback); a missing file is not an error.
    pub async fn delete(&self, id: i64) -> Result<(), StorageError> {
        self.io.delete(&self.path_of(id)).await
    }

    /// Points the `EARLIEST` hint at `id` (written after expiry or rollback; readers check it
    /// against the files, so it is written without waiting for durability).
    pub async fn write_earliest_hint(&self, id: i64) -> Result<(), StorageError> {
        self.io
            .write_hint(&self.dir.clone().join("EARLIEST"), id.to_string())
            .await
    }

    /// Points the `LATEST` hint at `id` (rollback; commits write it themselves).
    pub async fn write_latest_hint(&self, id: i64) -> Result<(), StorageError> {
        self.io
            .write_hint(&self.dir.clone().join("LATEST"), id.to_string())
            .await
    }

    /// Writes `snapshot` as `snapshot-<id>` if no such file exists yet, durably, then updates
    /// the `LATEST` hint. `Ok(false)`: another writer took that id first.
    pub async fn commit(&self, snapshot: &Snapshot) -> Result<bool, StorageError> {
        if !self
            .io
            .write_new(&self.path_of(snapshot.id), snapshot.to_json())
            .await?
        {
            return Ok(false);
        }
        // Hints are best effort: a stale hint is corrected by the next reader.
        if let Err(e) = self
            .io
            .write_hint(&self.dir.clone().join("LATEST"), snapshot.id.to_string())
            .await
        {
            tracing::warn!(error = %e, "could not update the LATEST snapshot hint");
        }
        if snapshot.id == 1
            && let Err(e) = self
                .io
                .write(&self.dir.clone().join("EARLIEST"), "1".to_owned())
                .await
        {
            tracing::warn!(error = %e, "could not write the EARLIEST snapshot hint");
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use std::sync::Arc;

    const PYPAIMON_SNAPSHOT: &str = r#"{
      "version": 3, "id": 3, "schemaId": 0,
      "baseManifestList": "manifest-list-b9-0", "deltaManifestList": "manifest-list-b9-1",
      "totalRecordCount": 12, "deltaRecordCount": 4,
      "commitUser": "e6a3fa13", "commitIdentifier": 9223372036854775807,
      "commitKind": "APPEND", "timeMillis": 1796241103494,
      "baseManifestListSize": 1393, "deltaManifestListSize": 1361,
      "uuid": "3d544944", "writerVersion": "python-2.1.0"
    }"#;

    #[test]
    fn parses_pypaimon_snapshot() {
        let s = Snapshot::from_json(PYPAIMON_SNAPSHOT.as_bytes()).unwrap();
        assert_eq!(s.id, 3);
        assert_eq!(s.commit_kind, CommitKind::Append);
        assert_eq!(s.commit_identifier, BATCH_COMMIT_IDENTIFIER);
        assert_eq!(Snapshot::from_json(&s.to_json()).unwrap(), s);
        let json: serde_json::Value = serde_json::from_slice(&s.to_json()).unwrap();
        assert!(
            json.get("changelogManifestList").is_none(),
            "nulls are left out"
        );
    }

    #[tokio::test]
    async fn latest_follows_files_not_just_the_hint() {
        let io = FileIO::new(Arc::new(InMemory::new()), None);
        let m = SnapshotManager::new(io.clone(), &Path::from("db.db/t"));
        assert_eq!(m.latest_id().await.unwrap(), None);
        let mut s = Snapshot::from_json(PYPAIMON_SNAPSHOT.as_bytes()).unwrap();
        for id in 1..=3 {
            s.id = id;
            assert!(m.commit(&s).await.unwrap());
        }
        assert!(!m.commit(&s).await.unwrap(), "snapshot-3 exists");
        assert_eq!(m.latest_id().await.unwrap(), Some(3));
        // A writer that died before updating the hint.
        s.id = 4;
        io.write_new(&m.path_of(4), s.to_json()).await.unwrap();
        assert_eq!(m.latest_id().await.unwrap(), Some(4));
        assert_eq!(m.earliest_id().await.unwrap(), Some(1));
        assert_eq!(m.list_ids().await.unwrap(), [1, 2, 3, 4]);
    }
}
