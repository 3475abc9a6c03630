//! PostgreSQL string functions DataFusion lacks: `format(fmt, ...)` (with `%s`, `%I`, `%L`,
//! `%%`, positions `%2$s` and widths `%-10s`), `gen_random_uuid()`, and PostgreSQL's own
//! `concat`/`concat_ws` (booleans as `t`/`f`), `quote_literal`/`quote_nullable` and `chr`
//! (54000 for 0, 22023 for a negative code).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use datafusion::common::ScalarValue;

use super::{data_error, session_fn};
use crate::query::pg_types::PG_TYPE_KEY;

/// Registers the string functions of this family.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Format::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(GenRandomUuid::new()));
    let any = || Signature::variadic_any(Volatility::Immutable);
    let utf8 = DataType::Utf8;
    ctx.register_udf(session_fn("concat", any(), utf8.clone(), |args| {
        let mut out = String::new();
        for a in args {
            out.push_str(&scalar_text(a)?.unwrap_or_default());
        }
        Ok(ScalarValue::Utf8(Some(out)))
    }));
    ctx.register_udf(session_fn("concat_ws", any(), utf8.clone(), |args| {
        let Some(sep) = args.first().map(scalar_text).transpose()?.flatten() else {
            return Ok(ScalarValue::Utf8(None));
        };
        let mut parts = Vec::new();
        for a in &args[1..] {
            parts.extend(scalar_text(a)?);
        }
        Ok(ScalarValue::Utf8(Some(parts.join(&sep))))
    }));
    ctx.register_udf(session_fn("quote_literal", any(), utf8.clone(), |args| {
        Ok(ScalarValue::Utf8(
            scalar_text(&args[0])?.map(|v| quote_literal(Some(&v))),
        ))
    }));
    ctx.register_udf(session_fn("quote_nullable", any(), utf8.clone(), |args| {
        Ok(ScalarValue::Utf8(Some(quote_literal(
            scalar_text(&args[0])?.as_deref(),
        ))))
    }));
    ctx.register_udf(session_fn("chr", any(), utf8, |args| {
        let Some(code) = super::patterns::int_arg(args, 0)? else {
            return Ok(ScalarValue::Utf8(None));
        };
        if code == 0 {
            return Err(data_error("54000", "null character not permitted"));
        }
        if code < 0 {
            return Err(data_error("22023", "character number must be positive"));
        }
        let c = u32::try_from(code)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| data_error("54000", "requested character too large for encoding"))?;
        Ok(ScalarValue::Utf8(Some(c.to_string())))
    }));
}

/// A scalar's text as PostgreSQL's output function writes it (booleans as `t`/`f`).
fn scalar_text(value: &ScalarValue) -> Result<Option<String>> {
    if value.is_null() {
        return Ok(None);
    }
    Ok(texts(&value.to_array()?)?.into_iter().next().flatten())
}

/// `format(formatstr text [, formatarg "any" [, ...] ])`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Format {
    signature: Signature,
}

impl Format {
    fn new() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Stable),
        }
    }
}

/// An argument's text as PostgreSQL's output function writes it (NULL stays None).
fn texts(value: &ArrayRef) -> Result<Vec<Option<String>>> {
    Ok(match value.data_type() {
        DataType::Boolean => value
            .as_boolean()
            .iter()
            .map(|b| b.map(|b| if b { "t" } else { "f" }.to_owned()))
            .collect(),
        DataType::Float32
        | DataType::Float64
        | DataType::Timestamp(..)
        | DataType::Date32
        | DataType::Date64
        | DataType::Time32(_)
        | DataType::Time64(_) => {
            let t = crate::query::pg_format::pg_text(value)?;
            let t = datafusion::arrow::compute::cast(&t, &DataType::Utf8)?;
            t.as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_owned))
                .collect()
        }
        _ => {
            let s = datafusion::arrow::compute::cast(value, &DataType::Utf8)?;
            s.as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_owned))
                .collect()
        }
    })
}

/// `quote_literal`: NULL as `NULL`, else quoted, with `E'...'` when backslashes occur.
fn quote_literal(value: Option<&str>) -> String {
    match value {
        None => "NULL".to_owned(),
        Some(v) => {
            let body = v.replace('\'', "''");
            if v.contains('\\') {
                format!("E'{}'", body.replace('\\', "\\\\"))
            } else {
                format!("'{body}'")
            }
        }
    }
}

/// `quote_ident`: quoted unless a plain lower-case identifier.
fn quote_ident(value: &str) -> String {
    let plain = value
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !is_reserved(value);
    if plain {
        value.to_owned()
    } else {
        format!("\"{}\"", value.replace('"', "\"\""))
    }
}

/// PostgreSQL's reserved keywords (those `quote_ident` quotes).
pub(crate) fn is_reserved(word: &str) -> bool {
    const RESERVED: &[&str] = &[
        "all",
        "analyse",
        "analyze",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "asymmetric",
        "both",
        "case",
        "cast",
        "check",
        "collate",
        "column",
        "constraint",
        "create",
        "current_catalog",
        "current_date",
        "current_role",
        "current_time",
        "current_timestamp",
        "current_user",
        "default",
        "deferrable",
        "desc",
        "distinct",
        "do",
        "else",
        "end",
        "except",
        "false",
        "fetch",
        "for",
        "foreign",
        "from",
        "grant",
        "group",
        "having",
        "in",
        "initially",
        "intersect",
        "into",
        "lateral",
        "leading",
        "limit",
        "localtime",
        "localtimestamp",
        "not",
        "null",
        "offset",
        "on",
        "only",
        "or",
        "order",
        "placing",
        "primary",
        "references",
        "returning",
        "select",
        "session_user",
        "some",
        "symmetric",
        "table",
        "then",
        "to",
        "trailing",
        "true",
        "union",
        "unique",
        "user",
        "using",
        "variadic",
        "when",
        "where",
        "window",
        "with",
    ];
    RESERVED.contains(&word)
}

/// One row of `format`: `args[i]` is the text of argument i + 1.
fn format_row(fmt: &str, args: &[Option<String>]) -> Result<String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    let mut next_arg = 0usize;
    let too_few = || data_error("22023", "too few arguments for format()");
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // %[position$][flags][width]type
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let mut position = None;
        if chars.peek() == Some(&'$') && !digits.is_empty() {
            chars.next();
            let p: usize = digits
                .parse()
                .map_err(|_| data_error("22023", "argument number is out of range"))?;
            if p == 0 {
                return Err(data_error(
                    "22023",
                    "format specifies argument 0, but arguments are numbered from 1",
                ));
            }
            position = Some(p - 1);
            digits.clear();
        }
        let mut left = false;
        if digits.is_empty() {
            while chars.peek() == Some(&'-') {
                left = true;
                chars.next();
            }
            if chars.peek() == Some(&'*') {
                return Err(data_error(
                    "0A000",
                    "format(): widths taken from arguments (*) are not supported by tarn",
                ));
            }
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                digits.push(*d);
                chars.next();
            }
        }
        let width: usize = if digits.is_empty() {
            0
        } else {
            digits
                .parse()
                .map_err(|_| data_error("22023", "number is out of range"))?
        };
        let Some(kind) = chars.next() else {
            return Err(data_error("22023", "unterminated format() type specifier"));
        };
        let index = position.unwrap_or(next_arg);
        next_arg = index + 1;
        let value = args.get(index).ok_or_else(too_few)?;
        let text = match kind {
            's' => value.clone().unwrap_or_default(),
            'L' => quote_literal(value.as_deref()),
            'I' => match value {
                Some(v) => quote_ident(v),
                None => {
                    return Err(data_error(
                        "22004",
                        "null values cannot be formatted as an SQL identifier",
                    ));
                }
            },
            other => {
                return Err(data_error(
                    "22023",
                    format!("unrecognized format() type specifier \"{other}\""),
                ));
            }
        };
        let len = text.chars().count();
        if len < width {
            let pad = " ".repeat(width - len);
            if left {
                out.push_str(&text);
                out.push_str(&pad);
            } else {
                out.push_str(&pad);
                out.push_str(&text);
            }
        } else {
            out.push_str(&text);
        }
    }
    Ok(out)
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        "format"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { args.number_rows };
        let columns = args
            .args
            .iter()
            .map(|a| a.to_array(n).and_then(|a| texts(&a)))
            .collect::<Result<Vec<_>>>()?;
        let mut out = StringBuilder::new();
        for row in 0..n {
            match &columns[0][row] {
                None => out.append_null(),
                Some(fmt) => {
                    let values: Vec<Option<String>> =
                        columns[1..].iter().map(|c| c[row].clone()).collect();
                    out.append_value(format_row(fmt, &values)?);
                }
            }
        }
        let out: ArrayRef = Arc::new(out.finish());
        if all_scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::scalar::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// `gen_random_uuid()`: a version-4 uuid, typed `uuid` on the wire.
#[derive(Debug, PartialEq, Eq, Hash)]
struct GenRandomUuid {
    signature: Signature,
}

impl GenRandomUuid {
    fn new() -> Self {
        Self {
            signature: Signature::nullary(Volatility::Volatile),
        }
    }
}

impl ScalarUDFImpl for GenRandomUuid {
    fn name(&self) -> &str {
        "gen_random_uuid"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let meta = HashMap::from([(PG_TYPE_KEY.to_owned(), "uuid".to_owned())]);
        Ok(Arc::new(
            Field::new(self.name(), DataType::Utf8, false).with_metadata(meta),
        ))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let mut out = StringBuilder::new();
        for _ in 0..args.number_rows.max(1) {
            out.append_value(uuid::Uuid::new_v4().to_string());
        }
        let out: ArrayRef = Arc::new(out.finish());
        if args.number_rows == 0 {
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

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn formats_like_postgres() {
        assert_eq!(
            format_row("Hello %s", &[s("World")]).unwrap(),
            "Hello World"
        );
        assert_eq!(
            format_row("INSERT INTO %I VALUES(%L)", &[s("Foo bar"), s("O'Reilly")]).unwrap(),
            "INSERT INTO \"Foo bar\" VALUES('O''Reilly')"
        );
        assert_eq!(format_row("%2$s %1$s", &[s("a"), s("b")]).unwrap(), "b a");
        assert_eq!(
            format_row("|%-5s|%5s|", &[s("ab"), s("cd")]).unwrap(),
            "|ab   |   cd|"
        );
        assert_eq!(format_row("%L", &[None]).unwrap(), "NULL");
        assert_eq!(format_row("%s%%", &[None]).unwrap(), "%");
        assert!(format_row("%s %s", &[s("a")]).is_err());
    }
}
