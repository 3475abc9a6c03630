//! String literals read as the type their context asks for, as PostgreSQL reads them.
//!
//! In PostgreSQL a quoted literal has no type of its own (`unknown`) until an operator or a
//! CASE gives it one: `'2' + 1` is 3 (`'2'` read as an integer), `'a' + 1` fails with 22P02
//! (invalid input syntax for type integer), `interval '1 day' * 'abc'` with 22P02 (the only
//! `interval * x` operator takes a double precision), and `case when c then 1 else 'x' end`
//! with 22P02 (the CASE is an integer, so `'x'` is read as one). DataFusion gives literals the
//! type `text`, so the first three fail while planning with 42883 and the CASE returns text.
//!
//! Such literals are cast to the type PostgreSQL resolves them to, and the cast reads the text
//! (failing with PostgreSQL's 22P02 when it is no such value):
//! - [`PgUnknownOperands`], an expression planner (arithmetic fails while DataFusion's SQL
//!   planner builds the select list): in `+ - * / %` the other operand's number type (an
//!   integer constant's as PostgreSQL types it, int4 when it fits), double precision as a
//!   multiplier or divisor of an interval. It hands the operation on to the other planners.
//! - [`PgUnknownLiterals`], an analyzer rule run before DataFusion's type coercion: in a CASE,
//!   the type of its first result that is not an untyped literal when that type is a number,
//!   boolean or date/time.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::Result;
use datafusion::logical_expr::expr::Case;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Cast, Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast::BinaryOperator as SqlOp;

use super::pg_casts::type_in;

/// Casts untyped string literals to the type their operator or CASE gives them.
#[derive(Debug, Default)]
pub struct PgUnknownLiterals;

impl AnalyzerRule for PgUnknownLiterals {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| {
            if matches!(
                p,
                LogicalPlan::Dml(_) | LogicalPlan::Ddl(_) | LogicalPlan::Statement(_)
            ) {
                return Ok(Transformed::no(p));
            }
            let inputs: Vec<DFSchemaRef> =
                p.inputs().iter().map(|i| Arc::clone(i.schema())).collect();
            let names = NamePreserver::new(&p);
            let p = p.map_expressions(|e| {
                let saved = names.save(&e);
                let e = e.transform_up(|e| resolve(e, &inputs))?;
                Ok(if e.transformed {
                    e.update_data(|e| saved.restore(e))
                } else {
                    e
                })
            })?;
            if p.transformed {
                // A CASE may have changed type.
                Ok(Transformed::yes(p.data.recompute_schema()?))
            } else {
                Ok(p)
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pg_unknown_literals"
    }
}

/// Whether `e` is a quoted literal (text DataFusion typed itself, no cast around it).
fn is_unknown(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal(
            ScalarValue::Utf8(Some(_)) | ScalarValue::Utf8View(Some(_)),
            None
        )
    )
}

fn is_number(t: &DataType) -> bool {
    t.is_integer() || t.is_floating() || matches!(t, DataType::Decimal128(..))
}

fn cast(e: Expr, to: DataType) -> Expr {
    Expr::Cast(Cast::new(Box::new(e), to))
}

/// Reads the untyped literal operand of arithmetic as the other operand's type (see the
/// module docs).
#[derive(Debug, Default)]
pub struct PgUnknownOperands;

impl ExprPlanner for PgUnknownOperands {
    fn plan_binary_op(
        &self,
        mut expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let schemas = [Arc::new(schema.clone())];
        if let Some((left, right)) = operands(&expr.left, &expr.op, &expr.right, &schemas) {
            expr.left = left;
            expr.right = right;
        }
        Ok(PlannerResult::Original(expr))
    }
}

/// The operands of `left op right` with an untyped literal cast, if PostgreSQL would type it.
fn operands(
    left: &Expr,
    op: &SqlOp,
    right: &Expr,
    schemas: &[DFSchemaRef],
) -> Option<(Expr, Expr)> {
    if !matches!(
        op,
        SqlOp::Plus | SqlOp::Minus | SqlOp::Multiply | SqlOp::Divide | SqlOp::Modulo
    ) || is_unknown(left) == is_unknown(right)
    {
        return None;
    }
    let left_unknown = is_unknown(left);
    let known = if left_unknown { right } else { left };
    let target = match (known, type_in(known, schemas)?) {
        // An integer constant is int4 when it fits (`PgIntegerLiterals` retypes it later).
        (Expr::Literal(ScalarValue::Int64(Some(v)), _), _) if i32::try_from(*v).is_ok() => {
            DataType::Int32
        }
        (_, t) if is_number(&t) => t,
        (_, DataType::Interval(_))
            if *op == SqlOp::Multiply || (*op == SqlOp::Divide && !left_unknown) =>
        {
            DataType::Float64
        }
        _ => return None,
    };
    Some(if left_unknown {
        (cast(left.clone(), target), right.clone())
    } else {
        (left.clone(), cast(right.clone(), target))
    })
}

fn resolve(expr: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
    match expr {
        Expr::Case(case) => resolve_case(case, schemas),
        other => Ok(Transformed::no(other)),
    }
}

/// A CASE whose results mix untyped literals with values of a type that is not text.
fn resolve_case(mut case: Case, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
    let typed = case
        .when_then_expr
        .iter()
        .map(|(_, then)| then.as_ref())
        .chain(case.else_expr.as_deref())
        .filter(|e| !is_unknown(e) && !matches!(e, Expr::Literal(ScalarValue::Null, _)))
        .find_map(|e| type_in(e, schemas));
    let Some(target) = typed.filter(|t| {
        is_number(t)
            || matches!(
                t,
                DataType::Boolean
                    | DataType::Date32
                    | DataType::Timestamp(..)
                    | DataType::Time32(_)
                    | DataType::Time64(_)
            )
    }) else {
        return Ok(Transformed::no(Expr::Case(case)));
    };
    let mut changed = false;
    let mut retype = |e: &mut Box<Expr>| {
        if is_unknown(e) {
            let inner = std::mem::replace(e.as_mut(), Expr::Literal(ScalarValue::Null, None));
            **e = cast(inner, target.clone());
            changed = true;
        }
    };
    for (_, then) in &mut case.when_then_expr {
        retype(then);
    }
    if let Some(e) = &mut case.else_expr {
        retype(e);
    }
    Ok(Transformed::new_transformed(Expr::Case(case), changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit, when};

    fn schema() -> DFSchemaRef {
        use datafusion::arrow::datatypes::{Field, Schema};
        let schema = Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        Arc::new(datafusion::common::DFSchema::try_from(schema).unwrap())
    }

    fn resolved(e: Expr) -> Expr {
        e.transform_up(|e| resolve(e, &[schema()])).unwrap().data
    }

    #[test]
    fn arithmetic_reads_the_literal_as_the_other_operand() {
        let schemas = [schema()];
        assert_eq!(
            operands(&lit("2"), &SqlOp::Plus, &col("i"), &schemas),
            Some((cast(lit("2"), DataType::Int32), col("i")))
        );
        assert_eq!(
            operands(&lit("a"), &SqlOp::Plus, &lit(1i64), &schemas),
            Some((cast(lit("a"), DataType::Int32), lit(1i64)))
        );
        // Text with text stays as it is (and fails as before).
        assert_eq!(operands(&lit("2"), &SqlOp::Plus, &col("s"), &schemas), None);
        let interval = lit(ScalarValue::new_interval_mdn(0, 1, 0));
        assert_eq!(
            operands(&interval, &SqlOp::Multiply, &lit("abc"), &schemas),
            Some((interval.clone(), cast(lit("abc"), DataType::Float64)))
        );
        assert_eq!(
            operands(&lit("abc"), &SqlOp::Divide, &interval, &schemas),
            None
        );
    }

    #[test]
    fn case_reads_literals_as_its_typed_results() {
        let e = when(col("i").gt(lit(1)), col("i"))
            .otherwise(lit("x"))
            .unwrap();
        let want = when(col("i").gt(lit(1)), col("i"))
            .otherwise(cast(lit("x"), DataType::Int32))
            .unwrap();
        assert_eq!(resolved(e), want);
        let text = when(col("i").gt(lit(1)), col("s"))
            .otherwise(lit("x"))
            .unwrap();
        assert_eq!(resolved(text.clone()), text);
    }
}
