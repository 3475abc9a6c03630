//! json/jsonb in the AST: what DataFusion's SQL planner cannot plan by itself becomes calls
//! of tarn's json functions (`query/functions/json.rs`).
//!
//! - `x::json`, `CAST(x AS jsonb)`, `jsonb '...'`: DataFusion has no such types ("Unsupported
//!   SQL type JSONB"); they become `tarn_cast_json(x)` / `tarn_cast_jsonb(x)`, whose results
//!   are Utf8 tagged json/jsonb.
//! - `json_agg(x ORDER BY o)` & co.: `tarn_json_agg_finish(array_agg(to_json(x) ORDER BY o))`,
//!   so ordering, FILTER and partial aggregation are array_agg's; the object aggregates
//!   aggregate keys (as text) and values side by side.
//! - `FROM jsonb_each(x) AS e(k, v)`: `UNNEST(tarn_json_rows(x, 'jsonb_each', 'key'),
//!   tarn_json_rows(x, 'jsonb_each', 'value')) AS e(k, v)`; in a select list,
//!   `jsonb_array_elements(x)` becomes `unnest(tarn_json_rows(x, ...))`; `jsonb_path_query`
//!   likewise over `tarn_jsonb_path_rows`, `json_to_record[set](x) AS r(a int, ...)` over one
//!   list per declared column, cast to its type.
//!
//! Runs after `names.rs`, so output columns keep PostgreSQL's names (`jsonb`, `json_agg`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArguments, Ident, ObjectName, ObjectNamePart, Query, SelectItem, SetExpr, Statement,
    TableAlias, TableAliasColumnDef, TableFactor, Value, VisitMut, VisitorMut,
};

use super::ast::call;

/// The set-returning json functions and their output columns (none: named after the alias or
/// the function, as a function returning a plain set of text is).
const SET_FUNCTIONS: &[(&str, &[&str])] = &[
    ("json_each", &["key", "value"]),
    ("jsonb_each", &["key", "value"]),
    ("json_each_text", &["key", "value"]),
    ("jsonb_each_text", &["key", "value"]),
    ("json_object_keys", &[]),
    ("jsonb_object_keys", &[]),
    ("json_array_elements", &["value"]),
    ("jsonb_array_elements", &["value"]),
    ("json_array_elements_text", &["value"]),
    ("jsonb_array_elements_text", &["value"]),
];

/// Rewrites the json constructs of `statement` (see the module docs).
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut JsonRewrite);
}

struct JsonRewrite;

fn function_name(name: &ObjectName) -> Option<String> {
    name.0
        .last()
        .and_then(ObjectNamePart::as_ident)
        .map(|i| i.value.to_lowercase())
}

fn set_function(name: &ObjectName) -> Option<(&'static str, &'static [&'static str])> {
    let name = function_name(name)?;
    SET_FUNCTIONS.iter().find(|(f, _)| *f == name).copied()
}

fn string(s: &str) -> Expr {
    Expr::Value(Value::SingleQuotedString(s.to_owned()).into())
}

/// The plain unnamed arguments of a call, if that is all it has.
fn plain_args(args: &FunctionArguments) -> Option<Vec<Expr>> {
    let FunctionArguments::List(list) = args else {
        return None;
    };
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// The one argument of a call that has exactly one.
fn single(args: Option<Vec<Expr>>) -> Option<Expr> {
    let mut args = args?;
    (args.len() == 1).then(|| args.remove(0))
}

/// `array_agg(arg ...)` keeping `f`'s ORDER BY, FILTER and DISTINCT.
fn array_agg_like(f: &Function, arg: Expr) -> Expr {
    let mut agg = f.clone();
    agg.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new("array_agg"))]);
    if let FunctionArguments::List(list) = &mut agg.args {
        list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))];
    }
    Expr::Function(agg)
}

fn rows_call(x: &Expr, function: &str, column: &str) -> Expr {
    call(
        "tarn_json_rows",
        vec![x.clone(), string(function), string(column)],
    )
}

fn rewrite_aggregate(f: &Function) -> Option<Expr> {
    if f.over.is_some() {
        return None;
    }
    let name = function_name(&f.name)?;
    let args = plain_args(&f.args)?;
    match (name.as_str(), args.as_slice()) {
        ("json_agg" | "jsonb_agg", [x]) => Some(call(
            &format!("tarn_{name}_finish"),
            vec![array_agg_like(f, call("to_json", vec![x.clone()]))],
        )),
        ("json_object_agg" | "jsonb_object_agg", [k, v]) => {
            let key = Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(k.clone()),
                data_type: DataType::Text,
                array: false,
                format: None,
            };
            Some(call(
                &format!("tarn_{name}_finish"),
                vec![
                    array_agg_like(f, key),
                    array_agg_like(f, call("to_json", vec![v.clone()])),
                ],
            ))
        }
        _ => None,
    }
}

/// `jsonb_array_elements(x)` & co. in a select list: `unnest(tarn_json_rows(x, ...))`.
fn rewrite_select_list(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => {
            for item in &mut select.projection {
                let expr = match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                    _ => continue,
                };
                let Expr::Function(f) = expr else { continue };
                if let Some(rows) = path_rows(f.name.clone(), plain_args(&f.args)) {
                    *expr = call("unnest", vec![rows]);
                    continue;
                }
                let Some((name, columns)) = set_function(&f.name) else {
                    continue;
                };
                let Some(x) = single(plain_args(&f.args)) else {
                    continue;
                };
                if columns.len() > 1 {
                    continue;
                }
                let column = columns.first().copied().unwrap_or("");
                *expr = call("unnest", vec![rows_call(&x, name, column)]);
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_select_list(left);
            rewrite_select_list(right);
        }
        _ => {}
    }
}

/// `UNNEST(exprs) AS relation(columns)`.
fn unnest(exprs: Vec<Expr>, relation: Ident, columns: Vec<Ident>) -> TableFactor {
    TableFactor::UNNEST {
        alias: Some(TableAlias {
            explicit: true,
            name: relation,
            columns: columns
                .into_iter()
                .map(|name| TableAliasColumnDef {
                    name,
                    data_type: None,
                })
                .collect(),
            at: None,
        }),
        array_exprs: exprs,
        with_offset: false,
        with_offset_alias: None,
        with_ordinality: false,
    }
}

/// `jsonb_path_query(doc, path [, vars [, silent]])`: the list of its rows.
fn path_rows(name: ObjectName, args: Option<Vec<Expr>>) -> Option<Expr> {
    let args = args?;
    (function_name(&name)? == "jsonb_path_query" && (2..=4).contains(&args.len()))
        .then(|| call("tarn_jsonb_path_rows", args))
}

/// `FROM json_to_record(x) AS r(a int, b text)` (and `jsonb_`, `_recordset`): `UNNEST` over
/// one list per declared column, each cast to the column's type (json/jsonb columns keep
/// the member's text).
fn record_function(
    name: &ObjectName,
    args: &[FunctionArg],
    alias: Option<&TableAlias>,
) -> Option<TableFactor> {
    let function = function_name(name)?;
    let function = [
        "json_to_record",
        "jsonb_to_record",
        "json_to_recordset",
        "jsonb_to_recordset",
    ]
    .into_iter()
    .find(|f| *f == function)?;
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(x))] = args else {
        return None;
    };
    let alias = alias?;
    if alias.columns.is_empty() || alias.columns.iter().any(|c| c.data_type.is_none()) {
        return None;
    }
    let exprs = alias
        .columns
        .iter()
        .map(|c| {
            let rows = rows_call(x, function, &c.name.value);
            match c.data_type.clone() {
                Some(DataType::JSON | DataType::JSONB) | None => rows,
                Some(t) => Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(rows),
                    data_type: DataType::Array(ArrayElemTypeDef::SquareBracket(Box::new(t), None)),
                    array: false,
                    format: None,
                },
            }
        })
        .collect();
    Some(TableFactor::UNNEST {
        alias: Some(TableAlias {
            explicit: true,
            name: alias.name.clone(),
            columns: alias
                .columns
                .iter()
                .map(|c| TableAliasColumnDef {
                    name: c.name.clone(),
                    data_type: None,
                })
                .collect(),
            at: None,
        }),
        array_exprs: exprs,
        with_offset: false,
        with_offset_alias: None,
        with_ordinality: false,
    })
}

impl VisitorMut for JsonRewrite {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let replacement = match expr {
            Expr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr: inner,
                data_type: data_type @ (DataType::JSON | DataType::JSONB),
                format: None,
                ..
            } => {
                let name = if matches!(data_type, DataType::JSON) {
                    "tarn_cast_json"
                } else {
                    "tarn_cast_jsonb"
                };
                Some(call(name, vec![inner.as_ref().clone()]))
            }
            Expr::TypedString(ts) if matches!(ts.data_type, DataType::JSON | DataType::JSONB) => {
                let name = if matches!(ts.data_type, DataType::JSON) {
                    "tarn_cast_json"
                } else {
                    "tarn_cast_jsonb"
                };
                Some(call(name, vec![Expr::Value(ts.value.clone())]))
            }
            Expr::Function(f) => rewrite_aggregate(f),
            _ => None,
        };
        if let Some(r) = replacement {
            *expr = r;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        rewrite_select_list(&mut query.body);
        ControlFlow::Continue(())
    }

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
        let plain: Option<Vec<Expr>> = args
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect();
        if let Some(rows) = path_rows(name.clone(), plain.clone()) {
            let relation = alias
                .as_ref()
                .map(|a| a.name.clone())
                .unwrap_or_else(|| Ident::new("jsonb_path_query"));
            let column = alias
                .as_ref()
                .and_then(|a| a.columns.first().map(|c| c.name.clone()))
                .unwrap_or_else(|| relation.clone());
            *factor = unnest(vec![rows], relation, vec![column]);
            return ControlFlow::Continue(());
        }
        let Some((function, columns)) = set_function(name) else {
            if let Some(record) = record_function(name, &args.args, alias.as_ref()) {
                *factor = record;
            }
            return ControlFlow::Continue(());
        };
        let Some(x) = single(plain) else {
            return ControlFlow::Continue(());
        };
        let relation = alias
            .as_ref()
            .map(|a| a.name.clone())
            .unwrap_or_else(|| Ident::new(function));
        let given: Vec<Ident> = alias
            .as_ref()
            .map(|a| a.columns.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default();
        let (exprs, names): (Vec<Expr>, Vec<Ident>) = if columns.is_empty() {
            let name = given.first().cloned().unwrap_or_else(|| relation.clone());
            (vec![rows_call(&x, function, "")], vec![name])
        } else {
            columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let name = given.get(i).cloned().unwrap_or_else(|| Ident::new(*c));
                    (rows_call(&x, function, c), name)
                })
                .unzip()
        };
        *factor = unnest(exprs, relation, names);
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn casts_become_calls() {
        assert_eq!(
            rewritten("select '{}'::jsonb, cast(x as json), jsonb '[1]', x::text from t"),
            "SELECT tarn_cast_jsonb('{}'), tarn_cast_json(x), tarn_cast_jsonb('[1]'), x::TEXT FROM t"
        );
    }

    #[test]
    fn aggregates_become_array_agg() {
        assert_eq!(
            rewritten("select jsonb_agg(a order by id), json_object_agg(k, v) from t"),
            "SELECT tarn_jsonb_agg_finish(array_agg(to_json(a) ORDER BY id)), \
             tarn_json_object_agg_finish(array_agg(CAST(k AS TEXT)), array_agg(to_json(v))) FROM t"
        );
    }

    #[test]
    fn set_functions_become_unnest() {
        assert_eq!(
            rewritten("select * from jsonb_each('{}') e, jsonb_object_keys(d) as k"),
            "SELECT * FROM UNNEST(tarn_json_rows('{}', 'jsonb_each', 'key'), \
             tarn_json_rows('{}', 'jsonb_each', 'value')) AS e (key, value), \
             UNNEST(tarn_json_rows(d, 'jsonb_object_keys', '')) AS k (k)"
        );
        assert_eq!(
            rewritten("select jsonb_array_elements_text(x) from t"),
            "SELECT unnest(tarn_json_rows(x, 'jsonb_array_elements_text', 'value')) FROM t"
        );
    }
}
