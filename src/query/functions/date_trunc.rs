//! PostgreSQL's `date_trunc` where DataFusion's differs: a `date` is truncated as the
//! `timestamp with time zone` of its midnight in the session's zone (PostgreSQL's implicit
//! cast; the result is a timestamptz), and an `interval` is truncated field by field
//! (`date_trunc('day', interval '2 days 5 hours')` is `2 days`). Timestamps go to
//! DataFusion's `date_trunc`; its unknown units become 22023 in `server::error`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit,
    TimeUnit,
};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::data_error;

/// `date_trunc(unit, value)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DateTrunc {
    signature: Signature,
}

impl DateTrunc {
    /// The function as a UDF, named `date_trunc`.
    pub fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            signature: Signature::any(2, Volatility::Immutable),
        })
    }
}

fn timestamptz() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

fn mdn() -> DataType {
    DataType::Interval(IntervalUnit::MonthDayNano)
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// PostgreSQL's `interval_trunc`: the fields below `unit` set to zero.
pub fn truncate_interval(unit: &str, v: IntervalMonthDayNano) -> Result<IntervalMonthDayNano> {
    let (years, months) = (v.months / 12, v.months % 12);
    let keep_years = |per: i32| IntervalMonthDayNano::new(years / per * per * 12, 0, 0);
    let time = |per: i64| IntervalMonthDayNano::new(v.months, v.days, v.nanoseconds / per * per);
    Ok(match unit.to_ascii_lowercase().as_str() {
        "millennium" | "millennia" => keep_years(1000),
        "century" | "centuries" => keep_years(100),
        "decade" | "decades" => keep_years(10),
        "year" | "years" => keep_years(1),
        "quarter" => IntervalMonthDayNano::new(years * 12 + months / 3 * 3, 0, 0),
        "month" | "months" => IntervalMonthDayNano::new(v.months, 0, 0),
        "day" | "days" => IntervalMonthDayNano::new(v.months, v.days, 0),
        "hour" | "hours" => time(3600 * NANOS_PER_SECOND),
        "minute" | "minutes" => time(60 * NANOS_PER_SECOND),
        "second" | "seconds" => time(NANOS_PER_SECOND),
        "millisecond" | "milliseconds" => time(1_000_000),
        "microsecond" | "microseconds" => time(1_000),
        "week" | "weeks" => {
            return Err(data_error(
                "0A000",
                "interval units \"week\" not supported because months usually have fractional weeks",
            ));
        }
        other => {
            return Err(data_error(
                "22023",
                format!("interval units \"{other}\" not recognized"),
            ));
        }
    })
}

impl ScalarUDFImpl for DateTrunc {
    fn name(&self) -> &str {
        "date_trunc"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match arg_types.get(1) {
            Some(DataType::Interval(_)) => mdn(),
            Some(DataType::Date32 | DataType::Date64) => timestamptz(),
            Some(other) => other.clone(),
            None => timestamptz(),
        })
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let input = args.arg_fields.get(1).map(|f| f.data_type().clone());
        let t = match input {
            Some(DataType::Interval(_)) => mdn(),
            Some(DataType::Date32 | DataType::Date64) => timestamptz(),
            _ => {
                return datafusion::functions::datetime::date_trunc().return_field_from_args(args);
            }
        };
        Ok(Arc::new(Field::new(self.name(), t, true)))
    }
    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.arg_fields[1].data_type().clone();
        match input {
            DataType::Interval(_) => {
                let ColumnarValue::Scalar(unit) = &args.args[0] else {
                    return Err(data_error("0A000", "date_trunc's unit must be a constant"));
                };
                if unit.is_null() {
                    return Ok(ColumnarValue::Scalar(ScalarValue::IntervalMonthDayNano(
                        None,
                    )));
                }
                let unit = unit.try_as_str().flatten().unwrap_or_default().to_owned();
                let all_scalar = matches!(args.args[1], ColumnarValue::Scalar(_));
                let values = cast(&args.args[1].to_array(args.number_rows.max(1))?, &mdn())?;
                let out: IntervalMonthDayNanoArray = values
                    .as_primitive::<IntervalMonthDayNanoType>()
                    .iter()
                    .map(|v| v.map(|v| truncate_interval(&unit, v)).transpose())
                    .collect::<Result<_>>()?;
                let out: ArrayRef = Arc::new(out);
                if all_scalar {
                    return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
                }
                Ok(ColumnarValue::Array(out))
            }
            DataType::Date32 | DataType::Date64 => {
                let zone = args
                    .config_options
                    .execution
                    .time_zone
                    .clone()
                    .unwrap_or_else(|| "UTC".to_owned());
                let all_scalar = matches!(args.args[1], ColumnarValue::Scalar(_));
                let dates = args.args[1].to_array(args.number_rows.max(1))?;
                // The date's midnight in the session's zone, as an instant.
                let local = cast(&dates, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
                let zoned = cast(
                    &local,
                    &DataType::Timestamp(TimeUnit::Microsecond, Some(zone.as_str().into())),
                )?;
                let value = if all_scalar {
                    ColumnarValue::Scalar(ScalarValue::try_from_array(&zoned, 0)?)
                } else {
                    ColumnarValue::Array(zoned.clone())
                };
                let inner = datafusion::functions::datetime::date_trunc();
                args.args[1] = value;
                args.arg_fields[1] = Arc::new(Field::new("v", zoned.data_type().clone(), true));
                args.return_field = Arc::new(Field::new("r", zoned.data_type().clone(), true));
                let truncated = inner.invoke_with_args(args)?;
                let result = match truncated {
                    ColumnarValue::Scalar(s) => ColumnarValue::Scalar(s.cast_to(&timestamptz())?),
                    ColumnarValue::Array(a) => ColumnarValue::Array(cast(&a, &timestamptz())?),
                };
                Ok(result)
            }
            _ => datafusion::functions::datetime::date_trunc().invoke_with_args(args),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_intervals_like_postgres() {
        let h = 3_600 * NANOS_PER_SECOND;
        let v = IntervalMonthDayNano::new(14, 2, 5 * h + 17);
        assert_eq!(
            truncate_interval("day", v).unwrap(),
            IntervalMonthDayNano::new(14, 2, 0)
        );
        assert_eq!(
            truncate_interval("year", v).unwrap(),
            IntervalMonthDayNano::new(12, 0, 0)
        );
        assert_eq!(
            truncate_interval("hour", v).unwrap(),
            IntervalMonthDayNano::new(14, 2, 5 * h)
        );
        assert!(truncate_interval("fortnight", v).is_err());
    }
}
