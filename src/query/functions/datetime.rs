//! PostgreSQL's date/time functions: `make_time`, `make_timestamp`, and the formatting functions: `to_char(timestamp | timestamptz | date, text)`
//! with PostgreSQL's template patterns (`YYYY-MM-DD HH24:MI:SS`, `FMMonth`, `Dy`, `IW`, ...).
//!
//! DataFusion's `to_char` takes chrono's `%Y-%m` patterns, so `to_char(d, 'YYYY-MM')` answered
//! the pattern text itself — a silently wrong answer. This `to_char` replaces it; the
//! patterns and their output (padding of names, `FM`, `TH` suffixes, quoted text) follow
//! PostgreSQL's `formatting.c` behaviour as documented in "Data Type Formatting Functions".

use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Offset, Timelike, Utc};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    Coercion, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, TypeSignatureClass, Volatility,
};
use datafusion::prelude::SessionContext;

use super::data_error;

/// Registers the date/time functions of this family.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ToChar::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(Age::new()));
    super::interval::register(ctx);
    ctx.register_udf(ScalarUDF::new_from_impl(ParseByTemplate::new("to_date")));
    ctx.register_udf(ScalarUDF::new_from_impl(ParseByTemplate::new(
        "to_timestamp",
    )));
    let any = || Signature::variadic_any(Volatility::Immutable);
    ctx.register_udf(super::session_fn(
        "make_time",
        any(),
        DataType::Time64(TimeUnit::Microsecond),
        |args| {
            let Some(micros) = time_of_day(&floats(args)?)? else {
                return Ok(ScalarValue::Time64Microsecond(None));
            };
            Ok(ScalarValue::Time64Microsecond(Some(micros)))
        },
    ));
    ctx.register_udf(super::session_fn(
        "make_timestamp",
        any(),
        DataType::Timestamp(TimeUnit::Microsecond, None),
        |args| {
            let parts = floats(args)?;
            if parts.len() != 6 || parts.iter().any(Option::is_none) {
                return Ok(ScalarValue::TimestampMicrosecond(None, None));
            }
            let field = |i: usize| parts[i].unwrap_or_default();
            let date = NaiveDate::from_ymd_opt(field(0) as i32, field(1) as u32, field(2) as u32)
                .ok_or_else(|| data_error("22008", "date field value out of range"))?;
            let micros = time_of_day(&parts[3..])?.unwrap_or_default();
            let midnight = date
                .and_hms_opt(0, 0, 0)
                .map(|d| d.and_utc().timestamp_micros())
                .unwrap_or_default();
            Ok(ScalarValue::TimestampMicrosecond(
                Some(midnight + micros),
                None,
            ))
        },
    ));
}

/// The arguments as floats (NULL as `None`).
fn floats(args: &[ScalarValue]) -> Result<Vec<Option<f64>>> {
    args.iter()
        .map(|a| {
            Ok(match a.cast_to(&DataType::Float64)? {
                ScalarValue::Float64(v) => v,
                _ => None,
            })
        })
        .collect()
}

/// `hour, min, sec` as microseconds since midnight; 22008 out of range as PostgreSQL.
fn time_of_day(parts: &[Option<f64>]) -> Result<Option<i64>> {
    let [Some(h), Some(m), Some(sec)] = parts else {
        return Ok(None);
    };
    let micros = ((h * 3600.0 + m * 60.0) * 1e6 + (sec * 1e6).round()) as i64;
    let valid = (0.0..=24.0).contains(h)
        && (0.0..60.0).contains(m)
        && (0.0..=60.0).contains(sec)
        && micros <= 86_400_000_000;
    if !valid {
        return Err(data_error(
            "22008",
            format!("time field value out of range: {h}:{m}:{sec}"),
        ));
    }
    Ok(Some(micros))
}

/// `age(timestamp, timestamp)` and `age(timestamp)` (from today's midnight): the symbolic
/// difference in years, months and days as PostgreSQL's `timestamp_age` computes it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Age {
    signature: Signature,
}

impl Age {
    fn new() -> Self {
        Self {
            signature: Signature::one_of(
                vec![TypeSignature::Any(1), TypeSignature::Any(2)],
                Volatility::Stable,
            ),
        }
    }
}

fn days_in_month(year: i32, month: u32) -> i64 {
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    };
    let first = NaiveDate::from_ymd_opt(year, month, 1);
    match (first, next) {
        (Some(a), Some(b)) => (b - a).num_days(),
        _ => 30,
    }
}

/// PostgreSQL's `timestamp_age(t1, t2)` as (months, days, microseconds).
fn age_of(t1: &NaiveDateTime, t2: &NaiveDateTime) -> (i32, i32, i64) {
    let mut usec = i64::from(t1.nanosecond() / 1000) - i64::from(t2.nanosecond() / 1000);
    let mut sec = i64::from(t1.second()) - i64::from(t2.second());
    let mut min = i64::from(t1.minute()) - i64::from(t2.minute());
    let mut hour = i64::from(t1.hour()) - i64::from(t2.hour());
    let mut mday = i64::from(t1.day()) - i64::from(t2.day());
    let mut mon = i64::from(t1.month()) - i64::from(t2.month());
    let mut year = i64::from(t1.year()) - i64::from(t2.year());
    let flip = t1 < t2;
    let negate = |v: &mut [&mut i64]| v.iter_mut().for_each(|x| **x = -**x);
    if flip {
        negate(&mut [
            &mut usec, &mut sec, &mut min, &mut hour, &mut mday, &mut mon, &mut year,
        ]);
    }
    while usec < 0 {
        usec += 1_000_000;
        sec -= 1;
    }
    while sec < 0 {
        sec += 60;
        min -= 1;
    }
    while min < 0 {
        min += 60;
        hour -= 1;
    }
    while hour < 0 {
        hour += 24;
        mday -= 1;
    }
    while mday < 0 {
        let base = if flip { t1 } else { t2 };
        mday += days_in_month(base.year(), base.month());
        mon -= 1;
    }
    while mon < 0 {
        mon += 12;
        year -= 1;
    }
    if flip {
        negate(&mut [
            &mut usec, &mut sec, &mut min, &mut hour, &mut mday, &mut mon, &mut year,
        ]);
    }
    let months = year * 12 + mon;
    let micros = ((hour * 60 + min) * 60 + sec) * 1_000_000 + usec;
    (months as i32, mday as i32, micros)
}

impl ScalarUDFImpl for Age {
    fn name(&self) -> &str {
        "age"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(
            datafusion::arrow::datatypes::IntervalUnit::MonthDayNano,
        ))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::IntervalMonthDayNanoArray;
        use datafusion::arrow::datatypes::IntervalMonthDayNano;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { args.number_rows };
        let session_zone = args
            .config_options
            .execution
            .time_zone
            .clone()
            .unwrap_or_else(|| "UTC".to_owned());
        let mut columns = Vec::new();
        for a in &args.args {
            let mut array = a.to_array(n)?;
            if matches!(
                array.data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null
            ) {
                array = datafusion::arrow::compute::cast(
                    &array,
                    &DataType::Timestamp(TimeUnit::Microsecond, None),
                )?;
            }
            columns.push(moments(&array, &session_zone)?);
        }
        let today = || -> Result<NaiveDateTime> {
            let tz: Tz = session_zone.parse().map_err(|e| {
                data_error(
                    "22023",
                    format!("time zone \"{session_zone}\" not recognized: {e}"),
                )
            })?;
            Ok(Utc::now()
                .with_timezone(&tz)
                .date_naive()
                .and_hms_opt(0, 0, 0)
                .expect("midnight"))
        };
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            let pair = if columns.len() == 1 {
                columns[0][row].as_ref().map(|m| (today(), m.local))
            } else {
                match (&columns[0][row], &columns[1][row]) {
                    (Some(a), Some(b)) => Some((Ok(a.local), b.local)),
                    _ => None,
                }
            };
            out.push(match pair {
                None => None,
                Some((a, b)) => {
                    let (months, days, micros) = age_of(&a?, &b);
                    Some(IntervalMonthDayNano::new(months, days, micros * 1000))
                }
            });
        }
        let out: ArrayRef = Arc::new(out.into_iter().collect::<IntervalMonthDayNanoArray>());
        if all_scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// `to_char(timestamp | timestamptz | date, pattern)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ToChar {
    signature: Signature,
}

impl ToChar {
    fn new() -> Self {
        let text = || {
            Coercion::new_exact(TypeSignatureClass::Native(
                datafusion::common::types::logical_string(),
            ))
        };
        Self {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Coercible(vec![
                        Coercion::new_exact(TypeSignatureClass::Timestamp),
                        text(),
                    ]),
                    TypeSignature::Coercible(vec![
                        Coercion::new_exact(TypeSignatureClass::Native(
                            datafusion::common::types::logical_date(),
                        )),
                        text(),
                    ]),
                ],
                Volatility::Stable,
            ),
        }
    }
}

/// One moment to format: its local date and time, and its zone (timestamptz only).
struct Moment {
    local: NaiveDateTime,
    /// (abbreviation, offset in seconds east of UTC)
    zone: Option<(String, i32)>,
}

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { rows };
        let values = args.args[0].to_array(n)?;
        let patterns = args.args[1].to_array(n)?;
        let patterns = datafusion::arrow::compute::cast(&patterns, &DataType::Utf8)?;
        let patterns = patterns.as_string::<i32>();
        let session_zone = args
            .config_options
            .execution
            .time_zone
            .clone()
            .unwrap_or_else(|| "UTC".to_owned());
        let moments = moments(&values, &session_zone)?;
        let mut out = StringBuilder::new();
        for (i, m) in moments.into_iter().enumerate() {
            match (m, patterns.is_null(i)) {
                (Some(m), false) => out.append_value(format_moment(&m, patterns.value(i))),
                _ => out.append_null(),
            }
        }
        let out: ArrayRef = Arc::new(out.finish());
        if all_scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// The values of a date or timestamp array as local moments (timestamptz in `session_zone`).
fn moments(values: &ArrayRef, session_zone: &str) -> Result<Vec<Option<Moment>>> {
    match values.data_type() {
        DataType::Date32 | DataType::Date64 => {
            let days = datafusion::arrow::compute::cast(values, &DataType::Date32)?;
            let days = days.as_primitive::<datafusion::arrow::datatypes::Date32Type>();
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid date");
            Ok(days
                .iter()
                .map(|d| {
                    d.and_then(|d| epoch.checked_add_signed(chrono::Duration::days(i64::from(d))))
                        .map(|d| Moment {
                            local: d.and_hms_opt(0, 0, 0).expect("midnight"),
                            zone: None,
                        })
                })
                .collect())
        }
        DataType::Timestamp(_, zone) => {
            let micros = datafusion::arrow::compute::cast(
                values,
                &DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
            )?;
            let micros =
                micros.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>();
            let tz: Option<Tz> = match zone {
                Some(_) => Some(session_zone.parse().map_err(|e| {
                    data_error(
                        "22023",
                        format!("time zone \"{session_zone}\" not recognized: {e}"),
                    )
                })?),
                None => None,
            };
            Ok(micros
                .iter()
                .map(|v| {
                    let v = v?;
                    let utc: DateTime<Utc> = DateTime::from_timestamp_micros(v)?;
                    Some(match &tz {
                        None => Moment {
                            local: utc.naive_utc(),
                            zone: None,
                        },
                        Some(tz) => {
                            let local = utc.with_timezone(tz);
                            let offset = local.offset().fix().local_minus_utc();
                            Moment {
                                local: local.naive_local(),
                                zone: Some((zone_abbreviation(session_zone, offset), offset)),
                            }
                        }
                    })
                })
                .collect())
        }
        other => Err(data_error(
            "42883",
            format!("function to_char({other}, text) does not exist"),
        )),
    }
}

/// PostgreSQL prints a zone's abbreviation (`UTC`, `CET`); tarn knows it for UTC and prints
/// the offset (`+02`) for other zones.
fn zone_abbreviation(session_zone: &str, offset: i32) -> String {
    let utc = ["utc", "etc/utc", "z", "zulu", "universal", "etc/universal"];
    if offset == 0 && utc.contains(&session_zone.to_ascii_lowercase().as_str()) {
        return "UTC".to_owned();
    }
    if session_zone.eq_ignore_ascii_case("gmt") || session_zone.eq_ignore_ascii_case("etc/gmt") {
        return "GMT".to_owned();
    }
    offset_text(offset, false)
}

fn offset_text(offset: i32, with_colon_minutes: bool) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let a = offset.unsigned_abs();
    let (h, m) = (a / 3600, (a % 3600) / 60);
    if m != 0 || with_colon_minutes {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}")
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN: [&str; 12] = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
];

/// The template keywords, longest first where one is a prefix of another (as PostgreSQL
/// matches them).
const KEYWORDS: &[&str] = &[
    "A.D.", "A.M.", "AD", "AM", "B.C.", "B.M.", "BC", "CC", "DAY", "DDD", "DD", "DY", "Day", "Dy",
    "D", "FX", "HH24", "HH12", "HH", "IDDD", "ID", "IW", "IYYY", "IYY", "IY", "I", "J", "MI", "MM",
    "MONTH", "MON", "MS", "Month", "Mon", "OF", "P.M.", "PM", "Q", "RM", "SSSSS", "SSSS", "SS",
    "TZH", "TZM", "TZ", "US", "WW", "W", "Y,YYY", "YYYY", "YYY", "YY", "Y", "a.d.", "a.m.", "ad",
    "am", "b.c.", "bc", "cc", "day", "ddd", "dd", "dy", "d", "fx", "hh24", "hh12", "hh", "iddd",
    "id", "iw", "iyyy", "iyy", "iy", "i", "j", "mi", "mm", "month", "mon", "ms", "of", "p.m.",
    "pm", "q", "rm", "sssss", "ssss", "ss", "tzh", "tzm", "tz", "us", "ww", "w", "y,yyy", "yyyy",
    "yyy", "yy", "y",
];

fn keyword_at(s: &str) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .filter(|k| s.starts_with(**k))
        .max_by_key(|k| k.len())
        .copied()
}

fn ordinal_suffix(n: i64) -> &'static str {
    let n = n.abs();
    if (11..=13).contains(&(n % 100)) {
        return "th";
    }
    match n % 10 {
        1 => "st",
        2 => "nd",
        3 => "rd",
        _ => "th",
    }
}

fn cased(name: &str, keyword: &str) -> String {
    let first = keyword.chars().next().unwrap_or('A');
    let second = keyword.chars().nth(1).unwrap_or('A');
    if first.is_ascii_lowercase() {
        name.to_lowercase()
    } else if second.is_ascii_lowercase() {
        name.to_owned()
    } else {
        name.to_uppercase()
    }
}

/// `m` formatted by a PostgreSQL template.
fn format_moment(m: &Moment, pattern: &str) -> String {
    let t = &m.local;
    let mut out = String::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        // Quoted literal text, and backslash escapes inside it.
        if let Some(after) = rest.strip_prefix('"') {
            let mut chars = after.char_indices();
            let mut end = after.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, e)) = chars.next() {
                            out.push(e);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            rest = &after[end.min(after.len())..];
            continue;
        }
        if let Some(after) = rest.strip_prefix('\\') {
            if let Some(c) = after.chars().next() {
                out.push(c);
                rest = &after[c.len_utf8()..];
            } else {
                rest = after;
            }
            continue;
        }
        // Prefix modifiers.
        let mut fill = true;
        let mut body = rest;
        loop {
            if let Some(b) = body.strip_prefix("FM").or_else(|| body.strip_prefix("fm")) {
                fill = false;
                body = b;
            } else if let Some(b) = body.strip_prefix("TM").or_else(|| body.strip_prefix("tm")) {
                body = b;
            } else {
                break;
            }
        }
        let Some(kw) = keyword_at(body) else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        body = &body[kw.len()..];
        // Suffix: ordinal number.
        let mut suffix = None;
        if let Some(b) = body.strip_prefix("TH") {
            suffix = Some(true);
            body = b;
        } else if let Some(b) = body.strip_prefix("th") {
            suffix = Some(false);
            body = b;
        }
        rest = body;

        let num = |v: i64, width: usize| -> String {
            let mut s = if fill {
                if v < 0 {
                    format!("-{:0width$}", -v, width = width)
                } else {
                    format!("{v:0width$}")
                }
            } else {
                v.to_string()
            };
            if let Some(upper) = suffix {
                let sfx = ordinal_suffix(v);
                s.push_str(&if upper {
                    sfx.to_uppercase()
                } else {
                    sfx.to_owned()
                });
            }
            s
        };
        let name = |n: &str, width: usize| -> String {
            let n = cased(n, kw);
            if fill { format!("{n:<width$}") } else { n }
        };
        let year = i64::from(t.year());
        let iso = t.iso_week();
        let hour12 = match t.hour() % 12 {
            0 => 12,
            h => h,
        };
        let pm = t.hour() >= 12;
        let upper = kw.chars().next().is_some_and(|c| c.is_ascii_uppercase());
        let meridiem = |dots: bool| {
            let s = match (pm, dots) {
                (false, false) => "AM",
                (true, false) => "PM",
                (false, true) => "A.M.",
                (true, true) => "P.M.",
            };
            if upper {
                s.to_owned()
            } else {
                s.to_lowercase()
            }
        };
        let era = |dots: bool| {
            let s = match (year > 0, dots) {
                (true, false) => "AD",
                (false, false) => "BC",
                (true, true) => "A.D.",
                (false, true) => "B.C.",
            };
            if upper {
                s.to_owned()
            } else {
                s.to_lowercase()
            }
        };
        let piece = match kw.to_ascii_uppercase().as_str() {
            "HH" | "HH12" => num(i64::from(hour12), 2),
            "HH24" => num(i64::from(t.hour()), 2),
            "MI" => num(i64::from(t.minute()), 2),
            "SS" => num(i64::from(t.second()), 2),
            "MS" => num(i64::from(t.nanosecond() / 1_000_000), 3),
            "US" => num(i64::from(t.nanosecond() / 1_000), 6),
            "SSSS" | "SSSSS" => num(i64::from(t.num_seconds_from_midnight()), 0),
            "AM" | "PM" => meridiem(false),
            "A.M." | "P.M." => meridiem(true),
            "AD" | "BC" => era(false),
            "A.D." | "B.C." => era(true),
            "Y,YYY" => {
                let y = year.abs();
                format!("{},{:03}", y / 1000, y % 1000)
            }
            "YYYY" => num(year, 4),
            "YYY" => num(year % 1000, 3),
            "YY" => num(year % 100, 2),
            "Y" => num(year % 10, 1),
            "IYYY" => num(i64::from(iso.year()), 4),
            "IYY" => num(i64::from(iso.year()) % 1000, 3),
            "IY" => num(i64::from(iso.year()) % 100, 2),
            "I" => num(i64::from(iso.year()) % 10, 1),
            "MONTH" => name(MONTHS[t.month0() as usize], 9),
            "MON" => name(&MONTHS[t.month0() as usize][..3], 3),
            "MM" => num(i64::from(t.month()), 2),
            "DAY" => name(DAYS[t.weekday().num_days_from_sunday() as usize], 9),
            "DY" => name(&DAYS[t.weekday().num_days_from_sunday() as usize][..3], 3),
            "DDD" => num(i64::from(t.ordinal()), 3),
            "IDDD" => num(
                i64::from((iso.week() - 1) * 7 + t.weekday().number_from_monday()),
                3,
            ),
            "DD" => num(i64::from(t.day()), 2),
            "D" => num(i64::from(t.weekday().number_from_sunday()), 1),
            "ID" => num(i64::from(t.weekday().number_from_monday()), 1),
            "W" => num(i64::from((t.day() - 1) / 7 + 1), 1),
            "WW" => num(i64::from((t.ordinal() - 1) / 7 + 1), 2),
            "IW" => num(i64::from(iso.week()), 2),
            "CC" => {
                let cc = if year > 0 {
                    (year + 99) / 100
                } else {
                    -((-year + 99) / 100)
                };
                num(cc, 2)
            }
            "J" => num(i64::from(t.date().num_days_from_ce()) + 1_721_425, 0),
            "Q" => num(i64::from(t.month0() / 3 + 1), 1),
            "RM" => {
                let r = ROMAN[t.month0() as usize];
                let r = if kw == "rm" {
                    r.to_lowercase()
                } else {
                    r.to_owned()
                };
                if fill { format!("{r:<4}") } else { r }
            }
            "TZ" => {
                let z = m.zone.as_ref().map(|(a, _)| a.clone()).unwrap_or_default();
                if kw == "tz" { z.to_lowercase() } else { z }
            }
            "TZH" => m
                .zone
                .as_ref()
                .map(|(_, o)| {
                    format!(
                        "{}{:02}",
                        if *o < 0 { '-' } else { '+' },
                        o.unsigned_abs() / 3600
                    )
                })
                .unwrap_or_default(),
            "TZM" => m
                .zone
                .as_ref()
                .map(|(_, o)| format!("{:02}", (o.unsigned_abs() % 3600) / 60))
                .unwrap_or_default(),
            "OF" => m
                .zone
                .as_ref()
                .map(|(_, o)| offset_text(*o, false))
                .unwrap_or_default(),
            "FX" => String::new(),
            _ => kw.to_owned(),
        };
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Moment {
        Moment {
            local: NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap(),
            zone: None,
        }
    }

    #[test]
    fn age_is_symbolic() {
        let a = at("2001-04-10 00:00:00").local;
        let b = at("1957-06-13 00:00:00").local;
        // PostgreSQL: 43 years 9 mons 27 days
        assert_eq!(age_of(&a, &b), (43 * 12 + 9, 27, 0));
        assert_eq!(age_of(&b, &a), (-(43 * 12 + 9), -27, 0));
    }

    #[test]
    fn formats_postgres_templates() {
        let m = at("2024-03-05 14:07:09.123456");
        assert_eq!(format_moment(&m, "YYYY-MM"), "2024-03");
        assert_eq!(
            format_moment(&m, "YYYY-MM-DD HH24:MI:SS.US"),
            "2024-03-05 14:07:09.123456"
        );
        assert_eq!(format_moment(&m, "HH12:MI AM"), "02:07 PM");
        assert_eq!(format_moment(&m, "Month DD"), "March     05");
        assert_eq!(format_moment(&m, "FMMonth FMDDth"), "March 5th");
        assert_eq!(format_moment(&m, "Dy, DD Mon YYYY"), "Tue, 05 Mar 2024");
        assert_eq!(format_moment(&m, "\"Q\"Q \"week\" IW"), "Q1 week 10");
    }
}

/// Text read by a PostgreSQL template (`to_date(text, fmt)`, `to_timestamp(text, fmt)`), in
/// PostgreSQL's lenient mode: separators in the template match any separator (or none),
/// spaces before numbers are skipped, numbers take at most their field's width.
fn parse_moment(input: &str, pattern: &str) -> Result<NaiveDateTime> {
    let bad = |what: &str| {
        data_error(
            "22007",
            format!("invalid value for {what} in \"{input}\" (template \"{pattern}\")"),
        )
    };
    let (mut year, mut month, mut day) = (1i32, 1u32, 1u32);
    let (mut hour, mut minute, mut second, mut micros) = (0u32, 0u32, 0u32, 0u32);
    let mut pm: Option<bool> = None;
    let mut doy: Option<u32> = None;
    let mut yy_century = false;
    let mut s = input;
    let mut rest = pattern;
    let read_num = |s: &mut &str, width: usize, what: &str| -> Result<i64> {
        *s = s.trim_start();
        let mut end = 0;
        let neg = s.starts_with('-');
        if neg {
            end = 1;
        }
        while end < s.len() && end - usize::from(neg) < width && s.as_bytes()[end].is_ascii_digit()
        {
            end += 1;
        }
        let digits = &s[usize::from(neg)..end];
        if digits.is_empty() {
            return Err(bad(what));
        }
        let v: i64 = digits.parse().map_err(|_| bad(what))?;
        *s = &s[end..];
        Ok(if neg { -v } else { v })
    };
    let read_name = |s: &mut &str, names: &[&str], full: bool, what: &str| -> Result<usize> {
        *s = s.trim_start();
        for (i, n) in names.iter().enumerate() {
            let n = if full { *n } else { &n[..3] };
            if s.len() >= n.len() && s[..n.len()].eq_ignore_ascii_case(n) {
                *s = &s[n.len()..];
                return Ok(i);
            }
        }
        Err(bad(what))
    };
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('"') {
            let end = after.find('"').map_or(after.len(), |i| i + 1);
            let literal = &after[..end.saturating_sub(1).min(after.len())];
            for _ in literal.chars() {
                let mut chars = s.chars();
                if chars.next().is_some() {
                    s = chars.as_str();
                }
            }
            rest = &after[end.min(after.len())..];
            continue;
        }
        let mut body = rest;
        while let Some(b) = body.strip_prefix("FM").or_else(|| body.strip_prefix("fm")) {
            body = b;
        }
        let Some(kw) = keyword_at(body) else {
            let c = rest.chars().next().expect("not empty");
            rest = &rest[c.len_utf8()..];
            if c.is_alphanumeric() {
                if s.starts_with(c) {
                    s = &s[c.len_utf8()..];
                }
            } else {
                // A separator matches any run of separators (or none).
                s = s.trim_start_matches(|x: char| !x.is_alphanumeric() && x != '-' || x == c);
            }
            continue;
        };
        rest = &body[kw.len()..];
        for suffix in ["TH", "th"] {
            if let Some(r) = rest.strip_prefix(suffix) {
                rest = r;
            }
        }
        match kw.to_ascii_uppercase().as_str() {
            "YYYY" | "IYYY" => year = read_num(&mut s, 4, "YYYY")? as i32,
            "Y,YYY" => {
                let th = read_num(&mut s, 3, "Y,YYY")?;
                s = s.strip_prefix(',').unwrap_or(s);
                year = (th * 1000 + read_num(&mut s, 3, "Y,YYY")?) as i32;
            }
            "YYY" | "IYY" => {
                let y = read_num(&mut s, 3, "YYY")? as i32;
                year = if y < 100 { y + 2000 } else { y + 1000 };
            }
            "YY" | "IY" => {
                let y = read_num(&mut s, 2, "YY")? as i32;
                year = if y < 70 { y + 2000 } else { y + 1900 };
                yy_century = true;
            }
            "Y" | "I" => year = 2000 + read_num(&mut s, 1, "Y")? as i32,
            "MM" => month = read_num(&mut s, 2, "MM")? as u32,
            "MONTH" => month = read_name(&mut s, &MONTHS, true, "Month")? as u32 + 1,
            "MON" => month = read_name(&mut s, &MONTHS, false, "Mon")? as u32 + 1,
            "DAY" => {
                read_name(&mut s, &DAYS, true, "Day")?;
            }
            "DY" => {
                read_name(&mut s, &DAYS, false, "Dy")?;
            }
            "DD" => day = read_num(&mut s, 2, "DD")? as u32,
            "DDD" | "IDDD" => doy = Some(read_num(&mut s, 3, "DDD")? as u32),
            "D" | "ID" => {
                read_num(&mut s, 1, "D")?;
            }
            "HH" | "HH12" | "HH24" => hour = read_num(&mut s, 2, "HH")? as u32,
            "MI" => minute = read_num(&mut s, 2, "MI")? as u32,
            "SS" => second = read_num(&mut s, 2, "SS")? as u32,
            "MS" => {
                let before = s.trim_start().len();
                let v = read_num(&mut s, 3, "MS")? as u32;
                let digits = before - s.len();
                micros = v * 10u32.pow(3 - digits.min(3) as u32) * 1000;
            }
            "US" => {
                let before = s.trim_start().len();
                let v = read_num(&mut s, 6, "US")? as u32;
                let digits = before - s.len();
                micros = v * 10u32.pow(6 - digits.min(6) as u32);
            }
            "SSSS" | "SSSSS" => {
                let v = read_num(&mut s, 5, "SSSS")? as u32;
                hour = v / 3600;
                minute = v % 3600 / 60;
                second = v % 60;
            }
            "AM" | "PM" | "A.M." | "P.M." => {
                let t = s.trim_start();
                let up = t.to_ascii_uppercase();
                let (is_pm, len) = if up.starts_with("P.M.") {
                    (true, 4)
                } else if up.starts_with("A.M.") {
                    (false, 4)
                } else if up.starts_with("PM") {
                    (true, 2)
                } else if up.starts_with("AM") {
                    (false, 2)
                } else {
                    return Err(bad("AM/PM"));
                };
                pm = Some(is_pm);
                s = &t[len..];
            }
            "FX" => {}
            other => {
                return Err(data_error(
                    "0A000",
                    format!(
                        "template pattern \"{other}\" is not supported in to_date/to_timestamp by tarn"
                    ),
                ));
            }
        }
    }
    let _ = yy_century;
    if let Some(is_pm) = pm {
        if hour == 0 || hour > 12 {
            return Err(data_error(
                "22008",
                format!("hour \"{hour}\" is invalid for the 12-hour clock"),
            ));
        }
        hour = match (is_pm, hour) {
            (true, 12) => 12,
            (true, h) => h + 12,
            (false, 12) => 0,
            (false, h) => h,
        };
    }
    let out_of_range = || {
        data_error(
            "22008",
            format!("date/time field value out of range: \"{input}\""),
        )
    };
    let date = match doy {
        Some(d) => NaiveDate::from_yo_opt(year, d),
        None => NaiveDate::from_ymd_opt(year, month, day),
    }
    .ok_or_else(out_of_range)?;
    let time = chrono::NaiveTime::from_hms_micro_opt(hour, minute, second, micros)
        .ok_or_else(out_of_range)?;
    Ok(date.and_time(time))
}

/// `to_date(text, template)` and `to_timestamp(text, template)` with PostgreSQL templates
/// (DataFusion's take chrono's `%Y` patterns); other argument lists fall back to a cast.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ParseByTemplate {
    name: &'static str,
    signature: Signature,
}

impl ParseByTemplate {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            signature: Signature::one_of(
                vec![TypeSignature::Any(1), TypeSignature::Any(2)],
                Volatility::Stable,
            ),
        }
    }
    fn is_date(&self) -> bool {
        self.name == "to_date"
    }
}

impl ScalarUDFImpl for ParseByTemplate {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.is_date() {
            DataType::Date32
        } else {
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        })
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let target = self.return_type(&[])?;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { args.number_rows };
        let first = args.args[0].to_array(n)?;
        let out: ArrayRef = if args.args.len() == 1 {
            if !self.is_date() && (first.data_type().is_numeric()) {
                // to_timestamp(epoch seconds)
                let secs = datafusion::arrow::compute::cast(&first, &DataType::Float64)?;
                let micros: datafusion::arrow::array::TimestampMicrosecondArray = secs
                    .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                    .iter()
                    .map(|v| v.map(|v| (v * 1e6).round() as i64))
                    .collect();
                Arc::new(micros.with_timezone("UTC"))
            } else {
                datafusion::arrow::compute::cast(&first, &target)?
            }
        } else {
            let text = datafusion::arrow::compute::cast(&first, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let fmt = args.args[1].to_array(n)?;
            let fmt = datafusion::arrow::compute::cast(&fmt, &DataType::Utf8)?;
            let fmt = fmt.as_string::<i32>();
            let zone: Option<Tz> = if self.is_date() {
                None
            } else {
                let z = args
                    .config_options
                    .execution
                    .time_zone
                    .clone()
                    .unwrap_or_else(|| "UTC".to_owned());
                Some(z.parse().map_err(|e| {
                    data_error("22023", format!("time zone \"{z}\" not recognized: {e}"))
                })?)
            };
            let mut values = Vec::with_capacity(n);
            for i in 0..n {
                if text.is_null(i) || fmt.is_null(i) {
                    values.push(None);
                    continue;
                }
                let local = parse_moment(text.value(i), fmt.value(i))?;
                values.push(Some(match &zone {
                    None => (local.date() - NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch"))
                        .num_days(),
                    Some(tz) => {
                        use chrono::TimeZone;
                        let at = tz
                            .from_local_datetime(&local)
                            .earliest()
                            .ok_or_else(|| data_error("22008", "timestamp out of range"))?;
                        at.timestamp_micros()
                    }
                }));
            }
            if self.is_date() {
                Arc::new(
                    values
                        .into_iter()
                        .map(|v| v.map(|v| v as i32))
                        .collect::<datafusion::arrow::array::Date32Array>(),
                )
            } else {
                Arc::new(
                    values
                        .into_iter()
                        .collect::<datafusion::arrow::array::TimestampMicrosecondArray>()
                        .with_timezone("UTC"),
                )
            }
        };
        if all_scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn parses_postgres_templates() {
        let p = |a: &str, b: &str| parse_moment(a, b).unwrap().to_string();
        assert_eq!(p("2024-03-05", "YYYY-MM-DD"), "2024-03-05 00:00:00");
        assert_eq!(p("05 Mar 2024", "DD Mon YYYY"), "2024-03-05 00:00:00");
        assert_eq!(p("20240305", "YYYYMMDD"), "2024-03-05 00:00:00");
        assert_eq!(
            p("2024-03-05 10:11:12", "YYYY-MM-DD HH24:MI:SS"),
            "2024-03-05 10:11:12"
        );
        assert_eq!(
            p("March 5, 2024 3:04 PM", "Month DD, YYYY HH:MI AM"),
            "2024-03-05 15:04:00"
        );
        assert!(parse_moment("2024-13-05", "YYYY-MM-DD").is_err());
    }
}
