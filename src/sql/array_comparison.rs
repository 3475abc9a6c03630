//! `x op ANY (array)` and `x op ALL (array)` with SQL's three values, as PostgreSQL answers
//! them: a comparison that is not true for any element but NULL for one (a NULL element, a NULL
//! `x`) makes `ANY` NULL, not false (`3 = ANY(ARRAY[1, NULL])` is NULL), and likewise for `ALL`.
//!
//! - `x = ANY(a)` is `array_has(a, x)` and `x <> ALL(a)` is `NOT array_has(a, x)`: tarn's
//!   `array_has` (`query/functions/arrays.rs`) has the three values. (datafusion-pg-catalog's
//!   rewrite, which tarn used before, named DataFusion's two-valued `array_contains`.)
//! - `x op ANY(a)` for another operator is `NOT (x negated-op ALL(a))`: DataFusion plans ALL
//!   with the three values, its ANY over the array's min/max without them.
//! - An untyped array literal (`x = ANY('{a,b}')`) is read as `text[]`.
//!
//! ANY/ALL over a subquery are left to DataFusion (`set_comparison.rs`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Statement, UnaryOperator, Value, VisitMut, VisitorMut,
};

use super::ast::call;

/// Rewrites every ANY/ALL over an array in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut ArrayComparison);
}

struct ArrayComparison;

/// The operator whose result is the negation of `op`'s.
fn negated(op: &BinaryOperator) -> Option<BinaryOperator> {
    Some(match op {
        BinaryOperator::Eq => BinaryOperator::NotEq,
        BinaryOperator::NotEq => BinaryOperator::Eq,
        BinaryOperator::Lt => BinaryOperator::GtEq,
        BinaryOperator::LtEq => BinaryOperator::Gt,
        BinaryOperator::Gt => BinaryOperator::LtEq,
        BinaryOperator::GtEq => BinaryOperator::Lt,
        _ => return None,
    })
}

/// The array operand: an untyped literal `'{...}'` as `text[]`.
fn array(right: &Expr) -> Expr {
    if let Expr::Value(v) = right
        && let Value::SingleQuotedString(s) = &v.value
        && s.trim_start().starts_with('{')
    {
        return Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(right.clone()),
            data_type: DataType::Array(
                datafusion::sql::sqlparser::ast::ArrayElemTypeDef::SquareBracket(
                    Box::new(DataType::Text),
                    None,
                ),
            ),
            array: false,
            format: None,
        };
    }
    right.clone()
}

fn not(e: Expr) -> Expr {
    Expr::UnaryOp {
        op: UnaryOperator::Not,
        expr: Box::new(Expr::Nested(Box::new(e))),
    }
}

impl VisitorMut for ArrayComparison {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } if !matches!(right.as_ref(), Expr::Subquery(_)) => {
                let a = array(right);
                if *compare_op == BinaryOperator::Eq {
                    *expr = call("array_has", vec![a, (**left).clone()]);
                } else if let Some(op) = negated(compare_op) {
                    *expr = not(Expr::AllOp {
                        left: left.clone(),
                        compare_op: op,
                        right: Box::new(a),
                    });
                }
            }
            Expr::AllOp {
                left,
                compare_op,
                right,
            } if !matches!(right.as_ref(), Expr::Subquery(_)) => {
                let a = array(right);
                if *compare_op == BinaryOperator::NotEq {
                    *expr = not(call("array_has", vec![a, (**left).clone()]));
                } else {
                    **right = a;
                }
            }
            _ => {}
        }
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
    fn any_and_all_over_arrays_keep_three_values() {
        assert_eq!(
            rewritten("select 3 = any(a), 3 <> all(a), 3 > any(a), 3 < all(a)"),
            "SELECT array_has(a, 3), NOT (array_has(a, 3)), NOT (3 <= ALL(a)), 3 < ALL(a)"
        );
        assert_eq!(
            rewritten("select x = any('{a,b}')"),
            "SELECT array_has(CAST('{a,b}' AS TEXT[]), x)"
        );
        // Subqueries stay.
        assert_eq!(
            rewritten("select x = any(select y from t)"),
            "SELECT x = ANY(SELECT y FROM t)"
        );
    }
}
