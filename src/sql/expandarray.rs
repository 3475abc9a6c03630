//! `information_schema._pg_expandarray(arr)`: PostgreSQL's set-returning function of an
//! array's elements and positions `(x, n)`, which pgjdbc's DatabaseMetaData calls in select
//! lists (`getPrimaryKeys`, `getIndexInfo`) and reads with `(... ).x` / `(...).n`.
//!
//! DataFusion's one set-returning construct in a select list is `unnest`, which unnests several
//! calls of one row side by side as PostgreSQL runs several set-returning functions. So the
//! call becomes `named_struct('x', unnest(arr), 'n', unnest(range(1, cardinality(arr) + 1)))`
//! (unnesting a list of records is refused below a select list's top level), and PostgreSQL's
//! field selection `(expr).field`, which DataFusion cannot plan, becomes
//! `get_field(expr, 'field')`. SQLAlchemy's `generate_subscripts(arr, 1)` becomes
//! `unnest(range(1, cardinality(arr) + 1))` (1-based also for the 0-based vector types, whose
//! subscripts it only orders by).

use super::ast::{call, positions};
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;

use datafusion::sql::sqlparser::ast::{
    AccessExpr, BinaryOperator, CaseWhen, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    ObjectNamePart, Statement, Value, VisitMut, VisitorMut,
};

/// Rewrites every `_pg_expandarray(...)` call and `(expr).field` selection of `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut Expand);
}

struct Expand;

fn text(s: &str) -> Expr {
    Expr::Value(Value::SingleQuotedString(s.to_owned()).into())
}

/// `named_struct('x', unnest(a), 'n', unnest(range(1, cardinality(a) + 1)))`.
fn expand(array: Expr) -> Expr {
    call(
        "named_struct",
        vec![
            text("x"),
            call("unnest", vec![array.clone()]),
            text("n"),
            call("unnest", vec![positions(array)]),
        ],
    )
}

impl VisitorMut for Expand {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Function(f)
                if f.name
                    .0
                    .last()
                    .and_then(ObjectNamePart::as_ident)
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("_pg_expandarray")) =>
            {
                if let FunctionArguments::List(list) = &f.args
                    && let [FunctionArg::Unnamed(FunctionArgExpr::Expr(array))] =
                        list.args.as_slice()
                {
                    *expr = expand(array.clone());
                }
            }
            // `generate_subscripts(arr, 1)`: the positions of arr's elements, zipped with
            // other set-returning calls of the select list like `unnest(arr)`.
            Expr::Function(f)
                if f.name
                    .0
                    .last()
                    .and_then(ObjectNamePart::as_ident)
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("generate_subscripts")) =>
            {
                if let FunctionArguments::List(list) = &f.args
                    && let [
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(array)),
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(dim)),
                    ] = list.args.as_slice()
                {
                    // tarn's arrays have one dimension: other dimensions have no subscripts.
                    let one = Expr::Value(Value::Number("1".into(), false).into());
                    let by_dim = Expr::Case {
                        case_token: AttachedToken::empty(),
                        end_token: AttachedToken::empty(),
                        operand: None,
                        conditions: vec![CaseWhen {
                            condition: Expr::BinaryOp {
                                left: Box::new(dim.clone()),
                                op: BinaryOperator::Eq,
                                right: Box::new(one),
                            },
                            result: positions(array.clone()),
                        }],
                        else_result: Some(Box::new(call("make_array", vec![]))),
                    };
                    *expr = call("unnest", vec![by_dim]);
                }
            }
            // PostgreSQL's field selection from a composite value: `(expr).field`.
            Expr::CompoundFieldAccess { root, access_chain }
                if matches!(root.as_ref(), Expr::Nested(_))
                    && access_chain
                        .iter()
                        .all(|a| matches!(a, AccessExpr::Dot(Expr::Identifier(_)))) =>
            {
                let mut out = root.as_ref().clone();
                for access in access_chain.iter() {
                    if let AccessExpr::Dot(Expr::Identifier(field)) = access {
                        out = call("get_field", vec![out, text(&field.value)]);
                    }
                }
                *expr = out;
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn expandarray_is_unnested() {
        let mut s = Parser::parse_sql(
            &PostgreSqlDialect {},
            "select (information_schema._pg_expandarray(i.indkey)).n from pg_index i",
        )
        .unwrap()
        .remove(0);
        rewrite(&mut s);
        assert_eq!(
            s.to_string(),
            "SELECT get_field((named_struct('x', unnest(i.indkey), 'n', unnest(range(1, CAST(cardinality(i.indkey) AS BIGINT) + 1)))), 'n') FROM pg_index i"
        );
    }
}
