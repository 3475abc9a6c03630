//! Date/time operators with PostgreSQL's result types: an expression planner (SQL planning
//! time, so the statement's described result types are PostgreSQL's too) for the operators
//! DataFusion types differently or does not have.
//!
//! - `timestamp - timestamp` is a PostgreSQL `interval` with whole days split off
//!   (`1 day 01:30:00`); DataFusion's is a duration printed as `25:30:00`.
//! - `date ± interval` is a `timestamp` in PostgreSQL (`2024-01-02 00:00:00`); DataFusion
//!   keeps a date. The date is cast to timestamp first.
//! - `number * interval`, `interval * number`, `interval / number`: PostgreSQL's
//!   `interval_mul` / `interval_div`; DataFusion refuses them.
//! - `interval <op> interval` compares PostgreSQL's normalised values (`interval '1 mon' =
//!   interval '30 days'`, `interval '1 day' = interval '24 hours'`); DataFusion compares the
//!   month, day and nanosecond fields one by one.
//! - `time <op> time` of two precisions (a `time` column is Paimon's milliseconds, a `time`
//!   literal nanoseconds) compares both as microseconds; DataFusion finds no common type.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::Result;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{BinaryExpr, Cast, Expr, Operator};
use datafusion::sql::sqlparser::ast::BinaryOperator as SqlOp;

use super::functions::interval::{self, IntervalFn};
use super::pg_casts::type_in;

/// Plans date/time operators PostgreSQL's way (see the module docs).
#[derive(Debug, Default)]
pub struct PgDateTimeOperators;

impl ExprPlanner for PgDateTimeOperators {
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
            SqlOp::Eq => Operator::Eq,
            SqlOp::NotEq => Operator::NotEq,
            SqlOp::Lt => Operator::Lt,
            SqlOp::LtEq => Operator::LtEq,
            SqlOp::Gt => Operator::Gt,
            SqlOp::GtEq => Operator::GtEq,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let schemas = [Arc::new(schema.clone())];
        let binary = Expr::BinaryExpr(BinaryExpr::new(
            Box::new(expr.left.clone()),
            op,
            Box::new(expr.right.clone()),
        ));
        let planned = rewrite(binary, &schemas)?;
        Ok(if planned.transformed {
            PlannerResult::Planned(planned.data)
        } else {
            PlannerResult::Original(expr)
        })
    }
}

fn is_number(t: &DataType) -> bool {
    t.is_integer() || t.is_floating() || matches!(t, DataType::Decimal128(..))
}

fn timestamp_of(date: Expr) -> Expr {
    Expr::Cast(Cast::new(
        Box::new(date),
        DataType::Timestamp(TimeUnit::Microsecond, None),
    ))
}

fn rewrite(expr: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let (Some(l), Some(r)) = (type_in(left, schemas), type_in(right, schemas)) else {
        return Ok(Transformed::no(expr));
    };
    let (left, right) = (left.as_ref().clone(), right.as_ref().clone());
    Ok(match (op, &l, &r) {
        (Operator::Minus, DataType::Timestamp(..), DataType::Timestamp(..)) => {
            let diff = Expr::BinaryExpr(BinaryExpr::new(Box::new(left), *op, Box::new(right)));
            Transformed::yes(IntervalFn::of_duration().call(vec![diff]))
        }
        (Operator::Minus, DataType::Timestamp(..), DataType::Date32) => {
            let diff = Expr::BinaryExpr(BinaryExpr::new(
                Box::new(left),
                *op,
                Box::new(timestamp_of(right)),
            ));
            Transformed::yes(IntervalFn::of_duration().call(vec![diff]))
        }
        (Operator::Minus, DataType::Date32, DataType::Timestamp(..)) => {
            let diff = Expr::BinaryExpr(BinaryExpr::new(
                Box::new(timestamp_of(left)),
                *op,
                Box::new(right),
            ));
            Transformed::yes(IntervalFn::of_duration().call(vec![diff]))
        }
        (Operator::Plus | Operator::Minus, DataType::Date32, DataType::Interval(_)) => {
            let ts = Expr::Cast(Cast::new(
                Box::new(left),
                DataType::Timestamp(TimeUnit::Microsecond, None),
            ));
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(ts),
                *op,
                Box::new(right),
            )))
        }
        (Operator::Plus, DataType::Interval(_), DataType::Date32) => {
            let ts = Expr::Cast(Cast::new(
                Box::new(right),
                DataType::Timestamp(TimeUnit::Microsecond, None),
            ));
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(left),
                *op,
                Box::new(ts),
            )))
        }
        (Operator::Multiply, DataType::Interval(_), n) if is_number(n) => {
            Transformed::yes(IntervalFn::multiply(false).call(vec![left, right]))
        }
        (Operator::Multiply, n, DataType::Interval(_)) if is_number(n) => {
            Transformed::yes(IntervalFn::multiply(false).call(vec![right, left]))
        }
        (
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq,
            DataType::Interval(_),
            DataType::Interval(_),
        ) => {
            let key = interval::comparison_key_udf();
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(key.call(vec![left])),
                *op,
                Box::new(key.call(vec![right])),
            )))
        }
        (
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq,
            DataType::Time32(_) | DataType::Time64(_),
            DataType::Time32(_) | DataType::Time64(_),
        ) if l != r => {
            let micros = |e: Expr| {
                Box::new(Expr::Cast(Cast::new(
                    Box::new(e),
                    DataType::Time64(TimeUnit::Microsecond),
                )))
            };
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                micros(left),
                *op,
                micros(right),
            )))
        }
        (Operator::Divide, DataType::Interval(_), n) if is_number(n) => {
            Transformed::yes(IntervalFn::multiply(true).call(vec![left, right]))
        }
        _ => Transformed::no(expr),
    })
}
