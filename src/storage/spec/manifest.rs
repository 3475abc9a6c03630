//! Paimon manifest files and manifest lists (Avro), read and written.
//!
//! A snapshot names two manifest lists (base and delta). A manifest list holds one
//! [`ManifestFileMeta`] per manifest file; a manifest file holds one [`ManifestEntry`] per data
//! file that a commit added or deleted. Every scan of a table reads these files, and every commit
//! writes them, so tarn needs both directions here, byte-compatible with Paimon Java and pypaimon.
//!
//! **Writing** produces what Paimon Java writes: the Avro schema Paimon's `AvroSchemaConverter`
//! derives from `ManifestEntry.SCHEMA` / `ManifestFileMeta.SCHEMA` (record
//! `org.apache.paimon.avro.generated.record`, nested records named `record_<FIELD>`, nullable
//! fields as `["null", T]` with default null, `_CREATION_TIME` as `timestamp-millis`), embedded
//! in the header as the same JSON text Java's `Schema.toString()` gives, with the `zstandard`
//! codec at level 1 (Paimon's defaults `manifest.compression = zstd`,
//! `file.compression.zstd-level = 1`). Whole files are built in memory: manifests are small.
//!
//! **Reading** goes by field name against whatever writer schema the file carries, as Paimon's
//! own Avro reader does: fields a file lacks (older writers) become `None`, fields tarn doesn't
//! know (newer writers, pypaimon's extra manifest-list fields) are skipped, record names are
//! ignored, and `int` is accepted where `long` is expected.
//!
//! Records are encoded from and decoded into the structs directly, without an intermediate
//! `apache_avro::types::Value` tree (about twice as fast to read, and no copies of every string
//! on write); `apache-avro` provides the block codecs (null, deflate, zstandard, plus
//! snappy/bzip2/xz when those crate features are on). The writer schema is parsed here from its
//! JSON because `apache_avro::Schema::parse_str` panics on some invalid names, and corrupt input
//! must yield [`StorageError::Avro`] or [`StorageError::Format`], never a panic. The tests check
//! the encoding against apache-avro's decoder, fastavro and pypaimon.

use std::borrow::Cow;
use std::collections::HashMap;
use std::str::FromStr;

use apache_avro::{Codec, ZstandardSettings};

use crate::storage::StorageError;

type Result<T> = std::result::Result<T, StorageError>;

/// The `_VERSION` Paimon writes into every manifest entry and manifest file meta. Java calls it a
/// permanent format identifier: it stays 2 when nullable fields are added.
pub const FORMAT_IDENTIFIER: i32 = 2;

/// A serialized empty `BinaryRow` (Java's `BinaryRow.EMPTY_ROW` through `serializeBinaryRow`):
/// arity 0 as a big-endian int, then one 8-byte word of null bits.
const EMPTY_ROW: [u8; 12] = [0; 12];

/// Codec name in the Avro header: Paimon's default `manifest.compression` is `zstd`, which its
/// Avro format maps to Avro's `zstandard` codec.
const CODEC_NAME: &str = "zstandard";
/// Paimon's default `file.compression.zstd-level`.
const ZSTD_LEVEL: u8 = 1;
/// Uncompressed bytes per Avro block before it is flushed (Java Avro's default sync interval).
const BLOCK_SIZE: usize = 64_000;
/// Nesting limit when skipping values of unknown fields (recursive writer schemas).
const MAX_DEPTH: u32 = 64;

macro_rules! stats_record {
    ($name:literal) => {
        concat!(
            r#"{"type":"record","name":""#,
            $name,
            r#"","fields":[{"name":"_MIN_VALUES","type":"bytes"},"#,
            r#"{"name":"_MAX_VALUES","type":"bytes"},"#,
            r#"{"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}"#
        )
    };
}

/// The Avro schema of manifest files, as Paimon Java writes it (`Schema.toString()` of
/// `AvroSchemaConverter.convertToSchema(ManifestEntry.MANIFEST_ROW_TYPE)`).
pub const MANIFEST_ENTRY_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":["#,
    r#"{"name":"_VERSION","type":"int"},"#,
    r#"{"name":"_KIND","type":"int"},"#,
    r#"{"name":"_PARTITION","type":"bytes"},"#,
    r#"{"name":"_BUCKET","type":"int"},"#,
    r#"{"name":"_TOTAL_BUCKETS","type":"int"},"#,
    r#"{"name":"_FILE","type":{"type":"record","name":"record__FILE","fields":["#,
    r#"{"name":"_FILE_NAME","type":"string"},"#,
    r#"{"name":"_FILE_SIZE","type":"long"},"#,
    r#"{"name":"_ROW_COUNT","type":"long"},"#,
    r#"{"name":"_MIN_KEY","type":"bytes"},"#,
    r#"{"name":"_MAX_KEY","type":"bytes"},"#,
    r#"{"name":"_KEY_STATS","type":"#,
    stats_record!("record__FILE__KEY_STATS"),
    r#"},"#,
    r#"{"name":"_VALUE_STATS","type":"#,
    stats_record!("record__FILE__VALUE_STATS"),
    r#"},"#,
    r#"{"name":"_MIN_SEQUENCE_NUMBER","type":"long"},"#,
    r#"{"name":"_MAX_SEQUENCE_NUMBER","type":"long"},"#,
    r#"{"name":"_SCHEMA_ID","type":"long"},"#,
    r#"{"name":"_LEVEL","type":"int"},"#,
    r#"{"name":"_EXTRA_FILES","type":{"type":"array","items":"string"}},"#,
    r#"{"name":"_CREATION_TIME","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},"#,
    r#"{"name":"_DELETE_ROW_COUNT","type":["null","long"],"default":null},"#,
    r#"{"name":"_EMBEDDED_FILE_INDEX","type":["null","bytes"],"default":null},"#,
    r#"{"name":"_FILE_SOURCE","type":["null","int"],"default":null},"#,
    r#"{"name":"_VALUE_STATS_COLS","type":["null",{"type":"array","items":"string"}],"default":null},"#,
    r#"{"name":"_EXTERNAL_PATH","type":["null","string"],"default":null},"#,
    r#"{"name":"_FIRST_ROW_ID","type":["null","long"],"default":null},"#,
    r#"{"name":"_WRITE_COLS","type":["null",{"type":"array","items":"string"}],"default":null},"#,
    r#"{"name":"_WRITE_COLS_SEQUENCES","type":["null",{"type":"array","items":"long"}],"default":null}"#,
    r#"]}}]}"#
);

/// The Avro schema of manifest lists, as Paimon Java writes it (`Schema.toString()` of
/// `AvroSchemaConverter.convertToSchema(withFormatIdentifier(ManifestFileMeta.SCHEMA))`).
pub const MANIFEST_FILE_META_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":["#,
    r#"{"name":"_VERSION","type":"int"},"#,
    r#"{"name":"_FILE_NAME","type":"string"},"#,
    r#"{"name":"_FILE_SIZE","type":"long"},"#,
    r#"{"name":"_NUM_ADDED_FILES","type":"long"},"#,
    r#"{"name":"_NUM_DELETED_FILES","type":"long"},"#,
    r#"{"name":"_PARTITION_STATS","type":"#,
    stats_record!("record__PARTITION_STATS"),
    r#"},"#,
    r#"{"name":"_SCHEMA_ID","type":"long"},"#,
    r#"{"name":"_MIN_BUCKET","type":["null","int"],"default":null},"#,
    r#"{"name":"_MAX_BUCKET","type":["null","int"],"default":null},"#,
    r#"{"name":"_MIN_LEVEL","type":["null","int"],"default":null},"#,
    r#"{"name":"_MAX_LEVEL","type":["null","int"],"default":null},"#,
    r#"{"name":"_MIN_ROW_ID","type":["null","long"],"default":null},"#,
    r#"{"name":"_MAX_ROW_ID","type":["null","long"],"default":null}"#,
    r#"]}"#
);

// ---------------------------------------------------------------------------------------------
// Data model
// ---------------------------------------------------------------------------------------------

/// Column statistics of a file or manifest (Java `SimpleStats`). Min and max are serialized
/// `BinaryRow`s (4-byte arity, then the row), kept opaque here.
#[derive(Debug, Clone, PartialEq)]
pub struct SimpleStats {
    pub min_values: Vec<u8>,
    pub max_values: Vec<u8>,
    /// Null count per column; Paimon always writes the array, so `None` only comes from
    /// unusual writers.
    pub null_counts: Option<Vec<Option<i64>>>,
}

impl SimpleStats {
    /// What Paimon writes for "no statistics" (Java `SimpleStats.EMPTY_STATS`): empty rows for
    /// min and max and an empty null-count array.
    pub fn empty() -> Self {
        Self {
            min_values: EMPTY_ROW.to_vec(),
            max_values: EMPTY_ROW.to_vec(),
            null_counts: Some(Vec::new()),
        }
    }
}

/// Whether a manifest entry adds or deletes its data file (`_KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    Add,
    Delete,
}

impl FileKind {
    /// The byte Paimon stores.
    pub fn to_byte(self) -> i32 {
        match self {
            Self::Add => 0,
            Self::Delete => 1,
        }
    }

    /// The kind for a stored byte.
    pub fn from_byte(value: i32) -> Option<Self> {
        match value {
            0 => Some(Self::Add),
            1 => Some(Self::Delete),
            _ => None,
        }
    }
}

/// Whether a data file came from a write or from compaction (`_FILE_SOURCE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileSource {
    Append,
    Compact,
}

impl FileSource {
    /// The byte Paimon stores.
    pub fn to_byte(self) -> i32 {
        match self {
            Self::Append => 0,
            Self::Compact => 1,
        }
    }

    /// The source for a stored byte.
    pub fn from_byte(value: i32) -> Option<Self> {
        match value {
            0 => Some(Self::Append),
            1 => Some(Self::Compact),
            _ => None,
        }
    }
}

/// Metadata of one data file (Java `DataFileMeta`, the `_FILE` record of a manifest entry).
#[derive(Debug, Clone, PartialEq)]
pub struct DataFileMeta {
    pub file_name: String,
    pub file_size: i64,
    pub row_count: i64,
    /// Serialized `BinaryRow` of the smallest key (empty row for append tables).
    pub min_key: Vec<u8>,
    pub max_key: Vec<u8>,
    pub key_stats: SimpleStats,
    pub value_stats: SimpleStats,
    pub min_sequence_number: i64,
    pub max_sequence_number: i64,
    pub schema_id: i64,
    pub level: i32,
    pub extra_files: Vec<String>,
    /// `_CREATION_TIME` as stored: milliseconds of a timezone-free timestamp. Paimon Java and
    /// pypaimon store the writer's local wall-clock time (`LocalDateTime.now()`) as if it were UTC.
    pub creation_time: Option<i64>,
    pub delete_row_count: Option<i64>,
    pub embedded_file_index: Option<Vec<u8>>,
    pub file_source: Option<FileSource>,
    /// Columns the value stats cover; `None` means all columns of the file's schema.
    pub value_stats_cols: Option<Vec<String>>,
    pub external_path: Option<String>,
    pub first_row_id: Option<i64>,
    pub write_cols: Option<Vec<String>>,
    /// Per-column maximum sequence numbers, positional with `write_cols` (Java field
    /// `_WRITE_COLS_SEQUENCES`).
    pub write_cols_sequences: Option<Vec<i64>>,
}

/// One record of a manifest file.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    pub kind: FileKind,
    /// Serialized `BinaryRow` of the partition values.
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    pub file: DataFileMeta,
}

/// One record of a manifest list: a manifest file and summaries of its entries.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFileMeta {
    pub file_name: String,
    pub file_size: i64,
    pub num_added_files: i64,
    pub num_deleted_files: i64,
    pub partition_stats: SimpleStats,
    pub schema_id: i64,
    pub min_bucket: Option<i32>,
    pub max_bucket: Option<i32>,
    pub min_level: Option<i32>,
    pub max_level: Option<i32>,
    pub min_row_id: Option<i64>,
    pub max_row_id: Option<i64>,
}

// ---------------------------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------------------------

/// Encodes a manifest file (Avro container, zstandard) holding `entries`.
pub fn write_manifest(entries: &[ManifestEntry]) -> Result<Vec<u8>> {
    write_container(MANIFEST_ENTRY_SCHEMA, entries, write_entry)
}

/// Decodes a manifest file written by Paimon Java, pypaimon or tarn.
pub fn read_manifest(bytes: &[u8]) -> Result<Vec<ManifestEntry>> {
    let file = AvroFile::open(bytes)?;
    let mut entries = Vec::new();
    file.for_each_record(|decoder, root| {
        entries.push(decoder.manifest_entry(root)?);
        Ok(())
    })?;
    Ok(entries)
}

/// Encodes a manifest list (Avro container, zstandard) holding `metas`.
pub fn write_manifest_list(metas: &[ManifestFileMeta]) -> Result<Vec<u8>> {
    write_container(MANIFEST_FILE_META_SCHEMA, metas, write_file_meta)
}

/// Decodes a manifest list written by Paimon Java, pypaimon or tarn.
pub fn read_manifest_list(bytes: &[u8]) -> Result<Vec<ManifestFileMeta>> {
    let file = AvroFile::open(bytes)?;
    let mut metas = Vec::new();
    file.for_each_record(|decoder, root| {
        metas.push(decoder.manifest_file_meta(root)?);
        Ok(())
    })?;
    Ok(metas)
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

pub(in crate::storage) fn avro_error(error: impl std::fmt::Display) -> StorageError {
    StorageError::Avro(error.to_string())
}

/// Writes the container the way Java's `DataFileWriter` does: a header whose metadata holds
/// only `avro.schema` (byte for byte Java's `Schema.toString()`) and `avro.codec`, then blocks of
/// records, each compressed with the codec and followed by the sync marker. Records are encoded
/// straight from the structs; the schema is fixed, so the encoder simply follows its field order.
pub(in crate::storage) fn write_container<T>(
    schema_json: &str,
    records: &[T],
    mut encode: impl FnMut(&mut Vec<u8>, &T),
) -> Result<Vec<u8>> {
    let marker = *uuid::Uuid::new_v4().as_bytes();
    let codec = Codec::Zstandard(ZstandardSettings::new(ZSTD_LEVEL));

    let mut out = Vec::with_capacity(schema_json.len() + 64);
    out.extend_from_slice(b"Obj\x01");
    write_long(&mut out, 2);
    for (key, value) in [
        ("avro.schema", schema_json.as_bytes()),
        ("avro.codec", CODEC_NAME.as_bytes()),
    ] {
        write_bytes(&mut out, key.as_bytes());
        write_bytes(&mut out, value);
    }
    write_long(&mut out, 0);
    out.extend_from_slice(&marker);

    let mut block = Vec::new();
    let mut count = 0i64;
    for (i, record) in records.iter().enumerate() {
        encode(&mut block, record);
        count += 1;
        if block.len() >= BLOCK_SIZE || i + 1 == records.len() {
            codec.compress(&mut block).map_err(avro_error)?;
            write_long(&mut out, count);
            write_bytes(&mut out, &block);
            out.extend_from_slice(&marker);
            block.clear();
            count = 0;
        }
    }
    Ok(out)
}

/// Avro's zig-zag varint encoding of a long (`int` uses the same).
pub(in crate::storage) fn write_long(out: &mut Vec<u8>, value: i64) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn write_int(out: &mut Vec<u8>, value: i32) {
    write_long(out, i64::from(value));
}

pub(in crate::storage) fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_long(out, bytes.len() as i64);
    out.extend_from_slice(bytes);
}

/// A `["null", T]` union: branch 0 for null, branch 1 and the value otherwise.
pub(in crate::storage) fn write_nullable<T: ?Sized>(
    out: &mut Vec<u8>,
    value: Option<&T>,
    write: impl FnOnce(&mut Vec<u8>, &T),
) {
    match value {
        None => write_long(out, 0),
        Some(value) => {
            write_long(out, 1);
            write(out, value);
        }
    }
}

fn write_opt_long(out: &mut Vec<u8>, value: Option<i64>) {
    write_nullable(out, value.as_ref(), |out, v| write_long(out, *v));
}

fn write_opt_int(out: &mut Vec<u8>, value: Option<i32>) {
    write_nullable(out, value.as_ref(), |out, v| write_int(out, *v));
}

fn write_opt_string(out: &mut Vec<u8>, value: Option<&str>) {
    write_nullable(out, value, |out, s| write_bytes(out, s.as_bytes()));
}

/// An array as one block (count, items) and the terminating empty block.
pub(in crate::storage) fn write_array<T>(
    out: &mut Vec<u8>,
    items: &[T],
    mut write: impl FnMut(&mut Vec<u8>, &T),
) {
    if !items.is_empty() {
        write_long(out, items.len() as i64);
        for item in items {
            write(out, item);
        }
    }
    write_long(out, 0);
}

fn write_strings(out: &mut Vec<u8>, items: &[String]) {
    write_array(out, items, |out, s| write_bytes(out, s.as_bytes()));
}

fn write_stats(out: &mut Vec<u8>, stats: &SimpleStats) {
    write_bytes(out, &stats.min_values);
    write_bytes(out, &stats.max_values);
    write_nullable(out, stats.null_counts.as_deref(), |out, counts| {
        write_array(out, counts, |out, count| write_opt_long(out, *count))
    });
}

/// One record of [`MANIFEST_ENTRY_SCHEMA`], fields in schema order.
fn write_entry(out: &mut Vec<u8>, entry: &ManifestEntry) {
    write_int(out, FORMAT_IDENTIFIER);
    write_int(out, entry.kind.to_byte());
    write_bytes(out, &entry.partition);
    write_int(out, entry.bucket);
    write_int(out, entry.total_buckets);
    let file = &entry.file;
    write_bytes(out, file.file_name.as_bytes());
    write_long(out, file.file_size);
    write_long(out, file.row_count);
    write_bytes(out, &file.min_key);
    write_bytes(out, &file.max_key);
    write_stats(out, &file.key_stats);
    write_stats(out, &file.value_stats);
    write_long(out, file.min_sequence_number);
    write_long(out, file.max_sequence_number);
    write_long(out, file.schema_id);
    write_int(out, file.level);
    write_strings(out, &file.extra_files);
    write_opt_long(out, file.creation_time);
    write_opt_long(out, file.delete_row_count);
    write_nullable(out, file.embedded_file_index.as_deref(), write_bytes);
    write_opt_int(out, file.file_source.map(FileSource::to_byte));
    write_nullable(out, file.value_stats_cols.as_deref(), write_strings);
    write_opt_string(out, file.external_path.as_deref());
    write_opt_long(out, file.first_row_id);
    write_nullable(out, file.write_cols.as_deref(), write_strings);
    write_nullable(out, file.write_cols_sequences.as_deref(), |out, seqs| {
        write_array(out, seqs, |out, seq| write_long(out, *seq))
    });
}

/// One record of [`MANIFEST_FILE_META_SCHEMA`], fields in schema order.
fn write_file_meta(out: &mut Vec<u8>, meta: &ManifestFileMeta) {
    write_int(out, FORMAT_IDENTIFIER);
    write_bytes(out, meta.file_name.as_bytes());
    write_long(out, meta.file_size);
    write_long(out, meta.num_added_files);
    write_long(out, meta.num_deleted_files);
    write_stats(out, &meta.partition_stats);
    write_long(out, meta.schema_id);
    write_opt_int(out, meta.min_bucket);
    write_opt_int(out, meta.max_bucket);
    write_opt_int(out, meta.min_level);
    write_opt_int(out, meta.max_level);
    write_opt_long(out, meta.min_row_id);
    write_opt_long(out, meta.max_row_id);
}

// ---------------------------------------------------------------------------------------------
// Reading: field names, compiled writer schema
// ---------------------------------------------------------------------------------------------

macro_rules! fields {
    ($($variant:ident = $name:literal,)*) => {
        /// A record field tarn knows, by its Avro name; resolved once per file.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Field {
            $($variant,)*
            /// A field tarn doesn't read (skipped).
            Other,
        }

        impl Field {
            fn from_name(name: &str) -> Self {
                match name {
                    $($name => Self::$variant,)*
                    _ => Self::Other,
                }
            }

            fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                    Self::Other => "(unknown)",
                }
            }
        }
    };
}

fields! {
    Version = "_VERSION",
    Kind = "_KIND",
    Partition = "_PARTITION",
    Bucket = "_BUCKET",
    TotalBuckets = "_TOTAL_BUCKETS",
    File = "_FILE",
    FileName = "_FILE_NAME",
    FileSize = "_FILE_SIZE",
    RowCount = "_ROW_COUNT",
    MinKey = "_MIN_KEY",
    MaxKey = "_MAX_KEY",
    KeyStats = "_KEY_STATS",
    ValueStats = "_VALUE_STATS",
    MinSequenceNumber = "_MIN_SEQUENCE_NUMBER",
    MaxSequenceNumber = "_MAX_SEQUENCE_NUMBER",
    SchemaId = "_SCHEMA_ID",
    Level = "_LEVEL",
    ExtraFiles = "_EXTRA_FILES",
    CreationTime = "_CREATION_TIME",
    DeleteRowCount = "_DELETE_ROW_COUNT",
    EmbeddedFileIndex = "_EMBEDDED_FILE_INDEX",
    Source = "_FILE_SOURCE",
    ValueStatsCols = "_VALUE_STATS_COLS",
    ExternalPath = "_EXTERNAL_PATH",
    FirstRowId = "_FIRST_ROW_ID",
    WriteCols = "_WRITE_COLS",
    WriteColsSequences = "_WRITE_COLS_SEQUENCES",
    MinValues = "_MIN_VALUES",
    MaxValues = "_MAX_VALUES",
    NullCounts = "_NULL_COUNTS",
    NumAddedFiles = "_NUM_ADDED_FILES",
    NumDeletedFiles = "_NUM_DELETED_FILES",
    PartitionStats = "_PARTITION_STATS",
    MinBucket = "_MIN_BUCKET",
    MaxBucket = "_MAX_BUCKET",
    MinLevel = "_MIN_LEVEL",
    MaxLevel = "_MAX_LEVEL",
    MinRowId = "_MIN_ROW_ID",
    MaxRowId = "_MAX_ROW_ID",
}

/// Unit of a long carrying a timestamp logical type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LongUnit {
    Plain,
    Millis,
    Micros,
    Nanos,
}

/// The writer schema reduced to its binary encoding, with record fields resolved to [`Field`]s.
#[derive(Debug, Clone)]
enum Shape {
    Null,
    Boolean,
    Int,
    Long(LongUnit),
    Float,
    Double,
    /// Length-prefixed bytes (bytes, decimal on bytes, uuid).
    Bytes,
    String,
    Fixed(usize),
    Enum,
    Array(Box<Shape>),
    Map(Box<Shape>),
    Union(Vec<Shape>),
    /// Index into [`Compiled::records`] (named, so recursive schemas stay finite).
    Record(usize),
}

#[derive(Debug)]
struct Compiled {
    records: Vec<Vec<(Field, Shape)>>,
    root: Shape,
}

#[derive(Default)]
struct Compiler {
    records: Vec<Vec<(Field, Shape)>>,
    /// Named types by full name and, failing that, by short name.
    named: HashMap<String, Shape>,
}

fn schema_error(message: impl std::fmt::Display) -> StorageError {
    avro_error(format!("invalid Avro writer schema: {message}"))
}

/// The full name and the namespace for nested definitions of a named type.
fn full_name(
    name: &str,
    object: &serde_json::Map<String, serde_json::Value>,
    namespace: &str,
) -> (String, String) {
    if let Some((space, _)) = name.rsplit_once('.') {
        return (name.to_owned(), space.to_owned());
    }
    let space = object
        .get("namespace")
        .and_then(|ns| ns.as_str())
        .unwrap_or(namespace);
    if space.is_empty() {
        (name.to_owned(), String::new())
    } else {
        (format!("{space}.{name}"), space.to_owned())
    }
}

/// The writer schema is compiled from its JSON here rather than through
/// `apache_avro::Schema::parse_str`, which panics on some invalid names (0.21 unwraps them).
impl Compiler {
    fn compile(schema_json: &str) -> Result<Compiled> {
        let json: serde_json::Value = serde_json::from_str(schema_json).map_err(schema_error)?;
        let mut compiler = Self::default();
        let root = compiler.shape(&json, "")?;
        Ok(Compiled {
            records: compiler.records,
            root,
        })
    }

    fn register(&mut self, full_name: String, shape: &Shape) {
        let short = full_name.rsplit('.').next().unwrap_or_default().to_owned();
        self.named.entry(short).or_insert_with(|| shape.clone());
        self.named.insert(full_name, shape.clone());
    }

    fn named_type(&self, name: &str, namespace: &str) -> Result<Shape> {
        let qualified =
            (!namespace.is_empty() && !name.contains('.')).then(|| format!("{namespace}.{name}"));
        qualified
            .as_deref()
            .and_then(|q| self.named.get(q))
            .or_else(|| self.named.get(name))
            .or_else(|| self.named.get(name.rsplit('.').next().unwrap_or_default()))
            .cloned()
            .ok_or_else(|| schema_error(format!("unknown type {name:?}")))
    }

    fn shape(&mut self, json: &serde_json::Value, namespace: &str) -> Result<Shape> {
        use serde_json::Value as Json;
        match json {
            Json::String(name) => self.type_name(name, None, namespace),
            Json::Array(branches) => Ok(Shape::Union(
                branches
                    .iter()
                    .map(|branch| self.shape(branch, namespace))
                    .collect::<Result<_>>()?,
            )),
            Json::Object(object) => match object.get("type") {
                Some(Json::String(kind)) => self.complex(kind, object, namespace),
                // `{"type": {...}}` or `{"type": [...]}`: the nested schema.
                Some(inner @ (Json::Object(_) | Json::Array(_))) => self.shape(inner, namespace),
                _ => Err(schema_error("object without a type")),
            },
            other => Err(schema_error(format!("unexpected JSON {other}"))),
        }
    }

    /// A primitive (with an optional logical type) or a reference to a named type.
    fn type_name(&mut self, name: &str, logical: Option<&str>, namespace: &str) -> Result<Shape> {
        Ok(match name {
            "null" => Shape::Null,
            "boolean" => Shape::Boolean,
            "int" => Shape::Int,
            "long" => Shape::Long(match logical {
                Some("timestamp-millis" | "local-timestamp-millis") => LongUnit::Millis,
                Some("timestamp-micros" | "local-timestamp-micros") => LongUnit::Micros,
                Some("timestamp-nanos" | "local-timestamp-nanos") => LongUnit::Nanos,
                _ => LongUnit::Plain,
            }),
            "float" => Shape::Float,
            "double" => Shape::Double,
            "bytes" => Shape::Bytes,
            "string" => Shape::String,
            other => self.named_type(other, namespace)?,
        })
    }

    fn complex(
        &mut self,
        kind: &str,
        object: &serde_json::Map<String, serde_json::Value>,
        namespace: &str,
    ) -> Result<Shape> {
        let name = || {
            object
                .get("name")
                .and_then(|n| n.as_str())
                .ok_or_else(|| schema_error(format!("{kind} without a name")))
        };
        match kind {
            "record" | "error" => {
                let (full, inner_namespace) = full_name(name()?, object, namespace);
                let index = self.records.len();
                self.records.push(Vec::new());
                let shape = Shape::Record(index);
                self.register(full, &shape);
                let fields = object
                    .get("fields")
                    .and_then(|f| f.as_array())
                    .ok_or_else(|| schema_error("record without fields"))?;
                let mut compiled = Vec::with_capacity(fields.len());
                for field in fields {
                    let field_name = field
                        .get("name")
                        .and_then(|n| n.as_str())
                        .ok_or_else(|| schema_error("record field without a name"))?;
                    let field_type = field
                        .get("type")
                        .ok_or_else(|| schema_error("record field without a type"))?;
                    compiled.push((
                        Field::from_name(field_name),
                        self.shape(field_type, &inner_namespace)?,
                    ));
                }
                self.records[index] = compiled;
                Ok(shape)
            }
            "enum" => {
                let (full, _) = full_name(name()?, object, namespace);
                self.register(full, &Shape::Enum);
                Ok(Shape::Enum)
            }
            "fixed" => {
                let size = object
                    .get("size")
                    .and_then(|s| s.as_u64())
                    .and_then(|s| usize::try_from(s).ok())
                    .ok_or_else(|| schema_error("fixed without a valid size"))?;
                let shape = Shape::Fixed(size);
                let (full, _) = full_name(name()?, object, namespace);
                self.register(full, &shape);
                Ok(shape)
            }
            "array" => {
                let items = object
                    .get("items")
                    .ok_or_else(|| schema_error("array without items"))?;
                Ok(Shape::Array(Box::new(self.shape(items, namespace)?)))
            }
            "map" => {
                let values = object
                    .get("values")
                    .ok_or_else(|| schema_error("map without values"))?;
                Ok(Shape::Map(Box::new(self.shape(values, namespace)?)))
            }
            primitive => {
                let logical = object.get("logicalType").and_then(|l| l.as_str());
                self.type_name(primitive, logical, namespace)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading: container and binary decoding
// ---------------------------------------------------------------------------------------------

fn truncated() -> StorageError {
    avro_error("truncated Avro data")
}

/// A position in a byte slice with Avro's primitive decoders; every read is bounds-checked.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(truncated());
        }
        let slice = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    fn read_long(&mut self) -> Result<i64> {
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let byte = *self.buf.get(self.pos).ok_or_else(truncated)?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err(avro_error("Avro varint longer than 10 bytes"));
            }
        }
        Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    fn read_int(&mut self) -> Result<i32> {
        let value = self.read_long()?;
        i32::try_from(value).map_err(|_| avro_error(format!("Avro int {value} out of range")))
    }

    /// A non-negative length that fits in what is left of the buffer.
    fn read_len(&mut self) -> Result<usize> {
        let len = self.read_long()?;
        match usize::try_from(len) {
            Ok(len) if len <= self.remaining() => Ok(len),
            _ => Err(avro_error(format!("invalid Avro length {len}"))),
        }
    }

    fn read_bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.read_len()?;
        self.take(len)
    }
}

/// A parsed container: compiled writer schema, codec, sync marker and where the blocks start.
struct AvroFile<'a> {
    compiled: Compiled,
    codec: Codec,
    marker: &'a [u8],
    blocks: Cursor<'a>,
}

impl<'a> AvroFile<'a> {
    fn open(bytes: &'a [u8]) -> Result<Self> {
        let mut cur = Cursor::new(bytes);
        if cur.take(4).map_err(|_| avro_error("not an Avro file"))? != b"Obj\x01" {
            return Err(avro_error("not an Avro file (bad magic)"));
        }
        let mut schema_json = None;
        let mut codec_name: Option<&[u8]> = None;
        loop {
            let count = cur.read_long()?;
            if count == 0 {
                break;
            }
            if count < 0 {
                cur.read_long()?; // byte size of the block
            }
            for _ in 0..count.unsigned_abs() {
                let key = cur.read_bytes()?;
                let value = cur.read_bytes()?;
                match key {
                    b"avro.schema" => schema_json = Some(value),
                    b"avro.codec" => codec_name = Some(value),
                    _ => {}
                }
            }
        }
        let marker = cur.take(16)?;

        let schema_json = schema_json.ok_or_else(|| avro_error("Avro header lacks avro.schema"))?;
        let schema_json = std::str::from_utf8(schema_json)
            .map_err(|_| avro_error("Avro header schema is not UTF-8"))?;
        let compiled = Compiler::compile(schema_json)?;

        let codec_name = match codec_name {
            None => "null",
            Some(name) => std::str::from_utf8(name)
                .map_err(|_| avro_error("Avro header codec is not UTF-8"))?,
        };
        let codec = Codec::from_str(codec_name)
            .map_err(|_| avro_error(format!("unsupported Avro codec {codec_name:?}")))?;
        Ok(Self {
            compiled,
            codec,
            marker,
            blocks: cur,
        })
    }

    /// Calls `each` once per record with a decoder positioned at it and the root shape.
    fn for_each_record(
        mut self,
        mut each: impl FnMut(&mut Decoder<'_, '_>, &Shape) -> Result<()>,
    ) -> Result<()> {
        while self.blocks.remaining() > 0 {
            let count = self.blocks.read_long()?;
            let size = self.blocks.read_len()?;
            let data = self.blocks.take(size)?;
            if self.blocks.take(16)? != self.marker {
                return Err(avro_error("Avro block sync marker mismatch"));
            }
            let block = self.decompress(data)?;
            // Every record of a manifest takes at least one byte.
            let count = match usize::try_from(count) {
                Ok(count) if count <= block.len() => count,
                _ => return Err(avro_error(format!("invalid Avro block count {count}"))),
            };
            let mut decoder = Decoder {
                cur: Cursor::new(&block),
                schema: &self.compiled,
            };
            for _ in 0..count {
                let before = decoder.cur.pos;
                each(&mut decoder, &self.compiled.root)?;
                if decoder.cur.pos == before {
                    return Err(avro_error("Avro record decoded from no bytes"));
                }
            }
            if decoder.cur.remaining() != 0 {
                return Err(avro_error("trailing bytes in Avro block"));
            }
        }
        Ok(())
    }

    fn decompress<'d>(&self, data: &'d [u8]) -> Result<Cow<'d, [u8]>> {
        if matches!(self.codec, Codec::Null) {
            return Ok(Cow::Borrowed(data));
        }
        // apache-avro's snappy decoder slices off a 4-byte checksum without checking the length.
        if <&str>::from(self.codec) == "snappy" && data.len() < 4 {
            return Err(truncated());
        }
        let mut buf = data.to_vec();
        self.codec.decompress(&mut buf).map_err(avro_error)?;
        Ok(Cow::Owned(buf))
    }
}

fn unexpected_type(field: Field, shape: &Shape) -> StorageError {
    StorageError::format(format!(
        "manifest field {} has unexpected Avro type {shape:?}",
        field.name()
    ))
}

fn required<T>(value: Option<T>, field: Field, record: &str) -> Result<T> {
    value.ok_or_else(|| {
        StorageError::format(format!(
            "{record} record lacks required field {} (or it is null)",
            field.name()
        ))
    })
}

/// Decodes records of one block into tarn's structs, driven by the compiled writer schema.
struct Decoder<'a, 's> {
    cur: Cursor<'a>,
    schema: &'s Compiled,
}

impl<'s> Decoder<'_, 's> {
    /// Resolves a union (or the `null` type) to the branch written; `None` for null.
    fn branch<'x>(&mut self, shape: &'x Shape, field: Field) -> Result<Option<&'x Shape>> {
        match shape {
            Shape::Null => Ok(None),
            Shape::Union(branches) => {
                let index = self.cur.read_long()?;
                let branch = usize::try_from(index)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| {
                        avro_error(format!(
                            "union branch {index} out of range in field {}",
                            field.name()
                        ))
                    })?;
                match branch {
                    Shape::Null => Ok(None),
                    Shape::Union(_) => Err(unexpected_type(field, branch)),
                    other => Ok(Some(other)),
                }
            }
            other => Ok(Some(other)),
        }
    }

    fn long(&mut self, shape: &Shape, field: Field) -> Result<Option<i64>> {
        match self.branch(shape, field)? {
            None => Ok(None),
            Some(Shape::Int) => Ok(Some(i64::from(self.cur.read_int()?))),
            Some(Shape::Long(_)) => Ok(Some(self.cur.read_long()?)),
            Some(other) => Err(unexpected_type(field, other)),
        }
    }

    fn int(&mut self, shape: &Shape, field: Field) -> Result<Option<i32>> {
        match self.branch(shape, field)? {
            None => Ok(None),
            Some(Shape::Int) => Ok(Some(self.cur.read_int()?)),
            Some(Shape::Long(_)) => {
                let value = self.cur.read_long()?;
                i32::try_from(value).map(Some).map_err(|_| {
                    StorageError::format(format!("{} value {value} out of range", field.name()))
                })
            }
            Some(other) => Err(unexpected_type(field, other)),
        }
    }

    /// A timestamp as milliseconds, whatever unit the writer used.
    fn millis(&mut self, shape: &Shape, field: Field) -> Result<Option<i64>> {
        match self.branch(shape, field)? {
            None => Ok(None),
            Some(Shape::Int) => Ok(Some(i64::from(self.cur.read_int()?))),
            Some(Shape::Long(unit)) => {
                let value = self.cur.read_long()?;
                Ok(Some(match unit {
                    LongUnit::Plain | LongUnit::Millis => value,
                    LongUnit::Micros => value.div_euclid(1_000),
                    LongUnit::Nanos => value.div_euclid(1_000_000),
                }))
            }
            Some(other) => Err(unexpected_type(field, other)),
        }
    }

    fn bytes(&mut self, shape: &Shape, field: Field) -> Result<Option<Vec<u8>>> {
        match self.branch(shape, field)? {
            None => Ok(None),
            Some(Shape::Bytes | Shape::String) => Ok(Some(self.cur.read_bytes()?.to_vec())),
            Some(Shape::Fixed(n)) => Ok(Some(self.cur.take(*n)?.to_vec())),
            Some(other) => Err(unexpected_type(field, other)),
        }
    }

    fn string(&mut self, shape: &Shape, field: Field) -> Result<Option<String>> {
        match self.branch(shape, field)? {
            None => Ok(None),
            Some(Shape::String | Shape::Bytes) => {
                let bytes = self.cur.read_bytes()?;
                let text = std::str::from_utf8(bytes).map_err(|_| {
                    StorageError::format(format!("{} is not valid UTF-8", field.name()))
                })?;
                Ok(Some(text.to_owned()))
            }
            Some(other) => Err(unexpected_type(field, other)),
        }
    }

    /// Reads the blocks of an array, calling `item` once per element.
    fn array_items(&mut self, mut item: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        loop {
            let count = self.cur.read_long()?;
            if count == 0 {
                return Ok(());
            }
            if count < 0 {
                self.cur.read_long()?; // byte size of the block
            }
            // Every element tarn reads takes at least one byte.
            if count.unsigned_abs() > self.cur.remaining() as u64 {
                return Err(avro_error(format!(
                    "invalid Avro array block count {count}"
                )));
            }
            for _ in 0..count.unsigned_abs() {
                item(self)?;
            }
        }
    }

    fn array<T>(
        &mut self,
        shape: &Shape,
        field: Field,
        mut element: impl FnMut(&mut Self, &Shape) -> Result<T>,
    ) -> Result<Option<Vec<T>>> {
        match self.branch(shape, field)? {
            None => Ok(None),
            Some(Shape::Array(items)) => {
                let mut out = Vec::new();
                self.array_items(|d| {
                    out.push(element(d, items)?);
                    Ok(())
                })?;
                Ok(Some(out))
            }
            Some(other) => Err(unexpected_type(field, other)),
        }
    }

    fn strings(&mut self, shape: &Shape, field: Field) -> Result<Option<Vec<String>>> {
        self.array(shape, field, |d, items| {
            let value = d.string(items, field)?;
            required(value, field, "array element of")
        })
    }

    fn longs(&mut self, shape: &Shape, field: Field) -> Result<Option<Vec<i64>>> {
        self.array(shape, field, |d, items| {
            let value = d.long(items, field)?;
            required(value, field, "array element of")
        })
    }

    fn nullable_longs(&mut self, shape: &Shape, field: Field) -> Result<Option<Vec<Option<i64>>>> {
        self.array(shape, field, |d, items| d.long(items, field))
    }

    /// The record index of a record-typed field; `None` when null.
    fn record(&mut self, shape: &Shape, field: Field) -> Result<Option<usize>> {
        match self.branch(shape, field)? {
            None => Ok(None),
            Some(Shape::Record(index)) => Ok(Some(*index)),
            Some(other) => Err(unexpected_type(field, other)),
        }
    }

    fn skip(&mut self, shape: &Shape, depth: u32) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(avro_error("Avro value nested too deeply"));
        }
        match shape {
            Shape::Null => {}
            Shape::Boolean => {
                self.cur.take(1)?;
            }
            Shape::Int | Shape::Long(_) | Shape::Enum => {
                self.cur.read_long()?;
            }
            Shape::Float => {
                self.cur.take(4)?;
            }
            Shape::Double => {
                self.cur.take(8)?;
            }
            Shape::Bytes | Shape::String => {
                self.cur.read_bytes()?;
            }
            Shape::Fixed(n) => {
                self.cur.take(*n)?;
            }
            Shape::Array(items) => self.skip_blocks(items, false, depth)?,
            Shape::Map(values) => self.skip_blocks(values, true, depth)?,
            Shape::Union(_) => {
                if let Some(branch) = self.branch(shape, Field::Other)? {
                    self.skip(branch, depth + 1)?;
                }
            }
            Shape::Record(index) => {
                let schema = self.schema;
                for (_, field_shape) in &schema.records[*index] {
                    self.skip(field_shape, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// Skips the blocks of an array or map; blocks that carry their byte size are jumped over.
    fn skip_blocks(&mut self, items: &Shape, is_map: bool, depth: u32) -> Result<()> {
        loop {
            let count = self.cur.read_long()?;
            if count == 0 {
                return Ok(());
            }
            if count < 0 {
                let size = self.cur.read_len()?;
                self.cur.take(size)?;
                continue;
            }
            if count.unsigned_abs() > self.cur.remaining() as u64 {
                return Err(avro_error(format!("invalid Avro block count {count}")));
            }
            for _ in 0..count {
                if is_map {
                    self.cur.read_bytes()?;
                }
                self.skip(items, depth + 1)?;
            }
        }
    }

    fn stats(&mut self, index: usize, context: Field) -> Result<SimpleStats> {
        let schema = self.schema;
        let (mut min_values, mut max_values, mut null_counts) = (None, None, None);
        for (field, shape) in &schema.records[index] {
            match field {
                Field::MinValues => min_values = self.bytes(shape, *field)?,
                Field::MaxValues => max_values = self.bytes(shape, *field)?,
                Field::NullCounts => null_counts = self.nullable_longs(shape, *field)?,
                _ => self.skip(shape, 1)?,
            }
        }
        let record = context.name();
        Ok(SimpleStats {
            min_values: required(min_values, Field::MinValues, record)?,
            max_values: required(max_values, Field::MaxValues, record)?,
            null_counts,
        })
    }

    fn required_stats(&mut self, shape: &Shape, field: Field) -> Result<Option<SimpleStats>> {
        match self.record(shape, field)? {
            None => Ok(None),
            Some(index) => self.stats(index, field).map(Some),
        }
    }

    fn data_file_meta(&mut self, index: usize) -> Result<DataFileMeta> {
        let schema = self.schema;
        let mut file_name = None;
        let mut file_size = None;
        let mut row_count = None;
        let mut min_key = None;
        let mut max_key = None;
        let mut key_stats = None;
        let mut value_stats = None;
        let mut min_sequence_number = None;
        let mut max_sequence_number = None;
        let mut schema_id = None;
        let mut level = None;
        let mut extra_files = None;
        let mut creation_time = None;
        let mut delete_row_count = None;
        let mut embedded_file_index = None;
        let mut file_source = None;
        let mut value_stats_cols = None;
        let mut external_path = None;
        let mut first_row_id = None;
        let mut write_cols = None;
        let mut write_cols_sequences = None;
        for (field, shape) in &schema.records[index] {
            let f = *field;
            match f {
                Field::FileName => file_name = self.string(shape, f)?,
                Field::FileSize => file_size = self.long(shape, f)?,
                Field::RowCount => row_count = self.long(shape, f)?,
                Field::MinKey => min_key = self.bytes(shape, f)?,
                Field::MaxKey => max_key = self.bytes(shape, f)?,
                Field::KeyStats => key_stats = self.required_stats(shape, f)?,
                Field::ValueStats => value_stats = self.required_stats(shape, f)?,
                Field::MinSequenceNumber => min_sequence_number = self.long(shape, f)?,
                Field::MaxSequenceNumber => max_sequence_number = self.long(shape, f)?,
                Field::SchemaId => schema_id = self.long(shape, f)?,
                Field::Level => level = self.int(shape, f)?,
                Field::ExtraFiles => extra_files = self.strings(shape, f)?,
                Field::CreationTime => creation_time = self.millis(shape, f)?,
                Field::DeleteRowCount => delete_row_count = self.long(shape, f)?,
                Field::EmbeddedFileIndex => embedded_file_index = self.bytes(shape, f)?,
                Field::Source => {
                    file_source = match self.int(shape, f)? {
                        None => None,
                        Some(byte) => Some(FileSource::from_byte(byte).ok_or_else(|| {
                            StorageError::format(format!("unknown _FILE_SOURCE {byte}"))
                        })?),
                    }
                }
                Field::ValueStatsCols => value_stats_cols = self.strings(shape, f)?,
                Field::ExternalPath => external_path = self.string(shape, f)?,
                Field::FirstRowId => first_row_id = self.long(shape, f)?,
                Field::WriteCols => write_cols = self.strings(shape, f)?,
                Field::WriteColsSequences => write_cols_sequences = self.longs(shape, f)?,
                _ => self.skip(shape, 1)?,
            }
        }
        const RECORD: &str = "_FILE";
        Ok(DataFileMeta {
            file_name: required(file_name, Field::FileName, RECORD)?,
            file_size: required(file_size, Field::FileSize, RECORD)?,
            row_count: required(row_count, Field::RowCount, RECORD)?,
            min_key: required(min_key, Field::MinKey, RECORD)?,
            max_key: required(max_key, Field::MaxKey, RECORD)?,
            key_stats: required(key_stats, Field::KeyStats, RECORD)?,
            value_stats: required(value_stats, Field::ValueStats, RECORD)?,
            min_sequence_number: required(min_sequence_number, Field::MinSequenceNumber, RECORD)?,
            max_sequence_number: required(max_sequence_number, Field::MaxSequenceNumber, RECORD)?,
            schema_id: required(schema_id, Field::SchemaId, RECORD)?,
            level: required(level, Field::Level, RECORD)?,
            extra_files: required(extra_files, Field::ExtraFiles, RECORD)?,
            creation_time,
            delete_row_count,
            embedded_file_index,
            file_source,
            value_stats_cols,
            external_path,
            first_row_id,
            write_cols,
            write_cols_sequences,
        })
    }

    fn root_record(&mut self, root: &Shape) -> Result<usize> {
        self.record(root, Field::Other)?
            .ok_or_else(|| StorageError::format("manifest record is null"))
    }

    fn manifest_entry(&mut self, root: &Shape) -> Result<ManifestEntry> {
        let index = self.root_record(root)?;
        let schema = self.schema;
        let mut version = None;
        let mut kind = None;
        let mut partition = None;
        let mut bucket = None;
        let mut total_buckets = None;
        let mut file = None;
        for (field, shape) in &schema.records[index] {
            let f = *field;
            match f {
                Field::Version => version = self.int(shape, f)?,
                Field::Kind => kind = self.int(shape, f)?,
                Field::Partition => partition = self.bytes(shape, f)?,
                Field::Bucket => bucket = self.int(shape, f)?,
                Field::TotalBuckets => total_buckets = self.int(shape, f)?,
                Field::File => {
                    file = match self.record(shape, f)? {
                        None => None,
                        Some(file_index) => Some(self.data_file_meta(file_index)?),
                    }
                }
                _ => self.skip(shape, 1)?,
            }
        }
        const RECORD: &str = "manifest entry";
        check_version(version)?;
        let kind = required(kind, Field::Kind, RECORD)?;
        Ok(ManifestEntry {
            kind: FileKind::from_byte(kind).ok_or_else(|| {
                StorageError::format(format!("unknown manifest entry _KIND {kind}"))
            })?,
            partition: required(partition, Field::Partition, RECORD)?,
            bucket: required(bucket, Field::Bucket, RECORD)?,
            total_buckets: required(total_buckets, Field::TotalBuckets, RECORD)?,
            file: required(file, Field::File, RECORD)?,
        })
    }

    fn manifest_file_meta(&mut self, root: &Shape) -> Result<ManifestFileMeta> {
        let index = self.root_record(root)?;
        let schema = self.schema;
        let mut version = None;
        let mut file_name = None;
        let mut file_size = None;
        let mut num_added_files = None;
        let mut num_deleted_files = None;
        let mut partition_stats = None;
        let mut schema_id = None;
        let mut min_bucket = None;
        let mut max_bucket = None;
        let mut min_level = None;
        let mut max_level = None;
        let mut min_row_id = None;
        let mut max_row_id = None;
        for (field, shape) in &schema.records[index] {
            let f = *field;
            match f {
                Field::Version => version = self.int(shape, f)?,
                Field::FileName => file_name = self.string(shape, f)?,
                Field::FileSize => file_size = self.long(shape, f)?,
                Field::NumAddedFiles => num_added_files = self.long(shape, f)?,
                Field::NumDeletedFiles => num_deleted_files = self.long(shape, f)?,
                Field::PartitionStats => partition_stats = self.required_stats(shape, f)?,
                Field::SchemaId => schema_id = self.long(shape, f)?,
                Field::MinBucket => min_bucket = self.int(shape, f)?,
                Field::MaxBucket => max_bucket = self.int(shape, f)?,
                Field::MinLevel => min_level = self.int(shape, f)?,
                Field::MaxLevel => max_level = self.int(shape, f)?,
                Field::MinRowId => min_row_id = self.long(shape, f)?,
                Field::MaxRowId => max_row_id = self.long(shape, f)?,
                _ => self.skip(shape, 1)?,
            }
        }
        const RECORD: &str = "manifest list";
        check_version(version)?;
        Ok(ManifestFileMeta {
            file_name: required(file_name, Field::FileName, RECORD)?,
            file_size: required(file_size, Field::FileSize, RECORD)?,
            num_added_files: required(num_added_files, Field::NumAddedFiles, RECORD)?,
            num_deleted_files: required(num_deleted_files, Field::NumDeletedFiles, RECORD)?,
            partition_stats: required(partition_stats, Field::PartitionStats, RECORD)?,
            schema_id: required(schema_id, Field::SchemaId, RECORD)?,
            min_bucket,
            max_bucket,
            min_level,
            max_level,
            min_row_id,
            max_row_id,
        })
    }
}

/// Java refuses any `_VERSION` but 2 (1 is the pre-0.9 layout: "please recreate the table").
fn check_version(version: Option<i32>) -> Result<()> {
    match version {
        Some(FORMAT_IDENTIFIER) => Ok(()),
        Some(other) => Err(StorageError::format(format!(
            "unsupported manifest _VERSION {other} (tarn reads version {FORMAT_IDENTIFIER})"
        ))),
        None => Err(StorageError::format("manifest record lacks _VERSION")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apache_avro::types::Value;
    use apache_avro::{Schema, Writer};

    fn record(fields: Vec<(&str, Value)>) -> Value {
        Value::Record(
            fields
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        )
    }

    fn nullable(value: Option<Value>) -> Value {
        match value {
            None => Value::Union(0, Box::new(Value::Null)),
            Some(value) => Value::Union(1, Box::new(value)),
        }
    }

    fn stats_value(stats: &SimpleStats) -> Value {
        record(vec![
            ("_MIN_VALUES", Value::Bytes(stats.min_values.clone())),
            ("_MAX_VALUES", Value::Bytes(stats.max_values.clone())),
            (
                "_NULL_COUNTS",
                nullable(stats.null_counts.as_ref().map(|counts| {
                    Value::Array(
                        counts
                            .iter()
                            .map(|c| nullable(c.map(Value::Long)))
                            .collect(),
                    )
                })),
            ),
        ])
    }

    /// BIGINT key row: arity 1, null bits, value little-endian.
    fn key_row(value: i64) -> Vec<u8> {
        let mut row = vec![0, 0, 0, 1];
        row.extend_from_slice(&[0; 8]);
        row.extend_from_slice(&value.to_le_bytes());
        row
    }

    fn full_entry() -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Delete,
            partition: key_row(7),
            bucket: 3,
            total_buckets: 4,
            file: DataFileMeta {
                file_name: "data-1.parquet".into(),
                file_size: 2852,
                row_count: 10,
                min_key: key_row(1),
                max_key: key_row(10),
                key_stats: SimpleStats {
                    min_values: key_row(1),
                    max_values: key_row(10),
                    null_counts: Some(vec![Some(0)]),
                },
                value_stats: SimpleStats {
                    min_values: key_row(-5),
                    max_values: key_row(i64::MAX),
                    null_counts: Some(vec![Some(0), None, Some(i64::MAX)]),
                },
                min_sequence_number: 0,
                max_sequence_number: i64::MAX,
                schema_id: 2,
                level: 5,
                extra_files: vec!["data-1.parquet.index".into(), "é".into()],
                creation_time: Some(1_767_225_600_123),
                delete_row_count: Some(3),
                embedded_file_index: Some(vec![0, 1, 2, 255]),
                file_source: Some(FileSource::Compact),
                value_stats_cols: Some(vec!["id".into(), "name".into()]),
                external_path: Some("s3://bucket/ext/data-1.parquet".into()),
                first_row_id: Some(100),
                write_cols: Some(vec!["id".into(), "name".into(), "v".into()]),
                write_cols_sequences: Some(vec![7, -1, i64::MIN]),
            },
        }
    }

    fn minimal_entry() -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Add,
            partition: EMPTY_ROW.to_vec(),
            bucket: 0,
            total_buckets: -1,
            file: DataFileMeta {
                file_name: "data-2.parquet".into(),
                file_size: 1,
                row_count: 0,
                min_key: EMPTY_ROW.to_vec(),
                max_key: EMPTY_ROW.to_vec(),
                key_stats: SimpleStats::empty(),
                value_stats: SimpleStats {
                    min_values: Vec::new(),
                    max_values: Vec::new(),
                    null_counts: None,
                },
                min_sequence_number: -1,
                max_sequence_number: -1,
                schema_id: 0,
                level: 0,
                extra_files: Vec::new(),
                creation_time: None,
                delete_row_count: None,
                embedded_file_index: None,
                file_source: None,
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: None,
                write_cols_sequences: None,
            },
        }
    }

    /// Options set to empty values, which must stay distinct from `None`.
    fn empty_options_entry() -> ManifestEntry {
        let mut entry = minimal_entry();
        entry.file.file_source = Some(FileSource::Append);
        entry.file.value_stats_cols = Some(Vec::new());
        entry.file.write_cols = Some(Vec::new());
        entry.file.write_cols_sequences = Some(Vec::new());
        entry.file.embedded_file_index = Some(Vec::new());
        entry.file.external_path = Some(String::new());
        entry.file.creation_time = Some(-1);
        entry.file.delete_row_count = Some(0);
        entry.file.first_row_id = Some(0);
        entry
    }

    fn full_meta() -> ManifestFileMeta {
        ManifestFileMeta {
            file_name: "manifest-a-0".into(),
            file_size: 4096,
            num_added_files: 3,
            num_deleted_files: 1,
            partition_stats: SimpleStats {
                min_values: key_row(1),
                max_values: key_row(2),
                null_counts: Some(vec![Some(0), None]),
            },
            schema_id: 1,
            min_bucket: Some(0),
            max_bucket: Some(3),
            min_level: Some(0),
            max_level: Some(5),
            min_row_id: Some(0),
            max_row_id: Some(i64::MAX),
        }
    }

    fn minimal_meta() -> ManifestFileMeta {
        ManifestFileMeta {
            file_name: "manifest-b-1".into(),
            file_size: 1,
            num_added_files: 0,
            num_deleted_files: 0,
            partition_stats: SimpleStats::empty(),
            schema_id: 0,
            min_bucket: None,
            max_bucket: None,
            min_level: None,
            max_level: None,
            min_row_id: None,
            max_row_id: None,
        }
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn empty_stats_are_java_empty_stats() {
        let stats = SimpleStats::empty();
        assert_eq!(stats.min_values, [0u8; 12]);
        assert_eq!(stats.max_values, [0u8; 12]);
        assert_eq!(stats.null_counts, Some(vec![]));
    }

    #[test]
    fn manifest_round_trip() {
        let entries = vec![full_entry(), minimal_entry(), empty_options_entry()];
        let bytes = write_manifest(&entries).unwrap();
        assert_eq!(read_manifest(&bytes).unwrap(), entries);
        assert_eq!(
            read_manifest(&write_manifest(&[]).unwrap()).unwrap(),
            vec![]
        );
    }

    #[test]
    fn manifest_list_round_trip() {
        let metas = vec![full_meta(), minimal_meta()];
        let bytes = write_manifest_list(&metas).unwrap();
        assert_eq!(read_manifest_list(&bytes).unwrap(), metas);
        let empty = write_manifest_list(&[]).unwrap();
        assert_eq!(read_manifest_list(&empty).unwrap(), vec![]);
    }

    #[test]
    fn many_entries_span_blocks() {
        let entries: Vec<_> = (0..2000)
            .map(|i| {
                let mut entry = full_entry();
                entry.file.file_name = format!("data-{i}.parquet");
                entry.bucket = i;
                entry
            })
            .collect();
        let bytes = write_manifest(&entries).unwrap();
        assert_eq!(read_manifest(&bytes).unwrap(), entries);
    }

    #[test]
    fn header_is_what_java_writes() {
        for (bytes, schema) in [
            (
                write_manifest(&[full_entry()]).unwrap(),
                MANIFEST_ENTRY_SCHEMA,
            ),
            (
                write_manifest_list(&[full_meta()]).unwrap(),
                MANIFEST_FILE_META_SCHEMA,
            ),
        ] {
            // Exactly two metadata entries: avro.schema (Java's JSON text) and avro.codec.
            let mut cur = Cursor::new(&bytes);
            assert_eq!(cur.take(4).unwrap(), b"Obj\x01");
            assert_eq!(cur.read_long().unwrap(), 2);
            assert_eq!(cur.read_bytes().unwrap(), b"avro.schema");
            assert_eq!(cur.read_bytes().unwrap(), schema.as_bytes());
            assert_eq!(cur.read_bytes().unwrap(), b"avro.codec");
            assert_eq!(cur.read_bytes().unwrap(), b"zstandard");
            assert_eq!(cur.read_long().unwrap(), 0);
            // The schema text is valid JSON and Avro.
            serde_json::from_str::<serde_json::Value>(schema).unwrap();
            Schema::parse_str(schema).unwrap();
        }
        assert!(contains(
            MANIFEST_ENTRY_SCHEMA.as_bytes(),
            br#"{"name":"_CREATION_TIME","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}"#
        ));
    }

    fn strings_value(values: &[String]) -> Value {
        Value::Array(values.iter().map(|s| Value::String(s.clone())).collect())
    }

    /// What apache-avro decodes for `entry` under [`MANIFEST_ENTRY_SCHEMA`].
    fn entry_value(entry: &ManifestEntry) -> Value {
        let f = &entry.file;
        let file = record(vec![
            ("_FILE_NAME", Value::String(f.file_name.clone())),
            ("_FILE_SIZE", Value::Long(f.file_size)),
            ("_ROW_COUNT", Value::Long(f.row_count)),
            ("_MIN_KEY", Value::Bytes(f.min_key.clone())),
            ("_MAX_KEY", Value::Bytes(f.max_key.clone())),
            ("_KEY_STATS", stats_value(&f.key_stats)),
            ("_VALUE_STATS", stats_value(&f.value_stats)),
            ("_MIN_SEQUENCE_NUMBER", Value::Long(f.min_sequence_number)),
            ("_MAX_SEQUENCE_NUMBER", Value::Long(f.max_sequence_number)),
            ("_SCHEMA_ID", Value::Long(f.schema_id)),
            ("_LEVEL", Value::Int(f.level)),
            ("_EXTRA_FILES", strings_value(&f.extra_files)),
            (
                "_CREATION_TIME",
                nullable(f.creation_time.map(Value::TimestampMillis)),
            ),
            (
                "_DELETE_ROW_COUNT",
                nullable(f.delete_row_count.map(Value::Long)),
            ),
            (
                "_EMBEDDED_FILE_INDEX",
                nullable(f.embedded_file_index.clone().map(Value::Bytes)),
            ),
            (
                "_FILE_SOURCE",
                nullable(f.file_source.map(|s| Value::Int(s.to_byte()))),
            ),
            (
                "_VALUE_STATS_COLS",
                nullable(f.value_stats_cols.as_deref().map(strings_value)),
            ),
            (
                "_EXTERNAL_PATH",
                nullable(f.external_path.clone().map(Value::String)),
            ),
            ("_FIRST_ROW_ID", nullable(f.first_row_id.map(Value::Long))),
            (
                "_WRITE_COLS",
                nullable(f.write_cols.as_deref().map(strings_value)),
            ),
            (
                "_WRITE_COLS_SEQUENCES",
                nullable(
                    f.write_cols_sequences
                        .as_ref()
                        .map(|seqs| Value::Array(seqs.iter().copied().map(Value::Long).collect())),
                ),
            ),
        ]);
        record(vec![
            ("_VERSION", Value::Int(2)),
            ("_KIND", Value::Int(entry.kind.to_byte())),
            ("_PARTITION", Value::Bytes(entry.partition.clone())),
            ("_BUCKET", Value::Int(entry.bucket)),
            ("_TOTAL_BUCKETS", Value::Int(entry.total_buckets)),
            ("_FILE", file),
        ])
    }

    /// What apache-avro decodes for `meta` under [`MANIFEST_FILE_META_SCHEMA`].
    fn meta_value(meta: &ManifestFileMeta) -> Value {
        record(vec![
            ("_VERSION", Value::Int(2)),
            ("_FILE_NAME", Value::String(meta.file_name.clone())),
            ("_FILE_SIZE", Value::Long(meta.file_size)),
            ("_NUM_ADDED_FILES", Value::Long(meta.num_added_files)),
            ("_NUM_DELETED_FILES", Value::Long(meta.num_deleted_files)),
            ("_PARTITION_STATS", stats_value(&meta.partition_stats)),
            ("_SCHEMA_ID", Value::Long(meta.schema_id)),
            ("_MIN_BUCKET", nullable(meta.min_bucket.map(Value::Int))),
            ("_MAX_BUCKET", nullable(meta.max_bucket.map(Value::Int))),
            ("_MIN_LEVEL", nullable(meta.min_level.map(Value::Int))),
            ("_MAX_LEVEL", nullable(meta.max_level.map(Value::Int))),
            ("_MIN_ROW_ID", nullable(meta.min_row_id.map(Value::Long))),
            ("_MAX_ROW_ID", nullable(meta.max_row_id.map(Value::Long))),
        ])
    }

    /// apache-avro's decoder (an independent implementation) reads every field we write, and
    /// its writer (which validates values against the schema) produces what we read.
    #[test]
    fn agrees_with_apache_avro() {
        let entries = vec![full_entry(), minimal_entry(), empty_options_entry()];
        let bytes = write_manifest(&entries).unwrap();
        let decoded: Vec<Value> = apache_avro::Reader::new(&bytes[..])
            .unwrap()
            .map(|v| v.unwrap())
            .collect();
        assert_eq!(decoded, entries.iter().map(entry_value).collect::<Vec<_>>());

        let metas = vec![full_meta(), minimal_meta()];
        let bytes = write_manifest_list(&metas).unwrap();
        let decoded: Vec<Value> = apache_avro::Reader::new(&bytes[..])
            .unwrap()
            .map(|v| v.unwrap())
            .collect();
        assert_eq!(decoded, metas.iter().map(meta_value).collect::<Vec<_>>());

        let schema = Schema::parse_str(MANIFEST_ENTRY_SCHEMA).unwrap();
        let mut writer = Writer::new(&schema, Vec::new());
        for entry in &entries {
            writer.append(entry_value(entry)).unwrap();
        }
        assert_eq!(
            read_manifest(&writer.into_inner().unwrap()).unwrap(),
            entries
        );
        let schema = Schema::parse_str(MANIFEST_FILE_META_SCHEMA).unwrap();
        let mut writer = Writer::new(&schema, Vec::new());
        for meta in &metas {
            writer.append(meta_value(meta)).unwrap();
        }
        assert_eq!(
            read_manifest_list(&writer.into_inner().unwrap()).unwrap(),
            metas
        );
    }

    /// A writer schema like Paimon 0.8's: no `_DELETE_ROW_COUNT` .. `_WRITE_COLS_SEQUENCES`,
    /// no namespace, other record names, `_FILE` fields reordered, plus fields tarn doesn't
    /// know of every Avro type, an `int` where Java has `long`, a nullable required field,
    /// and the deflate codec.
    const OLD_SCHEMA: &str = r#"{"type":"record","name":"ManifestEntry","fields":[
        {"name":"_VERSION","type":"int"},
        {"name":"_KIND","type":"int"},
        {"name":"_PARTITION","type":"bytes"},
        {"name":"_FUTURE_MAP","type":{"type":"map","values":["null","string"]}},
        {"name":"_BUCKET","type":"int"},
        {"name":"_TOTAL_BUCKETS","type":"int"},
        {"name":"_FILE","type":["null",{"type":"record","name":"DataFileMeta","fields":[
            {"name":"_FILE_SIZE","type":"int"},
            {"name":"_FILE_NAME","type":"string"},
            {"name":"_ROW_COUNT","type":"long"},
            {"name":"_MIN_KEY","type":"bytes"},
            {"name":"_MAX_KEY","type":"bytes"},
            {"name":"_KEY_STATS","type":{"type":"record","name":"Stats","fields":[
                {"name":"_MIN_VALUES","type":"bytes"},
                {"name":"_MAX_VALUES","type":"bytes"},
                {"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}},
            {"name":"_VALUE_STATS","type":"Stats"},
            {"name":"_MIN_SEQUENCE_NUMBER","type":"long"},
            {"name":"_MAX_SEQUENCE_NUMBER","type":"long"},
            {"name":"_SCHEMA_ID","type":"long"},
            {"name":"_LEVEL","type":"int"},
            {"name":"_FUTURE_RECORD","type":{"type":"record","name":"Future","fields":[
                {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
                {"name":"f","type":{"type":"fixed","name":"F","size":3}},
                {"name":"d","type":"double"},{"name":"g","type":"float"},{"name":"b","type":"boolean"},
                {"name":"arr","type":{"type":"array","items":"F"}}]}},
            {"name":"_EXTRA_FILES","type":{"type":"array","items":"string"}},
            {"name":"_CREATION_TIME","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null}
        ]}]}
    ]}"#;

    fn old_stats(stats: &SimpleStats) -> Value {
        record(vec![
            ("_MIN_VALUES", Value::Bytes(stats.min_values.clone())),
            ("_MAX_VALUES", Value::Bytes(stats.max_values.clone())),
            (
                "_NULL_COUNTS",
                nullable(Some(Value::Array(vec![
                    nullable(Some(Value::Long(1))),
                    nullable(None),
                ]))),
            ),
        ])
    }

    fn old_file(codec: Codec) -> Vec<u8> {
        let schema = Schema::parse_str(OLD_SCHEMA).unwrap();
        let mut writer = Writer::with_codec(&schema, Vec::new(), codec);
        let entry = full_entry();
        let file = &entry.file;
        let future = record(vec![
            ("e", Value::Enum(1, "B".into())),
            ("f", Value::Fixed(3, vec![1, 2, 3])),
            ("d", Value::Double(1.5)),
            ("g", Value::Float(2.5)),
            ("b", Value::Boolean(true)),
            ("arr", Value::Array(vec![Value::Fixed(3, vec![4, 5, 6])])),
        ]);
        let file_value = record(vec![
            ("_FILE_SIZE", Value::Int(2852)),
            ("_FILE_NAME", Value::String(file.file_name.clone())),
            ("_ROW_COUNT", Value::Long(file.row_count)),
            ("_MIN_KEY", Value::Bytes(file.min_key.clone())),
            ("_MAX_KEY", Value::Bytes(file.max_key.clone())),
            ("_KEY_STATS", old_stats(&file.key_stats)),
            ("_VALUE_STATS", old_stats(&file.value_stats)),
            ("_MIN_SEQUENCE_NUMBER", Value::Long(1)),
            ("_MAX_SEQUENCE_NUMBER", Value::Long(2)),
            ("_SCHEMA_ID", Value::Long(0)),
            ("_LEVEL", Value::Int(1)),
            ("_FUTURE_RECORD", future),
            ("_EXTRA_FILES", Value::Array(vec![])),
            (
                "_CREATION_TIME",
                nullable(Some(Value::TimestampMicros(1_767_225_600_123_456))),
            ),
        ]);
        for _ in 0..3 {
            writer
                .append(record(vec![
                    ("_VERSION", Value::Int(2)),
                    ("_KIND", Value::Int(0)),
                    ("_PARTITION", Value::Bytes(entry.partition.clone())),
                    (
                        "_FUTURE_MAP",
                        Value::Map(
                            [
                                ("k".to_string(), nullable(Some(Value::String("v".into())))),
                                ("n".to_string(), nullable(None)),
                            ]
                            .into_iter()
                            .collect(),
                        ),
                    ),
                    ("_BUCKET", Value::Int(1)),
                    ("_TOTAL_BUCKETS", Value::Int(2)),
                    ("_FILE", Value::Union(1, Box::new(file_value.clone()))),
                ]))
                .unwrap();
        }
        writer.into_inner().unwrap()
    }

    #[test]
    fn reads_old_writer_schema_by_field_name() {
        for codec in [
            Codec::Null,
            Codec::Deflate(apache_avro::DeflateSettings::default()),
            Codec::Zstandard(ZstandardSettings::default()),
        ] {
            let entries = read_manifest(&old_file(codec)).unwrap();
            assert_eq!(entries.len(), 3);
            let entry = &entries[0];
            assert_eq!(entry.kind, FileKind::Add);
            assert_eq!((entry.bucket, entry.total_buckets), (1, 2));
            let file = &entry.file;
            assert_eq!(file.file_name, "data-1.parquet");
            assert_eq!(file.file_size, 2852);
            assert_eq!(file.key_stats.null_counts, Some(vec![Some(1), None]));
            assert_eq!(file.value_stats.min_values, key_row(-5));
            assert_eq!((file.min_sequence_number, file.max_sequence_number), (1, 2));
            assert_eq!(file.level, 1);
            assert_eq!(file.creation_time, Some(1_767_225_600_123));
            assert_eq!(file.delete_row_count, None);
            assert_eq!(file.embedded_file_index, None);
            assert_eq!(file.file_source, None);
            assert_eq!(file.value_stats_cols, None);
            assert_eq!(file.external_path, None);
            assert_eq!(file.first_row_id, None);
            assert_eq!(file.write_cols, None);
            assert_eq!(file.write_cols_sequences, None);
        }
    }

    /// pypaimon 2.1 writes two manifest-list fields Java doesn't have; they are skipped.
    #[test]
    fn reads_manifest_list_with_unknown_fields_and_no_options() {
        let schema_json = r#"{"type":"record","name":"ManifestFileMeta","fields":[
            {"name":"_VERSION","type":"int"},
            {"name":"_FILE_NAME","type":"string"},
            {"name":"_FILE_SIZE","type":"long"},
            {"name":"_NUM_ADDED_FILES","type":"long"},
            {"name":"_NUM_DELETED_FILES","type":"long"},
            {"name":"_PARTITION_STATS","type":{"type":"record","name":"record_PARTITION_STATS","fields":[
                {"name":"_MIN_VALUES","type":"bytes"},{"name":"_MAX_VALUES","type":"bytes"},
                {"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}},
            {"name":"_SCHEMA_ID","type":"long"},
            {"name":"_TOTAL_BUCKETS","type":["null","int"],"default":null},
            {"name":"_EXTRA_FILES","type":["null",{"type":"array","items":"string"}],"default":null}]}"#;
        let schema = Schema::parse_str(schema_json).unwrap();
        let mut writer = Writer::new(&schema, Vec::new());
        writer
            .append(record(vec![
                ("_VERSION", Value::Int(2)),
                ("_FILE_NAME", Value::String("manifest-x-0".into())),
                ("_FILE_SIZE", Value::Long(10)),
                ("_NUM_ADDED_FILES", Value::Long(2)),
                ("_NUM_DELETED_FILES", Value::Long(1)),
                ("_PARTITION_STATS", stats_value(&SimpleStats::empty())),
                ("_SCHEMA_ID", Value::Long(4)),
                ("_TOTAL_BUCKETS", nullable(Some(Value::Int(4)))),
                (
                    "_EXTRA_FILES",
                    nullable(Some(Value::Array(vec![Value::String("x".into())]))),
                ),
            ]))
            .unwrap();
        let metas = read_manifest_list(&writer.into_inner().unwrap()).unwrap();
        assert_eq!(
            metas,
            vec![ManifestFileMeta {
                file_name: "manifest-x-0".into(),
                file_size: 10,
                num_added_files: 2,
                num_deleted_files: 1,
                partition_stats: SimpleStats::empty(),
                schema_id: 4,
                ..minimal_meta()
            }]
        );
    }

    /// `full_entry` (a DELETE) with another `_VERSION` and `_KIND`.
    fn single_field_file(version: i32, kind: i32) -> Vec<u8> {
        write_container(MANIFEST_ENTRY_SCHEMA, &[full_entry()], |out, entry| {
            let mut rec = Vec::new();
            write_entry(&mut rec, entry);
            assert_eq!(rec[..2], [4, 2], "zig-zag 2 and 1");
            write_int(out, version);
            write_int(out, kind);
            out.extend_from_slice(&rec[2..]);
        })
        .unwrap()
    }

    #[test]
    fn rejects_bad_version_and_kind() {
        assert!(read_manifest(&single_field_file(2, 1)).is_ok());
        let err = read_manifest(&single_field_file(1, 0)).unwrap_err();
        assert!(err.to_string().contains("_VERSION 1"), "{err}");
        let err = read_manifest(&single_field_file(2, 7)).unwrap_err();
        assert!(err.to_string().contains("_KIND 7"), "{err}");
        // A manifest list is not a manifest.
        let list = write_manifest_list(&[full_meta()]).unwrap();
        assert!(matches!(read_manifest(&list), Err(StorageError::Format(_))));
    }

    #[test]
    fn corrupt_input_is_an_error_not_a_panic() {
        assert!(read_manifest(b"").is_err());
        assert!(read_manifest(b"PAR1").is_err());
        let files = [
            write_manifest(&[full_entry(), minimal_entry()]).unwrap(),
            old_file(Codec::Null),
            old_file(Codec::Deflate(apache_avro::DeflateSettings::default())),
            write_manifest_list(&[full_meta(), minimal_meta()]).unwrap(),
        ];
        for bytes in &files {
            for len in 0..bytes.len() {
                let _ = read_manifest(&bytes[..len]);
                let _ = read_manifest_list(&bytes[..len]);
            }
            for pos in 0..bytes.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut corrupt = bytes.clone();
                    corrupt[pos] ^= flip;
                    let _ = read_manifest(&corrupt);
                    let _ = read_manifest_list(&corrupt);
                }
            }
        }
    }

    #[test]
    fn truncated_file_is_an_avro_error() {
        let bytes = write_manifest(&[full_entry()]).unwrap();
        let err = read_manifest(&bytes[..bytes.len() - 1]).unwrap_err();
        assert!(matches!(err, StorageError::Avro(_)), "{err}");
    }
}
