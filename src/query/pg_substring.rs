//! `substring(s from x [for y])` (and `substring(s, x, y)`, which sqlparser parses to the same
//! node) planned as PostgreSQL's `substring`: DataFusion's default planner sends it straight
//! to its own `substr`, which knows neither PostgreSQL's regular-expression and SIMILAR forms
//! (`substring(s from 'o(.)b')`) nor the 22011 of a negative length. Registered before
//! DataFusion's planners so it wins.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult};
use datafusion::logical_expr::{Expr, ScalarUDF};

/// Plans `substring` as tarn's `substring` function (`functions::patterns`).
#[derive(Debug)]
pub struct PgSubstring(pub Arc<ScalarUDF>);

impl ExprPlanner for PgSubstring {
    fn plan_substring(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::clone(&self.0), args),
        )))
    }
}
