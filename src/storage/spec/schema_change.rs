//! Schema evolution: the changes `ALTER TABLE` makes ([`SchemaChange`]) and the next
//! `schema-N` they make of the latest one ([`evolve`]), by Paimon's rules (Java's
//! `SchemaManager.generateTableSchema`) and tarn's own. Pure: writing the file, atomically and
//! ordered with the table's commits, is the warehouse's (`Warehouse::alter_table`).
//!
//! Paimon's rules: field ids are kept for life (data files are read by field id, so a renamed
//! column keeps its data and an added one reads NULL in older files), `highestFieldId` only
//! grows and the ids of dropped columns are never reused; added columns are nullable and go
//! last; partition columns never change; primary-key columns may be renamed (the key list is
//! rewritten) but not dropped nor retyped, and stay NOT NULL; `type`, `path`, `primary-key`
//! and `partition` never change, and once the table has a snapshot neither do Paimon's
//! immutable options ([`IMMUTABLE_OPTIONS`]).
//!
//! tarn's, stricter where Paimon would let a reader silently disagree with another:
//! - a column type changes only by an exact widening ([`widens`]: PostgreSQL's
//!   `smallint → integer`, `varchar(n) → varchar(m ≥ n)`, …), never by a cast that could
//!   lose or alter values (Paimon also allows `BIGINT → INT`; pyarrow and arrow-rs would read
//!   the overflowing values differently);
//! - `bucket` never changes (Paimon lets it change on a fixed-bucket table, but the files
//!   already written stay in the old buckets until a rescale overwrite, which tarn does not
//!   do);
//! - options are set only as `CREATE TABLE` accepts them ([`options::check`]) and the result
//!   is checked as a whole ([`options::check_table`]); an error the old schema had already (a
//!   table another engine made) does not block a change that does not touch it;
//! - the options that name columns follow them: a rename moves the per-column keys
//!   (`tarn.pg-type.<c>`, `fields.<c>.*`, `file-index.<type>.<c>.*`) and renames the column in
//!   the lists that name it (`bucket-key`, `sequence.field`, sequence groups,
//!   `file-index.<type>.columns`, ...); a drop removes the column's own options and takes it
//!   out of the file-index and `row-deduplicate-ignore-fields` lists (an index of a column that
//!   is gone serves nothing), and is refused while an option that gives it a role names it
//!   (`bucket-key`, `sequence.field`, sequence groups: change that option first);
//! - a default (`defaultValue`) is a literal Paimon's writers can cast from text to the
//!   column's type.

use std::collections::BTreeMap;

use crate::storage::spec::options::merge::keys;
use crate::storage::spec::options::{self, OptionError};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{DataField, PaimonType, TypeKind};

/// One change of a table's schema (Paimon's `SchemaChange`, top-level columns only).
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaChange {
    SetOption {
        key: String,
        value: String,
    },
    RemoveOption {
        key: String,
    },
    UpdateComment {
        comment: Option<String>,
    },
    /// A new column, last (before the partition columns when the table sets Paimon's
    /// `add-column-before-partition`); always nullable.
    AddColumn {
        name: String,
        data_type: PaimonType,
        comment: Option<String>,
    },
    RenameColumn {
        name: String,
        new_name: String,
    },
    DropColumn {
        name: String,
    },
    /// The column's new type (its nullability is kept).
    UpdateColumnType {
        name: String,
        data_type: PaimonType,
    },
    /// NOT NULL (`nullable: false`) or not. Paimon never checks the rows: whoever asks for
    /// NOT NULL has checked them.
    UpdateColumnNullability {
        name: String,
        nullable: bool,
    },
    UpdateColumnComment {
        name: String,
        comment: Option<String>,
    },
    /// The column's default: a literal as text (`web`, `42`, `2026-01-01`), which Paimon's
    /// writers cast to the column's type after stripping one pair of surrounding `'`.
    UpdateColumnDefault {
        name: String,
        default: Option<String>,
    },
}

/// Why a schema change is refused; each kind has its SQLSTATE above storage. The text is the
/// whole message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaChangeError {
    /// A column the change names does not exist (42703).
    #[error("{0}")]
    UndefinedColumn(String),
    /// A column the change would add or rename to exists already (42701).
    #[error("{0}")]
    DuplicateColumn(String),
    /// Paimon or tarn cannot make this change (0A000): key and partition columns, a type
    /// change that is no exact widening, an immutable option, the bucket count.
    #[error("{0}")]
    Unsupported(String),
    /// The change makes an invalid option value or schema (22023 / 42P16).
    #[error("{0}")]
    Invalid(String),
}

/// Options Paimon refuses to change once a table has a snapshot (Java's `@Immutable` options
/// of `CoreOptions`).
pub const IMMUTABLE_OPTIONS: &[&str] = &[
    "type",
    "bucket-key",
    "bucket-function.type",
    "data-file.path-directory",
    "merge-engine",
    "sequence.snapshot-ordering",
    "aggregation.remove-record-on-delete",
    "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group",
    "rowkind.field",
    "primary-key",
    "primary-key.nullable",
    "partition",
    "dynamic-bucket.initial-buckets",
    "force-lookup",
    "row-tracking.enabled",
    "data-evolution.enabled",
    "index-file-in-data-file-dir",
    "blob-field",
    "blob-descriptor-field",
    "blob-view-field",
    "pk-clustering-override",
];

/// Options no ALTER changes: what the table is and where it lives.
const FIXED_OPTIONS: &[&str] = &["type", "path", "primary-key", "partition"];

/// Paimon's option that places added columns before the partition columns.
const ADD_COLUMN_BEFORE_PARTITION: &str = "add-column-before-partition";

/// tarn's PostgreSQL type hints (`tarn.pg-type.<c>`), all of them on string columns.
const PG_TYPE_HINTS: &[&str] = &["uuid", "json", "jsonb"];

fn undefined(name: &str) -> SchemaChangeError {
    SchemaChangeError::UndefinedColumn(format!("column \"{name}\" does not exist"))
}

fn unsupported(message: impl Into<String>) -> SchemaChangeError {
    SchemaChangeError::Unsupported(message.into())
}

fn invalid(message: impl Into<String>) -> SchemaChangeError {
    SchemaChangeError::Invalid(message.into())
}

impl From<OptionError> for SchemaChangeError {
    fn from(e: OptionError) -> Self {
        match e {
            OptionError::Unsupported(m) => SchemaChangeError::Unsupported(m),
            OptionError::UnknownColumn(m) => SchemaChangeError::UndefinedColumn(m),
            OptionError::Invalid(m) | OptionError::InvalidDefinition(m) => {
                SchemaChangeError::Invalid(m)
            }
        }
    }
}

/// The schema after `changes` (applied in order, each to the previous one's result), as the
/// next version of `old`: id + 1, written at `now_millis`. `has_snapshots`: whether the table
/// has a snapshot (Paimon's immutable options may change only before the first).
pub fn evolve(
    old: &TableSchema,
    changes: &[SchemaChange],
    has_snapshots: bool,
    now_millis: i64,
) -> Result<TableSchema, SchemaChangeError> {
    let mut new = old.clone();
    new.id = old.id + 1;
    new.time_millis = now_millis;
    new.highest_field_id = old.highest_field_id.max(old.max_field_id());
    drop_stale_hints(&mut new);
    for change in changes {
        apply(&mut new, change, has_snapshots)?;
    }
    check_result(old, &new)?;
    Ok(new)
}

fn apply(
    schema: &mut TableSchema,
    change: &SchemaChange,
    has_snapshots: bool,
) -> Result<(), SchemaChangeError> {
    match change {
        SchemaChange::SetOption { key, value } => set_option(schema, key, value, has_snapshots),
        SchemaChange::RemoveOption { key } => remove_option(schema, key, has_snapshots),
        SchemaChange::UpdateComment { comment } => {
            schema.comment = comment.clone();
            Ok(())
        }
        SchemaChange::AddColumn {
            name,
            data_type,
            comment,
        } => add_column(schema, name, data_type, comment),
        SchemaChange::RenameColumn { name, new_name } => rename_column(schema, name, new_name),
        SchemaChange::DropColumn { name } => drop_column(schema, name),
        SchemaChange::UpdateColumnType { name, data_type } => {
            update_column_type(schema, name, data_type)
        }
        SchemaChange::UpdateColumnNullability { name, nullable } => {
            let is_key = schema.primary_keys.contains(name);
            let field = field_mut(schema, name)?;
            if *nullable && is_key {
                return Err(unsupported(format!(
                    "column \"{name}\" is in the primary key; Paimon keeps primary-key columns \
                     NOT NULL"
                )));
            }
            field.data_type.nullable = *nullable;
            Ok(())
        }
        SchemaChange::UpdateColumnComment { name, comment } => {
            field_mut(schema, name)?.description = comment.clone();
            Ok(())
        }
        SchemaChange::UpdateColumnDefault { name, default } => {
            let field = field_mut(schema, name)?;
            if let Some(text) = default {
                check_default(&field.data_type, text).map_err(|why| {
                    invalid(format!(
                        "default value '{text}' for column \"{name}\" of type {}: {why}",
                        field.data_type
                    ))
                })?;
            }
            field.default_value = default.clone();
            Ok(())
        }
    }
}

fn field_mut<'a>(
    schema: &'a mut TableSchema,
    name: &str,
) -> Result<&'a mut DataField, SchemaChangeError> {
    schema
        .fields
        .iter_mut()
        .find(|f| f.name == name)
        .ok_or_else(|| undefined(name))
}

/// Refuses a change of column `name`'s `what` ("rename it") when it is a partition or
/// primary-key column (`key`: whether primary-key columns are refused too).
fn check_not_key(
    schema: &TableSchema,
    name: &str,
    key: bool,
    what: &str,
) -> Result<(), SchemaChangeError> {
    if schema.partition_keys.iter().any(|k| k == name) {
        return Err(unsupported(format!(
            "column \"{name}\" is a partition column; Paimon cannot {what}"
        )));
    }
    if key && schema.primary_keys.iter().any(|k| k == name) {
        return Err(unsupported(format!(
            "column \"{name}\" is a primary-key column; Paimon cannot {what}"
        )));
    }
    Ok(())
}

// --- options -----------------------------------------------------------------------------------

fn set_option(
    schema: &mut TableSchema,
    key: &str,
    value: &str,
    has_snapshots: bool,
) -> Result<(), SchemaChangeError> {
    let old = schema.options.get(key).cloned();
    if old.as_deref() == Some(value) {
        return Ok(());
    }
    if FIXED_OPTIONS.contains(&key) {
        return Err(unsupported(format!(
            "table option '{key}' cannot be changed"
        )));
    }
    if let Some(column) = key.strip_prefix(options::PG_TYPE_PREFIX) {
        // tarn's own hint: set on a string column (ADD COLUMN of a uuid, json or jsonb).
        let field = schema.field(column).ok_or_else(|| undefined(column))?;
        if !PG_TYPE_HINTS.contains(&value) {
            return Err(invalid(format!(
                "invalid value '{value}' for table option '{key}': uuid, json or jsonb"
            )));
        }
        if !hint_fits(value, &field.data_type) {
            return Err(invalid(format!(
                "column \"{column}\" of type {} cannot hold {value} values",
                field.data_type
            )));
        }
        schema.options.insert(key.to_owned(), value.to_owned());
        return Ok(());
    }
    if let Some(column) = key.strip_prefix(options::DEFAULT_PREFIX) {
        // tarn's default expression (SQL text the SQL layer checked).
        schema.field(column).ok_or_else(|| undefined(column))?;
        if value.trim().is_empty() {
            return Err(invalid(format!("table option '{key}' needs an expression")));
        }
        schema.options.insert(key.to_owned(), value.to_owned());
        return Ok(());
    }
    if let Some(column) = key.strip_prefix(options::IDENTITY_PREFIX) {
        let field = schema.field(column).ok_or_else(|| undefined(column))?;
        if !IDENTITY_KINDS.contains(&value) {
            return Err(invalid(format!(
                "invalid value '{value}' for table option '{key}': always or by-default"
            )));
        }
        if !matches!(
            field.data_type.kind,
            TypeKind::SmallInt | TypeKind::Int | TypeKind::BigInt
        ) {
            return Err(invalid(format!(
                "identity column type must be smallint, integer, or bigint (column \"{column}\" \
                 is {})",
                field.data_type
            )));
        }
        schema.options.insert(key.to_owned(), value.to_owned());
        return Ok(());
    }
    if key == options::BUCKET {
        let same = |a: &str, b: &str| a.trim().parse::<i32>().ok() == b.trim().parse::<i32>().ok();
        let current = old.unwrap_or_else(|| options::DEFAULT_BUCKET.to_string());
        if same(&current, value) {
            return Ok(());
        }
        return Err(unsupported(format!(
            "changing 'bucket' ({current} to {value}) is not supported: the rows already written \
             would stay in their old buckets until Paimon's rescale overwrite, which tarn does \
             not do; create a table with the new bucket count and copy the rows (INSERT INTO \
             ... SELECT)"
        )));
    }
    if has_snapshots {
        check_alter_with_data(key, old.as_deref(), Some(value))?;
    }
    options::check(key, value)?;
    schema.options.insert(key.to_owned(), value.to_owned());
    Ok(())
}

fn remove_option(
    schema: &mut TableSchema,
    key: &str,
    has_snapshots: bool,
) -> Result<(), SchemaChangeError> {
    let Some(old) = schema.options.get(key).cloned() else {
        return Ok(());
    };
    if FIXED_OPTIONS.contains(&key) {
        return Err(unsupported(format!("table option '{key}' cannot be reset")));
    }
    if key == options::BUCKET {
        return Err(unsupported(
            "table option 'bucket' cannot be reset: the rows already written stay in their \
             buckets",
        ));
    }
    if has_snapshots && !is_tarn_column_option(key) {
        check_alter_with_data(key, Some(&old), None)?;
    }
    schema.options.remove(key);
    Ok(())
}

/// Paimon's checks of an option change on a table with snapshots (`new`: `None` for a reset).
fn check_alter_with_data(
    key: &str,
    old: Option<&str>,
    new: Option<&str>,
) -> Result<(), SchemaChangeError> {
    if IMMUTABLE_OPTIONS.contains(&key) {
        return Err(unsupported(format!(
            "table option '{key}' cannot be changed once the table has data (Paimon treats it \
             as immutable); create a new table with it and copy the rows"
        )));
    }
    let flag = |v: Option<&str>| v.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if key == options::DELETION_VECTORS && flag(old) != flag(new) {
        return Err(unsupported(
            "deletion-vectors.enabled cannot be changed once the table has data: files written \
             in the other mode would read duplicated or lost rows",
        ));
    }
    let ignore_delete = key == keys::IGNORE_DELETE || keys::IGNORE_DELETE_FALLBACKS.contains(&key);
    if ignore_delete && flag(old) && !flag(new) {
        return Err(unsupported(format!(
            "{key} cannot change from true to false once the table has data (Paimon refuses \
             it: deletes ignored so far would not come back)"
        )));
    }
    Ok(())
}

/// Whether tarn's hint `hint` suits a column of type `ty`.
fn hint_fits(hint: &str, ty: &PaimonType) -> bool {
    PG_TYPE_HINTS.contains(&hint) && matches!(ty.kind, TypeKind::VarChar(_))
}

/// Drops tarn's hints of columns that no longer exist or no longer hold strings (another
/// engine renamed, dropped or retyped them): a later column of that name must not inherit one.
fn drop_stale_hints(schema: &mut TableSchema) {
    let stale: Vec<String> = schema
        .options
        .iter()
        .filter_map(|(k, v)| {
            let column = k.strip_prefix(options::PG_TYPE_PREFIX)?;
            let fits = schema
                .field(column)
                .is_some_and(|f| hint_fits(v, &f.data_type));
            (!fits).then(|| k.clone())
        })
        .collect();
    for k in stale {
        schema.options.remove(&k);
    }
}

/// The kinds of identity column (`tarn.identity.<c>`): PostgreSQL's `GENERATED ALWAYS` and
/// `GENERATED BY DEFAULT`.
pub const IDENTITY_KINDS: &[&str] = &["always", "by-default"];

/// Whether `key` is one of tarn's per-column options (`tarn.pg-type.<c>`, ...).
fn is_tarn_column_option(key: &str) -> bool {
    options::TARN_COLUMN_PREFIXES
        .iter()
        .any(|p| key.starts_with(p))
}

/// What an option key says about columns.
enum ColumnOption<'a> {
    /// One of tarn's per-column options: its prefix (`tarn.pg-type.`, ...) and column.
    Tarn(&'static str, &'a str),
    /// `fields.<c1,c2>.<suffix>` (several columns only for `sequence-group`).
    Fields {
        columns: Vec<&'a str>,
        suffix: &'a str,
    },
    /// `file-index.<type>.<c>.<option>`.
    FileIndex {
        index: &'a str,
        column: &'a str,
        option: &'a str,
    },
    /// A value listing columns: `bucket-key`, `sequence.field`,
    /// `file-index.<type>.columns`, ... (`droppable`: a dropped column just leaves the list).
    List { droppable: bool },
    /// Nothing about columns.
    Other,
}

fn column_option(key: &str) -> ColumnOption<'_> {
    for prefix in options::TARN_COLUMN_PREFIXES {
        if let Some(column) = key.strip_prefix(prefix) {
            return ColumnOption::Tarn(prefix, column);
        }
    }
    if key != keys::DEFAULT_AGGREGATE_FUNCTION
        && let Some((columns, suffix)) = key
            .strip_prefix(options::FIELDS_PREFIX)
            .and_then(|inner| inner.rsplit_once('.'))
    {
        return ColumnOption::Fields {
            columns: columns.split(',').map(str::trim).collect(),
            suffix,
        };
    }
    if let Some(rest) = key.strip_prefix(options::FILE_INDEX_PREFIX) {
        let parts: Vec<&str> = rest.split('.').collect();
        return match parts[..] {
            [_, "columns"] => ColumnOption::List { droppable: true },
            [index, column, option] if index != "read" => ColumnOption::FileIndex {
                index,
                column,
                option,
            },
            _ => ColumnOption::Other,
        };
    }
    match key {
        options::BUCKET_KEY
        | options::SEQUENCE_FIELD
        | keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP => {
            ColumnOption::List { droppable: false }
        }
        options::CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS => {
            ColumnOption::List { droppable: true }
        }
        _ => ColumnOption::Other,
    }
}

/// The names of a list option's value (Java's split on `,`, trimmed).
fn names(list: &str) -> Vec<&str> {
    list.split(',').map(str::trim).collect()
}

/// `list` with `old` renamed to `new`, or `None` when it does not name `old`.
fn rename_in_list(list: &str, old: &str, new: &str) -> Option<String> {
    let names = names(list);
    names.contains(&old).then(|| {
        names
            .iter()
            .map(|n| if *n == old { new } else { n })
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// The options with column `old` renamed to `new` in keys and values.
fn rename_in_options(
    options: &BTreeMap<String, String>,
    old: &str,
    new: &str,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (key, value) in options {
        let (key, value) = match column_option(key) {
            ColumnOption::Tarn(prefix, c) if c == old => (format!("{prefix}{new}"), value.clone()),
            ColumnOption::Fields { columns, suffix } => {
                let key = if columns.contains(&old) {
                    let columns: Vec<&str> = columns
                        .iter()
                        .map(|c| if *c == old { new } else { c })
                        .collect();
                    options::field_key(&columns.join(","), suffix)
                } else {
                    key.clone()
                };
                let value = match suffix {
                    keys::SEQUENCE_GROUP => {
                        rename_in_list(value, old, new).unwrap_or_else(|| value.clone())
                    }
                    _ => value.clone(),
                };
                (key, value)
            }
            ColumnOption::FileIndex {
                index,
                column,
                option,
            } if column == old => (
                format!("{}{index}.{new}.{option}", options::FILE_INDEX_PREFIX),
                value.clone(),
            ),
            ColumnOption::List { .. } => (
                key.clone(),
                rename_in_list(value, old, new).unwrap_or_else(|| value.clone()),
            ),
            _ => (key.clone(), value.clone()),
        };
        out.insert(key, value);
    }
    out
}

/// Removes what the options say about dropped column `name`, or refuses when an option gives
/// it a role (change that option first).
fn drop_from_options(schema: &mut TableSchema, name: &str) -> Result<(), SchemaChangeError> {
    let in_use = |key: &str| {
        unsupported(format!(
            "column \"{name}\" is named in table option '{key}'; change or reset that option \
             first"
        ))
    };
    let mut out = BTreeMap::new();
    for (key, value) in &schema.options {
        match column_option(key) {
            ColumnOption::Tarn(_, c) if c == name => continue,
            ColumnOption::Fields { columns, suffix } => {
                let named = columns.contains(&name)
                    || (suffix == keys::SEQUENCE_GROUP && names(value).contains(&name));
                if named && (suffix == keys::SEQUENCE_GROUP || columns.len() > 1) {
                    return Err(in_use(key));
                }
                if named {
                    continue;
                }
            }
            ColumnOption::FileIndex { column, .. } if column == name => continue,
            ColumnOption::List { droppable } if names(value).contains(&name) => {
                if !droppable {
                    return Err(in_use(key));
                }
                let rest: Vec<&str> = names(value).into_iter().filter(|n| *n != name).collect();
                if rest.iter().all(|n| n.is_empty()) {
                    continue;
                }
                out.insert(key.clone(), rest.join(","));
                continue;
            }
            _ => {}
        }
        out.insert(key.clone(), value.clone());
    }
    schema.options = out;
    Ok(())
}

// --- columns -----------------------------------------------------------------------------------

fn add_column(
    schema: &mut TableSchema,
    name: &str,
    data_type: &PaimonType,
    comment: &Option<String>,
) -> Result<(), SchemaChangeError> {
    if schema.field(name).is_some() {
        return Err(SchemaChangeError::DuplicateColumn(format!(
            "column \"{name}\" already exists"
        )));
    }
    if !data_type.nullable {
        return Err(unsupported(format!(
            "column \"{name}\" cannot be added as NOT NULL: Paimon adds columns as nullable (rows \
             written before read NULL); add it, fill it, then SET NOT NULL"
        )));
    }
    if let Err(e) = data_type.to_arrow() {
        return Err(unsupported(format!("column \"{name}\": {e}")));
    }
    // Paimon's ids: the column's is the next one, then its nested fields' (each nested type's
    // fields before the field holding it, as Java's `ReassignFieldId` numbers them).
    let mut next = schema.highest_field_id;
    next += 1;
    let id = next;
    let mut data_type = data_type.clone();
    reassign_ids(&mut data_type, &mut next);
    schema.highest_field_id = next;
    let mut field = DataField::new(id, name, data_type);
    field.description = comment.clone();
    let before_partition = schema
        .option(ADD_COLUMN_BEFORE_PARTITION)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let at = schema
        .fields
        .iter()
        .position(|f| before_partition && schema.partition_keys.contains(&f.name))
        .unwrap_or(schema.fields.len());
    schema.fields.insert(at, field);
    // A hint of an earlier column of that name is not this column's.
    for prefix in options::TARN_COLUMN_PREFIXES {
        schema.options.remove(&format!("{prefix}{name}"));
    }
    Ok(())
}

/// Gives the fields nested in `ty` new ids after `next` (advancing it).
fn reassign_ids(ty: &mut PaimonType, next: &mut i32) {
    match &mut ty.kind {
        TypeKind::Row(fields) => {
            for f in fields {
                reassign_ids(&mut f.data_type, next);
                *next += 1;
                f.id = *next;
            }
        }
        TypeKind::Array(e) | TypeKind::Multiset(e) => reassign_ids(e, next),
        TypeKind::Map(k, v) => {
            reassign_ids(k, next);
            reassign_ids(v, next);
        }
        _ => {}
    }
}

fn rename_column(
    schema: &mut TableSchema,
    name: &str,
    new_name: &str,
) -> Result<(), SchemaChangeError> {
    if schema.field(name).is_none() {
        return Err(undefined(name));
    }
    check_not_key(schema, name, false, "rename it")?;
    if schema.field(new_name).is_some() {
        return Err(SchemaChangeError::DuplicateColumn(format!(
            "column \"{new_name}\" already exists"
        )));
    }
    if new_name.is_empty() {
        return Err(invalid("a column name cannot be empty"));
    }
    field_mut(schema, name)?.name = new_name.to_owned();
    for k in &mut schema.primary_keys {
        if k == name {
            *k = new_name.to_owned();
        }
    }
    schema.options = rename_in_options(&schema.options, name, new_name);
    Ok(())
}

fn drop_column(schema: &mut TableSchema, name: &str) -> Result<(), SchemaChangeError> {
    if schema.field(name).is_none() {
        return Err(undefined(name));
    }
    check_not_key(schema, name, true, "drop it")?;
    if schema.fields.len() == 1 {
        return Err(unsupported(format!(
            "column \"{name}\" is the table's only column; Paimon tables need at least one"
        )));
    }
    drop_from_options(schema, name)?;
    schema.fields.retain(|f| f.name != name);
    Ok(())
}

fn update_column_type(
    schema: &mut TableSchema,
    name: &str,
    data_type: &PaimonType,
) -> Result<(), SchemaChangeError> {
    let from = schema
        .field(name)
        .ok_or_else(|| undefined(name))?
        .data_type
        .clone();
    if from.kind == data_type.kind {
        return Ok(());
    }
    check_not_key(schema, name, true, "change its type")?;
    if !widens(&from.kind, &data_type.kind) {
        let to = data_type.with_nullable(true);
        return Err(unsupported(format!(
            "column \"{name}\" cannot change type from {} to {to}: tarn changes a column's type \
             only when every value converts exactly (smallint → integer → bigint, real → double \
             precision, smallint/integer → double precision, numeric with the same or more \
             integer and fraction digits, longer varchar or text, timestamps with more \
             fractional digits); add a new column and copy the values instead",
            from.with_nullable(true)
        )));
    }
    let field = field_mut(schema, name)?;
    field.data_type = data_type.with_nullable(from.nullable);
    let hint_key = format!("{}{name}", options::PG_TYPE_PREFIX);
    if let Some(hint) = schema.options.get(&hint_key)
        && !hint_fits(hint, data_type)
    {
        schema.options.remove(&hint_key);
    }
    Ok(())
}

/// Whether every value of type `from` converts exactly to type `to` (in Java, pyarrow and
/// arrow-rs alike): the widenings tarn lets a column's type change by.
pub fn widens(from: &TypeKind, to: &TypeKind) -> bool {
    use TypeKind::*;
    /// Decimal digits an integer type needs.
    fn digits(kind: &TypeKind) -> Option<u8> {
        match kind {
            TinyInt => Some(3),
            SmallInt => Some(5),
            Int => Some(10),
            BigInt => Some(19),
            _ => None,
        }
    }
    match (from, to) {
        (TinyInt, SmallInt | Int | BigInt | Float | Double) => true,
        (SmallInt, Int | BigInt | Float | Double) => true,
        (Int, BigInt | Double) => true,
        (Float, Double) => true,
        (TinyInt | SmallInt | Int | BigInt, Decimal { precision, scale }) => {
            digits(from).is_some_and(|d| precision - scale >= d)
        }
        (
            Decimal { precision, scale },
            Decimal {
                precision: p2,
                scale: s2,
            },
        ) => s2 >= scale && p2 - s2 >= precision - scale,
        (VarChar(n), VarChar(m)) | (VarBinary(n), VarBinary(m)) => m >= n,
        // More fractional digits, within Arrow's units: nanoseconds (precision above 6) hold
        // only the years 1677-2262, so a wider column could not hold every older value.
        (Timestamp(p), Timestamp(q)) | (TimestampLtz(p), TimestampLtz(q)) => {
            q >= p && (*q <= 6 || *p > 6)
        }
        _ => false,
    }
}

// --- defaults ----------------------------------------------------------------------------------

/// The value a `defaultValue` text stands for: one pair of surrounding `'` stripped, as Java's
/// `DefaultValueUtils` does before casting from STRING.
pub fn default_literal(text: &str) -> &str {
    match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        Some(inner) if text.len() >= 2 => inner,
        _ => text,
    }
}

/// Checks that `text` is a default Paimon's writers can cast to `ty` ([`default_literal`],
/// then a cast from STRING).
pub fn check_default(ty: &PaimonType, text: &str) -> Result<(), String> {
    let text = default_literal(text);
    let t = text.trim();
    let number = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err("not a number of that type".to_owned())
        }
    };
    match &ty.kind {
        TypeKind::Boolean => match t.to_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "1" | "f" | "false" | "n" | "no" | "0" => Ok(()),
            _ => Err("true or false".to_owned()),
        },
        TypeKind::TinyInt => number(t.parse::<i8>().is_ok()),
        TypeKind::SmallInt => number(t.parse::<i16>().is_ok()),
        TypeKind::Int => number(t.parse::<i32>().is_ok()),
        TypeKind::BigInt => number(t.parse::<i64>().is_ok()),
        TypeKind::Float => number(t.parse::<f32>().is_ok()),
        TypeKind::Double => number(t.parse::<f64>().is_ok()),
        TypeKind::Decimal { precision, scale } => {
            let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
            let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
            let plain = |s: &str| s.chars().all(|c| c.is_ascii_digit());
            if (whole.is_empty() && fraction.is_empty()) || !plain(whole) || !plain(fraction) {
                return Err("a decimal number such as 12.50".to_owned());
            }
            let integer_digits = whole.trim_start_matches('0').len();
            if integer_digits > usize::from(precision - scale) {
                return Err(format!(
                    "more than {} digits before the decimal point",
                    precision - scale
                ));
            }
            Ok(())
        }
        TypeKind::Char(n) | TypeKind::VarChar(n) => {
            if text.chars().count() > *n as usize {
                Err(format!("longer than {n} characters"))
            } else {
                Ok(())
            }
        }
        TypeKind::Binary(n) | TypeKind::VarBinary(n) => {
            if text.len() > *n as usize {
                Err(format!("longer than {n} bytes"))
            } else {
                Ok(())
            }
        }
        TypeKind::Date => chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
            .map(|_| ())
            .map_err(|_| "a date such as 2026-01-31".to_owned()),
        TypeKind::Time(_) => ["%H:%M:%S%.f", "%H:%M"]
            .iter()
            .any(|f| chrono::NaiveTime::parse_from_str(t, f).is_ok())
            .then_some(())
            .ok_or_else(|| "a time such as 12:30:00".to_owned()),
        TypeKind::Timestamp(_) | TypeKind::TimestampLtz(_) => {
            let datetime = [
                "%Y-%m-%d %H:%M:%S%.f",
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%d %H:%M",
            ]
            .iter()
            .any(|f| chrono::NaiveDateTime::parse_from_str(t, f).is_ok());
            let date = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").is_ok();
            (datetime || date)
                .then_some(())
                .ok_or_else(|| "a timestamp such as 2026-01-31 12:30:00".to_owned())
        }
        _ => Err("Paimon keeps defaults of atomic types only".to_owned()),
    }
}

// --- the result --------------------------------------------------------------------------------

/// The new schema passes Paimon's rules and tarn's option checks — or fails them only as the
/// old one did already (a table another engine made with options tarn would not create).
fn check_result(old: &TableSchema, new: &TableSchema) -> Result<(), SchemaChangeError> {
    if let Err(e) = new.validate() {
        let same = old.validate().err().map(|o| o.to_string()) == Some(e.to_string());
        if !same {
            return Err(invalid(e.to_string()));
        }
    }
    if let Err(e) = options::check_table(new)
        && options::check_table(old) != Err(e.clone())
    {
        return Err(e.into());
    }
    Ok(())
}

#[cfg(test)]
#[path = "schema_change_tests.rs"]
mod tests;
