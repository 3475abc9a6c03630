//! Types of a statement's `$n` parameters, for the extended protocol's ParameterDescription.
//!
//! DataFusion infers a placeholder's type from comparisons and inserts, but not from a cast:
//! `$1::bigint` stays untyped, while PostgreSQL types it `bigint`. The cast target is used here
//! when DataFusion has no type.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::logical_expr::ExprSchemable;
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::{Cast, Expr, LogicalPlan, TryCast};

/// Types of `$1..$n` in order; `None` where neither DataFusion nor a cast says.
pub fn parameter_types(plan: &LogicalPlan) -> Result<Vec<Option<DataType>>> {
    let inferred = plan.get_parameter_types()?;
    let mut from_casts: Vec<(String, DataType)> = Vec::new();
    plan.apply_with_subqueries(|p| {
        p.apply_expressions(|e| {
            e.apply(|e| {
                let (inner, target) = match e {
                    Expr::Cast(Cast { expr, field }) => (expr.as_ref(), field.data_type()),
                    Expr::TryCast(TryCast { expr, field }) => (expr.as_ref(), field.data_type()),
                    _ => return Ok(TreeNodeRecursion::Continue),
                };
                if let Expr::Placeholder(Placeholder { id, .. }) = inner {
                    from_casts.push((id.clone(), target.clone()));
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    // `x = ANY($1)` is planned as `array_has($1, x)`: $1 is an array of x's type (PostgreSQL
    // describes it so, and drivers then send e.g. a binary date[]).
    plan.apply_with_subqueries(|p| {
        let inputs = p.inputs();
        let schema = inputs
            .first()
            .map_or_else(|| p.schema(), |input| input.schema());
        p.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e
                    && f.name() == "array_has"
                    && let [Expr::Placeholder(Placeholder { id, .. }), needle] = f.args.as_slice()
                    && !matches!(needle, Expr::Placeholder(_))
                    && let Ok(element) = needle.get_type(schema)
                {
                    from_casts.push((
                        id.clone(),
                        DataType::List(Arc::new(Field::new_list_field(element, true))),
                    ));
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    let index = |id: &str| {
        id.trim_start_matches('$')
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
    };
    let count = inferred
        .keys()
        .filter_map(|id| index(id))
        .max()
        .unwrap_or(0);
    let mut out = vec![None; count];
    for (id, t) in &inferred {
        if let Some(n) = index(id) {
            out[n - 1] = t.clone();
        }
    }
    for (id, t) in from_casts {
        if let Some(n) = index(&id)
            && out[n - 1].is_none()
        {
            out[n - 1] = Some(t);
        }
    }
    Ok(out)
}
