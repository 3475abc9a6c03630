//! UNION of a text column with a number, boolean or date column is refused, as in PostgreSQL.
//!
//! DataFusion unifies `SELECT int_col UNION SELECT text_col` by casting the numbers to text;
//! PostgreSQL fails with 42804 ("UNION types integer and text cannot be matched"). This
//! analyzer rule runs before type coercion, while each branch still has its own types, and
//! refuses a column that is text in one branch and of another category in another. A string
//! literal is PostgreSQL's untyped literal, which takes the other branch's type, so a branch
//! whose column is a literal is not checked.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

use super::QueryError;

/// Refuses UNION branches whose column types PostgreSQL cannot match (see the module docs).
#[derive(Debug, Default)]
pub struct PgUnionTypes;

impl AnalyzerRule for PgUnionTypes {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.apply_with_subqueries(|p| {
            if let LogicalPlan::Union(union) = p {
                check(&union.inputs)?;
            }
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        })?;
        Ok(plan)
    }

    fn name(&self) -> &str {
        "pg_union_types"
    }
}

/// PostgreSQL's type categories that never match text in a UNION.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Category {
    Text,
    Other(&'static str),
}

fn category(t: &DataType) -> Option<Category> {
    Some(match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Category::Text,
        DataType::Int8 | DataType::Int16 => Category::Other("smallint"),
        DataType::Int32 => Category::Other("integer"),
        DataType::Int64 => Category::Other("bigint"),
        DataType::Float32 => Category::Other("real"),
        DataType::Float64 => Category::Other("double precision"),
        DataType::Decimal128(..) | DataType::Decimal256(..) => Category::Other("numeric"),
        DataType::Boolean => Category::Other("boolean"),
        DataType::Date32 | DataType::Date64 => Category::Other("date"),
        DataType::Timestamp(..) => Category::Other("timestamp"),
        _ => return None,
    })
}

/// Whether column `i` of a branch is a constant (an untyped literal in PostgreSQL).
fn is_literal(branch: &LogicalPlan, i: usize) -> bool {
    match branch {
        LogicalPlan::Projection(p) => p
            .expr
            .get(i)
            .is_some_and(|e| matches!(e.clone().unalias_nested().data, Expr::Literal(..))),
        LogicalPlan::SubqueryAlias(a) => is_literal(&a.input, i),
        _ => false,
    }
}

fn check(inputs: &[std::sync::Arc<LogicalPlan>]) -> Result<()> {
    let Some(first) = inputs.first() else {
        return Ok(());
    };
    for i in 0..first.schema().fields().len() {
        let mut text = false;
        let mut other = None;
        for branch in inputs {
            let Some(field) = branch.schema().fields().get(i) else {
                return Ok(());
            };
            if is_literal(branch, i) {
                continue;
            }
            match category(field.data_type()) {
                Some(Category::Text) => text = true,
                Some(Category::Other(name)) => other = other.or(Some(name)),
                None => {}
            }
        }
        if let (true, Some(name)) = (text, other) {
            return Err(DataFusionError::External(Box::new(QueryError::Coded {
                code: "42804",
                message: format!("UNION types {name} and text cannot be matched"),
            })));
        }
    }
    Ok(())
}
