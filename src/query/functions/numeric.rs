//! Numeric conversions as PostgreSQL does them.
//!
//! Arrow's casts from numeric and floats to integers truncate (`174.89::int` is 174) and
//! report overflow as a cast error; PostgreSQL rounds numerics half away from zero (175),
//! floats half to even (`2.5::float8::int` is 2, as `rint`), and fails out-of-range values
//! with 22003 "integer out of range". `pg_casts.rs` sends those casts to [`PgToInt`].

use datafusion::arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type,
};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Operator, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::data_error;

/// `numeric | float → int2 | int4 | int8`, rounding and range-checked as in PostgreSQL.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgToInt {
    name: &'static str,
    target: DataType,
    signature: Signature,
}

impl PgToInt {
    /// The conversion to `target` (Int16, Int32 or Int64).
    pub fn new(target: &DataType) -> Option<Self> {
        let name = match target {
            DataType::Int16 => "pg_to_int2",
            DataType::Int32 => "pg_to_int4",
            DataType::Int64 => "pg_to_int8",
            _ => return None,
        };
        Some(Self {
            name,
            target: target.clone(),
            signature: Signature::any(1, Volatility::Immutable),
        })
    }

    /// Whether values of `source` need this conversion rather than Arrow's cast.
    pub fn converts(source: &DataType) -> bool {
        matches!(
            source,
            DataType::Decimal128(..) | DataType::Float32 | DataType::Float64
        )
    }
}

fn out_of_range(target: &DataType) -> datafusion::error::DataFusionError {
    let name = match target {
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        _ => "bigint",
    };
    data_error("22003", format!("{name} out of range"))
}

/// A decimal's unscaled value rounded half away from zero to an integer.
fn round_decimal(v: i128, scale: i8) -> Option<i128> {
    if scale <= 0 {
        return v.checked_mul(10i128.checked_pow(u32::from(scale.unsigned_abs()))?);
    }
    let unit = 10i128.checked_pow(scale as u32)?;
    let (q, r) = (v / unit, v % unit);
    Some(if r.unsigned_abs() * 2 >= unit.unsigned_abs() {
        q + v.signum()
    } else {
        q
    })
}

/// A float rounded half to even, if it fits in `[min, max]`.
fn round_float(f: f64, min: i64, max: i64) -> Option<i64> {
    let r = f.round_ties_even();
    // `max as f64` rounds up to 2^63 for int8: the bound is exclusive there.
    if r.is_nan() || r < min as f64 || r >= (max as f64) + 1.0 {
        return None;
    }
    Some(r as i64)
}

fn convert<T: ArrowPrimitiveType>(
    values: &dyn Array,
    target: &DataType,
    min: i64,
    max: i64,
    wrap: impl Fn(i64) -> T::Native,
) -> Result<PrimitiveArray<T>> {
    let check = |v: i64| {
        if v < min || v > max {
            Err(out_of_range(target))
        } else {
            Ok(wrap(v))
        }
    };
    let ints: Vec<Option<T::Native>> = match values.data_type() {
        DataType::Decimal128(_, scale) => values
            .as_primitive::<Decimal128Type>()
            .iter()
            .map(|v| {
                v.map(|v| {
                    round_decimal(v, *scale)
                        .and_then(|r| i64::try_from(r).ok())
                        .ok_or_else(|| out_of_range(target))
                        .and_then(check)
                })
                .transpose()
            })
            .collect::<Result<_>>()?,
        DataType::Float64 => values
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| {
                v.map(|f| {
                    round_float(f, min, max)
                        .ok_or_else(|| out_of_range(target))
                        .and_then(check)
                })
                .transpose()
            })
            .collect::<Result<_>>()?,
        DataType::Float32 => values
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| {
                v.map(|f| {
                    round_float(f64::from(f), min, max)
                        .ok_or_else(|| out_of_range(target))
                        .and_then(check)
                })
                .transpose()
            })
            .collect::<Result<_>>()?,
        other => {
            return Err(data_error(
                "42846",
                format!("cannot cast type {other} to an integer"),
            ));
        }
    };
    Ok(ints.into_iter().collect::<PrimitiveArray<T>>())
}

/// `values` (numeric or float) converted to `target` (Int16, Int32, Int64) as PostgreSQL
/// converts them: rounded, 22003 when out of range. Also the assignment cast of DML.
pub fn to_int_array(values: &ArrayRef, target: &DataType) -> Result<ArrayRef> {
    Ok(match target {
        DataType::Int16 => std::sync::Arc::new(convert::<Int16Type>(
            values,
            target,
            i64::from(i16::MIN),
            i64::from(i16::MAX),
            |v| v as i16,
        )?) as ArrayRef,
        DataType::Int32 => std::sync::Arc::new(convert::<Int32Type>(
            values,
            target,
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            |v| v as i32,
        )?),
        _ => std::sync::Arc::new(convert::<Int64Type>(
            values,
            target,
            i64::MIN,
            i64::MAX,
            |v| v,
        )?),
    })
}

impl ScalarUDFImpl for PgToInt {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.target.clone())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let input = args.args[0].to_array(rows.max(1))?;
        let out = to_int_array(&input, &self.target)?;
        if scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// `+`, `-`, `*` of smallint, integer or bigint, failing on overflow with 22003 as PostgreSQL
/// does (DataFusion's operators wrap around: `2147483647 + 1` was `-2147483648`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgIntArithmetic {
    name: &'static str,
    op: Operator,
    signature: Signature,
}

impl PgIntArithmetic {
    /// The checked form of `op`, if tarn has one.
    pub fn new(op: Operator) -> Option<Self> {
        let name = match op {
            Operator::Plus => "pg_int_add",
            Operator::Minus => "pg_int_sub",
            Operator::Multiply => "pg_int_mul",
            _ => return None,
        };
        Some(Self {
            name,
            op,
            signature: Signature::any(2, Volatility::Immutable),
        })
    }

    /// Whether `op` over `ty` wraps in DataFusion where PostgreSQL fails.
    pub fn applies(ty: &DataType) -> bool {
        matches!(ty, DataType::Int16 | DataType::Int32 | DataType::Int64)
    }
}

impl ScalarUDFImpl for PgIntArithmetic {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::compute::kernels::numeric;
        let target = args.return_field.data_type().clone();
        let datum = |v: &ColumnarValue| -> Result<Box<dyn datafusion::arrow::array::Datum>> {
            Ok(match v {
                ColumnarValue::Array(a) => Box::new(std::sync::Arc::clone(a)),
                ColumnarValue::Scalar(s) => Box::new(s.to_scalar()?),
            })
        };
        let (l, r) = (datum(&args.args[0])?, datum(&args.args[1])?);
        let result = match self.op {
            Operator::Plus => numeric::add(l.as_ref(), r.as_ref()),
            Operator::Minus => numeric::sub(l.as_ref(), r.as_ref()),
            _ => numeric::mul(l.as_ref(), r.as_ref()),
        };
        let out = result.map_err(|e| match e {
            datafusion::arrow::error::ArrowError::ArithmeticOverflow(_) => out_of_range(&target),
            other => other.into(),
        })?;
        if args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
        {
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
    fn numeric_rounds_half_away_from_zero() {
        assert_eq!(round_decimal(17489, 2), Some(175));
        assert_eq!(round_decimal(17450, 2), Some(175));
        assert_eq!(round_decimal(17449, 2), Some(174));
        assert_eq!(round_decimal(-250, 2), Some(-3));
        assert_eq!(round_decimal(-249, 2), Some(-2));
        assert_eq!(round_decimal(5, 0), Some(5));
    }

    #[test]
    fn float_rounds_half_to_even() {
        assert_eq!(round_float(2.5, i64::MIN, i64::MAX), Some(2));
        assert_eq!(round_float(3.5, i64::MIN, i64::MAX), Some(4));
        assert_eq!(round_float(-2.5, i64::MIN, i64::MAX), Some(-2));
        assert_eq!(round_float(f64::NAN, i64::MIN, i64::MAX), None);
        assert_eq!(round_float(9.3e18, i64::MIN, i64::MAX), None);
        assert_eq!(
            round_float(2147483647.4, -2147483648, 2147483647),
            Some(2147483647)
        );
    }
}
