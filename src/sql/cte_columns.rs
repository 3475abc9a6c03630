//! `WITH t(a, b, c) AS (SELECT id, id, id …)`: the column list names the select items.
//!
//! DataFusion plans the CTE's query before renaming its columns, and refuses a select list
//! that repeats an expression ("Projections require unique expression names"), which
//! recursive CTEs do (`SELECT id, id, id FROM tree` as the anchor). The names the column
//! list gives are written onto the select items of every branch, which then differ; the
//! CTE's columns are the same.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Ident, Query, SelectItem, SetExpr, Statement, VisitMut, VisitorMut,
};

/// Names the select items of every CTE with a column list in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut CteColumns);
}

struct CteColumns;

impl VisitorMut for CteColumns {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &mut query.with {
            for cte in &mut with.cte_tables {
                let names: Vec<Ident> = cte.alias.columns.iter().map(|c| c.name.clone()).collect();
                if !names.is_empty() {
                    name_items(&mut cte.query.body, &names);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn name_items(body: &mut SetExpr, names: &[Ident]) {
    match body {
        SetExpr::Select(select) => {
            if select.projection.len() != names.len() {
                return;
            }
            for (item, name) in select.projection.iter_mut().zip(names) {
                *item = match std::mem::replace(
                    item,
                    SelectItem::UnnamedExpr(datafusion::sql::sqlparser::ast::Expr::Identifier(
                        name.clone(),
                    )),
                ) {
                    SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                        SelectItem::ExprWithAlias {
                            expr,
                            alias: name.clone(),
                        }
                    }
                    other => other,
                };
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            name_items(left, names);
            name_items(right, names);
        }
        SetExpr::Query(q) => name_items(&mut q.body, names),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    #[test]
    fn column_list_names_the_items() {
        let mut statement = Parser::parse_sql(
            &PostgreSqlDialect {},
            "WITH RECURSIVE t(a, b) AS (SELECT id, id FROM x UNION ALL SELECT t.a, y.b AS z \
             FROM t, y) SELECT * FROM t",
        )
        .unwrap()
        .remove(0);
        rewrite(&mut statement);
        assert_eq!(
            statement.to_string(),
            "WITH RECURSIVE t (a, b) AS (SELECT id AS a, id AS b FROM x UNION ALL \
             SELECT t.a AS a, y.b AS b FROM t, y) SELECT * FROM t"
        );
    }
}
