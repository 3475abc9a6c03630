//! Output column names as PostgreSQL chooses them.
//!
//! DataFusion names an unaliased column after its expression (`Int64(1)`, `count(*)`);
//! PostgreSQL uses the function or type name, or `?column?` (its FigureColname rules). Clients
//! and BI tools show and key on these names, so the top-level select list gets explicit
//! aliases before planning.

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Ident, Query, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    Statement, TableAlias, TableAliasColumnDef, TableFactor,
};

/// Separates a column name from the suffix that keeps duplicates apart inside DataFusion; the
/// wire layer cuts it off ([`visible_name`]), so clients see PostgreSQL's duplicate names.
pub const DUPLICATE_MARK: char = '\u{1f}';

/// The name a client sees for an output column named `name` inside tarn.
pub fn visible_name(name: &str) -> &str {
    name.split(DUPLICATE_MARK).next().unwrap_or(name)
}

/// Gives every select list of the statement PostgreSQL's output names, and makes names that
/// repeat (`select null, null`, `select 1 as a, 2 as a`) unique for DataFusion, which refuses
/// duplicates where PostgreSQL allows them. Covers the outermost query, INSERT's source, CTEs,
/// derived tables and subqueries.
pub fn name_output_columns(statement: &mut Statement) {
    use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};
    use std::ops::ControlFlow;

    struct Namer;
    impl VisitorMut for Namer {
        type Break = ();
        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            name_query(query);
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            name_function_column(factor);
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Namer);
}

/// `FROM generate_series(1, 3) AS g` names its column `g` in PostgreSQL (and
/// `generate_series` without an alias); DataFusion calls it `value`.
fn name_function_column(factor: &mut TableFactor) {
    let TableFactor::Table {
        name,
        args: Some(_),
        alias,
        ..
    } = factor
    else {
        return;
    };
    let Some(function) = name.0.last().and_then(|p| p.as_ident()).map(fold) else {
        return;
    };
    if !matches!(function.as_str(), "generate_series" | "unnest") {
        return;
    }
    match alias {
        Some(a) if a.columns.is_empty() => {
            a.columns = vec![TableAliasColumnDef {
                name: a.name.clone(),
                data_type: None,
            }];
        }
        Some(_) => {}
        None => {
            *alias = Some(TableAlias {
                explicit: true,
                name: Ident::new(function.clone()),
                columns: vec![TableAliasColumnDef {
                    name: Ident::new(function),
                    data_type: None,
                }],
                at: None,
            });
        }
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
                let mut seen: std::collections::HashMap<String, usize> =
                    std::collections::HashMap::new();
                let mut unique = |name: String| {
                    let n = seen.entry(name.clone()).or_insert(0);
                    *n += 1;
                    if *n == 1 {
                        name
                    } else {
                        format!("{name}{DUPLICATE_MARK}{n}")
                    }
                };
                let wildcards = Wildcards::of(&select.projection);
                for item in &mut select.projection {
                    match item {
                        SelectItem::UnnamedExpr(expr) => {
                            let plain = figure_name(expr).is_none();
                            let name = strong_name(expr).unwrap_or_else(|| "?column?".to_owned());
                            let mut name = unique(name);
                            // `db.oid, db.*`: the wildcard repeats the column, under the same
                            // name as far as DataFusion is concerned.
                            if wildcards.may_repeat(expr) && !name.contains(DUPLICATE_MARK) {
                                name = format!("{name}{DUPLICATE_MARK}1");
                            }
                            // A plain column keeps its own (qualified) name when it is unique.
                            if plain && !name.contains(DUPLICATE_MARK) {
                                continue;
                            }
                            *item = SelectItem::ExprWithAlias {
                                expr: expr.clone(),
                                alias: Ident::with_quote('"', name),
                            };
                        }
                        SelectItem::ExprWithAlias { alias, .. } => {
                            let name = unique(fold(alias));
                            if name.contains(DUPLICATE_MARK) {
                                *alias = Ident::with_quote('"', name);
                            }
                        }
                        _ => {}
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

/// The wildcards of a select list, which may repeat a column also listed by name.
struct Wildcards {
    /// A bare `*`: every table's columns.
    all: bool,
    /// The qualifiers of `t.*` items, folded and joined with dots.
    tables: Vec<String>,
}

impl Wildcards {
    fn of(projection: &[SelectItem]) -> Self {
        let mut wildcards = Wildcards {
            all: false,
            tables: Vec::new(),
        };
        for item in projection {
            match item {
                SelectItem::Wildcard(_) => wildcards.all = true,
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    let parts: Option<Vec<String>> =
                        n.0.iter().map(|p| p.as_ident().map(fold)).collect();
                    if let Some(parts) = parts {
                        wildcards.tables.push(parts.join("."));
                    }
                }
                _ => {}
            }
        }
        wildcards
    }

    /// Whether the plain column `expr` is among the columns a wildcard expands to.
    fn may_repeat(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Identifier(_) => self.all,
            Expr::CompoundIdentifier(parts) if parts.len() > 1 => {
                let table: Vec<String> = parts[..parts.len() - 1].iter().map(fold).collect();
                self.all || self.tables.contains(&table.join("."))
            }
            _ => false,
        }
    }
}

/// The name PostgreSQL gives the output column of an unaliased select item `expr`.
pub(crate) fn output_name(expr: &Expr) -> String {
    strong_name(expr).unwrap_or_else(|| "?column?".to_owned())
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
                "?column?",
                "unnamed a",
                "unnamed t.b",
                "count",
                "int4",
                // `a::text` is named `a` too, like the plain column before it.
                "a\u{1f}2",
                "varchar",
                "now",
                "case",
                "one",
                "date",
                "?column?\u{1f}2",
                "kept"
            ]
        );
        assert_eq!(names("select 1, v * 2"), ["?column?", "?column?\u{1f}2"]);
        assert_eq!(names("select 1 + 1, now()"), ["?column?", "now"]);
        // Duplicates get a hidden suffix (DataFusion needs unique names); clients see PG's.
        assert_eq!(
            names("select 1 as a, 2 as a, a, null, null"),
            ["a", "a\u{1f}2", "a\u{1f}3", "?column?", "?column?\u{1f}2"]
        );
        assert_eq!(visible_name("a\u{1f}2"), "a");
    }

    #[test]
    fn columns_a_wildcard_repeats() {
        // DBeaver's `SELECT db.oid, db.*`: both columns are `oid` to the client.
        assert_eq!(
            names("select db.oid, db.*, x.a from pg_database db, x"),
            ["oid\u{1f}1", "db.*", "unnamed x.a"]
        );
        assert_eq!(names("select oid, * from t"), ["oid\u{1f}1", "*"]);
        assert_eq!(names("select oid from t"), ["unnamed oid"]);
    }
}
