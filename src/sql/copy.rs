//! COPY's parser hook: PostgreSQL's `COPY ... TO STDOUT` with its options, in the current
//! (`WITH (FORMAT csv, HEADER)`) and the old (`WITH CSV HEADER`) syntax.
//!
//! DataFusion's parser takes COPY itself, with a file target and DataFusion's options only;
//! sqlparser's `parse_copy` misses PostgreSQL's generic options (`FORCE_QUOTE *`, `HEADER on`,
//! `FORMAT 'csv'`). tarn parses COPY with PostgreSQL's grammar, using the parser's own pieces
//! for the query and names, and checks the options as PostgreSQL's `ProcessCopyOptions` does
//! (same messages and SQLSTATEs).
//!
//! `TO STDOUT` and `FROM STDIN` run: a server file or program is refused (clients reach only
//! the warehouse). `FROM STDIN` takes text, CSV and binary input (`session/copy_from.rs`).

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    GroupByExpr, ObjectName, Query, Select, SelectFlavor, SelectItem, SetExpr, Statement,
    TableFactor, TableWithJoins, WildcardAdditionalOptions, helpers::attached_token::AttachedToken,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{IsOptional, Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::SqlError;
use super::command::fold_ident;

/// A parsed `COPY ... TO STDOUT` or `COPY table [(cols)] FROM STDIN`.
#[derive(Debug, Clone)]
pub struct CopySpec {
    /// `FROM STDIN` (rows come from the client) rather than `TO STDOUT`.
    pub from_stdin: bool,
    /// The rows: the query of `COPY (query)`, or `SELECT * FROM table` for `COPY table`.
    pub query: DFStatement,
    /// `COPY table [(columns)]`: the table and the columns asked for.
    pub table: Option<CopyTable>,
    pub options: CopyOptions,
}

/// The table of `COPY table [(columns)] TO STDOUT`.
#[derive(Debug, Clone)]
pub struct CopyTable {
    /// The relation's name as PostgreSQL's messages show it (unqualified).
    pub name: String,
    /// The name as written (qualified, quoted as written), to resolve the table by.
    pub reference: String,
    /// The column list, folded; empty means every column.
    pub columns: Vec<String>,
}

/// COPY's output formats tarn writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    Binary,
}

/// Which columns CSV output quotes even when they need no quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForceQuote {
    None,
    /// `FORCE_QUOTE *`
    All,
    /// `FORCE_QUOTE (a, b)`: column names, folded.
    Columns(Vec<String>),
}

/// COPY's options after PostgreSQL's checks and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub header: bool,
    /// One ASCII byte (tab for text, comma for CSV by default).
    pub delimiter: u8,
    /// The text of a NULL (`\N` for text, empty for CSV by default).
    pub null: String,
    /// CSV's quote and escape bytes (`"` by default; escape defaults to the quote).
    pub quote: u8,
    pub escape: u8,
    pub force_quote: ForceQuote,
    /// `HEADER MATCH` (COPY FROM): the header line must name the columns in order.
    pub header_match: bool,
    /// CSV input: columns whose unquoted NULL text is read as an empty string (folded names).
    pub force_not_null: Vec<String>,
    /// CSV input: columns whose quoted NULL text is read as NULL too (folded names).
    pub force_null: Vec<String>,
}

/// Whether the parser is at a COPY statement.
pub fn at_copy(parser: &Parser) -> bool {
    matches!(parser.peek_token().token, Token::Word(w) if w.keyword == Keyword::COPY)
}

/// Where COPY reads or writes.
enum Target {
    Stdin,
    Stdout,
    Program,
    File,
}

/// Parses `COPY ...` (the parser is at `COPY`) into a [`CopySpec`], or refuses what tarn does
/// not run (files, programs).
pub fn parse_copy(parser: &mut Parser) -> Result<CopySpec, SqlError> {
    let syntax = |e: ParserError| SqlError::Syntax(format!("syntax error: {e}"));
    parser.expect_keyword(Keyword::COPY).map_err(syntax)?;
    let mut options = Vec::new();
    // `COPY BINARY table`: the pre-7.3 spelling of FORMAT binary.
    if parser.parse_keyword(Keyword::BINARY) {
        options.push(GenericOption::new(
            "format",
            OptionArg::Text("binary".into()),
        ));
    }
    let (query, table) = if options.is_empty() && parser.consume_token(&Token::LParen) {
        let query = parser.parse_query().map_err(syntax)?;
        parser.expect_token(&Token::RParen).map_err(syntax)?;
        check_query(&query)?;
        (*query, None)
    } else {
        let name = parser.parse_object_name(false).map_err(syntax)?;
        let columns = parser
            .parse_parenthesized_column_list(IsOptional::Optional, false)
            .map_err(syntax)?;
        let columns: Vec<String> = columns.iter().map(fold_ident).collect();
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].contains(c) {
                return Err(SqlError::DuplicateColumn(format!(
                    "column \"{c}\" specified more than once"
                )));
            }
        }
        let table = CopyTable {
            reference: name.to_string(),
            name: name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(fold_ident)
                .unwrap_or_else(|| name.to_string()),
            columns,
        };
        (select_all(name), Some(table))
    };
    let to = match parser.parse_one_of_keywords(&[Keyword::TO, Keyword::FROM]) {
        Some(Keyword::TO) => true,
        Some(_) if table.is_some() => false,
        _ => return parser.expected("TO", parser.peek_token()).map_err(syntax),
    };
    let target = if parser.parse_keyword(Keyword::STDOUT) {
        Target::Stdout
    } else if parser.parse_keyword(Keyword::STDIN) {
        Target::Stdin
    } else if parser.parse_keyword(Keyword::PROGRAM) {
        Target::Program
    } else if string_literal(&parser.peek_token().token).is_some() {
        Target::File
    } else {
        return parser
            .expected("STDOUT or a file name", parser.peek_token())
            .map_err(syntax);
    };
    match (to, target) {
        (_, Target::File) => {
            return Err(SqlError::Unsupported(
                "COPY to or from a server file is not supported: use COPY ... TO STDOUT \
                 (psql: \\copy ... to 'file')"
                    .into(),
            ));
        }
        (_, Target::Program) => {
            return Err(SqlError::Unsupported(
                "COPY to or from a program is not supported: use COPY ... TO STDOUT".into(),
            ));
        }
        (false, Target::Stdin) => {}
        (true, Target::Stdin) => {
            return Err(SqlError::Syntax("COPY TO STDIN is not allowed".into()));
        }
        (false, Target::Stdout) => {
            return Err(SqlError::Syntax("COPY FROM STDOUT is not allowed".into()));
        }
        (true, Target::Stdout) => {}
    }
    // `[USING] DELIMITERS 'x'`: the pre-7.3 spelling of DELIMITER.
    if table.is_some() {
        let using = parser.parse_keyword(Keyword::USING);
        if word_is(&parser.peek_token().token, "delimiters") {
            parser.next_token();
            let delimiter = expect_string(parser).map_err(syntax)?;
            options.push(GenericOption::new("delimiter", OptionArg::Text(delimiter)));
        } else if using {
            return parser
                .expected("DELIMITERS", parser.peek_token())
                .map_err(syntax);
        }
    }
    let _ = parser.parse_keyword(Keyword::WITH);
    if parser.consume_token(&Token::LParen) {
        loop {
            options.push(parse_generic_option(parser).map_err(syntax)?);
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
        parser.expect_token(&Token::RParen).map_err(syntax)?;
    } else {
        while let Some(option) = parse_legacy_option(parser).map_err(syntax)? {
            options.push(option);
        }
    }
    if parser.parse_keyword(Keyword::WHERE) {
        if to {
            return Err(SqlError::Syntax(
                "WHERE clause not allowed with COPY TO".into(),
            ));
        }
        return Err(SqlError::Unsupported(
            "COPY FROM ... WHERE is not supported: COPY into a table without WHERE, or \
             INSERT ... SELECT the rows you want"
                .into(),
        ));
    }
    let options = process_options(&options, !to)?;
    Ok(CopySpec {
        from_stdin: !to,
        query: DFStatement::Statement(Box::new(Statement::Query(Box::new(query)))),
        table,
        options,
    })
}

/// A COPY query must be a query: PostgreSQL also takes `INSERT/UPDATE/DELETE ... RETURNING`,
/// which tarn does not run inside COPY.
fn check_query(query: &Query) -> Result<(), SqlError> {
    match query.body.as_ref() {
        SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) => {
            let returning = match s {
                Statement::Insert(i) => i.returning.is_some(),
                Statement::Update(u) => u.returning.is_some(),
                Statement::Delete(d) => d.returning.is_some(),
                _ => false,
            };
            if !returning {
                return Err(SqlError::Unsupported(
                    "COPY query must have a RETURNING clause".into(),
                ));
            }
            Err(SqlError::Unsupported(
                "COPY of a data-modifying statement is not supported: run the statement, then \
                 COPY (SELECT ...)"
                    .into(),
            ))
        }
        SetExpr::Select(s) if s.into.is_some() => Err(SqlError::Unsupported(
            "COPY (SELECT INTO) is not supported".into(),
        )),
        _ => Ok(()),
    }
}

/// `SELECT * FROM name`.
fn select_all(name: ObjectName) -> Query {
    let select = Select {
        select_token: AttachedToken::empty(),
        optimizer_hints: Vec::new(),
        distinct: None,
        select_modifiers: None,
        top: None,
        top_before_distinct: false,
        projection: vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())],
        exclude: None,
        into: None,
        from: vec![TableWithJoins {
            relation: TableFactor::Table {
                name,
                alias: None,
                args: None,
                with_hints: Vec::new(),
                version: None,
                with_ordinality: false,
                partitions: Vec::new(),
                json_path: None,
                sample: None,
                index_hints: Vec::new(),
            },
            joins: Vec::new(),
        }],
        lateral_views: Vec::new(),
        prewhere: None,
        selection: None,
        connect_by: Vec::new(),
        group_by: GroupByExpr::Expressions(Vec::new(), Vec::new()),
        cluster_by: Vec::new(),
        distribute_by: Vec::new(),
        sort_by: Vec::new(),
        having: None,
        named_window: Vec::new(),
        qualify: None,
        window_before_qualify: false,
        value_table_mode: None,
        flavor: SelectFlavor::Standard,
    };
    Query {
        with: None,
        body: Box::new(SetExpr::Select(Box::new(select))),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    }
}

/// The argument of one option, as PostgreSQL's grammar reads it.
#[derive(Debug, Clone, PartialEq)]
enum OptionArg {
    /// No argument (`HEADER`).
    None,
    /// A word (folded) or a string constant.
    Text(String),
    /// A number, as written.
    Number(String),
    /// `*`
    Star,
    /// `(a, 'b')`: words (folded) or strings.
    List(Vec<String>),
}

/// One option in PostgreSQL's generic form: the old syntax is read into the same form.
#[derive(Debug, Clone)]
struct GenericOption {
    name: String,
    arg: OptionArg,
}

impl GenericOption {
    fn new(name: &str, arg: OptionArg) -> Self {
        Self {
            name: name.to_owned(),
            arg,
        }
    }
}

/// The text of a string constant token (`'x'`, `E'x'`, `U&'x'`, `$$x$$`).
fn string_literal(token: &Token) -> Option<String> {
    match token {
        Token::SingleQuotedString(s)
        | Token::EscapedStringLiteral(s)
        | Token::UnicodeStringLiteral(s)
        | Token::NationalStringLiteral(s) => Some(s.clone()),
        Token::DollarQuotedString(s) => Some(s.value.clone()),
        _ => None,
    }
}

/// Whether `token` is the unquoted word `word` (lower case).
fn word_is(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn expect_string(parser: &mut Parser) -> Result<String, ParserError> {
    let token = parser.next_token();
    match string_literal(&token.token) {
        Some(s) => Ok(s),
        None => parser.expected("a string constant", token),
    }
}

/// A word (folded) or a string constant: PostgreSQL's `opt_boolean_or_string`.
fn word_or_string(parser: &mut Parser) -> Result<String, ParserError> {
    let token = parser.next_token();
    if let Token::Word(w) = &token.token {
        return Ok(fold_ident(&w.clone().into_ident(token.span)));
    }
    match string_literal(&token.token) {
        Some(s) => Ok(s),
        None => parser.expected("a name or a string constant", token),
    }
}

/// `name [argument]` inside `WITH ( ... )`.
fn parse_generic_option(parser: &mut Parser) -> Result<GenericOption, ParserError> {
    let token = parser.next_token();
    let Token::Word(w) = &token.token else {
        return parser.expected("a COPY option name", token);
    };
    let name = fold_ident(&w.clone().into_ident(token.span));
    let next = parser.peek_token();
    let arg = match &next.token {
        Token::Comma | Token::RParen => OptionArg::None,
        Token::Mul => {
            parser.next_token();
            OptionArg::Star
        }
        Token::Number(n, _) => {
            parser.next_token();
            OptionArg::Number(n.clone())
        }
        Token::Minus | Token::Plus => {
            let sign = if next.token == Token::Minus { "-" } else { "" };
            parser.next_token();
            let token = parser.next_token();
            match &token.token {
                Token::Number(n, _) => OptionArg::Number(format!("{sign}{n}")),
                _ => return parser.expected("a number", token),
            }
        }
        Token::LParen => {
            parser.next_token();
            let mut items = vec![word_or_string(parser)?];
            while parser.consume_token(&Token::Comma) {
                items.push(word_or_string(parser)?);
            }
            parser.expect_token(&Token::RParen)?;
            OptionArg::List(items)
        }
        _ => OptionArg::Text(word_or_string(parser)?),
    };
    Ok(GenericOption { name, arg })
}

/// One option of the old syntax (`CSV`, `HEADER`, `DELIMITER [AS] 'x'`, `FORCE QUOTE a, b`,
/// ...), read into the generic form; `None` when the next token starts none.
fn parse_legacy_option(parser: &mut Parser) -> Result<Option<GenericOption>, ParserError> {
    let token = parser.peek_token().token;
    let Token::Word(w) = &token else {
        return Ok(None);
    };
    if w.quote_style.is_some() {
        return Ok(None);
    }
    let word = w.value.to_ascii_lowercase();
    let string_option = |parser: &mut Parser, name: &str| -> Result<GenericOption, ParserError> {
        parser.next_token();
        let _ = parser.parse_keyword(Keyword::AS);
        Ok(GenericOption::new(
            name,
            OptionArg::Text(expect_string(parser)?),
        ))
    };
    let option = match word.as_str() {
        "binary" | "csv" => {
            parser.next_token();
            GenericOption::new("format", OptionArg::Text(word))
        }
        "freeze" | "header" => {
            parser.next_token();
            GenericOption::new(&word, OptionArg::Text("true".into()))
        }
        "delimiter" | "null" | "quote" | "escape" => string_option(parser, &word)?,
        "encoding" => {
            parser.next_token();
            GenericOption::new("encoding", OptionArg::Text(expect_string(parser)?))
        }
        "force" => {
            parser.next_token();
            let name = if parser.parse_keyword(Keyword::QUOTE) {
                "force_quote"
            } else if parser.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
                "force_not_null"
            } else if parser.parse_keyword(Keyword::NULL) {
                "force_null"
            } else {
                return parser.expected("QUOTE, NOT NULL or NULL", parser.peek_token());
            };
            if name == "force_quote" && parser.consume_token(&Token::Mul) {
                GenericOption::new(name, OptionArg::Star)
            } else {
                let mut columns = vec![fold_ident(&parser.parse_identifier()?)];
                while parser.consume_token(&Token::Comma) {
                    columns.push(fold_ident(&parser.parse_identifier()?));
                }
                GenericOption::new(name, OptionArg::List(columns))
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(option))
}

/// PostgreSQL's `defGetString`.
fn option_string(option: &GenericOption) -> Result<String, SqlError> {
    match &option.arg {
        OptionArg::Text(s) | OptionArg::Number(s) => Ok(s.clone()),
        OptionArg::Star => Ok("*".into()),
        OptionArg::None | OptionArg::List(_) => Err(SqlError::Syntax(format!(
            "{} requires a parameter",
            option.name
        ))),
    }
}

/// PostgreSQL's `defGetBoolean`.
fn option_bool(option: &GenericOption) -> Result<bool, SqlError> {
    let fail = || SqlError::Syntax(format!("{} requires a Boolean value", option.name));
    match &option.arg {
        OptionArg::None => Ok(true),
        OptionArg::Number(n) => match n.as_str() {
            "0" => Ok(false),
            "1" => Ok(true),
            _ => Err(fail()),
        },
        OptionArg::Text(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "on" => Ok(true),
            "false" | "off" => Ok(false),
            _ => Err(fail()),
        },
        _ => Err(fail()),
    }
}

/// PostgreSQL's `defGetCopyHeaderChoice`: `None` is `MATCH` (COPY FROM only).
fn option_header(option: &GenericOption, from: bool) -> Result<Option<bool>, SqlError> {
    let fail = || {
        SqlError::Syntax(format!(
            "{} requires a Boolean value or \"match\"",
            option.name
        ))
    };
    match &option.arg {
        OptionArg::None => Ok(Some(true)),
        OptionArg::Number(n) => match n.as_str() {
            "0" => Ok(Some(false)),
            "1" => Ok(Some(true)),
            _ => Err(fail()),
        },
        OptionArg::Text(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "on" => Ok(Some(true)),
            "false" | "off" => Ok(Some(false)),
            "match" if from => Ok(None),
            "match" => Err(SqlError::Unsupported(format!(
                "cannot use \"{s}\" with HEADER in COPY TO"
            ))),
            _ => Err(fail()),
        },
        _ => Err(fail()),
    }
}

/// The options as PostgreSQL's `ProcessCopyOptions` checks them, in its order (`from`: COPY
/// FROM).
fn process_options(options: &[GenericOption], from: bool) -> Result<CopyOptions, SqlError> {
    let conflicting = || SqlError::Syntax("conflicting or redundant options".into());
    let mut format: Option<&str> = None;
    let mut freeze = None;
    let mut delimiter: Option<String> = None;
    let mut null: Option<String> = None;
    let mut header = None;
    let mut quote: Option<String> = None;
    let mut escape: Option<String> = None;
    let mut force_quote: Option<ForceQuote> = None;
    let mut force_not_null = None;
    let mut force_null = None;
    let mut encoding = None;
    for option in options {
        match option.name.as_str() {
            "format" => {
                if format.is_some() {
                    return Err(conflicting());
                }
                let name = option_string(option)?;
                format = Some(match name.as_str() {
                    "text" => "text",
                    "csv" => "csv",
                    "binary" => "binary",
                    _ => {
                        return Err(SqlError::InvalidValue(format!(
                            "COPY format \"{name}\" not recognized"
                        )));
                    }
                });
            }
            "freeze" => {
                if freeze.is_some() {
                    return Err(conflicting());
                }
                freeze = Some(option_bool(option)?);
            }
            "delimiter" => {
                if delimiter.is_some() {
                    return Err(conflicting());
                }
                delimiter = Some(option_string(option)?);
            }
            "null" => {
                if null.is_some() {
                    return Err(conflicting());
                }
                null = Some(option_string(option)?);
            }
            "header" => {
                if header.is_some() {
                    return Err(conflicting());
                }
                header = Some(option_header(option, from)?);
            }
            "quote" => {
                if quote.is_some() {
                    return Err(conflicting());
                }
                quote = Some(option_string(option)?);
            }
            "escape" => {
                if escape.is_some() {
                    return Err(conflicting());
                }
                escape = Some(option_string(option)?);
            }
            "force_quote" | "force_not_null" | "force_null" => {
                let slot = match option.name.as_str() {
                    "force_quote" => force_quote.is_some(),
                    "force_not_null" => force_not_null.is_some(),
                    _ => force_null.is_some(),
                };
                if slot {
                    return Err(conflicting());
                }
                let value = match &option.arg {
                    OptionArg::Star if option.name == "force_quote" => ForceQuote::All,
                    OptionArg::List(columns) => ForceQuote::Columns(columns.clone()),
                    _ => {
                        return Err(SqlError::InvalidValue(format!(
                            "argument to option \"{}\" must be a list of column names",
                            option.name
                        )));
                    }
                };
                match option.name.as_str() {
                    "force_quote" => force_quote = Some(value),
                    "force_not_null" => force_not_null = Some(value),
                    _ => force_null = Some(value),
                }
            }
            "encoding" => {
                if encoding.is_some() {
                    return Err(conflicting());
                }
                let name = option_string(option)?;
                let normalized: String = name
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .collect::<String>()
                    .to_ascii_lowercase();
                if normalized != "utf8" && normalized != "unicode" {
                    return Err(SqlError::Unsupported(format!(
                        "COPY ENCODING \"{name}\" is not supported: tarn sends UTF8"
                    )));
                }
                encoding = Some(name);
            }
            other => {
                return Err(SqlError::Syntax(format!(
                    "option \"{other}\" not recognized"
                )));
            }
        }
    }
    let binary = format == Some("binary");
    if binary && delimiter.is_some() {
        return Err(SqlError::Syntax(
            "cannot specify DELIMITER in BINARY mode".into(),
        ));
    }
    if binary && null.is_some() {
        return Err(SqlError::Syntax(
            "cannot specify NULL in BINARY mode".into(),
        ));
    }
    if binary && header.is_some_and(|h| h != Some(false)) {
        return Err(SqlError::Syntax(
            "cannot specify HEADER in BINARY mode".into(),
        ));
    }
    let csv = format == Some("csv");
    let delimiter = delimiter.unwrap_or_else(|| if csv { "," } else { "\t" }.to_owned());
    let null = null.unwrap_or_else(|| if csv { "" } else { "\\N" }.to_owned());
    if delimiter.len() != 1 {
        return Err(SqlError::Unsupported(
            "COPY delimiter must be a single one-byte character".into(),
        ));
    }
    let delimiter = delimiter.as_bytes()[0];
    if delimiter == b'\r' || delimiter == b'\n' {
        return Err(SqlError::InvalidValue(
            "COPY delimiter cannot be newline or carriage return".into(),
        ));
    }
    if null.contains(['\r', '\n']) {
        return Err(SqlError::InvalidValue(
            "COPY null representation cannot use newline or carriage return".into(),
        ));
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&delimiter) {
        return Err(SqlError::InvalidValue(format!(
            "COPY delimiter cannot be \"{}\"",
            delimiter as char
        )));
    }
    if !csv && quote.is_some() {
        return Err(SqlError::Unsupported(
            "COPY quote available only in CSV mode".into(),
        ));
    }
    let quote = quote.unwrap_or_else(|| "\"".to_owned());
    if csv && quote.len() != 1 {
        return Err(SqlError::Unsupported(
            "COPY quote must be a single one-byte character".into(),
        ));
    }
    let quote = quote.as_bytes()[0];
    if csv && delimiter == quote {
        return Err(SqlError::InvalidValue(
            "COPY delimiter and quote must be different".into(),
        ));
    }
    if !csv && escape.is_some() {
        return Err(SqlError::Unsupported(
            "COPY escape available only in CSV mode".into(),
        ));
    }
    let escape = match escape {
        None => quote,
        Some(e) if e.len() == 1 => e.as_bytes()[0],
        Some(_) => {
            return Err(SqlError::Unsupported(
                "COPY escape must be a single one-byte character".into(),
            ));
        }
    };
    if !csv && force_quote.is_some() {
        return Err(SqlError::Unsupported(
            "COPY force quote available only in CSV mode".into(),
        ));
    }
    if force_quote.is_some() && from {
        return Err(SqlError::Unsupported(
            "COPY force quote only available using COPY TO".into(),
        ));
    }
    if force_not_null.is_some() && (!csv || !from) {
        return Err(SqlError::Unsupported(
            if csv {
                "COPY force not null only available using COPY FROM"
            } else {
                "COPY force not null available only in CSV mode"
            }
            .into(),
        ));
    }
    if force_null.is_some() && (!csv || !from) {
        return Err(SqlError::Unsupported(
            if csv {
                "COPY force null only available using COPY FROM"
            } else {
                "COPY force null available only in CSV mode"
            }
            .into(),
        ));
    }
    if null.as_bytes().contains(&delimiter) {
        return Err(SqlError::Unsupported(
            "COPY delimiter must not appear in the NULL specification".into(),
        ));
    }
    if csv && null.as_bytes().contains(&quote) {
        return Err(SqlError::Unsupported(
            "CSV quote character must not appear in the NULL specification".into(),
        ));
    }
    let columns = |force: Option<ForceQuote>| match force {
        Some(ForceQuote::Columns(c)) => c,
        _ => Vec::new(),
    };
    Ok(CopyOptions {
        format: if binary {
            CopyFormat::Binary
        } else if csv {
            CopyFormat::Csv
        } else {
            CopyFormat::Text
        },
        header: header.is_some_and(|h| h != Some(false)),
        header_match: header == Some(None),
        force_not_null: columns(force_not_null),
        force_null: columns(force_null),
        delimiter,
        null,
        quote,
        escape,
        force_quote: force_quote.unwrap_or(ForceQuote::None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dialect::TarnDialect;

    fn parse(sql: &str) -> Result<CopySpec, SqlError> {
        let dialect = TarnDialect::default();
        let mut parser = Parser::new(&dialect)
            .try_with_sql(sql)
            .map_err(SqlError::from_sqlparser)?;
        let spec = parse_copy(&mut parser)?;
        assert_eq!(
            parser.peek_token().token,
            Token::EOF,
            "{sql}: rest not read"
        );
        Ok(spec)
    }

    fn options(sql: &str) -> CopyOptions {
        parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")).options
    }

    fn error(sql: &str) -> (&'static str, String) {
        let e = parse(sql).expect_err(sql);
        (e.sqlstate(), e.to_string())
    }

    #[test]
    fn defaults_per_format() {
        let text = options("COPY t TO STDOUT");
        assert_eq!(text.format, CopyFormat::Text);
        assert_eq!((text.delimiter, text.null.as_str()), (b'\t', "\\N"));
        assert!(!text.header);
        let csv = options("copy (select 1) to stdout with (format csv)");
        assert_eq!(csv.format, CopyFormat::Csv);
        assert_eq!((csv.delimiter, csv.null.as_str()), (b',', ""));
        assert_eq!((csv.quote, csv.escape), (b'"', b'"'));
    }

    #[test]
    fn new_and_old_syntax_agree() {
        let new = options(
            "COPY t (a, \"B\") TO STDOUT WITH (FORMAT csv, HEADER true, DELIMITER ';', \
             NULL 'NULL', QUOTE '''', ESCAPE '\\', FORCE_QUOTE (a, \"B\"))",
        );
        let old = options(
            "COPY t (a, \"B\") TO STDOUT WITH DELIMITER AS ';' NULL AS 'NULL' CSV HEADER \
             QUOTE AS '''' ESCAPE '\\' FORCE QUOTE a, \"B\"",
        );
        assert_eq!(new, old);
        assert_eq!(
            new.force_quote,
            ForceQuote::Columns(vec!["a".into(), "B".into()])
        );
        assert_eq!((new.quote, new.escape, new.delimiter), (b'\'', b'\\', b';'));
        assert!(new.header);
        assert_eq!(
            options("copy t to stdout csv force quote *").force_quote,
            ForceQuote::All
        );
        assert_eq!(
            options("copy t to stdout (format csv, force_quote *)").force_quote,
            ForceQuote::All
        );
        for header in ["header", "header on", "header 1", "header 'TRUE'"] {
            assert!(
                options(&format!("copy t to stdout ({header})")).header,
                "{header}"
            );
        }
        for header in ["header off", "header 0", "header false"] {
            assert!(
                !options(&format!("copy t to stdout ({header})")).header,
                "{header}"
            );
        }
        assert_eq!(
            options("copy t to stdout (format 'csv', encoding 'UTF-8', freeze)").format,
            CopyFormat::Csv
        );
        assert_eq!(
            options("copy t to stdout using delimiters '|'").delimiter,
            b'|'
        );
        assert_eq!(
            options("copy t to stdout (delimiter E'\\x01')").delimiter,
            1
        );
    }

    #[test]
    fn copy_from_stdin() {
        let spec = parse("COPY s.\"T\" (a, b) FROM STDIN").unwrap();
        assert!(spec.from_stdin);
        let table = spec.table.unwrap();
        assert_eq!(
            (table.name.as_str(), table.reference.as_str()),
            ("T", "s.\"T\"")
        );
        let o = options(
            "copy t from stdin (format csv, header match, force_not_null (a), force_null (b, c))",
        );
        assert!(o.header && o.header_match);
        assert_eq!(o.force_not_null, ["a"]);
        assert_eq!(o.force_null, ["b", "c"]);
        let o = options("copy t from stdin csv header force not null a, b");
        assert_eq!(o.force_not_null, ["a", "b"]);
        for sql in [
            "copy t from stdin (format binary)",
            "copy binary t from stdin",
            "copy t from stdin with binary",
            "copy t to stdout (format binary)",
        ] {
            assert_eq!(options(sql).format, CopyFormat::Binary, "{sql}");
        }
        for (sql, code, message) in [
            (
                "copy t from stdin (format csv, force_quote (a))",
                "0A000",
                "COPY force quote only available using COPY TO",
            ),
            (
                "copy t from stdin (force_null (a))",
                "0A000",
                "COPY force null available only in CSV mode",
            ),
            (
                "copy t from stdin (format binary, delimiter ',')",
                "42601",
                "cannot specify DELIMITER in BINARY mode",
            ),
            (
                "copy t from stdin (format binary, null 'x')",
                "42601",
                "cannot specify NULL in BINARY mode",
            ),
            (
                "copy t from stdin (format binary, header)",
                "42601",
                "cannot specify HEADER in BINARY mode",
            ),
        ] {
            assert_eq!(error(sql), (code, message.to_owned()), "{sql}");
        }
    }

    #[test]
    fn sources() {
        let spec = parse("COPY s.\"T\" (a, B) TO STDOUT").unwrap();
        let table = spec.table.unwrap();
        assert_eq!(table.name, "T");
        assert_eq!(table.columns, ["a", "b"]);
        assert_eq!(spec.query.to_string(), "SELECT * FROM s.\"T\"");
        let spec = parse("COPY (SELECT * FROM t VERSION AS OF 3 WHERE a > 1) TO STDOUT").unwrap();
        assert!(spec.table.is_none());
        assert!(spec.query.to_string().contains("WHERE a > 1"));
    }

    #[test]
    fn postgres_errors() {
        for (sql, code, message) in [
            (
                "copy t to stdout (format foo)",
                "22023",
                "COPY format \"foo\" not recognized",
            ),
            (
                "copy t to stdout (format csv, format csv)",
                "42601",
                "conflicting or redundant options",
            ),
            (
                "copy t to stdout csv csv",
                "42601",
                "conflicting or redundant options",
            ),
            (
                "copy t to stdout (delimiter 'ab')",
                "0A000",
                "COPY delimiter must be a single one-byte character",
            ),
            (
                "copy t to stdout (delimiter 'é')",
                "0A000",
                "COPY delimiter must be a single one-byte character",
            ),
            (
                "copy t to stdout (delimiter '\\')",
                "22023",
                "COPY delimiter cannot be \"\\\"",
            ),
            (
                "copy t to stdout (delimiter E'\\n')",
                "22023",
                "COPY delimiter cannot be newline or carriage return",
            ),
            (
                "copy t to stdout (quote '\"')",
                "0A000",
                "COPY quote available only in CSV mode",
            ),
            (
                "copy t to stdout (format csv, quote 'ab')",
                "0A000",
                "COPY quote must be a single one-byte character",
            ),
            (
                "copy t to stdout (format csv, delimiter '\"')",
                "22023",
                "COPY delimiter and quote must be different",
            ),
            (
                "copy t to stdout (escape 'x')",
                "0A000",
                "COPY escape available only in CSV mode",
            ),
            (
                "copy t to stdout (format csv, escape '')",
                "0A000",
                "COPY escape must be a single one-byte character",
            ),
            (
                "copy t to stdout (force_quote (a))",
                "0A000",
                "COPY force quote available only in CSV mode",
            ),
            (
                "copy t to stdout (format csv, force_not_null (a))",
                "0A000",
                "COPY force not null only available using COPY FROM",
            ),
            (
                "copy t to stdout (format csv, force_null (a))",
                "0A000",
                "COPY force null only available using COPY FROM",
            ),
            (
                "copy t to stdout (header match)",
                "0A000",
                "cannot use \"match\" with HEADER in COPY TO",
            ),
            (
                "copy t to stdout (header 2)",
                "42601",
                "header requires a Boolean value or \"match\"",
            ),
            (
                "copy t to stdout (null E'a\\nb')",
                "22023",
                "COPY null representation cannot use newline or carriage return",
            ),
            (
                "copy t to stdout (delimiter ',', null 'a,b')",
                "0A000",
                "COPY delimiter must not appear in the NULL specification",
            ),
            (
                "copy t to stdout (format csv, null 'a\"b')",
                "0A000",
                "CSV quote character must not appear in the NULL specification",
            ),
            (
                "copy t to stdout (foo 1)",
                "42601",
                "option \"foo\" not recognized",
            ),
            (
                "copy t to stdout (delimiter)",
                "42601",
                "delimiter requires a parameter",
            ),
            (
                "copy t (a, A) to stdout",
                "42701",
                "column \"a\" specified more than once",
            ),
            (
                "copy t to stdout where a = 1",
                "42601",
                "WHERE clause not allowed with COPY TO",
            ),
        ] {
            assert_eq!(error(sql), (code, message.to_owned()), "{sql}");
        }
    }

    #[test]
    fn refusals() {
        for sql in [
            "copy t to '/tmp/x.csv'",
            "copy t from '/tmp/x.csv'",
            "copy (select 1) to '/tmp/x' stored as parquet",
        ] {
            let (code, message) = error(sql);
            assert_eq!(code, "0A000", "{sql}");
            assert!(message.contains("server file"), "{sql}: {message}");
        }
        assert_eq!(error("copy t to program 'cat'").0, "0A000");
        assert_eq!(error("copy t from stdin where a > 1").0, "0A000");
        assert_eq!(
            error("copy (insert into t values (1) returning *) to stdout").0,
            "0A000"
        );
        assert_eq!(error("copy (select 1) from stdin").0, "42601");
    }
}
