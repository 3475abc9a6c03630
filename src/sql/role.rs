//! Role statements: `CREATE ROLE|USER`, `ALTER ROLE|USER`, `DROP ROLE|USER`, and the refusal
//! of `GRANT`/`REVOKE`.
//!
//! sqlparser 0.62 parses `CREATE ROLE` and `ALTER ROLE` with PostgreSQL's grammar but `CREATE
//! USER` / `ALTER USER` with Snowflake's, so the dialect hook ([`at_user_statement`]) reads
//! the USER forms with the ROLE grammar (PostgreSQL's `CREATE USER` is `CREATE ROLE ... LOGIN`;
//! psql's `\password` sends `ALTER USER name PASSWORD '<verifier>'`).

use datafusion::sql::sqlparser::ast::{
    AlterRoleOperation, CreateRole, Expr, Password, RoleOption, Statement, Value,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::SqlError;
use super::command::fold_ident;

/// A role statement, with names folded as PostgreSQL folds identifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleCommand {
    Create {
        name: String,
        if_not_exists: bool,
        options: RoleOptions,
    },
    Alter {
        name: String,
        options: RoleOptions,
    },
    Rename {
        name: String,
        to: String,
    },
    Drop {
        names: Vec<String>,
        if_exists: bool,
    },
}

/// The attributes a statement sets; `None` leaves one as it is (or at its default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleOptions {
    pub login: Option<bool>,
    pub superuser: Option<bool>,
    pub create_db: Option<bool>,
    pub create_role: Option<bool>,
    /// `PASSWORD 'x'` (`Some(Some)`), `PASSWORD NULL` (`Some(None)`).
    pub password: Option<Option<String>>,
}

/// Whether the parser is at `CREATE USER` or `ALTER USER`.
pub fn at_user_statement(parser: &Parser) -> bool {
    let is = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    let first = parser.peek_nth_token_ref(0);
    let second = parser.peek_nth_token_ref(1);
    (is(&first.token, Keyword::CREATE) || is(&first.token, Keyword::ALTER))
        && is(&second.token, Keyword::USER)
}

/// Parses `CREATE USER ...` / `ALTER USER ...` as the ROLE statements they are.
pub fn parse_user_statement(parser: &mut Parser) -> Result<Statement, ParserError> {
    if parser.parse_keywords(&[Keyword::CREATE, Keyword::USER]) {
        let mut create = parser.parse_create_role()?;
        // CREATE USER is CREATE ROLE with LOGIN unless NOLOGIN is said.
        create.login.get_or_insert(true);
        Ok(Statement::CreateRole(create))
    } else {
        parser.expect_keywords(&[Keyword::ALTER, Keyword::USER])?;
        parser.parse_alter_role()
    }
}

fn password(p: &Password) -> Result<Option<String>, SqlError> {
    match p {
        Password::NullPassword => Ok(None),
        Password::Password(Expr::Value(v)) => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Ok(Some(s.clone())),
            Value::Null => Ok(None),
            _ => Err(SqlError::Syntax(
                "PASSWORD takes a string constant: PASSWORD 'secret'".into(),
            )),
        },
        _ => Err(SqlError::Syntax(
            "PASSWORD takes a string constant: PASSWORD 'secret'".into(),
        )),
    }
}

fn unsupported(what: &str) -> SqlError {
    SqlError::Unsupported(format!(
        "{what} is not supported: tarn roles have LOGIN, SUPERUSER, CREATEDB, CREATEROLE and \
         PASSWORD"
    ))
}

fn apply(options: &mut RoleOptions, option: &RoleOption) -> Result<(), SqlError> {
    match option {
        RoleOption::Login(b) => options.login = Some(*b),
        RoleOption::SuperUser(b) => options.superuser = Some(*b),
        RoleOption::CreateDB(b) => options.create_db = Some(*b),
        RoleOption::CreateRole(b) => options.create_role = Some(*b),
        RoleOption::Password(p) => options.password = Some(password(p)?),
        // Accepted with PostgreSQL's defaults, which are what tarn does anyway.
        RoleOption::Inherit(true)
        | RoleOption::Replication(false)
        | RoleOption::BypassRLS(false) => {}
        RoleOption::Inherit(false) => return Err(unsupported("NOINHERIT")),
        RoleOption::Replication(true) => return Err(unsupported("REPLICATION")),
        RoleOption::BypassRLS(true) => return Err(unsupported("BYPASSRLS")),
        RoleOption::ConnectionLimit(_) => return Err(unsupported("CONNECTION LIMIT")),
        RoleOption::ValidUntil(_) => return Err(unsupported("VALID UNTIL")),
    }
    Ok(())
}

fn single(names: &[datafusion::sql::sqlparser::ast::ObjectName]) -> Result<String, SqlError> {
    match names {
        [name] if name.0.len() == 1 => name.0[0]
            .as_ident()
            .map(fold_ident)
            .ok_or_else(|| SqlError::Syntax("a role name is an identifier".into())),
        _ => Err(SqlError::Syntax(
            "syntax error at or near \",\": CREATE ROLE takes one role name".into(),
        )),
    }
}

/// `CREATE ROLE` (and `CREATE USER`, which the hook turned into it).
pub fn create_role(create: &CreateRole) -> Result<RoleCommand, SqlError> {
    if !create.in_role.is_empty()
        || !create.in_group.is_empty()
        || !create.role.is_empty()
        || !create.user.is_empty()
        || !create.admin.is_empty()
    {
        return Err(unsupported("role membership (IN ROLE, ROLE, ADMIN)"));
    }
    let mut options = RoleOptions::default();
    let flags = [
        create.login.map(RoleOption::Login),
        create.superuser.map(RoleOption::SuperUser),
        create.create_db.map(RoleOption::CreateDB),
        create.create_role.map(RoleOption::CreateRole),
        create.inherit.map(RoleOption::Inherit),
        create.replication.map(RoleOption::Replication),
        create.bypassrls.map(RoleOption::BypassRLS),
        create.password.clone().map(RoleOption::Password),
        create
            .connection_limit
            .clone()
            .map(RoleOption::ConnectionLimit),
        create.valid_until.clone().map(RoleOption::ValidUntil),
    ];
    for option in flags.iter().flatten() {
        apply(&mut options, option)?;
    }
    Ok(RoleCommand::Create {
        name: single(&create.names)?,
        if_not_exists: create.if_not_exists,
        options,
    })
}

/// `ALTER ROLE name [WITH] option ...` and `ALTER ROLE name RENAME TO other`.
pub fn alter_role(
    name: &datafusion::sql::sqlparser::ast::Ident,
    operation: &AlterRoleOperation,
) -> Result<RoleCommand, SqlError> {
    let name = fold_ident(name);
    match operation {
        AlterRoleOperation::WithOptions { options } => {
            let mut out = RoleOptions::default();
            for option in options {
                apply(&mut out, option)?;
            }
            Ok(RoleCommand::Alter { name, options: out })
        }
        AlterRoleOperation::RenameRole { role_name } => Ok(RoleCommand::Rename {
            name,
            to: fold_ident(role_name),
        }),
        _ => Err(unsupported("ALTER ROLE ... SET/RESET")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Command, parse};

    fn role(sql: &str) -> RoleCommand {
        match parse(sql).unwrap().pop().unwrap() {
            Command::Role(r) => r,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn parses_postgres_role_statements() {
        assert_eq!(
            role("CREATE ROLE Alice WITH LOGIN PASSWORD 'pw' CREATEDB"),
            RoleCommand::Create {
                name: "alice".into(),
                if_not_exists: false,
                options: RoleOptions {
                    login: Some(true),
                    create_db: Some(true),
                    password: Some(Some("pw".into())),
                    ..Default::default()
                }
            }
        );
        assert_eq!(
            role("CREATE USER bob"),
            RoleCommand::Create {
                name: "bob".into(),
                if_not_exists: false,
                options: RoleOptions {
                    login: Some(true),
                    ..Default::default()
                }
            }
        );
        assert_eq!(
            role("CREATE USER bob NOLOGIN"),
            RoleCommand::Create {
                name: "bob".into(),
                if_not_exists: false,
                options: RoleOptions {
                    login: Some(false),
                    ..Default::default()
                }
            }
        );
        // What psql's \password sends.
        assert_eq!(
            role("ALTER USER \"Bob\" PASSWORD 'SCRAM-SHA-256$4096:c2FsdA==$a:b'"),
            RoleCommand::Alter {
                name: "Bob".into(),
                options: RoleOptions {
                    password: Some(Some("SCRAM-SHA-256$4096:c2FsdA==$a:b".into())),
                    ..Default::default()
                }
            }
        );
        assert_eq!(
            role("ALTER ROLE bob WITH PASSWORD NULL NOSUPERUSER"),
            RoleCommand::Alter {
                name: "bob".into(),
                options: RoleOptions {
                    password: Some(None),
                    superuser: Some(false),
                    ..Default::default()
                }
            }
        );
        assert_eq!(
            role("ALTER ROLE bob RENAME TO carol"),
            RoleCommand::Rename {
                name: "bob".into(),
                to: "carol".into()
            }
        );
        assert_eq!(
            role("DROP ROLE IF EXISTS a, b"),
            RoleCommand::Drop {
                names: vec!["a".into(), "b".into()],
                if_exists: true
            }
        );
        assert_eq!(
            role("DROP USER a"),
            RoleCommand::Drop {
                names: vec!["a".into()],
                if_exists: false
            }
        );
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        for sql in [
            "GRANT SELECT ON t TO bob",
            "REVOKE SELECT ON t FROM bob",
            "CREATE ROLE a CONNECTION LIMIT 3",
            "CREATE ROLE a REPLICATION",
        ] {
            let err = parse(sql).unwrap_err();
            assert_eq!(err.sqlstate(), "0A000", "{sql}: {err}");
        }
        assert_eq!(parse("CREATE ROLE a, b").unwrap_err().sqlstate(), "42601");
    }
}
