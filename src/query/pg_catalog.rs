//! `pg_catalog` for a session, from datafusion-pg-catalog.
//!
//! `datafusion_pg_catalog::setup_pg_catalog` decodes its ~60 static tables (exported from
//! PostgreSQL) on every call, about 200 ms per connection in a debug build. The server decodes
//! them once ([`StaticTables`]) and this module registers the same pieces per session from
//! that shared copy, using the crate's public building blocks.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_pg_catalog::pg_catalog::generate_series_arg_coercion::CoerceIntArgsToBigInt;
use datafusion_pg_catalog::pg_catalog::oid_type_planner::PgOidTypePlanner;
use datafusion_pg_catalog::pg_catalog::{
    self as pg, PgCatalogSchemaProvider, PgCatalogStaticTables, array_bounds_udf, format_type,
    has_privilege_udf, pg_get_expr_udf, quote_ident_udf,
};

/// The decoded static tables, shared by all sessions of a server.
pub type StaticTables = Arc<PgCatalogStaticTables>;

/// Decodes the static tables (once per server).
pub fn load_static_tables() -> Result<StaticTables> {
    Ok(Arc::new(PgCatalogStaticTables::try_new()?))
}

/// Registers `pg_catalog` and the Postgres compatibility functions on `ctx`, whose catalog
/// `catalog_name` must exist.
pub fn register(ctx: &SessionContext, catalog_name: &str, tables: &StaticTables) -> Result<()> {
    let schema = PgCatalogSchemaProvider::try_new(
        ctx.state().catalog_list().clone(),
        Arc::clone(tables),
        EmptyContextProvider,
    )?;
    ctx.catalog(catalog_name)
        .ok_or_else(|| DataFusionError::Configuration(format!("catalog {catalog_name} missing")))?
        .register_schema("pg_catalog", Arc::new(schema))?;

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
    ctx.register_udtf("pg_get_keywords", tables.pg_get_keywords.clone());
    ctx.register_udf(pg_get_expr_udf::create_pg_get_expr_udf());
    ctx.register_udf(pg::create_pg_get_partkeydef_udf());
    ctx.register_udf(pg::create_pg_relation_is_publishable_udf());
    ctx.register_udf(pg::create_pg_get_statisticsobjdef_columns_udf());
    ctx.register_udf(pg::create_pg_encoding_to_char_udf());
    ctx.register_udf(pg::create_pg_relation_size_udf());
    ctx.register_udf(pg::create_pg_total_relation_size_udf());
    ctx.register_udf(pg::create_pg_stat_get_numscans());
    ctx.register_udf(pg::create_pg_get_constraintdef());
    ctx.register_udf(pg::create_pg_get_partition_ancestors_udf());
    ctx.register_udf(quote_ident_udf::create_quote_ident_udf());
    ctx.register_udf(quote_ident_udf::create_parse_ident_udf());
    ctx.register_udf(array_bounds_udf::create_array_upper_udf());
    ctx.register_udf(array_bounds_udf::create_array_lower_udf());

    // `regclass`, `regproc`, ... as type names in casts.
    let state = ctx.state_ref();
    let existing = state.read().clone();
    *state.write() = SessionStateBuilder::new_from_existing(existing)
        .with_type_planner(Arc::new(PgOidTypePlanner))
        .build();
    // generate_series / range accept int4 arguments, as in PostgreSQL.
    CoerceIntArgsToBigInt::widen(ctx);
    Ok(())
}
