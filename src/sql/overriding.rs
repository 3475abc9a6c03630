//! `INSERT INTO t [(cols)] OVERRIDING { SYSTEM | USER } VALUE …`: PostgreSQL's clause for
//! identity columns, which sqlparser 0.62 does not parse.
//!
//! The dialect's statement hook finds the clause right after the target's name and column
//! list (looking ahead over the tokens, consuming nothing), parses the statement's tokens
//! without its three words with the dialect's own parser, and records the choice on the
//! `Insert` as a setting (`Insert::settings`, a ClickHouse clause PostgreSQL has none of):
//! [`take`] reads it back — and removes it — where INSERT's values are filled
//! (`sql::defaults::fill_insert`): SYSTEM VALUE lets a `GENERATED ALWAYS` column take the
//! given value, USER VALUE replaces the values given for identity columns by their sequence's.

use datafusion::sql::sqlparser::ast::{Expr, Ident, Insert, Setting, Statement, Value};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

/// The setting that carries the clause on the `Insert`.
const SETTING: &str = "tarn_overriding";

/// Which values an INSERT's `OVERRIDING` clause overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overriding {
    /// `OVERRIDING SYSTEM VALUE`: the given values win over `GENERATED ALWAYS`.
    System,
    /// `OVERRIDING USER VALUE`: the identity columns' sequences win over the given values.
    User,
}

fn is_word(t: &Token, value: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(value))
}

fn is_keyword(t: &Token, keyword: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == keyword && w.quote_style.is_none())
}

/// Where the `OVERRIDING` of an `INSERT INTO name [AS alias] [(cols)] OVERRIDING …` the
/// parser is at stands (in tokens from the parser's position), and which it is.
pub fn at_insert_overriding(parser: &Parser) -> Option<(usize, Overriding)> {
    let token = |n: usize| &parser.peek_nth_token_ref(n).token;
    if !is_keyword(token(0), Keyword::INSERT) || !is_keyword(token(1), Keyword::INTO) {
        return None;
    }
    // The name: words separated by periods.
    let mut n = 2;
    loop {
        if !matches!(token(n), Token::Word(_)) {
            return None;
        }
        n += 1;
        if matches!(token(n), Token::Period) {
            n += 1;
        } else {
            break;
        }
    }
    if is_keyword(token(n), Keyword::AS) {
        n += 2;
    }
    if matches!(token(n), Token::LParen) {
        let mut depth = 0usize;
        loop {
            match token(n) {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        n += 1;
                        break;
                    }
                }
                Token::EOF => return None,
                _ => {}
            }
            n += 1;
        }
    }
    if !is_word(token(n), "overriding") || !is_keyword(token(n + 2), Keyword::VALUE) {
        return None;
    }
    let which = match token(n + 1) {
        t if is_keyword(t, Keyword::SYSTEM) => Overriding::System,
        t if is_keyword(t, Keyword::USER) => Overriding::User,
        _ => return None,
    };
    Some((n, which))
}

/// Parses the INSERT the parser is at, whose `OVERRIDING … VALUE` is the `at`-th token from
/// here (see [`at_insert_overriding`]).
pub fn parse_insert_overriding(
    parser: &mut Parser,
    dialect: &dyn Dialect,
    at: usize,
    which: Overriding,
) -> Result<Statement, ParserError> {
    // The statement's tokens (to its `;` or the end), without the clause's three.
    let mut tokens: Vec<TokenWithSpan> = Vec::new();
    let mut n = 0;
    let mut depth = 0usize;
    loop {
        let t = parser.peek_nth_token(n);
        match &t.token {
            Token::EOF => break,
            Token::SemiColon if depth == 0 => break,
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !(at..at + 3).contains(&n) {
            tokens.push(t);
        }
        n += 1;
    }
    let tokens_len = tokens.len();
    let mut sub = Parser::new(dialect).with_tokens_with_locations(tokens);
    let mut statement = sub.parse_statement()?;
    let taken = tokens_len.min(sub.index());
    let Statement::Insert(insert) = &mut statement else {
        return Err(ParserError::ParserError(
            "OVERRIDING belongs to INSERT".to_owned(),
        ));
    };
    let value = match which {
        Overriding::System => "system",
        Overriding::User => "user",
    };
    insert.settings = Some(vec![Setting {
        key: Ident::new(SETTING),
        value: Expr::Value(Value::SingleQuotedString(value.to_owned()).into()),
    }]);
    // The main parser moves past what the statement took, and the clause.
    let skip = if taken > at { taken + 3 } else { taken };
    for _ in 0..skip {
        parser.next_token();
    }
    Ok(statement)
}

/// The `OVERRIDING` clause recorded on `insert`, removed from it.
pub fn take(insert: &mut Insert) -> Option<Overriding> {
    let settings = insert.settings.as_mut()?;
    let i = settings.iter().position(|s| s.key.value == SETTING)?;
    let setting = settings.remove(i);
    if settings.is_empty() {
        insert.settings = None;
    }
    match setting.value {
        Expr::Value(v) => match v.value {
            Value::SingleQuotedString(s) if s == "system" => Some(Overriding::System),
            Value::SingleQuotedString(s) if s == "user" => Some(Overriding::User),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dialect::TarnDialect;

    fn parse(sql: &str) -> (Insert, Option<Overriding>, usize) {
        let dialect = TarnDialect::default();
        let statements = Parser::parse_sql(&dialect, sql).unwrap();
        let count = statements.len();
        let Statement::Insert(mut insert) = statements.into_iter().next().unwrap() else {
            panic!("not an insert");
        };
        let o = take(&mut insert);
        (insert, o, count)
    }

    #[test]
    fn the_clause_is_read_and_the_rest_parses_as_usual() {
        let (i, o, n) = parse(
            "insert into s.t (id, v) overriding system value values (1, 'a') returning id; select 1",
        );
        assert_eq!(o, Some(Overriding::System));
        assert_eq!(n, 2);
        assert_eq!(
            i.to_string(),
            "INSERT INTO s.t (id, v) VALUES (1, 'a') RETURNING id"
        );
        let (i, o, _) = parse("INSERT INTO t OVERRIDING USER VALUE SELECT 1, 'b'");
        assert_eq!(o, Some(Overriding::User));
        assert_eq!(i.to_string(), "INSERT INTO t SELECT 1, 'b'");
        let (_, o, _) = parse("insert into t (a) values (1)");
        assert_eq!(o, None);
    }
}
