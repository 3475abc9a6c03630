//! What CREATE TABLE may store: every option tarn knows checked alone ([`check`]) and a new
//! table's options checked as a whole ([`check_table`]). An option tarn would store but not
//! honour is refused rather than ignored, so a typo or an unimplemented feature never passes
//! silently; values are read with the same parsers the readers use, so what is accepted here
//! is what the table's readers and writers understand. Each refusal says which kind it is
//! ([`OptionError`]), which the SQL layer turns into its SQLSTATE.

use std::collections::BTreeMap;

use crate::storage::spec::file_index;
use crate::storage::spec::options::dynamic_bucket::{
    self, ASSIGNER_PARALLELISM, INITIAL_BUCKETS, parse_max_buckets, parse_target,
};
use crate::storage::spec::options::expire::ExpireConfig;
use crate::storage::spec::options::merge::{
    AggFunc, AggNameError, MergeEngine, MergeOptions, keys,
};
use crate::storage::spec::options::partition::{self, PartitionExpireOptions};
use crate::storage::spec::options::tags::AutoTagOptions;
use crate::storage::spec::options::{self, ChangelogProducer, compaction, parse_size};
use crate::storage::spec::schema::TableSchema;

/// Why an option, or a table's options together, are refused.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionError {
    /// tarn cannot honour it.
    Unsupported(String),
    /// Its value is wrong.
    Invalid(String),
    /// It names a column the table does not have.
    UnknownColumn(String),
    /// The table it would make breaks Paimon's rules.
    InvalidDefinition(String),
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionError::Unsupported(m)
            | OptionError::Invalid(m)
            | OptionError::UnknownColumn(m)
            | OptionError::InvalidDefinition(m) => f.write_str(m),
        }
    }
}

fn unsupported(message: impl Into<String>) -> OptionError {
    OptionError::Unsupported(message.into())
}

/// Checks one option of a table tarn is about to create, alone: options tarn honours or
/// stores for other engines pass; anything else is refused.
pub fn check(key: &str, value: &str) -> Result<(), OptionError> {
    let invalid = |why: &str| {
        Err(OptionError::Invalid(format!(
            "invalid value '{value}' for table option '{key}': {why}"
        )))
    };
    let boolean = || match value.trim().to_lowercase().as_str() {
        "true" | "false" => Ok(()),
        _ => invalid("true or false"),
    };
    let aggregate = || match AggFunc::parse(value) {
        Ok(_) => Ok(()),
        Err(AggNameError::Unsupported(name)) => Err(unsupported(format!(
            "aggregate function '{name}' (table option '{key}') is not supported by tarn yet"
        ))),
        Err(AggNameError::Unknown(_)) => invalid(
            "Paimon's aggregate functions are sum, product, min, max, last_value, \
             last_non_null_value, first_value, first_non_null_value, listagg, bool_and, bool_or",
        ),
    };
    if let Some(inner) = key.strip_prefix(options::FIELDS_PREFIX)
        && key != keys::DEFAULT_AGGREGATE_FUNCTION
    {
        // `fields.<column>.<what>` (`fields.<s1,s2>.sequence-group`): the columns are checked
        // against the table's in `check_table`.
        let suffix = inner.rsplit_once('.').map_or("", |(_, s)| s);
        return match suffix {
            keys::AGGREGATE_FUNCTION => aggregate(),
            keys::IGNORE_RETRACT | keys::DISTINCT => boolean(),
            keys::LIST_AGG_DELIMITER | keys::SEQUENCE_GROUP => Ok(()),
            _ => Err(unsupported(format!(
                "table option '{key}' is not supported by tarn (it would be stored but not \
                 honoured)"
            ))),
        };
    }
    match key {
        options::BUCKET => match value.trim().parse::<i32>() {
            Ok(n) if n >= 1 || n == -1 => Ok(()),
            Ok(-2) => Err(unsupported(
                "bucket = -2 (postponed bucket) is not supported: use a fixed bucket count or \
                 dynamic buckets (bucket = -1)",
            )),
            _ => invalid("a bucket count >= 1, or -1 (dynamic; bucket-unaware if append)"),
        },
        dynamic_bucket::TARGET_ROW_NUM => parse_target(value)
            .map(|_| ())
            .map_err(OptionError::Invalid),
        dynamic_bucket::MAX_BUCKETS => parse_max_buckets(value)
            .map(|_| ())
            .map_err(OptionError::Invalid),
        // Flink's bucket assigner parallelism: tarn assigns with one assigner.
        INITIAL_BUCKETS | ASSIGNER_PARALLELISM => match value.trim().parse::<i32>() {
            Ok(n) if n >= 1 => Ok(()),
            _ => invalid("a positive count"),
        },
        options::BUCKET_KEY | options::PARTITION_DEFAULT_NAME => Ok(()),
        options::MERGE_ENGINE => match MergeEngine::parse(value) {
            Some(_) => Ok(()),
            None => {
                invalid("merge engines are deduplicate, partial-update, aggregation, first-row")
            }
        },
        options::SEQUENCE_FIELD => {
            if value.split(',').any(|n| n.trim().is_empty()) {
                invalid("one or more column names, separated by commas")
            } else {
                Ok(())
            }
        }
        keys::SEQUENCE_FIELD_SORT_ORDER => match value.to_lowercase().as_str() {
            "ascending" | "descending" => Ok(()),
            _ => invalid("ascending or descending"),
        },
        keys::SEQUENCE_SNAPSHOT_ORDERING => match value.trim().to_lowercase().as_str() {
            "false" => Ok(()),
            "true" => Err(unsupported(
                "sequence.snapshot-ordering is not supported: tarn orders versions by \
                 sequence number",
            )),
            _ => invalid("true or false"),
        },
        options::COMMIT_LOG
        | keys::IGNORE_DELETE
        | keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE
        | keys::AGGREGATION_REMOVE_RECORD_ON_DELETE => boolean(),
        k if keys::IGNORE_DELETE_FALLBACKS.contains(&k) => boolean(),
        keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP => Ok(()),
        keys::DEFAULT_AGGREGATE_FUNCTION => aggregate(),
        options::FILE_FORMAT => match value.to_lowercase().as_str() {
            "parquet" => Ok(()),
            "orc" | "avro" => Err(unsupported(format!(
                "file.format '{value}' is not supported for writing: tarn writes Parquet"
            ))),
            _ => invalid("Paimon file formats are parquet, orc, avro"),
        },
        options::FILE_COMPRESSION => match value.to_lowercase().as_str() {
            "zstd" => Ok(()),
            _ => Err(unsupported(format!(
                "file.compression '{value}' is not supported: tarn writes zstd"
            ))),
        },
        options::FILE_COMPRESSION_ZSTD_LEVEL => match value.trim().parse::<i32>() {
            Ok(1..=22) => Ok(()),
            _ => invalid("a zstd level 1..22"),
        },
        options::WRITE_BUFFER_SIZE
        | options::TARGET_FILE_SIZE
        | options::MANIFEST_TARGET_FILE_SIZE => match parse_size(value) {
            Some(n) if n > 0 => Ok(()),
            _ => invalid("a size such as '64 mb'"),
        },
        options::MANIFEST_MERGE_MIN_COUNT => match value.trim().parse::<usize>() {
            Ok(n) if n >= 2 => Ok(()),
            _ => invalid("a count >= 2"),
        },
        options::CHANGELOG_PRODUCER => match value.to_lowercase().as_str() {
            "none" | "input" | "lookup" | "full-compaction" => Ok(()),
            _ => invalid("none, input, lookup or full-compaction"),
        },
        options::DELETION_VECTORS | options::PARTITION_LEGACY_NAME => {
            match value.to_lowercase().as_str() {
                "true" | "false" => Ok(()),
                _ => invalid("true or false"),
            }
        }
        options::SNAPSHOT_NUM_RETAINED_MIN
        | options::SNAPSHOT_NUM_RETAINED_MAX
        | options::SNAPSHOT_TIME_RETAINED
        | options::SNAPSHOT_EXPIRE_LIMIT => ExpireConfig::from_options(&alone(key, value))
            .map(|_| ())
            .map_err(|e| OptionError::Invalid(format!("table option '{key}': {e}"))),
        partition::EXPIRATION_TIME
        | partition::EXPIRATION_CHECK_INTERVAL
        | partition::EXPIRATION_STRATEGY
        | partition::EXPIRATION_MAX_NUM
        | partition::TIMESTAMP_FORMATTER
        | partition::TIMESTAMP_PATTERN => PartitionExpireOptions::check(key, value)
            .map_err(|e| OptionError::Invalid(format!("table option '{key}': {e}"))),
        k if k.starts_with(options::TAG_PREFIX) => AutoTagOptions::from_options(&alone(key, value))
            .map(|_| ())
            .map_err(|e| OptionError::Invalid(format!("table option '{key}': {e}"))),
        // Metadata tarn keeps for other engines and later features.
        compaction::keys::COMPACTION_TRIGGER
        | compaction::keys::STOP_TRIGGER
        | compaction::keys::NUM_LEVELS
        | compaction::keys::MAX_SIZE_AMPLIFICATION_PERCENT
        | compaction::keys::SIZE_RATIO
        | options::WRITE_ONLY
        | options::COMMENT => Ok(()),
        k if k.starts_with(options::FILE_INDEX_PREFIX) => file_index::check_option(k, value),
        k if options::TARN_COLUMN_PREFIXES
            .iter()
            .any(|p| k.starts_with(p)) =>
        {
            Err(unsupported(format!(
                "table option '{k}' is reserved for tarn"
            )))
        }
        _ => Err(unsupported(format!(
            "table option '{key}' is not supported by tarn (it would be stored but not honoured)"
        ))),
    }
}

/// `key = value` as a table's only option.
fn alone(key: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(key.to_owned(), value.to_owned())])
}

/// Checks the options of a table tarn is about to create as a whole (each value alone passed
/// [`check`] already), in this order: the bucket mode against the primary key, a changelog
/// producer's need of a primary key, the schema's own rules ([`TableSchema::validate`]), the
/// merge options (the columns they name, then whether tarn merges as Paimon does), the tag
/// options together, and the changelog options tarn can write ([`changelog_restriction`]).
pub fn check_table(schema: &TableSchema) -> Result<(), OptionError> {
    let has_key = schema.has_primary_key();
    match schema
        .option(options::BUCKET)
        .map(|b| b.trim().parse::<i32>())
    {
        Some(Ok(-1)) if has_key && schema.option(options::BUCKET_KEY).is_some() => {
            // Paimon's SchemaValidation: a dynamic bucket is chosen per key, not hashed.
            return Err(OptionError::InvalidDefinition(
                "a dynamic-bucket table (bucket = -1) cannot have a bucket-key".to_owned(),
            ));
        }
        Some(Ok(n)) if n >= 1 && !has_key => {
            return Err(unsupported(format!(
                "bucket = {n} on a table without a primary key is not supported: such tables \
                 are bucket-unaware append tables (bucket = -1)"
            )));
        }
        _ => {}
    }
    if !has_key
        && schema
            .option(options::CHANGELOG_PRODUCER)
            .is_some_and(|p| !p.eq_ignore_ascii_case("none"))
    {
        return Err(unsupported(
            "a changelog producer needs a primary key: an append table's rows are its \
             changelog",
        ));
    }
    schema
        .validate()
        .map_err(|e| OptionError::InvalidDefinition(e.to_string()))?;
    check_merge_options(schema)?;
    AutoTagOptions::from_options(&schema.options)
        .map_err(|e| OptionError::Invalid(format!("invalid tag options: {e}")))?;
    if PartitionExpireOptions::from_options(&schema.options)
        .map_err(|e| OptionError::Invalid(format!("invalid partition expiration options: {e}")))?
        .is_some()
        && schema.partition_keys.is_empty()
    {
        return Err(OptionError::Invalid(format!(
            "{} needs a partitioned table",
            partition::EXPIRATION_TIME
        )));
    }
    if let Some(reason) = changelog_restriction(schema) {
        return Err(unsupported(reason));
    }
    Ok(())
}

/// The merge options of a new table, checked as a whole: the columns they name exist, and
/// tarn reads and writes the result as Paimon does (with the reason otherwise).
fn check_merge_options(schema: &TableSchema) -> Result<(), OptionError> {
    let missing = |name: &str, key: &str| {
        OptionError::UnknownColumn(format!(
            "column \"{name}\" named in table option '{key}' does not exist"
        ))
    };
    let names =
        |list: &str| -> Vec<String> { list.split(',').map(|n| n.trim().to_owned()).collect() };
    let mut merging = false;
    for (key, value) in &schema.options {
        let named: Vec<String> = if key == keys::DEFAULT_AGGREGATE_FUNCTION {
            merging = true;
            Vec::new()
        } else if let Some(inner) = key.strip_prefix(options::FIELDS_PREFIX) {
            merging = true;
            let (columns, suffix) = inner.rsplit_once('.').unwrap_or((inner, ""));
            let mut named = names(columns);
            if suffix == keys::SEQUENCE_GROUP {
                named.extend(names(value));
            }
            named
        } else if key == options::SEQUENCE_FIELD
            || key == keys::PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP
        {
            merging = true;
            names(value)
        } else {
            if key == options::MERGE_ENGINE && !value.eq_ignore_ascii_case("deduplicate") {
                merging = true;
            }
            Vec::new()
        };
        for name in named {
            if schema.field(&name).is_none() {
                return Err(missing(&name, key));
            }
        }
    }
    if merging && !schema.has_primary_key() {
        return Err(OptionError::Invalid(
            "merge-engine, sequence.field and fields.* options need a primary key: a table \
             without one is an append table, whose rows never merge"
                .to_owned(),
        ));
    }
    MergeOptions::from_schema(schema)
        .map(|_| ())
        .map_err(|reason| OptionError::Invalid(format!("invalid merge options: {reason}")))
}

/// Why tarn cannot write tables of `schema` because of their changelog options, if it cannot.
pub fn changelog_restriction(schema: &TableSchema) -> Option<String> {
    let producer = match schema.core_options().changelog_producer() {
        Ok(ChangelogProducer::None) => return None,
        Ok(producer) => producer.name(),
        Err(other) => {
            return Some(format!(
                "changelog-producer '{other}' is not one of none, input, lookup, full-compaction"
            ));
        }
    };
    if !schema.has_primary_key() {
        return Some(format!(
            "changelog-producer '{producer}' needs a primary key (Paimon refuses it on append \
             tables)"
        ));
    }
    if producer != ChangelogProducer::Lookup.name()
        && MergeOptions::from_schema(schema).is_ok_and(|m| m.engine == MergeEngine::FirstRow)
    {
        return Some(format!(
            "changelog-producer '{producer}' cannot be used with merge-engine first-row (Paimon \
             allows only 'none' and 'lookup' there)"
        ));
    }
    if let Some(format) = schema.core_options().changelog_file_format()
        && !format.trim().eq_ignore_ascii_case("parquet")
    {
        return Some(format!(
            "tarn writes Parquet changelog files only, and the table sets changelog-file.format \
             '{format}'"
        ));
    }
    None
}
