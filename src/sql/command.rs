//! [`Command`]: what one parsed statement asks of the server.

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    DiscardObject, Expr, Ident, ObjectName, ObjectType, Reset, SchemaName, Set, Statement,
    UnaryOperator, Value,
};

use super::SqlError;

/// One statement, sorted by who answers it.
#[derive(Debug, Clone)]
pub enum Command {
    /// Planned and executed by DataFusion (queries, DML, DDL).
    Plan(DFStatement),
    /// `SET name = value` / `SET name TO DEFAULT` / `SET TIME ZONE ...`.
    Set { name: String, value: SetValue },
    /// `SHOW name` / `SHOW ALL`.
    Show(ShowTarget),
    /// `RESET name`, or `RESET ALL` (`None`); `DISCARD ALL` also resets.
    Reset(Option<String>),
    /// `BEGIN`, `COMMIT`, `ROLLBACK`, savepoints.
    Transaction(TransactionCommand),
    /// `CREATE SCHEMA [IF NOT EXISTS] name`.
    CreateSchema { name: String, if_not_exists: bool },
    /// `DROP SCHEMA [IF EXISTS] name, ... [CASCADE]`.
    DropSchema {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    /// `CREATE TABLE ...` (a Paimon table).
    CreateTable(Box<super::create_table::CreateTableSpec>),
    /// `ALTER TABLE ...` and `COMMENT ON TABLE|COLUMN ...`: the table's next schema, or a
    /// rename.
    AlterTable(Box<super::alter_table::AlterTableSpec>),
    /// `DROP TABLE [IF EXISTS] a, b [CASCADE]`: `(schema, table)` names.
    DropTable {
        names: Vec<(Option<String>, String)>,
        if_exists: bool,
        /// CASCADE: the views using the tables go with them.
        cascade: bool,
    },
    /// `UPSERT INTO t ...`: tarn's blind upsert (an INSERT whose rows replace existing keys,
    /// without reading them).
    Upsert(Box<DFStatement>),
    /// `CALL sys.procedure(args)`: a Paimon maintenance procedure.
    Call(super::call::CallSpec),
    /// `TRUNCATE [TABLE] a, b`: one OVERWRITE snapshot per table.
    Truncate(Vec<(Option<String>, String)>),
    /// `COPY (query) TO STDOUT` / `COPY table [(columns)] TO STDOUT` with PostgreSQL's options.
    Copy(Box<super::copy::CopySpec>),
    /// `CREATE/ALTER/DROP ROLE` (and `USER`): the server's roles.
    Role(super::role::RoleCommand),
    /// `DECLARE ... CURSOR`, `FETCH`, `MOVE`, `CLOSE` (`session/cursors.rs` runs them).
    Cursor(Box<super::cursor::CursorCommand>),
    /// `CREATE/ALTER/DROP SEQUENCE` (`session/sequences.rs` runs them).
    Sequence(Box<super::sequence::SequenceCommand>),
    /// `CREATE/DROP VIEW`, `ALTER VIEW … RENAME TO`, `COMMENT ON VIEW` (`session/views.rs`).
    View(Box<super::views::ViewCommand>),
    /// `DISCARD ALL`: closes cursors, releases advisory locks, resets settings, drops the
    /// session's temporary tables.
    DiscardAll,
    /// `DISCARD TEMP`: drops the session's temporary tables.
    DiscardTemp,
    /// `DEALLOCATE [PREPARE] name`, or `ALL` (`None`): drops protocol-level prepared
    /// statements (the handler's statement store holds them).
    Deallocate(Option<String>),
    /// Accepted and ignored, answered with this command tag (e.g. `SET` for
    /// `SET SESSION CHARACTERISTICS ...`, `DISCARD PLANS`).
    NoOp(&'static str),
}

/// The value of a `SET`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetValue {
    /// `TO DEFAULT` / `= DEFAULT` / `SET TIME ZONE LOCAL`.
    Default,
    /// One or more values, already unquoted (`SET search_path TO a, "B"` gives `a`, `B`).
    List(Vec<String>),
}

/// What a `SHOW` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShowTarget {
    All,
    Name(String),
}

/// Transaction control statements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransactionCommand {
    /// `BEGIN [ISOLATION LEVEL ...]`: the level's name as `SHOW transaction_isolation` prints
    /// it, if given.
    Begin(Option<&'static str>),
    /// `SET TRANSACTION [ISOLATION LEVEL ...]`: the current block's level.
    SetIsolation(Option<&'static str>),
    Commit,
    Rollback,
    Savepoint(String),
    Release(String),
    RollbackTo(String),
}

/// The isolation level `modes` ask for; SERIALIZABLE is refused (0A000) until tarn provides
/// it: never a silent downgrade.
fn isolation_of(
    modes: &[datafusion::sql::sqlparser::ast::TransactionMode],
) -> Result<Option<&'static str>, SqlError> {
    use datafusion::sql::sqlparser::ast::{TransactionIsolationLevel as L, TransactionMode};
    let mut level = None;
    for m in modes {
        if let TransactionMode::IsolationLevel(l) = m {
            level = Some(match l {
                L::ReadUncommitted => "read uncommitted",
                L::ReadCommitted => "read committed",
                L::RepeatableRead => "repeatable read",
                L::Snapshot => "repeatable read",
                L::Serializable => {
                    return Err(SqlError::Unsupported(
                        "SERIALIZABLE isolation is not supported: tarn runs every transaction \
                         under snapshot isolation (REPEATABLE READ); use REPEATABLE READ or \
                         READ COMMITTED"
                            .to_owned(),
                    ));
                }
            });
        }
    }
    Ok(level)
}

impl Command {
    /// Sorts a parsed statement.
    pub fn classify(statement: DFStatement) -> Result<Command, SqlError> {
        refuse_server_files(&statement)?;
        let inner = match statement {
            DFStatement::Statement(inner) => inner,
            // DataFusion's parser takes RESET itself.
            DFStatement::Reset(datafusion::sql::parser::ResetStatement::Variable(name)) => {
                let name = setting_name(&name);
                return Ok(Command::Reset((name != "all").then_some(name)));
            }
            other => return Ok(Command::Plan(other)),
        };
        Ok(match *inner {
            Statement::Set(set) => return classify_set(set),
            Statement::Call(function) => {
                Command::Call(super::call::CallSpec::from_function(&function)?)
            }
            Statement::ShowVariable { variable } => Command::Show(show_target(&variable)),
            Statement::Reset(r) => Command::Reset(match r.reset {
                Reset::ALL => None,
                Reset::ConfigurationParameter(name) => Some(setting_name(&name)),
            }),
            // Clients (psycopg after DDL, pools on reset) drop their protocol-level statements
            // this way.
            Statement::Deallocate { name, .. } => Command::Deallocate(
                (name.quote_style.is_some() || !name.value.eq_ignore_ascii_case("all"))
                    .then(|| fold_ident(&name)),
            ),
            // Pools send `UNLISTEN *` on reset; tarn has no LISTEN, so nothing is listened to.
            Statement::UNLISTEN { .. } => Command::NoOp("UNLISTEN"),
            Statement::LISTEN { .. } | Statement::NOTIFY { .. } => {
                return Err(SqlError::Unsupported(
                    "LISTEN and NOTIFY are not supported: tarn has no asynchronous notifications"
                        .into(),
                ));
            }
            Statement::Discard { object_type } => match object_type {
                DiscardObject::ALL => Command::DiscardAll,
                DiscardObject::PLANS => Command::NoOp("DISCARD PLANS"),
                DiscardObject::SEQUENCES => Command::NoOp("DISCARD SEQUENCES"),
                DiscardObject::TEMP => Command::DiscardTemp,
            },
            Statement::StartTransaction { modes, .. } => {
                // SERIALIZABLE is refused; READ COMMITTED reads a new snapshot per statement,
                // REPEATABLE READ one per transaction.
                Command::Transaction(TransactionCommand::Begin(isolation_of(&modes)?))
            }
            Statement::Commit { .. } => Command::Transaction(TransactionCommand::Commit),
            Statement::Rollback {
                savepoint: None, ..
            } => Command::Transaction(TransactionCommand::Rollback),
            Statement::Rollback {
                savepoint: Some(name),
                ..
            } => Command::Transaction(TransactionCommand::RollbackTo(fold_ident(&name))),
            Statement::Savepoint { name } => {
                Command::Transaction(TransactionCommand::Savepoint(fold_ident(&name)))
            }
            Statement::ReleaseSavepoint { name } => {
                Command::Transaction(TransactionCommand::Release(fold_ident(&name)))
            }
            Statement::CreateSchema {
                schema_name,
                if_not_exists,
                ..
            } => {
                let name = match &schema_name {
                    SchemaName::Simple(name) | SchemaName::NamedAuthorization(name, _) => {
                        single_name(name, "schema")?
                    }
                    SchemaName::UnnamedAuthorization(ident) => fold_ident(ident),
                };
                Command::CreateSchema {
                    name,
                    if_not_exists,
                }
            }
            Statement::Drop {
                object_type: ObjectType::Schema,
                if_exists,
                names,
                cascade,
                ..
            } => Command::DropSchema {
                names: names
                    .iter()
                    .map(|n| single_name(n, "schema"))
                    .collect::<Result<_, _>>()?,
                if_exists,
                cascade,
            },
            // PostgreSQL requires INTO; sqlparser also takes MySQL's `INSERT t VALUES ...`.
            Statement::Insert(insert) if !insert.into => {
                return Err(SqlError::Syntax(
                    "syntax error at or near \"VALUES\": INSERT needs INTO".to_owned(),
                ));
            }
            Statement::CreateTable(ct) => {
                Command::CreateTable(Box::new(super::create_table::create_table_spec(ct)?))
            }
            Statement::AlterTable(alter) => {
                Command::AlterTable(Box::new(super::alter_table::alter_table_spec(alter)?))
            }
            Statement::Comment {
                object_type,
                object_name,
                comment,
                if_exists,
            } => Command::AlterTable(Box::new(super::alter_table::comment_spec(
                object_type,
                &object_name,
                comment,
                if_exists,
            )?)),
            Statement::Drop {
                object_type: ObjectType::Table,
                if_exists,
                names,
                cascade,
                ..
            } => Command::DropTable {
                names: names
                    .iter()
                    .map(super::create_table::table_name)
                    .collect::<Result<_, _>>()?,
                if_exists,
                cascade,
            },
            Statement::Drop {
                object_type: ObjectType::Sequence,
                if_exists,
                names,
                cascade,
                ..
            } => Command::Sequence(Box::new(super::sequence::drop_sequence(
                &names, if_exists, cascade,
            )?)),
            Statement::Truncate(t) => {
                if t.partitions.is_some() {
                    return Err(SqlError::Unsupported(
                        "TRUNCATE ... PARTITION is not supported yet".into(),
                    ));
                }
                Command::Truncate(
                    t.table_names
                        .iter()
                        .map(|n| super::create_table::table_name(&n.name))
                        .collect::<Result<_, _>>()?,
                )
            }
            Statement::CreateRole(create) => Command::Role(super::role::create_role(&create)?),
            Statement::AlterRole { name, operation } => {
                Command::Role(super::role::alter_role(&name, &operation)?)
            }
            Statement::Drop {
                object_type: ObjectType::Role | ObjectType::User,
                if_exists,
                names,
                ..
            } => Command::Role(super::role::RoleCommand::Drop {
                names: names
                    .iter()
                    .map(|n| single_name(n, "role"))
                    .collect::<Result<_, _>>()?,
                if_exists,
            }),
            Statement::Grant(_) | Statement::Revoke(_) => {
                return Err(SqlError::Unsupported(
                    "GRANT and REVOKE are not supported yet: every role that logs in may do \
                     everything (privileges come later)"
                        .into(),
                ));
            }
            Statement::CreateIndex(_) => {
                return Err(SqlError::Unsupported(
                    "CREATE INDEX is not supported: a Paimon table is sorted by its primary key \
                     in each bucket, so lookups by key need no index (bloom filters on other \
                     columns come with the file-index.bloom-filter.columns option later)"
                        .into(),
                ));
            }
            other => Command::Plan(DFStatement::Statement(Box::new(other))),
        })
    }
}

/// DataFusion would read or write any file the server can reach (`CREATE EXTERNAL TABLE`, its
/// `COPY ... TO 'file'`, also under `EXPLAIN ANALYZE`, which runs them): refused, not a
/// privilege tarn hands to every client. tarn's own COPY (`sql/copy.rs`) sends to the client.
fn refuse_server_files(statement: &DFStatement) -> Result<(), SqlError> {
    match statement {
        DFStatement::CreateExternalTable(_) => Err(SqlError::Unsupported(
            "CREATE EXTERNAL TABLE is not supported: tarn serves Paimon tables of its warehouse"
                .into(),
        )),
        DFStatement::CopyTo(_) => Err(SqlError::Unsupported(
            "COPY to or from a server file is not supported".into(),
        )),
        DFStatement::Explain(explain) => refuse_server_files(&explain.statement),
        _ => Ok(()),
    }
}

fn classify_set(set: Set) -> Result<Command, SqlError> {
    Ok(match set {
        Set::SingleAssignment {
            variable, values, ..
        } => {
            let name = setting_name(&variable);
            // DataFusion's own options (`SET datafusion.execution.batch_size = ...`).
            if name.starts_with("datafusion.") {
                let set = Set::SingleAssignment {
                    scope: None,
                    hivevar: false,
                    variable,
                    values,
                };
                return Ok(Command::Plan(DFStatement::Statement(Box::new(
                    Statement::Set(set),
                ))));
            }
            Command::Set {
                name,
                value: set_value(&values)?,
            }
        }
        Set::SetTimeZone { value, .. } => Command::Set {
            name: "timezone".to_owned(),
            value: set_value(std::slice::from_ref(&value))?,
        },
        Set::SetNames { charset_name, .. } => Command::Set {
            name: "client_encoding".to_owned(),
            value: SetValue::List(vec![charset_name.value]),
        },
        Set::SetTransaction { modes, .. } => {
            Command::Transaction(TransactionCommand::SetIsolation(isolation_of(&modes)?))
        }
        Set::MultipleAssignments { .. } | Set::ParenthesizedAssignments { .. } => {
            return Err(SqlError::Syntax(
                "syntax error: SET takes one setting: SET name TO value".to_owned(),
            ));
        }
        other => {
            return Err(SqlError::Unsupported(format!(
                "{other} is not supported: tarn has no roles or session authorization yet"
            )));
        }
    })
}

/// Folds an identifier as PostgreSQL does: unquoted to lower case, quoted kept.
pub(crate) fn fold_ident(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// Setting names are case-insensitive and may be dotted (`app.user_id`).
fn setting_name(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| match part.as_ident() {
            Some(ident) => ident.value.to_lowercase(),
            None => part.to_string().to_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn single_name(name: &ObjectName, what: &str) -> Result<String, SqlError> {
    match name.0.as_slice() {
        [part] => part
            .as_ident()
            .map(fold_ident)
            .ok_or_else(|| SqlError::Syntax(format!("syntax error: invalid {what} name {name}"))),
        _ => Err(SqlError::Syntax(format!(
            "syntax error: improper qualified name (too many dotted names): {name}"
        ))),
    }
}

fn show_target(variable: &[Ident]) -> ShowTarget {
    let words: Vec<String> = variable.iter().map(|i| i.value.to_lowercase()).collect();
    match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["all"] => ShowTarget::All,
        ["time", "zone"] => ShowTarget::Name("timezone".to_owned()),
        ["transaction", "isolation", "level"] => {
            ShowTarget::Name("transaction_isolation".to_owned())
        }
        _ => ShowTarget::Name(words.join(".")),
    }
}

fn set_value(values: &[Expr]) -> Result<SetValue, SqlError> {
    if let [Expr::Identifier(ident)] = values
        && ident.quote_style.is_none()
        && (ident.value.eq_ignore_ascii_case("default")
            || ident.value.eq_ignore_ascii_case("local"))
    {
        return Ok(SetValue::Default);
    }
    values
        .iter()
        .map(value_text)
        .collect::<Result<Vec<_>, _>>()
        .map(SetValue::List)
}

fn value_text(expr: &Expr) -> Result<String, SqlError> {
    match expr {
        Expr::Identifier(ident) => Ok(fold_ident(ident)),
        Expr::CompoundIdentifier(parts) => {
            Ok(parts.iter().map(fold_ident).collect::<Vec<_>>().join("."))
        }
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s)
            | Value::DoubleQuotedString(s)
            | Value::EscapedStringLiteral(s)
            | Value::DollarQuotedString(datafusion::sql::sqlparser::ast::DollarQuotedString {
                value: s,
                ..
            }) => Ok(s.clone()),
            Value::Number(n, _) => Ok(n.to_string()),
            Value::Boolean(b) => Ok(if *b { "on" } else { "off" }.to_owned()),
            other => Err(SqlError::InvalidValue(format!(
                "invalid value for a setting: {other}"
            ))),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => Ok(format!("-{}", value_text(expr)?)),
        Expr::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => value_text(expr),
        other => Err(SqlError::InvalidValue(format!(
            "invalid value for a setting: {other}; use a literal or a name"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn one(sql: &str) -> Command {
        let mut commands = parse(sql).unwrap();
        assert_eq!(commands.len(), 1, "{sql}");
        commands.remove(0)
    }

    #[test]
    fn set_forms() {
        let cases = [
            ("SET search_path TO a, \"B\"", "search_path", vec!["a", "B"]),
            (
                "set Application_Name = 'psql'",
                "application_name",
                vec!["psql"],
            ),
            (
                "SET extra_float_digits = 3",
                "extra_float_digits",
                vec!["3"],
            ),
            (
                "SET extra_float_digits = -2",
                "extra_float_digits",
                vec!["-2"],
            ),
            (
                "SET TIME ZONE 'Europe/Berlin'",
                "timezone",
                vec!["Europe/Berlin"],
            ),
            (
                "SET SESSION statement_timeout = 100",
                "statement_timeout",
                vec!["100"],
            ),
            ("SET NAMES 'UTF8'", "client_encoding", vec!["UTF8"]),
        ];
        for (sql, name, values) in cases {
            match one(sql) {
                Command::Set {
                    name: n,
                    value: SetValue::List(v),
                } => {
                    assert_eq!(n, name, "{sql}");
                    assert_eq!(v, values, "{sql}");
                }
                other => panic!("{sql}: {other:?}"),
            }
        }
        assert!(matches!(
            one("SET timezone TO DEFAULT"),
            Command::Set {
                value: SetValue::Default,
                ..
            }
        ));
        assert!(matches!(
            one("SET datafusion.execution.batch_size = 100"),
            Command::Plan(_)
        ));
    }

    #[test]
    fn show_reset_and_transactions() {
        assert!(matches!(one("SHOW ALL"), Command::Show(ShowTarget::All)));
        assert!(
            matches!(one("show TimeZone"), Command::Show(ShowTarget::Name(n)) if n == "timezone")
        );
        assert!(matches!(
            one("SHOW TRANSACTION ISOLATION LEVEL"),
            Command::Show(ShowTarget::Name(n)) if n == "transaction_isolation"
        ));
        assert!(matches!(one("RESET ALL"), Command::Reset(None)));
        assert!(matches!(one("DISCARD ALL"), Command::DiscardAll));
        assert!(matches!(one("RESET search_path"), Command::Reset(Some(n)) if n == "search_path"));
        for (sql, expected) in [
            ("BEGIN", TransactionCommand::Begin(None)),
            (
                "START TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                TransactionCommand::Begin(Some("repeatable read")),
            ),
            ("COMMIT", TransactionCommand::Commit),
            ("END", TransactionCommand::Commit),
            ("ROLLBACK", TransactionCommand::Rollback),
            ("SAVEPOINT s1", TransactionCommand::Savepoint("s1".into())),
            (
                "RELEASE SAVEPOINT s1",
                TransactionCommand::Release("s1".into()),
            ),
            (
                "ROLLBACK TO SAVEPOINT s1",
                TransactionCommand::RollbackTo("s1".into()),
            ),
        ] {
            match one(sql) {
                Command::Transaction(t) => assert_eq!(t, expected, "{sql}"),
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn server_files_are_refused_even_under_explain() {
        for sql in [
            "EXPLAIN ANALYZE COPY (SELECT 1) TO '/tmp/x.csv' STORED AS CSV",
            "EXPLAIN COPY t TO '/tmp/x.parquet'",
            "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/etc/'",
            "EXPLAIN ANALYZE CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/etc/'",
        ] {
            assert_eq!(
                super::super::parse(sql).unwrap_err().sqlstate(),
                "0A000",
                "{sql}"
            );
        }
    }

    #[test]
    fn schema_names_fold_unless_quoted() {
        assert!(matches!(
            one("CREATE SCHEMA IF NOT EXISTS Sales"),
            Command::CreateSchema { name, if_not_exists: true } if name == "sales"
        ));
        assert!(matches!(
            one("DROP SCHEMA \"MixedCase\", b CASCADE"),
            Command::DropSchema { names, cascade: true, if_exists: false } if names == ["MixedCase", "b"]
        ));
    }
}
