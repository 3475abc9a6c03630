//! The rows of the json set-returning functions (`json_each`, `jsonb_each_text`,
//! `jsonb_object_keys`, `jsonb_array_elements`, `json_array_elements_text`, ...), one column
//! at a time as a list: `tarn_json_rows(x, 'jsonb_each', 'value')`. `sql/json.rs` turns a call
//! in FROM into `UNNEST` over these lists (one per output column, zipped), and a call in a
//! select list into `unnest(...)`.
//!
//! The json forms answer with members' text as given and keys in their written order; the
//! jsonb forms with jsonb's order and normal form.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ScalarUDF, Signature, Volatility};

use super::value::{Json, RawChildren, raw_children};
use super::{Ret, invalid_parameter, json_fn, text_arg};
use crate::query::functions::data_error;

fn what(v: &Json) -> &'static str {
    match v {
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
        _ => "a scalar",
    }
}

/// Column `column` of `function`'s rows for the document `doc`.
pub fn rows(doc: &str, function: &str, column: &str) -> Result<Vec<Option<String>>> {
    let jsonb = function.starts_with("jsonb");
    let as_text = function.ends_with("_text");
    let op = function
        .trim_start_matches("jsonb_")
        .trim_start_matches("json_");
    let non_object = |v: &Json| {
        invalid_parameter(match op {
            "object_keys" => format!("cannot call {function} on {}", what(v)),
            _ => format!("cannot call {function} on a non-object"),
        })
    };
    let non_array = |v: &Json| {
        invalid_parameter(match v {
            Json::Object(_) => "cannot extract elements from an object",
            _ => "cannot extract elements from a scalar",
        })
    };
    if op == "to_record" || op == "to_recordset" {
        return record_rows(doc, function, column, jsonb, op == "to_recordset");
    }
    if jsonb {
        let value = Json::parse_jsonb(doc)?;
        return Ok(match (op, &value) {
            ("each" | "each_text" | "object_keys", Json::Object(m)) => m
                .iter()
                .map(|(k, v)| match column {
                    "key" | "" => Some(k.clone()),
                    _ if as_text => v.to_text(),
                    _ => Some(v.to_jsonb_text()),
                })
                .collect(),
            ("each" | "each_text" | "object_keys", other) => return Err(non_object(other)),
            ("array_elements" | "array_elements_text", Json::Array(items)) => items
                .iter()
                .map(|v| {
                    if as_text {
                        v.to_text()
                    } else {
                        Some(v.to_jsonb_text())
                    }
                })
                .collect(),
            ("array_elements" | "array_elements_text", other) => return Err(non_array(other)),
            _ => {
                return Err(data_error(
                    "42883",
                    format!("function {function} does not exist"),
                ));
            }
        });
    }
    let raw_text = |member: &str| -> Result<Option<String>> {
        Ok(match Json::parse(member)? {
            Json::Null => None,
            Json::String(s) => Some(s),
            _ => Some(member.to_owned()),
        })
    };
    Ok(match (op, raw_children(doc)?) {
        ("each" | "each_text" | "object_keys", RawChildren::Object(m)) => m
            .into_iter()
            .map(|(k, v)| match column {
                "key" | "" => Ok(Some(k)),
                _ if as_text => raw_text(v),
                _ => Ok(Some(v.to_owned())),
            })
            .collect::<Result<_>>()?,
        ("array_elements" | "array_elements_text", RawChildren::Array(items)) => items
            .into_iter()
            .map(|v| {
                if as_text {
                    raw_text(v)
                } else {
                    Ok(Some(v.to_owned()))
                }
            })
            .collect::<Result<_>>()?,
        (_, children) => {
            let value = match children {
                RawChildren::Array(_) => Json::Array(vec![]),
                RawChildren::Object(_) => Json::Object(vec![]),
                RawChildren::Scalar(v) => v,
            };
            return Err(if op.starts_with("array") {
                non_array(&value)
            } else {
                non_object(&value)
            });
        }
    })
}

/// Column `column` of `json_to_record(doc)` (one row) or `json_to_recordset(doc)` (a row per
/// object of the array): the member's text (a string's contents), NULL where it is missing.
fn record_rows(
    doc: &str,
    function: &str,
    column: &str,
    jsonb: bool,
    set: bool,
) -> Result<Vec<Option<String>>> {
    let value = Json::parse(doc)?;
    let records = match (value, set) {
        (Json::Object(m), false) => vec![Json::Object(m)],
        (Json::Array(items), true) => items,
        (_, false) => {
            return Err(invalid_parameter(format!(
                "cannot call {function} on a non-object"
            )));
        }
        (_, true) => {
            return Err(invalid_parameter(format!(
                "cannot call {function} on a non-array"
            )));
        }
    };
    records
        .iter()
        .map(|r| match r {
            Json::Object(_) => Ok(match r.get(column) {
                None | Some(Json::Null) => None,
                Some(Json::String(s)) => Some(s.clone()),
                Some(v) if jsonb => Some(v.clone().normalize().to_jsonb_text()),
                // json keeps the member's text; re-printed compactly here.
                Some(v) => Some(v.to_json_text()),
            }),
            _ => Err(invalid_parameter(format!(
                "argument of {function} must be an array of objects"
            ))),
        })
        .collect()
}

/// `tarn_json_rows(doc, function, column)`.
pub fn functions() -> Vec<ScalarUDF> {
    vec![json_fn(
        "tarn_json_rows",
        Signature::any(3, Volatility::Immutable),
        Ret::TextList,
        |a, _| {
            let (Some(doc), Some(function), Some(column)) =
                (text_arg(&a[0]), text_arg(&a[1]), text_arg(&a[2]))
            else {
                return Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                    &[],
                    &DataType::Utf8,
                )));
            };
            let values: Vec<ScalarValue> = rows(doc, function, column)?
                .into_iter()
                .map(ScalarValue::Utf8)
                .collect();
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &values,
                &DataType::Utf8,
            )))
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_order_and_text_jsonb_sorts() {
        let doc = r#"{"b": [1,2], "a": "x"}"#;
        assert_eq!(
            rows(doc, "json_each", "value").unwrap(),
            [Some("[1,2]".to_owned()), Some(r#""x""#.to_owned())]
        );
        assert_eq!(
            rows(doc, "jsonb_each_text", "key").unwrap(),
            [Some("a".to_owned()), Some("b".to_owned())]
        );
        assert_eq!(
            rows(r#"[1, true, [2, false]]"#, "jsonb_array_elements", "value").unwrap(),
            [
                Some("1".into()),
                Some("true".into()),
                Some("[2, false]".into())
            ]
        );
        assert!(rows("1", "jsonb_array_elements", "value").is_err());
    }
}
