//! MERGE's parser hook: PostgreSQL's grammar, which sqlparser 0.62 does not fully take.
//!
//! sqlparser 0.62 refuses PostgreSQL's `WHEN ... THEN DO NOTHING`, and accepts clauses that
//! PostgreSQL rejects as unreachable. tarn parses MERGE itself (with the parser's own pieces
//! for table factors, expressions, assignments and VALUES) and represents DO NOTHING as an
//! UPDATE without assignments, which `sql::dml` reads as "nothing", and `INSERT DEFAULT
//! VALUES` as a VALUES row of no values, which `sql::defaults::fill_merge` fills with every
//! column's default.

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    Merge, MergeAction, MergeClause, MergeClauseKind, MergeInsertExpr, MergeInsertKind,
    MergeUpdateExpr, ObjectName, Statement,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{IsOptional, Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// Whether the parser is at a MERGE statement.
pub fn at_merge(parser: &Parser) -> bool {
    matches!(parser.peek_token().token, Token::Word(w) if w.keyword == Keyword::MERGE)
}

fn error<T>(message: impl Into<String>) -> Result<T, ParserError> {
    Err(ParserError::ParserError(message.into()))
}

/// Parses `MERGE INTO target USING source ON cond WHEN ...` (the parser is at `MERGE`).
pub fn parse_merge(parser: &mut Parser) -> Result<Statement, ParserError> {
    let merge_token = parser.expect_keyword(Keyword::MERGE)?;
    let into = parser.parse_keyword(Keyword::INTO);
    let table = parser.parse_table_factor()?;
    parser.expect_keyword_is(Keyword::USING)?;
    let source = parser.parse_table_factor()?;
    parser.expect_keyword_is(Keyword::ON)?;
    let on = parser.parse_expr()?;
    let mut clauses = Vec::new();
    // Whether an unconditional MATCHED / NOT MATCHED clause came already.
    let mut unconditional = [false, false];
    while parser.parse_keyword(Keyword::WHEN) {
        let when_token = parser.get_current_token().clone();
        let not = parser.parse_keyword(Keyword::NOT);
        parser.expect_keyword_is(Keyword::MATCHED)?;
        let clause_kind = if !not {
            MergeClauseKind::Matched
        } else if parser.parse_keywords(&[Keyword::BY, Keyword::SOURCE]) {
            MergeClauseKind::NotMatchedBySource
        } else if parser.parse_keywords(&[Keyword::BY, Keyword::TARGET]) {
            MergeClauseKind::NotMatchedByTarget
        } else {
            MergeClauseKind::NotMatched
        };
        let matched = matches!(clause_kind, MergeClauseKind::Matched);
        let predicate = if parser.parse_keyword(Keyword::AND) {
            Some(parser.parse_expr()?)
        } else {
            None
        };
        let group = usize::from(!matched);
        if unconditional[group] {
            return error("unreachable WHEN clause specified after unconditional WHEN clause");
        }
        unconditional[group] = predicate.is_none();
        parser.expect_keyword_is(Keyword::THEN)?;
        let action = if parser.parse_keywords(&[Keyword::DO, Keyword::NOTHING]) {
            MergeAction::Update(MergeUpdateExpr {
                update_token: AttachedToken::empty(),
                assignments: Vec::new(),
                update_predicate: None,
                delete_predicate: None,
            })
        } else {
            match parser.parse_one_of_keywords(&[Keyword::UPDATE, Keyword::DELETE, Keyword::INSERT])
            {
                Some(Keyword::UPDATE) if matched => {
                    let update_token = parser.get_current_token().clone();
                    parser.expect_keyword_is(Keyword::SET)?;
                    MergeAction::Update(MergeUpdateExpr {
                        update_token: update_token.into(),
                        assignments: parser.parse_comma_separated(Parser::parse_assignment)?,
                        update_predicate: None,
                        delete_predicate: None,
                    })
                }
                Some(Keyword::DELETE) if matched => MergeAction::Delete {
                    delete_token: parser.get_current_token().clone().into(),
                },
                Some(Keyword::INSERT) if !matched => {
                    let insert_token = parser.get_current_token().clone();
                    let columns = parser
                        .parse_parenthesized_column_list(IsOptional::Optional, false)?
                        .into_iter()
                        .map(|c| ObjectName::from(vec![c]))
                        .collect();
                    // DEFAULT VALUES: a row of no values, every column's default
                    // (`sql::defaults::fill_merge`).
                    let (kind_token, values) = if parser
                        .parse_keywords(&[Keyword::DEFAULT, Keyword::VALUES])
                    {
                        let values = datafusion::sql::sqlparser::ast::Values {
                            explicit_row: false,
                            value_keyword: false,
                            rows: vec![datafusion::sql::sqlparser::ast::Parens::with_empty_span(
                                Vec::new(),
                            )],
                        };
                        (parser.get_current_token().clone(), values)
                    } else {
                        let token = parser.expect_keyword(Keyword::VALUES)?;
                        (token, parser.parse_values(false, false)?)
                    };
                    MergeAction::Insert(MergeInsertExpr {
                        insert_token: insert_token.into(),
                        columns,
                        kind_token: kind_token.into(),
                        kind: MergeInsertKind::Values(values),
                        insert_predicate: None,
                    })
                }
                Some(k) => {
                    return error(format!(
                        "{k:?} is not allowed in a {clause_kind} merge clause"
                    ));
                }
                None => {
                    return parser
                        .expected("UPDATE, DELETE, INSERT or DO NOTHING", parser.peek_token());
                }
            }
        };
        clauses.push(MergeClause {
            when_token: when_token.into(),
            clause_kind,
            predicate,
            action,
        });
    }
    if clauses.is_empty() {
        return parser.expected("WHEN", parser.peek_token());
    }
    Ok(Statement::Merge(Merge {
        merge_token: merge_token.into(),
        optimizer_hints: Vec::new(),
        into,
        table,
        source,
        on: Box::new(on),
        clauses,
        output: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dialect::TarnDialect;

    fn parse(sql: &str) -> Result<Statement, ParserError> {
        let dialect = TarnDialect::default();
        let mut parser = Parser::new(&dialect).try_with_sql(sql)?;
        parse_merge(&mut parser)
    }

    #[test]
    fn do_nothing_is_an_empty_update() {
        let Statement::Merge(m) = parse(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.x THEN DO NOTHING \
             WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(m.clauses.len(), 3);
        assert!(matches!(&m.clauses[0].action, MergeAction::Update(u) if u.assignments.is_empty()));
    }

    #[test]
    fn refuses_unreachable_and_misplaced_clauses() {
        assert!(
            parse("MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE WHEN MATCHED THEN DELETE")
                .is_err()
        );
        assert!(parse("MERGE INTO t USING s ON true WHEN NOT MATCHED THEN DELETE").is_err());
        assert!(parse("MERGE INTO t USING s ON true").is_err());
    }
}
