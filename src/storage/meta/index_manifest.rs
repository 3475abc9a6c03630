//! Paimon index manifests (Avro), read, written and combined.
//!
//! A snapshot's `indexManifest` names one file in `<table>/manifest/` listing every index file
//! live in that snapshot: `DELETION_VECTORS` files (with the byte range of each data file's
//! vector, see [`crate::storage::meta::deletion_vector`]), dynamic-bucket `HASH` indexes, and global indexes
//! of other engines. Tarn must read it to find the deletion vectors of tables other engines
//! wrote, and must rewrite it — without losing other engines' entries — when it writes
//! deletion vectors itself. This module is only the storage format.
//!
//! **Writing** follows what Paimon Java writes (as [`crate::storage::spec::manifest`] does for data
//! manifests): the Avro schema `AvroSchemaConverter` derives from
//! `IndexManifestEntry.MANIFEST_ROW_TYPE` (record `org.apache.paimon.avro.generated.record`,
//! nested records `record_<FIELD>`, nullable fields `["null", T]` with default null, `_KIND` a
//! TINYINT and so an `int`), `_VERSION` 1 (Java's `IndexManifestEntrySerializer`), the
//! `zstandard` codec at level 1, the schema text in the header as Java's `Schema.toString()`.
//!
//! **Reading** decodes with apache-avro against the file's own writer schema and picks fields
//! by name, so pypaimon's files (other record names) and older or newer writers read too;
//! `_GLOBAL_INDEX` records are decoded in full and written back unchanged.
//!
//! [`combine`] merges a snapshot's entries with a commit's changes the way Java's
//! `IndexManifestFileHandler` does for bucketed tables.

use std::collections::HashMap;

use apache_avro::types::Value;
use object_store::path::Path;

use crate::storage::StorageError;
use crate::storage::io::file_io::FileIO;
use crate::storage::spec::manifest::{
    FileKind, avro_error, write_array, write_bytes, write_container, write_long, write_nullable,
};

type Result<T> = std::result::Result<T, StorageError>;

/// Index type of deletion-vector files (Java `DeletionVectorsIndexFile.DELETION_VECTORS_INDEX`).
pub const DELETION_VECTORS_INDEX: &str = "DELETION_VECTORS";
/// Index type of dynamic-bucket hash indexes (Java `HashIndexFile.HASH_INDEX`).
pub const HASH_INDEX: &str = "HASH";
/// Name prefix of index manifests (Java `FileStorePathFactory.INDEX_MANIFEST_PREFIX`).
pub const INDEX_MANIFEST_PREFIX: &str = "index-manifest-";
/// The `_VERSION` Java's `IndexManifestEntrySerializer` writes and insists on reading.
pub const FORMAT_IDENTIFIER: i32 = 1;

/// The Avro schema of index manifests as Paimon Java writes it (`Schema.toString()` of
/// `AvroSchemaConverter.convertToSchema(IndexManifestEntry.MANIFEST_ROW_TYPE)`).
pub const INDEX_MANIFEST_ENTRY_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":["#,
    r#"{"name":"_VERSION","type":"int"},"#,
    r#"{"name":"_KIND","type":"int"},"#,
    r#"{"name":"_PARTITION","type":"bytes"},"#,
    r#"{"name":"_BUCKET","type":"int"},"#,
    r#"{"name":"_INDEX_TYPE","type":"string"},"#,
    r#"{"name":"_FILE_NAME","type":"string"},"#,
    r#"{"name":"_FILE_SIZE","type":"long"},"#,
    r#"{"name":"_ROW_COUNT","type":"long"},"#,
    r#"{"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":["null","#,
    r#"{"type":"record","name":"record__DELETIONS_VECTORS_RANGES","fields":["#,
    r#"{"name":"f0","type":"string"},"#,
    r#"{"name":"f1","type":"int"},"#,
    r#"{"name":"f2","type":"int"},"#,
    r#"{"name":"_CARDINALITY","type":["null","long"],"default":null}]}]}],"default":null},"#,
    r#"{"name":"_EXTERNAL_PATH","type":["null","string"],"default":null},"#,
    r#"{"name":"_GLOBAL_INDEX","type":["null",{"type":"record","name":"record__GLOBAL_INDEX","fields":["#,
    r#"{"name":"_ROW_RANGE_START","type":"long"},"#,
    r#"{"name":"_ROW_RANGE_END","type":"long"},"#,
    r#"{"name":"_INDEX_FIELD_ID","type":"int"},"#,
    r#"{"name":"_EXTRA_FIELD_IDS","type":["null",{"type":"array","items":"int"}],"default":null},"#,
    r#"{"name":"_INDEX_META","type":["null","bytes"],"default":null},"#,
    r#"{"name":"_SOURCE_META","type":["null","bytes"],"default":null}]}],"default":null}"#,
    r#"]}"#
);

/// Where one data file's deletion vector lies in a `DELETION_VECTORS` index file (Java
/// `DeletionVectorMeta`; Avro fields `f0`, `f1`, `f2`, `_CARDINALITY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletionVectorMeta {
    pub data_file_name: String,
    /// Byte offset of the vector's size int.
    pub offset: i32,
    /// The vector's size int: magic plus bitmap, without the size int and the CRC.
    pub length: i32,
    /// Deleted rows; `None` from old writers.
    pub cardinality: Option<i64>,
}

/// What a global index (other engines' btree, bitmap, vector indexes) covers (Java
/// `GlobalIndexMeta`); tarn keeps it only to write it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalIndexMeta {
    pub row_range_start: i64,
    pub row_range_end: i64,
    pub index_field_id: i32,
    pub extra_field_ids: Option<Vec<i32>>,
    pub index_meta: Option<Vec<u8>>,
    pub source_meta: Option<Vec<u8>>,
}

/// One index file (Java `IndexFileMeta`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFileMeta {
    pub index_type: String,
    pub file_name: String,
    pub file_size: i64,
    /// Vectors in a deletion-vector file; entries in a hash index.
    pub row_count: i64,
    /// Vector ranges, in file order (Java keeps null and empty apart: `HASH` files have null).
    pub dv_ranges: Option<Vec<DeletionVectorMeta>>,
    /// Full path of a file outside the table's `index/` folder.
    pub external_path: Option<String>,
    pub global_index: Option<GlobalIndexMeta>,
}

/// One record of an index manifest (Java `IndexManifestEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexManifestEntry {
    pub kind: FileKind,
    /// Serialized `BinaryRow` of the partition, as in data manifests.
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub index_file: IndexFileMeta,
}

/// A fresh index manifest name: `index-manifest-<uuid>-0` (tarn's manifests use a new uuid per
/// file, so the counter stays 0).
pub fn new_index_manifest_name() -> String {
    format!("{INDEX_MANIFEST_PREFIX}{}-0", uuid::Uuid::new_v4())
}

/// Combines a snapshot's index manifest entries with a commit's changes (Java
/// `IndexManifestFileHandler` for bucketed tables). `HASH` and `DELETION_VECTORS` entries are
/// keyed by (partition, bucket, index type), other index types by (index type, file name); the
/// changes' DELETEs are applied first, then their ADDs replace what has their key. All entries
/// returned are ADDs: previous entries first, in their order, then new keys in change order.
///
/// Unlike Java, deleting an entry that is not there is ignored, global-index row ranges are not
/// checked for overlap, and bucket-unaware tables' deletion vectors (which Java keys by file
/// name) are not special-cased.
pub fn combine(
    previous: Vec<IndexManifestEntry>,
    changes: Vec<IndexManifestEntry>,
) -> Vec<IndexManifestEntry> {
    #[derive(PartialEq, Eq, Hash)]
    enum Key {
        Bucket(Vec<u8>, i32, String),
        File(String, String),
    }
    fn key(e: &IndexManifestEntry) -> Key {
        let file = &e.index_file;
        if file.index_type == HASH_INDEX || file.index_type == DELETION_VECTORS_INDEX {
            Key::Bucket(e.partition.clone(), e.bucket, file.index_type.clone())
        } else {
            Key::File(file.index_type.clone(), file.file_name.clone())
        }
    }
    fn put(
        slots: &mut Vec<Option<IndexManifestEntry>>,
        index: &mut HashMap<Key, usize>,
        entry: IndexManifestEntry,
    ) {
        match index.get(&key(&entry)) {
            Some(&i) => slots[i] = Some(entry),
            None => {
                index.insert(key(&entry), slots.len());
                slots.push(Some(entry));
            }
        }
    }
    let mut slots = Vec::new();
    let mut index = HashMap::new();
    for entry in previous {
        put(&mut slots, &mut index, entry);
    }
    let (deletes, adds): (Vec<_>, Vec<_>) = changes
        .into_iter()
        .partition(|e| e.kind == FileKind::Delete);
    for entry in &deletes {
        if let Some(i) = index.remove(&key(entry)) {
            slots[i] = None;
        }
    }
    for entry in adds {
        put(&mut slots, &mut index, entry);
    }
    slots
        .into_iter()
        .flatten()
        .map(|e| IndexManifestEntry {
            kind: FileKind::Add,
            ..e
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/// Encodes an index manifest (Avro container, zstandard) holding `entries`: the container
/// and the primitive encoders are the data manifests' (`manifest.rs`).
pub fn write_index_manifest(entries: &[IndexManifestEntry]) -> Result<Vec<u8>> {
    write_container(INDEX_MANIFEST_ENTRY_SCHEMA, entries, write_entry)
}

/// One record of [`INDEX_MANIFEST_ENTRY_SCHEMA`], fields in schema order.
fn write_entry(out: &mut Vec<u8>, entry: &IndexManifestEntry) {
    let file = &entry.index_file;
    write_long(out, FORMAT_IDENTIFIER.into());
    write_long(out, entry.kind.to_byte().into());
    write_bytes(out, &entry.partition);
    write_long(out, entry.bucket.into());
    write_bytes(out, file.index_type.as_bytes());
    write_bytes(out, file.file_name.as_bytes());
    write_long(out, file.file_size);
    write_long(out, file.row_count);
    write_nullable(out, file.dv_ranges.as_deref(), |out, ranges| {
        write_array(out, ranges, |out, dv| {
            write_long(out, 1); // the non-null branch of the element union
            write_bytes(out, dv.data_file_name.as_bytes());
            write_long(out, dv.offset.into());
            write_long(out, dv.length.into());
            write_nullable(out, dv.cardinality.as_ref(), |out, c| write_long(out, *c));
        })
    });
    write_nullable(out, file.external_path.as_deref(), |out, p| {
        write_bytes(out, p.as_bytes())
    });
    write_nullable(out, file.global_index.as_ref(), |out, g| {
        write_long(out, g.row_range_start);
        write_long(out, g.row_range_end);
        write_long(out, g.index_field_id.into());
        write_nullable(out, g.extra_field_ids.as_deref(), |out, ids| {
            write_array(out, ids, |out, id| write_long(out, (*id).into()))
        });
        write_nullable(out, g.index_meta.as_deref(), write_bytes);
        write_nullable(out, g.source_meta.as_deref(), write_bytes);
    });
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

/// Decodes an index manifest written by Paimon Java, pypaimon or tarn.
pub fn read_index_manifest(bytes: &[u8]) -> Result<Vec<IndexManifestEntry>> {
    check_schema_names(bytes)?;
    // A second guard: no panic of the decoder may escape on corrupt input.
    std::panic::catch_unwind(|| {
        let reader = apache_avro::Reader::new(bytes).map_err(avro_error)?;
        reader
            .map(|value| entry(&value.map_err(avro_error)?))
            .collect()
    })
    .unwrap_or_else(|_| Err(avro_error("corrupt index manifest (Avro decoder panicked)")))
}

/// apache-avro 0.21 panics (unwraps) on some invalid names in a writer schema, so the names in
/// the header's schema are checked first. A header that doesn't parse is left to apache-avro.
fn check_schema_names(bytes: &[u8]) -> Result<()> {
    fn varint(bytes: &[u8], pos: &mut usize) -> Option<i64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *bytes.get(*pos)?;
            *pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
        }
        None
    }
    fn slice<'b>(bytes: &'b [u8], pos: &mut usize) -> Option<&'b [u8]> {
        let len = usize::try_from(varint(bytes, pos)?).ok()?;
        let s = bytes.get(*pos..pos.checked_add(len)?)?;
        *pos += len;
        Some(s)
    }
    fn schema(bytes: &[u8]) -> Option<&[u8]> {
        let mut pos = 4;
        (bytes.get(..4)? == b"Obj\x01").then_some(())?;
        loop {
            let count = varint(bytes, &mut pos)?;
            if count < 0 {
                varint(bytes, &mut pos)?;
            }
            if count == 0 {
                return None;
            }
            for _ in 0..count.unsigned_abs() {
                let (key, value) = (slice(bytes, &mut pos)?, slice(bytes, &mut pos)?);
                if key == b"avro.schema" {
                    return Some(value);
                }
            }
        }
    }
    fn valid(name: &str) -> bool {
        name.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    }
    fn check(json: &serde_json::Value) -> Result<()> {
        use serde_json::Value as Json;
        let bad = |name: &str| Err(avro_error(format!("invalid Avro name {name:?} in schema")));
        match json {
            Json::String(name) if !valid(name) => bad(name),
            Json::Array(items) => items.iter().try_for_each(check),
            Json::Object(object) => {
                for (key, value) in object {
                    match (key.as_str(), value) {
                        ("namespace", Json::String(ns)) if ns.is_empty() => {}
                        ("name" | "namespace", Json::String(name)) if !valid(name) => {
                            return bad(name);
                        }
                        ("type" | "items" | "values" | "fields" | "aliases", value) => {
                            check(value)?
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    match schema(bytes).and_then(|s| serde_json::from_slice(s).ok()) {
        Some(json) => check(&json),
        None => Ok(()),
    }
}

fn format_error(message: String) -> StorageError {
    StorageError::format(format!("index manifest: {message}"))
}

/// The fields of a record value (through a union branch).
fn record<'v>(value: &'v Value, what: &str) -> Result<&'v [(String, Value)]> {
    match value {
        Value::Union(_, inner) => record(inner, what),
        Value::Record(fields) => Ok(fields),
        other => Err(format_error(format!("{what} is not a record: {other:?}"))),
    }
}

/// Field `name` of a record, `None` when absent or null.
fn field<'v>(fields: &'v [(String, Value)], name: &str) -> Option<&'v Value> {
    let mut value = &fields.iter().find(|(n, _)| n == name)?.1;
    while let Value::Union(_, inner) = value {
        value = inner;
    }
    (!matches!(value, Value::Null)).then_some(value)
}

fn required<'v>(fields: &'v [(String, Value)], name: &str) -> Result<&'v Value> {
    field(fields, name).ok_or_else(|| format_error(format!("record lacks {name} (or it is null)")))
}

fn long(value: &Value, name: &str) -> Result<i64> {
    match value {
        Value::Int(v) => Ok((*v).into()),
        Value::Long(v) => Ok(*v),
        other => Err(format_error(format!("{name} is not a number: {other:?}"))),
    }
}

fn int(value: &Value, name: &str) -> Result<i32> {
    let v = long(value, name)?;
    i32::try_from(v).map_err(|_| format_error(format!("{name} {v} is out of range")))
}

fn string(value: &Value, name: &str) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Bytes(b) => {
            String::from_utf8(b.clone()).map_err(|_| format_error(format!("{name} is not UTF-8")))
        }
        other => Err(format_error(format!("{name} is not a string: {other:?}"))),
    }
}

fn bytes(value: &Value, name: &str) -> Result<Vec<u8>> {
    match value {
        Value::Bytes(b) | Value::Fixed(_, b) => Ok(b.clone()),
        Value::String(s) => Ok(s.clone().into_bytes()),
        other => Err(format_error(format!("{name} is not bytes: {other:?}"))),
    }
}

fn array<'v>(value: &'v Value, name: &str) -> Result<&'v [Value]> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(format_error(format!("{name} is not an array: {other:?}"))),
    }
}

fn opt<T>(
    fields: &[(String, Value)],
    name: &str,
    read: impl FnOnce(&Value, &str) -> Result<T>,
) -> Result<Option<T>> {
    field(fields, name).map(|v| read(v, name)).transpose()
}

fn dv_meta(value: &Value) -> Result<DeletionVectorMeta> {
    let f = record(value, "_DELETIONS_VECTORS_RANGES element")?;
    Ok(DeletionVectorMeta {
        data_file_name: string(required(f, "f0")?, "f0")?,
        offset: int(required(f, "f1")?, "f1")?,
        length: int(required(f, "f2")?, "f2")?,
        cardinality: opt(f, "_CARDINALITY", long)?,
    })
}

fn global_index(value: &Value, name: &str) -> Result<GlobalIndexMeta> {
    let f = record(value, name)?;
    Ok(GlobalIndexMeta {
        row_range_start: long(required(f, "_ROW_RANGE_START")?, "_ROW_RANGE_START")?,
        row_range_end: long(required(f, "_ROW_RANGE_END")?, "_ROW_RANGE_END")?,
        index_field_id: int(required(f, "_INDEX_FIELD_ID")?, "_INDEX_FIELD_ID")?,
        extra_field_ids: opt(f, "_EXTRA_FIELD_IDS", |v, n| {
            array(v, n)?.iter().map(|id| int(id, n)).collect()
        })?,
        index_meta: opt(f, "_INDEX_META", bytes)?,
        source_meta: opt(f, "_SOURCE_META", bytes)?,
    })
}

fn entry(value: &Value) -> Result<IndexManifestEntry> {
    let f = record(value, "index manifest entry")?;
    if let Some(version) = opt(f, "_VERSION", int)?
        && version != FORMAT_IDENTIFIER
    {
        return Err(format_error(format!("unsupported _VERSION {version}")));
    }
    let kind = int(required(f, "_KIND")?, "_KIND")?;
    Ok(IndexManifestEntry {
        kind: FileKind::from_byte(kind)
            .ok_or_else(|| format_error(format!("unknown _KIND {kind}")))?,
        partition: bytes(required(f, "_PARTITION")?, "_PARTITION")?,
        bucket: int(required(f, "_BUCKET")?, "_BUCKET")?,
        index_file: IndexFileMeta {
            index_type: string(required(f, "_INDEX_TYPE")?, "_INDEX_TYPE")?,
            file_name: string(required(f, "_FILE_NAME")?, "_FILE_NAME")?,
            file_size: long(required(f, "_FILE_SIZE")?, "_FILE_SIZE")?,
            row_count: long(required(f, "_ROW_COUNT")?, "_ROW_COUNT")?,
            dv_ranges: opt(f, "_DELETIONS_VECTORS_RANGES", |v, n| {
                array(v, n)?.iter().map(dv_meta).collect()
            })?,
            external_path: opt(f, "_EXTERNAL_PATH", string)?,
            global_index: opt(f, "_GLOBAL_INDEX", global_index)?,
        },
    })
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/// Path of index manifest `name` of the table at `table`: `<table>/manifest/<name>`.
pub fn index_manifest_path(table: &Path, name: &str) -> Path {
    table.clone().join("manifest").join(name)
}

/// Writes `entries` as a new index manifest of the table at `table`; returns its name.
pub async fn write_index_manifest_file(
    io: &FileIO,
    table: &Path,
    entries: &[IndexManifestEntry],
) -> Result<String> {
    let name = new_index_manifest_name();
    let bytes = write_index_manifest(entries)?;
    io.write(&index_manifest_path(table, &name), bytes).await?;
    Ok(name)
}

/// Reads index manifest `name` of the table at `table`.
pub async fn read_index_manifest_file(
    io: &FileIO,
    table: &Path,
    name: &str,
) -> Result<Vec<IndexManifestEntry>> {
    read_index_manifest(&io.read(&index_manifest_path(table, name)).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apache_avro::{Schema, Writer};

    fn dv_file(partition: u8, bucket: i32, name: &str) -> IndexManifestEntry {
        IndexManifestEntry {
            kind: FileKind::Add,
            partition: vec![0, 0, 0, 1, partition, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            bucket,
            index_file: IndexFileMeta {
                index_type: DELETION_VECTORS_INDEX.into(),
                file_name: name.into(),
                file_size: 63,
                row_count: 2,
                dv_ranges: Some(vec![
                    DeletionVectorMeta {
                        data_file_name: "data-a.parquet".into(),
                        offset: 1,
                        length: 24,
                        cardinality: Some(2),
                    },
                    DeletionVectorMeta {
                        data_file_name: "data-b.parquet".into(),
                        offset: 33,
                        length: 22,
                        cardinality: None,
                    },
                ]),
                external_path: None,
                global_index: None,
            },
        }
    }

    fn hash_file(bucket: i32, name: &str) -> IndexManifestEntry {
        let mut e = dv_file(0, bucket, name);
        e.index_file.index_type = HASH_INDEX.into();
        e.index_file.dv_ranges = None;
        e
    }

    fn global_file(name: &str) -> IndexManifestEntry {
        let mut e = dv_file(0, 0, name);
        e.index_file = IndexFileMeta {
            index_type: "btree".into(),
            file_name: name.into(),
            file_size: 1000,
            row_count: 50,
            dv_ranges: None,
            external_path: Some("s3://bucket/global/".to_owned() + name),
            global_index: Some(GlobalIndexMeta {
                row_range_start: 0,
                row_range_end: 49,
                index_field_id: 3,
                extra_field_ids: Some(vec![4, -5]),
                index_meta: Some(vec![1, 2, 3]),
                source_meta: None,
            }),
        };
        e
    }

    fn delete(mut e: IndexManifestEntry) -> IndexManifestEntry {
        e.kind = FileKind::Delete;
        e
    }

    #[test]
    fn roundtrip() {
        let mut empty_ranges = dv_file(2, 1, "index-u-1");
        empty_ranges.index_file.dv_ranges = Some(vec![]);
        let entries = vec![
            dv_file(1, 0, "index-u-0"),
            delete(dv_file(1, 3, "index-u-9")),
            empty_ranges,
            hash_file(4, "index-h-0"),
            global_file("global-0"),
        ];
        let bytes = write_index_manifest(&entries).unwrap();
        assert_eq!(read_index_manifest(&bytes).unwrap(), entries);
        assert!(
            read_index_manifest(&write_index_manifest(&[]).unwrap())
                .unwrap()
                .is_empty()
        );

        // Many entries: several blocks, each ending in the header's sync marker.
        let many: Vec<_> = (0..3000)
            .map(|b| dv_file(1, b, &format!("index-m-{b}")))
            .collect();
        let many_bytes = write_index_manifest(&many).unwrap();
        assert_eq!(read_index_manifest(&many_bytes).unwrap(), many);
        let header_len = write_index_manifest(&[]).unwrap().len();
        let marker = &many_bytes[header_len - 16..header_len];
        let syncs = many_bytes.windows(16).filter(|w| *w == marker).count();
        assert!(syncs > 2, "{syncs}");

        let reader = apache_avro::Reader::new(&bytes[..]).unwrap();
        assert_eq!(
            reader.writer_schema(),
            &Schema::parse_str(INDEX_MANIFEST_ENTRY_SCHEMA).unwrap()
        );
        let values: Vec<Value> = reader.map(|v| v.unwrap()).collect();
        let f = record(&values[0], "").unwrap();
        assert_eq!(f[0], ("_VERSION".to_owned(), Value::Int(1)));
        assert_eq!(f[1], ("_KIND".to_owned(), Value::Int(0)));
    }

    /// A writer schema like pypaimon's: other record names, no `_GLOBAL_INDEX`, an unknown
    /// field, `int` for `_FILE_SIZE`; null codec.
    #[test]
    fn reads_other_writer_schemas_by_name() {
        let schema = Schema::parse_str(
            r#"{"type":"record","name":"IndexManifestEntry","fields":[
            {"name":"_VERSION","type":"int"},{"name":"_KIND","type":"int"},
            {"name":"_PARTITION","type":"bytes"},{"name":"_BUCKET","type":"int"},
            {"name":"_FUTURE","type":{"type":"map","values":"string"}},
            {"name":"_INDEX_TYPE","type":"string"},{"name":"_FILE_NAME","type":"string"},
            {"name":"_FILE_SIZE","type":"int"},{"name":"_ROW_COUNT","type":"long"},
            {"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":
              {"type":"record","name":"DeletionVectorMeta","fields":[
                {"name":"f0","type":"string"},{"name":"f1","type":"int"},{"name":"f2","type":"int"}]}}],
             "default":null}]}"#,
        )
        .unwrap();
        let mut writer = Writer::new(&schema, Vec::new());
        let dv = Value::Record(vec![
            ("f0".into(), Value::String("data-a.parquet".into())),
            ("f1".into(), Value::Int(1)),
            ("f2".into(), Value::Int(24)),
        ]);
        writer
            .append(Value::Record(vec![
                ("_VERSION".into(), Value::Int(1)),
                ("_KIND".into(), Value::Int(0)),
                ("_PARTITION".into(), Value::Bytes(vec![0; 12])),
                ("_BUCKET".into(), Value::Int(7)),
                ("_FUTURE".into(), Value::Map(Default::default())),
                (
                    "_INDEX_TYPE".into(),
                    Value::String("DELETION_VECTORS".into()),
                ),
                ("_FILE_NAME".into(), Value::String("index-p-0".into())),
                ("_FILE_SIZE".into(), Value::Int(63)),
                ("_ROW_COUNT".into(), Value::Long(1)),
                (
                    "_DELETIONS_VECTORS_RANGES".into(),
                    Value::Union(1, Box::new(Value::Array(vec![dv]))),
                ),
            ]))
            .unwrap();
        let entries = read_index_manifest(&writer.into_inner().unwrap()).unwrap();
        let file = &entries[0].index_file;
        assert_eq!((entries[0].bucket, file.file_size), (7, 63));
        assert_eq!(file.global_index, None);
        let ranges = file.dv_ranges.as_ref().unwrap();
        assert_eq!((ranges[0].offset, ranges[0].length), (1, 24));
        assert_eq!(ranges[0].cardinality, None);
    }

    #[test]
    fn rejects_bad_version_kind_and_garbage() {
        let bytes = write_index_manifest(&[hash_file(0, "h")]).unwrap();
        let schema = Schema::parse_str(INDEX_MANIFEST_ENTRY_SCHEMA).unwrap();
        for (field_index, value, message) in [(0, 2, "_VERSION 2"), (1, 5, "_KIND 5")] {
            let mut writer = Writer::new(&schema, Vec::new());
            let mut v = apache_avro::Reader::new(&bytes[..])
                .unwrap()
                .next()
                .unwrap()
                .unwrap();
            if let Value::Record(fields) = &mut v {
                fields[field_index].1 = Value::Int(value);
            }
            writer.append(v).unwrap();
            let err = read_index_manifest(&writer.into_inner().unwrap()).unwrap_err();
            assert!(err.to_string().contains(message), "{err}");
        }
        assert!(read_index_manifest(b"").is_err());
        assert!(read_index_manifest(b"Obj\x01garbage").is_err());
        let whole = read_index_manifest(&bytes).unwrap();
        for len in 0..bytes.len() - 16 {
            assert_ne!(
                read_index_manifest(&bytes[..len]).ok().as_ref(),
                Some(&whole)
            );
        }
        for pos in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x41;
            let _ = read_index_manifest(&bad);
        }
    }

    #[test]
    fn combine_replaces_by_bucket_and_by_file_name() {
        let previous = vec![
            dv_file(1, 0, "dv-1-0-old"),
            dv_file(1, 1, "dv-1-1"),
            hash_file(0, "hash-0-old"),
            global_file("g-1"),
            global_file("g-2"),
        ];
        let changes = vec![
            // A new DV file for (p1, b0) replaces the old one without a DELETE.
            dv_file(1, 0, "dv-1-0-new"),
            // DELETE then ADD of the same bucket: the DELETE goes first, the ADD stays.
            delete(hash_file(0, "hash-0-old")),
            hash_file(0, "hash-0-new"),
            // A bucket's DV file deleted with nothing added.
            delete(dv_file(1, 1, "dv-1-1")),
            // Another partition, same bucket: a new key.
            dv_file(2, 0, "dv-2-0"),
            // Global indexes go by file name.
            delete(global_file("g-1")),
            global_file("g-3"),
            // Deleting what is not there changes nothing.
            delete(global_file("g-404")),
        ];
        let names: Vec<String> = combine(previous, changes)
            .into_iter()
            .map(|e| {
                assert_eq!(e.kind, FileKind::Add);
                e.index_file.file_name
            })
            .collect();
        assert_eq!(
            names,
            ["dv-1-0-new", "g-2", "hash-0-new", "dv-2-0", "g-3"].map(String::from)
        );
        // The same DV key ADDed twice in one change set: the last wins.
        let names: Vec<String> = combine(vec![], vec![dv_file(1, 0, "a"), dv_file(1, 0, "b")])
            .into_iter()
            .map(|e| e.index_file.file_name)
            .collect();
        assert_eq!(names, ["b"]);
        assert!(combine(vec![dv_file(1, 0, "a")], vec![delete(dv_file(1, 0, "x"))]).is_empty());
    }

    #[tokio::test]
    async fn file_io_roundtrip() {
        let io = FileIO::new(
            std::sync::Arc::new(object_store::memory::InMemory::new()),
            None,
        );
        let table = Path::from("db.db/t");
        let entries = vec![dv_file(1, 0, "index-u-0")];
        let name = write_index_manifest_file(&io, &table, &entries)
            .await
            .unwrap();
        assert!(name.starts_with("index-manifest-") && name.ends_with("-0"));
        assert!(
            io.exists(&Path::from(format!("db.db/t/manifest/{name}")))
                .await
                .unwrap()
        );
        assert_eq!(
            read_index_manifest_file(&io, &table, &name).await.unwrap(),
            entries
        );
    }
}
