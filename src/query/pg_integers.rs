//! Integers typed and checked as PostgreSQL types and checks them.
//!
//! - [`PgIntegerLiterals`] (runs before DataFusion's type coercion): an integer literal is
//!   `integer` (int4) when it fits, as in PostgreSQL; DataFusion's SQL planner makes every
//!   integer literal `bigint`, so `select 1` reported OID 20 and `2147483647 + 1` was computed
//!   in int8. Literals that `LIMIT`/`OFFSET`, `VALUES` rows, aggregate and window functions
//!   take (their planning reads them as int8 constants, e.g. `count(*)`'s) are left alone.
//! - [`PgIntegerOverflow`] (runs after it): `+`, `-`, `*` over smallint/integer/bigint fail
//!   with 22003 on overflow instead of wrapping (`functions::numeric::PgIntArithmetic`); and
//!   `+`, `-`, `*`, `/` over real/double precision fail with 22003 / 22012 instead of giving
//!   Infinity (`functions::numeric::PgFloatArithmetic`).

use std::sync::Arc;

use datafusion::common::DFSchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{BinaryExpr, Expr, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;

use super::functions::numeric::{PgFloatArithmetic, PgIntArithmetic};
use super::pg_casts::type_in;

/// Integer literals as int4 where they fit (see the module docs).
#[derive(Debug, Default)]
pub struct PgIntegerLiterals;

impl AnalyzerRule for PgIntegerLiterals {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // A recursive CTE's recursive term reads the work table with the schema its static
        // term had at planning (int8 literals): retyping the static term's literals to int4
        // would make the two terms disagree ("Cannot project plan column"). Such queries keep
        // DataFusion's int8 literals.
        if plan.exists(|p| Ok(matches!(p, LogicalPlan::RecursiveQuery(_))))? {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|p| {
            // VALUES columns stay int8: tarn's DML paths write VALUES rows to tables as
            // planned (see known-mismatches.md, integer-literal-type).
            if matches!(
                p,
                LogicalPlan::Limit(_)
                    | LogicalPlan::Values(_)
                    | LogicalPlan::Dml(_)
                    | LogicalPlan::Ddl(_)
                    | LogicalPlan::Statement(_)
            ) {
                return Ok(Transformed::yes(p.recompute_schema()?));
            }
            let names = NamePreserver::new(&p);
            let p = p.map_expressions(|e| {
                let saved = names.save(&e);
                let e = narrow(e)?;
                Ok(if e.transformed {
                    e.update_data(|e| saved.restore(e))
                } else {
                    e
                })
            })?;
            // Always: a child's column may have changed type.
            Ok(Transformed::yes(p.data.recompute_schema()?))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pg_integer_literals"
    }
}

fn narrow(expr: Expr) -> Result<Transformed<Expr>> {
    expr.transform_down(|e| match e {
        Expr::AggregateFunction(_) | Expr::WindowFunction(_) => {
            Ok(Transformed::new(e, false, TreeNodeRecursion::Jump))
        }
        Expr::Literal(ScalarValue::Int64(Some(v)), meta) => match i32::try_from(v) {
            Ok(v) => Ok(Transformed::yes(Expr::Literal(
                ScalarValue::Int32(Some(v)),
                meta,
            ))),
            Err(_) => Ok(Transformed::no(Expr::Literal(
                ScalarValue::Int64(Some(v)),
                meta,
            ))),
        },
        // A negative literal is `-(literal)`: keep `-2147483648` an int4 as PostgreSQL does.
        other => Ok(Transformed::no(other)),
    })
}

/// Overflow-checked integer arithmetic (see the module docs).
#[derive(Debug, Default)]
pub struct PgIntegerOverflow;

impl AnalyzerRule for PgIntegerOverflow {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| {
            let inputs: Vec<DFSchemaRef> =
                p.inputs().iter().map(|i| Arc::clone(i.schema())).collect();
            let names = NamePreserver::new(&p);
            p.map_expressions(|e| {
                let saved = names.save(&e);
                let e = e.transform_up(|e| checked(e, &inputs))?;
                Ok(if e.transformed {
                    e.update_data(|e| saved.restore(e))
                } else {
                    e
                })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pg_integer_overflow"
    }
}

fn checked(expr: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let (Some(l), Some(r)) = (type_in(left, schemas), type_in(right, schemas)) else {
        return Ok(Transformed::no(expr));
    };
    if l != r {
        return Ok(Transformed::no(expr));
    }
    let udf = match (PgIntArithmetic::new(*op), PgFloatArithmetic::new(*op)) {
        (Some(int), _) if PgIntArithmetic::applies(&l) => ScalarUDF::new_from_impl(int),
        (_, Some(float)) if PgFloatArithmetic::applies(&l) => ScalarUDF::new_from_impl(float),
        _ => return Ok(Transformed::no(expr)),
    };
    let call = udf.call(vec![left.as_ref().clone(), right.as_ref().clone()]);
    Ok(Transformed::yes(call))
}
