//! [`Session`]: the state of one connection and the execution of its commands.
//!
//! A session owns its DataFusion context (so `SET`s never leak), its settings, and its
//! transaction state. It answers session commands itself and hands the rest to DataFusion.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::MemorySchemaProvider;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{ObjectType, Statement};
use futures::StreamExt;
use tokio::time::Instant;

use super::cancel::{CancelRegistry, Registration};
use super::error::PgError;
use super::plan_cache::{PlanCache, Planned};
use super::settings::Settings;
use super::stream::StatementControl;
use crate::query::{QueryEngine, SessionVars, Transaction, TxnSlot};
use crate::sql::cursor::CursorCommand;
use crate::sql::{Command, SetValue, ShowTarget, TransactionCommand};

mod block_ddl;
mod config;
mod copy;
mod copy_from;
mod create_as;
mod cursors;
mod ddl;
mod dml;
mod partitions;
pub(crate) mod procedures;
mod queries;
mod sequences;
mod temp_tables;
mod views;

pub use copy::{CopyOut, copy_out};
pub use copy_from::CopyInStart;
pub use dml::DmlPlan;
pub use queries::Source;

/// Schema names no user may create: tarn's procedures and Postgres' system schemas.
const RESERVED_SCHEMAS: &[&str] = &["sys", "pg_catalog", "information_schema"];

/// Where the session is with respect to a transaction block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxState {
    Idle,
    InBlock,
    /// An error happened inside the block: only ROLLBACK / COMMIT are accepted.
    Failed,
}

/// What a statement produced.
pub enum Output {
    /// Rows to stream, with the command tag (`SELECT`, `SHOW`, ...).
    Rows {
        schema: SchemaRef,
        batches: datafusion::execution::SendableRecordBatchStream,
        tag: &'static str,
    },
    /// `COPY ... TO STDOUT`: rows to stream in a COPY format (tag `COPY n`); `force_quote`
    /// per output column.
    Copy {
        schema: SchemaRef,
        batches: datafusion::execution::SendableRecordBatchStream,
        options: Arc<crate::sql::copy::CopyOptions>,
        force_quote: Arc<Vec<bool>>,
    },
    /// `COPY ... FROM STDIN` started: the client sends its rows next.
    CopyIn(CopyInStart),
    /// A finished command with its tag (`SET`, `CREATE SCHEMA`).
    Done(String),
    /// A finished DML command and the rows it affected (`INSERT 0 3`, `UPDATE 2`).
    Count { command: &'static str, rows: u64 },
    /// `BEGIN` (tag), entering a transaction block.
    TxStart(String),
    /// `COMMIT` / `ROLLBACK` (tag), leaving it.
    TxEnd(String),
}

/// A statement's output plus what the client must be told besides it.
pub struct Outcome {
    pub output: Output,
    /// ParameterStatus messages (setting name, new value).
    pub parameters: Vec<(String, String)>,
    /// WARNING notices.
    pub warnings: Vec<String>,
    /// NOTICE messages with their SQLSTATE (`already exists, skipping`).
    pub notices: Vec<(&'static str, String)>,
    /// Rows go out in binary even over the simple protocol (FETCH from a BINARY cursor).
    pub binary: bool,
}

impl Outcome {
    fn done(tag: impl Into<String>) -> Self {
        Self::from(Output::Done(tag.into()))
    }
}

impl From<Output> for Outcome {
    fn from(output: Output) -> Self {
        Self {
            output,
            parameters: Vec::new(),
            warnings: Vec::new(),
            notices: Vec::new(),
            binary: false,
        }
    }
}

/// The session state functions can read while a statement runs.
#[derive(Debug)]
struct Vars {
    settings: Arc<RwLock<Settings>>,
    engine: Arc<QueryEngine>,
    user: String,
    pid: i32,
    /// The connection's cancel slot (functions that wait check it).
    cancel: Arc<super::cancel::CancelSlot>,
    /// What `set_config` changed while a statement ran (`session/config.rs`).
    config: config::ConfigChanges,
    /// The temporary tables' catalog, once the session has one (`session/temp_tables.rs`).
    temp_catalog: RwLock<Option<Arc<crate::query::WarehouseCatalog>>>,
}

impl Vars {
    fn settings(&self) -> std::sync::RwLockReadGuard<'_, Settings> {
        self.settings.read().expect("settings lock poisoned")
    }
}

impl SessionVars for Vars {
    fn setting(&self, name: &str) -> Option<String> {
        self.settings().get(name)
    }
    fn temp_catalog(&self) -> Option<Arc<crate::query::WarehouseCatalog>> {
        self.temp_catalog
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
    fn user(&self) -> String {
        self.user.clone()
    }
    fn effective_search_path(&self) -> Vec<String> {
        let catalog = self.engine.catalog();
        self.settings()
            .search_path()
            .into_iter()
            .filter(|s| catalog.has_database(s))
            .collect()
    }
    fn backend_pid(&self) -> i32 {
        self.pid
    }
    fn interrupted(&self) -> bool {
        self.cancel.is_cancelled()
    }
    fn lock_timeout(&self) -> Option<Duration> {
        self.settings().lock_timeout_ms().map(Duration::from_millis)
    }
    fn statement_timeout(&self) -> Option<Duration> {
        let ms = self.settings().statement_timeout_ms();
        (ms > 0).then(|| Duration::from_millis(ms))
    }
    fn set_config(
        &self,
        name: &str,
        value: &str,
        is_local: bool,
    ) -> Result<String, (&'static str, String)> {
        config::set_config(&self.settings, &self.config, name, value, is_local)
    }
}

/// A statement parsed and, when DataFusion runs it, planned (extended protocol's Parse).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub command: Command,
    /// The plan, with `$n` placeholders, for [`Command::Plan`] (for DML: its change query).
    pub plan: Option<LogicalPlan>,
    /// INSERT/UPDATE/DELETE/MERGE, ready to run.
    pub dml: Option<Arc<DmlPlan>>,
    /// The result columns known at Parse: a session-answered command's (FETCH: its cursor's)
    /// or a query's as DataFusion's analyzer types them (the types its rows are sent in).
    pub columns: Option<SchemaRef>,
    /// A query's plans (`session/queries.rs`), made at Parse.
    pub planned: Option<Arc<Planned>>,
    /// The text the statement came from, by which its plans are kept.
    pub source: Option<Source>,
}

impl Prepared {
    /// A command not planned yet, from `source`.
    pub fn unplanned(command: Command, source: Option<Source>) -> Self {
        Self {
            command,
            plan: None,
            dml: None,
            columns: None,
            planned: None,
            source,
        }
    }
}

/// One connection's session.
pub struct Session {
    pub user: String,
    vars: Arc<Vars>,
    ctx: SessionContext,
    engine: Arc<QueryEngine>,
    tx: TxState,
    /// The open block's transaction (started by its first statement that needs one).
    txn: Option<Arc<Transaction>>,
    /// The transaction the session's table scans read through.
    slot: Arc<TxnSlot>,
    /// Temporary tables of DML (ON CONFLICT's proposals, RETURNING's rows).
    temp: Arc<MemorySchemaProvider>,
    /// Savepoints: name and the write marks to return to, per table written by then (a table
    /// first written after the savepoint returns to nothing), and the block's DDL then.
    savepoints: Vec<(String, BTreeMap<String, u32>, block_ddl::DdlMark)>,
    /// The open block's DDL, written at its COMMIT (`session/block_ddl.rs`).
    block_ddl: block_ddl::BlockDdl,
    /// The open block's isolation level, as `SHOW transaction_isolation` prints it.
    block_isolation: Option<String>,
    /// Set by a result stream that failed, read at the next statement.
    stream_failed: Arc<AtomicBool>,
    cancel: Registration,
    /// A COPY FROM STDIN waiting for the client's data.
    copy_in: Option<Box<copy_from::CopyIn>>,
    /// Open SQL cursors (`session/cursors.rs`).
    cursors: cursors::Cursors,
    /// The DataFusion state statements are planned with (`session/queries.rs`), and the task
    /// context they run in: the context's, cloned once until a setting changes.
    state: Option<Arc<datafusion::execution::SessionState>>,
    task_ctx: Option<Arc<datafusion::execution::TaskContext>>,
    /// Texts this session ran or prepared: their commands and reusable plans.
    plans: PlanCache,
    /// The catalog generation the default schema was last chosen under.
    synced_catalog: u64,
    /// The session's temporary tables, from its first CREATE TEMP TABLE
    /// (`session/temp_tables.rs`).
    temp_tables: Option<temp_tables::TempTables>,
}

impl Session {
    pub fn new(
        engine: Arc<QueryEngine>,
        registry: &Arc<CancelRegistry>,
        user: &str,
        database: &str,
        pid: i32,
        secret: Vec<u8>,
        startup: &[(String, String)],
    ) -> Result<Self, PgError> {
        let settings = Settings::new(user, startup)?;
        let time_zone = settings.time_zone();
        let cancel = registry.register(pid, secret);
        let vars = Arc::new(Vars {
            settings: Arc::new(RwLock::new(settings)),
            engine: Arc::clone(&engine),
            user: user.to_owned(),
            pid,
            cancel: Arc::clone(cancel.slot()),
            config: config::ConfigChanges::default(),
            temp_catalog: RwLock::new(None),
        });
        let slot = Arc::new(TxnSlot::default());
        let ctx = engine.session_context(
            database,
            "public",
            &time_zone,
            Arc::clone(&vars) as Arc<dyn SessionVars>,
            Arc::clone(&slot),
        )?;
        let temp = Arc::new(MemorySchemaProvider::new());
        if let Some(catalog) = ctx.catalog(database) {
            catalog.register_schema(crate::sql::dml::TEMP_SCHEMA, Arc::clone(&temp) as _)?;
        }
        let mut session = Session {
            user: user.to_owned(),
            vars,
            ctx,
            engine,
            tx: TxState::Idle,
            txn: None,
            slot,
            temp,
            savepoints: Vec::new(),
            block_ddl: block_ddl::BlockDdl::default(),
            block_isolation: None,
            stream_failed: Arc::new(AtomicBool::new(false)),
            cancel,
            copy_in: None,
            cursors: cursors::Cursors::default(),
            state: None,
            task_ctx: None,
            plans: PlanCache::default(),
            synced_catalog: 0,
            temp_tables: None,
        };
        session.sync_search_path();
        Ok(session)
    }

    pub fn settings(&self) -> std::sync::RwLockReadGuard<'_, Settings> {
        self.vars.settings()
    }

    pub fn tx_state(&mut self) -> TxState {
        self.absorb_stream_failure();
        if self.tx == TxState::Idle {
            // A statement outside a block was its own transaction, now over.
            self.end_transaction_scope();
        }
        self.tx
    }

    /// What ends with a transaction besides its writes: `set_config(..., true)` values and
    /// transaction-level advisory locks.
    fn end_transaction_scope(&mut self) {
        self.end_local_config();
        self.engine.advisory_locks().release_xact(self.vars.pid);
    }

    /// An error outside [`execute`](Self::execute) (a syntax error, bad parameters) fails the
    /// transaction block just the same.
    pub fn note_error(&mut self) {
        if self.tx == TxState::InBlock {
            self.fail_block();
        }
    }

    fn absorb_stream_failure(&mut self) {
        if self.stream_failed.swap(false, Ordering::SeqCst) && self.tx == TxState::InBlock {
            self.fail_block();
        }
    }

    /// The block has failed: only ROLLBACK (or ROLLBACK TO SAVEPOINT) can follow. Without a
    /// savepoint its writes can never commit, so its row locks go now, as PostgreSQL releases
    /// an aborted transaction's locks at the error (a transaction waiting for one of them —
    /// such as the other side of a deadlock — goes on at once).
    fn fail_block(&mut self) {
        self.tx = TxState::Failed;
        if self.savepoints.is_empty()
            && let Some(txn) = &self.txn
        {
            txn.release_row_locks();
        }
    }

    /// Cancellation, timeout and bookkeeping for a statement starting now.
    pub fn start_statement(&self) -> StatementControl {
        let timeout_ms = self.settings().statement_timeout_ms();
        StatementControl {
            token: self.cancel.slot().start_statement(),
            deadline: (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms)),
            failed: Arc::clone(&self.stream_failed),
            _running: self.cancel.registry().running_guard(),
        }
    }

    /// The commands of `sql`: parsed before (the session keeps the texts it saw) or now.
    pub fn parse_cached(&mut self, sql: &str) -> Result<Arc<Vec<Command>>, crate::sql::SqlError> {
        if let Some(commands) = self.plans.commands(sql) {
            return Ok(commands);
        }
        let commands = Arc::new(crate::sql::parse(sql)?);
        self.plans.insert_commands(sql, Arc::clone(&commands));
        Ok(commands)
    }

    /// Parses nothing: plans `command` (from `source`) if DataFusion runs it (extended
    /// protocol's Parse).
    pub async fn prepare(
        &mut self,
        command: Command,
        source: Option<Source>,
    ) -> Result<Prepared, PgError> {
        if let Command::Plan(statement) = &command
            && queries::is_query(statement)
        {
            let planned = self.planned_query(statement, source.as_ref()).await?;
            return Ok(Prepared {
                plan: Some(planned.logical.clone()),
                columns: planned.columns.clone(),
                planned: Some(planned),
                ..Prepared::unplanned(command, source)
            });
        }
        let dml = match &command {
            Command::Plan(statement) if dml::is_dml(statement) => {
                Some(Arc::new(self.plan_dml_refreshed(statement, false).await?))
            }
            Command::Upsert(statement) => {
                Some(Arc::new(self.plan_dml_refreshed(statement, true).await?))
            }
            _ => None,
        };
        let plan = match (&command, &dml) {
            (_, Some(d)) => Some(d.plan.clone()),
            (Command::Plan(statement), None) => Some(self.plan(statement.clone()).await?),
            (Command::Cursor(c), None) => match c.as_ref() {
                CursorCommand::Declare(d) => Some(self.plan(d.query.clone()).await?),
                _ => None,
            },
            _ => None,
        };
        let columns = match &command {
            Command::Cursor(c) => match c.as_ref() {
                CursorCommand::Fetch {
                    name,
                    move_only: false,
                    ..
                } => self.cursor_schema(name),
                _ => None,
            },
            Command::Plan(_) if dml.is_none() => {
                plan.as_ref().and_then(|p| self.analyzed_schema(p))
            }
            _ => None,
        };
        Ok(Prepared {
            plan,
            dml,
            columns,
            ..Prepared::unplanned(command, source)
        })
    }

    async fn plan(&mut self, statement: DFStatement) -> Result<LogicalPlan, PgError> {
        Ok(self.plan_keyed(statement).await?.0)
    }

    /// Plans `statement`, with the key the plan is valid under (taken before planning, so that
    /// DDL while it is planned makes it stale). A statement naming a schema or table the
    /// catalog does not list is planned again after a refresh that finds new names.
    pub(super) async fn plan_keyed(
        &mut self,
        statement: DFStatement,
    ) -> Result<(LogicalPlan, super::plan_cache::PlanKey), PgError> {
        if reads_catalog(&statement) {
            // Catalog queries list what is there now.
            self.refresh_catalog_now().await?;
        } else {
            self.refresh_catalog().await?;
        }
        let key = self.plan_key();
        match self.plan_once(statement.clone()).await {
            Err(e) if undefined_name(&e) && self.catalog_changed_on_refresh().await? => {
                let key = self.plan_key();
                Ok((self.plan_once(statement).await?, key))
            }
            result => Ok((result?, key)),
        }
    }

    async fn plan_once(&mut self, mut statement: DFStatement) -> Result<LogicalPlan, PgError> {
        // Temporary tables hide other relations of their names; then views, whose queries'
        // version clauses are pinned with the statement's.
        self.qualify_temp_names(&mut statement);
        self.expand_views(&mut statement).await?;
        let time_zone = self.settings().time_zone();
        crate::query::time_travel::pin_versions(&self.ctx, &mut statement, &time_zone).await?;
        let state = self.planning_state();
        let plan = state.statement_to_plan(statement).await?;
        // Returned numeric quotients and averages with PostgreSQL's per-value scale.
        Ok(crate::query::pg_numeric_output::rewrite(plan)?)
    }

    /// [`plan_dml`](Self::plan_dml), planned again when a refresh of the catalog finds names
    /// it did not list.
    async fn plan_dml_refreshed(
        &mut self,
        statement: &DFStatement,
        upsert: bool,
    ) -> Result<DmlPlan, PgError> {
        match self.plan_dml(statement, upsert).await {
            Err(e) if undefined_name(&e) && self.catalog_changed_on_refresh().await? => {
                self.plan_dml(statement, upsert).await
            }
            result => result,
        }
    }

    /// The columns `plan` returns once analysed: the analyzer rules retype what the SQL planner
    /// typed differently from PostgreSQL (an integer literal is int4, not DataFusion's int8), and
    /// Describe must announce the types Execute sends. `None` when the plan cannot be analysed
    /// before its parameters are bound (the planner's schema is described then).
    fn analyzed_schema(&mut self, plan: &LogicalPlan) -> Option<SchemaRef> {
        let state = self.planning_state();
        let analyzed = state
            .analyzer()
            .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
            .ok()?;
        Some(Arc::clone(analyzed.schema().inner()))
    }

    /// Refreshes the catalog's lists if they are older than [`crate::query::REFRESH_INTERVAL`]
    /// (this server's DDL refreshes them at once).
    async fn refresh_catalog(&mut self) -> Result<(), PgError> {
        self.engine
            .catalog()
            .refresh_if_older(crate::query::REFRESH_INTERVAL)
            .await?;
        self.sync_search_path_if_changed();
        Ok(())
    }

    /// Refreshes the catalog's lists now.
    async fn refresh_catalog_now(&mut self) -> Result<(), PgError> {
        self.engine.catalog().refresh().await?;
        self.sync_search_path_if_changed();
        Ok(())
    }

    /// After this server's DDL: the lists read again and every kept plan made again.
    async fn catalog_changed_by_ddl(&mut self) -> Result<(), PgError> {
        self.engine.catalog().invalidate();
        self.refresh_temp_tables().await?;
        self.refresh_catalog_now().await
    }

    /// Refreshes the lists now; whether they changed.
    async fn catalog_changed_on_refresh(&mut self) -> Result<bool, PgError> {
        let before = self.engine.catalog().generation();
        self.refresh_catalog_now().await?;
        Ok(self.engine.catalog().generation() != before)
    }

    /// The default schema depends on which schemas of `search_path` exist.
    fn sync_search_path_if_changed(&mut self) {
        let generation = self.engine.catalog().generation();
        if generation != self.synced_catalog {
            self.synced_catalog = generation;
            self.sync_search_path();
        }
    }

    /// Points DataFusion's default schema at the first existing schema of `search_path`.
    fn sync_search_path(&mut self) {
        let path = self.settings().search_path();
        let existing = self.vars.effective_search_path();
        let schema = existing
            .into_iter()
            .next()
            .or_else(|| path.into_iter().find(|s| s != &self.user))
            .unwrap_or_else(|| "public".to_owned());
        let state = self.ctx.state_ref();
        {
            let mut state = state.write();
            if state.config().options().catalog.default_schema == schema {
                return;
            }
            state.config_mut().options_mut().catalog.default_schema = schema;
        }
        self.invalidate_state();
    }

    /// Runs one command. `prepared` carries a plan made at Parse time and `params` its values.
    pub async fn execute(
        &mut self,
        prepared: Prepared,
        params: Option<ParamValues>,
    ) -> Result<Outcome, PgError> {
        self.absorb_stream_failure();
        let failed_block = self.tx == TxState::Failed;
        let mut reported = self.absorb_config_changes();
        let mut result = self.execute_inner(prepared, params, failed_block).await;
        if result.is_err() && self.tx == TxState::InBlock {
            self.fail_block();
        }
        if self.tx == TxState::Idle
            && let Err(e) = self.temp_tables_on_commit().await
            && result.is_ok()
        {
            // ON COMMIT DROP / DELETE ROWS of temporary tables, after a transaction ended.
            result = Err(e);
        }
        if let Ok(outcome) = &mut result {
            reported.extend(self.absorb_config_changes());
            reported.append(&mut outcome.parameters);
            outcome.parameters = reported;
        }
        result
    }

    async fn execute_inner(
        &mut self,
        prepared: Prepared,
        params: Option<ParamValues>,
        failed_block: bool,
    ) -> Result<Outcome, PgError> {
        if self.tx == TxState::InBlock
            && !matches!(self.block_isolation.as_deref(), Some("repeatable read"))
            && let Some(txn) = &self.txn
        {
            // READ COMMITTED: every statement reads the latest committed state.
            txn.new_statement_snapshot();
        }
        if failed_block
            && !matches!(
                prepared.command,
                Command::Transaction(
                    TransactionCommand::Rollback
                        | TransactionCommand::Commit
                        | TransactionCommand::RollbackTo(_)
                )
            )
        {
            return Err(PgError::aborted_transaction());
        }
        match prepared.command {
            Command::Plan(statement) if queries::is_query(&statement) => {
                let source = prepared.source.as_ref();
                let planned = match prepared.planned {
                    Some(p) => self.planned_for_execution(&statement, p, source).await?,
                    None => self.planned_query(&statement, source).await?,
                };
                self.run_query(&planned, params).await
            }
            Command::Plan(statement) if dml::is_dml(&statement) => {
                let dml = match prepared.dml {
                    Some(d) => d,
                    None => Arc::new(self.plan_dml_refreshed(&statement, false).await?),
                };
                self.run_dml(&dml, params).await
            }
            Command::Upsert(statement) => {
                let dml = match prepared.dml {
                    Some(d) => d,
                    None => Arc::new(self.plan_dml_refreshed(&statement, true).await?),
                };
                self.run_dml(&dml, params).await
            }
            Command::Plan(statement) => {
                let plan = match prepared.plan {
                    Some(plan) => plan,
                    None => self.plan(statement.clone()).await?,
                };
                let plan = match params {
                    Some(p) => plan.with_param_values(p)?,
                    None => plan,
                };
                self.run_plan(&statement, plan).await
            }
            Command::Set { name, value } => self.set(&name, &value),
            Command::Show(target) => self.show(&target),
            Command::Reset(name) => match name {
                Some(name) => {
                    let mut outcome = self.set(&name, &SetValue::Default)?;
                    outcome.output = Output::Done("RESET".to_owned());
                    Ok(outcome)
                }
                None => {
                    let parameters = self
                        .vars
                        .settings
                        .write()
                        .expect("settings lock")
                        .reset_all();
                    self.apply_settings();
                    Ok(Outcome {
                        parameters,
                        ..Outcome::done("RESET")
                    })
                }
            },
            Command::Transaction(t) => self.transaction(t).await,
            Command::CreateSchema {
                name,
                if_not_exists,
            } => self.create_schema(&name, if_not_exists).await,
            Command::DropSchema {
                names,
                if_exists,
                cascade,
            } => self.drop_schemas(&names, if_exists, cascade).await,
            Command::NoOp(tag) => Ok(Outcome::done(tag)),
            Command::CreateTable(spec) => self.create_table(*spec).await,
            Command::AlterTable(spec) => self.alter_table(*spec).await,
            Command::DropTable {
                names,
                if_exists,
                cascade,
            } => self.drop_tables(&names, if_exists, cascade).await,
            Command::Truncate(names) => self.truncate_tables(&names).await,
            Command::Call(spec) => {
                // Procedures may change what a table is (rollback_to, restore).
                let result = self.call(&spec).await;
                self.engine.catalog().invalidate();
                result
            }
            Command::Copy(spec) if spec.from_stdin => self.copy_from_start(&spec).await,
            Command::Copy(spec) => self.copy_to_stdout(&spec).await,
            Command::Role(role) => {
                let result = self.role(&role).await;
                self.engine.catalog().invalidate();
                result
            }
            Command::Cursor(c) => self.run_cursor(*c, prepared.plan, params).await,
            Command::Sequence(c) => self.sequence(*c).await,
            Command::View(c) => {
                self.refuse_view_over_temp(&c)?;
                self.view(*c).await
            }
            Command::DiscardAll => {
                if self.tx == TxState::Idle {
                    self.discard_temp_tables().await?;
                }
                self.discard_all()
            }
            Command::DiscardTemp => {
                if self.tx != TxState::Idle {
                    return Err(PgError::new(
                        "25001",
                        "DISCARD TEMP cannot run inside a transaction block",
                    ));
                }
                self.discard_temp_tables().await?;
                Ok(Outcome::done("DISCARD TEMP"))
            }
            // The handler drops the protocol-level statements (it holds them).
            Command::Deallocate(name) => Ok(Outcome::done(match name {
                Some(_) => "DEALLOCATE",
                None => "DEALLOCATE ALL",
            })),
        }
    }

    async fn run_plan(
        &mut self,
        statement: &DFStatement,
        plan: LogicalPlan,
    ) -> Result<Outcome, PgError> {
        match TagKind::of(statement) {
            TagKind::Rows(tag) => {
                // The stream's schema, not the logical plan's: the analyzer rules retype
                // columns (int4 literals), and rows are encoded as Describe announced them.
                let batches = self.execute_untorn(&plan).await?;
                let schema: SchemaRef = batches.schema();
                Ok(Output::Rows {
                    schema,
                    batches,
                    tag,
                }
                .into())
            }
            TagKind::Count(command) => {
                let df = self.ctx.execute_logical_plan(plan).await?;
                let mut stream = df.execute_stream().await?;
                let mut rows: u64 = 0;
                while let Some(batch) = stream.next().await {
                    rows += count_of(&batch?);
                }
                Ok(Outcome::from(Output::Count { command, rows }))
            }
            TagKind::Plain(tag) => {
                // DDL runs in execute_logical_plan; drain whatever it returns.
                let df = self.ctx.execute_logical_plan(plan).await?;
                let mut stream = df.execute_stream().await?;
                while let Some(batch) = stream.next().await {
                    batch?;
                }
                Ok(Outcome::done(tag))
            }
        }
    }

    fn set(&mut self, name: &str, value: &SetValue) -> Result<Outcome, PgError> {
        let reported = self
            .vars
            .settings
            .write()
            .expect("settings lock")
            .set(name, value)?;
        self.apply_settings();
        Ok(Outcome {
            parameters: reported.into_iter().collect(),
            ..Outcome::done("SET")
        })
    }

    /// Pushes settings DataFusion needs to know into its config.
    fn apply_settings(&mut self) {
        let time_zone = self.settings().time_zone();
        {
            let state = self.ctx.state_ref();
            let mut state = state.write();
            state.config_mut().options_mut().execution.time_zone = Some(time_zone);
        }
        self.invalidate_state();
        self.sync_search_path();
    }

    fn show(&self, target: &ShowTarget) -> Result<Outcome, PgError> {
        let settings = self.settings();
        let columns: Vec<Vec<String>> = match target {
            ShowTarget::Name(name)
                if name == "transaction_isolation" && self.block_isolation.is_some() =>
            {
                vec![vec![self.block_isolation.clone().unwrap_or_default()]]
            }
            ShowTarget::Name(name) => vec![vec![
                settings
                    .get(name)
                    .ok_or_else(|| PgError::undefined_setting(name))?,
            ]],
            ShowTarget::All => {
                let all = settings.all();
                vec![
                    all.iter().map(|r| r.0.clone()).collect(),
                    all.iter().map(|r| r.1.clone()).collect(),
                    all.iter().map(|r| r.2.clone()).collect(),
                ]
            }
        };
        let schema = Arc::new(show_schema(target));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            columns
                .into_iter()
                .map(|c| Arc::new(StringArray::from(c)) as _)
                .collect(),
        )
        .map_err(PgError::internal)?;
        let batches = Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&schema),
            futures::stream::iter([Ok(batch)]),
        ));
        Ok(Output::Rows {
            schema,
            batches,
            tag: "SHOW",
        }
        .into())
    }

    /// Transaction blocks: BEGIN pins nothing yet (each table's snapshot is pinned when the
    /// block first reads or writes it); COMMIT writes the block's changes as one snapshot;
    /// ROLLBACK and ROLLBACK TO SAVEPOINT drop them.
    async fn transaction(&mut self, command: TransactionCommand) -> Result<Outcome, PgError> {
        use TransactionCommand::*;
        let mut warnings = Vec::new();
        let output = match command {
            Begin(level) => {
                if self.tx != TxState::Idle {
                    warnings.push("there is already a transaction in progress".to_owned());
                }
                if self.tx == TxState::Idle {
                    self.tx = TxState::InBlock;
                    self.block_isolation = Some(match level {
                        Some(l) => l.to_owned(),
                        None => self
                            .settings()
                            .get("default_transaction_isolation")
                            .unwrap_or_else(|| "read committed".to_owned()),
                    });
                    self.block_transaction();
                }
                Output::TxStart("BEGIN".to_owned())
            }
            Commit => {
                let tag = match self.tx {
                    TxState::Idle => {
                        warnings.push("there is no transaction in progress".to_owned());
                        "COMMIT"
                    }
                    TxState::InBlock => "COMMIT",
                    // COMMIT of a failed block rolls back, as in PostgreSQL.
                    TxState::Failed => "ROLLBACK",
                };
                let result = if tag == "COMMIT" {
                    match self.hold_cursors().await {
                        Ok(()) => self.commit_block().await,
                        Err(e) => {
                            self.rollback_block().await;
                            Err(e)
                        }
                    }
                } else {
                    self.rollback_block().await;
                    Ok(())
                };
                self.end_block_cursors(tag == "COMMIT" && result.is_ok());
                self.end_block();
                result?;
                Output::TxEnd(tag.to_owned())
            }
            Rollback => {
                if self.tx == TxState::Idle {
                    warnings.push("there is no transaction in progress".to_owned());
                }
                self.rollback_block().await;
                self.end_block_cursors(false);
                self.end_block();
                Output::TxEnd("ROLLBACK".to_owned())
            }
            SetIsolation(level) => {
                if self.tx == TxState::Idle {
                    warnings
                        .push("SET TRANSACTION can only be used in transaction blocks".to_owned());
                } else if let Some(level) = level {
                    self.block_isolation = Some(level.to_owned());
                    if let Some(txn) = &self.txn {
                        // The level applies from the block's next statement.
                        txn.new_statement_snapshot();
                    }
                }
                Output::Done("SET".to_owned())
            }
            Savepoint(name) => {
                self.require_block("SAVEPOINT")?;
                let mark = self.write_mark().await;
                let ddl = self.ddl_mark();
                self.savepoints.push((name, mark, ddl));
                Output::Done("SAVEPOINT".to_owned())
            }
            Release(name) => {
                self.require_block("RELEASE SAVEPOINT")?;
                let at = self.find_savepoint(&name)?;
                self.savepoints.truncate(at);
                Output::Done("RELEASE".to_owned())
            }
            RollbackTo(name) => {
                self.require_block("ROLLBACK TO SAVEPOINT")?;
                let at = self.find_savepoint(&name)?;
                self.savepoints.truncate(at + 1);
                let marks = self.savepoints[at].1.clone();
                let ddl = self.savepoints[at].2.clone();
                self.rollback_ddl_to(ddl).await;
                let writers = self.txn.as_ref().map(|t| t.writers()).unwrap_or_default();
                for (table, w) in writers {
                    let mark = marks.get(&table).copied().unwrap_or(0);
                    w.lock().await.rollback_to(mark).await;
                }
                self.tx = TxState::InBlock;
                Output::Done("ROLLBACK".to_owned())
            }
        };
        Ok(Outcome {
            warnings,
            ..Outcome::from(output)
        })
    }

    fn end_block(&mut self) {
        self.end_transaction_scope();
        self.tx = TxState::Idle;
        self.block_isolation = None;
        self.savepoints.clear();
        self.txn = None;
        self.slot.set(None);
    }

    /// Where the block's writes stand, per table (a savepoint returns here).
    async fn write_mark(&self) -> BTreeMap<String, u32> {
        let mut marks = BTreeMap::new();
        for (table, w) in self.txn.as_ref().map(|t| t.writers()).unwrap_or_default() {
            marks.insert(table, w.lock().await.mark());
        }
        marks
    }

    fn require_block(&self, what: &str) -> Result<(), PgError> {
        if self.tx == TxState::Idle {
            Err(PgError::new(
                "25P01",
                format!("{what} can only be used in transaction blocks"),
            ))
        } else {
            Ok(())
        }
    }

    fn find_savepoint(&self, name: &str) -> Result<usize, PgError> {
        self.savepoints
            .iter()
            .rposition(|(s, _, _)| s == name)
            .ok_or_else(|| PgError::new("3B001", format!("savepoint \"{name}\" does not exist")))
    }

    /// DDL inside a block takes effect at once: say so rather than pretend ROLLBACK undoes it.
    fn ddl_warning(&self, what: &str) -> Vec<String> {
        if self.tx == TxState::Idle {
            Vec::new()
        } else {
            vec![format!(
                "{what} took effect immediately: tarn does not yet undo DDL on ROLLBACK"
            )]
        }
    }

    async fn create_schema(&mut self, name: &str, if_not_exists: bool) -> Result<Outcome, PgError> {
        if RESERVED_SCHEMAS.contains(&name) || name.starts_with("pg_") {
            return Err(
                PgError::new("42939", format!("unacceptable schema name \"{name}\""))
                    .with_hint("The names sys, information_schema and pg_* are reserved."),
            );
        }
        let warehouse = self.engine.catalog().warehouse().clone();
        let mut warnings = self.ddl_warning("CREATE SCHEMA");
        let mut notices = Vec::new();
        match warehouse.create_database(name).await {
            Ok(()) => {}
            Err(crate::storage::StorageError::DatabaseExists(_)) if if_not_exists => {
                warnings.clear();
                notices.push((
                    "42P06",
                    format!("schema \"{name}\" already exists, skipping"),
                ));
            }
            Err(e) => return Err(e.into()),
        }
        self.catalog_changed_by_ddl().await?;
        Ok(Outcome {
            warnings,
            notices,
            ..Outcome::done("CREATE SCHEMA")
        })
    }

    async fn drop_schemas(
        &mut self,
        names: &[String],
        if_exists: bool,
        cascade: bool,
    ) -> Result<Outcome, PgError> {
        let warehouse = self.engine.catalog().warehouse().clone();
        let warnings = self.ddl_warning("DROP SCHEMA");
        let mut notices = Vec::new();
        // Check all first, so a missing name drops nothing (as in PostgreSQL).
        let mut existing = Vec::new();
        for name in names {
            if RESERVED_SCHEMAS.contains(&name.as_str()) {
                return Err(PgError::new(
                    "2BP01",
                    format!(
                        "cannot drop schema {name} because it is required by the database system"
                    ),
                ));
            }
            if warehouse.database_exists(name).await? {
                // Views live beside the database (`storage/views.rs`).
                self.check_schema_views(name, cascade).await?;
                existing.push(name);
            } else if if_exists {
                notices.push((
                    "00000",
                    format!("schema \"{name}\" does not exist, skipping"),
                ));
            } else {
                return Err(PgError::new(
                    "3F000",
                    format!("schema \"{name}\" does not exist"),
                ));
            }
        }
        for name in existing {
            warehouse.drop_database(name, cascade).await?;
            self.drop_schema_views(name).await?;
        }
        self.catalog_changed_by_ddl().await?;
        Ok(Outcome {
            warnings,
            notices,
            ..Outcome::done("DROP SCHEMA")
        })
    }
}

/// Whether `statement` names a catalog relation (`pg_catalog`, `information_schema`, `pg_*`):
/// such queries list what the warehouse holds now.
fn reads_catalog(statement: &DFStatement) -> bool {
    use datafusion::sql::sqlparser::ast::{ObjectNamePart, visit_relations};
    let DFStatement::Statement(statement) = statement else {
        return true;
    };
    visit_relations(statement.as_ref(), |name| {
        let catalog = name.0.iter().any(|part| match part {
            ObjectNamePart::Identifier(ident) => {
                let v = ident.value.to_ascii_lowercase();
                v.starts_with("pg_") || v == "information_schema"
            }
            _ => true,
        });
        if catalog {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// An error naming a schema or table the catalog does not know.
fn undefined_name(e: &PgError) -> bool {
    matches!(e.code, "42P01" | "3F000")
}

/// How a DataFusion statement reports completion.
enum TagKind {
    /// Returns rows; the tag gets the row count appended by the protocol layer.
    Rows(&'static str),
    /// Returns one `count` row that becomes part of the tag (`INSERT 0 n`, `UPDATE n`).
    Count(&'static str),
    /// DDL: a fixed tag.
    Plain(&'static str),
}

impl TagKind {
    fn of(statement: &DFStatement) -> TagKind {
        let DFStatement::Statement(s) = statement else {
            return match statement {
                DFStatement::CopyTo(_) => TagKind::Count("COPY"),
                DFStatement::CreateExternalTable(_) => TagKind::Plain("CREATE TABLE"),
                _ => TagKind::Rows("EXPLAIN"),
            };
        };
        match s.as_ref() {
            Statement::Query(_) => TagKind::Rows("SELECT"),
            Statement::Insert(_) => TagKind::Count("INSERT"),
            Statement::Update(_) => TagKind::Count("UPDATE"),
            Statement::Delete(_) => TagKind::Count("DELETE"),
            Statement::Merge(_) => TagKind::Count("MERGE"),
            Statement::Explain { .. } => TagKind::Rows("EXPLAIN"),
            Statement::CreateTable(_) => TagKind::Plain("CREATE TABLE"),
            Statement::CreateView(_) => TagKind::Plain("CREATE VIEW"),
            Statement::Truncate(_) => TagKind::Plain("TRUNCATE TABLE"),
            Statement::Drop { object_type, .. } => TagKind::Plain(match object_type {
                ObjectType::Table => "DROP TABLE",
                ObjectType::View => "DROP VIEW",
                ObjectType::Index => "DROP INDEX",
                _ => "DROP",
            }),
            _ => TagKind::Rows("SELECT"),
        }
    }
}

/// The columns `SHOW` returns: the setting's name, or name/setting/description for `SHOW ALL`.
pub fn show_schema(target: &ShowTarget) -> Schema {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    match target {
        ShowTarget::Name(name) => Schema::new(vec![text(&Settings::display_name(name))]),
        ShowTarget::All => Schema::new(vec![text("name"), text("setting"), text("description")]),
    }
}

/// Whether DataFusion's answer to `statement` is rows for the client (not a tag).
pub fn returns_rows(statement: &DFStatement) -> bool {
    matches!(TagKind::of(statement), TagKind::Rows(_))
}

/// The affected-row count DataFusion returns from DML (one UInt64 `count` column).
fn count_of(batch: &RecordBatch) -> u64 {
    use datafusion::arrow::array::{Array, UInt64Array};
    batch
        .columns()
        .first()
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .map(|a| {
            (0..a.len())
                .filter(|&i| a.is_valid(i))
                .map(|i| a.value(i))
                .sum()
        })
        .unwrap_or(batch.num_rows() as u64)
}

impl Drop for Session {
    /// A connection that ends inside a block rolls it back: the files its transaction wrote
    /// are deleted.
    fn drop(&mut self) {
        self.slot.set(None);
        self.engine.advisory_locks().release_session(self.vars.pid);
        let writers = self
            .txn
            .take()
            .map(|t| t.take_writers())
            .unwrap_or_default();
        // Sequences of the block's pending CREATE TABLEs go with the block.
        let sequences = block_ddl::abandoned_sequences(&std::mem::take(&mut self.block_ddl));
        if writers.is_empty() && sequences.is_empty() {
            return;
        }
        if !sequences.is_empty() {
            self.engine.catalog().invalidate();
        }
        tracing::debug!("session ended inside a transaction block: rolling it back");
        let store = self.engine.sequences().clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                for (db, sequence) in sequences {
                    if let Err(e) = store.drop(&db, &sequence).await {
                        tracing::warn!("could not drop sequence {db}.{sequence}: {e}");
                    }
                }
                for writer in writers {
                    match Arc::try_unwrap(writer) {
                        Ok(m) => m.into_inner().abort().await,
                        Err(_) => {
                            tracing::warn!("a rolled-back transaction's writer is still in use")
                        }
                    }
                }
            });
        }
    }
}

impl Session {
    /// `CREATE/ALTER/DROP ROLE`: the warehouse's role document (see `auth::roles`).
    async fn role(&mut self, command: &crate::sql::role::RoleCommand) -> Result<Outcome, PgError> {
        let store =
            crate::storage::roles::RoleStore::new(self.engine.catalog().warehouse().io().clone());
        let (tag, notice) = super::auth::roles::execute(&store, &self.user, command).await?;
        let mut outcome = Outcome::done(tag);
        outcome.notices.extend(notice);
        Ok(outcome)
    }
}
