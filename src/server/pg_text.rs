//! Column values whose wire form the generic Arrow encoder gets wrong for PostgreSQL clients.
//!
//! Text format: PostgreSQL prints `2026-12-01 10:00:00` (the fraction only when non-zero, with
//! trailing zeros dropped) and `...+00` offsets for timestamptz; pgwire always prints six
//! fraction digits. Such columns are rendered here as text first. Binary format: `uuid` is 16
//! bytes and `jsonb` a version byte plus the text, while tarn stores both as strings.
//! The reported type (OID) of each column is decided in [`pg_field_type`].

use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime, Offset, TimeZone, Timelike};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, FixedSizeBinaryBuilder, StringBuilder,
};
use datafusion::arrow::datatypes::{
    DataType, Field, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use pgwire::api::Type;
use pgwire::api::results::FieldFormat;

use super::error::PgError;
use crate::query::pg_types::{PG_TYPE_KEY, pg_type_of};

/// The PostgreSQL type to report for `field`, when tarn knows better than its Arrow type.
pub fn pg_field_type(field: &Field) -> Option<Type> {
    Some(match field.metadata().get(PG_TYPE_KEY)?.as_str() {
        "varchar" => Type::VARCHAR,
        "bpchar" => Type::BPCHAR,
        "uuid" => Type::UUID,
        "json" => Type::JSON,
        "jsonb" => Type::JSONB,
        _ => return None,
    })
}

/// How one output column must be converted before the generic encoder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    None,
    /// Date/time values as PostgreSQL's text.
    DateTimeText,
    /// A uuid string as 16 bytes (binary format).
    UuidBinary,
    /// A jsonb string as version byte 1 + text (binary format).
    JsonbBinary,
}

/// The conversion `field` needs in `format`.
pub fn conversion(field: &Field, format: FieldFormat) -> Conversion {
    match (format, field.data_type(), pg_type_of(field)) {
        (
            FieldFormat::Text,
            DataType::Timestamp(..) | DataType::Time32(_) | DataType::Time64(_),
            _,
        ) => Conversion::DateTimeText,
        (FieldFormat::Binary, DataType::Utf8, Some("uuid")) => Conversion::UuidBinary,
        (FieldFormat::Binary, DataType::Utf8, Some("jsonb")) => Conversion::JsonbBinary,
        _ => Conversion::None,
    }
}

/// Applies `conversion` to one column.
pub fn convert(array: &ArrayRef, conversion: Conversion) -> Result<ArrayRef, PgError> {
    match conversion {
        Conversion::None => Ok(Arc::clone(array)),
        Conversion::DateTimeText => datetime_text(array),
        Conversion::UuidBinary => {
            let strings = array.as_string::<i32>();
            let mut out = FixedSizeBinaryBuilder::with_capacity(strings.len(), 16);
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
                        out.append_value(id.as_bytes()).map_err(PgError::internal)?;
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

/// `.123` for 123 000 000 ns; nothing for 0 (PostgreSQL drops trailing zeros).
fn fraction(nanos: u32) -> String {
    let micros = nanos / 1000;
    if micros == 0 {
        return String::new();
    }
    let text = format!(".{micros:06}");
    text.trim_end_matches('0').to_owned()
}

fn naive_text(t: &NaiveDateTime) -> String {
    format!(
        "{}{}",
        t.format("%Y-%m-%d %H:%M:%S"),
        fraction(t.nanosecond())
    )
}

fn offset_text(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.abs();
    let (h, m, sec) = (s / 3600, (s / 60) % 60, s % 60);
    match (m, sec) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{sec:02}"),
    }
}

fn datetime_text(array: &ArrayRef) -> Result<ArrayRef, PgError> {
    let mut out = StringBuilder::with_capacity(array.len(), array.len() * 26);
    match array.data_type() {
        DataType::Timestamp(unit, tz) => {
            let zone = match tz {
                Some(z) => Some(Tz::from_str(z).map_err(PgError::internal)?),
                None => None,
            };
            for i in 0..array.len() {
                if array.is_null(i) {
                    out.append_null();
                    continue;
                }
                let nanos: i64 = match unit {
                    TimeUnit::Second => {
                        array.as_primitive::<TimestampSecondType>().value(i) * 1_000_000_000
                    }
                    TimeUnit::Millisecond => {
                        array.as_primitive::<TimestampMillisecondType>().value(i) * 1_000_000
                    }
                    TimeUnit::Microsecond => {
                        array.as_primitive::<TimestampMicrosecondType>().value(i) * 1000
                    }
                    TimeUnit::Nanosecond => {
                        array.as_primitive::<TimestampNanosecondType>().value(i)
                    }
                };
                let utc = DateTime::from_timestamp_nanos(nanos);
                match &zone {
                    None => out.append_value(naive_text(&utc.naive_utc())),
                    Some(z) => {
                        let local = z.from_utc_datetime(&utc.naive_utc());
                        let offset = local.offset().fix().local_minus_utc();
                        out.append_value(format!(
                            "{}{}",
                            naive_text(&local.naive_local()),
                            offset_text(offset)
                        ));
                    }
                }
            }
        }
        DataType::Time32(_) | DataType::Time64(_) => {
            for i in 0..array.len() {
                if array.is_null(i) {
                    out.append_null();
                    continue;
                }
                let nanos: i64 = match array.data_type() {
                    DataType::Time32(TimeUnit::Second) => {
                        array.as_primitive::<Time32SecondType>().value(i) as i64 * 1_000_000_000
                    }
                    DataType::Time32(_) => {
                        array.as_primitive::<Time32MillisecondType>().value(i) as i64 * 1_000_000
                    }
                    DataType::Time64(TimeUnit::Microsecond) => {
                        array.as_primitive::<Time64MicrosecondType>().value(i) * 1000
                    }
                    _ => array.as_primitive::<Time64NanosecondType>().value(i),
                };
                let secs = nanos.div_euclid(1_000_000_000);
                let frac = nanos.rem_euclid(1_000_000_000) as u32;
                out.append_value(format!(
                    "{:02}:{:02}:{:02}{}",
                    secs / 3600,
                    (secs / 60) % 60,
                    secs % 60,
                    fraction(frac)
                ));
            }
        }
        _ => return Ok(Arc::clone(array)),
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Time32MillisecondArray, TimestampMicrosecondArray};

    fn texts(a: ArrayRef) -> Vec<Option<String>> {
        let out = datetime_text(&a).unwrap();
        out.as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_owned))
            .collect()
    }

    #[test]
    fn timestamps_print_like_postgres() {
        let base = 1_796_119_200_000_000;
        let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(base),
            Some(base + 500_000),
            Some(base + 123_456),
            None,
        ]));
        assert_eq!(
            texts(a),
            [
                Some("2026-12-01 10:00:00".to_owned()),
                Some("2026-12-01 10:00:00.5".to_owned()),
                Some("2026-12-01 10:00:00.123456".to_owned()),
                None
            ]
        );
        let a: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![base]).with_timezone("Asia/Kolkata"));
        assert_eq!(texts(a), [Some("2026-12-01 15:30:00+05:30".to_owned())]);
        let a: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![base]).with_timezone("UTC"));
        assert_eq!(texts(a), [Some("2026-12-01 10:00:00+00".to_owned())]);
        let t: ArrayRef = Arc::new(Time32MillisecondArray::from(vec![37_800_250]));
        assert_eq!(texts(t), [Some("10:30:00.25".to_owned())]);
    }
}
