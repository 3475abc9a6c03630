//! `to_number(text, format)`: a number read through a PostgreSQL numeric template.
//!
//! DataFusion has no `to_number`. This reads the template's digit positions (`9`, `0`), its
//! decimal point (`.` / `D`) and lets group separators, currency symbols and blanks pass; a
//! `-` (or `(` of `PR`) makes the number negative. Digits past the template's positions are
//! dropped as in PostgreSQL (`to_number('12345', '99')` = 12, `to_number('1.567', '9.99')` =
//! 1.56), and text without a digit fails with 22P02. The result is numeric with the template's
//! fraction digits as its scale.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use super::data_error;

/// Registers `to_number`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ToNumber {
        signature: Signature::exact(vec![DataType::Utf8, DataType::Utf8], Volatility::Immutable),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToNumber {
    signature: Signature,
}

/// The scale a template gives when it is not a constant.
const DEFAULT_SCALE: usize = 10;

/// Digit positions before and after the template's decimal point.
fn template(format: &str) -> (usize, usize) {
    let upper = format.to_ascii_uppercase();
    let (int, frac) = match upper.find(['.', 'D']) {
        Some(p) => (&upper[..p], &upper[p + 1..]),
        None => (upper.as_str(), ""),
    };
    let digits = |s: &str| s.chars().filter(|c| matches!(c, '9' | '0')).count();
    (digits(int), digits(frac))
}

/// `text` read through a template of `int_slots`.`frac_slots` digits: unscaled digits at scale
/// `frac_slots`.
fn read(text: &str, int_slots: usize, frac_slots: usize) -> Result<i128> {
    let (mut int, mut frac) = (String::new(), String::new());
    let mut negative = false;
    let mut after_point = false;
    for c in text.chars() {
        match c {
            '0'..='9' if after_point && frac.len() < frac_slots => frac.push(c),
            '0'..='9' if !after_point && int.len() < int_slots => int.push(c),
            '.' if frac_slots > 0 => after_point = true,
            '-' | '(' => negative = true,
            _ => {}
        }
    }
    if int.is_empty() && frac.is_empty() {
        return Err(data_error(
            "22P02",
            "invalid input syntax for type numeric: \" \"",
        ));
    }
    let digits = format!("{int}{frac:0<frac_slots$}");
    let value: i128 = digits
        .parse()
        .map_err(|_| data_error("22003", "numeric field overflow"))?;
    Ok(if negative { -value } else { value })
}

impl ScalarUDFImpl for ToNumber {
    fn name(&self) -> &str {
        "to_number"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, DEFAULT_SCALE as i8))
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let scale = match args.scalar_arguments.get(1) {
            Some(Some(ScalarValue::Utf8(Some(format)))) => template(format).1.min(38),
            _ => DEFAULT_SCALE,
        };
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Decimal128(38, scale as i8),
            true,
        )))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let DataType::Decimal128(_, scale) = args.return_field.data_type().clone() else {
            return Err(data_error("XX000", "to_number: unexpected result type"));
        };
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let text = args.args[0].to_array(rows)?;
        let format = args.args[1].to_array(rows)?;
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            let (ScalarValue::Utf8(Some(t)), ScalarValue::Utf8(Some(f))) = (
                ScalarValue::try_from_array(&text, row)?,
                ScalarValue::try_from_array(&format, row)?,
            ) else {
                out.push(ScalarValue::Decimal128(None, 38, scale));
                continue;
            };
            let (int_slots, frac_slots) = template(&f);
            let frac_slots = frac_slots.min(scale as usize);
            let value =
                read(&t, int_slots, frac_slots)? * 10i128.pow((scale as usize - frac_slots) as u32);
            out.push(ScalarValue::Decimal128(Some(value), 38, scale));
        }
        if scalar {
            return Ok(ColumnarValue::Scalar(out.remove(0)));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_number(text: &str, format: &str) -> Result<i128> {
        let (i, f) = template(format);
        read(text, i, f)
    }

    #[test]
    fn reads_like_postgres() {
        assert_eq!(to_number("12,345.678", "99G999D99").unwrap(), 1234567);
        assert_eq!(to_number("-12.5", "S99.9").unwrap(), -125);
        assert_eq!(to_number("12345", "99").unwrap(), 12);
        assert_eq!(to_number(" 42 ", "999").unwrap(), 42);
        assert_eq!(to_number("1.5", "9").unwrap(), 1);
        assert_eq!(to_number("$1,234", "L9,999").unwrap(), 1234);
        assert!(to_number("abc", "999").is_err());
    }
}
