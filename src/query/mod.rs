//! Query layer: DataFusion contexts over the warehouse catalog.
//!
//! One [`QueryEngine`] per server holds what all sessions share (the warehouse catalog, the
//! runtime with its memory pool); [`QueryEngine::session_context`] builds the DataFusion
//! `SessionContext` of one connection, so settings never leak between connections.

pub mod advisory_locks;
mod branch_types;
mod catalog;
pub mod changes;
pub mod conflict_join;
pub mod copy_progress;
pub mod direct_plan;
pub mod dml;
pub mod filter;
mod functions;
mod params;
mod pg_array_ops;
mod pg_casts;
mod pg_catalog;
mod pg_datetime_ops;
mod pg_floats;
pub mod pg_format;
mod pg_integers;
pub mod pg_literals;
pub mod pg_numeric_output;
mod pg_syntax_calls;
pub mod pg_typeof;
pub mod pg_types;
mod pg_unknown_literals;
pub mod plan_reuse;
pub mod procedures;
pub mod read_view;
pub mod row_locks;
pub mod sequences;
mod set_config;
mod set_ops;
pub mod sink;
mod system_files;
pub mod system_tables;
pub mod table;
pub mod time_travel;
pub mod txn;
mod union_types;

pub use catalog::{DatabaseSchema, REFRESH_INTERVAL, SessionCatalog, WarehouseCatalog};
pub(crate) use functions::strings::is_reserved;
pub use functions::{PG_VERSION, PG_VERSION_NUM, SessionVars, version_string};
pub use params::parameter_types;
pub(crate) use pg_catalog::quote_ident;
pub use txn::{Transaction, TxnSlot};

use crate::storage::sequences::SequenceStore;
use crate::storage::views::ViewStore;
use std::sync::Arc;

use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::storage::{StorageError, Warehouse};

/// Errors of the query layer.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    /// A text value that is not valid input for its PostgreSQL type (22P02).
    #[error("invalid input syntax for type {type_name}: \"{value}\"")]
    InvalidText { type_name: String, value: String },
    /// Date/time text that does not read (22007) or names an impossible date (22008).
    #[error("{message}")]
    DateTime { code: &'static str, message: String },
    /// Valid SQL that tarn does not support (0A000).
    #[error("{0}")]
    Unsupported(String),
    /// A row-level change that PostgreSQL refuses (21000: a row affected twice).
    #[error("{0}")]
    Cardinality(String),
    /// An error PostgreSQL reports with this SQLSTATE (data exceptions of functions, casts and
    /// operators: 22003 out of range, 22012 division by zero, 2201B invalid regex, ...).
    #[error("{message}")]
    Sql { code: &'static str, message: String },
    /// An error whose SQLSTATE the function raising it knows (lock waits, set_config).
    #[error("{message}")]
    Coded { code: &'static str, message: String },
}

/// What every session of one server shares.
#[derive(Debug)]
pub struct QueryEngine {
    catalog: Arc<WarehouseCatalog>,
    runtime: Arc<RuntimeEnv>,
    pg_tables: pg_catalog::StaticTables,
    options: EngineOptions,
    /// Running COPYs (`pg_stat_progress_copy`).
    copy_progress: Arc<copy_progress::CopyProgressRegistry>,
    /// Server-wide advisory locks (`pg_advisory_lock` and its kin).
    advisory_locks: Arc<advisory_locks::AdvisoryLocks>,
    /// Server-wide row locks of UPDATE, DELETE, MERGE and ON CONFLICT.
    row_locks: Arc<row_locks::RowLocks>,
    /// The warehouse's sequences (`CREATE SEQUENCE`, SERIAL, identity columns), with this
    /// server's cached blocks of values.
    sequences: SequenceStore,
    /// The warehouse's views (`CREATE VIEW`), with the listing queries expand them from.
    views: ViewStore,
}

/// Engine-wide switches.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Register fault-injection functions (tests only).
    pub debug_functions: bool,
}

impl QueryEngine {
    /// An engine over `warehouse`, with its database list read once.
    pub async fn open(warehouse: Warehouse, options: EngineOptions) -> Result<Self, QueryError> {
        let catalog = Arc::new(WarehouseCatalog::new(warehouse));
        catalog.refresh().await?;
        let runtime = RuntimeEnvBuilder::new().build_arc()?;
        let pg_tables = pg_catalog::load_static_tables()?;
        let sequences = SequenceStore::new(catalog.warehouse().io().clone());
        let views = ViewStore::new(catalog.warehouse().io().clone());
        Ok(Self {
            sequences,
            views,
            catalog,
            runtime,
            pg_tables,
            options,
            copy_progress: Arc::default(),
            advisory_locks: Arc::default(),
            row_locks: Arc::default(),
        })
    }

    pub fn advisory_locks(&self) -> &Arc<advisory_locks::AdvisoryLocks> {
        &self.advisory_locks
    }

    pub fn row_locks(&self) -> &Arc<row_locks::RowLocks> {
        &self.row_locks
    }

    pub fn sequences(&self) -> &SequenceStore {
        &self.sequences
    }

    pub fn views(&self) -> &ViewStore {
        &self.views
    }

    pub fn catalog(&self) -> &Arc<WarehouseCatalog> {
        &self.catalog
    }

    pub fn copy_progress(&self) -> &Arc<copy_progress::CopyProgressRegistry> {
        &self.copy_progress
    }

    /// A fresh DataFusion context for one session connected to `database` (the name in the
    /// client's startup message; every name serves the one warehouse).
    pub fn session_context(
        &self,
        database: &str,
        default_schema: &str,
        time_zone: &str,
        vars: Arc<dyn SessionVars>,
        txn: Arc<TxnSlot>,
    ) -> Result<SessionContext, QueryError> {
        let mut config = SessionConfig::new()
            // tarn's own information_schema (query/pg_catalog/information_schema.rs).
            .with_information_schema(false)
            .with_create_default_catalog_and_schema(false)
            .with_default_catalog_and_schema(database, default_schema);
        let options = config.options_mut();
        options.sql_parser.dialect = datafusion::config::Dialect::PostgreSQL;
        // PostgreSQL reads 12.50 as numeric, not as a float.
        options.sql_parser.parse_float_as_decimal = true;
        options.execution.time_zone = Some(time_zone.to_owned());
        // PostgreSQL's integer literal types must be in place before type coercion.
        let mut analyzer_rules = datafusion::optimizer::Analyzer::new().rules;
        analyzer_rules.insert(0, Arc::new(pg_integers::PgIntegerLiterals));
        // Each UNION branch's own types are only visible before type coercion.
        analyzer_rules.insert(1, Arc::new(union_types::PgUnionTypes));
        // Quoted literals take the type their operator or CASE gives them, before coercion.
        analyzer_rules.insert(2, Arc::new(pg_unknown_literals::PgUnknownLiterals));
        let state = datafusion::execution::SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(Arc::clone(&self.runtime))
            .with_default_features()
            .with_expr_planners(expr_planners())
            .with_analyzer_rules(analyzer_rules)
            .build();
        let mut ctx = SessionContext::new_with_state(state);
        ctx.register_catalog(
            database,
            Arc::new(SessionCatalog::new(Arc::clone(&self.catalog), txn)),
        );
        ctx.add_analyzer_rule(Arc::new(pg_literals::PgDateTimeLiterals));
        ctx.add_analyzer_rule(Arc::new(pg_casts::PgCasts));
        ctx.add_analyzer_rule(Arc::new(set_ops::PgSetOperations));
        ctx.add_analyzer_rule(Arc::new(pg_integers::PgIntegerOverflow));
        pg_catalog::register(
            &ctx,
            database,
            &self.pg_tables,
            &self.catalog,
            &self.views,
            &vars,
        )?;
        copy_progress::register(&ctx, database, Arc::clone(&self.copy_progress))?;
        advisory_locks::register(&ctx, &self.advisory_locks, &vars);
        set_config::register(&ctx, &vars);
        sequences::register(&ctx, &self.sequences, &vars);
        functions::register_session_functions(&ctx, vars);
        functions::register_pg_functions(&ctx);
        pg_typeof::register(&ctx);
        {
            use datafusion::execution::FunctionRegistry;
            ctx.register_expr_planner(Arc::new(pg_datetime_ops::PgDateTimeOperators))?;
            ctx.register_expr_planner(Arc::new(pg_floats::PgFloatOperators))?;
            ctx.register_expr_planner(Arc::new(functions::json::ops::JsonOperators::default()))?;
            // CASE/coalesce/nullif keep their results' json/uuid/varchar tag (after coercion).
            let casts = ["json", "jsonb", "uuid"]
                .into_iter()
                .filter_map(|t| Some((t, ctx.udf(&format!("tarn_cast_{t}")).ok()?)))
                .collect();
            ctx.add_analyzer_rule(Arc::new(branch_types::BranchTypes::new(casts)));
        }
        if self.options.debug_functions {
            functions::register_debug_functions(&ctx);
        }
        Ok(ctx)
    }
}

/// tarn's expression planners ahead of DataFusion's defaults, so tarn's win where both plan
/// the same syntax.
fn expr_planners() -> Vec<Arc<dyn datafusion::logical_expr::planner::ExprPlanner>> {
    let mut planners: Vec<Arc<dyn datafusion::logical_expr::planner::ExprPlanner>> = vec![
        Arc::new(pg_syntax_calls::PgSyntaxCalls::default()),
        Arc::new(pg_unknown_literals::PgUnknownOperands),
        Arc::new(pg_array_ops::PgArrayOperators),
    ];
    planners.extend(datafusion::execution::SessionStateDefaults::default_expr_planners());
    planners
}
