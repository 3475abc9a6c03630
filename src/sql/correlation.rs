//! Correlated scalar subqueries reshaped so DataFusion can decorrelate them.
//!
//! DataFusion turns a correlated scalar subquery into a join only when it aggregates and every
//! correlated predicate is `inner column = outer expression`; it refuses the rest ("does not
//! support ScalarSubquery"). PostgreSQL clients send other shapes (psql's `\d` correlates by
//! `a.attcollation <> t.typcollation` and by a bare `a.atthasdef`), so, on the AST:
//!
//! - `(SELECT x FROM … ORDER BY y LIMIT 1)` becomes `(SELECT first_value(x ORDER BY y) FROM …)`:
//!   the same value (NULL for no row), as an aggregate ([`limit_one_to_first_value`]);
//! - in a subquery whose value is NULL for no row (`pg_single_value`, `first_value`), outer
//!   references in other predicates and in the select item are replaced by the inner column an
//!   equality predicate equates them with, and predicates on the outer row alone move out of
//!   it: `(SELECT … WHERE p(outer) AND q)` is `CASE WHEN p(outer) THEN (SELECT … WHERE q) END`
//!   ([`decorrelate`]);
//! - a function in the select item whose arguments read the outer row is split: its outer
//!   arguments stay outside, each inner one becomes a subquery of its own
//!   ([`split_outer_arguments`]).
//!
//! Columns are told apart by their qualifier: a name of the subquery's FROM list is inner, any
//! other is outer. A predicate with an unqualified column or a nested query is left alone.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CaseWhen, Expr, FunctionArgumentClause, FunctionArguments, Ident, LimitClause,
    OrderByKind, Query, SelectItem, SetExpr, TableFactor, Value, Visit, VisitMut, Visitor,
    VisitorMut, helpers::attached_token::AttachedToken,
};

/// Aggregates whose value over no rows is NULL, so a subquery computing one may move a
/// predicate on the outer row into a `CASE` around it.
const NULL_WHEN_EMPTY: &[&str] = &["pg_single_value", "first_value"];

/// `(SELECT x FROM … [ORDER BY …] LIMIT 1)` → `(SELECT first_value(x [ORDER BY …]) FROM …)`.
/// Returns whether the query was rewritten. `aggregates` tells whether an expression already
/// aggregates (then the query is left alone).
pub(super) fn limit_one_to_first_value(
    query: &mut Query,
    aggregates: impl Fn(&Expr) -> bool,
) -> bool {
    first_values(query, aggregates, false)
}

/// [`limit_one_to_first_value`] for a LATERAL subquery's row: every column becomes a
/// `first_value`, under the name PostgreSQL gives it (`o.id` is `id`).
pub(super) fn limit_one_row_to_first_values(
    query: &mut Query,
    aggregates: impl Fn(&Expr) -> bool,
) -> bool {
    first_values(query, aggregates, true)
}

fn first_values(query: &mut Query, aggregates: impl Fn(&Expr) -> bool, many: bool) -> bool {
    let Some(LimitClause::LimitOffset {
        limit: Some(limit),
        offset: None,
        limit_by,
    }) = &query.limit_clause
    else {
        return false;
    };
    if !limit_by.is_empty()
        || !is_one(limit)
        || query.with.is_some()
        || query.fetch.is_some()
        || !query.locks.is_empty()
    {
        return false;
    }
    let order = match &query.order_by {
        None => vec![],
        Some(order_by) => match &order_by.kind {
            OrderByKind::Expressions(exprs) if order_by.interpolate.is_none() => exprs.clone(),
            _ => return false,
        },
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return false;
    };
    if select.from.is_empty()
        || select.having.is_some()
        || select.distinct.is_some()
        || select.projection.is_empty()
        || (!many && select.projection.len() != 1)
        || !matches!(&select.group_by,
            datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, _) if e.is_empty())
    {
        return false;
    }
    let mut explicit = vec![];
    for item in &select.projection {
        let expr = match item {
            SelectItem::UnnamedExpr(e) => e,
            SelectItem::ExprWithAlias { expr, alias } => {
                explicit.push(alias.clone());
                expr
            }
            _ => return false,
        };
        if aggregates(expr) {
            return false;
        }
    }
    // `ORDER BY 1` or `ORDER BY <output alias>` mean a select item, which an aggregate's own
    // ORDER BY would not see.
    let refers_to_output = |e: &Expr| match e {
        Expr::Value(v) => matches!(v.value, Value::Number(..)),
        Expr::Identifier(id) => explicit.iter().any(|a| same(a, id)),
        _ => false,
    };
    if order.iter().any(|o| refers_to_output(&o.expr)) {
        return false;
    }
    let first_value = |item: &Expr| {
        let mut call = super::ast::call("first_value", vec![item.clone()]);
        if !order.is_empty()
            && let Expr::Function(f) = &mut call
            && let FunctionArguments::List(list) = &mut f.args
        {
            list.clauses
                .push(FunctionArgumentClause::OrderBy(order.clone()));
        }
        call
    };
    let mut projection = vec![];
    for item in &select.projection {
        projection.push(match item {
            SelectItem::ExprWithAlias { expr, alias } => SelectItem::ExprWithAlias {
                expr: first_value(expr),
                alias: alias.clone(),
            },
            SelectItem::UnnamedExpr(expr) if !many => SelectItem::UnnamedExpr(first_value(expr)),
            // A row's columns keep the names PostgreSQL gives them.
            SelectItem::UnnamedExpr(expr) => {
                let name = match expr {
                    Expr::Identifier(id) => id.clone(),
                    Expr::CompoundIdentifier(parts) => parts[parts.len() - 1].clone(),
                    _ => return false,
                };
                SelectItem::ExprWithAlias {
                    expr: first_value(expr),
                    alias: name,
                }
            }
            _ => return false,
        });
    }
    select.projection = projection;
    query.order_by = None;
    query.limit_clause = None;
    true
}

fn is_one(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n == "1"))
}

/// Reshapes the scalar subquery `expr` (an [`Expr::Subquery`] whose select item is one of
/// [`NULL_WHEN_EMPTY`]) as described in the module doc; anything else is left alone.
pub(super) fn decorrelate(expr: &mut Expr) {
    let Expr::Subquery(query) = expr else {
        return;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    let Some(inner) = inner_names(&select.from) else {
        return;
    };
    let null_when_empty = matches!(
        select.projection.as_slice(),
        [SelectItem::UnnamedExpr(Expr::Function(f)) | SelectItem::ExprWithAlias { expr: Expr::Function(f), .. }]
            if f.name.0.len() == 1
                && f.name.0[0].as_ident().is_some_and(|i| {
                    NULL_WHEN_EMPTY.contains(&i.value.to_ascii_lowercase().as_str())
                })
    );
    if !null_when_empty {
        return;
    }
    let Some(selection) = select.selection.take() else {
        return;
    };
    let mut conjuncts = vec![];
    split_and(selection, &mut conjuncts);
    let equal: Vec<(Expr, Expr)> = conjuncts
        .iter()
        .filter_map(|c| equated(c, &inner))
        .collect();
    let mut hoisted = vec![];
    let mut kept = vec![];
    for conjunct in conjuncts {
        let refs = Refs::of(&conjunct, &inner);
        if refs.unknown || !refs.outer {
            kept.push(conjunct);
        } else if !refs.inner {
            hoisted.push(conjunct);
        } else if equated(&conjunct, &inner).is_some() {
            kept.push(conjunct);
        } else {
            kept.push(substituted(conjunct, &equal, &inner));
        }
    }
    select.selection = and(kept);
    if let [SelectItem::UnnamedExpr(item) | SelectItem::ExprWithAlias { expr: item, .. }] =
        select.projection.as_mut_slice()
    {
        let refs = Refs::of(item, &inner);
        if refs.outer && !refs.unknown {
            *item = substituted(item.clone(), &equal, &inner);
        }
    }
    if let Some(condition) = and(hoisted) {
        let subquery = std::mem::replace(expr, Expr::value(Value::Null));
        *expr = Expr::Case {
            case_token: AttachedToken::empty(),
            end_token: AttachedToken::empty(),
            operand: None,
            conditions: vec![CaseWhen {
                condition,
                result: subquery,
            }],
            else_result: None,
        };
    }
}

/// `(SELECT pg_single_value(f(outer…, inner…)) FROM … WHERE p)`, whose function reads the outer
/// row in arguments no equality makes inner (SQLAlchemy's `json_build_object('always',
/// a.attidentity = 'a', 'start', s.seqstart)`), which DataFusion cannot decorrelate, becomes
/// `CASE WHEN (SELECT pg_single_value(true) FROM … WHERE p) THEN f(outer…, (SELECT
/// pg_single_value(inner) FROM … WHERE p)…) END`: the row's existence (NULL for none, 21000
/// for two) and each inner argument are subqueries of their own, each then [`decorrelate`]d.
/// Returns whether it rewrote `expr` (which then needs no [`decorrelate`]); an argument reading
/// both rows, or one tarn cannot tell, leaves it alone.
pub(super) fn split_outer_arguments(expr: &mut Expr) -> bool {
    let Expr::Subquery(query) = expr else {
        return false;
    };
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let Some(inner) = inner_names(&select.from) else {
        return false;
    };
    let [SelectItem::UnnamedExpr(item) | SelectItem::ExprWithAlias { expr: item, .. }] =
        select.projection.as_slice()
    else {
        return false;
    };
    let Expr::Function(single) = item else {
        return false;
    };
    if !single
        .name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .is_some_and(|i| i.value.eq_ignore_ascii_case("pg_single_value"))
    {
        return false;
    }
    let Some(call) = plain_args(&single.args).and_then(|a| match a.as_slice() {
        [Expr::Function(f)] => Some(f.clone()),
        _ => None,
    }) else {
        return false;
    };
    let Some(args) = plain_args(&call.args) else {
        return false;
    };
    let mut conjuncts = vec![];
    if let Some(selection) = &select.selection {
        split_and(selection.clone(), &mut conjuncts);
    }
    let equal: Vec<(Expr, Expr)> = conjuncts
        .iter()
        .filter_map(|c| equated(c, &inner))
        .collect();
    let reads_outer = args.iter().any(|a| {
        let refs = Refs::of(&substituted(a.clone(), &equal, &inner), &inner);
        refs.outer
    });
    if !reads_outer {
        return false;
    }
    let mut any_inner = false;
    for arg in &args {
        let refs = Refs::of(arg, &inner);
        if refs.unknown || (refs.inner && refs.outer) {
            return false;
        }
        any_inner |= refs.inner;
    }
    if !any_inner {
        return false;
    }
    let with_item = |item: Expr| {
        let mut q = query.clone();
        if let SetExpr::Select(select) = q.body.as_mut() {
            select.projection = vec![SelectItem::UnnamedExpr(super::ast::call(
                "pg_single_value",
                vec![item],
            ))];
        }
        let mut e = Expr::Subquery(q);
        decorrelate(&mut e);
        e
    };
    let new_args: Vec<Expr> = args
        .into_iter()
        .map(|a| {
            if Refs::of(&a, &inner).inner {
                with_item(a)
            } else {
                a
            }
        })
        .collect();
    let mut call = call;
    if let FunctionArguments::List(list) = &mut call.args {
        list.args = new_args
            .into_iter()
            .map(|a| {
                datafusion::sql::sqlparser::ast::FunctionArg::Unnamed(
                    datafusion::sql::sqlparser::ast::FunctionArgExpr::Expr(a),
                )
            })
            .collect();
    }
    let exists = with_item(Expr::value(Value::Boolean(true)));
    *expr = Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen {
            condition: exists,
            result: Expr::Function(call),
        }],
        else_result: None,
    };
    true
}

/// The arguments of a call with plain positional arguments only (no ORDER BY, FILTER, ...).
fn plain_args(args: &FunctionArguments) -> Option<Vec<Expr>> {
    use datafusion::sql::sqlparser::ast::{FunctionArg, FunctionArgExpr};
    let FunctionArguments::List(list) = args else {
        return None;
    };
    if !list.clauses.is_empty() || list.duplicate_treatment.is_some() {
        return None;
    }
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// The names the FROM list of a query gives its rows (aliases, else table names), lower-cased;
/// None when some item has no name tarn can tell.
pub(super) fn inner_names(
    from: &[datafusion::sql::sqlparser::ast::TableWithJoins],
) -> Option<HashSet<String>> {
    fn add(factor: &TableFactor, names: &mut HashSet<String>) -> Option<()> {
        match factor {
            TableFactor::Table { name, alias, .. } => {
                let id = match alias {
                    Some(a) => a.name.clone(),
                    None => name.0.last()?.as_ident()?.clone(),
                };
                names.insert(key(&id));
            }
            TableFactor::Derived {
                alias: Some(alias), ..
            } => {
                names.insert(key(&alias.name));
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            } => {
                add(&table_with_joins.relation, names)?;
                for join in &table_with_joins.joins {
                    add(&join.relation, names)?;
                }
            }
            _ => return None,
        }
        Some(())
    }
    let mut names = HashSet::new();
    for table in from {
        add(&table.relation, &mut names)?;
        for join in &table.joins {
            add(&join.relation, &mut names)?;
        }
    }
    Some(names)
}

fn key(id: &Ident) -> String {
    id.value.to_ascii_lowercase()
}

fn same(a: &Ident, b: &Ident) -> bool {
    a.value.eq_ignore_ascii_case(&b.value)
}

/// `qualifier.column`'s qualifier, for two-part names and `schema.table.column` (SQLAlchemy
/// writes `pg_catalog.pg_attribute.attnum`): the table.
fn qualifier(e: &Expr) -> Option<&Ident> {
    match e {
        Expr::CompoundIdentifier(parts) if parts.len() == 2 || parts.len() == 3 => {
            Some(&parts[parts.len() - 2])
        }
        _ => None,
    }
}

fn is_inner(e: &Expr, inner: &HashSet<String>) -> bool {
    qualifier(e).is_some_and(|q| inner.contains(&key(q)))
}

fn is_outer(e: &Expr, inner: &HashSet<String>) -> bool {
    qualifier(e).is_some_and(|q| !inner.contains(&key(q)))
}

/// For `inner.c = outer.c` (either way round): (outer column, inner column).
fn equated(conjunct: &Expr, inner: &HashSet<String>) -> Option<(Expr, Expr)> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = conjunct
    else {
        return None;
    };
    let (l, r) = (strip_nested(left), strip_nested(right));
    if is_inner(l, inner) && is_outer(r, inner) {
        Some((r.clone(), l.clone()))
    } else if is_outer(l, inner) && is_inner(r, inner) {
        Some((l.clone(), r.clone()))
    } else {
        None
    }
}

fn strip_nested(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => strip_nested(inner),
        other => other,
    }
}

/// `e` with each outer column that an equality equates with an inner one replaced by it.
fn substituted(mut e: Expr, equal: &[(Expr, Expr)], inner: &HashSet<String>) -> Expr {
    struct Substitute<'a>(&'a [(Expr, Expr)], &'a HashSet<String>);
    impl VisitorMut for Substitute<'_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if is_outer(e, self.1)
                && let Some((_, inner)) = self.0.iter().find(|(outer, _)| same_column(outer, e))
            {
                *e = inner.clone();
            }
            ControlFlow::Continue(())
        }
    }
    let _ = VisitMut::visit(&mut e, &mut Substitute(equal, inner));
    e
}

fn same_column(a: &Expr, b: &Expr) -> bool {
    match (a, b) {
        (Expr::CompoundIdentifier(a), Expr::CompoundIdentifier(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        _ => false,
    }
}

/// Which rows an expression reads: the subquery's own, the outer query's, or ones tarn cannot
/// tell (an unqualified or four-part name, a nested query).
#[derive(Default)]
struct Refs {
    inner: bool,
    outer: bool,
    unknown: bool,
}

impl Refs {
    fn of(e: &Expr, inner: &HashSet<String>) -> Refs {
        struct Finder<'a>(Refs, &'a HashSet<String>);
        impl Visitor for Finder<'_> {
            type Break = ();
            fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
                self.0.unknown = true;
                ControlFlow::Break(())
            }
            fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                match e {
                    Expr::Identifier(_) => self.0.unknown = true,
                    Expr::CompoundIdentifier(_) if is_inner(e, self.1) => self.0.inner = true,
                    Expr::CompoundIdentifier(_) if is_outer(e, self.1) => self.0.outer = true,
                    Expr::CompoundIdentifier(_) | Expr::CompoundFieldAccess { .. } => {
                        self.0.unknown = true
                    }
                    _ => {}
                }
                ControlFlow::Continue(())
            }
        }
        let mut finder = Finder(Refs::default(), inner);
        let _ = e.visit(&mut finder);
        finder.0
    }
}

fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(*left, out);
            split_and(*right, out);
        }
        Expr::Nested(inner)
            if matches!(
                *inner,
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            split_and(*inner, out)
        }
        other => out.push(other),
    }
}

fn and(conjuncts: Vec<Expr>) -> Option<Expr> {
    conjuncts.into_iter().reduce(|left, right| Expr::BinaryOp {
        left: Box::new(left),
        op: BinaryOperator::And,
        right: Box::new(right),
    })
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::ast::Statement;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    /// Applies both rewrites to every scalar subquery of `sql`.
    fn rewritten(sql: &str) -> String {
        struct Each;
        impl VisitorMut for Each {
            type Break = ();
            fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                if let Expr::Subquery(q) = e {
                    limit_one_to_first_value(q, |_| false);
                }
                decorrelate(e);
                ControlFlow::Continue(())
            }
        }
        let mut statement: Statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        let _ = VisitMut::visit(&mut statement, &mut Each);
        statement.to_string()
    }

    #[test]
    fn outer_arguments_stay_outside() {
        let mut statement: Statement = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT (SELECT pg_single_value(f('k', a.i = 'a', 's', s.start)) FROM s \
             WHERE a.i <> '' AND s.rel = g(a.rel)) FROM a",
        )
        .unwrap()
        .remove(0);
        struct Each;
        impl VisitorMut for Each {
            type Break = ();
            fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                if matches!(e, Expr::Subquery(_)) && !split_outer_arguments(e) {
                    decorrelate(e);
                }
                ControlFlow::Continue(())
            }
        }
        let _ = VisitMut::visit(&mut statement, &mut Each);
        assert_eq!(
            statement.to_string(),
            "SELECT CASE WHEN CASE WHEN a.i <> '' THEN (SELECT pg_single_value(true) FROM s \
             WHERE s.rel = g(a.rel)) END THEN f('k', a.i = 'a', 's', CASE WHEN a.i <> '' THEN \
             (SELECT pg_single_value(s.start) FROM s WHERE s.rel = g(a.rel)) END) END FROM a"
        );
    }

    #[test]
    fn limit_one_becomes_first_value() {
        assert_eq!(
            rewritten(
                "SELECT (SELECT o.x FROM o WHERE o.k = c.k ORDER BY o.y DESC LIMIT 1) FROM c"
            ),
            "SELECT (SELECT first_value(o.x ORDER BY o.y DESC) FROM o WHERE o.k = c.k) FROM c"
        );
        for unchanged in [
            "SELECT (SELECT o.x FROM o ORDER BY 1 LIMIT 1) FROM c",
            "SELECT (SELECT o.x AS z FROM o ORDER BY z LIMIT 1) FROM c",
            "SELECT (SELECT o.x FROM o ORDER BY o.y LIMIT 2) FROM c",
            "SELECT (SELECT o.x FROM o ORDER BY o.y LIMIT 1 OFFSET 1) FROM c",
            "SELECT (SELECT DISTINCT o.x FROM o LIMIT 1) FROM c",
        ] {
            assert_eq!(rewritten(unchanged), unchanged);
        }
    }

    #[test]
    fn outer_predicates_move_out_and_outer_columns_become_inner_ones() {
        assert_eq!(
            rewritten(
                "SELECT (SELECT pg_single_value(d.x) FROM d WHERE d.r = a.r AND d.n = a.n \
                 AND a.has) FROM a"
            ),
            "SELECT CASE WHEN a.has THEN (SELECT pg_single_value(d.x) FROM d WHERE d.r = a.r \
             AND d.n = a.n) END FROM a"
        );
        assert_eq!(
            rewritten(
                "SELECT (SELECT pg_single_value(c.name) FROM c, t WHERE c.oid = a.coll \
                 AND t.oid = a.typ AND a.coll <> t.coll) FROM a"
            ),
            "SELECT (SELECT pg_single_value(c.name) FROM c, t WHERE c.oid = a.coll \
             AND t.oid = a.typ AND c.oid <> t.coll) FROM a"
        );
        // SQLAlchemy's three-part names.
        assert_eq!(
            rewritten(
                "SELECT (SELECT pg_single_value(pg_catalog.d.x) FROM pg_catalog.d \
                 WHERE pg_catalog.a.has AND pg_catalog.d.r = pg_catalog.a.r) FROM pg_catalog.a"
            ),
            "SELECT CASE WHEN pg_catalog.a.has THEN (SELECT pg_single_value(pg_catalog.d.x) \
             FROM pg_catalog.d WHERE pg_catalog.d.r = pg_catalog.a.r) END FROM pg_catalog.a"
        );
        for unchanged in [
            // Aggregates that are not NULL over no rows.
            "SELECT (SELECT count(*) FROM d WHERE d.r = a.r AND a.has) FROM a",
            // Unqualified columns could be either side's.
            "SELECT (SELECT pg_single_value(d.x) FROM d WHERE d.r = a.r AND has) FROM a",
        ] {
            assert_eq!(rewritten(unchanged), unchanged);
        }
    }
}
