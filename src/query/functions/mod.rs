//! SQL functions whose answer depends on the session: `version()`, `current_setting()`,
//! `current_schema()`, `current_user`, ... Registered on each session's context after
//! `pg_catalog`'s own, so these (which know the real session) take precedence.
//!
//! PostgreSQL's function library where DataFusion's differs or lacks a function lives in one
//! file per family (`numeric.rs`, `datetime.rs`, ...), registered by [`register_pg_functions`].

pub mod arrays;
pub mod bytes;
pub mod date_trunc;
pub mod datetime;
pub mod extract;
pub mod interval;
pub mod json;
pub mod math;
pub mod numeric;
pub mod numeric_coalesce;
pub mod numeric_division;
pub mod numeric_variance;
pub mod ordered_set;
pub mod patterns;
pub mod real_sum;
pub mod single_value;
pub mod sliding_string_agg;
pub mod strings;
pub mod to_number;
pub mod uuids;

use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;

/// The PostgreSQL release tarn speaks for (`server_version`, `version()`).
pub const PG_VERSION: &str = "15.0";
/// `server_version_num` for [`PG_VERSION`].
pub const PG_VERSION_NUM: &str = "150000";

/// What a session exposes to its SQL functions.
pub trait SessionVars: Debug + Send + Sync {
    /// A setting's current value as `SHOW` prints it; `None` for an unknown name.
    fn setting(&self, name: &str) -> Option<String>;
    /// The user the client connected as.
    fn user(&self) -> String;
    /// The schemas of `search_path` that exist, in order.
    fn effective_search_path(&self) -> Vec<String>;
    /// The backend process id given to the client at startup.
    fn backend_pid(&self) -> i32;
    /// The catalog of the session's temporary tables, once it has one (its pg_catalog lists
    /// them).
    fn temp_catalog(&self) -> Option<std::sync::Arc<crate::query::WarehouseCatalog>> {
        None
    }
    /// Whether the running statement was asked to stop (cancel request, shutdown): checked by
    /// functions that wait (advisory locks).
    fn interrupted(&self) -> bool {
        false
    }
    /// `lock_timeout` (`None`: wait forever).
    fn lock_timeout(&self) -> Option<std::time::Duration> {
        None
    }
    /// `statement_timeout` (`None`: none).
    fn statement_timeout(&self) -> Option<std::time::Duration> {
        None
    }
    /// `set_config(name, value, is_local)`: sets a setting as `SET [LOCAL]` does and returns
    /// its new value, or the error (SQLSTATE, message).
    fn set_config(
        &self,
        _name: &str,
        _value: &str,
        _is_local: bool,
    ) -> Result<String, (&'static str, String)> {
        Err(("0A000", "set_config is not available here".to_owned()))
    }
}

/// The text of `SELECT version()`; SQLAlchemy and others parse `PostgreSQL (\d+)\.(\d+)`.
pub fn version_string() -> String {
    format!(
        "PostgreSQL {PG_VERSION} (tarn {}) on {}-{}, compiled by rustc, 64-bit",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

type Eval = dyn Fn(&[ScalarValue]) -> Result<ScalarValue> + Send + Sync;

/// A scalar function evaluated row by row from scalar arguments.
struct SessionFn {
    name: &'static str,
    signature: Signature,
    return_type: DataType,
    eval: Arc<Eval>,
}

impl Debug for SessionFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFn")
            .field("name", &self.name)
            .finish()
    }
}

impl PartialEq for SessionFn {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.eval, &other.eval)
    }
}
impl Eq for SessionFn {}
impl Hash for SessionFn {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for SessionFn {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.return_type.clone())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let array_len = args.args.iter().find_map(|a| match a {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        // A volatile function with constant arguments still runs once per row (`nextval`).
        let volatile = self.signature.volatility == Volatility::Volatile;
        let array_len =
            array_len.or((volatile && args.number_rows > 1).then_some(args.number_rows));
        let Some(rows) = array_len else {
            let scalars: Vec<ScalarValue> = args
                .args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Scalar(s) => s.clone(),
                    ColumnarValue::Array(_) => unreachable!("no array arguments"),
                })
                .collect();
            return Ok(ColumnarValue::Scalar((self.eval)(&scalars)?));
        };
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            let scalars = args
                .args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Scalar(s) => Ok(s.clone()),
                    ColumnarValue::Array(array) => ScalarValue::try_from_array(array, row),
                })
                .collect::<Result<Vec<_>>>()?;
            out.push((self.eval)(&scalars)?);
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

pub(super) fn register(
    ctx: &SessionContext,
    name: &'static str,
    signature: Signature,
    return_type: DataType,
    eval: impl Fn(&[ScalarValue]) -> Result<ScalarValue> + Send + Sync + 'static,
) {
    ctx.register_udf(session_fn(name, signature, return_type, eval));
}

/// A row-by-row function over scalar arguments.
pub(super) fn session_fn(
    name: &'static str,
    signature: Signature,
    return_type: DataType,
    eval: impl Fn(&[ScalarValue]) -> Result<ScalarValue> + Send + Sync + 'static,
) -> ScalarUDF {
    ScalarUDF::new_from_impl(SessionFn {
        name,
        signature,
        return_type,
        eval: Arc::new(eval),
    })
}

fn text(value: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(value)
}

/// Registers the session functions on `ctx`.
pub fn register_session_functions(ctx: &SessionContext, vars: Arc<dyn SessionVars>) {
    let stable = Volatility::Stable;
    let version = version_string();
    register(
        ctx,
        "version",
        Signature::nullary(stable),
        DataType::Utf8,
        move |_| Ok(text(Some(version.clone()))),
    );

    let v = Arc::clone(&vars);
    register(
        ctx,
        "current_setting",
        Signature::one_of(
            vec![
                TypeSignature::Exact(vec![DataType::Utf8]),
                TypeSignature::Exact(vec![DataType::Utf8, DataType::Boolean]),
            ],
            stable,
        ),
        DataType::Utf8,
        move |args| {
            let missing_ok = matches!(args.get(1), Some(ScalarValue::Boolean(Some(true))));
            match &args[0] {
                ScalarValue::Utf8(Some(name)) => match v.setting(&name.to_lowercase()) {
                    Some(value) => Ok(text(Some(value))),
                    None if missing_ok => Ok(text(None)),
                    None => exec_err!("unrecognized configuration parameter \"{name}\""),
                },
                _ => Ok(text(None)),
            }
        },
    );

    let v = Arc::clone(&vars);
    register(
        ctx,
        "current_schema",
        Signature::nullary(stable),
        DataType::Utf8,
        move |_| Ok(text(v.effective_search_path().into_iter().next())),
    );

    let v = Arc::clone(&vars);
    let item = Arc::new(Field::new_list_field(DataType::Utf8, true));
    let list_type = DataType::List(Arc::clone(&item));
    register(
        ctx,
        "current_schemas",
        Signature::exact(vec![DataType::Boolean], stable),
        list_type,
        move |args| {
            let mut schemas = Vec::new();
            if matches!(args.first(), Some(ScalarValue::Boolean(Some(true)))) {
                schemas.push("pg_catalog".to_owned());
            }
            schemas.extend(v.effective_search_path());
            let values: Vec<ScalarValue> = schemas.into_iter().map(|s| text(Some(s))).collect();
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &values,
                &DataType::Utf8,
            )))
        },
    );

    for name in ["current_user", "session_user", "user", "current_role"] {
        let v = Arc::clone(&vars);
        register(
            ctx,
            name,
            Signature::nullary(stable),
            DataType::Utf8,
            move |_| Ok(text(Some(v.user()))),
        );
    }

    let v = Arc::clone(&vars);
    register(
        ctx,
        "pg_backend_pid",
        Signature::nullary(stable),
        DataType::Int32,
        move |_| Ok(ScalarValue::Int32(Some(v.backend_pid()))),
    );
}

/// An error PostgreSQL reports with SQLSTATE `code` (a data exception of a function).
pub fn data_error(
    code: &'static str,
    message: impl Into<String>,
) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::External(Box::new(super::QueryError::Sql {
        code,
        message: message.into(),
    }))
}

/// Registers PostgreSQL's functions where DataFusion's differ or are missing (after
/// DataFusion's and `pg_catalog`'s, so these take precedence).
pub fn register_pg_functions(ctx: &SessionContext) {
    arrays::register(ctx);
    datetime::register(ctx);
    math::register(ctx);
    ordered_set::register(ctx);
    real_sum::register(ctx);
    sliding_string_agg::register(ctx);
    to_number::register(ctx);
    // `every(bool)`: the SQL-standard name PostgreSQL gives `bool_and`.
    let bool_and = datafusion::functions_aggregate::bool_and_or::bool_and_udaf();
    ctx.register_udaf(bool_and.as_ref().clone().with_aliases(["every"]));
    // `variance`: PostgreSQL's other name for `var_samp`.
    let var_samp = datafusion::functions_aggregate::variance::var_samp_udaf();
    ctx.register_udaf(var_samp.as_ref().clone().with_aliases(["variance"]));
    strings::register(ctx);
    patterns::register(ctx);
    bytes::register(ctx);
    ctx.register_udf(date_trunc::DateTrunc::udf());
    single_value::register(ctx);
    json::register(ctx);
    uuids::register(ctx);
}

/// Fault injection for tests: `tarn_debug_panic()` panics while the statement runs.
pub fn register_debug_functions(ctx: &SessionContext) {
    register(
        ctx,
        "tarn_debug_panic",
        Signature::nullary(Volatility::Volatile),
        DataType::Utf8,
        |_| panic!("tarn_debug_panic() was called"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_matches_sqlalchemy_pattern() {
        // SQLAlchemy: r"PostgreSQL (\d+)\.?(\d+)?(?:\.(\d+))?(?:\.\d+)?(?:devel|beta)?"
        let v = version_string();
        let rest = v
            .strip_prefix("PostgreSQL ")
            .expect("starts with PostgreSQL");
        let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
        assert_eq!(major, "15");
        assert!(v.contains("tarn"));
    }
}
