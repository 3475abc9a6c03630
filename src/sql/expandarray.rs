//! `information_schema._pg_expandarray(arr)`: PostgreSQL's set-returning function of an
//! array's elements and positions `(x, n)`, which pgjdbc's DatabaseMetaData calls in select
//! lists (`getPrimaryKeys`, `getIndexInfo`) and reads with `(... ).x` / `(...).n`.
//!
//! DataFusion's one set-returning construct in a select list is `unnest`, which unnests several
//! calls of one row side by side as PostgreSQL runs several set-returning functions. So the
//! call becomes `unnest(_pg_expandarray(arr))` over the scalar function of the same name
//! (`query/pg_catalog/functions.rs`: a list of `(x, n)` records).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, ObjectNamePart, Statement, VisitMut, VisitorMut,
};

/// Wraps every `_pg_expandarray(...)` call of `statement` in `unnest`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut Expand);
}

struct Expand;

impl VisitorMut for Expand {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr
            && f
                .name
                .0
                .last()
                .and_then(ObjectNamePart::as_ident)
                .is_some_and(|i| i.value.eq_ignore_ascii_case("_pg_expandarray"))
        {
            f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new("_pg_expandarray"))]);
            let call = expr.clone();
            *expr = Expr::Function(Function {
                name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new("unnest"))]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(FunctionArgumentList {
                    duplicate_treatment: None,
                    args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(call))],
                    clauses: vec![],
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: vec![],
            });
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
            "SELECT (unnest(_pg_expandarray(i.indkey))).n FROM pg_index AS i"
        );
    }
}
