//! COPY FROM's values: one [`ColumnReader`] per target column reads each field as PostgreSQL's
//! input function (text and CSV) or receive function (binary) of the column's type would, and
//! builds the column's Arrow array for a batch.
//!
//! A value that does not read fails at once with PostgreSQL's SQLSTATE and message (22P02
//! `invalid input syntax for type integer: "x"`, 22003 out of range, 22007/22008 for dates, 22P03
//! for binary data of the wrong shape); the caller adds COPY's CONTEXT line (table, line,
//! column, value). Types without a reader of their own are read by Arrow's cast when the batch
//! is finished.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder,
    Float64Builder, Int8Builder, Int16Builder, Int32Builder, Int64Builder, StringBuilder,
};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion::common::ScalarValue;

use crate::query::pg_literals::{datetime_input_error, literal};
use crate::query::pg_types::pg_type_of;
use crate::server::error::PgError;

/// Days from 1970-01-01 to PostgreSQL's epoch 2000-01-01.
const PG_EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// Text columns whose PostgreSQL type checks its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextCheck {
    None,
    Uuid,
    Json,
    Jsonb,
}

enum Kind {
    Int8(Int8Builder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Bool(BooleanBuilder),
    Text(StringBuilder, TextCheck),
    Bytea(BinaryBuilder),
    Date(Date32Builder),
    Decimal(Decimal128Builder, u8, i8),
    /// Times, timestamps and arrays: read by `pg_literals` (PostgreSQL's date/time input).
    Scalar(Vec<ScalarValue>),
    /// Anything else: the text, cast when the batch is finished.
    Other(StringBuilder),
}

/// Reads one target column's fields into an Arrow array.
pub struct ColumnReader {
    pub name: String,
    data_type: DataType,
    kind: Kind,
    zone: String,
}

fn invalid(type_name: &str, text: &str) -> PgError {
    PgError::new(
        "22P02",
        format!("invalid input syntax for type {type_name}: \"{text}\""),
    )
}

fn out_of_range(type_name: &str, text: &str) -> PgError {
    PgError::new(
        "22003",
        format!("value \"{text}\" is out of range for type {type_name}"),
    )
}

fn binary_format() -> PgError {
    PgError::new("22P03", "incorrect binary data format")
}

/// The UTF-8 text of a field (22021 otherwise, as PostgreSQL's encoding check).
pub fn utf8(bytes: &[u8]) -> Result<&str, PgError> {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.contains('\0') => Ok(s),
        Ok(_) => Err(PgError::new(
            "22021",
            "invalid byte sequence for encoding \"UTF8\": 0x00",
        )),
        Err(e) => {
            let bad = &bytes[e.valid_up_to()..];
            let shown: Vec<String> = bad
                .iter()
                .take(e.error_len().unwrap_or(bad.len()).max(1))
                .map(|b| format!("0x{b:02x}"))
                .collect();
            Err(PgError::new(
                "22021",
                format!(
                    "invalid byte sequence for encoding \"UTF8\": {}",
                    shown.join(" ")
                ),
            ))
        }
    }
}

fn int_type_name(bits: u32) -> &'static str {
    match bits {
        16 => "smallint",
        32 => "integer",
        _ => "bigint",
    }
}

/// PostgreSQL's integer input: whitespace around, an optional sign, digits.
fn parse_int(text: &str, min: i64, max: i64, bits: u32) -> Result<i64, PgError> {
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(int_type_name(bits), text));
    }
    match t.parse::<i128>() {
        Ok(v) if v >= i128::from(min) && v <= i128::from(max) => Ok(v as i64),
        _ => Err(out_of_range(int_type_name(bits), text)),
    }
}

/// PostgreSQL's float input (`NaN`, `Infinity`, exponents; overflow is an error).
fn parse_float(text: &str, double: bool) -> Result<f64, PgError> {
    let name = if double { "double precision" } else { "real" };
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let v: f64 = t.parse().map_err(|_| invalid(name, text))?;
    let infinite_text = t.to_ascii_lowercase().contains("inf");
    if !infinite_text && (v.is_infinite() || (!double && (v as f32).is_infinite())) {
        return Err(PgError::new(
            "22003",
            format!("\"{text}\" is out of range for type {name}"),
        ));
    }
    Ok(v)
}

/// PostgreSQL's boolean input: `t`, `true`, `yes`, `on`, `1` and their opposites (prefixes
/// that are unique too), case-insensitive, whitespace around.
fn parse_bool(text: &str) -> Result<bool, PgError> {
    let t = text
        .trim_matches(|c: char| c.is_ascii_whitespace())
        .to_ascii_lowercase();
    let prefix_of = |word: &str, min: usize| t.len() >= min && word.starts_with(t.as_str());
    if prefix_of("true", 1) || prefix_of("yes", 1) || prefix_of("on", 2) || t == "1" {
        Ok(true)
    } else if prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || t == "0" {
        Ok(false)
    } else {
        Err(invalid("boolean", text))
    }
}

/// PostgreSQL's numeric input into a `numeric(precision, scale)`: rounded half away from zero
/// to the scale; 22003 when the digits before the point do not fit.
pub fn parse_numeric(text: &str, precision: u8, scale: i8) -> Result<i128, PgError> {
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let bad = || invalid("numeric", text);
    let (negative, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if rest.eq_ignore_ascii_case("nan") {
        return Err(PgError::new(
            "0A000",
            "NaN cannot be stored in a numeric column with a precision in tarn",
        ));
    }
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i32>().map_err(|_| bad())?),
        None => (rest, 0),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty() && frac_part.is_empty()
        || !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .map(|b| b - b'0')
        .collect();
    // The decimal point sits after `point` digits.
    let point = int_part.len() as i64 + i64::from(exponent);
    let scale = i64::from(scale);
    let keep = point + scale;
    let mut value: i128 = 0;
    let mut significant = 0i64;
    let overflow = || {
        let max_digits = i64::from(precision) - scale;
        PgError::new("22003", "numeric field overflow").with_detail(format!(
            "A field with precision {precision}, scale {scale} must round to an absolute value \
             less than {}{}.",
            if max_digits > 0 { "10^" } else { "" },
            if max_digits > 0 { max_digits } else { 1 }
        ))
    };
    for i in 0..keep.max(0) {
        let d = if i < digits.len() as i64 {
            digits[i as usize]
        } else {
            0
        };
        if significant > 0 || d != 0 {
            significant += 1;
        }
        if significant > 38 {
            return Err(overflow());
        }
        value = value * 10 + i128::from(d);
    }
    let next = if keep >= 0 && keep < digits.len() as i64 {
        digits[keep as usize]
    } else {
        0
    };
    if next >= 5 {
        value += 1;
    }
    if value != 0 && value >= 10i128.pow(u32::from(precision)) {
        return Err(overflow());
    }
    Ok(if negative { -value } else { value })
}

/// PostgreSQL's binary numeric (base-10000 digits) as decimal text.
fn numeric_recv(bytes: &[u8]) -> Result<String, PgError> {
    if bytes.len() < 8 {
        return Err(binary_format());
    }
    let word = |i: usize| i16::from_be_bytes([bytes[2 * i], bytes[2 * i + 1]]);
    let ndigits = word(0).max(0) as usize;
    let weight = i64::from(word(1));
    let sign = word(2) as u16;
    if bytes.len() != 8 + 2 * ndigits {
        return Err(binary_format());
    }
    if sign == 0xC000 {
        return Ok("NaN".into());
    }
    let mut digits = String::with_capacity(ndigits * 4);
    for i in 0..ndigits {
        let d = word(4 + i);
        if !(0..10_000).contains(&d) {
            return Err(PgError::new(
                "22P03",
                "invalid digit in external \"numeric\" value",
            ));
        }
        digits.push_str(&format!("{d:04}"));
    }
    let mut point = (weight + 1) * 4;
    if point < 0 {
        digits.insert_str(0, &"0".repeat((-point) as usize));
        point = 0;
    }
    while (digits.len() as i64) < point {
        digits.push('0');
    }
    let (int, frac) = digits.split_at(point as usize);
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let sign = if sign == 0x4000 { "-" } else { "" };
    Ok(format!("{sign}{int}.{frac}0"))
}

/// `YYYY-MM-DD` exactly (what COPY input nearly always holds), as days since 1970; anything
/// else goes to PostgreSQL's fuller date input.
fn iso_date(text: &str) -> Option<i32> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let date = chrono::NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)?;
    Some((date - chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?).num_days() as i32)
}

impl ColumnReader {
    /// A reader for the table column `field` (its Arrow type and PostgreSQL type hint);
    /// `zone`: the session's TimeZone (timestamptz text without an offset).
    pub fn new(field: &Field, zone: &str) -> Self {
        let check = match pg_type_of(field) {
            Some("uuid") => TextCheck::Uuid,
            Some("json") => TextCheck::Json,
            Some("jsonb") => TextCheck::Jsonb,
            _ => TextCheck::None,
        };
        let kind = match field.data_type() {
            DataType::Int8 => Kind::Int8(Int8Builder::new()),
            DataType::Int16 => Kind::Int16(Int16Builder::new()),
            DataType::Int32 => Kind::Int32(Int32Builder::new()),
            DataType::Int64 => Kind::Int64(Int64Builder::new()),
            DataType::Float32 => Kind::Float32(Float32Builder::new()),
            DataType::Float64 => Kind::Float64(Float64Builder::new()),
            DataType::Boolean => Kind::Bool(BooleanBuilder::new()),
            DataType::Utf8 => Kind::Text(StringBuilder::new(), check),
            DataType::Binary => Kind::Bytea(BinaryBuilder::new()),
            DataType::Date32 => Kind::Date(Date32Builder::new()),
            DataType::Decimal128(p, s) => Kind::Decimal(
                Decimal128Builder::new()
                    .with_precision_and_scale(*p, *s)
                    .expect("the table's decimal type"),
                *p,
                *s,
            ),
            DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(_, _)
            | DataType::List(_) => Kind::Scalar(Vec::new()),
            _ => Kind::Other(StringBuilder::new()),
        };
        Self {
            name: field.name().clone(),
            data_type: field.data_type().clone(),
            kind,
            zone: zone.to_owned(),
        }
    }

    pub fn push_null(&mut self) -> Result<(), PgError> {
        match &mut self.kind {
            Kind::Int8(b) => b.append_null(),
            Kind::Int16(b) => b.append_null(),
            Kind::Int32(b) => b.append_null(),
            Kind::Int64(b) => b.append_null(),
            Kind::Float32(b) => b.append_null(),
            Kind::Float64(b) => b.append_null(),
            Kind::Bool(b) => b.append_null(),
            Kind::Text(b, _) | Kind::Other(b) => b.append_null(),
            Kind::Bytea(b) => b.append_null(),
            Kind::Date(b) => b.append_null(),
            Kind::Decimal(b, _, _) => b.append_null(),
            Kind::Scalar(v) => v.push(ScalarValue::try_from(&self.data_type)?),
        }
        Ok(())
    }

    /// One field in text or CSV format.
    pub fn push_text(&mut self, bytes: &[u8]) -> Result<(), PgError> {
        let text = utf8(bytes)?;
        match &mut self.kind {
            Kind::Int8(b) => b.append_value(parse_int(text, -128, 127, 16)? as i8),
            Kind::Int16(b) => b.append_value(parse_int(text, -32768, 32767, 16)? as i16),
            Kind::Int32(b) => {
                b.append_value(
                    parse_int(text, i64::from(i32::MIN), i64::from(i32::MAX), 32)? as i32,
                )
            }
            Kind::Int64(b) => b.append_value(parse_int(text, i64::MIN, i64::MAX, 64)?),
            Kind::Float32(b) => b.append_value(parse_float(text, false)? as f32),
            Kind::Float64(b) => b.append_value(parse_float(text, true)?),
            Kind::Bool(b) => b.append_value(parse_bool(text)?),
            Kind::Text(b, check) => match check {
                TextCheck::None => b.append_value(text),
                TextCheck::Uuid => {
                    let u =
                        uuid::Uuid::parse_str(text.trim()).map_err(|_| invalid("uuid", text))?;
                    b.append_value(u.hyphenated().to_string());
                }
                TextCheck::Json | TextCheck::Jsonb => {
                    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
                        return Err(invalid(
                            if *check == TextCheck::Json {
                                "json"
                            } else {
                                "jsonb"
                            },
                            text,
                        ));
                    }
                    b.append_value(text);
                }
            },
            Kind::Bytea(b) => match literal(text, &DataType::Binary, &self.zone) {
                Some(ScalarValue::Binary(Some(v))) => b.append_value(v),
                _ => return Err(invalid("bytea", text)),
            },
            Kind::Date(b) => match iso_date(text).or_else(|| {
                match literal(text, &DataType::Date32, &self.zone) {
                    Some(ScalarValue::Date32(d)) => d,
                    _ => None,
                }
            }) {
                Some(d) => b.append_value(d),
                None => return Err(datetime_input_error(text, &self.data_type).into()),
            },
            Kind::Decimal(b, p, s) => b.append_value(parse_numeric(text, *p, *s)?),
            Kind::Scalar(v) => match literal(text, &self.data_type, &self.zone) {
                Some(value) => v.push(value),
                None if matches!(self.data_type, DataType::List(_)) => {
                    return Err(PgError::new(
                        "22P02",
                        format!("malformed array literal: \"{text}\""),
                    ));
                }
                None => return Err(datetime_input_error(text, &self.data_type).into()),
            },
            Kind::Other(b) => b.append_value(text),
        }
        Ok(())
    }

    /// One field in binary format (PostgreSQL's send format of the column's type).
    pub fn push_binary(&mut self, bytes: &[u8]) -> Result<(), PgError> {
        fn fixed<const N: usize>(bytes: &[u8]) -> Result<[u8; N], PgError> {
            bytes.try_into().map_err(|_| binary_format())
        }
        match &mut self.kind {
            Kind::Int8(b) => {
                let v = i16::from_be_bytes(fixed(bytes)?);
                b.append_value(
                    i8::try_from(v).map_err(|_| out_of_range("smallint", &v.to_string()))?,
                )
            }
            Kind::Int16(b) => b.append_value(i16::from_be_bytes(fixed(bytes)?)),
            Kind::Int32(b) => b.append_value(i32::from_be_bytes(fixed(bytes)?)),
            Kind::Int64(b) => b.append_value(i64::from_be_bytes(fixed(bytes)?)),
            Kind::Float32(b) => b.append_value(f32::from_be_bytes(fixed(bytes)?)),
            Kind::Float64(b) => b.append_value(f64::from_be_bytes(fixed(bytes)?)),
            Kind::Bool(b) => b.append_value(fixed::<1>(bytes)?[0] != 0),
            Kind::Text(b, check) => match check {
                TextCheck::Uuid => {
                    let u = uuid::Uuid::from_bytes(fixed(bytes)?);
                    b.append_value(u.hyphenated().to_string());
                }
                TextCheck::Jsonb => {
                    let (version, text) = bytes.split_first().ok_or_else(binary_format)?;
                    if *version != 1 {
                        return Err(PgError::new(
                            "22P03",
                            format!("unsupported jsonb version number {version}"),
                        ));
                    }
                    let text = utf8(text)?;
                    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
                        return Err(invalid("jsonb", text));
                    }
                    b.append_value(text);
                }
                TextCheck::Json => {
                    let text = utf8(bytes)?;
                    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
                        return Err(invalid("json", text));
                    }
                    b.append_value(text);
                }
                TextCheck::None => b.append_value(utf8(bytes)?),
            },
            Kind::Bytea(b) => b.append_value(bytes),
            Kind::Date(b) => {
                let days = i32::from_be_bytes(fixed(bytes)?);
                let unix = days.checked_add(PG_EPOCH_DAYS).ok_or_else(|| {
                    PgError::new("22008", "date out of range (infinity is not supported)")
                })?;
                b.append_value(unix);
            }
            Kind::Decimal(b, p, s) => {
                let text = numeric_recv(bytes)?;
                b.append_value(parse_numeric(&text, *p, *s)?);
            }
            Kind::Scalar(v) => {
                let micros = i64::from_be_bytes(fixed(bytes)?);
                let value = match &self.data_type {
                    DataType::Timestamp(unit, tz) => {
                        let unix = micros
                            .checked_add(PG_EPOCH_MICROS)
                            .ok_or_else(|| PgError::new("22008", "timestamp out of range"))?;
                        let tz = tz.clone();
                        match unit {
                            TimeUnit::Second => {
                                ScalarValue::TimestampSecond(Some(unix.div_euclid(1_000_000)), tz)
                            }
                            TimeUnit::Millisecond => {
                                ScalarValue::TimestampMillisecond(Some(unix.div_euclid(1000)), tz)
                            }
                            TimeUnit::Microsecond => {
                                ScalarValue::TimestampMicrosecond(Some(unix), tz)
                            }
                            TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(
                                Some(unix.checked_mul(1000).ok_or_else(|| {
                                    PgError::new("22008", "timestamp out of range")
                                })?),
                                tz,
                            ),
                        }
                    }
                    DataType::Time32(TimeUnit::Second) => {
                        ScalarValue::Time32Second(Some((micros / 1_000_000) as i32))
                    }
                    DataType::Time32(_) => {
                        ScalarValue::Time32Millisecond(Some((micros / 1000) as i32))
                    }
                    DataType::Time64(TimeUnit::Nanosecond) => {
                        ScalarValue::Time64Nanosecond(Some(micros * 1000))
                    }
                    DataType::Time64(_) => ScalarValue::Time64Microsecond(Some(micros)),
                    _ => {
                        return Err(PgError::new(
                            "0A000",
                            format!(
                                "binary COPY FROM into column \"{}\" of this type is not \
                                 supported: use FORMAT text or csv",
                                self.name
                            ),
                        ));
                    }
                };
                v.push(value);
            }
            Kind::Other(_) => {
                return Err(PgError::new(
                    "0A000",
                    format!(
                        "binary COPY FROM into column \"{}\" of this type is not supported: use \
                         FORMAT text or csv",
                        self.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The column's values so far, as an array of the column's type; the reader starts over.
    pub fn finish(&mut self) -> Result<ArrayRef, PgError> {
        Ok(match &mut self.kind {
            Kind::Int8(b) => Arc::new(b.finish()),
            Kind::Int16(b) => Arc::new(b.finish()),
            Kind::Int32(b) => Arc::new(b.finish()),
            Kind::Int64(b) => Arc::new(b.finish()),
            Kind::Float32(b) => Arc::new(b.finish()),
            Kind::Float64(b) => Arc::new(b.finish()),
            Kind::Bool(b) => Arc::new(b.finish()),
            Kind::Text(b, _) => Arc::new(b.finish()),
            Kind::Bytea(b) => Arc::new(b.finish()),
            Kind::Date(b) => Arc::new(b.finish()),
            Kind::Decimal(b, p, s) => {
                let array = b.finish();
                *b = Decimal128Builder::new()
                    .with_precision_and_scale(*p, *s)
                    .expect("the table's decimal type");
                Arc::new(array)
            }
            Kind::Scalar(v) => {
                let values = std::mem::take(v);
                if values.is_empty() {
                    datafusion::arrow::array::new_empty_array(&self.data_type)
                } else {
                    let array = ScalarValue::iter_to_array(values)?;
                    if array.data_type() == &self.data_type {
                        array
                    } else {
                        datafusion::arrow::compute::cast(&array, &self.data_type)
                            .map_err(crate::query::QueryError::from)?
                    }
                }
            }
            Kind::Other(b) => {
                let text = b.finish();
                let options = CastOptions {
                    safe: false,
                    ..Default::default()
                };
                cast_with_options(&text, &self.data_type, &options)
                    .map_err(crate::query::QueryError::from)?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_postgres_reads_them() {
        assert_eq!(parse_int(" 42 ", -100, 100, 32).unwrap(), 42);
        assert_eq!(parse_int("+7", -100, 100, 32).unwrap(), 7);
        let e = parse_int("1.5", -100, 100, 32).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22P02", "invalid input syntax for type integer: \"1.5\"")
        );
        let e = parse_int("2147483648", i64::from(i32::MIN), i64::from(i32::MAX), 32).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                "22003",
                "value \"2147483648\" is out of range for type integer"
            )
        );
    }

    #[test]
    fn numerics_round_half_away_from_zero() {
        assert_eq!(parse_numeric("1.005", 10, 2).unwrap(), 101);
        assert_eq!(parse_numeric("-1.005", 10, 2).unwrap(), -101);
        assert_eq!(parse_numeric("1.004", 10, 2).unwrap(), 100);
        assert_eq!(parse_numeric(".5", 10, 0).unwrap(), 1);
        assert_eq!(parse_numeric("1.5e2", 10, 2).unwrap(), 15000);
        assert_eq!(parse_numeric("0", 10, 2).unwrap(), 0);
        assert_eq!(parse_numeric("12345678.994", 10, 2).unwrap(), 1234567899);
        let e = parse_numeric("123456789", 10, 2).unwrap_err();
        assert_eq!(e.code, "22003");
        assert_eq!(
            e.detail.as_deref(),
            Some(
                "A field with precision 10, scale 2 must round to an absolute value less than 10^8."
            )
        );
        assert_eq!(parse_numeric("abc", 10, 2).unwrap_err().code, "22P02");
        assert_eq!(parse_numeric(".", 10, 2).unwrap_err().code, "22P02");
    }

    #[test]
    fn binary_numerics() {
        // 12345.678: weight 1, digits 1 2345 6780, dscale 3.
        let mut b = Vec::new();
        for w in [3i16, 1, 0, 3, 1, 2345, 6780] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(numeric_recv(&b).unwrap(), "12345.67800");
        // -0.0005: weight -1, digit 5.
        let mut b = Vec::new();
        for w in [1i16, -1, 0x4000, 4, 5] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(
            parse_numeric(&numeric_recv(&b).unwrap(), 10, 4).unwrap(),
            -5
        );
    }

    #[test]
    fn booleans() {
        for t in ["t", "TRUE", " yes ", "on", "1", "y"] {
            assert!(parse_bool(t).unwrap(), "{t}");
        }
        for f in ["f", "false", "no", "off", "0", "of"] {
            assert!(!parse_bool(f).unwrap(), "{f}");
        }
        assert_eq!(parse_bool("o").unwrap_err().code, "22P02");
    }
}
