//! Queries planned once and run many times.
//!
//! A query (`SELECT`, `VALUES`, `WITH … SELECT`) is planned into a [`Planned`]: the SQL
//! planner's logical plan, the columns it returns and, where that may be reused, its optimised
//! plan (`query::plan_reuse` says what may be). A prepared statement keeps its `Planned` from
//! Parse; the simple protocol (and Parse of a text seen before) finds it in the session's
//! [`PlanCache`](crate::server::plan_cache::PlanCache) by text. An execution binds its
//! parameters into the optimised plan and only plans the physical plan — where a table's
//! snapshot and the transaction's writes are resolved, so they are always the execution's — or,
//! without a reusable optimised plan, optimises the bound logical plan as a fresh statement
//! would. A kept plan made under other settings, before DDL, or longer ago than
//! `MAX_PLAN_AGE` is made again; a prepared statement whose columns then differ fails with
//! PostgreSQL's 0A000 "cached plan must not change result type".

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::ParamValues;
use datafusion::execution::{SendableRecordBatchStream, SessionState};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;

use super::{Outcome, Output, Session, TxState};
use crate::query::direct_plan;
use crate::query::plan_reuse::{Reuse, reuse_of};
use crate::query::table::PaimonScanExec;
use crate::server::error::PgError;
use crate::server::plan_cache::{PlanKey, Planned};

/// How often a statement plans again when its reads were torn by a transaction that wrote
/// several tables (see `run_query`).
const TORN_READ_ATTEMPTS: usize = 8;

/// Where a statement came from: its text and its position among the text's statements.
pub type Source = (Arc<str>, usize);

/// Whether `statement` is a query whose plans may be kept (`WITH … DELETE` is DML).
pub fn is_query(statement: &DFStatement) -> bool {
    matches!(statement, DFStatement::Statement(s) if matches!(s.as_ref(), Statement::Query(_)))
        && !super::dml::is_dml(statement)
}

impl Session {
    /// What a plan made now is made under.
    pub(super) fn plan_key(&self) -> PlanKey {
        PlanKey {
            settings: self.settings().generation(),
            catalog: self.engine.catalog().generation(),
            made: std::time::Instant::now(),
        }
    }

    /// The plans of query `statement`: the kept ones of `source` if they are valid now, else
    /// made now (and kept when they may be reused).
    pub(super) async fn planned_query(
        &mut self,
        statement: &DFStatement,
        source: Option<&Source>,
    ) -> Result<Arc<Planned>, PgError> {
        if let Some((text, index)) = source {
            let now = self.plan_key();
            if let Some(planned) = self.plans.plan(text, *index, &now) {
                return Ok(planned);
            }
        }
        let planned = Arc::new(self.make_planned(statement.clone()).await?);
        if let (Some((text, index)), Reuse::Cached { .. }) = (source, planned.reuse) {
            self.plans.insert_plan(text, *index, Arc::clone(&planned));
        }
        Ok(planned)
    }

    /// Plans `statement` (a query) now.
    async fn make_planned(&mut self, statement: DFStatement) -> Result<Planned, PgError> {
        let (logical, key) = self.plan_keyed(statement).await?;
        let reuse = reuse_of(&logical);
        let state = self.planning_state();
        let analyzed = state
            .analyzer()
            .execute_and_check(logical.clone(), state.config_options(), |_, _| {})
            .ok();
        let columns = analyzed.as_ref().map(|p| Arc::clone(p.schema().inner()));
        let param_types = known_parameter_types(&logical);
        let optimized = match (reuse, analyzed, &param_types) {
            (Reuse::Cached { optimized: true }, Some(analyzed), Some(_)) => state
                .optimizer()
                .optimize(analyzed, state.as_ref(), |_, _| {})
                .ok(),
            _ => None,
        };
        Ok(Planned {
            logical,
            optimized,
            columns,
            param_types: param_types.unwrap_or_default(),
            reuse,
            key,
        })
    }

    /// The plans an execution of a prepared query runs: those made at Parse while they are
    /// valid, else made again (a version clause: at every execution).
    pub(super) async fn planned_for_execution(
        &mut self,
        statement: &DFStatement,
        prepared: Arc<Planned>,
        source: Option<&Source>,
    ) -> Result<Arc<Planned>, PgError> {
        match prepared.reuse {
            Reuse::AtParse => Ok(prepared),
            Reuse::PerExecution => Ok(Arc::new(self.make_planned(statement.clone()).await?)),
            Reuse::Cached { .. } if prepared.key.valid_under(&self.plan_key()) => Ok(prepared),
            Reuse::Cached { .. } => {
                let fresh = self.planned_query(statement, source).await?;
                if !same_columns(&prepared.columns, &fresh.columns) {
                    return Err(PgError::new(
                        "0A000",
                        "cached plan must not change result type",
                    ));
                }
                Ok(fresh)
            }
        }
    }

    /// Runs a query's plans with `params` bound: physical planning only when the optimised plan
    /// may be reused and the values have the types it was optimised for.
    pub(super) async fn run_query(
        &mut self,
        planned: &Planned,
        params: Option<ParamValues>,
    ) -> Result<Outcome, PgError> {
        let state = self.planning_state();
        let mut attempt = 0;
        let physical = loop {
            let physical = match (&planned.optimized, params.clone()) {
                (Some(optimized), params)
                    if params
                        .as_ref()
                        .is_none_or(|p| bound_types_match(planned, p)) =>
                {
                    let bound;
                    let plan = match params {
                        Some(p) if !planned.param_types.is_empty() => {
                            bound = optimized.clone().with_param_values(p)?;
                            &bound
                        }
                        _ => optimized,
                    };
                    // The hot trivial shapes (a read by key, a query without a table) skip the
                    // physical planner (`query::direct_plan`).
                    let task = self.task_context();
                    if let Some(batches) = direct_plan::execute(plan, &state, task).await? {
                        return Ok(rows(batches));
                    }
                    state
                        .query_planner()
                        .create_physical_plan(plan, state.as_ref())
                        .await?
                }
                (_, params) => {
                    let plan = match params {
                        Some(p) => planned.logical.clone().with_param_values(p)?,
                        None => planned.logical.clone(),
                    };
                    state.create_physical_plan(&plan).await?
                }
            };
            attempt += 1;
            if !self.plan_again(&physical, attempt)? {
                break physical;
            }
        };
        drop(state);
        let batches = execute_stream(physical, self.task_context())?;
        Ok(rows(batches))
    }

    /// `plan` executed as a stream, planned again while its scans were torn by a transaction
    /// over several tables (as in `run_query`).
    pub(super) async fn execute_untorn(
        &mut self,
        plan: &LogicalPlan,
    ) -> Result<SendableRecordBatchStream, PgError> {
        let mut attempt = 0;
        loop {
            let df = self.ctx.execute_logical_plan(plan.clone()).await?;
            let task = Arc::new(df.task_ctx());
            let physical = df.create_physical_plan().await?;
            attempt += 1;
            if !self.plan_again(&physical, attempt)? {
                return Ok(execute_stream(physical, task)?);
            }
        }
    }

    /// After the `attempt`-th plan of a statement: whether to plan it again, because a
    /// transaction that wrote several tables became visible between the reads of two of them
    /// (the transaction's per-statement pins are dropped for that; REPEATABLE READ keeps what
    /// it pinned and runs the plan). 40001 once [`TORN_READ_ATTEMPTS`] plans were all torn.
    fn plan_again(
        &self,
        physical: &Arc<dyn ExecutionPlan>,
        attempt: usize,
    ) -> Result<bool, PgError> {
        if !PaimonScanExec::torn(physical) || self.repeatable_read_block() {
            return Ok(false);
        }
        if attempt >= TORN_READ_ATTEMPTS {
            return Err(PgError::new(
                "40001",
                "could not read the tables of this statement at one point of the commit log: \
                 transactions writing several of them kept committing; run it again",
            ));
        }
        if let Some(txn) = &self.txn {
            txn.new_statement_snapshot();
        }
        Ok(true)
    }

    /// Whether the session is in a REPEATABLE READ block (its reads are pinned per table).
    pub(super) fn repeatable_read_block(&self) -> bool {
        self.tx != TxState::Idle && self.block_isolation.as_deref() == Some("repeatable read")
    }

    /// The DataFusion state statements are planned with: kept between statements (made again
    /// from the context only after a setting changed), with this statement's start time, which
    /// `now()` reads.
    pub(super) fn planning_state(&mut self) -> Arc<SessionState> {
        let state = self.state.get_or_insert_with(|| Arc::new(self.ctx.state()));
        Arc::make_mut(state).mark_start_execution();
        Arc::clone(state)
    }

    fn task_context(&mut self) -> Arc<datafusion::execution::TaskContext> {
        if let Some(task) = &self.task_ctx {
            return Arc::clone(task);
        }
        let task = self.planning_state().task_ctx();
        self.task_ctx = Some(Arc::clone(&task));
        task
    }

    /// The context's state changed (a setting): the kept state goes.
    pub(super) fn invalidate_state(&mut self) {
        self.state = None;
        self.task_ctx = None;
    }
}

/// A query's rows as its outcome.
fn rows(batches: SendableRecordBatchStream) -> Outcome {
    // The stream's schema, not the logical plan's: rows are encoded as Describe announced.
    let schema: SchemaRef = batches.schema();
    Output::Rows {
        schema,
        batches,
        tag: "SELECT",
    }
    .into()
}

/// `$1..$n`'s types when the planner inferred every one (`None` otherwise).
fn known_parameter_types(plan: &LogicalPlan) -> Option<Vec<DataType>> {
    let types = plan.get_parameter_types().ok()?;
    let mut out = Vec::with_capacity(types.len());
    for i in 1..=types.len() {
        out.push(types.get(&format!("${i}"))?.clone()?);
    }
    Some(out)
}

/// Whether `params` are exactly the types the optimised plan's placeholders had.
fn bound_types_match(planned: &Planned, params: &ParamValues) -> bool {
    match params {
        ParamValues::List(values) => {
            values.len() == planned.param_types.len()
                && values
                    .iter()
                    .zip(&planned.param_types)
                    .all(|(v, t)| &v.value.data_type() == t)
        }
        ParamValues::Map(_) => false,
    }
}

/// Whether two plans return the same columns (names and types).
fn same_columns(a: &Option<SchemaRef>, b: &Option<SchemaRef>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.fields().len() == b.fields().len()
                && a.fields()
                    .iter()
                    .zip(b.fields())
                    .all(|(x, y)| x.name() == y.name() && x.data_type() == y.data_type())
        }
        (None, None) => true,
        _ => false,
    }
}
