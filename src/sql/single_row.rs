//! Scalar subqueries that do not aggregate: `(SELECT d.x FROM d WHERE d.k = o.k)`.
//!
//! PostgreSQL answers with the one row's value, NULL for no row, and 21000 for a second row.
//! DataFusion plans correlated scalar subqueries only when they aggregate (and answers XX000 on
//! a second row of an uncorrelated one), so the select item is wrapped in
//! `pg_single_value(...)` (`query/functions/single_value.rs`), an aggregate with exactly
//! PostgreSQL's answer. Subqueries with ORDER BY, LIMIT, GROUP BY, DISTINCT or HAVING keep
//! their form: an aggregate there would change what they mean (except `ORDER BY … LIMIT 1`,
//! which `first_value` computes: see `correlation.rs`).

use std::ops::ControlFlow;

use std::collections::HashSet;

use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Query, SelectItem, SetExpr, Statement, Visit, VisitMut, Visitor, VisitorMut,
};

use super::correlation;

use super::array_subquery::AGGREGATES;

/// Aggregates besides the ones `ARRAY(subquery)` knows: a select item calling one is left alone
/// (wrapping it would nest aggregates).
const MORE_AGGREGATES: &[&str] = &[
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "median",
    "mode",
    "percentile_cont",
    "percentile_disc",
    "bit_and",
    "bit_or",
    "bit_xor",
    "corr",
    "covar_pop",
    "covar_samp",
    "first_value",
    "last_value",
    "any_value",
    "json_object_agg",
    "jsonb_object_agg",
    "grouping",
];

/// The aggregate's name, as `query::functions::single_value` registers it.
const SINGLE_VALUE: &str = "pg_single_value";

/// Wraps the select item of every non-aggregating scalar subquery in `statement`, after
/// reshaping correlated ones DataFusion could not decorrelate (`super::correlation`).
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut SingleRow::default());
}

#[derive(Default)]
struct SingleRow {
    /// Subqueries under `x op ANY/ALL (subquery)`: sets, not scalars, left as they are.
    sets: HashSet<*const Query>,
}

impl VisitorMut for SingleRow {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } = expr
            && let Expr::Subquery(query) = right.as_mut()
        {
            super::set_comparison::alias_tables(query);
            self.sets.insert(&**query as *const Query);
        }
        ControlFlow::Continue(())
    }

    // After the children, so nested subqueries are in their final form first.
    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Subquery(query) = expr
            && !self.sets.contains(&(&**query as *const Query))
        {
            if !correlation::limit_one_to_first_value(query, aggregates) {
                wrap(query);
            }
            if !correlation::split_outer_arguments(expr) {
                correlation::decorrelate(expr);
            }
        }
        ControlFlow::Continue(())
    }
}

fn wrap(query: &mut Query) {
    if query.order_by.is_some()
        || query.limit_clause.is_some()
        || query.fetch.is_some()
        || query.with.is_some()
    {
        return;
    }
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    if select.from.is_empty()
        || select.having.is_some()
        || select.distinct.is_some()
        || select.projection.len() != 1
        || !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
    {
        return;
    }
    let (SelectItem::UnnamedExpr(item) | SelectItem::ExprWithAlias { expr: item, .. }) =
        &mut select.projection[0]
    else {
        return;
    };
    if aggregates(item) {
        return;
    }
    *item = super::ast::call(SINGLE_VALUE, vec![item.clone()]);
}

/// Whether `expr` calls an aggregate or window function outside nested subqueries.
pub(super) fn aggregates(expr: &Expr) -> bool {
    /// Whether an aggregate was found, and how deep in nested queries the visit is.
    struct Finder(bool, usize);
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.1 += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.1 -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if self.1 == 0
                && let Expr::Function(f) = expr
                && (f.over.is_some()
                    || !f.within_group.is_empty()
                    || f.name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
                        let name = i.value.to_ascii_lowercase();
                        AGGREGATES.contains(&name.as_str())
                            || MORE_AGGREGATES.contains(&name.as_str())
                            || name.starts_with("regr_")
                            || name.starts_with("approx_")
                            || name == SINGLE_VALUE
                    }))
            {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut finder = Finder(false, 0);
    let _ = expr.visit(&mut finder);
    finder.0
}

#[cfg(test)]
mod tests {

    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn wraps_only_non_aggregating_scalar_subqueries() {
        assert_eq!(
            rewritten("SELECT (SELECT d.x FROM d WHERE d.k = o.k) FROM o"),
            "SELECT (SELECT pg_single_value(d.x) FROM d WHERE d.k = o.k) FROM o"
        );
        for unchanged in [
            "SELECT (SELECT count(*) FROM d WHERE d.k = o.k) FROM o",
            "SELECT (SELECT (SELECT max(id) FROM e) + count(*) FROM d)",
            "SELECT (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM d)",
            "SELECT (SELECT x FROM d ORDER BY x LIMIT 2) FROM o",
            "SELECT (SELECT DISTINCT x FROM d) FROM o",
            "SELECT (SELECT 1)",
            "SELECT 1 FROM o WHERE o.x > ALL(SELECT x FROM d AS d)",
            "SELECT 1 FROM o WHERE o.x = ANY(SELECT x FROM d AS d)",
            "SELECT 1 FROM o WHERE o.x IN (SELECT x FROM d)",
            "SELECT 1 FROM o WHERE o.x > ALL(SELECT x FROM d AS d ORDER BY x LIMIT 1)",
        ] {
            assert_eq!(rewritten(unchanged), unchanged);
        }
    }
}
