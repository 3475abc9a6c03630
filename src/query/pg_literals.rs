//! Date, time and bytea literals read the way PostgreSQL reads them.
//!
//! Arrow's string-to-timestamp cast refuses inputs PostgreSQL takes every day
//! (`'2026-12-01 10:00'` without seconds, `'2026-12-01 10:00:00+02'`), and reads a zone-less
//! `timestamptz` literal as UTC rather than in the session's TimeZone. This analyzer rule folds
//! `CAST('<text>' AS date|time|timestamp[tz])` — which is what INSERT ... VALUES, comparisons and
//! `'...'::timestamp` become after type coercion — into a typed literal parsed PostgreSQL's way.
//! Text it does not recognise is left to Arrow's cast (and its error).

use std::str::FromStr;
use std::sync::Arc;

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::logical_expr::{Cast, Expr, LogicalPlan, TryCast};
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;

/// Folds casts of text literals to date/time types (see the module docs).
#[derive(Debug, Default)]
pub struct PgDateTimeLiterals;

impl AnalyzerRule for PgDateTimeLiterals {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let zone = config
            .execution
            .time_zone
            .clone()
            .unwrap_or_else(|| "UTC".to_owned());
        plan.transform_up_with_subqueries(|p| {
            let inputs: Vec<datafusion::common::DFSchemaRef> =
                p.inputs().iter().map(|i| Arc::clone(i.schema())).collect();
            p.map_expressions(|e| {
                e.transform_up(|e| {
                    let e = fold(e, &zone)?;
                    if e.transformed {
                        return Ok(e);
                    }
                    let e = normalize_uuid_comparison(e.data, &inputs)?;
                    if e.transformed {
                        return Ok(e);
                    }
                    cast_to_text(e.data, &inputs)
                })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pg_datetime_literals"
    }
}

fn fold(expr: Expr, zone: &str) -> Result<Transformed<Expr>> {
    let (inner, target, strict) = match &expr {
        Expr::Cast(Cast { expr, field }) => (expr.as_ref(), field.data_type(), true),
        Expr::TryCast(TryCast { expr, field }) => (expr.as_ref(), field.data_type(), false),
        _ => return Ok(Transformed::no(expr)),
    };
    let text = match inner {
        Expr::Literal(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
            _,
        ) => s,
        _ => return Ok(Transformed::no(expr)),
    };
    match literal(text, target, zone) {
        Some(value) => Ok(Transformed::yes(Expr::Literal(value, None))),
        None if strict && matches!(target, DataType::Date32 | DataType::Timestamp(..)) => {
            Err(datetime_error(text, target))
        }
        // `'25:00'::time`: the shape of a time with a field out of range (other text is left
        // to Arrow's parser, which reads more spellings).
        None if strict
            && matches!(target, DataType::Time32(_) | DataType::Time64(_))
            && time_shaped(text.trim()) =>
        {
            Err(datetime_error(text, target))
        }
        // `'{1,2'::int[]`: PostgreSQL's array input refuses what Arrow's cast would wrap.
        None if strict && matches!(target, DataType::List(_)) => Err(array_error(text, target)),
        None => Ok(Transformed::no(expr)),
    }
}

/// PostgreSQL's error for `text` that is no array of `target` (a list type): 22P02, naming the
/// malformed literal or the first element that is no value of the element type.
fn array_error(text: &str, target: &DataType) -> datafusion::error::DataFusionError {
    let message = match (array_items(text), target) {
        (Some(items), DataType::List(element)) => {
            let ty = element.data_type();
            let reads = |v: &str| {
                literal(v, ty, "UTC").is_some()
                    || ScalarValue::Utf8(Some(v.to_owned()))
                        .cast_to_with_options(
                            ty,
                            &datafusion::arrow::compute::CastOptions {
                                safe: false,
                                ..Default::default()
                            },
                        )
                        .is_ok()
            };
            let bad = items
                .into_iter()
                .flatten()
                .find(|v| !reads(v))
                .unwrap_or_default();
            let field = datafusion::arrow::datatypes::Field::new("", ty.clone(), true);
            format!(
                "invalid input syntax for type {}: \"{bad}\"",
                super::pg_typeof::pg_type_name(&field)
            )
        }
        _ => format!("malformed array literal: \"{text}\""),
    };
    datafusion::error::DataFusionError::External(Box::new(super::QueryError::Sql {
        code: "22P02",
        message,
    }))
}

/// `x::text` of a date/time or float value: PostgreSQL's text (`2026-12-01 10:00:00+00`,
/// `Infinity`), not Arrow's (`2026-12-01T10:00:00Z`, `inf`).
fn cast_to_text(
    expr: Expr,
    schemas: &[datafusion::common::DFSchemaRef],
) -> Result<Transformed<Expr>> {
    use datafusion::logical_expr::ExprSchemable;
    let Expr::Cast(Cast { expr: inner, field }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if !matches!(
        field.data_type(),
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    ) {
        return Ok(Transformed::no(expr));
    }
    let Some(source) = schemas
        .iter()
        .find_map(|s| inner.get_type(s.as_ref()).ok())
        .or_else(|| inner.get_type(&datafusion::common::DFSchema::empty()).ok())
    else {
        return Ok(Transformed::no(expr));
    };
    if !matches!(
        source,
        DataType::Float32
            | DataType::Float64
            | DataType::Timestamp(..)
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
    ) {
        return Ok(Transformed::no(expr));
    }
    let udf =
        datafusion::logical_expr::ScalarUDF::new_from_impl(super::pg_format::PgTextFn::default());
    let call = udf.call(vec![inner.as_ref().clone()]);
    Ok(Transformed::yes(if field.data_type() == &DataType::Utf8 {
        call
    } else {
        Expr::Cast(Cast::new(Box::new(call), field.data_type().clone()))
    }))
}

/// `uuid_column = 'A0EEBC99-...'`: PostgreSQL reads the text as a uuid, so any spelling of the
/// same uuid matches. tarn stores uuids canonically (lower case, hyphenated); the literal is
/// brought to that form (and refused with 22P02 if it is no uuid).
fn normalize_uuid_comparison(
    expr: Expr,
    schemas: &[datafusion::common::DFSchemaRef],
) -> Result<Transformed<Expr>> {
    use datafusion::logical_expr::{BinaryExpr, expr::InList};
    let is_uuid = |e: &Expr| match e {
        Expr::Column(c) => schemas.iter().any(|s| {
            s.qualified_field_from_column(c)
                .is_ok_and(|(_, f)| super::pg_types::pg_type_of(f) == Some("uuid"))
        }),
        _ => false,
    };
    let canonical = |e: &Expr| -> Result<Option<Expr>> {
        match e {
            Expr::Literal(ScalarValue::Utf8(Some(s)), meta) => {
                let id = uuid::Uuid::parse_str(s.trim()).map_err(|_| {
                    datafusion::error::DataFusionError::External(Box::new(
                        super::QueryError::InvalidText {
                            type_name: "uuid".to_owned(),
                            value: s.clone(),
                        },
                    ))
                })?;
                Ok(Some(Expr::Literal(
                    ScalarValue::Utf8(Some(id.hyphenated().to_string())),
                    meta.clone(),
                )))
            }
            _ => Ok(None),
        }
    };
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(
                op,
                datafusion::logical_expr::Operator::Eq
                    | datafusion::logical_expr::Operator::NotEq
                    | datafusion::logical_expr::Operator::Lt
                    | datafusion::logical_expr::Operator::LtEq
                    | datafusion::logical_expr::Operator::Gt
                    | datafusion::logical_expr::Operator::GtEq
            ) =>
        {
            if is_uuid(&left)
                && let Some(lit) = canonical(&right)?
            {
                return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                    left,
                    op,
                    Box::new(lit),
                ))));
            }
            if is_uuid(&right)
                && let Some(lit) = canonical(&left)?
            {
                return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(lit),
                    op,
                    right,
                ))));
            }
            Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                left,
                op,
                right,
            })))
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) if is_uuid(&expr) => {
            let mut changed = false;
            let mut out = Vec::with_capacity(list.len());
            for item in list {
                match canonical(&item)? {
                    Some(lit) => {
                        changed = true;
                        out.push(lit);
                    }
                    None => out.push(item),
                }
            }
            let e = Expr::InList(InList {
                expr,
                list: out,
                negated,
            });
            Ok(if changed {
                Transformed::yes(e)
            } else {
                Transformed::no(e)
            })
        }
        other => Ok(Transformed::no(other)),
    }
}

/// PostgreSQL's error for date/timestamp text that does not read: 22008 when it has the shape
/// of a date but a field is out of range (`2023-02-30`), 22007 otherwise.
fn datetime_error(text: &str, target: &DataType) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::External(Box::new(datetime_input_error(text, target)))
}

/// [`datetime_error`]'s error itself (COPY FROM reports it with the line and column).
pub fn datetime_input_error(text: &str, target: &DataType) -> super::QueryError {
    let type_name = match target {
        DataType::Date32 => "date",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Time32(_) | DataType::Time64(_) => "time",
        _ => "timestamp without time zone",
    };
    let t = text.trim();
    let date_shaped = t.len() >= 8
        && t[..t.find([' ', 'T', 't']).unwrap_or(t.len())]
            .split('-')
            .filter(|p| !p.is_empty())
            .all(|p| p.chars().all(|c| c.is_ascii_digit()))
        && t.matches('-').count() >= 2;
    let time_target = matches!(target, DataType::Time32(_) | DataType::Time64(_));
    if date_shaped || (time_target && time_shaped(t)) {
        super::QueryError::DateTime {
            code: "22008",
            message: format!("date/time field value out of range: \"{text}\""),
        }
    } else {
        super::QueryError::DateTime {
            code: "22007",
            message: format!("invalid input syntax for type {type_name}: \"{text}\""),
        }
    }
}

/// `text` as a value of `target`, read as PostgreSQL reads date/time and bytea input.
pub fn literal(text: &str, target: &DataType, zone: &str) -> Option<ScalarValue> {
    Some(match target {
        DataType::Binary => ScalarValue::Binary(Some(bytea(text)?)),
        DataType::LargeBinary => ScalarValue::LargeBinary(Some(bytea(text)?)),
        DataType::BinaryView => ScalarValue::BinaryView(Some(bytea(text)?)),
        DataType::List(element) => {
            let items = array_items(text)?;
            let values: Vec<ScalarValue> = items
                .iter()
                .map(|item| match item {
                    None => ScalarValue::try_from(element.data_type()).ok(),
                    Some(v) => literal(v, element.data_type(), zone).or_else(|| {
                        let text = ScalarValue::Utf8(Some(v.clone()));
                        let options = datafusion::arrow::compute::CastOptions {
                            safe: false,
                            ..Default::default()
                        };
                        text.cast_to_with_options(element.data_type(), &options)
                            .ok()
                    }),
                })
                .collect::<Option<_>>()?;
            let list = ScalarValue::new_list_nullable(&values, element.data_type());
            let list = datafusion::arrow::compute::cast(list.as_ref(), target).ok()?;
            ScalarValue::try_from_array(&list, 0).ok()?
        }
        DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano) => {
            ScalarValue::IntervalMonthDayNano(Some(iso8601_interval(text)?))
        }
        DataType::Date32 => {
            let (date, _, _) = parse_timestamp(text)?;
            ScalarValue::Date32(Some(
                (date.date() - NaiveDate::from_ymd_opt(1970, 1, 1)?).num_days() as i32,
            ))
        }
        DataType::Time32(unit) | DataType::Time64(unit) => {
            let t = parse_time(text.trim())?;
            let nanos = t.signed_duration_since(NaiveTime::MIN).num_nanoseconds()?;
            match (target, unit) {
                (DataType::Time32(_), TimeUnit::Second) => {
                    ScalarValue::Time32Second(Some((nanos / 1_000_000_000) as i32))
                }
                (DataType::Time32(_), TimeUnit::Millisecond) => {
                    ScalarValue::Time32Millisecond(Some((nanos / 1_000_000) as i32))
                }
                (DataType::Time64(_), TimeUnit::Microsecond) => {
                    ScalarValue::Time64Microsecond(Some(nanos / 1000))
                }
                (DataType::Time64(_), TimeUnit::Nanosecond) => {
                    ScalarValue::Time64Nanosecond(Some(nanos))
                }
                _ => return None,
            }
        }
        DataType::Timestamp(unit, tz) => {
            let (naive, offset, _) = parse_timestamp(text)?;
            // Seconds and nanoseconds apart: years far from 1970 overflow i64 nanoseconds.
            let seconds_east = match tz {
                // timestamp without time zone: a zone in the text is ignored, as in PostgreSQL.
                None => 0,
                Some(_) => match offset {
                    Some(o) => o,
                    None => {
                        let session = Tz::from_str(zone).ok()?;
                        let local = session.from_local_datetime(&naive).earliest()?;
                        local.offset().fix().local_minus_utc()
                    }
                },
            };
            let secs = naive.and_utc().timestamp() as i128 - seconds_east as i128;
            let nanos = naive.and_utc().timestamp_subsec_nanos() as i128;
            let total = secs * 1_000_000_000 + nanos;
            // PostgreSQL rounds extra fraction digits (half up), it does not truncate.
            let round = |per: i128| -> Option<i64> {
                let r = total.rem_euclid(per);
                i64::try_from(total.div_euclid(per) + i128::from(r * 2 >= per)).ok()
            };
            let tz = tz.clone();
            match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(Some(round(1_000_000_000)?), tz),
                TimeUnit::Millisecond => {
                    ScalarValue::TimestampMillisecond(Some(round(1_000_000)?), tz)
                }
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(round(1000)?), tz),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(round(1)?), tz),
            }
        }
        _ => return None,
    })
}

/// Elements of a one-dimensional PostgreSQL array literal: `{1,2,NULL}`, `{"a b","c\\"d"}`.
fn array_items(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    let mut items = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let item = if chars.peek() == Some(&'"') {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => s.push(chars.next()?),
                    c => s.push(c),
                }
            }
            Some(s)
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' || c == '"' {
                    return None; // nested arrays: not supported
                }
                s.push(c);
                chars.next();
            }
            let s = s.trim().to_owned();
            (!s.eq_ignore_ascii_case("null")).then_some(s)
        };
        items.push(item);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => return Some(items),
            Some(',') => continue,
            Some(_) => return None,
        }
    }
}

/// PostgreSQL's bytea input: `\\x0102ff` (hex), or the escape format where `\\\\` is a
/// backslash and `\\ooo` an octal byte.
fn bytea(text: &str) -> Option<Vec<u8>> {
    if let Some(hex) = text
        .strip_prefix("\\x")
        .or_else(|| text.strip_prefix("\\X"))
    {
        let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !digits.len().is_multiple_of(2) {
            return None;
        }
        return digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
            .collect();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
        } else if bytes.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            let oct = std::str::from_utf8(bytes.get(i + 1..i + 4)?).ok()?;
            out.push(u8::from_str_radix(oct, 8).ok()?);
            i += 4;
        }
    }
    Some(out)
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]][zone]` → (local date-time, zone offset in seconds
/// east of UTC if the text names one, whether a time was given).
fn parse_timestamp(text: &str) -> Option<(NaiveDateTime, Option<i32>, bool)> {
    let text = text.trim();
    // `... BC`: year 1 BC is year 0 of the proleptic calendar.
    let upper = text.to_ascii_uppercase();
    if let Some(rest) = upper.strip_suffix(" BC") {
        let (t, offset, timed) = parse_timestamp(&text[..rest.len()])?;
        let date = NaiveDate::from_ymd_opt(1 - t.date().year(), t.date().month(), t.date().day())?;
        return Some((date.and_time(t.time()), offset, timed));
    }
    let text = match upper.strip_suffix(" AD") {
        Some(rest) => &text[..rest.len()],
        None => text,
    };
    // Date-only forms PostgreSQL also reads: `20240301`, `Mar 5, 2024`, `March 5, 2024`.
    for format in ["%Y%m%d", "%b %d, %Y", "%B %d, %Y", "%d %b %Y"] {
        if let Ok(date) = NaiveDate::parse_from_str(text, format) {
            return Some((date.and_time(NaiveTime::MIN), None, false));
        }
    }
    let date_len = text
        .char_indices()
        .find(|(i, c)| *i >= 8 && (*c == ' ' || *c == 'T' || *c == 't'))
        .map_or(text.len(), |(i, _)| i);
    let date = NaiveDate::parse_from_str(&text[..date_len], "%Y-%m-%d").ok()?;
    let rest = text[date_len..].trim_start_matches([' ', 'T', 't']);
    if rest.is_empty() {
        return Some((date.and_time(NaiveTime::MIN), None, false));
    }
    // The time runs up to a zone: `Z`, `+hh[:mm]`, `-hh[:mm]`, or a space and a zone name.
    let time_len = rest
        .char_indices()
        .find(|(_, c)| matches!(c, '+' | '-' | 'Z' | 'z' | ' '))
        .map_or(rest.len(), |(i, _)| i);
    let time = parse_time(&rest[..time_len])?;
    let zone = rest[time_len..].trim();
    let offset = if zone.is_empty() {
        None
    } else {
        Some(parse_offset(zone, &date.and_time(time))?)
    };
    Some((date.and_time(time), offset, true))
}

/// An ISO 8601 duration as PostgreSQL reads it: `P1Y2M`, `P3DT4H5M6.5S`, `P2W` (other
/// interval text is left to Arrow's parser).
fn iso8601_interval(text: &str) -> Option<datafusion::arrow::datatypes::IntervalMonthDayNano> {
    let body = text.trim().strip_prefix(['P', 'p'])?;
    let (mut months, mut days, mut nanos) = (0f64, 0f64, 0f64);
    let mut in_time = false;
    let mut number = String::new();
    for c in body.chars() {
        match c.to_ascii_uppercase() {
            'T' if number.is_empty() => in_time = true,
            d if d.is_ascii_digit() || d == '.' || d == '-' => number.push(d),
            unit => {
                let n: f64 = number.parse().ok()?;
                number.clear();
                match (in_time, unit) {
                    (false, 'Y') => months += n * 12.0,
                    (false, 'M') => months += n,
                    (false, 'W') => days += n * 7.0,
                    (false, 'D') => days += n,
                    (true, 'H') => nanos += n * 3.6e12,
                    (true, 'M') => nanos += n * 6e10,
                    (true, 'S') => nanos += n * 1e9,
                    _ => return None,
                }
            }
        }
    }
    if !number.is_empty() || body.is_empty() {
        return None;
    }
    // Fractions spill down as in PostgreSQL: months into 30-day days, days into time.
    let whole_months = months.trunc();
    let days = days + (months - whole_months) * 30.0;
    let whole_days = days.trunc();
    let nanos = nanos + (days - whole_days) * 8.64e13;
    Some(datafusion::arrow::datatypes::IntervalMonthDayNano::new(
        whole_months as i32,
        whole_days as i32,
        nanos.round() as i64,
    ))
}

/// Whether `text` has the shape `HH:MM[:SS[.fraction]]` (whatever its numbers).
fn time_shaped(text: &str) -> bool {
    let parts: Vec<&str> = text.split(':').collect();
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        [h, m] => digits(h) && digits(m),
        [h, m, s] => {
            let (whole, fraction) = s.split_once('.').unwrap_or((s, "0"));
            digits(h) && digits(m) && digits(whole) && digits(fraction)
        }
        _ => false,
    }
}

/// `HH:MM[:SS[.fraction]]`.
fn parse_time(text: &str) -> Option<NaiveTime> {
    for format in ["%H:%M:%S%.f", "%H:%M"] {
        if let Ok(t) = NaiveTime::parse_from_str(text, format) {
            return Some(t);
        }
    }
    None
}

/// Seconds east of UTC of a zone suffix: `Z`, `+02`, `-0530`, `+05:30`, `UTC`, `Europe/Berlin`.
fn parse_offset(zone: &str, local: &NaiveDateTime) -> Option<i32> {
    if zone.eq_ignore_ascii_case("z") || zone.eq_ignore_ascii_case("utc") {
        return Some(0);
    }
    if let Some(sign) = zone.chars().next().filter(|c| *c == '+' || *c == '-') {
        let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
        if digits.is_empty() || digits.len() > 6 || !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let (h, m, s) = match digits.len() {
            1 | 2 => (digits.parse::<i32>().ok()?, 0, 0),
            3 | 4 => (
                digits[..digits.len() - 2].parse::<i32>().ok()?,
                digits[digits.len() - 2..].parse::<i32>().ok()?,
                0,
            ),
            _ => (
                digits[..digits.len() - 4].parse::<i32>().ok()?,
                digits[digits.len() - 4..digits.len() - 2]
                    .parse::<i32>()
                    .ok()?,
                digits[digits.len() - 2..].parse::<i32>().ok()?,
            ),
        };
        let secs = h * 3600 + m * 60 + s;
        return Some(if sign == '-' { -secs } else { secs });
    }
    let tz = Tz::from_str(zone).ok()?;
    let local = tz.from_local_datetime(local).earliest()?;
    Some(local.offset().fix().local_minus_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str, tz: Option<&str>, zone: &str) -> Option<i64> {
        match literal(
            text,
            &DataType::Timestamp(TimeUnit::Microsecond, tz.map(Into::into)),
            zone,
        )? {
            ScalarValue::TimestampMicrosecond(v, _) => v,
            _ => None,
        }
    }

    #[test]
    fn reads_iso8601_intervals() {
        use datafusion::arrow::datatypes::IntervalMonthDayNano;
        assert_eq!(
            iso8601_interval("P1Y2M"),
            Some(IntervalMonthDayNano::new(14, 0, 0))
        );
        assert_eq!(
            iso8601_interval("P1DT2H"),
            Some(IntervalMonthDayNano::new(0, 1, 7_200_000_000_000))
        );
        assert_eq!(iso8601_interval("1 day"), None);
    }

    #[test]
    fn reads_timestamps_like_postgres() {
        let base = 1_796_119_200_000_000; // 2026-12-01 10:00:00 UTC
        assert_eq!(ts("2026-12-01 10:00", None, "UTC"), Some(base));
        assert_eq!(ts("2026-12-01T10:00:00", None, "UTC"), Some(base));
        assert_eq!(
            ts("2026-12-01 10:00:00.5", None, "UTC"),
            Some(base + 500_000)
        );
        // A zone is ignored for timestamp without time zone ...
        assert_eq!(ts("2026-12-01 10:00+02", None, "UTC"), Some(base));
        // ... and applied for timestamptz; without one, the session's TimeZone is used.
        assert_eq!(ts("2026-12-01 12:00+02", Some("UTC"), "UTC"), Some(base));
        assert_eq!(
            ts("2026-12-01 10:00:00Z", Some("UTC"), "Asia/Tokyo"),
            Some(base)
        );
        assert_eq!(
            ts("2026-12-01 19:00", Some("UTC"), "Asia/Tokyo"),
            Some(base)
        );
        assert_eq!(ts("2026-12-01 05:00-05:00", Some("UTC"), "UTC"), Some(base));
        assert_eq!(
            ts("2026-12-01 11:00 Europe/Berlin", Some("UTC"), "UTC"),
            Some(base)
        );
        assert_eq!(ts("2026-12-01", None, "UTC"), Some(base - 36_000_000_000));
        assert_eq!(ts("not a date", None, "UTC"), None);
        assert_eq!(
            ts("2026-12-01 10:00:00.0000005", None, "UTC"),
            Some(base + 1)
        );
        assert_eq!(
            ts("0001-01-01 00:00:00 BC", None, "UTC"),
            Some(-62_135_596_800_000_000 - 366 * 86_400_000_000)
        );
        assert_eq!(ts("2026-13-01", None, "UTC"), None);
    }

    #[test]
    fn reads_arrays() {
        use datafusion::arrow::datatypes::Field;
        let ty = DataType::List(std::sync::Arc::new(Field::new(
            "item",
            DataType::Int32,
            true,
        )));
        let v = literal("{4, 5,NULL}", &ty, "UTC").unwrap();
        assert_eq!(v.to_string(), "[4, 5, ]", "the third element is NULL");
        let ty = DataType::List(std::sync::Arc::new(Field::new(
            "item",
            DataType::Utf8,
            true,
        )));
        let v = literal(r#"{"a b",c}"#, &ty, "UTC").unwrap();
        assert_eq!(v.to_string(), "[a b, c]");
        assert!(literal("{{1}}", &ty, "UTC").is_none());
    }

    #[test]
    fn reads_bytea() {
        assert_eq!(
            literal("\\x01ff", &DataType::Binary, "UTC"),
            Some(ScalarValue::Binary(Some(vec![1, 255])))
        );
        assert_eq!(
            literal("a\\\\b\\001", &DataType::Binary, "UTC"),
            Some(ScalarValue::Binary(Some(b"a\\b\x01".to_vec())))
        );
        assert_eq!(literal("\\x0", &DataType::Binary, "UTC"), None);
    }

    #[test]
    fn reads_dates_and_times() {
        assert_eq!(
            literal("2026-12-01 10:00", &DataType::Date32, "UTC"),
            Some(ScalarValue::Date32(Some(20_788)))
        );
        assert_eq!(
            literal("10:30", &DataType::Time32(TimeUnit::Millisecond), "UTC"),
            Some(ScalarValue::Time32Millisecond(Some(37_800_000)))
        );
        assert_eq!(
            literal(
                "10:30:01.25",
                &DataType::Time64(TimeUnit::Microsecond),
                "UTC"
            ),
            Some(ScalarValue::Time64Microsecond(Some(37_801_250_000)))
        );
    }

    #[test]
    fn times_out_of_range_are_22008() {
        let time = DataType::Time64(TimeUnit::Microsecond);
        let code = |text: &str| match datetime_input_error(text, &time) {
            super::super::QueryError::DateTime { code, .. } => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code("25:00"), "22008");
        assert_eq!(code("12:61:00.5"), "22008");
        assert_eq!(code("noon-ish"), "22007");
        assert!(!time_shaped("1:2:3:4") && !time_shaped("12:") && time_shaped("25:00"));
    }
}
