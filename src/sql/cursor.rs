//! Cursor statements' parser hook: PostgreSQL's `DECLARE`, `FETCH`, `MOVE` and `CLOSE`.
//!
//! sqlparser 0.62 reads DECLARE/FETCH/CLOSE with other dialects' grammars (no `MOVE`, no
//! `FETCH 5 c`, no `BINARY` or `WITH HOLD` in PostgreSQL's order), so tarn reads them with
//! PostgreSQL's grammar (gram.y's `DeclareCursorStmt`, `FetchStmt`, `ClosePortalStmt`), using
//! the parser's own pieces for the query and names. The session runs them
//! (`server/session/cursors.rs`).

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::SqlError;
use super::command::fold_ident;

/// A cursor statement.
#[derive(Debug, Clone)]
pub enum CursorCommand {
    Declare(Box<Declare>),
    /// `FETCH` (rows returned) or `MOVE` (`move_only`: only the position changes).
    Fetch {
        name: String,
        direction: Direction,
        move_only: bool,
    },
    /// `CLOSE name`, or `CLOSE ALL` (`None`).
    Close(Option<String>),
}

/// `DECLARE name [BINARY] [[NO] SCROLL] CURSOR [WITH[OUT] HOLD] FOR query`.
#[derive(Debug, Clone)]
pub struct Declare {
    pub name: String,
    /// Rows of a simple-protocol FETCH in binary.
    pub binary: bool,
    /// `SCROLL` (`Some(true)`), `NO SCROLL` (`Some(false)`) or neither.
    pub scroll: Option<bool>,
    /// `WITH HOLD`: the cursor outlives its transaction's COMMIT.
    pub hold: bool,
    /// The query (already through the SELECT rewrites when returned by `sql::parse`).
    pub query: DFStatement,
}

/// Where a FETCH or MOVE goes, as PostgreSQL's `FetchDirection` plus count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `NEXT`, `FORWARD n`, `n`, `ALL` (`None`: all).
    Forward(Option<u64>),
    /// `PRIOR`, `BACKWARD n`, `-n`, `BACKWARD ALL` (`None`: all).
    Backward(Option<u64>),
    /// `ABSOLUTE n`, `FIRST` (1), `LAST` (-1).
    Absolute(i64),
    /// `RELATIVE n`.
    Relative(i64),
}

/// Whether the parser is at a cursor statement.
pub fn at_cursor_statement(parser: &Parser) -> bool {
    match parser.peek_token().token {
        Token::Word(w) if w.quote_style.is_none() => {
            matches!(
                w.keyword,
                Keyword::DECLARE | Keyword::FETCH | Keyword::CLOSE
            ) || w.value.eq_ignore_ascii_case("move")
        }
        _ => false,
    }
}

fn syntax(e: ParserError) -> SqlError {
    SqlError::Syntax(format!("syntax error: {e}"))
}

fn expected(what: &str, found: &Token) -> SqlError {
    SqlError::Syntax(format!(
        "syntax error at or near \"{found}\": expected {what}"
    ))
}

/// Parses a cursor statement (the parser is at its first keyword).
pub fn parse_cursor_statement(parser: &mut Parser) -> Result<CursorCommand, SqlError> {
    let first = parser.next_token();
    let Token::Word(word) = &first.token else {
        return Err(expected("DECLARE, FETCH, MOVE or CLOSE", &first.token));
    };
    match word.keyword {
        Keyword::DECLARE => parse_declare(parser).map(|d| CursorCommand::Declare(Box::new(d))),
        Keyword::CLOSE => {
            if parser.parse_keyword(Keyword::ALL) {
                Ok(CursorCommand::Close(None))
            } else {
                let name = parser.parse_identifier().map_err(syntax)?;
                Ok(CursorCommand::Close(Some(fold_ident(&name))))
            }
        }
        _ => {
            let move_only = word.keyword != Keyword::FETCH;
            let direction = parse_direction(parser)?;
            // `FROM | IN` is optional after a direction (and alone).
            let _ = parser.parse_one_of_keywords(&[Keyword::FROM, Keyword::IN]);
            let name = parser.parse_identifier().map_err(syntax)?;
            Ok(CursorCommand::Fetch {
                name: fold_ident(&name),
                direction,
                move_only,
            })
        }
    }
}

fn parse_declare(parser: &mut Parser) -> Result<Declare, SqlError> {
    let name = fold_ident(&parser.parse_identifier().map_err(syntax)?);
    let (mut binary, mut scroll) = (false, None);
    // PostgreSQL takes the options in any order before CURSOR.
    loop {
        if parser.parse_keyword(Keyword::BINARY) {
            binary = true;
        } else if parser.parse_keywords(&[Keyword::NO, Keyword::SCROLL]) {
            scroll = Some(false);
        } else if parser.parse_keyword(Keyword::SCROLL) {
            scroll = Some(true);
        } else if parser.parse_keyword(Keyword::INSENSITIVE)
            || parser.parse_keyword(Keyword::ASENSITIVE)
        {
            // tarn's cursors read one snapshot: insensitive, as PostgreSQL's are.
        } else {
            break;
        }
    }
    parser.expect_keyword(Keyword::CURSOR).map_err(syntax)?;
    let hold = if parser.parse_keywords(&[Keyword::WITH, Keyword::HOLD]) {
        true
    } else {
        let _ = parser.parse_keywords(&[Keyword::WITHOUT, Keyword::HOLD]);
        false
    };
    parser.expect_keyword(Keyword::FOR).map_err(syntax)?;
    let query = parser.parse_query().map_err(syntax)?;
    Ok(Declare {
        name,
        binary,
        scroll,
        hold,
        query: DFStatement::Statement(Box::new(Statement::Query(query))),
    })
}

/// A signed integer count, if the next tokens are one.
fn parse_count(parser: &mut Parser) -> Result<Option<i64>, SqlError> {
    let negative = match parser.peek_token().token {
        Token::Minus => true,
        Token::Plus => false,
        Token::Number(..) => false,
        _ => return Ok(None),
    };
    if matches!(parser.peek_token().token, Token::Minus | Token::Plus) {
        parser.next_token();
    }
    let token = parser.next_token();
    let Token::Number(text, _) = &token.token else {
        return Err(expected("an integer", &token.token));
    };
    let n: i64 = text.parse().map_err(|_| {
        SqlError::Syntax(format!(
            "syntax error at or near \"{text}\": expected an integer"
        ))
    })?;
    Ok(Some(if negative { -n } else { n }))
}

fn forward(n: i64) -> Direction {
    if n < 0 {
        Direction::Backward(Some(n.unsigned_abs()))
    } else {
        Direction::Forward(Some(n as u64))
    }
}

fn parse_direction(parser: &mut Parser) -> Result<Direction, SqlError> {
    if let Some(n) = parse_count(parser)? {
        return Ok(forward(n));
    }
    let Token::Word(w) = parser.peek_token().token else {
        return Ok(Direction::Forward(Some(1)));
    };
    if w.quote_style.is_some() {
        return Ok(Direction::Forward(Some(1)));
    }
    let direction = match w.keyword {
        Keyword::NEXT => Direction::Forward(Some(1)),
        Keyword::PRIOR => Direction::Backward(Some(1)),
        Keyword::FIRST => Direction::Absolute(1),
        Keyword::LAST => Direction::Absolute(-1),
        Keyword::ALL => Direction::Forward(None),
        Keyword::ABSOLUTE | Keyword::RELATIVE => {
            parser.next_token();
            let token = parser.peek_token().token;
            let n = parse_count(parser)?.ok_or_else(|| expected("an integer", &token))?;
            return Ok(if w.keyword == Keyword::ABSOLUTE {
                Direction::Absolute(n)
            } else {
                Direction::Relative(n)
            });
        }
        Keyword::FORWARD | Keyword::BACKWARD => {
            parser.next_token();
            let back = w.keyword == Keyword::BACKWARD;
            if parser.parse_keyword(Keyword::ALL) {
                return Ok(if back {
                    Direction::Backward(None)
                } else {
                    Direction::Forward(None)
                });
            }
            let n = parse_count(parser)?.unwrap_or(1);
            return Ok(forward(if back { -n } else { n }));
        }
        // The cursor's name (FETCH c): NEXT.
        _ => return Ok(Direction::Forward(Some(1))),
    };
    parser.next_token();
    Ok(direction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Command, parse};

    fn cursor(sql: &str) -> CursorCommand {
        match parse(sql).unwrap().pop().unwrap() {
            Command::Cursor(c) => *c,
            other => panic!("{other:?}"),
        }
    }

    fn fetch(sql: &str) -> (String, Direction, bool) {
        match cursor(sql) {
            CursorCommand::Fetch {
                name,
                direction,
                move_only,
            } => (name, direction, move_only),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn declare_with_options_in_any_order() {
        let CursorCommand::Declare(d) =
            cursor("DECLARE \"My\" BINARY NO SCROLL CURSOR WITH HOLD FOR SELECT 1 WHERE 1 = $1")
        else {
            panic!()
        };
        assert_eq!(d.name, "My");
        assert!(d.binary && d.hold);
        assert_eq!(d.scroll, Some(false));
        let CursorCommand::Declare(d) = cursor("declare C scroll binary cursor for values (1)")
        else {
            panic!()
        };
        assert_eq!(
            (d.name.as_str(), d.binary, d.scroll, d.hold),
            ("c", true, Some(true), false)
        );
        assert!(parse("declare c cursor select 1").is_err());
    }

    #[test]
    fn fetch_and_move_directions() {
        use Direction::*;
        assert_eq!(fetch("fetch c"), ("c".into(), Forward(Some(1)), false));
        assert_eq!(fetch("FETCH FORWARD 100 FROM \"c\"").1, Forward(Some(100)));
        assert_eq!(fetch("fetch 5 c").1, Forward(Some(5)));
        assert_eq!(fetch("fetch -2 in c").1, Backward(Some(2)));
        assert_eq!(fetch("fetch all from c").1, Forward(None));
        assert_eq!(fetch("fetch backward all c").1, Backward(None));
        assert_eq!(fetch("fetch prior c").1, Backward(Some(1)));
        assert_eq!(fetch("fetch last c").1, Absolute(-1));
        assert_eq!(fetch("fetch absolute -3 c").1, Absolute(-3));
        assert_eq!(fetch("fetch forward -3 c").1, Backward(Some(3)));
        assert_eq!(fetch("fetch forward c").1, Forward(Some(1)));
        assert_eq!(
            fetch("MOVE relative 0 FROM c"),
            ("c".into(), Relative(0), true)
        );
        assert_eq!(fetch("move absolute 10 in c").1, Absolute(10));
        assert!(parse("fetch absolute from c").is_err());
    }

    #[test]
    fn close_one_or_all() {
        assert!(matches!(cursor("close all"), CursorCommand::Close(None)));
        assert!(matches!(cursor("CLOSE Cur"), CursorCommand::Close(Some(n)) if n == "cur"));
    }
}
