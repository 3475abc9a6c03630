//! Numeric literals DataFusion would misread.
//!
//! tarn parses `12.50` as a decimal (PostgreSQL's numeric), but DataFusion's decimal parsing of
//! exponent notation is broken (`1e10` gets a negative scale, `1e300` overflows). A literal
//! written with an exponent is read as `double precision` instead: exact for every value such a
//! literal is normally used for, where PostgreSQL would keep a numeric.
//!
//! A constant cast to an unconstrained `numeric` (`10::numeric`, `'1e3'::numeric`,
//! `CAST('3.14' AS numeric)`) becomes a cast to `numeric(p, s)` of the constant's own digits
//! (`numeric(2, 0)`, `numeric(4, 0)` of `1000`, `numeric(3, 2)`): PostgreSQL keeps the value's
//! own scale, where DataFusion's unconstrained numeric is `Decimal128(38, 10)` (ten fraction
//! digits, `10::numeric` printed `10.0000000000`) and Arrow cannot read exponents.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, ExactNumberInfo, Expr, Statement, UnaryOperator, Value, ValueWithSpan,
    VisitMut, VisitorMut,
};

/// Rewrites exponent-notation number literals into `'<text>'::double precision`.
pub fn rewrite_exponent_literals(statement: &mut Statement) {
    struct Rewriter;
    impl VisitorMut for Rewriter {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Some(exact) = exact_numeric_cast(expr) {
                *expr = exact;
                return ControlFlow::Continue(());
            }
            if let Expr::Value(ValueWithSpan {
                value: Value::Number(text, _),
                span,
            }) = expr
                && text.contains(['e', 'E'])
            {
                *expr = Expr::Cast {
                    kind: CastKind::DoubleColon,
                    expr: Box::new(Expr::Value(ValueWithSpan {
                        value: Value::SingleQuotedString(text.clone()),
                        span: *span,
                    })),
                    data_type: DataType::DoublePrecision,
                    array: false,
                    format: None,
                };
            }
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewriter);
}

/// `constant::numeric` (unconstrained) as a cast of the constant's plain digits to
/// `numeric(p, s)` with the constant's own precision and scale; `None` for anything else.
fn exact_numeric_cast(expr: &Expr) -> Option<Expr> {
    let Expr::Cast {
        kind,
        expr: inner,
        data_type:
            DataType::Numeric(ExactNumberInfo::None)
            | DataType::Decimal(ExactNumberInfo::None)
            | DataType::Dec(ExactNumberInfo::None),
        array: false,
        format: None,
    } = expr
    else {
        return None;
    };
    let Expr::Value(ValueWithSpan {
        value: Value::Number(text, _) | Value::SingleQuotedString(text),
        span,
    }) = inner.as_ref()
    else {
        return None;
    };
    let value: bigdecimal::BigDecimal = text.trim().parse().ok()?;
    let value = if value.fractional_digit_count() < 0 {
        value.with_scale(0)
    } else {
        value
    };
    let scale = value.fractional_digit_count();
    let (digits, _) = value.as_bigint_and_exponent();
    let magnitude = digits.magnitude().to_string();
    let precision = (magnitude.len() as i64).max(scale).max(1);
    if precision > 38 {
        return None;
    }
    let negative = digits.sign() == bigdecimal::num_bigint::Sign::Minus;
    let plain = value.abs().to_plain_string();
    let cast = Expr::Cast {
        kind: kind.clone(),
        expr: Box::new(Expr::Value(ValueWithSpan {
            value: Value::Number(plain, false),
            span: *span,
        })),
        data_type: DataType::Numeric(ExactNumberInfo::PrecisionAndScale(precision as u64, scale)),
        array: false,
        format: None,
    };
    Some(if negative {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: Box::new(Expr::Nested(Box::new(cast))),
        }
    } else {
        cast
    })
}

#[cfg(test)]
mod tests {
    use crate::sql::{Command, parse};
    use datafusion::sql::parser::Statement as DFStatement;

    #[test]
    fn exponents_become_doubles() {
        let Command::Plan(DFStatement::Statement(s)) =
            parse("select 1e10, 2.5, -1.5E-3 from t").unwrap().remove(0)
        else {
            panic!()
        };
        let text = s.to_string();
        assert!(text.contains("'1e10'::DOUBLE PRECISION"), "{text}");
        assert!(text.contains("'1.5E-3'::DOUBLE PRECISION"), "{text}");
        assert!(text.contains("2.5"), "{text}");
    }

    #[test]
    fn numeric_constants_keep_their_scale() {
        let Command::Plan(DFStatement::Statement(s)) = parse(
            "select 10::numeric, '1e3'::numeric, cast('3.140' as numeric), '-2.5'::numeric, \
             x::numeric from t",
        )
        .unwrap()
        .remove(0) else {
            panic!()
        };
        let text = s.to_string();
        assert!(text.contains("10::NUMERIC(2,0)"), "{text}");
        assert!(text.contains("1000::NUMERIC(4,0)"), "{text}");
        assert!(text.contains("CAST(3.140 AS NUMERIC(4,3))"), "{text}");
        assert!(text.contains("-(2.5::NUMERIC(2,1))"), "{text}");
        assert!(text.contains("x::NUMERIC"), "{text}");
    }
}
