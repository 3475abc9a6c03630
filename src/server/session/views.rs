//! View DDL of a session — CREATE [OR REPLACE] VIEW, DROP VIEW, ALTER VIEW … RENAME TO,
//! COMMENT ON VIEW on the warehouse's views (`storage/views.rs`) — and the expansion of the
//! views a statement names before it is planned (`sql/views.rs`).
//!
//! A view shares the relation namespace of its schema with tables and sequences, as in
//! PostgreSQL: a name resolves through `search_path` to the first schema holding a relation of
//! that name (42P07 when CREATE finds one, 42809 when it is of another kind). CREATE plans the
//! query once, as a SELECT is planned, to check it and to learn its columns and their types;
//! OR REPLACE keeps the existing columns (names and types, in order) and may add more after
//! them, or fails with 42P16 as PostgreSQL does. DROP refuses a view other views use unless
//! CASCADE, which drops them too. Each statement runs at once and makes every kept plan be
//! made again; inside a transaction block it is refused (25001), since it could not commit or
//! roll back with the block.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;
use pgwire::api::portal::Format;
use pgwire::types::format::FormatOptions;

use super::{Outcome, Session};
use crate::query::{SessionVars, WarehouseCatalog};
use crate::server::error::PgError;
use crate::sql::views::{self as sql_views, Relations, Resolved, ViewCommand};
use crate::storage::views::{ViewColumn, ViewDef, ViewError};

/// Tables (the catalog's lists) and views (one listing) as the planner sees them.
pub(super) struct SessionRelations {
    catalog: Arc<WarehouseCatalog>,
    views: Arc<Vec<ViewDef>>,
}

impl Relations for SessionRelations {
    fn resolve(&self, schema: Option<&str>, name: &str, path: &[String]) -> Resolved<'_> {
        let find = |db: &str| -> Option<Resolved<'_>> {
            if !self.catalog.has_database(db) {
                return None;
            }
            if let Some(view) = self.views.iter().find(|v| v.schema == db && v.name == name) {
                return Some(Resolved::View(view));
            }
            self.catalog
                .table_names_of(db)
                .iter()
                .any(|t| t == name)
                .then(|| Resolved::Table(db.to_owned()))
        };
        match schema {
            Some(s) => find(s),
            None => path.iter().find_map(|db| find(db)),
        }
        .unwrap_or(Resolved::Other)
    }

    fn has_views(&self) -> bool {
        !self.views.is_empty()
    }
}

fn view_error(e: sql_views::ViewError) -> PgError {
    let mut error = PgError::new(e.code, e.message);
    if let Some(d) = e.detail {
        error = error.with_detail(d);
    }
    if let Some(h) = e.hint {
        error = error.with_hint(h);
    }
    error
}

/// What a name of the relation namespace is.
enum Kind {
    View(ViewDef),
    Table,
    Sequence,
}

impl Kind {
    /// `"x" is not a view` with the DROP that fits, as PostgreSQL words it.
    fn not_a_view(&self, name: &str) -> PgError {
        let error = PgError::new("42809", format!("\"{name}\" is not a view"));
        match self {
            Kind::Table => error.with_hint("Use DROP TABLE to remove a table."),
            Kind::Sequence => error.with_hint("Use DROP SEQUENCE to remove a sequence."),
            Kind::View(_) => error,
        }
    }
}

impl Session {
    /// The relations statements are expanded against: the views as listed at most
    /// `REFRESH_INTERVAL` ago (at once after this server's view DDL).
    pub(super) async fn view_relations(&self) -> Result<SessionRelations, PgError> {
        let views = self
            .engine
            .views()
            .all(crate::query::REFRESH_INTERVAL)
            .await?;
        Ok(SessionRelations {
            catalog: Arc::clone(self.engine.catalog()),
            views,
        })
    }

    /// Replaces the views `statement` names by their queries; refuses writes into views.
    pub(super) async fn expand_views(&self, statement: &mut DFStatement) -> Result<(), PgError> {
        let relations = self.view_relations().await?;
        if !relations.has_views() {
            return Ok(());
        }
        let path = self.vars.effective_search_path();
        sql_views::expand(statement, &relations, &path).map_err(view_error)
    }

    pub(super) async fn view(&mut self, command: ViewCommand) -> Result<Outcome, PgError> {
        if self.tx != super::TxState::Idle {
            let what = match &command {
                ViewCommand::Create { .. } => "CREATE VIEW",
                ViewCommand::Drop { .. } => "DROP VIEW",
                ViewCommand::Rename { .. } => "ALTER VIEW",
                ViewCommand::Comment { .. } => "COMMENT ON VIEW",
            };
            return Err(PgError::new(
                "25001",
                format!("{what} cannot run inside a transaction block"),
            )
            .with_hint(
                "tarn cannot make view changes part of a transaction yet: run the statement \
                 outside the block.",
            ));
        }
        self.refresh_catalog_now().await?;
        let outcome = match command {
            ViewCommand::Create {
                schema,
                name,
                or_replace,
                columns,
                sql,
            } => {
                self.create_view(schema.as_deref(), &name, or_replace, &columns, sql)
                    .await?
            }
            ViewCommand::Drop {
                names,
                if_exists,
                cascade,
            } => self.drop_views(&names, if_exists, cascade).await?,
            ViewCommand::Rename {
                schema,
                name,
                to,
                if_exists,
            } => {
                self.rename_view(schema.as_deref(), &name, &to, if_exists)
                    .await?
            }
            ViewCommand::Comment {
                schema,
                name,
                comment,
            } => self.comment_view(schema.as_deref(), &name, comment).await?,
        };
        self.catalog_changed_by_ddl().await?;
        Ok(outcome)
    }

    /// What `name` is in schema `db` (views, tables and sequences share the names).
    async fn kind_in(&self, db: &str, name: &str) -> Result<Option<Kind>, PgError> {
        if let Some(view) = self.engine.views().get(db, name).await? {
            return Ok(Some(Kind::View(view)));
        }
        if self
            .engine
            .catalog()
            .warehouse()
            .table_exists(db, name)
            .await?
        {
            return Ok(Some(Kind::Table));
        }
        if self.engine.sequences().get(db, name).await?.is_some() {
            return Ok(Some(Kind::Sequence));
        }
        Ok(None)
    }

    /// The relation `name` resolves to: in `schema`, or in the first schema of `search_path`
    /// holding a relation of that name.
    async fn find_named(
        &self,
        schema: Option<&str>,
        name: &str,
    ) -> Result<Option<(String, Kind)>, PgError> {
        let candidates = match schema {
            Some(s) => vec![s.to_owned()],
            None => self.vars.effective_search_path(),
        };
        for db in candidates {
            if !self.engine.catalog().has_database(&db) {
                continue;
            }
            if let Some(kind) = self.kind_in(&db, name).await? {
                return Ok(Some((db, kind)));
            }
        }
        Ok(None)
    }

    async fn create_view(
        &mut self,
        schema: Option<&str>,
        name: &str,
        or_replace: bool,
        names: &[String],
        sql: String,
    ) -> Result<Outcome, PgError> {
        let db = self.creation_schema(schema)?;
        let exists = || PgError::new("42P07", format!("relation \"{name}\" already exists"));
        let old = match self.kind_in(&db, name).await? {
            Some(Kind::View(_)) if !or_replace => return Err(exists()),
            Some(Kind::View(old)) => Some(old),
            Some(_) => return Err(exists()),
            None => None,
        };
        // The query as every use will see it: planned once, through a SELECT's path.
        let path = self.vars.effective_search_path();
        let relations = self.view_relations().await?;
        let creating = (db.clone(), name.to_owned());
        let query =
            sql_views::parse_view_query(&sql, &relations, &path, creating).map_err(view_error)?;
        let statement = DFStatement::Statement(Box::new(Statement::Query(Box::new(query))));
        let plan = self.plan(statement).await?;
        let schema = self
            .analyzed_schema(&plan)
            .unwrap_or_else(|| Arc::clone(plan.schema().inner()));
        let query_columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        if names.len() > query_columns.len() {
            return Err(PgError::new(
                "42601",
                "CREATE VIEW specifies more column names than columns",
            ));
        }
        let types = column_types(&schema)?;
        let mut columns = Vec::with_capacity(types.len());
        for (i, ((type_oid, typmod), field)) in types.into_iter().zip(schema.fields()).enumerate() {
            let name = names
                .get(i)
                .cloned()
                .unwrap_or_else(|| crate::sql::visible_name(field.name()).to_owned());
            if columns.iter().any(|c: &ViewColumn| c.name == name) {
                return Err(PgError::new(
                    "42701",
                    format!("column \"{name}\" specified more than once"),
                ));
            }
            columns.push(ViewColumn {
                name,
                type_oid,
                typmod,
            });
        }
        if let Some(old) = &old {
            check_replacement(&old.columns, &columns)?;
        }
        let now = self.engine.catalog().warehouse().clock().now_millis();
        let view = ViewDef {
            schema: db,
            name: name.to_owned(),
            sql,
            columns,
            query_columns,
            search_path: path,
            comment: old.and_then(|o| o.comment),
            created_millis: now,
            updated_millis: now,
        };
        match self.engine.views().create(&view, or_replace).await {
            Err(ViewError::Exists(_)) => return Err(exists()),
            other => other?,
        }
        Ok(Outcome::done("CREATE VIEW"))
    }

    async fn drop_views(
        &mut self,
        names: &[(Option<String>, String)],
        if_exists: bool,
        cascade: bool,
    ) -> Result<Outcome, PgError> {
        let mut outcome = Outcome::done("DROP VIEW");
        // Resolve all first: a missing name drops nothing (as in PostgreSQL).
        let mut dropped: Vec<(String, String)> = Vec::new();
        for (schema, name) in names {
            match self.find_named(schema.as_deref(), name).await? {
                Some((db, Kind::View(_))) => dropped.push((db, name.clone())),
                Some((_, kind)) => return Err(kind.not_a_view(name)),
                None if if_exists => outcome
                    .notices
                    .push(("00000", format!("view \"{name}\" does not exist, skipping"))),
                None => {
                    return Err(PgError::new(
                        "42P01",
                        format!("view \"{name}\" does not exist"),
                    ));
                }
            }
        }
        // Views using the dropped ones: refused, or dropped with them (CASCADE).
        let relations = self.view_relations().await?;
        let mut cascaded: Vec<(String, String)> = Vec::new();
        loop {
            let dependents: Vec<(&ViewDef, (String, String))> = relations
                .views
                .iter()
                .filter(|v| {
                    let key = (v.schema.clone(), v.name.clone());
                    !dropped.contains(&key) && !cascaded.contains(&key)
                })
                .filter_map(|v| {
                    let uses = sql_views::views_used(v, &relations).ok()?;
                    let on = uses
                        .into_iter()
                        .find(|u| dropped.contains(u) || cascaded.contains(u))?;
                    Some((v, on))
                })
                .collect();
            if dependents.is_empty() {
                break;
            }
            if !cascade {
                let detail: Vec<String> = dependents
                    .iter()
                    .map(|(v, (_, on))| format!("view {} depends on view {on}", v.name))
                    .collect();
                return Err(PgError::new(
                    "2BP01",
                    format!(
                        "cannot drop view {} because other objects depend on it",
                        dependents[0].1.1
                    ),
                )
                .with_detail(detail.join("\n"))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            for (v, _) in dependents {
                cascaded.push((v.schema.clone(), v.name.clone()));
            }
        }
        match cascaded.as_slice() {
            [] => {}
            [(_, one)] => outcome
                .notices
                .push(("00000", format!("drop cascades to view {one}"))),
            many => outcome.notices.push((
                "00000",
                format!("drop cascades to {} other objects", many.len()),
            )),
        }
        let store = self.engine.views();
        for (db, name) in dropped.iter().chain(&cascaded) {
            store.drop(db, name).await?;
        }
        Ok(outcome)
    }

    async fn rename_view(
        &mut self,
        schema: Option<&str>,
        name: &str,
        to: &str,
        if_exists: bool,
    ) -> Result<Outcome, PgError> {
        let mut outcome = Outcome::done("ALTER VIEW");
        let db = match self.find_named(schema, name).await? {
            Some((db, Kind::View(_))) => db,
            Some((_, kind)) => return Err(kind.not_a_view(name)),
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
        let exists = || PgError::new("42P07", format!("relation \"{to}\" already exists"));
        if self.kind_in(&db, to).await?.is_some() {
            return Err(exists());
        }
        let now = self.engine.catalog().warehouse().clock().now_millis();
        match self.engine.views().rename(&db, name, to, now).await {
            Err(ViewError::Exists(_)) => return Err(exists()),
            other => other?,
        }
        Ok(outcome)
    }

    async fn comment_view(
        &mut self,
        schema: Option<&str>,
        name: &str,
        comment: Option<String>,
    ) -> Result<Outcome, PgError> {
        let db = match self.find_named(schema, name).await? {
            Some((db, Kind::View(_))) => db,
            Some((_, kind)) => return Err(kind.not_a_view(name)),
            None => {
                return Err(PgError::new(
                    "42P01",
                    format!("relation \"{name}\" does not exist"),
                ));
            }
        };
        let now = self.engine.catalog().warehouse().clock().now_millis();
        self.engine
            .views()
            .set_comment(&db, name, comment, now)
            .await?;
        Ok(Outcome::done("COMMENT"))
    }

    /// DROP SCHEMA without CASCADE refuses a schema holding views (2BP01).
    pub(super) async fn check_schema_views(&self, db: &str, cascade: bool) -> Result<(), PgError> {
        let views = self.engine.views().list(db).await?;
        match views.first() {
            Some(v) if !cascade => Err(PgError::new(
                "2BP01",
                format!("cannot drop schema {db} because other objects depend on it"),
            )
            .with_detail(format!("view {db}.{} depends on schema {db}", v.name))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")),
            _ => Ok(()),
        }
    }

    /// The views of a dropped schema go with it (a schema created again later has none).
    pub(super) async fn drop_schema_views(&self, db: &str) -> Result<(), PgError> {
        let store = self.engine.views();
        for v in store.list(db).await? {
            store.drop(db, &v.name).await?;
        }
        Ok(())
    }

    /// Whether `schema.name` (or `name` along the search path) is a view: the name a DROP
    /// TABLE or DROP SEQUENCE did not find, for PostgreSQL's 42809.
    pub(super) async fn is_view(&self, schema: Option<&str>, name: &str) -> Result<bool, PgError> {
        Ok(matches!(
            self.find_named(schema, name).await?,
            Some((_, Kind::View(_)))
        ))
    }

    /// Whether schema `db` has a view called `name` (CREATE TABLE and CREATE SEQUENCE share
    /// the view's names).
    pub(super) async fn view_exists(&self, db: &str, name: &str) -> Result<bool, PgError> {
        Ok(self.engine.views().get(db, name).await?.is_some())
    }
}

/// The PostgreSQL type (OID, typmod) of each column of `schema`, as the wire describes them.
fn column_types(schema: &Schema) -> Result<Vec<(i32, i32)>, PgError> {
    let fields = crate::server::stream::row_fields(
        schema,
        &Format::UnifiedText,
        Arc::new(FormatOptions::default()),
    )
    .map_err(|e| PgError::new("0A000", format!("a view's column cannot be described: {e}")))?;
    Ok(fields
        .iter()
        .map(|f| (f.datatype().oid() as i32, f.type_modifier()))
        .collect())
}

/// CREATE OR REPLACE VIEW's rule: the old columns stay, by name and type, in their order.
fn check_replacement(old: &[ViewColumn], new: &[ViewColumn]) -> Result<(), PgError> {
    if new.len() < old.len() {
        return Err(PgError::new("42P16", "cannot drop columns from view"));
    }
    for (o, n) in old.iter().zip(new) {
        if o.name != n.name {
            return Err(PgError::new(
                "42P16",
                format!(
                    "cannot change name of view column \"{}\" to \"{}\"",
                    o.name, n.name
                ),
            )
            .with_hint(
                "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
            ));
        }
        if (o.type_oid, o.typmod) != (n.type_oid, n.typmod) {
            let name = |oid: i32| {
                pgwire::api::Type::from_oid(oid as u32)
                    .map_or_else(|| oid.to_string(), |t| t.name().to_owned())
            };
            return Err(PgError::new(
                "42P16",
                format!(
                    "cannot change data type of view column \"{}\" from {} to {}",
                    o.name,
                    name(o.type_oid),
                    name(n.type_oid)
                ),
            ));
        }
    }
    Ok(())
}
