//! PostgreSQL's json and jsonb: casts, operators, constructors, processing functions,
//! aggregates and set-returning functions.
//!
//! A json or jsonb value travels as Utf8 text whose field carries the type in tarn's
//! `tarn.pg_type` metadata ([`PG_TYPE_KEY`]), as table columns of those types already do; the
//! functions here read their arguments' fields to tell `json` (text kept as given) from `jsonb`
//! (PostgreSQL's normal form, see [`value`]) from plain text, and tag what they return the same
//! way, so the wire reports `json`/`jsonb` and operators chain (`doc -> 'a' ->> 'b'`).
//!
//! - [`value`]: the value model (parse, normal form, printing, containment).
//! - [`ops`]: the operators (`->`, `@>`, `?`, `||`, `-`, `#-`, ...) and the expression planner
//!   that picks them when an operand is json-typed.
//! - [`build`]: casts, `to_json`, the `*_build_*` constructors and the processing functions.
//! - [`path`]: the SQL/JSON path subset of `jsonb_path_*`, `@?` and `@@`.
//! - [`agg`]: `json_agg` & co., planned as `array_agg` (which keeps `ORDER BY`) plus a finish.
//! - [`sets`]: the rows of `json_each`, `jsonb_array_elements`, ... as lists for `UNNEST`.
//!
//! The SQL-side rewrites that reach these (casts, aggregates, set-returning calls) are
//! `sql/json.rs`.

pub mod agg;
pub mod build;
pub mod ops;
pub mod path;
pub mod sets;
pub mod value;

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;

use super::data_error;
use crate::query::pg_types::{PG_TYPE_KEY, pg_type_of};
use value::Json;

/// What an argument holds, read from its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Json,
    Jsonb,
    Other,
}

/// The kind of values in `field`.
pub fn kind_of(field: &Field) -> Kind {
    match pg_type_of(field) {
        Some("json") => Kind::Json,
        Some("jsonb") => Kind::Jsonb,
        _ => Kind::Other,
    }
}

/// What a function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ret {
    Json,
    Jsonb,
    /// json if the first argument is json, else jsonb.
    LikeFirst,
    Text,
    Bool,
    Int,
    /// A list of text (the rows of a set-returning function).
    TextList,
}

impl Ret {
    fn data_type(self) -> DataType {
        match self {
            Ret::Json | Ret::Jsonb | Ret::LikeFirst | Ret::Text => DataType::Utf8,
            Ret::Bool => DataType::Boolean,
            Ret::Int => DataType::Int32,
            Ret::TextList => DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
        }
    }
}

type Eval = dyn Fn(&[ScalarValue], &[Kind]) -> Result<ScalarValue> + Send + Sync;

/// A json function evaluated row by row over scalar arguments, told each argument's kind.
pub struct JsonFn {
    name: &'static str,
    signature: Signature,
    ret: Ret,
    eval: Arc<Eval>,
}

impl Debug for JsonFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonFn").field("name", &self.name).finish()
    }
}

impl PartialEq for JsonFn {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.eval, &other.eval)
    }
}
impl Eq for JsonFn {}
impl Hash for JsonFn {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

/// A Utf8 field tagged as json or jsonb.
pub fn json_field(name: &str, kind: Kind) -> Field {
    let field = Field::new(name, DataType::Utf8, true);
    match kind {
        Kind::Json => {
            field.with_metadata(HashMap::from([(PG_TYPE_KEY.to_owned(), "json".to_owned())]))
        }
        Kind::Jsonb => field.with_metadata(HashMap::from([(
            PG_TYPE_KEY.to_owned(),
            "jsonb".to_owned(),
        )])),
        Kind::Other => field,
    }
}

impl ScalarUDFImpl for JsonFn {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.ret.data_type())
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let kind = match self.ret {
            Ret::Json => Kind::Json,
            Ret::Jsonb => Kind::Jsonb,
            Ret::LikeFirst => match args.arg_fields.first().map(|f| kind_of(f)) {
                Some(Kind::Json) => Kind::Json,
                _ => Kind::Jsonb,
            },
            _ => {
                return Ok(Arc::new(Field::new(self.name, self.ret.data_type(), true)));
            }
        };
        Ok(Arc::new(json_field(self.name, kind)))
    }
    /// Constant arguments are evaluated while planning only to raise an error there, as
    /// PostgreSQL's constant folding does: otherwise `NULL || jsonb_array_length('1')` would
    /// be simplified to NULL without the call ever failing.
    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let constants: Option<Vec<(ScalarValue, Kind)>> = args
            .iter()
            .map(|a| match a {
                Expr::Literal(v, meta) => {
                    let kind = match meta.as_ref().and_then(|m| m.inner().get(PG_TYPE_KEY)) {
                        Some(t) if t == "json" => Kind::Json,
                        Some(t) if t == "jsonb" => Kind::Jsonb,
                        _ => Kind::Other,
                    };
                    Some((v.clone(), kind))
                }
                _ => None,
            })
            .collect();
        if let Some(constants) = constants {
            let (values, kinds): (Vec<ScalarValue>, Vec<Kind>) = constants.into_iter().unzip();
            (self.eval)(&values, &kinds)?;
        }
        Ok(ExprSimplifyResult::Original(args))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let kinds: Vec<Kind> = args.arg_fields.iter().map(|f| kind_of(f)).collect();
        let rows = args.args.iter().find_map(|a| match a {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        let Some(rows) = rows else {
            let scalars: Vec<ScalarValue> = args
                .args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Scalar(s) => s.clone(),
                    ColumnarValue::Array(_) => unreachable!("no array arguments"),
                })
                .collect();
            return Ok(ColumnarValue::Scalar((self.eval)(&scalars, &kinds)?));
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
            out.push((self.eval)(&scalars, &kinds)?);
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(
                datafusion::arrow::array::new_empty_array(&self.ret.data_type()),
            ));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

/// Any arguments, `min..` of them.
pub fn any_args(counts: &[usize]) -> Signature {
    Signature::one_of(
        counts
            .iter()
            .map(|&n| {
                if n == 0 {
                    TypeSignature::Nullary
                } else {
                    TypeSignature::Any(n)
                }
            })
            .collect(),
        Volatility::Immutable,
    )
}

/// A json function as a UDF.
pub fn json_fn(
    name: &'static str,
    signature: Signature,
    ret: Ret,
    eval: impl Fn(&[ScalarValue], &[Kind]) -> Result<ScalarValue> + Send + Sync + 'static,
) -> ScalarUDF {
    ScalarUDF::new_from_impl(JsonFn {
        name,
        signature,
        ret,
        eval: Arc::new(eval),
    })
}

/// The text of a string argument (`None` for NULL or a non-string).
pub fn text_arg(v: &ScalarValue) -> Option<&str> {
    match v {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => s.as_deref(),
        _ => None,
    }
}

/// An argument read as a json value: json/jsonb/text parsed; `None` for NULL.
pub fn json_arg(v: &ScalarValue) -> Result<Option<Json>> {
    if v.is_null() {
        return Ok(None);
    }
    match text_arg(v) {
        Some(text) => Json::parse(text).map(Some),
        None => Ok(Some(build::from_scalar(v, Kind::Other)?)),
    }
}

/// An argument read as a jsonb value (normal form).
pub fn jsonb_arg(v: &ScalarValue) -> Result<Option<Json>> {
    Ok(json_arg(v)?.map(Json::normalize))
}

/// A text wrapped as a string ScalarValue.
pub fn text(value: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(value)
}

/// A `text[]` argument: an array value, or PostgreSQL's array literal text (`'{a,b,1}'`).
pub fn text_array_arg(v: &ScalarValue) -> Result<Option<Vec<Option<String>>>> {
    if v.is_null() {
        return Ok(None);
    }
    if let Some(literal) = text_arg(v) {
        return parse_text_array(literal).map(Some);
    }
    match v {
        ScalarValue::List(list) => {
            let values = list.value(0);
            let values = datafusion::arrow::compute::cast(&values, &DataType::Utf8)?;
            let strings = values.as_string::<i32>();
            Ok(Some(strings.iter().map(|s| s.map(str::to_owned)).collect()))
        }
        other => Err(data_error(
            "42883",
            format!(
                "function argument of type {} is not text[]",
                other.data_type()
            ),
        )),
    }
}

/// PostgreSQL's one-dimensional array literal (`{a, "b c", NULL}`).
pub fn parse_text_array(literal: &str) -> Result<Vec<Option<String>>> {
    let malformed = || data_error("22P02", format!("malformed array literal: \"{literal}\""));
    let inner = literal
        .trim()
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .ok_or_else(malformed)?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(malformed()),
                    Some('"') => break,
                    Some('\\') => item.push(chars.next().ok_or_else(malformed)?),
                    Some(c) => item.push(c),
                }
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '\\' {
                    chars.next();
                    item.push(chars.next().ok_or_else(malformed)?);
                    continue;
                }
                item.push(c);
                chars.next();
            }
            item = item.trim_end().to_owned();
        }
        out.push(if !quoted && item.eq_ignore_ascii_case("null") {
            None
        } else {
            Some(item)
        });
        match chars.next() {
            None => break,
            Some(',') => continue,
            Some(_) => return Err(malformed()),
        }
    }
    Ok(out)
}

/// A path argument (`'{a,b,1}'` or `array['a','b']`); NULL elements are refused as PostgreSQL
/// does for path operators.
pub fn path_arg(v: &ScalarValue) -> Result<Option<Vec<String>>> {
    let Some(items) = text_array_arg(v)? else {
        return Ok(None);
    };
    Ok(items.into_iter().collect::<Option<Vec<_>>>())
}

/// 22023: PostgreSQL's "invalid parameter value" of the json functions.
pub fn invalid_parameter(message: impl Into<String>) -> datafusion::error::DataFusionError {
    data_error("22023", message)
}

/// Registers the json functions on `ctx`.
pub fn register(ctx: &SessionContext) {
    for udf in build::functions()
        .into_iter()
        .chain(ops::functions())
        .chain(agg::functions())
        .chain(sets::functions())
        .chain(path::functions())
    {
        ctx.register_udf(udf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_literals() {
        assert_eq!(
            parse_text_array(r#"{a, 1, b, "def", c, 3.5}"#).unwrap(),
            ["a", "1", "b", "def", "c", "3.5"].map(|s| Some(s.to_owned()))
        );
        assert_eq!(
            parse_text_array("{}").unwrap(),
            Vec::<Option<String>>::new()
        );
        assert_eq!(
            parse_text_array(r#"{"a b",NULL}"#).unwrap(),
            [Some("a b".to_owned()), None]
        );
        assert!(parse_text_array("a,b").is_err());
    }
}
