//! What the warehouse holds, read for one catalog query: schemas (Paimon databases), tables
//! with their latest Paimon schema (columns, types, NOT NULL, primary key, comments, defaults)
//! sequences (`storage/sequences.rs`) with the column owning each, and views
//! (`storage/views.rs`) with their columns' types as CREATE VIEW planned them. Every
//! `pg_catalog` table of tarn's objects is built from one `Facts`.

use crate::storage::spec::schema_change::default_literal;
use std::sync::Arc;

use datafusion::error::Result;

use datafusion::error::DataFusionError;

use super::oids::{self, Kind};
use super::types::{ColumnType, column_type};
use crate::query::catalog::WarehouseCatalog;
use crate::query::table::storage_error;
use crate::storage::StorageError;
use crate::storage::sequences::{SequenceError, SequenceInfo, SequenceStore};
use crate::storage::spec::schema::TableSchema;
use crate::storage::views::{ViewDef, ViewError, ViewStore};

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
    /// A temporary table of the session (`relpersistence` `t`).
    pub temporary: bool,
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
                    (None, Some(literal)) => Some(super::relations::default_expression(
                        default_literal(literal),
                        ty.typname,
                        ty.sql_name,
                    )),
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

/// One sequence of the warehouse (a relation of kind `S`).
#[derive(Debug, Clone)]
pub struct Sequence {
    pub schema: String,
    pub oid: i32,
    pub namespace_oid: i32,
    pub info: SequenceInfo,
    /// The column of `OWNED BY` (SERIAL and identity columns own theirs), when its table and
    /// column exist.
    pub owner: Option<Owner>,
}

/// The column owning a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub table_oid: i32,
    pub attnum: i16,
    /// An identity column's sequence (`pg_depend.deptype` `i`; a SERIAL's is `a`).
    pub identity: bool,
}

impl Sequence {
    pub fn name(&self) -> &str {
        &self.info.name
    }
}

/// One view of the warehouse (a relation of kind `v`).
#[derive(Debug, Clone)]
pub struct View {
    pub oid: i32,
    pub namespace_oid: i32,
    pub def: ViewDef,
}

impl View {
    /// The view's columns, with their PostgreSQL types (nullable, no defaults).
    pub fn columns(&self) -> Vec<Column<'_>> {
        self.def
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| Column {
                attnum: i as i16 + 1,
                name: &c.name,
                ty: super::types::column_type_of_oid(c.type_oid, c.typmod),
                not_null: false,
                comment: None,
                default: None,
                identity: None,
            })
            .collect()
    }

    /// The definition as `pg_get_viewdef` and `pg_views.definition` show it: the query as
    /// written (tarn keeps no parse tree to print the way PostgreSQL does), ending with `;`.
    pub fn definition(&self) -> String {
        format!(" {};", self.def.sql)
    }
}

/// The schemas, tables, sequences and views of the warehouse.
#[derive(Debug, Default)]
pub struct Facts {
    /// (name, oid), warehouse databases then the system schemas.
    pub namespaces: Vec<(String, i32)>,
    pub relations: Vec<Relation>,
    pub sequences: Vec<Sequence>,
    pub views: Vec<View>,
}

fn sequence_error(e: SequenceError) -> DataFusionError {
    match e {
        SequenceError::Storage(e) => storage_error(e),
        other => DataFusionError::Execution(other.to_string()),
    }
}

fn view_error(e: ViewError) -> DataFusionError {
    match e {
        ViewError::Storage(e) => storage_error(e),
        other => DataFusionError::Execution(other.to_string()),
    }
}

impl Facts {
    /// Reads the tables' schemas, the sequences and the views (the database and table lists are the
    /// catalog's, refreshed before each statement).
    ///
    /// With `temp`, the session's temporary tables too (`temp`'s database, its schema
    /// `pg_temp_<pid>`).
    pub async fn load_with(
        catalog: &WarehouseCatalog,
        temp: Option<&WarehouseCatalog>,
    ) -> Result<Self> {
        let mut facts = Facts::default();
        if let Some(temp) = temp {
            for db in temp.database_names() {
                let namespace_oid = oids::oid(Kind::Namespace, "", &db);
                facts.namespaces.push((db.clone(), namespace_oid));
                facts.push_tables(temp, &db, namespace_oid, true).await?;
            }
        }
        let sequences = SequenceStore::new(catalog.warehouse().io().clone());
        let views = ViewStore::new(catalog.warehouse().io().clone());
        for db in catalog.database_names() {
            let namespace_oid = oids::oid(Kind::Namespace, "", &db);
            facts.namespaces.push((db.clone(), namespace_oid));
            facts
                .push_tables(catalog, &db, namespace_oid, false)
                .await?;
            for info in sequences.list(&db).await.map_err(sequence_error)? {
                let owner = info.options.owned_by.as_ref().and_then(|o| {
                    let r = facts
                        .relations
                        .iter()
                        .find(|r| r.schema == db && r.name == o.table)?;
                    let i = r.table.fields.iter().position(|f| f.name == o.column)?;
                    Some(Owner {
                        table_oid: r.oid,
                        attnum: i as i16 + 1,
                        identity: r.table.core_options().identity(&o.column).is_some(),
                    })
                });
                facts.sequences.push(Sequence {
                    oid: oids::oid(Kind::Relation, &db, &info.name),
                    schema: db.clone(),
                    namespace_oid,
                    info,
                    owner,
                });
            }
            for def in views.list(&db).await.map_err(view_error)? {
                facts.views.push(View {
                    oid: oids::oid(Kind::Relation, &db, &def.name),
                    namespace_oid,
                    def,
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

    /// The tables of database `db` of `catalog`, as listed at its last refresh.
    async fn push_tables(
        &mut self,
        catalog: &WarehouseCatalog,
        db: &str,
        namespace_oid: i32,
        temporary: bool,
    ) -> Result<()> {
        for name in catalog.table_names_of(db) {
            let table = match catalog.warehouse().open_table(db, &name).await {
                Ok(t) => t,
                // Dropped since the listing.
                Err(StorageError::TableNotFound(_)) => continue,
                Err(e) => return Err(storage_error(e)),
            };
            self.relations.push(Relation {
                oid: oids::oid(Kind::Relation, db, &name),
                schema: db.to_owned(),
                name,
                namespace_oid,
                table: Arc::clone(table.schema()),
                temporary,
            });
        }
        Ok(())
    }

    /// The view with OID `oid`.
    pub fn view(&self, oid: i32) -> Option<&View> {
        self.views.iter().find(|v| v.oid == oid)
    }

    /// The relation (table) with OID `oid`.
    pub fn relation(&self, oid: i32) -> Option<&Relation> {
        self.relations.iter().find(|r| r.oid == oid)
    }

    /// The sequence owned by column `column` of table `table_oid` (an identity column's).
    pub fn sequence_of(&self, table_oid: i32, attnum: i16) -> Option<&Sequence> {
        self.sequences.iter().find(|s| {
            s.owner
                .as_ref()
                .is_some_and(|o| o.table_oid == table_oid && o.attnum == attnum)
        })
    }

    /// The table whose primary-key index or constraint has OID `oid`.
    pub fn relation_of_key(&self, oid: i32) -> Option<&Relation> {
        self.relations
            .iter()
            .find(|r| r.has_key() && (r.index_oid() == oid || r.constraint_oid() == oid))
    }
}
