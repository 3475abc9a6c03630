//! `(a, b) IN (SELECT x, y …)` in a WHERE clause.
//!
//! DataFusion's IN subquery takes one column. As a condition of WHERE (a conjunct, where NULL
//! and false both drop the row) it means exactly `EXISTS (SELECT 1 FROM (SELECT x, y …) AS
//! __row_in(__c1, __c2) WHERE __c1 = a AND __c2 = b)`, which DataFusion plans as a semi join.
//! `NOT IN`, and row IN elsewhere (where its NULL would show), are left alone.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, SelectItem, SetExpr, TableAlias, TableAliasColumnDef,
    TableFactor, TableWithJoins, Value, VisitMut, VisitorMut,
};

/// Rewrites the row IN conditions of every WHERE clause in `statement`.
pub fn rewrite(statement: &mut datafusion::sql::sqlparser::ast::Statement) {
    let _ = statement.visit(&mut RowIn);
}

struct RowIn;

impl VisitorMut for RowIn {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut()
            && let Some(selection) = &mut select.selection
        {
            conjuncts(selection);
        }
        ControlFlow::Continue(())
    }
}

fn conjuncts(e: &mut Expr) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left);
            conjuncts(right);
        }
        Expr::Nested(inner) => conjuncts(inner),
        Expr::InSubquery {
            expr,
            subquery,
            negated: false,
        } => {
            if let Expr::Tuple(values) = expr.as_ref()
                && values.len() > 1
                && let Some(exists) = exists(values, subquery)
            {
                *e = exists;
            }
        }
        _ => {}
    }
}

fn exists(values: &[Expr], subquery: &Query) -> Option<Expr> {
    let SetExpr::Select(_) = subquery.body.as_ref() else {
        return None;
    };
    let names: Vec<String> = (1..=values.len()).map(|i| format!("__c{i}")).collect();
    let condition = values
        .iter()
        .zip(&names)
        .map(|(v, n)| Expr::BinaryOp {
            left: Box::new(Expr::CompoundIdentifier(vec![
                Ident::new("__row_in"),
                Ident::new(n),
            ])),
            op: BinaryOperator::Eq,
            right: Box::new(Expr::Nested(Box::new(v.clone()))),
        })
        .reduce(|left, right| Expr::BinaryOp {
            left: Box::new(left),
            op: BinaryOperator::And,
            right: Box::new(right),
        })?;
    let mut query = datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
    )
    .try_with_sql("SELECT 1")
    .ok()?
    .parse_query()
    .ok()?;
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    select.projection = vec![SelectItem::UnnamedExpr(Expr::value(Value::Number(
        "1".into(),
        false,
    )))];
    select.from = vec![TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: Box::new(subquery.clone()),
            alias: Some(TableAlias {
                explicit: true,
                name: Ident::new("__row_in"),
                columns: names.iter().map(TableAliasColumnDef::from_name).collect(),
                at: None,
            }),
            sample: None,
        },
        joins: vec![],
    }];
    select.selection = Some(condition);
    Some(Expr::Exists {
        subquery: query,
        negated: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn row_in_becomes_exists() {
        assert_eq!(
            rewritten(
                "SELECT n FROM e WHERE e.k > 0 AND (d, s) IN (SELECT d, max(s) FROM e GROUP BY d)"
            ),
            "SELECT n FROM e WHERE e.k > 0 AND EXISTS (SELECT 1 FROM (SELECT d, max(s) FROM e \
             GROUP BY d) AS __row_in (__c1, __c2) WHERE __row_in.__c1 = (d) AND __row_in.__c2 = (s))"
        );
        let negated = "SELECT n FROM e WHERE (d, s) NOT IN (SELECT d, s FROM e)";
        assert_eq!(rewritten(negated), negated);
    }
}
