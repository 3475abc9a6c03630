//! Building pieces of sqlparser's AST that the rewrites share.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, Ident, ObjectName, ObjectNamePart, Value,
};

/// `name(args...)`: a plain call of a function by its unqualified name.
pub(super) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// The plain unnamed arguments of a call, if that is all it has.
pub(super) fn plain_args(args: &[FunctionArg]) -> Option<Vec<Expr>> {
    args.iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// `range(1, cardinality(a) + 1)`: the 1-based positions of `a`'s elements.
pub(super) fn positions(array: Expr) -> Expr {
    let count = Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(call("cardinality", vec![array])),
        data_type: DataType::BigInt(None),
        array: false,
        format: None,
    };
    let end = Expr::BinaryOp {
        left: Box::new(count),
        op: BinaryOperator::Plus,
        right: Box::new(Expr::Value(Value::Number("1".into(), false).into())),
    };
    let one = Expr::Value(Value::Number("1".into(), false).into());
    call("range", vec![one, end])
}

/// `sql` parsed with PostgreSQL's dialect, passed through `rewrite` and printed: what the
/// rewrites' unit tests compare with the SQL they expect.
#[cfg(test)]
pub(crate) fn rewritten(
    sql: &str,
    rewrite: impl FnOnce(&mut datafusion::sql::sqlparser::ast::Statement),
) -> String {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
        .expect("test SQL parses")
        .remove(0);
    rewrite(&mut statement);
    statement.to_string()
}
