//! Paimon data types: parsed from and printed to the schema JSON exactly as Paimon writes them,
//! and mapped to the Arrow types tarn computes with.
//!
//! Paimon's schema JSON writes an atomic type as a SQL string (`"BIGINT NOT NULL"`,
//! `"DECIMAL(12, 2)"`, `"TIMESTAMP(6) WITH LOCAL TIME ZONE"`) and a nested type as an object
//! (`{"type": "ARRAY", "element": "INT"}`). Other engines read what we print, so printing follows
//! Paimon's Java `asSQLString` and parsing accepts what its `DataTypeJsonParser` accepts.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field as ArrowField, TimeUnit};
use serde_json::{Value, json};

use crate::storage::StorageError;

/// Length Paimon uses for `STRING` (`VARCHAR(MAX)`) and `BYTES` (`VARBINARY(MAX)`).
pub const MAX_LENGTH: u32 = i32::MAX as u32;
/// Largest decimal precision Paimon (and Arrow's Decimal128) holds.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// One Paimon type without its nullability.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeKind {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// `CHAR(n)`: fixed length, blank padded.
    Char(u32),
    /// `VARCHAR(n)`; `STRING` is `VARCHAR(MAX_LENGTH)`.
    VarChar(u32),
    Binary(u32),
    /// `VARBINARY(n)`; `BYTES` is `VARBINARY(MAX_LENGTH)`.
    VarBinary(u32),
    Date,
    /// `TIME(p)`: stored as milliseconds of the day whatever `p` says.
    Time(u8),
    /// `TIMESTAMP(p)`: a zone-less date and time.
    Timestamp(u8),
    /// `TIMESTAMP(p) WITH LOCAL TIME ZONE`: an instant, stored as UTC.
    TimestampLtz(u8),
    Array(Box<PaimonType>),
    Multiset(Box<PaimonType>),
    Map(Box<PaimonType>, Box<PaimonType>),
    Row(Vec<DataField>),
    /// A type tarn can carry in a schema but not read or write (VARIANT, BLOB, VECTOR, ...).
    Other(String),
}

/// A Paimon type with its nullability.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PaimonType {
    pub kind: TypeKind,
    pub nullable: bool,
}

/// A named, id-carrying field of a schema or a ROW type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataField {
    pub id: i32,
    pub name: String,
    pub data_type: PaimonType,
    pub description: Option<String>,
    /// The column's default (`defaultValue`, Paimon 1.3+): a literal as text, which Paimon's
    /// writers cast from STRING to the column's type (one pair of surrounding `'` stripped) and
    /// write in place of a NULL. Kept through every rewrite of the schema.
    pub default_value: Option<String>,
}

impl PaimonType {
    pub fn new(kind: TypeKind, nullable: bool) -> Self {
        Self { kind, nullable }
    }

    pub fn nullable(kind: TypeKind) -> Self {
        Self::new(kind, true)
    }

    /// The same type with another nullability.
    pub fn with_nullable(&self, nullable: bool) -> Self {
        Self {
            kind: self.kind.clone(),
            nullable,
        }
    }

    /// Parses a type as it appears in a schema file (string or object).
    pub fn from_json(value: &Value) -> Result<Self, StorageError> {
        match value {
            Value::String(s) => parse_sql_type(s),
            Value::Object(map) => {
                let type_name = map.get("type").and_then(Value::as_str).ok_or_else(|| {
                    StorageError::format(format!("type object without a \"type\": {value}"))
                })?;
                let nullable = !type_name.contains("NOT NULL");
                let sub = |key: &str| -> Result<Box<PaimonType>, StorageError> {
                    let v = map.get(key).ok_or_else(|| {
                        StorageError::format(format!("{type_name} type without \"{key}\""))
                    })?;
                    Ok(Box::new(PaimonType::from_json(v)?))
                };
                let kind = if type_name.starts_with("ARRAY") {
                    TypeKind::Array(sub("element")?)
                } else if type_name.starts_with("MULTISET") {
                    TypeKind::Multiset(sub("element")?)
                } else if type_name.starts_with("MAP") {
                    TypeKind::Map(sub("key")?, sub("value")?)
                } else if type_name.starts_with("ROW") {
                    let fields = map
                        .get("fields")
                        .and_then(Value::as_array)
                        .ok_or_else(|| StorageError::format("ROW type without \"fields\""))?;
                    TypeKind::Row(
                        fields
                            .iter()
                            .map(DataField::from_json)
                            .collect::<Result<_, _>>()?,
                    )
                } else {
                    TypeKind::Other(value.to_string())
                };
                Ok(PaimonType { kind, nullable })
            }
            other => Err(StorageError::format(format!("cannot parse type {other}"))),
        }
    }

    /// The type as Paimon writes it into a schema file.
    pub fn to_json(&self) -> Value {
        let suffix = if self.nullable { "" } else { " NOT NULL" };
        match &self.kind {
            TypeKind::Array(e) => json!({"type": format!("ARRAY{suffix}"), "element": e.to_json()}),
            TypeKind::Multiset(e) => {
                json!({"type": format!("MULTISET{suffix}"), "element": e.to_json()})
            }
            TypeKind::Map(k, v) => {
                json!({"type": format!("MAP{suffix}"), "key": k.to_json(), "value": v.to_json()})
            }
            TypeKind::Row(fields) => json!({
                "type": format!("ROW{suffix}"),
                "fields": fields.iter().map(DataField::to_json).collect::<Vec<_>>(),
            }),
            TypeKind::Other(raw) => serde_json::from_str(raw).unwrap_or(Value::String(raw.clone())),
            _ => Value::String(self.to_string()),
        }
    }

    /// The Arrow type tarn uses for values of this type (in memory and in Parquet files).
    ///
    /// `TIME` is milliseconds of the day (what Paimon stores); `TIMESTAMP(p)` is milliseconds for
    /// `p <= 3`, microseconds for `p <= 6`, nanoseconds above, as Paimon's Parquet writer does.
    pub fn to_arrow(&self) -> Result<ArrowType, StorageError> {
        Ok(match &self.kind {
            TypeKind::Boolean => ArrowType::Boolean,
            TypeKind::TinyInt => ArrowType::Int8,
            TypeKind::SmallInt => ArrowType::Int16,
            TypeKind::Int => ArrowType::Int32,
            TypeKind::BigInt => ArrowType::Int64,
            TypeKind::Float => ArrowType::Float32,
            TypeKind::Double => ArrowType::Float64,
            TypeKind::Decimal { precision, scale } => {
                ArrowType::Decimal128(*precision, *scale as i8)
            }
            TypeKind::Char(_) | TypeKind::VarChar(_) => ArrowType::Utf8,
            TypeKind::Binary(_) | TypeKind::VarBinary(_) => ArrowType::Binary,
            TypeKind::Date => ArrowType::Date32,
            TypeKind::Time(_) => ArrowType::Time32(TimeUnit::Millisecond),
            TypeKind::Timestamp(p) => ArrowType::Timestamp(timestamp_unit(*p), None),
            TypeKind::TimestampLtz(p) => {
                ArrowType::Timestamp(timestamp_unit(*p), Some("UTC".into()))
            }
            TypeKind::Array(element) => ArrowType::List(Arc::new(ArrowField::new(
                "element",
                element.to_arrow()?,
                element.nullable,
            ))),
            TypeKind::Map(key, value) => ArrowType::Map(
                Arc::new(ArrowField::new(
                    "key_value",
                    ArrowType::Struct(
                        vec![
                            ArrowField::new("key", key.to_arrow()?, false),
                            ArrowField::new("value", value.to_arrow()?, value.nullable),
                        ]
                        .into(),
                    ),
                    false,
                )),
                false,
            ),
            TypeKind::Row(fields) => ArrowType::Struct(
                fields
                    .iter()
                    .map(|f| {
                        Ok(ArrowField::new(
                            &f.name,
                            f.data_type.to_arrow()?,
                            f.data_type.nullable,
                        ))
                    })
                    .collect::<Result<Vec<_>, StorageError>>()?
                    .into(),
            ),
            TypeKind::Multiset(_) | TypeKind::Other(_) => {
                return Err(StorageError::UnsupportedType(self.to_string()));
            }
        })
    }

    /// Whether values of this type can be part of a primary key, partition or bucket key.
    pub fn is_key_type(&self) -> bool {
        !matches!(
            self.kind,
            TypeKind::Array(_)
                | TypeKind::Multiset(_)
                | TypeKind::Map(..)
                | TypeKind::Row(_)
                | TypeKind::Other(_)
        )
    }
}

/// Arrow time unit of a timestamp with `precision` fractional digits.
pub fn timestamp_unit(precision: u8) -> TimeUnit {
    match precision {
        0..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    }
}

impl fmt::Display for PaimonType {
    /// Paimon's `asSQLString`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            TypeKind::Boolean => f.write_str("BOOLEAN")?,
            TypeKind::TinyInt => f.write_str("TINYINT")?,
            TypeKind::SmallInt => f.write_str("SMALLINT")?,
            TypeKind::Int => f.write_str("INT")?,
            TypeKind::BigInt => f.write_str("BIGINT")?,
            TypeKind::Float => f.write_str("FLOAT")?,
            TypeKind::Double => f.write_str("DOUBLE")?,
            TypeKind::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})")?,
            TypeKind::Char(n) => write!(f, "CHAR({n})")?,
            TypeKind::VarChar(MAX_LENGTH) => f.write_str("STRING")?,
            TypeKind::VarChar(n) => write!(f, "VARCHAR({n})")?,
            TypeKind::Binary(n) => write!(f, "BINARY({n})")?,
            TypeKind::VarBinary(MAX_LENGTH) => f.write_str("BYTES")?,
            TypeKind::VarBinary(n) => write!(f, "VARBINARY({n})")?,
            TypeKind::Date => f.write_str("DATE")?,
            TypeKind::Time(p) => write!(f, "TIME({p})")?,
            TypeKind::Timestamp(p) => write!(f, "TIMESTAMP({p})")?,
            TypeKind::TimestampLtz(p) => write!(f, "TIMESTAMP({p}) WITH LOCAL TIME ZONE")?,
            TypeKind::Array(e) => write!(f, "ARRAY<{e}>")?,
            TypeKind::Multiset(e) => write!(f, "MULTISET<{e}>")?,
            TypeKind::Map(k, v) => write!(f, "MAP<{k}, {v}>")?,
            TypeKind::Row(fields) => {
                f.write_str("ROW<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{}` {}", field.name, field.data_type)?;
                }
                f.write_str(">")?;
            }
            TypeKind::Other(raw) => f.write_str(raw)?,
        }
        if !self.nullable {
            f.write_str(" NOT NULL")?;
        }
        Ok(())
    }
}

impl DataField {
    pub fn new(id: i32, name: impl Into<String>, data_type: PaimonType) -> Self {
        Self {
            id,
            name: name.into(),
            data_type,
            description: None,
            default_value: None,
        }
    }

    pub fn from_json(value: &Value) -> Result<Self, StorageError> {
        let id = value
            .get("id")
            .and_then(Value::as_i64)
            .ok_or_else(|| StorageError::format(format!("field without an id: {value}")))?;
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| StorageError::format(format!("field without a name: {value}")))?;
        let data_type = PaimonType::from_json(
            value
                .get("type")
                .ok_or_else(|| StorageError::format(format!("field without a type: {value}")))?,
        )?;
        Ok(Self {
            id: id as i32,
            name: name.to_owned(),
            data_type,
            description: value
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            default_value: value
                .get("defaultValue")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    pub fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("id".into(), json!(self.id));
        map.insert("name".into(), json!(self.name));
        map.insert("type".into(), self.data_type.to_json());
        if let Some(d) = &self.description {
            map.insert("description".into(), json!(d));
        }
        if let Some(d) = &self.default_value {
            map.insert("defaultValue".into(), json!(d));
        }
        Value::Object(map)
    }
}

/// Parses Paimon's SQL form of a type (`DECIMAL(10, 2) NOT NULL`, `ARRAY<INT>`, ...).
pub fn parse_sql_type(text: &str) -> Result<PaimonType, StorageError> {
    let tokens = tokenize(text);
    let mut parser = TypeParser {
        text,
        tokens,
        pos: 0,
    };
    let ty = parser.parse_type()?;
    if parser.pos != parser.tokens.len() {
        return Err(parser.error("unexpected text after the type"));
    }
    Ok(ty)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Int(u64),
    Punct(char),
    Quoted(String),
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if "<>(),".contains(c) {
            tokens.push(Token::Punct(c));
            i += 1;
        } else if c == '`' || c == '\'' {
            let mut s = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == c {
                    if chars.get(i + 1) == Some(&c) {
                        s.push(c);
                        i += 2;
                        continue;
                    }
                    break;
                }
                s.push(chars[i]);
                i += 1;
            }
            i += 1;
            tokens.push(Token::Quoted(s));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            tokens.push(Token::Int(digits.parse().unwrap_or(u64::MAX)));
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !"<>(),`'".contains(chars[i]) {
                i += 1;
            }
            tokens.push(Token::Word(
                chars[start..i].iter().collect::<String>().to_uppercase(),
            ));
        }
    }
    tokens
}

struct TypeParser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
}

impl TypeParser<'_> {
    fn error(&self, what: &str) -> StorageError {
        StorageError::format(format!("cannot parse Paimon type {:?}: {what}", self.text))
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Token::Word(w)) if w == word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.peek() == Some(&Token::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), StorageError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{c}'")))
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<(), StorageError> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.error(&format!("expected {word}")))
        }
    }

    fn int(&mut self) -> Result<u64, StorageError> {
        match self.next() {
            Some(Token::Int(n)) => Ok(n),
            _ => Err(self.error("expected a number")),
        }
    }

    /// `(n)` if present.
    fn optional_param(&mut self) -> Result<Option<u64>, StorageError> {
        if self.eat_punct('(') {
            let n = self.int()?;
            self.expect_punct(')')?;
            Ok(Some(n))
        } else {
            Ok(None)
        }
    }

    fn length(&mut self, default: u32) -> Result<u32, StorageError> {
        Ok(self
            .optional_param()?
            .map(|n| n.min(MAX_LENGTH as u64) as u32)
            .unwrap_or(default))
    }

    fn precision(&mut self, default: u8) -> Result<u8, StorageError> {
        Ok(self
            .optional_param()?
            .map(|n| n.min(9) as u8)
            .unwrap_or(default))
    }

    fn parse_type(&mut self) -> Result<PaimonType, StorageError> {
        let word = match self.next() {
            Some(Token::Word(w)) => w,
            _ => return Err(self.error("expected a type name")),
        };
        let kind = match word.as_str() {
            "BOOLEAN" => TypeKind::Boolean,
            "TINYINT" => TypeKind::TinyInt,
            "SMALLINT" => TypeKind::SmallInt,
            "INT" | "INTEGER" => TypeKind::Int,
            "BIGINT" => TypeKind::BigInt,
            "FLOAT" => TypeKind::Float,
            "DOUBLE" => {
                self.eat_word("PRECISION");
                TypeKind::Double
            }
            "DECIMAL" | "NUMERIC" | "DEC" => {
                let (mut precision, mut scale) = (10u64, 0u64);
                if self.eat_punct('(') {
                    precision = self.int()?;
                    if self.eat_punct(',') {
                        scale = self.int()?;
                    }
                    self.expect_punct(')')?;
                }
                if precision == 0 || precision > MAX_DECIMAL_PRECISION as u64 || scale > precision {
                    return Err(
                        self.error("decimal precision must be 1..38 and scale <= precision")
                    );
                }
                TypeKind::Decimal {
                    precision: precision as u8,
                    scale: scale as u8,
                }
            }
            "CHAR" => TypeKind::Char(self.length(1)?),
            "VARCHAR" => TypeKind::VarChar(self.length(1)?),
            "STRING" => TypeKind::VarChar(MAX_LENGTH),
            "BINARY" => TypeKind::Binary(self.length(1)?),
            "VARBINARY" => TypeKind::VarBinary(self.length(1)?),
            "BYTES" => TypeKind::VarBinary(MAX_LENGTH),
            "DATE" => TypeKind::Date,
            "TIME" => {
                let p = self.precision(0)?;
                if self.eat_word("WITHOUT") {
                    self.expect_word("TIME")?;
                    self.expect_word("ZONE")?;
                }
                TypeKind::Time(p)
            }
            "TIMESTAMP" => {
                let p = self.precision(6)?;
                if self.eat_word("WITHOUT") {
                    self.expect_word("TIME")?;
                    self.expect_word("ZONE")?;
                    TypeKind::Timestamp(p)
                } else if self.eat_word("WITH") {
                    self.expect_word("LOCAL")?;
                    self.expect_word("TIME")?;
                    self.expect_word("ZONE")?;
                    TypeKind::TimestampLtz(p)
                } else {
                    TypeKind::Timestamp(p)
                }
            }
            "TIMESTAMP_LTZ" => TypeKind::TimestampLtz(self.precision(6)?),
            "ARRAY" | "MULTISET" => {
                self.expect_punct('<')?;
                let element = Box::new(self.parse_type()?);
                self.expect_punct('>')?;
                if word == "ARRAY" {
                    TypeKind::Array(element)
                } else {
                    TypeKind::Multiset(element)
                }
            }
            "MAP" => {
                self.expect_punct('<')?;
                let key = Box::new(self.parse_type()?);
                self.expect_punct(',')?;
                let value = Box::new(self.parse_type()?);
                self.expect_punct('>')?;
                TypeKind::Map(key, value)
            }
            _ => {
                // Types tarn does not compute with (VARIANT, BLOB, ...): kept verbatim.
                let rest = self.tokens.len();
                self.pos = rest;
                return Ok(PaimonType::new(
                    TypeKind::Other(self.text.trim().to_owned()),
                    !self.text.to_uppercase().ends_with("NOT NULL"),
                ));
            }
        };
        let nullable = if self.eat_word("NOT") {
            self.expect_word("NULL")?;
            false
        } else {
            self.eat_word("NULL");
            true
        };
        Ok(PaimonType { kind, nullable })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_what_paimon_writes() {
        for text in [
            "BOOLEAN",
            "TINYINT",
            "SMALLINT NOT NULL",
            "INT",
            "BIGINT NOT NULL",
            "FLOAT",
            "DOUBLE",
            "DECIMAL(12, 2)",
            "DECIMAL(38, 10) NOT NULL",
            "CHAR(3)",
            "VARCHAR(20)",
            "STRING",
            "STRING NOT NULL",
            "BINARY(16)",
            "VARBINARY(8)",
            "BYTES",
            "DATE",
            "TIME(0)",
            "TIME(3) NOT NULL",
            "TIMESTAMP(6)",
            "TIMESTAMP(3) NOT NULL",
            "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        ] {
            let ty = parse_sql_type(text).unwrap();
            assert_eq!(ty.to_string(), text);
            assert_eq!(PaimonType::from_json(&ty.to_json()).unwrap(), ty);
        }
    }

    #[test]
    fn accepts_aliases_and_defaults() {
        let cases = [
            ("integer", "INT"),
            ("DECIMAL", "DECIMAL(10, 0)"),
            ("NUMERIC(5)", "DECIMAL(5, 0)"),
            ("TIMESTAMP", "TIMESTAMP(6)"),
            ("TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
            ("TIMESTAMP(3) WITHOUT TIME ZONE", "TIMESTAMP(3)"),
            ("TIME", "TIME(0)"),
            ("DOUBLE PRECISION", "DOUBLE"),
            ("ARRAY<INT NOT NULL>", "ARRAY<INT NOT NULL>"),
            ("MAP<STRING, BIGINT>", "MAP<STRING, BIGINT>"),
        ];
        for (text, printed) in cases {
            assert_eq!(parse_sql_type(text).unwrap().to_string(), printed, "{text}");
        }
        assert!(parse_sql_type("DECIMAL(39, 2)").is_err());
        assert!(parse_sql_type("DECIMAL(5").is_err());
    }

    #[test]
    fn nested_types_use_json_objects() {
        let json: Value = serde_json::from_str(
            r#"{"type":"ARRAY NOT NULL","element":{"type":"ROW","fields":[{"id":7,"name":"a","type":"INT"}]}}"#,
        )
        .unwrap();
        let ty = PaimonType::from_json(&json).unwrap();
        assert!(!ty.nullable);
        assert_eq!(ty.to_json(), json);
        assert_eq!(ty.to_string(), "ARRAY<ROW<`a` INT>> NOT NULL");
    }

    #[test]
    fn arrow_types_follow_paimon_parquet_layout() {
        let arrow = |t: &str| parse_sql_type(t).unwrap().to_arrow().unwrap();
        assert_eq!(
            arrow("TIMESTAMP(3)"),
            ArrowType::Timestamp(TimeUnit::Millisecond, None)
        );
        assert_eq!(
            arrow("TIMESTAMP(6) WITH LOCAL TIME ZONE"),
            ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        assert_eq!(arrow("TIME(0)"), ArrowType::Time32(TimeUnit::Millisecond));
        assert_eq!(arrow("DECIMAL(12, 2)"), ArrowType::Decimal128(12, 2));
        assert!(parse_sql_type("VARIANT").unwrap().to_arrow().is_err());
    }
}
