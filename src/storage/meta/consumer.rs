//! `consumer/consumer-<id>`: Paimon consumers — streaming readers (Flink jobs with a
//! `consumer-id`) that record the next snapshot they will read, `{"nextSnapshot": N}`.
//!
//! Snapshot expiry must not expire snapshot N or anything newer while such a file exists
//! (Paimon's `ConsumerManager.minNextSnapshot`), or the job would lose its place. Consumer files
//! of jobs that are gone for good would block expiry forever, so Paimon deletes consumer files
//! not modified for `consumer.expiration-time` (no default: only when the table sets it) as part
//! of a commit's maintenance, before expiring snapshots; tarn does the same in
//! [`crate::storage::maintenance::expire::expire_after_commit`].

use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::storage::StorageError;
use crate::storage::io::file_io::FileIO;
use crate::storage::meta::table::Table;

/// File name prefix of consumer files.
pub const CONSUMER_PREFIX: &str = "consumer-";

/// One consumer's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Consumer {
    /// The next snapshot the consumer will read.
    pub next_snapshot: i64,
}

/// Reads and writes a table's consumer files.
#[derive(Debug, Clone)]
pub struct ConsumerManager {
    io: FileIO,
    dir: Path,
}

impl ConsumerManager {
    /// The consumers of the table at `table_path`.
    pub fn new(io: FileIO, table_path: &Path) -> Self {
        Self {
            io,
            dir: table_path.clone().join("consumer"),
        }
    }

    pub fn path_of(&self, id: &str) -> Path {
        self.dir.clone().join(format!("{CONSUMER_PREFIX}{id}"))
    }

    /// Consumer `id`, or `None` if there is none (or its file is not a consumer: Paimon writers
    /// overwrite it in place, so a torn read is possible and is not fatal here).
    pub async fn get(&self, id: &str) -> Result<Option<Consumer>, StorageError> {
        Ok(match self.io.read_if_exists(&self.path_of(id)).await? {
            Some(bytes) => match serde_json::from_slice::<Consumer>(&bytes) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!(consumer = id, error = %e, "unreadable consumer file ignored");
                    None
                }
            },
            None => None,
        })
    }

    /// Writes (or overwrites) consumer `id`.
    pub async fn reset(&self, id: &str, consumer: Consumer) -> Result<(), StorageError> {
        let json = serde_json::to_vec(&consumer).expect("consumer serializes");
        self.io.write(&self.path_of(id), json).await
    }

    /// Deletes consumer `id` (a missing one is not an error).
    pub async fn delete(&self, id: &str) -> Result<(), StorageError> {
        self.io.delete(&self.path_of(id)).await
    }

    /// Every consumer id with its progress, sorted by id.
    pub async fn list(&self) -> Result<Vec<(String, Consumer)>, StorageError> {
        let (objects, _) = self.io.list_dir(&self.dir).await?;
        let mut ids: Vec<String> = objects
            .iter()
            .filter_map(|m| m.location.filename()?.strip_prefix(CONSUMER_PREFIX))
            .map(str::to_owned)
            .collect();
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(c) = self.get(&id).await? {
                out.push((id, c));
            }
        }
        Ok(out)
    }

    /// The smallest `nextSnapshot` of all consumers: expiry keeps that snapshot and newer ones.
    pub async fn min_next_snapshot(&self) -> Result<Option<i64>, StorageError> {
        Ok(self
            .list()
            .await?
            .iter()
            .map(|(_, c)| c.next_snapshot)
            .min())
    }

    /// Deletes consumer files last modified before `before_millis` (Paimon's
    /// `consumer.expiration-time`). Returns the ids deleted.
    pub async fn expire(&self, before_millis: i64) -> Result<Vec<String>, StorageError> {
        let (objects, _) = self.io.list_dir(&self.dir).await?;
        let mut deleted = Vec::new();
        for meta in objects {
            let Some(id) = meta
                .location
                .filename()
                .and_then(|f| f.strip_prefix(CONSUMER_PREFIX))
            else {
                continue;
            };
            if meta.last_modified.timestamp_millis() < before_millis {
                deleted.push(id.to_owned());
                self.io.delete(&meta.location).await?;
            }
        }
        Ok(deleted)
    }
}

impl Table {
    /// The table's Paimon consumers.
    pub fn consumers(&self) -> ConsumerManager {
        ConsumerManager::new(self.io().clone(), self.path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use std::sync::Arc;

    #[tokio::test]
    async fn reads_writes_and_expires_consumers() {
        let io = FileIO::new(Arc::new(InMemory::new()), None);
        let m = ConsumerManager::new(io.clone(), &Path::from("db.db/t"));
        assert_eq!(m.min_next_snapshot().await.unwrap(), None);
        // As Paimon Java writes it (Jackson, unknown fields ignored on read).
        io.write(
            &m.path_of("flink-job"),
            r#"{"nextSnapshot":12,"future":true}"#.to_owned(),
        )
        .await
        .unwrap();
        m.reset("other", Consumer { next_snapshot: 7 })
            .await
            .unwrap();
        io.write(&m.path_of("torn"), "{\"nextSn".to_owned())
            .await
            .unwrap();
        assert_eq!(
            m.list().await.unwrap(),
            [
                ("flink-job".to_owned(), Consumer { next_snapshot: 12 }),
                ("other".to_owned(), Consumer { next_snapshot: 7 }),
            ]
        );
        assert_eq!(m.min_next_snapshot().await.unwrap(), Some(7));
        let raw = io.read(&m.path_of("other")).await.unwrap();
        assert_eq!(&raw[..], br#"{"nextSnapshot":7}"#);
        assert!(
            m.expire(0).await.unwrap().is_empty(),
            "none older than 1970"
        );
        let mut gone = m.expire(i64::MAX).await.unwrap();
        gone.sort();
        assert_eq!(gone, ["flink-job", "other", "torn"]);
        assert_eq!(m.min_next_snapshot().await.unwrap(), None);
    }
}
