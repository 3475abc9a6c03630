//! Column values whose wire form the generic Arrow encoder gets wrong for PostgreSQL clients.
//!
//! Text format — rendered here the way PostgreSQL prints them:
//! - timestamps, times and dates: `2026-12-01 10:00:00` (fraction only when non-zero, trailing
//!   zeros dropped), `+00`/`+05:30` offsets for timestamptz, years past 9999 without a sign,
//!   `BC` years — over the whole range Paimon stores, not just the nanosecond range;
//! - floats: shortest round-trip digits, exponents as `1e+300`/`1e-05` past PostgreSQL's
//!   thresholds, `Infinity`, `NaN`, `-0`;
//! - numerics: exact digits for all 38 (the generic encoder overflows past 28).
//!
//! Binary format — PostgreSQL's encodings: numeric as base-10000 digits, `uuid` as 16 bytes,
//! `jsonb` as a version byte plus the text, `"char"`-sized TINYINT widened to int2.
//! The reported type (OID) of hinted columns is decided in [`pg_field_type`].

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, Int16Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, Int8Type};
use pgwire::api::Type;
use pgwire::api::results::FieldFormat;

use super::error::PgError;
use crate::query::pg_format;
use crate::query::pg_types::{PG_TYPE_KEY, pg_type_of};
use crate::storage::spec::datum::decimal_text;

/// The PostgreSQL type to report for `field`, when tarn knows better than its Arrow type.
pub fn pg_field_type(field: &Field) -> Option<Type> {
    Some(match field.metadata().get(PG_TYPE_KEY)?.as_str() {
        "varchar" => Type::VARCHAR,
        "bpchar" => Type::BPCHAR,
        "uuid" => Type::UUID,
        "json" => Type::JSON,
        "jsonb" => Type::JSONB,
        "numeric" => Type::NUMERIC,
        _ => return None,
    })
}

/// How one output column must be converted before the generic encoder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    None,
    /// Date/time values as PostgreSQL's text.
    DateTimeText,
    /// Floats as PostgreSQL's text.
    FloatText,
    /// Numerics as exact text.
    NumericText,
    /// Numerics in PostgreSQL's binary form.
    NumericBinary,
    /// Numeric text (a `Utf8` column tagged `numeric`) in PostgreSQL's binary form.
    NumericTextBinary,
    /// A uuid string as 16 bytes (binary format).
    UuidBinary,
    /// A jsonb string as version byte 1 + text (binary format).
    JsonbBinary,
    /// A list of lists as PostgreSQL's multidimensional array text (`nested_arrays.rs`).
    NestedArrayText,
    /// TINYINT widened to the int2 it is reported as.
    WidenInt8,
    /// Intervals (and durations) as PostgreSQL's text: arrow-pg prints NULL intervals as
    /// `00:00:00` and keeps six fraction digits.
    IntervalText,
}

/// The conversion `field` needs in `format`.
pub fn conversion(field: &Field, format: FieldFormat) -> Conversion {
    use DataType as D;
    match (format, field.data_type(), pg_type_of(field)) {
        (_, D::Int8, _) => Conversion::WidenInt8,
        (FieldFormat::Text, t, _) if super::nested_arrays::is_nested(t) => {
            Conversion::NestedArrayText
        }
        (
            FieldFormat::Text,
            D::Timestamp(..) | D::Time32(_) | D::Time64(_) | D::Date32 | D::Date64,
            _,
        ) => Conversion::DateTimeText,
        (FieldFormat::Text, D::Float32 | D::Float64, _) => Conversion::FloatText,
        (FieldFormat::Text, D::Interval(_) | D::Duration(_), _) => Conversion::IntervalText,
        (FieldFormat::Text, D::Decimal128(..), _) => Conversion::NumericText,
        (FieldFormat::Binary, D::Decimal128(..), _) => Conversion::NumericBinary,
        (FieldFormat::Binary, D::Utf8, Some("uuid")) => Conversion::UuidBinary,
        (FieldFormat::Binary, D::Utf8, Some("numeric")) => Conversion::NumericTextBinary,
        (FieldFormat::Binary, D::Utf8, Some("jsonb")) => Conversion::JsonbBinary,
        _ => Conversion::None,
    }
}

/// Applies `conversion` to one column.
pub fn convert(array: &ArrayRef, conversion: Conversion) -> Result<ArrayRef, PgError> {
    match conversion {
        Conversion::None => Ok(Arc::clone(array)),
        Conversion::NestedArrayText => super::nested_arrays::text(array),
        Conversion::DateTimeText => Ok(pg_format::datetime_text(array)?),
        Conversion::FloatText => Ok(pg_format::float_text_column(array)),
        Conversion::IntervalText => {
            let mdn = DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano);
            let values = match array.data_type() {
                DataType::Duration(_) => datafusion::arrow::compute::cast(
                    array,
                    &DataType::Duration(datafusion::arrow::datatypes::TimeUnit::Nanosecond),
                )
                .map(|d| {
                    let d =
                        d.as_primitive::<datafusion::arrow::datatypes::DurationNanosecondType>();
                    Arc::new(
                        d.iter()
                            .map(|v| {
                                v.map(|v| {
                                    datafusion::arrow::datatypes::IntervalMonthDayNano::new(0, 0, v)
                                })
                            })
                            .collect::<datafusion::arrow::array::IntervalMonthDayNanoArray>(),
                    ) as ArrayRef
                }),
                _ => datafusion::arrow::compute::cast(array, &mdn),
            }
            .map_err(PgError::internal)?;
            Ok(pg_format::text_column(&values, |a, i| {
                let v = a
                    .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>()
                    .value(i);
                interval_text(v.months, v.days, v.nanoseconds / 1000)
            }))
        }
        Conversion::NumericText => {
            let DataType::Decimal128(_, scale) = array.data_type() else {
                return Ok(Arc::clone(array));
            };
            let scale = (*scale).max(0) as u8;
            Ok(pg_format::text_column(array, |a, i| {
                decimal_text(a.as_primitive::<Decimal128Type>().value(i), scale)
            }))
        }
        Conversion::NumericBinary => {
            let DataType::Decimal128(_, scale) = array.data_type() else {
                return Ok(Arc::clone(array));
            };
            let scale = (*scale).max(0) as u8;
            let values = array.as_primitive::<Decimal128Type>();
            let mut out = BinaryBuilder::with_capacity(values.len(), values.len() * 16);
            for v in values.iter() {
                match v {
                    None => out.append_null(),
                    Some(v) => out.append_value(numeric_binary(v, scale)),
                }
            }
            Ok(Arc::new(out.finish()))
        }
        Conversion::NumericTextBinary => {
            let strings = array.as_string::<i32>();
            let mut out = BinaryBuilder::with_capacity(strings.len(), strings.len() * 16);
            for v in strings.iter() {
                match v {
                    None => out.append_null(),
                    Some(text) => {
                        let negative = text.starts_with('-');
                        let body = text.trim_start_matches('-');
                        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
                        out.append_value(numeric_binary_digits(negative, int, frac));
                    }
                }
            }
            Ok(Arc::new(out.finish()))
        }
        Conversion::WidenInt8 => Ok(Arc::new(Int16Array::from_iter(
            array
                .as_primitive::<Int8Type>()
                .iter()
                .map(|v| v.map(i16::from)),
        ))),
        Conversion::UuidBinary => {
            let strings = array.as_string::<i32>();
            let mut out = BinaryBuilder::with_capacity(strings.len(), strings.len() * 16);
            for v in strings.iter() {
                match v {
                    None => out.append_null(),
                    Some(s) => {
                        let id = uuid::Uuid::parse_str(s).map_err(|_| {
                            PgError::new(
                                "22P02",
                                format!("invalid input syntax for type uuid: \"{s}\""),
                            )
                        })?;
                        out.append_value(id.as_bytes());
                    }
                }
            }
            Ok(Arc::new(out.finish()))
        }
        Conversion::JsonbBinary => {
            let strings = array.as_string::<i32>();
            let mut out = BinaryBuilder::with_capacity(
                strings.len(),
                strings.value_data().len() + strings.len(),
            );
            for v in strings.iter() {
                match v {
                    None => out.append_null(),
                    Some(s) => {
                        let mut bytes = Vec::with_capacity(s.len() + 1);
                        bytes.push(1u8);
                        bytes.extend_from_slice(s.as_bytes());
                        out.append_value(bytes);
                    }
                }
            }
            Ok(Arc::new(out.finish()))
        }
    }
}

/// PostgreSQL's binary numeric: digit count, weight, sign, display scale, base-10000 digits.
pub fn numeric_binary(unscaled: i128, scale: u8) -> Vec<u8> {
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let (int_part, frac_part) = if digits.len() > scale {
        (
            digits[..digits.len() - scale].to_owned(),
            digits[digits.len() - scale..].to_owned(),
        )
    } else {
        (
            String::new(),
            format!("{}{digits}", "0".repeat(scale - digits.len())),
        )
    };
    numeric_binary_digits(unscaled < 0, &int_part, &frac_part)
}

/// PostgreSQL's binary numeric of the decimal digits `int_part`.`frac_part` (display scale:
/// the length of `frac_part`).
pub fn numeric_binary_digits(negative: bool, int_part: &str, frac_part: &str) -> Vec<u8> {
    let scale = frac_part.len();
    let mut groups: Vec<i16> = Vec::new();
    let int_padded = format!("{}{int_part}", "0".repeat((4 - int_part.len() % 4) % 4));
    for chunk in int_padded.as_bytes().chunks(4) {
        groups.push(
            std::str::from_utf8(chunk)
                .unwrap_or("0")
                .parse()
                .unwrap_or(0),
        );
    }
    let int_groups = groups.len() as i16;
    let frac_padded = format!("{frac_part}{}", "0".repeat((4 - frac_part.len() % 4) % 4));
    for chunk in frac_padded.as_bytes().chunks(4) {
        groups.push(
            std::str::from_utf8(chunk)
                .unwrap_or("0")
                .parse()
                .unwrap_or(0),
        );
    }
    let mut weight = int_groups - 1;
    let mut start = 0;
    while start < groups.len() && groups[start] == 0 {
        start += 1;
        weight -= 1;
    }
    let mut end = groups.len();
    while end > start && groups[end - 1] == 0 {
        end -= 1;
    }
    let groups = &groups[start..end];
    let (weight, sign) = if groups.is_empty() {
        (0, 0u16)
    } else if negative {
        (weight, 0x4000u16)
    } else {
        (weight, 0u16)
    };
    let mut out = Vec::with_capacity(8 + 2 * groups.len());
    out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_in_binary() {
        // 12.50: ndigits 2, weight 0, sign +, dscale 2, digits 12 5000.
        assert_eq!(
            numeric_binary(1250, 2),
            [0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 0x13, 0x88]
        );
        // -0.05: one digit 500 at weight -1.
        assert_eq!(
            numeric_binary(-5, 2),
            [0, 1, 0xff, 0xff, 0x40, 0, 0, 2, 0x01, 0xf4]
        );
        // 0 with scale 3.
        assert_eq!(numeric_binary(0, 3), [0, 0, 0, 0, 0, 0, 0, 3]);
        // 10000: one digit 1 at weight 1.
        assert_eq!(numeric_binary(10000, 0), [0, 1, 0, 1, 0, 0, 0, 0, 0, 1]);
    }
}

/// An interval as PostgreSQL prints it with `IntervalStyle = postgres`
/// (`1 year 2 mons -3 days +04:05:06.5`).
pub fn interval_text(months: i32, days: i32, micros: i64) -> String {
    let mut out = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    let mut part = |value: i64, unit: &str, out: &mut String| {
        if value == 0 {
            return;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let sign = if is_before && value > 0 { "+" } else { "" };
        let plural = if value != 1 { "s" } else { "" };
        out.push_str(&format!("{sign}{value} {unit}{plural}"));
        is_before = value < 0;
        is_zero = false;
    };
    part(i64::from(months / 12), "year", &mut out);
    part(i64::from(months % 12), "mon", &mut out);
    part(i64::from(days), "day", &mut out);
    let hour = micros / 3_600_000_000;
    let min = (micros / 60_000_000) % 60;
    let sec = (micros / 1_000_000) % 60;
    let frac = micros % 1_000_000;
    if is_zero || micros != 0 {
        let minus = micros < 0;
        if !out.is_empty() {
            out.push(' ');
        }
        let sign = if minus {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        out.push_str(&format!(
            "{sign}{:02}:{:02}:{:02}",
            hour.abs(),
            min.abs(),
            sec.abs()
        ));
        if frac != 0 {
            let f = format!("{:06}", frac.abs());
            out.push('.');
            out.push_str(f.trim_end_matches('0'));
        }
    }
    out
}

#[cfg(test)]
mod interval_text_tests {
    use super::interval_text;

    #[test]
    fn prints_like_postgres() {
        let h = 3_600_000_000;
        assert_eq!(interval_text(0, 0, 0), "00:00:00");
        assert_eq!(
            interval_text(1, 0, 21 * h + 29 * 60_000_000 + 44_500_000),
            "1 mon 21:29:44.5"
        );
        assert_eq!(
            interval_text(-(43 * 12 + 9), -27, 0),
            "-43 years -9 mons -27 days"
        );
        assert_eq!(interval_text(0, -1, -(h + h / 2)), "-1 days -01:30:00");
        assert_eq!(interval_text(14, 1, 0), "1 year 2 mons 1 day");
        assert_eq!(interval_text(0, -1, h), "-1 days +01:00:00");
    }
}
