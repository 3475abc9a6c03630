//! Views: `CREATE [OR REPLACE] VIEW`, `DROP VIEW`, `ALTER VIEW … RENAME TO`, `COMMENT ON VIEW`
//! read into a [`ViewCommand`], and the expansion of the views a statement names
//! ([`expand`]).
//!
//! A view is kept as the SQL text of its query (`storage::views`). CREATE's query is taken
//! from the statement before any rewrite and printed from sqlparser's AST (a tag of
//! `VERSION AS OF 'tag'` printed as the literal it was), so the text is the query as written.
//! Before a statement is planned, every table reference that names a view (found through the
//! search path like any relation: a table and a view never share a name in a schema) becomes
//! the derived table `(SELECT q.c1 AS v1, … FROM (<view query>) AS q) AS <alias or view
//! name>`: the view's query parsed and rewritten as any query is, its unqualified table names
//! bound to the schemas of the view's own `search_path`, and the outer select keeping the
//! view's columns as CREATE found them (a column a `*` would gain later is not shown, as in
//! PostgreSQL). Views over views expand recursively; a cycle is 42P17. A time-travel clause
//! inside the view's query stays on its table reference and is pinned like any other; one on
//! a view reference is refused. INSERT, UPDATE, DELETE and MERGE into a view are refused as
//! PostgreSQL refuses a view that is not automatically updatable (55000).

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    CommentObject, Expr, FromTable, Ident, ObjectName, ObjectNamePart, ObjectType, Query,
    SelectItem, SetExpr, Statement, TableAlias, TableFactor, TableObject, TableVersion,
    TableWithJoins, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::SqlError;
use super::command::{Command, fold_ident};
use super::create_table::table_name;
use crate::storage::views::ViewDef;

/// How deep views may nest in one statement (PostgreSQL has no limit but its stack).
const MAX_DEPTH: usize = 64;
/// The alias of a view's query inside its expansion.
const BODY_ALIAS: &str = "__tarn_view";

/// A view statement.
#[derive(Debug, Clone)]
pub enum ViewCommand {
    /// `CREATE [OR REPLACE] VIEW [schema.]name [(columns)] AS query`.
    Create {
        schema: Option<String>,
        name: String,
        or_replace: bool,
        /// The names of `(columns)`, folded.
        columns: Vec<String>,
        /// The query as SQL text (see the module docs).
        sql: String,
    },
    /// `DROP VIEW [IF EXISTS] a, b [CASCADE | RESTRICT]`.
    Drop {
        names: Vec<(Option<String>, String)>,
        if_exists: bool,
        cascade: bool,
    },
    /// `ALTER VIEW [IF EXISTS] name RENAME TO new`.
    Rename {
        schema: Option<String>,
        name: String,
        to: String,
        if_exists: bool,
    },
    /// `COMMENT ON VIEW name IS 'text' | NULL`.
    Comment {
        schema: Option<String>,
        name: String,
        comment: Option<String>,
    },
}

/// The view command `statement` is, if it is one (before any rewrite touched its query).
pub fn view_command(statement: &DFStatement) -> Option<Result<ViewCommand, SqlError>> {
    let DFStatement::Statement(statement) = statement else {
        return None;
    };
    match statement.as_ref() {
        Statement::CreateView(create) => Some(create_view(create)),
        Statement::Drop {
            object_type: ObjectType::View,
            if_exists,
            names,
            cascade,
            ..
        } => Some((|| {
            Ok(ViewCommand::Drop {
                names: names.iter().map(table_name).collect::<Result<_, _>>()?,
                if_exists: *if_exists,
                cascade: *cascade,
            })
        })()),
        Statement::Comment {
            object_type: CommentObject::View,
            object_name,
            comment,
            ..
        } => Some(
            table_name(object_name).map(|(schema, name)| ViewCommand::Comment {
                schema,
                name,
                comment: comment.clone(),
            }),
        ),
        Statement::Drop {
            object_type: ObjectType::MaterializedView,
            ..
        }
        | Statement::AlterView { .. } => Some(Err(unsupported_form())),
        _ => None,
    }
}

fn unsupported_form() -> SqlError {
    SqlError::Unsupported(
        "this form of view statement is not supported: tarn has CREATE [OR REPLACE] VIEW, DROP \
         VIEW, ALTER VIEW … RENAME TO and COMMENT ON VIEW (materialized views: create a table \
         and INSERT … SELECT into it)"
            .into(),
    )
}

fn create_view(
    create: &datafusion::sql::sqlparser::ast::CreateView,
) -> Result<ViewCommand, SqlError> {
    if create.materialized {
        return Err(SqlError::Unsupported(
            "CREATE MATERIALIZED VIEW is not supported: create a table and INSERT … SELECT into \
             it"
            .into(),
        ));
    }
    if create.temporary {
        return Err(SqlError::Unsupported(
            "temporary views are not supported: tarn keeps every view in the warehouse, where \
             every session and server sees it; create it without TEMPORARY"
                .into(),
        ));
    }
    if create.if_not_exists || create.or_alter || create.secure || create.to.is_some() {
        return Err(SqlError::Syntax(
            "syntax error: CREATE VIEW takes OR REPLACE, a name, column names and AS query".into(),
        ));
    }
    if !matches!(
        create.options,
        datafusion::sql::sqlparser::ast::CreateTableOptions::None
    ) {
        return Err(SqlError::Unsupported(
            "view options (WITH (…), CHECK OPTION) are not supported".into(),
        ));
    }
    if create
        .columns
        .iter()
        .any(|c| c.data_type.is_some() || c.options.is_some())
    {
        return Err(SqlError::Syntax(
            "syntax error: a view's column list holds names only".into(),
        ));
    }
    let (schema, name) = table_name(&create.name)?;
    let mut query = create.query.as_ref().clone();
    unmark_tags(&mut query);
    Ok(ViewCommand::Create {
        schema,
        name,
        or_replace: create.or_replace,
        columns: create.columns.iter().map(|c| fold_ident(&c.name)).collect(),
        sql: query.to_string(),
    })
}

/// `VERSION AS OF 'tag'` back as the literal (`versions::mark_tags` made it a placeholder for
/// the parser), so the stored text reads as written and parses again.
pub(super) fn unmark_tags(query: &mut Query) {
    struct Unmark;
    impl VisitorMut for Unmark {
        type Break = ();
        fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                version: Some(TableVersion::VersionAsOf(Expr::Value(v))),
                ..
            } = factor
                && let Value::Placeholder(p) = &v.value
                && let Some(tag) = super::versions::tag_of(p)
            {
                v.value = Value::SingleQuotedString(tag);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = VisitMut::visit(query, &mut Unmark);
}

/// Whether the parser is at `ALTER VIEW` (which sqlparser reads only as `ALTER VIEW … AS`).
pub fn at_alter_view(parser: &Parser) -> bool {
    let [a, b] = parser.peek_tokens();
    let is = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    is(&a, Keyword::ALTER) && is(&b, Keyword::VIEW)
}

/// `ALTER VIEW [IF EXISTS] name RENAME TO new` (the parser is at `ALTER`); other ALTER VIEW
/// forms are refused.
pub fn parse_alter_view(parser: &mut Parser) -> Result<ViewCommand, SqlError> {
    let syntax = |e: ParserError| SqlError::Syntax(format!("syntax error: {e}"));
    parser.expect_keyword(Keyword::ALTER).map_err(syntax)?;
    parser.expect_keyword(Keyword::VIEW).map_err(syntax)?;
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let (schema, name) = table_name(&parser.parse_object_name(false).map_err(syntax)?)?;
    if !parser.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        return Err(unsupported_form());
    }
    let to = fold_ident(&parser.parse_identifier().map_err(syntax)?);
    Ok(ViewCommand::Rename {
        schema,
        name,
        to,
        if_exists,
    })
}

/// What a relation name stands for.
#[derive(Debug, Clone)]
pub enum Resolved<'a> {
    /// A table of this schema.
    Table(String),
    View(&'a ViewDef),
    /// Nothing tarn knows (a system table, a catalog table, a CTE, a missing name):
    /// left to the planner.
    Other,
}

/// Names of relations, resolved as the planner will resolve them.
pub trait Relations {
    /// What `schema.name` is, or with no schema, the first relation called `name` along
    /// `path`.
    fn resolve(&self, schema: Option<&str>, name: &str, path: &[String]) -> Resolved<'_>;

    /// Whether there is any view at all (statements need no walk otherwise).
    fn has_views(&self) -> bool;
}

/// Why a statement naming views cannot run: PostgreSQL's SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewError {
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl ViewError {
    fn new(code: &'static str, message: String) -> Self {
        Self {
            code,
            message,
            detail: None,
            hint: None,
        }
    }
}

impl From<SqlError> for ViewError {
    fn from(e: SqlError) -> Self {
        Self::new(e.sqlstate(), e.to_string())
    }
}

/// Replaces each view `statement` names by its query (see the module docs); refuses a write
/// into a view. `path` is the session's effective search path.
pub fn expand(
    statement: &mut DFStatement,
    relations: &dyn Relations,
    path: &[String],
) -> Result<(), ViewError> {
    if !relations.has_views() {
        return Ok(());
    }
    let statement = match statement {
        DFStatement::Statement(s) => s.as_mut(),
        DFStatement::Explain(explain) => return expand(&mut explain.statement, relations, path),
        _ => return Ok(()),
    };
    check_write_target(statement, relations, path)?;
    let mut expander = Expander {
        relations,
        path,
        qualify: false,
        ctes: cte_names(statement),
        stack: Vec::new(),
        error: None,
    };
    let _ = VisitMut::visit(statement, &mut expander);
    expander.error.map_or(Ok(()), Err)
}

/// The query text `sql` parsed as a SELECT (rewritten as any query), its views expanded
/// and its table names bound along `path`: CREATE VIEW's query before it is stored, for view
/// `creating` (`(schema, name)`), which it must not reach through other views (42P17).
pub fn parse_view_query(
    sql: &str,
    relations: &dyn Relations,
    path: &[String],
    creating: (String, String),
) -> Result<Query, ViewError> {
    let mut query = parse_query(sql)?;
    let mut expander = Expander {
        relations,
        path,
        qualify: true,
        ctes: cte_names(&query),
        stack: vec![creating],
        error: None,
    };
    let _ = VisitMut::visit(&mut query, &mut expander);
    expander.error.map_or(Ok(query), Err)
}

/// `sql` (a query) parsed and rewritten as the statements of a client are.
fn parse_query(sql: &str) -> Result<Query, ViewError> {
    let mut commands = super::parse(sql)?;
    match (commands.len(), commands.pop()) {
        (1, Some(Command::Plan(DFStatement::Statement(s)))) => match *s {
            Statement::Query(q) => Ok(*q),
            _ => Err(not_a_query()),
        },
        _ => Err(not_a_query()),
    }
}

fn not_a_query() -> ViewError {
    ViewError::new(
        "42601",
        "syntax error: a view's definition must be one SELECT, VALUES or WITH … SELECT".into(),
    )
}

/// The view's query with its names bound and its own views expanded, wrapped in the select
/// that gives the view's columns.
fn body(
    view: &ViewDef,
    relations: &dyn Relations,
    stack: &mut Vec<(String, String)>,
) -> Result<Query, ViewError> {
    let mut query = parse_query(&view.sql)?;
    let mut expander = Expander {
        relations,
        path: &view.search_path,
        qualify: true,
        ctes: cte_names(&query),
        stack: std::mem::take(stack),
        error: None,
    };
    let _ = VisitMut::visit(&mut query, &mut expander);
    *stack = expander.stack;
    if let Some(e) = expander.error {
        return Err(e);
    }
    let projection = view
        .query_columns
        .iter()
        .zip(&view.columns)
        .map(|(from, to)| SelectItem::ExprWithAlias {
            expr: Expr::CompoundIdentifier(vec![
                Ident::with_quote('"', BODY_ALIAS),
                Ident::with_quote('"', from),
            ]),
            alias: Ident::with_quote('"', &to.name),
        })
        .collect();
    let from = vec![TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: Box::new(query),
            alias: Some(alias_of(BODY_ALIAS)),
            sample: None,
        },
        joins: vec![],
    }];
    Ok(super::ast::select(projection, from))
}

/// The folded parts of a relation name: `(schema, name)`, `None` for other shapes.
pub(super) fn relation_name(name: &ObjectName) -> Option<(Option<String>, String)> {
    let parts: Option<Vec<String>> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(fold_ident))
        .collect();
    match parts?.as_slice() {
        [t] => Some((None, t.clone())),
        [s, t] | [_, s, t] => Some((Some(s.clone()), t.clone())),
        _ => None,
    }
}

/// Every CTE name of `node` (a reference with one of these names is the CTE's, not a view's).
pub(super) fn cte_names<V: Visit>(node: &V) -> HashSet<String> {
    struct Names(HashSet<String>);
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                for cte in &with.cte_tables {
                    self.0.insert(fold_ident(&cte.alias.name));
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names(HashSet::new());
    let _ = node.visit(&mut names);
    names.0
}

struct Expander<'a> {
    relations: &'a dyn Relations,
    path: &'a [String],
    /// Inside a view's query: unqualified table names get the schema they resolve to along
    /// the view's path (the planner would resolve them along the session's).
    qualify: bool,
    ctes: HashSet<String>,
    /// The views being expanded, outermost first.
    stack: Vec<(String, String)>,
    error: Option<ViewError>,
}

impl VisitorMut for Expander<'_> {
    type Break = ();

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            alias,
            args: None,
            version,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let Some((schema, relation)) = relation_name(name) else {
            return ControlFlow::Continue(());
        };
        if schema.is_none() && self.ctes.contains(&relation) {
            return ControlFlow::Continue(());
        }
        match self
            .relations
            .resolve(schema.as_deref(), &relation, self.path)
        {
            Resolved::Other => {}
            Resolved::Table(found) => {
                if self.qualify && schema.is_none() {
                    *name = ObjectName(vec![
                        ObjectNamePart::Identifier(Ident::with_quote('"', found)),
                        ObjectNamePart::Identifier(Ident::with_quote('"', relation.clone())),
                    ]);
                    if alias.is_none() {
                        *alias = Some(alias_of(&relation));
                    }
                }
            }
            Resolved::View(view) => {
                if version.is_some() {
                    self.error = Some(ViewError::new(
                        "0A000",
                        format!(
                            "\"{relation}\" is a view, which has no versions: put the \
                             time-travel clause on the tables inside the view's query"
                        ),
                    ));
                    return ControlFlow::Break(());
                }
                let key = (view.schema.clone(), view.name.clone());
                if self.stack.contains(&key) {
                    self.error = Some(ViewError::new(
                        "42P17",
                        format!(
                            "infinite recursion detected in rules for relation \"{}\"",
                            view.name
                        ),
                    ));
                    return ControlFlow::Break(());
                }
                if self.stack.len() >= MAX_DEPTH {
                    self.error = Some(ViewError::new(
                        "54001",
                        format!(
                            "views nest deeper than {MAX_DEPTH} levels at \"{}\"",
                            view.name
                        ),
                    ));
                    return ControlFlow::Break(());
                }
                self.stack.push(key);
                let query = body(view, self.relations, &mut self.stack);
                self.stack.pop();
                match query {
                    Ok(query) => {
                        let alias = alias.take().unwrap_or_else(|| alias_of(&view.name));
                        *factor = TableFactor::Derived {
                            lateral: false,
                            subquery: Box::new(query),
                            alias: Some(alias),
                            sample: None,
                        };
                    }
                    Err(e) => {
                        self.error = Some(e);
                        return ControlFlow::Break(());
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The alias a reference without one gets: its own name, as the planner would qualify it.
fn alias_of(name: &str) -> TableAlias {
    TableAlias {
        explicit: true,
        name: Ident::with_quote('"', name),
        columns: vec![],
        at: None,
    }
}

/// Refuses INSERT, UPDATE, DELETE or MERGE whose target is a view (55000, as PostgreSQL
/// for a view that is not automatically updatable; tarn has no updatable views).
fn check_write_target(
    statement: &Statement,
    relations: &dyn Relations,
    path: &[String],
) -> Result<(), ViewError> {
    let (target, verb, hint) = match statement {
        Statement::Insert(insert) => match &insert.table {
            TableObject::TableName(name) => (name.clone(), "insert into", "inserting into"),
            _ => return Ok(()),
        },
        Statement::Update(update) => match &update.table.relation {
            TableFactor::Table { name, .. } => (name.clone(), "update", "updating"),
            _ => return Ok(()),
        },
        Statement::Delete(delete) => {
            let tables = match &delete.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            match tables.first().map(|t| &t.relation) {
                Some(TableFactor::Table { name, .. }) => {
                    (name.clone(), "delete from", "deleting from")
                }
                _ => return Ok(()),
            }
        }
        Statement::Merge(merge) => match &merge.table {
            TableFactor::Table { name, .. } => (name.clone(), "merge into", "merging into"),
            _ => return Ok(()),
        },
        Statement::Query(query) => {
            return match query.body.as_ref() {
                SetExpr::Insert(s)
                | SetExpr::Update(s)
                | SetExpr::Delete(s)
                | SetExpr::Merge(s) => check_write_target(s, relations, path),
                _ => Ok(()),
            };
        }
        _ => return Ok(()),
    };
    let Some((schema, name)) = relation_name(&target) else {
        return Ok(());
    };
    if let Resolved::View(view) = relations.resolve(schema.as_deref(), &name, path) {
        return Err(ViewError {
            code: "55000",
            message: format!("cannot {verb} view \"{}\"", view.name),
            detail: Some("Views are not automatically updatable in tarn.".into()),
            hint: Some(format!(
                "Write to the view's tables instead of {hint} the view."
            )),
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
