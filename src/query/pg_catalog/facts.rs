//! What the warehouse holds, read for one catalog query: schemas (Paimon databases) and
//! tables with their latest Paimon schema (columns, types, NOT NULL, primary key, comments,
//! defaults). Every `pg_catalog` table of tarn's objects is built from one `Facts`.
//!
//! Views, sequences and identity columns do not exist in tarn yet; when they do, they belong
//! here as further relation kinds (and in `relations.rs`' rows), not as stubs.

use std::sync::Arc;

use datafusion::error::Result;

use super::oids::{self, Kind};
use super::types::{ColumnType, column_type};
use crate::query::catalog::WarehouseCatalog;
use crate::query::table::storage_error;
use crate::storage::StorageError;
use crate::storage::spec::schema::TableSchema;

/// Schemas that exist in every database besides the warehouse's.
pub const SYSTEM_SCHEMAS: [&str; 2] = ["pg_catalog", "information_schema"];

/// One table of the warehouse.
#[derive(Debug, Clone)]
pub struct Relation {
    pub schema: String,
    pub name: String,
    pub oid: i32,
    pub namespace_oid: i32,
    pub table: Arc<TableSchema>,
}

/// One column of a table, with its PostgreSQL type.
#[derive(Debug, Clone)]
pub struct Column<'a> {
    pub attnum: i16,
    pub name: &'a str,
    pub ty: ColumnType,
    pub not_null: bool,
    pub comment: Option<&'a str>,
    /// The column's default as PostgreSQL shows it (`pg_get_expr(adbin)`): tarn's default
    /// expression (`tarn.default.<name>`), else Paimon's literal `defaultValue` as a typed
    /// literal.
    pub default: Option<String>,
    /// `tarn.identity.<name>`: `always` or `by-default`.
    pub identity: Option<&'a str>,
}

impl Relation {
    pub fn columns(&self) -> Vec<Column<'_>> {
        self.table
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let options = self.table.core_options();
                let hint = options.pg_type(&f.name);
                let ty = column_type(&f.data_type, hint);
                let default = match (options.default_expression(&f.name), &f.default_value) {
                    (Some(expr), _) => Some(expr.to_owned()),
                    (None, Some(literal)) => {
                        let value = match literal
                            .strip_prefix('\'')
                            .and_then(|t| t.strip_suffix('\''))
                        {
                            Some(inner) if literal.len() >= 2 => inner,
                            _ => literal.as_str(),
                        };
                        Some(super::relations::default_expression(
                            value,
                            ty.typname,
                            ty.sql_name,
                        ))
                    }
                    (None, None) => None,
                };
                // PostgreSQL shows an identity column's sequence as no default.
                let identity = options.identity(&f.name);
                let default = default.filter(|_| identity.is_none());
                Column {
                    attnum: i as i16 + 1,
                    name: &f.name,
                    ty,
                    not_null: !f.data_type.nullable,
                    comment: f.description.as_deref(),
                    default,
                    identity,
                }
            })
            .collect()
    }

    /// Attribute numbers of the primary key, in key order (empty without one).
    pub fn key_attnums(&self) -> Vec<i16> {
        self.table
            .primary_keys
            .iter()
            .filter_map(|k| {
                self.table
                    .fields
                    .iter()
                    .position(|f| &f.name == k)
                    .map(|i| i as i16 + 1)
            })
            .collect()
    }

    /// The primary key's index and constraint name, as PostgreSQL names it.
    pub fn key_name(&self) -> String {
        format!("{}_pkey", self.name)
    }

    pub fn index_oid(&self) -> i32 {
        oids::oid(Kind::Index, &self.schema, &self.key_name())
    }

    pub fn constraint_oid(&self) -> i32 {
        oids::oid(Kind::Constraint, &self.schema, &self.key_name())
    }

    pub fn has_key(&self) -> bool {
        !self.table.primary_keys.is_empty()
    }
}

/// The schemas and tables of the warehouse.
#[derive(Debug, Default)]
pub struct Facts {
    /// (name, oid), warehouse databases then the system schemas.
    pub namespaces: Vec<(String, i32)>,
    pub relations: Vec<Relation>,
}

impl Facts {
    /// Reads the tables' schemas (the database and table lists are the catalog's, refreshed
    /// before each statement).
    pub async fn load(catalog: &WarehouseCatalog) -> Result<Self> {
        let mut facts = Facts::default();
        for db in catalog.database_names() {
            let namespace_oid = oids::oid(Kind::Namespace, "", &db);
            facts.namespaces.push((db.clone(), namespace_oid));
            for name in catalog.table_names_of(&db) {
                let table = match catalog.warehouse().open_table(&db, &name).await {
                    Ok(t) => t,
                    // Dropped since the listing.
                    Err(StorageError::TableNotFound(_)) => continue,
                    Err(e) => return Err(storage_error(e)),
                };
                facts.relations.push(Relation {
                    oid: oids::oid(Kind::Relation, &db, &name),
                    schema: db.clone(),
                    name,
                    namespace_oid,
                    table: Arc::clone(table.schema()),
                });
            }
        }
        for s in SYSTEM_SCHEMAS {
            facts
                .namespaces
                .push((s.to_owned(), oids::oid(Kind::Namespace, "", s)));
        }
        Ok(facts)
    }

    /// The relation (table) with OID `oid`.
    pub fn relation(&self, oid: i32) -> Option<&Relation> {
        self.relations.iter().find(|r| r.oid == oid)
    }

    /// The table whose primary-key index or constraint has OID `oid`.
    pub fn relation_of_key(&self, oid: i32) -> Option<&Relation> {
        self.relations
            .iter()
            .find(|r| r.has_key() && (r.index_oid() == oid || r.constraint_oid() == oid))
    }
}
