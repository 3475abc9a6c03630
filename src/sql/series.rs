//! `FROM generate_series(a, b) s` whose bounds name columns (a lateral call, as in psql's
//! `\d` publication query: `generate_series(0, array_upper(pr.prattrs, 1)) s`).
//! DataFusion evaluates table-function arguments while planning, so a column there fails; the
//! call becomes `unnest(range(a, b + 1)) AS s(s)`, the same integers as a relation DataFusion
//! can correlate. Calls with constant bounds keep DataFusion's own `generate_series`, except
//! timestamp series: DataFusion simplifies a table function's arguments with Arrow's casts,
//! which refuse timestamp text PostgreSQL reads (`timestamp '2024-01-01 00:00'`), so
//! `generate_series(ts, ts, step)` becomes `unnest(generate_series(ts, ts, step))`, whose
//! arguments the analyzer reads PostgreSQL's way (`query/pg_literals.rs`).

use super::ast::call;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, DataType, Expr, FunctionArg, FunctionArgExpr, Ident, ObjectNamePart, Statement,
    TableAlias, TableAliasColumnDef, TableFactor, Value, Visit, VisitMut, Visitor, VisitorMut,
};

/// Rewrites every column-dependent two-argument `generate_series` in a FROM clause.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut Series);
}

struct Series;

struct NamesColumn(bool);

impl Visitor for NamesColumn {
    type Break = ();
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            self.0 = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

impl VisitorMut for Series {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let is_series = name
            .0
            .last()
            .and_then(ObjectNamePart::as_ident)
            .is_some_and(|i| i.value.eq_ignore_ascii_case("generate_series"));
        let bounds: Vec<Expr> = args
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect();
        if !is_series || bounds.len() != args.args.len() {
            return ControlFlow::Continue(());
        }
        if bounds.len() == 3 && bounds[..2].iter().any(is_timestamp) {
            // The scalar `generate_series` gets its arguments through the analyzer, which reads
            // timestamp text PostgreSQL's way.
            let alias = series_alias(alias.take());
            *factor = TableFactor::UNNEST {
                alias: Some(alias),
                array_exprs: vec![call("generate_series", bounds)],
                with_offset: false,
                with_offset_alias: None,
                with_ordinality: false,
            };
            return ControlFlow::Continue(());
        }
        if bounds.len() != 2 {
            return ControlFlow::Continue(());
        }
        let mut names = NamesColumn(false);
        let _ = bounds.visit(&mut names);
        if !names.0 {
            return ControlFlow::Continue(());
        }
        let end = Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(bounds[1].clone()))),
            op: BinaryOperator::Plus,
            right: Box::new(Expr::Value(Value::Number("1".into(), false).into())),
        };
        *factor = TableFactor::UNNEST {
            alias: Some(series_alias(alias.take())),
            array_exprs: vec![call("range", vec![bounds[0].clone(), end])],
            with_offset: false,
            with_offset_alias: None,
            with_ordinality: false,
        };
        ControlFlow::Continue(())
    }
}

/// Whether `e` is a timestamp constant: `TIMESTAMP '…'` or `'…'::timestamp[tz]`.
fn is_timestamp(e: &Expr) -> bool {
    let ty = match e {
        Expr::TypedString(t) => &t.data_type,
        Expr::Cast {
            expr, data_type, ..
        } if matches!(expr.as_ref(), Expr::Value(_)) => data_type,
        _ => return false,
    };
    matches!(ty, DataType::Timestamp(..))
}

/// The alias of a rewritten call: PostgreSQL names a function's relation and its one column
/// after the function (`generate_series`) or after the alias (`AS g` names both `g`).
fn series_alias(alias: Option<TableAlias>) -> TableAlias {
    let name = alias
        .as_ref()
        .map(|a| a.name.clone())
        .unwrap_or_else(|| Ident::new("generate_series"));
    let column = alias
        .as_ref()
        .and_then(|a| a.columns.first().map(|c| c.name.clone()))
        .unwrap_or_else(|| name.clone());
    TableAlias {
        explicit: true,
        name,
        columns: vec![TableAliasColumnDef {
            name: column,
            data_type: None,
        }],
        at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn column_bounds_become_an_unnested_range() {
        assert_eq!(
            rewritten("select s from generate_series(0, array_upper(t.a, 1)) s"),
            "SELECT s FROM UNNEST(range(0, (array_upper(t.a, 1)) + 1)) AS s (s)"
        );
        assert_eq!(
            rewritten("select * from generate_series(1, 3) g"),
            "SELECT * FROM generate_series(1, 3) g"
        );
        assert_eq!(
            rewritten(
                "select * from generate_series(timestamp '2024-01-01 00:00', \
                 '2024-01-02'::timestamp, interval '1 hour')"
            ),
            "SELECT * FROM UNNEST(generate_series(TIMESTAMP '2024-01-01 00:00', \
             '2024-01-02'::TIMESTAMP, INTERVAL '1 hour')) AS generate_series (generate_series)"
        );
    }
}
