//! Direct execution of the hot trivial plans, without DataFusion's physical planner.
//!
//! Issue 17's small statements — a point lookup by primary key (`SELECT … FROM t WHERE k =
//! $1`) and a query without a table (`SELECT 1`) — spent most of their time in DataFusion's
//! physical planning and optimisation (EnsureRequirements, FilterExec's statistics, projection
//! equivalences), which every execution of a kept plan repeats and which buys nothing for one
//! split and a handful of rows. [`execute`] runs an optimised logical plan of exactly the shape
//!
//! ```text
//! [Projection] → [Filter] → TableScan of a Paimon table whose filters pin every key column
//! [Projection] → EmptyRelation producing one row
//! ```
//!
//! directly: the scan is the same [`PaimonTable::scan`] the planner would call (so the same
//! snapshot, transaction overlays and read by key: see `query::read_view`), its splits are read
//! one after another, the predicate and the select list are evaluated by the same physical
//! expressions and projector the planner would build (same names, types and field metadata, so
//! the wire describes the columns as it would). Any other shape returns `None` and is planned
//! as usual; EXPLAIN always plans (it shows the scan's `key_lookup`).

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{DFSchema, internal_datafusion_err};
use datafusion::datasource::{TableProvider, source_as_provider};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, SessionState, TaskContext};
use datafusion::logical_expr::expr::physical_name;
use datafusion::logical_expr::expr_rewriter::unnormalize_cols;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{EmptyRelation, Expr, LogicalPlan};
use datafusion::physical_expr::projection::{ProjectionExpr, ProjectionExprs, Projector};
use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{StreamExt, TryStreamExt};

use super::table::PaimonTable;

/// Where the rows of a direct plan come from.
enum Source<'a> {
    /// A Paimon table read by key: its provider, projection and (unqualified) filters.
    KeyScan {
        provider: Arc<dyn TableProvider>,
        projection: Option<&'a Vec<usize>>,
        filters: Vec<Expr>,
    },
    /// One row without columns (`SELECT 1`).
    OneRow(SchemaRef),
}

/// Runs `plan` (optimised, its parameters bound) directly when it has one of the shapes above;
/// `None` when it must be planned as usual.
pub async fn execute(
    plan: &LogicalPlan,
    state: &SessionState,
    task: Arc<TaskContext>,
) -> Result<Option<SendableRecordBatchStream>> {
    let (projection, below) = match plan {
        LogicalPlan::Projection(p) => (Some(p), p.input.as_ref()),
        other => (None, other),
    };
    let (filter, below) = match below {
        LogicalPlan::Filter(f) => (Some(f), f.input.as_ref()),
        other => (None, other),
    };
    let Some(source) = source_of(below, filter.is_some()) else {
        return Ok(None);
    };
    let exprs = projection.iter().flat_map(|p| p.expr.iter());
    if !exprs.chain(filter.map(|f| &f.predicate)).all(plannable) {
        return Ok(None);
    }
    tracing::debug!(
        shape = match source {
            Source::KeyScan { .. } => "read by key",
            Source::OneRow(_) => "one row",
        },
        "query run directly"
    );
    let props = state.execution_props();
    let planning = PhysicalPlanningContext::default();
    let predicate = match filter {
        Some(f) => Some(create_physical_expr(
            &f.predicate,
            f.input.schema(),
            props,
            &planning,
        )?),
        None => None,
    };
    // The input's rows, as the planner's leaf would produce them.
    let (input_schema, input): (SchemaRef, SendableRecordBatchStream) = match source {
        Source::OneRow(schema) => {
            let batch = RecordBatch::try_new_with_options(
                Arc::clone(&schema),
                vec![],
                &RecordBatchOptions::new().with_row_count(Some(1)),
            )?;
            let stream = futures::stream::once(async move { Ok(batch) });
            let adapter = RecordBatchStreamAdapter::new(Arc::clone(&schema), stream);
            (schema, Box::pin(adapter))
        }
        Source::KeyScan {
            provider,
            projection,
            filters,
        } => {
            let exec = provider.scan(state, projection, &filters, None).await?;
            (exec.schema(), read_partitions(exec, task))
        }
    };
    let projector = match projection {
        Some(p) => Some(projector(
            &p.expr,
            p.input.schema(),
            &input_schema,
            p.schema.as_arrow(),
            props,
            &planning,
        )?),
        None => None,
    };
    let output = projector.as_ref().map_or_else(
        || Arc::clone(&input_schema),
        |p| Arc::clone(p.output_schema()),
    );
    let rows = input.map(move |batch| {
        let batch = match &predicate {
            Some(predicate) => filtered(batch?, predicate)?,
            None => batch?,
        };
        match &projector {
            Some(p) => p.project_batch(&batch),
            None => Ok(batch),
        }
    });
    Ok(Some(Box::pin(RecordBatchStreamAdapter::new(output, rows))))
}

/// The plan's leaf, when it is one this module runs.
fn source_of(plan: &LogicalPlan, filtered: bool) -> Option<Source<'_>> {
    match plan {
        LogicalPlan::TableScan(scan) if scan.fetch.is_none() => {
            let provider = source_as_provider(&scan.source).ok()?;
            let table = provider.downcast_ref::<PaimonTable>()?;
            let filters = unnormalize_cols(scan.filters.iter().cloned());
            let by_key = !table.is_versioned() && table.reads_by_key(&filters);
            by_key.then_some(Source::KeyScan {
                provider,
                projection: scan.projection.as_ref(),
                filters,
            })
        }
        LogicalPlan::EmptyRelation(EmptyRelation {
            produce_one_row: true,
            schema,
        }) if !filtered && schema.fields().is_empty() => {
            Some(Source::OneRow(Arc::clone(schema.inner())))
        }
        _ => None,
    }
}

/// Whether `expr` becomes a physical expression without the planner's context: no subquery,
/// no outer reference, no async function (those need the planner's own operators).
pub(super) fn plannable(expr: &Expr) -> bool {
    !expr
        .exists(|e| {
            Ok(match e {
                Expr::ScalarSubquery(_)
                | Expr::Exists(_)
                | Expr::InSubquery(_)
                | Expr::SetComparison(_)
                | Expr::OuterReferenceColumn(..)
                | Expr::Placeholder(_) => true,
                Expr::ScalarFunction(f) => f.func.as_async().is_some(),
                _ => false,
            })
        })
        .unwrap_or(true)
}

/// The select list's projector, named and typed as `DefaultPhysicalPlanner`'s ProjectionExec
/// (a column keeps its input field's name; field metadata from the logical output schema).
pub(super) fn projector(
    exprs: &[Expr],
    input_logical: &DFSchema,
    input_physical: &Schema,
    output_logical: &Schema,
    props: &datafusion::execution::context::ExecutionProps,
    planning: &PhysicalPlanningContext,
) -> Result<Projector> {
    let projected = exprs
        .iter()
        .map(|e| {
            let alias = match e {
                Expr::Column(c) => match input_logical.index_of_column(c) {
                    Ok(i) => input_physical.field(i).name().to_string(),
                    Err(_) => physical_name(e)?,
                },
                _ => physical_name(e)?,
            };
            let expr = create_physical_expr(e, input_logical, props, planning)?;
            Ok(ProjectionExpr { expr, alias })
        })
        .collect::<Result<Vec<_>>>()?;
    ProjectionExprs::from_expressions(projected)
        .make_projector_with_schema_metadata(input_physical, output_logical)
}

/// The rows of `batch` for which `predicate` is true (NULL is not).
fn filtered(batch: RecordBatch, predicate: &Arc<dyn PhysicalExpr>) -> Result<RecordBatch> {
    let mask = predicate.evaluate(&batch)?.into_array(batch.num_rows())?;
    if mask.data_type() != &DataType::Boolean {
        return Err(internal_datafusion_err!(
            "filter predicate is {}, not boolean",
            mask.data_type()
        ));
    }
    Ok(filter_record_batch(&batch, mask.as_boolean())?)
}

/// Every partition of `exec`, one after another.
pub(super) fn read_partitions(
    exec: Arc<dyn ExecutionPlan>,
    task: Arc<TaskContext>,
) -> SendableRecordBatchStream {
    let schema = exec.schema();
    let partitions = exec.properties().partitioning.partition_count();
    let stream = futures::stream::iter(0..partitions)
        .map(move |i| exec.execute(i, Arc::clone(&task)))
        .try_flatten();
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}
