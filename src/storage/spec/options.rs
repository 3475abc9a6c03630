//! Table options: the one home of every option tarn reads or writes, as Paimon's `CoreOptions`
//! is Java's — each option's key (spelled as Paimon spells it), its default, and a typed
//! accessor that parses it ([`CoreOptions`]), plus the value grammars Paimon uses (sizes and
//! durations, `values.rs`) and [`check`] / [`check_table`], which refuse at CREATE TABLE what
//! tarn would store but not honour.
//!
//! Options read together have a typed view of their own here: merge engines ([`merge`]),
//! compaction ([`compaction`]), snapshot expiry ([`expire`]), automatic tags ([`tags`]),
//! partition expiration ([`partition`]) and dynamic buckets ([`dynamic_bucket`]); data-file indexes keep theirs next to their format
//! (`spec/file_index/options.rs`). The floors above read options only through here, so a key
//! is spelled, defaulted and parsed in one place, and what CREATE TABLE accepts is what the
//! readers understand.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::storage::spec::schema::TableSchema;

mod check;
pub mod compaction;
pub mod dynamic_bucket;
pub mod expire;
pub mod merge;
pub mod partition;
pub mod tags;
mod values;

pub use check::{OptionError, changelog_restriction, check, check_table};
pub use values::{parse_duration, parse_memory_size, parse_size};

// --- keys ------------------------------------------------------------------------------------

/// `bucket`: N > 0 fixed buckets, -1 dynamic (bucket-unaware for append tables), -2 postponed.
pub const BUCKET: &str = "bucket";
pub const BUCKET_KEY: &str = "bucket-key";
pub const MERGE_ENGINE: &str = "merge-engine";
pub const FILE_FORMAT: &str = "file.format";
pub const FILE_COMPRESSION: &str = "file.compression";
/// The zstd level of the data files tarn writes.
pub const FILE_COMPRESSION_ZSTD_LEVEL: &str = "file.compression.zstd-level";
pub const WRITE_BUFFER_SIZE: &str = "write-buffer-size";
pub const TARGET_FILE_SIZE: &str = "target-file-size";
pub const CHANGELOG_PRODUCER: &str = "changelog-producer";
/// Paimon's `changelog-producer.row-deduplicate`: compaction changelogs leave out `-U`/`+U`
/// pairs whose values are equal.
pub const CHANGELOG_PRODUCER_ROW_DEDUPLICATE: &str = "changelog-producer.row-deduplicate";
/// Columns `changelog-producer.row-deduplicate` does not compare.
pub const CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS: &str =
    "changelog-producer.row-deduplicate-ignore-fields";
/// File name prefix of changelog files (Paimon's default `changelog-`).
pub const CHANGELOG_FILE_PREFIX: &str = "changelog-file.prefix";
/// Format of changelog files (Paimon's default: `file.format`).
pub const CHANGELOG_FILE_FORMAT: &str = "changelog-file.format";
/// Paimon's automatic tags (see [`tags`] and `maintenance/auto_tag.rs`).
pub const TAG_AUTOMATIC_CREATION: &str = "tag.automatic-creation";
pub const TAG_CREATION_PERIOD: &str = "tag.creation-period";
pub const TAG_CREATION_PERIOD_DURATION: &str = "tag.creation-period-duration";
pub const TAG_CREATION_DELAY: &str = "tag.creation-delay";
pub const TAG_PERIOD_FORMATTER: &str = "tag.period-formatter";
pub const TAG_NUM_RETAINED_MAX: &str = "tag.num-retained-max";
pub const TAG_DEFAULT_TIME_RETAINED: &str = "tag.default-time-retained";
pub const TAG_TIME_EXPIRE_ENABLED: &str = "tag.time-expire-enabled";
pub const TAG_AUTOMATIC_COMPLETION: &str = "tag.automatic-completion";
pub const TAG_BATCH_CUSTOMIZED_NAME: &str = "tag.batch.customized-name";
/// Prefix of every automatic-tag option.
pub const TAG_PREFIX: &str = "tag.";
pub const SEQUENCE_FIELD: &str = "sequence.field";
pub const DELETION_VECTORS: &str = "deletion-vectors.enabled";
pub const MANIFEST_MERGE_MIN_COUNT: &str = "manifest.merge-min-count";
pub const MANIFEST_TARGET_FILE_SIZE: &str = "manifest.target-file-size";
pub const PARTITION_DEFAULT_NAME: &str = "partition.default-name";
/// Whether partition folders name values as Java's `toString` did (`true`, Paimon's default)
/// or by casting them to strings (`false`, what tarn writes).
pub const PARTITION_LEGACY_NAME: &str = "partition.legacy-name";
pub const SNAPSHOT_NUM_RETAINED_MIN: &str = "snapshot.num-retained.min";
pub const SNAPSHOT_NUM_RETAINED_MAX: &str = "snapshot.num-retained.max";
pub const SNAPSHOT_TIME_RETAINED: &str = "snapshot.time-retained";
pub const SNAPSHOT_EXPIRE_LIMIT: &str = "snapshot.expire.limit";
pub const CHANGELOG_NUM_RETAINED_MIN: &str = "changelog.num-retained.min";
pub const CHANGELOG_NUM_RETAINED_MAX: &str = "changelog.num-retained.max";
pub const CHANGELOG_TIME_RETAINED: &str = "changelog.time-retained";
pub const CONSUMER_EXPIRATION_TIME: &str = "consumer.expiration-time";
/// Paimon: "compactions and snapshot expiration will be skipped".
pub const WRITE_ONLY: &str = "write-only";
/// The table's comment, kept for other engines.
pub const COMMENT: &str = "comment";
/// Whether a server running a commit log (`--commit-log`) may acknowledge this table's
/// commits from it and fold them into fewer snapshots (`true`, the default), or makes each
/// commit its own snapshot (`false`: Paimon readers see every commit at once, time travel has
/// one version per commit).
pub const COMMIT_LOG: &str = "tarn.commit-log";
/// Prefix of tarn's per-column PostgreSQL type hints (`tarn.pg-type.<column>` = `uuid`,
/// `json`, `jsonb`): Paimon has no such types, the column is a STRING to every other engine.
pub const PG_TYPE_PREFIX: &str = "tarn.pg-type.";
/// Prefix of tarn's per-column default expressions (`tarn.default.<column>` = PostgreSQL SQL
/// text such as `now()` or `nextval('t_id_seq')`) — defaults Paimon's literal `defaultValue`
/// cannot hold. Other engines write NULL where tarn would evaluate the expression.
pub const DEFAULT_PREFIX: &str = "tarn.default.";
/// Prefix of tarn's identity columns (`tarn.identity.<column>` = `always` or `by-default`,
/// PostgreSQL's `GENERATED … AS IDENTITY`); the values come from the default's sequence.
pub const IDENTITY_PREFIX: &str = "tarn.identity.";
/// The prefixes of tarn's per-column options: each follows its column through a rename and
/// goes with it when it is dropped.
pub const TARN_COLUMN_PREFIXES: &[&str] = &[PG_TYPE_PREFIX, DEFAULT_PREFIX, IDENTITY_PREFIX];
/// Prefix of per-column options: `fields.<column>.<suffix>` (see [`field_key`]).
pub const FIELDS_PREFIX: &str = "fields.";
/// `fields.<column>.default-value`: the column's default, as other engines fill it.
pub const DEFAULT_VALUE: &str = "default-value";
/// Prefix of Paimon's data-file index options (`file-index.bloom-filter.columns`,
/// `file-index.bloom-filter.<column>.items` / `.fpp`; see `spec/file_index`).
pub const FILE_INDEX_PREFIX: &str = "file-index.";
pub const FILE_INDEX_BLOOM_FILTER_COLUMNS: &str = "file-index.bloom-filter.columns";
/// Largest file index kept in the manifest entry; bigger ones go to `<data file>.index`.
pub const FILE_INDEX_IN_MANIFEST_THRESHOLD: &str = "file-index.in-manifest-threshold";
/// Whether readers use file indexes to skip data files (Paimon's default: true).
pub const FILE_INDEX_READ_ENABLED: &str = "file-index.read.enabled";
/// Java keeps dynamic-bucket index files next to data files when true; tarn keeps them in
/// `index/`.
pub const INDEX_FILE_IN_DATA_FILE_DIR: &str = "index-file-in-data-file-dir";

// --- defaults --------------------------------------------------------------------------------

/// Paimon's `bucket` when unset.
pub const DEFAULT_BUCKET: i32 = -1;
/// Buckets of a primary-key table that does not say: tarn writes `bucket` = this into the
/// tables it creates.
pub const DEFAULT_PK_BUCKETS: i32 = 4;
/// Bytes a statement buffers before writing sorted runs (`write-buffer-size`; Paimon's own
/// default is 256 MiB, tarn keeps memory per writing statement lower).
pub const DEFAULT_WRITE_BUFFER_SIZE: usize = 64 * 1024 * 1024;
/// Paimon's `manifest.merge-min-count`.
pub const DEFAULT_MANIFEST_MERGE_MIN_COUNT: usize = 30;
/// Paimon's `manifest.target-file-size` (8 MiB).
pub const DEFAULT_MANIFEST_TARGET_FILE_SIZE: i64 = 8 * 1024 * 1024;
/// Paimon's `partition.default-name`: the folder name of a NULL partition value.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";
/// Paimon's `changelog-file.prefix`.
pub const DEFAULT_CHANGELOG_FILE_PREFIX: &str = "changelog-";
/// The zstd level tarn writes with unless `file.compression.zstd-level` says otherwise.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// The key of per-column option `suffix` of `column`: `fields.<column>.<suffix>`.
pub fn field_key(column: &str, suffix: &str) -> String {
    format!("{FIELDS_PREFIX}{column}.{suffix}")
}

// --- values ----------------------------------------------------------------------------------

/// `changelog-producer`: who writes a primary-key table's changelog files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangelogProducer {
    /// No changelog files (the default).
    None,
    /// The writer double-writes what it received (`write/changelog.rs`).
    Input,
    /// Compaction writes the changes it finds by looking keys up in the levels below.
    Lookup,
    /// Full compactions write the difference with the previous full compaction.
    FullCompaction,
}

impl ChangelogProducer {
    /// The producer Paimon calls `text` (any case, blanks around ignored).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        [
            ChangelogProducer::None,
            ChangelogProducer::Input,
            ChangelogProducer::Lookup,
            ChangelogProducer::FullCompaction,
        ]
        .into_iter()
        .find(|p| text.eq_ignore_ascii_case(p.name()))
    }

    pub fn name(self) -> &'static str {
        match self {
            ChangelogProducer::None => "none",
            ChangelogProducer::Input => "input",
            ChangelogProducer::Lookup => "lookup",
            ChangelogProducer::FullCompaction => "full-compaction",
        }
    }

    /// Whether compactions write this producer's changelog (`lookup`, `full-compaction`).
    pub fn at_compaction(self) -> bool {
        matches!(
            self,
            ChangelogProducer::Lookup | ChangelogProducer::FullCompaction
        )
    }
}

// --- typed accessors -------------------------------------------------------------------------

/// A table's options with a typed accessor per option tarn reads, each with its default
/// (Paimon's `CoreOptions`). Groups read together have their own views: merge engines
/// ([`merge::MergeOptions`]), compaction ([`compaction::CompactOptions`]), snapshot expiry
/// ([`expire::ExpireConfig`]), automatic tags ([`tags::AutoTagOptions`]), dynamic buckets
/// ([`dynamic_bucket::AssignOptions`]).
#[derive(Debug, Clone, Copy)]
pub struct CoreOptions<'a> {
    options: &'a BTreeMap<String, String>,
}

impl TableSchema {
    /// The schema's options, read through their typed accessors.
    pub fn core_options(&self) -> CoreOptions<'_> {
        CoreOptions::new(&self.options)
    }
}

impl<'a> CoreOptions<'a> {
    pub fn new(options: &'a BTreeMap<String, String>) -> Self {
        Self { options }
    }

    /// The value of `key` as stored.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.options.get(key).map(String::as_str)
    }

    /// Whether boolean option `key` is `true` (any case, blanks around ignored); unset or any
    /// other value is false.
    fn enabled(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// `bucket` ([`DEFAULT_BUCKET`] when unset or unreadable).
    pub fn bucket(&self) -> i32 {
        self.get(BUCKET)
            .and_then(|b| b.trim().parse().ok())
            .unwrap_or(DEFAULT_BUCKET)
    }

    /// `bucket-key`'s columns, when it names any.
    pub fn bucket_key(&self) -> Option<Vec<String>> {
        match self.get(BUCKET_KEY) {
            Some(keys) if !keys.trim().is_empty() => {
                Some(keys.split(',').map(|k| k.trim().to_owned()).collect())
            }
            _ => None,
        }
    }

    /// `file.format` as stored (Paimon's default, Parquet, when unset).
    pub fn file_format(&self) -> Option<&'a str> {
        self.get(FILE_FORMAT)
    }

    /// `file.compression.zstd-level` ([`DEFAULT_ZSTD_LEVEL`] when unset or unreadable).
    pub fn zstd_level(&self) -> i32 {
        self.get(FILE_COMPRESSION_ZSTD_LEVEL)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_ZSTD_LEVEL)
    }

    /// `write-buffer-size` ([`DEFAULT_WRITE_BUFFER_SIZE`] when unset or unreadable).
    pub fn write_buffer_size(&self) -> usize {
        self.get(WRITE_BUFFER_SIZE)
            .and_then(parse_size)
            .unwrap_or(DEFAULT_WRITE_BUFFER_SIZE)
    }

    /// `manifest.merge-min-count` ([`DEFAULT_MANIFEST_MERGE_MIN_COUNT`] when unset or
    /// unreadable; never below 2).
    pub fn manifest_merge_min_count(&self) -> usize {
        self.get(MANIFEST_MERGE_MIN_COUNT)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_MANIFEST_MERGE_MIN_COUNT)
            .max(2)
    }

    /// `manifest.target-file-size` in bytes ([`DEFAULT_MANIFEST_TARGET_FILE_SIZE`] when unset or
    /// unreadable).
    pub fn manifest_target_file_size(&self) -> i64 {
        self.get(MANIFEST_TARGET_FILE_SIZE)
            .and_then(parse_size)
            .map_or(DEFAULT_MANIFEST_TARGET_FILE_SIZE, |s| s as i64)
    }

    /// `partition.default-name` ([`DEFAULT_PARTITION_NAME`] when unset).
    pub fn partition_default_name(&self) -> &'a str {
        self.get(PARTITION_DEFAULT_NAME)
            .unwrap_or(DEFAULT_PARTITION_NAME)
    }

    /// `partition.legacy-name` (true unless it says `false`).
    pub fn legacy_partition_name(&self) -> bool {
        self.get(PARTITION_LEGACY_NAME)
            .map(|v| !v.eq_ignore_ascii_case("false"))
            .unwrap_or(true)
    }

    /// `deletion-vectors.enabled` (false when unset).
    pub fn deletion_vectors_enabled(&self) -> bool {
        self.enabled(DELETION_VECTORS)
    }

    /// `write-only`: no compaction, no expiry (false when unset).
    pub fn write_only(&self) -> bool {
        self.enabled(WRITE_ONLY)
    }

    /// `tarn.commit-log` (true unless set to false).
    pub fn commit_log(&self) -> bool {
        self.get(COMMIT_LOG)
            .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"))
    }

    /// `changelog-producer` ([`ChangelogProducer::None`] when unset); a value Paimon does not
    /// know comes back as the error, trimmed.
    pub fn changelog_producer(&self) -> Result<ChangelogProducer, &'a str> {
        match self.get(CHANGELOG_PRODUCER) {
            None => Ok(ChangelogProducer::None),
            Some(text) => ChangelogProducer::parse(text).ok_or(text.trim()),
        }
    }

    /// `changelog-producer.row-deduplicate` (false when unset).
    pub fn changelog_row_deduplicate(&self) -> bool {
        self.enabled(CHANGELOG_PRODUCER_ROW_DEDUPLICATE)
    }

    /// `changelog-producer.row-deduplicate-ignore-fields`: column names (none when unset).
    pub fn changelog_row_deduplicate_ignore_fields(&self) -> Vec<&'a str> {
        self.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS)
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .collect()
    }

    /// `changelog-file.prefix` ([`DEFAULT_CHANGELOG_FILE_PREFIX`] when unset).
    pub fn changelog_file_prefix(&self) -> &'a str {
        self.get(CHANGELOG_FILE_PREFIX)
            .unwrap_or(DEFAULT_CHANGELOG_FILE_PREFIX)
    }

    /// `changelog-file.format` as stored (`file.format` when unset).
    pub fn changelog_file_format(&self) -> Option<&'a str> {
        self.get(CHANGELOG_FILE_FORMAT)
    }

    /// `consumer.expiration-time`: consumers untouched this long are removed (never when
    /// unset), or why the value is not a duration.
    pub fn consumer_expiration_time(&self) -> Result<Option<Duration>, String> {
        self.get(CONSUMER_EXPIRATION_TIME)
            .map(|text| {
                parse_duration(text).map_err(|_| {
                    format!("table option {CONSUMER_EXPIRATION_TIME} = '{text}' is not a duration")
                })
            })
            .transpose()
    }

    /// `index-file-in-data-file-dir` (false when unset).
    pub fn index_file_in_data_file_dir(&self) -> bool {
        self.enabled(INDEX_FILE_IN_DATA_FILE_DIR)
    }

    /// tarn's PostgreSQL type hint of `column` (`tarn.pg-type.<column>`).
    pub fn pg_type(&self, column: &str) -> Option<&'a str> {
        self.get(&format!("{PG_TYPE_PREFIX}{column}"))
    }

    /// `fields.<column>.default-value`.
    pub fn default_value(&self, column: &str) -> Option<&'a str> {
        self.get(&field_key(column, DEFAULT_VALUE))
    }

    /// tarn's default expression of `column` (`tarn.default.<column>`).
    pub fn default_expression(&self, column: &str) -> Option<&'a str> {
        self.get(&format!("{DEFAULT_PREFIX}{column}"))
    }

    /// tarn's identity kind of `column` (`tarn.identity.<column>`: `always`, `by-default`).
    pub fn identity(&self, column: &str) -> Option<&'a str> {
        self.get(&format!("{IDENTITY_PREFIX}{column}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn accessors_default_as_documented() {
        let none = options(&[]);
        let o = CoreOptions::new(&none);
        assert_eq!(o.bucket(), -1);
        assert_eq!(o.bucket_key(), None);
        assert_eq!(o.zstd_level(), 1);
        assert_eq!(o.write_buffer_size(), 64 << 20);
        assert_eq!(o.manifest_merge_min_count(), 30);
        assert_eq!(o.manifest_target_file_size(), 8 << 20);
        assert_eq!(o.partition_default_name(), "__DEFAULT_PARTITION__");
        assert!(o.legacy_partition_name());
        assert!(!o.deletion_vectors_enabled() && !o.write_only());
        assert_eq!(o.changelog_producer(), Ok(ChangelogProducer::None));
        assert_eq!(o.changelog_file_prefix(), "changelog-");
        assert_eq!(o.consumer_expiration_time(), Ok(None));
    }

    #[test]
    fn accessors_read_what_is_set() {
        let set = options(&[
            ("bucket", " 8 "),
            ("bucket-key", "a, b"),
            ("write-buffer-size", "1 mb"),
            ("manifest.merge-min-count", "1"),
            ("partition.legacy-name", "FALSE"),
            ("deletion-vectors.enabled", "True"),
            ("write-only", " true"),
            ("changelog-producer", " Full-Compaction "),
            ("consumer.expiration-time", "1 h"),
            ("tarn.pg-type.id", "uuid"),
            ("fields.v.default-value", "7"),
        ]);
        let o = CoreOptions::new(&set);
        assert_eq!(o.bucket(), 8);
        assert_eq!(o.bucket_key(), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(o.write_buffer_size(), 1 << 20);
        assert_eq!(o.manifest_merge_min_count(), 2, "never below 2");
        assert!(!o.legacy_partition_name());
        assert!(o.deletion_vectors_enabled() && o.write_only());
        assert_eq!(
            o.changelog_producer(),
            Ok(ChangelogProducer::FullCompaction)
        );
        assert_eq!(
            o.consumer_expiration_time(),
            Ok(Some(Duration::from_secs(3600)))
        );
        assert_eq!(o.pg_type("id"), Some("uuid"));
        assert_eq!(o.default_value("v"), Some("7"));
        let odd = options(&[
            ("changelog-producer", " sometimes "),
            ("consumer.expiration-time", "soon"),
        ]);
        let o = CoreOptions::new(&odd);
        assert_eq!(o.changelog_producer(), Err("sometimes"));
        assert!(
            o.consumer_expiration_time()
                .unwrap_err()
                .contains("is not a duration")
        );
    }
}
