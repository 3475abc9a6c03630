//! Numeric literals DataFusion would misread.
//!
//! tarn parses `12.50` as a decimal (PostgreSQL's numeric), but DataFusion's decimal parsing of
//! exponent notation is broken (`1e10` gets a negative scale, `1e300` overflows). A literal
//! written with an exponent is read as `double precision` instead: exact for every value such a
//! literal is normally used for, where PostgreSQL would keep a numeric.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Statement, Value, ValueWithSpan, VisitMut, VisitorMut,
};

/// Rewrites exponent-notation number literals into `'<text>'::double precision`.
pub fn rewrite_exponent_literals(statement: &mut Statement) {
    struct Rewriter;
    impl VisitorMut for Rewriter {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
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
}
