//! Building pieces of sqlparser's AST that the rewrites share.

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, GroupByExpr, Ident, ObjectName, ObjectNamePart, Query,
    Select, SelectFlavor, SelectItem, SetExpr, TableWithJoins, Value,
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

/// `SELECT projection FROM from`, with nothing else.
pub(super) fn select(projection: Vec<SelectItem>, from: Vec<TableWithJoins>) -> Query {
    let select = Select {
        select_token: AttachedToken::empty(),
        optimizer_hints: vec![],
        distinct: None,
        select_modifiers: None,
        top: None,
        top_before_distinct: false,
        projection,
        exclude: None,
        into: None,
        from,
        lateral_views: vec![],
        prewhere: None,
        selection: None,
        group_by: GroupByExpr::Expressions(vec![], vec![]),
        cluster_by: vec![],
        distribute_by: vec![],
        sort_by: vec![],
        having: None,
        named_window: vec![],
        qualify: None,
        window_before_qualify: false,
        value_table_mode: None,
        connect_by: vec![],
        flavor: SelectFlavor::Standard,
    };
    Query {
        with: None,
        body: Box::new(SetExpr::Select(Box::new(select))),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: vec![],
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: vec![],
    }
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
