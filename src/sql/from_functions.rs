//! Functions in FROM as PostgreSQL reads them, in forms DataFusion's planner accepts.
//!
//! - `LATERAL f(args)` (sqlparser's `TableFactor::Function`) is `f(args)`: a function in FROM
//!   may always name earlier FROM items in PostgreSQL, so LATERAL adds nothing, and the plain
//!   form is the one the other rewrites (`series.rs`, `json.rs`) and DataFusion know.
//! - `unnest(a, b, ...)` names its columns as PostgreSQL does (`AS u` alone names the one
//!   column `u`; no alias: `unnest`), and `WITH ORDINALITY`, which DataFusion refuses, becomes
//!   one more unnested array, `range(1, greatest(cardinality(a), ...) + 1)`: the positions,
//!   zipped with the elements as unnest zips its arrays (the shorter padded with NULLs).
//! - A function that is not a table function (`FROM string_to_array(s, ',') AS s`, as Grafana
//!   sends) yields one row whose one column is named after the alias (else the function). With
//!   constant arguments it becomes `(SELECT f(args) AS s) AS s`, which also expands the
//!   set-returning functions other rewrites turn into select-list `unnest` calls
//!   (`regexp_split_to_table`); with arguments naming columns of earlier FROM items,
//!   `UNNEST(make_array(f(args))) AS s(s)`, since DataFusion correlates an UNNEST relation with
//!   the FROM items before it, and a derived table not.
//!
//! [`normalize`] runs before the other rewrites; [`rewrite`] after them (after `json.rs` has
//! turned the json set-returning functions into UNNEST relations).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Ident, ObjectName, ObjectNamePart, Query, SelectItem,
    Statement, TableAlias, TableAliasColumnDef, TableFactor, TableFunctionArgs, Value, Visit,
    VisitMut, Visitor, VisitorMut,
};

use super::ast::{call, positions};

/// Functions in FROM that DataFusion plans as table functions (DataFusion's own and tarn's
/// registered ones); any other function in FROM is a scalar one.
const TABLE_FUNCTIONS: &[&str] = &[
    "generate_series",
    "range",
    "unnest",
    "pg_get_keywords",
    "table_changes",
    "table_changelog",
];

/// `LATERAL f(args)` becomes `f(args)` in every FROM clause of `statement`.
pub fn normalize(statement: &mut Statement) {
    let _ = statement.visit(&mut Normalize);
}

/// Rewrites `unnest` relations and scalar functions in FROM (see the module docs).
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut FromFunctions);
}

struct Normalize;

impl VisitorMut for Normalize {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Function {
            name,
            args,
            with_ordinality,
            alias,
            ..
        } = factor
        {
            *factor = TableFactor::Table {
                name: name.clone(),
                alias: alias.clone(),
                args: Some(TableFunctionArgs {
                    args: std::mem::take(args),
                    settings: None,
                }),
                with_hints: vec![],
                version: None,
                with_ordinality: *with_ordinality,
                partitions: vec![],
                json_path: None,
                sample: None,
                index_hints: vec![],
            };
        }
        ControlFlow::Continue(())
    }
}

struct FromFunctions;

/// Whether an expression names a column (so a function of it depends on the FROM items before).
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
    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        // A subquery's own columns are not the FROM items'; be conservative and count them.
        self.0 = true;
        ControlFlow::Break(())
    }
}

fn last_name(name: &ObjectName) -> Option<String> {
    name.0
        .last()
        .and_then(ObjectNamePart::as_ident)
        .map(|i| i.value.to_lowercase())
}

fn column(name: Ident) -> TableAliasColumnDef {
    TableAliasColumnDef {
        name,
        data_type: None,
    }
}

fn number(n: &str) -> Expr {
    Expr::Value(Value::Number(n.into(), false).into())
}

fn bigint(e: Expr) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e),
        data_type: DataType::BigInt(None),
        array: false,
        format: None,
    }
}

/// The 1-based positions of the longest of `arrays`.
fn ordinals(arrays: &[Expr]) -> Expr {
    if let [array] = arrays {
        return positions(array.clone());
    }
    let longest = call(
        "greatest",
        arrays
            .iter()
            .map(|a| bigint(call("cardinality", vec![a.clone()])))
            .collect(),
    );
    let end = Expr::BinaryOp {
        left: Box::new(longest),
        op: BinaryOperator::Plus,
        right: Box::new(number("1")),
    };
    call("range", vec![number("1"), end])
}

/// Completes `unnest(arrays) [WITH ORDINALITY] [AS alias[(columns)]]` into an UNNEST relation
/// without ordinality whose columns are all named.
fn unnest(mut arrays: Vec<Expr>, ordinality: bool, alias: Option<TableAlias>) -> TableFactor {
    let single = arrays.len() == 1;
    let mut alias = alias.unwrap_or_else(|| TableAlias {
        explicit: true,
        name: Ident::new("unnest"),
        columns: vec![],
        at: None,
    });
    let mut defaults: Vec<Ident> = if single {
        vec![alias.name.clone()]
    } else {
        vec![Ident::new("unnest"); arrays.len()]
    };
    if ordinality {
        arrays.push(ordinals(&arrays));
        defaults.push(Ident::new("ordinality"));
    }
    // PostgreSQL names the columns the alias leaves out by default; DataFusion needs distinct
    // names, so several unnamed arrays keep DataFusion's.
    let distinct = {
        let mut names: Vec<String> = alias.columns.iter().map(|c| c.name.value.clone()).collect();
        names.extend(
            defaults
                .iter()
                .skip(alias.columns.len())
                .map(|i| i.value.clone()),
        );
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        sorted.len() == names.len()
    };
    if distinct && alias.columns.len() < defaults.len() {
        let named = alias.columns.len();
        alias
            .columns
            .extend(defaults.into_iter().skip(named).map(column));
    }
    TableFactor::UNNEST {
        alias: Some(alias),
        array_exprs: arrays,
        with_offset: false,
        with_offset_alias: None,
        with_ordinality: false,
    }
}

/// `(SELECT value AS column) AS alias`.
fn one_row(value: Expr, alias: TableAlias, column: Ident) -> TableFactor {
    let projection = vec![SelectItem::ExprWithAlias {
        expr: value,
        alias: column,
    }];
    TableFactor::Derived {
        lateral: false,
        subquery: Box::new(super::ast::select(projection, vec![])),
        alias: Some(alias),
        sample: None,
    }
}

impl VisitorMut for FromFunctions {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_ordinality,
                ..
            } => {
                *factor = unnest(std::mem::take(array_exprs), *with_ordinality, alias.take());
            }
            TableFactor::Table {
                name,
                args: Some(args),
                alias,
                with_ordinality,
                ..
            } => {
                let Some(function) = last_name(name) else {
                    return ControlFlow::Continue(());
                };
                let Some(plain) = super::ast::plain_args(&args.args) else {
                    return ControlFlow::Continue(());
                };
                if function == "unnest" {
                    *factor = unnest(plain, *with_ordinality, alias.take());
                    return ControlFlow::Continue(());
                }
                if TABLE_FUNCTIONS.contains(&function.as_str()) || args.settings.is_some() {
                    return ControlFlow::Continue(());
                }
                let value = Expr::Function(match call(&function, plain.clone()) {
                    Expr::Function(mut f) => {
                        f.name = name.clone();
                        f
                    }
                    _ => unreachable!("call builds a function"),
                });
                let alias = alias.take().unwrap_or_else(|| TableAlias {
                    explicit: true,
                    name: Ident::new(function.clone()),
                    columns: vec![],
                    at: None,
                });
                let mut names = NamesColumn(false);
                let _ = plain.visit(&mut names);
                if names.0 || *with_ordinality {
                    *factor = unnest(
                        vec![call("make_array", vec![value])],
                        *with_ordinality,
                        Some(alias),
                    );
                } else {
                    let column = alias
                        .columns
                        .first()
                        .map(|c| c.name.clone())
                        .unwrap_or_else(|| alias.name.clone());
                    let alias = TableAlias {
                        columns: vec![],
                        ..alias
                    };
                    *factor = one_row(value, alias, column);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, |s| {
            normalize(s);
            rewrite(s);
        })
    }

    #[test]
    fn unnest_names_its_columns_and_counts_positions() {
        assert_eq!(
            rewritten("select * from t, unnest(t.a) as x"),
            "SELECT * FROM t, UNNEST(t.a) AS x (x)"
        );
        assert_eq!(
            rewritten("select * from unnest(array['a']) with ordinality as t(v, n)"),
            "SELECT * FROM UNNEST(ARRAY['a'], range(1, CAST(cardinality(ARRAY['a']) AS BIGINT) + 1)) AS t (v, n)"
        );
        assert_eq!(
            rewritten("select * from p cross join lateral unnest(p.s) as s"),
            "SELECT * FROM p CROSS JOIN UNNEST(p.s) AS s (s)"
        );
    }

    #[test]
    fn a_scalar_function_in_from_is_one_row() {
        assert_eq!(
            rewritten("select s[1] from string_to_array('a,b', ',') s"),
            "SELECT s[1] FROM (SELECT string_to_array('a,b', ',') AS s) s"
        );
        assert_eq!(
            rewritten("select * from t, upper(t.x) u"),
            "SELECT * FROM t, UNNEST(make_array(upper(t.x))) u (u)"
        );
        assert_eq!(
            rewritten("select * from generate_series(1, 3) g"),
            "SELECT * FROM generate_series(1, 3) g"
        );
    }
}
