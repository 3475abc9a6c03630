//! `pg_catalog` tables that describe tarn's own objects — `pg_namespace`, `pg_class`,
//! `pg_attribute`, `pg_attrdef`, `pg_constraint`, `pg_index`, `pg_description`, and for
//! sequences `pg_sequence`, the `pg_sequences` view and `pg_depend` (the column owning each
//! sequence), and `pg_views` — built from the warehouse's [`Facts`] each time a query scans them, with
//! PostgreSQL 15's columns and column types (`conkey` int2[], `indkey` int2vector as a list
//! the subscript rule reads 0-based, OID columns of type `oid` as PostgreSQL's).
//!
//! datafusion-pg-catalog builds its `pg_class`/`pg_attribute`/`pg_namespace` from DataFusion's
//! catalog with OIDs from a per-session counter (different after a restart, and per session)
//! and knows neither keys, NOT NULL nor type modifiers; its `pg_constraint`/`pg_index` are
//! PostgreSQL's own system rows, as are its `pg_depend`'s (its `pg_sequence` is empty). These
//! replace them; the crate keeps serving the rest.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, new_empty_array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion_pg_catalog::pg_catalog::oid_field::{kind, oid_field};

use super::facts::{Column, Facts};
use super::oids::{self, BTREE_AM, HEAP_AM, PG_CLASS_RELID, SUPERUSER};
use super::types::column_type;
use crate::query::SessionVars;
use crate::query::catalog::WarehouseCatalog;
use crate::storage::sequences::SequenceType;
use crate::storage::spec::types::{PaimonType, TypeKind};

/// Field metadata key marking PostgreSQL's 0-based vector types (`int2vector`, `oidvector`):
/// `indkey[0]` is the first element (see `subscripts.rs`).
pub const PG_VECTOR_KEY: &str = "tarn.pg_vector";

/// The `pg_catalog` tables this module provides.
pub const NAMES: [&str; 11] = [
    "pg_namespace",
    "pg_class",
    "pg_attribute",
    "pg_attrdef",
    "pg_constraint",
    "pg_index",
    "pg_description",
    "pg_sequence",
    "pg_sequences",
    "pg_depend",
    "pg_views",
];

/// Builds a table's rows from the facts.
pub(super) type Build = Arc<dyn Fn(&Facts, &SchemaRef) -> Result<RecordBatch> + Send + Sync>;

/// The table provider of catalog table `name`, or `None` if this module has no such table.
pub fn table(
    name: &str,
    catalog: &Arc<WarehouseCatalog>,
    vars: &Arc<dyn SessionVars>,
) -> Result<Option<Arc<dyn TableProvider>>> {
    let (schema, build): (SchemaRef, Build) = match name {
        "pg_namespace" => (pg_namespace_schema(), Arc::new(pg_namespace)),
        "pg_class" => (pg_class_schema(), Arc::new(pg_class)),
        "pg_attribute" => (pg_attribute_schema(), Arc::new(pg_attribute)),
        "pg_attrdef" => (pg_attrdef_schema(), Arc::new(pg_attrdef)),
        "pg_constraint" => (pg_constraint_schema(), Arc::new(pg_constraint)),
        "pg_index" => (pg_index_schema(), Arc::new(pg_index)),
        "pg_description" => (pg_description_schema(), Arc::new(pg_description)),
        "pg_sequence" => (pg_sequence_schema(), Arc::new(pg_sequence)),
        "pg_sequences" => (pg_sequences_schema(), Arc::new(pg_sequences)),
        "pg_depend" => (pg_depend_schema(), Arc::new(pg_depend)),
        "pg_views" => (pg_views_schema(), Arc::new(pg_views)),
        _ => return Ok(None),
    };
    catalog_table_of(schema, catalog, Some(vars), build).map(Some)
}

/// A table whose rows `build` makes from the warehouse's facts each time it is scanned.
pub(super) fn catalog_table(
    schema: SchemaRef,
    catalog: &Arc<WarehouseCatalog>,
    build: Build,
) -> Result<Arc<dyn TableProvider>> {
    catalog_table_of(schema, catalog, None, build)
}

/// [`catalog_table`] that lists the temporary tables of `session` too.
fn catalog_table_of(
    schema: SchemaRef,
    catalog: &Arc<WarehouseCatalog>,
    session: Option<&Arc<dyn SessionVars>>,
    build: Build,
) -> Result<Arc<dyn TableProvider>> {
    let stream = Arc::new(CatalogStream {
        schema: Arc::clone(&schema),
        catalog: Arc::clone(catalog),
        session: session.cloned(),
        build,
    });
    Ok(Arc::new(StreamingTable::try_new(schema, vec![stream])?))
}

/// One scan of a catalog table: the warehouse's facts read when the plan runs.
struct CatalogStream {
    schema: SchemaRef,
    catalog: Arc<WarehouseCatalog>,
    session: Option<Arc<dyn SessionVars>>,
    build: Build,
}

impl fmt::Debug for CatalogStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogStream").finish_non_exhaustive()
    }
}

impl PartitionStream for CatalogStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = Arc::clone(&self.schema);
        let catalog = Arc::clone(&self.catalog);
        let build = Arc::clone(&self.build);
        let temp = self.session.as_ref().and_then(|s| s.temp_catalog());
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            futures::stream::once(async move {
                let facts = Facts::load_with(&catalog, temp.as_deref()).await?;
                build(&facts, &schema)
            }),
        ))
    }
}

// ---- building rows ------------------------------------------------------------------------

/// Rows of one catalog table, column by column.
pub(super) struct Rows {
    schema: SchemaRef,
    columns: Vec<Vec<ScalarValue>>,
}

impl Rows {
    pub(super) fn new(schema: &SchemaRef) -> Self {
        Self {
            schema: Arc::clone(schema),
            columns: vec![Vec::new(); schema.fields().len()],
        }
    }

    pub(super) fn push(&mut self, row: Vec<ScalarValue>) {
        debug_assert_eq!(row.len(), self.columns.len());
        for (column, value) in self.columns.iter_mut().zip(row) {
            column.push(value);
        }
    }

    pub(super) fn finish(self) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .into_iter()
            .zip(self.schema.fields())
            .map(|(values, field)| -> Result<ArrayRef> {
                if values.is_empty() {
                    return Ok(new_empty_array(field.data_type()));
                }
                let values = values
                    .into_iter()
                    .map(|v| {
                        if v.is_null() {
                            ScalarValue::try_from(field.data_type())
                        } else {
                            Ok(v)
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                ScalarValue::iter_to_array(values)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), arrays)?)
    }
}

pub(super) fn i32v(v: i32) -> ScalarValue {
    ScalarValue::Int32(Some(v))
}
pub(super) fn i64v(v: i64) -> ScalarValue {
    ScalarValue::Int64(Some(v))
}
pub(super) fn i16v(v: i16) -> ScalarValue {
    ScalarValue::Int16(Some(v))
}
pub(super) fn s(v: &str) -> ScalarValue {
    ScalarValue::Utf8(Some(v.to_owned()))
}
pub(super) fn b(v: bool) -> ScalarValue {
    ScalarValue::Boolean(Some(v))
}
pub(super) fn null() -> ScalarValue {
    ScalarValue::Null
}
fn i16s(v: &[i16]) -> ScalarValue {
    let items: Vec<ScalarValue> = v.iter().map(|x| i16v(*x)).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&items, &DataType::Int16))
}
fn i32s(v: &[i32]) -> ScalarValue {
    let items: Vec<ScalarValue> = v.iter().map(|x| i32v(*x)).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&items, &DataType::Int32))
}

// ---- schemas ------------------------------------------------------------------------------

// PostgreSQL's catalog columns of OIDs are of type `oid` (reported as such on the wire, so
// drivers read numbers); the helpers below name what each column refers to.
fn oid(name: &str) -> Field {
    oid_field(name, kind::OID, false)
}
fn regclass(name: &str) -> Field {
    oid_field(name, kind::OID, false)
}
fn regnamespace(name: &str) -> Field {
    oid_field(name, kind::OID, false)
}
fn regtype(name: &str) -> Field {
    oid_field(name, kind::OID, false)
}
pub(super) fn text(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
}
fn int8(name: &str) -> Field {
    Field::new(name, DataType::Int64, false)
}
fn int2(name: &str) -> Field {
    Field::new(name, DataType::Int16, false)
}
pub(super) fn int4(name: &str) -> Field {
    Field::new(name, DataType::Int32, false)
}
fn boolean(name: &str) -> Field {
    Field::new(name, DataType::Boolean, false)
}
fn list(name: &str, item: DataType) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new_list_field(item, true))),
        true,
    )
}
/// `int2vector` / `oidvector`: a list subscripted from 0.
fn vector(name: &str, item: DataType, pg_type: &str) -> Field {
    list(name, item).with_metadata(HashMap::from([(
        PG_VECTOR_KEY.to_owned(),
        pg_type.to_owned(),
    )]))
}

pub(super) fn schema(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

fn pg_namespace_schema() -> SchemaRef {
    schema(vec![
        oid("oid"),
        text("nspname"),
        oid("nspowner"),
        list("nspacl", DataType::Utf8),
    ])
}

fn pg_class_schema() -> SchemaRef {
    schema(vec![
        oid("oid"),
        text("relname"),
        regnamespace("relnamespace"),
        regtype("reltype"),
        regtype("reloftype"),
        int4("relowner"),
        oid("relam"),
        oid("relfilenode"),
        oid("reltablespace"),
        int4("relpages"),
        Field::new("reltuples", DataType::Float32, false),
        int4("relallvisible"),
        regclass("reltoastrelid"),
        boolean("relhasindex"),
        boolean("relisshared"),
        text("relpersistence"),
        text("relkind"),
        int2("relnatts"),
        int2("relchecks"),
        boolean("relhasrules"),
        boolean("relhastriggers"),
        boolean("relhassubclass"),
        boolean("relrowsecurity"),
        boolean("relforcerowsecurity"),
        boolean("relispopulated"),
        text("relreplident"),
        boolean("relispartition"),
        regclass("relrewrite"),
        int4("relfrozenxid"),
        int4("relminmxid"),
        list("relacl", DataType::Utf8),
        list("reloptions", DataType::Utf8),
        text("relpartbound"),
    ])
}

fn pg_namespace(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for (name, oid) in &facts.namespaces {
        rows.push(vec![i32v(*oid), s(name), i32v(SUPERUSER), null()]);
    }
    rows.finish()
}

/// `pg_class`'s own row type (`pg_type`).
const PG_CLASS_ROWTYPE: i32 = 83;

fn pg_class(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    // `pg_catalog.pg_class` itself: clients name it as `'pg_catalog.pg_class'::regclass`, a
    // lookup in this table, to match `pg_depend.classid` and `pg_description.classoid`.
    let mut own = class_row(
        oids::PG_CATALOG_NAMESPACE,
        "pg_catalog",
        (PG_CLASS_RELID, "pg_class"),
        "r",
        HEAP_AM,
        schema.fields().len() as i16,
        true,
    );
    own[3] = i32v(PG_CLASS_ROWTYPE);
    rows.push(own);
    for r in &facts.relations {
        let natts = r.table.fields.len() as i16;
        let mut row = class_row(
            r.namespace_oid,
            &r.schema,
            (r.oid, &r.name),
            "r",
            HEAP_AM,
            natts,
            r.has_key(),
        );
        if r.temporary {
            row[15] = s("t");
        }
        rows.push(row);
        if r.has_key() {
            let keys = r.key_attnums().len() as i16;
            rows.push(class_row(
                r.namespace_oid,
                &r.schema,
                (r.index_oid(), &r.key_name()),
                "i",
                BTREE_AM,
                keys,
                false,
            ));
        }
    }
    for q in &facts.sequences {
        let natts = SEQUENCE_COLUMNS.len() as i16;
        rows.push(class_row(
            q.namespace_oid,
            &q.schema,
            (q.oid, q.name()),
            "S",
            0,
            natts,
            false,
        ));
    }
    for v in &facts.views {
        let natts = v.def.columns.len() as i16;
        let mut row = class_row(
            v.namespace_oid,
            &v.def.schema,
            (v.oid, &v.def.name),
            "v",
            0,
            natts,
            false,
        );
        // A view is its `_RETURN` rule (`relhasrules`).
        row[19] = b(true);
        rows.push(row);
    }
    rows.finish()
}

/// The columns of a sequence read as a relation (`SELECT * FROM s` in PostgreSQL).
const SEQUENCE_COLUMNS: [(&str, TypeKind); 3] = [
    ("last_value", TypeKind::BigInt),
    ("log_cnt", TypeKind::BigInt),
    ("is_called", TypeKind::Boolean),
];

fn class_row(
    namespace_oid: i32,
    schema: &str,
    (oid, name): (i32, &str),
    relkind: &str,
    am: i32,
    natts: i16,
    has_index: bool,
) -> Vec<ScalarValue> {
    let reltype = if relkind == "r" || relkind == "v" {
        oids::oid(oids::Kind::RowType, schema, name)
    } else {
        0
    };
    vec![
        i32v(oid),
        s(name),
        i32v(namespace_oid),
        i32v(reltype),
        i32v(0),
        i32v(SUPERUSER),
        i32v(am),
        i32v(oid),
        i32v(0),
        i32v(0),
        ScalarValue::Float32(Some(-1.0)),
        i32v(0),
        i32v(0),
        b(has_index),
        b(false),
        s("p"),
        s(relkind),
        i16v(natts),
        i16v(0),
        b(false),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        s(if relkind == "r" { "d" } else { "n" }),
        b(false),
        i32v(0),
        i32v(0),
        i32v(0),
        null(),
        null(),
        null(),
    ]
}

fn pg_attribute_schema() -> SchemaRef {
    schema(vec![
        regclass("attrelid"),
        text("attname"),
        regtype("atttypid"),
        int4("attstattarget"),
        int2("attlen"),
        int2("attnum"),
        int4("attndims"),
        int4("attcacheoff"),
        int4("atttypmod"),
        boolean("attbyval"),
        text("attalign"),
        text("attstorage"),
        text("attcompression"),
        boolean("attnotnull"),
        boolean("atthasdef"),
        boolean("atthasmissing"),
        text("attidentity"),
        text("attgenerated"),
        boolean("attisdropped"),
        boolean("attislocal"),
        int4("attinhcount"),
        oid("attcollation"),
        list("attacl", DataType::Utf8),
        list("attoptions", DataType::Utf8),
        list("attfdwoptions", DataType::Utf8),
        text("attmissingval"),
    ])
}

/// `pg_collation`'s "default": the collation of PostgreSQL's string types.
const DEFAULT_COLLATION: i32 = 100;

fn collation_of(type_oid: i32) -> i32 {
    match type_oid {
        25 | 1042 | 1043 | 1009 | 1014 | 1015 => DEFAULT_COLLATION,
        _ => 0,
    }
}

fn pg_attribute(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for r in &facts.relations {
        let columns = r.columns();
        for c in &columns {
            rows.push(attribute_row(r.oid, c, c.attnum, c.default.is_some()));
        }
        // The primary-key index has the key columns as its attributes.
        if r.has_key() {
            for (i, attnum) in r.key_attnums().iter().enumerate() {
                let c = &columns[*attnum as usize - 1];
                rows.push(attribute_row(r.index_oid(), c, i as i16 + 1, false));
            }
        }
    }
    for q in &facts.sequences {
        for (i, (name, kind)) in SEQUENCE_COLUMNS.into_iter().enumerate() {
            let c = Column {
                attnum: i as i16 + 1,
                name,
                ty: column_type(&PaimonType::nullable(kind), None),
                not_null: true,
                comment: None,
                default: None,
                identity: None,
            };
            rows.push(attribute_row(q.oid, &c, c.attnum, false));
        }
    }
    for v in &facts.views {
        for c in v.columns() {
            rows.push(attribute_row(v.oid, &c, c.attnum, false));
        }
    }
    rows.finish()
}

fn attribute_row(relid: i32, c: &Column<'_>, attnum: i16, has_default: bool) -> Vec<ScalarValue> {
    vec![
        i32v(relid),
        s(c.name),
        i32v(c.ty.oid),
        i32v(-1),
        i16v(c.ty.len),
        i16v(attnum),
        i32v(c.ty.ndims),
        i32v(-1),
        i32v(c.ty.typmod),
        b(c.ty.byval),
        s(c.ty.align),
        s(c.ty.storage),
        s(""),
        b(c.not_null),
        b(has_default),
        b(false),
        s(match c.identity {
            Some("always") => "a",
            Some(_) => "d",
            None => "",
        }),
        s(""),
        b(false),
        b(true),
        i32v(0),
        i32v(collation_of(c.ty.oid)),
        null(),
        null(),
        null(),
        null(),
    ]
}

fn pg_attrdef_schema() -> SchemaRef {
    schema(vec![
        oid("oid"),
        regclass("adrelid"),
        int2("adnum"),
        text("adbin"),
    ])
}

/// A default as PostgreSQL deparses it: numbers and booleans bare, other values as a typed
/// literal.
pub fn default_expression(value: &str, typname: &str, sql_name: &str) -> String {
    match typname {
        // PostgreSQL deparses a negative number as a typed string literal.
        "int2" | "int4" | "int8" | "float4" | "float8" | "numeric" if !value.starts_with('-') => {
            value.to_owned()
        }
        "bool" => value.to_owned(),
        _ => format!("'{}'::{sql_name}", value.replace('\'', "''")),
    }
}

fn pg_attrdef(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for r in &facts.relations {
        for c in r.columns() {
            if let Some(value) = &c.default {
                rows.push(vec![
                    i32v(oids::oid(
                        oids::Kind::Constraint,
                        &r.schema,
                        &format!("{}\0default\0{}", r.name, c.name),
                    )),
                    i32v(r.oid),
                    i16v(c.attnum),
                    s(value),
                ]);
            }
        }
    }
    rows.finish()
}

fn pg_constraint_schema() -> SchemaRef {
    schema(vec![
        oid("oid"),
        text("conname"),
        regnamespace("connamespace"),
        text("contype"),
        boolean("condeferrable"),
        boolean("condeferred"),
        boolean("convalidated"),
        regclass("conrelid"),
        regtype("contypid"),
        regclass("conindid"),
        oid("conparentid"),
        regclass("confrelid"),
        text("confupdtype"),
        text("confdeltype"),
        text("confmatchtype"),
        boolean("conislocal"),
        int4("coninhcount"),
        boolean("connoinherit"),
        list("conkey", DataType::Int16),
        list("confkey", DataType::Int16),
        list("conpfeqop", DataType::Int32),
        list("conppeqop", DataType::Int32),
        list("conffeqop", DataType::Int32),
        list("confdelsetcols", DataType::Int16),
        list("conexclop", DataType::Int32),
        text("conbin"),
    ])
}

fn pg_constraint(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for r in facts.relations.iter().filter(|r| r.has_key()) {
        rows.push(vec![
            i32v(r.constraint_oid()),
            s(&r.key_name()),
            i32v(r.namespace_oid),
            s("p"),
            b(false),
            b(false),
            b(true),
            i32v(r.oid),
            i32v(0),
            i32v(r.index_oid()),
            i32v(0),
            i32v(0),
            s(" "),
            s(" "),
            s(" "),
            b(true),
            i32v(0),
            b(true),
            i16s(&r.key_attnums()),
            null(),
            null(),
            null(),
            null(),
            null(),
            null(),
            null(),
        ]);
    }
    rows.finish()
}

fn pg_index_schema() -> SchemaRef {
    schema(vec![
        regclass("indexrelid"),
        regclass("indrelid"),
        int2("indnatts"),
        int2("indnkeyatts"),
        boolean("indisunique"),
        boolean("indnullsnotdistinct"),
        boolean("indisprimary"),
        boolean("indisexclusion"),
        boolean("indimmediate"),
        boolean("indisclustered"),
        boolean("indisvalid"),
        boolean("indcheckxmin"),
        boolean("indisready"),
        boolean("indislive"),
        boolean("indisreplident"),
        vector("indkey", DataType::Int16, "int2vector"),
        vector("indcollation", DataType::Int32, "oidvector"),
        vector("indclass", DataType::Int32, "oidvector"),
        vector("indoption", DataType::Int16, "int2vector"),
        text("indexprs"),
        text("indpred"),
    ])
}

/// The default btree operator class of a key column's type (`pg_opclass`).
fn btree_opclass(type_oid: i32) -> i32 {
    match type_oid {
        16 => 424,
        17 => 428,
        20 => 3124,
        21 => 1979,
        23 => 1978,
        25 => 3126,
        700 => 1970,
        701 => 3123,
        1042 => 426,
        1043 => 3126,
        1082 => 3122,
        1083 => 1996,
        1114 => 3128,
        1184 => 3127,
        1700 => 3125,
        2950 => 2968,
        _ => 0,
    }
}

fn pg_index(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for r in facts.relations.iter().filter(|r| r.has_key()) {
        let keys = r.key_attnums();
        let columns = r.columns();
        let types: Vec<i32> = keys
            .iter()
            .map(|k| columns[*k as usize - 1].ty.oid)
            .collect();
        let n = keys.len() as i16;
        rows.push(vec![
            i32v(r.index_oid()),
            i32v(r.oid),
            i16v(n),
            i16v(n),
            b(true),
            b(false),
            b(true),
            b(false),
            b(true),
            b(false),
            b(true),
            b(false),
            b(true),
            b(true),
            b(false),
            i16s(&keys),
            i32s(&types.iter().map(|t| collation_of(*t)).collect::<Vec<_>>()),
            i32s(&types.iter().map(|t| btree_opclass(*t)).collect::<Vec<_>>()),
            i16s(&vec![0; keys.len()]),
            null(),
            null(),
        ]);
    }
    rows.finish()
}

fn pg_description_schema() -> SchemaRef {
    schema(vec![
        oid("objoid"),
        oid("classoid"),
        int4("objsubid"),
        text("description"),
    ])
}

fn pg_description(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for r in &facts.relations {
        if let Some(comment) = &r.table.comment {
            rows.push(vec![i32v(r.oid), i32v(PG_CLASS_RELID), i32v(0), s(comment)]);
        }
        for c in r.columns() {
            if let Some(comment) = c.comment {
                rows.push(vec![
                    i32v(r.oid),
                    i32v(PG_CLASS_RELID),
                    i32v(i32::from(c.attnum)),
                    s(comment),
                ]);
            }
        }
    }
    for v in &facts.views {
        if let Some(comment) = &v.def.comment {
            rows.push(vec![i32v(v.oid), i32v(PG_CLASS_RELID), i32v(0), s(comment)]);
        }
    }
    rows.finish()
}

// ---- sequences ------------------------------------------------------------------------------

/// A sequence type's OID (`pg_type`).
fn type_oid(t: SequenceType) -> i32 {
    match t {
        SequenceType::SmallInt => 21,
        SequenceType::Integer => 23,
        SequenceType::BigInt => 20,
    }
}

fn pg_sequence_schema() -> SchemaRef {
    schema(vec![
        regclass("seqrelid"),
        regtype("seqtypid"),
        int8("seqstart"),
        int8("seqincrement"),
        int8("seqmax"),
        int8("seqmin"),
        int8("seqcache"),
        boolean("seqcycle"),
    ])
}

fn pg_sequence(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for q in &facts.sequences {
        let o = &q.info.options;
        rows.push(vec![
            i32v(q.oid),
            i32v(type_oid(o.data_type)),
            i64v(o.start),
            i64v(o.increment),
            i64v(o.max_value),
            i64v(o.min_value),
            i64v(o.cache),
            b(o.cycle),
        ]);
    }
    rows.finish()
}

/// The `pg_sequences` view; `data_type` (`regtype` in PostgreSQL) as the type's name.
fn pg_sequences_schema() -> SchemaRef {
    schema(vec![
        text("schemaname"),
        text("sequencename"),
        text("sequenceowner"),
        text("data_type"),
        int8("start_value"),
        int8("min_value"),
        int8("max_value"),
        int8("increment_by"),
        boolean("cycle"),
        int8("cache_size"),
        Field::new("last_value", DataType::Int64, true),
    ])
}

fn pg_sequences(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for q in &facts.sequences {
        let o = &q.info.options;
        rows.push(vec![
            s(&q.schema),
            s(q.name()),
            s("postgres"),
            s(o.data_type.name()),
            i64v(o.start),
            i64v(o.min_value),
            i64v(o.max_value),
            i64v(o.increment),
            b(o.cycle),
            i64v(o.cache),
            ScalarValue::Int64(q.info.last_value),
        ]);
    }
    rows.finish()
}

/// `pg_depend` with tarn's dependencies: each owned sequence on its column (`a` for SERIAL
/// and `OWNED BY`, `i` for an identity column).
fn pg_depend_schema() -> SchemaRef {
    schema(vec![
        oid("classid"),
        oid("objid"),
        int4("objsubid"),
        oid("refclassid"),
        oid("refobjid"),
        int4("refobjsubid"),
        text("deptype"),
    ])
}

fn pg_depend(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for q in &facts.sequences {
        if let Some(owner) = &q.owner {
            rows.push(vec![
                i32v(PG_CLASS_RELID),
                i32v(q.oid),
                i32v(0),
                i32v(PG_CLASS_RELID),
                i32v(owner.table_oid),
                i32v(i32::from(owner.attnum)),
                s(if owner.identity { "i" } else { "a" }),
            ]);
        }
    }
    rows.finish()
}

// ---- views ----------------------------------------------------------------------------------

/// The `pg_views` view (`schemaname` and `viewname` of type `name`, shown as text).
fn pg_views_schema() -> SchemaRef {
    schema(vec![
        text("schemaname"),
        text("viewname"),
        text("viewowner"),
        text("definition"),
    ])
}

fn pg_views(facts: &Facts, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut rows = Rows::new(schema);
    for v in &facts.views {
        rows.push(vec![
            s(&v.def.schema),
            s(&v.def.name),
            s("postgres"),
            s(&v.definition()),
        ]);
    }
    rows.finish()
}
