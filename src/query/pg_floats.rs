//! `real` (float4) mixed with another kind of number computes in double precision.
//!
//! PostgreSQL has no `real + integer` or `real * numeric` operator: such an operand makes it
//! pick the `double precision` one (`100::float4 / 3` = 33.333333333333336,
//! `pg_typeof(1::float4 + 1)` is double precision). DataFusion coerces both sides to the
//! narrower Float32. [`PgFloatOperators`], an expression planner (SQL planning time, so the
//! described result type is double precision too), casts both operands of such an arithmetic
//! operation to Float64; `real` with `real` stays `real`.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, cast};
use datafusion::sql::sqlparser::ast::BinaryOperator as SqlOp;

use super::pg_casts::type_in;

/// Plans `real` arithmetic with a non-real operand in double precision (see the module docs).
#[derive(Debug, Default)]
pub struct PgFloatOperators;

/// Whether `ty` is a number that makes PostgreSQL compute a `real` operand in float8.
fn widens_real(ty: &DataType) -> bool {
    ty.is_integer() || matches!(ty, DataType::Float64 | DataType::Decimal128(..))
}

impl ExprPlanner for PgFloatOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let op = match expr.op {
            SqlOp::Plus => Operator::Plus,
            SqlOp::Minus => Operator::Minus,
            SqlOp::Multiply => Operator::Multiply,
            SqlOp::Divide => Operator::Divide,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let schemas = [Arc::new(schema.clone())];
        let (Some(l), Some(r)) = (
            type_in(&expr.left, &schemas),
            type_in(&expr.right, &schemas),
        ) else {
            return Ok(PlannerResult::Original(expr));
        };
        let real_mixed = (l == DataType::Float32 && widens_real(&r))
            || (r == DataType::Float32 && widens_real(&l));
        if !real_mixed {
            return Ok(PlannerResult::Original(expr));
        }
        let widen = |e: Expr, t: &DataType| {
            if *t == DataType::Float64 {
                e
            } else {
                cast(e, DataType::Float64)
            }
        };
        Ok(PlannerResult::Planned(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(widen(expr.left, &l)),
            op,
            Box::new(widen(expr.right, &r)),
        ))))
    }
}
