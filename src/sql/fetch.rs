//! `FETCH { FIRST | NEXT } [n] { ROW | ROWS } ONLY`, the SQL standard's LIMIT.
//!
//! sqlparser reads it into `Query::fetch`, which DataFusion's planner refuses; it means exactly
//! `LIMIT n` (n defaults to 1), so it is moved there, in every query of the statement.
//! `WITH TIES` and `PERCENT` stay as they are (and are refused).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, LimitClause, Query, Statement, Value, VisitMut, VisitorMut,
};

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
        if fetch.with_ties || fetch.percent {
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
        let ties = "SELECT id FROM t ORDER BY id FETCH FIRST 2 ROWS WITH TIES";
        assert_eq!(rewritten(ties), ties);
    }
}
