//! PostgreSQL's shape rules for `WITH RECURSIVE` (its `checkWellFormedRecursion`), checked
//! before planning.
//!
//! DataFusion plans a self-referencing CTE of another shape in its own way: a second
//! `UNION ALL` after the recursive term fails with 42P01 (the CTE is not visible in the
//! outer union), and an aggregate in the recursive term (`select count(*) from t`) produces
//! a row in every iteration, so the query never ends. PostgreSQL refuses both with 42P19
//! (invalid_recursion), as this check does:
//! - the CTE's query must be `non-recursive term UNION [ALL] recursive term`;
//! - the non-recursive term must not name the CTE;
//! - the recursive term's own select list and HAVING must not aggregate.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, ObjectName, ObjectNamePart, Query, SetExpr, SetOperator, Statement, Visit, Visitor,
};

use super::SqlError;

/// Fails with 42P19 if a recursive CTE of `statement` has a shape PostgreSQL refuses.
pub fn check(statement: &Statement) -> Result<(), SqlError> {
    match statement.visit(&mut Checker) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Checker;

impl Visitor for Checker {
    type Break = SqlError;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<SqlError> {
        let Some(with) = query.with.as_ref().filter(|w| w.recursive) else {
            return ControlFlow::Continue(());
        };
        for cte in &with.cte_tables {
            if let Err(e) = check_cte(&cte.alias.name, &cte.query.body) {
                return ControlFlow::Break(e);
            }
        }
        ControlFlow::Continue(())
    }
}

fn invalid(message: String) -> SqlError {
    SqlError::InvalidRecursion(message)
}

fn check_cte(name: &Ident, body: &SetExpr) -> Result<(), SqlError> {
    if !names(body, name) {
        return Ok(());
    }
    let SetExpr::SetOperation {
        op: SetOperator::Union,
        left,
        right,
        ..
    } = body
    else {
        return Err(invalid(format!(
            "recursive query \"{}\" does not have the form non-recursive-term UNION [ALL] \
             recursive-term",
            name.value
        )));
    };
    if names(left, name) {
        return Err(invalid(format!(
            "recursive reference to query \"{}\" must not appear within its non-recursive term",
            name.value
        )));
    }
    if let SetExpr::Select(select) = right.as_ref() {
        let mut aggregates = Aggregates::default();
        let _ = select.projection.visit(&mut aggregates);
        let _ = select.having.visit(&mut aggregates);
        if aggregates.found {
            return Err(invalid(
                "aggregate functions are not allowed in a recursive query's recursive term"
                    .to_owned(),
            ));
        }
    }
    Ok(())
}

/// Whether `body` reads a relation called `name` (unqualified, as a CTE is named).
fn names(body: &SetExpr, name: &Ident) -> bool {
    struct Names<'a>(&'a Ident);
    impl Visitor for Names<'_> {
        type Break = ();
        fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
            if let [ObjectNamePart::Identifier(i)] = relation.0.as_slice()
                && same_name(i, self.0)
            {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    body.visit(&mut Names(name)).is_break()
}

fn same_name(a: &Ident, b: &Ident) -> bool {
    match (a.quote_style, b.quote_style) {
        (None, None) => a.value.eq_ignore_ascii_case(&b.value),
        _ => a.value == b.value,
    }
}

/// PostgreSQL's built-in aggregate functions (those a recursive term could name).
const AGGREGATES: &[&str] = &[
    "avg",
    "count",
    "sum",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "bit_and",
    "bit_or",
    "bit_xor",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "corr",
    "covar_pop",
    "covar_samp",
    "percentile_cont",
    "percentile_disc",
    "mode",
];

/// Finds an aggregate call outside subqueries (a window function is no aggregate here).
#[derive(Default)]
struct Aggregates {
    found: bool,
    depth: usize,
}

impl Visitor for Aggregates {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr
            && self.depth == 0
            && f.over.is_none()
            && let [ObjectNamePart::Identifier(name)] = f.name.0.as_slice()
            && AGGREGATES
                .iter()
                .any(|a| name.value.eq_ignore_ascii_case(a))
        {
            self.found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn code(sql: &str) -> Option<&'static str> {
        let statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        check(&statement).err().map(|e| e.sqlstate())
    }

    #[test]
    fn refuses_what_postgres_refuses() {
        assert_eq!(
            code(
                "with recursive t(n) as (select 1 union all select n + 1 from t where n < 5 \
                 union all select 2) select * from t"
            ),
            Some("42P19")
        );
        assert_eq!(
            code(
                "with recursive t(n) as (select 1 union all select count(*) from t) select * from t"
            ),
            Some("42P19")
        );
        assert_eq!(
            code("with recursive t(n) as (select n from t) select * from t"),
            Some("42P19")
        );
    }

    #[test]
    fn accepts_well_formed_recursion() {
        for sql in [
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 5) \
             select * from t",
            // Aggregates in a subquery or a window of the recursive term, or in the anchor.
            "with recursive t(n) as (select count(*) from u union all \
             select (select max(x) from u) + n from t where n < 5) select * from t",
            "with recursive t(n) as (select 1 union all \
             select row_number() over () + n from t where n < 5) select * from t",
            // Not self-referencing: any shape.
            "with recursive t(n) as (select count(*) from u) select * from t",
        ] {
            assert_eq!(code(sql), None, "{sql}");
        }
    }
}
