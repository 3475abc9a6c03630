//! `LEFT JOIN LATERAL (SELECT … ORDER BY y LIMIT 1) l ON true` and `CROSS JOIN LATERAL (…)`.
//!
//! DataFusion decorrelates a LATERAL subquery that aggregates, not one with ORDER BY / LIMIT
//! (0A000). "The first row by y" is `first_value(… ORDER BY y)` for each column
//! (`correlation::limit_one_row_to_first_values`): one row, NULLs when nothing matches, which
//! is exactly a LEFT JOIN's row. A CROSS JOIN drops the outer row instead, so the subquery also
//! counts its rows (`count(*) AS __lateral_rows`) and the outer WHERE keeps rows where it is
//! above 0; that extra column would show in `SELECT *`, so a query with a wildcard is left alone.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, JoinConstraint, JoinOperator, Query, SelectItem, SetExpr,
    Statement, TableFactor, Value, VisitMut, VisitorMut,
};

use super::correlation::limit_one_row_to_first_values;
use super::single_row::aggregates;

/// The row count a CROSS JOIN LATERAL subquery gets.
const ROWS: &str = "__lateral_rows";

/// Rewrites the LATERAL joins of every query in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut Lateral);
}

struct Lateral;

impl VisitorMut for Lateral {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let SetExpr::Select(select) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        let wildcard = select.projection.iter().any(|i| {
            matches!(
                i,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        });
        let mut filters = vec![];
        for table in &mut select.from {
            for join in &mut table.joins {
                let TableFactor::Derived {
                    lateral: true,
                    subquery,
                    alias: Some(alias),
                    ..
                } = &mut join.relation
                else {
                    continue;
                };
                let left_on_true = matches!(&join.join_operator,
                    JoinOperator::Left(JoinConstraint::On(Expr::Value(v)))
                    | JoinOperator::LeftOuter(JoinConstraint::On(Expr::Value(v)))
                        if v.value == Value::Boolean(true));
                let cross = matches!(&join.join_operator, JoinOperator::CrossJoin(_));
                if left_on_true {
                    limit_one_row_to_first_values(subquery, aggregates);
                } else if cross
                    && !wildcard
                    && alias.columns.is_empty()
                    && limit_one_row_to_first_values(subquery, aggregates)
                    && let SetExpr::Select(inner) = subquery.body.as_mut()
                {
                    inner.projection.push(SelectItem::ExprWithAlias {
                        expr: super::ast::call(
                            "count",
                            vec![Expr::value(Value::Number("1".into(), false))],
                        ),
                        alias: Ident::new(ROWS),
                    });
                    filters.push(Expr::BinaryOp {
                        left: Box::new(Expr::CompoundIdentifier(vec![
                            alias.name.clone(),
                            Ident::new(ROWS),
                        ])),
                        op: BinaryOperator::Gt,
                        right: Box::new(Expr::value(Value::Number("0".into(), false))),
                    });
                }
            }
        }
        for filter in filters {
            select.selection = Some(match select.selection.take() {
                Some(existing) => Expr::BinaryOp {
                    left: Box::new(Expr::Nested(Box::new(existing))),
                    op: BinaryOperator::And,
                    right: Box::new(filter),
                },
                None => filter,
            });
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn first_row_becomes_first_values() {
        assert_eq!(
            rewritten(
                "SELECT c.n, l.id FROM c LEFT JOIN LATERAL (SELECT o.id FROM o \
                 WHERE o.c = c.id ORDER BY o.t LIMIT 1) AS l ON true"
            ),
            "SELECT c.n, l.id FROM c LEFT JOIN LATERAL (SELECT first_value(o.id ORDER BY o.t) \
             AS id FROM o WHERE o.c = c.id) AS l ON true"
        );
        assert_eq!(
            rewritten(
                "SELECT c.n, l.id FROM c CROSS JOIN LATERAL (SELECT o.id, o.t AS x FROM o \
                 WHERE o.c = c.id ORDER BY o.t DESC LIMIT 1) AS l WHERE c.k > 1"
            ),
            "SELECT c.n, l.id FROM c CROSS JOIN LATERAL (SELECT first_value(o.id ORDER BY o.t \
             DESC) AS id, first_value(o.t ORDER BY o.t DESC) AS x, count(1) AS __lateral_rows \
             FROM o WHERE o.c = c.id) AS l WHERE (c.k > 1) AND l.__lateral_rows > 0"
        );
        let wildcard = "SELECT * FROM c CROSS JOIN LATERAL (SELECT o.id FROM o WHERE o.c = c.id \
                        LIMIT 1) AS l";
        assert_eq!(rewritten(wildcard), wildcard);
    }
}
