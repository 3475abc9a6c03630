//! PostgreSQL's catalog functions over tarn's objects: `to_regtype`, `to_regclass`,
//! `pg_get_indexdef`, `pg_get_constraintdef`, `pg_get_viewdef`, `obj_description`,
//! `col_description`,
//! `pg_*_is_visible`, `json_build_object`, ... as clients call them when
//! they browse (psql's `\d`, pgjdbc's DatabaseMetaData, SQLAlchemy's inspector, psycopg's
//! type lookup).
//!
//! Functions that need table facts (keys, comments) read them when they run: they are async
//! UDFs that load [`Facts`] once per batch. OIDs are the names' hashes (`oids.rs`), so a
//! name resolves to its OID without reading the warehouse — except sequences, which have no
//! cached listing: `to_regclass` of a name that is no table, index or view reads the
//! sequence's document, and `tarn_reg_name(oid, 'regclass')` of a user-range OID no table
//! has lists the schemas' sequences (`pg_get_serial_sequence(…)::regclass`, SQLAlchemy's
//! identity reflection).

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::async_udf::{AsyncScalarUDF, AsyncScalarUDFImpl};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;

use super::facts::{Facts, SYSTEM_SCHEMAS};
use super::oids::{self, Kind};
use crate::query::catalog::WarehouseCatalog;
use crate::query::functions::{SessionVars, register};
use crate::query::sequences::wait;
use crate::storage::sequences::{SequenceError, SequenceStore};
use crate::storage::views::ViewStore;
use datafusion_pg_catalog::pg_catalog::PgCatalogStaticTables;

/// Registers the functions on `ctx` (after datafusion-pg-catalog's, which some replace).
pub fn register_functions(
    ctx: &SessionContext,
    catalog: &Arc<WarehouseCatalog>,
    views: &ViewStore,
    vars: &Arc<dyn SessionVars>,
    tables: &PgCatalogStaticTables,
) -> Result<()> {
    let stable = Volatility::Stable;
    let any = |n: usize| Signature::one_of(vec![TypeSignature::Any(n)], stable);

    // Every object tarn has is visible: schemas are only ever in the search path or named.
    for name in [
        "pg_function_is_visible",
        "pg_type_is_visible",
        "pg_operator_is_visible",
        "pg_collation_is_visible",
        "pg_conversion_is_visible",
        "pg_opclass_is_visible",
    ] {
        register(ctx, name, any(1), DataType::Boolean, |args| {
            Ok(ScalarValue::Boolean((!args[0].is_null()).then_some(true)))
        });
    }

    let types = type_oids(tables)?;
    let regtype_types = types.clone();
    register(ctx, "to_regtype", any(1), DataType::Int32, move |args| {
        Ok(ScalarValue::Int32(
            text_arg(&args[0]).and_then(|name| regtype(&regtype_types, &name)),
        ))
    });

    let (c, v, w) = (Arc::clone(catalog), Arc::clone(vars), views.clone());
    let sequences = SequenceStore::new(catalog.warehouse().io().clone());
    register(
        ctx,
        "to_regclass",
        any(1),
        DataType::Int32,
        move |args| match text_arg(&args[0]) {
            Some(name) => regclass(&c, &w, &sequences, v.as_ref(), &name).map(ScalarValue::Int32),
            None => Ok(ScalarValue::Int32(None)),
        },
    );

    let c = Arc::clone(catalog);
    register(
        ctx,
        "to_regnamespace",
        any(1),
        DataType::Int32,
        move |args| {
            Ok(ScalarValue::Int32(text_arg(&args[0]).and_then(|name| {
                let name = unquote(&name);
                (c.has_database(&name) || SYSTEM_SCHEMAS.contains(&name.as_str()))
                    .then(|| oids::oid(Kind::Namespace, "", &name))
            })))
        },
    );

    // The bootstrap superuser (OID 10) owns every object: the session's user stands for it
    // (pg_class.relowner is 10); other OIDs print as PostgreSQL prints unknown roles.
    let v = Arc::clone(vars);
    register(
        ctx,
        "pg_get_userbyid",
        any(1),
        DataType::Utf8,
        move |args| {
            Ok(ScalarValue::Utf8(int_arg(&args[0]).map(|oid| {
                if oid == i64::from(oids::SUPERUSER) {
                    v.user()
                } else {
                    format!("unknown (OID={oid})")
                }
            })))
        },
    );
    // tarn's one encoding is UTF8 (6); other numbers name no encoding tarn has.
    register(ctx, "pg_encoding_to_char", any(1), DataType::Utf8, |args| {
        Ok(ScalarValue::Utf8(int_arg(&args[0]).map(|n| {
            match n {
                6 => "UTF8",
                0 => "SQL_ASCII",
                _ => "",
            }
            .to_owned()
        })))
    });

    // `pg_attrdef.adbin` holds the default's text itself (tarn keeps no parse trees), so
    // deparsing it is the identity (datafusion-pg-catalog's version returns '').
    let two_or_three =
        Signature::one_of(vec![TypeSignature::Any(2), TypeSignature::Any(3)], stable);
    register(ctx, "pg_get_expr", two_or_three, DataType::Utf8, |args| {
        Ok(ScalarValue::Utf8(match &args[0] {
            ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => {
                v.clone()
            }
            _ => None,
        }))
    });
    // tarn has no rewrite rules of its own (a view is no `pg_rewrite` row): psql's `\d+` of a
    // view asks for its other rules.
    let one_or_two = Signature::one_of(vec![TypeSignature::Any(1), TypeSignature::Any(2)], stable);
    register(ctx, "pg_get_ruledef", one_or_two, DataType::Utf8, |_| {
        Ok(ScalarValue::Utf8(None))
    });
    // Shared objects (databases, roles) carry no comments.
    register(ctx, "shobj_description", any(2), DataType::Utf8, |_| {
        Ok(ScalarValue::Utf8(None))
    });
    // tarn has no logical replication: no relation can be published (psql's `\d` asks,
    // with the OID as a string literal).
    register(
        ctx,
        "pg_relation_is_publishable",
        any(1),
        DataType::Boolean,
        |args| Ok(ScalarValue::Boolean((!args[0].is_null()).then_some(false))),
    );
    register(
        ctx,
        "pg_is_in_recovery",
        Signature::nullary(stable),
        DataType::Boolean,
        |_| Ok(ScalarValue::Boolean(Some(false))),
    );

    // SQLAlchemy's column reflection builds identity and collation details with it.
    register(
        ctx,
        "json_build_object",
        Signature::variadic_any(stable),
        DataType::Utf8,
        |args| json_build_object(args).map(|v| ScalarValue::Utf8(Some(v))),
    );

    // Functions of PostgreSQL's own (static) pg_proc rows: tarn has no functions of its own
    // in pg_proc yet.
    let procs = Arc::new(proc_signatures(tables, &types)?);
    for (name, result) in [
        ("pg_get_function_result", true),
        ("pg_get_function_arguments", false),
        ("pg_get_function_identity_arguments", false),
    ] {
        let procs = Arc::clone(&procs);
        register(ctx, name, any(1), DataType::Utf8, move |args| {
            Ok(ScalarValue::Utf8(
                int_arg(&args[0])
                    .and_then(|oid| procs.get(&(oid as i32)))
                    .map(|(r, a)| if result { r.clone() } else { a.clone() }),
            ))
        });
    }

    for (name, eval) in [
        ("pg_get_indexdef", indexdef as FactsEval),
        ("pg_get_constraintdef", constraintdef),
        ("obj_description", obj_description),
        ("col_description", col_description),
        ("pg_get_serial_sequence", serial_sequence),
        ("pg_get_viewdef", viewdef),
    ] {
        let signature = Signature::one_of(
            vec![
                TypeSignature::Any(1),
                TypeSignature::Any(2),
                TypeSignature::Any(3),
            ],
            stable,
        );
        let udf = FactsFn {
            name,
            signature,
            catalog: Arc::clone(catalog),
            vars: Arc::clone(vars),
            eval,
        };
        ctx.register_udf(AsyncScalarUDF::new(Arc::new(udf)).into_scalar_udf());
    }
    Ok(())
}

/// `tarn_reg_name(oid, kind)`: what `oid::regtype::text` (`regclass`, `regnamespace`,
/// `regproc`) prints — the object's name, or the number when there is no such object.
pub fn reg_name_udf(
    catalog: &Arc<WarehouseCatalog>,
    views: &ViewStore,
    tables: &PgCatalogStaticTables,
) -> Result<Arc<datafusion::logical_expr::ScalarUDF>> {
    let types: HashMap<i32, String> = type_oids(tables)?
        .into_iter()
        .map(|(name, oid)| (oid, sql_type_name(&name)))
        .collect();
    let procs = proc_names(tables)?;
    let catalog = Arc::clone(catalog);
    let views = views.clone();
    let sequences = SequenceStore::new(catalog.warehouse().io().clone());
    let f = crate::query::functions::session_fn(
        "tarn_reg_name",
        Signature::any(2, Volatility::Stable),
        DataType::Utf8,
        move |args| {
            let Some(oid) = int_arg(&args[0]) else {
                return Ok(ScalarValue::Utf8(None));
            };
            let oid = oid as i32;
            let name = match text_arg(&args[1]).as_deref() {
                Some("regtype") => types.get(&oid).cloned(),
                Some("regproc") => procs.get(&oid).cloned(),
                Some("regnamespace") => catalog
                    .database_names()
                    .into_iter()
                    .chain(SYSTEM_SCHEMAS.iter().map(|s| (*s).to_owned()))
                    .find(|n| oids::oid(Kind::Namespace, "", n) == oid)
                    .map(|n| quote_ident(&n)),
                Some("regclass") => relation_name(&catalog, &views, &sequences, oid)?,
                _ => None,
            };
            Ok(ScalarValue::Utf8(Some(
                name.unwrap_or_else(|| oid.to_string()),
            )))
        },
    );
    Ok(Arc::new(f))
}

/// A relation's name as `regclass` prints it (qualified unless its schema is `public`): a
/// table, its primary-key index, a view or a sequence.
fn relation_name(
    catalog: &WarehouseCatalog,
    views: &ViewStore,
    sequences: &SequenceStore,
    oid: i32,
) -> Result<Option<String>> {
    let qualified = |schema: &str, name: &str| {
        if schema == "public" {
            quote_ident(name)
        } else {
            format!("{}.{}", quote_ident(schema), quote_ident(name))
        }
    };
    if let Some(v) = views.cached().and_then(|all| {
        all.iter()
            .find(|v| oids::oid(Kind::Relation, &v.schema, &v.name) == oid)
            .cloned()
    }) {
        return Ok(Some(qualified(&v.schema, &v.name)));
    }
    for schema in catalog.database_names() {
        for table in catalog.table_names_of(&schema) {
            let key = format!("{table}_pkey");
            let name = if oids::oid(Kind::Relation, &schema, &table) == oid {
                table
            } else if oids::oid(Kind::Index, &schema, &key) == oid {
                key
            } else {
                continue;
            };
            return Ok(Some(qualified(&schema, &name)));
        }
    }
    // PostgreSQL's own objects (below the user range) are no sequence of the warehouse's.
    if oid < 16384 {
        return Ok(None);
    }
    for schema in catalog.database_names() {
        for q in wait(sequences.list(&schema)).map_err(sequence_error)? {
            if oids::oid(Kind::Relation, &schema, &q.name) == oid {
                return Ok(Some(qualified(&schema, &q.name)));
            }
        }
    }
    Ok(None)
}

fn sequence_error(e: SequenceError) -> datafusion::error::DataFusionError {
    match e {
        SequenceError::Storage(e) => crate::query::table::storage_error(e),
        other => datafusion::error::DataFusionError::Execution(other.to_string()),
    }
}

/// A type's name as PostgreSQL's `format_type` prints it without modifiers.
fn sql_type_name(typname: &str) -> String {
    let (base, array) = match typname.strip_prefix('_') {
        Some(b) => (b, "[]"),
        None => (typname, ""),
    };
    let name = match base {
        "int2" => "smallint",
        "int4" => "integer",
        "int8" => "bigint",
        "float4" => "real",
        "float8" => "double precision",
        "bool" => "boolean",
        "varchar" => "character varying",
        "bpchar" => "character",
        "timestamp" => "timestamp without time zone",
        "timestamptz" => "timestamp with time zone",
        "time" => "time without time zone",
        "timetz" => "time with time zone",
        "varbit" => "bit varying",
        "char" => "\"char\"",
        other => other,
    };
    format!("{name}{array}")
}

/// PostgreSQL's functions by OID: name.
fn proc_names(tables: &PgCatalogStaticTables) -> Result<HashMap<i32, String>> {
    let mut map = HashMap::new();
    for batch in tables.pg_proc.data() {
        let (Some(oid), Some(name)) =
            (batch.column_by_name("oid"), batch.column_by_name("proname"))
        else {
            continue;
        };
        let oid = cast(oid, &DataType::Int32)?;
        let name = cast(name, &DataType::Utf8)?;
        let (oid, name) = (oid.as_primitive::<Int32Type>(), name.as_string::<i32>());
        for i in 0..batch.num_rows() {
            if !oid.is_null(i) && !name.is_null(i) {
                map.insert(oid.value(i), name.value(i).to_owned());
            }
        }
    }
    Ok(map)
}

/// PostgreSQL's functions by OID: (result type, argument types) as `\df` prints them.
fn proc_signatures(
    tables: &PgCatalogStaticTables,
    types: &HashMap<String, i32>,
) -> Result<HashMap<i32, (String, String)>> {
    let names: HashMap<i32, String> = types
        .iter()
        .map(|(name, oid)| (*oid, sql_type_name(name)))
        .collect();
    let type_name = |oid: &str| {
        oid.parse::<i32>()
            .ok()
            .and_then(|o| names.get(&o).cloned())
            .unwrap_or_else(|| oid.to_owned())
    };
    let mut map = HashMap::new();
    for batch in tables.pg_proc.data() {
        let (Some(oid), Some(ret), Some(args), Some(set)) = (
            batch.column_by_name("oid"),
            batch.column_by_name("prorettype"),
            batch.column_by_name("proargtypes"),
            batch.column_by_name("proretset"),
        ) else {
            continue;
        };
        let oid = cast(oid, &DataType::Int32)?;
        let ret = cast(ret, &DataType::Utf8)?;
        let args = cast(args, &DataType::Utf8)?;
        let set = cast(set, &DataType::Boolean)?;
        let (oid, ret, args, set) = (
            oid.as_primitive::<Int32Type>(),
            ret.as_string::<i32>(),
            args.as_string::<i32>(),
            set.as_boolean(),
        );
        for i in 0..batch.num_rows() {
            if oid.is_null(i) {
                continue;
            }
            let setof = if !set.is_null(i) && set.value(i) {
                "SETOF "
            } else {
                ""
            };
            let result = format!("{setof}{}", type_name(ret.value(i)));
            let arguments: Vec<String> = args.value(i).split_whitespace().map(type_name).collect();
            map.insert(oid.value(i), (result, arguments.join(", ")));
        }
    }
    Ok(map)
}

/// `json_build_object(k1, v1, ...)`: a JSON object of alternating keys and values (numbers
/// and booleans as JSON values, NULL as null, everything else as its text).
fn json_build_object(args: &[ScalarValue]) -> Result<String> {
    if !args.len().is_multiple_of(2) {
        return datafusion::common::exec_err!("argument list must have even number of elements");
    }
    let mut map = serde_json::Map::new();
    for pair in args.chunks(2) {
        if pair[0].is_null() {
            return datafusion::common::exec_err!("null value not allowed for object key");
        }
        let key = text_arg(&pair[0]).unwrap_or_else(|| pair[0].to_string());
        let value = match &pair[1] {
            v if v.is_null() => serde_json::Value::Null,
            ScalarValue::Boolean(Some(b)) => serde_json::Value::Bool(*b),
            ScalarValue::Int8(Some(_))
            | ScalarValue::Int16(Some(_))
            | ScalarValue::Int32(Some(_))
            | ScalarValue::Int64(Some(_))
            | ScalarValue::UInt32(Some(_))
            | ScalarValue::UInt64(Some(_))
            | ScalarValue::Float64(Some(_))
            | ScalarValue::Decimal128(Some(_), _, _) => serde_json::from_str(&pair[1].to_string())
                .unwrap_or_else(|_| serde_json::Value::String(pair[1].to_string())),
            other => {
                serde_json::Value::String(text_arg(other).unwrap_or_else(|| other.to_string()))
            }
        };
        map.insert(key, value);
    }
    Ok(serde_json::Value::Object(map).to_string())
}

fn text_arg(v: &ScalarValue) -> Option<String> {
    match v {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => s.clone(),
        _ => None,
    }
}

fn int_arg(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int16(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int32(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int64(Some(x)) => Some(*x),
        ScalarValue::UInt32(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Utf8(Some(s)) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An identifier as PostgreSQL reads it: folded to lower case unless double-quoted.
fn unquote(ident: &str) -> String {
    let t = ident.trim();
    match t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => t.to_lowercase(),
    }
}

/// Splits `a.b` into its identifiers, dots inside double quotes kept, unquoted ones folded to
/// lower case: a relation name given as text (`to_regclass`, `nextval`).
pub(crate) fn split_qualified(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for ch in name.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                current.push(ch);
            }
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            _ => current.push(ch),
        }
    }
    parts.push(current);
    parts.iter().map(|p| unquote(p)).collect()
}

/// `pg_type`'s names and OIDs (from PostgreSQL's own rows).
fn type_oids(tables: &PgCatalogStaticTables) -> Result<HashMap<String, i32>> {
    let mut map = HashMap::new();
    for batch in tables.pg_type.data() {
        let (Some(oid), Some(name)) =
            (batch.column_by_name("oid"), batch.column_by_name("typname"))
        else {
            continue;
        };
        let oid = cast(oid, &DataType::Int32)?;
        let name = cast(name, &DataType::Utf8)?;
        let (oid, name) = (oid.as_primitive::<Int32Type>(), name.as_string::<i32>());
        for i in 0..batch.num_rows() {
            if !oid.is_null(i) && !name.is_null(i) {
                map.insert(name.value(i).to_owned(), oid.value(i));
            }
        }
    }
    Ok(map)
}

/// `to_regtype`: a type name as PostgreSQL's grammar reads it (SQL-standard spellings,
/// `pg_catalog.` prefix, modifiers and `[]`), to its OID.
fn regtype(types: &HashMap<String, i32>, name: &str) -> Option<i32> {
    let mut t = name.trim().to_lowercase();
    if let Some(rest) = t.strip_prefix("pg_catalog.") {
        t = rest.to_owned();
    }
    let array = t.ends_with("[]");
    let base = t.trim_end_matches("[]").trim();
    // Type modifiers do not change the type: `numeric(6,2)`, `varchar(20)`.
    let base = match base.find('(') {
        Some(i) => {
            let close = base.rfind(')')?;
            format!("{}{}", base[..i].trim(), &base[close + 1..])
        }
        None => base.to_owned(),
    };
    let base = base.split_whitespace().collect::<Vec<_>>().join(" ");
    let canonical = match base.as_str() {
        "integer" | "int" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "decimal" => "numeric",
        "character varying" | "char varying" => "varchar",
        "character" | "char" => "bpchar",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        "time" | "time without time zone" => "time",
        "time with time zone" => "timetz",
        "bit varying" => "varbit",
        "\"char\"" => "char",
        other => other,
    };
    let key = if array {
        format!("_{canonical}")
    } else {
        canonical.to_owned()
    };
    types.get(&key).copied()
}

/// `to_regclass`: a relation name (a table, its primary-key index, a view or a sequence),
/// qualified or found through the search path, to its OID.
fn regclass(
    catalog: &WarehouseCatalog,
    views: &ViewStore,
    sequences: &SequenceStore,
    vars: &dyn SessionVars,
    name: &str,
) -> Result<Option<i32>> {
    let parts = split_qualified(name);
    let views = views.cached();
    let is_view = |schema: &str, name: &str| {
        views
            .as_ref()
            .is_some_and(|all| all.iter().any(|v| v.schema == schema && v.name == name))
    };
    let exists = |schema: &str, table: &str| {
        catalog.has_database(schema)
            && (catalog.table_names_of(schema).iter().any(|t| t == table) || is_view(schema, table))
    };
    let found = |schema: &str, table: &str| -> Result<Option<i32>> {
        if exists(schema, table) {
            return Ok(Some(oids::oid(Kind::Relation, schema, table)));
        }
        if !catalog.has_database(schema) {
            return Ok(None);
        }
        // A table's primary-key index.
        if let Some(base) = table.strip_suffix("_pkey")
            && exists(schema, base)
        {
            return Ok(Some(oids::oid(Kind::Index, schema, table)));
        }
        // A sequence (read from the warehouse: sequences have no cached listing).
        let sequence = wait(sequences.get(schema, table)).map_err(sequence_error)?;
        Ok(sequence.map(|_| oids::oid(Kind::Relation, schema, table)))
    };
    match parts.as_slice() {
        [table] => {
            for schema in vars.effective_search_path() {
                if let Some(oid) = found(&schema, table)? {
                    return Ok(Some(oid));
                }
            }
            Ok(None)
        }
        [schema, table] | [_, schema, table] => found(schema, table),
        _ => Ok(None),
    }
}

// ---- functions over the warehouse's facts ---------------------------------------------------

type FactsEval = fn(&Facts, &[ScalarValue]) -> ScalarValue;

/// A function that needs table facts: evaluated row by row after one [`Facts::load_with`].
struct FactsFn {
    name: &'static str,
    signature: Signature,
    catalog: Arc<WarehouseCatalog>,
    /// The session's (its temporary tables are facts too).
    vars: Arc<dyn SessionVars>,
    eval: FactsEval,
}

impl Debug for FactsFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FactsFn").field("name", &self.name).finish()
    }
}

impl PartialEq for FactsFn {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.catalog, &other.catalog)
    }
}
impl Eq for FactsFn {}
impl Hash for FactsFn {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for FactsFn {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        datafusion::common::internal_err!("{} is evaluated asynchronously", self.name)
    }
}

#[async_trait]
impl AsyncScalarUDFImpl for FactsFn {
    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let temp = self.vars.temp_catalog();
        let facts = Facts::load_with(&self.catalog, temp.as_deref()).await?;
        let rows = args.number_rows;
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            let scalars = args
                .args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Scalar(s) => Ok(s.clone()),
                    ColumnarValue::Array(array) => ScalarValue::try_from_array(array, row),
                })
                .collect::<Result<Vec<_>>>()?;
            out.push((self.eval)(&facts, &scalars));
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(
                datafusion::arrow::array::new_empty_array(&DataType::Utf8),
            ));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

fn utf8(v: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(v)
}

/// An identifier as PostgreSQL prints it in definitions (quoted when it must be).
pub fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// `pg_get_indexdef(index [, column, pretty])`: the CREATE INDEX of a primary-key index, or
/// the name of its `column`-th key column.
fn indexdef(facts: &Facts, args: &[ScalarValue]) -> ScalarValue {
    let Some(oid) = args.first().and_then(int_arg) else {
        return utf8(None);
    };
    let Some(r) = facts.relation_of_key(oid as i32) else {
        return utf8(None);
    };
    if r.index_oid() != oid as i32 {
        return utf8(None);
    }
    let keys: Vec<&str> = r.table.primary_keys.iter().map(String::as_str).collect();
    let column = args.get(1).and_then(int_arg).unwrap_or(0);
    if column > 0 {
        return utf8(keys.get(column as usize - 1).map(|k| quote_ident(k)));
    }
    let columns: Vec<String> = keys.iter().map(|k| quote_ident(k)).collect();
    utf8(Some(format!(
        "CREATE UNIQUE INDEX {} ON {}.{} USING btree ({})",
        quote_ident(&r.key_name()),
        quote_ident(&r.schema),
        quote_ident(&r.name),
        columns.join(", ")
    )))
}

/// `pg_get_constraintdef(constraint [, pretty])`.
fn constraintdef(facts: &Facts, args: &[ScalarValue]) -> ScalarValue {
    let Some(oid) = args.first().and_then(int_arg) else {
        return utf8(None);
    };
    match facts.relation_of_key(oid as i32) {
        Some(r) if r.constraint_oid() == oid as i32 => {
            let columns: Vec<String> = r
                .table
                .primary_keys
                .iter()
                .map(|k| quote_ident(k))
                .collect();
            utf8(Some(format!("PRIMARY KEY ({})", columns.join(", "))))
        }
        _ => utf8(None),
    }
}

/// `obj_description(oid [, catalog])`: a table's comment.
fn obj_description(facts: &Facts, args: &[ScalarValue]) -> ScalarValue {
    let Some(oid) = args.first().and_then(int_arg) else {
        return utf8(None);
    };
    if let Some(catalog) = args.get(1).and_then(text_arg)
        && catalog != "pg_class"
    {
        return utf8(None);
    }
    utf8(
        facts
            .relation(oid as i32)
            .and_then(|r| r.table.comment.clone())
            .or_else(|| facts.view(oid as i32).and_then(|v| v.def.comment.clone())),
    )
}

/// `pg_get_viewdef(view [, pretty | wrap column])`: the view's query as tarn keeps it (as
/// written, not reprinted as PostgreSQL does). The view by OID, or by name as text (a
/// qualified name, or the view of that name in `public` first, then in any schema).
fn viewdef(facts: &Facts, args: &[ScalarValue]) -> ScalarValue {
    let view = match args.first() {
        Some(ScalarValue::Utf8(Some(name)) | ScalarValue::LargeUtf8(Some(name))) => {
            let parts = split_qualified(name);
            let (schema, name) = match parts.as_slice() {
                [name] => (None, name.as_str()),
                [schema, name] | [_, schema, name] => (Some(schema.as_str()), name.as_str()),
                _ => return utf8(None),
            };
            facts
                .views
                .iter()
                .filter(|v| v.def.name == name && schema.is_none_or(|s| v.def.schema == s))
                .min_by_key(|v| v.def.schema != "public")
        }
        Some(other) => int_arg(other).and_then(|oid| facts.view(oid as i32)),
        None => None,
    };
    utf8(view.map(|v| v.definition()))
}

/// `col_description(table, column)`: a column's comment.
/// `pg_get_serial_sequence(table, column)`: `schema.sequence` of the sequence an identity or
/// SERIAL column takes its values from (its default's `nextval('…')`), NULL for other columns.
/// The table name reads as SQL names do (a schema, quotes); the column name literally.
fn serial_sequence(facts: &Facts, args: &[ScalarValue]) -> ScalarValue {
    let text = |v: Option<&ScalarValue>| match v {
        Some(ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s)) => {
            s.clone()
        }
        _ => None,
    };
    let (Some(table), Some(column)) = (text(args.first()), text(args.get(1))) else {
        return utf8(None);
    };
    let parts = split_qualified(&table);
    let (schema, name) = match parts.as_slice() {
        [name] => (None, name.as_str()),
        [schema, name] | [_, schema, name] => (Some(schema.as_str()), name.as_str()),
        _ => return utf8(None),
    };
    let relation = facts
        .relations
        .iter()
        .filter(|r| r.name == name && schema.is_none_or(|s| r.schema == s))
        .min_by_key(|r| r.schema != "public");
    let Some(relation) = relation else {
        return utf8(None);
    };
    let default = relation.table.core_options().default_expression(&column);
    utf8(default.and_then(nextval_target).map(
        |sequence| match split_qualified(&sequence).as_slice() {
            [schema, name] => format!("{}.{}", quote_ident(schema), quote_ident(name)),
            _ => format!(
                "{}.{}",
                quote_ident(&relation.schema),
                quote_ident(&sequence)
            ),
        },
    ))
}

/// The sequence name text of the `nextval('…')` call in a default expression.
fn nextval_target(sql: &str) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{
        Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Value, visit_expressions,
    };
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    let expr = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .ok()?;
    let mut found = None;
    let _ = visit_expressions(&expr, |e| {
        if let Expr::Function(f) = e
            && f.name.to_string().eq_ignore_ascii_case("nextval")
            && let FunctionArguments::List(list) = &f.args
            && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))) = list.args.first()
        {
            let mut arg = arg;
            while let Expr::Cast { expr, .. } = arg {
                arg = expr;
            }
            if let Expr::Value(v) = arg
                && let Value::SingleQuotedString(name) = &v.value
            {
                found = Some(name.clone());
                return std::ops::ControlFlow::Break(());
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    found
}

fn col_description(facts: &Facts, args: &[ScalarValue]) -> ScalarValue {
    let (Some(oid), Some(attnum)) = (
        args.first().and_then(int_arg),
        args.get(1).and_then(int_arg),
    ) else {
        return utf8(None);
    };
    utf8(facts.relation(oid as i32).and_then(|r| {
        r.table
            .fields
            .get((attnum - 1).max(0) as usize)
            .filter(|_| attnum >= 1)
            .and_then(|f| f.description.clone())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_read_as_postgres_reads_them() {
        let types: HashMap<String, i32> = [
            ("int4", 23),
            ("numeric", 1700),
            ("varchar", 1043),
            ("_int4", 1007),
            ("timestamptz", 1184),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(regtype(&types, "integer"), Some(23));
        assert_eq!(regtype(&types, "pg_catalog.int4"), Some(23));
        assert_eq!(regtype(&types, "numeric(6,2)"), Some(1700));
        assert_eq!(regtype(&types, "character varying(20)"), Some(1043));
        assert_eq!(regtype(&types, "int[]"), Some(1007));
        assert_eq!(regtype(&types, "timestamp with time zone"), Some(1184));
        assert_eq!(regtype(&types, "nosuchtype"), None);
    }

    #[test]
    fn qualified_names_split_outside_quotes() {
        assert_eq!(split_qualified("Public.Orders"), ["public", "orders"]);
        assert_eq!(split_qualified("\"a.b\".\"C\""), ["a.b", "C"]);
        assert_eq!(quote_ident("orders"), "orders");
        assert_eq!(quote_ident("Orders"), "\"Orders\"");
    }
}
