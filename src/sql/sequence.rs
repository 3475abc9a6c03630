//! `CREATE SEQUENCE`, `ALTER SEQUENCE` and `DROP SEQUENCE`: the parser hook and the options
//! as the storage layer's [`SequenceParams`].
//!
//! sqlparser 0.62 reads `CREATE SEQUENCE` with its options in one fixed order (pg_dump writes
//! `START WITH` before `INCREMENT BY`, which it refuses), without `RESTART`, and has no
//! `ALTER SEQUENCE` at all; tarn reads both with PostgreSQL's grammar (gram.y's
//! `CreateSeqStmt`, `AlterSeqStmt`, `SeqOptElem`: options in any order, each at most once).
//! `DROP SEQUENCE` is sqlparser's `Statement::Drop`. As in PostgreSQL, a number that is no
//! bigint (`START 1.5`) and a type that is no integer type are errors when the statement runs
//! ([`SequenceSpec::to_params`]), not syntax errors. The session runs the commands
//! (`server/session/sequences.rs`).

use datafusion::sql::sqlparser::ast::{DataType, ObjectName};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::SqlError;
use super::command::fold_ident;
use super::create_table::table_name;
use crate::query::quote_ident;
use crate::storage::sequences::{SequenceParams, SequenceType};

/// A sequence statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SequenceCommand {
    /// `CREATE SEQUENCE [IF NOT EXISTS] [schema.]name [options]`.
    Create {
        schema: Option<String>,
        name: String,
        if_not_exists: bool,
        spec: SequenceSpec,
    },
    /// `ALTER SEQUENCE [IF EXISTS] [schema.]name ...`.
    Alter {
        schema: Option<String>,
        name: String,
        if_exists: bool,
        action: AlterSequence,
    },
    /// `DROP SEQUENCE [IF EXISTS] a, b [CASCADE | RESTRICT]`: `(schema, name)` names.
    Drop {
        names: Vec<(Option<String>, String)>,
        if_exists: bool,
        cascade: bool,
    },
}

impl SequenceCommand {
    /// The command tag.
    pub fn tag(&self) -> &'static str {
        match self {
            Self::Create { .. } => "CREATE SEQUENCE",
            Self::Alter { .. } => "ALTER SEQUENCE",
            Self::Drop { .. } => "DROP SEQUENCE",
        }
    }
}

/// What an `ALTER SEQUENCE` changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterSequence {
    /// `[AS type] [INCREMENT ...] ... [RESTART [WITH n]] [OWNED BY ...]`.
    Options(SequenceSpec),
    /// `RENAME TO name`.
    RenameTo(String),
}

/// The type of `AS type` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeName {
    /// `smallint`, `integer`, `bigint` and their aliases.
    Integer(SequenceType),
    /// A type PostgreSQL has but a sequence cannot be (`text`, `numeric`).
    NotInteger,
    /// A name that is no type (`AS foo`).
    Undefined(String),
}

/// The options of a CREATE or ALTER SEQUENCE as written: numbers as their literal text (with
/// the sign), `None` for "not mentioned", `Some(None)` for `NO MINVALUE`, `NO MAXVALUE` and
/// `RESTART` without a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequenceSpec {
    pub data_type: Option<TypeName>,
    pub increment: Option<String>,
    pub min_value: Option<Option<String>>,
    pub max_value: Option<Option<String>>,
    pub start: Option<String>,
    pub restart: Option<Option<String>>,
    pub cache: Option<String>,
    pub cycle: Option<bool>,
    /// `OWNED BY a.b.c`: the folded parts of the name (`["none"]` for `OWNED BY NONE`); read by
    /// [`owned_by_target`].
    pub owned_by: Option<Vec<String>>,
}

/// An option the statement cannot run with, as PostgreSQL reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

impl OptionError {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: None,
        }
    }
}

/// What `OWNED BY` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedByTarget {
    /// `OWNED BY NONE`.
    None,
    /// `OWNED BY [schema.]table.column`.
    Column {
        schema: Option<String>,
        table: String,
        column: String,
    },
}

impl SequenceSpec {
    /// The options as the storage layer takes them (without `owned_by`, which the session
    /// resolves against the catalog with [`owned_by_target`]).
    pub fn to_params(&self) -> Result<SequenceParams, OptionError> {
        let number = |v: &Option<String>| v.as_deref().map(bigint).transpose();
        let maybe = |v: &Option<Option<String>>| {
            v.as_ref()
                .map(|inner| inner.as_deref().map(bigint).transpose())
                .transpose()
        };
        let data_type = match &self.data_type {
            None => None,
            Some(TypeName::Integer(t)) => Some(*t),
            Some(TypeName::NotInteger) => {
                return Err(OptionError::new(
                    "22023",
                    "sequence type must be smallint, integer, or bigint",
                ));
            }
            Some(TypeName::Undefined(name)) => {
                return Err(OptionError::new(
                    "42704",
                    format!("type \"{name}\" does not exist"),
                ));
            }
        };
        Ok(SequenceParams {
            data_type,
            increment: number(&self.increment)?,
            min_value: maybe(&self.min_value)?,
            max_value: maybe(&self.max_value)?,
            start: number(&self.start)?,
            restart: maybe(&self.restart)?,
            cache: number(&self.cache)?,
            cycle: self.cycle,
            owned_by: None,
        })
    }
}

/// A number option's value as PostgreSQL's `defGetInt64` reads it.
fn bigint(text: &str) -> Result<i64, OptionError> {
    if let Ok(v) = text.parse::<i64>() {
        return Ok(v);
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        Err(OptionError::new(
            "22003",
            format!("value \"{text}\" is out of range for type bigint"),
        ))
    } else {
        Err(OptionError::new(
            "22P02",
            format!("invalid input syntax for type bigint: \"{text}\""),
        ))
    }
}

/// What `OWNED BY` names (`parts` folded, as [`SequenceSpec::owned_by`] holds them).
pub fn owned_by_target(parts: &[String]) -> Result<OwnedByTarget, OptionError> {
    match parts {
        [none] if none == "none" => Ok(OwnedByTarget::None),
        [_] => Err(OptionError {
            hint: Some("Specify OWNED BY table.column or OWNED BY NONE.".into()),
            ..OptionError::new("42601", "invalid OWNED BY option")
        }),
        [table, column] => Ok(OwnedByTarget::Column {
            schema: None,
            table: table.clone(),
            column: column.clone(),
        }),
        // catalog.schema.table.column: the catalog is the connection's database, any name.
        [.., schema, table, column] if parts.len() <= 4 => Ok(OwnedByTarget::Column {
            schema: Some(schema.clone()),
            table: table.clone(),
            column: column.clone(),
        }),
        _ => Err(OptionError::new(
            "42601",
            format!(
                "improper qualified name (too many dotted names): {}",
                parts.join(".")
            ),
        )),
    }
}

/// Whether the parser is at `CREATE [TEMP | TEMPORARY | UNLOGGED] SEQUENCE` or
/// `ALTER SEQUENCE`.
pub fn at_sequence_statement(parser: &Parser) -> bool {
    let [a, b, c] = parser.peek_tokens();
    let is = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    let sequence = |t: &Token| is(t, Keyword::SEQUENCE);
    (is(&a, Keyword::CREATE)
        && (sequence(&b)
            || ((is(&b, Keyword::TEMP)
                || is(&b, Keyword::TEMPORARY)
                || is(&b, Keyword::UNLOGGED))
                && sequence(&c))))
        || (is(&a, Keyword::ALTER) && sequence(&b))
}

fn syntax(e: ParserError) -> SqlError {
    SqlError::Syntax(format!("syntax error: {e}"))
}

/// Parses CREATE or ALTER SEQUENCE (the parser is at `CREATE` or `ALTER`).
pub fn parse_sequence_statement(parser: &mut Parser) -> Result<SequenceCommand, SqlError> {
    if parser.parse_keyword(Keyword::ALTER) {
        parser.expect_keyword(Keyword::SEQUENCE).map_err(syntax)?;
        return parse_alter(parser);
    }
    parser.expect_keyword(Keyword::CREATE).map_err(syntax)?;
    if let Some(k) =
        parser.parse_one_of_keywords(&[Keyword::TEMP, Keyword::TEMPORARY, Keyword::UNLOGGED])
    {
        let what = if k == Keyword::UNLOGGED {
            "UNLOGGED"
        } else {
            "TEMPORARY"
        };
        return Err(SqlError::Unsupported(format!(
            "{what} sequences are not supported: tarn keeps every sequence in the warehouse, \
             where every session and server sees it; create it without {what}"
        )));
    }
    parser.expect_keyword(Keyword::SEQUENCE).map_err(syntax)?;
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let (schema, name) = object_name(parser)?;
    let spec = parse_options(parser)?;
    Ok(SequenceCommand::Create {
        schema,
        name,
        if_not_exists,
        spec,
    })
}

fn object_name(parser: &mut Parser) -> Result<(Option<String>, String), SqlError> {
    let name = parser.parse_object_name(false).map_err(syntax)?;
    table_name(&name)
}

fn parse_alter(parser: &mut Parser) -> Result<SequenceCommand, SqlError> {
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let (schema, name) = object_name(parser)?;
    let action = if parser.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        let to = parser.parse_identifier().map_err(syntax)?;
        AlterSequence::RenameTo(fold_ident(&to))
    } else if parser.parse_keywords(&[Keyword::SET, Keyword::SCHEMA]) {
        return Err(SqlError::Unsupported(
            "ALTER SEQUENCE ... SET SCHEMA is not supported yet: create the sequence in the \
             other schema and set its value with setval"
                .into(),
        ));
    } else if parser.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        return Err(SqlError::Unsupported(
            "ALTER SEQUENCE ... OWNER TO is not supported: tarn has no object owners yet".into(),
        ));
    } else if at_word(parser, 0, "set")
        && (at_word(parser, 1, "logged") || at_word(parser, 1, "unlogged"))
    {
        return Err(SqlError::Unsupported(
            "ALTER SEQUENCE ... SET LOGGED | UNLOGGED is not supported: every tarn sequence is \
             kept in the warehouse"
                .into(),
        ));
    } else {
        let spec = parse_options(parser)?;
        if spec == SequenceSpec::default() {
            let found = parser.peek_token();
            return Err(SqlError::Syntax(format!(
                "syntax error at or near \"{found}\": expected a sequence option, RENAME TO or \
                 OWNED BY"
            )));
        }
        AlterSequence::Options(spec)
    };
    Ok(SequenceCommand::Alter {
        schema,
        name,
        if_exists,
        action,
    })
}

/// Whether the `n`th token ahead is the unquoted word `word`.
fn at_word(parser: &Parser, n: usize, word: &str) -> bool {
    let token = match n {
        0 => parser.peek_tokens::<1>()[0].clone(),
        _ => parser.peek_tokens::<2>()[1].clone(),
    };
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Puts an option's value into its slot; a second mention is PostgreSQL's 42601.
fn set<T>(slot: &mut Option<T>, value: T) -> Result<(), SqlError> {
    if slot.is_some() {
        return Err(SqlError::Syntax(
            "conflicting or redundant options".to_owned(),
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// `SeqOptList`: options in any order, each at most once (also what an identity column's
/// `GENERATED … AS IDENTITY (options)` takes).
pub fn parse_options(parser: &mut Parser) -> Result<SequenceSpec, SqlError> {
    let mut spec = SequenceSpec::default();
    loop {
        if parser.parse_keyword(Keyword::AS) {
            let ty = parser.parse_data_type().map_err(syntax)?;
            set(&mut spec.data_type, type_name(&ty))?;
        } else if parser.parse_keyword(Keyword::INCREMENT) {
            let _ = parser.parse_keyword(Keyword::BY);
            set(&mut spec.increment, number(parser)?)?;
        } else if parser.parse_keyword(Keyword::MINVALUE) {
            set(&mut spec.min_value, Some(number(parser)?))?;
        } else if parser.parse_keyword(Keyword::MAXVALUE) {
            set(&mut spec.max_value, Some(number(parser)?))?;
        } else if parser.parse_keywords(&[Keyword::NO, Keyword::MINVALUE]) {
            set(&mut spec.min_value, None)?;
        } else if parser.parse_keywords(&[Keyword::NO, Keyword::MAXVALUE]) {
            set(&mut spec.max_value, None)?;
        } else if parser.parse_keywords(&[Keyword::NO, Keyword::CYCLE]) {
            set(&mut spec.cycle, false)?;
        } else if parser.parse_keyword(Keyword::CYCLE) {
            set(&mut spec.cycle, true)?;
        } else if parser.parse_keyword(Keyword::START) {
            let _ = parser.parse_keyword(Keyword::WITH);
            set(&mut spec.start, number(parser)?)?;
        } else if parser.parse_keyword(Keyword::RESTART) {
            let value = if parser.parse_keyword(Keyword::WITH) || at_number(parser) {
                Some(number(parser)?)
            } else {
                None
            };
            set(&mut spec.restart, value)?;
        } else if parser.parse_keyword(Keyword::CACHE) {
            set(&mut spec.cache, number(parser)?)?;
        } else if parser.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
            let name = parser.parse_object_name(false).map_err(syntax)?;
            set(&mut spec.owned_by, name_parts(&name)?)?;
        } else {
            return Ok(spec);
        }
    }
}

fn name_parts(name: &ObjectName) -> Result<Vec<String>, SqlError> {
    name.0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(fold_ident)
                .ok_or_else(|| SqlError::Syntax(format!("syntax error: invalid name {name}")))
        })
        .collect()
}

fn type_name(ty: &DataType) -> TypeName {
    match ty {
        DataType::SmallInt(_) | DataType::Int2(_) => TypeName::Integer(SequenceType::SmallInt),
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => {
            TypeName::Integer(SequenceType::Integer)
        }
        DataType::BigInt(_) | DataType::Int8(_) => TypeName::Integer(SequenceType::BigInt),
        DataType::Custom(name, modifiers) if modifiers.is_empty() => {
            let parts = name_parts(name).unwrap_or_default();
            match parts.as_slice() {
                [t] | [_, t] => match SequenceType::from_name(t) {
                    Ok(t) => TypeName::Integer(t),
                    Err(_) => TypeName::Undefined(parts.join(".")),
                },
                _ => TypeName::Undefined(name.to_string()),
            }
        }
        _ => TypeName::NotInteger,
    }
}

fn at_number(parser: &Parser) -> bool {
    matches!(
        parser.peek_token().token,
        Token::Number(..) | Token::Minus | Token::Plus
    )
}

/// `NumericOnly`: an optionally signed number, as its text.
fn number(parser: &mut Parser) -> Result<String, SqlError> {
    let mut sign = "";
    match parser.peek_token().token {
        Token::Minus => {
            parser.next_token();
            sign = "-";
        }
        Token::Plus => {
            parser.next_token();
        }
        _ => {}
    }
    let token = parser.next_token();
    match &token.token {
        Token::Number(text, _) => Ok(format!("{sign}{text}")),
        other => Err(SqlError::Syntax(format!(
            "syntax error at or near \"{other}\": expected a number"
        ))),
    }
}

/// `DROP SEQUENCE` as sqlparser reads it.
pub fn drop_sequence(
    names: &[ObjectName],
    if_exists: bool,
    cascade: bool,
) -> Result<SequenceCommand, SqlError> {
    Ok(SequenceCommand::Drop {
        names: names.iter().map(table_name).collect::<Result<_, _>>()?,
        if_exists,
        cascade,
    })
}

/// Whether the default expression `sql` of a column of a table in schema `table_db` uses
/// sequence `name` of schema `db`: a call of `nextval`, `currval` or `setval` whose first
/// argument is the sequence's name as a string (`'s'`, `'db.s'::regclass`, `'"S"'`), an
/// unqualified name meaning the table's schema.
pub fn default_uses_sequence(sql: &str, table_db: &str, db: &str, name: &str) -> bool {
    rewrite_sequence_name(sql, table_db, db, name, None).is_some()
}

/// The default expression `sql` with sequence `old` of schema `db` renamed to `new` (what
/// PostgreSQL shows after `ALTER SEQUENCE old RENAME TO new`, its defaults holding the OID);
/// `None` when it does not use the sequence.
pub fn rename_in_default(
    sql: &str,
    table_db: &str,
    db: &str,
    old: &str,
    new: &str,
) -> Option<String> {
    rewrite_sequence_name(sql, table_db, db, old, Some(new))
}

/// Finds the sequence-function calls of `sql` naming sequence `name` of `db` and, with `new`,
/// renames the sequence in them: the expression's text (the rest of it as it was) when there
/// is one.
fn rewrite_sequence_name(
    sql: &str,
    table_db: &str,
    db: &str,
    name: &str,
    new: Option<&str>,
) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{
        Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Value, ValueWithSpan,
        visit_expressions,
    };
    use datafusion::sql::sqlparser::tokenizer::Span;
    use std::ops::ControlFlow;

    fn literal(e: &Expr) -> Option<(&str, Span)> {
        match e {
            Expr::Value(ValueWithSpan {
                value: Value::SingleQuotedString(s),
                span,
            }) => Some((s, *span)),
            Expr::Cast { expr, .. } | Expr::Nested(expr) => literal(expr),
            _ => None,
        }
    }
    let dialect = super::TarnDialect::default();
    let expr = Parser::new(&dialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .ok()?;
    let names = |text: &str| -> Option<(Option<String>, String)> {
        let name = Parser::new(&dialect)
            .try_with_sql(text)
            .and_then(|mut p| p.parse_object_name(false))
            .ok()?;
        table_name(&name).ok()
    };
    // (span of the literal, its new text)
    let mut found = Vec::new();
    let _ = visit_expressions(&expr, |e| {
        if let Expr::Function(f) = e
            && let [function] = f.name.0.as_slice()
            && let Some(function) = function.as_ident()
            && ["nextval", "currval", "setval"].contains(&fold_ident(function).as_str())
            && let FunctionArguments::List(list) = &f.args
            && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) = list.args.first()
            && let Some((text, span)) = literal(first)
            && let Some((schema, seq)) = names(text)
            && seq == name
            && schema.as_deref().unwrap_or(table_db) == db
        {
            let renamed = new.map(|new| match schema {
                Some(schema) => format!("{}.{}", quote_ident(&schema), quote_ident(new)),
                None => quote_ident(new),
            });
            found.push((span, renamed));
        }
        ControlFlow::<()>::Continue(())
    });
    if found.is_empty() {
        return None;
    }
    // The byte offset of a (1-based line, 1-based character) location.
    let offset = |line: u64, column: u64| -> Option<usize> {
        let mut start = 0;
        for (i, l) in sql.split_inclusive('\n').enumerate() {
            if i as u64 + 1 == line {
                let skip = usize::try_from(column.checked_sub(1)?).ok()?;
                return Some(start + l.char_indices().nth(skip).map_or(l.len(), |(b, _)| b));
            }
            start += l.len();
        }
        None
    };
    let mut out = sql.to_owned();
    for (span, renamed) in found.into_iter().rev() {
        let Some(renamed) = renamed else { continue };
        let from = offset(span.start.line, span.start.column)?;
        let to = offset(span.end.line, span.end.column)?;
        out.replace_range(from..to, &format!("'{}'", renamed.replace('\'', "''")));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Command, parse};

    fn one(sql: &str) -> SequenceCommand {
        let mut commands = parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(commands.len(), 1, "{sql}");
        match commands.remove(0) {
            Command::Sequence(c) => *c,
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn spec_of(sql: &str) -> SequenceSpec {
        match one(sql) {
            SequenceCommand::Create { spec, .. } => spec,
            SequenceCommand::Alter {
                action: AlterSequence::Options(spec),
                ..
            } => spec,
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn params(sql: &str) -> SequenceParams {
        spec_of(sql).to_params().unwrap()
    }

    fn error(sql: &str) -> String {
        parse(sql).map(|_| ()).unwrap_err().sqlstate().to_owned()
    }

    #[test]
    fn create_names_and_defaults() {
        assert_eq!(
            one("CREATE SEQUENCE IF NOT EXISTS Shop.\"Ord\""),
            SequenceCommand::Create {
                schema: Some("shop".into()),
                name: "Ord".into(),
                if_not_exists: true,
                spec: SequenceSpec::default(),
            }
        );
        assert_eq!(params("create sequence s"), SequenceParams::default());
        assert_eq!(one("create sequence s").tag(), "CREATE SEQUENCE");
    }

    #[test]
    fn options_in_any_order() {
        // pg_dump's order: START before INCREMENT.
        let p = params(
            "CREATE SEQUENCE public.t_id_seq AS integer START WITH 1 INCREMENT BY 1 \
             NO MINVALUE NO MAXVALUE CACHE 1",
        );
        assert_eq!(p.data_type, Some(SequenceType::Integer));
        assert_eq!(p.start, Some(1));
        assert_eq!(p.increment, Some(1));
        assert_eq!(p.min_value, Some(None));
        assert_eq!(p.max_value, Some(None));
        assert_eq!(p.cache, Some(1));
        let p = params(
            "create sequence s cycle maxvalue 100 minvalue -5 increment -2 start +7 cache 3 \
             as smallint",
        );
        assert_eq!(p.cycle, Some(true));
        assert_eq!(p.max_value, Some(Some(100)));
        assert_eq!(p.min_value, Some(Some(-5)));
        assert_eq!(p.increment, Some(-2));
        assert_eq!(p.start, Some(7));
        assert_eq!(p.cache, Some(3));
        assert_eq!(p.data_type, Some(SequenceType::SmallInt));
        assert_eq!(params("create sequence s no cycle").cycle, Some(false));
        assert_eq!(
            params("create sequence s as int8").data_type,
            Some(SequenceType::BigInt)
        );
        assert_eq!(
            params("create sequence s as pg_catalog.int2").data_type,
            Some(SequenceType::SmallInt)
        );
    }

    #[test]
    fn owned_by() {
        let spec = spec_of("create sequence s owned by Shop.T.\"Id\"");
        let parts = spec.owned_by.unwrap();
        assert_eq!(
            owned_by_target(&parts).unwrap(),
            OwnedByTarget::Column {
                schema: Some("shop".into()),
                table: "t".into(),
                column: "Id".into()
            }
        );
        let parts = spec_of("create sequence s owned by t.id").owned_by.unwrap();
        assert_eq!(
            owned_by_target(&parts).unwrap(),
            OwnedByTarget::Column {
                schema: None,
                table: "t".into(),
                column: "id".into()
            }
        );
        let parts = spec_of("alter sequence s owned by NONE").owned_by.unwrap();
        assert_eq!(owned_by_target(&parts).unwrap(), OwnedByTarget::None);
        let parts = spec_of("alter sequence s owned by id").owned_by.unwrap();
        let e = owned_by_target(&parts).unwrap_err();
        assert_eq!(e.code, "42601");
        assert!(e.hint.is_some());
    }

    #[test]
    fn alter_forms() {
        let p = params("ALTER SEQUENCE s RESTART");
        assert_eq!(p.restart, Some(None));
        assert_eq!(
            params("alter sequence s restart with 7").restart,
            Some(Some(7))
        );
        assert_eq!(
            params("alter sequence s restart -3").restart,
            Some(Some(-3))
        );
        let p = params("alter sequence s restart increment 5");
        assert_eq!((p.restart, p.increment), (Some(None), Some(5)));
        assert_eq!(
            one("alter sequence if exists a.s rename to \"T\""),
            SequenceCommand::Alter {
                schema: Some("a".into()),
                name: "s".into(),
                if_exists: true,
                action: AlterSequence::RenameTo("T".into()),
            }
        );
        assert_eq!(one("alter sequence s cycle").tag(), "ALTER SEQUENCE");
    }

    #[test]
    fn drop_forms() {
        assert_eq!(
            one("DROP SEQUENCE IF EXISTS a, b.c CASCADE"),
            SequenceCommand::Drop {
                names: vec![(None, "a".into()), (Some("b".into()), "c".into())],
                if_exists: true,
                cascade: true,
            }
        );
        assert!(matches!(
            one("drop sequence s restrict"),
            SequenceCommand::Drop {
                cascade: false,
                if_exists: false,
                ..
            }
        ));
    }

    #[test]
    fn syntax_errors() {
        for sql in [
            "create sequence s increment 1 increment 2",
            "create sequence s cycle no cycle",
            "create sequence s no minvalue minvalue 3",
            "create sequence s start '5'",
            "create sequence s start",
            "alter sequence s",
            "alter sequence s rename to a.b",
            "create sequence s bogus 1",
        ] {
            assert_eq!(error(sql), "42601", "{sql}");
        }
        assert_eq!(error("create temp sequence s"), "0A000");
        assert_eq!(error("create unlogged sequence s"), "0A000");
        assert_eq!(error("alter sequence s set schema x"), "0A000");
        assert_eq!(error("alter sequence s owner to bob"), "0A000");
    }

    #[test]
    fn defaults_using_a_sequence() {
        let uses = |sql: &str| default_uses_sequence(sql, "public", "public", "t_id_seq");
        assert!(uses("nextval('t_id_seq'::regclass)"));
        assert!(uses("nextval('t_id_seq')"));
        assert!(uses("NEXTVAL('public.t_id_seq')"));
        assert!(uses("(nextval('T_ID_SEQ'::regclass) + 1)"));
        assert!(!uses("nextval('\"T_ID_SEQ\"')"));
        assert!(!uses("nextval('other.t_id_seq')"));
        assert!(!uses("nextval('t_id_seq2')"));
        assert!(!uses("now()"));
        assert!(!uses("'t_id_seq'"));
        assert!(default_uses_sequence(
            "nextval('t_id_seq')",
            "shop",
            "shop",
            "t_id_seq"
        ));
        assert!(!default_uses_sequence(
            "nextval('t_id_seq')",
            "shop",
            "public",
            "t_id_seq"
        ));
    }

    #[test]
    fn renames_in_defaults() {
        let rename = |sql: &str, new: &str| rename_in_default(sql, "public", "public", "s", new);
        assert_eq!(
            rename("nextval('s'::regclass)", "t").as_deref(),
            Some("nextval('t'::regclass)")
        );
        assert_eq!(
            rename("nextval('public.s')", "Big").as_deref(),
            Some("nextval('public.\"Big\"')")
        );
        assert_eq!(
            rename("(nextval('s') + currval('S'))", "u").as_deref(),
            Some("(nextval('u') + currval('u'))")
        );
        assert_eq!(rename("nextval('other')", "t"), None);
        assert_eq!(rename("now()", "t"), None);
    }

    #[test]
    fn values_checked_when_run() {
        let code = |sql: &str| spec_of(sql).to_params().unwrap_err().code;
        assert_eq!(code("create sequence s start 1.5"), "22P02");
        assert_eq!(
            code("create sequence s increment 9999999999999999999"),
            "22003"
        );
        assert_eq!(code("create sequence s as text"), "22023");
        assert_eq!(code("create sequence s as numeric(10)"), "22023");
        assert_eq!(code("create sequence s as nosuchtype"), "42704");
        assert_eq!(
            params("create sequence s minvalue -9223372036854775808").min_value,
            Some(Some(i64::MIN))
        );
    }
}
