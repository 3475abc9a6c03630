//! Sequence DDL of a session: CREATE, ALTER and DROP SEQUENCE on the warehouse's sequences
//! (`storage/sequences.rs`).
//!
//! A sequence shares the relation namespace of its schema with the tables, as in PostgreSQL:
//! a name resolves through `search_path` to the first schema holding a relation of that name,
//! and a table found there is "not a sequence" (42809). `OWNED BY t.c` names a column of a
//! table of the sequence's own schema. DROP refuses a sequence a column default uses
//! (`nextval('s')`) unless CASCADE, which drops the default too, and always refuses an
//! identity column's. Each statement runs at once (a WARNING inside a transaction block).

use super::{Outcome, Session};
use crate::query::SessionVars;
use crate::server::error::PgError;
use crate::sql::defaults::{ColumnDefault, default_changes};
use crate::sql::sequence::{
    AlterSequence, OptionError, OwnedByTarget, SequenceCommand, SequenceSpec,
    default_uses_sequence, owned_by_target, rename_in_default,
};
use crate::storage::StorageError;
use crate::storage::sequences::{OwnedBy, SequenceError, SequenceInfo, SequenceParams};

/// What a name resolved to.
enum Found {
    Sequence { db: String, info: SequenceInfo },
    Table,
}

impl From<OptionError> for PgError {
    fn from(e: OptionError) -> Self {
        let error = PgError::new(e.code, e.message);
        match e.hint {
            Some(h) => error.with_hint(h),
            None => error,
        }
    }
}

fn not_a_sequence(name: &str) -> PgError {
    PgError::new("42809", format!("\"{name}\" is not a sequence"))
}

impl Session {
    pub(super) async fn sequence(&mut self, command: SequenceCommand) -> Result<Outcome, PgError> {
        self.refresh_catalog_now().await?;
        let outcome = match command {
            SequenceCommand::Create {
                schema,
                name,
                if_not_exists,
                spec,
            } => {
                self.create_sequence(schema.as_deref(), &name, if_not_exists, &spec)
                    .await?
            }
            SequenceCommand::Alter {
                schema,
                name,
                if_exists,
                action,
            } => {
                self.alter_sequence(schema.as_deref(), &name, if_exists, action)
                    .await?
            }
            SequenceCommand::Drop {
                names,
                if_exists,
                cascade,
            } => self.drop_sequences(&names, if_exists, cascade).await?,
        };
        self.catalog_changed_by_ddl().await?;
        Ok(outcome)
    }

    /// The relation `name` resolves to: in `schema`, or in the first schema of `search_path`
    /// holding a table or sequence of that name.
    async fn find_relation(
        &self,
        schema: Option<&str>,
        name: &str,
    ) -> Result<Option<Found>, PgError> {
        let catalog = self.engine.catalog();
        let candidates = match schema {
            Some(s) => vec![s.to_owned()],
            None => self.vars.effective_search_path(),
        };
        for db in candidates {
            if !catalog.has_database(&db) {
                continue;
            }
            if let Some(info) = self.engine.sequences().get(&db, name).await? {
                return Ok(Some(Found::Sequence { db, info }));
            }
            if catalog.warehouse().table_exists(&db, name).await? {
                return Ok(Some(Found::Table));
            }
        }
        Ok(None)
    }

    /// `OWNED BY` checked against the catalog: the column of a table in the sequence's
    /// schema (`db`), or none.
    async fn owned_by(
        &self,
        db: &str,
        parts: Option<&Vec<String>>,
    ) -> Result<Option<Option<OwnedBy>>, PgError> {
        let Some(parts) = parts else {
            return Ok(None);
        };
        let (schema, table, column) = match owned_by_target(parts)? {
            OwnedByTarget::None => return Ok(Some(None)),
            OwnedByTarget::Column {
                schema,
                table,
                column,
            } => (schema, table, column),
        };
        let Some(table_db) = self.find_table(schema.as_deref(), &table).await? else {
            return Err(PgError::new(
                "42P01",
                format!("relation \"{table}\" does not exist"),
            ));
        };
        if table_db != db {
            return Err(PgError::new(
                "55000",
                "sequence must be in same schema as table it is linked to",
            ));
        }
        let t = self
            .engine
            .catalog()
            .warehouse()
            .open_table(db, &table)
            .await?;
        if t.schema().field(&column).is_none() {
            return Err(PgError::new(
                "42703",
                format!("column \"{column}\" of relation \"{table}\" does not exist"),
            ));
        }
        Ok(Some(Some(OwnedBy { table, column })))
    }

    /// Whether `owned_by` is an identity column (its sequence belongs to it).
    async fn is_identity(&self, db: &str, owned_by: &OwnedBy) -> Result<bool, PgError> {
        let warehouse = self.engine.catalog().warehouse();
        match warehouse.open_table(db, &owned_by.table).await {
            Ok(t) => Ok(t
                .schema()
                .core_options()
                .identity(&owned_by.column)
                .is_some()),
            Err(StorageError::TableNotFound(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn create_sequence(
        &mut self,
        schema: Option<&str>,
        name: &str,
        if_not_exists: bool,
        spec: &SequenceSpec,
    ) -> Result<Outcome, PgError> {
        let db = self.creation_schema(schema)?;
        let mut outcome = Outcome::done("CREATE SEQUENCE");
        let exists = || PgError::new("42P07", format!("relation \"{name}\" already exists"));
        let skipping = (
            "42P07",
            format!("relation \"{name}\" already exists, skipping"),
        );
        let warehouse = self.engine.catalog().warehouse();
        let taken = warehouse.table_exists(&db, name).await?
            || self.engine.sequences().get(&db, name).await?.is_some()
            || self.view_exists(&db, name).await?;
        if taken {
            if if_not_exists {
                outcome.notices.push(skipping);
                return Ok(outcome);
            }
            return Err(exists());
        }
        let mut params: SequenceParams = spec.to_params()?;
        if let Some(owned_by) = self.owned_by(&db, spec.owned_by.as_ref()).await? {
            params.owned_by = Some(owned_by);
        }
        match self.engine.sequences().create(&db, name, &params).await {
            Ok(()) => {
                outcome.warnings = self.ddl_warning("CREATE SEQUENCE");
                Ok(outcome)
            }
            Err(SequenceError::Exists(_)) if if_not_exists => {
                outcome.notices.push(skipping);
                Ok(outcome)
            }
            Err(SequenceError::Exists(_)) => Err(exists()),
            Err(e) => Err(e.into()),
        }
    }

    async fn alter_sequence(
        &mut self,
        schema: Option<&str>,
        name: &str,
        if_exists: bool,
        action: AlterSequence,
    ) -> Result<Outcome, PgError> {
        let mut outcome = Outcome::done("ALTER SEQUENCE");
        let (db, info) = match self.find_relation(schema, name).await? {
            Some(Found::Sequence { db, info }) => (db, info),
            Some(Found::Table) => return Err(not_a_sequence(name)),
            None if if_exists => {
                outcome.notices.push((
                    "00000",
                    format!("relation \"{name}\" does not exist, skipping"),
                ));
                return Ok(outcome);
            }
            None => {
                return Err(PgError::new(
                    "42P01",
                    format!("relation \"{name}\" does not exist"),
                ));
            }
        };
        let store = self.engine.sequences();
        match action {
            AlterSequence::RenameTo(to) => {
                let warehouse = self.engine.catalog().warehouse();
                if warehouse.table_exists(&db, &to).await? {
                    return Err(PgError::new(
                        "42P07",
                        format!("relation \"{to}\" already exists"),
                    ));
                }
                let defaults = self.defaults_using(&db, name).await?;
                store.rename(&db, name, &to).await?;
                // Defaults name their sequence (PostgreSQL's hold its OID): they follow it.
                for (table_db, table, column, expr) in defaults {
                    if let Some(renamed) = rename_in_default(&expr, &table_db, &db, name, &to) {
                        let default = Some(ColumnDefault::Expression(renamed));
                        warehouse
                            .alter_table(&table_db, &table, default_changes(&column, default))
                            .await?;
                    }
                }
            }
            AlterSequence::Options(spec) => {
                let mut params = spec.to_params()?;
                if let Some(owned_by) = self.owned_by(&db, spec.owned_by.as_ref()).await? {
                    if let Some(current) = &info.options.owned_by
                        && self.is_identity(&db, current).await?
                    {
                        return Err(PgError::new(
                            "0A000",
                            "cannot change ownership of identity sequence",
                        )
                        .with_detail(format!(
                            "Sequence \"{name}\" is linked to table \"{}\".",
                            current.table
                        )));
                    }
                    params.owned_by = Some(owned_by);
                }
                store.alter(&db, name, &params).await?;
            }
        }
        outcome.warnings = self.ddl_warning("ALTER SEQUENCE");
        Ok(outcome)
    }

    async fn drop_sequences(
        &mut self,
        names: &[(Option<String>, String)],
        if_exists: bool,
        cascade: bool,
    ) -> Result<Outcome, PgError> {
        let mut outcome = Outcome::done("DROP SEQUENCE");
        // Resolve and check all first: an error drops nothing (as in PostgreSQL).
        let mut found = Vec::new();
        for (schema, name) in names {
            let relation = self.find_relation(schema.as_deref(), name).await?;
            if relation.is_none() && self.is_view(schema.as_deref(), name).await? {
                return Err(not_a_sequence(name).with_hint("Use DROP VIEW to remove a view."));
            }
            match relation {
                Some(Found::Sequence { db, info }) => found.push((db, info)),
                Some(Found::Table) => {
                    return Err(not_a_sequence(name).with_hint("Use DROP TABLE to remove a table."));
                }
                None if if_exists => outcome.notices.push((
                    "00000",
                    format!("sequence \"{name}\" does not exist, skipping"),
                )),
                None => {
                    return Err(PgError::new(
                        "42P01",
                        format!("sequence \"{name}\" does not exist"),
                    ));
                }
            }
        }
        let mut defaults = Vec::new();
        for (db, info) in &found {
            let name = &info.name;
            if let Some(o) = &info.options.owned_by
                && self.is_identity(db, o).await?
            {
                return Err(PgError::new(
                    "2BP01",
                    format!(
                        "cannot drop sequence {name} because column {} of table {} requires it",
                        o.column, o.table
                    ),
                )
                .with_hint(format!(
                    "You can drop column {} of table {} instead.",
                    o.column, o.table
                )));
            }
            for (table_db, table, column, _) in self.defaults_using(db, name).await? {
                let what = format!("default value for column {column} of table {table}");
                if !cascade {
                    return Err(PgError::new(
                        "2BP01",
                        format!("cannot drop sequence {name} because other objects depend on it"),
                    )
                    .with_detail(format!("{what} depends on sequence {name}"))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
                }
                outcome
                    .notices
                    .push(("00000", format!("drop cascades to {what}")));
                defaults.push((table_db, table, column));
            }
        }
        let warehouse = self.engine.catalog().warehouse().clone();
        for (db, table, column) in defaults {
            warehouse
                .alter_table(&db, &table, default_changes(&column, None))
                .await?;
        }
        for (db, info) in &found {
            self.engine.sequences().drop(db, &info.name).await?;
        }
        if !found.is_empty() {
            outcome.warnings = self.ddl_warning("DROP SEQUENCE");
        }
        Ok(outcome)
    }

    /// The columns (schema, table, column, default) whose default expression uses sequence
    /// `name` of schema `db` (`nextval('name')`, `nextval('db.name'::regclass)`).
    async fn defaults_using(
        &self,
        db: &str,
        name: &str,
    ) -> Result<Vec<(String, String, String, String)>, PgError> {
        let catalog = self.engine.catalog();
        let mut out = Vec::new();
        for table_db in catalog.database_names() {
            for table in catalog.table_names_of(&table_db) {
                let t = match catalog.warehouse().open_table(&table_db, &table).await {
                    Ok(t) => t,
                    Err(StorageError::TableNotFound(_)) => continue,
                    Err(e) => return Err(e.into()),
                };
                let options = t.schema().core_options();
                for f in &t.schema().fields {
                    if let Some(expr) = options.default_expression(&f.name)
                        && default_uses_sequence(expr, &table_db, db, name)
                    {
                        out.push((
                            table_db.clone(),
                            table.clone(),
                            f.name.clone(),
                            expr.to_owned(),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }
}
