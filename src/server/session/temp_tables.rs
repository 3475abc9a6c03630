//! Temporary tables: `CREATE TEMP TABLE`, the session's own tables, gone when it ends.
//!
//! A session's temporary tables are Paimon tables like any other, in a warehouse of their
//! own over an in-memory object store that lives as long as the session: the same SQL works
//! on them (keys, ON CONFLICT, UPDATE/DELETE/MERGE, COPY, transactions, savepoints), nothing
//! of them reaches the warehouse folder, other sessions and other engines never see them, and
//! a closed connection (or a crash) leaves nothing behind. Their database is `pg_temp_<pid>`,
//! reachable as `pg_temp` too, registered in the session's catalog at the first CREATE TEMP
//! TABLE; as in PostgreSQL it is searched before `search_path` (`sql::temp_tables` qualifies
//! unqualified names of statements, [`Session::find_table`] those of DDL), so a temporary
//! table hides a permanent one of the same name.
//!
//! DDL on them inside a transaction block is pending until COMMIT like any block DDL
//! (`block_ddl.rs`), routed to this warehouse by [`Session::warehouse_for`]. `ON COMMIT
//! DELETE ROWS` empties the table after every commit, `ON COMMIT DROP` drops it at the commit
//! of the transaction that made it (at once for a statement outside a block, as in
//! PostgreSQL). Their rows are held in memory: a temporary table is for working sets, not for
//! data larger than the server's memory. pg_catalog lists them (`relpersistence` `t`, in
//! `pg_temp_<pid>`), so psql's `\d` shows them; information_schema does not yet. Identity and
//! SERIAL columns are refused for now (their sequences are warehouse documents, shared by
//! every session), and so is RENAME TO (the in-memory store has no folders to rename).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::catalog::SchemaProvider;
use datafusion::sql::parser::Statement as DFStatement;
use object_store::memory::InMemory;

use super::Session;
use super::block_ddl::PendingDdl;
use crate::query::{DatabaseSchema, WarehouseCatalog};
use crate::server::error::PgError;
use crate::sql::create_table::OnCommitAction;
use crate::sql::views::ViewCommand;
use crate::storage::{StorageError, Warehouse};

/// The alias PostgreSQL gives every session's temporary schema.
pub(super) const TEMP_ALIAS: &str = "pg_temp";

/// A session's temporary tables (see the module docs).
pub(super) struct TempTables {
    /// `pg_temp_<pid>`: the database of the temporary warehouse.
    db: String,
    catalog: Arc<WarehouseCatalog>,
    schema: Arc<DatabaseSchema>,
    /// What each commit does to a table made with `ON COMMIT DELETE ROWS | DROP`.
    on_commit: BTreeMap<String, OnCommitAction>,
}

impl TempTables {
    /// Names of the temporary tables as the session's statements see them (its block's
    /// pending DDL included).
    fn names(&self) -> HashSet<String> {
        self.schema.table_names().into_iter().collect()
    }
}

impl Session {
    /// The warehouse holding database `db`: the session's temporary one for its temporary
    /// schema, the server's otherwise.
    pub(super) fn warehouse_for(&self, db: &str) -> &Warehouse {
        match &self.temp_tables {
            Some(temp) if temp.db == db => temp.catalog.warehouse(),
            _ => self.engine.catalog().warehouse(),
        }
    }

    /// The database behind schema name `schema` when it is the temporary schema (by its
    /// alias `pg_temp` or its own name).
    pub(super) fn temp_schema(&self, schema: &str) -> Option<String> {
        let own = format!("pg_temp_{}", self.vars.pid);
        (schema == TEMP_ALIAS || schema == own).then_some(own)
    }

    /// The temporary database, if the session has made one.
    pub(super) fn temp_tables_db(&self) -> Option<String> {
        self.temp_tables.as_ref().map(|t| t.db.clone())
    }

    /// Whether `db` is the session's temporary database.
    pub(super) fn is_temp_db(&self, db: &str) -> bool {
        self.temp_tables.as_ref().is_some_and(|t| t.db == db)
    }

    /// The temporary database, made (with its warehouse, registered in the session's
    /// catalog) at the first CREATE TEMP TABLE.
    pub(super) async fn temp_database(&mut self) -> Result<String, PgError> {
        if let Some(temp) = &self.temp_tables {
            return Ok(temp.db.clone());
        }
        let db = format!("pg_temp_{}", self.vars.pid);
        let main = self.engine.catalog().warehouse();
        let warehouse =
            Warehouse::with_store(Arc::new(InMemory::new())).with_clock(Arc::clone(main.clock()));
        warehouse.create_database(&db).await?;
        let catalog = Arc::new(WarehouseCatalog::new(warehouse));
        catalog.refresh().await?;
        let schema = Arc::new(DatabaseSchema::new(
            &db,
            Arc::clone(&catalog),
            Arc::clone(&self.slot),
        ));
        let name = self
            .ctx
            .state()
            .config()
            .options()
            .catalog
            .default_catalog
            .clone();
        let Some(session_catalog) = self.ctx.catalog(&name) else {
            return Err(PgError::new(
                "XX000",
                "the session's catalog is not registered",
            ));
        };
        for alias in [TEMP_ALIAS, db.as_str()] {
            session_catalog
                .register_schema(alias, Arc::clone(&schema) as Arc<dyn SchemaProvider>)?;
        }
        *self
            .vars
            .temp_catalog
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&catalog));
        self.temp_tables = Some(TempTables {
            db: db.clone(),
            catalog,
            schema,
            on_commit: BTreeMap::new(),
        });
        self.invalidate_state();
        Ok(db)
    }

    /// Re-reads the temporary tables' list after DDL on them.
    pub(super) async fn refresh_temp_tables(&self) -> Result<(), PgError> {
        if let Some(temp) = &self.temp_tables {
            temp.catalog.refresh().await?;
        }
        Ok(())
    }

    /// Remembers what each commit does to the new temporary table `name`.
    pub(super) fn set_on_commit(&mut self, name: &str, action: OnCommitAction) {
        if let Some(temp) = &mut self.temp_tables {
            match action {
                OnCommitAction::PreserveRows => temp.on_commit.remove(name),
                action => temp.on_commit.insert(name.to_owned(), action),
            };
        }
    }

    /// Gives the unqualified names of `statement` that are temporary tables the temporary
    /// schema (`sql::temp_tables`).
    pub(super) fn qualify_temp_names(&self, statement: &mut DFStatement) {
        if let Some(temp) = &self.temp_tables {
            crate::sql::temp_tables::qualify(statement, &temp.db, &temp.names());
        }
    }

    /// CREATE VIEW over a temporary table is refused: the view would outlive it (PostgreSQL
    /// makes such a view temporary itself; tarn keeps no temporary views).
    pub(super) fn refuse_view_over_temp(&self, command: &ViewCommand) -> Result<(), PgError> {
        let (Some(temp), ViewCommand::Create { sql, name, .. }) = (&self.temp_tables, command)
        else {
            return Ok(());
        };
        let reads = crate::sql::parse(sql)?.iter().any(|c| match c {
            crate::sql::Command::Plan(s) => {
                crate::sql::temp_tables::references(s, &temp.db, &temp.names())
            }
            _ => false,
        });
        if reads {
            return Err(PgError::new(
                "0A000",
                format!("view \"{name}\" cannot read temporary tables: it would outlive them"),
            )
            .with_hint("Use a permanent table, or run the view's query directly."));
        }
        Ok(())
    }

    /// A table reference as written (`COPY t FROM STDIN`'s), given the temporary schema when
    /// it is unqualified and names a temporary table.
    pub(super) fn temp_reference(&self, reference: &str) -> String {
        if let Some(temp) = &self.temp_tables
            && let datafusion::common::TableReference::Bare { table } =
                datafusion::common::TableReference::parse_str(reference)
            && temp.names().contains(table.as_ref())
        {
            return format!("{}.{reference}", crate::query::quote_ident(&temp.db));
        }
        reference.to_owned()
    }

    /// After a transaction ends outside a block: `ON COMMIT DROP` tables are dropped and
    /// `ON COMMIT DELETE ROWS` ones emptied. A table the transaction did not leave (its block
    /// rolled back) is forgotten.
    pub(super) async fn temp_tables_on_commit(&mut self) -> Result<(), PgError> {
        let Some(temp) = &mut self.temp_tables else {
            return Ok(());
        };
        if temp.on_commit.is_empty() {
            return Ok(());
        }
        let warehouse = temp.catalog.warehouse().clone();
        let mut dropped = false;
        let actions = std::mem::take(&mut temp.on_commit);
        let mut kept = BTreeMap::new();
        for (name, action) in actions {
            match warehouse.open_table(&temp.db, &name).await {
                Ok(table) => match action {
                    OnCommitAction::Drop => {
                        warehouse.drop_table(&temp.db, &name).await?;
                        dropped = true;
                    }
                    _ => {
                        // Only a table holding rows is emptied (no snapshot per statement).
                        let latest = table.snapshots().latest().await?;
                        if latest.is_some_and(|s| s.total_record_count != Some(0)) {
                            crate::storage::truncate(&table).await?;
                        }
                        kept.insert(name, action);
                    }
                },
                Err(StorageError::TableNotFound(_)) => {}
                Err(e) => {
                    kept.insert(name, action);
                    temp.on_commit = kept;
                    return Err(e.into());
                }
            }
        }
        temp.on_commit = kept;
        if dropped {
            temp.catalog.refresh().await?;
            self.engine.catalog().invalidate();
        }
        Ok(())
    }

    /// The block's DDL of temporary tables, taken out of the block's DDL at COMMIT.
    pub(super) fn take_temp_ddl(&mut self) -> Vec<PendingDdl> {
        match self.temp_tables_db() {
            Some(db) => self.block_ddl.take_database(&db),
            None => Vec::new(),
        }
    }

    /// Writes `ops` (a committing block's DDL of temporary tables) to the temporary
    /// warehouse. No other session or engine writes there, so nothing is checked first.
    pub(super) async fn write_temp_ddl(&mut self, ops: Vec<PendingDdl>) -> Result<(), PgError> {
        let Some(temp) = &self.temp_tables else {
            return Ok(());
        };
        if ops.is_empty() {
            return Ok(());
        }
        let warehouse = temp.catalog.warehouse();
        for op in ops {
            match op {
                PendingDdl::Create { table, .. } => warehouse.create_pending(&table).await?,
                PendingDdl::Alter { table, changes, .. } => {
                    warehouse
                        .alter_table(table.database(), table.name(), changes)
                        .await?;
                }
                PendingDdl::Rename { db, from, to } => {
                    warehouse.rename_table(&db, &from, &to).await?
                }
                PendingDdl::Drop { db, name } => warehouse.drop_table(&db, &name).await?,
            }
        }
        temp.catalog.refresh().await?;
        self.engine.catalog().invalidate();
        Ok(())
    }

    /// `DISCARD TEMP` (and `DISCARD ALL`): every temporary table dropped.
    pub(super) async fn discard_temp_tables(&mut self) -> Result<(), PgError> {
        let Some(temp) = &mut self.temp_tables else {
            return Ok(());
        };
        let warehouse = temp.catalog.warehouse().clone();
        for name in warehouse.list_table_folders(&temp.db).await? {
            match warehouse.drop_table(&temp.db, &name).await {
                Ok(()) | Err(StorageError::TableNotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        temp.on_commit.clear();
        temp.catalog.refresh().await?;
        self.engine.catalog().invalidate();
        Ok(())
    }
}
