//! `ALTER TABLE` and `COMMENT ON` as Paimon schema changes.
//!
//! A Paimon table evolves by writing its next `schema-N` (field ids kept, `highestFieldId`
//! advanced); old data files are read by field id, so no change rewrites data. This module
//! turns sqlparser's `AlterTable` and `Comment` statements into the storage layer's
//! [`SchemaChange`]s (what Paimon can record), plus the actions that are not a schema field
//! change: `RENAME TO` (the table's folder) and `SET NOT NULL` (which PostgreSQL checks against
//! existing rows, and Paimon never does, so the session checks first). What PostgreSQL allows
//! and Paimon cannot do (changing a key column, narrowing a type, `USING`) is refused here or
//! by the storage layer's rules, with a message that says what to do instead.

use datafusion::sql::sqlparser::ast::{
    AlterColumnOperation, AlterTable, AlterTableOperation, ColumnOption, CommentObject,
    DropBehavior, Expr, ObjectName, RenameTableNameKind,
};

use super::SqlError;
use super::command::fold_ident;
use super::create_table::{option_key, option_list, paimon_type, parse_option_key, table_name};
use super::defaults::{column_default, default_changes};
use crate::storage::spec::options::PG_TYPE_PREFIX;
use crate::storage::spec::schema_change::SchemaChange;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// Whether the parser is at `ALTER TABLE [IF EXISTS] [ONLY] name RESET (`, PostgreSQL's
/// removal of table options, which sqlparser does not read.
pub fn at_alter_table_reset(parser: &Parser) -> bool {
    let tokens: [Token; 12] = parser.peek_tokens();
    let keyword = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    if !(keyword(&tokens[0], Keyword::ALTER) && keyword(&tokens[1], Keyword::TABLE)) {
        return false;
    }
    // Past IF EXISTS, ONLY and the (dotted) name: RESET, then a parenthesis.
    let rest = &tokens[2..];
    let Some(at) = rest.iter().position(|t| keyword(t, Keyword::RESET)) else {
        return false;
    };
    rest[..at]
        .iter()
        .all(|t| matches!(t, Token::Word(_) | Token::Period))
        && rest.get(at + 1) == Some(&Token::LParen)
}

/// `ALTER TABLE [IF EXISTS] [ONLY] name RESET (option [, …])`: each option removed from the
/// table's schema (its Paimon default applies again).
pub fn parse_alter_table_reset(parser: &mut Parser) -> Result<AlterTableSpec, ParserError> {
    parser.expect_keywords(&[Keyword::ALTER, Keyword::TABLE])?;
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let _ = parser.parse_keyword(Keyword::ONLY);
    let name = parser.parse_object_name(false)?;
    parser.expect_keyword(Keyword::RESET)?;
    parser.expect_token(&Token::LParen)?;
    let mut changes = Vec::new();
    loop {
        let key = option_key(&parse_option_key(parser)?);
        changes.push(SchemaChange::RemoveOption { key });
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    let (schema, name) = table_name(&name).map_err(|e| ParserError::ParserError(e.to_string()))?;
    Ok(AlterTableSpec {
        schema,
        name,
        if_exists,
        action: AlterAction::Schema {
            changes,
            not_null: Vec::new(),
            empty_for: Vec::new(),
            set_defaults: Vec::new(),
        },
        tag: "ALTER TABLE",
        cascade: false,
    })
}

/// One `ALTER TABLE` (or `COMMENT ON`) statement, resolved to what tarn does.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterTableSpec {
    pub schema: Option<String>,
    pub name: String,
    pub if_exists: bool,
    pub action: AlterAction,
    /// The command tag (`ALTER TABLE` or `COMMENT`).
    pub tag: &'static str,
    /// `DROP COLUMN … CASCADE`: the views using the column are dropped with it.
    pub cascade: bool,
}

/// What an `ALTER TABLE` does.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterAction {
    /// The table's next schema: these changes, in order, in one `schema-N`. `not_null`: the
    /// columns the changes make NOT NULL, whose rows are checked first.
    Schema {
        changes: Vec<SchemaChange>,
        not_null: Vec<String>,
        /// `ADD COLUMN … DEFAULT`: columns whose default PostgreSQL gives the rows already
        /// there, which Paimon's readers cannot; the table must have none.
        empty_for: Vec<String>,
        /// `ALTER COLUMN c SET DEFAULT e` (`None`: DROP DEFAULT): where the default goes
        /// (`sql::defaults`) depends on the column's type, which the session knows.
        set_defaults: Vec<(String, Option<Expr>)>,
    },
    /// `RENAME TO`.
    RenameTo(String),
    /// `DROP [IF EXISTS] PARTITION (k = v, …)[, DROP PARTITION (…)]`: the partitions' files
    /// deleted in one OVERWRITE snapshot (`server/session/partitions.rs`).
    DropPartitions {
        specs: Vec<super::partitions::PartitionSpec>,
        if_exists: bool,
    },
}

fn unsupported(message: impl Into<String>) -> SqlError {
    SqlError::Unsupported(message.into())
}

/// `ALTER TABLE name op, ...`.
pub fn alter_table_spec(alter: AlterTable) -> Result<AlterTableSpec, SqlError> {
    let (schema, name) = table_name(&alter.name)?;
    let cascade = alter.operations.iter().any(|op| {
        matches!(
            op,
            AlterTableOperation::DropColumn {
                drop_behavior: Some(DropBehavior::Cascade),
                ..
            }
        )
    });
    let spec = |action| AlterTableSpec {
        schema: schema.clone(),
        name: name.clone(),
        if_exists: alter.if_exists,
        action,
        tag: "ALTER TABLE",
        cascade,
    };
    if alter.table_type.is_some() || alter.location.is_some() || alter.on_cluster.is_some() {
        return Err(unsupported(
            "this form of ALTER TABLE is not supported: tarn alters Paimon tables",
        ));
    }
    // RENAME TO stands alone (as in PostgreSQL, which refuses it among other actions).
    if let [AlterTableOperation::RenameTable { table_name: to }] = alter.operations.as_slice() {
        let to = match to {
            RenameTableNameKind::To(n) | RenameTableNameKind::As(n) => n,
        };
        let (to_schema, to_name) = table_name(to)?;
        if to_schema.is_some() {
            return Err(SqlError::Syntax(
                "syntax error: RENAME TO takes an unqualified name (the table stays in its \
                 schema)"
                    .into(),
            ));
        }
        return Ok(spec(AlterAction::RenameTo(to_name)));
    }
    // DROP PARTITION actions stand alone (they are a commit, not a schema change).
    if let Some(AlterTableOperation::DropPartitions { .. }) = alter.operations.first() {
        let mut specs = Vec::new();
        let mut if_exists = false;
        for op in &alter.operations {
            let AlterTableOperation::DropPartitions {
                partitions,
                if_exists: e,
            } = op
            else {
                return Err(unsupported(
                    "DROP PARTITION cannot be combined with other ALTER TABLE actions",
                ));
            };
            if_exists |= e;
            specs.push(super::partitions::drop_partition_spec(partitions)?);
        }
        return Ok(spec(AlterAction::DropPartitions { specs, if_exists }));
    }
    let mut schema_alter = SchemaAlter::default();
    for op in alter.operations {
        operation(op, &mut schema_alter)?;
    }
    let SchemaAlter {
        changes,
        not_null,
        empty_for,
        set_defaults,
    } = schema_alter;
    Ok(spec(AlterAction::Schema {
        changes,
        not_null,
        empty_for,
        set_defaults,
    }))
}

/// What the actions of one `ALTER TABLE` add up to (see [`AlterAction::Schema`]).
#[derive(Default)]
struct SchemaAlter {
    changes: Vec<SchemaChange>,
    not_null: Vec<String>,
    empty_for: Vec<String>,
    set_defaults: Vec<(String, Option<Expr>)>,
}

fn operation(op: AlterTableOperation, alter: &mut SchemaAlter) -> Result<(), SqlError> {
    let SchemaAlter {
        changes,
        not_null,
        empty_for,
        set_defaults,
    } = alter;
    match op {
        AlterTableOperation::AddColumn {
            if_not_exists,
            column_def,
            column_position,
            ..
        } => {
            if if_not_exists {
                return Err(unsupported("ADD COLUMN IF NOT EXISTS is not supported yet"));
            }
            if column_position.is_some() {
                return Err(unsupported(
                    "FIRST / AFTER are not supported: new columns go last",
                ));
            }
            let name = fold_ident(&column_def.name);
            let (data_type, pg_type) = paimon_type(&column_def.data_type, &name)?;
            let mut default = None;
            for opt in &column_def.options {
                match &opt.option {
                    ColumnOption::Null => {}
                    ColumnOption::NotNull => {
                        return Err(unsupported(format!(
                            "ADD COLUMN \"{name}\" ... NOT NULL is not supported: Paimon adds \
                             columns as nullable (rows written before read NULL); add the \
                             column, fill it with UPDATE, then ALTER COLUMN \"{name}\" SET NOT \
                             NULL"
                        )));
                    }
                    ColumnOption::Default(expr) => {
                        default = column_default(expr, &data_type, &name)?;
                    }
                    ColumnOption::PrimaryKey(_) | ColumnOption::Unique(_) => {
                        return Err(unsupported(format!(
                            "ADD COLUMN \"{name}\" cannot be a key: a Paimon table's primary \
                             key is fixed when it is created"
                        )));
                    }
                    other => {
                        return Err(unsupported(format!(
                            "column option {other} on a new column is not supported"
                        )));
                    }
                }
            }
            changes.push(SchemaChange::AddColumn {
                name: name.clone(),
                data_type,
                comment: None,
            });
            if default.is_some() {
                empty_for.push(name.clone());
                changes.extend(default_changes(&name, default));
            }
            if let Some(hint) = pg_type {
                changes.push(SchemaChange::SetOption {
                    key: format!("{PG_TYPE_PREFIX}{name}"),
                    value: hint.to_owned(),
                });
            }
        }
        AlterTableOperation::DropColumn {
            column_names,
            if_exists,
            ..
        } => {
            if if_exists {
                return Err(unsupported("DROP COLUMN IF EXISTS is not supported yet"));
            }
            // Views using the column refuse the drop, or go with it under CASCADE
            // (`AlterTableSpec::cascade`, checked by the session).
            for c in &column_names {
                changes.push(SchemaChange::DropColumn {
                    name: fold_ident(c),
                });
            }
        }
        AlterTableOperation::RenameColumn {
            old_column_name,
            new_column_name,
        } => changes.push(SchemaChange::RenameColumn {
            name: fold_ident(&old_column_name),
            new_name: fold_ident(&new_column_name),
        }),
        AlterTableOperation::AlterColumn { column_name, op } => {
            let name = fold_ident(&column_name);
            match op {
                AlterColumnOperation::SetNotNull => {
                    changes.push(SchemaChange::UpdateColumnNullability {
                        name: name.clone(),
                        nullable: false,
                    });
                    not_null.push(name);
                }
                AlterColumnOperation::DropNotNull => {
                    changes.push(SchemaChange::UpdateColumnNullability {
                        name,
                        nullable: true,
                    });
                }
                AlterColumnOperation::SetDataType {
                    data_type, using, ..
                } => {
                    if using.is_some() {
                        return Err(unsupported(format!(
                            "ALTER COLUMN \"{name}\" TYPE ... USING is not supported: Paimon \
                             converts old rows itself, so only widenings are possible (e.g. \
                             INTEGER to BIGINT, VARCHAR(n) to a longer VARCHAR or TEXT)"
                        )));
                    }
                    let (data_type, hint) = paimon_type(&data_type, &name)?;
                    if hint.is_some() {
                        return Err(unsupported(format!(
                            "ALTER COLUMN \"{name}\" TYPE to a type Paimon stores as text with \
                             a tarn hint (UUID, JSON) is not supported"
                        )));
                    }
                    changes.push(SchemaChange::UpdateColumnType { name, data_type });
                }
                AlterColumnOperation::SetDefault { value } => {
                    set_defaults.push((name, Some(value)));
                }
                AlterColumnOperation::DropDefault => set_defaults.push((name, None)),
                AlterColumnOperation::AddGenerated { .. } => {
                    return Err(unsupported(format!(
                        "ALTER COLUMN \"{name}\" ADD GENERATED is not supported yet: tarn has \
                         no identity columns"
                    )));
                }
            }
        }
        AlterTableOperation::SetOptionsParens { options } => {
            for (key, value) in option_list(&options)? {
                changes.push(SchemaChange::SetOption { key, value });
            }
        }
        AlterTableOperation::RenameTable { .. } => {
            return Err(SqlError::Syntax(
                "syntax error: RENAME TO cannot be combined with other ALTER TABLE actions".into(),
            ));
        }
        AlterTableOperation::DropPartitions { .. } => {
            return Err(unsupported(
                "DROP PARTITION cannot be combined with other ALTER TABLE actions",
            ));
        }
        AlterTableOperation::AddConstraint { .. } | AlterTableOperation::DropConstraint { .. } => {
            return Err(unsupported(
                "ALTER TABLE ADD/DROP CONSTRAINT is not supported: a Paimon table's primary key \
                 is fixed when it is created, and tarn enforces no other constraints",
            ));
        }
        other => {
            return Err(unsupported(format!("ALTER TABLE {other} is not supported")));
        }
    }
    Ok(())
}

/// `COMMENT ON TABLE t IS '…'` / `COMMENT ON COLUMN t.c IS '…'` (NULL removes it).
pub fn comment_spec(
    object_type: CommentObject,
    object_name: &ObjectName,
    comment: Option<String>,
    if_exists: bool,
) -> Result<AlterTableSpec, SqlError> {
    let (schema, name, change) = match object_type {
        CommentObject::Table => {
            let (schema, name) = table_name(object_name)?;
            (schema, name, SchemaChange::UpdateComment { comment })
        }
        CommentObject::Column => {
            let parts: Vec<_> = object_name
                .0
                .iter()
                .map(|p| p.as_ident().cloned())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| SqlError::Syntax("syntax error: improper column name".into()))?;
            let (column, table) = match parts.split_last() {
                Some((column, table)) if !table.is_empty() && table.len() <= 3 => {
                    (column, table.to_vec())
                }
                _ => {
                    return Err(SqlError::Syntax(
                        "syntax error: COMMENT ON COLUMN needs table.column".into(),
                    ));
                }
            };
            let (schema, name) = table_name(&ObjectName::from(table))?;
            (
                schema,
                name,
                SchemaChange::UpdateColumnComment {
                    name: fold_ident(column),
                    comment,
                },
            )
        }
        other => {
            return Err(unsupported(format!(
                "COMMENT ON {other} is not supported: tarn keeps comments of tables and columns"
            )));
        }
    };
    Ok(AlterTableSpec {
        schema,
        name,
        if_exists,
        action: AlterAction::Schema {
            changes: vec![change],
            not_null: Vec::new(),
            empty_for: Vec::new(),
            set_defaults: Vec::new(),
        },
        tag: "COMMENT",
        cascade: false,
    })
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::ast::Statement;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;
    use crate::sql::dialect::TarnDialect;
    use crate::storage::spec::types::{PaimonType, TypeKind};

    fn spec(sql: &str) -> Result<AlterTableSpec, SqlError> {
        let dialect = TarnDialect::default();
        let mut stmts = Parser::parse_sql(&dialect, sql).map_err(SqlError::from_sqlparser)?;
        match stmts.remove(0) {
            Statement::AlterTable(a) => alter_table_spec(a),
            Statement::Comment {
                object_type,
                object_name,
                comment,
                if_exists,
            } => comment_spec(object_type, &object_name, comment, if_exists),
            other => panic!("{other:?}"),
        }
    }

    fn changes(sql: &str) -> Vec<SchemaChange> {
        match spec(sql).unwrap().action {
            AlterAction::Schema { changes, .. } => changes,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reset_removes_options_through_the_parser_hook() {
        let parsed = crate::sql::parse(
            "ALTER TABLE IF EXISTS s.orders RESET (\"snapshot.num-retained.max\", 'Write-Buffer-Size')",
        )
        .unwrap();
        let crate::sql::Command::AlterTable(spec) = &parsed[0] else {
            panic!("{parsed:?}");
        };
        assert_eq!(
            (spec.schema.as_deref(), spec.name.as_str(), spec.if_exists),
            (Some("s"), "orders", true)
        );
        let AlterAction::Schema { changes, .. } = &spec.action else {
            panic!("{spec:?}");
        };
        assert_eq!(
            changes,
            &[
                SchemaChange::RemoveOption {
                    key: "snapshot.num-retained.max".into()
                },
                SchemaChange::RemoveOption {
                    key: "write-buffer-size".into()
                }
            ]
        );
        // Other ALTER TABLEs are sqlparser's, and a name RESET is still a name.
        assert!(matches!(
            crate::sql::parse("ALTER TABLE reset ADD COLUMN c INT").unwrap()[0],
            crate::sql::Command::AlterTable(_)
        ));
        assert!(crate::sql::parse("ALTER TABLE t RESET").is_err());
    }

    #[test]
    fn the_issue_s_statements() {
        assert_eq!(
            changes("ALTER TABLE orders ADD COLUMN channel TEXT"),
            [SchemaChange::AddColumn {
                name: "channel".into(),
                data_type: PaimonType::nullable(TypeKind::VarChar(
                    crate::storage::spec::types::MAX_LENGTH
                )),
                comment: None
            }]
        );
        assert_eq!(
            changes("ALTER TABLE orders RENAME COLUMN Status TO state"),
            [SchemaChange::RenameColumn {
                name: "status".into(),
                new_name: "state".into()
            }]
        );
        assert_eq!(
            changes("ALTER TABLE orders ALTER COLUMN qty TYPE BIGINT"),
            [SchemaChange::UpdateColumnType {
                name: "qty".into(),
                data_type: PaimonType::nullable(TypeKind::BigInt)
            }]
        );
        assert_eq!(
            changes("ALTER TABLE orders DROP COLUMN score"),
            [SchemaChange::DropColumn {
                name: "score".into()
            }]
        );
        assert_eq!(
            changes(r#"ALTER TABLE orders SET ("snapshot.num-retained.max" = '500')"#),
            [SchemaChange::SetOption {
                key: "snapshot.num-retained.max".into(),
                value: "500".into()
            }]
        );
        let s = spec("ALTER TABLE s.orders RENAME TO orders_v2").unwrap();
        assert_eq!(s.schema.as_deref(), Some("s"));
        assert_eq!(s.action, AlterAction::RenameTo("orders_v2".into()));
        assert_eq!(
            changes("COMMENT ON COLUMN orders.amount IS 'gross, EUR'"),
            [SchemaChange::UpdateColumnComment {
                name: "amount".into(),
                comment: Some("gross, EUR".into())
            }]
        );
        let s = spec("COMMENT ON TABLE public.orders IS NULL").unwrap();
        assert_eq!((s.schema.as_deref(), s.tag), (Some("public"), "COMMENT"));
        assert_eq!(
            s.action,
            AlterAction::Schema {
                changes: vec![SchemaChange::UpdateComment { comment: None }],
                not_null: vec![],
                empty_for: vec![],
                set_defaults: vec![],
            }
        );
    }

    #[test]
    fn several_actions_make_one_schema() {
        let s = spec(
            "ALTER TABLE t ADD COLUMN u uuid, ALTER COLUMN a SET NOT NULL, ALTER b DROP NOT NULL",
        )
        .unwrap();
        let AlterAction::Schema {
            changes, not_null, ..
        } = s.action
        else {
            panic!()
        };
        assert_eq!(not_null, ["a"]);
        assert_eq!(changes.len(), 4, "{changes:?}");
        assert_eq!(
            changes[1],
            SchemaChange::SetOption {
                key: "tarn.pg-type.u".into(),
                value: "uuid".into()
            }
        );
    }

    #[test]
    fn what_paimon_cannot_do_is_refused_with_a_way_forward() {
        for (sql, says) in [
            (
                "ALTER TABLE t ADD COLUMN c INT NOT NULL",
                "fill it with UPDATE",
            ),
            (
                "ALTER TABLE t ADD COLUMN c INT PRIMARY KEY",
                "fixed when it is created",
            ),
            (
                "ALTER TABLE t ALTER COLUMN c TYPE BIGINT USING c::bigint",
                "widenings",
            ),
            (
                "ALTER TABLE t ADD PRIMARY KEY (c)",
                "fixed when it is created",
            ),
            ("ALTER TABLE t RENAME TO s.u", "unqualified"),
        ] {
            let e = spec(sql).unwrap_err().to_string();
            assert!(e.contains(says), "{sql}: {e}");
        }
    }
}
