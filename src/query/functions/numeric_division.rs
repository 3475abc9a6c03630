//! PostgreSQL's numeric division, with the scale it gives each quotient.
//!
//! PostgreSQL chooses a quotient's display scale from its operands' values
//! (`select_div_scale` in numeric.c): at least 16 significant digits, and no fewer fraction
//! digits than either operand shows — `10 / 4.0` is 2.5000000000000000, `1 / 8.0`
//! 0.12500000000000000000. An Arrow decimal column has one scale, so [`PgNumericDiv`] returns
//! each quotient as exact numeric text in a `Utf8` field tagged `numeric` (the wire layer sends it
//! as OID 1700, in binary as a numeric). `pg_numeric_output.rs` uses it for the quotients and
//! averages a query returns.

use std::collections::HashMap;
use std::sync::Arc;

use bigdecimal::num_bigint::{BigInt, Sign};
use bigdecimal::{Signed, Zero};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Field, FieldRef, Int8Type, Int16Type, Int32Type, Int64Type,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::data_error;
use crate::query::pg_types::PG_TYPE_KEY;

/// `NUMERIC_MIN_SIG_DIGITS`.
const MIN_SIG_DIGITS: i64 = 16;
/// `NUMERIC_MAX_DISPLAY_SCALE`.
const MAX_DISPLAY_SCALE: i64 = 1000;

/// `pg_numeric_div(a, b)`: `a / b` of integers or numerics as PostgreSQL's numeric text.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgNumericDiv {
    signature: Signature,
}

impl Default for PgNumericDiv {
    fn default() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl PgNumericDiv {
    /// Whether a value of `ty` is an exact number this divides.
    pub fn takes(ty: &DataType) -> bool {
        ty.is_integer() || matches!(ty, DataType::Decimal128(..))
    }
}

impl ScalarUDFImpl for PgNumericDiv {
    fn name(&self) -> &str {
        "pg_numeric_div"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(numeric_text_field(self.name()))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (columns, scalar) = exact_args(&args)?;
        let mut out = StringBuilder::with_capacity(columns[0].len(), columns[0].len() * 24);
        for (a, b) in columns[0].iter().zip(columns[1].iter()) {
            match (a, b) {
                (Some(a), Some(b)) => out.append_value(divide(a, b)?),
                _ => out.append_null(),
            }
        }
        numeric_text_result(out, scalar)
    }
}

/// The result field of a function that answers PostgreSQL numerics as exact text: `Utf8`
/// tagged `numeric`, so the wire layer sends OID 1700.
pub fn numeric_text_field(name: &str) -> FieldRef {
    let meta = HashMap::from([(PG_TYPE_KEY.to_owned(), "numeric".to_owned())]);
    Arc::new(Field::new(name, DataType::Utf8, true).with_metadata(meta))
}

/// A call's arguments as exact numbers, row by row, and whether all of them are scalars
/// (the call then computes one row and answers a scalar).
pub fn exact_args(args: &ScalarFunctionArgs) -> Result<(Vec<Vec<Option<Exact>>>, bool)> {
    let scalar = args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let rows = if scalar { 1 } else { args.number_rows };
    let columns = args
        .args
        .iter()
        .map(|a| exact_values(&a.to_array(rows)?))
        .collect::<Result<Vec<_>>>()?;
    Ok((columns, scalar))
}

/// The numeric texts a call computed as its result (a scalar when its arguments were).
pub fn numeric_text_result(mut out: StringBuilder, scalar: bool) -> Result<ColumnarValue> {
    let out: ArrayRef = Arc::new(out.finish());
    if scalar {
        return Ok(ColumnarValue::Scalar(
            datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
        ));
    }
    Ok(ColumnarValue::Array(out))
}

/// An exact number: unscaled digits and scale.
pub type Exact = (BigInt, i64);

pub fn exact_values(array: &ArrayRef) -> Result<Vec<Option<Exact>>> {
    macro_rules! ints {
        ($t:ty) => {
            array
                .as_primitive::<$t>()
                .iter()
                .map(|v| v.map(|v| (BigInt::from(v), 0)))
                .collect()
        };
    }
    Ok(match array.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => ints!(UInt64Type),
        DataType::Decimal128(_, s) => {
            let s = i64::from(*s);
            array
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| v.map(|v| (BigInt::from(v), s)))
                .collect()
        }
        DataType::Null => vec![None; array.len()],
        // Numeric text (of `numeric_coalesce`, say): read back exactly.
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .map(|v| v.and_then(parse_numeric_text))
            .collect(),
        other => {
            return Err(data_error(
                "42883",
                format!("operator does not exist: numeric / {other}"),
            ));
        }
    })
}

/// `-123.450` as digits and scale (`None`: not numeric text).
fn parse_numeric_text(text: &str) -> Option<Exact> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits: BigInt = format!("{int}{frac}").parse().ok()?;
    Some((digits, frac.len() as i64))
}

/// PostgreSQL's base-10000 weight and first base-10000 digit of `digits × 10^-scale`.
fn weight_and_first_digit(digits: &BigInt, scale: i64) -> (i64, u32) {
    if digits.is_zero() {
        return (0, 0);
    }
    let text = digits.magnitude().to_string();
    // The value is d.ddd × 10^exponent.
    let exponent = text.len() as i64 - 1 - scale;
    let weight = exponent.div_euclid(4);
    let lead = (exponent - 4 * weight + 1) as usize;
    let first = text[..lead.min(text.len())].parse::<u32>().unwrap_or(0)
        * 10u32.pow(lead.saturating_sub(text.len()) as u32);
    (weight, first)
}

/// `select_div_scale`: the display scale of `a / b`.
pub fn division_scale(a: &Exact, b: &Exact) -> i64 {
    let (w1, f1) = weight_and_first_digit(&a.0, a.1);
    let (w2, f2) = weight_and_first_digit(&b.0, b.1);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    (MIN_SIG_DIGITS - qweight * 4)
        .max(a.1)
        .max(b.1)
        .clamp(0, MAX_DISPLAY_SCALE)
}

fn pow10(n: i64) -> BigInt {
    BigInt::from(10u8).pow(n.max(0) as u32)
}

/// `a / b` rounded half away from zero to PostgreSQL's scale, as text.
pub fn divide(a: &Exact, b: &Exact) -> Result<String> {
    if b.0.is_zero() {
        return Err(data_error("22012", "division by zero"));
    }
    let rscale = division_scale(a, b);
    // a / b = (a.0 × 10^b.1) / (b.0 × 10^a.1); times 10^rscale for the unscaled quotient.
    let num = &a.0 * pow10(b.1 + rscale);
    let den = &b.0 * pow10(a.1);
    let (q, r) = (&num / &den, &num % &den);
    let q = if (r.abs() * 2u8) >= den.abs() {
        let negative = (num.sign() == Sign::Minus) != (den.sign() == Sign::Minus);
        if negative { q - 1 } else { q + 1 }
    } else {
        q
    };
    Ok(numeric_text(&q, rscale))
}

/// `digits × 10^-scale` as PostgreSQL prints a numeric.
pub fn numeric_text(digits: &BigInt, scale: i64) -> String {
    let text = digits.magnitude().to_string();
    let scale = scale.max(0) as usize;
    let sign = if digits.is_negative() { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{text}");
    }
    let padded = if text.len() <= scale {
        format!("{}{text}", "0".repeat(scale + 1 - text.len()))
    } else {
        text
    };
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Exact {
        let scale = s.find('.').map_or(0, |p| s.len() - p - 1) as i64;
        (s.replace('.', "").parse().unwrap(), scale)
    }

    fn div(a: &str, b: &str) -> String {
        divide(&ex(a), &ex(b)).unwrap()
    }

    #[test]
    fn scales_follow_select_div_scale() {
        assert_eq!(div("1", "3.0"), "0.33333333333333333333");
        assert_eq!(div("10", "3.0"), "3.3333333333333333");
        assert_eq!(div("2.0", "3"), "0.66666666666666666667");
        assert_eq!(div("100.0", "7"), "14.2857142857142857");
        assert_eq!(div("1", "8"), "0.12500000000000000000");
        assert_eq!(div("2", "2"), "1.00000000000000000000");
        assert_eq!(div("3", "2"), "1.5000000000000000");
        assert_eq!(div("0.0", "1"), "0.00000000000000000000");
        assert_eq!(div("576000.50", "7"), "82285.785714285714");
        assert_eq!(div("312", "8"), "39.0000000000000000");
        assert_eq!(div("-7", "2.0"), "-3.5000000000000000");
        assert_eq!(div("0.99", "10"), "0.09900000000000000000");
        assert_eq!(div("-2", "3"), "-0.66666666666666666667");
    }

    #[test]
    fn division_by_zero_fails() {
        assert!(divide(&ex("1"), &ex("0.00")).is_err());
    }
}
