//! The finishing step of `json_agg`, `jsonb_agg`, `json_object_agg` and `jsonb_object_agg`.
//!
//! `sql/json.rs` plans each of these aggregates as `array_agg` over the values already turned
//! into JSON (`to_json(x)`), which keeps DataFusion's handling of `ORDER BY`, `FILTER` and
//! partial aggregation; the functions here turn that list into the aggregate's json or jsonb
//! text: `[1, 2, 3]` for `json_agg`, `{ "a" : 1, "b" : 2 }` for `json_object_agg`, jsonb's
//! normal form for the jsonb ones. No rows give NULL, as in PostgreSQL.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ScalarUDF, Signature, Volatility};

use super::value::{Json, quoted};
use super::{Ret, invalid_parameter, json_fn, text};

/// The elements of an `array_agg` result as text; `None` for no rows.
fn list_texts(v: &ScalarValue) -> Result<Option<Vec<Option<String>>>> {
    let list = match v {
        ScalarValue::List(list) if !list.is_null(0) => list.value(0),
        ScalarValue::LargeList(list) if !list.is_null(0) => list.value(0),
        _ => return Ok(None),
    };
    let list = datafusion::arrow::compute::cast(&list, &DataType::Utf8)?;
    Ok(Some(
        list.as_string::<i32>()
            .iter()
            .map(|s| s.map(str::to_owned))
            .collect(),
    ))
}

fn element(v: Option<String>) -> Result<Json> {
    Ok(match v {
        None => Json::Null,
        Some(text) => Json::parse(&text)?,
    })
}

/// Keys with their values' json text (`None`: SQL NULL).
type Pairs = Vec<(String, Option<String>)>;

fn pairs(a: &[ScalarValue]) -> Result<Option<Pairs>> {
    let (Some(keys), Some(values)) = (list_texts(&a[0])?, list_texts(&a[1])?) else {
        return Ok(None);
    };
    keys.into_iter()
        .zip(values)
        .map(|(k, v)| {
            Ok((
                k.ok_or_else(|| invalid_parameter("field name must not be null"))?,
                v,
            ))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The finishing functions.
pub fn functions() -> Vec<ScalarUDF> {
    let one = || Signature::any(1, Volatility::Immutable);
    let two = || Signature::any(2, Volatility::Immutable);
    vec![
        json_fn("tarn_json_agg_finish", one(), Ret::Json, |a, _| {
            Ok(text(list_texts(&a[0])?.map(|items| {
                let items: Vec<String> = items
                    .into_iter()
                    .map(|v| v.unwrap_or_else(|| "null".to_owned()))
                    .collect();
                format!("[{}]", items.join(", "))
            })))
        }),
        json_fn("tarn_jsonb_agg_finish", one(), Ret::Jsonb, |a, _| {
            let Some(items) = list_texts(&a[0])? else {
                return Ok(text(None));
            };
            let items = items.into_iter().map(element).collect::<Result<Vec<_>>>()?;
            Ok(text(Some(Json::Array(items).normalize().to_jsonb_text())))
        }),
        json_fn("tarn_json_object_agg_finish", two(), Ret::Json, |a, _| {
            Ok(text(pairs(a)?.map(|pairs| {
                let parts: Vec<String> = pairs
                    .into_iter()
                    .map(|(k, v)| {
                        format!(
                            "{} : {}",
                            quoted(&k),
                            v.unwrap_or_else(|| "null".to_owned())
                        )
                    })
                    .collect();
                format!("{{ {} }}", parts.join(", "))
            })))
        }),
        json_fn("tarn_jsonb_object_agg_finish", two(), Ret::Jsonb, |a, _| {
            let Some(pairs) = pairs(a)? else {
                return Ok(text(None));
            };
            let members = pairs
                .into_iter()
                .map(|(k, v)| Ok((k, element(v)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok(text(Some(
                Json::Object(members).normalize().to_jsonb_text(),
            )))
        }),
    ]
}
