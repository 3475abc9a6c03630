//! Making json: the `::json`/`::jsonb` casts, `to_json`, the `*_build_*` constructors,
//! `json_object`, and the functions that read or reshape one value (`jsonb_typeof`,
//! `jsonb_array_length`, `jsonb_set`, `jsonb_insert`, `jsonb_strip_nulls`, `jsonb_pretty`).
//!
//! SQL values become JSON as PostgreSQL's `to_json` makes them: numbers as their digits,
//! arrays as arrays, rows as objects (`row(1, 'x')` has members `f1`, `f2`), json and jsonb
//! arguments embedded as the JSON they hold. The json constructors print PostgreSQL's json
//! spellings (`{"a" : 1, "b" : 2}` for `json_build_object`, `{"f1":1}` for a row), the jsonb
//! ones jsonb's normal form.

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ScalarUDF, Signature, Volatility};

use super::value::{Json, quoted, resolve_index};
use super::{
    Kind, Ret, any_args, invalid_parameter, json_arg, json_fn, jsonb_arg, kind_of, path_arg, text,
    text_arg, text_array_arg,
};
use crate::query::functions::data_error;

/// A SQL value as JSON (`to_json`'s conversion); json/jsonb text is embedded as it is.
pub fn from_scalar(v: &ScalarValue, kind: Kind) -> Result<Json> {
    if v.is_null() {
        return Ok(Json::Null);
    }
    Ok(match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => match kind {
            Kind::Json | Kind::Jsonb => Json::Raw(s.clone()),
            Kind::Other => Json::String(s.clone()),
        },
        ScalarValue::Boolean(Some(b)) => Json::Bool(*b),
        ScalarValue::Int8(_)
        | ScalarValue::Int16(_)
        | ScalarValue::Int32(_)
        | ScalarValue::Int64(_)
        | ScalarValue::UInt8(_)
        | ScalarValue::UInt16(_)
        | ScalarValue::UInt32(_)
        | ScalarValue::UInt64(_)
        | ScalarValue::Decimal128(..)
        | ScalarValue::Decimal256(..) => Json::Number(v.to_string()),
        ScalarValue::Float32(Some(f)) => float(*f as f64),
        ScalarValue::Float64(Some(f)) => float(*f),
        ScalarValue::List(list) => {
            let kind = match list.data_type() {
                DataType::List(f) => kind_of(f),
                _ => Kind::Other,
            };
            let values = list.value(0);
            let mut items = Vec::with_capacity(values.len());
            for i in 0..values.len() {
                items.push(from_scalar(
                    &ScalarValue::try_from_array(&values, i)?,
                    kind,
                )?);
            }
            Json::Array(items)
        }
        ScalarValue::Struct(s) => {
            let mut members = Vec::new();
            for (i, field) in s.fields().iter().enumerate() {
                // DataFusion names `row(...)`'s fields c0, c1, ...; PostgreSQL f1, f2, ...
                let name = field.name();
                let name = if name.len() > 1
                    && name.starts_with('c')
                    && name[1..].bytes().all(|b| b.is_ascii_digit())
                {
                    format!("f{}", i + 1)
                } else {
                    name.clone()
                };
                let value = ScalarValue::try_from_array(s.column(i), 0)?;
                members.push((name, from_scalar(&value, kind_of(field))?));
            }
            Json::Object(members)
        }
        other => Json::String(other.to_string()),
    })
}

fn float(f: f64) -> Json {
    if f.is_nan() {
        Json::String("NaN".to_owned())
    } else if f.is_infinite() {
        Json::String(if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned())
    } else {
        Json::Number(format!("{f}"))
    }
}

/// A value's JSON text for the json constructors (composites compact, json embedded as is).
pub fn json_text(v: &ScalarValue, kind: Kind) -> Result<String> {
    Ok(from_scalar(v, kind)?.to_json_text())
}

/// A value as jsonb.
pub fn jsonb_value(v: &ScalarValue, kind: Kind) -> Result<Json> {
    Ok(from_scalar(v, kind)?.normalize())
}

/// An object key: text as is, other values as their text.
fn key_text(v: &ScalarValue) -> Result<String> {
    if v.is_null() {
        return Err(data_error("22004", "null value not allowed for object key"));
    }
    Ok(match text_arg(v) {
        Some(s) => s.to_owned(),
        None => from_scalar(v, Kind::Other)?.to_text().unwrap_or_default(),
    })
}

fn jsonb_out(v: Json) -> ScalarValue {
    text(Some(v.to_jsonb_text()))
}

#[derive(Clone, Copy)]
enum SetMode {
    Set { create: bool },
    Insert { after: bool },
}

fn path_index(step: &str, position: usize) -> Result<i64> {
    step.trim().parse::<i64>().map_err(|_| {
        data_error(
            "22P02",
            format!("path element at position {position} is not an integer: \"{step}\""),
        )
    })
}

fn set_path(v: &mut Json, path: &[String], depth: usize, new: &Json, mode: SetMode) -> Result<()> {
    let Some((step, rest)) = path.split_first() else {
        return Ok(());
    };
    match v {
        Json::Object(members) => {
            let pos = members.iter().position(|(k, _)| k == step);
            if !rest.is_empty() {
                if let Some(i) = pos {
                    set_path(&mut members[i].1, rest, depth + 1, new, mode)?;
                }
                return Ok(());
            }
            match (pos, mode) {
                (Some(i), SetMode::Set { .. }) => members[i].1 = new.clone(),
                (Some(_), SetMode::Insert { .. }) => {
                    return Err(invalid_parameter("cannot replace existing key"));
                }
                (None, SetMode::Set { create: false }) => {}
                (None, _) => members.push((step.clone(), new.clone())),
            }
        }
        Json::Array(items) => {
            let index = path_index(step, depth + 1)?;
            if !rest.is_empty() {
                if let Some(i) = resolve_index(items.len(), index) {
                    set_path(&mut items[i], rest, depth + 1, new, mode)?;
                }
                return Ok(());
            }
            let len = items.len() as i64;
            match mode {
                SetMode::Set { create } => match resolve_index(items.len(), index) {
                    Some(i) => items[i] = new.clone(),
                    None if create => {
                        if index < 0 {
                            items.insert(0, new.clone());
                        } else {
                            items.push(new.clone());
                        }
                    }
                    None => {}
                },
                SetMode::Insert { after } => {
                    let mut i = if index < 0 { len + index } else { index };
                    if after && (0..len).contains(&i) {
                        i += 1;
                    }
                    items.insert(i.clamp(0, len) as usize, new.clone());
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn strip_nulls(v: Json) -> Json {
    match v {
        Json::Object(members) => Json::Object(
            members
                .into_iter()
                .filter(|(_, v)| *v != Json::Null)
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

fn object_pairs(args: &[ScalarValue], name: &str) -> Result<Option<Vec<(String, Json)>>> {
    let pairs = match args {
        [flat] => {
            let Some(items) = text_array_arg(flat)? else {
                return Ok(None);
            };
            if items.len() % 2 != 0 {
                return Err(data_error(
                    "2202E",
                    "array must have even number of elements",
                ));
            }
            items
                .chunks(2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect::<Vec<_>>()
        }
        [keys, values] => {
            let (Some(keys), Some(values)) = (text_array_arg(keys)?, text_array_arg(values)?)
            else {
                return Ok(None);
            };
            if keys.len() != values.len() {
                return Err(data_error("2202E", "mismatched array dimensions"));
            }
            keys.into_iter().zip(values).collect()
        }
        _ => {
            return Err(data_error(
                "42883",
                format!("function {name} does not exist"),
            ));
        }
    };
    pairs
        .into_iter()
        .map(|(k, v)| {
            let k =
                k.ok_or_else(|| data_error("22004", "null value not allowed for object key"))?;
            Ok((k, v.map(Json::String).unwrap_or(Json::Null)))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The functions of this file.
pub fn functions() -> Vec<ScalarUDF> {
    let one = || Signature::any(1, Volatility::Immutable);
    let mut out = vec![
        json_fn("tarn_cast_json", one(), Ret::Json, |a, k| {
            if a[0].is_null() {
                return Ok(text(None));
            }
            match (text_arg(&a[0]), k[0]) {
                (Some(s), Kind::Json | Kind::Jsonb) => Ok(text(Some(s.to_owned()))),
                (Some(s), Kind::Other) => {
                    Json::parse(s)?;
                    Ok(text(Some(s.to_owned())))
                }
                _ => Ok(text(Some(json_text(&a[0], k[0])?))),
            }
        }),
        json_fn("tarn_cast_jsonb", one(), Ret::Jsonb, |a, k| {
            if a[0].is_null() {
                return Ok(text(None));
            }
            match text_arg(&a[0]) {
                Some(s) => Ok(jsonb_out(Json::parse_jsonb(s)?)),
                None => Ok(jsonb_out(jsonb_value(&a[0], k[0])?)),
            }
        }),
    ];
    for name in ["to_json", "row_to_json"] {
        out.push(json_fn(name, any_args(&[1, 2]), Ret::Json, |a, k| {
            if a[0].is_null() {
                return Ok(text(None));
            }
            Ok(text(Some(json_text(&a[0], k[0])?)))
        }));
    }
    out.push(json_fn("to_jsonb", one(), Ret::Jsonb, |a, k| {
        if a[0].is_null() {
            return Ok(text(None));
        }
        Ok(jsonb_out(jsonb_value(&a[0], k[0])?))
    }));
    out.push(json_fn(
        "json_build_object",
        Signature::one_of(
            vec![
                datafusion::logical_expr::TypeSignature::Nullary,
                datafusion::logical_expr::TypeSignature::VariadicAny,
            ],
            Volatility::Immutable,
        ),
        Ret::Json,
        |a, k| {
            if a.len() % 2 != 0 {
                return Err(invalid_parameter(
                    "argument list must have even number of elements",
                ));
            }
            let mut parts = Vec::new();
            for i in (0..a.len()).step_by(2) {
                parts.push(format!(
                    "{} : {}",
                    quoted(&key_text(&a[i])?),
                    json_text(&a[i + 1], k[i + 1])?
                ));
            }
            Ok(text(Some(format!("{{{}}}", parts.join(", ")))))
        },
    ));
    let nullary_or_variadic = || {
        Signature::one_of(
            vec![
                datafusion::logical_expr::TypeSignature::Nullary,
                datafusion::logical_expr::TypeSignature::VariadicAny,
            ],
            Volatility::Immutable,
        )
    };
    out.push(json_fn(
        "jsonb_build_object",
        nullary_or_variadic(),
        Ret::Jsonb,
        |a, k| {
            if a.len() % 2 != 0 {
                return Err(invalid_parameter(
                    "argument list must have even number of elements",
                ));
            }
            let mut members = Vec::new();
            for i in (0..a.len()).step_by(2) {
                members.push((key_text(&a[i])?, from_scalar(&a[i + 1], k[i + 1])?));
            }
            Ok(jsonb_out(Json::Object(members).normalize()))
        },
    ));
    out.push(json_fn(
        "json_build_array",
        nullary_or_variadic(),
        Ret::Json,
        |a, k| {
            let items = a
                .iter()
                .zip(k)
                .map(|(v, k)| json_text(v, *k))
                .collect::<Result<Vec<_>>>()?;
            Ok(text(Some(format!("[{}]", items.join(", ")))))
        },
    ));
    out.push(json_fn(
        "jsonb_build_array",
        nullary_or_variadic(),
        Ret::Jsonb,
        |a, k| {
            let items = a
                .iter()
                .zip(k)
                .map(|(v, k)| from_scalar(v, *k))
                .collect::<Result<Vec<_>>>()?;
            Ok(jsonb_out(Json::Array(items).normalize()))
        },
    ));
    out.push(json_fn(
        "json_object",
        any_args(&[1, 2]),
        Ret::Json,
        |a, _| {
            let Some(pairs) = object_pairs(a, "json_object")? else {
                return Ok(text(None));
            };
            let parts: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{} : {}", quoted(k), v.to_json_text()))
                .collect();
            Ok(text(Some(format!("{{{}}}", parts.join(", ")))))
        },
    ));
    out.push(json_fn(
        "jsonb_object",
        any_args(&[1, 2]),
        Ret::Jsonb,
        |a, _| {
            let Some(pairs) = object_pairs(a, "jsonb_object")? else {
                return Ok(text(None));
            };
            Ok(jsonb_out(Json::Object(pairs).normalize()))
        },
    ));
    for name in ["json_typeof", "jsonb_typeof"] {
        out.push(json_fn(name, one(), Ret::Text, |a, _| {
            Ok(text(json_arg(&a[0])?.map(|v| v.type_name().to_owned())))
        }));
    }
    for name in ["json_array_length", "jsonb_array_length"] {
        out.push(json_fn(name, one(), Ret::Int, |a, _| {
            Ok(ScalarValue::Int32(match json_arg(&a[0])? {
                None => None,
                Some(Json::Array(items)) => Some(items.len() as i32),
                Some(Json::Object(_)) => {
                    return Err(invalid_parameter("cannot get array length of a non-array"));
                }
                Some(_) => return Err(invalid_parameter("cannot get array length of a scalar")),
            }))
        }));
    }
    out.push(json_fn("json_strip_nulls", one(), Ret::Json, |a, _| {
        Ok(text(
            json_arg(&a[0])?.map(|v| strip_nulls(v).to_json_text()),
        ))
    }));
    out.push(json_fn("jsonb_strip_nulls", one(), Ret::Jsonb, |a, _| {
        Ok(text(
            jsonb_arg(&a[0])?.map(|v| strip_nulls(v).to_jsonb_text()),
        ))
    }));
    out.push(json_fn("jsonb_pretty", one(), Ret::Text, |a, _| {
        Ok(text(jsonb_arg(&a[0])?.map(|v| v.pretty())))
    }));
    out.push(json_fn(
        "jsonb_set",
        any_args(&[3, 4]),
        Ret::Jsonb,
        |a, k| {
            let create = !matches!(a.get(3), Some(ScalarValue::Boolean(Some(false))));
            set_fn(a, k, SetMode::Set { create })
        },
    ));
    out.push(json_fn(
        "jsonb_insert",
        any_args(&[3, 4]),
        Ret::Jsonb,
        |a, k| {
            let after = matches!(a.get(3), Some(ScalarValue::Boolean(Some(true))));
            set_fn(a, k, SetMode::Insert { after })
        },
    ));
    out
}

fn set_fn(a: &[ScalarValue], k: &[Kind], mode: SetMode) -> Result<ScalarValue> {
    let (Some(mut target), Some(path)) = (jsonb_arg(&a[0])?, path_arg(&a[1])?) else {
        return Ok(text(None));
    };
    if a[2].is_null() {
        return Ok(text(None));
    }
    let new = match text_arg(&a[2]) {
        Some(s) => Json::parse_jsonb(s)?,
        None => jsonb_value(&a[2], k[2])?,
    };
    if !matches!(target, Json::Object(_) | Json::Array(_)) {
        return Err(invalid_parameter("cannot set path in scalar"));
    }
    set_path(&mut target, &path, 0, &new, mode)?;
    Ok(jsonb_out(target.normalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(doc: &str, path: &[&str], new: &str, mode: SetMode) -> String {
        let mut v = Json::parse_jsonb(doc).unwrap();
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        set_path(&mut v, &path, 0, &Json::parse_jsonb(new).unwrap(), mode).unwrap();
        v.normalize().to_jsonb_text()
    }

    #[test]
    fn set_and_insert_follow_postgres() {
        assert_eq!(
            set(
                r#"[{"f1":1,"f2":null},2,null,3]"#,
                &["0", "f1"],
                "[2,3,4]",
                SetMode::Set { create: false }
            ),
            r#"[{"f1": [2, 3, 4], "f2": null}, 2, null, 3]"#
        );
        assert_eq!(
            set(
                r#"{"a": 1}"#,
                &["b"],
                r#""new""#,
                SetMode::Set { create: true }
            ),
            r#"{"a": 1, "b": "new"}"#
        );
        assert_eq!(
            set(
                r#"{"a": [0,1,2]}"#,
                &["a", "1"],
                r#""new""#,
                SetMode::Insert { after: false }
            ),
            r#"{"a": [0, "new", 1, 2]}"#
        );
        assert_eq!(
            set(
                r#"{"a": [0,1,2]}"#,
                &["a", "1"],
                "9",
                SetMode::Insert { after: true }
            ),
            r#"{"a": [0, 1, 9, 2]}"#
        );
    }

    #[test]
    fn rows_become_objects() {
        use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray, StructArray};
        use datafusion::arrow::datatypes::Field;
        use std::sync::Arc;
        let s = StructArray::from(vec![
            (
                Arc::new(Field::new("c0", DataType::Int64, true)),
                Arc::new(Int64Array::from(vec![42])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("c1", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["Fred said \"Hi.\""])) as ArrayRef,
            ),
        ]);
        let v = ScalarValue::Struct(Arc::new(s));
        assert_eq!(
            json_text(&v, Kind::Other).unwrap(),
            r#"{"f1":42,"f2":"Fred said \"Hi.\""}"#
        );
    }
}
