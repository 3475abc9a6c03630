//! `pg_catalog` for a session, from datafusion-pg-catalog.
//!
//! `datafusion_pg_catalog::setup_pg_catalog` decodes its ~60 static tables (exported from
//! PostgreSQL) on every call, about 200 ms per connection in a debug build. The server decodes
//! them once ([`StaticTables`]) and this module registers the same pieces per session from
//! that shared copy, using the crate's public building blocks.
//!
//! The tables that describe tarn's own objects (`relations.rs`: schemas, tables, columns,
//! keys, comments) and the catalog functions over them (`functions.rs`) are tarn's, with OIDs
//! derived from names (`oids.rs`); [`TarnPgCatalog`] serves them and hands every other name
//! to the crate's schema.

mod analyzer;
mod facts;
mod functions;

pub(crate) use functions::{quote_ident, split_qualified};
mod information_schema;
mod oids;
mod relations;
mod static_arrays;
mod types;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::view::ViewTable;
use datafusion::catalog::{MemTable, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use datafusion_pg_catalog::pg_catalog::context::{PgCatalogContextProvider, Role};
use datafusion_pg_catalog::pg_catalog::generate_series_arg_coercion::CoerceIntArgsToBigInt;
use datafusion_pg_catalog::pg_catalog::oid_type_planner::PgOidTypePlanner;
use datafusion_pg_catalog::pg_catalog::{
    self as pg, PgCatalogSchemaProvider, PgCatalogStaticTables, array_bounds_udf, format_type,
    has_privilege_udf, quote_ident_udf,
};

use super::catalog::WarehouseCatalog;
use super::functions::SessionVars;

/// The roles `pg_roles` shows: the session's user, a superuser (every authenticated role may
/// do everything for now).
#[derive(Debug, Clone)]
struct SessionRoles(Arc<dyn SessionVars>);

#[async_trait]
impl PgCatalogContextProvider for SessionRoles {
    async fn roles(&self) -> Vec<String> {
        vec![self.0.user()]
    }

    async fn role(&self, name: &str) -> Option<Role> {
        (name == self.0.user()).then(|| Role {
            name: name.to_owned(),
            is_superuser: true,
            can_login: true,
            can_create_db: true,
            can_create_role: true,
            can_create_user: true,
            can_replication: false,
            grants: vec![],
            inherited_roles: vec![],
        })
    }
}

/// `pg_catalog`: tarn's tables for its own objects, the crate's for the rest.
#[derive(Debug)]
struct TarnPgCatalog {
    crate_schema: Arc<dyn SchemaProvider>,
    catalog: Arc<WarehouseCatalog>,
    statics: StaticTables,
    /// The session's: its temporary tables are listed too.
    vars: Arc<dyn SessionVars>,
}

#[async_trait]
impl SchemaProvider for TarnPgCatalog {
    fn table_names(&self) -> Vec<String> {
        self.crate_schema.table_names()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let name = name.to_ascii_lowercase();
        if let Some(table) = relations::table(&name, &self.catalog, &self.vars)? {
            return Ok(Some(table));
        }
        if let Some((schema, batches)) = self.statics.retyped.get(name.as_str()) {
            // Catalogs that are always empty in tarn (policies, statistics objects, triggers,
            // ...) plan as empty relations, so the optimizer drops what reads them: psql's
            // `\d` selects correlated subqueries over pg_policy that DataFusion could not run.
            if batches.iter().all(|b| b.num_rows() == 0) {
                let schema = datafusion::common::DFSchema::try_from(schema.as_ref().clone())?;
                let empty = datafusion::logical_expr::LogicalPlan::EmptyRelation(
                    datafusion::logical_expr::EmptyRelation {
                        produce_one_row: false,
                        schema: Arc::new(schema),
                    },
                );
                return Ok(Some(Arc::new(ViewTable::new(empty, None))));
            }
            let table = MemTable::try_new(Arc::clone(schema), vec![batches.clone()])?;
            return Ok(Some(Arc::new(table)));
        }
        self.crate_schema.table(&name).await
    }

    fn table_exist(&self, name: &str) -> bool {
        relations::NAMES.contains(&name.to_ascii_lowercase().as_str())
            || self.crate_schema.table_exist(name)
    }
}

/// The decoded static tables, shared by all sessions of a server.
pub type StaticTables = Arc<Statics>;

/// The crate's static tables, and those of them with array columns retyped.
#[derive(Debug)]
pub struct Statics {
    crate_tables: Arc<PgCatalogStaticTables>,
    retyped: static_arrays::Retyped,
}

/// Decodes the static tables (once per server).
pub fn load_static_tables() -> Result<StaticTables> {
    let crate_tables = Arc::new(PgCatalogStaticTables::try_new()?);
    let retyped = static_arrays::retype(&crate_tables)?;
    Ok(Arc::new(Statics {
        crate_tables,
        retyped,
    }))
}

/// Registers `pg_catalog` and the Postgres compatibility functions on `ctx`, whose catalog
/// `catalog_name` must exist.
pub fn register(
    ctx: &SessionContext,
    catalog_name: &str,
    tables: &StaticTables,
    catalog: &Arc<WarehouseCatalog>,
    views: &crate::storage::views::ViewStore,
    vars: &Arc<dyn SessionVars>,
) -> Result<()> {
    let crate_schema = PgCatalogSchemaProvider::try_new(
        ctx.state().catalog_list().clone(),
        Arc::clone(&tables.crate_tables),
        SessionRoles(Arc::clone(vars)),
    )?;
    let schema = TarnPgCatalog {
        crate_schema: Arc::new(crate_schema),
        catalog: Arc::clone(catalog),
        statics: Arc::clone(tables),
        vars: Arc::clone(vars),
    };
    ctx.catalog(catalog_name)
        .ok_or_else(|| DataFusionError::Configuration(format!("catalog {catalog_name} missing")))?
        .register_schema("pg_catalog", Arc::new(schema))?;
    ctx.catalog(catalog_name)
        .ok_or_else(|| DataFusionError::Configuration(format!("catalog {catalog_name} missing")))?
        .register_schema(
            "information_schema",
            Arc::new(information_schema::InformationSchema {
                catalog: Arc::clone(catalog),
                database: catalog_name.to_owned(),
            }),
        )?;

    ctx.register_udf(pg::create_current_database_udf(catalog_name));
    for name in [
        "has_table_privilege",
        "has_schema_privilege",
        "has_database_privilege",
        "has_any_column_privilege",
    ] {
        ctx.register_udf(has_privilege_udf::create_has_privilege_udf(name));
    }
    ctx.register_udf(pg::create_pg_get_userbyid_udf());
    ctx.register_udf(pg::create_pg_table_is_visible());
    ctx.register_udf(format_type::create_format_type_udf());
    ctx.register_udtf(
        "pg_get_keywords",
        tables.crate_tables.pg_get_keywords.clone(),
    );
    ctx.register_udf(pg::create_pg_get_partkeydef_udf());
    ctx.register_udf(pg::create_pg_relation_is_publishable_udf());
    ctx.register_udf(pg::create_pg_get_statisticsobjdef_columns_udf());
    ctx.register_udf(pg::create_pg_encoding_to_char_udf());
    ctx.register_udf(pg::create_pg_relation_size_udf());
    ctx.register_udf(pg::create_pg_total_relation_size_udf());
    ctx.register_udf(pg::create_pg_stat_get_numscans());
    ctx.register_udf(pg::create_pg_get_partition_ancestors_udf());
    ctx.register_udf(quote_ident_udf::create_quote_ident_udf());
    ctx.register_udf(quote_ident_udf::create_parse_ident_udf());
    ctx.register_udf(array_bounds_udf::create_array_upper_udf());
    ctx.register_udf(array_bounds_udf::create_array_lower_udf());

    functions::register_functions(ctx, catalog, views, vars, &tables.crate_tables)?;
    // `regclass`, `regproc`, ... as type names in casts; the catalog types' rule first
    // (before type coercion, which would refuse what it rewrites).
    let reg_name = functions::reg_name_udf(catalog, views, &tables.crate_tables)?;
    ctx.register_udf(reg_name.as_ref().clone());
    let rule = analyzer::CatalogTypes { reg_name };
    let state = ctx.state_ref();
    let existing = state.read().clone();
    let mut builder = SessionStateBuilder::new_from_existing(existing)
        .with_type_planner(Arc::new(PgOidTypePlanner));
    if let Some(analyzer) = builder.analyzer() {
        analyzer.rules.insert(0, Arc::new(rule));
    }
    *state.write() = builder.build();
    // generate_series / range accept int4 arguments, as in PostgreSQL.
    CoerceIntArgsToBigInt::widen(ctx);
    Ok(())
}
