//! [`FileIO`]: the object store with the two guarantees commits need — durable writes and
//! create-if-absent — on every backend.
//!
//! object_store's local backend writes a temporary file and renames it, but never calls fsync:
//! after a power loss an acknowledged commit could vanish. On a local warehouse every write here
//! is followed by fsync of the file and of its directory (and of each newly created ancestor
//! directory, once), so a snapshot is durable before the client hears its command tag. An fsync
//! failure is returned as an error and never retried (PostgreSQL's "fsyncgate" lesson).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::storage::StorageError;

/// The warehouse's object store plus what it takes to make writes durable.
#[derive(Debug, Clone)]
pub struct FileIO {
    store: Arc<dyn ObjectStore>,
    /// Set for local warehouses: the folder the store's paths are relative to.
    local_root: Option<PathBuf>,
    /// Directories whose entry in their parent is known to be durable.
    synced_dirs: Arc<Mutex<HashSet<PathBuf>>>,
    /// Added to every durable write: benchmarks use it to stand in for an object store's
    /// round trip (an S3 PUT takes tens of milliseconds) on a local disk.
    write_latency: Option<std::time::Duration>,
}

impl FileIO {
    pub fn new(store: Arc<dyn ObjectStore>, local_root: Option<PathBuf>) -> Self {
        Self {
            store,
            local_root,
            synced_dirs: Arc::default(),
            write_latency: None,
        }
    }

    /// The same store with `latency` added to each durable write.
    pub fn with_write_latency(mut self, latency: std::time::Duration) -> Self {
        self.write_latency = Some(latency).filter(|l| !l.is_zero());
        self
    }

    async fn write_delay(&self) {
        if let Some(latency) = self.write_latency {
            tokio::time::sleep(latency).await;
        }
    }

    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub fn local_root(&self) -> Option<&PathBuf> {
        self.local_root.as_ref()
    }

    /// The store path of the file whose Paimon path (literal characters, `/`-separated) is
    /// `text`. Parsed, not built from parts: building would percent-encode the `%` of Paimon's
    /// escaped partition values (`x%3Dy` would land on disk as `x%253Dy`).
    pub fn path(&self, text: &str) -> Path {
        let joined = text
            .split('/')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("/");
        Path::parse(&joined).unwrap_or_else(|_| Path::from(joined.as_str()))
    }

    /// The whole object at `path`.
    pub async fn read(&self, path: &Path) -> Result<Bytes, StorageError> {
        Ok(self.store.get(path).await?.bytes().await?)
    }

    /// Bytes `range` of the object at `path`.
    pub async fn read_range(
        &self,
        path: &Path,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes, StorageError> {
        Ok(self.store.get_range(path, range).await?)
    }

    /// On a local warehouse, `path`'s file stat'ed on this thread: the probes every statement
    /// makes skip the object store's trip through the blocking pool. `None` elsewhere, and for
    /// a path with escapes (the store's way decodes them).
    fn local_stat(&self, path: &Path) -> Option<std::io::Result<std::fs::Metadata>> {
        let root = self.local_root.as_ref()?;
        (!path.as_ref().contains('%')).then(|| std::fs::symlink_metadata(root.join(path.as_ref())))
    }

    /// The whole object at `path`, or `None` if there is none.
    pub async fn read_if_exists(&self, path: &Path) -> Result<Option<Bytes>, StorageError> {
        // A missing file — the probe for a table's next snapshot, made by every statement —
        // answered by one stat on a local warehouse (`local_stat`).
        if self
            .local_stat(path)
            .is_some_and(|m| m.is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound))
        {
            return Ok(None);
        }
        match self.store.get(path).await {
            Ok(r) => Ok(Some(r.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn exists(&self, path: &Path) -> Result<bool, StorageError> {
        // The pin of the snapshot every statement reads asks: one stat on a local warehouse.
        match self.local_stat(path) {
            Some(Ok(m)) if m.is_file() => return Ok(true),
            Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            _ => {}
        }
        match self.store.head(path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `bytes` to `path` (replacing any object there), durably.
    pub async fn write(
        &self,
        path: &Path,
        bytes: impl Into<PutPayload>,
    ) -> Result<(), StorageError> {
        self.write_delay().await;
        self.store.put(path, bytes.into()).await?;
        self.sync(path).await
    }

    /// Writes `bytes` to `path` without waiting for it to be durable: for hints that readers
    /// check against the files they point at (`LATEST`), never for data or metadata.
    pub async fn write_hint(
        &self,
        path: &Path,
        bytes: impl Into<PutPayload>,
    ) -> Result<(), StorageError> {
        self.store.put(path, bytes.into()).await?;
        Ok(())
    }

    /// Writes `bytes` to `path` only if nothing is there yet, durably. `Ok(false)` when the
    /// object exists (another writer won): the commit protocol's atomic step.
    pub async fn write_new(
        &self,
        path: &Path,
        bytes: impl Into<PutPayload>,
    ) -> Result<bool, StorageError> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        self.write_delay().await;
        match self.store.put_opts(path, bytes.into(), opts).await {
            Ok(_) => {}
            Err(object_store::Error::AlreadyExists { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        if let Err(e) = self.sync(path).await {
            // Not durable, so not written: a commit must fail, and must not leave behind a
            // snapshot file pointing at files it then removes.
            let _ = self.store.delete(path).await;
            return Err(e);
        }
        Ok(true)
    }

    /// Every object under `prefix` (recursively).
    pub async fn list(&self, prefix: &Path) -> Result<Vec<ObjectMeta>, StorageError> {
        Ok(self.store.list(Some(prefix)).try_collect().await?)
    }

    /// Objects directly in `prefix` and names of its sub-folders.
    pub async fn list_dir(
        &self,
        prefix: &Path,
    ) -> Result<(Vec<ObjectMeta>, Vec<String>), StorageError> {
        let listing = self.store.list_with_delimiter(Some(prefix)).await?;
        let dirs = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_owned))
            .collect();
        Ok((listing.objects, dirs))
    }

    /// The numbers `n` of the files `<prefix><n><suffix>` directly in `dir`, ascending (a
    /// versioned document's versions, a table's schema ids); none when `dir` is missing.
    pub async fn numbered(
        &self,
        dir: &Path,
        prefix: &str,
        suffix: &str,
    ) -> Result<Vec<u64>, StorageError> {
        let files = match self.list_dir(dir).await {
            Ok((files, _)) => files,
            Err(e) if e.is_missing_file() => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut numbers: Vec<u64> = files
            .iter()
            .filter_map(|f| {
                f.location
                    .filename()?
                    .strip_prefix(prefix)?
                    .strip_suffix(suffix)?
                    .parse()
                    .ok()
            })
            .collect();
        numbers.sort_unstable();
        Ok(numbers)
    }

    /// Deletes `path`; a missing object is not an error.
    pub async fn delete(&self, path: &Path) -> Result<(), StorageError> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes everything under `prefix`, and on a local warehouse the folder itself.
    pub async fn delete_dir(&self, prefix: &Path) -> Result<(), StorageError> {
        for meta in self.list(prefix).await? {
            self.delete(&meta.location).await?;
        }
        if let Some(root) = &self.local_root {
            let dir = root.join(prefix.as_ref());
            match tokio::fs::remove_dir_all(&dir).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(StorageError::Io {
                        path: dir.display().to_string(),
                        source,
                    });
                }
            }
            self.synced_dirs
                .lock()
                .expect("synced dirs lock")
                .retain(|d| !d.starts_with(&dir));
            if let Some(parent) = dir.parent() {
                fsync_dir(parent).await?;
            }
        }
        Ok(())
    }

    /// Creates the folder `prefix` on a local warehouse (object stores have no folders).
    pub async fn create_dir(&self, prefix: &Path) -> Result<(), StorageError> {
        if let Some(root) = &self.local_root {
            let dir = root.join(prefix.as_ref());
            tokio::fs::create_dir_all(&dir)
                .await
                .map_err(|source| StorageError::Io {
                    path: dir.display().to_string(),
                    source,
                })?;
            self.sync_dirs_from(&dir).await?;
        }
        Ok(())
    }

    /// Renames folder `from` to `to` on a local warehouse, durably, never replacing what is at
    /// `to`: `Ok(false)` when something is there. Object stores have no folders to rename (a
    /// copy of every file is no atomic step): [`StorageError::Unsupported`] there.
    ///
    /// `rename(2)` replaces an empty folder at the target, so the target is claimed first by
    /// creating it (which fails when anything is there) and the rename then replaces that
    /// claim; a file another process puts into the claim meanwhile makes the rename fail.
    pub async fn rename_dir(&self, from: &Path, to: &Path) -> Result<bool, StorageError> {
        let Some(root) = &self.local_root else {
            return Err(StorageError::Unsupported(
                "renaming a table needs a local warehouse: an object store has no folder to \
                 rename in one step"
                    .to_owned(),
            ));
        };
        let (source, target) = (root.join(from.as_ref()), root.join(to.as_ref()));
        let io_error = |path: &std::path::Path, source: std::io::Error| StorageError::Io {
            path: path.display().to_string(),
            source,
        };
        match tokio::fs::create_dir(&target).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(io_error(&target, e)),
        }
        if let Err(e) = tokio::fs::rename(&source, &target).await {
            let _ = tokio::fs::remove_dir(&target).await;
            return Err(io_error(&source, e));
        }
        self.synced_dirs
            .lock()
            .expect("synced dirs lock")
            .retain(|d| !d.starts_with(&source) && !d.starts_with(&target));
        for dir in [source.parent(), target.parent()].into_iter().flatten() {
            fsync_dir(dir).await?;
        }
        Ok(true)
    }

    /// fsync of the file at `path`, its folder, and each ancestor folder not yet known durable.
    async fn sync(&self, path: &Path) -> Result<(), StorageError> {
        let Some(root) = &self.local_root else {
            return Ok(());
        };
        let file = root.join(path.as_ref());
        let f = file.clone();
        tokio::task::spawn_blocking(move || std::fs::File::open(&f)?.sync_all())
            .await
            .map_err(|e| StorageError::task_failed("an fsync task", e))?
            .map_err(|source| StorageError::Io {
                path: file.display().to_string(),
                source,
            })?;
        match file.parent() {
            Some(dir) => self.sync_dirs_from(dir).await,
            None => Ok(()),
        }
    }

    /// fsync of `dir` (which just gained an entry), then of ancestors up to the root until one
    /// is known to hold a durable entry for its child.
    async fn sync_dirs_from(&self, dir: &std::path::Path) -> Result<(), StorageError> {
        let root = self.local_root.clone().expect("local warehouse");
        fsync_dir(dir).await?;
        let mut child = dir.to_path_buf();
        while child != root && child.starts_with(&root) {
            if self
                .synced_dirs
                .lock()
                .expect("synced dirs lock")
                .contains(&child)
            {
                break;
            }
            let Some(parent) = child.parent() else { break };
            fsync_dir(parent).await?;
            self.synced_dirs
                .lock()
                .expect("synced dirs lock")
                .insert(child.clone());
            child = parent.to_path_buf();
        }
        Ok(())
    }
}

async fn fsync_dir(dir: &std::path::Path) -> Result<(), StorageError> {
    let d = dir.to_path_buf();
    tokio::task::spawn_blocking(move || std::fs::File::open(&d)?.sync_all())
        .await
        .map_err(|e| StorageError::task_failed("an fsync task", e))?
        .map_err(|source| StorageError::Io {
            path: dir.display().to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::local::LocalFileSystem;
    use object_store::memory::InMemory;

    #[tokio::test]
    async fn write_new_refuses_existing_objects() {
        for io in [FileIO::new(Arc::new(InMemory::new()), None), {
            let dir = std::env::temp_dir().join(format!("tarn-io-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            FileIO::new(
                Arc::new(LocalFileSystem::new_with_prefix(&dir).unwrap()),
                Some(dir),
            )
        }] {
            let p = Path::from("t/snapshot/snapshot-1");
            assert!(io.write_new(&p, Bytes::from_static(b"one")).await.unwrap());
            assert!(!io.write_new(&p, Bytes::from_static(b"two")).await.unwrap());
            assert_eq!(io.read(&p).await.unwrap(), Bytes::from_static(b"one"));
            io.write(&p, Bytes::from_static(b"three")).await.unwrap();
            assert_eq!(io.read(&p).await.unwrap(), Bytes::from_static(b"three"));
            assert!(io.exists(&p).await.unwrap());
            // A folder is no object, as for the store itself.
            assert!(!io.exists(&Path::from("t/snapshot")).await.unwrap());
            assert!(
                !io.exists(&Path::from("t/snapshot/snapshot-2"))
                    .await
                    .unwrap()
            );
            assert!(
                io.read_if_exists(&Path::from("t/x"))
                    .await
                    .unwrap()
                    .is_none()
            );
            io.delete_dir(&Path::from("t")).await.unwrap();
            assert!(!io.exists(&p).await.unwrap());
            if let Some(root) = io.local_root() {
                std::fs::remove_dir_all(root).unwrap();
            }
        }
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;
    use object_store::local::LocalFileSystem;

    /// Paimon escapes partition values (`x=y` → `x%3Dy`); the folder on disk must carry exactly
    /// that name, or other engines look for the files in vain.
    #[tokio::test]
    async fn escaped_partition_names_reach_the_disk_verbatim() {
        let dir = std::env::temp_dir().join(format!("tarn-io-esc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let io = FileIO::new(
            Arc::new(LocalFileSystem::new_with_prefix(&dir).unwrap()),
            Some(dir.clone()),
        );
        let path = io.path("t/dt=x%3Dy/v=a b%2Fc/bucket-0/f.parquet");
        io.write(&path, Bytes::from_static(b"x")).await.unwrap();
        assert!(
            dir.join("t/dt=x%3Dy/v=a b%2Fc/bucket-0/f.parquet")
                .is_file(),
            "{:?}",
            std::fs::read_dir(dir.join("t"))
                .unwrap()
                .collect::<Vec<_>>()
        );
        assert_eq!(io.read(&path).await.unwrap(), Bytes::from_static(b"x"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
