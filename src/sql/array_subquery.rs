//! `ARRAY(subquery)`: PostgreSQL's array constructor from a query's rows (psql's `\d`, `\du`,
//! pgjdbc and SQLAlchemy send it). sqlparser reads it as a call of a function named `array`
//! whose argument is the subquery, which DataFusion cannot plan; this AST rewrite turns it into
//! a scalar subquery aggregating the rows:
//!
//! ```sql
//! (SELECT coalesce(array_agg(__tarn_array.__tarn_elem ORDER BY ...), ...)
//!    FROM (subquery) AS __tarn_array(__tarn_elem))
//! ```
//!
//! A plain subquery aggregates its select item in place (`SELECT coalesce(array_agg(e ORDER BY
//! ...), ...) FROM ... WHERE ...`), so a correlated one stays a correlated scalar subquery that
//! DataFusion decorrelates, and its ORDER BY orders the elements. Others (DISTINCT, GROUP BY,
//! LIMIT, aggregates, set-returning functions) are kept whole in a derived table, their ORDER
//! BY carried into array_agg when it orders by the one output column. `ARRAY(SELECT e FROM unnest(a) x)`
//! becomes `array_transform(a, x -> e)`. No rows give an empty array, as in PostgreSQL.

use std::ops::ControlFlow;
use std::sync::LazyLock;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArguments, GroupByExpr,
    Ident, LambdaFunction, LambdaFunctionParameter, LambdaSyntax, ObjectNamePart,
    OneOrManyWithParens, OrderBy, OrderByKind, Query, SelectItem, SetExpr, Statement, TableFactor,
    Value, Visit, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

const ALIAS: &str = "__tarn_array";
const ELEMENT: &str = "__tarn_elem";

static TEMPLATE: LazyLock<Query> = LazyLock::new(|| {
    let sql = format!(
        "SELECT coalesce(array_agg({ALIAS}.{ELEMENT}), make_array()) FROM (SELECT 1) AS {ALIAS}({ELEMENT})"
    );
    match Parser::parse_sql(&PostgreSqlDialect {}, &sql)
        .expect("the ARRAY template parses")
        .remove(0)
    {
        Statement::Query(q) => *q,
        _ => unreachable!("the template is a query"),
    }
});

/// Rewrites every `ARRAY(subquery)` in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut ArraySubquery);
}

struct ArraySubquery;

impl VisitorMut for ArraySubquery {
    type Break = ();

    // After the children: an ARRAY(...) inside the subquery is already rewritten.
    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr
            && f.name.0.len() == 1
            && f.name.0[0]
                .as_ident()
                .is_some_and(|i| i.quote_style.is_none() && i.value.eq_ignore_ascii_case("array"))
            && let FunctionArguments::Subquery(q) = &f.args
        {
            *expr = array_of((**q).clone());
        }
        ControlFlow::Continue(())
    }
}

/// Aggregate functions, whose presence in the subquery's select list keeps it whole (in a
/// derived table) rather than aggregating its select item in place.
pub(super) const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "json_agg",
    "jsonb_agg",
];

/// Set-returning functions: in the subquery's select list they make rows (so the subquery
/// stays whole, in a derived table); `generate_series` is planned as `unnest` of its list.
const SET_RETURNING: &[&str] = &["unnest", "generate_series"];

/// The expression that replaces `ARRAY(inner)`.
fn array_of(mut inner: Query) -> Expr {
    if let Some(e) = transform_unnest(&inner) {
        return e;
    }
    expand_series(&mut inner);
    Expr::Subquery(Box::new(aggregate(inner)))
}

/// `generate_series(...)` in `inner`'s select list (outside `unnest` and subqueries) becomes
/// `unnest(generate_series(...))`: DataFusion's is a list-valued scalar function there, where
/// PostgreSQL's makes a row per value (`ARRAY(SELECT generate_series(1, 5))`).
fn expand_series(inner: &mut Query) {
    struct Expand {
        /// Depth in subqueries and in `unnest(...)` calls.
        depth: usize,
    }
    fn named(f: &datafusion::sql::sqlparser::ast::Function, name: &str) -> bool {
        f.name
            .0
            .last()
            .and_then(ObjectNamePart::as_ident)
            .is_some_and(|i| i.value.eq_ignore_ascii_case(name))
    }
    impl VisitorMut for Expand {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = expr
                && named(f, "unnest")
            {
                self.depth += 1;
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = expr {
                if named(f, "unnest") {
                    self.depth -= 1;
                } else if self.depth == 0 && named(f, "generate_series") {
                    *expr = super::ast::call("unnest", vec![expr.clone()]);
                }
            }
            ControlFlow::Continue(())
        }
    }
    if let SetExpr::Select(select) = inner.body.as_mut() {
        let _ = VisitMut::visit(&mut select.projection, &mut Expand { depth: 0 });
    }
}

/// `ARRAY(SELECT e FROM unnest(a) x)` (psql's `\d+`): `array_transform(a, x -> e)`, which
/// needs no correlated FROM (DataFusion cannot unnest an outer column in a subquery's FROM).
fn transform_unnest(inner: &Query) -> Option<Expr> {
    if inner.order_by.is_some() || inner.limit_clause.is_some() || inner.with.is_some() {
        return None;
    }
    let SetExpr::Select(select) = inner.body.as_ref() else {
        return None;
    };
    if select.selection.is_some()
        || select.having.is_some()
        || select.distinct.is_some()
        || !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
    {
        return None;
    }
    let ([from], [item]) = (select.from.as_slice(), select.projection.as_slice()) else {
        return None;
    };
    if !from.joins.is_empty() {
        return None;
    }
    let (array, alias) = match &from.relation {
        TableFactor::Table {
            name,
            args: Some(args),
            alias: Some(alias),
            ..
        } if name
            .0
            .last()
            .and_then(ObjectNamePart::as_ident)
            .is_some_and(|i| i.value.eq_ignore_ascii_case("unnest"))
            && args.args.len() == 1 =>
        {
            match &args.args[0] {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => (e.clone(), alias),
                _ => return None,
            }
        }
        TableFactor::UNNEST {
            alias: Some(alias),
            array_exprs,
            with_offset: false,
            with_ordinality: false,
            ..
        } if array_exprs.len() == 1 => (array_exprs[0].clone(), alias),
        _ => return None,
    };
    // `unnest(a) x` names the element column x (or `x(y)`: y).
    let param = alias
        .columns
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_else(|| alias.name.clone());
    let body = match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
        _ => return None,
    };
    let lambda = Expr::Lambda(LambdaFunction {
        params: OneOrManyWithParens::One(LambdaFunctionParameter {
            name: param,
            data_type: None,
        }),
        body: Box::new(body),
        syntax: LambdaSyntax::Arrow,
    });
    let call = super::ast::call;
    // unnest(NULL) has no rows: an empty array.
    Some(call(
        "coalesce",
        vec![
            call("array_transform", vec![array, lambda]),
            call("make_array", vec![]),
        ],
    ))
}

/// Whether `inner` can aggregate its one select item in place: a plain SELECT without
/// grouping, DISTINCT, LIMIT, aggregates or set-returning functions of its own.
fn aggregates_in_place(inner: &Query) -> bool {
    let SetExpr::Select(select) = inner.body.as_ref() else {
        return false;
    };
    if inner.limit_clause.is_some()
        || inner.fetch.is_some()
        || select.distinct.is_some()
        || select.having.is_some()
        || !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
        || select.projection.len() != 1
    {
        return false;
    }
    let mut has_aggregate = false;
    let _ = select
        .projection
        .visit(&mut FindAggregate(&mut has_aggregate));
    !has_aggregate
}

struct FindAggregate<'a>(&'a mut bool);

impl datafusion::sql::sqlparser::ast::Visitor for FindAggregate<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr
            && (f.over.is_some()
                || f.name
                    .0
                    .last()
                    .and_then(ObjectNamePart::as_ident)
                    .is_some_and(|i| {
                        let name = i.value.to_ascii_lowercase();
                        AGGREGATES.contains(&name.as_str())
                            || SET_RETURNING.contains(&name.as_str())
                    }))
        {
            *self.0 = true;
        }
        ControlFlow::Continue(())
    }
}

/// The aggregating query for `inner`: its select item aggregated in place (its ORDER BY as
/// array_agg's), or, for a query that must stay whole, a derived table around it.
fn aggregate(mut inner: Query) -> Query {
    if aggregates_in_place(&inner) {
        let order = inner.order_by.take();
        let SetExpr::Select(select) = inner.body.as_mut() else {
            unreachable!("checked by aggregates_in_place")
        };
        let (element, alias) = match select.projection.remove(0) {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            _ => unreachable!("checked by aggregates_in_place"),
        };
        let mut template = TEMPLATE.clone();
        let SetExpr::Select(t) = template.body.as_mut() else {
            unreachable!("the template is a SELECT")
        };
        let SelectItem::UnnamedExpr(mut coalesce) = t.projection.remove(0) else {
            unreachable!("the template's item")
        };
        if let Expr::Function(c) = &mut coalesce
            && let FunctionArguments::List(list) = &mut c.args
            && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Function(agg)))) =
                list.args.first_mut()
            && let FunctionArguments::List(agg_args) = &mut agg.args
        {
            agg_args.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(element.clone()))];
            if let Some(OrderBy {
                kind: OrderByKind::Expressions(items),
                ..
            }) = order
            {
                // `ORDER BY 1` or the item's alias: the element itself.
                let items = items
                    .into_iter()
                    .map(|mut o| {
                        let positional = matches!(&o.expr, Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n == "1"));
                        let aliased = matches!(&o.expr, Expr::Identifier(i) if alias.as_ref().is_some_and(|a| a.value == i.value));
                        if positional || aliased {
                            o.expr = element.clone();
                        }
                        o
                    })
                    .collect();
                agg_args
                    .clauses
                    .push(FunctionArgumentClause::OrderBy(items));
            }
        }
        select.projection.push(SelectItem::UnnamedExpr(coalesce));
        return inner;
    }
    let order = take_element_order(&mut inner);
    let mut outer = TEMPLATE.clone();
    let SetExpr::Select(select) = outer.body.as_mut() else {
        unreachable!("the template is a SELECT")
    };
    if let TableFactor::Derived { subquery, .. } = &mut select.from[0].relation {
        **subquery = inner;
    }
    if let SelectItem::UnnamedExpr(Expr::Function(coalesce)) = &mut select.projection[0]
        && let FunctionArguments::List(list) = &mut coalesce.args
        && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Function(agg)))) =
            list.args.first_mut()
        && let FunctionArguments::List(agg_args) = &mut agg.args
        && let Some(order) = order
    {
        agg_args
            .clauses
            .push(FunctionArgumentClause::OrderBy(order));
    }
    outer
}

/// Takes `inner`'s ORDER BY if it orders by the one output column, as ORDER BY items over the
/// element column.
fn take_element_order(
    inner: &mut Query,
) -> Option<Vec<datafusion::sql::sqlparser::ast::OrderByExpr>> {
    let SetExpr::Select(select) = inner.body.as_ref() else {
        return None;
    };
    let [item] = select.projection.as_slice() else {
        return None;
    };
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
        _ => return None,
    };
    let last_name = match expr {
        Expr::Identifier(i) => Some(i),
        Expr::CompoundIdentifier(parts) => parts.last(),
        _ => None,
    };
    let names_element = |e: &Expr| match e {
        Expr::Value(v) => matches!(&v.value, Value::Number(n, _) if n == "1"),
        Expr::Identifier(i) => {
            alias.is_some_and(|a| a.value == i.value)
                || last_name.is_some_and(|n| n.value == i.value)
        }
        other => other == expr,
    };
    let order_by = inner.order_by.as_ref()?;
    let OrderByKind::Expressions(items) = &order_by.kind else {
        return None;
    };
    if items.is_empty() || !items.iter().all(|o| names_element(&o.expr)) {
        return None;
    }
    let element = Expr::CompoundIdentifier(vec![Ident::new(ALIAS), Ident::new(ELEMENT)]);
    let order = items
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o.expr = element.clone();
            o
        })
        .collect();
    inner.order_by = None;
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn array_of_a_subquery_aggregates_its_rows_in_order() {
        let out =
            rewritten("select array(select rolname from pg_roles where oid > 1 order by 1) as r");
        assert_eq!(
            out,
            "SELECT (SELECT coalesce(array_agg(rolname ORDER BY rolname), make_array()) FROM pg_roles WHERE oid > 1) AS r"
        );
        let out = rewritten("select array(select distinct x from t order by 1)");
        assert!(
            out.contains("array_agg(__tarn_array.__tarn_elem ORDER BY __tarn_array.__tarn_elem)"),
            "{out}"
        );
        assert!(
            out.contains("FROM (SELECT DISTINCT x FROM t) AS __tarn_array (__tarn_elem)"),
            "{out}"
        );
        let out =
            rewritten("select array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x)");
        assert_eq!(
            out,
            "SELECT coalesce(array_transform(tc.reloptions, x -> 'toast.' || x), make_array())"
        );
        // Array literals and other functions stay.
        assert_eq!(rewritten("select array[1, 2]"), "SELECT ARRAY[1, 2]");
        assert_eq!(rewritten("select f(1)"), "SELECT f(1)");
        // A set-returning function makes rows: the subquery stays whole.
        let out = rewritten("select array(select generate_series(1, 3))");
        assert!(
            out.contains(
                "FROM (SELECT unnest(generate_series(1, 3))) AS __tarn_array (__tarn_elem)"
            ),
            "{out}"
        );
    }
}
