//! Casts whose PostgreSQL semantics differ from Arrow's: an analyzer rule that sends them to
//! tarn's own conversion functions.
//!
//! - `numeric | real | double precision → smallint | integer | bigint`: Arrow truncates
//!   (`174.89::int` = 174); PostgreSQL rounds (175; floats half to even) and fails values out of
//!   range with 22003. Replaced by `functions::numeric::PgToInt`. This also covers the implicit
//!   cast of an INSERT of `1.5` into an integer column (PostgreSQL's assignment cast rounds).
//! - `bytea → text`: Arrow reinterprets the bytes as UTF-8; PostgreSQL writes bytea's output
//!   form `\x7a7a`. Replaced by `functions::bytes::bytea_text_udf`.
//! - `text → real | double precision`: Arrow reads `'1e400'` as Infinity; PostgreSQL fails
//!   with 22003. Replaced by `functions::numeric::PgTextToFloat`.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::Result;
use datafusion::logical_expr::{Cast, Expr, ExprSchemable, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;

use super::functions::bytes;
use super::functions::numeric::{PgTextToFloat, PgToInt};

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary | DataType::BinaryView | DataType::LargeBinary
    )
}

/// Rewrites casts PostgreSQL performs differently (see the module docs).
#[derive(Debug, Default)]
pub struct PgCasts;

impl AnalyzerRule for PgCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| {
            let inputs: Vec<DFSchemaRef> =
                p.inputs().iter().map(|i| Arc::clone(i.schema())).collect();
            p.map_expressions(|e| e.transform_up(|e| rewrite(e, &inputs)))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pg_casts"
    }
}

/// The type of `expr` over one of `schemas` (or as a constant).
pub(crate) fn type_in(
    expr: &Expr,
    schemas: &[DFSchemaRef],
) -> Option<datafusion::arrow::datatypes::DataType> {
    schemas
        .iter()
        .find_map(|s| expr.get_type(s.as_ref()).ok())
        .or_else(|| expr.get_type(&DFSchema::empty()).ok())
}

fn rewrite(expr: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
    let Expr::Cast(Cast { expr: inner, field }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if is_text(field.data_type()) && type_in(inner, schemas).as_ref().is_some_and(is_binary) {
        let call = bytes::bytea_text_udf().call(vec![inner.as_ref().clone()]);
        let typed = Expr::Cast(Cast::new(Box::new(call), field.data_type().clone()));
        return Ok(Transformed::yes(typed));
    }
    if let Some(to_float) = PgTextToFloat::new(field.data_type()) {
        return Ok(match type_in(inner, schemas) {
            Some(source) if PgTextToFloat::converts(&source) => Transformed::yes(
                ScalarUDF::new_from_impl(to_float).call(vec![inner.as_ref().clone()]),
            ),
            _ => Transformed::no(expr),
        });
    }
    let Some(to_int) = PgToInt::new(field.data_type()) else {
        return Ok(Transformed::no(expr));
    };
    match type_in(inner, schemas) {
        Some(source) if PgToInt::converts(&source) => {
            let call = ScalarUDF::new_from_impl(to_int).call(vec![inner.as_ref().clone()]);
            Ok(Transformed::yes(call))
        }
        _ => Ok(Transformed::no(expr)),
    }
}
