//! Bind's parameter values → DataFusion scalars.
//!
//! arrow-pg decodes scalars and the arrays of numbers, booleans, text, intervals and numerics;
//! it refuses the other arrays clients bind (`date[]`, `timestamp[]`, `timestamptz[]`,
//! `time[]`, `uuid[]`, `bytea[]`, `json[]`, `jsonb[]`, `bpchar[]`, `name[]`: "Cannot convert
//! postgres type _date"). tarn decodes those itself, in text and binary form (PostgreSQL's
//! array_in / array_recv formats, one dimension), and hands the rest to arrow-pg. A scalar
//! `uuid` (which arrow-pg refuses too) is read here as well, into tarn's canonical uuid text.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{ParamValues, ScalarValue};
use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::api::stmt::StoredStatement;
use pgwire::error::PgWireResult;

use super::error::PgError;

/// Microseconds between 1970-01-01 and PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// Days between 1970-01-01 and 2000-01-01.
const PG_EPOCH_DAYS: i32 = 10_957;

/// The parameters of `portal`, typed as the client said (Parse) or as tarn inferred.
pub fn parameters<S: Clone>(
    portal: &Portal<S>,
    inferred: &[Option<DataType>],
) -> PgWireResult<ParamValues> {
    let count = portal.parameter_len();
    let mut ours: Vec<Option<ScalarValue>> = vec![None; count];
    for (i, slot) in ours.iter_mut().enumerate() {
        let inferred_type = inferred.get(i).and_then(Option::as_ref);
        let pg_type = match portal.statement.parameter_types.get(i).cloned().flatten() {
            Some(t) => t,
            None => match inferred_type {
                Some(t) => arrow_pg::datatypes::into_pg_type(t)?,
                None => continue,
            },
        };
        let value = portal.parameters.get(i).cloned().flatten();
        let binary = portal.parameter_format.is_binary(i);
        if pg_type == Type::UUID {
            *slot = Some(match value.as_deref() {
                None => ScalarValue::Utf8(None),
                Some(raw) if binary => ScalarValue::Utf8(Some(
                    uuid::Uuid::from_slice(raw)
                        .map_err(|_| {
                            PgError::new(
                                "22P03",
                                format!("incorrect binary data format in bind parameter {}", i + 1),
                            )
                        })?
                        .hyphenated()
                        .to_string(),
                )),
                Some(raw) => {
                    text_element(&String::from_utf8_lossy(raw), &Type::UUID, &DataType::Utf8)?
                }
            });
            continue;
        }
        let Some(element) = element_of(&pg_type) else {
            continue;
        };
        *slot = Some(array_value(
            value.as_deref(),
            binary,
            &element,
            inferred_type,
        )?);
    }
    if ours.iter().all(Option::is_none) {
        let refs: Vec<Option<&DataType>> = inferred.iter().map(Option::as_ref).collect();
        return arrow_pg::datatypes::df::deserialize_parameters(portal, &refs);
    }
    // arrow-pg decodes the others; tarn's positions go to it as NULL text.
    let mut types = portal.statement.parameter_types.clone();
    types.resize(count, None);
    let mut rest: Portal<()> = Portal::default();
    rest.parameter_format = portal.parameter_format.clone();
    rest.parameters = portal.parameters.clone();
    for (i, v) in ours.iter().enumerate() {
        if v.is_some() {
            types[i] = Some(Type::TEXT);
            rest.parameters[i] = None;
        }
    }
    rest.statement = Arc::new(StoredStatement::new(String::new(), (), types));
    let refs: Vec<Option<&DataType>> = inferred.iter().map(Option::as_ref).collect();
    let ParamValues::List(mut values) =
        arrow_pg::datatypes::df::deserialize_parameters(&rest, &refs)?
    else {
        return Err(PgError::internal("arrow-pg returned named parameters").into());
    };
    for (i, v) in ours.into_iter().enumerate() {
        if let Some(v) = v {
            values[i] = v.into();
        }
    }
    Ok(ParamValues::List(values))
}

/// The element type of an array type tarn decodes itself.
fn element_of(t: &Type) -> Option<Type> {
    Some(match *t {
        Type::DATE_ARRAY => Type::DATE,
        Type::TIME_ARRAY => Type::TIME,
        Type::TIMESTAMP_ARRAY => Type::TIMESTAMP,
        Type::TIMESTAMPTZ_ARRAY => Type::TIMESTAMPTZ,
        Type::UUID_ARRAY => Type::UUID,
        Type::BYTEA_ARRAY => Type::BYTEA,
        Type::JSON_ARRAY => Type::JSON,
        Type::JSONB_ARRAY => Type::JSONB,
        Type::BPCHAR_ARRAY => Type::BPCHAR,
        Type::NAME_ARRAY => Type::NAME,
        _ => return None,
    })
}

/// The Arrow type of decoded elements.
fn arrow_type(element: &Type) -> DataType {
    match *element {
        Type::DATE => DataType::Date32,
        Type::TIME => DataType::Time64(TimeUnit::Microsecond),
        Type::TIMESTAMP => DataType::Timestamp(TimeUnit::Microsecond, None),
        Type::TIMESTAMPTZ => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Type::BYTEA => DataType::Binary,
        _ => DataType::Utf8,
    }
}

fn bad(element: &Type, why: impl std::fmt::Display) -> PgError {
    PgError::new(
        "22P03",
        format!(
            "incorrect binary data format in {}[] parameter: {why}",
            element.name()
        ),
    )
}

fn array_value(
    value: Option<&[u8]>,
    binary: bool,
    element: &Type,
    inferred: Option<&DataType>,
) -> Result<ScalarValue, PgError> {
    let natural = arrow_type(element);
    let list = match value {
        None => ScalarValue::new_null_list(natural.clone(), true, 1),
        Some(bytes) => {
            let scalars = if binary {
                binary_elements(bytes, element)?
            } else {
                text_elements(bytes, element)?
            };
            ScalarValue::List(ScalarValue::new_list_nullable(&scalars, &natural))
        }
    };
    // The column's own element type (nanosecond timestamps, a time zone, Utf8View, ...).
    match inferred {
        Some(target @ DataType::List(_)) if target != &list.data_type() => {
            Ok(list.cast_to(target)?)
        }
        _ => Ok(list),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    element: &'a Type,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PgError> {
        if self.bytes.len() < n {
            return Err(bad(self.element, "the value ends early"));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    fn i32(&mut self) -> Result<i32, PgError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// PostgreSQL's array_send format: ndim, has-nulls flag, element OID, (length, lower bound)
/// per dimension, then each element as length (-1: NULL) and bytes.
fn binary_elements(bytes: &[u8], element: &Type) -> Result<Vec<ScalarValue>, PgError> {
    let mut r = Reader { bytes, element };
    let ndim = r.i32()?;
    let _has_nulls = r.i32()?;
    let _oid = r.i32()?;
    if ndim == 0 {
        return Ok(Vec::new());
    }
    if ndim != 1 {
        return Err(PgError::new(
            "0A000",
            format!(
                "{ndim}-dimensional array parameters are not supported: tarn takes one dimension"
            ),
        ));
    }
    let len = r.i32()?;
    let _lower = r.i32()?;
    let mut out = Vec::with_capacity(len.max(0) as usize);
    for _ in 0..len {
        let n = r.i32()?;
        if n < 0 {
            out.push(ScalarValue::try_from(arrow_type(element))?);
            continue;
        }
        let raw = r.take(n as usize)?;
        out.push(binary_element(raw, element)?);
    }
    Ok(out)
}

fn binary_element(raw: &[u8], element: &Type) -> Result<ScalarValue, PgError> {
    let i64_of = |raw: &[u8]| -> Result<i64, PgError> {
        raw.try_into()
            .map(i64::from_be_bytes)
            .map_err(|_| bad(element, "expected 8 bytes"))
    };
    let text = |raw: &[u8]| -> Result<String, PgError> {
        String::from_utf8(raw.to_vec()).map_err(|_| bad(element, "invalid UTF-8"))
    };
    Ok(match *element {
        Type::DATE => {
            let days: [u8; 4] = raw
                .try_into()
                .map_err(|_| bad(element, "expected 4 bytes"))?;
            ScalarValue::Date32(Some(i32::from_be_bytes(days) + PG_EPOCH_DAYS))
        }
        Type::TIME => ScalarValue::Time64Microsecond(Some(i64_of(raw)?)),
        Type::TIMESTAMP => {
            ScalarValue::TimestampMicrosecond(Some(i64_of(raw)? + PG_EPOCH_MICROS), None)
        }
        Type::TIMESTAMPTZ => ScalarValue::TimestampMicrosecond(
            Some(i64_of(raw)? + PG_EPOCH_MICROS),
            Some("UTC".into()),
        ),
        Type::UUID => ScalarValue::Utf8(Some(
            uuid::Uuid::from_slice(raw)
                .map_err(|_| bad(element, "expected 16 bytes"))?
                .hyphenated()
                .to_string(),
        )),
        Type::BYTEA => ScalarValue::Binary(Some(raw.to_vec())),
        Type::JSONB => match raw.split_first() {
            Some((1, rest)) => ScalarValue::Utf8(Some(text(rest)?)),
            _ => return Err(bad(element, "unsupported jsonb version")),
        },
        _ => ScalarValue::Utf8(Some(text(raw)?)),
    })
}

/// PostgreSQL's array_in format, one dimension: `{a,"b c",NULL,"q\"uote"}`.
fn text_elements(bytes: &[u8], element: &Type) -> Result<Vec<ScalarValue>, PgError> {
    let text = std::str::from_utf8(bytes).map_err(|_| bad(element, "invalid UTF-8"))?;
    let natural = arrow_type(element);
    split_array_text(text)?
        .into_iter()
        .map(|item| match item {
            None => Ok(ScalarValue::try_from(&natural)?),
            Some(s) => text_element(&s, element, &natural),
        })
        .collect()
}

fn text_element(s: &str, element: &Type, natural: &DataType) -> Result<ScalarValue, PgError> {
    match *element {
        Type::BYTEA => {
            let hex = s.strip_prefix("\\x").ok_or_else(|| {
                PgError::new(
                    "22P02",
                    format!("invalid input syntax for type bytea: \"{s}\""),
                )
            })?;
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| {
                    PgError::new(
                        "22P02",
                        format!("invalid hexadecimal data in bytea: \"{s}\""),
                    )
                })?;
            Ok(ScalarValue::Binary(Some(bytes)))
        }
        Type::UUID => uuid::Uuid::parse_str(s)
            .map(|u| ScalarValue::Utf8(Some(u.hyphenated().to_string())))
            .map_err(|_| {
                PgError::new(
                    "22P02",
                    format!("invalid input syntax for type uuid: \"{s}\""),
                )
            }),
        _ if natural == &DataType::Utf8 => Ok(ScalarValue::Utf8(Some(s.to_owned()))),
        _ => ScalarValue::Utf8(Some(s.to_owned()))
            .cast_to(natural)
            .map_err(|_| {
                PgError::new(
                    "22007",
                    format!("invalid input syntax for type {}: \"{s}\"", element.name()),
                )
            }),
    }
}

/// The items of a one-dimensional array literal; `None` for an unquoted NULL.
fn split_array_text(text: &str) -> Result<Vec<Option<String>>, PgError> {
    let malformed = |why: &str| {
        PgError::new("22P02", format!("malformed array literal: \"{text}\""))
            .with_detail(why.to_owned())
    };
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(|| malformed("Array value must start with \"{\" or dimension information."))?;
    let mut items = Vec::new();
    if inner.trim().is_empty() {
        return Ok(items);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => item.push(
                        chars
                            .next()
                            .ok_or_else(|| malformed("Unexpected end of input."))?,
                    ),
                    Some(c) => item.push(c),
                    None => return Err(malformed("Unexpected end of input.")),
                }
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' || c == '}' || c == '"' {
                    return Err(PgError::new(
                        "0A000",
                        "multidimensional array parameters are not supported: tarn takes one dimension",
                    ));
                }
                chars.next();
                if c == '\\' {
                    item.push(
                        chars
                            .next()
                            .ok_or_else(|| malformed("Unexpected end of input."))?,
                    );
                } else {
                    item.push(c);
                }
            }
            let trimmed = item.trim_end().to_owned();
            item = trimmed;
        }
        if !quoted && item.eq_ignore_ascii_case("null") {
            items.push(None);
        } else if !quoted && item.is_empty() {
            return Err(malformed("Unexpected \",\" character."));
        } else {
            items.push(Some(item));
        }
        match chars.next() {
            Some(',') => continue,
            None => break,
            Some(_) => return Err(malformed("Unexpected array element.")),
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_text_items() {
        assert_eq!(
            split_array_text(r#"{a, "b c" ,NULL,"NULL","q\"u",x\,y}"#).unwrap(),
            [
                Some("a".to_owned()),
                Some("b c".to_owned()),
                None,
                Some("NULL".to_owned()),
                Some("q\"u".to_owned()),
                Some("x,y".to_owned()),
            ]
        );
        assert!(split_array_text("{}").unwrap().is_empty());
        assert_eq!(split_array_text("{a,,b}").unwrap_err().code, "22P02");
        assert_eq!(split_array_text("{{1},{2}}").unwrap_err().code, "0A000");
        assert_eq!(split_array_text("a,b").unwrap_err().code, "22P02");
    }

    #[test]
    fn binary_date_array() {
        // array_send of '{2000-01-02,NULL}'::date[]
        let mut exact = Vec::new();
        for v in [1i32, 1, Type::DATE.oid() as i32, 2, 1, 4, 1, -1] {
            exact.extend_from_slice(&v.to_be_bytes());
        }
        let items = binary_elements(&exact, &Type::DATE).unwrap();
        assert_eq!(
            items,
            [ScalarValue::Date32(Some(10_958)), ScalarValue::Date32(None)]
        );
        assert!(binary_elements(&exact[..exact.len() - 2], &Type::DATE).is_err());
    }

    #[test]
    fn text_timestamps_cast_to_the_column_type() {
        let target = DataType::List(Arc::new(
            datafusion::arrow::datatypes::Field::new_list_field(
                DataType::Timestamp(TimeUnit::Nanosecond, None),
                true,
            ),
        ));
        let v = array_value(
            Some(b"{\"2026-12-01 10:00:00\",NULL}"),
            false,
            &Type::TIMESTAMP,
            Some(&target),
        )
        .unwrap();
        assert_eq!(v.data_type(), target);
    }
}
