//! INSERT … ON CONFLICT's join of the proposed rows with the target, run without a plan.
//!
//! ON CONFLICT's change query (see `sql::dml::on_conflict_query`) is
//!
//! ```text
//! SELECT <action, new row, old key> FROM excluded LEFT JOIN target ON <every key column>
//! ```
//!
//! Planned and optimised per statement, it cost milliseconds even for the single row a CDC
//! sink or an ORM upserts at a time (issue 17). Its shape never changes, so [`ConflictJoin`]
//! keeps its select list from the statement's one planning (at Parse) and each execution
//! only reads the target by the proposals' keys — the same scan and read by key a query would
//! use, through the session's transaction — matches the rows by key and evaluates the select
//! list over the joined rows with the physical expressions the planner would build. Select
//! lists it cannot evaluate alone (subqueries, parameters, functions whose value depends on
//! the statement such as `now()`, which the optimiser fixes per statement) leave the statement
//! to the planned path.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt32Array, new_null_array};
use datafusion::arrow::compute::{concat_batches, take};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::DFSchemaRef;
use datafusion::common::tree_node::TreeNode;
use datafusion::datasource::{TableProvider, source_as_provider};
use datafusion::error::Result;
use datafusion::execution::SessionState;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, JoinType, LogicalPlan, Volatility};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use futures::TryStreamExt;

use super::direct_plan::{plannable, projector, read_partitions};
use super::table::PaimonTable;

/// The change query of one INSERT … ON CONFLICT, ready to run over its proposals.
#[derive(Debug)]
pub struct ConflictJoin {
    /// The select list over the join's rows.
    exprs: Vec<Expr>,
    /// The join's output (the proposals' columns, then the target's).
    joined: DFSchemaRef,
    /// The change query's output.
    output: DFSchemaRef,
    target: Arc<dyn TableProvider>,
    /// Positions of the key columns in the proposals and in the target's rows.
    keys: Vec<usize>,
}

impl ConflictJoin {
    /// The join of `plan` (the change query as planned from SQL, not yet analysed), when it
    /// has the expected shape and a select list that needs nothing from the planner; `keys`
    /// are the key columns' positions in the table (both sides have the table's columns).
    pub fn new(plan: LogicalPlan, keys: &[usize], state: &SessionState) -> Result<Option<Self>> {
        // Types coerced as the planned path's analyser would; the shape is left as it is.
        let plan = state
            .analyzer()
            .execute_and_check(plan, state.config_options(), |_, _| {})?;
        let LogicalPlan::Projection(projection) = &plan else {
            return Ok(None);
        };
        let LogicalPlan::Join(join) = projection.input.as_ref() else {
            return Ok(None);
        };
        let Some(target) = scanned(&join.right).filter(|_| join.join_type == JoinType::Left) else {
            return Ok(None);
        };
        let proposals = join.left.schema().fields().len();
        if proposals != join.right.schema().fields().len()
            || proposals != target.schema().fields().len()
        {
            return Ok(None);
        }
        let immutable = projection.expr.iter().all(|e| {
            plannable(e)
                && !e
                    .exists(|e| {
                        Ok(matches!(e, Expr::ScalarFunction(f)
                            if f.func.signature().volatility != Volatility::Immutable))
                    })
                    .unwrap_or(true)
        });
        if !immutable {
            return Ok(None);
        }
        // Rewritten as the optimiser would (some functions, `coalesce` among them, exist only
        // to be simplified), each keeping its name.
        let simplifier = ExprSimplifier::new(
            SimplifyContext::builder()
                .with_schema(Arc::clone(&join.schema))
                .with_config_options(Arc::clone(state.config_options()))
                .build(),
        );
        let exprs = projection
            .expr
            .iter()
            .map(|e| {
                let name = e.schema_name().to_string();
                let simple = simplifier.simplify(e.clone())?;
                Ok(if simple.schema_name().to_string() == name {
                    simple
                } else {
                    simple.alias(name)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Self {
            exprs,
            joined: Arc::clone(&join.schema),
            output: Arc::clone(&projection.schema),
            target,
            keys: keys.to_vec(),
        }))
    }

    /// The change rows for `proposals` (in the table's types, each key once), reading the
    /// target through `filters` (which must keep every row whose key a proposal has).
    pub async fn run(
        &self,
        proposals: &RecordBatch,
        filters: &[Expr],
        state: &SessionState,
    ) -> Result<RecordBatch> {
        let exec = self.target.scan(state, None, filters, None).await?;
        let schema = exec.schema();
        let found: Vec<RecordBatch> = read_partitions(exec, state.task_ctx())
            .try_collect()
            .await?;
        let found = concat_batches(&schema, &found)?;
        let matches = self.matches(proposals, &found)?;
        let mut columns: Vec<ArrayRef> = proposals.columns().to_vec();
        for column in found.columns() {
            columns.push(if found.num_rows() == 0 {
                new_null_array(column.data_type(), proposals.num_rows())
            } else {
                take(column, &matches, None)?
            });
        }
        let joined_schema: SchemaRef = Arc::new(self.joined.as_arrow().clone());
        let joined = RecordBatch::try_new(Arc::clone(&joined_schema), columns)?;
        let projector = projector(
            &self.exprs,
            &self.joined,
            &joined_schema,
            self.output.as_arrow(),
            state.execution_props(),
            &PhysicalPlanningContext::default(),
        )?;
        projector.project_batch(&joined)
    }

    /// For each proposal, the position of the target row with its key (NULL: none).
    fn matches(&self, proposals: &RecordBatch, found: &RecordBatch) -> Result<UInt32Array> {
        let fields = self
            .keys
            .iter()
            .map(|&k| SortField::new(proposals.column(k).data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields)?;
        let keys_of = |batch: &RecordBatch| -> Vec<ArrayRef> {
            self.keys
                .iter()
                .map(|&k| Arc::clone(batch.column(k)))
                .collect()
        };
        let found_rows = converter.convert_columns(&keys_of(found))?;
        let mut by_key = HashMap::with_capacity(found_rows.num_rows());
        for (i, row) in found_rows.iter().enumerate() {
            by_key.insert(row, i as u32);
        }
        let wanted = converter.convert_columns(&keys_of(proposals))?;
        Ok(wanted.iter().map(|row| by_key.get(&row).copied()).collect())
    }
}

/// The Paimon table a join side reads (through its alias).
fn scanned(plan: &LogicalPlan) -> Option<Arc<dyn TableProvider>> {
    match plan {
        LogicalPlan::SubqueryAlias(a) => scanned(&a.input),
        LogicalPlan::TableScan(scan) if scan.filters.is_empty() && scan.fetch.is_none() => {
            let provider = source_as_provider(&scan.source).ok()?;
            let table = provider.downcast_ref::<PaimonTable>()?;
            (!table.is_versioned() && scan.projection.is_none()).then_some(provider)
        }
        _ => None,
    }
}
