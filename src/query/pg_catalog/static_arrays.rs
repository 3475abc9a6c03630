//! PostgreSQL's array-typed catalog columns in datafusion-pg-catalog's static tables, with
//! their array types back.
//!
//! The crate exports PostgreSQL's catalog rows with every array (`oid[]`, `text[]`,
//! `aclitem[]`) and vector (`int2vector`, `oidvector`) column as text (`"{1,2}"`, `"25 23"`),
//! so `oid = ANY(polroles)`, `proargtypes[0]` or `unnest(proargnames)` fail to plan. These
//! tables are converted once per server: each listed column becomes a list of its element type
//! (vectors marked so their subscripts start at 0, as PostgreSQL's do).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion_pg_catalog::pg_catalog::PgCatalogStaticTables;

use super::relations::PG_VECTOR_KEY;

/// (table, column, PostgreSQL type) of array columns, from PostgreSQL 15's `pg_attribute`
/// (`typcategory = 'A'` or a vector type; `anyarray` statistics columns left out).
const ARRAY_COLUMNS: &[(&str, &str, &str)] = &[
    ("pg_attribute", "attacl", "_aclitem"),
    ("pg_attribute", "attoptions", "_text"),
    ("pg_attribute", "attfdwoptions", "_text"),
    ("pg_class", "relacl", "_aclitem"),
    ("pg_class", "reloptions", "_text"),
    ("pg_constraint", "conkey", "_int2"),
    ("pg_constraint", "confkey", "_int2"),
    ("pg_constraint", "conpfeqop", "_oid"),
    ("pg_constraint", "conppeqop", "_oid"),
    ("pg_constraint", "conffeqop", "_oid"),
    ("pg_constraint", "confdelsetcols", "_int2"),
    ("pg_constraint", "conexclop", "_oid"),
    ("pg_database", "datacl", "_aclitem"),
    ("pg_db_role_setting", "setconfig", "_text"),
    ("pg_default_acl", "defaclacl", "_aclitem"),
    ("pg_event_trigger", "evttags", "_text"),
    ("pg_extension", "extconfig", "_oid"),
    ("pg_extension", "extcondition", "_text"),
    ("pg_foreign_data_wrapper", "fdwacl", "_aclitem"),
    ("pg_foreign_data_wrapper", "fdwoptions", "_text"),
    ("pg_foreign_server", "srvacl", "_aclitem"),
    ("pg_foreign_server", "srvoptions", "_text"),
    ("pg_foreign_table", "ftoptions", "_text"),
    ("pg_index", "indkey", "int2vector"),
    ("pg_index", "indcollation", "oidvector"),
    ("pg_index", "indclass", "oidvector"),
    ("pg_index", "indoption", "int2vector"),
    ("pg_init_privs", "initprivs", "_aclitem"),
    ("pg_language", "lanacl", "_aclitem"),
    ("pg_largeobject_metadata", "lomacl", "_aclitem"),
    ("pg_namespace", "nspacl", "_aclitem"),
    ("pg_parameter_acl", "paracl", "_aclitem"),
    ("pg_partitioned_table", "partattrs", "int2vector"),
    ("pg_partitioned_table", "partclass", "oidvector"),
    ("pg_partitioned_table", "partcollation", "oidvector"),
    ("pg_policy", "polroles", "_oid"),
    ("pg_proc", "proargtypes", "oidvector"),
    ("pg_proc", "proallargtypes", "_oid"),
    ("pg_proc", "proargmodes", "_char"),
    ("pg_proc", "proargnames", "_text"),
    ("pg_proc", "protrftypes", "_oid"),
    ("pg_proc", "proconfig", "_text"),
    ("pg_proc", "proacl", "_aclitem"),
    ("pg_publication_rel", "prattrs", "int2vector"),
    ("pg_statistic_ext", "stxkeys", "int2vector"),
    ("pg_statistic_ext", "stxkind", "_char"),
    ("pg_subscription", "subpublications", "_text"),
    ("pg_tablespace", "spcacl", "_aclitem"),
    ("pg_tablespace", "spcoptions", "_text"),
    ("pg_trigger", "tgattr", "int2vector"),
    ("pg_type", "typacl", "_aclitem"),
    ("pg_user_mapping", "umoptions", "_text"),
];

/// The static tables with array columns, converted: name → (schema, rows).
pub type Retyped = HashMap<&'static str, (SchemaRef, Vec<RecordBatch>)>;

/// Converts the array columns of `tables`' static tables.
pub fn retype(tables: &PgCatalogStaticTables) -> Result<Retyped> {
    let mut out = Retyped::new();
    let mut names: Vec<&'static str> = ARRAY_COLUMNS.iter().map(|(t, _, _)| *t).collect();
    names.dedup();
    for name in names {
        let Some(table) = static_table(tables, name) else {
            continue;
        };
        let schema = table.schema();
        let mut fields: Vec<Field> = Vec::new();
        let mut converted: Vec<Option<(DataType, bool)>> = Vec::new();
        for field in schema.fields() {
            let spec = ARRAY_COLUMNS
                .iter()
                .find(|(t, c, _)| *t == name && c == field.name())
                .filter(|_| {
                    matches!(
                        field.data_type(),
                        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                    )
                });
            match spec {
                Some((_, _, pg_type)) => {
                    let (item, vector) = element_type(pg_type);
                    let mut f = Field::new(
                        field.name(),
                        DataType::List(Arc::new(Field::new_list_field(item.clone(), true))),
                        true,
                    );
                    if vector {
                        f = f.with_metadata(HashMap::from([(
                            PG_VECTOR_KEY.to_owned(),
                            (*pg_type).to_owned(),
                        )]));
                    }
                    fields.push(f);
                    converted.push(Some((item, vector)));
                }
                None => {
                    fields.push(field.as_ref().clone());
                    converted.push(None);
                }
            }
        }
        let new_schema: SchemaRef =
            Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        let mut batches = Vec::new();
        for batch in table.data() {
            let columns = batch
                .columns()
                .iter()
                .zip(&converted)
                .map(|(column, conv)| match conv {
                    Some((item, vector)) => to_list(column, item, *vector),
                    None => Ok(Arc::clone(column)),
                })
                .collect::<Result<Vec<_>>>()?;
            batches.push(RecordBatch::try_new(Arc::clone(&new_schema), columns)?);
        }
        out.insert(name, (new_schema, batches));
    }
    Ok(out)
}

fn static_table(
    tables: &PgCatalogStaticTables,
    name: &str,
) -> Option<Arc<datafusion_pg_catalog::pg_catalog::ArrowTable>> {
    let t = match name {
        "pg_aggregate" => &tables.pg_aggregate,
        "pg_am" => &tables.pg_am,
        "pg_amop" => &tables.pg_amop,
        "pg_amproc" => &tables.pg_amproc,
        "pg_authid" => &tables.pg_authid,
        "pg_collation" => &tables.pg_collation,
        "pg_database" | "pg_namespace" | "pg_class" | "pg_attribute" | "pg_constraint"
        | "pg_index" => return None,
        "pg_db_role_setting" => &tables.pg_db_role_setting,
        "pg_default_acl" => &tables.pg_default_acl,
        "pg_event_trigger" => &tables.pg_event_trigger,
        "pg_extension" => &tables.pg_extension,
        "pg_foreign_data_wrapper" => &tables.pg_foreign_data_wrapper,
        "pg_foreign_server" => &tables.pg_foreign_server,
        "pg_foreign_table" => &tables.pg_foreign_table,
        "pg_init_privs" => &tables.pg_init_privs,
        "pg_language" => &tables.pg_language,
        "pg_largeobject_metadata" => &tables.pg_largeobject_metadata,
        "pg_partitioned_table" => &tables.pg_partitioned_table,
        "pg_policy" => &tables.pg_policy,
        "pg_proc" => &tables.pg_proc,
        "pg_publication_rel" => &tables.pg_publication_rel,
        "pg_statistic_ext" => &tables.pg_statistic_ext,
        "pg_subscription" => &tables.pg_subscription,
        "pg_tablespace" => &tables.pg_tablespace,
        "pg_trigger" => &tables.pg_trigger,
        "pg_ts_config_map" => return None,
        "pg_type" => &tables.pg_type,
        "pg_user_mapping" => &tables.pg_user_mapping,
        "pg_attrdef" | "pg_description" => return None,
        _ => return None,
    };
    Some(Arc::clone(t))
}

/// The element type of a PostgreSQL array or vector type, and whether it is a vector.
fn element_type(pg_type: &str) -> (DataType, bool) {
    match pg_type {
        "int2vector" => (DataType::Int16, true),
        "oidvector" => (DataType::Int32, true),
        "_int2" => (DataType::Int16, false),
        "_oid" => (DataType::Int32, false),
        _ => (DataType::Utf8, false),
    }
}

/// Text values (`{a,b}` arrays, `1 2` vectors) as lists of `item`.
fn to_list(column: &ArrayRef, item: &DataType, vector: bool) -> Result<ArrayRef> {
    let text = cast(column, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    let mut rows = Vec::with_capacity(text.len());
    for i in 0..text.len() {
        if text.is_null(i) {
            rows.push(ScalarValue::new_null_list(item.clone(), true, 1));
            continue;
        }
        let elements = if vector {
            text.value(i)
                .split_whitespace()
                .map(|s| Some(s.to_owned()))
                .collect()
        } else {
            parse_array(text.value(i))
        };
        let values = elements
            .into_iter()
            .map(|e| match e {
                None => ScalarValue::try_from(item),
                Some(s) => ScalarValue::try_from_string(s, item),
            })
            .collect::<Result<Vec<_>>>()?;
        rows.push(ScalarValue::List(ScalarValue::new_list_nullable(
            &values, item,
        )));
    }
    if rows.is_empty() {
        return Ok(datafusion::arrow::array::new_empty_array(&DataType::List(
            Arc::new(Field::new_list_field(item.clone(), true)),
        )));
    }
    ScalarValue::iter_to_array(rows)
}

/// The elements of a one-dimensional PostgreSQL array literal (`{a,"b c",NULL}`).
pub fn parse_array(text: &str) -> Vec<Option<String>> {
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or("");
    let mut out = Vec::new();
    if inner.is_empty() {
        return out;
    }
    let mut chars = inner.chars().peekable();
    loop {
        let mut value = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => break,
                    c => value.push(c),
                }
            }
        }
        while let Some(&c) = chars.peek() {
            if c == ',' {
                break;
            }
            value.push(c);
            chars.next();
        }
        out.push(if !quoted && value.eq_ignore_ascii_case("null") {
            None
        } else {
            Some(value)
        });
        if chars.next().is_none() {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_literals_split_into_elements() {
        assert_eq!(
            parse_array("{a,\"b,c\",NULL,\"NULL\"}"),
            [
                Some("a".into()),
                Some("b,c".into()),
                None,
                Some("NULL".into())
            ]
        );
        assert!(parse_array("{}").is_empty());
    }
}
