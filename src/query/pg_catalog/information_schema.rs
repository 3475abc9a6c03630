//! `information_schema` as PostgreSQL has it, for tarn's objects: `schemata`, `tables`,
//! `columns` (PostgreSQL's type names in `data_type`/`udt_name`, lengths, precisions,
//! nullability, an identity column's sequence options), `table_constraints`,
//! `key_column_usage`, `views`, `sequences`.
//!
//! DataFusion's own `information_schema` reports Arrow type names and no keys; Grafana,
//! Metabase and other tools read these views to browse. tarn's views are in `tables`
//! (`VIEW`), `columns` and `views`, none of them updatable or insertable into (tarn has no
//! automatically updatable views). The function
//! `information_schema._pg_expandarray` is an AST rewrite (`sql/expandarray.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::error::Result;

use super::facts::Facts;
use super::relations::{Build, Rows, catalog_table, i32v, int4, null, s, schema, text};
use crate::query::catalog::WarehouseCatalog;
use crate::storage::sequences::{SequenceOptions, SequenceType};

const NAMES: [&str; 7] = [
    "schemata",
    "tables",
    "columns",
    "table_constraints",
    "key_column_usage",
    "views",
    "sequences",
];

/// The `information_schema` schema of one session's database.
#[derive(Debug)]
pub struct InformationSchema {
    pub catalog: Arc<WarehouseCatalog>,
    /// The database the session connected to (`table_catalog`).
    pub database: String,
}

fn yes_no(v: bool) -> ScalarValue {
    s(if v { "YES" } else { "NO" })
}

fn opt(v: Option<i32>) -> ScalarValue {
    ScalarValue::Int32(v)
}

#[async_trait]
impl SchemaProvider for InformationSchema {
    fn table_names(&self) -> Vec<String> {
        NAMES.iter().map(|n| (*n).to_owned()).collect()
    }

    fn table_exist(&self, name: &str) -> bool {
        NAMES.contains(&name.to_ascii_lowercase().as_str())
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let db = self.database.clone();
        let (fields, build): (Vec<&str>, Build) = match name.to_ascii_lowercase().as_str() {
            "schemata" => (
                vec!["catalog_name", "schema_name", "schema_owner"],
                Arc::new(move |facts: &Facts, sch| {
                    let mut rows = Rows::new(sch);
                    for (name, _) in &facts.namespaces {
                        rows.push(vec![s(&db), s(name), s("postgres")]);
                    }
                    rows.finish()
                }),
            ),
            "tables" => (
                vec![
                    "table_catalog",
                    "table_schema",
                    "table_name",
                    "table_type",
                    "self_referencing_column_name",
                    "reference_generation",
                    "user_defined_type_catalog",
                    "user_defined_type_schema",
                    "user_defined_type_name",
                    "is_insertable_into",
                    "is_typed",
                    "commit_action",
                ],
                Arc::new(move |facts: &Facts, sch| {
                    let mut rows = Rows::new(sch);
                    for r in &facts.relations {
                        rows.push(vec![
                            s(&db),
                            s(&r.schema),
                            s(&r.name),
                            s("BASE TABLE"),
                            null(),
                            null(),
                            null(),
                            null(),
                            null(),
                            s("YES"),
                            s("NO"),
                            null(),
                        ]);
                    }
                    for v in &facts.views {
                        rows.push(vec![
                            s(&db),
                            s(&v.def.schema),
                            s(&v.def.name),
                            s("VIEW"),
                            null(),
                            null(),
                            null(),
                            null(),
                            null(),
                            s("NO"),
                            s("NO"),
                            null(),
                        ]);
                    }
                    rows.finish()
                }),
            ),
            "columns" => return columns(&self.catalog, db).map(Some),
            "sequences" => return sequences(&self.catalog, db).map(Some),
            "table_constraints" => (
                vec![
                    "constraint_catalog",
                    "constraint_schema",
                    "constraint_name",
                    "table_catalog",
                    "table_schema",
                    "table_name",
                    "constraint_type",
                    "is_deferrable",
                    "initially_deferred",
                    "enforced",
                    "nulls_distinct",
                ],
                Arc::new(move |facts: &Facts, sch| {
                    let mut rows = Rows::new(sch);
                    for r in facts.relations.iter().filter(|r| r.has_key()) {
                        rows.push(vec![
                            s(&db),
                            s(&r.schema),
                            s(&r.key_name()),
                            s(&db),
                            s(&r.schema),
                            s(&r.name),
                            s("PRIMARY KEY"),
                            s("NO"),
                            s("NO"),
                            s("YES"),
                            null(),
                        ]);
                    }
                    rows.finish()
                }),
            ),
            "key_column_usage" => {
                let sch = schema(vec![
                    text("constraint_catalog"),
                    text("constraint_schema"),
                    text("constraint_name"),
                    text("table_catalog"),
                    text("table_schema"),
                    text("table_name"),
                    text("column_name"),
                    int4("ordinal_position"),
                    datafusion::arrow::datatypes::Field::new(
                        "position_in_unique_constraint",
                        datafusion::arrow::datatypes::DataType::Int32,
                        true,
                    ),
                ]);
                let build: Build = Arc::new(move |facts: &Facts, sch| {
                    let mut rows = Rows::new(sch);
                    for r in facts.relations.iter().filter(|r| r.has_key()) {
                        for (i, key) in r.table.primary_keys.iter().enumerate() {
                            rows.push(vec![
                                s(&db),
                                s(&r.schema),
                                s(&r.key_name()),
                                s(&db),
                                s(&r.schema),
                                s(&r.name),
                                s(key),
                                i32v(i as i32 + 1),
                                null(),
                            ]);
                        }
                    }
                    rows.finish()
                });
                return catalog_table(sch, &self.catalog, build).map(Some);
            }
            "views" => (
                vec![
                    "table_catalog",
                    "table_schema",
                    "table_name",
                    "view_definition",
                    "check_option",
                    "is_updatable",
                    "is_insertable_into",
                    "is_trigger_updatable",
                    "is_trigger_deletable",
                    "is_trigger_insertable_into",
                ],
                Arc::new(move |facts: &Facts, sch| {
                    let mut rows = Rows::new(sch);
                    for v in &facts.views {
                        rows.push(vec![
                            s(&db),
                            s(&v.def.schema),
                            s(&v.def.name),
                            s(&v.definition()),
                            s("NONE"),
                            s("NO"),
                            s("NO"),
                            s("NO"),
                            s("NO"),
                            s("NO"),
                        ]);
                    }
                    rows.finish()
                }),
            ),
            _ => return Ok(None),
        };
        let sch = schema(fields.into_iter().map(text).collect());
        catalog_table(sch, &self.catalog, build).map(Some)
    }
}

fn columns(catalog: &Arc<WarehouseCatalog>, db: String) -> Result<Arc<dyn TableProvider>> {
    let int = |n: &str| {
        datafusion::arrow::datatypes::Field::new(
            n,
            datafusion::arrow::datatypes::DataType::Int32,
            true,
        )
    };
    let sch = schema(vec![
        text("table_catalog"),
        text("table_schema"),
        text("table_name"),
        text("column_name"),
        int4("ordinal_position"),
        text("column_default"),
        text("is_nullable"),
        text("data_type"),
        int("character_maximum_length"),
        int("character_octet_length"),
        int("numeric_precision"),
        int("numeric_precision_radix"),
        int("numeric_scale"),
        int("datetime_precision"),
        text("interval_type"),
        int("interval_precision"),
        text("character_set_catalog"),
        text("character_set_schema"),
        text("character_set_name"),
        text("collation_catalog"),
        text("collation_schema"),
        text("collation_name"),
        text("domain_catalog"),
        text("domain_schema"),
        text("domain_name"),
        text("udt_catalog"),
        text("udt_schema"),
        text("udt_name"),
        text("scope_catalog"),
        text("scope_schema"),
        text("scope_name"),
        int("maximum_cardinality"),
        text("dtd_identifier"),
        text("is_self_referencing"),
        text("is_identity"),
        text("identity_generation"),
        text("identity_start"),
        text("identity_increment"),
        text("identity_maximum"),
        text("identity_minimum"),
        text("identity_cycle"),
        text("is_generated"),
        text("generation_expression"),
        text("is_updatable"),
    ]);
    let build: Build = Arc::new(move |facts: &Facts, sch| {
        let mut rows = Rows::new(sch);
        // A view's columns: no defaults, nullable, not updatable.
        for v in &facts.views {
            for c in v.columns() {
                let (precision, radix, scale) = c.ty.numeric();
                let mut row = vec![
                    s(&db),
                    s(&v.def.schema),
                    s(&v.def.name),
                    s(c.name),
                    i32v(i32::from(c.attnum)),
                    null(),
                    s("YES"),
                    s(c.ty.sql_name),
                    opt(c.ty.char_max_length()),
                    opt(c.ty.char_octet_length()),
                    opt(precision),
                    opt(radix),
                    opt(scale),
                    opt(c.ty.datetime_precision()),
                ];
                row.extend(std::iter::repeat_with(null).take(11));
                row.extend([s(&db), s("pg_catalog"), s(c.ty.typname)]);
                row.extend(std::iter::repeat_with(null).take(4));
                row.extend([s(&c.attnum.to_string()), s("NO"), s("NO")]);
                row.extend(std::iter::repeat_with(null).take(5));
                row.extend([s("NO"), s("NEVER"), null(), s("NO")]);
                rows.push(row);
            }
        }
        for r in &facts.relations {
            for c in r.columns() {
                let (precision, radix, scale) = c.ty.numeric();
                let default = c.default.clone();
                // An identity column's sequence options, as text.
                let identity = c
                    .identity
                    .and_then(|_| facts.sequence_of(r.oid, c.attnum))
                    .map(|q| &q.info.options);
                let option = |f: fn(&SequenceOptions) -> i64| {
                    identity.map_or_else(null, |o| s(&f(o).to_string()))
                };
                rows.push(vec![
                    s(&db),
                    s(&r.schema),
                    s(&r.name),
                    s(c.name),
                    i32v(i32::from(c.attnum)),
                    ScalarValue::Utf8(default),
                    yes_no(!c.not_null),
                    s(c.ty.sql_name),
                    opt(c.ty.char_max_length()),
                    opt(c.ty.char_octet_length()),
                    opt(precision),
                    opt(radix),
                    opt(scale),
                    opt(c.ty.datetime_precision()),
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    s(&db),
                    s("pg_catalog"),
                    s(c.ty.typname),
                    null(),
                    null(),
                    null(),
                    null(),
                    s(&c.attnum.to_string()),
                    s("NO"),
                    yes_no(c.identity.is_some()),
                    match c.identity {
                        Some("always") => s("ALWAYS"),
                        Some(_) => s("BY DEFAULT"),
                        None => null(),
                    },
                    option(|o| o.start),
                    option(|o| o.increment),
                    option(|o| o.max_value),
                    option(|o| o.min_value),
                    identity.map_or_else(|| s("NO"), |o| yes_no(o.cycle)),
                    s("NEVER"),
                    null(),
                    s("YES"),
                ]);
            }
        }
        rows.finish()
    });
    catalog_table(sch, catalog, build)
}

/// `information_schema.sequences`: the values as text, the precision columns as numbers.
fn sequences(catalog: &Arc<WarehouseCatalog>, db: String) -> Result<Arc<dyn TableProvider>> {
    let int = |n: &str| {
        datafusion::arrow::datatypes::Field::new(
            n,
            datafusion::arrow::datatypes::DataType::Int32,
            true,
        )
    };
    let sch = schema(vec![
        text("sequence_catalog"),
        text("sequence_schema"),
        text("sequence_name"),
        text("data_type"),
        int("numeric_precision"),
        int("numeric_precision_radix"),
        int("numeric_scale"),
        text("start_value"),
        text("minimum_value"),
        text("maximum_value"),
        text("increment"),
        text("cycle_option"),
    ]);
    let build: Build = Arc::new(move |facts: &Facts, sch| {
        let mut rows = Rows::new(sch);
        for q in &facts.sequences {
            let o = &q.info.options;
            let precision = match o.data_type {
                SequenceType::SmallInt => 16,
                SequenceType::Integer => 32,
                SequenceType::BigInt => 64,
            };
            rows.push(vec![
                s(&db),
                s(&q.schema),
                s(q.name()),
                s(o.data_type.name()),
                i32v(precision),
                i32v(2),
                i32v(0),
                s(&o.start.to_string()),
                s(&o.min_value.to_string()),
                s(&o.max_value.to_string()),
                s(&o.increment.to_string()),
                yes_no(o.cycle),
            ]);
        }
        rows.finish()
    });
    catalog_table(sch, catalog, build)
}
