//! DDL inside a transaction block: it commits with the block, or not at all.
//!
//! PostgreSQL's DDL is transactional, and migration tools (Alembic, Flyway, Django) change a
//! schema and their version table in one block. tarn keeps a block's CREATE TABLE, ALTER
//! TABLE, COMMENT ON, RENAME TO and DROP TABLE pending until COMMIT:
//! - the block's own statements see the tables as that DDL left them (the transaction's
//!   `PendingTable`s, consulted by the catalog before the warehouse), other sessions see
//!   nothing of it;
//! - ROLLBACK, an error ending the block, ROLLBACK TO a savepoint before it, or a connection
//!   that goes away forget it (the sequences of identity columns, made at once, are dropped);
//! - COMMIT first checks every pending change against the warehouse as it is now (the names
//!   to create still free, each altered table still at the schema the block evolved: 42P07 /
//!   40001 and nothing written on a conflict), then commits the DDL and the block's writes
//!   together through `storage/block_ddl.rs` ([`commit_block_ddl`](Session::commit_block_ddl)):
//!   1. a durable intent (`_tarn/ddl/block-<id>.json`) naming every change, before anything
//!      else is written;
//!   2. the reversible DDL in statement order: created tables' `schema-0`, each altered
//!      table's evolved schema as `schema-<base+1>` (all of a table's ALTERs as one), folder
//!      renames; an error here undoes them at once, and the block fails with that error;
//!   3. the commit point: the block's writes (their commit-log record names the block), or,
//!      for a block without writes, a durable decision file;
//!   4. the drops (irreversible, so only after the commit point), the intent's removal, then
//!      the sequences that follow renamed columns and tables or go with dropped tables.
//!
//!   A crash anywhere is settled at the next start (`Warehouse::recover_blocks`): forward
//!   when the commit point was passed (or the block's new schemas are already in use), back
//!   otherwise. A refused commit of the writes (a conflict, a duplicate key) undoes the DDL at
//!   once; an I/O failure of the commit itself leaves its outcome unknown (the error's hint
//!   says so) and the DDL stays until the next start settles it. TRUNCATE in a block deletes
//!   the rows in the block's transaction instead of replacing the table's files.
//!
//! What is refused (0A000, "COMMIT first"), because the block's writes and its DDL could not
//! then commit together: ALTER of a table the block has written, writing a table the block
//! renamed, renaming a table the block created, altered or wrote, and creating a table
//! under a name the block dropped.
//!
//! Not covered: the sequences' updates of step 4 are not part of the atomic unit (a crash
//! right after the commit point leaves a renamed table's or column's sequence under its old
//! owner name, a dropped table's sequence in place); writes that commit directly into a
//! snapshot rather than through the commit log are recognised after a crash only through the
//! decision or the block's new schemas (see `storage/block_ddl.rs`); other engines may
//! briefly see a `schema-N` or a created table that is then undone. pg_catalog and
//! information_schema show the committed tables only, not the block's pending ones.

use std::collections::BTreeSet;

use super::dml::{abort, commit, commit_in};
use super::{Session, TxState};
use crate::query::quote_ident;
use crate::query::txn::{PendingTable, PendingTables, Transaction};
use crate::server::error::PgError;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::schema_change::SchemaChange;
use crate::storage::{BlockCommit, DdlChange, Settled, StorageError, Table, Warehouse};

/// One DDL statement of a transaction block, applied at its COMMIT.
#[derive(Clone, Debug)]
pub(super) enum PendingDdl {
    /// CREATE TABLE, with the block's later ALTERs of it folded in: `table`'s schema becomes
    /// its `schema-0`. `sequences`: its identity and SERIAL columns' sequences, created at
    /// once and dropped again if the block does not commit.
    Create {
        table: Table,
        sequences: Vec<String>,
    },
    /// ALTER TABLE and COMMENT ON of a table that exists: every such statement's `changes`
    /// in order, applied to schema `base`, giving `table`'s schema.
    Alter {
        table: Table,
        base: i64,
        changes: Vec<SchemaChange>,
    },
    Rename {
        db: String,
        from: String,
        to: String,
    },
    Drop {
        db: String,
        name: String,
    },
}

impl PendingDdl {
    fn database(&self) -> &str {
        match self {
            Self::Create { table, .. } | Self::Alter { table, .. } => table.database(),
            Self::Rename { db, .. } | Self::Drop { db, .. } => db,
        }
    }

    fn names(&self, db: &str, name: &str) -> bool {
        match self {
            Self::Create { table, .. } | Self::Alter { table, .. } => {
                table.database() == db && table.name() == name
            }
            Self::Rename { db: d, from, to } => d == db && (from == name || to == name),
            Self::Drop { db: d, name: n } => d == db && n == name,
        }
    }
}

/// A transaction block's pending DDL, and where a savepoint left it.
#[derive(Clone, Debug, Default)]
pub(super) struct BlockDdl {
    ops: Vec<PendingDdl>,
}

/// What ROLLBACK TO a savepoint returns the block's DDL to.
#[derive(Clone, Debug, Default)]
pub(super) struct DdlMark {
    ops: Vec<PendingDdl>,
    tables: PendingTables,
}

impl BlockDdl {
    pub(super) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The block's DDL of database `db`, taken out of it (in statement order).
    pub(super) fn take_database(&mut self, db: &str) -> Vec<PendingDdl> {
        let (taken, kept) = std::mem::take(&mut self.ops)
            .into_iter()
            .partition(|op| op.database() == db);
        self.ops = kept;
        taken
    }

    /// Sequences created by the pending CREATE TABLEs.
    fn sequences(&self) -> BTreeSet<(String, String)> {
        self.ops
            .iter()
            .flat_map(|op| match op {
                PendingDdl::Create { table, sequences } => sequences
                    .iter()
                    .map(|s| (table.database().to_owned(), s.clone()))
                    .collect(),
                _ => Vec::new(),
            })
            .collect()
    }
}

fn commit_first(what: String) -> PgError {
    PgError::new("0A000", what).with_hint(
        "COMMIT the transaction block first (tarn commits a block's DDL and its writes \
         together only when they don't depend on each other this way).",
    )
}

impl Session {
    /// Whether DDL now runs pending in a transaction block.
    pub(super) fn in_block(&self) -> bool {
        self.tx != TxState::Idle
    }

    /// `db.name` as the open block's pending DDL left it, `None` if untouched.
    pub(super) fn pending_table(&self, db: &str, name: &str) -> Option<PendingTable> {
        self.txn.as_ref()?.pending(db, name)
    }

    /// Whether table `db.name` exists as this session sees it (its block's DDL included).
    pub(super) async fn table_exists_here(&self, db: &str, name: &str) -> Result<bool, PgError> {
        if let Some(pending) = self.pending_table(db, name) {
            return Ok(pending.table().is_some());
        }
        Ok(self.warehouse_for(db).table_exists(db, name).await?)
    }

    /// Table `db.name` as this session sees it (its block's DDL included).
    pub(super) async fn open_table_here(&self, db: &str, name: &str) -> Result<Table, PgError> {
        match self.pending_table(db, name) {
            Some(PendingTable::Gone) => Err(PgError::new(
                "42P01",
                format!("relation \"{name}\" does not exist"),
            )),
            Some(PendingTable::Defined(t) | PendingTable::Renamed(t)) => Ok(t),
            None => Ok(self.warehouse_for(db).open_table(db, name).await?),
        }
    }

    /// CREATE TABLE in a block: `schema` becomes the table's at COMMIT.
    pub(super) async fn create_in_block(
        &mut self,
        db: &str,
        name: &str,
        schema: TableSchema,
        sequences: Vec<String>,
    ) -> Result<(), PgError> {
        if self.block_ddl.ops.iter().any(|op| op.names(db, name)) {
            return Err(commit_first(format!(
                "cannot create table \"{name}\" in the transaction block that dropped or \
                 renamed a table of that name"
            )));
        }
        let table = self
            .warehouse_for(db)
            .pending_table(db, name, schema)
            .await?;
        let txn = self.block_transaction();
        txn.set_pending(db, name, PendingTable::Defined(table.clone()));
        self.block_ddl
            .ops
            .push(PendingDdl::Create { table, sequences });
        self.block_catalog_changed();
        Ok(())
    }

    /// ALTER TABLE / COMMENT ON in a block: the table's next schema, written at COMMIT.
    pub(super) async fn alter_in_block(
        &mut self,
        db: &str,
        name: &str,
        changes: Vec<SchemaChange>,
    ) -> Result<(), PgError> {
        let txn = self.block_transaction();
        let current = match self.pending_table(db, name) {
            Some(PendingTable::Renamed(_)) => {
                return Err(commit_first(format!(
                    "cannot alter table \"{name}\" in the transaction block that renamed it"
                )));
            }
            _ => self.open_table_here(db, name).await?,
        };
        if txn.written(&current).is_some() {
            return Err(commit_first(format!(
                "cannot alter table \"{name}\" after writing it in the same transaction block"
            )));
        }
        let warehouse = self.warehouse_for(db).clone();
        let mut schema = warehouse.evolved(&current, &changes).await?;
        let unchanged = TableSchema {
            id: current.schema().id,
            time_millis: current.schema().time_millis,
            ..schema.clone()
        };
        if unchanged == **current.schema() {
            // Nothing to record (a type or an option set to what it is).
            return Ok(());
        }
        let at = self
            .block_ddl
            .ops
            .iter()
            .position(|op| op.names(db, name) && !matches!(op, PendingDdl::Drop { .. }));
        let table = match at.map(|at| &mut self.block_ddl.ops[at]) {
            Some(PendingDdl::Create { table, .. }) => {
                schema.id = 0;
                let pending = warehouse.pending_table(db, name, schema).await?;
                *table = pending.clone();
                pending
            }
            Some(PendingDdl::Alter {
                table,
                base,
                changes: all,
            }) => {
                schema.id = *base + 1;
                all.extend(changes);
                let pending = warehouse.pending_table(db, name, schema).await?;
                *table = pending.clone();
                pending
            }
            _ => {
                let base = current.schema().id;
                let pending = warehouse.pending_table(db, name, schema).await?;
                self.block_ddl.ops.push(PendingDdl::Alter {
                    table: pending.clone(),
                    base,
                    changes,
                });
                pending
            }
        };
        txn.set_pending(db, name, PendingTable::Defined(table));
        self.block_catalog_changed();
        Ok(())
    }

    /// ALTER TABLE … RENAME TO in a block.
    pub(super) async fn rename_in_block(
        &mut self,
        db: &str,
        from: &str,
        to: &str,
    ) -> Result<(), PgError> {
        let txn = self.block_transaction();
        if self.block_ddl.ops.iter().any(|op| op.names(db, from)) {
            return Err(commit_first(format!(
                "cannot rename table \"{from}\" in the transaction block that created, altered \
                 or renamed it"
            )));
        }
        if self.table_exists_here(db, to).await? {
            return Err(PgError::new(
                "42P07",
                format!("relation \"{to}\" already exists"),
            ));
        }
        let table = self.open_table_here(db, from).await?;
        if txn.written(&table).is_some() {
            return Err(commit_first(format!(
                "cannot rename table \"{from}\" after writing it in the same transaction block"
            )));
        }
        txn.set_pending(db, from, PendingTable::Gone);
        txn.set_pending(db, to, PendingTable::Renamed(table));
        self.block_ddl.ops.push(PendingDdl::Rename {
            db: db.to_owned(),
            from: from.to_owned(),
            to: to.to_owned(),
        });
        self.block_catalog_changed();
        Ok(())
    }

    /// DROP TABLE in a block: the table is gone for the block at once (its writes in the
    /// block with it), from the warehouse at COMMIT.
    pub(super) async fn drop_in_block(&mut self, db: &str, name: &str) -> Result<(), PgError> {
        let txn = self.block_transaction();
        let table = match self.pending_table(db, name) {
            Some(PendingTable::Renamed(_)) => {
                return Err(commit_first(format!(
                    "cannot drop table \"{name}\" in the transaction block that renamed it"
                )));
            }
            _ => self.open_table_here(db, name).await?,
        };
        txn.discard_writes(&table).await;
        let at = self
            .block_ddl
            .ops
            .iter()
            .position(|op| op.names(db, name) && !matches!(op, PendingDdl::Drop { .. }));
        let created = match at {
            Some(at) => match self.block_ddl.ops.remove(at) {
                PendingDdl::Create { sequences, .. } => Some(sequences),
                _ => None,
            },
            None => None,
        };
        match created {
            Some(sequences) => {
                // Never in the warehouse: only its sequences were.
                for sequence in sequences {
                    let _ = self.engine.sequences().drop(db, &sequence).await;
                }
            }
            None => self.block_ddl.ops.push(PendingDdl::Drop {
                db: db.to_owned(),
                name: name.to_owned(),
            }),
        }
        txn.set_pending(db, name, PendingTable::Gone);
        self.block_catalog_changed();
        Ok(())
    }

    /// TRUNCATE in a block: the rows are deleted in the block's transaction (a TRUNCATE's
    /// OVERWRITE snapshot could not commit together with the block's other writes).
    pub(super) async fn truncate_in_block(&mut self, db: &str, name: &str) -> Result<(), PgError> {
        if self
            .open_table_here(db, name)
            .await?
            .schema()
            .primary_keys
            .is_empty()
        {
            return Err(PgError::new(
                "0A000",
                format!(
                    "TRUNCATE of \"{name}\" inside a transaction block is not supported: it has \
                     no primary key (an append table), whose rows tarn removes only by replacing \
                     its files"
                ),
            )
            .with_hint("Run the TRUNCATE outside the transaction block."));
        }
        let sql = format!("DELETE FROM {}.{}", quote_ident(db), quote_ident(name));
        let statement = crate::sql::parse(&sql)?
            .into_iter()
            .next()
            .and_then(|c| match c {
                crate::sql::Command::Plan(s) => Some(s),
                _ => None,
            })
            .expect("a DELETE statement");
        let dml = self.plan_dml_refreshed(&statement, false).await?;
        self.run_dml(&dml, None).await?;
        Ok(())
    }

    /// Where the block's DDL stands (SAVEPOINT).
    pub(super) fn ddl_mark(&self) -> DdlMark {
        DdlMark {
            ops: self.block_ddl.ops.clone(),
            tables: self
                .txn
                .as_ref()
                .map(|t| t.pending_tables())
                .unwrap_or_default(),
        }
    }

    /// ROLLBACK TO SAVEPOINT: the DDL since `mark` is forgotten.
    pub(super) async fn rollback_ddl_to(&mut self, mark: DdlMark) {
        let kept = BlockDdl {
            ops: mark.ops.clone(),
        }
        .sequences();
        let made: Vec<_> = self
            .block_ddl
            .sequences()
            .into_iter()
            .filter(|s| !kept.contains(s))
            .collect();
        self.drop_block_sequences(made).await;
        let changed = self.block_ddl.ops.len() != mark.ops.len()
            || self
                .txn
                .as_ref()
                .is_some_and(|t| !t.pending_tables().is_empty());
        self.block_ddl.ops = mark.ops;
        if let Some(txn) = &self.txn {
            txn.restore_pending(mark.tables);
        }
        if changed {
            self.block_catalog_changed();
        }
    }

    /// The block ends without COMMIT: its DDL is forgotten.
    pub(super) async fn rollback_ddl(&mut self) {
        let ddl = std::mem::take(&mut self.block_ddl);
        if ddl.is_empty() {
            return;
        }
        self.drop_block_sequences(ddl.sequences().into_iter().collect())
            .await;
        self.block_catalog_changed();
    }

    async fn drop_block_sequences(&self, sequences: Vec<(String, String)>) {
        for (db, sequence) in sequences {
            if let Err(e) = self.engine.sequences().drop(&db, &sequence).await {
                tracing::warn!("could not drop sequence {db}.{sequence}: {e}");
            }
        }
    }

    /// The block's view of the catalog changed: plans made before are made again.
    fn block_catalog_changed(&self) {
        self.engine.catalog().invalidate();
    }

    /// COMMIT of a block holding DDL (`temp`: its DDL of temporary tables, taken out of the
    /// block's): the warehouse's DDL and the block's writes commit together, or the DDL is
    /// undone and the block fails (see `storage/block_ddl.rs` for the protocol and what a
    /// crash leaves). The block's writes are dropped whenever it fails.
    pub(super) async fn commit_block_ddl(
        &mut self,
        txn: &Transaction,
        flush: bool,
        temp: Vec<PendingDdl>,
    ) -> Result<(), PgError> {
        let ddl = std::mem::take(&mut self.block_ddl);
        let result = self.commit_with_ddl(&ddl, txn, flush, temp).await;
        if result.is_err() {
            abort(txn).await;
            // Whatever was not written: the created tables' sequences go.
            let mut orphans = Vec::new();
            for op in &ddl.ops {
                if let PendingDdl::Create { table, sequences } = op
                    && !self
                        .engine
                        .catalog()
                        .warehouse()
                        .table_exists(table.database(), table.name())
                        .await
                        .unwrap_or(true)
                {
                    orphans.extend(
                        sequences
                            .iter()
                            .map(|s| (table.database().to_owned(), s.clone())),
                    );
                }
            }
            self.drop_block_sequences(orphans).await;
        }
        if !ddl.is_empty() {
            self.catalog_changed_by_ddl().await?;
        }
        result
    }

    async fn commit_with_ddl(
        &mut self,
        ddl: &BlockDdl,
        txn: &Transaction,
        flush: bool,
        temp: Vec<PendingDdl>,
    ) -> Result<(), PgError> {
        if ddl.is_empty() {
            self.write_temp_ddl(temp).await?;
            commit(txn, flush).await?;
            return Ok(());
        }
        let warehouse = self.engine.catalog().warehouse().clone();
        self.check_ddl(&warehouse, ddl).await?;
        let changes: Vec<DdlChange> = ddl
            .ops
            .iter()
            .map(|op| match op {
                PendingDdl::Create { table, .. } => DdlChange::Create {
                    table: table.clone(),
                },
                PendingDdl::Alter { table, base, .. } => DdlChange::Alter {
                    table: table.clone(),
                    base: *base,
                },
                PendingDdl::Rename { db, from, to } => DdlChange::Rename {
                    database: db.clone(),
                    from: from.clone(),
                    to: to.clone(),
                },
                PendingDdl::Drop { db, name } => DdlChange::Drop {
                    database: db.clone(),
                    name: name.clone(),
                },
            })
            .collect();
        let writes = txn.has_writes();
        // 1. The intent, before anything else is written.
        let block = warehouse.begin_block(&changes, writes).await?;
        // 2. Creates, alters, renames (undone at once when one fails).
        if let Err(e) = block.apply().await {
            return Err(undone(block, e).await);
        }
        if let Err(e) = self.write_temp_ddl(temp).await {
            return Err(undone(block, e).await);
        }
        // 3. The commit point: the writes (their log record names the block), or the decision.
        if writes {
            if let Err(e) = commit_in(txn, flush, Some(block.id())).await {
                return Err(self.failed_commit(ddl, block, e).await);
            }
            crate::storage::crash_after_writes();
            if let Err(e) = block.decide().await {
                // The writes committed: the next start finishes from their record.
                tracing::warn!(block = block.id(), error = %e, "could not record a block's decision");
            }
        } else if let Err(e) = block.decide().await {
            return Err(undone(block, e).await);
        }
        // 4. Drops, then the intent goes.
        self.finish_block(ddl, block).await;
        Ok(())
    }

    /// Every pending change checked against the warehouse as it is now: nothing is written
    /// when any of it conflicts.
    async fn check_ddl(&self, warehouse: &Warehouse, ddl: &BlockDdl) -> Result<(), PgError> {
        for op in &ddl.ops {
            match op {
                PendingDdl::Create { table, .. } => {
                    if warehouse
                        .table_exists(table.database(), table.name())
                        .await?
                    {
                        return Err(PgError::new(
                            "42P07",
                            format!("relation \"{}\" already exists", table.name()),
                        ));
                    }
                }
                PendingDdl::Alter { table, base, .. } => {
                    if warehouse.schema_id(table.database(), table.name()).await? != Some(*base) {
                        return Err(changed(table.name()));
                    }
                }
                PendingDdl::Rename { db, from, to } => {
                    if !warehouse.table_exists(db, from).await? {
                        return Err(changed(from));
                    }
                    if warehouse.table_exists(db, to).await? {
                        return Err(PgError::new(
                            "42P07",
                            format!("relation \"{to}\" already exists"),
                        ));
                    }
                }
                PendingDdl::Drop { .. } => {}
            }
        }
        Ok(())
    }

    /// The block's writes failed to commit. Refused before anything was published (a
    /// conflict, a constraint): the DDL is settled by what the warehouse shows (undone unless
    /// its new schemas are in use). An I/O failure of the commit itself leaves its outcome
    /// unknown until the server starts again, which settles it; the DDL stays meanwhile.
    async fn failed_commit(&self, ddl: &BlockDdl, block: BlockCommit, e: StorageError) -> PgError {
        if block.writes_logged() {
            // The record is durable: the block committed (what failed came after it).
            self.finish_block(ddl, block).await;
            return e.into();
        }
        if refused(&e) {
            return match block.settle().await {
                Ok(Settled::Back) => e.into(),
                Ok(Settled::Forward) => {
                    self.after_commit(ddl).await;
                    e.into()
                }
                Err(u) => undo_failed(e, u),
            };
        }
        let id = block.id().to_owned();
        PgError::from(e).with_hint(format!(
            "Whether the transaction block committed is unknown: its DDL is kept until the \
             server starts again, which finishes or undoes it together with its writes (block \
             {id})."
        ))
    }

    /// After the commit point: the drops and the intent's removal, then the sequences the
    /// block's renames and drops concern. The block committed whatever fails here: the next
    /// start finishes the DDL.
    async fn finish_block(&self, ddl: &BlockDdl, block: BlockCommit) {
        let id = block.id().to_owned();
        if let Err(e) = block.finish().await {
            tracing::warn!(block = %id, error = %e, "a committed block's drops are not done; the next start finishes them");
        }
        self.after_commit(ddl).await;
    }

    /// Sequences owned by the block's renamed columns and tables follow them, those of its
    /// dropped tables go.
    async fn after_commit(&self, ddl: &BlockDdl) {
        for op in &ddl.ops {
            let result = match op {
                PendingDdl::Alter { table, changes, .. } => {
                    let (db, name) = (table.database(), table.name());
                    let mut result = Ok(());
                    for change in changes {
                        if let SchemaChange::RenameColumn { name: c, new_name } = change {
                            result = self.rename_owner(db, name, Some((c, new_name)), name).await;
                        }
                    }
                    result
                }
                PendingDdl::Rename { db, from, to } => self.rename_owner(db, from, None, to).await,
                PendingDdl::Drop { db, name } => {
                    let store = self.engine.sequences();
                    match store.owned_by(db, name).await {
                        Ok(owned) => {
                            let mut result = Ok(());
                            for sequence in owned {
                                if let Err(e) = store.drop(db, &sequence).await {
                                    result = Err(PgError::from(e));
                                }
                            }
                            result
                        }
                        Err(e) => Err(e.into()),
                    }
                }
                PendingDdl::Create { .. } => Ok(()),
            };
            if let Err(e) = result {
                tracing::warn!(error = ?e, "a committed block's sequences were not updated");
            }
        }
    }
}

fn changed(name: &str) -> PgError {
    PgError::new(
        "40001",
        format!(
            "could not serialize access: table \"{name}\" was changed by another session since \
             this transaction block's DDL"
        ),
    )
    .with_hint("Run the transaction block again.")
}

/// Whether a failed commit was refused before anything of it was published.
fn refused(e: &StorageError) -> bool {
    matches!(
        e,
        StorageError::CommitConflict(_)
            | StorageError::DuplicateKey { .. }
            | StorageError::NotNull { .. }
            | StorageError::ValueTooLong { .. }
            | StorageError::ReadOnly { .. }
            | StorageError::Version(_)
            | StorageError::SchemaChange(_)
            | StorageError::InvalidSchema(_)
            | StorageError::Unsupported(_)
            | StorageError::TableExists(_)
            | StorageError::TableNotFound(_)
            | StorageError::DatabaseNotFound(_)
    )
}

/// The block's DDL undone after `e` (before the commit point): `e`, or — when undoing failed
/// too — `e` with a hint that the next start undoes it.
async fn undone(block: BlockCommit, e: impl Into<PgError>) -> PgError {
    let e = e.into();
    match block.undo().await {
        Ok(()) => e,
        Err(u) => undo_failed(e, u),
    }
}

fn undo_failed(e: impl Into<PgError>, undo: StorageError) -> PgError {
    e.into().with_hint(format!(
        "The transaction block did not commit; undoing the DDL it had written failed too \
         ({undo}): the server undoes it when it starts again."
    ))
}

/// The sequences a session that ends inside a block leaves behind, dropped in the
/// background (see `Session`'s `Drop`).
pub(super) fn abandoned_sequences(ddl: &BlockDdl) -> Vec<(String, String)> {
    ddl.sequences().into_iter().collect()
}
