//! What a view's query depends on, and its text rewritten when a relation or a column it names
//! is renamed.
//!
//! PostgreSQL binds a view to its tables, views and columns by OID when it is created, so it
//! refuses to drop what a view uses (2BP01) and a rename leaves the view working. tarn keeps a
//! view as SQL text whose names resolve when it is used (`sql/views.rs`), so it finds the same
//! dependencies by walking the text's AST, parsed as written ([`parse_as_written`]):
//! - [`relations_used`]: the tables and views the query names, resolved along the view's own
//!   search path (a CTE of the name wins);
//! - [`columns_used`]: which columns of one table (or view) the query refers to, found by
//!   resolving every column reference through the query's scopes (FROM items of each SELECT,
//!   outer SELECTs for correlated subqueries, CTEs, derived tables with their output names,
//!   alias column lists, `*` and `t.*`), as PostgreSQL's parser binds them; a reference tarn
//!   cannot resolve for certain counts as a use (so a DROP COLUMN is refused rather than a view
//!   left broken);
//! - [`rewrite`]: the query with a renamed relation (`RENAME TO`) or column (`RENAME COLUMN`)
//!   written in: table references, qualifiers (`t.a`, `s.t.a`, `t.*`), column references
//!   resolving to the renamed column (a select item keeps its output name with `AS old`, a
//!   `*` that would change names is spelt out), and unqualified references the new name would
//!   capture (a relation `t2` found later on the search path gets its schema). Every reference
//!   the change could touch is resolved before and after the change and must reach the same
//!   column of the same FROM item; when that cannot be decided (a FROM item whose columns tarn
//!   cannot know, `USING`/`NATURAL` on the renamed column, a new name another reference would
//!   resolve to), the rewrite is refused with the reason ([`Refusal`]) rather than breaking the
//!   view.

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, JoinConstraint, JoinOperator,
    ObjectName, ObjectNamePart, OrderByKind, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, TableAlias, TableFactor, TableWithJoins, Visit,
    VisitMut, VisitorMut,
};

use super::SqlError;
use super::TarnDialect;
use super::command::fold_ident;
use super::views::{Relations, Resolved, cte_names, relation_name};
use crate::storage::views::ViewDef;

/// The query text of a view parsed as written: no rewrite (its text is printed back after a
/// [`rewrite`]).
pub fn parse_as_written(sql: &str) -> Result<Query, SqlError> {
    let parse = |dialect: &TarnDialect| -> Result<Query, SqlError> {
        super::parser_for(sql, dialect)?
            .parser
            .parse_query()
            .map(|q| *q)
            .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))
    };
    parse(&TarnDialect::default())
        .or_else(|first| parse(&TarnDialect::without_table_versioning()).map_err(|_| first))
}

/// A relation a view's query names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dependency {
    /// `(schema, table)`.
    Table(String, String),
    /// `(schema, view)`.
    View(String, String),
}

/// The tables and views `view`'s query names, resolved along its search path, each once, in
/// the order of their first mention.
pub fn relations_used(
    view: &ViewDef,
    relations: &dyn Relations,
) -> Result<Vec<Dependency>, SqlError> {
    let query = parse_as_written(&view.sql)?;
    let ctes = cte_names(&query);
    let mut used = Vec::new();
    let _ = datafusion::sql::sqlparser::ast::visit_relations(&query, |name| {
        if let Some((schema, relation)) = relation_name(name)
            && (schema.is_some() || !ctes.contains(&relation))
        {
            let dependency =
                match relations.resolve(schema.as_deref(), &relation, &view.search_path) {
                    Resolved::Table(db) => Some(Dependency::Table(db, relation)),
                    Resolved::View(v) => Some(Dependency::View(v.schema.clone(), v.name.clone())),
                    Resolved::Other => None,
                };
            if let Some(d) = dependency
                && !used.contains(&d)
            {
                used.push(d);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(used)
}

/// The relation whose uses are looked for or which is renamed.
#[derive(Debug, Clone)]
pub struct Target {
    pub schema: String,
    pub name: String,
    /// A view (else a table).
    pub is_view: bool,
    /// Its columns now, in order.
    pub columns: Vec<String>,
}

/// A rename of the target or of one of its columns.
#[derive(Debug, Clone)]
pub enum Change {
    /// `RENAME TO new` (the relation stays in its schema).
    Relation(String),
    /// `RENAME COLUMN old TO new`.
    Column { old: String, new: String },
}

/// Why a view's text cannot be rewritten for a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// The columns of the tables a view's query names, as they are now (a table missing here has
/// columns tarn does not know).
pub type TableColumns = HashMap<(String, String), Vec<String>>;

/// The target's columns `view`'s query refers to; `all` when a reference could not be
/// resolved for certain (every column then counts as used).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnUses {
    pub columns: BTreeSet<String>,
    pub all: bool,
}

impl ColumnUses {
    pub fn uses(&self, column: &str) -> bool {
        self.all || self.columns.contains(column)
    }
}

/// The columns of `target` `view`'s query uses (see the module docs).
pub fn columns_used(
    view: &ViewDef,
    relations: &dyn Relations,
    tables: &TableColumns,
    target: &Target,
) -> Result<ColumnUses, SqlError> {
    let mut query = parse_as_written(&view.sql)?;
    let mut walker = Walker::new(view, relations, tables, target, None);
    walker.walk_top(&mut query);
    let mut uses = walker.uses;
    if walker.refusal.is_some() {
        uses.all = true;
    }
    Ok(uses)
}

/// `view`'s query text with `change` to `target` written in: `Ok(None)` when the text needs no
/// change, `Err` when it cannot be rewritten safely.
pub fn rewrite(
    view: &ViewDef,
    relations: &dyn Relations,
    tables: &TableColumns,
    target: &Target,
    change: &Change,
) -> Result<Option<String>, Refusal> {
    let mut query = parse_as_written(&view.sql).map_err(|e| Refusal(e.to_string()))?;
    let before = query.clone();
    let mut walker = Walker::new(view, relations, tables, target, Some(change));
    walker.walk_top(&mut query);
    if let Some(refusal) = walker.refusal {
        return Err(refusal);
    }
    if query == before {
        return Ok(None);
    }
    super::views::unmark_tags(&mut query);
    let sql = query.to_string();
    // The text must read back as the query it was printed from.
    match parse_as_written(&sql) {
        Ok(again) if again.to_string() == sql => Ok(Some(sql)),
        _ => Err(Refusal(format!(
            "its rewritten text does not read back: {sql}"
        ))),
    }
}

/// An identifier as PostgreSQL's `quote_ident` would write `name`.
pub fn ident(name: &str) -> Ident {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !crate::query::is_reserved(name);
    if plain {
        Ident::new(name)
    } else {
        Ident::with_quote('"', name)
    }
}

/// One FROM item as the references of its SELECT see it, before and after the change.
#[derive(Debug, Clone)]
struct Item {
    id: usize,
    /// The name qualifiers use (an alias, or the relation's own name); `None` for an
    /// unaliased derived table or function.
    name: Option<String>,
    post_name: Option<String>,
    /// The schema of an unaliased relation (for `schema.table.column`).
    schema: Option<String>,
    /// Its columns' names; `None` when tarn cannot know them.
    columns: Option<Vec<String>>,
    post_columns: Option<Vec<String>>,
    /// A reference to the target.
    target: bool,
    /// Joined by USING or NATURAL (a `*` over it merges columns).
    merged: bool,
}

/// What a column reference resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Res {
    /// Column `col` (by position) of the target item `item`.
    Target { item: usize, col: usize },
    /// Column `name` of another item.
    Column { item: usize, name: String },
    /// An output column of the select (ORDER BY, GROUP BY).
    Alias(String),
    /// Nothing in the query (an outer name, a keyword-like function).
    Outside,
    /// tarn cannot tell.
    Unknown,
}

/// Which parts of a reference name what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `schema.table.column…`
    Schema,
    /// `table.column…`
    Table,
    /// `column…`
    Bare,
}

struct Walker<'a> {
    view: &'a ViewDef,
    relations: &'a dyn Relations,
    tables: &'a TableColumns,
    target: &'a Target,
    change: Option<&'a Change>,
    /// The FROM items of the enclosing SELECTs, innermost last.
    frames: Vec<Vec<Item>>,
    /// CTEs in scope (name, columns), innermost last.
    ctes: Vec<(String, Option<Vec<String>>)>,
    /// Output names a bare name may stand for (GROUP BY, HAVING, ORDER BY), innermost last.
    aliases: Vec<Vec<String>>,
    next_id: usize,
    uses: ColumnUses,
    refusal: Option<Refusal>,
}

impl<'a> Walker<'a> {
    fn new(
        view: &'a ViewDef,
        relations: &'a dyn Relations,
        tables: &'a TableColumns,
        target: &'a Target,
        change: Option<&'a Change>,
    ) -> Self {
        Self {
            view,
            relations,
            tables,
            target,
            change,
            frames: Vec::new(),
            ctes: Vec::new(),
            aliases: Vec::new(),
            next_id: 0,
            uses: ColumnUses::default(),
            refusal: None,
        }
    }

    fn refuse(&mut self, why: String) {
        if self.refusal.is_none() {
            self.refusal = Some(Refusal(why));
        }
    }

    /// The target's columns after the change.
    fn post_target_columns(&self) -> Vec<String> {
        match self.change {
            Some(Change::Column { old, new }) => self
                .target
                .columns
                .iter()
                .map(|c| if c == old { new.clone() } else { c.clone() })
                .collect(),
            _ => self.target.columns.clone(),
        }
    }

    fn walk_top(&mut self, query: &mut Query) {
        self.walk_query(query, true);
    }

    /// Walks `query`; answers its output column names (`None`: unknown).
    fn walk_query(&mut self, query: &mut Query, top: bool) -> Option<Vec<String>> {
        let ctes_before = self.ctes.len();
        if let Some(with) = &mut query.with {
            for cte in &mut with.cte_tables {
                let name = fold_ident(&cte.alias.name);
                let declared: Vec<String> = cte
                    .alias
                    .columns
                    .iter()
                    .map(|c| fold_ident(&c.name))
                    .collect();
                if with.recursive {
                    // Its own references inside see the declared names only.
                    let known = (!declared.is_empty()).then(|| declared.clone());
                    self.ctes.push((name.clone(), known));
                }
                let columns = self.walk_query(&mut cte.query, false);
                if with.recursive {
                    self.ctes.pop();
                }
                self.ctes
                    .push((name, apply_alias_columns(columns, &declared)));
            }
        }
        let top_select = top && matches!(query.body.as_ref(), SetExpr::Select(_));
        let (outputs, frame) = self.walk_set_expr(&mut query.body, top_select);
        // ORDER BY: output names first, then the select's own columns.
        if let Some(order_by) = &mut query.order_by
            && let OrderByKind::Expressions(exprs) = &mut order_by.kind
        {
            let pushed = frame.is_some();
            if let Some(frame) = frame {
                self.frames.push(frame);
            }
            self.aliases.push(outputs.clone().unwrap_or_default());
            for e in exprs {
                let output = match &e.expr {
                    Expr::Identifier(id) => outputs
                        .as_ref()
                        .is_some_and(|o| o.contains(&fold_ident(id))),
                    _ => false,
                };
                if !output {
                    self.walk_expr(&mut e.expr);
                }
            }
            self.aliases.pop();
            if pushed {
                self.frames.pop();
            }
        }
        if let Some(limit) = &mut query.limit_clause {
            self.walk_node(limit);
        }
        if let Some(fetch) = &mut query.fetch {
            self.walk_node(fetch);
        }
        self.ctes.truncate(ctes_before);
        outputs
    }

    /// Walks a query body; answers its output names and, for a plain SELECT, its FROM items.
    fn walk_set_expr(
        &mut self,
        body: &mut SetExpr,
        top_select: bool,
    ) -> (Option<Vec<String>>, Option<Vec<Item>>) {
        match body {
            SetExpr::Select(select) => {
                let (outputs, frame) = self.walk_select(select, top_select);
                (outputs, Some(frame))
            }
            SetExpr::Query(q) => (self.walk_query(q, false), None),
            SetExpr::SetOperation { left, right, .. } => {
                let (outputs, _) = self.walk_set_expr(left, false);
                self.walk_set_expr(right, false);
                (outputs, None)
            }
            SetExpr::Values(values) => {
                let width = values.rows.first().map_or(0, |r| r.len());
                for row in &mut values.rows {
                    for e in row.iter_mut() {
                        self.walk_expr(e);
                    }
                }
                (
                    Some((1..=width).map(|i| format!("column{i}")).collect()),
                    None,
                )
            }
            other => {
                if self.names_target(other) {
                    self.refuse("a statement tarn cannot analyse names it".into());
                }
                (None, None)
            }
        }
    }

    fn walk_select(
        &mut self,
        select: &mut Select,
        top_select: bool,
    ) -> (Option<Vec<String>>, Vec<Item>) {
        let frame = self.walk_from(&mut select.from);
        self.frames.push(frame);
        let mut outputs: Option<Vec<String>> = Some(Vec::new());
        let mut projection = std::mem::take(&mut select.projection);
        let mut items = Vec::with_capacity(projection.len());
        for item in projection.drain(..) {
            match item {
                SelectItem::UnnamedExpr(mut e) => {
                    let name = super::names::output_name(&e);
                    self.walk_expr(&mut e);
                    if let Some(o) = &mut outputs {
                        o.push(name.clone());
                    }
                    if self.change.is_some() && super::names::output_name(&e) != name {
                        items.push(SelectItem::ExprWithAlias {
                            expr: e,
                            alias: ident(&name),
                        });
                    } else {
                        items.push(SelectItem::UnnamedExpr(e));
                    }
                }
                SelectItem::ExprWithAlias { mut expr, alias } => {
                    self.walk_expr(&mut expr);
                    if let Some(o) = &mut outputs {
                        o.push(fold_ident(&alias));
                    }
                    items.push(SelectItem::ExprWithAlias { expr, alias });
                }
                SelectItem::Wildcard(options) => {
                    let frame = self.frames.last().cloned().unwrap_or_default();
                    let covered: Vec<usize> = (0..frame.len()).collect();
                    match self.star(&frame, &covered, &options, top_select) {
                        Star::Keep(names) => {
                            extend(&mut outputs, names);
                            items.push(SelectItem::Wildcard(options));
                        }
                        Star::Expand(list, names) => {
                            extend(&mut outputs, Some(names));
                            items.extend(list);
                        }
                    }
                }
                SelectItem::QualifiedWildcard(kind, options) => {
                    let SelectItemQualifiedWildcardKind::ObjectName(mut name) = kind else {
                        outputs = None;
                        items.push(SelectItem::QualifiedWildcard(kind, options));
                        continue;
                    };
                    let frame = self.frames.last().cloned().unwrap_or_default();
                    match self.qualified_star_item(&mut name) {
                        Some(at) => {
                            let covered: Vec<usize> = frame
                                .iter()
                                .enumerate()
                                .filter(|(_, i)| i.id == at)
                                .map(|(n, _)| n)
                                .collect();
                            if covered.is_empty() {
                                // An item of an outer SELECT (`outer.*` in a subquery).
                                outputs = None;
                                items.push(SelectItem::QualifiedWildcard(
                                    SelectItemQualifiedWildcardKind::ObjectName(name),
                                    options,
                                ));
                                continue;
                            }
                            match self.star(&frame, &covered, &options, top_select) {
                                Star::Keep(names) => {
                                    extend(&mut outputs, names);
                                    items.push(SelectItem::QualifiedWildcard(
                                        SelectItemQualifiedWildcardKind::ObjectName(name),
                                        options,
                                    ));
                                }
                                Star::Expand(list, names) => {
                                    extend(&mut outputs, Some(names));
                                    items.extend(list);
                                }
                            }
                        }
                        None => {
                            outputs = None;
                            items.push(SelectItem::QualifiedWildcard(
                                SelectItemQualifiedWildcardKind::ObjectName(name),
                                options,
                            ));
                        }
                    }
                }
                other => {
                    outputs = None;
                    let mut other = other;
                    self.walk_node(&mut other);
                    items.push(other);
                }
            }
        }
        select.projection = items;
        // Everything else of the SELECT (WHERE, GROUP BY, HAVING, windows, …) sees its FROM
        // items, and output names where PostgreSQL allows them.
        let from = std::mem::take(&mut select.from);
        let projection = std::mem::take(&mut select.projection);
        self.aliases.push(outputs.clone().unwrap_or_default());
        self.walk_node(select);
        self.aliases.pop();
        select.from = from;
        select.projection = projection;
        let frame = self.frames.pop().unwrap_or_default();
        (outputs, frame)
    }

    /// A `*` (or `t.*`) over the items of `frame` at `covered`.
    fn star(
        &mut self,
        frame: &[Item],
        covered: &[usize],
        options: &datafusion::sql::sqlparser::ast::WildcardAdditionalOptions,
        top_select: bool,
    ) -> Star {
        let plain = options.opt_ilike.is_none()
            && options.opt_exclude.is_none()
            && options.opt_except.is_none()
            && options.opt_replace.is_none()
            && options.opt_rename.is_none()
            && options.opt_alias.is_none();
        let merged = covered.iter().any(|&n| frame[n].merged);
        let names: Option<Vec<String>> = if merged || !plain {
            None
        } else {
            covered
                .iter()
                .map(|&n| frame[n].columns.clone())
                .collect::<Option<Vec<_>>>()
                .map(|v| v.concat())
        };
        let targets: Vec<usize> = covered
            .iter()
            .copied()
            .filter(|&n| frame[n].target)
            .collect();
        if targets.is_empty() {
            return Star::Keep(names);
        }
        // The columns a `*` over the target uses: at the top, those the view shows.
        for &n in &targets {
            for (col, name) in frame[n].columns.iter().flatten().enumerate() {
                let shown = !top_select
                    || !plain
                    || self
                        .view
                        .query_columns
                        .iter()
                        .any(|q| super::names::visible_name(q) == name);
                if shown {
                    self.uses.columns.insert(self.target.columns[col].clone());
                }
            }
        }
        let renamed = match self.change {
            Some(Change::Column { old, .. }) => targets
                .iter()
                .any(|&n| frame[n].columns.iter().flatten().any(|c| c == old)),
            _ => false,
        };
        if !renamed {
            return Star::Keep(names);
        }
        // The renamed column would come out under its new name: spell the `*` out.
        let Some(names) = names else {
            self.refuse(
                "a * over the renamed column and relations whose columns tarn cannot list \
                 (or joined with USING/NATURAL)"
                    .into(),
            );
            return Star::Keep(None);
        };
        let mut list = Vec::new();
        for &n in covered {
            let item = &frame[n];
            let Some(qualifier) = item.post_name.clone() else {
                self.refuse("a * over a derived table without a name".into());
                return Star::Keep(Some(names));
            };
            let pre = item.columns.clone().unwrap_or_default();
            let post = item.post_columns.clone().unwrap_or_default();
            for (before, after) in pre.iter().zip(&post) {
                let expr = Expr::CompoundIdentifier(vec![ident(&qualifier), ident(after)]);
                list.push(if before == after {
                    SelectItem::UnnamedExpr(expr)
                } else {
                    SelectItem::ExprWithAlias {
                        expr,
                        alias: ident(before),
                    }
                });
            }
        }
        Star::Expand(list, names)
    }

    /// The item `t.*` names (its qualifier rewritten for a renamed relation).
    fn qualified_star_item(&mut self, name: &mut ObjectName) -> Option<usize> {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| p.as_ident().map(fold_ident))
            .collect::<Option<_>>()?;
        let (item, form) = match parts.as_slice() {
            [s, t] => (self.find_item(Some(s), t, false)?, Form::Schema),
            [t] => (self.find_item(None, t, false)?, Form::Table),
            _ => return None,
        };
        let item = item.ok()?;
        if let Some(Change::Relation(new)) = self.change
            && self
                .item(item)
                .is_some_and(|i| i.target && i.schema.is_some())
        {
            let at = if form == Form::Schema { 1 } else { 0 };
            name.0[at] = ObjectNamePart::Identifier(ident(new));
        }
        Some(item)
    }

    fn item(&self, id: usize) -> Option<&Item> {
        self.frames.iter().flatten().find(|i| i.id == id)
    }

    /// The FROM items of one SELECT.
    fn walk_from(&mut self, from: &mut [TableWithJoins]) -> Vec<Item> {
        let mut all: Vec<Item> = Vec::new();
        for twj in from {
            let items = self.walk_join_tree(twj, &all);
            all.extend(items);
        }
        // A renamed target must not take the name of another item beside it.
        for item in all.iter().filter(|i| i.target) {
            if all
                .iter()
                .any(|o| o.id != item.id && o.post_name.is_some() && o.post_name == item.post_name)
            {
                self.refuse(format!(
                    "two relations named \"{}\" in one FROM clause",
                    item.post_name.clone().unwrap_or_default()
                ));
            }
        }
        all
    }

    /// One FROM entry with its joins; `before`: the entries before it (for LATERAL).
    fn walk_join_tree(&mut self, twj: &mut TableWithJoins, before: &[Item]) -> Vec<Item> {
        let mut seen: Vec<Item> = before.to_vec();
        let mut items = self.walk_factor(&mut twj.relation, &seen);
        seen.extend(items.clone());
        for join in &mut twj.joins {
            let right = self.walk_factor(&mut join.relation, &seen);
            let constraint = match &mut join.join_operator {
                JoinOperator::Join(c)
                | JoinOperator::Inner(c)
                | JoinOperator::Left(c)
                | JoinOperator::LeftOuter(c)
                | JoinOperator::Right(c)
                | JoinOperator::RightOuter(c)
                | JoinOperator::FullOuter(c)
                | JoinOperator::CrossJoin(c)
                | JoinOperator::Semi(c)
                | JoinOperator::LeftSemi(c)
                | JoinOperator::RightSemi(c)
                | JoinOperator::Anti(c)
                | JoinOperator::LeftAnti(c)
                | JoinOperator::RightAnti(c)
                | JoinOperator::StraightJoin(c) => Some(c),
                _ => None,
            };
            let mut joined: Vec<Item> = items.iter().chain(&right).cloned().collect();
            match constraint {
                Some(JoinConstraint::On(e)) => {
                    self.frames.push(joined.clone());
                    self.walk_expr(e);
                    self.frames.pop();
                }
                Some(JoinConstraint::Using(names)) => {
                    let names: Vec<String> = names
                        .iter()
                        .filter_map(|n| n.0.last().and_then(|p| p.as_ident()).map(fold_ident))
                        .collect();
                    self.join_columns(&joined, &names);
                    for i in &mut joined {
                        i.merged = true;
                    }
                }
                Some(JoinConstraint::Natural) => {
                    let all: Vec<String> = self.target.columns.clone();
                    let post = self.post_target_columns();
                    let names: Vec<String> = all.into_iter().chain(post).collect();
                    self.join_columns(&joined, &names);
                    for i in &mut joined {
                        i.merged = true;
                    }
                }
                Some(JoinConstraint::None) => {}
                None => {
                    let mut op = join.join_operator.clone();
                    self.walk_node(&mut op);
                    join.join_operator = op;
                    if joined.iter().any(|i| i.target) {
                        self.refuse("a join form tarn cannot analyse".into());
                    }
                }
            }
            seen.extend(right);
            items = joined;
        }
        items
    }

    /// USING / NATURAL join columns `names` over `joined`: each a use of the target's column,
    /// and a rename of it refused (the other side keeps its name).
    fn join_columns(&mut self, joined: &[Item], names: &[String]) {
        let Some(target) = joined.iter().find(|i| i.target) else {
            return;
        };
        let columns = target.columns.clone().unwrap_or_default();
        for name in names {
            if let Some(col) = columns.iter().position(|c| c == name) {
                self.uses.columns.insert(self.target.columns[col].clone());
                if let Some(Change::Column { old, .. }) = self.change
                    && self.target.columns[col] == *old
                {
                    self.refuse(format!(
                        "column \"{old}\" is joined with USING or NATURAL JOIN"
                    ));
                }
            }
        }
        if let Some(Change::Column { new, .. }) = self.change
            && names.contains(new)
        {
            self.refuse(format!("a USING or NATURAL JOIN would take \"{new}\""));
        }
    }

    /// The items one FROM entry adds; `seen`: the items before it in the FROM clause.
    fn walk_factor(&mut self, factor: &mut TableFactor, seen: &[Item]) -> Vec<Item> {
        let id = self.next_id;
        self.next_id += 1;
        let alias_name = |alias: &Option<TableAlias>| alias.as_ref().map(|a| fold_ident(&a.name));
        let alias_columns = |alias: &Option<TableAlias>| -> Vec<String> {
            alias
                .as_ref()
                .map(|a| a.columns.iter().map(|c| fold_ident(&c.name)).collect())
                .unwrap_or_default()
        };
        match factor {
            TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } => {
                let Some((schema, relation)) = relation_name(name) else {
                    return vec![unknown(id, alias_name(alias))];
                };
                let declared = alias_columns(alias);
                let own_name = alias_name(alias).unwrap_or_else(|| relation.clone());
                if schema.is_none()
                    && let Some((_, columns)) = self.ctes.iter().rev().find(|(n, _)| n == &relation)
                {
                    let columns = apply_alias_columns(columns.clone(), &declared);
                    return vec![Item {
                        id,
                        name: Some(own_name.clone()),
                        post_name: Some(own_name),
                        schema: None,
                        columns: columns.clone(),
                        post_columns: columns,
                        target: false,
                        merged: false,
                    }];
                }
                let (db, columns, is_view) = match self.relations.resolve(
                    schema.as_deref(),
                    &relation,
                    &self.view.search_path,
                ) {
                    Resolved::Table(db) => {
                        let columns = self.tables.get(&(db.clone(), relation.clone())).cloned();
                        (Some(db), columns, false)
                    }
                    Resolved::View(v) => (
                        Some(v.schema.clone()),
                        Some(v.columns.iter().map(|c| c.name.clone()).collect()),
                        true,
                    ),
                    Resolved::Other => (None, None, false),
                };
                let target = db.as_deref() == Some(self.target.schema.as_str())
                    && relation == self.target.name
                    && is_view == self.target.is_view;
                if let Some(Change::Relation(new)) = self.change {
                    if target {
                        self.rename_relation(name, schema.is_some(), new);
                    } else if schema.is_none() && relation == *new {
                        // `new` found later on the path would now find the renamed one.
                        self.keep_binding(name, db.as_deref(), new);
                    }
                }
                let (columns, post_columns) = if target {
                    let post = apply_alias_columns(Some(self.post_target_columns()), &declared);
                    (
                        apply_alias_columns(Some(self.target.columns.clone()), &declared),
                        post,
                    )
                } else {
                    let c = apply_alias_columns(columns, &declared);
                    (c.clone(), c)
                };
                let post_name = match (self.change, alias.is_none() && target) {
                    (Some(Change::Relation(new)), true) => Some(new.clone()),
                    _ => Some(own_name.clone()),
                };
                vec![Item {
                    id,
                    name: Some(own_name),
                    post_name,
                    schema: if alias.is_none() { db } else { None },
                    columns,
                    post_columns,
                    target,
                    merged: false,
                }]
            }
            TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                let pushed = *lateral;
                if pushed {
                    self.frames.push(seen.to_vec());
                }
                let columns = self.walk_query(subquery, false);
                if pushed {
                    self.frames.pop();
                }
                let columns = apply_alias_columns(columns, &alias_columns(alias));
                vec![Item {
                    id,
                    name: alias_name(alias),
                    post_name: alias_name(alias),
                    schema: None,
                    columns: columns.clone(),
                    post_columns: columns,
                    target: false,
                    merged: false,
                }]
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                let items = self.walk_join_tree(table_with_joins, seen);
                match alias {
                    None => items,
                    Some(_) => {
                        if items.iter().any(|i| i.target) {
                            self.refuse("a parenthesized join with an alias".into());
                        }
                        vec![unknown(id, alias_name(alias))]
                    }
                }
            }
            other => {
                // Table functions, UNNEST, …: their arguments see the items before them.
                let alias = match other {
                    TableFactor::Table { alias, name, .. } => alias_name(alias)
                        .or_else(|| name.0.last().and_then(|p| p.as_ident()).map(fold_ident)),
                    TableFactor::UNNEST { alias, .. }
                    | TableFactor::Function { alias, .. }
                    | TableFactor::TableFunction { alias, .. } => alias_name(alias),
                    _ => None,
                };
                if self.names_target(other) {
                    self.refuse("a FROM item tarn cannot analyse names it".into());
                }
                self.frames.push(seen.to_vec());
                self.walk_node(other);
                self.frames.pop();
                vec![unknown(id, alias)]
            }
        }
    }

    /// `RENAME TO new` in a reference to the target.
    fn rename_relation(&mut self, name: &mut ObjectName, qualified: bool, new: &str) {
        let Some(last) = name.0.last_mut() else {
            return;
        };
        *last = ObjectNamePart::Identifier(ident(new));
        if qualified {
            return;
        }
        // Unqualified: the new name must still find the target along the view's path.
        let path = self.view.search_path.clone();
        for db in &path {
            if db == &self.target.schema {
                return;
            }
            if !matches!(
                self.relations.resolve(Some(db), new, &path),
                Resolved::Other
            ) {
                name.0
                    .insert(0, ObjectNamePart::Identifier(ident(&self.target.schema)));
                return;
            }
        }
        name.0
            .insert(0, ObjectNamePart::Identifier(ident(&self.target.schema)));
    }

    /// An unqualified reference to `new` (in schema `db`) that the renamed target would now
    /// take: it gets its schema.
    fn keep_binding(&mut self, name: &mut ObjectName, db: Option<&str>, new: &str) {
        let path = &self.view.search_path;
        let target_at = path.iter().position(|p| p == &self.target.schema);
        let found_at = db.and_then(|db| path.iter().position(|p| p == db));
        match (target_at, found_at, db) {
            (Some(t), Some(f), Some(db)) if t < f => {
                name.0.insert(0, ObjectNamePart::Identifier(ident(db)));
            }
            (Some(_), None, None) => self.refuse(format!(
                "its name \"{new}\" stands for a relation tarn does not know"
            )),
            _ => {}
        }
    }

    /// Whether `node` names the target anywhere (a relation resolving to it).
    fn names_target<V: Visit>(&self, node: &V) -> bool {
        let mut found = false;
        let _ = datafusion::sql::sqlparser::ast::visit_relations(node, |name| {
            if let Some((schema, relation)) = relation_name(name)
                && relation == self.target.name
            {
                let resolved =
                    self.relations
                        .resolve(schema.as_deref(), &relation, &self.view.search_path);
                let db = match resolved {
                    Resolved::Table(db) if !self.target.is_view => Some(db),
                    Resolved::View(v) if self.target.is_view => Some(v.schema.clone()),
                    _ => None,
                };
                if db.as_deref() == Some(self.target.schema.as_str()) {
                    found = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        found
    }

    /// Walks the expressions of `node` with the scopes as they are (nested queries get their
    /// own scopes).
    fn walk_node<V: VisitMut>(&mut self, node: &mut V) {
        let mut visitor = Exprs {
            walker: self,
            skip: 0,
        };
        let _ = node.visit(&mut visitor);
    }

    fn walk_expr(&mut self, expr: &mut Expr) {
        self.walk_node(expr);
    }

    /// A column reference (or `t.*` as a function argument when `star`).
    fn reference(&mut self, parts: &mut Vec<Ident>, star: bool) {
        if !self.frames.iter().flatten().any(|i| i.target) {
            return;
        }
        let names: Vec<String> = parts.iter().map(fold_ident).collect();
        if star {
            let Some((Ok(item), form)) = (match names.as_slice() {
                [s, t] => self.find_item(Some(s), t, false).map(|i| (i, Form::Schema)),
                [t] => self.find_item(None, t, false).map(|i| (i, Form::Table)),
                _ => None,
            }) else {
                return;
            };
            let Some(found) = self.item(item).cloned() else {
                return;
            };
            if !found.target {
                return;
            }
            self.uses.all = true;
            match self.change {
                Some(Change::Relation(new)) if found.schema.is_some() => {
                    let at = if form == Form::Schema { 1 } else { 0 };
                    parts[at] = ident(new);
                }
                Some(Change::Column { .. }) => {
                    self.refuse("a whole row of the table is used (t.* in a function)".into())
                }
                _ => {}
            }
            return;
        }
        let (before, form) = self.resolve(&names, false);
        match &before {
            Res::Target { col, .. } => {
                self.uses.columns.insert(self.target.columns[*col].clone());
            }
            Res::Unknown => {
                for n in &names {
                    if self.target.columns.contains(n) {
                        self.uses.columns.insert(n.clone());
                    }
                }
            }
            _ => {}
        }
        let Some(change) = self.change else {
            return;
        };
        let relevant = match change {
            Change::Relation(new) => names.iter().any(|n| n == &self.target.name || n == new),
            Change::Column { old, new } => names.iter().any(|n| n == old || n == new),
        };
        if !relevant {
            return;
        }
        let mut after_names = names.clone();
        let mut after_parts = parts.clone();
        if let Res::Target { item, col } = before {
            let found = self.item(item).cloned();
            let column_at = match form {
                Form::Schema => 2,
                Form::Table => 1,
                Form::Bare => 0,
            };
            match change {
                Change::Relation(new) => {
                    if form != Form::Bare && found.as_ref().is_some_and(|i| i.schema.is_some()) {
                        let at = column_at - 1;
                        after_names[at] = new.clone();
                        after_parts[at] = ident(new);
                    }
                }
                Change::Column { old, new } => {
                    let visible = found
                        .as_ref()
                        .and_then(|i| i.columns.as_ref())
                        .and_then(|c| c.get(col).cloned());
                    if self.target.columns[col] == *old && visible.as_deref() == Some(old) {
                        after_names[column_at] = new.clone();
                        after_parts[column_at] = ident(new);
                    }
                }
            }
        }
        let (after, _) = self.resolve(&after_names, true);
        if before != after || before == Res::Unknown {
            let shown: Vec<String> = names.clone();
            self.refuse(format!(
                "tarn cannot tell what the reference \"{}\" would stand for afterwards",
                shown.join(".")
            ));
            return;
        }
        *parts = after_parts;
    }

    /// The item a qualifier names: `Ok(id)`, `Err(())` when ambiguous; `None` when none does.
    fn find_item(
        &self,
        schema: Option<&String>,
        name: &str,
        post: bool,
    ) -> Option<Result<usize, ()>> {
        for frame in self.frames.iter().rev() {
            let matches: Vec<&Item> = frame
                .iter()
                .filter(|i| {
                    let n = if post { &i.post_name } else { &i.name };
                    n.as_deref() == Some(name)
                        && schema.is_none_or(|s| i.schema.as_ref() == Some(s))
                })
                .collect();
            match matches.as_slice() {
                [] => continue,
                [one] => return Some(Ok(one.id)),
                _ => return Some(Err(())),
            }
        }
        None
    }

    /// What `names` stands for, before the change or after it (`post`).
    fn resolve(&self, names: &[String], post: bool) -> (Res, Form) {
        if names.len() >= 3
            && let Some(found) = self.find_item(Some(&names[0]), &names[1], post)
        {
            return (self.column_of(found, &names[2], post), Form::Schema);
        }
        if names.len() >= 2
            && let Some(found) = self.find_item(None, &names[0], post)
        {
            return (self.column_of(found, &names[1], post), Form::Table);
        }
        (self.bare(&names[0], post), Form::Bare)
    }

    fn column_of(&self, found: Result<usize, ()>, column: &str, post: bool) -> Res {
        let Ok(id) = found else {
            return Res::Unknown;
        };
        let Some(item) = self.item(id) else {
            return Res::Unknown;
        };
        let columns = if post {
            &item.post_columns
        } else {
            &item.columns
        };
        match columns {
            Some(columns) => {
                let at: Vec<usize> = columns
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| *c == column)
                    .map(|(n, _)| n)
                    .collect();
                match at.as_slice() {
                    [col] if item.target => Res::Target {
                        item: id,
                        col: *col,
                    },
                    [_] => Res::Column {
                        item: id,
                        name: column.to_owned(),
                    },
                    _ => Res::Unknown,
                }
            }
            None if item.target => Res::Unknown,
            None => Res::Column {
                item: id,
                name: column.to_owned(),
            },
        }
    }

    /// An unqualified column name, innermost SELECT first.
    fn bare(&self, name: &str, post: bool) -> Res {
        let depth = self.frames.len();
        for (level, frame) in self.frames.iter().enumerate().rev() {
            let mut definite = Vec::new();
            let mut unknown = false;
            for item in frame {
                let columns = if post {
                    &item.post_columns
                } else {
                    &item.columns
                };
                match columns {
                    Some(c) if c.iter().any(|c| c == name) => definite.push(item.id),
                    Some(_) => {}
                    None => unknown = true,
                }
            }
            let innermost = level + 1 == depth;
            let alias = innermost
                && self
                    .aliases
                    .last()
                    .is_some_and(|a| a.iter().any(|a| a == name));
            match (definite.as_slice(), unknown) {
                ([id], false) => return self.column_of(Ok(*id), name, post),
                ([], false) => {
                    if alias {
                        return Res::Alias(name.to_owned());
                    }
                }
                _ => return Res::Unknown,
            }
        }
        Res::Outside
    }
}

/// How a `*` comes out.
enum Star {
    /// As it is, with these output names (if known).
    Keep(Option<Vec<String>>),
    /// Spelt out as these items, with these output names.
    Expand(Vec<SelectItem>, Vec<String>),
}

fn extend(outputs: &mut Option<Vec<String>>, names: Option<Vec<String>>) {
    match (outputs.as_mut(), names) {
        (Some(o), Some(n)) => o.extend(n),
        _ => *outputs = None,
    }
}

fn unknown(id: usize, name: Option<String>) -> Item {
    Item {
        id,
        name: name.clone(),
        post_name: name,
        schema: None,
        columns: None,
        post_columns: None,
        target: false,
        merged: false,
    }
}

/// Columns renamed by an alias column list (`AS x(a, b)`: the first ones).
fn apply_alias_columns(columns: Option<Vec<String>>, declared: &[String]) -> Option<Vec<String>> {
    if declared.is_empty() {
        return columns;
    }
    match columns {
        Some(mut c) => {
            for (n, d) in declared.iter().enumerate() {
                if let Some(slot) = c.get_mut(n) {
                    *slot = d.clone();
                }
            }
            Some(c)
        }
        None => None,
    }
}

/// The expression walk: references resolved, nested queries walked with their own scopes.
struct Exprs<'w, 'a> {
    walker: &'w mut Walker<'a>,
    /// Inside a nested query already walked.
    skip: usize,
}

impl VisitorMut for Exprs<'_, '_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if self.skip == 0 {
            self.walker.walk_query(query, false);
        }
        self.skip += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.skip -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.skip > 0 {
            return ControlFlow::Continue(());
        }
        match expr {
            Expr::Identifier(id) => {
                let mut parts = vec![id.clone()];
                self.walker.reference(&mut parts, false);
                if let [one] = parts.as_slice() {
                    *id = one.clone();
                } else {
                    *expr = Expr::CompoundIdentifier(parts);
                }
            }
            Expr::CompoundIdentifier(parts) => self.walker.reference(parts, false),
            Expr::QualifiedWildcard(name, _) => star_argument(self.walker, name),
            Expr::Function(f) => {
                if let FunctionArguments::List(list) = &mut f.args {
                    for arg in &mut list.args {
                        let e = match arg {
                            FunctionArg::Unnamed(e)
                            | FunctionArg::Named { arg: e, .. }
                            | FunctionArg::ExprNamed { arg: e, .. } => e,
                        };
                        if let FunctionArgExpr::QualifiedWildcard(name) = e {
                            star_argument(self.walker, name);
                        }
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// `t.*` as an expression (a whole row).
fn star_argument(walker: &mut Walker<'_>, name: &mut ObjectName) {
    let Some(mut parts) = name
        .0
        .iter()
        .map(|p| p.as_ident().cloned())
        .collect::<Option<Vec<Ident>>>()
    else {
        return;
    };
    walker.reference(&mut parts, true);
    name.0 = parts.into_iter().map(ObjectNamePart::Identifier).collect();
}

#[cfg(test)]
#[path = "view_deps_tests.rs"]
mod tests;
