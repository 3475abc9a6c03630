//! `INTERSECT ALL` and `EXCEPT ALL` with PostgreSQL's multiset semantics.
//!
//! DataFusion plans `a INTERSECT ALL b` as a semi join of `a` with `b` on every column (null
//! equal to null) and `a EXCEPT ALL b` as the anti join: every copy of a row of `a` that has a
//! match survives the semi join (PostgreSQL keeps min(m, n) copies), and no copy survives the
//! anti join (PostgreSQL keeps max(m − n, 0)). The answers are silently wrong whenever rows
//! repeat. This analyzer rule numbers the copies of each distinct row on both sides
//! (`row_number() OVER (PARTITION BY every column)`) and adds that number to the join keys:
//! copy k of a row of `a` then matches iff `b` has at least k copies, which is exactly
//! PostgreSQL's answer for both operators. The numbers are projected away afterwards.
//!
//! The rule recognises the joins DataFusion's SQL planner builds for the set operations: a
//! `LeftSemi` / `LeftAnti` join without a filter, null-equal-null, whose keys are the two
//! sides' columns pairwise in order. Joins that subquery decorrelation produces come later
//! (optimizer) and use ordinary null semantics. Applying the rewrite to the DISTINCT forms
//! (whose left side is already distinct) would be harmless, too.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, NullEquality};
use datafusion::error::Result;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, Join, JoinConstraint, JoinType, LogicalPlan, LogicalPlanBuilder,
};
use datafusion::optimizer::AnalyzerRule;

const LEFT_RN: &str = "__tarn_set_copy_l";
const RIGHT_RN: &str = "__tarn_set_copy_r";

/// Gives `INTERSECT ALL` / `EXCEPT ALL` multiset semantics (see the module docs).
#[derive(Debug, Default)]
pub struct PgSetOperations;

impl AnalyzerRule for PgSetOperations {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| match p {
            LogicalPlan::Join(join) if is_set_operation(&join) => {
                rewrite(join).map(Transformed::yes)
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pg_set_operations"
    }
}

fn is_set_operation(join: &Join) -> bool {
    if !matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
        || join.filter.is_some()
        || join.null_equality != NullEquality::NullEqualsNull
    {
        return false;
    }
    let left = join.left.schema();
    let right = join.right.schema();
    if join.on.len() != left.fields().len() || left.fields().len() != right.fields().len() {
        return false;
    }
    if left
        .fields()
        .iter()
        .any(|f| f.name() == LEFT_RN || f.name() == RIGHT_RN)
    {
        return false; // already rewritten
    }
    let (left_columns, right_columns) = (left.columns(), right.columns());
    // Type coercion may have cast one side's key (`int8 = CAST(int4 AS int8)`).
    fn column_of(e: &Expr) -> Option<&Column> {
        match e {
            Expr::Column(c) => Some(c),
            Expr::Cast(c) => column_of(&c.expr),
            Expr::TryCast(c) => column_of(&c.expr),
            _ => None,
        }
    }
    join.on.iter().enumerate().all(|(i, (l, r))| {
        column_of(l) == Some(&left_columns[i]) && column_of(r) == Some(&right_columns[i])
    })
}

/// `side` with a column numbering the copies of each distinct row.
fn numbered(side: &Arc<LogicalPlan>, name: &str) -> Result<LogicalPlan> {
    let columns: Vec<Expr> = side
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let rn = row_number().partition_by(columns).build()?.alias(name);
    LogicalPlanBuilder::from(Arc::clone(side))
        .window(vec![rn])?
        .build()
}

fn rewrite(join: Join) -> Result<LogicalPlan> {
    let output: Vec<Expr> = join
        .left
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let left = numbered(&join.left, LEFT_RN)?;
    let right = numbered(&join.right, RIGHT_RN)?;
    let mut on = join.on.clone();
    on.push((
        Expr::Column(Column::from_name(LEFT_RN)),
        Expr::Column(Column::from_name(RIGHT_RN)),
    ));
    let joined = Join::try_new(
        Arc::new(left),
        Arc::new(right),
        on,
        None,
        join.join_type,
        JoinConstraint::On,
        NullEquality::NullEqualsNull,
        false,
    )?;
    LogicalPlanBuilder::from(LogicalPlan::Join(joined))
        .project(output)?
        .build()
}
