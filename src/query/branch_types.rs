//! `CASE`, `coalesce` and `nullif` keep the PostgreSQL type of their results.
//!
//! tarn carries the types Arrow cannot tell apart (`json`, `jsonb`, `uuid`, `varchar(n)`,
//! `bpchar(n)`) as field metadata ([`PG_TYPE_KEY`], [`PG_LENGTH_KEY`]); DataFusion computes a
//! `CASE`'s field from its type alone and `coalesce`/`nullif` return plain fields, so
//! `CASE WHEN … THEN json_build_object(…) END` (SQLAlchemy's identity reflection) reached the
//! client as text. PostgreSQL resolves such an expression to a common type: untyped literals
//! and NULLs (`unknown`) take it, and among the string types, which cast to each other
//! implicitly, the first typed result wins — a CASE's ELSE first, then its THENs in order;
//! coalesce's arguments in order (`CASE … THEN v ELSE t END` is text, `coalesce(v, t)`
//! varchar). [`result_tag`] is that tag; a length stays only when every result has the same
//! one (a literal or a missing ELSE has none). `nullif` is its first argument, compared by its
//! type's `=` (varchar's is text's: `nullif(v, 'x')` is text).
//!
//! [`BranchTypes`], an analyzer rule after type coercion, wraps each such expression in
//! `tarn_typed(expr, tag[, length])`, an identity function whose field has the tag, over
//! every plan node and subquery (the schemas of the nodes above a rewritten one are computed
//! again; top-level expressions keep their names); a quoted literal among the results of a
//! json, jsonb or uuid expression is read by that type's input function, as PostgreSQL reads
//! it (`coalesce(doc, '[ ]')` is jsonb `[]`). Operators are planned from the SQL before any
//! analyzer rule runs, so the json operators' planner asks [`result_tag`] itself
//! (`(CASE … END) -> 'a'`).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchemaRef, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::expr::{Case, ScalarFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility, lit,
};
use datafusion::optimizer::AnalyzerRule;

use super::pg_types::{PG_LENGTH_KEY, PG_TYPE_KEY};

/// The analyzer rule.
#[derive(Debug)]
pub struct BranchTypes {
    typed: Arc<ScalarUDF>,
    /// The input functions of the tags whose literals are read (`json` → `tarn_cast_json`).
    casts: HashMap<&'static str, Arc<ScalarUDF>>,
}

impl BranchTypes {
    /// The rule, with the input functions of `json`, `jsonb` and `uuid` (`tarn_cast_json`,
    /// `tarn_cast_jsonb`, `tarn_cast_uuid`) where given.
    pub fn new(casts: HashMap<&'static str, Arc<ScalarUDF>>) -> Self {
        BranchTypes {
            typed: Arc::new(ScalarUDF::new_from_impl(Typed::new())),
            casts,
        }
    }
}

impl AnalyzerRule for BranchTypes {
    fn name(&self) -> &str {
        "tarn_branch_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // Post-order: once a node changed, every node visited after it (its ancestors among
        // them) computes its schema again, so the tag reaches the plan's output.
        let mut changed = false;
        plan.transform_up_with_subqueries(|p| {
            let schemas: Vec<DFSchemaRef> =
                p.inputs().iter().map(|i| Arc::clone(i.schema())).collect();
            // Top-level expressions keep their names (nodes above refer to them by name).
            let names = NamePreserver::new(&p);
            let t = p.map_expressions(|e| {
                let name = names.save(&e);
                Ok(e.transform_up(|e| self.rewrite(e, &schemas))?
                    .update_data(|e| name.restore(e)))
            })?;
            changed |= t.transformed;
            if changed {
                let transformed = t.transformed;
                let p = t.data.recompute_schema()?;
                Ok(Transformed::new_transformed(p, transformed))
            } else {
                Ok(t)
            }
        })
        .map(|t| t.data)
    }
}

/// The field of `e` over the first of `schemas` it resolves in.
fn field_of(e: &Expr, schemas: &[DFSchemaRef]) -> Option<FieldRef> {
    if schemas.is_empty() {
        let empty = Arc::new(datafusion::common::DFSchema::empty());
        return e.to_field(&empty).ok().map(|(_, f)| f);
    }
    schemas
        .iter()
        .find_map(|s| e.to_field(s).ok().map(|(_, f)| f))
}

/// Whether `e` is a literal PostgreSQL reads as `unknown` (a quoted string, NULL), or such a
/// literal cast by type coercion.
fn untyped(e: &Expr) -> bool {
    match e {
        Expr::Literal(
            ScalarValue::Utf8(_)
            | ScalarValue::Utf8View(_)
            | ScalarValue::LargeUtf8(_)
            | ScalarValue::Null,
            meta,
        ) => meta
            .as_ref()
            .is_none_or(|m| !m.inner().contains_key(PG_TYPE_KEY)),
        Expr::Cast(c) if c.field.metadata().is_empty() => untyped(&c.expr),
        Expr::TryCast(c) if c.field.metadata().is_empty() => untyped(&c.expr),
        _ => false,
    }
}

/// What kind of expression resolves a common type of its results.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Case { has_else: bool },
    Coalesce,
    Nullif,
}

/// The results of `e` in the order PostgreSQL resolves their type, if `e` is a CASE,
/// `coalesce` or `nullif`.
fn results(e: &Expr) -> Option<(Shape, Vec<&Expr>)> {
    match e {
        Expr::Case(case) => Some((
            Shape::Case {
                has_else: case.else_expr.is_some(),
            },
            case.else_expr
                .as_deref()
                .into_iter()
                .chain(case.when_then_expr.iter().map(|(_, then)| then.as_ref()))
                .collect(),
        )),
        Expr::ScalarFunction(f) => match f.func.name() {
            "coalesce" => Some((Shape::Coalesce, f.args.iter().collect())),
            "nullif" => Some((Shape::Nullif, f.args.first().into_iter().collect())),
            _ => None,
        },
        _ => None,
    }
}

/// The PostgreSQL type tag (and length) of a CASE, `coalesce` or `nullif` whose own field has
/// none, from its results' fields (`field`); `None` for other expressions and untagged
/// results (text, numbers, ...).
pub fn result_tag(
    e: &Expr,
    field: &dyn Fn(&Expr) -> Option<FieldRef>,
) -> Option<(String, Option<String>)> {
    let (shape, results) = results(e)?;
    if field(e).is_some_and(|f| f.metadata().contains_key(PG_TYPE_KEY)) {
        return None;
    }
    let mut first: Option<(Option<String>, Option<String>)> = None;
    let mut same_length = shape != Shape::Case { has_else: false };
    for r in results {
        if untyped(r) {
            same_length = false;
            continue;
        }
        let f = field(r)?;
        let (tag, length) = match result_tag(r, field) {
            // A nested CASE or coalesce not yet wrapped (while the SQL is planned).
            Some((tag, length)) => (Some(tag), length),
            None => (
                f.metadata().get(PG_TYPE_KEY).cloned(),
                f.metadata().get(PG_LENGTH_KEY).cloned(),
            ),
        };
        match &first {
            None => first = Some((tag, length)),
            Some(seen) => {
                if seen != &(tag, length) {
                    same_length = false;
                }
            }
        }
    }
    let (tag, length) = first?;
    let tag = tag?;
    if shape == Shape::Nullif {
        return (tag != "varchar").then_some((tag, None));
    }
    Some((tag, length.filter(|_| same_length)))
}

impl BranchTypes {
    fn rewrite(&self, e: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
        let Some((tag, length)) = result_tag(&e, &|x| field_of(x, schemas)) else {
            return Ok(Transformed::no(e));
        };
        let e = match self.casts.get(tag.as_str()) {
            Some(cast) => read_literals(e, cast),
            None => e,
        };
        let mut args = vec![e, lit(tag)];
        args.extend(length.map(lit));
        Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::clone(&self.typed), args),
        )))
    }
}

/// `e` with each quoted literal among its results read by `cast` (the input function of their
/// common type).
fn read_literals(e: Expr, cast: &Arc<ScalarUDF>) -> Expr {
    let read = |r: Expr| match r {
        Expr::Literal(ScalarValue::Utf8(Some(_)), None) => {
            Expr::ScalarFunction(ScalarFunction::new_udf(Arc::clone(cast), vec![r]))
        }
        other => other,
    };
    match e {
        Expr::Case(Case {
            expr,
            when_then_expr,
            else_expr,
        }) => Expr::Case(Case {
            expr,
            when_then_expr: when_then_expr
                .into_iter()
                .map(|(w, t)| (w, Box::new(read(*t))))
                .collect(),
            else_expr: else_expr.map(|x| Box::new(read(*x))),
        }),
        Expr::ScalarFunction(f) if f.func.name() == "coalesce" => {
            Expr::ScalarFunction(ScalarFunction {
                func: f.func,
                args: f.args.into_iter().map(read).collect(),
            })
        }
        other => other,
    }
}

/// `tarn_typed(value, tag[, length])`: `value`, its field tagged with PostgreSQL type `tag`
/// (and `length`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Typed {
    signature: Signature,
}

impl Typed {
    fn new() -> Self {
        Typed {
            signature: Signature::one_of(
                vec![TypeSignature::Any(2), TypeSignature::Any(3)],
                Volatility::Immutable,
            ),
        }
    }
}

fn text(v: Option<&&ScalarValue>) -> Option<String> {
    match v {
        Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))) => Some(s.clone()),
        _ => None,
    }
}

impl ScalarUDFImpl for Typed {
    fn name(&self) -> &str {
        "tarn_typed"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let value = &args.arg_fields[0];
        let mut meta = HashMap::new();
        let arg = |i: usize| text(args.scalar_arguments.get(i).and_then(|a| a.as_ref()));
        if let Some(tag) = arg(1) {
            meta.insert(PG_TYPE_KEY.to_owned(), tag);
        }
        if let Some(length) = arg(2) {
            meta.insert(PG_LENGTH_KEY.to_owned(), length);
        }
        Ok(Arc::new(
            Field::new(self.name(), value.data_type().clone(), value.is_nullable())
                .with_metadata(meta),
        ))
    }
    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args.swap_remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    async fn field(ctx: &SessionContext, sql: &str) -> FieldRef {
        let df = ctx.sql(sql).await.unwrap();
        let plan = df.into_optimized_plan().unwrap();
        Arc::clone(plan.schema().field(0))
    }

    #[tokio::test]
    async fn branches_that_agree_keep_their_tag() {
        let ctx = SessionContext::new();
        ctx.add_analyzer_rule(Arc::new(BranchTypes::new(HashMap::new())));
        let meta = |t: &str, n: Option<&str>| {
            let mut m = HashMap::from([(PG_TYPE_KEY.to_owned(), t.to_owned())]);
            if let Some(n) = n {
                m.insert(PG_LENGTH_KEY.to_owned(), n.to_owned());
            }
            m
        };
        let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
            Field::new("j", DataType::Utf8, true).with_metadata(meta("json", None)),
            Field::new("v", DataType::Utf8, true).with_metadata(meta("varchar", Some("5"))),
            Field::new("w", DataType::Utf8, true).with_metadata(meta("varchar", Some("9"))),
            Field::new("t", DataType::Utf8, true),
        ]));
        let batch = datafusion::arrow::array::RecordBatch::new_empty(Arc::clone(&schema));
        ctx.register_batch("x", batch).unwrap();
        let tag = |f: &FieldRef| {
            (
                f.metadata().get(PG_TYPE_KEY).cloned(),
                f.metadata().get(PG_LENGTH_KEY).cloned(),
            )
        };
        let f = field(&ctx, "select case when t = 'a' then j end from x").await;
        assert_eq!(tag(&f), (Some("json".into()), None));
        let f = field(&ctx, "select coalesce(v, 'z') from x").await;
        assert_eq!(tag(&f), (Some("varchar".into()), None));
        let f = field(&ctx, "select coalesce(v, v) from x").await;
        assert_eq!(tag(&f), (Some("varchar".into()), Some("5".into())));
        let f = field(&ctx, "select nullif(v, 'x') from x").await;
        assert_eq!(tag(&f), (None, None));
        let f = field(&ctx, "select case when t = 'a' then v else w end from x").await;
        assert_eq!(tag(&f), (Some("varchar".into()), None));
        let f = field(&ctx, "select case when t = 'a' then v else t end from x").await;
        assert_eq!(tag(&f), (None, None));
        let f = field(&ctx, "select case when t = 'a' then t else v end from x").await;
        assert_eq!(tag(&f), (Some("varchar".into()), None));
        let f = field(&ctx, "select coalesce(v, t) from x").await;
        assert_eq!(tag(&f), (Some("varchar".into()), None));
        let f = field(&ctx, "select nullif(j, t) from x").await;
        assert_eq!(tag(&f), (Some("json".into()), None));
        let f = field(
            &ctx,
            "select y from (select coalesce(j, null) as y from x) s",
        )
        .await;
        assert_eq!(tag(&f), (Some("json".into()), None));
    }
}
