//! Numeric quotients and averages a query returns, with PostgreSQL's per-value scale.
//!
//! PostgreSQL gives every numeric value its own display scale, and a quotient's depends on its
//! operands' values (`1 / 8.0` is 0.12500000000000000000, `3 / 2.0` 1.5000000000000000); `avg`
//! of integers or numerics is such a quotient (sum / count, in numeric). Arrow decimals have one
//! scale per column, and DataFusion's `avg` of integers is a float. So the columns of the
//! outermost select list whose expression is `a / b` over numerics (and integers), or `avg(x)`
//! of integers or numerics, are computed by `functions::numeric_division` as exact numeric
//! text, tagged `numeric` for the wire layer. `avg(x)` becomes `sum(x)` and `count(x)` added
//! next to it (same DISTINCT, FILTER, window) and divided in the select list; `variance`,
//! `var_pop`, `stddev`, `stddev_pop` of an aggregate likewise (`functions::numeric_variance`,
//! from the sums of the values and of their squares). A returned `coalesce` of numerics of
//! different scales (`coalesce(price, 0)`) prints each value with its own
//! (`functions::numeric_coalesce`), and so does a returned `lag` / `lead` whose default has
//! another scale than its values (`lag(amount, 2, 0)`).
//!
//! Only values the query returns are rewritten — right after planning, so Describe reports
//! them as numeric too — never values other expressions consume (a filter, an ORDER BY key,
//! arithmetic), which stay DataFusion decimals. A scalar subquery returned as a column is
//! rewritten the same way.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Column, DFSchema, Result};
use datafusion::logical_expr::expr::{AggregateFunction, WindowFunction};
use datafusion::logical_expr::{
    Aggregate, BinaryExpr, Expr, ExprSchemable, Filter, LogicalPlan, Operator, Projection,
    ScalarUDF, Subquery, Window, WindowFunctionDefinition, cast,
};

use super::functions::numeric_coalesce::PgNumericCoalesce;
use super::functions::numeric_division::PgNumericDiv;
use super::functions::numeric_variance::PgNumericVariance;

/// Rewrites the outermost select list of `plan` (see the module docs).
pub fn rewrite(plan: LogicalPlan) -> Result<LogicalPlan> {
    rewrite_top(plan, &HashSet::new())
}

/// `plan` with its returned quotients rewritten; `sorted` names columns an ORDER BY above
/// reads, which keep their type.
fn rewrite_top(plan: LogicalPlan, sorted: &HashSet<String>) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Sort(mut sort) => {
            let mut sorted = sorted.clone();
            for key in &sort.expr {
                sorted.extend(key.expr.column_refs().iter().map(|c| c.name.clone()));
            }
            let input = Arc::unwrap_or_clone(sort.input);
            sort.input = Arc::new(rewrite_top(input, &sorted)?);
            Ok(LogicalPlan::Sort(sort))
        }
        LogicalPlan::Limit(mut limit) => {
            let input = Arc::unwrap_or_clone(limit.input);
            limit.input = Arc::new(rewrite_top(input, sorted)?);
            Ok(LogicalPlan::Limit(limit))
        }
        LogicalPlan::Projection(projection) => rewrite_projection(projection, sorted),
        other => Ok(other),
    }
}

/// `expr` without its aliases (a renamed call can carry two: DataFusion's and the select
/// list's).
fn unaliased(mut expr: &Expr) -> &Expr {
    while let Expr::Alias(alias) = expr {
        expr = alias.expr.as_ref();
    }
    expr
}

fn is_exact(ty: &DataType) -> bool {
    PgNumericDiv::takes(ty)
}

fn numeric_div(a: Expr, b: Expr) -> Expr {
    ScalarUDF::new_from_impl(PgNumericDiv::default()).call(vec![a, b])
}

fn rewrite_projection(projection: Projection, sorted: &HashSet<String>) -> Result<LogicalPlan> {
    let Projection {
        expr: exprs,
        input,
        schema,
        ..
    } = projection;
    let mut input = Arc::unwrap_or_clone(input);
    let mut changed = false;
    // Columns of the input this select list reads other than as they are.
    let mut shared = HashSet::new();
    for expr in &exprs {
        if !matches!(unaliased(expr), Expr::Column(_)) {
            shared.extend(expr.column_refs().iter().map(|c| c.name.clone()));
        }
    }
    if matches!(input, LogicalPlan::Sort(_) | LogicalPlan::Limit(_)) {
        // `ORDER BY` a column the select list drops: the select list is the projection below
        // the sort. Its columns this one reads other than as they are keep their type.
        let mut kept = sorted.clone();
        for expr in &exprs {
            let bare = matches!(unaliased(expr), Expr::Column(_));
            if !bare {
                kept.extend(expr.column_refs().iter().map(|c| c.name.clone()));
            }
        }
        let before = input.schema().clone();
        input = rewrite_top(input, &kept)?;
        changed = input.schema() != &before;
    }
    let mut out = Vec::with_capacity(exprs.len());
    for (i, expr) in exprs.into_iter().enumerate() {
        let (qualifier, field) = schema.qualified_field(i);
        if sorted.contains(field.name()) {
            out.push(expr);
            continue;
        }
        let inner = unaliased(&expr);
        let replaced = match inner {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Divide,
                right,
            }) => {
                let types = (
                    left.get_type(input.schema()).ok(),
                    right.get_type(input.schema()).ok(),
                );
                match types {
                    (Some(l), Some(r))
                        if is_exact(&l)
                            && is_exact(&r)
                            && (matches!(l, DataType::Decimal128(..))
                                || matches!(r, DataType::Decimal128(..))) =>
                    {
                        Some(numeric_div(left.as_ref().clone(), right.as_ref().clone()))
                    }
                    _ => None,
                }
            }
            Expr::Column(column) => match split_avg(input.clone(), column)? {
                Some((new_input, value)) => {
                    input = new_input;
                    Some(value)
                }
                None if !shared.contains(&column.name) => {
                    match shift_as_text(input.clone(), column)? {
                        Some(new_input) => {
                            input = new_input;
                            Some(numeric_tag(Expr::Column(column.clone())))
                        }
                        None => None,
                    }
                }
                None => None,
            },
            Expr::ScalarFunction(call) if call.name() == "coalesce" => {
                let types = call
                    .args
                    .iter()
                    .map(|a| a.get_type(input.schema()))
                    .collect::<Result<Vec<_>>>()?;
                PgNumericCoalesce::needed(&types).then(|| {
                    ScalarUDF::new_from_impl(PgNumericCoalesce::default()).call(call.args.clone())
                })
            }
            Expr::ScalarSubquery(subquery) => {
                let plan = Arc::unwrap_or_clone(Arc::clone(&subquery.subquery));
                let before = plan.schema().field(0).data_type().clone();
                let plan = rewrite(plan)?;
                (plan.schema().field(0).data_type() != &before).then(|| {
                    Expr::ScalarSubquery(Subquery {
                        subquery: Arc::new(plan),
                        outer_ref_columns: subquery.outer_ref_columns.clone(),
                        spans: subquery.spans.clone(),
                    })
                })
            }
            _ => None,
        };
        match replaced {
            Some(e) => {
                changed = true;
                out.push(e.alias_qualified(qualifier.cloned(), field.name()));
            }
            None => out.push(expr),
        }
    }
    if !changed {
        return Ok(LogicalPlan::Projection(Projection::try_new_with_schema(
            out,
            Arc::new(input),
            schema,
        )?));
    }
    Ok(LogicalPlan::Projection(Projection::try_new(
        out,
        Arc::new(input),
    )?))
}

/// The `avg` (or `variance`, `stddev`, ...) of integers or numerics behind `column`, if
/// `plan` computes it (an aggregate, under a HAVING filter, or a window): `plan` with `sum`,
/// `count` (and the sum of squares) of the same values added, and the numeric text computed
/// from them.
fn split_avg(plan: LogicalPlan, column: &Column) -> Result<Option<(LogicalPlan, Expr)>> {
    match plan {
        LogicalPlan::Filter(filter) => {
            let Some((input, value)) = split_avg(Arc::unwrap_or_clone(filter.input), column)?
            else {
                return Ok(None);
            };
            let filter = Filter::try_new(filter.predicate, Arc::new(input))?;
            Ok(Some((LogicalPlan::Filter(filter), value)))
        }
        LogicalPlan::Aggregate(aggregate) => split_aggregate(aggregate, column),
        LogicalPlan::Window(window) => split_window(window, column),
        _ => Ok(None),
    }
}

/// `x` (numeric text) tagged `numeric`, for the wire layer.
fn numeric_tag(x: Expr) -> Expr {
    ScalarUDF::new_from_impl(PgNumericCoalesce::default()).call(vec![x])
}

/// `lag(x, n, default)` / `lead` behind `column` whose `x` and `default` are numerics of
/// different scales (`lag(amount, 2, 0)`): computed over numeric text, so each value keeps
/// its own scale as in PostgreSQL (`100.00`, `0`). `plan` with that window function changed.
fn shift_as_text(plan: LogicalPlan, column: &Column) -> Result<Option<LogicalPlan>> {
    let LogicalPlan::Window(window) = plan else {
        return Ok(None);
    };
    let Ok(index) = window.schema.index_of_column(column) else {
        return Ok(None);
    };
    let input_schema = Arc::clone(window.input.schema());
    let Some(i) = index.checked_sub(input_schema.fields().len()) else {
        let Some(input) = shift_as_text(Arc::unwrap_or_clone(Arc::clone(&window.input)), column)?
        else {
            return Ok(None);
        };
        let plan = Window::try_new(window.window_expr, Arc::new(input))?;
        return Ok(Some(LogicalPlan::Window(plan)));
    };
    let mut window_expr = window.window_expr.clone();
    let Some(expr) = window_expr.get_mut(i) else {
        return Ok(None);
    };
    let name = expr.schema_name().to_string();
    let Expr::WindowFunction(shift) = unaliased(expr) else {
        return Ok(None);
    };
    let WindowFunctionDefinition::WindowUDF(udwf) = &shift.fun else {
        return Ok(None);
    };
    let args = &shift.params.args;
    if !matches!(udwf.name(), "lag" | "lead") || args.len() != 3 {
        return Ok(None);
    }
    let types = [
        args[0].get_type(&input_schema)?,
        args[2].get_type(&input_schema)?,
    ];
    if !PgNumericCoalesce::needed(&types) {
        return Ok(None);
    }
    let mut params = shift.params.clone();
    params.args = vec![
        numeric_tag(args[0].clone()),
        args[1].clone(),
        numeric_tag(args[2].clone()),
    ];
    *expr = Expr::from(WindowFunction {
        fun: shift.fun.clone(),
        params,
    })
    .alias(name);
    let plan = Window::try_new(window_expr, Arc::clone(&window.input))?;
    Ok(Some(LogicalPlan::Window(plan)))
}

/// Names for the added `sum` / `count` columns, unique within `schema`.
fn added_names(schema: &DFSchema) -> (String, String) {
    let mut n = schema.fields().len();
    loop {
        let (s, c) = (
            format!("__tarn_avg_sum_{n}"),
            format!("__tarn_avg_count_{n}"),
        );
        if !schema
            .fields()
            .iter()
            .any(|f| f.name() == &s || f.name() == &c)
        {
            return (s, c);
        }
        n += 1;
    }
}

fn is_avg_of_exact(name: &str, args: &[Expr], input: &DFSchema) -> bool {
    name == "avg" && args.len() == 1 && args[0].get_type(input).is_ok_and(|t| is_exact(&t))
}

fn split_aggregate(aggregate: Aggregate, column: &Column) -> Result<Option<(LogicalPlan, Expr)>> {
    let Ok(index) = aggregate.schema.index_of_column(column) else {
        return Ok(None);
    };
    let offset = aggregate.schema.fields().len() - aggregate.aggr_expr.len();
    let Some(expr) = index
        .checked_sub(offset)
        .and_then(|i| aggregate.aggr_expr.get(i))
    else {
        return Ok(None);
    };
    let inner = unaliased(expr);
    let Expr::AggregateFunction(agg) = inner else {
        return Ok(None);
    };
    let p = &agg.params;
    let name = agg.func.name();
    let variance = PgNumericVariance::for_aggregate(name);
    let exact = p.args.len() == 1
        && p.args[0]
            .get_type(aggregate.input.schema())
            .is_ok_and(|t| is_exact(&t));
    if !exact || (name != "avg" && variance.is_none()) {
        return Ok(None);
    }
    let with = |udaf, args: Vec<Expr>| {
        Expr::AggregateFunction(AggregateFunction::new_udf(
            udaf,
            args,
            p.distinct,
            p.filter.clone(),
            p.order_by.clone(),
            p.null_treatment,
        ))
    };
    let (sum_name, count_name) = added_names(&aggregate.schema);
    let squares_name = format!("{sum_name}_squares");
    let mut aggr_expr = aggregate.aggr_expr.clone();
    let x = p.args[0].clone();
    let sum = datafusion::functions_aggregate::sum::sum_udaf;
    aggr_expr.push(with(sum(), p.args.clone()).alias(&sum_name));
    aggr_expr.push(
        with(
            datafusion::functions_aggregate::count::count_udaf(),
            p.args.clone(),
        )
        .alias(&count_name),
    );
    if variance.is_some() {
        // Σx² in numeric (an integer square would overflow).
        let x = match x.get_type(aggregate.input.schema())? {
            DataType::Decimal128(..) => x,
            _ => cast(x, DataType::Decimal128(20, 0)),
        };
        aggr_expr.push(with(sum(), vec![x.clone() * x]).alias(&squares_name));
    }
    let plan = Aggregate::try_new(aggregate.input, aggregate.group_expr, aggr_expr)?;
    let column = |n: &str| Expr::Column(Column::from_name(n));
    let value = match variance {
        Some(f) => ScalarUDF::new_from_impl(f).call(vec![
            column(&sum_name),
            column(&squares_name),
            column(&count_name),
        ]),
        None => numeric_div(column(&sum_name), column(&count_name)),
    };
    Ok(Some((LogicalPlan::Aggregate(plan), value)))
}

fn split_window(window: Window, column: &Column) -> Result<Option<(LogicalPlan, Expr)>> {
    let Ok(index) = window.schema.index_of_column(column) else {
        return Ok(None);
    };
    let offset = window.input.schema().fields().len();
    let Some(i) = index.checked_sub(offset) else {
        // A column of the input, passed through: look below.
        let Some((input, value)) =
            split_avg(Arc::unwrap_or_clone(Arc::clone(&window.input)), column)?
        else {
            return Ok(None);
        };
        let plan = Window::try_new(window.window_expr, Arc::new(input))?;
        return Ok(Some((LogicalPlan::Window(plan), value)));
    };
    let Some(expr) = window.window_expr.get(i) else {
        return Ok(None);
    };
    let inner = unaliased(expr);
    let Expr::WindowFunction(avg) = inner else {
        return Ok(None);
    };
    let WindowFunctionDefinition::AggregateUDF(udaf) = &avg.fun else {
        return Ok(None);
    };
    if !is_avg_of_exact(udaf.name(), &avg.params.args, window.input.schema()) {
        return Ok(None);
    }
    let with = |udaf| {
        Expr::from(WindowFunction {
            fun: WindowFunctionDefinition::AggregateUDF(udaf),
            params: avg.params.clone(),
        })
    };
    let (sum_name, count_name) = added_names(&window.schema);
    let mut window_expr = window.window_expr.clone();
    window_expr.push(with(datafusion::functions_aggregate::sum::sum_udaf()).alias(&sum_name));
    window_expr.push(with(datafusion::functions_aggregate::count::count_udaf()).alias(&count_name));
    let plan = Window::try_new(window_expr, window.input)?;
    Ok(Some((
        LogicalPlan::Window(plan),
        numeric_div(
            Expr::Column(Column::from_name(sum_name)),
            Expr::Column(Column::from_name(count_name)),
        ),
    )))
}
