//! Building pieces of sqlparser's AST that the rewrites share.

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, ObjectNamePart,
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
