//! The warehouse root: which databases exist, creating and dropping them.
//!
//! Paimon's filesystem catalog keeps each database as a folder `<name>.db` under the warehouse
//! root, with one sub-folder per table. A local warehouse gets real directories (what Paimon's
//! `mkdirs` does, so Paimon engines see an empty database too); object stores have no empty
//! folders, so there an empty marker object keeps a new database visible.

use std::path::PathBuf;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;

use crate::storage::StorageError;
use crate::storage::commit::hooks::CommitHooks;
use crate::storage::commit::logged::{FlushPolicy, LogService, drain_locked, table_key};
use crate::storage::commit::state::CommitState;
use crate::storage::io::clock::{Clock, SystemClock};
use crate::storage::io::file_io::FileIO;
use crate::storage::lsm::unflushed::UnflushedState;
use crate::storage::maintenance::hooks::Maintenance;
use crate::storage::meta::table::{
    Table, TableRegistry, TableShared, latest_schema_id, schema_path, table_path,
};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::schema_change::{self, SchemaChange};

/// Suffix of a database folder in a Paimon filesystem-catalog warehouse.
pub use crate::storage::meta::table::DATABASE_SUFFIX;
/// Object that keeps an otherwise empty database visible on stores without folders.
const DATABASE_MARKER: &str = ".tarn-database";
/// How often ALTER TABLE makes its change again on top of a schema another engine wrote
/// first.
const ALTER_ATTEMPTS: usize = 5;

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
    io: FileIO,
    tables: Arc<TableRegistry>,
    clock: Arc<dyn Clock>,
    /// The commit log, when it is on (`commit/logged.rs`).
    log: Option<Arc<LogService>>,
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
                    io: FileIO::new(Arc::new(store), Some(root)),
                    tables: Arc::default(),
                    clock: Arc::new(SystemClock),
                    log: None,
                })
            }
        }
    }

    /// The shared state of table `database.name`, with the maintenance floor's commit hooks
    /// registered on it.
    fn shared(&self, database: &str, name: &str) -> Arc<TableShared> {
        let shared = self.tables.shared(database, name);
        let hooks: Arc<dyn CommitHooks> = Arc::new(Maintenance);
        let commit = match &self.log {
            Some(log) => {
                let flushed = log.flushed(&table_key(database, name));
                shared
                    .state::<UnflushedState>()
                    .set_own_user(log.commit_user());
                shared.state_with(|_| CommitState::with_log(Arc::clone(log), flushed))
            }
            None => shared.state::<CommitState>(),
        };
        commit.register_hooks(&hooks);
        shared
    }

    /// Turns the commit log on (see `commit/logged.rs`): opens it in `dir` on the local disk,
    /// replays the records tables still need, flushes them, and starts the flusher. Call it
    /// before any table is opened.
    pub async fn with_commit_log(
        mut self,
        dir: PathBuf,
        policy: FlushPolicy,
    ) -> Result<Self, StorageError> {
        let (service, records) = LogService::open(dir, policy).await?;
        self.log = Some(Arc::clone(&service));
        let replayed = records.len();
        for (lsn, payload) in records {
            service
                .replay(lsn, &payload, |key| {
                    let warehouse = self.clone();
                    async move { warehouse.open_by_key(&key).await }
                })
                .await?;
        }
        service.flush_all().await?;
        if replayed > 0 {
            tracing::info!(records = replayed, "commit log replayed and flushed");
        }
        service.start_flusher(Arc::clone(&self.clock));
        Ok(self)
    }

    /// The commit log, when it is on.
    pub fn commit_log(&self) -> Option<&Arc<LogService>> {
        self.log.as_ref()
    }

    /// The table of a commit-log key (`db.db/table`), `None` when it no longer exists.
    async fn open_by_key(&self, key: &str) -> Result<Option<Table>, StorageError> {
        let Some((database, name)) = key
            .split_once('/')
            .and_then(|(d, n)| Some((d.strip_suffix(DATABASE_SUFFIX)?, n)))
        else {
            return Ok(None);
        };
        if !self.table_exists(database, name).await? {
            return Ok(None);
        }
        self.open_table(database, name).await.map(Some)
    }

    /// A warehouse over any store (tests inject in-memory or fault-injecting stores here).
    pub fn with_store(store: Arc<dyn ObjectStore>) -> Self {
        Self {
            io: FileIO::new(store, None),
            tables: Arc::default(),
            clock: Arc::new(SystemClock),
            log: None,
        }
    }

    /// The same warehouse with `latency` added to each durable write (see
    /// [`FileIO::with_write_latency`]).
    pub fn with_write_latency(mut self, latency: std::time::Duration) -> Self {
        self.io = self.io.with_write_latency(latency);
        self
    }

    /// The same warehouse with `bytes` as the memory budget of every table's caches together
    /// (default [`DEFAULT_CACHE_MEMORY`](crate::storage::DEFAULT_CACHE_MEMORY)); what no
    /// longer fits is evicted at once.
    pub fn with_cache_memory(self, bytes: usize) -> Self {
        self.tables.cache_budget().set_limit(bytes);
        self
    }

    /// The same warehouse with commit times from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub(crate) fn tables(&self) -> &Arc<TableRegistry> {
        &self.tables
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The object store holding every file of the warehouse.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        self.io.store()
    }

    pub fn io(&self) -> &FileIO {
        &self.io
    }

    fn database_path(name: &str) -> Path {
        Path::from(format!("{name}{DATABASE_SUFFIX}"))
    }

    /// Names of all databases, sorted.
    pub async fn list_databases(&self) -> Result<Vec<String>, StorageError> {
        let (_, dirs) = self.io.list_dir(&Path::default()).await?;
        let mut names: Vec<String> = dirs
            .iter()
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
        if self.io.local_root().is_some() {
            self.io.create_dir(&Self::database_path(name)).await
        } else {
            let marker = Self::database_path(name).join(DATABASE_MARKER);
            self.io.write(&marker, Vec::<u8>::new()).await
        }
    }

    /// Names of the tables of database `name` (folders holding a `schema/` folder), sorted.
    pub async fn list_tables(&self, name: &str) -> Result<Vec<String>, StorageError> {
        let (_, dirs) = self.io.list_dir(&Self::database_path(name)).await?;
        let mut tables = Vec::new();
        for dir in dirs {
            if self.table_exists(name, &dir).await? {
                tables.push(dir);
            }
        }
        tables.sort();
        Ok(tables)
    }

    /// Sub-folders of database `name` (tables, unchecked), sorted: one listing.
    pub async fn list_table_folders(&self, name: &str) -> Result<Vec<String>, StorageError> {
        let (_, mut dirs) = self.io.list_dir(&Self::database_path(name)).await?;
        dirs.sort();
        Ok(dirs)
    }

    /// Whether `database.name` is a table (has at least one schema file).
    pub async fn table_exists(&self, database: &str, name: &str) -> Result<bool, StorageError> {
        let dir = table_path(database, name).join("schema");
        let (objects, _) = self.io.list_dir(&dir).await?;
        Ok(objects.iter().any(|m| {
            m.location
                .filename()
                .is_some_and(|f| f.starts_with("schema-"))
        }))
    }

    /// Opens `database.name` at its latest schema.
    pub async fn open_table(&self, database: &str, name: &str) -> Result<Table, StorageError> {
        let latest = latest_schema_id(&self.io, &table_path(database, name))
            .await?
            .ok_or_else(|| StorageError::TableNotFound(name.to_owned()))?;
        let shared = self.shared(database, name);
        let schema = shared
            .schema(&self.io, &table_path(database, name), latest)
            .await?;
        Ok(Table::new(
            self.io.clone(),
            Arc::clone(&self.clock),
            database,
            name,
            schema,
            shared,
        ))
    }

    /// Creates table `database.name` with `schema` (written as `schema-0`, atomically: of two
    /// concurrent creators exactly one wins). [`StorageError::TableExists`] if it exists.
    pub async fn create_table(
        &self,
        database: &str,
        name: &str,
        mut schema: TableSchema,
    ) -> Result<Table, StorageError> {
        schema.id = 0;
        self.write_first_schema(database, name, &schema).await?;
        self.tables.forget(database, name);
        let shared = self.shared(database, name);
        Ok(Table::new(
            self.io.clone(),
            Arc::clone(&self.clock),
            database,
            name,
            Arc::new(schema),
            shared,
        ))
    }

    /// A handle of `database.name` under `schema`, which is not written yet: a table a
    /// transaction block creates, seen by the block's own statements until its COMMIT writes
    /// the schema ([`create_pending`](Self::create_pending)). The table's shared state is
    /// started afresh when no table of that name exists (as [`create_table`](Self::create_table)
    /// does), so the handle's writes commit under the same state as every later handle.
    pub async fn pending_table(
        &self,
        database: &str,
        name: &str,
        schema: TableSchema,
    ) -> Result<Table, StorageError> {
        if !self.table_exists(database, name).await? {
            self.tables.forget(database, name);
        }
        let shared = self.shared(database, name);
        Ok(Table::unwritten(
            self.io.clone(),
            Arc::clone(&self.clock),
            database,
            name,
            Arc::new(schema),
            shared,
        ))
    }

    /// Writes the schema of `table`, a [`pending_table`](Self::pending_table), as the table's
    /// `schema-0` (create-if-absent: [`StorageError::TableExists`] if another creator won).
    pub async fn create_pending(&self, table: &Table) -> Result<(), StorageError> {
        self.write_first_schema(table.database(), table.name(), table.schema())
            .await
    }

    /// Writes `schema` as `database.name`'s `schema-0`, create-if-absent:
    /// [`StorageError::TableExists`] if the table exists or another creator won.
    async fn write_first_schema(
        &self,
        database: &str,
        name: &str,
        schema: &TableSchema,
    ) -> Result<(), StorageError> {
        if !self.database_exists(database).await? {
            return Err(StorageError::DatabaseNotFound(database.to_owned()));
        }
        schema.validate()?;
        if self.table_exists(database, name).await? {
            return Err(StorageError::TableExists(name.to_owned()));
        }
        let path = schema_path(&table_path(database, name), 0);
        if !self.io.write_new(&path, schema.to_json()).await? {
            return Err(StorageError::TableExists(name.to_owned()));
        }
        Ok(())
    }

    /// The id of `database.name`'s latest schema, `None` if the table does not exist.
    pub async fn schema_id(&self, database: &str, name: &str) -> Result<Option<i64>, StorageError> {
        latest_schema_id(&self.io, &table_path(database, name)).await
    }

    /// The schema `table` would have after `changes`, written nowhere (see
    /// [`schema_change::evolve`]): what a transaction block's ALTER TABLE shows its own
    /// statements until COMMIT applies the changes with [`alter_table`](Self::alter_table).
    pub async fn evolved(
        &self,
        table: &Table,
        changes: &[SchemaChange],
    ) -> Result<TableSchema, StorageError> {
        let has_snapshots = table.snapshots().latest_id().await?.is_some();
        Ok(schema_change::evolve(
            table.schema(),
            changes,
            has_snapshots,
            self.clock.now_millis(),
        )?)
    }

    /// Applies `changes` to `database.name` as its next `schema-N` (see
    /// [`schema_change::evolve`] for the rules), atomically with respect to the table's
    /// commits: under the table's commit lock, after the commit log's transactions of the
    /// table are flushed (a replay never crosses a schema change), the latest schema is read
    /// again, evolved, and written create-if-absent — when another engine wrote that id first,
    /// the change is made again on top of its schema. Commits of this server whose handle
    /// predates the change are refused afterwards (40001: they run again under the new
    /// schema; see `commit/committer.rs`). Returns the new schema — the latest one, with no
    /// file written, when the changes change nothing.
    pub async fn alter_table(
        &self,
        database: &str,
        name: &str,
        changes: Vec<SchemaChange>,
    ) -> Result<TableSchema, StorageError> {
        let table = self.open_table(database, name).await?;
        let commit = table.state::<CommitState>();
        let _lock = commit.lock.lock().await;
        if let Some(log) = &commit.log {
            drain_locked(log, &table).await?;
        }
        let path = table_path(database, name);
        for _ in 0..ALTER_ATTEMPTS {
            let latest = latest_schema_id(&self.io, &path)
                .await?
                .ok_or_else(|| StorageError::TableNotFound(name.to_owned()))?;
            let latest = table.schema_by_id(latest).await?;
            let has_snapshots = table.snapshots().latest_id().await?.is_some();
            let next =
                schema_change::evolve(&latest, &changes, has_snapshots, self.clock.now_millis())?;
            let unchanged = TableSchema {
                id: latest.id,
                time_millis: latest.time_millis,
                ..next.clone()
            };
            if unchanged == *latest {
                // Nothing to record (a type or an option set to what it is).
                return Ok(unchanged);
            }
            if self
                .io
                .write_new(&schema_path(&path, next.id), next.to_json())
                .await?
            {
                return Ok(next);
            }
        }
        Err(StorageError::CommitConflict(format!(
            "the schema of {database}.{name} kept changing under other engines' ALTERs; run the \
             ALTER TABLE again"
        )))
    }

    /// Renames table `database.from` to `database.to` (its folder: nothing inside names the
    /// table). Local warehouses only — an object store has no folder to rename in one step.
    /// Under the table's commit lock, after the commit log's transactions of the table are
    /// flushed; never replaces anything at `to` ([`StorageError::TableExists`]). Handles of the
    /// old name opened before cannot commit afterwards (40001), and the commit log forgets
    /// the old name, as for a dropped table.
    pub async fn rename_table(
        &self,
        database: &str,
        from: &str,
        to: &str,
    ) -> Result<(), StorageError> {
        if self.io.local_root().is_none() {
            return Err(StorageError::Unsupported(format!(
                "cannot rename table \"{from}\": renaming needs a local warehouse (an object \
                 store has no folder to rename in one step)"
            )));
        }
        if !self.table_exists(database, from).await? {
            return Err(StorageError::TableNotFound(from.to_owned()));
        }
        if from == to || self.table_exists(database, to).await? {
            return Err(StorageError::TableExists(to.to_owned()));
        }
        let table = self.open_table(database, from).await?;
        let commit = table.state::<CommitState>();
        {
            let _lock = commit.lock.lock().await;
            if let Some(log) = &commit.log {
                drain_locked(log, &table).await?;
            }
            if !self
                .io
                .rename_dir(&table_path(database, from), &table_path(database, to))
                .await?
            {
                return Err(StorageError::TableExists(to.to_owned()));
            }
            commit.retire();
            self.tables.forget(database, from);
            self.tables.forget(database, to);
        }
        if let Some(log) = &self.log {
            log.forget_table(&table_key(database, from)).await?;
        }
        Ok(())
    }

    /// Before a table is dropped: a flush or commit of it under way finishes first, then what
    /// the commit log still holds of it is erased, so no flush writes into its folder once it
    /// is gone.
    async fn erase_unflushed(&self, database: &str, name: &str) {
        let shared = self.tables.shared(database, name);
        let commit = shared.state::<CommitState>();
        let _lock = commit.lock.lock().await;
        shared.state::<UnflushedState>().erase_all();
    }

    /// Drops table `database.name` and every file under it.
    pub async fn drop_table(&self, database: &str, name: &str) -> Result<(), StorageError> {
        if !self.table_exists(database, name).await? {
            return Err(StorageError::TableNotFound(name.to_owned()));
        }
        self.erase_unflushed(database, name).await;
        self.io.delete_dir(&table_path(database, name)).await?;
        self.tables.forget(database, name);
        if let Some(log) = &self.log {
            log.forget_table(&table_key(database, name)).await?;
        }
        Ok(())
    }

    /// Drops database `name`. Without `cascade` it must hold no tables.
    pub async fn drop_database(&self, name: &str, cascade: bool) -> Result<(), StorageError> {
        if !self.database_exists(name).await? {
            return Err(StorageError::DatabaseNotFound(name.to_owned()));
        }
        let tables = self.list_tables(name).await?;
        if !cascade && !tables.is_empty() {
            return Err(StorageError::DatabaseNotEmpty(name.to_owned()));
        }
        for table in &tables {
            self.erase_unflushed(name, table).await;
            if let Some(log) = &self.log {
                log.forget_table(&table_key(name, table)).await?;
            }
        }
        self.io.delete_dir(&Self::database_path(name)).await?;
        self.tables.forget_database(name);
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
        wh.io()
            .write(
                &Path::from("sales.db/orders/schema/schema-0"),
                "{}".to_owned(),
            )
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
