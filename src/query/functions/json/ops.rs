//! The json/jsonb operators: `->`, `->>`, `#>`, `#>>` (json and jsonb), `@>`, `<@`, `?`,
//! `?|`, `?&`, `||`, `-`, `#-`, `@?`, `@@` (jsonb), as functions, and [`JsonOperators`], the expression
//! planner that sends an operator to them when an operand is json-typed (at SQL planning
//! time, so the statement's described types are json/jsonb too). Other operands keep
//! DataFusion's meaning of the operator (`||` of text, `@>` of arrays, `-` of numbers).
//!
//! On `json`, `->` and `#>` answer with the member's text as given (`{"b":"foo"}`); on `jsonb`
//! with jsonb's normal form. `jsonb || x` takes only jsonb or an untyped literal, as in
//! PostgreSQL, and otherwise fails with 42883 (no such operator).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ExprSchemable, ScalarUDF, Signature, Volatility};
use datafusion::sql::sqlparser::ast::BinaryOperator as SqlOp;

use super::value::{Json, RawChildren, raw_children, resolve_index};
use super::{
    Kind, Ret, invalid_parameter, json_fn, jsonb_arg, kind_of, path_arg, text, text_arg,
    text_array_arg,
};
use crate::query::functions::data_error;
use crate::query::pg_typeof::pg_type_name;

/// One step of `->` / `#>`.
enum Step<'a> {
    Key(&'a str),
    Index(i64),
    /// A path element: a key of an object, an integer index of an array.
    Path(&'a str),
}

fn step_arg(v: &ScalarValue) -> Option<Step<'_>> {
    if let Some(s) = text_arg(v) {
        return Some(Step::Key(s));
    }
    match v {
        ScalarValue::Int8(Some(i)) => Some(Step::Index(*i as i64)),
        ScalarValue::Int16(Some(i)) => Some(Step::Index(*i as i64)),
        ScalarValue::Int32(Some(i)) => Some(Step::Index(*i as i64)),
        ScalarValue::Int64(Some(i)) => Some(Step::Index(*i)),
        _ => None,
    }
}

fn jsonb_step<'v>(v: &'v Json, step: &Step) -> Option<&'v Json> {
    match step {
        Step::Key(k) => v.get(k),
        Step::Index(i) => v.at(*i),
        Step::Path(s) => v.step(s),
    }
}

/// One step into a json text, answering the member's own text.
fn raw_step<'a>(text: &'a str, step: &Step) -> Result<Option<&'a str>> {
    Ok(match (raw_children(text)?, step) {
        (RawChildren::Object(m), Step::Key(k) | Step::Path(k)) => m
            .into_iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v),
        (RawChildren::Array(items), Step::Index(i)) => {
            resolve_index(items.len(), *i).map(|i| items[i])
        }
        (RawChildren::Array(items), Step::Path(s)) => s
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|i| resolve_index(items.len(), i))
            .map(|i| items[i]),
        _ => None,
    })
}

/// `->>`'s text of a json member: a string's contents, NULL for null, else the text.
fn raw_text(member: &str) -> Result<Option<String>> {
    Ok(match Json::parse(member)? {
        Json::Null => None,
        Json::String(s) => Some(s),
        _ => Some(member.to_owned()),
    })
}

/// Follows `steps` from argument `v` of kind `kind`; `as_text` for `->>` / `#>>`.
fn navigate(v: &ScalarValue, kind: Kind, steps: &[Step], as_text: bool) -> Result<ScalarValue> {
    let Some(doc) = text_arg(v) else {
        return Ok(text(None));
    };
    if kind == Kind::Json {
        let mut here = doc;
        for step in steps {
            match raw_step(here, step)? {
                Some(next) => here = next,
                None => return Ok(text(None)),
            }
        }
        return Ok(text(if as_text {
            raw_text(here)?
        } else {
            Some(here.trim().to_owned())
        }));
    }
    let value = Json::parse_jsonb(doc)?;
    let mut here = &value;
    for step in steps {
        match jsonb_step(here, step) {
            Some(next) => here = next,
            None => return Ok(text(None)),
        }
    }
    Ok(text(if as_text {
        here.to_text()
    } else {
        Some(here.to_jsonb_text())
    }))
}

fn get(a: &[ScalarValue], k: &[Kind], as_text: bool) -> Result<ScalarValue> {
    match step_arg(&a[1]) {
        Some(step) => navigate(&a[0], k[0], &[step], as_text),
        None => Ok(text(None)),
    }
}

fn path(a: &[ScalarValue], k: &[Kind], as_text: bool) -> Result<ScalarValue> {
    let Some(path) = path_arg(&a[1])? else {
        return Ok(text(None));
    };
    let steps: Vec<Step> = path.iter().map(|s| Step::Path(s)).collect();
    navigate(&a[0], k[0], &steps, as_text)
}

fn extract_path(a: &[ScalarValue], k: &[Kind], as_text: bool) -> Result<ScalarValue> {
    let mut steps = Vec::new();
    for v in &a[1..] {
        match text_arg(v) {
            Some(s) => steps.push(Step::Path(s)),
            None => return Ok(text(None)),
        }
    }
    navigate(&a[0], k[0], &steps, as_text)
}

fn bool_of(
    a: &[ScalarValue],
    f: impl Fn(&Json, &ScalarValue) -> Result<Option<bool>>,
) -> Result<ScalarValue> {
    let Some(doc) = jsonb_arg(&a[0])? else {
        return Ok(ScalarValue::Boolean(None));
    };
    if a[1].is_null() {
        return Ok(ScalarValue::Boolean(None));
    }
    Ok(ScalarValue::Boolean(f(&doc, &a[1])?))
}

fn as_array(v: Json) -> Vec<Json> {
    match v {
        Json::Array(items) => items,
        other => vec![other],
    }
}

fn concat(a: Json, b: Json) -> Json {
    match (a, b) {
        (Json::Object(mut x), Json::Object(y)) => {
            x.extend(y);
            Json::Object(x).normalize()
        }
        (a, b) => {
            let mut items = as_array(a);
            items.extend(as_array(b));
            Json::Array(items)
        }
    }
}

fn delete(doc: Json, what: &ScalarValue) -> Result<Option<Json>> {
    if let Some(step) = step_arg(what) {
        return Ok(Some(match (doc, step) {
            (Json::Object(m), Step::Key(k)) => {
                Json::Object(m.into_iter().filter(|(key, _)| key != k).collect())
            }
            (Json::Array(items), Step::Key(k)) => Json::Array(
                items
                    .into_iter()
                    .filter(|e| !matches!(e, Json::String(s) if s == k))
                    .collect(),
            ),
            (Json::Array(mut items), Step::Index(i)) => {
                if let Some(i) = resolve_index(items.len(), i) {
                    items.remove(i);
                }
                Json::Array(items)
            }
            (Json::Object(_), _) => {
                return Err(invalid_parameter(
                    "cannot delete from object using integer index",
                ));
            }
            _ => return Err(invalid_parameter("cannot delete from scalar")),
        }));
    }
    let Some(keys) = text_array_arg(what)? else {
        return Ok(None);
    };
    let mut doc = doc;
    for key in keys.into_iter().flatten() {
        let Some(next) = delete(doc, &ScalarValue::Utf8(Some(key)))? else {
            return Ok(None);
        };
        doc = next;
    }
    Ok(Some(doc))
}

fn delete_path(doc: &mut Json, path: &[String]) -> Result<()> {
    let Some((step, rest)) = path.split_first() else {
        return Ok(());
    };
    match doc {
        Json::Object(m) => {
            if rest.is_empty() {
                m.retain(|(k, _)| k != step);
            } else if let Some((_, v)) = m.iter_mut().find(|(k, _)| k == step) {
                delete_path(v, rest)?;
            }
        }
        Json::Array(items) => {
            let index = step.trim().parse::<i64>().map_err(|_| {
                data_error(
                    "22P02",
                    format!("path element is not an integer: \"{step}\""),
                )
            })?;
            if let Some(i) = resolve_index(items.len(), index) {
                if rest.is_empty() {
                    items.remove(i);
                } else {
                    delete_path(&mut items[i], rest)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// The operator functions (and PostgreSQL's named forms of the path operators).
pub fn functions() -> Vec<ScalarUDF> {
    let two = || Signature::any(2, Volatility::Immutable);
    let variadic = || Signature::variadic_any(Volatility::Immutable);
    vec![
        json_fn("tarn_json_get", two(), Ret::LikeFirst, |a, k| {
            get(a, k, false)
        }),
        json_fn("tarn_json_get_text", two(), Ret::Text, |a, k| {
            get(a, k, true)
        }),
        json_fn("tarn_json_path", two(), Ret::LikeFirst, |a, k| {
            path(a, k, false)
        }),
        json_fn("tarn_json_path_text", two(), Ret::Text, |a, k| {
            path(a, k, true)
        }),
        json_fn("json_extract_path", variadic(), Ret::Json, |a, _| {
            extract_path(a, &[Kind::Json], false)
        }),
        json_fn("json_extract_path_text", variadic(), Ret::Text, |a, _| {
            extract_path(a, &[Kind::Json], true)
        }),
        json_fn("jsonb_extract_path", variadic(), Ret::Jsonb, |a, _| {
            extract_path(a, &[Kind::Jsonb], false)
        }),
        json_fn("jsonb_extract_path_text", variadic(), Ret::Text, |a, _| {
            extract_path(a, &[Kind::Jsonb], true)
        }),
        json_fn("tarn_jsonb_contains", two(), Ret::Bool, |a, _| {
            bool_of(a, |doc, other| {
                Ok(jsonb_arg(other)?.map(|other| doc.contains(&other)))
            })
        }),
        json_fn("tarn_jsonb_contained", two(), Ret::Bool, |a, _| {
            bool_of(a, |doc, other| {
                Ok(jsonb_arg(other)?.map(|other| other.contains(doc)))
            })
        }),
        json_fn("tarn_jsonb_exists", two(), Ret::Bool, |a, _| {
            bool_of(a, |doc, key| Ok(text_arg(key).map(|k| doc.has_key(k))))
        }),
        json_fn("tarn_jsonb_exists_any", two(), Ret::Bool, |a, _| {
            bool_of(a, |doc, keys| {
                Ok(text_array_arg(keys)?.map(|keys| keys.iter().flatten().any(|k| doc.has_key(k))))
            })
        }),
        json_fn("tarn_jsonb_exists_all", two(), Ret::Bool, |a, _| {
            bool_of(a, |doc, keys| {
                Ok(text_array_arg(keys)?.map(|keys| keys.iter().flatten().all(|k| doc.has_key(k))))
            })
        }),
        json_fn("tarn_jsonb_concat", two(), Ret::Jsonb, |a, _| {
            let (Some(x), Some(y)) = (jsonb_arg(&a[0])?, jsonb_arg(&a[1])?) else {
                return Ok(text(None));
            };
            Ok(text(Some(concat(x, y).to_jsonb_text())))
        }),
        json_fn("tarn_jsonb_delete", two(), Ret::Jsonb, |a, _| {
            let Some(doc) = jsonb_arg(&a[0])? else {
                return Ok(text(None));
            };
            if a[1].is_null() {
                return Ok(text(None));
            }
            Ok(text(delete(doc, &a[1])?.map(|v| v.to_jsonb_text())))
        }),
        json_fn("tarn_jsonb_delete_path", two(), Ret::Jsonb, |a, _| {
            let (Some(mut doc), Some(path)) = (jsonb_arg(&a[0])?, path_arg(&a[1])?) else {
                return Ok(text(None));
            };
            if !matches!(doc, Json::Object(_) | Json::Array(_)) {
                return Err(invalid_parameter("cannot delete path in scalar"));
            }
            delete_path(&mut doc, &path)?;
            Ok(text(Some(doc.to_jsonb_text())))
        }),
    ]
}

/// Plans the json operators (see the module docs).
#[derive(Debug)]
pub struct JsonOperators {
    udfs: HashMap<String, Arc<ScalarUDF>>,
}

impl Default for JsonOperators {
    fn default() -> Self {
        Self {
            udfs: functions()
                .into_iter()
                .chain(super::path::functions())
                .map(|f| (f.name().to_owned(), Arc::new(f)))
                .collect(),
        }
    }
}

/// An untyped literal (`'{"a": 1}'`, NULL), which PostgreSQL reads as the other operand's type.
fn is_untyped_literal(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal(
            ScalarValue::Utf8(_) | ScalarValue::Utf8View(_) | ScalarValue::Null,
            _
        )
    )
}

impl ExprPlanner for JsonOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let field = |e: &Expr| e.to_field(schema).ok().map(|(_, f)| f);
        // A CASE or coalesce over json is json (`query::branch_types`), its field not yet
        // tagged while the SQL is planned.
        let kind = |e: &Expr| match crate::query::branch_types::result_tag(e, &field) {
            Some((tag, _)) if tag == "json" => Kind::Json,
            Some((tag, _)) if tag == "jsonb" => Kind::Jsonb,
            _ => field(e).map(|f| kind_of(&f)).unwrap_or(Kind::Other),
        };
        let (l, r) = (kind(&expr.left), kind(&expr.right));
        let json_left = l != Kind::Other;
        let jsonb_left = l == Kind::Jsonb;
        let name = match expr.op {
            SqlOp::Arrow if json_left => "tarn_json_get",
            SqlOp::LongArrow if json_left => "tarn_json_get_text",
            SqlOp::HashArrow if json_left => "tarn_json_path",
            SqlOp::HashLongArrow if json_left => "tarn_json_path_text",
            SqlOp::AtArrow if jsonb_left || r == Kind::Jsonb => "tarn_jsonb_contains",
            SqlOp::ArrowAt if jsonb_left || r == Kind::Jsonb => "tarn_jsonb_contained",
            SqlOp::Question if jsonb_left => "tarn_jsonb_exists",
            SqlOp::QuestionPipe if jsonb_left => "tarn_jsonb_exists_any",
            SqlOp::QuestionAnd if jsonb_left => "tarn_jsonb_exists_all",
            SqlOp::AtQuestion if jsonb_left => "tarn_jsonb_path_exists_op",
            SqlOp::AtAt if jsonb_left => "tarn_jsonb_path_match_op",
            SqlOp::Minus if jsonb_left => "tarn_jsonb_delete",
            SqlOp::HashMinus if jsonb_left => "tarn_jsonb_delete_path",
            SqlOp::StringConcat if jsonb_left || r == Kind::Jsonb => {
                let fits = |e: &Expr, k: Kind| k == Kind::Jsonb || is_untyped_literal(e);
                if !(fits(&expr.left, l) && fits(&expr.right, r)) {
                    let name = |e: &Expr| {
                        if is_untyped_literal(e) {
                            "unknown".to_owned()
                        } else {
                            field(e)
                                .map(|f| pg_type_name(&f))
                                .unwrap_or_else(|| "unknown".to_owned())
                        }
                    };
                    return Err(data_error(
                        "42883",
                        format!(
                            "operator does not exist: {} || {}",
                            name(&expr.left),
                            name(&expr.right)
                        ),
                    ));
                }
                "tarn_jsonb_concat"
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let udf = Arc::clone(&self.udfs[name]);
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            datafusion::logical_expr::expr::ScalarFunction::new_udf(
                udf,
                vec![expr.left, expr.right],
            ),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_steps_keep_the_text() {
        let doc = r#"[{"a":"foo"},{"b":"bar"},{"c":"baz"}]"#;
        assert_eq!(
            raw_step(doc, &Step::Index(2)).unwrap(),
            Some(r#"{"c":"baz"}"#)
        );
        assert_eq!(
            raw_step(doc, &Step::Index(-1)).unwrap(),
            Some(r#"{"c":"baz"}"#)
        );
        assert_eq!(raw_step(doc, &Step::Key("a")).unwrap(), None);
        assert_eq!(raw_text(r#""bar""#).unwrap().as_deref(), Some("bar"));
    }

    #[test]
    fn concat_and_delete() {
        let j = |s: &str| Json::parse_jsonb(s).unwrap();
        assert_eq!(
            concat(j(r#"["a", "b"]"#), j(r#"["a", "d"]"#)).to_jsonb_text(),
            r#"["a", "b", "a", "d"]"#
        );
        assert_eq!(concat(j("[1, 2]"), j("3")).to_jsonb_text(), "[1, 2, 3]");
        let deleted = delete(
            j(r#"["a", "b", "c", "b"]"#),
            &ScalarValue::Utf8(Some("b".into())),
        )
        .unwrap()
        .unwrap();
        assert_eq!(deleted.to_jsonb_text(), r#"["a", "c"]"#);
        let mut doc = j(r#"{"a": {"b": 1, "c": 2}}"#);
        delete_path(&mut doc, &["a".into(), "b".into()]).unwrap();
        assert_eq!(doc.to_jsonb_text(), r#"{"a": {"c": 2}}"#);
    }
}
