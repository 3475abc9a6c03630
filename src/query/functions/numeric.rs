//! Numeric conversions as PostgreSQL does them.
//!
//! Arrow's casts from numeric and floats to integers truncate (`174.89::int` is 174) and
//! report overflow as a cast error; PostgreSQL rounds numerics half away from zero (175),
//! floats half to even (`2.5::float8::int` is 2, as `rint`), and fails out-of-range values
//! with 22003 "integer out of range". `pg_casts.rs` sends those casts to [`PgToInt`].
//!
//! Text read as a float: [`PgTextToFloat`] (`'1e400'::float8` fails with 22003).
//!
//! Checked arithmetic: [`PgIntArithmetic`] (integers) and [`PgFloatArithmetic`] (floats), which
//! `pg_integers.rs` puts in place of DataFusion's operators.

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

/// `text → real | double precision` as PostgreSQL reads floats: `NaN`, `Infinity`, `inf`
/// (any case, signed), surrounding blanks ignored; a number too large or too small for the type
/// fails with 22003 (Arrow read `'1e400'` as Infinity), text that is no number with 22P02.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgTextToFloat {
    target: DataType,
    signature: Signature,
}

impl PgTextToFloat {
    /// The conversion to `target` (Float32 or Float64).
    pub fn new(target: &DataType) -> Option<Self> {
        matches!(target, DataType::Float32 | DataType::Float64).then(|| Self {
            target: target.clone(),
            signature: Signature::any(1, Volatility::Immutable),
        })
    }

    /// Whether values of `source` need this conversion rather than Arrow's cast.
    pub fn converts(source: &DataType) -> bool {
        matches!(
            source,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        )
    }
}

/// `text` as a float of the type named `type_name` (`real` when `real`), PostgreSQL's way.
fn parse_float(text: &str, real: bool) -> Result<f64> {
    let type_name = if real { "real" } else { "double precision" };
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if matches!(unsigned, "nan" | "infinity" | "inf") {
        if unsigned == "nan" {
            return Ok(f64::NAN);
        }
        return Ok(if lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let value: f64 = t.parse().map_err(|_| {
        data_error(
            "22P02",
            format!("invalid input syntax for type {type_name}: \"{text}\""),
        )
    })?;
    let narrowed = if real { f64::from(value as f32) } else { value };
    let mantissa_nonzero = t
        .split(['e', 'E'])
        .next()
        .is_some_and(|m| m.chars().any(|c| ('1'..='9').contains(&c)));
    if narrowed.is_infinite() || (narrowed == 0.0 && mantissa_nonzero) {
        return Err(data_error(
            "22003",
            format!("\"{t}\" is out of range for type {type_name}"),
        ));
    }
    Ok(narrowed)
}

impl ScalarUDFImpl for PgTextToFloat {
    fn name(&self) -> &str {
        if self.target == DataType::Float32 {
            "pg_text_to_float4"
        } else {
            "pg_text_to_float8"
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.target.clone())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{Float32Array, Float64Array};
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let rows = if scalar { 1 } else { args.number_rows };
        let input =
            datafusion::arrow::compute::cast(&args.args[0].to_array(rows)?, &DataType::Utf8)?;
        let real = self.target == DataType::Float32;
        let values = input
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(|v| parse_float(v, real)).transpose())
            .collect::<Result<Vec<Option<f64>>>>()?;
        let out: ArrayRef = if real {
            std::sync::Arc::new(
                values
                    .into_iter()
                    .map(|v| v.map(|v| v as f32))
                    .collect::<Float32Array>(),
            )
        } else {
            std::sync::Arc::new(values.into_iter().collect::<Float64Array>())
        };
        if scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// `+`, `-`, `*`, `/` of real or double precision, failing as PostgreSQL's float operators
/// do: 22003 "value out of range: overflow" when finite operands give an infinity
/// (`1e308::float8 * 10`), "underflow" when a product or quotient of non-zero operands is 0,
/// and 22012 on division by zero (DataFusion gave Infinity / NaN).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgFloatArithmetic {
    name: &'static str,
    op: Operator,
    signature: Signature,
}

impl PgFloatArithmetic {
    /// The checked form of `op`, if tarn has one.
    pub fn new(op: Operator) -> Option<Self> {
        let name = match op {
            Operator::Plus => "pg_float_add",
            Operator::Minus => "pg_float_sub",
            Operator::Multiply => "pg_float_mul",
            Operator::Divide => "pg_float_div",
            _ => return None,
        };
        Some(Self {
            name,
            op,
            signature: Signature::any(2, Volatility::Immutable),
        })
    }

    /// Whether `ty` is a float type this checks.
    pub fn applies(ty: &DataType) -> bool {
        matches!(ty, DataType::Float32 | DataType::Float64)
    }

    /// One result, computed in double precision and narrowed to `real` for real operands
    /// (exact for these operations), then checked.
    fn apply(&self, a: f64, b: f64, real: bool) -> Result<f64> {
        let r = match self.op {
            Operator::Plus => a + b,
            Operator::Minus => a - b,
            Operator::Multiply => a * b,
            _ => {
                if b == 0.0 {
                    return Err(data_error("22012", "division by zero"));
                }
                a / b
            }
        };
        let r = if real { f64::from(r as f32) } else { r };
        if r.is_infinite() && a.is_finite() && b.is_finite() {
            return Err(data_error("22003", "value out of range: overflow"));
        }
        let underflow = match self.op {
            Operator::Multiply => a != 0.0 && b != 0.0,
            Operator::Divide => a != 0.0 && b.is_finite(),
            _ => false,
        };
        if r == 0.0 && underflow {
            return Err(data_error("22003", "value out of range: underflow"));
        }
        Ok(r)
    }
}

impl ScalarUDFImpl for PgFloatArithmetic {
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
        use datafusion::arrow::array::{Float32Array, Float64Array};
        let real = matches!(args.return_field.data_type(), DataType::Float32);
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let as_f64 = |v: &ColumnarValue| -> Result<ArrayRef> {
            Ok(datafusion::arrow::compute::cast(
                &v.to_array(rows)?,
                &DataType::Float64,
            )?)
        };
        let (l, r) = (as_f64(&args.args[0])?, as_f64(&args.args[1])?);
        let (l, r) = (
            l.as_primitive::<Float64Type>(),
            r.as_primitive::<Float64Type>(),
        );
        let values = l
            .iter()
            .zip(r.iter())
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => self.apply(a, b, real).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<Vec<Option<f64>>>>()?;
        let out: ArrayRef = if real {
            std::sync::Arc::new(
                values
                    .into_iter()
                    .map(|v| v.map(|v| v as f32))
                    .collect::<Float32Array>(),
            )
        } else {
            std::sync::Arc::new(values.into_iter().collect::<Float64Array>())
        };
        if scalar {
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
    fn floats_read_as_postgres() {
        assert_eq!(parse_float(" 1e3 ", false).unwrap(), 1000.0);
        assert!(parse_float("-Infinity", false).unwrap().is_infinite());
        assert!(parse_float("NaN", false).unwrap().is_nan());
        assert!(parse_float("1e400", false).is_err());
        assert!(parse_float("1e-400", false).is_err());
        assert!(parse_float("1e39", true).is_err());
        assert_eq!(parse_float("0e-400", false).unwrap(), 0.0);
        assert!(parse_float("abc", false).is_err());
    }

    #[test]
    fn float_operators_check_overflow() {
        let mul = PgFloatArithmetic::new(Operator::Multiply).unwrap();
        let div = PgFloatArithmetic::new(Operator::Divide).unwrap();
        assert!(mul.apply(1e308, 10.0, false).is_err());
        assert!(mul.apply(1e-300, 1e-300, false).is_err());
        assert!(div.apply(1.0, 0.0, false).is_err());
        assert_eq!(div.apply(1.0, 0.5, false).unwrap(), 2.0);
        assert!(mul.apply(f64::INFINITY, 2.0, false).unwrap().is_infinite());
        assert!(mul.apply(1e38, 10.0, true).is_err());
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
