//! Query layer: DataFusion contexts over the warehouse catalog.
//!
//! One [`QueryEngine`] per server holds what all sessions share (the warehouse catalog, the
//! runtime with its memory pool); [`QueryEngine::session_context`] builds the DataFusion
//! `SessionContext` of one connection, so settings never leak between connections.

mod catalog;
pub mod changes;
pub mod dml;
pub mod filter;
mod functions;
mod params;
mod pg_catalog;
pub mod pg_format;
pub mod pg_literals;
pub mod pg_typeof;
pub mod pg_types;
pub mod sink;
mod system_files;
pub mod system_tables;
pub mod table;
pub mod time_travel;
pub mod txn;

pub use catalog::{SessionCatalog, WarehouseCatalog};
pub use functions::{PG_VERSION, PG_VERSION_NUM, SessionVars, version_string};
pub use params::parameter_types;
pub use txn::{Transaction, TxnSlot};

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
}

/// What every session of one server shares.
#[derive(Debug)]
pub struct QueryEngine {
    catalog: Arc<WarehouseCatalog>,
    runtime: Arc<RuntimeEnv>,
    pg_tables: pg_catalog::StaticTables,
    options: EngineOptions,
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
        Ok(Self {
            catalog,
            runtime,
            pg_tables,
            options,
        })
    }

    pub fn catalog(&self) -> &Arc<WarehouseCatalog> {
        &self.catalog
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
        let ctx = SessionContext::new_with_config_rt(config, Arc::clone(&self.runtime));
        ctx.register_catalog(
            database,
            Arc::new(SessionCatalog::new(Arc::clone(&self.catalog), txn)),
        );
        ctx.add_analyzer_rule(Arc::new(pg_literals::PgDateTimeLiterals));
        pg_catalog::register(&ctx, database, &self.pg_tables, &self.catalog, &vars)?;
        functions::register_session_functions(&ctx, vars);
        pg_typeof::register(&ctx);
        if self.options.debug_functions {
            functions::register_debug_functions(&ctx);
        }
        Ok(ctx)
    }
}
