//! The warehouse as DataFusion sees it: one catalog whose schemas are Paimon databases.
//!
//! [`WarehouseCatalog`] is shared by every session and mirrors the warehouse's database list
//! (DataFusion's catalog traits are synchronous, object stores are not: the list is refreshed
//! before each statement is planned). [`SessionCatalog`] is what one session registers: the
//! shared catalog plus that session's virtual schemas (`pg_catalog`), so registering them never
//! touches the warehouse or another session.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};

use crate::storage::{StorageError, Warehouse};

/// Every Paimon database of the warehouse, shared by all sessions.
#[derive(Debug)]
pub struct WarehouseCatalog {
    warehouse: Warehouse,
    databases: RwLock<BTreeSet<String>>,
}

impl WarehouseCatalog {
    /// A catalog over `warehouse`; call [`refresh`](Self::refresh) before use.
    pub fn new(warehouse: Warehouse) -> Self {
        Self {
            warehouse,
            databases: RwLock::new(BTreeSet::new()),
        }
    }

    pub fn warehouse(&self) -> &Warehouse {
        &self.warehouse
    }

    /// Re-reads the database list from the warehouse (other engines may have changed it).
    pub async fn refresh(&self) -> Result<(), StorageError> {
        let names = self.warehouse.list_databases().await?;
        *self.databases.write().expect("catalog lock poisoned") = names.into_iter().collect();
        Ok(())
    }

    /// Whether database `name` was present at the last refresh.
    pub fn has_database(&self, name: &str) -> bool {
        self.databases
            .read()
            .expect("catalog lock poisoned")
            .contains(name)
    }

    fn database_names(&self) -> Vec<String> {
        self.databases
            .read()
            .expect("catalog lock poisoned")
            .iter()
            .cloned()
            .collect()
    }
}

/// One Paimon database as a DataFusion schema. Tables are served by later layers; until then
/// a database lists none and refuses to create them.
#[derive(Debug)]
pub struct DatabaseSchema {
    name: String,
}

#[async_trait::async_trait]
impl SchemaProvider for DatabaseSchema {
    fn table_names(&self) -> Vec<String> {
        Vec::new()
    }

    async fn table(&self, _name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(None)
    }

    fn register_table(
        &self,
        name: String,
        _table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        Err(DataFusionError::NotImplemented(format!(
            "cannot create table \"{}.{name}\": tarn does not create Paimon tables yet",
            self.name
        )))
    }

    fn table_exist(&self, _name: &str) -> bool {
        false
    }
}

/// The catalog one session registers under the database name it connected with.
#[derive(Debug)]
pub struct SessionCatalog {
    shared: Arc<WarehouseCatalog>,
    /// Virtual schemas of this session only (`pg_catalog`), by name.
    virtual_schemas: RwLock<BTreeMap<String, Arc<dyn SchemaProvider>>>,
}

impl SessionCatalog {
    pub fn new(shared: Arc<WarehouseCatalog>) -> Self {
        Self {
            shared,
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
