//! `extract(field from value)` as PostgreSQL 15 answers it: a numeric, with six decimals for
//! `epoch` and `second` (`1704067200.000000`, `7.500000`), three for `milliseconds`, none for
//! the other fields. DataFusion's `date_part` (which `date_part()` calls keep: PostgreSQL's
//! is double precision) answers integers or floats and drops the fraction of `second`; this
//! computes the field through it and converts.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// `pg_extract(field, value)`, what the `extract` syntax is planned as.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgExtract {
    signature: Signature,
}

impl PgExtract {
    /// The function as a UDF.
    pub fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            signature: Signature::any(2, Volatility::Immutable),
        })
    }
}

/// The DataFusion field computing PostgreSQL's `field`, the divisor bringing it to
/// PostgreSQL's unit, and the scale of the numeric result.
fn plan(field: &str) -> (String, f64, i8) {
    match field.to_ascii_lowercase().as_str() {
        "epoch" => ("epoch".to_owned(), 1.0, 6),
        "second" | "seconds" => ("microsecond".to_owned(), 1e6, 6),
        "millisecond" | "milliseconds" => ("microsecond".to_owned(), 1e3, 3),
        "microsecond" | "microseconds" => ("microsecond".to_owned(), 1.0, 0),
        other => (other.to_owned(), 1.0, 0),
    }
}

fn field_name(value: Option<&ScalarValue>) -> Option<String> {
    value
        .and_then(|v| v.try_as_str().flatten())
        .map(str::to_owned)
}

impl ScalarUDFImpl for PgExtract {
    fn name(&self) -> &str {
        "pg_extract"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 6))
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let scale =
            field_name(args.scalar_arguments.first().copied().flatten()).map_or(6, |f| plan(&f).2);
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Decimal128(38, scale),
            true,
        )))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let field = match &args.args[0] {
            ColumnarValue::Scalar(s) => field_name(Some(s)).unwrap_or_default(),
            ColumnarValue::Array(_) => {
                return Err(super::data_error(
                    "0A000",
                    "extract's field must be a constant",
                ));
            }
        };
        let (df_field, divisor, _) = plan(&field);
        let return_type = args.return_field.data_type().clone();
        let mut inner_args = args;
        inner_args.args[0] = ColumnarValue::Scalar(ScalarValue::Utf8(Some(df_field)));
        let date_part = datafusion::functions::datetime::date_part();
        let inner_return = date_part.return_field_from_args(ReturnFieldArgs {
            arg_fields: &inner_args.arg_fields,
            scalar_arguments: &[Some(&ScalarValue::Utf8(Some(plan(&field).0))), None],
        })?;
        inner_args.return_field = inner_return;
        let value = date_part.invoke_with_args(inner_args)?;
        let all_scalar = matches!(value, ColumnarValue::Scalar(_));
        let array = value.to_array(1)?;
        let floats = cast(&array, &DataType::Float64)?;
        let floats = if divisor == 1.0 {
            floats
        } else {
            let f: Float64Array = floats
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(|v| v / divisor))
                .collect();
            Arc::new(f) as ArrayRef
        };
        let out = cast(&floats, &return_type)?;
        if all_scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(out))
    }
}
