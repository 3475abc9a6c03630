//! `CREATE TABLE … AS query`: the new table's columns are the query's, their names and types
//! as the query returns them to a client (so as PostgreSQL would name and type them), each
//! mapped to the Paimon type tarn gives that PostgreSQL type. PostgreSQL's CTAS cannot name a
//! primary key or partitions; Paimon's own CTAS (Flink and Spark SQL) names them as table
//! options, and so does tarn's: `WITH ('primary-key' = 'a, b', 'partition' = 'dt')`
//! (`PARTITIONED BY (dt)` works too). The options are not stored: they become the schema's
//! keys.

use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::sql::sqlparser::ast::{CreateTableOptions, Expr, SqlOption, Value};

use super::SqlError;
use super::create_table::{ColumnSpec, CreateTableSpec, option_key};
use crate::storage::spec::types::{MAX_DECIMAL_PRECISION, MAX_LENGTH, PaimonType, TypeKind};

/// Paimon's CTAS option naming the primary key's columns (comma separated).
pub const PRIMARY_KEY_OPTION: &str = "primary-key";
/// Paimon's CTAS option naming the partition columns (comma separated).
pub const PARTITION_OPTION: &str = "partition";

/// The key and partition columns a CTAS names in its options.
#[derive(Debug, Default, PartialEq)]
pub struct KeyOptions {
    pub primary_key: Vec<String>,
    pub partition: Vec<String>,
}

/// Splits `'primary-key'` and `'partition'` off a CTAS's `WITH (…)` options; the rest are
/// table options.
pub fn key_options(opts: &CreateTableOptions) -> Result<(KeyOptions, Vec<SqlOption>), SqlError> {
    let list = match opts {
        CreateTableOptions::None => return Ok((KeyOptions::default(), Vec::new())),
        CreateTableOptions::With(l) => l,
        _ => {
            return Err(SqlError::Unsupported(
                "table options must be given as WITH (key = value, ...)".into(),
            ));
        }
    };
    let mut keys = KeyOptions::default();
    let mut rest = Vec::new();
    for option in list {
        let SqlOption::KeyValue { key, value } = option else {
            rest.push(option.clone());
            continue;
        };
        let target = match option_key(key).as_str() {
            PRIMARY_KEY_OPTION => &mut keys.primary_key,
            PARTITION_OPTION => &mut keys.partition,
            _ => {
                rest.push(option.clone());
                continue;
            }
        };
        let Expr::Value(v) = value else {
            return Err(SqlError::Syntax(format!(
                "table option '{key}' takes a quoted list of column names"
            )));
        };
        let (Value::SingleQuotedString(text) | Value::DoubleQuotedString(text)) = &v.value else {
            return Err(SqlError::Syntax(format!(
                "table option '{key}' takes a quoted list of column names"
            )));
        };
        *target = text
            .split(',')
            .map(|c| c.trim().to_lowercase())
            .filter(|c| !c.is_empty())
            .collect();
    }
    Ok((keys, rest))
}

impl CreateTableSpec {
    /// Gives a CTAS's table the query's columns (`schema`: as a client is told them), and
    /// checks the key and partition columns it names against them.
    pub fn with_query_columns(&mut self, schema: &Schema) -> Result<(), SqlError> {
        let mut columns = Vec::new();
        for field in schema.fields() {
            let name = field.name().clone();
            if columns.iter().any(|c: &ColumnSpec| c.name == name) {
                return Err(SqlError::DuplicateColumn(format!(
                    "column \"{name}\" specified more than once"
                )));
            }
            let (mut data_type, pg_type) = paimon_type_of(field)?;
            data_type.nullable = !self.primary_key.contains(&name);
            columns.push(ColumnSpec {
                name,
                data_type,
                pg_type,
                default: None,
                identity: None,
            });
        }
        for k in self.primary_key.iter().chain(&self.partition_keys) {
            if !columns.iter().any(|c| &c.name == k) {
                return Err(SqlError::UndefinedColumn(format!(
                    "column \"{k}\" named in key does not exist"
                )));
            }
        }
        self.columns = columns;
        Ok(())
    }
}

/// The Paimon type of a query's column, and tarn's hint for the PostgreSQL types Paimon
/// lacks (`uuid`, `json`, `jsonb`).
fn paimon_type_of(field: &Field) -> Result<(PaimonType, Option<&'static str>), SqlError> {
    let hint = match crate::query::pg_types::pg_type_of(field) {
        Some("uuid") => Some("uuid"),
        Some("json") => Some("json"),
        Some("jsonb") => Some("jsonb"),
        _ => None,
    };
    let kind = kind_of(field.data_type(), field.name())?;
    Ok((PaimonType::nullable(kind), hint))
}

fn kind_of(data_type: &DataType, column: &str) -> Result<TypeKind, SqlError> {
    let precision = |unit: &TimeUnit| match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond | TimeUnit::Nanosecond => 6,
    };
    Ok(match data_type {
        DataType::Boolean => TypeKind::Boolean,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => TypeKind::SmallInt,
        DataType::Int32 | DataType::UInt16 => TypeKind::Int,
        DataType::Int64 | DataType::UInt32 => TypeKind::BigInt,
        DataType::UInt64 => TypeKind::Decimal {
            precision: 20,
            scale: 0,
        },
        DataType::Float16 | DataType::Float32 => TypeKind::Float,
        DataType::Float64 => TypeKind::Double,
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s)
            if *p <= MAX_DECIMAL_PRECISION && *s >= 0 =>
        {
            TypeKind::Decimal {
                precision: *p,
                scale: *s as u8,
            }
        }
        // PostgreSQL types an untyped NULL or string constant as text.
        DataType::Null | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            TypeKind::VarChar(MAX_LENGTH)
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => TypeKind::VarBinary(MAX_LENGTH),
        DataType::Date32 | DataType::Date64 => TypeKind::Date,
        DataType::Time32(unit) | DataType::Time64(unit) => TypeKind::Time(precision(unit).min(3)),
        DataType::Timestamp(unit, None) => TypeKind::Timestamp(precision(unit)),
        DataType::Timestamp(unit, Some(_)) => TypeKind::TimestampLtz(precision(unit)),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            let (element, _) = paimon_type_of(item)?;
            TypeKind::Array(Box::new(element))
        }
        other => {
            return Err(SqlError::Unsupported(format!(
                "column \"{column}\" of the query has type {other}, which a Paimon table cannot \
                 hold: cast it in the query"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Command, parse};

    fn spec(sql: &str) -> CreateTableSpec {
        match parse(sql).unwrap().remove(0) {
            Command::CreateTable(spec) => *spec,
            other => panic!("not CREATE TABLE: {other:?}"),
        }
    }

    #[test]
    fn key_and_partition_options_become_the_schemas_keys() {
        let mut s = spec(
            "CREATE TABLE t WITH ('primary-key' = 'Id, dt', 'partition' = 'dt', bucket = '2') \
             AS SELECT 1 AS id, 'x' AS dt, 2.5 AS v",
        );
        assert_eq!(s.primary_key, ["id", "dt"]);
        assert_eq!(s.partition_keys, ["dt"]);
        assert_eq!(s.options.get("bucket").map(String::as_str), Some("2"));
        assert!(!s.options.contains_key(PRIMARY_KEY_OPTION));
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("dt", DataType::Utf8, true),
            Field::new("v", DataType::Decimal128(2, 1), true),
        ]);
        s.with_query_columns(&schema).unwrap();
        let kinds: Vec<_> = s
            .columns
            .iter()
            .map(|c| (c.data_type.kind.clone(), c.data_type.nullable))
            .collect();
        assert_eq!(
            kinds,
            [
                (TypeKind::Int, false),
                (TypeKind::VarChar(MAX_LENGTH), false),
                (
                    TypeKind::Decimal {
                        precision: 2,
                        scale: 1
                    },
                    true
                ),
            ]
        );
    }

    #[test]
    fn a_key_column_the_query_lacks_is_refused() {
        let mut s = spec("CREATE TABLE t WITH ('primary-key' = 'nope') AS SELECT 1 AS id");
        let schema = Schema::new(vec![Field::new("id", DataType::Int64, true)]);
        assert!(matches!(
            s.with_query_columns(&schema),
            Err(SqlError::UndefinedColumn(_))
        ));
    }

    #[test]
    fn column_definitions_with_a_query_are_refused() {
        assert!(parse("CREATE TABLE t (a INT) AS SELECT 1").is_err());
    }
}
