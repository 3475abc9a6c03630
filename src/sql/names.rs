//! Output column names as PostgreSQL chooses them.
//!
//! DataFusion names an unaliased column after its expression (`Int64(1)`, `count(*)`);
//! PostgreSQL uses the function or type name, or `?column?` (its FigureColname rules). Clients
//! and BI tools show and key on these names, so the top-level select list gets explicit
//! aliases before planning.

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Ident, Query, SelectItem, SetExpr, Statement,
};

/// Adds PostgreSQL's names to the unaliased items of the statement's outermost select list.
pub fn name_output_columns(statement: &mut Statement) {
    if let Statement::Query(query) = statement {
        name_query(query);
    }
}

fn name_query(query: &mut Query) {
    let mut body = query.body.as_mut();
    // For UNION & co., PostgreSQL takes the names of the leftmost SELECT.
    loop {
        match body {
            SetExpr::SetOperation { left, .. } => body = left.as_mut(),
            SetExpr::Query(q) => {
                name_query(q);
                return;
            }
            SetExpr::Select(select) => {
                // DataFusion refuses duplicate output names (PostgreSQL allows them): a figured
                // name that another item also has is left to DataFusion's unique naming.
                let names: Vec<Option<String>> = select
                    .projection
                    .iter()
                    .map(|item| match item {
                        SelectItem::UnnamedExpr(e) => strong_name(e).or_else(|| figure_name(e)),
                        SelectItem::ExprWithAlias { alias, .. } => Some(fold(alias)),
                        _ => None,
                    })
                    .collect();
                let count = |n: &str| names.iter().filter(|m| m.as_deref() == Some(n)).count();
                for item in &mut select.projection {
                    if let SelectItem::UnnamedExpr(expr) = item
                        && let Some(name) = figure_name(expr)
                        && count(&name) == 1
                    {
                        *item = SelectItem::ExprWithAlias {
                            expr: expr.clone(),
                            alias: Ident::with_quote('"', name),
                        };
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

/// PostgreSQL's name for an expression; `None` where DataFusion already agrees (plain columns).
fn figure_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => None,
        _ => Some(strong_name(expr).unwrap_or_else(|| "?column?".to_owned())),
    }
}

/// The name an expression gives its column, if it gives one.
fn strong_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(fold(ident)),
        Expr::CompoundIdentifier(parts) => parts.last().map(fold),
        Expr::Nested(inner) => strong_name(inner),
        Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.to_lowercase()),
        Expr::Cast {
            kind: CastKind::DoubleColon | CastKind::Cast | CastKind::TryCast | CastKind::SafeCast,
            expr,
            data_type,
            ..
        } => strong_name(expr).or_else(|| Some(type_name(data_type))),
        Expr::TypedString(ts) => Some(type_name(&ts.data_type)),
        Expr::Case { .. } => Some("case".to_owned()),
        Expr::Array(_) => Some("array".to_owned()),
        Expr::Exists { .. } => Some("exists".to_owned()),
        Expr::Extract { .. } => Some("extract".to_owned()),
        Expr::Substring { .. } => Some("substring".to_owned()),
        Expr::Position { .. } => Some("position".to_owned()),
        Expr::Trim { .. } => Some("btrim".to_owned()),
        Expr::Overlay { .. } => Some("overlay".to_owned()),
        Expr::Ceil { .. } => Some("ceil".to_owned()),
        Expr::Floor { .. } => Some("floor".to_owned()),
        Expr::Interval(_) => Some("interval".to_owned()),
        Expr::Subquery(q) => subquery_name(q),
        _ => None,
    }
}

/// A scalar subquery is named after its single output column.
fn subquery_name(query: &Query) -> Option<String> {
    match query.body.as_ref() {
        SetExpr::Select(select) => match select.projection.first()? {
            SelectItem::ExprWithAlias { alias, .. } => Some(fold(alias)),
            SelectItem::UnnamedExpr(e) => strong_name(e),
            _ => None,
        },
        _ => None,
    }
}

fn fold(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// PostgreSQL's internal name for a type, as used for a cast's column name.
fn type_name(data_type: &DataType) -> String {
    use DataType as T;
    match data_type {
        T::SmallInt(_) | T::Int2(_) => "int2",
        T::Int(_) | T::Integer(_) | T::Int4(_) => "int4",
        T::BigInt(_) | T::Int8(_) => "int8",
        T::Real | T::Float4 => "float4",
        T::Double(_) | T::DoublePrecision | T::Float8 | T::Float(_) => "float8",
        T::Numeric(_) | T::Decimal(_) | T::Dec(_) => "numeric",
        T::Boolean | T::Bool => "bool",
        T::Text | T::String(_) => "text",
        T::Varchar(_) | T::CharVarying(_) | T::CharacterVarying(_) => "varchar",
        T::Char(_) | T::Character(_) => "bpchar",
        T::Bytea => "bytea",
        T::Date => "date",
        T::Time(..) => "time",
        T::Timestamp(_, tz) => match tz {
            datafusion::sql::sqlparser::ast::TimezoneInfo::WithTimeZone
            | datafusion::sql::sqlparser::ast::TimezoneInfo::Tz => "timestamptz",
            _ => "timestamp",
        },
        T::Interval { .. } => "interval",
        T::Uuid => "uuid",
        T::JSON => "json",
        T::JSONB => "jsonb",
        other => return other.to_string().to_lowercase(),
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Command, parse};
    use datafusion::sql::parser::Statement as DFStatement;

    fn names(sql: &str) -> Vec<String> {
        let Command::Plan(DFStatement::Statement(s)) = parse(sql).unwrap().remove(0) else {
            panic!("not a query")
        };
        let Statement::Query(q) = *s else { panic!() };
        let SetExpr::Select(select) = *q.body else {
            panic!()
        };
        select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                SelectItem::UnnamedExpr(e) => format!("unnamed {e}"),
                other => format!("{other}"),
            })
            .collect()
    }

    #[test]
    fn postgres_column_names() {
        assert_eq!(
            names(
                "select 1, a, t.b, count(*), 1::int, a::text, 'x'::varchar(3), now(), case when true then 1 end, (select 1 as one), DATE '2026-01-01', a + 1, c AS kept"
            ),
            [
                "unnamed 1",
                "unnamed a",
                "unnamed t.b",
                "count",
                "int4",
                "unnamed a::TEXT",
                "varchar",
                "now",
                "case",
                "one",
                "date",
                "unnamed a + 1",
                "kept"
            ]
        );
        assert_eq!(names("select 1, v * 2"), ["unnamed 1", "unnamed v * 2"]);
        assert_eq!(names("select 1 + 1, now()"), ["?column?", "now"]);
        // Duplicates stay unnamed (DataFusion needs unique names).
        assert_eq!(
            names("select 1, 2, count(*)"),
            ["unnamed 1", "unnamed 2", "count"]
        );
    }
}
