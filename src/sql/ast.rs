//! Building pieces of sqlparser's AST that the rewrites share.

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType, ExcludeSelectItem, Expr, Function, FunctionArg,
    FunctionArgExpr, FunctionArgumentList, FunctionArguments, GroupByExpr, Ident, ObjectName,
    ObjectNamePart, Query, Select, SelectFlavor, SelectItem, SetExpr, TableAlias, TableFactor,
    TableWithJoins, Value, WildcardAdditionalOptions,
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

/// The integer literal `n`.
pub(super) fn number(n: &str) -> Expr {
    Expr::value(Value::Number(n.into(), false))
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
    query(SetExpr::Select(Box::new(select)))
}

/// `body` as a query of its own: no WITH, ORDER BY or LIMIT.
pub(super) fn query(body: SetExpr) -> Query {
    Query {
        with: None,
        body: Box::new(body),
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

/// `SELECT * EXCLUDE (hidden, …) FROM (inner) AS alias`: the select over a derived table
/// that drops again the columns a rewrite added to it (sort keys, ranks).
pub(super) fn select_excluding(inner: Query, alias: &str, hidden: Vec<Ident>) -> Select {
    let projection = vec![SelectItem::Wildcard(WildcardAdditionalOptions {
        opt_exclude: Some(ExcludeSelectItem::Multiple(
            hidden
                .into_iter()
                .map(|n| ObjectName::from(vec![n]))
                .collect(),
        )),
        ..Default::default()
    })];
    let from = vec![TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: Box::new(inner),
            alias: Some(TableAlias {
                explicit: true,
                name: Ident::new(alias),
                columns: vec![],
                at: None,
            }),
            sample: None,
        },
        joins: vec![],
    }];
    let SetExpr::Select(select) = *select(projection, from).body else {
        unreachable!("select builds a select")
    };
    *select
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
