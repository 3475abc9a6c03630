//! SQL layer: parse text with [`TarnDialect`] and sort each statement into a [`Command`].
//!
//! Session commands (SET, SHOW, transactions, schemas) are answered by the server's session;
//! everything else goes to DataFusion as a [`Command::Plan`]. Rewrites that make client queries
//! (psql, DBeaver, ...) plannable by DataFusion are applied here, on the AST, never on SQL text.

mod command;
pub mod create_table;
mod dialect;
mod error;
mod names;

pub use command::{Command, SetValue, ShowTarget, TransactionCommand};
pub use dialect::TarnDialect;
pub use error::SqlError;

use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use std::sync::LazyLock;

/// Nesting allowed while parsing (DataFusion's default is 50; deep client queries need more).
const RECURSION_LIMIT: usize = 256;

static COMPAT: LazyLock<PostgresCompatibilityParser> =
    LazyLock::new(PostgresCompatibilityParser::new);

/// Parses `sql` (zero or more statements separated by `;`) into commands, all or nothing:
/// a syntax error anywhere means no statement runs, as in PostgreSQL.
pub fn parse(sql: &str) -> Result<Vec<Command>, SqlError> {
    let dialect = TarnDialect::default();
    let mut parser = DFParserBuilder::new(sql)
        .with_dialect(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .build()
        .map_err(SqlError::from_parser)?;
    let statements = parser.parse_statements().map_err(SqlError::from_parser)?;
    statements
        .into_iter()
        .map(|s| Command::classify(rewrite(s)))
        .collect()
}

/// AST rewrites that let DataFusion plan what Postgres clients send.
fn rewrite(statement: DFStatement) -> DFStatement {
    match statement {
        DFStatement::Statement(mut s) => {
            names::name_output_columns(&mut s);
            DFStatement::Statement(Box::new(COMPAT.rewrite(*s)))
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
