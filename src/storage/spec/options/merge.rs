//! The merge options of a primary-key table, as its schema states them (Paimon's
//! `merge-engine`, `sequence.field`, `ignore-delete`, the options of partial-update and
//! aggregation, `fields.<f>.*`), parsed and checked: [`MergeOptions::from_schema`] gives the
//! options or the reason tarn cannot read such a table correctly. Binding them to a read
//! layout, and merging, is lsm's (`lsm/merge_engine.rs`).

use std::collections::{BTreeMap, HashSet};

use crate::storage::spec::options;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{DataField, MAX_LENGTH, TypeKind};

/// Option keys of merge engines (besides `merge-engine` and `sequence.field`).
pub mod keys {
    pub const IGNORE_DELETE: &str = "ignore-delete";
    /// Older names of `ignore-delete`, read when it is absent (in this order, as Paimon does).
    pub const IGNORE_DELETE_FALLBACKS: [&str; 3] = [
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
    ];
    pub const SEQUENCE_FIELD_SORT_ORDER: &str = "sequence.field.sort-order";
    pub const SEQUENCE_SNAPSHOT_ORDERING: &str = "sequence.snapshot-ordering";
    pub const AGGREGATION_REMOVE_RECORD_ON_DELETE: &str = "aggregation.remove-record-on-delete";
    pub const PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE: &str =
        "partial-update.remove-record-on-delete";
    pub const PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP: &str =
        "partial-update.remove-record-on-sequence-group";
    pub const DEFAULT_AGGREGATE_FUNCTION: &str = "fields.default-aggregate-function";
    /// `fields.<f>.<suffix>` options.
    pub const AGGREGATE_FUNCTION: &str = "aggregate-function";
    pub const IGNORE_RETRACT: &str = "ignore-retract";
    pub const LIST_AGG_DELIMITER: &str = "list-agg-delimiter";
    pub const DISTINCT: &str = "distinct";
    pub const SEQUENCE_GROUP: &str = "sequence-group";
}

/// Which merge engine a primary-key table uses (`merge-engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeEngine {
    /// The newest version wins.
    Deduplicate,
    /// The first version written stays.
    FirstRow,
    /// Each column takes its newest non-null value.
    PartialUpdate,
    /// Each column is aggregated over the versions (`fields.<f>.aggregate-function`).
    Aggregation,
}

impl MergeEngine {
    /// The engine Paimon calls `text` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_lowercase().as_str() {
            "deduplicate" => Some(MergeEngine::Deduplicate),
            "first-row" => Some(MergeEngine::FirstRow),
            "partial-update" => Some(MergeEngine::PartialUpdate),
            "aggregation" => Some(MergeEngine::Aggregation),
            _ => None,
        }
    }
}

/// Aggregate functions of the aggregation engine (and of partial-update's sequence groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    Sum,
    Product,
    Min,
    Max,
    LastValue,
    LastNonNullValue,
    FirstValue,
    FirstNonNullValue,
    ListAgg,
    BoolAnd,
    BoolOr,
    /// Primary-key columns: every version holds the same value.
    PrimaryKey,
}

/// Why a name is not an aggregate function tarn applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggNameError {
    /// One of Paimon's functions that tarn does not implement.
    Unsupported(String),
    /// Not a function Paimon knows.
    Unknown(String),
}

impl AggFunc {
    /// The function Paimon calls `name` (any case).
    pub fn parse(name: &str) -> Result<AggFunc, AggNameError> {
        Ok(match name.trim().to_lowercase().as_str() {
            "sum" => AggFunc::Sum,
            "product" => AggFunc::Product,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "last_value" => AggFunc::LastValue,
            "last_non_null_value" => AggFunc::LastNonNullValue,
            "first_value" => AggFunc::FirstValue,
            "first_non_null_value" | "first_not_null_value" => AggFunc::FirstNonNullValue,
            "listagg" => AggFunc::ListAgg,
            "bool_and" => AggFunc::BoolAnd,
            "bool_or" => AggFunc::BoolOr,
            "primary_key" => AggFunc::PrimaryKey,
            known @ ("collect"
            | "merge_map"
            | "merge_map_with_keytime"
            | "nested_update"
            | "nested_partial_update"
            | "hll_sketch"
            | "theta_sketch"
            | "rbm32"
            | "rbm64") => return Err(AggNameError::Unsupported(known.to_owned())),
            other => return Err(AggNameError::Unknown(other.to_owned())),
        })
    }

    /// Whether a `-U`/`-D` version can be taken back out of the aggregate (what
    /// [`MergeFunction`]'s retraction implements; the others fail unless the column has
    /// `fields.<f>.ignore-retract`).
    pub fn can_retract(self) -> bool {
        matches!(
            self,
            AggFunc::PrimaryKey
                | AggFunc::LastValue
                | AggFunc::LastNonNullValue
                | AggFunc::Sum
                | AggFunc::Product
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Sum => "sum",
            AggFunc::Product => "product",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::LastValue => "last_value",
            AggFunc::LastNonNullValue => "last_non_null_value",
            AggFunc::FirstValue => "first_value",
            AggFunc::FirstNonNullValue => "first_non_null_value",
            AggFunc::ListAgg => "listagg",
            AggFunc::BoolAnd => "bool_and",
            AggFunc::BoolOr => "bool_or",
            AggFunc::PrimaryKey => "primary_key",
        }
    }
}

/// How one column aggregates.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldAgg {
    pub func: AggFunc,
    /// `fields.<f>.ignore-retract`: `-U`/`-D` versions leave the column as it is.
    pub ignore_retract: bool,
    /// listagg's `fields.<f>.list-agg-delimiter` (default `,`).
    pub delimiter: String,
    /// listagg's `fields.<f>.distinct`: tokens already in the list are not added again.
    pub distinct: bool,
}

/// A partial-update sequence group: `fields.<s1,s2>.sequence-group = <f1,f2>`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SequenceGroup {
    pub(crate) sequence: Vec<String>,
    pub(crate) protected: Vec<String>,
}

/// A table's merge options, as its schema states them.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeOptions {
    pub engine: MergeEngine,
    /// `ignore-delete` (deduplicate, first-row, partial-update).
    pub ignore_delete: bool,
    /// `partial-update.remove-record-on-delete` or `aggregation.remove-record-on-delete`.
    pub remove_record_on_delete: bool,
    /// `sequence.field`: columns ordering versions before `_SEQUENCE_NUMBER`.
    pub sequence_fields: Vec<String>,
    /// `sequence.field.sort-order = descending`.
    pub sequence_descending: bool,
    /// Aggregate function per column name (aggregation: every column; partial-update: the
    /// columns that have one).
    pub(crate) aggregates: BTreeMap<String, FieldAgg>,
    pub(crate) groups: Vec<SequenceGroup>,
    /// `partial-update.remove-record-on-sequence-group`: sequence fields whose group's `-D`
    /// removes the whole row.
    pub(crate) remove_on_group: Vec<String>,
}

impl MergeOptions {
    /// Whether the newest version by `_SEQUENCE_NUMBER` always wins (deduplicate without
    /// `sequence.field` or `ignore-delete`): writes need no merging.
    pub fn is_plain(&self) -> bool {
        self.engine == MergeEngine::Deduplicate
            && !self.ignore_delete
            && self.sequence_fields.is_empty()
    }

    /// The aggregate function of each column that has one (aggregation: every column, primary
    /// key and sequence fields included; partial-update: the columns given one), by name.
    pub fn aggregates(&self) -> impl Iterator<Item = (&str, &FieldAgg)> {
        self.aggregates.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether a partial-update table has sequence groups (`fields.<f>.sequence-group`).
    pub fn has_sequence_groups(&self) -> bool {
        !self.groups.is_empty()
    }

    /// The merge options of `schema`, or why tarn cannot read its tables correctly.
    pub fn from_schema(schema: &TableSchema) -> Result<Self, String> {
        let mut out = MergeOptions {
            engine: MergeEngine::Deduplicate,
            ignore_delete: false,
            remove_record_on_delete: false,
            sequence_fields: Vec::new(),
            sequence_descending: false,
            aggregates: BTreeMap::new(),
            groups: Vec::new(),
            remove_on_group: Vec::new(),
        };
        if !schema.has_primary_key() {
            return Ok(out);
        }
        out.engine = match schema.option(options::MERGE_ENGINE) {
            None => MergeEngine::Deduplicate,
            Some(text) => MergeEngine::parse(text).ok_or_else(|| {
                format!(
                    "merge-engine '{}' is not one of deduplicate, first-row, partial-update, \
                     aggregation",
                    text.to_lowercase()
                )
            })?,
        };
        out.ignore_delete = match bool_option(schema, keys::IGNORE_DELETE)? {
            Some(v) => v,
            None => {
                let mut value = false;
                for key in keys::IGNORE_DELETE_FALLBACKS {
                    if let Some(v) = bool_option(schema, key)? {
                        value = v;
                        break;
                    }
                }
                value
            }
        };
        if bool_option(schema, keys::SEQUENCE_SNAPSHOT_ORDERING)? == Some(true) {
            return Err(format!(
                "{} orders versions by commit snapshot, which tarn cannot read yet",
                keys::SEQUENCE_SNAPSHOT_ORDERING
            ));
        }
        if let Some(text) = schema.option(options::SEQUENCE_FIELD) {
            for name in text.split(',').map(str::trim) {
                let field = schema.field(name).ok_or_else(|| {
                    format!("sequence.field '{name}' is not a column of the table")
                })?;
                if out.sequence_fields.iter().any(|s| s == name) {
                    return Err(format!("sequence.field '{name}' is listed twice"));
                }
                if !field.data_type.is_key_type() {
                    return Err(format!(
                        "sequence.field '{name}' is of type {}, which cannot order versions",
                        field.data_type
                    ));
                }
                if field_option(schema, name, keys::AGGREGATE_FUNCTION).is_some() {
                    return Err(format!(
                        "sequence.field '{name}' must not have an aggregate function"
                    ));
                }
                out.sequence_fields.push(name.to_owned());
            }
            if out.engine == MergeEngine::FirstRow {
                return Err(
                    "sequence.field cannot be used with merge-engine first-row (Paimon refuses \
                     it too)"
                        .to_owned(),
                );
            }
        }
        out.sequence_descending = match schema
            .option(keys::SEQUENCE_FIELD_SORT_ORDER)
            .map(str::to_lowercase)
            .as_deref()
        {
            None | Some("ascending") => false,
            Some("descending") => true,
            Some(other) => {
                return Err(format!(
                    "{} '{other}' is neither ascending nor descending",
                    keys::SEQUENCE_FIELD_SORT_ORDER
                ));
            }
        };
        match out.engine {
            MergeEngine::PartialUpdate => out.partial_update_options(schema)?,
            MergeEngine::Aggregation => out.aggregation_options(schema)?,
            MergeEngine::Deduplicate | MergeEngine::FirstRow => {}
        }
        Ok(out)
    }

    fn partial_update_options(&mut self, schema: &TableSchema) -> Result<(), String> {
        self.remove_record_on_delete =
            bool_option(schema, keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)?.unwrap_or(false);
        let mut grouped: HashSet<String> = HashSet::new();
        let mut claim = |name: &str, option: &str| -> Result<(), String> {
            if schema.field(name).is_none() {
                return Err(format!("{option}: '{name}' is not a column of the table"));
            }
            if schema.primary_keys.iter().any(|k| k == name) {
                return Err(format!(
                    "{option}: primary key column '{name}' cannot be in a sequence group"
                ));
            }
            if !grouped.insert(name.to_owned()) {
                return Err(format!(
                    "{option}: column '{name}' belongs to more than one sequence group"
                ));
            }
            Ok(())
        };
        for (key, value) in &schema.options {
            let Some(inner) = key
                .strip_prefix("fields.")
                .and_then(|k| k.strip_suffix(&format!(".{}", keys::SEQUENCE_GROUP)))
            else {
                continue;
            };
            let sequence: Vec<String> = inner.split(',').map(|s| s.trim().to_owned()).collect();
            let protected: Vec<String> = value.split(',').map(|s| s.trim().to_owned()).collect();
            for name in sequence.iter().chain(&protected) {
                claim(name, key)?;
            }
            for name in &sequence {
                let ty = schema.type_of(name);
                if !ty.is_key_type() {
                    return Err(format!(
                        "{key}: column '{name}' of type {ty} cannot order a sequence group"
                    ));
                }
            }
            self.groups.push(SequenceGroup {
                sequence,
                protected,
            });
        }
        if let Some(text) = schema.option(keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP) {
            for name in text.split(',').map(str::trim) {
                if !self
                    .groups
                    .iter()
                    .any(|g| g.sequence.iter().any(|s| s == name))
                {
                    return Err(format!(
                        "{}: '{name}' is not the sequence field of a sequence group",
                        keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP
                    ));
                }
                self.remove_on_group.push(name.to_owned());
            }
        }
        if self.ignore_delete && self.remove_record_on_delete {
            return Err(format!(
                "{} and {} contradict each other",
                keys::IGNORE_DELETE,
                keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE
            ));
        }
        if self.ignore_delete && !self.remove_on_group.is_empty() {
            return Err(format!(
                "{} and {} contradict each other",
                keys::IGNORE_DELETE,
                keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP
            ));
        }
        if self.remove_record_on_delete && !self.groups.is_empty() {
            return Err(format!(
                "{} and sequence groups contradict each other",
                keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE
            ));
        }
        for field in &schema.fields {
            let name = field.name.as_str();
            if self
                .groups
                .iter()
                .any(|g| g.sequence.iter().any(|s| s == name))
            {
                continue; // sequence fields of groups do not aggregate
            }
            if schema.primary_keys.iter().any(|k| k == name) {
                self.aggregates
                    .insert(name.to_owned(), field_agg(schema, field, "primary_key")?);
                continue;
            }
            let Some(func) = field_option(schema, name, keys::AGGREGATE_FUNCTION)
                .or_else(|| schema.option(keys::DEFAULT_AGGREGATE_FUNCTION))
            else {
                continue;
            };
            let protected = self
                .groups
                .iter()
                .any(|g| g.protected.iter().any(|p| p == name));
            if func != "last_non_null_value" && !protected {
                return Err(format!(
                    "partial-update column '{name}' has aggregate function '{func}' but no \
                     sequence group (Paimon refuses this too)"
                ));
            }
            self.aggregates
                .insert(name.to_owned(), field_agg(schema, field, func)?);
        }
        Ok(())
    }

    fn aggregation_options(&mut self, schema: &TableSchema) -> Result<(), String> {
        self.remove_record_on_delete =
            bool_option(schema, keys::AGGREGATION_REMOVE_RECORD_ON_DELETE)?.unwrap_or(false);
        for field in &schema.fields {
            let name = field.name.as_str();
            let func = if self.sequence_fields.iter().any(|s| s == name) {
                "last_value"
            } else if schema.primary_keys.iter().any(|k| k == name) {
                "primary_key"
            } else {
                field_option(schema, name, keys::AGGREGATE_FUNCTION)
                    .or_else(|| schema.option(keys::DEFAULT_AGGREGATE_FUNCTION))
                    .unwrap_or("last_non_null_value")
            };
            self.aggregates
                .insert(name.to_owned(), field_agg(schema, field, func)?);
        }
        Ok(())
    }
}

/// Option `key` of `schema` as a boolean (`true`/`false`, any case).
fn bool_option(schema: &TableSchema, key: &str) -> Result<Option<bool>, String> {
    match schema.option(key) {
        None => Ok(None),
        Some(v) if v.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(format!("option {key} = '{v}' is not a boolean")),
    }
}

/// `fields.<field>.<suffix>`.
fn field_option<'a>(schema: &'a TableSchema, field: &str, suffix: &str) -> Option<&'a str> {
    schema.option(&options::field_key(field, suffix))
}

/// The aggregate `name` for `field`, or why tarn cannot apply it.
fn field_agg(schema: &TableSchema, field: &DataField, name: &str) -> Result<FieldAgg, String> {
    let column = &field.name;
    let func = match AggFunc::parse(name) {
        Ok(func) => func,
        Err(AggNameError::Unsupported(known)) => {
            return Err(format!(
                "aggregate function '{known}' (column '{column}') is not supported by tarn yet"
            ));
        }
        Err(AggNameError::Unknown(other)) => {
            return Err(format!(
                "'{other}' (column '{column}') is not an aggregate function Paimon knows"
            ));
        }
    };
    let ty = &field.data_type;
    let numeric = matches!(
        ty.kind,
        TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Float
            | TypeKind::Double
            | TypeKind::Decimal { .. }
    );
    let fits = match func {
        AggFunc::Sum | AggFunc::Product => numeric,
        AggFunc::Min | AggFunc::Max => ty.is_key_type(),
        AggFunc::ListAgg => ty.kind == TypeKind::VarChar(MAX_LENGTH),
        AggFunc::BoolAnd | AggFunc::BoolOr => ty.kind == TypeKind::Boolean,
        _ => true,
    };
    if !fits {
        return Err(format!(
            "aggregate function '{}' cannot aggregate column '{column}' of type {ty}",
            func.name()
        ));
    }
    let ignore_retract =
        bool_option(schema, &options::field_key(column, keys::IGNORE_RETRACT))?.unwrap_or(false);
    if ignore_retract
        && bool_option(schema, keys::AGGREGATION_REMOVE_RECORD_ON_DELETE)?.unwrap_or(false)
    {
        return Err(format!(
            "{} and fields.{column}.{} contradict each other",
            keys::AGGREGATION_REMOVE_RECORD_ON_DELETE,
            keys::IGNORE_RETRACT
        ));
    }
    Ok(FieldAgg {
        func,
        ignore_retract,
        delimiter: field_option(schema, column, keys::LIST_AGG_DELIMITER)
            .unwrap_or(",")
            .to_owned(),
        distinct: bool_option(schema, &options::field_key(column, keys::DISTINCT))?
            .unwrap_or(false),
    })
}
