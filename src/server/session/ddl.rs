//! Table DDL of a session: CREATE TABLE, ALTER TABLE, COMMENT ON, DROP TABLE, TRUNCATE on
//! Paimon tables.
//!
//! Names resolve as in PostgreSQL: a qualified name names its schema (a Paimon database); an
//! unqualified one is created in the first existing schema of `search_path` and found in the
//! first schema of `search_path` that has it. Each statement runs at once — inside a
//! transaction block it stays pending until COMMIT (`block_ddl.rs`).

use super::{Outcome, Session};
use crate::query::SessionVars;
use crate::server::error::PgError;
use crate::sql::alter_table::{AlterAction, AlterTableSpec};
use std::collections::BTreeMap;

use crate::query::quote_ident;
use crate::sql::create_table::{CreateTableSpec, OnCommitAction};
use crate::sql::defaults::{column_default, default_changes};
use crate::storage::StorageError;
use crate::storage::sequences::{OwnedBy, SequenceError, SequenceParams};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::schema_change::SchemaChange;
use crate::storage::spec::types::PaimonType;

impl Session {
    /// The schema a new object goes into.
    pub(super) fn creation_schema(&self, explicit: Option<&str>) -> Result<String, PgError> {
        let catalog = self.engine.catalog();
        match explicit {
            Some(s) if catalog.has_database(s) => Ok(s.to_owned()),
            Some(s) => Err(PgError::new(
                "3F000",
                format!("schema \"{s}\" does not exist"),
            )),
            None => self
                .vars
                .effective_search_path()
                .into_iter()
                .next()
                .ok_or_else(|| {
                    PgError::new("3F000", "no schema has been selected to create in")
                        .with_hint("Create a schema or set search_path to an existing one.")
                }),
        }
    }

    /// The database a new table of `spec` goes into: the session's temporary one for
    /// `CREATE TEMP TABLE` and for a name in `pg_temp` (which makes the table temporary, as in
    /// PostgreSQL), else [`creation_schema`](Self::creation_schema)'s.
    pub(super) async fn creation_database(
        &mut self,
        spec: &mut CreateTableSpec,
    ) -> Result<String, PgError> {
        let named_temp = spec.schema.as_deref().and_then(|s| self.temp_schema(s));
        if named_temp.is_some() && spec.temporary.is_none() {
            spec.temporary = Some(OnCommitAction::PreserveRows);
        }
        if spec.temporary.is_none() {
            return self.creation_schema(spec.schema.as_deref());
        }
        if spec.schema.is_some() && named_temp.is_none() {
            return Err(PgError::new(
                "42P16",
                "cannot create temporary relation in non-temporary schema",
            ));
        }
        for column in &spec.columns {
            if column.sequence_params()?.is_some() {
                return Err(PgError::new(
                    "0A000",
                    format!(
                        "column \"{}\" of temporary table \"{}\": identity and SERIAL columns \
                         are not supported in temporary tables yet",
                        column.name, spec.name
                    ),
                )
                .with_hint("Use a plain integer column, or a permanent table."));
            }
        }
        self.temp_database().await
    }

    /// The schema holding table `name`, if any.
    pub(super) async fn find_table(
        &self,
        schema: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, PgError> {
        // The temporary schema comes first, named or not (PostgreSQL's implicit `pg_temp`).
        if let Some(temp) = schema.map_or_else(|| self.temp_tables_db(), |s| self.temp_schema(s)) {
            if self.is_temp_db(&temp) && self.table_exists_here(&temp, name).await? {
                return Ok(Some(temp));
            }
            if schema.is_some() {
                return Ok(None);
            }
        }
        let candidates = match schema {
            Some(s) => vec![s.to_owned()],
            None => self.vars.effective_search_path(),
        };
        for db in candidates {
            if self.engine.catalog().has_database(&db) && self.table_exists_here(&db, name).await? {
                return Ok(Some(db));
            }
        }
        Ok(None)
    }

    pub(super) async fn create_table(
        &mut self,
        mut spec: CreateTableSpec,
    ) -> Result<Outcome, PgError> {
        self.refresh_catalog_now().await?;
        if spec.query.is_some() {
            // Created and filled in one transaction (`create_as.rs`).
            return Box::pin(self.create_table_as(spec)).await;
        }
        let db = self.creation_database(&mut spec).await?;
        if let Some(like) = &spec.like {
            let Some(source_db) = self.find_table(like.schema.as_deref(), &like.name).await? else {
                return Err(PgError::new(
                    "42P01",
                    format!("relation \"{}\" does not exist", like.name),
                ));
            };
            let source = self.open_table_here(&source_db, &like.name).await?;
            spec.with_like(source.schema())?;
        }
        let warehouse = self.warehouse_for(&db).clone();
        let mut outcome = Outcome::done("CREATE TABLE");
        let exists = |outcome: &mut Outcome| {
            outcome.notices.push((
                "42P07",
                format!("relation \"{}\" already exists, skipping", spec.name),
            ))
        };
        if spec.if_not_exists && self.table_exists_here(&db, &spec.name).await? {
            exists(&mut outcome);
            return Ok(outcome);
        }
        // Sequences and views share the relations' names (PostgreSQL's pg_class).
        if self
            .engine
            .sequences()
            .get(&db, &spec.name)
            .await?
            .is_some()
            || self.view_exists(&db, &spec.name).await?
        {
            if spec.if_not_exists {
                exists(&mut outcome);
                return Ok(outcome);
            }
            return Err(PgError::new(
                "42P07",
                format!("relation \"{}\" already exists", spec.name),
            ));
        }
        // Identity and SERIAL columns: their sequences first, named as PostgreSQL names them,
        // and dropped again if the table is not created.
        let sequences = self.create_column_sequences(&db, &spec).await?;
        let in_block = self.in_block();
        if in_block && self.table_exists_here(&db, &spec.name).await? {
            for name in sequences.values() {
                let _ = self.engine.sequences().drop(&db, name).await;
            }
            return Err(PgError::new(
                "42P07",
                format!("relation \"{}\" already exists", spec.name),
            ));
        }
        let created = async {
            let schema = spec.to_schema(warehouse.clock().now_millis(), &sequences)?;
            if in_block {
                // Written at COMMIT, with the block's writes.
                let names = sequences.values().cloned().collect();
                self.create_in_block(&db, &spec.name, schema, names).await?;
                return Ok(Ok(()));
            }
            Ok::<_, PgError>(
                warehouse
                    .create_table(&db, &spec.name, schema)
                    .await
                    .map(drop),
            )
        }
        .await;
        let result = match created {
            Ok(Ok(())) => Ok(()),
            Ok(Err(StorageError::TableExists(_))) if spec.if_not_exists => {
                exists(&mut outcome);
                Err(None)
            }
            Ok(Err(e)) => Err(Some(PgError::from(e))),
            Err(e) => Err(Some(e)),
        };
        if let Err(error) = result {
            for name in sequences.values() {
                let _ = self.engine.sequences().drop(&db, name).await;
            }
            if let Some(e) = error {
                return Err(e);
            }
        }
        if let Some(action) = spec.temporary {
            self.set_on_commit(&spec.name, action);
        }
        self.catalog_changed_by_ddl().await?;
        Ok(outcome)
    }

    /// Creates the sequence of each identity and SERIAL column of `spec`, owned by the column:
    /// `<table>_<column>_seq`, or with a number after it when that name is taken (as
    /// PostgreSQL chooses). Returns the names by column.
    async fn create_column_sequences(
        &self,
        db: &str,
        spec: &CreateTableSpec,
    ) -> Result<BTreeMap<String, String>, PgError> {
        let store = self.engine.sequences();
        let warehouse = self.engine.catalog().warehouse();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for column in &spec.columns {
            let Some(mut params) = column.sequence_params()? else {
                continue;
            };
            params.owned_by = Some(Some(OwnedBy {
                table: spec.name.clone(),
                column: column.name.clone(),
            }));
            let base = format!("{}_{}_seq", spec.name, column.name);
            let mut created = None;
            for n in 0..100 {
                let name = match n {
                    0 => base.clone(),
                    n => format!("{base}{n}"),
                };
                if warehouse.table_exists(db, &name).await? {
                    continue;
                }
                match store.create(db, &name, &params).await {
                    Ok(()) => {
                        created = Some(name);
                        break;
                    }
                    Err(SequenceError::Exists(_)) => continue,
                    Err(e) => {
                        for created in names.values() {
                            let _ = store.drop(db, created).await;
                        }
                        return Err(e.into());
                    }
                }
            }
            let name = created.ok_or_else(|| {
                PgError::new(
                    "42P07",
                    format!("no free name for the sequence of \"{base}\""),
                )
            })?;
            names.insert(column.name.clone(), name);
        }
        Ok(names)
    }

    /// `ALTER TABLE` / `COMMENT ON`: the table's next Paimon schema (or its new name). The
    /// storage layer writes it after flushing what the commit log holds of the table, under
    /// the table's commit lock, so concurrent writers' commits fall before or after it.
    pub(super) async fn alter_table(&mut self, spec: AlterTableSpec) -> Result<Outcome, PgError> {
        if matches!(spec.action, AlterAction::DropPartitions { .. }) {
            // A commit, not a schema change (`partitions.rs`).
            return self.alter_drop_partitions(spec).await;
        }
        self.refresh_catalog_now().await?;
        let Some(db) = self.find_table(spec.schema.as_deref(), &spec.name).await? else {
            if spec.if_exists {
                let mut outcome = Outcome::done(spec.tag);
                outcome.notices.push((
                    "00000",
                    format!("relation \"{}\" does not exist, skipping", spec.name),
                ));
                return Ok(outcome);
            }
            return Err(PgError::new(
                "42P01",
                format!("relation \"{}\" does not exist", spec.name),
            ));
        };
        if matches!(spec.action, AlterAction::RenameTo(_)) && self.is_temp_db(&db) {
            return Err(PgError::new(
                "0A000",
                format!(
                    "cannot rename temporary table \"{}\": temporary tables cannot be renamed yet",
                    spec.name
                ),
            )
            .with_hint("Create the table under the new name with CREATE TEMP TABLE … AS."));
        }
        let warehouse = self.warehouse_for(&db).clone();
        // Views follow renames and refuse what would break them (`views.rs`).
        let mut notices = Vec::new();
        match spec.action {
            AlterAction::RenameTo(to) if self.in_block() => {
                self.views_follow_rename(&db, &spec.name, &to, false)
                    .await?;
                self.rename_in_block(&db, &spec.name, &to).await?;
            }
            AlterAction::DropPartitions { .. } => {
                unreachable!("DROP PARTITION returned above")
            }
            AlterAction::RenameTo(to) => {
                let views = self
                    .views_follow_rename(&db, &spec.name, &to, false)
                    .await?;
                match warehouse.rename_table(&db, &spec.name, &to).await {
                    Err(StorageError::TableExists(_)) => {
                        return Err(PgError::new(
                            "42P07",
                            format!("relation \"{to}\" already exists"),
                        ));
                    }
                    other => other?,
                }
                // Owned sequences follow the table (PostgreSQL links them by OID).
                self.rename_owner(&db, &spec.name, None, &to).await?;
                self.rewrite_views(views).await?;
            }
            AlterAction::Schema {
                mut changes,
                not_null,
                empty_for,
                set_defaults,
            } => {
                if !set_defaults.is_empty() {
                    let table = self.open_table_here(&db, &spec.name).await?;
                    for (column, expr) in set_defaults {
                        let ty = column_type(table.schema(), &changes, &column)?;
                        let default = match expr {
                            Some(e) => column_default(&e, &ty, &column)?,
                            None => None,
                        };
                        changes.extend(default_changes(&column, default));
                    }
                }
                for column in &not_null {
                    self.check_no_nulls(&db, &spec.name, column).await?;
                }
                if let Some(column) = empty_for.first() {
                    self.check_empty(&db, &spec.name, column).await?;
                }
                let views = self
                    .views_follow_alter(&db, &spec.name, &changes, spec.cascade)
                    .await?;
                if self.in_block() {
                    // Written at COMMIT (sequences follow renamed columns then).
                    self.alter_in_block(&db, &spec.name, changes).await?;
                    return Ok(Outcome::done(spec.tag));
                }
                warehouse
                    .alter_table(&db, &spec.name, changes.clone())
                    .await?;
                notices = views.notices.clone();
                self.apply_view_work(views).await?;
                // A renamed column keeps its sequences (PostgreSQL links them by attnum).
                for change in &changes {
                    if let SchemaChange::RenameColumn { name, new_name } = change {
                        self.rename_owner(&db, &spec.name, Some((name, new_name)), &spec.name)
                            .await?;
                    }
                }
            }
        }
        if !self.in_block() {
            self.catalog_changed_by_ddl().await?;
        }
        Ok(Outcome {
            notices,
            ..Outcome::done(spec.tag)
        })
    }

    /// Points the sequences owned by `table` (by its column `column.0`, or by any column when
    /// `None`) at `to_table` (and column `column.1`): `RENAME TO` and `RENAME COLUMN`.
    pub(super) async fn rename_owner(
        &self,
        db: &str,
        table: &str,
        column: Option<(&String, &String)>,
        to_table: &str,
    ) -> Result<(), PgError> {
        let store = self.engine.sequences();
        for sequence in store.owned_by(db, table).await? {
            let Some(owner) = store
                .get(db, &sequence)
                .await?
                .and_then(|info| info.options.owned_by)
            else {
                continue;
            };
            let to_column = match column {
                Some((from, to)) if &owner.column == from => to.clone(),
                Some(_) => continue,
                None => owner.column,
            };
            let params = SequenceParams {
                owned_by: Some(Some(OwnedBy {
                    table: to_table.to_owned(),
                    column: to_column,
                })),
                ..SequenceParams::default()
            };
            store.alter(db, &sequence, &params).await?;
        }
        Ok(())
    }

    /// Before `ADD COLUMN … DEFAULT`: PostgreSQL gives the rows already there the default,
    /// which Paimon's readers (pypaimon, Java) cannot see without rewriting every file; tarn
    /// adds such a column to tables without rows only.
    async fn check_empty(&self, db: &str, table: &str, column: &str) -> Result<(), PgError> {
        let sql = format!(
            "SELECT 1 FROM {}.{} LIMIT 1",
            quote_ident(db),
            quote_ident(table)
        );
        let batches = self.ctx.sql(&sql).await?.collect().await?;
        if batches.iter().any(|b| b.num_rows() > 0) {
            return Err(PgError::new(
                "0A000",
                format!(
                    "ADD COLUMN \"{column}\" ... DEFAULT on a table with rows is not supported: \
                     Paimon's other readers would see NULL in the rows already there"
                ),
            )
            .with_hint(format!(
                "Add the column without DEFAULT, fill it with UPDATE {table} SET {column} = ..., \
                 then ALTER COLUMN {column} SET DEFAULT ..."
            )));
        }
        Ok(())
    }

    /// Before `SET NOT NULL`: PostgreSQL refuses it when a row holds NULL (Paimon never
    /// checks). Rows written before the column was added read NULL too.
    async fn check_no_nulls(&self, db: &str, table: &str, column: &str) -> Result<(), PgError> {
        let sql = format!(
            "SELECT count(*) FROM {}.{} WHERE {} IS NULL",
            quote_ident(db),
            quote_ident(table),
            quote_ident(column)
        );
        let batches = self.ctx.sql(&sql).await?.collect().await?;
        let nulls = batches
            .first()
            .and_then(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<arrow::array::Int64Array>()
            })
            .map_or(0, |c| c.value(0));
        if nulls > 0 {
            return Err(PgError::new(
                "23502",
                format!("column \"{column}\" of relation \"{table}\" contains null values"),
            )
            .with_hint("Fill the column's NULLs with UPDATE first."));
        }
        Ok(())
    }

    pub(super) async fn drop_tables(
        &mut self,
        names: &[(Option<String>, String)],
        if_exists: bool,
        cascade: bool,
    ) -> Result<Outcome, PgError> {
        self.refresh_catalog_now().await?;
        let mut outcome = Outcome::done("DROP TABLE");
        // Resolve all first: a missing name drops nothing (as in PostgreSQL).
        let mut found = Vec::new();
        for (schema, name) in names {
            let table = self.find_table(schema.as_deref(), name).await?;
            if table.is_none() && self.is_view(schema.as_deref(), name).await? {
                return Err(PgError::new("42809", format!("\"{name}\" is not a table"))
                    .with_hint("Use DROP VIEW to remove a view."));
            }
            match table {
                Some(db) => found.push((db, name.clone())),
                None if if_exists => outcome.notices.push((
                    "00000",
                    format!("table \"{name}\" does not exist, skipping"),
                )),
                None => {
                    return Err(PgError::new(
                        "42P01",
                        format!("table \"{name}\" does not exist"),
                    ));
                }
            }
        }
        // Views using the tables: refused (2BP01), or dropped after them (CASCADE).
        let roots: Vec<_> = found
            .iter()
            .map(|(db, name)| super::views::Object::Table(db.clone(), name.clone()))
            .collect();
        let cascaded = self
            .check_dependents(&roots, cascade, &mut outcome.notices)
            .await?;
        if self.in_block() {
            for (db, name) in &found {
                self.drop_in_block(db, name).await?;
            }
            return Ok(outcome);
        }
        for (db, name) in &found {
            self.warehouse_for(db).drop_table(db, name).await?;
            // Sequences of its identity and SERIAL columns go with it, as in PostgreSQL.
            let store = self.engine.sequences();
            for sequence in store.owned_by(db, name).await? {
                store.drop(db, &sequence).await?;
            }
        }
        self.drop_dependents(&cascaded).await?;
        self.catalog_changed_by_ddl().await?;
        Ok(outcome)
    }

    pub(super) async fn truncate_tables(
        &mut self,
        names: &[(Option<String>, String)],
    ) -> Result<Outcome, PgError> {
        self.refresh_catalog_now().await?;
        let mut tables = Vec::new();
        for (schema, name) in names {
            let Some(db) = self.find_table(schema.as_deref(), name).await? else {
                return Err(PgError::new(
                    "42P01",
                    format!("relation \"{name}\" does not exist"),
                ));
            };
            let table = self.open_table_here(&db, name).await?;
            crate::storage::check_writable(&table)?;
            tables.push(table);
        }
        if self.in_block() {
            for table in &tables {
                self.truncate_in_block(table.database(), table.name())
                    .await?;
            }
        } else {
            for table in &tables {
                crate::storage::truncate(table).await?;
            }
        }
        Ok(Outcome::done("TRUNCATE TABLE"))
    }
}

/// The type column `name` has after `changes` (an `ADD COLUMN` or type change in the same
/// statement), for its `SET DEFAULT`.
fn column_type(
    schema: &TableSchema,
    changes: &[SchemaChange],
    name: &str,
) -> Result<PaimonType, PgError> {
    let mut ty = schema.field(name).map(|f| f.data_type.clone());
    for c in changes {
        match c {
            SchemaChange::AddColumn {
                name: n, data_type, ..
            }
            | SchemaChange::UpdateColumnType {
                name: n, data_type, ..
            } if n == name => ty = Some(data_type.clone()),
            _ => {}
        }
    }
    ty.ok_or_else(|| PgError::new("42703", format!("column \"{name}\" does not exist")))
}
