//! A subquery in ORDER BY: `SELECT name FROM emp ORDER BY (SELECT d.name FROM dept d WHERE
//! d.id = dept_id)`.
//!
//! DataFusion decorrelates scalar subqueries in projections, filters and aggregates, not in a
//! sort ("Correlated scalar subquery can only be used in Projection, Filter, Aggregate plan
//! nodes"). The ORDER BY expressions are therefore computed as extra columns of the select
//! (`__order_1`, …), sorted on by an outer query that drops them again:
//! `SELECT * EXCLUDE (__order_1, …) FROM (SELECT name, (…) AS __order_1 FROM emp) AS __ordered
//! ORDER BY __order_1`. A key by position or by an output alias stays as it is: the outer
//! query's columns are the select's, in order (Grafana's table list sorts by
//! `CASE WHEN … IN (subquery) THEN 0 ELSE 1 END, 1`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, OrderByKind, Query, SelectItem, SetExpr, Statement, Value, Visit, VisitMut,
    Visitor, VisitorMut,
};

/// Moves the ORDER BY of every query that sorts by a subquery into its select list.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut OrderSubquery);
}

struct OrderSubquery;

impl VisitorMut for OrderSubquery {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        move_out(query);
        ControlFlow::Continue(())
    }
}

fn has_subquery(e: &Expr) -> bool {
    struct Finder(bool);
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.0 = true;
            ControlFlow::Break(())
        }
    }
    let mut finder = Finder(false);
    let _ = e.visit(&mut finder);
    finder.0
}

fn move_out(query: &mut Query) {
    let Some(order_by) = &mut query.order_by else {
        return;
    };
    let OrderByKind::Expressions(order) = &mut order_by.kind else {
        return;
    };
    if !order.iter().any(|o| has_subquery(&o.expr)) {
        return;
    }
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    if select.distinct.is_some() {
        return;
    }
    let aliases: Vec<Ident> = select
        .projection
        .iter()
        .filter_map(|i| match i {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.clone()),
            _ => None,
        })
        .collect();
    let by_output = |e: &Expr| match e {
        Expr::Value(v) => matches!(v.value, Value::Number(..)),
        Expr::Identifier(id) => aliases
            .iter()
            .any(|a| a.value.eq_ignore_ascii_case(&id.value)),
        _ => false,
    };
    // Keys naming an output column (by position or alias) name the same column of the outer
    // query, whose columns are the select's in order; the others become hidden columns.
    let mut names: Vec<Ident> = vec![];
    for o in order.iter_mut().filter(|o| !by_output(&o.expr)) {
        let name = Ident::new(format!("__order_{}", names.len() + 1));
        let expr = std::mem::replace(&mut o.expr, Expr::Identifier(name.clone()));
        select.projection.push(SelectItem::ExprWithAlias {
            expr,
            alias: name.clone(),
        });
        names.push(name);
    }
    let inner = super::ast::query((*query.body).clone());
    let outer = super::ast::select_excluding(inner, "__ordered", names);
    *query.body = SetExpr::Select(Box::new(outer));
}

#[cfg(test)]
mod tests {

    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn sort_keys_become_columns() {
        assert_eq!(
            rewritten(
                "SELECT name FROM e ORDER BY (SELECT d.n FROM d WHERE d.id = dept) NULLS FIRST, \
                 name LIMIT 3"
            ),
            "SELECT * EXCLUDE (__order_1, __order_2) FROM (SELECT name, (SELECT d.n FROM d \
             WHERE d.id = dept) AS __order_1, name AS __order_2 FROM e) AS __ordered \
             ORDER BY __order_1 NULLS FIRST, __order_2 LIMIT 3"
        );
        assert_eq!(
            rewritten("SELECT name AS n FROM e ORDER BY (SELECT 1), 1 DESC, n"),
            "SELECT * EXCLUDE (__order_1) FROM (SELECT name AS n, (SELECT 1) AS __order_1 \
             FROM e) AS __ordered ORDER BY __order_1, 1 DESC, n"
        );
        for unchanged in [
            "SELECT name FROM e ORDER BY name",
            "SELECT name FROM e ORDER BY 1",
        ] {
            assert_eq!(rewritten(unchanged), unchanged);
        }
    }
}
