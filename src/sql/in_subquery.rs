//! `x [NOT] IN (subquery)` in a select list, as Grafana's table list sends it
//! (`CASE WHEN quote_ident(table_schema) IN (SELECT … search_path …) THEN … END`).
//!
//! DataFusion 55 turns an IN subquery into a semi join only in a filter; in a projection it
//! stays and physical planning fails (0A000). Scalar subqueries there are planned, so the
//! subquery's values become one array, `A = (SELECT array_agg(y) FROM …)`, and the membership
//! test keeps PostgreSQL's three-valued answer:
//! `CASE WHEN A IS NULL THEN false WHEN array_has(A, x) THEN true
//! WHEN x IS NULL OR array_position(A, NULL) IS NOT NULL THEN NULL ELSE false END`
//! (no rows: false; a match: true; no match but a NULL on either side: NULL).
//! Only select-list expressions are rewritten; IN in WHERE is DataFusion's own semi join.
//! A sort key with a subquery has been moved into the select list by `order_subquery.rs`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    CaseWhen, Expr, GroupByExpr, Ident, Query, SelectItem, SetExpr, Statement, TableAlias,
    TableAliasColumnDef, TableFactor, TableWithJoins, UnaryOperator, Value, VisitMut, VisitorMut,
};

use super::ast::call;

/// Rewrites the IN subqueries of every select list in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut SelectLists);
}

struct SelectLists;

impl VisitorMut for SelectLists {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    let _ = e.visit(&mut Membership { depth: 0 });
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Replaces IN subqueries of one expression, not those of the queries nested in it (their
/// own select lists are visited as queries).
struct Membership {
    depth: usize,
}

impl VisitorMut for Membership {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if self.depth == 0
            && let Expr::InSubquery {
                expr,
                subquery,
                negated,
            } = e
        {
            let test = membership(expr, values(subquery));
            *e = if *negated {
                Expr::UnaryOp {
                    op: UnaryOperator::Not,
                    expr: Box::new(Expr::Nested(Box::new(test))),
                }
            } else {
                test
            };
        }
        ControlFlow::Continue(())
    }
}

/// `(SELECT array_agg(y) …)`: the subquery's one column as one array (NULL when it has no
/// rows). A plain select aggregates its column in place; any other query is read as a
/// derived table.
fn values(subquery: &Query) -> Expr {
    let mut query = subquery.clone();
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none()
        && matches!(query.body.as_ref(), SetExpr::Select(s)
            if s.projection.len() == 1
                && s.having.is_none()
                && matches!(&s.group_by, GroupByExpr::Expressions(g, _) if g.is_empty())
                && matches!(&s.projection[0],
                    SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }));
    if plain && let SetExpr::Select(select) = query.body.as_mut() {
        let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) =
            select.projection.remove(0)
        else {
            unreachable!("checked above");
        };
        select.distinct = None;
        select.projection = vec![SelectItem::UnnamedExpr(call("array_agg", vec![e]))];
        return Expr::Subquery(Box::new(query));
    }
    let column = Ident::new("__in");
    let derived = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(query),
        alias: Some(TableAlias {
            explicit: true,
            name: Ident::new("__in_values"),
            columns: vec![TableAliasColumnDef {
                name: column.clone(),
                data_type: None,
            }],
            at: None,
        }),
        sample: None,
    };
    Expr::Subquery(Box::new(super::ast::select(
        vec![SelectItem::UnnamedExpr(call(
            "array_agg",
            vec![Expr::Identifier(column)],
        ))],
        vec![TableWithJoins {
            relation: derived,
            joins: vec![],
        }],
    )))
}

fn value(v: Value) -> Expr {
    Expr::Value(v.into())
}

/// PostgreSQL's `x IN (values)` over the array `values`.
fn membership(x: &Expr, values: Expr) -> Expr {
    let when = |condition: Expr, result: Expr| CaseWhen { condition, result };
    let has_null = Expr::IsNotNull(Box::new(call(
        "array_position",
        vec![values.clone(), value(Value::Null)],
    )));
    Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![
            when(
                Expr::IsNull(Box::new(values.clone())),
                value(Value::Boolean(false)),
            ),
            when(
                call("array_has", vec![values, x.clone()]),
                value(Value::Boolean(true)),
            ),
            when(
                Expr::BinaryOp {
                    left: Box::new(Expr::IsNull(Box::new(x.clone()))),
                    op: datafusion::sql::sqlparser::ast::BinaryOperator::Or,
                    right: Box::new(has_null),
                },
                value(Value::Null),
            ),
        ],
        else_result: Some(Box::new(value(Value::Boolean(false)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn in_subquery_in_a_select_list_becomes_an_array_test() {
        let a = "(SELECT array_agg(y) FROM u WHERE u.k = 1)";
        assert_eq!(
            rewritten("select x not in (select y from u where u.k = 1) from t"),
            format!(
                "SELECT NOT (CASE WHEN {a} IS NULL THEN false WHEN array_has({a}, x) THEN true \
                 WHEN x IS NULL OR array_position({a}, NULL) IS NOT NULL THEN NULL ELSE false \
                 END) FROM t"
            )
        );
        let a = "(SELECT array_agg(__in) FROM (SELECT y FROM u LIMIT 1) AS __in_values (__in))";
        assert_eq!(
            rewritten("select x in (select y from u limit 1) as b from t"),
            format!(
                "SELECT CASE WHEN {a} IS NULL THEN false WHEN array_has({a}, x) THEN true \
                 WHEN x IS NULL OR array_position({a}, NULL) IS NOT NULL THEN NULL ELSE false \
                 END AS b FROM t"
            )
        );
        // A filter's IN is DataFusion's semi join.
        let filter = "SELECT x FROM t WHERE x IN (SELECT y FROM u)";
        assert_eq!(rewritten(filter), filter);
    }
}
