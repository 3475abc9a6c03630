//! `coalesce` of numerics with different scales, each value printed with its own.
//!
//! PostgreSQL's `coalesce(price, 0)` over a `numeric(10,2)` column is an unconstrained numeric:
//! a price prints as `0.25`, the fallback as `0`. DataFusion's coalesce is a decimal of one
//! scale (`0.00`). [`PgNumericCoalesce`] returns the first non-NULL argument as numeric text
//! at that argument's scale (a `Utf8` field tagged `numeric`); `pg_numeric_output.rs` uses it
//! for such a `coalesce` a query returns.

use datafusion::arrow::array::StringBuilder;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::numeric_division::{exact_args, numeric_text, numeric_text_field, numeric_text_result};

/// `pg_numeric_coalesce(a, b, ...)`: the first non-NULL integer or numeric, as numeric text.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgNumericCoalesce {
    signature: Signature,
}

impl Default for PgNumericCoalesce {
    fn default() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

impl PgNumericCoalesce {
    /// Whether `coalesce` over arguments of `types` needs this: integers and numerics (and
    /// NULLs) of more than one scale.
    pub fn needed(types: &[DataType]) -> bool {
        let scale = |t: &DataType| match t {
            DataType::Decimal128(_, s) => Some(Some(*s)),
            DataType::Null => Some(None),
            t if t.is_integer() => Some(Some(0)),
            _ => None,
        };
        let Some(scales) = types.iter().map(scale).collect::<Option<Vec<_>>>() else {
            return false;
        };
        let mut known = scales.into_iter().flatten();
        let first = known.next();
        types.iter().any(|t| matches!(t, DataType::Decimal128(..)))
            && known.any(|s| Some(s) != first)
    }
}

impl ScalarUDFImpl for PgNumericCoalesce {
    fn name(&self) -> &str {
        "pg_numeric_coalesce"
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
        let rows = columns.first().map_or(0, Vec::len);
        let mut out = StringBuilder::with_capacity(rows, rows * 12);
        for row in 0..rows {
            let first = columns.iter().find_map(|c| c[row].as_ref());
            out.append_option(first.map(|(digits, scale)| numeric_text(digits, *scale)));
        }
        numeric_text_result(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needed_for_mixed_scales_only() {
        let d = |s| DataType::Decimal128(10, s);
        assert!(PgNumericCoalesce::needed(&[d(2), DataType::Int32]));
        assert!(PgNumericCoalesce::needed(&[d(2), DataType::Null, d(0)]));
        assert!(!PgNumericCoalesce::needed(&[d(2), d(2)]));
        assert!(!PgNumericCoalesce::needed(&[
            DataType::Int32,
            DataType::Int64
        ]));
        assert!(!PgNumericCoalesce::needed(&[d(2), DataType::Utf8]));
    }
}
