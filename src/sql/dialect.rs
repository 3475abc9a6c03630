//! `TarnDialect`: PostgreSQL's dialect, wrapped so tarn's SQL extensions enter through the parser.
//!
//! sqlparser switches about 29 PostgreSQL-only parse paths on `dialect_of!(self is
//! PostgreSqlDialect)`, which compares [`Dialect::dialect`] type ids; the wrapper therefore reports
//! PostgreSqlDialect's type id and forwards every method PostgreSqlDialect overrides. Extensions
//! (UPSERT, CALL, PARTITIONED BY, time travel, ...) hook in through [`Dialect::parse_statement`]
//! and friends, so a keyword inside a string literal or a comment is never mistaken for syntax.

use std::any::TypeId;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, ColumnOption, Expr, Statement, TrimWhereField, UnaryOperator,
};
use datafusion::sql::sqlparser::dialect::{Dialect, PostgreSqlDialect, Precedence};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// The dialect every SQL text sent to tarn is parsed with.
#[derive(Debug)]
pub struct TarnDialect {
    pg: PostgreSqlDialect,
    /// `FOR SYSTEM_TIME AS OF` / `VERSION AS OF` after a table name. sqlparser's versioning
    /// also claims a bare `AT`, `BEFORE` or `CHANGES` after a table name (Snowflake's
    /// syntax), which PostgreSQL reads as a table alias: [`super::parse`] retries a statement
    /// that fails with versioning off, so such aliases still work.
    table_versioning: bool,
}

impl Default for TarnDialect {
    fn default() -> Self {
        Self {
            pg: PostgreSqlDialect {},
            table_versioning: true,
        }
    }
}

impl TarnDialect {
    /// The dialect without table versions (for the alias retry).
    pub fn without_table_versioning() -> Self {
        Self {
            table_versioning: false,
            ..Self::default()
        }
    }
}

/// `TRIM(LEADING FROM s)` (PostgreSQL: a side and no characters, meaning spaces), which
/// sqlparser does not parse: the side when the parser is at such a call.
fn trim_side_without_characters(parser: &Parser) -> Option<TrimWhereField> {
    let [trim, open, side, from] = parser.peek_tokens::<4>();
    let keyword = |t: &Token| match t {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    };
    if keyword(&trim) != Some(Keyword::TRIM)
        || open != Token::LParen
        || keyword(&from) != Some(Keyword::FROM)
    {
        return None;
    }
    match keyword(&side)? {
        Keyword::LEADING => Some(TrimWhereField::Leading),
        Keyword::TRAILING => Some(TrimWhereField::Trailing),
        Keyword::BOTH => Some(TrimWhereField::Both),
        _ => None,
    }
}

fn parse_trim_side(parser: &mut Parser, side: TrimWhereField) -> Result<Expr, ParserError> {
    for _ in 0..4 {
        parser.next_token();
    }
    let expr = parser.parse_expr()?;
    parser.expect_token(&Token::RParen)?;
    Ok(Expr::Trim {
        expr: Box::new(expr),
        trim_where: Some(side),
        trim_what: None,
        trim_characters: None,
    })
}

/// Forwards boolean capability flags to PostgreSqlDialect.
macro_rules! forward_flags {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool { self.pg.$name() })*
    };
}

impl Dialect for TarnDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<PostgreSqlDialect>()
    }

    fn supports_table_versioning(&self) -> bool {
        self.table_versioning
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.pg.identifier_quote_style(identifier)
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.pg.is_delimited_identifier_start(ch)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        self.pg.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        self.pg.is_identifier_part(ch)
    }
    fn is_reserved_for_identifier(&self, kw: Keyword) -> bool {
        self.pg.is_reserved_for_identifier(kw)
    }
    fn is_custom_operator_part(&self, ch: char) -> bool {
        self.pg.is_custom_operator_part(ch)
    }
    /// `GENERATED … AS IDENTITY (options)`: PostgreSQL's option list (any order), which
    /// sqlparser reads in one fixed order only (`sql::create_table::parse_identity`).
    fn parse_column_option(
        &self,
        parser: &mut Parser,
    ) -> Result<Option<Result<Option<ColumnOption>, ParserError>>, ParserError> {
        Ok(super::create_table::parse_identity(parser))
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        self.pg.get_next_precedence(parser)
    }
    fn prec_value(&self, prec: Precedence) -> u8 {
        self.pg.prec_value(prec)
    }
    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if let Some(side) = trim_side_without_characters(parser) {
            return Some(parse_trim_side(parser, side));
        }
        unary_sign(parser).or_else(|| self.pg.parse_prefix(parser))
    }
    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        is_distinct_from(parser, expr)
            .or_else(|| between_symmetric(parser, expr))
            .or_else(|| self.pg.parse_infix(parser, expr, precedence))
    }
    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        if super::create_table::at_create_table(parser) {
            return Some(super::create_table::parse_create_table(parser));
        }
        if super::merge::at_merge(parser) {
            return Some(super::merge::parse_merge(parser));
        }
        if let Some((at, which)) = super::overriding::at_insert_overriding(parser) {
            return Some(super::overriding::parse_insert_overriding(
                parser, self, at, which,
            ));
        }
        self.pg.parse_statement(parser)
    }

    forward_flags!(
        supports_unicode_string_literal,
        supports_filter_during_aggregation,
        supports_group_by_expr,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_create_index_with_clause,
        supports_explain_with_utility_options,
        supports_listen_notify,
        supports_factorial_operator,
        supports_bitwise_shift_operators,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_colon_operator,
        supports_named_fn_args_with_expr_name,
        supports_empty_projections,
        supports_nested_comments,
        supports_string_escape_constant,
        supports_numeric_literal_underscores,
        supports_array_typedef_with_brackets,
        supports_geometric_types,
        supports_set_names,
        supports_alter_column_type_using,
        supports_notnull_operator,
        supports_interval_options,
        supports_insert_table_alias,
        supports_create_table_like_parenthesized,
        supports_select_wildcard_with_alias,
        supports_comma_separated_trim,
        supports_xml_expressions,
        supports_comment_optimizer_hint,
    );
}

/// sqlparser's PostgreSQL precedence of `COLLATE`, the operator just below unary minus.
const COLLATE_PREC: u8 = 120;
/// sqlparser's PostgreSQL precedence of `BETWEEN`.
const BETWEEN_PREC: u8 = 60;
/// sqlparser's PostgreSQL precedence of `IS`.
const IS_PREC: u8 = 40;

/// Unary `-` / `+` bind tighter than `^`, `AT TIME ZONE` and `COLLATE` in PostgreSQL
/// (`- 2 ^ 2` is `(-2) ^ 2` = 4); sqlparser binds them like `*` (giving -4).
fn unary_sign(parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
    let op = match parser.peek_token_ref().token {
        Token::Minus => UnaryOperator::Minus,
        Token::Plus => UnaryOperator::Plus,
        _ => return None,
    };
    parser.advance_token();
    Some(
        parser
            .parse_subexpr(COLLATE_PREC)
            .map(|operand| Expr::UnaryOp {
                op,
                expr: Box::new(operand),
            }),
    )
}

/// `a IS [NOT] DISTINCT FROM b`: the right operand ends where `IS` would, so `x is not distinct
/// from y and z` is `(x is not distinct from y) and z` as in PostgreSQL; sqlparser reads a
/// whole expression there (`x is not distinct from (y and z)`).
fn is_distinct_from(parser: &mut Parser, left: &Expr) -> Option<Result<Expr, ParserError>> {
    let negated = if parser.parse_keywords(&[Keyword::IS, Keyword::DISTINCT, Keyword::FROM]) {
        false
    } else if parser.parse_keywords(&[Keyword::IS, Keyword::NOT, Keyword::DISTINCT, Keyword::FROM])
    {
        true
    } else {
        return None;
    };
    let left = Box::new(left.clone());
    Some(parser.parse_subexpr(IS_PREC).map(|right| {
        if negated {
            Expr::IsNotDistinctFrom(left, Box::new(right))
        } else {
            Expr::IsDistinctFrom(left, Box::new(right))
        }
    }))
}

/// `x [NOT] BETWEEN SYMMETRIC a AND b`, which sqlparser does not know, as PostgreSQL defines it:
/// `(x BETWEEN a AND b OR x BETWEEN b AND a)` (so NULL bounds give NULL as there, which
/// least/greatest would not). `BETWEEN ASYMMETRIC` is plain BETWEEN.
fn between_symmetric(parser: &mut Parser, left: &Expr) -> Option<Result<Expr, ParserError>> {
    let negated = if parser.parse_keywords(&[Keyword::BETWEEN, Keyword::SYMMETRIC]) {
        false
    } else if parser.parse_keywords(&[Keyword::NOT, Keyword::BETWEEN, Keyword::SYMMETRIC]) {
        true
    } else if parser.parse_keywords(&[Keyword::BETWEEN, Keyword::ASYMMETRIC]) {
        return Some(parser.parse_between(left.clone(), false));
    } else if parser.parse_keywords(&[Keyword::NOT, Keyword::BETWEEN, Keyword::ASYMMETRIC]) {
        return Some(parser.parse_between(left.clone(), true));
    } else {
        return None;
    };
    let mut bounds = || -> Result<(Expr, Expr), ParserError> {
        let prec = BETWEEN_PREC;
        let low = parser.parse_subexpr(prec)?;
        parser.expect_keyword_is(Keyword::AND)?;
        let high = parser.parse_subexpr(prec)?;
        Ok((low, high))
    };
    Some(bounds().map(|(low, high)| {
        let between = |low: &Expr, high: &Expr| Expr::Between {
            expr: Box::new(left.clone()),
            negated: false,
            low: Box::new(low.clone()),
            high: Box::new(high.clone()),
        };
        let either = Expr::Nested(Box::new(Expr::BinaryOp {
            left: Box::new(between(&low, &high)),
            op: BinaryOperator::Or,
            right: Box::new(between(&high, &low)),
        }));
        if negated {
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr: Box::new(either),
            }
        } else {
            either
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statements that exercise PostgreSQL-only parse paths: TarnDialect must parse each exactly
    /// as PostgreSqlDialect does (same AST), or a forwarded method is missing.
    const CORPUS: &[&str] = &[
        "SELECT 1",
        "SELECT a::int, b->>'k', c #> '{a}', d @> e, f ~ 'x', g !~* 'y' FROM t",
        "SELECT E'a\\nb', U&'d\\0061t', $$dollar$$, 1_000",
        "SELECT x COLLATE \"C\" FROM t WHERE y IS NOT DISTINCT FROM z",
        "SELECT count(*) FILTER (WHERE a > 1) FROM t GROUP BY ROLLUP (a)",
        "SELECT EXTRACT('epoch' FROM now()), interval '1 day' hour",
        "SELECT a[1][2], ARRAY[1,2] || ARRAY[3] FROM t",
        "SELECT 5 !, 1 << 2, 2 >> 1, 3 # 1",
        "SELECT * FROM t WHERE a NOTNULL",
        "SELECT f(a => 1, b := 2)",
        "LISTEN ch",
        "COMMENT ON TABLE t IS 'x'",
        "SET search_path TO a, public",
        "SET TIME ZONE 'UTC'",
        "SET NAMES 'UTF8'",
        "SHOW ALL",
        "RESET ALL",
        "INSERT INTO t AS x (a) VALUES (1)",
        "ALTER TABLE t ALTER COLUMN a TYPE int USING a::int",
        "SELECT /* nested /* comment */ */ 1",
        "SELECT trim(both 'x' FROM 'xax')",
    ];

    fn parsed(sql: &str) -> String {
        Parser::parse_sql(&TarnDialect::default(), sql).unwrap()[0].to_string()
    }

    #[test]
    fn operators_bind_as_in_postgres() {
        assert_eq!(parsed("SELECT - 2 ^ 2"), "SELECT -2 ^ 2");
        assert_eq!(
            parsed("SELECT -a ^ 2, -b::INT, - c * 3"),
            "SELECT -a ^ 2, -b::INT, -c * 3"
        );
        // The unary minus is the base of `^`, not its result.
        let ast = Parser::parse_sql(&TarnDialect::default(), "SELECT - 2 ^ 2").unwrap();
        assert!(format!("{ast:?}").contains("left: UnaryOp"), "{ast:?}");
        let ast = Parser::parse_sql(
            &TarnDialect::default(),
            "SELECT a IS NOT DISTINCT FROM b AND c < d",
        )
        .unwrap();
        assert!(
            format!("{ast:?}").contains("UnnamedExpr(BinaryOp { left: IsNotDistinctFrom"),
            "{ast:?}"
        );
        let ast = Parser::parse_sql(
            &TarnDialect::default(),
            "SELECT a IS DISTINCT FROM b + 1 OR c",
        )
        .unwrap();
        assert!(format!("{ast:?}").contains("op: Or"), "{ast:?}");
        assert_eq!(
            parsed("SELECT 5 BETWEEN SYMMETRIC 10 AND 1, x NOT BETWEEN SYMMETRIC a AND b + 1"),
            "SELECT (5 BETWEEN 10 AND 1 OR 5 BETWEEN 1 AND 10), \
             NOT (x BETWEEN a AND b + 1 OR x BETWEEN b + 1 AND a)"
        );
        assert_eq!(
            parsed("SELECT 5 BETWEEN ASYMMETRIC 1 AND 10 AND true"),
            "SELECT 5 BETWEEN 1 AND 10 AND true"
        );
    }

    #[test]
    fn reports_postgres_type_id() {
        assert_eq!(
            TarnDialect::default().dialect(),
            TypeId::of::<PostgreSqlDialect>()
        );
    }

    #[test]
    fn parses_like_postgres() {
        for sql in CORPUS {
            let ours = Parser::parse_sql(&TarnDialect::default(), sql);
            let pg = Parser::parse_sql(&PostgreSqlDialect {}, sql);
            assert_eq!(
                format!("{ours:?}"),
                format!("{pg:?}"),
                "TarnDialect parses {sql:?} differently from PostgreSqlDialect"
            );
            assert!(pg.is_ok(), "corpus statement {sql:?} should parse: {pg:?}");
        }
    }
}
