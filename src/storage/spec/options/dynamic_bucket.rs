//! The options of Paimon's dynamic bucket mode (`bucket = -1` on a primary-key table): how
//! many keys a bucket takes and how many buckets a partition may have, with Java's defaults
//! and limits. Assigning keys by them is `write/dynamic_bucket.rs`.

use crate::storage::spec::schema::TableSchema;

/// Keys a bucket takes before new keys open another (Java `dynamic-bucket.target-row-num`).
pub const TARGET_ROW_NUM: &str = "dynamic-bucket.target-row-num";
/// Most buckets per partition, -1 unlimited (Java `dynamic-bucket.max-buckets`).
pub const MAX_BUCKETS: &str = "dynamic-bucket.max-buckets";
/// Java's default `dynamic-bucket.target-row-num`.
pub const DEFAULT_TARGET_ROW_NUM: u64 = 2_000_000;
/// The highest `max-buckets` pypaimon accepts (`Short.MAX_VALUE + 1`).
pub const MAX_BUCKETS_LIMIT: i32 = i16::MAX as i32 + 1;

/// How new keys are placed (the table's options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssignOptions {
    /// A bucket takes new keys while it holds fewer than this many.
    pub target_row_num: u64,
    /// Most buckets per partition (`None`: unlimited).
    pub max_buckets: Option<i32>,
}

impl Default for AssignOptions {
    fn default() -> Self {
        Self {
            target_row_num: DEFAULT_TARGET_ROW_NUM,
            max_buckets: None,
        }
    }
}

impl AssignOptions {
    /// The options of `schema`, or why they are invalid.
    pub fn from_schema(schema: &TableSchema) -> Result<Self, String> {
        let mut out = Self::default();
        if let Some(v) = schema.option(TARGET_ROW_NUM) {
            out.target_row_num = parse_target(v)?;
        }
        if let Some(v) = schema.option(MAX_BUCKETS) {
            out.max_buckets = parse_max_buckets(v)?;
        }
        Ok(out)
    }
}

/// `dynamic-bucket.target-row-num`: a positive count.
pub fn parse_target(value: &str) -> Result<u64, String> {
    match value.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "{TARGET_ROW_NUM} must be a positive number of rows, not '{value}'"
        )),
    }
}

/// `dynamic-bucket.max-buckets`: -1 (unlimited) or 1 ..= 32768.
pub fn parse_max_buckets(value: &str) -> Result<Option<i32>, String> {
    match value.trim().parse::<i32>() {
        Ok(-1) => Ok(None),
        Ok(n) if (1..=MAX_BUCKETS_LIMIT).contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "{MAX_BUCKETS} must be -1 (unlimited) or between 1 and {MAX_BUCKETS_LIMIT}, not \
             '{value}'"
        )),
    }
}

/// Flink's initial bucket count per assigner (`dynamic-bucket.initial-buckets`): stored for
/// other engines, tarn assigns with one assigner.
pub const INITIAL_BUCKETS: &str = "dynamic-bucket.initial-buckets";
/// Flink's bucket assigner parallelism (`dynamic-bucket.assigner-parallelism`): stored for
/// other engines.
pub const ASSIGNER_PARALLELISM: &str = "dynamic-bucket.assigner-parallelism";
