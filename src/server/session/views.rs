//! View DDL of a session — CREATE [OR REPLACE] VIEW, DROP VIEW, ALTER VIEW … RENAME TO,
//! COMMENT ON VIEW on the warehouse's views (`storage/views.rs`) — and the expansion of the
//! views a statement names before it is planned (`sql/views.rs`).
//!
//! A view shares the relation namespace of its schema with tables and sequences, as in
//! PostgreSQL: a name resolves through `search_path` to the first schema holding a relation of
//! that name (42P07 when CREATE finds one, 42809 when it is of another kind). CREATE plans the
//! query once, as a SELECT is planned, to check it and to learn its columns and their types;
//! OR REPLACE keeps the existing columns (names and types, in order) and may add more after
//! them, or fails with 42P16 as PostgreSQL does. Each statement runs at once and makes every
//! kept plan be made again; inside a transaction block it is refused (25001), since it could
//! not commit or roll back with the block.
//!
//! **What views depend on** (`sql/view_deps.rs` reads it from their texts), kept as PostgreSQL
//! keeps it by OID: DROP TABLE / DROP VIEW / ALTER TABLE DROP COLUMN of something a view uses
//! is refused with 2BP01 (the DETAIL lists every dependent, depth first, older views first,
//! as PostgreSQL's), or with CASCADE drops those views too (NOTICE `drop cascades to …`, its
//! list as the DETAIL); DROP SCHEMA … CASCADE drops the views of other schemas using its
//! relations; ALTER COLUMN TYPE of a used column is 0A000. A RENAME TO of a table or view, and
//! RENAME COLUMN, rewrite the texts of the views naming them (each a new version of the view,
//! written after the rename, 40001 if the view changed meanwhile); a text that cannot be
//! rewritten safely refuses the rename (0A000, naming the view). Inside a transaction block,
//! what would change a view (a rename views follow, a CASCADE) is refused (25001): the views
//! could not commit with the block.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;
use pgwire::api::portal::Format;
use pgwire::types::format::FormatOptions;

use std::collections::HashSet;
use std::time::Duration;

use super::{Outcome, Session};
use crate::query::{SessionVars, WarehouseCatalog};
use crate::server::error::{NOTICE_DETAIL, PgError};
use crate::sql::view_deps::{self, Change, Dependency, TableColumns, Target};
use crate::sql::views::{self as sql_views, Relations, Resolved, ViewCommand};
use crate::storage::spec::schema_change::SchemaChange;
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
        let roots: Vec<Object> = dropped
            .iter()
            .map(|(db, name)| Object::View(db.clone(), name.clone()))
            .collect();
        let cascaded = self
            .check_dependents(&roots, cascade, &mut outcome.notices)
            .await?;
        let store = self.engine.views();
        for (db, name) in &dropped {
            store.drop(db, name).await?;
        }
        self.drop_dependents(&cascaded).await?;
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
        // Views naming it follow it (PostgreSQL binds them by OID).
        let rewrites = self.views_follow_rename(&db, name, to, true).await?;
        let now = self.engine.catalog().warehouse().clock().now_millis();
        match self.engine.views().rename(&db, name, to, now).await {
            Err(ViewError::Exists(_)) => return Err(exists()),
            other => other?,
        }
        self.rewrite_views(rewrites).await?;
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

    /// DROP SCHEMA without CASCADE refuses a schema holding views (2BP01); with CASCADE, the
    /// views of other schemas that use its tables or views are dropped first (PostgreSQL
    /// drops them with the schema).
    pub(super) async fn check_schema_views(&self, db: &str, cascade: bool) -> Result<(), PgError> {
        let views = self.engine.views().list(db).await?;
        match views.first() {
            Some(v) if !cascade => Err(PgError::new(
                "2BP01",
                format!("cannot drop schema {db} because other objects depend on it"),
            )
            .with_detail(format!("view {db}.{} depends on schema {db}", v.name))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")),
            _ if cascade => {
                let mut roots: Vec<Object> = self
                    .engine
                    .catalog()
                    .table_names_of(db)
                    .iter()
                    .map(|t| Object::Table(db.to_owned(), t.clone()))
                    .collect();
                roots.extend(
                    views
                        .iter()
                        .map(|v| Object::View(db.to_owned(), v.name.clone())),
                );
                let (_, dependents) = self.dependent_views(&roots).await?;
                let outside: Vec<Dependent> =
                    dependents.into_iter().filter(|d| d.schema != db).collect();
                self.drop_dependents(&outside).await
            }
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

/// An object whose dependent views are looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Object {
    /// `(schema, table)`.
    Table(String, String),
    /// `(schema, view)`.
    View(String, String),
    /// `(schema, table, column)`.
    Column(String, String, String),
}

/// A view that depends on a dropped or changed object, directly or through other views.
#[derive(Debug, Clone)]
pub(super) struct Dependent {
    schema: String,
    name: String,
    /// PostgreSQL's DETAIL line: `view v depends on table t`.
    line: String,
    /// On one of the objects asked about itself (not through another view).
    direct: bool,
}

/// A view's new query text: `(the view as read, the text)`.
pub(super) type Rewrite = (ViewDef, String);

/// What the views need after an ALTER TABLE: their texts rewritten for a renamed column, or
/// (CASCADE) the views using a dropped column dropped.
#[derive(Debug, Default)]
pub(super) struct ViewWork {
    rewrites: Vec<Rewrite>,
    drops: Vec<Dependent>,
    pub(super) notices: Vec<(&'static str, String)>,
}

/// The name of `db.name` as PostgreSQL's messages show it: qualified unless the search path
/// finds it.
fn shown(relations: &SessionRelations, path: &[String], db: &str, name: &str) -> String {
    let visible = match relations.resolve(None, name, path) {
        Resolved::Table(found) => found == db,
        Resolved::View(v) => v.schema == db,
        Resolved::Other => false,
    };
    if visible {
        name.to_owned()
    } else {
        format!("{db}.{name}")
    }
}

fn describe(relations: &SessionRelations, path: &[String], object: &Object) -> String {
    match object {
        Object::Table(db, t) => format!("table {}", shown(relations, path, db, t)),
        Object::View(db, v) => format!("view {}", shown(relations, path, db, v)),
        Object::Column(db, t, c) => {
            format!("column {c} of table {}", shown(relations, path, db, t))
        }
    }
}

/// 2BP01 for dropping `roots` (described as `what` when there is one) that `dependents` use.
fn dependency_error(what: Option<String>, dependents: &[Dependent]) -> PgError {
    let message = match what {
        Some(what) => format!("cannot drop {what} because other objects depend on it"),
        None => "cannot drop desired object(s) because other objects depend on them".to_owned(),
    };
    let detail: Vec<&str> = dependents.iter().map(|d| d.line.as_str()).collect();
    PgError::new("2BP01", message)
        .with_detail(detail.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
}

/// PostgreSQL's NOTICE for the views a CASCADE drops (the list as its DETAIL).
fn cascade_notice(
    relations: &SessionRelations,
    path: &[String],
    dependents: &[Dependent],
) -> (&'static str, String) {
    let lines: Vec<String> = dependents
        .iter()
        .map(|d| {
            format!(
                "drop cascades to view {}",
                shown(relations, path, &d.schema, &d.name)
            )
        })
        .collect();
    match lines.as_slice() {
        [one] => ("00000", one.clone()),
        many => (
            "00000",
            format!(
                "drop cascades to {} other objects{NOTICE_DETAIL}{}",
                many.len(),
                many.join("\n")
            ),
        ),
    }
}

fn in_block_refusal(what: String) -> PgError {
    PgError::new("25001", what).with_hint(
        "tarn cannot make view changes part of a transaction yet: run the statement outside \
         the block.",
    )
}

impl Session {
    /// Every view as stored now, with the tables to resolve their names against.
    async fn fresh_view_relations(&self) -> Result<SessionRelations, PgError> {
        let views = self.engine.views().all(Duration::ZERO).await?;
        Ok(SessionRelations {
            catalog: Arc::clone(self.engine.catalog()),
            views,
        })
    }

    /// The columns, as they are now, of the tables `views` name.
    async fn columns_of_tables<'v>(
        &self,
        relations: &SessionRelations,
        views: impl Iterator<Item = &'v ViewDef>,
    ) -> Result<TableColumns, PgError> {
        let mut columns = TableColumns::new();
        for view in views {
            for dependency in view_deps::relations_used(view, relations).unwrap_or_default() {
                let Dependency::Table(db, table) = dependency else {
                    continue;
                };
                let key = (db, table);
                if columns.contains_key(&key) {
                    continue;
                }
                if let Ok(t) = self.open_table_here(&key.0, &key.1).await {
                    let names = t.schema().fields.iter().map(|f| f.name.clone()).collect();
                    columns.insert(key, names);
                }
            }
        }
        Ok(columns)
    }

    /// The views that depend on `roots`, directly or through other views, in the order
    /// PostgreSQL reports them (depth first, older views first). Views among the roots are
    /// not reported.
    pub(super) async fn dependent_views(
        &self,
        roots: &[Object],
    ) -> Result<(SessionRelations, Vec<Dependent>), PgError> {
        let relations = self.fresh_view_relations().await?;
        let mut views: Vec<&ViewDef> = relations.views.iter().collect();
        views.sort_by(|a, b| {
            (a.created_millis, &a.schema, &a.name).cmp(&(b.created_millis, &b.schema, &b.name))
        });
        let uses: Vec<Vec<Dependency>> = views
            .iter()
            .map(|v| view_deps::relations_used(v, &relations).unwrap_or_default())
            .collect();
        let tables = if roots.iter().any(|r| matches!(r, Object::Column(..))) {
            self.columns_of_tables(&relations, views.iter().copied())
                .await?
        } else {
            TableColumns::new()
        };
        let path = self.vars.effective_search_path();
        let mut seen: HashSet<(String, String)> = roots
            .iter()
            .filter_map(|r| match r {
                Object::View(db, v) => Some((db.clone(), v.clone())),
                _ => None,
            })
            .collect();
        let mut out = Vec::new();
        let walk = Walk {
            relations: &relations,
            views: &views,
            uses: &uses,
            tables: &tables,
            path: &path,
        };
        for root in roots {
            walk.visit(root, true, &mut seen, &mut out);
        }
        Ok((relations, out))
    }

    /// Before dropping `roots`: the views using them refuse the drop (2BP01), or with
    /// `cascade` are answered to be dropped too (a NOTICE added to `notices`). Views cannot
    /// be dropped inside a transaction block (25001).
    pub(super) async fn check_dependents(
        &self,
        roots: &[Object],
        cascade: bool,
        notices: &mut Vec<(&'static str, String)>,
    ) -> Result<Vec<Dependent>, PgError> {
        if roots.is_empty() {
            return Ok(Vec::new());
        }
        let (relations, dependents) = self.dependent_views(roots).await?;
        if dependents.is_empty() {
            return Ok(dependents);
        }
        let path = self.vars.effective_search_path();
        if !cascade {
            let what = match roots {
                [one] => Some(describe(&relations, &path, one)),
                _ => None,
            };
            return Err(dependency_error(what, &dependents));
        }
        if self.in_block() {
            return Err(in_block_refusal(format!(
                "DROP ... CASCADE of objects views use cannot run inside a transaction block \
                 (view {} would be dropped)",
                dependents[0].name
            )));
        }
        notices.push(cascade_notice(&relations, &path, &dependents));
        Ok(dependents)
    }

    /// Drops the views [`check_dependents`](Self::check_dependents) answered.
    pub(super) async fn drop_dependents(&self, dependents: &[Dependent]) -> Result<(), PgError> {
        let store = self.engine.views();
        for d in dependents {
            store.drop(&d.schema, &d.name).await?;
        }
        Ok(())
    }

    /// Before `RENAME TO` of table (or view, `is_view`) `db.from`: the new texts of the views
    /// naming it, or naming `to` where the renamed one would now be found first. Refused when
    /// a view's text cannot be rewritten safely (0A000), or inside a transaction block when a
    /// view needs rewriting (25001).
    pub(super) async fn views_follow_rename(
        &self,
        db: &str,
        from: &str,
        to: &str,
        is_view: bool,
    ) -> Result<Vec<Rewrite>, PgError> {
        let relations = self.fresh_view_relations().await?;
        if relations.views.is_empty() {
            return Ok(Vec::new());
        }
        let named = if is_view {
            Dependency::View(db.to_owned(), from.to_owned())
        } else {
            Dependency::Table(db.to_owned(), from.to_owned())
        };
        let names_it = relations
            .views
            .iter()
            .any(|v| view_deps::relations_used(v, &relations).is_ok_and(|d| d.contains(&named)));
        // Only views naming the renamed one need its columns.
        let columns = if !names_it {
            Vec::new()
        } else if is_view {
            relations
                .views
                .iter()
                .find(|v| v.schema == db && v.name == from)
                .map(|v| v.columns.iter().map(|c| c.name.clone()).collect())
                .unwrap_or_default()
        } else {
            self.open_table_here(db, from)
                .await?
                .schema()
                .fields
                .iter()
                .map(|f| f.name.clone())
                .collect()
        };
        let target = Target {
            schema: db.to_owned(),
            name: from.to_owned(),
            is_view,
            columns,
        };
        let tables = self
            .columns_of_tables(&relations, relations.views.iter())
            .await?;
        let change = Change::Relation(to.to_owned());
        let kind = if is_view { "view" } else { "table" };
        let mut rewrites = Vec::new();
        for view in relations.views.iter() {
            if is_view && view.schema == db && view.name == from {
                continue;
            }
            match view_deps::rewrite(view, &relations, &tables, &target, &change) {
                Ok(None) => {}
                Ok(Some(sql)) => rewrites.push((view.clone(), sql)),
                Err(refusal) => {
                    return Err(PgError::new(
                        "0A000",
                        format!(
                            "cannot rename {kind} \"{from}\" to \"{to}\": view \"{}\" names                              it in a way tarn cannot rewrite ({})",
                            view.name, refusal.0
                        ),
                    )
                    .with_hint(format!(
                        "Drop view \"{}\", rename, then create the view again.",
                        view.name
                    )));
                }
            }
        }
        if let Some((view, _)) = rewrites.first()
            && self.in_block()
        {
            return Err(in_block_refusal(format!(
                "cannot rename {kind} \"{from}\" inside a transaction block: view \"{}\" names \
                 it and would have to follow the rename",
                view.name
            )));
        }
        Ok(rewrites)
    }

    /// Before ALTER TABLE `db.table` makes `changes`: DROP COLUMN of a column views use is
    /// refused (2BP01) or, with `cascade`, drops them; ALTER COLUMN TYPE of such a column is
    /// refused (0A000, as PostgreSQL); RENAME COLUMN rewrites the views' texts (0A000 when
    /// one cannot be rewritten safely). Inside a transaction block, anything that would
    /// change a view is refused (25001).
    pub(super) async fn views_follow_alter(
        &self,
        db: &str,
        table: &str,
        changes: &[SchemaChange],
        cascade: bool,
    ) -> Result<ViewWork, PgError> {
        let mut work = ViewWork::default();
        let touches = changes.iter().any(|c| {
            matches!(
                c,
                SchemaChange::DropColumn { .. }
                    | SchemaChange::UpdateColumnType { .. }
                    | SchemaChange::RenameColumn { .. }
            )
        });
        if !touches || self.engine.views().all(Duration::ZERO).await?.is_empty() {
            return Ok(work);
        }
        let column = |c: &str| Object::Column(db.to_owned(), table.to_owned(), c.to_owned());
        for change in changes {
            match change {
                SchemaChange::UpdateColumnType { name, .. } => {
                    let (_, dependents) = self.dependent_views(&[column(name)]).await?;
                    if let Some(d) = dependents.iter().find(|d| d.direct) {
                        return Err(PgError::new(
                            "0A000",
                            "cannot alter type of a column used by a view or rule",
                        )
                        .with_detail(format!(
                            "rule _RETURN on view {} depends on column \"{name}\"",
                            d.name
                        )));
                    }
                }
                SchemaChange::DropColumn { name } => {
                    let dropped = self
                        .check_dependents(&[column(name)], cascade, &mut work.notices)
                        .await?;
                    work.drops.extend(dropped);
                }
                SchemaChange::RenameColumn { name, new_name } => {
                    let relations = self.fresh_view_relations().await?;
                    let target = Target {
                        schema: db.to_owned(),
                        name: table.to_owned(),
                        is_view: false,
                        columns: self
                            .open_table_here(db, table)
                            .await?
                            .schema()
                            .fields
                            .iter()
                            .map(|f| f.name.clone())
                            .collect(),
                    };
                    let naming: Vec<&ViewDef> = relations
                        .views
                        .iter()
                        .filter(|v| {
                            view_deps::relations_used(v, &relations)
                                .map(|d| {
                                    d.contains(&Dependency::Table(db.to_owned(), table.to_owned()))
                                })
                                .unwrap_or(false)
                        })
                        .collect();
                    let tables = self
                        .columns_of_tables(&relations, naming.iter().copied())
                        .await?;
                    let change = Change::Column {
                        old: name.clone(),
                        new: new_name.clone(),
                    };
                    for view in naming {
                        match view_deps::rewrite(view, &relations, &tables, &target, &change) {
                            Ok(None) => {}
                            Ok(Some(sql)) => work.rewrites.push((view.clone(), sql)),
                            Err(refusal) => {
                                return Err(PgError::new(
                                    "0A000",
                                    format!(
                                        "cannot rename column \"{name}\" of table \"{table}\": \
                                         view \"{}\" uses the table in a way tarn cannot \
                                         rewrite ({})",
                                        view.name, refusal.0
                                    ),
                                )
                                .with_hint(format!(
                                    "Drop view \"{}\", rename the column, then create the \
                                     view again.",
                                    view.name
                                )));
                            }
                        }
                    }
                    if let Some((view, _)) = work.rewrites.first()
                        && self.in_block()
                    {
                        return Err(in_block_refusal(format!(
                            "cannot rename column \"{name}\" of table \"{table}\" inside a \
                             transaction block: view \"{}\" uses it and would have to follow \
                             the rename",
                            view.name
                        )));
                    }
                }
                _ => {}
            }
        }
        Ok(work)
    }

    /// After the ALTER TABLE: the views' new texts written, the cascaded views dropped.
    pub(super) async fn apply_view_work(&self, work: ViewWork) -> Result<(), PgError> {
        self.rewrite_views(work.rewrites).await?;
        self.drop_dependents(&work.drops).await
    }

    /// Writes each view's new text as its next version (40001 if the view changed since it
    /// was read).
    pub(super) async fn rewrite_views(&self, rewrites: Vec<Rewrite>) -> Result<(), PgError> {
        let now = self.engine.catalog().warehouse().clock().now_millis();
        let store = self.engine.views();
        for (view, sql) in rewrites {
            store
                .replace_sql(&view.schema, &view.name, &view.sql, sql, now)
                .await?;
        }
        Ok(())
    }
}

/// The depth-first walk of [`Session::dependent_views`].
struct Walk<'a> {
    relations: &'a SessionRelations,
    /// Every view, older first.
    views: &'a [&'a ViewDef],
    /// The relations each view names.
    uses: &'a [Vec<Dependency>],
    tables: &'a TableColumns,
    path: &'a [String],
}

impl Walk<'_> {
    fn visit(
        &self,
        object: &Object,
        direct: bool,
        seen: &mut HashSet<(String, String)>,
        out: &mut Vec<Dependent>,
    ) {
        for (view, uses) in self.views.iter().zip(self.uses) {
            let key = (view.schema.clone(), view.name.clone());
            if seen.contains(&key) || !self.depends(view, uses, object) {
                continue;
            }
            seen.insert(key);
            out.push(Dependent {
                schema: view.schema.clone(),
                name: view.name.clone(),
                line: format!(
                    "view {} depends on {}",
                    shown(self.relations, self.path, &view.schema, &view.name),
                    describe(self.relations, self.path, object)
                ),
                direct,
            });
            let next = Object::View(view.schema.clone(), view.name.clone());
            self.visit(&next, false, seen, out);
        }
    }

    fn depends(&self, view: &ViewDef, uses: &[Dependency], object: &Object) -> bool {
        match object {
            Object::Table(db, t) => uses.contains(&Dependency::Table(db.clone(), t.clone())),
            Object::View(db, v) => uses.contains(&Dependency::View(db.clone(), v.clone())),
            Object::Column(db, t, c) => {
                if !uses.contains(&Dependency::Table(db.clone(), t.clone())) {
                    return false;
                }
                let Some(columns) = self.tables.get(&(db.clone(), t.clone())) else {
                    return true;
                };
                let target = Target {
                    schema: db.clone(),
                    name: t.clone(),
                    is_view: false,
                    columns: columns.clone(),
                };
                view_deps::columns_used(view, self.relations, self.tables, &target)
                    .map_or(true, |u| u.uses(c))
            }
        }
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
