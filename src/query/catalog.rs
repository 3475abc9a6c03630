//! The warehouse as DataFusion sees it: one catalog whose schemas are Paimon databases.
//!
//! [`WarehouseCatalog`] is shared by every session and mirrors the warehouse's database list
//! (DataFusion's catalog traits are synchronous, object stores are not: the list is refreshed
//! before a statement is planned when it is older than [`REFRESH_INTERVAL`], at once after this
//! server's DDL, and before catalog queries). Its [`generation`](WarehouseCatalog::generation)
//! moves whenever what it lists may have changed, so that plans kept by sessions are made again. [`SessionCatalog`] is what one session registers: the
//! shared catalog plus that session's virtual schemas (`pg_catalog`), so registering them never
//! touches the warehouse or another session.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};

use super::changes::{ChangelogAudit, ChangesName, changes_table};
use super::system_tables::{SystemName, system_table};
use super::table::{PaimonTable, storage_error};
use super::time_travel::VersionedName;
use super::txn::{PendingTable, TxnSlot};
use crate::storage::{StorageError, Table, Warehouse, has_changelog};

/// Every Paimon database of the warehouse, shared by all sessions.
#[derive(Debug)]
pub struct WarehouseCatalog {
    warehouse: Warehouse,
    databases: RwLock<BTreeSet<String>>,
    /// Table folders of each database at the last refresh (names only: opening a table reads
    /// the warehouse afresh, so tables created by other engines resolve at once).
    tables: RwLock<BTreeMap<String, Vec<String>>>,
    /// Moves when the lists change or this server's DDL changes a table.
    generation: AtomicU64,
    /// When the lists were last read.
    refreshed: Mutex<Option<Instant>>,
}

/// How old the database and table lists may be before a statement is planned: how long a
/// database or table made by another engine may stay unlisted (one that a statement names is
/// found at once: planning that fails refreshes and tries again).
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

impl WarehouseCatalog {
    /// A catalog over `warehouse`; call [`refresh`](Self::refresh) before use.
    pub fn new(warehouse: Warehouse) -> Self {
        Self {
            warehouse,
            databases: RwLock::new(BTreeSet::new()),
            tables: RwLock::new(BTreeMap::new()),
            generation: AtomicU64::new(0),
            refreshed: Mutex::new(None),
        }
    }

    /// Moves whenever what the catalog lists, or a table's definition, may have changed.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// This server changed a database or table (DDL): plans made before are made again.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// [`refresh`](Self::refresh) if the lists were read longer than `max_age` ago.
    pub async fn refresh_if_older(&self, max_age: Duration) -> Result<(), StorageError> {
        let fresh = self
            .refreshed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| at.elapsed() < max_age);
        if fresh {
            return Ok(());
        }
        self.refresh().await
    }

    pub fn warehouse(&self) -> &Warehouse {
        &self.warehouse
    }

    /// Re-reads the database and table lists from the warehouse (other engines may have
    /// changed them): one listing per database.
    pub async fn refresh(&self) -> Result<(), StorageError> {
        let names = self.warehouse.list_databases().await?;
        let mut tables = BTreeMap::new();
        for db in &names {
            tables.insert(db.clone(), self.warehouse.list_table_folders(db).await?);
        }
        let names: BTreeSet<String> = names.into_iter().collect();
        let changed = {
            let mut databases = self.databases.write().expect("catalog lock poisoned");
            let mut listed = self.tables.write().expect("catalog lock poisoned");
            let changed = *databases != names || *listed != tables;
            *databases = names;
            *listed = tables;
            changed
        };
        if changed {
            self.invalidate();
        }
        *self.refreshed.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(())
    }

    pub(crate) fn table_names_of(&self, database: &str) -> Vec<String> {
        self.tables
            .read()
            .expect("catalog lock poisoned")
            .get(database)
            .cloned()
            .unwrap_or_default()
    }

    /// Whether database `name` was present at the last refresh.
    pub fn has_database(&self, name: &str) -> bool {
        self.databases
            .read()
            .expect("catalog lock poisoned")
            .contains(name)
    }

    pub(crate) fn database_names(&self) -> Vec<String> {
        self.databases
            .read()
            .expect("catalog lock poisoned")
            .iter()
            .cloned()
            .collect()
    }
}

/// One Paimon database as a DataFusion schema: its tables are Paimon tables.
#[derive(Debug)]
pub struct DatabaseSchema {
    name: String,
    catalog: Arc<WarehouseCatalog>,
    txn: Option<Arc<TxnSlot>>,
}

impl DatabaseSchema {
    /// Database `name` of `catalog`'s warehouse, read through the session transaction `txn`
    /// (how a session registers its temporary tables' own warehouse as a schema).
    pub fn new(name: &str, catalog: Arc<WarehouseCatalog>, txn: Arc<TxnSlot>) -> Self {
        Self {
            name: name.to_owned(),
            catalog,
            txn: Some(txn),
        }
    }

    /// Table `name` of this database, read afresh — or as the session's transaction block's
    /// pending DDL left it; `None` if there is none.
    async fn open(&self, name: &str) -> Result<Option<Table>> {
        if let Some(pending) = self.pending(name) {
            return Ok(pending.table().cloned());
        }
        match self.catalog.warehouse.open_table(&self.name, name).await {
            Ok(t) => Ok(Some(t)),
            Err(StorageError::TableNotFound(_)) => Ok(None),
            Err(e) => Err(storage_error(e)),
        }
    }

    fn pending(&self, name: &str) -> Option<PendingTable> {
        self.txn.as_ref()?.current()?.pending(&self.name, name)
    }
}

#[async_trait::async_trait]
impl SchemaProvider for DatabaseSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.catalog.table_names_of(&self.name);
        if let Some(txn) = self.txn.as_ref().and_then(|slot| slot.current()) {
            for ((db, name), pending) in txn.pending_tables() {
                if db != self.name {
                    continue;
                }
                names.retain(|n| *n != name);
                if pending.table().is_some() {
                    names.push(name);
                }
            }
        }
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(system) = SystemName::parse(name) {
            let Some(table) = self.open(&system.table).await? else {
                return Ok(None);
            };
            let snapshot = match &system.version {
                Some(v) => Some(table.resolve_version(v).await.map_err(storage_error)?),
                None => None,
            };
            if system.kind == "audit_log" {
                // With a changelog, Paimon's audit log is every change (its streaming read).
                if has_changelog(table.schema()) {
                    return Ok(Some(Arc::new(ChangelogAudit::new(table, snapshot)?)));
                }
                return Ok(Some(Arc::new(PaimonTable::audit_log(table, snapshot)?)));
            }
            return system_table(&table, &system.kind, snapshot.as_ref()).await;
        }
        if let Some(changes) = ChangesName::parse(name) {
            return match self.open(&changes.table).await? {
                Some(t) => changes_table(t, &changes).await.map(Some),
                None => Ok(None),
            };
        }
        if let Some(versioned) = VersionedName::parse(name) {
            let Some(table) = self.open(&versioned.table).await? else {
                return Ok(None);
            };
            let snapshot = table
                .resolve_read_version(&versioned.version)
                .await
                .map_err(storage_error)?;
            // A past version reads in the shape it had: the schema its snapshot was committed
            // under (columns added later absent, renamed ones under their old names).
            let table = if snapshot.schema_id == table.schema().id {
                table
            } else {
                let old = table
                    .schema_by_id(snapshot.schema_id)
                    .await
                    .map_err(storage_error)?;
                table.with_schema(old)
            };
            return Ok(Some(Arc::new(PaimonTable::at_version(table, snapshot)?)));
        }
        match self.open(name).await? {
            Some(table) => Ok(Some(Arc::new(PaimonTable::with_txn(
                table,
                self.txn.clone(),
            )?))),
            None => Ok(None),
        }
    }

    fn register_table(
        &self,
        name: String,
        _table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        Err(DataFusionError::NotImplemented(format!(
            "cannot register table \"{}.{name}\": tables are created with CREATE TABLE",
            self.name
        )))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.table_names().iter().any(|t| t == name)
    }
}

/// The catalog one session registers under the database name it connected with.
#[derive(Debug)]
pub struct SessionCatalog {
    shared: Arc<WarehouseCatalog>,
    /// The session's running transaction, read by its tables' scans.
    txn: Arc<TxnSlot>,
    /// Virtual schemas of this session only (`pg_catalog`), by name.
    virtual_schemas: RwLock<BTreeMap<String, Arc<dyn SchemaProvider>>>,
}

impl SessionCatalog {
    pub fn new(shared: Arc<WarehouseCatalog>, txn: Arc<TxnSlot>) -> Self {
        Self {
            shared,
            txn,
            virtual_schemas: RwLock::new(BTreeMap::new()),
        }
    }
}

impl CatalogProvider for SessionCatalog {
    fn schema_names(&self) -> Vec<String> {
        let mut names = self.shared.database_names();
        names.extend(
            self.virtual_schemas
                .read()
                .expect("catalog lock poisoned")
                .keys()
                .cloned(),
        );
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if let Some(schema) = self
            .virtual_schemas
            .read()
            .expect("catalog lock poisoned")
            .get(name)
        {
            return Some(Arc::clone(schema));
        }
        self.shared.has_database(name).then(|| {
            Arc::new(DatabaseSchema {
                name: name.to_owned(),
                catalog: Arc::clone(&self.shared),
                txn: Some(Arc::clone(&self.txn)),
            }) as Arc<dyn SchemaProvider>
        })
    }

    /// Only virtual schemas are registered this way (DataFusion's own `CREATE SCHEMA` never
    /// reaches here: the server creates Paimon databases itself).
    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        Ok(self
            .virtual_schemas
            .write()
            .expect("catalog lock poisoned")
            .insert(name.to_owned(), schema))
    }
}
