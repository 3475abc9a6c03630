//! Values formatted as PostgreSQL prints them, for the wire and for `::text` casts.
//!
//! - timestamps, times and dates: `2026-12-01 10:00:00` (fraction only when non-zero, trailing
//!   zeros dropped), `+00`/`+05:30` offsets for timestamptz, years past 9999 without a sign,
//!   `BC` years — over the whole range Paimon stores, not just the nanosecond range;
//! - floats: shortest round-trip digits, exponents as `1e+300`/`1e-05` past PostgreSQL's
//!   thresholds, `Infinity`, `NaN`, `-0`.

use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Float32Type, Float64Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use datafusion::error::{DataFusionError, Result};

use super::QueryError;

fn out_of_range(what: &str) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::DateTime {
        code: "22008",
        message: format!("{what} out of range"),
    }))
}

/// The PostgreSQL text of every value of a date/time or float column (other columns as is).
pub fn pg_text(array: &ArrayRef) -> Result<ArrayRef> {
    match array.data_type() {
        DataType::Float32 | DataType::Float64 => Ok(float_text_column(array)),
        DataType::Timestamp(..)
        | DataType::Date32
        | DataType::Date64
        | DataType::Time32(_)
        | DataType::Time64(_) => datetime_text(array),
        _ => Ok(Arc::clone(array)),
    }
}

/// Floats as PostgreSQL's text.
pub fn float_text_column(array: &ArrayRef) -> ArrayRef {
    text_column(array, |a, i| match a.data_type() {
        DataType::Float32 => float4_text(a.as_primitive::<Float32Type>().value(i)),
        _ => float8_text(a.as_primitive::<Float64Type>().value(i)),
    })
}

/// A text column of `f(array, row)` for each non-null row.
pub fn text_column(array: &ArrayRef, f: impl Fn(&ArrayRef, usize) -> String) -> ArrayRef {
    let mut out = StringBuilder::with_capacity(array.len(), array.len() * 16);
    for i in 0..array.len() {
        if array.is_null(i) {
            out.append_null();
        } else {
            out.append_value(f(array, i));
        }
    }
    Arc::new(out.finish())
}

/// PostgreSQL's `float8out` (shortest exact digits; exponent below 1e-4 and from 1e15).
pub fn float8_text(v: f64) -> String {
    float_text(
        v.is_nan(),
        v.is_infinite(),
        v.is_sign_negative(),
        v == 0.0,
        format!("{v:e}"),
        format!("{v}"),
        15,
    )
}

/// PostgreSQL's `float4out` (exponent below 1e-4 and from 1e6).
pub fn float4_text(v: f32) -> String {
    float_text(
        v.is_nan(),
        v.is_infinite(),
        v.is_sign_negative(),
        v == 0.0,
        format!("{v:e}"),
        format!("{v}"),
        6,
    )
}

fn float_text(
    nan: bool,
    infinite: bool,
    negative: bool,
    zero: bool,
    scientific: String,
    plain: String,
    max_exponent: i32,
) -> String {
    if nan {
        return "NaN".to_owned();
    }
    if infinite {
        return if negative { "-Infinity" } else { "Infinity" }.to_owned();
    }
    if zero {
        return if negative { "-0" } else { "0" }.to_owned();
    }
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= max_exponent {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        plain
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

/// A date as PostgreSQL prints it (ISO), and whether it is BC.
fn date_parts(d: &NaiveDate) -> (String, bool) {
    let y = d.year();
    let (year, bc) = if y <= 0 { (1 - y, true) } else { (y, false) };
    (format!("{year:04}-{:02}-{:02}", d.month(), d.day()), bc)
}

fn naive_text(t: &NaiveDateTime) -> (String, bool) {
    let (date, bc) = date_parts(&t.date());
    (
        format!(
            "{date} {:02}:{:02}:{:02}{}",
            t.hour(),
            t.minute(),
            t.second(),
            fraction(t.nanosecond())
        ),
        bc,
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

fn with_era(text: String, bc: bool) -> String {
    if bc { format!("{text} BC") } else { text }
}

/// Seconds and nanoseconds since the epoch of a timestamp value, without overflow.
fn timestamp_parts(array: &ArrayRef, unit: TimeUnit, i: usize) -> (i64, u32) {
    let split = |v: i64, per_second: i64, nanos_per: i64| {
        (
            v.div_euclid(per_second),
            (v.rem_euclid(per_second) * nanos_per) as u32,
        )
    };
    match unit {
        TimeUnit::Second => (array.as_primitive::<TimestampSecondType>().value(i), 0),
        TimeUnit::Millisecond => split(
            array.as_primitive::<TimestampMillisecondType>().value(i),
            1000,
            1_000_000,
        ),
        TimeUnit::Microsecond => split(
            array.as_primitive::<TimestampMicrosecondType>().value(i),
            1_000_000,
            1000,
        ),
        TimeUnit::Nanosecond => split(
            array.as_primitive::<TimestampNanosecondType>().value(i),
            1_000_000_000,
            1,
        ),
    }
}

pub fn datetime_text(array: &ArrayRef) -> Result<ArrayRef> {
    let timestamp_out_of_range = || out_of_range("timestamp");
    let mut out = StringBuilder::with_capacity(array.len(), array.len() * 26);
    match array.data_type() {
        DataType::Timestamp(unit, tz) => {
            let zone = match tz {
                Some(z) => Some(Tz::from_str(z)?),
                None => None,
            };
            for i in 0..array.len() {
                if array.is_null(i) {
                    out.append_null();
                    continue;
                }
                let (secs, nanos) = timestamp_parts(array, *unit, i);
                let utc =
                    DateTime::from_timestamp(secs, nanos).ok_or_else(timestamp_out_of_range)?;
                match &zone {
                    None => {
                        let (text, bc) = naive_text(&utc.naive_utc());
                        out.append_value(with_era(text, bc));
                    }
                    Some(z) => {
                        let local = z.from_utc_datetime(&utc.naive_utc());
                        let offset = local.offset().fix().local_minus_utc();
                        let (text, bc) = naive_text(&local.naive_local());
                        out.append_value(with_era(format!("{text}{}", offset_text(offset)), bc));
                    }
                }
            }
        }
        DataType::Date32 | DataType::Date64 => {
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch");
            for i in 0..array.len() {
                if array.is_null(i) {
                    out.append_null();
                    continue;
                }
                let days = match array.data_type() {
                    DataType::Date32 => array.as_primitive::<Date32Type>().value(i) as i64,
                    _ => array
                        .as_primitive::<Date64Type>()
                        .value(i)
                        .div_euclid(86_400_000),
                };
                let d = epoch
                    .checked_add_signed(chrono::Duration::days(days))
                    .ok_or_else(|| out_of_range("date"))?;
                let (text, bc) = date_parts(&d);
                out.append_value(with_era(text, bc));
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
    use datafusion::arrow::array::{
        Date32Array, Time32MillisecondArray, TimestampMicrosecondArray,
    };

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

    #[test]
    fn far_dates_do_not_overflow() {
        // 9999-12-31 23:59:59.999999 and 0001-01-01: outside nanosecond range.
        let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            253_402_300_799_999_999,
            -62_135_596_800_000_000,
        ]));
        assert_eq!(
            texts(a),
            [
                Some("9999-12-31 23:59:59.999999".to_owned()),
                Some("0001-01-01 00:00:00".to_owned())
            ]
        );
        let d: ArrayRef = Arc::new(Date32Array::from(vec![2_932_897, -719_163]));
        assert_eq!(
            texts(d),
            [
                Some("10000-01-01".to_owned()),
                Some("0001-12-31 BC".to_owned())
            ]
        );
    }

    #[test]
    fn floats_print_like_postgres() {
        for (v, text) in [
            (1e300, "1e+300"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (2.0, "2"),
            (-0.0, "-0"),
            (1.5e6, "1500000"),
            (1e15, "1e+15"),
            (123456789012345.0, "123456789012345"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            assert_eq!(float8_text(v), text, "{v}");
        }
        assert_eq!(float4_text(3.4028235e38), "3.4028235e+38");
        assert_eq!(float4_text(100000000.0), "1e+08");
        assert_eq!(float4_text(1.25), "1.25");
    }
}

/// `pg_text(x)`: `x::text` as PostgreSQL writes it; what a cast to text of a date/time or
/// float value becomes (see `pg_literals`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgTextFn {
    signature: datafusion::logical_expr::Signature,
}

impl Default for PgTextFn {
    fn default() -> Self {
        Self {
            signature: datafusion::logical_expr::Signature::any(
                1,
                datafusion::logical_expr::Volatility::Immutable,
            ),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for PgTextFn {
    fn name(&self) -> &str {
        "pg_text"
    }
    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::logical_expr::ColumnarValue;
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let array = args
            .args
            .into_iter()
            .next()
            .expect("one argument")
            .into_array(1)?;
        let text = pg_text(&array)?;
        let text = if text.data_type() == &DataType::Utf8 {
            text
        } else {
            datafusion::arrow::compute::cast(&text, &DataType::Utf8)?
        };
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::scalar::ScalarValue::try_from_array(&text, 0)?)
        } else {
            ColumnarValue::Array(text)
        })
    }
}
