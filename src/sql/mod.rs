//! SQL layer: parse text with [`TarnDialect`] and sort each statement into a [`Command`].
//!
//! Session commands (SET, SHOW, transactions, schemas) are answered by the server's session;
//! everything else goes to DataFusion as a [`Command::Plan`]. Rewrites that make client queries
//! (psql, DBeaver, ...) plannable by DataFusion are applied here, on the AST, never on SQL text.

pub mod alter_table;
mod array_comparison;
mod array_subquery;
mod ast;
pub mod call;
mod char_casts;
mod command;
mod compat;
pub mod copy;
mod correlation;
pub mod create_as;
pub mod create_table;
mod cte_columns;
pub mod cursor;
pub mod defaults;
mod dialect;
pub mod dml;
mod error;
mod expandarray;
mod fetch;
mod from_functions;
mod hypothetical;
mod in_subquery;
mod json;
mod lateral;
mod lateral_unnest;
mod literals;
mod merge;
mod names;
mod operators;
mod order_subquery;
mod overriding;
pub mod partitions;
mod pg_views;
mod recursive_cte;
pub(crate) mod regcast;
pub mod role;
mod row_in;
mod row_nulls;
pub mod sequence;
mod series;
mod set_comparison;
mod set_operation_order;
mod single_row;
mod subquery_values;
pub mod temp_tables;
mod uuids;
pub mod versions;
pub mod view_deps;
pub mod views;

pub use command::{Command, SetValue, ShowTarget, TransactionCommand};
pub use dialect::TarnDialect;
pub use error::SqlError;
pub use names::visible_name;

use datafusion::sql::parser::{DFParser, DFParserBuilder, Statement as DFStatement};

/// Nesting allowed while parsing (DataFusion's default is 50; deep client queries need more).
const RECURSION_LIMIT: usize = 256;

/// Parses `sql` (zero or more statements separated by `;`) into commands, all or nothing:
/// a syntax error anywhere means no statement runs, as in PostgreSQL.
pub fn parse(sql: &str) -> Result<Vec<Command>, SqlError> {
    match parse_with(sql, &TarnDialect::default()) {
        Ok(commands) => Ok(commands),
        // `FROM t at`: PostgreSQL's alias, which table versioning would read as Snowflake's
        // `AT(...)`; the text is read again without versioning before giving up.
        Err(first) => parse_with(sql, &TarnDialect::without_table_versioning()).map_err(|_| first),
    }
}

/// A parser over `sql` in `dialect`: tokenized, version tags marked (`versions.rs`), with
/// tarn's recursion limit.
fn parser_for<'a>(
    sql: &str,
    dialect: &'a TarnDialect,
) -> Result<datafusion::sql::parser::DFParser<'a>, SqlError> {
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;
    let mut tokens = Tokenizer::new(dialect, sql)
        .tokenize_with_location()
        .map_err(|e| {
            let e = datafusion::sql::sqlparser::parser::ParserError::from(e);
            SqlError::Syntax(format!("syntax error: {e}"))
        })?;
    versions::mark_tags(&mut tokens);
    DFParserBuilder::new(tokens)
        .with_dialect(dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .build()
        .map_err(SqlError::from_parser)
}

fn parse_with(sql: &str, dialect: &TarnDialect) -> Result<Vec<Command>, SqlError> {
    let mut parser = parser_for(sql, dialect)?;
    let statements = parse_statements(&mut parser)?;
    statements
        .into_iter()
        .map(|parsed| match parsed {
            Parsed::Statement(s) => {
                // A view keeps its query as written: no rewrite before it is stored.
                if let Some(view) = views::view_command(&s) {
                    return Ok(Command::View(Box::new(view?)));
                }
                if let DFStatement::Statement(statement) = &s {
                    recursive_cte::check(statement)?;
                    set_operation_order::check(statement)?;
                }
                Command::classify(rewrite(s))
            }
            Parsed::Upsert(s) => Ok(Command::Upsert(Box::new(rewrite(s)))),
            Parsed::Copy(mut spec) => {
                spec.query = rewrite(spec.query);
                Ok(Command::Copy(spec))
            }
            Parsed::Sequence(c) => Ok(Command::Sequence(Box::new(c))),
            Parsed::View(c) => Ok(Command::View(Box::new(c))),
            Parsed::AlterTable(spec) => Ok(Command::AlterTable(Box::new(spec))),
            Parsed::Cursor(mut c) => {
                if let cursor::CursorCommand::Declare(d) = &mut c {
                    d.query = rewrite(d.query.clone());
                }
                Ok(Command::Cursor(Box::new(c)))
            }
        })
        .collect()
}

/// One statement as the statement loop read it.
enum Parsed {
    Statement(DFStatement),
    /// `UPSERT INTO`, read as an INSERT.
    Upsert(DFStatement),
    /// `COPY`, read by tarn's parser hook.
    Copy(Box<copy::CopySpec>),
    /// `DECLARE`, `FETCH`, `MOVE`, `CLOSE`, read by tarn's parser hook.
    Cursor(cursor::CursorCommand),
    /// `CREATE SEQUENCE`, `ALTER SEQUENCE`, read by tarn's parser hook.
    Sequence(sequence::SequenceCommand),
    /// `ALTER VIEW … RENAME TO`, read by tarn's parser hook.
    View(views::ViewCommand),
    /// `ALTER TABLE … RESET (…)`, read by tarn's parser hook.
    AlterTable(alter_table::AlterTableSpec),
}

/// DataFusion's statement loop, except that `CREATE TABLE`, `COPY` and `CREATE/ALTER USER` go to
/// tarn's parser hooks
/// (DataFusion parses them itself and would never reach the dialect's), and `UPSERT INTO`
/// (tarn's blind upsert) is read as an INSERT.
fn parse_statements(parser: &mut DFParser) -> Result<Vec<Parsed>, SqlError> {
    use datafusion::sql::sqlparser::ast::Statement;
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::Token;
    let mut out = Vec::new();
    let mut expecting_delimiter = false;
    loop {
        while parser.parser.consume_token(&Token::SemiColon) {
            expecting_delimiter = false;
        }
        let next = parser.parser.peek_token();
        if next.token == Token::EOF {
            break;
        }
        if expecting_delimiter {
            return Err(SqlError::Syntax(format!(
                "syntax error: Expected: end of statement, found: {next}"
            )));
        }
        let upsert = matches!(&next.token, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("upsert"));
        if copy::at_copy(&parser.parser) {
            out.push(Parsed::Copy(Box::new(copy::parse_copy(
                &mut parser.parser,
            )?)));
            expecting_delimiter = true;
            continue;
        }
        if cursor::at_cursor_statement(&parser.parser) {
            out.push(Parsed::Cursor(cursor::parse_cursor_statement(
                &mut parser.parser,
            )?));
            expecting_delimiter = true;
            continue;
        }
        if sequence::at_sequence_statement(&parser.parser) {
            out.push(Parsed::Sequence(sequence::parse_sequence_statement(
                &mut parser.parser,
            )?));
            expecting_delimiter = true;
            continue;
        }
        if alter_table::at_alter_table_reset(&parser.parser) {
            out.push(Parsed::AlterTable(
                alter_table::parse_alter_table_reset(&mut parser.parser)
                    .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?,
            ));
            expecting_delimiter = true;
            continue;
        }
        if views::at_alter_view(&parser.parser) {
            out.push(Parsed::View(views::parse_alter_view(&mut parser.parser)?));
            expecting_delimiter = true;
            continue;
        }
        let statement = if create_table::at_create_table(&parser.parser) {
            DFStatement::Statement(Box::new(
                create_table::parse_create_table(&mut parser.parser)
                    .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?,
            ))
        } else if matches!(&next.token, Token::Word(w) if w.keyword == Keyword::ABORT) {
            // PostgreSQL's ABORT [WORK | TRANSACTION] is ROLLBACK.
            parser.parser.next_token();
            let _ = parser
                .parser
                .parse_one_of_keywords(&[Keyword::WORK, Keyword::TRANSACTION]);
            DFStatement::Statement(Box::new(Statement::Rollback {
                chain: false,
                savepoint: None,
            }))
        } else if role::at_user_statement(&parser.parser) {
            DFStatement::Statement(Box::new(
                role::parse_user_statement(&mut parser.parser)
                    .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?,
            ))
        } else if merge::at_merge(&parser.parser) {
            DFStatement::Statement(Box::new(
                merge::parse_merge(&mut parser.parser)
                    .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?,
            ))
        } else if upsert {
            let token = parser.parser.next_token();
            DFStatement::Statement(Box::new(
                parser
                    .parser
                    .parse_insert(token)
                    .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?,
            ))
        } else {
            parser.parse_statement().map_err(SqlError::from_parser)?
        };
        out.push(if upsert {
            Parsed::Upsert(statement)
        } else {
            Parsed::Statement(statement)
        });
        expecting_delimiter = true;
    }
    Ok(out)
}

/// AST rewrites that let DataFusion plan what Postgres clients send.
fn rewrite(statement: DFStatement) -> DFStatement {
    match statement {
        DFStatement::Statement(mut s) => {
            from_functions::normalize(&mut s);
            names::name_output_columns(&mut s);
            fetch::rewrite(&mut s);
            hypothetical::rewrite(&mut s);
            char_casts::rewrite(&mut s);
            cte_columns::rewrite(&mut s);
            row_nulls::rewrite(&mut s);
            row_in::rewrite(&mut s);
            lateral::rewrite(&mut s);
            order_subquery::rewrite(&mut s);
            in_subquery::rewrite(&mut s);
            literals::rewrite_exponent_literals(&mut s);
            pg_views::qualify_pg_views(&mut s);
            regcast::rewrite_proc_names(&mut s);
            regcast::unwrap_sequence_names(&mut *s);
            let mut s = compat::rewrite(*s);
            array_comparison::rewrite(&mut s);
            // After the compatibility rules, which would take a correlated ARRAY(...) in a
            // select list, once it is a subquery, for one they cannot plan.
            array_subquery::rewrite(&mut s);
            expandarray::rewrite(&mut s);
            series::rewrite(&mut s);
            operators::rewrite(&mut s);
            regcast::rewrite(&mut s);
            uuids::rewrite(&mut s);
            subquery_values::rewrite(&mut s);
            single_row::rewrite(&mut s);
            // Last: the rules above know json_agg & co. by name.
            json::rewrite(&mut s);
            from_functions::rewrite(&mut s);
            lateral_unnest::rewrite(&mut s);
            DFStatement::Statement(Box::new(s))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_statements_and_skips_empty_ones() {
        let commands = parse("select 1;; select 2 ;").unwrap();
        assert_eq!(commands.len(), 2);
        assert!(parse("  ;  ").unwrap().is_empty());
    }

    #[test]
    fn syntax_error_anywhere_rejects_all() {
        let err = parse("select 1; selec 2").unwrap_err();
        assert_eq!(err.sqlstate(), "42601");
    }

    #[test]
    fn create_table_goes_through_tarns_parser() {
        let commands = parse(
            "select 1; CREATE TABLE t (a int, b text, primary key (a, b)) \
             WITH (write-buffer-size = '1mb', 'file.format' = 'parquet') PARTITIONED BY (b); select 2",
        )
        .unwrap();
        assert_eq!(commands.len(), 3);
        match &commands[1] {
            Command::CreateTable(spec) => {
                assert_eq!(spec.partition_keys, ["b"]);
                assert_eq!(spec.options["write-buffer-size"], "1mb");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse("create table t (a int) b").unwrap_err().sqlstate(),
            "42601"
        );
    }

    #[test]
    fn copy_goes_through_tarns_parser() {
        let commands = parse(
            "select 1; COPY (SELECT 1 AS a, 2) TO STDOUT WITH CSV HEADER; \
             copy t (a) to stdout (format text); select 'COPY t TO STDOUT'",
        )
        .unwrap();
        assert_eq!(commands.len(), 4);
        match &commands[1] {
            Command::Copy(spec) => {
                assert!(spec.table.is_none() && spec.options.header);
                // The query got the rewrites of a SELECT (PostgreSQL's output names).
                assert!(
                    spec.query.to_string().contains("\"?column?\""),
                    "{}",
                    spec.query
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&commands[2], Command::Copy(spec) if spec.table.is_some()));
        assert!(matches!(commands[3], Command::Plan(_)));
        // Anything after the options is a syntax error; nothing runs.
        assert_eq!(
            parse("select 1; copy t to stdout csv nonsense")
                .unwrap_err()
                .sqlstate(),
            "42601"
        );
    }

    #[test]
    fn extension_keywords_in_literals_and_comments_are_plain_text() {
        let sql = "SELECT 'UPSERT INTO t VALUES (1)', 'MERGE INTO t', \
                   'FOR SYSTEM_TIME AS OF now()', 'VERSION AS OF 3', 'CALL sys.compact(1)', \
                   'PARTITIONED BY (dt)' -- UPSERT INTO x; CALL sys.f(); MERGE INTO y\n\
                   /* FOR SYSTEM_TIME AS OF; VERSION AS OF 'tag'; PARTITIONED BY (a) */";
        let commands = parse(sql).unwrap();
        assert_eq!(commands.len(), 1);
        assert!(matches!(commands[0], Command::Plan(_)));
    }
}
