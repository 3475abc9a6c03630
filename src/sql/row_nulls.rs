//! `ROW(a, b) IS [NOT] NULL` with PostgreSQL's meaning for rows.
//!
//! A row value IS NULL when every field is NULL and IS NOT NULL when every field is not NULL
//! (so `ROW(1, NULL)` is neither). DataFusion builds a struct, which is never NULL itself, so
//! the test is spelled out over the fields: `(a IS NULL AND b IS NULL)`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Statement, VisitMut,
    VisitorMut,
};

/// Spells out every row-valued IS [NOT] NULL in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut RowNulls);
}

struct RowNulls;

impl VisitorMut for RowNulls {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let (operand, null) = match expr {
            Expr::IsNull(e) => (e, true),
            Expr::IsNotNull(e) => (e, false),
            _ => return ControlFlow::Continue(()),
        };
        let Some(fields) = row_fields(operand) else {
            return ControlFlow::Continue(());
        };
        let tests = fields.into_iter().map(|f| {
            let f = Box::new(f);
            if null {
                Expr::IsNull(f)
            } else {
                Expr::IsNotNull(f)
            }
        });
        if let Some(all) = tests.reduce(|left, right| Expr::BinaryOp {
            left: Box::new(left),
            op: BinaryOperator::And,
            right: Box::new(right),
        }) {
            *expr = Expr::Nested(Box::new(all));
        }
        ControlFlow::Continue(())
    }
}

/// The fields of `ROW(…)` or of a parenthesized list of two or more values.
fn row_fields(e: &Expr) -> Option<Vec<Expr>> {
    match e {
        Expr::Nested(inner) => row_fields(inner),
        Expr::Tuple(fields) if fields.len() > 1 => Some(fields.clone()),
        Expr::Function(f)
            if f.name.0.len() == 1
                && f.name.0[0]
                    .as_ident()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("row"))
                && f.over.is_none() =>
        {
            let FunctionArguments::List(list) = &f.args else {
                return None;
            };
            list.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .filter(|fields| !fields.is_empty())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn row_tests_every_field() {
        assert_eq!(
            rewritten("SELECT row(1, NULL) IS NULL, (a, b) IS NOT NULL, c IS NULL FROM t"),
            "SELECT (1 IS NULL AND NULL IS NULL), (a IS NOT NULL AND b IS NOT NULL), \
             c IS NULL FROM t"
        );
    }
}
