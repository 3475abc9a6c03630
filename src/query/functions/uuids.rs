//! `tarn_cast_uuid(x)`: PostgreSQL's uuid input function, which `x::uuid` becomes
//! (`sql/uuids.rs`). tarn keeps a uuid as Utf8 text in canonical form (lower case, hyphenated)
//! on a field tagged `uuid` ([`PG_TYPE_KEY`]), as uuid table columns are: the wire reports
//! type 2950 and clients read a uuid. Text PostgreSQL reads as a uuid (upper case, braces, no
//! hyphens) is brought to that form; anything else is 22P02.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use super::data_error;
use crate::query::pg_types::PG_TYPE_KEY;

/// Registers `tarn_cast_uuid`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(CastUuid::new()));
}

/// A Utf8 field tagged `uuid`.
pub fn uuid_field(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
        .with_metadata(HashMap::from([(PG_TYPE_KEY.to_owned(), "uuid".to_owned())]))
}

/// `text` read as PostgreSQL reads a uuid, in canonical form.
pub fn parse_uuid(text: &str) -> Result<String> {
    uuid::Uuid::parse_str(text.trim())
        .map(|id| id.hyphenated().to_string())
        .map_err(|_| {
            data_error(
                "22P02",
                format!("invalid input syntax for type uuid: \"{text}\""),
            )
        })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CastUuid {
    signature: Signature,
}

impl CastUuid {
    fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for CastUuid {
    fn name(&self) -> &str {
        "tarn_cast_uuid"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let nullable = args.arg_fields.first().is_none_or(|f| f.is_nullable());
        Ok(Arc::new(uuid_field(self.name(), nullable)))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(data_error(
                "42883",
                "function tarn_cast_uuid takes one argument",
            ));
        };
        match arg {
            ColumnarValue::Scalar(value) => {
                let text = cast_text(&value.to_array()?)?;
                let text = text.as_string::<i32>();
                let out = if text.is_null(0) {
                    None
                } else {
                    Some(parse_uuid(text.value(0))?)
                };
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(out)))
            }
            ColumnarValue::Array(array) => {
                let text = cast_text(array)?;
                let text = text.as_string::<i32>();
                let mut out = StringBuilder::with_capacity(text.len(), text.len() * 36);
                for i in 0..text.len() {
                    if text.is_null(i) {
                        out.append_null();
                    } else {
                        out.append_value(parse_uuid(text.value(i))?);
                    }
                }
                Ok(ColumnarValue::Array(Arc::new(out.finish())))
            }
        }
    }
}

/// The argument as Utf8 (a uuid's input is text; NULL of any type is NULL).
fn cast_text(array: &ArrayRef) -> Result<ArrayRef> {
    match array.data_type() {
        DataType::Utf8 => Ok(Arc::clone(array)),
        DataType::Null | DataType::Utf8View | DataType::LargeUtf8 => {
            Ok(cast(array, &DataType::Utf8)?)
        }
        other => Err(data_error(
            "42846",
            format!(
                "cannot cast type {} to uuid",
                crate::query::pg_typeof::pg_type_name(&Field::new("", other.clone(), true))
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_postgres_uuid_spellings() {
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for text in [
            canonical,
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
        ] {
            assert_eq!(parse_uuid(text).unwrap(), canonical);
        }
        assert!(parse_uuid("not a uuid").is_err());
    }
}
