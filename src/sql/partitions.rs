//! Partitions named in SQL: the specs of `ALTER TABLE t DROP PARTITION (k = v, …)` and the
//! WHERE clauses of DELETEs that provably remove whole partitions, read from sqlparser's AST
//! and typed by the partition columns' Paimon types into storage predicates (exact per
//! partition, see `storage::drop_partitions`).
//!
//! A spec names partition columns only, each once, with literals (`dt = '2026-01-01'`,
//! `hour = 3`, `k = NULL` or `k = '__DEFAULT_PARTITION__'` for the NULL partition): a spec of
//! some of the partition columns drops every partition with those values, as Paimon's
//! `dropPartitions` does. A value is read as the column's type reads text (a date from
//! `'2026-01-01'`, an integer from `3` or `'3'`).
//!
//! A DELETE whose WHERE is a conjunction of `col = literal`, `col IN (literals)` and `col IS
//! NULL` over partition columns only deletes exactly the rows of the partitions it admits:
//! [`whole_partitions`] finds such a WHERE (anything else, parameters included, is `None`: the
//! statement deletes row by row).

use datafusion::arrow::array::Array;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast::{BinaryOperator, DataType, Expr, UnaryOperator, Value};

use super::SqlError;
use super::command::fold_ident;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::predicate::{CmpOp, Predicate};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::PaimonType;

/// A literal of a partition spec or WHERE clause, as text (`None`: NULL).
pub type Literal = Option<String>;

/// What one partition column must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `= value` (NULL: the NULL partition).
    Eq(Literal),
    /// `IN (values)` (no NULL among them).
    In(Vec<String>),
    /// `IS NULL`.
    IsNull,
}

/// One partition spec or one DELETE's WHERE: conditions on partition columns, all of which
/// hold.
pub type PartitionSpec = Vec<(String, Condition)>;

/// Why a spec cannot be used on a table (each has its SQLSTATE in the server's error mapping).
#[derive(Debug, Clone, PartialEq)]
pub enum SpecError {
    /// The table has no partition columns (42809).
    NotPartitioned(String),
    /// No such column (42703).
    UnknownColumn(String),
    /// A column that is not a partition column (42P17).
    NotPartitionColumn { column: String, partitions: String },
    /// A column named twice (42701).
    Repeated(String),
    /// A value the column's type cannot read (22P02).
    BadValue {
        column: String,
        ty: String,
        value: String,
    },
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpecError::NotPartitioned(t) => write!(f, "table \"{t}\" is not partitioned"),
            SpecError::UnknownColumn(c) => write!(f, "column \"{c}\" does not exist"),
            SpecError::NotPartitionColumn { column, partitions } => write!(
                f,
                "column \"{column}\" is not a partition column (the table is partitioned by \
                 {partitions})"
            ),
            SpecError::Repeated(c) => {
                write!(
                    f,
                    "partition column \"{c}\" is named twice in one partition spec"
                )
            }
            SpecError::BadValue { column, ty, value } => write!(
                f,
                "invalid partition value for column \"{column}\" of type {ty}: \"{value}\""
            ),
        }
    }
}

impl SpecError {
    /// The SQLSTATE of this refusal.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            SpecError::NotPartitioned(_) => "42809",
            SpecError::UnknownColumn(_) => "42703",
            SpecError::NotPartitionColumn { .. } => "42P17",
            SpecError::Repeated(_) => "42701",
            SpecError::BadValue { .. } => "22P02",
        }
    }
}

/// The spec of one `DROP PARTITION (k = v, …)`.
pub fn drop_partition_spec(exprs: &[Expr]) -> Result<PartitionSpec, SqlError> {
    exprs
        .iter()
        .map(|e| {
            let bad = || {
                SqlError::Syntax(format!(
                    "syntax error: a partition spec is a list of column = value (found {e})"
                ))
            };
            match e {
                Expr::BinaryOp {
                    left,
                    op: BinaryOperator::Eq,
                    right,
                } => {
                    let column = column_name(left).ok_or_else(bad)?;
                    let value = literal(right).ok_or_else(bad)?;
                    Ok((column, Condition::Eq(value)))
                }
                _ => Err(bad()),
            }
        })
        .collect()
}

/// A DELETE's WHERE (`selection`) as conditions on the partition columns of `schema` when it
/// is a conjunction of equalities, IN lists of literals and IS NULL on partition columns only
/// (columns unqualified or qualified by `alias`, the name the DELETE gives its table), each
/// column at most once, each literal of a kind PostgreSQL compares by the column's type.
/// `None` for anything else.
pub fn whole_partitions(
    selection: &Expr,
    alias: &str,
    schema: &TableSchema,
) -> Option<PartitionSpec> {
    let keys = &schema.partition_keys;
    let mut conjuncts = Vec::new();
    flatten_and(selection, &mut conjuncts);
    let mut spec: PartitionSpec = Vec::new();
    for c in conjuncts {
        let column = match c {
            Expr::BinaryOp { left, right, .. } => {
                qualified_column(left, alias).or_else(|| qualified_column(right, alias))?
            }
            Expr::InList { expr, .. } | Expr::IsNull(expr) => qualified_column(expr, alias)?,
            _ => return None,
        };
        if !keys.contains(&column) || spec.iter().any(|(c, _)| *c == column) {
            return None;
        }
        let ty = schema.type_of(&column);
        let value = |e: &Expr| match literal_kind(e)? {
            (Some(text), kind) if fits(kind, ty) => Some(text),
            // `col = NULL` is never true; other kinds compare by another type.
            _ => None,
        };
        let condition = match c {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => {
                let other = if qualified_column(left, alias).is_some() {
                    right
                } else {
                    left
                };
                Condition::Eq(Some(value(other)?))
            }
            Expr::InList {
                list,
                negated: false,
                ..
            } => Condition::In(list.iter().map(value).collect::<Option<Vec<_>>>()?),
            Expr::IsNull(_) => Condition::IsNull,
            _ => return None,
        };
        spec.push((column, condition));
    }
    Some(spec)
}

fn flatten_and<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            flatten_and(left, out);
            flatten_and(right, out);
        }
        Expr::Nested(inner) => flatten_and(inner, out),
        other => out.push(other),
    }
}

fn column_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(id) => Some(fold_ident(id)),
        Expr::Nested(inner) => column_name(inner),
        _ => None,
    }
}

/// A column of the DELETE's table: unqualified, or qualified by its name or alias.
fn qualified_column(e: &Expr, alias: &str) -> Option<String> {
    match e {
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            // The alias as the statement spells it (the change query's text uses it so).
            (parts[0].to_string() == alias).then(|| fold_ident(&parts[1]))
        }
        other => column_name(other),
    }
}

/// What kind of literal a value was written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A quoted string: read as the column's type reads text.
    Text,
    Number,
    Boolean,
    /// `DATE '…'`.
    Date,
    Null,
}

/// A literal's text and kind: strings, numbers (signed), booleans, `DATE '…'`, NULL.
fn literal_kind(e: &Expr) -> Option<(Literal, Kind)> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some((Some(s.clone()), Kind::Text)),
            Value::Number(n, _) => Some((Some(n.to_string()), Kind::Number)),
            Value::Boolean(b) => Some((Some(b.to_string()), Kind::Boolean)),
            Value::Null => Some((None, Kind::Null)),
            _ => None,
        },
        Expr::TypedString(t) if t.data_type == DataType::Date => match &t.value.value {
            Value::SingleQuotedString(s) => Some((Some(s.clone()), Kind::Date)),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal_kind(expr)? {
            (Some(n), Kind::Number) => Some((Some(format!("-{n}")), Kind::Number)),
            _ => None,
        },
        Expr::Nested(inner) => literal_kind(inner),
        _ => None,
    }
}

/// A literal's text (`Some(None)`: NULL).
fn literal(e: &Expr) -> Option<Literal> {
    literal_kind(e).map(|(text, _)| text)
}

/// Whether a literal of `kind` compares with a column of `ty` by the column's type in
/// PostgreSQL (a quoted string always does; a number only with a number column, ...).
fn fits(kind: Kind, ty: &PaimonType) -> bool {
    use crate::storage::spec::types::TypeKind as T;
    match kind {
        Kind::Text | Kind::Null => true,
        Kind::Number => matches!(
            ty.kind,
            T::TinyInt | T::SmallInt | T::Int | T::BigInt | T::Decimal { .. }
        ),
        Kind::Boolean => matches!(ty.kind, T::Boolean),
        Kind::Date => matches!(ty.kind, T::Date),
    }
}

/// `spec` on a table of `schema` as a storage predicate (exact per partition).
pub fn spec_predicate(spec: &PartitionSpec, schema: &TableSchema) -> Result<Predicate, SpecError> {
    let keys = &schema.partition_keys;
    if keys.is_empty() {
        return Err(SpecError::NotPartitioned(String::new()));
    }
    let default_name = schema.core_options().partition_default_name().to_owned();
    let mut seen: Vec<&str> = Vec::new();
    let mut parts = Vec::new();
    for (column, condition) in spec {
        if schema.field(column).is_none() {
            return Err(SpecError::UnknownColumn(column.clone()));
        }
        if !keys.contains(column) {
            return Err(SpecError::NotPartitionColumn {
                column: column.clone(),
                partitions: keys.join(", "),
            });
        }
        if seen.contains(&column.as_str()) {
            return Err(SpecError::Repeated(column.clone()));
        }
        seen.push(column);
        let ty = schema.type_of(column);
        let value = |text: &str| typed(column, text, ty);
        parts.push(match condition {
            Condition::Eq(None) | Condition::IsNull => Predicate::IsNull(column.clone()),
            Condition::Eq(Some(text)) if *text == default_name => Predicate::IsNull(column.clone()),
            Condition::Eq(Some(text)) => Predicate::Compare {
                column: column.clone(),
                op: CmpOp::Eq,
                value: value(text)?,
            },
            Condition::In(values) => Predicate::In {
                column: column.clone(),
                values: values.iter().map(|v| value(v)).collect::<Result<_, _>>()?,
            },
        });
    }
    Ok(match parts.len() {
        1 => parts.pop().expect("one"),
        _ => Predicate::And(parts),
    })
}

/// `text` read as a value of `ty` (as a cast of text to the column's type reads it).
fn typed(column: &str, text: &str, ty: &PaimonType) -> Result<Datum, SpecError> {
    let bad = || SpecError::BadValue {
        column: column.to_owned(),
        ty: ty.to_string(),
        value: text.to_owned(),
    };
    let arrow = ty.to_arrow().map_err(|_| bad())?;
    let scalar = ScalarValue::try_from_string(text.to_owned(), &arrow).map_err(|_| bad())?;
    let array = scalar.to_array().map_err(|_| bad())?;
    if array.is_null(0) {
        return Err(bad());
    }
    Datum::from_array(&array, 0, ty).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::ast::{AlterTableOperation, Statement};
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;
    use crate::sql::dialect::TarnDialect;
    use crate::storage::spec::types::{DataField, TypeKind};

    fn schema() -> TableSchema {
        TableSchema {
            id: 0,
            fields: vec![
                DataField::new(0, "id", PaimonType::new(TypeKind::BigInt, false)),
                DataField::new(1, "dt", PaimonType::new(TypeKind::Date, false)),
                DataField::new(2, "hour", PaimonType::nullable(TypeKind::Int)),
            ],
            highest_field_id: 2,
            partition_keys: vec!["dt".into(), "hour".into()],
            primary_keys: vec![],
            options: Default::default(),
            comment: None,
            time_millis: 0,
        }
    }

    fn drop_specs(sql: &str) -> Result<Vec<PartitionSpec>, SqlError> {
        let mut s = Parser::parse_sql(&TarnDialect::default(), sql).unwrap();
        let Statement::AlterTable(a) = s.remove(0) else {
            panic!()
        };
        a.operations
            .iter()
            .map(|op| match op {
                AlterTableOperation::DropPartitions { partitions, .. } => {
                    drop_partition_spec(partitions)
                }
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn where_of(sql: &str) -> Expr {
        let mut s = Parser::parse_sql(&TarnDialect::default(), sql).unwrap();
        let Statement::Delete(d) = s.remove(0) else {
            panic!()
        };
        d.selection.unwrap()
    }

    fn whole(sql: &str) -> Option<PartitionSpec> {
        whole_partitions(&where_of(sql), "x", &schema())
    }

    #[test]
    fn drop_partition_specs_are_typed_by_the_partition_columns() {
        let specs =
            drop_specs("ALTER TABLE t DROP PARTITION (dt = '2026-01-02', Hour = 3), DROP PARTITION (dt = DATE '2026-01-03')")
                .unwrap();
        let p = spec_predicate(&specs[0], &schema()).unwrap();
        assert_eq!(
            p,
            Predicate::And(vec![
                Predicate::Compare {
                    column: "dt".into(),
                    op: CmpOp::Eq,
                    value: Datum::Date(20455)
                },
                Predicate::Compare {
                    column: "hour".into(),
                    op: CmpOp::Eq,
                    value: Datum::Int(3)
                },
            ])
        );
        // A prefix (or any subset) of the partition columns.
        assert_eq!(
            spec_predicate(&specs[1], &schema()).unwrap(),
            Predicate::Compare {
                column: "dt".into(),
                op: CmpOp::Eq,
                value: Datum::Date(20456)
            }
        );
        let specs =
            drop_specs("ALTER TABLE t DROP PARTITION (hour = NULL), DROP PARTITION (hour = '__DEFAULT_PARTITION__'), DROP PARTITION (hour = -1)")
                .unwrap();
        assert_eq!(
            spec_predicate(&specs[0], &schema()).unwrap(),
            Predicate::IsNull("hour".into())
        );
        assert_eq!(
            spec_predicate(&specs[1], &schema()).unwrap(),
            Predicate::IsNull("hour".into())
        );
        assert!(matches!(
            spec_predicate(&specs[2], &schema()).unwrap(),
            Predicate::Compare {
                value: Datum::Int(-1),
                ..
            }
        ));
    }

    #[test]
    fn bad_specs_are_refused_with_their_sqlstate() {
        for (sql, code) in [
            ("ALTER TABLE t DROP PARTITION (id = 1)", "42P17"),
            ("ALTER TABLE t DROP PARTITION (nope = 1)", "42703"),
            (
                "ALTER TABLE t DROP PARTITION (dt = '2026-01-01', dt = '2026-01-02')",
                "42701",
            ),
            ("ALTER TABLE t DROP PARTITION (dt = 'yesterday')", "22P02"),
            ("ALTER TABLE t DROP PARTITION (hour = 'x')", "22P02"),
        ] {
            let spec = drop_specs(sql).unwrap().remove(0);
            let e = spec_predicate(&spec, &schema()).unwrap_err();
            assert_eq!(e.sqlstate(), code, "{sql}: {e}");
        }
        let e = drop_specs("ALTER TABLE t DROP PARTITION (dt > '2026-01-01')").unwrap_err();
        assert!(matches!(e, SqlError::Syntax(_)), "{e}");
        let e = drop_specs("ALTER TABLE t DROP PARTITION (dt = now())").unwrap_err();
        assert!(matches!(e, SqlError::Syntax(_)), "{e}");
        let mut unpartitioned = schema();
        unpartitioned.partition_keys.clear();
        let spec = drop_specs("ALTER TABLE t DROP PARTITION (dt = '2026-01-01')")
            .unwrap()
            .remove(0);
        assert_eq!(
            spec_predicate(&spec, &unpartitioned)
                .unwrap_err()
                .sqlstate(),
            "42809"
        );
    }

    #[test]
    fn deletes_of_whole_partitions_are_found() {
        assert_eq!(
            whole("DELETE FROM t AS x WHERE x.dt = '2026-01-01' AND (hour IN (1, 2))"),
            Some(vec![
                ("dt".into(), Condition::Eq(Some("2026-01-01".into()))),
                ("hour".into(), Condition::In(vec!["1".into(), "2".into()])),
            ])
        );
        assert_eq!(
            whole("DELETE FROM t x WHERE DATE '2026-01-01' = dt AND hour IS NULL"),
            Some(vec![
                ("dt".into(), Condition::Eq(Some("2026-01-01".into()))),
                ("hour".into(), Condition::IsNull),
            ])
        );
        for sql in [
            // Not only partition columns, or not only conjunctions of these shapes.
            "DELETE FROM t x WHERE dt = '2026-01-01' AND id = 1",
            "DELETE FROM t x WHERE dt = '2026-01-01' OR hour = 1",
            "DELETE FROM t x WHERE dt > '2026-01-01'",
            "DELETE FROM t x WHERE NOT dt = '2026-01-01'",
            "DELETE FROM t x WHERE dt NOT IN ('2026-01-01')",
            "DELETE FROM t x WHERE dt = $1",
            "DELETE FROM t x WHERE dt = NULL",
            "DELETE FROM t x WHERE hour IN (1, NULL)",
            "DELETE FROM t x WHERE dt = '2026-01-01' AND dt = '2026-01-02'",
            "DELETE FROM t x WHERE y.dt = '2026-01-01'",
            "DELETE FROM t x WHERE dt = (SELECT max(dt) FROM t)",
            "DELETE FROM t x WHERE hour = 1 + 1",
            // Literals PostgreSQL compares by another type than the column's.
            "DELETE FROM t x WHERE hour = true",
            "DELETE FROM t x WHERE dt = 20260101",
            "DELETE FROM t x WHERE hour = DATE '2026-01-01'",
            "DELETE FROM t x WHERE dt = TIMESTAMP '2026-01-01 10:00:00'",
        ] {
            assert_eq!(whole(sql), None, "{sql}");
        }
    }
}
