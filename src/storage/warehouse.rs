//! The warehouse root: which databases exist, creating and dropping them.
//!
//! Paimon's filesystem catalog keeps each database as a folder `<name>.db` under the warehouse
//! root, with one sub-folder per table. A local warehouse gets real directories (what Paimon's
//! `mkdirs` does, so Paimon engines see an empty database too); object stores have no empty
//! folders, so there an empty marker object keeps a new database visible.

use std::path::PathBuf;
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::ObjectStoreExt;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;

use super::StorageError;

/// Suffix of a database folder in a Paimon filesystem-catalog warehouse.
pub const DATABASE_SUFFIX: &str = ".db";
/// Object that keeps an otherwise empty database visible on stores without folders.
const DATABASE_MARKER: &str = ".tarn-database";

/// Where the warehouse lives, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarehouseLocation {
    /// A local folder (created if missing).
    Local(PathBuf),
    /// An in-process store, gone when the process ends (tests, benchmarks).
    Memory,
}

impl WarehouseLocation {
    /// Parses `./warehouse`, `/abs/path`, `file:///abs/path` or `memory://`.
    pub fn parse(text: &str) -> Result<Self, StorageError> {
        let invalid = |reason: &str| StorageError::InvalidLocation {
            location: text.to_owned(),
            reason: reason.to_owned(),
        };
        if text.is_empty() {
            return Err(invalid("it is empty"));
        }
        match text.split_once("://") {
            None => Ok(Self::Local(PathBuf::from(text))),
            Some(("file", path)) if path.starts_with('/') => Ok(Self::Local(PathBuf::from(path))),
            Some(("file", _)) => Err(invalid("a file:// URL needs an absolute path")),
            Some(("memory", "")) => Ok(Self::Memory),
            Some((scheme, _)) => Err(invalid(&format!(
                "the {scheme}:// scheme is not supported yet; use a local path or memory://"
            ))),
        }
    }
}

/// The warehouse: an object store plus, for local folders, the folder itself.
#[derive(Debug, Clone)]
pub struct Warehouse {
    store: Arc<dyn ObjectStore>,
    /// Set for local warehouses, where databases are real directories.
    local_root: Option<PathBuf>,
}

impl Warehouse {
    /// Opens (and for a local folder, creates) the warehouse at `location`.
    pub fn open(location: &WarehouseLocation) -> Result<Self, StorageError> {
        match location {
            WarehouseLocation::Memory => Ok(Self::with_store(Arc::new(InMemory::new()))),
            WarehouseLocation::Local(path) => {
                std::fs::create_dir_all(path).map_err(|source| StorageError::Io {
                    path: path.display().to_string(),
                    source,
                })?;
                let root = path.canonicalize().map_err(|source| StorageError::Io {
                    path: path.display().to_string(),
                    source,
                })?;
                let store = LocalFileSystem::new_with_prefix(&root)?;
                Ok(Self {
                    store: Arc::new(store),
                    local_root: Some(root),
                })
            }
        }
    }

    /// A warehouse over any store (tests inject in-memory or fault-injecting stores here).
    pub fn with_store(store: Arc<dyn ObjectStore>) -> Self {
        Self {
            store,
            local_root: None,
        }
    }

    /// The object store holding every file of the warehouse.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    fn database_path(name: &str) -> Path {
        Path::from(format!("{name}{DATABASE_SUFFIX}"))
    }

    /// Names of all databases, sorted.
    pub async fn list_databases(&self) -> Result<Vec<String>, StorageError> {
        let listing = self.store.list_with_delimiter(None).await?;
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename())
            .filter_map(|f| f.strip_suffix(DATABASE_SUFFIX))
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Whether database `name` exists.
    pub async fn database_exists(&self, name: &str) -> Result<bool, StorageError> {
        Ok(self.list_databases().await?.iter().any(|n| n == name))
    }

    /// Creates database `name`; [`StorageError::DatabaseExists`] if it is there already.
    pub async fn create_database(&self, name: &str) -> Result<(), StorageError> {
        if self.database_exists(name).await? {
            return Err(StorageError::DatabaseExists(name.to_owned()));
        }
        match &self.local_root {
            Some(root) => {
                let dir = root.join(format!("{name}{DATABASE_SUFFIX}"));
                tokio::fs::create_dir_all(&dir)
                    .await
                    .map_err(|source| StorageError::Io {
                        path: dir.display().to_string(),
                        source,
                    })?;
            }
            None => {
                let marker = Self::database_path(name).join(DATABASE_MARKER);
                self.store.put(&marker, Vec::<u8>::new().into()).await?;
            }
        }
        Ok(())
    }

    /// Names of the tables (sub-folders) of database `name`.
    pub async fn list_tables(&self, name: &str) -> Result<Vec<String>, StorageError> {
        let prefix = Self::database_path(name);
        let listing = self.store.list_with_delimiter(Some(&prefix)).await?;
        let mut tables: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename())
            .map(str::to_owned)
            .collect();
        tables.sort();
        Ok(tables)
    }

    /// Drops database `name`. Without `cascade` it must hold no tables.
    pub async fn drop_database(&self, name: &str, cascade: bool) -> Result<(), StorageError> {
        if !self.database_exists(name).await? {
            return Err(StorageError::DatabaseNotFound(name.to_owned()));
        }
        if !cascade && !self.list_tables(name).await?.is_empty() {
            return Err(StorageError::DatabaseNotEmpty(name.to_owned()));
        }
        let prefix = Self::database_path(name);
        let objects: Vec<Path> = self
            .store
            .list(Some(&prefix))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await?;
        for location in objects {
            match self.store.delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(root) = &self.local_root {
            let dir = root.join(format!("{name}{DATABASE_SUFFIX}"));
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
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_locations() {
        assert_eq!(
            WarehouseLocation::parse("./wh").unwrap(),
            WarehouseLocation::Local("./wh".into())
        );
        assert_eq!(
            WarehouseLocation::parse("file:///tmp/wh").unwrap(),
            WarehouseLocation::Local("/tmp/wh".into())
        );
        assert_eq!(
            WarehouseLocation::parse("memory://").unwrap(),
            WarehouseLocation::Memory
        );
        assert!(WarehouseLocation::parse("s3://bucket/wh").is_err());
        assert!(WarehouseLocation::parse("file://relative").is_err());
        assert!(WarehouseLocation::parse("").is_err());
    }

    async fn exercise(wh: Warehouse) {
        assert!(wh.list_databases().await.unwrap().is_empty());
        wh.create_database("public").await.unwrap();
        wh.create_database("sales").await.unwrap();
        assert!(matches!(
            wh.create_database("sales").await,
            Err(StorageError::DatabaseExists(_))
        ));
        assert_eq!(wh.list_databases().await.unwrap(), ["public", "sales"]);
        // A table folder makes the database non-empty.
        wh.store()
            .put(&Path::from("sales.db/orders/schema/schema-0"), "{}".into())
            .await
            .unwrap();
        assert_eq!(wh.list_tables("sales").await.unwrap(), ["orders"]);
        assert!(matches!(
            wh.drop_database("sales", false).await,
            Err(StorageError::DatabaseNotEmpty(_))
        ));
        wh.drop_database("sales", true).await.unwrap();
        assert_eq!(wh.list_databases().await.unwrap(), ["public"]);
        assert!(matches!(
            wh.drop_database("sales", true).await,
            Err(StorageError::DatabaseNotFound(_))
        ));
    }

    #[tokio::test]
    async fn databases_on_memory_store() {
        exercise(Warehouse::open(&WarehouseLocation::Memory).unwrap()).await;
    }

    #[tokio::test]
    async fn databases_on_local_folder() {
        let dir = std::env::temp_dir().join(format!("tarn-wh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        exercise(Warehouse::open(&WarehouseLocation::Local(dir.clone())).unwrap()).await;
        assert!(
            dir.join("public.db").is_dir(),
            "Paimon expects a real folder"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
