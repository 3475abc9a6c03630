//! The ORDER BY of a UNION, INTERSECT or EXCEPT, checked as PostgreSQL checks it before
//! planning.
//!
//! Such an ORDER BY may name only the result's columns (by name or position). DataFusion is
//! looser and vaguer: it sorts `UNION … ORDER BY v + 1` where PostgreSQL refuses the expression
//! (0A000), and reports a name that is no result column as a DISTINCT rule (42P10) or a union
//! schema mismatch (42000) where PostgreSQL says the column (42703) or the table (42P01) does
//! not exist. A key that is a plain name is checked only when every result column's name is
//! known from the first SELECT (aliases and column references; `count(*)` is named by
//! PostgreSQL's own rules, left to the planner).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, OrderByKind, Query, SelectItem, SetExpr, Statement, Value, Visit, Visitor,
};

use super::SqlError;

/// Fails if the ORDER BY of a set operation in `statement` names what PostgreSQL refuses.
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
        match check_query(query) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

fn check_query(query: &Query) -> Result<(), SqlError> {
    if !matches!(query.body.as_ref(), SetExpr::SetOperation { .. }) {
        return Ok(());
    }
    let Some(OrderByKind::Expressions(keys)) = query.order_by.as_ref().map(|o| &o.kind) else {
        return Ok(());
    };
    let names = output_names(&query.body);
    for key in keys {
        let mut expr = &key.expr;
        while let Expr::Nested(inner) = expr {
            expr = inner;
        }
        match expr {
            Expr::Value(v) if matches!(v.value, Value::Number(..)) => {}
            Expr::Identifier(id) => {
                if let Some(names) = &names
                    && !names.contains(&folded(id))
                {
                    return Err(SqlError::UndefinedColumn(format!(
                        "column \"{}\" does not exist: an ORDER BY of UNION, INTERSECT or \
                         EXCEPT names the columns of its result",
                        folded(id)
                    )));
                }
            }
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                return Err(SqlError::UndefinedTable(format!(
                    "missing FROM-clause entry for table \"{}\": an ORDER BY of UNION, \
                     INTERSECT or EXCEPT names the columns of its result, unqualified",
                    folded(&parts[0])
                )));
            }
            _ => {
                return Err(SqlError::Unsupported(
                    "invalid UNION/INTERSECT/EXCEPT ORDER BY clause: only result column names \
                     can be used, not expressions or functions; add the expression to every \
                     SELECT, or move the UNION into a FROM clause"
                        .into(),
                ));
            }
        }
    }
    Ok(())
}

/// The names of a set operation's result columns, from its first SELECT; None when one of
/// them is not known here (a `*`, an unnamed expression).
fn output_names(body: &SetExpr) -> Option<Vec<String>> {
    match body {
        SetExpr::SetOperation { left, .. } => output_names(left),
        SetExpr::Query(query) => output_names(&query.body),
        SetExpr::Select(select) => select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => Some(folded(alias)),
                SelectItem::UnnamedExpr(Expr::Identifier(id)) => Some(folded(id)),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                    parts.last().map(folded)
                }
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// A name as PostgreSQL compares it: unquoted names fold to lower case.
fn folded(id: &Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn sqlstate(sql: &str) -> Option<&'static str> {
        let statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("test SQL parses")
            .remove(0);
        check(&statement).err().map(|e| e.sqlstate())
    }

    #[test]
    fn set_operation_order_names_result_columns() {
        for ok in [
            "SELECT v FROM a UNION SELECT v FROM b ORDER BY v DESC",
            "SELECT V FROM a UNION SELECT v FROM b ORDER BY v",
            "SELECT a.v AS w FROM a EXCEPT SELECT v FROM b ORDER BY (w), 1",
            "SELECT count(*) FROM a UNION SELECT 1 ORDER BY count",
            "SELECT v FROM a ORDER BY v + 1",
            "SELECT * FROM (SELECT v FROM a UNION SELECT v FROM b) s ORDER BY v + 1",
        ] {
            assert_eq!(sqlstate(ok), None, "{ok}");
        }
        assert_eq!(
            sqlstate("SELECT v FROM a UNION SELECT v FROM b ORDER BY tag"),
            Some("42703")
        );
        assert_eq!(
            sqlstate("SELECT v AS w FROM a UNION SELECT v FROM b ORDER BY v"),
            Some("42703")
        );
        assert_eq!(
            sqlstate("SELECT V FROM a UNION SELECT v FROM b ORDER BY \"V\""),
            Some("42703")
        );
        assert_eq!(
            sqlstate("SELECT v FROM a UNION SELECT v FROM b ORDER BY a.v"),
            Some("42P01")
        );
        assert_eq!(
            sqlstate("SELECT v FROM a UNION SELECT v FROM b ORDER BY v + 1"),
            Some("0A000")
        );
        assert_eq!(
            sqlstate("SELECT (SELECT v FROM a UNION SELECT 1 ORDER BY lower(v)) FROM t"),
            Some("0A000")
        );
    }
}
