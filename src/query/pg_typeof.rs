//! `pg_typeof(any)`: the PostgreSQL type name of a value, as PostgreSQL shows it.
//!
//! It reads the argument's field, so columns with tarn's type hints (`varchar(n)`, `uuid`,
//! `jsonb`, ...) answer with their PostgreSQL type, not Arrow's.

use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;

use super::pg_types::pg_type_of;

/// PostgreSQL's name for the type of values in `field`.
pub fn pg_type_name(field: &Field) -> String {
    match pg_type_of(field) {
        Some("varchar") => return "character varying".to_owned(),
        Some("bpchar") => return "character".to_owned(),
        Some(hint @ ("uuid" | "json" | "jsonb")) => return hint.to_owned(),
        _ => {}
    }
    data_type_name(field.data_type())
}

fn data_type_name(ty: &DataType) -> String {
    match ty {
        DataType::Null => "unknown",
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint",
        DataType::Int32 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 => "bigint",
        DataType::UInt64 | DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "bytea",
        DataType::FixedSizeBinary(_) => "bytea",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Timestamp(TimeUnit::Second | TimeUnit::Millisecond, None)
        | DataType::Timestamp(_, None) => "timestamp without time zone",
        DataType::Interval(_) | DataType::Duration(_) => "interval",
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            return format!("{}[]", pg_type_name(f));
        }
        DataType::Struct(_) => "record",
        DataType::Dictionary(_, v) => return data_type_name(v),
        other => return other.to_string(),
    }
    .to_owned()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgTypeof {
    signature: Signature,
}

impl ScalarUDFImpl for PgTypeof {
    fn name(&self) -> &str {
        "pg_typeof"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = args
            .arg_fields
            .first()
            .map_or_else(|| "unknown".to_owned(), |f| pg_type_name(f));
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name))))
    }
}

/// Registers `pg_typeof` on `ctx`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(PgTypeof {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;

    #[test]
    fn names_like_postgres() {
        let f = |t: DataType| pg_type_name(&Field::new("x", t, true));
        assert_eq!(f(DataType::Int32), "integer");
        assert_eq!(f(DataType::Decimal128(12, 2)), "numeric");
        assert_eq!(
            f(DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("UTC".into())
            )),
            "timestamp with time zone"
        );
        assert_eq!(
            f(DataType::List(Arc::new(Field::new(
                "e",
                DataType::Utf8,
                true
            )))),
            "text[]"
        );
        let hinted = Field::new("u", DataType::Utf8, true).with_metadata(HashMap::from([(
            super::super::pg_types::PG_TYPE_KEY.to_owned(),
            "uuid".to_owned(),
        )]));
        assert_eq!(pg_type_name(&hinted), "uuid");
    }
}
