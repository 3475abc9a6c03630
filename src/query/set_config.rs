//! `set_config(name, value, is_local)`: PostgreSQL's function form of `SET [LOCAL]`, which
//! drivers and ORMs call (e.g. `set_config('search_path', ..., false)`, row-level-security
//! style `set_config('app.tenant', ..., true)`). The session validates and applies the value
//! (`SessionVars::set_config`), exactly as its SET does.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use super::{QueryError, SessionVars};

#[derive(Debug)]
struct SetConfig {
    signature: Signature,
    vars: Arc<dyn SessionVars>,
}

impl PartialEq for SetConfig {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.vars, &other.vars)
    }
}
impl Eq for SetConfig {}
impl std::hash::Hash for SetConfig {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "set_config".hash(state);
    }
}

impl SetConfig {
    fn call(&self, args: &[ScalarValue]) -> Result<ScalarValue> {
        let text = |v: &ScalarValue| match v {
            ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
                s.clone()
            }
            _ => None,
        };
        let Some(name) = args.first().and_then(text) else {
            return Err(coded("22004", "SET requires parameter name".to_owned()));
        };
        // PostgreSQL: a NULL value sets the empty string; a NULL is_local means false.
        let value = args.get(1).and_then(text).unwrap_or_default();
        let is_local = matches!(args.get(2), Some(ScalarValue::Boolean(Some(true))));
        self.vars
            .set_config(&name, &value, is_local)
            .map(|v| ScalarValue::Utf8(Some(v)))
            .map_err(|(code, message)| coded(code, message))
    }
}

fn coded(code: &'static str, message: String) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::Coded { code, message }))
}

impl ScalarUDFImpl for SetConfig {
    fn name(&self) -> &str {
        "set_config"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.args.iter().find_map(|a| match a {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        let row_args = |row: usize| -> Result<Vec<ScalarValue>> {
            args.args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Scalar(s) => Ok(s.clone()),
                    ColumnarValue::Array(array) => ScalarValue::try_from_array(array, row),
                })
                .collect()
        };
        match rows {
            None => Ok(ColumnarValue::Scalar(self.call(&row_args(0)?)?)),
            Some(0) => Ok(ColumnarValue::Array(
                datafusion::arrow::array::new_empty_array(&DataType::Utf8),
            )),
            Some(n) => {
                let values = (0..n)
                    .map(|r| self.call(&row_args(r)?))
                    .collect::<Result<Vec<_>>>()?;
                Ok(ColumnarValue::Array(ScalarValue::iter_to_array(values)?))
            }
        }
    }
}

/// Registers `set_config(text, text, boolean)` on a session's context.
pub fn register(ctx: &SessionContext, vars: &Arc<dyn SessionVars>) {
    ctx.register_udf(ScalarUDF::new_from_impl(SetConfig {
        signature: Signature::exact(
            vec![DataType::Utf8, DataType::Utf8, DataType::Boolean],
            Volatility::Volatile,
        ),
        vars: Arc::clone(vars),
    }));
}
