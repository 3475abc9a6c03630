//! The SQL syntax DataFusion's default planners turn into its own functions, planned as
//! PostgreSQL's instead; registered before DataFusion's planners so these win.
//!
//! - `substring(s from x [for y])` (and `substring(s, x, y)`, the same node): DataFusion
//!   calls its `substr`, which knows neither PostgreSQL's regular-expression and SIMILAR forms
//!   (`substring(s from 'o(.)b')`) nor the 22011 of a negative length; tarn's `substring`
//!   (`functions::patterns`) does.
//! - `extract(field from v)`: a numeric in PostgreSQL (`functions::extract`), not
//!   `date_part`'s integer or float.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult};
use datafusion::logical_expr::{Expr, ScalarUDF};

use super::functions::{extract::PgExtract, patterns};

/// Plans `substring` and `extract` PostgreSQL's way.
#[derive(Debug)]
pub struct PgSyntaxCalls {
    substring: Arc<ScalarUDF>,
    extract: Arc<ScalarUDF>,
}

impl Default for PgSyntaxCalls {
    fn default() -> Self {
        Self {
            substring: Arc::new(patterns::substring_udf()),
            extract: Arc::new(PgExtract::udf()),
        }
    }
}

impl ExprPlanner for PgSyntaxCalls {
    fn plan_substring(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::clone(&self.substring), args),
        )))
    }

    fn plan_extract(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::clone(&self.extract), args),
        )))
    }
}
