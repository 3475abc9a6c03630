//! An analyzer rule, run before type coercion, for what PostgreSQL's catalog types do and
//! DataFusion's lists and int4 OIDs do not:
//!
//! - Subscripts of vector types start at 0: `indkey[0]` is an index's first key column,
//!   `proargtypes[0]` a function's first argument type (`int2vector` and `oidvector` are
//!   0-based, other arrays 1-based). Catalog columns of those types are lists marked with
//!   [`PG_VECTOR_KEY`]; their subscripts are shifted by one for DataFusion's 1-based
//!   `array_element`.
//! - An array column compared with array text (`polroles = '{0}'`): the text is read as an
//!   array of the column's element type, as PostgreSQL reads an unknown literal.
//! - `x::regtype::text`, `x::regclass::text`, `::regnamespace::text`, `::regproc::text`: the
//!   object's name (PostgreSQL's output function of those types), not the number; so is
//!   `to_regclass(…)::text` (`to_regtype`, `to_regnamespace`), whose result is a reg* value.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchemaRef, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, Cast, Expr, ExprSchemable, LogicalPlan, ScalarUDF, lit,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion_pg_catalog::pg_catalog::oid_field::OID_ALIAS_KEY;

use super::relations::PG_VECTOR_KEY;
use super::static_arrays::parse_array;

#[derive(Debug)]
pub struct CatalogTypes {
    /// `tarn_reg_name(oid, kind)`: the name of an object of a reg* type.
    pub reg_name: Arc<ScalarUDF>,
}

impl AnalyzerRule for CatalogTypes {
    fn name(&self) -> &str {
        "tarn_catalog_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| {
            let inputs: Vec<DFSchemaRef> =
                p.inputs().iter().map(|i| Arc::clone(i.schema())).collect();
            p.map_expressions(|e| e.transform_up(|e| self.rewrite(e, &inputs)))
        })
        .map(|t| t.data)
    }
}

fn field_of(e: &Expr, schemas: &[DFSchemaRef]) -> Option<datafusion::arrow::datatypes::FieldRef> {
    schemas
        .iter()
        .find_map(|s| e.to_field(s).ok().map(|(_, f)| f))
}

impl CatalogTypes {
    fn rewrite(&self, e: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
        match e {
            Expr::ScalarFunction(ScalarFunction { func, mut args })
                if func.name() == "array_element"
                    && args.len() == 2
                    && field_of(&args[0], schemas)
                        .is_some_and(|f| f.metadata().contains_key(PG_VECTOR_KEY)) =>
            {
                let index = args.pop().expect("two arguments");
                let shifted = match index {
                    Expr::Literal(ScalarValue::Int64(Some(i)), meta) => {
                        Expr::Literal(ScalarValue::Int64(Some(i + 1)), meta)
                    }
                    other => other + lit(1i64),
                };
                args.push(shifted);
                Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction {
                    func,
                    args,
                })))
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let (left, l) = array_text(*left, &right, schemas)?;
                let (right, r) = array_text(*right, &left, schemas)?;
                let e = Expr::BinaryExpr(BinaryExpr {
                    left: Box::new(left),
                    op,
                    right: Box::new(right),
                });
                Ok(if l || r {
                    Transformed::yes(e)
                } else {
                    Transformed::no(e)
                })
            }
            Expr::Cast(Cast { expr, field })
                if matches!(field.data_type(), DataType::Utf8 | DataType::Utf8View) =>
            {
                // Only an explicit cast to a reg* type: `atttypid::text` stays a number, as
                // PostgreSQL's oid columns print.
                let explicit = match expr.as_ref() {
                    Expr::Cast(inner) => inner.field.metadata().get(OID_ALIAS_KEY).cloned(),
                    Expr::Literal(_, Some(meta)) => meta.inner().get(OID_ALIAS_KEY).cloned(),
                    // `to_regclass(…)` & co. return their reg* type.
                    Expr::ScalarFunction(f) => f
                        .name()
                        .strip_prefix("to_")
                        .filter(|k| matches!(*k, "regclass" | "regtype" | "regnamespace"))
                        .map(str::to_owned),
                    _ => None,
                };
                let kind = explicit.filter(|k| {
                    matches!(
                        k.as_str(),
                        "regtype" | "regclass" | "regnamespace" | "regproc"
                    )
                });
                match kind {
                    Some(kind) => Ok(Transformed::yes(Expr::ScalarFunction(
                        ScalarFunction::new_udf(Arc::clone(&self.reg_name), vec![*expr, lit(kind)]),
                    ))),
                    None => Ok(Transformed::no(Expr::Cast(Cast { expr, field }))),
                }
            }
            other => Ok(Transformed::no(other)),
        }
    }
}

/// `text` read as an array of `other`'s element type when `other` is a list column and
/// `text` a string literal.
fn array_text(text: Expr, other: &Expr, schemas: &[DFSchemaRef]) -> Result<(Expr, bool)> {
    let Expr::Literal(ScalarValue::Utf8(Some(s)), _) = &text else {
        return Ok((text, false));
    };
    let Some(DataType::List(item)) = field_of(other, schemas).map(|f| f.data_type().clone()) else {
        return Ok((text, false));
    };
    let values = parse_array(s)
        .into_iter()
        .map(|v| match v {
            Some(v) => ScalarValue::try_from_string(v, item.data_type()),
            None => ScalarValue::try_from(item.data_type()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((
        lit(ScalarValue::List(ScalarValue::new_list_nullable(
            &values,
            item.data_type(),
        ))),
        true,
    ))
}
