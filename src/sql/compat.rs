//! datafusion-pg-catalog's AST rewrites for client catalog queries, minus the one that gives
//! wrong answers and one that `names.rs` does in PostgreSQL's way.
//!
//! `PostgresCompatibilityParser` also runs `RemoveSubqueryFromProjection`, which replaces every
//! correlated scalar subquery in a select list by NULL (and stamps `LIMIT 1` on uncorrelated
//! ones, hiding PostgreSQL's 21000 "more than one row returned by a subquery"). So
//! `select c.name, (select count(*) from o where o.cid = c.id) from c` answered NULL for every
//! row. DataFusion decorrelates such subqueries itself (into outer joins, with the count bug
//! handled); where it cannot, the client gets an error, never a silently wrong answer.
//!
//! `RewriteArrayAnyAllOperation` made `x = ANY(a)` DataFusion's two-valued `array_contains`
//! (`3 = ANY(ARRAY[1, NULL])` false, PostgreSQL's NULL): `array_comparison.rs` does it with
//! three values. `FixArrayLiteral` split `'{...}'::int[]` on commas into `ARRAY[...]`,
//! accepting malformed input (`'{1,2'`) and quoted or NULL elements wrongly; the cast is left
//! to `query/pg_literals.rs`, which reads PostgreSQL's array input.
//!
//! `AliasDuplicatedProjectionRewrite` renamed `n.oid` of `SELECT n.oid, n.*` to `__alias_oid`,
//! a name the client saw; `names::name_output_columns` gives it a hidden suffix instead, so the
//! client sees `oid` twice, as from PostgreSQL.

use std::sync::LazyLock;

use datafusion::sql::sqlparser::ast::Statement;
use datafusion_pg_catalog::sql::rules::{
    CurrentUserVariableToSessionUserFunctionCall, FixVersionColumnName,
    PrependUnqualifiedPgTableName, ResolveUnqualifiedIdentifier, RewritePgCatalogOperator,
    RewriteRegCastToSubquery, SqlStatementRewriteRule, StripCallableQualifier, StripCollate,
};

static RULES: LazyLock<Vec<Box<dyn SqlStatementRewriteRule>>> = LazyLock::new(|| {
    // PostgresCompatibilityParser::new()'s order, without RemoveSubqueryFromProjection,
    // AliasDuplicatedProjectionRewrite, RewriteArrayAnyAllOperation and FixArrayLiteral.
    vec![
        Box::new(ResolveUnqualifiedIdentifier),
        Box::new(PrependUnqualifiedPgTableName),
        Box::new(StripCallableQualifier),
        Box::new(CurrentUserVariableToSessionUserFunctionCall),
        Box::new(StripCollate),
        Box::new(RewritePgCatalogOperator),
        Box::new(RewriteRegCastToSubquery::new()),
        Box::new(FixVersionColumnName),
    ]
});

/// Applies the client-compatibility rewrites to `statement`.
pub fn rewrite(mut statement: Statement) -> Statement {
    for rule in RULES.iter() {
        statement = rule.rewrite(statement);
    }
    statement
}
