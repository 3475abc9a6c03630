//! `FETCH { FIRST | NEXT } [n] { ROW | ROWS } ONLY`, the SQL standard's LIMIT.
//!
//! sqlparser reads it into `Query::fetch`, which DataFusion's planner refuses; it means exactly
//! `LIMIT n` (n defaults to 1), so it is moved there, in every query of the statement.
//!
//! `FETCH FIRST n ROWS WITH TIES` also returns the rows that tie with the last of the n in
//! the ORDER BY. DataFusion has no such limit, so the select computes each row's `rank()` and
//! `row_number()` over its ORDER BY and an outer query keeps the rows ranked within the first
//! n (after the OFFSET's): `SELECT * EXCLUDE (__ties_rank, __ties_row) FROM (SELECT …,
//! rank() OVER (ORDER BY k) AS __ties_rank, row_number() OVER (ORDER BY k) AS __ties_row FROM
//! …) AS __ties WHERE __ties_row > offset AND __ties_rank <= offset + n ORDER BY __ties_row`.
//! A row past the n-th has a rank within them exactly when it ties with the n-th. ORDER BY
//! keys that name an output column or its position are replaced by its expression (the
//! window cannot see the select list's names). `PERCENT`, and `WITH TIES` on a query that is
//! not a plain select without DISTINCT, stay as they are (and are refused).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, LimitClause, OrderBy, OrderByExpr, OrderByKind, OrderByOptions,
    Query, SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut, WindowSpec, WindowType,
};

use super::ast::{self, call, number, select_excluding};

const RANK: &str = "__ties_rank";
const ROW: &str = "__ties_row";

/// Moves each plain FETCH FIRST in `statement` into its query's LIMIT.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut FetchToLimit);
}

struct FetchToLimit;

impl VisitorMut for FetchToLimit {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let Some(fetch) = &query.fetch else {
            return ControlFlow::Continue(());
        };
        if fetch.percent {
            return ControlFlow::Continue(());
        }
        if fetch.with_ties {
            with_ties(query);
            return ControlFlow::Continue(());
        }
        let count = fetch
            .quantity
            .clone()
            .unwrap_or_else(|| Expr::value(Value::Number("1".into(), false)));
        match &mut query.limit_clause {
            None => {
                query.limit_clause = Some(LimitClause::LimitOffset {
                    limit: Some(count),
                    offset: None,
                    limit_by: vec![],
                })
            }
            Some(LimitClause::LimitOffset {
                limit: limit @ None,
                ..
            }) => *limit = Some(count),
            // LIMIT and FETCH together: left for the planner to refuse.
            Some(_) => return ControlFlow::Continue(()),
        }
        query.fetch = None;
        ControlFlow::Continue(())
    }
}

/// Rewrites a query ending in `FETCH FIRST n ROWS WITH TIES` (see the module docs).
fn with_ties(query: &mut Query) {
    let offset = match &query.limit_clause {
        None => None,
        Some(LimitClause::LimitOffset {
            limit: None,
            offset,
            limit_by,
        }) if limit_by.is_empty() => offset.as_ref().map(|o| o.value.clone()),
        Some(_) => return,
    };
    let Some(OrderBy {
        kind: OrderByKind::Expressions(order),
        interpolate: None,
    }) = &query.order_by
    else {
        return;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    if select.distinct.is_some() || order.is_empty() {
        return;
    }
    let mut keys = Vec::with_capacity(order.len());
    for o in order {
        let Some(expr) = sort_key(&o.expr, &select.projection) else {
            return;
        };
        keys.push(OrderByExpr {
            expr,
            options: o.options,
            with_fill: None,
        });
    }
    let count = query
        .fetch
        .as_ref()
        .and_then(|f| f.quantity.clone())
        .unwrap_or_else(|| number("1"));
    let window = |name: &str| {
        let Expr::Function(mut f) = call(name, vec![]) else {
            unreachable!("call builds a function")
        };
        f.over = Some(WindowType::WindowSpec(WindowSpec {
            window_name: None,
            partition_by: vec![],
            order_by: keys.clone(),
            window_frame: None,
        }));
        Expr::Function(f)
    };
    for name in [RANK, ROW] {
        let function = if name == RANK { "rank" } else { "row_number" };
        select.projection.push(SelectItem::ExprWithAlias {
            expr: window(function),
            alias: Ident::new(name),
        });
    }
    let inner = ast::query((*query.body).clone());
    let mut outer = select_excluding(inner, "__ties", vec![Ident::new(RANK), Ident::new(ROW)]);
    let column = |name: &str| Expr::Identifier(Ident::new(name));
    let op = |left: Expr, op: BinaryOperator, right: Expr| Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    };
    outer.selection = Some(match offset {
        None => op(column(RANK), BinaryOperator::LtEq, count),
        Some(offset) => op(
            op(column(ROW), BinaryOperator::Gt, offset.clone()),
            BinaryOperator::And,
            op(
                column(RANK),
                BinaryOperator::LtEq,
                op(Expr::Nested(Box::new(offset)), BinaryOperator::Plus, count),
            ),
        ),
    });
    *query.body = SetExpr::Select(Box::new(outer));
    query.order_by = Some(OrderBy {
        kind: OrderByKind::Expressions(vec![OrderByExpr {
            expr: column(ROW),
            options: OrderByOptions {
                asc: None,
                nulls_first: None,
            },
            with_fill: None,
        }]),
        interpolate: None,
    });
    query.limit_clause = None;
    query.fetch = None;
}

/// The expression an ORDER BY key sorts by inside the select: an output column's position
/// or name stands for its expression. None when it names a `*`'s column by position.
fn sort_key(key: &Expr, projection: &[SelectItem]) -> Option<Expr> {
    let item_expr = |item: &SelectItem| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e.clone()),
        _ => None,
    };
    match key {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => {
                let position: usize = n.parse().ok()?;
                item_expr(projection.get(position.checked_sub(1)?)?)
            }
            _ => Some(key.clone()),
        },
        Expr::Identifier(id) => Some(
            projection
                .iter()
                .find_map(|item| match item {
                    SelectItem::ExprWithAlias { expr, alias }
                        if alias.value.eq_ignore_ascii_case(&id.value) =>
                    {
                        Some(expr.clone())
                    }
                    _ => None,
                })
                .unwrap_or_else(|| key.clone()),
        ),
        _ => Some(key.clone()),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn fetch_first_becomes_limit() {
        assert_eq!(
            rewritten("SELECT id FROM t ORDER BY id FETCH FIRST 2 ROWS ONLY"),
            "SELECT id FROM t ORDER BY id LIMIT 2"
        );
        assert_eq!(
            rewritten("SELECT id FROM t ORDER BY id OFFSET 1 ROW FETCH NEXT 2 ROWS ONLY"),
            "SELECT id FROM t ORDER BY id LIMIT 2 OFFSET 1 ROW"
        );
        assert_eq!(
            rewritten("SELECT (SELECT x FROM u FETCH FIRST ROW ONLY) FROM t"),
            "SELECT (SELECT x FROM u LIMIT 1) FROM t"
        );
        let percent = "SELECT id FROM t ORDER BY id FETCH FIRST 2 PERCENT ROWS ONLY";
        assert_eq!(rewritten(percent), percent);
    }

    #[test]
    fn with_ties_keeps_the_rows_ranked_within_n() {
        assert_eq!(
            rewritten(
                "SELECT id, r AS x FROM t ORDER BY x DESC NULLS LAST, 1 FETCH FIRST 2 ROWS WITH TIES"
            ),
            "SELECT * EXCLUDE (__ties_rank, __ties_row) FROM (SELECT id, r AS x, \
             rank() OVER (ORDER BY r DESC NULLS LAST, id) AS __ties_rank, \
             row_number() OVER (ORDER BY r DESC NULLS LAST, id) AS __ties_row FROM t) AS __ties \
             WHERE __ties_rank <= 2 ORDER BY __ties_row"
        );
        assert_eq!(
            rewritten("SELECT id FROM t ORDER BY k OFFSET 3 ROWS FETCH NEXT ROW WITH TIES"),
            "SELECT * EXCLUDE (__ties_rank, __ties_row) FROM (SELECT id, \
             rank() OVER (ORDER BY k) AS __ties_rank, \
             row_number() OVER (ORDER BY k) AS __ties_row FROM t) AS __ties \
             WHERE __ties_row > 3 AND __ties_rank <= (3) + 1 ORDER BY __ties_row"
        );
        for unchanged in [
            "SELECT DISTINCT id FROM t ORDER BY id FETCH FIRST 2 ROWS WITH TIES",
            "SELECT * FROM t ORDER BY 1 FETCH FIRST 2 ROWS WITH TIES",
        ] {
            assert_eq!(rewritten(unchanged), unchanged);
        }
    }
}
