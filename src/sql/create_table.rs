//! `CREATE TABLE` for Paimon tables: the parser hook for tarn's clauses and the translation of
//! PostgreSQL column types and constraints into a Paimon schema.
//!
//! PostgreSQL's dialect in sqlparser 0.62 takes neither `PARTITIONED BY (dt)` nor
//! `PARTITION BY LIST (dt) WITH (...)` in PostgreSQL's order, nor quoted option keys such as
//! `'file.format' = 'parquet'`. The hook parses the column list with sqlparser's own
//! `parse_columns` and tarn's trailing clauses (in any order) itself, and returns a normal
//! `Statement::CreateTable` (partition columns as Hive-style `PARTITIONED` columns, options as
//! `WITH`), so everything downstream works on sqlparser's AST.
//!
//! The type mapping (PostgreSQL → Paimon; every choice here is documented in docs/TYPES.md):
//! NUMERIC without precision is DECIMAL(38, 10); TIME keeps milliseconds (Paimon stores TIME as
//! milliseconds of the day); UUID, JSON and JSONB are Paimon STRINGs with a per-column hint
//! (`tarn.pg-type.<column>`) so tarn shows them with their PostgreSQL type; INTERVAL, TIMETZ,
//! SERIAL and multi-dimensional arrays are refused because Paimon cannot hold them faithfully.

use std::collections::BTreeMap;

use datafusion::sql::sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, CharacterLength, ColumnDef, ColumnOption, CreateTable, CreateTableLike,
    CreateTableLikeDefaults, CreateTableLikeKind, CreateTableOptions, DataType, ExactNumberInfo,
    Expr, GeneratedAs, HiveDistributionStyle, Ident, ObjectName, OnCommit, PrimaryKeyConstraint,
    SequenceOptions, SqlOption, Statement, TableConstraint, TimezoneInfo, Value,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::SqlError;
use super::command::fold_ident;
use super::defaults::{ColumnDefault, column_default};
use super::sequence::SequenceSpec;
use crate::storage::sequences::{SequenceParams, SequenceType};
use crate::storage::spec::options::expire::TARN_DEFAULT_OPTIONS;
use crate::storage::spec::options::{self, DEFAULT_PK_BUCKETS, OptionError};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{
    DataField, MAX_DECIMAL_PRECISION, MAX_LENGTH, PaimonType, TypeKind,
};

/// Whether the parser is at `CREATE [TEMP|TEMPORARY|UNLOGGED] TABLE`.
pub fn at_create_table(parser: &Parser) -> bool {
    let [a, b, c] = parser.peek_tokens();
    let is = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k);
    is(&a, Keyword::CREATE)
        && (is(&b, Keyword::TABLE)
            || ((is(&b, Keyword::TEMP) || is(&b, Keyword::TEMPORARY) || is(&b, Keyword::UNLOGGED))
                && is(&c, Keyword::TABLE)))
}

/// Parses `CREATE TABLE` with tarn's clauses (the parser is at `CREATE`).
pub fn parse_create_table(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword(Keyword::CREATE)?;
    let temporary = parser
        .parse_one_of_keywords(&[Keyword::TEMP, Keyword::TEMPORARY])
        .is_some();
    // UNLOGGED: PostgreSQL's table without WAL, emptied after a crash. Every tarn table is a
    // durable Paimon table, which keeps more than UNLOGGED promises: read as a plain table.
    let _unlogged = !temporary && parser.parse_keyword(Keyword::UNLOGGED);
    parser.expect_keyword(Keyword::TABLE)?;
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let (columns, constraints, like) = if parser.peek_token_ref().token == Token::LParen {
        parse_elements(parser)?
    } else {
        (Vec::new(), Vec::new(), None)
    };
    let mut partition: Option<Vec<Ident>> = None;
    let mut with: Vec<SqlOption> = Vec::new();
    let mut on_commit = None;
    loop {
        if parser.parse_keywords(&[Keyword::ON, Keyword::COMMIT]) {
            on_commit = Some(
                if parser.parse_keywords(&[Keyword::PRESERVE, Keyword::ROWS]) {
                    OnCommit::PreserveRows
                } else if parser.parse_keywords(&[Keyword::DELETE, Keyword::ROWS]) {
                    OnCommit::DeleteRows
                } else if parser.parse_keyword(Keyword::DROP) {
                    OnCommit::Drop
                } else {
                    return parser
                        .expected("PRESERVE ROWS, DELETE ROWS or DROP", parser.peek_token());
                },
            );
        } else if parser.parse_keywords(&[Keyword::PARTITIONED, Keyword::BY]) {
            partition = Some(parser.parse_parenthesized_column_list_as_idents()?);
        } else if parser.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) {
            // PostgreSQL: PARTITION BY { LIST | RANGE | HASH } (cols). Paimon partitions are
            // one folder per value: LIST.
            let strategy = parser.parse_identifier()?;
            if !strategy.value.eq_ignore_ascii_case("list") {
                return Err(ParserError::ParserError(format!(
                    "PARTITION BY {} is not supported: Paimon partitions by value, use \
                     PARTITION BY LIST (columns) or PARTITIONED BY (columns)",
                    strategy.value.to_uppercase()
                )));
            }
            partition = Some(parser.parse_parenthesized_column_list_as_idents()?);
        } else if parser.parse_keyword(Keyword::WITH) {
            parser.expect_token(&Token::LParen)?;
            loop {
                with.push(parse_option(parser)?);
                if !parser.consume_token(&Token::Comma) {
                    break;
                }
            }
            parser.expect_token(&Token::RParen)?;
        } else {
            break;
        }
    }
    let query = if parser.parse_keyword(Keyword::AS) {
        Some(parser.parse_query()?)
    } else {
        None
    };
    let hive = match partition {
        Some(cols) => HiveDistributionStyle::PARTITIONED {
            columns: cols
                .into_iter()
                .map(|name| ColumnDef {
                    name,
                    data_type: DataType::Unspecified,
                    options: Vec::new(),
                })
                .collect(),
        },
        None => HiveDistributionStyle::NONE,
    };
    let mut builder = CreateTableBuilder::new(name)
        .temporary(temporary)
        .on_commit(on_commit)
        .if_not_exists(if_not_exists)
        .columns(columns)
        .constraints(constraints)
        .hive_distribution(hive)
        .like(like)
        .query(query);
    if !with.is_empty() {
        builder = builder.table_options(CreateTableOptions::With(with));
    }
    Ok(Statement::CreateTable(builder.build()))
}

/// The parenthesized list of a CREATE TABLE: columns, table constraints, and PostgreSQL's
/// `LIKE source [{INCLUDING | EXCLUDING} {DEFAULTS | INDEXES | ALL | …}]…` (sqlparser's own
/// reads only INCLUDING DEFAULTS). `INCLUDING INDEXES` or `ALL` — copy the source's primary
/// key — is carried as a primary-key constraint without columns, which no SQL can write.
#[allow(clippy::type_complexity)]
fn parse_elements(
    parser: &mut Parser,
) -> Result<
    (
        Vec<ColumnDef>,
        Vec<TableConstraint>,
        Option<CreateTableLikeKind>,
    ),
    ParserError,
> {
    let (mut columns, mut constraints, mut like) = (Vec::new(), Vec::new(), None);
    parser.expect_token(&Token::LParen)?;
    if parser.consume_token(&Token::RParen) {
        return Ok((columns, constraints, like));
    }
    loop {
        if parser.parse_keyword(Keyword::LIKE) {
            if like.is_some() {
                return Err(ParserError::ParserError(
                    "only one LIKE clause is supported".into(),
                ));
            }
            let name = parser.parse_object_name(false)?;
            let (mut defaults, mut keys) = (None, false);
            while let Some(k) =
                parser.parse_one_of_keywords(&[Keyword::INCLUDING, Keyword::EXCLUDING])
            {
                let including = k == Keyword::INCLUDING;
                let what = parser.parse_identifier()?.value.to_lowercase();
                match what.as_str() {
                    "defaults" => defaults = Some(including),
                    "indexes" => keys = including,
                    "all" => (defaults, keys) = (Some(including), including),
                    "comments" | "compression" | "constraints" | "generated" | "identity"
                    | "statistics" | "storage" => {}
                    other => {
                        return Err(ParserError::ParserError(format!(
                            "syntax error at or near \"{other}\""
                        )));
                    }
                }
            }
            like = Some(CreateTableLikeKind::Parenthesized(CreateTableLike {
                name,
                defaults: defaults.map(|d| {
                    if d {
                        CreateTableLikeDefaults::Including
                    } else {
                        CreateTableLikeDefaults::Excluding
                    }
                }),
            }));
            if keys {
                constraints.push(TableConstraint::PrimaryKey(PrimaryKeyConstraint {
                    name: None,
                    index_name: None,
                    index_type: None,
                    columns: Vec::new(),
                    index_options: Vec::new(),
                    characteristics: None,
                }));
            }
        } else if let Some(constraint) = parser.parse_optional_table_constraint()? {
            constraints.push(constraint);
        } else {
            columns.push(parser.parse_column_def()?);
        }
        if parser.consume_token(&Token::Comma) {
            continue;
        }
        parser.expect_token(&Token::RParen)?;
        return Ok((columns, constraints, like));
    }
}

/// `key = value` where the key is a (dotted) name or a quoted string.
fn parse_option(parser: &mut Parser) -> Result<SqlOption, ParserError> {
    let key = parse_option_key(parser)?;
    parser.expect_token(&Token::Eq)?;
    let value = parser.parse_expr()?;
    Ok(SqlOption::KeyValue { key, value })
}

/// A table option's name: a quoted string, or a (dotted, dashed) name.
pub(crate) fn parse_option_key(parser: &mut Parser) -> Result<Ident, ParserError> {
    let token = parser.next_token();
    let key = match token.token {
        Token::SingleQuotedString(s) => Ident::with_quote('\'', s),
        Token::Word(w) => {
            let mut text = w.value;
            while parser.consume_token(&Token::Period) {
                text.push('.');
                text.push_str(&parser.parse_identifier()?.value);
            }
            // Dashes appear in Paimon option names (`write-buffer-size`).
            while parser.consume_token(&Token::Minus) {
                text.push('-');
                text.push_str(&parser.parse_identifier()?.value);
                while parser.consume_token(&Token::Period) {
                    text.push('.');
                    text.push_str(&parser.parse_identifier()?.value);
                }
            }
            Ident::new(text)
        }
        other => {
            return Err(ParserError::ParserError(format!(
                "expected a table option name, found {other}"
            )));
        }
    };
    Ok(key)
}

trait ParseIdents {
    fn parse_parenthesized_column_list_as_idents(&mut self) -> Result<Vec<Ident>, ParserError>;
}

impl ParseIdents for Parser<'_> {
    fn parse_parenthesized_column_list_as_idents(&mut self) -> Result<Vec<Ident>, ParserError> {
        self.expect_token(&Token::LParen)?;
        let cols = self.parse_comma_separated(|p| p.parse_identifier())?;
        self.expect_token(&Token::RParen)?;
        Ok(cols)
    }
}

/// A column of a table to create.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    pub name: String,
    pub data_type: PaimonType,
    /// tarn's PostgreSQL type hint for STRING columns (`uuid`, `json`, `jsonb`).
    pub pg_type: Option<&'static str>,
    /// `DEFAULT …` (see `sql::defaults`).
    pub default: Option<ColumnDefault>,
    /// `GENERATED ALWAYS|BY DEFAULT AS IDENTITY` and SERIAL: the column's values come from a
    /// sequence the session creates with the table.
    pub identity: Option<IdentitySpec>,
}

/// An identity column (or SERIAL): its sequence's options and whether it is `ALWAYS`.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentitySpec {
    /// `GENERATED ALWAYS` (a value in INSERT is refused); SERIAL and `BY DEFAULT` are not.
    pub always: bool,
    /// SERIAL (PostgreSQL shows it as a plain default `nextval(…)`, not an identity).
    pub serial: bool,
    /// The sequence options written in parentheses (`START WITH 10`, ...).
    pub options: Vec<SequenceOptions>,
}

/// A `CREATE TABLE` translated into Paimon terms.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTableSpec {
    /// `(schema, table)`; no schema means the first of `search_path`.
    pub schema: Option<String>,
    pub name: String,
    pub if_not_exists: bool,
    pub columns: Vec<ColumnSpec>,
    pub primary_key: Vec<String>,
    pub partition_keys: Vec<String>,
    pub options: BTreeMap<String, String>,
    /// `CREATE TABLE ... AS query`.
    pub query: Option<Box<datafusion::sql::sqlparser::ast::Query>>,
    /// `(LIKE source …)`: the source's columns come first ([`CreateTableSpec::with_like`]).
    pub like: Option<LikeSpec>,
    /// `CREATE TEMP TABLE`: the session's own table, and what each commit does to it.
    pub temporary: Option<OnCommitAction>,
}

/// `ON COMMIT …` of a temporary table: what the end of each transaction does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnCommitAction {
    /// The default: rows stay until the session ends.
    PreserveRows,
    /// Every commit empties the table.
    DeleteRows,
    /// The commit of the transaction that created it drops the table.
    Drop,
}

/// `LIKE source [INCLUDING DEFAULTS | INDEXES | ALL]` in a CREATE TABLE's list.
#[derive(Debug, Clone, PartialEq)]
pub struct LikeSpec {
    pub schema: Option<String>,
    pub name: String,
    /// INCLUDING DEFAULTS (or ALL): the columns' defaults too.
    pub defaults: bool,
    /// INCLUDING INDEXES (or ALL): the source's primary key.
    pub primary_key: bool,
}

impl CreateTableSpec {
    /// Puts the columns of the LIKE source (`source`, its current schema) before the table's
    /// own, as PostgreSQL does: names, types and NOT NULL always; defaults with INCLUDING
    /// DEFAULTS (an identity's `nextval` of the source's sequence too, as PostgreSQL copies
    /// it); the primary key with INCLUDING INDEXES. Partitions and table options are not
    /// copied (PostgreSQL's LIKE copies neither).
    pub fn with_like(&mut self, source: &TableSchema) -> Result<(), SqlError> {
        let Some(like) = self.like.take() else {
            return Ok(());
        };
        let mut columns = Vec::new();
        for field in &source.fields {
            let hint = source
                .options
                .get(&format!("{}{}", options::PG_TYPE_PREFIX, field.name))
                .and_then(|h| match h.as_str() {
                    "uuid" => Some("uuid"),
                    "json" => Some("json"),
                    "jsonb" => Some("jsonb"),
                    _ => None,
                });
            let default = if like.defaults {
                match (
                    &field.default_value,
                    source
                        .options
                        .get(&format!("{}{}", options::DEFAULT_PREFIX, field.name)),
                ) {
                    (_, Some(e)) => Some(ColumnDefault::Expression(e.clone())),
                    (Some(l), None) => Some(ColumnDefault::Literal(l.clone())),
                    (None, None) => None,
                }
            } else {
                None
            };
            columns.push(ColumnSpec {
                name: field.name.clone(),
                data_type: field.data_type.clone(),
                pg_type: hint,
                default,
                identity: None,
            });
        }
        if like.primary_key && !source.primary_keys.is_empty() {
            if !self.primary_key.is_empty() {
                return Err(multiple_primary_keys(&self.name));
            }
            self.primary_key = source.primary_keys.clone();
        }
        columns.append(&mut self.columns);
        let mut seen = std::collections::BTreeSet::new();
        for c in &columns {
            if !seen.insert(c.name.clone()) {
                return Err(SqlError::DuplicateColumn(format!(
                    "column \"{}\" specified more than once",
                    c.name
                )));
            }
        }
        for k in self.primary_key.iter().chain(&self.partition_keys) {
            if !seen.contains(k) {
                return Err(SqlError::UndefinedColumn(format!(
                    "column \"{k}\" named in key does not exist"
                )));
            }
        }
        for c in &mut columns {
            if self.primary_key.contains(&c.name) {
                c.data_type.nullable = false;
            }
        }
        self.columns = columns;
        Ok(())
    }
}

fn unsupported(message: impl Into<String>) -> SqlError {
    SqlError::Unsupported(message.into())
}

/// Translates a parsed `CREATE TABLE`.
pub fn create_table_spec(ct: CreateTable) -> Result<CreateTableSpec, SqlError> {
    let temporary = match (ct.temporary, ct.on_commit) {
        (false, None) => None,
        (false, Some(_)) => {
            return Err(SqlError::InvalidDefinition(
                "ON COMMIT can only be used on temporary tables".into(),
            ));
        }
        (true, None | Some(OnCommit::PreserveRows)) => Some(OnCommitAction::PreserveRows),
        (true, Some(OnCommit::DeleteRows)) => Some(OnCommitAction::DeleteRows),
        (true, Some(OnCommit::Drop)) => Some(OnCommitAction::Drop),
    };
    if ct.clone.is_some() || ct.partition_of.is_some() {
        return Err(unsupported(
            "CREATE TABLE ... CLONE / PARTITION OF is not supported",
        ));
    }
    let mut like = match &ct.like {
        Some(CreateTableLikeKind::Parenthesized(l)) => {
            let (schema, name) = table_name(&l.name)?;
            Some(LikeSpec {
                schema,
                name,
                defaults: matches!(l.defaults, Some(CreateTableLikeDefaults::Including)),
                primary_key: false,
            })
        }
        Some(CreateTableLikeKind::Plain(_)) => {
            return Err(unsupported(
                "CREATE TABLE t LIKE other is not PostgreSQL's syntax: write CREATE TABLE t \
                 (LIKE other)",
            ));
        }
        None => None,
    };
    let (schema, name) = table_name(&ct.name)?;
    let mut columns = Vec::new();
    let mut primary_key: Vec<String> = Vec::new();
    let mut not_null: Vec<String> = Vec::new();
    let mut partition_keys_from_options: Vec<String> = Vec::new();
    for col in &ct.columns {
        let col_name = fold_ident(&col.name);
        let serial = serial_type(&col.data_type);
        let (data_type, pg_type) = match &serial {
            Some(kind) => (PaimonType::nullable(kind.clone()), None),
            None => paimon_type(&col.data_type, &col_name)?,
        };
        let mut default = None;
        let mut identity = serial.map(|_| {
            not_null.push(col_name.clone());
            IdentitySpec {
                always: false,
                serial: true,
                options: Vec::new(),
            }
        });
        for opt in &col.options {
            match &opt.option {
                ColumnOption::NotNull => not_null.push(col_name.clone()),
                ColumnOption::Null => {}
                ColumnOption::PrimaryKey(_) => {
                    if !primary_key.is_empty() {
                        return Err(multiple_primary_keys(&name));
                    }
                    primary_key.push(col_name.clone());
                }
                ColumnOption::Unique(_) => {
                    return Err(unsupported(format!(
                        "UNIQUE on column \"{col_name}\" is not supported: tarn enforces only the \
                         primary key (Paimon tables have no secondary unique indexes)"
                    )));
                }
                ColumnOption::ForeignKey(_) => {
                    return Err(unsupported(format!(
                        "REFERENCES on column \"{col_name}\" is not supported: tarn does not \
                         enforce foreign keys"
                    )));
                }
                ColumnOption::Check(_) => {
                    return Err(unsupported(format!(
                        "CHECK on column \"{col_name}\" is not supported: tarn does not enforce \
                         check constraints"
                    )));
                }
                ColumnOption::Default(expr) => {
                    if default.is_some() || identity.is_some() {
                        return Err(SqlError::Syntax(format!(
                            "multiple default values specified for column \"{col_name}\" of \
                             table \"{name}\""
                        )));
                    }
                    default = column_default(expr, &data_type, &col_name)?;
                }
                ColumnOption::Generated {
                    generated_as: generated @ (GeneratedAs::Always | GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    if default.is_some() || identity.is_some() {
                        return Err(SqlError::Syntax(format!(
                            "both default and identity specified for column \"{col_name}\""
                        )));
                    }
                    not_null.push(col_name.clone());
                    identity = Some(IdentitySpec {
                        always: matches!(generated, GeneratedAs::Always),
                        serial: false,
                        options: sequence_options.clone().unwrap_or_default(),
                    });
                }
                ColumnOption::Generated { .. } | ColumnOption::Identity(_) => {
                    return Err(unsupported(format!(
                        "generated column \"{col_name}\" is not supported: tarn has identity \
                         columns (GENERATED ... AS IDENTITY) but no columns computed from others"
                    )));
                }
                ColumnOption::Collation(c) => {
                    return Err(unsupported(format!(
                        "COLLATE {c} on column \"{col_name}\" is not supported: tarn compares \
                         text byte-wise (like the \"C\" collation)"
                    )));
                }
                other => {
                    return Err(unsupported(format!(
                        "column option {other} on \"{col_name}\" is not supported"
                    )));
                }
            }
        }
        columns.push(ColumnSpec {
            name: col_name,
            data_type,
            pg_type,
            default,
            identity,
        });
    }
    for c in &ct.constraints {
        match c {
            // `LIKE … INCLUDING INDEXES` (see `parse_elements`).
            TableConstraint::PrimaryKey(pk) if pk.columns.is_empty() => {
                if let Some(like) = &mut like {
                    like.primary_key = true;
                }
            }
            TableConstraint::PrimaryKey(pk) => {
                if !primary_key.is_empty() {
                    return Err(multiple_primary_keys(&name));
                }
                for ic in &pk.columns {
                    match &ic.column.expr {
                        Expr::Identifier(id) => primary_key.push(fold_ident(id)),
                        other => {
                            return Err(unsupported(format!(
                                "primary key expression {other} is not supported: name columns"
                            )));
                        }
                    }
                }
            }
            TableConstraint::Unique(_) => {
                return Err(unsupported(
                    "UNIQUE constraints are not supported: tarn enforces only the primary key \
                     (Paimon tables have no secondary unique indexes)",
                ));
            }
            TableConstraint::ForeignKey(_) => {
                return Err(unsupported(
                    "FOREIGN KEY constraints are not supported: tarn does not enforce them",
                ));
            }
            TableConstraint::Check(_) => {
                return Err(unsupported(
                    "CHECK constraints are not supported: tarn does not enforce them",
                ));
            }
            other => {
                return Err(unsupported(format!("constraint {other} is not supported")));
            }
        }
    }
    for (list, what) in [(&primary_key, "primary key constraint")] {
        let mut names = std::collections::BTreeSet::new();
        for k in list.iter() {
            if !names.insert(k) {
                return Err(SqlError::DuplicateColumn(format!(
                    "column \"{k}\" appears twice in {what}"
                )));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in &columns {
        if !seen.insert(c.name.clone()) {
            return Err(SqlError::DuplicateColumn(format!(
                "column \"{}\" specified more than once",
                c.name
            )));
        }
    }
    let options = match &ct.query {
        Some(_) => {
            if !columns.is_empty() {
                return Err(unsupported(
                    "column definitions in CREATE TABLE ... AS are not supported: the query's \
                     columns are the table's (rename them with AS in the query)",
                ));
            }
            let (keys, rest) = super::create_as::key_options(&ct.table_options)?;
            primary_key = keys.primary_key;
            partition_keys_from_options = keys.partition;
            option_list(&rest)?
        }
        None => table_options(&ct.table_options)?,
    };
    for k in primary_key.iter().chain(&not_null) {
        if !seen.contains(k) && ct.query.is_none() && like.is_none() {
            return Err(SqlError::UndefinedColumn(format!(
                "column \"{k}\" named in key does not exist"
            )));
        }
    }
    // PostgreSQL makes primary key columns NOT NULL; so does Paimon.
    for c in &mut columns {
        if not_null.contains(&c.name) || primary_key.contains(&c.name) {
            c.data_type.nullable = false;
        }
    }
    let mut partition_keys: Vec<String> = match &ct.hive_distribution {
        HiveDistributionStyle::PARTITIONED { columns: cols } => {
            cols.iter().map(|c| fold_ident(&c.name)).collect()
        }
        _ => Vec::new(),
    };
    if !partition_keys_from_options.is_empty() {
        if !partition_keys.is_empty() {
            return Err(SqlError::Syntax(
                "the partition columns are named twice (PARTITIONED BY and 'partition')".into(),
            ));
        }
        partition_keys = partition_keys_from_options;
    }
    let mut partition_seen = std::collections::BTreeSet::new();
    for p in &partition_keys {
        if !partition_seen.insert(p) {
            return Err(SqlError::DuplicateColumn(format!(
                "column \"{p}\" appears twice in the partition key"
            )));
        }
        if !seen.contains(p) && ct.query.is_none() && like.is_none() {
            return Err(SqlError::UndefinedColumn(format!(
                "partition column \"{p}\" does not exist"
            )));
        }
    }
    Ok(CreateTableSpec {
        schema,
        name,
        if_not_exists: ct.if_not_exists,
        columns,
        primary_key,
        partition_keys,
        options,
        query: ct.query,
        like,
        temporary,
    })
}

impl CreateTableSpec {
    /// The Paimon schema to write as `schema-0`, with tarn's defaults made explicit: a
    /// primary-key table gets `bucket` = [`DEFAULT_PK_BUCKETS`] unless it says otherwise, an append
    /// table `bucket = -1` (bucket-unaware); partitioned tables name partition folders by casting
    /// values to strings (`partition.legacy-name = false`), which Paimon Java and pypaimon agree on.
    pub fn to_schema(
        &self,
        now_millis: i64,
        sequences: &BTreeMap<String, String>,
    ) -> Result<TableSchema, SqlError> {
        let mut options = self.options.clone();
        let has_key = !self.primary_key.is_empty();
        if !options.contains_key(options::BUCKET) {
            let default = if has_key { DEFAULT_PK_BUCKETS } else { -1 };
            options.insert(options::BUCKET.to_owned(), default.to_string());
        }
        // Snapshot retention bounded in count (Paimon's default is not: see storage/expire.rs).
        for (key, value) in TARN_DEFAULT_OPTIONS {
            options
                .entry((*key).to_owned())
                .or_insert_with(|| (*value).to_owned());
        }
        if !self.partition_keys.is_empty() && !options.contains_key(options::PARTITION_LEGACY_NAME)
        {
            options.insert(
                options::PARTITION_LEGACY_NAME.to_owned(),
                "false".to_owned(),
            );
        }
        for c in &self.columns {
            if let Some(hint) = c.pg_type {
                options.insert(
                    format!("{}{}", options::PG_TYPE_PREFIX, c.name),
                    hint.to_owned(),
                );
            }
        }
        let mut fields = Vec::new();
        for (i, c) in self.columns.iter().enumerate() {
            let mut field = DataField::new(i as i32, c.name.clone(), c.data_type.clone());
            match &c.default {
                Some(ColumnDefault::Literal(l)) => field.default_value = Some(l.clone()),
                Some(ColumnDefault::Expression(e)) => {
                    options.insert(format!("{}{}", options::DEFAULT_PREFIX, c.name), e.clone());
                }
                None => {}
            }
            if let Some(identity) = &c.identity {
                let sequence = sequences.get(&c.name).ok_or_else(|| {
                    SqlError::InvalidDefinition(format!(
                        "column \"{}\" has no sequence for its values",
                        c.name
                    ))
                })?;
                let literal =
                    Value::SingleQuotedString(crate::query::quote_ident(sequence)).to_string();
                options.insert(
                    format!("{}{}", options::DEFAULT_PREFIX, c.name),
                    format!("nextval({literal}::regclass)"),
                );
                if !identity.serial {
                    let kind = if identity.always {
                        "always"
                    } else {
                        "by-default"
                    };
                    options.insert(
                        format!("{}{}", options::IDENTITY_PREFIX, c.name),
                        kind.to_owned(),
                    );
                }
            }
            fields.push(field);
        }
        let schema = TableSchema {
            id: 0,
            highest_field_id: fields.len() as i32 - 1,
            fields,
            partition_keys: self.partition_keys.clone(),
            primary_keys: self.primary_key.clone(),
            options,
            comment: None,
            time_millis: now_millis,
        };
        // Options checked as a whole (each value alone was checked when read), and the
        // schema's own rules.
        options::check_table(&schema).map_err(option_error)?;
        Ok(schema)
    }
}

/// `GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [( options )]` as a column option, the options
/// read with PostgreSQL's grammar (`sql::sequence::parse_options`); `None` (nothing consumed)
/// for any other column option.
pub fn parse_identity(parser: &mut Parser) -> Option<Result<Option<ColumnOption>, ParserError>> {
    let word = |n: usize, k: Keyword| matches!(&parser.peek_nth_token_ref(n).token, Token::Word(w) if w.keyword == k);
    let always = word(1, Keyword::ALWAYS);
    let identity = if always {
        word(2, Keyword::AS) && word(3, Keyword::IDENTITY)
    } else {
        word(1, Keyword::BY)
            && word(2, Keyword::DEFAULT)
            && word(3, Keyword::AS)
            && word(4, Keyword::IDENTITY)
    };
    if !word(0, Keyword::GENERATED) || !identity {
        return None;
    }
    for _ in 0..if always { 4 } else { 5 } {
        parser.next_token();
    }
    let options = if parser.consume_token(&Token::LParen) {
        let spec = match super::sequence::parse_options(parser) {
            Ok(spec) => spec,
            Err(e) => return Some(Err(ParserError::ParserError(e.to_string()))),
        };
        if let Err(e) = parser.expect_token(&Token::RParen) {
            return Some(Err(e));
        }
        let number = |text: &String| Expr::Value(Value::Number(text.clone(), false).into());
        if spec.data_type.is_some() || spec.restart.is_some() || spec.owned_by.is_some() {
            return Some(Err(ParserError::ParserError(
                "AS, RESTART and OWNED BY are not identity column options".into(),
            )));
        }
        let mut options = Vec::new();
        if let Some(v) = &spec.increment {
            options.push(SequenceOptions::IncrementBy(number(v), true));
        }
        if let Some(v) = &spec.min_value {
            options.push(SequenceOptions::MinValue(v.as_ref().map(number)));
        }
        if let Some(v) = &spec.max_value {
            options.push(SequenceOptions::MaxValue(v.as_ref().map(number)));
        }
        if let Some(v) = &spec.start {
            options.push(SequenceOptions::StartWith(number(v), true));
        }
        if let Some(v) = &spec.cache {
            options.push(SequenceOptions::Cache(number(v)));
        }
        if let Some(cycle) = spec.cycle {
            options.push(SequenceOptions::Cycle(!cycle));
        }
        Some(options)
    } else {
        None
    };
    Some(Ok(Some(ColumnOption::Generated {
        generated_as: if always {
            GeneratedAs::Always
        } else {
            GeneratedAs::ByDefault
        },
        sequence_options: options,
        generation_expr: None,
        generation_expr_mode: None,
        generated_keyword: true,
    })))
}

/// The integer type of a SERIAL pseudo-type (`None`: not one).
fn serial_type(t: &DataType) -> Option<TypeKind> {
    let DataType::Custom(name, _) = t else {
        return None;
    };
    match name.to_string().to_lowercase().as_str() {
        "serial" | "serial4" => Some(TypeKind::Int),
        "bigserial" | "serial8" => Some(TypeKind::BigInt),
        "smallserial" | "serial2" => Some(TypeKind::SmallInt),
        _ => None,
    }
}

impl ColumnSpec {
    /// The options of the sequence an identity or SERIAL column takes its values from (its
    /// integer type; `OWNED BY` is the session's to set).
    pub fn sequence_params(&self) -> Result<Option<SequenceParams>, SqlError> {
        let Some(identity) = &self.identity else {
            return Ok(None);
        };
        let data_type = match self.data_type.kind {
            TypeKind::SmallInt => SequenceType::SmallInt,
            TypeKind::Int => SequenceType::Integer,
            TypeKind::BigInt => SequenceType::BigInt,
            _ => {
                return Err(SqlError::InvalidDefinition(format!(
                    "identity column type must be smallint, integer, or bigint (column \"{}\")",
                    self.name
                )));
            }
        };
        let text = |e: &Expr| e.to_string();
        let mut spec = SequenceSpec::default();
        for o in &identity.options {
            match o {
                SequenceOptions::IncrementBy(e, _) => spec.increment = Some(text(e)),
                SequenceOptions::MinValue(e) => spec.min_value = Some(e.as_ref().map(text)),
                SequenceOptions::MaxValue(e) => spec.max_value = Some(e.as_ref().map(text)),
                SequenceOptions::StartWith(e, _) => spec.start = Some(text(e)),
                SequenceOptions::Cache(e) => spec.cache = Some(text(e)),
                SequenceOptions::Cycle(no) => spec.cycle = Some(!*no),
            }
        }
        let mut params = spec
            .to_params()
            .map_err(|e| SqlError::InvalidValue(e.message))?;
        params.data_type = Some(data_type);
        Ok(Some(params))
    }
}

/// A refused option as the SQL error that gives it its SQLSTATE.
fn option_error(e: OptionError) -> SqlError {
    match e {
        OptionError::Unsupported(m) => SqlError::Unsupported(m),
        OptionError::Invalid(m) => SqlError::InvalidValue(m),
        OptionError::UnknownColumn(m) => SqlError::UndefinedColumn(m),
        OptionError::InvalidDefinition(m) => SqlError::InvalidDefinition(m),
    }
}

fn multiple_primary_keys(table: &str) -> SqlError {
    SqlError::InvalidDefinition(format!(
        "multiple primary keys for table \"{table}\" are not allowed"
    ))
}

/// `(schema, table)` of a possibly qualified name.
pub fn table_name(name: &ObjectName) -> Result<(Option<String>, String), SqlError> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| {
            p.as_ident()
                .map(fold_ident)
                .ok_or_else(|| SqlError::Syntax(format!("syntax error: invalid name {name}")))
        })
        .collect::<Result<_, _>>()?;
    let check = |n: &str| -> Result<(), SqlError> {
        if n.is_empty() || n.contains('/') || n.chars().any(char::is_control) {
            return Err(SqlError::InvalidName(format!(
                "invalid name \"{n}\": names may not be empty or contain '/' or control characters"
            )));
        }
        Ok(())
    };
    match parts.as_slice() {
        [t] => {
            check(t)?;
            Ok((None, t.clone()))
        }
        [s, t] => {
            check(t)?;
            Ok((Some(s.clone()), t.clone()))
        }
        // catalog.schema.table: the catalog is the connection's database, any name.
        [_, s, t] => {
            check(t)?;
            Ok((Some(s.clone()), t.clone()))
        }
        _ => Err(SqlError::Syntax(format!(
            "syntax error: improper qualified name (too many dotted names): {name}"
        ))),
    }
}

/// The Paimon type of a PostgreSQL column type, and tarn's hint for types Paimon lacks.
pub fn paimon_type(
    ty: &DataType,
    column: &str,
) -> Result<(PaimonType, Option<&'static str>), SqlError> {
    let t = |k: TypeKind| Ok((PaimonType::nullable(k), None));
    match ty {
        DataType::Bool | DataType::Boolean => t(TypeKind::Boolean),
        DataType::SmallInt(_) | DataType::Int2(_) => t(TypeKind::SmallInt),
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => t(TypeKind::Int),
        DataType::BigInt(_) | DataType::Int8(_) => t(TypeKind::BigInt),
        DataType::Real | DataType::Float4 => t(TypeKind::Float),
        DataType::DoublePrecision | DataType::Float8 | DataType::Double(ExactNumberInfo::None) => {
            t(TypeKind::Double)
        }
        DataType::Float(info) => match info {
            ExactNumberInfo::Precision(p) if *p <= 24 => t(TypeKind::Float),
            _ => t(TypeKind::Double),
        },
        DataType::Numeric(info) | DataType::Decimal(info) | DataType::Dec(info) => {
            let (p, s) = match info {
                // PostgreSQL's unconstrained NUMERIC: the widest Paimon decimal, 10 digits of
                // fraction (the choice DataFusion makes too).
                ExactNumberInfo::None => (38, 10),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => {
                    if *s < 0 {
                        return Err(unsupported(format!(
                            "NUMERIC with a negative scale (column \"{column}\") is not supported"
                        )));
                    }
                    (*p, *s as u64)
                }
            };
            if p == 0 || p > MAX_DECIMAL_PRECISION as u64 {
                return Err(unsupported(format!(
                    "NUMERIC precision {p} (column \"{column}\") is out of range: Paimon decimals \
                     hold 1 to 38 digits"
                )));
            }
            if s > p {
                return Err(SqlError::InvalidDefinition(format!(
                    "NUMERIC scale {s} must be between 0 and precision {p}"
                )));
            }
            t(TypeKind::Decimal {
                precision: p as u8,
                scale: s as u8,
            })
        }
        DataType::Text | DataType::String(None) => t(TypeKind::VarChar(MAX_LENGTH)),
        DataType::Varchar(len) | DataType::CharacterVarying(len) | DataType::CharVarying(len) => {
            match len {
                None | Some(CharacterLength::Max) => t(TypeKind::VarChar(MAX_LENGTH)),
                Some(CharacterLength::IntegerLength { length, .. }) => {
                    t(TypeKind::VarChar(char_length(*length, column)?))
                }
            }
        }
        DataType::Char(len) | DataType::Character(len) => match len {
            None => t(TypeKind::Char(1)),
            Some(CharacterLength::IntegerLength { length, .. }) => {
                t(TypeKind::Char(char_length(*length, column)?))
            }
            Some(CharacterLength::Max) => t(TypeKind::VarChar(MAX_LENGTH)),
        },
        DataType::Bytea => t(TypeKind::VarBinary(MAX_LENGTH)),
        DataType::Date => t(TypeKind::Date),
        DataType::Time(p, tz) => {
            if matches!(tz, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) {
                return Err(unsupported(format!(
                    "TIME WITH TIME ZONE (column \"{column}\") is not supported: Paimon has no such \
                     type; use TIME or TIMESTAMPTZ"
                )));
            }
            // Paimon stores TIME as milliseconds of the day: more digits would not survive.
            let p = p.unwrap_or(6).min(3) as u8;
            t(TypeKind::Time(p))
        }
        DataType::Timestamp(p, tz) => {
            let p = p.unwrap_or(6);
            if p > 6 {
                return Err(SqlError::InvalidDefinition(format!(
                    "TIMESTAMP({p}) precision must be between 0 and 6"
                )));
            }
            match tz {
                TimezoneInfo::WithTimeZone | TimezoneInfo::Tz => t(TypeKind::TimestampLtz(p as u8)),
                _ => t(TypeKind::Timestamp(p as u8)),
            }
        }
        DataType::Uuid => Ok((
            PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)),
            Some("uuid"),
        )),
        DataType::JSON => Ok((
            PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)),
            Some("json"),
        )),
        DataType::JSONB => Ok((
            PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)),
            Some("jsonb"),
        )),
        DataType::Interval { .. } => Err(unsupported(format!(
            "INTERVAL (column \"{column}\") is not supported: Paimon has no interval type; store \
             it as BIGINT microseconds or as TEXT"
        ))),
        DataType::Array(def) => {
            let element = match def {
                ArrayElemTypeDef::SquareBracket(inner, _)
                | ArrayElemTypeDef::AngleBracket(inner) => inner,
                _ => {
                    return Err(unsupported(format!(
                        "array type of column \"{column}\" needs an element type"
                    )));
                }
            };
            if matches!(element.as_ref(), DataType::Array(_)) {
                return Err(unsupported(format!(
                    "multi-dimensional arrays (column \"{column}\") are not supported: Paimon \
                     arrays have one dimension"
                )));
            }
            let (inner, hint) = paimon_type(element, column)?;
            if hint.is_some() {
                return Err(unsupported(format!(
                    "arrays of {element} (column \"{column}\") are not supported"
                )));
            }
            t(TypeKind::Array(Box::new(inner)))
        }
        DataType::Custom(name, _) => {
            let n = name.to_string().to_lowercase();
            match n.as_str() {
                "serial" | "serial4" | "bigserial" | "serial8" | "smallserial" | "serial2" => {
                    Err(unsupported(format!(
                        "{} (column \"{column}\") is only supported in CREATE TABLE: add the \
                         column as an integer, CREATE SEQUENCE, and SET DEFAULT nextval(...)",
                        n.to_uppercase()
                    )))
                }
                "timestamptz" => t(TypeKind::TimestampLtz(6)),
                "bpchar" => t(TypeKind::VarChar(MAX_LENGTH)),
                _ => Err(unsupported(format!(
                    "type {name} (column \"{column}\") is not supported"
                ))),
            }
        }
        other => Err(unsupported(format!(
            "type {other} (column \"{column}\") is not supported"
        ))),
    }
}

fn char_length(n: u64, column: &str) -> Result<u32, SqlError> {
    if n == 0 || n > 10_485_760 {
        return Err(SqlError::InvalidDefinition(format!(
            "length for type of column \"{column}\" must be between 1 and 10485760"
        )));
    }
    Ok(n as u32)
}

/// Options of `WITH (...)`, checked: what tarn cannot honour is refused now, not ignored.
fn table_options(opts: &CreateTableOptions) -> Result<BTreeMap<String, String>, SqlError> {
    let list = match opts {
        CreateTableOptions::None => return Ok(BTreeMap::new()),
        CreateTableOptions::With(l) => l,
        _ => {
            return Err(unsupported(
                "table options must be given as WITH (key = value, ...)",
            ));
        }
    };
    option_list(list)
}

/// `key = value, ...` (of `WITH (…)` or `ALTER TABLE … SET (…)`), each checked as a table
/// option.
pub(crate) fn option_list(list: &[SqlOption]) -> Result<BTreeMap<String, String>, SqlError> {
    let mut out = BTreeMap::new();
    for o in list {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(unsupported(format!("table option {o} must be key = value")));
        };
        let k = option_key(key);
        let v = match value {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                Value::Number(n, _) => n.to_string(),
                Value::Boolean(b) => b.to_string(),
                other => other.to_string(),
            },
            Expr::UnaryOp { op, expr } => format!("{op}{expr}"),
            Expr::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        };
        options::check(&k, &v).map_err(option_error)?;
        out.insert(k, v);
    }
    Ok(out)
}

/// An option key as stored: lowercase, except the column names of a quoted `'fields.<f>.…'`
/// key (an unquoted key's names fold to lowercase as PostgreSQL folds identifiers).
pub(crate) fn option_key(key: &Ident) -> String {
    let text = &key.value;
    if key.quote_style.is_some()
        && text.is_char_boundary(7)
        && text[..7].eq_ignore_ascii_case("fields.")
        && let Some(dot) = text.rfind('.')
        && dot > 7
    {
        return format!("fields.{}{}", &text[7..dot], text[dot..].to_lowercase());
    }
    text.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dialect::TarnDialect;

    fn spec(sql: &str) -> Result<CreateTableSpec, SqlError> {
        let dialect = TarnDialect::default();
        let mut stmts = Parser::parse_sql(&dialect, sql).map_err(SqlError::from_sqlparser)?;
        match stmts.remove(0) {
            Statement::CreateTable(ct) => create_table_spec(ct),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn issue_example() {
        let s = spec(
            "CREATE TABLE orders (
               id BIGINT, customer TEXT NOT NULL, amount NUMERIC(12,2), status TEXT,
               placed_at TIMESTAMP, dt DATE NOT NULL, PRIMARY KEY (id, dt)
             ) PARTITIONED BY (dt) WITH (bucket = 4)",
        )
        .unwrap();
        assert_eq!(s.name, "orders");
        assert_eq!(s.primary_key, ["id", "dt"]);
        assert_eq!(s.partition_keys, ["dt"]);
        assert_eq!(s.options["bucket"], "4");
        let types: Vec<String> = s.columns.iter().map(|c| c.data_type.to_string()).collect();
        assert_eq!(
            types,
            [
                "BIGINT NOT NULL",
                "STRING NOT NULL",
                "DECIMAL(12, 2)",
                "STRING",
                "TIMESTAMP(6)",
                "DATE NOT NULL"
            ]
        );
    }

    #[test]
    fn clause_orders_and_option_keys() {
        let s = spec(
            "create table s.t (a int primary key, dt text) partition by list (dt) \
             with ('file.format' = 'parquet', write-buffer-size = '32 mb', file.compression = 'zstd')",
        )
        .unwrap();
        assert_eq!(s.schema.as_deref(), Some("s"));
        assert_eq!(s.partition_keys, ["dt"]);
        assert_eq!(s.options["file.format"], "parquet");
        assert_eq!(s.options["write-buffer-size"], "32 mb");
        assert_eq!(s.options["file.compression"], "zstd");
        let s = spec("CREATE TABLE t (a int) WITH (bucket = -1) PARTITIONED BY (a)").unwrap();
        assert_eq!(s.options["bucket"], "-1");
        assert!(spec("CREATE TABLE t (a int) PARTITION BY RANGE (a)").is_err());
    }

    #[test]
    fn merge_engines_and_their_options() {
        let schema = |sql: &str| spec(sql).and_then(|s| s.to_schema(0, &BTreeMap::new()));
        let s = schema(
            "CREATE TABLE t (id int primary key, total bigint, tags text, name text) WITH (\
             merge-engine = 'aggregation', fields.total.aggregate-function = 'sum', \
             fields.tags.aggregate-function = 'listagg', fields.tags.list-agg-delimiter = ';', \
             fields.tags.distinct = 'true', fields.default-aggregate-function = 'last_value', \
             'aggregation.remove-record-on-delete' = 'true', fields.total.ignore-retract = true)",
        );
        // ignore-retract contradicts remove-record-on-delete (Paimon refuses it too).
        assert_eq!(s.unwrap_err().sqlstate(), "22023");
        let s = schema(
            "CREATE TABLE t (id int primary key, total bigint, tags text, name text) WITH (\
             merge-engine = 'aggregation', fields.total.aggregate-function = 'sum', \
             fields.tags.aggregate-function = 'listagg', fields.tags.list-agg-delimiter = ';', \
             fields.tags.distinct = 'true', fields.default-aggregate-function = 'last_value', \
             'aggregation.remove-record-on-delete' = 'true')",
        )
        .unwrap();
        assert_eq!(s.options["fields.total.aggregate-function"], "sum");
        assert_eq!(s.options["fields.tags.list-agg-delimiter"], ";");
        for ok in [
            "CREATE TABLE t (id int primary key, a text, b text, g int) WITH (\
             merge-engine = 'partial-update', fields.g.sequence-group = 'a,b', \
             partial-update.remove-record-on-sequence-group = 'g')",
            "CREATE TABLE t (id int primary key, a text) WITH (merge-engine = 'partial-update', \
             'partial-update.ignore-delete' = 'true')",
            "CREATE TABLE t (id int primary key, ts bigint, v text) WITH (sequence.field = 'ts', \
             sequence.field.sort-order = 'descending')",
            "CREATE TABLE t (id int primary key, v text) WITH (merge-engine = 'first-row', \
             first-row.ignore-delete = true)",
            // A quoted key keeps the case of the column it names.
            "CREATE TABLE t (\"Id\" int primary key, \"Total\" int) WITH (\
             merge-engine = 'aggregation', 'fields.Total.aggregate-function' = 'SUM')",
        ] {
            schema(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for (sql, state, needle) in [
            (
                "CREATE TABLE t (id int primary key, v int) WITH (merge-engine = 'aggregation', \
                 fields.nope.aggregate-function = 'sum')",
                "42703",
                "\"nope\"",
            ),
            (
                "CREATE TABLE t (id int primary key, v int) WITH (sequence.field = 'ts')",
                "42703",
                "\"ts\"",
            ),
            (
                "CREATE TABLE t (id int primary key, v int, g int) WITH (\
                 merge-engine = 'partial-update', fields.g.sequence-group = 'v,w')",
                "42703",
                "\"w\"",
            ),
            (
                "CREATE TABLE t (id int primary key, v text) WITH (merge-engine = 'aggregation', \
                 fields.v.aggregate-function = 'sum')",
                "22023",
                "cannot aggregate",
            ),
            (
                "CREATE TABLE t (id int primary key, v int) WITH (merge-engine = 'partial-update', \
                 fields.v.aggregate-function = 'sum')",
                "22023",
                "sequence group",
            ),
            (
                "CREATE TABLE t (id int primary key, v int) WITH (merge-engine = 'first-row', \
                 sequence.field = 'v')",
                "22023",
                "first-row",
            ),
            (
                "CREATE TABLE t (id int primary key, v int) WITH (ignore-delete = 'maybe')",
                "22023",
                "true or false",
            ),
            (
                "CREATE TABLE t (id int primary key, v int) WITH (merge-engine = 'aggregation', \
                 fields.v.aggregate-function = 'median')",
                "22023",
                "aggregate functions",
            ),
            (
                "CREATE TABLE t (id int, v int) WITH (merge-engine = 'partial-update')",
                "22023",
                "primary key",
            ),
            (
                "CREATE TABLE t (id int primary key, v int) WITH (sequence.snapshot-ordering = true)",
                "0A000",
                "snapshot-ordering",
            ),
            (
                "CREATE TABLE t (id int primary key, v int) WITH (fields.v.nullable = 'x')",
                "0A000",
                "fields.v.nullable",
            ),
        ] {
            let err = schema(sql).unwrap_err();
            assert_eq!(err.sqlstate(), state, "{sql}: {err}");
            assert!(err.to_string().contains(needle), "{sql}: {err}");
        }
    }

    #[test]
    fn types_map_and_refusals_say_why() {
        let s = spec(
            "CREATE TABLE t (a uuid, b jsonb, c varchar(10), d char(3), e bytea, f timestamptz, \
             g time, h numeric, i int[], j real, k double precision, l smallint, m boolean)",
        )
        .unwrap();
        let hints: Vec<Option<&str>> = s.columns.iter().map(|c| c.pg_type).collect();
        assert_eq!(hints[..2], [Some("uuid"), Some("jsonb")]);
        let types: Vec<String> = s.columns.iter().map(|c| c.data_type.to_string()).collect();
        assert_eq!(
            types,
            [
                "STRING",
                "STRING",
                "VARCHAR(10)",
                "CHAR(3)",
                "BYTES",
                "TIMESTAMP(6) WITH LOCAL TIME ZONE",
                "TIME(3)",
                "DECIMAL(38, 10)",
                "ARRAY<INT>",
                "FLOAT",
                "DOUBLE",
                "SMALLINT",
                "BOOLEAN"
            ]
        );
        for (sql, needle) in [
            ("CREATE TABLE t (a interval)", "INTERVAL"),
            ("CREATE TABLE t (a int unique)", "UNIQUE"),
            (
                "CREATE TABLE t (a int, FOREIGN KEY (a) REFERENCES u(b))",
                "FOREIGN KEY",
            ),
            ("CREATE TABLE t (a int CHECK (a > 0))", "CHECK"),
            ("CREATE TABLE t (a int[][])", "multi-dimensional"),
            ("CREATE TABLE t (a numeric(50,2))", "1 to 38"),
            (
                "CREATE TABLE t (a int primary key, b int) \
                 WITH (merge-engine = 'aggregation', fields.b.aggregate-function = 'collect')",
                "collect",
            ),
            (
                "CREATE TABLE t (a int) WITH ('file.format' = 'orc')",
                "Parquet",
            ),
            ("CREATE TABLE t (a int) WITH (bogus = 1)", "not supported"),
        ] {
            let err = spec(sql).unwrap_err();
            assert_eq!(err.sqlstate(), "0A000", "{sql}: {err}");
            assert!(err.to_string().contains(needle), "{sql}: {err}");
        }
    }

    #[test]
    fn temporary_tables_and_on_commit() {
        for (sql, expected) in [
            ("CREATE TABLE t (a int)", None),
            ("CREATE UNLOGGED TABLE t (a int)", None),
            (
                "CREATE TEMP TABLE t (a int)",
                Some(OnCommitAction::PreserveRows),
            ),
            (
                "CREATE TEMPORARY TABLE t (a int) ON COMMIT DELETE ROWS",
                Some(OnCommitAction::DeleteRows),
            ),
            (
                "CREATE TEMP TABLE t ON COMMIT DROP AS SELECT 1 AS a",
                Some(OnCommitAction::Drop),
            ),
        ] {
            assert_eq!(spec(sql).unwrap().temporary, expected, "{sql}");
        }
        let err = spec("CREATE TABLE t (a int) ON COMMIT DROP").unwrap_err();
        assert_eq!(err.sqlstate(), "42P16");
    }
}
