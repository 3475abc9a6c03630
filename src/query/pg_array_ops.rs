//! Array operators as PostgreSQL types them, planned ahead of DataFusion's
//! (`NestedFunctionPlanner`, `FieldAccessPlanner`):
//!
//! - `a && b` (overlap), which DataFusion's SQL planner refuses, is `array_has_any(a, b)`.
//! - `a || b` of two arrays whose element types have no common type (`integer[] || text[]`)
//!   fails with 42883 (no such operator), as in PostgreSQL; DataFusion would cast the text
//!   elements to integers and fail on the data (22P02) or not at all.
//! - `a['x']` on an array is a subscript, the text read as an integer (22P02 for `'a'`);
//!   DataFusion reads a quoted subscript as a struct field name.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::planner::{
    ExprPlanner, PlannerResult, RawBinaryExpr, RawFieldAccessExpr,
};
use datafusion::logical_expr::{GetFieldAccess, cast, lit};
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast::BinaryOperator as SqlOp;

use super::functions::data_error;
use super::pg_casts::type_in;
use super::pg_typeof::pg_type_name;

/// Plans the array operators of the module docs.
#[derive(Debug, Default)]
pub struct PgArrayOperators;

/// The element type of a list type.
fn element(ty: &DataType) -> Option<&DataType> {
    match ty {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Some(f.data_type())
        }
        _ => None,
    }
}

/// PostgreSQL's type categories (`typcategory`) of the element types tarn has; types of
/// different categories have no common type.
fn category(ty: &DataType) -> Option<char> {
    Some(match ty {
        t if t.is_numeric() => 'N',
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => 'S',
        DataType::Boolean => 'B',
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) => 'D',
        DataType::Interval(_) | DataType::Duration(_) => 'T',
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => 'U',
        _ => return None,
    })
}

/// Whether arrays of elements `l` and `r` have no common type (nested arrays: their innermost
/// elements').
fn incompatible(mut l: &DataType, mut r: &DataType) -> bool {
    while let (Some(li), Some(ri)) = (element(l), element(r)) {
        (l, r) = (li, ri);
    }
    matches!((category(l), category(r)), (Some(a), Some(b)) if a != b)
}

impl ExprPlanner for PgArrayOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        if !matches!(expr.op, SqlOp::PGOverlap | SqlOp::StringConcat) {
            return Ok(PlannerResult::Original(expr));
        }
        let schemas = [Arc::new(schema.clone())];
        let (Some(l), Some(r)) = (
            type_in(&expr.left, &schemas),
            type_in(&expr.right, &schemas),
        ) else {
            return Ok(PlannerResult::Original(expr));
        };
        // `a && NULL`: the operator is strict.
        let array_or_null = |t: &DataType| element(t).is_some() || t.is_null();
        if expr.op == SqlOp::PGOverlap
            && array_or_null(&l)
            && array_or_null(&r)
            && (l.is_null() || r.is_null())
        {
            return Ok(PlannerResult::Planned(lit(ScalarValue::Boolean(None))));
        }
        let (Some(_), Some(_)) = (element(&l), element(&r)) else {
            return Ok(PlannerResult::Original(expr));
        };
        if incompatible(&l, &r) {
            let name = |ty: &DataType| pg_type_name(&Field::new("", ty.clone(), true));
            let op = if expr.op == SqlOp::PGOverlap {
                "&&"
            } else {
                "||"
            };
            return Err(data_error(
                "42883",
                format!("operator does not exist: {} {op} {}", name(&l), name(&r)),
            ));
        }
        if expr.op == SqlOp::PGOverlap {
            let overlap = datafusion::functions_nested::array_has::array_has_any_udf();
            return Ok(PlannerResult::Planned(
                overlap.call(vec![expr.left, expr.right]),
            ));
        }
        Ok(PlannerResult::Original(expr))
    }

    fn plan_field_access(
        &self,
        mut expr: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        if let GetFieldAccess::NamedStructField { name } = &expr.field_access
            && matches!(name, ScalarValue::Utf8(Some(_)))
            && let Some(ty) = type_in(&expr.expr, &[Arc::new(schema.clone())])
            && element(&ty).is_some_and(|e| !matches!(e, DataType::Struct(_)))
        {
            let key = cast(lit(name.clone()), DataType::Int32);
            expr.field_access = GetFieldAccess::ListIndex { key: Box::new(key) };
        }
        Ok(PlannerResult::Original(expr))
    }
}
