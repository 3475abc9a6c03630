//! PostgreSQL's interval arithmetic and functions: `justify_hours`/`justify_days`/
//! `justify_interval`, `make_interval` (named arguments too), `interval * number` and
//! `interval / number` (`interval_mul`/`interval_div`), `timestamp - timestamp` as an interval,
//! and the normalised value PostgreSQL compares intervals by (30-day months, 24-hour days).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::datatypes::{
    DataType, DurationNanosecondType, Float64Type, IntervalMonthDayNano, IntervalMonthDayNanoType,
    IntervalUnit, TimeUnit,
};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

const NANOS_PER_DAY: i64 = 86_400_000_000_000;

fn mdn() -> DataType {
    DataType::Interval(IntervalUnit::MonthDayNano)
}

/// PostgreSQL's `interval_justify_hours`: whole days of the time part moved to days.
pub fn justify_hours(v: IntervalMonthDayNano) -> IntervalMonthDayNano {
    let mut days = i64::from(v.days) + v.nanoseconds / NANOS_PER_DAY;
    let mut nanos = v.nanoseconds % NANOS_PER_DAY;
    if days > 0 && nanos < 0 {
        nanos += NANOS_PER_DAY;
        days -= 1;
    } else if days < 0 && nanos > 0 {
        nanos -= NANOS_PER_DAY;
        days += 1;
    }
    IntervalMonthDayNano::new(v.months, days as i32, nanos)
}

/// PostgreSQL's `interval_mul`: fractions of months spill into days (30 per month) and
/// fractions of days into time (24 hours per day).
pub fn multiply(v: IntervalMonthDayNano, factor: f64) -> Option<IntervalMonthDayNano> {
    let m = f64::from(v.months) * factor;
    let months = m.trunc();
    let month_rem_days = (m - months) * 30.0;
    let d = f64::from(v.days) * factor;
    let days = d.trunc();
    let sec_rem = (d - days + month_rem_days - month_rem_days.trunc()) * 86_400.0;
    let days = days + month_rem_days.trunc();
    let nanos = (v.nanoseconds as f64 / 1000.0 * factor + sec_rem * 1e6).round_ties_even() * 1000.0;
    let fits = |x: f64, lo: f64, hi: f64| x.is_finite() && x >= lo && x <= hi;
    if !fits(months, i32::MIN as f64, i32::MAX as f64)
        || !fits(days, i32::MIN as f64, i32::MAX as f64)
        || !fits(nanos, i64::MIN as f64, i64::MAX as f64)
    {
        return None;
    }
    Some(IntervalMonthDayNano::new(
        months as i32,
        days as i32,
        nanos as i64,
    ))
}

#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Kind {
    JustifyHours,
    OfDuration,
    Multiply,
    Divide,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct IntervalFn {
    name: &'static str,
    kind: Kind,
    signature: Signature,
}

impl IntervalFn {
    fn new(name: &'static str, kind: Kind, arity: usize) -> Self {
        Self {
            name,
            kind,
            signature: Signature::any(arity, Volatility::Immutable),
        }
    }
    /// `timestamp - timestamp` as PostgreSQL's interval.
    pub fn of_duration() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self::new("pg_interval_of", Kind::OfDuration, 1))
    }
    /// `interval * factor` (or `/ factor` when `divide`).
    pub fn multiply(divide: bool) -> ScalarUDF {
        ScalarUDF::new_from_impl(if divide {
            Self::new("pg_interval_div", Kind::Divide, 2)
        } else {
            Self::new("pg_interval_mul", Kind::Multiply, 2)
        })
    }
}

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(IntervalFn::new(
        "justify_hours",
        Kind::JustifyHours,
        1,
    )));
    let one = || Signature::any(1, Volatility::Immutable);
    ctx.register_udf(super::session_fn("justify_days", one(), mdn(), |args| {
        map_interval(&args[0], justify_days)
    }));
    ctx.register_udf(super::session_fn(
        "justify_interval",
        one(),
        mdn(),
        |args| map_interval(&args[0], justify_interval),
    ));
    ctx.register_udf(super::session_fn(
        "make_interval",
        Signature::any(7, Volatility::Immutable),
        mdn(),
        make_interval,
    ));
}

fn map_interval(
    value: &ScalarValue,
    f: impl Fn(IntervalMonthDayNano) -> IntervalMonthDayNano,
) -> Result<ScalarValue> {
    Ok(match value.cast_to(&mdn())? {
        ScalarValue::IntervalMonthDayNano(v) => ScalarValue::IntervalMonthDayNano(v.map(f)),
        _ => ScalarValue::IntervalMonthDayNano(None),
    })
}

/// PostgreSQL's `interval_justify_days`: whole 30-day months of the days moved to months.
pub fn justify_days(v: IntervalMonthDayNano) -> IntervalMonthDayNano {
    let mut months = v.months + v.days / 30;
    let mut days = v.days % 30;
    if months > 0 && days < 0 {
        days += 30;
        months -= 1;
    } else if months < 0 && days > 0 {
        days -= 30;
        months += 1;
    }
    IntervalMonthDayNano::new(months, days, v.nanoseconds)
}

/// PostgreSQL's `interval_justify_interval`: days and months both justified, signs made to
/// agree.
pub fn justify_interval(v: IntervalMonthDayNano) -> IntervalMonthDayNano {
    let (mut months, mut days, mut nanos) = (i64::from(v.months), i64::from(v.days), v.nanoseconds);
    if (days > 0 && nanos > 0) || (days < 0 && nanos < 0) {
        months += days / 30;
        days %= 30;
    }
    days += nanos / NANOS_PER_DAY;
    nanos %= NANOS_PER_DAY;
    months += days / 30;
    days %= 30;
    if months > 0 && (days < 0 || (days == 0 && nanos < 0)) {
        days += 30;
        months -= 1;
    } else if months < 0 && (days > 0 || (days == 0 && nanos > 0)) {
        days -= 30;
        months += 1;
    }
    if days > 0 && nanos < 0 {
        nanos += NANOS_PER_DAY;
        days -= 1;
    } else if days < 0 && nanos > 0 {
        nanos -= NANOS_PER_DAY;
        days += 1;
    }
    IntervalMonthDayNano::new(months as i32, days as i32, nanos)
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`.
fn make_interval(args: &[ScalarValue]) -> Result<ScalarValue> {
    let mut parts = [0f64; 7];
    for (part, arg) in parts.iter_mut().zip(args) {
        if arg.is_null() {
            return Ok(ScalarValue::IntervalMonthDayNano(None));
        }
        match arg.cast_to(&DataType::Float64)? {
            ScalarValue::Float64(Some(v)) => *part = v,
            _ => return Ok(ScalarValue::IntervalMonthDayNano(None)),
        }
    }
    let [years, months, weeks, days, hours, mins, secs] = parts;
    let months = years * 12.0 + months;
    let days = weeks * 7.0 + days;
    let nanos = ((hours * 3600.0 + mins * 60.0) * 1e6 + (secs * 1e6).round()) * 1000.0;
    let fits = |x: f64| x.is_finite() && x.abs() <= f64::from(i32::MAX);
    if !fits(months) || !fits(days) || !nanos.is_finite() || nanos.abs() >= i64::MAX as f64 {
        return Err(super::data_error("22008", "interval out of range"));
    }
    Ok(ScalarValue::IntervalMonthDayNano(Some(
        IntervalMonthDayNano::new(months as i32, days as i32, nanos as i64),
    )))
}

/// The value PostgreSQL compares intervals by: months of 30 days, days of 24 hours, in
/// nanoseconds.
pub fn comparison_key(v: IntervalMonthDayNano) -> i128 {
    let day = i128::from(NANOS_PER_DAY);
    i128::from(v.months) * 30 * day + i128::from(v.days) * day + i128::from(v.nanoseconds)
}

/// `pg_interval_key(interval)`: [`comparison_key`] as a numeric, for the comparison
/// operators `pg_datetime_ops` plans.
pub fn comparison_key_udf() -> ScalarUDF {
    super::session_fn(
        "pg_interval_key",
        Signature::any(1, Volatility::Immutable),
        DataType::Decimal128(38, 0),
        |args| {
            Ok(match args[0].cast_to(&mdn())? {
                ScalarValue::IntervalMonthDayNano(v) => {
                    ScalarValue::Decimal128(v.map(comparison_key), 38, 0)
                }
                _ => ScalarValue::Decimal128(None, 38, 0),
            })
        },
    )
}

impl ScalarUDFImpl for IntervalFn {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(mdn())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { args.number_rows };
        let first = args.args[0].to_array(n)?;
        let out: IntervalMonthDayNanoArray = match self.kind {
            Kind::OfDuration if matches!(first.data_type(), DataType::Interval(_)) => {
                let i = datafusion::arrow::compute::cast(&first, &mdn())?;
                i.as_primitive::<IntervalMonthDayNanoType>()
                    .iter()
                    .map(|v| v.map(justify_hours))
                    .collect()
            }
            Kind::OfDuration => {
                let d = datafusion::arrow::compute::cast(
                    &first,
                    &DataType::Duration(TimeUnit::Nanosecond),
                )?;
                d.as_primitive::<DurationNanosecondType>()
                    .iter()
                    .map(|v| v.map(|v| justify_hours(IntervalMonthDayNano::new(0, 0, v))))
                    .collect()
            }
            Kind::JustifyHours => {
                let i = datafusion::arrow::compute::cast(&first, &mdn())?;
                i.as_primitive::<IntervalMonthDayNanoType>()
                    .iter()
                    .map(|v| v.map(justify_hours))
                    .collect()
            }
            Kind::Multiply | Kind::Divide => {
                let i = datafusion::arrow::compute::cast(&first, &mdn())?;
                let f = args.args[1].to_array(n)?;
                let f = datafusion::arrow::compute::cast(&f, &DataType::Float64)?;
                let f = f.as_primitive::<Float64Type>();
                let mut out = Vec::with_capacity(n);
                for (v, f) in i
                    .as_primitive::<IntervalMonthDayNanoType>()
                    .iter()
                    .zip(f.iter())
                {
                    out.push(match (v, f) {
                        (Some(v), Some(f)) => {
                            let factor = if self.kind == Kind::Divide {
                                if f == 0.0 {
                                    return Err(super::data_error("22012", "division by zero"));
                                }
                                1.0 / f
                            } else {
                                f
                            };
                            Some(multiply(v, factor).ok_or_else(|| {
                                super::data_error("22008", "interval out of range")
                            })?)
                        }
                        _ => None,
                    });
                }
                out.into_iter().collect()
            }
        };
        let out: ArrayRef = Arc::new(out);
        if all_scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn justifies_and_compares_like_postgres() {
        let h = 3_600_000_000_000;
        assert_eq!(
            justify_days(IntervalMonthDayNano::new(0, 45, 0)),
            IntervalMonthDayNano::new(1, 15, 0)
        );
        assert_eq!(
            justify_interval(IntervalMonthDayNano::new(1, 0, -h)),
            IntervalMonthDayNano::new(0, 29, 23 * h)
        );
        assert_eq!(
            comparison_key(IntervalMonthDayNano::new(1, 0, 0)),
            comparison_key(IntervalMonthDayNano::new(0, 30, 0))
        );
    }

    #[test]
    fn justifies_and_multiplies_like_postgres() {
        let h = 3_600_000_000_000;
        assert_eq!(
            justify_hours(IntervalMonthDayNano::new(0, 0, 25 * h + h / 2)),
            IntervalMonthDayNano::new(0, 1, h + h / 2)
        );
        // interval '1 mon' * 1.5 = 1 mon 15 days
        assert_eq!(
            multiply(IntervalMonthDayNano::new(1, 0, 0), 1.5),
            Some(IntervalMonthDayNano::new(1, 15, 0))
        );
        // interval '1 day' / 4 = 06:00:00
        assert_eq!(
            multiply(IntervalMonthDayNano::new(0, 1, 0), 0.25),
            Some(IntervalMonthDayNano::new(0, 0, 6 * h))
        );
    }
}
